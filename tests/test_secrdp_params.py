"""Issue 29, item 2: each secrdp parameter's domain is stated once (``amplify_jax/secrdp/_params.py``), and the
public secrdp functions refuse exactly what their Param refuses, with a one-line ValueError naming the parameter
and the value; the registry's bounds declare the Params of _params.py (the functions' wider domains or the
registry's search ranges, both stated there).

The accountant and the searches are replaced by a stub that raises :class:`_params_probe.Accepted` (after the
boundary's checks): what is tested is the boundary, and no program is compiled (the values themselves are
tests/test_secrdp.py's business)."""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from amplify_jax import bounds
from amplify_jax import secrdp as S
from amplify_jax._core import graphs
from amplify_jax.secrdp import _calibration, _params as P, _step, _utility
from _params_probe import function_refuses as _function_refuses, param_refuses as _param_refuses
from _params_probe import probes as _probes, stub as _stub

RING = S.prepare_graph(graphs.from_spec("ring:8"))


@pytest.fixture(autouse=True)
def no_kernels(monkeypatch):
    for mod, name in [(_step, "_check_connectivity"), (_step, "algebraic_connectivity"),
                      (_calibration, "_check_connectivity"), (_calibration, "invert_monotone"),
                      (_calibration, "_subsampled_curve")]:
        monkeypatch.setattr(mod, name, _stub)


_NOISE = dict(sigma_unc=1.0, sigma_cor=2.0, clip=1.0)
_NOISE_P = dict(sigma_unc=P.ACCOUNTANT_SIGMA_UNC, sigma_cor=P.ACCOUNTANT_SIGMA_COR, clip=P.ACCOUNTANT_CLIP)
_EX = dict(batch_size=32.0, q=0.01, steps=10)
_EX_P = dict(batch_size=P.ANY_BATCH, q=P.ANY_Q, steps=P.ANY_STEPS)

_TARGET = dict(clip=1.0, target_epsilon=1.0, delta=1e-5, steps=10)
_TARGET_P = dict(clip=P.ACCOUNTANT_CLIP, target_epsilon=P.TARGET_EPSILON, delta=P.DELTA, steps=P.ANY_STEPS)


def _frontier_extra(name, value, base) -> bool:
    """noise_frontier's joint condition: its sigma_unc run, from sigma_ldp / sqrt(n_H) to sigma_ldp = C sqrt(2 /
    eps1) (eps1 the closed form's budget), lies in the accountant's SIGMA_UNC_RANGE (n_H = 8: ring:8, adversary I)."""
    kw = {**base, name: value}
    try:
        budget = float(S.closed_form_eps1(kw["target_epsilon"], steps=kw["steps"], delta=kw["delta"]))
        ldp = float(kw["clip"]) * math.sqrt(2.0 / budget)
    except (ValueError, TypeError):  # refused by a Param anyway
        return False
    return not (S.SIGMA_UNC_RANGE[0] <= ldp / math.sqrt(8) and ldp <= S.SIGMA_UNC_RANGE[1])


#: (label, call(**values), base values, {parameter: its Param}, extra refusals of a joint condition or None): the
#: public secrdp functions of __all__ that take one of the family's numeric parameters
CASES = [
    ("step_account", lambda **kw: S.step_account(RING, adversary="eavesdropper", **kw), dict(_NOISE), _NOISE_P,
     None),
    ("step_rdp", lambda **kw: S.step_rdp([2.0, 8.0], RING, adversary="eavesdropper", **kw), dict(_NOISE),
     _NOISE_P, None),
    ("spectral_bound", lambda **kw: S.spectral_bound(RING, adversary="eavesdropper", **kw), dict(_NOISE),
     _NOISE_P, None),
    ("epsilon", lambda **kw: S.epsilon(RING, adversary="eavesdropper", **kw),
     dict(_NOISE, steps=10, delta=1e-5), dict(_NOISE_P, steps=P.ANY_STEPS, delta=P.DELTA), None),
    ("closed_form_epsilon", lambda eps1, **kw: S.closed_form_epsilon(eps1, **kw),
     dict(eps1=0.01, steps=10, delta=1e-5), dict(eps1=P.ANY_EPS1, steps=P.ANY_STEPS, delta=P.DELTA), None),
    ("closed_form_eps1", lambda target_epsilon, **kw: S.closed_form_eps1(target_epsilon, **kw),
     dict(target_epsilon=1.0, steps=10, delta=1e-5),
     dict(target_epsilon=P.TARGET_EPSILON, steps=P.ANY_STEPS, delta=P.DELTA), None),
    ("calibrate_eps1", lambda target_epsilon, **kw: S.calibrate_eps1(target_epsilon, method="balle2020", **kw),
     dict(target_epsilon=1.0, steps=10, delta=1e-5),
     dict(target_epsilon=P.TARGET_EPSILON, steps=P.ANY_STEPS, delta=P.DELTA), None),
    ("calibrate_sigma_cor", lambda **kw: S.calibrate_sigma_cor(RING, **kw),
     dict(sigma_unc=1.0, clip=1.0, target_epsilon=1.0, delta=1e-5, steps=10),
     dict(sigma_unc=P.ACCOUNTANT_SIGMA_UNC, clip=P.ACCOUNTANT_CLIP, target_epsilon=P.TARGET_EPSILON,
          delta=P.DELTA, steps=P.ANY_STEPS), None),
    ("example_level_rdp", lambda **kw: S.example_level_rdp([2.0, 8.0], RING, **kw), dict(_NOISE, **_EX),
     dict(_NOISE_P, **_EX_P), None),
    ("example_level_epsilon", lambda **kw: S.example_level_epsilon(RING, **kw), dict(_NOISE, delta=1e-5, **_EX),
     dict(_NOISE_P, delta=P.DELTA, **_EX_P), None),
    ("example_level_calibrate_eps1", lambda target_epsilon, **kw: S.example_level_calibrate_eps1(
        target_epsilon, **kw), dict(target_epsilon=1.0, delta=1e-5, **_EX),
     dict(target_epsilon=P.TARGET_EPSILON, delta=P.DELTA, **_EX_P), None),
    ("example_level_calibrate_sigma_cor", lambda **kw: S.example_level_calibrate_sigma_cor(RING, **kw),
     dict(sigma_unc=1.0, clip=1.0, target_epsilon=1.0, delta=1e-5, **_EX),
     dict(sigma_unc=P.ACCOUNTANT_SIGMA_UNC, clip=P.ACCOUNTANT_CLIP, target_epsilon=P.TARGET_EPSILON,
          delta=P.DELTA, **_EX_P), None),
    ("baselines", lambda **kw: S.baselines(**kw), dict(_TARGET, n=16), dict(_TARGET_P, n=P.N_USERS), None),
    ("noise_frontier", lambda **kw: S.noise_frontier(RING, num=4, **kw), dict(_TARGET), dict(_TARGET_P),
     _frontier_extra),
    ("optimal_noise", lambda **kw: S.optimal_noise(RING, num=4, iterations=1, **kw), dict(_TARGET, kappa=2.0),
     dict(_TARGET_P, kappa=P.KAPPA), _frontier_extra),
]

#: scalar-only parameters (one bisection per call): an array is refused whatever it holds
SCALAR_ONLY = {("example_level_calibrate_eps1", n) for n in ("target_epsilon", "delta", "steps", "batch_size", "q")}
SCALAR_ONLY |= {("example_level_calibrate_sigma_cor", n) for n in ("target_epsilon", "delta", "steps",
                                                                   "batch_size", "q")}
SCALAR_ONLY |= {(label, n) for label in ("noise_frontier", "optimal_noise") for n in _TARGET}  # one frontier a call
SCALAR_ONLY |= {("optimal_noise", "kappa")}


def _expected(param, extra, base, name, value) -> bool:
    return _param_refuses(param, value) or bool(extra and extra(name, value, base))


def _cases():
    for label, call, base, params, extra in CASES:
        for name, param in params.items():
            yield pytest.param(label, call, base, name, param, extra, id=f"{label}:{name}")


@pytest.mark.parametrize("label,call,base,name,param,extra", list(_cases()))
def test_function_refuses_exactly_what_its_param_refuses(label, call, base, name, param, extra):
    assert not _function_refuses(call, base, name, base[name])  # the base point is valid
    for v in _probes(param.domain):
        assert _function_refuses(call, base, name, v) == _expected(param, extra, base, name, v), (name, v)
    if (label, name) in SCALAR_ONLY:
        with pytest.raises(ValueError, match=f"{name} to be a single number"):
            call(**{**base, name: np.array([base[name], base[name]])})
        return
    # an array: refused as a whole where one element is
    good, bad = float(param.domain.lo), float(param.domain.hi) * 2.0 + 1.0
    if _param_refuses(param, good):  # an open end
        good = float(base[name])
    assert not _function_refuses(call, base, name, np.array([good, float(base[name])]))
    assert _function_refuses(call, base, name, np.array([good, bad]))


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(range(len(CASES))), data=st.data(),
       value=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**8).map(float),
                       st.floats(-1.0, 2.0)))
def test_hypothesis_function_and_param_agree(case, data, value):
    label, call, base, params, extra = CASES[case]
    name = data.draw(st.sampled_from(sorted(params)))
    assert _function_refuses(call, base, name, value) == _expected(params[name], extra, base, name, value), \
        (label, name, value)


#: The registry's domains that differ from the function's Param (its search ranges), each a Param of _params.py:
#: name -> (the registry's Param, the function's Param)
DIFFERENT = {
    "sigma_unc": (P.SIGMA_UNC, P.ACCOUNTANT_SIGMA_UNC), "sigma_cor": (P.SIGMA_COR, P.ACCOUNTANT_SIGMA_COR),
    "clip": (P.CLIP, P.ACCOUNTANT_CLIP), "steps": (P.STEPS, P.ANY_STEPS), "eps1": (P.EPS1, P.ANY_EPS1),
    "batch_size": (P.BATCH, P.ANY_BATCH), "q": (P.Q, P.ANY_Q),
}


def test_registry_declares_the_params_of_params_py():
    """Each secrdp bound's parameter is a Param of _params.py, and each numeric one's domain is the function's
    own (delta, colluders) or the registry's stated search range, which lies inside the function's domain (every
    value the registry takes, the function takes)."""
    declared = [q.domain for q in vars(P).values() if hasattr(q, "domain")]
    params = [q for q in vars(P).values() if isinstance(q, bounds.Param)]
    seen = 0
    for b in bounds.list("secrdp"):
        for p in b.params:
            assert any(p is q for q in params), (b.id, p.name)  # every Param, numeric or not, one of _params.py
            if not p.domain.numeric:
                continue
            assert any(p.domain is d for d in declared), (b.id, p.name)
            if p.name in DIFFERENT:
                reg, fn = DIFFERENT[p.name]
                assert p.domain is reg.domain, (b.id, p.name)
                assert fn.domain.lo <= reg.domain.lo and reg.domain.hi <= fn.domain.hi, p.name
            seen += 1
    assert seen >= 40


def _closed_form_mp(eps1, steps, delta):
    with mpmath.workdps(40):
        x = mpmath.mpf(steps) * mpmath.mpf(eps1)
        return x + 2 * mpmath.sqrt(x * mpmath.log(1 / mpmath.mpf(delta)))


@settings(max_examples=300, deadline=None)
@given(eps1=st.floats(1e-300, 1e6), steps=st.integers(1, 2**53), delta=st.floats(1e-300, 1.0, exclude_max=True))
def test_closed_form_epsilon_never_below_mpmath(eps1, steps, delta):
    """Rounded to the safe side: at or above the formula's exact value (mpmath, 40 digits), within 1e-14 of it
    (delta near 1 included, where ln(1/delta) is tiny and 1/delta's rounding used to dominate)."""
    got = float(S.closed_form_epsilon(eps1, steps=steps, delta=delta))
    ref = _closed_form_mp(eps1, steps, delta)
    assert got >= ref and got <= ref * (1 + 1e-14)


def _closed_form_eps1_mp(eps, steps, delta):
    """(sqrt(ln(1/delta) + eps) - sqrt(ln(1/delta)))^2 / T as written (App. D.1): 400 digits outlast the
    cancellation at eps = 1e-140."""
    with mpmath.workdps(400):
        ld = mpmath.log(1 / mpmath.mpf(delta))
        return (mpmath.sqrt(ld + mpmath.mpf(eps)) - mpmath.sqrt(ld)) ** 2 / steps


def test_closed_forms_finite_at_the_domains_corners():
    """The domain ends of eps1, target_epsilon and delta are where the closed forms stay finite in float64: at
    the corners (eps1 = 1e289 or target_epsilon = 1e-140 with T = 2**53 and delta = 1e-300, target_epsilon =
    1e289 with T = 1) the values are finite, without an overflow warning, and agree with mpmath (the budget never
    above it: rounded down); beyond them they were +inf, 0 or NaN (eps1 = 1.8e308, delta = 5e-324)."""
    T, t_hi = P.ANY_STEPS.domain.hi, float(P.ANY_STEPS.domain.hi)
    e1_hi, d_lo = P.ANY_EPS1.domain.hi, P.DELTA.domain.lo
    te_lo, te_hi = P.TARGET_EPSILON.domain.lo, P.TARGET_EPSILON.domain.hi
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for eps1, steps, delta in [(e1_hi, T, d_lo), (e1_hi, T, 0.5), (0.0, T, d_lo), (1e-3, 1, d_lo)]:
            got = float(S.closed_form_epsilon(eps1, steps=steps, delta=delta))
            assert math.isfinite(got) and got == pytest.approx(float(_closed_form_mp(eps1, steps, delta)), rel=1e-13)
        for eps, steps, delta in [(te_lo, T, d_lo), (te_lo, 1, 0.5), (te_hi, 1, d_lo), (te_hi, T, np.nextafter(1, 0)),
                                  (1.0, t_hi, d_lo)]:
            got = float(S.closed_form_eps1(eps, steps=steps, delta=delta))
            ref = _closed_form_eps1_mp(eps, steps, delta)
            assert 1e-300 <= got <= e1_hi and got <= ref and got == pytest.approx(float(ref), rel=1e-11)
        b = S.baselines(np.array([1, T]), clip=np.array([[P.ACCOUNTANT_CLIP.domain.lo], [P.ACCOUNTANT_CLIP.domain.hi]]),
                        target_epsilon=np.array([[[te_lo]], [[te_hi]]]), delta=d_lo, steps=T)
        assert np.all(np.isfinite(np.asarray(b.sigma_ldp))) and np.all(np.asarray(b.sigma_cdp) > 0)
    # the derivation: eps1 = 10 x the end would overflow T eps1 ln(1/delta) (so the end is within 10x of the limit)
    assert t_hi * e1_hi * math.log(1 / d_lo) < P.FLOAT_MAX < t_hi * 10 * e1_hi * math.log(1 / d_lo)
    assert te_lo ** 2 / (t_hi * 4 * (math.log(1 / d_lo) + 1)) >= 1e-300 > (te_lo / 10) ** 2 / (t_hi * 4 * 691.8)
