"""The RDP accountant of DP-SGD (private): eps of ``steps`` Poisson-subsampled Gaussian steps and the calibration
of its noise, on checked values, below both front doors that use it.

:mod:`amplify_jax.accounting.accountants` is the public front (``dpsgd_epsilon``, ``dpsgd_calibrate_sigma``, with
their ``accountant=`` switch); the PLD (:mod:`amplify_jax.accounting.pld`) compares its DP-SGD answers with this
accountant's (issue 26: never looser than the library's own RDP) through :func:`rdp_epsilon_door` and
:func:`rdp_calibrate_door`.  Both import this module, and it imports neither (issue 29: the PLD no longer
imports the front that routes to it).

The Poisson-subsampled Gaussian of Mironov, Talwar, Zhang 2019, composed over ``steps`` and converted with the
optimal order, :mod:`amplify_jax.conversions`.  Everything broadcasts over the numeric parameters; the orders
grid is the only static input.  Batches run in slabs of one fixed size
(:func:`amplify_jax._core.numerics.run_in_slabs`) and each point takes its own number of quadrature panels
(:data:`amplify_jax.accounting._subsampled_gaussian.AUTO`: its need plus a margin, in a loop), so one compiled
program answers every grid size, sigma range, rate, delta and target, and a point's answer does not depend on
its batch.  ``devices=`` lays a batch out over several devices.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

from .._core import host as _host
from .._core import validate as V
from .calibrate import INFEASIBLE, invert_monotone_kernel
from .conversions import METHODS, EpsilonResult, refine_order, rdp_epsilon_terms
from ._subsampled_gaussian import AUTO, MESH_PANELS
from .._core.numerics import float64_jit, run_in_slabs, x64_scope
from .rdp import DEFAULT_ORDERS, MAX_ORDER, SGMCurve, raise_tiny_rate

__all__ = ["Calibration", "rdp_epsilon", "rdp_calibrate_sigma", "rdp_epsilon_door", "rdp_calibrate_door",
           "dpsgd_n_panels", "DEFAULT_SIGMA_RANGE", "SIGMA_LIMIT"]


class Calibration(NamedTuple):
    """The minimal noise multiplier for a target eps (:func:`dpsgd_calibrate_sigma`, :func:`calibrate_sigma`):
    the feasible end of the search, with eps recomputed there."""

    sigma: jax.Array  #: the minimal noise multiplier found (feasible side)
    epsilon: jax.Array  #: eps at that sigma: dpsgd_epsilon's value there (the re-check), <= target where OK
    status: jax.Array  #: calibrate.OK / INFEASIBLE / AT_LIMIT / NOT_MONOTONE


class _SGMAtOrder:
    """rdp_fn(alpha, q, sigma, steps) for the continuous order search (hashable by its panel count: ``AUTO``,
    each point its own, or a fixed integer, as :class:`amplify_jax.rdp.SGMCurve`)."""

    def __init__(self, panels):
        self.panels = panels

    def _key(self):
        return ("sgm", self.panels)

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, _SGMAtOrder) and other.panels == self.panels

    @property
    def mesh_limit(self):
        """Most panels a shared search mesh holds (``bracket_nodes``): brackets needing more are searched on
        exact evaluations."""
        return MESH_PANELS if self.panels == AUTO else self.panels

    def __call__(self, alpha, q, sigma, steps):
        from ._subsampled_gaussian import log_a_minus_one_fractional

        log_am1 = log_a_minus_one_fractional(q, sigma, alpha, n_panels=self.panels)
        return steps * jnp.logaddexp(0.0, log_am1) / (alpha - 1.0)


def _check_devices(devices):
    """None, or a non-empty sequence of jax devices as a tuple."""
    if devices is None:
        return None
    devs = tuple(np.asarray(devices, dtype=object).ravel())
    if not devs or not all(isinstance(d, jax.Device) for d in devs):
        raise ValueError(f"Expected devices to be a non-empty sequence of jax devices, got devices={devices!r}.")
    return devs


def _check_n_panels(n_panels):
    """The panel count of the quadrature: ``AUTO`` (each point its own) for None, else a static integer >= 3."""
    return AUTO if n_panels is None else int(V.integer("n_panels", n_panels, minimum=3))


def _check_sigma_range(sigma_range):
    lo, hi = (float(x) for x in sigma_range)
    if not (0 < lo < hi):
        raise ValueError(f"Expected 0 < sigma_range[0] < sigma_range[1], got sigma_range={sigma_range!r}.")
    return lo, hi


_KNOWN_REL = 1e-9  #: Relative margin of the pruning's chord bounds around the integer orders' RDP (rounded up)


def _sorted_orders(orders):  # orders up to rdp.MAX_ORDER (the integer series has alpha + 1 terms: see there)
    return np.sort(V.orders("orders", DEFAULT_ORDERS if orders is None else orders, maximum=MAX_ORDER))


_SORTED_DEFAULT_ORDERS = _sorted_orders(None)  #: the default grid, checked and sorted once (for ``_bounds.py``)


def _n_panels(sigma, orders, q=None):
    """Static quadrature panel count for the fractional orders, probed at the given sigma, orders and q.

    The continuous order search may evaluate any order between the grid's neighbours (and up to 4x its top),
    and the panels a fractional order needs peak between grid orders (e.g. 10 near alpha = 78 at sigma = 2.39,
    q = 1e-3, where the integer grid orders 64 and 80 need at most 7), so the probe is the grid plus a dense
    log-spaced set of ``ORDER_PROBE`` orders over the whole range the search can reach: a point's answer does
    not depend on the other points of its batch.  A point given fewer panels than it needs still falls back to
    a valid but loose bound (see :mod:`amplify_jax.accounting._subsampled_gaussian`): sound either way.
    """
    from ._subsampled_gaussian import choose_n_panels

    s = np.unique(np.asarray(sigma, dtype=np.float64).ravel())
    a = np.asarray(orders, dtype=np.float64).ravel()
    top = min(1 + 4 * (a.max() - 1), 4096.0)
    dense = np.geomspace(a.min(), top, ORDER_PROBE) if top > a.min() else a[:1]
    a = np.unique(np.concatenate([a, dense, [top]]))
    qq = None if q is None else np.unique(np.asarray(q, dtype=np.float64).ravel())
    return choose_n_panels(s, a, qq, alpha_probe=ORDER_PROBE_SIZE, alpha_exhaustive=False)


#: Log-spaced orders added to the panel probe (about 3.3% apart over [1.01, 4096]; the margin of
#: ``choose_n_panels`` covers the need between them), and the probe's fixed size (the grid's orders and these,
#: or quantiles of them beyond it).
ORDER_PROBE = 256
ORDER_PROBE_SIZE = 448


#: Fractional grid orders per batch point evaluated exactly in one step of the pruned grid search: the
#: candidates of the whole batch are gathered into one flat list and evaluated in blocks of this many per point.
COMPACT_BLOCK = 6
#: Most evaluations of Brent's continuous order search in dpsgd_epsilon (conversions.refine_order), started
#: from the best grid order; it stops when every point has converged.  The result is never above the grid's
#: best whatever the number of steps.
REFINE_STEPS = 32


#: Integer orders up to this one (or up to the second integer order above the largest fractional one, if
#: higher) are always evaluated exactly; the higher ones only where their lower bound could beat them.
INTEGER_SPLIT = 32


def _integer_rdp_or_bounds(int_orders, frac_orders, n_panels, sigma, q, steps, log_delta, method):
    """(One-step RDP, eps) at the integer orders of a grid: exact (MTZ's finite series), or, at high orders
    that cannot be the grid's best, certified lower bounds (shapes (..., n_int)).

    The series costs alpha + 1 terms per order, so the high orders (128 to 1024 in the usual grids) cost
    most of it, and they are rarely optimal.  The orders up to ``INTEGER_SPLIT`` (and up to the second
    integer order above every fractional one, so that the chords of ``_fractional_lower_bounds`` only use
    exact points) are evaluated first.  K(alpha) = (alpha - 1) D_alpha is convex with K(1) = 0, so beyond the
    last two of them, a < b, K(h) >= K(b) + (h - b) (K(b) - K(a)) / (b - a), and D_h >= D_b (monotonicity).
    Where that lower bound's eps is above the best exact eps for every point of the batch, those orders
    cannot be the grid's best and keep their lower bound (which ranks them correctly); otherwise the whole
    batch evaluates them exactly (``lax.cond``).
    """
    frac_max = frac_orders.max() if frac_orders.size else 1.0
    above = int_orders[int_orders > frac_max]
    split = max(INTEGER_SPLIT, above[1] if above.size >= 2 else np.inf)
    low, high = int_orders[int_orders <= split], int_orders[int_orders > split]
    def eps(orders, r):
        return rdp_epsilon_terms(jnp.asarray(orders), steps[..., None] * r, log_delta[..., None], method)

    if high.size == 0 or low.size < 2:
        r = SGMCurve(int_orders, n_panels)(q, sigma)
        return r, eps(int_orders, r)
    r_low = SGMCurve(low, n_panels)(q, sigma)
    e_low = eps(low, r_low)
    best_low = jnp.min(e_low, axis=-1)
    a, b = low[-2], low[-1]
    k_a = (a - 1.0) * r_low[..., -2] * (1.0 + _KNOWN_REL)  # upper end of the chord's left point
    k_b = (b - 1.0) * r_low[..., -1] * (1.0 - _KNOWN_REL)  # lower end of its right point
    h = jnp.asarray(high)
    k_lb = jnp.maximum(k_b[..., None] + (h - b) * ((k_b - k_a) / (b - a))[..., None],
                       (h - 1.0) * (k_b / (b - 1.0))[..., None])
    r_lb = k_lb / (h - 1.0)
    e_lb = eps(high, r_lb)
    needed = jnp.any(e_lb <= best_low[..., None])

    def exact_high(_):
        r = SGMCurve(high, n_panels)(q, sigma)
        return r, eps(high, r)

    r_high, e_high = jax.lax.cond(needed, exact_high, lambda _: (r_lb, e_lb), None)
    return jnp.concatenate([r_low, r_high], axis=-1), jnp.concatenate([e_low, e_high], axis=-1)


def _fractional_lower_bounds(curve, sigma, q, steps, log_delta, method):
    """(certified lower bounds on eps at the grid's fractional orders, best integer order's eps, its index)."""
    orders = np.asarray(curve.orders)
    alpha = jnp.asarray(orders)
    int_idx = np.nonzero(orders == np.round(orders))[0]
    frac_idx = np.nonzero(orders != np.round(orders))[0]
    r_int, e_int = _integer_rdp_or_bounds(orders[int_idx], orders[frac_idx], curve.n_panels, sigma, q, steps,
                                          log_delta, method)
    j = jnp.argmin(e_int, axis=-1)
    best_int = jnp.take_along_axis(e_int, j[..., None], -1)[..., 0]
    # Certified lower bounds on the RDP at the fractional orders.  K(a) = (a - 1) D_a is convex with K(1) = 0,
    # so K lies above the extension of every chord beyond its end points: the chords through the two known
    # points just below alpha and the two just above bound K(alpha) from below; so does monotonicity,
    # D_alpha >= D_(point below).  The integer series is rounded up by its error bound (<< 1e-9 relative at
    # the default orders): end points move _KNOWN_REL to the safe side.  (High integer orders may hold lower
    # bounds, _integer_rdp_or_bounds; no chord below uses them, and they rank above the best.)
    pts = np.concatenate([[1.0], orders[int_idx]])  # known points of K: 1 and the integer orders
    kpts = jnp.concatenate([jnp.zeros(r_int.shape[:-1] + (1,)), (alpha[int_idx] - 1.0) * r_int], axis=-1)
    lo_k, hi_k = kpts * (1.0 - _KNOWN_REL), kpts * (1.0 + _KNOWN_REL)
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
    return lb, best_int, j


def _pruned_candidates(curve, sigma, q, steps, log_delta, method="balle2020"):
    """Number of fractional grid orders per point that the pruning evaluates exactly (for benchmarks)."""
    lb, best_int, _ = _fractional_lower_bounds(curve, sigma, q, steps, log_delta, method)
    return jnp.sum(lb < best_int[..., None], axis=-1)


def _grid_best_pruned(curve, sigma, q, steps, log_delta, method):
    """(best eps over the whole grid, its index): exact, with most fractional orders pruned.

    Integer orders are exact and cheap (a finite series).  Rényi divergences are non-decreasing in the order
    and (alpha - 1) D_alpha is convex, so the integer orders give certified lower bounds on eps at every
    fractional order (the conversion is increasing in the RDP).  Only fractional orders whose lower bound is
    below the best integer order's eps can be the grid's best: those (point, order) pairs of the whole batch
    are gathered into one flat list and evaluated exactly in blocks of ``COMPACT_BLOCK`` pairs per point,
    in a loop as long as the list (one copy of the quadrature in the program, however many candidates), so
    the result always equals the full grid's minimum.
    """
    from ._subsampled_gaussian import log_a_minus_one_fractional

    orders = np.asarray(curve.orders)
    alpha = jnp.asarray(orders)
    int_idx = np.nonzero(orders == np.round(orders))[0]
    frac_idx = np.nonzero(orders != np.round(orders))[0]

    if frac_idx.size == 0 or int_idx.size == 0:
        e = rdp_epsilon_terms(alpha, steps[..., None] * curve(q, sigma), log_delta[..., None], method)
        i = jnp.argmin(e, axis=-1)
        return jnp.take_along_axis(e, i[..., None], -1)[..., 0], i
    lb, best_int, j = _fractional_lower_bounds(curve, sigma, q, steps, log_delta, method)
    cand = lb < best_int[..., None]
    total = jnp.sum(cand)
    frac_alpha = alpha[jnp.asarray(frac_idx)]
    kw = {} if curve.n_panels is None else {"n_panels": curve.n_panels}
    batch = int(np.prod(cand.shape[:-1], dtype=np.int64))
    n_frac = frac_idx.size
    block = max(8, COMPACT_BLOCK * batch)
    n_blocks = -(-(batch * n_frac) // block)
    # every candidate pair (point, order) first, padded to whole blocks
    flat_all = jnp.nonzero(cand.reshape(-1), size=n_blocks * block, fill_value=0)[0]

    def g(x, pt):
        return jnp.broadcast_to(x, cand.shape[:-1]).reshape(-1)[pt]

    def run_block(k, carry):
        best_c, j_c = carry
        flat = lax.dynamic_slice_in_dim(flat_all, k * block, block)
        valid = k * block + jnp.arange(block) < total
        pt, jj = flat // n_frac, flat % n_frac
        a_c = frac_alpha[jj]
        r_c = (g(steps, pt) * jnp.logaddexp(0.0, log_a_minus_one_fractional(g(q, pt), g(sigma, pt), a_c, **kw))
               / (a_c - 1.0))
        e_c = jnp.where(valid, rdp_epsilon_terms(a_c, r_c, g(log_delta, pt), method), jnp.inf)
        seg = jnp.where(valid, pt, batch)  # padding goes to a dropped segment
        best_b = jax.ops.segment_min(e_c, seg, num_segments=batch + 1)[:batch]
        is_best = valid & (e_c == best_b[pt])
        j_b = jax.ops.segment_max(jnp.where(is_best, jj, -1), seg, num_segments=batch + 1)[:batch]
        # the smallest eps so far; among equal ones the highest order (as one flat pass would choose)
        take = (best_b < best_c) | ((best_b == best_c) & (j_b > j_c))
        return jnp.where(take, best_b, best_c), jnp.where(take, j_b, j_c)

    init = (jnp.full((batch,), jnp.inf), jnp.full((batch,), -1, dtype=flat_all.dtype))
    best_c, j_c = lax.fori_loop(0, (total + block - 1) // block, run_block, init)
    best_c = best_c.reshape(cand.shape[:-1])
    j_c = j_c.reshape(cand.shape[:-1])
    use = best_c < best_int
    best = jnp.where(use, best_c, best_int)
    idx = jnp.where(use, jnp.asarray(frac_idx)[jnp.maximum(j_c, 0)], jnp.asarray(int_idx)[j])
    return best, idx


def _dpsgd_eps_kernel(curve, at_order, sigma, q, steps, log_delta, method, refine, n_iter=REFINE_STEPS):
    """eps of DP-SGD (jnp).  ``refine=False``: the grid's best order (exact, pruned, ``_grid_best_pruned``).
    ``refine=True``: the continuous optimum, found on shared quadrature meshes (``_dpsgd_eps_shared``)."""
    if refine:
        return _dpsgd_eps_shared(curve, at_order, sigma, q, steps, log_delta, method, n_iter)
    best, idx = _grid_best_pruned(curve, sigma, q, steps, log_delta, method)
    return best, jnp.asarray(curve.orders)[idx]


def _dpsgd_eps_exact_search(curve, at_order, sigma, q, steps, log_delta, method, n_iter):
    """The grid's best order (exact, pruned), then Brent's search between its neighbours on exact evaluations."""
    from .conversions import _neighbour_bracket

    alpha = jnp.asarray(curve.orders)
    best, idx = _grid_best_pruned(curve, sigma, q, steps, log_delta, method)
    lo, hi = _neighbour_bracket(alpha, idx)
    return refine_order(at_order, best, alpha[idx], lo, hi, log_delta, (q, sigma, steps), method, n_iter)


def _bracket_rdp(alpha, nodes, steps):
    """RDP of DP-SGD at alpha from a bracket's shared quadrature nodes (a search aid, see _dpsgd_eps_shared)."""
    from ._subsampled_gaussian import bracket_log_a_minus_one

    return steps * jnp.logaddexp(0.0, bracket_log_a_minus_one(nodes, alpha)) / (alpha - 1.0)


class _MeshOrExact:
    """rdp_fn(alpha, nodes, steps, q, sigma, bad) for the searches of _dpsgd_eps_shared: the shared mesh's
    value, and the exact quadrature's (``at_order``) at the points flagged ``bad``, computed (for the whole
    batch, under ``lax.cond``) only when some point is flagged.  One compiled search serves both."""

    def __init__(self, at_order):
        self.at_order = at_order

    def __call__(self, alpha, nodes, steps, q, sigma, bad):
        mesh = _bracket_rdp(alpha, nodes, steps)
        return jax.lax.cond(jnp.any(bad), lambda _: jnp.where(bad, self.at_order(alpha, q, sigma, steps), mesh),
                            lambda _: mesh, None)


def _mesh_args(at_order, q, sigma, steps, lo, hi):
    """The arguments of _MeshOrExact for brackets [lo, hi]: the shared mesh (``bracket_nodes``, with
    ``at_order``'s panel count), steps, q, sigma, and the points the mesh is too coarse for."""
    from ._subsampled_gaussian import bracket_nodes

    nodes = bracket_nodes(q, sigma, lo, hi, n_panels=at_order.panels)
    return nodes, steps, q, sigma, nodes.need > at_order.mesh_limit


def _search_on_mesh(at_order, start_eps, start_alpha, lo, hi, mesh_args, log_delta, method, n_iter):
    """Brent's search (``conversions.refine_order``) between lo and hi on the mesh of ``_mesh_args``, from a
    known order, then the exact eps (``at_order``) at the order found, in the same loop: (eps, order)."""
    exact = mesh_args[:-1] + (jnp.ones_like(mesh_args[-1]),)  # every point flagged: the exact quadrature
    return refine_order(_MeshOrExact(at_order), start_eps, start_alpha, lo, hi, log_delta, mesh_args, method,
                        n_iter, final_args=exact)


def _dpsgd_eps_shared(curve, at_order, sigma, q, steps, log_delta, method, n_iter):
    """eps of DP-SGD at the continuous optimal order, with one quadrature mesh per point.

    1. Integer orders exactly (finite series), and certified lower bounds at the fractional orders
       (``_fractional_lower_bounds``): only fractional orders whose bound is below the best integer order's
       eps can be the grid's best (the candidates).
    2. One mesh per point for the bracket from the lower grid neighbour of the lowest candidate (or of the
       best integer order) to the upper neighbour of the highest (``bracket_nodes``); the candidates are
       ranked on it (two transcendental functions per node and order, no plan), which gives the grid's best
       order alpha_g (the mesh's values agree with the exact quadrature to ~1e-11 where it needs no more
       panels than it has: tests/test_subsampled_gaussian.py).
    3. Brent's search between alpha_g's grid neighbours on the same mesh (``conversions.refine_order``).
    4. The exact eps (``at_order``: the certified quadrature) at the order found, kept where it beats the
       best integer order (exact too).  So the value returned is always an exact eps at the order returned
       (sound whatever the mesh did); the mesh only chooses the order, and the result is the grid's best
       or better up to the mesh's ~1e-11 agreement with the exact values.

    Points whose mesh needs more panels than ``at_order.panels`` (brackets at high orders, where the mass
    moves with alpha) are ranked and searched on exact evaluations instead (``_MeshOrExact``): the whole
    batch then pays for them, only in the batches that have such points.
    """
    from .conversions import _neighbour_bracket

    shape = jnp.broadcast_shapes(*(jnp.shape(x) for x in (sigma, q, steps, log_delta)))
    flat = lambda x: jnp.broadcast_to(x, shape).reshape(-1)  # noqa: E731
    sigma, q, steps, log_delta = map(flat, (sigma, q, steps, log_delta))
    orders = np.asarray(curve.orders)
    alpha = jnp.asarray(orders)
    int_idx = np.nonzero(orders == np.round(orders))[0]
    frac_idx = np.nonzero(orders != np.round(orders))[0]

    if frac_idx.size == 0 or int_idx.size == 0:
        eps, a = _dpsgd_eps_exact_search(curve, at_order, sigma, q, steps, log_delta, method, n_iter)
        return eps.reshape(shape), a.reshape(shape)
    lb, best_int, j = _fractional_lower_bounds(curve, sigma, q, steps, log_delta, method)
    cand = lb < best_int[:, None]
    n_frac = frac_idx.size
    pos = jnp.arange(n_frac)
    jmin = jnp.min(jnp.where(cand, pos, n_frac), axis=-1)
    jmax = jnp.max(jnp.where(cand, pos, -1), axis=-1)
    span = jnp.maximum(jmax - jmin + 1, 0)
    i_int = jnp.asarray(int_idx)[j]
    f_idx = jnp.asarray(frac_idx)
    any_c = span > 0
    i_lo = jnp.where(any_c, jnp.minimum(f_idx[jnp.clip(jmin, 0, n_frac - 1)], i_int), i_int)
    i_hi = jnp.where(any_c, jnp.maximum(f_idx[jnp.clip(jmax, 0, n_frac - 1)], i_int), i_int)
    lo = _neighbour_bracket(alpha, i_lo)[0]
    hi = _neighbour_bracket(alpha, i_hi)[1]
    mesh_args = _mesh_args(at_order, q, sigma, steps, lo, hi)
    bad = mesh_args[-1]
    rank = _MeshOrExact(at_order)
    frac_alpha = alpha[f_idx]

    # one order per step for the whole batch (a broadcast (batch, width) evaluation fuses far worse), as many
    # steps as the widest span of candidates
    def step(i, c):
        e_b, i_b = c
        k = jnp.clip(jmin, 0, n_frac - 1) + i
        kc = jnp.minimum(k, n_frac - 1)
        ok = (k <= jmax) & jnp.take_along_axis(cand, kc[:, None], axis=-1)[:, 0]
        a_k = frac_alpha[kc]
        # exact evaluations only where the mesh is too coarse for a candidate of this step
        e_k = rdp_epsilon_terms(a_k, rank(a_k, *mesh_args[:-1], bad & ok), log_delta, method)
        better = ok & (e_k < e_b)
        return jnp.where(better, e_k, e_b), jnp.where(better, f_idx[kc], i_b)

    e_g, i_g = jax.lax.fori_loop(0, jnp.max(span), step, (best_int, i_int))
    lo_g, hi_g = _neighbour_bracket(alpha, i_g)
    e_star, a_star = _search_on_mesh(at_order, e_g, alpha[i_g], lo_g, hi_g, mesh_args, log_delta, method, n_iter)
    use = e_star < best_int
    eps, a = jnp.where(use, e_star, best_int), jnp.where(use, a_star, alpha[i_int])
    return eps.reshape(shape), a.reshape(shape)


@float64_jit(static_argnames=("curve", "at_order", "method", "refine"), persist=True)
def _dpsgd_eps_jit(sigma, q, steps, log_delta, curve, at_order, method, refine):
    return _dpsgd_eps_kernel(curve, at_order, sigma, q, steps, log_delta, method, refine)


def _check_dpsgd(sigma, q, steps, delta):
    s = V.between("sigma", sigma, 1e-3, 1e10)  # beyond: the quadrature's panel count is NaN or ~1e11 (sigma 1e-10)
    qq = raise_tiny_rate(V.probability("q", q))  # sound: eps grows with q
    t = V.integer("steps", steps, minimum=0).astype(np.float64)  # a count: 1.5 steps is refused
    d = V.unit_open("delta", delta)
    shape = V.broadcastable(sigma=s, q=qq, steps=t, delta=d)
    return s, qq, t, d, shape



def _dpsgd_epsilon(sigma, q, steps, delta, orders, method, panels=AUTO, devices=None, optimize_order=True):
    """:func:`dpsgd_epsilon` on values it (or the registry's domains, ``_bounds.py``) checked: no check repeated."""
    shape = np.broadcast_shapes(*(np.shape(x) for x in (sigma, q, steps, delta)))
    curve = SGMCurve(orders, panels)
    at_order, refine = _SGMAtOrder(panels), bool(optimize_order)
    eps, order = run_in_slabs(lambda *b: _dpsgd_eps_jit(*b, curve, at_order, method, refine), shape,
                              sigma, q, steps, np.log(delta), devices=devices)
    return EpsilonResult(eps, order)


class _DPSGDGridEps:
    """fn(sigma, q, steps, log_delta) -> eps on a fixed grid (for the bisection); hashable."""

    def __init__(self, curve, method):
        self.curve, self.method = curve, method

    def _key(self):
        return (self.curve, self.method)

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, _DPSGDGridEps) and (self.curve, self.method) == (other.curve, other.method)

    def __call__(self, sigma, q, steps, log_delta):
        return _dpsgd_eps_kernel(self.curve, None, sigma, q, steps, log_delta, self.method, False)[0]


LOCAL_REFINE_STEPS = 32  #: Most Brent evaluations of the calibration's local accountant (any order is valid).
#: Integer orders of the calibration's first stage (a finite series each, no quadrature).
COARSE_ORDERS = (2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 16, 20, 24, 28, 32, 40, 48, 56, 64, 96, 128, 256)
COARSE_RTOL = 1e-2  #: Relative tolerance of the first stage.
#: Relative gap below the stage-1 answer where the local stage's bracket starts (where the local accountant
#: is still infeasible there; else the bracket starts at the range's lower end).
LOCAL_BRACKET = 0.03
#: Relative margin below the target for the local stage (sigma moves by ~1e-10 relative, far inside rtol).
LOCAL_MARGIN = 1e-10


class _DPSGDLocalEps:
    """Brent's search from one order of a grid (the centre) between its grid neighbours, then the exact eps at
    the order found.

    Any order gives a valid bound, so this is a valid eps for DP-SGD; near the answer it agrees with the full
    accountant to the search's tolerance (both find the continuous optimum).  Hashable (static).
    """

    def __init__(self, orders, at_order, method, n_iter=LOCAL_REFINE_STEPS):
        self.orders = tuple(float(x) for x in orders)
        self.at_order, self.method, self.n_iter = at_order, method, n_iter

    def _key(self):
        return (self.orders, self.at_order, self.method, self.n_iter, "local")

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, _DPSGDLocalEps) and self._key() == other._key()

    def __call__(self, sigma, q, steps, log_delta, center):
        from .conversions import _neighbour_bracket

        orders = jnp.asarray(self.orders)
        c = center.astype(jnp.int32)
        alpha = orders[c]
        lo, hi = _neighbour_bracket(orders, c)
        # the search on the bracket's shared mesh (exact evaluations where it is too coarse), as in
        # _dpsgd_eps_shared; the value returned is the exact eps at the order found
        mesh_args = _mesh_args(self.at_order, q, sigma, steps, lo, hi)
        e = rdp_epsilon_terms(alpha, _MeshOrExact(self.at_order)(alpha, *mesh_args), log_delta, self.method)
        eps, _ = _search_on_mesh(self.at_order, e, alpha, lo, hi, mesh_args, log_delta, self.method, self.n_iter)
        return eps


def _coarse_orders(a):
    """Orders of the calibration's first stage: a subset of the grid ``a`` (so its eps is never below the full
    accountant's), integer ones of ``COARSE_ORDERS`` where the grid has enough of them (a finite series each,
    no quadrature), else up to 24 log-spaced orders of the grid."""
    pick = a[np.isin(a, np.asarray(COARSE_ORDERS, dtype=np.float64))]
    if pick.size >= 6:
        return pick
    idx = np.unique(np.round(np.geomspace(1, a.size, min(24, a.size))).astype(int) - 1)
    return a[idx]


class _CalibrationPlan:
    """The static pieces of a DP-SGD calibration: the coarse accountant on a subset of the grid, the full
    accountant's curve and continuous search, and the local accountant around a coarse order.  Hashable."""

    def __init__(self, orders, panels, method):
        a = np.sort(np.asarray(orders, dtype=np.float64))
        co = _coarse_orders(a)
        self.coarse = _DPSGDGridEps(SGMCurve(co, panels), method)
        self.curve = SGMCurve(a, panels)
        self.at_order = _SGMAtOrder(panels)
        self.local = _DPSGDLocalEps(co, self.at_order, method)
        self.method = method

    def _key(self):
        return (self.coarse, self.curve, self.local, self.method)

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, _CalibrationPlan) and self._key() == other._key()


def _calibration_n_panels(orders, sigma_range, q_values=None):
    lo, hi = sigma_range
    # the search visits any sigma of the range: size the quadrature for a dense grid of it
    return _n_panels(np.geomspace(lo, hi, 97), orders, q_values)


def dpsgd_n_panels(*, q=None, orders=None, sigma=None, sigma_range=None) -> int:
    """A static quadrature panel count that covers every combination of these values for :func:`dpsgd_epsilon`
    (given ``sigma``) or :func:`dpsgd_calibrate_sigma` (given ``sigma_range``): the probed need plus a margin.

    Those calls need none by default (each point takes its own count, one program for every input); pass this
    as their ``n_panels`` to fix one count for a whole grid (a program per count).  ``sigma``, ``q``: the values to be evaluated (any shapes; q
    omitted: a grid over [1e-8, 1]); ``orders``: the orders grid (default ``rdp.DEFAULT_ORDERS``); validated
    as those calls validate them.  Exactly one of ``sigma`` and ``sigma_range`` is given.
    """
    if (sigma is None) == (sigma_range is None):
        raise ValueError("Expected exactly one of sigma (for dpsgd_epsilon) and sigma_range (for "
                         f"dpsgd_calibrate_sigma), got {'neither' if sigma is None else 'both'}.")
    a = _sorted_orders(orders)
    qq = None if q is None else raise_tiny_rate(V.probability("q", q))
    if sigma is not None:
        return _n_panels(V.positive("sigma", sigma), a, qq)
    return _calibration_n_panels(a, _check_sigma_range(sigma_range), qq)


def _calibrate_kernel(target, q, steps, log_delta, lo, hi, plan, rtol):
    """Three stages, each a while_loop or one pass over the whole batch (jnp; see ``_calibrate_jit``):

    1. Illinois steps with the coarse accountant (a subset of the grid, see ``_coarse_orders``; integer orders
       are a finite series each, no quadrature) to relative ``COARSE_RTOL``.  Its eps is never below the full
       accountant's (a subset of its orders, no refinement), so its answer sigma_1 is feasible for the full
       accountant.
    2. Illinois steps, to ``rtol``, with the local accountant: Brent's search between the coarse grid's
       neighbours of its best order at sigma_1; on [the range's lower end, sigma_1], whose first inner point
       is (1 - LOCAL_BRACKET) sigma_1 (``guess``: where the local accountant is infeasible there, the bracket
       is [that point, sigma_1] after one evaluation).
    3. The re-check with the full accountant (:func:`dpsgd_epsilon`'s kernel).  Where it exceeds the target
       (the two searches ended ~1e-12 apart, or the full accountant's order search found less than the local
       one), Illinois steps with the full accountant itself between that sigma and sigma_1 (feasible by
       stage 1), in the same loop as the re-check (``near_first``: the full accountant is traced once).
    """
    method = plan.method
    st1 = invert_monotone_kernel(plan.coarse, target, (q, steps, log_delta), lo, hi, above=True, rtol=COARSE_RTOL,
                                 integer=False, illinois=True)
    s1 = st1.value
    _, center = _grid_best_pruned(plan.coarse.curve, s1, q, steps, log_delta, method)
    center = center.astype(jnp.float64)
    near = s1 * (1.0 - LOCAL_BRACKET)
    # aim a hair below the target: the local and the full searches end ~1e-14 apart, and a re-check that
    # fails by that much would cost the fix-up below for the whole batch.  The search's first inner point is
    # ``near``: where it is infeasible the bracket is [near, s1] at once (the local accountant traced once)
    st3 = invert_monotone_kernel(plan.local, target * (1.0 - LOCAL_MARGIN), (q, steps, log_delta, center), lo,
                                 s1, above=True, rtol=rtol, integer=False, illinois=True, guess=near)

    def full_eps(sig, q_, steps_, log_delta_):
        return _dpsgd_eps_kernel(plan.curve, plan.at_order, sig, q_, steps_, log_delta_, method, True)[0]

    # the re-check and its fix-up in one loop (the full accountant traced once): sig first, where it stops if
    # feasible; elsewhere Illinois steps between sig and sigma_1 (feasible: stage 1).  Where stage 1 found the
    # range infeasible (the coarse grid's top order, 256, floors its eps: ~0.02 at delta 1e-5), the full
    # accountant searches all of [lo, hi] (its status says whether hi meets the target)
    infeasible, sig = st1.status == INFEASIBLE, st3.value
    st4 = invert_monotone_kernel(full_eps, target, (q, steps, log_delta), jnp.where(infeasible, lo, sig),
                                 jnp.where(infeasible, hi, jnp.maximum(s1, sig)), above=True, rtol=rtol,
                                 integer=False, illinois=True, near_first=True)
    status = jnp.where(infeasible, st4.status, st3.status)
    return st4.value, st4.achieved, status


@float64_jit(static_argnames=("plan", "rtol_static"), persist=True)
def _calibrate_jit(target, q, steps, log_delta, lo, hi, plan, rtol_static):
    return _calibrate_kernel(target, q, steps, log_delta, lo, hi, plan, rtol_static)


#: The noise multipliers dpsgd_calibrate_sigma searches by default.
DEFAULT_SIGMA_RANGE = (0.05, 2e3)

def _dpsgd_calibrate_sigma(target, q, steps, delta, sigma_range, grow, rtol, orders, method, panels=AUTO, devices=None):
    """:func:`dpsgd_calibrate_sigma` on values it (or the registry's domains and ``bounds.invert``, ``_bounds.py``)
    checked: no check repeated (``grow``: the default range, grown where infeasible)."""
    shape = np.broadcast_shapes(*(np.shape(x) for x in (target, q, steps, delta)))
    lo, hi = sigma_range
    plan = _CalibrationPlan(orders, panels, method)
    log_d = np.log(delta)
    value, eps, status = run_in_slabs(lambda *b: _calibrate_jit(*b, plan, rtol), shape, target, q, steps, log_d, lo,
                                      hi, devices=devices)
    if grow and np.any(np.asarray(status) == INFEASIBLE):
        value, eps, status = _grown(shape, (target, q, steps, log_d), (value, eps, status), hi, plan, rtol, devices)
    return Calibration(value, eps, status)


#: Largest noise multiplier a calibration with the default range searches (its range grows to it 32-fold).
SIGMA_LIMIT = 1e7


def _grown(shape, args, found, top, plan, rtol, devices):
    """Search the INFEASIBLE points again in [top, 32 top], [32 top, 1024 top], ... up to SIGMA_LIMIT (eps
    decreases in sigma: a point the range's top does not meet has its answer above it)."""
    flat = [np.broadcast_to(np.asarray(a, dtype=np.float64), shape).ravel() for a in args]
    out = [np.array(np.broadcast_to(np.asarray(x), shape)).ravel() for x in found]
    while top < SIGMA_LIMIT and np.any(out[2] == INFEASIBLE):
        idx, lo, top = np.nonzero(out[2] == INFEASIBLE)[0], top, min(top * 32.0, SIGMA_LIMIT)
        part = run_in_slabs(lambda *b: _calibrate_jit(*b, plan, rtol), idx.shape, *(f[idx] for f in flat), lo, top,
                            devices=devices)
        for o, p in zip(out, part):
            o[idx] = np.asarray(p)
    with x64_scope():
        return tuple(jnp.asarray(o.reshape(shape)) for o in out)



def rdp_epsilon(*, sigma, q, steps, delta, orders=None, method="balle2020", optimize_order=True, n_panels=None,
                devices=None) -> EpsilonResult:
    """:func:`amplify_jax.accounting.accountants.dpsgd_epsilon` with ``accountant="rdp"``: its checks, then its
    computation (``_dpsgd_epsilon``)."""
    s, qq, t, d, shape = _check_dpsgd(sigma, q, steps, delta)
    V.one_of("method", method, METHODS)
    # the orders, then n_panels, then devices checked (arguments run left to right)
    return _dpsgd_epsilon(s, qq, t, d, _sorted_orders(orders), method, _check_n_panels(n_panels),
                          _check_devices(devices), optimize_order)


def rdp_calibrate_sigma(*, target_epsilon, q, steps, delta, orders=None, method="balle2020", rtol=1e-6,
                        sigma_range=None, n_panels=None, devices=None) -> Calibration:
    """:func:`amplify_jax.accounting.accountants.dpsgd_calibrate_sigma` with ``accountant="rdp"``: its checks,
    then its computation (``_dpsgd_calibrate_sigma``; the default range grown where infeasible)."""
    grow = sigma_range is None
    sigma_range = DEFAULT_SIGMA_RANGE if sigma_range is None else sigma_range
    e = V.positive("target_epsilon", target_epsilon)
    qq = raise_tiny_rate(V.probability("q", q))  # sound: eps grows with q
    t = V.integer("steps", steps, minimum=0).astype(np.float64)  # a count: 1.5 steps is refused
    d = V.unit_open("delta", delta)
    V.one_of("method", method, METHODS)
    lo, hi = _check_sigma_range(sigma_range)
    r = V.tolerance("rtol", rtol)  # one number in [1e-15, 0.5]
    V.broadcastable(target_epsilon=e, q=qq, steps=t, delta=d)
    return _dpsgd_calibrate_sigma(e, qq, t, d, (lo, hi), grow, r, _sorted_orders(orders), method,
                                  _check_n_panels(n_panels), _check_devices(devices))


#: The two behind the host path's front door (``amplify_jax._core.host``: a process's first small batches on
#: NumPy), for the PLD's comparisons with this accountant (``pld._results``, ``pld._dpsgd``), as they were
#: when the PLD called the public front doors.
rdp_epsilon_door = _host.front_door(rdp_epsilon)
rdp_calibrate_door = _host.front_door(rdp_calibrate_sigma)
