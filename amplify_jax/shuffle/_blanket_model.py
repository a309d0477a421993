"""The privacy blanket, part 1: the local randomizers, the result types and the properties of the privacy
amplification variable L (Balle, Bell, Gascon, Nissim 2019 generic lemma; Ladjel, Anciaux, Bellet, Scerri,
Lemma 4 and Lemma 5 as corrected in docs/errata.md#e-traffic-lemma4-generic and
docs/errata.md#e-traffic-lemma5), and the constants the engines share.

Private: the privacy blanket's user-facing names are listed by :mod:`amplify_jax.shuffle`; the module
:mod:`amplify_jax.shuffle.blanket` gathers them (its docstring gives each randomizer's bounds and their sources).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._core import validate as _validate
from .._core.domains import check_params
from ..accounting.calibrate import INFEASIBLE, NOT_MONOTONE
from .._core.numerics import BENNETT_PHI_REL_ERROR, bennett_phi, float64_jit
from ._params import EPS0, EPS0_POSITIVE, K

BLANKET_METHODS = ("hoeffding", "bennett", "exact", "monte_carlo")
_U = 2.220446049250313e-16
#: relative float64 error of Bennett's exponent k (c / b_+^2) phi(beta): phi's own
#: (:data:`amplify_jax._core.numerics.BENNETT_PHI_REL_ERROR`), then about 8 roundings (beta, c / b_+^2, the products;
#: beta's error carried through u phi'(u) / phi(u) <= 2), each within 2 ulps
_BENNETT_EXPONENT_REL_ERROR = BENNETT_PHI_REL_ERROR + 32 * _U


def _log_bennett(k, a, b_plus, c):
    """log of the corrected Bennett bound on E[sum_{i<=k} L_i]_+ (Ladjel Lemma 3 as corrected by Balle et al.,
    docs/errata.md#e-traffic-lemma3-bennett): (b_+ / ln(1 + beta)) exp(-(k c / b_+^2) phi(beta)), beta =
    a b_+ / c, phi by :func:`amplify_jax._core.numerics.bennett_phi` (no cancellation where beta is tiny), the
    exponent rounded up by its float64 error.  a, b_+, c > 0 (callers mask the other points)."""
    beta = a * b_plus / c
    expo = k * (c / (b_plus * b_plus)) * bennett_phi(beta)
    return jnp.log(b_plus) - jnp.log(jnp.log1p(beta)) - expo * (1.0 - _BENNETT_EXPONENT_REL_ERROR)
_KINDS = ("generic", "laplace", "rr")

#: default half-width, in standard deviations, of every binomial window (the truncated mass, bounded by
#: Chernoff at about exp(-tail_sd^2 / 2), is added to delta).
DEFAULT_TAIL_SD = 9.0


class BlanketRandomizer(NamedTuple):
    """A local randomizer described for the privacy blanket.

    kind: "generic" | "laplace" | "rr" (k-ary randomized response and Ladjel's target randomizer);
    eps0: its local guarantee (inf for the target randomizer with sigma = 0);
    k: number of outputs (T targets) for "rr", 1 otherwise; sigma: the blanket mass gamma for "rr";
    finite_eps0: False where eps0 is inf (the target randomizer at sampling 0: no local guarantee).
    Numeric fields are float64 arrays and broadcast with the other parameters.
    """

    kind: str
    eps0: np.ndarray
    k: np.ndarray
    sigma: np.ndarray
    finite_eps0: np.ndarray | None = None


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
    (eps0,) = check_params((EPS0,), eps0=eps0)
    return BlanketRandomizer("generic", eps0, np.ones_like(eps0), np.exp(-eps0), np.isfinite(eps0))


def laplace_randomizer(eps0) -> BlanketRandomizer:
    """The Laplace mechanism x + Lap(1/eps0) on inputs x in [0, 1] (Balle et al. 2019), gamma = e^(-eps0/2)."""
    (eps0,) = check_params((EPS0_POSITIVE,), eps0=eps0)
    return BlanketRandomizer("laplace", eps0, np.ones_like(eps0), np.exp(-eps0 / 2.0), np.isfinite(eps0))


def randomized_response(eps0, *, k) -> BlanketRandomizer:
    """k-ary randomized response with local guarantee eps0: gamma = k / (e^eps0 + k - 1)."""
    eps0, k = check_params((EPS0, K), eps0=eps0, k=k)
    # rounded down (its float64 value is within 5 half-ulps): the engines use 1 - gamma = (e^eps0 - 1) /
    # (e^eps0 + k - 1), whose digits cancel where gamma ~ 1 (eps0 << 1); a smaller gamma only raises every bound
    # (less blanket; tests/test_soundness.py::test_regressions_blanket_rounded_up: 3e-8 below at eps0 = 0.004)
    gamma = k / (np.exp(eps0) + k - 1.0)
    gamma = np.where(eps0 > 0, gamma * (1.0 - 8 * 2.0 ** -53), gamma)  # eps0 = 0: exactly 1, no privacy loss
    eps0 = eps0 + 0.0 * k
    return BlanketRandomizer("rr", eps0, k + 0.0 * eps0, gamma, np.isfinite(eps0))


def target_randomizer(*, targets, sampling) -> BlanketRandomizer:
    """Ladjel et al.'s R_sigma over T targets (uniform over all T when sampling; the convention of Sec. III,
    App. E-C and Thm 4; Thm 3 draws among the T - 1 other targets, docs/errata.md#e-traffic-targets).

    Its local guarantee is eps0 = ln(1 + (1 - sigma) T / sigma) (inf at sigma = 0: no local privacy).
    """
    T = np.asarray(_validate.integer("targets", targets, minimum=2), dtype=np.float64)
    sigma = _validate.probability("sampling", sampling)
    _validate.broadcastable(targets=T, sampling=sigma)
    with np.errstate(divide="ignore"):
        eps0 = np.where(sigma > 0, np.log1p((1.0 - sigma) * T / np.where(sigma > 0, sigma, 1.0)), np.inf)
    eps0 = eps0 + 0.0 * T
    return BlanketRandomizer("rr", eps0, T + 0.0 * sigma, sigma + 0.0 * T, np.isfinite(eps0))


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
    """(gamma, l_max, l_min, c) at eps; see the module docstring for each randomizer's source.

    generic: Balle et al.'s bounds, unscaled (Ladjel Lemma 4 prints them times gamma, valid only when gamma is
    the randomizer's true total-variation similarity, not the lower bound e^-eps0 used here;
    docs/errata.md#e-traffic-lemma4-generic).  rr (target randomizer, T convention): l_max =
    (1 - sigma) T + sigma (1 - e^eps) (Lemma 5 prints the sign of sigma (1 - e^eps) flipped;
    docs/errata.md#e-traffic-lemma5), so l_max - l_min = (1 - sigma) T (1 + e^eps), the range b that Thm 4
    prints with an extra -2 sigma (1 - e^eps) (docs/errata.md#e-traffic-thm4-b).
    """
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


def blanket_properties(epsilon, *, randomizer) -> BlanketProperties:
    """gamma and the bounds on L (max, min, range, second moment) of a randomizer at ``epsilon`` (broadcasts).
    ``epsilon`` in [0, :data:`PROPERTIES_MAX_EPSILON`]."""
    r = _check_randomizer(randomizer)
    eps = _validate.between("epsilon", _validate.nonnegative("epsilon", epsilon), 0.0, PROPERTIES_MAX_EPSILON)
    _validate.broadcastable(epsilon=eps, eps0=r.eps0, k=r.k, sigma=r.sigma)
    return _props_kernel(r.kind, eps, r.eps0, r.k, r.sigma)


# ---------------------------------------------------------------------------------------------------------
# Shared by the engines: the eps clip, and the eps-from-delta search range and fallback

_EPS_CLIP = 300.0  # delta is non-increasing in eps: evaluating at min(eps, 300) is an upper bound, e^eps finite
#: Largest epsilon :func:`blanket_properties` takes (the engines' clip, the registry's epsilon domain): E[L] =
#: 1 - e^eps and the bounds on L leave float64 from eps ~ 709 (-inf and NaN at 1e300).
PROPERTIES_MAX_EPSILON = _EPS_CLIP

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
