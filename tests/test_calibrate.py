"""The optimizer layer: feasible endpoints, status codes, integers, round trips."""

import numpy as np
from hypothesis import given, strategies as st

from amplify_jax import calibrate as K


def decreasing(x, c):
    return c / x


def increasing(x, c):
    return c * x


def test_minimal_parameter_feasible_side():
    t = np.array([1.0, 0.3, 7.0])
    r = K.invert_monotone(decreasing, t, args=(3.0,), lo=1e-3, hi=1e6, rtol=1e-9)
    assert np.all(np.asarray(r.status) == K.OK)
    v = np.asarray(r.value)
    assert np.all(3.0 / v <= t)  # feasible
    assert np.all(3.0 / (v * (1 - 2e-9)) > t)  # and tight to rtol
    np.testing.assert_allclose(r.achieved, 3.0 / v)


def test_status_codes_never_nan():
    r = K.invert_monotone(decreasing, [1e-12, 1e9, 1.0], args=(3.0,), lo=1e-3, hi=1e6)
    assert list(np.asarray(r.status)) == [K.INFEASIBLE, K.AT_LIMIT, K.OK]
    assert np.all(np.isfinite(np.asarray(r.value)))


def test_maximal_integer_parameter():
    r = K.invert_monotone(increasing, [10.0, 0.5, 1e9], args=(3.0,), lo=1, hi=100, feasible="below", integer=True)
    assert list(np.asarray(r.value)) == [3.0, 1.0, 100.0]
    assert list(np.asarray(r.status)) == [K.OK, K.INFEASIBLE, K.AT_LIMIT]


@given(c=st.floats(1e-3, 1e3), t=st.floats(1e-2, 1e2))
def test_round_trip(c, t):
    r = K.invert_monotone(decreasing, t, args=(c,), lo=1e-8, hi=1e8, rtol=1e-7)
    if int(r.status) == K.OK:
        v = float(r.value)
        assert c / v <= t
        assert c / (v * (1 - 1e-7)) > t * (1 - 1e-12)


def smooth(x, c):
    return c / x**2 + 0.1 * c / x


@given(c=st.floats(1e-2, 1e2), t=st.floats(1e-2, 1e2))
def test_illinois_same_answer_as_bisection(c, t):
    a = K.invert_monotone(smooth, t, args=(c,), lo=1e-4, hi=1e4, rtol=1e-9)
    b = K.invert_monotone(smooth, t, args=(c,), lo=1e-4, hi=1e4, rtol=1e-9, method="illinois")
    assert int(a.status) == int(b.status)
    if int(a.status) == K.OK:
        assert smooth(float(b.value), c) <= t
        assert abs(float(a.value) / float(b.value) - 1) <= 2e-9
