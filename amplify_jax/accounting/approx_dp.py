"""Approximate-DP building blocks, one home each: the kernels that several papers' bounds are made of.

Pure ``jnp`` functions of arrays that broadcast, to be traced inside other kernels (run them under
:func:`amplify_jax.internal.float64_jit` or :func:`~amplify_jax.internal.x64_scope`).  They do not validate:
the public function of the bound that uses them does.  Each returns its value on the safe side.

- :func:`advanced_composition` -- Dwork, Rothblum, Vadhan 2010, Thm III.3.
- :func:`analytic_gaussian_log_delta`, :func:`analytic_gaussian_epsilon` -- Balle & Wang 2018, Thm 8.
- :func:`subsampled_epsilon` -- amplification by subsampling, Balle, Barthe, Gaboardi 2018, Thm 9.
- :func:`fmt_closed_form` -- amplification by shuffling, Feldman, McMillan, Talwar 2021, Thm 3.1.
"""

from __future__ import annotations

import jax
import jax.scipy.special
import jax.numpy as jnp
import numpy as np

from .._core.numerics import CLOSED_FORM_MARGIN, log1mexp, log1p

# every block here is a traceable kernel without validation: public from amplify_jax.internal (their one public
# home); advanced_composition_overflows (the public functions' input check) and the margins are importable here
__all__ = []

#: Relative margin on the analytic Gaussian's eps: extra slack only (the rounding of its delta evaluation is
#: covered by the upper bound of :func:`analytic_gaussian_log_delta` that its bisection tests).
ANALYTIC_GAUSSIAN_MARGIN = 1e-10
#: Factor (1 + 8 ulps) on advanced composition's float64 value: covers the rounding of its evaluation.
ADVANCED_COMPOSITION_MARGIN = CLOSED_FORM_MARGIN
#: Factor (1 + 8 ulps) on the subsampling eps ln(1 + q (e^eps - 1)): covers the rounding of its evaluation.
SUBSAMPLED_MARGIN = CLOSED_FORM_MARGIN
#: Factor (1 + 8 ulps) on the Feldman-McMillan-Talwar closed form's float64 value (below its eps0 cap).
FMT_CLOSED_FORM_MARGIN = CLOSED_FORM_MARGIN


def advanced_composition(eps, steps, log_inv_delta_prime):
    """eps of ``steps`` adaptive (eps, delta)-DP mechanisms (Dwork, Rothblum, Vadhan 2010, Thm III.3):

        sqrt(2 k ln(1/delta')) eps + k eps (e^eps - 1),   with delta_total = k delta + delta'.

    ``log_inv_delta_prime`` = ln(1/delta'); ``steps`` may be real (a high-probability bound on a count).
    Rounded up by :data:`ADVANCED_COMPOSITION_MARGIN`: both terms are positive, and their float64 evaluation
    (a log, a sqrt, an expm1, four products and a sum, each within an ulp or so) is within ~6 ulps of the exact
    value of the formula at the given inputs (the soundness campaign found it 6e-16 relative below mpmath at
    k = 1e12, eps = 1.9e-4).
    """
    v = jnp.sqrt(2.0 * steps * log_inv_delta_prime) * eps + steps * eps * jnp.expm1(eps)
    return v * ADVANCED_COMPOSITION_MARGIN


def advanced_composition_overflows(eps, steps, log_inv_delta_prime):
    """Where :func:`advanced_composition` leaves float64 (+inf: k eps e^eps beyond 1.8e308), in NumPy, for the
    public functions to refuse such inputs before their kernels run."""
    with np.errstate(over="ignore", invalid="ignore"):
        v = (np.sqrt(2.0 * np.asarray(steps, dtype=np.float64) * log_inv_delta_prime) * eps
             + steps * eps * np.expm1(np.asarray(eps, dtype=np.float64))) * ADVANCED_COMPOSITION_MARGIN
    return ~np.isfinite(v)


#: Unit roundoff bound used by the error bounds below (one ulp of 1).
_U = 2.0 ** -52
_LN4 = float(np.log(4.0))
#: Order of the asymptotic series of log Phi(x) below x = -20 (jax.scipy's default 3 truncates it ~4e-9
#: absolute below the exact value at x = -20: 105 / x^8; order 10 leaves 21!! / x^22 < 4e-19 there, and
#: log Phi is then within 2 ulps relative on x < 0, measured against mpmath at 3,500 points).
_LOG_NDTR_SERIES_ORDER = 10


def _log_ndtr_with_error(x, x_err):
    """(log Phi(x), a bound on its absolute error): ``x_err`` bounds the error of ``x`` itself (propagated
    with the slope phi/Phi <= max(-x, 0) + 1, Mills' ratio), plus 8 ulps relative of the value (measured <= 3
    ulps relative on x < 1 against mpmath) and 2 ulps absolute (log of a CDF that rounds near 1, x > 0)."""
    v = jax.scipy.special.log_ndtr(x, series_order=_LOG_NDTR_SERIES_ORDER)
    slope = jnp.maximum(-x, 0.0) + 1.0
    return v, 2.0 * slope * x_err + 8.0 * _U * jnp.abs(v) + 2.0 * _U


def analytic_gaussian_log_delta(ratio, eps):
    """ln delta(eps) of the Gaussian mechanism with sensitivity / sigma = ``ratio`` (Balle & Wang 2018, Thm 8):

        delta(eps) = Phi(r/2 - eps/r) - e^eps Phi(-r/2 - eps/r),   decreasing in eps,

    returned as an UPPER bound of the exact value at the given float64 inputs (the safe side).  With
    A = ln Phi(r/2 - eps/r) and B = eps + ln Phi(-r/2 - eps/r), ln delta = A + ln(1 - e^(B - A)); at small
    ratio A and B nearly cancel and the float64 errors of A and B (tens of ulps of |A| ~ (eps/r)^2 / 2) are
    amplified by 1 / (1 - e^(B - A)).  So A is taken at its computed value plus a bound of its error, B minus
    its bound (ln(e^A - e^B) increases in A and decreases in B), their difference's log1mexp plus its own
    rounding (256 ulps relative where 1 - e^(B - A) is in (0.47, 1): XLA's CPU log1p is up to 128 ulps off
    there, see numerics.log1p; 8 elsewhere); ln Phi(A) alone (delta <= Phi(r/2 - eps/r)) where the bounds
    overlap.  The bound is ~1e-13 relative above the exact delta at moderate ratio; at ratio 1e-9 it is up to
    ~1e-5 relative above (the cancellation), which moves the eps of :func:`analytic_gaussian_epsilon` by
    ~1e-7 relative there (measured against mpmath).
    """
    q = eps / ratio
    xa = 0.5 * ratio - q
    xb = -0.5 * ratio - q
    a, ea = _log_ndtr_with_error(xa, _U * (jnp.abs(q) + jnp.abs(xa)))
    lb, elb = _log_ndtr_with_error(xb, _U * (jnp.abs(q) + jnp.abs(xb)))
    b = eps + lb
    a_up = a + ea
    b_dn = b - (elb + _U * (jnp.abs(b) + jnp.abs(eps)))
    d = b_dn - a_up
    tail = log1mexp(jnp.minimum(d, -jnp.finfo(jnp.float64).tiny))
    tail_err = jnp.where(tail > -0.75, 256.0, 8.0) * _U * jnp.abs(tail)
    out = a_up + tail
    out = out + tail_err + 4.0 * _U * (jnp.abs(a_up) + jnp.abs(out))
    out = jnp.where(jnp.isneginf(b_dn), a_up, out)
    return jnp.where(d < 0.0, jnp.minimum(out, a_up), a_up)


def analytic_gaussian_epsilon(ratio, log_delta, n_iter: int = 100):
    """The least eps with delta(eps) <= delta for the Gaussian mechanism, sensitivity / sigma = ``ratio``
    (Balle & Wang 2018, Thm 8), from above.

    Bisection on [0, r^2/2 + r sqrt(2 ln(1/delta)) + 1] (the classical bound, always feasible) that keeps the
    feasible end: it tests the upper bound of ln delta(eps) of :func:`analytic_gaussian_log_delta`, so the kept
    end is feasible for the exact delta; returned times 1 + :data:`ANALYTIC_GAUSSIAN_MARGIN` (kept from before:
    slack for the bounds' constants); 0 where delta(0) <= delta already (by the same upper bound).
    """
    lo = jnp.zeros_like(ratio * log_delta)
    hi = 0.5 * ratio * ratio + ratio * jnp.sqrt(-2.0 * log_delta) + 1.0

    def body(_, s):
        lo, hi = s
        mid = 0.5 * (lo + hi)
        ok = analytic_gaussian_log_delta(ratio, mid) <= log_delta
        return jnp.where(ok, lo, mid), jnp.where(ok, mid, hi)

    lo, hi = jax.lax.fori_loop(0, n_iter, body, (lo, hi))
    at_zero = analytic_gaussian_log_delta(ratio, jnp.zeros_like(hi)) <= log_delta
    return jnp.where(at_zero, 0.0, hi * (1.0 + ANALYTIC_GAUSSIAN_MARGIN))


def subsampled_epsilon(eps, q):
    """eps of an eps-DP mechanism run on a subsample that holds a given user w.p. <= q:
    ln(1 + q (e^eps - 1)) (Balle, Barthe, Gaboardi 2018, Thm 9; delta becomes q delta).  Where e^eps leaves
    float64 (eps > ~709) the same value is eps + ln(q + (1 - q) e^-eps), taken in log space as
    eps + logaddexp(ln q, ln(1 - q) - eps) (0 at q = 0; no underflow of e^-eps).

    Rounded up (safe side): the log1p form (numerics.log1p: XLA's CPU log1p is up to 128 ulps off on
    (-0.5, -0.3)) is within ~4 ulps relative (the argument's expm1 and product, then log1p, which passes a
    relative error on at most unchanged), so it is multiplied by :data:`SUBSAMPLED_MARGIN` (1 + 8 ulps); the
    large-eps form adds 8 ulps of |eps| + |its log term| (absolute: the sum cancels as q e^eps -> 1).  For
    q <= 1 the result is capped at eps (the exact value never exceeds it).
    """
    out = log1p(q * jnp.expm1(eps)) * SUBSAMPLED_MARGIN
    tail = jnp.logaddexp(jnp.log(q), log1p(-q) - eps)
    big = eps + tail + 8.0 * _U * (jnp.abs(eps) + jnp.abs(tail))
    out = jnp.where(jnp.isfinite(out), out, jnp.where(q > 0, big, 0.0))
    return jnp.where(q <= 1.0, jnp.minimum(out, eps), out)


def _log_four_over(delta):
    """ln(4/delta) within ~4 ulps relative for 0 < delta < 4: ln 4 - ln delta below delta = 2 (>= ln 2 there, so
    the two logs' roundings are ulps of it; no overflow of 4/delta at subnormal delta), -log1p(delta/4 - 1) on
    [2, 4) (delta/4 - 1 exact by Sterbenz; numerics.log1p avoids XLA's CPU log1p on (-0.5, -0.25)), where the
    difference of logs cancels as delta -> 4."""
    near = delta >= 2.0
    return jnp.where(near, -log1p(jnp.where(near, 0.25 * delta - 1.0, -0.5)), _LN4 - jnp.log(delta))


def fmt_closed_form(eps0, n, delta):
    """(eps, valid) of shuffling n eps0-LDP reports (Feldman, McMillan, Talwar 2021, Thm 3.1), closed form:

        eps = ln(1 + (1 - e^-eps0) / (1 + e^-(eps0 + e1)) (a + c)),
        a = 8 sqrt(e^eps0 ln(4/delta) / n),  c = 8 e^eps0 / n,  e1 = ln(1 + a + c),

    valid for eps0 <= ln(n / (16 ln(4/delta))).  Corrected: Cyffers & Bellet (Thm 7) and Liew et al.
    (footnote 3) quote the condition with ln(2/delta); the source and its authors' code use ln(4/delta)
    (docs/errata.md#e-network-fmt-condition).  The factor is the authors' code's, >= the printed
    (e^eps0 - 1)/(e^eps0 + 1) (the safe one of the two; docs/errata.md#e-ref-fmt-factor).
    Where invalid the result is eps0 (shuffling is post-processing); it is capped at eps0 everywhere.

    Rounding (safe side): eps increases in a + c, and its ~12 float64 operations (ln(4/delta) within ~4 ulps
    relative, see ``_log_four_over``) leave it within ~8 ulps relative, so it is multiplied by
    :data:`FMT_CLOSED_FORM_MARGIN` (1 + 8 ulps) below the eps0 cap.  The condition is tested against its end
    lowered by 8 ulps relative plus 8 ulps absolute (the end ln(n / (16 L)) is within ~5 ulps absolute plus an ulp
    relative): said invalid where unsure (it was rounded to nearest: at eps0 = the float64 end, about half of
    random (n, delta) passed though the exact condition failed, by under an ulp); invalid for delta >= 4.
    """
    log4d = _log_four_over(delta)
    a = 8.0 * jnp.sqrt(jnp.exp(eps0) * log4d / n)
    c = 8.0 * jnp.exp(eps0) / n
    e_inner = jnp.log1p(a + c)
    factor = -jnp.expm1(-eps0) / (1.0 + jnp.exp(-eps0 - e_inner))
    eps = jnp.log1p(factor * (a + c)) * FMT_CLOSED_FORM_MARGIN
    end = jnp.log(n / (16.0 * log4d))
    valid = (log4d > 0.0) & (eps0 <= end - 8.0 * _U * (jnp.abs(end) + 1.0))
    return jnp.where(valid, jnp.minimum(eps, eps0), eps0), valid
