"""Sec. IV-A/IV-B, Thm 3, App. C and Algorithm 1 (B = True) of Ladjel, Anciaux, Bellet, Scerri: pure eps of
the capped scrambler, T - 1 convention (a sampled message goes uniformly to one of the T - 1 other targets).
Thm 3 as printed under-reports (found by this project, docs/errata.md#e-traffic-thm3; see
:func:`scrambler_pure_epsilon`): the sound local guarantee is reported, the printed formula is kept for
Figure 5, and
:func:`scrambler_pure_epsilon_exact` enumerates the capped algorithm exactly on small instances."""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from .._core import validate as V
from .._core.domains import check_params
from .._core.numerics import CLOSED_FORM_MARGIN, float64_jit, log_comb, logsumexp
from ._common import _f64
from ._params import (EXACT_DUMMIES, EXACT_N, EXACT_SAMPLING, EXACT_SAMPLING_ANY, EXACT_TARGETS, N,
                      PURE_DUMMIES, SAMPLING, TARGETS, THM3_MAX_DUMMIES)


# ---------------------------------------------------------------------------------------------------------
# Thm 3: pure eps of the capped scrambler
# ---------------------------------------------------------------------------------------------------------

_THM3_MAX_D = THM3_MAX_DUMMIES  # static length of the k-sum in Thm 3 (d <= n - 1 is summed exactly up to this)


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
    # Local guarantee of the T - 1 convention randomizer: |ln(sbar (T - 1) / sigma)| (post-processing bound),
    # rounded up (CLOSED_FORM_MARGIN).  Near ratio 1 (|z| < 1/4) as |log1p(z)|, z = ratio - 1 = ((T - 1) - T sigma)
    # / sigma with the numerator free of cancellation error (sigma > 1/2 there is split at 2^-26 so that both
    # products with T < 2^20 are exact): within ~3 ulps (XLA's CPU log1p is within ~1.3 ulps on [-1/4, 1/4], but
    # ~120 ulps low in magnitude on (-1/2, -0.3), hence 1/4).  Elsewhere |ln(ratio)| of the rounded ratio (two
    # roundings: absolute error ~1 ulp of 1, eps >= ln 1.25): within ~5 ulps; the difference of the logs where
    # the ratio overflows (eps > 700).
    s_hi = jnp.floor(s1 * 2.0 ** 26) * 2.0 ** -26
    z = (((T1 - 1.0) - s_hi * T1) - (s1 - s_hi) * T1) / jnp.where(s1 > 0, s1, 1.0)
    ratio = sbar1 * (T1 - 1.0) / jnp.where(s1 > 0, s1, 1.0)
    log_diff = jnp.log(jnp.where(sbar1 > 0, sbar1, 1.0)) - jnp.log(jnp.where(r1 > 0, r1, 1.0))
    log_ratio = jnp.where(jnp.isfinite(ratio), jnp.log(jnp.where(ratio > 0, ratio, 1.0)), log_diff)
    eps_local = jnp.abs(jnp.where(jnp.abs(z) < 0.25, jnp.log1p(z), log_ratio)) * CLOSED_FORM_MARGIN
    eps_local = jnp.where((r1 > 0) & (sbar1 > 0), eps_local, jnp.inf)
    valid = (d1 >= 1) & (d1 <= n1 - 1) & (sbar1 >= r1) & (s1 > 0)
    printed = jnp.where(valid, jnp.minimum(jnp.maximum(eps_thm3, 0.0), eps_local), eps_local)
    return printed, eps_local, valid


class ScramblerPureEpsilon(NamedTuple):
    """Pure eps of the capped scrambler.  ``epsilon``: the sound guarantee we report, the local guarantee of the
    T - 1 convention randomizer (post-processing; Thm 3 as printed is not sound, see
    :func:`scrambler_pure_epsilon`).  ``printed``: Thm 3's formula as printed (where its hypotheses hold, capped
    by the local guarantee; elsewhere the local guarantee) -- for reproducing Figure 5 only, it can be smaller
    than the true eps.  ``valid``: the theorem's hypotheses hold."""

    epsilon: jax.Array
    printed: jax.Array
    valid: jax.Array


def scrambler_pure_epsilon(*, targets, n, sampling, dummies) -> ScramblerPureEpsilon:
    """Pure eps of the capped scrambler ``tilde A_sigma^{n,d}`` (Ladjel et al., Thm 3, App. C), in log space.

    Thm 3 as printed: ``e^eps = sum_k C(d,k) C(n-1,k) sbar^k R^(n-k-1) (sbar + k R^2/sbar)
    / sum_k C(d,k) C(n-1,k) sbar^k R^(n-k-1) (R + k R^2/sbar)``, ``sbar = 1 - sigma``, ``R = sigma / (T - 1)``
    (T - 1 convention: a sampled message goes to one of the T - 1 other targets), k = 0..min(d, n - 1).
    Hypotheses: d in {1, ..., n - 1}, ``1 - sigma >= sigma / (T - 1)`` (the worst-case argument of App. C
    assumes the true target is the likeliest), sigma > 0 (``valid``).

    NOT SOUND AS PRINTED (found by this project, docs/errata.md#e-traffic-thm3): exact enumeration of the
    capped algorithm (:func:`scrambler_pure_epsilon_exact`) gives a larger worst-case log-ratio, e.g. T = 3,
    n = 3, d = 1, sigma = 0.3: the formula gives 1.40415, the exact worst case 1.47174, attained at the very
    configuration App. C identifies (inputs {1, n-1, 0} / {0, n-1, 1}, output {n, d, 0}).  By hand, at that
    configuration P(O | G) = sbar R^2 / 2 + (2 sbar^2 R + R^3) / 3: the formula drops the dummy probabilities
    (1/T before t is capped, 1/(T - 1) after), which differ between its k terms, and counts 2 R^3 instead of
    R^3.  So ``epsilon`` reports the sound local guarantee ``ln((1 - sigma)(T - 1) / sigma)`` (the scrambler
    post-processes the locally randomized messages), and ``printed`` keeps the formula for Figure 5.  +inf where
    the local guarantee is infinite (sigma = 0 or 1).  Rounded up (safe side): evaluated as log1p of the ratio
    minus 1 near ratio 1 (it was up to ~2e-15 relative below the exact value there), then multiplied by
    ``CLOSED_FORM_MARGIN`` (1 + 8 ulps).
    """
    T, n_, sigma, d = check_params((TARGETS, N, SAMPLING, PURE_DUMMIES), broadcast=False,
                                   targets=targets, n=n, sampling=sampling, dummies=dummies)
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


#: Smallest sampling :func:`scrambler_pure_epsilon_exact` takes: its output probabilities are products of at most
#: n + dummies <= 16 factors sigma or 1 - sigma, >= 1e-240 from here on; at sampling = 1e-300 a neighbour's
#: probability underflowed to 0 and the enumeration answered +inf.
EXACT_MIN_SAMPLING = EXACT_SAMPLING.domain.lo


def scrambler_pure_epsilon_exact(*, targets, n, sampling, dummies) -> float:
    """Exact pure eps of the capped scrambler (Algorithm 1 with B = True after the T - 1 convention local
    randomizer) by enumerating every input count vector, every neighbour (one message moved) and every output:
    max log P(O | G) / P(O | G').  Small instances only (targets <= 4, n <= 8, dummies <= 8); used to check
    Thm 3.  Scalars only; ``sampling`` in [:data:`EXACT_MIN_SAMPLING`, 1)."""
    sigma = V.scalar("sampling", sampling, EXACT_SAMPLING.domain.check)
    return _scrambler_pure_exact_any_sampling(targets=targets, n=n, sampling=sigma, dummies=dummies)


def _scrambler_pure_exact_any_sampling(*, targets, n, sampling, dummies) -> float:
    """:func:`scrambler_pure_epsilon_exact` at any sampling in (0, 1): +inf where a probability underflowed
    (sampling ~1e-300; the registry's ``traffic.scrambler-pure-exact`` flags it with status error)."""
    # scalars: one enumeration
    T, n_, d = (int(V.scalar(nm, x, p.domain.check)) for nm, x, p in
                (("targets", targets, EXACT_TARGETS), ("n", n, EXACT_N), ("dummies", dummies, EXACT_DUMMIES)))
    sigma = V.scalar("sampling", sampling, EXACT_SAMPLING_ANY.domain.check)
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
                    if p > 0:  # p underflowed to 0 (sampling ~1e-300): this output has no loss to report
                        best = max(best, math.inf if q == 0 else math.log(p / q))
    return best
