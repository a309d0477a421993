"""Fractional-order RDP of the Poisson-subsampled Gaussian (amplify_jax.accounting._subsampled_gaussian).

References, all independent of the kernel's quadrature:
- mpmath: tanh-sinh quadrature (mp.quad, 20 significant digits, breakpoints from a float64 scan of the
  integrand) of E_{N(0, sigma^2)}[(1 + u)^alpha - 1 - alpha u], u = q expm1((2z - 1)/(2 sigma^2)), with f
  evaluated at extra precision where it cancels;
- mpmath: MTZ 2019's exact binomial sum at integer orders;
- the closed form at q = 1: A_alpha = exp(alpha (alpha - 1) / (2 sigma^2)), at fractional orders;
- published values (shared/reference/public-values.md): TensorFlow Privacy, autodp, the Opacus failure case.
"""

import math

import jax.numpy as jnp
import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amplify_jax.accounting._subsampled_gaussian import (
    AUTO,
    choose_n_panels,
    fractional_panels_needed,
    log_a_minus_one_fractional,
    log_a_minus_one_integer_grid,
)
from amplify_jax.internal import float64_jit

RTOL = 1e-9  # the accuracy the kernel promises on the RDP (it reaches ~1e-11)
N_PANELS = 16  # enough for every point below (checked in test_panels_needed)

_kernel = float64_jit(log_a_minus_one_fractional, static_argnames=("n_panels",))
_need = float64_jit(fractional_panels_needed)


def _needed(q, sigma, alpha):
    q, sigma, alpha = (np.resize(np.asarray(x, dtype=np.float64), _PAD) for x in np.broadcast_arrays(q, sigma, alpha))
    return np.asarray(_need(q, sigma, alpha))


_PAD = 32  # every call is padded to a multiple of this length, so the tests share one compilation


def _lam1(q, sigma, alpha, n_panels=N_PANELS):
    q, sigma, alpha = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (q, sigma, alpha)))
    shape, size = q.shape, q.size
    padded = -(-size // _PAD) * _PAD
    args = [np.concatenate([x.ravel(), np.full(padded - size, fill)]) for x, fill in ((q, 0.1), (sigma, 1.0), (alpha, 1.5))]
    out = np.asarray(_kernel(*args, n_panels=n_panels))[:size]
    return out.reshape(shape)


def _rdp_from(lam1, alpha):
    return np.logaddexp(0.0, lam1) / (np.asarray(alpha) - 1.0)


def _rdp(q, sigma, alpha, n_panels=N_PANELS):
    return _rdp_from(_lam1(q, sigma, alpha, n_panels), alpha)


# ---------------------------------------------------------------------------------------------------------
# mpmath references


def _mp_log_am1(q, s, a, dps=20, depth=60.0):
    """log(A_alpha - 1) by mp.quad over breakpoints placed from a float64 scan of the log-integrand."""
    step = min(s, s * s) / 4.0
    lo, hi = -40.0 * s, a + 40.0 * s
    z = np.linspace(lo, hi, int(min((hi - lo) / step + 1, 2_000_000)))
    with np.errstate(all="ignore"):
        L = (z - 0.5) / (s * s)
        logp = np.logaddexp(np.log1p(-q), np.log(q) + L)  # log(1 + u)
        u = q * np.expm1(np.minimum(L, 700.0))
        small = np.log(a * (a - 1) / 2 * u * u + 1e-300)
        big = np.log(np.maximum(np.expm1(np.minimum(a * logp, 700.0)) - a * u, 1e-300))
        logf = np.where(a * logp > 600, a * logp, np.where(np.abs(u) * max(a, 2) < 1e-3, small, big))
        lt = -z * z / (2 * s * s) + logf
    top = np.nanmax(lt)
    keep = z[lt > top - depth]
    lo, hi = keep.min(), keep.max()
    pts = list(np.linspace(lo, hi, max(int(np.ceil((hi - lo) / (s / 2))), 2) + 1))
    z0 = 0.5 + s * s * math.log((1 - q) / q) if q < 1 else -math.inf
    if lo < z0 < hi:  # the kink of (1 + u)^alpha, width sigma^2
        d = s * s / 4
        while d < s:
            pts += [z0 - d, z0 + d]
            d *= 2
        pts = sorted(p for p in pts + [z0] if lo <= p <= hi)
    with mp.workdps(dps):
        Q, S, A, TOP = mp.mpf(q), mp.mpf(s), mp.mpf(a), mp.mpf(top)
        half = mp.mpf(1) / 2

        def integrand(x):
            uu = Q * mp.expm1((x - half) / (S * S))
            lost = 0 if uu == 0 else max(0, int(-mp.log10(abs(uu) * (A - 1)))) + 5
            with mp.workdps(dps + lost):
                f = mp.expm1(A * mp.log1p(uu)) - A * uu
                return mp.exp(-x * x / (2 * S * S) + mp.log(f) - TOP) if f > 0 else mp.mpf(0)

        val = mp.quad(integrand, [mp.ninf] + [mp.mpf(p) for p in pts] + [mp.inf])
        return float(mp.log(val) + TOP - mp.log(S) - mp.log(2 * mp.pi) / 2)


def _mp_log_am1_integer(q, s, a):
    """MTZ 2019, integer alpha: A = sum_k C(alpha, k) (1-q)^(alpha-k) q^k exp(k(k-1)/(2 sigma^2))."""
    with mp.workdps(60):
        Q, S = mp.mpf(q), mp.mpf(s)
        A = mp.fsum(mp.binomial(a, k) * (1 - Q) ** (a - k) * Q**k * mp.exp(k * (k - 1) / (2 * S * S)) for k in range(a + 1))
        return float(mp.log(A - 1))


# Extreme corners of q in [1e-8, 1], sigma in [0.1, 1e3], alpha in (1, 1024], the kink and the
# alpha ~ 4 sigma^2 degeneracy (flat-topped proxy), and pseudo-random points (seeded, log-uniform).
_EXTREME = [
    (1e-8, 0.1, 1.5),
    (1e-8, 0.1, 1000.5),
    (1e-8, 1000.0, 1.01),
    (1e-8, 1000.0, 1023.7),
    (1.0 - 1e-6, 0.1, 1.001),
    (0.5, 0.3, 7.3),
    (0.9, 0.2, 3.3),
    (0.01, 0.5, 1.0001),
    (0.3, 5.0, 100.5),  # alpha ~ 4 sigma^2
    (1e-4, 10.0, 399.0 + 0.5),  # alpha ~ 4 sigma^2
    (0.05, 0.15, 50.25),
    (0.1, 10.934803521340877, 530.4958114246483),  # the largest panel need found over the domain (15)
]


def _random_points(n, seed=2019):
    rng = np.random.default_rng(seed)
    pts = []
    for _ in range(n):
        q = 10 ** rng.uniform(-8, 0)
        s = 10 ** rng.uniform(-1, 3)
        a = 1 + 10 ** rng.uniform(-3, math.log10(1023))
        pts.append((q, s, a))
    return pts


_POINTS = _EXTREME + _random_points(8)


@pytest.fixture(scope="module")
def mp_table():
    return np.array([_mp_log_am1(q, s, a) for q, s, a in _POINTS])


def test_against_mpmath(mp_table):
    q, s, a = (np.array(c) for c in zip(*_POINTS))
    got = _rdp(q, s, a)
    ref = _rdp_from(mp_table, a)
    rel = (got - ref) / ref
    assert np.all(np.isfinite(got))
    assert np.max(np.abs(rel)) <= RTOL, list(zip(_POINTS, rel))
    # rounded up: never below the reference by more than float64 rounding
    assert np.min(rel) >= -1e-14, list(zip(_POINTS, rel))


def test_log_a_minus_one_accuracy_small_q(mp_table):
    # at tiny q the RDP is ~ (A - 1)/(alpha - 1) and log(A - 1) itself must be accurate
    q, s, a = (np.array(c) for c in zip(*_POINTS))
    got = _lam1(q, s, a)
    tiny = mp_table < -20
    assert tiny.sum() >= 3
    assert np.max(np.abs(got[tiny] - mp_table[tiny])) <= RTOL


# ---------------------------------------------------------------------------------------------------------
# exact references


@pytest.mark.parametrize(
    "q,sigma,alpha",
    [(1e-8, 0.1, 2), (1e-8, 1000.0, 3), (0.01, 0.5, 7), (0.4, 12.0, 64), (0.9, 0.2, 5), (1e-3, 0.1, 1024), (0.2, 3.0, 256)],
)
def test_integer_orders_match_binomial_sum(q, sigma, alpha):
    ref = _mp_log_am1_integer(q, sigma, alpha)
    got = float(_lam1(q, sigma, float(alpha)))
    ref_rdp = _rdp_from(ref, alpha)
    assert abs(_rdp_from(got, alpha) - ref_rdp) <= RTOL * ref_rdp
    assert got >= ref - 1e-14 * max(1.0, abs(ref))


def test_q_one_closed_form_fractional():
    # q = 1: A = exp(alpha (alpha - 1) / (2 sigma^2)) exactly, at any real alpha
    s = np.array([0.1, 0.1, 1.0, 30.0, 1000.0, 1000.0, 0.37])
    a = np.array([1.0001, 1023.5, 2.5, 77.7, 1.001, 1024.0, 5.5])
    expo = a * (a - 1) / (2 * s * s)
    ref = np.array([float(mp.log(mp.expm1(mp.mpf(e)))) for e in expo])
    got = _lam1(1.0, s, a)
    assert np.allclose(got, ref, rtol=RTOL, atol=0)
    assert np.all(got >= ref - 1e-15 * np.abs(ref))


# ---------------------------------------------------------------------------------------------------------
# published values (shared/reference/public-values.md)


def test_published_values():
    # TensorFlow Privacy rdp_accountant_test: q = 0.01, sigma = 2.5, 50 steps, orders 1.5, 2.5
    # (mpmath: 6.500709e-4 and 1.085418e-3 for the 50 steps)
    got = 50 * _rdp(0.01, 2.5, np.array([1.5, 2.5]))
    assert np.allclose(got, [6.500709e-4, 1.085418e-3], rtol=1e-6)
    # autodp (q = 0.01, sigma = 0.5, one step)
    got = _rdp(0.01, 0.5, np.array([1.25, 4.5]))
    assert np.allclose(got, [0.0018977736416478479, 3.0791796010526946], rtol=1e-9)
    # integer orders through the same kernel
    got = _rdp(0.01, 0.5, np.array([2.0, 4.0]))
    assert np.allclose(got, [0.005345502314345245, 1.8618755130319669], rtol=1e-9)
    # TensorFlow Privacy compute_rdp(q = 0.1, sigma = 2, steps = 10, order 5)
    assert np.isclose(10 * _rdp(0.1, 2.0, 5.0), 0.0773696849, rtol=1e-8)
    # q = 0.1, sigma = 1, alpha = 1.5 (dp_accounting returns inf here)
    assert np.isclose(_rdp(0.1, 1.0, 1.5), 0.0117346, rtol=1e-5)
    # q = 0.4, sigma = 12, alpha = 58.75: log A = 2.090674 (the TF Privacy / Opacus series gives -30.01)
    assert np.isclose(np.logaddexp(0.0, _lam1(0.4, 12.0, 58.75)), 2.090674, rtol=1e-6)


# ---------------------------------------------------------------------------------------------------------
# structure and properties


@pytest.mark.slow  # ~18 s of a worker (a program at twice the panels); test_against_mpmath checks the same points
def test_panels_needed_and_refinement():
    q, s, a = (np.array(c) for c in zip(*_POINTS))
    need = _needed(q, s, a)
    assert np.all(need >= 1) and np.max(need) <= N_PANELS
    # twice the panels changes nothing beyond ~1e-12
    coarse, fine = _lam1(q, s, a), _lam1(q, s, a, 2 * N_PANELS)
    assert np.all(np.abs(fine - coarse) <= 2e-12 * np.maximum(1.0, np.abs(fine)))
    # the automatic choice (each point its own need plus a margin, n_panels=AUTO) agrees
    auto = _lam1(q, s, a, AUTO)
    assert np.all(np.abs(auto - fine) <= 2e-12 * np.maximum(1.0, np.abs(fine)))


def test_too_few_panels_falls_back_to_a_sound_bound():
    # the alpha ~ 4 sigma^2 ridge needs 15 panels: with 8 the kernel returns the q = 1 bound, not a guess
    q, s, a = 0.1, 10.934803521340877, 530.4958114246483
    bound = float(mp.log(mp.expm1(mp.mpf(a) * (mp.mpf(a) - 1) / (2 * mp.mpf(s) ** 2))))
    assert np.isclose(_lam1(q, s, a, 8), bound, rtol=1e-13)
    assert bound > _lam1(q, s, a, 16) + 1.0
    assert _needed(q, s, a)[0] == 15.0
    assert np.isfinite(_lam1(q, s, a, 16))


def test_choose_n_panels_buckets():
    # exact when every value is probed (<= 24 sigma and alpha values, <= 12 q values)
    q, s, a = (np.array(c) for c in zip(*_POINTS[:12]))
    need = np.asarray(_need(q[:, None, None], s[None, :, None], a[None, None, :]))
    n = choose_n_panels(s, a, q=q)
    assert n >= np.max(need) and n in (6, 7, 8, 9, 10, 11, 12, 14, 16, 20, 24)
    # many values: probed with a margin; alpha may be an orders axis that does not broadcast with sigma
    n = choose_n_panels(np.linspace(0.5, 5.0, 1000), np.linspace(1.05, 10.95, 100), q=0.01)
    assert 8 <= n <= 12


def test_broadcasting_and_q_zero():
    q = np.array([0.0, 1e-3, 0.5])[:, None, None]
    s = np.array([0.7, 7.0])[None, :, None]
    a = np.array([1.5, 3.25, 20.5])
    out = _lam1(q, s, a)
    assert out.shape == (3, 2, 3)
    assert np.all(np.isneginf(out[0]))
    assert np.all(np.isfinite(out[1:]))
    for i in (1, 2):
        for j in range(2):
            assert np.allclose(out[i, j], _lam1(float(q[i, 0, 0]), float(s[0, j, 0]), a), rtol=1e-14)


def test_rejects_too_few_panels():
    with pytest.raises(ValueError, match="n_panels"):
        log_a_minus_one_fractional(0.1, 1.0, 1.5, n_panels=2)


@settings(deadline=None, derandomize=True, max_examples=20)
@given(
    lq=st.floats(-8, -0.01),
    ls=st.floats(-1, 3),
    la=st.floats(-3, math.log10(1023)),
)
def test_monotone_in_q_sigma_alpha(lq, ls, la):
    q, s, a = 10**lq, 10**ls, 1 + 10**la
    base = _rdp(q, s, a)
    assert np.isfinite(base) and base > 0
    assert _rdp(min(1.0, q * 1.5), s, a) >= base  # more sampling, more privacy loss
    assert _rdp(q, s * 1.1, a) <= base  # more noise, less
    assert _rdp(q, s, a * 1.05) >= base  # RDP is non-decreasing in the order


def test_gradients_match_finite_differences():
    # the plan (windows, nodes) is outside the gradient; the integrand carries it (used by Newton-type searches)
    import jax

    f = float64_jit(lambda p: log_a_minus_one_fractional(p[0], p[1], p[2], n_panels=N_PANELS))
    g = float64_jit(jax.grad(lambda p: log_a_minus_one_fractional(p[0], p[1], p[2], n_panels=N_PANELS)))
    for p in (np.array([0.01, 0.5, 1.25]), np.array([1e-6, 0.3, 3.5])):
        grad = np.asarray(g(p))
        for i in range(3):
            h = 1e-6 * p[i]
            e = np.zeros(3)
            e[i] = h
            fd = (float(f(p + e)) - float(f(p - e))) / (2 * h)
            assert abs(grad[i] - fd) <= 1e-5 * abs(fd) + 1e-8


# ---------------------------------------------------------------------------------------------------------
# integer orders on a static grid (the host log-binomial table and the shared per-k terms)

_INT_GRID = (2.0, 3.0, 7.0, 64.0, 256.0)
_int_grid = float64_jit(lambda q, s: log_a_minus_one_integer_grid(q, s, _INT_GRID, 256))


@pytest.mark.parametrize("q,sigma", [(1e-8, 0.1), (1e-8, 1000.0), (0.01, 0.5), (0.4, 12.0), (0.9, 0.2), (1.0, 3.0)])
def test_integer_grid_series_against_mpmath(q, sigma):
    got = np.asarray(_int_grid(np.array([q]), np.array([sigma])))[0]
    for a, g in zip(_INT_GRID, got):
        if q == 1.0:  # A - 1 = expm1(alpha (alpha - 1) / (2 sigma^2)) exactly
            ref = float(mp.log(mp.expm1(mp.mpf(a) * (a - 1) / (2 * mp.mpf(sigma) ** 2))))
        else:
            ref = _mp_log_am1_integer(q, sigma, int(a))
        # relative accuracy of A - 1 (the log's absolute error)
        assert abs(g - ref) <= 1e-11 * max(1.0, abs(ref)), (q, sigma, a, g, ref)


def test_integer_grid_series_q_zero_and_broadcasting():
    got = np.asarray(_int_grid(np.array([[0.0], [0.1]]), np.array([1.0, 2.0, 4.0])))
    assert got.shape == (2, 3, len(_INT_GRID))
    assert np.all(got[0] == -np.inf) and np.all(np.isfinite(got[1]))


def test_bracket_mesh_matches_exact_quadrature():
    """The shared mesh of a bracket (the continuous order search's evaluations) agrees with the exact
    quadrature inside the bracket wherever its hull needs no more panels than it has."""
    from amplify_jax.accounting._subsampled_gaussian import bracket_log_a_minus_one, bracket_nodes

    rng = np.random.default_rng(3)
    n = 256
    q, sigma = 10 ** rng.uniform(-8, 0, n), 10 ** rng.uniform(-1, 3, n)
    lo = 1.0 + 10 ** rng.uniform(-2, 2.5, n)
    hi = lo * rng.uniform(1.05, 1.5, n)
    w = rng.uniform(0, 1, n)
    alpha = lo + w * (hi - lo)
    f = float64_jit(lambda q_, s_, lo_, hi_, a_: (bracket_log_a_minus_one(nd := bracket_nodes(q_, s_, lo_, hi_,
                                                                                               n_panels=24), a_),
                                                   nd.need))
    got, need = map(np.asarray, f(q, sigma, lo, hi, alpha))
    ref = np.asarray(_kernel(q, sigma, alpha, n_panels=24))
    ok = (need <= 24) & (np.asarray(_need(q, sigma, alpha)) <= 24)
    assert ok.sum() > 200
    rel = np.abs(np.logaddexp(0, got) / np.logaddexp(0, ref) - 1)[ok]
    assert np.max(rel) < 3e-11
    # q = 0: no divergence
    z = np.asarray(f(np.zeros(8), np.ones(8), np.full(8, 2.0), np.full(8, 3.0), np.full(8, 2.5))[0])
    assert np.all(z == -np.inf)
