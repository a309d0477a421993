"""Validation at the Python boundary: every public function checks its inputs here.

Each helper converts an array-like to a NumPy array, checks it, and raises a one-line ``ValueError`` that
names the parameter and the offending value (``Expected sigma > 0, got sigma=-1.0.``).  Traced values
(inside a user's ``jit``) cannot be inspected; they are passed through unchecked.
"""

from __future__ import annotations

import numpy as np
import jax

__all__ = [
    "finite",
    "positive",
    "nonnegative",
    "probability",
    "unit_open",
    "between",
    "integer",
    "orders",
    "scalar",
    "count",
    "tolerance",
    "RTOL_RANGE",
    "broadcastable",
    "one_of",
]


def _is_tracer(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def _show(a: np.ndarray, bad: np.ndarray | None = None):
    """The offending value: the first bad element for arrays, the value itself for scalars."""
    if a.ndim == 0:
        return repr(a.item())
    if bad is not None and bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        return f"{a[idx].item()!r} (at index {idx})"
    return np.array2string(a, threshold=6)


def _as_float(name: str, x, allow_empty: bool = False) -> np.ndarray:
    if _is_tracer(x):
        return x
    if isinstance(x, (str, bytes)):  # np.asarray("1.5", float) would accept the text of a number
        raise ValueError(f"Expected {name} to be a number or an array of numbers, got {name}={x!r}.")
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"Expected {name} to be a number or an array of numbers, got "
                         f"{name}={_short(x)}.") from None
    if a.size == 0 and not allow_empty:
        raise ValueError(f"Expected {name} to be a number or a non-empty array, got {name} with shape {a.shape} "
                         "(empty).")
    bad = ~np.isfinite(a)
    if bad.any():
        raise ValueError(f"Expected {name} to be finite, got {name}={_show(a, bad)}.")
    return a


def _short(x) -> str:
    """A one-line repr of a user's value, at most 80 characters."""
    text = " ".join(repr(x).split())
    return text if len(text) <= 80 else text[:77] + "..."


def finite(name: str, x) -> np.ndarray:
    """A finite float64 array (not empty)."""
    return _as_float(name, x)


def _check(name, a, bad, what):
    if _is_tracer(a):
        return a
    if np.any(bad):
        raise ValueError(f"Expected {name} {what}, got {name}={_show(a, np.asarray(bad))}.")
    return a


def positive(name: str, x) -> np.ndarray:
    a = _as_float(name, x)
    return a if _is_tracer(a) else _check(name, a, ~(a > 0), "> 0")


def nonnegative(name: str, x) -> np.ndarray:
    a = _as_float(name, x)
    return a if _is_tracer(a) else _check(name, a, ~(a >= 0), ">= 0")


def probability(name: str, x) -> np.ndarray:
    a = _as_float(name, x)
    return a if _is_tracer(a) else _check(name, a, ~((a >= 0) & (a <= 1)), "in [0, 1]")


def unit_open(name: str, x) -> np.ndarray:
    a = _as_float(name, x)
    return a if _is_tracer(a) else _check(name, a, ~((a > 0) & (a < 1)), "in (0, 1)")


def between(name: str, x, lo: float, hi: float) -> np.ndarray:
    """A finite float64 array in [lo, hi] (the range a kernel supports, e.g. where its static sizes stay finite)."""
    a = _as_float(name, x)
    return a if _is_tracer(a) else _check(name, a, ~((a >= lo) & (a <= hi)), f"in [{lo:g}, {hi:g}]")


def integer(name: str, x, minimum=None, allow_empty: bool = False) -> np.ndarray:
    """An integer-valued array (floats like 1e6 accepted), as int64, optionally >= minimum (``allow_empty``: an
    empty array is accepted, e.g. an empty set of users)."""
    a = _as_float(name, x, allow_empty=allow_empty)
    if _is_tracer(a):
        return a
    _check(name, a, a != np.round(a), "to be an integer")
    if minimum is not None:
        _check(name, a, a < minimum, f">= {minimum}")
    if np.any(np.abs(a) > 2**62):
        raise ValueError(f"Expected {name} < 2**62, got {name}={_show(a, np.abs(a) > 2**62)}.")
    return np.round(a).astype(np.int64)


def orders(name: str, x, integer: bool = False, maximum: float | None = None) -> np.ndarray:
    """A 1-D array of Rényi orders alpha > 1 (integers >= 2 if ``integer``; at most ``maximum`` if given: the
    largest order a curve supports, documented where it is set)."""
    a = _as_float(name, x)
    if _is_tracer(a):
        return a
    a = np.atleast_1d(a)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"Expected {name} to be a non-empty 1-D list of orders, got shape {a.shape}.")
    _check(name, a, ~(a > 1), "> 1")
    if integer:
        _check(name, a, a != np.round(a), "to be integers >= 2 (this bound needs integer orders)")
    if maximum is not None:
        _check(name, a, a > maximum, f"<= {maximum:g}")
    return a


def scalar(name: str, x, check=finite) -> float:
    """One number (not an array of several), checked by ``check`` (e.g. :func:`unit_open`), as a Python float:
    for options that fix one search or one static size for a whole batch (``rtol``, ``tail_tol``...)."""
    a = check(name, x)
    if _is_tracer(a):
        return a
    if np.ndim(a) != 0:
        raise ValueError(f"Expected {name} to be a single number, got {name} with shape {np.shape(a)}.")
    return float(a)


#: Relative tolerances a search accepts (the registry's ``invert`` too): below float64's resolution a search cannot
#: stop (rtol = 1e-300 ran into the iteration limit or failed), above 1/2 it is no tolerance (1e300 ran a search
#: that stops at once, or hung).
RTOL_RANGE = (1e-15, 0.5)


def tolerance(name: str, x) -> float:
    """A search's relative tolerance: one number in :data:`RTOL_RANGE`, as a Python float."""
    return scalar(name, x, lambda n, v: between(n, v, *RTOL_RANGE))


def count(name: str, x, minimum: int = 0, maximum: int | None = None) -> int:
    """One integer in [minimum, maximum], as a Python int: an iteration count or a static size."""
    a = integer(name, x, minimum=minimum)
    if _is_tracer(a):
        return a
    if np.ndim(a) != 0:
        raise ValueError(f"Expected {name} to be a single integer, got {name} with shape {np.shape(a)}.")
    if maximum is not None and a > maximum:
        raise ValueError(f"Expected {name} <= {maximum}, got {name}={int(a)!r}.")
    return int(a)


def one_of(name: str, x, choices) -> str:
    if x not in choices:
        raise ValueError(f"Expected {name} in {sorted(choices)}, got {name}={x!r}.")
    return x


def broadcastable(**named) -> tuple:
    """The broadcast shape of the named arrays, or a ValueError naming the parameters that clash."""
    shapes = {k: np.shape(v) for k, v in named.items()}
    try:
        return np.broadcast_shapes(*shapes.values())
    except ValueError:
        desc = ", ".join(f"{k} with shape {s}" for k, s in shapes.items())
        raise ValueError(f"Expected parameters whose shapes broadcast, got {desc}.") from None
