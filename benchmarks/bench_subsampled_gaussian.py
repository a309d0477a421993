"""Benchmark of the fractional-order Poisson-subsampled Gaussian kernel (amplify_jax.accounting._subsampled_gaussian).

Workload: log(A_alpha - 1) for 1000 sigma in [0.5, 5] x 100 fractional orders in (1, 11), q = 0.01
(1e5 points), warm (first-call compile time reported separately), with the static panel count chosen by
``choose_n_panels``.  Split: the per-point plan (maxima, windows; bisections) and the quadrature nodes.
Anchor, measured in the same run: dp-accounting's ``_compute_log_a_frac`` (its fractional-order series, a
loose over-estimate) in a Python loop over a subset, scaled to the full grid.  Physical floor: 5 transcendental
evaluations per quadrature node; a bare vectorised exp over that many float64 values is timed and
measured / floor reported.

    python benchmarks/bench_subsampled_gaussian.py [--anchor-points 2000]

Writes benchmarks/results/bench_subsampled_gaussian.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from amplify_jax.accounting import _subsampled_gaussian as sg
from amplify_jax.internal import float64_jit

Q = 0.01
SIGMAS = np.linspace(0.5, 5.0, 1000)
ORDERS = np.linspace(1.05, 10.95, 100)  # all fractional
TRANSCENDENTALS_PER_NODE = 5  # expm1(L), log1p(u), expm1(-l), expm1(x), exp(exponent)


def _best(fn, repeat=5):
    wall, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        jax.block_until_ready(fn())
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return min(wall), min(cpu)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--anchor-points", type=int, default=2000)
    args = ap.parse_args()

    n_panels = sg.choose_n_panels(SIGMAS, ORDERS, q=Q)
    kernel = float64_jit(sg.log_a_minus_one_fractional, static_argnames=("n_panels",))
    q, s, a = np.float64(Q), SIGMAS[:, None], ORDERS[None, :]

    t = time.perf_counter()
    out = np.asarray(kernel(q, s, a, n_panels=n_panels))
    first = time.perf_counter() - t
    assert np.all(np.isfinite(out))
    warm_wall, warm_cpu = _best(lambda: kernel(q, s, a, n_panels=n_panels))

    def plan_only(q_, s_, a_):
        q_, s_, a_ = jnp.broadcast_arrays(q_, s_, a_)
        _, lo, hi, ref = sg._plan(q_, s_, a_)
        return lo.sum() + hi.sum() + ref.sum()

    plan = float64_jit(plan_only)
    plan(q, s, a)
    plan_wall, plan_cpu = _best(lambda: plan(q, s, a))

    n_nodes = SIGMAS.size * ORDERS.size * n_panels * sg._GL_NODES
    floor_x = jnp.linspace(-5.0, 5.0, n_nodes * TRANSCENDENTALS_PER_NODE)
    bare_exp = float64_jit(lambda x: jnp.sum(jnp.exp(x)))
    bare_exp(floor_x)
    floor_wall, floor_cpu = _best(lambda: bare_exp(floor_x))

    # anchor: dp-accounting's fractional-order log A (a Python loop), on a subset
    from dp_accounting.rdp import rdp_privacy_accountant as dpa

    rng = np.random.default_rng(0)
    pts = [(float(rng.choice(SIGMAS)), float(rng.choice(ORDERS))) for _ in range(args.anchor_points)]
    t = time.perf_counter()
    for sig, alpha in pts:
        dpa._compute_log_a_frac(Q, sig, alpha)
    anchor_full = (time.perf_counter() - t) * (SIGMAS.size * ORDERS.size) / len(pts)

    res = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "loadavg": os.getloadavg(),
                    "jax": jax.__version__},
        "grid": {"q": Q, "n_sigma": SIGMAS.size, "n_orders": ORDERS.size, "n_panels": n_panels,
                 "nodes_per_point": n_panels * sg._GL_NODES},
        "first_call_s": first,
        "warm_wall_s": warm_wall,
        "warm_cpu_s": warm_cpu,
        "plan_wall_s": plan_wall,
        "plan_cpu_s": plan_cpu,
        "floor_exp_wall_s": floor_wall,
        "measured_over_floor": warm_wall / floor_wall,
        "dp_accounting_frac_loop_s_extrapolated": anchor_full,
        "speedup_vs_dp_accounting": anchor_full / warm_wall,
    }
    for k, v in res.items():
        print(f"{k}: {v}")
    out_dir = Path(__file__).resolve().parent / "results"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "bench_subsampled_gaussian.json").write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
