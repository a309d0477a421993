"""The privacy blanket, part 4: Monte Carlo for randomized response / Ladjel's target randomizer (Ladjel et al.
Algorithm 2, sampled jointly with the binomial weights, the last draw integrated out) with a one-sided upper
confidence bound, and its eps-from-delta kernel (common random numbers).  Private (see
:mod:`amplify_jax.shuffle.blanket`).

Sec. IV-C of Ladjel et al. reports the plain mean of R = 5000 samples and claims a relative error below 1/1000;
that is not backed by any confidence statement, and independent runs differ from the exact value by about
-25% to +11% (docs/errata.md#e-traffic-monte-carlo).  Here the delta returned is the one-sided upper confidence
bound (Maurer 2003), the mean only an ``estimate`` beside it.
"""

from __future__ import annotations

import functools
import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..accounting.calibrate import invert_monotone_kernel
from .._core.numerics import float64_jit, log_binom_pmf
from ._blanket_exact import (
    WM_MAX,
    _CANCEL_MARGIN,
    _REL_MARGIN,
    _half_cdf_lookup,
    _Plan,
    _chunk_bucket,
    _pmf_run,
    _pow2,
    _run_planned,
)
from ._blanket_model import _EPS_CLIP, _EPS_FLOOR, _U, _inversion_result, _search_hi


# ---------------------------------------------------------------------------------------------------------
# Monte Carlo (Ladjel Algorithm 2, sampled jointly with the binomial weights; the last draw integrated out)


def _search(cdf, u, length: int, base=0):
    """Number of entries of the non-decreasing ``cdf[base:base + length]`` (length a power of 2) that are <= u,
    by a branch-free binary search (log2(length) gathers): the inverse-CDF index of u, or ``length`` when u is
    at or beyond the last entry (the window's total mass)."""
    pos = jnp.zeros(u.shape, jnp.int32)
    step = length // 2
    while step >= 1:
        cand = pos + step
        v = jnp.take(cdf, base + cand - 1, mode="clip")
        pos = jnp.where(v <= u, cand, pos)
        step //= 2
    last = jnp.take(cdf, base + length - 1, mode="clip")
    return jnp.where(u >= last, length, pos)


class _MCDraws(NamedTuple):
    K: jax.Array  #: number of summands, per sample (points x samples)
    M: jax.Array  #: N1 + N2, per sample
    out: jax.Array  #: True where a draw left its window (the sample is then counted as its bound B)
    slack: jax.Array  #: per point: bound on |E_sampled - E_true| / B from the 32-bit uniforms and round-off


@functools.lru_cache(maxsize=32)
def _pascal_cdf_np(T: float, rows: int, cols: int) -> np.ndarray:
    """P(Bin(r, 2/T) <= x) for r < rows, x < cols, by the Pascal recurrence F_{r+1}(x) = q F_r(x) + p F_r(x-1)
    (exact up to round-off, no truncation: values at x < cols only use values at x - 1 >= -1)."""
    p = 2.0 / T
    out = np.empty((rows, cols))
    row = np.ones(cols)
    for r in range(rows):
        out[r] = row
        row = (1.0 - p) * row + p * np.concatenate([[0.0], row[:-1]])
    out.setflags(write=False)
    return out


def _mc_windows(n, d, T, sigma, *, Wm, Wj, tail_sd):
    """Per point: the m' window (start j0, CDF over Wm values) and the J0 ~ Bin(K_lo, 2/T) window (start b0,
    CDF over Wj values), K_lo = j0 + 1 + d; pmfs by the ratio recurrence from Loader's log-pmf."""
    p = 2.0 / T
    q = 1.0 - p
    N = n - 1.0
    sd = jnp.sqrt(N * sigma * (1.0 - sigma))
    half = jnp.minimum(jnp.ceil(tail_sd * sd) + 1.0, Wm / 2.0)
    j0 = jnp.clip(jnp.floor(N * sigma - half), 0.0, jnp.maximum(N - Wm + 1.0, 0.0))
    jf, wf = _pmf_run(log_binom_pmf(j0, N, sigma), N, sigma, j0, Wm)
    wf = jnp.where(sigma >= 1.0, (jf == N).astype(jnp.float64), wf)
    cdf_m = jnp.cumsum(jnp.where(jf <= N, wf, 0.0))
    K_lo = j0 + d + 1.0
    sdb = jnp.sqrt(K_lo * p * q)
    hb = jnp.minimum(jnp.ceil(tail_sd * sdb) + 1.0, Wj / 2.0)
    b0 = jnp.clip(jnp.floor(K_lo * p - hb), 0.0, jnp.maximum(K_lo - Wj + 1.0, 0.0))
    jb, wb = _pmf_run(log_binom_pmf(b0, K_lo, p), K_lo, p, b0, Wj)
    wb = jnp.where(p >= 1.0, (jb == K_lo).astype(jnp.float64), wb)
    cdf_b = jnp.cumsum(jnp.where(jb <= K_lo, wb, 0.0))
    return j0, cdf_m, K_lo, b0, cdf_b


@float64_jit(static_argnames=("Wm", "Wj", "samples", "tail_sd"))
def _mc_search(key, i, n, d, T, sigma, table, *, Wm, Wj, samples, tail_sd):
    """Exact draws for a chunk of points (leading axis) by inversion of tabulated CDFs; eps-free.

    m' ~ Bin(n-1, sigma) over a window of Wm values, K = m'+1+d; M | K ~ Bin(K, 2/T) = J0 + dJ with
    J0 ~ Bin(K_lo, 2/T) (K_lo the smallest K of the window; a window of Wj values) and
    dJ | K ~ Bin(K - K_lo, 2/T) from ``table`` (the chunk's common T; :func:`_pascal_cdf_np`).  Returns the
    indices (r, xb, dx) -- index == window size means "beyond the window's mass" -- and K_lo, b0 per point.
    ``key``: the call's PRNG key (2 uint32 words), folded with the chunk number ``i`` (a uint32 array: no
    program per chunk) into one key for the chunk (its bits are drawn in one block: several times faster than a
    key per point under vmap).  Uniforms have 32 bits (two per 64-bit word).  The binary searches gather from
    flat arrays (log2 of the window size gathers per draw).  A separate compiled function from
    :func:`_mc_draws_from_indices`: inside one, XLA re-fuses the searches into their consumers (3-10x slower).
    """
    c = n.shape[0]
    key = jax.random.fold_in(key, i)
    j0, cdf_m, K_lo, b0, cdf_b = jax.vmap(partial(_mc_windows, Wm=Wm, Wj=Wj, tail_sd=tail_sd))(n, d, T, sigma)
    words = jax.random.bits(key, (c, 2, samples), dtype=jnp.uint64)
    scale = 2.0 ** -32
    u1 = (words[:, 0] >> 32).astype(jnp.float64) * scale
    u2 = (words[:, 0] & 0xFFFFFFFF).astype(jnp.float64) * scale
    u3 = (words[:, 1] >> 32).astype(jnp.float64) * scale
    cdf_m, cdf_b, table, u1, u2, u3 = jax.lax.optimization_barrier((cdf_m.reshape(-1), cdf_b.reshape(-1),
                                                                    table.reshape(-1), u1, u2, u3))
    rows = jnp.arange(c, dtype=jnp.int32)[:, None]
    r = _search(cdf_m, u1, Wm, base=rows * Wm)
    xb = _search(cdf_b, u2, Wj, base=rows * Wj)
    dx = _search(table, u3, Wj, base=jnp.minimum(r, Wm - 1) * Wj)
    return r, xb, dx, K_lo, b0


def _mc_draws_from_indices(r, xb, dx, K_lo, b0, *, Wm, Wj):
    """(K, M) per sample and the ``out`` flags (a draw beyond its window: the sample then counts as the bound
    B, an upper bound on every truncation); ``slack``: bound on |E_sampled - E_true| / B per point from the
    32-bit uniforms (each index's probability is off by < 2^-32) and the CDFs' round-off."""
    rc = jnp.minimum(r, Wm - 1)
    K = K_lo[:, None] + rc.astype(jnp.float64)
    M = b0[:, None] + jnp.minimum(xb, Wj - 1).astype(jnp.float64) + jnp.minimum(dx, Wj - 1).astype(jnp.float64)
    out = (r >= Wm) | (xb >= Wj) | (dx >= Wj) | (M > K)
    slack = jnp.full(K_lo.shape, (Wm + 2.0 * Wj + 3.0) * 2.0 ** -32 + 8.0 * (Wm + Wj) * _U)
    return _MCDraws(K, M, out, slack)


def _h_pair(M, K, eps, T, sigma, F, r0):
    """E[(sum_{i<=K} L_i)_+ | N1 + N2 = M] for the target randomizer (the closed form of _g_exact, one pair),
    and whether M was inside the CDF table."""
    ee = jnp.exp(eps)
    em1 = jnp.expm1(eps)
    ts = (1.0 - sigma) * T
    A = ts * (1.0 + ee)
    ks = K * sigma * em1
    C = ts * M - ks
    u = jnp.ceil(C / jnp.where(A > 0, A, 1.0)) - 1.0
    value = lambda x: ts * ((M - x) - ee * x) - ks  # noqa: E731
    u = jnp.where(value(u + 1.0) > 0, u + 1.0, u)
    u = jnp.where(value(u) > 0, u, u - 1.0)
    u = jnp.minimum(u, M)
    t1 = C * _half_cdf_lookup(F, r0, u, M)
    t2 = A * (M / 2.0) * _half_cdf_lookup(F, r0, u - 1.0, M - 1.0)
    h = jnp.maximum(t1 - t2, 0.0) + _CANCEL_MARGIN * (jnp.abs(t1) + t2)
    h = jnp.where((A > 0) & (C > 0) & (u >= 0), h, 0.0)
    rows = F.shape[0]
    return h, ((M - 1.0 >= r0) | (M <= 0.0)) & (M < r0 + rows)


def _mc_from_draws(eps, T, sigma, draws: _MCDraws, F, r0, alpha):
    """Mean and one-sided upper confidence bound of the Lemma 2 sum from fixed draws (one point).

    Y = E[(sum_{i<=K} L_i)_+ | K, M] / K (Algorithm 2 with its last draw, N1 given M, integrated out in closed
    form -- a Rao-Blackwellisation: unbiased, lower variance), 0 <= Y <= B = max(L_max, 0); Y = B for
    samples out of a window.  Lower tail of a mean of [0, B] variables (Maurer 2003):
    P(mu - mean >= t) <= exp(-R t^2 / (2 E[Y^2])), E[Y^2] <= B mu, so with s = B ln(1/alpha) / R,
    mu <= mean + s + sqrt(2 mean s + s^2) with probability >= 1 - alpha; the sampling slack is added to the
    mean first.  Non-decreasing in the mean and in B, both non-increasing in eps: monotone in eps, so the
    inversion with common draws keeps the confidence.
    """
    eps = jnp.minimum(eps, _EPS_CLIP)
    ts = (1.0 - sigma) * T
    B = jnp.maximum(ts - sigma * jnp.expm1(eps), 0.0)
    h, inside = _h_pair(draws.M, draws.K, eps[:, None], T[:, None], sigma[:, None], F, r0)
    Bs = B[:, None]
    Y = jnp.where(draws.out | ~inside, Bs, jnp.minimum(h / draws.K * (1.0 + _REL_MARGIN), Bs))
    R = Y.shape[-1]
    mean = jnp.mean(Y, axis=-1)
    s = B * jnp.log(1.0 / alpha) / R
    m = mean + draws.slack * B
    ucb = m + s + jnp.sqrt(2.0 * m * s + s * s)
    ucb = jnp.where(B > 0, jnp.minimum(ucb, 1.0), 0.0)
    return jnp.where(B > 0, mean, 0.0), ucb


@float64_jit(static_argnames=("Wm", "Wj"))
def _mc_from_indices(idx, eps, T, sigma, alpha, F, r0, *, Wm, Wj):
    draws = _mc_draws_from_indices(*idx, Wm=Wm, Wj=Wj)
    return _mc_from_draws(eps, T, sigma, draws, F, r0, alpha)


def _mc_chunk(key, i, eps, n, d, T, sigma, alpha, table, F, r0, *, Wm, Wj, samples, tail_sd):
    idx = _mc_search(key, i, n, d, T, sigma, table, Wm=Wm, Wj=Wj, samples=samples, tail_sd=tail_sd)
    return _mc_from_indices(idx, eps, T, sigma, alpha, F, r0, Wm=Wm, Wj=Wj)


def _plan_mc(n, d, T, sigma, tail_sd, samples):
    """Chunks of points with the static window sizes of the Monte Carlo kernel (Wm: m' window; Wj: the J0
    window and the dJ table), and the CDF table's rows."""
    N = n - 1.0
    sd = np.sqrt(np.maximum(N * sigma * (1.0 - sigma), 0.0))
    wm = np.minimum(2.0 * np.ceil(tail_sd * sd) + 3.0, WM_MAX)
    p = 2.0 / T
    K_lo = np.maximum(np.floor(N * sigma - tail_sd * sd) - 1.0, 0.0) + d + 1.0
    wb = 2.0 * np.ceil(tail_sd * np.sqrt(K_lo * p * (1.0 - p))) + 3.0
    keys = {}
    for i in range(n.shape[0]):
        Wm = _pow2(wm[i])
        x = Wm * p[i] + tail_sd * math.sqrt(Wm * p[i] * (1.0 - p[i])) + 3.0
        keys.setdefault((Wm, _pow2(max(wb[i], x)), float(T[i])), []).append(i)
    chunks = []
    for key, idx in sorted(keys.items()):
        idx = np.asarray(idx, dtype=np.int64)
        cmax = max(1, (1 << 21) // (samples * 4))
        cmax = 1 << (cmax.bit_length() - 1)
        c = int(min(cmax, _pow2(idx.shape[0], 1)))
        for b in range(0, idx.shape[0], c):
            sel = idx[b:b + c]
            chunks.append((key, sel, _chunk_bucket(sel.shape[0], cmax), -1.0))
    Kmax = np.minimum(np.ceil(N * sigma + tail_sd * sd) + 1.0, N) + d + 1.0
    hi = np.minimum(Kmax * p + tail_sd * np.sqrt(Kmax * p * (1.0 - p)) + 10.0, Kmax) + 2.0
    rows = _pow2(max(int(np.max(hi)) + 1, 256)) if hi.size else 256
    return _Plan(tuple(chunks), 0, rows, rows)


def _mc_planned(key, eps, n, d, T, sigma, alpha, tail_sd, samples):
    """(ucb, mean) of the Monte Carlo method for flat float arrays; the chunk number i of the plan draws from
    fold_in(key, i)."""
    plan = _plan_mc(n, d, T, sigma, tail_sd, samples)

    k = jax.device_put(np.asarray(key))

    def call(statics, a, F, r0, i):
        Wm, Wj, T_ = statics
        table = jax.device_put(_pascal_cdf_np(T_, Wm, Wj))
        mean, ucb = _mc_chunk(k, i, *a, table, F, r0, Wm=Wm, Wj=Wj, samples=samples, tail_sd=tail_sd)
        return ucb, mean

    return _run_planned(call, plan, [eps, n, d, T, sigma, alpha], 2)


@float64_jit(static_argnames=("Wm", "Wj"))
def _mc_eps_from_indices(idx, delta, T, sigma, alpha, eps0, rtol, F, r0, *, Wm, Wj):
    draws = _mc_draws_from_indices(*idx, Wm=Wm, Wj=Wj)

    def fn(x, T, sigma, alpha):
        return _mc_from_draws(x, T, sigma, draws, F, r0, alpha)[1]

    inv = invert_monotone_kernel(fn, delta, (T, sigma, alpha), _EPS_FLOOR, _search_hi(eps0), above=True,
                                 rtol=rtol, integer=False)
    return _inversion_result(*inv, eps0)


def _mc_eps_chunk(key, i, delta, n, d, T, sigma, alpha, eps0, rtol, table, F, r0, *, Wm, Wj, samples, tail_sd):
    idx = _mc_search(key, i, n, d, T, sigma, table, Wm=Wm, Wj=Wj, samples=samples, tail_sd=tail_sd)
    return _mc_eps_from_indices(idx, delta, T, sigma, alpha, eps0, rtol, F, r0, Wm=Wm, Wj=Wj)
