"""(eps, delta) after ``steps`` rounds of the self check-in mechanisms, and the calibrations of distributed check-in
(minimal sigma, largest gamma, most rounds) for a target (eps, delta) (the paper's Lemma 2 conversion)."""

from __future__ import annotations

import collections
import functools
import warnings
from typing import NamedTuple

import numpy as np
import jax
import jax.numpy as jnp

from .._core import validate as V
from .._core.domains import check_params
from ..accounting.calibrate import invert_monotone
from ..accounting.conversions import delta_from_rdp, epsilon_from_rdp, rdp_epsilon_terms
from ..accounting.rdp import DEFAULT_ORDERS
from .._core.numerics import float64_jit, x64_scope
from .._core.status import Status
from ._baselines import _count_bounds
from ._params import DELTA, EPSILON, GAMMA, N, SIGMA, STEPS
from ._distributed import _distributed_gaussian_log_excess, distributed_gaussian_rdp
from ._shuffled import shuffled_checkin_lower_rdp, shuffled_checkin_upper_rdp
from ._subsampled_shuffle import subsampled_shuffle_checkin_rdp
from ._weighted import DEFAULT_TAIL_TOL, _finish_rdp, _int_orders, _sum_plan


# ----------------------------------------------------------------------------------------------------------
# (eps, delta) after T rounds, and calibration (distributed check-in, Gaussian mechanism)

#: Default integer orders of the check-in accountants.
CHECKIN_ORDERS = np.arange(2, 65, dtype=np.float64)

#: Default orders of the calibrations (a subset: any order gives a valid bound, and the Thm 9 cost grows with
#: the number of requested orders times the largest one).
CALIBRATION_ORDERS = np.array([2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 56, 64], dtype=np.float64)

#: Default orders of the Thm 3 lower bound's conversion (``shuffled_checkin_epsilon(bound="lower")``): Eq. 8 is a
#: closed form in the order, so a wide geometric grid costs little, and at small T / large n its best order is
#: in the tens of thousands (n = 1e7, gamma = 1e-3, T = 100, delta = 1e-7: about 3e4), far above 64.
LOWER_ORDERS = np.unique(np.round(np.geomspace(2.0, 1e8, 241)))


class OrderCapWarning(UserWarning):
    """An RDP -> (eps, delta) conversion of the check-in family found its best order at the largest order of the
    grid it was given: the answer is still a valid bound (every order gives one), but larger orders would
    probably give a smaller one.  Pass wider ``orders``.  The registry's check-in bounds report the same points
    with status ``fallback`` instead of warning."""


def order_at_cap(order, orders, value=None) -> np.ndarray:
    """True where the best order of a conversion is the largest of ``orders`` (the order cap binds).

    ``order`` is the best order a conversion returned (any shape), ``orders`` the grid it chose from.  With
    ``value`` (the eps or delta found), points where it is 0 are not flagged (no order can improve on 0).  A grid
    of one order never binds: the caller chose that order.
    """
    o = np.unique(np.asarray(orders, dtype=np.float64))
    at = np.asarray(order, dtype=np.float64) >= o[-1] if o.size > 1 else np.zeros(np.shape(order), bool)
    if value is not None:
        at = at & (np.asarray(value, dtype=np.float64) > 0)
    return at


def _report_cap_curve(alpha_int, rdp, steps, delta, what):
    """The conversion of a calibration's answer (curve ``rdp`` per round, composed over ``steps``) checked for the
    order cap (:func:`_report_cap`)."""
    o = np.asarray(alpha_int, dtype=np.float64)
    r = np.asarray(rdp)
    shape = np.broadcast_shapes(r.shape[:-1], np.shape(steps), np.shape(delta))
    total = np.broadcast_to(np.asarray(steps, dtype=np.float64)[..., None] * r, shape + o.shape)
    ok = np.all(np.isfinite(total), axis=-1)
    res = epsilon_from_rdp(o, np.where(ok[..., None], total, 0.0), delta=np.broadcast_to(delta, shape))
    return _report_cap(np.where(ok, np.asarray(res.order), 0.0), o, np.where(ok, np.asarray(res.epsilon), 0.0),
                       what)


def _report_cap(order, orders, value, what):
    """Warn (:class:`OrderCapWarning`) where the order cap binds; returns the boolean mask."""
    at = order_at_cap(order, orders, value)
    if np.any(at):
        o = np.max(np.asarray(orders, dtype=np.float64))
        warnings.warn(f"{what}: the best Rényi order is the largest of the grid ({o:g}) at {int(np.sum(at))} of "
                      f"{at.size} points; the value is a valid bound, but wider orders may give a smaller one.",
                      OrderCapWarning, stacklevel=3)
    return at


def distributed_gaussian_epsilon(*, n, gamma, sigma, steps, delta, orders=None, method="exact", accountant="rdp",
                                 grid_size=None):
    """eps after ``steps`` rounds of distributed check-in (Gaussian), at ``delta``.

    ``accountant="rdp"`` (default), (eps, best order): the per-round curve of :func:`distributed_gaussian_rdp`
    (Thm 4, Eq. 10) composed over the rounds (Mironov 2017) and converted by
    :func:`amplify_jax.conversions.epsilon_from_rdp` (Balle et al. 2020; Lemma 2 of the paper) on the integer
    ``orders`` (default 2..64).  Broadcasts over n,
    gamma, sigma, steps, delta.  Warns (:class:`OrderCapWarning`) where the best order is the largest of
    ``orders``, as do the delta function and the calibrations below.

    ``accountant="pld"``: a privacy-loss-distribution route for Thm 4's setting, with the number k of
    participants held in a Chernoff window as in Eq. 11 and the Sec. 5.1 baseline.  Given the public k, a round
    is the Gaussian mean of a batch of k clients drawn without replacement (rate k / n) under replacement
    adjacency, noise multiplier (sigma / sqrt k) / (2 / k) = sigma sqrt(k) / 2; its dominating pair is Dong, Roth,
    Su 2022 ("Gaussian differential privacy") Thm 4.2's C_{k/n}(G_{2 / (sigma sqrt k)}), which only weakens as
    the rate grows or the noise multiplier shrinks.  With probability >= 1 - d1 - d2 per round, l1 <= k <= l2
    (the multiplicative Chernoff bounds of :func:`_baselines._count_bounds`), so every such round is dominated
    by the one pair at rate l2 / n and noise sigma sqrt(l1) / 2: ``pld.epsilon("wor-gaussian", ...)`` composed
    T times at delta - T (d1 + d2).  (k is drawn independently of the data and of the past; conditioned on a
    sequence of k's inside the window the T rounds compose, and the sequences outside it have probability
    <= T (d1 + d2), added to delta.)  A fraction f of delta goes to the Chernoff events (d1 = d2 = f delta /
    (2 T)), f in :data:`PLD_SPLITS`, the best answered.  Returns :class:`amplify_jax.pld.PldEpsilon` (epsilon,
    the sound value; epsilon_lower, the PLD's lower value of the chosen window's pair, i.e. the grid's cost,
    not a lower bound of this mechanism; status: ok, fallback with eps = +inf where no split guarantees one
    participant per round (n gamma too small for delta / steps), error where the noise multiplier
    sigma sqrt(l1) / 2 is below ``pld.SIGMA_RANGE`` or the PLD answers +inf).  eps = 0 where gamma = 0.
    ``orders`` and ``method`` belong to the RDP route (a ValueError if given with "pld"), ``grid_size`` to the PLD
    (a power of two, or None, the default: ``pld``'s automatic grid; larger is tighter and slower: at Fig. 2(a)'s n = 6e5,
    gamma = 1e-3, sigma = 1, delta = 1e-8 and 1e6 rounds, 2^16 points take 11% off the default's eps; a
    ValueError with "rdp").  The window costs where n gamma is small (it replaces Thm 1's exact sum over k);
    the RDP route's conversion costs more at few rounds (at Fig. 2(a)'s setting its best order stays 21 and
    eps >= 0.72); benchmarks/fig_pld_tightening.py measures both.
    """
    from ..accounting.pld import selects  # lazy: the PLD takes ~0.1 s to import; checkin loads it on first use

    # this route's default method is "exact" (not an option given)
    if selects(accountant, grid_size, orders=orders, method=None if method == "exact" else method):
        return _distributed_gaussian_pld(n, gamma, sigma, steps, delta, grid_size)
    o = CHECKIN_ORDERS if orders is None else orders
    t, d = check_params((STEPS, DELTA), broadcast=False, steps=steps, delta=delta)  # before the curve (compiled)
    rdp = distributed_gaussian_rdp(o, n=n, gamma=gamma, sigma=sigma, method=method)
    shape = V.broadcastable(rdp=np.empty(rdp.shape[:-1]), steps=t, delta=d)
    total = np.broadcast_to(t[..., None] * np.asarray(rdp), shape + rdp.shape[-1:])
    res = epsilon_from_rdp(np.asarray(o, dtype=np.float64), total, delta=np.broadcast_to(d, shape))
    _report_cap(res.order, o, res.epsilon, "distributed_gaussian_epsilon")
    return res


#: Fractions f of delta that :func:`distributed_gaussian_epsilon`'s PLD route spends on the Chernoff window of
#: k (f delta / (2 T) per round to each side); the PLD gets (1 - f) delta, and the best f is answered.
PLD_SPLITS = np.array([0.05, 0.2, 0.5])
def _distributed_gaussian_pld(n, gamma, sigma, steps, delta, grid_size=None):
    """The PLD route of :func:`distributed_gaussian_epsilon` (see there), on checked inputs."""
    from ..accounting import pld as P  # lazy: the PLD takes ~0.1 s to import; checkin loads it on first use
    from ..accounting.pld import ROUND_DOWN, SIGMA_RANGE as PLD_SIGMA_RANGE

    nn, g, s, t, d = check_params((N, GAMMA, SIGMA, STEPS, DELTA), n=n, gamma=gamma, sigma=sigma, steps=steps,
                                  delta=delta)  # the RDP route's domains
    shape = nn.shape
    nb, gb, sb, tb, db = (np.broadcast_to(np.asarray(x, dtype=np.float64), shape)[..., None]
                          for x in (nn, g, s, t, d))
    log_dc = np.log(PLD_SPLITS) + np.log(db) - np.log(2.0 * tb)  # each Chernoff event, each round
    with x64_scope(), np.errstate(divide="ignore", invalid="ignore"):
        l1, l2 = (np.asarray(x, dtype=np.float64) for x in _count_bounds(jnp.asarray(nb * gb), jnp.asarray(log_dc),
                                                                          jnp.asarray(log_dc)))
    ok = (l1 >= 1.0) & (gb > 0.0)
    noise = sb * np.sqrt(np.maximum(l1, 1.0)) / 2.0 * ROUND_DOWN
    low = noise < PLD_SIGMA_RANGE[0]
    noise = np.clip(noise, PLD_SIGMA_RANGE[0], PLD_SIGMA_RANGE[1])  # above the top: less noise, a valid eps
    q = np.where(ok, np.minimum(np.nextafter(np.where(ok, l2, 1.0) / nb, np.inf), 1.0), 1.0)
    res = P.epsilon("wor-gaussian", sigma=noise, q=q, steps=np.broadcast_to(tb, q.shape),
                    delta=(1.0 - PLD_SPLITS) * db * ROUND_DOWN, grid_size=grid_size)
    up = np.where(ok & ~low, np.asarray(res.epsilon), np.inf)
    i = np.argmin(up, axis=-1)[..., None]
    eps = np.take_along_axis(up, i, -1)[..., 0]
    lower = np.take_along_axis(np.asarray(res.epsilon_lower), i, -1)[..., 0]
    idle = np.broadcast_to(np.asarray(g) == 0.0, shape)  # nobody checks in: the output does not depend on the data
    status = np.where(np.isfinite(eps), int(Status.OK),
                      np.where(np.any(ok, axis=-1), int(Status.ERROR), int(Status.FALLBACK)))
    return P.PldEpsilon(np.where(idle, 0.0, eps), np.where(idle, 0.0, np.where(np.isfinite(eps), lower, 0.0)),
                        np.where(idle, int(Status.OK), status).astype(np.int32))


def distributed_gaussian_delta(*, n, gamma, sigma, steps, epsilon, orders=None, method="exact"):
    """(delta, best order) after ``steps`` rounds of distributed check-in (Gaussian), at ``epsilon``.

    The inverse conversion of :func:`distributed_gaussian_epsilon`
    (:func:`amplify_jax.conversions.delta_from_rdp`).  Broadcasts over n, gamma, sigma, steps, epsilon.
    """
    o = CHECKIN_ORDERS if orders is None else orders
    t, e = check_params((STEPS, EPSILON), broadcast=False, steps=steps, epsilon=epsilon)  # before the curve
    rdp = distributed_gaussian_rdp(o, n=n, gamma=gamma, sigma=sigma, method=method)
    shape = V.broadcastable(rdp=np.empty(rdp.shape[:-1]), steps=t, epsilon=e)
    total = np.broadcast_to(np.asarray(t)[..., None] * np.asarray(rdp), shape + rdp.shape[-1:])
    res = delta_from_rdp(np.asarray(o, dtype=np.float64), total, epsilon=np.broadcast_to(e, shape))
    _report_cap(res.order, o, res.delta, "distributed_gaussian_delta")
    return res


class CheckinCalibration(tuple):
    """Base of the calibration results: :class:`SigmaCalibration`, :class:`GammaCalibration`,
    :class:`StepsCalibration`, each a named tuple (answer, epsilon, status) whose first field is named after the
    parameter it holds (``.sigma``, ``.gamma``, ``.steps``); ``epsilon`` is the eps after the rounds at that
    value, re-computed; ``status`` holds :class:`amplify_jax.status.Status` codes (ok, infeasible, at_limit,
    not_monotone, max_iter)."""

    __slots__ = ()


class SigmaCalibration(CheckinCalibration, collections.namedtuple("SigmaCalibration", "sigma epsilon status")):
    """Minimal sigma (on the feasible side) with the eps it achieves and the status."""

    __slots__ = ()


class GammaCalibration(CheckinCalibration, collections.namedtuple("GammaCalibration", "gamma epsilon status")):
    """Largest check-in rate gamma (on the feasible side) with the eps it achieves and the status."""

    __slots__ = ()


class StepsCalibration(CheckinCalibration, collections.namedtuple("StepsCalibration", "steps epsilon status")):
    """Most rounds (steps) with the eps they achieve and the status."""

    __slots__ = ()


def _dg_epsilon_jnp(n, gamma, sigma, steps, log_delta, *, alpha_int, width):
    alpha = jnp.asarray(alpha_int, dtype=jnp.float64)
    rdp = _finish_rdp(_distributed_gaussian_log_excess(n, gamma, sigma, alpha_int, width), alpha)
    e = rdp_epsilon_terms(alpha, steps[..., None] * rdp, log_delta[..., None], "balle2020")
    return jnp.min(e, axis=-1)


def _cal_sigma_fn(x, n, gamma, steps, log_delta, *, alpha_int, width):
    return _dg_epsilon_jnp(n, gamma, x, steps, log_delta, alpha_int=alpha_int, width=width)


def _cal_gamma_fn(x, n, sigma, steps, log_delta, *, alpha_int, width):
    return _dg_epsilon_jnp(n, x, sigma, steps, log_delta, alpha_int=alpha_int, width=width)


@functools.lru_cache(maxsize=None)
def _cal_fn(which, alpha_int, width):
    f = _cal_sigma_fn if which == "sigma" else _cal_gamma_fn
    return functools.partial(f, alpha_int=alpha_int, width=width)


def _cal_common(target_epsilon, delta, steps, orders):
    alpha_int = _int_orders(CHECKIN_ORDERS if orders is None else orders)
    e = V.positive("target_epsilon", target_epsilon)
    d, t = check_params((DELTA, STEPS), broadcast=False, delta=delta, steps=steps)
    return alpha_int, e, d, t


def distributed_gaussian_calibrate_sigma(*, n, gamma, steps, target_epsilon, delta, orders=None, sigma_lo=0.05,
                                         sigma_hi=1000.0, rtol=1e-6, tail_tol=DEFAULT_TAIL_TOL) -> SigmaCalibration:
    """Minimal sigma with eps(steps rounds) <= target_epsilon at delta for distributed check-in (Gaussian), batched.

    Bisection by :func:`amplify_jax.calibrate.invert_monotone` on the exact Eq. 10 sum (the RDP decreases in
    sigma); the returned sigma is on the feasible side and re-checked (``epsilon`` in the result).
    Default orders: :data:`CALIBRATION_ORDERS`.  Returns :class:`SigmaCalibration` ``(sigma, epsilon, status)``.
    """
    alpha_int, e, d, t = _cal_common(target_epsilon, delta, steps, CALIBRATION_ORDERS if orders is None else orders)
    nn, g = check_params((N, GAMMA), broadcast=False, n=n, gamma=gamma)
    shape = V.broadcastable(n=nn, gamma=g, steps=t, target_epsilon=e, delta=d)
    lo = V.scalar("sigma_lo", sigma_lo, SIGMA.domain.check)  # one search range, inside sigma's domain
    hi = V.scalar("sigma_hi", sigma_hi, SIGMA.domain.check)
    if lo >= hi:
        raise ValueError(f"Expected sigma_lo < sigma_hi, got sigma_lo={lo!r}, sigma_hi={hi!r}.")
    width = _sum_plan(np.broadcast_to(nn, shape), np.broadcast_to(g, shape), tail_tol)
    inv = invert_monotone(_cal_fn("sigma", alpha_int, width), e, args=(nn, g, t, np.log(d)),
                          lo=lo, hi=hi, feasible="above", rtol=rtol)
    rdp = distributed_gaussian_rdp(alpha_int, n=np.broadcast_to(nn, shape), gamma=np.broadcast_to(g, shape),
                                   sigma=np.asarray(inv.value), tail_tol=tail_tol)
    _report_cap_curve(alpha_int, rdp, np.broadcast_to(t, shape), np.broadcast_to(d, shape),
                      "distributed_gaussian_calibrate_sigma")
    return SigmaCalibration(inv.value, inv.achieved, inv.status)


def _variance_cap(glo, ghi):
    """The gamma in [glo, ghi] maximising gamma (1 - gamma) (sizes the window for a whole bracket)."""
    return np.clip(0.5, glo, ghi)


def _eps_on_points(gam, n, sigma, steps, log_delta, alpha_int, tol):
    """eps after the rounds at every point (arrays of one shape), with one window for all (one compile)."""
    width = _sum_plan(n, gam, tol)
    with x64_scope():
        return np.asarray(_points_eps_kernel(*(jnp.asarray(x) for x in (gam, n, sigma, steps, log_delta)),
                                             _cal_fn("gamma", alpha_int, width)))


@float64_jit(static_argnames=("fn",))
def _points_eps_kernel(gam, n, sigma, steps, log_delta, fn):
    return fn(gam, n, sigma, steps, log_delta)


def distributed_gaussian_calibrate_gamma(*, n, sigma, steps, target_epsilon, delta, orders=None, gamma_lo=None,
                                         gamma_hi=1.0, grid_points=17, rtol=1e-6,
                                         tail_tol=DEFAULT_TAIL_TOL) -> GammaCalibration:
    """Largest check-in rate gamma <= gamma_hi with eps(steps rounds) <= target_epsilon at delta, batched.

    eps is *not* monotone in gamma for distributed check-in: very small rates leave rounds with a handful of
    participants, whose mean is barely noised (base RDP 2 lambda / (k sigma^2)), so eps first falls as
    gamma grows, then rises.  Unless ``gamma_lo`` (a feasible rate) is given, eps is first evaluated on a
    log grid of ``grid_points`` rates in [0.01/n, gamma_hi]; the bracket is the largest feasible grid point
    and the next one, refined by :func:`amplify_jax.calibrate.invert_monotone` (``feasible="below"``).  The
    answer is feasible (re-checked) and the largest up to the grid's resolution.  status 1 where no grid
    rate is feasible (value: the grid's first rate).  Default orders: :data:`CALIBRATION_ORDERS`.
    Returns :class:`GammaCalibration` ``(gamma, epsilon, status)``.
    """
    alpha_int, e, d, t = _cal_common(target_epsilon, delta, steps, CALIBRATION_ORDERS if orders is None else orders)
    nn, s = check_params((N, SIGMA), broadcast=False, n=n, sigma=sigma)
    ghi = V.probability("gamma_hi", gamma_hi)
    if np.any(ghi <= 0):
        raise ValueError(f"Expected gamma_hi > 0, got gamma_hi={np.min(ghi)!r}.")
    shape = V.broadcastable(n=nn, sigma=s, steps=t, target_epsilon=e, delta=d, gamma_hi=ghi)
    b = lambda x: np.broadcast_to(np.asarray(x, dtype=np.float64), shape)  # noqa: E731
    if gamma_lo is not None:
        lo = b(V.unit_open("gamma_lo", gamma_lo))
        hi = b(ghi)
    else:
        gp = V.count("grid_points", grid_points, minimum=3, maximum=10**4)  # one eps evaluation per point
        u = np.linspace(0.0, 1.0, gp)
        glo = np.minimum(0.01 / b(nn), 0.5 * b(ghi))
        grid = np.exp(np.log(glo)[..., None] * (1 - u) + np.log(b(ghi))[..., None] * u)  # shape + (G,)
        ex = lambda x: np.broadcast_to(b(x)[..., None], grid.shape)  # noqa: E731
        vals = _eps_on_points(grid, ex(nn), ex(s), ex(t), np.log(ex(d)), alpha_int, tail_tol)
        ok = vals <= b(e)[..., None]
        idx = np.where(ok.any(-1), gp - 1 - np.argmax(ok[..., ::-1], axis=-1), 0)
        idx = np.minimum(idx, gp - 2)
        lo = np.take_along_axis(grid, idx[..., None], -1)[..., 0]
        hi = np.take_along_axis(grid, idx[..., None] + 1, -1)[..., 0]
    width = _sum_plan(b(nn), _variance_cap(lo, hi), tail_tol)
    inv = invert_monotone(_cal_fn("gamma", alpha_int, width), e, args=(b(nn), b(s), b(t), np.log(b(d))),
                          lo=lo, hi=hi, feasible="below", rtol=rtol)
    rdp = distributed_gaussian_rdp(alpha_int, n=b(nn), gamma=np.asarray(inv.value), sigma=b(s), tail_tol=tail_tol)
    _report_cap_curve(alpha_int, rdp, b(t), b(d), "distributed_gaussian_calibrate_gamma")
    return GammaCalibration(inv.value, inv.achieved, inv.status)


@float64_jit
def _max_steps_kernel(alpha, rdp, epsilon, log_delta):
    e0 = rdp_epsilon_terms(alpha, 0.0 * rdp, log_delta[..., None], "balle2020")  # the conversion's offset
    t_lam = jnp.floor((epsilon[..., None] - e0) / rdp)
    t_lam = jnp.where((rdp > 0) & (e0 <= epsilon[..., None]), t_lam, jnp.where(rdp > 0, 0.0, jnp.inf))
    t = jnp.max(t_lam, axis=-1)
    t = jnp.minimum(t, 2.0 ** 53)

    def eps_at(tt):
        return jnp.min(rdp_epsilon_terms(alpha, tt[..., None] * rdp, log_delta[..., None], "balle2020"), -1)

    # re-check, stepping down once for rounding at the boundary
    t = jnp.where(eps_at(t) <= epsilon, t, jnp.maximum(t - 1.0, 0.0))
    return t, eps_at(jnp.maximum(t, 1.0))


def distributed_gaussian_calibrate_steps(*, n, gamma, sigma, target_epsilon, delta, orders=None,
                                         method="exact") -> StepsCalibration:
    """Most rounds (steps) with eps <= target_epsilon at delta after them (distributed check-in, Gaussian), batched.

    The composed curve is linear in the number of rounds T, so per order T_alpha =
    floor((target_epsilon - c_alpha) / rdp(alpha)) with c_alpha the conversion's offset (Balle et al. 2020), and
    T = max over orders: exact, no bisection.  The value is re-checked.  Returns :class:`StepsCalibration`
    ``(steps, epsilon, status)``: status infeasible where not even one round fits (steps 0); at_limit where the
    round has zero RDP (gamma = 0: any number of rounds, steps 2^53).
    """
    alpha_int, e, d, _ = _cal_common(target_epsilon, delta, 1, orders)
    rdp = distributed_gaussian_rdp(alpha_int, n=n, gamma=gamma, sigma=sigma, method=method)
    shape = V.broadcastable(rdp=np.empty(rdp.shape[:-1]), target_epsilon=e, delta=d)
    with x64_scope():
        alpha = jnp.asarray(alpha_int, dtype=jnp.float64)
        r = jnp.broadcast_to(rdp, shape + rdp.shape[-1:])
        t, ach = _max_steps_kernel(alpha, r, jnp.broadcast_to(jnp.asarray(e), shape),
                                   jnp.broadcast_to(jnp.log(jnp.asarray(d)), shape))
        status = jnp.where(t < 1, int(Status.INFEASIBLE),
                           jnp.where(t >= 2.0 ** 53, int(Status.AT_LIMIT), int(Status.OK))).astype(jnp.int32)
    tt = np.asarray(t)
    _report_cap_curve(alpha_int, np.where(((tt >= 1) & (tt < 2.0 ** 53))[..., None], np.asarray(r), np.inf),
                      np.maximum(tt, 1.0), np.broadcast_to(d, shape), "distributed_gaussian_calibrate_steps")
    return StepsCalibration(t, ach, status)




# ----------------------------------------------------------------------------------------------------------
# (eps, delta) after T rounds of shuffled check-in


def shuffled_checkin_epsilon(*, n, gamma, eps0, steps, delta, bound="upper", method="exact", orders=None):
    """(eps, best order) after ``steps`` rounds of shuffled check-in with eps0-LDP randomizers, at ``delta``.

    ``bound="upper"``: Thm 2 (:func:`shuffled_checkin_upper_rdp`, ``method`` "exact" or "eq7"), a valid
    (eps, delta)-DP guarantee.  ``bound="lower"``: the same conversion applied to Thm 3's lower bound on the
    RDP (what Figure 1 plots as the lower bound): the best any RDP accounting of this mechanism can give
    through Eq. 3, *not* a DP guarantee and not a lower bound on the true eps.  Orders default to 2..64 for the
    upper bound (:data:`CHECKIN_ORDERS`) and to :data:`LOWER_ORDERS` (241 integers from 2 to 1e8) for the lower
    bound.  Where the best order is the largest of the grid an :class:`OrderCapWarning` is emitted (the value
    is still valid for the upper bound; pass wider ``orders``).
    """
    V.one_of("bound", bound, ("upper", "lower"))
    o = (CHECKIN_ORDERS if bound == "upper" else LOWER_ORDERS) if orders is None else orders
    t, d = check_params((STEPS, DELTA), broadcast=False, steps=steps, delta=delta)  # before the curve (compiled)
    if bound == "upper":
        rdp = shuffled_checkin_upper_rdp(o, n=n, gamma=gamma, eps0=eps0, method=method)
    else:
        rdp = shuffled_checkin_lower_rdp(o, n=n, gamma=gamma, eps0=eps0)
    shape = V.broadcastable(rdp=np.empty(rdp.shape[:-1]), steps=t, delta=d)
    total = np.broadcast_to(np.asarray(t)[..., None] * np.asarray(rdp), shape + rdp.shape[-1:])
    res = epsilon_from_rdp(np.asarray(o, dtype=np.float64), total, delta=np.broadcast_to(d, shape))
    _report_cap(res.order, o, res.epsilon, f"shuffled_checkin_epsilon(bound={bound!r})")
    return res


class ApproxEpsilon(NamedTuple):
    """eps after T rounds of a delta-approximate RDP accounting (``valid`` False where delta is used up)."""

    epsilon: jax.Array
    order: jax.Array
    valid: jax.Array
    fallback: jax.Array


def subsampled_shuffle_checkin_epsilon(*, n, gamma, eps0, steps, delta, shuffle_delta, delta0=0.0,
                                       orders=None) -> ApproxEpsilon:
    """eps after ``steps`` rounds of the Sec. 4.1 route (:func:`subsampled_shuffle_checkin_rdp`), at total ``delta``.

    The rounds compose as approximate RDP (curves and deltas add); the RDP curve is converted at
    delta - T delta_round (Balle et al. 2020).  Where T delta_round >= delta no guarantee follows:
    ``valid`` is False and epsilon is +inf (never silently).  Orders default to
    :data:`amplify_jax.rdp.DEFAULT_ORDERS` (any orders > 1 work on this route).
    """
    o = DEFAULT_ORDERS if orders is None else orders
    t, d = check_params((STEPS, DELTA), broadcast=False, steps=steps, delta=delta)
    r = subsampled_shuffle_checkin_rdp(o, n=n, gamma=gamma, eps0=eps0, delta0=delta0,
                                       shuffle_delta=shuffle_delta)
    shape = V.broadcastable(rdp=np.empty(r.rdp.shape[:-1]), steps=t, delta=d)
    spent = np.broadcast_to(t * np.asarray(r.delta), shape)
    left = np.broadcast_to(d, shape) - spent
    valid = left > 0
    total = np.broadcast_to(np.asarray(t)[..., None] * np.asarray(r.rdp), shape + r.rdp.shape[-1:])
    res = epsilon_from_rdp(np.asarray(o, dtype=np.float64), total, delta=np.where(valid, left, 0.5))
    eps = np.where(valid, np.asarray(res.epsilon), np.inf)
    _report_cap(np.where(valid, np.asarray(res.order), 0.0), o, np.where(valid, np.asarray(res.epsilon), 0.0),
                "subsampled_shuffle_checkin_epsilon")
    with x64_scope():  # NumPy's where and broadcast, then one transfer each (no program per shape)
        return ApproxEpsilon(*(jax.device_put(np.array(x)) for x in (eps, res.order, valid,
                                                                     np.broadcast_to(np.asarray(r.fallback), shape))))
