"""Conversions between Rényi DP and (eps, delta)-DP, with the optimal order.

- RDP -> (eps, delta): Balle, Barthe, Gaboardi, Hsu, Sato 2020 ("Hypothesis testing interpretations and Rényi
  DP", Thm 21), equivalently Canonne, Kamath, Steinke 2020 (Prop. 12) -- the default, ``method="balle2020"``:

      eps = rdp(alpha) + log((alpha - 1)/alpha) - (log delta + log alpha) / (alpha - 1);

  and Mironov 2017 (Prop. 3), ``method="mironov"``: eps = rdp(alpha) + log(1/delta)/(alpha - 1).
  Every order alpha > 1 gives a valid bound, so the minimum over any set of orders is valid.
- delta from eps: the inverse of the same inequalities, and delta <= sqrt(1 - e^{-rdp}) (total variation by
  Pinsker/Bretagnolle-Huber, KL <= D_alpha), whichever is smaller.
- DP -> RDP: Asoodeh, Liao, Calmon, Kosut, Sankar 2021 ("Three variants of differential privacy: lossless
  conversion and applications", Thm 3 / Cor. 4).  The self check-in paper prints it without the
  1/(lambda-1) log(.) and as a min over r (ERRATA.md); we take the original statement.

The optimal order is searched continuously: the grid's best order is refined by a golden-section search on
log(alpha - 1) between its neighbours, inside one compiled call for every point of a grid, and the result is
never worse than the grid's best.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
import jax
import jax.numpy as jnp

from . import _validate as V
from .numerics import float64_jit, log1mexp, x64_scope
from .rdp import DEFAULT_ORDERS

__all__ = [
    "METHODS",
    "EpsilonResult",
    "DeltaResult",
    "epsilon_from_rdp",
    "delta_from_rdp",
    "optimal_epsilon",
    "dp_to_rdp",
    "ApproxRDP",
    "rdp_epsilon_terms",
    "refine_order",
]

METHODS = ("balle2020", "mironov")


class EpsilonResult(NamedTuple):
    epsilon: jax.Array
    order: jax.Array


class DeltaResult(NamedTuple):
    delta: jax.Array
    order: jax.Array


def rdp_epsilon_terms(alpha, rdp, log_delta, method: str = "balle2020"):
    """eps(alpha) for one order (jnp, broadcasting): the conversion formula before the minimum over orders.

    Negative values are clipped to 0 (delta(eps) is non-increasing, so (0, delta) holds when the formula
    gives a negative eps).  NaN (an undefined curve value) becomes +inf so that it is never selected.
    """
    if method == "balle2020":
        eps = rdp + jnp.log1p(-1.0 / alpha) - (log_delta + jnp.log(alpha)) / (alpha - 1.0)
    elif method == "mironov":
        eps = rdp - log_delta / (alpha - 1.0)
    else:  # pragma: no cover - validated at the boundary
        raise ValueError(f"Expected method in {METHODS}, got method={method!r}.")
    eps = jnp.where(jnp.isnan(eps), jnp.inf, eps)
    return jnp.maximum(eps, 0.0)


def _log_delta_terms(alpha, rdp, eps, method):
    if method == "balle2020":
        ld = (alpha - 1.0) * (rdp - eps + jnp.log1p(-1.0 / alpha)) - jnp.log(alpha)
    else:
        ld = (alpha - 1.0) * (rdp - eps)
    # delta <= TV <= sqrt(1 - exp(-KL)) <= sqrt(1 - exp(-D_alpha)) for alpha >= 1.
    tv = 0.5 * log1mexp(-jnp.maximum(rdp, 1e-300))
    ld = jnp.minimum(ld, tv)
    ld = jnp.where(jnp.isnan(ld), 0.0, ld)
    return jnp.minimum(ld, 0.0)


@float64_jit(static_argnames=("method",))
def _grid_epsilon(orders, rdp, log_delta, method):
    e = rdp_epsilon_terms(orders, rdp, log_delta[..., None], method)
    i = jnp.argmin(e, axis=-1)
    return jnp.take_along_axis(e, i[..., None], -1)[..., 0], orders[i]


@float64_jit(static_argnames=("method",))
def _grid_delta(orders, rdp, eps, method):
    ld = _log_delta_terms(orders, rdp, eps[..., None], method)
    i = jnp.argmin(ld, axis=-1)
    return jnp.exp(jnp.take_along_axis(ld, i[..., None], -1)[..., 0]), orders[i]


def _check_curve(orders, rdp):
    a = V.orders("orders", orders)
    r = V.finite("rdp", np.asarray(rdp))  # a jax.Array is brought to the host once, then checked
    if np.any(r < 0):
        raise ValueError(f"Expected rdp >= 0, got rdp={r[r < 0].flat[0]!r}.")
    if r.ndim < 1 or r.shape[-1] != a.size:
        raise ValueError(f"Expected rdp with a trailing axis of len(orders)={a.size}, got shape {r.shape}.")
    return a, r


def epsilon_from_rdp(orders, rdp, *, delta, method="balle2020") -> EpsilonResult:
    """(eps, best order) from an RDP curve given on a grid of orders, for every point of a grid.

    ``rdp`` has the orders axis last; ``delta`` broadcasts with its leading axes.
    """
    a, r = _check_curve(orders, rdp)
    d = V.unit_open("delta", delta)
    V.one_of("method", method, METHODS)
    shape = V.broadcastable(rdp=r[..., 0], delta=d)
    with x64_scope():
        rb = jnp.broadcast_to(jnp.asarray(r), shape + a.shape)
        return EpsilonResult(*_grid_epsilon(jnp.asarray(a), rb, jnp.broadcast_to(jnp.log(d), shape), method))


def delta_from_rdp(orders, rdp, *, epsilon, method="balle2020") -> DeltaResult:
    """(delta, best order) from an RDP curve at a given eps (the inverse conversion), for every grid point."""
    a, r = _check_curve(orders, rdp)
    e = V.nonnegative("epsilon", epsilon)
    V.one_of("method", method, METHODS)
    shape = V.broadcastable(rdp=r[..., 0], epsilon=e)
    with x64_scope():
        rb = jnp.broadcast_to(jnp.asarray(r), shape + a.shape)
        return DeltaResult(*_grid_delta(jnp.asarray(a), rb, jnp.broadcast_to(jnp.asarray(e), shape), method))


# ----------------------------------------------------------------------------------------------------------
# Continuous search of the optimal order

_GOLDEN = 0.6180339887498949


def refine_order(rdp_fn, best_eps, best_alpha, lo, hi, log_delta, args, method, n_iter=40):
    """Golden-section search of eps(alpha) on t = log(alpha - 1) in [lo, hi]; jnp, for use inside kernels.

    ``rdp_fn(alpha, *args)`` must broadcast (alpha and args share the batch shape here).  Returns the better
    of the search's best point and (best_eps, best_alpha), so the result never exceeds the grid's best.
    """

    def f(t):
        alpha = 1.0 + jnp.exp(t)
        return rdp_epsilon_terms(alpha, rdp_fn(alpha, *args), log_delta, method)

    a = jnp.log(lo - 1.0)
    b = jnp.log(hi - 1.0)
    c = b - _GOLDEN * (b - a)
    d = a + _GOLDEN * (b - a)
    inf = jnp.full(jnp.shape(c), jnp.inf)

    def body(it, s):
        # iterations 0 and 1 evaluate the starting points c and d; then one golden-section step each
        # (f is traced once, which keeps compilation cheap for large curves).
        a, b, c, d, fc, fd = s
        left = fc <= fd  # minimum in [a, d]
        na = jnp.where(left, a, c)
        nb = jnp.where(left, d, b)
        nc = jnp.where(left, nb - _GOLDEN * (nb - na), d)
        nd = jnp.where(left, c, na + _GOLDEN * (nb - na))
        x = jnp.where(it == 0, c, jnp.where(it == 1, d, jnp.where(left, nc, nd)))
        fx = f(x)
        step = it >= 2
        return (jnp.where(step, na, a), jnp.where(step, nb, b), jnp.where(step, nc, c), jnp.where(step, nd, d),
                jnp.where(it == 0, fx, jnp.where(step, jnp.where(left, fx, fd), fc)),
                jnp.where(it == 1, fx, jnp.where(step, jnp.where(left, fc, fx), fd)))

    a, b, c, d, fc, fd = jax.lax.fori_loop(0, n_iter + 2, body, (a, b, c, d, inf, inf))
    t_best = jnp.where(fc <= fd, c, d)
    e_best = jnp.minimum(fc, fd)
    better = e_best < best_eps
    return jnp.where(better, e_best, best_eps), jnp.where(better, 1.0 + jnp.exp(t_best), best_alpha)


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
    n_iter: int = 40,
) -> EpsilonResult:
    """eps at delta, minimised over every order alpha > 1, for every point of a parameter grid.

    ``rdp_fn(alpha, *args)`` is a pure jnp function (hashable: a module-level function, not a new lambda per
    call, to reuse compiled code) returning the RDP at order alpha; it must broadcast alpha with the args.
    ``args`` are arrays (broadcast together with ``delta``).  The curve is evaluated on ``orders`` (default
    :data:`~amplify_jax.rdp.DEFAULT_ORDERS`), or taken from ``grid_rdp`` if given (shape batch + orders),
    then the best grid order is refined continuously between its neighbours (golden section on
    log(alpha - 1)).  The result is never larger than the grid's best.  Returns (epsilon, order).
    """
    a = V.orders("orders", DEFAULT_ORDERS if orders is None else orders)
    a = np.sort(a)
    d = V.unit_open("delta", delta)
    V.one_of("method", method, METHODS)
    args = tuple(np.asarray(x, dtype=np.float64) for x in args)
    shape = V.broadcastable(delta=d, **{f"args[{i}]": x for i, x in enumerate(args)})
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
    This is the delta = 0 case of Lemma 3 of the self check-in paper (Asoodeh et al. 2021): there the
    expression, maximised over the binary pairs that meet (eps, 0)-DP, is attained by randomized response.

    For delta > 0 no finite RDP bound follows from (eps, delta)-DP alone (a mechanism that reveals its input
    with probability delta has D_alpha = inf; the self check-in paper's Eq. 4 takes a *minimum* over r,
    which under-states, see ERRATA.md).  The sound statement is the decomposition lemma (Kairouz, Oh,
    Viswanath 2015; Murtagh and Vadhan 2016, Lemma 3.2): an (eps, delta)-DP pair equals, up to events of
    probability delta, an eps-DP pair.  Hence the mechanism is delta-approximately (alpha, rr(alpha, eps))-RDP
    (Bun and Steinke 2016, Def. 1.12).  Approximate RDP composes by adding both the curves and the deltas;
    convert with :func:`epsilon_from_rdp` at delta_target - sum(deltas).
    """
    from .rdp import pure_dp_rdp

    a = V.orders("orders", orders)
    e = V.nonnegative("eps", eps)
    d = V.probability("delta", delta)
    shape = V.broadcastable(eps=e, delta=d)
    with x64_scope():
        curve = pure_dp_rdp(a, eps0=np.broadcast_to(e, shape))
        return ApproxRDP(curve, jnp.broadcast_to(jnp.asarray(d, dtype=jnp.float64), shape))
