"""Sec. IV-C, Thm 4 and App. E (Lemma 2, Lemma 3, Lemma 5, Algorithm 2) of Ladjel, Anciaux, Bellet, Scerri:
(eps, delta) of the scrambler with local sampling and dummies, T convention, and its inversion over eps (the
lowest eps at a delta, §IV-C).  The Lemma 2 sum is evaluated by the privacy blanket engine of
:mod:`amplify_jax.shuffle.blanket` for the target randomizer (``rr_delta`` / ``rr_epsilon``).  Corrected (see
docs/errata.md, section "Ladjel et al."): Thm 4's a = e^eps - 1 and b = (1 - sigma) T (1 + e^eps); Lemma 5's
upper end of L; Lemma 3's Bennett bound in its corrected form."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._core import validate as V
from .._core.domains import check_params
from .._core.numerics import CLOSED_FORM_MARGIN, float64_jit
from ..shuffle.blanket import rr_delta, rr_epsilon
from .._core.status import Status
from ._common import _f64
from ._params import DELTA, DUMMIES, EPSILON, MAX_EPSILON, N, SAMPLING, TARGETS

METHODS = ("hoeffding", "bennett", "exact", "monte_carlo")

_DEFAULT_SAMPLES = 1 << 18
_DEFAULT_CONFIDENCE = 0.99


class DeltaBound(NamedTuple):
    """delta(eps) of the scrambler.  ``delta`` is the sound value (the upper confidence bound for Monte
    Carlo); ``estimate`` is the plain Monte Carlo mean (equal to ``delta`` for deterministic methods);
    ``local`` is True where eps >= the local guarantee of the randomizer, so delta = 0 by post-processing."""

    delta: jax.Array
    estimate: jax.Array
    local: jax.Array


class EpsilonInversion(NamedTuple):
    """Smallest eps with delta(eps) <= target, in ``epsilon``.  ``status`` holds
    :class:`amplify_jax.status.Status` codes: ``Status.OK`` (0) where it was found below the local guarantee,
    ``Status.FALLBACK`` (5) where no eps below the local guarantee reaches delta, so ``epsilon`` is the local
    guarantee (Thm 2 with d = 0; +inf when sigma = 0, where no finite eps exists).  (Before the naming scheme
    the fallback was coded 1.)  ``achieved`` is delta re-evaluated at ``epsilon``."""

    epsilon: jax.Array
    status: jax.Array
    achieved: jax.Array


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
    # Lemma 5 prints (1 - sigma) T - sigma (1 - e^eps) (docs/errata.md#e-traffic-lemma5)
    b_plus = (1.0 - sigma) * T + base
    b_minus = base - (1.0 - sigma) * T * ez
    b = (1.0 - sigma) * T * (1.0 + ez)  # Thm 4 prints an extra -2 sigma (1 - e^eps): docs/errata.md#e-traffic-thm4-b
    c = sigma * (2.0 - sigma) * a * a + (1.0 - sigma) ** 2 * T * (1.0 + ez * ez)
    pos_mean = jnp.maximum(b_plus, 0.0) / T  # only t'' = t gives a positive value
    return _LStats(a, b_minus, b_plus, b, c, pos_mean)


_l_stats_kernel = float64_jit(lambda e, t, s: _l_stats(e, t, s))
#: Largest epsilon :func:`amplification_variable_bounds` takes (the registry's epsilon domain): E[L] = 1 - e^eps and
#: the range of L leave float64 from eps ~ 709 (+-inf at 1e300).
L_STATS_MAX_EPSILON = MAX_EPSILON


def amplification_variable_bounds(epsilon, *, targets, sampling):
    """(a, b_minus, b_plus, c) at ``epsilon``: -E[L], the range and E[L^2] of Ladjel's privacy amplification
    variable (Eq. 2, Lemma 5 with the sign of the upper end corrected: docs/errata.md#e-traffic-lemma5),
    T convention.  Broadcasts.  ``epsilon`` in [0, :data:`L_STATS_MAX_EPSILON`]."""
    eps, T, sigma = check_params((EPSILON, TARGETS, SAMPLING), broadcast=False,
                                 epsilon=epsilon, targets=targets, sampling=sampling)
    st = _l_stats_kernel(*_f64(eps, T, sigma))
    return st.a, st.b_minus, st.b_plus, st.c


def _local_eps0(T, sigma):
    """The local guarantee ln(1 + (1 - sigma) T / sigma) of the randomizer (T convention; +inf at sigma = 0)."""
    with np.errstate(divide="ignore", over="ignore"):  # sigma subnormal: T / sigma overflows, +inf (the safe side)
        return np.where(sigma > 0, np.log1p((1.0 - sigma) * T / np.where(sigma > 0, sigma, 1.0)), np.inf)


def _as_key(key):
    if key is None:
        raise ValueError("Expected key to be a jax.random key for method='monte_carlo', got key=None.")
    return key


def _mc_options(method, key, confidence, samples):
    """The Monte Carlo keywords of the engine, validated whatever the method (a bad value is refused even where
    the method does not use it: {} for the deterministic methods)."""
    confidence = V.scalar("confidence", confidence, V.unit_open)
    samples = V.count("samples", samples, minimum=2)
    if method != "monte_carlo":
        return {}
    return dict(key=_as_key(key), confidence=confidence, samples=samples)


def _to_jax(*xs):
    with jax.enable_x64(True):
        return tuple(jax.device_put(np.asarray(x)) for x in xs)  # jnp.asarray compiles a program per shape


def scrambler_delta(
    epsilon,
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
    """delta(epsilon) of the scrambler algorithm ``A_sigma^{n,d}`` (Ladjel et al., Thm 4 and App. E).

    ``n`` messages are locally sampled at rate ``sigma`` (T convention: a sampled message goes to a target
    drawn uniformly among all T targets; blanket mass gamma = sigma), the scrambler adds ``d`` dummies drawn
    from the blanket (uniform targets) and shuffles.  By Lemma 2,
    ``delta <= sum_{j=0}^{n-1} Bin(j; n-1, sigma) E[sum_{i<=j+d+1} L_i]_+ / (j+d+1)``
    (for sigma = 0 this is Thm 4's second case, ``E[sum_{i<=d+1} L_i]_+ / (d+1)``), with L of Eq. 2.
    The evaluation is the privacy blanket engine for the target randomizer (``shuffle.blanket.rr_delta``,
    the same code as ``shuffle.blanket_delta`` with ``target_randomizer``); the expectation is bounded by
    ``method``:

    * ``"hoeffding"`` -- Thm 4 as printed up to two corrections: ``a = e^eps - 1``,
      ``b = (1 - sigma) T (1 + e^eps)`` (the paper has ``a = 1 - e^eps`` and an extra ``-2 sigma (1 - e^eps)``;
      docs/errata.md#e-traffic-thm4-a, docs/errata.md#e-traffic-thm4-b).
    * ``"bennett"`` -- the corrected Bennett form of Lemma 3 (docs/errata.md#e-traffic-lemma3-bennett) with
      Lemma 5's corrected b_+ (docs/errata.md#e-traffic-lemma5) and E[L^2].
    * ``"exact"`` -- the exact expectation for this randomized response (sum L depends only on the
      multinomial counts of the two targets; docs/errata.md#e-traffic-monte-carlo).
    * ``"monte_carlo"`` -- Algorithm 2 with ``samples`` draws from ``key`` (the last draw, N1 given N1 + N2,
      integrated out in closed form); ``delta`` is a one-sided upper confidence bound at level ``confidence``
      and ``estimate`` the plain mean (not a bound).  The bound cannot go below about
      ``2 (1 - sigma) T ln(1 / (1 - confidence)) / samples`` (the range of a sample), so small deltas need
      many samples (2^21 for delta = 1e-4 at T = 20, confidence 0.95).

    Every method is capped by E[L_+] per term and delta by 1; delta = 0 where eps >= ln(1 + (1 - sigma) T /
    sigma), the local guarantee (``local`` flag).  Numeric arguments broadcast.

    Raises ValueError (one line naming the parameter) outside the family's Params (``_params.py``): epsilon in
    [0, 300], targets in 2..10**6, n in 1..10**7, sampling in [0, 1], dummies in 0..10**6; or an unknown method.
    """
    V.one_of("method", method, METHODS)
    eps, T, n_, sigma, d = check_params((EPSILON, TARGETS, N, SAMPLING, DUMMIES), broadcast=False,
                                        epsilon=epsilon, targets=targets, n=n, sampling=sampling, dummies=dummies)
    kw = _mc_options(method, key, confidence, samples)
    T, n_, sigma, d = (np.asarray(x, np.float64) for x in (T, n_, sigma, d))
    delta, est = rr_delta(method, eps, n_, d, T, sigma, **kw)
    # the local guarantee rounded up (its float64 value is within 3 ulps): at eps one ulp below the true one,
    # delta is not 0 (Lemma 2's b_+ > 0)
    local = np.asarray(eps) >= _local_eps0(T, sigma) * (1.0 + 8 * 2.0 ** -53)
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
    ``invert_monotone_kernel``, through ``shuffle.blanket.rr_epsilon``: feasible endpoint, relative width
    ``rtol``).

    Where no eps below the local guarantee ``ln(1 + (1 - sigma) T / sigma)`` reaches delta, that guarantee is
    returned with ``status = Status.FALLBACK``, rounded up by 8 ulps (safe side; +inf for sigma = 0, where no finite
    eps exists; then ``achieved`` is the bound at eps = 50).  For Monte Carlo the draws are shared by every eps tried (common random numbers; the
    upper confidence bound is monotone in eps, so the returned eps holds with probability >= ``confidence``;
    see ``shuffle.blanket.rr_epsilon``).
    """
    V.one_of("method", method, METHODS)
    dl, T, n_, sigma, d = check_params((DELTA, TARGETS, N, SAMPLING, DUMMIES), broadcast=False,
                                       delta=delta, targets=targets, n=n, sampling=sampling, dummies=dummies)
    r = V.tolerance("rtol", rtol)  # one number in [1e-15, 0.5]
    kw = _mc_options(method, key, confidence, samples)
    T, n_, sigma, d = (np.asarray(x, np.float64) for x in (T, n_, sigma, d))
    eps0 = _local_eps0(T, sigma)
    eps, fallback, achieved = rr_epsilon(method, dl, n_, d, T, sigma, eps0, rtol=r, **kw)
    eps = np.where(fallback, np.broadcast_to(eps0, eps.shape), eps)
    amplified = ~fallback & (eps < eps0)
    # where the answer is the local guarantee (fallback, or the search ended at it), it is rounded up (its float64
    # value is within ~5 ulps of the exact one, and was up to ~1 ulp below it)
    eps = np.where(amplified, eps, np.maximum(eps, eps0 * CLOSED_FORM_MARGIN))
    achieved = np.where(fallback & np.isfinite(np.broadcast_to(eps0, eps.shape)), 0.0, achieved)
    status = np.where(amplified, Status.OK, Status.FALLBACK).astype(np.int32)
    return EpsilonInversion(*_to_jax(eps, status, achieved))
