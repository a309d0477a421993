"""The privacy blanket, part 3: the engine for randomized response / Ladjel's target randomizer -- the Lemma 2
sum over bins of M' with g(K) = E[sum_{i<=K} L_i]_+ / K exact (the multinomial counts of the two targets;
docs/errata.md#e-traffic-monte-carlo: sum L = k sigma (1 - e^eps) + (1 - sigma) T (N1 - e^eps N2), computed
exactly where Sec. IV-C samples it) or bounded by Hoeffding / corrected Bennett (a, b and the Bennett form as
corrected in docs/errata.md#e-traffic-thm4-a, #e-traffic-thm4-b, #e-traffic-lemma3-bennett), the planning of window
sizes per point, the fixed-size kernel for traced use, the eps-from-delta kernel, and the guard on the size of
its CDF table.  Private: the public entry points are :func:`amplify_jax.shuffle.blanket.rr_delta`,
``rr_epsilon``, ``rr_delta_traced`` and ``exact_table_check``.
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
from .._core.numerics import float64_jit, log_binom_pmf, x64_scope
from . import _binomial as B
from ._blanket_model import DEFAULT_TAIL_SD, _EPS_CLIP, _EPS_FLOOR, _U, _inversion_result, _log_bennett, _search_hi

# ---------------------------------------------------------------------------------------------------------
# Exact evaluation for randomized response / the target randomizer

_REL_MARGIN = 1e-10  # relative allowance for the round-off of the recurrences and sums (each < ~1e-12)
_CANCEL_MARGIN = 1e-12  # relative allowance for the two-term closed form of E[(C - A N2)_+ | M]


@functools.lru_cache(maxsize=8)
def _half_cdf_np(r0: int, rows: int, cols: int) -> np.ndarray:
    """P(Bin(M, 1/2) <= u) for M in [r0, r0 + rows), u in [0, cols) (1 for u >= M), from SciPy's binomial
    CDF (the regularized incomplete beta, accurate to ~1e-15 relative in the tails)."""
    from scipy.stats import binom  # lazy: scipy.stats takes ~540 ms to import; only this table needs it

    M = np.arange(r0, r0 + rows, dtype=np.float64)[:, None]
    u = np.arange(cols, dtype=np.float64)[None, :]
    with np.errstate(all="ignore"):
        t = binom.cdf(u, M, 0.5)
    t = np.where(u >= M, 1.0, t)
    t.setflags(write=False)
    return t


def _half_cdf_lookup(F, r0, u, M):
    """P(Bin(M, 1/2) <= u) from the table F (rows M = r0.., columns u = 0..); 0 for u < 0, 1 for u >= M.
    Callers keep r0 <= M < r0 + rows and u < M <= cols - 1 wherever the value is used."""
    rows, cols = F.shape
    mi = jnp.clip(M - r0, 0, rows - 1).astype(jnp.int32)
    ui = jnp.clip(u, 0, cols - 1).astype(jnp.int32)
    v = jnp.take(F.reshape(-1), mi * cols + ui, mode="clip")
    return jnp.where(u < 0, 0.0, jnp.where(u >= M, 1.0, v))


def _pmf_run(first_log, n, p, start, width):
    """Bin(n, p) pmf at start, start+1, ..., start+width-1 (trailing axis) from the log-pmf at ``start``
    (Loader, numerics.log_binom_pmf) times the cumulative product of the exact ratios
    b(k+1)/b(k) = (n-k)/(k+1) * p/(1-p): one division per point, relative error <= width ulps.
    p = 1 (point mass at n) is handled by the caller."""
    k = start[..., None] + jnp.arange(width, dtype=jnp.float64)
    odds = p / jnp.where(p < 1, 1.0 - p, 1.0)
    ratio = jnp.maximum(n[..., None] - k[..., :-1], 0.0) / (k[..., :-1] + 1.0) * odds[..., None]
    steps = jnp.concatenate([jnp.exp(first_log)[..., None], ratio], axis=-1)
    return k, jnp.cumprod(steps, axis=-1)


def _b_plus_up(ts, sigma, em1):
    """The upper end of L, b_+ = (1 - sigma) T - sigma (e^eps - 1) (Ladjel Lemma 5, sign corrected:
    docs/errata.md#e-traffic-lemma5), rounded up: each term is within 2 ulps, so the float64 difference is
    within 4 ulps of their sum -- all of b_+ where it is small next to them (eps near the local guarantee,
    where E[L_+] = b_+ / T caps g and b_+ <= 0 makes delta 0)."""
    return ts - sigma * em1 + 4.0 * _U * (ts + sigma * jnp.abs(em1))


def _binom_upper_tail(a, N, p):
    """Upper bound on P(Bin(N, p) >= a): 1 at or below the mean, Chernoff exp(-N KL(a/N || p)) above it
    (Loader's bd0 form, no cancellation), 0 above N."""
    out = jnp.exp(B.log_tail_upper(jnp.maximum(a, 0.0), N, p))
    return jnp.where(a > N, 0.0, jnp.where(a <= 0, 1.0, jnp.minimum(out, 1.0)))


def _binom_lower_tail(a, N, p):
    """Upper bound on P(Bin(N, p) <= a) (Chernoff below the mean), 0 for a < 0."""
    return jnp.where(a < 0, 0.0, _binom_upper_tail(N - a, N, 1.0 - p))


def _g_exact(K, eps, T, sigma, F, r0, nsteps, *, tail_sd):
    """g(K) = E[sum_{i<=K} L_i]_+ / K for the target randomizer (K: any shape; the M window is a new
    trailing axis of Wj points), and whether the window covered M's mean +- tail_sd sd inside the table.

    sum L = K sigma (1 - e^eps) + (1 - sigma) T (N1 - e^eps N2), (N1, N2) ~ Multinomial(K; 1/T, 1/T)
    (docs/errata.md#e-traffic-monte-carlo).
    With M = N1 + N2 ~ Bin(K, 2/T) and N2 | M ~ Bin(M, 1/2), sum L = C_M - A N2, C_M = (1 - sigma) T M
    - K sigma (e^eps - 1), A = (1 - sigma) T (1 + e^eps); with u the largest integer with C_M - A u > 0,
    E[(C_M - A N2)_+ | M] = C_M P(Bin(M, 1/2) <= u) - A (M/2) P(Bin(M - 1, 1/2) <= u - 1), the two CDFs
    read from a table.  M runs over Wj values from ~tail_sd sd below its mean; outside,
    E[. | M] <= (1 - sigma) T M and E[M; M outside] = K p P(Bin(K - 1, p) outside) is bounded by Chernoff (above
    the window also by a conditional Hoeffding bound, whichever is smaller).  Where the window would leave
    the table, K is capped (g is non-increasing in K, Ladjel Lemma 2's proof; see _delta_exact_point) and the
    corrected Bennett bound at the true K is also applied.  g is capped by E[L_+].
    """
    p = 2.0 / T
    q = 1.0 - p
    rows, cols = F.shape
    ee = jnp.exp(eps)
    em1 = jnp.expm1(eps)
    ts = (1.0 - sigma) * T
    A = ts * (1.0 + ee)
    b_plus = _b_plus_up(ts, sigma, em1)
    pos_mean = jnp.maximum(b_plus, 0.0) / T
    Wj = nsteps
    # Cap K where the mean + tail_sd sd of M would leave the table (M <= r0 + rows - 1); below the cap the
    # window is clipped to the table if needed and what it misses is charged by the tail bounds.
    kcap = jnp.floor((r0 + rows - 3.0 - tail_sd * jnp.sqrt((r0 + rows) * q)) / p)
    k = jnp.maximum(jnp.minimum(K, kcap), 1.0)
    sd = jnp.sqrt(k * p * q)
    half = jnp.minimum(jnp.ceil(tail_sd * sd) + 1.0, Wj / 2.0)
    top = jnp.maximum(jnp.minimum(k, r0 + rows - 1.0) - Wj + 1.0, r0)
    # C_M <= 0 (so E[(C_M - A N2)_+ | M] = 0) for M <= K sigma (e^eps - 1) / ((1 - sigma) T): start above.
    mstar = jnp.floor(k * sigma * em1 / jnp.where(ts > 0, ts, 1.0))
    m0 = jnp.clip(jnp.maximum(jnp.floor(k * p - half), mstar), r0, top)
    covered = (2.0 * jnp.ceil(tail_sd * sd) + 3.0 <= Wj) & (K <= kcap) & (m0 <= jnp.maximum(k * p - tail_sd * sd, 0.0))
    # M runs over m0 + i, i < Wj, streamed (lax.scan): the Bin(k, p) weight by the exact ratio recurrence
    # w(M + 1) = w(M) (k - M) / (M + 1) * p / q (relative error <= Wj ulps), the CDFs from the table.
    w0 = jnp.exp(log_binom_pmf(m0, k, p))
    odds = p / jnp.where(q > 0, q, 1.0)
    ks = k * sigma * em1

    def value(M, x):  # C_M - A x without the (1 + e^eps) x - e^eps x cancellation
        return ts * ((M - x) - ee * x) - ks

    safeA = jnp.where(A > 0, A, 1.0)

    def step(carry, i):
        w, acc = carry
        M = m0 + i
        wm = jnp.where(p >= 1.0, jnp.where(M == k, 1.0, 0.0), jnp.where(M <= k, w, 0.0))
        C = ts * M - ks
        u = jnp.ceil(C / safeA) - 1.0
        u = jnp.where(value(M, u + 1.0) > 0, u + 1.0, u)
        u = jnp.where(value(M, u) > 0, u, u - 1.0)
        u = jnp.minimum(u, M)
        c1 = _half_cdf_lookup(F, r0, u, M)
        c2 = _half_cdf_lookup(F, r0, u - 1.0, M - 1.0)
        t1 = C * c1
        t2 = A * (M / 2.0) * c2
        h = jnp.maximum(t1 - t2, 0.0) + _CANCEL_MARGIN * (jnp.abs(t1) + t2)
        # rows M and M - 1 must be in the table; elsewhere (only where a window is wider than the table)
        # the bound (C_M - A N2)_+ <= C_M is used
        h = jnp.where((M - 1.0 >= r0) | (M <= 0.0), h, C)
        h = jnp.where(M <= r0 + rows - 1.0, h, C)
        h = jnp.where((A > 0) & (C > 0) & (u >= 0), h, 0.0)
        w_next = w * jnp.maximum(k - M, 0.0) / (M + 1.0) * odds
        return (w_next, acc + wm * h), None

    def loop(i, carry):
        return step(carry, i.astype(jnp.float64))[0]

    _, body = jax.lax.fori_loop(0, nsteps.astype(jnp.int32), loop, (w0, jnp.zeros_like(k)))
    m_hi = m0 + Wj - 1.0
    # Outside the window: E[. | M] <= (1 - sigma) T M and E[M; M in a set] = k p P(Bin(k - 1, p) in the set),
    # bounded by Chernoff (one stacked call: compiled once).
    tails = _binom_upper_tail(jnp.stack([k - m0 + 1.0, m_hi, m_hi + 1.0]), jnp.stack([k - 1.0, k - 1.0, k]),
                              jnp.stack([q + 0.0 * k, p + 0.0 * k, p + 0.0 * k]))
    kp_ts = ts * k * p
    low = kp_ts * jnp.where((m0 - 2.0 < 0) | (ts * (m0 - 1.0) <= k * sigma * em1), 0.0, tails[0])
    high = kp_ts * tails[1]
    # Sharper above the window: C_M / A <= M / (1 + e^eps), so Hoeffding on N2 ~ Bin(M, 1/2) with
    # tau = (e^eps - 1) / (2 (1 + e^eps)) gives E[(C_M - A N2)_+ | M] <= A exp(-2 M tau^2) / (4 tau), decreasing.
    tau = em1 / (2.0 * (1.0 + ee))
    st = jnp.where(tau > 0, tau, 1.0)
    cond = jnp.where(tau > 0, A * jnp.exp(-2.0 * (m_hi + 1.0) * st * st) / (4.0 * st), jnp.inf)
    high = jnp.minimum(high, jnp.where(tails[2] > 0, cond * tails[2], 0.0))
    g = ((body + low + high) * (1.0 + _REL_MARGIN)) / k
    g = jnp.minimum(g, pos_mean)
    # Where K was capped, g(kcap) >= g(K); the corrected Bennett bound at the true K is an upper bound too.
    c2nd = sigma * (2.0 - sigma) * em1 * em1 + ts * (1.0 - sigma) * (1.0 + ee * ee)
    ok = (b_plus > 0) & (em1 > 0)
    ben = jnp.exp(_log_bennett(K, jnp.where(ok, em1, 1.0), jnp.where(ok, b_plus, 1.0), jnp.where(ok, c2nd, 1.0))
                  - jnp.log(K))
    g = jnp.where((K > kcap) & ok, jnp.minimum(g, ben), g)
    return g, covered


def _g_concentration(method, K, eps, T, sigma):
    """Upper bound on g(K) = E[sum_{i<=K} L_i]_+ / K for the target randomizer (Ladjel Lemma 3 with Lemma 5),
    capped by E[L_+] = max(b_+, 0) / T (subadditivity of the positive part); non-increasing in K.

    Hoeffding: (b^2 / (4 a K)) exp(-2 K a^2 / b^2), a = e^eps - 1, b = (1 - sigma) T (1 + e^eps) (Thm 4's a
    and b corrected: docs/errata.md#e-traffic-thm4-a, #e-traffic-thm4-b); Bennett, the corrected form
    (docs/errata.md#e-traffic-lemma3-bennett): (b_+ / (K ln(1 + beta))) exp(-(K c / b_+^2) phi(beta)),
    beta = a b_+ / c, c = E[L^2] (Lemma 5), phi(u) = (1 + u) ln(1 + u) - u by
    :func:`amplify_jax._core.numerics.bennett_phi` (the direct form, clamped at 0 as Balle et al.'s code does,
    docs/errata.md#e-ref-blanket-bennett, cancels where beta is tiny: 0.45% low at beta ~ 1e-11), the exponent
    rounded up by its float64 error (Ladjel Lemma 3 prints the misprinted
    b_+ / (a K ln(1 + beta)) exp(...)).  b_+ = (1 - sigma) T + sigma (1 - e^eps), the upper end of L with the
    sign Lemma 5 prints flipped (docs/errata.md#e-traffic-lemma5).
    """
    ee = jnp.exp(eps)
    a = jnp.expm1(eps)
    ts = (1.0 - sigma) * T
    b_plus = _b_plus_up(ts, sigma, a)
    pos_mean = jnp.maximum(b_plus, 0.0) / T
    if method == "hoeffding":
        b = ts * (1.0 + ee)
        ok = (a > 0) & (b > 0)
        sa, sb = jnp.where(ok, a, 1.0), jnp.where(ok, b, 1.0)
        log_g = 2.0 * jnp.log(sb) - jnp.log(4.0 * sa * K) - 2.0 * K * (sa / sb) ** 2
        g = jnp.where(ok, jnp.exp(log_g), jnp.where(b <= 0, 0.0, jnp.inf))
    else:
        c = sigma * (2.0 - sigma) * a * a + ts * (1.0 - sigma) * (1.0 + ee * ee)
        ok = (b_plus > 0) & (a > 0) & (c > 0)
        sbp, sc, sa = jnp.where(ok, b_plus, 1.0), jnp.where(ok, c, 1.0), jnp.where(ok, a, 1.0)
        log_g = _log_bennett(K, sa, sbp, sc) - jnp.log(K)
        g = jnp.where(ok, jnp.exp(log_g), jnp.where(b_plus <= 0, 0.0, jnp.inf))
    return jnp.minimum(g * (1.0 + _REL_MARGIN), pos_mean)


def _delta_rr_point(method, eps, n, d, T, sigma, F, r0, nsteps, *, Wm, S, tail_sd):
    """Lemma 2 for the target randomizer (k-ary randomized response) at one point; returns (delta, exact).

    delta <= sum_{m'} Bin(m'; n-1, sigma) g(m' + 1 + d), g(K) = E[sum_{i<=K} L_i]_+ / K, which is
    non-increasing in K (the average of K + 1 exchangeable terms is the mean of its leave-one-out averages,
    and (.)_+ is convex).  m' runs over Wm bins of ``stride`` consecutive values (stride 1 -- exact -- while
    Wm points cover mean +- tail_sd sd; up to S otherwise), each bin's mass times g at its lowest m'; the
    mass above the window times g at the last bin, the mass below it times E[L_+] >= g, both bounded by
    Chernoff.  ``exact``: stride 1 and every g window covered its mean +- tail_sd sd.
    g is :func:`_g_exact` (method "exact") or the Hoeffding / Bennett bound of :func:`_g_concentration`; both
    are non-increasing in K, so the bins bound soundly either way.
    """
    eps = jnp.minimum(eps, _EPS_CLIP)
    N = n - 1.0
    sd = jnp.sqrt(N * sigma * (1.0 - sigma))
    need = 2.0 * jnp.ceil(tail_sd * sd) + 3.0
    stride = jnp.clip(jnp.ceil(need / Wm), 1.0, float(S))
    span = stride * Wm
    half = jnp.minimum(jnp.ceil(tail_sd * sd) + 1.0, span / 2.0)
    j0 = jnp.clip(jnp.floor(N * sigma - half), 0.0, jnp.maximum(N - span + 1.0, 0.0))
    first = log_binom_pmf(j0, N, sigma)
    jf, wf = _pmf_run(first, N, sigma, j0, Wm * S)
    wf = jnp.where(sigma >= 1.0, (jf == N).astype(jnp.float64), wf)
    idx = jnp.arange(Wm * S, dtype=jnp.float64)
    wf = jnp.where((jf <= N) & (idx < span), wf, 0.0)
    bins = jnp.arange(Wm, dtype=jnp.float64)
    if S == 1:
        W = wf
    else:
        cum = jnp.cumsum(wf)
        last = ((bins + 1.0) * stride - 1.0).astype(jnp.int32)
        hi = cum[last]
        W = jnp.maximum(hi - jnp.concatenate([jnp.zeros((1,)), hi[:-1]]), 0.0)
    K = j0 + bins * stride + d + 1.0
    if method == "exact":
        g, covered = _g_exact(K, eps, T, sigma, F, r0, nsteps, tail_sd=tail_sd)
    else:
        g, covered = _g_concentration(method, K, eps, T, sigma), True
    live = W > 0
    body = jnp.sum(W * g) * (1.0 + _REL_MARGIN) + 4.0 * Wm * _U * jnp.max(g)
    ts = (1.0 - sigma) * T
    b_plus = _b_plus_up(ts, sigma, jnp.expm1(eps))
    pos_mean = jnp.maximum(b_plus, 0.0) / T
    tails = _binom_upper_tail(jnp.stack([N - j0 + 1.0, j0 + span]), N, jnp.stack([1.0 - sigma, sigma]))
    low = jnp.where(j0 - 1.0 < 0, 0.0, tails[0]) * pos_mean
    high = tails[1] * g[-1]
    delta = jnp.minimum(body + low + high, 1.0)
    delta = jnp.where((b_plus <= 0) | (ts <= 0), 0.0, delta)
    exact = (stride == 1.0) & jnp.all(covered | ~live)
    return delta, exact


# ---------------------------------------------------------------------------------------------------------
# Plans: window sizes per point, points grouped by window (few compiled shapes, little padding)

WM_MAX = 512  #: most m' bins of the Lemma 2 sum per point (beyond: bins of several m' values, an upper bound)
WJ_MAX = 4096  #: most values of M = N1 + N2 per g(K) (beyond: tails bounded by Chernoff; sound)
S_MAX = 64  #: most m' values per bin
_CHUNK_LANES = 1 << 13  #: points x bins per compiled call


def _pow2(w, minimum=8):
    w = max(int(w), minimum)
    return 1 << (w - 1).bit_length()


#: Points per compiled call of the planned kernels (issue 25): a chunk of a plan is padded (copies of its first
#: point) to the smallest of these sizes that holds it, or to the plan's largest chunk for its window, so that a
#: kernel compiles one program per (window, size) instead of one per power of two of a group's size.  The chunks'
#: points, and so every value, are those of the plan without the padding.
CHUNK_BUCKETS = (1, 8, 64, 512)


def _chunk_bucket(m: int, cmax: int) -> int:
    """The padded size of a chunk of ``m`` points whose window allows at most ``cmax`` points per call."""
    return next((b for b in CHUNK_BUCKETS if m <= b < cmax), cmax)


class _Plan(NamedTuple):
    chunks: tuple  #: ((Wm, S), index array, inner steps) per chunk of points
    r0: int  #: first row (M value) of the CDF table
    rows: int
    cols: int


def _plan_rr(n, d, T, sigma, tail_sd, eps=None) -> _Plan:
    """Window sizes for every point (flat float arrays) of the exact target-randomizer kernel.

    m' ~ Bin(n-1, sigma): Wm bins (a power of 2, static) cover mean +- tail_sd sd (up to WM_MAX; beyond,
    bins of S values).  M ~ Bin(K, 2/T), for K up to the top of that window: the inner loop runs over
    enough values to cover its mean +- tail_sd sd (a traced trip count, the largest in the chunk, so that
    points sorted by it share chunks).  The table of Bin(M, 1/2) CDFs spans the M values of every window.
    Every size is sound (truncations are bounded); a larger one is only tighter.
    """
    N = n - 1.0
    sd = np.sqrt(np.maximum(N * sigma * (1.0 - sigma), 0.0))
    wm_need = 2.0 * np.ceil(tail_sd * sd) + 3.0
    Kmin = np.maximum(np.floor(N * sigma - tail_sd * sd) - 1.0, 0.0) + d + 1.0
    Kmax = np.minimum(np.ceil(N * sigma + tail_sd * sd) + 1.0, N) + d + 1.0
    p = 2.0 / T
    sdK = np.sqrt(Kmax * p * (1.0 - p))
    wj = 2.0 * np.ceil(tail_sd * sdK) + 3.0
    if eps is not None:  # M below K sigma (e^eps - 1) / ((1 - sigma) T) contributes nothing: skipped
        ratio = sigma * np.expm1(np.minimum(eps, 300.0)) / np.maximum((1.0 - sigma) * T, 1e-300)
        wj = np.minimum(wj, np.maximum(Kmax * p + tail_sd * sdK + 3.0 - Kmax * ratio, 0.0))
        wj = np.maximum(wj, np.minimum(2.0 * np.ceil(tail_sd * np.sqrt(Kmin * p * (1.0 - p))) + 3.0,
                                       np.maximum(Kmin * p + tail_sd * sdK + 3.0 - Kmin * ratio, 0.0)))
    wj = np.clip(np.minimum(wj, Kmax + 1.0), 1.0, WJ_MAX)
    keys = {}
    for i in range(n.shape[0]):
        Wm = min(_pow2(wm_need[i]), WM_MAX)
        S = 1 if wm_need[i] <= Wm else min(_pow2(math.ceil(wm_need[i] / Wm), 1), S_MAX)
        keys.setdefault((Wm, S), []).append(i)
    chunks = []
    for key, idx in sorted(keys.items()):
        idx = np.asarray(idx, dtype=np.int64)
        idx = idx[np.argsort(wj[idx], kind="stable")]
        cmax = max(1, _CHUNK_LANES // key[0])
        c = int(min(cmax, _pow2(idx.shape[0], 1)))
        for b in range(0, idx.shape[0], c):
            sel = idx[b:b + c]
            chunks.append((key, sel, _chunk_bucket(sel.shape[0], cmax), float(math.ceil(np.max(wj[sel]) / 8.0) * 8)))
    lo = np.maximum(np.floor(Kmin * p - tail_sd * np.sqrt(Kmin * p * (1.0 - p))) - 2.0, 0.0)
    hi = np.minimum(Kmax * p + tail_sd * sdK + 10.0, Kmax) + 2.0
    r0 = int(np.min(lo)) // 256 * 256 if lo.size else 0
    rows = _pow2(max(int(np.max(hi)) - r0 + 1, 256)) if hi.size else 256
    # columns a power of two too (a table's shape is a compiled shape; the extra columns are never read: u < M)
    return _Plan(tuple(chunks), r0, rows, _pow2(r0 + rows))


def _rr_table_only_if_exact(method, plan: _Plan) -> _Plan:
    """The plan with a dummy 8 x 8 CDF table unless ``method`` is "exact": Hoeffding and Bennett bound g(K)
    in closed form and never read the table, which at n ~ 4e6 would take gigabytes."""
    return plan if method == "exact" else plan._replace(r0=0, rows=8, cols=8)


def _run_planned(call, plan: _Plan, arrays, outputs: int):
    """Run ``call(statics, chunk_arrays, F, r0, nsteps)`` on every chunk of the plan (padded to its fixed size
    with its first point) and scatter the ``outputs`` results back into flat numpy arrays."""
    size = arrays[0].shape[0]
    with x64_scope():
        # inputs by device_put (jnp.asarray compiles a small program per shape)
        F = jax.device_put(_half_cdf_np(plan.r0, plan.rows, plan.cols))
        r0 = jax.device_put(np.float64(plan.r0))
        pending = []
        for i, (statics, sel, c, nsteps) in enumerate(plan.chunks):
            pad = np.concatenate([sel, np.full(c - sel.shape[0], sel[0])])
            res = call(statics, [jax.device_put(a[pad]) for a in arrays], F, r0,
                       jax.device_put(np.float64(nsteps)) if nsteps >= 0 else jax.device_put(np.uint32(i)))
            pending.append((sel, res))
        outs = [np.empty(size, dtype=np.float64) for _ in range(outputs)]
        for sel, res in pending:
            for o, r in zip(outs, res):
                o[sel] = np.asarray(r)[: sel.shape[0]]
    return outs


@float64_jit(static_argnames=("method", "Wm", "S", "tail_sd"))
def _rr_chunk(method, eps, n, d, T, sigma, F, r0, nsteps, *, Wm, S, tail_sd):
    f = partial(_delta_rr_point, method, Wm=Wm, S=S, tail_sd=tail_sd)
    return jax.vmap(f, in_axes=(0, 0, 0, 0, 0, None, None, None))(eps, n, d, T, sigma, F, r0, nsteps)


def _rr_planned(method, eps, n, d, T, sigma, tail_sd):
    """delta (flat numpy) of Lemma 2 for the target randomizer for flat float arrays, and the ``exact`` flags
    (window coverage)."""
    plan = _rr_table_only_if_exact(method, _plan_rr(n, d, T, sigma, tail_sd, eps))

    def call(statics, a, F, r0, nsteps):
        Wm, S = statics
        return _rr_chunk(method, *a, F, r0, nsteps, Wm=Wm, S=S, tail_sd=tail_sd)

    delta, exact = _run_planned(call, plan, [eps, n, d, T, sigma], 2)
    return delta, exact.astype(bool)


# ---------------------------------------------------------------------------------------------------------
# Fixed-size kernel for traced use (parameters inside another kernel, e.g. a deployment inversion)

_TRACED_WM, _TRACED_S, _TRACED_ROWS = WM_MAX, 16, 512


def rr_delta_traced(method, epsilon, n, d, T, sigma, tail_sd=DEFAULT_TAIL_SD):
    """Lemma 2 for the target randomizer as a pure jnp function of (broadcasting) arrays, with static windows
    (512 bins -- WM_MAX, as in the planned kernel -- of up to 16 m' values; a 512-row CDF table; the inner
    loop's length is the largest need in the batch, capped at 448): for use inside other kernels, where the
    parameters are traced (traffic's deployment inversions).  Sound for every
    input (truncations bounded, K capped where the table ends, with the Bennett bound); exact while the
    windows suffice.  ``method`` in {"hoeffding", "bennett", "exact"}; ``epsilon``: the eps at which delta is
    computed."""
    eps, n, d, T, sigma = jnp.broadcast_arrays(*(jnp.asarray(x, jnp.float64) for x in (epsilon, n, d, T, sigma)))
    shape = eps.shape
    flat = [x.reshape(-1) for x in (eps, n, d, T, sigma)]
    F = jnp.asarray(_half_cdf_np(0, _TRACED_ROWS, _TRACED_ROWS))
    N = flat[1] - 1.0
    s = flat[4]
    Kmax = jnp.minimum(N * s + tail_sd * jnp.sqrt(N * s * (1.0 - s)) + 1.0, N) + flat[2] + 1.0
    p = 2.0 / flat[3]
    need = 2.0 * jnp.ceil(tail_sd * jnp.sqrt(Kmax * p * (1.0 - p))) + 3.0
    nsteps = jnp.clip(jnp.max(jnp.minimum(need, Kmax + 1.0)), 8.0, _TRACED_ROWS - 64.0)
    f = partial(_delta_rr_point, method, Wm=_TRACED_WM, S=_TRACED_S, tail_sd=tail_sd)
    delta, _ = jax.vmap(f, in_axes=(0, 0, 0, 0, 0, None, None, None))(*flat, F, jnp.asarray(0.0), nsteps)
    return delta.reshape(shape)


@float64_jit(static_argnames=("method", "Wm", "S", "tail_sd"))
def _rr_eps_chunk(method, delta, n, d, T, sigma, eps0, rtol, F, r0, nsteps, *, Wm, S, tail_sd):
    f = jax.vmap(partial(_delta_rr_point, method, Wm=Wm, S=S, tail_sd=tail_sd),
                 in_axes=(0, 0, 0, 0, 0, None, None, None))

    def fn(x, n, d, T, sigma):
        return f(x, n, d, T, sigma, F, r0, nsteps)[0]

    inv = invert_monotone_kernel(fn, delta, (n, d, T, sigma), _EPS_FLOOR, _search_hi(eps0), above=True,
                                 rtol=rtol, integer=False)
    return _inversion_result(*inv, eps0)


# ---------------------------------------------------------------------------------------------------------
# Guard on the size of the CDF table (the registered bounds of shuffle and traffic refuse beyond it)

EXACT_MAX_M = 1500.0  #: largest N1 + N2 the exact method tabulates (its CDF table is ~ (2 M)^2 / 2 floats)


def exact_table_check(method, n, dummies, targets, sampling, tail_sd=DEFAULT_TAIL_SD):
    """Refuse method 'exact' (ValueError naming n) where the engine's table of Bin(M, 1/2) CDFs would need M
    beyond EXACT_MAX_M: it tabulates every M up to the top of its windows (:func:`_plan_rr`; n = 1e5 with
    k = 4, or T = 10, sigma = 0.5, n = 1e6, ask for 32 GiB).  Other methods pass.  Arguments broadcast."""
    if method != "exact":
        return
    N = np.asarray(n, np.float64) - 1.0
    s = np.asarray(sampling, np.float64)
    sd = np.sqrt(np.maximum(N * s * (1.0 - s), 0.0))
    kmax = np.minimum(np.ceil(N * s + tail_sd * sd) + 1.0, N) + np.asarray(dummies, np.float64) + 1.0
    p = 2.0 / np.asarray(targets, np.float64)
    top = np.minimum(kmax * p + tail_sd * np.sqrt(kmax * p * (1.0 - p)) + 10.0, kmax) + 2.0
    if np.any(top > EXACT_MAX_M):
        bad = np.broadcast_to(np.asarray(n), np.shape(top))[top > EXACT_MAX_M].flat[0]
        raise ValueError(f"Expected n small enough for method exact (its table of binomial CDFs would exceed "
                         f"{EXACT_MAX_M:g} counts; use bennett or hoeffding), got n={bad:g}.")
