"""benchmarks/fig_checkin_fig2b.py (self check-in Fig. 2(b) and the Sec. 5.2 claim) runs end to end with --quick,
and every privacy number it writes is the library's own function called directly; the clipping of its training
loop is DP-SGD's per-example clipping.  benchmarks/fig_checkin_shuffled.py (Fig. 1): its NumPy Eq. 7 is the
library's with the corrected constants, and the paper's upper / lower ratio (3x and 10x below the baseline) comes
back with the printed constants only."""

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest
import jax
import jax.numpy as jnp
import optax

from amplify_jax import checkin as C
from amplify_jax import internal as K
from amplify_jax.conversions import epsilon_from_rdp
from amplify_jax.internal import x64_scope

ROOT = Path(__file__).resolve().parents[1]


def _script(name="fig_checkin_fig2b"):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_fig1_numpy_eq7_with_corrected_constants_is_the_library():
    """The figure's NumPy Eq. 7 (which alone draws the printed reading) agrees with the library's method="eq7"
    when given the corrected constants, so the two readings differ only by the constants; and the library offers
    no printed reading (it is not a bound)."""
    mod = _script("fig_checkin_shuffled")
    orders = np.array([2.0, 3.0, 7.0, 40.0, 300.0])
    for n, gamma, eps0 in ((1e4, 1e-3, 1.0), (1e7, 1e-3, 1.0), (1e6, 3e-2, 0.5)):
        ours = mod.eq7_rdp(orders, n, gamma, eps0, mod.CORRECTED(eps0))
        lib = np.asarray(C.shuffled_checkin_upper_rdp(orders, n=n, gamma=gamma, eps0=eps0, method="eq7"))
        np.testing.assert_allclose(ours, lib, rtol=1e-9)
        # the printed constants give a smaller value (more amplification) at every order: 2 eps0 < 2 e^eps0
        assert np.all(mod.eq7_rdp(orders, n, gamma, eps0, mod.PRINTED(eps0)) < ours)
    with pytest.raises(ValueError, match="method"):
        C.shuffled_checkin_upper_rdp(orders, n=1e7, gamma=1e-3, eps0=1.0, method="printed")


def test_fig1_paper_ratio_comes_back_with_the_printed_constants():
    """Sec. 5.1: the upper bound is ~3x and the lower bound ~10x below the baseline, so upper / lower ~ 10/3
    whatever the baseline's constants.  At three points of Fig. 1 (n gamma >= 1e4, T = 1e5; the figure is log-scale
    and the text says "approximately", so +-15%) the printed constants give 10/3 and the corrected ones do not
    (> 1.5x it)."""
    mod = _script("fig_checkin_shuffled")
    for n, gamma in ((1e7, 1e-3), (1e8, 1e-3), (1e7, 1e-2)):
        delta, steps = 1.0 / n, 1e5
        low = float(C.shuffled_checkin_epsilon(bound="lower", n=n, gamma=gamma, eps0=1.0, steps=steps,
                                               delta=delta).epsilon)
        printed = float(mod.printed_eq7_epsilon(n, gamma, steps, delta)[0])
        corrected = float(C.shuffled_checkin_epsilon(bound="upper", method="eq7", orders=mod.EQ_ORDERS, n=n,
                                                     gamma=gamma, eps0=1.0, steps=steps, delta=delta).epsilon)
        assert abs(printed / low / mod.PAPER_RATIO - 1.0) < 0.15, (n, gamma, printed / low)
        assert corrected / low > 1.5 * mod.PAPER_RATIO, (n, gamma, corrected / low)
        assert printed < corrected


def _eps(values):
    return np.array([np.inf if v is None else v for v in values], dtype=np.float64)


def _check_privacy(p, mod):
    """Every curve of one privacy record against the library's functions called directly."""
    n, gamma, eps0, delta0, delta = p["n"], p["gamma"], p["eps0"], p["delta0"], p["delta"]
    steps = np.asarray(p["steps"])
    # the local noise multiplier: the Gaussian is (eps0, delta0)-DP with it (Balle & Wang 2018), and not with 1e-6
    # less (the least such sigma, to the bisection's tolerance)
    with x64_scope():
        ld = lambda s: float(K.analytic_gaussian_log_delta(jnp.float64(1.0 / s), jnp.float64(eps0)))  # noqa: E731
    sigma = p["sigma"]
    assert ld(sigma) <= math.log(delta0) < ld(sigma * (1.0 - 1e-6))
    # shuffled Gaussian: Thm 1 exact sum, T rounds, Eq. 3
    rdp = np.asarray(C.shuffled_gaussian_checkin_rdp(mod.SG_ORDERS, n=n, gamma=gamma, sigma=sigma))
    res = epsilon_from_rdp(mod.SG_ORDERS, steps[:, None] * rdp, delta=np.full(steps.shape, delta))
    np.testing.assert_allclose(_eps(p["shuffled_gaussian"]), np.asarray(res.epsilon), rtol=1e-12)
    np.testing.assert_array_equal(p["shuffled_gaussian_order"], np.asarray(res.order))
    # Sec. 4.1 route, pure eps0 and with the Gaussian's delta0; the strong-composition baseline
    sd = delta / (2.0 * gamma * steps.max())
    assert p["shuffle_delta"] == sd
    pure = C.subsampled_shuffle_checkin_epsilon(n=n, gamma=gamma, eps0=eps0, steps=steps, delta=delta, shuffle_delta=sd)
    np.testing.assert_allclose(_eps(p["sec41_pure"]), np.asarray(pure.epsilon), rtol=1e-12)
    wd = C.subsampled_shuffle_checkin_epsilon(n=n, gamma=gamma, eps0=eps0, steps=steps, delta=delta,
                                              shuffle_delta=sd, delta0=delta0)
    np.testing.assert_allclose(_eps(p["sec41_delta0"]), np.asarray(wd.epsilon), rtol=1e-12)
    # no guarantee once the rounds' delta0 are spent: T gamma delta0 >= delta
    np.testing.assert_array_equal(np.isinf(_eps(p["sec41_delta0"])), steps * (gamma * delta0) >= delta)
    base = C.shuffled_checkin_strong_composition_epsilon(n=n, gamma=gamma, eps0=eps0, steps=steps, delta=delta)
    np.testing.assert_allclose(_eps(p["baseline_pure"]), np.asarray(base), rtol=1e-12)


# the training run (~30-40 s of CPU) is in the slow set, to keep the default suite under 15 minutes on 2 cores:
# python -m pytest -m slow tests/test_figures_checkin.py
@pytest.mark.slow
def test_fig2b_quick_numbers_are_the_library_and_the_sec52_claim(tmp_path):
    mod = _script()
    png, data = tmp_path / "f.png", tmp_path / "f.json"
    mod.main(["--quick", "--output", str(png), "--data", str(data)])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    res = json.loads(data.read_text())
    p = res["privacy"]
    assert (p["n"], p["gamma"], p["eps0"], p["delta0"], p["delta"]) == (mod.QUICK["n"], 0.1, 2.0, 1e-6, 1e-5)
    assert p["steps"][0] == 1 and p["steps"][-1] == mod.QUICK["rounds"]
    assert set(res["config"]["eval_rounds"]) <= set(p["steps"])  # panel (c) reads eps at the evaluated rounds
    _check_privacy(p, mod)
    # what the figure shows: the Sec. 4.1 route below the strong-composition baseline at every round
    assert np.all(_eps(p["sec41_pure"]) < _eps(p["baseline_pure"]))
    # the Sec. 5.2 large run (eps0 = 8, n = 1e7, gamma = 1e-4, T = 2000) at delta0 = 1e-6, delta = 1e-5
    big = res["large"]["main"]
    assert (big["n"], big["gamma"], big["eps0"], big["steps"]) == (10_000_000, 1e-4, 8.0, [2000.0])
    _check_privacy(big, mod)
    # consistent with the paper's 0.67 at the (delta0, delta) = (1e-6, 1e-5) chosen here (the paper states neither;
    # other pairs give 0.46-1.28, figures/README.md), so a consistency check, not a reproduction
    assert abs(big["shuffled_gaussian"][0] - 0.67) < 0.005
    assert not big["shuffled_gaussian_order_at_cap"][0]
    assert big["baseline_pure"][0] > 100.0  # the library's baseline is nowhere near the paper's 0.80
    # utility: curves of the right length; the no-noise reference learns the synthetic task, the private run
    # does better than chance
    blocks = mod.QUICK["rounds"] // mod.QUICK["every"]
    for key in ("private", "clipped_no_noise"):
        cv = res["curves"][key]
        for k in ("acc_mean", "acc_std", "loss_mean"):
            assert len(cv[k]) == blocks and np.all(np.isfinite(cv[k]))
    assert res["curves"]["clipped_no_noise"]["acc_mean"][-1] > 0.85
    assert res["curves"]["private"]["acc_mean"][-1] > 0.15
    assert res["curves"]["private"]["noise_std"] == p["sigma"] * 2.0 * mod.CLIP
    assert res["rounds_over_kmax"] == 0
    # --replot redraws from the JSON alone
    png2 = tmp_path / "g.png"
    mod.main(["--replot", str(data), "--output", str(png2)])
    assert png2.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_fig2b_clipping_is_per_example_clipping():
    """The closed-form clipped sum of the script equals jax.vmap(jax.grad) + optax.per_example_global_norm_clip
    over the live rows; some rows are below the clip norm, most above."""
    mod = _script()
    rng = np.random.default_rng(3)
    w = 0.3 * rng.standard_normal((mod.DIM, mod.CLASSES))
    y = rng.integers(0, mod.CLASSES, 40).astype(np.int32)
    X = rng.standard_normal((40, mod.DIM))
    wy = w[:, y[:6]].T
    X[:6] = 30.0 * wy / np.sum(wy * wy, axis=1, keepdims=True)  # logit margin ~30 for the label: tiny gradients
    X = X.astype(np.float32)
    params = {"w": jnp.asarray(w, jnp.float32), "b": jnp.asarray(rng.standard_normal(mod.CLASSES), jnp.float32)}
    live = (np.arange(40) < 33).astype(np.float32)
    got = mod.clipped_gradient_sum(params, jnp.asarray(X), jnp.asarray(y), jnp.asarray(live))
    g = jax.vmap(jax.grad(mod._loss), in_axes=(None, 0, 0))(params, jnp.asarray(X[:33]), jnp.asarray(y[:33]))
    leaves, tree = jax.tree_util.tree_flatten(g)
    norms = np.sqrt(sum(np.sum(np.asarray(a).reshape(33, -1) ** 2, axis=1) for a in leaves))
    assert np.any(norms < mod.CLIP) and np.sum(norms > mod.CLIP) > 20
    ref, _ = optax.per_example_global_norm_clip(leaves, mod.CLIP)
    ref = jax.tree_util.tree_unflatten(tree, ref)
    for k in ("w", "b"):
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(ref[k]), rtol=2e-5, atol=1e-7)
