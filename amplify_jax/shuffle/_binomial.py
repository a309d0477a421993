"""Binomial log-pmf windows and Chernoff tail bounds for large n (private to the shuffle family).

The pmf is the core's ``amplify_jax._core.numerics.log_binom_pmf`` (Loader's saddle-point form, C. Loader, "Fast
and accurate computation of binomial probabilities", 2000, the algorithm behind R's and Boost's dbinom; the
clones bound sums ~1e5 binomial weights at n = 1e8 and needs them to ~1e-13 relative):

    log b(k; n, p) = stirlerr(n) - stirlerr(k) - stirlerr(n - k) - bd0(k, n p) - bd0(n - k, n q)
                     + 0.5 log(n / (2 pi k (n - k)))

with stirlerr(x) = log Gamma(x + 1) - (x + 1/2) log x + x - log(2 pi)/2 and
bd0(x, M) = x log(x / M) + M - x = M h((x - M) / M), h(u) = (1 + u) log1p(u) - u (series for |u| < 0.1).

The Chernoff bound P[X >= k] <= exp(-(bd0(k, n p) + bd0(n - k, n q))) (k >= n p, and symmetrically for the
lower tail) bounds every truncated tail, so that neglected mass can be added to delta soundly.
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from .._core import numerics as _num


def bd0(x, m):
    """x log(x/m) + m - x >= 0 without cancellation (x >= 0, m >= 0): ``amplify_jax._core.numerics.bd0`` (Loader's
    form), with the limits of this module's tails: m where x == 0, and +inf for x > 0 = m."""
    x = jnp.asarray(x, dtype=jnp.float64)
    m = jnp.asarray(m, dtype=jnp.float64)
    out = jnp.maximum(_num.bd0(x, jnp.where(m > 0, m, 1.0)), 0.0)
    return jnp.where(m > 0, out, jnp.where(x > 0, jnp.inf, 0.0))


def log_binom_pmf(k, n, p):
    """log of the Binomial(n, p) pmf at integer k, integer n: ``amplify_jax._core.numerics.log_binom_pmf``
    (Loader's saddle-point form, ~1e-15 absolute near the mode even at n ~ 1e9); p in [0, 1], -inf outside
    0 <= k <= n."""
    return _num.log_binom_pmf(jnp.asarray(k, dtype=jnp.float64), jnp.asarray(n, dtype=jnp.float64),
                              jnp.asarray(p, dtype=jnp.float64))


def log_binom_pmf_window(start, n, p, width: int):
    """log Bin(n, p) pmf at start, start+1, ..., start+width-1 (new trailing axis), integer start and n.

    The first point by :func:`log_binom_pmf`, the others by the exact ratio
    b(k+1)/b(k) = (n-k)/(k+1) * p/(1-p) accumulated in log space (about 1 ulp of |log ratio| per step:
    ~1e-13 relative over 1e3 points), which is several times cheaper than the saddle-point form per point.
    p in {0, 1} (point masses at 0 and n) is handled exactly.
    """
    start = jnp.asarray(start, dtype=jnp.float64)[..., None]
    n = jnp.asarray(n, dtype=jnp.float64)[..., None]
    p = jnp.asarray(p, dtype=jnp.float64)[..., None]
    k = start + jnp.arange(width, dtype=jnp.float64)
    degenerate = (p <= 0) | (p >= 1)
    ps = jnp.where(degenerate, 0.5, p)
    first = log_binom_pmf(start, n, ps)
    kk = k[..., :-1]
    ratio = jnp.where((kk >= 0) & (kk < n), jnp.log(jnp.maximum(n - kk, 1.0)) - jnp.log(kk + 1.0), -jnp.inf)
    ratio = ratio + jnp.log(ps) - jnp.log1p(-ps)
    # Where start < 0 the window first reaches the support later: restart from the pmf at 0 there.
    steps = jnp.concatenate([jnp.zeros_like(first), ratio], axis=-1)
    start_in = start >= 0
    first_in = jnp.where(start_in, first, log_binom_pmf(jnp.zeros_like(start), n, ps))
    offset = jnp.where(start_in, 0.0, -start)  # index of k = 0 inside the window
    idx = jnp.arange(width, dtype=jnp.float64)
    steps = jnp.where(idx > offset, steps, 0.0)
    out = first_in + jnp.cumsum(steps, axis=-1)
    out = jnp.where((k < 0) | (k > n), -jnp.inf, out)
    point = jnp.where(p <= 0, 0.0, n)  # the atom of a degenerate binomial
    return jnp.where(degenerate, jnp.where(k == point, 0.0, -jnp.inf), out)


def log_tail_upper(k, n, p):
    """log of a Chernoff bound on P[X >= k], X ~ Bin(n, p): -n KL(k/n || p) for k > n p, else 0."""
    k = jnp.asarray(k, dtype=jnp.float64)
    n = jnp.asarray(n, dtype=jnp.float64)
    p = jnp.asarray(p, dtype=jnp.float64)
    kc = jnp.clip(k, 0.0, n)
    expo = -(bd0(kc, n * p) + bd0(n - kc, n * (1.0 - p)))
    out = jnp.where(k > n * p, expo, 0.0)
    return jnp.where(k > n, -jnp.inf, out)


def log_tail_lower(k, n, p):
    """log of a Chernoff bound on P[X <= k], X ~ Bin(n, p): -n KL(k/n || p) for k < n p, else 0."""
    return log_tail_upper(jnp.asarray(n, dtype=jnp.float64) - k, n, 1.0 - jnp.asarray(p, dtype=jnp.float64))


def window_size(max_variance, k_sd, minimum=1):
    """Static (Python int) number of integer points covering mean +- k_sd standard deviations."""
    sd = math.sqrt(max(float(max_variance), 0.0))
    return int(max(minimum, 2 * math.ceil(k_sd * sd) + 3))
