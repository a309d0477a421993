"""Self check-in: binomial-weighted RDP of clients that check in by themselves, shuffled and distributed.

Source: Liew, Hasegawa, Takahashi, "Self Check-in: Tight Privacy Amplification for Practical Distributed
Learning" (also "Privacy Amplification via Shuffled Check-Ins", arXiv 2206.03151); where the code departs
from the printed paper, docs/errata.md (section "Self check-in") says how and which test shows it.  Each of
the n clients checks in to a round with probability gamma (dropouts make the effective rate
gamma = p (1 - p'), Sec. 3.2); the number k ~ Bin(n, gamma) of participants is public.

What is here (every curve has the orders axis last and broadcasts over its numeric parameters):

- Thm 1 (Eq. 5), the binomial-weighted sum over k of the RDP of a k-participant round, evaluated *exactly*
  for n up to 1e15 (:func:`binomial_weighted_rdp`): the k that carry all but a tail of mass <= ``tail_tol``
  (Bernstein's inequality fixes the window size at the Python boundary, a static shape) are summed term by
  term, and the rest of the k-axis is covered by geometric blocks whose contribution is bounded above
  (block mass <= size x the largest pmf in it; per-k moment <= the block's worst case).  The result is
  therefore an upper bound whatever ``tail_tol`` is; ``tail_tol`` only sets how tight it is.
- Thm 4 (Eq. 10): distributed check-in with the Gaussian mechanism (:func:`distributed_gaussian_rdp`),
  base RDP 2 lambda / (k sigma^2) (the mean of k values clipped to norm 1, replacement adjacency) amplified
  by sampling without replacement (Wang, Balle, Kasiviswanathan 2019, Thm 9, the bound of
  :func:`amplify_jax.rdp.without_replacement_rdp`), and the Eq. 11 approximation as an option.
- Thm 2 (Eq. 7, constants corrected against Girgis et al. 2021, docs/errata.md#e-checkin-eq7) and Thm 3
  (Eq. 8): upper and lower bounds for shuffled check-in of eps0-LDP discrete randomizers; the
  strong-composition baseline.
- Sec. 4.1: the shuffled Gaussian RDP by integer partitions (at most n parts,
  docs/errata.md#e-checkin-partitions), and the "subsampled shuffling conversion" route for
  (eps0, delta0)-LDP randomizers.
- Calibration: minimal sigma, largest gamma, most rounds (steps) for a target (eps, delta), named
  ``distributed_gaussian_calibrate_<param>`` after the bound whose target they meet; the results name their
  answer (``.sigma``, ``.gamma``, ``.steps``).
- The order cap: every RDP -> (eps, delta) conversion here (the epsilon and delta functions and the three
  calibrations) checks whether its best order is the largest of the grid it was given (:func:`order_at_cap`)
  and then warns with :class:`OrderCapWarning` (the value is a valid bound, but wider orders may give a
  smaller one); the registry's check-in bounds report such points with status ``fallback``.

Names follow the registry's vocabulary (:mod:`amplify_jax.bounds`): ``steps`` is the number of rounds,
``target_epsilon`` what a calibration must meet, ``delta`` / ``epsilon`` the fixed side of the pair (the
previous spellings are gone: CHANGELOG.md).

Per-k sampling rate.  Conditioned on k participants, the differing client is among them with probability
exactly k / n (Bin(k-1; n-1, gamma) gamma / Bin(k; n, gamma) = k / n), so the k-participant round is a
without-replacement subsample of rate k / n.  The paper writes the rate gamma in Eqs. 7, 10, 11; the exact
sums here use k / n (the sound rate; docs/errata.md#e-checkin-rate).  The closed forms that the paper derives
with rate gamma (Eq. 7, Eq. 11) are offered as printed, to reproduce the paper, and say so.

Where each section lives (private files; this ``__init__`` is the one list of what the subpackage offers):

- ``_weighted.py``: Thm 1 (Eq. 5), the exact binomial-weighted sum, the effective rate of Sec. 3.2, and the
  helpers shared by the sections (integer orders, the Chernoff-parameter grid of Eqs. 7, 8, 11);
- ``_distributed.py``: Thm 4 (Eq. 10) and Eq. 11, distributed check-in with the Gaussian mechanism;
- ``_shuffled.py``: Thms 2-3 (Eqs. 7-8), shuffled check-in with eps0-LDP discrete randomizers;
- ``_shuffled_gaussian.py``: Sec. 4.1 / App. B, the shuffled Gaussian mechanism and its check-in;
- ``_subsampled_shuffle.py``: Sec. 4.1, the "subsampled shuffling conversion" for (eps0, delta0)-LDP;
- ``_baselines.py``: Sec. 5.1, the strong-composition baselines (from :mod:`amplify_jax.approx_dp`);
- ``_accounting.py``: (eps, delta) after T rounds, and the calibrations (minimal sigma, largest gamma, most
  rounds);
- ``_bounds.py``: the bounds declared for the registry (:mod:`amplify_jax.bounds`).

What ``__all__`` lists (issue 29: one home per name): the RDP curves, the (eps, delta) functions, the
strong-composition baselines, the three calibrations and :class:`OrderCapWarning`.  Also importable from here,
documented, but not in ``__all__``: the generic Thm 1 engine :func:`binomial_weighted_rdp` (it takes a
log-excess kernel: a building block for a new check-in curve) and its helpers :func:`window_size` and
:func:`effective_checkin_rate` (gamma = p (1 - p')); :func:`order_at_cap`; the result types
(:class:`ApproxCheckinRDP`, :class:`ApproxEpsilon`, :class:`CheckinCalibration` and its
:class:`SigmaCalibration`, :class:`GammaCalibration`, :class:`StepsCalibration`; each function names the one
it returns); the default order grids (:data:`CHECKIN_ORDERS`, :data:`CALIBRATION_ORDERS`, :data:`LOWER_ORDERS`)
and tunables (:data:`DEFAULT_TAIL_TOL`, :data:`MAX_N`, :data:`CHERNOFF_GRID`).
"""

from __future__ import annotations

from ._distributed import distributed_gaussian_rdp as distributed_gaussian_rdp
from ._shuffled import shuffled_checkin_upper_rdp as shuffled_checkin_upper_rdp
from ._shuffled import shuffled_checkin_lower_rdp as shuffled_checkin_lower_rdp
from ._shuffled_gaussian import shuffled_gaussian_rdp as shuffled_gaussian_rdp
from ._shuffled_gaussian import shuffled_gaussian_checkin_rdp as shuffled_gaussian_checkin_rdp
from ._subsampled_shuffle import subsampled_shuffle_checkin_rdp as subsampled_shuffle_checkin_rdp
from ._baselines import shuffled_checkin_strong_composition_epsilon as shuffled_checkin_strong_composition_epsilon
from ._baselines import distributed_gaussian_strong_composition_epsilon as distributed_gaussian_strong_composition_epsilon
from ._accounting import OrderCapWarning as OrderCapWarning
from ._accounting import distributed_gaussian_epsilon as distributed_gaussian_epsilon
from ._accounting import distributed_gaussian_delta as distributed_gaussian_delta
from ._accounting import distributed_gaussian_calibrate_sigma as distributed_gaussian_calibrate_sigma
from ._accounting import distributed_gaussian_calibrate_gamma as distributed_gaussian_calibrate_gamma
from ._accounting import distributed_gaussian_calibrate_steps as distributed_gaussian_calibrate_steps
from ._accounting import shuffled_checkin_epsilon as shuffled_checkin_epsilon
from ._accounting import subsampled_shuffle_checkin_epsilon as subsampled_shuffle_checkin_epsilon

# importable and documented, not in __all__ (engine and helpers, result types, default grids, tunables: see the
# docstring)
from ._weighted import (CHERNOFF_GRID, DEFAULT_TAIL_TOL, MAX_N, binomial_weighted_rdp, effective_checkin_rate,
                        window_size)
from ._subsampled_shuffle import ApproxCheckinRDP
from ._accounting import (CALIBRATION_ORDERS, CHECKIN_ORDERS, LOWER_ORDERS, ApproxEpsilon, CheckinCalibration,
                          GammaCalibration, SigmaCalibration, StepsCalibration, order_at_cap)

__all__ = [
    "distributed_gaussian_rdp",
    "shuffled_checkin_upper_rdp",
    "shuffled_checkin_lower_rdp",
    "shuffled_gaussian_rdp",
    "shuffled_gaussian_checkin_rdp",
    "subsampled_shuffle_checkin_rdp",
    "distributed_gaussian_epsilon",
    "distributed_gaussian_delta",
    "shuffled_checkin_epsilon",
    "subsampled_shuffle_checkin_epsilon",
    "shuffled_checkin_strong_composition_epsilon",
    "distributed_gaussian_strong_composition_epsilon",
    "distributed_gaussian_calibrate_sigma",
    "distributed_gaussian_calibrate_gamma",
    "distributed_gaussian_calibrate_steps",
    "OrderCapWarning",
]

from . import _bounds  # noqa: F401, E402  (registers the bounds)
