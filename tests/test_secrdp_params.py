"""Issue 29, item 2: each secrdp parameter's domain is stated once (``amplify_jax/secrdp/_params.py``), and the
public secrdp functions refuse exactly what their Param refuses, with a one-line ValueError naming the parameter
and the value; the registry's bounds declare the Params of _params.py (the functions' wider domains or the
registry's search ranges, both stated there).

The accountant and the searches are replaced by a stub that raises :class:`_params_probe.Accepted` (after the
boundary's checks): what is tested is the boundary, and no program is compiled (the values themselves are
tests/test_secrdp.py's business)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from amplify_jax import bounds
from amplify_jax import secrdp as S
from amplify_jax._core import graphs
from amplify_jax.secrdp import _calibration, _params as P, _step
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

#: (label, call(**values), base values, {parameter: its Param}): the public secrdp functions of __all__ that take
#: one of the family's numeric parameters (noise_frontier, baselines and optimal_noise: not yet, see _params.py)
CASES = [
    ("step_account", lambda **kw: S.step_account(RING, adversary="eavesdropper", **kw), dict(_NOISE), _NOISE_P),
    ("step_rdp", lambda **kw: S.step_rdp([2.0, 8.0], RING, adversary="eavesdropper", **kw), dict(_NOISE),
     _NOISE_P),
    ("spectral_bound", lambda **kw: S.spectral_bound(RING, adversary="eavesdropper", **kw), dict(_NOISE),
     _NOISE_P),
    ("epsilon", lambda **kw: S.epsilon(RING, adversary="eavesdropper", **kw),
     dict(_NOISE, steps=10, delta=1e-5), dict(_NOISE_P, steps=P.ANY_STEPS, delta=P.DELTA)),
    ("closed_form_epsilon", lambda eps1, **kw: S.closed_form_epsilon(eps1, **kw),
     dict(eps1=0.01, steps=10, delta=1e-5), dict(eps1=P.ANY_EPS1, steps=P.ANY_STEPS, delta=P.DELTA)),
    ("closed_form_eps1", lambda target_epsilon, **kw: S.closed_form_eps1(target_epsilon, **kw),
     dict(target_epsilon=1.0, steps=10, delta=1e-5),
     dict(target_epsilon=P.TARGET_EPSILON, steps=P.ANY_STEPS, delta=P.DELTA)),
    ("calibrate_eps1", lambda target_epsilon, **kw: S.calibrate_eps1(target_epsilon, method="balle2020", **kw),
     dict(target_epsilon=1.0, steps=10, delta=1e-5),
     dict(target_epsilon=P.TARGET_EPSILON, steps=P.ANY_STEPS, delta=P.DELTA)),
    ("calibrate_sigma_cor", lambda **kw: S.calibrate_sigma_cor(RING, **kw),
     dict(sigma_unc=1.0, clip=1.0, target_epsilon=1.0, delta=1e-5, steps=10),
     dict(sigma_unc=P.ACCOUNTANT_SIGMA_UNC, clip=P.ACCOUNTANT_CLIP, target_epsilon=P.TARGET_EPSILON,
          delta=P.DELTA, steps=P.ANY_STEPS)),
    ("example_level_rdp", lambda **kw: S.example_level_rdp([2.0, 8.0], RING, **kw), dict(_NOISE, **_EX),
     dict(_NOISE_P, **_EX_P)),
    ("example_level_epsilon", lambda **kw: S.example_level_epsilon(RING, **kw), dict(_NOISE, delta=1e-5, **_EX),
     dict(_NOISE_P, delta=P.DELTA, **_EX_P)),
    ("example_level_calibrate_eps1", lambda target_epsilon, **kw: S.example_level_calibrate_eps1(
        target_epsilon, **kw), dict(target_epsilon=1.0, delta=1e-5, **_EX),
     dict(target_epsilon=P.TARGET_EPSILON, delta=P.DELTA, **_EX_P)),
    ("example_level_calibrate_sigma_cor", lambda **kw: S.example_level_calibrate_sigma_cor(RING, **kw),
     dict(sigma_unc=1.0, clip=1.0, target_epsilon=1.0, delta=1e-5, **_EX),
     dict(sigma_unc=P.ACCOUNTANT_SIGMA_UNC, clip=P.ACCOUNTANT_CLIP, target_epsilon=P.TARGET_EPSILON,
          delta=P.DELTA, **_EX_P)),
]

#: scalar-only parameters (one bisection per call): an array is refused whatever it holds
SCALAR_ONLY = {("example_level_calibrate_eps1", n) for n in ("target_epsilon", "delta", "steps", "batch_size", "q")}
SCALAR_ONLY |= {("example_level_calibrate_sigma_cor", n) for n in ("target_epsilon", "delta", "steps",
                                                                   "batch_size", "q")}


def _cases():
    for label, call, base, params in CASES:
        for name, param in params.items():
            yield pytest.param(label, call, base, name, param, id=f"{label}:{name}")


@pytest.mark.parametrize("label,call,base,name,param", list(_cases()))
def test_function_refuses_exactly_what_its_param_refuses(label, call, base, name, param):
    assert not _function_refuses(call, base, name, base[name])  # the base point is valid
    for v in _probes(param.domain):
        assert _function_refuses(call, base, name, v) == _param_refuses(param, v), (name, v)
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
    label, call, base, params = CASES[case]
    name = data.draw(st.sampled_from(sorted(params)))
    assert _function_refuses(call, base, name, value) == _param_refuses(params[name], value), (label, name, value)


#: The registry's domains that differ from the function's Param (its search ranges), each a Param of _params.py:
#: name -> (the registry's Param, the function's Param)
DIFFERENT = {
    "sigma_unc": (P.SIGMA_UNC, P.ACCOUNTANT_SIGMA_UNC), "sigma_cor": (P.SIGMA_COR, P.ACCOUNTANT_SIGMA_COR),
    "clip": (P.CLIP, P.ACCOUNTANT_CLIP), "steps": (P.STEPS, P.ANY_STEPS), "eps1": (P.EPS1, P.ANY_EPS1),
    "batch_size": (P.BATCH, P.ANY_BATCH), "q": (P.Q, P.ANY_Q),
}


def test_registry_declares_the_params_of_params_py():
    """Each secrdp bound's numeric parameter has a domain declared in _params.py: the function's own (delta,
    colluders) or the registry's stated search range, which lies inside the function's domain (every value
    the registry takes, the function takes)."""
    declared = [q.domain for q in vars(P).values() if hasattr(q, "domain")]
    seen = 0
    for b in bounds.list("secrdp"):
        for p in b.params:
            if not p.domain.numeric:
                continue
            assert any(p.domain is d for d in declared), (b.id, p.name)
            if p.name in DIFFERENT:
                reg, fn = DIFFERENT[p.name]
                assert p.domain is reg.domain, (b.id, p.name)
                assert fn.domain.lo <= reg.domain.lo and reg.domain.hi <= fn.domain.hi, p.name
            seen += 1
    assert seen >= 40
