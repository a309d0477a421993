"""Issue 29, item 2: each network parameter's domain is stated once (``amplify_jax/network/_params.py``), and
the public network functions converted so far refuse exactly what their Params refuse, with a one-line
ValueError naming the parameter and the value; the registry's bounds declare the same Param objects (or a
stated narrowing of them).

The kernels are replaced by a stub that raises :class:`_params_probe.Accepted`: what is tested is the boundary,
and no program is compiled (the values themselves are tests/test_network.py's business)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from amplify_jax import bounds
from amplify_jax import network as NW
from amplify_jax.network import _local, _params as P, _ring
from _params_probe import param_refuses as _param_refuses, probes as _probes, stub as _stub
from _params_probe import function_refuses as _function_refuses


@pytest.fixture(autouse=True)
def no_kernels(monkeypatch):
    for mod, name in [(_ring, "_ring_sum_kernel"), (_ring, "_ring_hist_kernel"), (_local, "_local_sum_kernel")]:
        monkeypatch.setattr(mod, name, _stub)


def _erlingsson_extra(name, value, base):
    """Thm 2's closed form (Erlingsson et al. Cor. 9) also refuses eps0 >= 1/2, delta >= 1/100, n <= 1000."""
    return math.isfinite(value) and ((name == "eps0" and value >= 0.5) or (name == "delta" and value >= 0.01)
                                     or (name == "n" and value <= 1000))


#: (label, call(**values), base values, {parameter: its Param}, extra refusals of a joint condition or None)
CASES = [
    ("ring_sum_bound", NW.ring_sum_bound, dict(steps=1, eps0=0.5, delta0=1e-8, delta_prime=1e-6),
     dict(steps=P.STEPS_K, eps0=P.EPS0_LOCAL, delta0=P.DELTA0, delta_prime=P.DELTA_PRIME), None),
    ("ring_histogram_bound", lambda **kw: NW.ring_histogram_bound(form="fmt", **kw),
     dict(n=2000, steps=10, eps0=0.4, delta=1e-6, delta_prime=1e-6),
     dict(n=P.N, steps=P.STEPS_K, eps0=P.EPS0_LOCAL, delta=P.VISIT_DELTA, delta_prime=P.DELTA_PRIME), None),
    ("ring_histogram_bound_erlingsson", NW.ring_histogram_bound,
     dict(n=2000, steps=10, eps0=0.4, delta=1e-6, delta_prime=1e-6),
     dict(n=P.N, steps=P.STEPS_K, eps0=P.EPS0_LOCAL, delta=P.VISIT_DELTA, delta_prime=P.DELTA_PRIME),
     _erlingsson_extra),
    ("local_sum_bound", NW.local_sum_bound,
     dict(n=1000, steps=10, eps0=0.5, delta0=1e-8, delta_prime=1e-6, delta_hat=1e-6),
     dict(n=P.N, steps=P.STEPS_T, eps0=P.EPS0_LOCAL, delta0=P.DELTA0_PURE, delta_prime=P.DELTA_PRIME,
          delta_hat=P.DELTA_HAT), None),
]


def _expected(param, extra, base, name, value) -> bool:
    return _param_refuses(param, value) or bool(extra and extra(name, float(value), base))


def _cases():
    for label, call, base, params, extra in CASES:
        for name, param in params.items():
            yield pytest.param(label, call, base, name, param, extra, id=f"{label}:{name}")


@pytest.mark.parametrize("label,call,base,name,param,extra", list(_cases()))
def test_function_refuses_exactly_what_its_param_refuses(label, call, base, name, param, extra):
    assert not _function_refuses(call, base, name, base[name], answered_is_accepted=False)  # a valid base point
    for v in _probes(param.domain):
        assert _function_refuses(call, base, name, v) == _expected(param, extra, base, name, v), (name, v)
    # an array: refused as a whole where one element is, the message giving the element
    good, bad = float(param.domain.lo), float(param.domain.hi) + 1.0
    if _param_refuses(param, good) or (extra and extra(name, good, base)):
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


def test_registry_declares_the_functions_params():
    """The converted functions' registry bounds declare the functions' Param objects; the stated differences:
    eps0 (the registry's EPS0, (0, 30], inside the functions' EPS0_LOCAL, (0, 700]) and the registry's total
    ``delta`` (the functions take its pieces: delta0, delta_prime, and the ring histogram's per-visit delta)."""
    funcs = {"network.ring-sum": "ring_sum_bound", "network.ring-histogram": "ring_histogram_bound"}
    by_label = {label: ps for label, _, _, ps, _ in CASES}
    seen = 0
    for bid, label in funcs.items():
        fn_params = by_label[label]
        for p in bounds.get(bid).params:
            if not p.domain.numeric or p.name == "delta":  # the total delta: not a function's parameter
                continue
            if p.name == "eps0":
                assert p is P.EPS0 and P.EPS0.domain.hi <= P.EPS0_LOCAL.domain.hi
            else:
                assert p is fn_params[p.name], (bid, p.name)
            seen += 1
    assert seen == 7
