"""Network DP for token walks: Cyffers & Bellet, "Privacy Amplification by Decentralization" (AISTATS 2022).

In network DP (Definition 1) a user v only sees the messages she receives, so a token that walks the graph
and aggregates contributions hides each contribution among the others.  This module gives

* composition tools: advanced composition (Dwork, Rothblum, Vadhan 2010) and the heterogeneous optimal
  composition bound of Kairouz, Oh, Viswanath 2015 (Thm 3.5), with an exact homogeneous variant (Thm 3.3);
* the closed forms of the paper: ring (Thm 1, Remark 1, Thm 2), complete graph (Thm 3 with the full
  non-asymptotic form of App. D, Thm 6 / App. E), SGD (Thm 4 Eq. 7, Lemma 1 + Remark 5), collusions (Sec. 4.3),
  spotted contributions (App. G, Lemma 2) and the baselines (the same algorithms under local DP; central
  DP-SGD with amplification by subsampling);
* noise calibration for network, local and central DP-SGD (Sec. 5.2), batched through
  :func:`amplify_jax.calibrate.invert_monotone`;
* the empirical walk simulation of Sec. 5.1 (Figures 1(b) and 3), vectorised over pairs and walks.

Where the printed paper is wrong or does not support a number, the docstring says so (each entry of
docs/errata.md, section "Cyffers & Bellet", gives the test that shows it):

* App. D, Thm 3: the second term of the advanced composition uses eps_c, not eps
  (docs/errata.md#e-network-thm3-composition).
* App. E, Thm 6: the same slip in the second term (docs/errata.md#e-network-thm6-composition).  Its per-cycle
  constant 21 does not follow from the printed chain of inequalities (which gives 42) but does hold; see
  :func:`complete_graph_histogram_bound` (docs/errata.md#e-network-thm6-constant).
* App. G, Lemma 2: advanced composition over S spotted contributions is sqrt(2 S ln(1/delta')) eps + ...;
  the printed sqrt(S ln(1/delta')) drops the factor 2 (docs/errata.md#e-network-lemma2-factor).
* The Chernoff bound N = mu + sqrt(3 mu ln(1/delta_hat)) used throughout holds only when
  3 ln(1/delta_hat) <= mu (the paper's alpha <= 1); elsewhere the general multiplicative bound
  P(X >= (1 + a) mu) <= exp(-a^2 mu / (2 + a)) is used and the result's ``valid`` flag is False
  (docs/errata.md#e-network-chernoff).
* Remark 1: per-user noise sigma_loc / sqrt(n) leaves each window of n - 1 contributions with variance
  (n - 1)/n sigma_loc^2 < sigma_loc^2; we use sigma_loc / sqrt(n - 1)
  (docs/errata.md#e-network-remark1-noise).
* App. D / E state delta_cycle <= delta_A for Eq. 10 (docs/errata.md#e-network-cycle-delta).  A cycle
  samples users *with replacement*, and Balle, Barthe, Gaboardi 2018 Thm 10's delta' also carries the
  group-privacy deltas of the cycles where u is drawn k >= 2 times.  Both the closed forms and the walk
  simulation add them by default
  (``cycle_delta="group"``; ``"paper"`` reproduces the paper's delta).  They are far larger: for Fig. 1(b)
  the largest delta over all pairs and walks (what benchmarks/fig_network_fig1b.py prints) is 0.025
  (eps0 = 0.1) and 0.030 (eps0 = 0.4) at n = 400, and over its grid n = 5..400 between 0.005 and 0.048
  (eps0 = 0.1) and between 0.012 and 0.073 (eps0 = 0.4); close to 1 for histograms, where k >= 2 reports of one
  user in a cycle cost a hockey-stick divergence of order (k - 1) eps_A at the amplified eps_A of one report.
  The epsilons are unchanged.  For histograms the walk simulation's sound pairs come from the path-known view
  (``walk_privacy_losses(..., view="path_known")``: group privacy of the shuffled aggregate; Fig. 3).

Where each section lives (private files; this ``__init__`` is the one list of what the subpackage offers):

- ``_params.py``: each parameter's domain, stated once (the Params the functions and the registry share);
- ``_common.py``: the result types and the joint check of colluders < n shared by the sections;
- ``_composition.py``: advanced composition, Kairouz-Oh-Viswanath (Thms 3.3, 3.5), the Chernoff bound on the
  number of contributions (App. D);
- ``_ring.py``: Section 3, the ring (Thm 1, Remark 1, Thm 2, Remark 2);
- ``_complete_graph.py``: Section 4.1 and App. D / E, the complete graph (Eq. 10, Thm 3, Thm 6, collusions of
  Sec. 4.3), and the spotted contributions of App. G (Lemma 2);
- ``_local.py``: the local-DP baseline of Sec. 5.1 (Fig. 1(a));
- ``_sgd.py``: Section 4.2 and App. F (Thm 4, Lemma 1, Remark 5), the SGD baselines and calibration of Sec. 5.2;
- ``_walks.py``: the empirical walk simulation of Sec. 5.1 (Figures 1(b) and 3);
- ``_bounds.py``: the bounds declared for the registry (:mod:`amplify_jax.bounds`).

The approximate-DP building blocks (advanced composition, the analytic Gaussian, subsampling, the FMT closed
form) come from :mod:`amplify_jax.approx_dp`.

Names follow the registry's vocabulary (:mod:`amplify_jax.bounds`): ``steps`` is the number of compositions
(the walk's length T, the ring's visits K, advanced composition's k), ``eps0`` the local guarantee of one
contribution, ``target_epsilon`` what a calibration must meet; ``contributions`` (T_u) keeps its name (the
previous spellings are gone: CHANGELOG.md).

What ``__all__`` lists (issue 29: one home per name): the bounds (composition, ring, complete graph, local,
spotted contributions, SGD), the noise calibration :func:`sgd_calibrate_sigma` (named after the SGD bounds whose
target it meets) and the walk simulation (:func:`sample_walks`, :func:`walk_privacy_losses`).  Also importable
from here, documented, but not in ``__all__``: the intermediate quantities of the bounds
(:func:`contribution_bound`, the Chernoff count; :func:`subsampled_cycle_epsilon`, Eq. 10 for one cycle;
:func:`kov_composition_delta`, the delta of KOV Thm 3.5), Thm 2's printed randomized-response parameter
:func:`ring_histogram_gamma`, the ring's noise std :func:`ring_noise` (utility, not privacy), the summary
:func:`summarize_walk_losses`, the result types (:class:`NetworkBound`, :class:`SpottedBound`,
:class:`RingNoise`, :class:`SgdEpsilon`, :class:`SgdCalibration`, :class:`WalkLosses`, :class:`WalkSummary`;
each function names the one it returns) and the ranges ``SGD_NOISE_RANGE``, ``SGD_SCALE_RANGE``.
"""

from __future__ import annotations

from ._composition import advanced_composition_epsilon as advanced_composition_epsilon
from ._composition import kov_composition_epsilon as kov_composition_epsilon
from ._composition import kov_homogeneous_epsilon as kov_homogeneous_epsilon
from ._ring import ring_sum_bound as ring_sum_bound
from ._ring import ring_histogram_bound as ring_histogram_bound
from ._complete_graph import complete_graph_sum_epsilon as complete_graph_sum_epsilon
from ._complete_graph import complete_graph_sum_bound as complete_graph_sum_bound
from ._complete_graph import complete_graph_histogram_bound as complete_graph_histogram_bound
from ._complete_graph import spotted_contributions_epsilon as spotted_contributions_epsilon
from ._local import local_sum_bound as local_sum_bound
from ._sgd import sgd_theorem4_bound as sgd_theorem4_bound
from ._sgd import network_sgd_rdp as network_sgd_rdp
from ._sgd import network_sgd_epsilon as network_sgd_epsilon
from ._sgd import local_sgd_epsilon as local_sgd_epsilon
from ._sgd import central_sgd_epsilon as central_sgd_epsilon
from ._sgd import central_sgd_bassily_epsilon as central_sgd_bassily_epsilon
from ._sgd import sgd_calibrate_sigma as sgd_calibrate_sigma
from ._walks import sample_walks as sample_walks
from ._walks import walk_privacy_losses as walk_privacy_losses

# importable and documented, not in __all__ (intermediate quantities, helpers, result types, ranges: see the
# docstring)
from ._common import NetworkBound, RingNoise, SgdCalibration, SgdEpsilon, SpottedBound
from ._composition import contribution_bound, kov_composition_delta
from ._ring import ring_histogram_gamma, ring_noise
from ._complete_graph import subsampled_cycle_epsilon
from ._sgd import SGD_NOISE_RANGE, SGD_SCALE_RANGE
from ._walks import WalkLosses, WalkSummary, summarize_walk_losses

__all__ = [
    # composition
    "advanced_composition_epsilon",
    "kov_composition_epsilon",
    "kov_homogeneous_epsilon",
    # ring
    "ring_sum_bound",
    "ring_histogram_bound",
    # complete graph, local baseline, spotted contributions
    "complete_graph_sum_epsilon",
    "complete_graph_sum_bound",
    "complete_graph_histogram_bound",
    "local_sum_bound",
    "spotted_contributions_epsilon",
    # sgd
    "sgd_theorem4_bound",
    "network_sgd_rdp",
    "network_sgd_epsilon",
    "local_sgd_epsilon",
    "central_sgd_epsilon",
    "central_sgd_bassily_epsilon",
    "sgd_calibrate_sigma",
    # simulation
    "sample_walks",
    "walk_privacy_losses",
]

from . import _bounds  # noqa: F401, E402  (registers the bounds)
