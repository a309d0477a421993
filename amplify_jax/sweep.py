"""Sweeps over huge parameter grids: chunked, resumable, atomic; any registered bound into a labelled Zarr store.

Two kinds of sweep, chosen by the ``[sweep]`` table of a TOML file (or an equivalent dict).

**Bound sweeps** evaluate (or invert) any bound of :mod:`amplify_jax.bounds` over the Cartesian product of its
parameters and write an N-D labelled ``xarray`` Dataset to ``OUTPUT/results.zarr``::

    [sweep]
    bound = "shuffle.clones"        # any id of amplify_jax.bounds.list()
    quantity = "evaluate"           # or "invert" (then solve_for = "PARAM"; optional rtol, lo, hi)
    chunk_size = 65536              # grid points per chunk (one Zarr chunk per data variable)
    output = "sweep-out"            # folder (the command line's --output wins)
    format = ["csv"]                # optional export of a small grid: "csv", "parquet"

    [grid]                          # every parameter of the bound (those with defaults may be left out)
    eps0 = { start = 0.1, stop = 5.0, num = 200, scale = "log" }     # > 1 value: an axis (a dimension)
    n = [1000, 10000, 100000]
    delta = 1e-6                                                     # one value: fixed

- Numbers become dimensions (in the order written) when they have more than one value; choice and graph
  parameters are fixed strings; ``orders`` of an RDP bound becomes a trailing ``order`` dimension of the answer.
  For ``quantity = "invert"`` the grid holds ``target_epsilon`` (or ``target_delta``), which may be axes too.
- Everything is validated through the registry's domains before anything runs (one ``ValueError`` line naming
  the parameter).
- The store is created first (every array and coordinate; data variables: the answer, the bound's extra
  outputs and ``status`` as int8 with CF ``flag_values`` / ``flag_meanings``; for invert the solved parameter,
  the achieved answer and ``status``) in a temporary folder renamed into place, then filled chunk by chunk with
  region writes aligned with the Zarr chunks: memory stays flat in the grid's size.  Attributes: bound id,
  paper, theorem, parameters (fixed values, domains), quantity, solve_for, amplify_jax version, spec hash.
- Resume: after a chunk's region write returns, an empty marker ``OUTPUT/done/chunk-XXXXXXXX`` is created by
  an atomic rename.  A restart (after any kill, SIGKILL included) recomputes every chunk without its marker;
  each Zarr chunk file belongs to exactly one sweep chunk, so rewriting a half-written one is safe, and the
  result equals an uninterrupted run's.  A store of a different spec (hash) is refused.
- With several hosts started through ``jax.distributed`` (``--distributed``), host h takes the chunks
  i with i % hosts == h (a shared file system holds OUTPUT).
- CSV / Parquet (``format`` or ``--export``) are exports of small grids (at most :data:`EXPORT_LIMIT` rows),
  written through temporary files and renames at the end.

**DP-SGD sweeps** (the original quantities, ``quantity = "epsilon"`` or ``"calibrate"``, ``mechanism =
"poisson-gaussian"``) evaluate the kernels of :func:`amplify_jax.accountants.dpsgd_epsilon` /
:func:`~amplify_jax.accountants.dpsgd_calibrate_sigma` (the axes validated as those calls validate them) over a
grid of (sigma or target_epsilon, q, steps, delta), with the quadrature plan sized once for the whole grid: a
chunk is padded to a multiple of the device count and laid out over a 1-D ``Mesh`` of the local devices
(``NamedSharding``).  Each chunk goes to ``OUTPUT/parts/part-XXXXXXXX.npz`` (temporary file + atomic rename; a
restart skips the parts present after checking ``OUTPUT/spec.json``); the parts are merged into
``OUTPUT/results.csv`` and ``OUTPUT/results.parquet``.  With ``--distributed`` host h takes the chunks
i % hosts == h.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import jax
import jax.numpy as jnp

from . import _validate as V
from ._io import atomic_write
from .numerics import x64_scope

__all__ = ["QUANTITIES", "BOUND_QUANTITIES", "EXPORT_LIMIT", "SweepSpec", "BoundSweepSpec", "load_spec",
           "parse_axis", "run_sweep", "grid_points", "device_mesh", "export"]

#: Most rows (grid points x orders) a CSV / Parquet export of a bound sweep may hold; above it, read the store.
EXPORT_LIMIT = 2_000_000
#: Export formats of bound sweeps.
FORMATS = ("csv", "parquet")
#: Quantities of bound sweeps.
BOUND_QUANTITIES = ("evaluate", "invert")


# ----------------------------------------------------------------------------------------------------------
# DP-SGD quantities: public host functions over validated float64 arrays of equal shape


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
        from ._grid import parse_values

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
    try:
        arr = np.atleast_1d(np.asarray(value, dtype=np.float64))
    except (TypeError, ValueError):
        raise ValueError(f"Expected {name} to be a number or a list of numbers, got {name}={value!r}.") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"Expected {name} to be a number or a non-empty list, got {name}={value!r}.")
    return arr


@dataclass
class SweepSpec:
    """A DP-SGD sweep (``quantity`` "epsilon" or "calibrate") into CSV + Parquet."""

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


@dataclass
class BoundSweepSpec:
    """A sweep of a registered bound (``quantity`` "evaluate" or "invert") into ``OUTPUT/results.zarr``."""

    bound: str
    quantity: str
    solve_for: str | None
    axes: dict  #: dimension name -> 1-D float64 array (more than one value), in the spec's order
    fixed: dict  #: parameter -> its one value (a float, or the string of a choice / graph)
    orders: np.ndarray | None  #: the RDP orders (the answer's trailing ``order`` dimension) or None
    options: dict = field(default_factory=dict)  #: invert: rtol, lo, hi
    chunk_size: int = 65536
    output: str = "sweep-out"
    formats: tuple = ()

    @property
    def dims(self) -> tuple:
        return tuple(self.axes)

    @property
    def shape(self) -> tuple:
        return tuple(len(v) for v in self.axes.values())

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def rows(self) -> int:
        """Rows of a long-format export: grid points x orders."""
        return self.size * (1 if self.orders is None else len(self.orders))

    @property
    def chunks(self) -> tuple:
        """The Zarr chunk shape over the grid's dimensions: at most ``chunk_size`` points, filled from the last."""
        out, room = [], self.chunk_size
        for n in reversed(self.shape):
            c = max(1, min(n, room))
            out.append(c)
            room = max(1, room // c)
        return tuple(reversed(out))

    @property
    def chunk_grid(self) -> tuple:
        return tuple(-(-n // c) for n, c in zip(self.shape, self.chunks))

    @property
    def n_chunks(self) -> int:
        return int(np.prod(self.chunk_grid, dtype=np.int64))

    def chunk_slices(self, i: int) -> tuple:
        """The region (one slice per dimension) of chunk ``i`` (row-major over the chunk grid)."""
        idx = np.unravel_index(i, self.chunk_grid) if self.dims else ()
        return tuple(slice(int(k) * c, min((int(k) + 1) * c, n)) for k, c, n in zip(idx, self.chunks, self.shape))

    def chunk_params(self, i: int) -> dict:
        """The keyword arguments of chunk ``i``: every axis' slice shaped to broadcast, the fixed values."""
        params = dict(self.fixed)
        nd = len(self.dims)
        for j, (name, sl) in enumerate(zip(self.dims, self.chunk_slices(i))):
            shape = [1] * nd
            shape[j] = -1
            params[name] = self.axes[name][sl].reshape(shape)
        if self.orders is not None:
            params["orders"] = self.orders
        return params

    def digest(self) -> str:
        payload = {"bound": self.bound, "quantity": self.quantity, "solve_for": self.solve_for,
                   "axes": {k: v.tolist() for k, v in self.axes.items()}, "fixed": self.fixed,
                   "orders": None if self.orders is None else self.orders.tolist(), "options": self.options,
                   "chunk_size": self.chunk_size}
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def _read_toml(path_or_dict) -> dict:
    if isinstance(path_or_dict, (str, os.PathLike)):
        try:
            with open(path_or_dict, "rb") as fh:
                return tomllib.load(fh)
        except FileNotFoundError:
            raise ValueError(f"Expected an existing grid file, got GRID={str(path_or_dict)!r}.") from None
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"Expected a valid TOML grid file, got {str(path_or_dict)!r}: {exc}.") from None
    return dict(path_or_dict)


def load_spec(path_or_dict, output: str | None = None, export=None) -> SweepSpec | BoundSweepSpec:
    """Read and validate a sweep specification (a TOML file path or an equivalent dict).

    ``[sweep] bound = ID`` gives a :class:`BoundSweepSpec`; otherwise a DP-SGD :class:`SweepSpec`.  ``export``
    (bound sweeps): formats to write besides the store ("csv", "parquet", a list or a comma-separated string),
    added to the spec's ``format``.
    """
    raw = _read_toml(path_or_dict)
    sweep = dict(raw.get("sweep", {}))
    grid = raw.get("grid")
    if not isinstance(grid, dict) or not grid:
        raise ValueError("Expected a [grid] table with one entry per parameter.")
    if "bound" in sweep:
        return _load_bound_spec(sweep, grid, output, export)
    if export:
        raise ValueError("Expected no export formats for a DP-SGD sweep (it writes CSV and Parquet), "
                         f"got export={export!r}.")
    quantity = sweep.pop("quantity", "epsilon")
    if quantity in BOUND_QUANTITIES:
        raise ValueError(f"Expected [sweep] bound = ID (see amplify_jax.bounds.list()) for quantity={quantity!r}.")
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
    chunk = _chunk_size(sweep.pop("chunk_size", 65536))
    out = output or sweep.pop("output", "sweep-out")
    sweep.pop("output", None)
    sweep["mechanism"] = mechanism
    return SweepSpec(quantity=quantity, axes=axes, options=sweep, chunk_size=chunk, output=str(out))


def _chunk_size(value) -> int:
    try:
        chunk = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"Expected an integer chunk_size, got chunk_size={value!r}.") from None
    if chunk < 1 or chunk != value:
        raise ValueError(f"Expected an integer chunk_size >= 1, got chunk_size={value!r}.")
    return chunk


def _formats(value) -> tuple:
    if value is None or value == "" or value == []:
        return ()
    items = value.split(",") if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else None
    if items is None:
        raise ValueError(f"Expected format as a list of {list(FORMATS)}, got format={value!r}.")
    out = []
    for f in items:
        f = str(f).strip().lower()
        V.one_of("format", f, FORMATS)
        if f not in out:
            out.append(f)
    return tuple(out)


def _load_bound_spec(sweep: dict, grid: dict, output, export) -> BoundSweepSpec:
    from . import bounds as B

    sweep = dict(sweep)
    bound = B.get(sweep.pop("bound"))
    quantity = sweep.pop("quantity", "evaluate")
    V.one_of("quantity", quantity, BOUND_QUANTITIES)
    solve_for = sweep.pop("solve_for", None)
    chunk = _chunk_size(sweep.pop("chunk_size", 65536))
    out = str(output or sweep.pop("output", "sweep-out"))
    sweep.pop("output", None)
    formats = _formats(sweep.pop("format", None))
    formats = tuple(dict.fromkeys(formats + _formats(export)))
    options = {}
    if quantity == "invert":
        options = {k: sweep.pop(k) for k in ("rtol", "lo", "hi") if k in sweep}
    if sweep:
        raise ValueError(f"Expected [sweep] keys bound, quantity, solve_for, chunk_size, output, format"
                         f"{', rtol, lo, hi' if quantity == 'invert' else ''}; got {sorted(sweep)[0]}.")

    names = [p.name for p in bound.params]
    targets = ()
    if quantity == "invert":
        if bound.answer == "rdp":
            raise ValueError(f"Expected a bound that answers epsilon or delta for invert, got {bound.id!r} "
                             "(an RDP curve).")
        if solve_for not in bound.solvable:
            raise ValueError(f"Expected solve_for in {list(bound.solvable)} (the monotone parameters of "
                             f"{bound.id}), got solve_for={solve_for!r}.")
        if solve_for in grid:
            raise ValueError(f"Expected no grid value for {solve_for}, the parameter solved for, got "
                             f"{solve_for}={grid[solve_for]!r}.")
        tname = "target_" + bound.answer
        if tname not in grid:
            raise ValueError(f"Expected {tname} in the grid for invert of {bound.id}, which answers {bound.answer}.")
        fixed_name = "delta" if bound.answer == "epsilon" else "epsilon"
        if "target_" + fixed_name in grid and fixed_name in grid:
            raise ValueError(f"Expected one of {fixed_name} and target_{fixed_name}, got both.")
        targets = ("target_epsilon", "target_delta")
    elif solve_for is not None:
        raise ValueError(f"Expected solve_for only with quantity = 'invert', got solve_for={solve_for!r}.")

    axes, fixed, orders, sample = {}, {}, None, {}
    for name, value in grid.items():  # keep the user's order: the dimensions' order
        if name in targets:
            dom = B.TARGET_DOMAINS[name]
        elif name in names:
            dom = bound.param(name).domain
        else:
            allowed = [n for n in names if n != solve_for] + [t for t in targets]
            raise ValueError(f"Expected grid parameters of {bound.id} ({', '.join(allowed)}), got {name}={value!r}.")
        if isinstance(dom, B.Orders):
            orders = np.asarray(dom.check(name, parse_axis(name, value)), dtype=np.float64)
            if np.unique(orders).size != orders.size:
                raise ValueError(f"Expected distinct {name}, got {name}={value!r}.")
            sample[name] = orders
            continue
        if not dom.numeric:
            if not isinstance(value, str):
                raise ValueError(f"Expected one value (a string) for {name} ({dom.describe()}), got {name}={value!r}.")
            sample[name] = dom.check(name, value)  # converted (a graph): validated once here
            fixed[name] = value
            continue
        arr = np.asarray(dom.check(name, parse_axis(name, value)), dtype=np.float64).ravel()
        if arr.size > 1:
            if name in ("order", "status") or name == solve_for or name in (bound.answer, *bound.outputs):
                raise ValueError(f"Expected a parameter name that is no output name, got {name}.")
            axes[name] = arr
        else:
            fixed[name] = float(arr[0])
        sample[name] = arr[:1]
    if quantity == "invert":
        params = {k: v for k, v in sample.items() if k not in targets}
        other = "target_delta" if bound.answer == "epsilon" else "target_epsilon"
        if other in sample:
            params["delta" if bound.answer == "epsilon" else "epsilon"] = sample[other]
        B.bind(bound, params, skip=(solve_for,))
        p = bound.param(solve_for)
        if "rtol" in options:
            options["rtol"] = float(V.positive("rtol", options["rtol"]))
        for k in ("lo", "hi"):
            if k in options:
                options[k] = float(p.domain.check(k, options[k]))
    else:
        B.bind(bound, {k: v for k, v in sample.items()})
    spec = BoundSweepSpec(bound=bound.id, quantity=quantity, solve_for=solve_for, axes=axes, fixed=fixed,
                          orders=orders if bound.answer == "rdp" else None, options=options, chunk_size=chunk,
                          output=out, formats=formats)
    if orders is not None and bound.answer != "rdp":
        spec.fixed["orders"] = orders.tolist()
    if formats and spec.rows > EXPORT_LIMIT:
        raise ValueError(f"Expected at most {EXPORT_LIMIT} rows for a {'/'.join(formats)} export, got format with "
                         f"{spec.rows} rows; read OUTPUT/results.zarr with xarray.open_zarr instead.")
    return spec


def grid_points(spec: SweepSpec, start: int, stop: int) -> dict:
    """The parameter values of flat grid points [start, stop) (row-major over the axes)."""
    idx = np.arange(start, stop)
    coords = np.unravel_index(idx, spec.shape)
    return {name: spec.axes[name][c] for name, c in zip(spec.axes, coords)}


# ----------------------------------------------------------------------------------------------------------
# Devices and files


def device_mesh(devices=None):
    """A 1-D mesh over all local devices (axis name "points")."""
    devs = np.array(jax.local_devices() if devices is None else devices)
    return jax.sharding.Mesh(devs, ("points",))


def _save_npz(tmp, arrays):
    with open(tmp, "wb") as fh:
        np.savez(fh, **arrays)
        fh.flush()
        os.fsync(fh.fileno())


def run_sweep(spec: SweepSpec | BoundSweepSpec, *, progress: bool = True, devices=None, distributed: bool = False,
              max_chunks: int | None = None) -> Path | None:
    """Run (or resume) a sweep; returns the output folder once complete (None if cut short, or on a host > 0).

    ``devices`` (DP-SGD sweeps): the local devices a chunk is sharded over (all by default).  ``max_chunks``:
    stop after computing that many chunks (tests: a sweep cut short).
    """
    if isinstance(spec, BoundSweepSpec):
        return _run_bound_sweep(spec, progress=progress, distributed=distributed, max_chunks=max_chunks)
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


def _bar(progress, total, initial, desc):
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, unit="chunk", desc=desc, disable=None)


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
    _write_table(table, out / "results.csv", out / "results.parquet")


def _write_table(table: dict, csv_path: Path | None, parquet_path: Path | None):
    """Columns (1-D arrays of equal length) to CSV (%.17g, integers as %d) and Parquet, each atomically."""
    header = list(table)
    if csv_path is not None:
        def write_csv(tmp):
            with open(tmp, "w") as fh:
                fh.write(",".join(header) + "\n")
                data = np.column_stack([table[h].astype(np.float64) for h in header])
                fmt = ["%d" if table[h].dtype.kind in "iu" else "%.17g" for h in header]
                np.savetxt(fh, data, fmt=fmt, delimiter=",")

        atomic_write(csv_path, write_csv)
    if parquet_path is not None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        tbl = pa.table({k: pa.array(v) for k, v in table.items()})
        atomic_write(parquet_path, lambda t: pq.write_table(tbl, t))


# ----------------------------------------------------------------------------------------------------------
# Bound sweeps into Zarr

STORE = "results.zarr"
DONE = "done"


def _status_attrs() -> dict:
    from .status import Status

    return {"flag_values": [int(s) for s in Status], "flag_meanings": " ".join(str(s) for s in Status),
            "comment": "amplify_jax.status.Status codes; -1: not computed yet"}


def _compute_chunk(spec: BoundSweepSpec, i: int) -> dict:
    """The data variables of chunk ``i``: name -> array of the chunk's region (+ orders)."""
    from . import bounds as B

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
    from . import bounds as B
    from . import __version__

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
    import zarr
    from . import bounds as B

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
    import zarr

    attrs = zarr.open_group(str(store), mode="r").attrs.asdict()
    if attrs.get("spec_hash") != spec.digest():
        raise ValueError(f"Expected output={str(store.parent)!r} to hold this sweep or nothing; its store holds a "
                         f"different sweep (spec hash {str(attrs.get('spec_hash'))[:12]}; remove it or choose "
                         "another --output).")


def _layout(store: Path) -> dict:
    """name -> (dims, dtype) of the store's data variables (read once per run)."""
    import zarr

    g = zarr.open_group(str(store), mode="r")
    coords = {n for n, a in g.arrays() if list(a.metadata.dimension_names or ()) == [n]}
    return {n: (tuple(a.metadata.dimension_names or ()), a.dtype) for n, a in g.arrays() if n not in coords}


def _write_chunk(spec: BoundSweepSpec, store: Path, layout: dict, i: int, values: dict) -> None:
    """Region write of chunk ``i`` (data variables only: the coordinates were written with the store)."""
    import xarray as xr

    ds = xr.Dataset({name: (layout[name][0], np.asarray(values[name]).astype(layout[name][1], copy=False))
                     for name in layout})
    region = {d: s for d, s in zip(spec.dims, spec.chunk_slices(i))}
    if spec.orders is not None:
        region["order"] = slice(0, len(spec.orders))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(str(store), region=region, mode="r+", consolidated=False)


def _run_bound_sweep(spec: BoundSweepSpec, *, progress: bool, distributed: bool, max_chunks) -> Path | None:
    out = Path(spec.output)
    out.mkdir(parents=True, exist_ok=True)
    store, done = out / STORE, out / DONE
    host, hosts = (jax.process_index(), jax.process_count()) if distributed else (0, 1)
    if not distributed:  # leftovers of a killed run (in a distributed run another host may be writing them)
        for p in out.glob(f".{STORE}.*.tmp"):
            shutil.rmtree(p, ignore_errors=True)
        for p in done.glob(".chunk-*.tmp"):
            p.unlink(missing_ok=True)
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
    import xarray as xr

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
