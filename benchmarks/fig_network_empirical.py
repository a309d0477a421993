"""Figures 1(b) and 3 of Cyffers & Bellet, "Privacy Amplification by Decentralization" (AISTATS 2022).

Empirical privacy loss from actual random walks on the complete graph, T = 100 n steps, 10 walks per n:
for every ordered pair (u, v) the cycles between v's visits are amplified by subsampling (Eq. 10) and
composed with Kairouz-Oh-Viswanath Thm 3.5 (``amplify_jax.network.walk_privacy_losses``).  Curves: mean
over all pairs and walks; error bars: best and worst pair over all walks.  Local DP: each user's actual
number of contributions composed with the same bound.  delta' = delta_cycle = 1e-7 (authors' script).

* Fig. 1(b) (figures/network_fig1b.png): real summation with Gaussian noise, cycle loss eps0 / sqrt(m),
  eps0 in {0.1, 0.4}, n in {5, 10, 20, 50, 100, 200, 400} (the authors' grid).
* Fig. 3 (figures/network_fig3.png): histograms with randomized response, cycle loss from amplification by
  shuffling, n in the authors' grid up to 400, eps0 in {0.5, 1.0} (the paper does not state its values).
  The paper used Balle et al.'s numerical blanket bound; we show Feldman-McMillan-Talwar's numerical bound
  (``amplify_jax.shuffle.clones_epsilon``, solid) and their closed form (dotted), which only amplifies cycles
  of length m >= 16 e^eps0 ln(4/delta).

The epsilon is reported at delta' = 1e-7; the delta it holds with (KOV delta with Balle et al. Thm 10's
full per-cycle delta, including the group terms the paper omits, docs/errata.md#e-network-cycle-delta) is
printed, the largest over all pairs and walks: for the Gaussian curves 0.025 (eps0 = 0.1) and 0.030
(eps0 = 0.4) at n = 400 (between 0.005 and 0.048 over n = 5..400; the walks are seeded, so these are
reproducible), and 1 for histograms at every n (see amplify_jax.network's module docstring): the histogram
curves of Fig. 3 are therefore not (eps, delta) guarantees under this accounting (figures/README.md).

Dotted in Fig. 1(b): the receiver-known variant (App. G), where contributions adjacent to v cost the full eps0.

This module holds the shared code; each figure has its own script (about a minute of CPU each):
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

DP = DC = 1e-7
WALKS = 10


def stats_for(n, eps0, mechanism, view, seed=0, shuffle_bound="fmt"):
    """(mean, min, max) over pairs and walks of the network loss, and the same for local DP."""
    T = 100 * n
    per_call = WALKS if n <= 400 else 1  # keep the (walks, n, n) arrays small for large n
    net, loc, dmax = [], [], []
    for k in range(WALKS // per_call):
        w = N.sample_walks(seed * 1000 + k, n=n, steps=T, num_walks=per_call)
        r = N.walk_privacy_losses(w, n=n, eps0=eps0, delta_prime=DP, delta_cycle=DC, mechanism=mechanism, view=view,
                                  shuffle_bound=shuffle_bound)
        s = N.summarize_walk_losses(r.network)
        sl = N.summarize_walk_losses(r.local)
        net.append([float(s.mean), float(s.min), float(s.max)])
        dmax.append(float(N.summarize_walk_losses(r.network_delta).max))
        loc.append([float(sl.mean), float(sl.min), float(sl.max)])
    net, loc = np.array(net), np.array(loc)
    agg = lambda a: (a[:, 0].mean(), a[:, 1].min(), a[:, 2].max())  # noqa: E731  (equal-size chunks)
    stats_for.last_delta = max(dmax)
    return agg(net), agg(loc)


VARIANTS_GAUSS = (("hidden", "fmt", "g", None, "Network DP"),
                  ("receiver_known", "fmt", "tab:olive", ":", "Network DP, receiver known"))
VARIANTS_HIST = (("hidden", "clones", "g", None, "Network DP (FMT numerical)"),
                 ("hidden", "fmt", "tab:olive", ":", "Network DP (FMT closed form)"))


def plot(ns, eps0s, mechanism, title, out, variants=VARIANTS_GAUSS):
    fig, ax = plt.subplots(figsize=(6.5, 5.5))
    styles = ["-", "-."]
    for j, e0 in enumerate(eps0s):
        rows = {v: [] for v in variants}
        locs = []
        for n in ns:
            for var in variants:
                (m, lo, hi), loc = stats_for(n, e0, mechanism, var[0], shuffle_bound=var[1])
                rows[var].append((m, lo, hi))
                print(f"[{mechanism}] eps0={e0} n={n} {var[4]}: mean {m:.4g} [{lo:.4g}, {hi:.4g}]; local mean "
                      f"{loc[0]:.4g} [{loc[1]:.4g}, {loc[2]:.4g}]; max delta (Thm 10 with group terms) "
                      f"{stats_for.last_delta:.3g}", flush=True)
            locs.append(loc)
        for var in variants:
            a = np.array(rows[var])
            ax.errorbar(ns, a[:, 0], yerr=[a[:, 0] - a[:, 1], a[:, 2] - a[:, 0]], color=var[2],
                        ls=var[3] or styles[j], capsize=4, label=rf"{var[4]} ($\varepsilon_0={e0}$)")
        a = np.array(locs)
        ax.errorbar(ns, a[:, 0], yerr=[a[:, 0] - a[:, 1], a[:, 2] - a[:, 0]], color="b", ls=styles[j], capsize=4,
                    label=rf"Local DP ($\varepsilon_0={e0}$)")
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
         "Fig. 1(b): real summation, empirical (T = 100 n, 10 walks; bars: best/worst pair)",
         os.path.join(FIGS, "network_fig1b.png"))
    print(f"Fig. 1(b): {time.perf_counter() - t0:.1f} s")


def fig3():
    t0 = time.perf_counter()
    plot([10, 20, 50, 100, 200, 400], [0.5, 1.0], "histogram",
         "Fig. 3: histograms, empirical, FMT shuffling bounds (T = 100 n, 10 walks; bars: best/worst)",
         os.path.join(FIGS, "network_fig3.png"), variants=VARIANTS_HIST)
    print(f"Fig. 3: {time.perf_counter() - t0:.1f} s")


def main():
    fig1b()
    fig3()


if __name__ == "__main__":
    main()
