"""Issue 29, item 2: each network parameter's domain is stated once (``amplify_jax/network/_params.py``), and
every public network function (``network.__all__``) refuses exactly what its Params refuse (and a stated joint
condition), with a one-line ValueError naming the parameter and the value; the registry's bounds declare the
same Param objects (or a stated narrowing of them).

The kernels are replaced by a stub that raises :class:`_params_probe.Accepted`: what is tested is the boundary,
and no program is compiled (the values themselves are tests/test_network.py's business)."""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, strategies as st

from amplify_jax import bounds
from amplify_jax._core.domains import Orders, Real
from amplify_jax import network as NW
from amplify_jax.accounting import pld
from amplify_jax.network import _complete_graph, _composition, _local, _params as P, _ring, _sgd, _walks
from _params_probe import param_refuses as _param_refuses, probes as _probes, stub as _stub
from _params_probe import function_refuses as _function_refuses


@pytest.fixture(autouse=True)
def no_kernels(monkeypatch):
    for mod, name in [(_ring, "_ring_sum_kernel"), (_ring, "_ring_hist_kernel"), (_local, "_local_sum_kernel"),
                      (_complete_graph, "_thm3_kernel"), (_complete_graph, "_sum_bound_kernel"),
                      (_complete_graph, "_hist_kernel"), (_complete_graph, "_spotted_kernel"),
                      (_sgd, "_thm4_kernel"), (_composition, "_advanced_kernel"),
                      (_composition, "_kov_homog_kernel"), (_composition, "_kov_kernel"),
                      (_sgd, "_sgd_rdp_kernel"), (_sgd, "_network_sgd_kernel"), (_sgd, "_network_sgd_fixed_kernel"),
                      (_sgd, "_local_sgd_kernel"), (_sgd, "_central_sgd_kernel"), (_sgd, "_bassily_kernel"),
                      (_sgd, "invert_monotone"), (pld, "epsilon"), (_walks, "_draw_walks"),
                      (_walks, "_walk_kernel"), (_composition, "_contrib_kernel"), (_composition, "_f64"),
                      (_complete_graph, "_eq10_kernel"), (_ring, "_ring_noise_kernel"), (_ring, "_f64")]:
        monkeypatch.setattr(mod, name, _stub)


def _group_extra(name, value, base):
    """cycle_delta='group' (the default) also refuses delta0 = 0 (the Gaussian's calibration needs delta0 > 0)."""
    return name == "delta0" and value == 0


def _joint(name, value, base, **kw):
    """The values of a call where ``name`` takes ``value`` (finite and in its Param's domain: a joint condition
    is only tested there)."""
    return {**base, **kw, name: value}


def _ratio_extra(name, value, base):
    """The DP-SGD accountants also refuse sigma / lipschitz outside SGD_NOISE_RATIO (both named)."""
    if name not in ("sigma", "lipschitz"):
        return False
    v = _joint(name, value, base)
    return not P.SGD_NOISE_RATIO.contains(np.float64(v["sigma"]) / np.float64(v["lipschitz"]))


def _lemma1_extra(order_name):
    """... and, with orders, Lemma 1's sigma >= L sqrt(2 alpha (alpha - 1)) (sigma, lipschitz, the order named)."""
    def extra(name, value, base):
        if _ratio_extra(name, value, base):
            return True
        if name not in ("sigma", "lipschitz", order_name):
            return False
        v = _joint(name, value, base)
        a = np.max(v[order_name])
        return bool(v["sigma"] < v["lipschitz"] * np.sqrt(2.0 * a * (a - 1.0)))
    return extra


def _pld_extra(noise):
    """... and, with accountant='pld', the PLD's noise multiplier (rounded down) at least pld.SIGMA_RANGE's low
    end (every input of it named)."""
    def extra(name, value, base):
        if _ratio_extra(name, value, base):
            return True
        if name not in ("sigma", "lipschitz", "contributions"):
            return False
        return bool(noise(_joint(name, value, base)) * pld.ROUND_DOWN < pld.SIGMA_RANGE[0])
    return extra


def _colluders_extra(name, value, base):
    """colluders < n (Sec. 4.3), checked jointly (colluders=, n= named)."""
    if name not in ("n", "colluders"):
        return False
    v = _joint(name, value, base)
    return v["colluders"] >= v["n"]


_CG = dict(n=10**4, steps=10**6, eps0=0.5, delta_prime=1e-6, delta_hat=1e-6)
_CG_PARAMS = dict(n=P.N, steps=P.STEPS_T, eps0=P.EPS0_GAUSS, delta_prime=P.DELTA_PRIME, delta_hat=P.DELTA_HAT)

#: (label, call(**values), base values, {parameter: its Param}, extra refusals of a joint condition or None)
CASES = [
    ("ring_sum_bound", NW.ring_sum_bound, dict(steps=1, eps0=0.5, delta0=1e-8, delta_prime=1e-6),
     dict(steps=P.STEPS_K, eps0=P.EPS0_LOCAL, delta0=P.DELTA0, delta_prime=P.DELTA_PRIME), None),
    ("ring_histogram_bound", lambda **kw: NW.ring_histogram_bound(form="fmt", **kw),
     dict(n=2000, steps=10, eps0=0.4, delta=1e-6, delta_prime=1e-6),
     dict(n=P.N, steps=P.STEPS_K, eps0=P.EPS0_LOCAL, delta=P.VISIT_DELTA, delta_prime=P.DELTA_PRIME), None),
    ("ring_histogram_bound_erlingsson", NW.ring_histogram_bound,
     dict(n=2000, steps=10, eps0=0.4, delta=1e-6, delta_prime=1e-6),
     dict(n=P.ERLINGSSON_N, steps=P.STEPS_K, eps0=P.ERLINGSSON_EPS0, delta=P.ERLINGSSON_DELTA,
          delta_prime=P.DELTA_PRIME), None),
    ("local_sum_bound", NW.local_sum_bound,
     dict(n=1000, steps=10, eps0=0.5, delta0=1e-8, delta_prime=1e-6, delta_hat=1e-6),
     dict(n=P.N, steps=P.STEPS_T, eps0=P.EPS0_LOCAL, delta0=P.DELTA0_PURE, delta_prime=P.DELTA_PRIME,
          delta_hat=P.DELTA_HAT), None),
    ("complete_graph_sum_epsilon", NW.complete_graph_sum_epsilon, _CG, _CG_PARAMS, None),
    ("complete_graph_sum_bound", NW.complete_graph_sum_bound, dict(_CG, delta0=1e-8),
     dict(_CG_PARAMS, delta0=P.DELTA0_PURE), _group_extra),
    ("complete_graph_sum_bound_paper", lambda **kw: NW.complete_graph_sum_bound(cycle_delta="paper", **kw),
     dict(_CG, delta0=1e-8), dict(_CG_PARAMS, delta0=P.DELTA0_PURE), None),
    ("complete_graph_histogram_bound", NW.complete_graph_histogram_bound, dict(_CG, delta=1e-9),
     dict(_CG_PARAMS, eps0=P.EPS0_LOCAL, delta=P.VISIT_DELTA), None),
    ("spotted_contributions_epsilon", NW.spotted_contributions_epsilon,
     dict(n=1000, contributions=1e5, eps0=0.5, delta_prime=1e-6, delta_tilde=1e-6),
     dict(n=P.N, contributions=P.SPOTTED_CONTRIBUTIONS, eps0=P.EPS0_LOCAL, delta_prime=P.DELTA_PRIME,
          delta_tilde=P.DELTA_TILDE), None),
    ("advanced_composition_epsilon", lambda eps, **kw: NW.advanced_composition_epsilon(eps, **kw),
     dict(eps=0.1, steps=1, delta_prime=1e-6),
     dict(eps=P.COMPOSED_EPS, steps=P.COMPOSED_STEPS, delta_prime=P.DELTA_PRIME), None),
    ("kov_homogeneous_epsilon", NW.kov_homogeneous_epsilon, dict(eps0=0.1, steps=10, delta=1e-5),
     dict(eps0=P.EPS0_LOCAL, steps=P.KOV_STEPS, delta=P.KOV_DELTA), None),
    ("sgd_theorem4_bound", NW.sgd_theorem4_bound, dict(n=1000, steps=10**5, eps0=0.5, delta=1e-5, delta_hat=1e-6),
     dict(n=P.N, steps=P.STEPS_T, eps0=P.EPS0_GAUSS, delta=P.SGD_DELTA, delta_hat=P.DELTA_HAT), None),
    ("kov_composition_epsilon", lambda eps, **kw: NW.kov_composition_epsilon(eps, **kw),
     dict(eps=0.1, delta_tilde=1e-6), dict(eps=P.COMPOSED_EPS, delta_tilde=P.KOV_DELTA_TILDE), None),
    ("network_sgd_rdp", lambda orders, **kw: NW.network_sgd_rdp(orders, **kw),
     dict(orders=2.0, sigma=20.0, n=1000, contributions=10.0, lipschitz=1.0),
     dict(orders=P.ORDERS, sigma=P.SGD_SIGMA, n=P.N, contributions=P.RDP_CONTRIBUTIONS, lipschitz=P.SGD_LIPSCHITZ),
     _lemma1_extra("orders")),
    ("network_sgd_epsilon", NW.network_sgd_epsilon,
     dict(sigma=10.0, n=1000, contributions=10.0, delta=1e-5, lipschitz=1.0),
     dict(sigma=P.SGD_SIGMA, n=P.N, contributions=P.CONTRIBUTIONS, delta=P.DELTA, lipschitz=P.SGD_LIPSCHITZ),
     _ratio_extra),
    ("network_sgd_epsilon_order", NW.network_sgd_epsilon,
     dict(sigma=20.0, n=1000, contributions=10.0, delta=1e-5, lipschitz=1.0, order=3.0),
     dict(sigma=P.SGD_SIGMA, lipschitz=P.SGD_LIPSCHITZ, order=P.ORDER), _lemma1_extra("order")),
    ("network_sgd_epsilon_colluders", NW.network_sgd_epsilon,
     dict(sigma=10.0, n=1000, contributions=10.0, delta=1e-5, colluders=10),
     dict(n=P.N, colluders=P.COLLUDERS_ANY), _colluders_extra),
    ("local_sgd_epsilon", NW.local_sgd_epsilon, dict(sigma=10.0, contributions=10.0, delta=1e-5, lipschitz=1.0),
     dict(sigma=P.SGD_SIGMA, contributions=P.CONTRIBUTIONS, delta=P.DELTA, lipschitz=P.SGD_LIPSCHITZ),
     _ratio_extra),
    ("local_sgd_epsilon_pld", lambda **kw: NW.local_sgd_epsilon(accountant="pld", **kw),
     dict(sigma=10.0, contributions=10.0, delta=1e-5, lipschitz=1.0),
     dict(sigma=P.SGD_SIGMA, contributions=P.CONTRIBUTIONS, delta=P.DELTA, lipschitz=P.SGD_LIPSCHITZ),
     _pld_extra(lambda v: np.float64(v["sigma"]) / (2.0 * v["lipschitz"] * np.sqrt(v["contributions"])))),
    ("central_sgd_epsilon", NW.central_sgd_epsilon, dict(sigma=10.0, n=1000, steps=100, delta=1e-5, lipschitz=1.0),
     dict(sigma=P.SGD_SIGMA, n=P.N, steps=P.CENTRAL_STEPS, delta=P.DELTA, lipschitz=P.SGD_LIPSCHITZ),
     _ratio_extra),
    ("central_sgd_epsilon_pld", lambda **kw: NW.central_sgd_epsilon(accountant="pld", **kw),
     dict(sigma=10.0, n=1000, steps=100, delta=1e-5, lipschitz=1.0),
     dict(sigma=P.SGD_SIGMA, n=P.N, steps=P.CENTRAL_STEPS, delta=P.DELTA, lipschitz=P.SGD_LIPSCHITZ),
     _pld_extra(lambda v: np.float64(v["sigma"]) / (2.0 * v["lipschitz"]))),
    ("central_sgd_bassily_epsilon", NW.central_sgd_bassily_epsilon,
     dict(sigma=10.0, n=1000, steps=100, delta=1e-5, lipschitz=1.0),
     dict(sigma=P.SGD_SIGMA, n=P.N, steps=P.CENTRAL_STEPS, delta=P.DELTA, lipschitz=P.SGD_LIPSCHITZ),
     _ratio_extra),
    ("sgd_calibrate_sigma", lambda **kw: NW.sgd_calibrate_sigma(setting="network", **kw),
     dict(target_epsilon=1.0, delta=1e-5, n=1000, steps=100, contributions=10.0, lipschitz=1.0),
     dict(target_epsilon=P.TARGET_EPSILON, delta=P.DELTA, n=P.N, steps=P.CENTRAL_STEPS,
          contributions=P.CONTRIBUTIONS, lipschitz=P.SGD_LIPSCHITZ), None),
    ("sgd_calibrate_sigma_central", lambda **kw: NW.sgd_calibrate_sigma(setting="central", **kw),
     dict(target_epsilon=1.0, delta=1e-5, n=1000, steps=100, lipschitz=1.0),
     dict(target_epsilon=P.TARGET_EPSILON, delta=P.DELTA, n=P.N, steps=P.CENTRAL_STEPS, lipschitz=P.SGD_LIPSCHITZ),
     None),
    ("sample_walks", lambda seed, **kw: NW.sample_walks(seed, **kw), dict(seed=0, n=10, steps=5, num_walks=2),
     dict(seed=P.SEED, n=P.WALK_N, steps=P.WALK_STEPS, num_walks=P.NUM_WALKS), None),
    ("walk_privacy_losses", lambda **kw: NW.walk_privacy_losses(np.zeros((1, 5), int), **kw),
     dict(n=10, eps0=0.5, delta_prime=1e-6, delta_cycle=1e-6),
     dict(n=P.WALK_N, eps0=P.EPS0_GAUSS, delta_prime=P.DELTA_PRIME, delta_cycle=P.DELTA_CYCLE), None),
    ("walk_privacy_losses_histogram",
     lambda **kw: NW.walk_privacy_losses(np.zeros((1, 5), int), mechanism="histogram", **kw),
     dict(n=10, eps0=0.5, delta_prime=1e-6, delta_cycle=1e-6),
     dict(n=P.WALK_N, eps0=P.EPS0_LOCAL, delta_prime=P.DELTA_PRIME, delta_cycle=P.DELTA_CYCLE), None),
    # importable and documented, not in __all__: the intermediate quantities, Thm 2's gamma, the ring's noise
    ("contribution_bound", NW.contribution_bound, dict(n=1000, steps=10**5, delta_hat=1e-6),
     dict(n=P.N, steps=P.STEPS_T, delta_hat=P.DELTA_HAT), None),
    ("kov_composition_delta", lambda deltas, **kw: NW.kov_composition_delta(deltas, **kw),
     dict(deltas=1e-6, delta_tilde=1e-6), dict(deltas=P.KOV_DELTAS, delta_tilde=P.KOV_DELTA_TILDE), None),
    ("subsampled_cycle_epsilon", NW.subsampled_cycle_epsilon, dict(n=1000, m=10, eps_aggregate=0.5),
     dict(n=P.N, m=P.CYCLE_LENGTH, eps_aggregate=P.EPS_AGGREGATE), None),
    ("ring_noise", NW.ring_noise, dict(n=100, steps=10, sigma_loc=1.0),
     dict(n=P.N, steps=P.STEPS_K, sigma_loc=P.SIGMA_LOC), None),
    ("ring_histogram_gamma", NW.ring_histogram_gamma, dict(n=2000, L=10, target_epsilon=0.3, delta=1e-6),
     dict(n=P.ERLINGSSON_N, L=P.RR_VALUES, target_epsilon=P.GAMMA_TARGET, delta=P.ERLINGSSON_DELTA), None),
]


def _expected(param, extra, base, name, value) -> bool:
    return _param_refuses(param, value) or bool(extra and extra(name, float(value), base))


def _ends(domain):
    """The domain whose ends are probed: Rényi orders (a 1-D list, alpha > 1) are probed as the interval (1, hi]."""
    return Real(1.0, domain.hi, lo_open=True) if isinstance(domain, Orders) else domain


def _cases():
    for label, call, base, params, extra in CASES:
        for name, param in params.items():
            yield pytest.param(label, call, base, name, param, extra, id=f"{label}:{name}")


@pytest.mark.filterwarnings("ignore:overflow encountered in nextafter")  # the probes beyond target_epsilon's end
@pytest.mark.parametrize("label,call,base,name,param,extra", list(_cases()))
def test_function_refuses_exactly_what_its_param_refuses(label, call, base, name, param, extra):
    assert not _function_refuses(call, base, name, base[name], answered_is_accepted=False)  # a valid base point
    ends = _ends(param.domain)
    for v in _probes(ends):
        assert _function_refuses(call, base, name, v) == _expected(param, extra, base, name, v), (name, v)
    # an array: refused as a whole where one element is, the message giving the element
    good, bad = float(ends.lo), float(ends.hi) + 1.0
    if _param_refuses(param, good) or (extra and extra(name, good, base)):
        good = float(base[name])
    assert _function_refuses(call, base, name, np.array([good, bad])) == _expected(param, extra, base, name, bad)


@given(case=st.sampled_from(range(len(CASES))), data=st.data(),
       value=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**8).map(float),
                       st.floats(-1.0, 2.0)))
def test_hypothesis_function_and_param_agree(case, data, value):
    label, call, base, params, extra = CASES[case]
    name = data.draw(st.sampled_from(sorted(params)))
    assert _function_refuses(call, base, name, value) == _expected(params[name], extra, base, name, value), \
        (label, name, value)


#: Registry parameters whose domain differs from the function's Param, each stated in _params.py:
#: (bound id, name) -> the registry's Param (or its domain's declaration)
DIFFERENT = {
    # eps0: the registry's (0, 30], the functions' (0, 700] (EPS0_LOCAL)
    ("network.ring-sum", "eps0"): P.EPS0, ("network.ring-histogram", "eps0"): P.EPS0,
    ("network.complete-graph-histogram", "eps0"): P.EPS0, ("network.spotted-contributions", "eps0"): P.EPS0,
    # delta0 = 0 (pure LDP): the functions take it (the default cycle_delta='group' refuses it), the registry not
    ("network.complete-graph-sum", "delta0"): P.DELTA0,
    # T_u = 0: the function answers 0; the registry's contributions are searched on a log scale
    ("network.spotted-contributions", "contributions"): None, ("network.sgd-rdp", "contributions"): P.CONTRIBUTIONS,
    # the DP-SGD accountants: sigma, lipschitz in [1e-100, 1e100] (sigma / lipschitz jointly); the registry's
    # sigma in [1e-3, 1e6], lipschitz in [1e-6, 1e3]; its central T up to 10**9 (the functions' 10**12)
    **{(b, "sigma"): P.SIGMA for b in ("network.sgd", "network.local-sgd", "network.central-sgd",
                                       "network.central-sgd-bassily", "network.sgd-rdp")},
    **{(b, "lipschitz"): P.LIPSCHITZ for b in ("network.sgd", "network.local-sgd", "network.central-sgd",
                                               "network.central-sgd-bassily", "network.sgd-rdp")},
    ("network.central-sgd", "steps"): P.STEPS_SGD, ("network.central-sgd-bassily", "steps"): P.STEPS_SGD,
}
#: the registry's name of a function's parameter, where they differ
RENAMED = {"shuffle_delta": "delta"}


def test_registry_declares_the_functions_params():
    """The registry's bounds declare their functions' domains (the same objects), or one of the stated
    differences; the closed forms' total ``delta`` is not their functions' parameter (they take its pieces:
    delta0, delta_prime, delta_hat, the shuffling step's delta; Thm 4's per-step delta has the total's domain,
    and the DP-SGD accountants' delta is the total); ``colluders`` is the registry's narrowing of the functions'
    (checked jointly with n, colluders < n)."""
    funcs = {"network.ring-sum": "ring_sum_bound", "network.ring-histogram": "ring_histogram_bound",
             "network.ring-histogram-erlingsson": "ring_histogram_bound_erlingsson",
             "network.complete-graph-sum": "complete_graph_sum_bound",
             "network.complete-graph-histogram": "complete_graph_histogram_bound",
             "network.spotted-contributions": "spotted_contributions_epsilon",
             "network.sgd-theorem4": "sgd_theorem4_bound", "network.sgd": "network_sgd_epsilon",
             "network.local-sgd": "local_sgd_epsilon", "network.central-sgd": "central_sgd_epsilon",
             "network.central-sgd-bassily": "central_sgd_bassily_epsilon", "network.sgd-rdp": "network_sgd_rdp"}
    by_label = {label: ps for label, _, _, ps, _ in CASES}
    seen = 0
    for bid, label in funcs.items():
        fn_params = by_label[label]
        for p in bounds.get(bid).params:
            if p.name == "orders":
                assert p is fn_params["orders"], bid
                seen += 1
                continue
            if p.name == "colluders":
                assert p is P.COLLUDERS and P.COLLUDERS_ANY.domain.lo <= p.domain.lo < p.domain.hi <= \
                    P.COLLUDERS_ANY.domain.hi, bid
                continue
            if not p.domain.numeric:
                continue
            if p.name == "delta" and bid in ("network.ring-sum", "network.ring-histogram",
                                             "network.ring-histogram-erlingsson",
                                             "network.complete-graph-sum", "network.complete-graph-histogram",
                                             "network.spotted-contributions"):
                continue
            fn = fn_params[RENAMED.get(p.name, p.name)]
            if (bid, p.name) in DIFFERENT:
                assert p.domain is not fn.domain, (bid, p.name)
                if DIFFERENT[(bid, p.name)] is not None:
                    assert p is DIFFERENT[(bid, p.name)], (bid, p.name)
            else:
                assert p.domain is fn.domain, (bid, p.name)
            seen += 1
    assert seen == 54


def test_every_registry_param_is_declared_in_params_py():
    """Each Param of every ``network.*`` bound (numeric or not) is an object of network/_params.py: one statement
    of each domain, which the functions and ``_bounds.py`` share."""
    declared = [v for v in vars(P).values() if isinstance(v, type(P.N))]
    ids = [b if isinstance(b, str) else b.id for b in bounds.list()]
    ids = [i for i in ids if i.startswith("network.")]
    assert len(ids) == 18
    for bid in ids:
        for p in bounds.get(bid).params:
            assert any(p is d for d in declared), (bid, p.name)


_BY_LABEL = {label: (call, base) for label, call, base, _, _ in CASES}
#: (case label, option, its Param): the options the registry declares, checked by the same Choice
CHOICES = [("complete_graph_sum_bound", "cycle_delta", P.CYCLE_DELTA),
           ("complete_graph_histogram_bound", "cycle_delta", P.CYCLE_DELTA),
           ("walk_privacy_losses", "cycle_delta", P.CYCLE_DELTA),
           ("spotted_contributions_epsilon", "composition", P.COMPOSITION),
           ("network_sgd_epsilon", "method", P.METHOD), ("local_sgd_epsilon", "method", P.METHOD)]


@pytest.mark.parametrize("label,name,param", CHOICES, ids=[f"{c[0]}:{c[1]}" for c in CHOICES])
def test_function_options_are_their_params_choices(label, name, param):
    call, base = _BY_LABEL[label]
    for v in param.domain.values:
        assert not _function_refuses(call, base, name, v, answered_is_accepted=False), v
    for v in ("nope", param.domain.values[0].upper(), None):
        assert _function_refuses(call, base, name, v) and _param_refuses(param, v), v
