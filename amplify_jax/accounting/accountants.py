"""Ready-made accountants: eps of a mechanism composed over steps, and the calibration of its noise.

``dpsgd_epsilon`` / ``dpsgd_calibrate_sigma`` account for DP-SGD with Poisson sampling (the
Poisson-subsampled Gaussian of Mironov, Talwar, Zhang 2019, composed over ``steps`` and converted with
the optimal order, :mod:`amplify_jax.conversions`), or with ``accountant="pld"`` through its privacy-loss
distribution (:mod:`amplify_jax.pld`).  ``epsilon`` / ``calibrate_sigma`` dispatch on a mechanism name for the
command line and the sweeps (see :data:`MECHANISMS`).

This module is the front: the RDP accountant itself is ``_dpsgd_rdp`` (private), which the PLD's DP-SGD
answers also compare with (the PLD imports it, not this module: no cycle).  Everything broadcasts over the
numeric parameters; see ``_dpsgd_rdp`` for the slabs, the panels and ``devices=``.
"""

from __future__ import annotations

import jax  # noqa: F401  (the module's JAX, as tests/test_host.py reads it beside its twin's)
import jax.numpy as jnp

from .._core import host as _host
from .._core import validate as V
from .._core.domains import check_params
from . import _params as P
from .conversions import EpsilonResult
from .._core.numerics import x64_scope
from ._mechanism_table import MECHANISMS, RDP_MECHANISMS  # the one table of named mechanisms (both accountants)
# the RDP accountant (private); the public names it defines are answered here (Calibration, DEFAULT_SIGMA_RANGE,
# SIGMA_LIMIT, dpsgd_n_panels), and the computations on checked values the registry's bounds run (``_bounds.py``)
from ._dpsgd_rdp import (  # noqa: F401
    DEFAULT_SIGMA_RANGE,
    INTEGER_SPLIT,
    SIGMA_LIMIT,
    Calibration,
    _SORTED_DEFAULT_ORDERS,
    _dpsgd_calibrate_sigma,
    _dpsgd_epsilon,
    _pruned_candidates,
    _sorted_orders,
    dpsgd_n_panels,
    rdp_calibrate_sigma,
    rdp_epsilon,
)

__all__ = ["dpsgd_epsilon", "dpsgd_calibrate_sigma", "epsilon", "calibrate_sigma"]


@_host.front_door
def dpsgd_epsilon(*, sigma, q, steps, delta, orders=None, method="balle2020", optimize_order=True, n_panels=None,
                  devices=None, accountant="rdp"):
    """eps of DP-SGD: ``steps`` compositions of the Poisson-subsampled Gaussian (rate q, noise multiplier sigma).

    RDP exact at every order (Mironov, Talwar, Zhang 2019), composed (Mironov 2017, Prop. 1), converted at
    ``delta`` (Balle et al. 2020 by default), minimised over the orders grid and then continuously between
    the best order's neighbours.  Returns (epsilon, order), broadcast over all four parameters; epsilon is
    the exact (rounded-up) eps at the order returned.  With ``optimize_order=False`` it is the grid's
    minimum, exactly; with the continuous search it is that minimum or below (the search ranks orders on a
    shared quadrature mesh that agrees with the exact values to ~1e-11, see ``_dpsgd_eps_shared``).

    ``n_panels``: None (the default), every point on its own need of quadrature panels plus a margin (one
    compiled program for every input); or a static integer >= 3 for every point (a program per count; a point
    needing more gets a valid but looser bound).  ``devices``: lay the batch out over these devices (a 1-D
    ``jax.sharding`` mesh, one program partitioned over them; equal to one device's answer up to rounding,
    ~1 ulp); by default every local accelerator where JAX has several, else JAX's default device.

    ``accountant="pld"``: the tight PLD accountant instead (:func:`amplify_jax.pld.dpsgd_epsilon`: (epsilon,
    epsilon_lower, status)); the RDP options (orders, method, optimize_order, n_panels, devices) do not apply.
    """
    if _pld_selected(accountant, orders=orders, method=method, optimize_order=optimize_order, n_panels=n_panels,
                  devices=devices):
        from . import pld

        return pld.dpsgd_epsilon(sigma=sigma, q=q, steps=steps, delta=delta)
    return rdp_epsilon(sigma=sigma, q=q, steps=steps, delta=delta, orders=orders, method=method,
                       optimize_order=optimize_order, n_panels=n_panels, devices=devices)


@_host.front_door
def dpsgd_calibrate_sigma(
    *, target_epsilon, q, steps, delta, orders=None, method="balle2020", rtol=1e-6, sigma_range=None,
    n_panels=None, devices=None, accountant="rdp",
) -> Calibration:
    """Minimal noise multiplier sigma with ``dpsgd_epsilon(sigma, q, steps, delta) <= target_epsilon``.

    Batched over all numeric arguments.  Returns (sigma, epsilon, status): sigma is on the feasible side,
    re-checked with :func:`dpsgd_epsilon`'s accountant (epsilon is its value at sigma, <= target), and within
    ``rtol`` of the boundary (the search runs on a local accountant around the answer's best order, which
    agrees with the full accountant there).  Targets no sigma in ``sigma_range`` meets get status
    INFEASIBLE (sigma = the range's upper end), never NaN; with the default range, such targets are searched
    again in ranges growing 32-fold up to ``SIGMA_LIMIT`` first (a range given by the caller is kept).

    ``n_panels``, ``devices``: as :func:`dpsgd_epsilon` (by default each point's own panel count: one compiled
    program for every input); ``sigma_range``: by default
    ``DEFAULT_SIGMA_RANGE``.  ``accountant="pld"``: on the PLD (:func:`amplify_jax.pld.dpsgd_calibrate_sigma`).
    """
    if _pld_selected(accountant, orders=orders, method=method, n_panels=n_panels, devices=devices):
        from . import pld

        extra = {} if sigma_range is None else {"sigma_range": sigma_range}
        return pld.dpsgd_calibrate_sigma(target_epsilon=target_epsilon, q=q, steps=steps, delta=delta, rtol=rtol,
                                         **extra)
    return rdp_calibrate_sigma(target_epsilon=target_epsilon, q=q, steps=steps, delta=delta, orders=orders,
                               method=method, rtol=rtol, sigma_range=sigma_range, n_panels=n_panels, devices=devices)


# ----------------------------------------------------------------------------------------------------------
# Dispatch by mechanism name (command line, sweeps)

@_host.front_door
def epsilon(mechanism: str, *, delta, orders=None, method="balle2020", accountant="rdp", **params) -> EpsilonResult:
    """eps at delta of a named mechanism (``RDP_MECHANISMS``, rows of ``MECHANISMS``) composed over ``steps``, optimal
    order; ``accountant="pld"``: from its privacy-loss distribution (:func:`amplify_jax.pld.epsilon`)."""
    if _pld_selected(accountant, orders=orders, method=method):
        from . import pld

        return pld.epsilon(mechanism, delta=delta, **params)
    V.one_of("mechanism", mechanism, RDP_MECHANISMS)
    needed = MECHANISMS[mechanism].params
    unknown = set(params) - set(needed)
    if unknown:
        raise ValueError(f"Expected parameters {needed} for mechanism={mechanism!r}, got {sorted(unknown)}.")
    missing = [p for p in needed if p not in params and p != "steps" and p != "k"]
    if missing:
        raise ValueError(f"Expected parameter {missing[0]} for mechanism={mechanism!r}.")
    steps = params.get("steps", 1.0)
    if mechanism == "poisson-gaussian":
        return dpsgd_epsilon(sigma=params["sigma"], q=params["q"], steps=steps, delta=delta, orders=orders,
                             method=method)
    from .conversions import epsilon_from_rdp, optimal_epsilon
    from . import rdp as R

    a = _sorted_orders(orders)
    # steps and sigma through their declared domains (a count: 1.5 steps is refused); the mechanism's own
    # parameters, orders and delta are checked by the functions below
    t, = check_params((P.ANY_STEPS,), broadcast=False, steps=steps)
    if mechanism == "gaussian":
        sigma, = check_params((P.NOISE_SIGMA,), broadcast=False, sigma=params["sigma"])
        return optimal_epsilon(_gaussian_steps, delta=delta, args=(sigma, t), orders=a, method=method)
    if mechanism == "laplace":
        curve = R.laplace_rdp(a, scale=params["scale"])
    else:
        curve = R.randomized_response_rdp(a, eps0=params["eps0"], k=params.get("k", 2))
    with x64_scope():
        total = jnp.asarray(t)[..., None] * curve
    return epsilon_from_rdp(a, total, delta=delta, method=method)


def _gaussian_steps(alpha, sigma, steps):
    return steps * alpha / (2.0 * sigma * sigma)


@_host.front_door
def calibrate_sigma(mechanism: str, *, target_epsilon, delta, orders=None, method="balle2020", rtol=1e-6,
                    accountant="rdp", **params) -> Calibration:
    """Minimal sigma for a named Gaussian-noise mechanism (``poisson-gaussian`` or ``gaussian``: those whose
    ``MECHANISMS`` row has ``sigma_via``, DP-SGD's calibration at fixed parameters), RDP or PLD."""
    V.one_of("mechanism", mechanism, tuple(m for m, row in MECHANISMS.items() if row.sigma_via))
    fixed = dict(MECHANISMS[mechanism].sigma_via[1])  # the Gaussian: q = 1
    if "q" not in fixed and "q" not in params:
        raise ValueError(f"Expected parameter q for mechanism={mechanism!r}.")
    q = fixed.get("q", params.get("q"))
    return dpsgd_calibrate_sigma(target_epsilon=target_epsilon, q=q, steps=params.get("steps", 1.0),
                                 delta=delta, orders=orders, method=method, rtol=rtol, accountant=accountant)


def _pld_selected(accountant, **rdp_options) -> bool:
    if isinstance(accountant, str) and accountant == "rdp":  # as pld.selects answers, without importing the PLD
        return False
    from .pld import selects  # noqa: E402  (the PLD package: same layer, imported when chosen)
    return selects(accountant, **rdp_options)
