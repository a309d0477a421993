"""The demo's overview.png can be read (issue 27 item 3): every log axis of the paper panels carries at least two
labelled ticks, and no two tick labels of an axis overlap (the DP-SGD panel's sigma 0.5..5 drew 10^x labels on top
of each other).  Synthetic curves of the panels' shapes: no bound is evaluated, nothing compiles."""

from __future__ import annotations

import numpy as np

from amplify_jax.plotting import log_ticks, plot_paper_panels, readable_log_axes, tick_label


def _panels():
    n = np.array([1e3, 3e3, 1e4, 3e4, 1e5, 3e5, 1e6])
    d = np.array([0.0, 10, 25, 50, 100, 200])
    g = np.geomspace(1e-3, 1e-1, 7)
    nn = np.round(np.geomspace(20, 1e6, 8))
    sc = np.geomspace(0.1, 1000, 8)
    return {"shuffle": ("Shuffling", "users n", n, {"a": 3 / np.sqrt(n), "b": 9 / np.sqrt(n)}),
            "traffic": ("Scrambler", "dummies", d, {"a": 2.0 / (1 + d / 50), "b": np.full(d.shape, 2.2)}),
            "checkin": ("Check-in", "gamma", g, {"a": 10 * g, "b": 60 * g}),
            "network": ("Network", "users n", nn, {"a": 30 / np.sqrt(nn), "b": np.full(nn.shape, 2.0)}),
            "secrdp": ("Decor", "sigma_cor", sc, {"a": 1.2 - sc / 2000})}


def _overlaps(labels, renderer) -> bool:
    boxes = sorted((t.get_window_extent(renderer) for t in labels if t.get_visible() and t.get_text()),
                   key=lambda b: (b.x0, b.y0))
    return any(a.overlaps(b) for a, b in zip(boxes, boxes[1:]))


def test_overview_panels_have_labelled_non_overlapping_log_ticks(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from amplify_jax import plotting

    kept = {}
    monkeypatch.setattr(plotting, "save", lambda fig, path: kept.setdefault("fig", fig))
    sigmas = np.geomspace(0.5, 5.0, 50)
    eps = {"Rényi DP": 40 / sigmas ** 2, "PLD": 30 / sigmas ** 2}
    plot_paper_panels(sigmas, eps, _panels(), tmp_path / "overview.png", title="DP-SGD")
    fig = kept["fig"]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    try:
        for i, ax in enumerate(fig.axes):
            for axis in (ax.xaxis, ax.yaxis):
                lo, hi = sorted(axis.get_view_interval())
                shown = [t for t in axis.get_ticklabels() if t.get_text()
                         and lo <= t.get_position()[0 if axis is ax.xaxis else 1] <= hi]
                assert len(shown) >= 2, (i, axis.axis_name, [t.get_text() for t in shown])
                assert not _overlaps(axis.get_ticklabels(which="both"), renderer), (i, axis.axis_name)
        first = [t.get_text() for t in fig.axes[0].xaxis.get_ticklabels() if t.get_text()]
        assert first == ["0.5", "1", "2", "5"], first
    finally:
        plt.close(fig)


def test_readable_log_axes_any_range():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for lo, hi in ((0.5, 5.0), (0.2, 0.9), (1e-8, 1e3), (3.0, 4.0)):
        fig, ax = plt.subplots()
        ax.loglog([lo, hi], [lo, hi])
        readable_log_axes(ax)
        fig.canvas.draw()
        labels = [t.get_text() for t in ax.xaxis.get_ticklabels() if t.get_text()]
        assert len(labels) >= 2 and set(labels) <= {tick_label(v) for v in log_ticks(*ax.get_xlim())}, labels
        plt.close(fig)
