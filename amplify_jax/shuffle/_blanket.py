"""The privacy blanket of the shuffle model (Balle, Bell, Gascon, Nissim 2019) with dummy messages
(Ladjel, Anciaux, Bellet, Scerri, App. E: Lemma 2, Lemma 3, Lemma 4, Lemma 5, Theorem 5, Algorithm 2).

Setting.  n users apply a local randomizer R, whose output law is mu_x = (1 - gamma) upsilon_x + gamma omega
(gamma: the blanket mass / total-variation similarity, omega: the blanket); a shuffler adds d dummies drawn
from omega and shuffles the n + d messages.  With the privacy amplification variable
L = (mu_x(W) - e^eps mu_x'(W)) / omega(W), W ~ omega (Ladjel Eq. 9), Ladjel Lemma 2 gives

    delta(eps) <= sum_{m'=0}^{n-1} C(n-1, m') gamma^m' (1 - gamma)^(n-1-m') E[sum_{i <= m'+1+d} L_i]_+ / (m'+1+d)
               = (1/(gamma n)) sum_{m=1}^{n} (m/(m+d)) C(n, m) gamma^m (1-gamma)^(n-m) E[sum_{i<=m+d} L_i]_+ ,

(the first form, used here, stays defined at gamma = 0: the dummies-only case of Ladjel Thm 4, sigma = 0).
The binomial sum runs over a window of m' fixed at compile time (mean +- ``tail_sd`` standard deviations);
the truncated binomial mass is bounded by a Chernoff bound and, since every term is at most
max(L_max, 0) (sum L / k <= L_max), added to delta times max(L_max, 0).  delta is capped at 1.

E[sum_{i<=k} L_i]_+ is bounded by
- ``"hoeffding"``: b^2/(4a) exp(-2 k a^2 / b^2), a = -E[L] = e^eps - 1, b = L_max - L_min (Ladjel Lemma 3;
  ERRATA: Thm 4/Thm 5 print a = 1 - e^eps, which makes b^2/(4a) negative; Hoeffding needs a = e^eps - 1 > 0);
- ``"bennett"``: (b_+ / ln(1 + beta)) exp(-(k c / b_+^2) phi(beta)), beta = a b_+ / c, phi(u) = (1+u) ln(1+u) - u,
  c >= E[L^2], b_+ = L_max: the CORRECTED form (ERRATA).  Ladjel Lemma 3 prints
  b_+ / (a k ln(1 + beta)) exp(...), which copies a misprint of Balle et al. that its authors later fixed;
  re-derived: E[S]_+ = int_0^inf P[S >= t] dt, P[S >= t] <= exp(-(k c/b_+^2) phi(beta + b_+ t/(k c))) (Bennett
  with the non-central second moment), and phi(beta + u) >= phi(beta) + ln(1 + beta) u (convexity);
- ``"exact"`` (randomized response / target randomizer only): sum L over k terms depends only on the counts
  (N1, N2) ~ Multinomial(k; 1/T, 1/T) of the blanket messages that land on the two targets t, t' (ERRATA:
  sum L = k sigma (1 - e^eps) + (1 - sigma) T (N1 - e^eps N2)).  Conditioning on J = N1 + N2 ~ Bin(k, 2/T),
  N1 | J ~ Bin(J, 1/2) and [S]_+ = (1-sigma) T (1+e^eps) [N1 - theta]_+; E[(N1 - theta)_+] comes from a
  table of tail sums of Bin(J, 1/2) built once per point.  Every truncation is bounded as above;
- ``"monte_carlo"`` (randomized response / target randomizer only): Ladjel Algorithm 2, sampled jointly with
  the binomial weights: draw M' ~ Bin(n-1, gamma), K = M' + 1 + d, J ~ Bin(K, 2/T), N1 ~ Bin(J, 1/2); then
  Y = [S_K]_+ / K is an unbiased estimate of the Lemma 2 sum, Y in [0, max(L_max, 0)].  Returns the mean and
  a one-sided upper confidence bound at level ``confidence`` (Maurer-Pontil empirical Bernstein:
  mean + sqrt(2 V ln(2/alpha) / R) + 7 B ln(2/alpha) / (3 (R - 1))).  (Drawing the multinomial counts is
  exactly equivalent to drawing L_1..L_k one by one, at O(1) instead of O(k) per sample.)

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

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validate
from ..numerics import float64_jit, x64_scope
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


def _rev_cumsum(x):
    return jnp.flip(jnp.cumsum(jnp.flip(x, -1), -1), -1)


def _binomial_rows(first_row, p, steps):
    """Rows b_{N+i}(j0 + .) for i < steps from b_N(j0 + .), by b_{N+1}(j) = (1-p) b_N(j) + p b_N(j-1).

    The window is fixed, so mass entering from below j0 is dropped: rows are lower bounds of the true pmfs
    and 1 - sum(row) bounds the mass they miss (used as lost mass).  No transcendental function per entry.
    """

    def step(row, _):
        shifted = jnp.concatenate([jnp.zeros((1,), row.dtype), row[:-1]])
        nxt = (1.0 - p) * row + p * shifted
        return nxt, row

    _, rows = jax.lax.scan(step, first_row, None, length=steps)
    return rows


def _delta_exact_point(eps, n, d, T, sigma, *, Wm, Wj, WJt, Ws, tail_sd):
    """Lemma 2 with E[sum L]_+ evaluated exactly (up to bounded truncations) for one parameter point.

    M' window (Wm points); for each K = M'+1+d a window of Wj values of J ~ Bin(K, 2/T) taken from a table
    of Bin(K, 2/T) rows over a common J range (WJt values) built by the Pascal recurrence; for each J a row
    of Bin(J, 1/2) over a common N1 range, also by recurrence, with its reverse cumulative sums G, H so that
    E[(N1 - theta)_+] = H(s) - theta G(s), s = floor(theta) + 1.  Every mass left out of a window (1 - the
    row's sum, or a Chernoff bound for M') is charged max(L_max, 0).
    """
    ee = jnp.exp(eps)
    pJ = 2.0 / T
    l_max = (1.0 - sigma) * T + sigma * (1.0 - ee)
    mp, lw, out_m = _m_window(n, sigma, tail_sd, Wm)  # (Wm,)
    K = mp + 1.0 + d
    w = jnp.exp(lw)
    live = jnp.isfinite(lw)
    # Bin(K, pJ) over J in [Jt0, Jt0 + WJt) for every K of the window (consecutive K).
    sdJ = jnp.sqrt(K * pJ * (1.0 - pJ))
    j0 = jnp.clip(jnp.floor(K * pJ - tail_sd * sdJ) - 1.0, 0.0, None)
    Jt0 = jnp.min(jnp.where(live, j0, jnp.inf))
    Jt0 = jnp.where(jnp.isfinite(Jt0), Jt0, 0.0)
    first = jnp.exp(B.log_binom_pmf_window(Jt0, K[0], pJ, WJt))
    table_J = _binomial_rows(first, pJ, Wm)  # (Wm, WJt)
    off = jnp.clip(j0 - Jt0, 0.0, WJt - Wj).astype(jnp.int32)  # (Wm,)
    cols = off[:, None] + jnp.arange(Wj, dtype=jnp.int32)[None, :]
    wJ = jnp.take_along_axis(table_J, cols, axis=1)  # (Wm, Wj)
    J = Jt0 + cols.astype(jnp.float64)
    lostJ = jnp.maximum(1.0 - jnp.sum(wJ, axis=1), 0.0) + 4.0 * (Wm + WJt) * _U
    # Bin(J, 1/2) rows for J = Jt0 + l over N1 in [s_lo, s_lo + WN).
    WN = Ws + WJt // 2 + 2
    s_lo = jnp.clip(jnp.floor(Jt0 / 2.0 - tail_sd * jnp.sqrt(Jt0) / 2.0) - 1.0, 0.0, None)
    firstN = jnp.exp(B.log_binom_pmf_window(s_lo, Jt0, 0.5, WN))
    table_N = _binomial_rows(firstN, 0.5, WJt)  # (WJt, WN)
    n1 = s_lo + jnp.arange(WN, dtype=jnp.float64)
    G = _rev_cumsum(table_N)
    H = _rev_cumsum(n1[None, :] * table_N)
    lostN = jnp.maximum(1.0 - G[:, 0], 0.0) + 4.0 * (WJt + WN) * _U  # (WJt,)
    # Lookups: [S]_+ = (1 - sigma) T (1 + e^eps) [N1 - theta]_+.
    one_m = 1.0 - sigma
    kappa = sigma * jnp.expm1(eps) / jnp.where(one_m > 0, one_m * T, 1.0)
    theta = (ee * J + K[:, None] * kappa) / (1.0 + ee)
    s = jnp.floor(theta) + 1.0
    r = s - s_lo
    rc = jnp.clip(r, 0.0, WN - 1).astype(jnp.int32)
    flat = cols * WN + rc
    Gs = jnp.where(r >= WN, 0.0, G.reshape(-1)[flat])
    Hs = jnp.where(r >= WN, 0.0, H.reshape(-1)[flat])
    g = jnp.maximum(Hs - theta * Gs, 0.0)
    # Rounding in H - theta G: the reverse cumulative sums carry at most WN ulps of their value.
    g_err = 4.0 * WN * _U * (Hs + theta * Gs)
    inner = jnp.sum(wJ * (g + g_err), axis=-1)  # (Wm,)
    lost_rows = jnp.sum(wJ * lostN[cols], axis=-1)
    # (1 + 1e-11): the first rows' ratio-accumulated pmfs carry ~1e-13 relative error.
    main = one_m * T * (1.0 + ee) * jnp.sum(w * inner / K) * (1.0 + 1e-11)
    lost = out_m + jnp.sum(jnp.where(live, w * (lostJ + lost_rows), 0.0))
    delta = main + jnp.maximum(l_max, 0.0) * jnp.minimum(lost, 1.0)
    delta = jnp.where((l_max <= 0) | (one_m <= 0), 0.0, delta)
    return jnp.minimum(delta, 1.0)


def _delta_exact(eps, n, d, T, sigma, *, Wm, Wj, WJt, Ws, tail_sd):
    shape = jnp.broadcast_shapes(eps.shape, n.shape, d.shape, T.shape, sigma.shape)
    flat = [jnp.broadcast_to(x, shape).reshape(-1) for x in (eps, n, d, T, sigma)]
    f = jax.vmap(partial(_delta_exact_point, Wm=Wm, Wj=Wj, WJt=WJt, Ws=Ws, tail_sd=tail_sd))
    # Batches of points under vmap, sized to keep the per-point tables within ~1 GiB (larger batches amortize
    # the per-step cost of the two scans); the batch is padded to a whole number of batches so that the body
    # is traced once.
    size = flat[0].shape[0]
    per_point = 8 * 4 * (Wm * (Wj + WJt) + WJt * (Ws + WJt))
    batch = int(max(1, min(size, (1 << 30) // per_point)))
    nb = -(-size // batch)
    pad = nb * batch - size
    flat = [jnp.concatenate([x, jnp.broadcast_to(x[:1], (pad,))]).reshape(nb, batch) for x in flat]
    out = jax.lax.map(lambda a: f(*a), tuple(flat))
    return out.reshape(-1)[:size].reshape(shape)


# ---------------------------------------------------------------------------------------------------------
# Monte Carlo (Ladjel Algorithm 2, sampled jointly with the binomial weights)


def _mc_draws(key, n, d, T, sigma, samples):
    """Draw (K, J, N1) for one point: M' ~ Bin(n-1, sigma), K = M'+1+d, J ~ Bin(K, 2/T), N1 ~ Bin(J, 1/2)."""
    k1, k2, k3 = jax.random.split(key, 3)
    mprime = jax.random.binomial(k1, jnp.full((samples,), n - 1.0), sigma)
    mprime = jnp.where(sigma <= 0, 0.0, jnp.where(sigma >= 1, n - 1.0, mprime))
    K = mprime + 1.0 + d
    pJ = 2.0 / T
    J = jax.random.binomial(k2, K, pJ)
    J = jnp.where(pJ >= 1, K, J)
    N1 = jax.random.binomial(k3, J, 0.5)
    return K, J, N1


def _mc_point(key, eps, n, d, T, sigma, alpha, samples):
    K, J, N1 = _mc_draws(key, n, d, T, sigma, samples)
    ee = jnp.exp(eps)
    S = K * sigma * (1.0 - ee) + (1.0 - sigma) * T * ((1.0 + ee) * N1 - ee * J)
    Y = jnp.maximum(S, 0.0) / K
    bound = jnp.maximum((1.0 - sigma) * T + sigma * (1.0 - ee), 0.0)
    Y = jnp.minimum(Y, bound)
    mean = jnp.mean(Y)
    var = jnp.var(Y, ddof=1)
    log_term = jnp.log(2.0 / alpha)
    ucb = mean + jnp.sqrt(2.0 * var * log_term / samples) + 7.0 * bound * log_term / (3.0 * (samples - 1.0))
    ucb = jnp.minimum(ucb, jnp.minimum(bound, 1.0))
    return mean, ucb


def _delta_mc(key, eps, n, d, T, sigma, alpha, *, samples):
    shape = jnp.broadcast_shapes(eps.shape, n.shape, d.shape, T.shape, sigma.shape, alpha.shape)
    flat = [jnp.broadcast_to(x, shape).reshape(-1) for x in (eps, n, d, T, sigma, alpha)]
    size = flat[0].shape[0]
    keys = jax.random.split(key, max(size, 1))[:size]
    mean, ucb = jax.vmap(partial(_mc_point, samples=samples))(keys, *flat)
    return mean.reshape(shape), ucb.reshape(shape)


# ---------------------------------------------------------------------------------------------------------
# Kernels


@float64_jit(static_argnames=("method", "kind", "Wm", "Wj", "WJt", "Ws", "tail_sd"))
def _delta_kernel(method, kind, eps, n, d, eps0, k, sigma, *, Wm, Wj, WJt, Ws, tail_sd):
    if method == "exact":
        out = _delta_exact(eps, n, d, k, sigma, Wm=Wm, Wj=Wj, WJt=WJt, Ws=Ws, tail_sd=tail_sd)
    else:
        out = _delta_concentration(method, kind, eps, n, d, eps0, k, sigma, Wm=Wm, tail_sd=tail_sd)
    return BlanketDelta(out, out)


@float64_jit(static_argnames=("samples",))
def _mc_kernel(key, eps, n, d, k, sigma, alpha, *, samples):
    mean, ucb = _delta_mc(key, eps, n, d, k, sigma, alpha, samples=samples)
    return BlanketDelta(ucb, mean)


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
    # Static window sizes from the largest variances in the batch (bucketed to limit recompilation).
    gamma_np = {"generic": np.exp(-r.eps0), "laplace": np.exp(-r.eps0 / 2.0), "rr": r.sigma}[r.kind]
    var_m = float(np.max((n - 1.0) * gamma_np * (1.0 - gamma_np) + 0.0 * np.zeros(shape)))
    Wm = _bucket(B.window_size(var_m, tail_sd))
    Wm = int(min(Wm, _bucket(int(np.max(n)) + 2)))
    Wj = WJt = Ws = 1
    if method == "exact":
        pJ = 2.0 / r.k
        Kmax = float(np.max(n + d + 0.0 * np.zeros(shape)))
        var_j = float(np.max(Kmax * pJ * (1.0 - pJ)))
        wj = B.window_size(var_j, tail_sd)
        Wj = _bucket(wj)
        # j0(K) moves by at most Wm pJ + tail_sd sqrt(Wm pJ (1 - pJ)) across the m' window.
        spread = float(np.max(Wm * pJ + tail_sd * np.sqrt(Wm * pJ * (1 - pJ))))
        WJt = _bucket(Wj + int(math.ceil(spread)) + 4)
        Jmax = min(float(np.max(Kmax * pJ)) + tail_sd * math.sqrt(var_j) + 2.0, Kmax)
        Ws = _bucket(B.window_size(Jmax / 4.0, tail_sd))
    return r, n, d, shape, dict(Wm=Wm, Wj=Wj, WJt=WJt, Ws=Ws, tail_sd=tail_sd)


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
    return key


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
    r, n, d, shape, win = _prepare("eps", eps, n, dummies, randomizer, method, tail_sd)
    with x64_scope():
        bc = lambda x: jnp.broadcast_to(jnp.asarray(x, jnp.float64), shape)  # noqa: E731
        if method == "monte_carlo":
            alpha = 1.0 - float(_validate.unit_open("confidence", confidence))
            samples = int(_validate.integer("samples", samples, minimum=2))
            return _mc_kernel(_as_key(key), bc(eps), bc(n), bc(d), bc(r.k), bc(r.sigma), bc(alpha), samples=samples)
        return _delta_kernel(method, r.kind, bc(eps), bc(n), bc(d), bc(r.eps0), bc(r.k), bc(r.sigma), **win)


# ---------------------------------------------------------------------------------------------------------
# eps from delta


#: search cap for eps where the local guarantee is infinite (target randomizer with sigma = 0)
EPS_SEARCH_CAP = 50.0
_EPS_FLOOR = 1e-12


def _bisect_eps(fn, target, hi, rtol, max_iter=200):
    """Smallest eps in [1e-12, hi] with fn(eps) <= target, for a batch, with ONE traced instance of fn.

    The same contract as ``amplify_jax.calibrate.invert_monotone`` (feasible endpoint, geometric bisection
    to relative width rtol) -- written here so that the expensive delta kernels are traced once per
    inversion (the core's kernel traces fn at both ends, in the loop and in the re-check: five copies,
    which made the exact kernel's compilation several times slower).  Iteration 0 evaluates fn at hi
    (reachable at all?), iteration 1 at the floor (feasible everywhere?); every returned value is a point
    where fn was evaluated and found <= target, so ``achieved`` is that evaluation (no separate re-check).
    Returns (eps, reachable, achieved).
    """
    floor = jnp.full_like(target, _EPS_FLOOR)

    def cond(st):
        it, lo, hi_, ach, reach = st
        wide = jnp.log(hi_) - jnp.log(lo) > jnp.log1p(rtol)
        return (it < 2) | ((it < max_iter) & jnp.any(reach & wide))

    def body(st):
        it, lo, hi_, ach, reach = st
        x = jnp.where(it == 0, hi_, jnp.where(it == 1, floor, jnp.sqrt(lo * hi_)))
        v = fn(x)
        ok = (v <= target) & ~jnp.isnan(v)
        reach = jnp.where(it == 0, ok, reach)
        active = reach & (jnp.log(hi_) - jnp.log(lo) > jnp.log1p(rtol))
        take = (it == 0) | (active & ok)
        hi_new = jnp.where(take & ((it > 0) | ok), x, hi_)
        ach = jnp.where(take, v, ach)
        lo_new = jnp.where((it > 0) & active & ~ok, x, lo)
        # At the floor and feasible: collapse the bracket there.
        lo_new = jnp.where((it == 1) & ok, x, lo_new)
        return it + 1, lo_new, hi_new, ach, reach

    st = (0, floor, hi, jnp.ones_like(target), jnp.zeros(target.shape, bool))
    _, lo, hi_, ach, reach = jax.lax.while_loop(cond, body, st)
    return hi_, reach, ach


@float64_jit(static_argnames=("method", "kind", "Wm", "Wj", "WJt", "Ws", "tail_sd"))
def _eps_kernel(method, kind, delta, n, d, eps0, k, sigma, rtol, *, Wm, Wj, WJt, Ws, tail_sd):
    def fn(x):
        if method == "exact":
            return _delta_exact(x, n, d, k, sigma, Wm=Wm, Wj=Wj, WJt=WJt, Ws=Ws, tail_sd=tail_sd)
        return _delta_concentration(method, kind, x, n, d, eps0, k, sigma, Wm=Wm, tail_sd=tail_sd)

    hi = jnp.maximum(jnp.minimum(eps0, EPS_SEARCH_CAP), 2.0 * _EPS_FLOOR)
    eps, reach, ach = _bisect_eps(fn, delta, hi, rtol)
    return BlanketEpsilon(jnp.where(reach, eps, eps0), ~reach, ach)


@float64_jit(static_argnames=("samples",))
def _mc_eps_kernel(key, key_check, delta, n, d, eps0, k, sigma, alpha, rtol, *, samples):
    def fn(x):
        return _delta_mc(key, x, n, d, k, sigma, alpha, samples=samples)[1]

    hi = jnp.maximum(jnp.minimum(eps0, EPS_SEARCH_CAP), 2.0 * _EPS_FLOOR)
    eps, reach, _ = _bisect_eps(fn, delta, hi, rtol)
    # Re-check with an independent key: the bisection chose eps with the first sample.
    check = _delta_mc(key_check, eps, n, d, k, sigma, alpha, samples=samples)[1]
    ok = reach & (check <= delta)
    return BlanketEpsilon(jnp.where(ok, eps, eps0), ~ok, check)


def blanket_epsilon(delta, *, n, randomizer, dummies=0, method="hoeffding", key=None, confidence=0.95,
                    samples=5000, rtol=1e-9, tail_sd=DEFAULT_TAIL_SD) -> BlanketEpsilon:
    """The smallest eps with delta(eps) <= delta (Ladjel Thm 5 / Balle et al. 2019), by the core's inversion.

    Geometric bisection on eps in [1e-12, eps0] (eps0 the local guarantee; capped at 50 when infinite)
    returning the feasible endpoint (relative width ``rtol``), the contract of the core's
    ``invert_monotone`` (see ``_bisect_eps`` for why it is re-implemented here).  Where even eps0 does not reach delta
    the result falls back to the local guarantee eps0 (inf for the target randomizer with sigma = 0) with
    ``fallback=True``.  Monte Carlo: the bisection uses ``key`` (common random numbers), and the returned
    eps is re-checked with an independent key split from it; a failed re-check also falls back.
    """
    delta = _validate.unit_open("delta", delta)
    r, n, d, shape, win = _prepare("delta", delta, n, dummies, randomizer, method, tail_sd)
    rtol = float(_validate.positive("rtol", rtol))
    with x64_scope():
        bc = lambda x: jnp.broadcast_to(jnp.asarray(x, jnp.float64), shape)  # noqa: E731
        if method == "monte_carlo":
            alpha = 1.0 - float(_validate.unit_open("confidence", confidence))
            samples = int(_validate.integer("samples", samples, minimum=2))
            k_search, k_check = jax.random.split(_as_key(key))
            return _mc_eps_kernel(k_search, k_check, bc(delta), bc(n), bc(d), bc(r.eps0), bc(r.k), bc(r.sigma),
                                  bc(alpha), jnp.asarray(rtol), samples=samples)
        return _eps_kernel(method, r.kind, bc(delta), bc(n), bc(d), bc(r.eps0), bc(r.k), bc(r.sigma),
                           jnp.asarray(rtol), **win)
