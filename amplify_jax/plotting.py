"""Plotting helpers shared by the command line and the figure scripts (matplotlib, Agg backend)."""

from __future__ import annotations

import math
import os
import re
import tempfile
from pathlib import Path

import numpy as np

from ._core.io import with_umask_mode

# importable, not in __all__: the helpers the command line and the figure scripts share (figure, save, figure_path,
# FIGURES_DIR_ENV, log_ticks, readable_log_axes, tick_label)
__all__ = ["plot_privacy_curve", "paper_panels", "plot_paper_panels"]

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
    import matplotlib  # lazy: matplotlib takes 0.15-0.3 s to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(*args, **kwargs)


def save(fig, path) -> Path:
    """Save a figure atomically (temporary file + rename) and close it."""
    import matplotlib.pyplot as plt  # lazy: matplotlib takes 0.15-0.3 s to import

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=130, bbox_inches="tight")
        with_umask_mode(tmp)  # mkstemp's 0600 -> what open() would give (0666 & ~umask)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
        plt.close(fig)
    return path


def log_ticks(lo: float, hi: float, most: int = 9) -> np.ndarray:
    """Major tick values of a log axis showing [lo, hi] (lo, hi > 0): every decade inside (thinned to at most
    ``most``) when at least two are; else 1, 2, 5 times the powers of ten inside; else 1..9 times them; else
    evenly spaced round values (a range under a factor of ~2).  At least two values in [lo, hi] always."""
    from matplotlib.ticker import MaxNLocator  # lazy: matplotlib takes 0.15-0.3 s to import

    lo, hi = sorted((float(lo), float(hi)))
    if not (lo > 0 and math.isfinite(hi)):
        return np.array([1.0, 10.0])
    if hi <= lo * (1 + 1e-12):
        hi = lo * 1.001
    tol = 1e-9
    inside = lambda v: lo * (1 - tol) <= v <= hi * (1 + tol)  # noqa: E731
    a, b = math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1
    decades = [k for k in range(a, b + 1) if inside(10.0 ** k)]
    if len(decades) >= 2:
        need = math.ceil(len(decades) / most)
        step = next(m * 10 ** e for e in range(4) for m in (1, 2, 3, 5) if m * 10 ** e >= need)
        kept = [k for k in decades if k % step == 0]
        kept = kept if len(kept) >= 2 else decades[::step]
        return np.array([10.0 ** k for k in kept])
    for mults in ((1, 2, 5), (1, 2, 3, 4, 5, 6, 7, 8, 9)):
        ticks = [m * 10.0 ** k for k in range(a, b + 1) for m in mults if inside(m * 10.0 ** k)]
        if len(ticks) >= 2:
            return np.array(ticks)
    ticks = [v for v in MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi) if inside(v)]
    return np.array(ticks if len(ticks) >= 2 else [lo, hi])


def tick_label(v, _pos=None) -> str:
    """A plain tick label: 1e-5, 0.02, 300, 1.5e6 (no mathtext: the explorer's SVG saves ~0.3 s a drawing)."""
    return re.sub(r"e([+-])0*([0-9])", lambda m: "e" + ("-" if m.group(1) == "-" else "") + m.group(2), f"{v:.6g}")


def readable_log_axes(ax) -> None:
    """Every log axis of ``ax`` labelled at any data range: major ticks at :func:`log_ticks` of the view (at
    least two labels, never overlapping), plain labels (:func:`tick_label`), unlabelled minor ticks."""
    # lazy: matplotlib takes 0.15-0.3 s to import
    from matplotlib.ticker import FuncFormatter, Locator, NullFormatter

    class LogTicks(Locator):
        def __call__(self):
            return self.tick_values(*self.axis.get_view_interval())

        def tick_values(self, vmin, vmax):
            return log_ticks(vmin, vmax)

    for axis in (ax.xaxis, ax.yaxis):
        if axis.get_scale() == "log":
            axis.set_major_locator(LogTicks())
            axis.set_major_formatter(FuncFormatter(tick_label))
            axis.set_minor_formatter(NullFormatter())


def plot_privacy_curve(sigmas, eps, path, *, title=""):
    """eps against sigma, log-log; ``eps`` an array or a dict {label: array} of curves to overlay."""
    fig, ax = figure(figsize=(5.5, 4))
    # lazy: matplotlib takes 0.15-0.3 s to import
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
    path, ``amplify_jax._core.host``, without compiling).  Returns {panel: (title, x label, x, {curve: y})}.

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
    from .bounds import evaluate  # lazy: the registry takes ~0.2 s to import; only the paper panels need it

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
    (:func:`paper_panels`), log-log, 2 x 3; every log axis labelled by :func:`readable_log_axes`."""
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
        ax.grid(True, which="major", alpha=0.35)
        ax.grid(True, which="minor", alpha=0.12)
        readable_log_axes(ax)  # the DP-SGD panel's sigma 0.5..5: 0.5, 1, 2, 5, not overlapping 10^x labels
    fig.tight_layout()
    return save(fig, path)
