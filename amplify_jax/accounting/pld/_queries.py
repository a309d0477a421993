"""Batched eps-for-delta and delta-for-eps of one mechanism composed T times, both relations (jit kernels).

A mechanism is named by ``kind`` (static): ``"gaussian"`` (parameter: the noise multiplier sigma),
``"laplace"`` (the scale b), ``"randomized-response"`` (eps0: binary randomized response, the worst pair of
any eps0-DP mechanism), each Poisson-subsampled at rate q (q = 1: not subsampled), and ``"wor-gaussian"``
(the Gaussian on a batch of a fraction q drawn without replacement, under replace-one: one symmetric pair,
``WorGaussianLoss``).  Each point composes both neighbouring relations on its own grid (``_compose``) and
answers the worse, as dp_accounting's PLD accountant does (a symmetric pair once: both are the same; the
Gaussian's two relations on mirrored grids of one step, ``_compose.compose_mirrored``); values come as
(pessimistic, optimistic).  Values reach the compiled kernels as arrays: a
new parameter, rate, count, target or batch size does not recompile (batches run in chunks of one fixed
shape, the number of real points in a chunk an array argument, ``_run``); only a new grid size does.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..._core import host as _host
from ..._core.numerics import float64_jit
from ._compose import compose, compose_mirrored, delta_at, epsilon_at_sides
from ._grid import chunk_size, points_at_once
from ._mechanisms import ADD, REMOVE, RELATIONS, DiscreteLoss, GaussianLoss, LaplaceLoss, WorGaussianLoss

__all__ = ["KINDS", "SYMMETRIC_KINDS", "TAIL_FRACTION", "DELTA_QUERY_TAIL", "event", "eps_batch", "delta_batch"]

KINDS = ("gaussian", "laplace", "randomized-response", "wor-gaussian")
#: Kinds whose pair is the same under both relations (composed once per point).
SYMMETRIC_KINDS = ("wor-gaussian",)
#: The window is cut where the composed tail mass is TAIL_FRACTION * delta (eps queries); the bound on what
#: it leaves out is added to delta.
TAIL_FRACTION = 1e-4
#: Tail mass of the window for delta queries (the delta sought is unknown).
DELTA_QUERY_TAIL = 1e-30


def event(kind, relation, a, q):
    """(mechanism, params) of one event: ``kind`` with parameter a, Poisson rate q, under ``relation``."""
    if kind == "gaussian":
        return GaussianLoss(relation), (a, q)
    if kind == "laplace":
        return LaplaceLoss(relation), (a, q)
    if kind == "wor-gaussian":
        return WorGaussianLoss(relation), (a, q)
    if kind == "randomized-response":
        # binary randomized response at eps0 = a: outputs (1, 0) with P = (e^a, 1) / (1 + e^a), Q reversed;
        # subsampled: the record's output is used with probability q, the neighbour's otherwise
        keep = jax.nn.sigmoid(a)
        with_r = jnp.stack([keep, 1.0 - keep])
        without = with_r[::-1]
        mixed = q * with_r + (1.0 - q) * without
        p, qv = (mixed, without) if relation != ADD else (without, mixed)
        return DiscreteLoss(2), (p, qv)
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


#: Kinds whose add relation is the remove one mirrored (``_compose.compose_mirrored``): both are composed
#: from one evaluation of the interval masses, on one grid step.
MIRRORED_KINDS = ("gaussian",)


def _composed(kind, a, q, steps, log_tail, n, coarsen=1.0):
    if kind in MIRRORED_KINDS:
        m, p = event(kind, REMOVE, a, q)
        return list(compose_mirrored(m, p, steps, n, log_tail, coarsen))
    out = []
    for r in ((REMOVE,) if kind in SYMMETRIC_KINDS else RELATIONS):
        m, p = event(kind, r, a, q)
        out.append(compose((m,), (p,), (steps,), n, log_tail, coarsen))
    return out


def _eps_log_tail(delta):
    """log of the window's tail mass for an eps query at ``delta``: TAIL_FRACTION * delta rounded down to a
    power of 2, so that nearby deltas (those with TAIL_FRACTION * delta in one binade) share one composition,
    on which both values are exactly non-increasing in delta.  On separate grids their round-off differs
    (issue 13: at delta ~1e-18, below the round-off estimate, the lower value moved up and down by ~1e-3
    between deltas 1% apart, before this change as after).  A smaller tail only widens the window: by a
    factor of at most sqrt(1 + ln 2 / ln(1 / tail)) (1.7% at delta = 1e-5)."""
    return jnp.log(2.0) * jnp.floor(jnp.log2(TAIL_FRACTION * delta))


def _eps_point(kind, a, q, steps, delta, coarsen, n):
    d = delta[None]
    cs = _composed(kind, a, q, steps, _eps_log_tail(delta), n, coarsen)
    up, lo, bare = jnp.max(epsilon_at_sides(cs, d)[:, :, 0], axis=0)  # the worse relation, each side
    return up, jnp.minimum(lo, up), jnp.minimum(bare, up)


def _delta_point(kind, a, q, steps, eps, coarsen, n):
    e = eps[None]
    cs = _composed(kind, a, q, steps, jnp.log(DELTA_QUERY_TAIL), n, coarsen)
    up = jnp.max(jnp.stack([delta_at(c, e)[0] for c in cs]))
    lo = jnp.max(jnp.stack([delta_at(c, e, "opt")[0] for c in cs]))
    bare = jnp.max(jnp.stack([delta_at(c, e, roundoff=False)[0] for c in cs]))
    return up, jnp.minimum(lo, up), jnp.minimum(bare, up)


def _chunk(point, arrays, count, group):
    """``point`` (a function of one point's scalars, returning a tuple of scalars) over the first ``count``
    points of the chunk ``arrays`` ((C,) each), ``group`` points at a time (vmapped), in a
    ``lax.while_loop`` whose trip count is the array ``count``: the groups past it (the chunk's padding) are
    not computed and come out nan.  One compiled program serves every batch (``_run``).  On a CPU the
    chunk is one group (``_grid.chunk_size``): one pass of the loop."""
    size = arrays[0].shape[0]
    f = jax.vmap(point)

    def body(g, outs):
        xs = [jax.lax.dynamic_slice_in_dim(x, g * group, group) for x in arrays]
        return tuple(jax.lax.dynamic_update_slice_in_dim(o, y, g * group, 0) for o, y in zip(outs, f(*xs)))

    outs = tuple(jnp.full((size,), jnp.nan, dtype=jnp.float64) for _ in range(3))
    return jax.lax.fori_loop(0, (count + group - 1) // group, body, outs)


@float64_jit(static_argnames=("kind", "n", "group"))
def _eps_chunk(a, q, steps, delta, coarsen, count, kind, n, group):
    return _chunk(lambda *x: _eps_point(kind, *x, n), (a, q, steps, delta, coarsen), count, group)


@float64_jit(static_argnames=("kind", "n", "group"))
def _delta_chunk(a, q, steps, eps, coarsen, count, kind, n, group):
    return _chunk(lambda *x: _delta_point(kind, *x, n), (a, q, steps, eps, coarsen), count, group)


def _run(kernel, arrays, kind, n):
    """``kernel`` over flat NumPy arrays of any length m, as chunks of ``chunk_size()`` points (the last one
    padded with its last point, which the kernel skips): one compiled shape for every batch, and nothing on
    the host side that JAX compiles (inputs go in as NumPy arrays, outputs come back as NumPy arrays, are
    cut and joined in NumPy; on the host twin, one chunk of the batch's own size).  Returns three float64
    NumPy arrays (m,)."""
    m = arrays[0].shape[0]
    size, group = chunk_size(n), points_at_once(n)
    if _host.inside():  # the host twin (NumPy, ``amplify_jax._core.host``): the batch as it is, no padding
        size = group = max(m, 1)
    outs = []
    for i in range(0, m, size):
        k = min(size, m - i)
        part = [np.pad(x[i:i + k], (0, size - k), mode="edge") for x in arrays]
        outs.append(kernel(*part, np.int32(k), kind, n, group))  # dispatched before any is read
    parts = [[np.asarray(o[j])[:min(size, m - i * size)] for i, o in enumerate(outs)] for j in range(3)]
    return tuple(np.concatenate(p) if p else np.zeros(0) for p in parts)


def _flat(arrays, coarsen):
    arrays = [np.asarray(x, dtype=np.float64).reshape(-1) for x in arrays]
    c = np.broadcast_to(np.asarray(coarsen, dtype=np.float64), arrays[0].shape)
    return [*arrays, np.ascontiguousarray(c)]


def eps_batch(a, q, steps, delta, kind, n, coarsen=1.0):
    """(eps, eps_lower, eps_bare) per point of flat arrays (a, q, steps, delta) of any length (NumPy in, NumPy
    out); compiled once per (kind, n) (``_run``).  ``coarsen`` (a value, >= 1; scalar or per point)
    multiplies each point's grid step (``_compose.compose``).  eps_bare is eps without the FFT round-off
    term (not a bound; the automatic grid's error estimate uses it)."""
    return _run(_eps_chunk, _flat((a, q, steps, delta), coarsen), kind, n)


def delta_batch(a, q, steps, eps, kind, n, coarsen=1.0):
    """(delta, delta_lower, delta_bare) per point of flat arrays (a, q, steps, eps) (see :func:`eps_batch`)."""
    return _run(_delta_chunk, _flat((a, q, steps, eps), coarsen), kind, n)
