"""benchmarks/fig_network_sgd_logreg.py (Cyffers & Bellet Fig. 2, four panels) runs end to end with --quick, and
the noise it trains with is the library's calibration (network, local, central) and the paper's closed form for
Centralized DP-SGD (Bassily et al. 2014, as in the authors' script).  Fig. 2's third row, the authors' script
(L = 0.4, their noise, the noisy update scaled to norm <= L): its constants against the textbook formulas; at
eps = 10 the network nearly matches the paper's central baseline in both readings once enough runs are averaged."""

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from amplify_jax import network as N

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("fig_network_sgd_logreg",
                                                  ROOT / "benchmarks" / "fig_network_sgd_logreg.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# a training run (~20 s of CPU): in the slow set with the other training figures, to keep the default suite under
# 15 minutes on 2 cores (python -m pytest -m slow tests/test_figures_network.py)
@pytest.mark.slow
def test_fig2_quick_four_panels_with_the_library_sigmas(tmp_path):
    mod = _script()
    png, data = tmp_path / "f2.png", tmp_path / "f2.json"
    mod.main(["--quick", "--output", str(png), "--data", str(data)])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    res = json.loads(data.read_text())
    n, T, delta = mod.QUICK["n"], mod.QUICK["T"], 1e-6
    blocks = T // mod.QUICK["every"]
    for eps in (10.0, 1.0):
        r = res[str(eps)]
        # the paper's Centralized DP-SGD: 16 L sqrt(T ln(2/delta) ln(1.25 T/(delta n))) / (n eps), L = 1
        ref = 16.0 * math.sqrt(T * math.log(2 / delta) * math.log(1.25 * T / (delta * n))) / (n * eps)
        assert r["sigma"]["central_paper"] == ref
        for key in ("local", "network", "central", "central_bassily", "central_paper", "none"):
            cv = r["curves"][key]
            for k in ("acc_mean", "acc_std", "obj_mean", "obj_std"):  # both panels of the column
                assert len(cv[k]) == blocks and np.all(np.isfinite(cv[k]))
            assert np.all(np.asarray(cv["obj_mean"]) > 0)
        assert r["curves"]["none"]["acc_mean"][-1] > 0.75  # non-private SGD learns the synthetic task
    # the network and central (RDP) sigmas are the library's calibrations (same batched call: compiled once)
    tu = math.ceil(1.2 * T / n)
    for setting, kw in (("network", dict(contributions=tu)), ("central", {})):
        inv = N.sgd_calibrate_sigma(target_epsilon=np.array([10.0, 1.0]), delta=delta, n=n, steps=T,
                                    setting=setting, **kw)
        np.testing.assert_array_equal([res["10.0"]["sigma"][setting], res["1.0"]["sigma"][setting]],
                                      np.asarray(inv.sigma))
        assert np.all(np.asarray(inv.epsilon) <= [10.0, 1.0])


def test_fig2_authors_constants_are_their_formulas():
    """The authors' local and central sigmas of Fig. 2's third row (AUTHORS, printed by their findSigma.py at
    L = 0.4) are the textbook formulas they name: classical Gaussian mechanism at delta / K with advanced composition
    over K = ceil(1.2 T / n) contributions (solved here with mpmath, independently of the script's scipy route), and
    Bassily et al.'s closed form; the network value (their own Lemma 1 variant) is above the central one and below
    the local one, as their Fig. 2 needs."""
    import mpmath as mp

    mod = _script()
    a = mod.AUTHORS
    n, T, delta, L = 2000, 20000, 1e-6, a["L"]
    K = math.ceil(1.2 * T / n)
    for eps in (10.0, 1.0):
        e0 = mp.findroot(lambda e: mp.sqrt(2 * K * mp.log(K / delta)) * e + K * e * mp.expm1(e) - eps,
                         eps / (2 * math.sqrt(K)))
        ref = float(mp.sqrt(2 * mp.log(1.25 * K / delta)) * L / e0)
        assert a["sigma"][eps]["local"] == pytest.approx(ref, rel=2e-6)
        assert mod.authors_local_sigma(eps, n=n, T=T, delta=delta, L=L) == pytest.approx(ref, rel=1e-9)
        assert a["sigma"][eps]["central_paper"] == pytest.approx(
            mod.paper_central_sigma(eps, n=n, T=T, delta=delta, L=L), rel=2e-6)
        assert a["sigma"][eps]["central_paper"] < a["sigma"][eps]["network"] < a["sigma"][eps]["local"]


# full-size training (n = 2000, T = 20 000, 16 runs of 6 configurations; ~50 s wall at load 15): slow set
@pytest.mark.slow
def test_fig2_eps10_network_nearly_matches_central_in_both_readings():
    """Sec. 5.2: "Network DP-SGD nearly matches ... Centralized DP-SGD for both eps = 1 and eps = 10" and "clearly
    outperforms Local DP-SGD".  At eps = 10, final test accuracy over 16 runs (the figure's resolution: about one
    standard deviation, 0.01-0.03 here): with our sound noise and DP-SGD's update (the figure's first two rows, at the
    step size its tuning picks, 0.0041 for both) the network is within 0.05 of the paper's central baseline; so it is
    under the authors' script (third row), where it is also more than 0.05 above local.  The figure's earlier
    0.76 against 0.84 came from 5 runs (network std 0.036); 16 runs give 0.79 against 0.82."""
    import jax
    import jax.numpy as jnp

    from amplify_jax.internal import x64_scope

    mod = _script()
    n, T, runs = 2000, 20_000, 16
    Xu, yu, Xte, yte = (jnp.asarray(x) for x in mod.make_data(n))
    a = mod.AUTHORS
    s10 = a["sigma"][10.0]
    kw = dict(n=n, T=T, runs=runs, every=T)
    with x64_scope():
        acc, _ = mod.run_all(Xu, yu, Xte, yte, [s10["local"], s10["network"], s10["central_paper"]],
                             [True, True, False], [False, True, False], jax.random.PRNGKey(101),
                             etas=np.asarray(a["etas"]), clip_noisy=a["L"], **kw)
        acc = np.asarray(acc)[..., -1].mean(-1)  # (method, eta)
        local, net, cen = acc[0, a["eta_index"]["local"]], acc[1, a["eta_index"]["network"]], acc[2, 0]
        assert abs(cen - net) < 0.05 and net - local > 0.05, (local, net, cen)
        sig = mod.sigmas_for(n=n, T=T)[10.0]
        acc2, _ = mod.run_all(Xu, yu, Xte, yte, [sig["local"], sig["network"], sig["central_paper"]],
                              [True, True, False], [False, True, False], jax.random.PRNGKey(102),
                              etas=np.array([0.0041]), **kw)
        local2, net2, cen2 = np.asarray(acc2)[:, 0, :, -1].mean(-1)
        assert abs(cen2 - net2) < 0.05 and local2 < net2, (local2, net2, cen2)


# ---------------------------------------------------------------------------------------------------------
# Fig. 3 (benchmarks/fig_network_empirical.py): the sound (eps, delta) pairs of the histogram walks


def _kov_ref(eps_list, dt):
    """Kairouz, Oh, Viswanath 2015 Thm 3.5 in mpmath (heterogeneous eps, delta_tilde = dt)."""
    import mpmath as mp

    e = [mp.mpf(x) for x in eps_list]
    if not e:
        return 0.0
    s1, s2 = sum(e), sum(x * x for x in e)
    s3 = sum(x * mp.tanh(x / 2) for x in e)
    return float(min(s1, s3 + mp.sqrt(2 * s2 * mp.log(mp.e + mp.sqrt(s2) / dt)),
                     s3 + mp.sqrt(2 * s2 * mp.log(1 / mp.mpf(dt)))))


def _path_known_hist_ref(walk, n, eps0, table, dt, dc):
    """(eps, delta) of every pair (u, v), written from walk_privacy_losses' docstring (view "path_known",
    histograms): v's visits cut the walk into cycles; a cycle of length m in which u appears j times is one
    item j eps_A(m) with delta dc (e^{j eps_A} - 1)/(e^{eps_A} - 1) (group privacy of the shuffled aggregate)
    when j eps_A(m)^2 < eps0^2, else j items eps0 with delta 0; KOV over the items, delta 1 - (1 - dt) prod."""
    eps, delta = np.zeros((n, n)), np.zeros((n, n))
    for v in range(n):
        items = {u: ([], []) for u in range(n) if u != v}
        prev = -1
        for t in [t for t in range(len(walk)) if walk[t] == v]:
            seg = list(walk[prev + 1:t])
            ea = float(table[len(seg)])
            for u in set(seg):
                j = seg.count(u)
                if j * ea * ea < eps0 * eps0:
                    items[u][0].append(j * ea)
                    items[u][1].append(dc * math.expm1(j * ea) / math.expm1(ea))
                else:
                    items[u][0].extend([eps0] * j)
            prev = t
        for u, (e, d) in items.items():
            eps[u, v] = _kov_ref(e, dt)
            delta[u, v] = 1.0 - (1.0 - dt) * float(np.prod([1.0 - x for x in d]))
    return eps, delta


def test_fig3_sound_pairs_match_a_loop_reference(monkeypatch):
    """What Fig. 3 draws: walk_privacy_losses(mechanism="histogram", view="path_known", shuffle_bound="blanket"),
    every pair's eps and delta against the loop reference above.  The blanket's eps_A(m) table is replaced by a
    cheap decreasing one (the real table is checked in the next test) that amplifies from m = 4 on, so that
    both accounts of a cycle occur (one item j eps_A, and j items eps0)."""
    from amplify_jax.network import _walks

    n, T, eps0, dt, dc = 8, 200, 0.5, 1e-7, 1e-3
    m = np.arange(T + 1)
    table = np.where(m >= 4, eps0 * np.minimum(1.0, 1.6 / np.sqrt(np.maximum(m, 1))), eps0)
    monkeypatch.setattr(_walks, "_blanket_table", lambda e, t, d: table[: t + 1])
    walks = np.asarray(N.sample_walks(7, n=n, steps=T, num_walks=2))
    res = N.walk_privacy_losses(walks, n=n, eps0=eps0, delta_prime=dt, delta_cycle=dc, mechanism="histogram",
                                view="path_known", shuffle_bound="blanket")
    kinds = set()
    for i in range(2):
        ref_e, ref_d = _path_known_hist_ref(list(walks[i]), n, eps0, table, dt, dc)
        np.testing.assert_allclose(np.asarray(res.network[i]), ref_e, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(np.asarray(res.network_delta[i]), ref_d, rtol=1e-9, atol=1e-15)
        w = list(walks[i])
        for v in range(n):  # both accounts of a cycle, and repeats inside the group account, occur
            prev = -1
            for t in [t for t in range(T) if w[t] == v]:
                seg = w[prev + 1:t]
                for u in set(seg):
                    j, ea = seg.count(u), table[len(seg)]
                    kinds.add(("group" if j * ea * ea < eps0 * eps0 else "ldp", min(j, 2)))
                prev = t
    assert {("group", 1), ("group", 2), ("ldp", 1), ("ldp", 2)} <= kinds
    # the figure's claim: these pairs are below local DP on average and carry a small delta
    assert float(N.summarize_walk_losses(res.network).mean) < float(N.summarize_walk_losses(res.local).mean)


def test_fig3_blanket_table_is_feasible_and_monotone():
    """The eps_A(m) of Fig. 3's solid curves (network._walks._blanket_table_full, a small grid): at every grid
    point one of the two blanket evaluations (Balle et al. 2019 for a generic eps0-LDP randomizer: Bennett,
    corrected, and Hoeffding) reaches delta <= delta_cycle at the tabulated eps (or it is eps0, no
    amplification); the table never exceeds eps0 and does not increase with m; and it amplifies (< eps0) for
    the longest cycles."""
    from amplify_jax import shuffle as sh
    from amplify_jax.network import _walks

    eps0, dc, T = 0.2, 1e-7, 1024
    tab = _walks._blanket_table_full(eps0, T, dc)
    assert tab.shape == (T + 1,) and tab[0] == eps0
    assert np.all(tab <= eps0) and np.all(np.diff(tab[1:]) <= 1e-12) and tab[T] < eps0
    pts = np.array([200, 400, 1024])
    e = tab[pts]
    amp = e < eps0
    ok = np.zeros(pts.shape, bool)
    for method in ("bennett", "hoeffding"):
        d = np.asarray(sh.blanket_delta(e, n=pts, randomizer=sh.generic_randomizer(eps0), method=method).delta)
        ok |= d <= dc
    assert np.all(ok | ~amp), (e, ok)
