"""RDP curve -> (eps, delta) on any grid of orders >= 1, for :class:`amplify_jax.rdp.Accountant`.

The orders 1 < alpha <= rdp.MAX_ORDER go through :func:`amplify_jax.conversions.epsilon_from_rdp` /
:func:`~amplify_jax.conversions.delta_from_rdp` (Balle et al. 2020, Thm 21 = Canonne, Kamath, Steinke 2020,
Prop. 12: eps = D_alpha + log(1 - 1/alpha) - (log delta + log alpha)/(alpha - 1), the bound dp_accounting's
``compute_epsilon`` uses; rounded up there).  The other orders a grid may hold, as dp_accounting's do:

- alpha = 1 (the KL divergence) and every order: the total variation is at most sqrt(1 - e^{-KL})
  (Bretagnolle-Huber) and KL <= D_alpha, so delta <= sqrt(1 - e^{-D_alpha}) at eps = 0 for every eps, and eps = 0
  where delta exceeds it (the hockey-stick divergence at eps = 0 is the total variation);
- 1e6 < alpha < inf: the same Balle et al. bound, in float64 here with a margin for its roundings;
- alpha = inf: D_inf is a pure-DP epsilon (delta = 0 at eps >= D_inf).

Conventions of dp_accounting kept: a curve that is 0 everywhere answers (0, 0); one that is inf everywhere
answers eps = inf and delta = 1; delta = 0 asks for pure DP (inf unless the grid holds the order inf).
"""

from __future__ import annotations

import numpy as np

from . import _rdp_curves as rdp  # the curves' module, not the public rdp (which loads this one lazily)
from . import conversions

_U = float(np.finfo(np.float64).eps)
#: Stand-in for +inf handed to the conversions (they take finite curves): any eps it yields is >= _BIG / 2.
_BIG = 1e300


def _tv_log(r):
    """log of sqrt(1 - e^{-r}) rounded up (delta at eps = 0 from D_alpha = r)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        v = 0.5 * np.log(-np.expm1(-r))
        return np.where(np.isfinite(v), v + 8.0 * _U * np.abs(v), v)


def _regular(orders):
    return (orders > 1.0) & (orders <= rdp.MAX_ORDER)


def _broadcast(orders, curve, x):
    """(orders, curve, x) as float64 arrays: the curve's batch and x broadcast together, the orders trailing."""
    orders = np.asarray(orders, dtype=np.float64)
    r = np.asarray(curve, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    shape = np.broadcast_shapes(r.shape[:-1], x.shape)
    return orders, np.broadcast_to(r, shape + orders.shape), np.broadcast_to(x, shape)


def epsilon(orders, curve, delta):
    """Least eps over the grid for the target ``delta`` (in [0, 1]); broadcast(curve batch, delta shape)."""
    orders, r, d = _broadcast(orders, curve, delta)
    best = np.full(d.shape, np.inf)
    reg = _regular(orders)
    inside = (d > 0) & (d < 1)
    if reg.any() and inside.any():
        rr = np.where(np.isfinite(r[..., reg]), r[..., reg], _BIG)
        e = np.asarray(conversions.epsilon_from_rdp(orders[reg], rr, delta=np.where(inside, d, 0.5)).epsilon)
        best = np.where(inside & (e < _BIG / 2), np.minimum(best, e), best)
    big = np.isfinite(orders) & (orders > 1.0) & ~reg
    if big.any() and inside.any():
        a = orders[big]
        with np.errstate(divide="ignore", invalid="ignore"):
            ld = np.log(np.where(inside, d, 0.5))[..., None]
            l1, la = np.log1p(-1.0 / a), np.log(a)
            e = r[..., big] + l1 - (ld + la) / (a - 1.0)
            e = e + 8.0 * _U * (np.abs(r[..., big]) + np.abs(l1) + (np.abs(ld) + la) / (a - 1.0))
        e = np.where(np.isnan(e), np.inf, e)
        best = np.where(inside, np.minimum(best, np.min(e, axis=-1)), best)
    pure = np.isinf(orders)
    if pure.any():
        best = np.minimum(best, np.min(r[..., pure], axis=-1))  # D_inf: (D_inf, 0)-DP, for every delta
    tv = np.min(_tv_log(r), axis=-1)
    with np.errstate(divide="ignore"):
        best = np.where(np.log(np.maximum(d, 0.0)) > tv, 0.0, best)  # delta above the total variation
    best = np.where(np.all(r == 0.0, axis=-1), 0.0, best)
    return np.maximum(best, 0.0)


def delta(orders, curve, eps):
    """Least delta over the grid at ``eps`` (>= 0, inf allowed); broadcast(curve batch, eps shape)."""
    orders, r, e = _broadcast(orders, curve, eps)
    fin_e = np.isfinite(e)
    log_best = np.min(_tv_log(r), axis=-1)
    reg = _regular(orders)
    if reg.any() and fin_e.any():
        rr = np.where(np.isfinite(r[..., reg]), r[..., reg], _BIG)
        dd = np.asarray(conversions.delta_from_rdp(orders[reg], rr, epsilon=np.where(fin_e, e, 0.0)).delta)
        with np.errstate(divide="ignore"):
            log_best = np.where(fin_e, np.minimum(log_best, np.log(dd)), log_best)
    big = np.isfinite(orders) & (orders > 1.0) & ~reg
    if big.any():
        a = orders[big]
        rb = r[..., big]
        ee = np.where(fin_e, e, 0.0)[..., None]
        with np.errstate(invalid="ignore", over="ignore"):
            dif = rb - ee
            # rb - ee is exact where they are within a factor 2 (Sterbenz), else rounded once
            exact = (ee <= 2.0 * rb) & (rb <= 2.0 * ee)
            l1, la = np.log1p(-1.0 / a), np.log(a)
            t = dif + l1
            ld = (a - 1.0) * t - la
            err = 4.0 * _U * ((a - 1.0) * (np.where(exact, 0.0, np.abs(dif)) + np.abs(t) + np.abs(l1)) + la)
            ld = ld + err + 4.0 * _U * np.abs(ld)
        ld = np.where(np.isnan(ld), 0.0, ld)
        log_best = np.where(fin_e, np.minimum(log_best, np.min(ld, axis=-1)), log_best)
    pure = np.isinf(orders)
    if pure.any():
        at = np.any(np.isfinite(r[..., pure]) & (e[..., None] >= r[..., pure]), axis=-1)
        log_best = np.where(at, -np.inf, log_best)
    out = np.exp(np.minimum(log_best, 0.0))
    finite_somewhere = np.any(np.isfinite(r), axis=-1)
    out = np.where(~fin_e, np.where(finite_somewhere, 0.0, 1.0), out)  # eps = inf: 0, or 1 for a non-private one
    out = np.where(finite_somewhere, out, 1.0)
    return np.where(np.all(r == 0.0, axis=-1), 0.0, out)
