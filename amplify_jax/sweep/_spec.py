"""Sweep specifications: TOML (or dict) -> a validated SweepSpec (DP-SGD) or BoundSweepSpec (any bound)."""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from dataclasses import dataclass, field

import numpy as np

from .._core import validate as V
from .._core.parse import parse_values
from ._common import BOUND_QUANTITIES, EXPORT_LIMIT, FORMATS
from ._quantities import QUANTITIES


# ----------------------------------------------------------------------------------------------------------
# Grid specification


def parse_axis(name: str, value) -> np.ndarray:
    """An axis from a TOML value: a number, a list, a range "start:stop:num", or a table {start, stop, num, scale}."""
    if isinstance(value, str):
        return parse_values(name, value)
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"start", "stop", "num", "scale"})
        if unknown:
            raise ValueError(f"Expected {name} = {{start, stop, num[, scale]}}, got unknown key {name}.{unknown[0]}.")
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
    unknown = sorted(set(raw) - {"sweep", "grid"})
    if unknown:
        raise ValueError(f"Expected the tables [sweep] and [grid] only, got unknown table or key {unknown[0]!r}.")
    if not isinstance(raw.get("sweep", {}), dict):
        raise ValueError(f"Expected a [sweep] table, got sweep={raw['sweep']!r}.")
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
    unknown = sorted(set(sweep) - set(q.options))
    if unknown:  # a misspelt option would otherwise be dropped silently
        raise ValueError(f"Expected [sweep] keys quantity, mechanism, chunk_size, output, {', '.join(q.options)} "
                         f"for quantity={quantity!r}; got unknown key {unknown[0]}.")
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
    from .. import bounds as B  # lazy: the registry takes ~0.3 s to import; DP-SGD sweeps never need it

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
        tname = bound.inversion_target(solve_for)
        if solve_for in grid:
            raise ValueError(f"Expected no grid value for {solve_for}, the parameter solved for, got "
                             f"{solve_for}={grid[solve_for]!r}.")
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
