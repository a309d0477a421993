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
EPSILON = Param("epsilon", Real(0.0, 1e4), "epsilon at which delta is computed", DECREASING, search=(1e-4, 1e3))
