"""Bounds of the traffic family (Ladjel, Anciaux, Bellet, Scerri), declared for the registry
(:mod:`amplify_jax.bounds`).

Every kernel calls the family's public function; where the family falls back to the local guarantee (no eps
below it reaches delta; Thm 3's printed formula, which is unsound) the status is :data:`Status.FALLBACK`.
Monotone directions are the theorems' (stated where declared), checked numerically on grids
(tests/test_traffic.py::test_registered_*).  The deployment inversions of the family (scrambler_calibrate_dummies,
scrambler_calibrate_sampling, scrambler_calibrate_n) are ``bounds.invert`` of ``traffic.scrambler-delta`` over dummies,
sampling and n.

Corrections of the printed paper (those the registry's ``notes`` refer to; each entry of docs/errata.md gives
the test that shows it):

* Thm 4 (Hoeffding), the sign of a: printed a = 1 - e^eps, used a = -E[L] = e^eps - 1
  (docs/errata.md#e-traffic-thm4-a); the range: printed b = (1 - sigma) T (1 + e^eps) - 2 sigma (1 - e^eps),
  used b = (1 - sigma) T (1 + e^eps) (docs/errata.md#e-traffic-thm4-b).
* Lemma 5, the upper end of L: printed (1 - sigma) T - sigma (1 - e^eps), used (1 - sigma) T + sigma (1 - e^eps)
  (docs/errata.md#e-traffic-lemma5).
* Lemma 3 (Bennett): printed b_+ / (a k ln(1 + beta)) exp(...), Balle et al.'s misprint; used their corrected
  (b_+ / ln(1 + beta)) exp(-(k c / b_+^2) phi(beta)), beta = a b_+ / c (docs/errata.md#e-traffic-lemma3-bennett).
* Sec. IV-C (Monte Carlo): the printed R = 5000 point estimate is not a bound; ``method="exact"`` computes
  E[sum L]_+ from the multinomial counts of the two targets (docs/errata.md#e-traffic-monte-carlo).
* Thm 3 (capped scrambler) under-reports as printed; the local guarantee is registered, the printed formula is
  only an output (docs/errata.md#e-traffic-thm3).  Thm 3 draws among T - 1 other targets, Thm 4 among all T;
  each bound keeps its theorem's convention (docs/errata.md#e-traffic-targets).
"""

from __future__ import annotations

import numpy as np

from ..bounds import DECREASING, INCREASING, Bound, Choice, Param, register
from .._core.status import Status
from ..shuffle.blanket import exact_table_check
from ._local import local_epsilon
from ._params import (DUMMIES, EPSILON, EXACT_DUMMIES, EXACT_N, EXACT_SAMPLING_ANY, EXACT_TARGETS, N,
                      PURE_DELTA, PURE_DUMMIES, SAMPLING, SEARCH_DELTA, TARGETS)
from ._scrambler_delta import scrambler_delta, scrambler_epsilon
from ._scrambler_pure import _scrambler_pure_exact_any_sampling, scrambler_pure_epsilon

LADJEL = ("Ladjel, Anciaux, Bellet, Scerri, Mitigating Leakage from Data Dependent Communications in "
          "Decentralized Computing using Differential Privacy")

METHOD = Param("method", Choice(("exact", "bennett", "hoeffding")),
               "bound on E[sum L]_+: exact (multinomial counts), bennett (corrected) or hoeffding (Thm 4 "
               "corrected)", default="exact")

THM4 = "Thm 4 and App. E (Lemma 2, Lemma 3, Lemma 5); T convention (a sampled message goes to any of the T targets)"
THM4_NOTES = ("Errata (docs/errata.md#e-traffic-thm4-a, #e-traffic-thm4-b, #e-traffic-lemma5): Thm 4's a = e^eps - 1 (printed 1 - e^eps) and b = (1 - sigma) T (1 + e^eps) (printed with "
              "an extra -2 sigma (1 - e^eps)); Lemma 5's upper end of L with the sign of sigma (1 - e^eps) "
              "corrected; Lemma 3's Bennett bound in its corrected form; 'exact' uses the multinomial counts of "
              "the two targets.  Decreasing in n and dummies (Lemma 2: m' ~ Bin(n - 1, sigma) grows "
              "stochastically with n, and g(K) = E[sum_{i<=K} L_i]_+ / K does not increase in "
              "K = m' + 1 + d).  Decreasing in sampling (checked on grids of every method: more redirected "
              "messages, a thicker blanket; the family's scrambler_calibrate_sampling relies on it); targets not "
              "declared monotone.  Method exact is refused (one line naming n) where its table of "
              "Bin(M, 1/2) CDFs would need counts M = N1 + N2 beyond 1500 (the engine tabulates them all: "
              "T = 10, sigma = 0.5, n = 1e6 would ask for 32 GiB); use bennett or hoeffding there.")


def _scrambler(targets, n, sampling, dummies, method, delta):
    exact_table_check(method, n, dummies, targets, sampling)
    r = scrambler_epsilon(delta, targets=targets, n=n, sampling=sampling, dummies=dummies, method=method)
    return {"epsilon": np.asarray(r.epsilon), "achieved_delta": np.asarray(r.achieved),
            "status": np.asarray(r.status, np.int32)}  # Status.OK / Status.FALLBACK, the family's own codes


register(Bound(
    id="traffic.scrambler", example=dict(targets=10, n=100, sampling=0.5, dummies=10, delta=1e-6),
    paper=LADJEL, theorem=THM4 + "; eps by search (Sec. IV-C)",
    summary="eps of the scrambler with local sampling and dummies: smallest eps with delta(eps) <= delta",
    params=(TARGETS, N, SAMPLING, DUMMIES, METHOD, SEARCH_DELTA), answer="epsilon", kernel=_scrambler,
    outputs=("achieved_delta",),
    notes=THM4_NOTES + "  Status fallback where no eps below the local guarantee ln(1 + (1 - sigma) T / sigma) "
                       "reaches delta: the value is that guarantee (+inf at sampling 0).  Bisection to rtol "
                       "1e-6, feasible end, re-checked."))


def _scrambler_delta(epsilon, targets, n, sampling, dummies, method):
    exact_table_check(method, n, dummies, targets, sampling)
    r = scrambler_delta(epsilon, targets=targets, n=n, sampling=sampling, dummies=dummies, method=method)
    return {"delta": np.asarray(r.delta), "local": np.asarray(r.local)}


register(Bound(
    id="traffic.scrambler-delta", example=dict(epsilon=1.0, targets=10, n=100, sampling=0.5, dummies=10),
    paper=LADJEL, theorem=THM4,
    summary="delta(eps) of the scrambler with local sampling and dummies (Lemma 2 sum)",
    params=(EPSILON, TARGETS, Param("n", N.domain, N.doc), Param("sampling", SAMPLING.domain, SAMPLING.doc),
            Param("dummies", DUMMIES.domain, DUMMIES.doc), METHOD),
    answer="delta", kernel=_scrambler_delta, outputs=("local",),
    notes=THM4_NOTES + "  Decreasing in eps.  delta = 0 where eps >= the local guarantee (`local`; Lemma 2 gives "
                       "0 there too).  n, sampling and dummies are NOT declared monotone here: Lemma 2's sum is, but the "
                       "sound value adds the bounded truncated mass of its windows (~1e-18), which is not (seen "
                       "on grids where delta < ~1e-17).  The family's scrambler_calibrate_dummies, "
                       "scrambler_calibrate_sampling and scrambler_calibrate_n (fixed eps, delta) are served by "
                       "inverting traffic.scrambler over dummies, sampling, n at target_epsilon (same feasible set up "
                       "to its eps rtol)."))


def _local(targets, sampling, dummies, delta):
    d = np.minimum(dummies, targets - 1.0)  # d >= T - 1 floods every target: a broadcast
    r = local_epsilon(targets=targets, sampling=sampling, dummies=d)
    return {"epsilon": np.asarray(r.epsilon), "status": np.where(np.asarray(r.valid), Status.OK, Status.FALLBACK)
            .astype(np.int32)}


register(Bound(
    id="traffic.local", example=dict(targets=10, sampling=0.5, dummies=2),
    paper=LADJEL, theorem="Thm 2 (App. B): eps = ln((1 - sigma) T / (sigma (d + 1)) + 1); T convention",
    summary="pure eps of local sampling + flooding without scrambler (d dummies to distinct targets)",
    params=(Param("targets", TARGETS.domain, TARGETS.doc, INCREASING, search=(2, 10**6)),
            Param("sampling", SAMPLING.domain, SAMPLING.doc, DECREASING, search=(1e-6, 1.0)),
            Param("dummies", DUMMIES.domain, "dummy messages per source (to distinct other targets; "
                  "d >= T - 1 is a broadcast, eps = 0)", DECREASING, search=(0, 10**6), default=0),
            PURE_DELTA),
    answer="epsilon", kernel=_local,
    notes="The paper states d in 1..T - 2; the proof holds for d = 0 (sampling only).  dummies >= targets - 1 "
          "floods every target (eps = 0; the family function refuses d > T - 1, here it is capped at T - 1).  "
          "sampling 0: no finite eps, +inf with status fallback.  Monotone by the formula: decreasing in "
          "sampling and dummies, increasing in targets."))


def _scrambler_pure(targets, n, sampling, dummies, delta):
    r = scrambler_pure_epsilon(targets=targets, n=n, sampling=sampling, dummies=dummies)
    eps = np.asarray(r.epsilon)
    return {"epsilon": eps, "printed": np.asarray(r.printed), "valid": np.asarray(r.valid),
            "status": np.full(eps.shape, Status.FALLBACK, np.int32)}


register(Bound(
    id="traffic.scrambler-pure", example=dict(targets=3, n=3, sampling=0.3, dummies=1),
    paper=LADJEL, theorem="Thm 3 (App. C), capped scrambler; T - 1 convention (R_lie = sigma / (T - 1))",
    summary="pure eps of the capped scrambler: the sound local guarantee (Thm 3 as printed under-reports)",
    params=(TARGETS, Param("n", N.domain, "messages per scrambler"),
            Param("sampling", SAMPLING.domain, SAMPLING.doc), PURE_DUMMIES, PURE_DELTA),
    answer="epsilon", kernel=_scrambler_pure, outputs=("printed", "valid"),
    notes="Thm 3 as printed is NOT sound (found here; docs/errata.md#e-traffic-thm3): exact enumeration of the capped "
          "algorithm (traffic.scrambler-pure-exact) gives larger worst-case ratios (T = 3, n = 3, d = 1, "
          "sigma = 0.3: printed 1.40415, exact 1.47174).  The answer is therefore always the local guarantee "
          "|ln((1 - sigma)(T - 1) / sigma)| (post-processing), status fallback everywhere; `printed` keeps the "
          "formula (for Figure 5 only, not a bound), `valid` its hypotheses.  No parameter declared monotone "
          "(the guarantee is not monotone in sampling or targets and does not depend on n, dummies)."))


def _scrambler_pure_exact(targets, n, sampling, dummies, delta):
    f = np.vectorize(lambda t, m, s, d: _scrambler_pure_exact_any_sampling(targets=t, n=m, sampling=s, dummies=d),
                     otypes=[np.float64])
    eps = f(targets, n, sampling, dummies)
    # 0 < sampling < 1: every output is possible under both graphs, so eps is finite; +inf means the output
    # probabilities underflowed (sampling ~1e-300): the safe value, flagged
    return {"epsilon": eps, "status": np.where(np.isfinite(eps), Status.OK, Status.ERROR).astype(np.int32)}


register(Bound(
    id="traffic.scrambler-pure-exact", example=dict(targets=3, n=3, sampling=0.3, dummies=1),
    paper=LADJEL, theorem="Algorithm 1 with B = True (capped scrambler) after the T - 1 convention randomizer: "
                          "exact worst-case log-ratio by enumeration (checks Thm 3, App. C)",
    summary="exact pure eps of the capped scrambler by enumeration (small instances: T <= 4, n <= 8, d <= 8)",
    params=(EXACT_TARGETS, EXACT_N, EXACT_SAMPLING_ANY, EXACT_DUMMIES, PURE_DELTA),
    answer="epsilon", kernel=_scrambler_pure_exact,
    notes="Exact (enumeration of every input, neighbour and output; +inf where an output has probability 0 on "
          "one side).  Python loops, scalars evaluated one by one: small instances only.  No parameter declared "
          "monotone."))
