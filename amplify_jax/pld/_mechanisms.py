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

import jax.numpy as jnp
import jax.scipy.special as jsp

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


def _gauss_interval(a, b):
    """Standard normal mass of [a, b] (a <= b, +-inf allowed) and an absolute bound on its rounding error.

    In a tail the two survival (or two CDF) values are subtracted through expm1 of their logs, so the result
    keeps its relative accuracy far out; the bound charges each of the two values ``_CDF_ULPS``."""
    upper = a > 0.0
    lower = b < 0.0
    # tails: both on the right (use survival functions), both on the left (CDFs)
    la = jnp.where(upper, jsp.log_ndtr(-a), jsp.log_ndtr(b))  # the larger of the two tail values (log)
    lb = jnp.where(upper, jsp.log_ndtr(-b), jsp.log_ndtr(a))  # the smaller
    tail = jnp.exp(la) * -jnp.expm1(jnp.minimum(lb - la, 0.0))
    tail = jnp.where(jnp.isneginf(la), 0.0, tail)
    mid = 1.0 - jsp.ndtr(a) - jsp.ndtr(-b)
    side = upper | lower
    mass = jnp.where(side, tail, jnp.maximum(mid, 0.0))
    err = jnp.where(side, _CDF_ULPS * (jnp.exp(la) + jnp.exp(lb)), 4.0 * _CDF_ULPS)
    return mass, err


def _laplace_interval(a, b):
    """Standard Laplace (scale 1) mass of [a, b] and an absolute bound on its rounding error."""
    upper = a > 0.0
    lower = b < 0.0
    # right tail: (e^{-a} - e^{-b}) / 2; left tail: (e^{b} - e^{a}) / 2
    big = jnp.where(upper, -a, b)  # log of twice the larger tail value
    small = jnp.where(upper, -b, a)
    tail = 0.5 * jnp.exp(big) * -jnp.expm1(jnp.minimum(small - big, 0.0))
    tail = jnp.where(jnp.isneginf(big), 0.0, tail)
    mid = 1.0 - 0.5 * jnp.exp(jnp.minimum(a, 0.0)) - 0.5 * jnp.exp(jnp.minimum(-b, 0.0))
    side = upper | lower
    mass = jnp.where(side, tail, jnp.maximum(mid, 0.0))
    err = jnp.where(side, _CDF_ULPS * (jnp.exp(big) + jnp.exp(jnp.where(jnp.isneginf(small), -jnp.inf, small))),
                    4.0 * _CDF_ULPS)
    return mass, err


def _mixture_intervals(edges, comps, kind):
    """Masses of the N + 1 x-intervals cut by sorted ``edges`` (N,) under a mixture ``comps`` of
    (weight, location, scale) components of ``kind`` ("gauss" or "laplace"): (mass, err), each (N + 1,)."""
    interval = _gauss_interval if kind == "gauss" else _laplace_interval
    lo = jnp.concatenate([jnp.array([-jnp.inf]), edges])
    hi = jnp.concatenate([edges, jnp.array([jnp.inf])])
    mass = 0.0
    err = 0.0
    for w, loc, scale in comps:
        m, e = interval((lo - loc) / scale, (hi - loc) / scale)
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
        if self.relation == REMOVE:  # loss increasing in x: (l_{j-1}, l_j] <-> (x_{j-1}, x_j]
            pm, pe = _mixture_intervals(x, p_comps, self.kind)
            qm, qe = _mixture_intervals(x, q_comps, self.kind)
        else:  # decreasing: (l_{j-1}, l_j] <-> [x_j, x_{j-1}): the x-intervals in reverse order
            xr = x[::-1]
            pm, pe = (v[::-1] for v in _mixture_intervals(xr, p_comps, self.kind))
            qm, qe = (v[::-1] for v in _mixture_intervals(xr, q_comps, self.kind))
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
