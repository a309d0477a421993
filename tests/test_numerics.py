"""The log-space toolbox against mpmath, and float64 scoping with the global x64 flag off."""

import subprocess
import sys
import textwrap

import mpmath as mp
import numpy as np
import pytest

from amplify_jax._core import numerics as N


@pytest.fixture(autouse=True)
def _mp_precision():
    """mpmath references at 50 digits, whatever other test modules set globally."""
    with mp.workdps(50):
        yield




@pytest.mark.parametrize("n,k", [(10, 3), (1024, 512), (1e6, 17.5), (2.5, 1.5)])
def test_log_comb(n, k):
    ref = float(mp.log(mp.binomial(n, k)))
    assert abs(float(N.float64_jit(N.log_comb)(n, k)) - ref) <= 1e-12 * max(1.0, abs(ref))


@pytest.mark.parametrize("a,b", [(0.0, -1e-20), (5.0, 4.999999), (-700.0, -800.0), (3.0, -np.inf)])
def test_log_sub(a, b):
    ref = float(mp.log(mp.exp(a) - mp.exp(b)))
    got = float(N.float64_jit(N.log_sub)(a, b))
    assert abs(got - ref) <= 1e-12 * max(1.0, abs(ref))


def test_log_sub_equal_is_minus_inf_and_signed():
    assert float(N.float64_jit(N.log_sub)(2.0, 2.0)) == -np.inf
    mag, sign = N.float64_jit(N.log_sub_signed)(1.0, 2.0)
    assert float(sign) == -1.0
    assert abs(float(mag) - float(mp.log(mp.e**2 - mp.e))) < 1e-14


@pytest.mark.parametrize("x", [-1e-300, -1e-10, -0.5, -0.7, -30.0, -800.0])
def test_log1mexp(x):
    ref = float(mp.log(1 - mp.exp(x)))
    assert abs(float(N.float64_jit(N.log1mexp)(x)) - ref) <= 1e-13 * abs(ref)


@pytest.mark.parametrize("x", [1e-12, 0.3, 1.0, 5.0, 800.0])
def test_log_expm1(x):
    ref = float(mp.log(mp.expm1(x)))
    assert abs(float(N.float64_jit(N.log_expm1)(x)) - ref) <= 1e-13 * max(1.0, abs(ref))


@pytest.mark.parametrize("k,n,p", [(3, 10, 0.2), (0, 1000, 1e-6), (1000, 1000, 0.999), (5e5, 1e6, 0.5)])
def test_log_binom_pmf(k, n, p):
    ref = float(mp.log(mp.binomial(n, k) * mp.mpf(p) ** k * (1 - mp.mpf(p)) ** (n - k)))
    assert abs(float(N.float64_jit(N.log_binom_pmf)(k, n, p)) - ref) <= 1e-10 * max(1.0, abs(ref))


def test_bennett_phi_is_accurate_where_the_direct_form_cancels():
    """phi(u) = (1 + u) log1p(u) - u against mpmath at 400 digits from u = 1e-150 to 1e30: the direct form in
    float64 is off by 1e-5 relative at u = 1e-11 (the soundness campaign's Bennett under-reports)."""
    us = np.concatenate([np.geomspace(1e-150, 1e30, 361), [0.1, 0.5, 0.999999, 1.0, 1.000001, 2.0]])
    got = np.asarray(N.float64_jit(N.bennett_phi)(us))
    with mp.workdps(400):  # 1 + u keeps u = 1e-150 at 400 digits
        ref = np.array([float((1 + mp.mpf(u)) * mp.log1p(mp.mpf(u)) - mp.mpf(u)) for u in us])
    nz = ref > 1e-300
    assert np.all(np.abs(got[nz] / ref[nz] - 1.0) <= N.BENNETT_PHI_REL_ERROR)
    assert np.all(got[~nz] <= ref[~nz] * (1 + N.BENNETT_PHI_REL_ERROR) + 1e-300)  # underflow: 0 or subnormal
    edges = np.asarray(N.float64_jit(N.bennett_phi)(np.array([0.0, np.inf])))
    assert edges[0] == 0.0 and edges[1] == np.inf
    u = 1e-11  # the direct form really does cancel there, so this test can tell the two apart
    assert abs(((1 + u) * np.log1p(u) - u) / (u * u / 2 - u**3 / 6) - 1) > 1e-7


def test_log_comb_tables_above_1024_within_their_stated_error():
    """Above order 1024 the log-binomial table is Loader's log_comb (numerics.log_comb_table), whose float64
    error the integer-order RDP series allows as 64 eps (|log C| + alpha) (_subsampled_gaussian): checked
    against mpmath where it is largest (k ~ 0.41 alpha, k near alpha) and at random k."""
    rng = np.random.default_rng(0)
    for a in (1025, 34344, 10**6):
        ks = np.unique(np.concatenate([rng.integers(2, a, 40), [2, a // 2, int(0.414 * a), 14224 % a, a - 2, a - 1],
                                       np.arange(int(0.41 * a), int(0.41 * a) + 30)]))
        ks = ks[(ks >= 2) & (ks <= a)]
        got = N.log_comb_table((a,), a)[0][ks - 2]
        with mp.workdps(40):
            lg = mp.loggamma(a + 1)
            ref = np.array([float(lg - mp.loggamma(int(k) + 1) - mp.loggamma(a - int(k) + 1)) for k in ks])
        eps = np.finfo(np.float64).eps
        assert np.all(np.abs(got - ref) <= 64 * eps * (np.abs(ref) + a))


def test_log_binom_pmf_edges():
    f = N.float64_jit(N.log_binom_pmf)
    assert float(f(0.0, 5.0, 0.0)) == 0.0
    assert float(f(1.0, 5.0, 0.0)) == -np.inf
    assert float(f(5.0, 5.0, 1.0)) == 0.0
    assert float(f(6.0, 5.0, 0.5)) == -np.inf


def test_log_erfc_tail():
    ref = float(mp.log(mp.erfc(30)))
    assert abs(float(N.float64_jit(N.log_erfc)(30.0)) - ref) < 1e-10 * abs(ref)


def test_weighted_logsumexp():
    a = np.array([0.0, 1.0, -2.0])
    w = np.array([0.5, 2.0, 0.0])
    ref = float(mp.log(sum(mp.mpf(wi) * mp.exp(ai) for ai, wi in zip(a, w))))
    assert abs(float(N.float64_jit(N.logsumexp)(a, b=w)) - ref) < 1e-14


def test_float64_whatever_the_global_flag():
    """With x64 off globally, results are still float64 and the global flag is left untouched."""
    code = textwrap.dedent(
        """
        import jax
        assert not jax.config.jax_enable_x64
        import amplify_jax as aj
        r = aj.rdp.poisson_subsampled_gaussian_rdp([2.0, 32.0], q=1e-8, sigma=1.0)
        assert r.dtype == "float64", r.dtype
        # q^2 (e - 1) at order 2: needs float64 (float32 would give 0 or 1e-7 relative error).
        assert abs(float(r[0]) / (1e-16 * 1.718281828459045) - 1) < 1e-9, float(r[0])
        e = aj.accountants.dpsgd_epsilon(sigma=1.0, q=0.01, steps=1000, delta=1e-5)
        assert e.epsilon.dtype == "float64"
        assert not jax.config.jax_enable_x64
        print("ok")
        """
    )
    env = {"JAX_ENABLE_X64": "0", "JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"}
    import os

    env = {**os.environ, "JAX_ENABLE_X64": "0"}
    env.pop("XLA_FLAGS", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "ok" in out.stdout


@pytest.mark.parametrize("k,n,p", [(1e6, 1e9, 1e-3), (999_000, 1e9, 1e-3), (3, 1e9, 1e-9), (4e8, 1e9, 0.4)])
def test_log_binom_pmf_large_n(k, n, p):
    """Loader's form keeps ~1e-13 relative accuracy of the pmf at n = 1e9 (lgamma differences lose 1e-6)."""
    ref = mp.log(mp.binomial(n, k)) + k * mp.log(p) + (n - k) * mp.log(1 - mp.mpf(p))
    assert abs(float(N.float64_jit(N.log_binom_pmf)(k, n, p)) - float(ref)) <= 1e-12 * max(1.0, abs(float(ref)))


def test_log1p_within_a_few_ulps_where_xla_cpu_is_not():
    """N.log1p against mpmath, compiled: <= 3 ulps on (-1, 10], including (-0.5, -0.3) where jnp.log1p on XLA's CPU
    was up to 128 ulps off (both directions: a sound bound built on it could come out low)."""
    import mpmath

    x = np.concatenate([np.linspace(-0.999, -0.51, 200), np.linspace(-0.5, -0.25, 801), np.linspace(-0.2499, 10, 300),
                        [-0.5, -0.25, np.nextafter(-0.25, 0), np.nextafter(-0.5, -1), 0.0, -1e-300, 1e-17]])
    got = np.asarray(N.float64_jit(N.log1p)(x))
    with mpmath.workdps(40):
        ref = np.array([float(mpmath.log1p(mpmath.mpf(float(v)))) for v in x])
    ulps = np.abs(got - ref) / np.spacing(np.maximum(np.abs(ref), 1e-300))
    assert ulps.max() <= 3, (x[np.argmax(ulps)], ulps.max())
