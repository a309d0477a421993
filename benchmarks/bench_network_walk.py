"""Benchmark: the empirical walk simulation of Cyffers & Bellet Sec. 5.1 (Fig. 1(b)) at the issue's target size.

Target: n = 400 users, 10 walks of T = 100 n steps, every ordered pair (u, v), Gaussian cycles composed with
Kairouz-Oh-Viswanath Thm 3.5 -- under 30 s on this CPU.  We time ``sample_walks`` + ``walk_privacy_losses``
(first call, including compilation, and warm), for the hidden and the receiver-known views.

Anchor (same run): a plain-Python implementation in the style of the authors' scripts (a loop over the walk
that appends a cycle to every observer's list, then a per-pair loop composing the lists with NumPy), on one
walk at n = 100; ours is timed on the same walk (with ``cycle_delta="paper"``: the anchor computes the
epsilons only, not Balle et al.'s group deltas) and the ratio printed.  The target runs use the default
``cycle_delta="group"`` (full per-cycle delta).  Results go to benchmarks/results/bench_network_walk.json.

Run: python benchmarks/bench_network_walk.py
"""

from __future__ import annotations

import json
import math
import os
import platform
import time

import jax
import numpy as np

from amplify_jax import network as N

EPS0, DELTA_PRIME, DELTA_CYCLE = 0.4, 1e-7, 1e-7


def anchor_one_walk(walk, n, eps0, dt):
    """Loop implementation (authors' style): cycles per observer, Eq. 10 with n - 1, KOV Thm 3.5 per pair."""
    last = [-1] * n
    cycles = [[] for _ in range(n)]
    for t, v in enumerate(walk):
        m = t - last[v] - 1
        if m > 0:
            q = 1 - (1 - 1 / (n - 1)) ** m
            cycles[v].append(math.log1p(q * math.expm1(eps0 / math.sqrt(m))))
        last[v] = t
    out = np.zeros((n, n))
    for v in range(n):
        e = np.asarray(cycles[v])
        for u in range(n):
            if u == v:
                continue
            s1 = e.sum()
            s2 = (e * e).sum()
            s3 = (e * np.tanh(e / 2)).sum()
            a = s3 + math.sqrt(2 * s2 * math.log(math.e + math.sqrt(s2) / dt))
            b = s3 + math.sqrt(2 * s2 * math.log(1 / dt))
            out[u, v] = min(s1, a, b)
    return out


def timed(f):
    t0 = time.perf_counter()
    r = f()
    jax.block_until_ready(r)
    return r, time.perf_counter() - t0


def main():
    res = {
        "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "jax": jax.__version__, "devices": [str(d) for d in jax.devices()]},
        "params": {"eps0": EPS0, "delta_prime": DELTA_PRIME, "delta_cycle": DELTA_CYCLE},
    }
    # target size
    n, walks_n = 400, 10
    T = 100 * n
    for view in ("hidden", "receiver_known"):
        def run(seed):
            w = N.sample_walks(seed, n=n, steps=T, num_walks=walks_n)
            return N.walk_privacy_losses(w, n=n, eps0=EPS0, delta_prime=DELTA_PRIME, delta_cycle=DELTA_CYCLE,
                                         view=view)

        r, t_first = timed(lambda: run(0))
        r, t_warm = timed(lambda: run(1))
        s = N.summarize_walk_losses(r.network)
        sl = N.summarize_walk_losses(r.local)
        res[f"target_{view}"] = {
            "n": n, "T": T, "walks": walks_n, "pairs": n * (n - 1) * walks_n,
            "seconds_first_call_incl_compile": t_first, "seconds_warm": t_warm, "under_30s": t_first < 30.0,
            "network_mean_min_max": [float(s.mean), float(s.min), float(s.max)],
            "local_mean_min_max": [float(sl.mean), float(sl.min), float(sl.max)],
            "network_delta_max_group_terms": float(N.summarize_walk_losses(r.network_delta).max),
        }
        print(f"[{view}] n={n}, {walks_n} walks of T={T}: first call {t_first:.2f} s (incl. compile), "
              f"warm {t_warm:.2f} s; network eps mean/min/max = {float(s.mean):.4f}/{float(s.min):.4f}/"
              f"{float(s.max):.4f}; local {float(sl.mean):.3f}")

    # anchor comparison at n = 100, one walk
    n_a = 100
    w = N.sample_walks(7, n=n_a, steps=100 * n_a, num_walks=1)
    ours_f = lambda: N.walk_privacy_losses(w, n=n_a, eps0=EPS0, delta_prime=DELTA_PRIME,  # noqa: E731
                                           delta_cycle=DELTA_CYCLE, cycle_delta="paper").network
    ours, _ = timed(ours_f)  # compile
    ours, t_ours = timed(ours_f)
    walk_list = [int(x) for x in np.asarray(w[0])]
    t0 = time.perf_counter()
    ref = anchor_one_walk(walk_list, n_a, EPS0, DELTA_PRIME)
    t_anchor = time.perf_counter() - t0
    maxdiff = float(np.max(np.abs(np.asarray(ours[0]) - ref)))
    res["anchor_n100_one_walk"] = {"seconds_ours_warm": t_ours, "seconds_anchor_python": t_anchor,
                                   "speedup": t_anchor / t_ours, "max_abs_difference": maxdiff}
    print(f"[anchor] n={n_a}, one walk: ours {t_ours:.3f} s, Python loop {t_anchor:.2f} s, "
          f"ratio {t_anchor / t_ours:.0f}x, max |diff| = {maxdiff:.2e}")

    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    path = os.path.join(os.path.dirname(__file__), "results", "bench_network_walk.json")
    with open(path, "w") as f:
        json.dump(res, f, indent=2)
    print("wrote", path)


if __name__ == "__main__":
    main()
