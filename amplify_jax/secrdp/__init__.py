"""SecRDP accountant of Decor: correlated Gaussian noise over a graph (Allouah, Koloskova, El Firdoussi,
Jaggi, Guerraoui, "The Privacy Power of Correlated Noise in Decentralized Learning", ICML 2024).

The model (Decor, Eq. 3 and the proof of Thm 6, Eqs. 14-21; the extraction lost the formulas, rebuilt in
docs/errata.md#e-secrdp-accountant).  At every step user i shares its clipped gradient (norm <= C) plus
uncorrelated noise N(0, sigma_unc^2) plus, for each neighbour j, a pairwise-cancelling term
v_ij = -v_ji ~ N(0, w_ij sigma_cor^2) (w_ij = 1 on unweighted graphs).  An adversary who knows the secrets of
a set of colluders subtracts their terms; for the honest users H the shared vector is Gaussian with covariance

    Sigma_H = sigma_unc^2 I + sigma_cor^2 L_H,        L_H = D_H - A_H (graph restricted to H),

and replacing one user's clipped gradient moves the mean by at most 2 C e_i, so one step is

    (alpha, alpha * eps1)-SecRDP,   eps1 = 2 C^2 max_{i in H} [Sigma_H^{-1}]_ii          (Thm 6, Eq. 19).

Adversaries (Sec. 2): I ``"eavesdropper"`` (H = all users), II ``"curious"`` (every single user removed in
turn), III ``"colluding"`` (every set of up to c users removed), IV ``"local"`` (no secrets: local DP,
eps1 = 2 C^2 / sigma_unc^2).

The spectral bound of Thm 1 (docs/errata.md#e-secrdp-spectral; derived again in :func:`spectral_bound`):

    [Sigma_H^{-1}]_ii <= 1/(|H| sigma_unc^2) + (1 - 1/|H|) / (sigma_unc^2 + a(H) sigma_cor^2),

a(H) the algebraic connectivity; it is exact for the complete graph.

Where each part of the paper lives (private files; this module is the one list of what the subpackage offers):

- ``_graph.py`` (Sec. 2, the graph; Sec. 4, a(G), Fiedler 1973): :class:`SecGraph`, :func:`prepare_graph`,
  :func:`algebraic_connectivity`, ``LARGE_N``, the certified a(G) of large graphs, the removed sets of II/III.
- ``_adversaries.py`` (Sec. 2, the threat model): ``ADVERSARIES``, :class:`DisconnectedGraphWarning`, the
  validation of noise levels and adversaries, the connectivity check.
- ``_covariance.py`` (Thm 6 proof, Eqs. 14-21; Algorithms 2-3): Sigma_H and the diagonal of its inverse (the
  eigendecomposition path, the deflated direct inversion and its jnp twin), :func:`diag_inverse_covariance`,
  ``_ENUMERATION_BUDGET``.
- ``_certified.py`` (Thm 6 / Algorithm 2 for adversary II on mid-size graphs): the certified low-rank update
  ``_Certifier``, ``_curious_fast``, ``_REFINE_BUDGET``, ``_CERT_RTOL``.
- ``_flow.py`` (beyond the paper): the local flow bound on non-backtracking and breadth-first trees.
- ``_step.py`` (Thm 1, Thm 6, Algorithms 2-3): :class:`StepAccount`, :func:`step_account`, :func:`step_rdp`,
  :func:`spectral_bound`, the routing of each adversary (``_step_diag``, ``_FAST_MIN_N``).
- ``_conversion.py`` (Cor. 12 proof, App. D.1): :func:`closed_form_epsilon`, :func:`closed_form_eps1`,
  :func:`epsilon` over T steps.
- ``_example_level.py`` (Sec. 6.2, App. D): :func:`effective_noise_multiplier`, :func:`example_level_rdp`,
  :func:`example_level_epsilon`.
- ``_calibration.py`` (App. D.1; the baselines of Sec. 6): :class:`NoiseCalibration`, :func:`calibrate_eps1`,
  :func:`calibrate_sigma_cor`, :func:`noise_frontier`, :func:`baselines`, :func:`example_level_calibrate_eps1`,
  :func:`example_level_calibrate_sigma_cor` (targets are ``target_epsilon``, the example-level rate is ``q``).
- ``_utility.py`` (Sec. 5.3, Sec. 6 setup, Eq. 4): :func:`metropolis_hastings`, :func:`utility_weights`,
  :func:`optimal_noise`.
- ``_rounding.py``: the float64 unit roundoff and rounding margins of the soundness argument.
- ``_bounds.py``: the registry's declarations.

Tuning constants are read in the file named above: a test that patches one patches that module (``LARGE_N``
is read through ``_graph._is_large``, ``_ENUMERATION_BUDGET`` through ``_covariance._enumeration_affordable``).

How the accountant computes
- Adversary I: one eigendecomposition L = V diag(lambda) V^T per graph (cached), then for every pair of
  noise levels diag(Sigma^{-1})_i = sum_k V_ik^2 / (sigma_unc^2 + sigma_cor^2 lambda_k): one matrix product
  (P pairs x n eigenvalues) @ (n eigenvalues x n users) in JAX float64.
- Adversaries II and III: exact by enumerating every removed set (each single user for II, every set of
  size <= c for III) while the number of sets times n^3 is affordable (``_ENUMERATION_BUDGET``: II up to
  n = 447; used by II below 48 users and for dense graphs), each Sigma_H inverted directly after deflating its
  constant directions (``_direct_masks``: Sigma_H's condition number grows like sigma_cor^2 / sigma_unc^2, the
  deflated matrix's does not).
  Adversary II from n = 48 on (connected graphs of bounded degree, ``_fast_affordable``; below, and for dense
  graphs, the enumeration above): a certified low-rank update, ``_Certifier``.  One approximate inverse S of
  the *deflated* M = Sigma_G + (beta/n) 1 1^T per noise pair (O(n^3), from the cached eigendecomposition);
  removing user j is a rank-(deg j + 1) Woodbury update of it, O(n deg^2) for all i at once, and each diagonal
  entry gets a rigorous residual bound (y_i - ||y|| rho <= [N^{-1}]_ii <= y_i + ||y|| rho + rho^2 / sigma_unc^2
  for r = e_i - N y, ||r|| <= rho), so the reported value is a certified upper bound and ``eps1_lower`` a
  certified lower bound.  Users whose gap could decide the maximum are re-bounded after a Newton-Schulz step,
  then inverted directly (a few), then capped by the spectral bound; ``exact`` says whether the certified gap
  is below ``_CERT_RTOL`` = 1e-9 (relative).
  Otherwise the sound spectral bound with a lower bound on min(a(G), a(G - S)): exact minimum over single
  removals for n <= 400, enumerated for small c, else a(G) - c w_max (Cauchy interlacing and Weyl: deleting
  vertex v moves lambda_2 down by at most max_u w_uv; Fiedler 1973).  (An earlier Schur-complement/Woodbury
  update of the *undeflated* Sigma^{-1} for adversary II was removed: it loses all accuracy when sigma_cor >>
  sigma_unc and under-reported eps1 by up to 17%; the certified update deflates first and checks itself.)
  Wherever only a bound is available (beyond enumeration, n >= LARGE_N), the value is the smaller of that
  spectral bound and a local flow bound (``_flow_diag_bound``: [Sigma_H^{-1}]_ii is the effective resistance
  from i to ground, bounded by Thomson's principle with flows on i's non-backtracking tree, at every node the c
  strongest branches removed, or on its breadth-first tree with one removal budget c), which needs no
  eigendecomposition and does not collapse to local DP when a(G) <= c w_max.
- Graphs with n >= ``LARGE_N`` users: no dense eigendecomposition; the result is the spectral bound with a
  *certified* lower bound on a(G): a shift-invert Lanczos estimate t, then Sylvester's law of inertia on a
  sparse LDL^T of L - t I (exactly one negative pivot <=> lambda_2 > t), or the flow bound if smaller.
  Flagged ``exact=False``.

Soundness: every exact value on the eigendecomposition and direct paths gets an absolute rounding margin of
``8 n u / sigma_unc^2`` (u = 2^-53, the size of the error of a sum of n terms bounded by 1/sigma_unc^2), and
the direct (deflated Cholesky) path a further margin scaled by the deflated matrix's condition number
(``_direct_masks``); the certified path of adversary II bounds its own rounding (``_Certifier``); bounds only
ever replace a value by something larger.

Disconnected graphs (or, for adversaries II/III, graphs that some admissible removal disconnects): the
inverse still exists (sigma_unc > 0) and the value returned is still exact and valid, but a user cut off
from the others is protected by sigma_unc alone -- the guarantee falls back to local DP.  This is reported
by a :class:`DisconnectedGraphWarning` and by the ``connected`` flag of :class:`StepAccount`; no error.

Over T steps: the closed form eps = T eps1 + 2 sqrt(T eps1 ln(1/delta)) (docs/errata.md#e-secrdp-closed-form;
the exact minimum over alpha > 1 of Mironov's conversion of alpha T eps1), and the core's conversions
(``amplify_jax.conversions``, Balle et al. 2020 by default, never larger).  Example-level privacy by subsampling: see
:func:`example_level_rdp` for the effective noise multiplier.

Where the code departs from the text or from the authors' code (docs/errata.md, section "Decor"): the
accountant (Sigma_H, eps1 = 2 C^2 max_i [Sigma_H^{-1}]_ii), the spectral bound and the closed form over T steps
are formulas the extraction lost, re-derived from the proof of Thm 6 and checked in tests/test_secrdp.py
(docs/errata.md#e-secrdp-accountant, #e-secrdp-spectral, #e-secrdp-closed-form); unlike the authors' code,
every adversary I-IV is accounted, not adversary I only (docs/errata.md#e-secrdp-adversaries), and the
example-level path composes the T steps and uses delta, where the authors' returns the single-step subsampled
bound (docs/errata.md#e-secrdp-example-level); the noise search fixes sigma_unc and bisects sigma_cor, as in
App. D.1.

Graphs: the builders (``ring_graph``, ``torus_graph``, ``complete_graph``, ``star_graph``,
``random_regular_graph(d, n, seed=...)`` in networkx's order, ``erdos_renyi_graph``) and ``adjacency`` live in
:mod:`amplify_jax.graphs`, their one public home (``from amplify_jax import graphs``); every function here takes
a graph (an adjacency matrix, a networkx graph, or the :class:`SecGraph` of :func:`prepare_graph`), and
``amplify_jax.graphs.from_spec`` reads specs such as ``"ring:16"`` and graph files.

Solvers are named ``calibrate_<param>`` after the bound whose target they meet (:func:`epsilon`; the example-level
ones after :func:`example_level_epsilon`): :func:`calibrate_eps1`, :func:`calibrate_sigma_cor`,
:func:`example_level_calibrate_eps1`, :func:`example_level_calibrate_sigma_cor`.  :func:`optimal_noise` and
:func:`noise_frontier` optimise or trace a set; they are not "a bound meets a target".

What ``__all__`` lists (issue 29: one home per name): the accountant and its bounds, the solvers, the baselines,
:func:`optimal_noise` and :class:`DisconnectedGraphWarning`.  Also importable from here, documented, but not in
``__all__``: the result types (:class:`StepAccount`, :class:`NoiseCalibration`, :class:`Baselines`,
:class:`Frontier`, :class:`OptimalNoise`, :class:`SecGraph`; each function names the one it returns), the
intermediate quantities and helpers (:func:`prepare_graph`, :func:`diag_inverse_covariance`,
:func:`closed_form_eps1`, the closed form's inverse, which :func:`calibrate_eps1` returns with
``method="closed_form"``; :func:`effective_noise_multiplier`; :func:`metropolis_hastings` and
:func:`utility_weights`, the inputs of :func:`optimal_noise`'s cost), the adversary names ``ADVERSARIES`` and
the ranges and tunables (``LARGE_N``, ``SIGMA_UNC_RANGE``, ``SIGMA_COR_MAX``, ``CLIP_RANGE``,
``BATCH_SIZE_RANGE``; a parameter's public statement is the registry's ``Param``).

The bound registry (``amplify_jax.bounds``) holds this subpackage's bounds as ``secrdp.step`` (:func:`epsilon`),
``secrdp.step-rdp``, ``secrdp.spectral``, ``secrdp.spectral-rdp``, ``secrdp.closed-form``,
``secrdp.example-level`` and ``secrdp.example-level-rdp`` (declared in ``secrdp/_bounds.py``).
"""

from __future__ import annotations

from ._adversaries import DisconnectedGraphWarning as DisconnectedGraphWarning
from ._calibration import baselines as baselines
from ._calibration import calibrate_eps1 as calibrate_eps1
from ._calibration import calibrate_sigma_cor as calibrate_sigma_cor
from ._calibration import example_level_calibrate_eps1 as example_level_calibrate_eps1
from ._calibration import example_level_calibrate_sigma_cor as example_level_calibrate_sigma_cor
from ._calibration import noise_frontier as noise_frontier
from ._conversion import closed_form_epsilon as closed_form_epsilon
from ._conversion import epsilon as epsilon
from ._example_level import example_level_epsilon as example_level_epsilon
from ._example_level import example_level_rdp as example_level_rdp
from ._graph import algebraic_connectivity as algebraic_connectivity
from ._step import spectral_bound as spectral_bound
from ._step import step_account as step_account
from ._step import step_rdp as step_rdp
from ._utility import optimal_noise as optimal_noise

# importable and documented, not in __all__ (result types, helpers, names and ranges: see the docstring)
from ._adversaries import ADVERSARIES, CLIP_RANGE, SIGMA_COR_MAX, SIGMA_UNC_RANGE
from ._calibration import Baselines, Frontier, NoiseCalibration
from ._conversion import closed_form_eps1
from ._covariance import diag_inverse_covariance
from ._example_level import BATCH_SIZE_RANGE, effective_noise_multiplier
from ._graph import LARGE_N, SecGraph, prepare_graph
from ._step import StepAccount
from ._utility import OptimalNoise, metropolis_hastings, utility_weights

__all__ = [
    "step_account",
    "step_rdp",
    "spectral_bound",
    "algebraic_connectivity",
    "epsilon",
    "closed_form_epsilon",
    "example_level_rdp",
    "example_level_epsilon",
    "calibrate_eps1",
    "calibrate_sigma_cor",
    "example_level_calibrate_eps1",
    "example_level_calibrate_sigma_cor",
    "baselines",
    "noise_frontier",
    "optimal_noise",
    "DisconnectedGraphWarning",
]

from . import _bounds  # noqa: F401,E402  (registers the bounds)
