"""Plotting helpers shared by the command line and the figure scripts (matplotlib, Agg backend)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["figure", "save", "plot_privacy_curve", "figure_path", "FIGURES_DIR_ENV"]

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
