"""The DP-SGD quantities of the original sweeps (kernels of amplify_jax.accountants, sized once per grid)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import jax.numpy as jnp

from .. import _validate as V


# ----------------------------------------------------------------------------------------------------------
# DP-SGD quantities: public host functions over validated float64 arrays of equal shape


@dataclass(frozen=True)
class Quantity:
    params: tuple  #: axis names it needs
    outputs: tuple  #: output column names
    validators: dict  #: axis name -> validating function(name, values)
    make_kernel: Callable  #: (spec options) -> pure jnp function(**arrays) -> tuple of arrays


def _eps_kernel_factory(opts):
    from ..accountants import _SGMAtOrder, _dpsgd_eps_kernel, _n_panels
    from ..rdp import SGMCurve
    from ..rdp import DEFAULT_ORDERS

    orders = np.sort(np.asarray(opts.get("orders", DEFAULT_ORDERS), dtype=np.float64))
    method = opts.get("method", "balle2020")
    n_panels = _n_panels(np.asarray(opts["_sigma_values"]), orders, opts.get("_q_values"))
    curve, at_order = SGMCurve(orders, n_panels), _SGMAtOrder(n_panels)

    def kernel(sigma, q, steps, delta):
        return _dpsgd_eps_kernel(curve, at_order, sigma, q, steps, jnp.log(delta), method, True)

    return kernel


def _calibrate_kernel_factory(opts):
    from ..accountants import _calibrate_kernel, _calibration_plan
    from ..rdp import DEFAULT_ORDERS

    orders = np.sort(np.asarray(opts.get("orders", DEFAULT_ORDERS), dtype=np.float64))
    method = opts.get("method", "balle2020")
    lo, hi = opts.get("sigma_range", (0.05, 2e3))
    plan = _calibration_plan(orders, method, (lo, hi), opts.get("_q_values"))
    rtol = float(opts.get("rtol", 1e-6))

    def kernel(target_epsilon, q, steps, delta):
        value, eps, status = _calibrate_kernel(target_epsilon, q, steps, jnp.log(delta), jnp.full_like(q, lo),
                                               jnp.full_like(q, hi), plan, rtol)
        return value, eps, status.astype(jnp.float64)

    return kernel


QUANTITIES = {
    "epsilon": Quantity(
        params=("sigma", "q", "steps", "delta"),
        outputs=("epsilon", "order"),
        validators={"sigma": V.positive, "q": V.probability, "steps": V.nonnegative, "delta": V.unit_open},
        make_kernel=_eps_kernel_factory,
    ),
    "calibrate": Quantity(
        params=("target_epsilon", "q", "steps", "delta"),
        outputs=("sigma", "epsilon", "status"),
        validators={"target_epsilon": V.positive, "q": V.probability, "steps": V.nonnegative,
                    "delta": V.unit_open},
        make_kernel=_calibrate_kernel_factory,
    ),
}
