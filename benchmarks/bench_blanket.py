"""Benchmark: the privacy blanket with dummies on a grid of 1e4 (eps, n, d, sigma) points (issue 3, target
< 2 s warm for the exact and the Monte Carlo evaluation).

Ladjel et al.'s target randomizer over T = 20 targets (App. E-C), delta(eps) of Lemma 2 with the exact
E[sum L]_+ and with Monte Carlo (Algorithm 2 sampled jointly with the binomial weights, its last draw
integrated out; one-sided 95% upper confidence bound, 1000 samples per point) on a 10 x 10 x 10 x 10 grid:
eps in [0.2, 2], n in [50, 500], d in [0, 100], sigma in [0.05, 0.5].  Hoeffding and Bennett on the same
grid for scale.  Each method: first call (compilation included), then the median of 3 warm calls, wall and
CPU seconds of this process (the machine is shared: the load average is recorded).

Anchor, timed in the same run: the previous implementation (``amplify_jax/shuffle/_blanket.py`` at commit
771e3b0, loaded from git into a temporary module), exact and Monte Carlo on the same grid, one warm call
each; the ratio old / new is printed.  Checks: the new exact delta is never above the old one by more than
the new round-off margin (the old one charged more truncated mass), and the Monte Carlo bound is above
the exact value everywhere.

    python benchmarks/bench_blanket.py [--samples 1000] [--skip-anchor]

Writes benchmarks/results/bench_blanket.json.
"""

from __future__ import annotations

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

from amplify_jax import shuffle as S

ROOT = Path(__file__).resolve().parents[1]
ANCHOR_COMMIT = "771e3b0"


def load_anchor():
    """The previous _blanket.py as module amplify_jax.shuffle._blanket_anchor (its relative imports resolve
    in the current package: _validate, numerics and _binomial, whose used functions are unchanged)."""
    src = subprocess.run(["git", "show", f"{ANCHOR_COMMIT}:amplify_jax/shuffle/_blanket.py"], cwd=ROOT,
                         check=True, capture_output=True, text=True).stdout
    name = "amplify_jax.shuffle._blanket_anchor"
    spec = importlib.util.spec_from_loader(name, loader=None)
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = "amplify_jax.shuffle"
    sys.modules[name] = mod
    exec(compile(src, f"<git {ANCHOR_COMMIT}:_blanket.py>", "exec"), mod.__dict__)
    return mod


def timed(fn, repeat):
    t, c = time.perf_counter(), time.process_time()
    res = fn()
    jax.block_until_ready(res.delta)
    first = time.perf_counter() - t
    walls, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        res = fn()
        jax.block_until_ready(res.delta)
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return res, dict(first_call_seconds=first, warm_seconds=float(np.median(walls)),
                     warm_cpu_seconds=float(np.median(cpus)), warm_runs=walls)


def main():
    samples = int(sys.argv[sys.argv.index("--samples") + 1]) if "--samples" in sys.argv else 1000
    eps = np.linspace(0.2, 2.0, 10)[:, None, None, None]
    n = np.round(np.linspace(50, 500, 10))[None, :, None, None]
    d = np.round(np.linspace(0, 100, 10))[None, None, :, None]
    sigma = np.linspace(0.05, 0.5, 10)[None, None, None, :]
    out = dict(machine=platform.platform(), processor=platform.processor(), cpus=os.cpu_count(),
               jax=jax.__version__, load_average_start=os.getloadavg(), grid_points=10_000, targets=20,
               mc_samples=samples, mc_confidence=0.95, target_seconds=2.0, anchor_commit=ANCHOR_COMMIT, methods={},
               anchor={})
    results = {}
    for method in ("hoeffding", "bennett", "exact", "monte_carlo"):
        kw = dict(key=jax.random.PRNGKey(0), samples=samples) if method == "monte_carlo" else {}
        r = S.target_randomizer(targets=20, sampling=sigma)
        res, info = timed(lambda: S.blanket_delta(eps, n=n, dummies=d, randomizer=r, method=method, **kw), 3)
        results[method] = res
        info["mean_delta"] = float(np.mean(np.asarray(res.delta)))
        out["methods"][method] = info
        print(f"{method:12s} first {info['first_call_seconds']:6.2f} s, warm {info['warm_seconds']:6.3f} s "
              f"(cpu {info['warm_cpu_seconds']:6.3f} s; target 2 s)", flush=True)
    ex = np.asarray(results["exact"].delta)
    ucb = np.asarray(results["monte_carlo"].delta)
    est = np.asarray(results["monte_carlo"].estimate)
    out["checks"] = dict(
        exact_le_hoeffding=bool(np.all(ex <= np.asarray(results["hoeffding"].delta))),
        exact_le_bennett=bool(np.all(ex <= np.asarray(results["bennett"].delta))),
        mc_ucb_ge_exact_fraction=float(np.mean(ucb >= ex)),
        mc_estimate_max_abs_error=float(np.max(np.abs(est - ex))),
    )
    if "--skip-anchor" not in sys.argv:
        old = load_anchor()
        for method in ("exact", "monte_carlo"):
            kw = dict(key=jax.random.PRNGKey(0), samples=samples) if method == "monte_carlo" else {}
            r = old.target_randomizer(targets=20, sampling=sigma)
            res, info = timed(lambda: old.blanket_delta(eps, n=n, dummies=d, randomizer=r, method=method, **kw), 1)
            ratio = info["warm_seconds"] / out["methods"][method]["warm_seconds"]
            ratio_cpu = info["warm_cpu_seconds"] / out["methods"][method]["warm_cpu_seconds"]
            info.update(speedup_wall=ratio, speedup_cpu=ratio_cpu)
            out["anchor"][method] = info
            print(f"anchor {method:12s} first {info['first_call_seconds']:6.2f} s, warm {info['warm_seconds']:6.2f} s "
                  f"(cpu {info['warm_cpu_seconds']:6.2f} s): new is {ratio:.1f}x faster (cpu {ratio_cpu:.1f}x)",
                  flush=True)
            if method == "exact":
                od = np.asarray(res.delta)
                out["checks"]["exact_new_le_old_times_1p1e9"] = bool(np.all(ex <= od * (1 + 1e-9) + 1e-300))
                rel = (ex - od) / np.maximum(od, 1e-300)
                out["checks"]["exact_new_minus_old_relative_median"] = float(np.median(rel))
                out["checks"]["exact_new_minus_old_relative_max"] = float(np.max(rel))
    out["load_average_end"] = os.getloadavg()
    print(out["checks"])
    path = ROOT / "benchmarks" / "results" / "bench_blanket.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2))
    print("wrote", path)


if __name__ == "__main__":
    main()
