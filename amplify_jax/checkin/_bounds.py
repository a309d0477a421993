"""Bounds of the self check-in paper (Liew, Hasegawa, Takahashi), declared for the registry.

Monotone declarations (checked numerically on grids in tests/test_checkin.py, and by the theorems):

* sigma (Gaussian noise multiplier): the per-k base RDP 2 lambda / (k sigma^2) (and the shuffled Gaussian's
  moments e^{i(i-1)/(2 sigma^2)}) decrease in sigma, and every amplification step (WBK Thm 9, the binomial
  weights, the conversion) is non-decreasing in the base curve: DECREASING.
* steps (rounds): the composed curve is steps x rdp, the conversion increases with it: INCREASING.
* delta (eps at delta) / epsilon (delta at eps): the conversion terms decrease in both: DECREASING.
* eps0 (local guarantee): the Girgis et al. terms, the Thm 3 lower bound ((e^eps0 - 1)^2 / e^eps0 grows for
  eps0 > 0), the FMT closed form and its fallback to eps0 all grow with eps0: INCREASING.
* gamma is *not* monotone for the distributed and shuffled upper bounds (small rates leave rounds with few
  participants, see ``distributed_gaussian_calibrate_gamma``); it is for the Thm 3 lower bound (its only
  gamma-dependence, gamma (1 - e^{-D^2 n gamma/(2 + D)}), grows).  n: declared 0 throughout (no proof that
  the weighted sums move one way in n).

The paper's printed closed forms with the rate gamma for every k (Eq. 7 and Eq. 11, ``method="eq7"`` /
``"eq11"`` / ``"exact_paper_rate"``) are not registered: the module documents k / n as the sound rate and keeps
those forms only to reproduce the paper's figures.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..bounds import DECREASING, INCREASING, Bound, Choice, Orders, Param, register
from ..accounting.calibrate import invert_monotone_host
from ..accounting.rdp import DEFAULT_ORDERS
from .._core.status import Status
from ._accounting import (CHECKIN_ORDERS, OrderCapWarning, distributed_gaussian_calibrate_sigma,
                          distributed_gaussian_calibrate_steps, distributed_gaussian_delta,
                          distributed_gaussian_epsilon, order_at_cap, shuffled_checkin_epsilon, subsampled_shuffle_checkin_epsilon)
from ._baselines import _distributed_gaussian_sc_unchecked, shuffled_checkin_strong_composition_epsilon
from ._distributed import distributed_gaussian_rdp
from ._shuffled import shuffled_checkin_lower_rdp, shuffled_checkin_upper_rdp
from ._shuffled_gaussian import shuffled_gaussian_checkin_rdp, shuffled_gaussian_rdp
from ._subsampled_shuffle import subsampled_shuffle_checkin_rdp
from ._params import (DELTA, DELTA0, EPS0_POSITIVE, EPSILON, GAMMA_OPEN, GAMMA_POSITIVE, N, SHUFFLE_DELTA, SIGMA,
                      STEPS)

PAPER = "Liew, Hasegawa, Takahashi 2022 (Self check-in / Privacy amplification via shuffled check-ins)"
CONVERSION = "composed over rounds (Mironov 2017) and converted by Lemma 2 (Balle et al. 2020), orders 2..64"
CAP = ("  Status fallback where the best order of the conversion is the largest of the grid (the order cap binds: "
       "still a valid bound, but larger orders may give a smaller one; the Python functions warn with "
       "amplify_jax.checkin.OrderCapWarning there and take wider orders=).")
RATE = ("Exact Thm 1 (Eq. 5) sum over every k at the conditional rate k / n (the paper's Eqs. 7, 10, 11 write "
        "the rate gamma; the sums here use the sound rate k / n, see amplify_jax.checkin).")

GAMMA = GAMMA_POSITIVE  # the registry's gamma: (0, 1] (see _params.py)
GAMMA_LOWER = Param("gamma", GAMMA_POSITIVE.domain, "check-in probability of a client per round", INCREASING,
                    search=(1e-6, 1.0))
EPS0 = EPS0_POSITIVE  # the registry's eps0: (0, 700] (see _params.py)
ORDERS_INT = Param("orders", Orders(hi=256.0, integer=True), "integer Rényi orders >= 2 (Thm 9)")
ORDERS_PART = Param("orders", Orders(hi=128.0, integer=True), "integer Rényi orders >= 2")


def _quiet(fn, **kw):
    """fn(**kw) with the order-cap warning silenced: the registry reports it as a status (see :func:`_capped`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OrderCapWarning)
        return fn(**kw)


def _capped(order, value, orders=CHECKIN_ORDERS, status=None):
    """Status fallback where the conversion's best order is the grid's largest (``order_at_cap``)."""
    st = np.full(np.shape(order), int(Status.OK), np.int32) if status is None else np.asarray(status, np.int32)
    return np.where(order_at_cap(order, orders, value), int(Status.FALLBACK), st).astype(np.int32)


def _eps(res):
    return {"epsilon": res.epsilon, "order": res.order, "status": _capped(res.order, res.epsilon)}


# ----------------------------------------------------------------------------------------------------------
# Distributed check-in with the Gaussian mechanism (Thm 4, Eq. 10)


#: The accountant of distributed check-in, declared as the ``dpsgd`` bound declares its own.
ACCOUNTANT = Param("accountant", Choice(("rdp", "pld")),
                   "rdp: Thm 4's Rényi DP, orders 2..64; pld: the privacy-loss distribution of the rounds with k held "
                   "in a Chernoff window (order 0: none)", default="rdp")


def _dg_pld_eps(n, gamma, sigma, steps, delta):
    return distributed_gaussian_epsilon(n=n, gamma=gamma, sigma=sigma, steps=steps, delta=delta, accountant="pld")


def _dg(n, gamma, sigma, steps, delta, accountant="rdp"):
    if accountant == "pld":  # its status: error or fallback where eps is +inf
        res = _dg_pld_eps(n, gamma, sigma, steps, delta)
        return {"epsilon": res.epsilon, "order": np.zeros_like(np.asarray(res.epsilon)), "status": res.status}
    return _eps(_quiet(distributed_gaussian_epsilon, n=n, gamma=gamma, sigma=sigma, steps=steps, delta=delta))


def _pld_inverse(eps_of, target, lo, hi, rtol, *, integer, decreasing):
    """The registry's generic search (bisection / Illinois on the host, feasible end re-checked) over the PLD
    route, which has no calibration of its own."""
    inv = invert_monotone_host(lambda x: np.asarray(eps_of(x), dtype=np.float64), target, lo=lo, hi=hi,
                               feasible="above" if decreasing else "below", rtol=rtol, integer=integer,
                               method="bisection" if integer else "illinois")
    return inv.value, inv.achieved, inv.status


def _dg_sigma(target, lo, hi, rtol, *, n, gamma, steps, delta, accountant="rdp"):
    """The family's compiled calibration on the same orders (2..64) as the bound: bisection, feasible end,
    re-checked, amplify_jax.status codes (accountant=pld: the generic search over the PLD route)."""
    if accountant == "pld":
        return _pld_inverse(lambda x: _dg_pld_eps(n, gamma, x, steps, delta).epsilon, target, lo, hi, rtol,
                            integer=False, decreasing=True)
    cal = distributed_gaussian_calibrate_sigma(n=n, gamma=gamma, steps=steps, target_epsilon=target, delta=delta,
                                               orders=CHECKIN_ORDERS, sigma_lo=float(np.min(lo)),
                                               sigma_hi=float(np.max(hi)), rtol=rtol)
    return cal.sigma, cal.epsilon, cal.status


def _dg_steps(target, lo, hi, rtol, *, n, gamma, sigma, delta, accountant="rdp"):
    """Most rounds in [lo, hi]: the family's exact closed form (per order, floor((eps - c_alpha) / rdp_alpha)),
    then settled on the bound itself (the closed form's fused re-check can differ by an ulp at the boundary):
    the value is the largest integer of the range whose eps (as evaluated by the bound) meets the target
    (accountant=pld: the generic integer search over the PLD route)."""
    if accountant == "pld":
        return _pld_inverse(lambda x: _dg_pld_eps(n, gamma, sigma, x, delta).epsilon, target, lo, hi, rtol,
                            integer=True, decreasing=False)
    del rtol
    lo = np.asarray(lo, np.float64)
    hi = np.asarray(hi, np.float64)
    cal = distributed_gaussian_calibrate_steps(n=n, gamma=gamma, sigma=sigma, target_epsilon=target, delta=delta,
                                               orders=CHECKIN_ORDERS)
    t = np.clip(np.asarray(cal.steps, np.float64), lo, hi)

    def eps_at(x):
        return np.asarray(_quiet(distributed_gaussian_epsilon, n=n, gamma=gamma, sigma=sigma, steps=x,
                                 delta=delta).epsilon, np.float64)

    e = eps_at(t)
    for _ in range(8):  # step down where the candidate fails (rounding at the boundary)
        bad = (e > target) & (t > lo)
        if not bad.any():
            break
        t = np.where(bad, t - 1.0, t)
        e = np.where(bad, eps_at(t), e)
    for _ in range(8):  # step up where the next integer still meets the target
        up = np.minimum(t + 1.0, hi)
        e_up = eps_at(up)
        more = (e <= target) & (t < hi) & (e_up <= target)
        if not more.any():
            break
        t = np.where(more, up, t)
        e = np.where(more, e_up, e)
    ok = e <= target
    e_next = eps_at(np.minimum(t + 1.0, hi))
    settled = (t >= hi) | (e_next > target)
    status = np.where(~ok, Status.INFEASIBLE,
                      np.where(t >= hi, Status.AT_LIMIT, np.where(settled, Status.OK, Status.MAX_ITER)))
    return t, e, status.astype(np.int32)


register(Bound(
    id="checkin.distributed-gaussian", example=dict(n=1000, gamma=0.05, sigma=1.0, steps=100, delta=1e-5),
    paper=PAPER, theorem=f"Thm 4 (Eq. 10) with Thm 1 (Eq. 5); {CONVERSION}; or (accountant=pld) Thm 4's rounds "
                         "with k in a Chernoff window, Dong, Roth, Su 2022 Thm 4.2's pair composed by its PLD",
    summary="eps of distributed check-in with the Gaussian mechanism (secure aggregation of the mean) over rounds",
    params=(N, GAMMA, SIGMA, STEPS, DELTA, ACCOUNTANT), answer="epsilon", kernel=_dg, outputs=("order",),
    notes=RATE + " Base RDP 2 lambda / (k sigma^2) amplified by sampling without replacement (Wang, Balle, "
          "Kasiviswanathan 2019, Thm 9).  eps is not monotone in gamma (few participants at small rates)." + CAP
          + "  accountant=pld: k held in [l1, l2] by Chernoff bounds (T (d1 + d2) added to delta), each round "
            "dominated by Dong, Roth, Su 2022 Thm 4.2's without-replacement pair at rate l2 / n and noise "
            "sigma sqrt(l1) / 2, composed by its PLD (checkin.distributed_gaussian_epsilon); status fallback "
            "(eps = inf) where no participant is guaranteed, error where the PLD answers +inf.",
    solvers={"sigma": _dg_sigma, "steps": _dg_steps}))


def _dg_delta(n, gamma, sigma, steps, epsilon):
    res = _quiet(distributed_gaussian_delta, n=n, gamma=gamma, sigma=sigma, steps=steps, epsilon=epsilon)
    return {"delta": res.delta, "order": res.order, "status": _capped(res.order, res.delta)}


register(Bound(
    id="checkin.distributed-gaussian-delta", example=dict(n=1000, gamma=0.05, sigma=1.0, steps=100, epsilon=2.0),
    paper=PAPER, theorem="Thm 4 (Eq. 10) with Thm 1 (Eq. 5); composed over rounds, inverse conversion "
                         "(Balle et al. 2020), orders 2..64",
    summary="delta of distributed check-in with the Gaussian mechanism over rounds, at epsilon",
    params=(N, GAMMA, SIGMA, STEPS, EPSILON), answer="delta", kernel=_dg_delta, outputs=("order",), notes=RATE + CAP))


def _dg_rdp(orders, n, gamma, sigma):
    return {"rdp": distributed_gaussian_rdp(orders, n=n, gamma=gamma, sigma=sigma)}


register(Bound(
    id="checkin.distributed-gaussian-rdp", example=dict(orders=[2.0, 8.0, 32.0], n=1000, gamma=0.05, sigma=1.0),
    paper=PAPER, theorem="Thm 4 (Eq. 10) with Thm 1 (Eq. 5), exact sum over k",
    summary="RDP curve of one round of distributed check-in with the Gaussian mechanism",
    params=(ORDERS_INT, N, GAMMA, SIGMA), answer="rdp", kernel=_dg_rdp, notes=RATE))


def _dg_sc(n, gamma, sigma, steps, delta):
    eps = np.asarray(_distributed_gaussian_sc_unchecked(n=n, gamma=gamma, sigma=sigma, steps=steps, delta=delta))
    return {"epsilon": eps, "status": np.where(np.isfinite(eps), Status.OK, Status.FALLBACK)}


register(Bound(
    id="checkin.distributed-gaussian-strong-composition",
    example=dict(n=1000, gamma=0.05, sigma=1.0, steps=100, delta=1e-5),
    paper=PAPER, theorem="Sec. 5.1 baseline: Chernoff bounds on k, analytic Gaussian (Balle & Wang 2018), "
                         "subsampling (Balle et al. 2018 Thm 9), strong composition (Dwork, Rothblum, Vadhan 2010)",
    summary="strong-composition baseline for distributed check-in with the Gaussian mechanism",
    params=(N, GAMMA_OPEN, SIGMA, STEPS, DELTA), answer="epsilon", kernel=_dg_sc,
    notes="Our sound instantiation of the baseline the paper describes; the split of delta is optimised over a "
          "small grid.  Status fallback (eps = inf) where the Chernoff bound cannot guarantee one participant."))


# ----------------------------------------------------------------------------------------------------------
# Shuffled check-in with eps0-LDP randomizers (Thm 2, Thm 3) and the baselines


def _sh_upper(n, gamma, eps0, steps, delta):
    return _eps(_quiet(shuffled_checkin_epsilon, n=n, gamma=gamma, eps0=eps0, steps=steps, delta=delta,
                       bound="upper"))


register(Bound(
    id="checkin.shuffled-upper", example=dict(n=1000, gamma=0.1, eps0=1.0, steps=10, delta=1e-5),
    paper=PAPER, theorem=f"Thm 2 (Eq. 7 per k, constants corrected against Girgis et al. 2021, Thm 1); {CONVERSION}",
    summary="eps of shuffled check-in with eps0-LDP discrete randomizers over rounds (upper bound)",
    params=(N, GAMMA, EPS0, STEPS, DELTA), answer="epsilon", kernel=_sh_upper, outputs=("order",),
    notes="Corrected: Eq. 7's l-tilde is floor((k - 1) / (2 e^eps0)) + 1 and Upsilon_k decays like "
          "e^{-(k-1)/(8 e^eps0)} (Girgis et al.), not as extracted (docs/errata.md#e-checkin-eq7). " + RATE + CAP))


def _sh_lower(n, gamma, eps0, steps, delta):
    return _eps(_quiet(shuffled_checkin_epsilon, n=n, gamma=gamma, eps0=eps0, steps=steps, delta=delta,
                       bound="lower"))


register(Bound(
    id="checkin.shuffled-lower", example=dict(n=1000, gamma=0.1, eps0=1.0, steps=10, delta=1e-5),
    paper=PAPER, theorem="Thm 3 (Eq. 8), maximised over the Chernoff parameter; composed over rounds (Mironov "
                         "2017) and converted by Lemma 2 (Balle et al. 2020), 241 orders from 2 to 1e8",
    summary="eps that the Thm 3 lower bound on the RDP of shuffled check-in gives (binary randomized response)",
    params=(N, GAMMA_LOWER, EPS0, STEPS, DELTA), answer="epsilon", kernel=_sh_lower, outputs=("order",),
    side="lower",
    notes="What Figure 1 plots as the lower bound: the best any RDP accounting of this mechanism can give "
          "through the Lemma 2 conversion, not a lower bound on the true eps of the mechanism." + CAP))


def _rdp(fn, **fixed):
    def kernel(orders, **params):
        return {"rdp": fn(orders, **fixed, **params)}

    return kernel


register(Bound(
    id="checkin.shuffled-upper-rdp", example=dict(orders=[2.0, 8.0, 32.0], n=1000, gamma=0.1, eps0=1.0),
    paper=PAPER, theorem="Thm 2 (per-k bound of Eq. 7, corrected against Girgis et al. 2021) with Thm 1 (Eq. 5)",
    summary="RDP curve of one round of shuffled check-in with eps0-LDP discrete randomizers (upper bound)",
    params=(ORDERS_INT, N, GAMMA, EPS0), answer="rdp", kernel=_rdp(shuffled_checkin_upper_rdp),
    notes="Corrected: Eq. 7's constants as in Girgis et al. (2 e^eps0 in l-tilde, e^{-(k-1)/(8 e^eps0)}; "
          "docs/errata.md#e-checkin-eq7). " + RATE))

register(Bound(
    id="checkin.shuffled-lower-rdp", example=dict(orders=[2.0, 8.0, 32.0], n=1000, gamma=0.1, eps0=1.0),
    paper=PAPER, theorem="Thm 3 (Eq. 8), maximised over a grid of the Chernoff parameter",
    summary="lower bound on the RDP of one round of shuffled check-in (binary randomized response)",
    params=(ORDERS_INT, N, GAMMA_LOWER, EPS0), answer="rdp", kernel=_rdp(shuffled_checkin_lower_rdp),
    side="lower", notes="As printed (rate gamma); rounded down."))


def _sh_sc(n, gamma, eps0, steps, delta):
    eps = np.asarray(shuffled_checkin_strong_composition_epsilon(n=n, gamma=gamma, eps0=eps0, steps=steps,
                                                                 delta=delta))
    return {"epsilon": eps, "status": np.where(np.isfinite(eps), Status.OK, Status.FALLBACK)}


register(Bound(
    id="checkin.shuffled-strong-composition", example=dict(n=1000, gamma=0.1, eps0=1.0, steps=10, delta=1e-5),
    paper=PAPER, theorem="Sec. 5 baseline (Girgis, Data, Diggavi 2021c route): Chernoff bounds on k, FMT 2021 "
                         "Thm 3.1 shuffling, subsampling (Balle et al. 2018 Thm 9), strong composition (DRV 2010)",
    summary="strong-composition baseline for shuffled check-in with eps0-LDP randomizers",
    params=(N, GAMMA_OPEN, EPS0, STEPS, DELTA), answer="epsilon", kernel=_sh_sc,
    notes="Girgis et al. state it up to constants; this instantiation is ours and sound.  The FMT condition uses "
          "ln(4/delta) (footnote 3 quotes ln(2/delta), weaker than FMT's Thm 3.1 needs; "
          "docs/errata.md#e-checkin-fmt-condition); outside it the round counts eps0."))


# ----------------------------------------------------------------------------------------------------------
# The shuffled Gaussian (Sec. 4.1 / App. B)

register(Bound(
    id="checkin.shuffled-gaussian-rdp", example=dict(orders=[2.0, 8.0, 32.0], n=100, sigma=1.0),
    paper=PAPER, theorem="Sec. 4.1 / App. B (Liew & Takahashi 2022): shuffled Gaussian by integer partitions",
    summary="RDP curve of the shuffled Gaussian mechanism with n users (every user participates)",
    params=(ORDERS_PART, N, Param("sigma", SIGMA.domain, "Gaussian noise std (sensitivity 1)", DECREASING)),
    answer="rdp", kernel=_rdp(shuffled_gaussian_rdp),
    notes="Corrected: partitions with more than n parts are excluded (n users cannot split the order into more "
          "parts; the authors' code keeps them; docs/errata.md#e-checkin-partitions)."))

register(Bound(
    id="checkin.shuffled-gaussian-checkin-rdp", example=dict(orders=[2.0, 8.0], n=100, gamma=0.5, sigma=1.0),
    paper=PAPER, theorem="App. B: Thm 1 (Eq. 5) over the k-user shuffled Gaussian, subsampled without replacement "
                         "(Wang, Balle, Kasiviswanathan 2019, Thm 9)",
    summary="RDP curve of one round of shuffled check-in with the Gaussian local randomizer",
    params=(ORDERS_PART, N, GAMMA, Param("sigma", SIGMA.domain, "Gaussian noise std (sensitivity 1)", DECREASING)),
    answer="rdp", kernel=_rdp(shuffled_gaussian_checkin_rdp),
    notes="The exact sum over k (the authors' code uses the Eq. 11 approximation); partitions with more than k "
          "parts excluded (docs/errata.md#e-checkin-partitions). " + RATE))


# ----------------------------------------------------------------------------------------------------------
# Generic (eps0, delta0)-LDP randomizers: the subsampled shuffling conversion (Sec. 4.1)

SEC41 = ("Sec. 4.1 subsampled shuffling conversion: FMT 2021 Thm 3.1 per k (condition "
         "eps0 <= ln(k / (16 ln(4/delta))), docs/errata.md#e-checkin-fmt-condition), subsampling (Balle et al. "
         "2018 Thm 9), DP to RDP, Thm 1 (Eq. 5)")


def _ss(n, gamma, eps0, steps, delta, shuffle_delta, delta0):
    r = _quiet(subsampled_shuffle_checkin_epsilon, n=n, gamma=gamma, eps0=eps0, steps=steps, delta=delta,
               shuffle_delta=shuffle_delta, delta0=delta0)
    bad = np.asarray(r.fallback) | ~np.asarray(r.valid)
    st = np.where(bad, Status.FALLBACK, Status.OK)
    return {"epsilon": r.epsilon, "order": r.order,
            "status": _capped(np.where(np.asarray(r.valid), np.asarray(r.order), 0.0), r.epsilon,
                              DEFAULT_ORDERS, st)}


register(Bound(
    id="checkin.subsampled-shuffle",
    example=dict(n=10000, gamma=0.1, eps0=1.0, steps=10, delta=1e-5, shuffle_delta=1e-8),
    paper=PAPER, theorem=SEC41 + "; rounds compose as approximate RDP, converted at delta - steps x round delta",
    summary="eps of shuffled check-in with (eps0, delta0)-LDP randomizers over rounds (approximate-RDP route)",
    params=(N, GAMMA, EPS0, STEPS, DELTA, SHUFFLE_DELTA, DELTA0), answer="epsilon", kernel=_ss,
    outputs=("order",),
    notes="Status fallback where FMT's condition fails at k = round(n gamma) or delta0 > 0 (only check-in "
          "amplifies; eps still a valid bound), and where steps x round delta >= delta (eps = inf).  Lemma 3 "
          "(DP to RDP): the paper cites Asoodeh et al. 2021, whose Thm 3 is the reverse (RDP to DP) statement "
          "(docs/errata.md#e-checkin-lemma3); here the randomized-response curve of an eps-DP pair."
          + CAP))


def _ss_rdp(orders, n, gamma, eps0, shuffle_delta, delta0):
    r = subsampled_shuffle_checkin_rdp(orders, n=n, gamma=gamma, eps0=eps0, delta0=delta0,
                                       shuffle_delta=shuffle_delta)
    return {"rdp": r.rdp, "round_delta": r.delta,
            "status": np.where(np.asarray(r.fallback), Status.FALLBACK, Status.OK)}


register(Bound(
    id="checkin.subsampled-shuffle-rdp",
    example=dict(orders=[2.0, 8.0, 32.0], n=10000, gamma=0.1, eps0=1.0, shuffle_delta=1e-8),
    paper=PAPER, theorem=SEC41,
    summary="delta-approximate RDP curve of one round of shuffled check-in with (eps0, delta0)-LDP randomizers",
    params=(Param("orders", Orders(hi=1e4), "Rényi orders alpha > 1"), N, GAMMA, EPS0, SHUFFLE_DELTA, DELTA0),
    answer="rdp", kernel=_ss_rdp, outputs=("round_delta",),
    notes="The curve holds except with probability round_delta (<= gamma max(shuffle_delta, delta0)); compose "
          "rounds by adding curves and deltas.  Status fallback where FMT's condition fails at k = round(n gamma) "
          "or delta0 > 0."))
