"""The traffic family's parameters, each domain stated once (issue 29, item 2).

The public functions validate their numeric inputs through these :class:`Param` objects
(:func:`amplify_jax._core.domains.check_params`) and ``_bounds.py`` declares the registry's bounds with the same
objects, so ``bounds.evaluate`` and the functions refuse the same values with the same one-line message.

Where a domain's ends come from (Ladjel, Anciaux, Bellet, Scerri: Thm 2, 3 and 4 hold for every T >= 2, n >= 1,
sigma in [0, 1], d >= 0, eps >= 0; the upper ends are float64's and the engines' limits, refused rather than
answered unverified):

* targets T in 2..10**6, n in 1..10**7, dummies d in 0..10**6: the ranges the registry declared and the tests
  cover.  Thm 4's delta is evaluated by the privacy blanket engine, whose binomial windows grow with sqrt(n)
  (as in the shuffle family's 10**9, here on top of a T-dependent range of L); the cost metrics and the
  deployment inversions call the same engine at the same values, so they share the ends.
* sampling sigma in [0, 1]: a probability (sigma = 0: no blanket, Thm 4's second case; sigma = 1: every message
  redirected).
* epsilon in [0, 300]: Thm 4's L has E[L] = 1 - e^eps and E[L^2] ~ T e^(2 eps), which leave float64 from
  eps ~ 348 at T = 10**6 (e^709.8 overflows); 300 was already the registry's and
  :func:`amplification_variable_bounds`'s end (``L_STATS_MAX_EPSILON``).  The deployments' ``target_epsilon``
  is the same eps (:data:`TARGET_EPSILON`).
* delta in (0, 1) for :func:`scrambler_epsilon`, which answers soundly on all of it (at worst the local
  guarantee, status fallback).  The registry's ``traffic.scrambler`` and the deployments' ``target_delta``
  start at 1e-15 (:data:`SEARCH_DELTA`, :data:`TARGET_DELTA`): every delta of the engine includes the bounded
  truncated mass of its windows (~1e-18), which is not monotone in n, d or sigma, so below 1e-15 the searches
  (``bounds.invert``, the ``scrambler_calibrate_*`` functions) lose the monotonicity they rely on.
* Thm 3 (:func:`scrambler_pure_epsilon`): dummies in 0..4096 (:data:`PURE_DUMMIES`), the static length of its
  k-sum.  The exact enumeration (:func:`scrambler_pure_epsilon_exact`): targets 2..4, n 1..8, dummies 0..8
  (its cost grows exponentially in T, n and d) and sampling in [1e-15, 1) (:data:`EXACT_SAMPLING`: below, its output
  probabilities, products of up to 16 factors sigma, underflow); the registry's ``traffic.scrambler-pure-exact``
  takes any sampling in (0, 1) (:data:`EXACT_SAMPLING_ANY`) and flags an underflow with status error.
"""

from __future__ import annotations

from .._core.domains import Integer, Real
from .._core.registry import DECREASING, Param
from ._common import DUMMIES_CAP, N_CAP

#: Largest eps (E[L] = 1 - e^eps and E[L^2] ~ T e^(2 eps) stay finite in float64 for every T <= 10**6)
MAX_EPSILON = 300.0
#: Smallest target delta of a search over n, d or sigma (the windows' truncated mass, ~1e-18, dominates below)
MIN_SEARCH_DELTA = 1e-15
#: Most dummies Thm 3's k-sum takes (its static length)
THM3_MAX_DUMMIES = 4096

TARGETS = Param("targets", Integer(2, 10**6), "number T of targets of the cluster")
N = Param("n", Integer(1, 10**7), "messages per scrambler (method exact: while its table of binomial CDFs "
          "stays small, see notes)", DECREASING, search=(2, N_CAP))
SAMPLING = Param("sampling", Real(0.0, 1.0), "local sampling rate sigma (probability a message is redirected "
                 "to a uniform target)", DECREASING, search=(1e-6, 1.0))
DUMMIES = Param("dummies", Integer(0, 10**6), "dummy messages per scrambler (an inversion searches up to "
                f"{DUMMIES_CAP}, the cap traffic.scrambler_calibrate_dummies shares)", DECREASING,
                search=(0, DUMMIES_CAP))
EPSILON = Param("epsilon", Real(0.0, MAX_EPSILON), "eps at which delta is computed", DECREASING)
DELTA = Param("delta", Real(0.0, 1.0, lo_open=True, hi_open=True), "target delta", DECREASING)
SEARCH_DELTA = Param("delta", Real(MIN_SEARCH_DELTA, 1.0, hi_open=True), "target delta (from 1e-15: below, the "
                     "bounded truncated mass of the binomial windows, ~1e-18, dominates and monotonicity is lost)",
                     DECREASING)
TARGET_EPSILON = Param("target_epsilon", EPSILON.domain, "eps the deployment must meet")
TARGET_DELTA = Param("target_delta", SEARCH_DELTA.domain, "delta the deployment must meet (from 1e-15: see "
                     "SEARCH_DELTA)")
PURE_DELTA = Param("delta", Real(0.0, 1.0, hi_open=True), "ignored: the guarantee is pure eps-DP, it holds at "
                   "every delta (0 included)", default=0.0)

PURE_DUMMIES = Param("dummies", Integer(0, THM3_MAX_DUMMIES),
                     "dummy messages per scrambler (Thm 3's sum runs to min(d, n - 1))")
EXACT_TARGETS = Param("targets", Integer(2, 4), "number T of targets (enumeration: at most 4)")
EXACT_N = Param("n", Integer(1, 8), "messages per scrambler (enumeration: at most 8)")
EXACT_DUMMIES = Param("dummies", Integer(0, 8), "dummy messages per scrambler (enumeration: at most 8)")
EXACT_SAMPLING = Param("sampling", Real(1e-15, 1.0, hi_open=True), "local sampling rate sigma (enumeration: from "
                       "1e-15, where its probabilities stay above ~1e-240)")
EXACT_SAMPLING_ANY = Param("sampling", Real(0.0, 1.0, lo_open=True, hi_open=True), SAMPLING.doc)
