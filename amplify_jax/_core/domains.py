"""Parameter domains of the bound registry: validation of every bound's input derives from them.

A domain checks a user's value at the Python boundary and returns it in the form the kernels take (a float64
NumPy array for numbers, the string for a choice, the converted object for a graph), or raises one
``ValueError`` line that names the parameter and the offending value.  Every numeric domain has finite ends,
so NaN, inf and absurd magnitudes (1e300) are refused by the same code path as any value outside the domain.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import validate as V
from .graphs import SPEC_FORMS

__all__ = ["Domain", "Real", "Integer", "Choice", "Graph", "Orders", "check_params"]


def _fmt(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


class Domain:
    """Base class: ``check(name, value)`` returns the validated value or raises ``ValueError``."""

    numeric = False  #: values broadcast as arrays (False: one value per call, like a graph or a choice)

    def check(self, name: str, value):  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class Real(Domain):
    """A real interval; ``lo_open`` / ``hi_open`` make an end open.  Both ends are finite."""

    lo: float
    hi: float
    lo_open: bool = False
    hi_open: bool = False
    numeric = True

    def __post_init__(self):
        if not (math.isfinite(self.lo) and math.isfinite(self.hi) and self.lo < self.hi):
            raise ValueError(f"Expected finite lo < hi for a Real domain, got lo={self.lo!r}, hi={self.hi!r}.")

    def describe(self) -> str:
        return f"{'(' if self.lo_open else '['}{_fmt(float(self.lo))}, {_fmt(float(self.hi))}{')' if self.hi_open else ']'}"

    def contains(self, a: np.ndarray) -> np.ndarray:
        above = a > self.lo if self.lo_open else a >= self.lo
        below = a < self.hi if self.hi_open else a <= self.hi
        return above & below

    def check(self, name, value):
        a = V.finite(name, value)
        if V._is_tracer(a):
            return a
        bad = ~self.contains(a)
        if bad.any():
            raise ValueError(f"Expected {name} in {self.describe()}, got {name}={V._show(a, bad)}.")
        return a

    @property
    def log_scale(self) -> bool:
        """Whether the domain spans decades (a log-scaled axis or slider suits it)."""
        return self.lo >= 0 and self.hi / max(self.lo, np.finfo(float).tiny) >= 1e3 and self.hi > 0


@dataclass(frozen=True)
class Integer(Domain):
    """An interval of integers ``lo..hi`` (both ends included); values arrive as float64 arrays of integers."""

    lo: int
    hi: int
    numeric = True

    def __post_init__(self):
        if not (self.lo < self.hi and abs(self.hi) <= 2**53):
            raise ValueError(f"Expected integers lo < hi <= 2**53 for an Integer domain, got {self.lo!r}, {self.hi!r}.")

    def describe(self) -> str:
        return f"integers {self.lo}..{self.hi:.0e}" if self.hi >= 1e7 else f"integers {self.lo}..{self.hi}"

    def contains(self, a: np.ndarray) -> np.ndarray:
        return (a >= self.lo) & (a <= self.hi) & (a == np.round(a))

    def check(self, name, value):
        a = V.finite(name, value)
        if V._is_tracer(a):
            return a
        bad = a != np.round(a)
        if bad.any():
            raise ValueError(f"Expected {name} to be an integer, got {name}={V._show(a, bad)}.")
        bad = (a < self.lo) | (a > self.hi)
        if bad.any():
            raise ValueError(f"Expected {name} in {self.describe()}, got {name}={V._show(a, bad)}.")
        return a.astype(np.float64)

    @property
    def log_scale(self) -> bool:
        return self.hi / max(self.lo, 1) >= 1e3


@dataclass(frozen=True)
class Choice(Domain):
    """One of a few named options (a string; one value per call)."""

    values: tuple

    def describe(self) -> str:
        return "one of " + ", ".join(self.values)

    def check(self, name, value):
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value.item()
        if value not in self.values:
            raise ValueError(f"Expected {name} in {list(self.values)}, got {name}={value!r}.")
        return value


@dataclass(frozen=True)
class Graph(Domain):
    """A communication graph; ``convert`` turns a spec string, a path or a graph object into the kernels' form."""

    convert: Callable[[Any], Any]

    def describe(self) -> str:
        return "a graph: " + SPEC_FORMS

    def check(self, name, value):
        try:
            return self.convert(value)
        except ValueError as exc:
            msg = str(exc).splitlines()[0] if str(exc) else "invalid graph"
            raise ValueError(f"Expected {name} to be a graph: {msg}") from None


@dataclass(frozen=True)
class Orders(Domain):
    """Rényi orders alpha > 1 (a 1-D list; the answer gets a trailing axis of the same length)."""

    hi: float = 1e6
    integer: bool = False

    def describe(self) -> str:
        return f"a list of Rényi orders in (1, {_fmt(float(self.hi))}]" + (" (integers)" if self.integer else "")

    def check(self, name, value):
        a = V.orders(name, value, integer=self.integer)
        bad = a > self.hi
        if bad.any():
            raise ValueError(f"Expected {name} <= {_fmt(float(self.hi))}, got {name}={V._show(a, bad)}.")
        return a


def check_params(params, *, broadcast: bool = True, **values) -> tuple:
    """Validate a public function's numeric inputs through the registry's declarations: one statement of each
    parameter's domain (issue 29).

    ``params``: the function's :class:`~amplify_jax._core.registry.Param` objects (anything with ``name`` and a
    numeric ``domain``); ``values``: one value per name, by keyword.  Each value is checked by its Param's
    domain (the same one-line ``ValueError`` naming the parameter and the value that ``bounds.evaluate``
    raises), then all are broadcast together (a ``ValueError`` naming them where the shapes clash).  Returns
    the float64 arrays in the order of ``values``; ``broadcast=False`` checks that the shapes broadcast but
    returns each array in its own shape (for a compiled kernel that broadcasts inside: XLA's vectorized
    ``exp`` / ``log`` on the full shape can differ by an ulp from the same operation on the smaller one, so
    broadcasting first would change the kernel's last bits).  Traced values (inside a user's ``jit``) pass
    unchecked and unbroadcast, as in :mod:`amplify_jax._core.validate`.
    """
    by_name = {p.name: p for p in params}
    out = {}
    for name, value in values.items():
        p = by_name.get(name)
        if p is None or not p.domain.numeric:
            raise TypeError(f"check_params: no numeric Param named {name!r} among "
                            f"{[q.name for q in params]}.")  # a programming error, not a user's value
        out[name] = p.domain.check(name, value)
    if any(V._is_tracer(a) for a in out.values()):
        return tuple(out.values())
    shape = V.broadcastable(**out)
    if not broadcast:
        return tuple(np.asarray(a, np.float64) for a in out.values())
    return tuple(np.broadcast_to(np.asarray(a, np.float64), shape).astype(np.float64) for a in out.values())
