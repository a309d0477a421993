"""The accounting layer's parameters, each domain stated once (issue 29, item 2).

The public functions of :mod:`~amplify_jax.accounting.rdp` and :mod:`~amplify_jax.accounting.conversions`
validate their numeric inputs through these :class:`Param` objects (:func:`amplify_jax._core.domains.check_params`,
or the Param's domain for the orders and the method), and ``_bounds.py`` declares the registry's bounds with the
same objects (or a narrowing stated here), so ``bounds.evaluate`` and the functions refuse the same values with
the same one-line message; the registry's kernels then run the functions' computation without checking again.

Where a domain's ends come from (Mironov 2017, Table II and Prop. 1, 3, 5; Mironov, Talwar, Zhang 2019, Sec. 3;
Wang, Balle, Kasiviswanathan 2019, Thm 9; Balle et al. 2020, Thm 21: every order alpha > 1, every noise > 0,
sensitivity >= 0, rate q in [0, 1], eps >= 0, delta in (0, 1) -- the theorems put no upper end; the ends are
float64's and the kernels', refused rather than answered unverified):

* orders: the curves take (1, :data:`MAX_ORDER`] (:data:`ORDERS`: the integer series of the subsampled Gaussian
  sums alpha + 1 terms), sampling without replacement (1, :data:`WOR_MAX_ORDER`] (:data:`WOR_CURVE_ORDERS`: an
  alpha x alpha table; fractional orders interpolated by convexity); a curve given to a conversion any finite
  order > 1 (:data:`ANY_ORDERS`: the conversions are closed forms in alpha).  The registry declares
  :data:`ORDERS` too, and for sampling without replacement the integers 2..1024 only (:data:`WOR_ORDERS`: the
  bound it names is Thm 9 itself, stated at integer orders).
* sigma of the Poisson-subsampled Gaussian (no sensitivity) in :data:`SIGMA_RANGE` (:data:`CURVE_SIGMA`, DP-SGD's
  range: beyond it the fractional quadrature sizes itself with a NaN panel count or ~1e11 panels, and alpha /
  (2 sigma^2) leaves float64).  Where a curve takes a sensitivity (the Gaussian, sampling without replacement,
  the Laplace scale), the noise and the sensitivity are each only positive and finite (:data:`NOISE_SIGMA`,
  :data:`LAPLACE_SCALE`, :data:`SENSITIVITY`, :data:`ANY_SENSITIVITY`: sensitivity 0 is RDP 0 for the Gaussian)
  and their ratio is checked jointly against :data:`SIGMA_RANGE` / :data:`LAPLACE_RANGE` (one message naming
  both).  The registry's sigma is [1e-3, 1e4] (:data:`SIGMA`: the range ``bounds.invert`` searches and the
  explorer's slider spans, its DP-SGD bound's too) and its Laplace scale [1e-300, 1e4] (:data:`SCALE`: the
  functions' LAPLACE_RANGE from below -- smaller scales were refused by the function anyway -- and the search's
  end above), both inside the functions' domains at sensitivity 1.
* q in [0, 1] (:data:`Q`): a rate (Poisson) or a fraction m / n (without replacement); the same for both.
* eps0 of randomized response >= 0 and finite (:data:`RR_EPS0`: the curve is bounded by eps0 itself where alpha
  eps0 leaves float64); the registry's (0, 30] (:data:`EPS0`, a log-scaled search range).  k in 2..2**53
  (:data:`RR_K`: float64 holds every integer up to 2**53; the old check took up to 2**62, whose float64 values are
  not all integers); the registry's 2..10**6 (:data:`K`).
* steps: a count of compositions, 0..2**53 for :func:`rdp.compose` (:data:`ANY_STEPS`, as k); the registry's
  1..10**9 (:data:`STEPS`, :data:`STEPS_1`).
* delta in (0, 1) (:data:`DELTA`: ln(1/delta) finite and positive), the same for the conversions and the
  registry; a DP pair's delta in [0, 1) (:data:`DP_DELTA`: delta = 1 is no guarantee); eps of a DP pair and the
  epsilon a delta is computed at: >= 0 and finite (:data:`DP_EPS`, :data:`EPSILON`); RDP values >= 0 and finite
  (:data:`RDP`, :data:`BASE_RDP`, :data:`BASE_RDP_INF`).
* the inversions' brackets (``calibrate``): lo, hi > 0 and finite (the search is on log x), integers 1..2**53 for
  an integer search (:data:`INTEGER_LO`, :data:`INTEGER_HI`); target finite; rtol > 0; max_iter 1..10**6.  They
  are no registry parameters (``bounds.invert`` checks its targets and brackets against the bound's Params).

Not here: ``rdp.Accountant``'s event and query parameters (``_rdp_accountant``): dp_accounting's interface takes
values these finite domains cannot state (target_epsilon = inf, the orders 1 and inf) and keeps its own checks
and messages; the DP-SGD accountants and the PLD (``accountants``, ``pld/``) have theirs.
"""

from __future__ import annotations

import numpy as np

from .._core import validate as V
from .._core.domains import Choice, Integer, Orders, Real
from .._core.registry import DECREASING, INCREASING, Param

#: Largest finite float64 (a domain "x >= 0, finite" ends there)
FLOAT_MAX = float(np.finfo(np.float64).max)

#: Largest Rényi order the curves of :mod:`~amplify_jax.accounting.rdp` accept (the registry's orders domain stops
#: there too).  The Poisson-subsampled Gaussian's integer-order series (MTZ 2019, Sec. 3.3) sums alpha + 1 terms
#: per order: an array of 2^20 entries at 1e6, of 2^997 at 1e300 (it failed with "Maximum allowed size
#: exceeded"); the closed forms take any order, but with noise at the ends of their ranges their values leave
#: float64 near 1e300.  The default grid stops at 1024, and larger orders only matter for eps far below 1e-6.
MAX_ORDER = 1e6
#: Largest order of the without-replacement bound (WBK 2019, Thm 9): its sum has alpha terms per order over a
#: base curve at every integer order 2..alpha (an alpha x alpha table), exact to rounding up to 1024
#: (:func:`numerics.log_comb_table`); the registry's domain is the same.
WOR_MAX_ORDER = 1024.0
#: Noise multipliers (the Gaussian's standard deviation per unit sensitivity) the Gaussian curves accept: the
#: range of DP-SGD's accountant (``accountants._check_dpsgd``).  Outside it the subsampled Gaussian's
#: fractional quadrature sizes itself with a NaN panel count (sigma = 1e-300 or 1e300: it failed unnamed) or
#: ~1e11 panels (sigma = 1e-10), and alpha Delta^2 / (2 sigma^2) leaves float64: +inf (sigma = 1e-300; the true
#: value is finite) or 0 below the true value (sigma = 1e300).
SIGMA_RANGE = (1e-3, 1e10)
#: Laplace scales per unit sensitivity (lambda = b / Delta) ``rdp.laplace_rdp`` accepts: at most MAX_ORDER / 1e-300
#: = 1e306 for (alpha - 1) / lambda (finite); above 1e10 the curve (~ alpha / (2 lambda^2)) is below 1e-20 alpha
#: and would underflow to 0 below the true value near lambda = 1e160.
LAPLACE_RANGE = (1e-300, 1e10)

_POSITIVE = Real(0.0, FLOAT_MAX, lo_open=True)
_NONNEGATIVE = Real(0.0, FLOAT_MAX)

# ---- orders (the functions' and the registry's)
ORDERS = Param("orders", Orders(hi=MAX_ORDER), "Rényi orders alpha > 1")
WOR_CURVE_ORDERS = Param("orders", Orders(hi=WOR_MAX_ORDER), "Rényi orders alpha > 1 (fractional ones interpolated "
                         "by convexity)")
WOR_ORDERS = Param("orders", Orders(hi=WOR_MAX_ORDER, integer=True), "integer Rényi orders >= 2")
ANY_ORDERS = Param("orders", Orders(hi=FLOAT_MAX), "Rényi orders alpha > 1 of a given curve (finite)")

# ---- the functions' noise, sensitivity and mechanism parameters
CURVE_SIGMA = Param("sigma", Real(*SIGMA_RANGE), "noise multiplier (std / sensitivity) of the Poisson-subsampled "
                    "Gaussian", DECREASING)
NOISE_SIGMA = Param("sigma", _POSITIVE, "std of the Gaussian noise (> 0, finite; sigma / sensitivity in "
                    f"[{SIGMA_RANGE[0]:g}, {SIGMA_RANGE[1]:g}] checked jointly)", DECREASING)
ANY_SENSITIVITY = Param("sensitivity", _NONNEGATIVE, "sensitivity of the Gaussian mechanism (>= 0, finite; 0: RDP 0)",
                        INCREASING)
SENSITIVITY = Param("sensitivity", _POSITIVE, "sensitivity (> 0, finite)", INCREASING)
LAPLACE_SCALE = Param("scale", _POSITIVE, "Laplace scale b (> 0, finite; b / sensitivity in "
                      f"[{LAPLACE_RANGE[0]:g}, {LAPLACE_RANGE[1]:g}] checked jointly)", DECREASING)
RR_EPS0 = Param("eps0", _NONNEGATIVE, "local (pure) guarantee of randomized response (>= 0, finite)", INCREASING)
RR_K = Param("k", Integer(2, 2**53), "number of categories of randomized response")
ANY_STEPS = Param("steps", Integer(0, 2**53), "number of compositions (float64 holds every integer up to 2**53)",
                  INCREASING)
RDP = Param("rdp", _NONNEGATIVE, "an RDP curve's values (>= 0, finite)", INCREASING)
CURVES = Param("curves", _NONNEGATIVE, "RDP curves to compose (>= 0, finite)", INCREASING)
INTEGER_RDP = Param("integer_rdp", _NONNEGATIVE, "an RDP curve at the integer orders 2..A (>= 0, finite)", INCREASING)
BASE_RDP = Param("base_rdp", _NONNEGATIVE, "the base mechanism's RDP at the integer orders 2..A (>= 0, finite)",
                 INCREASING)
BASE_RDP_INF = Param("base_rdp_inf", _NONNEGATIVE, "the base mechanism's eps(inf) (>= 0, finite; None: unbounded)",
                     INCREASING)
EPSILON = Param("epsilon", _NONNEGATIVE, "eps at which delta is computed (>= 0, finite)", DECREASING)
DP_EPS = Param("eps", _NONNEGATIVE, "eps of an (eps, delta)-DP mechanism (>= 0, finite)", INCREASING)
DP_DELTA = Param("delta", Real(0.0, 1.0, hi_open=True), "delta of an (eps, delta)-DP mechanism (delta = 1 is no "
                 "guarantee)", INCREASING)

# ---- the inversions of calibrate (invert_monotone and its host / differentiable forms): a search in log space
# between lo > 0 and hi, for any finite target; integer searches between integers >= 1 (float64 holds every
# integer up to 2**53; the old check took up to 2**62); at most 10**6 iterations (max_iter: one number)
TARGET = Param("target", Real(-FLOAT_MAX, FLOAT_MAX), "the bound's value to meet (finite)")
LO = Param("lo", _POSITIVE, "lower end of the search bracket (> 0: the search is in log space)")
HI = Param("hi", _POSITIVE, "upper end of the search bracket (> lo)")
INTEGER_LO = Param("lo", Integer(1, 2**53), "lower end of an integer search's bracket")
INTEGER_HI = Param("hi", Integer(1, 2**53), "upper end of an integer search's bracket")
RTOL = Param("rtol", _POSITIVE, "relative width at which the search stops (> 0)")
MAX_ITER = Param("max_iter", Integer(1, 10**6), "most evaluations of the bound")
FEASIBLE = Param("feasible", Choice(("above", "below")), "where the bound meets the target: above the returned "
                 "value (a decreasing bound) or below it (an increasing one)", default="above")
SEARCH_METHOD = Param("method", Choice(("bisection", "illinois")), "the search's steps (illinois: safeguarded "
                      "regula falsi, for continuous parameters)", default="bisection")

# ---- the registry's (and, where the same object, the functions')
SIGMA = Param("sigma", Real(1e-3, 1e4), "noise multiplier (std / sensitivity)", DECREASING,
              search=(0.05, 2e3))
Q = Param("q", Real(0.0, 1.0), "Poisson sampling rate", INCREASING, search=(1e-8, 1.0))
STEPS = Param("steps", Integer(1, 10**9), "number of compositions", INCREASING)
DELTA = Param("delta", Real(0.0, 1.0, lo_open=True, hi_open=True), "target delta", DECREASING)
STEPS_1 = Param("steps", Integer(1, 10**9), "number of compositions (the curve is steps x one step's)", INCREASING,
                default=1)
METHOD = Param("method", Choice(("balle2020", "mironov")),
               "the RDP-to-(eps, delta) conversion: balle2020 (Balle et al. 2020, Thm 21; tighter) or mironov "
               "(Mironov 2017, Prop. 3)", default="balle2020")
SCALE = Param("scale", Real(LAPLACE_RANGE[0], 1e4), "Laplace scale b", DECREASING, search=(1e-3, 1e4))
EPS0 = Param("eps0", Real(0.0, 30.0, lo_open=True), "local (pure) guarantee of one release", INCREASING,
             search=(1e-4, 30.0))
#: The number of categories of randomized response (the PLD's: 2 only, which its kernel checks)
K = Param("k", Integer(2, 10**6), "number of categories", default=2)


def check_orders(param: Param, orders):
    """``orders`` checked by ``param``'s :class:`Orders` domain (a 1-D float64 array); traced orders (inside a
    user's ``jit``) pass unchecked, as every domain's traced values do."""
    return orders if V._is_tracer(orders) else param.domain.check(param.name, orders)


def check_method(method) -> str:
    """The RDP-to-(eps, delta) conversion's name, checked by :data:`METHOD`'s domain."""
    return METHOD.domain.check(METHOD.name, method)
