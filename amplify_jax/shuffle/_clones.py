"""The numerical "clones" bound of Feldman, McMillan, Talwar 2021 ("Hiding among the clones", FOCS 2021).

Reduction (FMT Thm 3.2 and its numerical use in Sec. 4): shuffling n reports of an eps0-LDP randomizer
is (eps, delta)-DP if the two distributions

    P = (A + Delta, C - A + 1 - Delta),   Q = (A + 1 - Delta, C - A + Delta),
    C ~ Bin(n - 1, e^-eps0),  A ~ Bin(C, 1/2),  Delta ~ Bern(alpha),  alpha = e^eps0 / (e^eps0 + 1),

are (eps, delta)-indistinguishable, i.e. max(D_e^eps(P || Q), D_e^eps(Q || P)) <= delta.  Given C = c
(which the pair reveals), the first coordinate K has P_c(k) = alpha b_c(k) + (1-alpha) b_c(k-1) and
Q_c(k) = (1-alpha) b_c(k) + alpha b_c(k-1), b_c the Bin(c, 1/2) pmf, so D(P||Q) = sum_c Pr[C = c] D_c.

Exact per-c divergence (monotone likelihood ratio).  P_c(k) / Q_c(k) decreases in k, so the positive part
of P_c - e^eps Q_c is exactly the set k <= t_c, t_c = ceil((c+1) beta) - 1,
beta = (e^eps0 - e^eps) / ((e^eps0 - 1)(1 + e^eps)), and

    D_c = A2 b_c(t_c) - (e^eps - 1) F_c(t_c),   F_c(t) = Pr[Bin(c, 1/2) <= t],   A2 = (e^(eps+eps0) - 1) / (e^eps0 + 1).

Both directions.  The map k -> c + 1 - k sends P_c to Q_c (b_c(c+1-k) = b_c(k-1)), so D(Q||P) = D(P||Q)
exactly, cut-off for cut-off (u_c = c + 1 - t_c); the tests check it against full sums of both directions.
So one direction is computed.  (docs/errata.md#e-ref-clones: the public reference code takes the second
direction's maximum over one end of each block twice, which under-states D(Q||P); the symmetry makes its
max(D(P||Q), D(Q||P)) harmless there.)

Monotone in c.  P_{c+1} = P_c * Bern(1/2) and Q_{c+1} = Q_c * Bern(1/2) (the same added coin), so
D_{c+1} <= D_c by data processing; D_0 = A1 = (e^eps0 - e^eps) / (e^eps0 + 1).

Speed.  c runs over a window of Bin(n-1, e^-eps0) of static width W, from z_lo sd below the mean to
z_hi above it (O(sqrt n); all of [0, n-1] when W covers it).  For one reference eps_r, b_c(t_c) comes for
every c of the window from Loader's form, and F_c(t_c) from one accurate F at an anchor c* (a table of the
Bin(c*, 1/2) CDF, built once per point) and the exact recurrence F_{c+1}(t) = F_c(t) - b_c(t)/2
(thresholds move by 0 or 1) run both ways from c*: prefix sums, done as dot products with triangular
ones.  From these, tables of b_c and F_c at t_c(eps_r) - K .. t_c(eps_r) + K (K = 8) follow by exact pmf
ratios, so every eps whose thresholds stay within K of the reference's is evaluated elementwise (a
gather and one fused pass, no transcendental per c).  eps is bracketed by a safeguarded Newton iteration
on log delta(eps) (or on delta(e^eps), convex, near eps0), with dD/deps = -e^eps Q(S) free from the same
tables, evaluating three points per iteration (the Newton estimate and the estimate times 1 -+ its
predicted error, so that both ends get certified), started at the Gaussian-DP approximation
mu = 2 tanh(eps0/2) / sqrt(E[C]); it rebuilds the reference only when the thresholds leave the tables.
Typically 4 iterations and 1-2 reference builds per point.

Soundness.  ``upper``: delta_upper(eps) = sum over the window of Pr[C = c] D_c with D_c from above (every
pmf within a relative error budget _E, prefix-sum rounding bounded per output by the increments it
crosses, products and sums rounded outward), + Pr[C < window] * A1 + Pr[C > window] * D_last
(monotonicity in c; Chernoff tail bounds), + 1e-290 for underflow; the returned eps is the feasible end
of the bracket.  ``lower``: the same sums from below without tails, a lower bound on the exact divergence
of the clone pair; the returned eps is the infeasible end.  So lower <= eps*(clone pair) <= upper.  At
eps = eps0 every D_c is 0 (P/Q <= e^eps0), so eps0 is always certified.  The bracket closes to ``rtol``
unless the float64 bounds cannot resolve it (D_c = A2 b - (e^eps - 1) F cancels by a factor ~e^eps, so
very large eps or very small delta cost precision); ``converged`` says which.  ``lower`` bounds what this
analysis can certify, not the true privacy of the shuffled mechanism.
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._core import validate as _validate
from .._core.domains import check_params
from .._core.numerics import float64_jit, x64_scope
from . import _binomial as B
from ._blanket_concentration import _bucket
from ._params import DELTA, EPS0, EPSILON, N

__all__ = ["ClonesBound", "ClonesDelta", "clones_epsilon", "clones_delta"]

_U = 2.220446049250313e-16  # 2 u (unit roundoff 2^-53, doubled)
_E = 1e-12  # relative error budget of one pmf value from Loader's log form (measured <= ~2e-14 against
#             mpmath, tests/test_shuffle_clones.py; its terms are O(|log pmf|) <= ~700 with few-ulp errors)
_BLK = 64  # window sizes are multiples of this
_PB = 16  # prefix-sum block
_CH = 8  # Loader anchor spacing of the pmf ratio chains
_K = 8  # half-width of the threshold tables around the reference
_FLUSH = -650.0  # anchors with log below this are flushed to 0 and covered by an explicit slack
_TINY = 1e-290  # absolute slack for subnormal / underflowed terms (each < 1e-300, at most ~1e7 of them)
_RTAIL = 1e-10  # window sized so that the truncated mass is ~1e-10 delta


class ClonesBound(NamedTuple):
    """lower <= eps of the clone reduction <= upper (see the module docstring).

    valid: True where upper is certified (always, since eps0 itself is: kept for compatibility).
    converged: True where upper - lower <= rtol * upper was reached within max_iter.
    """

    lower: jax.Array
    upper: jax.Array
    valid: jax.Array
    converged: jax.Array


class _Setup(NamedTuple):
    c: jax.Array  # (W,) window of C (float)
    w: jax.Array  # (W,) Pr[C = c], nominal, 0 outside [0, n-1]
    w_up: jax.Array  # (W,) w times (1 + its error bound): for the upper sums
    w_lo: jax.Array  # (W,) w times (1 - error bound - the effect of rounding p down): for the lower sums
    low_tail: jax.Array  # Chernoff bound on Pr[C < c[0]]
    high_tail: jax.Array  # Chernoff bound on Pr[C > c[-1]]
    jstar: jax.Array  # index in the window of the anchor c* where F is taken from the table
    kb: jax.Array  # first k of the F table
    ftab: jax.Array  # (L,) Pr[kb <= Bin(c*, 1/2) <= kb + i], computed
    ftab_err: jax.Array  # relative error bound of ftab entries
    ftab_tail: jax.Array  # Chernoff bound on Pr[Bin(c*, 1/2) < kb]


class _Ref(NamedTuple):
    t: jax.Array  # (W,) reference thresholds t_c(eps_r)
    b: jax.Array  # (2K+1, W) b_c(t + d), d = -K..K (computed values)
    f: jax.Array  # (2K+1, W) F_c(t + d), nominal (F0 lower end + prefix sums)
    f_err: jax.Array  # (W,) absolute error bound of every f entry (beyond the F0 uncertainty)
    f0_extra: jax.Array  # F0_hi - F0_lo (uncertainty of the starting F, carried to every c)
    b_slack: jax.Array  # (W,) upper bound on b_c(k), k within the tables, where the anchor was flushed


def _tri(m, strict=False):
    """(m, m) upper-triangular ones (x @ U = inclusive prefix sums; strict: exclusive)."""
    return jnp.asarray(np.triu(np.ones((m, m)), 1 if strict else 0))


def _scan_last(x, op):
    """Inclusive scan of ``op`` along a short last axis, unrolled into elementwise ops that XLA fuses
    (for small arrays: XLA's dot and reduce-window cost ~20-30 us each on CPU whatever the size)."""
    cols = [x[..., 0]]
    for j in range(1, x.shape[-1]):
        cols.append(op(cols[-1], x[..., j]))
    return jnp.stack(cols, axis=-1)


def _prefix(x):
    """Inclusive prefix sum along the last axis (length a multiple of _PB) by dot products with triangular
    ones: blocks of _PB, then the block totals recursively.  Each output is the sum of at most _PB terms
    per level plus one offset per level, so its rounding error is <= _prefix_err(W) * sum |x| whatever
    the order XLA sums a dot product in.  (XLA's cumsum is a reduce-window costing O(width) per element on
    CPU, pathological along a major axis.)"""
    W = x.shape[-1]
    lead = x.shape[:-1]
    if W <= _PB:
        return x @ _tri(W)
    X = x.reshape(lead + (W // _PB, _PB))
    inner = X @ _tri(_PB)
    tot = inner[..., -1]
    m = tot.shape[-1]
    if m <= _PB:
        off = tot @ _tri(m, strict=True)
    else:
        pad = (-m) % _PB
        off = _prefix(jnp.pad(tot, [(0, 0)] * len(lead) + [(0, pad)]))[..., :m] - tot
    return (inner + off[..., None]).reshape(lead + (W,))


def _log_chain(log_anchor, ratio):
    """log x_j, j = 0..W-1 (W % _CH == 0): x at every _CH-th j from ``log_anchor`` (Loader's form), in
    between x_{j+1} = x_j ratio_j (exact pmf ratios, ratio_j >= 0; 0 gives -inf, i.e. x = 0 beyond), the
    logs summed by one dot product per block.  Error of log x_j beyond the anchor's: each log ratio
    3u + u |log r|, the block sum <= _CH u sum |log r|, with |log r| <= log(n + 1) <= 28 for n <= 1e12:
    <= (3 _CH + 2 _CH^2 28) u ~ 3e-13 at _CH = 8, inside the _E budget.  One Loader evaluation per _CH
    points instead of one per point (Loader's form costs ~0.15 us per value on CPU)."""
    W = ratio.shape[0]
    lr = jnp.where(ratio > 0, jnp.log(jnp.where(ratio > 0, ratio, 1.0)), -1e4)
    R = lr.reshape(W // _CH, _CH)
    R = jnp.concatenate([jnp.zeros((W // _CH, 1), R.dtype), R[:, :-1]], axis=1)
    # Small windows: unrolled (fused); large ones: one dot (the unrolled stack is slow at 1e5 points).
    out = log_anchor[:, None] + (_scan_last(R, jnp.add) if W <= 8192 else R @ _tri(_CH))
    return jnp.where(out < -1e3, -jnp.inf, out).reshape(W)


def _prefix_err(W):
    levels = max(1, math.ceil(math.log(max(W, 2)) / math.log(_PB) - 1e-12))
    return (levels + 1) * (_PB + 2) * _U


def _setup(eps0, n, delta, W, L, z_lo):
    N = n - 1.0
    # p rounded down to a multiple of 2^-53 below e^-eps0 (so that q = 1 - p is exact, as Loader's form
    # needs): a smaller p only makes C stochastically smaller and E[D_C] larger (D_c is non-increasing),
    # so the upper sums stay sound; the lower sums carry the difference (w_lo below), the upper tail uses
    # p + dp >= e^-eps0.
    p_f = jnp.exp(-eps0)  # within 2 ulp of e^-eps0
    p = jnp.floor(p_f * (1.0 - 4.0 * _U) * 2.0**53) / 2.0**53
    q = 1.0 - p
    dp = p_f * (1.0 + 4.0 * _U) - p
    sd = jnp.sqrt(N * p * q)
    # Window: from z_lo sd below the mean (Chernoff-bounded mass below), or lower when W covers [0, n-1]
    # from there (no truncation at all for small n).  Anchor c*, where F_c(t_c) is taken from an accurate
    # table and the recurrence starts both ways: the F error grows with the increments crossed, so c* sits
    # where w_c D_c peaks, about mean - q ln(1/delta) (D_c ~ e^(-kappa c), kappa ~ ln(1/delta) / mean,
    # times the Gaussian weight), never below the window's start.  Any anchor is sound.
    lo_win = jnp.maximum(jnp.floor(N * p - z_lo * sd) - 1.0, 0.0)
    start = jnp.maximum(jnp.minimum(lo_win, N + 1.0 - W), 0.0)
    cstar = jnp.clip(jnp.floor(N * p - jnp.minimum(z_lo * sd, q * jnp.log(1.0 / delta))) - 1.0, lo_win, N)
    c = start + jnp.arange(W, dtype=jnp.float64)
    # Pr[C = c] by Loader's form at every c; 0 past N.  Its relative error: _E for the form itself, plus
    # the rounding of N p and N q inside bd0 (d bd0(x, M) / dM = 1 - x/M), <= 3 u |c - N p|; values below
    # 1e-300 are covered by _TINY.
    # CDF table of Bin(c*, 1/2) on kb .. kb + L - 1, which reaches ceil((c* + 1)/2) - 1 >= every t_{c*}.
    top = jnp.ceil((cstar + 1.0) / 2.0) - 1.0
    kb = jnp.maximum(top - (L - 1), 0.0)
    k = kb + jnp.arange(L, dtype=jnp.float64)
    # The Loader anchors of both chains in one call, and the three Chernoff tails in one call (P[X <= k]
    # for Bin(n, p) is P[Y >= n - k] for Bin(n, 1 - p)): fewer, larger kernels.
    na, nk = W // _CH, L // _CH
    la = B.log_binom_pmf(jnp.concatenate([c[::_CH], k[::_CH]]),
                         jnp.concatenate([jnp.full((na,), N), jnp.full((nk,), cstar)]),
                         jnp.concatenate([jnp.full((na,), p), jnp.full((nk,), 0.5)]))
    tl = jnp.exp(B.log_tail_upper(jnp.stack([N - start + 1.0, start + W, cstar - kb + 1.0]), jnp.stack([N, N, cstar]),
                                  jnp.stack([q, jnp.minimum(p + dp, 1.0), jnp.asarray(0.5, jnp.float64)])))
    low_tail, high_tail = tl[0], tl[1]  # P[C <= start - 1] (p, smaller: sound), P[C >= start + W] (p + dp)
    ftab_tail = jnp.where(kb > 0, tl[2], 0.0)  # P[Bin(c*, 1/2) <= kb - 1]
    w_ratio = jnp.maximum(N - c, 0.0) / (c + 1.0) * (p / q)
    w = jnp.exp(_log_chain(la[:na], w_ratio))
    e_w = _E + 3.0 * _U * (jnp.abs(c - N * p) + _CH)  # the anchor is within _CH of c
    # Lower sums: log(w_c(p') / w_c(p)) for p' in [p, p + dp] is concave in p', so >= its value at p + dp.
    shift = jnp.where(p > 0, c * jnp.log1p(dp / jnp.where(p > 0, p, 1.0)), 0.0) + (N - c) * jnp.log1p(-dp / q)
    e_p = jnp.maximum(-shift, 0.0)
    w_up = w * (1.0 + e_w)
    w_lo = w * jnp.maximum(1.0 - e_w - e_p, 0.0)
    k_ratio = jnp.maximum(cstar - k, 0.0) / (k + 1.0)
    ftab = _prefix(jnp.exp(_log_chain(la[na:], k_ratio)))
    ftab_err = _E + _prefix_err(L)
    return _Setup(c, w, w_up, w_lo, jnp.minimum(low_tail, 1.0), jnp.minimum(high_tail, 1.0), (cstar - start).astype(jnp.int32),
                  kb, ftab, ftab_err, ftab_tail)


class _Coef(NamedTuple):
    ee: jax.Array  # e^eps
    em1: jax.Array  # e^eps - 1
    beta: jax.Array
    A1: jax.Array
    A2: jax.Array
    alpha: jax.Array
    live: jax.Array  # eps < eps0


def _coef(eps, eps0):
    live = eps < eps0
    e = jnp.where(live, eps, 0.0)
    ee = jnp.exp(e)
    em1 = jnp.expm1(e)
    E0p1 = jnp.exp(eps0) + 1.0
    d0 = jnp.expm1(jnp.where(live, eps0 - e, 1.0))  # e^(eps0 - eps) - 1, no cancellation
    beta = ee * d0 / (jnp.expm1(eps0) * (1.0 + ee))
    A1 = ee * d0 / E0p1
    A2 = jnp.expm1(e + eps0) / E0p1
    alpha = 1.0 / (1.0 + jnp.exp(-eps0))
    return _Coef(ee, em1, beta, A1, A2, alpha, live)


def _thresholds(cf: _Coef, c):
    # t_c = ceil((c+1) beta) - 1 in [0, c] for beta in (0, 1/2].  A rounding of (c+1) beta across an
    # integer moves t by one, which changes D_c by a term of size <~ 20 u A2 b_c (the likelihood ratio is
    # within a few ulps of e^eps there), inside the _E budget.
    return jnp.clip(jnp.ceil((c + 1.0) * cf.beta) - 1.0, 0.0, c)


def _build_ref(eps, eps0, s: _Setup) -> _Ref:
    """Reference tables at eps (eps < eps0)."""
    cf = _coef(eps, eps0)
    c = s.c
    W = c.shape[0]
    t = _thresholds(cf, c)
    t_next = jnp.concatenate([t[1:], t[-1:]])
    up = t_next > t
    # b_{c+1}(t_{c+1}) / b_c(t_c) = (c+1) / (2 (c+1-t)) if t stays, (c+1) / (2 (t+1)) if t moves up.
    b_ratio = (c + 1.0) / (2.0 * jnp.where(up, t + 1.0, c + 1.0 - t))
    lb = _log_chain(B.log_binom_pmf(t[::_CH], c[::_CH], 0.5), b_ratio)
    flushed = lb < _FLUSH
    b = jnp.where(flushed, 0.0, jnp.exp(lb))
    # Where b_c(t) < e^-650 it is set to 0 and covered by a slack: b_c(k) <= b_c(t) (c+1)^(K+1) for k
    # within the tables (each pmf ratio is <= c + 1).  Elsewhere neighbours below ~1e-308 lose relative
    # accuracy but each is off by < 1e-323 (covered by _TINY).
    b_slack = jnp.where(flushed, jnp.exp(jnp.minimum(lb + (_K + 1) * jnp.log(c + 1.0), 0.0)), 0.0)
    # F at the anchor c* from the table, then F_{c+1}(t_{c+1}) = F_c(t_c) + inc_c both ways from there.
    ts, cs = t[s.jstar], c[s.jstar]
    i0 = ts - s.kb
    below = i0 < 0
    F0 = s.ftab[jnp.clip(i0, 0, s.ftab.shape[0] - 1).astype(jnp.int32)]
    F0_lo = jnp.where(below, 0.0, F0 * (1.0 - s.ftab_err))
    F0_hi = jnp.where(below, jnp.exp(B.log_tail_lower(ts, cs, 0.5)), F0 * (1.0 + s.ftab_err) + s.ftab_tail)
    b_t1 = b * (c - t) / (t + 1.0)  # b_c(t + 1)
    inc = jnp.where(up, 0.5 * b_t1, -0.5 * b)
    inc = jnp.where(jnp.arange(W) == W - 1, 0.0, inc)
    # Forward from c*: F_j = F* + sum_{j* <= i < j} inc_i; backward: F_j = F* - sum_{j <= i < j*} inc_i.
    # Each as a prefix sum over the increments on its side only (zeros elsewhere), so that an output's
    # rounding error is bounded by _prefix_err times the sum of |inc| between c* and c (dist), not over
    # the whole window.
    idx = jnp.arange(W)
    fwd = jnp.where(idx >= s.jstar, inc, 0.0)
    bwd = jnp.where(idx < s.jstar, inc, 0.0)[::-1]
    rows = jnp.stack([fwd, jnp.abs(fwd), bwd, jnp.abs(bwd)])
    pre = _prefix(rows)
    f_ex = pre[0] - rows[0]  # sum_{i < j} fwd_i (exclusive)
    b_in = pre[2][::-1]  # sum_{i >= j} bwd_i (inclusive, in the original order)
    cum = jnp.where(idx >= s.jstar, f_ex, -b_in)
    dist = jnp.where(idx >= s.jstar, pre[1] - rows[1], pre[3][::-1]) * (1.0 + _prefix_err(W))
    F = F0_lo + cum
    # Errors: every inc carries _E (+ rounding) and the prefix sums _prefix_err, both times dist; the
    # final addition; flushed terms their slack.
    s_abs = jnp.sum(jnp.abs(inc))
    errF = ((_E + 4.0 * _U + _prefix_err(W)) * dist + 2.0 * _U * (F0_hi + dist)
            + 2.0 * jnp.sum(b_slack * (c + 1.0)) + _TINY)
    # Neighbours t + d, d = -K..K, by exact pmf ratios: b(t+j) = b(t+j-1) (c-t-j+1)/(t+j) and
    # b(t-j) = b(t-j+1) (t-j+1)/(c-t+j), as products along a short axis (relative error <= 2K u);
    # F(t+d) = F(t) + sum_{e=1..d} b(t+e), F(t-d) = F(t) - sum_{e=0..d-1} b(t-e).
    j = jnp.arange(1, _K + 1, dtype=jnp.float64)[:, None]
    r_up = jnp.maximum(c - t - j + 1.0, 0.0) / (t + j)
    r_dn = jnp.maximum(t - j + 1.0, 0.0) / (c - t + j)
    # Products and sums along the short axis written out row by row (XLA's cumprod along a major axis is
    # a reduce-window costing ~0.1 s at 1e5 points).
    bu, bd, fu, fd = [b], [b], [F], [F]
    for i in range(_K):
        fd.append(fd[-1] - bd[-1])  # F(t-i-1) = F(t-i) - b(t-i)
        bu.append(bu[-1] * r_up[i])  # b(t+i+1)
        bd.append(bd[-1] * r_dn[i])  # b(t-i-1)
        fu.append(fu[-1] + bu[-1])  # F(t+i+1)
    b_up, b_dn, f_up, f_dn = (jnp.stack(v[1:]) for v in (bu, bd, fu, fd))
    bt = jnp.concatenate([b_dn[::-1], b[None, :], b_up], axis=0)
    ft = jnp.concatenate([f_dn[::-1], F[None, :], f_up], axis=0)
    sb = jnp.sum(bt, axis=0)
    f_err = errF + (_E + (4.0 * _K + 4.0) * _U) * sb + _U * jnp.max(jnp.abs(ft), axis=0)  # (W,)
    return _Ref(t, bt, ft, f_err, F0_hi - F0_lo, b_slack)


def _dummy_ref(W) -> _Ref:
    z = jnp.zeros((W,), jnp.float64)
    zz = jnp.zeros((2 * _K + 1, W), jnp.float64)
    return _Ref(z - 1e18, zz, zz, z, jnp.zeros((), jnp.float64), z)


def _in_range(eps, eps0, s: _Setup, r: _Ref):
    cf = _coef(eps, eps0)
    d = _thresholds(cf, s.c) - r.t
    return jnp.all(jnp.abs(d) <= _K) | ~cf.live


class _Eval(NamedTuple):
    up: jax.Array  # upper bound on delta(eps) (tails included)
    lo: jax.Array  # lower bound on delta(eps)
    nom: jax.Array  # nominal delta_up (for Newton)
    slope: jax.Array  # nominal d delta_up / d eps (<= 0), truncation terms included
    gap: jax.Array  # the rounding part of up - lo (no truncation terms)


def _eval(eps, eps0, s: _Setup, r: _Ref) -> _Eval:
    """delta bounds at eps from the reference tables (requires _in_range)."""
    cf = _coef(eps, eps0)
    c = s.c
    d = _thresholds(cf, c) - r.t
    idx = jnp.clip(d + _K, 0, 2 * _K).astype(jnp.int32)[None, :]
    b = jnp.take_along_axis(r.b, idx, axis=0)[0]
    F = jnp.take_along_axis(r.f, idx, axis=0)[0]
    # b carries _E (+ the neighbour products' 2K u), A2 and e^eps - 1 a few ulps each, the products and
    # the difference one rounding each: (1 +- eb) and (1 -+ 8u) factors bound them outward.
    eb = _E + (2.0 * _K + 8.0) * _U
    F_lo = jnp.clip(F - r.f_err, 0.0, 1.0)
    F_hi = jnp.clip(F + r.f_err + r.f0_extra, 0.0, 1.0)
    Ab = cf.A2 * b
    D_up = jnp.maximum(Ab * (1.0 + eb) + cf.A2 * r.b_slack - cf.em1 * F_lo * (1.0 - 8.0 * _U), 0.0)
    D_lo = jnp.maximum(Ab * (1.0 - eb) - cf.em1 * F_hi * (1.0 + 8.0 * _U), 0.0)
    D_nom = jnp.maximum(Ab - cf.em1 * F, 0.0)
    W = c.shape[0]
    sum_err = (W + 8) * _U  # any order of summing W non-negative terms (w's own errors are in w_up, w_lo)
    q = jnp.where(D_nom > 0, F - cf.alpha * b, 0.0)
    sums = jnp.sum(jnp.stack([s.w_up * D_up, s.w_lo * D_lo, s.w * D_nom, s.w * q]), axis=1)
    core_up = sums[0] * (1.0 + sum_err)
    core_lo = sums[1] * (1.0 - sum_err)
    tails = (s.low_tail * cf.A1 + s.high_tail * D_up[-1]) * (1.0 + 8.0 * _U)
    up = core_up + tails + _TINY
    nom = sums[2] + tails
    # dD/deps = -e^eps Q(S) = -e^eps sum_c w_c (F_c(t_c) - alpha b_c(t_c)) on the positive set; the lower
    # tail term's A1 has dA1/deps = -e^eps / (e^eps0 + 1).
    slope = -cf.ee * (sums[3] + s.low_tail / (jnp.exp(eps0) + 1.0))
    zero = jnp.zeros_like(up)
    return _Eval(jnp.where(cf.live, up, zero), jnp.where(cf.live, core_lo, zero), jnp.where(cf.live, nom, zero),
                 jnp.where(cf.live, slope, zero), jnp.where(cf.live, core_up - core_lo, zero))


def _guess(eps0, n, delta):
    """Gaussian-DP approximation: mu = 2 tanh(eps0/2) / sqrt(E[C]), delta ~ mu (phi(s) - s Phi(-s)) ~
    mu phi(s) / s^2 at eps = mu s.  Only a starting point."""
    cbar = jnp.maximum((n - 1.0) * jnp.exp(-eps0), 1.0)
    mu = 2.0 * jnp.tanh(eps0 / 2.0) / jnp.sqrt(cbar)
    Lg = jnp.log(mu / delta) - 0.5 * math.log(2.0 * math.pi)
    sv = jnp.sqrt(2.0 * jnp.maximum(Lg, 0.5))
    for _ in range(4):
        sv = jnp.sqrt(2.0 * jnp.maximum(Lg - 2.0 * jnp.log(sv), 0.5))
    g = mu * sv
    return jnp.where((g > 0) & (g < 0.9 * eps0), g, 0.5 * eps0)


def _newton(x, ev, delta):
    """Newton candidates from one evaluation: on log delta(eps) (the usual, near-Gaussian regime) and on
    delta(e^eps) (convex in e^eps: from the left of the root it never overshoots; the regime near eps0,
    where delta falls linearly to 0)."""
    good = (ev.up > 0) & (ev.nom > 0) & (ev.slope < 0)
    slope = jnp.where(good, ev.slope, -1.0)
    r_log = x - (jnp.log(jnp.where(good, ev.up, 1.0)) - jnp.log(delta)) * ev.nom / slope
    arg = -(ev.up - delta) / slope  # relative change of e^eps
    r_lin = x + jnp.log1p(jnp.where(arg > -1.0, arg, 0.0))
    return good, r_log, jnp.where(arg > -1.0, r_lin, -jnp.inf)


def _point(eps0, n, delta, rtol, *, W, L, z_lo, max_iter):
    """Bracket [lo, hi] of eps*, refined by three evaluations per iteration: the Newton estimate r and
    r (1 -+ s), s the predicted Newton error (quadratic convergence), so that the side points certify
    both ends once r is accurate.  Falls back to bisection when Newton leaves the bracket."""
    ok0 = eps0 > 0
    eps0 = jnp.where(ok0, eps0, 1.0)
    s = _setup(eps0, n, delta, W, L, z_lo)
    zero = jnp.zeros((), jnp.float64)
    evals = jax.vmap(lambda x, ref: _eval(x, eps0, s, ref), in_axes=(0, None))
    ranges = jax.vmap(lambda x, ref: _in_range(x, eps0, s, ref), in_axes=(0, None))

    def cond(st):
        it, lo, hi, zone = st[0], st[1], st[2], st[7]
        return (it < max_iter) & (hi - lo > jnp.maximum(rtol * hi, 4.0 * zone))

    def body(st):
        it, lo, hi, r, sp, ref, nref, zone, widen = st
        need = ~_in_range(r, eps0, s, ref)
        ref = jax.lax.cond(need, lambda: _build_ref(r, eps0, s), lambda: ref)
        nref = nref + need.astype(jnp.int32)
        spread = sp * widen
        xs = jnp.stack([r, r * (1.0 - spread), r * (1.0 + spread)])
        xs = jnp.clip(xs, lo, hi)
        ok = ranges(xs, ref)
        ev = evals(xs, ref)
        feas = ok & (ev.up <= delta)
        infe = ok & (ev.lo > delta)
        hi_new = jnp.minimum(hi, jnp.min(jnp.where(feas, xs, jnp.inf)))
        lo_new = jnp.maximum(lo, jnp.max(jnp.where(infe, xs, -jnp.inf)))
        shrunk = (hi_new < hi) | (lo_new > lo)
        lo, hi = lo_new, hi_new
        widen = jnp.where(shrunk, 1.0, 2.0 * widen)
        # Newton from the centre point (always within the tables).
        e0 = jax.tree_util.tree_map(lambda a: a[0], ev)
        good, r_log, r_lin = _newton(xs[0], e0, delta)
        good = good & ok[0]
        # Resolution of the float64 bounds in eps: the width over which up > delta >= lo can both hold.
        unsure = ok[0] & (e0.up > delta) & (e0.lo <= delta)
        # (Rounding only: where the truncated tails dominate the gap, the two ends have separate roots and
        # the loop runs on to max_iter, refining each.)
        zone = jnp.where(unsure, jnp.where(good, e0.gap / jnp.maximum(-e0.slope, 1e-300), hi - lo), zone)
        inside = lambda v: good & (v > lo) & (v < hi)
        mid = jnp.where(lo > 0, jnp.sqrt(lo * hi), hi / 16.0)
        bisect = (it >= 8) & (it % 2 == 1)  # guarantees progress if Newton stalls
        rn = jnp.where(inside(r_log) & ~bisect, r_log, jnp.where(inside(r_lin) & ~bisect, r_lin, mid))
        newton = (inside(r_log) | inside(r_lin)) & ~bisect
        # Predicted relative error of rn: ~ (relative step)^2 for Newton; a quarter bracket for bisection.
        step = jnp.abs(rn - xs[0]) / jnp.maximum(rn, 1e-300)
        sp = jnp.where(newton, jnp.minimum(4.0 * step * step, 0.05), 0.25 * (hi - lo) / jnp.maximum(rn, 1e-300))
        sp = jnp.maximum(sp, jnp.maximum(0.25 * rtol, 1.5 * zone / jnp.maximum(rn, 1e-300)))
        # The root may be at 0 (delta >= total variation): try 0 when Newton points below the bracket.
        try0 = (lo == 0) & good & (r_log <= 0) & (r_lin <= lo)
        rn = jnp.where(try0, 0.0, rn)
        return it + 1, lo, hi, rn, sp, ref, nref, zone, widen

    st = (0, zero, eps0 + zero, _guess(eps0, n, delta), zero + 0.05, _dummy_ref(W), jnp.zeros((), jnp.int32),
          zero, zero + 1.0)
    it, lo, hi, _, _, _, nref, zone, _ = jax.lax.while_loop(cond, body, st)
    conv = hi - lo <= rtol * hi
    upper = jnp.where(ok0, hi, 0.0)
    lower = jnp.where(ok0, jnp.minimum(lo, hi), 0.0)
    return ClonesBound(lower, upper, jnp.array(True), conv | ~ok0), it, nref


@float64_jit(static_argnames=("W", "L", "max_iter"))
def _clones_kernel(eps0, n, delta, rtol, *, W, L, z_lo, max_iter):  # z_lo an array: a new delta does not recompile
    shape = eps0.shape
    flat = jnp.stack([x.reshape(-1) for x in (eps0, n, delta)], axis=-1)
    f = partial(_point, W=W, L=L, z_lo=z_lo, max_iter=max_iter)
    out, it, nref = jax.lax.map(lambda a: f(a[0], a[1], a[2], rtol), flat)
    return ClonesBound(*(x.reshape(shape) for x in out)), it.reshape(shape), nref.reshape(shape)


def _log_inv_tail(delta) -> float:
    """ln(1 / (_RTAIL min(delta))), in log space where the product underflows (delta ~ 1e-300)."""
    x = _RTAIL * float(np.min(delta))
    return math.log(1.0 / x) if x >= 1e-300 else -math.log(_RTAIL) - math.log(float(np.min(delta)))


def _windows(eps0, n, delta, tail_sd):
    """Window sizes: W (C window, multiple of 64) and L (F table), static; z_lo (sd below the mean), a value."""
    if tail_sd is not None:  # one window for the batch: a positive number of standard deviations
        tail_sd = _validate.scalar("tail_sd", tail_sd, _validate.positive)
    if tail_sd is None:
        # Below the window: Pr[C < start] * A1 ~ _RTAIL delta; above: Pr[C > end] * D_last with
        # D_last <~ 2 delta near the answer, so Pr ~ _RTAIL suffices.  +1 sd for Chernoff vs Gaussian.
        z_lo = math.sqrt(2.0 * _log_inv_tail(delta)) + 1.0
        z_hi = math.sqrt(2.0 * math.log(2.0 / _RTAIL)) + 1.0
    else:
        z_lo = z_hi = float(tail_sd)
    p = np.exp(-eps0)
    var = float(np.max((n - 1.0) * p * -np.expm1(-eps0)))
    sd = math.sqrt(var)
    W = math.ceil((z_lo + z_hi) * sd) + 4
    W = min(W, int(np.max(n)) + 2)
    W = _round64(_bucket(W))
    # F table: z_lo sd of Bin(c0, 1/2) below its centre (its own Chernoff tail ~ _RTAIL delta).
    cmax = float(np.max((n - 1.0) * p)) + 2.0
    zf = math.sqrt(2.0 * _log_inv_tail(delta)) + 1.0 if tail_sd is None else z_lo
    L = math.ceil(zf * math.sqrt(cmax) / 2.0) + 4
    L = min(L, int(cmax / 2.0) + 4)
    L = _round64(_bucket(L))
    return W, L, np.float64(z_lo)  # traced by the kernels (only W and L fix shapes)


def _round64(w):
    return max(_BLK, -(-int(w) // _BLK) * _BLK)


def _check(eps0, n, delta):
    """eps0 in [0, 700] (e^eps0 finite in float64), n in 1..1e9 (the windows), delta in (0, 1): the family's
    Params (``_params.py``), broadcast together."""
    return list(check_params((EPS0, N, DELTA), eps0=eps0, n=n, delta=delta))


def clones_epsilon(eps0, n, delta, *, rtol=1e-9, tail_sd=None, max_iter=100) -> ClonesBound:
    """Feldman-McMillan-Talwar 2021 numerical shuffling bound: ClonesBound(lower, upper, valid, converged).

    eps0 (local eps0-LDP), n (users), delta broadcast (grids of any shape).  Safeguarded Newton / bisection
    on [0, eps0] to a bracket of relative width ``rtol`` (the bracket is sound whatever the width reached;
    ``converged`` says whether rtol was met).  ``tail_sd`` overrides the C window (in standard deviations
    each side; default from delta: the truncated mass, bounded and added to delta, is ~1e-10 delta).  The
    window width, fixed at compile time, is the largest O(sqrt(n e^-eps0)) of the batch: n = 1e8 takes a
    window of ~1e5 points.  ``rtol`` is one number in [1e-15, 0.5], ``max_iter`` one integer in 1..1e6,
    ``tail_sd`` one positive number (each fixes the search or the window of the whole batch).
    """
    eps0, n, delta = _check(eps0, n, delta)
    rtol = _validate.tolerance("rtol", rtol)  # one number in [1e-15, 0.5]
    max_iter = _validate.count("max_iter", max_iter, minimum=1, maximum=10**6)  # static: one loop bound
    W, L, z_lo = _windows(eps0, n, delta, tail_sd)
    # numpy arrays go straight to the compiled kernel (jit's fast path; float64_jit scopes x64).
    out, _, _ = _clones_kernel(eps0, n, delta, np.float64(rtol), W=W, L=L, z_lo=z_lo, max_iter=max_iter)
    return out


def _clones_epsilon_stats(eps0, n, delta, *, rtol=1e-9, tail_sd=None, max_iter=100):
    """clones_epsilon plus (iterations, reference builds) per point (benchmarks and tests)."""
    eps0, n, delta = _check(eps0, n, delta)
    W, L, z_lo = _windows(eps0, n, delta, tail_sd)
    with x64_scope():
        return _clones_kernel(jnp.asarray(eps0), jnp.asarray(n), jnp.asarray(delta), jnp.asarray(float(rtol)), W=W,
                              L=L, z_lo=z_lo, max_iter=int(max_iter))


class ClonesDelta(NamedTuple):
    """delta(eps) of the clones reduction (:func:`clones_delta`): the sound upper bound with a lower bound beside
    it, and each direction's hockey-stick divergence bracketed."""

    upper: jax.Array  #: sound upper bound on max(D(P||Q), D(Q||P)) (truncated mass included)
    lower: jax.Array  #: lower bound on the same
    pq_lower: jax.Array  #: lower bound on D(P||Q)
    qp_lower: jax.Array  #: lower bound on D(Q||P) (= D(P||Q) by the mirror symmetry, module docstring)
    pq_upper: jax.Array
    qp_upper: jax.Array


@float64_jit(static_argnames=("W", "L"))
def _clones_delta_kernel(eps, eps0, n, *, W, L, z_lo):
    def one(a):
        e, e0 = a[0], jnp.where(a[1] > 0, a[1], 1.0)
        s = _setup(e0, a[2], jnp.float64(1e-10), W, L, z_lo)
        live = e < e0
        r = _build_ref(jnp.where(live, e, 0.5 * e0), e0, s)
        ev = _eval(e, e0, s, r)
        up = jnp.where(a[1] > 0, ev.up, 0.0)
        lo = jnp.where(a[1] > 0, ev.lo, 0.0)
        return up, lo

    shape = eps.shape
    up, lo = jax.lax.map(one, jnp.stack([x.reshape(-1) for x in (eps, eps0, n)], axis=-1))
    up, lo = up.reshape(shape), lo.reshape(shape)
    return ClonesDelta(up, lo, lo, lo, up, up)


def clones_delta(epsilon, *, eps0, n, tail_sd=None) -> ClonesDelta:
    """delta(epsilon) of the clone pair (upper and lower bounds; both directions are equal), broadcasting."""
    eps, eps0, n = check_params((EPSILON, EPS0, N), epsilon=epsilon, eps0=eps0, n=n)
    W, L, z_lo = _windows(eps0, n, np.array([1e-12]), tail_sd)
    # numpy arrays go straight to the compiled kernel (jnp.asarray compiled a small program per shape: issue 25)
    return _clones_delta_kernel(eps, eps0, n, W=W, L=L, z_lo=z_lo)
