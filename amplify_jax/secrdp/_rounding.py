"""Float64 rounding constants of the SecRDP accountant's soundness margins (Higham, Accuracy and Stability of
Numerical Algorithms, 2nd ed., Secs. 3.1 and 3.5): every exact value gets an absolute margin, bounds are
rounded up, and :func:`_gamma` bounds the error of a k-term floating-point computation."""

from __future__ import annotations

import jax
import numpy as np

_U = 2.0**-53  # unit roundoff of float64
_ROUND_ABS = 8.0  # absolute margin _ROUND_ABS * n * u / sigma_unc^2 on every exact diagonal entry
_LDP_UP = 1.0 + 8.0 * _U  # rounds a few correctly rounded float operations up (1/sigma^2, 2 C^2 d)


def _gamma(k):
    """gamma_k = k u / (1 - k u), the bound on the relative error of k floating-point operations (Higham,
    Accuracy and Stability of Numerical Algorithms, 2nd ed., Sec. 3.1)."""
    return k * _U / (1.0 - k * _U)


def _dev(x):
    """A NumPy value as a device array, by ``jax.device_put`` (``jnp.asarray`` compiles a small program per shape
    and dtype: issue 25).  Call inside ``x64_scope`` for float64."""
    return jax.device_put(np.asarray(x))
