"""Thm 1 (Eq. 5) of the self check-in paper: the binomial-weighted RDP sum over the number k of participants.

The sum over k is evaluated *exactly* for n up to 1e15: the k that carry all but a tail of mass <= ``tail_tol``
(Bernstein's inequality fixes the window size at the Python boundary, a static shape) are summed term by term,
and the rest of the k-axis is covered by geometric blocks whose contribution is bounded above (block mass <=
size x the largest pmf in it; per-k moment <= the block's worst case).  The result is therefore an upper bound
whatever ``tail_tol`` is; ``tail_tol`` only sets how tight it is.  Also here: the effective rate of Sec. 3.2,
and the helpers that every section shares (integer orders, the grid of the Chernoff parameter of Eqs. 7, 8, 11).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import jax
import jax.numpy as jnp

from .._core import validate as V
from .._core.numerics import float64_jit, log_binom_pmf, logsumexp, x64_scope


#: Default bound on the binomial mass left outside the exactly summed window of k (its contribution is
#: still added, bounded from above; this only sets the window size and so the tightness).
DEFAULT_TAIL_TOL = 1e-12

#: Largest population handled (integers stay exact in float64 well beyond; the block grid covers it).
MAX_N = 10**15

#: Relative margin added to every RDP value returned by the exact sums: it covers the float64 rounding of
#: the pmf (Loader's algorithm in :func:`amplify_jax._core.numerics.log_binom_pmf`, ~1e-14 relative), of the
#: per-k moments and of the log-sum-exp.
_SAFETY_REL = 1e-11

# ----------------------------------------------------------------------------------------------------------
# The Thm 1 sum over k, exact on a window, bounded on geometric blocks elsewhere

#: k = 1..HEAD are always summed exactly (the small-k terms dominate at large orders).
_HEAD = 64
#: Ratio of the geometric blocks that cover the k-axis outside the head and the window.
_BLOCK_RATIO = 1.125


def _block_grid(n_max: int = MAX_N):
    """Block boundaries b_0 = HEAD + 1 < b_1 < ... covering [HEAD + 1, n_max]; block i = [b_i, b_{i+1} - 1]."""
    b = [_HEAD + 1]
    while b[-1] <= n_max:
        b.append(max(b[-1] + 1, int(math.floor(b[-1] * _BLOCK_RATIO))))
    b = np.asarray(b, dtype=np.float64)
    return b[:-1], b[1:] - 1.0


_BLOCK_LO, _BLOCK_HI = _block_grid()


def window_size(n, gamma, tail_tol=DEFAULT_TAIL_TOL) -> int:
    """The (static) number W of consecutive k summed exactly around n gamma, for a grid of (n, gamma).

    Bernstein's inequality, P(|k - n gamma| >= t) <= 2 exp(-t^2 / (2 (v + t/3))) with v = n gamma (1 - gamma),
    gives t = L/3 + sqrt(L^2/9 + 2 L v), L = log(2 / tail_tol); W = 2t + 2 rounded up to a multiple of a
    quarter of the power of two below it (so nearby grids share compiled code, and at most 25% is wasted),
    at least 64 and at most the power of two above max n.
    """
    n = V.integer("n", n, minimum=1).astype(np.float64)
    g = V.probability("gamma", gamma)
    tol = V.scalar("tail_tol", tail_tol, V.unit_open)  # one number in (0, 1): it fixes one static size
    v = float(np.max(n * g * (1.0 - g))) if n.size and g.size else 0.0
    L = math.log(2.0 / tol)
    t = L / 3.0 + math.sqrt(L * L / 9.0 + 2.0 * L * v)
    x = 2.0 * t + 2.0
    step = max(16, (1 << int(math.floor(math.log2(x)))) // 4)
    w = max(64, int(math.ceil(x / step)) * step)
    cap = max(64, 1 << int(math.ceil(math.log2(float(np.max(n)) + 1.0))))
    return int(min(w, cap))


def _sum_plan(n, gamma, tail_tol=DEFAULT_TAIL_TOL):
    """Static shape of a sum: (window size, number of geometric blocks needed to reach max n, in steps of 16)."""
    n_max = float(np.max(np.asarray(n, dtype=np.float64)))
    nb = int(np.searchsorted(_BLOCK_LO, n_max, side="right"))
    nb = min(len(_BLOCK_LO), max(16, -(-nb // 16) * 16))
    return (window_size(n, gamma, tail_tol), nb)


def _binomial_log_excess(log_excess_fn, n, gamma, plan):
    """log of an upper bound on sum_{k>=1} Bin(k; n, gamma) (M_k - 1), shape batch + orders (jnp).

    ``log_excess_fn(k_lo, k_hi)`` returns, for arrays batch + (K,), an upper bound on log(M_k - 1) valid for
    every integer k in [k_lo, k_hi] (equality k_lo = k_hi for single terms), with shape batch + (K, A), where
    M_k = E[(p_k / q_k)^lambda] is the lambda-th moment of the k-participant round (M_k >= 1).  ``n`` and
    ``gamma`` have the batch shape.  The k = 0 round reveals nothing (M_0 = 1) and contributes 0.  ``plan`` is
    the static (window size, number of blocks) of :func:`_sum_plan` (the blocks must reach max n).
    """
    width, n_blocks = plan if isinstance(plan, tuple) else (plan, len(_BLOCK_LO))
    nb = n[..., None]
    gb = gamma[..., None]
    mu = n * gamma
    start = jnp.clip(jnp.floor(mu) - width // 2, _HEAD + 1, jnp.maximum(_HEAD + 1, n - width + 1))
    k_head = jnp.broadcast_to(jnp.arange(1, _HEAD + 1, dtype=jnp.float64), n.shape + (_HEAD,))
    k_win = start[..., None] + jnp.arange(width, dtype=jnp.float64)
    k_exact = jnp.concatenate([k_head, k_win], axis=-1)
    valid = k_exact <= nb
    k_safe = jnp.where(valid, k_exact, 1.0)

    # Geometric blocks below and above the window, clipped to [HEAD + 1, start - 1] and [start + W, n].
    blo = jnp.asarray(_BLOCK_LO[:n_blocks])
    bhi = jnp.asarray(_BLOCK_HI[:n_blocks])
    sb = start[..., None]
    lo = jnp.concatenate([jnp.broadcast_to(blo, n.shape + blo.shape), jnp.maximum(blo, sb + width)], axis=-1)
    hi = jnp.concatenate([jnp.minimum(bhi, sb - 1.0), jnp.minimum(bhi, nb)], axis=-1)
    bvalid = lo <= hi
    lo_s = jnp.where(bvalid, lo, 1.0)
    hi_s = jnp.where(bvalid, hi, 1.0)
    # The pmf is unimodal: its largest value on [lo, hi] is at the mode clipped into the block (both
    # candidate modes floor((n+1)p) and ceil((n+1)p) - 1 are tried).
    m1 = jnp.clip(jnp.floor((nb + 1.0) * gb), lo_s, hi_s)
    m2 = jnp.clip(jnp.ceil((nb + 1.0) * gb) - 1.0, lo_s, hi_s)
    # one pmf evaluation for the window and both block candidates (one copy of Loader's code to compile)
    nk, nbk = k_safe.shape[-1], lo_s.shape[-1]
    pm = log_binom_pmf(jnp.concatenate([k_safe, m1, m2], axis=-1), nb, gb)
    logw = jnp.where(valid, pm[..., :nk], -jnp.inf)
    log_mass = jnp.log(hi_s - lo_s + 1.0) + jnp.maximum(pm[..., nk:nk + nbk], pm[..., nk + nbk:])
    log_mass = jnp.where(bvalid, log_mass, -jnp.inf)

    all_lo = jnp.concatenate([k_safe, lo_s], axis=-1)
    all_hi = jnp.concatenate([k_safe, hi_s], axis=-1)
    all_w = jnp.concatenate([logw, log_mass], axis=-1)
    lex = log_excess_fn(all_lo, all_hi)
    terms = jnp.where(jnp.isfinite(all_w)[..., None], all_w[..., None] + lex, -jnp.inf)
    return logsumexp(terms, axis=-2)


#: Points of a parameter grid evaluated together by the exact sums (larger grids are looped over with
#: ``lax.map``, so the batch + (K, orders, j) intermediate stays in cache instead of growing with the grid).
_MAP_BATCH = 4


def _map_batch(fn, arrays):
    """fn over the broadcast batch of ``arrays`` (a tuple), in chunks of _MAP_BATCH points (jnp)."""
    arrays = jnp.broadcast_arrays(*arrays)
    shape = arrays[0].shape
    size = int(np.prod(shape))
    if size <= _MAP_BATCH:
        return fn(arrays)
    flat = tuple(a.reshape(size) for a in arrays)
    out = jax.lax.map(lambda x: fn(x), flat, batch_size=_MAP_BATCH)
    return out.reshape(shape + out.shape[1:])


def _finish_rdp(log_excess, alpha):
    """RDP = log(1 + S) / (alpha - 1), with the relative safety margin."""
    return jnp.logaddexp(0.0, log_excess) / (alpha - 1.0) * (1.0 + _SAFETY_REL)


def binomial_weighted_rdp(log_excess_fn: Callable, orders, *, n, gamma, args=(), tail_tol=DEFAULT_TAIL_TOL):
    """Thm 1 (Eq. 5) of the self check-in paper for any per-k base curve, as an exact upper bound.

    eps(lambda) = 1/(lambda-1) log sum_{k=0}^n Bin(k; n, gamma) M_k(lambda), where M_k is the lambda-th
    moment E_q[(p_k/q_k)^lambda] = exp((lambda-1) eps_k(lambda)) of the round with k participants (M_0 = 1).

    ``log_excess_fn(k_lo, k_hi, alpha, n, *args)`` is a pure jnp function (module-level, so that compiled
    code is reused): given float arrays k_lo, k_hi of shape batch + (K,) (batch = broadcast of n, gamma and
    ``args``; n and the args come with the batch shape, alpha is the 1-D array of orders), it returns an
    upper bound on log(M_k - 1) for every integer k in [k_lo, k_hi], shape batch + (K, len(orders)).
    Monotone per-k curves make this easy (non-increasing in k: evaluate at k_lo).

    The sum is evaluated as 1 + sum_k Bin(k) (M_k - 1) (no cancellation for tiny eps), exactly on k = 1..64
    and on a window of :func:`window_size` consecutive k around n gamma, and bounded on geometric blocks
    elsewhere, so the result is an upper bound for any ``tail_tol``.
    """
    a = V.orders("orders", orders)
    nn = V.integer("n", n, minimum=1)
    _check_n_max(nn)
    g = V.probability("gamma", gamma)
    tol = V.unit_open("tail_tol", tail_tol)
    args = tuple(V.finite(f"args[{i}]", x) for i, x in enumerate(args))
    shape = V.broadcastable(n=nn, gamma=g, **{f"args[{i}]": x for i, x in enumerate(args)})
    b = lambda x: jnp.asarray(np.broadcast_to(np.asarray(x, dtype=np.float64), shape))  # noqa: E731
    width = _sum_plan(np.broadcast_to(nn, shape), np.broadcast_to(g, shape), float(tol))
    with x64_scope():
        return _generic_kernel(b(nn), b(g), jnp.asarray(a), tuple(b(x) for x in args), log_excess_fn, width)


@float64_jit(static_argnames=("log_excess_fn", "width"))
def _generic_kernel(n, gamma, alpha, args, log_excess_fn, width):
    fn = lambda lo, hi: log_excess_fn(lo, hi, alpha, n, *args)  # noqa: E731
    return _finish_rdp(_binomial_log_excess(fn, n, gamma, width), alpha)


def _check_n_max(nn):
    if np.any(nn > MAX_N):
        raise ValueError(f"Expected n <= {MAX_N:.0e}, got n={np.max(nn)!r}.")


def effective_checkin_rate(*, p, p_dropout=0.0):
    """Effective check-in rate gamma = p (1 - p') of Sec. 3.2 (p: the client's coin, p': the dropout rate).

    Using p alone (p' = 0) is the conservative choice the paper recommends when p' is unknown: a smaller
    rate only amplifies more, so p upper-bounds the effective rate.
    """
    pp = V.probability("p", p)
    pd = V.probability("p_dropout", p_dropout)
    V.broadcastable(p=pp, p_dropout=pd)
    return pp * (1.0 - pd)


#: Largest order the check-in curves accept: the top of :data:`LOWER_ORDERS` (the widest grid of the package);
#: their kernels hold arrays as long as the largest order (1e300 failed with "Maximum allowed size exceeded").
MAX_ORDER = 1e8


def _int_orders(orders):
    a = V.orders("orders", orders, integer=True, maximum=MAX_ORDER)
    return tuple(int(x) for x in np.round(a))


#: Grid of the Chernoff parameter Delta over which the Eq. 7 / Eq. 11 bounds are minimised (every Delta in
#: [0, 1] gives a valid bound, so the minimum over any grid is valid).
CHERNOFF_GRID = np.linspace(0.02, 0.98, 49)


def _chernoff_grid(chernoff_delta, shape):
    if chernoff_delta is None:
        return np.broadcast_to(CHERNOFF_GRID, shape + CHERNOFF_GRID.shape)
    d = V.unit_open("chernoff_delta", chernoff_delta)  # the Chernoff parameter Delta in (0, 1)
    V.broadcastable(chernoff_delta=d, params=np.empty(shape))
    return np.broadcast_to(d, shape)[..., None]
