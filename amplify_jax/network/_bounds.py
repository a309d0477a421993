"""Bounds of Cyffers & Bellet, "Privacy Amplification by Decentralization" (network DP), declared for the registry.

The family's functions take the pieces of a delta budget separately (delta' of the composition, delta_hat of
the Chernoff bound on the number of contributions, the per-contribution or per-cycle delta) and return the
total delta they add up to.  A registered bound answers eps *at* a total ``delta``: the slack delta' of the
advanced composition is what is left, delta' = delta - (the other terms, computed by the family function);
where nothing is left there is no guarantee: eps = inf with status fallback.

Monotone declarations (verified numerically on grids in tests/test_network.py, and from the formulas):

* delta (total): delta' grows with it and the advanced-composition eps sqrt(2 k ln(1/delta')) eps_c + ...
  decreases: DECREASING.  steps (T or K): the count k of compositions grows and delta' shrinks: INCREASING.
* eps0 (local guarantee): every per-step / per-cycle loss grows with it (FMT's closed form and its fallback
  eps0 included), and so do the group-privacy cycle deltas: INCREASING.
* delta0 (local delta): enters the total delta, so delta' shrinks; with cycle_delta="group" the per-cycle
  delta is the Gaussian's hockey-stick at a fixed eps, which grows as delta0 grows (the noise
  sqrt(2 ln(1.25/delta0)) / eps0 shrinks): INCREASING.
* sigma: DECREASING (Lemma 1's coefficient ~ 1/sigma^2 and its admissible orders widen; the Gaussian RDP /
  analytic Gaussian of the baselines).  lipschitz: INCREASING.  contributions (T_u): INCREASING.
* n: DECREASING only where proven (spotted contributions: the count's mean 2 N_u / n; central DP-SGD: the
  sampling rate 1/n); 0 elsewhere (ln n / n is not monotone at n = 2, the Chernoff count and the cycle sup
  move both ways), as are delta_hat, delta_tilde, delta_prime and shuffle_delta (budget splits).
"""

from __future__ import annotations

import numpy as np

from ..bounds import Bound, register
from .._core.status import Status
from ._params import (ACCOUNTANT, ADVANCED_DELTA0, ADVANCED_EPS0, ADVANCED_STEPS, BASSILY_N, COLLUDERS, COMPOSITION,
                      CONTRIBUTIONS, CYCLE_DELTA, DELTA, DELTA0, DELTA_HAT, DELTA_PRIME, DELTA_TILDE, EPS0, EPS0_GAUSS,
                      EQ11_EPS0, ERLINGSSON_EPS0, ERLINGSSON_N, KOV_BOUND_EPS0, KOV_BOUND_STEPS, LIPSCHITZ, METHOD, N,
                      N_SAMPLED, ORDERS, SHUFFLE_DELTA, SIGMA, SPOTTED_N, STEPS_K, STEPS_SGD, STEPS_T, THM4_DELTA,
                      THM4_EPS0)
from ._common import _slack, _times_up
from ._complete_graph import complete_graph_histogram_bound, complete_graph_sum_bound, spotted_contributions_epsilon
from ._composition import advanced_composition_epsilon, kov_homogeneous_epsilon
from ._local import local_sum_bound
from ._ring import ring_histogram_bound, ring_sum_bound
from ._sgd import (central_sgd_bassily_epsilon, central_sgd_epsilon, local_sgd_epsilon, network_sgd_epsilon,
                   network_sgd_rdp, sgd_theorem4_bound)

PAPER = "Cyffers & Bellet 2022 (Privacy amplification by decentralization)"
DRV = "advanced composition (Dwork, Rothblum, Vadhan 2010)"
BUDGET = ("delta is the total: delta' of the advanced composition is delta minus the other terms (eps = inf, "
          "status fallback, where nothing is left).")
APP_D_FIX = ("Corrected: the second term of the advanced composition is k eps_c (e^{eps_c} - 1) (App. D prints "
             "eps0 for eps_c; docs/errata.md#e-network-thm3-composition).")



def _status(ok):
    return np.where(np.asarray(ok), Status.OK, Status.FALLBACK)


def _with_budget(fn, delta, **params):
    """fn(**params, delta_prime=.) -> NetworkBound, evaluated at delta' = delta - (its other delta terms)."""
    tiny = 1e-300
    probe = fn(**params, delta_prime=tiny)
    other = np.asarray(probe.delta, np.float64) - tiny
    dp = _slack(delta, other)  # rounded down (other is rounded up by fn): never more than the total leaves
    left = (dp > 0) & (other < 1.0)
    res = fn(**params, delta_prime=np.where(left, dp, 0.5))
    eps = np.where(left, np.asarray(res.epsilon, np.float64), np.inf)
    return {"epsilon": eps, "status": _status(left & np.asarray(res.valid))}


# ----------------------------------------------------------------------------------------------------------
# Composition


def _advanced(eps0, steps, delta, delta0):
    dp = _slack(delta, _times_up(steps, delta0))
    left = dp > 0
    eps = np.asarray(advanced_composition_epsilon(eps0, steps=steps, delta_prime=np.where(left, dp, 0.5)))
    return {"epsilon": np.where(left, eps, np.inf), "status": _status(left)}


register(Bound(
    id="network.advanced-composition", example=dict(eps0=0.1, steps=100, delta=1e-5, delta0=1e-8),
    paper="Dwork, Rothblum, Vadhan 2010, Thm III.3 (as used throughout Cyffers & Bellet 2022)",
    theorem="advanced composition: (sqrt(2 k ln(1/delta')) eps0 + k eps0 (e^eps0 - 1), k delta0 + delta')",
    summary="eps of the adaptive composition of steps (eps0, delta0)-DP mechanisms",
    params=(ADVANCED_EPS0, ADVANCED_STEPS, DELTA, ADVANCED_DELTA0),
    answer="epsilon", kernel=_advanced,
    notes="delta' = delta - steps delta0 (eps = inf, status fallback, where it is not positive)."))


def _kov(eps0, steps, delta):
    return {"epsilon": kov_homogeneous_epsilon(eps0=eps0, steps=steps, delta=delta)}


register(Bound(
    id="network.kov-optimal-composition", example=dict(eps0=0.1, steps=100, delta=1e-5),
    paper="Kairouz, Oh, Viswanath 2015 (The composition theorem for differential privacy)",
    theorem="Thm 3.3 (exact optimal homogeneous composition), at the atoms (k - 2i) eps0",
    summary="optimal eps of the composition of steps eps0-DP mechanisms (smallest feasible atom)",
    params=(KOV_BOUND_EPS0, KOV_BOUND_STEPS, DELTA),
    answer="epsilon", kernel=_kov,
    notes="Rounded up to an atom (k - 2i) eps0, so not monotone in eps0 or steps (declared 0)."))


# ----------------------------------------------------------------------------------------------------------
# Ring (Section 3)



def _ring_sum(steps, eps0, delta0, delta):
    dp = _slack(delta, _times_up(steps, delta0))
    left = dp > 0
    r = ring_sum_bound(steps=steps, eps0=eps0, delta0=delta0, delta_prime=np.where(left, dp, 0.5))
    return {"epsilon": np.where(left, np.asarray(r.epsilon), np.inf), "status": _status(left)}


register(Bound(
    id="network.ring-sum", example=dict(steps=10, eps0=0.5, delta0=1e-7, delta=1e-5),
    paper=PAPER, theorem=f"Thm 1 (Algorithm 1, Remark 1): {DRV} over K visits",
    summary="network-DP eps of real summation on the ring, (eps0, delta0)-LDP noise once every n - 1 hops",
    params=(STEPS_K, EPS0, DELTA0, DELTA), answer="epsilon", kernel=_ring_sum,
    notes="delta' = delta - K delta0 (eps = inf, status fallback, where it is not positive).  Remark 1's "
          "distributed noise uses sigma_loc / sqrt(n - 1) (the printed sqrt(n) under-noises)."))



def _ring_hist(form):
    def kernel(n, steps, eps0, delta, delta_prime):
        ds = _slack(delta, delta_prime) / steps * (1.0 - 2.0 ** -51)  # rounded down
        left = ds > 0
        if form == "erlingsson":
            # Erlingsson et al.'s Cor. 9 needs delta < 1/100: a larger per-visit delta is spent as 0.0099
            # (a guarantee at a smaller delta holds at the larger one)
            ds = np.minimum(ds, 0.0099)
        r = ring_histogram_bound(n=n, steps=steps, eps0=eps0, delta=np.where(left, ds, 1e-3),
                                 delta_prime=delta_prime, form=form)
        return {"epsilon": np.where(left, np.asarray(r.epsilon), np.inf), "status": _status(left & np.asarray(r.valid))}

    return kernel


register(Bound(
    id="network.ring-histogram", example=dict(n=10000, steps=10, eps0=1.0, delta=1e-5, delta_prime=1e-6),
    paper=PAPER, theorem=f"Thm 2 general form (Remark 2): FMT 2021 Thm 3.1 on the n - 1 reports between two "
                         f"visits, {DRV} over K visits",
    summary="network-DP eps of histograms on the ring (randomized response at eps0, shuffled between visits)",
    params=(N, STEPS_K, EPS0, DELTA, DELTA_PRIME), answer="epsilon", kernel=_ring_hist("fmt"),
    notes="Per-visit delta (delta - delta') / K.  FMT's condition eps0 <= ln((n - 1) / (16 ln(4/delta))) "
          "(Cyffers & Bellet quote ln(2/delta); FMT's Thm 3.1 needs ln(4/delta), "
          "docs/errata.md#e-network-fmt-condition); outside it a visit costs eps0 (status fallback).  n - 1 "
          "reports shuffled (v knows her own; the paper writes n)."))

register(Bound(
    id="network.ring-histogram-erlingsson",
    example=dict(n=10000, steps=10, eps0=0.2, delta=1e-5, delta_prime=1e-6),
    paper=PAPER, theorem=f"Thm 2 (Erlingsson et al. 2019 Cor. 9: 12 eps0 sqrt(ln(1/delta)/(n - 1)) per visit), "
                         f"{DRV} over K visits",
    summary="network-DP eps of histograms on the ring, Thm 2's closed form (eps0 < 1/2, n > 1000)",
    params=(ERLINGSSON_N, STEPS_K, ERLINGSSON_EPS0, DELTA, DELTA_PRIME),
    answer="epsilon", kernel=_ring_hist("erlingsson"),
    notes="Per-visit delta (delta - delta') / K, capped at 0.0099 (the theorem needs delta < 1/100).  n - 1 "
          "reports shuffled (the paper writes n)."))


# ----------------------------------------------------------------------------------------------------------
# Complete graph (Section 4.1, App. D, App. E)


def _cg_sum(fixed):
    def kernel(n, steps, eps0, delta0, delta, colluders, cycle_delta, delta_hat=0.5):
        return _with_budget(complete_graph_sum_bound, delta, n=n, steps=steps, eps0=eps0, delta0=delta0,
                            delta_hat=delta_hat, colluders=colluders, fixed_contributions=fixed,
                            cycle_delta=cycle_delta)

    return kernel


register(Bound(
    id="network.complete-graph-sum",
    example=dict(n=10000, steps=10**6, eps0=0.5, delta0=1e-8, delta=1e-2, delta_hat=1e-6),
    paper=PAPER, theorem=f"Thm 3, full non-asymptotic form of App. D (Eq. 10 per cycle, {DRV} over N_v + T/n "
                         f"cycles), Sec. 4.3 collusions",
    summary="network-DP eps of real summation by a random walk on the complete graph (Gaussian eps0-LDP)",
    params=(N, STEPS_T, EPS0_GAUSS, DELTA0, DELTA, DELTA_HAT, COLLUDERS, CYCLE_DELTA), answer="epsilon",
    kernel=_cg_sum(False),
    notes=APP_D_FIX + " " + BUDGET + "  Status fallback also where T/n < 3 ln(1/delta_hat) (the paper's "
          "Chernoff form fails; the general multiplicative bound is used)."))

register(Bound(
    id="network.complete-graph-sum-fixed", example=dict(n=10000, steps=10**6, eps0=0.5, delta0=1e-8, delta=1e-2),
    paper=PAPER, theorem=f"Thm 3 / App. D with every user contributing exactly T/n times (Fig. 1(a), dashed), "
                         f"{DRV} over 2 T/n cycles",
    summary="network-DP eps of real summation on the complete graph with enforced contributions (T/n each)",
    params=(N, STEPS_T, EPS0_GAUSS, DELTA0, DELTA, COLLUDERS, CYCLE_DELTA), answer="epsilon",
    kernel=_cg_sum(True), notes=APP_D_FIX + " " + BUDGET))


def _cg_hist(form):
    def kernel(n, steps, eps0, shuffle_delta, delta, delta_hat, colluders, cycle_delta):
        kw = dict(n=n, steps=steps, eps0=eps0, delta_hat=delta_hat, colluders=colluders, cycle_delta=cycle_delta)
        out = _with_budget(lambda **k: complete_graph_histogram_bound(**k, delta=shuffle_delta, form="fmt"), delta,
                           **kw)
        if form == "eq11":
            # Thm 6's conditions n / c >= 14^2 ln(4/delta) (eps0 <= 1 is the domain); elsewhere the numerical form
            # (a valid bound, status fallback)
            shape = np.broadcast_shapes(*(np.shape(x) for x in (n, steps, eps0, shuffle_delta, delta, delta_hat,
                                                                  colluders)))
            cond = np.broadcast_to(n / colluders >= 196.0 * np.log(4.0 / shuffle_delta), shape)
            safe_n = np.where(cond, n, np.ceil(196.0 * np.log(4.0 / shuffle_delta) * colluders) + 1.0)
            eq = _with_budget(lambda **k: complete_graph_histogram_bound(**k, delta=shuffle_delta, form="eq11"), delta,
                              **{**kw, "n": safe_n})
            out = {"epsilon": np.where(cond, eq["epsilon"], out["epsilon"]),
                   "status": np.where(cond, eq["status"], Status.FALLBACK)}
        return out

    return kernel


HIST_NOTES = ("Per-cycle delta: shuffle_delta (cycle_delta='paper', App. E) or with Balle et al. Thm 10's group "
              "terms (default 'group': for randomized response they are large, so eps is often inf there). " + BUDGET
              + "  Corrected: the second term of the composition uses eps_c (the printed Thm 6 has App. D's slip, "
              "eps0; docs/errata.md#e-network-thm6-composition).")

register(Bound(
    id="network.complete-graph-histogram",
    example=dict(n=100000, steps=10**7, eps0=1.0, shuffle_delta=1e-9, delta=1e-5, delta_hat=1e-6,
                 cycle_delta="paper"),
    paper=PAPER, theorem=f"Thm 6 / App. E complete formula (Remark 4): sup over cycle lengths of Eq. 10 with FMT "
                         f"2021 Thm 3.1, {DRV} over N_v + T/n cycles",
    summary="network-DP eps of histograms (randomized response) by a random walk on the complete graph",
    params=(N, STEPS_T, EPS0, SHUFFLE_DELTA, DELTA, DELTA_HAT, COLLUDERS, CYCLE_DELTA), answer="epsilon",
    kernel=_cg_hist("fmt"), notes=HIST_NOTES))

register(Bound(
    id="network.complete-graph-histogram-eq11",
    example=dict(n=100000, steps=10**7, eps0=0.5, shuffle_delta=1e-9, delta=1e-5, delta_hat=1e-6,
                 cycle_delta="paper"),
    paper=PAPER, theorem=f"Thm 6 closed form (Eq. 11): eps_c = 21 sqrt(ln(4/delta)) eps0 / sqrt(n), {DRV}",
    summary="network-DP eps of histograms on the complete graph, Thm 6's closed form (eps0 <= 1)",
    params=(N, STEPS_T, EQ11_EPS0, SHUFFLE_DELTA, DELTA, DELTA_HAT, COLLUDERS, CYCLE_DELTA), answer="epsilon", kernel=_cg_hist("eq11"),
    notes="The constant 21 holds though App. E's printed chain gives 42 (see amplify_jax.network).  Where "
          "n / c < 14^2 ln(4/shuffle_delta) the complete formula is returned with status fallback. " + HIST_NOTES))


def _local_sum(fixed):
    def kernel(n, steps, eps0, delta0, delta, delta_hat=0.5):
        return _with_budget(local_sum_bound, delta, n=n, steps=steps, eps0=eps0, delta0=delta0, delta_hat=delta_hat,
                            fixed_contributions=fixed)

    return kernel


register(Bound(
    id="network.local-sum", example=dict(n=1000, steps=100000, eps0=0.5, delta0=1e-8, delta=1e-5, delta_hat=1e-6),
    paper=PAPER, theorem=f"Sec. 5.1 / Fig. 1(a) local-DP baseline: Chernoff bound on N_u, {DRV}",
    summary="local-DP eps of Algorithm 3 (every contribution of a user is seen)",
    params=(N, STEPS_T, EPS0, DELTA0, DELTA, DELTA_HAT), answer="epsilon", kernel=_local_sum(False),
    notes=BUDGET + "  Status fallback also where T/n < 3 ln(1/delta_hat) (general Chernoff form)."))

register(Bound(
    id="network.local-sum-fixed", example=dict(n=1000, steps=100000, eps0=0.5, delta0=1e-8, delta=1e-5),
    paper=PAPER, theorem=f"Sec. 5.1 / Fig. 1(a) local-DP baseline with exactly T/n contributions per user, {DRV}",
    summary="local-DP eps of Algorithm 3 with enforced contributions (T/n each)",
    params=(N, STEPS_T, EPS0, DELTA0, DELTA), answer="epsilon", kernel=_local_sum(True), notes=BUDGET))


def _spotted(n, contributions, eps0, delta, delta_tilde, composition):
    dp = _slack(delta, delta_tilde)
    left = dp > 0
    r = spotted_contributions_epsilon(n=n, contributions=contributions, eps0=eps0,
                                      delta_prime=np.where(left, dp, 0.5), delta_tilde=delta_tilde,
                                      composition=composition)
    return {"epsilon": np.where(left, np.asarray(r.epsilon), np.inf), "spotted": r.spotted,
            "status": _status(left & np.asarray(r.valid))}


register(Bound(
    id="network.spotted-contributions",
    example=dict(n=1000, contributions=1e5, eps0=0.5, delta=1e-5, delta_tilde=1e-6),
    paper=PAPER, theorem="App. G, Lemma 2 (Chernoff bound on the spotted contributions, composition)",
    summary="eps of the contributions spotted when sender and receiver are known (pure eps0-LDP each)",
    params=(SPOTTED_N, CONTRIBUTIONS, EPS0, DELTA, DELTA_TILDE, COMPOSITION),
    answer="epsilon", kernel=_spotted, outputs=("spotted",),
    notes="Corrected: advanced composition over S spotted contributions has sqrt(2 S ln(1/delta')) (Lemma 2 "
          "prints sqrt(S ln(1/delta')), too small; docs/errata.md#e-network-lemma2-factor).  delta' = delta - "
          "delta_tilde (eps = inf, status fallback, where not positive); status fallback also where the general "
          "Chernoff form is used."))


# ----------------------------------------------------------------------------------------------------------
# SGD (Section 4.2, App. F)


def _thm4(n, steps, eps0, delta, delta_hat, colluders):
    ds = delta - delta_hat
    left = ds > 0
    r = sgd_theorem4_bound(n=n, steps=steps, eps0=eps0, delta=np.where(left, ds, 0.25), delta_hat=delta_hat,
                           colluders=colluders)
    return {"epsilon": np.where(left, np.asarray(r.epsilon), np.inf), "status": _status(left & np.asarray(r.valid))}


register(Bound(
    id="network.sgd-theorem4", example=dict(n=1000, steps=100000, eps0=0.5, delta=1e-5, delta_hat=1e-6),
    paper=PAPER, theorem="Thm 4 (Eq. 7), closed form",
    summary="network-DP eps of private SGD on the complete graph, noise calibrated to (eps0, delta - delta_hat)-LDP",
    params=(N, STEPS_T, THM4_EPS0, THM4_DELTA, DELTA_HAT, COLLUDERS),
    answer="epsilon", kernel=_thm4,
    notes="The guarantee is (eps', delta_step + delta_hat) with the per-step noise calibrated to (eps0, delta_step): "
          "delta_step = delta - delta_hat (eps = inf, status fallback, where not positive).  Status fallback where "
          "App. F's order misses alpha >= 2 or Lemma 1's constraint, or the Chernoff form fails (use network.sgd)."))


def _sgd(sigma, n, contributions, delta, lipschitz, colluders, method):
    r = network_sgd_epsilon(sigma=sigma, n=n, contributions=contributions, delta=delta, lipschitz=lipschitz,
                            colluders=colluders, method=method)
    return {"epsilon": r.epsilon, "order": r.order}


register(Bound(
    id="network.sgd", example=dict(sigma=10.0, n=1000, contributions=100.0, delta=1e-5, lipschitz=1.0),
    paper=PAPER, theorem="Lemma 1 (App. F; Feldman et al. 2018 amplification by iteration) and Remark 5 (order "
                         "optimised in (1, alpha_max])",
    summary="network-DP eps of Algorithm 4 (private SGD by a token walk) from Lemma 1's RDP",
    params=(SIGMA, N, CONTRIBUTIONS, DELTA, LIPSCHITZ, COLLUDERS, METHOD), answer="epsilon", kernel=_sgd,
    outputs=("order",),
    notes="Lemma 1 alone: for small sigma the admissible orders are few and local-sgd can be smaller (local DP "
          "implies network DP).  Follows the paper's factor 4 in Lemma 1 (the authors' script has 2)."))


def _local_sgd(sigma, contributions, delta, lipschitz, method, accountant="rdp"):
    r = local_sgd_epsilon(sigma=sigma, contributions=contributions, delta=delta, lipschitz=lipschitz, method=method,
                          accountant=accountant)
    if accountant == "pld":  # its status flags an +inf (error)
        return {"epsilon": r.epsilon, "order": np.zeros_like(np.asarray(r.epsilon)), "status": r.status}
    return {"epsilon": r.epsilon, "order": r.order}


register(Bound(
    id="network.local-sgd", example=dict(sigma=10.0, contributions=100.0, delta=1e-5, lipschitz=1.0),
    paper=PAPER, theorem="Sec. 5.2 local DP-SGD baseline: Gaussian RDP (Mironov 2017), sensitivity 2L, T_u releases; "
                         "or (accountant=pld) the PLD of the one Gaussian they compose to (Doroshenko et al. 2022)",
    summary="local-DP eps of Algorithm 4 (every gradient release of a user is seen)",
    params=(SIGMA, CONTRIBUTIONS, DELTA, LIPSCHITZ, METHOD, ACCOUNTANT), answer="epsilon", kernel=_local_sgd,
    outputs=("order",),
    notes="Sensitivity 2L (replace-one), as in the paper (the authors' script uses L).  accountant=pld: T_u "
          "Gaussian releases compose to one Gaussian of shift 2L sqrt(T_u) / sigma (Dong, Roth, Su 2022, Cor. "
          "3.3), whose PLD is taken; it needs sigma / (2L sqrt(T_u)) >= pld.SIGMA_RANGE's lower end (a ValueError "
          "otherwise) and takes no method."))


def _central_sgd(sigma, n, steps, delta, lipschitz, accountant="rdp"):
    r = central_sgd_epsilon(sigma=sigma, n=n, steps=steps, delta=delta, lipschitz=lipschitz, accountant=accountant)
    if accountant == "pld":  # its status flags an +inf (error)
        return {"epsilon": r.epsilon, "order": np.zeros_like(np.asarray(r.epsilon)), "status": r.status}
    return {"epsilon": r.epsilon, "order": r.order}


register(Bound(
    id="network.central-sgd", example=dict(sigma=10.0, n=1000, steps=10000, delta=1e-5, lipschitz=1.0),
    paper=PAPER, theorem="Sec. 5.2 centralized DP-SGD baseline, accounted by RDP: sampling one user without "
                         "replacement (Wang, Balle, Kasiviswanathan 2019 Thm 9), orders 2..128, Balle et al. 2020; "
                         "or (accountant=pld) the PLD of Dong, Roth, Su 2022 Thm 4.2's C_q(G_mu) pair",
    summary="central DP-SGD eps (one user per step, Gaussian noise, sensitivity 2L), RDP accounting",
    params=(SIGMA, N_SAMPLED, STEPS_SGD,
            DELTA, LIPSCHITZ, ACCOUNTANT),
    answer="epsilon", kernel=_central_sgd, outputs=("order",),
    notes="accountant=pld: pld.epsilon('wor-gaussian') at sigma / (2L), q = 1/n (sampling without replacement "
          "under replace-one), not the Poisson-subsampled Gaussian's PLD, which is a lower bound here "
          "(network.central_sgd_epsilon says why); it needs sigma / (2L) >= pld.SIGMA_RANGE's lower end."))


def _bassily(sigma, n, steps, delta, lipschitz):
    # the route needs delta1 = n delta / (2T) < 1: a larger delta is spent as T / n (delta1 = 1/2); a guarantee at
    # a smaller delta holds at the larger one (status fallback there)
    cap = steps / n
    d = np.minimum(delta, cap)
    r = central_sgd_bassily_epsilon(sigma=sigma, n=n, steps=steps, delta=d, lipschitz=lipschitz)
    eps = np.asarray(r.epsilon)
    status = np.where(np.isfinite(eps), _status(np.asarray(r.valid) & (delta <= cap)), Status.ERROR)
    return {"epsilon": eps, "status": status}  # +inf (status error): the bound leaves float64 (sigma / L < ~0.07)


register(Bound(
    id="network.central-sgd-bassily", example=dict(sigma=10.0, n=1000, steps=10000, delta=1e-5, lipschitz=1.0),
    paper=PAPER, theorem="Sec. 5.2 centralized DP-SGD baseline along Bassily, Smith, Thakurta 2014: analytic "
                         "Gaussian per step (Balle & Wang 2018), subsampling (Balle et al. 2018), " + DRV,
    summary="central DP-SGD eps accounted by amplification and advanced composition (the paper's comparison)",
    params=(SIGMA, BASSILY_N, STEPS_SGD, DELTA,
            LIPSCHITZ),
    answer="epsilon", kernel=_bassily,
    notes="Our derivation along Bassily et al.'s route (the authors' script uses a closed form).  Where "
          "delta > T / n the route's per-step delta would reach 1: the bound at delta = T / n is returned "
          "(status fallback).  Where the bound leaves float64 (sigma / L below about 0.07) the answer is +inf "
          "with status error."))


def _sgd_rdp(orders, sigma, n, contributions, lipschitz, colluders):
    need = lipschitz * np.sqrt(2.0 * np.max(orders) * (np.max(orders) - 1.0))
    s_eff = np.maximum(sigma, need)
    curve = np.asarray(network_sgd_rdp(orders, sigma=s_eff, n=n, contributions=contributions, lipschitz=lipschitz,
                                       colluders=colluders))
    scale = np.where(s_eff == sigma, 1.0, (s_eff / sigma) ** 2)  # the coefficient is 4 T_u L^2 ln n / (sigma^2 n)
    curve = curve * np.asarray(scale)[..., None]
    ok = np.asarray(sigma)[..., None] >= np.asarray(lipschitz)[..., None] * np.sqrt(2.0 * orders * (orders - 1.0))
    ok = np.broadcast_to(ok, curve.shape)
    return {"rdp": np.where(ok, curve, np.inf), "status": _status(ok.all(axis=-1))}


register(Bound(
    id="network.sgd-rdp", example=dict(orders=[2.0, 4.0, 6.0], sigma=10.0, n=1000, contributions=100.0),
    paper=PAPER, theorem="Lemma 1 (App. F): (alpha, 4 T_u alpha L^2 ln n / (sigma^2 n))-network RDP for "
                         "sigma >= L sqrt(2 alpha (alpha - 1))",
    summary="network-RDP curve of Algorithm 4 (private SGD by a token walk)",
    params=(ORDERS, SIGMA, N, CONTRIBUTIONS, LIPSCHITZ,
            COLLUDERS),
    answer="rdp", kernel=_sgd_rdp,
    notes="At orders where sigma < L sqrt(2 alpha (alpha - 1)) the lemma says nothing: rdp = inf there, status "
          "fallback."))
