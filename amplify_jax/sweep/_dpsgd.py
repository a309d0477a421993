"""Running the DP-SGD sweeps: sharded chunks into parts/, merged into CSV and Parquet."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import jax

from .._io import atomic_write
from ..numerics import x64_scope
from ._common import _bar, _save_npz, _write_table, device_mesh
from ._quantities import QUANTITIES, Quantity
from ._spec import SweepSpec, grid_points


def run_dpsgd_sweep(spec: SweepSpec, *, progress: bool, devices, distributed: bool, max_chunks) -> Path | None:
    """Run (or resume) a DP-SGD sweep (see :func:`amplify_jax.sweep.run_sweep`)."""
    out = Path(spec.output)
    parts = out / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    spec_file = out / "spec.json"
    digest = spec.digest()
    if spec_file.exists():
        old = json.loads(spec_file.read_text())
        if old.get("digest") != digest:
            raise ValueError(
                f"Expected output={str(out)!r} to hold this sweep or nothing; it holds a different sweep "
                "(remove it or choose another --output)."
            )
    else:
        atomic_write(spec_file, lambda t: Path(t).write_text(json.dumps(
            {"digest": digest, "quantity": spec.quantity, "shape": spec.shape,
             "axes": {k: v.tolist() for k, v in spec.axes.items()},
             "options": {k: v for k, v in spec.options.items() if not k.startswith("_")}}, indent=1)))

    q = QUANTITIES[spec.quantity]
    mesh = device_mesh(devices)
    n_dev = mesh.devices.size
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("points"))
    names = list(q.params)
    compiled = _compiled(spec, q, mesh, sharding)

    n_chunks = -(-spec.size // spec.chunk_size)
    host, hosts = (jax.process_index(), jax.process_count()) if distributed else (0, 1)
    todo = [i for i in range(n_chunks) if i % hosts == host and not (parts / f"part-{i:08d}.npz").exists()]
    if max_chunks is not None:
        todo = todo[:max_chunks]
    bar = _bar(progress, n_chunks, n_chunks - len(todo), f"sweep {spec.quantity}")
    for i in todo:
        start, stop = i * spec.chunk_size, min((i + 1) * spec.chunk_size, spec.size)
        pts = grid_points(spec, start, stop)
        n = stop - start
        # every chunk has the same padded length (a multiple of the device count): one compiled program
        padded = -(-min(spec.chunk_size, spec.size) // n_dev) * n_dev
        with x64_scope():
            xs = [jax.device_put(np.pad(pts[k], (0, padded - n), mode="edge"), sharding) for k in names]
            res = compiled(*xs)
            res = [np.asarray(r)[:n] for r in res]
        arrays = {f"in_{k}": v for k, v in pts.items()}
        arrays.update({f"out_{k}": v for k, v in zip(q.outputs, res)})
        atomic_write(parts / f"part-{i:08d}.npz", lambda t: _save_npz(t, arrays))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    done = all((parts / f"part-{i:08d}.npz").exists() for i in range(n_chunks))
    if not done or host != 0:
        return None
    _merge(spec, out, n_chunks, q)
    return out


_COMPILED: dict = {}


def _compiled(spec, q, mesh, sharding):
    """The jitted, sharded kernel of a quantity, cached per (quantity, options, devices) across sweeps."""
    opts = dict(spec.options)
    if "sigma" in spec.axes:
        opts["_sigma_values"] = spec.axes["sigma"]
    opts["_q_values"] = spec.axes.get("q")
    probe = q.make_kernel  # the kernel's static plan depends on the options (and on the sigma axis' range)
    key = (spec.quantity, json.dumps({k: v for k, v in spec.options.items()}, sort_keys=True, default=str),
           tuple(d.id for d in mesh.devices.flat), _plan_key(spec))
    if key not in _COMPILED:
        kernel = probe(opts)
        names = list(q.params)
        _COMPILED[key] = jax.jit(lambda *xs: kernel(**dict(zip(names, xs))), out_shardings=sharding)
    return _COMPILED[key]


def _plan_key(spec):
    """What of the grid fixes the kernel's static plan: the quadrature panel count for the sigma and q axes."""
    if "sigma" not in spec.axes:
        return ("q", tuple(spec.axes["q"].tolist())) if "q" in spec.axes else None
    from ..accountants import _n_panels
    from ..rdp import DEFAULT_ORDERS

    orders = np.sort(np.asarray(spec.options.get("orders", DEFAULT_ORDERS), dtype=np.float64))
    return _n_panels(spec.axes["sigma"], orders, spec.axes.get("q"))


def _merge(spec, out: Path, n_chunks: int, q: Quantity):
    cols = {}
    for i in range(n_chunks):
        with np.load(out / "parts" / f"part-{i:08d}.npz") as z:
            for k in list(spec.axes) + [f"out_{o}" for o in q.outputs]:
                key = k if k.startswith("out_") else f"in_{k}"
                cols.setdefault(k.removeprefix("out_"), []).append(z[key])
    table = {k: np.concatenate(v) for k, v in cols.items()}
    if "status" in table:
        table["status"] = table["status"].astype(np.int32)
    _write_table(table, out / "results.csv", out / "results.parquet")
