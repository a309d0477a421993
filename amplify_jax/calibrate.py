"""The optimizer layer: invert any monotone bound, batched, always on the safe side.

:func:`invert_monotone` finds, for every element of a batch, the extreme parameter x that keeps a bound
``fn(x, *args) <= target``: the minimal x when the bound decreases in x (noise level, number of dummies),
the maximal x when it increases (sampling or check-in rate, number of steps).  It is a bracketed bisection in
log space inside one ``lax.while_loop`` (Style: optimistix's bisection, dp_accounting's
``inverse_monotone_function``), but unlike a root finder it returns the endpoint on the feasible side,
re-checks it, and stops on the width of the bracket in the parameter, not on |f - target|.  One element
that cannot be met does not fail the batch: it gets a status code.

Status codes (array ``status``):

- ``OK`` (0): ``value`` is feasible and within ``rtol`` (relative, or 1 for integers) of the boundary.
- ``INFEASIBLE`` (1): no x in [lo, hi] meets the target; ``value`` is the least bad end of the range and
  ``achieved`` says what it gives.  Never NaN.
- ``AT_LIMIT`` (2): the whole range is feasible; ``value`` is the extreme end of the range (lo for
  ``feasible="above"``, hi for ``"below"``).
- ``NOT_MONOTONE`` (3): the re-check at the returned value failed (the bound was not monotone).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
import jax
import jax.numpy as jnp

from . import _validate as V
from .numerics import float64_jit, x64_scope

__all__ = [
    "Inversion",
    "invert_monotone",
    "invert_monotone_kernel",
    "OK",
    "INFEASIBLE",
    "AT_LIMIT",
    "NOT_MONOTONE",
    "STATUS_NAMES",
]

OK, INFEASIBLE, AT_LIMIT, NOT_MONOTONE = 0, 1, 2, 3
STATUS_NAMES = {OK: "ok", INFEASIBLE: "infeasible", AT_LIMIT: "at_limit", NOT_MONOTONE: "not_monotone"}


class Inversion(NamedTuple):
    value: jax.Array  #: the feasible endpoint (see status)
    status: jax.Array  #: int32 status code per element
    achieved: jax.Array  #: fn(value, *args), re-computed


def invert_monotone_kernel(fn, target, args, lo, hi, *, above: bool, rtol, integer: bool, max_iter: int = 200):
    """Pure jnp body of :func:`invert_monotone` (for use inside other kernels; all arrays broadcast).

    ``above=True``: feasible set [x*, hi], returns x*; ``above=False``: feasible set [lo, x*], returns x*.
    Bisection on log x (integers: on x, rounded toward the infeasible side and stopped at width 1).
    """
    target, lo, hi = jnp.broadcast_arrays(jnp.asarray(target, jnp.float64), jnp.asarray(lo, jnp.float64),
                                          jnp.asarray(hi, jnp.float64))
    args = tuple(jnp.broadcast_to(jnp.asarray(a), target.shape) for a in args)

    def ok(x):
        v = fn(x, *args)
        return (v <= target) & ~jnp.isnan(v)

    # The feasible and infeasible ends of the range.
    far, near = (hi, lo) if above else (lo, hi)  # far end: most private; near end: the candidate answer side
    far_ok = ok(far)
    near_ok = ok(near)
    feas = far
    infeas = near

    def width_ok(f, i):
        if integer:
            return jnp.abs(f - i) <= 1.0
        return jnp.abs(jnp.log(f) - jnp.log(i)) <= jnp.log1p(rtol)

    active0 = far_ok & ~near_ok & ~width_ok(feas, infeas)

    def cond(s):
        it, feas, infeas, active = s
        return (it < max_iter) & jnp.any(active)

    def body(s):
        it, feas, infeas, active = s
        mid = jnp.sqrt(feas * infeas)
        if integer:
            # Round toward the infeasible end so the bracket strictly shrinks.
            mid = jnp.where(feas > infeas, jnp.floor(mid), jnp.ceil(mid))
            mid = jnp.where(mid == feas, jnp.where(feas > infeas, feas - 1.0, feas + 1.0), mid)
            mid = jnp.where(mid == infeas, jnp.where(feas > infeas, infeas + 1.0, infeas - 1.0), mid)
        m_ok = ok(mid)
        nfeas = jnp.where(active & m_ok, mid, feas)
        ninf = jnp.where(active & ~m_ok, mid, infeas)
        nactive = active & ~width_ok(nfeas, ninf)
        return it + 1, nfeas, ninf, nactive

    _, feas, infeas, _ = jax.lax.while_loop(cond, body, (0, feas, infeas, active0))
    value = jnp.where(near_ok, near, feas)
    achieved = fn(value, *args)
    recheck = (achieved <= target) & ~jnp.isnan(achieved)
    status = jnp.where(
        ~far_ok,
        INFEASIBLE,
        jnp.where(near_ok, AT_LIMIT, jnp.where(recheck, OK, NOT_MONOTONE)),
    ).astype(jnp.int32)
    value = jnp.where(far_ok, value, far)
    achieved = jnp.where(far_ok, achieved, fn(far, *args))
    return Inversion(value, status, achieved)


@float64_jit(static_argnames=("fn", "above", "integer", "max_iter"))
def _invert_jit(fn, target, args, lo, hi, rtol, above, integer, max_iter):
    return invert_monotone_kernel(fn, target, args, lo, hi, above=above, rtol=rtol, integer=integer,
                                  max_iter=max_iter)


def invert_monotone(
    fn: Callable,
    target,
    *,
    args=(),
    lo,
    hi,
    feasible: str = "above",
    rtol=1e-6,
    integer: bool = False,
    max_iter: int = 200,
) -> Inversion:
    """The extreme parameter x in [lo, hi] with ``fn(x, *args) <= target``, for every element of a batch.

    ``fn`` is a pure jnp function, monotone in x (decreasing for ``feasible="above"``, increasing for
    ``"below"``), hashable and reused across calls so that compiled code is reused (a module-level function
    or a ``functools.partial`` of one; new targets and args are arrays and do not recompile).  ``target``,
    ``args``, ``lo`` and ``hi`` broadcast.  ``lo`` must be > 0 (the search is in log space).

    Returns :class:`Inversion` ``(value, status, achieved)``; see the module docstring for the status codes.
    The returned value always satisfies ``achieved <= target`` when status is OK or AT_LIMIT.
    """
    V.one_of("feasible", feasible, ("above", "below"))
    t = V.finite("target", target)
    lo_ = V.positive("lo", lo)
    hi_ = V.positive("hi", hi)
    if np.any(np.asarray(lo_) >= np.asarray(hi_)):
        raise ValueError(f"Expected lo < hi, got lo={np.min(lo_)!r}, hi={np.max(hi_)!r}.")
    r = V.positive("rtol", rtol)
    if integer:
        lo_ = V.integer("lo", lo_, minimum=1).astype(np.float64)
        hi_ = V.integer("hi", hi_, minimum=1).astype(np.float64)
    shape = V.broadcastable(target=t, lo=lo_, hi=hi_, **{f"args[{i}]": np.asarray(a) for i, a in enumerate(args)})
    with x64_scope():
        b = lambda x: jnp.broadcast_to(jnp.asarray(x, dtype=jnp.float64), shape)  # noqa: E731
        return _invert_jit(fn, b(t), tuple(b(a) for a in args), b(lo_), b(hi_), jnp.asarray(r, jnp.float64),
                           feasible == "above", bool(integer), int(max_iter))
