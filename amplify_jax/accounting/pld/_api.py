"""eps and delta of a named mechanism composed ``steps`` times, through its PLD (the command line's names)."""

from __future__ import annotations

import numpy as np

from ..._core import validate as V
from .._mechanism_table import MECHANISMS  # the one table of named mechanisms (both accountants)
from ._results import PldDelta, PldEpsilon, answer, check_parameter

__all__ = ["ACCOUNTANTS", "ROUND_DOWN", "epsilon", "delta", "selects", "check_parameter"]

ACCOUNTANTS = ("rdp", "pld")


def _inputs(mechanism, params):
    V.one_of("mechanism", mechanism, tuple(MECHANISMS))
    m = MECHANISMS[mechanism]
    names, noise, kind = m.params, m.noise, m.pld_kind
    unknown = set(params) - set(names)
    if unknown:
        raise ValueError(f"Expected parameters {names} for mechanism={mechanism!r}, got {sorted(unknown)}.")
    if noise not in params:
        raise ValueError(f"Expected parameter {noise} for mechanism={mechanism!r}.")
    if "q" in names and "q" not in params:
        raise ValueError(f"Expected parameter q for mechanism={mechanism!r}.")
    if "sensitivity" in params:  # the noise multiplier the pair is built on: sigma / sensitivity
        d = V.positive("sensitivity", params["sensitivity"])
        s = V.finite(noise, params[noise])
        V.broadcastable(**{noise: s}, sensitivity=d)
        a = check_parameter(kind, s / d, f"{noise} / sensitivity")
    else:
        a = check_parameter(kind, params[noise], noise)
    k = params.get("k", 2)
    if np.any(np.asarray(k) != 2):
        raise ValueError(f"The PLD accountant has binary randomized response only: expected k=2, got k={k!r}")
    q = V.probability("q", params.get("q", 1.0))
    t = V.integer("steps", params.get("steps", 1), minimum=0)
    return kind, noise, a, q, t


def epsilon(mechanism: str, *, delta, grid_size=None, **params) -> PldEpsilon:
    """eps at ``delta`` of ``mechanism`` (``MECHANISMS``, the accounting layer's table) composed ``steps`` times,
    from its PLD:
    (epsilon, epsilon_lower, status), broadcast over every numeric parameter; see
    :func:`amplify_jax.pld.dpsgd_epsilon` for the method and the meaning of each field."""
    kind, noise, a, q, t = _inputs(mechanism, params)
    d = V.unit_open("delta", delta)
    shape = V.broadcastable(**{noise: a}, q=q, steps=t, delta=d)
    return answer("epsilon", kind, shape, grid_size, a, q, t, d)


def delta(mechanism: str, *, epsilon, grid_size=None, **params) -> PldDelta:
    """delta at ``epsilon`` of ``mechanism`` composed ``steps`` times, from its PLD:
    (delta, delta_lower, status) (see :func:`amplify_jax.pld.dpsgd_delta`)."""
    kind, noise, a, q, t = _inputs(mechanism, params)
    e = V.nonnegative("epsilon", epsilon)
    shape = V.broadcastable(**{noise: a}, q=q, steps=t, epsilon=e)
    return answer("delta", kind, shape, grid_size, a, q, t, e)


#: 1 - 2^-50 (~8.9e-16, four half-ulps): the factor by which the paper modules' PLD routes round a noise
#: multiplier (or a delta share) down past the roundings of its evaluation: less noise, a larger eps.
ROUND_DOWN = 1.0 - 2.0 ** -50


def selects(accountant, grid_size=None, **rdp_options) -> bool:
    """True for ``accountant="pld"``, False for ``"rdp"`` (the ``accountant=`` switch of
    :mod:`amplify_jax.accountants` and the paper modules); refuses options of the RDP accountant given with
    "pld" (``None`` and their defaults are not options given), a ``grid_size`` (the PLD's option) given with
    "rdp", and any other accountant, naming it."""
    V.one_of("accountant", accountant, ACCOUNTANTS)
    if accountant == "rdp":
        if grid_size is not None:
            raise ValueError(f"Expected no grid_size with accountant='rdp' (an option of the PLD accountant), got "
                             f"grid_size={grid_size!r}.")
        return False
    defaults = {"method": "balle2020", "optimize_order": True}
    given = [k for k, v in rdp_options.items() if v is not None and v != defaults.get(k)]
    if given:
        raise ValueError(f"Expected no {given[0]} with accountant='pld' (an option of the RDP accountant).")
    return True
