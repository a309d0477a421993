"""Sec. 4.1 / App. B of the self check-in paper: the shuffled Gaussian mechanism (RDP by integer partitions of
the order, at most n parts), and shuffled check-in with the Gaussian local randomizer."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.scipy import special as jsp

from .._core import validate as V
from .._core.domains import check_params
from .._core.numerics import float64_jit, logsumexp, x64_scope
from ..accounting.rdp import without_replacement_log_excess
from ._params import GAMMA, N, SIGMA
from ._weighted import (DEFAULT_TAIL_TOL, _binomial_log_excess, _finish_rdp, _int_orders, _map_batch,
                        _sum_plan)


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
    the partitions with more than k parts are excluded (the authors' code includes them:
    docs/errata.md#e-checkin-partitions).
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

    Corrected (docs/errata.md#e-checkin-partitions): the authors' code keeps partitions with more than n parts
    (n = 1, lambda = 2, sigma = 1 gives 1.31326 instead of 1.0); they are excluded here.  The partitions are
    summed by their number of parts with a log-space recursion (no enumeration), fast up to lambda = 64 and
    beyond.  Integer orders >= 2.
    Broadcasts over n and sigma; an absolute margin of ~10 ulp of the largest term is added.
    """
    alpha_int = _int_orders(orders)
    nf, sf = check_params((N, SIGMA), n=n, sigma=sigma)
    with x64_scope():
        return _shuffled_gaussian_kernel(jnp.asarray(nf), jnp.asarray(sf), alpha_int)


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
    nf, gf, sf = check_params((N, GAMMA, SIGMA), n=n, gamma=gamma, sigma=sigma)
    tol = V.scalar("tail_tol", tail_tol, V.unit_open)
    width = _sum_plan(nf, gf, tol)
    with x64_scope():
        return _shuffled_gauss_checkin_kernel(jnp.asarray(nf), jnp.asarray(gf), jnp.asarray(sf), alpha_int, width)
