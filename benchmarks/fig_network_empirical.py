"""Figures 1(b) and 3 of Cyffers & Bellet, "Privacy Amplification by Decentralization" (AISTATS 2022).

Empirical privacy loss from actual random walks on the complete graph, T = 100 n steps, 10 walks per n:
for every ordered pair (u, v) the cycles between v's visits are amplified by subsampling (Eq. 10) and
composed with Kairouz-Oh-Viswanath Thm 3.5 (``amplify_jax.network.walk_privacy_losses``).  Curves: mean
over all pairs and walks; error bars: best and worst pair over all walks.  Local DP: each user's actual
number of contributions composed with the same bound.  delta' = delta_cycle = 1e-7 (authors' script).

* Fig. 1(b) (figures/network_fig1b.png): real summation with Gaussian noise, cycle loss eps0 / sqrt(m),
  eps0 in {0.1, 0.4}, n in {5, 10, 20, 50, 100, 200, 400} (the authors' grid).
* Fig. 3 (figures/network_fig3.png): histograms with L-ary randomized response, n in the authors' grid up to
  400, eps0 in {0.5, 1.0} (the paper does not state its values, nor L).  Only sound (eps, delta) pairs are
  drawn.  The paper's account (hidden view, each cycle amplified by subsampling, Eq. 10) holds with a delta
  close to 1 once Balle et al. Thm 10's group terms are counted (docs/errata.md#e-network-cycle-delta: a cycle
  can carry k >= 2 reports of u, and the hockey-stick of k changed reports at the amplified eps of one is of
  order (k - 1) eps_A; for example n = 400, eps0 = 0.5, FMT numerical: eps 4.49 with delta 1.0).  The figure
  uses the path-known account instead (``view="path_known"``): v is told the whole path, which can only help
  it, so the pairs hold in the paper's setting too; a cycle of length m in which u appears j times costs
  j eps_A(m) by group privacy of the shuffled aggregate, with delta delta_cycle (e^{j eps_A} - 1)/(e^{eps_A} - 1),
  or j eps0-LDP items where that is cheaper.  eps_A(m) comes from the privacy blanket of Balle, Bell, Gascon,
  Nissim 2019 (what the paper used, App. H; solid) for a generic eps0-LDP randomizer, since L is not stated
  (``shuffle_bound="blanket"``), and from Feldman-McMillan-Talwar's numerical bound (dotted,
  ``amplify_jax.shuffle.clones_epsilon``).  A point is drawn only if the full delta of every pair and walk is
  at most 1e-4 (``DELTA_MAX_FIG3``); the legend gives the largest delta drawn.

The epsilon is reported at delta' = 1e-7; the delta it holds with (KOV delta with Balle et al. Thm 10's
full per-cycle delta, including the group terms the paper omits, docs/errata.md#e-network-cycle-delta) is
printed, the largest over all pairs and walks.  For the Gaussian curves of Fig. 1(b) it is 0.025
(eps0 = 0.1) and 0.030 (eps0 = 0.4) at n = 400, and over n = 5..400 between 0.005 and 0.048 (eps0 = 0.1) and
between 0.012 and 0.073 (eps0 = 0.4), not monotone in n (the walks are seeded, so these are reproducible).

Dotted in Fig. 1(b): the receiver-known variant (App. G), where contributions adjacent to v cost the full eps0.

This module holds the shared code; each figure has its own script (Fig. 1(b) about a minute of CPU, Fig. 3
about 8 minutes: 475 s CPU, 28 min wall at load 10):
    python benchmarks/fig_network_fig1b.py  ->  figures/network_fig1b.png
    python benchmarks/fig_network_fig3.py   ->  figures/network_fig3.png
(``python benchmarks/fig_network_empirical.py`` makes both.)
"""

from __future__ import annotations

import os
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from amplify_jax import network as N  # noqa: E402
from amplify_jax.plotting import figure_path  # noqa: E402

DP = DC = 1e-7
WALKS = 10


def stats_for(n, eps0, mechanism, view, seed=0, shuffle_bound="fmt"):
    """(mean, min, max) over pairs and walks of the network loss, and the same for local DP.

    The largest delta over pairs and walks is left in ``stats_for.last_delta`` (network) and
    ``stats_for.last_local_delta`` (local DP)."""
    T = 100 * n
    per_call = WALKS if n <= 400 else 1  # keep the (walks, n, n) arrays small for large n
    net, loc, dmax, ldmax = [], [], [], []
    for k in range(WALKS // per_call):
        w = N.sample_walks(seed * 1000 + k, n=n, steps=T, num_walks=per_call)
        r = N.walk_privacy_losses(w, n=n, eps0=eps0, delta_prime=DP, delta_cycle=DC, mechanism=mechanism, view=view,
                                  shuffle_bound=shuffle_bound)
        s = N.summarize_walk_losses(r.network)
        sl = N.summarize_walk_losses(r.local)
        net.append([float(s.mean), float(s.min), float(s.max)])
        dmax.append(float(N.summarize_walk_losses(r.network_delta).max))
        ldmax.append(float(N.summarize_walk_losses(r.local_delta).max))
        loc.append([float(sl.mean), float(sl.min), float(sl.max)])
    net, loc = np.array(net), np.array(loc)
    agg = lambda a: (a[:, 0].mean(), a[:, 1].min(), a[:, 2].max())  # noqa: E731  (equal-size chunks)
    stats_for.last_delta = max(dmax)
    stats_for.last_local_delta = max(ldmax)
    return agg(net), agg(loc)


VARIANTS_GAUSS = (("hidden", "fmt", "g", None, "Network DP"),
                  ("receiver_known", "fmt", "tab:olive", ":", "Network DP, receiver known"))
# Fig. 3: only sound (eps, delta) pairs, i.e. the path-known account (module docstring)
VARIANTS_HIST = (("path_known", "blanket", "g", None, "Network DP, privacy blanket"),
                 ("path_known", "clones", "tab:olive", ":", "Network DP, FMT numerical"))


def plot(ns, eps0s, mechanism, title, out, variants=VARIANTS_GAUSS, delta_max=None):
    """One curve per variant and eps0, and local DP.  With ``delta_max``, a point is drawn only if the largest
    delta over all pairs and walks is at most ``delta_max`` (the others are printed as left out), and the
    legend gives the largest delta of the points drawn."""
    fig, ax = plt.subplots(figsize=(6.5, 5.5))
    styles = ["-", "-."]
    for j, e0 in enumerate(eps0s):
        rows = {v: [] for v in variants}
        locs, ldel = [], []
        for n in ns:
            for var in variants:
                (m, lo, hi), loc = stats_for(n, e0, mechanism, var[0], shuffle_bound=var[1])
                d = stats_for.last_delta
                rows[var].append((n, m, lo, hi, d))
                print(f"[{mechanism}] eps0={e0} n={n} {var[4]} ({var[0]}): mean {m:.4g} [{lo:.4g}, {hi:.4g}]; "
                      f"local mean {loc[0]:.4g} [{loc[1]:.4g}, {loc[2]:.4g}]; max delta {d:.3g} (local "
                      f"{stats_for.last_local_delta:.3g})", flush=True)
            locs.append((n, *loc))
            ldel.append(stats_for.last_local_delta)
        curves = [(var[2], var[3] or styles[j], var[4], rows[var]) for var in variants]
        curves.append(("b", styles[j], "Local DP", [(*r, d) for r, d in zip(locs, ldel)]))
        for color, ls, name, pts in curves:
            keep = [p for p in pts if delta_max is None or p[4] <= delta_max]
            for p in pts:
                if p not in keep:
                    print(f"left out (delta {p[4]:.3g} > {delta_max:g}): {name}, eps0={e0}, n={p[0]}")
            if not keep:
                continue
            a = np.array(keep)
            label = rf"{name} ($\varepsilon_0={e0}$)"
            if delta_max is not None:
                label += rf", $\delta\leq${a[:, 4].max():.1e}"
            ax.errorbar(a[:, 0], a[:, 1], yerr=[a[:, 1] - a[:, 2], a[:, 3] - a[:, 1]], color=color, ls=ls,
                        capsize=4, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel(r"privacy loss $\varepsilon$ ($\delta'=10^{-7}$)")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    os.makedirs(os.path.dirname(out), exist_ok=True)
    fig.savefig(out, dpi=130)
    print("wrote", os.path.normpath(out))


FIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "figures")


def fig1b():
    t0 = time.perf_counter()
    plot([5, 10, 20, 50, 100, 200, 400], [0.1, 0.4], "gaussian",
         "Cyffers & Bellet 2022 Fig. 1(b): real summation, empirical\n(T = 100 n, 10 walks; bars: best/worst pair)",
         str(figure_path("network_fig1b.png", FIGS)))
    print(f"Fig. 1(b): {time.perf_counter() - t0:.1f} s")


DELTA_MAX_FIG3 = 1e-4  # Fig. 3 draws a point only if every pair's full delta is at most this


def fig3():
    t0 = time.perf_counter()
    plot([10, 20, 50, 100, 200, 400], [0.5, 1.0], "histogram",
         "Cyffers & Bellet 2022 Fig. 3: histograms, empirical (T = 100 n, 10 walks)\n"
         "bars: best/worst pair; sound (eps, delta) only:\n"
         "path revealed to v, shuffled cycles, group privacy for repeats",
         str(figure_path("network_fig3.png", FIGS)), variants=VARIANTS_HIST, delta_max=DELTA_MAX_FIG3)
    print(f"Fig. 3: {time.perf_counter() - t0:.1f} s")


def main():
    fig1b()
    fig3()


if __name__ == "__main__":
    main()
