"""The network family's parameters, each domain stated once (issue 29, item 2).

The public functions validate their numeric inputs through these :class:`Param` objects
(:func:`amplify_jax._core.domains.check_params`) and ``_bounds.py`` declares the registry's bounds with the same
objects, so ``bounds.evaluate`` and the functions refuse the same values with the same one-line message.
Every Param of a ``network.*`` bound is declared here (the registry's own ones, options included, at the end);
a joint condition (sigma / lipschitz, colluders < n, Lemma 1's sigma >= L sqrt(2 alpha (alpha - 1))) is checked
by the function after its Params.

The functions take the slack ``delta_prime`` (the paper's delta') of the advanced composition, where the
registry's bounds take the total ``delta`` and derive delta' from it: :data:`DELTA_PRIME` is its own Param.

Where a domain's ends come from (Cyffers & Bellet, Thm 1, Thm 2 / Remark 2 and the local baseline of Sec. 5.1
hold for every n >= 2, K, T >= 1, eps0 > 0, delta0 in [0, 1), delta', delta_hat in (0, 1); the upper ends are
float64's, refused rather than answered unverified):

* n in 2..10**12 (:data:`N`): at least one other user (n - 1 >= 1 reports shuffled, T/n visits); 10**12 is the
  registry's end and the tested one (a population beyond it is not a network of users).
* steps: the walk's T in 1..10**12 (:data:`STEPS_T`), the ring's visits K in 1..10**9 (:data:`STEPS_K`), the
  registry's ends (at 10**12 compositions sqrt(2 k ln(1/delta')) eps0 is still far inside float64).
* eps0 in (0, 700] for the functions (:data:`EPS0_LOCAL`): 0 is no randomizer (the theorems need eps0 > 0),
  e^eps0 leaves float64 at 709.78; the joint overflow of k eps0 (e^eps0 - 1) is still refused by the functions.
  The registry's bounds keep (0, 30] (:data:`EPS0`), the range ``bounds.invert`` searches and the tests cover.
* delta0 in (0, 1) (:data:`DELTA0`) for the ring (Thm 1's Gaussian Perturb needs delta0 > 0) and the registry;
  in [0, 1) for the local baseline (:data:`DELTA0_PURE`: delta0 = 0 is pure LDP, delta0 = 1 no guarantee).
* eps0 in (0, 1) for Thm 3 (:data:`EPS0_GAUSS`: the Gaussian aggregation step e^(eps0/sqrt(m)) - 1 <=
  2 eps0/sqrt(m)), for the functions and the registry alike; Thm 4's per-step eps0 too (App. F's Gaussian
  calibration sigma = 2L sqrt(2 ln(1.25/delta)) / eps0 needs eps0 < 1).
* advanced composition (Dwork, Rothblum, Vadhan Thm III.3; any eps >= 0, k >= 0): eps in [0, 700]
  (:data:`COMPOSED_EPS`, e^eps finite), k real in [0, 10**12] (:data:`COMPOSED_STEPS`, the registry's end of
  the walk's T); the exact homogeneous composition (Kairouz, Oh, Viswanath Thm 3.3): eps0 in (0, 700],
  k in 0..4096 (:data:`KOV_STEPS`: the static length of its O(k^2) kernel), delta in (0, 1).
* Thm 4's delta in (0, 1/2) (:data:`SGD_DELTA`): App. F needs ln(1/delta) >= ln 2 (the registry's total delta
  has the same domain).
* delta', delta_hat, delta_tilde, the shuffling step's delta: (0, 1) (ln(1/delta) finite and positive).
* colluders c (Sec. 4.3, n -> n / c) in 1..10**12 (:data:`COLLUDERS_ANY`), checked jointly with n: c < n (so
  c <= n - 1 as before); the registry's in 1..10**6 (:data:`COLLUDERS`, its end).
* contributions T_u of App. G's spotted count (:data:`SPOTTED_CONTRIBUTIONS`) in [0, 10**12]: 0 is no
  contribution (nothing spotted); 10**12 the registry's end (its ``contributions`` excludes 0: the search
  there is on a log scale).
* KOV Thm 3.5 (:func:`kov_composition_epsilon`): each eps_l in [0, 700] (:data:`COMPOSED_EPS`, as advanced
  composition), delta_tilde in (0, 1) (:data:`KOV_DELTA_TILDE`; the theorem allows 1, where the delta is 1).

The DP-SGD accountants (Lemma 1, Remark 5, the local and central baselines of Sec. 5.2; any sigma, L > 0,
T_u >= 0, T >= 1, n >= 2, delta in (0, 1), orders alpha > 1):

* sigma and lipschitz each in [1e-100, 1e100] (:data:`SGD_SIGMA`, :data:`SGD_LIPSCHITZ`: their squares stay
  finite and nonzero; sigma = L = 1e-300 is 0 / 0) and jointly sigma / lipschitz in [1e-6, 1e100]
  (:data:`SGD_NOISE_RATIO`, a domain of the ratio, refused naming both): below ~1e-8 Lemma 1's admissible
  orders (1, alpha_max], alpha_max - 1 ~ (sigma / L)^2 / 2, vanish in float64, and above 1e100 its
  coefficient underflows.  The registry's bounds take sigma in [1e-3, 1e6] (:data:`SIGMA`, the range its
  searches and the explorer cover) and lipschitz in [1e-6, 1e3] (:data:`LIPSCHITZ`: with sigma >= 1e-3 the
  ratio stays in its domain), inside both.  The calibration :func:`sgd_calibrate_sigma` searches sigma over
  :data:`SIGMA`'s domain and takes the accountants' :data:`SGD_LIPSCHITZ` (its old check took any L > 0; at
  L = 1e300 no sigma of the search was feasible, eps = inf).
* contributions T_u in (0, 10**12] (:data:`CONTRIBUTIONS`, the functions' and the registry's; the RDP curve
  :func:`network_sgd_rdp` also takes 0, the curve 0: :data:`RDP_CONTRIBUTIONS`).
* the central baselines' T in 1..10**12 (:data:`CENTRAL_STEPS`, the walk's end); the registry's in 1..10**9
  (:data:`STEPS_SGD`).  n in 2..10**12 (:data:`N`; the registry's central bounds declare it decreasing,
  :data:`N_SAMPLED`, the same domain).
* delta in (0, 1) (:data:`DELTA`: the accountants' target delta is the registry's total delta).
* a fixed order alpha in (1, 10**6] (:data:`ORDER`) and the orders of the curve (:data:`ORDERS`): up to
  ``rdp.MAX_ORDER``, the accounting layer's end.
* the calibration's target_epsilon in (0, max float64] (:data:`TARGET_EPSILON`).

The intermediate quantities and Thm 2's gamma: contribution_bound takes :data:`N`, :data:`STEPS_T`,
:data:`DELTA_HAT`; kov_composition_delta each delta_l in [0, 1] (:data:`KOV_DELTAS`) and
:data:`KOV_DELTA_TILDE`; subsampled_cycle_epsilon a cycle length m in 0..10**12 (:data:`CYCLE_LENGTH`, at most
the walk's T) and eps_aggregate >= 0 finite (:data:`EPS_AGGREGATE`: beyond e^eps's range Eq. 10 is evaluated
as eps + ln(q + (1 - q) e^-eps), finite); ring_noise sigma_loc in (0, 1e300] (:data:`SIGMA_LOC`: the total
std, at most ~4.5e4 sigma_loc for K <= 10**9, stays finite).  Thm 2's
closed form (Erlingsson et al. Cor. 9; ``ring_histogram_bound(form="erlingsson")``, ``ring_histogram_gamma``)
states n > 1000 (:data:`ERLINGSSON_N`), eps0 < 1/2 (:data:`ERLINGSSON_EPS0`; gamma's target_epsilon,
:data:`GAMMA_TARGET`) and delta < 1/100 (:data:`ERLINGSSON_DELTA`); gamma's L (randomized response's values) in
2..2**53 (:data:`RR_VALUES`).

The walk simulation (Sec. 5.1): the walks are int32 arrays of shape (num_walks, T), so n, T and num_walks are
one integer each in ..2**31 - 1 (:data:`WALK_N` from 2, :data:`WALK_STEPS`, :data:`NUM_WALKS` from 1); the
seed one of ``jax.random``'s 32-bit seeds (:data:`SEED`, 0..2**32 - 1: larger ones collide); eps0 as the closed
forms' (:data:`EPS0_GAUSS` for the Gaussian aggregate, :data:`EPS0_LOCAL` for histograms); delta_prime
(KOV's delta_tilde) and the per-cycle delta :data:`DELTA_CYCLE` in (0, 1).
"""

from __future__ import annotations

import numpy as np

from .._core.domains import Choice, Integer, Orders, Real
from .._core.registry import DECREASING, INCREASING, Param
from ..accounting.rdp import MAX_ORDER

#: Largest eps0 of a function (e^eps0 finite in float64 up to 709.78)
MAX_EPS0 = 700.0
#: The largest finite float64 (the end of a domain that takes any finite value)
FLOAT_MAX = float(np.finfo(np.float64).max)

_OPEN_UNIT = Real(0.0, 1.0, lo_open=True, hi_open=True)

N = Param("n", Integer(2, 10**12), "number of users")
STEPS_T = Param("steps", Integer(1, 10**12), "T: number of steps of the token walk", INCREASING)
STEPS_K = Param("steps", Integer(1, 10**9), "K: number of visits of the token to the observer (compositions)",
                INCREASING)
EPS0 = Param("eps0", Real(0.0, 30.0, lo_open=True), "local guarantee of one contribution", INCREASING,
             search=(1e-4, 30.0))
EPS0_LOCAL = Param("eps0", Real(0.0, MAX_EPS0, lo_open=True),
                   "local guarantee of one contribution (e^eps0 finite in float64)")
DELTA0 = Param("delta0", _OPEN_UNIT, "local delta of one contribution", INCREASING, search=(1e-300, 0.5))
DELTA0_PURE = Param("delta0", Real(0.0, 1.0, hi_open=True),
                    "local delta of one contribution (0: pure LDP; 1 is no local guarantee)")
DELTA_PRIME = Param("delta_prime", _OPEN_UNIT, "delta' of the advanced composition")
DELTA_HAT = Param("delta_hat", _OPEN_UNIT,
                  "failure probability of the Chernoff bound on a user's number of contributions")
SHUFFLE_DELTA = Param("shuffle_delta", _OPEN_UNIT, "delta of one shuffling step (per visit or per cycle)")
VISIT_DELTA = Param("delta", SHUFFLE_DELTA.domain, "delta of one shuffling step (between two visits on the ring, "
                    "per cycle on the complete graph)")
EPS0_GAUSS = Param("eps0", _OPEN_UNIT, "local guarantee of one (Gaussian) contribution, < 1 (Thm 3)", INCREASING,
                   search=(1e-4, 0.999))
SGD_DELTA = Param("delta", Real(0.0, 0.5, lo_open=True, hi_open=True),
                  "delta of the per-step noise calibration (< 1/2, Thm 4)")
COMPOSED_EPS = Param("eps", Real(0.0, MAX_EPS0), "guarantee of one composed mechanism (e^eps finite in float64)")
COMPOSED_STEPS = Param("steps", Real(0.0, 1e12), "k: number of compositions (real: a high-probability bound on a "
                       "count)")
KOV_STEPS = Param("steps", Integer(0, 4096), "number of compositions k (the exact kernel is O(k^2))")
KOV_DELTA = Param("delta", _OPEN_UNIT, "target delta of the composition")
DELTA_TILDE = Param("delta_tilde", _OPEN_UNIT, "failure probability of the Chernoff bound on the spotted count")
SPOTTED_CONTRIBUTIONS = Param("contributions", Real(0.0, 1e12),
                              "T_u: contributions of a user, of which the spotted ones are counted (0: none)")
COLLUDERS = Param("colluders", Integer(1, 10**6), "number of colluding users (Sec. 4.3: n -> n / c), < n",
                  default=1)
COLLUDERS_ANY = Param("colluders", Integer(1, 10**12), "number of colluding users (Sec. 4.3: n -> n / c), < n "
                      "(checked jointly)")
KOV_DELTA_TILDE = Param("delta_tilde", _OPEN_UNIT, "delta_tilde of KOV Thm 3.5 (the composition's slack)")

# the DP-SGD accountants
DELTA = Param("delta", Real(0.0, 1.0, lo_open=True, hi_open=True), "target delta (total)", DECREASING)
SGD_SIGMA = Param("sigma", Real(1e-100, 1e100), "noise std of one gradient step (sigma^2 finite and nonzero)")
SGD_LIPSCHITZ = Param("lipschitz", Real(1e-100, 1e100), "Lipschitz constant L of the loss (sensitivity 2L; L^2 "
                      "finite and nonzero)")
#: the domain of sigma / lipschitz, checked jointly (Lemma 1's admissible orders and coefficient stay in float64)
SGD_NOISE_RATIO = Real(1e-6, 1e100)
SIGMA = Param("sigma", Real(1e-3, 1e6), "noise std of one gradient step", DECREASING, search=(1e-2, 1e5))
# L up to 1e3: with sigma >= 1e-3, sigma / L stays in SGD_NOISE_RATIO (>= 1e-6; below ~1e-8 Lemma 1's
# admissible orders vanish in float64)
LIPSCHITZ = Param("lipschitz", Real(1e-6, 1e3), "Lipschitz constant L of the loss (sensitivity 2L)", INCREASING,
                  search=(1e-5, 1e3), default=1.0)
CONTRIBUTIONS = Param("contributions", Real(0.0, 1e12, lo_open=True),
                      "T_u: most contributions of a user (high-probability or enforced)", INCREASING,
                      search=(1e-3, 1e11))
RDP_CONTRIBUTIONS = Param("contributions", SPOTTED_CONTRIBUTIONS.domain,
                          "T_u: most contributions of a user (0: none, the curve is 0)")
CENTRAL_STEPS = Param("steps", STEPS_T.domain, "T: number of steps (one user sampled per step)")
STEPS_SGD = Param("steps", Integer(1, 10**9), "T: number of steps", INCREASING)
N_SAMPLED = Param("n", N.domain, "number of users (sampling rate 1/n)", DECREASING)
ORDER = Param("order", Real(1.0, MAX_ORDER, lo_open=True), "a fixed Rényi order alpha > 1")
ORDERS = Param("orders", Orders(hi=MAX_ORDER), "Rényi orders alpha > 1")
TARGET_EPSILON = Param("target_epsilon", Real(0.0, FLOAT_MAX, lo_open=True),
                       "eps to meet (> 0, finite)")

# the walk simulation
_INT32 = 2**31 - 1
WALK_N = Param("n", Integer(2, _INT32), "number of users (walk entries are int32)")
WALK_STEPS = Param("steps", Integer(1, _INT32), "T: steps of each walk")
NUM_WALKS = Param("num_walks", Integer(1, _INT32), "number of independent walks")
SEED = Param("seed", Integer(0, 2**32 - 1), "jax.random's 32-bit seed (larger ones collide)")
DELTA_CYCLE = Param("delta_cycle", _OPEN_UNIT, "delta of one cycle's aggregate (the Gaussian's delta0 or the "
                    "shuffling delta)")

# the registry's own (its bounds' other parameters; every Param of a network.* bound is declared in this module)
ADVANCED_EPS0 = Param("eps0", Real(0.0, 30.0, lo_open=True), "guarantee of one mechanism", INCREASING,
                      search=(1e-6, 30.0))
ADVANCED_STEPS = Param("steps", Integer(1, 10**12), "number of compositions k", INCREASING)
ADVANCED_DELTA0 = Param("delta0", Real(0.0, 1.0, hi_open=True), "delta of one mechanism", INCREASING,
                        search=(1e-300, 0.5), default=0.0)
KOV_BOUND_EPS0 = Param("eps0", Real(0.0, 30.0, lo_open=True), "pure guarantee of one mechanism")
KOV_BOUND_STEPS = Param("steps", Integer(1, 4096), "number of compositions k (O(k^2) kernel)")
ERLINGSSON_N = Param("n", Integer(1001, 10**12), "number of users (> 1000, Thm 2)")
ERLINGSSON_EPS0 = Param("eps0", Real(0.0, 0.5, lo_open=True, hi_open=True), "LDP level of RR_gamma (< 1/2, Thm 2)",
                        INCREASING, search=(1e-6, 0.4999))
EQ11_EPS0 = Param("eps0", Real(0.0, 1.0, lo_open=True), "LDP level of randomized response (<= 1)", INCREASING,
                  search=(1e-4, 1.0))
SPOTTED_N = Param("n", N.domain, "number of users", DECREASING, search=(2, 10**12))
THM4_EPS0 = Param("eps0", EPS0_GAUSS.domain, "per-step LDP level of the noise (< 1)", INCREASING,
                  search=(1e-6, 0.999))
THM4_DELTA = Param("delta", SGD_DELTA.domain, "target delta (total, < 1/2)", DECREASING)
BASSILY_N = Param("n", N.domain, N_SAMPLED.doc)
CYCLE_DELTA = Param("cycle_delta", Choice(("group", "paper")),
                    "per-cycle delta: 'group' adds Balle et al. 2018 Thm 10's group terms (sound), 'paper' is "
                    "App. D/E's delta_A", default="group")
METHOD = Param("method", Choice(("balle2020", "mironov")), "RDP to DP conversion (Balle et al. 2020 or Mironov 2017)",
               default="balle2020")
#: The accountant of the DP-SGD baselines (local, central), declared as the ``dpsgd`` bound declares its own.
ACCOUNTANT = Param("accountant", Choice(("rdp", "pld")),
                   "rdp: Rényi DP at the optimal order; pld: the tight privacy-loss distribution (order 0: none)",
                   default="rdp")
COMPOSITION = Param("composition", Choice(("advanced", "simple")), "advanced (capped by S eps0) or simple S eps0",
                    default="advanced")

# the intermediate quantities and Thm 2's closed form
KOV_DELTAS = Param("deltas", Real(0.0, 1.0), "delta_l of each composed mechanism")
CYCLE_LENGTH = Param("m", Integer(0, 10**12), "cycle length m: contributions aggregated in one cycle (0: none)")
EPS_AGGREGATE = Param("eps_aggregate", Real(0.0, FLOAT_MAX), "eps of the aggregate of one cycle (>= 0, finite)")
SIGMA_LOC = Param("sigma_loc", Real(0.0, 1e300, lo_open=True), "std of the local noise sigma_loc")
ERLINGSSON_DELTA = Param("delta", Real(0.0, 0.01, lo_open=True, hi_open=True),
                         "delta of one shuffling step (< 1/100, Thm 2 / Erlingsson et al. Cor. 9)")
GAMMA_TARGET = Param("target_epsilon", ERLINGSSON_EPS0.domain,
                     "per-visit eps Thm 2's gamma is calibrated for (< 1/2)")
RR_VALUES = Param("L", Integer(2, 2**53), "number of values of randomized response")
