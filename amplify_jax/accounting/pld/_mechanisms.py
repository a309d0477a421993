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
(remove: P = (1 - q) N(0, s^2) + q N(1, s^2), Q = N(0, s^2); add: the two swapped).  Sampling without
replacement is accounted under a third relation, replace-one (``WorGaussianLoss``), by one symmetric pair.

Each mechanism is a small static class (hashable, so it can sit in a compiled function's static arguments)
with a ``params`` tuple of array parameters; its methods are pure jnp functions of them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["GaussianLoss", "LaplaceLoss", "WorGaussianLoss", "DiscreteLoss", "Intervals", "REMOVE", "ADD",
           "RELATIONS", "Z_TAIL"]

REMOVE = "remove"
ADD = "add"
RELATIONS = (REMOVE, ADD)

#: Standardised quantile of the single-step truncation: the P-mass of the output beyond it, on either side,
#: is at most Phi(-Z_TAIL) ~ 7.6e-24 per component (the upper part is put at +inf, so counted in delta).
Z_TAIL = 10.0

_EPS = float(jnp.finfo(jnp.float64).eps)
#: Relative error allowed for one evaluation of a CDF or survival function (plus, for erfc, x^2 ulps:
#: ``_gauss_edges``).
_CDF_ULPS = 8.0 * _EPS


_HALF_SQRT2 = 0.5 * float(np.sqrt(2.0))


class Intervals(tuple):
    """What a mechanism's ``intervals(params, losses)`` gives for the N sorted cuts l_0 < ... < l_{N-1}:
    (pm, qm, pe, qe, above, below).  pm, qm: the P- and Q-masses of the N + 1 loss intervals (-inf, l_0],
    (l_0, l_1], ..., (l_{N-1}, +inf] (+inf included), pe, qe absolute bounds on their errors; above =
    (P(L > l_j), its error bound), below = (Q(L < l_j), its error bound), each (N,), computed at the cut
    itself rather than summed from the masses (so their error bounds do not add up the N intervals' bounds:
    ``_discretize`` builds the pessimistic masses from these tail sums).  ``below`` may be None."""

    __slots__ = ()

    def __new__(cls, pm, qm, pe, qe, above, below=None):
        return tuple.__new__(cls, (pm, qm, pe, qe, above, below))

    masses = property(lambda self: self[:4])
    above = property(lambda self: self[4])
    below = property(lambda self: self[5])


def _materialised(x):
    """x itself (the same values), read through an identity gather: XLA copies a chain of cheap elementwise
    operations into every consumer of its result (the discretisation reads the Gaussian interval masses in
    four fused loops, each of which recomputed them from the edges' values), but does not fuse a gather's
    operand, so x is computed once, stored and read (issue 13: the largest item of the PLD's time)."""
    return jnp.take(x, jnp.arange(x.shape[-1]), axis=-1, mode="clip", unique_indices=True, indices_are_sorted=True)


def _gauss_edges(z):
    """At the standardised edges z (+-inf allowed): (v, u) with v = Phi(-|z|) = erfc(|z| / sqrt 2) / 2, the
    survival function at |z| (the CDF at -|z|), and u v an absolute bound on v's rounding error.  One erfc per
    edge: each edge bounds two intervals and every value an interval needs is v at its two ends (issue 13:
    it was erf, erfc, two logs and an exp per edge, for log Phi's relative accuracy far out, which no mass
    needs: an interval's mass is a difference of two of these, exact to the bound below).

    The bound: XLA's (and SciPy's) float64 erfc(x) = e^{-x^2} R(x) (Cephes) rounds x^2 and so carries a
    relative error of about x^2 / 2 ulps beyond a few ulps of its own (measured against mpmath at 12 000
    points of [0, 26.5]: at most 0.5 (8 + x^2) ulps, and 6.3 ulps below x = 1, where it is 1 - erf(x)); u
    charges (8 + x^2) ulps, twice that, with x = |z| / sqrt 2.  Beyond |z| ~ 37.5, v rounds to 0 (the true
    value is below 1e-300); z = +-inf gives v = 0 exactly."""
    az = jnp.abs(z)
    v = 0.5 * jax.lax.erfc(az * _HALF_SQRT2)
    return v, _CDF_ULPS + 0.5 * _EPS * jnp.minimum(az, 40.0) ** 2  # capped: v = 0 there (and inf * 0 is nan)


def _gauss_interval(z):
    """Standard normal masses of the N + 1 intervals [a, b] cut by the sorted standardised edges z (N,)
    (a = -inf first, b = +inf last), each with an absolute bound on its rounding error.

    With v(t) = Phi(-|t|) (``_gauss_edges``): an interval in the right tail (a > 0) has mass v(a) - v(b), one
    in the left tail (b < 0) v(b) - v(a), the one holding 0 (a <= 0 <= b) 1 - v(a) - v(b); the error bound is
    the two values' bounds plus one rounding of the difference.  A tail interval far out (v ~ 1e-30, width
    dz) keeps a relative accuracy of about eps / (|z| dz), ample: its mass enters delta with weight <= 1."""
    zz = jnp.concatenate([jnp.array([-jnp.inf]), z, jnp.array([jnp.inf])])
    v, u = _gauss_edges(zz)
    v = _materialised(v)  # read by both neighbouring intervals
    r = u * v  # v's error bound (recomputed where read: cheaper than storing it)
    a, b = zz[:-1], zz[1:]
    side = (a > 0.0) | (b < 0.0)
    va, vb = v[:-1], v[1:]
    tail = jnp.abs(va - vb)  # right tail: v(a) >= v(b); left tail: v(b) >= v(a)
    mid = jnp.maximum(1.0 - va - vb, 0.0)
    mass = jnp.where(side, tail, mid)
    err = r[:-1] + r[1:] + _EPS * jnp.where(side, tail, 1.0)
    # at each cut: P(Z > z) and P(Z < z), each from the side where it is v itself (relative accuracy in the
    # tails), the other as 1 - v (one more rounding)
    ve, re, right = v[1:-1], r[1:-1], z > 0.0
    sf, cdf = jnp.where(right, ve, 1.0 - ve), jnp.where(right, 1.0 - ve, ve)
    sf_err, cdf_err = re + jnp.where(right, 0.0, _EPS), re + jnp.where(right, _EPS, 0.0)
    return mass, jnp.where(side, err, jnp.maximum(err, 4.0 * _CDF_ULPS)), sf, sf_err, cdf, cdf_err


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
    # at each cut: P(Z > z) and P(Z < z), e^{-|z|} / 2 on its own side, 1 - that on the other
    he, right = 0.5 * ey[1:-1], z > 0.0
    sf, cdf = jnp.where(right, he, 1.0 - he), jnp.where(right, 1.0 - he, he)
    sf_err = _CDF_ULPS * he + jnp.where(right, 0.0, _EPS)
    cdf_err = _CDF_ULPS * he + jnp.where(right, _EPS, 0.0)
    return mass, err, sf, sf_err, cdf, cdf_err


def _mixture_intervals(edges, comps, kind, cache=None):
    """Masses of the N + 1 x-intervals cut by sorted ``edges`` (N,) under a mixture ``comps`` of
    (weight, location, scale) components of ``kind`` ("gauss" or "laplace"): (mass, err), each (N + 1,),
    then at each edge (N,) the mixture's P(X > edge) and P(X < edge) with their error bounds (sf, sf_err,
    cdf, cdf_err: the tail sums of the masses, computed from the edge alone, so that their error does not
    add up the intervals' errors).  ``cache`` (a dict) shares one component's values between the calls on
    the same edges (the P- and Q-laws of a subsampled mechanism have the component D(0, s) in common)."""
    interval = _gauss_interval if kind == "gauss" else _laplace_interval
    cache = {} if cache is None else cache
    out = [0.0] * 6
    for w, loc, scale in comps:
        key = (loc, id(scale))
        if key not in cache:
            cache[key] = interval((edges - loc) / scale)
        out = [o + w * c for o, c in zip(out, cache[key])]
    mass, err, sf, sf_err, cdf, cdf_err = out
    # the weighted sums' rounding: a product and an addition per component (at most two here)
    return mass, err + _EPS * mass, sf, sf_err + 2.0 * _EPS * sf, cdf, cdf_err + 2.0 * _EPS * cdf


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
        """P- and Q-masses (and error bounds) of the N + 1 loss intervals cut by ``losses`` (sorted), and the
        tails at the cuts (``Intervals``)."""
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
            pm, pe, p_sf, p_sfe, _, _ = _mixture_intervals(x, p_comps, self.kind, shared)
            qm, qe, _, _, q_cdf, q_cdfe = _mixture_intervals(x, q_comps, self.kind, shared)
            above, below = (p_sf, p_sfe), (q_cdf, q_cdfe)  # {L > l_j} = {x > x_j}, {L < l_j} = {x < x_j}
        else:  # decreasing: (l_{j-1}, l_j] <-> [x_j, x_{j-1}): the x-intervals in reverse order
            xr = x[::-1]
            rp = [v[::-1] for v in _mixture_intervals(xr, p_comps, self.kind, shared)]
            rq = [v[::-1] for v in _mixture_intervals(xr, q_comps, self.kind, shared)]
            (pm, pe), (qm, qe) = rp[:2], rq[:2]
            above, below = (rp[4], rp[5]), (rq[2], rq[3])  # {L > l_j} = {x < x_j}, {L < l_j} = {x > x_j}
        if self.kind == "gauss":  # stored once (``_materialised``)
            pm, qm, pe, qe = (_materialised(v) for v in (pm, qm, pe, qe))
        # the Laplace masses (no erf: cheap to recompute) stay fused into the discretisation: stored, they
        # rounded differently there (contracted multiply-adds, ~1e-17) and moved eps by up to 1e-9 relative
        return Intervals(pm, qm, pe, qe, above, below)


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


class WorGaussianLoss:
    """The Gaussian mechanism on a batch of m records drawn uniformly without replacement from n (a fresh
    batch every step), under the replace-one relation: one symmetric dominating pair (P*, Q*) (the same for
    ``remove`` and ``add``, which it ignores).  Parameters: ``scale`` = s, the noise standard deviation over
    the batch function's replace-one sensitivity (the largest change of f(batch) when one record of the batch
    is replaced by another: 2C for a sum of per-example gradients clipped to norm C), and ``q`` = m / n.

    The pair.  With M = (1 - q) N(0, s^2) + q N(1, s^2), N0 = N(0, s^2) and l(x) = log(1 - q + q e^{g(x)}),
    g(x) = (2x - 1) / (2 s^2) (the remove-pair loss of :class:`GaussianLoss`, positive exactly for x > 1/2):

    - loss l(x) > 0 for x > 1/2, with P* = M and Q* = N0 there (copy A);
    - loss -l(x) < 0 for x > 1/2, with P* = N0 and Q* = M there (copy B, the mirror of A);
    - an atom at loss 0 of mass c = 1 - M(x > 1/2) - N0(x > 1/2) = (1 - q) erf(1 / (2 sqrt(2) s)) >= 0 in
      both.

    Swapping P* and Q* swaps the copies, so the pair is symmetric, and for alpha = e^eps >= 1 only copy A
    counts: H_alpha(P* || Q*) = H_alpha(M || N0).  (In f-DP terms its trade-off function is
    C_q(G_{1/s}) = min{f_q, f_q^{-1}}**, f_q = q G_{1/s} + (1 - q) Id: Dong, Roth, Su 2022, "Gaussian
    differential privacy", JRSS-B, Sec. 4, Thm. 4.2, sampling without replacement.)  At q = 1 it is the
    Gaussian mechanism N(1, s^2) vs N(0, s^2) itself.

    Why it dominates (every neighbouring pair D ~ D', every alpha > 0: H_alpha(M_S(D) || M_S(D')) <=
    H_alpha(P* || Q*); Zhu, Dong, Wang 2022, Sec. 3, then composes the pairs adaptively).  Let D, D' differ in
    record n (x against x').  Draw S0, m indices out of the other n - 1, and J uniform in S0; use S0 with
    probability 1 - q, else S0 - J + n (uniform among the batches holding n).  Then, with the same weights,
    M_S(D) = E[(1 - q) N(c) + q N(u)] and M_S(D') = E[(1 - q) N(c) + q N(v)], c = f(S0), u and v the sums with
    x_J replaced by x or x': |u - c|, |v - c|, |u - v| are each one replacement, at most the sensitivity 1.
    H_alpha is jointly convex, so one such triple at a time.  For alpha' >= 1, alpha = 1 + (alpha' - 1) / q,
    beta = alpha' / alpha (Balle, Barthe, Gaboardi 2018, Thm. 2, advanced joint convexity, an identity):
    H_alpha'((1-q) N(c) + q N(u) || (1-q) N(c) + q N(v)) = q H_alpha(N(u) || (1 - beta) N(c) + beta N(v))
    <= q max(H_alpha(N(u) || N(c)), H_alpha(N(u) || N(v))) <= q H_alpha(N(1) || N(0)) = H_alpha'(M || N0)
    (joint convexity again; a Gaussian pair's divergence grows with the distance of the means).  For
    alpha' < 1, H_alpha'(A || B) = 1 - alpha' + alpha' H_{1/alpha'}(B || A) for any pair, the relation is
    symmetric, and (P*, Q*) satisfies the same identity with its own values.  It is tight at one step: the
    data set whose other records all equal x' attains H_alpha'(M || N0) for alpha' >= 1.

    Not the pair with a shared centre, ((1 - q) N(0) + q N(1/2), (1 - q) N(0) + q N(-1/2)): the configuration
    c = v is above it at one step (tests/test_pld_wor.py).  Nor the worse of the remove pair (M, N0) and the add
    pair (N0, M) composed separately, the add/remove accountant's answer: each dominates only for alpha >= 1
    (remove) or alpha <= 1 (add), and under replace-one one data set's step can mix both configurations
    (v_J = x' or x), so no theorem covers the separate compositions (Lebeda, Regehr, Kamath, Steinke 2024,
    "Avoiding pitfalls for privacy accounting of subsampled mechanisms under composition", on such
    shortcuts).  Composed, this pair answers more (sigma 1, q 0.01, 100 steps, delta 1e-5: eps 0.768 against
    0.718; equal at one step).

    Sensitivity conventions: for "replace one record by any other" pass sigma = std / (2 C) for gradients
    clipped to norm C (``sensitivity=2`` at the front doors).  For "replace one record by a special null
    record" (f(null) = 0) the three distances above are at most 2C, C and C, so the same 2C is sound there,
    though not shown tight; no smaller pair is offered.
    """

    kind = "gauss"
    params_names = ("scale", "q")

    def __init__(self, relation=REMOVE):
        if relation not in RELATIONS:
            raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")
        self._remove = GaussianLoss(REMOVE)  # l(x), its inverse and the laws M, N0

    def __hash__(self):
        return hash("WorGaussianLoss")

    def __eq__(self, other):
        return type(other) is WorGaussianLoss

    def __repr__(self):
        return "WorGaussianLoss()"

    def _loss(self, x, s, q):
        """l(x) = log(1 - q + q e^{g(x)}), the remove pair's loss (positive for x > 1/2)."""
        return self._remove._loss_of_g(self._remove._g(x, s), q)

    def _x_of(self, loss, s, q):
        """The x > 1/2 with l(x) = loss, for loss > 0; 1/2 for loss <= 0 (the copies live on x > 1/2)."""
        pos = loss > 0.0
        x = self._remove._g_inv(self._remove._g_of_loss(jnp.where(pos, loss, 1.0), q), s)
        return jnp.where(pos, jnp.maximum(x, 0.5), 0.5)

    def _atom(self, s, q):
        """c = 1 - M(x > 1/2) - N0(x > 1/2) = (1 - q) (1 - 2 Phi(-1 / (2 s))) = (1 - q) erf(1 / (2 sqrt(2) s))."""
        return (1.0 - q) * jax.lax.erf(_HALF_SQRT2 * 0.5 / s)

    def loss_range(self, params):
        """(lmin, lmax): copy A's P-law (M on x > 1/2) beyond x = 1 + Z_TAIL s and copy B's (N0 on x > 1/2)
        beyond x = Z_TAIL s are each at most ~Phi(-Z_TAIL)."""
        s, q = params
        hi = self._loss(1.0 + Z_TAIL * s, s, q)
        lo = -self._loss(jnp.maximum(Z_TAIL * s, 0.5), s, q)
        return jnp.minimum(lo, 0.0), jnp.maximum(hi, 0.0)

    def window_cuts(self, params, k):
        """k sorted loss cuts for the window's first pass: half uniform in x over copy A's [1/2, 1 + Z_TAIL s],
        half over copy B's [1/2, Z_TAIL s], so both copies' bulk is resolved."""
        s, q = params
        ka = k // 2
        xa = jnp.linspace(0.5, 1.0 + Z_TAIL * s, ka)
        xb = jnp.linspace(0.5, jnp.maximum(Z_TAIL * s, 0.5), k - ka)
        return jnp.sort(jnp.concatenate([self._loss(xa, s, q), -self._loss(xb, s, q)]))

    @staticmethod
    def _copy(edges, mixture, plain):
        """Masses and error bounds under M and N0 of the N + 1 x-intervals (e_0, e_1], ..., (e_N, inf) cut by
        ``edges`` (N + 1,), e_0 = 1/2 (what lies below it is not in the copy).  An interval whose ends are
        equal (every loss of the other copy's sign: half the grid) is empty, its mass exactly 0: its error
        bound is 0 too (the discretisation multiplies a Q-error by e^l / h, which at the grid's top made
        spurious mass there)."""
        shared = {}  # N0, in both laws: its interval masses once
        mix = _mixture_intervals(edges, mixture, "gauss", shared)
        pla = _mixture_intervals(edges, plain, "gauss", shared)
        (mm, me), (pm, pe) = (v[1:] for v in mix[:2]), (v[1:] for v in pla[:2])
        empty = jnp.concatenate([edges[1:] == edges[:-1], jnp.array([False])])
        masses = (mm, jnp.where(empty, 0.0, me), pm, jnp.where(empty, 0.0, pe))
        # M(x > e_j) and N0(x > e_j) at the cuts e_1 .. e_N, with their error bounds
        return masses, (mix[2][1:], mix[3][1:], pla[2][1:], pla[3][1:])

    def intervals(self, params, losses):
        """P*- and Q*-masses (and error bounds) of the N + 1 loss intervals cut by ``losses`` (sorted)."""
        s, q = params
        n = losses.shape[0]
        mixture = ((1.0 - q, 0.0, s), (q, 1.0, s))
        plain = ((1.0, 0.0, s),)
        half = jnp.array([0.5])
        # copy A: loss l(x), increasing in x > 1/2: (l_{j-1}, l_j] <-> (x_{j-1}, x_j], cut also at x = 1/2,
        # whose lower interval (x <= 1/2, not in the copy) is dropped
        xa = jnp.concatenate([half, self._x_of(losses, s, q)])
        (am, ae, bm, be), (m_sf_a, m_sfe_a, _, _) = self._copy(xa, mixture, plain)
        # copy B: loss -l(x), decreasing in x: (l_{j-1}, l_j] <-> [y_j, y_{j-1}) with y_j = x(-l_j), y_{-1} =
        # +inf and y_N = 1/2: the x-intervals cut by (1/2, y_{N-1}, ..., y_0) in reverse order
        xb = jnp.concatenate([half, self._x_of(-losses, s, q)[::-1]])
        masses_b, tails_b = self._copy(xb, mixture, plain)
        cm, ce, dm, de = (v[::-1] for v in masses_b)
        n_sf_b, n_sfe_b = tails_b[2][::-1], tails_b[3][::-1]  # N0(x > y_j)
        # P*(L > l_j): for l_j >= 0 copy A's part beyond x(l_j), M(x > x(l_j)); for l_j < 0 all but copy B's
        # part with loss <= l_j, 1 - N0(x >= y_j) (the pair's total is 1: c is defined so)
        neg = losses < 0.0
        above = (jnp.where(neg, 1.0 - n_sf_b, m_sf_a), jnp.where(neg, n_sfe_b + _EPS, m_sfe_a))
        # the atom at loss 0: in the interval (l_{j-1}, l_j] with l_{j-1} < 0 <= l_j, j = #{l < 0}
        c = self._atom(s, q)
        at = jnp.where(jnp.arange(n + 1) == jnp.sum(losses < 0.0), c, 0.0)
        pm = am + dm + at  # P*: M on copy A, N0 on copy B
        qm = bm + cm + at  # Q*: N0 on copy A, M on copy B
        err = _CDF_ULPS * at
        return Intervals(*(_materialised(v) for v in (pm, qm, ae + de + err, be + ce + err)), above)


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
        # P(L > l_j): the outputs sorted by loss, their P-masses summed from the top (K terms), read at the
        # number of outputs with loss <= l_j
        order = jnp.argsort(loss)
        suffix = jnp.concatenate([jnp.cumsum(w_p[order][::-1])[::-1], jnp.zeros(1)])
        above = suffix[jnp.searchsorted(loss[order], losses, side="right")]
        return Intervals(pm, qm, 4.0 * _EPS * pm, 4.0 * _EPS * qm, (above, self.size * _EPS * above))
