"""What a user waits for XLA: compilations and compile seconds of each front door over a sequence of calls.

Issue 25 ("Compile once, then fly"): a front door must compile a small, fixed set of programs, whatever the
grid size, the sigma range, q, delta or target of later calls.  Each front door runs in a fresh Python process
with an empty compilation cache (``AMPLIFY_JAX_CACHE=off``) and the host path off (``AMPLIFY_JAX_HOST=off``,
so every answer is compiled), through the sequence of the issue:

    1, 3, 100, 1000, 1001, 5000 points (sigma log-spaced in [0.5, 5], q = 0.01, 10^4 steps, delta 1e-5),
    then 100 points with sigma in [5, 50], then 100 points at q = 0.003

(for the calibrations the points are targets eps in [0.3, 8]).  Compilations are JAX's own count
(``jax.monitoring``'s ``/jax/core/compile/backend_compile_duration`` events: every program, small ones
included); compile seconds are their sum.  Targets on a quiet 2-core CPU: at most 4 compilations and 8 s of
compilation per front door.  ``--registry``: every registered bound (``bounds.evaluate``, one process for all,
in the registry's order) at 1, 3, 100 and 1000 copies of its example, once more at the same 1000 points, and at
1000 new values (each real parameter times 1 + 0.05 t, each integer plus t mod 3, t = 0..1 along the grid,
where the domain allows: what a new value costs); compilations after a bound's first call are what a new grid
size or value costs.  ``--bounds PREFIX,...`` runs the bounds whose id starts with one of the prefixes.
Progress lines are printed as each bound finishes.

    python benchmarks/bench_compile.py [--doors eps,cal,pld,pldcal] [--registry [--bounds traffic,shuffle]]
        -> benchmarks/results/bench_compile.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

DOORS = ("eps", "cal", "pld", "pldcal")
SEQUENCE = [(1,), (3,), (100,), (1000,), (1001,), (5000,), (100, 5.0, 50.0), (100, 0.5, 5.0, 0.003)]

CHILD = r'''
import json, os, sys, time
import numpy as np
import jax
events = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, duration, **kw: events.append(duration) if event == "/jax/core/compile/backend_compile_duration" else None)
t_import = time.perf_counter()
import amplify_jax as aj
t_import = time.perf_counter() - t_import
door, sequence = sys.argv[1], json.loads(sys.argv[2])

def call(n, lo=0.5, hi=5.0, q=0.01):
    s, t = np.geomspace(lo, hi, n), np.geomspace(0.3, 8.0, n)
    p = dict(q=q, steps=10000, delta=1e-5)
    if door == "eps":
        return aj.dpsgd_epsilon(sigma=s, **p).epsilon
    if door == "cal":
        return aj.dpsgd_calibrate_sigma(target_epsilon=t, **p).sigma
    if door == "pld":
        return aj.pld.dpsgd_epsilon(sigma=s, **p).epsilon
    if door == "pldcal":
        return aj.pld.dpsgd_calibrate_sigma(target_epsilon=t, **p).sigma
    raise SystemExit(f"unknown door {door}")

rows = []
for args in sequence:
    n0, t0 = len(events), time.perf_counter()
    v = np.asarray(call(*args))
    rows.append(dict(call=args, compilations=len(events) - n0, compile_s=sum(events[n0:]),
                     wall_s=time.perf_counter() - t0, first_value=float(v.ravel()[0])))
print(json.dumps(dict(import_s=t_import, rows=rows, compilations=len(events), compile_s=sum(events))))
'''

REGISTRY_CHILD = r'''
import json, sys, time
import numpy as np
import jax
events = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, duration, **kw: events.append(duration) if event == "/jax/core/compile/backend_compile_duration" else None)
import amplify_jax as aj
from amplify_jax import bounds
from amplify_jax.bounds import Integer
prefixes = tuple(p for p in sys.argv[1].split(",") if p)

def grid(b, name, v, n, new):
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return v
    if not new:
        return np.full(n, v)
    t = np.linspace(0.0, 1.0, n)
    moved = v + (np.arange(n) % 3) if isinstance(b.param(name).domain, Integer) else v * (1.0 + 0.05 * t)
    try:
        return b.param(name).domain.check(name, moved)
    except ValueError:
        return np.full(n, v)

out = {}
for b in bounds.list():
    if prefixes and not b.id.startswith(prefixes):
        continue
    ex = dict(b.example)
    row = {"sizes": [], "compilations": [], "compile_s": [], "wall_s": []}
    try:
        for n, new in ((1, False), (3, False), (100, False), (1000, False), (1000, False), (1000, True)):
            kw = {k: grid(b, k, v, n, new) for k, v in ex.items()}
            n0, t0 = len(events), time.perf_counter()
            r = bounds.evaluate(b.id, **kw)
            np.asarray(r.value)
            row["sizes"].append(f"{n} new" if new else n)
            row["compilations"].append(len(events) - n0)
            row["compile_s"].append(round(sum(events[n0:]), 3))
            row["wall_s"].append(round(time.perf_counter() - t0, 3))
    except Exception as exc:  # a bound whose example does not broadcast this way: reported, not hidden
        row["error"] = f"{type(exc).__name__}: {exc}"[:300]
    out[b.id] = row
    print(b.id, row, flush=True)
print("JSON", json.dumps(out))
'''


def run_door(door: str) -> dict:
    env = dict(os.environ, AMPLIFY_JAX_CACHE="off", AMPLIFY_JAX_HOST="off")
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", CHILD, door, json.dumps(SEQUENCE)], capture_output=True, text=True,
                       env=env, timeout=3600)
    if p.returncode != 0:
        raise RuntimeError(f"{door} failed: {p.stderr[-2000:]}")
    res = json.loads(p.stdout.strip().splitlines()[-1])
    res["process_s"] = time.perf_counter() - t
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--doors", default=",".join(DOORS))
    ap.add_argument("--registry", action="store_true")
    ap.add_argument("--bounds", default="", help="with --registry: only the bounds whose id starts with one of "
                    "these comma-separated prefixes")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "bench_compile.json"))
    args = ap.parse_args()
    import jax

    res = {"machine": platform.platform(), "cpus": os.cpu_count(), "jax": jax.__version__,
           "load_before": os.getloadavg(), "sequence": SEQUENCE, "doors": {}}
    for door in [d for d in args.doors.split(",") if d]:
        r = run_door(door)
        res["doors"][door] = r
        print(f"{door}: {r['compilations']} compilations, {r['compile_s']:.1f} s compiling "
              f"(import {r['import_s']:.1f} s); per call: "
              + ", ".join(f"{row['call']}: {row['compilations']}/{row['compile_s']:.1f}s/{row['wall_s']:.2f}s"
                          for row in r["rows"]), flush=True)
    if args.registry:
        env = dict(os.environ, AMPLIFY_JAX_CACHE="off", AMPLIFY_JAX_HOST="off")
        p = subprocess.Popen([sys.executable, "-c", REGISTRY_CHILD, args.bounds], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env=env)  # one pipe: no deadlock on warnings
        lines = []
        for ln in p.stdout:  # progress as each bound finishes
            lines.append(ln)
            if not ln.startswith("JSON "):
                print(ln, end="", flush=True)
        p.wait(timeout=3600)
        err = "".join(lines[-40:])
        line = [ln for ln in lines if ln.startswith("JSON ")]
        if p.returncode != 0 or not line:
            raise RuntimeError(f"registry run failed: {err[-2000:]}")
        res["registry"] = json.loads(line[0][5:])
        res["registry_bounds"] = args.bounds or "all"
        worst = max(res["registry"].items(), key=lambda kv: sum(kv[1].get("compilations", [0])))
        print(f"registry: {len(res['registry'])} bounds; most compilations: {worst[0]} {worst[1].get('compilations')}")
    res["load_after"] = os.getloadavg()
    out = Path(args.out)
    if out.exists():  # a partial run (some doors, some bounds) updates the rows it ran and keeps the others
        old = json.loads(out.read_text())
        res["doors"] = {**old.get("doors", {}), **res["doors"]}
        if "registry" in old:
            res["registry"] = {**old["registry"], **res.get("registry", {})}
        for k, v in old.items():  # notes, the registry's before column
            res.setdefault(k, v)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    print(f"load {res['load_before'][0]:.1f} -> {res['load_after'][0]:.1f}; wrote {args.out}")


if __name__ == "__main__":
    main()
