"""The approximate-DP building blocks against independent references: mpmath and closed forms."""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from amplify_jax.accounting import approx_dp as A
from amplify_jax.internal import float64_jit

_eps = float64_jit(A.analytic_gaussian_epsilon)
_logd = float64_jit(A.analytic_gaussian_log_delta)
_fmt = float64_jit(A.fmt_closed_form)


def _mp_delta(r, e):
    mp.mp.dps = 50
    r, e = mp.mpf(r), mp.mpf(e)
    return mp.ncdf(r / 2 - e / r) - mp.exp(e) * mp.ncdf(-r / 2 - e / r)


@pytest.mark.parametrize("r,delta", [(0.05, 1e-5), (0.5, 1e-5), (1.0, 1e-10), (3.0, 1e-6), (10.0, 1e-3),
                                      (0.01, 1e-12)])
def test_analytic_gaussian_epsilon_is_the_least_feasible_eps(r, delta):
    e = float(_eps(np.float64(r), np.float64(math.log(delta))))
    assert _mp_delta(r, e) <= delta  # feasible: never under-reports
    if e > 0:
        assert _mp_delta(r, e * (1 - 1e-8)) > delta  # and tight to 1e-8
    np.testing.assert_allclose(float(_logd(np.float64(r), np.float64(e))), float(mp.log(_mp_delta(r, e))),
                               rtol=1e-10)


def test_analytic_gaussian_epsilon_zero_where_delta_already_met():
    # at eps = 0, delta(0) = 2 Phi(r/2) - 1: a tiny ratio meets a large delta with eps = 0
    assert float(_eps(np.float64(1e-3), np.float64(math.log(0.1)))) == 0.0


@given(eps=st.floats(1e-4, 5), k=st.floats(1, 1e6), dp=st.floats(1e-12, 0.5))
@settings(max_examples=50, deadline=None)
def test_advanced_composition_closed_form(eps, k, dp):
    got = float(float64_jit(A.advanced_composition)(np.float64(eps), np.float64(k), np.float64(-math.log(dp))))
    ref = math.sqrt(2 * k * math.log(1 / dp)) * eps + k * eps * math.expm1(eps)
    assert math.isclose(got, ref, rel_tol=1e-13)


@given(eps=st.floats(1e-8, 20), q=st.floats(0, 1))
@settings(max_examples=50, deadline=None)
def test_subsampled_epsilon(eps, q):
    got = float(float64_jit(A.subsampled_epsilon)(np.float64(eps), np.float64(q)))
    mp.mp.dps = 40
    ref = float(mp.log1p(mp.mpf(q) * mp.expm1(mp.mpf(eps))))
    assert math.isclose(got, ref, rel_tol=1e-13, abs_tol=1e-300)
    assert got <= eps * (1 + 1e-15)


def test_fmt_closed_form_public_value():
    # Feldman-McMillan-Talwar's public code: 0.5378040242374512 at n = 1e5, eps0 = 4, delta = 1e-6
    eps, valid = _fmt(np.float64(4.0), np.float64(1e5), np.float64(1e-6))
    assert bool(valid) and math.isclose(float(eps), 0.5378040242374512, rel_tol=1e-14)
    eps, valid = _fmt(np.float64(8.0), np.float64(1e3), np.float64(1e-6))  # outside ln(n / (16 ln(4/delta)))
    assert not bool(valid) and float(eps) == 8.0


def test_internal_kernels_compose_under_grad_and_vmap():
    """amplify_jax.internal: the kernels trace under jit/vmap/grad (float64 under x64_scope)."""
    import jax
    import jax.numpy as jnp

    from amplify_jax import internal as K
    from amplify_jax.internal import x64_scope

    def eps(sigma):  # the docstring's example: eps by the implicit inversion, differentiable in sigma
        fn = lambda e, r: K.analytic_gaussian_log_delta(r, e)  # noqa: E731
        return K.invert_monotone_implicit(fn, jnp.log(1e-5), (1.0 / sigma,), 1e-9, 1e3, above=True,
                                          rtol=1e-12).value

    # each transformation under jit: one compiled program each (op by op, the same checks compiled ~110 small ones)
    with x64_scope():
        g = float(jax.jit(jax.grad(eps))(2.0))
        h = 1e-4
        eps_ref = jax.jit(lambda s: K.analytic_gaussian_epsilon(1.0 / s, jnp.log(1e-5)))
        f = lambda s: float(eps_ref(s))  # noqa: E731
        fd = (f(2.0 + h) - f(2.0 - h)) / (2 * h)  # central difference of the bisection's values
        assert g < 0 and math.isclose(g, fd, rel_tol=1e-5)
        assert math.isclose(float(jax.jit(eps)(2.0)), f(2.0), rel_tol=1e-9)
        v = jax.jit(jax.vmap(lambda e: K.subsampled_epsilon(e, 0.01)))(jnp.array([0.5, 1.0, 2.0]))
        assert v.dtype == jnp.float64 and v.shape == (3,)
