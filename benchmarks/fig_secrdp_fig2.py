"""Figure 2 of Allouah et al., "The Privacy Power of Correlated Noise in Decentralized Learning" (Decor,
ICML 2024): user-level SecLDP epsilon (Algorithm 2 + composition/conversion) as a function of the correlated
noise sigma_cor, at a fixed uncorrelated noise sigma_unc "in the center of the search interval" (App. D.1).

The extraction lost the figure's parameters; we use those of the authors' synthetic-data result files
(public-values.md): n = 16 users on the ring, the 4 x 4 torus and the complete graph, clip C = 1,
T = 3500 steps, delta = 1e-5, external eavesdropper (adversary I), epsilon by the closed form
T eps1 + 2 sqrt(T eps1 ln(1/delta)) (rebuilt: the extraction lost it; docs/errata.md#e-secrdp-closed-form) of the
accountant eps1 = 2 C^2 max_i [Sigma^{-1}]_ii (docs/errata.md#e-secrdp-accountant).
One panel per target epsilon in {1, 10, 40}; sigma_unc = (sigma_cdp + sigma_ldp) / 2 for that target (the
centre of App. D.1's interval [sigma_cdp, sigma_ldp]).  Dotted: the same with the core's Balle et al. 2020
conversion; dashed grey: Thm 1's spectral bound (rebuilt, docs/errata.md#e-secrdp-spectral).  Marked: the
minimal sigma_cor found by ``calibrate_sigma_cor``.

    python benchmarks/fig_secrdp_fig2.py  ->  figures/secrdp_fig2.png   (a few seconds)
"""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from amplify_jax import graphs as G  # noqa: E402
from amplify_jax import secrdp as S  # noqa: E402
from amplify_jax.plotting import figure_path  # noqa: E402

N_USERS, CLIP, STEPS, DELTA = 16, 1.0, 3500, 1e-5
TARGETS = (1.0, 10.0, 40.0)
GRAPHS = {"ring": G.ring_graph(16), "torus 4x4": G.torus_graph(4), "complete": G.complete_graph(16)}
COLORS = {"ring": "tab:orange", "torus 4x4": "tab:green", "complete": "tab:blue"}
OUT = str(figure_path("secrdp_fig2.png", os.path.join(os.path.dirname(__file__), "..", "figures")))


def main():
    sc = np.geomspace(1e-1, 1e4, 300)
    fig, axes = plt.subplots(1, len(TARGETS), figsize=(4.2 * len(TARGETS), 3.6))
    for ax, target in zip(axes, TARGETS):
        b = S.baselines(N_USERS, clip=CLIP, target_epsilon=target, delta=DELTA, steps=STEPS)
        su = 0.5 * (float(b.sigma_cdp) + float(b.sigma_ldp))
        for name, g in GRAPHS.items():
            eps = S.epsilon(g, sigma_unc=su, sigma_cor=sc, clip=CLIP, steps=STEPS, delta=DELTA,
                            adversary="eavesdropper")
            eps_b = S.epsilon(g, sigma_unc=su, sigma_cor=sc, clip=CLIP, steps=STEPS, delta=DELTA,
                              adversary="eavesdropper", method="balle2020")
            spec = S.closed_form_epsilon(
                S.spectral_bound(g, sigma_unc=su, sigma_cor=sc, clip=CLIP, adversary="eavesdropper"),
                steps=STEPS, delta=DELTA)
            ax.plot(sc, eps, color=COLORS[name], label=name)
            ax.plot(sc, eps_b, color=COLORS[name], ls=":", lw=1)
            ax.plot(sc, spec, color=COLORS[name], ls="--", lw=0.8, alpha=0.6)
            cal = S.calibrate_sigma_cor(g, sigma_unc=su, clip=CLIP, target_epsilon=target, delta=DELTA, steps=STEPS)
            if int(cal.status) == 0:
                ax.plot([float(cal.sigma_cor)], [target], "o", color=COLORS[name], ms=5)
        ax.axhline(target, color="k", lw=0.7, ls="-.")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(r"correlated noise $\sigma_{\rm cor}$")
        ax.set_ylabel(r"user-level SecLDP $\varepsilon$")
        ax.set_title(rf"target $\varepsilon$={target:g}: $\sigma_{{\rm unc}}$={su:.3g}", fontsize=10)
        ax.grid(True, which="both", alpha=0.25)
    axes[0].legend(fontsize=8, title="solid: closed form\ndotted: Balle et al.\ndashed: Thm 1 bound",
                   title_fontsize=7)
    fig.suptitle(f"Decor Fig. 2 (reproduction): n={N_USERS}, C={CLIP:g}, T={STEPS}, delta={DELTA:g}, "
                 "adversary I", fontsize=10)
    fig.tight_layout()
    fig.savefig(OUT, dpi=130)
    print("wrote", os.path.normpath(OUT))


if __name__ == "__main__":
    main()
