"""Rényi-DP curves of the base mechanisms, of subsampling, and their composition.

Every public function takes the Rényi orders first and the mechanism's parameters as keyword arguments; it
broadcasts over the parameters like NumPy and returns a float64 array of shape
``broadcast(parameters) + (len(orders),)`` (the orders axis last).  Curves are upper bounds on the Rényi
divergence ``D_alpha`` between the outputs on neighbouring inputs, exact where the docstring says so.

This module is the public face (``amplify_jax.rdp``): the curves are computed in ``_rdp_curves`` (each
function's docstring names its paper and theorem), and :class:`Accountant` is built on first use by
``_rdp_accountant``.  The accounting layer's own modules import ``_rdp_curves``, never this module, so that
nothing imports back into it.

References
----------
- Mironov 2017, "Rényi Differential Privacy" (Gaussian, Laplace, randomized response: Table II).
- Mironov, Talwar, Zhang 2019, "Rényi Differential Privacy of the Sampled Gaussian Mechanism" (Poisson
  subsampling, integer orders Sec. 3.3 Eq. for A_alpha, fractional orders Sec. 3.3).
- Wang, Balle, Kasiviswanathan 2019, "Subsampled Rényi Differential Privacy and Analytical Moments
  Accountant", Thm 9 (sampling without replacement, general upper bound).
- Kairouz, Oh, Viswanath 2015 (binary randomized response dominates every pure eps0-DP mechanism).
"""

from __future__ import annotations

from ._rdp_curves import DEFAULT_ORDERS as DEFAULT_ORDERS
from ._rdp_curves import compose as compose
from ._rdp_curves import gaussian_rdp as gaussian_rdp
from ._rdp_curves import interpolate_integer_rdp as interpolate_integer_rdp
from ._rdp_curves import laplace_rdp as laplace_rdp
from ._rdp_curves import poisson_subsampled_gaussian_rdp as poisson_subsampled_gaussian_rdp
from ._rdp_curves import pure_dp_rdp as pure_dp_rdp
from ._rdp_curves import randomized_response_rdp as randomized_response_rdp
from ._rdp_curves import subsampled_gaussian_wor_rdp as subsampled_gaussian_wor_rdp
from ._rdp_curves import without_replacement_rdp as without_replacement_rdp

# Importable, not in __all__: the traceable kernels (public from amplify_jax.internal), SGMCurve (their static
# plan of orders), raise_tiny_rate, the ranges and caps (MAX_ORDER, WOR_MAX_ORDER, *_RANGE, Q_FLOOR)
from ._rdp_curves import LAPLACE_RANGE as LAPLACE_RANGE
from ._rdp_curves import MAX_ORDER as MAX_ORDER
from ._rdp_curves import Q_FLOOR as Q_FLOOR
from ._rdp_curves import SIGMA_RANGE as SIGMA_RANGE
from ._rdp_curves import WOR_MAX_ORDER as WOR_MAX_ORDER
from ._rdp_curves import SGMCurve as SGMCurve
from ._rdp_curves import raise_tiny_rate as raise_tiny_rate
from ._rdp_curves import randomized_response_log_excess as randomized_response_log_excess
from ._rdp_curves import sgm_log_a_minus_one as sgm_log_a_minus_one
from ._rdp_curves import without_replacement_log_excess as without_replacement_log_excess
from ._rdp_curves import without_replacement_rdp_kernel as without_replacement_rdp_kernel

__all__ = ["DEFAULT_ORDERS", "gaussian_rdp", "laplace_rdp", "pure_dp_rdp", "randomized_response_rdp",
           "poisson_subsampled_gaussian_rdp", "without_replacement_rdp", "subsampled_gaussian_wor_rdp",
           "interpolate_integer_rdp", "compose"]


def __getattr__(name):
    """``rdp.Accountant``, built on first use (PEP 562) by :mod:`amplify_jax.accounting._rdp_accountant`."""
    if name != "Accountant":  # e.g. ``__path__``, which every ``from amplify_jax.rdp import x`` asks for
        raise AttributeError(f"module 'amplify_jax.rdp' has no attribute {name!r}")
    # lazy: ``import amplify_jax`` skips that module, _rdp_conversions and dp_events (~30 ms of start-up)
    from ._rdp_accountant import __getattr__ as accountant_attribute

    return accountant_attribute(name)
