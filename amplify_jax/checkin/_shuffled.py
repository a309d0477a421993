"""Thm 2 (Eq. 7, constants corrected against Girgis et al. 2021) and Thm 3 (Eq. 8) of the self check-in paper:
upper and lower bounds on the RDP of shuffled check-in with eps0-LDP discrete randomizers."""

from __future__ import annotations

import functools

import numpy as np
import jax
import jax.numpy as jnp
from jax.scipy import special as jsp

from .._core import validate as V
from .._core.domains import check_params
from ._params import EPS0, GAMMA, GAMMA_POSITIVE, N
from .._core.numerics import float64_jit, log_comb_table, log_expm1, logsumexp
from ._weighted import (_SAFETY_REL, DEFAULT_TAIL_TOL, _binomial_log_excess, _chernoff_grid,
                        _finish_rdp, _int_orders, _map_batch, _sum_plan)


def _girgis_log_excess(k_lo, log_q, eps0, alpha_int):
    """log of the excess of the subsampled-shuffle bound (Girgis, Data, Diggavi 2021, as used in Eq. 7) (jnp).

    For k shuffled eps0-LDP reports subsampled at rate q, moment - 1 <=
    4 C(l,2) q^2 (e^eps0 - 1)^2 / (kb e^eps0)
    + sum_{j=3}^{l} C(l,j) q^j j Gamma(j/2) (2 (e^{2 eps0} - 1)^2 / (kb e^{2 eps0}))^{j/2}
    + ((1 + q c)^l - 1 - l q c) e^{-(k-1)/(8 e^eps0)},   kb = floor((k-1)/(2 e^eps0)) + 1,
    c = (e^{2 eps0} - 1)/e^eps0 (Eq. 7's constant; an independent transcription of Girgis et al. has
    (e^{2 eps0} - 1)/(2 e^eps0), the smaller: the larger one is kept).  Corrected
    (docs/errata.md#e-checkin-eq7): kb uses 2 e^eps0 and the last factor decays like e^{-(k-1)/(8 e^eps0)},
    as in Girgis et al.; Eq. 7 as extracted has eps0 instead.
    Non-increasing in k (``k_lo`` is used), increasing in q.  k_lo: batch + (K,); eps0, log_q: broadcastable.
    """
    e0 = eps0
    kb = jnp.floor((k_lo - 1.0) / (2.0 * jnp.exp(e0))) + 1.0
    lam = jnp.asarray(alpha_int, dtype=jnp.float64)
    amax = max(alpha_int)
    j = jnp.arange(2, amax + 1, dtype=jnp.float64)
    table = log_comb_table(tuple(int(a) for a in alpha_int), amax)
    lb = jnp.asarray(np.where(np.isfinite(table), table, 0.0))
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

    ``method="eq7"``: Eq. 7 of the paper with the constants corrected against Girgis et al. 2021
    (docs/errata.md#e-checkin-eq7: l~ = floor(floor((1 - Delta) n gamma) / (2 e^eps0)) + 1,
    Upsilon_k ~ e^{-(k-1)/(8 e^eps0)}; the floor inside keeps l~ equal to Girgis' kb at
    k = floor((1-Delta) n gamma) + 1), as printed with rate gamma for
    every k (docs/errata.md#e-checkin-rate), minimised over a grid of Delta (or at ``chernoff_delta``).
    ``method="exact"`` (default): the per-k subsampled-shuffle bound that Eq. 7 bounds (see
    :func:`_girgis_log_excess`) summed exactly over k by Thm 1 at the conditional rate k / n.
    Integer orders >= 2.  Broadcasts over n, gamma, eps0.
    """
    alpha_int = _int_orders(orders)
    nf, gf, ef = check_params((N, GAMMA, EPS0), n=n, gamma=gamma, eps0=eps0)
    V.one_of("method", method, ("exact", "eq7"))
    tol = V.scalar("tail_tol", tail_tol, V.unit_open)
    shape = nf.shape
    dgrid = _chernoff_grid(chernoff_delta, shape)  # checked whatever the method (used by eq7 only)
    # NumPy arrays to the kernels: a jnp.asarray is a small program per shape (issue 25)
    if method == "eq7":
        if np.any(gf <= 0):
            raise ValueError(f"Expected gamma > 0 for method='eq7', got gamma={np.min(gf)!r}.")
        return _eq7_kernel(nf, gf, ef, np.asarray(dgrid), alpha_int)
    width = _sum_plan(nf, gf, tol)
    return _shuffled_checkin_exact_kernel(nf, gf, ef, alpha_int, width)


@float64_jit(static_argnames=("alpha_int",))
def _eq8_kernel(n, gamma, eps0, dgrid, alpha_int):
    lam = jnp.asarray(alpha_int, dtype=jnp.float64)
    mu = (n * gamma)[..., None]
    d = dgrid
    # log(1 - e^{-D^2 mu/(2 + D)}) + log C(l, 2) + 2 log g + 2 log(e^eps0 - 1) - log((1 + D) mu) - eps0
    lead = (jnp.log(-jnp.expm1(-(d ** 2) * mu / (2.0 + d))) + 2.0 * jnp.log(gamma)[..., None]
            + 2.0 * log_expm1(eps0)[..., None] - jnp.log((1.0 + d) * mu) - eps0[..., None])
    lb2 = jnp.log(lam * (lam - 1.0) / 2.0)
    val = jnp.max(jnp.logaddexp(0.0, lead[..., None] + lb2) / (lam - 1.0), axis=-2)  # batch + (A,)
    # Renyi divergence is non-decreasing in the order (van Erven & Harremoes 2014, Thm 3): a lower bound at any
    # order lambda' <= lambda of the grid holds at lambda (the running maximum over the sorted orders).
    perm = np.argsort(np.asarray(alpha_int), kind="stable")
    env = jax.lax.cummax(jnp.take(val, jnp.asarray(perm), axis=-1), axis=val.ndim - 1)
    return jnp.take(env, jnp.asarray(np.argsort(perm)), axis=-1) * (1.0 - _SAFETY_REL)


def shuffled_checkin_lower_rdp(orders, *, n, gamma, eps0, chernoff_delta=None):
    """Lower bound on the RDP of shuffled check-in (Thm 3, Eq. 8), for binary randomized response:

        eps(lambda) >= 1/(lambda-1) log(1 + (1 - e^{-Delta^2 n gamma/(2 + Delta)}) C(lambda, 2) gamma^2
                                        (e^eps0 - 1)^2 / ((1 + Delta) n gamma e^eps0)),

    maximised over a grid of Delta in (0, 1) (every Delta gives a valid lower bound) or at
    ``chernoff_delta``; rounded down.  As printed (rate gamma).  Integer orders >= 2; n gamma > 0.

    Then the running maximum over the requested orders, taken in increasing order: the Renyi divergence is
    non-decreasing in the order (van Erven & Harremoes 2014, Thm 3), so a lower bound at lambda' <= lambda is
    one at lambda.  Found by this project: Eq. 8 alone peaks and then decays like 2 ln(lambda) / lambda, so
    converted to (eps, delta) and minimised over ever larger orders it tends to 0 (n = 1e7, gamma = 1e-3,
    T = 100, delta = 1e-7: 3e-4 at order 4e4, 1.3e-5 at order 1e8), an artefact of the order grid; with the
    running maximum the conversion has an interior optimum and wider grids no longer lower it.  Where Eq. 8 is
    increasing over the grid (small C(lambda, 2) gamma (e^eps0 - 1)^2 / (n e^eps0)), nothing changes.
    """
    alpha_int = _int_orders(orders)
    nf, gf, ef = check_params((N, GAMMA_POSITIVE, EPS0), n=n, gamma=gamma, eps0=eps0)  # Thm 3 needs gamma > 0
    shape = nf.shape
    dgrid = _chernoff_grid(chernoff_delta, shape)
    if np.any(dgrid <= 0):
        raise ValueError(f"Expected chernoff_delta > 0, got chernoff_delta={np.min(dgrid)!r}.")
    return _eq8_kernel(nf, gf, ef, np.asarray(dgrid), alpha_int)
