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
from ._grid import flat_padded, unpad
from ._queries import delta_batch, eps_batch

__all__ = ["PldEpsilon", "PldDelta", "SIGMA_RANGE", "SCALE_RANGE", "EPS0_RANGE", "check_parameter", "status_of",
           "answer", "never_looks"]

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


def answer(query: str, kind: str, shape: tuple, n: int, a, q, steps, x):
    """eps at delta = x (``query="epsilon"``) or delta at eps = x (``"delta"``) of mechanism ``kind`` with
    parameter ``a``, rate q, composed ``steps`` times, on a grid of ``n`` points, for checked arrays
    broadcast to ``shape``: a :class:`PldEpsilon` or :class:`PldDelta` of that shape."""
    batch, result = (eps_batch, PldEpsilon) if query == "epsilon" else (delta_batch, PldDelta)
    # q = 0 (the mechanism never looks at the data) or no step: both output laws are the same, so eps = 0 at
    # every delta and delta = 0 at every eps >= 0, exactly (the grid answered +inf, status error, or 1)
    idle = never_looks(shape, q, steps)
    if idle.all():  # nothing to compute (no kernel runs)
        zero = np.zeros(shape)
        return result(zero, zero, status_of(zero))
    with x64_scope():
        (ba, bq, bt, bx), m = flat_padded(shape, a, q, steps, x)
        up, lo = batch(ba, bq, bt, bx, kind, n)
        up, lo = unpad(up, m, shape), unpad(lo, m, shape)
        up, lo = np.where(idle, 0.0, up), np.where(idle, 0.0, lo)
        return result(up, lo, status_of(up))


def never_looks(shape, q, steps):
    """Where the composed mechanism's output does not depend on the data (q = 0 or steps = 0), broadcast."""
    return np.broadcast_to((np.asarray(q) == 0) | (np.asarray(steps) == 0), shape)
