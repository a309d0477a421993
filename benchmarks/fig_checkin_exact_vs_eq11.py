"""The exact Thm 1 sum against the paper's Chernoff approximations (Eq. 11 and Eq. 7) of Liew, Hasegawa,
Takahashi ("Self Check-in").

Left: the RDP curve of one round of distributed check-in with the Gaussian mechanism (Thm 4), n = 6e5,
sigma = 1, gamma = 1e-3 (Figure 2(a)'s setting), orders 2..64:
- the exact Eq. 10 sum over every k at the conditional rate k/n (the sound rate; this library's default),
- the exact sum at the paper's rate gamma (the quantity Eq. 11 approximates),
- Eq. 11 with its Chernoff parameter minimised over a grid, and at Delta = 0.5 (the authors' default).
Right: the same for shuffled check-in with eps0 = 1 reports (Thm 2), n = 1e6, gamma = 1e-3: the exact sum of
the per-k bound (rate k/n) against Eq. 7 with the constants of Girgis et al. 2021 that the extraction garbled
(l-tilde = floor((k - 1) / (2 e^eps0)) + 1, last term decaying like e^{-(k-1)/(8 e^eps0)};
docs/errata.md#e-checkin-eq7).

    python benchmarks/fig_checkin_exact_vs_eq11.py

Writes figures/checkin_exact_vs_eq11.png.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from amplify_jax import checkin as C
from amplify_jax.plotting import figure, figure_path, save

OUT = figure_path("checkin_exact_vs_eq11.png", Path(__file__).resolve().parents[1] / "figures")
ORDERS = np.arange(2, 65)


def main():
    t0 = time.perf_counter()
    kw = dict(n=600_000, gamma=1e-3, sigma=1.0)
    exact = np.asarray(C.distributed_gaussian_rdp(ORDERS, **kw))
    paper = np.asarray(C.distributed_gaussian_rdp(ORDERS, method="exact_paper_rate", **kw))
    e11 = np.asarray(C.distributed_gaussian_rdp(ORDERS, method="eq11", **kw))
    e11h = np.asarray(C.distributed_gaussian_rdp(ORDERS, method="eq11", chernoff_delta=0.5, **kw))
    skw = dict(n=1_000_000, gamma=1e-3, eps0=1.0)
    s_exact = np.asarray(C.shuffled_checkin_upper_rdp(ORDERS, **skw))
    s_eq7 = np.asarray(C.shuffled_checkin_upper_rdp(ORDERS, method="eq7", **skw))
    s_low = np.asarray(C.shuffled_checkin_lower_rdp(ORDERS, **skw))

    fig, axes = figure(1, 2, figsize=(11.5, 4.3))
    ax = axes[0]
    ax.semilogy(ORDERS, exact, "b-", lw=2, label="exact sum, rate k/n")
    ax.semilogy(ORDERS, paper, "c--", lw=1.5, label="exact sum, rate gamma (paper)")
    ax.semilogy(ORDERS, e11, "r:", lw=2, label="Eq. 11, min over Delta")
    ax.semilogy(ORDERS, e11h, "m-.", lw=1, label="Eq. 11, Delta = 0.5")
    ax.set_xlabel("order lambda")
    ax.set_ylabel("RDP of one round")
    ax.set_title("distributed check-in (Gaussian), n = 6e5, sigma = 1, gamma = 1e-3", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax = axes[1]
    ax.semilogy(ORDERS, s_exact, "b-", lw=2, label="exact sum of the per-k bound, rate k/n")
    ax.semilogy(ORDERS, s_eq7, "r:", lw=2, label="Eq. 7 (corrected), min over Delta")
    ax.semilogy(ORDERS, s_low, "k--", lw=1, label="lower bound, Eq. 8")
    ax.set_xlabel("order lambda")
    ax.set_title("shuffled check-in, eps0 = 1, n = 1e6, gamma = 1e-3", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle("Liew et al. (self check-in), not a figure of the paper: exact Thm 1 sums against the closed "
                 "forms Eq. 11 (left) and Eq. 7 (right)", fontsize=10)
    save(fig, OUT)
    for lam in (2, 8, 16, 21, 24):
        i = lam - 2
        print(f"lambda {lam:3d}: gaussian exact {exact[i]:.4g}  paper-rate {paper[i]:.4g}  eq11 {e11[i]:.4g} "
              f"(x{e11[i] / paper[i]:.2f})  | shuffled exact {s_exact[i]:.4g}  eq7 {s_eq7[i]:.4g} "
              f"(x{s_eq7[i] / s_exact[i]:.2f})")
    print(f"wrote {OUT} in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
