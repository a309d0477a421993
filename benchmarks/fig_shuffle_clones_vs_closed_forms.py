"""Figure: amplification by shuffling over n -- the clones bound (lower and upper) against the closed forms.

Not a figure of the source papers: the comparison the issue asks for (Feldman-McMillan-Talwar 2021,
"Hiding among the clones", Sec. 4-5 make the same kind of plot).  delta = 1e-6, two local guarantees:
eps0 = 0.4 (where Erlingsson et al. 2019 applies: eps0 < 1/2) and eps0 = 4 (FMT only).  Curves:
the clones numerical bound (upper and lower, ``clones_epsilon``), the FMT Thm 3.1 closed form and
Erlingsson et al.'s closed form where their conditions hold (dotted where they fall back to eps0), and
the privacy blanket's generic Bennett bound (Balle et al. 2019) for reference.  n from 1e3 to 1e7
(reduced from the 1e8 of the benchmark to keep the script under ~2 minutes on 2 cores).

    python benchmarks/fig_shuffle_clones_vs_closed_forms.py

Writes figures/shuffle_clones_vs_closed_forms.png.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from amplify_jax import shuffle as S  # noqa: E402
from amplify_jax.plotting import figure_path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DELTA = 1e-6
NS = np.unique(np.round(np.logspace(3, 7, 13)))
GROUPS = (NS[NS <= 1e5], NS[NS > 1e5])  # one compiled window per group


def clones(eps0):
    lo, hi = [], []
    for ns in GROUPS:
        out = S.clones_epsilon(np.full(ns.shape, eps0), ns, DELTA)
        lo.append(np.asarray(out.lower))
        hi.append(np.asarray(out.upper))
    return np.concatenate(lo), np.concatenate(hi)


def main():
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    for ax, eps0 in zip(axes, (0.4, 4.0)):
        lo, hi = clones(eps0)
        fmt = S.fmt_closed_form_epsilon(eps0, n=NS, delta=DELTA)
        erl = S.erlingsson_epsilon(eps0, n=NS, delta=DELTA)
        blanket = S.blanket_epsilon(DELTA, n=NS, randomizer=S.generic_randomizer(eps0), method="bennett")
        ax.plot(NS, hi, "-", color="C0", lw=2, label="clones, upper (sound)")
        ax.plot(NS, lo, "--", color="C9", lw=1.5, label="clones, lower")
        for vals, valid, col, lab in ((np.asarray(fmt.epsilon), np.asarray(fmt.valid), "C1", "FMT Thm 3.1 closed form"),
                                      (np.asarray(erl.epsilon), np.asarray(erl.valid), "C3", "Erlingsson et al. 2019")):
            ax.plot(NS[valid], vals[valid], "-o", ms=3, color=col, label=lab)
            if (~valid).any():
                ax.plot(NS[~valid], vals[~valid], ":", color=col, alpha=0.6)
        bv = np.asarray(blanket.epsilon)
        ok = ~np.asarray(blanket.fallback)
        ax.plot(NS[ok], bv[ok], "-.", color="C2", label="privacy blanket, generic Bennett")
        ax.axhline(eps0, color="grey", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("n (users)")
        ax.set_ylabel("shuffled eps")
        ax.set_title(f"eps0 = {eps0}, delta = {DELTA:g}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        print(f"eps0={eps0}: n={NS[-1]:.0e} clones [{lo[-1]:.4g}, {hi[-1]:.4g}], FMT {float(fmt.epsilon[-1]):.4g}")
    fig.suptitle("Feldman, McMillan, Talwar 2021 (not a figure of the paper): the clones bound against the closed "
                 "forms", fontsize=10)
    path = figure_path("shuffle_clones_vs_closed_forms.png", ROOT / "figures")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    print("wrote", path)


if __name__ == "__main__":
    main()
