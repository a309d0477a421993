"""The shuffle family's parameters, each domain stated once (issue 29, item 2).

The public functions validate their numeric inputs through these :class:`Param` objects
(:func:`amplify_jax._core.domains.check_params`) and ``_bounds.py`` declares the registry's bounds with the same
objects, so ``bounds.evaluate`` and the functions refuse the same values with the same one-line message.

Where a domain's ends come from (the theorems put none above eps0, eps or n; the ends are the float64
arithmetic's and the windows' limits, refused rather than answered unverified):

* eps0 and eps in [0, 700]: Erlingsson et al. 2019 (Cor. 9), Feldman-McMillan-Talwar 2021 (Thm 3.1, 3.2) and
  Balle et al. 2019 (Thm 3.1) hold for any eps0-LDP randomizer, eps0 >= 0 (eps0 = 0: no privacy loss at all);
  700 keeps e^eps0 and e^eps finite in float64 (e^709.8 overflows), the clone bound's old limit, now the
  family's.  eps0 > 0 (:data:`EPS0_POSITIVE`) where a formula divides by it (Erlingsson's delta, the Laplace
  randomizer's scale 1/eps0), and in the registry: there eps0 is a log-scaled knob (the explorer's slider) and a
  search parameter, and the blanket's randomizer may be the Laplace one; eps0 = 0 (the answer 0, or delta = 0)
  is the functions' only.
* n: the closed forms take any n exactly representable in float64 (2**53); the numerical bounds (clones,
  blanket) size their binomial windows by sqrt(n e^-eps0) and stop at 10**9 users (a window of ~3e5 points;
  10**15 would need ~1e8).
* delta in (0, 1), the theorems'.  The registry's blanket bound searches n with delta >= 1e-15 only
  (:data:`BLANKET_DELTA`): below, the windows' bounded truncated mass (~1e-18) dominates and the answer is no
  longer monotone in n, which ``bounds.invert`` relies on.  The function itself answers soundly on all of
  (0, 1), so it keeps :data:`DELTA`; the narrower Param is the registry's, stated here beside it.
* k (randomized response's outputs) in 2..10**6 and dummies in 0..10**9: the ranges the blanket's kernels are
  tested on (the theorems put no upper end).
"""

from __future__ import annotations

from .._core.domains import Integer, Real
from .._core.registry import DECREASING, INCREASING, Param

#: the largest eps0 or eps: e^x stays finite in float64 (e^709.8 overflows) with room for the kernels' products
EXP_MAX = 700.0

EPS0 = Param("eps0", Real(0.0, EXP_MAX), "local guarantee eps0 of each user's randomizer", INCREASING,
             search=(1e-3, 30.0))
EPS0_POSITIVE = Param("eps0", Real(0.0, EXP_MAX, lo_open=True), EPS0.doc, INCREASING, search=(1e-3, 30.0))
N = Param("n", Integer(1, 10**9), "number of users whose reports are shuffled", DECREASING, search=(2, 10**7))
N_CLOSED = Param("n", Integer(1, 2**53), "number of users whose reports are shuffled", DECREASING,
                 search=(2, 10**7))
DELTA = Param("delta", Real(0.0, 1.0, lo_open=True, hi_open=True), "target delta", DECREASING)
EPSILON = Param("epsilon", Real(0.0, EXP_MAX), "eps at which delta is computed", DECREASING)

K = Param("k", Integer(2, 10**6), "number of outputs of randomized response (randomizer randomized-response)",
          default=2)
DUMMIES = Param("dummies", Integer(0, 10**9), "dummy messages drawn from the blanket, added by the shuffler",
                DECREASING, search=(0, 10**6), default=0)
BLANKET_N = Param("n", N.domain, N.doc, DECREASING, search=(2, 10**6))
BLANKET_DELTA = Param("delta", Real(1e-15, 1.0, hi_open=True), "target delta (from 1e-15: below, the bounded "
                      "truncated mass of the binomial windows, ~1e-18, dominates and the answer loses its "
                      "monotonicity in n)", DECREASING)
