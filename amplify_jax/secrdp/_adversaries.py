"""The threat model of Decor (Sec. 2): the adversaries I-IV, the validation of the noise levels and of the
adversary, and the connectivity check behind :class:`DisconnectedGraphWarning` (a graph that an admissible
removal disconnects leaves some users protected by sigma_unc alone: local DP for them).

The authors' code accounts only the external eavesdropper (adversary I, H = all users); here all four are:
I "eavesdropper", II "curious" (every single user removed in turn), III "colluding" (every set of up to c users
removed), IV "local" (local DP) (docs/errata.md#e-secrdp-adversaries)."""

from __future__ import annotations

import warnings

import numpy as np

from .._core import validate as V
from .._core.domains import check_params
from . import _params as P
from ._graph import SecGraph

ADVERSARIES = P.ADVERSARIES


class DisconnectedGraphWarning(UserWarning):
    """The graph (or the graph left after an admissible removal) is disconnected: some users are protected
    by sigma_unc alone, i.e. their guarantee falls back to local DP."""


#: sigma_unc the accountant takes.  eps1 = 2 C^2 max_i [Sigma_H^{-1}]_ii lies between ~2 C^2 / (n (sigma_unc^2 +
#: sigma_cor^2 d_max)) and 2 C^2 / sigma_unc^2: with sigma_unc and C in [1e-50, 1e50] and sigma_cor <= 1e50 it stays
#: finite and positive in float64 (sigma_unc = 1e-300 gave eps1 = +inf, sigma_unc = 1e300 eps1 = 0, which the
#: example level refused unnamed).  The registry's domains (1e-3 .. 1e3) lie inside.
SIGMA_UNC_RANGE = (P.ACCOUNTANT_SIGMA_UNC.domain.lo, P.ACCOUNTANT_SIGMA_UNC.domain.hi)
#: Largest sigma_cor the accountant takes (sigma_cor >= 0): sigma_cor^2 L_H stays finite (1e300 gave NaN).
SIGMA_COR_MAX = P.ACCOUNTANT_SIGMA_COR.domain.hi
#: clip (the gradient's clipping threshold C) the accountant takes: 2 C^2 / sigma_unc^2 stays finite and positive
#: (clip = 1e300 gave eps1 = +inf, 1e-300 eps1 = 0).
CLIP_RANGE = (P.ACCOUNTANT_CLIP.domain.lo, P.ACCOUNTANT_CLIP.domain.hi)


def _sigma_unc(x):
    return P.ACCOUNTANT_SIGMA_UNC.domain.check("sigma_unc", x)


def _sigma_cor(x):
    return P.ACCOUNTANT_SIGMA_COR.domain.check("sigma_cor", x)


def _validate_noise(sigma_unc, sigma_cor, clip):
    """sigma_unc in :data:`SIGMA_UNC_RANGE`, 0 <= sigma_cor <= :data:`SIGMA_COR_MAX`, clip in :data:`CLIP_RANGE`,
    broadcasting."""
    su, sc, c = check_params((P.ACCOUNTANT_SIGMA_UNC, P.ACCOUNTANT_SIGMA_COR, P.ACCOUNTANT_CLIP), broadcast=False,
                             sigma_unc=sigma_unc, sigma_cor=sigma_cor, clip=clip)
    shape = V.broadcastable(sigma_unc=su, sigma_cor=sc, clip=c)
    return su, sc, c, shape


def _validate_adversary(g: SecGraph, adversary, colluders):
    V.one_of("adversary", adversary, ADVERSARIES)
    if adversary == "colluding":
        if colluders is None:
            raise ValueError("Expected colluders (an integer >= 1) with adversary='colluding', got colluders=None.")
        c = int(V.integer("colluders", colluders, minimum=0))
        if c >= g.n:
            raise ValueError(f"Expected colluders < n = {g.n}, got colluders={c}.")
        if c == g.n - 1:
            raise ValueError(
                f"Expected colluders < n - 1 = {g.n - 1} (with n - 1 colluders only local DP is left: "
                f"use adversary='local'), got colluders={c}."
            )
        return c
    if colluders is not None:
        raise ValueError(f"Expected colluders=None unless adversary='colluding', got colluders={colluders!r}.")
    return {"eavesdropper": 0, "curious": 1, "local": None}[adversary]


def _check_connectivity(g: SecGraph, removed: int | None) -> bool:
    """Whether no admissible removal of ``removed`` users disconnects the honest graph; warns if one does.

    removed = 0: connected components.  removed = 1: articulation points (networkx, linear time; up to
    200000 users).  removed = c >= 2: vertex connectivity (networkx, n <= 2000).  Beyond those sizes the
    sufficient condition a(G) > c w_max (Fiedler) is tried, and a warning says when it cannot be verified.
    """
    if removed is None:
        return True
    verified = True
    if removed == 0:
        ok = g.connected
        what = "the graph is disconnected"
    elif removed == 1:
        if g.n <= 200_000:
            ok = g.is_biconnected()
        else:
            ok = verified = g.connected and g.fiedler_lower()[0] > g.w_max
        what = "the graph is not 2-connected (removing one curious user disconnects it)"
    else:
        if g.n <= 2000:
            ok = g.node_connectivity() > removed
        else:
            ok = verified = g.connected and g.fiedler_lower()[0] > removed * g.w_max
        what = f"the graph is not {removed + 1}-connected (some {removed} colluders disconnect it)"
    if not ok:
        if not verified:
            what = f"could not verify ({g.n} users) that {what.split(' (')[0].replace('is not', 'is')}"
        warnings.warn(
            f"SecRDP: {what}; users cut off from the others are protected by sigma_unc alone, so the "
            f"guarantee falls back to local DP for them (the accountant value stays valid).",
            DisconnectedGraphWarning,
            stacklevel=4,
        )
    return bool(ok)


def _pairs(su, sc, shape2):
    su_b, sc_b = np.broadcast_arrays(su, sc)
    return (su_b.reshape(-1) ** 2, sc_b.reshape(-1) ** 2)
