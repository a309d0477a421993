"""The approximate-DP building blocks round to the safe side: hypothesis against mpmath (50 digits).

Points where the previous code under-reported (an audit against mpmath) are pinned as explicit examples.
"""

import math

import mpmath as mp
import numpy as np
from hypothesis import example, given, settings, strategies as st

from amplify_jax.accounting import approx_dp as A
from amplify_jax.internal import float64_jit

_eps = float64_jit(A.analytic_gaussian_epsilon)
_logd = float64_jit(A.analytic_gaussian_log_delta)


def _mp_delta(r, e):
    mp.mp.dps = 50
    r, e = mp.mpf(r), mp.mpf(e)
    return mp.ncdf(r / 2 - e / r) - mp.exp(e) * mp.ncdf(-r / 2 - e / r)


_log_ratio = st.floats(math.log(1e-9), math.log(10.0))


@given(log_r=_log_ratio, log_delta=st.floats(-60.0, -0.7))
@example(log_r=math.log(4.2555430133372485e-09), log_delta=-24.482192881181657)  # 1.2e-7 below before
@example(log_r=math.log(1.0551115579531935e-09), log_delta=-42.962137349545856)  # 3.7e-7 below before
@settings(max_examples=25, deadline=None)
def test_analytic_gaussian_epsilon_feasible_for_the_exact_delta(log_r, log_delta):
    r = math.exp(log_r)
    e = float(_eps(np.float64(r), np.float64(log_delta)))
    delta = mp.exp(mp.mpf(log_delta))
    assert _mp_delta(r, e) <= delta  # never under-reports
    if e > 0:  # and tight: float64 cancellation at ratio 1e-9 costs up to ~1e-4 relative
        assert _mp_delta(r, e * (1 - 1e-3)) > delta


@given(log_r=_log_ratio, z=st.floats(0.0, 40.0))
@example(log_r=math.log(1e-9), z=20.5)  # ln Phi below -20: jax.scipy's default series is 4e-9 low there
@settings(max_examples=25, deadline=None)
def test_analytic_gaussian_log_delta_is_an_upper_bound(log_r, z):
    r = math.exp(log_r)
    e = z * r  # eps / r = z: ln Phi(r/2 - z) spans the tail (down to -800)
    got = float(_logd(np.float64(r), np.float64(e)))
    d = _mp_delta(r, e)
    if d <= 0:
        return
    ref = mp.log(d)
    assert got >= ref
    # and close: within 256 times the problem's own float64 conditioning, u (|ln Phi| + z + 1) Phi(r/2 - z) /
    # delta (ln Phi ~ -z^2/2 is known to a few ulps, and delta = Phi(r/2 - z) (1 - e^(B - A)) cancels that
    # much); measured <= 35 times at 600 random points
    cond = float(mp.ncdf(mp.mpf(r) / 2 - mp.mpf(e) / mp.mpf(r)) / d)
    assert float(got - ref) <= 256 * 2.0**-52 * (z * z / 2 + z + 1) * cond


_fmt = float64_jit(A.fmt_closed_form)


def _mp_fmt_end(n, delta):
    mp.mp.dps = 50
    return mp.log(mp.mpf(n) / (16 * mp.log(4 / mp.mpf(delta))))


@given(log_n=st.floats(math.log(10.0), math.log(1e12)), log_delta=st.floats(-700.0, math.log(3.999)),
       step=st.integers(-2, 2))
@example(log_n=math.log(1e5), log_delta=math.log(3.9999999), step=0)  # ln(4/delta) cancels near delta = 4
@settings(max_examples=60, deadline=None)
def test_fmt_closed_form_valid_only_where_the_exact_condition_holds(log_n, log_delta, step):
    n, delta = math.exp(log_n), math.exp(log_delta)
    end = _mp_fmt_end(n, delta)
    eps0 = float(end)  # the float64 end (nearest), and its neighbours up and down
    for _ in range(abs(step)):
        eps0 = math.nextafter(eps0, math.inf if step > 0 else -math.inf)
    if not eps0 > 0:
        return
    eps, valid = _fmt(np.float64(eps0), np.float64(n), np.float64(delta))
    if bool(valid):
        assert mp.mpf(eps0) <= end  # said valid only where Thm 3.1 applies
    else:  # and only just below the end (the end's own float64 conditioning)
        assert float(eps) == eps0 and mp.mpf(eps0) > end - 64 * 2.0**-52 * (abs(end) + 1)


@given(eps0=st.floats(1e-3, 10.0), log_n=st.floats(math.log(10.0), math.log(1e12)),
       log_delta=st.floats(-700.0, math.log(3.9)))
@settings(max_examples=60, deadline=None)
def test_fmt_closed_form_never_below_mpmath(eps0, log_n, log_delta):
    n, delta = math.exp(log_n), math.exp(log_delta)
    eps, valid = _fmt(np.float64(eps0), np.float64(n), np.float64(delta))
    if not bool(valid) or float(eps) == eps0:
        return
    mp.mp.dps = 50
    e0, nn, L = mp.mpf(eps0), mp.mpf(n), mp.log(4 / mp.mpf(delta))
    a = 8 * mp.sqrt(mp.exp(e0) * L / nn)
    c = 8 * mp.exp(e0) / nn
    ref = mp.log1p(-mp.expm1(-e0) / (1 + mp.exp(-e0 - mp.log1p(a + c))) * (a + c))
    assert mp.mpf(float(eps)) >= ref
    assert float(eps) <= float(ref) * (1 + 32 * 2.0**-52)


_sub = float64_jit(A.subsampled_epsilon)


@given(eps=st.one_of(st.floats(1e-8, 20.0), st.floats(700.0, 1e4)), log_q=st.floats(-700.0, 0.0))
@example(eps=0.5, log_q=math.log(0.75))  # below mpmath before (no margin)
@settings(max_examples=60, deadline=None)
def test_subsampled_epsilon_never_below_mpmath(eps, log_q):
    q = math.exp(log_q)
    got = float(_sub(np.float64(eps), np.float64(q)))
    mp.mp.dps = 60
    ref = mp.log1p(mp.mpf(q) * mp.expm1(mp.mpf(eps)))
    assert mp.mpf(got) >= ref
    assert got <= eps  # amplification never costs
    # close: 16 ulps relative, or (large eps, where the sum cancels) 32 ulps of eps absolute
    assert float(mp.mpf(got) - ref) <= 16 * 2.0**-52 * float(ref) + (32 * 2.0**-52 * eps if eps > 700 else 0)
