"""Issue 29, item 2: the accounting layer's parameters are stated once (``amplify_jax/accounting/_params.py``); the
public functions of ``rdp`` and ``conversions`` refuse exactly what their Params refuse (plus the stated joint
checks: noise / sensitivity in ``SIGMA_RANGE`` / ``LAPLACE_RANGE``), with a one-line ValueError naming the parameter
and the value; the registry's bounds declare the same Param objects (or a stated narrowing of them), and their
kernels run the functions' computations without checking again.

The computations are replaced by a stub that raises :class:`_params_probe.Accepted`: what is tested is the
boundary, and no program is compiled (the values themselves are test_rdp.py's and test_conversions.py's)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from amplify_jax import bounds
from amplify_jax._core.domains import Real
from amplify_jax.accounting import _bounds as B, _params as P, calibrate as K, conversions as C, rdp as R
from amplify_jax.accounting import _rdp_curves as RC  # where rdp's computations live (stubbed below)
from _params_probe import Accepted, param_refuses as _param_refuses, probes as _probes, stub as _stub
from _params_probe import function_refuses as _function_refuses

# the probes one ulp above the largest float64 are inf (NumPy warns)
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in nextafter:RuntimeWarning")


@pytest.fixture(autouse=True)
def no_kernels(monkeypatch):
    for mod, name in [(RC, "_gaussian_curve"), (RC, "_laplace_curve"), (RC, "_randomized_response_curve"),
                      (RC, "_poisson_subsampled_gaussian_curve"), (RC, "_subsampled_gaussian_wor_curve"),
                      (RC, "_wor_kernel"), (RC, "_interpolate_integer_host"), (C, "_epsilon_from_rdp"),
                      (C, "_grid_delta"), (C, "_optimal_epsilon"), (C, "_randomized_response_curve"),
                      (K, "_invert_jit"), (K, "_host_start"), (K, "_invert_implicit_jit")]:
        monkeypatch.setattr(mod, name, _stub)


O = [2.0, 8.0]


def _curve(v, n=2):
    """A value probed as an RDP curve: the value at every one of n orders (a trailing axis)."""
    return np.asarray(v, dtype=np.float64)[..., None] * np.ones(n)


def _ratio_outside(lo, hi):
    """Whether noise / sensitivity leaves [lo, hi] (the joint check), for a probed noise at sensitivity 1 ..."""
    return lambda v: not (lo <= v <= hi)


def _inverse_outside(lo, hi):
    """... or for a probed sensitivity at noise 1 (a zero sensitivity is not checked: RDP 0)."""
    return lambda v: v > 0 and not (lo <= 1.0 / v <= hi)


_SIG, _LAP = P.SIGMA_RANGE, P.LAPLACE_RANGE

#: (label, call(**values), base values, {parameter: its Param}, {parameter: refused jointly at the base values})
CASES = [
    ("gaussian_rdp:sigma", lambda sigma, sensitivity: R.gaussian_rdp(O, sigma=sigma, sensitivity=sensitivity),
     dict(sigma=1.0, sensitivity=0.0), dict(sigma=P.NOISE_SIGMA), {}),
    ("gaussian_rdp:sensitivity", lambda sigma, sensitivity: R.gaussian_rdp(O, sigma=sigma, sensitivity=sensitivity),
     dict(sigma=1.0, sensitivity=1.0), dict(sensitivity=P.ANY_SENSITIVITY),
     dict(sensitivity=_inverse_outside(*_SIG))),
    ("laplace_rdp", lambda scale, sensitivity: R.laplace_rdp(O, scale=scale, sensitivity=sensitivity),
     dict(scale=1.0, sensitivity=1.0), dict(scale=P.LAPLACE_SCALE, sensitivity=P.SENSITIVITY),
     dict(scale=_ratio_outside(*_LAP), sensitivity=_inverse_outside(*_LAP))),
    ("randomized_response_rdp", lambda eps0, k: R.randomized_response_rdp(O, eps0=eps0, k=k),
     dict(eps0=1.0, k=3), dict(eps0=P.RR_EPS0, k=P.RR_K), {}),
    ("pure_dp_rdp", lambda eps0: R.pure_dp_rdp(O, eps0=eps0), dict(eps0=1.0), dict(eps0=P.RR_EPS0), {}),
    ("poisson_subsampled_gaussian_rdp", lambda q, sigma: R.poisson_subsampled_gaussian_rdp(O, q=q, sigma=sigma),
     dict(q=0.01, sigma=1.0), dict(q=P.Q, sigma=P.CURVE_SIGMA), {}),
    ("subsampled_gaussian_wor_rdp", lambda q, sigma, sensitivity: R.subsampled_gaussian_wor_rdp(
        [2.0, 3.5], q=q, sigma=sigma, sensitivity=sensitivity),
     dict(q=0.01, sigma=1.0, sensitivity=1.0), dict(q=P.Q, sigma=P.NOISE_SIGMA, sensitivity=P.SENSITIVITY),
     dict(sigma=_ratio_outside(*_SIG), sensitivity=_inverse_outside(*_SIG))),
    ("without_replacement_rdp", lambda base_rdp, q, base_rdp_inf: R.without_replacement_rdp(
        _curve(base_rdp), q=q, base_rdp_inf=base_rdp_inf),
     dict(base_rdp=0.5, q=0.1, base_rdp_inf=2.0), dict(base_rdp=P.BASE_RDP, q=P.Q, base_rdp_inf=P.BASE_RDP_INF), {}),
    ("interpolate_integer_rdp", lambda integer_rdp: R.interpolate_integer_rdp([1.5, 3.0], _curve(integer_rdp)),
     dict(integer_rdp=0.5), dict(integer_rdp=P.INTEGER_RDP), {}),
    ("epsilon_from_rdp", lambda rdp, delta: C.epsilon_from_rdp(O, _curve(rdp), delta=delta),
     dict(rdp=0.5, delta=1e-5), dict(rdp=P.RDP, delta=P.DELTA), {}),
    ("delta_from_rdp", lambda rdp, epsilon: C.delta_from_rdp(O, _curve(rdp), epsilon=epsilon),
     dict(rdp=0.5, epsilon=1.0), dict(rdp=P.RDP, epsilon=P.EPSILON), {}),
    ("optimal_epsilon", lambda delta: C.optimal_epsilon(_stub, delta=delta), dict(delta=1e-5), dict(delta=P.DELTA),
     {}),
    ("dp_to_rdp", lambda eps, delta: C.dp_to_rdp(O, eps=eps, delta=delta), dict(eps=1.0, delta=1e-6),
     dict(eps=P.DP_EPS, delta=P.DP_DELTA), {}),
    # the inversions: lo < hi is the joint check
    ("invert_monotone", lambda target, lo, hi, rtol: K.invert_monotone(_stub, target, lo=lo, hi=hi, rtol=rtol),
     dict(target=1.0, lo=0.5, hi=2.0, rtol=1e-6), dict(target=P.TARGET, lo=P.LO, hi=P.HI, rtol=P.RTOL),
     dict(lo=lambda v: v >= 2.0, hi=lambda v: v <= 0.5)),
    ("invert_monotone:integer", lambda lo, hi: K.invert_monotone(_stub, 1.0, lo=lo, hi=hi, integer=True),
     dict(lo=1, hi=100), dict(lo=P.INTEGER_LO, hi=P.INTEGER_HI), dict(lo=lambda v: v >= 100, hi=lambda v: v <= 1)),
    ("invert_monotone_host", lambda target, rtol: K.invert_monotone_host(_stub, target, lo=1.0, hi=2.0, rtol=rtol),
     dict(target=1.0, rtol=1e-6), dict(target=P.TARGET, rtol=P.RTOL), {}),
    ("invert_monotone_differentiable", lambda lo: K.invert_monotone_differentiable(_stub, 1.0, lo=lo, hi=2.0),
     dict(lo=0.5), dict(lo=P.LO), dict(lo=lambda v: v >= 2.0)),
]


def _cases():
    for label, call, base, params, joint in CASES:
        for name, param in params.items():
            yield pytest.param(call, base, name, param, joint.get(name), id=f"{label}:{name}")


def _expected(param, joint, v) -> bool:
    return _param_refuses(param, v) or (joint is not None and joint(float(v)))


@pytest.mark.parametrize("call,base,name,param,joint", list(_cases()))
def test_function_refuses_exactly_what_its_param_refuses(call, base, name, param, joint):
    assert not _function_refuses(call, base, name, base[name], answered_is_accepted=False)  # the base is valid
    for v in _probes(param.domain):
        assert _function_refuses(call, base, name, v, answered_is_accepted=False) == _expected(param, joint, v), \
            (name, v)
    # an array: refused as a whole where one element is (the message giving the element), accepted where none is
    assert _function_refuses(call, base, name, np.array([base[name], math.nan]))
    assert not _function_refuses(call, base, name, np.array([base[name], base[name]]), answered_is_accepted=False)


@given(case=st.sampled_from(range(len(CASES))), data=st.data(),
       value=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**10).map(float),
                       st.floats(-1.0, 2.0)))
def test_hypothesis_function_and_param_agree(case, data, value):
    label, call, base, params, joint = CASES[case]
    name = data.draw(st.sampled_from(sorted(params)))
    got = _function_refuses(call, base, name, value, answered_is_accepted=False)
    assert got == _expected(params[name], joint.get(name), value), (label, name, value)


#: (label, call(orders), the Param its orders are checked by)
ORDER_CASES = [
    ("gaussian_rdp", lambda o: R.gaussian_rdp(o, sigma=1.0), P.ORDERS),
    ("laplace_rdp", lambda o: R.laplace_rdp(o, scale=1.0), P.ORDERS),
    ("randomized_response_rdp", lambda o: R.randomized_response_rdp(o, eps0=1.0), P.ORDERS),
    ("poisson_subsampled_gaussian_rdp", lambda o: R.poisson_subsampled_gaussian_rdp(o, q=0.1, sigma=1.0), P.ORDERS),
    ("subsampled_gaussian_wor_rdp", lambda o: R.subsampled_gaussian_wor_rdp(o, q=0.1, sigma=1.0),
     P.WOR_CURVE_ORDERS),
    ("interpolate_integer_rdp", lambda o: R.interpolate_integer_rdp(o, np.ones(2 * 10**6)), P.ORDERS),
    ("epsilon_from_rdp", lambda o: C.epsilon_from_rdp(o, np.ones(np.size(o)), delta=1e-5), P.ANY_ORDERS),
    ("delta_from_rdp", lambda o: C.delta_from_rdp(o, np.ones(np.size(o)), epsilon=1.0), P.ANY_ORDERS),
    ("optimal_epsilon", lambda o: C.optimal_epsilon(_stub, delta=1e-5, orders=o), P.ANY_ORDERS),
    ("dp_to_rdp", lambda o: C.dp_to_rdp(o, eps=1.0), P.ORDERS),
]


@pytest.mark.parametrize("call,param", [pytest.param(c, p, id=label) for label, c, p in ORDER_CASES])
def test_orders_refused_exactly_as_their_param(call, param):
    hi = float(param.domain.hi)
    with np.errstate(over="ignore"):
        above = np.nextafter(hi, math.inf)  # inf above the largest float64
    for o in ([2.0], [1.5, 3.0], [1.0], [0.5, 2.0], [math.nan], [math.inf], [hi], [above],
              [2.0, np.nextafter(1.0, 2.0)]):
        refused = _param_refuses(param, o)
        assert _function_refuses(lambda orders: call(orders), {}, "orders", o, answered_is_accepted=False) \
            == refused, o
    for o in ([[2.0, 3.0]], []):  # not a 1-D list: the message gives the shape
        assert _param_refuses(param, o)
        with pytest.raises(ValueError, match="Expected orders to be a .*non-empty"):
            call(o)


def test_compose_checks_curves_and_steps_by_their_params():
    c = np.full((2, 2), 0.5)
    ok = R.compose([c, c], steps=[3, 2])
    np.testing.assert_array_equal(np.asarray(ok), 2.5)
    for steps, bad in [([3, -1], True), ([3, 1.5], True), ([3, 2.0**53], False), ([3, 2.0**53 + 2], True),
                       ([3, math.nan], True), ([0, 1], False)]:
        assert _param_refuses(P.ANY_STEPS, steps[1]) == bad
        if bad:
            with pytest.raises(ValueError, match=r"steps\[1\]=") as exc:
                R.compose([c, c], steps=steps)
            assert "\n" not in str(exc.value)
        else:
            R.compose([c, c], steps=steps)
    for v in (-1.0, math.nan, math.inf):
        assert _param_refuses(P.CURVES, v)
        with pytest.raises(ValueError, match=r"curves\[1\]="):
            R.compose([c, np.full((2, 2), v)], steps=1)


def test_max_iter_refused_by_its_param():
    for v in (1, 200, 10**6, 0, 10**6 + 1, 1.5, math.nan):
        refused = _param_refuses(P.MAX_ITER, v)
        assert _function_refuses(lambda max_iter: K.invert_monotone(_stub, 1.0, lo=1.0, hi=2.0, max_iter=max_iter),
                                 {}, "max_iter", v, answered_is_accepted=False) == refused, v
    with pytest.raises(ValueError, match="Expected max_iter to be a single number"):
        K.invert_monotone(_stub, 1.0, lo=1.0, hi=2.0, max_iter=[3, 4])


def test_search_options_refused_by_their_params():
    for name, param, good in (("feasible", P.FEASIBLE, "below"), ("method", P.SEARCH_METHOD, "illinois")):
        with pytest.raises(ValueError, match=f"{name}='sideways'"):
            K.invert_monotone(_stub, 1.0, lo=1.0, hi=2.0, **{name: "sideways"})
        with pytest.raises(Accepted):
            K.invert_monotone(_stub, 1.0, lo=1.0, hi=2.0, **{name: good})
        assert _param_refuses(param, "sideways") and not _param_refuses(param, good)


def test_method_refused_by_its_param():
    for call in (lambda m: C.epsilon_from_rdp(O, np.ones(2), delta=1e-5, method=m),
                 lambda m: C.delta_from_rdp(O, np.ones(2), epsilon=1.0, method=m),
                 lambda m: C.optimal_epsilon(_stub, delta=1e-5, method=m)):
        with pytest.raises(ValueError, match="method='renyi'"):
            call("renyi")
        with pytest.raises(Accepted):
            call("mironov")
    assert C.METHODS == P.METHOD.domain.values


#: The function Param of each registry parameter of this layer's RDP-accountant bounds, at sensitivity 1 (where
#: noise / sensitivity is the noise: its joint range is then its domain)
_AT_SENSITIVITY_1 = {"sigma": Real(*P.SIGMA_RANGE), "scale": Real(*P.LAPLACE_RANGE)}
FUNCTION_PARAMS = {
    "rdp.gaussian": dict(orders=P.ORDERS, steps=P.ANY_STEPS),
    "rdp.laplace": dict(orders=P.ORDERS, steps=P.ANY_STEPS),
    "rdp.poisson-subsampled-gaussian": dict(orders=P.ORDERS, q=P.Q, sigma=P.CURVE_SIGMA, steps=P.ANY_STEPS),
    "rdp.randomized-response": dict(orders=P.ORDERS, eps0=P.RR_EPS0, k=P.RR_K, steps=P.ANY_STEPS),
    "rdp.wor-subsampled-gaussian": dict(orders=P.WOR_CURVE_ORDERS, q=P.Q),
    "gaussian": dict(steps=P.ANY_STEPS, delta=P.DELTA),
    "laplace": dict(steps=P.ANY_STEPS, delta=P.DELTA),
    "randomized-response": dict(eps0=P.RR_EPS0, k=P.RR_K, steps=P.ANY_STEPS, delta=P.DELTA),
}


def test_registry_declares_params_of_accounting_params_inside_the_functions():
    """Each bound's parameter is one of _params.py's Params (the same object), its domain inside the function's
    (the registry's are search ranges: stated narrowings)."""
    declared = [q for q in vars(P).values() if hasattr(q, "domain")]
    seen = 0
    for bid, fn_params in FUNCTION_PARAMS.items():
        for p in bounds.get(bid).params:
            assert any(p is q for q in declared), (bid, p.name)
            if not p.domain.numeric and p.name != "orders":
                continue
            want = fn_params.get(p.name)
            d, w = p.domain, (want.domain if want is not None else _AT_SENSITIVITY_1[p.name])
            if p.name == "orders":
                assert d.hi <= w.hi and (d.integer or not w.integer), bid
            else:
                assert w.lo <= d.lo and d.hi <= w.hi, (bid, p.name, d, w)
            seen += 1
    assert seen >= 20


def test_registry_kernels_do_not_check_again(monkeypatch):
    """The rdp.* / gaussian / laplace / randomized-response kernels reach the computations (stubbed) without the
    functions' checks (made to fail here)."""
    monkeypatch.setenv("AMPLIFY_JAX_HOST", "off")  # the host path would run its own (unstubbed) copy

    def fail(*args, **kwargs):
        raise AssertionError("checked again")

    for mod in (RC, C):
        monkeypatch.setattr(mod, "check_params", fail)
    monkeypatch.setattr(P, "check_orders", fail)
    for bid in FUNCTION_PARAMS:
        with pytest.raises(Accepted):
            bounds.evaluate(bid, **bounds.get(bid).example)
    assert B.ORDERS is P.ORDERS and B.SIGMA is P.SIGMA and B.K is P.K
