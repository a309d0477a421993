"""Tests of the target-randomizer engine of amplify_jax.shuffle (exact, Monte Carlo, fixed-window kernel)
shared by shuffle.blanket_delta and traffic.scrambler_delta.

References: a SciPy evaluation of Ladjel Lemma 2 with E[sum L]_+ summed over every count (independent of
the library's windows, recurrences, tables and tails), mpmath at tiny deltas, and properties (monotonicity,
Monte Carlo bound above the exact value).
"""

import math

import jax
import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from amplify_jax import shuffle as S
from amplify_jax.shuffle import blanket as BL

from _references import scipy_lemma2


def mpmath_lemma2(eps, n, d, T, sigma, dps=40):
    """The same sum in mpmath (for deltas far below double-precision round-off of the other terms)."""
    mp.mp.dps = dps
    ez = mp.e ** mp.mpf(eps)
    s = mp.mpf(sigma)
    tot = mp.mpf(0)
    for j in range(n):
        w = mp.binomial(n - 1, j) * s ** j * (1 - s) ** (n - 1 - j)
        k = j + d + 1
        e = mp.mpf(0)
        for m in range(k + 1):
            pm = mp.binomial(k, m) * (mp.mpf(2) / T) ** m * (1 - mp.mpf(2) / T) ** (k - m)
            inner = mp.mpf(0)
            for n2 in range(m + 1):
                v = k * s * (1 - ez) + (1 - s) * T * ((m - n2) - ez * n2)
                if v > 0:
                    inner += mp.binomial(m, n2) * v
            e += pm * inner / mp.mpf(2) ** m
        tot += w * e / k
    return float(tot)


def _rr(method, eps, n, d, T, sigma, **kw):
    return BL.rr_delta(method, *(np.asarray(x, dtype=float) for x in (eps, n, d, T, sigma)), **kw)


# Points where the windows truncate (n - 1 > the m' window, K > the M window) and where they do not.
WINDOW_CASES = [(0.3, 300, 20, 20, 0.3), (0.5, 200, 100, 10, 0.1), (0.6, 250, 5, 4, 0.45), (0.3, 120, 0, 20, 0.6)]


def test_exact_matches_scipy_where_windows_truncate():
    eps, n, d, T, s = (np.array(x, dtype=float) for x in zip(*WINDOW_CASES))
    got, _ = _rr("exact", eps, n, d, T, s)
    for i, case in enumerate(WINDOW_CASES):
        ref = scipy_lemma2(*case)
        assert ref > 1e-7
        # above by at most the allowance for the cancellation in C F_M(u) - A (M/2) F_{M-1}(u-1) (1e-12 of the
        # two terms, which can be ~1e4 times the difference at T = 4)
        assert ref * (1 - 1e-12) <= got[i] <= ref * (1 + 1e-7), case


def test_exact_tiny_delta_against_mpmath():
    """eps far above the bulk: delta ~ 1e-15 and below, where the skipped region (C_M <= 0) is most of the
    M window; mpmath sums every count."""
    cases = [(2.0, 30, 10, 20, 0.5), (3.0, 20, 30, 6, 0.2)]
    eps, n, d, T, s = (np.array(x, dtype=float) for x in zip(*cases))
    got, _ = _rr("exact", eps, n, d, T, s)
    for i, case in enumerate(cases):
        ref = mpmath_lemma2(*case)
        assert 0 < ref < 1e-6
        assert ref * (1 - 1e-12) <= got[i] <= ref * (1 + 1e-8), (case, got[i], ref)


def test_fixed_window_kernel_agrees_with_planned_windows():
    """The traced kernel (128 bins, 512-row table, the batch's largest inner loop) gives the planned
    kernel's values where both windows cover the mass; where it is too small it stays above (sound)."""
    eps = np.array([0.4, 1.0, 0.8, 1.2])
    n = np.array([50.0, 400.0, 3000.0, 100.0])
    d = np.array([5.0, 50.0, 10.0, 2000.0])
    T = np.array([20.0, 20.0, 10.0, 20.0])
    s = np.array([0.3, 0.2, 0.5, 0.1])
    planned, _ = _rr("exact", eps, n, d, T, s)
    traced = _traced(eps, n, d, T, s)
    np.testing.assert_allclose(traced[:2], planned[:2], rtol=1e-9)
    # n = 3000 at T = 10: bins of 2 values of m' and K capped where the 512-row table ends (upper bounds)
    assert np.all(traced >= planned * (1 - 1e-9))


def _traced(*a):
    from amplify_jax.internal import float64_jit

    f = float64_jit(lambda *x: BL.rr_delta_traced("exact", *x))
    return np.asarray(f(*(np.asarray(x, dtype=float) for x in a)))


def test_monte_carlo_bound_above_exact_and_reproducible():
    eps = np.array([0.3, 0.6, 1.0, 0.5])
    n = np.array([40.0, 200.0, 100.0, 60.0])
    d = np.array([3.0, 20.0, 0.0, 40.0])
    T = np.array([5.0, 20.0, 20.0, 2.0])
    s = np.array([0.3, 0.2, 0.5, 0.4])
    ex, _ = _rr("exact", eps, n, d, T, s)
    for seed in range(3):
        ucb, est = _rr("monte_carlo", eps, n, d, T, s, key=jax.random.PRNGKey(seed), samples=20000,
                       confidence=0.99)
        assert np.all(ucb >= ex)
        B = (1 - s) * T
        assert np.all(np.abs(est - ex) <= 5 * B / math.sqrt(20000))
    again = _rr("monte_carlo", eps, n, d, T, s, key=jax.random.PRNGKey(2), samples=20000, confidence=0.99)
    np.testing.assert_array_equal(again[0], ucb)


def test_monte_carlo_epsilon_is_feasible_and_above_exact():
    """blanket_epsilon with Monte Carlo (common draws for the whole search): the bound at the returned eps is
    below the target, and so is the exact delta there (a 99% upper confidence bound: with 3 seeds the
    exact delta is never above)."""
    r = S.target_randomizer(targets=20, sampling=np.array([0.2, 0.5]))
    for seed in range(3):
        out = S.blanket_epsilon(0.02, n=300, dummies=50, randomizer=r, method="monte_carlo",
                                key=jax.random.PRNGKey(seed), samples=50_000, confidence=0.99, rtol=1e-6)
        e = np.asarray(out.epsilon)
        assert not np.any(np.asarray(out.fallback))
        assert np.all(np.asarray(out.delta) <= 0.02)
        ex = np.asarray(S.blanket_delta(e, n=300, dummies=50, randomizer=r, method="exact").delta)
        assert np.all(ex <= 0.02)


# 8 examples: each plans its own windows and compiles again (~0.75 s each)
@settings(deadline=None, derandomize=True, max_examples=8)
@given(eps=st.floats(0.05, 3.0), n=st.integers(1, 300), d=st.integers(0, 200), s=st.sampled_from([0.0, 0.1, 0.4]))
def test_exact_monotone_in_eps_dummies_and_n(eps, n, d, s):
    vals, _ = _rr("exact", np.array([eps, eps * 1.2, eps, eps]), np.array([n, n, n, n + 13]),
                  np.array([d, d, d + 7, d]), 20.0, s)
    tol = 1e-12 + 1e-9 * vals[0]
    assert vals[1] <= vals[0] + tol and vals[2] <= vals[0] + tol and vals[3] <= vals[0] + tol
    assert np.all((vals >= 0) & (vals <= 1))


def test_monte_carlo_key_validation():
    r = S.target_randomizer(targets=20, sampling=0.2)
    with pytest.raises(ValueError, match="key"):
        S.blanket_delta(0.5, n=10, randomizer=r, method="monte_carlo", key=np.zeros(3, np.uint32))
