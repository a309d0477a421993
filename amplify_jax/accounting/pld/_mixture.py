"""The mixture-of-Gaussians pair (dp_accounting's ``MixtureOfGaussiansDpEvent``), as a mechanism of the PLD
kernels' contract (``loss_range``, ``window_cuts``, ``intervals``; see ``_mechanisms``).

The event is defined by its pair (Choquette-Choo, Ganesh, Steinke, Thakurta 2023, "Privacy amplification for
matrix mechanisms", Sec. 4 and Cor. 4.7: a vector mixture is dominated by the scalar one whose sensitivities
are the vectors' norms): on one input the output is N(0, s^2), on the other M = sum_i w_i N(c_i, s^2), with
sensitivities c_i >= 0 and probabilities w_i.  Both directions are accounted: remove, P = M and Q = N(0, s^2);
add, the two swapped.  The remove loss l(x) = log sum_i w_i exp((2 c_i x - c_i^2) / (2 s^2)) increases in x
(its derivative is a weighted mean of the c_i / s^2 >= 0), so {L <= l} = {X <= x(l)} (remove) and
{X >= x(-l)} (add), and the interval masses are those of the x-intervals under each law.  x(l) has no closed
form: it is found by bisection to adjacent floats (the low end kept); the cut's error (two ulps of x plus l's
rounding over its slope) times the largest density within it is added to each mass's error bound.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._mechanisms import REMOVE, RELATIONS, Z_TAIL, GaussianLoss, Intervals

__all__ = ["MixtureLoss", "RevealedMixture"]

_EPS = float(np.finfo(np.float64).eps)
_SQRT1_2 = float(np.sqrt(0.5))
#: Bisection steps for x(l): the bracket is at most ~1e6 wide, 2^-100 of it is below an ulp.
_STEPS = 100


def _masses(z):
    """Standard normal masses of the N + 1 intervals cut by the sorted standardised edges z (N,), and an
    absolute bound on each one's rounding error.  Tails from erfc on their own side (relative accuracy), the
    middle interval as 1 - the two tails; erfc's error charged as (16 + x^2) ulps (``_mechanisms._gauss_edges``
    measures at most 0.5 (8 + x^2))."""
    zz = jnp.concatenate([jnp.array([-jnp.inf]), z, jnp.array([jnp.inf])])
    az = jnp.abs(zz)
    v = 0.5 * jax.lax.erfc(az * _SQRT1_2)  # Phi(-|z|)
    r = v * (16.0 + 0.5 * jnp.minimum(az, 40.0) ** 2) * _EPS
    a, b = zz[:-1], zz[1:]
    side = (a > 0.0) | (b < 0.0)
    va, vb = v[:-1], v[1:]
    mass = jnp.where(side, jnp.abs(va - vb), jnp.maximum(1.0 - va - vb, 0.0))
    err = r[:-1] + r[1:] + _EPS * jnp.where(side, mass, 1.0)
    # at each cut: P(Z > z), P(Z < z), each v on its own side and 1 - v (one more rounding) on the other
    ve, re, right = v[1:-1], r[1:-1], z > 0.0
    sf, cdf = jnp.where(right, ve, 1.0 - ve), jnp.where(right, 1.0 - ve, ve)
    return mass, err, sf, re + jnp.where(right, 0.0, _EPS), cdf, re + jnp.where(right, _EPS, 0.0)


class MixtureLoss:
    """The mixture-of-Gaussians pair (module docstring).  ``params`` = (c (K,), w (K,), s): sensitivities,
    their probabilities, the noise standard deviation; ``relation``: remove (P = M) or add (P = N(0))."""

    params_names = ("sensitivities", "probabilities", "scale")

    def __init__(self, relation):
        if relation not in RELATIONS:
            raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")
        self.relation = relation

    def __hash__(self):
        return hash(("MixtureLoss", self.relation))

    def __eq__(self, other):
        return type(other) is MixtureLoss and other.relation == self.relation

    def __repr__(self):
        return f"MixtureLoss({self.relation!r})"

    @staticmethod
    def _loss(x, c, w, s):
        """The remove loss l(x), increasing (x: any shape)."""
        lw = jnp.where(w > 0, jnp.log(jnp.where(w > 0, w, 1.0)), -jnp.inf)
        t = lw + (2.0 * c * x[..., None] - c * c) / (2.0 * s * s)
        return jax.scipy.special.logsumexp(t, axis=-1)

    def _span(self, params):
        c, _, s = params
        return -Z_TAIL * s, jnp.max(c) + Z_TAIL * s

    def _x_of(self, loss, params):
        """The x with l(x) = loss (the low end of a bisection to adjacent floats); -inf / +inf where loss is
        below l(lo) / above l(hi), the bracket [lo, hi] holding all but e^{-800} of both laws."""
        c, w, s = params
        lo0 = -(40.0 * s + jnp.max(c)) - 1.0
        hi0 = jnp.max(c) + 40.0 * s + 1.0
        lo = jnp.full(loss.shape, lo0)
        hi = jnp.full(loss.shape, hi0)

        def step(_, bounds):
            lo, hi = bounds
            mid = 0.5 * (lo + hi)
            below = self._loss(mid, c, w, s) < loss
            return jnp.where(below, mid, lo), jnp.where(below, hi, mid)

        lo, hi = jax.lax.fori_loop(0, _STEPS, step, (lo, hi))
        x = jnp.where(self._loss(jnp.full(loss.shape, lo0), c, w, s) >= loss, -jnp.inf, lo)
        x = jnp.where(self._loss(jnp.full(loss.shape, hi0), c, w, s) < loss, jnp.inf, x)
        # how far the true x(loss) may be: two ulps of x, plus l's rounding error over its slope l'(x) =
        # sum_i post_i c_i / s^2 (post: the components' posterior weights at x), the logsumexp's rounding
        # charged as (K + 8) ulps of its largest term
        xf = jnp.where(jnp.isfinite(x), x, 0.0)
        lw = jnp.where(w > 0, jnp.log(jnp.where(w > 0, w, 1.0)), -jnp.inf)
        t = lw + (2.0 * c * xf[..., None] - c * c) / (2.0 * s * s)
        post = jax.nn.softmax(t, axis=-1)
        slope = jnp.sum(post * c, axis=-1) / (s * s)
        big = jnp.max(jnp.where(jnp.isfinite(t), jnp.abs(t), 0.0), axis=-1) + jnp.abs(loss) + 1.0
        dx = 2.0 * _EPS * (jnp.abs(xf) + 1.0) + (c.shape[0] + 8.0) * _EPS * big / jnp.maximum(slope, 1e-300)
        return x, jnp.where(jnp.isfinite(x), dx, 0.0)

    def loss_range(self, params):
        """(lmin, lmax): the P-law lives in [-Z_TAIL s, max c + Z_TAIL s] (M) or [-Z_TAIL s, Z_TAIL s] (N(0))
        up to ~Phi(-Z_TAIL) on either side."""
        c, w, s = params
        x_lo, x_hi = self._span(params)
        if self.relation == REMOVE:
            lo, hi = self._loss(x_lo, c, w, s), self._loss(x_hi, c, w, s)
        else:
            lo, hi = -self._loss(Z_TAIL * s, c, w, s), -self._loss(x_lo, c, w, s)
        return jnp.minimum(lo, hi), jnp.maximum(lo, hi)

    def window_cuts(self, params, k):
        c, w, s = params
        x_lo, x_hi = self._span(params)
        loss = self._loss(jnp.linspace(x_lo, x_hi, k), c, w, s)
        return jnp.sort(loss if self.relation == REMOVE else -loss)

    def _laws(self, edges, dx, params):
        """(M's, N(0)'s) (mass, err, sf, sf_err, cdf, cdf_err) of the x-intervals cut by the sorted ``edges``
        (``_masses``), each error bound raised by the cut's ulp times the density and the weighted sum's
        rounding."""
        c, w, s = params
        fin = jnp.isfinite(edges)

        def density(loc):
            """The largest density of N(loc, s^2) within dx of the cut (0.4 > 1 / sqrt(2 pi))."""
            z = jnp.maximum(jnp.abs(jnp.where(fin, edges, 0.0) - loc) - dx, 0.0) / s
            return jnp.where(fin, jnp.exp(-0.5 * z * z) * (0.4 / s), 0.0)

        k = c.shape[0]
        mix = [0.0] * 6
        mix_pdf = 0.0
        for i in range(k):
            mix = [o + w[i] * v for o, v in zip(mix, _masses((edges - c[i]) / s))]
            mix_pdf = mix_pdf + w[i] * density(c[i])
        plain = list(_masses(edges / s))
        out = []
        for law, pdf, extra in ((mix, mix_pdf, 2.0 * k * _EPS), (plain, density(0.0), 0.0)):
            mass, err, sf, sfe, cdf, cdfe = law
            cut = jnp.minimum(dx * pdf, 1.0)  # a mass moves by at most the density times the cut's error
            slack = jnp.concatenate([jnp.zeros(1), cut]) + jnp.concatenate([cut, jnp.zeros(1)])
            out.append((mass, err + extra * mass + slack, sf, sfe + extra * sf + cut, cdf, cdfe + extra * cdf + cut))
        return out

    def intervals(self, params, losses):
        """P- and Q-masses (and error bounds) of the N + 1 loss intervals cut by ``losses`` (sorted), and the
        tails at the cuts where the kernels take them (``_mechanisms.Intervals``: P(L > l_j), Q(L < l_j))."""
        if self.relation == REMOVE:  # l increasing in x: (l_{j-1}, l_j] <-> (x_{j-1}, x_j]
            m, n = self._laws(*self._x_of(losses, params), params)
            p, q, above, below = m, n, (m[2], m[3]), (n[4], n[5])  # {L > l_j} = {x > x_j}
        else:
            # add: loss -l(x), decreasing: (l_{j-1}, l_j] <-> [y_j, y_{j-1}), y_j = x(-l_j); the x-intervals
            # cut by the reversed y, in reverse order; {L > l_j} = {x < y_j}, {L < l_j} = {x > y_j}
            y, dy = self._x_of(-losses, params)
            m, n = ([v[::-1] for v in law] for law in self._laws(y[::-1], dy[::-1], params))
            p, q, above, below = n, m, (n[4], n[5]), (m[2], m[3])
        return Intervals(p[0], q[0], p[1], q[1], above, below)


class RevealedMixture:
    """A pair that is, with a public probability w, one of two Poisson-subsampled Gaussian pairs, the choice
    revealed (the output is (b, x)): P*(b, x) = w_b P_b(x), Q*(b, x) = w_b Q_b(x).  Its loss intervals are
    the two pairs' interval masses weighted by w_b (and so are the tails at the cuts).  ``params`` =
    (s0, s1, q, w1): the two noise multipliers (``_mechanisms.GaussianLoss``, one relation), the rate, and the
    weight of the second pair.  Used for the truncated subsampled Gaussian (``_events``)."""

    params_names = ("scale0", "scale1", "q", "w1")

    def __init__(self, relation):
        if relation not in RELATIONS:
            raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")
        self.relation = relation
        self._g = GaussianLoss(relation)

    def __hash__(self):
        return hash(("RevealedMixture", self.relation))

    def __eq__(self, other):
        return type(other) is RevealedMixture and other.relation == self.relation

    def __repr__(self):
        return f"RevealedMixture({self.relation!r})"

    @staticmethod
    def _parts(params):
        s0, s1, q, w1 = params
        return ((s0, q), 1.0 - w1), ((s1, q), w1)

    def loss_range(self, params):
        (p0, _), (p1, _) = self._parts(params)
        a, b = self._g.loss_range(p0), self._g.loss_range(p1)
        return jnp.minimum(a[0], b[0]), jnp.maximum(a[1], b[1])

    def window_cuts(self, params, k):
        (p0, _), (p1, _) = self._parts(params)
        return jnp.sort(jnp.concatenate([self._g.window_cuts(p0, k // 2), self._g.window_cuts(p1, k - k // 2)]))

    def intervals(self, params, losses):
        (p0, w0), (p1, w1) = self._parts(params)
        a, b = self._g.intervals(p0, losses), self._g.intervals(p1, losses)
        mass = [w0 * x + w1 * y for x, y in zip(a[:2], b[:2])]
        err = [w0 * x + w1 * y + 2.0 * _EPS * m for x, y, m in zip(a[2:4], b[2:4], mass)]
        tails = []
        for ta, tb in ((a.above, b.above), (a.below, b.below)):  # GaussianLoss gives both
            v = w0 * ta[0] + w1 * tb[0]
            tails.append((v, w0 * ta[1] + w1 * tb[1] + 2.0 * _EPS * v))
        return Intervals(mass[0], mass[1], err[0], err[1], tails[0], tails[1])
