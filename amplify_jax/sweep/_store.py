"""Bound sweeps into labelled Zarr stores: region writes, done-markers, resume, exports."""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np

from .. import __version__
from .._core.io import atomic_write
from .._core.status import Status
from ._common import EXPORT_LIMIT, FORMATS, _bar, _write_table, barrier, hosts as _hosts
from ._spec import BoundSweepSpec, _formats


# ----------------------------------------------------------------------------------------------------------
# Bound sweeps into Zarr

STORE = "results.zarr"
DONE = "done"


def _status_attrs() -> dict:
    return {"flag_values": [int(s) for s in Status], "flag_meanings": " ".join(str(s) for s in Status),
            "comment": "amplify_jax.status.Status codes; -1: not computed yet"}


def _compute_chunk(spec: BoundSweepSpec, i: int) -> dict:
    """The data variables of chunk ``i``: name -> array of the chunk's region (+ orders)."""
    from .. import bounds as B  # lazy: the registry takes ~0.3 s to import; DP-SGD sweeps never need it

    params = spec.chunk_params(i)
    if spec.quantity == "evaluate":
        res = B.evaluate(spec.bound, **params)
    else:
        # the target at the chunk's full shape: bounds.invert's generic search takes its shape from the target
        shape = tuple(sl.stop - sl.start for sl in spec.chunk_slices(i))
        for t in ("target_epsilon", "target_delta"):
            if t in params:
                params[t] = np.array(np.broadcast_to(params[t], shape))
        res = B.invert(spec.bound, solve_for=spec.solve_for, **spec.options, **params)
    return {k: np.asarray(v) for k, v in res.outputs.items()}


def _var_dims(spec: BoundSweepSpec, name: str, value: np.ndarray) -> tuple:
    dims = spec.dims
    if spec.orders is not None and value.ndim == len(dims) + 1 and name != "status":
        return dims + ("order",)
    if value.ndim != len(dims):
        raise ValueError(f"Expected the output {name} of {spec.bound} to have one value per grid point, got shape "
                         f"{value.shape} for a chunk of {len(dims)} dimension(s).")
    return dims


def _store_attrs(spec: BoundSweepSpec) -> dict:
    from .. import bounds as B  # lazy: the registry takes ~0.3 s to import; DP-SGD sweeps never need it

    bound = B.get(spec.bound)
    params = {}
    for p in bound.params:
        if p.name == spec.solve_for:
            entry = {"solved_for": True}
        elif p.name in spec.axes:
            entry = {"dimension": p.name}
        elif p.name == "orders" and spec.orders is not None:
            entry = {"dimension": "order", "values": spec.orders.tolist()}
        elif p.name in spec.fixed:
            entry = {"value": spec.fixed[p.name]}
        else:
            entry = {"value": p.default if isinstance(p.default, (int, float, str)) else repr(p.default),
                     "default": True}
        entry.update(domain=p.domain.describe(), doc=p.doc, monotone=p.monotone)
        params[p.name] = entry
    for t in ("target_epsilon", "target_delta"):
        if t in spec.axes:
            params[t] = {"dimension": t}
        elif t in spec.fixed:
            params[t] = {"value": spec.fixed[t]}
    return {"bound": bound.id, "paper": bound.paper, "theorem": bound.theorem, "summary": bound.summary,
            "answer": bound.answer, "side": bound.side, "quantity": spec.quantity,
            "solve_for": spec.solve_for or "", "parameters": params,
            "options": spec.options, "chunk_size": spec.chunk_size, "amplify_jax_version": __version__,
            "spec_hash": spec.digest()}


def _create_store(spec: BoundSweepSpec, first: dict, out: Path, clear_done: bool) -> None:
    """Build the whole store (metadata, coordinates, empty data variables) in a temporary folder and rename it
    into place; if another process got there first, keep theirs (it is checked by the caller)."""
    import zarr  # lazy: zarr takes ~190 ms to import, the registry ~0.3 s; sweeps of DP-SGD need neither
    from .. import bounds as B

    bound = B.get(spec.bound)
    tmp = Path(tempfile.mkdtemp(prefix=f".{STORE}.", suffix=".tmp", dir=out))
    try:
        g = zarr.open_group(str(tmp), mode="w", zarr_format=3, attributes=_store_attrs(spec))
        for name, values in spec.axes.items():
            p = bound.param(name) if name in [q.name for q in bound.params] else None
            attrs = {"long_name": name, **({"description": p.doc, "domain": p.domain.describe()} if p else {})}
            a = g.create_array(name, shape=values.shape, chunks=values.shape, dtype="f8", fill_value=np.nan,
                               dimension_names=[name], attributes=attrs)
            a[:] = values
        if spec.orders is not None:
            a = g.create_array("order", shape=spec.orders.shape, chunks=spec.orders.shape, dtype="f8",
                               fill_value=np.nan, dimension_names=["order"],
                               attributes={"long_name": "Rényi order alpha"})
            a[:] = spec.orders
        for name, value in first.items():
            dims = _var_dims(spec, name, value)
            shape = spec.shape + ((len(spec.orders),) if len(dims) > len(spec.dims) else ())
            chunks = spec.chunks + shape[len(spec.dims):]
            if name == "status":
                dtype, fill, attrs = np.int8, -1, _status_attrs()
            elif value.dtype.kind == "b":
                dtype, fill, attrs = np.bool_, False, {}
            elif value.dtype.kind in "iu":
                dtype, fill, attrs = np.int64, -1, {}
            else:
                dtype, fill, attrs = np.float64, np.nan, {}
            if name == bound.answer:
                what = "achieved " if spec.quantity == "invert" else ""
                attrs = {"long_name": f"{what}{name}", "description": bound.summary}
            elif name == spec.solve_for:
                attrs = {"long_name": f"{name} solved for"}
            g.create_array(name, shape=shape, chunks=chunks, dtype=dtype, fill_value=fill,
                           dimension_names=list(dims), attributes=attrs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            zarr.consolidate_metadata(str(tmp))
        if clear_done:
            shutil.rmtree(out / DONE, ignore_errors=True)  # markers of an earlier store never count for this one
        os.rename(tmp, out / STORE)
    except OSError:
        if not (out / STORE).exists():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _check_store(spec: BoundSweepSpec, store: Path) -> None:
    import zarr  # lazy: zarr takes ~190 ms to import; DP-SGD sweeps never need it

    attrs = zarr.open_group(str(store), mode="r").attrs.asdict()
    if attrs.get("spec_hash") != spec.digest():
        raise ValueError(f"Expected output={str(store.parent)!r} to hold this sweep or nothing; its store holds a "
                         f"different sweep (spec hash {str(attrs.get('spec_hash'))[:12]}; remove it or choose "
                         "another --output).")


def _layout(store: Path) -> dict:
    """name -> (dims, dtype) of the store's data variables (read once per run)."""
    import zarr  # lazy: zarr takes ~190 ms to import; DP-SGD sweeps never need it

    g = zarr.open_group(str(store), mode="r")
    coords = {n for n, a in g.arrays() if list(a.metadata.dimension_names or ()) == [n]}
    return {n: (tuple(a.metadata.dimension_names or ()), a.dtype) for n, a in g.arrays() if n not in coords}


def _write_chunk(spec: BoundSweepSpec, store: Path, layout: dict, i: int, values: dict) -> None:
    """Region write of chunk ``i`` (data variables only: the coordinates were written with the store)."""
    import xarray as xr  # lazy: xarray takes ~420 ms to import; DP-SGD sweeps never need it

    ds = xr.Dataset({name: (layout[name][0], np.asarray(values[name]).astype(layout[name][1], copy=False))
                     for name in layout})
    region = {d: s for d, s in zip(spec.dims, spec.chunk_slices(i))}
    if spec.orders is not None:
        region["order"] = slice(0, len(spec.orders))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(str(store), region=region, mode="r+", consolidated=False)


def _remove_leftovers(out: Path) -> None:
    """Temporary files of a killed run: a store never renamed into place, done-markers never renamed."""
    for p in out.glob(f".{STORE}.*.tmp"):
        shutil.rmtree(p, ignore_errors=True)
    for p in (out / DONE).glob(".chunk-*.tmp"):
        p.unlink(missing_ok=True)


def run_bound_sweep(spec: BoundSweepSpec, *, progress: bool, distributed: bool, max_chunks) -> Path | None:
    out = Path(spec.output)
    out.mkdir(parents=True, exist_ok=True)
    store, done = out / STORE, out / DONE
    host, hosts = _hosts(distributed)
    if not distributed:  # leftovers of a killed run (in a distributed run another host may be writing them)
        _remove_leftovers(out)
    if store.exists():
        _check_store(spec, store)
    present = set(os.listdir(done)) if (done.exists() and store.exists()) else set()
    marker = "chunk-{:08d}".format
    n = spec.n_chunks
    todo = [i for i in range(n) if i % hosts == host and marker(i) not in present]
    if max_chunks is not None:
        todo = todo[:max_chunks]
    bar = _bar(progress, n, n - len(todo) if hosts == 1 else 0, f"sweep {spec.bound}")
    layout = _layout(store) if store.exists() else None
    for i in todo:
        values = _compute_chunk(spec, i)
        if layout is None:  # the first chunk computed gives the outputs' dtypes; then the store is created
            _create_store(spec, values, out, clear_done=not distributed)
            _check_store(spec, store)
            layout = _layout(store)
        _write_chunk(spec, store, layout, i, values)
        atomic_write(done / marker(i), lambda t: None)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    barrier(f"amplify_jax sweep {spec.digest()[:16]}", distributed)  # every host's chunks are written
    if distributed and host == 0:  # no host writes now: a killed run's temporary files can go
        _remove_leftovers(out)
    if host != 0 or not store.exists():
        return None
    present = set(os.listdir(done)) if done.exists() else set()
    if any(marker(i) not in present for i in range(n)):
        return None
    if spec.formats:
        export(out, spec.formats)
    return out


def export(output, formats=FORMATS, limit: int = EXPORT_LIMIT) -> list:
    """Write ``OUTPUT/results.csv`` / ``.parquet`` (long format: one row per grid point and order; fixed numeric
    parameters as constant columns) from a complete store, atomically; refused above ``limit`` rows."""
    import xarray as xr  # lazy: xarray takes ~420 ms to import; DP-SGD sweeps never need it

    out = Path(output)
    formats = _formats(formats)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = xr.open_zarr(str(out / STORE), consolidated=True)
    dims = list(max((v.dims for v in ds.data_vars.values()), key=len))  # the answer's: grid dims (+ order)
    rows = int(np.prod([ds.sizes[d] for d in dims], dtype=np.int64))
    if rows > limit:
        raise ValueError(f"Expected at most {limit} rows for a {'/'.join(formats)} export, got {rows}; read "
                         f"{out / STORE} with xarray.open_zarr instead.")
    ds = ds.load()
    table = {}
    if dims:
        grids = np.meshgrid(*[ds[d].values for d in dims], indexing="ij")
        table.update({d: g.ravel() for d, g in zip(dims, grids)})
    for name, entry in ds.attrs.get("parameters", {}).items():
        if "value" in entry and isinstance(entry["value"], (int, float)) and not isinstance(entry["value"], bool):
            table[name] = np.full(rows, float(entry["value"]))
    for name, var in ds.data_vars.items():
        v = var.transpose(*[d for d in dims if d in var.dims]).values
        v = np.broadcast_to(v.reshape(v.shape + (1,) * (len(dims) - v.ndim)), tuple(ds.sizes[d] for d in dims))
        table[name] = (v.astype(np.int32) if name == "status" else v).ravel()
    paths = [out / f"results.{f}" for f in formats]
    _write_table(table, out / "results.csv" if "csv" in formats else None,
                 out / "results.parquet" if "parquet" in formats else None)
    return paths
