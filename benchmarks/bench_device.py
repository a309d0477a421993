"""The kernels on whatever device JAX has: first call, warm call, compilations and values, JSON out.

Issue 25's device table, runnable on a CPU and on any accelerator JAX sees (one GPU: well under 5 minutes):

- ``dpsgd_eps``: ``aj.dpsgd_epsilon`` (RDP, continuous order search) at q = 0.01, 10^4 steps, delta 1e-5, for
  1e4 / 1e5 / 1e6 sigmas in [0.5, 5] on an accelerator (1e3 / 1e4 on a CPU);
- ``rdp_curve``: ``aj.rdp.poisson_subsampled_gaussian_rdp`` at 32 even orders 2..64, q = 0.01, 1e5 and 1e6 sigmas
  (3.2M and 32M values; 1e4 on a CPU);
- ``pld_eps``: ``aj.pld.dpsgd_epsilon`` for 1000 sigmas (100 on a CPU);
- ``rdp_calibration``: ``aj.dpsgd_calibrate_sigma`` for 1000 targets eps in [0.3, 8] (200 on a CPU);
- ``secrdp_curious``: SecRDP's curious-users adversary on a random 4-regular graph of 2000 users (one noise pair);
- ``blanket_mc``: the privacy blanket's Monte Carlo (1e5 samples) on a 4 x 4 grid;
- ``registry``: every registered bound at its example, broadcast to a grid that fills the device (4096 points on
  an accelerator, 256 on a CPU).

Each row: first-call seconds (compilation included), warm seconds (least of 3), compilations and compile seconds
of the first call (``jax.monitoring``), the number of points and a summary of the values.  ``--compare-cpu``: on
an accelerator, the same rows again on the host's CPU in the same process (the ratio is the speed-up).  The
persistent compilation cache is off for the run (``AMPLIFY_JAX_CACHE=off`` is set before amplify_jax is imported)
so first calls are what a new machine meets.

    python benchmarks/bench_device.py [--quick] [--compare-cpu] [--only dpsgd_eps,rdp_curve] [--skip registry]
        [--sizes auto|accelerator|cpu]
        -> benchmarks/results/bench_device_<platform>.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("AMPLIFY_JAX_CACHE", "off")
os.environ.setdefault("AMPLIFY_JAX_HOST", "off")

import jax  # noqa: E402
import numpy as np  # noqa: E402

_EVENTS: list[float] = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, duration, **kw: _EVENTS.append(duration)
    if event == "/jax/core/compile/backend_compile_duration" else None)

import amplify_jax as aj  # noqa: E402

P = dict(q=0.01, steps=10000, delta=1e-5)


def _block(x):
    for leaf in jax.tree_util.tree_leaves(x):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x


def _summary(v):
    v = np.asarray(v, dtype=np.float64).ravel()
    fin = v[np.isfinite(v)]
    return {"n": int(v.size), "finite": int(fin.size), "min": float(fin.min()) if fin.size else None,
            "median": float(np.median(fin)) if fin.size else None, "max": float(fin.max()) if fin.size else None,
            "first": [float(x) for x in v[:3]]}


def measure(name, fn, points, value_of, repeat=3):
    """First call (with its compilations), then the least of ``repeat`` warm calls (each on new values)."""
    n0, t0 = len(_EVENTS), time.perf_counter()
    out = _block(fn(0))
    first = time.perf_counter() - t0
    comp, comp_s = len(_EVENTS) - n0, sum(_EVENTS[n0:])
    warm = []
    for k in range(1, repeat + 1):
        t0 = time.perf_counter()
        _block(fn(k))
        warm.append(time.perf_counter() - t0)
    row = {"name": name, "points": points, "first_s": first, "warm_s": min(warm), "warm_per_point_us":
           min(warm) / max(points, 1) * 1e6, "compilations_first_call": comp, "compile_s_first_call": comp_s,
           "compilations_warm": len(_EVENTS) - n0 - comp, "values": _summary(value_of(out))}
    print(f"{name:34s} {points:>9d} pts  first {first:7.2f} s ({comp} compilations, {comp_s:5.1f} s)  "
          f"warm {min(warm):8.4f} s  ({row['warm_per_point_us']:.3f} us/pt)", flush=True)
    return row


def workloads(accelerator: bool, quick: bool):
    """(name, fn(k), points, value_of) for every row; k perturbs the values (a warm call on new inputs)."""
    big = accelerator and not quick
    rows = []
    for n in ((10_000, 100_000, 1_000_000) if big else (1_000, 10_000) if not quick else (1_000,)):
        s = np.geomspace(0.5, 5.0, n)
        rows.append((f"dpsgd_eps[{n}]", lambda k, s=s: aj.dpsgd_epsilon(sigma=s * (1 + 1e-9 * k), **P), n,
                     lambda r: r.epsilon))
    orders = np.arange(2, 66, 2.0)
    for n in ((100_000, 1_000_000) if big else (10_000,)):
        s = np.geomspace(0.5, 5.0, n)[:, None]
        rows.append((f"rdp_curve[{n}x{orders.size}]",
                     lambda k, s=s: aj.rdp.poisson_subsampled_gaussian_rdp(orders, q=0.01, sigma=s * (1 + 1e-9 * k)),
                     n * orders.size, lambda r: r))
    n = 1000 if accelerator else 100
    s = np.geomspace(0.5, 5.0, n)
    rows.append((f"pld_eps[{n}]", lambda k, s=s: aj.pld.dpsgd_epsilon(sigma=s * (1 + 1e-9 * k), **P), n,
                 lambda r: r.epsilon))
    n = 1000 if accelerator else 200
    t = np.geomspace(0.3, 8.0, n)
    rows.append((f"rdp_calibration[{n}]",
                 lambda k, t=t: aj.dpsgd_calibrate_sigma(target_epsilon=t * (1 + 1e-9 * k), **P), n,
                 lambda r: r.sigma))
    if not quick:
        from amplify_jax import graphs as G
        from amplify_jax import secrdp as S

        g = S.prepare_graph(G.random_regular_graph(4, 2000, seed=0))
        rows.append(("secrdp_curious[n=2000, 4-regular]",
                     lambda k: S.step_account(g, sigma_unc=1.0, sigma_cor=10.0 * (1 + 0.01 * k), clip=1.0,
                                              adversary="curious"), 1, lambda r: r.eps1))
        from amplify_jax import shuffle as Sh

        eps = np.linspace(0.5, 2.0, 4)[:, None]
        n_users = np.array([100.0, 200.0, 300.0, 400.0])[None, :]
        r = Sh.target_randomizer(targets=20, sampling=0.2)
        rows.append(("blanket_mc[4x4, 1e5 samples]",
                     lambda k: Sh.blanket_delta(eps, n=n_users, dummies=10.0, randomizer=r, method="monte_carlo",
                                                key=jax.random.PRNGKey(k), samples=100_000), 16,
                     lambda res: res.delta))
    return rows


def registry_rows(accelerator: bool):
    from amplify_jax import bounds

    n = 4096 if accelerator else 256
    rows = []
    for b in bounds.list():
        ex = dict(b.example)
        numeric = [k for k, v in ex.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]

        def fn(k, b=b, ex=ex, numeric=numeric):
            kw = {key: (np.full(n, v) if key in numeric else v) for key, v in ex.items()}
            return bounds.evaluate(b.id, **kw)

        rows.append((f"registry:{b.id}", fn, n, lambda r: r.value))
    return rows


def run_rows(rows, save=lambda out: None):
    """Every row in turn; ``save(rows so far)`` after each, so a run cut short by a time limit keeps its rows."""
    out = []
    for name, fn, points, value_of in rows:
        try:
            out.append(measure(name, fn, points, value_of))
        except Exception as exc:  # a row that fails is reported with its reason, the others still run
            print(f"{name}: failed: {type(exc).__name__}: {exc}", flush=True)
            out.append({"name": name, "error": f"{type(exc).__name__}: {exc}"[:500]})
        save(out)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the smallest sizes only (a smoke run)")
    ap.add_argument("--compare-cpu", action="store_true", help="also run every row on the host's CPU")
    ap.add_argument("--only", default="", help="comma list of row name prefixes")
    ap.add_argument("--skip", default="", help="comma list of row name prefixes to leave out")
    ap.add_argument("--sizes", choices=("auto", "accelerator", "cpu"), default="auto",
                    help="grid sizes: the device's own (auto), or an accelerator's / a CPU's on any device (to time "
                         "a CPU at an accelerator's sizes, run with JAX_PLATFORMS=cpu --sizes accelerator)")
    ap.add_argument("--no-registry", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    dev = jax.devices()[0]
    accelerator = dev.platform != "cpu" if args.sizes == "auto" else args.sizes == "accelerator"
    res = {"device": str(dev), "device_kind": getattr(dev, "device_kind", dev.platform), "platform": dev.platform,
           "n_devices": jax.device_count(), "machine": platform.platform(), "cpus": os.cpu_count(),
           "jax": jax.__version__, "load_before": os.getloadavg(), "quick": args.quick}
    print(f"device: {res['device_kind']} x {res['n_devices']} ({dev.platform}); load {res['load_before'][0]:.1f}")
    rows = workloads(accelerator, args.quick) + ([] if args.no_registry or args.quick else registry_rows(accelerator))
    if args.only:
        keep = tuple(args.only.split(","))
        rows = [r for r in rows if r[0].startswith(keep)]
    if args.skip:
        rows = [r for r in rows if not r[0].startswith(tuple(args.skip.split(",")))]
    out = Path(args.out or Path(__file__).parent / "results" / f"bench_device_{dev.platform}.json")
    out.parent.mkdir(parents=True, exist_ok=True)

    def save(key):
        def _save(rows_so_far):
            res[key] = rows_so_far
            out.write_text(json.dumps(res, indent=1))
        return _save

    t0 = time.perf_counter()
    res["rows"] = run_rows(rows, save("rows"))
    res["sizes"] = "accelerator" if accelerator else "cpu"
    if args.compare_cpu and dev.platform != "cpu":
        cpu = jax.devices("cpu")[0]
        print(f"--- the same rows on the host CPU ({os.cpu_count()} cores)")
        with jax.default_device(cpu):
            res["cpu_rows"] = run_rows(rows, save("cpu_rows"))
        for g, c in zip(res["rows"], res["cpu_rows"]):
            if "warm_s" in g and "warm_s" in c:
                g["speedup_vs_cpu_warm"] = c["warm_s"] / g["warm_s"]
    res["total_s"] = time.perf_counter() - t0
    res["load_after"] = os.getloadavg()
    out.write_text(json.dumps(res, indent=1))
    print(f"total {res['total_s']:.0f} s; wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
