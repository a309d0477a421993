"""The DP-SGD quantities of the original sweeps: the public accountants, called on each chunk (every point
takes its own quadrature panel count: every chunk runs one compiled program, and a point's answer is the one a
call on the whole grid gives)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import _validate as V
from ..accountants import DEFAULT_SIGMA_RANGE, dpsgd_calibrate_sigma, dpsgd_epsilon
from ..rdp import MAX_ORDER


# ----------------------------------------------------------------------------------------------------------
# DP-SGD quantities: public host functions over validated float64 arrays of equal shape


@dataclass(frozen=True)
class Quantity:
    params: tuple  #: axis names it needs
    outputs: tuple  #: output column names
    validators: dict  #: axis name -> validating function(name, values)
    options: tuple  #: keys of the [sweep] table passed on to the public call (which validates them)
    n_panels: Callable  #: (axes, options) -> the public call's panel count for the whole grid
    evaluate: Callable  #: (points by axis name, options, n_panels, devices) -> tuple of output arrays

    def passed(self, options: dict) -> dict:
        """The entries of a [sweep] table that the public call takes."""
        return {k: options[k] for k in self.options if k in options}


def _count(name, values):
    """A number of steps: an integer >= 0 (1.5 steps is refused, as by the accountants)."""
    return V.integer(name, values, minimum=0).astype(np.float64)


def _check_orders(opts):
    if opts.get("orders") is not None:
        V.orders("orders", opts["orders"], maximum=MAX_ORDER)


def _epsilon_panels(axes, opts):
    """None: every point takes its own quadrature panel count (one compiled program for every chunk, and a
    point's answer does not depend on its chunk); the grid and the orders are validated first."""
    V.positive("sigma", axes["sigma"])
    V.probability("q", axes["q"])
    _check_orders(opts)
    return None


def _pld(opts) -> bool:
    """``accountant = "pld"`` in the [sweep] table: the PLD accountant (no panel count, one device)."""
    return opts.get("accountant", "rdp") == "pld"


def _epsilon(points, opts, n_panels, devices):
    if _pld(opts):
        res = dpsgd_epsilon(**points, **opts)
        return res.epsilon, np.zeros_like(np.asarray(res.epsilon))  # order 0: the PLD has none
    res = dpsgd_epsilon(**points, **opts, n_panels=n_panels, devices=devices)
    return res.epsilon, res.order


def _calibrate_panels(axes, opts):
    """None, as :func:`_epsilon_panels`; the grid, the orders and the sigma range are validated first."""
    sigma_range = opts.get("sigma_range", DEFAULT_SIGMA_RANGE)
    lo, hi = (float(x) for x in sigma_range)
    if not (0 < lo < hi):
        raise ValueError(f"Expected 0 < sigma_range[0] < sigma_range[1], got sigma_range={sigma_range!r}.")
    V.probability("q", axes["q"])
    _check_orders(opts)
    return None


def _calibrate(points, opts, n_panels, devices):
    # calibrations run on one device: XLA's CPU compiler segfaulted compiling the sharded calibration inside
    # the test process (three fresh-clone CI runs, test_sweep::test_calibrate_sweep)
    extra = {} if _pld(opts) else {"n_panels": n_panels}
    cal = dpsgd_calibrate_sigma(**points, **opts, **extra)
    return cal.sigma, cal.epsilon, cal.status


QUANTITIES = {
    "epsilon": Quantity(
        params=("sigma", "q", "steps", "delta"),
        outputs=("epsilon", "order"),
        validators={"sigma": V.positive, "q": V.probability, "steps": _count, "delta": V.unit_open},
        options=("orders", "method", "accountant"),
        n_panels=_epsilon_panels,
        evaluate=_epsilon,
    ),
    "calibrate": Quantity(
        params=("target_epsilon", "q", "steps", "delta"),
        outputs=("sigma", "epsilon", "status"),
        validators={"target_epsilon": V.positive, "q": V.probability, "steps": _count,
                    "delta": V.unit_open},
        options=("orders", "method", "rtol", "sigma_range", "accountant"),
        n_panels=_calibrate_panels,
        evaluate=_calibrate,
    ),
}
