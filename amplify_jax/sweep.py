"""Sweeps over huge parameter grids: chunked, sharded across devices, resumable, atomic outputs.

A sweep evaluates one *quantity* (see :data:`QUANTITIES`) over the Cartesian product of parameter axes::

    # grid.toml
    [sweep]
    quantity = "epsilon"            # or "calibrate"
    mechanism = "poisson-gaussian"
    chunk_size = 65536              # grid points per compiled call
    output = "sweep-out"            # folder (the command line's --output wins)

    [grid]
    sigma = { start = 0.5, stop = 5.0, num = 1000 }              # linear; add scale = "log" for geometric
    q = [0.001, 0.01]
    steps = 10000
    delta = 1e-5

How it works:

- Every axis is validated before anything runs (ValueError naming the axis).
- The grid is cut into chunks of ``chunk_size`` points (row-major over the axes, in the order written).
  Each chunk is padded to a multiple of the number of devices and laid out over a 1-D ``Mesh`` of all
  devices (``jax.sharding.NamedSharding``), so one command uses every GPU/TPU/CPU device of a host; the
  kernels are element-wise, so the sharded result equals the unsharded one.  With several hosts started
  through ``jax.distributed`` (``--distributed``), host h takes the chunks i with i % hosts == h.
- Each finished chunk is written to ``OUTPUT/parts/part-XXXXXXXX.npz`` through a temporary file and an
  atomic rename, so a killed sweep leaves only whole parts; a restart skips the parts present (after
  checking that the grid spec is the same: ``OUTPUT/spec.json``).
- At the end the parts are merged into ``OUTPUT/results.csv`` and ``OUTPUT/results.parquet`` (typed
  columns), again via temporary files and renames.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import jax
import jax.numpy as jnp

from . import _validate as V
from .numerics import x64_scope

__all__ = ["QUANTITIES", "SweepSpec", "load_spec", "parse_axis", "run_sweep", "grid_points", "device_mesh"]


# ----------------------------------------------------------------------------------------------------------
# Quantities: kernels over validated float64 arrays of equal shape


@dataclass(frozen=True)
class Quantity:
    params: tuple  #: axis names it needs
    outputs: tuple  #: output column names
    validators: dict  #: axis name -> validating function(name, values)
    make_kernel: Callable  #: (spec options) -> pure jnp function(**arrays) -> tuple of arrays


def _eps_kernel_factory(opts):
    from .accountants import _SGMAtOrder, _dpsgd_eps_kernel, _n_panels
    from .rdp import SGMCurve
    from .rdp import DEFAULT_ORDERS

    orders = np.sort(np.asarray(opts.get("orders", DEFAULT_ORDERS), dtype=np.float64))
    method = opts.get("method", "balle2020")
    n_panels = _n_panels(np.asarray(opts["_sigma_values"]), orders, opts.get("_q_values"))
    curve, at_order = SGMCurve(orders, n_panels), _SGMAtOrder(n_panels)

    def kernel(sigma, q, steps, delta):
        return _dpsgd_eps_kernel(curve, at_order, sigma, q, steps, jnp.log(delta), method, True)

    return kernel


def _calibrate_kernel_factory(opts):
    from .accountants import _calibrate_kernel, _calibration_plan
    from .rdp import DEFAULT_ORDERS

    orders = np.sort(np.asarray(opts.get("orders", DEFAULT_ORDERS), dtype=np.float64))
    method = opts.get("method", "balle2020")
    lo, hi = opts.get("sigma_range", (0.05, 2e3))
    plan = _calibration_plan(orders, method, (lo, hi), opts.get("_q_values"))
    rtol = float(opts.get("rtol", 1e-6))

    def kernel(target_epsilon, q, steps, delta):
        value, eps, status = _calibrate_kernel(target_epsilon, q, steps, jnp.log(delta), jnp.full_like(q, lo),
                                               jnp.full_like(q, hi), plan, rtol)
        return value, eps, status.astype(jnp.float64)

    return kernel


QUANTITIES = {
    "epsilon": Quantity(
        params=("sigma", "q", "steps", "delta"),
        outputs=("epsilon", "order"),
        validators={"sigma": V.positive, "q": V.probability, "steps": V.nonnegative, "delta": V.unit_open},
        make_kernel=_eps_kernel_factory,
    ),
    "calibrate": Quantity(
        params=("target_epsilon", "q", "steps", "delta"),
        outputs=("sigma", "epsilon", "status"),
        validators={"target_epsilon": V.positive, "q": V.probability, "steps": V.nonnegative,
                    "delta": V.unit_open},
        make_kernel=_calibrate_kernel_factory,
    ),
}


# ----------------------------------------------------------------------------------------------------------
# Grid specification


def parse_axis(name: str, value) -> np.ndarray:
    """An axis from a TOML value: a number, a list, a range "start:stop:num", or a table {start, stop, num, scale}."""
    if isinstance(value, str):
        from .cli import parse_values

        return parse_values(name, value)
    if isinstance(value, dict):
        try:
            start, stop, num = float(value["start"]), float(value["stop"]), int(value["num"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"Expected {name} = {{start, stop, num[, scale]}}, got {name}={value!r}.") from None
        if num < 1:
            raise ValueError(f"Expected {name}.num >= 1, got {name}.num={num}.")
        scale = value.get("scale", "linear")
        V.one_of(f"{name}.scale", scale, ("linear", "log"))
        if scale == "log":
            if start <= 0 or stop <= 0:
                raise ValueError(f"Expected {name}.start, {name}.stop > 0 for a log axis, got {value!r}.")
            return np.geomspace(start, stop, num)
        return np.linspace(start, stop, num)
    arr = np.atleast_1d(np.asarray(value, dtype=np.float64))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"Expected {name} to be a number or a non-empty list, got {name}={value!r}.")
    return arr


@dataclass
class SweepSpec:
    quantity: str
    axes: dict  #: name -> 1-D float64 array, in row-major order
    options: dict
    chunk_size: int = 65536
    output: str = "sweep-out"

    @property
    def shape(self):
        return tuple(len(v) for v in self.axes.values())

    @property
    def size(self):
        return int(np.prod(self.shape))

    def digest(self) -> str:
        payload = {"quantity": self.quantity, "axes": {k: v.tolist() for k, v in self.axes.items()},
                   "options": {k: v for k, v in self.options.items() if not k.startswith("_")},
                   "chunk_size": self.chunk_size}
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def load_spec(path_or_dict, output: str | None = None) -> SweepSpec:
    """Read and validate a sweep specification (a TOML file path or an equivalent dict)."""
    if isinstance(path_or_dict, (str, os.PathLike)):
        try:
            with open(path_or_dict, "rb") as fh:
                raw = tomllib.load(fh)
        except FileNotFoundError:
            raise ValueError(f"Expected an existing grid file, got GRID={str(path_or_dict)!r}.") from None
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"Expected a valid TOML grid file, got {str(path_or_dict)!r}: {exc}.") from None
    else:
        raw = dict(path_or_dict)
    sweep = dict(raw.get("sweep", {}))
    grid = raw.get("grid")
    if not isinstance(grid, dict) or not grid:
        raise ValueError("Expected a [grid] table with one entry per parameter.")
    quantity = sweep.pop("quantity", "epsilon")
    V.one_of("quantity", quantity, QUANTITIES)
    mechanism = sweep.pop("mechanism", "poisson-gaussian")
    V.one_of("mechanism", mechanism, ("poisson-gaussian",))
    q = QUANTITIES[quantity]
    missing = [p for p in q.params if p not in grid]
    extra = [p for p in grid if p not in q.params]
    if missing:
        raise ValueError(f"Expected grid parameters {q.params} for quantity={quantity!r}; missing {missing}.")
    if extra:
        raise ValueError(f"Expected grid parameters {q.params} for quantity={quantity!r}; unknown {extra}.")
    axes = {}
    for name in grid:  # keep the user's order: it is the row-major order of the output
        arr = parse_axis(name, grid[name])
        axes[name] = np.asarray(q.validators[name](name, arr), dtype=np.float64)
    chunk = int(sweep.pop("chunk_size", 65536))
    if chunk < 1:
        raise ValueError(f"Expected chunk_size >= 1, got chunk_size={chunk}.")
    out = output or sweep.pop("output", "sweep-out")
    sweep.pop("output", None)
    sweep["mechanism"] = mechanism
    return SweepSpec(quantity=quantity, axes=axes, options=sweep, chunk_size=chunk, output=str(out))


def grid_points(spec: SweepSpec, start: int, stop: int) -> dict:
    """The parameter values of flat grid points [start, stop) (row-major over the axes)."""
    idx = np.arange(start, stop)
    coords = np.unravel_index(idx, spec.shape)
    return {name: spec.axes[name][c] for name, c in zip(spec.axes, coords)}


# ----------------------------------------------------------------------------------------------------------
# Devices


def device_mesh(devices=None):
    """A 1-D mesh over all local devices (axis name "points")."""
    devs = np.array(jax.local_devices() if devices is None else devices)
    return jax.sharding.Mesh(devs, ("points",))


def _atomic_write(path: Path, write: Callable[[str], None]):
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _save_npz(tmp, arrays):
    with open(tmp, "wb") as fh:
        np.savez(fh, **arrays)
        fh.flush()
        os.fsync(fh.fileno())


def run_sweep(spec: SweepSpec, *, progress: bool = True, devices=None, distributed: bool = False,
              max_chunks: int | None = None) -> Path | None:
    """Run (or resume) a sweep; returns the output folder once all parts are merged (None if cut short)."""
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
        _atomic_write(spec_file, lambda t: Path(t).write_text(json.dumps(
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
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=n_chunks, initial=n_chunks - len(todo), unit="chunk", desc=f"sweep {spec.quantity}",
                   disable=None)
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
        _atomic_write(parts / f"part-{i:08d}.npz", lambda t: _save_npz(t, arrays))
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
    from .accountants import _n_panels
    from .rdp import DEFAULT_ORDERS

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
    header = list(table)

    def write_csv(tmp):
        with open(tmp, "w") as fh:
            fh.write(",".join(header) + "\n")
            data = np.column_stack([table[h].astype(np.float64) for h in header])
            fmt = ["%d" if table[h].dtype.kind == "i" else "%.17g" for h in header]
            np.savetxt(fh, data, fmt=fmt, delimiter=",")

    _atomic_write(out / "results.csv", write_csv)

    import pyarrow as pa
    import pyarrow.parquet as pq

    tbl = pa.table({k: pa.array(v) for k, v in table.items()})
    _atomic_write(out / "results.parquet", lambda t: pq.write_table(tbl, t))
