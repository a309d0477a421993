"""Crash safety at scale: a 1e6-point bound sweep SIGKILLed at 20 random moments resumes to the uninterrupted store.

Issue 15, item 6.  The sweep: the registered ``gaussian`` bound (eps of the Gaussian mechanism composed over
steps, at delta, about 100 Rényi orders per point) over sigma x steps x delta = 100 x 100 x 100 (steps 1, 101, ..., 9901) = 1e6 points,
chunk_size 10 000 (100 chunks), run as ``amplify-jax sweep GRID --output OUT --quiet`` in fresh processes:

1. an uninterrupted run (the reference), timed;
2. the same sweep into another folder, killed with SIGKILL 20 times: each run is started, waits until it has
   written at least one new chunk (so that every kill lands mid-sweep, not during start-up), then is killed at a
   moment drawn uniformly within the next two chunks' time (``--seed``);
3. one last run that resumes it to the end.

Then it counts: grid points lost (status -1 or NaN answer in the resumed store: goal 0), the resumed store
against the reference (``xarray.testing.assert_identical``: bit for bit), points duplicated (the CSV export's
rows against its distinct (sigma, steps, delta) tuples: goal 0), leftover temporary files (goal 0), and the
chunks computed twice (killed after their region write, before their done-marker: the cost of a kill, not an
error).  Prints the table and saves benchmarks/results/bench_sweep_kill_resume.json.

    python benchmarks/bench_sweep_kill_resume.py                  # 1e6 points, 20 kills
    python benchmarks/bench_sweep_kill_resume.py --side 30 --kills 5   # quick: 27 000 points
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results" / "bench_sweep_kill_resume.json"


def toml(side: int, chunk: int) -> str:
    return (f'[sweep]\nbound = "gaussian"\nchunk_size = {chunk}\n\n[grid]\n'
            f'sigma = {{ start = 0.5, stop = 20.0, num = {side}, scale = "log" }}\n'
            f'steps = {{ start = 1, stop = {1 + 100 * (side - 1)}, num = {side} }}\n'
            f'delta = {{ start = 1e-12, stop = 1e-3, num = {side}, scale = "log" }}\n')


def markers(out: Path) -> set:
    done = out / "done"
    return {m for m in os.listdir(done) if m.startswith("chunk-")} if done.exists() else set()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--side", type=int, default=100, help="points per axis (side**3 points; default 100: 1e6)")
    ap.add_argument("--chunk", type=int, default=10_000, help="grid points per chunk (default 10 000)")
    ap.add_argument("--kills", type=int, default=20, help="SIGKILLs before the last run (default 20)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=str(RESULTS))
    args = ap.parse_args(argv)

    import xarray as xr

    work = Path(tempfile.mkdtemp(prefix="kill-resume-"))
    try:
        grid = work / "grid.toml"
        grid.write_text(toml(args.side, args.chunk))
        env = {**os.environ, "AMPLIFY_JAX_CACHE": str(work / "xla-cache")}
        points = args.side ** 3
        n_chunks = -(-points // args.chunk)

        def command(out):
            return [sys.executable, "-m", "amplify_jax.cli", "sweep", str(grid), "--output", str(out), "--quiet"]

        ref, out = work / "reference", work / "killed"
        t0 = time.perf_counter()
        subprocess.run(command(ref), env=env, check=True, capture_output=True)
        ref_seconds = time.perf_counter() - t0
        chunk_seconds = ref_seconds / n_chunks  # an over-estimate (start-up included): kills spread wider

        rng = random.Random(args.seed)
        kills, runs, starts = [], 0, []
        t0 = time.perf_counter()
        while len(kills) < args.kills:
            before = markers(out)
            proc = subprocess.Popen(command(out), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            runs += 1
            while proc.poll() is None and len(markers(out) - before) < 1:
                time.sleep(0.005)
            if proc.poll() is not None:  # finished before a kill could land: the sweep is complete
                break
            delay = rng.uniform(0.0, 2.0 * chunk_seconds)
            time.sleep(delay)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                after = markers(out)
                kills.append({"after_s": delay, "chunks_done": len(after), "new_chunks": len(after - before)})
            if len(markers(out)) == n_chunks:
                break
        res = subprocess.run(command(out), env=env, capture_output=True, text=True)
        killed_seconds = time.perf_counter() - t0
        if res.returncode != 0:
            raise SystemExit(f"the resuming run failed: {res.stderr.strip().splitlines()[-1]}")

        got = xr.open_zarr(out / "results.zarr").load()
        want = xr.open_zarr(ref / "results.zarr").load()
        lost = int(np.sum((got.status.values < 0) | np.isnan(got.epsilon.values)))
        xr.testing.assert_identical(got, want)  # raises if any value, coordinate or attribute differs
        from amplify_jax.sweep import export

        export(out, ["csv"])
        table = np.loadtxt(out / "results.csv", delimiter=",", skiprows=1, usecols=(0, 1, 2))
        rows, distinct = len(table), len(np.unique(table, axis=0))
        leftovers = [str(p.relative_to(out)) for p in out.rglob("*.tmp")]
        record = {
            "bound": "gaussian", "points": points, "chunk_size": args.chunk, "chunks": n_chunks,
            "kills": len(kills), "runs": runs + 1, "points_lost": lost, "identical_to_uninterrupted": True,
            "csv_rows": rows, "distinct_points": distinct, "points_duplicated": rows - distinct,
            "leftover_tmp_files": len(leftovers), "uninterrupted_seconds": ref_seconds,
            "killed_and_resumed_seconds": killed_seconds, "kill_moments": kills, "seed": args.seed,
            "machine": platform.platform(), "cpus": os.cpu_count(),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{points} points, {n_chunks} chunks of {args.chunk}: {len(kills)} SIGKILLs at random moments, "
          f"{runs + 1} runs")
    print(f"points lost {lost}, duplicated {rows - distinct} (CSV rows {rows}, distinct {distinct}), "
          f"identical to the uninterrupted store: yes, leftover temporary files {len(leftovers)}")
    print(f"uninterrupted {ref_seconds:.1f} s; killed {len(kills)} times and resumed {killed_seconds:.1f} s")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(record, indent=1))
    return 0 if lost == 0 and rows == distinct and not leftovers else 1


if __name__ == "__main__":
    sys.exit(main())
