"""The secrdp family's parameters, each domain stated once (issue 29, item 2).

The public functions validate their numeric inputs through these :class:`Param` objects
(:func:`amplify_jax._core.domains.check_params`) and ``_bounds.py`` declares the registry's bounds with the same
objects, so ``bounds.evaluate`` and the functions refuse values with the same one-line message.

Where a domain's ends come from (Allouah et al. 2024, Decor: Thm 6's accountant eps1 = 2 C^2 max_i
[Sigma_H^-1]_ii, Sigma_H = sigma_unc^2 I + sigma_cor^2 L_H, holds for every sigma_unc > 0, sigma_cor >= 0, C > 0;
the closed form of Cor. 12 for every eps1 >= 0, T >= 1, delta in (0, 1); the upper and lower ends are float64's,
refused rather than answered as inf, 0 or NaN):

* The accountant's functions (``step_account``, ``step_rdp``, ``spectral_bound``, ``epsilon``, the calibrations,
  the example level, ``baselines``, ``noise_frontier``, ``optimal_noise``): sigma_unc and clip in [1e-50, 1e50],
  sigma_cor in [0, 1e50] (:data:`ACCOUNTANT_SIGMA_UNC`, :data:`ACCOUNTANT_SIGMA_COR`, :data:`ACCOUNTANT_CLIP`):
  eps1 lies between ~2 C^2 / (n (sigma_unc^2 +
  sigma_cor^2 d_max)) and 2 C^2 / sigma_unc^2 and stays finite and positive there (sigma_unc = 1e-300 gave
  eps1 = +inf, 1e300 gave 0; sigma_cor = 1e300 gave NaN).
* The registry's bounds (``secrdp.*``) take the narrower sigma_unc, clip in [1e-3, 1e3] and sigma_cor in
  [0, 1e6] (:data:`SIGMA_UNC`, :data:`CLIP`, :data:`SIGMA_COR`): the ranges ``bounds.invert`` searches and the
  example level's effective noise multiplier stays >= ~1e-6 (the core's Poisson-subsampled Gaussian returns NaN
  from ~1e-7 down).  Inside the accountant's ranges, so every registry value is also a function's value.
* steps T: integers 1..2**53 for the functions (:data:`ANY_STEPS`: float64 holds every integer up to 2**53; the
  old check took up to 2**62, whose float64 values are not all integers), 1..10**9 for the registry
  (:data:`STEPS`, its search range).
* delta in [1e-300, 1) (:data:`DELTA`): the closed forms compute ln(1/delta), and 1/delta is finite only
  from delta >= 1/FLOAT_MAX ~ 5.6e-309 (delta = 5e-324 gave eps = +inf, eps1 = 0, and 0 * inf = NaN at
  eps1 = 0); :data:`DELTA_MIN` = 1e-300 rounds that up to a power of ten, so ln(1/delta) <= 300 ln 10 ~ 690.8
  (:data:`LOG_INV_DELTA_MAX`).  The same for functions and registry.
* eps1 in [0, 1e289] for :func:`closed_form_epsilon` (:data:`ANY_EPS1`): with x = T eps1, the closed form
  x + 2 sqrt(x ln(1/delta)) stays finite while x ln(1/delta) does, i.e. eps1 <= FLOAT_MAX / (2**53 *
  LOG_INV_DELTA_MAX) ~ 2.9e289 for every T <= 2**53 and delta >= 1e-300, rounded down to a power of ten
  (:data:`EPS1_MAX`; eps1 = 1.8e308 gave T eps1 = +inf).  The accountant's eps1 reaches 2e200 (C = 1e50,
  sigma_unc = 1e-50), inside, and ``epsilon`` converts it through this function.  The registry's
  ``secrdp.closed-form`` takes [0, 1e6] (:data:`EPS1`, its search range).
* target_epsilon in [1e-140, 1e289] (:data:`TARGET_EPSILON`; eps = 0 has no eps1 > 0): the budget
  :func:`closed_form_eps1` returns, eps^2 / (T (sqrt(ln(1/delta) + eps) + sqrt(ln(1/delta)))^2) >= eps^2 /
  (2**53 * 4 (LOG_INV_DELTA_MAX + 1)) for eps <= 1, stays >= 1e-300 (so 1/eps1 and the local-DP noise
  C sqrt(2 / eps1) of :func:`baselines` / :func:`noise_frontier` are finite; eps = 1e-300 gave eps1 = 0) from
  eps >= sqrt(1e-300 * 2**53 * 4 * 691.8) ~ 5e-141, rounded up to 1e-140 (:data:`TARGET_EPSILON_MIN`); the
  budget is at most eps / T, so the upper end :data:`EPS1_MAX` keeps it inside :data:`ANY_EPS1` (and the core's
  conversion of alpha T eps1 in ``calibrate_eps1``, up to 1e5 * 1e3 eps, finite).
* n in 1..2**53 for :func:`baselines` (:data:`N_USERS`: a float64 integer; the old check took up to 2**62).
* kappa in [0, 1e100] for :func:`optimal_noise` / :func:`utility_weights` (:data:`KAPPA`: the cost
  kappa sigma_cor^2 with sigma_cor <= 1e9 sigma_unc <= 1e59, the calibration's search end, stays below 1e218,
  leaving float64 room for the descent's gradient; it took any finite kappa >= 0 before).
* batch_size in [1e-8, 1e12] for the example level's functions (:data:`ANY_BATCH`: the effective noise
  multiplier b sqrt(2 / eps1) must reach the core's rdp.SIGMA_RANGE, checked jointly after), [1, 1e8] for the
  registry (:data:`BATCH`); q in (0, 1) for the functions (:data:`ANY_Q`), [1e-12, 1) for the registry
  (:data:`Q`: the core's Poisson-subsampled Gaussian fails near q ~ 1e-200).
"""

from __future__ import annotations

import math

import numpy as np

from .._core import graphs
from .._core.domains import Choice, Graph, Integer, Orders, Real
from .._core.registry import DECREASING, INCREASING, Param
from ._graph import SecGraph, prepare_graph

#: The adversaries of Algorithms 2-3 (I-IV)
ADVERSARIES = ("eavesdropper", "curious", "colluding", "local")
#: RDP -> DP conversions of the step bound
CONVERSION_METHODS = ("closed_form", "balle2020", "mironov")
#: Mini-batch samplings of the example level
SAMPLINGS = ("poisson", "without_replacement")
#: Largest finite float64
FLOAT_MAX = float(np.finfo(np.float64).max)
#: delta's lower end: 1/delta finite needs delta >= 1/FLOAT_MAX ~ 5.6e-309; rounded up to a power of ten
DELTA_MIN = 1e-300
#: the largest ln(1/delta) on DELTA's domain (300 ln 10 ~ 690.8)
LOG_INV_DELTA_MAX = math.log(1.0 / DELTA_MIN)
#: Largest number of steps T (float64 holds every integer up to 2**53)
STEPS_MAX = 2**53


def _power_of_ten_below(x: float) -> float:
    return float(f"1e{math.floor(math.log10(x))}")


def _power_of_ten_above(x: float) -> float:
    return float(f"1e{math.ceil(math.log10(x))}")


#: eps1's upper end: T eps1 ln(1/delta) <= FLOAT_MAX for every T <= 2**53 and delta >= DELTA_MIN (1e289)
EPS1_MAX = _power_of_ten_below(FLOAT_MAX / (STEPS_MAX * LOG_INV_DELTA_MAX))
#: target_epsilon's lower end: the closed form's budget eps^2 / (T (sqrt(ln(1/delta) + eps) + sqrt(ln(1/delta)))^2)
#: stays >= 1e-300 for every T <= 2**53 and delta >= DELTA_MIN (eps <= 1: the denominator <= 4 T (ln(1/delta) + 1))
TARGET_EPSILON_MIN = _power_of_ten_above(math.sqrt(1e-300 * STEPS_MAX * 4.0 * (LOG_INV_DELTA_MAX + 1.0)))


def _graph(value):
    """Graph domain converter: a spec, a file or a graph object -> the cached :class:`SecGraph`."""
    if isinstance(value, SecGraph):
        return value
    return prepare_graph(graphs.from_spec(value))


# ---- the public functions' domains (the accountant answers on all of them)
ACCOUNTANT_SIGMA_UNC = Param("sigma_unc", Real(1e-50, 1e50), "std of each user's uncorrelated Gaussian noise "
                             "(eps1 stays finite and positive in float64)", DECREASING)
ACCOUNTANT_SIGMA_COR = Param("sigma_cor", Real(0.0, 1e50), "std of the pairwise-cancelling correlated noise per "
                             "edge (sigma_cor^2 L_H stays finite)", DECREASING)
ACCOUNTANT_CLIP = Param("clip", Real(1e-50, 1e50), "clipping threshold C of each user's gradient (2 C^2 / "
                        "sigma_unc^2 stays finite and positive)", INCREASING)
ANY_STEPS = Param("steps", Integer(1, STEPS_MAX), "number of steps T (float64 holds every integer up to 2**53)",
                  INCREASING)
ANY_EPS1 = Param("eps1", Real(0.0, EPS1_MAX), "per-step SecRDP coefficient (T eps1 ln(1/delta) stays finite)",
                 INCREASING)
TARGET_EPSILON = Param("target_epsilon", Real(TARGET_EPSILON_MIN, EPS1_MAX), "eps to meet (its per-step budget "
                       "eps1 stays >= 1e-300 and inside eps1's domain)")
N_USERS = Param("n", Integer(1, STEPS_MAX), "number of users n (a float64 integer)")
KAPPA = Param("kappa", Real(0.0, 1e100), "weight k_cor of sigma_cor^2 in the utility cost, with k_unc = 1 (the cost "
              "stays finite)")
ANY_BATCH = Param("batch_size", Real(1e-8, 1e12), "(expected) mini-batch size b of each user (the effective noise "
                  "multiplier is then checked against rdp.SIGMA_RANGE)", DECREASING)
ANY_Q = Param("q", Real(0.0, 1.0, lo_open=True, hi_open=True), "sampling rate of an example in a mini-batch",
              INCREASING)

# ---- the registry's domains (bounds.evaluate / bounds.invert; inside the functions' ones)
GRAPH = Param("graph", Graph(convert=_graph), "communication graph (a spec like ring:16, or a file)")
# sigma_unc / clip >= 1e-6 keeps the example level's effective noise multiplier >= ~1e-6, where the core's
# Poisson-subsampled Gaussian is finite (it returns NaN from sigma ~ 1e-7 down)
SIGMA_UNC = Param("sigma_unc", Real(1e-3, 1e3), "std of each user's uncorrelated Gaussian noise", DECREASING)
SIGMA_COR = Param("sigma_cor", Real(0.0, 1e6), "std of the pairwise-cancelling correlated noise per edge",
                  DECREASING, search=(1e-4, 1e6))
CLIP = Param("clip", Real(1e-3, 1e3), "clipping threshold C of each user's gradient", INCREASING)
STEPS = Param("steps", Integer(1, 10**9), "number of steps T (composed)", INCREASING)
STEPS_1 = Param("steps", STEPS.domain, "number of steps T (composed; 1: one step)", INCREASING, default=1)
DELTA = Param("delta", Real(DELTA_MIN, 1.0, hi_open=True), "target delta (1/delta stays finite)", DECREASING)
ADVERSARY = Param("adversary", Choice(ADVERSARIES),
                  "eavesdropper (I), curious (II: one user), colluding (III: up to `colluders`), local (IV: LDP)")
COLLUDERS = Param("colluders", Integer(0, 10**6),
                  "number c of colluding users, with adversary=colluding (0 otherwise; c < n - 1)", default=0)
METHOD = Param("method", Choice(CONVERSION_METHODS),
               "RDP -> DP conversion: the closed form, or the core's balle2020 / mironov on a dense order grid",
               default="closed_form")
ORDERS = Param("orders", Orders(), "Rényi orders alpha > 1")
EXAMPLE_ORDERS = Param("orders", Orders(hi=1024.0), "Rényi orders in (1, 1024] (fractional ones: see the sampling)")
BATCH = Param("batch_size", Real(1.0, 1e8), "(expected) mini-batch size b of each user", DECREASING,
              search=(1.0, 1e8))
# q >= 1e-12: the core's Poisson-subsampled Gaussian fails (NaN panel count) for q ~ 1e-200
Q = Param("q", Real(1e-12, 1.0, hi_open=True), "sampling rate of an example in a mini-batch", INCREASING,
          search=(1e-12, 0.999))
SAMPLING = Param("sampling", Choice(SAMPLINGS),
                 "poisson (add/remove, MTZ 2019) or without_replacement (replace-one, WBK 2019 Thm 9)",
                 default="poisson")
EXAMPLE_METHOD = Param("method", Choice(tuple(m for m in CONVERSION_METHODS if m != "closed_form")),
                       "RDP -> DP conversion of the core", default="balle2020")
EPS1 = Param("eps1", Real(0.0, 1e6), "per-step SecRDP coefficient: each step is (alpha, alpha eps1)-SecRDP",
             INCREASING, search=(1e-12, 1e6))
