"""Figure 1 (a, b, c) of Liew, Hasegawa, Takahashi ("Self Check-in"): shuffled check-in, eps0-LDP reports.

Approximate DP (delta = 1/n) after T rounds from
- the upper bound of Thm 2: Eq. 7 as corrected in ERRATA (rate gamma, as printed; blue),
- the lower bound of Thm 3, Eq. 8, converted by the same Eq. 3 (red; the limit of the RDP accounting),
- the strong-composition baseline of Girgis et al. 2021c (our sound instantiation, see
  ``amplify_jax.checkin.shuffled_checkin_strong_composition_epsilon``; green dashed).

Parameters, as in the paper: (a) eps0 = 1, gamma = 1e-3, T = 1e5, n from 1e4 to 1e8; (b) eps0 = 1,
n = 1e7, T = 1e5, gamma from 1e-4 to 1e-1; (c) eps0 = 1, gamma = 1e-3, T from 1e2 to 1e6 with n = 1e7
(the extracted caption reads "n = 1"; we take panel (b)'s n).  Orders: 60 integers spread geometrically
from 2 to 2048 (the optimal order reaches ~1000 at n = 1e8; a cap at a few hundred would floor eps at
~ln(n)/order).  The exact Thm 1 sum of the per-k bound is compared with Eq. 7 in fig_checkin_exact_vs_eq11.py
(its cost grows with the largest order times the number of orders).

    python benchmarks/fig_checkin_shuffled.py

Writes figures/checkin_fig1.png.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from amplify_jax import checkin as C
from amplify_jax.plotting import figure, save

OUT = Path(__file__).resolve().parents[1] / "figures" / "checkin_fig1.png"
EQ_ORDERS = np.unique(np.round(np.geomspace(2, 2048, 60)))
EPS0 = 1.0


def curves(n, gamma, rounds):
    d = 1.0 / np.asarray(n, dtype=float)
    kw = dict(n=n, gamma=gamma, eps0=EPS0, steps=rounds, delta=d)
    up7 = C.shuffled_checkin_epsilon(bound="upper", method="eq7", orders=EQ_ORDERS, **kw).epsilon
    low = C.shuffled_checkin_epsilon(bound="lower", orders=EQ_ORDERS, **kw).epsilon
    sc = C.shuffled_checkin_strong_composition_epsilon(**kw)
    return [np.asarray(x) for x in (up7, low, sc)]


def panel(ax, x, ys, xlabel, title):
    up7, low, sc = ys
    ax.loglog(x, up7, "b-o", ms=3, label="upper, Thm 2 (Eq. 7)")
    ax.loglog(x, low, "r-s", ms=3, label="lower, Thm 3 (Eq. 8)")
    ax.loglog(x, sc, "g--", label="strong composition")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("epsilon")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)


def main():
    t0 = time.perf_counter()
    ns = np.round(np.logspace(4, 8, 9))
    ga = curves(ns, 1e-3, 1e5)
    gs = np.logspace(-4, -1, 7)
    gb = curves(1e7, gs, 1e5)
    ts = np.logspace(2, 6, 9)
    gc = curves(1e7, 1e-3, np.round(ts))
    fig, axes = figure(1, 3, figsize=(15, 4.2))
    panel(axes[0], ns, ga, "n", "(a) eps0 = 1, gamma = 1e-3, T = 1e5, delta = 1/n")
    panel(axes[1], gs, gb, "gamma", "(b) eps0 = 1, n = 1e7, T = 1e5, delta = 1/n")
    panel(axes[2], ts, gc, "T", "(c) eps0 = 1, n = 1e7, gamma = 1e-3, delta = 1/n")
    axes[0].legend(fontsize=8)
    save(fig, OUT)
    for name, x, (up7, low, sc) in (("n", ns, ga), ("gamma", gs, gb), ("T", ts, gc)):
        print(f"panel vs {name}: strong/upper(Eq.7) = {np.round(sc / up7, 2)}; strong/lower = {np.round(sc / low, 2)}")
    print(f"wrote {OUT} in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
