"""Tests of amplify_jax.checkin (self check-in, Liew-Hasegawa-Takahashi) against independent references.

References: direct sums over every k (scipy's binomial pmf + the core's without_replacement_rdp), mpmath,
closed forms, brute-force enumeration of integer partitions (sympy), public-values.md, the shuffling module
and scipy's normal CDF.  Orders are kept to a few small shared tuples so that compiled kernels are reused.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats
from scipy.special import logsumexp as np_logsumexp

import jax
import jax.numpy as jnp

from amplify_jax.accounting import approx_dp
from amplify_jax import checkin as C
from amplify_jax.checkin import _distributed
from amplify_jax.conversions import epsilon_from_rdp
from amplify_jax.internal import x64_scope
from amplify_jax.rdp import DEFAULT_ORDERS as RDP_DEFAULT_ORDERS, pure_dp_rdp, without_replacement_rdp
from amplify_jax.shuffle import fmt_closed_form_epsilon
from amplify_jax.status import Status
from _monotone import assert_declared_monotone

ORDERS = (2, 3, 4, 5, 6, 8)
OA = np.array(ORDERS, dtype=float)


# ----------------------------------------------------------------------------------------------------------
# Direct references (every k, numpy/scipy)


def _direct_sum(log_moment_k, n, gamma):
    """1/(l-1) log sum_{k=0}^n Bin(k) M_k, from log M_k at k = 1..n (shape (n, A)), in numpy."""
    k = np.arange(1, n + 1)
    lw = stats.binom.logpmf(k, n, gamma)
    ex = np_logsumexp(lw[:, None] + np.log(np.expm1(log_moment_k)), axis=0)
    return np.log1p(np.exp(ex)) / (OA - 1)


def _gauss_moments(n, sigma, rate):
    """log M_k of the k-participant Gaussian round at ORDERS, via the core's without_replacement_rdp."""
    amax = max(ORDERS)
    j = np.arange(2, amax + 1)
    k = np.arange(1, n + 1)
    base = 2.0 * j[None, :] / (k[:, None] * sigma**2)
    curve = np.asarray(without_replacement_rdp(base, q=rate))
    return (OA - 1) * curve[:, OA.astype(int) - 2]


@pytest.mark.parametrize("n,gamma,sigma", [(300, 0.05, 1.0), (60, 0.5, 0.7)])
def test_distributed_gaussian_matches_direct_sum(n, gamma, sigma):
    k = np.arange(1, n + 1)
    ref = _direct_sum(_gauss_moments(n, sigma, k / n), n, gamma)
    got = np.asarray(C.distributed_gaussian_rdp(ORDERS, n=n, gamma=gamma, sigma=sigma))
    assert np.all(got >= ref)
    np.testing.assert_allclose(got, ref, rtol=3e-11)


def test_paper_rate_sum_matches_direct_sum():
    n, gamma, sigma = 300, 0.05, 1.0
    ref_p = _direct_sum(_gauss_moments(n, sigma, np.full(n, gamma)), n, gamma)
    got_p = np.asarray(C.distributed_gaussian_rdp(ORDERS, n=n, gamma=gamma, sigma=sigma, method="exact_paper_rate"))
    np.testing.assert_allclose(got_p, ref_p, rtol=3e-11)
    assert np.all(got_p >= ref_p)


def test_tail_blocks_bound_the_rest_of_the_sum():
    # Large tail tolerances leave small windows (sd ~ 20): the tails are then bounded by the geometric blocks,
    # always from above, and the looser the window the larger the (safe) overshoot.
    n, gamma, sigma = 2000, 0.3, 1.0
    ref = _direct_sum(_gauss_moments(n, sigma, np.arange(1, n + 1) / n), n, gamma)
    over = []
    for tol in (0.3, 0.01):
        assert C.window_size(n, gamma, tol) <= 160
        got = np.asarray(C.distributed_gaussian_rdp(ORDERS, n=n, gamma=gamma, sigma=sigma, tail_tol=tol))
        assert np.all(got >= ref)
        over.append(np.max(got / ref - 1))
    assert over[0] < 0.15 and over[1] < 2e-3 and over[1] < over[0]
    assert over[1] > 1e-9  # the blocks did contribute (the check is not vacuous)


@pytest.mark.parametrize("n,gamma", [(1e4, 1e-3), (1e7, 1e-3), (1e9, 0.3), (5e3, 0.999)])
def test_window_carries_all_but_the_tolerance(n, gamma):
    tol = 1e-12
    w = C.window_size(n, gamma, tol)
    start = np.clip(np.floor(n * gamma) - w // 2, 65, max(65, n - w + 1))
    inside = stats.binom.cdf(start + w - 1, n, gamma) - stats.binom.cdf(start - 1, n, gamma)
    head = stats.binom.cdf(64, n, gamma)
    assert 1.0 - inside - head <= tol


def _lin_excess(k_lo, k_hi, alpha, n, c):
    """M_k - 1 = c k / n (increasing in k: the block bound is the value at k_hi)."""
    return jnp.log(c[..., None] * k_hi / n[..., None])[..., None] + jnp.zeros(alpha.shape)


def _const_excess(k_lo, k_hi, alpha, n, c):
    return jnp.zeros(k_lo.shape + alpha.shape) + jnp.log(c)[..., None, None]


def test_generic_sum_closed_forms():
    n = np.array([10, 1e5, 1e9])
    gamma = np.array([0.3, 1e-3, 1e-4])
    c = 3.7
    # sum_k Bin(k) c k / n = c gamma; sum_{k>=1} Bin(k) c = c (1 - (1 - gamma)^n)
    got = np.asarray(C.binomial_weighted_rdp(_lin_excess, OA, n=n, gamma=gamma, args=(c,)))
    np.testing.assert_allclose(got, np.log1p(c * gamma)[:, None] / (OA - 1), rtol=1e-9)
    got = np.asarray(C.binomial_weighted_rdp(_const_excess, OA, n=n, gamma=gamma, args=(c,)))
    p_any = -np.expm1(n * np.log1p(-gamma))
    ref = np.log1p(c * p_any)[:, None] / (OA - 1)
    assert np.all(got >= ref * (1 - 1e-15))
    np.testing.assert_allclose(got, ref, rtol=1e-9)


def test_large_n_against_mpmath():
    """n = 1e9: the windowed sum against an mpmath sum over +-12 sd around the mean (the rest < 1e-30)."""
    import mpmath as mp

    n, gamma, sigma = 10**9, 1e-5, 1.0
    got = np.asarray(C.distributed_gaussian_rdp(ORDERS, n=n, gamma=gamma, sigma=sigma))[[0, 2]]
    mp.mp.dps = 25
    mu = n * gamma
    ks = range(int(mu - 12 * math.sqrt(mu)), int(mu + 12 * math.sqrt(mu)))
    out = []
    for lam in (2, 4):
        s = mp.mpf(0)
        for k in ks:
            q = mp.mpf(k) / n
            eps = lambda j: mp.mpf(2 * j) / (k * sigma**2)  # noqa: E731
            ex = q**2 * mp.binomial(lam, 2) * min(4 * mp.expm1(eps(2)), 2 * mp.exp(eps(2)))
            ex += sum(2 * q**j * mp.binomial(lam, j) * mp.exp((j - 1) * eps(j)) for j in range(3, lam + 1))
            logpmf = (mp.loggamma(n + 1) - mp.loggamma(k + 1) - mp.loggamma(n - k + 1) + k * mp.log(gamma)
                      + (n - k) * mp.log1p(-gamma))
            s += mp.exp(logpmf) * ex
        out.append(float(mp.log1p(s) / (lam - 1)))
    np.testing.assert_allclose(got, out, rtol=1e-9)
    assert np.all(got >= np.array(out) * (1 - 1e-12))


def test_checkin_uses_the_core_wor_kernel():
    """The Eq. 10 per-k moment is the core WBK kernel with base 2 j / (k sigma^2) and rate k / n."""
    k = np.array([3.0, 40.0, 700.0])
    n, sigma = np.array(1000.0), np.array(1.3)
    alpha = tuple(range(2, 11))
    with x64_scope():  # under jit, as the kernels call it (one program, not ~50 op-by-op compilations)
        lex = np.asarray(jax.jit(lambda *a: _distributed._gauss_checkin_log_excess(*a, alpha_int=alpha, amax=10))(
            jnp.asarray(k), jnp.asarray(k), jnp.asarray(n), jnp.asarray(sigma)))
    base = 2.0 * np.arange(2, 11)[None, :] / (k[:, None] * 1.3**2)
    core = np.asarray(without_replacement_rdp(base, q=k / 1000.0))
    mine = np.log1p(np.exp(lex)) / (np.array(alpha) - 1)
    # the core kernel rounds up by a bound on its float64 error (rdp.without_replacement_rdp_kernel): above, close
    assert np.all(core >= mine)
    np.testing.assert_allclose(mine, core, rtol=1e-10)


def test_eq11_bounds_the_paper_rate_sum():
    for n, gamma, sigma in [(300, 0.05, 1.0), (300, 0.05, 2.0)]:
        exact = np.asarray(C.distributed_gaussian_rdp(ORDERS, n=n, gamma=gamma, sigma=sigma,
                                                      method="exact_paper_rate"))
        for cd in (None, 0.5):
            e11 = np.asarray(C.distributed_gaussian_rdp(ORDERS, n=n, gamma=gamma, sigma=sigma, method="eq11",
                                                        chernoff_delta=cd))
            assert np.all(e11 >= exact)


@settings(deadline=None, derandomize=True, max_examples=12)
@given(st.floats(0.3, 3.0), st.floats(1.05, 2.0))
def test_distributed_gaussian_decreases_in_sigma(sigma, factor):
    a, b = np.asarray(C.distributed_gaussian_rdp(ORDERS, n=300, gamma=0.05, sigma=[sigma, sigma * factor]))
    assert np.all(b < a)


def test_broadcasting_shapes():
    out = C.distributed_gaussian_rdp(ORDERS, n=[[100], [200]], gamma=[0.1, 0.2, 0.3], sigma=1.0)
    assert out.shape == (2, 3, len(ORDERS))
    single = C.distributed_gaussian_rdp(ORDERS, n=200, gamma=0.2, sigma=1.0)
    np.testing.assert_allclose(out[1, 1], single, rtol=1e-14)


# ----------------------------------------------------------------------------------------------------------
# Sec. 4.1: shuffled Gaussian


def _partitions(total, largest=None):
    """Every integer partition of ``total`` as a non-increasing list (plain enumeration)."""
    largest = total if largest is None else largest
    if total == 0:
        yield []
        return
    for first in range(min(total, largest), 0, -1):
        for rest in _partitions(total - first, first):
            yield [first] + rest


def _brute_shuffle_gauss(lam, n, sigma):
    from collections import Counter

    total = 0.0
    for parts in _partitions(lam):
        m = len(parts)
        if m > n:
            continue
        mult = math.factorial(lam) / math.prod(math.factorial(x) for x in parts)
        counts = Counter(parts).values()
        perm = math.comb(n, m) * math.factorial(m) / math.prod(math.factorial(c) for c in counts)
        total += mult * perm * math.exp(sum(x * (x - 1) for x in parts) / (2 * sigma**2))
    return math.log(total / n**lam) / (lam - 1)


def test_shuffled_gaussian_public_values_and_errata():
    # public-values.md: order 2, sigma = 1, n = 10 -> 0.1585651 = log(1 + (e - 1)/10)
    v = float(C.shuffled_gaussian_rdp([2], n=10, sigma=1.0)[0])
    assert v == pytest.approx(math.log1p((math.e - 1) / 10), rel=1e-12)
    assert round(v, 7) == 0.1585651
    # ERRATA: n = 1, lambda = 2, sigma = 1 gives 1.0 (not the authors' 1.31326)
    assert float(C.shuffled_gaussian_rdp([2], n=1, sigma=1.0)[0]) == pytest.approx(1.0, rel=1e-12)


def test_shuffled_gaussian_public_epsilons():
    # sigma = 1, n = 6e5, delta = 1/n, orders up to 20: 1 round 0.491312, 10 rounds 0.491570;
    # subsampled (without replacement) to m = 6e4: 0.572236 and 1.268656.
    o = np.arange(2, 21)
    r = np.asarray(C.shuffled_gaussian_rdp(o, n=6e5, sigma=1.0))
    e1 = float(epsilon_from_rdp(o, r, delta=1 / 6e5).epsilon)
    e10 = float(epsilon_from_rdp(o, 10 * r, delta=1 / 6e5).epsilon)
    sub = np.asarray(without_replacement_rdp(np.asarray(C.shuffled_gaussian_rdp(o, n=6e4, sigma=1.0)), q=0.1))
    s1 = float(epsilon_from_rdp(o, sub, delta=1 / 6e5).epsilon)
    s10 = float(epsilon_from_rdp(o, 10 * sub, delta=1 / 6e5).epsilon)
    np.testing.assert_allclose([e1, e10, s1, s10], [0.491312, 0.491570, 0.572236, 1.268656], atol=6e-7)


@pytest.mark.parametrize("lam,n,sigma", [(5, 3, 1.0), (7, 100, 0.8), (10, 4, 2.0), (12, 1000, 1.5), (6, 6, 0.5)])
def test_shuffled_gaussian_against_partition_enumeration(lam, n, sigma):
    got = float(C.shuffled_gaussian_rdp([lam], n=n, sigma=sigma)[0])
    ref = _brute_shuffle_gauss(lam, n, sigma)
    assert got >= ref
    assert got == pytest.approx(ref, rel=1e-12)


def test_shuffled_gaussian_order_64_is_finite_and_monotone_in_n():
    r = np.asarray(C.shuffled_gaussian_rdp(np.arange(2, 65), n=[10, 1000, 10**6], sigma=1.0))
    assert np.all(np.isfinite(r))
    assert np.all(np.diff(r, axis=0) < 0)


def test_shuffled_gaussian_checkin_matches_direct_sum():
    n, gamma, sigma = 120, 0.1, 1.0
    j = np.arange(2, max(ORDERS) + 1)
    base = np.asarray(C.shuffled_gaussian_rdp(j, n=np.arange(1, n + 1), sigma=sigma))  # (n, J), one call
    curve = np.asarray(without_replacement_rdp(base, q=np.arange(1, n + 1) / n))
    ref = _direct_sum((OA - 1) * curve[:, OA.astype(int) - 2], n, gamma)
    got = np.asarray(C.shuffled_gaussian_checkin_rdp(ORDERS, n=n, gamma=gamma, sigma=sigma))
    np.testing.assert_allclose(got, ref, rtol=1e-10)
    assert np.all(got >= ref * (1 - 1e-12))


# ----------------------------------------------------------------------------------------------------------
# Thm 2 / Thm 3 and the baselines


def _girgis_numpy(q, eps0, k, lam):
    """Independent transcription of the per-k bound (Girgis et al. 2021, constants as in ERRATA)."""
    kb = math.floor((k - 1) / (2 * math.exp(eps0))) + 1
    s = 4 * math.comb(lam, 2) * q**2 * math.expm1(eps0) ** 2 / (kb * math.exp(eps0))
    for j in range(3, lam + 1):
        s += (math.comb(lam, j) * q**j * j * math.gamma(j / 2)
              * (2 * math.expm1(2 * eps0) ** 2 / (kb * math.exp(2 * eps0))) ** (j / 2))
    c = math.expm1(2 * eps0) / math.exp(eps0)
    s += ((1 + q * c) ** lam - 1 - lam * q * c) * math.exp(-(k - 1) / (8 * math.exp(eps0)))
    return s


def test_thm2_eq7_against_transcription():
    n, gamma, eps0, d = 1e5, 0.01, 1.0, 0.4
    got = np.asarray(C.shuffled_checkin_upper_rdp(ORDERS, n=n, gamma=gamma, eps0=eps0, method="eq7",
                                                  chernoff_delta=d))
    k1 = math.floor((1 - d) * n * gamma)
    ref = [math.log1p(math.exp(-d * d * n * gamma / 2) * _girgis_numpy(gamma, eps0, 1, lam)
                      + _girgis_numpy(gamma, eps0, k1 + 1, lam)) / (lam - 1) for lam in ORDERS]
    np.testing.assert_allclose(got, ref, rtol=1e-10)
    assert np.all(got >= ref)
    # the minimum over the Delta grid is at least as good as any single Delta
    best = np.asarray(C.shuffled_checkin_upper_rdp(ORDERS, n=n, gamma=gamma, eps0=eps0, method="eq7"))
    assert np.all(best <= got)


def test_thm2_exact_against_direct_sum():
    n, gamma, eps0 = 400, 0.05, 0.8
    k = np.arange(1, n + 1)
    lm = np.array([[math.log1p(_girgis_numpy(kk / n, eps0, kk, lam)) for lam in ORDERS] for kk in k])
    ref = _direct_sum(lm, n, gamma)
    got = np.asarray(C.shuffled_checkin_upper_rdp(ORDERS, n=n, gamma=gamma, eps0=eps0))
    np.testing.assert_allclose(got, ref, rtol=1e-10)
    assert np.all(got >= ref)


def test_thm3_lower_bound_formula():
    n, gamma, eps0, d = 1e6, 1e-3, 1.0, 0.3
    got = np.asarray(C.shuffled_checkin_lower_rdp(ORDERS, n=n, gamma=gamma, eps0=eps0, chernoff_delta=d))
    mu = n * gamma
    ref = [math.log1p(-math.expm1(-d * d * mu / (2 + d)) * math.comb(lam, 2) * gamma**2 * math.expm1(eps0) ** 2
                      / ((1 + d) * mu * math.exp(eps0))) / (lam - 1) for lam in ORDERS]
    np.testing.assert_allclose(got, ref, rtol=1e-10)
    assert np.all(got <= ref)


@settings(deadline=None, derandomize=True, max_examples=20)
@given(st.floats(2.0, 8.0), st.floats(-3.5, -0.5), st.floats(0.1, 3.0))
def test_lower_below_upper(log10_n, log10_gamma, eps0):
    n, gamma = float(np.round(10**log10_n)), 10**log10_gamma
    lo = np.asarray(C.shuffled_checkin_lower_rdp(ORDERS, n=n, gamma=gamma, eps0=eps0))
    up = np.asarray(C.shuffled_checkin_upper_rdp(ORDERS, n=n, gamma=gamma, eps0=eps0, method="eq7"))
    assert np.all(lo <= up)


def test_lower_below_exact_upper():
    n = np.array([1e3, 1e5, 3e3])
    gamma = np.array([0.1, 1e-3, 0.03])
    lo = np.asarray(C.shuffled_checkin_lower_rdp(ORDERS, n=n, gamma=gamma, eps0=[0.5, 1.0, 2.0]))
    ex = np.asarray(C.shuffled_checkin_upper_rdp(ORDERS, n=n, gamma=gamma, eps0=[0.5, 1.0, 2.0]))
    assert np.all(lo <= ex)


def test_gaussian_dp_epsilon_is_the_feasible_end():
    import jax

    mus, deltas = np.array([0.5, 0.05, 3.0]), np.array([1e-5, 1e-8, 1e-3])
    es = np.asarray(jax.jit(approx_dp.analytic_gaussian_epsilon)(jnp.asarray(mus), jnp.log(jnp.asarray(deltas))))
    for mu, delta, e in zip(mus, deltas, es):

        def d_at(x):
            return stats.norm.cdf(mu / 2 - x / mu) - math.exp(x) * stats.norm.cdf(-mu / 2 - x / mu)

        assert d_at(e) <= delta
        assert d_at(e * (1 - 1e-7)) > delta


def test_fmt_in_kernels_is_the_shuffle_module():
    eps0 = np.array([0.5, 1.0, 2.0, 4.0, 6.0, 1.0])
    n = np.array([1e3, 1e4, 1e5, 1e5, 1e6, 0.0])  # k = 0 participants: no amplification, not valid
    d = 1e-6
    ref = fmt_closed_form_epsilon(eps0[:-1], n=n[:-1], delta=d)
    with x64_scope():
        got, ok = approx_dp.fmt_closed_form(jnp.asarray(eps0), jnp.asarray(n), jnp.asarray(d))
    np.testing.assert_allclose(np.asarray(got)[:-1], ref.epsilon, rtol=1e-14)
    np.testing.assert_array_equal(np.asarray(ok)[:-1], ref.valid)
    assert float(got[-1]) == 1.0 and not bool(ok[-1])


def test_strong_composition_baselines_are_monotone_in_steps():
    t = np.array([1, 10, 100, 1000, 10000])
    g = np.asarray(C.distributed_gaussian_strong_composition_epsilon(n=6e5, gamma=1e-3, sigma=1.0, steps=t,
                                                                       delta=1e-8))
    s = np.asarray(C.shuffled_checkin_strong_composition_epsilon(n=1e6, gamma=1e-2, eps0=1.0, steps=t,
                                                                  delta=1e-6))
    assert np.all(np.diff(g) > 0) and np.all(np.diff(s) > 0) and np.all(np.isfinite(g))
    # one round of the Gaussian baseline is at least the subsampled Gaussian at the smallest count's noise
    assert g[0] > 0


# ----------------------------------------------------------------------------------------------------------
# Sec. 4.1 route


def test_rr_excess_is_the_core_pure_dp_curve():
    from amplify_jax.rdp import randomized_response_log_excess

    o = np.array([1.5, 2.0, 3.0, 8.0, 32.0])
    for e in (1e-6, 0.1, 1.0, 5.0):
        with x64_scope():
            lex = np.asarray(randomized_response_log_excess(jnp.asarray(o), jnp.asarray(e)))
        np.testing.assert_allclose(np.log1p(np.exp(lex)) / (o - 1), pure_dp_rdp(o, eps0=e), rtol=1e-13)


def test_conversion_route_against_direct_sum():
    n, gamma, eps0, ds = 200, 0.2, 0.5, 1e-6
    o = np.array([1.5, 2.0, 4.0, 10.0])
    k = np.arange(1, n + 1)
    es = fmt_closed_form_epsilon(np.full(n, eps0), n=k, delta=ds)
    eps_k = np.log1p(k / n * np.expm1(np.asarray(es.epsilon)))
    lm = (o - 1) * np.asarray(pure_dp_rdp(o, eps0=eps_k))
    lw = stats.binom.logpmf(k, n, gamma)
    ref = np.log1p(np.exp(np_logsumexp(lw[:, None] + np.log(np.expm1(lm)), axis=0))) / (o - 1)
    # one call for both points (one compiled kernel): n = 200 (checked against the direct sum) and n = 1e5
    r = C.subsampled_shuffle_checkin_rdp(o, n=[n, 1e5], gamma=[gamma, 0.01], eps0=eps0, shuffle_delta=ds)
    dbar = gamma * ds
    np.testing.assert_allclose(np.asarray(r.rdp)[0], ref - np.log1p(-dbar) / (o - 1), rtol=1e-10)
    assert float(r.delta[0]) == pytest.approx(dbar)
    # n gamma = 40 reports are too few for FMT at eps0 = 0.5: footnote 3's fallback; 1000 reports are enough
    assert list(np.asarray(r.fallback)) == [True, False]
    eps = C.subsampled_shuffle_checkin_epsilon(n=[n, 1e5], gamma=[gamma, 0.01], eps0=eps0, shuffle_delta=ds,
                                               steps=[[10], [10**9]], delta=1e-5, orders=o)
    assert np.all(np.asarray(eps.valid[0])) and not np.any(np.asarray(eps.valid[1]))
    assert np.all(np.isinf(np.asarray(eps.epsilon)[1]))


# ----------------------------------------------------------------------------------------------------------
# Calibration


def test_calibrate_sigma_is_feasible_and_minimal():
    kw = dict(n=200, gamma=0.1, delta=1e-5, orders=ORDERS)
    c = C.distributed_gaussian_calibrate_sigma(steps=[10, 100], target_epsilon=[2.0, 4.0], **kw)
    assert isinstance(c, C.SigmaCalibration) and isinstance(c, C.CheckinCalibration)
    assert np.all(np.asarray(c.status) == Status.OK)
    s = np.asarray(c.sigma)
    at = np.asarray(C.distributed_gaussian_epsilon(sigma=s, steps=[10, 100], **kw).epsilon)
    below = np.asarray(C.distributed_gaussian_epsilon(sigma=s * (1 - 1e-4), steps=[10, 100], **kw).epsilon)
    assert np.all(at <= [2.0, 4.0]) and np.all(below > [2.0, 4.0])


def test_epsilon_delta_round_trip():
    kw = dict(n=300, gamma=0.05, sigma=1.0, orders=ORDERS)
    e = C.distributed_gaussian_epsilon(steps=[1, 50], delta=1e-6, **kw)
    d = C.distributed_gaussian_delta(steps=[1, 50], epsilon=np.asarray(e.epsilon), **kw)
    assert np.all(np.asarray(d.delta) <= 1e-6 * (1 + 1e-9))
    np.testing.assert_allclose(np.asarray(d.delta), 1e-6, rtol=1e-6)


def test_max_steps():
    kw = dict(n=200, sigma=1.0, delta=1e-5, orders=ORDERS)
    r = C.distributed_gaussian_calibrate_steps(gamma=0.1, target_epsilon=[3.0, 6.0, 0.01], **kw)
    assert isinstance(r, C.StepsCalibration) and r._fields == ("steps", "epsilon", "status")
    t = np.asarray(r.steps)
    assert list(np.asarray(r.status)) == [Status.OK, Status.OK, Status.INFEASIBLE]
    e_at = np.asarray(C.distributed_gaussian_epsilon(gamma=0.1, steps=t[:2], **kw).epsilon)
    e_next = np.asarray(C.distributed_gaussian_epsilon(gamma=0.1, steps=t[:2] + 1, **kw).epsilon)
    assert np.all(e_at <= [3.0, 6.0]) and np.all(e_next > [3.0, 6.0])


@pytest.mark.slow
def test_max_gamma_is_feasible_and_maximal():
    kw = dict(n=200, sigma=1.0, delta=1e-5, orders=ORDERS)
    g = C.distributed_gaussian_calibrate_gamma(steps=20, target_epsilon=4.0, gamma_hi=0.5, grid_points=9, **kw)
    assert int(g.status) == Status.OK
    gv = float(g.gamma)
    assert float(C.distributed_gaussian_epsilon(gamma=gv, steps=20, **kw).epsilon) <= 4.0
    assert float(C.distributed_gaussian_epsilon(gamma=gv * (1 + 1e-4), steps=20, **kw).epsilon) > 4.0


def test_calibration_results_name_their_answer():
    """Each calibration result's first field is named after what it holds, in the tuple order (answer, epsilon,
    status); the generic ``.value`` of before is gone (CHANGELOG.md)."""
    cal = dict(n=200, delta=1e-5, orders=ORDERS)
    ref = C.distributed_gaussian_calibrate_steps(gamma=0.1, sigma=1.0, target_epsilon=3.0, **cal)
    assert ref._fields == ("steps", "epsilon", "status") and not hasattr(ref, "value")
    steps, eps, status = ref
    assert float(steps) == float(ref[0]) and float(eps) == float(ref.epsilon) and int(status) == Status.OK
    assert not hasattr(C, "distributed_gaussian_max_rounds")


# ----------------------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: C.distributed_gaussian_rdp(ORDERS, n=100, gamma=1.5, sigma=1.0), "gamma"),
        (lambda: C.distributed_gaussian_rdp(ORDERS, n=100, gamma=-0.1, sigma=1.0), "gamma"),
        (lambda: C.distributed_gaussian_rdp(ORDERS, n=0, gamma=0.1, sigma=1.0), "n"),
        (lambda: C.distributed_gaussian_rdp(ORDERS, n=10.5, gamma=0.1, sigma=1.0), "n"),
        (lambda: C.distributed_gaussian_rdp(ORDERS, n=100, gamma=0.1, sigma=0.0), "sigma"),
        (lambda: C.distributed_gaussian_rdp([2, 2.5], n=100, gamma=0.1, sigma=1.0), "orders"),
        (lambda: C.shuffled_gaussian_rdp([1], n=10, sigma=1.0), "orders"),
        (lambda: C.shuffled_gaussian_rdp([2], n=10, sigma=-1.0), "sigma"),
        (lambda: C.shuffled_checkin_upper_rdp(ORDERS, n=100, gamma=2.0, eps0=1.0), "gamma"),
        (lambda: C.effective_checkin_rate(p=1.2), "p"),
        (lambda: C.effective_checkin_rate(p=0.5, p_dropout=-0.2), "p_dropout"),
        (lambda: C.subsampled_shuffle_checkin_rdp([2.0], n=10, gamma=0.5, eps0=1.0, delta0=2.0,
                                                  shuffle_delta=1e-6), "delta0"),
        (lambda: C.distributed_gaussian_epsilon(n=100, gamma=0.1, sigma=1.0, steps=0, delta=1e-5), "steps"),
        (lambda: C.distributed_gaussian_calibrate_sigma(n=100, gamma=0.1, steps=10, target_epsilon=0.0, delta=1e-5),
         "target_epsilon"),
    ],
)
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call()


def test_effective_rate_and_zero_rate():
    assert float(C.effective_checkin_rate(p=0.5, p_dropout=0.2)) == pytest.approx(0.4)
    z = np.asarray(C.distributed_gaussian_rdp(ORDERS, n=100, gamma=0.0, sigma=1.0))
    assert np.all(z == 0.0)


# ----------------------------------------------------------------------------------------------------------
# The registered bounds of this family (amplify_jax.bounds): kernels equal the direct calls, and every declared
# monotone direction holds on a grid (tests/test_bounds.py only checks one step around the example)


def _checkin_bounds():
    from amplify_jax import bounds

    return bounds.list("checkin")


@pytest.mark.parametrize("bound", _checkin_bounds(), ids=lambda b: b.id)
def test_registered_monotone_directions_hold_on_a_grid(bound):
    assert_declared_monotone(bound, bound.example)


def test_registered_kernels_equal_the_direct_calls():
    from amplify_jax import bounds
    from amplify_jax.status import Status

    r = bounds.evaluate("checkin.distributed-gaussian", n=1000, gamma=0.05, sigma=1.0, steps=100, delta=1e-5)
    d = C.distributed_gaussian_epsilon(n=1000, gamma=0.05, sigma=1.0, steps=100, delta=1e-5)
    assert float(r.epsilon) == float(d.epsilon) and float(r.order) == float(d.order)
    r = bounds.evaluate("checkin.shuffled-upper-rdp", orders=list(ORDERS), n=300, gamma=0.05, eps0=1.0)
    np.testing.assert_array_equal(r.rdp, np.asarray(C.shuffled_checkin_upper_rdp(ORDERS, n=300, gamma=0.05, eps0=1.0)))
    # the Sec. 4.1 route: no guarantee where the rounds use up delta (inf, flagged)
    r = bounds.evaluate("checkin.subsampled-shuffle", n=10000, gamma=0.1, eps0=1.0, steps=10, delta=1e-9,
                        shuffle_delta=1e-8)
    assert r.epsilon == np.inf and r.status == Status.FALLBACK


def test_registered_solvers_agree_with_the_generic_search():
    """The attached calibrations (steps: the family's closed form settled on the bound; sigma: its compiled
    bisection) return the generic search's feasible endpoint (steps exactly, sigma within rtol)."""
    from amplify_jax import bounds
    from amplify_jax.calibrate import invert_monotone_host
    from amplify_jax.status import Status

    bid = "checkin.distributed-gaussian"
    base = dict(n=1000, gamma=0.05, delta=1e-5)
    targets = np.array([1.5, 3.0, 1.9326390544999281, 8.0])

    def eps(**kw):
        return np.asarray(bounds.evaluate(bid, **base, **kw).epsilon, dtype=float)

    inv = bounds.invert(bid, solve_for="steps", target_epsilon=targets, sigma=1.0, **base)
    ref = invert_monotone_host(lambda x: eps(sigma=1.0, steps=x), targets, lo=1.0, hi=1e9, feasible="below",
                               integer=True)
    np.testing.assert_array_equal(inv.steps, np.asarray(ref.value))
    np.testing.assert_array_equal(inv.status, np.asarray(ref.status))
    np.testing.assert_array_equal(inv.epsilon, eps(sigma=1.0, steps=inv.steps))
    assert np.all(inv.epsilon <= targets) and np.all(inv.status == Status.OK)
    assert np.all(eps(sigma=1.0, steps=inv.steps + 1) > targets)
    # a range whose every value fails is infeasible (value: its best end, lo)
    bad = bounds.invert(bid, solve_for="steps", target_epsilon=1e-3, sigma=1.0, **base)
    assert bad.status == Status.INFEASIBLE and bad.steps == 1
    top = bounds.invert(bid, solve_for="steps", target_epsilon=100.0, sigma=1.0, hi=50, **base)
    assert top.status == Status.AT_LIMIT and top.steps == 50

    sig = bounds.invert(bid, solve_for="sigma", target_epsilon=targets, steps=100, **base)
    assert np.all(sig.status == Status.OK) and np.all(sig.epsilon <= targets)
    assert np.all(eps(sigma=sig.sigma, steps=100) <= targets)
    assert np.all(eps(sigma=sig.sigma * (1 - 4e-6), steps=100) > targets)
    ref = invert_monotone_host(lambda x: eps(sigma=x, steps=100), targets, lo=0.05, hi=1e3, feasible="above")
    np.testing.assert_allclose(sig.sigma, np.asarray(ref.value), rtol=2e-6)


# ----------------------------------------------------------------------------------------------------------
# The order cap (issue 14): Fig. 1(c)'s lower bound was flat at 0.0037 for T = 1e2-1e3 because the best order
# was the grid's largest (2048) at delta = 1e-7.


def test_lower_bound_conversion_has_an_interior_optimum_and_no_cap():
    """Fig. 1(c)'s first points (n = 1e7, gamma = 1e-3, eps0 = 1, delta = 1/n): the converted Thm 3 lower bound
    has its best order strictly inside the default grid (no warning), is far below the old floor of order 2048
    (0.00367 at T = 100), and widening the grid no longer lowers it (the running maximum over orders)."""
    import warnings

    kw = dict(n=1e7, gamma=1e-3, eps0=1.0, steps=np.array([100.0, 1e5]), delta=1e-7, bound="lower")
    with warnings.catch_warnings():
        warnings.simplefilter("error", C.OrderCapWarning)
        r = C.shuffled_checkin_epsilon(**kw)
    eps, order = np.asarray(r.epsilon), np.asarray(r.order)
    assert not C.order_at_cap(order, C.LOWER_ORDERS, eps).any()
    assert 2e4 < order[0] < 6e4 and 1e3 < order[1] < 2e3
    np.testing.assert_allclose(eps, [3.10e-4, 1.29e-2], rtol=0.02)
    assert eps[0] < 0.00367 / 10
    # the lower RDP curve is non-decreasing in the order (Eq. 8 alone peaks and decays like 2 ln(l) / l)
    rdp = np.asarray(C.shuffled_checkin_lower_rdp(C.LOWER_ORDERS, n=1e7, gamma=1e-3, eps0=1.0))
    assert np.all(np.diff(rdp) >= 0) and rdp[-1] > rdp[np.searchsorted(C.LOWER_ORDERS, 4e4)]
    # the old cap: best order 2048 = the grid's largest, flagged by a warning, and the value is the old floor
    with pytest.warns(C.OrderCapWarning, match="largest of the grid"):
        old = C.shuffled_checkin_epsilon(**{**kw, "steps": 100.0}, orders=[2.0, 64.0, 2048.0])
    assert float(old.order) == 2048.0 and float(old.epsilon) == pytest.approx(0.00367, rel=0.01)


def test_order_cap_flagged_by_the_registry():
    """Where the conversion's best order is the largest of the grid (2..64 here: much noise, one round), the
    Python function warns and the registry's bound reports status fallback (still a valid bound); elsewhere ok."""
    from amplify_jax import bounds

    bid, base = "checkin.distributed-gaussian", dict(n=1000, gamma=0.05, delta=1e-5)
    with pytest.warns(C.OrderCapWarning):
        d = C.distributed_gaussian_epsilon(sigma=30.0, steps=1, **base)
    assert float(d.order) == 64.0
    capped = bounds.evaluate(bid, sigma=30.0, steps=1, **base)
    assert float(capped.order) == 64.0 and int(np.ravel(capped.status)[0]) == Status.FALLBACK
    assert float(capped.epsilon) == float(d.epsilon)
    ok = bounds.evaluate(bid, sigma=1.0, steps=100, **base)
    assert float(ok.order) < 64.0 and int(np.ravel(ok.status)[0]) == Status.OK
    assert not C.order_at_cap([64.0, 7.0], C.CHECKIN_ORDERS, [0.0, 1.0]).any()  # eps 0 or inside: not flagged


# ----------------------------------------------------------------------------------------------------------
# Compiled programs (issue 25)


_ROUTES = {  # eps at x (sigma or eps0), its RDP curve, its orders
    "distributed-gaussian": (
        lambda s, **k: C.distributed_gaussian_epsilon(n=1000, gamma=0.05, sigma=s, **k),
        lambda s: C.distributed_gaussian_rdp(C.CHECKIN_ORDERS, n=1000, gamma=0.05, sigma=s), C.CHECKIN_ORDERS),
    "subsampled-shuffle": (  # converted at delta - T delta_round
        lambda e, **k: C.subsampled_shuffle_checkin_epsilon(n=10000, gamma=0.1, eps0=e, shuffle_delta=1e-8, **k),
        lambda e: C.subsampled_shuffle_checkin_rdp(RDP_DEFAULT_ORDERS, n=10000, gamma=0.1, eps0=e,
                                                   shuffle_delta=1e-8), RDP_DEFAULT_ORDERS),
    "shuffled-lower": (
        lambda e, **k: C.shuffled_checkin_epsilon(n=1000, gamma=0.1, eps0=e, bound="lower", **k),
        lambda e: C.shuffled_checkin_lower_rdp(C.LOWER_ORDERS, n=1000, gamma=0.1, eps0=e), C.LOWER_ORDERS),
}


@pytest.mark.parametrize("route", sorted(_ROUTES))
def test_epsilon_routes_compile_two_programs_per_shape(route):
    """Issue 25: an eps of the distributed Gaussian, the Sec. 4.1 route and the Thm 3 lower bound compiles its
    RDP kernel and one conversion program per shape (on da60679 a first call compiled 8, 7 and 5 programs: the
    eager jnp.asarray, multiply, broadcast and log of the composition and conversion, a small program each per
    shape); new values of the same shape and window compile nothing.  Shape (5,), which the registry (padded
    to 1, 8, 64, 256 points) does not use.  The conversion is conversions.epsilon_from_rdp's, bit for bit, on
    the composed curve."""
    from _compiles import compilations

    eps_of, rdp_of, orders = _ROUTES[route]
    x = np.linspace(0.8, 1.2, 5)
    with compilations() as got:
        r = eps_of(x, steps=100, delta=1e-5)
    assert len(got) <= 2, got
    with compilations() as got:
        r2 = eps_of(x * 1.05, steps=70, delta=2e-6)
    assert len(got) == 0, got
    assert np.all(np.isfinite(r2.epsilon)) and np.all(np.asarray(r2.epsilon) > 0)
    curve = rdp_of(x)
    if hasattr(curve, "delta"):
        curve, left = curve.rdp, 1e-5 - 100.0 * np.asarray(curve.delta)
    else:
        left = 1e-5
    ref = epsilon_from_rdp(orders, 100.0 * np.asarray(curve), delta=left)
    np.testing.assert_array_equal(np.asarray(r.epsilon), np.asarray(ref.epsilon))
    np.testing.assert_array_equal(np.asarray(r.order), np.asarray(ref.order))
