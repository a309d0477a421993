"""The secrdp family's parameters, each domain stated once (issue 29, item 2).

The public functions validate their numeric inputs through these :class:`Param` objects
(:func:`amplify_jax._core.domains.check_params`) and ``_bounds.py`` declares the registry's bounds with the same
objects, so ``bounds.evaluate`` and the functions refuse values with the same one-line message.

Where a domain's ends come from (Allouah et al. 2024, Decor: Thm 6's accountant eps1 = 2 C^2 max_i
[Sigma_H^-1]_ii, Sigma_H = sigma_unc^2 I + sigma_cor^2 L_H, holds for every sigma_unc > 0, sigma_cor >= 0, C > 0;
the closed form of Cor. 12 for every eps1 >= 0, T >= 1, delta in (0, 1); the upper and lower ends are float64's,
refused rather than answered as inf, 0 or NaN):

* The accountant's functions (``step_account``, ``step_rdp``, ``spectral_bound``, ``epsilon``, the calibrations,
  the example level): sigma_unc and clip in [1e-50, 1e50], sigma_cor in [0, 1e50] (:data:`ACCOUNTANT_SIGMA_UNC`,
  :data:`ACCOUNTANT_SIGMA_COR`, :data:`ACCOUNTANT_CLIP`): eps1 lies between ~2 C^2 / (n (sigma_unc^2 +
  sigma_cor^2 d_max)) and 2 C^2 / sigma_unc^2 and stays finite and positive there (sigma_unc = 1e-300 gave
  eps1 = +inf, 1e300 gave 0; sigma_cor = 1e300 gave NaN).
* The registry's bounds (``secrdp.*``) take the narrower sigma_unc, clip in [1e-3, 1e3] and sigma_cor in
  [0, 1e6] (:data:`SIGMA_UNC`, :data:`CLIP`, :data:`SIGMA_COR`): the ranges ``bounds.invert`` searches and the
  example level's effective noise multiplier stays >= ~1e-6 (the core's Poisson-subsampled Gaussian returns NaN
  from ~1e-7 down).  Inside the accountant's ranges, so every registry value is also a function's value.
* steps T: integers 1..2**53 for the functions (:data:`ANY_STEPS`: float64 holds every integer up to 2**53; the
  old check took up to 2**62, whose float64 values are not all integers), 1..10**9 for the registry
  (:data:`STEPS`, its search range).
* delta in (0, 1) (:data:`DELTA`): ln(1/delta) > 0 finite; the same for functions and registry.
* eps1 >= 0 finite for :func:`closed_form_epsilon` (:data:`ANY_EPS1`: the accountant's eps1 reaches 2e100 at
  sigma_unc = 1e-50, and ``epsilon`` converts it through this function); the registry's ``secrdp.closed-form``
  [0, 1e6] (:data:`EPS1`, its search range).  target_epsilon > 0 finite (:data:`TARGET_EPSILON`; eps = 0 has
  no eps1 > 0).
* batch_size in [1e-8, 1e12] for the example level's functions (:data:`ANY_BATCH`: the effective noise
  multiplier b sqrt(2 / eps1) must reach the core's rdp.SIGMA_RANGE, checked jointly after), [1, 1e8] for the
  registry (:data:`BATCH`); q in (0, 1) for the functions (:data:`ANY_Q`), [1e-12, 1) for the registry
  (:data:`Q`: the core's Poisson-subsampled Gaussian fails near q ~ 1e-200).
"""

from __future__ import annotations

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
#: Largest finite float64 (a domain "x >= 0, finite" ends there)
FLOAT_MAX = float(np.finfo(np.float64).max)


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
ANY_STEPS = Param("steps", Integer(1, 2**53), "number of steps T (float64 holds every integer up to 2**53)",
                  INCREASING)
ANY_EPS1 = Param("eps1", Real(0.0, FLOAT_MAX), "per-step SecRDP coefficient (>= 0, finite)", INCREASING)
TARGET_EPSILON = Param("target_epsilon", Real(0.0, FLOAT_MAX, lo_open=True), "eps to meet (> 0, finite)")
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
DELTA = Param("delta", Real(0.0, 1.0, lo_open=True, hi_open=True), "target delta", DECREASING)
ADVERSARY = Param("adversary", Choice(ADVERSARIES),
                  "eavesdropper (I), curious (II: one user), colluding (III: up to `colluders`), local (IV: LDP)")
COLLUDERS = Param("colluders", Integer(0, 10**6),
                  "number c of colluding users, with adversary=colluding (0 otherwise; c < n - 1)", default=0)
METHOD = Param("method", Choice(CONVERSION_METHODS),
               "RDP -> DP conversion: the closed form, or the core's balle2020 / mironov on a dense order grid",
               default="closed_form")
ORDERS = Param("orders", Orders(), "Rényi orders alpha > 1")
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
