"""The shuffle family's closed forms round to the safe side: never below the same formula evaluated by mpmath
(50 digits), and within a few ulps (or the stated margin) above it.  Scalars only: one compiled program per
kernel, shared by every example."""

import mpmath
import numpy as np
from hypothesis import given, settings, strategies as st

from amplify_jax import shuffle
from amplify_jax.shuffle import _bounds as SB

DPS = 50
TINY = float(np.finfo(np.float64).tiny)
# eps0 of Erlingsson's validity region, n from its 1000 to 2**53, delta in (0, 1/100)
E_EPS0 = st.floats(1e-300, 0.5, exclude_max=True)
E_N = st.integers(1000, 2**53)
DELTA = st.floats(5e-324, 1.0, exclude_min=True, exclude_max=True)


@settings(max_examples=300, deadline=None)
@given(eps0=E_EPS0, n=E_N, delta=st.floats(5e-324, 0.01, exclude_max=True))
def test_erlingsson_epsilon_never_below_mpmath(eps0, n, delta):
    r = shuffle.erlingsson_epsilon(eps0, n=n, delta=delta)
    assert bool(r.valid)
    got = float(r.epsilon)
    with mpmath.workdps(DPS):
        ref = min(12 * mpmath.mpf(eps0) * mpmath.sqrt(-mpmath.log(mpmath.mpf(delta)) / n), mpmath.mpf(eps0))
        assert got >= ref
        # a subnormal delta is flushed to 0 by XLA: ln(1/delta) = inf, the answer the cap eps0 (safe side)
        assert got <= ref * (1 + 4e-15) or (delta < TINY and got == eps0)


@settings(max_examples=300, deadline=None)
@given(eps0=st.floats(1e-300, 0.5, exclude_max=True), n=E_N, x=st.floats(0.0, 800.0))
def test_erlingsson_delta_never_below_mpmath(eps0, n, x):
    """x = n (eps / (12 eps0))^2 drawn over the range where delta = e^-x is a normal float64 (x near 745 included,
    where the exponent's rounding is a relative ~1e-13 of delta)."""
    eps = min(12.0 * eps0 * float(np.sqrt(x / n)), 700.0)
    d, _ = shuffle.erlingsson_delta(eps, eps0=eps0, n=n)
    got = float(d)
    with mpmath.workdps(DPS):
        ref = min(mpmath.exp(-n * (mpmath.mpf(eps) / (12 * mpmath.mpf(eps0))) ** 2), 1)
        assert got >= ref and got <= max(ref * (1 + 2e-12), TINY)
        assert got <= 1.0


@settings(max_examples=200, deadline=None)
@given(eps0=st.floats(1e-300, 700.0), frac=st.floats(0.0, 1.0))
def test_local_delta_never_below_mpmath(eps0, frac):
    eps = eps0 * frac
    got = float(SB._local_delta(eps, eps0))
    with mpmath.workdps(DPS):
        e, e0 = mpmath.mpf(eps), mpmath.mpf(eps0)
        ref = (mpmath.expm1(e0) - mpmath.expm1(e)) / (mpmath.exp(e0) + 1)
        assert got >= ref and got <= ref * (1 + 4e-15)


def _fmt_mp(eps0, n, delta):
    """FMT 2021 Thm 3.1 closed form as ``accounting.approx_dp.fmt_closed_form`` writes it (the authors' factor)."""
    e0, n, d = mpmath.mpf(eps0), mpmath.mpf(n), mpmath.mpf(delta)
    l4 = mpmath.log(4 / d)
    a = 8 * mpmath.sqrt(mpmath.exp(e0) * l4 / n)
    c = 8 * mpmath.exp(e0) / n
    f = (1 - mpmath.exp(-e0)) / (1 + mpmath.exp(-e0 - mpmath.log(1 + a + c)))
    return mpmath.log(1 + f * (a + c)), e0 <= mpmath.log(n / (16 * l4))


@settings(max_examples=300, deadline=None)
@given(n=st.integers(2, 2**53), delta=DELTA, u=st.floats(0.0, 1.0))
def test_fmt_closed_form_never_below_mpmath(n, delta, u):
    """eps0 drawn log-uniform below the condition's end ln(n / (16 ln(4/delta))) (where there is one)."""
    with np.errstate(divide="ignore", over="ignore"):  # 4 / delta overflows below ~2e-308: end = -inf, no condition
        end = float(np.log(n / (16.0 * np.log(4.0 / delta))))
    eps0 = float(np.exp(np.log(1e-6) + u * (np.log(end) - np.log(1e-6)))) if end > 1e-6 else 1e-3
    r = shuffle.fmt_closed_form_epsilon(eps0, n=n, delta=delta)
    got = float(r.epsilon)
    with mpmath.workdps(DPS):
        ref, valid = _fmt_mp(eps0, n, delta)
        ref = min(ref, mpmath.mpf(eps0)) if valid else mpmath.mpf(eps0)
        assert got >= ref
        # 4 / delta overflows below delta ~ 4 / 1.8e308: ln(4/delta) = inf, the answer eps0 (safe side)
        # where eps0 is within ~8 ulps of the condition's end the kernel says invalid (the safe side) and answers eps0
        near_end = abs(eps0 - end) <= 1e-14 * max(abs(end), 1.0)
        assert got <= ref * (1 + 4e-15) or (got == eps0 and (near_end or delta < 4 / np.finfo(np.float64).max))
