"""Figure 1(a) of Cyffers & Bellet, "Privacy Amplification by Decentralization" (AISTATS 2022).

Theoretical privacy loss of real summation by a random walk on the complete graph, T = 100 n steps, as a
function of n: network DP (Thm 3 in the full App. D form; App. D's second composition term uses eps0 where the
per-cycle eps_c = 3 eps0 / sqrt(n) belongs, corrected here, docs/errata.md#e-network-thm3-composition) against
the same algorithm under local DP, with the number of contributions bounded by Chernoff ("random") or fixed to
exactly T/n ("fixed contribution", dashed).  Parameters as in the authors' script: eps0 = 0.1,
delta' = delta_hat = 1e-7 (and delta0 = 1e-7 for the Gaussian), n from 2 to 1e10.  Dotted: network DP with
c = 10 colluders (Sec. 4.3).  The epsilons are plotted; the script prints the deltas (App. D's, and the one
with Balle et al. Thm 10's group terms that App. D omits, docs/errata.md#e-network-cycle-delta).

Two counts of a user's contributions are drawn for the "random" curves:
* solid: the paper's (App. D) multiplicative Chernoff bound N_v = T/n + sqrt(3 T/n ln(1/delta_hat)), what the
  library computes (``amplify_jax.network.contribution_bound``; the general Chernoff form where T/n <
  3 ln(1/delta_hat), docs/errata.md#e-network-chernoff).  With T = 100 n, N_v = 169.5 for every n, so the
  "random" curves sit a constant factor (about sqrt(269.5 / 200) = 1.16 for network DP, 1.30 for local DP)
  above the fixed ones;
* dash-dotted: the count of the authors' script, T/n + sqrt(3 T/2 ln(1/delta_hat)) (a Hoeffding-type deviation
  of the count, valid but not scaled by 1/n), composed the same way (``amplify_jax.approx_dp.advanced_composition``
  over N + T/n cycles, resp. N contributions).  It grows like sqrt(n), which is what makes the fixed curves
  "significantly tighter" in the paper's plot; the paper's text (App. D) states the Chernoff form, which is
  what the solid curves use.
Other difference from the authors' script: advanced composition as in Thm 3 (their script takes the min
with simple composition).

Run: python benchmarks/fig_network_fig1a.py  ->  figures/network_fig1a.png   (about 20 s wall)
"""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from amplify_jax import network as N  # noqa: E402
from amplify_jax.approx_dp import advanced_composition  # noqa: E402
from amplify_jax.internal import x64_scope  # noqa: E402
from amplify_jax.plotting import figure_path  # noqa: E402

EPS0, DP, DH, D0 = 0.1, 1e-7, 1e-7, 1e-7


def main():
    ns = np.unique(np.round(np.logspace(np.log10(2), 10, 40)))
    T = 100 * ns
    kw = dict(n=ns, steps=T, eps0=EPS0, delta0=D0, delta_prime=DP, delta_hat=DH)
    nb = N.complete_graph_sum_bound(**kw)
    net = np.asarray(nb.epsilon)
    net_delta_paper = np.asarray(N.complete_graph_sum_bound(**kw, cycle_delta="paper").delta)
    net_fixed = np.asarray(N.complete_graph_sum_bound(**kw, fixed_contributions=True).epsilon)
    loc = np.asarray(N.local_sum_bound(**kw).epsilon)
    loc_fixed = np.asarray(N.local_sum_bound(**kw, fixed_contributions=True).epsilon)
    big = ns > 10
    net_coll = np.asarray(N.complete_graph_sum_bound(**{**kw, "n": ns[big], "steps": T[big]}, colluders=10).epsilon)
    # the authors' script's count: T/n + sqrt(3 T/2 ln(1/delta_hat)) contributions
    n_auth = T / ns + np.sqrt(1.5 * T * np.log(1.0 / DH))
    with x64_scope():
        net_auth = np.asarray(advanced_composition(3.0 * EPS0 / np.sqrt(ns), n_auth + T / ns, np.log(1.0 / DP)))
        loc_auth = np.asarray(advanced_composition(EPS0, n_auth, np.log(1.0 / DP)))
    crossing = ns[np.argmax(net < loc)]
    print(f"network DP below local DP from n = {crossing:g} (paper: 'as soon as n >= 20')")
    for n_show in (100, 10_000, 1e6, 1e10):
        i = np.argmin(np.abs(ns - n_show))
        print(f"n = {ns[i]:.3g}: network {net[i]:.4g}, local {loc[i]:.4g}, ratio {loc[i] / net[i]:.1f}; network "
              f"delta {float(nb.delta[i]):.3g} with Thm 10's group terms ({net_delta_paper[i]:.3g} as in App. D)")
        print(f"    random / fixed: network {net[i] / net_fixed[i]:.3f}, local {loc[i] / loc_fixed[i]:.3f} (paper's "
              f"Chernoff count); with the authors' count: network {net_auth[i] / net_fixed[i]:.2f}, local "
              f"{loc_auth[i] / loc_fixed[i]:.2f}")

    fig, ax = plt.subplots(figsize=(6.5, 5))
    ax.plot(ns, loc, "b+-", ms=4, label=r"LDP ($\varepsilon_0=0.1$)")
    ax.plot(ns, net, "g+-", ms=4, label=r"NDP ($\varepsilon_0=0.1$)")
    ax.plot(ns, loc_fixed, "b--", label=r"LDP (fixed contribution)")
    ax.plot(ns, net_fixed, "g--", label=r"NDP (fixed contribution)")
    ax.plot(ns[big], net_coll, "g:", label=r"NDP, $c=10$ colluders")
    ax.plot(ns, loc_auth, "b-.", lw=0.9, label=r"LDP, authors' script's count $T/n+\sqrt{3T/2\,\ln(1/\hat\delta)}$")
    ax.plot(ns, net_auth, "g-.", lw=0.9, label=r"NDP, authors' script's count")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel(r"privacy loss $\varepsilon$")
    ax.set_title("Cyffers & Bellet 2022 Fig. 1(a): real summation, T = 100 n (Thm 3, App. D corrected)", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    out = figure_path("network_fig1a.png", os.path.join(os.path.dirname(__file__), "..", "figures"))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=130)
    print("wrote", os.path.normpath(out))


if __name__ == "__main__":
    main()
