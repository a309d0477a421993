"""eps and delta of a named mechanism composed ``steps`` times, through its PLD (the command line's names)."""

from __future__ import annotations

import numpy as np

from .. import _validate as V
from ..numerics import x64_scope
from ._dpsgd import SIGMA_RANGE, PldDelta, PldEpsilon, _status
from ._grid import check_grid_size, flat_padded, unpad
from ._queries import delta_batch, eps_batch

__all__ = ["MECHANISMS", "ACCOUNTANTS", "epsilon", "delta", "selects", "check_parameter"]

ACCOUNTANTS = ("rdp", "pld")

#: mechanism -> (its parameters, the kernel kind, the name of its noise parameter)
MECHANISMS = {
    "poisson-gaussian": (("sigma", "q", "steps"), "gaussian", "sigma"),
    "gaussian": (("sigma", "steps"), "gaussian", "sigma"),
    "poisson-laplace": (("scale", "q", "steps"), "laplace", "scale"),
    "laplace": (("scale", "steps"), "laplace", "scale"),
    "randomized-response": (("eps0", "k", "steps"), "randomized-response", "eps0"),
}
#: Laplace scales and eps0 the PLD route accepts (its loss range, 1 / b or eps0, must stay in float64's exp)
SCALE_RANGE = (1e-2, 1e6)
EPS0_RANGE = (0.0, 300.0)


def _inputs(mechanism, params):
    V.one_of("mechanism", mechanism, tuple(MECHANISMS))
    names, kind, noise = MECHANISMS[mechanism]
    unknown = set(params) - set(names)
    if unknown:
        raise ValueError(f"Expected parameters {names} for mechanism={mechanism!r}, got {sorted(unknown)}.")
    if noise not in params:
        raise ValueError(f"Expected parameter {noise} for mechanism={mechanism!r}.")
    if "q" in names and "q" not in params:
        raise ValueError(f"Expected parameter q for mechanism={mechanism!r}.")
    a = check_parameter(kind, params[noise], noise)
    k = params.get("k", 2)
    if np.any(np.asarray(k) != 2):
        raise ValueError(f"The PLD accountant has binary randomized response only: expected k=2, got k={k!r}")
    q = V.probability("q", params.get("q", 1.0))
    t = V.integer("steps", params.get("steps", 1), minimum=0)
    return kind, noise, a, q, t


_RANGES = {"gaussian": SIGMA_RANGE, "laplace": SCALE_RANGE, "randomized-response": EPS0_RANGE}
_NAMES = {"gaussian": "sigma", "laplace": "scale", "randomized-response": "eps0"}


def check_parameter(kind, value, name=None):
    """The mechanism's noise parameter as a float64 array, or a ValueError naming it: sigma in SIGMA_RANGE,
    the Laplace scale in SCALE_RANGE, eps0 in EPS0_RANGE (open at 0)."""
    name = _NAMES[kind] if name is None else name
    a = V.finite(name, value)
    lo, hi = _RANGES[kind]
    bad = (a < lo) | (a > hi) if kind != "randomized-response" else (a <= lo) | (a > hi)
    if np.any(bad):
        left = "(" if kind == "randomized-response" else "["
        raise ValueError(f"{name} must be in {left}{lo}, {hi}] for the PLD accountant, got {name}={a[bad].ravel()[0]!r}")
    return a


def epsilon(mechanism: str, *, delta, grid_size=None, **params) -> PldEpsilon:
    """eps at ``delta`` of ``mechanism`` (see :data:`MECHANISMS`) composed ``steps`` times, from its PLD:
    (epsilon, epsilon_lower, status), broadcast over every numeric parameter; see
    :func:`amplify_jax.pld.dpsgd_epsilon` for the method and the meaning of each field."""
    kind, noise, a, q, t = _inputs(mechanism, params)
    d = V.unit_open("delta", delta)
    shape = V.broadcastable(**{noise: a}, q=q, steps=t, delta=d)
    n = check_grid_size(grid_size, shape)
    with x64_scope():
        (ba, bq, bt, bd), m = flat_padded(shape, a, q, t, d)
        up, lo = eps_batch(ba, bq, bt, bd, kind, n)
        up, lo = unpad(up, m, shape), unpad(lo, m, shape)
        return PldEpsilon(up, lo, _status(up))


def delta(mechanism: str, *, epsilon, grid_size=None, **params) -> PldDelta:
    """delta at ``epsilon`` of ``mechanism`` composed ``steps`` times, from its PLD:
    (delta, delta_lower, status) (see :func:`amplify_jax.pld.dpsgd_delta`)."""
    kind, noise, a, q, t = _inputs(mechanism, params)
    e = V.nonnegative("epsilon", epsilon)
    shape = V.broadcastable(**{noise: a}, q=q, steps=t, epsilon=e)
    n = check_grid_size(grid_size, shape)
    with x64_scope():
        (ba, bq, bt, be), m = flat_padded(shape, a, q, t, e)
        up, lo = delta_batch(ba, bq, bt, be, kind, n)
        up, lo = unpad(up, m, shape), unpad(lo, m, shape)
        return PldDelta(up, lo, _status(up))


def selects(accountant, **rdp_options) -> bool:
    """True for ``accountant="pld"``, False for ``"rdp"`` (the ``accountant=`` switch of
    :mod:`amplify_jax.accountants`); refuses options of the RDP accountant given with "pld" (``None`` and
    their defaults are not options given) and any other accountant, naming it."""
    V.one_of("accountant", accountant, ACCOUNTANTS)
    if accountant == "rdp":
        return False
    defaults = {"method": "balle2020", "optimize_order": True}
    given = [k for k, v in rdp_options.items() if v is not None and v != defaults.get(k)]
    if given:
        raise ValueError(f"Expected no {given[0]} with accountant='pld' (an option of the RDP accountant).")
    return True
