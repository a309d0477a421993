"""Figure 6 of Ladjel et al. (DP for communication patterns), reduced-size rerun of the App. D simulation:
the scrambler algorithm A_sigma^{n,d} (local sampling, T convention, then d uniform dummies and a shuffle; the
observer sees the number of messages per target) is run many times on two neighbouring communication graphs,
and each distinct output is counted under both inputs (red / blue bars, left axis); the green dots give the
empirical log-ratio r(O) = |ln(c_1(O) / c_2(O))| (right axis), outputs sorted by decreasing log-ratio.

Parameters as in the paper: T = 4 targets, sigma = 0.2, d = 20 dummies, n = 20 messages (round-robin true
targets; the neighbour moves one message to the next target).  Reduced size: 2 x 2,000,000 runs instead of
7e8 (``amplify_jax.traffic.simulate_scrambler_outputs``, NumPy generator, seed 0).  Outputs seen under only
one input have an infinite empirical ratio: they are drawn at the top of the right axis (and are all rare).
The dashed line is the largest finite empirical log-ratio; dotted: the local guarantee of the randomizer,
ln(1 + (1 - sigma) T / sigma).

    python benchmarks/fig_traffic_fig6.py  ->  figures/traffic_fig6.png   (about 5 s of CPU: the simulation ~2 s,
    the plot ~1 s; 6-10 s wall on the shared 2-core machine)
"""

from __future__ import annotations

import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from amplify_jax import traffic as tr  # noqa: E402
from amplify_jax.plotting import figure_path  # noqa: E402

T, SIGMA, D, N, RUNS = 4, 0.2, 20, 20, 2_000_000
OUT = str(figure_path("traffic_fig6.png", os.path.join(os.path.dirname(__file__), "..", "figures")))


def main():
    sim = tr.simulate_scrambler_outputs(targets=T, n=N, sampling=SIGMA, dummies=D, runs=RUNS, seed=0)
    x = np.arange(len(sim.log_ratio))
    fig, ax = plt.subplots(figsize=(11, 4))
    # one step artist per input instead of thousands of bar patches (same picture, ~10x faster to draw)
    edges = np.arange(len(x) + 1) - 0.5
    ax.set_yscale("log")
    ax.stairs(np.maximum(sim.counts_1, 0.5), edges, baseline=0.5, fill=True, color="tab:red", alpha=0.6,
              label="input G1")
    ax.stairs(np.maximum(sim.counts_2, 0.5), edges, baseline=0.5, fill=True, color="tab:blue", alpha=0.6,
              label="input G2")
    ax.set_xlabel(f"distinct outputs ({len(x)} seen), by decreasing empirical log-ratio")
    ax.set_ylabel("occurrences")
    ax2 = ax.twinx()
    finite = np.isfinite(sim.log_ratio)
    top = float(np.max(sim.log_ratio[finite])) * 1.15
    r = np.where(finite, sim.log_ratio, top)
    ax2.scatter(x, r, s=2, c="tab:green", label="empirical log-ratio (top: seen under one input only)")
    ax2.axhline(float(np.max(sim.log_ratio[finite])), c="tab:green", ls="--", lw=1)
    ax2.axhline(math.log1p((1 - SIGMA) * T / SIGMA), c="k", ls=":", lw=1, label="local guarantee")
    ax2.set_ylabel("|ln c1(O) / c2(O)|")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=4)
    ax.set_title(f"Ladjel et al. Fig. 6 rerun: T = {T}, sigma = {SIGMA}, d = {D}, n = {N}, {RUNS:,} runs per input "
                 f"({int((~finite).sum())} outputs seen under one input only)", fontsize=9)
    fig.tight_layout()
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    fig.savefig(OUT, dpi=130)
    print("wrote", os.path.abspath(OUT))


if __name__ == "__main__":
    main()
