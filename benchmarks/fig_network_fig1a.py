"""Figure 1(a) of Cyffers & Bellet, "Privacy Amplification by Decentralization" (AISTATS 2022).

Theoretical privacy loss of real summation by a random walk on the complete graph, T = 100 n steps, as a
function of n: network DP (Thm 3 in the full App. D form, with the ERRATA correction) against the same
algorithm under local DP, with the number of contributions bounded by Chernoff ("random") or fixed to
exactly T/n ("fixed contribution", dashed).  Parameters as in the authors' script: eps0 = 0.1,
delta' = delta_hat = 1e-7 (and delta0 = 1e-7 for the Gaussian), n from 2 to 1e10.  Dotted: network DP with
c = 10 colluders (Sec. 4.3).  The epsilons are plotted; the script prints the deltas (App. D's, and the one
with Balle et al. Thm 10's group terms that App. D omits, see amplify_jax.network).

Differences from the authors' script (documented in amplify_jax.network): we follow the paper's Chernoff
bound N_v = T/n + sqrt(3 T/n ln(1/delta_hat)) (their script uses sqrt(3T/2 ln(1/delta))) and use advanced
composition as in Thm 3 (their script takes the min with simple composition).

Run: python benchmarks/fig_network_fig1a.py  ->  figures/network_fig1a.png
"""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from amplify_jax import network as N  # noqa: E402

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
    crossing = ns[np.argmax(net < loc)]
    print(f"network DP below local DP from n = {crossing:g} (paper: 'as soon as n >= 20')")
    for n_show in (100, 10_000, 1e6, 1e10):
        i = np.argmin(np.abs(ns - n_show))
        print(f"n = {ns[i]:.3g}: network {net[i]:.4g}, local {loc[i]:.4g}, ratio {loc[i] / net[i]:.1f}; network "
              f"delta {float(nb.delta[i]):.3g} with Thm 10's group terms ({net_delta_paper[i]:.3g} as in App. D)")

    fig, ax = plt.subplots(figsize=(6.5, 5))
    ax.plot(ns, loc, "b+-", ms=4, label=r"LDP ($\varepsilon_0=0.1$)")
    ax.plot(ns, net, "g+-", ms=4, label=r"NDP ($\varepsilon_0=0.1$)")
    ax.plot(ns, loc_fixed, "b--", label=r"LDP (fixed contribution)")
    ax.plot(ns, net_fixed, "g--", label=r"NDP (fixed contribution)")
    ax.plot(ns[big], net_coll, "g:", label=r"NDP, $c=10$ colluders")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel(r"privacy loss $\varepsilon$")
    ax.set_title("Fig. 1(a): real summation, T = 100 n (Thm 3, App. D corrected)", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    out = os.path.join(os.path.dirname(__file__), "..", "figures", "network_fig1a.png")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=130)
    print("wrote", os.path.normpath(out))


if __name__ == "__main__":
    main()
