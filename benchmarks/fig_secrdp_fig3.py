"""Figure 3 of Allouah et al., "The Privacy Power of Correlated Noise in Decentralized Learning" (Decor,
ICML 2024): example-level SecLDP epsilon as a function of the correlated noise sigma_cor at a fixed
uncorrelated noise sigma_unc (App. D.1, "Example-level privacy": Algorithm 2, then amplification by
subsampling, composition over T steps and conversion).

The extraction lost the figure's parameters; we use the authors' MNIST setup (their reproduce_mnist.py):
n = 16 users, each with 60000/16 = 3750 examples, batches of b = 64 (sampling rate q = 64/3750), clip C = 1,
T = 1000 steps, delta = 1e-5, external eavesdropper, on the ring, the 4 x 4 torus and the complete graph.
sigma_unc is the centre of [sigma_cdp, sigma_ldp] for the example-level target epsilon = 1 (the largest
MNIST budget) under sampling without replacement (the paper's Wang et al. 2019 bound).  Solid: sampling
without replacement (core ``subsampled_gaussian_wor_rdp``, replace-one, effective noise b / sqrt(2 eps1));
dashed: Poisson sampling (core ``poisson_subsampled_gaussian_rdp``, add/remove, b sqrt(2 / eps1)); see
``amplify_jax.secrdp.effective_noise_multiplier``.  Unlike the authors' code, which returns the bound of one
step whatever T and delta, the T steps are composed and converted at delta (docs/errata.md#e-secrdp-example-level);
the per-step eps1 is the rebuilt accountant (docs/errata.md#e-secrdp-accountant).
The solid curves flatten near eps = 1: the general bound of Wang et al. (Thm 9) keeps terms
2 q^j C(alpha, j) e^{(j-1) eps(j)} >= 2 q^j C(alpha, j) for j >= 3 however large the noise, so at high orders
it does not vanish; the Poisson curves (exact Mironov-Talwar-Zhang RDP) have no such floor.

    python benchmarks/fig_secrdp_fig3.py  ->  figures/secrdp_fig3.png   (about a minute)
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

N_USERS, BATCH, PER_USER, CLIP, STEPS, DELTA, TARGET = 16, 64, 3750, 1.0, 1000, 1e-5, 1.0
Q = BATCH / PER_USER
GRAPHS = {"ring": G.ring_graph(16), "torus 4x4": G.torus_graph(4), "complete": G.complete_graph(16)}
COLORS = {"ring": "tab:orange", "torus 4x4": "tab:green", "complete": "tab:blue"}
OUT = str(figure_path("secrdp_fig3.png", os.path.join(os.path.dirname(__file__), "..", "figures")))
ORDERS_WOR = np.arange(2.0, 129.0)
ORDERS_POISSON = np.arange(2.0, 129.0)


def main():
    budget = S.example_level_calibrate_eps1(TARGET, delta=DELTA, steps=STEPS, batch_size=BATCH, q=Q,
                                            sampling="without_replacement", orders=ORDERS_WOR)
    sigma_ldp = CLIP * np.sqrt(2.0 / budget)
    sigma_cdp = sigma_ldp / np.sqrt(N_USERS)
    su = 0.5 * (sigma_cdp + sigma_ldp)
    sc = np.geomspace(1e-3, 1e2, 30) * su
    fig, ax = plt.subplots(figsize=(5.4, 3.9))
    for name, g in GRAPHS.items():
        kw = dict(sigma_unc=su, sigma_cor=sc, clip=CLIP, batch_size=BATCH, q=Q, steps=STEPS,
                  delta=DELTA)
        e_wor = S.example_level_epsilon(g, sampling="without_replacement", orders=ORDERS_WOR, **kw)
        e_poi = S.example_level_epsilon(g, sampling="poisson", orders=ORDERS_POISSON, **kw)
        ax.plot(sc, e_wor, color=COLORS[name], label=name)
        ax.plot(sc, e_poi, color=COLORS[name], ls="--", lw=1)
    ax.axhline(TARGET, color="k", lw=0.7, ls="-.")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"correlated noise $\sigma_{\rm cor}$")
    ax.set_ylabel(r"example-level SecLDP $\varepsilon$")
    ax.set_title(rf"Decor Fig. 3 (repr.): n={N_USERS}, b={BATCH}, q={Q:.4f}, T={STEPS}, "
                 rf"$\sigma_{{\rm unc}}$={su:.3g}", fontsize=9)
    ax.legend(fontsize=8, title="solid: w/o replacement\ndashed: Poisson", title_fontsize=7)
    ax.grid(True, which="both", alpha=0.25)
    fig.tight_layout()
    fig.savefig(OUT, dpi=130)
    print("wrote", os.path.normpath(OUT), "sigma_unc", su, "sigma_cdp", sigma_cdp, "sigma_ldp", sigma_ldp)


if __name__ == "__main__":
    main()
