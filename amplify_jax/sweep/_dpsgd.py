"""Running the DP-SGD sweeps: sharded chunks into parts/, merged into CSV and Parquet."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .._core.io import atomic_write
from ._common import _bar, _save_npz, _write_table, barrier, device_mesh, hosts as _hosts
from ._quantities import QUANTITIES, Quantity
from ._spec import SweepSpec, grid_points


def run_dpsgd_sweep(spec: SweepSpec, *, progress: bool, devices, distributed: bool, max_chunks) -> Path | None:
    """Run (or resume) a DP-SGD sweep (see :func:`amplify_jax.sweep.run_sweep`).

    Each chunk is one call of the public accountant (validated as any call of it; every point takes its own
    quadrature panel count, so the chunks share one compiled program and a point's answer is the one a call on
    the whole grid gives), laid out over the local devices.  Nothing is written before the first chunk has
    passed the call's checks (a part's folder is made by its atomic write).
    """
    out = Path(spec.output)
    parts = out / "parts"
    spec_file = out / "spec.json"
    digest = spec.digest()
    if spec_file.exists():
        old = json.loads(spec_file.read_text())
        if old.get("digest") != digest:
            raise ValueError(
                f"Expected output={str(out)!r} to hold this sweep or nothing; it holds a different sweep "
                "(remove it or choose another --output)."
            )
    q = QUANTITIES[spec.quantity]
    opts = q.passed(spec.options)

    def write_spec():  # once a chunk has passed the public call's checks (a bad option leaves nothing behind)
        if not spec_file.exists():
            atomic_write(spec_file, lambda t: Path(t).write_text(json.dumps(
                {"digest": digest, "quantity": spec.quantity, "shape": spec.shape,
                 "axes": {k: v.tolist() for k, v in spec.axes.items()},
                 "options": {k: v for k, v in spec.options.items() if not k.startswith("_")}}, indent=1)))

    devs = list(device_mesh(devices).devices.flat)
    names = list(q.params)
    n_chunks = -(-spec.size // spec.chunk_size)
    host, hosts = _hosts(distributed)
    todo = [i for i in range(n_chunks) if i % hosts == host and not (parts / f"part-{i:08d}.npz").exists()]
    if max_chunks is not None:
        todo = todo[:max_chunks]
    bar = _bar(progress, n_chunks, n_chunks - len(todo), f"sweep {spec.quantity}")
    for i in todo:
        start, stop = i * spec.chunk_size, min((i + 1) * spec.chunk_size, spec.size)
        pts = grid_points(spec, start, stop)
        n = stop - start
        # every chunk has the same padded length: one compiled program
        padded = min(spec.chunk_size, spec.size)
        xs = {k: np.pad(pts[k], (0, padded - n), mode="edge") for k in names}
        res = [np.asarray(r)[:n] for r in q.evaluate(xs, opts, devs)]
        arrays = {f"in_{k}": v for k, v in pts.items()}
        arrays.update({f"out_{k}": v for k, v in zip(q.outputs, res)})
        write_spec()
        atomic_write(parts / f"part-{i:08d}.npz", lambda t: _save_npz(t, arrays))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    write_spec()
    barrier(f"amplify_jax sweep {digest[:16]}", distributed)  # every host's parts are written
    done = all((parts / f"part-{i:08d}.npz").exists() for i in range(n_chunks))
    if not done or host != 0:
        return None
    _merge(spec, out, n_chunks, q)
    return out


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
