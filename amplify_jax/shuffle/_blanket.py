"""The privacy blanket of the shuffle model (Balle, Bell, Gascon, Nissim 2019) with dummy messages
(Ladjel, Anciaux, Bellet, Scerri, App. E: Lemma 2, Lemma 3, Lemma 4, Lemma 5, Theorem 5, Algorithm 2).

Setting.  n users apply a local randomizer R, whose output law is mu_x = (1 - gamma) upsilon_x + gamma omega
(gamma: the blanket mass / total-variation similarity, omega: the blanket); a shuffler adds d dummies drawn
from omega and shuffles the n + d messages.  With the privacy amplification variable
L = (mu_x(W) - e^eps mu_x'(W)) / omega(W), W ~ omega (Ladjel Eq. 9), Ladjel Lemma 2 gives

    delta(eps) <= sum_{m'=0}^{n-1} C(n-1, m') gamma^m' (1 - gamma)^(n-1-m') E[sum_{i <= m'+1+d} L_i]_+ / (m'+1+d)
               = (1/(gamma n)) sum_{m=1}^{n} (m/(m+d)) C(n, m) gamma^m (1-gamma)^(n-m) E[sum_{i<=m+d} L_i]_+ ,

(the first form, used here, stays defined at gamma = 0: the dummies-only case of Ladjel Thm 4, sigma = 0).
Generic randomizers: the binomial sum runs over a window of m' fixed at compile time (mean +- ``tail_sd``
standard deviations); the truncated binomial mass is bounded by a Chernoff bound and, since every term is at
most max(L_max, 0) (sum L / k <= L_max), added to delta times max(L_max, 0).  delta is capped at 1.

Randomized response / the target randomizer have their own engine (:func:`rr_delta`, :func:`rr_epsilon`,
:func:`rr_delta_traced`), which ``amplify_jax.traffic`` uses too.  g(K) = E[sum_{i<=K} L_i]_+ / K is
non-increasing in K, so m' runs over bins (one value each while the window covers mean +- tail_sd sd; several
beyond, each bin's mass times g at its lowest K: an upper bound), the mass below the window is charged
E[L_+] >= g and the mass above g at the last bin (Chernoff).  Window sizes are planned per point in Python,
points sharing a (power-of-2) bin count are run together, and the inner loop over M (below) runs for the
largest need of its chunk -- a traced trip count, so few shapes are compiled.

E[sum_{i<=k} L_i]_+ is bounded by
- ``"hoeffding"``: b^2/(4a) exp(-2 k a^2 / b^2), a = -E[L] = e^eps - 1, b = L_max - L_min (Ladjel Lemma 3;
  ERRATA: Thm 4/Thm 5 print a = 1 - e^eps, which makes b^2/(4a) negative; Hoeffding needs a = e^eps - 1 > 0);
- ``"bennett"``: (b_+ / ln(1 + beta)) exp(-(k c / b_+^2) phi(beta)), beta = a b_+ / c, phi(u) = (1+u) ln(1+u) - u,
  c >= E[L^2], b_+ = L_max: the CORRECTED form (ERRATA).  Ladjel Lemma 3 prints
  b_+ / (a k ln(1 + beta)) exp(...), which copies a misprint of Balle et al. that its authors later fixed;
  re-derived: E[S]_+ = int_0^inf P[S >= t] dt, P[S >= t] <= exp(-(k c/b_+^2) phi(beta + b_+ t/(k c))) (Bennett
  with the non-central second moment), and phi(beta + u) >= phi(beta) + ln(1 + beta) u (convexity);
  for randomized response both are also capped by E[L_+] = max(b_+, 0) / T per term;
- ``"exact"`` (randomized response / target randomizer only): sum L over k terms depends only on the counts
  (N1, N2) ~ Multinomial(k; 1/T, 1/T) of the blanket messages that land on the two targets t, t' (ERRATA:
  sum L = k sigma (1 - e^eps) + (1 - sigma) T (N1 - e^eps N2)).  With M = N1 + N2 ~ Bin(k, 2/T) and
  N2 | M ~ Bin(M, 1/2), sum L = C_M - A N2 (C_M = (1 - sigma) T M - k sigma (e^eps - 1),
  A = (1 - sigma) T (1 + e^eps)) and E[(C_M - A N2)_+ | M] = C_M F_M(u) - A (M/2) F_{M-1}(u - 1), u the
  largest integer with C_M - A u > 0, F the Bin(., 1/2) CDF from a SciPy table (both terms are lower tails:
  no catastrophic cancellation; 1e-12 of them is added for round-off).  M is streamed from the first value
  with C_M > 0 (below, the term is 0) over a window of mean +- tail_sd sd, the Bin(k, 2/T) weights by the
  exact ratio recurrence; outside, E[. | M] <= (1 - sigma) T M (Chernoff) and a conditional Hoeffding bound
  above.  Every truncation is bounded (O(k^0.5) work per k, O((n sigma)^0.5 k^0.5) per point);
- ``"monte_carlo"`` (randomized response / target randomizer only): Ladjel Algorithm 2, sampled jointly with
  the binomial weights: draw M' ~ Bin(n-1, gamma), K = M' + 1 + d, M = N1 + N2 ~ Bin(K, 2/T) (exact
  inverse-CDF draws from tables, 32-bit uniforms, the resulting bias bounded and added), and take
  Y = E[(S_K)_+ | K, M] / K in closed form (as above: the last draw, N2 | M, integrated out -- a
  Rao-Blackwellisation, unbiased with lower variance); Y in [0, B], B = max(L_max, 0), and draws outside the
  tables count as B.  Returns the mean and a one-sided upper confidence bound at level ``confidence``
  (Maurer 2003 for non-negative variables with E[Y^2] <= B mu: mean + s + sqrt(2 mean s + s^2),
  s = B ln(1/alpha)/R), monotone in eps for fixed draws.  (Drawing the counts is exactly equivalent to
  drawing L_1..L_k one by one, at O(1) instead of O(k) per sample.)

Randomizers (the numbers are the gamma, L bounds and second-moment bound c at a given eps):
- ``generic_randomizer(eps0)``: any eps0-LDP randomizer, gamma = e^-eps0 (Balle et al. 2019), bounds that
  hold whatever its true total-variation similarity: e^-eps0 - e^(eps+eps0) <= L <= e^eps0 - e^(eps-eps0),
  E[L^2] <= e^eps0 (1 + e^2eps) - 2 e^(eps - 3 eps0) (Balle et al.'s generic lemma, the values of their
  notebook).  Ladjel Lemma 4 states the same bounds multiplied by gamma: valid when gamma is the randomizer's
  true total-variation similarity, not when gamma is only the lower bound e^-eps0; we keep the form that
  is valid with gamma = e^-eps0.
- ``laplace_randomizer(eps0)``: the Laplace mechanism with scale 1/eps0 on inputs in [0, 1]:
  gamma = e^(-eps0/2), gamma (1 - e^(eps+eps0)) <= L <= gamma (e^eps0 - e^eps), E[L^2] exact at the
  extreme pair (x, x') = (0, 1) (checked against numerical integration over other pairs in the tests).
- ``randomized_response(eps0, k=...)``: k-ary randomized response, gamma = k / (e^eps0 + k - 1); it is the
  target randomizer below with T = k, sigma = gamma.
- ``target_randomizer(targets=T, sampling=sigma)``: Ladjel's local randomizer R_sigma: keep the true target
  with probability 1 - sigma, otherwise send to a target drawn uniformly among ALL T targets (the convention
  of Section III and App. E-C; Theorem 3 uses T - 1 other targets, R_lie = sigma / (T - 1), see ERRATA --
  that theorem lives in ``amplify_jax.traffic``).  gamma = sigma, omega uniform over T,
  L = sigma (1 - e^eps) + (1 - sigma) T (1[W = t] - e^eps 1[W = t']),
  -(1-sigma) T e^eps + sigma (1 - e^eps) <= L <= (1-sigma) T + sigma (1 - e^eps) (ERRATA: Lemma 5 prints the
  upper end with the sign of sigma (1 - e^eps) flipped), E[L^2] = sigma (2 - sigma)(1 - e^eps)^2
  + (1 - sigma)^2 T (1 + e^2eps) (Lemma 5), range b = (1 - sigma) T (1 + e^eps) (ERRATA: Thm 4 adds -2 sigma
  (1 - e^eps)).
"""

from __future__ import annotations

import functools
import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validate
from ..calibrate import INFEASIBLE, NOT_MONOTONE, invert_monotone_kernel
from ..numerics import float64_jit, log_binom_pmf, x64_scope
from . import _binomial as B

__all__ = [
    "BlanketRandomizer",
    "BlanketProperties",
    "BlanketDelta",
    "BlanketEpsilon",
    "generic_randomizer",
    "laplace_randomizer",
    "randomized_response",
    "target_randomizer",
    "blanket_properties",
    "blanket_delta",
    "blanket_epsilon",
    "BLANKET_METHODS",
]

BLANKET_METHODS = ("hoeffding", "bennett", "exact", "monte_carlo")
_U = 2.220446049250313e-16
_KINDS = ("generic", "laplace", "rr")

#: default half-width, in standard deviations, of every binomial window (the truncated mass, bounded by
#: Chernoff at about exp(-tail_sd^2 / 2), is added to delta).
DEFAULT_TAIL_SD = 9.0


class BlanketRandomizer(NamedTuple):
    """A local randomizer described for the privacy blanket.

    kind: "generic" | "laplace" | "rr" (k-ary randomized response and Ladjel's target randomizer);
    eps0: its local guarantee (inf for the target randomizer with sigma = 0);
    k: number of outputs (T targets) for "rr", 1 otherwise; sigma: the blanket mass gamma for "rr".
    Numeric fields are float64 arrays and broadcast with the other parameters.
    """

    kind: str
    eps0: np.ndarray
    k: np.ndarray
    sigma: np.ndarray


class BlanketProperties(NamedTuple):
    """gamma, and the bounds on the privacy amplification variable L at a given eps."""

    gamma: jax.Array
    mean: jax.Array  #: E[L] = 1 - e^eps
    l_max: jax.Array
    l_min: jax.Array
    l_range: jax.Array  #: l_max - l_min (Hoeffding's b)
    second_moment: jax.Array  #: c >= E[L^2] (Bennett)


class BlanketDelta(NamedTuple):
    """delta: the value to report (a bound; for Monte Carlo the one-sided upper confidence bound).
    estimate: the same bound, or the Monte Carlo point estimate (which can under-state: do not report it)."""

    delta: jax.Array
    estimate: jax.Array


class BlanketEpsilon(NamedTuple):
    """epsilon: the smallest eps found with delta(eps) <= target (the feasible endpoint, re-checked);
    fallback: True where no eps below the local guarantee reaches the target -- epsilon is then the local
    guarantee eps0 (inf for the target randomizer with sigma = 0);
    delta: delta(epsilon) re-computed (for Monte Carlo: the upper confidence bound from an independent key).
    """

    epsilon: jax.Array
    fallback: jax.Array
    delta: jax.Array


# ---------------------------------------------------------------------------------------------------------
# Randomizers


def generic_randomizer(eps0) -> BlanketRandomizer:
    """Any eps0-LDP local randomizer (Balle et al. 2019 generic bounds, gamma = e^-eps0)."""
    eps0 = _validate.nonnegative("eps0", eps0)
    return BlanketRandomizer("generic", eps0, np.ones_like(eps0), np.exp(-eps0))


def laplace_randomizer(eps0) -> BlanketRandomizer:
    """The Laplace mechanism x + Lap(1/eps0) on inputs x in [0, 1] (Balle et al. 2019), gamma = e^(-eps0/2)."""
    eps0 = _validate.positive("eps0", eps0)
    return BlanketRandomizer("laplace", eps0, np.ones_like(eps0), np.exp(-eps0 / 2.0))


def randomized_response(eps0, *, k) -> BlanketRandomizer:
    """k-ary randomized response with local guarantee eps0: gamma = k / (e^eps0 + k - 1)."""
    eps0 = _validate.nonnegative("eps0", eps0)
    k = np.asarray(_validate.integer("k", k, minimum=2), dtype=np.float64)
    _validate.broadcastable(eps0=eps0, k=k)
    gamma = k / (np.exp(eps0) + k - 1.0)
    return BlanketRandomizer("rr", eps0 + 0.0 * k, k + 0.0 * eps0, gamma)


def target_randomizer(*, targets, sampling) -> BlanketRandomizer:
    """Ladjel et al.'s R_sigma over T targets (uniform over all T when sampling; App. E-C convention).

    Its local guarantee is eps0 = ln(1 + (1 - sigma) T / sigma) (inf at sigma = 0: no local privacy).
    """
    T = np.asarray(_validate.integer("targets", targets, minimum=2), dtype=np.float64)
    sigma = _validate.probability("sampling", sampling)
    _validate.broadcastable(targets=T, sampling=sigma)
    with np.errstate(divide="ignore"):
        eps0 = np.where(sigma > 0, np.log1p((1.0 - sigma) * T / np.where(sigma > 0, sigma, 1.0)), np.inf)
    return BlanketRandomizer("rr", eps0 + 0.0 * T, T + 0.0 * sigma, sigma + 0.0 * T)


def _check_randomizer(randomizer):
    if not isinstance(randomizer, BlanketRandomizer):
        raise ValueError(
            f"Expected randomizer to be a BlanketRandomizer (generic_randomizer, laplace_randomizer, "
            f"randomized_response, target_randomizer), got randomizer={randomizer!r}."
        )
    _validate.one_of("randomizer.kind", randomizer.kind, _KINDS)
    return randomizer


# ---------------------------------------------------------------------------------------------------------
# Properties of L


def _props(kind, eps, eps0, k, sigma):
    """(gamma, l_max, l_min, c) at eps; see the module docstring for each randomizer's source."""
    ee = jnp.exp(eps)
    if kind == "generic":
        gamma = jnp.exp(-eps0)
        l_max = jnp.exp(eps0) - jnp.exp(eps - eps0)
        l_min = jnp.exp(-eps0) - jnp.exp(eps + eps0)
        c = jnp.exp(eps0) * (1.0 + ee * ee) - 2.0 * jnp.exp(eps - 3.0 * eps0)
    elif kind == "laplace":
        gamma = jnp.exp(-eps0 / 2.0)
        l_max = gamma * (jnp.exp(eps0) - ee)
        l_min = gamma * (1.0 - ee * jnp.exp(eps0))
        c = _laplace_second_moment(eps, eps0)
    else:
        gamma = sigma
        l_max = (1.0 - sigma) * k + sigma * (1.0 - ee)
        l_min = -(1.0 - sigma) * k * ee + sigma * (1.0 - ee)
        c = sigma * (2.0 - sigma) * (1.0 - ee) ** 2 + (1.0 - sigma) ** 2 * k * (1.0 + ee * ee)
    return gamma, l_max, l_min, c


def _expm1_over(x):
    """(e^x - 1) / x, with the limit 1 at 0."""
    xs = jnp.where(x == 0, 1.0, x)
    return jnp.where(x == 0, 1.0, jnp.expm1(xs) / xs)


def _laplace_second_moment(eps, eps0):
    """E_omega[L^2] for Laplace(1/eps0) on [0, 1], pair (x, x') = (0, 1), blanket omega = inf_x mu_x / gamma.

    omega puts mass gamma/2 on y < 0 (L = gamma (e^eps0 - e^eps)) and on y > 1 (L = gamma (1 - e^(eps+eps0)));
    on [0, 1/2] and [1/2, 1] L = gamma (e^(eps0 u) - e^eps), resp. gamma (1 - e^eps e^(eps0 v)), u, v in [0, 1],
    which integrate in closed form (terms (e^(a eps0) - 1) / (a eps0) for a = 3/2, 1/2, -1/2).
    """
    g = jnp.exp(-eps0 / 2.0)
    ee = jnp.exp(eps)
    A = jnp.exp(0.0) * _expm1_over(1.5 * eps0)  # int_0^1 e^(1.5 eps0 u) du
    Bq = _expm1_over(0.5 * eps0)
    C = jnp.exp(-0.5 * eps0) * _expm1_over(0.5 * eps0)  # int_0^1 e^(-0.5 eps0 u) du
    i1 = g * (A - 2.0 * ee * Bq + ee * ee * C)
    i2 = g * (C - 2.0 * ee * Bq + ee * ee * A)
    atoms = 0.5 * g ** 3 * ((jnp.exp(eps0) - ee) ** 2 + (1.0 - ee * jnp.exp(eps0)) ** 2)
    return atoms + g * (eps0 / 4.0) * (i1 + i2)


@float64_jit(static_argnames=("kind",))
def _props_kernel(kind, eps, eps0, k, sigma):
    gamma, l_max, l_min, c = _props(kind, eps, eps0, k, sigma)
    return BlanketProperties(gamma + 0.0 * eps, 1.0 - jnp.exp(eps) + 0.0 * gamma, l_max, l_min, l_max - l_min, c)


def blanket_properties(eps, *, randomizer) -> BlanketProperties:
    """gamma and the bounds on L (max, min, range, second moment) of a randomizer at eps (broadcasts)."""
    r = _check_randomizer(randomizer)
    eps = _validate.nonnegative("eps", eps)
    _validate.broadcastable(eps=eps, eps0=r.eps0, k=r.k, sigma=r.sigma)
    return _props_kernel(r.kind, eps, r.eps0, r.k, r.sigma)


# ---------------------------------------------------------------------------------------------------------
# The Lemma 2 sum with Hoeffding / Bennett (vectorised, window axis last)


def _m_window(n, gamma, tail_sd, Wm):
    """Window of M' ~ Bin(n-1, gamma): start, points, log-weights, log of the Chernoff-bounded outside mass."""
    N = n - 1.0
    sd = jnp.sqrt(N * gamma * (1.0 - gamma))
    start = jnp.floor(N * gamma - tail_sd * sd) - 1.0
    start = jnp.clip(start, 0.0, jnp.maximum(N - (Wm - 1), 0.0))
    idx = jnp.arange(Wm, dtype=jnp.float64)
    mp = start[..., None] + idx
    lw = B.log_binom_pmf_window(start, N, gamma, Wm)
    lo_tail = B.log_tail_lower(start - 1.0, N, gamma)
    hi_tail = B.log_tail_upper(start + Wm, N, gamma)
    out_mass = jnp.minimum(jnp.exp(lo_tail) + jnp.exp(hi_tail), 1.0)
    return mp, lw, out_mass


def _log_concentration(method, k, eps, l_max, l_min, c):
    """log of the Hoeffding / Bennett bound on E[sum_{i<=k} L_i]_+ (Ladjel Lemma 3, Bennett corrected)."""
    a = jnp.expm1(eps)
    if method == "hoeffding":
        b = l_max - l_min
        return 2.0 * jnp.log(b) - jnp.log(4.0 * a) - 2.0 * k * (a / b) ** 2
    bp = jnp.where(l_max > 0, l_max, 1.0)
    beta = a * bp / c
    phi = B.bd0(1.0 + beta, 1.0)  # (1 + beta) ln(1 + beta) - beta, without cancellation, >= 0
    return jnp.log(bp) - jnp.log(jnp.log1p(beta)) - k * (c / (bp * bp)) * phi


def _delta_concentration(method, kind, eps, n, d, eps0, k, sigma, *, Wm, tail_sd):
    gamma, l_max, l_min, c = _props(kind, eps, eps0, k, sigma)
    mp, lw, out_mass = _m_window(n, gamma, tail_sd, Wm)
    K = mp + 1.0 + d[..., None]
    le = _log_concentration(method, K, eps[..., None], l_max[..., None], l_min[..., None], c[..., None])
    main = jnp.sum(jnp.exp(lw + le - jnp.log(K)), axis=-1)
    # Outside the window every term is <= E_(1+d) / (1+d) (decreasing in k) and <= max(L_max, 0).
    k1 = 1.0 + d
    first = jnp.exp(_log_concentration(method, k1, eps, l_max, l_min, c) - jnp.log(k1))
    tail = out_mass * jnp.minimum(first, jnp.maximum(l_max, 0.0))
    delta = main + tail
    delta = jnp.where(l_max <= 0, 0.0, delta)
    delta = jnp.where(jnp.isnan(delta), 1.0, delta)
    return jnp.minimum(delta, 1.0)



# ---------------------------------------------------------------------------------------------------------
# Exact evaluation for randomized response / the target randomizer


_EPS_CLIP = 300.0  # delta is non-increasing in eps: evaluating at min(eps, 300) is an upper bound, e^eps finite
_REL_MARGIN = 1e-10  # relative allowance for the round-off of the recurrences and sums (each < ~1e-12)
_CANCEL_MARGIN = 1e-12  # relative allowance for the two-term closed form of E[(C - A N2)_+ | M]


@functools.lru_cache(maxsize=8)
def _half_cdf_np(r0: int, rows: int, cols: int) -> np.ndarray:
    """P(Bin(M, 1/2) <= u) for M in [r0, r0 + rows), u in [0, cols) (1 for u >= M), from SciPy's binomial
    CDF (the regularized incomplete beta, accurate to ~1e-15 relative in the tails)."""
    from scipy.stats import binom

    M = np.arange(r0, r0 + rows, dtype=np.float64)[:, None]
    u = np.arange(cols, dtype=np.float64)[None, :]
    with np.errstate(all="ignore"):
        t = binom.cdf(u, M, 0.5)
    t = np.where(u >= M, 1.0, t)
    t.setflags(write=False)
    return t


def _half_cdf_lookup(F, r0, u, M):
    """P(Bin(M, 1/2) <= u) from the table F (rows M = r0.., columns u = 0..); 0 for u < 0, 1 for u >= M.
    Callers keep r0 <= M < r0 + rows and u < M <= cols - 1 wherever the value is used."""
    rows, cols = F.shape
    mi = jnp.clip(M - r0, 0, rows - 1).astype(jnp.int32)
    ui = jnp.clip(u, 0, cols - 1).astype(jnp.int32)
    v = jnp.take(F.reshape(-1), mi * cols + ui, mode="clip")
    return jnp.where(u < 0, 0.0, jnp.where(u >= M, 1.0, v))


def _pmf_run(first_log, n, p, start, width):
    """Bin(n, p) pmf at start, start+1, ..., start+width-1 (trailing axis) from the log-pmf at ``start``
    (Loader, numerics.log_binom_pmf) times the cumulative product of the exact ratios
    b(k+1)/b(k) = (n-k)/(k+1) * p/(1-p): one division per point, relative error <= width ulps.
    p = 1 (point mass at n) is handled by the caller."""
    k = start[..., None] + jnp.arange(width, dtype=jnp.float64)
    odds = p / jnp.where(p < 1, 1.0 - p, 1.0)
    ratio = jnp.maximum(n[..., None] - k[..., :-1], 0.0) / (k[..., :-1] + 1.0) * odds[..., None]
    steps = jnp.concatenate([jnp.exp(first_log)[..., None], ratio], axis=-1)
    return k, jnp.cumprod(steps, axis=-1)


def _binom_upper_tail(a, N, p):
    """Upper bound on P(Bin(N, p) >= a): 1 at or below the mean, Chernoff exp(-N KL(a/N || p)) above it
    (Loader's bd0 form, no cancellation), 0 above N."""
    out = jnp.exp(B.log_tail_upper(jnp.maximum(a, 0.0), N, p))
    return jnp.where(a > N, 0.0, jnp.where(a <= 0, 1.0, jnp.minimum(out, 1.0)))


def _binom_lower_tail(a, N, p):
    """Upper bound on P(Bin(N, p) <= a) (Chernoff below the mean), 0 for a < 0."""
    return jnp.where(a < 0, 0.0, _binom_upper_tail(N - a, N, 1.0 - p))


def _g_exact(K, eps, T, sigma, F, r0, nsteps, *, tail_sd):
    """g(K) = E[sum_{i<=K} L_i]_+ / K for the target randomizer (K: any shape; the M window is a new
    trailing axis of Wj points), and whether the window covered M's mean +- tail_sd sd inside the table.

    sum L = K sigma (1 - e^eps) + (1 - sigma) T (N1 - e^eps N2), (N1, N2) ~ Multinomial(K; 1/T, 1/T) (ERRATA).
    With M = N1 + N2 ~ Bin(K, 2/T) and N2 | M ~ Bin(M, 1/2), sum L = C_M - A N2, C_M = (1 - sigma) T M
    - K sigma (e^eps - 1), A = (1 - sigma) T (1 + e^eps); with u the largest integer with C_M - A u > 0,
    E[(C_M - A N2)_+ | M] = C_M P(Bin(M, 1/2) <= u) - A (M/2) P(Bin(M - 1, 1/2) <= u - 1), the two CDFs
    read from a table.  M runs over Wj values from ~tail_sd sd below its mean; outside,
    E[. | M] <= (1 - sigma) T M and E[M; M outside] = K p P(Bin(K - 1, p) outside) is bounded by Chernoff (above
    the window also by a conditional Hoeffding bound, whichever is smaller).  Where the window would leave
    the table, K is capped (g is non-increasing in K, Ladjel Lemma 2's proof; see _delta_exact_point) and the
    corrected Bennett bound at the true K is also applied.  g is capped by E[L_+].
    """
    p = 2.0 / T
    q = 1.0 - p
    rows, cols = F.shape
    ee = jnp.exp(eps)
    em1 = jnp.expm1(eps)
    ts = (1.0 - sigma) * T
    A = ts * (1.0 + ee)
    b_plus = ts - sigma * em1
    pos_mean = jnp.maximum(b_plus, 0.0) / T
    Wj = nsteps
    # Cap K where the mean + tail_sd sd of M would leave the table (M <= r0 + rows - 1); below the cap the
    # window is clipped to the table if needed and what it misses is charged by the tail bounds.
    kcap = jnp.floor((r0 + rows - 3.0 - tail_sd * jnp.sqrt((r0 + rows) * q)) / p)
    k = jnp.maximum(jnp.minimum(K, kcap), 1.0)
    sd = jnp.sqrt(k * p * q)
    half = jnp.minimum(jnp.ceil(tail_sd * sd) + 1.0, Wj / 2.0)
    top = jnp.maximum(jnp.minimum(k, r0 + rows - 1.0) - Wj + 1.0, r0)
    # C_M <= 0 (so E[(C_M - A N2)_+ | M] = 0) for M <= K sigma (e^eps - 1) / ((1 - sigma) T): start above.
    mstar = jnp.floor(k * sigma * em1 / jnp.where(ts > 0, ts, 1.0))
    m0 = jnp.clip(jnp.maximum(jnp.floor(k * p - half), mstar), r0, top)
    covered = (2.0 * jnp.ceil(tail_sd * sd) + 3.0 <= Wj) & (K <= kcap) & (m0 <= jnp.maximum(k * p - tail_sd * sd, 0.0))
    # M runs over m0 + i, i < Wj, streamed (lax.scan): the Bin(k, p) weight by the exact ratio recurrence
    # w(M + 1) = w(M) (k - M) / (M + 1) * p / q (relative error <= Wj ulps), the CDFs from the table.
    w0 = jnp.exp(log_binom_pmf(m0, k, p))
    odds = p / jnp.where(q > 0, q, 1.0)
    ks = k * sigma * em1

    def value(M, x):  # C_M - A x without the (1 + e^eps) x - e^eps x cancellation
        return ts * ((M - x) - ee * x) - ks

    safeA = jnp.where(A > 0, A, 1.0)

    def step(carry, i):
        w, acc = carry
        M = m0 + i
        wm = jnp.where(p >= 1.0, jnp.where(M == k, 1.0, 0.0), jnp.where(M <= k, w, 0.0))
        C = ts * M - ks
        u = jnp.ceil(C / safeA) - 1.0
        u = jnp.where(value(M, u + 1.0) > 0, u + 1.0, u)
        u = jnp.where(value(M, u) > 0, u, u - 1.0)
        u = jnp.minimum(u, M)
        c1 = _half_cdf_lookup(F, r0, u, M)
        c2 = _half_cdf_lookup(F, r0, u - 1.0, M - 1.0)
        t1 = C * c1
        t2 = A * (M / 2.0) * c2
        h = jnp.maximum(t1 - t2, 0.0) + _CANCEL_MARGIN * (jnp.abs(t1) + t2)
        # rows M and M - 1 must be in the table; elsewhere (only where a window is wider than the table)
        # the bound (C_M - A N2)_+ <= C_M is used
        h = jnp.where((M - 1.0 >= r0) | (M <= 0.0), h, C)
        h = jnp.where(M <= r0 + rows - 1.0, h, C)
        h = jnp.where((A > 0) & (C > 0) & (u >= 0), h, 0.0)
        w_next = w * jnp.maximum(k - M, 0.0) / (M + 1.0) * odds
        return (w_next, acc + wm * h), None

    def loop(i, carry):
        return step(carry, i.astype(jnp.float64))[0]

    _, body = jax.lax.fori_loop(0, nsteps.astype(jnp.int32), loop, (w0, jnp.zeros_like(k)))
    m_hi = m0 + Wj - 1.0
    # Outside the window: E[. | M] <= (1 - sigma) T M and E[M; M in a set] = k p P(Bin(k - 1, p) in the set),
    # bounded by Chernoff (one stacked call: compiled once).
    tails = _binom_upper_tail(jnp.stack([k - m0 + 1.0, m_hi, m_hi + 1.0]), jnp.stack([k - 1.0, k - 1.0, k]),
                              jnp.stack([q + 0.0 * k, p + 0.0 * k, p + 0.0 * k]))
    kp_ts = ts * k * p
    low = kp_ts * jnp.where((m0 - 2.0 < 0) | (ts * (m0 - 1.0) <= k * sigma * em1), 0.0, tails[0])
    high = kp_ts * tails[1]
    # Sharper above the window: C_M / A <= M / (1 + e^eps), so Hoeffding on N2 ~ Bin(M, 1/2) with
    # tau = (e^eps - 1) / (2 (1 + e^eps)) gives E[(C_M - A N2)_+ | M] <= A exp(-2 M tau^2) / (4 tau), decreasing.
    tau = em1 / (2.0 * (1.0 + ee))
    st = jnp.where(tau > 0, tau, 1.0)
    cond = jnp.where(tau > 0, A * jnp.exp(-2.0 * (m_hi + 1.0) * st * st) / (4.0 * st), jnp.inf)
    high = jnp.minimum(high, jnp.where(tails[2] > 0, cond * tails[2], 0.0))
    g = ((body + low + high) * (1.0 + _REL_MARGIN)) / k
    g = jnp.minimum(g, pos_mean)
    # Where K was capped, g(kcap) >= g(K); the corrected Bennett bound at the true K is an upper bound too.
    c2nd = sigma * (2.0 - sigma) * em1 * em1 + ts * (1.0 - sigma) * (1.0 + ee * ee)
    ok = (b_plus > 0) & (em1 > 0)
    beta = jnp.where(ok, em1 * b_plus / c2nd, 1.0)
    bp = jnp.where(ok, b_plus, 1.0)
    phi = jnp.maximum((1.0 + beta) * jnp.log1p(beta) - beta, 0.0)
    ben = jnp.exp(jnp.log(bp) - jnp.log(jnp.log1p(beta)) - K * (c2nd / (bp * bp)) * phi - jnp.log(K))
    g = jnp.where((K > kcap) & ok, jnp.minimum(g, ben), g)
    return g, covered


def _g_concentration(method, K, eps, T, sigma):
    """Upper bound on g(K) = E[sum_{i<=K} L_i]_+ / K for the target randomizer (Ladjel Lemma 3 with Lemma 5),
    capped by E[L_+] = max(b_+, 0) / T (subadditivity of the positive part); non-increasing in K.

    Hoeffding: (b^2 / (4 a K)) exp(-2 K a^2 / b^2), a = e^eps - 1, b = (1 - sigma) T (1 + e^eps) (ERRATA: Thm 4's
    a and b); Bennett, the corrected form (ERRATA): (b_+ / (K ln(1 + beta))) exp(-(K c / b_+^2) phi(beta)),
    beta = a b_+ / c, c = E[L^2] (Lemma 5), phi(u) = (1 + u) ln(1 + u) - u clamped at 0 against round-off.
    """
    ee = jnp.exp(eps)
    a = jnp.expm1(eps)
    ts = (1.0 - sigma) * T
    b_plus = ts - sigma * a
    pos_mean = jnp.maximum(b_plus, 0.0) / T
    if method == "hoeffding":
        b = ts * (1.0 + ee)
        ok = (a > 0) & (b > 0)
        sa, sb = jnp.where(ok, a, 1.0), jnp.where(ok, b, 1.0)
        log_g = 2.0 * jnp.log(sb) - jnp.log(4.0 * sa * K) - 2.0 * K * (sa / sb) ** 2
        g = jnp.where(ok, jnp.exp(log_g), jnp.where(b <= 0, 0.0, jnp.inf))
    else:
        c = sigma * (2.0 - sigma) * a * a + ts * (1.0 - sigma) * (1.0 + ee * ee)
        ok = (b_plus > 0) & (a > 0) & (c > 0)
        sbp, sc, sa = jnp.where(ok, b_plus, 1.0), jnp.where(ok, c, 1.0), jnp.where(ok, a, 1.0)
        beta = sa * sbp / sc
        l1p = jnp.log1p(beta)
        phi = jnp.maximum((1.0 + beta) * l1p - beta, 0.0)
        log_g = jnp.log(sbp) - jnp.log(l1p) - (K * sc / (sbp * sbp)) * phi - jnp.log(K)
        g = jnp.where(ok, jnp.exp(log_g), jnp.where(b_plus <= 0, 0.0, jnp.inf))
    return jnp.minimum(g * (1.0 + _REL_MARGIN), pos_mean)


def _delta_rr_point(method, eps, n, d, T, sigma, F, r0, nsteps, *, Wm, S, tail_sd):
    """Lemma 2 for the target randomizer (k-ary randomized response) at one point; returns (delta, exact).

    delta <= sum_{m'} Bin(m'; n-1, sigma) g(m' + 1 + d), g(K) = E[sum_{i<=K} L_i]_+ / K, which is
    non-increasing in K (the average of K + 1 exchangeable terms is the mean of its leave-one-out averages,
    and (.)_+ is convex).  m' runs over Wm bins of ``stride`` consecutive values (stride 1 -- exact -- while
    Wm points cover mean +- tail_sd sd; up to S otherwise), each bin's mass times g at its lowest m'; the
    mass above the window times g at the last bin, the mass below it times E[L_+] >= g, both bounded by
    Chernoff.  ``exact``: stride 1 and every g window covered its mean +- tail_sd sd.
    g is :func:`_g_exact` (method "exact") or the Hoeffding / Bennett bound of :func:`_g_concentration`; both
    are non-increasing in K, so the bins bound soundly either way.
    """
    eps = jnp.minimum(eps, _EPS_CLIP)
    N = n - 1.0
    sd = jnp.sqrt(N * sigma * (1.0 - sigma))
    need = 2.0 * jnp.ceil(tail_sd * sd) + 3.0
    stride = jnp.clip(jnp.ceil(need / Wm), 1.0, float(S))
    span = stride * Wm
    half = jnp.minimum(jnp.ceil(tail_sd * sd) + 1.0, span / 2.0)
    j0 = jnp.clip(jnp.floor(N * sigma - half), 0.0, jnp.maximum(N - span + 1.0, 0.0))
    first = log_binom_pmf(j0, N, sigma)
    jf, wf = _pmf_run(first, N, sigma, j0, Wm * S)
    wf = jnp.where(sigma >= 1.0, (jf == N).astype(jnp.float64), wf)
    idx = jnp.arange(Wm * S, dtype=jnp.float64)
    wf = jnp.where((jf <= N) & (idx < span), wf, 0.0)
    bins = jnp.arange(Wm, dtype=jnp.float64)
    if S == 1:
        W = wf
    else:
        cum = jnp.cumsum(wf)
        last = ((bins + 1.0) * stride - 1.0).astype(jnp.int32)
        hi = cum[last]
        W = jnp.maximum(hi - jnp.concatenate([jnp.zeros((1,)), hi[:-1]]), 0.0)
    K = j0 + bins * stride + d + 1.0
    if method == "exact":
        g, covered = _g_exact(K, eps, T, sigma, F, r0, nsteps, tail_sd=tail_sd)
    else:
        g, covered = _g_concentration(method, K, eps, T, sigma), True
    live = W > 0
    body = jnp.sum(W * g) * (1.0 + _REL_MARGIN) + 4.0 * Wm * _U * jnp.max(g)
    ts = (1.0 - sigma) * T
    b_plus = ts - sigma * jnp.expm1(eps)
    pos_mean = jnp.maximum(b_plus, 0.0) / T
    tails = _binom_upper_tail(jnp.stack([N - j0 + 1.0, j0 + span]), N, jnp.stack([1.0 - sigma, sigma]))
    low = jnp.where(j0 - 1.0 < 0, 0.0, tails[0]) * pos_mean
    high = tails[1] * g[-1]
    delta = jnp.minimum(body + low + high, 1.0)
    delta = jnp.where((b_plus <= 0) | (ts <= 0), 0.0, delta)
    exact = (stride == 1.0) & jnp.all(covered | ~live)
    return delta, exact


# ---------------------------------------------------------------------------------------------------------
# Plans: window sizes per point, points grouped by window (few compiled shapes, little padding)

WM_MAX = 512  #: most m' bins of the Lemma 2 sum per point (beyond: bins of several m' values, an upper bound)
WJ_MAX = 4096  #: most values of M = N1 + N2 per g(K) (beyond: tails bounded by Chernoff; sound)
S_MAX = 64  #: most m' values per bin
_CHUNK_LANES = 1 << 13  #: points x bins per compiled call


def _pow2(w, minimum=8):
    w = max(int(w), minimum)
    return 1 << (w - 1).bit_length()


class _Plan(NamedTuple):
    chunks: tuple  #: ((Wm, S), index array, inner steps) per chunk of points
    r0: int  #: first row (M value) of the CDF table
    rows: int
    cols: int


def _plan_rr(n, d, T, sigma, tail_sd, eps=None) -> _Plan:
    """Window sizes for every point (flat float arrays) of the exact target-randomizer kernel.

    m' ~ Bin(n-1, sigma): Wm bins (a power of 2, static) cover mean +- tail_sd sd (up to WM_MAX; beyond,
    bins of S values).  M ~ Bin(K, 2/T), for K up to the top of that window: the inner loop runs over
    enough values to cover its mean +- tail_sd sd (a traced trip count, the largest in the chunk, so that
    points sorted by it share chunks).  The table of Bin(M, 1/2) CDFs spans the M values of every window.
    Every size is sound (truncations are bounded); a larger one is only tighter.
    """
    N = n - 1.0
    sd = np.sqrt(np.maximum(N * sigma * (1.0 - sigma), 0.0))
    wm_need = 2.0 * np.ceil(tail_sd * sd) + 3.0
    Kmin = np.maximum(np.floor(N * sigma - tail_sd * sd) - 1.0, 0.0) + d + 1.0
    Kmax = np.minimum(np.ceil(N * sigma + tail_sd * sd) + 1.0, N) + d + 1.0
    p = 2.0 / T
    sdK = np.sqrt(Kmax * p * (1.0 - p))
    wj = 2.0 * np.ceil(tail_sd * sdK) + 3.0
    if eps is not None:  # M below K sigma (e^eps - 1) / ((1 - sigma) T) contributes nothing: skipped
        ratio = sigma * np.expm1(np.minimum(eps, 300.0)) / np.maximum((1.0 - sigma) * T, 1e-300)
        wj = np.minimum(wj, np.maximum(Kmax * p + tail_sd * sdK + 3.0 - Kmax * ratio, 0.0))
        wj = np.maximum(wj, np.minimum(2.0 * np.ceil(tail_sd * np.sqrt(Kmin * p * (1.0 - p))) + 3.0,
                                       np.maximum(Kmin * p + tail_sd * sdK + 3.0 - Kmin * ratio, 0.0)))
    wj = np.clip(np.minimum(wj, Kmax + 1.0), 1.0, WJ_MAX)
    keys = {}
    for i in range(n.shape[0]):
        Wm = min(_pow2(wm_need[i]), WM_MAX)
        S = 1 if wm_need[i] <= Wm else min(_pow2(math.ceil(wm_need[i] / Wm), 1), S_MAX)
        keys.setdefault((Wm, S), []).append(i)
    chunks = []
    for key, idx in sorted(keys.items()):
        idx = np.asarray(idx, dtype=np.int64)
        idx = idx[np.argsort(wj[idx], kind="stable")]
        c = max(1, _CHUNK_LANES // key[0])
        c = int(min(c, _pow2(idx.shape[0], 1)))
        for b in range(0, idx.shape[0], c):
            sel = idx[b:b + c]
            chunks.append((key, sel, c, float(math.ceil(np.max(wj[sel]) / 8.0) * 8)))
    lo = np.maximum(np.floor(Kmin * p - tail_sd * np.sqrt(Kmin * p * (1.0 - p))) - 2.0, 0.0)
    hi = np.minimum(Kmax * p + tail_sd * sdK + 10.0, Kmax) + 2.0
    r0 = int(np.min(lo)) // 256 * 256 if lo.size else 0
    rows = _pow2(max(int(np.max(hi)) - r0 + 1, 256)) if hi.size else 256
    return _Plan(tuple(chunks), r0, rows, r0 + rows)


def _run_planned(call, plan: _Plan, arrays, outputs: int):
    """Run ``call(statics, chunk_arrays, F, r0, nsteps)`` on every chunk of the plan (padded to its fixed size
    with its first point) and scatter the ``outputs`` results back into flat numpy arrays."""
    size = arrays[0].shape[0]
    with x64_scope():
        F = jnp.asarray(_half_cdf_np(plan.r0, plan.rows, plan.cols))
        r0 = jnp.asarray(float(plan.r0))
        pending = []
        for i, (statics, sel, c, nsteps) in enumerate(plan.chunks):
            pad = np.concatenate([sel, np.full(c - sel.shape[0], sel[0])])
            res = call(statics, [a[pad] for a in arrays], F, r0, jnp.asarray(nsteps) if nsteps >= 0 else i)
            pending.append((sel, res))
        outs = [np.empty(size, dtype=np.float64) for _ in range(outputs)]
        for sel, res in pending:
            for o, r in zip(outs, res):
                o[sel] = np.asarray(r)[: sel.shape[0]]
    return outs


@float64_jit(static_argnames=("method", "Wm", "S", "tail_sd"))
def _rr_chunk(method, eps, n, d, T, sigma, F, r0, nsteps, *, Wm, S, tail_sd):
    f = partial(_delta_rr_point, method, Wm=Wm, S=S, tail_sd=tail_sd)
    return jax.vmap(f, in_axes=(0, 0, 0, 0, 0, None, None, None))(eps, n, d, T, sigma, F, r0, nsteps)


def _rr_planned(method, eps, n, d, T, sigma, tail_sd):
    """delta (flat numpy) of Lemma 2 for the target randomizer for flat float arrays, and the ``exact`` flags
    (window coverage)."""
    plan = _plan_rr(n, d, T, sigma, tail_sd, eps)

    def call(statics, a, F, r0, nsteps):
        Wm, S = statics
        return _rr_chunk(method, *a, F, r0, nsteps, Wm=Wm, S=S, tail_sd=tail_sd)

    delta, exact = _run_planned(call, plan, [eps, n, d, T, sigma], 2)
    return delta, exact.astype(bool)


# ---------------------------------------------------------------------------------------------------------
# Monte Carlo (Ladjel Algorithm 2, sampled jointly with the binomial weights; the last draw integrated out)


def _search(cdf, u, length: int, base=0):
    """Number of entries of the non-decreasing ``cdf[base:base + length]`` (length a power of 2) that are <= u,
    by a branch-free binary search (log2(length) gathers): the inverse-CDF index of u, or ``length`` when u is
    at or beyond the last entry (the window's total mass)."""
    pos = jnp.zeros(u.shape, jnp.int32)
    step = length // 2
    while step >= 1:
        cand = pos + step
        v = jnp.take(cdf, base + cand - 1, mode="clip")
        pos = jnp.where(v <= u, cand, pos)
        step //= 2
    last = jnp.take(cdf, base + length - 1, mode="clip")
    return jnp.where(u >= last, length, pos)


class _MCDraws(NamedTuple):
    K: jax.Array  #: number of summands, per sample (points x samples)
    M: jax.Array  #: N1 + N2, per sample
    out: jax.Array  #: True where a draw left its window (the sample is then counted as its bound B)
    slack: jax.Array  #: per point: bound on |E_sampled - E_true| / B from the 32-bit uniforms and round-off


@functools.lru_cache(maxsize=32)
def _pascal_cdf_np(T: float, rows: int, cols: int) -> np.ndarray:
    """P(Bin(r, 2/T) <= x) for r < rows, x < cols, by the Pascal recurrence F_{r+1}(x) = q F_r(x) + p F_r(x-1)
    (exact up to round-off, no truncation: values at x < cols only use values at x - 1 >= -1)."""
    p = 2.0 / T
    out = np.empty((rows, cols))
    row = np.ones(cols)
    for r in range(rows):
        out[r] = row
        row = (1.0 - p) * row + p * np.concatenate([[0.0], row[:-1]])
    out.setflags(write=False)
    return out


def _mc_windows(n, d, T, sigma, *, Wm, Wj, tail_sd):
    """Per point: the m' window (start j0, CDF over Wm values) and the J0 ~ Bin(K_lo, 2/T) window (start b0,
    CDF over Wj values), K_lo = j0 + 1 + d; pmfs by the ratio recurrence from Loader's log-pmf."""
    p = 2.0 / T
    q = 1.0 - p
    N = n - 1.0
    sd = jnp.sqrt(N * sigma * (1.0 - sigma))
    half = jnp.minimum(jnp.ceil(tail_sd * sd) + 1.0, Wm / 2.0)
    j0 = jnp.clip(jnp.floor(N * sigma - half), 0.0, jnp.maximum(N - Wm + 1.0, 0.0))
    jf, wf = _pmf_run(log_binom_pmf(j0, N, sigma), N, sigma, j0, Wm)
    wf = jnp.where(sigma >= 1.0, (jf == N).astype(jnp.float64), wf)
    cdf_m = jnp.cumsum(jnp.where(jf <= N, wf, 0.0))
    K_lo = j0 + d + 1.0
    sdb = jnp.sqrt(K_lo * p * q)
    hb = jnp.minimum(jnp.ceil(tail_sd * sdb) + 1.0, Wj / 2.0)
    b0 = jnp.clip(jnp.floor(K_lo * p - hb), 0.0, jnp.maximum(K_lo - Wj + 1.0, 0.0))
    jb, wb = _pmf_run(log_binom_pmf(b0, K_lo, p), K_lo, p, b0, Wj)
    wb = jnp.where(p >= 1.0, (jb == K_lo).astype(jnp.float64), wb)
    cdf_b = jnp.cumsum(jnp.where(jb <= K_lo, wb, 0.0))
    return j0, cdf_m, K_lo, b0, cdf_b


@float64_jit(static_argnames=("Wm", "Wj", "samples", "tail_sd"))
def _mc_search(key, n, d, T, sigma, table, *, Wm, Wj, samples, tail_sd):
    """Exact draws for a chunk of points (leading axis) by inversion of tabulated CDFs; eps-free.

    m' ~ Bin(n-1, sigma) over a window of Wm values, K = m'+1+d; M | K ~ Bin(K, 2/T) = J0 + dJ with
    J0 ~ Bin(K_lo, 2/T) (K_lo the smallest K of the window; a window of Wj values) and
    dJ | K ~ Bin(K - K_lo, 2/T) from ``table`` (the chunk's common T; :func:`_pascal_cdf_np`).  Returns the
    indices (r, xb, dx) -- index == window size means "beyond the window's mass" -- and K_lo, b0 per point.
    ``key``: one PRNG key for the chunk (its bits are drawn in one block: several times faster than a key
    per point under vmap).  Uniforms have 32 bits (two per 64-bit word).  The binary searches gather from
    flat arrays (log2 of the window size gathers per draw).  A separate compiled function from
    :func:`_mc_draws_from_indices`: inside one, XLA re-fuses the searches into their consumers (3-10x slower).
    """
    c = n.shape[0]
    j0, cdf_m, K_lo, b0, cdf_b = jax.vmap(partial(_mc_windows, Wm=Wm, Wj=Wj, tail_sd=tail_sd))(n, d, T, sigma)
    words = jax.random.bits(key, (c, 2, samples), dtype=jnp.uint64)
    scale = 2.0 ** -32
    u1 = (words[:, 0] >> 32).astype(jnp.float64) * scale
    u2 = (words[:, 0] & 0xFFFFFFFF).astype(jnp.float64) * scale
    u3 = (words[:, 1] >> 32).astype(jnp.float64) * scale
    cdf_m, cdf_b, table, u1, u2, u3 = jax.lax.optimization_barrier((cdf_m.reshape(-1), cdf_b.reshape(-1),
                                                                    table.reshape(-1), u1, u2, u3))
    rows = jnp.arange(c, dtype=jnp.int32)[:, None]
    r = _search(cdf_m, u1, Wm, base=rows * Wm)
    xb = _search(cdf_b, u2, Wj, base=rows * Wj)
    dx = _search(table, u3, Wj, base=jnp.minimum(r, Wm - 1) * Wj)
    return r, xb, dx, K_lo, b0


def _mc_draws_from_indices(r, xb, dx, K_lo, b0, *, Wm, Wj):
    """(K, M) per sample and the ``out`` flags (a draw beyond its window: the sample then counts as the bound
    B, an upper bound on every truncation); ``slack``: bound on |E_sampled - E_true| / B per point from the
    32-bit uniforms (each index's probability is off by < 2^-32) and the CDFs' round-off."""
    rc = jnp.minimum(r, Wm - 1)
    K = K_lo[:, None] + rc.astype(jnp.float64)
    M = b0[:, None] + jnp.minimum(xb, Wj - 1).astype(jnp.float64) + jnp.minimum(dx, Wj - 1).astype(jnp.float64)
    out = (r >= Wm) | (xb >= Wj) | (dx >= Wj) | (M > K)
    slack = jnp.full(K_lo.shape, (Wm + 2.0 * Wj + 3.0) * 2.0 ** -32 + 8.0 * (Wm + Wj) * _U)
    return _MCDraws(K, M, out, slack)


def _h_pair(M, K, eps, T, sigma, F, r0):
    """E[(sum_{i<=K} L_i)_+ | N1 + N2 = M] for the target randomizer (the closed form of _g_exact, one pair),
    and whether M was inside the CDF table."""
    ee = jnp.exp(eps)
    em1 = jnp.expm1(eps)
    ts = (1.0 - sigma) * T
    A = ts * (1.0 + ee)
    ks = K * sigma * em1
    C = ts * M - ks
    u = jnp.ceil(C / jnp.where(A > 0, A, 1.0)) - 1.0
    value = lambda x: ts * ((M - x) - ee * x) - ks  # noqa: E731
    u = jnp.where(value(u + 1.0) > 0, u + 1.0, u)
    u = jnp.where(value(u) > 0, u, u - 1.0)
    u = jnp.minimum(u, M)
    t1 = C * _half_cdf_lookup(F, r0, u, M)
    t2 = A * (M / 2.0) * _half_cdf_lookup(F, r0, u - 1.0, M - 1.0)
    h = jnp.maximum(t1 - t2, 0.0) + _CANCEL_MARGIN * (jnp.abs(t1) + t2)
    h = jnp.where((A > 0) & (C > 0) & (u >= 0), h, 0.0)
    rows = F.shape[0]
    return h, ((M - 1.0 >= r0) | (M <= 0.0)) & (M < r0 + rows)


def _mc_from_draws(eps, T, sigma, draws: _MCDraws, F, r0, alpha):
    """Mean and one-sided upper confidence bound of the Lemma 2 sum from fixed draws (one point).

    Y = E[(sum_{i<=K} L_i)_+ | K, M] / K (Algorithm 2 with its last draw, N1 given M, integrated out in closed
    form -- a Rao-Blackwellisation: unbiased, lower variance), 0 <= Y <= B = max(L_max, 0); Y = B for
    samples out of a window.  Lower tail of a mean of [0, B] variables (Maurer 2003):
    P(mu - mean >= t) <= exp(-R t^2 / (2 E[Y^2])), E[Y^2] <= B mu, so with s = B ln(1/alpha) / R,
    mu <= mean + s + sqrt(2 mean s + s^2) with probability >= 1 - alpha; the sampling slack is added to the
    mean first.  Non-decreasing in the mean and in B, both non-increasing in eps: monotone in eps, so the
    inversion with common draws keeps the confidence.
    """
    eps = jnp.minimum(eps, _EPS_CLIP)
    ts = (1.0 - sigma) * T
    B = jnp.maximum(ts - sigma * jnp.expm1(eps), 0.0)
    h, inside = _h_pair(draws.M, draws.K, eps[:, None], T[:, None], sigma[:, None], F, r0)
    Bs = B[:, None]
    Y = jnp.where(draws.out | ~inside, Bs, jnp.minimum(h / draws.K * (1.0 + _REL_MARGIN), Bs))
    R = Y.shape[-1]
    mean = jnp.mean(Y, axis=-1)
    s = B * jnp.log(1.0 / alpha) / R
    m = mean + draws.slack * B
    ucb = m + s + jnp.sqrt(2.0 * m * s + s * s)
    ucb = jnp.where(B > 0, jnp.minimum(ucb, 1.0), 0.0)
    return jnp.where(B > 0, mean, 0.0), ucb


@float64_jit(static_argnames=("Wm", "Wj"))
def _mc_from_indices(idx, eps, T, sigma, alpha, F, r0, *, Wm, Wj):
    draws = _mc_draws_from_indices(*idx, Wm=Wm, Wj=Wj)
    return _mc_from_draws(eps, T, sigma, draws, F, r0, alpha)


def _mc_chunk(key, eps, n, d, T, sigma, alpha, table, F, r0, *, Wm, Wj, samples, tail_sd):
    idx = _mc_search(key, n, d, T, sigma, table, Wm=Wm, Wj=Wj, samples=samples, tail_sd=tail_sd)
    return _mc_from_indices(idx, eps, T, sigma, alpha, F, r0, Wm=Wm, Wj=Wj)


def _plan_mc(n, d, T, sigma, tail_sd, samples):
    """Chunks of points with the static window sizes of the Monte Carlo kernel (Wm: m' window; Wj: the J0
    window and the dJ table), and the CDF table's rows."""
    N = n - 1.0
    sd = np.sqrt(np.maximum(N * sigma * (1.0 - sigma), 0.0))
    wm = np.minimum(2.0 * np.ceil(tail_sd * sd) + 3.0, WM_MAX)
    p = 2.0 / T
    K_lo = np.maximum(np.floor(N * sigma - tail_sd * sd) - 1.0, 0.0) + d + 1.0
    wb = 2.0 * np.ceil(tail_sd * np.sqrt(K_lo * p * (1.0 - p))) + 3.0
    keys = {}
    for i in range(n.shape[0]):
        Wm = _pow2(wm[i])
        x = Wm * p[i] + tail_sd * math.sqrt(Wm * p[i] * (1.0 - p[i])) + 3.0
        keys.setdefault((Wm, _pow2(max(wb[i], x)), float(T[i])), []).append(i)
    chunks = []
    for key, idx in sorted(keys.items()):
        idx = np.asarray(idx, dtype=np.int64)
        c = max(1, (1 << 21) // (samples * 4))
        c = int(min(1 << (c.bit_length() - 1), _pow2(idx.shape[0], 1)))
        for b in range(0, idx.shape[0], c):
            chunks.append((key, idx[b:b + c], c, -1.0))
    Kmax = np.minimum(np.ceil(N * sigma + tail_sd * sd) + 1.0, N) + d + 1.0
    hi = np.minimum(Kmax * p + tail_sd * np.sqrt(Kmax * p * (1.0 - p)) + 10.0, Kmax) + 2.0
    rows = _pow2(max(int(np.max(hi)) + 1, 256)) if hi.size else 256
    return _Plan(tuple(chunks), 0, rows, rows)


def _mc_planned(key, eps, n, d, T, sigma, alpha, tail_sd, samples):
    """(ucb, mean) of the Monte Carlo method for flat float arrays; the chunk number i of the plan draws from
    fold_in(key, i)."""
    plan = _plan_mc(n, d, T, sigma, tail_sd, samples)

    def call(statics, a, F, r0, i):
        Wm, Wj, T_ = statics
        table = jnp.asarray(_pascal_cdf_np(T_, Wm, Wj))
        k = jax.random.fold_in(jnp.asarray(key), i)
        mean, ucb = _mc_chunk(k, *a, table, F, r0, Wm=Wm, Wj=Wj, samples=samples, tail_sd=tail_sd)
        return ucb, mean

    return _run_planned(call, plan, [eps, n, d, T, sigma, alpha], 2)


# ---------------------------------------------------------------------------------------------------------
# Fixed-size kernel for traced use (parameters inside another kernel, e.g. a deployment inversion)

_TRACED_WM, _TRACED_S, _TRACED_ROWS = WM_MAX, 16, 512


def rr_delta_traced(method, eps, n, d, T, sigma, tail_sd=DEFAULT_TAIL_SD):
    """Lemma 2 for the target randomizer as a pure jnp function of (broadcasting) arrays, with static windows
    (512 bins -- WM_MAX, as in the planned kernel -- of up to 16 m' values; a 512-row CDF table; the inner
    loop's length is the largest need in the batch, capped at 448): for use inside other kernels, where the
    parameters are traced (traffic's deployment inversions).  Sound for every
    input (truncations bounded, K capped where the table ends, with the Bennett bound); exact while the
    windows suffice.  ``method`` in {"hoeffding", "bennett", "exact"}."""
    eps, n, d, T, sigma = jnp.broadcast_arrays(*(jnp.asarray(x, jnp.float64) for x in (eps, n, d, T, sigma)))
    shape = eps.shape
    flat = [x.reshape(-1) for x in (eps, n, d, T, sigma)]
    F = jnp.asarray(_half_cdf_np(0, _TRACED_ROWS, _TRACED_ROWS))
    N = flat[1] - 1.0
    s = flat[4]
    Kmax = jnp.minimum(N * s + tail_sd * jnp.sqrt(N * s * (1.0 - s)) + 1.0, N) + flat[2] + 1.0
    p = 2.0 / flat[3]
    need = 2.0 * jnp.ceil(tail_sd * jnp.sqrt(Kmax * p * (1.0 - p))) + 3.0
    nsteps = jnp.clip(jnp.max(jnp.minimum(need, Kmax + 1.0)), 8.0, _TRACED_ROWS - 64.0)
    f = partial(_delta_rr_point, method, Wm=_TRACED_WM, S=_TRACED_S, tail_sd=tail_sd)
    delta, _ = jax.vmap(f, in_axes=(0, 0, 0, 0, 0, None, None, None))(*flat, F, jnp.asarray(0.0), nsteps)
    return delta.reshape(shape)


# ---------------------------------------------------------------------------------------------------------
# Kernels of the generic path (any randomizer, Hoeffding / Bennett)


@float64_jit(static_argnames=("method", "kind", "Wm", "tail_sd"))
def _conc_kernel(method, kind, eps, n, d, eps0, k, sigma, *, Wm, tail_sd):
    return _delta_concentration(method, kind, jnp.minimum(eps, _EPS_CLIP), n, d, eps0, k, sigma, Wm=Wm,
                                tail_sd=tail_sd)


def _prepare(eps_or_delta_name, value, n, dummies, randomizer, method, tail_sd):
    r = _check_randomizer(randomizer)
    _validate.one_of("method", method, BLANKET_METHODS)
    if method in ("exact", "monte_carlo") and r.kind != "rr":
        raise ValueError(
            f"Expected method in ['bennett', 'hoeffding'] for a {r.kind!r} randomizer ('exact' and "
            f"'monte_carlo' need randomized response or the target randomizer), got method={method!r}."
        )
    n = np.asarray(_validate.integer("n", n, minimum=1), dtype=np.float64)
    d = np.asarray(_validate.integer("dummies", dummies, minimum=0), dtype=np.float64)
    tail_sd = float(_validate.positive("tail_sd", tail_sd))
    shape = _validate.broadcastable(**{eps_or_delta_name: value}, n=n, dummies=d, eps0=r.eps0, k=r.k,
                                    sigma=r.sigma)
    return r, n, d, shape, tail_sd


def _conc_window(r, n, shape, tail_sd):
    """Static window size of the generic path from the largest variance in the batch (bucketed)."""
    gamma_np = {"generic": np.exp(-r.eps0), "laplace": np.exp(-r.eps0 / 2.0), "rr": r.sigma}[r.kind]
    var_m = float(np.max((n - 1.0) * gamma_np * (1.0 - gamma_np) + np.zeros(shape)))
    Wm = _bucket(B.window_size(var_m, tail_sd))
    return int(min(Wm, _bucket(int(np.max(n)) + 2)))


def _bucket(w):
    """Round a window size up to a multiple of 2^(j-3) where 2^j <= w (at most ~12% larger; limits the
    number of distinct compiled shapes across calls to a few per octave)."""
    w = max(int(w), 1)
    if w <= 8:
        return w
    step = 1 << (w.bit_length() - 4)
    return -(-w // step) * step


def _as_key(key):
    if key is None:
        raise ValueError("Expected key to be a jax.random.PRNGKey for method='monte_carlo', got key=None.")
    if hasattr(key, "dtype") and jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    key = np.asarray(key)
    if key.shape != (2,) or key.dtype != np.uint32:
        raise ValueError(f"Expected key to be a jax.random.PRNGKey (2 uint32 words), got key={key!r}.")
    return key


def _flat(shape, *xs):
    return [np.ascontiguousarray(np.broadcast_to(np.asarray(x, np.float64), shape)).reshape(-1) for x in xs]


def _to_jnp(shape, *xs):
    with x64_scope():
        return [jnp.asarray(np.asarray(x, np.float64).reshape(shape)) for x in xs]


def rr_delta(method, eps, n, d, T, sigma, *, key=None, confidence=0.95, samples=5000,
             tail_sd=DEFAULT_TAIL_SD):
    """delta of Lemma 2 for the target randomizer (validated numpy inputs that broadcast) as numpy arrays
    (delta, estimate) of the broadcast shape; the shared engine of :func:`blanket_delta` and
    ``amplify_jax.traffic.scrambler_delta``."""
    shape = np.broadcast_shapes(*(np.shape(x) for x in (eps, n, d, T, sigma)))
    fe, fn, fd, fT, fs = _flat(shape, eps, n, d, T, sigma)
    if method == "monte_carlo":
        alpha = np.full(fe.shape, 1.0 - float(confidence))
        ucb, mean = _mc_planned(_as_key(key), fe, fn, fd, fT, fs, alpha, tail_sd, int(samples))
        return ucb.reshape(shape), mean.reshape(shape)
    delta, _ = _rr_planned(method, fe, fn, fd, fT, fs, tail_sd)
    return delta.reshape(shape), delta.reshape(shape)


def blanket_delta(eps, *, n, randomizer, dummies=0, method="hoeffding", key=None, confidence=0.95,
                  samples=5000, tail_sd=DEFAULT_TAIL_SD) -> BlanketDelta:
    """delta(eps) of the shuffle model with d dummies (Ladjel Lemma 2 / Thm 5; Balle et al. 2019 at d = 0).

    eps, n, dummies and the randomizer's numeric fields broadcast.  ``method`` in
    {"hoeffding", "bennett", "exact", "monte_carlo"} (see the module docstring; "exact" and "monte_carlo"
    need a randomized-response or target randomizer).  Monte Carlo needs ``key`` (a PRNG key) and returns
    the one-sided upper confidence bound at ``confidence`` in ``delta`` and the point estimate in
    ``estimate``; ``samples`` draws per point.  ``tail_sd``: half-width of the binomial windows.
    """
    eps = _validate.nonnegative("eps", eps)
    r, n, d, shape, tail_sd = _prepare("eps", eps, n, dummies, randomizer, method, tail_sd)
    if method == "monte_carlo":
        confidence = float(_validate.unit_open("confidence", confidence))
        samples = int(_validate.integer("samples", samples, minimum=2))
        _as_key(key)
    if method in ("exact", "monte_carlo"):
        delta, est = rr_delta(method, eps, n, d, r.k, r.sigma, key=key, confidence=confidence, samples=samples,
                              tail_sd=tail_sd)
        return BlanketDelta(*_to_jnp(shape, delta, est))
    with x64_scope():
        bc = lambda x: jnp.broadcast_to(jnp.asarray(x, jnp.float64), shape)  # noqa: E731
        out = _conc_kernel(method, r.kind, bc(eps), bc(n), bc(d), bc(r.eps0), bc(r.k), bc(r.sigma),
                           Wm=_conc_window(r, n, shape, tail_sd), tail_sd=tail_sd)
    return BlanketDelta(out, out)


# ---------------------------------------------------------------------------------------------------------
# eps from delta (amplify_jax.calibrate.invert_monotone_kernel: fn traced once, feasible endpoint)


#: search cap for eps where the local guarantee is infinite (target randomizer with sigma = 0)
EPS_SEARCH_CAP = 50.0
_EPS_FLOOR = 1e-12


def _inversion_result(value, status, achieved, eps0):
    """BlanketEpsilon from the core inversion: status INFEASIBLE (eps0 itself does not reach delta) or
    NOT_MONOTONE (the re-check failed) fall back to the local guarantee."""
    fallback = (status == INFEASIBLE) | (status == NOT_MONOTONE)
    return BlanketEpsilon(jnp.where(fallback, eps0, value), fallback, achieved)


def _search_hi(eps0):
    return jnp.maximum(jnp.minimum(eps0, EPS_SEARCH_CAP), 2.0 * _EPS_FLOOR)


@float64_jit(static_argnames=("method", "kind", "Wm", "tail_sd"))
def _conc_eps_kernel(method, kind, delta, n, d, eps0, k, sigma, rtol, *, Wm, tail_sd):
    def fn(x, n, d, eps0, k, sigma):
        return _delta_concentration(method, kind, jnp.minimum(x, _EPS_CLIP), n, d, eps0, k, sigma, Wm=Wm,
                                    tail_sd=tail_sd)

    inv = invert_monotone_kernel(fn, delta, (n, d, eps0, k, sigma), _EPS_FLOOR, _search_hi(eps0), above=True,
                                 rtol=rtol, integer=False)
    return _inversion_result(*inv, eps0)


@float64_jit(static_argnames=("method", "Wm", "S", "tail_sd"))
def _rr_eps_chunk(method, delta, n, d, T, sigma, eps0, rtol, F, r0, nsteps, *, Wm, S, tail_sd):
    f = jax.vmap(partial(_delta_rr_point, method, Wm=Wm, S=S, tail_sd=tail_sd),
                 in_axes=(0, 0, 0, 0, 0, None, None, None))

    def fn(x, n, d, T, sigma):
        return f(x, n, d, T, sigma, F, r0, nsteps)[0]

    inv = invert_monotone_kernel(fn, delta, (n, d, T, sigma), _EPS_FLOOR, _search_hi(eps0), above=True,
                                 rtol=rtol, integer=False)
    return _inversion_result(*inv, eps0)


@float64_jit(static_argnames=("Wm", "Wj"))
def _mc_eps_from_indices(idx, delta, T, sigma, alpha, eps0, rtol, F, r0, *, Wm, Wj):
    draws = _mc_draws_from_indices(*idx, Wm=Wm, Wj=Wj)

    def fn(x, T, sigma, alpha):
        return _mc_from_draws(x, T, sigma, draws, F, r0, alpha)[1]

    inv = invert_monotone_kernel(fn, delta, (T, sigma, alpha), _EPS_FLOOR, _search_hi(eps0), above=True,
                                 rtol=rtol, integer=False)
    return _inversion_result(*inv, eps0)


def _mc_eps_chunk(key, delta, n, d, T, sigma, alpha, eps0, rtol, table, F, r0, *, Wm, Wj, samples, tail_sd):
    idx = _mc_search(key, n, d, T, sigma, table, Wm=Wm, Wj=Wj, samples=samples, tail_sd=tail_sd)
    return _mc_eps_from_indices(idx, delta, T, sigma, alpha, eps0, rtol, F, r0, Wm=Wm, Wj=Wj)


def rr_epsilon(method, delta, n, d, T, sigma, eps0, *, rtol=1e-9, key=None, confidence=0.95, samples=5000,
               tail_sd=DEFAULT_TAIL_SD):
    """The smallest eps with the Lemma 2 delta of the target randomizer <= delta (validated numpy inputs that
    broadcast): numpy (epsilon, fallback, delta) of the broadcast shape, the engine of :func:`blanket_epsilon`
    and ``amplify_jax.traffic.scrambler_epsilon``.

    Monte Carlo: one set of draws serves every eps of the search (common random numbers).  For fixed draws
    the upper confidence bound U(eps) is non-increasing in eps (see :func:`_mc_from_draws`), so the returned
    eps* (U(eps*) <= delta) can fall below the true threshold eps_t only if U(e) <= delta < delta(e) at every
    fixed e in (eps*, eps_t): an event of probability <= 1 - confidence for each fixed e, hence
    P(eps* < eps_t) <= 1 - confidence.  No re-check with fresh draws is needed (one would fail half the time
    at the boundary, for no gain in confidence)."""
    shape = np.broadcast_shapes(*(np.shape(x) for x in (delta, n, d, T, sigma, eps0)))
    fdl, fn, fd, fT, fs, fe0 = _flat(shape, delta, n, d, T, sigma, eps0)
    rt = float(rtol)
    if method == "monte_carlo":
        k = _as_key(key)
        alpha = np.full(fn.shape, 1.0 - float(confidence))
        plan = _plan_mc(fn, fd, fT, fs, tail_sd, int(samples))

        def call(statics, a, F, r0, i):
            Wm, Wj, T_ = statics
            table = jnp.asarray(_pascal_cdf_np(T_, Wm, Wj))
            return _mc_eps_chunk(jax.random.fold_in(jnp.asarray(k), i), *a, jnp.asarray(rt), table, F, r0, Wm=Wm, Wj=Wj, samples=int(samples),
                                 tail_sd=tail_sd)

        out = _run_planned(call, plan, [fdl, fn, fd, fT, fs, alpha, fe0], 3)
    else:
        plan = _plan_rr(fn, fd, fT, fs, tail_sd)

        def call(statics, a, F, r0, nsteps):
            Wm, S = statics
            return _rr_eps_chunk(method, *a, jnp.asarray(rt), F, r0, nsteps, Wm=Wm, S=S, tail_sd=tail_sd)

        out = _run_planned(call, plan, [fdl, fn, fd, fT, fs, fe0], 3)
    return out[0].reshape(shape), out[1].astype(bool).reshape(shape), out[2].reshape(shape)


def blanket_epsilon(delta, *, n, randomizer, dummies=0, method="hoeffding", key=None, confidence=0.95,
                    samples=5000, rtol=1e-9, tail_sd=DEFAULT_TAIL_SD) -> BlanketEpsilon:
    """The smallest eps with delta(eps) <= delta (Ladjel Thm 5 / Balle et al. 2019), by the core's inversion
    (``amplify_jax.calibrate.invert_monotone_kernel``: log-space bisection on eps in [1e-12, eps0], eps0 the
    local guarantee, capped at 50 when infinite; the feasible endpoint, relative width ``rtol``).  Where even
    eps0 does not reach delta (or the re-check fails) the result falls back to the local guarantee eps0 (inf
    for the target randomizer with sigma = 0) with ``fallback=True``.  Monte Carlo: the search uses draws
    from ``key`` (common random numbers for every eps; the bound is monotone in eps, so the returned eps
    keeps the confidence level, see :func:`rr_epsilon`).
    """
    delta = _validate.unit_open("delta", delta)
    r, n, d, shape, tail_sd = _prepare("delta", delta, n, dummies, randomizer, method, tail_sd)
    rtol = float(_validate.positive("rtol", rtol))
    if method == "monte_carlo":
        confidence = float(_validate.unit_open("confidence", confidence))
        samples = int(_validate.integer("samples", samples, minimum=2))
        _as_key(key)
    if method in ("exact", "monte_carlo"):
        e, fb, ach = rr_epsilon(method, delta, n, d, r.k, r.sigma, r.eps0, rtol=rtol, key=key,
                                confidence=confidence, samples=samples, tail_sd=tail_sd)
        e, ach = _to_jnp(shape, e, ach)
        with x64_scope():
            return BlanketEpsilon(e, jnp.asarray(fb.reshape(shape)), ach)
    with x64_scope():
        bc = lambda x: jnp.broadcast_to(jnp.asarray(x, jnp.float64), shape)  # noqa: E731
        return _conc_eps_kernel(method, r.kind, bc(delta), bc(n), bc(d), bc(r.eps0), bc(r.k), bc(r.sigma),
                                jnp.asarray(rtol), Wm=_conc_window(r, n, shape, tail_sd), tail_sd=tail_sd)
