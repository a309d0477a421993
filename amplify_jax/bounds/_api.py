"""``evaluate`` and ``invert``: the two questions every registered bound answers."""

from __future__ import annotations

import warnings

import numpy as np

from .._core import host as _host
from .._core import validate as V
from ..accounting.calibrate import invert_monotone_host
from .._core.status import Status, status_names
from .._core.domains import Integer, Real
from .._core.registry import DECREASING, Bound, get

__all__ = ["Result", "evaluate", "invert", "bind", "TARGET_DOMAINS"]

#: The domains of an inversion's targets (what ``invert`` and invert sweeps accept).
TARGET_DOMAINS = {"target_epsilon": Real(0.0, 1e4, lo_open=True),
                  "target_delta": Real(0.0, 1.0, lo_open=True, hi_open=True)}


class Result:
    """What a bound answered, named: ``result.epsilon`` (or ``.delta``, ``.rdp``, or the parameter solved for),
    the bound's other outputs, ``.status`` (per-point :class:`~amplify_jax.status.Status` codes) and the inputs
    (``result.sigma``...).  ``.value`` is the answer whatever its name; ``to_dict()`` gives everything."""

    def __init__(self, bound: Bound, answer: str, outputs: dict, params: dict):
        self.bound, self.answer = bound, answer
        self.outputs, self.params = outputs, params

    @property
    def value(self) -> np.ndarray:
        return self.outputs[self.answer]

    @property
    def status(self) -> np.ndarray:
        return self.outputs["status"]

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        for d in (self.__dict__.get("outputs", {}), self.__dict__.get("params", {})):
            if name in d:
                return d[name]
        raise AttributeError(f"{type(self).__name__} of {self.bound.id!r} has no {name!r} "
                             f"(it has {', '.join([*self.outputs, *self.params])}).")

    def to_dict(self) -> dict:
        return {**self.params, **self.outputs}

    def __repr__(self):
        items = ", ".join(f"{k}={np.asarray(v).tolist() if np.size(v) <= 6 else '...'}" for k, v in
                          self.outputs.items() if k != "status")
        return f"Result({self.bound.id}: {items}, status={status_names(self.status)[:6]})"


def bind(bound: Bound, params: dict, *, skip=()) -> tuple:
    """Validate ``params`` against ``bound``'s declared domains: (validated dict, broadcast shape)."""
    names = [p.name for p in bound.params]
    for k in params:
        if k not in names or k in skip:
            raise ValueError(f"Expected parameters of {bound.id} ({', '.join(n for n in names if n not in skip)}), "
                             f"got {k}={params[k]!r}.")
    out = {}
    for p in bound.params:
        if p.name in skip:
            continue
        if p.name not in params:
            if p.required:
                raise ValueError(f"Expected a value for {p.name} ({p.domain.describe()}), the bound {bound.id} "
                                 f"needs it.")
            out[p.name] = p.domain.check(p.name, p.default)
        else:
            out[p.name] = p.domain.check(p.name, params[p.name])
    shape = V.broadcastable(**{k: v for k, v in out.items() if bound.param(k).domain.numeric})
    return out, shape


#: Batch sizes a bound's kernel is compiled for: a batch is padded (edge values) to the smallest that holds it,
#: and batches larger than the last run in chunks of that size, so a kernel compiles at most len(BATCH_SIZES)
#: programs whatever the grids it meets (powers of two compiled one program per power, and a new grid size
#: beyond every earlier one a new program).  Small sizes first: a kernel that is costly per point (a Monte Carlo,
#: a graph) does not pay for 256 points to answer one.
BATCH_SIZES = (1, 8, 64, 256)


class _Batch:
    """A batch's numeric inputs flattened and padded with edge values to one of ``BATCH_SIZES`` or to whole
    chunks of the largest, so that a kernel compiles once per size, not once per grid shape; ``unpad`` restores
    the grid's shape."""

    def __init__(self, shape: tuple):
        self.shape = shape
        self.n = int(np.prod(shape, dtype=np.int64))
        top = BATCH_SIZES[-1]
        self.chunk = next((b for b in BATCH_SIZES if self.n <= b), top)
        self.size = self.chunk if self.n <= top else -(-self.n // top) * top

    def pad(self, a) -> np.ndarray:
        flat = np.broadcast_to(np.asarray(a, dtype=np.float64), self.shape).ravel()
        return np.pad(flat, (0, self.size - self.n), mode="edge") if self.size > self.n else flat

    def slices(self):
        """The chunks of the padded batch, each ``chunk`` points."""
        return [slice(k, k + self.chunk) for k in range(0, self.size, self.chunk)]

    def unpad(self, a, trailing: tuple = (), dtype=None) -> np.ndarray:
        a = np.broadcast_to(np.asarray(a, dtype=dtype), (self.size,) + trailing)
        return np.array(a[: self.n].reshape(self.shape + trailing))


def _padded(bound: Bound, vals: dict, batch: _Batch) -> dict:
    return {k: batch.pad(v) if bound.param(k).domain.numeric else v for k, v in vals.items()}


def _in_chunks(batch: _Batch, run, arrays: dict) -> dict:
    """``run(**arrays)`` -> dict of outputs, over the batch's chunks (one call where there is one), concatenated
    (an output without the chunk's leading axis, such as a scalar status, is broadcast to it first)."""
    slices = batch.slices()
    if len(slices) == 1:
        return run(**arrays)
    parts = []
    for sl in slices:
        out = run(**{k: v[sl] if isinstance(v, np.ndarray) and v.shape[:1] == (batch.size,) else v
                     for k, v in arrays.items()})
        part = {}
        for k, v in out.items():
            v = np.asarray(v)
            part[k] = v if v.shape[:1] == (batch.chunk,) else np.broadcast_to(v, (batch.chunk,) + v.shape)
        parts.append(part)
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _outputs(bound: Bound, raw: dict, batch: _Batch, orders_len: int | None) -> dict:
    """The kernel's dict as arrays of the grid's shape (float64; status int32); NaN becomes a flagged safe value."""
    trailing = (orders_len,) if orders_len is not None else ()
    ans = batch.unpad(raw[bound.answer], trailing, np.float64)
    status = batch.unpad(raw.get("status", Status.OK), (), np.int32)
    nan = np.isnan(ans)
    if nan.any():
        point = nan.any(axis=-1) if orders_len is not None else nan
        status[point] = Status.ERROR
        ans[nan] = np.inf if bound.side == "upper" else 0.0
    out = {bound.answer: ans}
    for k in bound.outputs:
        out[k] = batch.unpad(raw[k])
    out["status"] = status
    return out


def evaluate(id: str, /, **params) -> Result:  # noqa: A002
    """The bound ``id`` at ``params`` (arrays broadcast), validated against its declared domains.

    Returns a :class:`Result`: the answer (``.epsilon``, ``.delta`` or ``.rdp`` with a trailing axis of
    orders), the bound's other outputs and per-point ``.status``.  Never NaN: a point where the kernel gives
    no number gets status ERROR and the safe value (+inf for an upper bound, 0 for a lower bound).
    """
    bound = get(id)
    vals, shape = bind(bound, params)
    hosted = _host.answer(f"bounds.evaluate:{id}", "bounds", "evaluate", _host.size(shape), id, **params)
    if hosted is not None:
        return Result(bound, hosted.answer, hosted.outputs, vals)
    batch = _Batch(shape)
    raw = _in_chunks(batch, bound.kernel, _padded(bound, vals, batch))
    n_orders = vals["orders"].size if bound.answer == "rdp" else None
    return Result(bound, bound.answer, _outputs(bound, raw, batch, n_orders), vals)


def invert(id: str, /, *, solve_for: str, target_epsilon=None, target_delta=None, lo=None, hi=None, rtol=1e-6,
           **params) -> Result:  # noqa: A002
    """The extreme value of the monotone parameter ``solve_for`` that meets the target, for every grid point.

    For a bound that answers eps (at ``delta``): give ``target_epsilon`` (and ``delta``, or ``target_delta``
    for it); for one that answers delta (at ``epsilon``): ``target_delta`` (and ``epsilon`` or
    ``target_epsilon``).  Where the answer decreases in the parameter (noise, dummies, n) the result is the
    smallest value that meets the target; where it increases (rate, steps) the largest.  Integers are solved
    exactly.  The search (:func:`amplify_jax.calibrate.invert_monotone_host`) brackets within ``[lo, hi]``
    (the parameter's declared search range by default), returns the feasible end of the bracket and re-checks
    it: ``result.epsilon`` (or ``.delta``) is the bound at the returned value.  ``result.status``: ok,
    infeasible (no value in the range meets the target; the value is the range's best end), at_limit (the
    whole range meets it), not_monotone or max_iter.
    """
    bound = get(id)
    tname = bound.inversion_target(solve_for)
    if solve_for in params:
        raise ValueError(f"Expected no value for {solve_for}, the parameter solved for, got {solve_for}="
                         f"{params[solve_for]!r}.")
    given, other = (target_epsilon, target_delta) if bound.answer == "epsilon" else (target_delta, target_epsilon)
    if given is None:
        raise ValueError(f"Expected {tname} for {id}, which answers {bound.answer}.")
    fixed = "delta" if bound.answer == "epsilon" else "epsilon"
    if other is not None:
        if fixed in params:
            raise ValueError(f"Expected one of {fixed} and target_{fixed}, got both ({fixed}={params[fixed]!r}).")
        params = {**params, fixed: other}
    target = TARGET_DOMAINS[tname].check(tname, given)
    vals, shape = bind(bound, params, skip=(solve_for,))
    p = bound.param(solve_for)
    dlo, dhi = p.search_range()
    lo_ = p.domain.check("lo", dlo if lo is None else lo)
    hi_ = p.domain.check("hi", dhi if hi is None else hi)
    rtol_ = V.between("rtol", rtol, 1e-15, 0.5)  # below float64's resolution a search cannot stop
    if np.ndim(rtol_):
        raise ValueError(f"Expected rtol to be one number, got rtol with shape {np.shape(rtol_)}.")
    rtol = float(rtol_)
    shape = V.broadcastable(**{tname: target}, **{k: v for k, v in vals.items() if bound.param(k).domain.numeric},
                            lo=lo_, hi=hi_)
    lo_b, hi_b = np.broadcast_arrays(np.asarray(lo_, dtype=np.float64), np.asarray(hi_, dtype=np.float64))
    if np.any(lo_b >= hi_b):  # every bound, its own solver or the generic search (secrdp.closed-form took lo > hi)
        i = np.unravel_index(np.argmax(lo_b >= hi_b), lo_b.shape)
        raise ValueError(f"Expected lo < hi, got lo={float(lo_b[i])!r}, hi={float(hi_b[i])!r}.")
    integer = isinstance(p.domain, Integer)
    # integers are searched on y = x - offset >= 1 (a domain may start at 0: no dummies); reals need lo > 0
    offset = float(np.min(lo_)) - 1.0 if integer else 0.0
    if not integer:
        V.positive("lo", lo_)

    hosted = _host.answer(f"bounds.invert:{id}", "bounds", "invert", _host.size(shape), id, solve_for=solve_for,
                          target_epsilon=target_epsilon, target_delta=target_delta, lo=lo, hi=hi, rtol=rtol, **params)
    if hosted is not None:
        return Result(bound, solve_for, hosted.outputs, {tname: target, **vals})
    batch = _Batch(shape)

    def solve(_t, _lo, _hi, **kvals):
        if solve_for in bound.solvers:
            value, achieved, status = bound.solvers[solve_for](_t, _lo, _hi, float(rtol), **kvals)
            return {"value": value, "achieved": achieved, "status": status}

        def fn(y):
            out = bound.kernel(**kvals, **{solve_for: y + offset})
            v = np.array(np.broadcast_to(np.asarray(out[bound.answer], dtype=np.float64), y.shape))
            v[np.isnan(v)] = np.inf  # no number: treated as not meeting the target
            return v

        inv = invert_monotone_host(fn, _t, lo=_lo - offset, hi=_hi - offset,
                                   feasible="above" if p.monotone == DECREASING else "below", rtol=rtol,
                                   integer=integer, method="bisection" if integer else "illinois")
        return {"value": np.asarray(inv.value) + offset, "achieved": inv.achieved, "status": inv.status}

    res = _in_chunks(batch, solve, {"_t": batch.pad(target), "_lo": batch.pad(lo_), "_hi": batch.pad(hi_),
                                    **_padded(bound, vals, batch)})
    value, achieved, status = res["value"], res["achieved"], res["status"]
    outputs = {solve_for: batch.unpad(value, (), np.float64), bound.answer: batch.unpad(achieved, (), np.float64),
               "status": batch.unpad(status, (), np.int32)}
    _warn_declared_cap(bound, p, outputs["status"], lo is None, hi is None, (dlo, dhi))
    return Result(bound, solve_for, outputs, {tname: target, **vals})


def _warn_declared_cap(bound: Bound, p, status, lo_declared: bool, hi_declared: bool, rng: tuple):
    """One cap per question (issue 27): where the search stopped at the declared end of its range (the end the
    target cannot be met beyond: hi for a parameter the answer decreases in, lo otherwise) and some points are
    infeasible, say so, naming that end and how to move it (a family's own front door to the same question
    uses the same cap, e.g. traffic.DUMMIES_CAP)."""
    decreasing = p.monotone == DECREASING
    if not (hi_declared if decreasing else lo_declared):
        return
    bad = np.asarray(status) == Status.INFEASIBLE
    if not bad.any():
        return
    end, word = (rng[1], "hi") if decreasing else (rng[0], "lo")
    warnings.warn(f"{bound.id}: no {p.name} {'up to' if decreasing else 'down to'} {end:g} (the cap of this search, "
                  f"the range {bound.id} declares for {p.name}; pass {word}= or --{word} to move it) meets the target "
                  f"at {int(bad.sum())} of {bad.size} points: status infeasible there, the answer is the cap.",
                  UserWarning, stacklevel=3)

