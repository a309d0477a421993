"""Issue 29, item 2: each shuffle parameter's domain is stated once (``amplify_jax/shuffle/_params.py``), and
every public function refuses exactly what its Param refuses, with a one-line ValueError naming the parameter
and the value; the registry's bounds declare the same Param objects (or a stated narrowing of them).

The kernels are replaced by a stub that raises :class:`_params_probe.Accepted`: what is tested is the boundary, and no
program is compiled (the values themselves are the other test files' business)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from amplify_jax import bounds
from amplify_jax import shuffle as S
from amplify_jax._core.domains import Real, check_params
from amplify_jax.shuffle import _closed_forms, _clones, _params as P, blanket
from _params_probe import param_refuses as _param_refuses, probes as _probes, stub as _stub
from _params_probe import function_refuses as _function_refuses




@pytest.fixture(autouse=True)
def no_kernels(monkeypatch):
    for mod, name in [(_closed_forms, "_erlingsson_kernel"), (_closed_forms, "_erlingsson_delta_kernel"),
                      (_closed_forms, "_fmt_kernel"), (_clones, "_clones_kernel"),
                      (_clones, "_clones_delta_kernel"), (blanket, "_conc_kernel"), (blanket, "_conc_eps_kernel")]:
        monkeypatch.setattr(mod, name, _stub)


_GEN = S.generic_randomizer(1.0)

#: (label, call(**values), base values, {parameter: its Param}): every public shuffle function that takes a number
CASES = [
    ("erlingsson_epsilon", lambda eps0, n, delta: S.erlingsson_epsilon(eps0, n=n, delta=delta),
     dict(eps0=0.3, n=10_000, delta=1e-6), dict(eps0=P.EPS0, n=P.N_CLOSED, delta=P.DELTA)),
    ("fmt_closed_form_epsilon", lambda eps0, n, delta: S.fmt_closed_form_epsilon(eps0, n=n, delta=delta),
     dict(eps0=4.0, n=100_000, delta=1e-6), dict(eps0=P.EPS0, n=P.N_CLOSED, delta=P.DELTA)),
    ("erlingsson_delta", lambda epsilon, eps0, n: S.erlingsson_delta(epsilon, eps0=eps0, n=n),
     dict(epsilon=0.1, eps0=0.25, n=10_000), dict(epsilon=P.EPSILON, eps0=P.EPS0_POSITIVE, n=P.N_CLOSED)),
    ("fmt_validity_bound", lambda n, delta: S.fmt_validity_bound(n=n, delta=delta),
     dict(n=100_000, delta=1e-6), dict(n=P.N_CLOSED, delta=P.DELTA)),
    ("clones_epsilon", lambda eps0, n, delta: S.clones_epsilon(eps0, n, delta),
     dict(eps0=2.0, n=10_000, delta=1e-6), dict(eps0=P.EPS0, n=P.N, delta=P.DELTA)),
    ("clones_delta", lambda epsilon, eps0, n: S.clones_delta(epsilon, eps0=eps0, n=n),
     dict(epsilon=0.3, eps0=2.0, n=10_000), dict(epsilon=P.EPSILON, eps0=P.EPS0, n=P.N)),
    ("generic_randomizer", lambda eps0: S.generic_randomizer(eps0), dict(eps0=1.0), dict(eps0=P.EPS0)),
    ("laplace_randomizer", lambda eps0: S.laplace_randomizer(eps0), dict(eps0=1.0), dict(eps0=P.EPS0_POSITIVE)),
    ("randomized_response", lambda eps0, k: S.randomized_response(eps0, k=k), dict(eps0=1.0, k=4),
     dict(eps0=P.EPS0, k=P.K)),
    ("blanket_delta", lambda epsilon, n, dummies: S.blanket_delta(epsilon, n=n, randomizer=_GEN, dummies=dummies),
     dict(epsilon=0.5, n=1000, dummies=3), dict(epsilon=P.EPSILON, n=P.N, dummies=P.DUMMIES)),
    ("blanket_epsilon", lambda delta, n, dummies: S.blanket_epsilon(delta, n=n, randomizer=_GEN, dummies=dummies),
     dict(delta=1e-6, n=1000, dummies=3), dict(delta=P.DELTA, n=P.N, dummies=P.DUMMIES)),
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


#: Registry parameters whose domain is a stated narrowing of the function's Param (see _params.py):
#: (bound id, name) -> the function's Param
NARROWER = {
    ("shuffle.blanket", "delta"): P.DELTA,  # inversion over n needs delta >= 1e-15 (BLANKET_DELTA)
    # the registry's eps0 is a log-scaled knob and a search parameter (and the blanket's randomizer may be the
    # Laplace one): eps0 > 0 (EPS0_POSITIVE); the functions also take eps0 = 0
    **{(bid, "eps0"): P.EPS0 for bid in ("shuffle.erlingsson", "shuffle.fmt-closed-form", "shuffle.clones",
                                          "shuffle.clones-delta", "shuffle.blanket", "shuffle.blanket-delta")},
}


def test_registry_declares_the_functions_params():
    """Each shuffle bound's numeric parameter has the domain of the Param its function validates with (the same
    object), or one of the stated narrowings, contained in it."""
    params = {p.name: p for _, _, _, ps in CASES for p in ps.values()}
    funcs = {"shuffle.erlingsson": "erlingsson_epsilon", "shuffle.erlingsson-delta": "erlingsson_delta",
             "shuffle.fmt-closed-form": "fmt_closed_form_epsilon", "shuffle.clones": "clones_epsilon",
             "shuffle.clones-delta": "clones_delta", "shuffle.blanket": "blanket_epsilon",
             "shuffle.blanket-delta": "blanket_delta"}
    by_label = {label: ps for label, _, _, ps in CASES}
    assert {b.id for b in bounds.list("shuffle")} == set(funcs)
    seen = 0
    for bid, label in funcs.items():
        fn_params = {**by_label[label], **({"eps0": P.EPS0, "k": P.K} if "blanket" in bid else {})}
        for p in bounds.get(bid).params:
            if not p.domain.numeric:
                continue
            assert p.name in params and p.name in fn_params, (bid, p.name)
            want = fn_params[p.name]
            if (bid, p.name) in NARROWER:
                d, w = p.domain, NARROWER[(bid, p.name)].domain
                assert d != w and d.lo >= w.lo and d.hi <= w.hi, (bid, p.name)
                declared = [q.domain for q in vars(P).values() if hasattr(q, "domain")]
                assert any(d is q for q in declared), (bid, p.name)  # the narrowing is one of _params.py's
            else:
                assert p.domain is want.domain, (bid, p.name, p.domain, want.domain)
            seen += 1
    assert seen >= 20


def test_check_params_broadcasts_and_names():
    eps0, n = check_params((P.EPS0, P.N), eps0=[1.0, 2.0], n=[[10], [20]])
    assert eps0.shape == n.shape == (2, 2) and eps0.dtype == n.dtype == np.float64
    eps0, n = check_params((P.EPS0, P.N), broadcast=False, eps0=[1.0, 2.0], n=[[10], [20]])
    assert eps0.shape == (2,) and n.shape == (2, 1)
    with pytest.raises(ValueError, match="eps0=800.0"):
        check_params((P.EPS0,), eps0=800.0)
    with pytest.raises(ValueError, match="broadcast"):
        check_params((P.EPS0, P.N), eps0=[1.0, 2.0], n=[10, 20, 30])
    with pytest.raises(TypeError):
        check_params((P.EPS0,), k=3)
    assert isinstance(P.EPS0.domain, Real)


def test_fmt_validity_bound_finite_down_to_the_smallest_delta():
    """4 / delta overflowed at delta = 5e-324 (the bound was -inf); ln 4 - ln delta there (checked with mpmath's
    ln(n / (16 ln(4 / delta))))."""
    import mpmath as mp

    for delta in (5e-324, 1e-310, 1e-300, 1e-6):
        got = float(S.fmt_validity_bound(n=1e12, delta=delta))
        with mp.workdps(40):
            ref = float(mp.log(mp.mpf(10) ** 12 / (16 * mp.log(4 / mp.mpf(delta)))))
        assert math.isfinite(got) and abs(got - ref) <= 1e-14 * max(1.0, abs(ref)), (delta, got, ref)
