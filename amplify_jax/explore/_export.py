"""What reproduces a curve of the explorer: the ``amplify-jax evaluate`` command and the Python snippet.

``export(body)`` takes the curve request the page sent (the keys of :func:`~amplify_jax.explore.curve`) and
answers ``{"command", "argv", "python", "rows", "row_order"}`` without evaluating anything: the command prints,
with ``--csv``, one row per grid point (the command line's grid is row-major in the bound's parameter order:
``row_order`` names its numeric axes, outer first; an RDP bound has one column per order), and the snippet
makes the same single :func:`amplify_jax.bounds.evaluate` call as the page.  Each x axis and family is written as a range (``log:0.1:5:200``, ``np.geomspace(0.1, 5.0, 200)``)
only where that range gives exactly the values shown, else as the list of values; floats are written by
``repr``, so the numbers round-trip exactly.
"""

from __future__ import annotations

import shlex

import numpy as np

from ..bounds import Orders
from ._api import DEFAULT_POINTS, _error, _number, _plan, _short

__all__ = ["export"]

_KEYS = ("bound", "x", "x_values", "lo", "hi", "points", "log", "params", "family", "family_values")


def _num(v: float) -> str:
    """A float as text that parses back to the same float (integers without a decimal point)."""
    v = float(v)
    return str(int(v)) if v.is_integer() and abs(v) < 2.0 ** 53 else repr(v)


def _cli_values(xs: np.ndarray, points) -> str:
    """The flag text of a 1-D grid: a range where it gives exactly ``xs``, else a comma list."""
    if xs.size >= 2:  # the command line reads log:a:b:n as np.geomspace(a, b, n) and a:b:n as np.linspace
        a, b = float(_num(xs[0])), float(_num(xs[-1]))
        for n in sorted({int(xs.size), int(points)}):
            for fn, prefix in ([(np.geomspace, "log:")] if a > 0 else []) + [(np.linspace, "")]:
                got = fn(a, b, n)
                if got.shape == xs.shape and np.array_equal(got, xs):
                    return f"{prefix}{_num(a)}:{_num(b)}:{n}"
    return ",".join(_num(v) for v in xs)


def _py_values(xs: np.ndarray, points) -> str:
    """A NumPy expression of a 1-D grid: a range where it gives exactly ``xs``, else the list."""
    candidates = []
    if xs.size >= 2:
        for n in sorted({int(xs.size), int(points)}):
            for fn in (["geomspace"] if xs[0] > 0 else []) + ["linspace"]:
                e = f"np.{fn}({_num(xs[0])}, {_num(xs[-1])}, {n})"
                candidates += [e, f"np.unique(np.round({e}))"]
    for text in candidates:
        got = eval(text, {"np": np})  # noqa: S307 - our own expression of numbers, built just above
        if got.shape == xs.shape and np.array_equal(got, xs):
            return text
    return _py_list(xs)


def _py_list(xs: np.ndarray) -> str:
    return "np.array([" + ", ".join(repr(float(v)) for v in xs) + "])"


def _fixed_text(name, value, domain) -> tuple[str, str]:
    """(flag text, Python literal) of a fixed parameter."""
    if isinstance(domain, Orders):
        a = np.atleast_1d(value)
        return ",".join(_num(v) for v in a), "[" + ", ".join(_num(v) for v in a) + "]"
    if isinstance(value, str):
        return value, repr(value)
    return _num(value), _num(value)


def export(body) -> dict:
    """The command and Python snippet that reproduce the curve request ``body`` (see the module's docstring);
    ``{"error": "..."}`` for a bad request (the same one line as :func:`~amplify_jax.explore.curve`'s)."""
    if not isinstance(body, dict):
        return {"error": f"Expected a JSON object as the export request, got {_short(body)}."}
    unknown = [k for k in body if k not in _KEYS]
    if unknown:
        return {"error": f"Expected export request keys {', '.join(_KEYS)}, got {unknown[0]!r}."}
    for key in ("bound", "x"):
        if key not in body:
            return {"error": f"Expected {key!r} in the export request."}
    try:
        return _export(body)
    except ValueError as exc:
        return _error(exc)


def _export(body) -> dict:
    args = [body.get(k) for k in _KEYS]
    b, xp, fp, fixed, xs, fs, _, orders, _ = _plan(*args)
    points = body.get("points")
    points = int(_number("points", points)) if points is not None else DEFAULT_POINTS
    argv, py = ["evaluate", b.id], []
    for p in b.params:
        if p.name in fixed:
            flag, lit = _fixed_text(p.name, fixed[p.name], p.domain)
            argv += [p.flag, flag]
            py.append(f"    {p.name}={lit},")
    fam_py = None
    if fp is not None:
        argv += [fp.flag, ",".join(_num(v) for v in fs)]  # a few values: as a list
        fam_py = _py_list(fs)
    argv += [xp.flag, _cli_values(xs, points)]
    x_py = _py_values(xs, points)
    answer = b.answer
    if xp.name == "orders":  # value shape (family, orders)
        shape = f"({fs.size}, {xs.size})" if fs is not None else f"({xs.size},)"
        if fs is not None:
            py.append(f"    {fp.name}={fam_py},   # one curve per {fp.name}")
        py.append(f"    orders={x_py},   # the x axis")
        reading = f"res.rdp[i] is the curve of {fp.name}[i]" if fs is not None else "res.rdp is the curve"
    elif fp is not None and fp.name == "orders":  # value shape (x, orders)
        py.append(f"    {xp.name}={x_py},   # the x axis")
        py.append(f"    orders={fam_py},   # one curve per order")
        shape, reading = f"({xs.size}, {fs.size})", "res.rdp[:, j] is the curve of order j"
    elif fs is not None:
        py.append(f"    {xp.name}={x_py}[None, :],   # the x axis")
        py.append(f"    {fp.name}={fam_py}[:, None],   # one curve per {fp.name}")
        shape = f"({fs.size}, {xs.size})" + (f" + ({orders.size},)" if orders is not None else "")
        reading = f"res.{answer}[i] is the curve of {fp.name}[i]" + (", one column per order"
                                                                     if orders is not None else "")
    else:
        py.append(f"    {xp.name}={x_py},   # the x axis")
        shape = f"({xs.size},)" if orders is None else f"({xs.size}, {orders.size})"
        reading = f"res.{answer}" + (": one column per order" if orders is not None else "")
    python = "\n".join(["import numpy as np", "from amplify_jax import bounds", "",
                        "res = bounds.evaluate(", f"    {b.id!r},", *py, ")",
                        f"res.{answer}   # shape {shape}: {reading}; res.status: per point"])
    argv.append("--csv")
    n_rows = xs.size * (fs.size if fs is not None and "orders" not in (xp.name, fp.name) else 1)
    if xp.name == "orders" and fs is not None:
        n_rows = fs.size
    elif fp is not None and fp.name == "orders":
        n_rows = xs.size
    axes = [p.name for p in b.params if p.name in (xp.name, fp.name if fp else None) and p.name != "orders"]
    return {"bound": b.id, "argv": argv, "command": shlex.join(["amplify-jax", *argv]), "python": python,
            "rows": int(n_rows), "row_order": axes}
