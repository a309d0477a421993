"""Accurate binomial log-pmf and Chernoff tail bounds for large n (private to the shuffle family).

``amplify_jax.numerics.log_binom_pmf`` goes through ``gammaln`` differences, which lose about
log10(n log n) digits at n = 1e8 (gammaln(1e8) ~ 1.7e9, so an absolute error ~ 1e-7 in the log-pmf).
The clones bound sums ~1e5 binomial weights at n = 1e8 and needs them to ~1e-13 relative, so this module
uses Loader's saddle-point form (C. Loader, "Fast and accurate computation of binomial probabilities", 2000,
the algorithm behind R's and Boost's dbinom):

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

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)

# stirlerr(x) for x > 15: 1/(12x) - 1/(360x^3) + 1/(1260x^5) - 1/(1680x^7) + 1/(1188x^9) (error < 1e-17).
_S0, _S1, _S2, _S3, _S4 = 1.0 / 12, 1.0 / 360, 1.0 / 1260, 1.0 / 1680, 1.0 / 1188


def _stirlerr_table():
    out = []
    for i in range(16):
        x = float(i)
        out.append(0.0 if i == 0 else math.lgamma(x + 1.0) - (x + 0.5) * math.log(x) + x - _HALF_LOG_2PI)
    return tuple(out)


_STIRLERR_SMALL = _stirlerr_table()  # stirlerr(0..15); stirlerr(0) is mapped to 0 (only used where k > 0)


def stirlerr(x):
    """log Gamma(x+1) - (x+1/2) log x + x - log(2 pi)/2 (Loader 2000) at integer-valued x >= 0.

    x > 15: the asymptotic series (error < 1e-17); x <= 15: a table (math.lgamma at import); 0 maps to 0.
    """
    x = jnp.asarray(x, dtype=jnp.float64)
    big = x > 15.0
    xb = jnp.where(big, x, 16.0)
    x2 = 1.0 / (xb * xb)
    series = (_S0 - (_S1 - (_S2 - (_S3 - _S4 * x2) * x2) * x2) * x2) / xb
    idx = jnp.clip(jnp.round(x), 0, 15).astype(jnp.int32)
    small = jnp.asarray(_STIRLERR_SMALL, dtype=jnp.float64)[idx]
    return jnp.where(big, series, small)


def _h_series(u):
    # h(u) = sum_{j>=2} (-1)^j u^j / (j (j-1)), |u| < 0.1: terms up to j = 17 leave < 1e-17 relative.
    acc = jnp.zeros_like(u)
    for j in range(17, 1, -1):
        acc = acc * u + ((-1.0) ** j) / (j * (j - 1))
    return acc * u * u


def bd0(x, m):
    """x log(x/m) + m - x >= 0 without cancellation (x >= 0, m > 0); equals m where x == 0."""
    x = jnp.asarray(x, dtype=jnp.float64)
    m = jnp.asarray(m, dtype=jnp.float64)
    ms = jnp.where(m > 0, m, 1.0)
    u = (x - ms) / ms
    small = jnp.abs(u) < 0.1
    us = jnp.where(small, u, 0.0)
    series = ms * _h_series(us)
    xs = jnp.where(x > 0, x, 1.0)
    direct = jnp.where(x > 0, xs * jnp.log(xs / ms), 0.0) + ms - x
    out = jnp.where(small, series, direct)
    # m == 0: the term is +inf unless x == 0.
    return jnp.where(m > 0, jnp.maximum(out, 0.0), jnp.where(x > 0, jnp.inf, 0.0))


def log_binom_pmf(k, n, p):
    """log of the Binomial(n, p) pmf at integer k, integer n, accurate to ~1e-14 absolute for n up to 1e12.

    p in [0, 1]; -inf outside 0 <= k <= n.
    """
    k = jnp.asarray(k, dtype=jnp.float64)
    n = jnp.asarray(n, dtype=jnp.float64)
    p = jnp.asarray(p, dtype=jnp.float64)
    q = 1.0 - p
    inside = (k > 0) & (k < n)
    ks = jnp.where(inside, k, 1.0)
    ns = jnp.where(inside, n, 2.0)
    core = (
        stirlerr(ns)
        - stirlerr(ks)
        - stirlerr(ns - ks)
        - bd0(ks, ns * p)
        - bd0(ns - ks, ns * q)
        + 0.5 * jnp.log(ns / (ks * (ns - ks)))
        - _HALF_LOG_2PI
    )
    # k == 0: n log q ; k == n: n log p (with 0 log 0 = 0).
    log_q = jnp.where(q > 0, jnp.log(jnp.where(q > 0, q, 1.0)), -jnp.inf)
    log_p = jnp.where(p > 0, jnp.log(jnp.where(p > 0, p, 1.0)), -jnp.inf)
    at0 = jnp.where(n > 0, n * jnp.where(q > 0, log_q, -1.0), 0.0)
    at0 = jnp.where((q <= 0) & (n > 0), -jnp.inf, at0)
    atn = jnp.where(n > 0, n * jnp.where(p > 0, log_p, -1.0), 0.0)
    atn = jnp.where((p <= 0) & (n > 0), -jnp.inf, atn)
    out = jnp.where(k == 0, at0, jnp.where(k == n, atn, core))
    return jnp.where((k < 0) | (k > n), -jnp.inf, out)


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
