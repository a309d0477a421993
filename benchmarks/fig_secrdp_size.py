"""Per-step SecRDP coefficient eps1 against the number of users, for the ring, the 2-D torus and the complete
graph, under the external eavesdropper (adversary I) and honest-but-curious users (adversary II) -- the
accountant of Allouah et al. (Decor, ICML 2024, Thm 1 / Thm 6, Algorithms 2-3; the formulas the extraction lost
are rebuilt in docs/errata.md#e-secrdp-accountant; adversary II, which the authors' code does not account:
docs/errata.md#e-secrdp-adversaries), with Thm 1's spectral bound (docs/errata.md#e-secrdp-spectral; dashed)
and the local-DP and central-DP levels 2 C^2 / sigma_unc^2 and 2 C^2 / (n sigma_unc^2).

Fixed noise: sigma_unc = 1, sigma_cor = 10, clip C = 1.  Sizes: ring and torus up to 1024 users (torus sides
3..32), complete graph up to 1024 users for adversary I and 128 for adversary II.  Adversary II: rings and tori
from 48 users on go through the certified low-rank update (exact to a certified relative 1e-9), smaller graphs
and the complete graph through direct inversion of every removal (O(n^4) in all).  A value the accountant
could only bound (exact=False) would be drawn as a cross, apart from the exact values; with these sizes there
is none.  Thm 1's bound for adversary II needs the worst a(G - j): exact (n eigensolves) up to 400 users, the
interlacing bound a(G) - 1 above, which is why the dashed torus line jumps to local DP there.

    python benchmarks/fig_secrdp_size.py  ->  figures/secrdp_size.png   (about a minute unloaded; 2-4 minutes
                                                                          at load average 6-8 on 2 cores)
"""

from __future__ import annotations

import os
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from amplify_jax import graphs as G  # noqa: E402
from amplify_jax import secrdp as S  # noqa: E402
from amplify_jax.plotting import figure_path  # noqa: E402

SU, SC, CLIP = 1.0, 10.0, 1.0
OUT = str(figure_path("secrdp_size.png", os.path.join(os.path.dirname(__file__), "..", "figures")))
FAMILIES = {
    "ring": ([8, 16, 32, 64, 128, 256, 512, 1024], G.ring_graph, "tab:orange"),
    "torus": ([3, 4, 6, 8, 12, 16, 23, 32], lambda k: G.torus_graph(k), "tab:green"),
    "complete": ([8, 16, 32, 64, 128, 256, 512, 1024], G.complete_graph, "tab:blue"),
}
MAX_N_CURIOUS = {"complete": 128}


def main():
    t0 = time.time()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, adv, title in zip(axes, ("eavesdropper", "curious"), ("I: external eavesdropper",
                                                                  "II: curious users")):
        for name, (sizes, make, color) in FAMILIES.items():
            ns, exact, bound, fb_n, fb_v = [], [], [], [], []
            for k in sizes:
                g = make(k)
                n = g.shape[0]
                if adv == "curious" and n > MAX_N_CURIOUS.get(name, 10**9):
                    continue
                acc = S.step_account(g, sigma_unc=SU, sigma_cor=SC, clip=CLIP, adversary=adv)
                if bool(acc.exact):
                    ns.append(n)
                    exact.append(float(acc.eps1))
                else:  # the accountant fell back to a sound bound: not an exact value, drawn apart
                    fb_n.append(n)
                    fb_v.append(float(acc.eps1))
                bound.append((n, float(acc.spectral)))
            ax.plot(ns, exact, "o-", color=color, ms=3, label=f"{name} (exact)")
            if fb_n:
                ax.plot(fb_n, fb_v, "x", color=color, ms=6, label=f"{name} (fallback bound, not exact)")
            ax.plot([b[0] for b in bound], [b[1] for b in bound], "--", color=color, lw=1,
                    label=f"{name} (Thm 1 bound)")
        n_all = np.array([8, 1024])
        ax.plot(n_all, 2 * CLIP**2 / (SU**2) * np.ones(2), "k:", lw=1, label="local DP")
        ax.plot(n_all, 2 * CLIP**2 / (n_all * SU**2), "k-.", lw=1, label="central DP level")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("number of users n")
        ax.set_title(f"adversary {title}", fontsize=10)
        ax.grid(True, which="both", alpha=0.25)
    axes[0].set_ylabel(r"per-step $\varepsilon_1 = 2C^2 \max_i [\Sigma_H^{-1}]_{ii}$")
    axes[1].legend(fontsize=7, ncol=2)
    fig.suptitle(rf"Allouah et al. 2024 (Decor), not a figure of the paper: accountant vs graph size,"
                 "\n"
                 rf"$\sigma_{{\rm unc}}$={SU:g}, $\sigma_{{\rm cor}}$={SC:g}, "
                 f"C={CLIP:g}", fontsize=10)
    fig.tight_layout()
    fig.savefig(OUT, dpi=130)
    print("wrote", os.path.normpath(OUT), f"in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
