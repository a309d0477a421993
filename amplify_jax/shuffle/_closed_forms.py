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
from .._core.numerics import float64_jit
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


def _check(eps0, n, delta):
    return check_params((EPS0, N_CLOSED, DELTA), broadcast=False, eps0=eps0, n=n, delta=delta)


@float64_jit
def _erlingsson_kernel(eps0, n, delta):
    eps = 12.0 * eps0 * jnp.sqrt(jnp.log(1.0 / delta) / n)
    valid = (eps0 < ERLINGSSON_MAX_EPS0) & (n >= ERLINGSSON_MIN_N) & (delta < ERLINGSSON_MAX_DELTA)
    return ClosedForm(jnp.where(valid, jnp.minimum(eps, eps0), eps0), valid)


def erlingsson_epsilon(eps0, *, n, delta) -> ClosedForm:
    """Erlingsson, Feldman, Mironov, Raghunathan, Talwar, Thakurta 2019 ("Amplification by shuffling").

    eps = 12 eps0 sqrt(ln(1/delta) / n), valid for eps0 < 1/2, n >= 1000, delta < 1/100 (Corollary 9).
    Broadcasts over eps0, n, delta.  Outside the conditions: epsilon = eps0, valid = False.
    The formula is pinned by Balle et al.'s notebook values (tested); the three conditions are transcribed
    from the paper as we read it and no public value tests their boundaries -- the FMT closed form and the
    clones bound supersede this bound wherever both apply.
    """
    return _erlingsson_kernel(*_check(eps0, n, delta))


@float64_jit
def _erlingsson_delta_kernel(eps, eps0, n):
    delta = jnp.exp(-n * (eps / (12.0 * eps0)) ** 2)
    valid = (eps0 < ERLINGSSON_MAX_EPS0) & (n >= ERLINGSSON_MIN_N) & (delta < ERLINGSSON_MAX_DELTA)
    return delta, valid


def erlingsson_delta(epsilon, *, eps0, n):
    """The delta of Erlingsson et al. 2019 at a given eps: exp(-n (epsilon / (12 eps0))^2) (the inverse form).

    Returns (delta, valid); valid as in :func:`erlingsson_epsilon` (delta < 1/100 included).
    """
    epsilon, eps0, n = check_params((EPSILON, EPS0_POSITIVE, N_CLOSED), broadcast=False,
                                   epsilon=epsilon, eps0=eps0, n=n)
    return _erlingsson_delta_kernel(epsilon, eps0, n)


@float64_jit
def _fmt_kernel(eps0, n, delta):
    return ClosedForm(*fmt_closed_form(eps0, n, delta))  # the formula's one home: amplify_jax.approx_dp


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
    Broadcasts over eps0, n, delta.
    """
    return _fmt_kernel(*_check(eps0, n, delta))
