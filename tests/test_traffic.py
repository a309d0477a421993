"""Tests of amplify_jax.traffic (Ladjel, Anciaux, Bellet, Scerri: DP for communication patterns).

References used: brute-force enumeration of the local randomizer (Thm 2) and of the capped scrambler
(Thm 3), the proof expressions of App. B, mpmath sums over the multinomial counts (Thm 4 exact), the
independent privacy-blanket implementation in amplify_jax.shuffle (exact method), direct enumeration of the
3-point law of L (Lemma 5), closed forms of §IV-D, and the exact output law of the scrambler (Figure 6).
"""

import itertools
import math

import jax
import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from amplify_jax import traffic as tr
from amplify_jax.status import Status

from _references import scipy_lemma2

# ------------------------------------------------------------------------------------------------------
# Thm 2


def _local_ratio_bruteforce(T, sigma, d):
    """max over outputs and t != t' of P[R(t) = O] / P[R(t') = O], enumerating the randomizer of §III-A."""
    targets = range(T)

    def law(t):
        out = {}
        for first in targets:  # first message: true target w.p. 1 - sigma, else uniform over all T
            p_first = (1 - sigma) * (first == t) + sigma / T
            others = [u for u in targets if u != first]
            for rest in itertools.combinations(others, d):
                o = frozenset((first,) + rest)
                out[o] = out.get(o, 0.0) + p_first / math.comb(T - 1, d)
        return out

    P, Q = law(0), law(1)
    return max(P[o] / Q[o] for o in P)


@pytest.mark.parametrize("T,sigma,d", [(5, 0.3, 0), (5, 0.3, 1), (6, 0.1, 2), (6, 0.7, 3), (4, 0.5, 2)])
def test_local_epsilon_matches_enumeration_and_proof(T, sigma, d):
    got = tr.local_epsilon(targets=T, sampling=sigma, dummies=d)
    assert bool(got.valid)
    # App. B: ((1 - sigma)(T - d - 1)/(T - 1) + sigma P) / (sigma P), P = (d + 1)(T - d - 1) / (T (T - 1))
    P = (d + 1) * (T - d - 1) / (T * (T - 1))
    proof = ((1 - sigma) * (T - d - 1) / (T - 1) + sigma * P) / (sigma * P)
    assert float(got.epsilon) == pytest.approx(math.log(proof), rel=1e-12)
    assert float(got.epsilon) == pytest.approx(math.log(_local_ratio_bruteforce(T, sigma, d)), rel=1e-12)


def test_local_epsilon_edges():
    e = tr.local_epsilon(targets=20, sampling=[0.0, 0.5, 0.5], dummies=[3, 19, 0])
    assert np.isinf(e.epsilon[0]) and not bool(e.valid[0])
    assert float(e.epsilon[1]) == 0.0  # broadcast
    assert float(e.epsilon[2]) == pytest.approx(math.log(1 + 0.5 * 20 / 0.5))
    with pytest.raises(ValueError, match="dummies"):
        tr.local_epsilon(targets=5, sampling=0.5, dummies=5)


# ------------------------------------------------------------------------------------------------------
# Thm 3


def _thm3_printed_mpmath(T, n, sigma, d):
    sb, R = mp.mpf(1) - sigma, mp.mpf(sigma) / (T - 1)
    num = den = mp.mpf(0)
    for k in range(0, min(d, n - 1) + 1):
        c = mp.binomial(d, k) * mp.binomial(n - 1, k) * sb**k * R ** (n - k - 1)
        num += c * (sb + k * R**2 / sb)
        den += c * (R + k * R**2 / sb)
    return float(mp.log(num / den))


@pytest.mark.parametrize("T,n,sigma,d", [(20, 100, 0.3, 50), (20, 600, 0.05, 10), (3, 3, 0.3, 1), (10, 50, 0.8, 49)])
def test_thm3_printed_formula_in_log_space(T, n, sigma, d):
    got = tr.scrambler_pure_epsilon(targets=T, n=n, sampling=sigma, dummies=d)
    assert bool(got.valid)
    ref = _thm3_printed_mpmath(T, n, sigma, d)
    local = math.log((1 - sigma) * (T - 1) / sigma)
    assert float(got.printed) == pytest.approx(min(ref, local), rel=1e-10)
    assert float(got.epsilon) == pytest.approx(local, rel=1e-12)


@pytest.mark.parametrize("T,n,sigma,d", [(3, 3, 0.3, 1), (3, 4, 0.5, 2), (4, 3, 0.4, 2)])
def test_thm3_as_printed_underreports_but_reported_eps_is_sound(T, n, sigma, d):
    exact = tr.scrambler_pure_epsilon_exact(targets=T, n=n, sampling=sigma, dummies=d)
    got = tr.scrambler_pure_epsilon(targets=T, n=n, sampling=sigma, dummies=d)
    assert float(got.printed) < exact - 1e-3  # the printed formula is below the true worst case
    assert float(got.epsilon) >= exact  # what we report is not


def test_thm3_hand_computed_counterexample():
    # T = 3, n = 3, d = 1, sigma = 0.3 at App. C's worst configuration, computed by hand (see the docstring).
    sb, R = 0.7, 0.15
    pg = sb * R**2 / 2 + (2 * sb**2 * R + R**3) / 3
    pq = R**3 / 2 + (2 * sb * R**2 + R**3) / 3
    assert tr.scrambler_pure_epsilon_exact(targets=3, n=3, sampling=0.3, dummies=1) == pytest.approx(math.log(pg / pq), rel=1e-12)


# ------------------------------------------------------------------------------------------------------
# Lemma 5 (corrected) and Thm 4


def test_amplification_variable_moments_by_enumeration():
    for eps, T, s in [(0.5, 20, 0.2), (2.0, 5, 0.7), (1.0, 2, 0.0)]:
        a, bm, bp, c = (float(x) for x in tr.amplification_variable_bounds(eps, targets=T, sampling=s))
        ez = math.exp(eps)
        vals = [s * (1 - ez) + (1 - s) * T, s * (1 - ez) - (1 - s) * T * ez, s * (1 - ez)]
        probs = [1 / T, 1 / T, 1 - 2 / T]
        mean = sum(v * p for v, p in zip(vals, probs))
        assert -a == pytest.approx(mean, rel=1e-12)
        assert bp == pytest.approx(max(vals), rel=1e-12) and bm == pytest.approx(min(vals), rel=1e-12)
        assert c == pytest.approx(sum(v * v * p for v, p in zip(vals, probs)), rel=1e-12)
        assert bp - bm == pytest.approx((1 - s) * T * (1 + ez), rel=1e-12)  # ERRATA: Thm 4's b


def _delta_mpmath(eps, T, n, sigma, d):
    """Lemma 2 with E[sum L]_+ summed over every multinomial count (N1, N2)."""
    mp.mp.dps = 30
    ez = mp.e ** mp.mpf(eps)
    tot = mp.mpf(0)
    for j in range(n):
        wj = mp.binomial(n - 1, j) * mp.mpf(sigma) ** j * (1 - mp.mpf(sigma)) ** (n - 1 - j)
        k = j + d + 1
        E = mp.mpf(0)
        for n1 in range(k + 1):
            for n2 in range(k - n1 + 1):
                v = k * sigma * (1 - ez) + (1 - sigma) * T * (n1 - ez * n2)
                if v > 0:
                    p = mp.factorial(k) / (mp.factorial(n1) * mp.factorial(n2) * mp.factorial(k - n1 - n2))
                    E += p * (mp.mpf(1) / T) ** (n1 + n2) * (1 - mp.mpf(2) / T) ** (k - n1 - n2) * v
        tot += wj * E / k
    return float(tot)


@pytest.mark.parametrize(
    "eps,T,n,sigma,d",
    [(0.5, 5, 8, 0.3, 3), (1.0, 20, 10, 0.2, 5), (0.2, 3, 6, 0.0, 4), (30.0, 5, 6, 0.0, 3), (0.9, 4, 7, 0.05, 2)],
)
def test_exact_matches_mpmath(eps, T, n, sigma, d):
    got = float(tr.scrambler_delta(eps, targets=T, n=n, sampling=sigma, dummies=d, method="exact").delta)
    ref = _delta_mpmath(eps, T, n, sigma, d)
    assert got >= ref
    assert got == pytest.approx(ref, rel=1e-9, abs=1e-15)


def test_sigma_zero_floor():
    # sigma = 0, huge eps: only outputs without a message to t' leak, delta = (1 - 1/T)^d exactly
    got = float(tr.scrambler_delta(40.0, targets=5, n=6, sampling=0.0, dummies=3, method="exact").delta)
    assert got == pytest.approx(0.8**3, rel=1e-9) and got >= 0.8**3


# one grid shared by the comparisons (one compilation per method)
_EPS = np.array([0.3, 0.7, 1.0, 1.5, 2.5, 0.6, 1.2, 0.4])
_T = np.array([20, 20, 20, 20, 20, 5, 10, 2])
_N = np.array([100, 500, 100, 300, 100, 50, 200, 40])
_S = np.array([0.2, 0.2, 0.0, 0.1, 0.2, 0.5, 0.3, 0.6])
_D = np.array([50, 50, 50, 10, 1000, 10, 0, 5])


@pytest.fixture(scope="module")
def exact_grid():
    return np.asarray(tr.scrambler_delta(_EPS, targets=_T, n=_N, sampling=_S, dummies=_D, method="exact").delta)


@pytest.mark.slow
def test_exact_grid_against_scipy(exact_grid):
    """scrambler_delta now runs amplify_jax.shuffle's engine (one implementation for both families): check
    the grid against a SciPy evaluation of every count (d = 1000 left out: slow in SciPy)."""
    for i in (0, 1, 3, 5, 6, 7):
        ref = scipy_lemma2(_EPS[i], _N[i], _D[i], _T[i], _S[i])
        assert ref * (1 - 1e-12) <= exact_grid[i] <= ref * (1 + 1e-7) + 1e-15, i


@pytest.mark.parametrize("method", ["hoeffding", "bennett"])
def test_concentration_bounds_above_exact(method, exact_grid):
    got = np.asarray(tr.scrambler_delta(_EPS, targets=_T, n=_N, sampling=_S, dummies=_D, method=method).delta)
    assert np.all(got >= exact_grid)
    assert np.all(got <= 1.0)


def test_hoeffding_closed_form_sigma_zero():
    # Thm 4, sigma = 0 (corrected a, b): delta <= b^2/(4a) exp(-2(d+1)a^2/b^2) / (d+1), capped by E[L_+] = 1
    eps, T, d = 3.0, 4, 400
    a, b = math.expm1(eps), T * (1 + math.exp(eps))
    ref = b * b / (4 * a) * math.exp(-2 * (d + 1) * a * a / (b * b)) / (d + 1)
    got = float(tr.scrambler_delta(eps, targets=T, n=7, sampling=0.0, dummies=d, method="hoeffding").delta)
    assert got == pytest.approx(ref, rel=1e-12)


def test_hoeffding_theorem4_sigma_positive_corrected_form():
    # Thm 4 (sigma > 0) in the paper's own m-form, with a = e^eps - 1 and b = (1 - sigma) T (1 + e^eps)
    eps, T, n, s, d = 2.0, 4, 60, 0.1, 200
    mp.mp.dps = 30
    a, b = mp.expm1(eps), (1 - mp.mpf(s)) * T * (1 + mp.e**eps)
    tot = mp.mpf(0)
    for m in range(1, n + 1):
        tot += mp.mpf(m) / (m + d) * mp.binomial(n, m) * mp.mpf(s) ** m * (1 - mp.mpf(s)) ** (n - m) \
            * b**2 / (4 * a) * mp.e ** (-2 * (m + d) * a**2 / b**2)
    ref = float(tot / (s * n))
    got = float(tr.scrambler_delta(eps, targets=T, n=n, sampling=s, dummies=d, method="hoeffding").delta)
    assert ref < 0.5  # the E[L_+] cap is not active here
    assert got >= ref and got == pytest.approx(ref, rel=1e-9)


def test_extreme_eps_no_nan():
    """At both ends of epsilon's domain [0, 300] (traffic/_params.py: EPSILON) delta is finite and at least the
    chance 0.8^3 that no dummy lands on either target (sigma = 0: no blanket); above 300 it is refused."""
    for m in ("hoeffding", "bennett", "exact"):
        for e in (0.0, 300.0):
            r = float(tr.scrambler_delta(e, targets=5, n=6, sampling=0.0, dummies=3, method=m).delta)
            assert np.isfinite(r) and 0.8**3 <= r <= 1.0
        with pytest.raises(ValueError, match=r"epsilon in \[0, 300\], got epsilon=800"):
            tr.scrambler_delta(800.0, targets=5, n=6, sampling=0.0, dummies=3, method=m)


def test_monte_carlo_upper_confidence_bound(exact_grid):
    sel = np.array([0, 1, 3, 5])
    for seed in range(2):
        mc = tr.scrambler_delta(_EPS[sel], targets=_T[sel], n=_N[sel], sampling=_S[sel], dummies=_D[sel],
                                method="monte_carlo", key=jax.random.PRNGKey(seed), samples=1 << 15)
        assert np.all(np.asarray(mc.delta) >= exact_grid[sel])
        # the plain estimate is close to the exact value (loose: 25% or 1e-3 absolute at 32768 samples)
        np.testing.assert_allclose(np.asarray(mc.estimate), exact_grid[sel], rtol=0.25, atol=1e-3)


def test_local_guarantee_zeroes_delta():
    eps0 = math.log1p(0.8 * 20 / 0.2)
    below = tr.scrambler_delta(eps0 * 0.999, targets=20, n=100, sampling=0.2, dummies=50, method="bennett")
    # just above the float64 value of the guarantee (which can be an ulp below the true one, where delta > 0:
    # the flag rounds it up; tests/test_soundness.py::test_regressions_blanket_rounded_up)
    at = tr.scrambler_delta(eps0 * (1 + 1e-15), targets=20, n=100, sampling=0.2, dummies=50, method="bennett")
    assert not bool(below.local) and bool(at.local) and float(at.delta) == 0.0


@settings(max_examples=20)
@given(
    eps=st.floats(0.05, 4.0), n=st.integers(1, 400), d=st.integers(0, 300), s=st.floats(0.0, 0.9),
    method=st.sampled_from(["exact", "bennett", "hoeffding"]),
)
def test_delta_monotone(eps, n, d, s, method):
    """delta is non-increasing in d and n for every method (each term's k grows, g(k) non-increasing) and in
    eps for the exact method.  Hoeffding and Bennett are NOT monotone in eps at large eps (b^2/(4a) grows like
    e^eps; Bennett's beta -> 0 when sigma = 0), which is why the inversion re-checks its endpoint."""
    f = lambda e, nn, dd: np.asarray(tr.scrambler_delta(e, targets=20, n=nn, sampling=s, dummies=dd, method=method).delta)  # noqa: E731
    base = f(eps, n, d)
    tol = 1e-12 + 1e-9 * base
    if method == "exact":
        assert f(eps * 1.1, n, d) <= base + tol
    assert f(eps, n, d + 7) <= base + tol
    assert f(eps, n + 13, d) <= base + tol


def test_epsilon_round_trip():
    delta = np.array([1e-4, 1e-6, 1e-4])
    kw = dict(targets=20, n=[500, 300, 100], sampling=[0.2, 0.3, 0.0], dummies=[50, 100, 50])
    inv = tr.scrambler_epsilon(delta, **kw)
    # sigma = 0 with few dummies: no finite eps reaches delta (floor (1 - 1/T)^d): fallback, eps = inf
    assert list(np.asarray(inv.status)) == [Status.OK, Status.OK, Status.FALLBACK]
    assert np.isinf(float(inv.epsilon[2]))
    eps = np.where(np.isfinite(inv.epsilon), inv.epsilon, 60.0)
    at = np.asarray(tr.scrambler_delta(eps, **kw).delta)
    below = np.asarray(tr.scrambler_delta(eps * (1 - 1e-5), **kw).delta)
    assert np.all(at[:2] <= delta[:2]) and np.all(below[:2] > delta[:2])
    np.testing.assert_allclose(np.asarray(inv.achieved)[:2], at[:2], rtol=1e-12)


# ------------------------------------------------------------------------------------------------------
# Thm 1


def test_plans():
    agg = tr.aggregate_plan(3)
    p = tr.plan_privacy(agg, epsilon=0.4, delta=1e-5)
    assert float(p.epsilon) == pytest.approx(1.2) and float(p.epsilon) >= 1.2
    assert float(p.delta) == pytest.approx(3e-5)
    km = tr.kmeans_plan(10)
    p = tr.plan_privacy(km, epsilon={f"S{i}": 0.1 * i for i in range(1, 11)}, delta={"S1": 1e-6})
    assert float(p.epsilon) == pytest.approx(5.5) and float(p.delta) == pytest.approx(1e-6)
    # Example 6: items choose one branch -> max, not sum; eps and delta worst cases taken separately
    ex6 = tr.ExecutionPlan([("a", "S1"), ("S1", "C1"), ("b", "S2"), ("S2", "C2")], protected=["S1", "S2"])
    p = tr.plan_privacy(ex6, epsilon={"S1": 0.5, "S2": [0.7, 0.2]}, delta={"S1": 2e-5, "S2": 1e-6})
    np.testing.assert_allclose(p.epsilon, [0.7, 0.5])
    assert float(p.delta) == pytest.approx(2e-5)
    with pytest.raises(ValueError, match="cycle"):
        tr.ExecutionPlan([("S1", "C1"), ("C1", "S1")])
    with pytest.raises(ValueError, match="eps"):
        tr.plan_privacy(agg, epsilon=-1.0, delta=0.0)
    with pytest.raises(ValueError, match="delta"):
        tr.plan_privacy(agg, epsilon=1.0, delta=1.5)


# ------------------------------------------------------------------------------------------------------
# Metrics and deployment inversions


def test_costs_closed_forms():
    c = tr.scrambler_costs(sources=10_000, targets=20, n=100, sampling=0.2, dummies=50)
    assert float(c.sources) == 12_500 and float(c.extra_consents) == 2_500 and float(c.scramblers) == 125
    assert float(c.channels) == 12_500 + 125 * 20 and float(c.messages) == 12_500 + 125 * 150
    assert float(c.channels_per_scrambler) == 120
    l = tr.local_costs(sources=10_000, targets=20, sampling=0.2, dummies=3)
    assert float(l.messages) == 12_500 * 4 and float(l.channels_per_source) == 4
    z = tr.scrambler_costs(sources=10, targets=5, n=3, sampling=1.0, dummies=0)
    assert not bool(z.feasible) and np.isinf(float(z.sources))


def test_fewest_dummies_round_trip():
    r = tr.scrambler_calibrate_dummies(1.0, 1e-4, targets=20, n=100, sampling=0.2, sources=10_000,
                                       max_messages=[40_000, 10_000_000], method="bennett")
    assert list(np.asarray(r.status)) == [Status.INFEASIBLE, Status.OK]
    d = float(r.dummies[1])
    assert float(r.delta[1]) <= 1e-4
    before = float(tr.scrambler_delta(1.0, targets=20, n=100, sampling=0.2, dummies=d - 1, method="bennett").delta)
    assert before > 1e-4
    assert float(r.messages[1]) <= 10_000_000
    assert float(r.limit[0]) < d  # the small budget cannot pay for the dummies


@pytest.mark.slow
def test_smallest_sampling_and_messages_per_scrambler():
    r = tr.scrambler_calibrate_sampling(1.0, 1e-4, targets=20, n=100, dummies=50, method="bennett")
    s = float(r.sampling)
    assert int(r.status) == Status.OK and float(r.delta) <= 1e-4
    assert float(tr.scrambler_delta(1.0, targets=20, n=100, sampling=s * (1 - 1e-4), dummies=50, method="bennett").delta) > 1e-4
    m = tr.scrambler_calibrate_n(1.0, 1e-4, targets=20, sampling=0.2, dummies=50, max_channels=[200, 5000],
                                 method="bennett")
    assert list(np.asarray(m.status)) == [Status.INFEASIBLE, Status.OK]
    n_min = float(m.n[1])
    assert float(m.delta[1]) <= 1e-4 and float(m.limit[1]) == 4980
    assert float(tr.scrambler_delta(1.0, targets=20, n=n_min - 1, sampling=0.2, dummies=50, method="bennett").delta) > 1e-4


# ------------------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize(
    "kw,name",
    [
        (dict(targets=1), "targets"),
        (dict(dummies=-1), "dummies"),
        (dict(sampling=1.5), "sampling"),
        (dict(sampling=-0.1), "sampling"),
        (dict(n=0), "n"),
        (dict(epsilon=-0.5), "epsilon"),
        (dict(method="chebyshev"), "method"),
    ],
)
def test_bad_input(kw, name):
    args = dict(epsilon=1.0, targets=20, n=10, sampling=0.2, dummies=5, method="hoeffding")
    args.update(kw)
    eps = args.pop("epsilon")
    with pytest.raises(ValueError, match=name):
        tr.scrambler_delta(eps, **args)


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-3, 2.0])
def test_bad_delta(delta):
    with pytest.raises(ValueError, match="delta"):
        tr.scrambler_epsilon(delta, targets=20, n=10, sampling=0.2, dummies=5)
    with pytest.raises(ValueError, match="delta"):
        tr.scrambler_calibrate_dummies(1.0, delta, targets=20, n=10, sampling=0.2)


def test_monte_carlo_needs_key():
    with pytest.raises(ValueError, match="key"):
        tr.scrambler_delta(1.0, targets=20, n=10, sampling=0.2, dummies=5, method="monte_carlo")


# ------------------------------------------------------------------------------------------------------
# Figure 6 simulation


def test_simulation_frequencies_match_exact_law():
    T, n, s, d = 3, 2, 0.4, 1
    sim = tr.simulate_scrambler_outputs(targets=T, n=n, sampling=s, dummies=d, runs=200_000, seed=1)
    # exact law of the uncapped scrambler on the first input (targets 0, 1) and the second (1, 1)
    def law(x):
        out = {}
        for msgs in itertools.product(range(T), repeat=n + d):
            p = 1.0
            for i, m in enumerate(msgs):
                p *= ((1 - s) * (m == x[i]) + s / T) if i < n else 1 / T
            o = tuple(np.bincount(msgs, minlength=T))
            out[o] = out.get(o, 0.0) + p
        return out

    P, Q = law((0, 1)), law((1, 1))
    for o, c1, c2 in zip(map(tuple, sim.outputs), sim.counts_1, sim.counts_2):
        for c, L in ((c1, P), (c2, Q)):
            p = L.get(o, 0.0)
            sd = math.sqrt(sim.runs * p * (1 - p)) + 1
            assert abs(c - sim.runs * p) < 6 * sd
    finite = np.isfinite(sim.log_ratio)
    assert np.all(np.diff(sim.log_ratio[finite]) <= 0)


def test_registered_local_and_pure_bounds():
    from amplify_jax import bounds
    from amplify_jax.status import Status

    r = bounds.evaluate("traffic.local", targets=10, sampling=[0.0, 0.5], dummies=[2, 20])
    assert r.epsilon[0] == np.inf and r.status.tolist() == [Status.FALLBACK, Status.OK]
    assert r.epsilon[1] == 0.0  # dummies >= T - 1: a broadcast
    p = bounds.evaluate("traffic.scrambler-pure", targets=3, n=3, sampling=0.3, dummies=1)
    x = bounds.evaluate("traffic.scrambler-pure-exact", targets=3, n=3, sampling=0.3, dummies=1)
    assert float(p.printed) < float(x.epsilon) <= float(p.epsilon)  # printed Thm 3 under-reports; the answer holds
    assert int(p.status) == Status.FALLBACK


# ------------------------------------------------------------------------------------------------------
# the registry's vocabulary: results named after their answer


def test_results_name_their_answer():
    z, st_ = np.zeros(2), np.array([Status.OK, Status.INFEASIBLE], np.int32)
    for cls, field in ((tr.DummiesDeployment, "dummies"), (tr.SamplingDeployment, "sampling"),
                       (tr.ScramblerSizeDeployment, "n")):
        r = cls(z + 3.0, st_, z, z, z)
        assert isinstance(r, tr.Deployment) and isinstance(r, tuple) and r._fields[0] == field
        assert r._fields[1:] == ("status", "delta", "limit", "messages")
        value, status, *_ = r  # unpacking order unchanged
        assert value is r[0] is getattr(r, field) and status is st_
    pure = tr.local_epsilon(targets=10, sampling=0.5, dummies=2)
    capped = tr.scrambler_pure_epsilon(targets=3, n=3, sampling=0.3, dummies=1)
    plan = tr.plan_privacy(tr.aggregate_plan(2), epsilon=0.4, delta=1e-6)
    inv = tr.EpsilonInversion(np.array(0.5), np.array(Status.OK, np.int32), np.array(1e-6))
    for r in (pure, capped, plan, inv):
        assert r._fields[0] == "epsilon" and r[0] is r.epsilon
    e, valid = pure  # unpacking order unchanged
    assert e is pure.epsilon and valid is pure.valid


def test_epsilon_inversion_status_is_status_codes():
    """scrambler_epsilon: Status.OK where found below the local guarantee, Status.FALLBACK (was 1) where the
    local guarantee is returned; the registered bound passes the family's codes through."""
    from amplify_jax import bounds

    kw = dict(targets=20, n=[500, 100], sampling=[0.2, 0.0], dummies=[50, 50], method="hoeffding")
    inv = tr.scrambler_epsilon(1e-4, **kw)
    assert np.asarray(inv.status).dtype == np.int32
    assert list(np.asarray(inv.status)) == [Status.OK, Status.FALLBACK] and np.isinf(float(inv.epsilon[1]))
    reg = bounds.evaluate("traffic.scrambler", delta=1e-4, **kw)
    np.testing.assert_array_equal(reg.status, np.asarray(inv.status))
    np.testing.assert_array_equal(reg.epsilon, np.asarray(inv.epsilon))


def test_one_cap_for_fewest_dummies_whatever_the_front_door():
    """Issue 27 item 1: traffic.scrambler_calibrate_dummies and bounds.invert of traffic.scrambler over dummies stop
    at the same cap (traffic DUMMIES_CAP, 1000; they stopped at 1e5 and 1e3) and say so: a target no d up to it meets is
    INFEASIBLE at the cap from both, with a warning naming it.  Likewise one cap for n (N_CAP)."""
    from amplify_jax import bounds
    from amplify_jax.traffic import DUMMIES_CAP, N_CAP

    assert DUMMIES_CAP == 1000 and bounds.get("traffic.scrambler").param("dummies").search_range() == (0.0, 1000.0)
    assert bounds.get("traffic.scrambler").param("n").search_range() == (2.0, float(N_CAP))
    kw = dict(targets=20, n=10, sampling=0.2, method="hoeffding")
    with pytest.warns(UserWarning, match=r"no dummies up to 1000 \(the cap"):
        r = tr.scrambler_calibrate_dummies(0.1, 1e-6, **kw)
    assert int(r.status) == Status.INFEASIBLE and float(r.dummies) == DUMMIES_CAP == float(r.limit)
    with pytest.warns(UserWarning, match=r"no dummies up to 1000 \(the cap"):
        b = bounds.invert("traffic.scrambler", solve_for="dummies", target_epsilon=0.1, delta=1e-6, **kw)
    assert int(b.status) == Status.INFEASIBLE and float(b.dummies) == DUMMIES_CAP
    # a larger cap, asked for, is searched (and the message names it)
    with pytest.warns(UserWarning, match="no dummies up to 2000"):
        tr.scrambler_calibrate_dummies(0.1, 1e-6, **kw, max_dummies=2000)


def test_scrambler_compiles_nothing_for_new_values_in_its_buckets():
    """Issue 25: the scrambler's engine compiles one program per (window, chunk size, table) bucket: after one
    call, new n (same window bucket: n = 100 and 110 both take 128 bins), dummies, sampling, delta and a new grid
    size in the same chunk bucket (3 and 5 points: both padded to 8 by the registry) compile nothing, through
    the registry and the family's functions (it compiled a program per power of two of a window group's size,
    per table width r0 + rows, and small programs for every conversion to jax arrays)."""
    from _compiles import compilations

    from amplify_jax import bounds

    kw = dict(targets=10, method="exact")
    bounds.evaluate("traffic.scrambler", n=100, sampling=0.5, dummies=[10, 20, 30], delta=1e-6, **kw)
    tr.scrambler_delta([1.0, 1.5], n=100, sampling=0.5, dummies=10, **kw)  # 2 points: the chunk size of 8
    with compilations() as got:
        r = bounds.evaluate("traffic.scrambler", n=110, sampling=0.45, dummies=[5, 12, 20, 33, 40], delta=3e-7, **kw)
        d = tr.scrambler_delta([0.7, 0.9, 1.1, 1.3, 2.0], n=110, sampling=0.5, dummies=15, **kw)  # 5 points
    assert len(got) == 0, got
    assert np.all(np.asarray(r.status) == Status.OK) and np.all(np.asarray(d.delta) > 0)


def test_monte_carlo_compiles_nothing_for_new_values_in_its_buckets():
    """Issue 25: the Monte Carlo's draws fold the chunk number into the key inside its compiled search (it
    compiled a fold_in and small conversion programs per call) and its chunks come in fixed sizes: a second call
    at new eps, n (same windows), dummies, key and size (2 then 5 points: one chunk size of 8) compiles
    nothing."""
    from _compiles import compilations

    kw = dict(targets=10, sampling=0.5, method="monte_carlo", samples=2000)
    k0, k5 = jax.random.PRNGKey(0), jax.random.PRNGKey(5)
    tr.scrambler_delta([1.0, 1.1], n=100, dummies=10, key=k0, **kw)  # 2 points: the chunk size of 8
    with compilations() as got:
        r = tr.scrambler_delta([0.8, 0.9, 1.0, 1.1, 1.2], n=110, dummies=12, key=k5, **kw)  # 5 points
    assert len(got) == 0, got
    assert np.all(np.asarray(r.delta) >= np.asarray(r.estimate))
