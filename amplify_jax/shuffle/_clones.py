"""The numerical "clones" bound of Feldman, McMillan, Talwar 2021 ("Hiding among the clones", FOCS 2021).

Reduction (FMT Thm 3.2 and its numerical use in Sec. 4): shuffling n reports of an eps0-LDP randomizer
is (eps, delta)-DP if the two distributions

    P = (A + Delta, C - A + 1 - Delta),   Q = (A + 1 - Delta, C - A + Delta),
    C ~ Bin(n - 1, e^-eps0),  A ~ Bin(C, 1/2),  Delta ~ Bern(alpha),  alpha = e^eps0 / (e^eps0 + 1),

are (eps, delta)-indistinguishable, i.e. max(D_e^eps(P || Q), D_e^eps(Q || P)) <= delta.  Given C = c
(which the pair reveals), the first coordinate K has P_c(k) = alpha b_c(k) + (1-alpha) b_c(k-1) and
Q_c(k) = (1-alpha) b_c(k) + alpha b_c(k-1), b_c the Bin(c, 1/2) pmf, so
D(P||Q) = sum_c Pr[C = c] D_c and D(Q||P) = sum_c Pr[C = c] D'_c.

Exact per-c divergences.  P_c(k) / Q_c(k) decreases in k, so P_c - e^eps Q_c > 0 exactly on k <= t_c,
t_c = ceil((c+1) beta) - 1, beta = (e^eps0 - e^eps) / ((e^eps0 - 1)(1 + e^eps)), and

    D_c  = A2 b_c(t_c)     - (e^eps - 1) F_c(t_c),   F_c(t) = Pr[Bin(c, 1/2) <= t],
    D'_c = A1 b_c(u_c - 1) - (e^eps - 1) G_c(u_c),   G_c(u) = Pr[Bin(c, 1/2) >= u],  u_c = floor((c+1)(1-beta)) + 1,

with A1 = (e^eps0 - e^eps) / (e^eps0 + 1), A2 = (e^(eps+eps0) - 1) / (e^eps0 + 1).  Both directions are
computed, each with its own cut-off.  (ERRATA: the public reference code takes the second direction's
maximum over one end of each block twice; here each direction is exact for every c.  By the mirror
symmetry k -> c + 1 - k the two are equal, which the tests check.)

Speed.  c runs over a window of Bin(n-1, e^-eps0) of fixed (compile-time) width, mean +- tail_sd sd,
O(sqrt(n)).  F_c(t_c) and G_c(u_c) for all c of the window come from one accurate evaluation at the first c
(a sum over a window of Bin(c, 1/2)) and the exact recurrences
F_{c+1}(t) = F_c(t) - b_c(t)/2 and G_{c+1}(u) = G_c(u) + b_c(u-1)/2 (thresholds move by 0 or 1), i.e. one
cumulative sum: O(sqrt(n)) work per eps.  eps is found by bisection on [0, eps0].

Soundness.  ``upper``: delta_upper(eps) = sum over the window of Pr[C = c] D_c (with F, G taken from below,
so D from above, plus a bound on the rounding of the cumulative sums) + a Chernoff bound on the mass of C
outside the window; the returned eps is the feasible end of the bisection bracket.  ``lower``: the same sums
with F, G taken from above and no tail, a lower bound on the exact divergence of the clone pair; the
returned eps is the infeasible end.  So lower <= eps*(clone pair) <= upper, and the bracket width is the
bisection tolerance plus the (tiny) effect of the truncation.  ``lower`` bounds what this analysis can
certify, not the true privacy of the shuffled mechanism.
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validate
from ..numerics import float64_jit, x64_scope
from . import _binomial as B
from ._blanket import _bucket

__all__ = ["ClonesBound", "clones_epsilon", "clones_delta"]

_U = 2.220446049250313e-16


class ClonesBound(NamedTuple):
    """lower <= eps of the clone reduction <= upper (see the module docstring).

    valid: False where even eps0 does not meet delta with the truncated window (then upper = lower = eps0).
    """

    lower: jax.Array
    upper: jax.Array
    valid: jax.Array


class _Setup(NamedTuple):
    c: jax.Array  # (W,) window of C
    lw: jax.Array  # (W,) log Pr[C = c], -inf outside [0, n-1]
    out_c: jax.Array  # Chernoff bound on Pr[C outside the window]
    kwin: jax.Array  # (L,) offsets 0..L-1 for the initial sums


def _setup(eps0, n, W, L, tail_sd):
    N = n - 1.0
    p = jnp.exp(-eps0)
    sd = jnp.sqrt(N * p * (1.0 - p))
    start = jnp.clip(jnp.floor(N * p - tail_sd * sd) - 1.0, 0.0, jnp.maximum(N - (W - 1), 0.0))
    c = start + jnp.arange(W, dtype=jnp.float64)
    lw = jnp.where(c <= N, B.log_binom_pmf(c, N, p), -jnp.inf)
    out_c = jnp.exp(B.log_tail_lower(start - 1.0, N, p)) + jnp.exp(B.log_tail_upper(start + W, N, p))
    return _Setup(c, lw, jnp.minimum(out_c, 1.0), jnp.arange(L, dtype=jnp.float64))


def _lb(k, c):
    """log b_c(k), Bin(c, 1/2), -inf outside 0..c."""
    return B.log_binom_pmf(k, c, 0.5)


def _deltas(eps, eps0, s: _Setup):
    """(upper, lower, PQ lower, QP lower, PQ upper, QP upper) bounds on delta at eps for one point."""
    ee = jnp.exp(eps)
    E0 = jnp.exp(eps0)
    em1 = jnp.expm1(eps)
    denom = jnp.expm1(eps0) * (1.0 + ee)
    beta = jnp.where(denom > 0, (E0 - ee) / jnp.where(denom > 0, denom, 1.0), 0.0)
    live = (beta > 0) & (eps < eps0)
    beta = jnp.where(live, beta, 0.0)
    A1 = (E0 - ee) / (E0 + 1.0)
    A2 = (ee * E0 - 1.0) / (E0 + 1.0)
    c = s.c
    c0 = c[0]
    W = c.shape[0]
    Lw = s.kwin.shape[0]
    # Thresholds: D(P||Q) sums k <= t_c, D(Q||P) sums k >= u_c.
    t = jnp.clip(jnp.ceil((c + 1.0) * beta) - 1.0, -1.0, c)
    u = jnp.clip(jnp.floor((c + 1.0) * (1.0 - beta)) + 1.0, 0.0, c + 2.0)
    t_next = jnp.concatenate([t[1:], t[-1:]])
    u_next = jnp.concatenate([u[1:], u[-1:]])
    # Bin(c, 1/2) pmfs: two windows for the initial sums and two per-c values, in one call (one compiled
    # instance); the neighbours b_c(t+1), b_c(u-1) follow by the exact ratio b(k+1)/b(k) = (c-k)/(k+1).
    ks = jnp.concatenate([t[0] - s.kwin, u[0] + s.kwin, t, u])
    cs = jnp.concatenate([jnp.full((2 * Lw,), c0), c, c])
    pm = jnp.exp(B.log_binom_pmf(ks, cs, 0.5))
    F0_lo = jnp.sum(pm[:Lw])
    G0_lo = jnp.sum(pm[Lw:2 * Lw])
    b_t = pm[2 * Lw:2 * Lw + W]
    b_u = pm[2 * Lw + W:]
    pow2 = jnp.exp(-c * math.log(2.0))  # b_c(0) = b_c(c) = 2^-c
    b_t1 = jnp.where(t < 0, pow2, jnp.where(t + 1.0 > c, 0.0, b_t * (c - t) / jnp.maximum(t + 1.0, 1.0)))
    b_u1 = jnp.where(u > c, jnp.where(u == c + 1.0, pow2, 0.0), b_u * u / jnp.maximum(c - u + 1.0, 1.0))
    b_u1 = jnp.where(u < 1.0, 0.0, b_u1)
    b_tn = jnp.where(t_next > t, b_t1, b_t)  # b_c(t_{c+1}), t_{c+1} - t_c in {0, 1}
    b_un1 = jnp.where(u_next > u, b_u, b_u1)  # b_c(u_{c+1} - 1), u_{c+1} - u_c in {0, 1}
    tails = jnp.exp(B.log_tail_upper(jnp.stack([c0 - (t[0] - Lw), u[0] + Lw]), c0, 0.5))
    F0_hi = jnp.minimum(F0_lo + tails[0], 1.0)  # Pr[Bin(c0,1/2) <= t0 - L] = Pr[>= c0 - t0 + L]
    G0_hi = jnp.minimum(G0_lo + tails[1], 1.0)

    last = jnp.arange(W) == W - 1
    dF = jnp.where(last, 0.0, jnp.where(t_next > t, b_t1, 0.0) - 0.5 * b_tn)
    dG = jnp.where(last, 0.0, -jnp.where(u_next > u, b_u, 0.0) + 0.5 * b_un1)
    cumF = jnp.cumsum(dF) - dF
    cumG = jnp.cumsum(dG) - dG
    sF = jnp.sum(jnp.abs(dF))
    sG = jnp.sum(jnp.abs(dG))
    errF = 2.0 * (Lw + W) * _U * (1.0 + sF) + 1e-12 * (F0_hi + sF)
    errG = 2.0 * (Lw + W) * _U * (1.0 + sG) + 1e-12 * (G0_hi + sG)
    DP_up = jnp.maximum(A2 * b_t - em1 * (F0_lo + cumF - errF), 0.0) + 1e-12 * A2 * b_t
    DP_lo = jnp.maximum(A2 * b_t - em1 * (F0_hi + cumF + errF), 0.0)
    DQ_up = jnp.maximum(A1 * b_u1 - em1 * (G0_lo + cumG - errG), 0.0) + 1e-12 * A1 * b_u1
    DQ_lo = jnp.maximum(A1 * b_u1 - em1 * (G0_hi + cumG + errG), 0.0)

    w = jnp.exp(s.lw)  # each weight accurate to ~1e-13 relative: the (1 +- 1e-12) factors cover them
    dPQ_up = jnp.sum(w * DP_up) * (1.0 + 1e-12) + s.out_c
    dQP_up = jnp.sum(w * DQ_up) * (1.0 + 1e-12) + s.out_c
    dPQ_lo = jnp.sum(w * DP_lo) * (1.0 - 1e-12)
    dQP_lo = jnp.sum(w * DQ_lo) * (1.0 - 1e-12)
    zero_up = s.out_c
    dPQ_up, dQP_up = jnp.where(live, dPQ_up, zero_up), jnp.where(live, dQP_up, zero_up)
    dPQ_lo, dQP_lo = jnp.where(live, dPQ_lo, 0.0), jnp.where(live, dQP_lo, 0.0)
    return (jnp.maximum(dPQ_up, dQP_up), jnp.maximum(dPQ_lo, dQP_lo), dPQ_lo, dQP_lo, dPQ_up, dQP_up)


def _mid(lo, hi):
    """Geometric midpoint once lo > 0; hi / 16 while lo = 0 (eps is often orders below eps0)."""
    return jnp.where(lo > 0, jnp.sqrt(lo * hi), hi / 16.0)


def _point(eps0, n, delta, rtol, *, W, L, tail_sd, max_iter):
    s = _setup(eps0, n, W, L, tail_sd)
    # One compiled instance of _deltas, evaluated at two eps per iteration (upper and lower bisections);
    # iteration 0 evaluates at eps0 to check that the target is reachable at all.
    both = jax.vmap(lambda e: _deltas(e, eps0, s)[:2])

    def cond(st):
        it, lo_u, hi_u, lo_l, hi_l, valid = st
        wide = (hi_u - lo_u > rtol * hi_u) | (hi_l - lo_l > rtol * hi_l)
        return (it == 0) | ((it < max_iter) & wide & valid)

    def body(st):
        it, lo_u, hi_u, lo_l, hi_l, valid = st
        first = it == 0
        mu = jnp.where(first, eps0, _mid(lo_u, hi_u))
        ml = jnp.where(first, eps0, _mid(lo_l, hi_l))
        up, low = both(jnp.stack([mu, ml]))
        du, dl = up[0], low[1]
        valid = jnp.where(first, du <= delta, valid)
        ok_u = (du <= delta) & ~first
        bad_l = (dl > delta) & ~first
        lo_u, hi_u = jnp.where(ok_u | first, lo_u, mu), jnp.where(ok_u, mu, hi_u)
        lo_l, hi_l = jnp.where(bad_l, ml, lo_l), jnp.where(bad_l | first, hi_l, ml)
        return it + 1, lo_u, hi_u, lo_l, hi_l, valid

    zero = jnp.zeros((), jnp.float64)
    state = (0, zero, eps0 + zero, zero, eps0 + zero, jnp.array(True))
    _, lo_u, hi_u, lo_l, hi_l, valid = jax.lax.while_loop(cond, body, state)
    upper = jnp.where(valid, hi_u, eps0)
    lower = jnp.where(valid, jnp.minimum(lo_l, upper), eps0)
    return ClonesBound(lower, upper, valid)


@float64_jit(static_argnames=("W", "L", "tail_sd", "max_iter"))
def _clones_kernel(eps0, n, delta, rtol, *, W, L, tail_sd, max_iter):
    shape = eps0.shape
    flat = [x.reshape(-1) for x in (eps0, n, delta)]
    f = partial(_point, W=W, L=L, tail_sd=tail_sd, max_iter=max_iter)
    out = jax.lax.map(lambda a: f(a[0], a[1], a[2], rtol), jnp.stack(flat, axis=-1))
    return ClonesBound(*(x.reshape(shape) for x in out))


def _windows(eps0, n, delta, tail_sd):
    if tail_sd is None:
        # Outside mass ~ exp(-tail_sd^2 / 2) well below delta (it is bounded and added, whatever this choice).
        tail_sd = math.sqrt(2.0 * math.log(1e4 / float(np.min(delta)))) + 1.0
    tail_sd = float(tail_sd)
    p = np.exp(-eps0)
    var = float(np.max((n - 1.0) * p * (1.0 - p)))
    W = _bucket(min(B.window_size(var, tail_sd), int(np.max(n)) + 2))
    cmax = float(np.max((n - 1.0) * p)) + tail_sd * math.sqrt(var) + 2.0
    L = _bucket(min(B.window_size(cmax / 4.0, tail_sd), int(cmax) + 3))
    return W, L, tail_sd


def _check(eps0, n, delta):
    eps0 = _validate.nonnegative("eps0", eps0)
    n = np.asarray(_validate.integer("n", n, minimum=1), dtype=np.float64)
    delta = _validate.unit_open("delta", delta)
    shape = _validate.broadcastable(eps0=eps0, n=n, delta=delta)
    return [np.broadcast_to(x, shape).astype(np.float64) for x in (eps0, n, delta)]


def clones_epsilon(eps0, n, delta, *, rtol=1e-9, tail_sd=None, max_iter=200) -> ClonesBound:
    """Feldman-McMillan-Talwar 2021 numerical shuffling bound: ClonesBound(lower, upper, valid).

    eps0 (local eps0-LDP), n (users), delta broadcast (grids of any shape).  Bisection on [0, eps0] to
    relative width ``rtol``; ``tail_sd`` sets the C window (default from delta: the Chernoff-bounded outside
    mass, added to delta, stays ~1e-4 delta).  The window width, fixed at compile time, is the largest
    O(sqrt(n e^-eps0)) of the batch, so n = 1e8 takes a window of ~1e5 points.
    """
    eps0, n, delta = _check(eps0, n, delta)
    rtol = float(_validate.positive("rtol", rtol))
    W, L, tail_sd = _windows(eps0, n, delta, tail_sd)
    with x64_scope():
        return _clones_kernel(jnp.asarray(eps0), jnp.asarray(n), jnp.asarray(delta), jnp.asarray(rtol), W=W, L=L,
                              tail_sd=tail_sd, max_iter=int(max_iter))


class ClonesDelta(NamedTuple):
    upper: jax.Array  #: sound upper bound on max(D(P||Q), D(Q||P)) (truncated mass included)
    lower: jax.Array  #: lower bound on the same
    pq_lower: jax.Array  #: lower bound on D(P||Q)
    qp_lower: jax.Array  #: lower bound on D(Q||P)
    pq_upper: jax.Array
    qp_upper: jax.Array


@float64_jit(static_argnames=("W", "L", "tail_sd"))
def _clones_delta_kernel(eps, eps0, n, *, W, L, tail_sd):
    def one(a):
        s = _setup(a[1], a[2], W, L, tail_sd)
        return _deltas(a[0], a[1], s)

    shape = eps.shape
    out = jax.lax.map(one, jnp.stack([x.reshape(-1) for x in (eps, eps0, n)], axis=-1))
    return ClonesDelta(*(x.reshape(shape) for x in out))


def clones_delta(eps, *, eps0, n, tail_sd=12.0) -> ClonesDelta:
    """delta(eps) of the clone pair (both directions, upper and lower bounds), broadcasting."""
    eps = _validate.nonnegative("eps", eps)
    eps0, n, _ = _check(eps0, n, 0.5)
    shape = _validate.broadcastable(eps=eps, eps0=eps0, n=n)
    eps, eps0, n = (np.broadcast_to(x, shape).astype(np.float64) for x in (eps, eps0, n))
    W, L, tail_sd = _windows(eps0, n, np.array([0.5]), 12.0 if tail_sd is None else tail_sd)
    with x64_scope():
        return _clones_delta_kernel(jnp.asarray(eps), jnp.asarray(eps0), jnp.asarray(n), W=W, L=L, tail_sd=tail_sd)
