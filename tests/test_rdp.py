"""RDP curves against closed forms, mpmath, the reference accountants and the published values."""

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, strategies as st

import amplify_jax as aj
from amplify_jax.accounting import rdp as R
from amplify_jax.internal import x64_scope
import jax.numpy as jnp


@pytest.fixture(autouse=True)
def _mp_precision():
    """mpmath references at 50 digits, whatever other test modules set globally."""
    with mp.workdps(50):
        yield




def mp_sgm_int(q, sigma, alpha):
    """MTZ 2019 integer-order series in mpmath: log A_alpha / (alpha - 1)."""
    q = mp.mpf(q)
    s = mp.mpf(sigma)
    a = sum(mp.binomial(alpha, k) * q**k * (1 - q) ** (alpha - k) * mp.exp((k * k - k) / (2 * s * s))
            for k in range(alpha + 1))
    return mp.log(a) / (alpha - 1)


@pytest.mark.parametrize(
    "q,sigma,alpha",
    [(1e-8, 1.0, 2), (1e-8, 0.1, 32), (0.01, 0.1, 64), (0.5, 0.3, 7), (1.0, 2.0, 10), (1e-4, 1e3, 1024),
     (0.2, 0.5, 256), (1e-6, 30.0, 3)],
)
def test_sgm_integer_orders_vs_mpmath(q, sigma, alpha):
    got = float(R.poisson_subsampled_gaussian_rdp([alpha], q=q, sigma=sigma)[0])
    ref = mp_sgm_int(q, sigma, alpha)
    # at q = 1e-8 the curve is ~1e-16: the cancellation-free series keeps relative accuracy there
    assert abs(got - float(ref)) <= 1e-9 * float(ref)


def test_sgm_tf_privacy_values():
    # TensorFlow Privacy rdp_accountant_test.py
    r = 50 * np.asarray(R.poisson_subsampled_gaussian_rdp([5.0, 50.0, 100.0], q=0.01, sigma=2.5))
    np.testing.assert_allclose(r, [0.00218075, 0.023846, 167.416307], atol=1e-5)
    r = 10 * float(R.poisson_subsampled_gaussian_rdp([5.0], q=0.1, sigma=2.0)[0])
    assert abs(r - 0.0773696849) < 1e-9


def test_sgm_matches_dp_accounting_integer_orders():
    from dp_accounting.rdp import rdp_privacy_accountant as ra

    orders = np.array([2.0, 3.0, 8.0, 32.0, 128.0])
    for q, s in [(0.01, 1.0), (0.1, 2.0), (0.001, 0.7)]:
        ref = np.array([ra._compute_rdp_poisson_subsampled_gaussian(q, s, [o])[0] for o in orders])
        got = np.asarray(R.poisson_subsampled_gaussian_rdp(orders, q=q, sigma=s))
        np.testing.assert_allclose(got, ref, rtol=1e-9)


def test_sgm_q_one_is_gaussian_and_q_zero_is_zero():
    o = np.array([2.0, 5.0, 17.0])
    np.testing.assert_allclose(R.poisson_subsampled_gaussian_rdp(o, q=1.0, sigma=1.7), R.gaussian_rdp(o, sigma=1.7),
                               rtol=1e-12)
    assert np.all(np.asarray(R.poisson_subsampled_gaussian_rdp(o, q=0.0, sigma=1.0)) == 0.0)


def test_broadcast_shapes():
    r = R.poisson_subsampled_gaussian_rdp([2.0, 3.0, 4.0], q=np.array([[0.01], [0.1]]), sigma=np.array([1.0, 2.0, 3.0]))
    assert r.shape == (2, 3, 3)
    single = R.poisson_subsampled_gaussian_rdp([2.0, 3.0, 4.0], q=0.1, sigma=2.0)
    np.testing.assert_allclose(r[1, 1], single, rtol=1e-14)


@given(q=st.floats(1e-6, 0.9), s1=st.floats(0.3, 20.0), ds=st.floats(1e-3, 5.0), a=st.integers(2, 64))
def test_sgm_monotone(q, s1, ds, a):
    """RDP decreases in sigma and increases in q."""
    r = np.asarray(R.poisson_subsampled_gaussian_rdp([a], q=q, sigma=[s1, s1 + ds]))
    assert r[1, 0] <= r[0, 0] * (1 + 1e-12)
    r2 = np.asarray(R.poisson_subsampled_gaussian_rdp([a], q=[q, min(1.0, q * 1.1)], sigma=s1))
    assert r2[0, 0] <= r2[1, 0] * (1 + 1e-12)
    assert r[0, 0] >= 0


@pytest.mark.parametrize("scale,alpha", [(0.5, 2.0), (1.0, 1.5), (3.0, 20.0)])
def test_laplace_vs_numerical_divergence(scale, alpha):
    b = mp.mpf(scale)
    p = lambda x: mp.exp(-abs(x) / b) / (2 * b)  # noqa: E731
    qd = lambda x: mp.exp(-abs(x - 1) / b) / (2 * b)  # noqa: E731
    integral = mp.quad(lambda x: p(x) ** alpha * qd(x) ** (1 - alpha), [-mp.inf, 0, 1, mp.inf])
    ref = float(mp.log(integral) / (alpha - 1))
    assert abs(float(R.laplace_rdp([alpha], scale=scale)[0]) - ref) < 1e-12 * max(1, ref)


@pytest.mark.parametrize("eps0,k,alpha", [(1.0, 2, 2.0), (0.1, 10, 3.5), (1e-6, 2, 2.0), (4.0, 100, 50.0)])
def test_randomized_response_vs_direct_sum(eps0, k, alpha):
    e = mp.mpf(eps0)
    hi = mp.exp(e) / (mp.exp(e) + k - 1)
    lo = 1 / (mp.exp(e) + k - 1)
    s = hi**alpha * lo ** (1 - alpha) + lo**alpha * hi ** (1 - alpha) + (k - 2) * lo
    ref = float(mp.log(s) / (alpha - 1))
    got = float(R.randomized_response_rdp([alpha], eps0=eps0, k=k)[0])
    assert abs(got - ref) <= 1e-12 * ref


def test_pure_dp_below_known_bounds():
    o = np.array([1.5, 2.0, 10.0, 100.0])
    r = np.asarray(R.pure_dp_rdp(o, eps0=0.5))
    assert np.all(r <= 0.5 + 1e-15)  # eps0-DP implies D_alpha <= eps0
    assert np.all(r <= o * 0.5**2 / 2 + 1e-12)  # and D_alpha <= alpha eps0^2 / 2 (Bun and Steinke 2016)
    assert np.all(r > 0)


def mp_wor(q, sigma, alpha):
    """Wang-Balle-Kasiviswanathan Thm 9 with a Gaussian base, in mpmath."""
    q = mp.mpf(q)
    eps = lambda j: mp.mpf(j) / (2 * mp.mpf(sigma) ** 2)  # noqa: E731
    total = 1 + q**2 * mp.binomial(alpha, 2) * min(4 * (mp.exp(eps(2)) - 1), 2 * mp.exp(eps(2)))
    for j in range(3, alpha + 1):
        total += q**j * mp.binomial(alpha, j) * mp.exp((j - 1) * eps(j)) * 2
    return mp.log(total) / (alpha - 1)


@pytest.mark.parametrize("q,sigma,alpha", [(0.01, 2.5, 2), (0.01, 2.5, 50), (0.1, 1.0, 17), (1e-4, 0.5, 64)])
def test_wor_vs_mpmath(q, sigma, alpha):
    got = float(R.subsampled_gaussian_wor_rdp([alpha], q=q, sigma=sigma)[0])
    ref = float(mp_wor(q, sigma, alpha))
    assert abs(got - ref) <= 1e-10 * ref


def test_wor_published_values():
    # TensorFlow Privacy (general bound region) and dp_accounting 0.6.0 at 256
    r = 50 * np.asarray(R.subsampled_gaussian_wor_rdp([100.0, 256.0], q=0.01, sigma=2.5))
    np.testing.assert_allclose(r, [167.766388, 792.974427], rtol=2e-7)
    # At orders where TF Privacy uses its tighter Gaussian-specific bound, Thm 9 is above it (safe side).
    r = 50 * np.asarray(R.subsampled_gaussian_wor_rdp([2.5, 5.0, 50.0], q=0.01, sigma=2.5))
    assert np.all(r >= np.array([0.004638, 0.0087633, 0.098474]))


def test_wor_many_base_curves():
    """Amplify one base curve per group size k in one call (what self check-in needs)."""
    ks = np.array([10.0, 100.0, 1000.0])
    orders = np.arange(2, 33, dtype=float)
    base = 2 * orders[None, :] / (ks[:, None] * 1.0**2)
    out = np.asarray(R.without_replacement_rdp(base, q=0.01))
    assert out.shape == (3, 31)
    for i, k in enumerate(ks):
        single = np.asarray(R.without_replacement_rdp(base[i], q=0.01))
        np.testing.assert_allclose(out[i], single, rtol=1e-13)
    assert np.all(np.diff(out, axis=0) <= 0)  # more participants, less leakage


def mp_wor_log_excess(q, base, alpha, eps_inf=None):
    """log(M_alpha - 1) of WBK 2019 Thm 9 in mpmath; base[j - 2] = eps(j); eps_inf None means infinite."""
    q = mp.mpf(q)
    cap = (lambda j: mp.mpf(2)) if eps_inf is None else (lambda j: min(2, (mp.exp(mp.mpf(eps_inf)) - 1) ** j))
    e2 = mp.mpf(base[0])
    total = q**2 * mp.binomial(alpha, 2) * min(4 * mp.expm1(e2), mp.exp(e2) * cap(2))
    for j in range(3, alpha + 1):
        total += q**j * mp.binomial(alpha, j) * mp.exp((j - 1) * mp.mpf(base[j - 2])) * cap(j)
    return mp.log(total)


@pytest.mark.parametrize("q,eps0", [(1e-8, 0.5), (0.05, 2.0), (0.3, 0.05)])
def test_wor_public_kernel_vs_mpmath_pure_dp_base(q, eps0):
    """The jnp kernel with a bounded base (eps0-DP: RR curve, eps(inf) = eps0) at a subset of orders, against
    mpmath, relative to the excess M - 1 (~1e-16 at q = 1e-8: no cancellation against the 1)."""
    import jax

    ints = np.arange(2, 41, dtype=float)
    base = np.asarray(R.pure_dp_rdp(ints, eps0=eps0))
    orders = (2, 3, 17, 40)
    lif = np.log(np.expm1(eps0))

    @jax.jit
    def run(b, q):
        return R.without_replacement_log_excess(b, jnp.log(q), orders, log_inf_factor=jnp.asarray(lif)), \
            R.without_replacement_rdp_kernel(b, q, orders, log_inf_factor=jnp.asarray(lif))

    with x64_scope():
        lex, rdp = (np.asarray(x) for x in run(jnp.asarray(base), jnp.asarray(q)))
    for i, a in enumerate(orders):
        ref = mp_wor_log_excess(q, base, a, eps_inf=eps0)
        assert abs(lex[i] - float(ref)) <= 1e-12 * max(1.0, abs(float(ref)))
        exact = float(mp.log1p(mp.exp(ref)) / (a - 1))
        # rounded up by the kernel's float64 error bound: never below, and within 1e-10 above
        assert exact * (1 - 1e-15) <= rdp[i] <= exact * (1 + 1e-10)
    # the same through the validated public function (all orders 2..40)
    full = np.asarray(R.without_replacement_rdp(base, q=q, base_rdp_inf=eps0))
    np.testing.assert_allclose(full[[o - 2 for o in orders]], rdp, rtol=1e-13)


def test_wor_public_kernel_refuses_orders_outside_the_base():
    with pytest.raises(ValueError, match="orders"):
        R.without_replacement_rdp_kernel(jnp.zeros(5), 0.1, (2, 7))
    with pytest.raises(ValueError, match="orders"):
        R.without_replacement_log_excess(jnp.zeros(5), jnp.log(0.1), (2.5,))


def test_interpolation_is_upper_bound():
    """Fractional orders by convexity lie above the exact curve (checked on the Gaussian, exact everywhere)."""
    ints = np.arange(2, 11, dtype=float)
    curve = np.asarray(R.gaussian_rdp(ints, sigma=1.3))
    frac = np.array([1.25, 2.5, 7.75])
    interp = np.asarray(R.interpolate_integer_rdp(frac, curve))
    exact = np.asarray(R.gaussian_rdp(frac, sigma=1.3))
    assert np.all(interp >= exact - 1e-15)


def test_compose_heterogeneous():
    o = np.array([2.0, 4.0])
    a = R.gaussian_rdp(o, sigma=1.0)
    b = R.gaussian_rdp(o, sigma=2.0)
    c = R.compose([a, b], steps=[np.array([1.0, 10.0]), 3.0])
    np.testing.assert_allclose(np.asarray(c), np.outer([1.0, 10.0], o / 2) + 3 * o / 8, rtol=1e-14)


def test_log_binomial_table_exact():
    """The trace-time log-binomial table equals log(math.comb) to rounding, up to a = 1024 (the Loader formula
    it replaced was off by 8.5e-12 at a = 1014, j = 420)."""
    import math

    from amplify_jax._core.numerics import log_comb_table

    alpha = (2, 7, 63, 512, 1014, 1024)
    table = log_comb_table(alpha, 1024)
    for r, a in enumerate(alpha):
        for j in (2, 3, a // 3, 420, a // 2, a - 1, a):
            if 2 <= j <= a:
                assert abs(table[r, j - 2] - math.log(math.comb(a, j))) <= 4e-16 * max(1.0, math.log(math.comb(a, j)))
        assert np.all(np.isneginf(table[r, a - 1:]))


def test_tiny_rates_are_raised_to_the_floor_soundly():
    """Rates below Q_FLOOR are evaluated at it (the RDP grows with q): finite, never below the exact value."""
    from amplify_jax.rdp import Q_FLOOR

    orders = [1.5, 2.0, 32.5]
    tiny = np.asarray(aj.rdp.poisson_subsampled_gaussian_rdp(orders, q=1e-300, sigma=1.0))
    floor = np.asarray(aj.rdp.poisson_subsampled_gaussian_rdp(orders, q=Q_FLOOR, sigma=1.0))
    np.testing.assert_array_equal(tiny, floor)
    assert np.all(np.isfinite(tiny)) and np.all(tiny > 0)
    zero = np.asarray(aj.rdp.poisson_subsampled_gaussian_rdp(orders, q=0.0, sigma=1.0))
    assert np.all(zero == 0.0)
    e_tiny = aj.dpsgd_epsilon(sigma=1.0, q=1e-300, steps=100, delta=1e-5).epsilon
    assert float(e_tiny) == float(aj.dpsgd_epsilon(sigma=1.0, q=Q_FLOOR, steps=100, delta=1e-5).epsilon)
