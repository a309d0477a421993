"""What the PLD front doors answer, and the checks of what they accept: the result tuples, the noise
parameters' ranges, and :func:`answer`, the one path from a broadcast batch to (upper, lower, status).

Every value comes as (pessimistic, optimistic): the first is the sound answer (an upper bound of the true eps
or delta), the second a lower bound of the truth from the same pass, so their gap says how tight it is.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from .. import _validate as V
from ..numerics import x64_scope
from ..status import Status
from ._grid import AUTO_RTOL, AUTO_RTOL_DELTA, DEFAULT_GRID_SIZE, auto_refined_size, check_grid_size, flat_padded, unpad
from ._queries import delta_batch, eps_batch

__all__ = ["PldEpsilon", "PldDelta", "SIGMA_RANGE", "SCALE_RANGE", "EPS0_RANGE", "check_parameter", "status_of",
           "answer", "auto_check", "never_looks"]

#: Noise multipliers the PLD route accepts (the loss range is ~1 / (2 sigma^2): below 0.05 it leaves float64).
SIGMA_RANGE = (0.05, 1e4)
#: Laplace scales and eps0 the PLD route accepts (its loss range, 1 / b or eps0, must stay in float64's exp)
SCALE_RANGE = (1e-2, 1e6)
EPS0_RANGE = (0.0, 300.0)

_RANGES = {"gaussian": SIGMA_RANGE, "laplace": SCALE_RANGE, "randomized-response": EPS0_RANGE,
           "wor-gaussian": SIGMA_RANGE}
_NAMES = {"gaussian": "sigma", "laplace": "scale", "randomized-response": "eps0", "wor-gaussian": "sigma"}


class PldEpsilon(NamedTuple):
    """eps (sound: an upper bound), eps_lower (a lower bound of the true eps, same pass), status."""

    epsilon: jax.Array
    epsilon_lower: jax.Array
    status: jax.Array


class PldDelta(NamedTuple):
    """delta (sound: an upper bound), delta_lower (a lower bound of the true delta), status."""

    delta: jax.Array
    delta_lower: jax.Array
    status: jax.Array


def check_parameter(kind, value, name=None):
    """The mechanism's noise parameter as a float64 array, or a ValueError naming it: sigma in SIGMA_RANGE,
    the Laplace scale in SCALE_RANGE, eps0 in EPS0_RANGE (open at 0)."""
    name = _NAMES[kind] if name is None else name
    a = V.finite(name, value)
    lo, hi = _RANGES[kind]
    bad = (a < lo) | (a > hi) if kind != "randomized-response" else (a <= lo) | (a > hi)
    if np.any(bad):
        left = "(" if kind == "randomized-response" else "["
        raise ValueError(f"{name} must be in {left}{lo}, {hi}] for the PLD accountant, got {name}={float(a[bad].ravel()[0])!r}")
    return a


def status_of(value):
    """OK where the sound value is finite, ERROR where it is +inf (the grid was too coarse for the request)."""
    return np.where(np.isfinite(np.asarray(value)), int(Status.OK), int(Status.ERROR)).astype(np.int32)


def answer(query: str, kind: str, shape: tuple, grid_size, a, q, steps, x):
    """eps at delta = x (``query="epsilon"``) or delta at eps = x (``"delta"``) of mechanism ``kind`` with
    parameter ``a``, rate q, composed ``steps`` times, for checked arrays broadcast to ``shape``: a
    :class:`PldEpsilon` or :class:`PldDelta` of that shape.

    ``grid_size``: a power of two (every point on that grid, ``check_grid_size``), or None, the automatic
    grid (issue 13's tightness, ``_grid.AUTO_RTOL``): every point on DEFAULT_GRID_SIZE points at its window's
    step h and at 2h (4h too where the change is large), then the points whose estimated error exceeds
    AUTO_RTOL again on the finer grid ``auto_refined_size`` gives.  Each point answers the least of its upper
    values and the largest of its lower values: each is a bound of the truth, so their intersection is too."""
    batch, result = (eps_batch, PldEpsilon) if query == "epsilon" else (delta_batch, PldDelta)
    # q = 0 (the mechanism never looks at the data) or no step: both output laws are the same, so eps = 0 at
    # every delta and delta = 0 at every eps >= 0, exactly (the grid answered +inf, status error, or 1)
    idle = never_looks(shape, q, steps)
    if idle.all():  # nothing to compute (no kernel runs)
        zero = np.zeros(shape)
        return result(zero, zero, status_of(zero))
    n = check_grid_size(grid_size, shape)
    with x64_scope():
        flat, m = flat_padded(shape, a, q, steps, x)
        up, lo = (np.array(v, dtype=np.float64) for v in batch(*flat, kind, n))
        if grid_size is None:
            up, lo = _refined(batch, kind, flat, up, lo, m, shape)
        up, lo = unpad(up, m, shape), unpad(lo, m, shape)
        up, lo = np.where(idle, 0.0, up), np.where(idle, 0.0, lo)
        return result(up, lo, status_of(up))


def _refined(batch, kind, flat, up, lo, m, shape):
    """The automatic grid's check and second pass (see :func:`answer` and ``_grid.AUTO_RTOL``) on the flat,
    padded batch whose values on the default grid are (up, lo)."""
    rtol = AUTO_RTOL if batch is eps_batch else AUTO_RTOL_DELTA
    sizes, up, lo = auto_check(batch, kind, flat, up, lo, m, shape, rtol)
    for size in np.unique(sizes[sizes > 0]):
        idx = np.flatnonzero(sizes == size)
        sub, _ = flat_padded((idx.size,), *(x[idx] for x in flat))
        u, l = (np.asarray(v, dtype=np.float64)[:idx.size] for v in batch(*sub, kind, int(size)))
        up[idx], lo[idx] = np.minimum(up[idx], u), np.maximum(lo[idx], l)
    return up, lo


def auto_check(batch, kind, flat, up, lo, m, shape, rtol=AUTO_RTOL):
    """The automatic grid's check: (sizes, up, lo) for the flat, padded batch ``flat`` (of which the first
    ``m`` points are real) whose values on DEFAULT_GRID_SIZE points are (up, lo).  The same compiled kernel
    answers at twice the step (and four times where the change exceeds ``rtol``); ``sizes`` is each point's
    finer grid (0: none needed, ``_grid.auto_refined_size``), (up, lo) the least upper and largest lower
    values of the passes."""
    n = DEFAULT_GRID_SIZE
    up, lo = np.array(up, dtype=np.float64), np.array(lo, dtype=np.float64)
    u1 = up.copy()
    u2, l2 = (np.asarray(v, dtype=np.float64) for v in batch(*flat, kind, n, 2.0))
    up, lo = np.minimum(up, u2), np.maximum(lo, l2)
    with np.errstate(invalid="ignore", over="ignore"):
        change = u2 - u1
        err = np.abs(change)  # first order: the error left at h is at most the change from 2h
        check = ~(np.isfinite(err) & np.isfinite(u1) & (err <= rtol * np.abs(u1)))
    check[m:] = False  # the padding
    if check.any():  # the order from a third grid, 4h, where the first-order bound is not enough
        idx = np.flatnonzero(check)
        sub, _ = flat_padded((idx.size,), *(x[idx] for x in flat))
        u4, l4 = (np.asarray(v, dtype=np.float64)[:idx.size] for v in batch(*sub, kind, n, 4.0))
        up[idx], lo[idx] = np.minimum(up[idx], u4), np.maximum(lo[idx], l4)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            rho = np.clip(np.nan_to_num((u4 - u2[idx]) / change[idx], nan=2.0, posinf=4.0, neginf=2.0), 2.0, 4.0)
            err[idx] = np.where(change[idx] > 0, change[idx] / (rho - 1.0), err[idx])
    sizes = auto_refined_size(err, u1, shape, rtol)
    sizes[m:] = 0
    return sizes, up, lo


def never_looks(shape, q, steps):
    """Where the composed mechanism's output does not depend on the data (q = 0 or steps = 0), broadcast."""
    return np.broadcast_to((np.asarray(q) == 0) | (np.asarray(steps) == 0), shape)
