"""The noise levels behind Figure 2 of Cyffers & Bellet, "Privacy Amplification by Decentralization" (AISTATS 2022).

Sec. 5.2: n = 2000 users, T = 20000 steps of SGD (one user's data per step, L = 1 after normalisation),
delta = 1e-6, target eps in {1, 10}.  For each target we calibrate the minimal per-step Gaussian noise sigma
(``amplify_jax.network.sgd_calibrate_sigma``, bisection with the feasible endpoint re-checked):

* Local DP-SGD: every contribution of a user is a Gaussian release (sensitivity 2L), RDP composed over T_u;
* Network DP-SGD: Lemma 1's network RDP 4 T_u alpha L^2 ln n / (sigma^2 n), order optimised inside
  sigma >= L sqrt(2 alpha (alpha - 1)) (Remark 5);
* Central DP-SGD: uniform sampling of one user per step (q = 1/n) and the WBK19 subsampled-Gaussian RDP
  (solid), and the route of Bassily et al. 2014 that the paper compares with (per-step Gaussian DP,
  amplification by sampling, advanced composition; dashed).

* Central DP-SGD as the paper computed it (dotted red): the closed form of Bassily et al. 2014 in the authors'
  script, sigma = 16 L sqrt(T ln(2/delta) ln(1.25 T / (delta n))) / (n eps) (computed here, L = 1): 17.4 at
  eps = 1, 1.74 at eps = 10.  It is above the RDP calibration at both budgets, so it is a sound, looser
  calibration of the same algorithm there; falling like 1 / eps, it crosses below the RDP calibration between
  eps = 20 and 30, where nothing here shows it private (Bassily et al.'s analysis is for small eps).

The paper reports that Network DP-SGD "nearly matches" Centralized DP-SGD; that holds against the paper's
closed form at eps = 1 (network 15.6 < 17.4), not against the RDP accountant for the same central algorithm
(1.97); at eps = 10 the closed form (1.74) needs less noise than our network calibration (2.35).

T_u = ceil(1.2 T / n) = 12 contributions per user (Sec. 5.2's budget c T / n with the authors' c = 1.2).
Plotted: sigma against eps over a grid, the two targets of Fig. 2 marked.  RDP -> DP by Balle et al. 2020.

Run: python benchmarks/fig_network_sgd_sigma.py  ->  figures/network_sgd_sigma.png
"""

from __future__ import annotations

import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from amplify_jax import network as N  # noqa: E402
from amplify_jax.plotting import figure_path  # noqa: E402

n, T, delta = 2000, 20_000, 1e-6
TU = math.ceil(1.2 * T / n)


def main():
    eps = np.concatenate([np.logspace(np.log10(0.3), np.log10(30), 24), [1.0, 10.0]])
    out = {}
    for setting in ("local", "network", "central", "central_bassily"):
        kw = dict(contributions=TU) if setting in ("local", "network") else {}
        inv = N.sgd_calibrate_sigma(target_epsilon=eps, delta=delta, n=n, steps=T, setting=setting, **kw)
        assert np.all(np.asarray(inv.status) == 0), setting
        assert np.all(np.asarray(inv.epsilon) <= eps)
        out[setting] = np.asarray(inv.sigma)
    out["central_paper"] = 16.0 * np.sqrt(T * np.log(2.0 / delta) * np.log(1.25 * T / (delta * n))) / (n * eps)
    print(f"n={n}, T={T}, delta={delta}, T_u={TU}")
    for e in (1.0, 10.0):
        i = int(np.where(eps == e)[0][0])
        print(f"eps={e:g}: sigma local {out['local'][i]:.4g}, network {out['network'][i]:.4g}, "
              f"central (RDP) {out['central'][i]:.4g}, central (Bassily route) {out['central_bassily'][i]:.4g}, "
              f"central (the paper's closed form) {out['central_paper'][i]:.4g}  "
              f"(local/network {out['local'][i] / out['network'][i]:.1f}x, "
              f"network/central {out['network'][i] / out['central'][i]:.2f}x)")

    grid = eps[:-2]
    fig, ax = plt.subplots(figsize=(6.5, 4.8))
    labels = {"local": "Local DP-SGD", "network": "Network DP-SGD (Lemma 1, Remark 5)",
              "central": "Central DP-SGD (RDP, WBK19)", "central_bassily": "Central DP-SGD (Bassily et al. route)",
              "central_paper": "Central DP-SGD (the paper's closed form, Bassily et al.)"}
    for setting, color, ls in (("local", "b", "-"), ("network", "g", "-"), ("central", "r", "-"),
                               ("central_bassily", "r", "--"), ("central_paper", "r", ":")):
        ax.plot(grid, out[setting][:-2], color=color, ls=ls, label=labels[setting])
        ax.plot(eps[-2:], out[setting][-2:], "o", color=color)
    for e in (1.0, 10.0):
        ax.axvline(e, color="grey", lw=0.6, ls="--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"target $\varepsilon$ ($\delta = 10^{-6}$)")
    ax.set_ylabel(r"per-step noise $\sigma$ (L = 1)")
    ax.set_title(f"Cyffers & Bellet 2022, companion of Fig. 2: the noise behind it\nn = {n}, T = {T}, T_u = {TU}",
                 fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = figure_path("network_sgd_sigma.png",
                       os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "figures"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=130)
    print("wrote", os.path.normpath(path))


if __name__ == "__main__":
    main()
