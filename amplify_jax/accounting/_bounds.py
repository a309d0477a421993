"""Bounds of the accounting layer (Rényi DP of the basic mechanisms, DP-SGD), declared for the registry.

The named mechanisms' bounds take their ids from the one table, ``_mechanism_table.MECHANISMS`` (their eps on each
accountant, their RDP curve); the command line's ``epsilon`` / ``rdp`` / ``calibrate`` evaluate and invert them."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from . import accountants as A
from . import conversions as C
from . import pld as P
from . import _rdp_curves as R
from ._mechanism_table import MECHANISMS as M
from ._params import DELTA, EPS0, K, METHOD, ORDERS, Q, SCALE, SIGMA, STEPS, STEPS_1, WOR_ORDERS
from .._core.domains import Choice, Real
from .._core.numerics import x64_scope
from .._core.registry import DECREASING, INCREASING, Bound, Param, register

MIRONOV_2017 = "Mironov 2017 (Rényi differential privacy)"
MTZ_2019 = "Mironov, Talwar, Zhang 2019 (Rényi DP of the sampled Gaussian mechanism)"
WBK_2019 = "Wang, Balle, Kasiviswanathan 2019 (subsampled Rényi DP)"
CONVERSION = "RDP composition (Mironov 2017, Prop. 1) and conversion (Balle et al. 2020, Thm 21)"

# The parameters (SIGMA, Q, STEPS, DELTA, ORDERS, STEPS_1, METHOD, SCALE, EPS0, K, WOR_ORDERS) are stated once in
# ``_params.py``, where the functions of rdp and conversions validate through them too (issue 29, item 2); the
# kernels below run those functions' computations on the values bind() checked, without checking them again.


PLD = ("Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022 (connect-the-dots PLD); Koskela, Jalko, Honkela "
       "2020 (FFT composition)")
ACCOUNTANT = Param("accountant", Choice(("rdp", "pld")),
                   "rdp: Rényi DP at the optimal order; pld: the tight privacy-loss distribution (order 0: none)",
                   default="rdp")


def _dpsgd(sigma, q, steps, delta, accountant="rdp", method="balle2020"):
    if P.selects(accountant, method=method):  # method: an option of the RDP accountant only
        res = P.dpsgd_epsilon(sigma=sigma, q=q, steps=steps, delta=delta)  # its status flags an +inf (error)
        return {"epsilon": res.epsilon, "order": np.zeros_like(np.asarray(res.epsilon)), "status": res.status}
    # the declared domains checked every value (bounds.bind): dpsgd_epsilon's computation, its checks not repeated
    s, q_, t, d = (np.asarray(x, dtype=np.float64) for x in (sigma, q, steps, delta))
    res = A._dpsgd_epsilon(s, R.raise_tiny_rate(q_), t, d, A._SORTED_DEFAULT_ORDERS, method)
    return {"epsilon": res.epsilon, "order": res.order}


def _dpsgd_sigma(target, lo, hi, rtol, *, q, steps, delta, accountant="rdp", method="balle2020"):
    lo_, hi_ = float(np.min(lo)), float(np.max(hi))
    a, z = P.SIGMA_RANGE
    if accountant == "pld" and not a <= lo_ < hi_ <= z:  # the PLD's own sigma range, named by invert's arguments
        raise ValueError(f"Expected lo and hi in [{a:g}, {z:g}] with accountant='pld' (the sigma range of the PLD "
                         f"accountant), got lo={lo_:g}, hi={hi_:g}.")
    if accountant == "pld":
        cal = A.dpsgd_calibrate_sigma(target_epsilon=target, q=q, steps=steps, delta=delta, rtol=rtol,
                                      sigma_range=(lo_, hi_), accountant=accountant, method=method)
        return cal.sigma, cal.epsilon, cal.status
    # the declared range (invert given no lo / hi) is the RDP calibration's default one, which grows 32-fold up to
    # accountants.SIGMA_LIMIT where a target is infeasible in it (as dpsgd_calibrate_sigma's default)
    declared = (lo_, hi_) == SIGMA.search_range()
    # the declared domains and invert checked every value (target, lo < hi in sigma's domain, rtol in [1e-15, 0.5]):
    # dpsgd_calibrate_sigma's computation, its checks not repeated
    e, q_, t, d = (np.asarray(x, dtype=np.float64) for x in (target, q, steps, delta))
    cal = A._dpsgd_calibrate_sigma(e, R.raise_tiny_rate(q_), t, d, (lo_, hi_), declared, float(rtol),
                                   A._SORTED_DEFAULT_ORDERS, method)
    return cal.sigma, cal.epsilon, cal.status


register(Bound(
    id=M["poisson-gaussian"].rdp, example=dict(sigma=1.1, q=0.01, steps=1000, delta=1e-5),
    paper=MTZ_2019, theorem=f"Sec. 3 (exact RDP at every order); {CONVERSION}; or (accountant=pld) {PLD}",
    summary="eps of DP-SGD: Poisson-subsampled Gaussian composed over steps, optimal (continuous) order",
    params=(SIGMA, Q, STEPS, DELTA, ACCOUNTANT, METHOD), answer="epsilon", kernel=_dpsgd, outputs=("order",),
    solvers={"sigma": _dpsgd_sigma}))

PLD_SIGMA = Param("sigma", Real(P.SIGMA_RANGE[0], P.SIGMA_RANGE[1]), "noise multiplier (std / sensitivity)",
                  DECREASING, search=(0.3, 200.0))


def _pld_dpsgd(sigma, q, steps, delta):
    res = P.dpsgd_epsilon(sigma=sigma, q=q, steps=steps, delta=delta)  # its status flags an +inf (error)
    return {"epsilon": res.epsilon, "epsilon_lower": res.epsilon_lower, "status": res.status}


def _pld_dpsgd_sigma(target, lo, hi, rtol, *, q, steps, delta):
    cal = P.dpsgd_calibrate_sigma(target_epsilon=target, q=q, steps=steps, delta=delta, rtol=rtol,
                                  sigma_range=(float(np.min(lo)), float(np.max(hi))))
    return cal.sigma, cal.epsilon, cal.status


register(Bound(
    id=M["poisson-gaussian"].pld, example=dict(sigma=1.1, q=0.01, steps=1000, delta=1e-5),
    paper=PLD, theorem="Thm. 3.3 (connect-the-dots dominates); FFT composition with tails and round-off in delta",
    summary="tight eps of DP-SGD from its privacy-loss distribution (both relations), with a lower bound",
    params=(PLD_SIGMA, Q, STEPS, DELTA), answer="epsilon", kernel=_pld_dpsgd, outputs=("epsilon_lower",),
    solvers={"sigma": _pld_dpsgd_sigma}))


def _pld_mechanism(mechanism):
    def kernel(delta, **params):
        res = P.epsilon(mechanism, delta=delta, **params)  # its status flags an +inf (error)
        return {"epsilon": res.epsilon, "epsilon_lower": res.epsilon_lower, "status": res.status}

    return kernel


_PLD_SCALE = Param("scale", Real(P.SCALE_RANGE[0], P.SCALE_RANGE[1]), "Laplace scale b (sensitivity 1)", DECREASING,
                   search=(0.05, 1e4))
_PLD_EPS0 = Param("eps0", Real(P.EPS0_RANGE[0], 30.0, lo_open=True), "eps0 of binary randomized response",
                  INCREASING, search=(1e-4, 30.0))
_PLD_THM = "Thm. 3.3 (connect-the-dots dominates); FFT composition with tails and round-off in delta"
# The PLD's other mechanisms (``MECHANISMS``' pld ids; the Poisson-subsampled Gaussian is pld.dpsgd above)
for _mech, _params, _example, _summary in (
        ("gaussian", (PLD_SIGMA, STEPS, DELTA), dict(sigma=2.0, steps=10, delta=1e-5),
         "tight eps of the Gaussian mechanism (sensitivity 1) composed over steps, with a lower bound"),
        ("laplace", (_PLD_SCALE, STEPS, DELTA), dict(scale=2.0, steps=10, delta=1e-5),
         "tight eps of the Laplace mechanism (sensitivity 1, scale b) composed over steps, with a lower bound"),
        ("poisson-laplace", (_PLD_SCALE, Q, STEPS, DELTA),
         dict(scale=2.0, q=0.05, steps=100, delta=1e-5),
         "tight eps of the Poisson-subsampled Laplace mechanism composed over steps (both relations), with a "
         "lower bound"),
        ("randomized-response", (_PLD_EPS0, STEPS, DELTA, K),
         dict(eps0=1.0, steps=10, delta=1e-5),
         "tight eps of binary randomized response (k = 2 only) at level eps0 composed over steps, with a lower "
         "bound")):
    register(Bound(id=M[_mech].pld, example=_example, paper=PLD, theorem=_PLD_THM, summary=_summary, params=_params,
                   answer="epsilon", kernel=_pld_mechanism(_mech), outputs=("epsilon_lower",)))


# Sampling without replacement (replace-one), the Gaussian: its own rate and the sensitivity convention
ZDW_2022 = ("Zhu, Dong, Wang 2022 (dominating pairs); Dong, Roth, Su 2022 (Gaussian DP, subsampling); "
            "Balle, Barthe, Gaboardi 2018 (advanced joint convexity)")
register(Bound(
    id=M["wor-gaussian"].pld, example=dict(sigma=2.0, q=0.01, steps=100, delta=1e-5),
    paper=f"{ZDW_2022}; {PLD}",
    theorem=("DRS Thm. 4.2 (C_q(G_mu), sampling without replacement), as one symmetric dominating pair (ZDW "
             "Sec. 3; BBG Thm. 2 for its proof); " + _PLD_THM),
    summary=("tight eps of the Gaussian on a batch of a fraction q drawn without replacement each step "
             "(replace-one relation) composed over steps, with a lower bound"),
    params=(PLD_SIGMA, Param("q", Real(0.0, 1.0), "batch fraction m / n (sampling without replacement)", INCREASING,
                             search=(1e-8, 1.0)),
            STEPS, DELTA,
            Param("sensitivity", Real(1e-3, 1e3),
                  "replace-one sensitivity of the batch function in sigma's units (2: clipped sum, sigma = std / C)",
                  default=1.0)),  # not declared monotone: sigma / sensitivity must stay in the PLD's sigma range
    answer="epsilon", kernel=_pld_mechanism("wor-gaussian"), outputs=("epsilon_lower",)))


def _gaussian_epsilon(sigma, steps, delta, method="balle2020"):
    """accountants.epsilon("gaussian", ...)'s computation: the optimal order of steps alpha / (2 sigma^2)."""
    res = C._optimal_epsilon(A._gaussian_steps, A._SORTED_DEFAULT_ORDERS, delta, (sigma, steps), method)
    return {"epsilon": res.epsilon, "order": res.order}


def _composed_epsilon(curve):
    """accountants.epsilon(...)'s computation for a closed-form curve: steps x the curve at the default orders,
    converted at the best of them (Mironov 2017, Prop. 1; Balle et al. 2020, Thm 21)."""
    def kernel(steps, delta, method="balle2020", **params):
        a = A._SORTED_DEFAULT_ORDERS
        with x64_scope():
            total = jnp.asarray(steps)[..., None] * curve(a, **params)
        res = C._epsilon_from_rdp(a, np.asarray(total), delta, method)
        return {"epsilon": res.epsilon, "order": res.order}

    return kernel


_ONE = np.asarray(1.0)  #: the unit sensitivity of the registry's curves (the functions' default)


def _gaussian_curve(orders, sigma):
    return R._gaussian_curve(orders, sigma, _ONE)


def _laplace_curve(orders, scale):
    return R._laplace_curve(orders, scale, _ONE)


def _rr_curve(orders, eps0, k):
    return R._randomized_response_curve(orders, eps0, k)


def _psg_curve(orders, q, sigma):
    return R._poisson_subsampled_gaussian_curve(orders, q, sigma)


def _wor_kernel(orders, q, sigma):
    return {"rdp": R._subsampled_gaussian_wor_curve(orders, q, sigma, _ONE)}


register(Bound(
    id=M["gaussian"].rdp, example=dict(sigma=2.0, steps=10, delta=1e-5),
    paper=MIRONOV_2017, theorem=f"Table II (Gaussian); {CONVERSION}",
    summary="eps of the Gaussian mechanism (sensitivity 1) composed over steps, optimal order",
    params=(SIGMA, STEPS, DELTA, METHOD), answer="epsilon", kernel=_gaussian_epsilon, outputs=("order",)))

register(Bound(
    id=M["laplace"].rdp, example=dict(scale=2.0, steps=10, delta=1e-5),
    paper=MIRONOV_2017, theorem=f"Table II (Laplace); {CONVERSION}",
    summary="eps of the Laplace mechanism (sensitivity 1, scale b) composed over steps, optimal order",
    params=(SCALE, STEPS, DELTA, METHOD),
    answer="epsilon", kernel=_composed_epsilon(_laplace_curve), outputs=("order",)))

register(Bound(
    id=M["randomized-response"].rdp, example=dict(eps0=1.0, steps=10, delta=1e-5),
    paper=MIRONOV_2017, theorem=f"Prop. 5 (randomized response); {CONVERSION}",
    summary="eps of k-ary randomized response at level eps0 composed over steps, optimal order",
    params=(EPS0, K, STEPS, DELTA, METHOD),
    answer="epsilon", kernel=_composed_epsilon(_rr_curve), outputs=("order",)))


def _composed_rdp(fn):
    """The curve of ``steps`` compositions (Mironov 2017, Prop. 1: RDP adds up at each order)."""
    def kernel(orders, steps, **params):
        curve = np.asarray(fn(orders, **params))
        with np.errstate(over="ignore"):  # steps x a huge RDP: +inf, a valid (vacuous) bound
            return {"rdp": np.asarray(steps)[..., None] * curve}

    return kernel


register(Bound(
    id=M["gaussian"].curve, example=dict(orders=[2.0, 8.0, 32.0], sigma=2.0),
    paper=MIRONOV_2017, theorem="Table II (Gaussian mechanism), exact; Prop. 1 (composition)",
    summary="RDP curve of the Gaussian mechanism, alpha / (2 sigma^2), composed over steps (default 1)",
    params=(ORDERS, SIGMA, STEPS_1), answer="rdp", kernel=_composed_rdp(_gaussian_curve)))

register(Bound(
    id=M["poisson-gaussian"].curve, example=dict(orders=[2.0, 8.0, 32.0], q=0.01, sigma=1.0),
    paper=MTZ_2019, theorem="Sec. 3, exact at every order; Mironov 2017, Prop. 1 (composition)",
    summary="RDP curve of the Poisson-subsampled Gaussian (DP-SGD), composed over steps (default 1: one step)",
    params=(ORDERS, Q, SIGMA, STEPS_1), answer="rdp", kernel=_composed_rdp(_psg_curve)))

register(Bound(
    id=M["laplace"].curve, example=dict(orders=[2.0, 8.0, 32.0], scale=2.0),
    paper=MIRONOV_2017, theorem="Table II (Laplace mechanism), exact; Prop. 1 (composition)",
    summary="RDP curve of the Laplace mechanism (sensitivity 1, scale b), composed over steps (default 1)",
    params=(ORDERS, SCALE, STEPS_1), answer="rdp", kernel=_composed_rdp(_laplace_curve)))

register(Bound(
    id=M["randomized-response"].curve, example=dict(orders=[2.0, 8.0, 32.0], eps0=1.0),
    paper=MIRONOV_2017, theorem="Prop. 5 (randomized response), exact; Prop. 1 (composition)",
    summary="RDP curve of k-ary randomized response at level eps0, composed over steps (default 1)",
    params=(ORDERS, EPS0, K, STEPS_1), answer="rdp", kernel=_composed_rdp(_rr_curve)))

register(Bound(
    id="rdp.wor-subsampled-gaussian", example=dict(orders=[2.0, 8.0, 32.0], q=0.01, sigma=1.0),
    paper=WBK_2019, theorem="Thm 9 (sampling without replacement)",
    summary="RDP upper bound of the Gaussian under sampling without replacement (replace-one)",
    params=(WOR_ORDERS, Q, SIGMA), answer="rdp", kernel=_wor_kernel))
