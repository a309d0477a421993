"""Section 3 of Cyffers & Bellet: the ring (Thm 1 and Remark 1: real summation; Thm 2 and Remark 2: histograms)."""

from __future__ import annotations

import warnings

import numpy as np
import jax.numpy as jnp

from .._core import validate as V
from .._core.domains import check_params
from ..accounting.approx_dp import advanced_composition, fmt_closed_form
from .._core.numerics import float64_jit, x64_scope
from ._common import NetworkBound, RingNoise, _b, _f64, _up
from ._composition import _refuse_advanced_overflow
from . import _params as P


@float64_jit
def _ring_sum_kernel(K, eps0, delta0, dp):
    return advanced_composition(eps0, K, -jnp.log(dp)), _up(K * delta0 + dp)


def ring_sum_bound(*, steps, eps0, delta0, delta_prime):
    """Real summation on the ring, Cyffers & Bellet Thm 1 (Algorithm 1, and Remark 1's distributed variant).

    Perturb(.; sigma_loc) is (eps0, delta0)-LDP and noise is added once every n - 1 hops; every window between
    two visits of v contains one full sigma_loc, so each of the K visits (K = ``steps``) costs (eps0, delta0) and
    advanced composition gives (sqrt(2K ln(1/delta')) eps0 + K eps0 (e^eps0 - 1), K delta0 + delta')-network DP.
    Remark 1's distributed noise gives the same guarantee (see :func:`ring_noise`).  Inputs whose value leaves
    float64 (eps0 ~ 700 and beyond: +inf) are refused.
    """
    k, e, d0, dp = check_params((P.STEPS_K, P.EPS0_LOCAL, P.DELTA0, P.DELTA_PRIME), broadcast=False, steps=steps,
                                eps0=eps0, delta0=delta0, delta_prime=delta_prime)
    shape = V.broadcastable(steps=k, eps0=e, delta0=d0, delta_prime=dp)
    _refuse_advanced_overflow("eps0", e, "steps", k, "delta_prime", dp)  # eps0 = 1e300: +inf
    eps, delta = _ring_sum_kernel(*_b(shape, k, e, d0, dp))
    return NetworkBound(eps, delta, jnp.ones(shape, bool))


@float64_jit
def _ring_noise_kernel(n, K, sigma, distributed):
    alg1 = jnp.sqrt(jnp.floor(K * n / (n - 1.0))) * sigma
    per = jnp.where(distributed, sigma / jnp.sqrt(n - 1.0), 0.0)
    dist = sigma * jnp.sqrt(1.0 + (K * n - 1.0) / (n - 1.0))
    return RingNoise(jnp.where(distributed, per, sigma), sigma, jnp.where(distributed, dist, alg1))


def ring_noise(*, n, steps, sigma_loc, distributed=False):
    """Noise of the ring protocols (Cyffers & Bellet Thm 1 utility, Remark 1), over K = ``steps`` rounds of the ring.

    Algorithm 1 (``distributed=False``): sigma_loc once every n - 1 hops, total std
    sqrt(floor(K n / (n - 1))) sigma_loc (local DP needs sqrt(K n) sigma_loc).
    Remark 1 (``distributed=True``): the first user adds sigma_loc, every other contribution
    sigma_loc / sqrt(n - 1) -- corrected from the printed sigma_loc / sqrt(n), which leaves each window of
    n - 1 contributions with only (n - 1)/n sigma_loc^2 of variance (docs/errata.md#e-network-remark1-noise)
    -- total std sigma_loc sqrt(1 + (K n - 1)/(n - 1)).
    """
    nn, k, s = check_params((P.N, P.STEPS_K, P.SIGMA_LOC), broadcast=False, n=n, steps=steps, sigma_loc=sigma_loc)
    shape = V.broadcastable(n=nn, steps=k, sigma_loc=s)
    nb, kb, sb = _b(shape, nn, k, s)
    return _ring_noise_kernel(nb, kb, sb, np.asarray(bool(distributed)))


def ring_histogram_gamma(*, n, L, target_epsilon, delta):
    """The randomized-response parameter of Cyffers & Bellet Thm 2 as printed:
    gamma = L / (exp(12 eps sqrt(ln(1/delta)/n)) + L - 1), eps = ``target_epsilon`` (the per-visit guarantee
    the theorem calibrates gamma for).

    RR_gamma over L values is eps_l-LDP with eps_l = ln(1 + L (1 - gamma)/gamma); the printed gamma gives
    eps_l = 12 eps sqrt(ln(1/delta)/n).  Note (docs/errata.md#e-network-thm2-gamma): Erlingsson et al.'s
    Cor. 9 maps an eps_l-LDP randomizer to 12 eps_l sqrt(ln(1/delta)/n) after shuffling, so a visit costs
    144 eps ln(1/delta)/n: the printed gamma over-randomizes where 144 ln(1/delta) <= n (it is safe there)
    and falls short of eps elsewhere; the privacy actually obtained for a given gamma is
    :func:`ring_histogram_bound`.  The theorem's conditions (eps < 1/2, delta < 1/100, n > 1000) are enforced.

    Fallback (flagged by a ``UserWarning``): where the printed gamma falls short, sqrt(n (n - 1)) <
    144 ln(1/delta) (e.g. 1000 < n < 1990 at delta = 1e-6), the gamma returned is the one whose eps_l =
    eps sqrt((n - 1)/ln(1/delta)) / 12 Cor. 9 maps to eps per visit on the n - 1 shuffled reports (as
    :func:`ring_histogram_bound` counts them): the larger, safe gamma.  Elsewhere it is the printed gamma.
    """
    # Thm 2's conditions are the Params' domains (n > 1000, eps < 1/2, delta < 1/100)
    nn, ll, e, d = check_params((P.ERLINGSSON_N, P.RR_VALUES, P.GAMMA_TARGET, P.ERLINGSSON_DELTA), broadcast=False,
                                n=n, L=L, target_epsilon=target_epsilon, delta=delta)
    with x64_scope():
        log_inv = jnp.log(1.0 / _f64(d))
        printed = 12.0 * _f64(e) * jnp.sqrt(log_inv / _f64(nn))  # eps_l of the printed gamma
        needed = _f64(e) * jnp.sqrt((_f64(nn) - 1.0) / log_inv) / 12.0 * (1.0 - 1e-12)  # eps per visit, rounded down
        gamma = _f64(ll) / (jnp.exp(jnp.minimum(printed, needed)) + _f64(ll) - 1.0)
    short = np.asarray(needed < printed)
    if short.any():
        i = np.unravel_index(int(np.argmax(short)), short.shape) if short.ndim else ()
        n_i, d_i = np.broadcast_to(nn, short.shape)[i], np.broadcast_to(d, short.shape)[i]
        warnings.warn(f"ring_histogram_gamma: the printed gamma of Thm 2 falls short of target_epsilon per visit "
                      f"where sqrt(n (n - 1)) < 144 ln(1/delta) (n={float(n_i):g}, delta={float(d_i):g}): the gamma "
                      "calibrated by Erlingsson et al. Cor. 9 is returned there (fallback; "
                      "docs/errata.md#e-network-thm2-gamma).", UserWarning, stacklevel=3)
    return gamma


@float64_jit
def _ring_hist_kernel(n, K, eps_l, delta, dp, use_fmt):
    m = n - 1.0  # v knows its own report: n - 1 unknown reports are shuffled between two visits
    erl = 12.0 * eps_l * jnp.sqrt(jnp.log(1.0 / delta) / m)
    fmt, fmt_ok = fmt_closed_form(eps_l, m, delta)
    per = _up(jnp.where(use_fmt, fmt, erl))  # the per-visit closed form rounded up (CLOSED_FORM_MARGIN)
    valid = jnp.where(use_fmt, fmt_ok, True)
    return advanced_composition(per, K, -jnp.log(dp)), _up(K * delta + dp), valid


def ring_histogram_bound(*, n, steps, eps0, delta, delta_prime, form="erlingsson"):
    """Histograms on the ring, Cyffers & Bellet Thm 2 (Algorithm 2) and its general form (Remark 2).

    Between two visits of v the token gains a histogram of the other users' RR_gamma reports, i.e. their
    shuffle; ``eps0`` is the LDP level of RR_gamma (ln(1 + L (1 - gamma)/gamma)).  Per visit:

    * ``form="erlingsson"`` (Thm 2, Erlingsson et al. 2019 Cor. 9): 12 eps0 sqrt(ln(1/delta)/(n - 1)),
      refused outside the stated conditions eps0 < 1/2, delta < 1/100, n > 1000;
    * ``form="fmt"`` (Remark 2, Feldman-McMillan-Talwar Thm 3.1): min(eps0, FMT(eps0, n - 1, delta)),
      and eps0 itself where FMT's condition fails (``valid`` False there).

    We shuffle n - 1 reports (v's own is known to v; the paper writes n: docs/errata.md#e-network-ring-reports).
    Advanced composition over K = ``steps`` visits: (sqrt(2K ln(1/delta')) e + K e (e^e - 1), K delta + delta').
    """
    V.one_of("form", form, ("erlingsson", "fmt"))
    if form == "erlingsson":  # Thm 2's conditions are its Params' domains (n > 1000, eps0 < 1/2, delta < 1/100)
        params = (P.ERLINGSSON_N, P.STEPS_K, P.ERLINGSSON_EPS0, P.ERLINGSSON_DELTA, P.DELTA_PRIME)
    else:
        params = (P.N, P.STEPS_K, P.EPS0_LOCAL, P.VISIT_DELTA, P.DELTA_PRIME)
    try:
        nn, k, e, d, dp = check_params(params, broadcast=False, n=n, steps=steps, eps0=eps0, delta=delta,
                                       delta_prime=delta_prime)
    except ValueError as exc:
        if form != "erlingsson":
            raise
        raise ValueError(f"{exc} (Theorem 2, Erlingsson et al.; form='fmt' takes more)") from None
    shape = V.broadcastable(n=nn, steps=k, eps0=e, delta=d, delta_prime=dp)
    eps, delta_t, valid = _ring_hist_kernel(*_b(shape, nn, k, e, d, dp), np.asarray(form == "fmt"))
    return NetworkBound(eps, delta_t, valid)
