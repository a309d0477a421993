"""Discrete privacy-loss distributions on a uniform grid, pessimistic and optimistic (jnp kernels).

Pessimistic: connect-the-dots (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022, "Connect the Dots: Tighter
Discrete Approximations of Privacy Loss Distributions", PoPETs 2022(4), Alg. 1 and Thm. 3.3).  On the grid
l_j = start + j h, the Q-mass of each loss interval (l_{j-1}, l_j] is split between its two ends so that the
interval's P-mass is kept: with x = e^l, a fraction theta of the Q-mass goes to l_j and 1 - theta to l_{j-1},
where (1 - theta) x_{j-1} + theta x_j = P_j / Q_j.  The discrete pair so built dominates the mechanism's pair
(each interval's outcomes are a post-processing of its two end points, Thm. 3.3 there), so every delta(eps)
of its compositions is an upper bound.  Written in the interval's two non-negative parts
A_j = P_j - e^{l_{j-1}} Q_j and B_j = e^{l_j} Q_j - P_j, the P-mass at l_j is

    p_j = A_j / (1 - e^{-h}) + B_{j+1} / (e^h - 1),

a sum of non-negative terms (no negative masses to clip).  Outside the grid: the P-mass of losses above
the last grid point goes to +inf (counted in delta; its Q-mass to -inf, which carries no P-mass), and the
P-mass of losses below the first goes to the first point (rounded up; its Q-mass partly to -inf).

Soundness under floating point: the pessimistic masses are built from their tail sums S_j = sum_{k >= j}
p_k (+inf included), each raised by its rounding-error bound (the mechanisms give the interval masses and
the tails P(L > l_j) with bounds, ``_mechanisms``): S_j = (interval j's share at l_j) + P(L > l_j).  Masses
whose every tail sum is at least the true one give a larger delta for any composition (delta is the
expectation of a non-decreasing, non-negative function of the summed losses; first-order stochastic
dominance is kept by convolution).  Raising each mass by its own error bound, as before, was sound too, but
added up N intervals' bounds, each near the CDF's rounding at an edge divided by h: a grid twice finer
gave a larger eps (issue 26).

Optimistic: every interval's outcomes merged into one, of loss l* = log(P_j / Q_j) (a post-processing of
the mechanism, so its delta is a lower bound), then that loss rounded at random to the interval's two ends
keeping its mean (a fraction (l* - l_{j-1}) / h of the mass up).  The upper tail's merged outcome is lowered
to the last point and the lower tail dropped (lowering losses under P lowers delta(eps) =
E_P[(1 - e^{eps - L})_+]); masses are lowered by their error bounds.  The rounding errors of the T steps
are independent, of mean 0 and within an interval of length h, so their sum exceeds eta with probability
at most exp(-2 eta^2 / (T h^2)) (Hoeffding 1963), and delta_true(eps) >= delta_opt(eps + eta) - that
probability (the argument of Gopi, Lee, Wutschitz 2021, "Numerical composition of differential privacy",
Thm. 5.1, for its lower bound).  The pair (pessimistic, optimistic) says how tight the answer is.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["Discretized", "discretize", "discretize_mirrored", "merged", "merged_mirrored"]

_EPS = float(jnp.finfo(jnp.float64).eps)


class Discretized(tuple):
    """(pess, inf, opt): pessimistic masses (N,), their P-mass at +inf, optimistic masses (N,)."""

    __slots__ = ()

    def __new__(cls, pess, inf, opt):
        return tuple.__new__(cls, (pess, inf, opt))

    pess = property(lambda self: self[0])
    inf = property(lambda self: self[1])
    opt = property(lambda self: self[2])


def discretize(mech, params, top, h, n):
    """The mechanism's PLD on the grid top - h * (n - 1 - arange(n)), which ends exactly at ``top``:
    ``Discretized`` (jnp; top, h scalars)."""
    losses = top - h * jnp.arange(n - 1, -1, -1)
    iv = mech.intervals(params, losses)
    return _assemble(losses, iv.masses, h, n, iv.above)


def discretize_mirrored(mech, params, top, h, n):
    """(remove, add): ``discretize`` of ``mech`` (a remove-relation mechanism) on its grid ending at ``top``,
    and of its add relation on the mirror grid, -(that grid) reversed (from -top up), from one evaluation of
    the interval masses (issue 13: they are most of a discretisation's cost).

    For a mechanism whose add pair is its remove pair swapped, (P, Q) -> (Q, P), with loss -L, and whose
    loss has no atoms (the Poisson-subsampled Gaussian): the add P-mass of the loss interval
    (-l_{n-i}, -l_{n-1-i}] is the remove Q-mass of [l_{n-1-i}, l_{n-i}), i.e. of remove interval n - i (an
    interval's end points carry no mass), and the same with P and Q exchanged.  So the add relation's
    interval masses and error bounds are the remove relation's reversed and swapped, and its intervals'
    merged losses log(P / Q) (the optimistic side's) are the remove ones negated and reversed."""
    losses = top - h * jnp.arange(n - 1, -1, -1)
    iv = mech.intervals(params, losses)
    pm, qm, pe, qe = iv.masses
    P, Q = pm[1:n], qm[1:n]
    ls = jnp.log(jnp.maximum(P, 1e-300) / jnp.maximum(Q, 1e-300))
    removed = _assemble(losses, (pm, qm, pe, qe), h, n, iv.above, ls)
    # the add relation's P(L > -l_{n-1-k}) is the remove relation's Q(L < l_{n-1-k})
    added = _assemble(-losses[::-1], (qm[::-1], pm[::-1], qe[::-1], pe[::-1]), h, n,
                      tuple(v[::-1] for v in iv.below), -ls[::-1])
    return removed, added


def _assemble(losses, masses, h, n, above, ls=None):
    """Connect-the-dots (pessimistic) and the optimistic rounding on the grid ``losses`` (n,) from the
    interval masses (pm, qm, pe, qe) ((n + 1,) each, ``intervals``) and the tails ``above`` = (P(L > l_j),
    its error bound) at the grid points; ``ls``: the intervals' merged losses log(P_i / Q_i), i = 1 .. n - 1,
    if known."""
    pm, qm, pe, qe = masses
    # interval i (1..n-1) is (l_{i-1}, l_i]; 0 is (-inf, l_0]; n is (l_{n-1}, inf)
    x = jnp.exp(losses)  # once per grid point (each is the top of one interval and the bottom of the next)
    x_lo = x[:-1]  # e^{l_{i-1}} for i = 1..n-1
    P, Q, eP, eQ = pm[1:n], qm[1:n], pe[1:n], qe[1:n]
    # e^l Q, and 0 where Q = 0 (a grid reaching past the loss's range, where e^l may be inf: the add
    # relation's mirrored grid, ``discretize_mirrored``, can run far above its top)
    q_lo = jnp.where(Q > 0, x_lo * Q, 0.0)
    e_lo = jnp.where(eQ > 0, x_lo * eQ, 0.0)
    a = P - q_lo  # A_i = P_i - e^{l_{i-1}} Q_i >= 0 exactly
    ea = eP + e_lo + _EPS * (P + q_lo)
    up = -jnp.expm1(-h)  # 1 - e^{-h}
    to_hi = (jnp.maximum(a, 0.0) + ea) / up  # interval i's share at l_i, an upper bound
    # The pessimistic masses from their tail sums.  Exactly, p_j = (interval j's share at its top) + (interval
    # j + 1's at its bottom), and as each interval's two shares sum to its P-mass, the tail sum from l_j
    # (the +inf mass included) is S_j = to_hi_j + P(L > l_j), S_0 = 1.  Upper bounds of the S_j (each share
    # and tail raised by its error bound, and 4 ulps for this sum), made non-increasing (S_j := max_{k >= j}
    # S_k, still upper bounds), give masses p_j = S_j - S_{j+1} >= 0 whose every tail sum bounds the true
    # one: delta of any composition, E[f(L_1 + ... + L_T)] with f non-decreasing and >= 0, only grows
    # (first-order stochastic dominance, kept by convolution of non-negative measures).  Raising each mass
    # by its own error bound (as before, issue 26) added up the N intervals' bounds, each about the CDF's
    # rounding at the interval's edges over h: the total mass grew like N^2, 1.1 at 2^20 points composed,
    # and a finer grid gave a larger eps.  Here only one interval's bound enters each tail sum.
    p_above, p_above_err = above
    inf = jnp.minimum(pm[n] + pe[n], 1.0)
    s_hi = (p_above[1:] + p_above_err[1:] + to_hi) * (1.0 + 4.0 * _EPS)
    s_hi = jnp.minimum(s_hi, 1.0)  # a tail sum of a probability is at most 1
    # (a reverse running max; associative_scan: lax.cummax lowers to a reduce_window on CPU, 4x slower here)
    tails = jax.lax.associative_scan(jnp.maximum, jnp.concatenate([jnp.ones(1), s_hi, inf[None]]), reverse=True)
    # the differences of neighbours (exact where within a factor 2, else within half an ulp of the mass):
    # the 4 ulps added keep every tail sum of the rounded masses above the tail's bound
    pess = (tails[:-1] - tails[1:]) * (1.0 + 4.0 * _EPS)
    # optimistic: each interval's outcomes merged into one (loss l* = log(P_i / Q_i), a post-processing, so
    # dominated by the mechanism), then rounded to the interval's ends keeping the mean loss (the fraction
    # (l* - l_{i-1}) / h up); the upper tail's merged outcome lowered to l_{n-1}; the lower tail dropped
    if ls is None:
        ls = jnp.log(jnp.maximum(P, 1e-300) / jnp.maximum(Q, 1e-300))  # one log per interval (P, Q <= 1)
    frac = jnp.where(Q > 0, jnp.clip((ls - losses[:-1]) / h, 0.0, 1.0), 1.0)
    low = jnp.maximum(P - eP, 0.0)
    down, up_ = low * (1.0 - frac), low * frac  # to l_{i-1}, to l_i
    opt = jnp.concatenate([down[:1], down[1:] + up_[:-1], up_[-1:] + jnp.maximum(pm[n] - pe[n], 0.0)])
    opt = opt * (1.0 - 4.0 * _EPS)
    return Discretized(pess, inf, opt)


def merged_mirrored(mech, params, k):
    """(remove, add): ``merged`` of ``mech`` (see :func:`discretize_mirrored`) and of its add relation, from
    one evaluation of the interval masses.  The add relation's cuts are the remove ones negated and reversed
    (what its ``window_cuts`` gives: the same x, the loss negated, sorted)."""
    cuts = mech.window_cuts(params, k)
    pm, qm = mech.intervals(params, cuts)[:2]
    return _merged(cuts, pm[:k], qm[:k]), _merged(-cuts[::-1], qm[::-1][:k], pm[::-1][:k])


def _merged(cuts, P, Q):
    ls = jnp.log(jnp.maximum(P, 1e-300)) - jnp.log(jnp.maximum(Q, 1e-300))
    return jnp.clip(jnp.where((P > 0) & (Q > 0), ls, cuts), cuts[0] - 1.0, cuts[-1]), P


def merged(mech, params, k):
    """The mechanism's outcomes cut at its ``window_cuts`` and each interval merged into one atom at its own
    loss log(P_i / Q_i) (the upper tail left out): a cheap first pass for the composition window
    (``_compose``), whose mean loss does not drift with the cuts' coarseness (rounding to a grid would, by
    up to the step per composition).  Returns (losses, masses), k of each."""
    cuts = mech.window_cuts(params, k)
    pm, qm = mech.intervals(params, cuts)[:2]
    return _merged(cuts, pm[:k], qm[:k])
