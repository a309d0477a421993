"""Closed-form amplification by shuffling: Erlingsson et al. 2019 and Feldman-McMillan-Talwar 2021.

Both take n users, each applying an eps0-LDP local randomizer, whose reports are uniformly shuffled.
Outside its validity region a closed form says nothing; the functions then return the local guarantee
eps0 (shuffling is post-processing of the n local reports, so it never costs privacy) and valid=False.
Where the formula is larger than eps0 the result is capped at eps0 (still valid=True).
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from .._core.domains import check_params
from ..accounting.approx_dp import fmt_closed_form
from .._core.numerics import CLOSED_FORM_MARGIN, float64_jit
from ._params import DELTA, EPS0, EPS0_POSITIVE, EPSILON, N_CLOSED

__all__ = [
    "ClosedForm",
    "erlingsson_epsilon",
    "erlingsson_delta",
    "fmt_closed_form_epsilon",
    "fmt_validity_bound",
]


class ClosedForm(NamedTuple):
    """A closed-form shuffled guarantee: ``epsilon`` (eps0 where the theorem does not apply), ``valid``."""

    epsilon: jnp.ndarray
    valid: jnp.ndarray


#: Erlingsson et al. 2019 conditions (Corollary 9 of the arXiv version): eps0 < 1/2, n >= 1000, delta < 1/100.
ERLINGSSON_MAX_EPS0 = 0.5
ERLINGSSON_MIN_N = 1000
ERLINGSSON_MAX_DELTA = 0.01

_TINY = float(np.finfo(np.float64).tiny)  # the smallest normal float64, ~2.2e-308


def _check(eps0, n, delta):
    return check_params((EPS0, N_CLOSED, DELTA), broadcast=False, eps0=eps0, n=n, delta=delta)


@float64_jit
def _erlingsson_kernel(eps0, n, delta):
    # ln(1/delta) as -log(delta): no rounding of 1/delta; then rounded up by CLOSED_FORM_MARGIN
    eps = 12.0 * eps0 * jnp.sqrt(-jnp.log(delta) / n) * CLOSED_FORM_MARGIN
    valid = (eps0 < ERLINGSSON_MAX_EPS0) & (n >= ERLINGSSON_MIN_N) & (delta < ERLINGSSON_MAX_DELTA)
    return ClosedForm(jnp.where(valid, jnp.minimum(eps, eps0), eps0), valid)


def erlingsson_epsilon(eps0, *, n, delta) -> ClosedForm:
    """Erlingsson, Feldman, Mironov, Raghunathan, Talwar, Thakurta 2019 ("Amplification by shuffling").

    eps = 12 eps0 sqrt(ln(1/delta) / n), valid for eps0 < 1/2, n >= 1000, delta < 1/100 (Corollary 9).
    Broadcasts over eps0, n, delta.  Outside the conditions: epsilon = eps0, valid = False.
    Rounded up (safe side): ln(1/delta) is taken as -log(delta), and the value is multiplied by
    :data:`CLOSED_FORM_MARGIN` (1 + 8 ulps) for the rounding of the remaining operations.
    The formula is pinned by Balle et al.'s notebook values (tested); the three conditions are transcribed
    from the paper as we read it and no public value tests their boundaries -- the FMT closed form and the
    clones bound supersede this bound wherever both apply.
    """
    return _erlingsson_kernel(*_check(eps0, n, delta))


@float64_jit
def _erlingsson_delta_kernel(eps, eps0, n):
    # exponent rounded down by 8 ulps (its five roundings leave it within ~3 ulps; a relative error r of it is a
    # relative error ~r n (eps / (12 eps0))^2, up to ~745 r, of delta), then delta rounded up by CLOSED_FORM_MARGIN
    x = n * (eps / (12.0 * eps0)) ** 2 * (1.0 - 8.0 * 2.0 ** -52)
    # e^-x > 0 always: where it falls below the smallest normal float64 (XLA flushes subnormals to 0) that is the
    # answer, not 0
    delta = jnp.clip(jnp.exp(-x) * CLOSED_FORM_MARGIN, _TINY, 1.0)
    valid = (eps0 < ERLINGSSON_MAX_EPS0) & (n >= ERLINGSSON_MIN_N) & (delta < ERLINGSSON_MAX_DELTA)
    return delta, valid


def erlingsson_delta(epsilon, *, eps0, n):
    """The delta of Erlingsson et al. 2019 at a given eps: exp(-n (epsilon / (12 eps0))^2) (the inverse form).

    Returns (delta, valid); valid as in :func:`erlingsson_epsilon` (delta < 1/100 included).  Rounded up (safe
    side): the exponent n (epsilon / (12 eps0))^2 is rounded down by 8 ulps (as delta -> 1e-300 its rounding, a
    relative ~1e-16, becomes a relative ~1e-13 of delta), and delta is multiplied by :data:`CLOSED_FORM_MARGIN`;
    never below the smallest normal float64 (~2.2e-308; it was 0 below, where the exact delta is positive).
    """
    epsilon, eps0, n = check_params((EPSILON, EPS0_POSITIVE, N_CLOSED), broadcast=False,
                                   epsilon=epsilon, eps0=eps0, n=n)
    return _erlingsson_delta_kernel(epsilon, eps0, n)


@float64_jit
def _fmt_kernel(eps0, n, delta):
    # the formula's one home, rounded to the safe side there (approx_dp.FMT_CLOSED_FORM_MARGIN, its validity
    # condition said false where unsure)
    return ClosedForm(*fmt_closed_form(eps0, n, delta))


def fmt_validity_bound(*, n, delta):
    """ln(n / (16 ln(4/delta))): the largest eps0 for which Feldman-McMillan-Talwar Thm 3.1 applies."""
    n, delta = check_params((N_CLOSED, DELTA), broadcast=False, n=n, delta=delta)
    with np.errstate(over="ignore"):  # 4 / delta overflows below delta ~ 2e-308: ln 4 - ln delta there
        log4 = np.where(delta > 4.0 / np.finfo(np.float64).max, np.log(4.0 / delta), np.log(4.0) - np.log(delta))
    return np.log(n / (16.0 * log4))


def fmt_closed_form_epsilon(eps0, *, n, delta) -> ClosedForm:
    """Feldman, McMillan, Talwar 2021 ("Hiding among the clones", FOCS), Theorem 3.1, closed form.

    eps = ln(1 + (1 - e^-eps0) / (1 + e^-(eps0 + e1)) (a + c)),
    a = 8 sqrt(e^eps0 ln(4/delta) / n), c = 8 e^eps0 / n, e1 = ln(1 + a + c),
    valid for eps0 <= ln(n / (16 ln(4/delta))).  Corrected (docs/errata.md#e-network-fmt-condition,
    docs/errata.md#e-checkin-fmt-condition): Cyffers & Bellet (Thm 7) and Liew et al. (footnote 3) quote the
    condition with ln(2/delta); the source and its authors' code use ln(4/delta), which is what is checked here.

    The factor is the one of the authors' public code (it reproduces their 0.5378040242374512 at n = 1e5,
    eps0 = 4, delta = 1e-6); it is >= the printed (e^eps0 - 1)/(e^eps0 + 1), so of the two it is the
    safe one (docs/errata.md#e-ref-fmt-factor).  Outside the condition: epsilon = eps0 and valid = False.
    Broadcasts over eps0, n, delta.  Rounded up (safe side): below eps0 the formula's float64 value (within ~5
    ulps of its exact value; it was up to ~2 ulps below it) is multiplied by :data:`CLOSED_FORM_MARGIN`.
    """
    return _fmt_kernel(*_check(eps0, n, delta))
