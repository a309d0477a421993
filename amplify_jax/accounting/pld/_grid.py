"""Grid sizes and batches of the PLD kernels (host side): the memory estimate made before allocating."""

from __future__ import annotations

import os

import jax
import numpy as np

__all__ = ["DEFAULT_GRID_SIZE", "MAX_GRID_SIZE", "MEMORY_LIMIT", "AUTO_MAX_GRID_SIZE", "AUTO_RTOL", "AUTO_RTOL_DELTA",
           "check_grid_size", "auto_refined_size", "flatten", "unpad", "bytes_per_point", "memory_limit", "chunk_size",
           "points_at_once", "CHUNK", "ACCELERATOR_CHUNK", "LADDER_RATIO", "MIN_GRID_SIZE", "ladder"]

#: Grid points of one composition (a power of two): the first pass of the automatic grid (``grid_size=None``)
#: and the accountant object's default.  Alone it is within 1e-3 of dp_accounting at 143 of 168 random DP-SGD
#: points; the other 25 (many steps: a wide composed window over 2^14 points; or a tiny delta) need a finer
#: grid, which the automatic grid finds (benchmarks/pld_vs_dp_accounting.py).
DEFAULT_GRID_SIZE = 1 << 14
#: The automatic grid (``grid_size=None``): every point is answered on DEFAULT_GRID_SIZE points at the
#: window's step h and, by the same compiled program, at 2h; from the two, an estimate of the error that a
#: finer grid removes (``_results.grid_error``: Richardson on the values without the round-off term, and
#: the part of the round-off term a finer grid shrinks).  A point whose estimate exceeds AUTO_RTOL (relative)
#: is answered again on a grid of AUTO_MAX_GRID_SIZE points.
#: AUTO_RTOL = 7e-4 keeps the answer within ~7e-4 of the truth, so within 1e-3 of dp_accounting's (itself
#: above the truth) where the estimate holds (benchmarks/pld_vs_dp_accounting.py).
AUTO_RTOL = 7e-4
#: The same for delta queries (relative to delta): delta moves ~eps d(ln delta)/d(eps) ~ 10 times as much
#: as eps does, relatively, so 1e-2 of delta is ~1e-3 of eps.
AUTO_RTOL_DELTA = 1e-2
AUTO_MAX_GRID_SIZE = 1 << 17
MAX_GRID_SIZE = 1 << 24
#: The smallest grid a caller may ask for (``check_grid_size``), and the foot of every ladder.
MIN_GRID_SIZE = 1 << 8
#: A grid asked for by size (``grid_size=N``) answers the least upper value of the grids of its ladder, N,
#: N / 2, N / 4, ... down to MIN_GRID_SIZE (:func:`ladder`; issue 26): each is a sound upper bound, so their
#: minimum is one, and any finer grid (a power of two, as every grid_size is) has every rung of the coarser one's
#: ladder, so it never answers a larger upper value at the same point.  Without it a finer grid could be ~0.8%
#: looser where the FFT round-off estimate, which grows ~1.3x per 4x grid, is a large part of delta (delta
#: ~1e-11, a few hundred steps at q ~2e-4).  Ratio 2, not 4: with 4 only grids 4^k apart nested (2^21 could still
#: answer above 2^20); the rungs below N cost as much as N's pass again (4: a third), and a compilation each, once.
LADDER_RATIO = 2
#: Refuse a request whose working memory would exceed this (bytes), or half the memory available now.
MEMORY_LIMIT = 8 * 1024**3
#: Points of one compiled call on a CPU (the chunk, ``_queries._run``), composed side by side (vmapped):
#: every batch runs as chunks of this one shape, a single point included (padded), so the kernels compile
#: once per grid size whatever the batch (issue 25: slabs of 1 and of 8 points were two programs, 8-17 s
#: each on the 2-core CPU of the benchmarks).  8: on that CPU 1.7x faster per point than one point at a time
#: (1.5 against 2.6 ms a point at 2^14, alternating runs of 256 points in one process; one point at a time
#: in a loop of 8 or 16 per call was as slow), 1.4-1.7x faster than vmapped slabs of 4 or 12 (issue 13).
#: A single point then costs a chunk (~8 times one point's work, ~15 ms at 2^14).
CHUNK = 8
#: Points of one call on an accelerator (GPU, TPU), where ``points_at_once`` compositions run side by side
#: and a loop inside the call runs over the groups of real points (the padding of a chunk costs nothing).
ACCELERATOR_CHUNK = 256
#: At most this many points side by side on an accelerator.
ACCELERATOR_GROUP = 64
#: Working memory the points composed side by side may take together (bytes): fewer of them on a larger
#: grid (on a CPU: 8 up to 2^17 points, 1 from 2^20), so a single point on a large grid still runs alone.
GROUP_BYTES = 2 * 1024**3


def bytes_per_point(n: int) -> int:
    """Working memory of one point's composition (both relations, both sides, XLA's temporaries): measured
    at ~1.2 kB per grid point (20 GB peak for one point at n = 2^24 on CPU), so 160 float64 per point."""
    return 160 * 8 * int(n)


def memory_limit() -> int:
    """``MEMORY_LIMIT``, or half the physical memory available now if that is less."""
    try:
        avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return MEMORY_LIMIT
    return int(min(MEMORY_LIMIT, avail // 2))



def _platform() -> str:
    """JAX's default backend ("cpu" on the host twin, ``amplify_jax._core.host``, whose NumPy stand-in has none)."""
    backend = getattr(jax, "default_backend", None)
    return "cpu" if backend is None else backend()


def points_at_once(n: int) -> int:
    """Points composed side by side (vmapped) in a compiled call at grid size n: the largest power of two
    up to ``CHUNK`` (a CPU) or ``ACCELERATOR_GROUP`` whose working memory (:func:`bytes_per_point`) fits
    ``GROUP_BYTES`` (at least 1).  A function of n (and of the platform) only: it adds no compilation."""
    g = CHUNK if _platform() == "cpu" else ACCELERATOR_GROUP
    while g > 1 and g * bytes_per_point(n) > GROUP_BYTES:
        g //= 2
    return g


def chunk_size(n: int) -> int:
    """Points of one compiled call at grid size n: on a CPU the points composed side by side (one group, a
    batch padded to whole chunks), on an accelerator ``ACCELERATOR_CHUNK`` (groups of real points looped
    over inside the call)."""
    return points_at_once(n) if _platform() == "cpu" else ACCELERATOR_CHUNK


def check_grid_size(grid_size, shape) -> int:
    """The static grid size: a power of two in [2^8, 2^24]; refuses one whose working memory
    (:func:`points_at_once` points side by side, a single point padded to them) would exceed
    :func:`memory_limit`, before allocating, with a message naming it."""
    n = DEFAULT_GRID_SIZE if grid_size is None else grid_size
    if (isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < MIN_GRID_SIZE or n > MAX_GRID_SIZE
            or n & (n - 1)):
        raise ValueError(f"grid_size must be a power of two in [{MIN_GRID_SIZE}, {MAX_GRID_SIZE}], got {grid_size!r}")
    need = bytes_per_point(n) * points_at_once(n)
    limit = memory_limit()
    if need > limit:
        raise ValueError(f"grid_size={n} needs about {need / 1024**3:.1f} GiB of working memory "
                         f"(limit {limit / 1024**3:.1f} GiB): use a smaller grid_size")
    return int(n)


def auto_refined_size(err, value, shape, rtol=AUTO_RTOL) -> np.ndarray:
    """Per point, the grid size of the automatic grid's second pass (0: none needed): ``err`` the estimated
    error of ``value`` (the upper value on DEFAULT_GRID_SIZE points).  Where both are finite and
    err <= rtol |value|: 0; elsewhere AUTO_MAX_GRID_SIZE, or less where the memory check would refuse
    it for the batch.  One size, not one sized per point: every size is a compilation of its own (~5 s on
    the 2-core CPU of the benchmarks), and an eighth of the step leaves an error of at most an eighth of the
    one estimated (first order; a 64th at second order)."""
    err = np.abs(np.asarray(err, dtype=np.float64))
    value = np.asarray(value, dtype=np.float64)
    fine = np.isfinite(value) & np.isfinite(err) & (err <= rtol * np.abs(value))
    top = AUTO_MAX_GRID_SIZE
    while top > DEFAULT_GRID_SIZE and bytes_per_point(top) * points_at_once(top) > memory_limit():
        top //= 2
    return np.where(fine | (top <= DEFAULT_GRID_SIZE), 0, top).astype(np.int64)


def ladder(n: int) -> list:
    """The grids a ``grid_size=n`` answer is the least of: n, n / LADDER_RATIO, n / LADDER_RATIO^2, ... while
    at least ``MIN_GRID_SIZE`` (finest first).  ladder(2^k n) contains ladder(n)."""
    out = [int(n)]
    while out[-1] // LADDER_RATIO >= MIN_GRID_SIZE:
        out.append(out[-1] // LADDER_RATIO)
    return out


def flatten(shape, *arrays):
    """Each array broadcast to ``shape`` and flattened (float64 NumPy), and the number of points.  The
    kernels take any length (``_queries._run`` cuts it into chunks of one shape)."""
    m = int(np.prod(shape, dtype=np.int64))
    return [np.broadcast_to(np.asarray(a, dtype=np.float64), shape).reshape(-1) for a in arrays], m


def unpad(x, m, shape):
    return np.asarray(x)[:m].reshape(shape)
