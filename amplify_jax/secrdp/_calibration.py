"""Calibration of the two noise levels (Decor App. D.1) and the uncorrelated-noise baselines (Sec. 6, App. D).

Step 1: the per-step budget eps1 from (target_epsilon, delta, T) (:func:`calibrate_eps1`, or
:func:`example_level_calibrate_eps1` for example-level privacy, a bisection since subsampling has no closed form).
Steps 2-3: fix sigma_unc and find the minimal sigma_cor on the accountant, which is non-increasing in sigma_cor
(:func:`calibrate_sigma_cor`, batched through ``amplify_jax.calibrate.invert_monotone`` on a traced twin of the
accountant, :class:`_Eps1Fn`; for adversary II beyond enumeration refined on the certified accountant).
:func:`noise_frontier` gives the admissible pairs over sigma_unc; :func:`baselines` the local-DP and central-DP
noise levels for the same per-step budget.

The formulas are those rebuilt in docs/errata.md (our copy of the paper lost them): the budget inverts the closed
form T eps1 + 2 sqrt(T eps1 ln(1/delta)) (docs/errata.md#e-secrdp-closed-form); the accountant is
eps1 = 2 C^2 max_{i in H} [Sigma_H^{-1}]_ii (docs/errata.md#e-secrdp-accountant) for any of the adversaries I-IV
(the authors' code has I only; docs/errata.md#e-secrdp-adversaries); the example-level budget composes the T
steps at the requested delta, which the authors' example-level code does not
(docs/errata.md#e-secrdp-example-level).  The search itself is App. D.1's (sigma_unc fixed, sigma_cor bisected),
as the note after that entry says.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._core import validate as V
from .._core.domains import check_params
from .._core.numerics import x64_scope
from ..accounting.calibrate import AT_LIMIT, INFEASIBLE, NOT_MONOTONE, OK, invert_monotone  # Status codes, as ints
from ..accounting.conversions import epsilon_from_rdp
from ..accounting.rdp import SIGMA_RANGE
from ._adversaries import SIGMA_UNC_RANGE, _check_connectivity, _validate_adversary
from . import _params as P
from ._certified import _fast_affordable
from ._conversion import _CONVERSION_METHODS, _CURVE_ORDERS, _eps_from_eps1_kernel, closed_form_eps1
from ._covariance import _enumeration_affordable, _lam_bound, _mask_structure, _masked_one
from ._example_level import _SAMPLINGS, _subsampled_curve, effective_noise_multiplier
from ._graph import SecGraph, _is_large, _removal_masks, algebraic_connectivity, prepare_graph
from ._rounding import _LDP_UP, _ROUND_ABS, _U
from ._step import _spectral_diag_bound, _step_diag


class _Eps1Fn:
    """Traceable eps1(sigma_cor, sigma_unc, clip) for one graph and adversary (jnp, same-shape arrays), hashable
    by identity and cached on the graph so the core's inversion reuses its compiled code."""

    def __init__(self, g: SecGraph, adversary: str, c):
        self.kind = adversary
        self.n = g.n
        self.exact = True
        if adversary == "local":
            return
        a_lo, _ = algebraic_connectivity(g, removed=c)
        self.a_lo = a_lo
        self.n_h = g.n - c
        if _is_large(g.n):
            self.kind, self.exact = "spectral", False
            return
        lam, vec = g.eigh()
        self.w = jnp.asarray(vec * vec)
        self.lam = jnp.asarray(lam)
        self.masks = None
        if c >= 1:
            if _enumeration_affordable(g.n, c):
                masks = _removal_masks(g.n, c)
                labels, inv_size, a_h = _mask_structure(g, masks)
                self.masks = jnp.asarray(masks)
                self.labels = jnp.asarray(labels)
                self.inv_size = jnp.asarray(inv_size)
                self.a_h = jnp.asarray(a_h)
                self.lam_b = _lam_bound(g)
            else:
                self.kind, self.exact = "spectral", False
        if self.masks is not None:
            self.adj = jnp.asarray(g.adjacency.toarray())

    def diag_max(self, su2, sc2):
        """max_i [Sigma_H^{-1}]_ii over the adversary's honest sets, flat (P,) arrays, plus margins."""
        if self.kind == "local":
            return _LDP_UP / su2
        if self.kind == "spectral":
            return _spectral_diag_bound(self.n_h, self.a_lo, su2, sc2)
        r = 1.0 / (su2[:, None] + sc2[:, None] * self.lam[None, :])
        d = jnp.max(r @ self.w.T, axis=1)
        if self.masks is not None:
            dm = lax.map(lambda p: jnp.max(lax.map(
                lambda m: _masked_one(self.adj, m[0], m[1], m[2], m[3], p[0], p[1], self.lam_b),
                (self.masks, self.labels, self.inv_size, self.a_h))), (su2, sc2))
            d = jnp.maximum(d, dm)
        return jnp.minimum(d + _ROUND_ABS * self.n * _U / su2, _LDP_UP / su2) * _LDP_UP

    def __call__(self, sigma_cor, sigma_unc, clip):
        shape = jnp.shape(sigma_cor)
        su2 = jnp.broadcast_to(sigma_unc, shape).reshape(-1) ** 2
        sc2 = jnp.reshape(sigma_cor, (-1,)) ** 2
        c2 = 2.0 * jnp.broadcast_to(clip, shape).reshape(-1) ** 2
        return (c2 * self.diag_max(su2, sc2)).reshape(shape)


def _eps1_fn(g: SecGraph, adversary, c) -> _Eps1Fn:
    if not hasattr(g, "_eps1_fns"):
        g._eps1_fns = {}
    key = (adversary, c)
    if key not in g._eps1_fns:
        g._eps1_fns[key] = _Eps1Fn(g, adversary, c)
    return g._eps1_fns[key]


class NoiseCalibration(NamedTuple):
    """Calibrated noise levels of Decor (arrays broadcast over the inputs).  Not to be confused with
    ``amplify_jax.accountants.Calibration`` (DP-SGD).

    sigma_unc, sigma_cor: the noise pair (sigma_cor is the minimal one for the given sigma_unc, rounded up to
        within rtol: the feasible endpoint of the bisection, re-checked).
    status: ``amplify_jax.status.Status`` codes: OK (0); INFEASIBLE (1: no sigma_cor meets the budget at this
        sigma_unc: sigma_unc <= the central-DP level of the honest set, or a graph the adversary can
        disconnect); AT_LIMIT (2: sigma_cor = 0 already meets it: sigma_unc >= the local-DP level);
        NOT_MONOTONE (3: the re-check at the returned value failed); MAX_ITER (4: feasible, the bracket did not
        reach rtol).  See ``amplify_jax.calibrate``.
    eps1: the per-step coefficient achieved, re-computed (<= eps1_budget where status is OK, AT_LIMIT or
        MAX_ITER).
    eps1_budget: the per-step budget derived from (target_epsilon, delta, steps).
    """

    sigma_unc: jax.Array
    sigma_cor: jax.Array
    status: jax.Array
    eps1: jax.Array
    eps1_budget: jax.Array


def calibrate_eps1(target_epsilon, *, steps, delta, method="closed_form"):
    """The largest per-step eps1 such that T steps stay (target_epsilon, delta)-SecLDP (App. D.1, step 1).

    "closed_form": :func:`closed_form_eps1`; "balle2020" / "mironov": inverts the core's conversion of
    alpha T eps1 (min over a dense order grid) with ``amplify_jax.calibrate.invert_monotone`` (largest
    feasible eps1, re-checked).
    """
    V.one_of("method", method, _CONVERSION_METHODS)
    if method == "closed_form":
        return closed_form_eps1(target_epsilon, steps=steps, delta=delta)
    e, t, d = check_params((P.TARGET_EPSILON, P.ANY_STEPS, P.DELTA), broadcast=False, target_epsilon=target_epsilon,
                           steps=steps, delta=delta)
    shape = V.broadcastable(target_epsilon=e, steps=t, delta=d)
    lo = np.asarray(closed_form_eps1(e, steps=t, delta=d))  # feasible: balle2020/mironov <= closed form
    fn = _BUDGET_FNS[method]
    inv = invert_monotone(fn, np.broadcast_to(e, shape), args=(np.log(d), t), lo=lo * 0.5, hi=lo * 1e3 + 1e-300,
                          feasible="below", rtol=1e-9)
    return inv.value


def _budget_fn_balle(eps1, log_delta, steps):
    return _eps_from_eps1_kernel(eps1, log_delta, steps, jnp.asarray(_CURVE_ORDERS), "balle2020")


def _budget_fn_mironov(eps1, log_delta, steps):
    return _eps_from_eps1_kernel(eps1, log_delta, steps, jnp.asarray(_CURVE_ORDERS), "mironov")


_BUDGET_FNS = {"balle2020": _budget_fn_balle, "mironov": _budget_fn_mironov}


def _refine_curious_certified(g, su_b, c_b, b_b, value, status, rtol):
    """Adversary II where the traced accountant is only Thm 1's bound (n >= 448): the minimal sigma_cor under
    the certified accountant (:func:`_curious_fast`, an upper bound on the exact eps1), by a batched host
    bisection on log sigma_cor.  The upper end is the spectral answer (feasible: the certified value is
    never above Thm 1's bound) or, where that was infeasible, sigma_unc 1e9 if the certified accountant meets
    the budget there; the lower end is adversary I's minimal sigma_cor (less 2 rtol), infeasible for II since
    eps1_II >= eps1_I.  Returns (value, status, achieved) with the refined points replaced."""
    def eps1(sc):
        d = _step_diag(g, "curious", 1, su_b.reshape(-1) ** 2, np.asarray(sc, dtype=np.float64).reshape(-1) ** 2)[0]
        return (2.0 * c_b.reshape(-1) ** 2 * d * _LDP_UP).reshape(su_b.shape)

    todo = (status == OK) | (status == INFEASIBLE)
    if not np.any(todo):
        return None
    hi = np.where(status == OK, value, su_b * 1e9)
    e_hi = eps1(hi)
    todo &= e_hi <= b_b
    if not np.any(todo):
        return None
    value_i, status_i, _ = _sigma_cor_for_budget(g, "eavesdropper", 0, su_b, c_b, b_b, rtol)
    lo = np.where(status_i == OK, value_i * (1.0 - 2.0 * rtol), su_b * 1e-6)
    for _ in range(200):
        active = todo & (hi > lo * (1.0 + rtol))
        if not np.any(active):
            break
        mid = np.sqrt(lo * hi)
        e_mid = eps1(np.where(active, mid, hi))
        ok = active & (e_mid <= b_b)
        hi = np.where(ok, mid, hi)
        e_hi = np.where(ok, e_mid, e_hi)
        lo = np.where(active & ~ok, mid, lo)
    return (np.where(todo, hi, value), np.where(todo, OK, status), np.where(todo, e_hi, np.nan))


def _sigma_cor_range(g, su):
    """The search range of sigma_cor: from near sigma_unc / sqrt(lambda_max) to 1e9 sigma_unc (lambda_max <= 2
    max degree; a graph without edges, where sigma_cor has no effect, gets lo = 1e-6 sigma_unc, not 1e144)."""
    lam_max = 2.0 * float(g.degrees.max()) if g.degrees.size else 0.0
    return su * 1e-6 / math.sqrt(lam_max if lam_max > 0 else 1.0), su * 1e9


def _sigma_cor_for_budget(g, adversary, c, su, clip_a, budget, rtol, certified=True):
    """Minimal sigma_cor with eps1(sigma_cor; sigma_unc) <= budget, batched (the core's inversion).

    For adversary II where the traced accountant falls back to Thm 1's bound (n >= 448) and the certified
    update applies (connected sparse graphs below LARGE_N), the answer is refined on the certified accountant
    (``certified=True``; :func:`_refine_curious_certified`)."""
    fn = _eps1_fn(g, adversary, c)
    shape = np.broadcast_shapes(np.shape(su), np.shape(clip_a), np.shape(budget))
    su_b, c_b, b_b = (np.broadcast_to(np.asarray(x, dtype=np.float64), shape) for x in (su, clip_a, budget))
    with x64_scope():
        at_zero = np.asarray(fn(jnp.zeros(shape), jnp.asarray(su_b), jnp.asarray(c_b)))
    # eps1 decreases in sigma_cor towards 2 C^2 / (n_H sigma_unc^2) at best: search sigma_cor up to where the
    # component-average term dominates (hi), starting near sigma_unc / sqrt(lambda_max) scale (lo).
    lo, hi = _sigma_cor_range(g, su_b)
    inv = invert_monotone(fn, b_b, args=(su_b, c_b), lo=lo, hi=hi, feasible="above", rtol=rtol)
    value = np.where(at_zero <= b_b, 0.0, np.asarray(inv.value))
    status = np.where(at_zero <= b_b, AT_LIMIT, np.asarray(inv.status))
    status = np.where((status == AT_LIMIT) & (at_zero > b_b), OK, status)  # feasible at lo > 0 (tiny): fine
    with x64_scope():
        achieved = np.asarray(fn(jnp.asarray(value), jnp.asarray(su_b), jnp.asarray(c_b)))
    status = np.where((status != INFEASIBLE) & (achieved > b_b), NOT_MONOTONE, status)
    if (certified and adversary == "curious" and fn.kind == "spectral" and not _is_large(g.n)
            and _fast_affordable(g)):
        refined = _refine_curious_certified(g, su_b, c_b, b_b, value, status, rtol)
        if refined is not None:
            value, status, ach = refined
            achieved = np.where(np.isnan(ach), achieved, ach)
    return value, status, achieved


def _calibration_result(g, adversary, c, su, clip_a, budget, rtol) -> NoiseCalibration:
    """The minimal sigma_cor for each sigma_unc at a per-step budget, as a :class:`NoiseCalibration`."""
    value, status, achieved = _sigma_cor_for_budget(g, adversary, c, su, clip_a, budget, rtol)
    shape = value.shape
    with x64_scope():
        return NoiseCalibration(jnp.asarray(np.broadcast_to(su, shape)), jnp.asarray(value), jnp.asarray(status),
                           jnp.asarray(achieved), jnp.asarray(np.broadcast_to(budget, shape)))


def calibrate_sigma_cor(graph, *, sigma_unc, clip, target_epsilon, delta, steps, adversary="eavesdropper",
                        colluders=None, method="closed_form", rtol=1e-6) -> NoiseCalibration:
    """For a fixed sigma_unc, the minimal sigma_cor such that T steps of Decor are (target_epsilon, delta)-SecLDP
    against the adversary (Decor App. D.1: fix sigma_unc, bisect sigma_cor on the accountant, which is
    non-increasing in sigma_cor since Sigma grows in the Loewner order).  Batched over sigma_unc, clip,
    target_epsilon, delta, steps through ``amplify_jax.calibrate.invert_monotone`` (feasible endpoint, re-checked).  For
    curious users (adversary II) on 448 or more users, where the traced accountant is Thm 1's bound, the
    answer is refined on the certified accountant of :func:`step_account` by a host bisection (seconds per
    batch at 500-2000 users)."""
    g = prepare_graph(graph)
    c = _validate_adversary(g, adversary, colluders)
    su, clip_a = check_params((P.ACCOUNTANT_SIGMA_UNC, P.ACCOUNTANT_CLIP), broadcast=False, sigma_unc=sigma_unc,
                              clip=clip)
    budget = np.asarray(calibrate_eps1(target_epsilon, steps=steps, delta=delta, method=method))
    V.broadcastable(sigma_unc=su, clip=clip_a, budget=budget)
    _check_connectivity(g, c)
    return _calibration_result(g, adversary, c, su, clip_a, budget, rtol)


class Baselines(NamedTuple):
    """Noise of the two D-SGD baselines with uncorrelated noise only, for the same per-step budget
    (Decor Sec. 6 and App. D.1-D.2; Gaussian mechanism, Mironov 2017): local DP, each user's message private,
    eps1 = 2 C^2 / sigma_ldp^2; central DP, only the average of the n users' models private, sigma_cdp =
    sigma_ldp / sqrt(n) (the average has sensitivity 2C/n and noise variance sigma_cdp^2 / n)."""

    sigma_ldp: jax.Array
    sigma_cdp: jax.Array
    eps1_budget: jax.Array


def baselines(n, *, clip, target_epsilon, delta, steps, method="closed_form") -> Baselines:
    """Local-DP and central-DP noise levels for n users (see :class:`Baselines`)."""
    nn, cl = check_params((P.N_USERS, P.ACCOUNTANT_CLIP), broadcast=False, n=n, clip=clip)
    b = np.asarray(calibrate_eps1(target_epsilon, steps=steps, delta=delta, method=method))  # checks those three
    # the domains keep the budget >= 1e-300 (TARGET_EPSILON_MIN, DELTA_MIN, steps <= 2**53) and C in [1e-50, 1e50],
    # so C sqrt(2 / eps1) is finite and positive; checked all the same (never an inf returned silently)
    ldp = cl * np.sqrt(2.0 / b)
    if not np.all((ldp > 0) & (ldp < np.inf)):
        raise RuntimeError(f"baselines: local-DP noise C sqrt(2 / eps1) not finite and positive on valid input "
                           f"(eps1 budget in [{np.min(b)!r}, {np.max(b)!r}]).")
    cdp = ldp / np.sqrt(nn)
    with x64_scope():
        return Baselines(jnp.asarray(ldp), jnp.asarray(cdp), jnp.asarray(b))


class Frontier(NamedTuple):
    """Admissible pairs: for each sigma_unc on a grid, the minimal sigma_cor (every pair with a larger
    sigma_cor is admissible too).  Fields as in :class:`NoiseCalibration` (status: ``Status`` codes)."""

    sigma_unc: jax.Array
    sigma_cor: jax.Array
    status: jax.Array
    eps1: jax.Array
    eps1_budget: jax.Array


def _honest_size(g, c):
    return g.n if c is None else g.n - c


def noise_frontier(graph, *, clip, target_epsilon, delta, steps, adversary="eavesdropper", colluders=None, num=32,
                   method="closed_form", rtol=1e-6) -> Frontier:
    """The frontier of admissible (sigma_unc, sigma_cor) pairs for one target (scalar target_epsilon, delta,
    steps).

    sigma_unc runs geometrically over (sigma_low, sigma_ldp], sigma_low = sigma_ldp / sqrt(n_H) (n_H = n - c
    honest users; below it no sigma_cor suffices, since eps1 -> 2 C^2 / (n_H sigma_unc^2) as sigma_cor -> inf)
    and sigma_ldp the local-DP level (sigma_cor = 0 suffices above it).  One batched inversion.
    """
    g = prepare_graph(graph)
    c = _validate_adversary(g, adversary, colluders)
    num = V.count("num", num, minimum=2, maximum=10**4)  # one inversion per point
    rtol = V.tolerance("rtol", rtol)  # one number in [1e-15, 0.5]
    # one target per frontier: scalars, each checked by its Param
    e, d, t, cl = (V.scalar(p.name, v, p.domain.check) for p, v in (
        (P.TARGET_EPSILON, target_epsilon), (P.DELTA, delta), (P.ANY_STEPS, steps), (P.ACCOUNTANT_CLIP, clip)))
    budget = float(np.asarray(calibrate_eps1(e, steps=t, delta=d, method=method)).reshape(()))
    if not budget > 0:  # >= 1e-300 on the domains (see baselines), so sigma_ldp = C sqrt(2 / eps1) is finite
        raise RuntimeError(f"noise_frontier: eps1 budget {budget!r} not positive on valid input.")
    ldp = cl * math.sqrt(2.0 / budget)
    low = ldp / math.sqrt(_honest_size(g, c) if c is not None else 1)
    if not (SIGMA_UNC_RANGE[0] <= low and ldp <= SIGMA_UNC_RANGE[1]):  # the accountant's sigma_unc (1e300: NaN)
        raise ValueError(f"Expected target_epsilon, delta, steps and clip whose frontier sigma_unc in [{low!r}, "
                         f"{ldp!r}] (C sqrt(2 / eps1) over sqrt(n_H) .. 1) lies in SIGMA_UNC_RANGE "
                         f"[{SIGMA_UNC_RANGE[0]:g}, {SIGMA_UNC_RANGE[1]:g}], got target_epsilon={e!r}, delta={d!r}, "
                         f"steps={int(t)}, clip={cl!r} (eps1 budget {budget!r}).")
    _check_connectivity(g, c)
    su = np.geomspace(low * (1.0 + 1e-3), ldp, num)
    value, status, achieved = _sigma_cor_for_budget(g, adversary, c, su, cl, budget, rtol)
    with x64_scope():
        return Frontier(jnp.asarray(su), jnp.asarray(value), jnp.asarray(status), jnp.asarray(achieved),
                        jnp.asarray(np.full(su.shape, budget)))


def example_level_calibrate_eps1(target_epsilon, *, delta, steps, batch_size, q, sampling="poisson",
                                 orders=None, rtol=1e-7, method="balle2020"):
    """The largest per-step eps1 (at the user clip C used by the accountant) such that T subsampled steps are
    example-level (target_epsilon, delta)-SecLDP (App. D.1, "Example-level privacy": no closed form, so this is a
    bisection on eps1 over the core's subsampled curves; the example-level eps increases with eps1).  Returns
    the feasible (lower) endpoint, re-checked.  Scalar inputs; ``batch_size`` in ``BATCH_SIZE_RANGE``; eps1 is
    searched in [1e-12, 1e6] where the effective noise multiplier stays in ``rdp.SIGMA_RANGE``."""
    # scalar inputs (one bisection)
    e, d, t, b, q = (V.scalar(p.name, v, p.domain.check) for p, v in (
        (P.TARGET_EPSILON, target_epsilon), (P.DELTA, delta), (P.ANY_STEPS, steps), (P.ANY_BATCH, batch_size),
        (P.ANY_Q, q)))
    # the bisection below runs until hi / lo <= 1 + rtol
    rtol = V.scalar("rtol", rtol, lambda k, v: V.between(k, v, 1e-15, 1.0))
    V.one_of("sampling", sampling, _SAMPLINGS)
    # integer orders by default: a superset-free, sound choice (any set of orders gives a valid bound)
    a = V.orders("orders", np.arange(2.0, 129.0) if orders is None else orders)

    def eps_of(eps1_arr):
        sig = effective_noise_multiplier(eps1_arr, clip=1.0, batch_size=b, sampling=sampling)
        curve = _subsampled_curve(a, q, sig, sampling)
        return np.asarray(epsilon_from_rdp(a, t * np.asarray(curve), delta=d, method=method).epsilon)

    # eps1 from 1e-12 to 1e6, kept where the effective noise multiplier (clip 1) lies in the core's rdp.SIGMA_RANGE
    # (b outside ~[0.71, 7071] Poisson, [1.41, 14142] without replacement: eps_of failed, naming "sigma")
    def eps1_at(sig):  # the eps1 whose effective noise multiplier is sig
        return 2.0 * b * b / (sig * sig) if sampling == "poisson" else b * b / (2.0 * sig * sig)

    lo_end = max(1e-12, eps1_at(SIGMA_RANGE[1]) * (1.0 + 1e-9))
    hi_end = min(1e6, eps1_at(SIGMA_RANGE[0]) * (1.0 - 1e-9))
    # every call has 30 points: one compiled shape in the core's kernels
    grid = np.geomspace(lo_end, hi_end, 30)
    ok = eps_of(grid) <= e
    if not ok[0]:  # delta = 1e-300 at the base point: no order up to 128 converts below 1
        sig = float(effective_noise_multiplier(lo_end, clip=1.0, batch_size=b, sampling=sampling))
        raise ValueError(f"Expected a target_epsilon reachable at delta={d!r}, steps={int(t)}, q={q!r}, "
                         f"batch_size={b!r} (orders up to {float(np.max(a)):g}), got target_epsilon={e!r} (exceeded "
                         f"already at eps1={lo_end:g}, noise multiplier {sig:g}).")
    if ok[-1]:
        return grid[-1]
    k = int(np.flatnonzero(~ok)[0])
    lo, hi = grid[k - 1], grid[k]
    # bisection on log eps1, 30 interior points per round: the feasible endpoint is kept
    while hi / lo > 1.0 + rtol:
        grid = np.geomspace(lo, hi, 32)[1:-1]  # 30 interior points
        ok = eps_of(grid) <= e
        lo_i = np.flatnonzero(ok)
        hi_i = np.flatnonzero(~ok)
        lo, hi = (grid[lo_i[-1]] if lo_i.size else lo), (grid[hi_i[0]] if hi_i.size else hi)
    if not eps_of(np.full(30, lo))[0] <= e:  # re-check (monotone in eps1, so this holds)
        raise RuntimeError("example_level_calibrate_eps1: re-check failed (non-monotone conversion?)")
    return lo


def example_level_calibrate_sigma_cor(graph, *, sigma_unc, clip, target_epsilon, delta, steps, batch_size, q,
                                      sampling="poisson", adversary="eavesdropper", colluders=None, orders=None,
                                      rtol=1e-6) -> NoiseCalibration:
    """Example-level counterpart of :func:`calibrate_sigma_cor` (Decor App. D.1): the eps1 budget from
    :func:`example_level_calibrate_eps1`, then the minimal sigma_cor for each sigma_unc (batched)."""
    g = prepare_graph(graph)
    c = _validate_adversary(g, adversary, colluders)
    su, cl = check_params((P.ACCOUNTANT_SIGMA_UNC, P.ACCOUNTANT_CLIP), broadcast=False, sigma_unc=sigma_unc,
                          clip=clip)
    unit = example_level_calibrate_eps1(target_epsilon, delta=delta, steps=steps, batch_size=batch_size, q=q,
                                        sampling=sampling, orders=orders)
    # the budget is the same at every clip: eps1 is the accountant's at clip C, and the effective noise
    # multiplier b sqrt(2 / eps1) (Poisson) or b / sqrt(2 eps1) (without replacement) does not depend on C
    # (effective_noise_multiplier: the shift (C / b) sqrt(d) with d = eps1 / (2 C^2)).  The budget was
    # multiplied by C^2 before, which under-reported eps for C > 1 (C = 2, ring, sigma_unc = 0.1, target 2:
    # sigma_cor = 0 returned, example_level_epsilon 3.56 there).
    budget = np.broadcast_to(unit, np.shape(cl)).astype(np.float64)
    _check_connectivity(g, c)
    return _calibration_result(g, adversary, c, su, cl, budget, rtol)
