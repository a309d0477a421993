"""Self check-in benchmark: the exact Thm 1 / Eq. 10 sum (distributed check-in, Gaussian mechanism).

1. The exact sum at n = 1e7, gamma = 1e-3, sigma = 1 with the 32 integer orders 2..33 (target: < 50 ms per
   configuration, warm): one configuration per call, and a batch of 64 configurations (sigma grid) per call.
2. Time against n from 1e3 to 1e9 (gamma = 1e-3, so n gamma from 1 to 1e6): the windowed sum, whose window
   grows like sqrt(n gamma) (Bernstein, tail tolerance 1e-12), against the naive O(n) sum over every k (same
   per-k bound, same pmf, chunks of 4096 k in a compiled loop), measured in the same run where it takes
   less than ~30 s.  The two results are compared (the windowed one is an upper bound, equal to rounding).

    python benchmarks/bench_checkin.py

Writes benchmarks/results/bench_checkin.json and figures/checkin_bench_time_vs_n.png.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import jax
import jax.numpy as jnp

from amplify_jax import checkin as C
from amplify_jax.checkin import _distributed
from amplify_jax._core.numerics import log_binom_pmf, logsumexp
from amplify_jax.internal import float64_jit, x64_scope
from amplify_jax.plotting import figure, save

ROOT = Path(__file__).resolve().parents[1]
ORDERS = tuple(range(2, 34))
GAMMA, SIGMA = 1e-3, 1.0
CHUNK = 4096


def timeit(fn, repeat=7):
    fn()  # warm (compile)
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)), float(np.min(ts))


@float64_jit(static_argnames=("alpha_int",))
def _naive_kernel(n, gamma, sigma, alpha_int):
    amax = max(alpha_int)
    n_chunks = jnp.ceil(n / CHUNK).astype(jnp.int32)

    def body(i, acc):
        k = (i * CHUNK + 1 + jnp.arange(CHUNK)).astype(jnp.float64)
        valid = k <= n
        ks = jnp.where(valid, k, 1.0)
        logw = jnp.where(valid, log_binom_pmf(ks, n, gamma), -jnp.inf)
        lex = _distributed._gauss_checkin_log_excess(ks, ks, n, sigma, alpha_int=alpha_int, amax=amax)
        terms = jnp.where(valid[:, None], logw[:, None] + lex, -jnp.inf)
        return jnp.logaddexp(acc, logsumexp(terms, axis=0))

    acc = jax.lax.fori_loop(0, n_chunks, body, jnp.full(len(alpha_int), -jnp.inf))
    return jnp.logaddexp(0.0, acc) / (jnp.asarray(alpha_int, dtype=jnp.float64) - 1.0)


def naive(n):
    with x64_scope():
        return np.asarray(_naive_kernel(jnp.asarray(float(n)), jnp.asarray(GAMMA), jnp.asarray(SIGMA), ORDERS))


def windowed(n, sigma=SIGMA):
    return np.asarray(C.distributed_gaussian_rdp(ORDERS, n=n, gamma=GAMMA, sigma=sigma))


def main():
    info = dict(machine=platform.platform(), processor=platform.processor(), cpus=os.cpu_count(),
                jax=jax.__version__, backend=jax.default_backend(), load_average=os.getloadavg())
    print(info)
    # 1. n = 1e7, 32 orders
    one, one_min = timeit(lambda: windowed(1e7))
    sig = np.linspace(0.5, 5.0, 64)
    batch, batch_min = timeit(lambda: windowed(1e7, sig), repeat=3)
    w7 = C.window_size(1e7, GAMMA)
    print(f"n = 1e7, 32 orders: {one * 1e3:.1f} ms per configuration (min {one_min * 1e3:.1f}); batch of 64: "
          f"{batch * 1e3:.0f} ms = {batch / 64 * 1e3:.1f} ms per configuration; window {w7} + 64 head + blocks")

    # 2. time against n
    ns = [10**e for e in range(3, 10)]
    rows = []
    naive_ok = True
    for n in ns:
        tw, _ = timeit(lambda: windowed(n), repeat=5)
        row = dict(n=n, window=C.window_size(n, GAMMA), windowed_s=tw)
        if naive_ok:
            t = time.perf_counter()
            ref = naive(n)  # includes one compile for the first n
            t_first = time.perf_counter() - t
            if t_first < 30:
                tn, _ = timeit(lambda: naive(n), repeat=1 if t_first > 3 else 3)
                row.update(naive_s=tn, ratio=tn / tw,
                           max_rel_diff=float(np.max(np.abs(windowed(n) / ref - 1))),
                           windowed_ge_naive=bool(np.all(windowed(n) >= ref * (1 - 1e-13))))
                naive_ok = tn < 10
            else:
                naive_ok = False
        rows.append(row)
        print(row)

    out = dict(info=info, orders=list(ORDERS), gamma=GAMMA, sigma=SIGMA, tail_tol=C.DEFAULT_TAIL_TOL,
               n1e7_single_config_ms=one * 1e3, n1e7_single_config_min_ms=one_min * 1e3,
               n1e7_batch64_per_config_ms=batch / 64 * 1e3, n1e7_window=w7, time_vs_n=rows)
    res = ROOT / "benchmarks" / "results" / "bench_checkin.json"
    res.parent.mkdir(parents=True, exist_ok=True)
    res.write_text(json.dumps(out, indent=2))

    fig, ax = figure(figsize=(5.8, 4.3))
    nn = np.array([r["n"] for r in rows], dtype=float)
    ax.loglog(nn, [r["windowed_s"] for r in rows], "b-o", label="windowed exact sum (this library)")
    nv = [(r["n"], r["naive_s"]) for r in rows if "naive_s" in r]
    if nv:
        ax.loglog(*zip(*nv), "r-s", label="naive sum over every k")
    ref_n = nn[-1]
    ax.loglog(nn, rows[-1]["windowed_s"] * np.sqrt(nn / ref_n), "b:", lw=1, label="~ sqrt(n)")
    if nv:
        ax.loglog(nn, nv[-1][1] * nn / nv[-1][0], "r:", lw=1, label="~ n")
    ax.set_xlabel("n (gamma = 1e-3)")
    ax.set_ylabel("seconds per call (warm)")
    ax.set_title("distributed check-in RDP, 32 orders", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, ROOT / "figures" / "checkin_bench_time_vs_n.png")
    print(f"wrote {res}")


if __name__ == "__main__":
    main()
