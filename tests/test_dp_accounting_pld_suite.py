"""dp_accounting's own PLD accountant tests, run against amplify_jax.pld.Accountant (issue 28, PLD side).

The test file ships in the dp-accounting wheel (``dp_accounting.pld.pld_privacy_accountant_test``); it is
imported from the installed package, never copied.  Each of its tests runs with the module attribute it
constructs accountants from (``pld_privacy_accountant.PLDAccountant``) swapped for ours.  Every test must pass
except those of EXPECTED_DIFFERENCES, each with its reason; the reasons are checked below (none is an
under-report).  Tests whose first run compiles the Laplace kernels (about a minute on 2 cores) are marked slow;
the count over the whole file (theirs and ours, ~5 min) is ``test_pass_rate_at_least_95_percent`` (slow).
"""

from __future__ import annotations

import math
import unittest
from unittest import mock

import numpy as np
import pytest

pytest.importorskip("absl.testing.parameterized", reason="dp_accounting's tests need absl-py")
suite = pytest.importorskip("dp_accounting.pld.pld_privacy_accountant_test",
                            reason="dp-accounting (the test extra) ships the test file")
from dp_accounting import dp_event  # noqa: E402
from dp_accounting import privacy_accountant  # noqa: E402
from dp_accounting.pld import pld_privacy_accountant as theirs  # noqa: E402
from dp_accounting.pld import privacy_loss_distribution as PLD  # noqa: E402

from amplify_jax.pld import Accountant  # noqa: E402

NAMES = sorted(unittest.TestLoader().getTestCaseNames(suite.PldPrivacyAccountantTest))

#: tests of dp_accounting's file that fail with our accountant, and why (each reason checked below)
EXPECTED_DIFFERENCES = {
    "test_mixture_of_gaussians_basic":
        "ours 2.2e-5 above (conservative): eps 17.193137 at delta 1e-6 where the test wants dp_accounting's own "
        "17.193115 to 1e-6 (and delta 1.00001e-6 at 17.193115, wanted to 1e-12); ours is checked above "
        "dp_accounting's pessimistic value, and one event against numerical integration",
    "test_truncated_subsampled_gaussian_basic":
        "ours 21.62 above dp_accounting's 17.904330 (conservative): where the batch is cut, ours takes the "
        "record's rate as q, dp_accounting the rate conditioned on truncation (0.31 against 0.5 here); the "
        "test wants dp_accounting's own value to 1e-6",
}
#: tests whose first run with ours compiles the Laplace kernels (30-80 s each on 2 shared cores)
SLOW = {"test_laplace_basic", "test_poisson_subsampled_laplace", "test_mixture_of_gaussians_basic",
        "test_truncated_subsampled_gaussian_basic"}


def _run(name, cls):
    """Run one of dp_accounting's tests with ``cls`` constructed; (passed, constructed, message)."""
    made = []

    def factory(*args, **kwargs):
        made.append(1)
        return cls(*args, **kwargs)

    result = unittest.TestResult()
    with mock.patch.object(theirs, "PLDAccountant", factory):
        suite.PldPrivacyAccountantTest(name).run(result)  # not a global here: pytest would collect it
    msgs = [tb.strip().splitlines()[-1] for _, tb in result.failures + result.errors]
    return result.wasSuccessful(), bool(made), "; ".join(msgs)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in NAMES])
def test_dp_accounting_pld_suite(name):
    passed, made, msg = _run(name, Accountant)
    if name in EXPECTED_DIFFERENCES:
        assert not passed, f"{name} now passes: remove it from EXPECTED_DIFFERENCES"
    else:
        assert passed, msg
        assert made or name == "test_make_test_accountants", "the test did not construct our accountant"


def test_expected_differences_are_few():
    assert len(EXPECTED_DIFFERENCES) <= 0.05 * len(NAMES)
    assert set(EXPECTED_DIFFERENCES) <= set(NAMES)


@pytest.mark.slow
def test_pass_rate_at_least_95_percent():
    """68 tests in dp-accounting 0.6.0, all passing with its own accountant; ours must pass 95% of those."""
    theirs_pass = [n for n in NAMES if _run(n, theirs.PLDAccountant)[0]]
    ours = {n: _run(n, Accountant) for n in theirs_pass}
    passed = [n for n, (ok, _, _) in ours.items() if ok]
    failed = sorted(set(theirs_pass) - set(passed))
    assert failed == sorted(EXPECTED_DIFFERENCES)
    assert len(passed) >= 0.95 * len(theirs_pass), (len(passed), len(theirs_pass))
    print(f"dp_accounting pld suite: theirs {len(theirs_pass)}/{len(NAMES)}, ours {len(passed)}/{len(theirs_pass)}")


# -- the expected differences, checked: none is an under-report ------------------------------------------

TRUNCATED = [dp_event.TruncatedSubsampledGaussianDpEvent(dataset_size=4, sampling_probability=0.5,
                                                         truncated_batch_size=2, noise_multiplier=1.0),
             dp_event.TruncatedSubsampledGaussianDpEvent(dataset_size=3, sampling_probability=0.5,
                                                         truncated_batch_size=2, noise_multiplier=1.0)]


@pytest.mark.slow  # compiles the truncated pair's kernel (~50 s on 2 shared cores)
def test_difference_truncated_subsampled_gaussian_is_above_dp_accountings():
    ours = Accountant().compose(TRUNCATED[0], 3).compose(TRUNCATED[1], 2)
    ref = theirs.PLDAccountant()
    ref.compose(TRUNCATED[0], 3).compose(TRUNCATED[1], 2)
    assert ours.get_epsilon(1e-6) >= ref.get_epsilon(1e-6) and ours.get_delta(17.904330) >= ref.get_delta(17.904330)


MOG = [dp_event.MixtureOfGaussiansDpEvent(1.0, [0.0, 1.0, 2.0], [0.2, 0.6, 0.2]),
       dp_event.MixtureOfGaussiansDpEvent(2.0, [0.0, 2.0, 3.0], [0.33, 0.34, 0.33])]


@pytest.mark.slow  # dp_accounting's side alone takes ~100 s, ours compiles the mixture kernel
def test_difference_mixture_of_gaussians_is_above_dp_accountings():
    ours = Accountant().compose(MOG[0], 3).compose(MOG[1], 2)
    ref = theirs.PLDAccountant()
    ref.compose(MOG[0], 3).compose(MOG[1], 2)
    e, r = ours.get_epsilon(1e-6), ref.get_epsilon(1e-6)
    assert r <= e <= r * (1 + 1e-5)
    d, rd = ours.get_delta(17.193115), ref.get_delta(17.193115)
    assert rd <= d <= rd * (1 + 1e-4)


@pytest.mark.slow  # compiles the mixture kernel (~40 s on 2 shared cores)
def test_mixture_of_gaussians_one_event_against_integration():
    """One event's delta(eps) = max of the two directions' integral of (P - e^eps Q)_+, by scipy's quad."""
    from scipy import integrate, stats

    c, w = np.array([0.0, 1.0, 2.0]), np.array([0.2, 0.6, 0.2])

    def mix(x):
        return float(np.sum(w * stats.norm.pdf(x, c, 1.0)))

    def hockey(p, q, eps):
        f = lambda x: max(p(x) - math.exp(eps) * q(x), 0.0)  # noqa: E731
        return integrate.quad(f, -40, 45, limit=500, points=[0, 1, 2], epsabs=1e-14)[0]

    acc = Accountant().compose(MOG[0])
    for eps in (0.5, 2.0, 6.0):
        exact = max(hockey(mix, stats.norm.pdf, eps), hockey(stats.norm.pdf, mix, eps))
        assert exact * (1 - 1e-8) <= acc.get_delta(eps) <= exact * (1 + 1e-3)
    # a mixture of sensitivities (0, 1) at (0.9, 0.1) is the Poisson-subsampled Gaussian: the same eps from
    # the mixture pair and from the subsampled Gaussian's (two implementations)
    a = Accountant().compose(dp_event.MixtureOfGaussiansDpEvent(1.0, [0.0, 1.0], [0.9, 0.1]), 50).get_epsilon(1e-5)
    b = Accountant().compose(dp_event.PoissonSampledDpEvent(0.1, dp_event.GaussianDpEvent(1.0)), 50).get_epsilon(1e-5)
    assert a == pytest.approx(b, rel=1e-6)


# -- the values of the tests that pass, against independent lower references ----------------------------


def _gaussian_delta(mu, eps):
    """The Gaussian mechanism's exact delta(eps) at shift/noise mu (Balle and Wang 2018, Thm 8), in mpmath."""
    import mpmath as mp

    mp.mp.dps = 40
    mu, eps = mp.mpf(mu), mp.mpf(eps)
    return float(mp.ncdf(-eps / mu + mu / 2) - mp.e ** eps * mp.ncdf(-eps / mu - mu / 2))


def test_gaussian_basic_never_below_the_closed_form():
    """The suite's test_gaussian_basic: 3 Gaussians at sigma sqrt(3) are one at mu = 1 (closed form)."""
    acc = Accountant().compose(dp_event.GaussianDpEvent(math.sqrt(3)), 3)
    exact = _gaussian_delta(1.0, 1.0)
    assert exact == pytest.approx(0.126936, abs=1e-6)
    assert exact <= acc.get_delta(1.0) <= exact * (1 + 1e-3)
    assert 1.0 <= acc.get_epsilon(exact) <= 1.0 + 1e-3


def _optimistic(pld_fn, composed, eps):
    """dp_accounting's optimistic estimate (a lower bound of the true delta) at discretization 1e-5."""
    return composed(pld_fn(pessimistic_estimate=False, value_discretization_interval=1e-5)).get_delta_for_epsilon(eps)


def test_poisson_subsampled_gaussian_never_below_optimistic_reference():
    acc = Accountant().compose(dp_event.PoissonSampledDpEvent(0.2, dp_event.GaussianDpEvent(0.5)), 3)
    ref = _optimistic(lambda **k: PLD.from_gaussian_mechanism(0.5, sampling_prob=0.2, **k),
                      lambda p: p.self_compose(3), 1.0)
    ours = acc.get_delta(1.0)
    assert ref <= ours <= ref * (1 + 1e-2)
    assert ours == pytest.approx(0.15594, abs=1e-3)


@pytest.mark.slow
def test_laplace_values_never_below_references():
    """The suite's Laplace tests: eps is the pure-DP sum (4 and 3 log(1 + 0.2 (e^2 - 1)), the largest loss:
    exact at delta 0 and an upper bound at every delta), and delta against dp_accounting's optimistic one."""
    acc = Accountant().compose(dp_event.LaplaceDpEvent(1.0), 3).compose(dp_event.LaplaceDpEvent(2.0), 2)
    assert acc.get_epsilon(0.0) >= 4.0 and acc.get_epsilon(0.0) == pytest.approx(4.0, abs=1e-9)
    ref = _optimistic(lambda **k: PLD.from_laplace_mechanism(1.0, **k).self_compose(3).compose(
        PLD.from_laplace_mechanism(2.0, **k).self_compose(2)), lambda p: p, 2.0)
    assert ref <= acc.get_delta(2.0) <= ref * (1 + 1e-2)
    sub = Accountant().compose(dp_event.PoissonSampledDpEvent(0.2, dp_event.LaplaceDpEvent(0.5)), 3)
    cap = 3 * math.log1p(0.2 * math.expm1(2.0))
    assert cap <= sub.get_epsilon(0.0) <= cap * (1 + 1e-9)
    ref = _optimistic(lambda **k: PLD.from_laplace_mechanism(0.5, sampling_prob=0.2, **k),
                      lambda p: p.self_compose(3), 1.0)
    assert ref <= sub.get_delta(1.0) <= ref * (1 + 1e-2)


def test_calibrate_dp_mechanism_with_our_accountant():
    """dp_accounting's calibration drives our accountant (it reads .ledger, composes, asks get_epsilon): the
    noise found keeps eps at or below the target, within 1% of the noise dp_accounting's own finds."""
    from dp_accounting import mechanism_calibration as mc

    def make_event(sigma):
        return dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(0.04, dp_event.GaussianDpEvent(sigma)),
                                            500)

    bracket = mc.ExplicitBracketInterval(0.5, 5.0)
    sigma = mc.calibrate_dp_mechanism(Accountant, make_event, 2.0, 1e-5, bracket_interval=bracket, tol=1e-3)
    assert Accountant().compose(make_event(sigma)).get_epsilon(1e-5) <= 2.0
    ref = mc.calibrate_dp_mechanism(theirs.PLDAccountant, make_event, 2.0, 1e-5, bracket_interval=bracket, tol=1e-3)
    assert abs(sigma / ref - 1) < 0.01
