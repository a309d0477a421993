"""The optimizer layer: feasible endpoints, status codes, integers, round trips."""

import numpy as np
from hypothesis import given, strategies as st

from amplify_jax.accounting import calibrate as K


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


def test_near_first_same_answers_one_evaluation_where_near_is_feasible():
    """``near_first`` (the DP-SGD calibration's re-check and fix-up in one loop) answers as the default order of
    evaluation, and a point whose near end is feasible stops after one evaluation of fn."""
    import jax
    import jax.numpy as jnp

    calls = []

    def counted(x, c):
        jax.debug.callback(lambda v: calls.append(np.asarray(v)), x)
        return smooth(x, c)

    t = jnp.asarray([1.0, 1e-5, 50.0, 2.0, 1e9])  # bracket searched, infeasible, ..., near end feasible
    lo, hi = jnp.full(5, 0.05), jnp.full(5, 400.0)
    run = jax.jit(lambda nf, t, lo, hi: K.invert_monotone_kernel(smooth, t, (3.0,), lo, hi, above=True, rtol=1e-9,
                                                               integer=False, illinois=True, near_first=nf),
                  static_argnums=0)
    a, b = run(False, t, lo, hi), run(True, t, lo, hi)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    assert list(np.asarray(b.status)) == [K.OK, K.INFEASIBLE, K.OK, K.OK, K.AT_LIMIT]
    # every point feasible at its near end: one evaluation, the near end itself
    one = jax.jit(lambda t: K.invert_monotone_kernel(counted, t, (3.0,), jnp.full(2, 0.5), jnp.full(2, 9.0),
                                                     above=True, rtol=1e-9, integer=False, illinois=True,
                                                     near_first=True))(jnp.asarray([1e3, 1e4]))
    jax.effects_barrier()
    assert len(calls) == 1 and np.all(calls[0] == 0.5)
    assert list(np.asarray(one.status)) == [K.AT_LIMIT, K.AT_LIMIT]
    np.testing.assert_array_equal(np.asarray(one.achieved), smooth(0.5, 3.0))


# ----------------------------------------------------------------------------------------------------------
# Gradients of the inverse by the implicit function theorem

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import pytest  # noqa: E402
from scipy import stats  # noqa: E402

from amplify_jax._core.numerics import log_ndtr

from amplify_jax.internal import x64_scope  # noqa: E402


def gaussian_mironov(sigma, alpha, log_inv_delta):
    """eps of the Gaussian mechanism at one Rényi order, Mironov's conversion: alpha/(2 sigma^2) + L/(alpha-1)."""
    return alpha / (2.0 * sigma**2) + log_inv_delta / (alpha - 1.0)


def test_gradient_closed_form_gaussian_rdp():
    """sigma*(t) = sqrt(alpha / (2 (t - L/(alpha-1)))) has closed-form derivatives in t, alpha and L."""
    t, alpha, L = np.array([2.0, 3.0, 8.0]), np.array([16.0, 8.0, 4.0]), np.log(1e5) * np.ones(3)
    c = L / (alpha - 1.0)
    sigma = np.sqrt(alpha / (2.0 * (t - c)))
    with x64_scope():
        def inv(t, a, l):
            return K.invert_monotone_differentiable(gaussian_mironov, t, args=(a, l), lo=1e-3, hi=1e3,
                                                    rtol=1e-13).value
        np.testing.assert_allclose(inv(t, alpha, L), sigma, rtol=1e-12)
        dt, da, dl = jax.jacfwd(lambda x: inv(*x))((jnp.asarray(t), jnp.asarray(alpha), jnp.asarray(L)))
        gt, ga, gl = jax.grad(lambda *x: inv(*x).sum(), argnums=(0, 1, 2))(jnp.asarray(t), jnp.asarray(alpha),
                                                                          jnp.asarray(L))
    # sigma^2 = alpha / (2 (t - c)):  d sigma = sigma/2 (d alpha/alpha - d(t - c)/(t - c))
    ref_t = -sigma / (2.0 * (t - c))
    ref_l = sigma / (2.0 * (t - c) * (alpha - 1.0))
    ref_a = sigma / 2.0 * (1.0 / alpha - (L / (alpha - 1.0) ** 2) / (t - c))
    for fwd, rev, ref in [(dt, gt, ref_t), (da, ga, ref_a), (dl, gl, ref_l)]:
        np.testing.assert_allclose(np.diag(np.asarray(fwd)), ref, rtol=1e-9)
        np.testing.assert_allclose(np.asarray(rev), ref, rtol=1e-9)


def analytic_gaussian_log_delta(sigma, eps):
    """log delta(eps) of the Gaussian mechanism, sensitivity 1 (Balle & Wang 2018, Thm 8), decreasing in sigma."""
    a = 1.0 / (2.0 * sigma) - eps * sigma
    b = -1.0 / (2.0 * sigma) - eps * sigma
    la, lb = log_ndtr(a), eps + log_ndtr(b)
    return la + jnp.log(-jnp.expm1(lb - la))


def test_gradient_closed_form_analytic_gaussian():
    """Minimal sigma with delta(eps, sigma) <= delta (Balle & Wang 2018).  With a = 1/(2 sigma) - eps sigma,
    b = -1/(2 sigma) - eps sigma, phi(a) = e^eps phi(b) gives d delta/d eps = -e^eps Phi(b) and
    d delta/d sigma = -phi(a)/sigma^2, hence d sigma*/d eps = -sigma^2 e^eps Phi(b)/phi(a) and
    d sigma*/d log delta = -delta sigma^2 / phi(a)."""
    eps = np.array([0.5, 1.0, 4.0])
    log_delta = np.log(np.array([1e-5, 1e-6, 1e-9]))
    with x64_scope():
        def inv(ld, e):
            return K.invert_monotone_differentiable(analytic_gaussian_log_delta, ld, args=(e,), lo=0.05, hi=100.0,
                                                    rtol=1e-13, method="illinois").value
        s = np.asarray(inv(jnp.asarray(log_delta), jnp.asarray(eps)))
        g_ld, g_e = jax.grad(lambda ld, e: inv(ld, e).sum(), argnums=(0, 1))(jnp.asarray(log_delta),
                                                                            jnp.asarray(eps))
    a = 1.0 / (2.0 * s) - eps * s
    b = -1.0 / (2.0 * s) - eps * s
    np.testing.assert_allclose(stats.norm.cdf(a) - np.exp(eps) * stats.norm.cdf(b), np.exp(log_delta), rtol=1e-9)
    np.testing.assert_allclose(np.asarray(g_e), -s**2 * np.exp(eps) * stats.norm.cdf(b) / stats.norm.pdf(a),
                               rtol=1e-8)
    np.testing.assert_allclose(np.asarray(g_ld), -np.exp(log_delta) * s**2 / stats.norm.pdf(a), rtol=1e-8)


def grid_gaussian(sigma, steps, log_inv_delta):
    """eps of `steps` Gaussian releases, best of a grid of orders (Mironov): piecewise smooth in sigma."""
    a = jnp.linspace(1.5, 64.0, 64)
    e = steps[..., None] * a / (2.0 * sigma[..., None] ** 2) + log_inv_delta[..., None] / (a - 1.0)
    return jnp.min(e, axis=-1)


@given(t=st.floats(0.5, 20.0), steps=st.floats(1.0, 100.0))
def test_gradient_matches_finite_differences(t, steps):
    """The implicit derivative equals central finite differences of the inverse itself."""
    L = np.log(1e5)
    with x64_scope():
        def inv(t, s):
            return K.invert_monotone_differentiable(grid_gaussian, t, args=(s, L), lo=1e-2, hi=1e4, rtol=1e-14).value
        r = K.invert_monotone_differentiable(grid_gaussian, t, args=(steps, L), lo=1e-2, hi=1e4, rtol=1e-14)
        if int(r.status) != K.OK:
            return
        gt, gs = jax.grad(inv, argnums=(0, 1))(jnp.float64(t), jnp.float64(steps))
        h = 1e-5
        fd_t = (float(inv(t * (1 + h), steps)) - float(inv(t * (1 - h), steps))) / (2 * h * t)
        fd_s = (float(inv(t, steps * (1 + h))) - float(inv(t, steps * (1 - h)))) / (2 * h * steps)
    # a kink (the best order changes) between t(1-h) and t(1+h) makes the finite difference a mix of the
    # two one-sided slopes: compare where it does not (both one-sided differences agree)
    with x64_scope():
        right = (float(inv(t * (1 + h), steps)) - float(r.value)) / (h * t)
        left = (float(r.value) - float(inv(t * (1 - h), steps))) / (h * t)
    if abs(right - left) > 1e-4 * abs(fd_t):
        return
    assert abs(float(gt) - fd_t) <= 1e-7 * abs(fd_t)
    assert abs(float(gs) - fd_s) <= 1e-7 * abs(fd_s)


def test_gradient_zero_off_status_ok_and_at_range_ends():
    """INFEASIBLE / AT_LIMIT: no derivative in target or args (0, not NaN); the value moves with its range end."""
    t = jnp.array([1e-12, 1e9, 1.0])
    with x64_scope():
        def inv(t, c, lo, hi):
            return K.invert_monotone_differentiable(decreasing, t, args=(c,), lo=lo, hi=hi).value
        jt = np.asarray(jax.jacfwd(inv)(t, 3.0, 1e-3, 1e6))
        jc = np.asarray(jax.grad(lambda c: inv(t, c, 1e-3, 1e6).sum())(3.0))
        jlo = np.asarray(jax.jacfwd(inv, argnums=2)(t, 3.0, 1e-3, 1e6))
        jhi = np.asarray(jax.jacfwd(inv, argnums=3)(t, 3.0, 1e-3, 1e6))
        status = np.asarray(K.invert_monotone_differentiable(decreasing, t, args=(3.0,), lo=1e-3, hi=1e6).status)
    assert list(status) == [K.INFEASIBLE, K.AT_LIMIT, K.OK]
    assert np.all(np.isfinite(jt)) and np.all(np.isfinite(jc))
    assert list(np.diag(jt)) == pytest.approx([0.0, 0.0, -3.0], rel=1e-5)
    assert float(jc) == pytest.approx(1.0, rel=1e-5)  # only the OK element: d(c/t)/dc = 1/t
    # feasible="above": AT_LIMIT returns lo, INFEASIBLE returns hi
    assert list(jlo) == [0.0, 1.0, 0.0] and list(jhi) == [1.0, 0.0, 0.0]


def flat_then_decreasing(x, c):
    return jnp.where(x < 2.0, c, c / x)


def test_gradient_flat_bound_and_integers_give_zero():
    with x64_scope():
        # the answer x* = 2 sits on a jump of fn: slope there is ~0 on the left, the derivative is not NaN
        g = jax.grad(lambda t: K.invert_monotone_differentiable(flat_then_decreasing, t, args=(1.8,), lo=0.1,
                                                                hi=10.0).value)(1.0)
        assert np.isfinite(float(g))
        gi = jax.grad(lambda t: K.invert_monotone_differentiable(increasing, t, args=(3.0,), lo=1, hi=100,
                                                                 feasible="below", integer=True).value)(10.0)
        assert float(gi) == 0.0


@given(c=st.floats(1e-2, 1e2), t=st.floats(1e-2, 1e2))
def test_differentiable_primal_equals_invert_monotone(c, t):
    a = K.invert_monotone(smooth, t, args=(c,), lo=1e-4, hi=1e4, rtol=1e-9, method="illinois")
    b = K.invert_monotone_differentiable(smooth, t, args=(c,), lo=1e-4, hi=1e4, rtol=1e-9, method="illinois")
    assert int(a.status) == int(b.status)
    assert float(a.value) == float(b.value) and float(a.achieved) == float(b.achieved)


def test_differentiable_validates_concrete_input():
    with pytest.raises(ValueError, match="lo"):
        K.invert_monotone_differentiable(decreasing, 1.0, args=(3.0,), lo=-1.0, hi=1.0)
    with pytest.raises(ValueError, match="target"):
        K.invert_monotone_differentiable(decreasing, np.nan, args=(3.0,), lo=1.0, hi=2.0)


def quadratic(x, c):
    return c * x * x


def test_gradient_feasible_below_and_vmap():
    """Maximal x with c x^2 <= t: x* = sqrt(t / c), dx*/dt = 1/(2 sqrt(t c)), dx*/dc = -x*/(2 c); also under vmap."""
    t, c = jnp.array([0.5, 2.0, 9.0]), jnp.array([1.0, 3.0, 0.25])
    with x64_scope():
        def inv(t, c):
            return K.invert_monotone_differentiable(quadratic, t, args=(c,), lo=1e-6, hi=1e3, feasible="below",
                                                    rtol=1e-13).value
        gt, gc = jax.vmap(jax.grad(inv, argnums=(0, 1)))(t, c)
    x = np.sqrt(np.asarray(t) / np.asarray(c))
    np.testing.assert_allclose(np.asarray(gt), 1.0 / (2.0 * np.sqrt(np.asarray(t) * np.asarray(c))), rtol=1e-9)
    np.testing.assert_allclose(np.asarray(gc), -x / (2.0 * np.asarray(c)), rtol=1e-9)


_SGM_ORDERS = tuple(float(a) for a in range(2, 65))


def dpsgd_eps_integer_orders(sigma, q, steps, log_delta):
    """DP-SGD eps over the integer orders 2..64: Poisson-subsampled Gaussian RDP (MTZ 2019, rdp.SGMCurve),
    composed over `steps`, converted by Balle et al. 2020 and minimised over the orders."""
    from amplify_jax.conversions import rdp_epsilon_terms
    from amplify_jax.rdp import SGMCurve

    curve = SGMCurve(_SGM_ORDERS)(q, sigma)
    e = rdp_epsilon_terms(jnp.asarray(_SGM_ORDERS), steps[..., None] * curve, log_delta[..., None])
    return jnp.min(e, axis=-1)


# the DP-SGD calibration's gradient is a program of its own (~40 s to compile on 2 cores): in the slow set, to keep
# the default suite under 15 minutes; the gradient machinery is checked on closed forms above (python -m pytest -m slow
# tests/test_calibrate.py)
@pytest.mark.slow
def test_gradient_of_dpsgd_calibration_vs_finite_differences():
    """d sigma*/d eps and d sigma*/d q of the minimal DP-SGD noise, reverse mode through the RDP kernel, against
    central finite differences of the calibrated sigma itself."""
    args = (0.01, 1000.0, np.log(1e-5))
    with x64_scope():
        def inv(t, q):
            return K.invert_monotone_differentiable(dpsgd_eps_integer_orders, t, args=(q,) + args[1:], lo=0.3,
                                                    hi=50.0, rtol=1e-14, method="illinois").value
        t0, q0 = 2.0, args[0]
        gt, gq = jax.grad(inv, argnums=(0, 1))(jnp.float64(t0), jnp.float64(q0))
        h = 1e-5
        fd_t = (float(inv(t0 * (1 + h), q0)) - float(inv(t0 * (1 - h), q0))) / (2 * h * t0)
        fd_q = (float(inv(t0, q0 * (1 + h))) - float(inv(t0, q0 * (1 - h)))) / (2 * h * q0)
    assert float(gt) < 0 < float(gq)
    assert abs(float(gt) - fd_t) <= 1e-5 * abs(fd_t)
    assert abs(float(gq) - fd_q) <= 1e-5 * abs(fd_q)


def test_host_driver_compiles_a_fixed_set_of_programs():
    """Issue 25: invert_monotone_host's compiled updates run on blocks of fixed sizes (HOST_BLOCKS), so after
    one call per block size, new shapes, targets and ranges compile nothing (it compiled ~20 small programs per
    call: its updates per batch shape and the eager steps around them)."""
    from _compiles import compilations

    def fn(x):
        return 3.0 / np.sqrt(x)

    K.invert_monotone_host(fn, 0.5, lo=1.0, hi=1e6)  # the small block
    K.invert_monotone_host(fn, np.full(300, 0.5), lo=1.0, hi=1e6)  # the large block
    with compilations() as got:
        for shape, t, hi in [((), 0.2, 1e5), ((3,), 0.7, 1e7), ((5, 7), 0.01, 1e6), ((301,), 0.3, 1e4),
                             ((4097,), 0.9, 1e8)]:
            r = K.invert_monotone_host(fn, np.full(shape, t), lo=1.0, hi=hi)
            assert np.asarray(r.value).shape == shape
            ok = np.asarray(r.status) == K.OK
            assert np.all(np.asarray(r.achieved)[ok] <= t)
    assert len(got) == 0, got


def test_host_driver_same_answers_as_the_compiled_search():
    """The host driver (padded blocks) answers what invert_monotone's compiled loop answers, padding and blocks
    included (a batch of 4100 spans two blocks of 4096): the same statuses, values within the search's rtol (the
    host's NumPy bound and the loop's fused one may differ by an ulp, so a bisection step may go the other way),
    every OK value feasible.  (Bit-identity with the driver before issue 25's blocks was checked at the change.)"""
    rng = np.random.default_rng(3)
    for shape in [(), (5,), (4100,)]:
        t = rng.uniform(0.05, 2.0, shape)
        for feasible, integer, method in [("above", False, "bisection"), ("below", False, "illinois"),
                                          ("above", True, "bisection")]:
            f = (lambda x: 3.0 / np.sqrt(x)) if feasible == "above" else (lambda x: np.sqrt(x) / 30.0)
            g = (lambda x: 3.0 / jnp.sqrt(x)) if feasible == "above" else (lambda x: jnp.sqrt(x) / 30.0)
            a = K.invert_monotone_host(f, t, lo=1.0, hi=1e6, feasible=feasible, integer=integer, method=method)
            b = K.invert_monotone(g, t, lo=1.0, hi=1e6, feasible=feasible, integer=integer, method=method)
            np.testing.assert_array_equal(np.asarray(a.status), np.asarray(b.status))
            np.testing.assert_allclose(np.asarray(a.value), np.asarray(b.value), rtol=2e-6, atol=1.0 * integer)
            ok = np.asarray(a.status) == K.OK
            assert np.asarray(a.value).shape == shape and np.all(np.asarray(a.achieved)[ok] <= t[ok])
