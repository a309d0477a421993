"""Benchmark of amplify_jax.traffic.scrambler_delta (Ladjel et al. Thm 4 / App. E, target randomizer) on a
grid of (eps, n, d, sigma) points, warm (compiled), with T = 20.

scrambler_delta now runs amplify_jax.shuffle's engine for the target randomizer (one implementation for
both families).  Anchors, measured in the same run: the previous traffic implementation (its own kernels,
``amplify_jax/traffic.py`` at commit 771e3b0, loaded from git into a temporary module), warm on the same
grid, and a plain-Python/SciPy evaluation of the same exact sum on a few points (per-point loop over the
binomial and multinomial counts), extrapolated per point.  Also reported: the agreement with the previous
implementation on the grid (the new one is never above it by more than its round-off margin where the old
one was exact; it is lower where the old one charged truncated mass).

Workload: 2,000 points (default), eps in [0.2, 3], n in [10, 1000], d in [0, 300], sigma in [0.05, 0.9]
(random, seed 0); the SciPy reference takes up to a minute per point, so it runs on 3 of them (drawn among the points with
1e-6 < delta < 0.1 and n <= 300).

    python benchmarks/bench_traffic.py [--points 2000]

Writes benchmarks/results/bench_traffic.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
from amplify_jax import traffic as tr

T = 20
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from _references import scipy_lemma2  # noqa: E402  (the SciPy reference the tests use)
ANCHOR_COMMIT = "771e3b0"


def load_anchor():
    """The previous amplify_jax/traffic.py as module amplify_jax._traffic_anchor (absolute imports)."""
    src = subprocess.run(["git", "show", f"{ANCHOR_COMMIT}:amplify_jax/traffic.py"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    name = "amplify_jax._traffic_anchor"
    mod = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader=None))
    sys.modules[name] = mod
    exec(compile(src, f"<git {ANCHOR_COMMIT}:traffic.py>", "exec"), mod.__dict__)
    return mod


def timeit(fn, repeat=3):
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        jax.block_until_ready(fn())
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)), float(np.min(ts))


def scipy_exact(eps, n, d, s):
    """The Lemma 2 sum with E[sum L]_+ over (M, N2) by SciPy pmfs: a straightforward per-point reference (the
    tests' own, tests/_references.py), 0 at eps >= eps0 and capped at 1 like the bound."""
    eps0 = np.log1p((1 - s) * T / s)
    return 0.0 if eps >= eps0 else min(scipy_lemma2(eps, n, d, T, s), 1.0)


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
           "jax": jax.__version__, "load_average_start": os.getloadavg(), "anchor_commit": ANCHOR_COMMIT}
    old = load_anchor()
    for name, mod in (("traffic", tr), ("anchor", old)):
        for method in ("bennett", "exact"):
            f = lambda: mod.scrambler_delta(eps, targets=T, n=n, sampling=s, dummies=d, method=method).delta  # noqa: E731
            t0 = time.perf_counter()
            jax.block_until_ready(f())
            res[f"{name}_{method}_cold_s"] = time.perf_counter() - t0
            c0 = time.process_time()
            res[f"{name}_{method}_warm_s"], _ = timeit(f)
            res[f"{name}_{method}_warm_cpu_s"] = (time.process_time() - c0) / 3
            print(name, method, res[f"{name}_{method}_cold_s"], res[f"{name}_{method}_warm_s"], flush=True)
    mine = np.asarray(tr.scrambler_delta(eps, targets=T, n=n, sampling=s, dummies=d, method="exact").delta)
    other = np.asarray(old.scrambler_delta(eps, targets=T, n=n, sampling=s, dummies=d, method="exact").delta)
    big = other > 1e-8
    res["max_rel_diff_vs_anchor_exact"] = float(np.max(np.abs(mine[big] - other[big]) / other[big]))
    res["median_rel_diff_vs_anchor_exact"] = float(np.median(np.abs(mine[big] - other[big]) / other[big]))
    res["max_ratio_new_over_anchor"] = float(np.max(mine[big] / other[big]))
    res["speedup_vs_anchor_exact_warm"] = res["anchor_exact_warm_s"] / res["traffic_exact_warm_s"]
    res["speedup_vs_anchor_bennett_warm"] = res["anchor_bennett_warm_s"] / res["traffic_bennett_warm_s"]
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
    res["load_average_end"] = os.getloadavg()
    for k, v in res.items():
        print(f"{k}: {v}")
    out = Path(__file__).parent / "results" / "bench_traffic.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2))
    print("wrote", out)


if __name__ == "__main__":
    main()
