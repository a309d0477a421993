"""Sweep stores in the explorer: the Zarr stores of bound sweeps (:mod:`amplify_jax.sweep`) that the user opened
with ``amplify-jax explore --sweep PATH``, sliced along two axes and drawn as curves or a heat map.

The page names a store by its index in that list, never by a path: no other file of the machine is read.  A
store is opened lazily with ``xarray.open_zarr`` (documented as the way to read ``OUTPUT/results.zarr``); a
slice reads only its own cells.  Points whose ``status`` says "not computed yet" (-1, a sweep cut short) are
shown as gaps.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np

from ._api import _error, _flag, _jsonable, _number, _short
from ._render import render

__all__ = ["SweepStore", "open_store", "sweep_slice", "MAX_SLICE_AXIS", "MAX_SWEEP_CURVES"]

STORE_NAME = "results.zarr"  #: the store inside a bound sweep's output folder (amplify_jax.sweep)
MAX_SLICE_AXIS = 400  #: values of an axis of a slice; a longer axis is strided (every k-th value) and says so
MAX_SWEEP_CURVES = 12  #: curves of a slice drawn as curves; more values of the second axis are strided


class SweepStore:
    """One opened store: its path (kept on the server, never sent), its dataset (lazy) and its description."""

    def __init__(self, path: Path, ds, index: int):
        self.path, self.ds, self.index = path, ds, index
        attrs = ds.attrs
        self.variables = [v for v, da in ds.data_vars.items()
                          if v != "status" and da.dtype.kind in "fiu" and da.ndim >= 1]
        answer = attrs.get("answer")
        self.info = {
            "id": index, "name": path.parent.name if path.name == STORE_NAME else path.name,
            "bound": attrs.get("bound"), "paper": attrs.get("paper"), "theorem": attrs.get("theorem"),
            "summary": attrs.get("summary"), "quantity": attrs.get("quantity"), "answer": answer,
            "solve_for": attrs.get("solve_for") or None, "variables": self.variables,
            "default": answer if answer in self.variables else (self.variables[0] if self.variables else None),
            "dims": [{"name": d, "size": int(ds.sizes[d]), "values": _jsonable(_coord(ds, d)),
                      "log": _log_scaled(_coord(ds, d))} for d in ds.dims],
        }


def _coord(ds, dim: str) -> np.ndarray:
    if dim in ds.coords:
        return np.asarray(ds.coords[dim].values, dtype=np.float64)
    return np.arange(ds.sizes[dim], dtype=np.float64)


def _log_scaled(values: np.ndarray) -> bool:
    v = values[np.isfinite(values)]
    return bool(v.size >= 2 and v.min() > 0 and v.max() / v.min() >= 20)


def open_store(path, index: int = 0) -> SweepStore:
    """Open a bound sweep's store: its output folder (holding ``results.zarr``) or the ``.zarr`` folder itself;
    ValueError (one line naming the path) where it is not such a store."""
    import xarray as xr  # lazy: xarray takes ~420 ms to import, for sweep stores only

    p = Path(path).expanduser().resolve()
    if p.is_dir() and (p / STORE_NAME).is_dir():
        p = p / STORE_NAME
    if not p.is_dir():
        raise ValueError(f"Expected --sweep PATH to be a bound sweep's output folder (with {STORE_NAME}) or a Zarr "
                         f"store, got --sweep {path} (no such folder).")
    try:
        ds = xr.open_zarr(str(p))
    except (ValueError, OSError, KeyError, TypeError) as exc:  # zarr's errors derive from ValueError / OSError
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise ValueError(f"Expected --sweep PATH to be a Zarr store of a bound sweep, got --sweep {path} "
                         f"({type(exc).__name__}: {first}).") from None
    store = SweepStore(p, ds, index)
    if not store.variables or not ds.dims:
        raise ValueError(f"Expected a Zarr store with a numeric data variable over named dimensions, got --sweep "
                         f"{path} (variables: {list(ds.data_vars)}).")
    return store


def _stride(n: int, limit: int) -> int:
    return max(1, math.ceil(n / limit))


def sweep_slice(stores: list, body) -> dict:
    """A 2-D slice of an opened store: ``body`` = ``{"store": index, "var", "x": dim, "y": dim or null,
    "fixed": {dim: index}, "kind": "curves" | "heatmap", "logx", "logy", "logz"}``.

    Curves: one curve per value of ``y`` (at most 12; more are strided), ``{"x", "series", "svg"}``; heat map:
    ``{"x", "y", "z", "svg"}`` (matplotlib, ``pcolormesh`` with a colour bar).  Dimensions other than x and y
    are fixed at the given index (default 0).  Axes longer than 400 values are strided (``notes`` says so).
    ``{"error": "..."}`` for a bad request."""
    try:
        return _slice(stores, body)
    except ValueError as exc:
        return _error(exc)


_KEYS = ("store", "var", "x", "y", "fixed", "kind", "logx", "logy", "logz")


def _slice(stores: list, body) -> dict:
    if not isinstance(body, dict):
        raise ValueError(f"Expected a JSON object as the sweep request, got {_short(body)}.")
    unknown = [k for k in body if k not in _KEYS]
    if unknown:
        raise ValueError(f"Expected sweep request keys {', '.join(_KEYS)}, got {unknown[0]!r}.")
    if not stores:
        raise ValueError("Expected a sweep store opened with amplify-jax explore --sweep PATH; none is open.")
    idx = body.get("store", 0)
    if not (isinstance(idx, int) and not isinstance(idx, bool) and 0 <= idx < len(stores)):
        raise ValueError(f"Expected store to be the index of an opened store (0..{len(stores) - 1}), "
                         f"got store={_short(idx)}.")
    st = stores[idx]
    ds = st.ds
    var = body.get("var") or st.info["default"]
    if var not in st.variables:
        raise ValueError(f"Expected var in {st.variables}, got var={_short(var)}.")
    da = ds[var]
    dims = list(da.dims)
    x = body.get("x") or dims[0]
    if x not in dims:
        raise ValueError(f"Expected x to be a dimension of {var} ({', '.join(dims)}), got x={_short(x)}.")
    y = body.get("y") or None
    if y is not None and (y not in dims or y == x):
        raise ValueError(f"Expected y to be another dimension of {var} ({', '.join(d for d in dims if d != x)}) "
                         f"or null, got y={_short(y)}.")
    kind = body.get("kind", "curves")
    if kind not in ("curves", "heatmap"):
        raise ValueError(f"Expected kind 'curves' or 'heatmap', got kind={_short(kind)}.")
    if kind == "heatmap" and y is None:
        raise ValueError("Expected y (a second dimension) for a heat map, got y=null.")
    fixed = body.get("fixed") or {}
    if not isinstance(fixed, dict):
        raise ValueError(f"Expected fixed as an object {{dimension: index}}, got fixed={_short(fixed)}.")
    for k in fixed:
        if k not in dims:
            raise ValueError(f"Expected fixed dimensions of {var} ({', '.join(dims)}), got {k}={_short(fixed[k])}.")
    sel, at, notes = {}, {}, []
    for d in dims:
        if d in (x, y):
            continue
        i = _number(f"fixed[{d}]", fixed.get(d, 0))
        if not (i == int(i) and 0 <= i < ds.sizes[d]):
            raise ValueError(f"Expected fixed[{d}] as an index 0..{ds.sizes[d] - 1}, got {d}={_short(fixed.get(d))}.")
        sel[d] = int(i)
        at[d] = float(_coord(ds, d)[int(i)])
    sx = _stride(ds.sizes[x], MAX_SLICE_AXIS)
    sel[x] = slice(None, None, sx)
    if sx > 1:
        notes.append(f"{x}: every {sx}th of {ds.sizes[x]} values")
    if y is not None:
        sy = _stride(ds.sizes[y], MAX_SLICE_AXIS if kind == "heatmap" else MAX_SWEEP_CURVES)
        sel[y] = slice(None, None, sy)
        if sy > 1:
            notes.append(f"{y}: every {sy}th of {ds.sizes[y]} values")
    part = da.isel(sel)
    z = np.asarray(part.transpose(*([y] if y else []), x).values, dtype=np.float64)
    if "status" in ds.data_vars and set(ds["status"].dims) <= set(dims):
        sda = ds["status"].isel({k: v for k, v in sel.items() if k in ds["status"].dims})
        missing = np.asarray((sda < 0).broadcast_like(part).transpose(*([y] if y else []), x).values)
        if missing.any():
            z = np.where(missing, np.nan, z)
            notes.append(f"{int(missing.sum())} point(s) not computed yet (a sweep cut short): gaps")
    xs = _coord(ds, x)[sel[x]]
    ys = _coord(ds, y)[sel[y]] if y else None
    logx = _flag("logx", body.get("logx", _log_scaled(xs)))
    logy = _flag("logy", body.get("logy", False))
    logz = _flag("logz", body.get("logz", False))
    fixed_text = ", ".join(f"{d}={v:g}" for d, v in at.items())
    title = f"{st.info['bound'] or st.info['name']}: {var}" + (f" at {fixed_text}" if fixed_text else "")
    out = {"store": idx, "var": var, "kind": kind, "x": {"name": x, "values": _jsonable(xs), "log": logx},
           "fixed": {d: {"index": sel[d], "value": at[d]} for d in at}, "notes": notes, "title": title}
    if kind == "curves":
        rows = z if y else z[None, :]
        labels = [f"{y}={v:g}" for v in ys] if y else [var]
        out["series"] = [{"label": lab, "y": _jsonable(r)} for lab, r in zip(labels, rows)]
        drawn = render({"series": [{"label": lab, "x": out["x"]["values"], "y": s["y"]}
                                   for lab, s in zip(labels, out["series"])],
                        "xlabel": x, "ylabel": var, "title": title, "logx": logx, "logy": logy})
    else:
        out["y"] = {"name": y, "values": _jsonable(ys), "log": _log_scaled(ys)}
        out["z"] = _jsonable(z)
        drawn = {"svg": _heatmap(xs, ys, z, x, y, var, title, logx, out["y"]["log"], logz)}
    if "error" in drawn:
        raise ValueError(drawn["error"])
    out["svg"] = drawn["svg"]
    return out


def _edges(v: np.ndarray, log: bool) -> np.ndarray:
    """Cell edges around the coordinates (midpoints; geometric on a log axis)."""
    if v.size == 1:
        return np.array([v[0] * 0.9, v[0] * 1.1]) if log else np.array([v[0] - 0.5, v[0] + 0.5])
    w = np.log(v) if log else v
    mid = (w[1:] + w[:-1]) / 2
    e = np.concatenate([[2 * w[0] - mid[0]], mid, [2 * w[-1] - mid[-1]]])
    return np.exp(e) if log else e


def _heatmap(xs, ys, z, xname, yname, var, title, logx, logy, logz) -> str:
    from matplotlib import rc_context  # lazy: matplotlib takes 0.15-0.3 s to import
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, NullLocator

    finite = z[np.isfinite(z)]
    norm = None
    if logz and finite.size and (finite > 0).any():
        pos = finite[finite > 0]
        norm = LogNorm(vmin=pos.min(), vmax=pos.max())
        z = np.where(z > 0, z, np.nan)
    with rc_context({"svg.fonttype": "none", "font.size": 10}):
        fig = Figure(figsize=(8.4, 4.6), dpi=100)
        ax = fig.add_axes((0.12, 0.12, 0.75, 0.8))
        cax = fig.add_axes((0.89, 0.12, 0.025, 0.8))
        mesh = ax.pcolormesh(_edges(xs, logx), _edges(ys, logy), np.ma.masked_invalid(z), norm=norm,
                             cmap="viridis", shading="flat")
        cb = fig.colorbar(mesh, cax=cax)
        cb.set_label(var)
        for axis, set_scale, log in ((ax.xaxis, ax.set_xscale, logx), (ax.yaxis, ax.set_yscale, logy)):
            if log:
                set_scale("log")
                axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
                axis.set_minor_locator(NullLocator())
        ax.set_xlabel(xname)
        ax.set_ylabel(yname)
        ax.set_title(title.replace("$", r"\$")[:120], fontsize=10, loc="left")
        buf = io.StringIO()
        fig.savefig(buf, format="svg")
    return buf.getvalue()
