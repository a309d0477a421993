"""What the PLD front doors answer, and the checks of what they accept: the result tuples, the noise
parameters' ranges, and :func:`answer`, the one path from a broadcast batch to (upper, lower, status).

Every value comes as (pessimistic, optimistic): the first is the sound answer (an upper bound of the true eps
or delta), the second a lower bound of the truth from the same pass, so their gap says how tight it is.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from ..._core import validate as V
from ..._core.numerics import x64_scope
from ..._core.status import Status
from .._dpsgd_rdp import rdp_epsilon_door  # the RDP accountant (below the front that routes to the PLD)
from ._grid import (AUTO_RTOL, AUTO_RTOL_DELTA, DEFAULT_GRID_SIZE, auto_refined_size, check_grid_size, flatten, ladder,
                    unpad)
from ._queries import delta_batch, eps_batch

__all__ = ["PldEpsilon", "PldDelta", "SOURCE_PLD", "SOURCE_RDP", "SOURCES", "LOOSE_RTOL", "LOOSE_ATOL", "RDP_RTOL", "RDP_RTOL_CALIBRATION", "SIGMA_RANGE", "SCALE_RANGE", "EPS0_RANGE", "check_parameter", "status_of",
           "answer", "auto_check", "grid_error", "never_looks"]

#: Noise multipliers the PLD route accepts (the loss range is ~1 / (2 sigma^2): below 0.05 it leaves float64).
SIGMA_RANGE = (0.05, 1e4)
#: Laplace scales and eps0 the PLD route accepts (its loss range, 1 / b or eps0, must stay in float64's exp)
SCALE_RANGE = (1e-2, 1e6)
EPS0_RANGE = (0.0, 300.0)

_RANGES = {"gaussian": SIGMA_RANGE, "laplace": SCALE_RANGE, "randomized-response": EPS0_RANGE,
           "wor-gaussian": SIGMA_RANGE}
_NAMES = {"gaussian": "sigma", "laplace": "scale", "randomized-response": "eps0", "wor-gaussian": "sigma"}


#: ``source`` codes of a :class:`PldEpsilon`: which bound gave ``epsilon`` (``SOURCES[code]`` names it).
SOURCE_PLD, SOURCE_RDP = 0, 1
SOURCES = ("pld", "rdp")
#: The PLD's own tolerance on its upper / lower gap (eps queries): where epsilon - epsilon_lower exceeds
#: LOOSE_RTOL * epsilon, the answer is refined (the automatic grid's finer pass), then, for DP-SGD, compared
#: with the RDP accountant's eps at the same point (the smaller answers, both sound), and if still loose is
#: reported with status ``loose`` (issue 26: at delta <= 1e-11 and tiny q the upper value was up to 20x the
#: lower and 6.7x RDP's, status ok).  0.25: the gaps of ordinary points are 0.5-11% (random DP-SGD points,
#: 10 to 2e5 steps, delta 1e-12 to 1e-3), so only answers far from their own certificate are touched, and
#: the RDP accountant (a compilation of its own) is called only there.
LOOSE_RTOL = 0.25
#: The gap above which a DP-SGD eps is compared with the RDP accountant's: 0, every one is (issue 26's
#: tightness row found the PLD 0.96% above RDP at sigma 0.89, q 0.83, 74 053 steps, delta 6.2e-12, with a gap
#: under the 0.1 used before).  Both are sound, so the smaller answers and the PLD front door is never looser
#: than the library's RDP; the RDP accountant costs ~35 us a point warm (the PLD ~3 ms) and one compiled
#: program of its own on a PLD user's first call (4 s on a 2-core CPU, loaded from the cache afterwards).
RDP_RTOL = 0.0
#: The same for the calibration, whose RDP side is the RDP calibration (a larger program, 7.6 s to compile):
#: only where the PLD's answer at the sigma found has a gap above 0.1 of itself.
RDP_RTOL_CALIBRATION = 0.1
#: A gap below this (absolute, in eps) is never loose: at q = 1e-6, eps ~1e-5 has a lower value of 0.
LOOSE_ATOL = 1e-3


class PldEpsilon(NamedTuple):
    """eps (sound: an upper bound), eps_lower (a lower bound of the true eps, same pass), status, and
    source: which bound gave eps (``SOURCE_PLD`` = 0, the PLD; ``SOURCE_RDP`` = 1, the RDP accountant, where
    it is smaller than a loose PLD answer; None where the caller built the tuple without it), and grid: the
    number of grid points of the pass that gave eps (the finest of those tied; 0 where the RDP accountant
    answered or nothing was computed, q = 0 or no step; None where the caller built the tuple without it)."""

    epsilon: jax.Array
    epsilon_lower: jax.Array
    status: jax.Array
    source: jax.Array = None
    grid: jax.Array = None


class PldDelta(NamedTuple):
    """delta (sound: an upper bound), delta_lower (a lower bound of the true delta), status, and grid (as
    :class:`PldEpsilon`'s)."""

    delta: jax.Array
    delta_lower: jax.Array
    status: jax.Array
    grid: jax.Array = None


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

    ``grid_size``: a power of two N (``check_grid_size``): every point on the grids of N's ladder, N, N / 2,
    N / 4, ... down to 2^8 points (``_grid.ladder``: a finer grid never answers a larger upper
    value, issue 26); or None, the automatic grid (issue 13's tightness, ``_grid.AUTO_RTOL``): every point on
    DEFAULT_GRID_SIZE points at its window's step h and at 2h (``auto_check``), then the points whose
    estimated error exceeds AUTO_RTOL again on AUTO_MAX_GRID_SIZE points.  Each point answers the least of its
    upper values and the largest of its lower values: each is a bound of the truth, so their intersection is
    too; ``grid`` says which grid gave the upper value."""
    batch, result = (eps_batch, PldEpsilon) if query == "epsilon" else (delta_batch, PldDelta)
    # q = 0 (the mechanism never looks at the data) or no step: both output laws are the same, so eps = 0 at
    # every delta and delta = 0 at every eps >= 0, exactly (the grid answered +inf, status error, or 1)
    idle = never_looks(shape, q, steps)
    if idle.all():  # nothing to compute (no kernel runs)
        zero = np.zeros(shape)
        none = np.zeros(shape, dtype=np.int64)
        if query == "delta":
            return result(zero, zero, status_of(zero), none)
        return result(zero, zero, status_of(zero), np.full(shape, SOURCE_PLD, dtype=np.int32), none)
    n = check_grid_size(grid_size, shape)
    with x64_scope():
        flat, m = flatten(shape, a, q, steps, x)
        first = [np.array(v, dtype=np.float64) for v in batch(*flat, kind, n)]
        up, lo = first[:2]
        grid = np.full(up.shape, n, dtype=np.int64)  # the grid whose pass gave each upper value
        if grid_size is None:
            rtol = AUTO_RTOL if query == "epsilon" else AUTO_RTOL_DELTA
            sizes, up, lo = auto_check(batch, kind, flat, first, m, shape, rtol)
            if query == "epsilon":  # a loose answer gets the finer grid too (issue 26)
                sizes = np.where((sizes == 0) & _loose(up, lo), auto_refined_size(np.inf, up, shape), sizes)
            passes = [(int(size), np.flatnonzero(sizes == size)) for size in np.unique(sizes[sizes > 0])]
        else:
            passes = [(size, np.arange(up.size)) for size in ladder(n)[1:]]
        for size, idx in passes:
            u, l = (np.asarray(v, dtype=np.float64) for v in batch(*(v[idx] for v in flat), kind, size)[:2])
            grid[idx[u < up[idx]]] = size
            up[idx], lo[idx] = np.minimum(up[idx], u), np.maximum(lo[idx], l)
        up, lo = np.where(idle.reshape(-1), 0.0, up), np.where(idle.reshape(-1), 0.0, lo)
        grid[idle.reshape(-1)] = 0
        if query == "delta":
            return result(*(unpad(v, m, shape) for v in (up, lo, status_of(up), grid)))
        source = np.full(up.shape, SOURCE_PLD, dtype=np.int32)
        if kind == "gaussian":
            up, source = _rdp_where_loose(up, lo, source, flat)
            grid[source == SOURCE_RDP] = 0
        status = np.where(np.isfinite(up) & _loose(up, lo), int(Status.LOOSE), status_of(up)).astype(np.int32)
        return result(*(unpad(v, m, shape) for v in (up, lo, status, source, grid)))


def _loose(up, lo, rtol=LOOSE_RTOL, atol=LOOSE_ATOL):
    """Where an upper value exceeds its lower value by more than ``rtol`` of itself and ``atol`` (finite
    values)."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(up) & (up - lo > np.maximum(rtol * up, atol))


def _rdp_where_loose(up, lo, source, flat):
    """Where a DP-SGD eps query's gap exceeds ``RDP_RTOL`` (every finite answer) or the PLD refused (+inf) (flat arrays sigma, q,
    steps, delta): the RDP accountant's eps (``amplify_jax.dpsgd_epsilon``'s, ``_dpsgd_rdp.rdp_epsilon`` behind
    its own host-path door, sound) where it is smaller, with source ``SOURCE_RDP``.  Both are upper bounds of the
    same true eps, so their minimum is one.  The one home of the PLD's DP-SGD eps against the RDP accountant's
    (every front door that answers a PLD DP-SGD eps comes here)."""
    idx = np.flatnonzero(_loose(up, lo, RDP_RTOL, 0.0) | ~np.isfinite(up))
    if idx.size == 0:
        return up, source
    s, q, t, d = (v[idx] for v in flat)
    rdp = np.asarray(rdp_epsilon_door(sigma=s, q=q, steps=t, delta=d).epsilon, dtype=np.float64)
    better = np.isfinite(rdp) & (rdp < up[idx])
    up, source = up.copy(), source.copy()
    up[idx[better]], source[idx[better]] = rdp[better], SOURCE_RDP
    return up, source


def grid_error(u1, b1, u2, b2):
    """The automatic grid's estimate of the error of the upper value u1 (step h) that a finer grid removes,
    from the values without the round-off term, b1 (step h) and b2 (step 2h), and u1's round-off term u1 - b1:
    the grid's own error, (b2 - b1) / 3 (Richardson at second order: connect-the-dots' error is O(h^2),
    4 times as large at 2h; measured ratios 3.1-4.1 on DP-SGD at 10^4 steps), plus the part of the round-off
    term that a grid 8 times finer removes, 1 - 8^-1/2 of it (it shrinks about as sqrt(h): with ||p||_2, the
    one step's masses' l2 norm).  Checked (2026-11-28: ``eps_batch`` at 2^14 and 2^17 points, h and 2h,
    48 random DP-SGD points of tests/test_pld_discretize.py's POINTS and 48 of FEW_STEPS): the term shrinks to
    0.37-0.48 of itself over long compositions (h^0.35-0.47; the assumption's 0.354), but only to 0.41-0.86 for
    few steps at a small delta (h^0.07-0.43: the coefficient bound grows with log n), so there this part
    overstates what the finer grid removes.  That costs refinement time, not soundness (each pass is a bound
    and the least answers), and the refinement was still worth it where it was asked: the 3 of 48 few-step
    points refined on this part alone (Richardson's part below AUTO_RTOL) gained 0.13-0.81% (above AUTO_RTOL);
    46 of the 48 long ones were refined on Richardson's part.  +inf where any value is not finite."""
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(b2 - b1) / 3.0 + (1.0 - 8.0 ** -0.5) * np.maximum(u1 - b1, 0.0)
        ok = np.isfinite(u1) & np.isfinite(b1) & np.isfinite(u2) & np.isfinite(b2)
    return np.where(ok, err, np.inf)


def auto_check(batch, kind, flat, first, m, shape, rtol=AUTO_RTOL):
    """The automatic grid's check: (sizes, up, lo) for the flat, padded batch ``flat`` (of which the first
    ``m`` points are real) whose values on DEFAULT_GRID_SIZE points are ``first`` = (up, lo, bare).  The same
    compiled kernel answers at twice the step; ``sizes`` is each point's finer grid where
    :func:`grid_error` exceeds ``rtol`` (0: none needed, ``_grid.auto_refined_size``), (up, lo) the least
    upper and largest lower values of the two passes."""
    u1, l1, b1 = (np.array(v, dtype=np.float64) for v in first)
    u2, l2, b2 = (np.asarray(v, dtype=np.float64) for v in batch(*flat, kind, DEFAULT_GRID_SIZE, 2.0))
    sizes = auto_refined_size(grid_error(u1, b1, u2, b2), u1, shape, rtol)
    sizes[m:] = 0  # the padding
    return sizes, np.minimum(u1, u2), np.maximum(l1, l2)


def never_looks(shape, q, steps):
    """Where the composed mechanism's output does not depend on the data (q = 0 or steps = 0), broadcast."""
    return np.broadcast_to((np.asarray(q) == 0) | (np.asarray(steps) == 0), shape)
