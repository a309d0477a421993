"""Plotting helpers shared by the command line and the figure scripts (matplotlib, Agg backend)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["figure", "save", "plot_privacy_curve", "paper_panels", "plot_paper_panels", "figure_path",
           "FIGURES_DIR_ENV"]

#: The environment variable that redirects the figure scripts' output (``amplify-jax figures --output DIR``).
FIGURES_DIR_ENV = "AMPLIFY_JAX_FIGURES_DIR"


def figure_path(name, default_dir) -> Path:
    """Where a figure script writes its file ``name``: in the directory named by the environment variable
    ``AMPLIFY_JAX_FIGURES_DIR`` when it is set and not empty (``amplify-jax figures NAME --output DIR`` sets it),
    else in ``default_dir`` (the scripts pass their checkout's ``figures/``)."""
    d = os.environ.get(FIGURES_DIR_ENV)
    return Path(d) / name if d else Path(default_dir) / name


def figure(*args, **kwargs):
    """A new matplotlib figure on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(*args, **kwargs)


def save(fig, path) -> Path:
    """Save a figure atomically (temporary file + rename) and close it."""
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=130, bbox_inches="tight")
        from ._io import with_umask_mode

        with_umask_mode(tmp)  # mkstemp's 0600 -> what open() would give (0666 & ~umask)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
        plt.close(fig)
    return path


def plot_privacy_curve(sigmas, eps, path, *, title=""):
    """eps against sigma, log-log; ``eps`` an array or a dict {label: array} of curves to overlay."""
    fig, ax = figure(figsize=(5.5, 4))
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    curves = eps if isinstance(eps, dict) else {None: eps}
    for label, e in curves.items():
        ax.loglog(np.asarray(sigmas), np.asarray(e), lw=2, label=label)
    if len(curves) > 1:
        ax.legend(fontsize=8)
    for axis in (ax.xaxis, ax.yaxis):  # ticks at 1, 2, 5 x 10^k, labelled plainly
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("noise multiplier sigma")
    ax.set_ylabel("epsilon")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    return save(fig, path)


def paper_panels() -> dict:
    """The numbers of ``amplify-jax demo``'s panels: one per paper at its headline parameters, each from the
    library's public functions (at most 8 points per call, so that a fresh process answers them on the host
    path, ``amplify_jax._host``, without compiling).  Returns {panel: (title, x label, x, {curve: y})}.

    - shuffling (Feldman, McMillan, Talwar 2021): eps of n shuffled eps0 = 1 reports against n, delta = 1e-6,
      the numerical clones bound and the closed form (Thm 3.1); registry ids in the code;
    - communication patterns (Ladjel et al., Thm 4 / App. E, docs/errata.md#e-traffic-thm4-a): eps of the
      scrambler (20 targets, 100 sources, sampling 0.2, delta = 1e-4) against the number of dummies, exact
      expectation, and the local guarantee it falls back to;
    - self check-in (Liew et al., as Fig. 1(b) at a smaller n and fewer rounds): eps0 = 1, n = 1e5, 1e4
      rounds, delta = 1e-6, against the check-in rate: Thm 2's upper bound (the registry's default, the exact
      per-k sum; docs/errata.md#e-checkin-eq7) and the strong-composition baseline (n = 1e5, not 1e6: the
      exact sum's window grows like sqrt(n gamma), and at n = 1e6 the host path spent ~20 s of CPU on it);
    - network DP (Cyffers & Bellet 2022, Thm 3, Fig. 1(a)): real summation on the complete graph against
      local DP, eps0 = 0.1, T = 100 n, total delta 1e-2 (delta0 = delta_hat = 1e-8; the group terms of
      docs/errata.md#e-network-cycle-delta take most of it at small n);
    - Decor (Allouah et al. 2024): user-level SecLDP eps on a ring of 16 users against the correlated noise
      sigma_cor (sigma_unc = 20, C = 1, 1000 steps, delta = 1e-5, an eavesdropper).
    """
    from .bounds import evaluate

    def ev(bound, **kw):
        return np.asarray(evaluate(bound, **kw).value, dtype=float)

    out = {}
    n = np.array([1e3, 3e3, 1e4, 3e4, 1e5, 3e5, 1e6])
    out["shuffle"] = ("Shuffling: eps0 = 1, delta = 1e-6", "users n", n, {
        "clones (numerical)": ev("shuffle.clones", eps0=1.0, n=n, delta=1e-6),
        "closed form (Thm 3.1)": ev("shuffle.fmt-closed-form", eps0=1.0, n=n, delta=1e-6)})
    d = np.array([0.0, 10, 25, 50, 100, 200])
    local = ev("traffic.local", targets=20, sampling=0.2, dummies=0, delta=1e-4)
    out["traffic"] = ("Scrambler: 20 targets, n = 100, sampling 0.2, delta = 1e-4", "dummies", d, {
        "scrambler (exact)": ev("traffic.scrambler", targets=20, n=100, sampling=0.2, dummies=d, delta=1e-4),
        "local fallback": np.broadcast_to(local, d.shape)})
    g = np.geomspace(1e-3, 1e-1, 7)
    kw = dict(n=1e5, gamma=g, eps0=1.0, steps=10_000, delta=1e-6)
    out["checkin"] = ("Self check-in: eps0 = 1, n = 1e5, 1e4 rounds, delta = 1e-6", "check-in rate gamma", g, {
        "upper (Thm 2)": ev("checkin.shuffled-upper", **kw),
        "strong composition": ev("checkin.shuffled-strong-composition", **kw)})
    nn = np.round(np.geomspace(20, 1e6, 8))
    kw = dict(n=nn, steps=100 * nn, eps0=0.1, delta0=1e-8, delta=1e-2, delta_hat=1e-8)
    out["network"] = ("Network DP: real summation, T = 100 n, eps0 = 0.1, delta = 1e-2", "users n", nn, {
        "network, complete graph (Thm 3)": ev("network.complete-graph-sum", **kw),
        "local DP": ev("network.local-sum", **kw)})
    sc = np.geomspace(0.1, 1000, 8)
    out["secrdp"] = ("Decor: ring of 16, sigma_unc = 20, 1000 steps, delta = 1e-5", "sigma_cor", sc, {
        "SecLDP (eavesdropper)": ev("secrdp.spectral", graph="ring:16", sigma_unc=20.0, sigma_cor=sc, clip=1.0,
                                    steps=1000, delta=1e-5, adversary="eavesdropper")})
    return {k: (t, xl, np.asarray(x, dtype=float), {c: np.asarray(y, dtype=float) for c, y in cs.items()})
            for k, (t, xl, x, cs) in out.items()}


def plot_paper_panels(sigmas, dpsgd_curves, panels, path, *, title=""):
    """``amplify-jax demo``'s figure: the DP-SGD curves (as :func:`plot_privacy_curve`) and one panel per paper
    (:func:`paper_panels`), log-log, 2 x 3."""
    fig, axes = figure(2, 3, figsize=(15, 8.5))
    ax = axes.flat[0]
    for label, e in dpsgd_curves.items():
        ax.loglog(np.asarray(sigmas), np.asarray(e), lw=2, label=label)
    ax.set(xlabel="noise multiplier sigma", ylabel="epsilon", title=title)
    for ax, (t, xl, x, curves) in zip(list(axes.flat)[1:], panels.values()):
        for label, y in curves.items():
            ax.plot(x, y, "o-", lw=1.8, ms=3, label=label)
        ax.set_yscale("log")
        ax.set_xscale("log" if np.min(x) > 0 else "linear")  # the scrambler's axis starts at 0 dummies
        ax.set(xlabel=xl, ylabel="epsilon", title=t)
    for ax in axes.flat:
        ax.title.set_fontsize(9)
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return save(fig, path)
