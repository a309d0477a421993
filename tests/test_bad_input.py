"""Bad input everywhere (issue 15, item 3): refused at the Python boundary with one ValueError line naming the
parameter (command line: exit status 2, one line on stderr), never a traceback, a NaN or a hang.

Input classes: negative, zero, NaN, +-inf, 1e300, 1e-300, fractional where an integer is expected, empty
arrays, shapes that do not broadcast, strings, orders <= 1, delta >= 1 or <= 0, empty / disconnected /
self-loop graphs, a graph file that does not parse, sweep specs with unknown keys.  They are crossed with every
parameter of every registered bound (evaluate and invert), the public functions of the accounting layer and
the paper subpackages, and every command of the command line.

Cheap by design: bad input is refused before any kernel runs, and the registry tests prove it by replacing
every kernel with one that fails the test if it is called (``no_kernels``).  The few valid-but-extreme points
(1e-300, the domain's ends) run at the bounds' example shapes.  Each test runs under a SIGALRM guard (a hang
fails it).  The whole table, with its counts: ``python benchmarks/bad_input_table.py``.
"""

from __future__ import annotations

import dataclasses
import math
import signal
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import amplify_jax as aj
from amplify_jax._core import validate as V
from amplify_jax import bounds
from amplify_jax._core import graphs
from amplify_jax.bounds import Choice, Graph, Integer, Orders, Real
from amplify_jax._core import registry as _registry
from amplify_jax.cli import main
from amplify_jax.status import Status

ALL = bounds.list()
IDS = [b.id for b in ALL]
GUARD_S = 180  # no test here needs more than a few seconds (idle machine); a hang fails, not blocks


@pytest.fixture(autouse=True)
def alarm():
    """pytest-timeout style guard: SIGALRM after GUARD_S seconds fails the test (main thread, POSIX)."""

    def hang(signum, frame):
        raise TimeoutError(f"no answer within {GUARD_S} s (a hang)")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(GUARD_S)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _boom(*args, **kwargs):
    raise AssertionError("a kernel ran on input that should have been refused at the boundary")


@pytest.fixture
def no_kernels(monkeypatch):
    """Every registered bound with a kernel (and solvers) that fail the test if they are called."""
    for b in ALL:
        monkeypatch.setitem(_registry._REGISTRY, b.id, dataclasses.replace(
            b, kernel=_boom, solvers={k: _boom for k in b.solvers}))


def _refused(fn, *names):
    """fn() raises one ValueError line naming one of ``names``."""
    with pytest.raises(ValueError) as exc:
        fn()
    msg = str(exc.value)
    assert "\n" not in msg, msg
    assert any(n in msg for n in names), (names, msg)
    return msg


def _cli(capsys, argv):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's --help; nothing else may exit
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def _cli_refused(capsys, argv, *names):
    code, out, err = _cli(capsys, argv)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, (argv, code, err)
    assert any(n in lines[0] for n in names), (argv, lines)
    assert out == ""
    return lines[0]


# ----------------------------------------------------------------------------------------------------------
# The input classes, for a parameter of the registry


NEVER = {"nan": math.nan, "+inf": math.inf, "-inf": -math.inf, "string": "abc", "empty": []}


def _bad_values(p) -> dict:
    """Class -> a value the parameter's domain refuses (never a valid value)."""
    d = p.domain
    out = dict(NEVER)
    if isinstance(d, Real):
        out["below"] = d.lo if d.lo_open else d.lo - max(1.0, abs(d.lo))
        out["above"] = d.hi if d.hi_open else d.hi * 2 + 1
        out["1e300"] = 1e300
        if d.lo >= 0:
            out["negative"] = -1.0
        if "delta" in p.name:
            out["delta>=1"], out["delta<=0"] = 1.0, -1e-9
    elif isinstance(d, Integer):
        out.update({"below": d.lo - 1, "fractional": d.lo + 0.5, "1e300": 1e300, "negative": -1.0})
    elif isinstance(d, Orders):
        out = {"orders<=1": [1.0, 2.0], "orders<1": [0.5], "nan": [math.nan], "1e300": [1e300], "string": "abc",
               "empty": [], "2-D": [[2.0, 3.0]]}
        if d.integer:
            out["fractional"] = [2.5]
    elif isinstance(d, Choice):
        out = {"string": "no-such-choice", "number": 1.0}
    elif isinstance(d, Graph):
        out = {"string": "no-such-graph:3", "negative": "ring:-4", "zero": "ring:0", "empty": "",
               "self-loop": np.array([[1.0, 1.0], [1.0, 0.0]]), "number": 3.0}
    return out


def _cases():
    for b in ALL:
        for p in b.params:
            for cls, v in _bad_values(p).items():
                yield b, p.name, cls, v


@pytest.mark.parametrize("bound", ALL, ids=IDS)
def test_evaluate_refuses_every_class_before_any_kernel(bound, no_kernels):
    """Every parameter of every bound, every class its domain refuses: one line naming it, no kernel run."""
    for p in bound.params:
        for cls, v in _bad_values(p).items():
            _refused(lambda: bounds.evaluate(bound.id, **{**bound.example, p.name: v}), p.name)
    numeric = [p.name for p in bound.params if p.domain.numeric]
    if len(numeric) >= 2:  # shapes that do not broadcast: both named
        a, b = numeric[:2]
        va = np.full(2, bound.example.get(a, bound.param(a).default))
        vb = np.full(3, bound.example.get(b, bound.param(b).default))
        _refused(lambda: bounds.evaluate(bound.id, **{**bound.example, a: va, b: vb}), a)


SOLVABLE = [b for b in ALL if b.solvable]


def _invert_kwargs(b):
    s = b.solvable[0]
    fixed = "delta" if b.answer == "epsilon" else "epsilon"
    kw = {k: v for k, v in b.example.items() if k != s}
    kw["target_" + b.answer] = 1.0 if b.answer == "epsilon" else 1e-3
    return s, fixed, kw


@pytest.mark.parametrize("bound", SOLVABLE, ids=[b.id for b in SOLVABLE])
def test_invert_refuses_bad_targets_ranges_and_rtol(bound, no_kernels):
    s, fixed, kw = _invert_kwargs(bound)
    tname = "target_" + bound.answer
    bad = {**NEVER, "negative": -1.0, "zero": 0.0, "1e300": 1e300}
    for cls, v in bad.items():
        _refused(lambda: bounds.invert(bound.id, solve_for=s, **{**kw, tname: v}), tname)
        _refused(lambda: bounds.invert(bound.id, solve_for=s, rtol=v, **kw), "rtol")
        if cls not in ("zero",) or isinstance(bound.param(s).domain, Real):
            for end in ("lo", "hi"):
                if cls == "zero" and bound.param(s).domain.contains(np.asarray(0.0)):
                    continue
                _refused(lambda: bounds.invert(bound.id, solve_for=s, **{**kw, end: v}), end)
    _refused(lambda: bounds.invert(bound.id, solve_for=s, rtol=[1e-6, 1e-3], **kw), "rtol")
    _refused(lambda: bounds.invert(bound.id, solve_for=s, lo=[1.0, 2.0], **{**kw, tname: [kw[tname]] * 3}), "lo")
    for p in bound.params:  # the other parameters, as in evaluate
        if p.name == s:
            continue
        for cls, v in _bad_values(p).items():
            _refused(lambda: bounds.invert(bound.id, solve_for=s, **{**kw, p.name: v}), p.name)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_hypothesis_any_bound_any_parameter_any_bad_value(data, no_kernels):
    """Hypothesis over (bound, parameter, value outside the domain): refused, named, no kernel run."""
    bound = data.draw(st.sampled_from(ALL), label="bound")
    p = data.draw(st.sampled_from([p for p in bound.params if p.domain.numeric and not isinstance(p.domain, Orders)]),
                  label="param")
    d = p.domain
    outside = st.one_of(st.floats(max_value=d.lo, exclude_max=not getattr(d, "lo_open", False), allow_nan=False,
                                  allow_infinity=True),
                        st.floats(min_value=d.hi, exclude_min=not getattr(d, "hi_open", False), allow_nan=False,
                                  allow_infinity=True),
                        st.just(math.nan), st.text(max_size=5), st.just([]))
    if isinstance(d, Integer):
        outside = st.one_of(outside, st.floats(d.lo, min(d.hi, 1e15)).filter(lambda x: x != round(x)))
    v = data.draw(outside, label="value")
    _refused(lambda: bounds.evaluate(bound.id, **{**bound.example, p.name: v}), p.name)


@pytest.mark.parametrize("bound", [b for b in ALL if any(isinstance(p.domain, Integer) for p in b.params)][:1],
                         ids=lambda b: b.id)
def test_integers_given_as_arrays_of_floats_are_accepted(bound, no_kernels):
    """1e6 and 3.0 are integers: refused only for being fractional, out of range, or not finite."""
    p = next(p for p in bound.params if isinstance(p.domain, Integer))
    assert p.domain.check(p.name, [float(p.domain.lo), float(p.domain.lo) + 2.0]).tolist() == [p.domain.lo,
                                                                                                 p.domain.lo + 2]


# ----------------------------------------------------------------------------------------------------------
# Valid but extreme values: answered, finite or flagged (compiled at the examples' shapes: few of them)


@pytest.mark.parametrize("bound_id,param,value", [
    ("gaussian", "delta", 1e-300),
    ("gaussian", "steps", 10 ** 9),
    ("shuffle.erlingsson", "n", 10 ** 9),
    ("shuffle.erlingsson", "delta", 1e-300),
])
def test_extreme_valid_values_are_finite_or_flagged(bound_id, param, value):
    b = bounds.get(bound_id)
    r = bounds.evaluate(bound_id, **{**b.example, param: value})
    ok = np.asarray(r.status) == Status.OK
    assert np.all(np.isfinite(np.asarray(r.value)[ok])), r
    assert not np.any(np.isnan(np.asarray(r.value))), r


def test_nan_or_inf_from_the_pld_kernel_keeps_its_status(monkeypatch):
    """pld.dpsgd's +inf (grid error terms above delta, e.g. delta = 1e-300) used to reach the registry as
    status ok: the kernel now passes the PLD's status on."""
    from amplify_jax.accounting import _bounds as acc
    from amplify_jax.pld import PldEpsilon

    def fake(**kw):
        return PldEpsilon(np.array(np.inf), np.array(0.0), np.array(int(Status.ERROR), dtype=np.int32))

    monkeypatch.setattr(acc.P, "dpsgd_epsilon", fake)
    r = bounds.evaluate("pld.dpsgd", sigma=1.1, q=0.01, steps=10, delta=1e-300)
    assert r.epsilon == np.inf and r.status == Status.ERROR
    r = bounds.evaluate("dpsgd", sigma=1.1, q=0.01, steps=10, delta=1e-300, accountant="pld")
    assert r.epsilon == np.inf and r.status == Status.ERROR


def test_scrambler_pure_exact_underflow_is_flagged():
    """At sampling = 1e-300 the enumeration's output probabilities underflow: it raised 'math domain error'
    (log of 0 / q), then returned +inf as status ok; now +inf (the safe end) with status error."""
    r = bounds.evaluate("traffic.scrambler-pure-exact", targets=3, n=3, sampling=[0.3, 1e-300], dummies=1)
    assert np.isfinite(r.epsilon[0]) and r.status.tolist() == [Status.OK, Status.ERROR]
    assert r.epsilon[1] == np.inf


def test_clones_windows_at_delta_1e_300():
    """shuffle.clones at delta = 1e-300 raised OverflowError (1e-10 * delta underflowed to 0 in the window's
    size): the tail is now sized in log space."""
    from amplify_jax.shuffle._clones import _windows

    W, L, z_lo = _windows(np.array(2.0), np.array(1e4), np.array(1e-300), None)
    assert isinstance(W, int) and isinstance(L, int) and math.isfinite(z_lo) and 30 < z_lo < 45


# ----------------------------------------------------------------------------------------------------------
# The boundary helpers


@pytest.mark.parametrize("helper", [V.finite, V.positive, V.nonnegative, V.probability, V.unit_open, V.integer,
                                    V.scalar, V.count, V.tolerance])
@pytest.mark.parametrize("value,needle", [([], "empty"), (np.zeros((0, 3)), "empty"), ("abc", "number"),
                                         ("1.5", "number"), (math.nan, "finite"), (-math.inf, "finite"),
                                         ([1.0, math.inf], "finite"), (object(), "number"), ({"a": 1}, "number")])
def test_validate_helpers(helper, value, needle):
    msg = _refused(lambda: helper("sigma", value), "sigma")
    assert needle in msg


def test_one_number_helpers():
    """Options that fix one search or one static size for a whole batch take one number (an array of several
    raised TypeError from float()); rtol in [1e-15, 0.5]; counts within their bounds; orders up to a maximum."""
    assert V.scalar("tail_tol", 1e-12, V.unit_open) == 1e-12 and V.count("num", 3.0, minimum=2) == 3
    assert "single" in _refused(lambda: V.scalar("tail_tol", [1e-12, 1e-10], V.unit_open), "tail_tol")
    assert "single" in _refused(lambda: V.count("num", [2, 3]), "num")
    _refused(lambda: V.count("max_iter", 10**7, minimum=1, maximum=10**6), "max_iter=10000000")
    for bad in (0.0, 1e-300, 0.6, 1e300):
        _refused(lambda: V.tolerance("rtol", bad), "rtol")
    assert V.tolerance("rtol", 1e-15) == 1e-15 and V.tolerance("rtol", 0.5) == 0.5
    _refused(lambda: V.orders("orders", [2.0, 1e300], maximum=1e6), "orders=1e+300")


def test_validate_allows_empty_where_asked():
    assert V.integer("removed", [], minimum=0, allow_empty=True).size == 0
    assert V.orders("orders", [2, 3]).tolist() == [2.0, 3.0]
    _refused(lambda: V.orders("orders", []), "orders")


# ----------------------------------------------------------------------------------------------------------
# Public functions of the accounting layer and of the paper subpackages


# (function, its positional parameters, valid arguments by name): entry points that take numbers
API = [
    (aj.dpsgd_epsilon, (), dict(sigma=1.0, q=0.01, steps=100, delta=1e-5)),
    (aj.dpsgd_calibrate_sigma, (), dict(target_epsilon=1.0, q=0.01, steps=100, delta=1e-5)),
    (aj.rdp.poisson_subsampled_gaussian_rdp, ("orders",), dict(orders=[2.0, 8.0], q=0.01, sigma=1.0)),
    (aj.rdp.gaussian_rdp, ("orders",), dict(orders=[2.0, 8.0], sigma=1.0)),
    (aj.rdp.laplace_rdp, ("orders",), dict(orders=[2.0, 8.0], scale=1.0)),
    (aj.rdp.randomized_response_rdp, ("orders",), dict(orders=[2.0, 8.0], eps0=1.0, k=2)),
    (aj.rdp.subsampled_gaussian_wor_rdp, ("orders",), dict(orders=[2.0, 8.0], q=0.01, sigma=1.0)),
    (aj.conversions.epsilon_from_rdp, ("orders", "rdp"), dict(orders=[2.0, 8.0], rdp=[0.1, 0.5], delta=1e-5)),
    (aj.conversions.delta_from_rdp, ("orders", "rdp"), dict(orders=[2.0, 8.0], rdp=[0.1, 0.5], epsilon=1.0)),
    (aj.conversions.dp_to_rdp, ("orders",), dict(orders=[2.0, 8.0], eps=1.0)),
    (aj.shuffle.clones_epsilon, (), dict(eps0=2.0, n=10000, delta=1e-6)),
    (aj.shuffle.erlingsson_epsilon, (), dict(eps0=0.3, n=10000, delta=1e-6)),
    (aj.traffic.scrambler_delta, (), dict(epsilon=1.0, targets=10, n=100, sampling=0.5, dummies=10)),
    (aj.traffic.local_epsilon, (), dict(targets=10, sampling=0.5, dummies=2)),
    (aj.checkin.distributed_gaussian_rdp, ("orders",), dict(orders=[2.0, 8.0], n=1000, gamma=0.1, sigma=1.0)),
    (aj.checkin.distributed_gaussian_epsilon, (), dict(n=1000, gamma=0.1, sigma=1.0, steps=100, delta=1e-5)),
    (aj.network.complete_graph_sum_epsilon, (), dict(n=1e4, steps=1e6, eps0=0.5, delta_prime=1e-6, delta_hat=1e-6)),
    (aj.network.ring_histogram_bound, (), dict(n=2000, steps=10, eps0=0.4, delta=1e-6, delta_prime=1e-6)),
    (aj.network.ring_histogram_gamma, (), dict(n=2000, L=10, target_epsilon=0.3, delta=1e-6)),
    (aj.secrdp.closed_form_epsilon, (), dict(eps1=0.01, steps=100, delta=1e-5)),
    (aj.secrdp.step_rdp, ("orders", "graph"), dict(orders=[2.0], graph=graphs.ring_graph(16), sigma_unc=1.0,
                                                   sigma_cor=2.0, clip=1.0, adversary="eavesdropper")),
    (aj.pld.dpsgd_epsilon, (), dict(sigma=1.0, q=0.01, steps=10, delta=1e-5)),
    (aj.pld.dpsgd_delta, (), dict(sigma=1.0, q=0.01, steps=10, epsilon=1.0)),
]
API_BAD = {"nan": math.nan, "+inf": math.inf, "-inf": -math.inf, "string": "abc", "empty": []}
INTEGERS = ("n", "steps", "targets", "dummies", "k", "L")


def _api_cases():
    for fn, pos, kw in API:
        label = f"{fn.__module__.split('.')[1]}.{fn.__name__}"
        for name, v0 in kw.items():
            if isinstance(v0, str) or name == "graph":
                continue
            bad = dict(API_BAD)
            if name == "orders":
                bad["orders<=1"] = [1.0, 2.0]
            elif name in INTEGERS:
                bad["fractional"] = float(v0) + 0.5
            elif "delta" in name:
                bad.update({"delta>=1": 1.0, "delta<=0": -1e-9})
            for cls, v in bad.items():
                yield pytest.param(fn, pos, kw, name, v, id=f"{label}:{name}={cls}")


@pytest.mark.parametrize("fn,pos,kw,name,value", list(_api_cases()))
def test_public_functions_refuse_bad_values(fn, pos, kw, name, value):
    kw = {**kw, name: value}
    args = [kw.pop(p) for p in pos]
    _refused(lambda: fn(*args, **kw), name)


# ----------------------------------------------------------------------------------------------------------
# The public-function group (``--only api``): options the chosen method ignores, orders and noise beyond the
# documented limits, counts, delta = 1, targets below the deployments' floor.  All refused at the boundary.

_G16 = graphs.ring_graph(16)
_DG = dict(n=1000, gamma=0.1, sigma=1.0)
_SCR = dict(targets=10, n=100, sampling=0.5, dummies=10)
_GEN = aj.shuffle.generic_randomizer(1.0)
_SEC = dict(clip=1.0, target_epsilon=1.0, delta=1e-5, steps=100)
_DPSGD = dict(target_epsilon=1.0, q=0.01, steps=100, delta=1e-5)

API_REFUSED = [
    # tuning options of one method, given with another (checked whatever the method)
    ("chernoff_delta-nan-exact", lambda: aj.checkin.distributed_gaussian_rdp([2, 8], **_DG, chernoff_delta=math.nan),
     "chernoff_delta"),
    ("chernoff_delta-1", lambda: aj.checkin.distributed_gaussian_rdp([2, 8], **_DG, method="eq11", chernoff_delta=1.0),
     "chernoff_delta"),
    ("chernoff_delta-upper", lambda: aj.checkin.shuffled_checkin_upper_rdp([2, 8], n=1000, gamma=0.1, eps0=1.0,
                                                                           chernoff_delta=-1.0), "chernoff_delta"),
    ("chernoff_delta-lower", lambda: aj.checkin.shuffled_checkin_lower_rdp([2, 8], n=1000, gamma=0.1, eps0=1.0,
                                                                           chernoff_delta=1.0), "chernoff_delta"),
    ("tail_tol-array", lambda: aj.checkin.distributed_gaussian_rdp([2, 8], **_DG, tail_tol=[1e-12, 1e-10]), "tail_tol"),
    ("window_size-tail_tol", lambda: aj.checkin.window_size(1000, 0.1, tail_tol=0.0), "tail_tol"),
    ("window_size-n", lambda: aj.checkin.window_size(1000.5, 0.1), "n"),
    ("sigma_lo", lambda: aj.checkin.distributed_gaussian_calibrate_sigma(n=1000, gamma=0.1, steps=100,
                                                                       target_epsilon=1.0, delta=1e-5, sigma_lo=-1.0),
     "sigma_lo"),
    ("delta0-1", lambda: aj.checkin.subsampled_shuffle_checkin_rdp([2.0], n=1000, gamma=0.1, eps0=1.0,
                                                                   shuffle_delta=1e-6, delta0=1.0), "delta0"),
    ("confidence-exact", lambda: aj.traffic.scrambler_delta(1.0, **_SCR, confidence=math.nan), "confidence"),
    ("samples-exact", lambda: aj.traffic.scrambler_delta(1.0, **_SCR, samples=2.5), "samples"),
    ("scrambler-rtol", lambda: aj.traffic.scrambler_epsilon(1e-5, **_SCR, rtol=1e300), "rtol"),
    ("blanket-confidence", lambda: aj.shuffle.blanket_delta(1.0, n=1000, randomizer=_GEN, confidence="abc"),
     "confidence"),
    ("blanket-samples", lambda: aj.shuffle.blanket_epsilon(1e-6, n=1000, randomizer=_GEN, samples=-1), "samples"),
    ("blanket-rtol", lambda: aj.shuffle.blanket_epsilon(1e-6, n=1000, randomizer=_GEN, rtol=[1e-9, 1e-9]), "rtol"),
    ("clones-tail_sd", lambda: aj.shuffle.clones_epsilon(2.0, 10000, 1e-6, tail_sd=-1.0), "tail_sd"),
    ("clones-max_iter", lambda: aj.shuffle.clones_epsilon(2.0, 10000, 1e-6, max_iter=1e300), "max_iter"),
    ("clones-max_iter-1.5", lambda: aj.shuffle.clones_epsilon(2.0, 10000, 1e-6, max_iter=2.5), "max_iter"),
    ("clones-rtol", lambda: aj.shuffle.clones_epsilon(2.0, 10000, 1e-6, rtol=[1e-9, 1e-9]), "rtol"),
    ("clones_delta-tail_sd", lambda: aj.shuffle.clones_delta(0.3, eps0=2.0, n=10000, tail_sd=math.inf), "tail_sd"),
    ("optimal_noise-iterations", lambda: aj.secrdp.optimal_noise(_G16, **_SEC, iterations=-1), "iterations"),
    ("optimal_noise-learning_rate", lambda: aj.secrdp.optimal_noise(_G16, **_SEC, learning_rate=math.inf),
     "learning_rate"),
    ("optimal_noise-kappa", lambda: aj.secrdp.optimal_noise(_G16, **_SEC, kappa=[1.0, 2.0]), "kappa"),
    ("noise_frontier-rtol", lambda: aj.secrdp.noise_frontier(_G16, **_SEC, rtol=0.0), "rtol"),
    ("noise_frontier-num", lambda: aj.secrdp.noise_frontier(_G16, **_SEC, num=2.5), "num"),
    ("secrdp-orders-closed-form", lambda: aj.secrdp.epsilon(_G16, sigma_unc=1.0, sigma_cor=2.0, clip=1.0, steps=10,
                                                            delta=1e-5, adversary="eavesdropper", orders=[0.5]),
     "orders"),
    ("eps1_budget-steps", lambda: aj.secrdp.example_level_calibrate_eps1(1.0, delta=1e-5, steps=[100, 200],
                                                                         batch_size=32.0, q=0.01), "steps"),
    ("kov-axis", lambda: aj.network.kov_composition_epsilon([0.1, 0.1], delta_tilde=1e-6, axis=1.5), "axis"),
    ("kov-delta-axis", lambda: aj.network.kov_composition_delta([1e-6, 1e-6], delta_tilde=1e-6, axis=3), "axis"),
    ("sgd-steps-unused", lambda: aj.network.sgd_calibrate_sigma(target_epsilon=1.0, delta=1e-5, n=[1000] * 3,
                                                                steps=[10, 20], setting="network",
                                                                contributions=100.0), "steps"),
    ("cycle-m", lambda: aj.network.subsampled_cycle_epsilon(n=1000, m=2.5, eps_aggregate=1.0), "m"),
    ("local-delta0", lambda: aj.network.local_sum_bound(n=1000, steps=10, eps0=0.5, delta0=1.0, delta_prime=1e-6,
                                                        delta_hat=1e-6), "delta0"),
    ("plan-delta", lambda: aj.traffic.plan_privacy(aj.traffic.aggregate_plan(), epsilon=1.0, delta=1.0), "delta"),
    ("simulate-seed", lambda: aj.traffic.simulate_scrambler_outputs(targets=3, n=3, sampling=0.3, dummies=1, runs=10,
                                                                    seed=-1), "seed"),
    ("pure-exact-array", lambda: aj.traffic.scrambler_pure_epsilon_exact(targets=[3, 3], n=3, sampling=0.3,
                                                                         dummies=1), "targets"),
    ("regular-graph-n", lambda: graphs.random_regular_graph(3, [10, 12], seed=0), "n"),
    ("erdos-renyi-p", lambda: graphs.erdos_renyi_graph(10, 1e-300, seed=0), "p"),
    # orders beyond the documented limits (rdp.MAX_ORDER = 1e6, rdp.WOR_MAX_ORDER = 1024, checkin: 1e8)
    ("gaussian-orders", lambda: aj.rdp.gaussian_rdp([2.0, 1e300], sigma=1.0), "orders"),
    ("laplace-orders", lambda: aj.rdp.laplace_rdp([1e300], scale=1.0), "orders"),
    ("rr-orders", lambda: aj.rdp.randomized_response_rdp([1e300], eps0=1.0), "orders"),
    ("poisson-orders", lambda: aj.rdp.poisson_subsampled_gaussian_rdp([2.0, 1e300], q=0.01, sigma=1.0), "orders"),
    ("wor-orders", lambda: aj.rdp.subsampled_gaussian_wor_rdp([2000.0], q=0.01, sigma=1.0), "orders"),
    ("dp_to_rdp-orders", lambda: aj.conversions.dp_to_rdp([1e300], eps=1.0), "orders"),
    ("dpsgd-orders", lambda: aj.dpsgd_epsilon(sigma=1.0, q=0.01, steps=100, delta=1e-5, orders=[2.0, 1e300]),
     "orders"),
    ("calibrate-orders", lambda: aj.dpsgd_calibrate_sigma(**_DPSGD, orders=[1e300]), "orders"),
    ("epsilon-orders", lambda: aj.epsilon("laplace", scale=2.0, steps=10, delta=1e-5, orders=[1e300]), "orders"),
    ("checkin-orders", lambda: aj.checkin.distributed_gaussian_rdp([2.0, 1e300], **_DG), "orders"),
    # noise beyond the documented ranges (rdp.SIGMA_RANGE: +inf at sigma 1e-300, 0 below the truth at 1e300)
    ("gaussian-sigma-tiny", lambda: aj.rdp.gaussian_rdp([2.0], sigma=1e-300), "sigma"),
    ("gaussian-sigma-huge", lambda: aj.rdp.gaussian_rdp([2.0], sigma=1e300), "sigma"),
    ("gaussian-sensitivity", lambda: aj.rdp.gaussian_rdp([2.0], sigma=1.0, sensitivity=1e300), "sensitivity"),
    ("laplace-scale", lambda: aj.rdp.laplace_rdp([2.0], scale=1e300), "scale"),
    ("poisson-sigma", lambda: aj.rdp.poisson_subsampled_gaussian_rdp([2.0], q=0.01, sigma=1e-300), "sigma"),
    ("wor-sigma", lambda: aj.rdp.subsampled_gaussian_wor_rdp([2.0], q=0.01, sigma=1e-300), "sigma"),
    ("checkin-sigma", lambda: aj.checkin.distributed_gaussian_rdp([2, 8], n=1000, gamma=0.1, sigma=1e-300), "sigma"),
    ("shuffled-gaussian-sigma", lambda: aj.checkin.shuffled_gaussian_rdp([2], n=10, sigma=1e-300), "sigma"),
    # delta = 1 is no guarantee; a count is an integer
    ("dp_to_rdp-delta-1", lambda: aj.conversions.dp_to_rdp([2.0, 8.0], eps=1.0, delta=1.0), "delta"),
    ("compose-steps", lambda: aj.rdp.compose([np.ones(3)], steps=1.5), "steps"),
    # the deployments' targets below MIN_TARGET_DELTA (scrambler_calibrate_dummies at 1e-300: 168 s, then infeasible)
    ("scrambler_calibrate_dummies", lambda: aj.traffic.scrambler_calibrate_dummies(1.0, 1e-300, targets=10, n=1000, sampling=0.5),
     "target_delta"),
    ("scrambler_calibrate_sampling", lambda: aj.traffic.scrambler_calibrate_sampling(1.0, 1e-16, targets=10, n=100, dummies=10),
     "target_delta"),
    ("scrambler_calibrate_n", lambda: aj.traffic.scrambler_calibrate_n(1.0, 1e-300, targets=10, sampling=0.5,
                                                                         dummies=10), "target_delta"),
    # one search tolerance in [1e-15, 0.5] (1e300 hung, 1e-300 raised AttributeError)
    ("dpsgd-calibrate-rtol", lambda: aj.dpsgd_calibrate_sigma(**_DPSGD, rtol=1e-300), "rtol"),
    ("calibrate-rtol", lambda: aj.calibrate_sigma("gaussian", target_epsilon=1.0, delta=1e-5, steps=10,
                                                  rtol=[1e-6, 1e-6]), "rtol"),
    ("pld-calibrate-rtol", lambda: aj.pld.dpsgd_calibrate_sigma(**_DPSGD, rtol=1e300), "rtol"),
    # SecRDP's noise and clip beyond secrdp.SIGMA_UNC_RANGE / SIGMA_COR_MAX / CLIP_RANGE (eps1 +inf, NaN or 0)
    ("secrdp-sigma_unc-tiny", lambda: aj.secrdp.step_account(_G16, sigma_unc=1e-300, sigma_cor=2.0, clip=1.0,
                                                             adversary="eavesdropper"), "sigma_unc"),
    ("secrdp-sigma_cor-huge", lambda: aj.secrdp.step_rdp([2.0], _G16, sigma_unc=1.0, sigma_cor=1e300, clip=1.0,
                                                         adversary="curious"), "sigma_cor"),
    ("secrdp-clip-huge", lambda: aj.secrdp.spectral_bound(_G16, sigma_unc=1.0, sigma_cor=2.0, clip=1e300,
                                                          adversary="eavesdropper"), "clip"),
    ("secrdp-diag-sigma_unc", lambda: aj.secrdp.diag_inverse_covariance(_G16, sigma_unc=1e-300, sigma_cor=1.0),
     "sigma_unc"),
    ("calibrate_sigma_cor-sigma_unc", lambda: aj.secrdp.calibrate_sigma_cor(_G16, sigma_unc=1e300, **_SEC), "sigma_unc"),
    ("noise_frontier-clip", lambda: aj.secrdp.noise_frontier(_G16, **{**_SEC, "clip": 1e300}), "clip"),
    ("optimal_noise-clip", lambda: aj.secrdp.optimal_noise(_G16, **{**_SEC, "clip": 1e-300}), "clip"),
    # the frontier's sigma_unc (C sqrt(2 / eps1) ~ 1e-149 at target_epsilon = 1e300) outside SIGMA_UNC_RANGE
    ("optimal_noise-target", lambda: aj.secrdp.optimal_noise(_G16, **{**_SEC, "target_epsilon": 1e300}),
     "target_epsilon"),
    ("baselines-target", lambda: aj.secrdp.baselines(16, **{**_SEC, "target_epsilon": 1e-300}), "target_epsilon"),
    ("example-calibrate_sigma_cor-shapes", lambda: aj.secrdp.example_level_calibrate_sigma_cor(
        _G16, sigma_unc=[1.0, 2.0], **{**_SEC, "clip": [1.0, 1.0, 1.0]}, batch_size=32.0, q=0.01), "clip"),
    ("eps1_budget-batch_size", lambda: aj.secrdp.example_level_calibrate_eps1(1.0, delta=1e-5, steps=100,
                                                                              batch_size=1e300, q=0.01), "batch_size"),
    # the effective noise multiplier outside rdp.SIGMA_RANGE, named through its inputs (it said "sigma=2e+300")
    ("example_level-batch_size", lambda: aj.secrdp.example_level_rdp([2.0], _G16, sigma_unc=1.0, sigma_cor=2.0,
                                                                     clip=1.0, batch_size=1e-300, q=0.01),
     "batch_size"),
    # the network DP-SGD accountants: sigma, lipschitz in SGD_SCALE_RANGE, sigma / lipschitz in SGD_NOISE_RANGE
    ("network-sgd-sigma", lambda: aj.network.network_sgd_epsilon(sigma=1e-300, n=1000, contributions=100.0,
                                                                 delta=1e-5), "sigma"),
    ("local-sgd-lipschitz", lambda: aj.network.local_sgd_epsilon(sigma=1.0, contributions=100.0, delta=1e-5,
                                                                 lipschitz=1e300), "lipschitz"),
    ("central-sgd-ratio", lambda: aj.network.central_sgd_epsilon(sigma=1e-3, n=1000, steps=100, delta=1e-5,
                                                                 lipschitz=1e4), "lipschitz"),
    ("bassily-sigma", lambda: aj.network.central_sgd_bassily_epsilon(sigma=1e-300, n=1000, steps=100, delta=1e-5),
     "sigma"),
    ("sgd-rdp-orders", lambda: aj.network.network_sgd_rdp([2.0, 1e300], sigma=20.0, n=1000, contributions=100.0),
     "orders"),
    ("sgd-rdp-lipschitz", lambda: aj.network.network_sgd_rdp([2.0], sigma=20.0, n=1000, contributions=100.0,
                                                             lipschitz=1e300), "lipschitz"),
    ("calibrate-sgd-contributions", lambda: aj.network.sgd_calibrate_sigma(
        target_epsilon=[1.0, 1.0, 1.0], delta=1e-5, n=1000, steps=10, setting="network", contributions=[1.0, 2.0]),
     "contributions"),
    ("ring_histogram_gamma-shapes", lambda: aj.network.ring_histogram_gamma(n=[2000, 3000], L=[10, 10, 10],
                                                                            target_epsilon=0.3, delta=1e-6), "L"),
    # advanced / strong composition that leaves float64 (eps0 = 1e300: +inf)
    ("advanced-eps", lambda: aj.network.advanced_composition_epsilon(1e300, steps=100, delta_prime=1e-6), "eps"),
    ("ring_sum-eps0", lambda: aj.network.ring_sum_bound(steps=100, eps0=1e300, delta0=1e-8, delta_prime=1e-6),
     "eps0"),
    ("checkin-strong-eps0", lambda: aj.checkin.shuffled_checkin_strong_composition_epsilon(
        n=1000, gamma=0.1, eps0=1e300, steps=100, delta=1e-5), "eps0"),
    # the Gaussian baseline where no split guarantees one participant (it answered +inf)
    ("checkin-gaussian-gamma", lambda: aj.checkin.distributed_gaussian_strong_composition_epsilon(
        n=1000, gamma=1e-300, sigma=1.0, steps=100, delta=1e-5), "gamma"),
    ("checkin-gaussian-delta", lambda: aj.checkin.distributed_gaussian_strong_composition_epsilon(
        n=1000, gamma=0.1, sigma=1.0, steps=100, delta=1e-300), "delta"),
    # the walks' scalars (int() of an array, of NaN or of 1e300 raised TypeError / OverflowError)
    ("walks-seed-negative", lambda: aj.network.sample_walks(-1, n=1000, steps=10), "seed"),
    ("walks-seed-fractional", lambda: aj.network.sample_walks(0.5, n=1000, steps=10), "seed"),
    ("walks-seed-64bit", lambda: aj.network.sample_walks(2**40, n=1000, steps=10), "seed"),
    ("walks-seed-ring", lambda: aj.network.sample_walks(math.inf, n=1000, steps=10, topology="ring"), "seed"),
    ("walks-n-array", lambda: aj.network.sample_walks(0, n=[1000, 1000], steps=10), "n"),
    ("walk-losses-eps0-array", lambda: aj.network.walk_privacy_losses(np.zeros((2, 10), int), n=1000,
                                                                      eps0=[0.5, 0.5], delta_prime=1e-6,
                                                                      delta_cycle=1e-6), "eps0"),
    # the end of the documented ranges: E[L] = 1 - e^eps and the enumeration's probabilities leave float64
    ("blanket_properties-epsilon", lambda: aj.shuffle.blanket_properties(1e300, randomizer=_GEN), "epsilon"),
    ("l_stats-epsilon", lambda: aj.traffic.amplification_variable_bounds(1e300, targets=10, sampling=0.5),
     "epsilon"),
    ("pure-exact-sampling", lambda: aj.traffic.scrambler_pure_epsilon_exact(targets=3, n=3, sampling=1e-300,
                                                                            dummies=1), "sampling"),
]


@pytest.mark.parametrize("call,name", [pytest.param(c, n, id=i) for i, c, n in API_REFUSED])
def test_public_function_options_limits_and_counts_refused(call, name):
    _refused(call, name)


def test_randomized_response_at_orders_beyond_float64_is_eps0():
    """D_alpha <= D_inf = eps0 for randomized response: where alpha eps0 leaves float64 the curve is eps0 (it was
    +inf), and an ordinary point is unchanged (against the closed form of Mironov 2017, Table II, in mpmath)."""
    import mpmath as mp

    got = np.asarray(aj.rdp.randomized_response_rdp([2.0, 1e6], eps0=np.array([1e303, 1.0])))
    assert got[0, 1] == 1e303 and np.isfinite(got[0, 0]) and got[0, 0] <= 1e303
    with mp.workdps(50):
        a, e = mp.mpf(2), mp.mpf(1)
        ref = float(mp.log((mp.e ** (a * e) + mp.e ** ((1 - a) * e)) / (mp.e ** e + 1)) / (a - 1))
    assert ref <= got[1, 0] <= ref * (1 + 1e-13)


def test_extreme_values_answered_finite_or_flagged():
    """The subsampling amplification ln(1 + q (e^eps - 1)) beyond e^eps's range is eps + ln(q + (1 - q) e^-eps)
    (it was +inf), unchanged below; true infinities carry their flag: the target randomizer at sampling 0 (no
    local guarantee: finite_eps0 False) and the simulation's outputs seen under one input only (both_seen
    False)."""
    import jax.numpy as jnp

    from amplify_jax.approx_dp import subsampled_epsilon
    from amplify_jax.internal import float64_jit

    q = 1.0 - (1.0 - 1.0 / 1000) ** 10
    big = float(aj.network.subsampled_cycle_epsilon(n=1000, m=10, eps_aggregate=1e300))
    assert 1e300 + math.log(q) <= big <= 1e300 * (1 + 1e-14)  # rounded up by the family's margin (1 + 8 ulps)
    e, q2 = np.array([0.5, 700.0, 705.0]), np.full(3, 0.01)
    got = np.asarray(float64_jit(subsampled_epsilon)(e, q2))
    ref = np.asarray(float64_jit(lambda x, p: jnp.log1p(p * jnp.expm1(x)))(e, q2))
    assert np.all(ref <= got) and np.all(got <= ref * (1 + 1e-14))  # the formula, rounded up by at most a margin
    assert float(float64_jit(subsampled_epsilon)(np.float64(1e300), np.float64(0.0))) == 0.0
    r = aj.shuffle.target_randomizer(targets=10, sampling=[0.0, 0.5])
    assert np.isinf(r.eps0[0]) and r.finite_eps0.tolist() == [False, True]
    sim = aj.traffic.simulate_scrambler_outputs(targets=3, n=3, sampling=0.0, dummies=0, runs=10)
    assert np.array_equal(sim.both_seen, np.isfinite(sim.log_ratio)) and not sim.both_seen.all()


def test_example_level_budget_at_large_batches():
    """example_level_calibrate_eps1's search interval of eps1 (1e-12 .. 1e6) is cut to where the effective noise
    multiplier lies in rdp.SIGMA_RANGE: a batch of 1e4 answered "Expected sigma in [0.001, 1e+10]" (valid input);
    batch_size in secrdp.BATCH_SIZE_RANGE."""
    assert aj.secrdp.example_level_calibrate_eps1(1.0, delta=1e-5, steps=100, batch_size=1e4, q=0.01) == 1e6


@pytest.fixture
def no_pld_kernels(monkeypatch):
    """The PLD's batch kernels replaced by one that fails the test if it is called."""
    from amplify_jax.accounting.pld import _dpsgd, _results

    for mod, name in ((_results, "eps_batch"), (_results, "delta_batch"), (_dpsgd, "_eps_batch")):
        monkeypatch.setattr(mod, name, _boom)


def test_pld_where_the_mechanism_never_looks_at_the_data(no_pld_kernels):
    """q = 0 (or no step): both output laws are the same, so eps = 0 at every delta and delta = 0 at every
    eps >= 0, exactly; the PLD answered +inf with status error (delta: 1).  Now 0, status ok, and no kernel runs;
    the calibration's whole range meets any target: its lower end, status at_limit."""
    from amplify_jax.accounting import pld
    from amplify_jax.calibrate import AT_LIMIT

    for q, steps in ((0.0, 10), ([0.0, 0.0], 10), (0.01, 0)):
        r = pld.dpsgd_epsilon(sigma=1.0, q=q, steps=steps, delta=1e-5)
        assert np.all(np.asarray(r.epsilon) == 0.0) and np.all(np.asarray(r.epsilon_lower) == 0.0)
        assert np.all(np.asarray(r.status) == Status.OK)
        r = pld.dpsgd_delta(sigma=1.0, q=q, steps=steps, epsilon=0.0)
        assert np.all(np.asarray(r.delta) == 0.0) and np.all(np.asarray(r.status) == Status.OK)
    r = pld.epsilon("poisson-laplace", scale=1.0, q=0.0, steps=10, delta=1e-5)
    assert float(r.epsilon) == 0.0 and int(r.status) == Status.OK
    r = aj.dpsgd_epsilon(sigma=1.0, q=0.0, steps=10, delta=1e-5, accountant="pld")
    assert float(r.epsilon) == 0.0 and int(r.status) == Status.OK
    c = pld.dpsgd_calibrate_sigma(target_epsilon=1.0, q=0.0, steps=10, delta=1e-5, sigma_range=(0.5, 10.0))
    assert float(c.sigma) == 0.5 and float(c.epsilon) == 0.0 and int(c.status) == AT_LIMIT


# ----------------------------------------------------------------------------------------------------------
# The command line: exit 2 and one line naming the flag


MECH = {"poisson-gaussian": dict(sigma="1.1", q="0.01", steps="100"), "gaussian": dict(sigma="2", steps="10"),
        "laplace": dict(scale="2", steps="10"), "randomized-response": dict(eps0="1", k="2", steps="10")}
CLI_BAD = {"negative": "-1", "nan": "nan", "+inf": "inf", "-inf": "-inf", "1e300": "1e300", "string": "abc",
           "empty": "", "range": "1:2:0"}


def _flags(d):
    return [x for k, v in d.items() for x in ("--" + k.replace("_", "-"), v)]


def mechanism_bases():
    """(command, mechanism, valid flags) of every mechanism command: the base a bad flag is swapped into (also
    used by benchmarks/bad_input_table.py)."""
    for mech, ex in MECH.items():
        for cmd in ("epsilon", "rdp", "calibrate"):
            if cmd == "calibrate" and mech not in ("poisson-gaussian", "gaussian"):
                continue
            base = dict(ex)
            if cmd == "epsilon":
                base["delta"] = "1e-5"
            elif cmd == "rdp":
                base["orders"] = "2,8"
            else:
                base.pop("sigma")
                base.update(target_epsilon="1", delta="1e-5")
            yield cmd, mech, base


def _mechanism_cases():
    for cmd, mech, base in mechanism_bases():
        for name in base:
            bad = dict(CLI_BAD)
            if name in ("steps", "k"):
                bad["fractional"] = "1.5"
            if name == "orders":
                bad = {"orders<=1": "1,2", "nan": "nan,2", "string": "abc", "empty": ""}
            if name == "delta":
                bad.update({"delta>=1": "1", "delta<=0": "0"})
            if name in ("q",):
                bad.pop("negative")
                bad["above"] = "1.5"
            for cls, text in bad.items():
                yield pytest.param([cmd, "--mechanism", mech, *_flags({**base, name: text})], name,
                                   id=f"{cmd}-{mech}-{name}={cls}")


@pytest.mark.parametrize("argv,name", list(_mechanism_cases()))
def test_mechanism_commands_refuse_bad_flags(argv, name, capsys):
    _cli_refused(capsys, argv, name, "--" + name.replace("_", "-"))


@pytest.mark.parametrize("argv,needle", [
    (["epsilon", "--sigma", "1e300", "--q", "0.01", "--steps", "100", "--delta", "1e-5"], "sigma=1e+300"),
    (["epsilon", "--sigma", "1", "--q", "0.01", "--steps", "1.5", "--delta", "1e-5"], "steps=1.5"),
    (["epsilon", "--mechanism", "foo"], "--mechanism"),
    (["epsilon", "--sigma"], "--sigma"),
    (["epsilon", "--bogus", "1"], "--bogus"),
    (["no-such-command"], "command"),
    ([], "command"),
    (["evaluate"], "bound id"),
    (["evaluate", "no.such-bound"], "id="),
    (["evaluate", "dpsgd", "--sigma", "1", "--q", "0.01", "--steps", "10"], "delta"),
    (["evaluate", "dpsgd", "--bogus", "1"], "--bogus"),
    (["invert", "dpsgd", "--solve-for", "bogus", "--target-epsilon", "1"], "--solve-for"),
    (["invert", "dpsgd", "--solve-for", "sigma", "--target-epsilon", "1", "--q", "0.01", "--steps", "10",
      "--delta", "1e-5", "--rtol", "nan"], "rtol"),
    (["invert", "dpsgd", "--solve-for", "sigma", "--target-epsilon", "1", "--q", "0.01", "--steps", "10",
      "--delta", "1e-5", "--lo", "abc"], "--lo"),
    (["sweep", "/no/such/grid.toml"], "GRID"),
    (["rdp", "--sigma", "1", "--q", "0.01", "--steps", "1", "--orders", "1e300"],
     "orders"),  # was 'Maximum allowed size exceeded'
    (["calibrate", "--target-epsilon", "1e300", "--q", "0.01", "--steps", "10", "--delta", "1e-5"],
     "target_epsilon"),  # the registry's target domain (0, 1e4]; it used to run a calibration
])
def test_usage_errors_are_one_line_exit_2(argv, needle, capsys):
    """Known escapes (--sigma 1e300 used to print a NaN conversion error; --steps 1.5 was answered) and
    argparse's own usage errors, which printed the usage text (several lines) before this issue."""
    _cli_refused(capsys, argv, needle)


CLI_BOUNDS = [b for b in ALL if not any(isinstance(p.domain, Graph) for p in b.params)]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_hypothesis_evaluate_and_invert_commands(data, capsys, no_kernels):
    """Hypothesis over (bound, flag, bad text) for ``evaluate ID`` and ``invert ID``: exit 2, one line."""
    b = data.draw(st.sampled_from(ALL), label="bound")
    p = data.draw(st.sampled_from(b.params), label="param")
    text = data.draw(st.sampled_from(["nan", "inf", "-inf", "abc", "", "1e300", "-1", "1:2:0", "log:-1:2:3"]
                                     + (["1.5"] if isinstance(p.domain, Integer) else [])), label="text")
    if isinstance(p.domain, (Choice, Graph)) and text in ("", "1:2:0"):
        text = "abc"
    if isinstance(p.domain, Real) and p.domain.lo < 0 and text == "-1":
        text = "nan"
    vals = {k: (",".join(map(str, v)) if isinstance(v, list) else str(v)) for k, v in b.example.items()}
    vals[p.name] = text
    capsys.readouterr()
    _cli_refused(capsys, ["evaluate", b.id, *_flags(vals)], p.name, p.flag)


# ----------------------------------------------------------------------------------------------------------
# Graphs


@pytest.fixture
def graph_files(tmp_path):
    (tmp_path / "broken.edges").write_text("0 1\n1 2 3 4 5\n")
    (tmp_path / "broken.graphml").write_text("<graphml><graph><node id='a'/><edge source=")
    (tmp_path / "empty.edges").write_text("# no edges\n")
    (tmp_path / "loop.edges").write_text("0 1\n1 1\n")
    return tmp_path


def _loop_graph():
    a = graphs.ring_graph(4).toarray()
    a[0, 0] = 1.0
    return a


@pytest.mark.parametrize("make,needle", [
    (lambda d: str(d / "broken.edges"), "'u v'"),
    (lambda d: str(d / "broken.graphml"), "GraphML"),
    (lambda d: str(d / "empty.edges"), "at least one edge"),
    (lambda d: str(d / "loop.edges"), "self-loop"),
    (lambda d: _loop_graph(), "self-loop"),
    (lambda d: np.zeros((1, 1)), "at least 2"),
    (lambda d: np.zeros((2, 3)), "square"),
    (lambda d: np.array([[0.0, np.nan], [np.nan, 0.0]]), "finite"),
    (lambda d: "ring:-4", "ring:-4"),
    (lambda d: "", "graph spec"),
    (lambda d: 3.0, "graph spec"),
], ids=["unparseable-edges", "unparseable-graphml", "empty-file", "loop-file", "loop-array", "one-user",
        "not-square", "nan-weight", "negative", "empty-string", "number"])
def test_bad_graphs_refused(make, needle, graph_files, capsys):
    value = make(graph_files)
    msg = _refused(lambda: graphs.from_spec(value), "graph", "spec", str(graph_files))
    assert needle in msg
    _refused(lambda: bounds.evaluate("secrdp.step", **{**bounds.get("secrdp.step").example, "graph": value}),
             "graph")
    if isinstance(value, str) and value:
        ex = {k: str(v) for k, v in bounds.get("secrdp.step").example.items()}
        _cli_refused(capsys, ["evaluate", "secrdp.step", *_flags({**ex, "graph": value})], "graph")


def test_empty_graph_calibration_range():
    """calibrate_sigma_cor on a graph without edges said 'Expected lo < hi, got lo=1e+144' (its search range divided by
    the largest degree, 0): the range is now finite there (sigma_cor has no effect: the answer is 'infeasible',
    flagged; computing it compiles the calibration, so the range is what is checked here)."""
    from amplify_jax.secrdp._calibration import _sigma_cor_range

    for a in (np.zeros((4, 4)), graphs.ring_graph(8)):
        lo, hi = _sigma_cor_range(aj.secrdp.prepare_graph(a), np.array([1.0, 3.0]))
        assert np.all(np.isfinite(lo)) and np.all(0 < lo) and np.all(lo < hi)


# ----------------------------------------------------------------------------------------------------------
# Sweep specs


DPSGD = {"sweep": {"quantity": "epsilon"}, "grid": {"sigma": [1.0, 2.0], "q": 0.01, "steps": 100, "delta": 1e-5}}
CAL = {"sweep": {"quantity": "calibrate"}, "grid": {"target_epsilon": [1.0], "q": 0.01, "steps": 100,
                                                     "delta": 1e-5}}
BOUND = {"sweep": {"bound": "shuffle.clones"}, "grid": {"eps0": [1.0, 2.0], "n": 10000, "delta": 1e-6}}


def _with(spec, table, key, value):
    import copy

    s = copy.deepcopy(spec)
    if key is None:
        s[table] = value
    else:
        s.setdefault(table, {})[key] = value
    return s


@pytest.mark.parametrize("spec,name", [
    (_with(DPSGD, "sweep", "bogus_key", 1), "bogus_key"),
    (_with(DPSGD, "sweep", "chunksize", 10), "chunksize"),
    (_with(DPSGD, "sweep", "sigma_range", [0.1, 10.0]), "sigma_range"),  # an option of calibrate only
    (_with(CAL, "sweep", "sigma_rnage", [0.1, 10.0]), "sigma_rnage"),
    (_with(DPSGD, "grids", None, {"sigma": 1.0}), "grids"),
    (_with(BOUND, "sweep", "bogus_key", 1), "bogus_key"),
    (_with(BOUND, "extra", None, {"x": 1}), "extra"),
    (_with(BOUND, "grid", "eps0", {"start": 1, "stop": 2, "num": 3, "sacle": "log"}), "sacle"),
    (_with(DPSGD, "grid", "sigma", {"start": 1, "stop": 2, "num": 3, "bogus": 1}), "bogus"),
    (_with(BOUND, "grid", "bogus", 1.0), "bogus"),
    (_with(DPSGD, "grid", "bogus", 1.0), "bogus"),
    (_with(DPSGD, "sweep", None, 3), "sweep"),
], ids=["dpsgd-unknown", "dpsgd-misspelt", "dpsgd-calibrate-option", "calibrate-misspelt", "unknown-table",
        "bound-unknown", "bound-unknown-table", "bound-axis-key", "dpsgd-axis-key", "bound-grid-param",
        "dpsgd-grid-param", "sweep-not-a-table"])
def test_sweep_specs_with_unknown_keys_are_refused(spec, name):
    """Unknown [sweep] keys of a DP-SGD sweep used to be dropped silently (a misspelt option ran the default)."""
    from amplify_jax.sweep import load_spec

    _refused(lambda: load_spec(spec), name)


@pytest.mark.parametrize("text,needle", [
    ("[sweep\nbound = 'x'\n", "TOML"),
    ("[sweep]\nquantity = 'epsilon'\nbogus = 1\n[grid]\nsigma = 1.0\nq = 0.01\nsteps = 10\ndelta = 1e-5\n", "bogus"),
    ("[sweep]\nquantity = 'epsilon'\n[grid]\nsigma = 'nan'\nq = 0.01\nsteps = 10\ndelta = 1e-5\n", "sigma"),
    ("[sweep]\nquantity = 'epsilon'\n[grid]\nsigma = []\nq = 0.01\nsteps = 10\ndelta = 1e-5\n", "sigma"),
    ("[sweep]\nbound = 'shuffle.clones'\n[grid]\neps0 = 1.0\nn = 10.5\ndelta = 1e-6\n", "n"),
    ("[sweep]\nquantity = 'epsilon'\n[grid]\nsigma = 1.0\nq = 0.01\nsteps = 10.5\ndelta = 1e-5\n", "steps"),
])
def test_sweep_command_refuses_bad_specs_and_writes_nothing(text, needle, tmp_path, capsys):
    grid = tmp_path / "grid.toml"
    grid.write_text(text)
    _cli_refused(capsys, ["sweep", str(grid), "--output", str(tmp_path / "out"), "--quiet"], needle)
    assert not (tmp_path / "out").exists()


@settings(max_examples=60, deadline=None)
@given(key=st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12), which=st.sampled_from(
    ["dpsgd", "calibrate", "bound"]))
def test_hypothesis_unknown_sweep_keys(key, which):
    from amplify_jax.sweep import load_spec

    spec = {"dpsgd": DPSGD, "calibrate": CAL, "bound": BOUND}[which]
    known = {"dpsgd": {"quantity", "mechanism", "chunk_size", "output", "orders", "method", "accountant"},
             "calibrate": {"quantity", "mechanism", "chunk_size", "output", "orders", "method", "accountant",
                           "rtol", "sigma_range"},
             "bound": {"bound", "quantity", "solve_for", "chunk_size", "output", "format"}}[which]
    if key in known:
        return
    _refused(lambda: load_spec(_with(spec, "sweep", key, 1)), key)


def test_search_options_are_checked():
    """rtol <= 0 looped forever in secrdp.example_level_calibrate_eps1's bisection (a hang in the table); max_iter
    and rtol of the inversion layer raised OverflowError / TypeError."""
    _refused(lambda: aj.secrdp.example_level_calibrate_eps1(1.0, delta=1e-5, steps=100, batch_size=32.0, q=0.01,
                                                            rtol=-1.0), "rtol")
    fn = lambda x, c: c / x  # noqa: E731
    for bad in (math.nan, math.inf, 1e300, -1.0, 2.5, "abc", [10, 20]):
        _refused(lambda: aj.calibrate.invert_monotone(fn, 1.0, args=(3.0,), lo=1e-3, hi=1e6, max_iter=bad), "max_iter")
        _refused(lambda: aj.calibrate.invert_monotone_host(lambda x: 3.0 / x, 1.0, lo=1e-3, hi=1e6, max_iter=bad),
                 "max_iter")
    _refused(lambda: aj.calibrate.invert_monotone(fn, [1.0, 2.0], args=(3.0,), lo=1e-3, hi=1e6, rtol=[1e-6] * 3),
             "rtol")
    for bad in (1e300, 1e-300, 1e-10):  # the quadrature's panel count was NaN (or ~1e11) there
        _refused(lambda: aj.dpsgd_epsilon(sigma=bad, q=0.01, steps=100, delta=1e-5), "sigma")


# ----------------------------------------------------------------------------------------------------------
# The network ring histogram's gamma (Cyffers & Bellet Thm 2) where the printed gamma falls short


def test_ring_histogram_gamma_falls_back_where_the_printed_gamma_falls_short():
    """1000 < n < 1990 at delta = 1e-6 is inside Thm 2's conditions, but the printed gamma then gives more
    than eps per visit (144 eps ln(1/delta) / sqrt(n (n - 1)) by Erlingsson et al. Cor. 9 on the n - 1 shuffled
    reports).  There the safe gamma is returned, flagged by a warning; elsewhere the printed one, silently."""
    N = aj.network
    for n in (1001, 1500, 1989):
        with pytest.warns(UserWarning, match="falls short"):
            g = float(N.ring_histogram_gamma(n=n, L=10, target_epsilon=0.3, delta=1e-6))
        eps_l = math.log(1 + 10 * (1 - g) / g)
        per_visit = 12 * eps_l * math.sqrt(math.log(1e6) / (n - 1))
        assert per_visit <= 0.3 and per_visit == pytest.approx(0.3, rel=1e-9)
        printed = 10 / (math.exp(12 * 0.3 * math.sqrt(math.log(1e6) / n)) + 9)
        assert g > printed  # more randomization than printed
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = np.asarray(N.ring_histogram_gamma(n=[2000, 10**5], L=10, target_epsilon=0.3, delta=1e-6))
    printed = 10 / (np.exp(12 * 0.3 * np.sqrt(np.log(1e6) / np.array([2000, 10**5]))) + 9)
    np.testing.assert_allclose(g, printed, rtol=1e-13)
