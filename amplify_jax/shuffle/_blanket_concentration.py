"""The privacy blanket, part 2: the generic path (any randomizer), the Lemma 2 sum of Ladjel et al. over a
window of M' ~ Bin(n - 1, gamma) with the Hoeffding or the corrected Bennett bound on E[sum L_i]_+ (Ladjel
Lemma 3; docs/errata.md#e-traffic-lemma3-bennett; Hoeffding with a and b as corrected in
docs/errata.md#e-traffic-thm4-a, #e-traffic-thm4-b), its delta kernel and its eps-from-delta kernel.  Private
(see :mod:`amplify_jax.shuffle.blanket`).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..accounting.calibrate import invert_monotone_kernel
from .._core.numerics import float64_jit
from . import _binomial as B
from ._blanket_model import _EPS_CLIP, _EPS_FLOOR, _U, _inversion_result, _log_bennett, _props, _search_hi

# ---------------------------------------------------------------------------------------------------------
# The Lemma 2 sum with Hoeffding / Bennett (vectorised, window axis last)


def _m_window(n, gamma, tail_sd, Wm):
    """Window of M' ~ Bin(n-1, gamma): start, points, log-weights, log of the Chernoff-bounded outside mass."""
    N = n - 1.0
    sd = jnp.sqrt(N * gamma * (1.0 - gamma))
    start = jnp.floor(N * gamma - tail_sd * sd) - 1.0
    start = jnp.clip(start, 0.0, jnp.maximum(N - (Wm - 1), 0.0))
    idx = jnp.arange(Wm, dtype=jnp.float64)
    mp = start[..., None] + idx
    lw = B.log_binom_pmf_window(start, N, gamma, Wm)
    lo_tail = B.log_tail_lower(start - 1.0, N, gamma)
    hi_tail = B.log_tail_upper(start + Wm, N, gamma)
    out_mass = jnp.minimum(jnp.exp(lo_tail) + jnp.exp(hi_tail), 1.0)
    return mp, lw, out_mass


def _log_concentration(method, k, eps, l_max, l_min, c):
    """log of the Hoeffding / Bennett bound on E[sum_{i<=k} L_i]_+ (Ladjel Lemma 3, Bennett corrected).

    Hoeffding: b^2/(4a) exp(-2 k a^2 / b^2) with a = -E[L] = e^eps - 1 (Ladjel Thm 4/5 print a = 1 - e^eps,
    which makes b^2/(4a) negative; docs/errata.md#e-traffic-thm4-a) and b = L_max - L_min, the range of L (for
    the target randomizer (1 - sigma) T (1 + e^eps); Thm 4 prints an extra -2 sigma (1 - e^eps),
    docs/errata.md#e-traffic-thm4-b).  Bennett: (b_+ / ln(1 + beta)) exp(-(k c / b_+^2) phi(beta)),
    beta = a b_+ / c, the form corrected by Balle et al. after publication; Ladjel Lemma 3 prints
    b_+ / (a k ln(1 + beta)) exp(...), their first version's misprint, which is too small
    (docs/errata.md#e-traffic-lemma3-bennett, #e-ref-blanket-bennett).  phi(u) = (1 + u) ln(1 + u) - u is
    :func:`amplify_jax._core.numerics.bennett_phi`, a few ulps relative even where beta ~ 1e-15 (the form
    bd0(1 + beta, 1) used before lost the digits of beta in 1 + beta: the soundness campaign found the
    scrambler's delta 0.45% low at eps = 24.8, sampling 1.1e-9; tests/test_soundness.py::
    test_regressions_bennett_small_beta), and the exponent is rounded up by its relative float64 error.
    """
    a = jnp.expm1(eps)
    if method == "hoeffding":
        b = l_max - l_min
        return 2.0 * jnp.log(b) - jnp.log(4.0 * a) - 2.0 * k * (a / b) ** 2
    return _log_bennett(k, a, jnp.where(l_max > 0, l_max, 1.0), c)


def _window_log_error(lw, start, n, gamma, Wm):
    """A bound on the float64 error of the window's log-pmfs (:func:`amplify_jax.shuffle._binomial.
    log_binom_pmf_window`: the saddle-point form at the first point, then a cumulative sum of log ratios).
    Each step rounds two logs of numbers up to n, the log odds and their sum (<= 2 log(n + 1) + |log odds| + 4
    ulps); each partial sum S_i = lw_i - lw_0 rounds to 1 ulp of |S_i| (large where the window starts far in a
    tail: gamma ~ 1 with a window wider than the support above the mean); the first point is off by
    2 |start - n gamma| ulps (the rounding of n gamma in its two bd0 terms) + 100.  So <= U (Wm (2 log(n + 1)
    + |log odds| + 4 + max_i |S_i|) + 2 |start - n gamma| + 100).  The soundness campaign found the unrounded
    window sum 1e-11 below the theorem's at n = 2e7 (tests/test_soundness.py::test_regressions_blanket_rounded_up)."""
    inner = (gamma > 0) & (gamma < 1)
    gs = jnp.where(inner, gamma, 0.5)
    lodds = jnp.where(inner, jnp.abs(jnp.log(gs) - jnp.log1p(-gs)), 0.0)
    s_abs = jnp.where(jnp.isfinite(lw) & jnp.isfinite(lw[..., :1]), jnp.abs(lw - lw[..., :1]), 0.0)
    per_step = 2.0 * jnp.log1p(n) + lodds + 4.0 + jnp.max(s_abs, axis=-1)
    return _U * (Wm * per_step + 2.0 * jnp.abs(start - n * gamma) + 100.0)


def _delta_concentration(method, kind, eps, n, d, eps0, k, sigma, *, Wm, tail_sd):
    gamma, l_max, l_min, c = _props(kind, eps, eps0, k, sigma)
    # L_max rounded up: its two terms are each within (eps + eps0 + 4) ulps (the exps of rounded arguments)
    # and below |L_max| + |L_min| + 1 (every randomizer), so where L_max is small next to them (eps near the
    # point where the local guarantee makes delta 0) the float64 difference can change sign.
    e0 = jnp.where(jnp.isfinite(eps0), eps0, 0.0)  # inf only for the target randomizer, whose L_max has no eps0
    l_max = l_max + (eps + e0 + 8.0) * _U * (jnp.abs(l_max) + jnp.abs(l_min) + 1.0)
    mp, lw, out_mass = _m_window(n, gamma, tail_sd, Wm)
    K = mp + 1.0 + d[..., None]
    le = _log_concentration(method, K, eps[..., None], l_max[..., None], l_min[..., None], c[..., None])
    main = jnp.sum(jnp.exp(lw + le - jnp.log(K)), axis=-1)
    # Outside the window every term is <= E_(1+d) / (1+d) (decreasing in k) and <= max(L_max, 0).
    k1 = 1.0 + d
    first = jnp.exp(_log_concentration(method, k1, eps, l_max, l_min, c) - jnp.log(k1))
    tail = out_mass * jnp.minimum(first, jnp.maximum(l_max, 0.0))
    # rounded outward by the float64 error of the window's log-pmfs and 1e-12 for exp, the exponents and the sum
    delta = (main + tail) * (jnp.exp(_window_log_error(lw, mp[..., 0], n, gamma, Wm)) + 1e-12)
    delta = jnp.where(l_max <= 0, 0.0, delta)
    delta = jnp.where(jnp.isnan(delta), 1.0, delta)
    return jnp.minimum(delta, 1.0)


# ---------------------------------------------------------------------------------------------------------
# Kernels of the generic path (any randomizer, Hoeffding / Bennett): delta, and eps from delta


@float64_jit(static_argnames=("method", "kind", "Wm", "tail_sd"))
def _conc_kernel(method, kind, eps, n, d, eps0, k, sigma, *, Wm, tail_sd):
    return _delta_concentration(method, kind, jnp.minimum(eps, _EPS_CLIP), n, d, eps0, k, sigma, Wm=Wm,
                                tail_sd=tail_sd)


def _conc_window(r, n, shape, tail_sd):
    """Static window size of the generic path from the largest variance in the batch (bucketed)."""
    gamma_np = {"generic": np.exp(-r.eps0), "laplace": np.exp(-r.eps0 / 2.0), "rr": r.sigma}[r.kind]
    var_m = float(np.max((n - 1.0) * gamma_np * (1.0 - gamma_np) + np.zeros(shape)))
    Wm = _bucket(B.window_size(var_m, tail_sd))
    return int(min(Wm, _bucket(int(np.max(n)) + 2)))


def _bucket(w):
    """Round a window size up to a power of two (sizes up to 8 kept): one compiled shape per octave of the
    window (issue 25; it was a multiple of 2^(j-3), eight shapes per octave, so a slider over n or eps0
    recompiled the blanket's and the clone bound's kernels at almost every move).  A wider window only moves
    binomial mass from the (bounded) tails into the exact sum: the answers stay sound and change by the
    tails' bound at most (measured: eps bit-identical on the blanket's and the clones' test grids, the clone
    pair's delta within 6e-13 relative)."""
    w = max(int(w), 1)
    if w <= 8:
        return w
    return 1 << (w - 1).bit_length()


@float64_jit(static_argnames=("method", "kind", "Wm", "tail_sd"))
def _conc_eps_kernel(method, kind, delta, n, d, eps0, k, sigma, rtol, *, Wm, tail_sd):
    def fn(x, n, d, eps0, k, sigma):
        return _delta_concentration(method, kind, jnp.minimum(x, _EPS_CLIP), n, d, eps0, k, sigma, Wm=Wm,
                                    tail_sd=tail_sd)

    inv = invert_monotone_kernel(fn, delta, (n, d, eps0, k, sigma), _EPS_FLOOR, _search_hi(eps0), above=True,
                                 rtol=rtol, integer=False)
    return _inversion_result(*inv, eps0)
