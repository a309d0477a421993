"""Sec. 5.1 of the self check-in paper: the strong-composition baselines (shuffled check-in, the approach of
Girgis, Data, Diggavi 2021c; distributed check-in with the Gaussian mechanism), built from the approximate-DP
blocks of :mod:`amplify_jax.approx_dp`."""

from __future__ import annotations

import numpy as np
import jax.numpy as jnp

from .._core import validate as V
from .._core.domains import check_params
from ..accounting.approx_dp import (
    advanced_composition_overflows,
    advanced_composition,
    analytic_gaussian_epsilon,
    fmt_closed_form,
    subsampled_epsilon,
)
from .._core.numerics import float64_jit, x64_scope
from ._params import DELTA, EPS0, GAMMA_OPEN, N, SIGMA, STEPS


def _count_bounds(mu, log_d1, log_d2):
    """Integers l1 <= k <= l2 holding except with probability <= d1 + d2 (multiplicative Chernoff bounds).

    P(k <= (1 - D1) mu) <= e^{-D1^2 mu / 2}, P(k >= (1 + D2) mu) <= e^{-D2^2 mu / (2 + D2)}.
    l1 = floor((1 - D1) mu) + 1 (0 when D1 > 1 would be needed: then l1 = 0 and d1 is not spent),
    l2 = ceil((1 + D2) mu) - 1.  Rounded to the safe side by _ROUND (4 ulps): D1, D2 up (their tails only
    shrink), then (1 - D1) mu down and (1 + D2) mu up before floor / ceil, so that rounding never moves l1 up or
    l2 down across an integer (at mu ~ 1e15 one ulp of mu is ~0.1).
    """
    d1 = jnp.sqrt(2.0 * (-log_d1) / mu) * (1.0 + _ROUND)
    l1 = jnp.where(d1 < 1.0, jnp.floor((1.0 - d1) * mu * (1.0 - _ROUND)) + 1.0, 0.0)
    L = -log_d2
    d2 = (L + jnp.sqrt(L * L + 8.0 * L * mu)) / (2.0 * mu) * (1.0 + _ROUND)
    l2 = jnp.ceil((1.0 + d2) * mu * (1.0 + _ROUND)) - 1.0
    return l1, l2


#: Relative rounding margin (4 ulps) of the Chernoff window's float64 steps (:func:`_count_bounds`), the rate
#: bound q = l2 / n (rounded up) and the per-round shuffled eps (rounded up before the composition, whose own margin
#: covers only its own evaluation).
_ROUND = 4.0 * 2.0 ** -52
#: The delta budget is split in log space (ln delta' = ln f1 + ln delta, ln delta_r = ln(1 - f1) + ln delta - ln T,
#: ...): each share's log is within ~4 ulps of |ln delta| + ln T + 5 of the exact one, so a share could exceed its
#: exact part of delta by a relative ~1e-14 (the sum of the parts then a little above delta).  ln delta is
#: lowered by _LOG_SLACK (|ln delta| + ln T + 8) first: every share at or below its exact part, a relative change
#: of at most ~3e-12 of each share (values change by ~1e-13 relative or less).  The same slack keeps the FMT
#: closed form's ln(4 / delta_s) at or above its exact value where delta_s = delta_m / q nears 4 (its
#: cancellation made the value up to ~3e-14 relative below mpmath's there).
_LOG_SLACK = 2.0 ** -48

#: Splits of the delta budget searched by the strong-composition baselines: the fraction that goes to
#: delta' of the composition, and the fraction of the per-round rest that goes to the two Chernoff events.
_SPLIT_F1 = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
_SPLIT_F2 = np.array([0.01, 0.1, 0.3, 0.5])


def _baseline_eps(per_round, n, gamma, steps, log_delta):
    """min over budget splits of the strong composition of a per-round (eps(l1, l2, log_dm), dm + d1 + d2)."""
    f1 = jnp.asarray(np.repeat(_SPLIT_F1, _SPLIT_F2.size))
    f2 = jnp.asarray(np.tile(_SPLIT_F2, _SPLIT_F1.size))
    ex = lambda x: x[..., None]  # noqa: E731
    mu = ex(n * gamma)
    log_delta = log_delta - _LOG_SLACK * (jnp.abs(log_delta) + jnp.log(steps) + 8.0)  # every share rounded down
    log_dp = jnp.log(f1) + ex(log_delta)
    log_round = jnp.log1p(-f1) + ex(log_delta) - ex(jnp.log(steps))
    log_d12 = jnp.log(f2 / 2.0) + log_round
    log_dm = jnp.log1p(-f2) + log_round
    l1, l2 = _count_bounds(mu, log_d12, log_d12)
    q = jnp.minimum(l2 / ex(n) * (1.0 + _ROUND), 1.0)  # the rate bound rounded up
    e_round = per_round(l1, q, log_dm)
    return jnp.min(advanced_composition(e_round, ex(steps), -log_dp), axis=-1)


def _shuffle_round(eps0):
    e0 = eps0[..., None]

    def per_round(l1, q, log_dm):
        # the shuffle's delta is spent before subsampling: q * delta_s = delta_m
        eps_s, _ = fmt_closed_form(e0, l1, jnp.exp(log_dm - jnp.log(q)))
        # rounded up (fmt's and the subsampling's evaluations are each within a few ulps of their exact values);
        # the Gaussian route's analytic eps carries its own 1e-10 margin
        return subsampled_epsilon(jnp.where(l1 >= 1, eps_s, e0), q) * (1.0 + 2.0 * _ROUND)
    return per_round


def _gauss_round(sigma):
    def per_round(l1, q, log_dm):
        mu = 2.0 / (sigma[..., None] * jnp.sqrt(jnp.maximum(l1, 1.0)))
        eps_g = analytic_gaussian_epsilon(mu, log_dm - jnp.log(q))
        return jnp.where(l1 >= 1, subsampled_epsilon(eps_g, q), jnp.inf)
    return per_round


@float64_jit
def _sc_shuffle_kernel(n, gamma, eps0, steps, log_delta):
    return _baseline_eps(_shuffle_round(eps0), n, gamma, steps, log_delta)


@float64_jit
def _sc_gauss_kernel(n, gamma, sigma, steps, log_delta):
    return _baseline_eps(_gauss_round(sigma), n, gamma, steps, log_delta)


def _baseline_args(n, gamma, steps, delta, **extra):
    nn, g, t, d = check_params((N, GAMMA_OPEN, STEPS, DELTA), broadcast=False, n=n, gamma=gamma, steps=steps,
                               delta=delta)
    shape = V.broadcastable(n=nn, gamma=g, steps=t, delta=d, **extra)
    # NumPy float64 arrays: the kernels take them in float64 whatever the global x64 flag (jnp.asarray here,
    # outside x64_scope, rounded n, gamma, steps and log delta to float32 where the flag is off)
    b = lambda x: np.broadcast_to(np.asarray(x, dtype=np.float64), shape)  # noqa: E731
    return b, b(nn), b(g), b(t), b(np.log(d))


def shuffled_checkin_strong_composition_epsilon(*, n, gamma, eps0, steps, delta):
    """Strong-composition baseline for shuffled check-in (the approach of Girgis, Data, Diggavi 2021c).

    Girgis et al. 2021c state this accounting only up to constants; this instantiation is ours and sound:
    per round, k lies in [l1, l2] except with probability d1 + d2 (Chernoff, :func:`_count_bounds`); given
    k >= l1 the shuffle of the k eps0-LDP reports is (eps_s, delta_s)-DP with eps_s the FMT closed form at
    l1 users (footnote 3's fallback eps0 outside its condition, which is checked with ln(4/delta_s), the
    source's, where footnote 3 prints ln(2/delta): docs/errata.md#e-checkin-fmt-condition), the differing client
    is in the round with probability k/n <= l2/n (Balle et al. 2018 Thm 9 subsampling); the T rounds compose by
    Dwork-Rothblum-Vadhan strong composition: eps = sqrt(2 T ln(1/delta')) eps_r + T eps_r (e^eps_r - 1), and
    delta = T (q delta_s + d1 + d2) + delta', T = ``steps``.  The split of ``delta`` is optimised over a small
    grid.  Rounded to the safe side: each share of delta at or below its exact part, the Chernoff window and the
    rate bound widened by 4 ulps, the per-round eps rounded up by 8 ulps (``_LOG_SLACK``, ``_ROUND``).  Inputs where the strong composition of eps0
    itself over T rounds leaves float64 (eps0 ~ 700 and beyond: +inf) are refused.
    """
    (e0,) = check_params((EPS0,), broadcast=False, eps0=eps0)
    b, nn, g, t, ld = _baseline_args(n, gamma, steps, delta, eps0=e0)
    # every round is at most eps0-DP and the largest share of delta' is 0.9 delta: where strong composition of eps0
    # over T rounds leaves float64 (eps0 = 1e300), every split's does
    e64, t64, d64 = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (e0, steps, delta)))
    bad = advanced_composition_overflows(e64, t64, -np.log(_SPLIT_F1.max() * d64))
    if np.any(bad):
        i = tuple(int(j) for j in np.argwhere(bad)[0]) if bad.ndim else ()
        raise ValueError(f"Expected eps0, steps and delta whose strong composition sqrt(2 T ln(1/delta')) eps0 + "
                         f"T eps0 (e^eps0 - 1) is finite in float64, got eps0={e64[i].item()!r}, "
                         f"steps={t64[i].item():g}, delta={d64[i].item()!r}.")
    with x64_scope():
        return _sc_shuffle_kernel(nn, g, b(e0), t, ld)


def distributed_gaussian_strong_composition_epsilon(*, n, gamma, sigma, steps, delta):
    """Strong-composition baseline for distributed check-in with the Gaussian mechanism (Sec. 5.1).

    As described in Sec. 5.1: with probability >= 1 - d1 at least l1 clients check in, so the mean carries
    Gaussian noise of std >= sigma / sqrt(l1) for sensitivity 2 / k <= ... i.e. sensitivity/std <=
    2 / (sigma sqrt(l1)); with probability >= 1 - d2 the rate is <= l2 / n.  The Gaussian mechanism's exact
    (eps, delta) (Balle & Wang 2018) is subsampled (Balle et al. 2018 Thm 9) and composed over T rounds by
    strong composition; delta = T (q delta_g + d1 + d2) + delta' (T = ``steps``), the split optimised over a
    small grid.  Where no split lets the Chernoff bound
    guarantee one participant (n gamma too small for delta / steps: gamma or delta = 1e-300), the route
    certifies nothing: a ValueError naming n, gamma, delta and steps (the registry's
    ``checkin.distributed-gaussian-strong-composition`` answers eps = inf there, status fallback).
    The same Chernoff window with the rounds composed by their privacy-loss distribution instead (exact
    without-replacement Gaussian pair, no strong composition): ``distributed_gaussian_epsilon(...,
    accountant="pld")``.
    """
    s, b, nn, g, t, ld = _dg_sc_args(n, gamma, sigma, steps, delta)
    # the same values in float64 (checked above)
    n64, g64, t64, d64 = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (n, gamma, steps, delta)))
    ok = _one_participant(n64, g64, t64, np.log(d64))
    if not np.all(ok):
        i = tuple(int(j) for j in np.argwhere(~ok)[0]) if ok.ndim else ()
        n_i, g_i, t_i, d_i = (x[i].item() for x in (n64, g64, t64, d64))
        raise ValueError(f"Expected n, gamma, delta and steps for which the Chernoff bound guarantees one participant "
                         f"per round (n gamma > 2 ln(1 / delta_1), delta_1 < delta / steps), got n={n_i:g}, "
                         f"gamma={g_i!r}, delta={d_i!r}, steps={t_i:g}.")
    with x64_scope():
        return _sc_gauss_kernel(nn, g, b(s), t, ld)


def _dg_sc_args(n, gamma, sigma, steps, delta):
    (s,) = check_params((SIGMA,), broadcast=False, sigma=sigma)
    b, nn, g, t, ld = _baseline_args(n, gamma, steps, delta, sigma=s)
    return (s, b, nn, g, t, ld)


def _one_participant(n, gamma, steps, log_delta):
    """Whether some split of :func:`_baseline_eps` has l1 >= 1 (d1 < 1 in :func:`_count_bounds`), per point."""
    f1 = np.repeat(_SPLIT_F1, _SPLIT_F2.size)
    f2 = np.tile(_SPLIT_F2, _SPLIT_F1.size)
    log_delta = log_delta - _LOG_SLACK * (np.abs(log_delta) + np.log(steps) + 8.0)  # as the kernel
    log_d12 = np.log(f2 / 2.0) + np.log1p(-f1) + (log_delta - np.log(steps))[..., None]
    with np.errstate(divide="ignore", over="ignore"):
        d1 = np.sqrt(2.0 * (-log_d12) / (n * gamma)[..., None]) * (1.0 + _ROUND)
    return np.any(d1 < 1.0, axis=-1)


def _distributed_gaussian_sc_unchecked(*, n, gamma, sigma, steps, delta):
    """:func:`distributed_gaussian_strong_composition_epsilon` without the participant check: eps = inf where the
    route certifies nothing (the registry flags it with status fallback)."""
    s, b, nn, g, t, ld = _dg_sc_args(n, gamma, sigma, steps, delta)
    with x64_scope():
        return _sc_gauss_kernel(nn, g, b(s), t, ld)
