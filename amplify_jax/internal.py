"""The traceable kernels, for users composing them under ``jax.jit`` / ``vmap`` / ``grad``.

These are pure ``jnp`` functions of arrays that broadcast: no validation (the public functions validate at the
Python boundary), no host work.  Run them in float64: inside :func:`float64_jit` or under :func:`x64_scope`
(both public here, their one public home).  Kernels that search (``analytic_gaussian_epsilon``, a
bisection) are not differentiable by autodiff; differentiate through :func:`invert_monotone_implicit` instead
(implicit function theorem), e.g. the derivative of the Gaussian mechanism's exact eps (Balle & Wang 2018) in
its noise::

    import jax
    import jax.numpy as jnp
    from amplify_jax import internal as K

    def eps(sigma):  # the least eps with ln delta(eps) <= ln 1e-5, ratio = 1 / sigma
        fn = lambda e, r: K.analytic_gaussian_log_delta(r, e)
        return K.invert_monotone_implicit(fn, jnp.log(1e-5), (1.0 / sigma,), 1e-9, 1e3, above=True,
                                          rtol=1e-12).value

    with K.x64_scope():
        deps_dsigma = jax.grad(eps)(2.0)

This module is the public home of these names (issue 29, R4): they are defined in the accounting modules and
the private core (see there for the paper and theorem) and listed in no other module's ``__all__``.
"""

from ._core.numerics import float64_jit as float64_jit
from ._core.numerics import x64_scope as x64_scope
from .accounting.approx_dp import advanced_composition as advanced_composition
from .accounting.approx_dp import analytic_gaussian_epsilon as analytic_gaussian_epsilon
from .accounting.approx_dp import analytic_gaussian_log_delta as analytic_gaussian_log_delta
from .accounting.approx_dp import fmt_closed_form as fmt_closed_form
from .accounting.approx_dp import subsampled_epsilon as subsampled_epsilon
from .accounting.calibrate import invert_monotone_implicit as invert_monotone_implicit
from .accounting.calibrate import invert_monotone_kernel as invert_monotone_kernel
from .accounting.conversions import rdp_epsilon_terms as rdp_epsilon_terms
from .accounting.conversions import refine_order as refine_order
from .accounting.rdp import randomized_response_log_excess as randomized_response_log_excess
from .accounting.rdp import sgm_log_a_minus_one as sgm_log_a_minus_one
from .accounting.rdp import without_replacement_log_excess as without_replacement_log_excess
from .accounting.rdp import without_replacement_rdp_kernel as without_replacement_rdp_kernel

__all__ = [
    "float64_jit",
    "x64_scope",
    "advanced_composition",
    "analytic_gaussian_epsilon",
    "analytic_gaussian_log_delta",
    "fmt_closed_form",
    "subsampled_epsilon",
    "invert_monotone_implicit",
    "invert_monotone_kernel",
    "rdp_epsilon_terms",
    "refine_order",
    "randomized_response_log_excess",
    "sgm_log_a_minus_one",
    "without_replacement_log_excess",
    "without_replacement_rdp_kernel",
]
