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
import jax.numpy as jnp
import numpy as np

from .._core.numerics import log_ndtr, log_sub

# every block here is a traceable kernel without validation: public from amplify_jax.internal (their one public
# home); advanced_composition_overflows (the public functions' input check) and the margins are importable here
__all__ = []

#: Relative margin added to the analytic Gaussian's eps (covers the rounding of its delta evaluation).
ANALYTIC_GAUSSIAN_MARGIN = 1e-10
#: Factor (1 + 8 ulps) on advanced composition's float64 value: covers the rounding of its evaluation.
ADVANCED_COMPOSITION_MARGIN = 1.0 + 8.0 * 2.0 ** -52


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


def analytic_gaussian_log_delta(ratio, eps):
    """ln delta(eps) of the Gaussian mechanism with sensitivity / sigma = ``ratio`` (Balle & Wang 2018, Thm 8):

        delta(eps) = Phi(r/2 - eps/r) - e^eps Phi(-r/2 - eps/r),   exact, decreasing in eps.
    """
    return log_sub(log_ndtr(0.5 * ratio - eps / ratio), eps + log_ndtr(-0.5 * ratio - eps / ratio))


def analytic_gaussian_epsilon(ratio, log_delta, n_iter: int = 100):
    """The least eps with delta(eps) <= delta for the Gaussian mechanism, sensitivity / sigma = ``ratio``
    (Balle & Wang 2018, Thm 8), from above.

    Bisection on [0, r^2/2 + r sqrt(2 ln(1/delta)) + 1] (the classical bound, always feasible) that keeps the
    feasible end, returned with a relative margin :data:`ANALYTIC_GAUSSIAN_MARGIN` for the rounding of the delta
    evaluation; 0 where delta(0) <= delta already.
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
    float64 (eps > ~709) the same value is eps + ln(q + (1 - q) e^-eps) (0 at q = 0); unchanged elsewhere."""
    out = jnp.log1p(q * jnp.expm1(eps))
    big = eps + jnp.log(q + (1.0 - q) * jnp.exp(-eps))
    return jnp.where(jnp.isfinite(out), out, jnp.where(q > 0, big, 0.0))


def fmt_closed_form(eps0, n, delta):
    """(eps, valid) of shuffling n eps0-LDP reports (Feldman, McMillan, Talwar 2021, Thm 3.1), closed form:

        eps = ln(1 + (1 - e^-eps0) / (1 + e^-(eps0 + e1)) (a + c)),
        a = 8 sqrt(e^eps0 ln(4/delta) / n),  c = 8 e^eps0 / n,  e1 = ln(1 + a + c),

    valid for eps0 <= ln(n / (16 ln(4/delta))).  Corrected: Cyffers & Bellet (Thm 7) and Liew et al.
    (footnote 3) quote the condition with ln(2/delta); the source and its authors' code use ln(4/delta)
    (docs/errata.md#e-network-fmt-condition).  The factor is the authors' code's, >= the printed
    (e^eps0 - 1)/(e^eps0 + 1) (the safe one of the two; docs/errata.md#e-ref-fmt-factor).
    Where invalid the result is eps0 (shuffling is post-processing); it is capped at eps0 everywhere.
    """
    log4d = jnp.log(4.0 / delta)
    a = 8.0 * jnp.sqrt(jnp.exp(eps0) * log4d / n)
    c = 8.0 * jnp.exp(eps0) / n
    e_inner = jnp.log1p(a + c)
    factor = -jnp.expm1(-eps0) / (1.0 + jnp.exp(-eps0 - e_inner))
    eps = jnp.log1p(factor * (a + c))
    valid = eps0 <= jnp.log(n / (16.0 * log4d))
    return jnp.where(valid, jnp.minimum(eps, eps0), eps0), valid
