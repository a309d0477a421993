"""Time to first answer: a fresh process's first eps and calibration, cold (empty compilation cache) and warm
(the cache a previous process filled), against dp_accounting's RDP accountant in a fresh process, same run.

Front doors timed (each in a new Python process, wall time of the whole process, imports included):
- command line: ``amplify-jax epsilon --sigma 1 --q 0.01 --steps 10000 --delta 1e-5`` and
  ``amplify-jax calibrate --target-epsilon 1 --q 0.01 --steps 10000 --delta 1e-5``;
- Python: ``aj.dpsgd_epsilon(...)`` and ``aj.dpsgd_calibrate_sigma(...)`` at the same point;
- anchor: dp_accounting's ``RdpAccountant`` (eps at the point) and its ``calibrate_dp_mechanism`` (sigma for
  eps = 1), each in a fresh process.

"cold": ``AMPLIFY_JAX_CACHE`` is a new empty directory; "warm": the same directory on the next run (what every
run after a user's first one sees: importing amplify_jax turns the cache on, ``amplify_jax/_cache.py``).
Ratios are ours / dp_accounting's (below 1: we answer first).  The floor here is the anchor's own time: the
goal of issue 15 is a ratio <= 1.

    python benchmarks/bench_first_answer.py [--repeat 2]   ->  benchmarks/results/bench_first_answer.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

POINT = dict(q=0.01, steps=10000, delta=1e-5)

PY_EPS = "import amplify_jax as aj; print(float(aj.dpsgd_epsilon(sigma=1.0, q=0.01, steps=10000, delta=1e-5).epsilon))"
PY_CAL = ("import amplify_jax as aj; "
          "print(float(aj.dpsgd_calibrate_sigma(target_epsilon=1.0, q=0.01, steps=10000, delta=1e-5).sigma))")
DPA_EPS = """
import dp_accounting as dpa
acc = dpa.rdp.RdpAccountant()
acc.compose(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0)), 10000)
print(acc.get_epsilon(1e-5))
"""
DPA_CAL = """
import dp_accounting as dpa
ev = lambda s: dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(s)), 10000)
print(dpa.calibrate_dp_mechanism(dpa.rdp.RdpAccountant, ev, 1.0, 1e-5))
"""
CLI = [sys.executable, "-m", "amplify_jax.cli"]
FLAGS = ["--q", "0.01", "--steps", "10000", "--delta", "1e-5"]


def wall(cmd, env):
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    dt = time.perf_counter() - t
    if out.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} failed: {out.stderr[-500:]}")
    return dt, out.stdout.strip().splitlines()[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2, help="cold/warm pairs per front door (fresh cache each)")
    ap.add_argument("--output", default="benchmarks/results/bench_first_answer.json")
    args = ap.parse_args()

    doors = {
        "cli epsilon": CLI + ["epsilon", "--sigma", "1"] + FLAGS,
        "cli calibrate": CLI + ["calibrate", "--target-epsilon", "1"] + FLAGS,
        "python dpsgd_epsilon": [sys.executable, "-c", PY_EPS],
        "python dpsgd_calibrate_sigma": [sys.executable, "-c", PY_CAL],
    }
    anchors = {"epsilon": [sys.executable, "-c", DPA_EPS], "calibrate": [sys.executable, "-c", DPA_CAL]}
    base = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    res = {"machine": platform.platform(), "cpus": os.cpu_count(), "point": POINT, "doors": {}, "anchor": {}}
    for name, cmd in anchors.items():
        ts = [wall(cmd, base)[0] for _ in range(args.repeat)]
        res["anchor"][name] = {"seconds": ts, "best": min(ts)}
        print(f"dp_accounting {name:10s} fresh process: {min(ts):6.2f} s", flush=True)
    for name, cmd in doors.items():
        cold, warm = [], []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as d:
                env = {**base, "AMPLIFY_JAX_CACHE": d}
                cold.append(wall(cmd, env)[0])
                warm.append(wall(cmd, env)[0])
        ref = res["anchor"]["calibrate" if "calibrate" in name else "epsilon"]["best"]
        res["doors"][name] = {"cold": cold, "warm": warm, "cold_over_anchor": min(cold) / ref,
                              "warm_over_anchor": min(warm) / ref}
        print(f"{name:30s} cold {min(cold):6.2f} s ({min(cold) / ref:5.1f}x dp_accounting)   "
              f"warm cache {min(warm):6.2f} s ({min(warm) / ref:5.1f}x)", flush=True)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(res, indent=1))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
