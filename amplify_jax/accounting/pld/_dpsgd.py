"""DP-SGD (Poisson-subsampled Gaussian, T steps) through the PLD: eps for delta, delta for eps, calibration.

Each point composes both neighbouring relations (remove and add, ``_mechanisms``) ``steps`` times on its
own grid (``_compose``) and answers the worse of the two, as dp_accounting's PLD accountant does.  Every
value comes as (pessimistic, optimistic): the first is the sound answer (an upper bound of the true eps or
delta), the second a lower bound of the truth from the same pass, so their gap says how tight it is.
Values reach the compiled kernel as arrays: a new sigma, q, steps, target or batch size does not
recompile; only a new grid size does.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from ..._core import validate as V
from ..._core.status import Status
from .._dpsgd_rdp import rdp_calibrate_door  # the RDP accountant (below the front that routes to the PLD)
from ._grid import DEFAULT_GRID_SIZE, check_grid_size, flatten, unpad
from ._queries import eps_batch
from ._search import bisect_log
from ._results import (
    RDP_RTOL_CALIBRATION,
    SIGMA_RANGE,
    SOURCE_PLD,
    SOURCE_RDP,
    PldDelta,
    PldEpsilon,
    _loose,
    answer,
    auto_check,
    check_parameter,
    never_looks,
)

__all__ = ["PldCalibration", "dpsgd_epsilon", "dpsgd_delta", "dpsgd_calibrate_sigma"]


class PldCalibration(NamedTuple):
    """Minimal sigma (feasible side, re-checked), the eps there (<= target), status, and source: which
    accountant gave sigma (``SOURCE_PLD`` = 0; ``SOURCE_RDP`` = 1 where the RDP accountant's calibration
    needs less noise than a loose PLD answer, issue 26)."""

    sigma: jax.Array
    epsilon: jax.Array
    status: jax.Array
    source: jax.Array = None


def _eps_batch(sigma, q, steps, delta, n):
    return eps_batch(sigma, q, steps, delta, "gaussian", n)


def _check(sigma, q, steps):
    return check_parameter("gaussian", sigma), V.probability("q", q), V.integer("steps", steps, minimum=0)


def dpsgd_epsilon(*, sigma, q, steps, delta, grid_size=None) -> PldEpsilon:
    """eps of DP-SGD (``steps`` Poisson-subsampled Gaussian steps at rate q, noise multiplier sigma) at
    ``delta``, from its privacy-loss distribution: tight up to the grid's resolution and never below the
    true eps (connect-the-dots, Doroshenko et al. 2022; FFT composition with tails and round-off counted,
    see :mod:`amplify_jax.accounting.pld._compose`).  Broadcasts over all four.  ``grid_size``: None (the default), the
    automatic grid: every point on ``DEFAULT_GRID_SIZE`` points at its window's step and at twice it (one
    compiled program), an estimate of the error a finer grid removes (``_results.grid_error``), and where it exceeds
    ``AUTO_RTOL`` (7e-4 relative) the point again on ``AUTO_MAX_GRID_SIZE`` points (issue 13: within 1e-3 of
    dp_accounting's PLD at 167 of 168 random points with eps >= 0.01, against 143 on the default grid
    alone; benchmarks/pld_vs_dp_accounting.py); or a power of two N, every point on that grid and on the
    coarser grids of its ladder, N / 2, N / 4, ... down to 2^8 points, the least upper value answering
    (``_grid.ladder``: a finer grid never answers a larger eps at the same point; ``grid`` says
    which grid gave it; for N = 2^14 ~1.25x the automatic grid's CPU time (its rungs 2^13 ... 2^8 cost about
    as much as N's pass; 200 sigmas, q 0.01, 1000 steps), within ~0.06% of the truth at 10^4 steps, ~1% at 10^5
    steps or delta ~1e-10).

    Where the answer's own gap exceeds ``LOOSE_RTOL`` (epsilon - epsilon_lower > 0.25 epsilon) it is refined
    on the finer grid; every answer is compared with the RDP accountant's eps (``RDP_RTOL`` = 0)
    (:func:`amplify_jax.dpsgd_epsilon`) at the same point, and the smaller answers (both are sound; ``source`` says which: ``SOURCE_PLD`` 0 or
    ``SOURCE_RDP`` 1); an answer still that loose has status ``loose`` (issue 26).

    Returns (epsilon, epsilon_lower, status, source, grid): epsilon is the sound value, epsilon_lower a lower
    bound of the true eps from the same pass, never +inf or nan: where the grid cannot place it, a value
    certainly below (the window's top minus the optimistic rounding's drift, or 0 where the composition is not
    finite; ``_compose.epsilon_at``); grid the grid size whose pass gave epsilon (0 where the RDP accountant
    did).  Where the error terms alone exceed delta (a grid too coarse for the request)
    epsilon is +inf with status ``error``: raise ``grid_size``."""
    s, qq, t = _check(sigma, q, steps)
    d = V.unit_open("delta", delta)
    shape = V.broadcastable(sigma=s, q=qq, steps=t, delta=d)
    return answer("epsilon", "gaussian", shape, grid_size, s, qq, t, d)


def dpsgd_delta(*, sigma, q, steps, epsilon, grid_size=None) -> PldDelta:
    """delta of DP-SGD at ``epsilon`` from its privacy-loss distribution (see :func:`dpsgd_epsilon`):
    (delta, delta_lower, status), delta an upper bound of the true delta, delta_lower a lower bound."""
    s, qq, t = _check(sigma, q, steps)
    e = V.nonnegative("epsilon", epsilon)
    shape = V.broadcastable(sigma=s, q=qq, steps=t, epsilon=e)
    return answer("delta", "gaussian", shape, grid_size, s, qq, t, e)


def dpsgd_calibrate_sigma(*, target_epsilon, q, steps, delta, rtol=1e-6, sigma_range=(0.3, 200.0),
                          grid_size=None) -> PldCalibration:
    """Minimal noise multiplier sigma with the PLD's eps (:func:`dpsgd_epsilon`) <= ``target_epsilon``.

    Batched; the search is the inversion layer's (``calibrate.invert_monotone_host``: bisection in log
    sigma to ``rtol``, the feasible end returned and re-checked), run on the host in NumPy over the points
    still searching (``_search.bisect_log``: no program compiled for the batch's shape).  Targets no sigma in
    ``sigma_range`` meets get status ``infeasible`` (sigma = the range's top); returns (sigma, epsilon at
    sigma, status).  ``grid_size`` None (the automatic grid, see :func:`dpsgd_epsilon`): the search runs on
    ``DEFAULT_GRID_SIZE`` points, then, where the grid's check at the sigma found asks for it, again on
    ``AUTO_MAX_GRID_SIZE`` points (``epsilon`` is then that grid's value).  Where q = 0
    or steps = 0 eps is 0 at every sigma: the range's lower end, status ``at_limit``."""
    e = V.positive("target_epsilon", target_epsilon)
    qq = V.probability("q", q)
    t = V.integer("steps", steps, minimum=0)
    d = V.unit_open("delta", delta)
    rtol = V.tolerance("rtol", rtol)  # one number in [1e-15, 0.5]
    lo, hi = (float(x) for x in V.positive("sigma_range", np.asarray(sigma_range, dtype=np.float64)))
    if not (SIGMA_RANGE[0] <= lo < hi <= SIGMA_RANGE[1]):
        raise ValueError(f"sigma_range must satisfy {SIGMA_RANGE[0]} <= lo < hi <= {SIGMA_RANGE[1]}, "
                         f"got {tuple(sigma_range)!r}")
    shape = V.broadcastable(target_epsilon=e, q=qq, steps=t, delta=d)
    n = check_grid_size(grid_size, shape)
    (be, bq, bt, bd), m = flatten(shape, e, qq, t, d)
    idle = np.asarray(never_looks(shape, qq, t)).reshape(-1)  # q = 0 or no step: eps = 0 at every sigma

    def eps_of(sig, idx):
        out = np.zeros(idx.shape)
        run = idx[~idle[idx]]  # nothing to compute where the mechanism never looks (no kernel runs)
        if run.size:
            out[~idle[idx]] = _eps_batch(sig[~idle[idx]], bq[run], bt[run], bd[run], n)[0]
        return out

    inv = bisect_log(eps_of, be, lo, hi, float(rtol))
    sig, ach, st = (np.array(x) for x in (inv.value, inv.achieved, inv.status))
    if grid_size is None:
        sig, ach, st = _refine_calibration(sig, ach, st, (be, bq, bt, bd), idle, m, shape, lo, rtol)
    sig, ach, st, source = _rdp_where_loose_calibration(sig, ach, st, (be, bq, bt, bd), idle, n, lo, hi, rtol)
    return PldCalibration(*(unpad(v, m, shape) for v in (sig, ach, st, source)))


def _rdp_where_loose_calibration(sig, ach, st, flat, idle, n, lo, hi, rtol):
    """Issue 26 for the calibration: where the PLD's answer at the sigma found is loose (its upper / lower gap
    above ``RDP_RTOL_CALIBRATION``, ``_results``), the RDP accountant's calibration
    (``amplify_jax.dpsgd_calibrate_sigma``'s, ``_dpsgd_rdp.rdp_calibrate_sigma`` behind its own host-path door;
    same target, range and rtol); where it finds a smaller sigma (status ok, its eps re-checked <= target),
    that sigma answers, with source ``SOURCE_RDP``: its eps is a sound bound, so the target holds there."""
    be, bq, bt, bd = flat
    source = np.full(sig.shape, SOURCE_PLD, dtype=np.int32)
    ok = (st == int(Status.OK)) & ~idle
    if not ok.any():
        return sig, ach, st, source
    live = np.flatnonzero(ok)
    up, low, _ = eps_batch(sig[live], bq[live], bt[live], bd[live], "gaussian", n)
    idx = live[_loose(up, low, RDP_RTOL_CALIBRATION, 0.0)]
    if idx.size == 0:
        return sig, ach, st, source
    r = rdp_calibrate_door(target_epsilon=be[idx], q=bq[idx], steps=bt[idx], delta=bd[idx], rtol=rtol,
                           sigma_range=(lo, hi))
    rs, re_, rst = (np.asarray(v) for v in (r.sigma, r.epsilon, r.status))
    better = (rst == int(Status.OK)) & (rs < sig[idx]) & (re_ <= be[idx])
    sig, ach, source = sig.copy(), ach.copy(), source.copy()
    sig[idx[better]], ach[idx[better]], source[idx[better]] = rs[better], re_[better], SOURCE_RDP
    return sig, ach, st, source


def _refine_calibration(sig, ach, st, flat, idle, m, shape, lo, rtol):
    """The automatic grid (``_results.answer``) for a calibration: at each sigma found on the default grid,
    the grid's check; where it asks for a finer grid, the search again on it, between the range's lower end
    and that sigma, keeping the new sigma only where it is found there (status ok), re-checked by the
    search itself.  A finer grid's eps is below the default one's but for the discretization's noise, so the
    feasible sigma can only move down; where it does not, the default grid's answer stands."""
    be, bq, bt, bd = flat
    ok = (st == int(Status.OK)) & ~idle
    if not ok.any():
        return sig, ach, st
    live = np.flatnonzero(ok)  # the check runs where the search found a sigma
    flat_s = (sig[live], bq[live], bt[live], bd[live])
    first = _eps_batch(*flat_s, DEFAULT_GRID_SIZE)
    sizes = np.zeros(sig.shape, dtype=np.int64)
    sizes[live], _, _ = auto_check(eps_batch, "gaussian", flat_s, first, live.size, (live.size,))
    for size in np.unique(sizes[sizes > 0]):
        idx = np.flatnonzero(sizes == size)

        def eps_of(x, sub, idx=idx, size=int(size)):
            j = idx[sub]
            return _eps_batch(x, bq[j], bt[j], bd[j], size)[0]

        inv = bisect_log(eps_of, be[idx], lo, sig[idx], float(rtol))
        good = inv.status == int(Status.OK)
        new = inv.value
        pick = good & (new <= sig[idx])
        sig[idx[pick]], ach[idx[pick]] = new[pick], inv.achieved[pick]
    return sig, ach, st
