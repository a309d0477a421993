"""Thm 4 (Eq. 10) of the self check-in paper: distributed check-in with the Gaussian mechanism, and the Eq. 11
Chernoff approximation.

Base RDP 2 lambda / (k sigma^2) (the mean of k values clipped to norm 1, replacement adjacency) amplified by
sampling without replacement (Wang, Balle, Kasiviswanathan 2019, Thm 9, the bound of
:func:`amplify_jax.rdp.without_replacement_rdp`), weighted by Bin(k; n, gamma) (Thm 1, :mod:`._weighted`).
"""

from __future__ import annotations

import functools

import numpy as np
import jax.numpy as jnp

from .._core import validate as V
from .._core.domains import check_params
from .._core.numerics import float64_jit
from ..accounting.rdp import without_replacement_log_excess
from ._params import GAMMA, N, SIGMA
from ._weighted import (DEFAULT_TAIL_TOL, _binomial_log_excess, _chernoff_grid, _finish_rdp,
                        _int_orders, _map_batch, _sum_plan)


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
    nf, gf, sf = check_params((N, GAMMA, SIGMA), n=n, gamma=gamma, sigma=sigma)
    V.one_of("method", method, ("exact", "eq11", "exact_paper_rate"))
    tol = V.scalar("tail_tol", tail_tol, V.unit_open)
    shape = nf.shape
    dgrid = _chernoff_grid(chernoff_delta, shape)  # checked whatever the method (used by eq11 only)
    # NumPy arrays to the kernels: a jnp.asarray is a small program per shape (issue 25)
    if method == "eq11":
        return _gauss_eq11_kernel(nf, gf, sf, np.asarray(dgrid), alpha_int)
    width = _sum_plan(nf, gf, tol)
    return _distributed_gaussian_kernel(nf, gf, sf, alpha_int, width, method == "exact_paper_rate")


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
