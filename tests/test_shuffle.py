"""Tests of amplify_jax.shuffle: closed forms, the clones bound, the privacy blanket with dummies.

References: the public values of the "Hiding among the clones" code and of Balle et al.'s privacy-blanket
notebook (shared/reference/public-values.md), brute-force sums with scipy.stats (independent of the
library's windows, recurrences and pmf), numerical integration (scipy.integrate) for the Laplace moments.
"""

import math

import jax
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import integrate
from scipy.stats import binom, multinomial

from amplify_jax import shuffle as S

from _references import scipy_clones_delta

# ------------------------------------------------------------------------------------------------ helpers


def brute_clones(eps, eps0, n):
    """D(P||Q), D(Q||P) of the clone pair by full sums over (c, k) (scipy pmfs)."""
    p = math.exp(-eps0)
    a = math.exp(eps0) / (1.0 + math.exp(eps0))
    dpq = dqp = 0.0
    for c in range(n):
        w = binom.pmf(c, n - 1, p)
        k = np.arange(c + 2)
        b, bm = binom.pmf(k, c, 0.5), binom.pmf(k - 1, c, 0.5)
        P = a * b + (1 - a) * bm
        Q = (1 - a) * b + a * bm
        dpq += w * np.maximum(P - math.exp(eps) * Q, 0).sum()
        dqp += w * np.maximum(Q - math.exp(eps) * P, 0).sum()
    return dpq, dqp


def brute_blanket(eps, n, d, T, sigma):
    """Ladjel Lemma 2 with E[sum L]_+ by full multinomial sums (target randomizer, T targets)."""
    ee = math.exp(eps)
    total = 0.0
    for mp in range(n):
        w = binom.pmf(mp, n - 1, sigma)
        if w == 0:
            continue
        K = mp + 1 + d
        acc = 0.0
        for n1 in range(K + 1):
            for n2 in range(K + 1 - n1):
                if T > 2:
                    pr = multinomial.pmf([n1, n2, K - n1 - n2], K, [1 / T, 1 / T, 1 - 2 / T])
                else:
                    pr = binom.pmf(n1, K, 0.5) if n1 + n2 == K else 0.0
                s = K * sigma * (1 - ee) + (1 - sigma) * T * (n1 - ee * n2)
                acc += pr * max(s, 0.0)
        total += w * acc / K
    return total


def notebook_bennett_uncorrected_delta(eps, n, gamma, l_max, c):
    """The misprinted Bennett form (extra 1/(a m)) as in Ladjel Lemma 3, for d = 0 (test-only)."""
    a = math.expm1(eps)
    m = np.arange(1, n + 1)
    beta = a * l_max / c
    phi = (1 + beta) * math.log1p(beta) - beta
    e = l_max / (a * m * math.log1p(beta)) * np.exp(-m * c / l_max**2 * phi)
    return float(np.sum(binom.pmf(m, n, gamma) * e) / (gamma * n))


# ------------------------------------------------------------------------------------------- closed forms


def test_erlingsson_matches_notebook():
    out = S.erlingsson_epsilon(0.4, n=5000, delta=1e-6)
    assert bool(out.valid)
    assert float(out.epsilon) == pytest.approx(0.2523130449483328, rel=1e-12)
    delta, valid = S.erlingsson_delta(0.15, eps0=0.4, n=5000)
    assert float(delta) == pytest.approx(0.007575677444259949, rel=1e-12) and bool(valid)


def test_erlingsson_conditions_fall_back():
    out = S.erlingsson_epsilon(np.array([0.4, 0.6, 0.4, 0.4]), n=np.array([5000, 5000, 999, 5000]),
                               delta=np.array([1e-6, 1e-6, 1e-6, 0.05]))
    np.testing.assert_array_equal(np.asarray(out.valid), [True, False, False, False])
    np.testing.assert_allclose(np.asarray(out.epsilon)[1:], [0.6, 0.4, 0.4])


def test_fmt_closed_form_reference_and_condition():
    out = S.fmt_closed_form_epsilon(4.0, n=1e5, delta=1e-6)
    assert bool(out.valid)
    assert float(out.epsilon) == pytest.approx(0.5378040242374512, rel=1e-12)
    # The condition uses ln(4/delta) (ERRATA): just above the bound is invalid, just below valid, and an
    # eps0 admissible under the misprinted ln(2/delta) but not under ln(4/delta) is rejected.
    n, delta = 1e5, 1e-6
    bound = float(S.fmt_validity_bound(n=n, delta=delta))
    wrong = math.log(n / (16 * math.log(2 / delta)))
    assert wrong > bound
    res = S.fmt_closed_form_epsilon(np.array([bound - 1e-9, bound + 1e-9, 0.5 * (bound + wrong)]), n=n, delta=delta)
    np.testing.assert_array_equal(np.asarray(res.valid), [True, False, False])
    assert float(res.epsilon[1]) == pytest.approx(bound + 1e-9)


# ------------------------------------------------------------------------------------------------- clones


def test_clones_reference_interval_large_n_and_closed_form():
    eps0 = np.array([4.0, 4.0, 1.0])
    n = np.array([1e5, 1e7, 1e7])
    delta = np.array([1e-6, 1e-8, 1e-8])
    out = S.clones_epsilon(eps0, n, delta)
    cf = S.fmt_closed_form_epsilon(eps0, n=n, delta=delta)
    lo, hi = np.asarray(out.lower), np.asarray(out.upper)
    assert np.all(np.asarray(out.valid))
    # Public code: eps in [0.1675385583317841, 0.172790550755978]; ours is inside and tighter.
    assert 0.1675385583317841 <= lo[0] <= hi[0] <= 0.172790550755978
    assert np.all(lo <= hi) and np.all(hi - lo < 1e-5 * hi)
    assert np.all(hi < np.asarray(cf.epsilon))
    # Independent check with scipy's CDFs: delta(upper) <= 1e-6 < delta(lower).
    assert scipy_clones_delta(hi[0], 4.0, 100_000) <= 1e-6 < scipy_clones_delta(lo[0], 4.0, 100_000)


def test_clones_delta_brackets_brute_force_both_directions():
    cases = [(0.3, 1.0, 50), (0.1, 2.0, 200), (1.0, 3.0, 30), (2.0, 2.5, 10), (0.5, 4.0, 1)]
    eps, eps0, n = (np.array(x, dtype=float) for x in zip(*cases))
    d = S.clones_delta(eps, eps0=eps0, n=n)
    for i, (e, e0, m) in enumerate(cases):
        dpq, dqp = brute_clones(e, e0, m)
        assert float(d.pq_lower[i]) <= dpq <= float(d.pq_upper[i])
        assert float(d.qp_lower[i]) <= dqp <= float(d.qp_upper[i])
        assert float(d.upper[i]) - float(d.lower[i]) <= 1e-9 * dpq + 1e-14
        # Mirror symmetry k -> c + 1 - k: the two directions agree (each computed with its own cut-off).
        assert dpq == pytest.approx(dqp, rel=1e-10)
        assert float(d.pq_lower[i]) == pytest.approx(float(d.qp_lower[i]), rel=1e-9)


def test_clones_epsilon_sound_against_brute_force_on_a_grid():
    eps0 = np.array([[1.0, 2.0], [3.0, 0.5]])
    n = np.array([[60, 120], [90, 200]])
    out = S.clones_epsilon(eps0, n, 1e-3)
    assert out.upper.shape == (2, 2)
    for i in range(2):
        for j in range(2):
            hi, lo = float(out.upper[i, j]), float(out.lower[i, j])
            assert bool(out.valid[i, j]) and lo <= hi
            assert max(brute_clones(hi, eps0[i, j], int(n[i, j]))) <= 1e-3
            if lo > 0:
                assert max(brute_clones(lo, eps0[i, j], int(n[i, j]))) > 1e-3


def test_clones_no_amplification_and_narrow_window_stays_sound():
    # Two users at delta = 1e-9: only eps within ~1e-9 of eps0 are certified (P/Q <= e^eps0).
    out = S.clones_epsilon(np.array([1.0, 1.0]), np.array([2, 10000]), np.array([1e-9, 1e-6]), tail_sd=5.0)
    assert float(out.upper[0]) == pytest.approx(1.0, rel=1e-8) and float(out.lower[0]) == pytest.approx(1.0, rel=1e-8)
    # A window too narrow for delta (tail_sd = 5): the mass outside it is bounded (D_c <= A1 below, <= the
    # last D_c above, D_c non-increasing in c) and added, so the bound is looser but still sound; the lower
    # end (the window's sum only) stays below.
    full = S.clones_epsilon(1.0, 10000, 1e-6)
    assert bool(out.valid[1]) and float(full.upper) < float(out.upper[1]) < 1.0
    assert float(out.lower[1]) <= float(full.lower)


# ---------------------------------------------------------------------------------------- privacy blanket


def test_blanket_properties_match_notebook():
    g = S.blanket_properties(0.25, randomizer=S.generic_randomizer(4.0))
    assert float(g.gamma) == pytest.approx(0.01831564, abs=1e-8)
    assert float(g.l_max) == pytest.approx(54.574632, abs=1e-6)
    assert float(g.l_range) == pytest.approx(124.661729, abs=1e-6)
    assert float(g.second_moment) == pytest.approx(144.615266, abs=1e-6)
    r = S.blanket_properties(0.25, randomizer=S.randomized_response(4.0, k=100))
    assert float(r.gamma) == pytest.approx(0.65104951, abs=1e-8)
    assert float(r.l_max) == pytest.approx(34.710135, abs=1e-6)
    assert float(r.l_range) == pytest.approx(79.701179, abs=1e-6)
    assert float(r.second_moment) == pytest.approx(32.323385, abs=1e-6)


NOTEBOOK = {  # n = 5000, eps0 = 0.4, delta = 1e-6
    ("generic", "hoeffding"): 0.05746164784348143,
    ("laplace", "hoeffding"): 0.02423345457274603,
    ("rr2", "hoeffding"): 0.02397882347116631,
    ("rr100", "hoeffding"): 0.026881289729458715,
    ("generic", "bennett"): 0.11301679081207759,
    ("laplace", "bennett"): 0.022807535585468337,
    ("rr2", "bennett"): 0.02428301504607527,
    ("rr100", "bennett"): 0.0035207898339832183,
}


def _rand(name):
    return {
        "generic": S.generic_randomizer(0.4),
        "laplace": S.laplace_randomizer(0.4),
        "rr2": S.randomized_response(0.4, k=2),
        "rr100": S.randomized_response(0.4, k=100),
    }[name]


# Bennett's table in the slow set (~14 s of a worker): Hoeffding's checks the same inversion in the default one
@pytest.mark.parametrize("method", ["hoeffding", pytest.param("bennett", marks=pytest.mark.slow)])
def test_blanket_epsilon_matches_notebook_table(method):
    for name in ("generic", "laplace", "rr2", "rr100"):
        out = S.blanket_epsilon(1e-6, n=5000, randomizer=_rand(name), method=method)
        ref = NOTEBOOK[(name, method)]
        assert not bool(out.fallback)
        assert float(out.delta) <= 1e-6
        # The feasible end of the bracket: never below the reference, within rtol.
        assert ref * (1 - 1e-12) <= float(out.epsilon) <= ref * (1 + 1e-8), name


def test_bennett_table_is_the_corrected_form():
    """The notebook's Bennett column matches the corrected bound; the misprinted form (Ladjel Lemma 3, extra
    1/(a m)) gives a smaller delta, hence a smaller (unsound) eps: 0.0729 instead of 0.1130 (generic)."""
    r = S.generic_randomizer(0.4)
    eps = 0.11301679081207759
    p = S.blanket_properties(eps, randomizer=r)
    ours = float(S.blanket_delta(eps, n=5000, randomizer=r, method="bennett").delta)
    wrong = notebook_bennett_uncorrected_delta(eps, 5000, float(p.gamma), float(p.l_max), float(p.second_moment))
    assert ours == pytest.approx(1e-6, rel=1e-7)
    assert wrong < 0.5 * ours


@pytest.mark.parametrize("x,xp", [(0.0, 1.0), (1.0, 0.0), (0.2, 0.9), (0.0, 0.5), (0.3, 0.3)])
def test_laplace_second_moment_dominates_integration(x, xp):
    eps0, eps = 1.3, 0.2
    g = math.exp(-eps0 / 2)

    def omega(y):
        return (eps0 / 2) * math.exp(-eps0 * max(abs(y), abs(1 - y))) / g

    def mu(y, z):
        return (eps0 / 2) * math.exp(-eps0 * abs(y - z))

    def integrand(y):
        return (mu(y, x) - math.exp(eps) * mu(y, xp)) ** 2 / omega(y)

    val = sum(integrate.quad(integrand, a, b, limit=200, epsabs=1e-13)[0]
              for a, b in [(-40, 0), (0, 0.5), (0.5, 1), (1, 41)])
    c = float(S.blanket_properties(eps, randomizer=S.laplace_randomizer(eps0)).second_moment)
    if (x, xp) == (0.0, 1.0):
        assert c == pytest.approx(val, rel=1e-9)
    assert val <= c * (1 + 1e-9)


EXACT_CASES = [(0.5, 20, 3, 5, 0.3), (0.2, 10, 10, 20, 0.0), (0.7, 12, 0, 2, 0.4), (0.3, 15, 5, 3, 0.6)]


def test_blanket_exact_matches_brute_force_and_orders_below_concentration():
    eps, n, d, T, sigma = (np.array(x, dtype=float) for x in zip(*EXACT_CASES))
    r = S.target_randomizer(targets=T, sampling=sigma)
    kw = dict(n=n, dummies=d, randomizer=r)
    got = np.asarray(S.blanket_delta(eps, method="exact", **kw).delta)
    ho = np.asarray(S.blanket_delta(eps, method="hoeffding", **kw).delta)
    be = np.asarray(S.blanket_delta(eps, method="bennett", **kw).delta)
    for i, case in enumerate(EXACT_CASES):
        ref = brute_blanket(*case)
        assert ref > 0
        assert ref <= got[i] <= ref * (1 + 1e-9), case
    assert np.all(got <= ho) and np.all(got <= be)


def test_blanket_monte_carlo_against_exact():
    r = S.target_randomizer(targets=5, sampling=0.3)
    eps = np.array([0.3, 0.5, 0.8])
    ex = np.asarray(S.blanket_delta(eps, n=20, dummies=3, randomizer=r, method="exact").delta)
    mc = S.blanket_delta(eps, n=20, dummies=3, randomizer=r, method="monte_carlo", key=jax.random.PRNGKey(3),
                         samples=20000, confidence=0.99)
    est, ucb = np.asarray(mc.estimate), np.asarray(mc.delta)
    assert np.all(ucb >= ex)
    # The estimate is within a few standard errors (Y in [0, L_max], L_max = 0.7 * 5 + ...).
    assert np.all(np.abs(est - ex) <= 5 * 3.5 / math.sqrt(20000))
    again = S.blanket_delta(eps, n=20, dummies=3, randomizer=r, method="monte_carlo", key=jax.random.PRNGKey(3),
                            samples=20000, confidence=0.99)
    np.testing.assert_array_equal(np.asarray(again.delta), ucb)  # explicit keys: reproducible


def test_blanket_epsilon_round_trip_exact():
    """Ladjel's setting (T = 20, delta = 1e-4): the exact inversion returns the feasible end of its bracket."""
    r = S.target_randomizer(targets=20, sampling=np.array([0.2, 0.5]))
    kw = dict(n=500, dummies=50, randomizer=r)
    out = S.blanket_epsilon(1e-4, method="exact", rtol=1e-9, **kw)
    e = np.asarray(out.epsilon)
    assert not np.any(np.asarray(out.fallback))
    d_at = np.asarray(S.blanket_delta(e, method="exact", **kw).delta)
    d_below = np.asarray(S.blanket_delta(e * (1 - 1e-7), method="exact", **kw).delta)
    assert np.all(d_at <= 1e-4) and np.all(d_below > 1e-4)


@pytest.mark.slow
def test_blanket_epsilon_exact_below_bennett_below_hoeffding():
    r = S.target_randomizer(targets=20, sampling=np.array([0.2, 0.5]))
    kw = dict(n=500, dummies=50, randomizer=r)
    e = np.asarray(S.blanket_epsilon(1e-4, method="exact", **kw).epsilon)
    be = np.asarray(S.blanket_epsilon(1e-4, method="bennett", **kw).epsilon)
    ho = np.asarray(S.blanket_epsilon(1e-4, method="hoeffding", **kw).epsilon)
    assert np.all(e < be) and np.all(be <= ho)


def test_blanket_epsilon_falls_back_to_local_guarantee():
    # One user, no dummies, generic eps0-LDP: even eps0 does not reach delta = 1e-9 -> eps0, flagged.
    out = S.blanket_epsilon(1e-9, n=1, randomizer=S.generic_randomizer(1.0), method="bennett")
    assert bool(out.fallback) and float(out.epsilon) == 1.0
    # Dummies only (sigma = 0) with too few dummies: the local guarantee is infinite -- reported, not NaN.
    out = S.blanket_epsilon(1e-9, n=10, dummies=1, randomizer=S.target_randomizer(targets=20, sampling=0.0),
                            method="hoeffding")
    assert bool(out.fallback) and math.isinf(float(out.epsilon)) and not math.isnan(float(out.delta))


@settings(deadline=None, derandomize=True, max_examples=20)
@given(eps=st.floats(0.05, 2.0), d=st.integers(0, 200), sigma=st.sampled_from([0.1, 0.5]))
def test_blanket_delta_monotone_in_eps_and_dummies(eps, d, sigma):
    # sigma from a fixed set: the binomial window (a compile-time size) then takes one value.
    r = S.target_randomizer(targets=10, sampling=np.array([sigma, 0.5]))
    vals = np.asarray(S.blanket_delta(np.array([eps, eps * 1.1, eps, eps])[:, None], n=200,
                                      dummies=np.array([d, d, d + 10, d + 50])[:, None], randomizer=r,
                                      method="bennett").delta)[:, 0]
    assert vals[1] <= vals[0] and vals[2] <= vals[0] and vals[3] <= vals[2]
    assert np.all((vals >= 0) & (vals <= 1))


# ---------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: S.clones_epsilon(1.0, 0, 1e-6), "n"),
        (lambda: S.clones_epsilon(-1.0, 10, 1e-6), "eps0"),
        (lambda: S.clones_epsilon(1.0, 10, 1.0), "delta"),
        (lambda: S.fmt_closed_form_epsilon(1.0, n=10, delta=0.0), "delta"),
        (lambda: S.erlingsson_epsilon(1.0, n=0.5, delta=1e-6), "n"),
        (lambda: S.blanket_delta(-0.1, n=10, randomizer=S.generic_randomizer(1.0)), "eps"),
        (lambda: S.blanket_delta(0.1, n=10, dummies=-1, randomizer=S.generic_randomizer(1.0)), "dummies"),
        (lambda: S.blanket_epsilon(1.5, n=10, randomizer=S.generic_randomizer(1.0)), "delta"),
        (lambda: S.target_randomizer(targets=20, sampling=1.5), "sampling"),
        (lambda: S.target_randomizer(targets=1, sampling=0.5), "targets"),
        (lambda: S.blanket_delta(0.1, n=10, randomizer=S.generic_randomizer(1.0), method="exact"), "method"),
        (lambda: S.blanket_delta(0.1, n=10, randomizer=S.generic_randomizer(1.0), method="magic"), "method"),
        (lambda: S.blanket_delta(0.1, n=10, randomizer=S.randomized_response(1.0, k=3), method="monte_carlo"),
         "key"),
        (lambda: S.blanket_delta(0.1, n=10, randomizer="rr"), "randomizer"),
    ],
)
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.slow
def test_blanket_exact_below_notebook_bounds_for_randomized_response():
    """n = 5000, eps0 = 0.4, delta = 1e-6: the exact evaluation certifies less than the notebook's Hoeffding and
    Bennett values (k = 2: 0.02019 < 0.02398 < 0.02428; k = 100: 0.00267 < 0.00352)."""
    for name in ("rr2", "rr100"):
        out = S.blanket_epsilon(1e-6, n=5000, randomizer=_rand(name), method="exact")
        assert not bool(out.fallback) and float(out.delta) <= 1e-6
        assert float(out.epsilon) < min(NOTEBOOK[(name, "hoeffding")], NOTEBOOK[(name, "bennett")])


def test_registered_closed_forms_equal_the_family_and_flag_fallbacks():
    from amplify_jax import bounds
    from amplify_jax.status import Status

    eps0, n, delta = np.array([0.3, 0.6, 4.0]), np.array([10_000, 10_000, 100]), 1e-6
    for bid, fn in (("shuffle.erlingsson", S.erlingsson_epsilon), ("shuffle.fmt-closed-form", S.fmt_closed_form_epsilon)):
        r, ref = bounds.evaluate(bid, eps0=eps0, n=n, delta=delta), fn(eps0, n=n, delta=delta)
        np.testing.assert_array_equal(r.epsilon, np.asarray(ref.epsilon))
        np.testing.assert_array_equal(r.status == Status.FALLBACK, ~np.asarray(ref.valid))
    # the delta form: capped by the local guarantee's delta, which is also its fallback value
    r = bounds.evaluate("shuffle.erlingsson-delta", epsilon=[0.1, 0.1, 0.7], eps0=[0.25, 0.6, 0.6], n=10_000)
    assert r.status.tolist() == [Status.OK, Status.FALLBACK, Status.FALLBACK]
    local = (np.exp(0.6) - np.exp(0.1)) / (np.exp(0.6) + 1.0)
    np.testing.assert_allclose(r.delta[1:], [local, 0.0], rtol=1e-14)
    assert not np.signbit(r.delta).any()  # eps >= eps0: delta is +0.0 (was -0.0, "-0" in text and JSON)


# ---------------------------------------------------------------------------------------------------------
# the registry's vocabulary: the eps at which a delta is computed is `epsilon`


def test_delta_functions_take_epsilon():
    import inspect

    assert list(inspect.signature(S.blanket_delta).parameters)[0] == "epsilon"
    assert "delta" in inspect.signature(S.blanket_epsilon).parameters  # eps at a fixed delta: keeps delta


def test_blanket_window_one_program_per_octave():
    """Issue 25: the blanket's static window is a power of two (shuffle._blanket_concentration._bucket), so
    moving eps0 from 2.0 to 2.3 at n = 10 000 (window 619 -> 545 values) compiles nothing; with eight sizes per
    octave (640, 576) it compiled the kernel again (~10 s)."""
    from _compiles import compilations

    from amplify_jax import bounds

    kw = dict(n=[10_000, 12_000, 14_000], dummies=10, delta=1e-6)
    bounds.evaluate("shuffle.blanket", eps0=2.0, **kw)
    with compilations() as got:
        r = bounds.evaluate("shuffle.blanket", eps0=2.3, **{**kw, "n": [9_000, 10_000, 11_000], "delta": 1e-7})
    assert len(got) == 0, got
    assert np.all(np.asarray(r.epsilon) <= 2.3) and np.asarray(r.epsilon)[-1] < 2.3  # amplified at n = 11 000


def test_clones_delta_new_size_compiles_only_its_kernel():
    """Issue 25: clones_delta hands NumPy arrays to its compiled kernel (jnp.asarray compiled a small program per
    shape beside it): a new grid size compiles at most the kernel for that size, and new values nothing."""
    from _compiles import compilations

    from amplify_jax import bounds

    bounds.evaluate("shuffle.clones-delta", epsilon=0.3, eps0=2.0, n=10_000)
    with compilations() as got:
        bounds.evaluate("shuffle.clones-delta", epsilon=[0.3, 0.4, 0.5], eps0=2.0, n=10_000)
    assert len(got) <= 1, got
    with compilations() as got:
        r = bounds.evaluate("shuffle.clones-delta", epsilon=[0.2, 0.35, 0.6], eps0=2.0, n=11_000)
    assert len(got) == 0, got
    assert np.all(np.diff(np.asarray(r.delta)) < 0)
