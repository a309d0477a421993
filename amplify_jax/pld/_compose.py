"""Composition of discrete PLDs through the FFT, with every truncation and rounding error counted in delta.

One composition is a tuple of events (mechanism, its parameters, how many times it runs).  For one point:

1. **Window.**  Each event's PLD is cut on a coarse grid (``WINDOW_GRID`` points over its loss range), each
   interval merged into one atom at its own loss (rounding to the grid would drift by up to T h), and its
   cumulant generating function K_e(lambda) = log E_P[e^{lambda L}] read at ``LAMBDAS``; Chernoff's
   bound on the composed loss S = sum_e T_e L_e, P(S >= u) <= exp(sum_e T_e K_e(lambda) - lambda u)
   (lambda > 0, and lambda < 0 for the lower tail), gives the window [lo, hi] outside which the composed
   mass is at most ``tail`` on either side.  The grid step is h = max(hi - lo, widest event range) / (n - 2):
   every event and the composition share the same n-point grid (n static: one compilation per n), each
   event's ending at the top of its loss range.  The
   window is an estimate; what it leaves out is bounded again on the final masses (step 3).
2. **Discretise** every event on that step (``_discretize``: connect-the-dots, pessimistic, and the
   optimistic rounding down).
3. **Compose** in the Fourier domain: the product of the events' rFFTs raised to their counts, one inverse
   rFFT (Koskela, Jalko, Honkela 2020, Sec. 6; dp_accounting does the same).  The length-n transform is a
   circular convolution: the composed mass outside the window wraps around into it.  Mass from below the
   window lands inside it: it only raises the pessimistic delta (sound) and is subtracted, as its Chernoff
   bound, from the optimistic one.  Mass from above the window lands at its low end, where it no longer
   counts: its Chernoff bound (recomputed on the final masses, at the grid's actual top) is added to the
   pessimistic delta.  The +inf masses compose as 1 - prod_e (1 - inf_e)^{T_e}.
4. **Round-off.**  The FFT's error is ||dz||_2 <= c eps_mach log2(n) ||z||_2 in the worst case (Higham 2002,
   "Accuracy and Stability of Numerical Algorithms", Thm. 24.2) and of order eps_mach sqrt(log2 n) ||z||_2
   in practice (probabilistic rounding analysis, Higham & Mary 2019): per coefficient about
   eps_mach sqrt(log2 n) ||p||_2.  Raising a coefficient z to the power T multiplies its error by
   T |z|^{T-1}.  The l1 norm of the error of the composed masses is at most the l2 norm of the spectrum's
   error (Parseval), estimated from the actual spectra with the practical per-coefficient size times
   ``FFT_C`` (= 8) and the inverse transform's own error added; the estimate is added to the pessimistic
   delta (subtracted from the optimistic).  It is an estimate, not a worst-case bound: the worst case
   (log2 n instead of sqrt(log2 n), l1 instead of l2 per coefficient) would add ~1e-9 at 10^4 steps and
   make every delta below that unreachable, which no measured case comes near (tests/test_pld.py compares
   with the Gaussian's closed form down to delta = 1e-12).

Queries (``delta_at`` / ``epsilon_at``) read the composed masses: delta(eps) = sum_k p_k (1 - e^{eps - l_k})_+
+ inf + errors (pessimistic; the optimistic side has its tail mass on its grid already and adds no inf),
exact for the discrete distribution; eps(delta) is solved exactly between grid points.  The spectra are
raised to their counts as exp(T log z) with an exact 0 replaced first (``_log_power``: it made the result
nan, issue 13); a composition that is still not finite answers the safe values (+inf with status error
above, 0 below), never nan.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._discretize import discretize, merged

__all__ = ["Composed", "compose", "delta_at", "epsilon_at", "WINDOW_GRID", "LAMBDAS", "FFT_C"]

_EPS = float(np.finfo(np.float64).eps)
WINDOW_GRID = 512
LAMBDAS = np.geomspace(1e-3, 1e3, 49)
FFT_C = 8.0


class Composed(tuple):
    """A composed PLD of one point: masses on start + h * arange(n), and what delta must add or subtract.

    Fields: start, h, pess (n,), opt (n,), inf (P-mass at +inf), add (added to the pessimistic delta: the
    upper tail beyond the window and the round-off bound), sub (subtracted from the optimistic delta)."""

    __slots__ = ()
    _fields = ("start", "h", "pess", "opt", "inf", "add", "sub", "eta", "hoeff")

    def __new__(cls, *args):
        return tuple.__new__(cls, args)

    start = property(lambda s: s[0])
    h = property(lambda s: s[1])
    pess = property(lambda s: s[2])
    opt = property(lambda s: s[3])
    inf = property(lambda s: s[4])
    add = property(lambda s: s[5])
    sub = property(lambda s: s[6])
    eta = property(lambda s: s[7])
    hoeff = property(lambda s: s[8])


def _log_mgf(losses, masses, lam):
    """log sum_j masses_j e^{lam l_j} for each lam (lam: (m,)), -inf where every mass is 0."""
    lm = jnp.log(jnp.maximum(masses, 0.0))
    z = lm[None, :] + lam[:, None] * losses[None, :]
    top = jnp.max(z, axis=1)
    top_f = jnp.where(jnp.isfinite(top), top, 0.0)
    return top_f + jnp.log(jnp.sum(jnp.exp(z - top_f[:, None]), axis=1)) + jnp.where(jnp.isfinite(top), 0.0, -jnp.inf)


def _chernoff(k_total, lam, level):
    """log of the bound exp(K(lam) - lam * level), minimised over the lam given (same signs)."""
    return jnp.min(k_total - lam * level)


_TINY = 1e-300  #: what an exact 0 in a spectrum is replaced by before its log (see _log_power)


def _log_power(z, t):
    """(log max(|z|, _TINY), T log z) of a spectrum z to be raised to the count T (the second 0 where T = 0).

    An exact 0 in z (round-off of a narrow PLD's high frequencies) is replaced by _TINY first: its log is
    -inf + 0i, and the complex product T * (-inf + 0i) is -inf + nan i, whose exp is nan, which the inverse
    FFT spread over every mass (issue 13: the optimistic masses all nan at sigma 1.653, 165 264 steps in a
    batch of 8, whose eps then came out +inf and was capped to the upper value).  Replaced, the coefficient
    contributes _TINY^T (0 for T >= 2, 1e-300 for T = 1, far below step 4's round-off estimate); every
    other coefficient is raised exactly as before."""
    lz = jnp.log(jnp.maximum(jnp.abs(z), _TINY))
    zs = jnp.where(z == 0, _TINY, z)
    return lz, jnp.where(t > 0, t * jnp.log(zs), 0.0)


def compose(events, params, counts, n, log_tail):
    """Compose ``events`` (static tuple of mechanisms) with ``params`` (tuple of param tuples) run ``counts``
    times (tuple of scalars) on an n-point grid (static), the window cut at tail mass e^{log_tail}: Composed."""
    lam = jnp.asarray(LAMBDAS)
    ranges = [m.loss_range(p) for m, p in zip(events, params)]
    counts = [jnp.asarray(t, dtype=jnp.float64) for t in counts]
    # 1. window from Chernoff on coarse rounded-up PLDs
    k_pos = 0.0
    k_neg = 0.0
    widest = 0.0
    lo_sup = 0.0
    hi_sup = 0.0
    for m, p, (lmin, lmax), t in zip(events, params, ranges, counts):
        w = lmax - lmin
        widest = jnp.maximum(widest, w)
        losses, mass = merged(m, p, WINDOW_GRID)
        k_pos = k_pos + jnp.where(t > 0, t * _log_mgf(losses, mass, lam), 0.0)
        k_neg = k_neg + jnp.where(t > 0, t * _log_mgf(losses, mass, -lam), 0.0)
        lo_sup = lo_sup + t * lmin
        hi_sup = hi_sup + t * lmax
    hi = jnp.min((k_pos - log_tail) / lam)
    lo = jnp.max((k_neg - log_tail) / -lam)
    hi = jnp.clip(hi, lo_sup, hi_sup)
    lo = jnp.clip(lo, lo_sup, hi)
    lam_hi = lam[jnp.argmin((k_pos - log_tail) / lam)]
    lam_lo = lam[jnp.argmax((k_neg - log_tail) / -lam)]
    h = jnp.maximum(jnp.maximum(hi - lo, widest), 1e-9) / (n - 2)
    # 2. discretise each event on step h, from its own range's low end; 3. compose
    log_spec = [0.0, 0.0]  # sum_e T_e log z_e, pessimistic and optimistic (_log_power)
    log_keep = 0.0  # log prod (1 - inf_e)^{T_e}
    shift = 0.0  # sum_e T_e start_e: the loss of composed index 0
    lam3 = jnp.stack([lam_hi * 0.5, lam_hi, lam_hi * 2.0])
    lam3n = -jnp.stack([lam_lo * 0.5, lam_lo, lam_lo * 2.0])
    kp3 = 0.0
    ko3 = 0.0
    support_top = 0.0  # the highest loss with pessimistic mass, composed
    support_low = 0.0  # the lowest with optimistic mass
    spectra = []
    norms = ([], [])
    for m, p, (_, lmax), t in zip(events, params, ranges, counts):
        # each event's grid ends at its loss range's top, so the composed support's top is a grid point
        lmin = lmax - (n - 1) * h
        d = discretize(m, p, lmax, h, n)
        zp = jnp.fft.rfft(d.pess)
        zo = jnp.fft.rfft(d.opt)
        lzs = []
        for which, z in ((0, zp), (1, zo)):
            lz, lp = _log_power(z, t)
            log_spec[which] = log_spec[which] + lp
            lzs.append(lz)
        log_keep = log_keep + jnp.where(t > 0, t * jnp.log1p(-d.inf), 0.0)
        shift = shift + t * lmin
        losses = lmin + h * jnp.arange(n)
        j = jnp.arange(n)
        support_top = support_top + t * (lmin + h * jnp.max(jnp.where(d.pess > 0, j, 0)))
        support_low = support_low + t * (lmin + h * jnp.min(jnp.where(d.opt > 0, j, n - 1)))
        kp3 = kp3 + jnp.where(t > 0, t * _log_mgf(losses, d.pess, lam3), 0.0)
        ko3 = ko3 + jnp.where(t > 0, t * _log_mgf(losses, d.opt, lam3n), 0.0)
        spectra.append((lzs[0], lzs[1], t))
        norms[0].append(jnp.sqrt(jnp.sum(d.pess * d.pess)))
        norms[1].append(jnp.sqrt(jnp.sum(d.opt * d.opt)))
    spec_p = jnp.exp(log_spec[0])
    spec_o = jnp.exp(log_spec[1])
    circ_p = jnp.fft.irfft(spec_p, n=n)
    circ_o = jnp.fft.irfft(spec_o, n=n)
    # unwrap: composed index k (loss shift + k h) sits at k mod n; the window starts at k_lo
    k_lo = jnp.floor((lo - shift) / h)
    start = shift + k_lo * h
    idx = (k_lo.astype(jnp.int64) + jnp.arange(n)) % n
    pess = circ_p[idx]
    opt = circ_o[idx]
    top = start + (n - 1) * h
    # composed mass at losses >= top + h (pessimistic masses), <= start - h (optimistic): none beyond the
    # composed support, else Chernoff's bound
    log_up = jnp.where(top + 0.5 * h >= support_top, -jnp.inf, _chernoff(kp3, lam3, top + h))
    log_low = jnp.where(start - 0.5 * h <= support_low, -jnp.inf, _chernoff(ko3, lam3n, start - h))
    # 4. round-off of forward FFTs, powers and the inverse FFT (see the module's docstring)
    c = FFT_C * _EPS * np.sqrt(np.log2(n))
    roundoff = []
    for spec, circ, which in ((spec_p, circ_p, 0), (spec_o, circ_o, 1)):
        a = jnp.abs(spec)
        g = 2.0 * _EPS * a
        # log |spec|; where it underflows, from the logs (so that |z_e| = 0 gives T_e |z_e|^{T_e - 1} ... = 0
        # for T_e >= 2, not a / |z_e| = 1e-300 / 1e-300)
        log_a = jnp.where(a > 0, jnp.log(jnp.where(a > 0, a, 1.0)), jnp.real(log_spec[which]))
        for zs, norm in zip(spectra, norms[which]):
            lz, t = zs[which], zs[2]
            g = g + jnp.where(t > 0, c * norm * t * jnp.exp(log_a - lz), 0.0)
        l2 = jnp.sqrt(jnp.sum(g * g) * 2.0)
        roundoff.append(l2 + c * jnp.sqrt(n * jnp.sum(circ * circ)))
    inf = -jnp.expm1(log_keep)
    add = jnp.minimum(jnp.exp(log_up) + roundoff[0], 1.0)
    sub = jnp.minimum(jnp.exp(log_low) + roundoff[1], 1.0)
    # the optimistic rounding's drift: P(sum of T errors > eta) <= e^{log_tail} (Hoeffding)
    t_total = sum(counts)
    eta = h * jnp.sqrt(t_total * -log_tail / 2.0)
    return Composed(start, h, pess, opt, inf, add, sub, eta, jnp.exp(log_tail))


def _suffix(p, h):
    """S0_k = sum_{i > k} p_i and A_k = sum_{i > k} p_i e^{-(i - k) h}, for every k (an associative scan)."""
    n = p.shape[0]
    s0 = jnp.concatenate([jnp.cumsum(p[::-1])[::-1][1:], jnp.zeros(1)])
    alpha = jnp.exp(-h)
    a = jnp.full(n, alpha)
    b = jnp.concatenate([alpha * p[1:], jnp.zeros(1)])

    def op(x, y):  # y applied after x's later part: composition of affine maps v -> a v + b
        return x[0] * y[0], y[0] * x[1] + y[1]

    _, acc = jax.lax.associative_scan(op, (a, b), reverse=True)
    return s0, acc


def _extra(c: Composed, which):
    """What delta adds to the discrete masses' own value: the +inf mass and the upper tail's and round-off's
    bounds (pessimistic); minus the lower tail's and round-off's bounds and Hoeffding's probability
    (optimistic).  The optimistic side adds no +inf mass: each event's mass above its grid (``inf``, which is
    the pessimistic side's upper bound of it) is already in its optimistic masses, lowered to the grid's top
    (``_discretize``), and counting it again at +inf raised the lower value by up to ``inf``."""
    return c.inf + c.add if which == "pess" else -c.sub - c.hoeff


def _broken(c: Composed, p, extra):
    """True where the composition is not finite (a nan or inf in the masses or the error terms): the queries
    answer the trivially safe value there (pessimistic: +inf, status ``error``; optimistic: 0), never nan."""
    return ~(jnp.all(jnp.isfinite(p)) & jnp.isfinite(extra) & jnp.isfinite(c.start) & jnp.isfinite(c.h)
             & jnp.isfinite(c.eta))


def delta_at(c: Composed, eps, which="pess"):
    """delta at each eps (array (m,)) of a composed PLD: the pessimistic (upper) or optimistic (lower) one.

    Optimistic: delta_true(eps) >= delta_opt(eps + eta) - sub - hoeff (``_discretize``: Hoeffding's bound on
    the random rounding; ``compose``: the lower tail's wrap-around and the round-off), clipped at 0.  Where
    the composition is not finite (``_broken``) the pessimistic value is +inf (status ``error``), the
    optimistic one 0."""
    p = c.pess if which == "pess" else c.opt
    extra = _extra(c, which)
    n = p.shape[0]
    losses = c.start + c.h * jnp.arange(n)
    at = eps if which == "pess" else eps + c.eta  # optimistic: delta_true(eps) >= delta_opt(eps + eta) - hoeff
    core = jnp.sum(p[None, :] * -jnp.expm1(jnp.minimum(at[:, None] - losses[None, :], 0.0)), axis=1)
    bad = _broken(c, p, extra)
    if which == "pess":
        return jnp.where(bad, jnp.inf, jnp.minimum(core + extra, 1.0))
    return jnp.where(bad, 0.0, jnp.clip(core + extra, 0.0, 1.0))


def epsilon_at(c: Composed, delta, which="pess"):
    """The smallest eps >= 0 with delta(eps) <= delta (array (m,)), exact for the discrete PLD between grid
    points, rounded toward the safe side.

    Pessimistic (an upper bound of the true eps): +inf where no grid point up to the window's top meets
    delta (the +inf mass and the error terms alone exceed it).  Optimistic (a lower bound): the discrete
    solution minus eta (``delta_at``), at least 0; where no grid point meets delta the true eps is above the
    window's top l_top minus eta (delta_true(l_top - eta) >= delta_opt(l_top) - sub - hoeff > delta), which
    is returned, never +inf (an optimistic +inf is no lower bound; the min with the pessimistic value in
    ``_queries`` then reported the upper value as the lower one).  Where the composition is not finite
    (``_broken``): +inf (pessimistic, status ``error``) and 0 (optimistic, trivially below)."""
    p = c.pess if which == "pess" else c.opt
    extra = _extra(c, which)
    n = p.shape[0]
    losses = c.start + c.h * jnp.arange(n)
    s0, acc = _suffix(p, c.h)
    dk = s0 - acc + extra  # delta at each grid loss
    ok = dk[None, :] <= delta[:, None]  # non-decreasing in k
    k = jnp.argmax(ok, axis=1)  # first feasible grid point
    any_ok = jnp.any(ok, axis=1)
    # between l_{k-1} and l_k: delta(eps) = S0_{k-1} + extra - e^{eps - l_{k-1}} A_{k-1}
    km = jnp.maximum(k - 1, 0)
    first = k == 0
    base = jnp.where(first, losses[0], losses[km])
    s_b = jnp.where(first, jnp.sum(p), s0[km]) + extra
    a_b = jnp.where(first, p[0] + acc[0], acc[km])
    ratio = (s_b - delta) / a_b
    e = base + jnp.log(jnp.maximum(ratio, 1e-300))
    e = jnp.where(ratio > 0, e, -jnp.inf)
    # the solve's rounding, toward the safe side (up for the pessimistic value, down for the optimistic)
    e = e + (1e-12 if which == "pess" else -1e-12) * (1.0 + jnp.abs(e))
    e = jnp.minimum(e, losses[k])  # the grid point k is feasible
    e = jnp.where(first, e, jnp.maximum(e, losses[km]))  # and l_{k-1} is not
    bad = _broken(c, p, extra)
    if which == "pess":
        e = jnp.maximum(e, 0.0)
        return jnp.where(any_ok & ~bad, e, jnp.inf)
    e = jnp.where(any_ok, e, losses[n - 1]) - c.eta
    return jnp.where(bad, 0.0, jnp.maximum(e, 0.0))
