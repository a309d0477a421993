"""Sec. 4.1 of the self check-in paper: generic (eps0, delta0)-LDP randomizers by the "subsampled shuffling
conversion" (FMT shuffling, subsampling, DP -> RDP, then Eq. 5 over k)."""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
import jax
import jax.numpy as jnp

from .._core import validate as V
from .._core.domains import check_params
from ._params import DELTA0, EPS0, GAMMA, N, SHUFFLE_DELTA
from ..accounting.approx_dp import fmt_closed_form, subsampled_epsilon
from .._core.numerics import CLOSED_FORM_MARGIN, float64_jit, log1p
from ..accounting.rdp import randomized_response_log_excess
from ._weighted import DEFAULT_TAIL_TOL, _binomial_log_excess, _finish_rdp, _map_batch, _sum_plan


class ApproxCheckinRDP(NamedTuple):
    """A delta-approximate RDP curve of one round: with probability >= 1 - delta the round is (alpha, rdp)-RDP.

    ``fallback`` is True where the shuffling theorem does not apply at k = round(n gamma) (footnote 3: the
    bound then counts no amplification by shuffling, only by check-in).
    """

    rdp: jax.Array
    delta: jax.Array
    fallback: jax.Array


def _conversion_log_excess(k_lo, k_hi, n, eps0, delta0, shuffle_delta, alpha):
    """Per-k excess of the subsampled shuffle round, bounded over [k_lo, k_hi] (jnp).

    Shuffle of k reports (FMT at k_lo users: the FMT bound and its validity are monotone in k), subsampled
    at rate k_hi / n (Balle et al. 2018 Thm 9), then the RDP of an (eps, .)-DP pair (randomized response).
    """
    e0 = eps0[..., None]
    eps_s, ok = fmt_closed_form(e0, k_lo, shuffle_delta[..., None])
    use = ok & (delta0[..., None] <= 0.0)
    eps_k = jnp.where(use, eps_s, e0)
    eps_sub = subsampled_epsilon(eps_k, jnp.minimum(k_hi / n[..., None], 1.0))
    return randomized_response_log_excess(alpha, eps_sub[..., None])  # k = 2: any eps-DP pair


#: Factor (1 + 8 ulps) rounding the round's -ln(1 - delta) / (alpha - 1) term up: it is added after the sum's own
#: margin (``_finish_rdp``), so its evaluation (within ~3 ulps by the core's ``log1p``; XLA's CPU log1p is up to
#: ~120 ulps low in magnitude on (-1/2, -0.3)) and the sum's are covered here.
_LOG1M_MARGIN = CLOSED_FORM_MARGIN


@float64_jit(static_argnames=("width",))
def _conversion_kernel(n, gamma, eps0, delta0, shuffle_delta, alpha, width):
    def one(x):
        n, gamma, eps0, delta0, shuffle_delta = x
        fn = functools.partial(_conversion_log_excess, n=n, eps0=eps0, delta0=delta0, shuffle_delta=shuffle_delta,
                               alpha=alpha)
        return _binomial_log_excess(fn, n, gamma, width)

    lex = _map_batch(one, (n, gamma, eps0, delta0, shuffle_delta))
    # delta of the round: sum_k Bin(k) (k/n) delta_k <= gamma max(delta_s, delta0); the decomposition of each
    # conditional pair reweights the k-marginal by at most 1/(1 - delta), hence the extra log term.
    dbar = gamma * jnp.where(delta0 > 0, delta0, shuffle_delta)
    rdp = _finish_rdp(lex, alpha) - log1p(-dbar)[..., None] / (alpha - 1.0) * _LOG1M_MARGIN
    kc = jnp.maximum(jnp.round(n * gamma), 1.0)
    _, ok = fmt_closed_form(eps0, kc, shuffle_delta)
    return ApproxCheckinRDP(rdp, dbar, ~(ok & (delta0 <= 0.0)))


def subsampled_shuffle_checkin_rdp(orders, *, n, gamma, eps0, delta0=0.0, shuffle_delta,
                                   tail_tol=DEFAULT_TAIL_TOL) -> ApproxCheckinRDP:
    """Shuffled check-in with a generic (eps0, delta0)-LDP randomizer by the "subsampled shuffling
    conversion" of Sec. 4.1: for each k, (1) the shuffle of the k reports is (eps_s, shuffle_delta)-DP by
    Feldman-McMillan-Talwar 2021 Thm 3.1 (validity eps0 <= ln(k/(16 ln(4/shuffle_delta))),
    docs/errata.md#e-checkin-fmt-condition; outside it footnote 3's fallback eps_s = eps0, delta 0), (2) the
    differing client is in the round with probability k/n (docs/errata.md#e-checkin-rate): Balle, Barthe,
    Gaboardi 2018 Thm 9 gives (ln(1 + (k/n)(e^eps_s - 1)), (k/n) delta_s), (3) DP -> RDP as in
    :func:`amplify_jax.conversions.dp_to_rdp` (an (eps, delta)-DP pair is delta-approximately RDP with the
    randomized-response curve at eps; Lemma 3 is not used as printed: docs/errata.md#e-checkin-lemma3),
    (4) Eq. 5 sums the curves over k with the Bin(n, gamma) weights.

    The result is delta-approximate: ``delta`` <= gamma max(shuffle_delta, delta0) per round (and the curve
    carries + ln(1/(1 - delta))/(alpha - 1) for the reweighting of k by the decompositions).  Compose rounds
    by adding curves and deltas.  For delta0 > 0 FMT's approximate-DP extension is not used (its constants
    are not checked here): only check-in amplifies then, with (eps0, delta0) per report, and ``fallback`` is
    True.  Any orders > 1.  Broadcasts over n, gamma, eps0, delta0, shuffle_delta.
    """
    a = V.orders("orders", orders)
    nn, g, e0, d0, ds = check_params((N, GAMMA, EPS0, DELTA0, SHUFFLE_DELTA), n=n, gamma=gamma, eps0=eps0,
                                     delta0=delta0, shuffle_delta=shuffle_delta)
    tol = V.scalar("tail_tol", tail_tol, V.unit_open)
    width = _sum_plan(nn, g, tol)
    # NumPy arrays to the kernel: a jnp.asarray is a small program per shape (issue 25)
    return _conversion_kernel(nn, g, e0, d0, ds, np.asarray(a), width)
