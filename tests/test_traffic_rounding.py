"""The traffic family's closed-form eps round to the safe side: never below the same formula evaluated by mpmath
(50 digits), and within a few ulps above it.  Scalars only: one compiled program per kernel, shared by every
example."""

import mpmath
import numpy as np
from hypothesis import example, given, settings, strategies as st

from amplify_jax import traffic
from amplify_jax.status import Status

DPS = 50
T_ = st.integers(2, 10**6)
SIGMA = st.one_of(st.floats(1e-300, 1.0), st.floats(0.5, 1.0))


@settings(max_examples=300, deadline=None)
@given(T=T_, sigma=SIGMA, frac=st.floats(0.0, 1.0))
def test_local_epsilon_never_below_mpmath(T, sigma, frac):
    d = int(frac * (T - 1))
    got = float(traffic.local_epsilon(targets=T, sampling=sigma, dummies=d).epsilon)
    with mpmath.workdps(DPS):
        if d >= T - 1:
            assert got == 0.0
            return
        s = mpmath.mpf(sigma)
        ref = mpmath.log((1 - s) * T / (s * (d + 1)) + 1)
        assert got >= ref and got <= ref * (1 + 4e-15)


def _pure_mp(T, sigma):
    s = mpmath.mpf(sigma)
    return abs(mpmath.log((1 - s) * (T - 1) / s))


@settings(max_examples=150, deadline=None)
@given(T=T_, sigma=st.floats(1e-300, 1.0, exclude_max=True), w=st.floats(-0.6, 0.6))
@example(T=3, sigma=0.9, w=-0.4851762593571862)  # XLA's log1p(-0.384...) is ~16 ulps low in magnitude
def test_scrambler_pure_epsilon_never_below_mpmath(T, sigma, w):
    """Half the examples near ratio 1 ((1 - sigma)(T - 1) / sigma = e^w, |w| < 0.6: the |log1p| branch, its
    switch at |ratio - 1| = 1/4 and the cancellation the plain log difference suffered), half anywhere."""
    if sigma > 0.5:
        sigma = float((T - 1) / (T - 1 + np.exp(w)))
    got = float(traffic.scrambler_pure_epsilon(targets=T, n=3, sampling=sigma, dummies=1).epsilon)
    with mpmath.workdps(DPS):
        ref = _pure_mp(T, sigma)
        assert got >= ref and got <= ref * (1 + 4e-15)


def test_scrambler_pure_epsilon_exact_zero_and_ends():
    """ratio exactly 1 (sigma = (T - 1) / T representable) is 0; sigma = 0 and 1 have no finite local guarantee."""
    r = traffic.scrambler_pure_epsilon(targets=[2, 4, 8, 3, 3], n=3, sampling=[0.5, 0.75, 0.875, 0.0, 1.0],
                                       dummies=1)
    assert np.asarray(r.epsilon).tolist() == [0.0, 0.0, 0.0, np.inf, np.inf]


def test_scrambler_epsilon_fallback_rounded_up():
    """Where no eps below the local guarantee ln(1 + (1 - sigma) T / sigma) reaches delta, the answer is that
    guarantee rounded up, never below its exact value."""
    T, s = np.array([10.0, 3.0, 1000.0]), np.array([0.9, 0.7, 0.37])
    r = traffic.scrambler_epsilon(1e-12, targets=T, n=2, sampling=s, dummies=0, method="hoeffding")
    assert np.asarray(r.status).tolist() == [Status.FALLBACK] * 3
    with mpmath.workdps(DPS):
        for got, t, sg in zip(np.asarray(r.epsilon), T, s):
            ref = mpmath.log1p((1 - mpmath.mpf(sg)) * t / mpmath.mpf(sg))
            assert got >= ref and got <= ref * (1 + 4e-15)
