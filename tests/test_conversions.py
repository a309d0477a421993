"""RDP <-> (eps, delta) conversions and the continuous optimal order."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import amplify_jax as aj
from amplify_jax.accounting import conversions as C


def test_constant_curve_published_value():
    o = np.arange(2, 33, dtype=float)
    eps, order = C.epsilon_from_rdp(o, np.full(o.shape, 1.1), delta=1e-5)
    assert abs(float(eps) - 1.32783806176) < 1e-10
    assert float(order) == 32.0


def test_gaussian_published_value_and_continuous_order():
    # Gaussian, sigma = 4.530877117, orders 1.000..99.999 step 0.001 -> (1, 1e-6): our continuous search
    # starting from the coarse default grid must reach the same.
    def gauss(a, s):
        return a / (2 * s * s)

    eps, order = C.optimal_epsilon(gauss, delta=1e-6, args=(4.530877117,))
    assert abs(float(eps) - 1.0) < 1e-8
    fine = np.arange(1.001, 100.0, 0.001)
    grid_eps, _ = C.epsilon_from_rdp(fine, fine / (2 * 4.530877117**2), delta=1e-6)
    assert float(eps) <= float(grid_eps) + 1e-12


def test_optimal_never_worse_than_grid():
    def gauss(a, s):
        return a / (2 * s * s)

    s = np.geomspace(0.3, 30, 17)
    opt, _ = C.optimal_epsilon(gauss, delta=1e-5, args=(s,))
    grid, _ = C.epsilon_from_rdp(aj.rdp.DEFAULT_ORDERS, np.asarray(aj.rdp.gaussian_rdp(aj.rdp.DEFAULT_ORDERS, sigma=s)),
                                 delta=1e-5)
    assert np.all(np.asarray(opt) <= np.asarray(grid) + 1e-15)


def test_mironov_is_looser():
    o = np.arange(2, 64, dtype=float)
    r = np.asarray(aj.rdp.gaussian_rdp(o, sigma=2.0))
    b, _ = C.epsilon_from_rdp(o, r, delta=1e-6)
    m, _ = C.epsilon_from_rdp(o, r, delta=1e-6, method="mironov")
    assert float(m) > float(b)


def test_matches_dp_accounting_conversion():
    from dp_accounting.rdp import rdp_privacy_accountant as ra

    o = np.array([1.5, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0])
    r = np.asarray(aj.rdp.gaussian_rdp(o, sigma=1.2)) * 7
    ref_eps, _ = ra.compute_epsilon(o, r, 1e-5)
    eps, _ = C.epsilon_from_rdp(o, r, delta=1e-5)
    assert abs(float(eps) - ref_eps) < 1e-12
    ref_delta, _ = ra.compute_delta(o, r, 3.0)
    d, _ = C.delta_from_rdp(o, r, epsilon=3.0)
    assert abs(float(d) - ref_delta) <= 1e-12 * ref_delta


@given(sigma=st.floats(0.5, 50.0), delta=st.floats(1e-12, 0.1))
def test_delta_eps_round_trip(sigma, delta):
    """delta(eps(delta)) <= delta at the same order (both directions are the same inequality)."""
    o = aj.rdp.DEFAULT_ORDERS
    r = np.asarray(aj.rdp.gaussian_rdp(o, sigma=sigma))
    eps, order = C.epsilon_from_rdp(o, r, delta=delta)
    d, _ = C.delta_from_rdp(o, r, epsilon=float(eps))
    assert float(d) <= delta * (1 + 1e-9)
    assert float(eps) >= 0


def test_dp_to_rdp_pure_is_randomized_response():
    o = np.array([1.5, 2.0, 10.0])
    res = C.dp_to_rdp(o, eps=1.0)
    np.testing.assert_allclose(res.rdp, aj.rdp.randomized_response_rdp(o, eps0=1.0, k=2), rtol=1e-14)
    assert float(res.delta) == 0.0
    res = C.dp_to_rdp(o, eps=[0.5, 1.0], delta=1e-6)
    assert res.rdp.shape == (2, 3) and np.all(np.asarray(res.delta) == 1e-6)


def _kinked(a, s, k):
    """A Gaussian curve with a sharp rise beyond order k (like the subsampled Gaussian's second regime)."""
    import jax.numpy as jnp

    return a / (2 * s * s) + 50.0 * jnp.maximum(a - k, 0.0)


def test_order_search_reaches_kinks_and_ends():
    """Brent's search (with its golden steps) finds the minimum at a kink and at the end of the bracket."""
    s = np.array([0.5, 2.0, 8.0, 30.0])
    k = np.array([3.37, 17.2, 64.9, 1e9])  # the last one has no kink: the minimum lies at large orders
    eps, order = C.optimal_epsilon(_kinked, delta=1e-7, args=(s, k))
    fine = np.geomspace(1.0001, 4096.0, 400_000)
    for i in range(s.size):
        curve = fine / (2 * s[i] ** 2) + 50.0 * np.maximum(fine - k[i], 0.0)
        ref = np.min(curve + np.log1p(-1 / fine) - (np.log(1e-7) + np.log(fine)) / (fine - 1))
        assert float(eps[i]) <= ref * (1 + 1e-7), (i, float(eps[i]), ref)
