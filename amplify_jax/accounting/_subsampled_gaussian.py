"""Exact Renyi divergence of the Poisson-subsampled Gaussian at fractional orders.

Mironov, Talwar, Zhang 2019, "Renyi Differential Privacy of the Sampled Gaussian Mechanism", Sec. 3.3: for
sampling rate q, noise multiplier sigma (sensitivity 1) and any order alpha > 1,

    RDP(alpha) = log(A_alpha) / (alpha - 1),
    A_alpha = E_{z ~ N(0, sigma^2)} [ (1 - q + q exp((2z - 1) / (2 sigma^2)))^alpha ]

(their Eq. for A_alpha with mu_0 = N(0, sigma^2), mu_1 = N(1, sigma^2)).  This module returns
log(A_alpha - 1), so that the caller forms log1p(A - 1) / (alpha - 1) accurately when q is tiny and
A - 1 ~ 1e-16.  It is a pure ``jnp`` function that broadcasts over q, sigma and alpha; it is exact at
integer orders too (where it can be checked against the binomial series).

Method (no series of MTZ's Sec. 3.3 is used: their two-sided erfc series is signed, cancels catastrophically
when A - 1 ~ q^2, and converges only polynomially near the split point).

1. Cancellation-free integrand.  With u(z) = q expm1(L), L = (z - 1/2) / sigma^2, E[u] = 0, hence

       A - 1 = E_{mu_0}[ f(u(z)) ],   f(u) = (1 + u)^alpha - 1 - alpha u >= 0     (convexity of (1+u)^alpha).

   f is evaluated without cancellation from l = log1p(u) and t = u / (1 + u) = -expm1(-l) (t is derived from
   l, so the pair stays consistent even where 1 + u underflows relative to 1, q ~ 1 and z << 0):
   f / (1 + u) = expm1((alpha - 1) l) - (alpha - 1) t where max(alpha - 1, 1) |l| > 1/4 (cancellation at most
   a factor ~40), and f / (1 + u) = x^2 phi2(x) + (alpha - 1) l^2 phi2(-l), x = (alpha - 1) l,
   phi2(y) = (e^y - 1 - y) / y^2 = sum_k y^k / (k + 2)! (two positive terms; 11 terms, truncation < 1e-16)
   otherwise.

2. Where the mass is.  The integrand is bounded by the proxy P(z) = exp(-z^2 / (2 sigma^2)) (1 + u)^alpha for
   z >= 1/2 (where u >= 0), and by alpha q exp(-z^2 / (2 sigma^2)) for z < 1/2 (f is convex with f(0) = 0 on
   [-q, 0], so f <= f(-q) <= alpha q).  log P = g(z) = -z^2/(2 sigma^2) + alpha l(z) has g' = (alpha s(z) - z)
   / sigma^2 with s = sigmoid((z - z0)/sigma^2), z0 = 1/2 + sigma^2 log((1-q)/q); phi(z) = z - alpha s(z) has
   its critical points where s(1 - s) = sigma^2 / alpha (closed form), so the one or two maxima of g (and the
   minimum between them) are found by bisection on brackets where phi is monotone.  An estimate Lambda of
   log integral (the integrand at the maxima and at bulk points, times sigma / e) gives a level
   c = Lambda - 30; the integration windows are {g >= c} restricted to z >= 1/2 (edges by bisection on
   monotone pieces, bracketed by the Gaussian bounds g(z) <= g(0) - z^2/(2 sigma^2) for z < 0 and
   g(z) <= g(alpha) - (z - alpha)^2 / (2 sigma^2) for z > alpha, and returned on the outer side) and
   [-sqrt(2 (log(alpha q) - c)) sigma, 1/2].  Outside them the integrand is below e^-30 of the integral and
   decays at least like a Gaussian of width sigma (g'' >= -1/sigma^2).

3. Quadrature.  Composite 12-node Gauss-Legendre on a mesh whose panels are at most 4 sigma wide (a Gaussian
   of width sigma is integrated to < 1e-12 by such panels) and graded geometrically towards the kink at z0:
   the integrand has branch points at z0 +- i pi sigma^2, so a panel at distance d from z0 is at most
   2 (sigma^2 + d) wide, which keeps its Bernstein-ellipse parameter >= 3.7 (error < 3.7^-24 ~ 2e-14 of the
   panel's mass).  The mesh density is integrated in closed form, so a static number ``n_panels`` of panels is
   spread over the (up to three) windows in proportion to the resolution each needs; the need itself
   (``fractional_panels_needed``) is a by-product, and points whose need exceeds ``n_panels`` return the
   sound q = 1 bound rather than an uncertified value (``n_panels=AUTO`` gives each point its own need plus a
   margin, in a loop; :func:`choose_n_panels` picks a static count from concrete inputs).  The node sum is a sum of positive
   terms scaled by a proven upper bound of the log-integrand (no cancellation, no overflow), written as a
   matrix-vector product and with a branch-free integrand, which XLA:CPU compiles to a single fused loop.

Accuracy (measured, tests/test_subsampled_gaussian.py and 100+ further random points): relative error of the
RDP below 5e-12 before the final rounding, over q in [1e-8, 1], sigma in [0.1, 1e3], alpha in (1, 1024]
against mpmath (tanh-sinh at 20-30 digits), the exact binomial sum at integer orders and the closed form at
q = 1.  The result is then inflated by a relative 1e-11 (and one ulp) so that it does not under-state.
The hardest points are those where two maxima of g have comparable heights (alpha ~ 4 sigma^2, or q such that
g(r1) ~ g(r3)): the window then spans both and needs the most panels (up to 18 found over the
whole domain, 5 to 9 typically).
One panel short still gives ~2e-11; two short ~1e-8 (hence the fallback rule).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .._core.numerics import float64_jit, log_comb_table, log_expm1, x64_scope

__all__ = [
    "log_a_minus_one_fractional",
    "log_a_minus_one_fractional_and_need",
    "fractional_panels_needed",
    "choose_n_panels",
    "DEFAULT_N_PANELS",
    "AUTO",
    "AUTO_MARGIN",
    "AUTO_CAP",
    "MESH_PANELS",
]

_GL_NODES = 12  # Gauss-Legendre nodes per panel
_GL_X, _GL_W = np.polynomial.legendre.leggauss(_GL_NODES)
_C_GAUSS = 4.0  # panel width <= _C_GAUSS * sigma
_C_KINK = 2.0  # panel width <= _C_KINK * (sigma^2 + |z - z0|) near the kink z0
_DEPTH = 30.0  # windows: integrand >= e^{-_DEPTH} of the estimated integral
_L_CLAMP = 700.0  # exp overflow guard
_L_FLOOR = -250.0  # log(1+u) floor: f is then exact to e^-250 and e^l e^-z^2/.. stays above XLA's flush-to-zero
_X_CLAMP = 300.0  # keeps val * exp(expo) free of overflow and of premature underflow
_SERIES_BOUND = 0.25  # series where max(alpha - 1, 1) |log(1 + u)| <= 0.25
_PHI2_COEFFS = tuple(1.0 / math.factorial(k) for k in range(2, 13))  # truncation < 0.25^11 / 13! ~ 4e-17
_ROOT_ITERS = 60  # bisection caps; the loops stop once every bracket is below tol * sigma
_EDGE_ITERS = 60
_ROOT_TOL = 1e-3
_EDGE_TOL = 2e-2
_SAFETY = 1e-11  # relative inflation of A - 1 (rounds the quadrature error up)
#: the same above order 1024, outside the measured domain of the module docstring: the soundness campaign
#: found the quadrature 1.75e-11 below mpmath at alpha = 1e6 - 0.5, sigma 6e3-1e4 (5 of 166 points;
#: tests/test_soundness.py::test_regressions_rounded_up)
_SAFETY_HIGH_ORDER = 1e-10
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
DEFAULT_N_PANELS = 24  # >= the largest need found over the domain (18, on the alpha ~ 4 sigma^2 ridge; 1.2e6 probes)
_CHORD_SLACK = 30.0  # most the shared mesh's scale may exceed the envelope's maximum (no underflow: e^-30)
# panel counts compiled: coarse steps (at most 1.5x the need) so that a few programs serve every input (each
# count is a program of its own, 6-10 s to compile on a 2-core CPU)
_BUCKETS = (8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)


class _Consts:
    """Per-point constants of the integrand (all arrays of the broadcast shape)."""

    def __init__(self, q, sigma, alpha):
        self.q = q
        self.sigma = sigma
        self.alpha = alpha
        self.s2 = sigma * sigma
        self.inv_s2 = 1.0 / self.s2
        self.lq = jnp.log(q)
        self.l1q = jnp.log1p(-q)
        self.lam = jnp.minimum(self.lq - self.l1q, 1e4)  # logit(q), clamped at q = 1
        self.z0 = 0.5 - self.s2 * self.lam
        self.am1 = alpha - 1.0
        self.m = jnp.maximum(self.am1, 1.0)


class _View:
    """The arrays of a _Consts with ``lead`` leading and ``trail`` trailing unit axes added."""

    def __init__(self, k, lead=0, trail=0):
        idx = (None,) * lead + (...,) + (None,) * trail
        for n_, v_ in k.__dict__.items():
            setattr(self, n_, v_[idx])


def _integrand_parts(z, k):
    """(val, expo) with exp(-z^2/(2 sigma^2)) f(u(z)) = val * exp(expo); k's arrays broadcast against z."""
    return _order_parts(*_node_parts(z, k), k.am1)


def _node_parts(z, k):
    """The order-free part of the integrand at nodes z: (l, t, gz), l = log1p(u(z)), t = -expm1(-l),
    gz = -z^2 / (2 sigma^2).

    l and t are consistent (t = u/(1+u) for the same 1 + u), so f is accurate even where 1 + u underflows
    relative to 1 (q ~ 1, z << 0).
    """
    # Branch-free (min/max/clip only): selects inside the node loop stop XLA:CPU from vectorising it.
    L = (z - 0.5) * k.inv_s2
    Lc = jnp.minimum(L, _L_CLAMP)
    u = k.q * jnp.expm1(Lc)
    l = jnp.maximum(jnp.log1p(u) + (L - Lc), _L_FLOOR)
    t = -jnp.expm1(-l)
    return l, t, -0.5 * z * z * k.inv_s2


def _order_parts(l, t, gz, am1):
    """(val, expo) of the integrand at order alpha = 1 + am1 from the order-free node parts (_node_parts)."""
    x = am1 * l
    mm = jnp.maximum(am1, 1.0)
    # weight of the series: 1 where max(alpha-1, 1)|l| <= _SERIES_BOUND, 0 beyond (a 1e-6 wide ramp between,
    # where both forms are accurate)
    wser = jnp.clip((_SERIES_BOUND - mm * jnp.abs(l)) * 1e6 + 1.0, 0.0, 1.0)
    lim = 1.01 * _SERIES_BOUND / mm
    ls = jnp.clip(l, -lim, lim)
    xs = am1 * ls
    # f / (1 + u) = x^2 phi2(x) + (alpha - 1) l^2 phi2(-l), phi2(y) = (e^y - 1 - y) / y^2: two positive terms
    series = ls * ls * (am1 * am1 * _phi2(xs) + am1 * _phi2(-ls))
    xc = jnp.minimum(x, _X_CLAMP)
    direct = jnp.expm1(xc) - am1 * t
    val = wser * series + (1.0 - wser) * direct
    expo = l + (x - xc) + gz
    return val, expo


def _phi2(y):
    """(e^y - 1 - y) / y^2 = sum_{k>=2} y^(k-2) / k! for |y| <= _SERIES_BOUND (Horner, constant coefficients)."""
    acc = _PHI2_COEFFS[-1]
    for c in _PHI2_COEFFS[-2::-1]:
        acc = c + y * acc
    return acc


def _log_integrand(z, k):
    """log of exp(-z^2/(2 sigma^2)) f(u(z))."""
    val, expo = _integrand_parts(z, k)
    return expo + jnp.log(val)


def _proxy(z, k: _Consts):
    """g(z) = -z^2/(2 sigma^2) + alpha log(1 - q + q e^L): log of the envelope P of the integrand."""
    b = k.lq + (z - 0.5) * k.inv_s2
    lse = jnp.maximum(k.l1q, b) + jnp.log1p(jnp.exp(-jnp.abs(k.l1q - b)))  # logaddexp, branch-free
    return -0.5 * z * z * k.inv_s2 + k.alpha * lse


def _phi(z, k: _Consts):
    """phi(z) = z - alpha s(z); g'(z) = -phi(z) / sigma^2."""
    L = (z - 0.5) * k.inv_s2
    return z - k.alpha * _sigmoid(L + k.lam)


def _sigmoid(x):
    return 0.5 * (1.0 + jnp.tanh(0.5 * x))


def _bisect(a, b, below, tol, iters):
    """Bisection on brackets [a, b] (either order): ``below(mid)`` true moves a to mid, else b.

    Stops when every bracket is narrower than ``tol`` (per element) or after ``iters`` halvings.
    """

    def cond(c):
        it, a_, b_ = c
        return (it < iters) & jnp.any(jnp.abs(b_ - a_) > tol)

    def body(c):
        it, a_, b_ = c
        mid = 0.5 * (a_ + b_)
        m = below(mid)
        return it + 1, jnp.where(m, mid, a_), jnp.where(m, b_, mid)

    _, a, b = lax.while_loop(cond, body, (0, a, b))
    return a, b


def _bisect_roots(neg, pos, fn, tol, iters):
    """Root of fn keeping fn(neg) <= 0 <= fn(pos) (any orientation); returns the midpoint."""
    n, p = _bisect(neg, pos, lambda z: fn(z) < 0.0, tol, iters)
    return 0.5 * (n + p)


def _bisect_edge(out, inn, g, level, tol, iters):
    """g = level keeping g(out) < level <= g(inn); returns the outside end (a safe window edge)."""
    o, _ = _bisect(out, inn, lambda z: g(z) < level, tol, iters)
    return o


def _mesh_params(k: _Consts):
    W = _C_GAUSS * k.sigma
    dstar = jnp.maximum(W / _C_KINK - k.s2, 0.0)
    psistar = jnp.log1p(dstar * k.inv_s2) / _C_KINK
    return W, dstar, psistar


def _psi(d, k, W, dstar, psistar):
    ad = jnp.abs(d)
    inner = jnp.log1p(jnp.minimum(ad, dstar) * k.inv_s2) / _C_KINK
    return jnp.sign(d) * jnp.where(ad < dstar, inner, psistar + (ad - dstar) / W)


def _psi_inv(p, k, W, dstar, psistar):
    ap = jnp.abs(p)
    inner = k.s2 * jnp.expm1(_C_KINK * jnp.minimum(ap, psistar))
    return jnp.sign(p) * jnp.where(ap < psistar, inner, dstar + (ap - psistar) * W)


def _plan(q, sigma, alpha):
    """Windows of the integral: (consts, a[3], b[3], log reference bound, mesh params)."""
    k = _Consts(q, sigma, alpha)
    sig, s2, a_ = k.sigma, k.s2, alpha
    # critical points of phi: s(1-s) = sigma^2/alpha
    v = 4.0 * s2 / a_
    case1 = v >= 1.0
    vv = jnp.where(case1, 0.5, v)
    sa = vv / (2.0 * (1.0 + jnp.sqrt(1.0 - vv)))
    logit_sa = jnp.log(sa) - jnp.log1p(-sa)
    za = k.z0 + s2 * logit_sa
    zb = k.z0 - s2 * logit_sa
    phi_za = _phi(za, k)
    phi_zb = _phi(zb, k)
    e1 = case1 | (phi_za >= 0.0)
    e3 = (~case1) & (phi_zb <= 0.0)
    both = e1 & e3
    # three root brackets stacked on a leading axis: r1 in [0, hi1], r3 in [zb, alpha], mid in [za, zb]
    hi1 = jnp.where(case1, a_, jnp.maximum(za, 0.0))
    zero = jnp.zeros_like(a_)
    neg = jnp.stack([zero, jnp.where(e3, zb, 0.0), jnp.where(both, zb, 0.0)])
    pos = jnp.stack([hi1, jnp.where(e3, a_, 1.0), jnp.where(both, za, 1.0)])
    kk = _View(k, lead=1)
    roots = _bisect_roots(neg, pos, lambda z: _phi(z, kk), _ROOT_TOL * sig, _ROOT_ITERS)
    r1, r3, rm = roots[0], roots[1], roots[2]
    g1 = jnp.where(e1, _proxy(r1, k), -jnp.inf)
    g3 = jnp.where(e3, _proxy(r3, k), -jnp.inf)
    gm = _proxy(rm, k)
    G = jnp.maximum(g1, g3)
    # estimate of log integral (unnormalised Gaussian): integrand at the maxima and in the bulk, times sigma
    cands = jnp.stack([r1, r3, jnp.full_like(a_, 2.0), -1.4 * sig, 1.0 + 1.4 * sig])
    lt = _log_integrand(cands, kk)
    lt = jnp.where(jnp.stack([e1, e3, True | e1, True | e1, True | e1]), lt, -jnp.inf)
    lam_est = jnp.max(lt, axis=0) + jnp.log(sig) - 1.0
    c = lam_est - _DEPTH
    # relevant maxima
    rel1 = e1 & (g1 >= c)
    rel3 = e3 & (g3 >= c)
    rel1 = rel1 | ~rel3  # the global maximum is always relevant
    rL = jnp.where(rel1, r1, r3)
    gL = jnp.where(rel1, g1, g3)
    rR = jnp.where(rel3, r3, r1)
    gR = jnp.where(rel3, g3, g1)
    merged = ~(rel1 & rel3) | (gm >= c)
    # brackets for the four edges (outside point, inside point)
    dl = jnp.sqrt(2.0 * jnp.maximum(gL - c, 0.0)) * sig
    dr = jnp.sqrt(2.0 * jnp.maximum(gR - c, 0.0)) * sig
    zlb = -jnp.sqrt(2.0 * jnp.maximum(_proxy(zero, k) - c, 0.0)) * sig
    zrb = a_ + jnp.sqrt(2.0 * jnp.maximum(_proxy(a_, k) - c, 0.0)) * sig
    d1 = jnp.sqrt(2.0 * jnp.maximum(g1 - c, 0.0)) * sig
    d3 = jnp.sqrt(2.0 * jnp.maximum(g3 - c, 0.0)) * sig
    split = ~merged
    out = jnp.stack([jnp.minimum(zlb, rL - dl), jnp.maximum(zrb, rR + dr),
                     jnp.where(split, rm, r1 + 1.0), jnp.where(split, rm, r3 - 1.0)])
    inn = jnp.stack([rL - dl, rR + dr, jnp.where(split, r1 + d1, r1), jnp.where(split, r3 - d3, r3)])
    cc = jnp.broadcast_to(c, out.shape)
    edges = _bisect_edge(out, inn, lambda z: _proxy(z, kk), cc, _EDGE_TOL * sig, _EDGE_ITERS)
    eOL, eOR, eIR1, eIL3 = edges[0], edges[1], edges[2], edges[3]
    # windows: B = [zB, 1/2]; P-windows intersected with [1/2, inf)
    laq = jnp.log(a_ * k.q)
    hasB = laq >= c
    zB = -jnp.sqrt(2.0 * jnp.maximum(laq - c, 0.0)) * sig
    a1 = jnp.maximum(eOL, 0.5)
    # B = [zB, 1/2] joins the first P-window when that starts at 1/2
    join = hasB & (a1 <= 0.5)
    a0 = jnp.where(hasB & ~join, jnp.minimum(zB, 0.5), 0.5)
    b0 = jnp.full_like(a_, 0.5)
    a1 = jnp.where(join, jnp.minimum(zB, 0.5), a1)
    b1 = jnp.maximum(jnp.where(merged, eOR, eIR1), a1)
    a2 = jnp.where(merged, b1, jnp.maximum(eIL3, jnp.maximum(b1, 0.5)))
    b2 = jnp.where(merged, b1, jnp.maximum(eOR, a2))
    a = jnp.stack([a0, a1, a2])
    b = jnp.stack([b0, b1, b2])
    ref = jnp.maximum(G, laq)  # log integrand <= ref on every window
    return k, a, b, ref


def _resolution(k, a, b):
    """Mesh length (number of panels needed) of each window; also returns Psi(a) and the kink position."""
    W, dstar, psistar = _mesh_params(k)
    z0e = jnp.clip(k.z0, a - dstar, b + dstar)
    pa = _psi(a - z0e, k, W, dstar, psistar)
    pb = _psi(b - z0e, k, W, dstar, psistar)
    return pb - pa, pa, z0e, (W, dstar, psistar)


def fractional_panels_needed(q, sigma, alpha):
    """Number of Gauss-Legendre panels the fractional-order quadrature needs at each point (a jnp array).

    ``log_a_minus_one_fractional`` reaches its stated accuracy where ``n_panels >= fractional_panels_needed``.
    """
    q, sigma, alpha = jnp.broadcast_arrays(*(jnp.asarray(x, dtype=jnp.float64) for x in (q, sigma, alpha)))
    qs = jnp.where(q > 0, q, 0.5)
    k, a, b, _ = _plan(qs, sigma, alpha)
    return _need(_resolution(k, a, b)[0])


def _need(M):
    """Panels the windows of mesh lengths M (stacked on a leading axis of 3) need: their total length rounded
    up, and one more per non-empty window after the first."""
    return jnp.ceil(jnp.sum(M, axis=0)) + jnp.maximum(jnp.sum(M > 0, axis=0) - 1, 0)


def log_a_minus_one_fractional(q, sigma, alpha, *, n_panels=DEFAULT_N_PANELS):
    """log(A_alpha - 1) of the Poisson-subsampled Gaussian (MTZ 2019, Sec. 3.3) for any real alpha > 1.

    A_alpha = E_{z ~ N(0, sigma^2)}[(1 - q + q exp((2z - 1)/(2 sigma^2)))^alpha]; q in [0, 1], sigma > 0,
    alpha > 1 broadcast (float64).  Returns -inf where A - 1 = 0 (q = 0).  ``n_panels`` (static, >= 3) fixes
    the number of quadrature panels; where it is below ``fractional_panels_needed(q, sigma, alpha)`` the
    quadrature is not certified and the result falls back to the sound but loose q = 1 value
    log(expm1(alpha (alpha - 1) / (2 sigma^2))) (subsampling never increases RDP).  Pick ``n_panels`` with
    :func:`choose_n_panels` or ``DEFAULT_N_PANELS`` (above every need found over the domain), ``AUTO`` (each
    point its own need plus ``AUTO_MARGIN``), or use :func:`log_a_minus_one_fractional_and_need` to see where it
    falls back.  The value is rounded up by a relative 1e-11.
    """
    res, need = log_a_minus_one_fractional_and_need(q, sigma, alpha, n_panels=n_panels)
    enough = need + AUTO_MARGIN <= AUTO_CAP if isinstance(n_panels, str) else need <= n_panels
    return jnp.where(enough, res, _log_a_minus_one_unsampled(sigma, alpha))


def _log_a_minus_one_unsampled(sigma, alpha):
    """log(A - 1) at q = 1, exp(alpha (alpha - 1) / (2 sigma^2)) - 1: a sound upper bound at every q (sampling
    never increases the Renyi divergence: joint quasi-convexity, mixing mu_0 into both arguments)."""
    e = alpha * (alpha - 1.0) / (2.0 * sigma * sigma)
    big = e > 30.0
    return jnp.where(big, e + jnp.log1p(-jnp.exp(-jnp.where(big, e, 30.0))), jnp.log(jnp.expm1(jnp.where(big, 30.0, e))))


#: ``n_panels=AUTO``: each point takes its own panel count, its need (``fractional_panels_needed``) plus
#: ``AUTO_MARGIN``, summed panel by panel in a loop as long as the batch's largest count (an array, not a
#: compile-time constant: one compiled program serves every input, and a point's value does not depend on the
#: other points of its batch).  Needs above ``AUTO_CAP`` (none found over the domain of the module docstring)
#: fall back to the sound q = 1 value.
AUTO = "auto"
AUTO_MARGIN = 2
AUTO_CAP = 4096
#: Panels of the shared search meshes (``bracket_nodes``) under ``AUTO`` (a static array size; points whose
#: bracket needs more are searched on exact evaluations, see ``BracketNodes.need``).
MESH_PANELS = 32


class _Alloc(NamedTuple):
    """How a point's panels are spread over its (up to three) windows: counts and first panel per window
    (stacked on a leading axis of 3), the windows' mesh coordinates, and the point's total count ``n``."""

    counts: jnp.ndarray
    starts: jnp.ndarray
    M: jnp.ndarray
    pa: jnp.ndarray
    z0e: jnp.ndarray
    mesh: tuple
    b: jnp.ndarray
    n: jnp.ndarray


def _allocate(kp, a, b, n_panels, cap=AUTO_CAP):
    """(_Alloc, need): ``n_panels`` panels (an int, or ``AUTO``: need + AUTO_MARGIN, at most ``cap``) allocated
    among the non-empty windows in proportion to their mesh length (the closed-form integral of the mesh
    density, which depends on sigma and the kink z0 only, not on alpha); need: the panels the windows need."""
    M, pa, z0e, mesh = _resolution(kp, a, b)
    nonempty = M > 0
    E = jnp.sum(nonempty, axis=0)
    Mtot = jnp.sum(M, axis=0)
    need = _need(M)
    n = jnp.minimum(need + AUTO_MARGIN, cap).astype(E.dtype) if isinstance(n_panels, str) else n_panels
    # (>= 1 each when non-empty)
    base = nonempty + jnp.floor((n - E) * M / jnp.where(Mtot > 0, Mtot, 1.0)).astype(E.dtype)
    left = n - jnp.sum(base, axis=0)
    imax = jnp.argmax(M, axis=0)
    counts = base + jnp.where(jnp.arange(3).reshape((3,) + (1,) * imax.ndim) == imax, left, 0)
    starts = jnp.cumsum(counts, axis=0) - counts
    return _Alloc(counts, starts, M, pa, z0e, mesh, b, jnp.broadcast_to(n, imax.shape)), need


def _panels(al, kp, j):
    """Nodes z (..., P, 12) and half-widths hw (..., P) of the panels ``j`` (integers, shape (1, ..., 1, P),
    the batch's rank plus a trailing axis of P panels) of the composite Gauss-Legendre rule.  Panels at or past
    a point's count repeat its last panel with hw = 0 (they add nothing, and their nodes stay in a window)."""
    W, dstar, psistar = al.mesh
    st = jnp.moveaxis(al.starts, 0, -1)[..., None, :]  # (..., 1, 3)
    idx = jnp.sum(j[..., None] >= st, axis=-1) - 1  # (..., P): panel j -> its window
    idx = jnp.clip(idx, 0, 2)

    def pick(arr):  # arr: (3, ...) -> (..., P)
        return jnp.take_along_axis(jnp.moveaxis(arr, 0, -1), idx, axis=-1)

    cnt = pick(al.counts).astype(jnp.float64)
    jl = jnp.minimum(j - pick(al.starts), jnp.maximum(cnt - 1.0, 0.0))  # local index, clamped to the last panel
    Mi, pai, z0i = pick(al.M), pick(al.pa), pick(al.z0e)
    cnt_s = jnp.maximum(cnt, 1.0)
    p0 = pai + Mi * (jl / cnt_s)
    p1 = pai + Mi * ((jl + 1.0) / cnt_s)
    ex = lambda v_: v_[..., None]  # noqa: E731
    zl = z0i + _psi_inv(p0, _View(kp, trail=1), ex(W), ex(dstar), ex(psistar))
    zr = z0i + _psi_inv(p1, _View(kp, trail=1), ex(W), ex(dstar), ex(psistar))
    # the last panel of a window ends exactly at b
    zr_exact = jnp.where(jl + 1.0 == cnt, pick(al.b), zr)
    hw = jnp.where((cnt > 0) & (j < al.n[..., None]), 0.5 * (zr_exact - zl), 0.0)
    mid = zl + hw
    z = mid[..., None] + hw[..., None] * jnp.asarray(_GL_X)  # (..., P, m)
    return z, hw


def _panel_index(al, n_static=None, j=None):
    """Panel indices for :func:`_panels`: all of ``n_static`` at once, or the single (traced) panel ``j``."""
    lead = (1,) * al.n.ndim
    if j is None:
        return jnp.arange(n_static).reshape(lead + (n_static,))
    return jnp.reshape(j, lead + (1,))


def _quadrature(kp, a, b, n_panels, node_sum):
    """(sum over the nodes of ``node_sum(z, hw)``, need): every panel at once for a static ``n_panels``; under
    ``AUTO`` one panel per step of a loop as long as the batch's largest count (each point adds its own)."""
    al, need = _allocate(kp, a, b, n_panels)
    if not isinstance(n_panels, str):
        return node_sum(*_panels(al, kp, _panel_index(al, n_static=n_panels))), need

    def step(j, acc):
        return acc + node_sum(*_panels(al, kp, _panel_index(al, j=j)))

    return lax.fori_loop(0, jnp.max(al.n), step, jnp.zeros(al.n.shape)), need


def _node_sum(val, expo, ref, hw):
    """The composite Gauss-Legendre sum of val * exp(expo - ref) over the nodes (..., n_panels, 12)."""
    scaled = val * jnp.exp(expo - ref[..., None, None])
    # node sums as a matrix-vector product: on XLA:CPU a reduce here is lowered to a library fusion that splits
    # the elementwise integrand into many materialised loops (several times slower)
    return jnp.sum(hw * (scaled @ jnp.asarray(_GL_W)), axis=-1)


def log_a_minus_one_fractional_and_need(q, sigma, alpha, *, n_panels=DEFAULT_N_PANELS):
    """(log(A_alpha - 1) computed with ``n_panels`` panels, the panels needed for its accuracy) at each point.

    Where need > n_panels the first value is computed on coarser panels and not certified.  ``n_panels=AUTO``:
    each point on its own need plus ``AUTO_MARGIN`` panels (certified up to ``AUTO_CAP``; no compile-time panel
    count, so one program serves every input; forward-mode differentiable only, the loop's length is data).
    """
    if isinstance(n_panels, str):
        if n_panels != AUTO:
            raise ValueError(f"Expected n_panels to be an integer >= 3 or {AUTO!r}, got n_panels={n_panels!r}.")
    elif n_panels < 3:
        raise ValueError(f"Expected n_panels={n_panels} >= 3.")
    q, sigma, alpha = jnp.broadcast_arrays(*(jnp.asarray(x, dtype=jnp.float64) for x in (q, sigma, alpha)))
    pos_q = q > 0
    qs = jnp.where(pos_q, q, 0.5)
    # the plan (windows, mesh, scale) is a non-differentiated function of the parameters: moving the nodes
    # changes the integral by less than its error, so gradients flow through the integrand only
    sg = lax.stop_gradient
    kp, a, b, ref = _plan(sg(qs), sg(sigma), sg(alpha))
    k = _View(_Consts(qs, sigma, alpha), trail=2)

    def node_sum(z, hw):
        return _node_sum(*_integrand_parts(z, k), ref, hw)

    total, need = _quadrature(kp, a, b, n_panels, node_sum)
    res = ref + jnp.log(total) - jnp.log(sigma) - _HALF_LOG_2PI + jnp.where(alpha > 1024.0, _SAFETY_HIGH_ORDER, _SAFETY)
    # and one ulp up, for the values where 1e-11 is below an ulp (outside the gradient: nextafter has no JVP)
    res0 = lax.stop_gradient(res)
    res = res + (jnp.nextafter(res0, jnp.inf) - res0)
    return jnp.where(pos_q, res, -jnp.inf), jnp.where(pos_q, need, 0.0)


class BracketNodes(NamedTuple):
    """One quadrature mesh per point serving every order of a bracket [lo, hi] (see :func:`bracket_nodes`)."""

    l: jnp.ndarray  #: log1p(u) at the nodes, (..., n_panels, 12)
    t: jnp.ndarray  #: -expm1(-l) at the nodes
    gz: jnp.ndarray  #: -z^2 / (2 sigma^2) at the nodes
    hw: jnp.ndarray  #: panel half-widths, (..., n_panels)
    log_q: jnp.ndarray  #: log(q) (q = 0 replaced by 1/2; see pos_q)
    lo: jnp.ndarray  #: the bracket's ends (orders)
    hi: jnp.ndarray
    ref_lo: jnp.ndarray  #: max over the nodes of alpha l + gz at lo and at hi
    ref_hi: jnp.ndarray
    chord_ok: jnp.ndarray  #: the chord of ref over-estimates it by at most _CHORD_SLACK inside the bracket
    log_norm: jnp.ndarray  #: log(sigma) + log(2 pi) / 2
    pos_q: jnp.ndarray
    need: jnp.ndarray  #: panels the hull windows need (the mesh is as fine as the exact one's where <= n_panels)
    count: jnp.ndarray | None = None  #: under AUTO, each point's panel count (the panels past it add nothing)


def bracket_nodes(q, sigma, lo, hi, *, n_panels=DEFAULT_N_PANELS):
    """Quadrature nodes shared by every order in [lo, hi], for :func:`bracket_log_a_minus_one`.

    ``n_panels=AUTO``: arrays of ``MESH_PANELS`` panels, each point using its need plus ``AUTO_MARGIN`` of them
    (at most all); a point whose ``need`` exceeds ``MESH_PANELS`` is for its caller to evaluate otherwise.

    The windows are the hulls of the windows of the two end orders (made disjoint), laid out with the
    alpha-free mesh density of :func:`log_a_minus_one_fractional`.  The order-free part of the integrand
    (three of its five transcendental functions) and the plan are computed once here.  This is a search
    aid, not a certified value: an order inside the bracket may have mass outside the hulls (not observed),
    so a caller uses it to locate an order and evaluates that order with :func:`log_a_minus_one_fractional`.
    """
    q, sigma, lo, hi = jnp.broadcast_arrays(*(jnp.asarray(x, dtype=jnp.float64) for x in (q, sigma, lo, hi)))
    pos_q = q > 0
    qs = jnp.where(pos_q, q, 0.5)
    two = lambda x: jnp.broadcast_to(x, (2,) + x.shape)  # noqa: E731
    _, a, b, _ = _plan(two(qs), two(sigma), jnp.stack([lo, hi]))  # a, b: (3, 2, ...)
    ah, bh = jnp.min(a, axis=1), jnp.max(b, axis=1)
    # disjoint hulls with the same union: each window starts where the previous one ends
    b0 = jnp.maximum(ah[0], jnp.minimum(bh[0], ah[1]))
    b1 = jnp.maximum(bh[1], bh[0])
    a2 = jnp.maximum(ah[2], b1)
    b2 = jnp.maximum(bh[2], a2)
    k = _Consts(qs, sigma, lo)  # the mesh and the node parts do not depend on alpha
    auto = isinstance(n_panels, str)
    al, need = _allocate(k, jnp.stack([ah[0], ah[1], a2]), jnp.stack([b0, b1, b2]), n_panels, cap=MESH_PANELS)
    kv = _View(k, trail=2)
    if not auto:
        z, hw = _panels(al, k, _panel_index(al, n_static=n_panels))
        l, t, gz = _node_parts(z, kv)
    else:  # MESH_PANELS slots, filled as far as the batch's largest count (the others repeat panel 0, hw = 0)
        z0, hw0 = _panels(al, k, _panel_index(al, j=0))
        first = _node_parts(z0, kv)
        full = lambda x: jnp.repeat(x, MESH_PANELS, axis=-2)  # noqa: E731
        hw_init = lax.dynamic_update_slice_in_dim(jnp.zeros(hw0.shape[:-1] + (MESH_PANELS,)), hw0, 0, axis=-1)
        init = (full(first[0]), full(first[1]), full(first[2]), hw_init)

        def fill(j, c):
            zj, hwj = _panels(al, k, _panel_index(al, j=j))
            parts = _node_parts(zj, kv)
            put = lambda x, v: lax.dynamic_update_slice_in_dim(x, v, j, axis=-2)  # noqa: E731
            return (put(c[0], parts[0]), put(c[1], parts[1]), put(c[2], parts[2]),
                    lax.dynamic_update_slice_in_dim(c[3], hwj, j, axis=-1))

        l, t, gz, hw = lax.fori_loop(1, jnp.max(al.n), fill, init)
    ref_lo = jnp.max(lo[..., None, None] * l + gz, axis=(-2, -1))
    ref_hi = jnp.max(hi[..., None, None] * l + gz, axis=(-2, -1))
    # max_nodes(alpha l + gz) is a maximum of functions affine in alpha: convex, below its chord, which exceeds
    # it by at most (max l - min l) (hi - lo) / 4
    slack = (jnp.max(l, axis=(-2, -1)) - jnp.min(l, axis=(-2, -1))) * (hi - lo) / 4.0
    return BracketNodes(l=l, t=t, gz=gz, hw=hw, log_q=jnp.log(qs), lo=lo, hi=hi, ref_lo=ref_lo, ref_hi=ref_hi,
                        chord_ok=slack <= _CHORD_SLACK, log_norm=jnp.log(sigma) + _HALF_LOG_2PI, pos_q=pos_q,
                        need=jnp.where(pos_q, need, 0.0), count=al.n if auto else None)


def bracket_log_a_minus_one(nodes: BracketNodes, alpha):
    """Approximate log(A_alpha - 1) at an order alpha in [nodes.lo, nodes.hi] (shape of the nodes' batch).

    Two transcendental functions per node.  The sum is scaled, as in :func:`log_a_minus_one_fractional`, by
    the larger of log(alpha q) and the maximum of the envelope's log g(z) = alpha l(z) - z^2/(2 sigma^2)
    over the nodes, or an upper bound within e^30 of it (its chord across the bracket: it is convex in
    alpha).  Returns +inf where the sum underflows (never a spuriously small value).
    """
    nd = nodes
    a3 = alpha[..., None, None]

    # the envelope's maximum over the nodes (as the plan's G, without its root search): its chord between the
    # bracket's ends where that is within _CHORD_SLACK of it at every point of the batch, else one more pass
    def chord(_):
        w = (alpha - nd.lo) / jnp.where(nd.hi > nd.lo, nd.hi - nd.lo, 1.0)
        return nd.ref_lo + jnp.clip(w, 0.0, 1.0) * (nd.ref_hi - nd.ref_lo)

    g = lax.cond(jnp.all(nd.chord_ok), chord, lambda _: jnp.max(a3 * nd.l + nd.gz, axis=(-2, -1)), None)
    ref = jnp.maximum(g, nd.log_q + jnp.log(alpha))
    am1 = (alpha - 1.0)[..., None, None]
    if nd.count is None:
        total = _node_sum(*_order_parts(nd.l, nd.t, nd.gz, am1), ref, nd.hw)
    else:  # AUTO: panel by panel, as far as the batch's largest count

        def step(j, acc):
            sl = lambda x: lax.dynamic_slice_in_dim(x, j, 1, axis=-2)  # noqa: E731
            hw = lax.dynamic_slice_in_dim(nd.hw, j, 1, axis=-1)
            return acc + _node_sum(*_order_parts(sl(nd.l), sl(nd.t), sl(nd.gz), am1), ref, hw)

        total = lax.fori_loop(0, jnp.max(nd.count), step, jnp.zeros(ref.shape))
    res = jnp.where(total > 0.0, ref + jnp.log(jnp.where(total > 0.0, total, 1.0)) - nd.log_norm, jnp.inf)
    return jnp.where(nd.pos_q, res, -jnp.inf)


def _bucket(n):
    for bkt in _BUCKETS:
        if n <= bkt:
            return bkt
    return int(2 ** math.ceil(math.log2(n)))


_Q_PROBE = np.array([1e-8, 1e-6, 1e-4, 1e-3, 1e-2, 0.03, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0])
_PROBE_SIZE = 24  # values of sigma and of alpha probed by choose_n_panels (fixed: one compilation)
_PROBE_MARGIN = 2  # panels added to the probed need


def _probe_values(x, size):
    """``size`` values spanning the distinct values of x: all of them if few, else log-spaced quantiles."""
    u = np.unique(np.asarray(x, dtype=np.float64).ravel())
    every = u.size <= size
    if not every:
        u = u[np.unique(np.round(np.geomspace(1, u.size, size)).astype(int) - 1)]
    return np.resize(u, size), every  # padded by repetition to the fixed size


def choose_n_panels(sigma, alpha, q=None, *, margin=_PROBE_MARGIN, alpha_probe=_PROBE_SIZE,
                    alpha_exhaustive=True):
    """A static ``n_panels`` for concrete inputs: the probed maximum of :func:`fractional_panels_needed`.

    sigma, alpha and q (optional) are concrete array-likes of any shapes; every combination of their values
    is treated as possible (sigma and alpha need not broadcast: alpha may be the orders axis).  Up to 24
    distinct sigma and alpha values (all of them, or quantiles including the extremes) and up to 12 q values
    (the given ones, or a grid over [1e-8, 1] when q is omitted) are probed; unless every value was probed
    ``margin`` panels are added (2 by default: one panel short still gives ~2e-11; but the need can rise
    sharply with q near alpha ~ 4 sigma^2, so callers should verify it with
    :func:`log_a_minus_one_fractional_and_need`, or use ``AUTO`` or ``DEFAULT_N_PANELS``), and the count is
    rounded up to a bucket (6, 7, ..., 12, 14, 16, 20, 24, ...) to limit recompilation.  ``alpha_probe`` sets
    how many alpha values are probed (a fixed size per caller: one compilation each); with
    ``alpha_exhaustive=False`` the alpha values given are a sample of the orders that will be evaluated, so the
    margin is kept even when all of them were probed.
    """
    s, s_all = _probe_values(sigma, _PROBE_SIZE)
    a, a_all = _probe_values(alpha, alpha_probe)
    if q is None:
        qq, q_all = _Q_PROBE, False
    else:
        qq, q_all = _probe_values(q, _Q_PROBE.size)  # every q value if at most 12, else 12 quantiles
    with x64_scope():
        # one q value per call: one compiled shape whatever the number of q values (a (k, 24, alpha_probe)
        # call compiled a program per power of two of k)
        need = max(float(np.max(np.asarray(_needed_jit(np.reshape(v, (1, 1, 1)), s[None, :, None],
                                                              a[None, None, :]))))
                   for v in np.unique(qq))
    margin = 0 if (s_all and a_all and alpha_exhaustive and q_all) else margin  # exact when every value was probed
    return _bucket(max(need + margin, 3.0))


def _needed_jit(q, s, a):
    global _NEEDED_JITTED
    if _NEEDED_JITTED is None:
        _NEEDED_JITTED = jax.jit(fractional_panels_needed)
    return _NEEDED_JITTED(q, s, a)


_NEEDED_JITTED = None


# ----------------------------------------------------------------------------------------------------------
# Integer orders on a fixed grid: the finite binomial series with a static table of log-binomial coefficients


def log_a_minus_one_integer_grid(q, sigma, alpha, kmax):
    """log(A_alpha - 1) at the static integer orders ``alpha`` (a tuple, each <= kmax), for q, sigma broadcasting.

    MTZ 2019's integer-order series (their Sec. 3.2), A_alpha - 1 = sum_{k=2}^alpha C(alpha, k) q^k
    (1 - q)^(alpha - k) expm1(k (k - 1) / (2 sigma^2)), with the k = 0, 1 terms removed against the binomial
    normalisation (every term is non-negative: no cancellation, accurate relative to A - 1 even at q = 1e-8).
    Orders are static, so the log-binomial coefficients are a trace-time table (:func:`numerics.log_comb_table`,
    shared with the WBK bound), and the sigma- and q-dependent part
    k log(q / (1 - q)) + log expm1(k (k - 1) / (2 sigma^2)) is shared by every order: one exp per term remains
    (the log-sum-exp).  Returns shape broadcast(q, sigma) + (len(alpha),).
    """
    a_np = np.asarray(alpha, dtype=np.float64)
    # log C(alpha_i, k) for k = 0..kmax, -inf outside 2 <= k <= alpha_i (the k = 0, 1 terms are cancelled)
    table = np.concatenate([np.full((a_np.size, 2), -np.inf),
                            log_comb_table(tuple(int(x) for x in a_np), kmax)], axis=1)
    table_np, table = table, jnp.asarray(table)  # (n, kmax + 1)
    k = np.arange(kmax + 1, dtype=np.float64)
    rest = jnp.asarray(np.maximum(a_np[:, None] - k[None, :], 0.0))  # alpha - k (0 where masked)
    q = jnp.asarray(q, dtype=jnp.float64)[..., None]
    sigma = jnp.asarray(sigma, dtype=jnp.float64)[..., None]
    lq = jnp.log(q)
    l1q = jnp.maximum(jnp.log1p(-q), -1e200)  # q = 1: (alpha - k) * l1q is 0 at k = alpha, ~-inf elsewhere
    kk = jnp.asarray(k)
    g = kk * lq + log_expm1(jnp.maximum(kk * (kk - 1.0), 1.0) / (2.0 * sigma * sigma))  # (..., kmax + 1)
    terms = table + g[..., None, :] + rest * l1q[..., None]
    terms = jnp.where(jnp.isfinite(table), terms, -jnp.inf)
    m = jnp.max(terms, axis=-1, keepdims=True)
    m_safe = jnp.where(jnp.isfinite(m), m, 0.0)
    s = jnp.sum(jnp.exp(terms - m_safe), axis=-1)
    # Rounded up by a bound on the float64 error (the sum was ~4e-13 below the exact value at q = 0.13,
    # sigma = 1e4, alpha = 2..2e4, benchmarks/soundness_campaign.py): each log-term's error is a few ulps of the
    # magnitudes of its parts (log C(alpha, k) <= lgamma(alpha + 1) ... , k |log q|, |log expm1|, (alpha - k)
    # |log1p(-q)|, all largest at an end of k), and the sum of kmax + 1 exponentials adds (kmax + 1) ulps.
    a_col = jnp.asarray(a_np)
    tmax_np = np.max(np.where(np.isfinite(table_np), np.abs(table_np), 0.0), axis=1)
    tmax = jnp.asarray(tmax_np)
    lq_abs = jnp.where(q > 0, jnp.abs(lq), 0.0)
    l1q_abs = jnp.where(q < 1, jnp.abs(jnp.log1p(-q)), 0.0)
    le_abs = jnp.maximum(jnp.abs(log_expm1(1.0 / (sigma * sigma))),
                         jnp.abs(log_expm1(a_col * (a_col - 1.0) / (2.0 * sigma * sigma))))
    eps = float(np.finfo(np.float64).eps)
    # Above order 1024 the table is Loader's log_comb (numerics.log_comb_table), whose float64 error is not a
    # few ulps of |log C|: up to 55 ulps of it at alpha = 34 344 (2.8e-10, k ~ 14 200), and ~eps alpha where
    # log C is small (k near alpha); the campaign found log(A - 1) 1.4e-11 below the exact value there after
    # the 8-ulp allowance.  Bounded by 64 eps (|log C| + alpha) (tests/test_numerics.py checks it against
    # mpmath up to alpha = 1e6).
    big = jnp.asarray(np.where(a_np > 1024.0, 64.0 * (tmax_np + a_np), 0.0))
    err = 8.0 * eps * (tmax + a_col * (lq_abs + l1q_abs) + le_abs + jnp.abs(m_safe[..., 0])) + (kmax + 4.0) * eps
    err = err + eps * big
    return jnp.where(jnp.isfinite(m[..., 0]), m_safe[..., 0] + jnp.log(s) + err, -jnp.inf)
