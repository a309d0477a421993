"""Benchmark: the privacy blanket with dummies on a grid of 1e4 (eps, n, d, sigma) points.

Ladjel et al.'s target randomizer over T = 20 targets (App. E-C), delta(eps) of Lemma 2 with the exact
E[sum L]_+ (multinomial counts) and with Monte Carlo (Algorithm 2, sampled jointly with the binomial weights,
upper confidence bound at 95%), on a 10 x 10 x 10 x 10 grid:
eps in [0.2, 2], n in [50, 500], d in [0, 100], sigma in [0.05, 0.5].  Target (issue 3): < 2 s warm.
Hoeffding and Bennett on the same grid for scale.  Each method is compiled once, then timed (median of 3 warm calls; one for exact and Monte Carlo).

    python benchmarks/bench_blanket.py [--samples 1000]

Writes benchmarks/results/bench_blanket.json.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import jax

from amplify_jax import shuffle as S

ROOT = Path(__file__).resolve().parents[1]


def main():
    samples = int(sys.argv[sys.argv.index("--samples") + 1]) if "--samples" in sys.argv else 1000
    eps = np.linspace(0.2, 2.0, 10)[:, None, None, None]
    n = np.round(np.linspace(50, 500, 10))[None, :, None, None]
    d = np.round(np.linspace(0, 100, 10))[None, None, :, None]
    sigma = np.linspace(0.05, 0.5, 10)[None, None, None, :]
    r = S.target_randomizer(targets=20, sampling=sigma)
    out = dict(machine=platform.platform(), processor=platform.processor(), cpus=os.cpu_count(),
               jax=jax.__version__, load_average=os.getloadavg(), grid_points=10_000, targets=20,
               mc_samples=samples, target_seconds=2.0, methods={})
    results = {}
    for method in ("hoeffding", "bennett", "exact", "monte_carlo"):
        kw = dict(key=jax.random.PRNGKey(0), samples=samples) if method == "monte_carlo" else {}
        t = time.perf_counter()
        res = S.blanket_delta(eps, n=n, dummies=d, randomizer=r, method=method, **kw)
        res.delta.block_until_ready()
        first = time.perf_counter() - t
        ts = []
        for _ in range(1 if method in ("exact", "monte_carlo") else 3):
            t = time.perf_counter()
            res = S.blanket_delta(eps, n=n, dummies=d, randomizer=r, method=method, **kw)
            res.delta.block_until_ready()
            ts.append(time.perf_counter() - t)
        results[method] = res
        out["methods"][method] = dict(first_call_seconds=first, warm_seconds=float(np.median(ts)),
                                      mean_delta=float(np.mean(np.asarray(res.delta))))
        print(f"{method:12s} first {first:6.2f} s, warm {np.median(ts):6.3f} s (target 2 s)")
    ex = np.asarray(results["exact"].delta)
    ucb = np.asarray(results["monte_carlo"].delta)
    est = np.asarray(results["monte_carlo"].estimate)
    out["checks"] = dict(
        exact_le_hoeffding=bool(np.all(ex <= np.asarray(results["hoeffding"].delta))),
        exact_le_bennett=bool(np.all(ex <= np.asarray(results["bennett"].delta))),
        mc_ucb_ge_exact_fraction=float(np.mean(ucb >= ex)),
        mc_estimate_max_abs_error=float(np.max(np.abs(est - ex))),
    )
    print(out["checks"])
    path = ROOT / "benchmarks" / "results" / "bench_blanket.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2))
    print("wrote", path)


if __name__ == "__main__":
    main()
