"""Grid sizes and batches of the PLD kernels (host side): the memory estimate made before allocating."""

from __future__ import annotations

import numpy as np

__all__ = ["DEFAULT_GRID_SIZE", "MAX_GRID_SIZE", "MEMORY_LIMIT", "AUTO_MAX_GRID_SIZE", "AUTO_RTOL", "AUTO_RTOL_DELTA",
           "check_grid_size", "auto_refined_size", "flat_padded", "unpad", "bytes_per_point", "memory_limit"]

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
#: Refuse a request whose working memory would exceed this (bytes), or half the memory available now.
MEMORY_LIMIT = 8 * 1024**3
#: Points composed at once inside a compiled call (the slab ``_queries`` vmaps over), which bounds the
#: working memory.  8: on the 2-core CPU of benchmarks/bench_pld.py, since the kernels stopped being bound
#: by transcendental functions (issue 13), 1.4-1.7x faster per point than 4 or 12 (alternating runs, 48
#: points at 2^14: 3.0-3.6 ms against 5.2-5.4 and 5.2-5.6), 6 about as fast.  (Before, with ~40
#: transcendental evaluations per grid point, 4 had been 1.7x faster than 8.)
CHUNK = 8


def bytes_per_point(n: int) -> int:
    """Working memory of one point's composition (both relations, both sides, XLA's temporaries): measured
    at ~1.2 kB per grid point (20 GB peak for one point at n = 2^24 on CPU), so 160 float64 per point."""
    return 160 * 8 * int(n)


def memory_limit() -> int:
    """``MEMORY_LIMIT``, or half the physical memory available now if that is less."""
    import os

    try:
        avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return MEMORY_LIMIT
    return int(min(MEMORY_LIMIT, avail // 2))


def check_grid_size(grid_size, shape) -> int:
    """The static grid size: a power of two in [2^8, 2^24]; refuses one whose working memory (CHUNK points
    at once) would exceed :func:`memory_limit`, before allocating, with a message naming it."""
    n = DEFAULT_GRID_SIZE if grid_size is None else grid_size
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 256 or n > MAX_GRID_SIZE or n & (n - 1):
        raise ValueError(f"grid_size must be a power of two in [256, {MAX_GRID_SIZE}], got {grid_size!r}")
    need = bytes_per_point(n) * min(CHUNK, max(int(np.prod(shape, dtype=np.int64)), 1))
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
    while top > DEFAULT_GRID_SIZE and bytes_per_point(top) * min(CHUNK, max(int(np.prod(shape)), 1)) > memory_limit():
        top //= 2
    return np.where(fine | (top <= DEFAULT_GRID_SIZE), 0, top).astype(np.int64)


def _bucket(n: int) -> int:
    return 1 if n <= 1 else CHUNK * int(np.ceil(n / CHUNK))


def flat_padded(shape, *arrays):
    """Broadcast to ``shape``, flatten, pad with the last value to 1 or a multiple of ``CHUNK`` (the kernels
    run in slabs of CHUNK points)."""
    m = int(np.prod(shape, dtype=np.int64))
    size = _bucket(m)
    out = []
    for a in arrays:
        f = np.broadcast_to(np.asarray(a, dtype=np.float64), shape).reshape(-1)
        out.append(np.concatenate([f, np.repeat(f[-1:], size - m)]) if m else np.zeros(size))
    return out, m


def unpad(x, m, shape):
    return np.asarray(x)[:m].reshape(shape)
