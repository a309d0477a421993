"""Helpers shared by the sections of the traffic subpackage (Ladjel, Anciaux, Bellet, Scerri): float64 copies
for the kernels, the validation of a cluster's common parameters (epsilon, T, n, sigma, d), and the
warning of a renamed result field."""

from __future__ import annotations

import warnings

import numpy as np

from .. import _validate as V


def _renamed_field(cls, old, new):
    """Warn that field ``old`` of result type ``cls`` is renamed ``new`` (one release)."""
    warnings.warn(f"{cls}.{old} is renamed .{new}; the old name goes in the next release.", DeprecationWarning,
                  stacklevel=3)


def _f64(*xs):
    """NumPy float64 copies (converted to jax arrays inside the float64 scope of the kernels)."""
    return tuple(np.asarray(x, dtype=np.float64) for x in xs)


def _check_common(eps, targets, n, sampling, dummies):
    eps = V.nonnegative("epsilon", eps)
    T = V.integer("targets", targets, minimum=2)
    n_ = V.integer("n", n, minimum=1)
    sigma = V.probability("sampling", sampling)
    d = V.integer("dummies", dummies, minimum=0)
    V.broadcastable(epsilon=eps, targets=T, n=n_, sampling=sigma, dummies=d)
    return eps, T, n_, sigma, d
