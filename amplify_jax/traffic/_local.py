"""Sec. III-A/III-B, Thm 2 and App. B of Ladjel, Anciaux, Bellet, Scerri: pure eps of local sampling +
flooding (no scrambler), T convention (a sampled message goes to a target drawn uniformly among all T
targets)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._core.domains import check_params
from .._core.numerics import CLOSED_FORM_MARGIN, float64_jit
from ._common import _f64
from ._params import DUMMIES, SAMPLING, TARGETS


class PureEpsilon(NamedTuple):
    """A pure eps-DP guarantee ``epsilon``; ``valid`` is False where the theorem's hypotheses fail and the
    returned eps is the fallback described by the function (or +inf where no finite eps exists)."""

    epsilon: jax.Array
    valid: jax.Array


# ---------------------------------------------------------------------------------------------------------
# Thm 2: local sampling + flooding
# ---------------------------------------------------------------------------------------------------------


@float64_jit
def _local_epsilon_kernel(T, sigma, d):
    # eps = ln((1 - sigma) T / (sigma (d + 1)) + 1), evaluated as log1p (its argument's four roundings and log1p's
    # own leave it within ~5 ulps), rounded up by CLOSED_FORM_MARGIN; d = T - 1 is a broadcast (eps = 0).
    broadcast = d >= T - 1
    safe_sigma = jnp.where(sigma > 0, sigma, 1.0)
    eps = jnp.log1p((1.0 - sigma) * T / (safe_sigma * (d + 1.0))) * CLOSED_FORM_MARGIN
    eps = jnp.where(sigma > 0, eps, jnp.inf)
    eps = jnp.where(broadcast, 0.0, eps)
    return eps


def local_epsilon(*, targets, sampling, dummies=0) -> PureEpsilon:
    """Pure eps of the local randomizer with sampling and flooding (Ladjel et al., Thm 2, App. B).

    ``eps = ln((1 - sigma) T / (sigma (d + 1)) + 1)``; ``d = T - 1`` is a broadcast (eps = 0).  T convention:
    a sampled message goes to a target drawn uniformly among all T targets, then the d dummies go to d other
    targets drawn without replacement.  The paper states d in {1, ..., T - 2}; the proof (App. B) holds
    unchanged for d = 0 (sampling only, Figure 3(a)).  With sigma = 0 and d < T - 1 no finite eps exists:
    ``eps = +inf`` and ``valid = False``.  Rounded up (safe side) by ``CLOSED_FORM_MARGIN`` (1 + 8 ulps): its
    float64 value was up to ~1 ulp below the formula's exact value.

    Args broadcast: targets T in 2..10**6 (integer), sampling sigma in [0, 1], dummies d in {0, ..., T - 1}
    (the family's Params, ``_params.py``).
    """
    T, sigma, d = check_params((TARGETS, SAMPLING, DUMMIES), broadcast=False,
                               targets=targets, sampling=sampling, dummies=dummies)
    too_many = np.asarray(d) > np.asarray(T) - 1
    if np.any(too_many):
        raise ValueError(
            "Expected dummies <= targets - 1 (the d dummies go to distinct targets), "
            f"got dummies={np.broadcast_to(d, too_many.shape)[too_many][0]:g}, "
            f"targets={np.broadcast_to(T, too_many.shape)[too_many][0]:g}."
        )
    eps = _local_epsilon_kernel(*_f64(T, sigma, d))
    return PureEpsilon(eps, jax.device_put(np.isfinite(np.asarray(eps))))  # no eager program per shape
