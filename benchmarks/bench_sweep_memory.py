"""Peak memory of bound sweeps into Zarr stays flat in the grid's size.

Each sweep runs in a fresh subprocess (``python benchmarks/bench_sweep_memory.py --child N OUT``): a sweep of the
registered ``gaussian`` bound (eps of the Gaussian mechanism composed over steps, at delta: about 100 Rényi
orders per point) over a 3-D grid sigma x steps x delta of N points, chunk_size 65536, into OUT/results.zarr.
The parent reads the child's peak resident set size (``os.wait4``'s ru_maxrss), its wall time and the store's
size on disk, prints one line per size and saves benchmarks/results/bench_sweep_memory.json.

    python benchmarks/bench_sweep_memory.py                 # 1e4, 1e5, 1e6 points
    python benchmarks/bench_sweep_memory.py --sizes 1e4 1e5 1e6 1e7
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "bench_sweep_memory.json"
CHUNK = 65536


def grid_shape(points: int) -> tuple:
    """(sigma, steps, delta) axis lengths with about ``points`` points: delta 10 values, the rest split evenly."""
    rest = max(1, points // 10)
    a = max(1, int(round(rest ** 0.5)))
    return a, max(1, rest // a), 10


def spec(points: int, out: str) -> dict:
    ns, nt, nd = grid_shape(points)
    return {"sweep": {"bound": "gaussian", "chunk_size": CHUNK},
            "grid": {"sigma": {"start": 0.5, "stop": 20.0, "num": ns, "scale": "log"},
                     "steps": {"start": 1, "stop": 10_000, "num": nt} if nt > 1 else 1,
                     "delta": {"start": 1e-10, "stop": 1e-4, "num": nd, "scale": "log"}}}


def child(points: int, out: str) -> None:
    from amplify_jax import sweep as S

    s = spec(points, out)
    # integer steps: round the linear axis through the spec's own parser (the domain refuses non-integers)
    steps = s["grid"]["steps"]
    if isinstance(steps, dict):
        import numpy as np

        s["grid"]["steps"] = sorted({float(v) for v in np.round(S.parse_axis("steps", steps))})
    sp = S.load_spec(s, output=out)
    t = time.perf_counter()
    S.run_sweep(sp, progress=False)
    print(json.dumps({"points": sp.size, "shape": sp.shape, "chunks": sp.n_chunks, "seconds": time.perf_counter() - t}))


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="*", type=float, default=[1e4, 1e5, 1e6])
    ap.add_argument("--child", nargs=2, metavar=("POINTS", "OUT"))
    args = ap.parse_args()
    if args.child:
        child(int(float(args.child[0])), args.child[1])
        return
    rows = []
    print(f"{'points':>10} {'chunks':>6} {'wall s':>8} {'sweep s':>8} {'peak RSS MiB':>12} {'store MiB':>9}")
    for n in args.sizes:
        tmp = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
        try:
            t = time.perf_counter()
            proc = subprocess.Popen([sys.executable, __file__, "--child", str(int(n)), str(tmp / "out")],
                                    stdout=subprocess.PIPE, text=True)
            stdout = proc.stdout.read()
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t
            if status != 0:
                raise SystemExit(f"child for {n:g} points failed (status {status})")
            info = json.loads(stdout.strip().splitlines()[-1])
            row = {**info, "wall_seconds": wall, "peak_rss_mib": usage.ru_maxrss / 1024,
                   "store_mib": du(tmp / "out" / "results.zarr") / 2**20}
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        rows.append(row)
        print(f"{row['points']:>10} {row['chunks']:>6} {wall:>8.1f} {row['seconds']:>8.1f} "
              f"{row['peak_rss_mib']:>12.0f} {row['store_mib']:>9.1f}", flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"bound": "gaussian", "chunk_size": CHUNK, "machine": platform.platform(),
                                   "cpus": os.cpu_count(), "rows": rows}, indent=1) + "\n")
    print(f"saved {RESULTS}")


if __name__ == "__main__":
    main()
