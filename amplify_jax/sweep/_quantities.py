"""The DP-SGD quantities of the original sweeps: the public accountants, called on each chunk (every point
takes its own quadrature panel count: every chunk runs one compiled program, and a point's answer is the one a
call on the whole grid gives)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .._core import validate as V
from ..accounting.accountants import dpsgd_calibrate_sigma, dpsgd_epsilon


# ----------------------------------------------------------------------------------------------------------
# DP-SGD quantities: public host functions over validated float64 arrays of equal shape


@dataclass(frozen=True)
class Quantity:
    params: tuple  #: axis names it needs
    outputs: tuple  #: output column names
    validators: dict  #: axis name -> validating function(name, values)
    options: tuple  #: keys of the [sweep] table passed on to the public call (which validates them)
    evaluate: Callable  #: (points by axis name, options, devices) -> tuple of output arrays

    def passed(self, options: dict) -> dict:
        """The entries of a [sweep] table that the public call takes."""
        return {k: options[k] for k in self.options if k in options}


def _count(name, values):
    """A number of steps: an integer >= 0 (1.5 steps is refused, as by the accountants)."""
    return V.integer(name, values, minimum=0).astype(np.float64)


def _pld(opts) -> bool:
    """``accountant = "pld"`` in the [sweep] table: the PLD accountant (one device)."""
    return opts.get("accountant", "rdp") == "pld"


def _epsilon(points, opts, devices):
    if _pld(opts):
        res = dpsgd_epsilon(**points, **opts)
        return res.epsilon, np.zeros_like(np.asarray(res.epsilon))  # order 0: the PLD has none
    res = dpsgd_epsilon(**points, **opts, devices=devices)
    return res.epsilon, res.order


def _calibrate(points, opts, devices):
    # calibrations run on one device: XLA's CPU compiler segfaulted compiling the sharded calibration inside
    # the test process (three fresh-clone CI runs, test_sweep::test_calibrate_sweep)
    cal = dpsgd_calibrate_sigma(**points, **opts)
    return cal.sigma, cal.epsilon, cal.status


QUANTITIES = {
    "epsilon": Quantity(
        params=("sigma", "q", "steps", "delta"),
        outputs=("epsilon", "order"),
        validators={"sigma": V.positive, "q": V.probability, "steps": _count, "delta": V.unit_open},
        options=("orders", "method", "accountant"),
        evaluate=_epsilon,
    ),
    "calibrate": Quantity(
        params=("target_epsilon", "q", "steps", "delta"),
        outputs=("sigma", "epsilon", "status"),
        validators={"target_epsilon": V.positive, "q": V.probability, "steps": _count,
                    "delta": V.unit_open},
        options=("orders", "method", "rtol", "sigma_range", "accountant"),
        evaluate=_calibrate,
    ),
}
