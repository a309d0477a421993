"""Time to first answer: a fresh process's first eps and calibration, against dp_accounting's RDP accountant in
a fresh process, same run; and the first answer of every registered bound.

Front doors timed (each in a new Python process, wall time of the whole process, imports included):
- command line: ``amplify-jax epsilon --sigma 1 --q 0.01 --steps 10000 --delta 1e-5`` and
  ``amplify-jax calibrate --target-epsilon 1 --q 0.01 --steps 10000 --delta 1e-5``;
- Python: ``aj.dpsgd_epsilon(...)`` and ``aj.dpsgd_calibrate_sigma(...)`` at the same point;
- anchor: dp_accounting's ``RdpAccountant`` (eps at the point) and its ``calibrate_dp_mechanism`` (sigma for
  eps = 1), each in a fresh process.

Each door runs three ways: "host" (the default, ``AMPLIFY_JAX_HOST=auto``: a process's first small questions
are answered by the same kernels run by NumPy, ``amplify_jax/_core/host.py``) with an empty compilation cache;
"compiled cold" (``AMPLIFY_JAX_HOST=off``, ``AMPLIFY_JAX_CACHE`` a new empty directory: the process compiles);
"compiled warm" (off, the cache the cold run filled).  Ratios are ours / dp_accounting's (below 1: we answer
first), the anchor timed in the same repeat as ours (anchor, host, cold, warm; again), the load printed per door.  The floor here is the anchor's own time: the goal of issue 15 is a ratio <= 1.

``--bounds``: every registered bound's example (``bounds.evaluate(id, **example)``), each in a fresh process
with an empty cache, default settings: the first call of every family (goal: under 3 s on a 2-core CPU).

    python benchmarks/bench_first_answer.py [--repeat 2] [--bounds]  ->  benchmarks/results/bench_first_answer.json
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
    ap.add_argument("--bounds", action="store_true", help="also every registered bound's first answer")
    args = ap.parse_args()

    doors = {
        "cli epsilon": CLI + ["epsilon", "--sigma", "1"] + FLAGS,
        "cli calibrate": CLI + ["calibrate", "--target-epsilon", "1"] + FLAGS,
        "python dpsgd_epsilon": [sys.executable, "-c", PY_EPS],
        "python dpsgd_calibrate_sigma": [sys.executable, "-c", PY_CAL],
    }
    anchors = {"epsilon": [sys.executable, "-c", DPA_EPS], "calibrate": [sys.executable, "-c", DPA_CAL]}
    base = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "AMPLIFY_JAX_HOST")}
    res = {"machine": platform.platform(), "cpus": os.cpu_count(), "point": POINT, "doors": {}, "anchor": {},
           "load_before": os.getloadavg()}
    modes = {"host": "auto", "compiled cold": "off", "compiled warm": "off"}
    # interleaved: each repeat runs the anchor's fresh process, then each of ours (A, B, A, B), so that a change of
    # load over the run hits both sides alike
    for name, cmd in doors.items():
        anchor = "calibrate" if "calibrate" in name else "epsilon"
        times, ref_t = {m: [] for m in modes}, []
        for _ in range(args.repeat):
            ref_t.append(wall(anchors[anchor], base)[0])
            with tempfile.TemporaryDirectory() as d:
                for m, host in modes.items():
                    env = {**base, "AMPLIFY_JAX_CACHE": d if m != "host" else os.path.join(d, "host"),
                           "AMPLIFY_JAX_HOST": host}
                    times[m].append(wall(cmd, env)[0])
        ref = min(ref_t)
        res["anchor"].setdefault(anchor, {"seconds": []})["seconds"] += ref_t
        res["anchor"][anchor]["best"] = min(res["anchor"][anchor]["seconds"])
        res["doors"][name] = {"anchor_seconds": ref_t,
                              **{m: {"seconds": t, "over_anchor": min(t) / ref} for m, t in times.items()}}
        print(f"{name:30s} dp_accounting {ref:5.2f} s   "
              + "   ".join(f"{m} {min(t):6.2f} s ({min(t) / ref:4.2f}x)" for m, t in times.items())
              + f"   load {os.getloadavg()[0]:.1f}", flush=True)
    res["load_after"] = os.getloadavg()
    if args.bounds:
        res["bounds"] = {}
        import amplify_jax.bounds as B

        for b in B.list():
            code = (f"import amplify_jax.bounds as B; b = B.get({b.id!r}); "
                    "r = B.evaluate(b.id, **b.example); print(float(r.value.ravel()[0]))")
            with tempfile.TemporaryDirectory() as d:
                dt, out = wall([sys.executable, "-c", code], {**base, "AMPLIFY_JAX_CACHE": d})
            res["bounds"][b.id] = dt
            print(f"  first answer {b.id:45s} {dt:6.2f} s", flush=True)
        worst = max(res["bounds"].items(), key=lambda kv: kv[1])
        print(f"slowest first answer of a registered bound: {worst[0]} {worst[1]:.2f} s")
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(res, indent=1))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
