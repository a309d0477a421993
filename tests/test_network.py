"""Tests for amplify_jax.network (Cyffers & Bellet 2022): closed forms against independent computations,
corrected forms against the printed ones, orderings between composition theorems, calibration round trips,
and the walk simulation against a plain-Python reference."""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

import amplify_jax.network as N
from amplify_jax.accounting import approx_dp
from amplify_jax.network import _complete_graph, _walks
from amplify_jax.status import Status
from _monotone import assert_declared_monotone

mp.mp.dps = 40


# ---------------------------------------------------------------------------------------------------------
# independent references (written from the paper's statements, in mpmath / plain Python)


def mp_thm3(n, T, eps0, dp, dh):
    n, T, eps0 = mp.mpf(n), mp.mpf(T), mp.mpf(eps0)
    mu = T / n
    l = mp.log(1 / mp.mpf(dh))
    nv = mu + mp.sqrt(3 * mu * l) if 3 * l <= mu else mu + (l + mp.sqrt(l * l + 8 * mu * l)) / 2
    k = nv + T / n
    ec = 3 * eps0 / mp.sqrt(n)
    return mp.sqrt(2 * k * mp.log(1 / mp.mpf(dp))) * ec + k * ec * (mp.e**ec - 1), k


def kov35_ref(eps_list, dt):
    e = [mp.mpf(x) for x in eps_list]
    s1 = sum(e)
    s2 = sum(x * x for x in e)
    s3 = sum((mp.e**x - 1) * x / (mp.e**x + 1) for x in e)
    a = s3 + mp.sqrt(2 * s2 * mp.log(mp.e + mp.sqrt(s2) / dt))
    b = s3 + mp.sqrt(2 * s2 * mp.log(1 / mp.mpf(dt)))
    return min(s1, a, b)


def rr_delta(eps, eps0, k):
    """Hockey-stick delta of k-fold binary randomized response with parameter eps0 (exact, mpmath)."""
    eps0 = mp.mpf(eps0)
    p = 1 / (1 + mp.e**eps0)
    tot = mp.mpf(0)
    for l in range(k + 1):
        loss = (k - 2 * l) * eps0
        if loss > eps:
            tot += mp.binomial(k, l) * p**l * (1 - p) ** (k - l) * (1 - mp.e ** (eps - loss))
    return tot


# ---------------------------------------------------------------------------------------------------------
# Theorem 3 (App. D) and its correction


@pytest.mark.parametrize(
    "n,T,eps0,dp,dh",
    [(100, 10_000, 0.1, 1e-7, 1e-7), (1000, 100_000, 0.5, 1e-5, 1e-6), (1e10, 1e12, 0.9, 1e-12, 1e-9),
     (50, 200, 0.3, 1e-6, 1e-6)],  # the last one: T/n < 3 ln(1/delta_hat), general Chernoff form
)
def test_thm3_matches_mpmath(n, T, eps0, dp, dh):
    got = float(N.complete_graph_sum_epsilon(n=n, steps=T, eps0=eps0, delta_prime=dp, delta_hat=dh))
    ref, _ = mp_thm3(n, T, eps0, dp, dh)
    assert got == pytest.approx(float(ref), rel=1e-12)


def test_thm3_corrected_vs_printed():
    n, T, eps0, dp, dh = np.array([100.0, 1e4, 1e6]), 100.0 * np.array([100.0, 1e4, 1e6]), 0.5, 1e-7, 1e-7
    corr = np.asarray(N.complete_graph_sum_epsilon(n=n, steps=T, eps0=eps0, delta_prime=dp, delta_hat=dh))
    printed = _complete_graph._thm3_as_printed(n=n, T=T, eps0=eps0, delta_prime=dp, delta_hat=dh)
    k = 2 * T / n + np.sqrt(3 * T / n * np.log(1 / dh))
    ec = 3 * eps0 / np.sqrt(n)
    # the only difference is eps vs eps_c in the second term
    np.testing.assert_allclose(printed - corr, k * (eps0 - ec) * np.expm1(ec), rtol=1e-10)
    assert np.all(printed > corr)  # n > 9: eps_c < eps


def test_thm3_bound_delta_colluders_and_fixed():
    b = N.complete_graph_sum_bound(n=1000, steps=100_000, eps0=0.1, delta0=1e-8, delta_prime=1e-7, delta_hat=1e-7,
                                   cycle_delta="paper")
    _, k = mp_thm3(1000, 100_000, 0.1, 1e-7, 1e-7)
    assert float(b.delta) == pytest.approx(float(k) * 1e-8 + 2e-7, rel=1e-12)
    bg = N.complete_graph_sum_bound(n=1000, steps=100_000, eps0=0.1, delta0=1e-8, delta_prime=1e-7, delta_hat=1e-7)
    assert float(bg.epsilon) == float(b.epsilon) and float(bg.delta) > float(b.delta)
    assert bool(b.valid)
    # Sec. 4.3: c colluders = n / c users
    c = N.complete_graph_sum_bound(n=1000, steps=100_000, eps0=0.1, delta0=1e-8, delta_prime=1e-7, delta_hat=1e-7,
                                   colluders=4)
    ref, _ = mp_thm3(250, 100_000, 0.1, 1e-7, 1e-7)
    assert float(c.epsilon) == pytest.approx(float(ref), rel=1e-12)
    assert float(c.epsilon) > float(b.epsilon)
    f = N.complete_graph_sum_bound(n=1000, steps=100_000, eps0=0.1, delta0=1e-8, delta_prime=1e-7, delta_hat=1e-7,
                                   fixed_contributions=True)
    ec = 0.3 / math.sqrt(1000)
    assert float(f.epsilon) == pytest.approx(math.sqrt(400 * math.log(1e7)) * ec + 200 * ec * math.expm1(ec), rel=1e-12)
    # the general Chernoff form is flagged
    g = N.complete_graph_sum_bound(n=50, steps=200, eps0=0.1, delta0=0.0, delta_prime=1e-7, delta_hat=1e-7,
                                   cycle_delta="paper")
    assert not bool(g.valid)


@pytest.mark.parametrize("n,T,dh", [(100, 10_000, 1e-6), (400, 2_000, 1e-3), (1000, 5_000, 1e-5), (30, 30, 1e-4)])
def test_chernoff_count_is_a_valid_tail_bound(n, T, dh):
    N_, _ = N.contribution_bound(n=n, steps=T, delta_hat=dh)
    assert stats.binom.sf(math.ceil(float(N_)) - 1, T, 1.0 / n) <= dh  # P(X >= N) <= delta_hat


def test_thm3_broadcasting():
    n = np.array([[100.0], [1000.0], [1e5]])
    eps0 = np.array([0.1, 0.5])
    got = np.asarray(N.complete_graph_sum_epsilon(n=n, steps=1e6, eps0=eps0, delta_prime=1e-6, delta_hat=1e-6))
    assert got.shape == (3, 2)
    for i in range(3):
        for j in range(2):
            assert got[i, j] == pytest.approx(float(mp_thm3(n[i, 0], 1e6, eps0[j], 1e-6, 1e-6)[0]), rel=1e-12)


@settings(deadline=None, derandomize=True, max_examples=25)
@given(st.floats(0.01, 0.95), st.floats(0.01, 0.95), st.integers(2, 10**6), st.integers(1, 10**8))
def test_thm3_monotone(e1, e2, n, T):
    lo, hi = sorted((e1, e2))
    a = N.complete_graph_sum_epsilon(n=n, steps=T, eps0=np.array([lo, hi]), delta_prime=1e-6, delta_hat=1e-6)
    assert a[0] <= a[1]
    b = N.complete_graph_sum_epsilon(n=n, steps=np.array([T, T + 1000]), eps0=hi, delta_prime=1e-6, delta_hat=1e-6)
    assert b[0] <= b[1]
    c = N.complete_graph_sum_epsilon(n=n, steps=T, eps0=hi, delta_prime=np.array([1e-9, 1e-3]), delta_hat=1e-6)
    assert c[0] >= c[1]


def test_eq10_matches_mpmath():
    for n, m, ea in [(10, 3, 0.5), (1e6, 1e6, 0.01), (1e9, 10, 2.0)]:
        ref = mp.log(1 + (1 - (1 - 1 / mp.mpf(n)) ** m) * (mp.e ** mp.mpf(ea) - 1))
        assert float(N.subsampled_cycle_epsilon(n=n, m=m, eps_aggregate=ea)) == pytest.approx(float(ref), rel=1e-12)


def test_local_sum_bound_and_network_gain():
    loc = N.local_sum_bound(n=1000, steps=100_000, eps0=0.1, delta0=0.0, delta_prime=1e-7, delta_hat=1e-7)
    mu = 100.0
    nv = mu + math.sqrt(3 * mu * math.log(1e7))
    assert float(loc.epsilon) == pytest.approx(math.sqrt(2 * nv * math.log(1e7)) * 0.1 + nv * 0.1 * math.expm1(0.1))
    net = N.complete_graph_sum_epsilon(n=1000, steps=100_000, eps0=0.1, delta_prime=1e-7, delta_hat=1e-7)
    assert float(net) < float(loc.epsilon)
    # Fig. 1(a): network DP beats local DP "as soon as n >= 20" (T = 100 n); not at n = 10
    ns = np.array([10.0, 20.0, 50.0])
    net = np.asarray(N.complete_graph_sum_epsilon(n=ns, steps=100 * ns, eps0=0.1, delta_prime=1e-7, delta_hat=1e-7))
    loc = np.asarray(N.local_sum_bound(n=ns, steps=100 * ns, eps0=0.1, delta0=0.0, delta_prime=1e-7,
                                       delta_hat=1e-7).epsilon)
    assert net[0] > loc[0] and net[1] < loc[1] and net[2] < loc[2]


# ---------------------------------------------------------------------------------------------------------
# composition


def test_kov_matches_reference_heterogeneous():
    rng = np.random.default_rng(0)
    e = rng.uniform(0.0, 0.3, size=(3, 50))
    got = np.asarray(N.kov_composition_epsilon(e, delta_tilde=np.array([1e-5, 1e-7, 0.3])))
    for i, dt in enumerate([1e-5, 1e-7, 0.3]):
        assert got[i] == pytest.approx(float(kov35_ref(e[i], dt)), rel=1e-11)
    # zero padding changes nothing
    pad = np.concatenate([e, np.zeros((3, 7))], axis=1)
    np.testing.assert_allclose(np.asarray(N.kov_composition_epsilon(pad, delta_tilde=1e-5)),
                               np.asarray(N.kov_composition_epsilon(e, delta_tilde=1e-5)), rtol=1e-14)


@settings(deadline=None, derandomize=True, max_examples=25)
@given(st.floats(1e-3, 2.0), st.integers(1, 2000), st.floats(1e-10, 0.5))
def test_kov_ordering(eps, k, dt):
    padded = np.where(np.arange(2000) < k, eps, 0.0)  # fixed shape: one compilation for all examples
    kov = float(N.kov_composition_epsilon(padded, delta_tilde=dt))
    adv = float(N.advanced_composition_epsilon(eps, steps=k, delta_prime=dt))
    assert kov <= adv * (1 + 1e-12) and kov <= k * eps * (1 + 1e-12)


@pytest.mark.parametrize("eps0,k,delta", [(0.1, 100, 1e-5), (0.5, 40, 1e-3), (1.0, 7, 0.05), (0.05, 300, 1e-7)])
def test_kov_homogeneous_is_optimal_atom(eps0, k, delta):
    e = float(N.kov_homogeneous_epsilon(eps0=eps0, steps=k, delta=delta))
    assert rr_delta(mp.mpf(e), eps0, k) <= delta * (1 + 1e-9)
    if e > 0:  # the next smaller atom misses the target
        assert rr_delta(mp.mpf(e) - 2 * mp.mpf(eps0), eps0, k) > delta or e - 2 * eps0 < 0
    # the exact optimum is below the general Thm 3.5 bound at the same delta
    assert e <= float(N.kov_composition_epsilon(np.full(k, eps0), delta_tilde=delta)) + 2 * eps0 + 1e-12


def test_kov_delta():
    d = float(N.kov_composition_delta(np.array([1e-3, 2e-3]), delta_tilde=1e-4))
    assert d == pytest.approx(1 - (1 - 1e-4) * (1 - 1e-3) * (1 - 2e-3), rel=1e-12)


# ---------------------------------------------------------------------------------------------------------
# ring


def test_ring_thm1_and_noise():
    b = N.ring_sum_bound(steps=50, eps0=0.2, delta0=1e-8, delta_prime=1e-6)
    assert float(b.epsilon) == pytest.approx(math.sqrt(100 * math.log(1e6)) * 0.2 + 50 * 0.2 * math.expm1(0.2))
    assert float(b.delta) == pytest.approx(50e-8 + 1e-6)
    r = N.ring_noise(n=10, steps=7, sigma_loc=2.0)
    assert float(r.total_std) == pytest.approx(math.sqrt(math.floor(70 / 9)) * 2.0)
    d = N.ring_noise(n=10, steps=7, sigma_loc=2.0, distributed=True)
    # every window of n - 1 = 9 consecutive non-first contributions carries sigma_loc^2 of variance
    assert 9 * float(d.per_user_sigma) ** 2 == pytest.approx(4.0)
    assert float(d.total_std) ** 2 == pytest.approx(4.0 + 69 * float(d.per_user_sigma) ** 2)


def test_ring_histogram():
    g = float(N.ring_histogram_gamma(n=2000, L=10, target_epsilon=0.3, delta=1e-6))
    eps_l = math.log(1 + 10 * (1 - g) / g)
    assert eps_l == pytest.approx(12 * 0.3 * math.sqrt(math.log(1e6) / 2000), rel=1e-12)
    b = N.ring_histogram_bound(n=2000, steps=10, eps0=0.4, delta=1e-6, delta_prime=1e-6)
    per = 12 * 0.4 * math.sqrt(math.log(1e6) / 1999)
    assert float(b.epsilon) == pytest.approx(math.sqrt(20 * math.log(1e6)) * per + 10 * per * math.expm1(per))
    f = N.ring_histogram_bound(n=2000, steps=10, eps0=0.4, delta=1e-6, delta_prime=1e-6, form="fmt")
    assert float(f.epsilon) <= float(b.epsilon)
    with pytest.raises(ValueError, match=r"n in integers 1001\.\..*Theorem 2"):  # Thm 2's n > 1000
        N.ring_histogram_bound(n=500, steps=10, eps0=0.4, delta=1e-6, delta_prime=1e-6)
    with pytest.raises(ValueError, match=r"target_epsilon in \(0, 0\.5\)"):
        N.ring_histogram_gamma(n=2000, L=10, target_epsilon=0.6, delta=1e-6)


# ---------------------------------------------------------------------------------------------------------
# histograms on the complete graph (Thm 6, App. E)


def test_fmt_in_kernels_public_value_and_condition():
    """The FMT closed form used inside network's kernels: the clones code's README value, and eps0 outside
    the condition eps0 <= ln(n / (16 ln(4/delta)))."""
    import jax.numpy as jnp
    from amplify_jax.internal import x64_scope

    eps0 = np.array([4.0, 3.0, 1.0])
    n = np.array([1e5, 100.0, 1e4])
    with x64_scope():
        got, ok = approx_dp.fmt_closed_form(jnp.asarray(eps0), jnp.asarray(n), jnp.asarray(1e-6))
    assert abs(float(got[0]) - 0.5378040242374512) <= 1e-13
    assert list(np.asarray(ok)) == [True, False, True]
    assert float(got[1]) == 3.0  # ln(100 / (16 ln(4e6))) < 0: no amplification claimed
    assert 0 < float(got[2]) < 1.0


def brute_hist_sup(n, eps0, delta):
    m = np.arange(1, int(n) + 1, dtype=np.float64)
    l4 = np.log(4 / delta)
    ac = 8 * np.sqrt(np.exp(eps0) * l4 / m) + 8 * np.exp(eps0) / m
    fmt = np.log1p(-np.expm1(-eps0) / (1 + np.exp(-eps0 - np.log1p(ac))) * ac)
    ok = eps0 <= np.log(m / (16 * l4))
    ea = np.where(ok, np.minimum(fmt, eps0), eps0)
    return np.max(np.log1p(-np.expm1(m * np.log1p(-1 / n)) * np.expm1(ea)))


@pytest.mark.parametrize("n,eps0", [(300, 0.5), (5000, 1.0), (20000, 0.2), (3000, 2.5)])
def test_hist_cycle_sup_is_sound_and_tight(n, eps0):
    import jax.numpy as jnp
    from amplify_jax.internal import x64_scope

    with x64_scope():
        got = float(_complete_graph._hist_cycle_sup(jnp.asarray([float(n)]), jnp.asarray([eps0]), jnp.asarray([1e-6]))[0])
    ref = brute_hist_sup(n, eps0, 1e-6)
    assert ref * (1 - 1e-12) <= got <= ref * 1.02


def test_hist_eq11_dominates_fmt_form():
    kw = dict(steps=1e8, delta_prime=1e-7, delta_hat=1e-7)
    for n in [5000.0, 1e5, 1e7]:
        for e0 in [0.1, 0.5, 1.0]:
            a = N.complete_graph_histogram_bound(n=n, eps0=e0, delta=1e-6, form="eq11", **kw)
            b = N.complete_graph_histogram_bound(n=n, eps0=e0, delta=1e-6, form="fmt", **kw)
            assert float(b.epsilon) <= float(a.epsilon)
    a = N.complete_graph_histogram_bound(n=1e5, eps0=0.5, delta=1e-6, form="eq11", **kw)
    nv = 1000 + math.sqrt(3000 * math.log(1e7))
    k = nv + 1000
    ec = 21 * math.sqrt(math.log(4e6)) * 0.5 / math.sqrt(1e5)
    assert float(a.epsilon) == pytest.approx(math.sqrt(2 * k * math.log(1e7)) * ec + k * ec * math.expm1(ec))
    a = N.complete_graph_histogram_bound(n=1e5, eps0=0.5, delta=1e-6, form="eq11", cycle_delta="paper", **kw)
    assert float(a.delta) == pytest.approx(k * 1e-6 + 2e-7)
    with pytest.raises(ValueError, match="14\\^2"):
        N.complete_graph_histogram_bound(n=1000, eps0=0.5, delta=1e-6, form="eq11", **kw)


# ---------------------------------------------------------------------------------------------------------
# spotted contributions (App. G)


def test_spotted_lemma2_corrected():
    n, nu, e, dp, dt = 100, 10_000, 0.1, 1e-6, 1e-6
    s = 2 * nu / n + math.sqrt(6 * nu / n * math.log(1 / dt))  # paper's Chernoff form applies (200 >= 3 ln 1e6)
    adv = N.spotted_contributions_epsilon(n=n, contributions=nu, eps0=e, delta_prime=dp, delta_tilde=dt)
    assert float(adv.spotted) == pytest.approx(s) and bool(adv.valid)
    corrected = math.sqrt(2 * s * math.log(1 / dp)) * e + s * e * math.expm1(e)
    printed = math.sqrt(s * math.log(1 / dp)) * e + s * e * math.expm1(e)
    assert float(adv.epsilon) == pytest.approx(min(corrected, s * e))
    assert float(adv.epsilon) > printed
    simple = N.spotted_contributions_epsilon(n=n, contributions=nu, eps0=e, delta_prime=dp, delta_tilde=dt,
                                             composition="simple")
    assert float(simple.epsilon) == pytest.approx(s * e)


# ---------------------------------------------------------------------------------------------------------
# SGD: Thm 4, Lemma 1, Remark 5, baselines, calibration


def test_thm4_matches_formula_and_lemma1_is_tighter():
    n, T, eps, delta, dh = 2000, 4_000_000, 0.5, 1e-6, 1e-6
    b = N.sgd_theorem4_bound(n=n, steps=T, eps0=eps, delta=delta, delta_hat=dh)
    nu = T / n + math.sqrt(3 * T / n * math.log(1 / dh))
    q = max(2 * nu * math.log(n) / n, 2 * math.log(1 / delta))
    ref = math.sqrt(2 * q * math.log(1 / delta)) * eps / math.sqrt(math.log(1.25 / delta))
    assert float(b.epsilon) == pytest.approx(ref, rel=1e-12) and bool(b.valid)
    assert float(b.delta) == pytest.approx(delta + dh)
    sigma = math.sqrt(8 * math.log(1.25 / delta)) / eps
    num = N.network_sgd_epsilon(sigma=sigma, n=n, contributions=nu, delta=delta, method="mironov")
    assert float(num.epsilon) <= float(b.epsilon)


def test_lemma1_rdp_and_constraint():
    curve = np.asarray(N.network_sgd_rdp([2.0, 3.0], sigma=10.0, n=100, contributions=5, lipschitz=1.0))
    np.testing.assert_allclose(curve, 4 * 5 * np.array([2.0, 3.0]) * math.log(100) / (100 * 100), rtol=1e-13)
    with pytest.raises(ValueError, match="sigma"):
        N.network_sgd_rdp([2.0, 10.0], sigma=3.0, n=100, contributions=5)  # needs sigma >= sqrt(180)
    with pytest.raises(ValueError, match="sigma"):
        N.network_sgd_epsilon(sigma=3.0, n=100, contributions=5, delta=1e-6, order=10.0)


@pytest.mark.parametrize("sigma", [0.8, 3.0, 30.0])
def test_network_sgd_order_search_is_near_optimal_and_admissible(sigma):
    n, tu, delta = 2000, 12, 1e-6
    r = N.network_sgd_epsilon(sigma=sigma, n=n, contributions=tu, delta=delta)
    a = float(r.order)
    assert sigma >= math.sqrt(2 * a * (a - 1))
    c = 4 * tu * math.log(n) / (sigma**2 * n)
    amax = (1 + math.sqrt(1 + 2 * sigma**2)) / 2
    grid = 1 + (amax - 1) * np.exp(np.linspace(-16, 0, 200001))
    brute = np.min(c * grid + np.log1p(-1 / grid) - (np.log(delta) + np.log(grid)) / (grid - 1))
    assert float(r.epsilon) == pytest.approx(max(brute, 0.0), rel=1e-7, abs=1e-12)
    assert float(r.epsilon) <= max(brute, 0.0) * (1 + 1e-9) + 1e-12 or float(r.epsilon) >= brute


def test_local_sgd_mironov_closed_form():
    sigma, tu, delta = 5.0, 12, 1e-6
    c = 2 * tu / sigma**2
    r = N.local_sgd_epsilon(sigma=sigma, contributions=tu, delta=delta, method="mironov")
    assert float(r.epsilon) == pytest.approx(c + 2 * math.sqrt(c * math.log(1 / delta)), rel=1e-10)


def test_central_sgd_against_dp_accounting():
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant as rdpa

    sigma, n, T, delta = np.array([4.0, 1.5]), 2000, 20_000, 1e-6
    ours = np.asarray(N.central_sgd_epsilon(sigma=sigma, n=n, steps=T, delta=delta).epsilon)
    for i, sg in enumerate(sigma):
        acc = rdpa.RdpAccountant(orders=list(range(2, 129)),
                                 neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
        ev = dpa.SampledWithoutReplacementDpEvent(n, 1, dpa.GaussianDpEvent(sg / 2.0))  # sensitivity 2L = 2
        acc.compose(ev, T)
        assert ours[i] == pytest.approx(acc.get_epsilon(delta), rel=0.05)


def gauss_delta(eps, r):
    return stats.norm.cdf(r / 2 - eps / r) - math.exp(eps) * stats.norm.cdf(-r / 2 - eps / r)


def test_central_bassily_route():
    import jax
    import jax.numpy as jnp
    from amplify_jax.internal import x64_scope

    r = np.array([0.5, 2.0, 0.05])
    d1 = np.array([1e-5, 1e-8, 0.05])
    with x64_scope():
        e = np.asarray(jax.jit(approx_dp.analytic_gaussian_epsilon)(jnp.asarray(r), jnp.log(jnp.asarray(d1))))
    for ei, ri, di in zip(e, r, d1):
        assert gauss_delta(ei, ri) <= di * (1 + 1e-9)
        assert ei == 0.0 or gauss_delta(ei * (1 - 1e-6), ri) > di
    sigma, n, T, delta = np.array([6.0, 30.0]), 2000, 20_000, 1e-6  # shape (2,) as in the calibration tests
    b = np.asarray(N.central_sgd_bassily_epsilon(sigma=sigma, n=n, steps=T, delta=delta).epsilon)
    for i, sg in enumerate(sigma):
        d1 = n * delta / (2 * T)
        ratio = 2.0 / sg
        lo, hi = 0.0, 50.0
        for _ in range(200):  # independent bisection with scipy's normal cdf
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if gauss_delta(mid, ratio) <= d1 else (mid, hi)
        e2 = math.log1p(math.expm1(hi) / n)
        ref = math.sqrt(2 * T * math.log(2 / delta)) * e2 + T * e2 * math.expm1(e2)
        assert b[i] == pytest.approx(ref, rel=1e-9)
    # far looser than the RDP accountant of the same central algorithm
    assert np.all(np.asarray(N.central_sgd_epsilon(sigma=sigma, n=n, steps=T, delta=delta).epsilon) < b)


def test_overflowing_bounds_are_flagged_not_silent():
    """Where advanced composition leaves float64 the answer is +inf, and says so: the Bassily route's valid is
    False (status error in the registry, sigma / L = 0.01 inside its domain); the local baseline refuses eps0
    = 1e300 with a ValueError naming eps0 (it answered +inf with valid True)."""
    from amplify_jax import bounds
    from amplify_jax.status import Status

    r = N.central_sgd_bassily_epsilon(sigma=[0.01, 1.0], n=1000, steps=100, delta=1e-5)
    assert np.isinf(r.epsilon[0]) and not bool(r.valid[0]) and bool(r.valid[1]) and np.isfinite(r.epsilon[1])
    res = bounds.evaluate("network.central-sgd-bassily", sigma=[0.01, 1.0], n=1000, steps=100, delta=1e-5,
                          lipschitz=1.0)
    assert list(res.status) == [Status.ERROR, Status.OK] and np.isinf(res.epsilon[0])
    with pytest.raises(ValueError, match="eps0=1e"):
        N.local_sum_bound(n=100, steps=1000, eps0=1e300, delta0=0.0, delta_prime=1e-6, delta_hat=1e-6)


SEC52 = dict(delta=1e-6, n=2000, steps=20_000)


@pytest.mark.parametrize("setting", ["network", "local", "central", "central_bassily"])
def test_calibration_round_trip(setting):
    eps = np.array([1.0, 10.0])
    kw = dict(contributions=12) if setting in ("network", "local") else {}
    inv = N.sgd_calibrate_sigma(target_epsilon=eps, setting=setting, **SEC52, **kw)
    assert np.all(np.asarray(inv.status) == 0)
    assert isinstance(inv, N.SgdCalibration) and inv._fields == ("sigma", "status", "epsilon")
    s = np.asarray(inv.sigma)
    assert np.all(np.asarray(inv.epsilon) <= eps)
    if setting == "network":
        def f(x):
            return np.asarray(N.network_sgd_epsilon(sigma=x, n=2000, contributions=12, delta=1e-6).epsilon)
    elif setting == "local":
        f = lambda x: np.asarray(N.local_sgd_epsilon(sigma=x, contributions=12, delta=1e-6).epsilon)  # noqa: E731
    elif setting == "central":
        f = lambda x: np.asarray(N.central_sgd_epsilon(sigma=x, n=2000, steps=20_000, delta=1e-6).epsilon)  # noqa: E731
    else:
        def f(x):
            return np.asarray(N.central_sgd_bassily_epsilon(sigma=x, n=2000, steps=20_000, delta=1e-6).epsilon)
    assert np.all(f(s) <= eps)
    assert np.all(f(s * (1 - 1e-4)) > eps)


def test_calibration_orders_settings():
    eps = np.array([1.0, 10.0])
    net = np.asarray(N.sgd_calibrate_sigma(target_epsilon=eps, setting="network", contributions=12, **SEC52).sigma)
    loc = np.asarray(N.sgd_calibrate_sigma(target_epsilon=eps, setting="local", contributions=12, **SEC52).sigma)
    cen = np.asarray(N.sgd_calibrate_sigma(target_epsilon=eps, setting="central", **SEC52).sigma)
    assert np.all(cen < net) and np.all(net < loc)


def test_sgd_calibration_names_its_fields():
    """sgd_calibrate_sigma's result keeps amplify_jax.calibrate.Inversion's order (value, status, achieved) with
    the fields named (sigma, status, epsilon); the generic names of before are gone (CHANGELOG.md)."""
    cal = N.sgd_calibrate_sigma(target_epsilon=1.0, delta=1e-5, n=1000, steps=10**4, setting="central")
    assert cal._fields == ("sigma", "status", "epsilon") and not hasattr(cal, "value")
    sigma, status, eps = cal
    assert float(sigma) == float(cal.sigma) and int(status) == Status.OK and float(eps) <= 1.0


# ---------------------------------------------------------------------------------------------------------
# walk simulation against a plain-Python reference


def ref_walk_losses(walk, n, eps0, dt, view, d0=1e-6):
    """Loop implementation of the simulation, written from the docstring of walk_privacy_losses (Gaussian)."""
    T = len(walk)
    out = np.zeros((n, n))
    for v in range(n):
        visits = [t for t in range(T) if walk[t] == v]
        per_u = {u: [] for u in range(n) if u != v}
        prev = -1
        for t in visits:
            m = t - prev - 1
            if view == "path_known":  # one item per (cycle, u): Gaussian with sensitivity k = multiplicity
                for u in set(walk[prev + 1:t]):
                    k = walk[prev + 1:t].count(u)
                    lin = k * eps0 / math.sqrt(m)
                    r = lin / math.sqrt(2 * math.log(1.25 / d0))
                    per_u[u].append(lin if lin < 1 else r * r / 2 + r * math.sqrt(2 * math.log(1 / d0)))
            else:
                known = []
                if view == "receiver_known" and m >= 1:
                    known.append(t - 1)
                    if prev >= 0 and m >= 2:
                        known.append(prev + 1)
                mid = m - len(known)
                e = 0.0
                if mid > 0:
                    q = 1 - (1 - 1 / (n - 1)) ** mid
                    e = math.log1p(q * math.expm1(eps0 / math.sqrt(mid)))
                for u in per_u:
                    if e > 0:
                        per_u[u].append(e)
                for s in known:
                    per_u[walk[s]].append(eps0)
            prev = t
        for u, lst in per_u.items():
            out[u, v] = float(kov35_ref(lst, dt)) if lst else 0.0
    return out


@pytest.mark.parametrize("view", ["hidden", "receiver_known", "path_known"])
def test_walk_simulation_matches_loop_reference(view):
    n, T = 6, 80
    walks = np.asarray(N.sample_walks(3, n=n, steps=T, num_walks=2))
    res = N.walk_privacy_losses(walks, n=n, eps0=0.4, delta_prime=1e-5, delta_cycle=1e-6, view=view)
    for i in range(2):
        ref = ref_walk_losses(list(walks[i]), n, 0.4, 1e-5, view)
        np.testing.assert_allclose(np.asarray(res.network[i]), ref, rtol=1e-10, atol=1e-14)
    counts = np.bincount(walks[0], minlength=n)
    for u in range(n):
        assert float(res.local[0, u]) == pytest.approx(float(kov35_ref([0.4] * counts[u], 1e-5)), rel=1e-10)


def test_ring_simulation_gives_closed_form():
    n, K = 12, 30
    walks = N.sample_walks(0, n=n, steps=n * K, num_walks=1, topology="ring")
    res = N.walk_privacy_losses(walks, n=n, eps0=0.3, delta_prime=1e-6, delta_cycle=1e-7, view="path_known")
    e = 0.3 / math.sqrt(n - 1)
    # u < v: u is in v's first (partial) cycle of length v, then in each of the K - 1 full cycles
    for u, v in [(0, 5), (3, 11), (7, 2)]:
        items = [e] * (K - 1) + ([0.3 / math.sqrt(v)] if u < v else [])
        assert float(res.network[0, u, v]) == pytest.approx(float(kov35_ref(items, 1e-6)), rel=1e-10)
    # and the delta of K - 1 (+1) cycles at delta_cycle each
    cnt = (K - 1) + 1
    assert float(res.network_delta[0, 0, 5]) == pytest.approx(1 - (1 - 1e-6) * (1 - 1e-7) ** cnt, rel=1e-9)


def test_walk_simulation_properties():
    n = 6  # the shapes of the loop-reference test: compiled once
    walks = N.sample_walks(1, n=n, steps=80, num_walks=2)
    h = N.walk_privacy_losses(walks, n=n, eps0=0.4, delta_prime=1e-7, delta_cycle=1e-7)
    r = N.walk_privacy_losses(walks, n=n, eps0=0.4, delta_prime=1e-7, delta_cycle=1e-7, view="receiver_known")
    net = np.asarray(h.network)
    off = ~np.eye(n, dtype=bool)
    # hidden view: the loss depends on the observer only
    masked = np.where(off[None], net, np.nan)
    assert np.allclose(np.nanmax(masked, axis=1), np.nanmin(masked, axis=1), rtol=1e-13)
    assert float(N.summarize_walk_losses(h.network).mean) < float(N.summarize_walk_losses(h.local).mean)
    assert float(N.summarize_walk_losses(r.network).max) >= float(N.summarize_walk_losses(h.network).max)
    hist = N.walk_privacy_losses(walks, n=n, eps0=0.4, delta_prime=1e-7, delta_cycle=1e-7, mechanism="histogram")
    assert np.all(np.asarray(hist.network)[:, off] <= np.asarray(hist.local)[:, :, None].max() + 1e-12)


# ---------------------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize(
    "call,match",
    [
        # each parameter's domain: tests/test_network_params.py (every function, at the ends of its Params)
        (lambda: N.complete_graph_sum_bound(n=10, steps=10, eps0=0.1, delta0=0, delta_prime=1e-6, delta_hat=1e-6,
                                            colluders=10), "colluders"),
        (lambda: N.sgd_calibrate_sigma(target_epsilon=1.0, delta=1e-6, n=10, steps=10, setting="local"),
         "contributions"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@settings(deadline=None, derandomize=True, max_examples=25)
@given(st.floats(0.3, 200.0), st.floats(1.0001, 1.5), st.integers(1, 200))
def test_sgd_epsilons_decrease_in_sigma(sigma, ratio, tu):
    s = np.array([sigma, sigma * ratio])
    net = np.asarray(N.network_sgd_epsilon(sigma=s, n=2000, contributions=float(tu), delta=1e-6).epsilon)
    loc = np.asarray(N.local_sgd_epsilon(sigma=s, contributions=float(tu), delta=1e-6).epsilon)
    assert net[1] <= net[0] * (1 + 1e-9) and loc[1] <= loc[0] * (1 + 1e-9)


def test_path_known_repeated_contributions_use_group_sensitivity():
    walk = [0, 1, 1, 0, 2, 2, 2, 0, 1, 2, 0, 3, 1, 1, 1, 1, 0]  # u repeats inside v = 0's cycles
    n = 4
    res = N.walk_privacy_losses(np.array([walk]), n=n, eps0=0.9, delta_prime=1e-5, delta_cycle=1e-6,
                                view="path_known")
    ref = ref_walk_losses(walk, n, 0.9, 1e-5, "path_known")
    np.testing.assert_allclose(np.asarray(res.network[0]), ref, rtol=1e-10, atol=1e-14)
    # u = 1 appears 4 times in v = 0's last cycle (m = 5): sensitivity 4, past the classical regime
    assert 4 * 0.9 / math.sqrt(5) > 1


def test_group_delta_table_matches_scipy():
    import jax.numpy as jnp
    from amplify_jax.internal import x64_scope

    n, eps0, d0, T = 50, 0.4, 1e-7, 200
    import jax

    table = jax.jit(_walks._group_delta_table, static_argnums=(0, 4))
    with x64_scope():
        tab = np.asarray(table(T, jnp.asarray(float(n)), jnp.asarray(eps0), jnp.asarray(d0), "gaussian"))
    c0 = math.sqrt(2 * math.log(1.25 / d0))
    for m in (1, 7, 49, 200):
        ea = eps0 / math.sqrt(m)
        ref = stats.binom.pmf(1, m, 1 / (n - 1)) * d0
        for k in range(2, m + 1):
            r = k * eps0 / (math.sqrt(m) * c0)
            ref += stats.binom.pmf(k, m, 1 / (n - 1)) * gauss_delta(ea, r)
        got = -math.expm1(tab[m])
        if m <= 24:
            assert got == pytest.approx(ref, rel=1e-8, abs=1e-300)
        else:  # k >= 25 is charged delta = 1 with a Chernoff bound on P(K >= 25): a little above the exact sum
            assert ref * (1 - 1e-10) <= got <= ref + 1e-9
    assert tab[0] == 0.0
    # the paper's per-cycle delta omits the K >= 2 terms: much smaller than the group delta
    walks = N.sample_walks(0, n=6, steps=80, num_walks=2)
    kw = dict(n=6, eps0=0.4, delta_prime=1e-5, delta_cycle=1e-6)
    g = N.walk_privacy_losses(walks, **kw)
    p = N.walk_privacy_losses(walks, **kw, cycle_delta="paper")
    np.testing.assert_array_equal(np.asarray(g.network), np.asarray(p.network))
    off = ~np.eye(6, dtype=bool)
    assert np.all(np.asarray(g.network_delta)[:, off] > np.asarray(p.network_delta)[:, off])


def test_closed_group_delta_bounds_every_cycle_length():
    import jax
    import jax.numpy as jnp
    from amplify_jax.internal import x64_scope

    n, eps0, d0 = 60, 0.4, 1e-6
    with x64_scope():
        got = float(jax.jit(_complete_graph._closed_group_delta, static_argnums=3)(jnp.asarray([float(n)]), jnp.asarray([eps0]),
                                                                      jnp.asarray([d0]), True)[0])
    c0 = math.sqrt(2 * math.log(1.25 / d0))
    best = 0.0
    for m in range(1, n + 1):  # exact Thm 10 delta' of a cycle of length m (population n, as in App. D)
        ea = eps0 / math.sqrt(m)
        tot = stats.binom.pmf(1, m, 1 / n) * d0
        for k in range(2, m + 1):
            tot += stats.binom.pmf(k, m, 1 / n) * gauss_delta(ea, k * eps0 / (math.sqrt(m) * c0))
        best = max(best, tot)
    assert best * (1 - 1e-9) <= got <= best * 1.01


def test_network_sgd_fixed_order_and_collusion():
    sigma, n, tu, delta, a = 20.0, 2000, 12, 1e-6, 8.0
    r = N.network_sgd_epsilon(sigma=sigma, n=n, contributions=tu, delta=delta, order=a)
    c = 4 * tu * math.log(n) / (sigma**2 * n)
    ref = c * a + math.log1p(-1 / a) - (math.log(delta) + math.log(a)) / (a - 1)  # Balle et al. 2020
    assert float(r.epsilon) == pytest.approx(ref, rel=1e-12) and float(r.order) == a
    m = N.network_sgd_epsilon(sigma=sigma, n=n, contributions=tu, delta=delta, order=a, method="mironov")
    assert float(m.epsilon) == pytest.approx(c * a - math.log(delta) / (a - 1), rel=1e-12)
    # the optimised order is at least as good as any fixed admissible one; collusions (n -> n/c) cost privacy
    assert float(N.network_sgd_epsilon(sigma=sigma, n=n, contributions=tu, delta=delta).epsilon) <= float(r.epsilon)
    c5 = N.network_sgd_epsilon(sigma=sigma, n=n, contributions=tu, delta=delta, order=a, colluders=5)
    c_5 = 4 * tu * math.log(n / 5) / (sigma**2 * n / 5)
    assert float(c5.epsilon) == pytest.approx(c_5 * a + math.log1p(-1 / a) - (math.log(delta) + math.log(a)) / (a - 1))


@pytest.mark.slow
def test_clones_step_table_is_sound():
    shuffle = pytest.importorskip("amplify_jax.shuffle")
    tab = _walks._clones_table_full(0.5, 512, 1e-6)
    m = np.array([1, 37, 65, 100, 233, 512])
    direct = shuffle.clones_epsilon(0.5, m, 1e-6)
    exact = np.where(np.asarray(direct.valid), np.minimum(np.asarray(direct.upper), 0.5), 0.5)
    assert np.all(tab[m] >= exact * (1 - 1e-9))
    assert np.all(np.diff(tab[1:]) <= 1e-12)


# ----------------------------------------------------------------------------------------------------------
# The registered bounds of this family (amplify_jax.bounds): kernels equal the direct calls, and every declared
# monotone direction holds on a grid (tests/test_bounds.py only checks one step around the example)


def _network_bounds():
    from amplify_jax import bounds

    return bounds.list("network")


@pytest.mark.parametrize("bound", _network_bounds(), ids=lambda b: b.id)
def test_registered_monotone_directions_hold_on_a_grid(bound):
    assert_declared_monotone(bound, bound.example)


def test_registered_kernels_equal_the_direct_calls():
    from amplify_jax import bounds

    r = bounds.evaluate("network.sgd", sigma=[5.0, 20.0], n=1000, contributions=100.0, delta=1e-5)
    d = N.network_sgd_epsilon(sigma=np.array([5.0, 20.0]), n=1000, contributions=100.0, delta=1e-5)
    np.testing.assert_array_equal(r.epsilon, np.asarray(d.epsilon))
    np.testing.assert_array_equal(r.order, np.asarray(d.order))
    r = bounds.evaluate("network.central-sgd", sigma=10.0, n=1000, steps=10000, delta=1e-5)
    assert float(r.epsilon) == float(N.central_sgd_epsilon(sigma=10.0, n=1000, steps=10000, delta=1e-5).epsilon)
    # the total delta: delta' is what the family's other terms leave
    ex = dict(n=10000, steps=10**6, eps0=0.5, delta0=1e-8, delta_hat=1e-6)
    probe = N.complete_graph_sum_bound(**ex, delta_prime=1e-300)
    dp = 1e-2 - (float(probe.delta) - 1e-300)
    direct = N.complete_graph_sum_bound(**ex, delta_prime=dp)
    r = bounds.evaluate("network.complete-graph-sum", n=10000, steps=10**6, eps0=0.5, delta0=1e-8, delta=1e-2,
                        delta_hat=1e-6)
    assert float(r.epsilon) == float(direct.epsilon)
    assert float(direct.delta) == pytest.approx(1e-2, rel=1e-12)
    r = bounds.evaluate("network.ring-sum", steps=10, eps0=0.5, delta0=1e-7, delta=1e-5)
    d = N.ring_sum_bound(steps=10, eps0=0.5, delta0=1e-7, delta_prime=1e-5 - 10 * 1e-7)
    assert float(r.epsilon) == float(d.epsilon) and float(d.delta) == pytest.approx(1e-5, rel=1e-12)
    # no budget left: inf, flagged
    r = bounds.evaluate("network.ring-sum", steps=10, eps0=0.5, delta0=2e-6, delta=1e-5)
    assert r.epsilon == np.inf and r.status == Status.FALLBACK
    # the Lemma 1 curve: inf (flagged) at the inadmissible orders only
    r = bounds.evaluate("network.sgd-rdp", orders=[2.0, 8.0], sigma=10.0, n=1000, contributions=100.0)
    assert r.rdp[0] == pytest.approx(float(N.network_sgd_rdp([2.0], sigma=10.0, n=1000, contributions=100.0)[0]),
                                     rel=1e-14)  # rescaled from an admissible sigma: an ulp apart
    ok = bounds.evaluate("network.sgd-rdp", orders=[2.0, 4.0], sigma=10.0, n=1000, contributions=100.0)
    np.testing.assert_array_equal(ok.rdp, np.asarray(N.network_sgd_rdp([2.0, 4.0], sigma=10.0, n=1000,
                                                                        contributions=100.0)))
    assert r.rdp[1] == np.inf and r.status == Status.FALLBACK


# ----------------------------------------------------------------------------------------------------------
# Compiled programs (issue 25)


def test_sgd_rdp_compiles_one_program_per_shape():
    """Issue 25: Lemma 1's curve is one compiled program per shape (on da60679 its eager operations compiled 8
    small programs at a new shape): new sigma, n, contributions and orders of the same shapes compile nothing.
    Values: 4 T_u alpha L^2 ln(n / c) / (sigma^2 n / c), by NumPy."""
    from _compiles import compilations

    sigma = np.array([10.0, 12.0, 15.0, 20.0, 30.0])  # 5 points: a shape the registry (1, 8, 64, 256) does not use
    with compilations() as got:
        N.network_sgd_rdp([2.0, 3.0, 5.0], sigma=sigma, n=1000, contributions=100.0)
    assert len(got) <= 1, got
    with compilations() as got:
        r = N.network_sgd_rdp([2.0, 4.0, 6.0], sigma=sigma * 1.1, n=[[500], [2000]], contributions=50.0,
                              lipschitz=0.5, colluders=[[2], [4]])
    assert len(got) <= 1, got  # the (2, 5) shape
    n_eff = np.array([[250.0], [500.0]])
    ref = 4.0 * 50.0 * 0.25 * np.log(n_eff) / ((sigma * 1.1) ** 2 * n_eff)
    np.testing.assert_allclose(np.asarray(r), ref[..., None] * np.array([2.0, 4.0, 6.0]), rtol=1e-14)


def test_histogram_compiles_one_program_per_shape():
    """Issue 25: Thm 6's histogram bound is one compiled program per shape (on da60679 three more per shape:
    the eager broadcast, stage and division of its inputs); new values of the same shape compile nothing, and
    each point is the bound of that point alone (the grid reversed gives the values reversed)."""
    from _compiles import compilations

    kw = dict(steps=10**7, eps0=1.0, delta=1e-5, delta_prime=1e-6, delta_hat=1e-6)
    n = np.array([1e5, 2e5, 4e5])  # 3 points: a shape the registry does not use
    with compilations() as got:
        N.complete_graph_histogram_bound(n=n, **kw)
    assert len(got) <= 1, got
    with compilations() as got:
        r = N.complete_graph_histogram_bound(n=n * 1.5, **{**kw, "eps0": 0.7, "steps": 3 * 10**6})
        flipped = N.complete_graph_histogram_bound(n=n[::-1] * 1.5, **{**kw, "eps0": 0.7, "steps": 3 * 10**6})
    assert len(got) == 0, got
    for a, b in zip(r, flipped):
        np.testing.assert_array_equal(np.asarray(a)[::-1], np.asarray(b))
    assert np.all(np.diff(np.asarray(r.epsilon)) < 0)  # more users, more amplification
