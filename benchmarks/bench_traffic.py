"""Benchmark of amplify_jax.traffic.scrambler_delta (Ladjel et al. Thm 4 / App. E, target randomizer) on a
grid of (eps, n, d, sigma) points, warm (compiled), with T = 20.

Anchor, measured in the same run: amplify_jax.shuffle.blanket_delta with the target randomizer, an
independent implementation of the same exact evaluation (its windows are sized from the batch in Python,
so it is timed warm on the same grid as well), and a plain-Python/SciPy evaluation of the same exact sum on a
few points (per-point loop over the binomial and multinomial counts), extrapolated per point.
Also reported: the agreement of the two JAX implementations on the grid.

Workload: 2,000 points (default), eps in [0.2, 3], n in [10, 1000], d in [0, 300], sigma in [0.05, 0.9]
(random, seed 0); the SciPy reference takes up to a minute per point, so it runs on 3 of them (drawn among the points with
1e-6 < delta < 0.1 and n <= 300).

    python benchmarks/bench_traffic.py [--points 2000]

Writes benchmarks/results/bench_traffic.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import jax
import numpy as np
from scipy.stats import binom

from amplify_jax import shuffle as sh
from amplify_jax import traffic as tr

T = 20


def timeit(fn, repeat=3):
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        jax.block_until_ready(fn())
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)), float(np.min(ts))


def scipy_exact(eps, n, d, s):
    """The Lemma 2 sum with E[sum L]_+ over (M, N2) by SciPy pmfs: a straightforward per-point reference."""
    ez = np.exp(eps)
    tot = 0.0
    js = np.arange(n)
    wj = binom.pmf(js, n - 1, s)
    for j, w in zip(js, wj):
        if w < 1e-300:
            continue
        k = j + d + 1
        M = np.arange(k + 1)
        wm = binom.pmf(M, k, 2.0 / T)
        e = 0.0
        for m, pm in zip(M, wm):
            if pm < 1e-300:
                continue
            n2 = np.arange(m + 1)
            v = k * s * (1 - ez) + (1 - s) * T * ((m - n2) - ez * n2)
            e += pm * np.sum(binom.pmf(n2, m, 0.5) * np.maximum(v, 0.0))
        tot += w * e / k
    eps0 = np.log1p((1 - s) * T / s)
    return 0.0 if eps >= eps0 else min(tot, 1.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=2_000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    P = args.points
    eps = rng.uniform(0.2, 3.0, P)
    n = rng.integers(10, 1001, P)
    d = rng.integers(0, 301, P)
    s = rng.uniform(0.05, 0.9, P)
    res = {"points": P, "targets": T, "machine": platform.platform(), "python": platform.python_version(),
           "jax": jax.__version__}
    for method in ("bennett", "exact"):
        f = lambda: tr.scrambler_delta(eps, targets=T, n=n, sampling=s, dummies=d, method=method).delta  # noqa: E731
        t0 = time.perf_counter()
        jax.block_until_ready(f())
        res[f"traffic_{method}_cold_s"] = time.perf_counter() - t0
        res[f"traffic_{method}_warm_s"], _ = timeit(f)
        print(method, res[f"traffic_{method}_cold_s"], res[f"traffic_{method}_warm_s"], flush=True)
    mine = np.asarray(tr.scrambler_delta(eps, targets=T, n=n, sampling=s, dummies=d, method="exact").delta)
    r = sh.target_randomizer(targets=T, sampling=s)
    g = lambda: sh.blanket_delta(eps, n=n, randomizer=r, dummies=d, method="exact").delta  # noqa: E731
    t0 = time.perf_counter()
    other = np.asarray(jax.block_until_ready(g()))
    res["shuffle_exact_cold_s"] = time.perf_counter() - t0
    res["shuffle_exact_warm_s"], _ = timeit(g, repeat=1)
    print("shuffle exact", res["shuffle_exact_cold_s"], res["shuffle_exact_warm_s"], flush=True)
    big = other > 1e-8
    res["max_rel_diff_vs_shuffle_exact"] = float(np.max(np.abs(mine[big] - other[big]) / other[big]))
    res["median_rel_diff_vs_shuffle_exact"] = float(np.median(np.abs(mine[big] - other[big]) / other[big]))
    res["min_ratio_traffic_over_shuffle"] = float(np.min(mine[big] / other[big]))
    # SciPy per-point reference on a few points
    informative = np.flatnonzero((mine > 1e-6) & (mine < 0.1) & (n <= 300))
    idx = rng.choice(informative, 3, replace=False)
    t0 = time.perf_counter()
    ref = np.array([scipy_exact(eps[i], int(n[i]), int(d[i]), s[i]) for i in idx])
    per_point = (time.perf_counter() - t0) / len(idx)
    res["scipy_per_point_s"] = per_point
    res["scipy_extrapolated_grid_s"] = per_point * P
    pos = ref > 1e-12
    res["scipy_points"] = [[float(eps[i]), int(n[i]), int(d[i]), float(s[i]), float(mine[i]), float(r_)]
                           for i, r_ in zip(idx, ref)]
    res["max_rel_excess_vs_scipy"] = float(np.max((mine[idx][pos] - ref[pos]) / ref[pos])) if pos.any() else 0.0
    res["traffic_at_least_scipy"] = bool(np.all(mine[idx] >= ref * (1 - 1e-12)))
    res["speedup_vs_scipy"] = res["scipy_extrapolated_grid_s"] / res["traffic_exact_warm_s"]
    res["speedup_vs_shuffle_exact_warm"] = res["shuffle_exact_warm_s"] / res["traffic_exact_warm_s"]
    for k, v in res.items():
        print(f"{k}: {v}")
    out = Path(__file__).parent / "results" / "bench_traffic.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2))
    print("wrote", out)


if __name__ == "__main__":
    main()
