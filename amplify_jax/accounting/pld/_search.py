"""The PLD calibration's search on the host, in NumPy: a bracketed bisection in log x that evaluates only the
points still searching.

It is the search of :func:`amplify_jax.calibrate.invert_monotone_host` (bisection, continuous x: the same
steps, the same feasible endpoint, the same status codes), driven without JAX: that driver keeps its state
in JAX arrays of the batch's shape, so every new batch size compiled its small update programs again (issue
25: 20-26 compilations per call of ``pld.dpsgd_calibrate_sigma``), and it evaluated every point at every
step, converged or not (5000 targets took 484 s, most of them re-evaluating points already found).  Here the
state is NumPy and ``fn`` sees only the points whose bracket is still open; since ``fn`` acts elementwise
(the PLD kernels compose each point on its own), each point's steps and answer are those of the batched
search.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from ..._core.status import Status

__all__ = ["HostInversion", "bisect_log"]

_OK, _INFEASIBLE, _AT_LIMIT, _NOT_MONOTONE, _MAX_ITER = (int(Status.OK), int(Status.INFEASIBLE),
                                                         int(Status.AT_LIMIT), int(Status.NOT_MONOTONE),
                                                         int(Status.MAX_ITER))


class HostInversion(NamedTuple):
    value: np.ndarray  #: the feasible endpoint (see status)
    status: np.ndarray  #: int32 status code per element
    achieved: np.ndarray  #: fn at value


def _feasible(v, target):
    return (v <= target) & ~np.isnan(v)


def _width_ok(f, i, rtol):
    return np.abs(np.log(f) - np.log(i)) <= np.log1p(rtol)


def bisect_log(fn: Callable, target, lo, hi, rtol, max_iter: int = 200) -> HostInversion:
    """The minimal x in [lo, hi] with ``fn(x, idx) <= target`` for each element of the flat array
    ``target``, for ``fn`` non-increasing in x (the feasible side is above).  ``fn(x, idx)`` answers at the
    points x of the elements ``idx`` (flat indices into ``target``), elementwise.  ``lo``, ``hi``:
    scalars or arrays like ``target`` (0 < lo < hi); ``rtol`` a scalar.

    Steps (those of ``calibrate.invert_monotone_kernel`` with ``above=True``): fn at hi, then at lo; the
    search goes on only where hi is feasible, lo is not, and the bracket is wider than rtol (relative);
    then at the geometric midpoint of the bracket, the feasible end moving down or the infeasible one up,
    until the bracket is within rtol (``|log f - log i| <= log1p(rtol)``) or ``max_iter`` midpoints.
    Returns the feasible end (re-checked: ``achieved`` is fn there) with status ``ok``; ``at_limit`` (lo
    is feasible: lo), ``infeasible`` (hi is not: hi, achieved fn(hi)), ``max_iter`` (feasible, bracket
    still open) or ``not_monotone`` (the value found is not feasible)."""
    t = np.asarray(target, dtype=np.float64).reshape(-1)
    size = t.shape[0]
    far = np.broadcast_to(np.asarray(hi, dtype=np.float64), t.shape).copy()
    near = np.broadcast_to(np.asarray(lo, dtype=np.float64), t.shape).copy()
    every = np.arange(size)
    out = np.zeros(size, dtype=np.int32)
    if size == 0:
        return HostInversion(np.zeros(0), out, np.zeros(0))

    def evaluate(x, idx):
        f = np.asarray(fn(x, idx), dtype=np.float64).reshape(-1)
        if f.shape != idx.shape:
            raise ValueError(f"Expected fn to return {idx.size} values, got shape {f.shape}.")
        return f

    f_far = evaluate(far, every)
    f_near = evaluate(near, every)
    feas, infeas = far.copy(), near.copy()
    f_feas, f_inf = f_far.copy(), f_near.copy()
    active = _feasible(f_far, t) & ~_feasible(f_near, t) & ~_width_ok(far, near, rtol)
    it = 2
    while it < max_iter + 2 and active.any():
        idx = np.flatnonzero(active)
        x = np.sqrt(feas[idx] * infeas[idx])
        f = evaluate(x, idx)
        ok = _feasible(f, t[idx])
        take, drop = idx[ok], idx[~ok]
        feas[take], f_feas[take] = x[ok], f[ok]
        infeas[drop], f_inf[drop] = x[~ok], f[~ok]
        active[idx] = ~_width_ok(feas[idx], infeas[idx], rtol)
        it += 1
    near_ok = _feasible(f_near, t)
    far_ok = _feasible(f_far, t)
    value = np.where(near_ok, near, feas)
    achieved = np.where(near_ok, f_near, f_feas)
    status = np.where(~far_ok, _INFEASIBLE,
                      np.where(near_ok, _AT_LIMIT,
                               np.where(_feasible(achieved, t), np.where(active, _MAX_ITER, _OK), _NOT_MONOTONE)))
    value = np.where(far_ok, value, far)
    achieved = np.where(far_ok, achieved, f_far)
    return HostInversion(value, status.astype(np.int32), achieved)
