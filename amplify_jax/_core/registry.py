"""The declarations: :class:`Param`, :class:`Bound` and the table of registered bounds."""

from __future__ import annotations

import builtins
import importlib
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from .domains import Domain, Integer, Orders, Real

__all__ = ["Param", "Bound", "register", "get", "list", "ANSWERS", "INCREASING", "DECREASING", "REQUIRED"]

ANSWERS = ("epsilon", "delta", "rdp")  #: eps at delta, delta at eps, RDP at orders
INCREASING, DECREASING = +1, -1  #: the direction in which the answer moves when the parameter grows


class _Required:
    def __repr__(self):
        return "REQUIRED"


REQUIRED = _Required()  #: marker: the parameter has no default

_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*(\.[a-z0-9]+(-[a-z0-9]+)*)?$")


@dataclass(frozen=True)
class Param:
    """One parameter of a bound.

    ``monotone``: :data:`INCREASING` if the answer (eps, delta or the RDP curve) grows with the parameter,
    :data:`DECREASING` if it shrinks, 0 if neither is claimed; a monotone parameter can be solved for by
    :func:`amplify_jax.bounds.invert`.  ``search``: the bracket the inversion searches by default (the domain's
    ends where not given; it must lie in the domain and, for a real parameter, be > 0).
    """

    name: str
    domain: Domain
    doc: str = ""
    monotone: int = 0
    search: tuple | None = None
    default: Any = REQUIRED

    def __post_init__(self):
        if not self.name.isidentifier():
            raise ValueError(f"Expected a Python identifier as parameter name, got name={self.name!r}.")
        if self.monotone not in (-1, 0, 1):
            raise ValueError(f"Expected monotone in (-1, 0, 1), got monotone={self.monotone!r}.")
        if self.monotone and not isinstance(self.domain, (Real, Integer)):
            raise ValueError(f"Expected a numeric domain for the monotone parameter {self.name!r}.")

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def search_range(self) -> tuple:
        """The default bracket (lo, hi) of an inversion over this parameter."""
        if self.search is not None:
            return tuple(float(v) for v in self.search)
        d = self.domain
        if isinstance(d, Integer):
            return float(d.lo), float(d.hi)
        lo = d.lo if d.lo > 0 else None
        if lo is None:
            raise ValueError(f"Expected a search range for parameter {self.name!r} (its domain starts at {d.lo}).")
        return float(lo), float(d.hi)


@dataclass(frozen=True)
class Bound:
    """A bound of a paper, declared once.

    ``kernel(**params)`` receives every parameter validated by its domain (NumPy float64 arrays that broadcast
    for numbers, the string for a choice, the converted graph) and returns a dict of arrays: the answer under
    the key ``answer`` (``"epsilon"``, ``"delta"`` or ``"rdp"``), every name of ``outputs``, and optionally
    ``"status"`` (:class:`amplify_jax.status.Status` codes, e.g. FALLBACK where the theorem's conditions fail).
    ``example``: one valid value per required parameter (scalars; a graph as its spec string): the point the
    tests, the README and the explorer start from.  It should be quick to evaluate.
    ``side``: ``"upper"`` (the usual: a guarantee) or ``"lower"`` (what no analysis can beat).
    ``solvers``: optional dedicated inversions, ``{param: fn(target, lo, hi, rtol, **params) -> (value, answer
    at value, status)}``, used by :func:`amplify_jax.bounds.invert` instead of its generic search (a family's
    own calibration, e.g. DP-SGD's staged search); they must return the feasible end, re-checked.
    """

    id: str
    paper: str
    theorem: str
    summary: str
    params: tuple
    answer: str
    kernel: Callable = field(repr=False, compare=False)
    example: dict = field(default_factory=dict, compare=False)
    outputs: tuple = ()
    side: str = "upper"
    notes: str = ""
    solvers: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        if not _ID.match(self.id):
            raise ValueError(f"Expected an id like 'family.name-with-dashes', got id={self.id!r}.")
        if self.answer not in ANSWERS:
            raise ValueError(f"Expected answer in {ANSWERS}, got answer={self.answer!r} (bound {self.id!r}).")
        if self.side not in ("upper", "lower"):
            raise ValueError(f"Expected side 'upper' or 'lower', got side={self.side!r} (bound {self.id!r}).")
        names = [p.name for p in self.params]
        if len(set(names)) != len(names):
            raise ValueError(f"Expected distinct parameter names, got {names} (bound {self.id!r}).")
        need = {"epsilon": "delta", "delta": "epsilon", "rdp": "orders"}[self.answer]
        if need not in names:
            raise ValueError(f"Expected a parameter {need!r} in bound {self.id!r}, which answers {self.answer}.")
        missing = [p.name for p in self.params if p.required and p.name not in self.example]
        if missing or set(self.example) - set(names):
            raise ValueError(f"Expected an example value for every required parameter of {self.id!r} and no other, "
                             f"got example={self.example!r}.")
        if self.answer == "rdp" and not isinstance(self.param("orders").domain, Orders):
            raise ValueError(f"Expected the Orders domain for 'orders' (bound {self.id!r}).")

    @property
    def family(self) -> str:
        """The paper's subpackage (``"shuffle"`` for ``"shuffle.clones"``); ``"accounting"`` for top-level ids."""
        return self.id.split(".")[0] if "." in self.id else "accounting"

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise ValueError(f"Expected a parameter of {self.id!r} ({', '.join(p.name for p in self.params)}), "
                         f"got {name!r}.")

    def inversion_target(self, solve_for: str) -> str:
        """The target an inversion for ``solve_for`` takes (``"target_epsilon"`` or ``"target_delta"``), or a
        ValueError where the bound cannot be inverted for it (an RDP curve; a parameter not declared monotone)."""
        if self.answer == "rdp":
            raise ValueError(f"Expected a bound that answers epsilon or delta for invert, got {self.id!r} "
                             "(an RDP curve).")
        if solve_for not in self.solvable:
            raise ValueError(f"Expected solve_for in {builtins.list(self.solvable)} (the monotone parameters of "
                             f"{self.id}), got solve_for={solve_for!r}.")
        return "target_" + self.answer

    @property
    def solvable(self) -> tuple:
        """Names of the parameters :func:`invert` can solve for (declared monotone)."""
        fixed = {"epsilon": "delta", "delta": "epsilon", "rdp": "orders"}[self.answer]
        if self.answer == "rdp":
            return ()
        return tuple(p.name for p in self.params if p.monotone and p.name != fixed)


_REGISTRY: dict = {}


def register(bound: Bound) -> Bound:
    """Add ``bound`` to the registry (its id must be new); returns it, so a module can keep a name for it."""
    if bound.id in _REGISTRY:
        raise ValueError(f"Expected a new bound id, got id={bound.id!r} (already registered).")
    _REGISTRY[bound.id] = bound
    return bound


_DISCOVERED = []
_DISCOVERY_LOCK = threading.RLock()


#: Where each family declares its bounds, by id prefix (an id without a dot, such as ``dpsgd``, belongs to the
#: accounting layer).  A module listed here is imported on first use of one of its ids (``import amplify_jax``
#: loads no paper); a new family adds one line.
FAMILIES = {
    "": "accounting._bounds",
    "rdp": "accounting._bounds",
    "pld": "accounting._bounds",
    "checkin": "checkin._bounds",
    "network": "network._bounds",
    "secrdp": "secrdp._bounds",
    "shuffle": "shuffle._bounds",
    "traffic": "traffic._bounds",
}


def _discover(family: str | None = None) -> None:
    """Import the declarations of ``family`` (an id prefix of :data:`FAMILIES`), or of every family (None),
    once: importing them registers their bounds."""
    if _DISCOVERED:
        return
    pkg = __name__.rsplit(".", 2)[0]  # amplify_jax (or its host twin, amplify_jax._twin)
    if family is not None:
        if family in FAMILIES:
            importlib.import_module(f"{pkg}.{FAMILIES[family]}")
        return
    with _DISCOVERY_LOCK:  # threads of the explorer's server: none sees a half-filled registry
        if _DISCOVERED:
            return
        for module in sorted(set(FAMILIES.values())):
            importlib.import_module(f"{pkg}.{module}")
        _DISCOVERED.append(True)


def get(id: str) -> Bound:  # noqa: A002 - the registry's natural word
    """The bound registered under ``id`` (``ValueError`` naming it if there is none)."""
    if isinstance(id, str) and id not in _REGISTRY:
        _discover(id.split(".")[0] if "." in id else "")  # its family first: one paper, not all of them
        if id not in _REGISTRY:
            _discover()
    try:
        return _REGISTRY[id]
    except (KeyError, TypeError):
        raise ValueError(f"Expected a registered bound id (see amplify_jax.bounds.list()), got id={id!r}.") from None


def list(family: str | None = None) -> builtins.list:  # noqa: A001 - bounds.list() is the public name
    """Every registered bound (of one ``family`` if given), sorted by id."""
    _discover()
    out = [b for _, b in sorted(_REGISTRY.items())]
    if family is not None:
        out = [b for b in out if b.family == family]
    return out
