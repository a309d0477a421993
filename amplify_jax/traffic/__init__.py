"""Differential privacy for communication patterns (Ladjel, Anciaux, Bellet, Scerri).

Source: R. Ladjel, N. Anciaux, A. Bellet, G. Scerri, "Mitigating Leakage from Data Dependent Communications
in Decentralized Computing using Differential Privacy" (``shared/papers/001_*.txt``), read together with
``shared/papers/ERRATA.md``.  Everything here is about one *cluster*: ``S`` source nodes each send one
message to one of ``T`` target nodes, and an external observer sees who talks to whom.

What is implemented, by the paper's numbering:

* Thm 1 -- privacy of an execution plan made of clusters: :class:`ExecutionPlan`, :func:`plan_privacy`,
  the running examples :func:`aggregate_plan` (``G`` grouping sets) and :func:`kmeans_plan` (``I``
  iterations).
* Thm 2 -- local sampling + flooding (no scrambler): :func:`local_epsilon`.
* Thm 3 -- pure eps of the capped scrambler, in log space: :func:`scrambler_pure_epsilon`.  As printed it
  UNDER-REPORTS (exact enumeration, :func:`scrambler_pure_epsilon_exact`, finds larger worst-case ratios; not
  in ERRATA.md): the printed value is kept for Figure 5 only and the sound local guarantee is reported.
* Thm 4 / App. E (Lemma 2, Lemma 3, Lemma 5, Algorithm 2) -- (eps, delta) of the scrambler with local
  sampling and dummies: :func:`scrambler_delta` (methods ``"hoeffding"``, ``"bennett"``, ``"exact"``,
  ``"monte_carlo"``) and its inverse :func:`scrambler_epsilon`.
* §III-C and §IV-D -- utility and efficiency metrics: :func:`local_costs`, :func:`scrambler_costs`;
  deployment inversions :func:`fewest_dummies`, :func:`smallest_sampling`, :func:`messages_per_scrambler`.
* App. D -- the empirical simulation behind Figure 6: :func:`simulate_scrambler_outputs`.

Target conventions (ERRATA: "keep each theorem's own convention and state it"):

* Thm 2 and Thm 4 (Eq. 2, Lemma 5, App. E-C): a sampled message goes to a target drawn uniformly among
  **all T** targets (it may hit the true one); the local randomizer is T-ary randomized response with
  blanket mass gamma = sigma.  We call this the *T convention*.
* Thm 3 (App. C): a sampled message goes uniformly to one of the **T - 1 other** targets,
  ``R_lie = sigma / (T - 1)``.  We call this the *T - 1 convention*.

Corrections of misprints (ERRATA.md), each tested against an independent evaluation in
``tests/test_traffic.py``:

* Thm 4: ``a = e^eps - 1`` (= -E[L]), not ``1 - e^eps``; ``b = (1 - sigma) T (1 + e^eps)`` without the extra
  ``-2 sigma (1 - e^eps)``.
* Lemma 5: the upper end of L is ``(1 - sigma) T + sigma (1 - e^eps)`` (the printed sign of
  ``sigma (1 - e^eps)`` is flipped).
* Lemma 3 (Bennett): the corrected form ``E[sum_{i<=k} L_i]_+ <= (b_+ / ln(1 + beta))
  exp(-(k c / b_+^2) phi(beta))``, ``beta = a b_+ / c``, ``phi(u) = (1 + u) ln(1 + u) - u``, re-derived in
  :func:`_g_bennett`.

Every delta returned is an upper bound (Monte Carlo: a one-sided upper confidence bound), capped at 1 and
set to 0 where eps is at least the local guarantee of the randomizer (post-processing).

Relation to amplify_jax.shuffle: the Lemma 2 sum is evaluated by ``amplify_jax.shuffle``'s engine for the
target randomizer (``shuffle._blanket.rr_delta`` / ``rr_epsilon``, the code behind ``shuffle.blanket_delta``
with ``target_randomizer``; ``rr_delta_traced`` inside the deployment inversions, where d, sigma or n are
traced); the tests check it against mpmath and direct enumeration.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validate as V
from ..calibrate import invert_monotone
from ..numerics import float64_jit, log_comb, logsumexp
from ..shuffle import _blanket as _SH

__all__ = [
    "PureEpsilon",
    "DeltaBound",
    "EpsilonInversion",
    "Costs",
    "Deployment",
    "PlanPrivacy",
    "ExecutionPlan",
    "METHODS",
    "local_epsilon",
    "scrambler_pure_epsilon",
    "scrambler_pure_epsilon_exact",
    "ScramblerPureEpsilon",
    "amplification_variable_bounds",
    "scrambler_delta",
    "scrambler_epsilon",
    "plan_privacy",
    "aggregate_plan",
    "kmeans_plan",
    "local_costs",
    "scrambler_costs",
    "fewest_dummies",
    "smallest_sampling",
    "messages_per_scrambler",
    "simulate_scrambler_outputs",
    "OutputSimulation",
]

METHODS = ("hoeffding", "bennett", "exact", "monte_carlo")

_DEFAULT_SAMPLES = 1 << 18
_DEFAULT_CONFIDENCE = 0.99


def _f64(*xs):
    """NumPy float64 copies (converted to jax arrays inside the float64 scope of the kernels)."""
    return tuple(np.asarray(x, dtype=np.float64) for x in xs)


class PureEpsilon(NamedTuple):
    """A pure eps-DP guarantee; ``valid`` is False where the theorem's hypotheses fail and the returned eps is
    the fallback described by the function (or +inf where no finite eps exists)."""

    eps: jax.Array
    valid: jax.Array


class DeltaBound(NamedTuple):
    """delta(eps) of the scrambler.  ``delta`` is the sound value (the upper confidence bound for Monte
    Carlo); ``estimate`` is the plain Monte Carlo mean (equal to ``delta`` for deterministic methods);
    ``local`` is True where eps >= the local guarantee of the randomizer, so delta = 0 by post-processing."""

    delta: jax.Array
    estimate: jax.Array
    local: jax.Array


class EpsilonInversion(NamedTuple):
    """Smallest eps with delta(eps) <= target.  ``status``: 0 found below the local guarantee, 1 no eps
    below the local guarantee reaches delta, so ``eps`` is the local guarantee (Thm 2 with d = 0; +inf
    when sigma = 0, where no finite eps exists).  ``achieved`` is delta re-evaluated at ``eps``."""

    eps: jax.Array
    status: jax.Array
    achieved: jax.Array


# ---------------------------------------------------------------------------------------------------------
# Thm 2: local sampling + flooding
# ---------------------------------------------------------------------------------------------------------


@float64_jit
def _local_epsilon_kernel(T, sigma, d):
    # eps = ln((1 - sigma) T / (sigma (d + 1)) + 1), evaluated as log1p; d = T - 1 is a broadcast (eps = 0).
    broadcast = d >= T - 1
    safe_sigma = jnp.where(sigma > 0, sigma, 1.0)
    eps = jnp.log1p((1.0 - sigma) * T / (safe_sigma * (d + 1.0)))
    eps = jnp.where(sigma > 0, eps, jnp.inf)
    eps = jnp.where(broadcast, 0.0, eps)
    return eps


def local_epsilon(*, targets, sampling, dummies=0) -> PureEpsilon:
    """Pure eps of the local randomizer with sampling and flooding (Ladjel et al., Thm 2, App. B).

    ``eps = ln((1 - sigma) T / (sigma (d + 1)) + 1)``; ``d = T - 1`` is a broadcast (eps = 0).  T convention:
    a sampled message goes to a target drawn uniformly among all T targets, then the d dummies go to d other
    targets drawn without replacement.  The paper states d in {1, ..., T - 2}; the proof (App. B) holds
    unchanged for d = 0 (sampling only, Figure 3(a)).  With sigma = 0 and d < T - 1 no finite eps exists:
    ``eps = +inf`` and ``valid = False``.

    Args broadcast: targets T >= 2 (integer), sampling sigma in [0, 1], dummies d in {0, ..., T - 1}.
    """
    T = V.integer("targets", targets, minimum=2)
    sigma = V.probability("sampling", sampling)
    d = V.integer("dummies", dummies, minimum=0)
    V.broadcastable(targets=T, sampling=sigma, dummies=d)
    too_many = np.asarray(d) > np.asarray(T) - 1
    if np.any(too_many):
        raise ValueError(
            "Expected dummies <= targets - 1 (the d dummies go to distinct targets), "
            f"got dummies={np.broadcast_to(d, too_many.shape)[too_many][0]}, "
            f"targets={np.broadcast_to(T, too_many.shape)[too_many][0]}."
        )
    eps = _local_epsilon_kernel(*_f64(T, sigma, d))
    return PureEpsilon(eps, jnp.isfinite(eps))


# ---------------------------------------------------------------------------------------------------------
# Thm 3: pure eps of the capped scrambler
# ---------------------------------------------------------------------------------------------------------

_THM3_MAX_D = 4096  # static length of the k-sum in Thm 3 (d <= n - 1 is summed exactly up to this)


@float64_jit
def _pure_epsilon_kernel(T, n, sigma, d):
    k = jnp.arange(_THM3_MAX_D + 1, dtype=jnp.float64)
    T, n, sigma, d = (x[..., None] for x in jnp.broadcast_arrays(T, n, sigma, d))
    sbar = 1.0 - sigma
    r = sigma / (T - 1.0)  # R_lie, T - 1 convention
    kmax = jnp.minimum(d, n - 1.0)
    inside = k <= kmax
    kk = jnp.where(inside, k, 0.0)
    log_r = jnp.log(jnp.where(r > 0, r, 1.0))
    log_sbar = jnp.log(jnp.where(sbar > 0, sbar, 1.0))
    # Common factor of both sums: C(d, k) C(n-1, k) sbar^k r^(n-k-1).  r = 0 or sbar = 0 are handled below.
    base = log_comb(d, kk) + log_comb(n - 1.0, kk) + kk * log_sbar + (n - kk - 1.0) * log_r
    # numerator bracket: sbar + k r^2 / sbar ; denominator bracket: r + k r^2 / sbar.
    safe_sbar = jnp.where(sbar > 0, sbar, 1.0)
    num_br = jnp.log(sbar + kk * r * r / safe_sbar)
    den_br = jnp.log(r + kk * r * r / safe_sbar)
    neg = -jnp.inf
    log_num = logsumexp(jnp.where(inside, base + num_br, neg), axis=-1)
    log_den = logsumexp(jnp.where(inside, base + den_br, neg), axis=-1)
    eps_thm3 = log_num - log_den
    T1, n1, s1, d1 = (x[..., 0] for x in (T, n, sigma, d))
    sbar1 = 1.0 - s1
    r1 = s1 / (T1 - 1.0)
    # Local guarantee of the T - 1 convention randomizer: |ln(sbar (T - 1) / sigma)| (post-processing bound).
    eps_local = jnp.abs(jnp.log(jnp.where(sbar1 > 0, sbar1, 1.0)) - jnp.log(jnp.where(r1 > 0, r1, 1.0)))
    eps_local = jnp.where((r1 > 0) & (sbar1 > 0), eps_local, jnp.inf)
    valid = (d1 >= 1) & (d1 <= n1 - 1) & (sbar1 >= r1) & (s1 > 0)
    printed = jnp.where(valid, jnp.minimum(jnp.maximum(eps_thm3, 0.0), eps_local), eps_local)
    return printed, eps_local, valid


class ScramblerPureEpsilon(NamedTuple):
    """Pure eps of the capped scrambler.  ``eps``: the sound guarantee we report, the local guarantee of the
    T - 1 convention randomizer (post-processing; Thm 3 as printed is not sound, see
    :func:`scrambler_pure_epsilon`).  ``printed``: Thm 3's formula as printed (where its hypotheses hold, capped
    by the local guarantee; elsewhere the local guarantee) -- for reproducing Figure 5 only, it can be smaller
    than the true eps.  ``valid``: the theorem's hypotheses hold."""

    eps: jax.Array
    printed: jax.Array
    valid: jax.Array


def scrambler_pure_epsilon(*, targets, n, sampling, dummies) -> ScramblerPureEpsilon:
    """Pure eps of the capped scrambler ``tilde A_sigma^{n,d}`` (Ladjel et al., Thm 3, App. C), in log space.

    Thm 3 as printed: ``e^eps = sum_k C(d,k) C(n-1,k) sbar^k R^(n-k-1) (sbar + k R^2/sbar)
    / sum_k C(d,k) C(n-1,k) sbar^k R^(n-k-1) (R + k R^2/sbar)``, ``sbar = 1 - sigma``, ``R = sigma / (T - 1)``
    (T - 1 convention: a sampled message goes to one of the T - 1 other targets), k = 0..min(d, n - 1).
    Hypotheses: d in {1, ..., n - 1}, ``1 - sigma >= sigma / (T - 1)`` (the worst-case argument of App. C
    assumes the true target is the likeliest), sigma > 0 (``valid``).

    NOT SOUND AS PRINTED (found here, not in ERRATA.md): exact enumeration of the capped algorithm
    (:func:`scrambler_pure_epsilon_exact`) gives a larger worst-case log-ratio, e.g. T = 3, n = 3, d = 1,
    sigma = 0.3: the formula gives 1.40415, the exact worst case 1.47174, attained at the very configuration
    App. C identifies (inputs {1, n-1, 0} / {0, n-1, 1}, output {n, d, 0}).  By hand, at that configuration
    P(O | G) = sbar R^2 / 2 + (2 sbar^2 R + R^3) / 3: the formula drops the dummy probabilities (1/T before t
    is capped, 1/(T - 1) after), which differ between its k terms, and counts 2 R^3 instead of R^3.  So
    ``eps`` reports the sound local guarantee ``ln((1 - sigma)(T - 1) / sigma)`` (the scrambler post-processes
    the locally randomized messages), and ``printed`` keeps the formula for Figure 5.  +inf where the local
    guarantee is infinite (sigma = 0 or 1).
    """
    T = V.integer("targets", targets, minimum=2)
    n_ = V.integer("n", n, minimum=1)
    sigma = V.probability("sampling", sampling)
    d = V.integer("dummies", dummies, minimum=0)
    V.broadcastable(targets=T, n=n_, sampling=sigma, dummies=d)
    if np.any(d > _THM3_MAX_D):
        raise ValueError(f"Expected dummies <= {_THM3_MAX_D} for Thm 3, got dummies={np.max(d)}.")
    printed, local, valid = _pure_epsilon_kernel(*_f64(T, n_, sigma, d))
    return ScramblerPureEpsilon(local, printed, valid)


def _capped_output_dist(x, sigma, d, n, T):
    """Exact output law (dict: count vector -> probability) of the capped scrambler on input counts x."""
    dist = {tuple([0] * T): 1.0}
    for t, cnt in enumerate(x):
        for _ in range(cnt):
            nd = {}
            for y, p in dist.items():
                for t2 in range(T):
                    q = (1.0 - sigma) if t2 == t else sigma / (T - 1)
                    z = y[:t2] + (y[t2] + 1,) + y[t2 + 1:]
                    nd[z] = nd.get(z, 0.0) + p * q
            dist = nd
    for _ in range(d):  # Algorithm 1 with B = True: a dummy goes uniformly to a target not yet holding n
        nd = {}
        for y, p in dist.items():
            allowed = [t for t in range(T) if y[t] < n]
            for t in allowed:
                z = y[:t] + (y[t] + 1,) + y[t + 1:]
                nd[z] = nd.get(z, 0.0) + p / len(allowed)
        dist = nd
    return dist


def scrambler_pure_epsilon_exact(*, targets, n, sampling, dummies) -> float:
    """Exact pure eps of the capped scrambler (Algorithm 1 with B = True after the T - 1 convention local
    randomizer) by enumerating every input count vector, every neighbour (one message moved) and every output:
    max log P(O | G) / P(O | G').  Small instances only (targets <= 4, n <= 8, dummies <= 8); used to check
    Thm 3.  Scalars only."""
    T = int(V.integer("targets", targets, minimum=2))
    n_ = int(V.integer("n", n, minimum=1))
    sigma = float(V.unit_open("sampling", sampling))
    d = int(V.integer("dummies", dummies, minimum=0))
    if T > 4 or n_ > 8 or d > 8:
        raise ValueError(f"Expected targets <= 4, n <= 8, dummies <= 8 for the enumeration, got targets={T}, n={n_}, dummies={d}.")
    import itertools

    best = -math.inf
    cache = {}
    for x in itertools.product(range(n_ + 1), repeat=T):
        if sum(x) != n_:
            continue
        for t in range(T):
            if x[t] == 0:
                continue
            for t2 in range(T):
                if t2 == t:
                    continue
                xp = list(x)
                xp[t] -= 1
                xp[t2] += 1
                xp = tuple(xp)
                for key in (x, xp):
                    if key not in cache:
                        cache[key] = _capped_output_dist(key, sigma, d, n_, T)
                P, Q = cache[x], cache[xp]
                for o, p in P.items():
                    q = Q.get(o, 0.0)
                    best = max(best, math.inf if q == 0 else math.log(p / q))
    return best


# ---------------------------------------------------------------------------------------------------------
# Thm 4 / App. E: (eps, delta) of the scrambler
# ---------------------------------------------------------------------------------------------------------


class _LStats(NamedTuple):
    a: jax.Array  # -E[L] = e^eps - 1
    b_minus: jax.Array
    b_plus: jax.Array
    b: jax.Array  # b_plus - b_minus
    c: jax.Array  # E[L^2]
    pos_mean: jax.Array  # E[L_+]


def _l_stats(eps, T, sigma) -> _LStats:
    """Moments and range of the privacy amplification variable L of Eq. 2 (T convention), Lemma 5 corrected.

    L = sigma (1 - e^eps) + (1 - sigma) T (1[t'' = t] - e^eps 1[t'' = t']), t'' uniform over the T targets.
    """
    ez = jnp.exp(eps)
    a = jnp.expm1(eps)
    base = -sigma * a  # sigma (1 - e^eps)
    b_plus = (1.0 - sigma) * T + base  # ERRATA: Lemma 5 prints (1 - sigma) T - sigma (1 - e^eps)
    b_minus = base - (1.0 - sigma) * T * ez
    b = (1.0 - sigma) * T * (1.0 + ez)  # ERRATA: Thm 4 prints an extra -2 sigma (1 - e^eps)
    c = sigma * (2.0 - sigma) * a * a + (1.0 - sigma) ** 2 * T * (1.0 + ez * ez)
    pos_mean = jnp.maximum(b_plus, 0.0) / T  # only t'' = t gives a positive value
    return _LStats(a, b_minus, b_plus, b, c, pos_mean)


_l_stats_kernel = float64_jit(lambda e, t, s: _l_stats(e, t, s))


def amplification_variable_bounds(eps, *, targets, sampling):
    """(a, b_minus, b_plus, c): -E[L], the range and E[L^2] of Ladjel's privacy amplification variable (Eq. 2,
    Lemma 5 with the ERRATA sign correction of the upper end), T convention.  Broadcasts."""
    eps = V.nonnegative("eps", eps)
    T = V.integer("targets", targets, minimum=2)
    sigma = V.probability("sampling", sampling)
    V.broadcastable(eps=eps, targets=T, sampling=sigma)
    st = _l_stats_kernel(*_f64(eps, T, sigma))
    return st.a, st.b_minus, st.b_plus, st.c


def _local_eps0(T, sigma):
    """The local guarantee ln(1 + (1 - sigma) T / sigma) of the randomizer (T convention; +inf at sigma = 0)."""
    with np.errstate(divide="ignore"):
        return np.where(sigma > 0, np.log1p((1.0 - sigma) * T / np.where(sigma > 0, sigma, 1.0)), np.inf)


def _check_common(eps, targets, n, sampling, dummies):
    eps = V.nonnegative("eps", eps)
    T = V.integer("targets", targets, minimum=2)
    n_ = V.integer("n", n, minimum=1)
    sigma = V.probability("sampling", sampling)
    d = V.integer("dummies", dummies, minimum=0)
    V.broadcastable(eps=eps, targets=T, n=n_, sampling=sigma, dummies=d)
    return eps, T, n_, sigma, d


def _as_key(key):
    if key is None:
        raise ValueError("Expected key to be a jax.random key for method='monte_carlo', got key=None.")
    return key


def _to_jax(*xs):
    with jax.enable_x64(True):
        return tuple(jnp.asarray(x) for x in xs)


def scrambler_delta(
    eps,
    *,
    targets,
    n,
    sampling,
    dummies,
    method="exact",
    key=None,
    confidence=_DEFAULT_CONFIDENCE,
    samples=_DEFAULT_SAMPLES,
) -> DeltaBound:
    """delta(eps) of the scrambler algorithm ``A_sigma^{n,d}`` (Ladjel et al., Thm 4 and App. E).

    ``n`` messages are locally sampled at rate ``sigma`` (T convention: a sampled message goes to a target
    drawn uniformly among all T targets; blanket mass gamma = sigma), the scrambler adds ``d`` dummies drawn
    from the blanket (uniform targets) and shuffles.  By Lemma 2,
    ``delta <= sum_{j=0}^{n-1} Bin(j; n-1, sigma) E[sum_{i<=j+d+1} L_i]_+ / (j+d+1)``
    (for sigma = 0 this is Thm 4's second case, ``E[sum_{i<=d+1} L_i]_+ / (d+1)``), with L of Eq. 2.
    The evaluation is ``amplify_jax.shuffle``'s engine for the target randomizer (``shuffle.rr_delta``, the
    same code as ``shuffle.blanket_delta`` with ``target_randomizer``); the expectation is bounded by ``method``:

    * ``"hoeffding"`` -- Thm 4 as printed up to the ERRATA corrections: ``a = e^eps - 1``,
      ``b = (1 - sigma) T (1 + e^eps)`` (the paper has ``a = 1 - e^eps`` and an extra ``-2 sigma (1 - e^eps)``).
    * ``"bennett"`` -- the corrected Bennett form of Lemma 3 (ERRATA) with Lemma 5's corrected b_+ and E[L^2].
    * ``"exact"`` -- the exact expectation for this randomized response (ERRATA: sum L depends only on the
      multinomial counts of the two targets).
    * ``"monte_carlo"`` -- Algorithm 2 with ``samples`` draws from ``key`` (the last draw, N1 given N1 + N2,
      integrated out in closed form); ``delta`` is a one-sided upper confidence bound at level ``confidence``
      and ``estimate`` the plain mean (not a bound).  The bound cannot go below about
      ``2 (1 - sigma) T ln(1 / (1 - confidence)) / samples`` (the range of a sample), so small deltas need
      many samples (2^21 for delta = 1e-4 at T = 20, confidence 0.95).

    Every method is capped by E[L_+] per term and delta by 1; delta = 0 where eps >= ln(1 + (1 - sigma) T /
    sigma), the local guarantee (``local`` flag).  Numeric arguments broadcast.

    Raises ValueError for eps < 0, targets < 2, n < 1, sampling outside [0, 1], dummies < 0, an unknown method.
    """
    V.one_of("method", method, METHODS)
    eps, T, n_, sigma, d = _check_common(eps, targets, n, sampling, dummies)
    kw = {}
    if method == "monte_carlo":
        kw = dict(key=_as_key(key), confidence=float(V.unit_open("confidence", confidence)),
                  samples=int(V.integer("samples", samples, minimum=2)))
    T, n_, sigma, d = (np.asarray(x, np.float64) for x in (T, n_, sigma, d))
    delta, est = _SH.rr_delta(method, eps, n_, d, T, sigma, **kw)
    local = np.asarray(eps) >= _local_eps0(T, sigma)
    delta = np.where(local, 0.0, np.minimum(delta, 1.0))
    est = np.where(local, 0.0, np.minimum(est, 1.0))
    return DeltaBound(*_to_jax(delta, est, local))


# eps from delta ------------------------------------------------------------------------------------------


def scrambler_epsilon(
    delta,
    *,
    targets,
    n,
    sampling,
    dummies,
    method="exact",
    key=None,
    confidence=_DEFAULT_CONFIDENCE,
    samples=_DEFAULT_SAMPLES,
    rtol=1e-6,
) -> EpsilonInversion:
    """Smallest eps with :func:`scrambler_delta` <= delta (Ladjel et al. §IV-C: "fix delta and numerically
    search for the lowest eps"), by the core's bracketed bisection (``amplify_jax.calibrate``'s
    ``invert_monotone_kernel``, through ``shuffle.rr_epsilon``: feasible endpoint, relative width ``rtol``).

    Where no eps below the local guarantee ``ln(1 + (1 - sigma) T / sigma)`` reaches delta, that guarantee is
    returned with ``status = 1`` (+inf for sigma = 0, where no finite eps exists; then ``achieved`` is the
    bound at eps = 50).  For Monte Carlo the draws are shared by every eps tried (common random numbers; the
    upper confidence bound is monotone in eps, so the returned eps holds with probability >= ``confidence``;
    see ``shuffle._blanket.rr_epsilon``).
    """
    V.one_of("method", method, METHODS)
    dl = V.unit_open("delta", delta)
    _, T, n_, sigma, d = _check_common(0.0, targets, n, sampling, dummies)
    V.broadcastable(delta=dl, targets=T, n=n_, sampling=sigma, dummies=d)
    r = float(V.positive("rtol", rtol))
    kw = {}
    if method == "monte_carlo":
        kw = dict(key=_as_key(key), confidence=float(V.unit_open("confidence", confidence)),
                  samples=int(V.integer("samples", samples, minimum=2)))
    T, n_, sigma, d = (np.asarray(x, np.float64) for x in (T, n_, sigma, d))
    eps0 = _local_eps0(T, sigma)
    eps, fallback, achieved = _SH.rr_epsilon(method, dl, n_, d, T, sigma, eps0, rtol=r, **kw)
    eps = np.where(fallback, np.broadcast_to(eps0, eps.shape), eps)
    amplified = ~fallback & (eps < eps0)
    achieved = np.where(fallback & np.isfinite(np.broadcast_to(eps0, eps.shape)), 0.0, achieved)
    status = np.where(amplified, 0, 1).astype(np.int32)
    return EpsilonInversion(*_to_jax(eps, status, achieved))


# ---------------------------------------------------------------------------------------------------------
# Thm 1: execution plans
# ---------------------------------------------------------------------------------------------------------


class PlanPrivacy(NamedTuple):
    """(eps, delta) of a whole execution plan (Thm 1) and the data entry points that attain them."""

    eps: np.ndarray
    delta: np.ndarray
    worst_eps_root: str
    worst_delta_root: str


@dataclasses.dataclass(frozen=True)
class ExecutionPlan:
    """An execution plan as a DAG of clusters (Ladjel et al. §II-D, Thm 1).

    ``edges`` are (upstream, downstream) pairs of cluster names: messages flow along them.  Clusters with no
    incoming edge are *data entry points*; the data path of an item entering at a root is every cluster
    reachable from it (an item that fans out to G grouping sets influences all G branches, Example 5; items
    that go to one branch or the other enter at different roots, Example 6).  ``protected`` names the clusters
    with data-dependent communications (the ones that need a countermeasure and carry (eps_i, delta_i));
    the others are data-independent (eps_i = delta_i = 0, e.g. compute nodes sending one message to R).

    Raises ValueError if the plan has a cycle (iterative computations are unrolled, Remark 1) or a protected
    cluster is not in the plan.
    """

    edges: tuple
    protected: tuple = ()

    def __post_init__(self):
        edges = tuple((str(u), str(v)) for u, v in self.edges)
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "protected", tuple(str(p) for p in self.protected))
        nodes = []
        for u, v in edges:
            for x in (u, v):
                if x not in nodes:
                    nodes.append(x)
        missing = [p for p in self.protected if p not in nodes]
        if missing:
            raise ValueError(f"Expected protected clusters to be nodes of the plan, got protected={missing!r}.")
        cycle = _find_cycle(nodes, edges)
        if cycle:
            raise ValueError(
                f"Expected plan to be acyclic (unroll iterations into distinct clusters, Remark 1), "
                f"got plan with the cycle {' -> '.join(cycle)}."
            )
        object.__setattr__(self, "_nodes", tuple(nodes))

    @property
    def nodes(self) -> tuple:
        return self._nodes

    @property
    def roots(self) -> tuple:
        heads = {v for _, v in self.edges}
        return tuple(x for x in self._nodes if x not in heads)

    def data_path(self, root: str) -> tuple:
        """The clusters an item entering at ``root`` can influence (root included), in plan order."""
        succ = {}
        for u, v in self.edges:
            succ.setdefault(u, []).append(v)
        seen, stack = {root}, [root]
        while stack:
            for v in succ.get(stack.pop(), []):
                if v not in seen:
                    seen.add(v)
                    stack.append(v)
        return tuple(x for x in self._nodes if x in seen)


def _find_cycle(nodes, edges):
    succ = {x: [] for x in nodes}
    for u, v in edges:
        succ[u].append(v)
    color = {x: 0 for x in nodes}  # 0 new, 1 on stack, 2 done
    for start in nodes:
        if color[start]:
            continue
        stack = [(start, iter(succ[start]))]
        path = [start]
        color[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[node] = 2
                stack.pop()
                path.pop()
            elif color[nxt] == 1:
                return path[path.index(nxt):] + [nxt]
            elif color[nxt] == 0:
                color[nxt] = 1
                stack.append((nxt, iter(succ[nxt])))
                path.append(nxt)
    return None


def _per_cluster(name, values, plan: ExecutionPlan, check):
    if isinstance(values, Mapping):
        unknown = [c for c in values if str(c) not in plan.nodes]
        if unknown:
            raise ValueError(f"Expected {name} keys to be clusters of the plan, got {name} keys {unknown!r}.")
        return {str(c): check(f"{name}[{c!r}]", v) for c, v in values.items()}
    v = check(name, values)
    return {c: v for c in plan.protected}


def plan_privacy(plan: ExecutionPlan, *, eps, delta) -> PlanPrivacy:
    """Privacy of an execution plan from the guarantees of its clusters (Ladjel et al., Thm 1).

    ``eps`` and ``delta`` are either mappings cluster -> value (array-likes that broadcast; clusters not named
    are data-independent, 0) or one value applied to every ``plan.protected`` cluster.  Result: the worst,
    over data entry points, of the sums of eps_i and of delta_i over the item's data path (each cluster counted
    once: a valid plan's cluster sees an item in at most one of its nodes).  As in the theorem the worst eps and
    the worst delta are taken separately.  delta is capped at 1.
    """
    if not isinstance(plan, ExecutionPlan):
        raise ValueError(f"Expected plan to be an ExecutionPlan, got plan={plan!r}.")
    e = _per_cluster("eps", eps, plan, V.nonnegative)

    def _delta_check(nm, x):
        a = V.probability(nm, x)
        return a

    dl = _per_cluster("delta", delta, plan, _delta_check)
    V.broadcastable(**{f"eps_{k}": v for k, v in e.items()}, **{f"delta_{k}": v for k, v in dl.items()})
    best_e = best_d = None
    root_e = root_d = ""
    for r in plan.roots:
        path = plan.data_path(r)
        se = sum((np.asarray(e[c]) for c in path if c in e), np.float64(0.0))
        sd = sum((np.asarray(dl[c]) for c in path if c in dl), np.float64(0.0))
        if best_e is None or np.any(se > best_e):
            root_e = r if best_e is None or np.all(se >= best_e) else root_e
            best_e = se if best_e is None else np.maximum(best_e, se)
        if best_d is None or np.any(sd > best_d):
            root_d = r if best_d is None or np.all(sd >= best_d) else root_d
            best_d = sd if best_d is None else np.maximum(best_d, sd)
    # Round the float sums up (a few ulps per term) so that the composition never under-reports.
    up = 1.0 + 4.0 * len(plan.nodes) * np.finfo(np.float64).eps
    eps_out = np.asarray(best_e, np.float64) * up
    delta_out = np.minimum(np.asarray(best_d, np.float64) * up, 1.0)
    return PlanPrivacy(eps_out, delta_out, root_e, root_d)


def aggregate_plan(groups: int = 1) -> ExecutionPlan:
    """The Aggregate query of Ladjel et al. (§II-A, Example 1-5, §V-A) with ``groups`` = G grouping sets.

    Each data item ("data") is held by a source node in each grouping set's source cluster ``S1..SG``, which
    sends through that set's scramblers to the compute cluster ``C1..CG``; compute nodes send one message to
    the result node "R".  Protected clusters: ``S1..SG`` (one plan cluster per grouping set standing for its
    SC scrambler clusters, which are never on the same data path: give it the worst of their guarantees).
    Thm 1 then gives eps = G max_i eps_i, delta = G max_i delta_i, as in §V-B.
    """
    G = int(V.integer("groups", groups, minimum=1))
    edges = []
    for g in range(1, G + 1):
        edges += [("data", f"S{g}"), (f"S{g}", f"C{g}"), (f"C{g}", "R")]
    return ExecutionPlan(tuple(edges), tuple(f"S{g}" for g in range(1, G + 1)))


def kmeans_plan(iterations: int = 10) -> ExecutionPlan:
    """The K-means execution plan of Ladjel et al. (§V-A) unrolled over ``iterations`` = I (Remark 1).

    In iteration i the sources (cluster ``S{i}``, through its scramblers) send their tuple to the compute node
    of the closest centroid (cluster ``C{i}``); the new centroids flow back to the sources of iteration i + 1
    (edge ``C{i} -> S{i+1}``) and ``C{I}`` sends the result to "R".  The data item enters every ``S{i}``.
    Protected clusters: ``S1..SI``; Thm 1 gives eps = I max_i eps_i, delta = I max_i delta_i (§V-B).
    """
    I = int(V.integer("iterations", iterations, minimum=1))
    edges = []
    for i in range(1, I + 1):
        edges += [("data", f"S{i}"), (f"S{i}", f"C{i}")]
        edges.append((f"C{i}", f"S{i + 1}") if i < I else (f"C{i}", "R"))
    return ExecutionPlan(tuple(edges), tuple(f"S{i}" for i in range(1, I + 1)))


# ---------------------------------------------------------------------------------------------------------
# §III-C and §IV-D: utility and efficiency metrics
# ---------------------------------------------------------------------------------------------------------


class Costs(NamedTuple):
    """Utility and efficiency of a cluster deployment (Ladjel et al. §II-E, §III-C, §IV-D), in messages of
    size mu = 1.  ``feasible`` is False where sigma = 1 (no real contribution survives; counts are +inf)."""

    sources: np.ndarray  # S_t = ceil(S / (1 - sigma)) source nodes, i.e. user consents
    extra_consents: np.ndarray  # S_t - S
    scramblers: np.ndarray  # SF = ceil(S_t / n) (0 without scramblers)
    messages: np.ndarray  # total volume of exchanged messages (network load)
    extra_messages: np.ndarray  # messages - S: the load added w.r.t. the non-private execution (S messages)
    channels: np.ndarray  # total number of secure channels
    channels_per_source: np.ndarray
    channels_per_scrambler: np.ndarray  # n + T (0 without scramblers): the individual load of §V-B
    channels_per_target: np.ndarray  # at most
    feasible: np.ndarray


def _ceil_safe(x):
    # ceil that is not pushed up by a rounding error of the division (S / (1 - sigma) = 12500.000000000002)
    return np.ceil(x * (1.0 - 8.0 * np.finfo(np.float64).eps))


def _sources_needed(S, sigma):
    with np.errstate(divide="ignore"):
        return np.where(sigma < 1, _ceil_safe(S / np.where(sigma < 1, 1.0 - sigma, 1.0)), np.inf)


def local_costs(*, sources, targets, sampling, dummies) -> Costs:
    """Costs of local sampling + flooding without scramblers (§III-C): S_t = S / (1 - sigma) sources for the
    same utility (rounded up), each sending d + 1 messages on d + 1 channels; S_t (d + 1) messages in total, a
    factor (d + 1) w.r.t. the non-private execution; a target receives from at most S_t sources."""
    S = V.integer("sources", sources, minimum=1).astype(np.float64)
    T = V.integer("targets", targets, minimum=2).astype(np.float64)
    sigma = V.probability("sampling", sampling)
    d = V.integer("dummies", dummies, minimum=0).astype(np.float64)
    shape = V.broadcastable(sources=S, targets=T, sampling=sigma, dummies=d)
    S, T, sigma, d = (np.broadcast_to(x, shape) for x in (S, T, sigma, d))
    St = _sources_needed(S, sigma)
    msgs = St * (d + 1.0)
    zero = np.zeros(shape)
    return Costs(St, St - S, zero, msgs, msgs - S, msgs, d + 1.0, zero, St, sigma < 1)


def scrambler_costs(*, sources, targets, n, sampling, dummies) -> Costs:
    """Costs with scramblers (§IV-D): S_t = S / (1 - sigma) sources, SF = S_t / n scramblers (both rounded up;
    the paper assumes n divides S_t).  Each scrambler opens n + T channels and exchanges 2 n + d messages:
    S_t + SF T channels and S_t + SF (n + d) messages in total."""
    S = V.integer("sources", sources, minimum=1).astype(np.float64)
    T = V.integer("targets", targets, minimum=2).astype(np.float64)
    n_ = V.integer("n", n, minimum=1).astype(np.float64)
    sigma = V.probability("sampling", sampling)
    d = V.integer("dummies", dummies, minimum=0).astype(np.float64)
    shape = V.broadcastable(sources=S, targets=T, n=n_, sampling=sigma, dummies=d)
    S, T, n_, sigma, d = (np.broadcast_to(x, shape) for x in (S, T, n_, sigma, d))
    St = _sources_needed(S, sigma)
    SF = np.where(np.isfinite(St), _ceil_safe(np.where(np.isfinite(St), St, 0.0) / n_), np.inf)
    msgs = St + SF * (n_ + d)
    chans = St + SF * T
    return Costs(St, St - S, SF, msgs, msgs - S, chans, np.ones(shape), n_ + T, SF, sigma < 1)


# ---------------------------------------------------------------------------------------------------------
# Deployment inversions: fewest dummies, smallest sampling rate, messages per scrambler
# ---------------------------------------------------------------------------------------------------------


class Deployment(NamedTuple):
    """Result of a deployment inversion.  ``status`` uses the core's codes (amplify_jax.calibrate): 0 ok,
    1 infeasible within the budget (``value`` is then the budget's end and ``delta`` what it gives), 2 the
    least costly end is already private enough, 3 the re-check failed (not monotone; do not use ``value``).
    ``delta`` is re-computed at ``value`` by :func:`scrambler_delta`; ``limit`` is the budget's end of the
    parameter range; ``messages`` the network load (:func:`scrambler_costs`) at ``value`` when ``sources`` is
    given (else NaN-free zeros)."""

    value: np.ndarray
    status: np.ndarray
    delta: np.ndarray
    limit: np.ndarray
    messages: np.ndarray


def _delta_traced(eps, T, n, sigma, d, method):
    """scrambler_delta as a pure jnp function of traced parameters (shuffle's fixed-window engine)."""
    delta = _SH.rr_delta_traced(method, eps, n, d, T, sigma)
    e0 = jnp.log1p((1.0 - sigma) * T / jnp.where(sigma > 0, sigma, 1.0))
    local = (sigma > 0) & (eps >= e0)
    return jnp.where(local, 0.0, jnp.minimum(delta, 1.0))


def _delta_in_dummies(d, eps, T, n, sigma, method):
    return _delta_traced(eps, T, n, sigma, d, method)


def _delta_in_sampling(sigma, eps, T, n, d, method):
    return _delta_traced(eps, T, n, sigma, d, method)


def _delta_in_n(n, eps, T, sigma, d, method):
    return _delta_traced(eps, T, n, sigma, d, method)


_FN_CACHE: dict = {}


def _bound_fn(f, method):
    import functools

    key = (f.__name__, method)
    if key not in _FN_CACHE:
        _FN_CACHE[key] = functools.partial(f, method=method)
    return _FN_CACHE[key]


def _deploy_method(method):
    V.one_of("method", method, ("hoeffding", "bennett", "exact"))
    return method


def _target(eps, delta):
    return V.nonnegative("eps", eps), V.unit_open("delta", delta)


def _finish_deploy(value, status, limit, eps, delta, T, n, sigma, d, method, sources):
    chk = scrambler_delta(eps, targets=T, n=n, sampling=sigma, dummies=d, method=method).delta
    chk = np.asarray(chk)
    status = np.asarray(status).copy()
    failed = (chk > delta) & ((status == 0) | (status == 2))
    status[failed] = 3
    if sources is None:
        msgs = np.zeros(np.shape(value))
    else:
        msgs = scrambler_costs(sources=sources, targets=T, n=n, sampling=sigma, dummies=d).messages
    return Deployment(np.asarray(value), status, chk, np.asarray(limit), np.asarray(msgs))


def fewest_dummies(
    eps, delta, *, targets, n, sampling, sources=None, max_messages=None, max_dummies=100_000, method="exact"
) -> Deployment:
    """Fewest dummies per scrambler d with ``scrambler_delta(eps) <= delta`` (Ladjel et al. §IV-C, §V-B),
    under a network-load budget: ``max_messages`` bounds the total volume S_t + SF (n + d) of
    :func:`scrambler_costs` (needs ``sources`` = S, the real contributions to keep), which caps d at
    floor((max_messages - S_t - SF n) / SF); without a budget d <= ``max_dummies``.  Integer bisection by
    amplify_jax.calibrate.invert_monotone (delta is non-increasing in d), feasible endpoint re-checked."""
    method = _deploy_method(method)
    eps, delta = _target(eps, delta)
    _, T, n_, sigma, _ = _check_common(0.0, targets, n, sampling, 0)
    dmax = V.integer("max_dummies", max_dummies, minimum=1).astype(np.float64)
    shape = V.broadcastable(eps=eps, delta=delta, targets=T, n=n_, sampling=sigma, max_dummies=dmax)
    if max_messages is not None:
        if sources is None:
            raise ValueError("Expected sources (S) when max_messages is given, got sources=None.")
        budget = V.positive("max_messages", max_messages)
        c0 = scrambler_costs(sources=sources, targets=T, n=n_, sampling=sigma, dummies=0)
        with np.errstate(invalid="ignore"):
            room = np.where(c0.feasible, np.floor((budget - c0.messages) / np.where(c0.feasible, c0.scramblers, 1.0)), -1.0)
        shape = np.broadcast_shapes(shape, np.shape(room))
        limit = np.minimum(room, dmax)
    else:
        limit = dmax
    eps, delta, T, n_, sigma, limit = (np.broadcast_to(np.asarray(x, np.float64), shape) for x in (eps, delta, T, n_, sigma, limit))
    at0 = np.asarray(scrambler_delta(eps, targets=T, n=n_, sampling=sigma, dummies=0, method=method).delta) <= delta
    hi = np.maximum(limit, 2.0)
    inv = invert_monotone(_bound_fn(_delta_in_dummies, method), delta, args=(eps, T, n_, sigma), lo=1.0, hi=hi,
                          feasible="above", integer=True)
    value = np.asarray(inv.value)
    status = np.where(np.asarray(inv.status) == 2, 0, np.asarray(inv.status))  # d = 1 suffices (d = 0 did not)
    value = np.where(at0, 0.0, value)
    status = np.where(at0, 2, status)
    over = (value > limit) & ~at0  # only possible through hi = max(limit, 2)
    status = np.where(over | (limit < 0), 1, status)
    value = np.where(status == 1, np.maximum(limit, 0.0), value)
    return _finish_deploy(value, status, limit, eps, delta, T, n_, sigma, value, method, sources)


def smallest_sampling(
    eps, delta, *, targets, n, dummies, sources=None, max_messages=None, rtol=1e-6, method="exact"
) -> Deployment:
    """Smallest local sampling rate sigma with ``scrambler_delta(eps) <= delta`` (§IV-C, §V-B: sampling costs
    utility, or consents S_t = S / (1 - sigma) at fixed utility), under a network-load budget ``max_messages``
    on the volume S_t + SF (n + d) (needs ``sources``), which caps sigma.  Bisection by
    amplify_jax.calibrate.invert_monotone (delta is non-increasing in sigma), feasible endpoint re-checked;
    sigma = 0 is tried first (status 2 when it suffices)."""
    method = _deploy_method(method)
    eps, delta = _target(eps, delta)
    _, T, n_, _, d = _check_common(0.0, targets, n, 0.0, dummies)
    shape = V.broadcastable(eps=eps, delta=delta, targets=T, n=n_, dummies=d)
    if max_messages is not None:
        if sources is None:
            raise ValueError("Expected sources (S) when max_messages is given, got sources=None.")
        budget = V.positive("max_messages", max_messages)
        S = V.integer("sources", sources, minimum=1).astype(np.float64)
        shape = np.broadcast_shapes(shape, np.shape(budget), np.shape(S))
        # messages(sigma) ~ S (2n + d) / (n (1 - sigma)); start there and step down until the rounded costs fit.
        Sb, nb, db, Tb, Bb = (np.broadcast_to(np.asarray(x, np.float64), shape) for x in (S, n_, d, T, budget))
        lim = np.clip(1.0 - Sb * (2.0 * nb + db) / (nb * Bb), 0.0, 1.0 - 1e-12)
        for _ in range(200):
            c = scrambler_costs(sources=Sb, targets=Tb, n=nb, sampling=lim, dummies=db)
            bad = c.messages > Bb
            if not np.any(bad & (lim > 0)):
                break
            lim = np.where(bad, np.maximum(lim - np.maximum(1e-9, 1e-3 * (1.0 - lim)), 0.0), lim)
        fits0 = scrambler_costs(sources=Sb, targets=Tb, n=nb, sampling=0.0, dummies=db).messages <= Bb
        limit = np.where(fits0, lim, -1.0)
    else:
        limit = np.ones(shape)
    eps, delta, T, n_, d, limit = (np.broadcast_to(np.asarray(x, np.float64), shape) for x in (eps, delta, T, n_, d, limit))
    at0 = np.asarray(scrambler_delta(eps, targets=T, n=n_, sampling=0.0, dummies=d, method=method).delta) <= delta
    hi = np.clip(limit, 2e-9, 1.0)
    inv = invert_monotone(_bound_fn(_delta_in_sampling, method), delta, args=(eps, T, n_, d), lo=1e-9, hi=hi,
                          feasible="above", rtol=rtol)
    value = np.where(at0, 0.0, np.asarray(inv.value))
    status = np.where(np.asarray(inv.status) == 2, 0, np.asarray(inv.status))  # sigma = 1e-9 suffices, 0 did not
    status = np.where(at0, 2, status)
    status = np.where((limit < 0) & ~at0, 1, status)
    value = np.where(status == 1, np.maximum(limit, 0.0), value)
    return _finish_deploy(value, status, limit, eps, delta, T, n_, value, d, method, sources)


def messages_per_scrambler(
    eps, delta, *, targets, sampling, dummies, max_channels=None, max_n=100_000, sources=None, method="exact"
) -> Deployment:
    """Messages per scrambler n for a target (eps, delta) under an individual-load budget (§IV-D, §V-B: a
    scrambler opens n + T secure channels).  ``limit`` is the most messages per scrambler the budget allows,
    ``max_channels - T`` (or ``max_n``); ``value`` is the fewest n with ``scrambler_delta(eps) <= delta``
    (integer bisection by amplify_jax.calibrate.invert_monotone, re-checked; delta is non-increasing in n).
    Every n in [value, limit] meets the target; status 1 when even ``limit`` does not."""
    method = _deploy_method(method)
    eps, delta = _target(eps, delta)
    _, T, _, sigma, d = _check_common(0.0, targets, 1, sampling, dummies)
    nmax = V.integer("max_n", max_n, minimum=1).astype(np.float64)
    shape = V.broadcastable(eps=eps, delta=delta, targets=T, sampling=sigma, dummies=d, max_n=nmax)
    if max_channels is not None:
        ch = V.integer("max_channels", max_channels, minimum=1).astype(np.float64)
        shape = np.broadcast_shapes(shape, np.shape(ch))
        limit = np.minimum(ch - np.asarray(T, np.float64), nmax)
    else:
        limit = nmax
    eps, delta, T, sigma, d, limit = (np.broadcast_to(np.asarray(x, np.float64), shape) for x in (eps, delta, T, sigma, d, limit))
    hi = np.maximum(limit, 2.0)
    inv = invert_monotone(_bound_fn(_delta_in_n, method), delta, args=(eps, T, sigma, d), lo=1.0, hi=hi,
                          feasible="above", integer=True)
    value = np.asarray(inv.value)
    status = np.asarray(inv.status).copy()
    status = np.where((value > limit) | (limit < 1), 1, status)
    value = np.where(status == 1, np.maximum(limit, 1.0), value)
    return _finish_deploy(value, status, limit, eps, delta, T, value, sigma, d, method, sources)


# ---------------------------------------------------------------------------------------------------------
# App. D: empirical output distribution on neighbouring inputs (Figure 6)
# ---------------------------------------------------------------------------------------------------------


class OutputSimulation(NamedTuple):
    """Distinct outputs (target-count vectors, one row each) seen on two neighbouring inputs, with how often
    each occurred (``counts_1``, ``counts_2``) and the empirical log-ratio
    r(O) = |ln(c_1(O) / c_2(O))| (+inf where one count is 0), sorted by decreasing r then by total count."""

    outputs: np.ndarray
    counts_1: np.ndarray
    counts_2: np.ndarray
    log_ratio: np.ndarray
    runs: int


def _sim_counts(rng, first_counts, sigma, d, runs):
    """Target counts of ``runs`` runs of A_sigma^{n,d} (uncapped scrambler, T convention) on one input given by
    its per-target message counts: each message is kept with probability 1 - sigma, and the sampled messages
    plus the d dummies fall uniformly on the T targets (a multinomial)."""
    T = first_counts.shape[0]
    kept = rng.binomial(first_counts[None, :], 1.0 - sigma, size=(runs, T))
    rest = first_counts.sum() + d - kept.sum(axis=1)
    return kept + rng.multinomial(rest, np.full(T, 1.0 / T))


def simulate_scrambler_outputs(*, targets, n, sampling, dummies, runs, seed=0, first=None) -> OutputSimulation:
    """Monte Carlo rerun of Ladjel et al.'s Figure 6 simulation (App. D): run the scrambler algorithm
    A_sigma^{n,d} (local sampling, T convention, then d uniform dummies and a shuffle; only the vector of
    message counts per target is observable) ``runs`` times on each of two neighbouring communication
    graphs, count each distinct output, and return the empirical log-ratios.

    ``first``: the true targets of the n messages of the first graph (default: round robin over the targets);
    the second graph moves message 0 to the next target.  Simulation with NumPy's generator seeded by
    ``seed`` (a figure reproduction, not a bound: nothing here is reported as a guarantee).
    """
    T = int(V.integer("targets", targets, minimum=2))
    n_ = int(V.integer("n", n, minimum=1))
    sigma = float(V.probability("sampling", sampling))
    d = int(V.integer("dummies", dummies, minimum=0))
    runs = int(V.integer("runs", runs, minimum=1))
    if T * math.log(n_ + d + 1) > 62 * math.log(2):
        raise ValueError(f"Expected (n + dummies + 1)**targets < 2**62 for the output codes, got targets={T}, n={n_}, dummies={d}.")
    if first is None:
        first = np.arange(n_) % T
    first = V.integer("first", first, minimum=0)
    if first.shape != (n_,) or np.any(first >= T):
        raise ValueError(f"Expected first to hold n={n_} targets in [0, {T}), got first={first!r}.")
    second = first.copy()
    second[0] = (second[0] + 1) % T
    rng = np.random.default_rng(int(seed))
    c1 = _sim_counts(rng, np.bincount(first, minlength=T), sigma, d, runs)
    c2 = _sim_counts(rng, np.bincount(second, minlength=T), sigma, d, runs)
    base = (n_ + d + 1) ** np.arange(T, dtype=np.int64)  # exact integer code of a count vector
    codes = np.concatenate([c1 @ base, c2 @ base])
    ucodes, inv = np.unique(codes, return_inverse=True)
    uniq = (ucodes[:, None] // base[None, :]) % (n_ + d + 1)
    n1 = np.bincount(inv[:runs], minlength=len(uniq))
    n2 = np.bincount(inv[runs:], minlength=len(uniq))
    with np.errstate(divide="ignore"):
        r = np.abs(np.log(n1.astype(np.float64)) - np.log(n2.astype(np.float64)))
    order = np.lexsort((-(n1 + n2), -r))
    return OutputSimulation(uniq[order], n1[order], n2[order], r[order], runs)


from . import _bounds  # noqa: F401  (registers the bounds)
