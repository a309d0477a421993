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
   pessimistic delta.  The +inf masses compose as 1 - prod_e (1 - inf_e)^{T_e}.  The powers are taken
   only over the band of coefficients that can matter: a composition of many steps is
   wide and smooth, and its spectrum negligible beyond the first few dozen coefficients; the ones left at 0
   are bounded in modulus and that bound is added to step 4's (``_composed_spectrum``).
4. **Round-off.**  One event run once (every count 0 or 1, one of them 1: a single DP-SGD step) needs no
   transform: its discretised masses are the composition, exactly, and no round-off term is added (issue
   26: the term grew with the grid, 0.37890, 0.37958, 0.38026 at 2^10, 2^12, 2^14 points for sigma 0.956,
   q 1.07e-3, delta 1.2e-11; now 0.377680, 0.377642, 0.377640).  Otherwise the FFT's error is ||dz||_2 <= c
   eps_mach log2(n) ||z||_2 in the worst case (Higham 2002, "Accuracy and Stability of Numerical
   Algorithms", Thm. 24.2) and of order eps_mach sqrt(log2 n) ||z||_2 in practice (probabilistic rounding
   analysis, Higham & Mary 2019): per coefficient about eps_mach sqrt(log2 n) ||p||_2, times ``FFT_C``
   (= 8).  Raising a coefficient z to the power T multiplies its error by T |z|^{T-1}; the power's own
   rounding, exp(T log z), is ~2 |T log z| ulps of |z^T| (``_log_power``).  That gives a per-coefficient
   estimate g_k of the composed spectrum's error dZ_k.  A query's delta is a weighted sum of the masses,
   weights w_j = (1 - e^{eps - l_j})_+ in [0, 1], so the spectrum's error moves it by (1 / n) sum_k dZ_k W_k
   (W the weights' DFT), bounded two ways, the smaller taken (``_roundoff_term``):
   (i) the masses' error in l2 norm, sqrt(sum_k g_k^2 / n) (Parseval), times ||w||_2 (Cauchy-Schwarz; issue
   13: the l1 norm used before was up to 30x larger at a small delta);
   (ii) coefficient by coefficient: g_0 ||w||_1 / n + (1 / n) sum_{k >= 1} g_k / |sin(pi k / n)|, since
   summation by parts bounds |W_k| by the weights' circular total variation (<= 2: they rise along the
   window and drop once at its wrap) over 2 |sin(pi k / n)| (``_spectral_weights``).
   (i) grows like the square root of the number of grid points above eps where the composed masses are
   concentrated in a few grid cells (few steps at a small rate), (ii) only like log n: for few steps at a
   small delta the term of (i) grew with the grid faster than connect-the-dots' error shrank (issue 26).
   The inverse transform's own error, c ||x||_2 in l2 norm, is added times ||w||_2.  The estimate still
   grows slowly with the grid (c with sqrt(log2 n), (ii) with log n, the inverse transform's part where
   ||x||_2 does not fall as the grid refines): ~1.3x per 4x grid, which moves eps by at most 3e-5 where the
   term is small against delta, but by up to ~1% where it is ~40% of it (delta ~1e-11, a few hundred steps
   at q ~2e-4; tests/test_pld_discretize.py, docs/pld.md).  The optimistic masses are read clipped at 0
   (``_epsilon_core``), so their negative parts are subtracted from the optimistic delta as well.  It is an
   estimate, not a worst-case bound: the worst case (log2 n instead of sqrt(log2 n), l1 instead of l2 per
   coefficient) would add ~1e-9 at 10^4 steps and make every delta below that unreachable, which no
   measured case comes near (tests/test_pld.py compares with the Gaussian's closed form down to delta =
   1e-18; benchmarks/pld_roundoff_check.py with a long-double composition).

Queries (``delta_at`` / ``epsilon_at``) read the composed masses: delta(eps) = sum_k p_k (1 - e^{eps - l_k})_+
+ inf + errors (pessimistic; the optimistic side has its tail mass on its grid already and adds no inf),
exact for the discrete distribution; eps(delta) is solved exactly between grid points.  The spectra are
raised to their counts as exp(T log z) with an exact 0 replaced first (``_log_power``: it made the result
nan, issue 13); a composition that is still not finite answers the safe values (+inf with status error
above, 0 below), never nan.

The two neighbouring relations of the Poisson-subsampled Gaussian are composed together
(``compose_mirrored``): the add relation's pair is the remove one's with P and Q exchanged and the loss
negated, so on mirrored grids with one step (the wider window's) both discretisations come from one
evaluation of the interval masses.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ._discretize import discretize, discretize_mirrored, merged, merged_mirrored

__all__ = ["Composed", "compose", "compose_mirrored", "delta_at", "epsilon_at", "epsilon_at_sides", "SIDES", "WINDOW_GRID", "LAMBDAS", "FFT_C"]

_EPS = float(np.finfo(np.float64).eps)
WINDOW_GRID = 512
LAMBDAS = np.geomspace(1e-3, 1e3, 49)
FFT_C = 8.0


class Composed(tuple):
    """A composed PLD of one point: masses on start + h * arange(n), and what delta must add or subtract.

    Fields: start, h, pess (n,), opt (n,), inf (P-mass at +inf), add (added to the pessimistic delta: the
    upper tail beyond the window and the dropped coefficients' bound), sub (subtracted from the optimistic
    delta: the lower tail, the dropped coefficients), eta and hoeff (the optimistic rounding's drift and its
    probability), r2 (2, 4): the round-off estimates of the (pessimistic, optimistic) masses, (sp2, dc, sp1,
    inv) each, which a query combines with the norms of its weights (``_roundoff_term``); all 0 for one
    event run once (no transform)."""

    __slots__ = ()
    _fields = ("start", "h", "pess", "opt", "inf", "add", "sub", "eta", "hoeff", "r2")

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
    r2 = property(lambda s: s[9])


def _log_mgf(losses, masses, lam):
    """log sum_j masses_j e^{lam l_j} for each lam (lam: (m,)), -inf where every mass is 0."""
    lm = jnp.log(jnp.maximum(masses, 0.0))
    z = lm[None, :] + lam[:, None] * losses[None, :]
    top = jnp.max(z, axis=1)
    top_f = jnp.where(jnp.isfinite(top), top, 0.0)
    return top_f + jnp.log(jnp.sum(jnp.exp(z - top_f[:, None]), axis=1)) + jnp.where(jnp.isfinite(top), 0.0, -jnp.inf)


#: Block length of the grid-based sums of ``_log_mgf_grid``: each block is read against one reference point,
#: so only per-block values need a transcendental function.
_BLOCK = 128
#: Block length of ``epsilon_at``'s two passes (the blocks' sums, then every point of one block).
_EPS_BLOCK = 64


def _log_mgf_grid(lmin, h, masses, lam):
    """Upper bounds of log sum_j masses_j e^{lam l_j} on the grid l_j = lmin + h j, for each lam (m,), all
    of one sign (-inf where every mass is <= 0): ``_log_mgf`` without a log and an exp per grid point.

    In blocks of ``_BLOCK`` points, each read against its largest mass M_b and its end point L_b (last for
    lam > 0, first for lam < 0): sum_b M_b e^{lam L_b} sum_o (m_o / M_b) e^{lam h (o - o_ref)}, every factor
    of the inner sums in [0, 1], their e^{lam h (o - o_ref)} from one table of _BLOCK values.  Upper bounds:
    the inner sum is raised by its rounding ((_BLOCK + 8 + |lam h| _BLOCK) ulps: the ratios, the table, the
    products and the sum of non-negative terms) and by _BLOCK * 1e-307 (terms that underflowed, each below
    2.3e-308).  It is tight unless a block's inner sum is itself below ~1e-300 (lam h _BLOCK > ~690, a
    grid far coarser than any the window makes)."""
    n = masses.shape[0]
    bs = min(_BLOCK, n)
    nb = n // bs
    m = jnp.maximum(masses, 0.0).reshape(nb, bs)
    top = jnp.max(m, axis=1)
    pos = top > 0.0
    ratio = m / jnp.where(pos, top, 1.0)[:, None]
    up = lam[0] > 0  # all of one sign
    ref = jnp.where(up, bs - 1.0, 0.0)
    off = jnp.arange(bs) - ref
    w = jnp.exp(lam[:, None] * h * off[None, :])  # (m, bs), each <= 1
    inner = jnp.sum(ratio[None, :, :] * w[:, None, :], axis=2)  # (m, nb)
    inner = inner * (1.0 + (bs + 8.0 + jnp.abs(lam[:, None] * h) * bs) * _EPS) + bs * 1e-307
    anchor = lmin + h * (jnp.arange(nb) * bs + ref)
    z = jnp.where(pos[None, :], jnp.log(jnp.where(pos, top, 1.0))[None, :] + lam[:, None] * anchor[None, :]
                  + jnp.log(inner), -jnp.inf)
    zmax = jnp.max(z, axis=1)
    zf = jnp.where(jnp.isfinite(zmax), zmax, 0.0)
    return zf + jnp.log(jnp.sum(jnp.exp(z - zf[:, None]), axis=1)) + jnp.where(jnp.isfinite(zmax), 0.0, -jnp.inf)


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
    other coefficient is raised exactly as before.  (exp(T log z), not binary powering: its rounding is
    ~2 T |log z| ulps, against ~2.3 T ulps for T - 1 multiplications, and |log z| << 1 on the coefficients
    that matter.)"""
    lz = jnp.log(jnp.maximum(jnp.abs(z), _TINY))
    zs = jnp.where(z == 0, _TINY, z)
    return lz, jnp.where(t > 0, t * jnp.log(zs), 0.0)


def compose(events, params, counts, n, log_tail, coarsen=1.0):
    """Compose ``events`` (static tuple of mechanisms) with ``params`` (tuple of param tuples) run ``counts``
    times (tuple of scalars) on an n-point grid (static), the window cut at tail mass e^{log_tail}: Composed.
    ``coarsen`` (a value, >= 1) multiplies the grid step: the same compiled program then answers on a
    coarser grid (the automatic grid's convergence check, ``_results.answer``), whose extra points lie
    beyond the window."""
    ranges = [m.loss_range(p) for m, p in zip(events, params)]
    counts = [jnp.asarray(t, dtype=jnp.float64) for t in counts]
    # 1. window from Chernoff on coarse merged PLDs
    cut = [merged(m, p, WINDOW_GRID) for m, p in zip(events, params)]
    lo, width, lam_hi, lam_lo = _window(cut, ranges, counts, log_tail, n)
    h = width / (n - 2) * coarsen
    # 2. discretise each event on step h, from its own range's low end; 3.-4. compose
    discs = []
    for m, p, (_, lmax) in zip(events, params, ranges):
        # each event's grid ends at its loss range's top, so the composed support's top is a grid point
        discs.append((discretize(m, p, lmax, h, n), lmax - (n - 1) * h))
    return _fourier(discs, counts, h, n, lo, lam_hi, lam_lo, log_tail)


def compose_mirrored(mech, params, count, n, log_tail, coarsen=1.0):
    """(remove, add): ``compose`` of one event ``mech`` (a remove-relation mechanism whose add relation is its
    mirror image: ``_discretize.discretize_mirrored``, the Poisson-subsampled Gaussian) run ``count`` times,
    and of its add relation, on one grid step (the larger of the two windows') and mirrored grids, from one
    evaluation of the interval masses for both (the window's and the grid's; issue 13).  The add relation's
    grid runs from -top (its loss range's bottom) up, not down from its own top: its composed support's top
    is then not a grid point, which costs nothing (the tail beyond the window is bounded from the masses).
    ``coarsen``: as in ``compose``."""
    t = jnp.asarray(count, dtype=jnp.float64)
    lmin, lmax = mech.loss_range(params)
    ranges = ((lmin, lmax), (-lmax, -lmin))  # the add relation's loss is the negated remove one
    cut_r, cut_a = merged_mirrored(mech, params, WINDOW_GRID)
    lo_r, width_r, lam_hi_r, lam_lo_r = _window([cut_r], ranges[:1], [t], log_tail, n)
    lo_a, width_a, lam_hi_a, lam_lo_a = _window([cut_a], ranges[1:], [t], log_tail, n)
    h = _aligned_step(jnp.maximum(width_r, width_a) / (n - 2) * coarsen, lmax - lmin)
    d_r, d_a = discretize_mirrored(mech, params, lmax, h, n)
    low = lmax - (n - 1) * h
    return (_fourier([(d_r, low)], [t], h, n, lo_r, lam_hi_r, lam_lo_r, log_tail),
            _fourier([(d_a, -lmax)], [t], h, n, lo_a, lam_hi_a, lam_lo_a, log_tail))


def _aligned_step(h0, span):
    """A grid step h >= h0 with K h = span (1 + 4 ulps) for an integer K >= 1 (h0 itself where span < h0).

    ``compose_mirrored``'s grids end at the remove relation's top lmax and, mirrored, start at the add
    relation's bottom -lmax; with this step they also hold (to within the 4 ulps, upwards) the other end of
    each relation's loss range, lmin and -lmin, as ``compose``'s own grids do.  The composed support then
    ends on the window's clipped end, and no Chernoff bound is needed there.  Without it (issue 13), at a
    small rate (q = 1e-6: loss range [-1e-6, 0.013], one step 1.3e-6) the add relation's top atom rounded up
    to the next grid point put composed mass up to T h beyond the window, where the Chernoff bound (lambda
    <= 1e3) could only give 0.135: eps +inf with status error.  The step grows by a factor of at most
    1 + 1 / K."""
    k = jnp.floor(span / h0)
    return jnp.where(k >= 1.0, span / jnp.maximum(k, 1.0) * (1.0 + 4.0 * _EPS), h0)


#: ``_window`` reads every _COARSE-th of the LAMBDAS first, then the ones around the best of those.
_COARSE = 4


def _chernoff_best(cut, counts, log_tail, sign):
    """min over lam in LAMBDAS of (sum_e T_e K_e(sign lam) - log_tail) / lam, and its lam: Chernoff's bound
    on the composed tail (sign +1: upper, the level; -1: lower, minus the level).  Read on every _COARSE-th
    lam, then on the 2 (_COARSE - 1) around the best of those (issue 13: 19 of the 49 values, the same
    minimum): the function is quasi-convex in lam (lam f(lam) = K(lam) - log_tail is convex, f's sublevel
    sets {K(lam) - log_tail <= c lam} are intervals), so its minimum over the grid lies within one coarse
    step of the coarse minimum."""
    lam = np.asarray(LAMBDAS)
    m = lam.shape[0]

    def value(l):
        k = 0.0
        for (losses, mass), t in zip(cut, counts):
            k = k + jnp.where(t > 0, t * _log_mgf(losses, mass, sign * l), 0.0)
        return (k - log_tail) / l

    coarse = jnp.asarray(lam[::_COARSE])
    v_c = value(coarse)
    near = jnp.clip(_COARSE * jnp.argmin(v_c) + jnp.arange(-_COARSE + 1, _COARSE), 0, m - 1)
    fine = jnp.asarray(lam)[near]
    v_f = value(fine)
    v = jnp.concatenate([v_c, v_f])
    best = jnp.argmin(v)
    return v[best], jnp.concatenate([coarse, fine])[best]


def _window(cut, ranges, counts, log_tail, n=None):
    """Step 1 of ``compose``: from the events' merged PLDs ``cut`` ((losses, masses) each), loss ranges and
    counts, (lo, width, lam_hi, lam_lo): the window's low end, the width the grid must span (the window's or
    the widest event range, whichever is wider), and the Chernoff parameters of its two ends.

    With the grid size ``n``, a low end within ``_SNAP`` grid steps' rounding drift (h sqrt(T ln(1 / tail) /
    2), Hoeffding, as ``_fourier``'s eta) of the composed support's bottom, and within 5% of the width, is
    moved down to it.  The merged PLD's atoms sit at their intervals' own losses, the discretised ones at
    the grid points around them: where most of one step's mass lies within a step of its loss range's bottom
    (a small rate), the discretisation puts much more mass on the bottom grid point than the merged PLD
    near it, and the composed mass below a window cut a step or two above the bottom (Chernoff on the
    merged PLD) can exceed delta.  That mass wraps around to the window's top, where it raised the upper
    value (sound, not tight): sigma 0.554, q 2.1e-4, 265 steps, delta 4.2e-9 gave eps 10.996 on 2^12 points
    against 2.293 on 2^10 and 2^14 (issue 26: a finer grid must never be looser)."""
    widest = 0.0
    lo_sup = 0.0
    hi_sup = 0.0
    for (lmin, lmax), t in zip(ranges, counts):
        widest = jnp.maximum(widest, lmax - lmin)
        lo_sup = lo_sup + t * lmin
        hi_sup = hi_sup + t * lmax
    hi, lam_hi = _chernoff_best(cut, counts, log_tail, 1.0)
    lo, lam_lo = _chernoff_best(cut, counts, log_tail, -1.0)
    hi = jnp.clip(hi, lo_sup, hi_sup)
    lo = jnp.clip(-lo, lo_sup, hi)
    if n is not None:
        width = jnp.maximum(jnp.maximum(hi - lo, widest), 1e-9)
        drift = width / (n - 2) * jnp.sqrt(sum(counts) * -log_tail / 2.0)
        lo = jnp.where(lo - lo_sup <= jnp.minimum(_SNAP * drift, 0.05 * width), lo_sup, lo)
    return lo, jnp.maximum(jnp.maximum(hi - lo, widest), 1e-9), lam_hi, lam_lo


#: ``_window`` moves the low end to the composed support's bottom within this many rounding drifts of it.
_SNAP = 2.0


def _fourier(discs, counts, h, n, lo, lam_hi, lam_lo, log_tail):
    """Steps 3 and 4 of ``compose``: the discretised events ``discs`` ((Discretized, lmin) each, on the
    n-point grids lmin + h arange(n)) run ``counts`` times, composed through the FFT, the window unwrapped
    from ``lo``, the tails beyond it and the round-off estimated (Chernoff at lam_hi / lam_lo): Composed."""
    log_keep = 0.0  # log prod (1 - inf_e)^{T_e}
    shift = 0.0  # sum_e T_e start_e: the loss of composed index 0
    lam3 = jnp.stack([lam_hi * 0.5, lam_hi, lam_hi * 2.0])
    lam3n = -jnp.stack([lam_lo * 0.5, lam_lo, lam_lo * 2.0])
    kp3 = 0.0
    ko3 = 0.0
    support_top = 0.0  # the highest loss with pessimistic mass, composed
    support_low = 0.0  # the lowest with optimistic mass
    zs = []  # per event: the spectra of its pessimistic and optimistic masses, (2, n // 2 + 1)
    norms = []  # and their ||masses||_2, (2,)
    j = jnp.arange(n)
    direct = 0.0  # the masses of the one event run once, where that is the whole composition
    single = sum(jnp.where(t == 1.0, 1, 0) for t in counts) == 1
    for (d, lmin), t in zip(discs, counts):
        masses = jnp.stack([d.pess, d.opt])
        single = single & ((t == 0.0) | (t == 1.0))
        direct = direct + jnp.where(t == 1.0, masses, 0.0)
        zs.append(jnp.fft.rfft(masses, axis=-1))
        norms.append(jnp.sqrt(jnp.sum(masses * masses, axis=-1)))
        log_keep = log_keep + jnp.where(t > 0, t * jnp.log1p(-d.inf), 0.0)
        shift = shift + t * lmin
        support_top = support_top + t * (lmin + h * jnp.max(jnp.where(d.pess > 0, j, 0)))
        support_low = support_low + t * (lmin + h * jnp.min(jnp.where(d.opt > 0, j, n - 1)))
        kp3 = kp3 + jnp.where(t > 0, t * _log_mgf_grid(lmin, h, d.pess, lam3), 0.0)
        ko3 = ko3 + jnp.where(t > 0, t * _log_mgf_grid(lmin, h, d.opt, lam3n), 0.0)
    c = FFT_C * _EPS * np.sqrt(np.log2(n))
    spec, gs, dropped = _composed_spectrum(zs, counts, norms, c)
    # one event run once (``single``): its own masses are the composition, no transform and no round-off
    circ = jnp.where(single, direct, jnp.fft.irfft(spec, n=n, axis=-1))
    circ_p, circ_o = circ[0], circ[1]
    # unwrap: composed index k (loss shift + k h) sits at k mod n; the window starts at k_lo
    k_lo = jnp.floor((lo - shift) / h)
    start = shift + k_lo * h
    pess, opt = (jnp.roll(x, -(k_lo.astype(jnp.int64) % n)) for x in (circ_p, circ_o))  # x[(k_lo + i) mod n]
    top = start + (n - 1) * h
    # composed mass at losses >= top + h (pessimistic masses), <= start - h (optimistic): none beyond the
    # composed support, else Chernoff's bound
    log_up = jnp.where(top + 0.5 * h >= support_top, -jnp.inf, _chernoff(kp3, lam3, top + h))
    log_low = jnp.where(start - 0.5 * h <= support_low, -jnp.inf, _chernoff(ko3, lam3n, start - h))
    # 4. round-off of forward FFTs, powers and the inverse FFT (see the module's docstring), per side:
    # (a) the spectrum's, from its per-coefficient estimates g_k, two ways a query takes the smaller of:
    #     sp2 = ||dx||_2 = sqrt(2 g2 / n) (Parseval), times the weights' ||w||_2 (Cauchy-Schwarz), and
    #     dc ||w||_1 / n + sp1, sp1 = (1 / n) sum_{k >= 1} g_k 2 / sin(pi k / n) (``_spectral_weights``);
    # (b) the inverse transform's own, inv = c ||x||_2, times ||w||_2.
    # The coefficients left at 0 keep their l1 bound (``_composed_spectrum``: <= 1e-30).
    g2, g0, g1 = gs[:, 0], gs[:, 1], gs[:, 2]
    r = jnp.stack([jnp.sqrt(g2 * 2.0 / n), g0, g1 / n, c * jnp.sqrt(jnp.sum(circ * circ, axis=-1))], axis=1)
    r = jnp.where(single, 0.0, r * (1.0 + 16.0 * _EPS))
    dropped = jnp.where(single, 0.0, dropped)
    # the optimistic masses' negative parts (round-off), which the queries read as 0 (``_epsilon_core``)
    neg = jnp.sum(jnp.maximum(-opt, 0.0)) * (1.0 + n * _EPS)
    inf = -jnp.expm1(log_keep)
    add = jnp.minimum(jnp.exp(log_up) + dropped[0], 1.0)
    sub = jnp.minimum(jnp.exp(log_low) + dropped[1] + neg, 1.0)
    # the optimistic rounding's drift: P(sum of T errors > eta) <= e^{log_tail} (Hoeffding)
    eta = h * jnp.sqrt(sum(counts) * -log_tail / 2.0)
    return Composed(start, h, pess, opt, inf, add, sub, eta, jnp.exp(log_tail), r)


@functools.lru_cache(maxsize=None)
def _spectral_weights(n):
    """(v, v_tail) for an n-point grid (NumPy, (n / 2 + 1,) each): v_k bounds what a spectral error dZ_k of
    size 1 at coefficient k (1 <= k <= n / 2; v_0 = 0, the DC coefficient is read apart) moves a query's delta
    by, times n: 2 / sin(pi k / n) (the coefficient and its conjugate n - k), 1 at k = n / 2; v_tail[k] =
    sum_{k <= k' < n / 2} v_k' (the coefficients ``_composed_spectrum`` may leave at 0).

    Why: the inverse DFT of an error dZ moves sum_j w_j x_j by (1 / n) sum_k dZ_k W_k, W_k = sum_j w_j
    e^{2 pi i j k / n}; summation by parts, (1 - e^{2 pi i k / n}) W_k = sum_j (w_j - w_{j-1}) e^{2 pi i j k
    / n} (indices mod n), bounds |W_k| by the weights' circular total variation over 2 |sin(pi k / n)| (the
    discrete form of the 1 / k decay of the Fourier coefficients of a function of bounded variation, Zygmund,
    "Trigonometric Series", Ch. II.4).  A query's weights (1 - e^{eps - l_i})_+ rise from 0 to below 1 along
    the window and drop back once at the wrap: total variation <= 2, so |W_k| <= 1 / sin(pi k / n); |W_0| =
    ||w||_1.  Rounded up by 16 ulps."""
    half = n // 2
    k = np.arange(half + 1, dtype=np.float64)
    with np.errstate(divide="ignore"):
        v = np.where(k == 0, 0.0, 2.0 / np.sin(np.pi * k / n))
    v[half] = 1.0
    v = v * (1.0 + 16.0 * _EPS)
    tail = np.concatenate([np.cumsum(v[:half][::-1])[::-1], [0.0]]) * (1.0 + n * _EPS)
    return v, tail


#: Spectral coefficients are raised to their counts in blocks of this many (``_composed_spectrum``).
#: A block's sums of its round-off estimates other than the first one's: the DC estimate (third) dropped.
_NOT_DC = np.array([1.0, 1.0, 0.0])
_SPEC_BLOCK = 256
#: The blocks from the first one on which every composed coefficient's modulus is certainly so small that
#: 2 x their number x that bound is below this are left at 0 (the bound is added to the round-off).
_DROP = 1e-30


def _composed_spectrum(zs, counts, norms, c):
    """prod_e z_e^{T_e} of the events' spectra zs ((2, m) each, m = n // 2 + 1), its round-off estimates g_k
    summed over the coefficients (2, 3): (sum_k g_k^2 over k < n / 2 and Nyquist's, g_0 the DC
    coefficient's, sum_{k >= 1} g_k v_k with ``_spectral_weights``' v), and the l1 bound of the coefficients
    left at 0 (2,).

    Band limit (issue 13): a composition of many steps is a wide, smooth distribution, whose spectrum is
    negligible beyond its first few dozen coefficients (at 10^4 steps, |z_k|^T < 1e-30 from k ~ 40 of 8193).
    With r_e(b) = max_{k >= b's first} |z_e,k|, the composed coefficients from block b on are at most
    R(b) = prod_e r_e(b)^{T_e} in modulus; from the first block where 2 (number left) R(b) <= _DROP (both
    sides), they are left at 0.  The inverse transform then moves each mass by at most (2 / n) sum of the
    dropped moduli, so the masses' l1 norm by at most 2 (number left) R(b), which is returned and added to
    the round-off bound.  The blocks before it are raised (``_log_power``) in a loop over the blocks, so a
    short band costs a block or two, not the whole spectrum.

    Round-off estimate per coefficient (``compose``'s step 4): the power's own rounding, 2 (1 + |sum_e T_e
    log z_e|) ulps of the composed modulus, and T_e |z_e|^(T_e - 1) prod_(e' != e) |z_e'|^(T_e') times each
    input's FFT error c ||masses_e||_2; over the dropped coefficients each term is bounded through R(b)
    (with r_e(b)^(T_e - 1) for the event's own factor)."""
    m = zs[0].shape[-1]
    half = m - 1  # coefficients 0 .. n / 2 - 1 in blocks; the last one (Nyquist's) on its own, always
    bs = min(_SPEC_BLOCK, half)
    nb = half // bs
    ts = [jnp.asarray(t, dtype=jnp.float64) for t in counts]
    # bounds over the blocks from b on (from |z|^2, floored at 1e-300: |z| >= 1e-150 is assumed, an upper bound)
    log_r = []
    log_bound = 0.0
    for z, t in zip(zs, ts):
        a2 = jnp.real(z[:, :half]) ** 2 + jnp.imag(z[:, :half]) ** 2
        top = jnp.max(a2.reshape(2, nb, bs), axis=2)
        lr = 0.5 * jnp.log(jnp.maximum(jax.lax.cummax(top, axis=1, reverse=True), 1e-300))  # (2, nb)
        log_r.append(lr)
        log_bound = log_bound + jnp.where(t > 0, t * lr, 0.0)
    left = (half - bs * jnp.arange(nb)).astype(jnp.float64)
    drop_ok = jnp.all(jnp.log(2.0 * left) + log_bound <= np.log(_DROP), axis=0)  # (nb,)
    kb = jnp.where(jnp.any(drop_ok), jnp.argmax(drop_ok), nb)  # blocks [0, kb) are computed

    def values(zb, vb):
        """The composed coefficients of one block (the events' (2, k) each), and their round-off estimates g
        summed two ways: squared, and weighted by ``vb`` (the coefficients' ``_spectral_weights``)."""
        lzs = []
        log_spec = 0.0
        for z, t in zip(zb, ts):
            lz, lp = _log_power(z, t)
            lzs.append(lz)
            log_spec = log_spec + lp
        prod = jnp.exp(log_spec)
        la = jnp.real(log_spec)  # log |prod|, from the logs (|z_e| = 0 enters as _TINY)
        g = 2.0 * _EPS * (1.0 + jnp.abs(log_spec)) * jnp.abs(prod)
        for lz, norm, t in zip(lzs, norms, ts):
            # an input error dz of z_e moves the product by T_e |z_e|^(T_e - 1) prod_(e' != e) |z_e'|^T_e' dz
            g = g + jnp.where(t > 0, c * norm[:, None] * t * jnp.exp(la - lz), 0.0)
        return prod, jnp.stack([jnp.sum(g * g, axis=1), jnp.sum(g * vb, axis=1), g[:, 0]], axis=1)

    def more(state):
        return state[0] < kb

    def block(state):
        b, spec, gs = state
        prod, gg = values([jax.lax.dynamic_slice_in_dim(z, b * bs, bs, axis=1) for z in zs],
                          jax.lax.dynamic_slice_in_dim(v, b * bs, bs))
        return b + 1, jax.lax.dynamic_update_slice_in_dim(spec, prod, b * bs, axis=1), gs + gg * _NOT_DC

    # the first block and Nyquist's coefficient always (a long composition needs no other), the next blocks
    # while they matter; the DC coefficient's estimate (g[:, 0] of the first block) is kept apart
    n = 2 * half
    v, v_tail = _spectral_weights(n)
    first, gs = values([z[:, :bs] for z in zs], v[:bs])
    nyquist, gsn = values([z[:, half:] for z in zs], v[half:])
    spec = jnp.concatenate([first, jnp.zeros((2, half - bs), dtype=first.dtype)], axis=1)
    _, spec, gs = jax.lax.while_loop(more, block, (jnp.asarray(1, dtype=kb.dtype), spec, gs + gsn * _NOT_DC))
    g2, g1, g0 = gs[:, 0], gs[:, 1], gs[:, 2]
    spec = jnp.concatenate([spec, nyquist], axis=1)
    # the bound over the dropped coefficients (blocks kb on): own rounding + sum_e c ||.|| T_e R / r_e
    kbi = jnp.minimum(kb, nb - 1)
    lb = log_bound[:, kbi]
    n_left = jnp.where(kb < nb, left[kbi], 0.0)
    big = sum(t * (jnp.abs(lr[:, kbi]) + np.pi) for lr, t in zip(log_r, ts))  # >= |sum_e T_e log z_e|
    gb = 2.0 * _EPS * (1.0 + big) * jnp.exp(lb)
    for lr, norm, t in zip(log_r, norms, ts):
        gb = gb + jnp.where(t > 0, c * norm * t * jnp.exp(lb - lr[:, kbi]), 0.0)
    g2 = g2 + jnp.where(n_left > 0, n_left * gb * gb, 0.0)
    g1 = g1 + jnp.where(n_left > 0, gb * jnp.asarray(v_tail)[jnp.minimum(kb * bs, half)], 0.0)
    dropped = jnp.where(n_left > 0, 2.0 * n_left * jnp.exp(lb), 0.0)
    return spec, jnp.stack([g2, g0, g1], axis=1), dropped


def _suffix_inclusive(x, alpha):
    """y_k = sum_{i >= k} x_i alpha^{i - k} for every k (an associative scan of the maps v -> alpha v + x_k)."""
    a = jnp.full(x.shape[0], alpha)

    def op(u, v):  # v applied after u's later part: composition of affine maps v -> a v + b
        return u[0] * v[0], v[0] * u[1] + v[1]

    _, acc = jax.lax.associative_scan(op, (a, x), reverse=True)
    return acc


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
             & jnp.isfinite(c.eta) & jnp.all(jnp.isfinite(c.r2)))


def _roundoff_weight(c: Composed, which, roundoff=True):
    """(sign, r): the round-off estimates ``r`` (4,) of one side (``_fourier``'s step 4: sp2, dc, sp1, inv)
    that a query combines with its weights' norms (``_roundoff_term``), and the sign the term enters delta
    with (+ pessimistic, - optimistic).  ``roundoff`` False: r = 0, the value without the round-off term (not
    a bound: the automatic grid's error estimate separates the grid's part of the error from the
    round-off's, ``_results.auto_check``)."""
    sign, r = (1.0, c.r2[0]) if which == "pess" else (-1.0, c.r2[1])
    return sign, (r if roundoff else 0.0 * r)


def _roundoff_term(r, l2, l1, n):
    """The round-off term of a query whose weights have norms ||w||_2 = l2 and ||w||_1 = l1, from a side's
    estimates r = (sp2, dc, sp1, inv): the spectrum's part, the smaller of its two bounds (Cauchy-Schwarz in
    the masses, sp2 l2, or coefficient by coefficient, dc l1 / n + sp1), plus the inverse transform's
    inv l2; rounded up by (n + 8) ulps."""
    spec = jnp.minimum(r[0] * l2, r[1] * l1 / n + r[2])
    return (spec + r[3] * l2) * (1.0 + (n + 8.0) * _EPS)


def _weights_norm_table(h, n):
    """(W2, W1), each (n,): W2_k = sqrt(sum_{m=1}^{n-1-k} (1 - e^{-m h})^2) and W1_k = sum_{m=1}^{n-1-k}
    (1 - e^{-m h}), k = 0 .. n - 1: the l2 and l1 norms of a query's weights (1 - e^{eps - l_i})_+ over the
    grid points above eps = l_k (non-increasing in k; 0 at k = n - 1), from cumulative sums of non-negative
    terms (no cancellation), each term rounded up by 4 ulps and the sums by n ulps."""
    m = jnp.arange(n, dtype=jnp.float64)
    t1 = -jnp.expm1(-m * h) * (1.0 + 4.0 * _EPS)  # t_0 = 0
    cum2 = jnp.cumsum(t1 * t1) * (1.0 + n * _EPS)  # cum[M] = sum_{m <= M} t_m
    cum1 = jnp.cumsum(t1) * (1.0 + n * _EPS)
    return jnp.sqrt(cum2[::-1]), cum1[::-1]  # k -> M = n - 1 - k


def delta_at(c: Composed, eps, which="pess", roundoff=True):
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
    w = -jnp.expm1(jnp.minimum(at[:, None] - losses[None, :], 0.0))
    core = jnp.sum(p[None, :] * w, axis=1)
    sign, r = _roundoff_weight(c, which, roundoff)
    l2 = jnp.sqrt(jnp.sum(w * w, axis=1)) * (1.0 + n * _EPS)
    l1 = jnp.sum(w, axis=1) * (1.0 + n * _EPS)
    extra = extra + sign * _roundoff_term(r, l2, l1, n)
    bad = _broken(c, p, extra)
    if which == "pess":
        return jnp.where(bad, jnp.inf, jnp.minimum(core + extra, 1.0))
    return jnp.where(bad, 0.0, jnp.clip(core + extra, 0.0, 1.0))


def epsilon_at(c: Composed, delta, which="pess", roundoff=True):
    """The smallest eps >= 0 with delta(eps) <= delta (array (m,)), exact for the discrete PLD between grid
    points, rounded toward the safe side.

    Pessimistic (an upper bound of the true eps): +inf where no grid point up to the window's top meets
    delta (the +inf mass and the error terms alone exceed it).  Optimistic (a lower bound): the discrete
    solution minus eta (``delta_at``), at least 0; where no grid point meets delta the true eps is above the
    window's top l_top minus eta (delta_true(l_top - eta) >= delta_opt(l_top) - sub - hoeff > delta), which
    is returned, never +inf (an optimistic +inf is no lower bound; the min with the pessimistic value in
    ``_queries`` then reported the upper value as the lower one).  Where the composition is not finite
    (``_broken``): +inf (pessimistic, status ``error``) and 0 (optimistic, trivially below).

    How: delta at grid point k is d_k = S0_k - A_k + extra_k, S0_k = sum_{i > k} p_i and A_k = sum_{i > k}
    p_i e^{-(i - k) h}, extra_k the error terms with the round-off weighted by W_k
    (``_weights_norm_table``) on the pessimistic side, all non-increasing in k; the optimistic side subtracts
    the round-off at its largest weight, the same at every k.  It is read at the end of every block of ``_EPS_BLOCK`` points
    (block sums and one scan over the blocks), then at every point of the one block where it first meets
    delta (issue 13: a scan over every point cost more than the rest of the query).  The masses are read
    clipped at 0 (the inverse FFT leaves some at -1e-18): each moves toward the exact composed mass, which
    is >= 0, so the round-off bound of ``compose`` still covers them, and d_k is monotone."""
    pess = which == "pess"
    sign, r = _roundoff_weight(c, which, roundoff)
    return _epsilon_core(c, c.pess if pess else c.opt, _extra(c, which), r, sign, pess, delta)


#: The three values a query answers (``sides``): the pessimistic one, the optimistic one, and the
#: pessimistic one without the round-off term (the automatic grid's error estimate).
SIDES = ("pess", "opt", "bare")


def epsilon_at_sides(cs, delta):
    """``epsilon_at`` of every Composed in ``cs`` (the relations of one point, all of one grid size) at
    each delta (m,), for the three ``SIDES``: an array (len(cs), 3, m).  One copy of the query in the
    compiled program, vmapped over relations and sides (issue 25: six copies, one per relation and side,
    were ~40% of the DP-SGD kernel's compilation); each element computes what ``epsilon_at`` computes."""
    stacked = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *[tuple(c) for c in cs])
    cb = Composed(*stacked)

    def per_relation(*c):
        c = Composed(*c)
        p = jnp.stack([c.pess, c.opt, c.pess])
        extra = jnp.stack([_extra(c, "pess"), _extra(c, "opt"), _extra(c, "pess")])
        r = jnp.stack([c.r2[0], c.r2[1], 0.0 * c.r2[0]])
        sign = jnp.array([1.0, -1.0, 1.0])
        pess = jnp.array([True, False, True])
        return jax.vmap(lambda p_, e_, r_, s_, w_: _epsilon_core(c, p_, e_, r_, s_, w_, delta))(p, extra, r, sign,
                                                                                                pess)

    return jax.vmap(per_relation)(*cb)


def _epsilon_core(c: Composed, p, fixed, r, sign, pess, delta):
    """``epsilon_at``'s computation from data: masses p (the side's), its fixed error terms ``fixed``
    (``_extra``), its round-off estimates r (4,) (0 without them) with the sign they enter with (+1
    pessimistic, -1 optimistic) and ``pess`` (a boolean: which side's rules)."""
    n = p.shape[0]
    h = c.h

    # the error terms at each grid point k: the fixed ones and the round-off term of the weights at eps = l_k
    # (``_roundoff_term`` of the tables W2_k, W1_k; at k = -1, l_0 - h, the weights are those of k = 0 and
    # one more point of weight < 1, so W2_0 + 1 and W1_0 + 1 bound them); at k = n they are the fixed ones.
    # Every k's own term on the pessimistic side, where they keep d_k non-increasing; the optimistic side
    # subtracts the largest, k = -1's, at every k: subtracting a term that shrinks with k would make d_k
    # non-monotone, and the blocked search below could then skip a first crossing (a lower value too high)
    w2, w1 = _weights_norm_table(h, n)
    w2 = jnp.concatenate([w2[:1] + 1.0, w2, jnp.zeros(1)])  # index k + 1, k = -1 .. n - 1 (and n)
    w1 = jnp.concatenate([w1[:1] + 1.0, w1, jnp.zeros(1)])
    term = sign * _roundoff_term(r, w2, w1, n)  # each part non-increasing in k, so their min and sum too
    ext = fixed + jnp.where(pess, term, term[0])
    extra = fixed + term[0]  # the largest (in magnitude), for _broken
    bs = min(_EPS_BLOCK, n)
    nb = n // bs
    blocks = jnp.maximum(p, 0.0).reshape(nb, bs)
    decay = jnp.exp(-h * jnp.arange(bs + 1))  # e^{-m h}, m = 0 .. bs
    # S0 and A at the point before each block (k = b bs - 1, b = 0 .. nb; 0 at b = nb, k = n - 1)
    s0b = jnp.concatenate([jnp.cumsum(jnp.sum(blocks, axis=1)[::-1])[::-1], jnp.zeros(1)])
    ab = jnp.concatenate([_suffix_inclusive(blocks @ decay[1:], decay[bs]), jnp.zeros(1)])
    db = s0b - ab + ext[jnp.arange(nb + 1) * bs]  # at k = b bs - 1
    # within a block: S0 and A at k = j bs - 1 + r, r = 0 .. bs, from the block's masses and the next block's
    r = jnp.arange(bs + 1)[:, None]
    o = jnp.arange(bs)[None, :]
    later = o >= r
    m_sum = later.astype(p.dtype)  # (bs + 1, bs)
    m_dec = jnp.where(later, jnp.exp(-h * jnp.maximum(o - r + 1, 0)), 0.0)  # e^{-(o - r + 1) h} for o >= r

    def one(dl):
        ok_b = db[1:] <= dl  # at the blocks' last points, k = (b + 1) bs - 1
        any_ok = jnp.any(ok_b)
        jb = jnp.argmax(ok_b)  # the first feasible point lies in block jb
        blk = blocks[jb]
        s0 = s0b[jb + 1] + m_sum @ blk
        a = decay[bs - r[:, 0]] * ab[jb + 1] + m_dec @ blk
        ek = jax.lax.dynamic_slice_in_dim(ext, jb * bs, bs + 1)  # the error terms at k = jb bs - 1 + i
        dk = s0 - a + ek  # dk[i] is delta at k = jb bs - 1 + i
        ok = dk[1:] <= dl
        i = jnp.where(jnp.any(ok), jnp.argmax(ok), bs - 1)  # (the block's end meets delta: the pass above)
        k = jb * bs + i  # the first feasible grid point; k - 1 is local index i
        first = k == 0
        lk = c.start + h * k
        base = c.start + h * (k - 1)  # l_{k-1} (l_{-1} = l_0 - h: the same formula below l_0)
        # between l_{k-1} and l_k: delta(eps) = S0 + extra(eps) - e^{eps - l} A, extra(eps) read at l_{k-1}:
        # the round-off's weights only shrink as eps grows, so the segment is bounded above (pessimistic) and
        # below (optimistic, where it is subtracted) on the safe side
        ratio = (s0[i] + ek[i] - dl) / a[i]
        e = base + jnp.log(jnp.maximum(ratio, 1e-300))
        e = jnp.where(ratio > 0, e, -jnp.inf)
        # the solve's rounding, toward the safe side (up for the pessimistic value, down for the optimistic)
        e = e + jnp.where(pess, 1e-12, -1e-12) * (1.0 + jnp.abs(e))
        e = jnp.minimum(e, lk)  # the grid point k is feasible
        e = jnp.where(first, e, jnp.maximum(e, base))  # and l_{k-1} is not
        return e, any_ok

    e, any_ok = jax.vmap(one)(delta)
    bad = _broken(c, p, extra)
    upper = jnp.where(any_ok & ~bad, jnp.maximum(e, 0.0), jnp.inf)
    lower = jnp.where(bad, 0.0, jnp.maximum(jnp.where(any_ok, e, c.start + h * (n - 1)) - c.eta, 0.0))
    return jnp.where(pess, upper, lower)
