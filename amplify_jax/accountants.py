"""Ready-made accountants: eps of a mechanism composed over steps, and the calibration of its noise.

``dpsgd_epsilon`` / ``dpsgd_calibrate_sigma`` account for DP-SGD with Poisson sampling (the
Poisson-subsampled Gaussian of Mironov, Talwar, Zhang 2019, composed over ``steps`` and converted with
the optimal order, :mod:`amplify_jax.conversions`).  ``epsilon`` / ``calibrate_sigma`` dispatch on a
mechanism name for the command line and the sweeps (see :data:`MECHANISMS`).

Everything broadcasts over the numeric parameters; the orders grid and the number of quadrature panels
(shape-fixing) are the only static inputs, so new targets or parameters do not recompile.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import jax
import jax.numpy as jnp

from . import _validate as V
from .calibrate import INFEASIBLE, Inversion, invert_monotone_kernel
from .conversions import METHODS, EpsilonResult, refine_order, rdp_epsilon_terms
from .numerics import float64_jit, x64_scope
from .rdp import DEFAULT_ORDERS, SGMCurve

__all__ = [
    "MECHANISMS",
    "Calibration",
    "SGMCurve",
    "dpsgd_epsilon",
    "dpsgd_calibrate_sigma",
    "epsilon",
    "calibrate_sigma",
    "CALIBRATION_ORDERS",
]

#: Orders used while bisecting a calibration (a coarser grid: any order gives a valid bound, so a coarse grid
#: only makes the bisection's eps larger, i.e. its answer safe); the answer is then refined and re-checked
#: with the full accountant.
CALIBRATION_ORDERS = np.array(
    [1.05, 1.1, 1.2, 1.3, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48,
     64, 96, 128, 256, 512],
    dtype=np.float64,
)


class Calibration(NamedTuple):
    sigma: jax.Array  #: the minimal noise multiplier found (feasible side)
    epsilon: jax.Array  #: eps at that sigma (the re-check), never below dpsgd_epsilon's value there
    status: jax.Array  #: calibrate.OK / INFEASIBLE / AT_LIMIT / NOT_MONOTONE


class _SGMAtOrder:
    """rdp_fn(alpha, q, sigma, steps) for the continuous order search (hashable by its panel count)."""

    def __init__(self, n_panels):
        self.n_panels = n_panels

    def __hash__(self):
        return hash(("sgm", self.n_panels))

    def __eq__(self, other):
        return isinstance(other, _SGMAtOrder) and other.n_panels == self.n_panels

    def __call__(self, alpha, q, sigma, steps):
        from ._subsampled_gaussian import log_a_minus_one_fractional

        kw = {} if self.n_panels is None else {"n_panels": self.n_panels}
        log_am1 = log_a_minus_one_fractional(q, sigma, alpha, **kw)
        return steps * jnp.logaddexp(0.0, log_am1) / (alpha - 1.0)


def _bucket_size(n: int) -> int:
    """Batch sizes are padded to powers of two (at least 8), so a few compiled programs serve every call."""
    return max(8, 1 << int(np.ceil(np.log2(max(n, 1)))))


def _flat_padded(shape, *arrays):
    """Broadcast to ``shape``, flatten and pad (edge values) to the bucket size; returns (arrays, n)."""
    n = int(np.prod(shape, dtype=np.int64))
    size = _bucket_size(n)
    out = []
    for a in arrays:
        flat = np.broadcast_to(np.asarray(a, dtype=np.float64), shape).ravel()
        out.append(jnp.asarray(np.pad(flat, (0, size - n), mode="edge") if n else np.zeros(size)))
    return out, n


def _unpad(x, n, shape):
    return x[:n].reshape(shape)


def _n_panels(sigma, orders, q=None):
    """Static quadrature panel count for the fractional orders, probed at the given sigma, orders and q.

    The continuous order search may evaluate any order between the grid's neighbours (and up to 4x its top),
    so the probe includes the extremes.  A point given fewer panels than it needs falls back to a valid but
    loose bound (see :mod:`amplify_jax._subsampled_gaussian`): sound either way.
    """
    from ._subsampled_gaussian import choose_n_panels

    s = np.unique(np.asarray(sigma, dtype=np.float64).ravel())
    a = np.asarray(orders, dtype=np.float64).ravel()
    a = np.unique(np.concatenate([a, [a.min(), min(1 + 4 * (a.max() - 1), 4096.0)]]))
    qq = None if q is None else np.unique(np.asarray(q, dtype=np.float64).ravel())
    return choose_n_panels(s, a, qq)


#: Fractional grid orders evaluated exactly after pruning (static); more candidates -> the full grid.
PRUNED_CANDIDATES = 24
#: Golden-section steps of the continuous order search in dpsgd_epsilon: the bracket between the best grid
#: order's neighbours shrinks by 0.618^24 ~ 1e-5, and eps is quadratic at its minimum, so the remaining error
#: is ~1e-10 relative; the result is never above the grid's best whatever the number of steps.
REFINE_STEPS = 24


def _grid_best_pruned(curve, sigma, q, steps, log_delta, method):
    """(best eps over the whole grid, its index): exact, with most fractional orders pruned.

    Rényi divergences are non-decreasing in the order, so for a fractional order alpha the RDP at the largest
    integer order of the grid below it (0 below 2) gives a lower bound on eps(alpha) (the conversion is
    increasing in the RDP).  Only fractional orders whose lower bound is below the best integer order's eps
    can be the grid's best; the ``PRUNED_CANDIDATES`` smallest lower bounds are evaluated exactly.  Where more
    orders are candidates, the whole grid is evaluated instead (``lax.cond``), so the result always equals the
    full grid's minimum.
    """
    from ._subsampled_gaussian import log_a_minus_one_fractional

    orders = np.asarray(curve.orders)
    alpha = jnp.asarray(orders)
    int_idx = np.nonzero(orders == np.round(orders))[0]
    frac_idx = np.nonzero(orders != np.round(orders))[0]
    if frac_idx.size == 0 or int_idx.size == 0 or frac_idx.size <= PRUNED_CANDIDATES:
        e = rdp_epsilon_terms(alpha, steps[..., None] * curve(q, sigma), log_delta[..., None], method)
        i = jnp.argmin(e, axis=-1)
        return jnp.take_along_axis(e, i[..., None], -1)[..., 0], i
    int_curve = SGMCurve(orders[int_idx], curve.n_panels)
    r_int = int_curve(q, sigma)  # (..., n_int), exact, one step
    e_int = rdp_epsilon_terms(alpha[int_idx], steps[..., None] * r_int, log_delta[..., None], method)
    j = jnp.argmin(e_int, axis=-1)
    best_int = jnp.take_along_axis(e_int, j[..., None], -1)[..., 0]
    # Certified lower bounds on the RDP at the fractional orders.  K(a) = (a - 1) D_a is convex with K(1) = 0,
    # so K lies above the extension of every chord beyond its end points: the chords through the two known
    # points just below alpha and the two just above bound K(alpha) from below; so does monotonicity,
    # D_alpha >= D_(point below).  The integer series is exact to ~1e-15: end points are moved 1e-12 toward
    # the safe side.
    pts = np.concatenate([[1.0], orders[int_idx]])  # known points of K: 1 and the integer orders
    kpts = jnp.concatenate([jnp.zeros(r_int.shape[:-1] + (1,)), (alpha[int_idx] - 1.0) * r_int], axis=-1)
    lo_k, hi_k = kpts * (1.0 - 1e-12), kpts * (1.0 + 1e-12)
    af = orders[frac_idx]
    p = np.searchsorted(pts, af, side="right") - 1  # pts[p] < alpha < pts[p + 1] (p >= 0 since alpha > 1)
    n_pts = pts.size
    t = jnp.asarray(af)
    # monotonicity: K(alpha) >= (alpha - 1) D_(pts[p]) (nothing when pts[p] = 1)
    bounds = [(t - 1.0) * lo_k[..., p] / np.maximum(pts[p] - 1.0, 1.0) * (pts[p] > 1.0)]
    has_left = p >= 1
    pl = np.maximum(p - 1, 0)
    slope_l = (lo_k[..., p] - hi_k[..., pl]) / np.where(has_left, pts[p] - pts[pl], 1.0)
    bounds.append(jnp.where(jnp.asarray(has_left), lo_k[..., p] + (t - pts[p]) * slope_l, 0.0))
    has_right = p + 2 < n_pts
    pr1, pr2 = np.minimum(p + 1, n_pts - 1), np.minimum(p + 2, n_pts - 1)
    slope_r = (hi_k[..., pr2] - lo_k[..., pr1]) / np.where(has_right, pts[pr2] - pts[pr1], 1.0)
    bounds.append(jnp.where(jnp.asarray(has_right), lo_k[..., pr1] - (pts[pr1] - t) * slope_r, 0.0))
    k_lb = jnp.maximum(jnp.maximum(bounds[0], bounds[1]), jnp.maximum(bounds[2], 0.0))
    r_floor = steps[..., None] * k_lb / (t - 1.0)
    lb = rdp_epsilon_terms(alpha[frac_idx], r_floor, log_delta[..., None], method)
    cand = lb < best_int[..., None]
    certified = jnp.sum(cand, axis=-1) <= PRUNED_CANDIDATES
    score = jnp.where(cand, -lb, -jnp.inf)
    top, k = jax.lax.top_k(score, PRUNED_CANDIDATES)
    a_k = alpha[jnp.asarray(frac_idx)[k]]
    kw = {} if curve.n_panels is None else {"n_panels": curve.n_panels}
    r_k = steps[..., None] * jnp.logaddexp(0.0, log_a_minus_one_fractional(q[..., None], sigma[..., None], a_k,
                                                                           **kw)) / (a_k - 1.0)
    e_k = jnp.where(jnp.isfinite(top), rdp_epsilon_terms(a_k, r_k, log_delta[..., None], method), jnp.inf)
    m = jnp.argmin(e_k, axis=-1)
    best_k = jnp.take_along_axis(e_k, m[..., None], -1)[..., 0]
    use_k = best_k < best_int
    best = jnp.where(use_k, best_k, best_int)
    idx = jnp.where(use_k, jnp.asarray(frac_idx)[jnp.take_along_axis(k, m[..., None], -1)[..., 0]],
                    jnp.asarray(int_idx)[j])

    def full(_):
        e = rdp_epsilon_terms(alpha, steps[..., None] * curve(q, sigma), log_delta[..., None], method)
        i = jnp.argmin(e, axis=-1)
        return jnp.take_along_axis(e, i[..., None], -1)[..., 0], i.astype(idx.dtype)

    return jax.lax.cond(jnp.all(certified), lambda _: (best, idx), full, None)


def _dpsgd_eps_kernel(curve, at_order, sigma, q, steps, log_delta, method, refine, n_iter=REFINE_STEPS):
    """eps of DP-SGD (jnp): best order of the grid (exact, pruned), then the continuous refinement."""
    alpha = jnp.asarray(curve.orders)
    best, idx = _grid_best_pruned(curve, sigma, q, steps, log_delta, method)
    best_alpha = alpha[idx]
    if not refine:
        return best, best_alpha
    from .conversions import _neighbour_bracket

    lo, hi = _neighbour_bracket(alpha, idx)
    return refine_order(at_order, best, best_alpha, lo, hi, log_delta, (q, sigma, steps), method, n_iter)


@float64_jit(static_argnames=("curve", "at_order", "method", "refine"))
def _dpsgd_eps_jit(sigma, q, steps, log_delta, curve, at_order, method, refine):
    return _dpsgd_eps_kernel(curve, at_order, sigma, q, steps, log_delta, method, refine)


def _check_dpsgd(sigma, q, steps, delta):
    s = V.positive("sigma", sigma)
    qq = V.probability("q", q)
    t = V.nonnegative("steps", steps)
    d = V.unit_open("delta", delta)
    shape = V.broadcastable(sigma=s, q=qq, steps=t, delta=d)
    return s, qq, t, d, shape


def dpsgd_epsilon(*, sigma, q, steps, delta, orders=None, method="balle2020", optimize_order=True) -> EpsilonResult:
    """eps of DP-SGD: ``steps`` compositions of the Poisson-subsampled Gaussian (rate q, noise multiplier sigma).

    RDP exact at every order (Mironov, Talwar, Zhang 2019), composed (Mironov 2017, Prop. 1), converted at
    ``delta`` (Balle et al. 2020 by default), minimised over the orders grid and then continuously between
    the best order's neighbours.  Returns (epsilon, order), broadcast over all four parameters.
    """
    s, qq, t, d, shape = _check_dpsgd(sigma, q, steps, delta)
    V.one_of("method", method, METHODS)
    a = np.sort(V.orders("orders", DEFAULT_ORDERS if orders is None else orders))
    n_panels = _n_panels(s, a, qq)
    curve = SGMCurve(a, n_panels)
    with x64_scope():
        (bs, bq, bt, bd), n = _flat_padded(shape, s, qq, t, np.log(d))
        eps, order = _dpsgd_eps_jit(bs, bq, bt, bd, curve, _SGMAtOrder(n_panels), method, bool(optimize_order))
        return EpsilonResult(_unpad(eps, n, shape), _unpad(order, n, shape))


class _DPSGDGridEps:
    """fn(sigma, q, steps, log_delta) -> eps on a fixed grid (for the bisection); hashable."""

    def __init__(self, curve, method):
        self.curve, self.method = curve, method

    def __hash__(self):
        return hash((self.curve, self.method))

    def __eq__(self, other):
        return isinstance(other, _DPSGDGridEps) and (self.curve, self.method) == (other.curve, other.method)

    def __call__(self, sigma, q, steps, log_delta):
        return _dpsgd_eps_kernel(self.curve, None, sigma, q, steps, log_delta, self.method, False)[0]


#: Golden-section steps of the calibration's local accountant: its eps is never below the full accountant's
#: (fewer steps can only raise it); 12 steps leave ~1e-7 relative in eps, inside the default rtol of sigma.
LOCAL_REFINE_STEPS = 12


class _DPSGDLocalEps:
    """eps on the 5 grid orders around a given centre index, then the continuous refinement (20 steps).

    Any order gives a valid bound and the golden-section minimum never increases with more steps, so this
    eps is never below the full accountant's (:func:`dpsgd_epsilon`): a sigma feasible for it is feasible
    for the full accountant.  Near the answer the full accountant's best grid order lies in the window, and
    then the two agree to the refinement's tolerance.  Hashable (static).
    """

    def __init__(self, curve, at_order, method, n_iter=20, half_width=2):
        self.curve, self.at_order, self.method, self.n_iter, self.half_width = curve, at_order, method, n_iter, half_width

    def _key(self):
        return (self.curve, self.at_order, self.method, self.n_iter, self.half_width, "local")

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, _DPSGDLocalEps) and self._key() == other._key()

    def __call__(self, sigma, q, steps, log_delta, center):
        from ._subsampled_gaussian import log_a_minus_one_fractional
        from .conversions import _neighbour_bracket

        orders = jnp.asarray(self.curve.orders)
        n = orders.shape[0]
        offs = jnp.arange(-self.half_width, self.half_width + 1)
        idx = jnp.clip(center.astype(jnp.int32)[..., None] + offs, 0, n - 1)
        alpha = orders[idx]
        kw = {} if self.curve.n_panels is None else {"n_panels": self.curve.n_panels}
        log_am1 = log_a_minus_one_fractional(q[..., None], sigma[..., None], alpha, **kw)
        grid = steps[..., None] * jnp.logaddexp(0.0, log_am1) / (alpha - 1.0)
        e = rdp_epsilon_terms(alpha, grid, log_delta[..., None], self.method)
        j = jnp.argmin(e, axis=-1)
        best = jnp.take_along_axis(e, j[..., None], -1)[..., 0]
        gidx = jnp.take_along_axis(idx, j[..., None], -1)[..., 0]
        lo, hi = _neighbour_bracket(orders, gidx)
        eps, _ = refine_order(self.at_order, best, orders[gidx], lo, hi, log_delta, (q, sigma, steps), self.method,
                              self.n_iter)
        return eps


@float64_jit(static_argnames=("coarse", "local", "rtol_static"))
def _calibrate_jit(target, q, steps, log_delta, lo, hi, coarse, local, rtol_static):
    """Three stages, each a while_loop over the whole batch:

    1. Illinois steps with the coarse-grid accountant to relative 1e-3 (its eps is never below the full
       accountant's, so its answer is feasible for the full accountant);
    2. the best order of the full grid at that answer;
    3. Illinois steps with the local accountant around that order (eps never below the full accountant's)
       between the range's lower end and the stage-1 answer, to ``rtol``.
    """
    st1 = invert_monotone_kernel(coarse, target, (q, steps, log_delta), lo, hi, above=True, rtol=1e-3,
                                 integer=False, illinois=True)
    _, center = _grid_best_pruned(local.curve, st1.value, q, steps, log_delta, local.method)
    center = center.astype(jnp.float64)
    st2 = invert_monotone_kernel(local, target, (q, steps, log_delta, center), lo, st1.value, above=True,
                                 rtol=rtol_static, integer=False, illinois=True)
    value = jnp.where(st1.status == INFEASIBLE, hi, st2.value)
    status = jnp.where(st1.status == INFEASIBLE, INFEASIBLE, st2.status)
    # The re-check: st2.achieved is eps at the returned sigma, computed by the local accountant, which is
    # never below the full accountant's.
    eps = jnp.where(st1.status == INFEASIBLE, st1.achieved, st2.achieved)
    return value, eps, status


def dpsgd_calibrate_sigma(
    *, target_epsilon, q, steps, delta, orders=None, method="balle2020", rtol=1e-6, sigma_range=(0.05, 2e3)
) -> Calibration:
    """Minimal noise multiplier sigma with ``dpsgd_epsilon(sigma, q, steps, delta) <= target_epsilon``.

    Batched over all numeric arguments.  Returns (sigma, epsilon, status): sigma is on the feasible
    side (re-checked: epsilon <= target), within ``rtol`` of the boundary of the accountant used by
    :func:`dpsgd_epsilon` with the same orders.  Targets no sigma in ``sigma_range`` meets get status
    INFEASIBLE (sigma = the range's upper end), never NaN.
    """
    e = V.positive("target_epsilon", target_epsilon)
    qq = V.probability("q", q)
    t = V.nonnegative("steps", steps)
    d = V.unit_open("delta", delta)
    V.one_of("method", method, METHODS)
    lo, hi = (float(x) for x in sigma_range)
    if not (0 < lo < hi):
        raise ValueError(f"Expected 0 < sigma_range[0] < sigma_range[1], got sigma_range={sigma_range!r}.")
    r = float(V.positive("rtol", rtol))
    shape = V.broadcastable(target_epsilon=e, q=qq, steps=t, delta=d)
    a = np.sort(V.orders("orders", DEFAULT_ORDERS if orders is None else orders))
    # the bisection visits any sigma of the range: size the quadrature for a dense grid of it
    n_panels = _n_panels(np.geomspace(lo, hi, 97), np.concatenate([a, CALIBRATION_ORDERS]), qq)
    local = _DPSGDLocalEps(SGMCurve(a, n_panels), _SGMAtOrder(n_panels), method, n_iter=LOCAL_REFINE_STEPS)
    coarse = _DPSGDGridEps(SGMCurve(CALIBRATION_ORDERS, n_panels), method)
    with x64_scope():
        (be, bq, bt, bd, blo, bhi), n = _flat_padded(shape, e, qq, t, np.log(d), lo, hi)
        value, eps, status = _calibrate_jit(be, bq, bt, bd, blo, bhi, coarse, local, r)
        return Calibration(_unpad(value, n, shape), _unpad(eps, n, shape), _unpad(status, n, shape))


# ----------------------------------------------------------------------------------------------------------
# Dispatch by mechanism name (command line, sweeps)

#: Mechanisms the command line and sweeps know, with the parameters each takes.
MECHANISMS = {
    "poisson-gaussian": ("sigma", "q", "steps"),
    "gaussian": ("sigma", "steps"),
    "laplace": ("scale", "steps"),
    "randomized-response": ("eps0", "k", "steps"),
}


def epsilon(mechanism: str, *, delta, orders=None, method="balle2020", **params) -> EpsilonResult:
    """eps at delta of a named mechanism composed over ``steps`` (see :data:`MECHANISMS`), optimal order."""
    V.one_of("mechanism", mechanism, MECHANISMS)
    needed = MECHANISMS[mechanism]
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

    a = np.sort(V.orders("orders", DEFAULT_ORDERS if orders is None else orders))
    t = V.nonnegative("steps", steps)
    if mechanism == "gaussian":
        return optimal_epsilon(_gaussian_steps, delta=delta, args=(V.positive("sigma", params["sigma"]), t),
                               orders=a, method=method)
    if mechanism == "laplace":
        curve = R.laplace_rdp(a, scale=params["scale"])
    else:
        curve = R.randomized_response_rdp(a, eps0=params["eps0"], k=params.get("k", 2))
    with x64_scope():
        total = jnp.asarray(t)[..., None] * curve
    return epsilon_from_rdp(a, total, delta=delta, method=method)


def _gaussian_steps(alpha, sigma, steps):
    return steps * alpha / (2.0 * sigma * sigma)


def calibrate_sigma(mechanism: str, *, target_epsilon, delta, orders=None, method="balle2020", rtol=1e-6,
                    **params) -> Calibration:
    """Minimal sigma for a named Gaussian-noise mechanism (``poisson-gaussian`` or ``gaussian``)."""
    V.one_of("mechanism", mechanism, ("poisson-gaussian", "gaussian"))
    q = params.get("q", 1.0) if mechanism == "poisson-gaussian" else 1.0
    if mechanism == "poisson-gaussian" and "q" not in params:
        raise ValueError("Expected parameter q for mechanism='poisson-gaussian'.")
    return dpsgd_calibrate_sigma(target_epsilon=target_epsilon, q=q, steps=params.get("steps", 1.0),
                                 delta=delta, orders=orders, method=method, rtol=rtol)
