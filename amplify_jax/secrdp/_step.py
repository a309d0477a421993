"""One step of Decor against one adversary (Decor Thm 1, Thm 6 and Algorithms 2-3; the accountant is rebuilt in
docs/errata.md#e-secrdp-accountant): :func:`step_account` (eps1 = 2 C^2 max_{i in H} [Sigma_H^{-1}]_ii with the
spectral bound and flags), :func:`step_rdp` (the curve alpha eps1) and :func:`spectral_bound` (Thm 1).

:func:`_step_diag` routes each adversary: IV local DP; I the eigendecomposition; II and III every removed set
inverted directly while affordable, adversary II from ``_FAST_MIN_N`` users on (connected sparse graphs) by the
certified update (``_certified``), otherwise min(Thm 1's bound, the local flow bound of ``_flow``); n >= LARGE_N
the sparse path (certified a(G), flagged inexact).  ``_FAST_MIN_N`` is read here: patch it here
(``_step._FAST_MIN_N``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import jax

from .._core import validate as V
from .._core.numerics import x64_scope
from ._adversaries import _check_connectivity, _pairs, _validate_adversary, _validate_noise
from ._certified import _curious_fast, _fast_affordable
from ._covariance import _direct_masks, _eig_path, _enumeration_affordable
from ._flow import _flow_diag_bound
from ._graph import SecGraph, _is_large, _removal_masks, algebraic_connectivity, prepare_graph
from ._rounding import _LDP_UP, _ROUND_ABS, _U, _dev

_FAST_MIN_N = 48  # adversary II: from this size on (or where enumeration is unaffordable) the certified update


class StepAccount(NamedTuple):
    """One step of Decor against one adversary (arrays broadcast over sigma_unc, sigma_cor, clip).

    eps1: the per-step SecRDP coefficient (the step is (alpha, alpha * eps1)-SecRDP for every alpha > 1);
        exact (plus a rounding margin) where ``exact`` is True, else a sound upper bound.
    spectral: the spectral bound of Thm 1 (2 C^2 times the bound on max_i [Sigma^-1]_ii), always >= eps1.
    exact: whether eps1 is the exact accountant value (Algorithm 2/3) rather than a bound.
    connected: whether every honest graph the adversary can leave is connected (False: some user's
        guarantee falls back to local DP; a DisconnectedGraphWarning was issued).
    ldp: 2 C^2 / sigma_unc^2, the local-DP value (adversary IV), for reference.
    eps1_lower: a lower bound on the exact accountant value, so that eps1_lower <= exact value <= eps1.
        Certified on the certified path of adversary II (:func:`_curious_fast`); on the direct and
        eigendecomposition paths the computed value minus its rounding margin; under the spectral fallback
        the value of H = all users (or, for n >= LARGE_N, 2 C^2 / (sigma_unc^2 + sigma_cor^2 d_min) by
        [Sigma^{-1}]_ii >= 1 / Sigma_ii).  The gap eps1 - eps1_lower says how far from exact a fallback is.
    """

    eps1: jax.Array
    spectral: jax.Array
    exact: jax.Array
    connected: jax.Array
    ldp: jax.Array
    eps1_lower: jax.Array


def _spectral_diag_bound(n_h, a, su2, sc2):
    """Thm 1 (docs/errata.md#e-secrdp-spectral): 1/(n_H su2) + (1 - 1/n_H)/(su2 + a sc2), a bound on
    max_i [Sigma_H^{-1}]_ii."""
    return 1.0 / (n_h * su2) + (1.0 - 1.0 / n_h) / (su2 + a * sc2)


def _step_diag(g: SecGraph, adversary, c, su2, sc2):
    """(diag_max, spectral_diag, exact, lower) arrays over the flattened pairs; ``lower`` is a lower bound on
    the exact maximum (certified on the certified path; elsewhere value minus its rounding margin, or the
    Cauchy-Schwarz bound [Sigma^{-1}]_ii >= 1 / Sigma_ii under the spectral fallback)."""
    n = g.n
    ones = np.ones(su2.shape, dtype=bool)
    if adversary == "local":
        d = _LDP_UP / su2
        return d, d, ones, (1.0 - 4.0 * _U) / su2
    removed = c
    a_lo, a_exact = algebraic_connectivity(g, removed=removed)
    n_h = n - removed
    spec = np.minimum(_spectral_diag_bound(n_h, a_lo, su2, sc2) * _LDP_UP, _LDP_UP / su2)
    if _is_large(n):
        dmin = float(g.degrees.min())
        d = np.minimum(spec, _flow_diag_bound(g, removed, su2, sc2))
        return d, spec, ~ones, (1.0 - 8.0 * _U) / (su2 + sc2 * dmin * (1.0 + 4.0 * _U))
    margin = _ROUND_ABS * n * _U / su2
    d = _eig_path(g, su2, sc2)  # H = all users: adversary I, and the empty removed set of II/III
    lower = d - margin
    exact = ones
    if removed >= 1:
        # every removed set (one user for II, up to c for III) inverted directly, deflated (_direct_masks),
        # while (number of sets) * n^3 is affordable; adversary II from _FAST_MIN_N users on (or beyond the
        # enumeration budget) by the certified low-rank update (_curious_fast) where the graph is connected
        # and sparse enough; otherwise the spectral bound
        direct_ok = _enumeration_affordable(n, removed)
        if removed == 1 and (n >= _FAST_MIN_N or not direct_ok) and _fast_affordable(g):
            hi, lo, exact = _curious_fast(g, su2, sc2, spec)
            d = np.maximum(d + margin, hi)
            lower = np.maximum(lower, lo)
        elif direct_ok:
            hi, lo = _direct_masks(g, _removal_masks(n, removed), su2, sc2, with_lower=True)
            d = np.maximum(d, hi) + margin
            lower = np.maximum(lower, lo) - margin
        else:  # Thm 1's bound or the local flow bound, whichever is smaller
            d, exact = np.minimum(spec, _flow_diag_bound(g, removed, su2, sc2)), ~ones
    else:
        d = d + margin
    # Sigma_H >= sigma_unc^2 I, so [Sigma_H^{-1}]_ii <= 1/sigma_unc^2 exactly: the margin never goes above it
    # (1/sigma_unc^2 itself rounded up).
    d = np.minimum(d, _LDP_UP / su2)
    lower = np.minimum(lower, d)
    # The spectral bound is mathematically >= the exact value; keep the reported pair ordered under rounding.
    spec = np.maximum(spec, d)
    return d, spec, exact, lower


def step_account(graph, *, sigma_unc, sigma_cor, clip, adversary, colluders=None) -> StepAccount:
    """The per-step SecRDP coefficient eps1 = 2 C^2 max_{i in H} [Sigma_H^{-1}]_ii for one adversary, with the
    spectral bound of Thm 1 and flags (Decor, Thm 1 / Thm 6 and Algorithms 2-3; the accountant is rebuilt in
    docs/errata.md#e-secrdp-accountant).  Broadcasts over ``sigma_unc`` (> 0), ``sigma_cor`` (>= 0) and
    ``clip`` (> 0).

    adversary: "eavesdropper" (I), "curious" (II), "colluding" (III, with ``colluders`` = c), "local" (IV).
    See the module docstring for the algorithms and the soundness margins.
    """
    g = prepare_graph(graph)
    c = _validate_adversary(g, adversary, colluders)
    su, sc, clip_a, shape = _validate_noise(sigma_unc, sigma_cor, clip)
    connected = _check_connectivity(g, c)
    shape2 = np.broadcast_shapes(np.shape(su), np.shape(sc))
    su2, sc2 = _pairs(su, sc, shape2)
    d, spec, exact, lower = _step_diag(g, adversary, c, su2, sc2)
    d = d.reshape(shape2)
    spec = np.asarray(spec).reshape(shape2)
    exact = np.broadcast_to(exact, su2.shape).reshape(shape2)
    lower = np.broadcast_to(lower, su2.shape).reshape(shape2)
    c2 = 2.0 * np.asarray(clip_a) ** 2
    ldp = c2 / np.asarray(su) ** 2 * _LDP_UP
    with x64_scope():
        return StepAccount(
            eps1=_dev(np.broadcast_to(c2 * d * _LDP_UP, shape)),
            spectral=_dev(np.broadcast_to(c2 * spec * _LDP_UP, shape)),
            exact=_dev(np.broadcast_to(exact, shape)),
            connected=_dev(np.broadcast_to(connected, shape)),
            ldp=_dev(np.broadcast_to(ldp, shape)),
            eps1_lower=_dev(np.broadcast_to(np.maximum(c2 * lower * (1.0 - 4.0 * _U), 0.0), shape)),
        )


def step_rdp(orders, graph, *, sigma_unc, sigma_cor, clip, adversary, colluders=None):
    """RDP curve of one step of Decor, alpha * eps1 (Decor Thm 1 / Thm 6; docs/errata.md#e-secrdp-accountant),
    eps1 from :func:`step_account`.  Shape: broadcast(sigma_unc, sigma_cor, clip) + (len(orders),)."""
    a = V.orders("orders", orders)
    acc = step_account(graph, sigma_unc=sigma_unc, sigma_cor=sigma_cor, clip=clip, adversary=adversary,
                       colluders=colluders)
    with x64_scope():
        return _dev(np.asarray(acc.eps1)[..., None] * np.asarray(a, np.float64))


def spectral_bound(graph, *, sigma_unc, sigma_cor, clip, adversary, colluders=None):
    """The spectral bound of Decor Thm 1 on eps1 (docs/errata.md#e-secrdp-spectral, derived here):

    with Sigma = sigma_unc^2 I + sigma_cor^2 L_H = sum_k (sigma_unc^2 + sigma_cor^2 lambda_k) v_k v_k^T,
    lambda_1 = 0, v_1 = 1/sqrt(|H|) (per component the constant vector; the bound below uses only
    lambda_k >= a(H) for k >= 2), [Sigma^{-1}]_ii = sum_k v_ki^2 / (sigma_unc^2 + sigma_cor^2 lambda_k)
    <= 1/(|H| sigma_unc^2) + (1 - 1/|H|)/(sigma_unc^2 + a(H) sigma_cor^2), because sum_{k>=2} v_ki^2 = 1 - 1/|H|.
    Equality for K_n (all nonzero eigenvalues equal n).  Against removals (II, III), |H| = n - c and a(H) is
    replaced by a lower bound on the worst a(G - S) (:func:`algebraic_connectivity`).  Returns 2 C^2 times the
    bound, broadcast like :func:`step_account`.  For a disconnected graph a = 0 and the bound is the LDP value.
    """
    g = prepare_graph(graph)
    c = _validate_adversary(g, adversary, colluders)
    su, sc, clip_a, shape = _validate_noise(sigma_unc, sigma_cor, clip)
    su2 = np.asarray(su) ** 2
    sc2 = np.asarray(sc) ** 2
    if c is None:
        d = _LDP_UP / su2
    else:
        a, _ = algebraic_connectivity(g, removed=c)
        d = np.minimum(_spectral_diag_bound(g.n - c, a, su2, sc2) * _LDP_UP, _LDP_UP / su2)
    with x64_scope():
        return _dev(np.broadcast_to(2.0 * np.asarray(clip_a) ** 2 * d * _LDP_UP, shape))
