"""Issue 29, item 2: each check-in parameter's domain is stated once (``amplify_jax/checkin/_params.py``), and
every public function refuses exactly what its Param refuses, with a one-line ValueError naming the parameter
and the value; the registry's bounds declare the same Param objects (or a stated narrowing of them).

The kernels are replaced by a stub that raises :class:`_params_probe.Accepted`: what is tested is the boundary, and no
program is compiled (the values themselves are tests/test_checkin.py's business)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from amplify_jax import bounds
from amplify_jax import checkin as C
from amplify_jax._core.domains import Integer, Real, check_params
from amplify_jax.checkin import (_accounting, _baselines, _distributed, _params as P, _shuffled, _shuffled_gaussian,
                                 _subsampled_shuffle)
from _params_probe import Accepted as _Accepted, param_refuses as _param_refuses, probes as _probes, stub as _stub
from _params_probe import function_refuses


def _function_refuses(call, base, name, value) -> bool:
    return function_refuses(call, base, name, value, answered_is_accepted=False)  # every call reaches a stub


@pytest.fixture(autouse=True)
def no_kernels(monkeypatch):
    for mod, name in [(_distributed, "_distributed_gaussian_kernel"), (_distributed, "_gauss_eq11_kernel"),
                      (_accounting, "_count_bounds"), (_accounting, "invert_monotone"),
                      (_accounting, "_eps_on_points"), (_baselines, "_sc_gauss_kernel"),
                      (_baselines, "_sc_shuffle_kernel"), (_shuffled, "_shuffled_checkin_exact_kernel"),
                      (_shuffled, "_eq7_kernel"), (_shuffled, "_eq8_kernel"),
                      (_shuffled_gaussian, "_shuffled_gaussian_kernel"),
                      (_shuffled_gaussian, "_shuffled_gauss_checkin_kernel"),
                      (_subsampled_shuffle, "_conversion_kernel")]:
        monkeypatch.setattr(mod, name, _stub)


_DG = dict(n=1000, gamma=0.05, sigma=1.0)
_DG_PARAMS = dict(n=P.N, gamma=P.GAMMA, sigma=P.SIGMA)

_SH = dict(n=1000, gamma=0.1, eps0=1.0)
_SH_PARAMS = dict(n=P.N, gamma=P.GAMMA, eps0=P.EPS0)

#: (label, call(**values), base values, {parameter: its Param}): every public check-in function that takes a number
CASES = [
    ("distributed_gaussian_rdp", lambda **v: C.distributed_gaussian_rdp([2, 8], **v), _DG, _DG_PARAMS),
    ("distributed_gaussian_rdp:eq11", lambda **v: C.distributed_gaussian_rdp([2, 8], method="eq11", **v), _DG,
     _DG_PARAMS),
    ("distributed_gaussian_epsilon", lambda **v: C.distributed_gaussian_epsilon(**v),
     dict(_DG, steps=100, delta=1e-5), dict(_DG_PARAMS, steps=P.STEPS, delta=P.DELTA)),
    ("distributed_gaussian_epsilon:pld", lambda **v: C.distributed_gaussian_epsilon(accountant="pld", **v),
     dict(_DG, steps=100, delta=1e-5), dict(_DG_PARAMS, steps=P.STEPS, delta=P.DELTA)),
    ("distributed_gaussian_delta", lambda **v: C.distributed_gaussian_delta(**v),
     dict(_DG, steps=100, epsilon=2.0), dict(_DG_PARAMS, steps=P.STEPS, epsilon=P.EPSILON)),
    ("distributed_gaussian_calibrate_sigma",
     lambda **v: C.distributed_gaussian_calibrate_sigma(target_epsilon=2.0, **v),
     dict(n=1000, gamma=0.05, steps=100, delta=1e-5), dict(n=P.N, gamma=P.GAMMA, steps=P.STEPS, delta=P.DELTA)),
    ("distributed_gaussian_calibrate_gamma",
     lambda **v: C.distributed_gaussian_calibrate_gamma(target_epsilon=2.0, **v),
     dict(n=1000, sigma=1.0, steps=100, delta=1e-5), dict(n=P.N, sigma=P.SIGMA, steps=P.STEPS, delta=P.DELTA)),
    ("distributed_gaussian_calibrate_steps",
     lambda **v: C.distributed_gaussian_calibrate_steps(target_epsilon=2.0, **v),
     dict(_DG, delta=1e-5), dict(_DG_PARAMS, delta=P.DELTA)),
    # the public baseline also refuses points where the Chernoff bound guarantees no participant (its own,
    # documented ValueError, not a domain): the domain is the one of its checks that the registry also calls
    ("distributed_gaussian_strong_composition",
     lambda **v: _baselines._distributed_gaussian_sc_unchecked(**v),
     dict(_DG, gamma=0.1, steps=100, delta=1e-5),
     dict(n=P.N, gamma=P.GAMMA_OPEN, sigma=P.SIGMA, steps=P.STEPS, delta=P.DELTA)),
    # shuffled check-in
    ("shuffled_checkin_upper_rdp", lambda **v: C.shuffled_checkin_upper_rdp([2, 8], **v), _SH, _SH_PARAMS),
    ("shuffled_checkin_upper_rdp:eq7", lambda **v: C.shuffled_checkin_upper_rdp([2, 8], method="eq7", **v), _SH,
     dict(_SH_PARAMS, gamma=P.GAMMA_POSITIVE)),  # Eq. 7 as printed needs gamma > 0
    ("shuffled_checkin_lower_rdp", lambda **v: C.shuffled_checkin_lower_rdp([2, 8], **v), _SH,
     dict(_SH_PARAMS, gamma=P.GAMMA_POSITIVE)),  # Thm 3 needs gamma > 0
    ("shuffled_checkin_epsilon", lambda **v: C.shuffled_checkin_epsilon(**v), dict(_SH, steps=10, delta=1e-5),
     dict(_SH_PARAMS, steps=P.STEPS, delta=P.DELTA)),
    ("shuffled_checkin_epsilon:lower", lambda **v: C.shuffled_checkin_epsilon(bound="lower", **v),
     dict(_SH, steps=10, delta=1e-5), dict(_SH_PARAMS, gamma=P.GAMMA_POSITIVE, steps=P.STEPS, delta=P.DELTA)),
    # eps0 also meets the baseline's own overflow check (strong composition of eps0 over T rounds): tested below
    ("shuffled_checkin_strong_composition_epsilon", lambda **v: C.shuffled_checkin_strong_composition_epsilon(**v),
     dict(_SH, steps=10, delta=1e-5), dict(n=P.N, gamma=P.GAMMA_OPEN, steps=P.STEPS, delta=P.DELTA)),
    ("shuffled_gaussian_rdp", lambda **v: C.shuffled_gaussian_rdp([2, 8], **v), dict(n=100, sigma=1.0),
     dict(n=P.N, sigma=P.SIGMA)),
    ("shuffled_gaussian_checkin_rdp", lambda **v: C.shuffled_gaussian_checkin_rdp([2, 8], **v),
     dict(n=100, gamma=0.5, sigma=1.0), dict(n=P.N, gamma=P.GAMMA, sigma=P.SIGMA)),
    ("subsampled_shuffle_checkin_rdp", lambda **v: C.subsampled_shuffle_checkin_rdp([2.0, 8.0], **v),
     dict(_SH, n=10000, delta0=0.0, shuffle_delta=1e-8),
     dict(_SH_PARAMS, delta0=P.DELTA0, shuffle_delta=P.SHUFFLE_DELTA)),
    ("subsampled_shuffle_checkin_epsilon", lambda **v: C.subsampled_shuffle_checkin_epsilon(**v),
     dict(_SH, n=10000, steps=10, delta=1e-5, delta0=0.0, shuffle_delta=1e-8),
     dict(_SH_PARAMS, steps=P.STEPS, delta=P.DELTA, delta0=P.DELTA0, shuffle_delta=P.SHUFFLE_DELTA)),
]


def _cases():
    for label, call, base, params in CASES:
        for name, param in params.items():
            yield pytest.param(call, base, name, param, id=f"{label}:{name}")


@pytest.mark.parametrize("call,base,name,param", list(_cases()))
def test_function_refuses_exactly_what_its_param_refuses(call, base, name, param):
    assert not _function_refuses(call, base, name, base[name])  # the base point is valid
    for v in _probes(param.domain):
        assert _function_refuses(call, base, name, v) == _param_refuses(param, v), (name, v)
    # an array: refused as a whole where one element is, the message giving the element
    good, bad = float(param.domain.hi), float(param.domain.hi) + 1.0
    assert _function_refuses(call, base, name, np.array([good, bad])) == _param_refuses(param, bad)


@given(case=st.sampled_from(range(len(CASES))), data=st.data(),
       value=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**10).map(float),
                       st.floats(-1.0, 2.0)))
def test_hypothesis_function_and_param_agree(case, data, value):
    label, call, base, params = CASES[case]
    name = data.draw(st.sampled_from(sorted(params)))
    assert _function_refuses(call, base, name, value) == _param_refuses(params[name], value), (label, name, value)


def test_public_strong_composition_baseline_refuses_the_domain_too():
    """The public baseline checks through the same Params before its participant check."""
    f = C.distributed_gaussian_strong_composition_epsilon
    base = dict(_DG, gamma=0.1, steps=100, delta=1e-5)
    for name, value in [("gamma", 1.0), ("gamma", 0.0), ("sigma", 1e-4), ("steps", 0.5), ("n", 1e16),
                        ("delta", 1.0)]:
        with pytest.raises(ValueError, match=f"{name}="):
            f(**{**base, name: value})


def test_shuffled_strong_composition_baseline_eps0():
    """eps0 through EPS0 (outside [0, 700]: the domain's message), inside it the baseline's own overflow check
    where strong composition over the rounds leaves float64."""
    f = C.shuffled_checkin_strong_composition_epsilon
    base = dict(_SH, steps=10, delta=1e-5)
    for v in (-1.0, np.nextafter(700.0, math.inf), math.nan, math.inf):
        with pytest.raises(ValueError, match=r"Expected eps0 (in \[0, 700\]|to be finite)"):
            f(**{**base, "eps0": v})
    for v in (0.0, 5e-324, 1.0, 300.0):
        with pytest.raises(_Accepted):
            f(**{**base, "eps0": v})


#: Registry parameters whose domain is a stated narrowing of the function's Param (see _params.py):
#: (bound id, name) -> the function's Param
NARROWER = {
    **{(bid, "gamma"): P.GAMMA for bid in (
        "checkin.distributed-gaussian", "checkin.distributed-gaussian-delta", "checkin.distributed-gaussian-rdp",
        "checkin.shuffled-upper", "checkin.shuffled-upper-rdp", "checkin.shuffled-gaussian-checkin-rdp",
        "checkin.subsampled-shuffle", "checkin.subsampled-shuffle-rdp")},
    # eps0 is a log-scaled knob and a search parameter in the registry: eps0 > 0 (EPS0_POSITIVE)
    **{(bid, "eps0"): P.EPS0 for bid in (
        "checkin.shuffled-upper", "checkin.shuffled-lower", "checkin.shuffled-upper-rdp", "checkin.shuffled-lower-rdp",
        "checkin.shuffled-strong-composition", "checkin.subsampled-shuffle", "checkin.subsampled-shuffle-rdp")},
}


def test_registry_declares_the_functions_params():
    """Each distributed check-in bound's numeric parameter has the domain of the Param its function validates
    with (the same object), or one of the stated narrowings, contained in it."""
    by_label = {label: ps for label, _, _, ps in CASES}
    funcs = {"checkin.distributed-gaussian": "distributed_gaussian_epsilon",
             "checkin.distributed-gaussian-delta": "distributed_gaussian_delta",
             "checkin.distributed-gaussian-rdp": "distributed_gaussian_rdp",
             "checkin.distributed-gaussian-strong-composition": "distributed_gaussian_strong_composition",
             "checkin.shuffled-upper": "shuffled_checkin_epsilon",
             "checkin.shuffled-lower": "shuffled_checkin_epsilon:lower",
             "checkin.shuffled-upper-rdp": "shuffled_checkin_upper_rdp",
             "checkin.shuffled-lower-rdp": "shuffled_checkin_lower_rdp",
             "checkin.shuffled-strong-composition": "shuffled_checkin_strong_composition_epsilon",
             "checkin.shuffled-gaussian-rdp": "shuffled_gaussian_rdp",
             "checkin.shuffled-gaussian-checkin-rdp": "shuffled_gaussian_checkin_rdp",
             "checkin.subsampled-shuffle": "subsampled_shuffle_checkin_epsilon",
             "checkin.subsampled-shuffle-rdp": "subsampled_shuffle_checkin_rdp"}
    assert {b.id for b in bounds.list("checkin")} == set(funcs)
    seen = 0
    for bid, label in funcs.items():
        fn_params = {**by_label[label], **({"eps0": P.EPS0} if bid == "checkin.shuffled-strong-composition" else {})}
        for p in bounds.get(bid).params:
            if not p.domain.numeric or p.name == "orders":
                continue
            want = fn_params[p.name]
            if (bid, p.name) in NARROWER:
                d, w = p.domain, NARROWER[(bid, p.name)].domain
                assert d != w and d.lo >= w.lo and d.hi <= w.hi, (bid, p.name)
                declared = [q.domain for q in vars(P).values() if hasattr(q, "domain")]
                assert any(d is q for q in declared), (bid, p.name)  # the narrowing is one of _params.py's
            else:
                assert p.domain is want.domain, (bid, p.name, p.domain, want.domain)
            seen += 1
    assert seen >= 50


def test_check_params_keeps_shapes_for_the_kernels():
    steps, delta = check_params((P.STEPS, P.DELTA), broadcast=False, steps=[1, 2], delta=[[1e-5], [1e-6]])
    assert steps.shape == (2,) and delta.shape == (2, 1) and steps.dtype == np.float64
    with pytest.raises(ValueError, match="steps=1.5"):
        check_params((P.STEPS,), steps=1.5)
    assert isinstance(P.SIGMA.domain, Real) and isinstance(P.N.domain, Integer)
