"""Over T steps: composition and conversion (Decor Cor. 12 proof and App. D.1;
docs/errata.md#e-secrdp-closed-form).

The closed form eps = T eps1 + 2 sqrt(T eps1 ln(1/delta)) is the exact minimum over alpha > 1 of Mironov's
conversion of the composed curve alpha T eps1 (:func:`closed_form_epsilon`; its inverse
:func:`closed_form_eps1`); :func:`epsilon` also offers the core's conversions (``amplify_jax.conversions``,
Balle et al. 2020, never above the closed form, and Mironov 2017).
"""

from __future__ import annotations

import numpy as np

import jax.numpy as jnp

from .._core import validate as V
from .._core.domains import check_params
from .._core.numerics import CLOSED_FORM_MARGIN, x64_scope
from ..accounting.conversions import epsilon_from_rdp, rdp_epsilon_terms
from . import _params as P
from ._rounding import _dev
from ._step import step_account


def closed_form_epsilon(eps1, *, steps, delta):
    """eps = T eps1 + 2 sqrt(T eps1 ln(1/delta)) (Decor Cor. 12 proof, docs/errata.md#e-secrdp-closed-form): the
    exact minimum over continuous alpha > 1 of Mironov's conversion alpha T eps1 + ln(1/delta)/(alpha - 1) of
    the T-fold composition of (alpha, alpha eps1)-SecRDP.  Broadcasts over eps1 (>= 0), steps (>= 1), delta
    (in (0, 1)).

    Rounded up (safe side) by :data:`CLOSED_FORM_MARGIN`: ln(1/delta) is taken as -log(delta) (no rounding of
    1/delta, which costs a relative ~1e-16 / ln(1/delta) as delta -> 1), and the five remaining roundings
    (T eps1, the log, the product, the sqrt, the sum) leave the float64 value within ~4 ulps of the formula's."""
    e, t, d = check_params((P.ANY_EPS1, P.ANY_STEPS, P.DELTA), broadcast=False, eps1=eps1, steps=steps, delta=delta)
    x = t * e
    with x64_scope():
        return _dev((x + 2.0 * np.sqrt(x * -np.log(d))) * CLOSED_FORM_MARGIN)


def closed_form_eps1(target_epsilon, *, steps, delta):
    """The inverse of :func:`closed_form_epsilon`: the largest per-step eps1 whose T-step closed form is
    <= target_epsilon, eps1 = (sqrt(ln(1/delta) + eps) - sqrt(ln(1/delta)))^2 / T (App. D.1, step 1), evaluated
    without cancellation as eps^2 / (T (sqrt(ln(1/delta) + eps) + sqrt(ln(1/delta)))^2) and rounded down by
    a relative 1e-12 (safe side)."""
    e, t, d = check_params((P.TARGET_EPSILON, P.ANY_STEPS, P.DELTA), broadcast=False, target_epsilon=target_epsilon,
                           steps=steps, delta=delta)
    ld = np.log(1.0 / d)
    val = (e / (np.sqrt(ld + e) + np.sqrt(ld))) ** 2 / t  # squared after the division: e^2 overflowed at 1e300
    with x64_scope():
        return _dev(val * (1.0 - 1e-12))


_CONVERSION_METHODS = P.CONVERSION_METHODS
_CURVE_ORDERS = np.concatenate([1.0 + np.geomspace(1e-4, 1.0, 60, endpoint=False), np.geomspace(2.0, 1e5, 140)])


def _eps_from_eps1_kernel(eps1, log_delta, steps, orders, method):
    """min over orders of the core conversion of the curve alpha * T * eps1 (jnp, broadcasting)."""
    curve = orders * (steps * eps1)[..., None]
    return jnp.min(rdp_epsilon_terms(orders, curve, log_delta[..., None], method), axis=-1)


def epsilon(graph, *, sigma_unc, sigma_cor, clip, steps, delta, adversary, colluders=None, method="closed_form",
            orders=None):
    """User-level (eps, delta)-SecLDP after T steps of Decor against one adversary.

    method "closed_form": T eps1 + 2 sqrt(T eps1 ln(1/delta)) (docs/errata.md#e-secrdp-closed-form);
    "balle2020" / "mironov": the core's conversion (``amplify_jax.conversions.epsilon_from_rdp``) of the
    composed curve alpha T eps1 on ``orders`` (default: a dense grid from 1.0001 to 1e5), never above the closed
    form for "balle2020".
    """
    V.one_of("method", method, _CONVERSION_METHODS)
    a = _CURVE_ORDERS if orders is None else V.orders("orders", orders)  # checked whatever the method
    check_params((P.ANY_STEPS, P.DELTA), broadcast=False, steps=steps, delta=delta)  # before the accountant runs
    acc = step_account(graph, sigma_unc=sigma_unc, sigma_cor=sigma_cor, clip=clip, adversary=adversary,
                       colluders=colluders)
    if method == "closed_form":
        return closed_form_epsilon(acc.eps1, steps=steps, delta=delta)
    (t,) = check_params((P.ANY_STEPS,), broadcast=False, steps=steps)
    with x64_scope():
        curve = _dev(t[..., None] * np.asarray(acc.eps1)[..., None] * np.asarray(a, np.float64))
    return epsilon_from_rdp(a, curve, delta=delta, method=method).epsilon
