"""amplify_jax.pld.Accountant as dp_accounting's PrivacyAccountant: the new pairs against independent
references (mpmath enumerations from the mechanisms' definitions, dp_accounting's optimistic estimates at a
finer discretization), degenerate events, relations, errors, and the import rule (issue 28, PLD side)."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from amplify_jax.accounting import dp_events as E
from amplify_jax.pld import Accountant

REL = E.NeighboringRelation


def test_import_amplify_jax_does_not_import_dp_accounting():
    code = ("import sys, amplify_jax, amplify_jax.pld; "
            "assert 'dp_accounting' not in sys.modules, 'dp_accounting imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_without_dp_accounting_on_its_own_events():
    """dp_accounting made unimportable: the class stands on amplify_jax.dp_events, same answers."""
    code = """
import sys
sys.modules['dp_accounting'] = None
from amplify_jax import dp_events as E
from amplify_jax.pld import Accountant
acc = Accountant(E.NeighboringRelation.REPLACE_ONE)
assert len(type(acc).__mro__) == 3 and isinstance(acc.ledger, E.NoOpDpEvent)
acc.compose(E.RandomizedResponseDpEvent(0.5, 4), 3)
assert acc.ledger == E.SelfComposedDpEvent(E.RandomizedResponseDpEvent(0.5, 4), 3)
assert 0 < acc.get_delta(1.0) < 1 and acc.get_epsilon(1.0) == 0.0
for ev in (E.UnsupportedDpEvent(), E.LaplaceDpEvent(1.0), E.ZCDpEvent(0.1)):
    assert not acc.supports(ev)
    try:
        acc.compose(ev)
    except E.UnsupportedEventError as err:
        assert 'caused by subevent' in str(err)
    else:
        raise AssertionError('no UnsupportedEventError')
assert acc.neighboring_relation is E.NeighboringRelation.REPLACE_ONE
"""
    subprocess.run([sys.executable, "-c", code], check=True)


# -- finite pairs against enumerations from the definitions ----------------------------------------------


def _rr_laws(p, k, rel):
    """Output laws of k-ary randomized response (true bucket w.p. 1 - p, else uniform) on bucket 0 and on
    the neighbour: bucket 1 (replace-one) or the special input, whose output is uniform (replace-special)."""
    p, k = mp.mpf(p), int(k)

    def law(x):
        return [(1 - p if j == x else 0) + p / k for j in range(k)]

    other = law(1) if rel == "REPLACE_ONE" else [mp.mpf(1) / k] * k
    return law(0), other


def _delta_enumerated(laws, eps):
    """delta(eps) = sum over joint outputs of (P - e^eps Q)_+, the worse direction, every output enumerated
    (mpmath, 40 digits)."""
    mp.mp.dps = 40
    out = mp.mpf(0)
    for pl, ql in ((laws[0], laws[1]), (laws[1], laws[0])):
        tot = mp.mpf(0)
        for outs in itertools.product(*[range(len(a)) for a in pl]):
            pp = mp.fprod(pl[i][o] for i, o in enumerate(outs))
            qq = mp.fprod(ql[i][o] for i, o in enumerate(outs))
            tot += max(mp.mpf(0), pp - mp.e ** mp.mpf(eps) * qq)
        out = max(out, tot)
    return float(out)


@pytest.mark.parametrize("rel", ["REPLACE_ONE", "REPLACE_SPECIAL"])
@pytest.mark.parametrize("p,k,t", [(0.3, 4, 3), (0.6, 3, 4), (0.1, 2, 5), (4 / (3 + math.e), 4, 1)])
def test_randomized_response_against_enumeration(rel, p, k, t):
    acc = Accountant(getattr(REL, rel)).compose(E.RandomizedResponseDpEvent(p, k), t)
    one = _rr_laws(p, k, rel)
    laws = ([one[0]] * t, [one[1]] * t)
    for eps in (0.0, 0.3, 1.0, 2.5):
        exact = _delta_enumerated(laws, eps)
        ours = acc.get_delta(eps)
        assert exact <= ours <= exact * (1 + 1e-8) + 1e-11, (eps, ours, exact)
    for target in (1e-1, 1e-3):
        e = acc.get_epsilon(target)
        assert _delta_enumerated(laws, e) <= target  # ours is an eps at which delta is met: >= the true eps
        if e > 0:
            assert _delta_enumerated(laws, e * (1 - 1e-6) - 1e-9) > target  # and the least one, to 1e-6


def _dlap_joint(a, shift, t, window):
    """Discrete Laplace P(x) = tanh(a/2) e^{-a|x - shift|} on [-window, window]^t, t independent releases (the
    rest, < 2 t e^{-a window}, dropped: delta from it is a lower bound, exact to that)."""
    x = np.arange(-window, window + 1)
    one = math.tanh(a / 2) * np.exp(-a * np.abs(x - shift))
    out = one
    for _ in range(t - 1):
        out = np.multiply.outer(out, one)
    return out.ravel()


@pytest.mark.parametrize("a,s,t", [(1.0, 1, 3), (0.7, 3, 2), (2.0, 2, 1)])
def test_discrete_laplace_against_enumeration(a, s, t):
    acc = Accountant().compose(E.DiscreteLaplaceDpEvent(a, s), t)
    w = 40
    p, q = _dlap_joint(a, 0, t, w), _dlap_joint(a, s, t, w)
    tail = 2 * t * math.exp(-a * (w - s))
    for eps in (0.0, 0.5, a * s * t * 0.7):
        exact = max(np.sum(np.maximum(p - math.exp(eps) * q, 0)), np.sum(np.maximum(q - math.exp(eps) * p, 0)))
        assert exact * (1 - 1e-12) <= acc.get_delta(eps) <= exact * (1 + 1e-8) + tail + 1e-11
    assert acc.get_epsilon(0.0) == pytest.approx(a * s * t, rel=1e-9) and acc.get_epsilon(0.0) >= a * s * t
    assert acc.get_delta(a * s * t) <= 1e-11 and acc.get_delta(a * s * t * (1 + 1e-11)) == 0.0  # the pure-DP cap


@pytest.mark.slow  # compiles a kernel of its own: 60-130 s on 2 shared cores
def test_pure_cap_and_mixed_grid_under_replace_special():
    """Randomized response (grid path: beside a Gaussian) under REPLACE_SPECIAL, against dp_accounting's
    optimistic estimate (a lower bound of the true delta) at discretization 1e-5."""
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as PLD
    from dp_accounting import privacy_accountant as pa

    rs = pa.NeighboringRelation.REPLACE_SPECIAL
    acc = Accountant(rs).compose(E.RandomizedResponseDpEvent(0.4, 5), 4).compose(
        E.PoissonSampledDpEvent(0.1, E.GaussianDpEvent(1.0)), 20)
    kw = dict(pessimistic_estimate=False, value_discretization_interval=1e-5)
    ref = PLD.from_randomized_response(0.4, 5, neighboring_relation=rs, **kw).self_compose(4).compose(
        PLD.from_gaussian_mechanism(1.0, sampling_prob=0.1, neighboring_relation=rs, **kw).self_compose(20))
    for eps in (0.5, 2.0):
        r = ref.get_delta_for_epsilon(eps)
        assert r <= acc.get_delta(eps) <= r * (1 + 1e-2) + 1e-12


@pytest.mark.slow  # compiles a kernel of its own: 60-130 s on 2 shared cores
def test_replace_one_gaussian_is_the_shift_two_pair():
    """REPLACE_ONE: a Gaussian at sigma is the shift-2 pair, i.e. add/remove at sigma / 2 (dp_accounting's
    convention); its delta is the closed form at mu = 2 / sigma."""
    ro = Accountant(REL.REPLACE_ONE).compose(E.GaussianDpEvent(4.0), 4)
    mp.mp.dps = 40
    mu, eps = mp.mpf(2.0 / 4.0 * 2.0), mp.mpf(0.5)  # 4 steps: mu = sqrt(4) * 2 / 4
    exact = float(mp.ncdf(-eps / mu + mu / 2) - mp.e ** eps * mp.ncdf(-eps / mu - mu / 2))
    assert exact <= ro.get_delta(0.5) <= exact * (1 + 1e-3)


# -- degenerate events ----------------------------------------------------------------------------------


FREE = [
    E.NoOpDpEvent(),
    E.PoissonSampledDpEvent(0.0, E.GaussianDpEvent(1.0)),
    E.PoissonSampledDpEvent(0.0, E.GaussianDpEvent(0.0)),
    E.PoissonSampledDpEvent(0.0, E.LaplaceDpEvent(0.0)),
    E.DiscreteLaplaceDpEvent(1.0, 0),
    E.MixtureOfGaussiansDpEvent(1.0, (0.0,), (1.0,)),
    E.TruncatedSubsampledGaussianDpEvent(100, 0.0, 10, 1.0),
    E.TruncatedSubsampledGaussianDpEvent(100, 0.1, 0, 1.0),
    E.SelfComposedDpEvent(E.GaussianDpEvent(1.0), 0),
]
FREE_REPLACE = [E.RandomizedResponseDpEvent(0.0, 1), E.RandomizedResponseDpEvent(1.0, 7),
                E.SampledWithoutReplacementDpEvent(100, 0, E.GaussianDpEvent(1.0))]
REVEALING = [
    E.GaussianDpEvent(0.0), E.LaplaceDpEvent(0.0), E.NonPrivateDpEvent(),
    E.PoissonSampledDpEvent(0.1, E.GaussianDpEvent(0.0)), E.DiscreteLaplaceDpEvent(0.0, 1),
    E.MixtureOfGaussiansDpEvent(0.0, (1.0, 2.0), (0.5, 0.5)),
    E.TruncatedSubsampledGaussianDpEvent(100, 0.1, 10, 0.0),
]


@pytest.mark.parametrize("event", FREE)
def test_events_that_do_nothing_cost_nothing(event):
    acc = Accountant().compose(event, 3)
    assert [acc.get_epsilon(d) for d in (0.0, 1e-12, 0.5, 1.0)] == [0.0] * 4
    assert [acc.get_delta(e) for e in (0.0, 1.0, math.inf)] == [0.0] * 3


@pytest.mark.parametrize("event", FREE_REPLACE)
def test_replace_events_that_do_nothing_cost_nothing(event):
    acc = Accountant(REL.REPLACE_ONE).compose(event)
    assert acc.get_epsilon(0.0) == 0.0 and acc.get_delta(0.0) == 0.0


@pytest.mark.parametrize("event", REVEALING)
def test_zero_noise_answers_inf(event):
    acc = Accountant().compose(event)
    assert acc.get_epsilon(1e-6) == math.inf and acc.get_delta(5.0) == 1.0
    assert acc.epsilon([1e-6, 0.1]).status.tolist() != [0, 0]  # not reported ok


# -- errors ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("make, name", [
    (lambda: Accountant().compose(E.GaussianDpEvent(1.0), 0), "count"),
    (lambda: Accountant().compose(E.GaussianDpEvent(-1.0)), "sigma"),
    (lambda: Accountant().compose(E.GaussianDpEvent(float("nan"))), "sigma"),
    (lambda: Accountant().compose(E.PoissonSampledDpEvent(1.5, E.GaussianDpEvent(1.0))), "sampling_probability"),
    (lambda: Accountant(REL.REPLACE_ONE).compose(E.RandomizedResponseDpEvent(1.5, 3)), "noise_parameter"),
    (lambda: Accountant(REL.REPLACE_ONE).compose(E.RandomizedResponseDpEvent(0.5, 0)), "num_buckets"),
    (lambda: Accountant().compose(E.DiscreteLaplaceDpEvent(1.0, 1.5)), "sensitivity"),
    (lambda: Accountant().compose(E.DiscreteLaplaceDpEvent(-1.0, 1)), "noise_parameter"),
    (lambda: Accountant().compose(E.MixtureOfGaussiansDpEvent(1.0, (-1.0, 1.0), (0.5, 0.5))), "sensitivities"),
    (lambda: Accountant().compose(E.MixtureOfGaussiansDpEvent(1.0, (0.0, 1.0), (0.5, 0.6))), "sampling_probs"),
    (lambda: Accountant().compose(E.MixtureOfGaussiansDpEvent(-1.0, (0.0, 1.0), (0.5, 0.5))), "standard_deviation"),
    (lambda: Accountant(value_discretization_interval=0.0), "value_discretization_interval"),
    (lambda: Accountant(neighboring_relation="replace"), "neighboring_relation"),
    (lambda: Accountant().get_epsilon(1.5), "delta"),
    (lambda: Accountant().get_delta(-1.0), "epsilon"),
])
def test_bad_input_names_the_parameter(make, name):
    with pytest.raises(ValueError, match=name):
        make()


def test_refused_event_records_nothing_and_relations_gate_events():
    acc = Accountant().compose(E.GaussianDpEvent(2.0))
    with pytest.raises(ValueError, match="sigma"):
        acc.compose(E.ComposedDpEvent([E.GaussianDpEvent(3.0), E.GaussianDpEvent(-1.0)]))
    assert acc.ledger == E.GaussianDpEvent(2.0) and len(acc._items) == 1
    rr, lap = E.RandomizedResponseDpEvent(0.1, 3), E.LaplaceDpEvent(1.0)
    assert [Accountant(r).supports(rr) for r in REL] == [False, True, True]
    assert [Accountant(r).supports(lap) for r in REL] == [True, False, True]
    assert [Accountant(r).supports(E.SampledWithoutReplacementDpEvent(10, 2, E.GaussianDpEvent(1.0)))
            for r in REL] == [True, True, False]  # ADD_OR_REMOVE_ONE: the replace-one switch kept from before


@pytest.mark.slow  # compiles a kernel of its own: 60-130 s on 2 shared cores
def test_value_discretization_interval_is_sound_and_finer():
    """A requested step: the grid is refined to reach it (up to 2^20 points), never below the closed form."""
    ev = E.SelfComposedDpEvent(E.GaussianDpEvent(8.0), 64)  # one Gaussian at mu = 1
    exact = float(mp.ncdf(-1.0 + 0.5) - mp.e * mp.ncdf(-1.0 - 0.5))
    coarse = Accountant(grid_size=1 << 14).compose(ev).get_delta(1.0)
    fine = Accountant(value_discretization_interval=1e-4).compose(ev).get_delta(1.0)
    assert exact <= fine <= coarse and fine <= exact * (1 + 1e-4)


@pytest.mark.slow  # compiles the truncated pair's kernel (~50 s on 2 shared cores)
def test_truncated_subsampled_gaussian_between_its_two_pairs():
    """No truncation possible (B >= n): the Poisson-subsampled Gaussian itself; otherwise between the Poisson
    pair at sigma (never truncated) and at sigma / 2 (always displaced), the pair of _events' coupling."""
    def eps(ev, t=20):
        return Accountant().compose(ev, t).get_epsilon(1e-5)

    poisson = eps(E.PoissonSampledDpEvent(0.1, E.GaussianDpEvent(1.0)))
    assert eps(E.TruncatedSubsampledGaussianDpEvent(100, 0.1, 100, 1.0)) == poisson
    cut = eps(E.TruncatedSubsampledGaussianDpEvent(1000, 0.1, 110, 1.0))
    assert poisson < cut < eps(E.PoissonSampledDpEvent(0.1, E.GaussianDpEvent(0.5)))


def test_randomized_response_count_where_dp_accounting_drops_it():
    """dp_accounting 0.6.0's PLDAccountant composes a RandomizedResponseDpEvent once whatever the count
    (its _maybe_compose has no self_compose there): 10 releases of 4-bucket randomized response at p = 0.5
    answer one release's delta.  Ours composes all 10: the multinomial sum over the outputs (x, x', other)."""
    dpa = pytest.importorskip("dp_accounting")
    from math import factorial

    p_, q_, t = (0.625, 0.125, 0.25), (0.125, 0.625, 0.25), 10

    def exact(steps):
        tot = 0.0
        for a in range(steps + 1):
            for b in range(steps + 1 - a):
                c = steps - a - b
                m = factorial(steps) // (factorial(a) * factorial(b) * factorial(c))
                tot += max(m * (p_[0] ** a * p_[1] ** b * p_[2] ** c - math.e * q_[0] ** a * q_[1] ** b * q_[2] ** c), 0)
        return tot

    ours = Accountant(REL.REPLACE_ONE).compose(E.RandomizedResponseDpEvent(0.5, 4), t).get_delta(1.0)
    assert exact(t) <= ours <= exact(t) * (1 + 1e-9)
    ref = dpa.pld.PLDAccountant(dpa.NeighboringRelation.REPLACE_ONE)
    ref.compose(dpa.RandomizedResponseDpEvent(0.5, 4), t)
    assert ref.get_delta(1.0) == pytest.approx(exact(1), rel=1e-3)  # theirs: one release's (0.285 < 0.940)


def test_readme_pld_block_runs():
    """README's "Use it from dp_accounting / Opacus" block for the PLD accountant runs and says what it
    prints (skipped while the section has no such block)."""
    import re
    from pathlib import Path

    dpa = pytest.importorskip("dp_accounting")
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = text.split("## Use it from dp_accounting / Opacus", 1)[1].split("\n## ", 1)[0]
    blocks = [b for b in re.findall(r"```python\n(.*?)```", section, re.S) if "pld.Accountant" in b]
    if not blocks:
        pytest.skip("README's section has no pld.Accountant block yet")
    ns = {}
    exec(compile(blocks[0], "README.md", "exec"), ns)
    ref = dpa.pld.PLDAccountant()
    ref.compose(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0)), 1000))
    ref.compose(dpa.LaplaceDpEvent(5.0))
    assert abs(ns["pld_eps"] / ref.get_epsilon(1e-6) - 1) < 1e-3
    assert ns["rr_delta"] == pytest.approx(0.9398144, rel=1e-6)
    assert 1.9 < ns["pld_sigma"] < 2.1


def test_readme_jax_privacy_block_runs():
    """README's jax-privacy block: jax-privacy's DP-SGD training accountant, given a config that creates our
    PLD accountant, answers within 1e-3 of the same accountant with jax-privacy's own PLD config (dp_accounting
    at its 1e-4 discretisation), and never below dp_accounting at a 10x finer one (skipped without jax-privacy)."""
    import re
    from pathlib import Path

    pytest.importorskip("jax_privacy")
    from jax_privacy.accounting import accountants, analysis

    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = text.split("## Use it from dp_accounting / Opacus / jax-privacy", 1)[1].split("\n## ", 1)[0]
    block = next(b for b in re.findall(r"```python\n(.*?)```", section, re.S) if "AmplifyPldConfig" in b)
    ns = {"__name__": "readme"}
    exec(compile(block, "README.md", "exec"), ns)
    acct = analysis.DpsgdTrainingAccountant
    ref = acct(dp_accountant_config=accountants.PldAccountantConfig()).compute_epsilon(1000, ns["params"])
    fine = acct(dp_accountant_config=accountants.PldAccountantConfig(value_discretization_interval=1e-5))
    assert abs(ns["jp_eps"] / ref - 1) < 1e-3
    assert ns["jp_eps"] >= fine.compute_epsilon(1000, ns["params"]) * (1 - 1e-6)


@pytest.mark.slow  # compiles the replace pair's kernel for the accountant (~40 s on 2 shared cores)
def test_replace_one_poisson_gaussian_is_the_replace_pair_at_half_sigma():
    """REPLACE_ONE, Poisson-sampled Gaussian: the symmetric replace pair (WorGaussianLoss) at sigma / 2, the
    front door's "wor-gaussian" at the same point, and above dp_accounting's shared-centre pair."""
    dpa = pytest.importorskip("dp_accounting")
    from amplify_jax.accounting import pld

    ev = E.PoissonSampledDpEvent(0.05, E.GaussianDpEvent(2.0))
    ours = Accountant(REL.REPLACE_ONE).compose(ev, 100).get_epsilon(1e-5)
    door = float(pld.epsilon("wor-gaussian", sigma=1.0, q=0.05, steps=100, delta=1e-5).epsilon)
    assert ours == pytest.approx(door, rel=1e-6)  # the same pair; the two paths round their grids apart
    ref = dpa.pld.PLDAccountant(dpa.NeighboringRelation.REPLACE_ONE)
    ref.compose(dpa.PoissonSampledDpEvent(0.05, dpa.GaussianDpEvent(2.0)), 100)
    assert ours >= ref.get_epsilon(1e-5)


def test_shapes_array_queries_of_one_composition():
    """``epsilon`` / ``delta`` take an array of query values (one compiled call, the same values as one at a
    time up to the composition's window, chosen for the call's smallest delta); ``get_epsilon`` answers a
    float for a scalar delta and an array of delta's shape for an array."""
    acc = Accountant().compose(E.PoissonSampledDpEvent(0.01, E.GaussianDpEvent(1.0)), 300)
    d = np.array([1e-5, 1e-6, 1e-7])
    both = acc.epsilon(d).epsilon
    assert both.shape == (3,) and np.all(np.diff(both) > 0) and acc.shape == ()
    # the same grid up to the window, chosen for the call's smallest delta: equal to ~1e-6 (measured 5e-7)
    assert both[1] == pytest.approx(acc.get_epsilon(1e-6), rel=1e-5)
    assert isinstance(acc.get_epsilon(1e-6), float)
    assert np.array_equal(acc.get_epsilon(d.reshape(3, 1)), both.reshape(3, 1))


# -- grids of events (issue 28 item 4): array parameters, one compiled program per structure --------------

#: The grid tests' grid size: one fixed grid (no automatic passes), small, so the kernels compile fast.
GRID_N = 1 << 10
#: The grid kernel is the accountant's kernel vmapped: XLA rounds the batched sums apart, so a grid point
#: equals the one-composition accountant's answer to ~1e-9 (measured up to 2.2e-8 at delta 1e-7 on 2^10
#: points), not bit for bit.
GRID_RTOL = 1e-6


def _one(event, count=1, rel=REL.ADD_OR_REMOVE_ONE, n=GRID_N):
    return Accountant(rel, grid_size=n).compose(event, count)


def test_grid_of_sigmas_rates_counts_equals_one_accountant_per_point():
    """A Poisson-sampled Gaussian over sigma (3,) and q (2, 1): the grid (2, 3); each point, and each
    point's two deltas (broadcast as (2, 1, 1)), is the one-composition accountant's answer there; a second
    grid of other values of the same shape runs the same compiled program (no new compilation).  Points of
    another structure (sigma 0: non-private, inf; q 0: nothing, 0) answer as the one accountant there,
    beside kernel points; a grid of counts (``compose``'s count an array) too.  One test: the grid kernel
    and the one-composition kernel compile once for all of it (~2 x 10 s on 2 quiet cores)."""
    from amplify_jax.accounting.pld import _accountant as A

    sig, q = np.array([0.8, 1.0, 2.0]), np.array([[0.01], [0.05]])
    acc = _one(E.PoissonSampledDpEvent(q, E.GaussianDpEvent(sig)), 300)
    assert acc.shape == (2, 3)
    eps = acc.get_epsilon(1e-5)
    d = np.array([1e-5, 1e-7])
    both = acc.epsilon(d[:, None, None])
    assert eps.shape == (2, 3) and both.epsilon.shape == both.status.shape == (2, 2, 3)
    for i, j in np.ndindex(2, 3):
        one = _one(E.PoissonSampledDpEvent(q[i, 0], E.GaussianDpEvent(sig[j])), 300)
        assert eps[i, j] == pytest.approx(one.get_epsilon(1e-5), rel=GRID_RTOL)
        ref = one.epsilon(d)
        assert both.epsilon[:, i, j] == pytest.approx(ref.epsilon, rel=GRID_RTOL)
        assert both.epsilon_lower[:, i, j] == pytest.approx(ref.epsilon_lower, rel=GRID_RTOL)
    compiled = A._eps_kernel_grid.jitted._cache_size()
    other = _one(E.PoissonSampledDpEvent(q, E.GaussianDpEvent(sig * 1.1)), 300).get_epsilon(1e-5)
    assert np.all(other < eps)  # more noise, less eps

    mixed = _one(E.PoissonSampledDpEvent(np.array([0.0, 0.02]), E.GaussianDpEvent(np.array([[0.0], [1.0]]))), 50)
    e = mixed.get_epsilon(1e-5)
    assert e[0, 0] == 0.0 and e[0, 1] == math.inf and e[1, 0] == 0.0
    at_one = _one(E.PoissonSampledDpEvent(0.02, E.GaussianDpEvent(1.0)), 50).get_epsilon(1e-5)
    assert e[1, 1] == pytest.approx(at_one, rel=GRID_RTOL)
    st = mixed.epsilon(1e-5).status
    assert st[0, 1] != 0 and st[0, 0] == st[1, 0] == st[1, 1] == 0  # inf is not reported ok

    counts = np.array([10, 50])
    grid = _one(E.PoissonSampledDpEvent(0.02, E.GaussianDpEvent(1.0)), counts)
    assert grid.shape == (2,) and grid.ledger.count is counts
    e = grid.get_epsilon(1e-5)
    assert e[1] == pytest.approx(at_one, rel=GRID_RTOL) and e[0] < e[1]
    assert A._eps_kernel_grid.jitted._cache_size() == compiled  # one program for every grid above


def test_grid_composed_with_one_event_broadcasts():
    """A grid composed with a scalar event: every point holds both, merged where equal as the one accountant
    merges them; the accountant's grid is the broadcast of the calls' shapes ((2,), then (3, 1): (3, 2)).
    Finite pairs (exact on the host, no compilation)."""
    rr = E.RandomizedResponseDpEvent
    acc = Accountant(REL.REPLACE_ONE).compose(rr(np.array([0.5, 0.3]), 4)).compose(rr(0.5, 4))
    assert acc.shape == (2,)
    got = acc.get_delta(1.0)
    assert got[0] == Accountant(REL.REPLACE_ONE).compose(rr(0.5, 4), 2).get_delta(1.0)  # merged: count 2
    assert got[1] == Accountant(REL.REPLACE_ONE).compose(rr(0.3, 4)).compose(rr(0.5, 4)).get_delta(1.0)
    acc.compose(E.SelfComposedDpEvent(rr(0.8, 3), np.array([[1], [2], [3]])))
    assert acc.shape == (3, 2) and len(acc.ledger.events) == 3  # grids are never merged in the ledger
    got = acc.get_delta(1.0)
    ref = Accountant(REL.REPLACE_ONE).compose(rr(0.3, 4)).compose(rr(0.5, 4)).compose(rr(0.8, 3), 3)
    assert got[2, 1] == ref.get_delta(1.0) and np.all(np.diff(got, axis=0) > 0)


def test_grid_of_finite_pairs_is_exact_per_point():
    """k-ary randomized response over a grid of noise parameters: each point composed exactly on the host,
    as the one-composition accountant does (equal to the last bit)."""
    p = np.array([0.3, 0.5, 0.9])
    acc = Accountant(REL.REPLACE_ONE).compose(E.RandomizedResponseDpEvent(p, 4), 5)
    got = acc.get_delta(np.array([0.5, 1.0])[:, None])
    assert got.shape == (2, 3)
    for j, pj in enumerate(p):
        ref = Accountant(REL.REPLACE_ONE).compose(E.RandomizedResponseDpEvent(pj, 4), 5)
        assert got[:, j].tolist() == ref.delta([0.5, 1.0]).delta.tolist()
    paired = acc.get_delta(np.array([0.5, 1.0, 2.0]))  # the grid's own shape: one query per point
    assert paired.tolist() == [Accountant(REL.REPLACE_ONE).compose(E.RandomizedResponseDpEvent(pj, 4), 5)
                               .get_delta(x) for pj, x in zip(p, (0.5, 1.0, 2.0))]


@settings(max_examples=25, deadline=None)
@given(p=hnp.arrays(np.float64, hnp.array_shapes(max_dims=2, max_side=3), elements=st.floats(0.05, 0.95)),
       counts=st.lists(st.integers(1, 4), min_size=1, max_size=3),
       eps=st.lists(st.floats(0.0, 3.0), min_size=1, max_size=3))
def test_grid_broadcasting_property(p, counts, eps):
    """Any grid of noise parameters (up to 2-D) composed with a grid of counts along a new leading axis, and
    queries along a third: the answer has NumPy's broadcast shape and each entry is the one-composition
    accountant's at that point and query (finite pairs: exact on the host, equal to the last bit)."""
    rr = E.RandomizedResponseDpEvent
    c = np.array(counts).reshape((-1,) + (1,) * p.ndim)
    e = np.array(eps).reshape((-1,) + (1,) * c.ndim)
    acc = Accountant(REL.REPLACE_SPECIAL).compose(rr(p, 3)).compose(rr(0.5, 2), c)
    got = acc.get_delta(e)
    assert acc.shape == c.shape[:1] + p.shape and got.shape == e.shape[:1] + acc.shape
    for idx in np.ndindex(*got.shape):
        k, t, pi = idx[0], idx[1], idx[2:]
        one = Accountant(REL.REPLACE_SPECIAL).compose(rr(float(p[pi]), 3)).compose(rr(0.5, 2), int(counts[t]))
        assert got[idx] == one.delta([float(e.ravel()[k])]).delta[0]


@pytest.mark.parametrize("event, name", [
    (E.RandomizedResponseDpEvent(0.5, np.array([3, 4])), "num_buckets"),
    (E.DiscreteLaplaceDpEvent(1.0, np.array([1, 2])), "sensitivity"),
    (E.SampledWithoutReplacementDpEvent(100, np.array([5, 10]), E.GaussianDpEvent(1.0)), "sample_size"),
    (E.PoissonSampledDpEvent(np.array([0.1, 0.2]), E.GaussianDpEvent(np.array([1.0, 2.0, 3.0]))), "broadcast"),
])
def test_grids_that_cannot_be_batched_are_refused(event, name):
    """Arrays where a grid is not taken (a pair's support size or a data set size: one compiled program per
    value) or that do not broadcast: UnsupportedEventError (also a ValueError) naming it; nothing recorded."""
    acc = Accountant(REL.REPLACE_ONE if "Without" in type(event).__name__ or "Randomized" in type(event).__name__
                     else REL.ADD_OR_REMOVE_ONE)
    assert not acc.supports(event)
    with pytest.raises(ValueError, match=name):
        acc.compose(event)
    assert acc.shape == () and type(acc.ledger).__name__ == "NoOpDpEvent"
    two = Accountant().compose(E.GaussianDpEvent(np.array([1.0, 2.0])))
    with pytest.raises(ValueError, match="broadcast"):
        two.compose(E.GaussianDpEvent(np.array([1.0, 2.0, 3.0])))
    with pytest.raises(ValueError, match="count"):
        Accountant().compose(E.GaussianDpEvent(1.0), np.array([1, 0]))
    with pytest.raises(ValueError, match="sigma"):  # every point's parameters checked, naming the parameter
        Accountant().compose(E.GaussianDpEvent(np.array([1.0, -1.0])))


@pytest.mark.slow  # the automatic grid's programs (2^14 and 2^17 points) for both kernels: ~3 min on 2 cores
def test_grid_on_the_automatic_grid_equals_one_accountant_per_point():
    """The default accountant (automatic grid): each point takes its own finer pass (2^17 points) where its
    own check asks for it, as the one-composition accountant does: at delta 1e-10, 2 x 10^5 steps ask for it
    and 100 steps do not (checked when written: the grid kernel then held 2 programs, 2^14 and 2^17)."""
    ev = E.PoissonSampledDpEvent(0.02, E.GaussianDpEvent(np.array([0.9, 2.0])))
    acc = Accountant().compose(ev, np.array([[100], [200_000]]))
    got = acc.get_epsilon(1e-10)
    for (i, t), (j, s) in itertools.product(enumerate((100, 200_000)), enumerate((0.9, 2.0))):
        ref = Accountant().compose(E.PoissonSampledDpEvent(0.02, E.GaussianDpEvent(s)), t).get_epsilon(1e-10)
        assert got[i, j] == pytest.approx(ref, rel=GRID_RTOL)


@pytest.mark.slow  # the delta grid kernel's programs at 2^10, 2^14 and the interval's grid: 4 min at load 12 on 2 cores
def test_grid_delta_queries_and_interval_equal_one_accountant_per_point():
    """delta queries on a grid of Gaussians (the delta kernel vmapped), with ``value_discretization_interval``
    (each point's own finer grid from its own step), against the one-composition accountant per point."""
    sig = np.array([4.0, 8.0])
    for make in (lambda: Accountant(grid_size=GRID_N), lambda: Accountant(value_discretization_interval=2e-4)):
        acc = make().compose(E.GaussianDpEvent(sig), np.array([[16], [64]]))
        got = acc.get_delta(np.array([0.5, 1.0])[:, None, None])
        assert got.shape == (2, 2, 2)
        for t, (j, s) in itertools.product((0, 1), enumerate(sig)):
            one = make().compose(E.GaussianDpEvent(s), (16, 64)[t])
            assert got[:, t, j] == pytest.approx(one.delta([0.5, 1.0]).delta, rel=GRID_RTOL)
