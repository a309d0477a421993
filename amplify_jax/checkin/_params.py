"""The check-in family's parameters, each domain stated once (issue 29, item 2).

The public functions validate their numeric inputs through these :class:`Param` objects
(:func:`amplify_jax._core.domains.check_params`) and ``_bounds.py`` declares the registry's bounds with the same
objects, so ``bounds.evaluate`` and the functions refuse the same values with the same one-line message.

Where a domain's ends come from (Liew, Hasegawa, Takahashi 2022, Thm 1 (Eq. 5), Thm 4 (Eq. 10) and the Sec. 5.1
baseline hold for every n >= 1, gamma in [0, 1], sigma > 0, T >= 1 rounds and delta in (0, 1); the other ends
are the float64 arithmetic's, refused rather than answered unverified):

* n in 1..10**15 (:data:`~amplify_jax.checkin.MAX_N`): the exact sum over k is an upper bound up to there (its
  window of binomial weights; see :func:`~amplify_jax.checkin.binomial_weighted_rdp`).
* gamma in [0, 1] for the functions: gamma = 0 (nobody checks in) is eps = 0, Thm 1's sum with only k = 0.  The
  registry's bounds take (0, 1] (:data:`GAMMA_POSITIVE`, a narrowing: gamma is a log-scaled knob there); the
  strong-composition baseline (0, 1) (:data:`GAMMA_OPEN`: its Chernoff window needs n gamma > 0 and a rate
  below 1).
* sigma in [1e-3, 1e10], DP-SGD's range (``accounting.rdp.SIGMA_RANGE``): below 1e-3 the base RDP
  2 lambda / (k sigma^2) and the conversion leave float64's useful range; above 1e10 nothing is left to amplify.
* steps (rounds) in 1..2**53: every integer float64 holds exactly (the steps calibration answers 2**53 where a
  round costs nothing).  The registry searches 1..10**9 by default.
* epsilon (delta at eps) in [0, 1e4]: delta is 0 in float64 long before (e^-eps).
* eps0 in [0, 700]: Thm 2 (through Girgis et al. 2021, Thm 1), Thm 3 and Sec. 4.1 hold for any eps0-LDP
  randomizer, eps0 >= 0 (eps0 = 0: the RDP is 0); 700 keeps e^eps0 finite in float64 (e^709.8 overflows), as in
  the shuffle family (its strong-composition baseline needs e^eps0; the RDP kernels work in log space).  The
  registry takes eps0 > 0 (:data:`EPS0_POSITIVE`, a narrowing: a log-scaled knob and a search parameter).
* The Thm 3 lower bound needs gamma > 0 (its Chernoff parameter): :data:`GAMMA_POSITIVE`.
* delta0 (the randomizer's local delta) in [0, 1) (delta0 = 1 is no local guarantee) and shuffle_delta (FMT
  2021 Thm 3.1's delta per round) in (0, 1).
"""

from __future__ import annotations

from .._core.domains import Integer, Real
from .._core.registry import DECREASING, INCREASING, Param
from ..accounting.rdp import SIGMA_RANGE
from ._weighted import MAX_N

N = Param("n", Integer(1, MAX_N), "number of clients")
GAMMA = Param("gamma", Real(0.0, 1.0), "check-in probability of a client per round (p (1 - p'))")
GAMMA_POSITIVE = Param("gamma", Real(0.0, 1.0, lo_open=True), GAMMA.doc)
GAMMA_OPEN = Param("gamma", Real(0.0, 1.0, lo_open=True, hi_open=True), GAMMA.doc)
SIGMA = Param("sigma", Real(*SIGMA_RANGE), "Gaussian noise multiplier of a client (std / clipping norm)",
              DECREASING, search=(0.05, 1e3))
STEPS = Param("steps", Integer(1, 2**53), "number of rounds (compositions)", INCREASING, search=(1, 10**9))
DELTA = Param("delta", Real(0.0, 1.0, lo_open=True, hi_open=True), "target delta", DECREASING)
EPS0 = Param("eps0", Real(0.0, 700.0), "local (pure) guarantee of one client's randomizer", INCREASING,
             search=(1e-4, 30.0))
EPS0_POSITIVE = Param("eps0", Real(0.0, 700.0, lo_open=True), EPS0.doc, INCREASING, search=(1e-4, 30.0))
SHUFFLE_DELTA = Param("shuffle_delta", Real(0.0, 1.0, lo_open=True, hi_open=True),
                      "delta spent by the shuffling step (FMT 2021 Thm 3.1) per round")
DELTA0 = Param("delta0", Real(0.0, 1.0, hi_open=True), "local delta of the randomizer (0: pure eps0-LDP)",
               default=0.0)
EPSILON = Param("epsilon", Real(0.0, 1e4), "epsilon at which delta is computed", DECREASING, search=(1e-4, 1e3))
