"""Privacy losses of the mechanisms the PLD accountant knows, as interval masses of the loss (jnp kernels).

A mechanism is a pair (P, Q) of distributions of one output; its privacy loss L = log(dP/dQ) is read under P
(the privacy-loss distribution, PLD).  For every mechanism here the loss is a monotone function of a scalar
output x whose P- and Q-laws are mixtures of Gaussian or Laplace components, or the mechanism is discrete.
What the discretisation (``_discretize``) needs from a mechanism is, for a sorted grid of losses
l_0 < ... < l_{N-1}, the P- and Q-masses of the N + 1 loss intervals (-inf, l_0], (l_0, l_1], ...,
(l_{N-1}, +inf), each with an absolute bound on its floating-point error.

Neighbouring relations (Zhu, Dong, Wang 2022, "Optimal accounting of differential privacy via
characteristic function", Sec. 2; dp_accounting's vocabulary):
- ``remove``: P is the mechanism on the data set with the record, Q without it;
- ``add``: P without the record, Q with it.
For the Gaussian and Laplace mechanisms the two are the same; for the Poisson-subsampled ones they differ
(remove: P = (1 - q) N(0, s^2) + q N(1, s^2), Q = N(0, s^2); add: the two swapped).

Each mechanism is a small static class (hashable, so it can sit in a compiled function's static arguments)
with a ``params`` tuple of array parameters; its methods are pure jnp functions of them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["GaussianLoss", "LaplaceLoss", "DiscreteLoss", "REMOVE", "ADD", "RELATIONS", "Z_TAIL"]

REMOVE = "remove"
ADD = "add"
RELATIONS = (REMOVE, ADD)

#: Standardised quantile of the single-step truncation: the P-mass of the output beyond it, on either side,
#: is at most Phi(-Z_TAIL) ~ 7.6e-24 per component (the upper part is put at +inf, so counted in delta).
Z_TAIL = 10.0

_EPS = float(jnp.finfo(jnp.float64).eps)
#: Relative error allowed for one evaluation of a CDF or survival function (jax's ndtr/log_ndtr, exp).
_CDF_ULPS = 8.0 * _EPS


_HALF_SQRT2 = 0.5 * float(np.sqrt(2.0))
#: Below this standardised value the log of the normal CDF is read from its asymptotic series (the cut
#: jax.scipy.special.log_ndtr uses in float64, so that the values here are bit-identical to its).
_LOG_NDTR_LOWER = -20.0


def _materialised(x):
    """x itself (the same values), read through an identity gather: XLA copies a chain of cheap elementwise
    operations into every consumer of its result (the discretisation reads the Gaussian interval masses in
    four fused loops, each of which recomputed them from the edges' values), but does not fuse a gather's
    operand, so x is computed once, stored and read (issue 13: the largest item of the PLD's time)."""
    return jnp.take(x, jnp.arange(x.shape[-1]), axis=-1, mode="clip", unique_indices=True, indices_are_sorted=True)


def _ndtr(x):
    """Standard normal CDF, Phi(x) = erfc(-x / sqrt 2) / 2 (with 1 + erf near 0); the same operations as
    jax.scipy.special.ndtr, so the same float64 values."""
    w = x * _HALF_SQRT2
    z = jnp.abs(w)
    y = jnp.where(z < _HALF_SQRT2, 1.0 + jax.lax.erf(w), jnp.where(w > 0.0, 2.0 - jax.lax.erfc(z), jax.lax.erfc(z)))
    return 0.5 * y


def _log_ndtr_series(x):
    """log Phi(x) for x <= -20 from its asymptotic series to order 3 (Abramowitz & Stegun 1964, 26.2.12:
    Phi(x) = phi(x) / |x| (1 - 1/x^2 + 3/x^4 - 15/x^6 + ...)); the operations of jax's log_ndtr there."""
    x2 = x * x
    log_scale = -0.5 * x2 - jnp.log(-x) - float(0.5 * np.log(2.0 * np.pi))
    odd = 1.0 / x2
    x2n = x2 * x2
    even = 3.0 / x2n
    odd = odd + 15.0 / (x2n * x2)
    return log_scale + jnp.log(1.0 + even - odd)


def _gauss_edges(z):
    """At the standardised edges z (+-inf allowed), with y = -|z|: (Phi(y) for the middle intervals,
    log Phi(y), e^{log Phi(y)}).  Each edge bounds two intervals and every value an interval needs is one of
    these at its two ends, so each is computed once per edge (it was once per interval end, with both
    branches of every select).  log Phi(y) is jax.scipy.special.log_ndtr's value bit for bit: log of the
    same Phi(max(y, -20)) above -20, the series below.  Phi(y) is taken at max(y, -20): below, Phi(y) <
    3e-89, and 1 - Phi(a) - Phi(-b) (a <= 0 <= b, the only use) rounds the same as with the exact value."""
    y = -jnp.abs(z)
    v = _ndtr(jnp.maximum(y, _LOG_NDTR_LOWER))
    log_v = jnp.where(y > _LOG_NDTR_LOWER, jnp.log(v), _log_ndtr_series(jnp.minimum(y, _LOG_NDTR_LOWER)))
    return v, log_v, jnp.exp(log_v)


def _gauss_interval(z):
    """Standard normal masses of the N + 1 intervals [a, b] cut by the sorted standardised edges z (N,)
    (a = -inf first, b = +inf last), each with an absolute bound on its rounding error.

    In a tail the two survival (or two CDF) values are subtracted through expm1 of their logs, so the result
    keeps its relative accuracy far out; the bound charges each of the two values ``_CDF_ULPS``.  The
    per-edge values come from ``_gauss_edges`` (Phi and log Phi at -|edge|: the survival function at a > 0
    is Phi(-a), the CDF at b < 0 is Phi(b))."""
    zz = jnp.concatenate([jnp.array([-jnp.inf]), z, jnp.array([jnp.inf])])
    v, lv, ev = (_materialised(u) for u in _gauss_edges(zz))  # read by both neighbouring intervals
    a, b = zz[:-1], zz[1:]
    upper = a > 0.0
    lower = b < 0.0
    # tails: both on the right (survival functions), both on the left (CDFs)
    la = jnp.where(upper, lv[:-1], lv[1:])  # the larger of the two tail values (log)
    lb = jnp.where(upper, lv[1:], lv[:-1])  # the smaller
    ea = jnp.where(upper, ev[:-1], ev[1:])  # e^{la}
    eb = jnp.where(upper, ev[1:], ev[:-1])
    tail = ea * -jnp.expm1(jnp.minimum(lb - la, 0.0))
    tail = jnp.where(jnp.isneginf(la), 0.0, tail)
    mid = 1.0 - v[:-1] - v[1:]  # a <= 0 <= b: Phi(a) = Phi(-|a|), Phi(-b) = Phi(-|b|)
    side = upper | lower
    mass = jnp.where(side, tail, jnp.maximum(mid, 0.0))
    err = jnp.where(side, _CDF_ULPS * (ea + eb), 4.0 * _CDF_ULPS)
    return mass, err


def _laplace_interval(z):
    """Standard Laplace (scale 1) masses of the N + 1 intervals [a, b] cut by the sorted standardised edges
    z (N,), and absolute bounds on their rounding errors.  Right tail (e^{-a} - e^{-b}) / 2, left tail
    (e^{b} - e^{a}) / 2, each edge's e^{-|edge|} computed once."""
    zz = jnp.concatenate([jnp.array([-jnp.inf]), z, jnp.array([jnp.inf])])
    y = -jnp.abs(zz)
    ey = jnp.exp(y)
    a, b = zz[:-1], zz[1:]
    upper = a > 0.0
    lower = b < 0.0
    big = jnp.where(upper, y[:-1], y[1:])  # log of twice the larger tail value: -a (right), b (left)
    small = jnp.where(upper, y[1:], y[:-1])
    e_big = jnp.where(upper, ey[:-1], ey[1:])
    e_small = jnp.where(upper, ey[1:], ey[:-1])
    tail = 0.5 * e_big * -jnp.expm1(jnp.minimum(small - big, 0.0))
    tail = jnp.where(jnp.isneginf(big), 0.0, tail)
    mid = 1.0 - 0.5 * ey[:-1] - 0.5 * ey[1:]  # a <= 0 <= b: e^{min(a, 0)} = e^{-|a|}, e^{min(-b, 0)} = e^{-|b|}
    side = upper | lower
    mass = jnp.where(side, tail, jnp.maximum(mid, 0.0))
    err = jnp.where(side, _CDF_ULPS * (e_big + e_small), 4.0 * _CDF_ULPS)
    return mass, err


def _mixture_intervals(edges, comps, kind, cache=None):
    """Masses of the N + 1 x-intervals cut by sorted ``edges`` (N,) under a mixture ``comps`` of
    (weight, location, scale) components of ``kind`` ("gauss" or "laplace"): (mass, err), each (N + 1,).
    ``cache`` (a dict) shares one component's interval masses between the calls on the same edges (the
    P- and Q-laws of a subsampled mechanism have the component D(0, s) in common)."""
    interval = _gauss_interval if kind == "gauss" else _laplace_interval
    cache = {} if cache is None else cache
    mass = 0.0
    err = 0.0
    for w, loc, scale in comps:
        key = (loc, id(scale))
        if key not in cache:
            cache[key] = interval((edges - loc) / scale)
        m, e = cache[key]
        mass = mass + w * m
        err = err + w * e
    return mass, err + _EPS * mass


class _Subsampled:
    """A Poisson-subsampled location mechanism with sensitivity 1: output x ~ noise + (record present).

    remove: P = (1 - q) D(0, s) + q D(1, s), Q = D(0, s); add: P = D(0, s), Q = (1 - q) D(0, s) + q D(1, s),
    with D Gaussian (scale = standard deviation) or Laplace (scale b).  With q = 1 these are the plain
    Gaussian and Laplace mechanisms.  The loss is log(1 - q + q e^{g(x)}) (remove) or its negative (add),
    with g(x) = (2x - 1) / (2 s^2) (Gaussian) or (|x| - |x - 1|) / b (Laplace), increasing in x.
    """

    kind = "gauss"
    params_names = ("scale", "q")

    def __init__(self, relation):
        if relation not in RELATIONS:
            raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")
        self.relation = relation

    def __hash__(self):
        return hash((type(self).__name__, self.relation))

    def __eq__(self, other):
        return type(other) is type(self) and other.relation == self.relation

    def __repr__(self):
        return f"{type(self).__name__}({self.relation!r})"

    # g and its inverse ---------------------------------------------------------------------------
    def _g(self, x, s):
        raise NotImplementedError

    def _g_inv(self, g, s):
        raise NotImplementedError

    def _g_range(self, s):
        return -jnp.inf, jnp.inf

    def _loss_of_g(self, g, q):
        # log(1 - q + q e^g) = log1p(q expm1(g)); add: its negative.  At q = 1 exactly g itself: expm1(g)
        # rounds to -1 for g < -37 and log1p(-1) = -inf made the whole composition nan (sigma < ~0.27)
        v = jnp.where(q == 1.0, g, jnp.log1p(q * jnp.expm1(g)))
        return v if self.relation == REMOVE else -v

    def _g_of_loss(self, loss, q):
        # the inverse of _loss_of_g: g = log1p(expm1(l) / q) (remove), with l -> -l (add); -inf below range
        v = loss if self.relation == REMOVE else -loss
        arg = jnp.expm1(v) / q
        g = jnp.where(arg > -1.0, jnp.log1p(jnp.maximum(arg, -1.0 + 1e-300)), -jnp.inf)
        return jnp.where(q == 1.0, v, g)  # q = 1: the identity (see _loss_of_g)

    def _comps(self, s, q):
        mixture = ((1.0 - q, 0.0, s), (q, 1.0, s))
        plain = ((1.0, 0.0, s),)
        return (mixture, plain) if self.relation == REMOVE else (plain, mixture)

    # the contract --------------------------------------------------------------------------------
    def loss_range(self, params):
        """(lmin, lmax): the P-mass of the loss outside is at most ~Phi(-Z_TAIL) on either side (jnp)."""
        s, q = params
        x_lo = -Z_TAIL * self._zscale(s)
        x_hi = 1.0 + Z_TAIL * self._zscale(s)
        g_lo, g_hi = self._g_range(s)
        a = self._loss_of_g(jnp.maximum(self._g(x_lo, s), g_lo), q)
        b = self._loss_of_g(jnp.minimum(self._g(x_hi, s), g_hi), q)
        # the bounded side is the loss's true end (x -> -inf): log(1 - q) (remove), -log(1 - q) (add)
        end = jnp.log1p(-jnp.where(q < 1.0, q, 0.0))
        if self.relation == REMOVE:
            lo, hi = jnp.where(q < 1.0, jnp.minimum(a, end), a), b
        else:
            lo, hi = b, jnp.where(q < 1.0, jnp.maximum(a, -end), a)
        return jnp.minimum(lo, hi), jnp.maximum(lo, hi)

    def _zscale(self, s):
        return s

    def window_cuts(self, params, k):
        """k sorted loss cuts for the window's first pass: uniform in the output x over
        [-Z_TAIL s, 1 + Z_TAIL s] (where the P-law lives), so the bulk is resolved however narrow it is."""
        s, q = params
        x = jnp.linspace(-Z_TAIL * self._zscale(s), 1.0 + Z_TAIL * self._zscale(s), k)
        g_lo, g_hi = self._g_range(s)
        loss = self._loss_of_g(jnp.clip(self._g(x, s), g_lo, g_hi), q)
        return jnp.sort(loss)

    def intervals(self, params, losses):
        """P- and Q-masses (and error bounds) of the N + 1 loss intervals cut by ``losses`` (sorted)."""
        s, q = params
        g_lo, g_hi = self._g_range(s)
        g = self._g_of_loss(losses, q)
        # a cut at the loss range's end (the grid's top is built on it) is the end: snap the rounding of
        # loss -> g so that the atom there (Laplace) stays below the cut, as its loss is not above it
        fin = jnp.isfinite(g)
        tol = 1e-12 * (1.0 + jnp.abs(jnp.where(fin, g, 0.0)))
        near_hi = fin & jnp.isfinite(g_hi) & (jnp.abs(g - g_hi) <= tol)
        near_lo = fin & jnp.isfinite(g_lo) & (jnp.abs(g - g_lo) <= tol)
        g = jnp.where(near_hi, g_hi, jnp.where(near_lo, g_lo, g))
        x = self._g_inv(jnp.clip(g, g_lo, g_hi), s)
        # outside g's range the loss is constant (Laplace): the whole line is on one side of the cut.  The cut
        # at the loss's top keeps the whole line below it: x = +inf (remove, loss increasing in x) or -inf
        # (add, decreasing: {L <= l} = {x >= x(l)})
        if self.relation == REMOVE:
            x = jnp.where(g < g_lo, -jnp.inf, jnp.where(g >= g_hi, jnp.inf, x))
        else:
            x = jnp.where(g <= g_lo, -jnp.inf, jnp.where(g > g_hi, jnp.inf, x))
        p_comps, q_comps = self._comps(s, q)
        shared = {}  # D(0, s), in both laws: its interval masses once
        if self.relation == REMOVE:  # loss increasing in x: (l_{j-1}, l_j] <-> (x_{j-1}, x_j]
            pm, pe = _mixture_intervals(x, p_comps, self.kind, shared)
            qm, qe = _mixture_intervals(x, q_comps, self.kind, shared)
        else:  # decreasing: (l_{j-1}, l_j] <-> [x_j, x_{j-1}): the x-intervals in reverse order
            xr = x[::-1]
            pm, pe = (v[::-1] for v in _mixture_intervals(xr, p_comps, self.kind, shared))
            qm, qe = (v[::-1] for v in _mixture_intervals(xr, q_comps, self.kind, shared))
        if self.kind == "gauss":  # stored once (``_materialised``)
            return tuple(_materialised(v) for v in (pm, qm, pe, qe))
        # the Laplace masses (no erf: cheap to recompute) stay fused into the discretisation: stored, they
        # rounded differently there (contracted multiply-adds, ~1e-17) and moved eps by up to 1e-9 relative
        return pm, qm, pe, qe


class GaussianLoss(_Subsampled):
    """Poisson-subsampled Gaussian mechanism (sensitivity 1, noise standard deviation ``scale`` = sigma,
    sampling rate q; q = 1 is the Gaussian mechanism).  Loss: log(1 - q + q exp((2x - 1) / (2 sigma^2)))
    (Mironov, Talwar, Zhang 2019, Sec. 3.3; Koskela, Jalko, Honkela 2020, Sec. 4)."""

    kind = "gauss"

    def _g(self, x, s):
        return (2.0 * x - 1.0) / (2.0 * s * s)

    def _g_inv(self, g, s):
        return s * s * g + 0.5


class LaplaceLoss(_Subsampled):
    """Poisson-subsampled Laplace mechanism (sensitivity 1, scale b = ``scale``; q = 1 is the Laplace
    mechanism).  Loss: log(1 - q + q exp((|x| - |x - 1|) / b)), constant for x <= 0 and x >= 1 (atoms of the
    loss distribution at its two ends) (Koskela, Jalko, Honkela 2020, Sec. 5)."""

    kind = "laplace"

    def _g(self, x, s):
        return (jnp.abs(x) - jnp.abs(x - 1.0)) / s

    def _g_inv(self, g, s):
        return (s * g + 1.0) / 2.0

    def _g_range(self, s):
        return -1.0 / s, 1.0 / s


class DiscreteLoss:
    """A mechanism with finitely many outputs, given by its two pmfs ``p`` and ``q`` (arrays of the same
    length K, a static size).  Outputs with q = 0 < p have loss +inf; with p = 0 they carry no P-mass.
    Randomized response and any pure eps0-DP mechanism's worst pair are of this kind (``_events``)."""

    params_names = ("p", "q")

    def __init__(self, size):
        self.size = int(size)

    def __hash__(self):
        return hash(("DiscreteLoss", self.size))

    def __eq__(self, other):
        return type(other) is DiscreteLoss and other.size == self.size

    def __repr__(self):
        return f"DiscreteLoss({self.size})"

    @staticmethod
    def _losses(p, q):
        return jnp.where(p > 0, jnp.where(q > 0, jnp.log(jnp.where(q > 0, p, 1.0) / jnp.where(q > 0, q, 1.0)),
                                          jnp.inf), -jnp.inf)

    def loss_range(self, params):
        p, q = params
        loss = self._losses(p, q)
        finite = jnp.isfinite(loss)
        lo = jnp.min(jnp.where(finite, loss, jnp.inf))
        hi = jnp.max(jnp.where(finite, loss, -jnp.inf))
        lo = jnp.where(jnp.isfinite(lo), lo, 0.0)
        hi = jnp.where(jnp.isfinite(hi), hi, 0.0)
        return lo, hi

    def window_cuts(self, params, k):
        """k sorted loss cuts for the window's first pass: uniform over the loss range."""
        lo, hi = self.loss_range(params)
        return jnp.linspace(lo, hi, k)

    def intervals(self, params, losses):
        p, q = params
        loss = self._losses(p, q)
        n = losses.shape[0]
        # interval index: the number of grid losses strictly below the output's loss (0 .. n); +inf -> n
        idx = jnp.searchsorted(losses, jnp.where(jnp.isneginf(loss), losses[0], loss), side="left")
        idx = jnp.where(jnp.isposinf(loss), n, idx)
        w_p = jnp.where(jnp.isneginf(loss), 0.0, p)
        w_q = jnp.where(jnp.isneginf(loss), q, q)
        pm = jnp.zeros(n + 1).at[idx].add(w_p)
        qm = jnp.zeros(n + 1).at[idx].add(jnp.where(jnp.isneginf(loss), 0.0, w_q))
        return pm, qm, 4.0 * _EPS * pm, 4.0 * _EPS * qm
