"""Conversions between Rényi DP and (eps, delta)-DP, with the optimal order.

- RDP -> (eps, delta): Balle, Barthe, Gaboardi, Hsu, Sato 2020 ("Hypothesis testing interpretations and Rényi
  DP", Thm 21), equivalently Canonne, Kamath, Steinke 2020 (Prop. 12) -- the default, ``method="balle2020"``:

      eps = rdp(alpha) + log((alpha - 1)/alpha) - (log delta + log alpha) / (alpha - 1);

  and Mironov 2017 (Prop. 3), ``method="mironov"``: eps = rdp(alpha) + log(1/delta)/(alpha - 1).
  Every order alpha > 1 gives a valid bound, so the minimum over any set of orders is valid.
- delta from eps: the inverse of the same inequalities, and delta <= sqrt(1 - e^{-rdp}) (total variation by
  Pinsker/Bretagnolle-Huber, KL <= D_alpha), whichever is smaller.
- DP -> RDP (:func:`dp_to_rdp`): tight for pure eps-DP (binary randomized response); for delta > 0 a
  delta-approximate RDP curve (the decomposition lemma), since (eps, delta)-DP implies no finite RDP.  The
  self check-in paper's Lemma 3 / Eq. 4 cites Asoodeh, Liao, Calmon, Kosut, Sankar 2021 ("Three variants of
  differential privacy: lossless conversion and applications", arXiv 2008.06529) for a DP -> RDP conversion,
  but their Thm 3 is the reverse, RDP -> DP, statement: (alpha, gamma)-RDP implies (eps, delta)-DP when
  gamma <= eps + log(min_{p in (delta, 1)} M(p)) / (alpha - 1), M(p) = p^alpha (p - delta)^(1 - alpha) +
  (1 - p)^alpha (e^eps - p + delta)^(1 - alpha).  Eq. 4 is that expression without eps + log(.)/(alpha - 1),
  read backwards (docs/errata.md#e-checkin-lemma3); we do not implement it as a DP -> RDP conversion.

The optimal order is searched continuously: the grid's best order is refined by Brent's search on
log(alpha - 1) between its neighbours, inside one compiled call for every point of a grid, and the result is
never worse than the grid's best.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
import jax
import jax.numpy as jnp

from .._core import validate as V
from .._core.domains import check_params
from .._core.numerics import float64_jit, log1mexp, x64_scope
from . import _params as P
from ._rdp_curves import DEFAULT_ORDERS, _randomized_response_curve

# importable, not in __all__: the result types (EpsilonResult, DeltaResult, ApproxRDP), the kernels rdp_epsilon_terms
# and refine_order (public from amplify_jax.internal), METHODS (the values of ``method``) and the search's tunables
__all__ = ["epsilon_from_rdp", "delta_from_rdp", "optimal_epsilon", "dp_to_rdp"]

METHODS = P.METHOD.domain.values  #: ("balle2020", "mironov"): the domain of the ``method`` Param


class EpsilonResult(NamedTuple):
    """eps at a delta from an RDP curve (:func:`epsilon_from_rdp`, :func:`optimal_epsilon`, the DP-SGD accountant),
    with the order that gave it."""

    epsilon: jax.Array  #: the (eps, delta) bound's eps, rounded up
    order: jax.Array  #: the Rényi order at which it was attained


class DeltaResult(NamedTuple):
    """delta at an eps from an RDP curve (:func:`delta_from_rdp`), with the order that gave it."""

    delta: jax.Array  #: the (eps, delta) bound's delta, rounded up
    order: jax.Array  #: the Rényi order at which it was attained


_EPS = float(np.finfo(np.float64).eps)
#: ulps of the terms' magnitudes added to a conversion's result: each of its few float64 operations rounds once
_ROUND_ULPS = 8.0


def rdp_epsilon_terms(alpha, rdp, log_delta, method: str = "balle2020"):
    """eps(alpha) for one order (jnp, broadcasting): the conversion formula before the minimum over orders.

    Negative values are clipped to 0 (delta(eps) is non-increasing, so (0, delta) holds when the formula
    gives a negative eps).  NaN (an undefined curve value) becomes +inf so that it is never selected.
    """
    if method == "balle2020":
        l1, la = jnp.log1p(-1.0 / alpha), jnp.log(alpha)
        eps = rdp + l1 - (log_delta + la) / (alpha - 1.0)
        scale = jnp.abs(rdp) + jnp.abs(l1) + (jnp.abs(log_delta) + jnp.abs(la)) / (alpha - 1.0)
    elif method == "mironov":
        eps = rdp - log_delta / (alpha - 1.0)
        scale = jnp.abs(rdp) + jnp.abs(log_delta) / (alpha - 1.0)
    else:  # pragma: no cover - validated at the boundary
        raise ValueError(f"Expected method in {METHODS}, got method={method!r}.")
    # rounded up by a bound on the float64 error of the sum (a few ulps of its terms' magnitudes): the
    # soundness campaign (benchmarks/soundness_campaign.py) found the unrounded sum up to 1.5e-14 below exact
    eps = eps + _ROUND_ULPS * _EPS * scale
    eps = jnp.where(jnp.isnan(eps), jnp.inf, eps)
    return jnp.maximum(eps, 0.0)


def _log_delta_terms(alpha, rdp, eps, method):
    if method == "balle2020":
        l1, la = jnp.log1p(-1.0 / alpha), jnp.log(alpha)
        ld = (alpha - 1.0) * (rdp - eps + l1) - la
        scale = (alpha - 1.0) * (jnp.abs(rdp) + jnp.abs(eps) + jnp.abs(l1)) + jnp.abs(la)
    else:
        ld = (alpha - 1.0) * (rdp - eps)
        scale = (alpha - 1.0) * (jnp.abs(rdp) + jnp.abs(eps))
    # log delta rounded up by a bound on its float64 error (the campaign found delta 1e-13 relative below exact)
    ld = ld + _ROUND_ULPS * _EPS * scale
    # delta <= TV <= sqrt(1 - exp(-KL)) <= sqrt(1 - exp(-D_alpha)) for alpha >= 1.
    tv = 0.5 * log1mexp(-jnp.maximum(rdp, 1e-300))
    tv = tv + _ROUND_ULPS * _EPS * jnp.abs(tv)
    ld = jnp.minimum(ld, tv)
    ld = jnp.where(jnp.isnan(ld), 0.0, ld)
    return jnp.minimum(ld, 0.0)


@float64_jit(static_argnames=("method",))
def _grid_epsilon(orders, rdp, delta, method):
    e = rdp_epsilon_terms(orders, rdp, jnp.log(delta)[..., None], method)
    i = jnp.argmin(e, axis=-1)
    return jnp.take_along_axis(e, i[..., None], -1)[..., 0], orders[i]


@float64_jit(static_argnames=("method",))
def _grid_delta(orders, rdp, eps, method):
    ld = _log_delta_terms(orders, rdp, eps[..., None], method)
    i = jnp.argmin(ld, axis=-1)
    return jnp.exp(jnp.take_along_axis(ld, i[..., None], -1)[..., 0]), orders[i]


def _check_curve(orders, rdp):
    a = P.check_orders(P.ANY_ORDERS, orders)
    r, = check_params((P.RDP,), broadcast=False, rdp=np.asarray(rdp))  # a jax.Array comes to the host once
    if r.ndim < 1 or r.shape[-1] != a.size:
        raise ValueError(f"Expected rdp with a trailing axis of len(orders)={a.size}, got shape {r.shape}.")
    return a, r


def epsilon_from_rdp(orders, rdp, *, delta, method="balle2020") -> EpsilonResult:
    """(eps, best order) from an RDP curve given on a grid of orders, for every point of a grid.

    ``rdp`` has the orders axis last; ``delta`` broadcasts with its leading axes.
    """
    a, r = _check_curve(orders, rdp)
    d, = check_params((P.DELTA,), broadcast=False, delta=delta)
    V.broadcastable(rdp=r[..., 0], delta=d)
    return _epsilon_from_rdp(a, r, d, P.check_method(method))


def _epsilon_from_rdp(a, r, d, method) -> EpsilonResult:
    """:func:`epsilon_from_rdp`'s computation on checked values (orders ``a``, curve ``r``, delta ``d``)."""
    shape = np.broadcast_shapes(r.shape[:-1], np.shape(d))
    # NumPy arrays into one compiled program per shape (an eager jnp op here would be a small program each)
    with x64_scope():
        return EpsilonResult(*_grid_epsilon(a, np.broadcast_to(r, shape + a.shape), np.broadcast_to(d, shape), method))


def delta_from_rdp(orders, rdp, *, epsilon, method="balle2020") -> DeltaResult:
    """(delta, best order) from an RDP curve at a given eps (the inverse conversion), for every grid point."""
    a, r = _check_curve(orders, rdp)
    e, = check_params((P.EPSILON,), broadcast=False, epsilon=epsilon)
    P.check_method(method)
    shape = V.broadcastable(rdp=r[..., 0], epsilon=e)
    with x64_scope():
        return DeltaResult(*_grid_delta(a, np.broadcast_to(r, shape + a.shape), np.broadcast_to(e, shape), method))


# ----------------------------------------------------------------------------------------------------------
# Continuous search of the optimal order

_GOLDEN = 0.6180339887498949
#: Most evaluations of Brent's search in :func:`refine_order`; it stops earlier once every point of the batch
#: has converged to ``BRENT_TOL`` (a smooth interior minimum takes ~6-10, a kink or an end of the bracket
#: more, since there it shrinks the bracket by the golden ratio per step).
BRENT_STEPS = 32
#: Tolerance of Brent's search in t = log(alpha - 1), relative to 1 + |t|.
BRENT_TOL = 1e-7
#: Every this many steps Brent's search takes a golden-section step whatever the parabola says: the minimum
#: of eps(alpha) can be a kink (the subsampled Gaussian's RDP rises sharply in alpha where its second regime
#: takes over, and with many steps the optimum sits at the foot of that rise), where parabolic steps crawl.
BRENT_GOLDEN_EVERY = 3


def refine_order(rdp_fn, best_eps, best_alpha, lo, hi, log_delta, args, method, n_iter=BRENT_STEPS,
                 final_args=None):
    """Brent's minimisation of eps(alpha) on t = log(alpha - 1) in [lo, hi]; jnp, for use inside kernels.

    Parabolic steps through the three best points found so far, with golden-section steps whenever the
    parabola is not trusted (Brent 1973, "Algorithms for minimization without derivatives", ch. 5), started
    from the grid's best order (whose eps is known), every point of the batch in lock step, until every point
    has converged to ``BRENT_TOL`` in t (a converged point keeps its state) or after ``n_iter`` evaluations of
    ``rdp_fn``; every ``BRENT_GOLDEN_EVERY``-th step is a golden-section step.
    ``rdp_fn(alpha, *args)`` must broadcast (alpha and args share the batch shape here).  Returns the best
    evaluated point or (best_eps, best_alpha), whichever is smaller: any order gives a valid bound, so the
    result is never above the grid's best, whatever the number of steps.

    ``final_args`` (a pytree shaped like ``args``, for a search run on an approximation of the RDP that its
    arguments select): after the search, one more evaluation in the same loop, at the best point found, with
    ``rdp_fn(alpha, *final_args)``; that value and its order are returned (not compared with ``best_eps``),
    so that ``rdp_fn`` is traced once for the search and the final value.
    """

    def f(t, fargs=args):
        alpha = 1.0 + jnp.exp(t)
        return rdp_epsilon_terms(alpha, rdp_fn(alpha, *fargs), log_delta, method)

    a = jnp.log(lo - 1.0)
    b = jnp.log(hi - 1.0)
    x0 = jnp.clip(jnp.log(best_alpha - 1.0), a, b)
    fx0 = jnp.asarray(best_eps, dtype=jnp.float64) + jnp.zeros_like(x0)
    zero = jnp.zeros_like(x0)
    cg = 1.0 - _GOLDEN  # 0.381966...

    def converged(s):
        a, b, x = s[0], s[1], s[2]
        tol1 = BRENT_TOL * (1.0 + jnp.abs(x))
        return jnp.abs(x - 0.5 * (a + b)) <= 2.0 * tol1 - 0.5 * (b - a)

    def propose(c):
        """The next point u of Brent's step, and the step's (d, e) bookkeeping."""
        it, s = c
        a, b, x, w, v, fx, fw, fv, d, e = s
        xm = 0.5 * (a + b)
        tol1 = BRENT_TOL * (1.0 + jnp.abs(x))
        tol2 = 2.0 * tol1
        # parabola through (x, fx), (w, fw), (v, fv)
        r = (x - w) * (fx - fv)
        qq = (x - v) * (fx - fw)
        p = (x - v) * qq - (x - w) * r
        qq = 2.0 * (qq - r)
        p = jnp.where(qq > 0.0, -p, p)
        qq = jnp.abs(qq)
        try_par = jnp.abs(e) > tol1
        par_ok = (try_par & (jnp.abs(p) < jnp.abs(0.5 * qq * e)) & (p > qq * (a - x)) & (p < qq * (b - x))
                  & jnp.isfinite(p) & (qq > 0.0) & (it % BRENT_GOLDEN_EVERY != BRENT_GOLDEN_EVERY - 1))
        e_gold = jnp.where(x >= xm, a - x, b - x)
        d_par = p / jnp.where(qq > 0.0, qq, 1.0)
        u_par = x + d_par
        near_end = (u_par - a < tol2) | (b - u_par < tol2)
        d_par = jnp.where(near_end, jnp.where(xm - x >= 0.0, tol1, -tol1), d_par)
        new_e = jnp.where(par_ok, d, e_gold)
        new_d = jnp.where(par_ok, d_par, cg * e_gold)
        u = jnp.where(jnp.abs(new_d) >= tol1, x + new_d, x + jnp.where(new_d >= 0.0, tol1, -tol1))
        return jnp.clip(u, a, b), new_d, new_e

    def absorb(c, u, fu, new_d, new_e):
        it, s = c
        a, b, x, w, v, fx, fw, fv, d, e = s
        done = converged(s)
        fu = jnp.where(jnp.isnan(fu), jnp.inf, fu)
        better = fu <= fx
        na = jnp.where(better, jnp.where(u >= x, x, a), jnp.where(u < x, u, a))
        nb = jnp.where(better, jnp.where(u >= x, b, x), jnp.where(u < x, b, u))
        second = (~better) & ((fu <= fw) | (w == x))
        third = (~better) & (~second) & ((fu <= fv) | (v == x) | (v == w))
        nv = jnp.where(better | second, w, jnp.where(third, u, v))
        nfv = jnp.where(better | second, fw, jnp.where(third, fu, fv))
        nw = jnp.where(better, x, jnp.where(second, u, w))
        nfw = jnp.where(better, fx, jnp.where(second, fu, fw))
        nx = jnp.where(better, u, x)
        nfx = jnp.where(better, fu, fx)
        new = (na, nb, nx, nw, nv, nfx, nfw, nfv, new_d, new_e)
        return it + 1, tuple(jnp.where(done, old, nw_) for old, nw_ in zip(s, new))

    def body(c):
        u, new_d, new_e = propose(c)
        return absorb(c, u, f(u), new_d, new_e)

    init = (a, b, x0, x0, x0, fx0, fx0, fx0, zero, zero)
    if final_args is not None:
        def body_final(c):
            last = (c[0] >= n_iter) | jnp.all(converged(c[1]))
            u, new_d, new_e = propose(c[:2])
            # one call of rdp_fn: the search's next point, or (last) the best point with final_args
            u = jnp.where(last, c[1][2], u)
            fargs = jax.tree_util.tree_map(lambda fin, arg: jnp.where(last, fin, arg), final_args, args)
            fu = f(u, fargs)
            it, s = absorb(c[:2], u, fu, new_d, new_e)
            s = jax.tree_util.tree_map(lambda old, nw: jnp.where(last, old, nw), c[1], s)
            return it, s, last, jnp.where(last, fu, c[3])

        _, s, _, value = jax.lax.while_loop(lambda c: ~c[2], body_final, (0, init, jnp.asarray(False), fx0))
        return value, 1.0 + jnp.exp(s[2])
    _, s = jax.lax.while_loop(lambda c: (c[0] < n_iter) & jnp.any(~converged(c[1])), body, (0, init))
    x, fx = s[2], s[5]
    better = fx < best_eps
    return jnp.where(better, fx, best_eps), jnp.where(better, 1.0 + jnp.exp(x), best_alpha)


def _neighbour_bracket(orders, idx):
    """[lower, upper] orders around the grid's best index; beyond the ends, extend the grid geometrically."""
    n = orders.shape[0]
    lo = jnp.where(idx > 0, orders[jnp.maximum(idx - 1, 0)], 1.0 + (orders[0] - 1.0) / 16.0)
    hi = jnp.where(idx < n - 1, orders[jnp.minimum(idx + 1, n - 1)], 1.0 + (orders[-1] - 1.0) * 4.0)
    return lo, hi


@float64_jit(static_argnames=("rdp_fn", "method", "n_iter"))
def _optimal_kernel(orders, grid_rdp, log_delta, args, rdp_fn, method, n_iter):
    e = rdp_epsilon_terms(orders, grid_rdp, log_delta[..., None], method)
    idx = jnp.argmin(e, axis=-1)
    best_eps = jnp.take_along_axis(e, idx[..., None], -1)[..., 0]
    best_alpha = orders[idx]
    lo, hi = _neighbour_bracket(orders, idx)
    return refine_order(rdp_fn, best_eps, best_alpha, lo, hi, log_delta, args, method, n_iter)


@float64_jit(static_argnames=("rdp_fn",))
def _grid_curve(orders, args, rdp_fn):
    return rdp_fn(orders, *[jnp.asarray(x)[..., None] for x in args])


def optimal_epsilon(
    rdp_fn: Callable,
    *,
    delta,
    args=(),
    orders=None,
    method="balle2020",
    grid_rdp=None,
    n_iter: int = BRENT_STEPS,
) -> EpsilonResult:
    """eps at delta, minimised over every order alpha > 1, for every point of a parameter grid.

    ``rdp_fn(alpha, *args)`` is a pure jnp function (hashable: a module-level function, not a new lambda per
    call, to reuse compiled code) returning the RDP at order alpha; it must broadcast alpha with the args.
    ``args`` are arrays (broadcast together with ``delta``).  The curve is evaluated on ``orders`` (default
    :data:`~amplify_jax.rdp.DEFAULT_ORDERS`), or taken from ``grid_rdp`` if given (shape batch + orders),
    then the best grid order is refined continuously between its neighbours (``n_iter`` steps of Brent's
    search on log(alpha - 1), :func:`refine_order`).  The result is never larger than the grid's best.
    Returns (epsilon, order).
    """
    a = np.sort(P.check_orders(P.ANY_ORDERS, DEFAULT_ORDERS if orders is None else orders))
    d, = check_params((P.DELTA,), broadcast=False, delta=delta)
    P.check_method(method)
    args = tuple(np.asarray(x, dtype=np.float64) for x in args)
    V.broadcastable(delta=d, **{f"args[{i}]": x for i, x in enumerate(args)})
    return _optimal_epsilon(rdp_fn, a, d, args, method, grid_rdp, n_iter)


def _optimal_epsilon(rdp_fn, a, d, args, method, grid_rdp=None, n_iter=BRENT_STEPS) -> EpsilonResult:
    """:func:`optimal_epsilon`'s computation on checked values (sorted orders ``a``, delta ``d``, float64 ``args``)."""
    shape = np.broadcast_shapes(np.shape(d), *(np.shape(x) for x in args))
    with x64_scope():
        bargs = tuple(jnp.broadcast_to(jnp.asarray(x), shape) for x in args)
        if grid_rdp is None:
            grid = _grid_curve(jnp.asarray(a), bargs, rdp_fn)
        else:
            grid = jnp.asarray(grid_rdp, dtype=jnp.float64)
            if grid.shape[-1] != a.size:
                raise ValueError(f"Expected grid_rdp with trailing axis {a.size}, got shape {grid.shape}.")
        grid = jnp.broadcast_to(grid, shape + a.shape)
        eps, order = _optimal_kernel(
            jnp.asarray(a), grid, jnp.broadcast_to(jnp.log(d), shape), bargs, rdp_fn, method, n_iter
        )
        return EpsilonResult(eps, order)


# ----------------------------------------------------------------------------------------------------------
# DP -> RDP


class ApproxRDP(NamedTuple):
    """A delta-approximate RDP curve: with probability >= 1 - delta the pair is (alpha, rdp)-RDP."""

    rdp: jax.Array
    delta: jax.Array


def dp_to_rdp(orders, *, eps, delta=0.0) -> ApproxRDP:
    """RDP implied by (eps, delta)-DP, as a delta-approximate RDP curve (rdp, delta).

    For delta = 0 this is exact and tight: every eps-DP pair is a post-processing of binary randomized
    response (Kairouz, Oh, Viswanath 2015), so D_alpha <= the RR curve of :func:`~amplify_jax.rdp.pure_dp_rdp`.
    The self check-in paper's Lemma 3 (Eq. 4) attributes a DP -> RDP conversion to Asoodeh et al. 2021, but
    their Thm 3 (arXiv 2008.06529) is the reverse, RDP -> DP, statement (module docstring); Eq. 4 is that
    expression read backwards and is not used here.

    For delta > 0 no finite RDP bound follows from (eps, delta)-DP alone (a mechanism that reveals its input
    with probability delta has D_alpha = inf; the self check-in paper's Eq. 4 takes a *minimum* over r,
    which under-states, see docs/errata.md#e-checkin-lemma3).  The sound statement is the decomposition
    lemma (Kairouz, Oh, Viswanath 2015; Murtagh and Vadhan 2016, Lemma 3.2): an (eps, delta)-DP pair equals,
    up to events of probability delta, an eps-DP pair.  Hence the mechanism is delta-approximately
    (alpha, rr(alpha, eps))-RDP (Bun and Steinke 2016, Def. 1.12).  Approximate RDP composes by adding both
    the curves and the deltas; convert with :func:`epsilon_from_rdp` at delta_target - sum(deltas).

    ``delta`` in [0, 1): delta = 1 is no guarantee at all (every pair of laws is (eps, 1)-DP), and the curve
    with delta 1 would say nothing either.
    """
    a = P.check_orders(P.ORDERS, orders)  # the orders of pure_dp_rdp's curve
    e, d = check_params((P.DP_EPS, P.DP_DELTA), broadcast=False, eps=eps, delta=delta)
    shape = V.broadcastable(eps=e, delta=d)
    with x64_scope():
        # pure_dp_rdp's computation (binary randomized response), its checks not repeated
        curve = _randomized_response_curve(a, np.broadcast_to(e, shape), np.asarray(2.0))
        return ApproxRDP(curve, jnp.broadcast_to(jnp.asarray(d, dtype=jnp.float64), shape))
