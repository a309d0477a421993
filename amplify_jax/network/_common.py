"""What the sections of the network-DP package share: the result types and the joint check of colluders < n."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import jax
import jax.numpy as jnp

from .._core import validate as V
from .._core.domains import check_params
from .._core.numerics import CLOSED_FORM_MARGIN
from . import _params as P


class NetworkBound(NamedTuple):
    """(eps, delta) of a network-DP bound of Cyffers & Bellet (ring, complete graph, local baselines), with where
    the paper's own form applies."""

    epsilon: jax.Array  #: the network-DP (or local-DP) epsilon
    delta: jax.Array  #: the matching delta
    valid: jax.Array  #: True where the paper's own form applies; False where a documented general form was used


class SpottedBound(NamedTuple):
    """eps of a user some of whose contributions an observer may spot (Cyffers & Bellet App. G, Lemma 2), with
    the high-probability bound on how many are spotted."""

    epsilon: jax.Array  #: the network-DP epsilon
    spotted: jax.Array  #: the high-probability bound on the number of spotted contributions
    valid: jax.Array  #: True where the paper's own form applies


class RingNoise(NamedTuple):
    """The noise of the ring protocols (Thm 1 utility, Remark 1): each user's std and the final sum's."""

    per_user_sigma: jax.Array  #: std of the noise added by every user but the first
    first_sigma: jax.Array  #: std of the first user's noise (sigma_loc)
    total_std: jax.Array  #: std of the noise in the final sum


class SgdEpsilon(NamedTuple):
    """eps of network, local or central DP-SGD (Thm 4 / Lemma 1 RDP, converted at the optimal order)."""

    epsilon: jax.Array  #: the (eps, delta) bound's eps
    order: jax.Array  #: the Renyi order used in the conversion


class SgdCalibration(NamedTuple):
    """A calibrated noise multiplier (:func:`sgd_calibrate_sigma`); the order of
    :class:`amplify_jax.calibrate.Inversion` (value, status, achieved), with the fields named."""

    sigma: jax.Array  #: the minimal sigma found (the feasible endpoint, see status)
    status: jax.Array  #: amplify_jax.status.Status codes per element
    epsilon: jax.Array  #: eps at that sigma, re-computed (<= target_epsilon where status is ok or at_limit)


def _up(x):
    """x rounded up (x >= 0) by the core's ``CLOSED_FORM_MARGIN`` (1 + 8 ulps): a closed form's value, or a
    quantity a bound grows with (the Chernoff count, ln(1/delta), a per-visit or per-cycle eps, a reported delta),
    which round-to-nearest leaves up to a few ulps below its exact value (tests/test_network_rounding.py)."""
    return x * CLOSED_FORM_MARGIN


def _slack(total, used):
    """total - used rounded down (NumPy, float64): what a budget ``total`` leaves after ``used`` (an upper value
    of what the other terms spend: the caller rounds it up).  The difference of two floats is exact where they
    are within a factor 2 (Sterbenz) and within half an ulp of itself elsewhere, so the factor 1 - 2 ulps puts
    it below the exact slack: a delta' never larger than what the total leaves."""
    with np.errstate(invalid="ignore"):
        d = np.asarray(total, np.float64) - np.asarray(used, np.float64)
        return np.where(d > 0, d * (1.0 - 2.0 ** -51), d)


def _times_up(a, b):
    """a * b (NumPy, a, b >= 0) rounded up: the product's rounding (half an ulp) covered by two ulps."""
    return np.asarray(a, np.float64) * np.asarray(b, np.float64) * (1.0 + 2.0 ** -51)


def _f64(x):
    return jnp.asarray(x, dtype=jnp.float64)


def _b(shape, *arrays):
    """float64 NumPy arrays broadcast to ``shape``, for a kernel's arguments (issue 25: an eager
    ``jnp.broadcast_to`` or ``jnp.asarray`` is a small compiled program per shape; NumPy's are none)."""
    return tuple(np.broadcast_to(np.asarray(a, dtype=np.float64), shape) for a in arrays)


def _colluders(n, c):
    """colluders through its Param (``_params.COLLUDERS_ANY``) and jointly with the validated n: colluders < n,
    naming both at the first offending point."""
    (cc,) = check_params((P.COLLUDERS_ANY,), colluders=c)
    V.broadcastable(n=n, colluders=cc)
    nb, cb = np.broadcast_arrays(n, cc)
    bad = cb >= nb
    if np.any(bad):
        i = tuple(int(j) for j in np.argwhere(bad)[0]) if bad.ndim else ()
        raise ValueError(f"Expected colluders < n, got colluders={cb[i].item()!r} with n={nb[i].item()!r}.")
    return cc
