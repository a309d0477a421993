"""Load test of the explorer's server on loopback: 200 requests from 20 concurrent clients, a cheap bound.

The server runs as users start it (``amplify-jax explore --port 0 --no-browser``, its own process); after a
warm-up (the bound's first curve and solve compile their kernels, not counted), 20 client threads send 10
requests each, as fast as they can, over fresh connections: 70% curves of ``shuffle.fmt-closed-form`` (200
points along eps0, n varying per request as a moving slider does), 10% solves for n, 10% SVG drawings by
matplotlib (``/api/render``, the page's drawing path) and 10% catalog reads.  Counted: errors (anything but
HTTP 200 with a JSON answer; 503 "busy" counts as an error and is also reported apart), and the response time
of each request (client side, connection included): p50, p95, max.

    python benchmarks/bench_explore_load.py [--clients 20] [--requests 200]
        ->  benchmarks/results/explore_load.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BOUND = "shuffle.fmt-closed-form"
TIMEOUT_S = 120  # per request: a request still waiting then is an error
TOKEN = ""  # the server's per-launch token, read from the URL it prints


def _start_server():
    proc = subprocess.Popen([sys.executable, "-m", "amplify_jax.cli", "explore", "--port", "0", "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    line = proc.stdout.readline()
    m = re.search(r"(http://127\.0\.0\.1:\d+/)\?token=([\w-]+)", line)  # the page's URL with its token
    if not m:
        proc.kill()
        raise SystemExit(f"the server did not start: {line!r} {proc.stderr.read()[:500]!r}")
    global TOKEN
    TOKEN = m.group(2)
    return proc, m.group(1)


def _request(base: str, kind: str, rng: random.Random):
    if kind == "catalog":
        req = urllib.request.Request(base + "api/catalog", headers={"X-Amplify-Token": TOKEN})
    else:
        if kind == "curve":
            body = {"bound": BOUND, "x": "eps0", "lo": 0.1, "hi": 5.0, "points": 200,
                    "params": {"n": rng.choice([1e3, 3e3, 1e4, 3e4, 1e5, 3e5, 1e6]), "delta": 1e-6}}
        elif kind == "solve":
            body = {"bound": BOUND, "solve_for": "n", "target_epsilon": rng.choice([0.5, 1.0, 2.0]),
                    "params": {"eps0": 3.0, "delta": 1e-6}}
        else:
            xs = list(np.geomspace(0.1, 5.0, 200))
            body = {"series": [{"label": "a", "x": xs, "y": [v / 10 for v in xs]},
                               {"label": "b", "x": xs, "y": [v / 20 for v in xs], "style": "dashed"}],
                    "logx": True, "logy": True, "xlabel": "eps0", "ylabel": "ε"}
        path = {"curve": "api/curve", "solve": "api/solve", "render": "api/render"}[kind]
        req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "X-Amplify-Token": TOKEN})
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
            status, payload = resp.status, resp.read()
        json.loads(payload)
        error = None if status == 200 else f"HTTP {status}"
    except urllib.error.HTTPError as exc:
        status, error = exc.code, f"HTTP {exc.code}: {exc.read()[:120]!r}"
    except (OSError, ValueError) as exc:
        status, error = None, f"{type(exc).__name__}: {exc}"
    return kind, time.perf_counter() - t0, status, error


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--output", default=str(ROOT / "benchmarks" / "results" / "explore_load.json"))
    args = ap.parse_args()

    proc, base = _start_server()
    try:
        rng = random.Random(0)
        t0 = time.perf_counter()
        warm = [_request(base, k, rng) for k in ("catalog", "curve", "solve", "render")]
        warmup_s = time.perf_counter() - t0
        bad = [w for w in warm if w[3]]
        if bad:
            raise SystemExit(f"warm-up failed: {bad}")
        kinds = (["curve"] * 7 + ["solve", "render", "catalog"]) * (args.requests // 10 + 1)
        rng.shuffle(kinds)
        kinds = kinds[:args.requests]
        per = [kinds[i::args.clients] for i in range(args.clients)]
        results, lock = [], threading.Lock()

        def client(i):
            r = random.Random(i + 1)
            for k in per[i]:
                out = _request(base, k, r)
                with lock:
                    results.append(out)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        # the server keeps serving after the load
        after = _request(base, "curve", rng)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()

    ms = np.array([r[1] for r in results]) * 1e3
    errors = [r for r in results if r[3]]
    by_kind = {}
    for k in ("curve", "solve", "render", "catalog"):
        t = np.array([r[1] for r in results if r[0] == k]) * 1e3
        if t.size:
            by_kind[k] = {"count": int(t.size), "p50_ms": round(float(np.percentile(t, 50)), 1),
                          "p95_ms": round(float(np.percentile(t, 95)), 1), "max_ms": round(float(t.max()), 1)}
    out = {
        "requests": len(results), "clients": args.clients, "bound": BOUND, "errors": len(errors),
        "busy_503": sum(1 for r in results if r[2] == 503), "error_samples": [r[3] for r in errors[:5]],
        "p50_ms": round(float(np.percentile(ms, 50)), 1), "p95_ms": round(float(np.percentile(ms, 95)), 1),
        "max_ms": round(float(ms.max()), 1), "wall_s": round(wall, 2),
        "throughput_per_s": round(len(results) / wall, 1), "by_kind": by_kind,
        "warmup_s": round(warmup_s, 2), "served_after_load": after[3] is None,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform(),
                    "load_average": [round(v, 2) for v in os.getloadavg()]},
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(out, indent=1) + "\n")
    print(f"{out['requests']} requests from {args.clients} clients in {wall:.2f} s: errors {out['errors']} "
          f"(503 busy: {out['busy_503']}); response time p50 {out['p50_ms']} ms, p95 {out['p95_ms']} ms, "
          f"max {out['max_ms']} ms; served after the load: {out['served_after_load']}")
    for k, v in by_kind.items():
        print(f"  {k:8s} {v['count']:4d}  p50 {v['p50_ms']:8.1f} ms  p95 {v['p95_ms']:8.1f} ms  max {v['max_ms']:8.1f} ms")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
