"""benchmarks/fig_secrdp_fig1.py (Decor Fig. 1 (a)-(c)) runs end to end with --quick, and the noise it trains
with is the library's calibration: the LDP and CDP sigmas of ``secrdp.baselines`` (user level) or of
``secrdp.example_level_calibrate_eps1`` (example level), and Decor's minimal sigma_cor for each sigma_unc, called
here directly with the settings the script wrote, then checked against the accountant (eps <= target).  Panel (a'),
the reading behind the paper's plot (one step size for every method, the authors' quadratics.py), gives the paper's
"order of magnitude" between LDP and Decor; per-point tuning (panel (a), the text's reading) does not at eps = 1."""

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from amplify_jax import graphs as GR
from amplify_jax import secrdp as S

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("fig_secrdp_fig1", ROOT / "benchmarks" / "fig_secrdp_fig1.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# the training run (~30-40 s of CPU) is in the slow set, to keep the default suite under 15 minutes on 2 cores:
# python -m pytest -m slow tests/test_figures_secrdp.py
@pytest.mark.slow
def test_fig1_quick_three_panels_with_the_library_sigmas(tmp_path):
    mod = _script()
    png, data = tmp_path / "f1.png", tmp_path / "f1.json"
    mod.main(["--quick", "--output", str(png), "--data", str(data)])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    res = json.loads(data.read_text())
    assert sorted(res) == ["a", "a2", "b", "c"]
    graphs = {"ring": GR.ring_graph(16), "grid": GR.torus_graph(4)}
    for key, r in res.items():
        cfg = r["config"]
        assert cfg == mod.task_config(key, True)  # the settings recorded are the script's --quick settings
        n, T, clip, delta = cfg["n"], cfg["T"], cfg["clip"], cfg["delta"]
        for eps in cfg["eps"]:
            s = r["sigma"][str(float(eps))]
            if cfg["level"] == "user":
                b = S.baselines(n, clip=clip, target_epsilon=eps, delta=delta, steps=T)
                ldp, cdp = float(b.sigma_ldp), float(b.sigma_cdp)
            else:
                unit = S.example_level_calibrate_eps1(eps, delta=delta, steps=T, batch_size=cfg["batch"], q=cfg["q"],
                                                      sampling="without_replacement")
                ldp = clip * math.sqrt(2.0 / float(unit))
                cdp = ldp / math.sqrt(n)
                # the LDP level meets the example-level target under the library's accountant (adversary IV)
                e_ldp = S.example_level_epsilon(graphs["ring"], sigma_unc=ldp, sigma_cor=0.0, clip=clip,
                                                batch_size=cfg["batch"], q=cfg["q"], steps=T, delta=delta,
                                                sampling="without_replacement", adversary="local")
                assert float(np.asarray(e_ldp)) <= eps
            assert s["ldp"] == ldp and s["cdp"] == cdp
            for topo, g in graphs.items():
                su = np.asarray(s["decor"][topo]["sigma_unc"])
                sc = np.asarray(s["decor"][topo]["sigma_cor"])
                assert np.all((su > cdp) & (su < ldp)) and np.all(sc > 0)  # inside App. D.1's interval
                if cfg["level"] == "user":
                    cal = S.calibrate_sigma_cor(g, sigma_unc=su, clip=clip, target_epsilon=eps, delta=delta, steps=T)
                    e = S.epsilon(g, sigma_unc=su, sigma_cor=sc, clip=clip, steps=T, delta=delta,
                                  adversary="eavesdropper")
                else:
                    cal = S.example_level_calibrate_sigma_cor(g, sigma_unc=su, clip=clip, target_epsilon=eps,
                                                              delta=delta, steps=T, batch_size=cfg["batch"],
                                                              q=cfg["q"], sampling="without_replacement")
                    e = S.example_level_epsilon(g, sigma_unc=su, sigma_cor=sc, clip=clip, batch_size=cfg["batch"],
                                                q=cfg["q"], steps=T, delta=delta, sampling="without_replacement")
                assert np.all(np.asarray(cal.status) == 0)
                np.testing.assert_array_equal(sc, np.asarray(cal.sigma_cor))
                assert np.all(np.asarray(e) <= eps)  # never under-reported: the pair meets the target
        # every method, topology and budget has a finite final metric
        names = {"cdp/complete"} | {f"ldp/{t}" for t in ("ring", "grid", "complete")} | {"decor/ring", "decor/grid"}
        assert set(r["results"]) == names
        for per_eps in r["results"].values():
            assert sorted(per_eps) == sorted(str(float(e)) for e in cfg["eps"])
            for v in per_eps.values():
                assert np.isfinite(v["final_mean"]) and len(v["curve"]) == T // r["every"]
    # --replot redraws from the JSON without training
    png2 = tmp_path / "f1b.png"
    mod.main(["--replot", str(data), "--output", str(png2)])
    assert png2.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_fig1_closed_form_clipping_matches_materialised_per_example_gradients():
    """Task (c)'s clipped batch mean (per-example norms in closed form) equals clipping jax.grad's per-example
    gradients one by one, for clip levels that clip some examples and not others."""
    import jax
    import jax.numpy as jnp
    import optax

    mod = _script()
    shapes = mod.mlp_shapes(5, 4, 3)
    p = sum(int(np.prod(s)) for s in shapes)
    k = jax.random.PRNGKey(0)
    X = jax.random.normal(k, (2, p))
    xb = 2.0 * jax.random.normal(jax.random.fold_in(k, 1), (2, 7, 5))
    yb = jax.random.randint(jax.random.fold_in(k, 2), (2, 7), 0, 3)

    def loss(theta, x, y):
        return optax.softmax_cross_entropy_with_integer_labels(mod.mlp_logits(theta, x, shapes), y)

    G = jax.vmap(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))(X, xb, yb)  # (users, examples, p)
    norms = jnp.linalg.norm(G, axis=-1)
    for clip in (float(jnp.median(norms)), 1e3):
        ref = jnp.mean(G * jnp.minimum(1.0, clip / norms)[..., None], axis=1)
        np.testing.assert_allclose(mod.mlp_clipped_mean_grad(X, xb, yb, clip, shapes), ref, rtol=1e-5, atol=1e-6)


def _final_by(cfg, runs, out):
    """{(method, topology, eps): final metric, best over step sizes and noise pairs of its seeds' mean}."""
    groups = {}
    for i, r in enumerate(runs):
        groups.setdefault((r[0], r[1], r[2], r[3], r[4]), []).append(i)
    best = {}
    for (meth, topo, eps, _, _), idx in groups.items():
        v = float(np.mean(out[idx, -1]))
        best[(meth, topo, eps)] = min(v, best.get((meth, topo, eps), np.inf))
    return best


# two trainings of task (a) (~15 s of CPU, 66 s wall at load 20): slow set
@pytest.mark.slow
def test_fig1a_order_of_magnitude_needs_the_authors_single_step_size():
    """Sec. 6.1: Decor's training loss is "an order of magnitude lower ... than LDP across all privacy levels and
    topologies" in Fig. 1(a).  With one step size for every method (1.668e-3, the authors' quadratics.py; panel (a'))
    LDP / Decor is >= 5 (half a decade on the figure's log axis, the resolution of "an order of magnitude") on both
    graphs at eps = 1 and 10; with the step size tuned per point (panel (a), the grid of TASKS["a"]) it is < 5 at
    eps = 1, where the tuning picks the smallest step and no method leaves the starting loss.  Decor / CDP grows
    from eps = 1 to 10 in both readings (the trend of the authors' own result files too; figures/README.md).
    Reduced runs: 2 seeds, the noise pair f = 0.1 (the one that wins every point of the full figure)."""
    mod = _script()
    out = {}
    for key in ("a2", "a"):
        cfg = mod.task_config(key, False)
        cfg.update(eps=[1.0, 10.0], seeds=2, fracs=[0.1])
        sig = mod.sigmas_for(cfg)
        runs, fin, _ = mod.train(key, cfg, sig, cfg["T"])
        out[key] = _final_by(cfg, runs, fin)
    for topo in ("grid", "ring"):
        for eps in (1.0, 10.0):
            fixed = out["a2"]
            assert fixed[("ldp", topo, eps)] / fixed[("decor", topo, eps)] >= 5.0, (topo, eps)
        tuned = out["a"]
        assert tuned[("ldp", topo, 1.0)] / tuned[("decor", topo, 1.0)] < 5.0, topo
        for r in out.values():
            assert (r[("decor", topo, 10.0)] / r[("cdp", "complete", 10.0)]
                    > r[("decor", topo, 1.0)] / r[("cdp", "complete", 1.0)]), topo


def _authors_plot_reader():
    spec = importlib.util.spec_from_file_location("decor_authors_plot", ROOT / "benchmarks" / "decor_authors_plot.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _plot_like_the_authors(path, values, order, eps):
    """A PDF drawn as the authors' scripts draw Fig. 1(a), (b): log y, a shaded band, a line with markers per curve."""
    from amplify_jax.plotting import figure

    colours = {"CDP": "tab:purple", "LDP": "tab:orange", "Decor": "tab:green"}
    styles = {"complete": "solid", "grid": (0, (5, 5)), "ring": (0, (1, 1))}
    markers = {"CDP": "D", "LDP": "^", "Decor": "o"}
    fig, ax = figure(1, 1, figsize=(5, 3.8))
    ax = np.atleast_1d(ax)[0]
    for method, topo in order:
        v = values[method, topo]
        ax.fill_between(eps, v * 0.9, v * 1.1, color=colours[method], alpha=0.2)
        ax.plot(eps, v, color=colours[method], linestyle=styles[topo], marker=markers[method])
    ax.set_yscale("log")
    fig.savefig(path)


@pytest.mark.parametrize("panel, lo, hi", [("b", 0.05, 0.3), ("a", 1e-3, 3e3)])
def test_authors_plot_reader_recovers_the_drawn_values(tmp_path, panel, lo, hi):
    """benchmarks/decor_authors_plot.py (the evidence that the authors' own Fig. 1(b) shows LDP / Decor of 1.0-3.3x
    and their (a) 7-73x, figures/README.md) reads back values drawn by matplotlib as the authors drew them (over a
    range under a decade, as their (b), and over six, as their (a)), and refuses a PDF whose curves are not in
    their order (colour check)."""
    mod = _authors_plot_reader()
    eps, order = mod.PANELS[panel]
    rng = np.random.default_rng(7)
    values = {c: np.exp(rng.uniform(math.log(lo), math.log(hi), len(eps))) for c in order}
    _plot_like_the_authors(tmp_path / "ok.pdf", values, order, eps)
    got = mod.read(tmp_path / "ok.pdf", panel)
    assert got["y_residual"] < 1e-3 and len(got["y_ticks"]) >= 2
    for c in order:
        np.testing.assert_allclose(got["values"][c], values[c], rtol=1e-5)
    cdp = order.index(("CDP", "complete"))
    other = next(i for i, (m, _) in enumerate(order) if m == "LDP")
    swapped = list(order)
    swapped[cdp], swapped[other] = swapped[other], swapped[cdp]
    _plot_like_the_authors(tmp_path / "swapped.pdf", values, swapped, eps)
    with pytest.raises(ValueError, match="colour"):
        mod.read(tmp_path / "swapped.pdf", panel)
    with pytest.raises(ValueError, match="points, expected"):  # the other panel's budgets
        mod.read(tmp_path / "ok.pdf", "a" if panel == "b" else "b")
