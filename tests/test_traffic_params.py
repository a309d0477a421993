"""Issue 29, item 2: each traffic parameter's domain is stated once (``amplify_jax/traffic/_params.py``), and
every public traffic function refuses exactly what its Param refuses, with a one-line ValueError naming the
parameter and the value; the registry's bounds declare the same Param objects (or a stated narrowing of them).

The kernels are replaced by a stub that raises :class:`_params_probe.Accepted`: what is tested is the boundary, and no
program is compiled (the values themselves are tests/test_traffic.py's business)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from amplify_jax import bounds
from amplify_jax import traffic as TR
from amplify_jax.traffic import _deployment, _local, _params as P, _scrambler_delta, _scrambler_pure, _simulation
from _params_probe import param_refuses as _param_refuses, probes as _probes, stub as _stub
from _params_probe import function_refuses as _function_refuses




@pytest.fixture(autouse=True)
def no_kernels(monkeypatch):
    for mod, name in [(_local, "_local_epsilon_kernel"), (_scrambler_pure, "_pure_epsilon_kernel"),
                      (_scrambler_pure, "_capped_output_dist"), (_scrambler_delta, "rr_delta"),
                      (_scrambler_delta, "rr_epsilon"), (_scrambler_delta, "_l_stats_kernel"),
                      (_deployment, "scrambler_delta"), (_deployment, "invert_monotone"),
                      (_simulation, "_sim_counts")]:
        monkeypatch.setattr(mod, name, _stub)


_SCR = dict(targets=10, n=100, sampling=0.5, dummies=10)


def _local_extra(name, value, base):
    """local_epsilon also refuses dummies > targets - 1 (the d dummies go to distinct targets)."""
    return name == "dummies" and math.isfinite(value) and value > base["targets"] - 1


#: (label, call(**values), base values, {parameter: its Param}, extra refusals of a joint condition or None):
#: every public traffic function that takes one of the family's parameters
CASES = [
    ("scrambler_delta", lambda epsilon, **kw: TR.scrambler_delta(epsilon, **kw), dict(epsilon=1.0, **_SCR),
     dict(epsilon=P.EPSILON, targets=P.TARGETS, n=P.N, sampling=P.SAMPLING, dummies=P.DUMMIES), None),
    ("scrambler_epsilon", lambda delta, **kw: TR.scrambler_epsilon(delta, **kw), dict(delta=1e-6, **_SCR),
     dict(delta=P.DELTA, targets=P.TARGETS, n=P.N, sampling=P.SAMPLING, dummies=P.DUMMIES), None),
    ("amplification_variable_bounds", lambda epsilon, **kw: TR.amplification_variable_bounds(epsilon, **kw),
     dict(epsilon=1.0, targets=10, sampling=0.5), dict(epsilon=P.EPSILON, targets=P.TARGETS, sampling=P.SAMPLING),
     None),
    ("local_epsilon", TR.local_epsilon, dict(targets=10, sampling=0.5, dummies=1),
     dict(targets=P.TARGETS, sampling=P.SAMPLING, dummies=P.DUMMIES), _local_extra),
    ("scrambler_pure_epsilon", TR.scrambler_pure_epsilon, dict(targets=3, n=3, sampling=0.3, dummies=1),
     dict(targets=P.TARGETS, n=P.N, sampling=P.SAMPLING, dummies=P.PURE_DUMMIES), None),
    ("scrambler_pure_epsilon_exact", TR.scrambler_pure_epsilon_exact, dict(targets=3, n=3, sampling=0.3, dummies=1),
     dict(targets=P.EXACT_TARGETS, n=P.EXACT_N, sampling=P.EXACT_SAMPLING, dummies=P.EXACT_DUMMIES), None),
    ("local_costs", lambda **kw: TR.local_costs(sources=1000, **kw), dict(targets=10, sampling=0.5, dummies=1),
     dict(targets=P.TARGETS, sampling=P.SAMPLING, dummies=P.DUMMIES), None),
    ("scrambler_costs", lambda **kw: TR.scrambler_costs(sources=1000, **kw), dict(_SCR),
     dict(targets=P.TARGETS, n=P.N, sampling=P.SAMPLING, dummies=P.DUMMIES), None),
    ("scrambler_calibrate_dummies", lambda target_epsilon, target_delta, **kw: TR.scrambler_calibrate_dummies(
        target_epsilon, target_delta, **kw), dict(target_epsilon=1.0, target_delta=1e-6, targets=10, n=100,
                                                  sampling=0.5),
     dict(target_epsilon=P.TARGET_EPSILON, target_delta=P.TARGET_DELTA, targets=P.TARGETS, n=P.N,
          sampling=P.SAMPLING), None),
    ("scrambler_calibrate_sampling", lambda target_epsilon, target_delta, **kw: TR.scrambler_calibrate_sampling(
        target_epsilon, target_delta, **kw), dict(target_epsilon=1.0, target_delta=1e-6, targets=10, n=100,
                                                  dummies=10),
     dict(target_epsilon=P.TARGET_EPSILON, target_delta=P.TARGET_DELTA, targets=P.TARGETS, n=P.N,
          dummies=P.DUMMIES), None),
    ("scrambler_calibrate_n", lambda target_epsilon, target_delta, **kw: TR.scrambler_calibrate_n(
        target_epsilon, target_delta, **kw), dict(target_epsilon=1.0, target_delta=1e-6, targets=10, sampling=0.5,
                                                  dummies=10),
     dict(target_epsilon=P.TARGET_EPSILON, target_delta=P.TARGET_DELTA, targets=P.TARGETS, sampling=P.SAMPLING,
          dummies=P.DUMMIES), None),
    # targets and n also meet the output codes' (n + dummies + 1)**targets < 2**62: not a domain, left out
    ("simulate_scrambler_outputs", lambda **kw: TR.simulate_scrambler_outputs(targets=3, n=3, runs=10, **kw),
     dict(sampling=0.3, dummies=1), dict(sampling=P.SAMPLING, dummies=P.DUMMIES), None),
]

#: scalar-only functions (one enumeration or simulation per call): an array is refused whatever it holds
SCALAR_ONLY = {"scrambler_pure_epsilon_exact", "simulate_scrambler_outputs"}


def _expected(param, extra, base, name, value) -> bool:
    return _param_refuses(param, value) or bool(extra and extra(name, float(value), base))


def _cases():
    for label, call, base, params, extra in CASES:
        for name, param in params.items():
            yield pytest.param(label, call, base, name, param, extra, id=f"{label}:{name}")


@pytest.mark.parametrize("label,call,base,name,param,extra", list(_cases()))
def test_function_refuses_exactly_what_its_param_refuses(label, call, base, name, param, extra):
    assert not _function_refuses(call, base, name, base[name])  # the base point is valid
    for v in _probes(param.domain):
        assert _function_refuses(call, base, name, v) == _expected(param, extra, base, name, v), (name, v)
    if label in SCALAR_ONLY:
        with pytest.raises(ValueError, match=f"{name} to be a single number"):
            call(**{**base, name: np.array([base[name], base[name]])})
        return
    # an array: refused as a whole where one element is, the message giving the element
    good, bad = float(param.domain.lo), float(param.domain.hi) + 1.0
    if extra and extra(name, good, base):
        good = float(base[name])
    assert _function_refuses(call, base, name, np.array([good, bad])) == _param_refuses(param, bad)


@given(case=st.sampled_from(range(len(CASES))), data=st.data(),
       value=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**8).map(float),
                       st.floats(-1.0, 2.0)))
def test_hypothesis_function_and_param_agree(case, data, value):
    label, call, base, params, extra = CASES[case]
    name = data.draw(st.sampled_from(sorted(params)))
    assert _function_refuses(call, base, name, value) == _expected(params[name], extra, base, name, value), \
        (label, name, value)


@pytest.mark.parametrize("call,name,param", [
    (lambda v: TR.scrambler_calibrate_dummies(1.0, 1e-6, targets=10, n=100, sampling=0.5, max_dummies=v),
     "max_dummies", P.DUMMIES),
    (lambda v: TR.scrambler_calibrate_n(1.0, 1e-6, targets=10, sampling=0.5, dummies=10, max_n=v), "max_n", P.N),
])
def test_search_ends_stop_at_the_parameters_largest_value(call, name, param):
    """A deployment's search end is at most its parameter's largest value (scrambler_delta re-checks the answer
    there), and at least 1."""
    hi = param.domain.hi
    for v, refused in [(1, False), (hi, False), (hi + 1, True), (0, True), (2.5, True)]:
        assert _function_refuses(lambda **kw: call(kw[name]), {name: 1}, name, v) == refused, (name, v)


#: Registry parameters whose domain differs from the function's Param, each a stated Param of _params.py:
#: (bound id, name) -> the function's Param
DIFFERENT = {
    ("traffic.scrambler", "delta"): P.DELTA,  # inversion over n, d, sigma needs delta >= 1e-15 (SEARCH_DELTA)
    # the registry's enumeration answers at any sampling in (0, 1) and flags an underflow with status error
    ("traffic.scrambler-pure-exact", "sampling"): P.EXACT_SAMPLING,
}


def test_registry_declares_the_functions_params():
    """Each traffic bound's numeric parameter has the domain of the Param its function validates with (the same
    object), or one of the stated differences, declared in _params.py."""
    funcs = {"traffic.scrambler": "scrambler_epsilon", "traffic.scrambler-delta": "scrambler_delta",
             "traffic.local": "local_epsilon", "traffic.scrambler-pure": "scrambler_pure_epsilon",
             "traffic.scrambler-pure-exact": "scrambler_pure_epsilon_exact"}
    by_label = {label: ps for label, _, _, ps, _ in CASES}
    assert {b.id for b in bounds.list("traffic")} == set(funcs)
    declared = [q.domain for q in vars(P).values() if hasattr(q, "domain")]
    seen = 0
    for bid, label in funcs.items():
        fn_params = by_label[label]
        for p in bounds.get(bid).params:
            if not p.domain.numeric or p.domain is P.PURE_DELTA.domain:  # the pure bounds' ignored delta
                continue
            assert p.name in fn_params, (bid, p.name)
            if (bid, p.name) in DIFFERENT:
                assert p.domain is not DIFFERENT[(bid, p.name)].domain, (bid, p.name)
                assert any(p.domain is d for d in declared), (bid, p.name)  # one of _params.py's
            else:
                assert p.domain is fn_params[p.name].domain, (bid, p.name, p.domain, fn_params[p.name].domain)
            seen += 1
    assert seen >= 18
