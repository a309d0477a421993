"""Tests of the Feldman-McMillan-Talwar numerical "clones" bound (amplify_jax.shuffle.clones_epsilon).

References independent of the library: exact enumeration of both hockey-stick divergences with mpmath
(40 digits) for small n; scipy's binomial CDFs for large n; mpmath log-gamma for the Loader log-pmf the
bound relies on.  Soundness is checked as: delta(upper) <= delta < delta(lower) under the exact
divergence, and orderings that must hold between sound brackets (lower at a point cannot exceed upper at
a point with a larger true eps).
"""

import math

import mpmath as mp
import numpy as np
import pytest

from amplify_jax import shuffle as S
from amplify_jax.shuffle import _binomial as B
from amplify_jax.shuffle import _clones as C

from _references import scipy_clones_delta


def exact_divergences(eps, eps0, n, dps=40):
    """D(P||Q), D(Q||P) of the clone pair by full sums over (c, k), in mpmath."""
    with mp.workdps(dps):
        eps, eps0 = mp.mpf(eps), mp.mpf(eps0)
        p = mp.exp(-eps0)
        a = mp.exp(eps0) / (1 + mp.exp(eps0))
        g = mp.exp(eps)
        dpq = dqp = mp.mpf(0)
        for c in range(n):
            w = mp.binomial(n - 1, c) * p**c * (1 - p) ** (n - 1 - c)
            half = mp.mpf(2) ** (-c)
            b = [mp.binomial(c, k) * half for k in range(c + 1)]
            for k in range(c + 2):
                bk = b[k] if k <= c else 0
                bk1 = b[k - 1] if k >= 1 else 0
                P = a * bk + (1 - a) * bk1
                Q = (1 - a) * bk + a * bk1
                dpq += w * max(P - g * Q, 0)
                dqp += w * max(Q - g * P, 0)
        return dpq, dqp


DELTA_CASES = [
    (0.05, 0.5, 30),
    (0.3, 1.0, 50),
    (1.2, 3.0, 25),
    (0.01, 2.0, 120),
    (2.0, 2.5, 7),
    (0.5, 4.0, 1),
    (0.0, 1.0, 20),
    (3.9, 4.0, 3),
]


def test_delta_brackets_mpmath_both_directions_and_symmetry():
    eps, eps0, n = (np.array(x, dtype=float) for x in zip(*DELTA_CASES))
    d = S.clones_delta(eps, eps0=eps0, n=n)
    for i, (e, e0, m) in enumerate(DELTA_CASES):
        dpq, dqp = exact_divergences(e, e0, m)
        # The mirror map k -> c + 1 - k makes the two directions equal (each summed separately here).
        assert abs(dpq - dqp) <= mp.mpf(10) ** -35
        lo, hi = float(d.lower[i]), float(d.upper[i])
        assert lo <= float(dpq) <= hi and float(d.qp_lower[i]) <= float(dqp) <= float(d.qp_upper[i])
        # Tight: D_c = A2 b - (e^eps - 1) F cancels by up to ~e^eps, times a 1e-12 budget per pmf value.
        assert hi - lo <= 1e-9 * math.exp(e) * float(dpq) + 1e-15, (e, e0, m, lo, hi)


EPS_GRID = dict(
    eps0=np.array([0.5, 1.0, 2.0, 3.0, 0.2, 5.0]),
    n=np.array([40, 100, 60, 150, 80, 30]),
    delta=np.array([1e-3, 1e-6, 1e-4, 1e-8, 0.2, 1e-2]),
)


def test_epsilon_bracket_sound_against_mpmath():
    out = S.clones_epsilon(EPS_GRID["eps0"], EPS_GRID["n"], EPS_GRID["delta"])
    lo, hi = np.asarray(out.lower), np.asarray(out.upper)
    assert np.all(np.asarray(out.valid)) and np.all(lo <= hi)
    for i in range(len(lo)):
        e0, m, dl = float(EPS_GRID["eps0"][i]), int(EPS_GRID["n"][i]), float(EPS_GRID["delta"][i])
        assert float(max(exact_divergences(hi[i], e0, m, dps=30))) <= dl
        if lo[i] > 0:
            assert float(max(exact_divergences(lo[i], e0, m, dps=30))) > dl
        assert hi[i] - lo[i] <= 1e-7 * math.exp(hi[i]) * hi[i]
    # delta = 0.2 at eps0 = 0.2, n = 80 is above the total variation: eps = 0 is certified.
    assert hi[4] == 0.0 and float(max(exact_divergences(0.0, 0.2, 80, dps=30))) <= 0.2


def test_large_n_against_scipy_cdfs_and_the_public_interval():
    out = S.clones_epsilon(np.array([4.0, 1.0]), np.array([100_000, 10_000_000]), np.array([1e-6, 1e-8]))
    lo, hi = np.asarray(out.lower), np.asarray(out.upper)
    assert np.all(np.asarray(out.converged))
    # Public code (README example): eps in [0.1675385583317841, 0.172790550755978].
    assert 0.1675385583317841 <= lo[0] <= hi[0] <= 0.172790550755978
    for i, (e0, m, dl) in enumerate([(4.0, 100_000, 1e-6), (1.0, 10_000_000, 1e-8)]):
        assert scipy_clones_delta(hi[i], e0, m, width=14) <= dl * (1 + 1e-9)
        assert scipy_clones_delta(lo[i] * (1 - 1e-8), e0, m, width=14) > dl


def test_loader_pmf_within_the_error_budget():
    """The bound budgets a relative error per pmf value from Loader's form: _E, plus 3 u |k - n p| for the
    rounding of n p and n q inside it (none when p = 1/2).  Check it at large n and far tails (log pmf down
    to ~ -600) against mpmath's log-gamma, for p = 1/2 and for p = e^-eps0 rounded down to a multiple of
    2^-53 as the bound does (so that 1 - p is exact)."""
    def rounded(eps0):
        return math.floor(math.exp(-eps0) * 2.0**53) / 2.0**53

    cases = [
        (18_290_000, 36_787_944, 0.5),
        (18_390_000, 36_787_944, 0.5),
        (18_330_000, 36_787_944, 0.5),
        (36_790_000, 99_999_999, rounded(1.0)),
        (36_700_000, 99_999_999, rounded(1.0)),
        (1_800_000, 99_999_999, rounded(4.0)),
        (900, 1800, 0.5),
        (3, 10, 0.5),
    ]
    k, n, p = (np.array(x, dtype=float) for x in zip(*cases))
    got = np.asarray(B.log_binom_pmf(k, n, p))
    budget = C._E + 3.0 * C._U * np.abs(k - n * p)
    with mp.workdps(50):
        for i, (ki, ni, pi) in enumerate(cases):
            ref = (mp.loggamma(ni + 1) - mp.loggamma(ki + 1) - mp.loggamma(ni - ki + 1) + ki * mp.log(pi)
                   + (ni - ki) * mp.log1p(-mp.mpf(pi)))
            assert -700 < float(ref) < 0
            assert abs(float(mp.expm1(mp.mpf(got[i]) - ref))) < budget[i] / 4, cases[i]


def test_sound_brackets_are_ordered_over_n_delta_and_eps0():
    """eps* is non-increasing in n and delta and non-decreasing in eps0, so across a grid the lower end at
    one point can never exceed the upper end at a point with a larger true eps."""
    e0 = np.array([0.5, 2.0, 4.0])[:, None, None]
    n = np.array([10, 100, 1000, 10_000])[None, :, None]
    d = np.array([1e-2, 1e-5, 1e-8])[None, None, :]
    out = S.clones_epsilon(e0, n, d)
    lo, hi = np.asarray(out.lower), np.asarray(out.upper)
    assert lo.shape == (3, 4, 3) and np.all(lo <= hi)
    tol = 1e-12
    assert np.all(lo[:, 1:, :] <= hi[:, :-1, :] + tol)  # more users
    assert np.all(lo[:, :, :-1] <= hi[:, :, 1:] + tol)  # larger delta (axis ordered by decreasing delta)
    assert np.all(lo[:-1] <= hi[1:] + tol)  # smaller eps0
    # And the brackets are tight, so the orderings are not vacuous (D_c cancels by ~e^eps near eps0 = 4).
    assert np.all(hi - lo <= 1e-7 * np.exp(hi) * hi)
    assert np.all(np.diff(hi, axis=1) <= 0) and np.all((np.diff(hi, axis=1) < 0) | (hi[:, 1:] == 0))


def test_newton_iterations_and_reference_builds_stay_few():
    out, it, nref = C._clones_epsilon_stats(np.array([4.0, 1.0, 0.5]), np.array([100_000, 100_000, 20_000]),
                                            np.array([1e-6, 1e-6, 1e-8]))
    assert np.all(np.asarray(out.converged))
    assert np.all(np.asarray(it) <= 6) and np.all(np.asarray(nref) <= 2)


def test_edge_cases():
    out = S.clones_epsilon(np.array([0.0, 30.0]), np.array([1000, 100]), np.array([1e-6, 0.5]))
    assert float(out.lower[0]) == float(out.upper[0]) == 0.0
    # eps0 = 30: D_c = A1 at c = 0 cancels by e^eps in float64; the bracket is wide but sound.
    exact = 30.0 + math.log1p(-0.5 * (1 + math.exp(-30.0)))  # C = 0 a.s.: delta = (e^eps0 - e^eps)/(e^eps0 + 1)
    assert float(out.lower[1]) <= exact <= float(out.upper[1]) <= 30.0
    assert not bool(out.converged[1])


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: S.clones_epsilon(701.0, 10, 1e-6), "eps0"),
        (lambda: S.clones_epsilon(float("nan"), 10, 1e-6), "eps0"),
        (lambda: S.clones_epsilon(1.0, 10, 1e-6, rtol=0.0), "rtol"),
        (lambda: S.clones_epsilon(1.0, 2.5, 1e-6), "n"),
        (lambda: S.clones_epsilon(1.0, 10, 0.0), "delta"),
        (lambda: S.clones_delta(-0.1, eps0=1.0, n=10), "eps"),
    ],
)
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()
