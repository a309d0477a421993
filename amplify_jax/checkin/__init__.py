"""Self check-in: binomial-weighted RDP of clients that check in by themselves, shuffled and distributed.

Source: Liew, Hasegawa, Takahashi, "Self Check-in: Tight Privacy Amplification for Practical Distributed
Learning" (also "Privacy Amplification via Shuffled Check-Ins", arXiv 2206.03151), read with
``ERRATA.md``.  Each of the n clients checks in to a round with probability gamma (dropouts make the
effective rate gamma = p (1 - p'), Sec. 3.2); the number k ~ Bin(n, gamma) of participants is public.

What is here (every curve has the orders axis last and broadcasts over its numeric parameters):

- Thm 1 (Eq. 5), the binomial-weighted sum over k of the RDP of a k-participant round, evaluated *exactly*
  for n up to 1e15 (:func:`binomial_weighted_rdp`): the k that carry all but a tail of mass <= ``tail_tol``
  (Bernstein's inequality fixes the window size at the Python boundary, a static shape) are summed term by
  term, and the rest of the k-axis is covered by geometric blocks whose contribution is bounded above
  (block mass <= size x the largest pmf in it; per-k moment <= the block's worst case).  The result is
  therefore an upper bound whatever ``tail_tol`` is; ``tail_tol`` only sets how tight it is.
- Thm 4 (Eq. 10): distributed check-in with the Gaussian mechanism (:func:`distributed_gaussian_rdp`),
  base RDP 2 lambda / (k sigma^2) (the mean of k values clipped to norm 1, replacement adjacency) amplified
  by sampling without replacement (Wang, Balle, Kasiviswanathan 2019, Thm 9, the bound of
  :func:`amplify_jax.rdp.without_replacement_rdp`), and the Eq. 11 approximation as an option.
- Thm 2 (Eq. 7, constants corrected against Girgis et al. 2021) and Thm 3 (Eq. 8): upper and lower
  bounds for shuffled check-in of eps0-LDP discrete randomizers; the strong-composition baseline.
- Sec. 4.1: the shuffled Gaussian RDP by integer partitions (at most n parts, ERRATA), and the
  "subsampled shuffling conversion" route for (eps0, delta0)-LDP randomizers.
- Calibration: minimal sigma, largest gamma, most rounds for a target (eps, delta).

Per-k sampling rate.  Conditioned on k participants, the differing client is among them with probability
exactly k / n (Bin(k-1; n-1, gamma) gamma / Bin(k; n, gamma) = k / n), so the k-participant round is a
without-replacement subsample of rate k / n.  The paper writes the rate gamma in Eqs. 7, 10, 11; the exact
sums here use k / n (the sound rate).  The closed forms that the paper derives with rate gamma (Eq. 7, Eq. 11)
are offered as printed, to reproduce the paper, and say so.
"""

from __future__ import annotations

import functools
import math
from typing import Callable, NamedTuple

import numpy as np
import jax
import jax.numpy as jnp
from jax.scipy import special as jsp

from .. import _validate as V
from ..numerics import float64_jit, log_binom_pmf, log_expm1, logsumexp, x64_scope
from ..rdp import randomized_response_log_excess, without_replacement_log_excess
from ..shuffle._closed_forms import _fmt_kernel as _shuffle_fmt_kernel

__all__ = [
    "DEFAULT_TAIL_TOL",
    "MAX_N",
    "effective_checkin_rate",
    "window_size",
    "binomial_weighted_rdp",
    "distributed_gaussian_rdp",
    "CHERNOFF_GRID",
    "shuffled_gaussian_rdp",
    "shuffled_gaussian_checkin_rdp",
    "shuffled_checkin_upper_rdp",
    "shuffled_checkin_lower_rdp",
    "shuffled_checkin_strong_composition_epsilon",
    "distributed_gaussian_strong_composition_epsilon",
    "ApproxCheckinRDP",
    "subsampled_shuffle_checkin_rdp",
    "CHECKIN_ORDERS",
    "CALIBRATION_ORDERS",
    "distributed_gaussian_epsilon",
    "distributed_gaussian_delta",
    "CheckinCalibration",
    "distributed_gaussian_calibrate_sigma",
    "distributed_gaussian_max_gamma",
    "distributed_gaussian_max_rounds",
    "shuffled_checkin_epsilon",
    "ApproxEpsilon",
    "subsampled_shuffle_checkin_epsilon",
]

#: Default bound on the binomial mass left outside the exactly summed window of k (its contribution is
#: still added, bounded from above; this only sets the window size and so the tightness).
DEFAULT_TAIL_TOL = 1e-12

#: Largest population handled (integers stay exact in float64 well beyond; the block grid covers it).
MAX_N = 10**15

#: Relative margin added to every RDP value returned by the exact sums: it covers the float64 rounding of
#: the pmf (Loader's algorithm in :func:`amplify_jax.numerics.log_binom_pmf`, ~1e-14 relative), of the
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
    n = np.asarray(n, dtype=np.float64)
    g = np.asarray(gamma, dtype=np.float64)
    v = float(np.max(n * g * (1.0 - g))) if n.size and g.size else 0.0
    L = math.log(2.0 / float(tail_tol))
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


# ----------------------------------------------------------------------------------------------------------
# Sampling without replacement (Wang, Balle, Kasiviswanathan 2019, Thm 9), in log-excess form: the core kernel
# amplify_jax.rdp.without_replacement_log_excess.  The binomial table below serves the Girgis et al. bound.


@functools.lru_cache(maxsize=None)
def _log_binom_table(alpha_int, amax):
    """log C(a, j) for a in alpha_int, j = 2..amax (-inf where j > a): a trace-time constant (numpy)."""
    a = np.asarray(alpha_int, dtype=np.float64)[:, None]
    j = np.arange(2, amax + 1, dtype=np.float64)[None, :]
    lg = np.vectorize(math.lgamma)
    out = lg(a + 1.0) - lg(j + 1.0) - lg(np.maximum(a - j, 0.0) + 1.0)
    return np.where(j <= a, out, -np.inf)


# ----------------------------------------------------------------------------------------------------------
# Thm 4: distributed check-in with the Gaussian mechanism


def _gauss_checkin_log_excess(k_lo, k_hi, n, sigma, *, alpha_int, amax):
    """Upper bound on log(M_k - 1) for k in [k_lo, k_hi]: WBK Thm 9 with rate k_hi / n and base 2 j / (k_lo sigma^2).

    The Thm 9 bound increases with the rate and with the base curve, and the base decreases in k, so the
    pair (k_hi / n, base at k_lo) bounds every k of the block.
    """
    j = jnp.arange(2, amax + 1, dtype=jnp.float64)
    base = 2.0 * j / (k_lo[..., None] * (sigma[..., None, None] ** 2))
    log_q = jnp.log(jnp.minimum(k_hi / n[..., None], 1.0))
    return without_replacement_log_excess(base, log_q, alpha_int)


def _gauss_rate_gamma_log_excess(k_lo, k_hi, gamma, sigma, *, alpha_int, amax):
    """As printed in Eq. 10/11: rate gamma for every k (the paper's convention; see the module docstring)."""
    del k_hi
    j = jnp.arange(2, amax + 1, dtype=jnp.float64)
    base = 2.0 * j / (k_lo[..., None] * (sigma[..., None, None] ** 2))
    log_q = jnp.log(gamma)[..., None] + jnp.zeros_like(k_lo)
    return without_replacement_log_excess(base, log_q, alpha_int)


def _int_orders(orders):
    a = V.orders("orders", orders, integer=True)
    return tuple(int(x) for x in np.round(a))


@functools.lru_cache(maxsize=None)
def _gauss_fn(alpha_int, amax, paper_rate):
    f = _gauss_rate_gamma_log_excess if paper_rate else _gauss_checkin_log_excess
    return functools.partial(f, alpha_int=alpha_int, amax=amax)


def _distributed_gaussian_log_excess(n, gamma, sigma, alpha_int, width, paper_rate=False):
    """jnp: log of the Eq. 5 excess for distributed check-in with the Gaussian mechanism (batch + orders)."""
    amax = max(alpha_int)
    f = _gauss_fn(alpha_int, amax, paper_rate)

    def one(x):
        n, gamma, sigma = x
        if paper_rate:
            fn = lambda lo, hi: f(lo, hi, gamma, sigma)  # noqa: E731
        else:
            fn = lambda lo, hi: f(lo, hi, n, sigma)  # noqa: E731
        return _binomial_log_excess(fn, n, gamma, width)

    return _map_batch(one, (n, gamma, sigma))


@float64_jit(static_argnames=("alpha_int", "width", "paper_rate"))
def _distributed_gaussian_kernel(n, gamma, sigma, alpha_int, width, paper_rate=False):
    alpha = jnp.asarray(alpha_int, dtype=jnp.float64)
    lex = _distributed_gaussian_log_excess(n, gamma, sigma, alpha_int, width, paper_rate)
    return _finish_rdp(lex, alpha)




def distributed_gaussian_rdp(orders, *, n, gamma, sigma, method="exact", chernoff_delta=None,
                             tail_tol=DEFAULT_TAIL_TOL):
    """RDP of one round of distributed check-in with the Gaussian mechanism (Thm 4, Eq. 10).

    Each of n clients checks in with probability ``gamma``, clips its value to norm 1 and adds N(0, sigma^2);
    the server sees only the mean of the k values that check in (secure aggregation) and k.  Given k, the
    mean has sensitivity 2/k and noise sigma / sqrt(k): base RDP 2 lambda / (k sigma^2) (replacement
    adjacency), amplified by sampling without replacement at rate k / n (WBK 2019, Thm 9), weighted by
    Bin(k; n, gamma) (Thm 1).

    ``method="exact"`` (default): the sum over every k, an upper bound for n up to 1e15 (see
    :func:`binomial_weighted_rdp`; rate k / n, see the module docstring).  ``method="eq11"``: the paper's
    Chernoff approximation Eq. 11 as printed (rate gamma for every k), minimised over a grid of its
    parameter Delta in (0, 1) unless ``chernoff_delta`` is given; it reproduces the paper's curves but
    inherits its rate convention.  ``method="exact_paper_rate"``: the exact sum with the paper's rate gamma,
    for comparison with Eq. 11 only.

    ``orders`` must be integers >= 2 (Thm 9).  Returns shape broadcast(n, gamma, sigma) + (len(orders),).
    """
    alpha_int = _int_orders(orders)
    nn = V.integer("n", n, minimum=1)
    _check_n_max(nn)
    g = V.probability("gamma", gamma)
    s = V.positive("sigma", sigma)
    V.one_of("method", method, ("exact", "eq11", "exact_paper_rate"))
    tol = V.unit_open("tail_tol", tail_tol)
    shape = V.broadcastable(n=nn, gamma=g, sigma=s)
    nf = np.broadcast_to(nn.astype(np.float64), shape)
    gf = np.broadcast_to(g, shape)
    sf = np.broadcast_to(s, shape)
    with x64_scope():
        if method == "eq11":
            dgrid = _chernoff_grid(chernoff_delta, shape)
            return _gauss_eq11_kernel(jnp.asarray(nf), jnp.asarray(gf), jnp.asarray(sf), jnp.asarray(dgrid),
                                      alpha_int)
        width = _sum_plan(nf, gf, float(tol))
        return _distributed_gaussian_kernel(jnp.asarray(nf), jnp.asarray(gf), jnp.asarray(sf), alpha_int, width,
                                            method == "exact_paper_rate")


#: Grid of the Chernoff parameter Delta over which the Eq. 7 / Eq. 11 bounds are minimised (every Delta in
#: [0, 1] gives a valid bound, so the minimum over any grid is valid).
CHERNOFF_GRID = np.linspace(0.02, 0.98, 49)


def _chernoff_grid(chernoff_delta, shape):
    if chernoff_delta is None:
        return np.broadcast_to(CHERNOFF_GRID, shape + CHERNOFF_GRID.shape)
    d = V.probability("chernoff_delta", chernoff_delta)
    V.broadcastable(chernoff_delta=d, params=np.empty(shape))
    return np.broadcast_to(d, shape)[..., None]


@float64_jit(static_argnames=("alpha_int",))
def _gauss_eq11_kernel(n, gamma, sigma, dgrid, alpha_int):
    """Eq. 11: eps <= 1/(l-1) log(e^{(l-1) eps_1 - D^2 n g / 2} + e^{(l-1) eps_{floor((1-D) n g) + 1}}), rate g."""
    amax = max(alpha_int)
    alpha = jnp.asarray(alpha_int, dtype=jnp.float64)
    f = _gauss_fn(alpha_int, amax, True)
    mu = (n * gamma)[..., None]
    k1 = jnp.minimum(jnp.floor((1.0 - dgrid) * mu) + 1.0, n[..., None])
    k = jnp.stack([jnp.ones_like(k1), k1], axis=-1)  # batch + (D, 2)
    lex = f(k, k, gamma[..., None], sigma[..., None])  # batch + (D, 2, A)
    log_m = jnp.logaddexp(0.0, lex)  # (l - 1) eps_k
    chern = -(dgrid ** 2) * mu / 2.0
    total = jnp.logaddexp(log_m[..., 0, :] + chern[..., None], log_m[..., 1, :])
    return jnp.min(total, axis=-2) / (alpha - 1.0)


# ----------------------------------------------------------------------------------------------------------
# Sec. 4.1: the shuffled Gaussian mechanism, by integer partitions of the order (at most n parts)


def _shuffle_gauss_log_c(sigma, amax: int):
    """log c_m(j) = log [x^j] A(x)^m for m, j = 0..amax, A(x) = sum_{i>=1} e^{i(i-1)/(2 sigma^2)} x^i / i! (jnp).

    The moment of the shuffled Gaussian is a sum over the integer partitions of the order; grouping the
    partitions by their number of parts m gives E = lambda! n^{-lambda} sum_m C(n, m) m! c_m(lambda) / m!
    (see :func:`shuffled_gaussian_rdp`), and c_m follows from c_{m-1} by one log-space convolution, so no
    partition is enumerated: O(amax^3) per sigma instead of p(lambda) terms (p(64) = 1,741,630).
    Shape sigma.shape + (amax+1, amax+1), indexed [m, j]; -inf where c_m(j) = 0 (j < m).
    """
    i = jnp.arange(amax + 1, dtype=jnp.float64)
    s2 = sigma[..., None] ** 2
    log_a = jnp.where(i >= 1, i * (i - 1.0) / (2.0 * s2) - jsp.gammaln(i + 1.0), -jnp.inf)  # batch + (J,)
    jj = jnp.arange(amax + 1)[:, None]
    ii = jnp.arange(amax + 1)[None, :]
    idx = jnp.clip(jj - ii, 0, amax)
    use = (ii >= 1) & (ii <= jj)

    def step(c_prev, _):
        # c_m(j) = logsumexp_i log_a(i) + c_{m-1}(j - i)
        terms = log_a[..., None, :] + jnp.take(c_prev, idx, axis=-1)
        terms = jnp.where(use, terms, -jnp.inf)
        c = logsumexp(terms, axis=-1)
        return c, c

    c0 = jnp.where(jnp.arange(amax + 1) == 0, 0.0, -jnp.inf) + jnp.zeros_like(log_a)  # A^0 = 1
    _, cs = jax.lax.scan(step, c0, None, length=amax)  # m = 1..amax, leading axis
    cs = jnp.moveaxis(cs, 0, -2)
    return jnp.concatenate([c0[..., None, :], cs], axis=-2)


def _shuffle_gauss_log_moment(k, log_c, orders_j, amax: int):
    """log E_k(lambda) of the shuffled Gaussian with k users at the integer orders ``orders_j`` (jnp).

    E_k(lambda) = sum_{m=1}^{min(k, lambda)} lambda!/m! k^{m - lambda} prod_{i<m} (1 - i/k) c_m(lambda):
    the partitions with more than k parts are excluded (ERRATA: the authors' code includes them).
    ``k`` has shape batch + (K,), ``log_c`` batch + (amax+1, amax+1); returns batch + (K, len(orders_j)).
    """
    m = jnp.arange(1, amax + 1, dtype=jnp.float64)  # (M,)
    lam = jnp.asarray(orders_j, dtype=jnp.float64)[:, None]  # (A, 1)
    kk = k[..., None]
    i = jnp.arange(amax, dtype=jnp.float64)
    falling = jnp.cumsum(jnp.log1p(-jnp.minimum(i / kk, 1.0)), axis=-1)  # sum_{i<m} log(1 - i/k), batch+(K, M)
    lc = jnp.take(log_c[..., 1:, :], jnp.asarray(orders_j), axis=-1)  # batch + (M, A)
    lc = jnp.swapaxes(lc, -1, -2)[..., None, :, :]  # batch + (1, A, M)
    terms = (jsp.gammaln(lam + 1.0) - jsp.gammaln(m + 1.0) + (m - lam) * jnp.log(kk)[..., None]
             + falling[..., None, :] + lc)
    terms = jnp.where((m <= lam) & (m <= kk[..., None]), terms, -jnp.inf)
    log_e = logsumexp(terms, axis=-1)
    # float64 margin: ~10 ulp of the largest piece of a term
    mag = lam[:, 0] * jnp.log(jnp.maximum(kk, 1.0)) + jsp.gammaln(lam[:, 0] + 1.0) + 10.0
    return log_e + 1e-15 * mag


@float64_jit(static_argnames=("alpha_int",))
def _shuffled_gaussian_kernel(n, sigma, alpha_int):
    amax = max(alpha_int)
    log_c = _shuffle_gauss_log_c(sigma, amax)
    log_e = _shuffle_gauss_log_moment(n[..., None], log_c, alpha_int, amax)[..., 0, :]
    alpha = jnp.asarray(alpha_int, dtype=jnp.float64)
    return jnp.maximum(log_e, 0.0) / (alpha - 1.0)


def shuffled_gaussian_rdp(orders, *, n, sigma):
    """RDP of the shuffled Gaussian mechanism (Liew & Takahashi 2022; Sec. 4.1 / App. B of the paper).

    n users each add N(0, sigma^2) to a value of sensitivity 1 and the shuffler outputs the multiset; for
    the worst-case pair (one user's value shifted by 1) the likelihood ratio is the mean of n i.i.d. L_i with
    E[L^i] = e^{i(i-1)/(2 sigma^2)}, so

        E[(p/q)^lambda] = n^{-lambda} sum_{partitions (k_1..k_m) of lambda, m <= n}
                          lambda!/prod k_i! * n!/((n-m)! prod_v mult_v!) * e^{sum k_i (k_i - 1)/(2 sigma^2)}.

    ERRATA: the authors' code keeps partitions with more than n parts (n = 1, lambda = 2, sigma = 1 gives
    1.31326 instead of 1.0); they are excluded here.  The partitions are summed by their number of parts
    with a log-space recursion (no enumeration), fast up to lambda = 64 and beyond.  Integer orders >= 2.
    Broadcasts over n and sigma; an absolute margin of ~10 ulp of the largest term is added.
    """
    alpha_int = _int_orders(orders)
    nn = V.integer("n", n, minimum=1)
    _check_n_max(nn)
    s = V.positive("sigma", sigma)
    shape = V.broadcastable(n=nn, sigma=s)
    with x64_scope():
        return _shuffled_gaussian_kernel(jnp.asarray(np.broadcast_to(nn.astype(np.float64), shape)),
                                         jnp.asarray(np.broadcast_to(s, shape)), alpha_int)


def _shuffled_gauss_checkin_log_excess(k_lo, k_hi, n, log_c, *, alpha_int, amax):
    """WBK Thm 9 at rate k_hi / n over the shuffled-Gaussian base with k_lo users (which dominates every k in
    the block: the mean of k i.i.d. likelihood ratios decreases in k in the convex order)."""
    j = tuple(range(2, amax + 1))
    log_e = _shuffle_gauss_log_moment(k_lo, log_c, j, amax)  # batch + (K, J)
    base = log_e / (jnp.asarray(j, dtype=jnp.float64) - 1.0)
    log_q = jnp.log(jnp.minimum(k_hi / n[..., None], 1.0))
    return without_replacement_log_excess(base, log_q, alpha_int)


@float64_jit(static_argnames=("alpha_int", "width"))
def _shuffled_gauss_checkin_kernel(n, gamma, sigma, alpha_int, width):
    amax = max(alpha_int)

    def one(x):
        n, gamma, sigma = x
        log_c = _shuffle_gauss_log_c(sigma, amax)
        fn = functools.partial(_shuffled_gauss_checkin_log_excess, n=n, log_c=log_c, alpha_int=alpha_int,
                               amax=amax)
        return _binomial_log_excess(fn, n, gamma, width)

    lex = _map_batch(one, (n, gamma, sigma))
    return _finish_rdp(lex, jnp.asarray(alpha_int, dtype=jnp.float64))


def shuffled_gaussian_checkin_rdp(orders, *, n, gamma, sigma, tail_tol=DEFAULT_TAIL_TOL):
    """Shuffled check-in with the Gaussian local randomizer: Eq. 5 over k of the k-user shuffled Gaussian
    (:func:`shuffled_gaussian_rdp`) subsampled without replacement at rate k / n (WBK 2019, Thm 9).

    The approach of the paper's App. B (and the authors' ``ApproxSCIGaussRDPtoDP``, which uses the Eq. 11
    approximation instead of the exact sum).  Integer orders >= 2; broadcasts over n, gamma, sigma.
    """
    alpha_int = _int_orders(orders)
    nn = V.integer("n", n, minimum=1)
    _check_n_max(nn)
    g = V.probability("gamma", gamma)
    s = V.positive("sigma", sigma)
    tol = V.unit_open("tail_tol", tail_tol)
    shape = V.broadcastable(n=nn, gamma=g, sigma=s)
    nf = np.broadcast_to(nn.astype(np.float64), shape)
    gf = np.broadcast_to(g, shape)
    width = _sum_plan(nf, gf, float(tol))
    with x64_scope():
        return _shuffled_gauss_checkin_kernel(jnp.asarray(nf), jnp.asarray(gf),
                                              jnp.asarray(np.broadcast_to(s, shape)), alpha_int, width)


# ----------------------------------------------------------------------------------------------------------
# Thm 2 / Thm 3: shuffled check-in with eps0-LDP discrete randomizers


def _girgis_log_excess(k_lo, log_q, eps0, alpha_int):
    """log of the excess of the subsampled-shuffle bound (Girgis, Data, Diggavi 2021, as used in Eq. 7) (jnp).

    For k shuffled eps0-LDP reports subsampled at rate q, moment - 1 <=
    4 C(l,2) q^2 (e^eps0 - 1)^2 / (kb e^eps0)
    + sum_{j=3}^{l} C(l,j) q^j j Gamma(j/2) (2 (e^{2 eps0} - 1)^2 / (kb e^{2 eps0}))^{j/2}
    + ((1 + q c)^l - 1 - l q c) e^{-(k-1)/(8 e^eps0)},   kb = floor((k-1)/(2 e^eps0)) + 1,
    c = (e^{2 eps0} - 1)/e^eps0 (Eq. 7's constant; an independent transcription of Girgis et al. has
    (e^{2 eps0} - 1)/(2 e^eps0), the smaller: the larger one is kept).  ERRATA: kb uses 2 e^eps0 and the last
    factor decays like e^{-(k-1)/(8 e^eps0)}, as in Girgis et al.; Eq. 7 as extracted has eps0 instead.
    Non-increasing in k (``k_lo`` is used), increasing in q.  k_lo: batch + (K,); eps0, log_q: broadcastable.
    """
    e0 = eps0
    kb = jnp.floor((k_lo - 1.0) / (2.0 * jnp.exp(e0))) + 1.0
    lam = jnp.asarray(alpha_int, dtype=jnp.float64)
    amax = max(alpha_int)
    j = jnp.arange(2, amax + 1, dtype=jnp.float64)
    lb = jnp.asarray(np.where(np.isfinite(_log_binom_table(alpha_int, amax)), _log_binom_table(alpha_int, amax),
                              0.0))
    jmask = j <= lam[:, None]  # (A, J)
    lq = log_q[..., None, None]
    lkb = jnp.log(kb)[..., None, None]
    e0b = e0[..., None, None]
    log_em1 = log_expm1(e0b)
    log_e2m1 = log_expm1(2.0 * e0b)
    t2 = jnp.log(4.0) + lb[:, :1] + 2.0 * lq + 2.0 * log_em1 - lkb - e0b  # batch + (K, A, 1)
    tj = (lb + j * lq + jnp.log(j) + jsp.gammaln(j / 2.0)
          + (j / 2.0) * (jnp.log(2.0) + 2.0 * log_e2m1 - lkb - 2.0 * e0b))
    tj = jnp.where(jmask & (j >= 3), tj, -jnp.inf)
    log_c = log_e2m1 - e0b
    ups = logsumexp(jnp.where(jmask, lb + j * (lq + log_c), -jnp.inf), axis=-1, keepdims=True)
    ups = ups - ((k_lo - 1.0) / (8.0 * jnp.exp(e0)))[..., None, None]
    allt = jnp.concatenate([t2, tj, ups], axis=-1)
    return logsumexp(allt, axis=-1)


def _girgis_checkin_log_excess(k_lo, k_hi, n, eps0, *, alpha_int):
    log_q = jnp.log(jnp.minimum(k_hi / n[..., None], 1.0))
    return _girgis_log_excess(k_lo, log_q, eps0[..., None], alpha_int)


@float64_jit(static_argnames=("alpha_int", "width"))
def _shuffled_checkin_exact_kernel(n, gamma, eps0, alpha_int, width):
    def one(x):
        n, gamma, eps0 = x
        fn = functools.partial(_girgis_checkin_log_excess, n=n, eps0=eps0, alpha_int=alpha_int)
        return _binomial_log_excess(fn, n, gamma, width)

    lex = _map_batch(one, (n, gamma, eps0))
    return _finish_rdp(lex, jnp.asarray(alpha_int, dtype=jnp.float64))


@float64_jit(static_argnames=("alpha_int",))
def _eq7_kernel(n, gamma, eps0, dgrid, alpha_int):
    """Eq. 7 (corrected): 1 + e^{-D^2 n g/2} X(1) + X(k1 + 1), k1 = floor((1 - D) n g), rate g, min over D."""
    mu = (n * gamma)[..., None]
    k1 = jnp.minimum(jnp.floor((1.0 - dgrid) * mu), n[..., None] - 1.0)
    k = jnp.stack([jnp.ones_like(k1), k1 + 1.0], axis=-1)  # batch + (D, 2)
    log_q = jnp.broadcast_to(jnp.log(gamma)[..., None, None], k.shape)
    lex = _girgis_log_excess(k, log_q, eps0[..., None, None], alpha_int)  # batch + (D, 2, A)
    chern = -(dgrid ** 2) * mu / 2.0
    total = jnp.logaddexp(lex[..., 0, :] + chern[..., None], lex[..., 1, :])
    alpha = jnp.asarray(alpha_int, dtype=jnp.float64)
    return jnp.min(jnp.logaddexp(0.0, total), axis=-2) / (alpha - 1.0) * (1.0 + _SAFETY_REL)


def shuffled_checkin_upper_rdp(orders, *, n, gamma, eps0, method="exact", chernoff_delta=None,
                               tail_tol=DEFAULT_TAIL_TOL):
    """Upper bound on the RDP of one round of shuffled check-in with eps0-LDP discrete randomizers (Thm 2).

    ``method="eq7"``: Eq. 7 of the paper with the constants corrected against Girgis et al. 2021 (ERRATA:
    l~ = floor(floor((1 - Delta) n gamma) / (2 e^eps0)) + 1, Upsilon_k ~ e^{-(k-1)/(8 e^eps0)}; the floor
    inside keeps l~ equal to Girgis' kb at k = floor((1-Delta) n gamma) + 1), as printed with rate gamma for
    every k, minimised over a grid of Delta (or at ``chernoff_delta``).
    ``method="exact"`` (default): the per-k subsampled-shuffle bound that Eq. 7 bounds (see
    :func:`_girgis_log_excess`) summed exactly over k by Thm 1 at the conditional rate k / n.
    Integer orders >= 2.  Broadcasts over n, gamma, eps0.
    """
    alpha_int = _int_orders(orders)
    nn = V.integer("n", n, minimum=1)
    _check_n_max(nn)
    g = V.probability("gamma", gamma)
    e0 = V.nonnegative("eps0", eps0)
    V.one_of("method", method, ("exact", "eq7"))
    tol = V.unit_open("tail_tol", tail_tol)
    shape = V.broadcastable(n=nn, gamma=g, eps0=e0)
    nf = np.broadcast_to(nn.astype(np.float64), shape)
    gf = np.broadcast_to(g, shape)
    ef = np.broadcast_to(e0, shape)
    with x64_scope():
        if method == "eq7":
            if np.any(gf <= 0):
                raise ValueError(f"Expected gamma > 0 for method='eq7', got gamma={np.min(gf)!r}.")
            dgrid = _chernoff_grid(chernoff_delta, shape)
            return _eq7_kernel(jnp.asarray(nf), jnp.asarray(gf), jnp.asarray(ef), jnp.asarray(dgrid), alpha_int)
        width = _sum_plan(nf, gf, float(tol))
        return _shuffled_checkin_exact_kernel(jnp.asarray(nf), jnp.asarray(gf), jnp.asarray(ef), alpha_int, width)


@float64_jit(static_argnames=("alpha_int",))
def _eq8_kernel(n, gamma, eps0, dgrid, alpha_int):
    lam = jnp.asarray(alpha_int, dtype=jnp.float64)
    mu = (n * gamma)[..., None]
    d = dgrid
    # log(1 - e^{-D^2 mu/(2 + D)}) + log C(l, 2) + 2 log g + 2 log(e^eps0 - 1) - log((1 + D) mu) - eps0
    lead = (jnp.log(-jnp.expm1(-(d ** 2) * mu / (2.0 + d))) + 2.0 * jnp.log(gamma)[..., None]
            + 2.0 * log_expm1(eps0)[..., None] - jnp.log((1.0 + d) * mu) - eps0[..., None])
    lb2 = jnp.log(lam * (lam - 1.0) / 2.0)
    val = jnp.logaddexp(0.0, lead[..., None] + lb2) / (lam - 1.0)  # batch + (D, A)
    return jnp.max(val, axis=-2) * (1.0 - _SAFETY_REL)


def shuffled_checkin_lower_rdp(orders, *, n, gamma, eps0, chernoff_delta=None):
    """Lower bound on the RDP of shuffled check-in (Thm 3, Eq. 8), for binary randomized response:

        eps(lambda) >= 1/(lambda-1) log(1 + (1 - e^{-Delta^2 n gamma/(2 + Delta)}) C(lambda, 2) gamma^2
                                        (e^eps0 - 1)^2 / ((1 + Delta) n gamma e^eps0)),

    maximised over a grid of Delta in (0, 1) (every Delta gives a valid lower bound) or at
    ``chernoff_delta``; rounded down.  As printed (rate gamma).  Integer orders >= 2; n gamma > 0.
    """
    alpha_int = _int_orders(orders)
    nn = V.integer("n", n, minimum=1)
    _check_n_max(nn)
    g = V.probability("gamma", gamma)
    e0 = V.nonnegative("eps0", eps0)
    shape = V.broadcastable(n=nn, gamma=g, eps0=e0)
    gf = np.broadcast_to(g, shape)
    if np.any(gf <= 0):
        raise ValueError(f"Expected gamma > 0 for the lower bound, got gamma={np.min(gf)!r}.")
    dgrid = _chernoff_grid(chernoff_delta, shape)
    if np.any(dgrid <= 0):
        raise ValueError(f"Expected chernoff_delta > 0, got chernoff_delta={np.min(dgrid)!r}.")
    with x64_scope():
        return _eq8_kernel(jnp.asarray(np.broadcast_to(nn.astype(np.float64), shape)), jnp.asarray(gf),
                           jnp.asarray(np.broadcast_to(e0, shape)), jnp.asarray(dgrid), alpha_int)


# ----------------------------------------------------------------------------------------------------------
# Approximate-DP building blocks (jnp): FMT shuffling, subsampling, the Gaussian mechanism, composition


def _fmt_eps(eps0, k, delta):
    """Feldman-McMillan-Talwar 2021 Thm 3.1 closed form for k shuffled eps0-LDP reports, with validity (jnp):
    the kernel of :func:`amplify_jax.shuffle.fmt_closed_form_epsilon` (eps0 where the theorem does not apply,
    including k = 0, where its condition ln(k / (16 ln(4/delta))) = -inf fails)."""
    r = _shuffle_fmt_kernel.jitted(eps0, k, delta)
    return r.epsilon, r.valid


def _subsample_eps(eps, q):
    """Balle, Barthe, Gaboardi 2018 Thm 9 (without replacement, substitution): eps' = log(1 + q (e^eps - 1))."""
    return jnp.log1p(q * jnp.expm1(eps))


def _advanced_composition(eps, rounds, log_dprime):
    """Dwork, Rothblum, Vadhan 2010 strong composition: sqrt(2 T ln(1/delta')) eps + T eps (e^eps - 1)."""
    return jnp.sqrt(2.0 * rounds * (-log_dprime)) * eps + rounds * eps * jnp.expm1(eps)


def _gaussian_dp_epsilon(mu, log_delta, n_iter: int = 120):
    """Smallest eps (from above) with delta(eps) <= delta for the Gaussian mechanism of sensitivity/std = mu.

    Balle & Wang 2018 (analytic Gaussian), exact: delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu),
    decreasing in eps; bisection that keeps the feasible end.  Start: eps = mu^2/2 + mu sqrt(2 ln(1/delta))
    is feasible (delta(eps) <= Phi(-sqrt(2 ln(1/delta))) <= delta).
    """
    def log_delta_at(e):
        a = jsp.log_ndtr(mu / 2.0 - e / mu)
        b = e + jsp.log_ndtr(-mu / 2.0 - e / mu)
        return a + jnp.log(-jnp.expm1(jnp.minimum(b - a, 0.0)))

    hi = mu * mu / 2.0 + mu * jnp.sqrt(2.0 * (-log_delta))
    lo = jnp.zeros_like(hi)
    lo_ok = log_delta_at(lo) <= log_delta

    def body(_, s):
        lo, hi = s
        mid = 0.5 * (lo + hi)
        ok = log_delta_at(mid) <= log_delta
        return jnp.where(ok, lo, mid), jnp.where(ok, mid, hi)

    lo, hi = jax.lax.fori_loop(0, n_iter, body, (lo, hi))
    return jnp.where(lo_ok, 0.0, hi * (1.0 + 1e-10))  # margin for the rounding of log_delta_at


def _count_bounds(mu, log_d1, log_d2):
    """Integers l1 <= k <= l2 holding except with probability <= d1 + d2 (multiplicative Chernoff bounds).

    P(k <= (1 - D1) mu) <= e^{-D1^2 mu / 2}, P(k >= (1 + D2) mu) <= e^{-D2^2 mu / (2 + D2)}.
    l1 = floor((1 - D1) mu) + 1 (0 when D1 > 1 would be needed: then l1 = 0 and d1 is not spent),
    l2 = ceil((1 + D2) mu) - 1.
    """
    d1 = jnp.sqrt(2.0 * (-log_d1) / mu)
    l1 = jnp.where(d1 < 1.0, jnp.floor((1.0 - d1) * mu) + 1.0, 0.0)
    L = -log_d2
    d2 = (L + jnp.sqrt(L * L + 8.0 * L * mu)) / (2.0 * mu)
    l2 = jnp.ceil((1.0 + d2) * mu) - 1.0
    return l1, l2


#: Splits of the delta budget searched by the strong-composition baselines: the fraction that goes to
#: delta' of the composition, and the fraction of the per-round rest that goes to the two Chernoff events.
_SPLIT_F1 = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
_SPLIT_F2 = np.array([0.01, 0.1, 0.3, 0.5])


def _baseline_eps(per_round, n, gamma, rounds, log_delta):
    """min over budget splits of the strong composition of a per-round (eps(l1, l2, log_dm), dm + d1 + d2)."""
    f1 = jnp.asarray(np.repeat(_SPLIT_F1, _SPLIT_F2.size))
    f2 = jnp.asarray(np.tile(_SPLIT_F2, _SPLIT_F1.size))
    ex = lambda x: x[..., None]  # noqa: E731
    mu = ex(n * gamma)
    log_dp = jnp.log(f1) + ex(log_delta)
    log_round = jnp.log1p(-f1) + ex(log_delta) - ex(jnp.log(rounds))
    log_d12 = jnp.log(f2 / 2.0) + log_round
    log_dm = jnp.log1p(-f2) + log_round
    l1, l2 = _count_bounds(mu, log_d12, log_d12)
    q = jnp.minimum(l2 / ex(n), 1.0)
    e_round = per_round(l1, q, log_dm)
    return jnp.min(_advanced_composition(e_round, ex(rounds), log_dp), axis=-1)


def _shuffle_round(eps0):
    e0 = eps0[..., None]

    def per_round(l1, q, log_dm):
        # the shuffle's delta is spent before subsampling: q * delta_s = delta_m
        eps_s, _ = _fmt_eps(e0, l1, jnp.exp(log_dm - jnp.log(q)))
        return _subsample_eps(jnp.where(l1 >= 1, eps_s, e0), q)
    return per_round


def _gauss_round(sigma):
    def per_round(l1, q, log_dm):
        mu = 2.0 / (sigma[..., None] * jnp.sqrt(jnp.maximum(l1, 1.0)))
        eps_g = _gaussian_dp_epsilon(mu, log_dm - jnp.log(q))
        return jnp.where(l1 >= 1, _subsample_eps(eps_g, q), jnp.inf)
    return per_round


@float64_jit
def _sc_shuffle_kernel(n, gamma, eps0, rounds, log_delta):
    return _baseline_eps(_shuffle_round(eps0), n, gamma, rounds, log_delta)


@float64_jit
def _sc_gauss_kernel(n, gamma, sigma, rounds, log_delta):
    return _baseline_eps(_gauss_round(sigma), n, gamma, rounds, log_delta)


def _baseline_args(n, gamma, rounds, delta, **extra):
    nn = V.integer("n", n, minimum=1)
    _check_n_max(nn)
    g = V.unit_open("gamma", gamma)
    t = V.integer("rounds", rounds, minimum=1)
    d = V.unit_open("delta", delta)
    shape = V.broadcastable(n=nn, gamma=g, rounds=t, delta=d, **extra)
    b = lambda x: jnp.asarray(np.broadcast_to(np.asarray(x, dtype=np.float64), shape))  # noqa: E731
    return b, b(nn), b(g), b(t), b(np.log(d))


def shuffled_checkin_strong_composition_epsilon(*, n, gamma, eps0, rounds, delta):
    """Strong-composition baseline for shuffled check-in (the approach of Girgis, Data, Diggavi 2021c).

    Girgis et al. 2021c state this accounting only up to constants; this instantiation is ours and sound:
    per round, k lies in [l1, l2] except with probability d1 + d2 (Chernoff, :func:`_count_bounds`); given
    k >= l1 the shuffle of the k eps0-LDP reports is (eps_s, delta_s)-DP with eps_s the FMT closed form at
    l1 users (footnote 3's fallback eps0 outside its condition), the differing client is in the round with
    probability k/n <= l2/n (Balle et al. 2018 Thm 9 subsampling); the T rounds compose by Dwork-Rothblum-
    Vadhan strong composition: eps = sqrt(2 T ln(1/delta')) eps_r + T eps_r (e^eps_r - 1), and
    delta = T (q delta_s + d1 + d2) + delta'.  The split of ``delta`` is optimised over a small grid.
    """
    e0 = V.nonnegative("eps0", eps0)
    b, nn, g, t, ld = _baseline_args(n, gamma, rounds, delta, eps0=e0)
    with x64_scope():
        return _sc_shuffle_kernel(nn, g, b(e0), t, ld)


def distributed_gaussian_strong_composition_epsilon(*, n, gamma, sigma, rounds, delta):
    """Strong-composition baseline for distributed check-in with the Gaussian mechanism (Sec. 5.1).

    As described in Sec. 5.1: with probability >= 1 - d1 at least l1 clients check in, so the mean carries
    Gaussian noise of std >= sigma / sqrt(l1) for sensitivity 2 / k <= ... i.e. sensitivity/std <=
    2 / (sigma sqrt(l1)); with probability >= 1 - d2 the rate is <= l2 / n.  The Gaussian mechanism's exact
    (eps, delta) (Balle & Wang 2018) is subsampled (Balle et al. 2018 Thm 9) and composed over T rounds by
    strong composition; delta = T (q delta_g + d1 + d2) + delta', the split optimised over a small grid.
    """
    s = V.positive("sigma", sigma)
    b, nn, g, t, ld = _baseline_args(n, gamma, rounds, delta, sigma=s)
    with x64_scope():
        return _sc_gauss_kernel(nn, g, b(s), t, ld)


# ----------------------------------------------------------------------------------------------------------
# Sec. 4.1: generic (eps0, delta0)-LDP randomizers, the "subsampled shuffling conversion" route


class ApproxCheckinRDP(NamedTuple):
    """A delta-approximate RDP curve of one round: with probability >= 1 - delta the round is (alpha, rdp)-RDP.

    ``fallback`` is True where the shuffling theorem does not apply at k = round(n gamma) (footnote 3: the
    bound then counts no amplification by shuffling, only by check-in).
    """

    rdp: jax.Array
    delta: jax.Array
    fallback: jax.Array


def _conversion_log_excess(k_lo, k_hi, n, eps0, delta0, shuffle_delta, alpha):
    """Per-k excess of the subsampled shuffle round, bounded over [k_lo, k_hi] (jnp).

    Shuffle of k reports (FMT at k_lo users: the FMT bound and its validity are monotone in k), subsampled
    at rate k_hi / n (Balle et al. 2018 Thm 9), then the RDP of an (eps, .)-DP pair (randomized response).
    """
    e0 = eps0[..., None]
    eps_s, ok = _fmt_eps(e0, k_lo, shuffle_delta[..., None])
    use = ok & (delta0[..., None] <= 0.0)
    eps_k = jnp.where(use, eps_s, e0)
    eps_sub = _subsample_eps(eps_k, jnp.minimum(k_hi / n[..., None], 1.0))
    return randomized_response_log_excess(alpha, eps_sub[..., None])  # k = 2: any eps-DP pair


@float64_jit(static_argnames=("width",))
def _conversion_kernel(n, gamma, eps0, delta0, shuffle_delta, alpha, width):
    def one(x):
        n, gamma, eps0, delta0, shuffle_delta = x
        fn = functools.partial(_conversion_log_excess, n=n, eps0=eps0, delta0=delta0, shuffle_delta=shuffle_delta,
                               alpha=alpha)
        return _binomial_log_excess(fn, n, gamma, width)

    lex = _map_batch(one, (n, gamma, eps0, delta0, shuffle_delta))
    # delta of the round: sum_k Bin(k) (k/n) delta_k <= gamma max(delta_s, delta0); the decomposition of each
    # conditional pair reweights the k-marginal by at most 1/(1 - delta), hence the extra log term.
    dbar = gamma * jnp.where(delta0 > 0, delta0, shuffle_delta)
    rdp = _finish_rdp(lex, alpha) - jnp.log1p(-dbar)[..., None] / (alpha - 1.0)
    kc = jnp.maximum(jnp.round(n * gamma), 1.0)
    _, ok = _fmt_eps(eps0, kc, shuffle_delta)
    return ApproxCheckinRDP(rdp, dbar, ~(ok & (delta0 <= 0.0)))


def subsampled_shuffle_checkin_rdp(orders, *, n, gamma, eps0, delta0=0.0, shuffle_delta,
                                   tail_tol=DEFAULT_TAIL_TOL) -> ApproxCheckinRDP:
    """Shuffled check-in with a generic (eps0, delta0)-LDP randomizer by the "subsampled shuffling
    conversion" of Sec. 4.1: for each k, (1) the shuffle of the k reports is (eps_s, shuffle_delta)-DP by
    Feldman-McMillan-Talwar 2021 Thm 3.1 (validity eps0 <= ln(k/(16 ln(4/shuffle_delta))), ERRATA; outside
    it footnote 3's fallback eps_s = eps0, delta 0), (2) the differing client is in the round with
    probability k/n: Balle, Barthe, Gaboardi 2018 Thm 9 gives (ln(1 + (k/n)(e^eps_s - 1)), (k/n) delta_s),
    (3) DP -> RDP as in :func:`amplify_jax.conversions.dp_to_rdp` (an (eps, delta)-DP pair is
    delta-approximately RDP with the randomized-response curve at eps; ERRATA on Lemma 3), (4) Eq. 5 sums
    the curves over k with the Bin(n, gamma) weights.

    The result is delta-approximate: ``delta`` <= gamma max(shuffle_delta, delta0) per round (and the curve
    carries + ln(1/(1 - delta))/(alpha - 1) for the reweighting of k by the decompositions).  Compose rounds
    by adding curves and deltas.  For delta0 > 0 FMT's approximate-DP extension is not used (its constants
    are not checked here): only check-in amplifies then, with (eps0, delta0) per report, and ``fallback`` is
    True.  Any orders > 1.  Broadcasts over n, gamma, eps0, delta0, shuffle_delta.
    """
    a = V.orders("orders", orders)
    nn = V.integer("n", n, minimum=1)
    _check_n_max(nn)
    g = V.probability("gamma", gamma)
    e0 = V.nonnegative("eps0", eps0)
    d0 = V.probability("delta0", delta0)
    ds = V.unit_open("shuffle_delta", shuffle_delta)
    tol = V.unit_open("tail_tol", tail_tol)
    shape = V.broadcastable(n=nn, gamma=g, eps0=e0, delta0=d0, shuffle_delta=ds)
    b = lambda x: jnp.asarray(np.broadcast_to(np.asarray(x, dtype=np.float64), shape))  # noqa: E731
    width = _sum_plan(np.broadcast_to(nn, shape), np.broadcast_to(g, shape), float(tol))
    with x64_scope():
        return _conversion_kernel(b(nn), b(g), b(e0), b(d0), b(ds), jnp.asarray(a), width)


# ----------------------------------------------------------------------------------------------------------
# (eps, delta) after T rounds, and calibration (distributed check-in, Gaussian mechanism)

#: Default integer orders of the check-in accountants.
CHECKIN_ORDERS = np.arange(2, 65, dtype=np.float64)

#: Default orders of the calibrations (a subset: any order gives a valid bound, and the Thm 9 cost grows with
#: the number of requested orders times the largest one).
CALIBRATION_ORDERS = np.array([2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 56, 64], dtype=np.float64)


def distributed_gaussian_epsilon(*, n, gamma, sigma, rounds, delta, orders=None, method="exact"):
    """(eps, best order) after ``rounds`` rounds of distributed check-in (Gaussian), at ``delta``.

    The per-round curve of :func:`distributed_gaussian_rdp` composed over the rounds (Mironov 2017) and
    converted by :func:`amplify_jax.conversions.epsilon_from_rdp` (Balle et al. 2020; Lemma 2 of the paper)
    on the integer ``orders`` (default 2..64).  Broadcasts over n, gamma, sigma, rounds, delta.
    """
    from ..conversions import epsilon_from_rdp

    o = CHECKIN_ORDERS if orders is None else orders
    t = V.integer("rounds", rounds, minimum=1).astype(np.float64)
    rdp = distributed_gaussian_rdp(o, n=n, gamma=gamma, sigma=sigma, method=method)
    d = V.unit_open("delta", delta)
    shape = V.broadcastable(rdp=np.empty(rdp.shape[:-1]), rounds=t, delta=d)
    with x64_scope():
        total = jnp.broadcast_to(jnp.asarray(t)[..., None] * rdp, shape + rdp.shape[-1:])
    return epsilon_from_rdp(np.asarray(o, dtype=np.float64), np.asarray(total), delta=np.broadcast_to(d, shape))


def distributed_gaussian_delta(*, n, gamma, sigma, rounds, epsilon, orders=None, method="exact"):
    """(delta, best order) after ``rounds`` rounds of distributed check-in (Gaussian), at ``epsilon``.

    The inverse conversion of :func:`distributed_gaussian_epsilon`
    (:func:`amplify_jax.conversions.delta_from_rdp`).  Broadcasts over n, gamma, sigma, rounds, epsilon.
    """
    from ..conversions import delta_from_rdp

    o = CHECKIN_ORDERS if orders is None else orders
    t = V.integer("rounds", rounds, minimum=1).astype(np.float64)
    rdp = distributed_gaussian_rdp(o, n=n, gamma=gamma, sigma=sigma, method=method)
    e = V.nonnegative("epsilon", epsilon)
    shape = V.broadcastable(rdp=np.empty(rdp.shape[:-1]), rounds=t, epsilon=e)
    total = np.broadcast_to(np.asarray(t)[..., None] * np.asarray(rdp), shape + rdp.shape[-1:])
    return delta_from_rdp(np.asarray(o, dtype=np.float64), total, epsilon=np.broadcast_to(e, shape))


class CheckinCalibration(NamedTuple):
    """A calibrated parameter (minimal sigma, largest gamma or most rounds) with the eps it achieves."""

    value: jax.Array  #: the parameter on the feasible side
    epsilon: jax.Array  #: eps after the rounds at that value, re-computed
    status: jax.Array  #: amplify_jax.calibrate status (0 ok, 1 infeasible, 2 at the limit, 3 not monotone)


def _dg_epsilon_jnp(n, gamma, sigma, rounds, log_delta, *, alpha_int, width):
    from ..conversions import rdp_epsilon_terms

    alpha = jnp.asarray(alpha_int, dtype=jnp.float64)
    rdp = _finish_rdp(_distributed_gaussian_log_excess(n, gamma, sigma, alpha_int, width), alpha)
    e = rdp_epsilon_terms(alpha, rounds[..., None] * rdp, log_delta[..., None], "balle2020")
    return jnp.min(e, axis=-1)


def _cal_sigma_fn(x, n, gamma, rounds, log_delta, *, alpha_int, width):
    return _dg_epsilon_jnp(n, gamma, x, rounds, log_delta, alpha_int=alpha_int, width=width)


def _cal_gamma_fn(x, n, sigma, rounds, log_delta, *, alpha_int, width):
    return _dg_epsilon_jnp(n, x, sigma, rounds, log_delta, alpha_int=alpha_int, width=width)


@functools.lru_cache(maxsize=None)
def _cal_fn(which, alpha_int, width):
    f = _cal_sigma_fn if which == "sigma" else _cal_gamma_fn
    return functools.partial(f, alpha_int=alpha_int, width=width)


def _cal_common(epsilon, delta, rounds, orders):
    alpha_int = _int_orders(CHECKIN_ORDERS if orders is None else orders)
    e = V.positive("epsilon", epsilon)
    d = V.unit_open("delta", delta)
    t = V.integer("rounds", rounds, minimum=1).astype(np.float64)
    return alpha_int, e, d, t


def distributed_gaussian_calibrate_sigma(*, n, gamma, rounds, epsilon, delta, orders=None, sigma_lo=0.05,
                                         sigma_hi=1000.0, rtol=1e-6, tail_tol=DEFAULT_TAIL_TOL):
    """Minimal sigma with eps(T rounds) <= epsilon at delta, for distributed check-in (Gaussian), batched.

    Bisection by :func:`amplify_jax.calibrate.invert_monotone` on the exact Eq. 10 sum (the RDP decreases in
    sigma); the returned sigma is on the feasible side and re-checked (``epsilon`` in the result).
    Default orders: :data:`CALIBRATION_ORDERS`.
    """
    from ..calibrate import invert_monotone

    alpha_int, e, d, t = _cal_common(epsilon, delta, rounds, CALIBRATION_ORDERS if orders is None else orders)
    nn = V.integer("n", n, minimum=1).astype(np.float64)
    _check_n_max(nn)
    g = V.probability("gamma", gamma)
    shape = V.broadcastable(n=nn, gamma=g, rounds=t, epsilon=e, delta=d)
    width = _sum_plan(np.broadcast_to(nn, shape), np.broadcast_to(g, shape), tail_tol)
    inv = invert_monotone(_cal_fn("sigma", alpha_int, width), e, args=(nn, g, t, np.log(d)),
                          lo=sigma_lo, hi=sigma_hi, feasible="above", rtol=rtol)
    return CheckinCalibration(inv.value, inv.achieved, inv.status)


def _variance_cap(glo, ghi):
    """The gamma in [glo, ghi] maximising gamma (1 - gamma) (sizes the window for a whole bracket)."""
    return np.clip(0.5, glo, ghi)


def _eps_on_points(gam, n, sigma, rounds, log_delta, alpha_int, tol):
    """eps after the rounds at every point (arrays of one shape), with one window for all (one compile)."""
    width = _sum_plan(n, gam, tol)
    with x64_scope():
        return np.asarray(_points_eps_kernel(*(jnp.asarray(x) for x in (gam, n, sigma, rounds, log_delta)),
                                             _cal_fn("gamma", alpha_int, width)))


@float64_jit(static_argnames=("fn",))
def _points_eps_kernel(gam, n, sigma, rounds, log_delta, fn):
    return fn(gam, n, sigma, rounds, log_delta)


def distributed_gaussian_max_gamma(*, n, sigma, rounds, epsilon, delta, orders=None, gamma_lo=None,
                                   gamma_hi=1.0, grid_points=17, rtol=1e-6, tail_tol=DEFAULT_TAIL_TOL):
    """Largest check-in rate gamma <= gamma_hi with eps(T rounds) <= epsilon at delta, batched.

    eps is *not* monotone in gamma for distributed check-in: very small rates leave rounds with a handful of
    participants, whose mean is barely noised (base RDP 2 lambda / (k sigma^2)), so eps first falls as
    gamma grows, then rises.  Unless ``gamma_lo`` (a feasible rate) is given, eps is first evaluated on a
    log grid of ``grid_points`` rates in [0.01/n, gamma_hi]; the bracket is the largest feasible grid point
    and the next one, refined by :func:`amplify_jax.calibrate.invert_monotone` (``feasible="below"``).  The
    answer is feasible (re-checked) and the largest up to the grid's resolution.  status 1 where no grid
    rate is feasible (value: the grid's first rate).  Default orders: :data:`CALIBRATION_ORDERS`.
    """
    from ..calibrate import invert_monotone

    alpha_int, e, d, t = _cal_common(epsilon, delta, rounds, CALIBRATION_ORDERS if orders is None else orders)
    nn = V.integer("n", n, minimum=1).astype(np.float64)
    _check_n_max(nn)
    s = V.positive("sigma", sigma)
    ghi = V.probability("gamma_hi", gamma_hi)
    if np.any(ghi <= 0):
        raise ValueError(f"Expected gamma_hi > 0, got gamma_hi={np.min(ghi)!r}.")
    shape = V.broadcastable(n=nn, sigma=s, rounds=t, epsilon=e, delta=d, gamma_hi=ghi)
    b = lambda x: np.broadcast_to(np.asarray(x, dtype=np.float64), shape)  # noqa: E731
    if gamma_lo is not None:
        lo = b(V.unit_open("gamma_lo", gamma_lo))
        hi = b(ghi)
    else:
        gp = int(V.integer("grid_points", grid_points, minimum=3))
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
    return CheckinCalibration(inv.value, inv.achieved, inv.status)


@float64_jit
def _max_rounds_kernel(alpha, rdp, epsilon, log_delta):
    from ..conversions import rdp_epsilon_terms

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


def distributed_gaussian_max_rounds(*, n, gamma, sigma, epsilon, delta, orders=None, method="exact"):
    """Most rounds T with eps(T rounds) <= epsilon at delta (distributed check-in, Gaussian), batched.

    The composed curve is linear in T, so per order T_alpha = floor((epsilon - c_alpha) / rdp(alpha)) with
    c_alpha the conversion's offset (Balle et al. 2020), and T = max over orders: exact, no bisection.  The
    value is re-checked.  status 1 (infeasible) where not even one round fits (value 0); status 2 where the
    round has zero RDP (gamma = 0: any number of rounds, value 2^53).
    """
    alpha_int, e, d, _ = _cal_common(epsilon, delta, 1, orders)
    rdp = distributed_gaussian_rdp(alpha_int, n=n, gamma=gamma, sigma=sigma, method=method)
    shape = V.broadcastable(rdp=np.empty(rdp.shape[:-1]), epsilon=e, delta=d)
    with x64_scope():
        alpha = jnp.asarray(alpha_int, dtype=jnp.float64)
        r = jnp.broadcast_to(rdp, shape + rdp.shape[-1:])
        t, ach = _max_rounds_kernel(alpha, r, jnp.broadcast_to(jnp.asarray(e), shape),
                                    jnp.broadcast_to(jnp.log(jnp.asarray(d)), shape))
        status = jnp.where(t < 1, 1, jnp.where(t >= 2.0 ** 53, 2, 0)).astype(jnp.int32)
    return CheckinCalibration(t, ach, status)


# ----------------------------------------------------------------------------------------------------------
# (eps, delta) after T rounds of shuffled check-in


def shuffled_checkin_epsilon(*, n, gamma, eps0, rounds, delta, bound="upper", method="exact", orders=None):
    """(eps, best order) after ``rounds`` rounds of shuffled check-in with eps0-LDP randomizers, at ``delta``.

    ``bound="upper"``: Thm 2 (:func:`shuffled_checkin_upper_rdp`, ``method`` "exact" or "eq7"), a valid
    (eps, delta)-DP guarantee.  ``bound="lower"``: the same conversion applied to Thm 3's lower bound on the
    RDP (what Figure 1 plots as the lower bound): the best any RDP accounting of this mechanism can give
    through Eq. 3, *not* a DP guarantee and not a lower bound on the true eps.  Orders default to 2..64.
    """
    from ..conversions import epsilon_from_rdp

    V.one_of("bound", bound, ("upper", "lower"))
    o = CHECKIN_ORDERS if orders is None else orders
    t = V.integer("rounds", rounds, minimum=1).astype(np.float64)
    if bound == "upper":
        rdp = shuffled_checkin_upper_rdp(o, n=n, gamma=gamma, eps0=eps0, method=method)
    else:
        rdp = shuffled_checkin_lower_rdp(o, n=n, gamma=gamma, eps0=eps0)
    d = V.unit_open("delta", delta)
    shape = V.broadcastable(rdp=np.empty(rdp.shape[:-1]), rounds=t, delta=d)
    total = np.broadcast_to(np.asarray(t)[..., None] * np.asarray(rdp), shape + rdp.shape[-1:])
    return epsilon_from_rdp(np.asarray(o, dtype=np.float64), total, delta=np.broadcast_to(d, shape))


class ApproxEpsilon(NamedTuple):
    """eps after T rounds of a delta-approximate RDP accounting (``valid`` False where delta is used up)."""

    epsilon: jax.Array
    order: jax.Array
    valid: jax.Array
    fallback: jax.Array


def subsampled_shuffle_checkin_epsilon(*, n, gamma, eps0, rounds, delta, shuffle_delta, delta0=0.0,
                                       orders=None) -> ApproxEpsilon:
    """eps after T rounds of the Sec. 4.1 route (:func:`subsampled_shuffle_checkin_rdp`), at total ``delta``.

    The rounds compose as approximate RDP (curves and deltas add); the RDP curve is converted at
    delta - T delta_round (Balle et al. 2020).  Where T delta_round >= delta no guarantee follows:
    ``valid`` is False and epsilon is +inf (never silently).  Orders default to
    :data:`amplify_jax.rdp.DEFAULT_ORDERS` (any orders > 1 work on this route).
    """
    from ..conversions import epsilon_from_rdp
    from ..rdp import DEFAULT_ORDERS

    o = DEFAULT_ORDERS if orders is None else orders
    t = V.integer("rounds", rounds, minimum=1).astype(np.float64)
    d = V.unit_open("delta", delta)
    r = subsampled_shuffle_checkin_rdp(o, n=n, gamma=gamma, eps0=eps0, delta0=delta0,
                                       shuffle_delta=shuffle_delta)
    shape = V.broadcastable(rdp=np.empty(r.rdp.shape[:-1]), rounds=t, delta=d)
    spent = np.broadcast_to(t * np.asarray(r.delta), shape)
    left = np.broadcast_to(d, shape) - spent
    valid = left > 0
    total = np.broadcast_to(np.asarray(t)[..., None] * np.asarray(r.rdp), shape + r.rdp.shape[-1:])
    res = epsilon_from_rdp(np.asarray(o, dtype=np.float64), total, delta=np.where(valid, left, 0.5))
    with x64_scope():
        eps = jnp.where(jnp.asarray(valid), res.epsilon, jnp.inf)
    return ApproxEpsilon(eps, res.order, jnp.asarray(valid), jnp.broadcast_to(r.fallback, shape))


from . import _bounds  # noqa: F401, E402  (registers the bounds)
