"""Tight accounting through privacy-loss distributions (PLDs), in JAX, batched over grids.

Layers (imports point down): ``_mechanisms`` (the losses of the mechanisms, as interval masses) ->
``_discretize`` (connect-the-dots, pessimistic; merged-and-rounded, optimistic) -> ``_compose`` (FFT
composition, tails and round-off counted; delta and eps queries) -> ``_queries`` (batched kernels of one
mechanism composed T times) -> ``_results`` (result tuples, parameter checks, the batch path) -> ``_dpsgd`` (DP-SGD's front doors), ``_api`` (any named mechanism) ->
``_mixture`` (the mixture-of-Gaussians pair and a revealed mixture of two pairs, the same contract as
``_mechanisms``) and ``_events`` (each event's pair, by neighbouring relation) -> ``_accountant`` (compositions of different
events: dp_accounting's ``PrivacyAccountant``, built on first use so that importing the package never imports
dp_accounting).
"""

from ._accountant import Composed as Composed
from ._accountant import Gaussian as Gaussian
from ._accountant import Laplace as Laplace
from ._accountant import PoissonSampled as PoissonSampled
from ._accountant import RandomizedResponse as RandomizedResponse
from ._accountant import SampledWithoutReplacement as SampledWithoutReplacement
from ._accountant import SelfComposed as SelfComposed
from ._api import ACCOUNTANTS as ACCOUNTANTS
from ._api import MECHANISMS as MECHANISMS
from ._api import ROUND_DOWN as ROUND_DOWN
from ._api import selects as selects
from ._api import delta as delta
from ._api import epsilon as epsilon
from ._dpsgd import PldCalibration as PldCalibration
from ._dpsgd import dpsgd_calibrate_sigma as dpsgd_calibrate_sigma
from ._dpsgd import dpsgd_delta as dpsgd_delta
from ._dpsgd import dpsgd_epsilon as dpsgd_epsilon
from ._grid import AUTO_MAX_GRID_SIZE as AUTO_MAX_GRID_SIZE
from ._grid import AUTO_RTOL as AUTO_RTOL
from ._grid import DEFAULT_GRID_SIZE as DEFAULT_GRID_SIZE
from ._results import EPS0_RANGE as EPS0_RANGE
from ._results import LOOSE_RTOL as LOOSE_RTOL
from ._results import SOURCES as SOURCES
from ._results import SOURCE_PLD as SOURCE_PLD
from ._results import SOURCE_RDP as SOURCE_RDP
from ._results import SCALE_RANGE as SCALE_RANGE
from ._results import SIGMA_RANGE as SIGMA_RANGE
from ._results import PldDelta as PldDelta
from ._results import PldEpsilon as PldEpsilon

# What __all__ lists (issue 29: one home per name): the accountant and what only the PLD answers (delta).
# Importable from here, documented, not in __all__: eps and the calibration of a mechanism or of DP-SGD
# (dpsgd_epsilon, dpsgd_calibrate_sigma, epsilon: their front doors are amplify_jax.dpsgd_epsilon,
# dpsgd_calibrate_sigma and epsilon with accountant="pld"), the accountant's short event classes (Gaussian,
# Laplace, RandomizedResponse, PoissonSampled, SampledWithoutReplacement, SelfComposed, Composed: the
# accountant takes amplify_jax.dp_events' events and these alike), the result types (PldEpsilon, PldDelta,
# PldCalibration), the accountant= switch (selects, ACCOUNTANTS), the mechanism table (MECHANISMS, the
# accounting layer's), the grid's tunables and the parameter ranges (DEFAULT_GRID_SIZE, AUTO_*, *_RANGE,
# LOOSE_RTOL, ROUND_DOWN) and the source codes (SOURCES, SOURCE_PLD, SOURCE_RDP)
__all__ = ["Accountant", "delta", "dpsgd_delta"]

from ._accountant import __getattr__  # noqa: E402,F401  pld.Accountant, built on first use (PEP 562)
