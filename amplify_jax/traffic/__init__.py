"""Differential privacy for communication patterns (Ladjel, Anciaux, Bellet, Scerri).

Source: R. Ladjel, N. Anciaux, A. Bellet, G. Scerri, "Mitigating Leakage from Data Dependent Communications
in Decentralized Computing using Differential Privacy" (``shared/papers/001_*.txt``); where the code departs
from the printed paper, docs/errata.md (section "Ladjel et al.") says how and which test shows it.  Everything
here is about one *cluster*: ``S`` source nodes each send one message to one of ``T`` target nodes, and an
external observer sees who talks to whom.

What is implemented, by the paper's numbering, and which private file holds it:

* Sec. II-D, Thm 1 -- privacy of an execution plan made of clusters (``_plans.py``): :class:`ExecutionPlan`,
  :func:`plan_privacy`, the running examples :func:`aggregate_plan` (``G`` grouping sets) and
  :func:`kmeans_plan` (``I`` iterations).
* Sec. III, Thm 2, App. B -- local sampling + flooding, no scrambler (``_local.py``): :func:`local_epsilon`.
* Sec. IV-B, Thm 3, App. C, Algorithm 1 -- pure eps of the capped scrambler, in log space
  (``_scrambler_pure.py``): :func:`scrambler_pure_epsilon`.  As printed it UNDER-REPORTS (exact enumeration,
  :func:`scrambler_pure_epsilon_exact`, finds larger worst-case ratios; found by this project,
  docs/errata.md#e-traffic-thm3): the printed value is kept for Figure 5 only and the sound local guarantee is
  reported.
* Sec. IV-C, Thm 4 / App. E (Lemma 2, Lemma 3, Lemma 5, Algorithm 2) -- (eps, delta) of the scrambler with
  local sampling and dummies (``_scrambler_delta.py``): :func:`scrambler_delta` (methods ``"hoeffding"``,
  ``"bennett"``, ``"exact"``, ``"monte_carlo"``), its inverse over eps :func:`scrambler_epsilon`, and the
  moments of L, :func:`amplification_variable_bounds`.
* Sec. II-E, III-C and IV-D -- utility and efficiency metrics (``_costs.py``): :func:`local_costs`,
  :func:`scrambler_costs`.
* Sec. IV-C, IV-D, V-B -- deployment inversions (``_deployment.py``): :func:`scrambler_calibrate_dummies`,
  :func:`scrambler_calibrate_sampling`, :func:`scrambler_calibrate_n` (results :class:`DummiesDeployment`,
  :class:`SamplingDeployment`, :class:`ScramblerSizeDeployment`, named after their answer; base
  :class:`Deployment`).  One cap per question whatever the front door (issue 27): :data:`DUMMIES_CAP` (1000
  dummies) and :data:`N_CAP` (10 000 messages per scrambler), also the search ranges ``bounds.invert`` uses
  for ``traffic.scrambler``; an answer stopped at a cap is INFEASIBLE, with a warning naming it.
* App. D -- the empirical simulation behind Figure 6 (``_simulation.py``): :func:`simulate_scrambler_outputs`.
* ``_common.py``: helpers the sections share; ``_bounds.py``: the family's bounds, declared for the registry.

Target conventions (each theorem keeps its own, stated here; docs/errata.md#e-traffic-targets):

* Thm 2 and Thm 4 (Eq. 2, Lemma 5, App. E-C): a sampled message goes to a target drawn uniformly among
  **all T** targets (it may hit the true one); the local randomizer is T-ary randomized response with
  blanket mass gamma = sigma.  We call this the *T convention*.
* Thm 3 (App. C): a sampled message goes uniformly to one of the **T - 1 other** targets,
  ``R_lie = sigma / (T - 1)``.  We call this the *T - 1 convention*.

Corrections of misprints (docs/errata.md, section "Ladjel et al."), each tested against an independent
evaluation in ``tests/test_traffic.py`` or ``tests/test_shuffle.py``:

* Thm 4: ``a = e^eps - 1`` (= -E[L]), not ``1 - e^eps`` (docs/errata.md#e-traffic-thm4-a);
  ``b = (1 - sigma) T (1 + e^eps)`` without the extra ``-2 sigma (1 - e^eps)`` (docs/errata.md#e-traffic-thm4-b).
* Lemma 5: the upper end of L is ``(1 - sigma) T + sigma (1 - e^eps)`` (the printed sign of
  ``sigma (1 - e^eps)`` is flipped; docs/errata.md#e-traffic-lemma5).
* Lemma 3 (Bennett): the corrected form ``E[sum_{i<=k} L_i]_+ <= (b_+ / ln(1 + beta))
  exp(-(k c / b_+^2) phi(beta))``, ``beta = a b_+ / c``, ``phi(u) = (1 + u) ln(1 + u) - u``, re-derived in
  :mod:`amplify_jax.shuffle.blanket` (docs/errata.md#e-traffic-lemma3-bennett).
* Thm 3: not an upper bound as printed (docs/errata.md#e-traffic-thm3); Sec. IV-C's Monte Carlo accuracy
  claim: replaced by an upper confidence bound and an exact method (docs/errata.md#e-traffic-monte-carlo).

Every delta returned is an upper bound (Monte Carlo: a one-sided upper confidence bound), capped at 1 and
set to 0 where eps is at least the local guarantee of the randomizer (post-processing).

Relation to amplify_jax.shuffle: the Lemma 2 sum is evaluated by the privacy blanket engine of
:mod:`amplify_jax.shuffle.blanket` (public, shared by both families) for the target randomizer
(``rr_delta`` / ``rr_epsilon``, the code behind ``shuffle.blanket_delta`` with ``target_randomizer``;
``rr_delta_traced`` inside the deployment inversions, where d, sigma or n are traced); the tests check it
against mpmath and direct enumeration.

Names follow the registry's vocabulary (:mod:`amplify_jax.bounds`): ``epsilon`` is the eps at which a delta is
computed (and a plan's clusters' eps), ``target_epsilon`` / ``target_delta`` what a deployment search must
meet, ``delta`` the fixed side of :func:`scrambler_epsilon`; results name their answer (``.epsilon``;
``.dummies``, ``.sampling``, ``.n`` for the deployments) and their ``status`` holds
:class:`amplify_jax.status.Status` codes.

Each numeric parameter's domain is stated once, as a registry ``Param`` in ``_params.py``: the functions
validate through it (:func:`amplify_jax._core.domains.check_params`) and ``_bounds.py`` declares the registry's
bounds with it, so both refuse the same values with the same message.  targets in 2..10**6, n in 1..10**7,
sampling in [0, 1], dummies in 0..10**6 (0..4096 for Thm 3's sum), epsilon and target_epsilon in [0, 300] (Thm
4's L stays finite in float64), delta in (0, 1) for :func:`scrambler_epsilon` and from 1e-15 where a search over
n, d or sigma needs monotonicity (the registry's ``traffic.scrambler``, the deployments' target_delta); the exact
enumeration takes targets 2..4, n 1..8, dummies 0..8 (``_params.py`` gives each end's reason).

What ``__all__`` lists (issue 29: one home per name): what a user calls or builds -- the bounds
(:func:`local_epsilon`, :func:`scrambler_pure_epsilon`, :func:`scrambler_pure_epsilon_exact`,
:func:`scrambler_delta`, :func:`scrambler_epsilon`), the deployment solvers, named ``scrambler_calibrate_<param>``
after the bound whose target they meet (:func:`scrambler_calibrate_dummies`, :func:`scrambler_calibrate_sampling`,
:func:`scrambler_calibrate_n`), execution plans and their privacy (:class:`ExecutionPlan`, :func:`aggregate_plan`,
:func:`kmeans_plan`, :func:`plan_privacy`) and the simulation (:func:`simulate_scrambler_outputs`).  Also
importable from here, documented, but not in ``__all__``: the result types (:class:`PureEpsilon`,
:class:`ScramblerPureEpsilon`, :class:`DeltaBound`, :class:`EpsilonInversion`, :class:`Deployment` and its three
kinds, :class:`PlanPrivacy`, :class:`Costs`, :class:`OutputSimulation`; each function names the one it returns),
the caps and method names (:data:`DUMMIES_CAP`, :data:`N_CAP`, ``METHODS``; a parameter's public statement is the
registry's ``Param``), and the side quantities :func:`amplification_variable_bounds` (the moments of L) and
:func:`local_costs` / :func:`scrambler_costs` (the cost metrics, also in every deployment's ``messages``).
"""

from ._plans import ExecutionPlan as ExecutionPlan
from ._plans import aggregate_plan as aggregate_plan
from ._plans import kmeans_plan as kmeans_plan
from ._plans import plan_privacy as plan_privacy
from ._local import local_epsilon as local_epsilon
from ._scrambler_pure import scrambler_pure_epsilon as scrambler_pure_epsilon
from ._scrambler_pure import scrambler_pure_epsilon_exact as scrambler_pure_epsilon_exact
from ._scrambler_delta import scrambler_delta as scrambler_delta
from ._scrambler_delta import scrambler_epsilon as scrambler_epsilon
from ._deployment import scrambler_calibrate_dummies as scrambler_calibrate_dummies
from ._deployment import scrambler_calibrate_n as scrambler_calibrate_n
from ._deployment import scrambler_calibrate_sampling as scrambler_calibrate_sampling
from ._simulation import simulate_scrambler_outputs as simulate_scrambler_outputs

# importable and documented, not in __all__ (result types, caps, side quantities: see the docstring)
from ._common import DUMMIES_CAP, N_CAP
from ._costs import Costs, local_costs, scrambler_costs
from ._deployment import Deployment, DummiesDeployment, SamplingDeployment, ScramblerSizeDeployment
from ._local import PureEpsilon
from ._plans import PlanPrivacy
from ._scrambler_delta import METHODS, DeltaBound, EpsilonInversion, amplification_variable_bounds
from ._scrambler_pure import ScramblerPureEpsilon
from ._simulation import OutputSimulation

__all__ = [
    "local_epsilon",
    "scrambler_pure_epsilon",
    "scrambler_pure_epsilon_exact",
    "scrambler_delta",
    "scrambler_epsilon",
    "scrambler_calibrate_dummies",
    "scrambler_calibrate_sampling",
    "scrambler_calibrate_n",
    "ExecutionPlan",
    "aggregate_plan",
    "kmeans_plan",
    "plan_privacy",
    "simulate_scrambler_outputs",
]

from . import _bounds  # noqa: F401, E402  (registers the bounds)
