"""Sec. IV-C, IV-D and V-B of Ladjel, Anciaux, Bellet, Scerri: deployment inversions of Thm 4 -- the fewest
dummies, the smallest sampling rate and the messages per scrambler that reach a target (eps, delta), under a
network-load or individual-load budget."""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from .. import _validate as V
from ..calibrate import invert_monotone
from ..shuffle.blanket import rr_delta_traced
from ._common import _check_common
from ._costs import scrambler_costs
from ._scrambler_delta import scrambler_delta


# ---------------------------------------------------------------------------------------------------------
# Deployment inversions: fewest dummies, smallest sampling rate, messages per scrambler
# ---------------------------------------------------------------------------------------------------------


class Deployment(NamedTuple):
    """Result of a deployment inversion.  ``status`` uses the core's codes (amplify_jax.calibrate): 0 ok,
    1 infeasible within the budget (``value`` is then the budget's end and ``delta`` what it gives), 2 the
    least costly end is already private enough, 3 the re-check failed (not monotone; do not use ``value``).
    ``delta`` is re-computed at ``value`` by :func:`scrambler_delta`; ``limit`` is the budget's end of the
    parameter range; ``messages`` the network load (:func:`scrambler_costs`) at ``value`` when ``sources`` is
    given (else NaN-free zeros)."""

    value: np.ndarray
    status: np.ndarray
    delta: np.ndarray
    limit: np.ndarray
    messages: np.ndarray


def _delta_traced(eps, T, n, sigma, d, method):
    """scrambler_delta as a pure jnp function of traced parameters (shuffle's fixed-window engine)."""
    delta = rr_delta_traced(method, eps, n, d, T, sigma)
    e0 = jnp.log1p((1.0 - sigma) * T / jnp.where(sigma > 0, sigma, 1.0))
    local = (sigma > 0) & (eps >= e0)
    return jnp.where(local, 0.0, jnp.minimum(delta, 1.0))


def _delta_in_dummies(d, eps, T, n, sigma, method):
    return _delta_traced(eps, T, n, sigma, d, method)


def _delta_in_sampling(sigma, eps, T, n, d, method):
    return _delta_traced(eps, T, n, sigma, d, method)


def _delta_in_n(n, eps, T, sigma, d, method):
    return _delta_traced(eps, T, n, sigma, d, method)


_FN_CACHE: dict = {}


def _bound_fn(f, method):
    import functools

    key = (f.__name__, method)
    if key not in _FN_CACHE:
        _FN_CACHE[key] = functools.partial(f, method=method)
    return _FN_CACHE[key]


def _deploy_method(method):
    V.one_of("method", method, ("hoeffding", "bennett", "exact"))
    return method


def _target(eps, delta):
    return V.nonnegative("eps", eps), V.unit_open("delta", delta)


def _finish_deploy(value, status, limit, eps, delta, T, n, sigma, d, method, sources):
    chk = scrambler_delta(eps, targets=T, n=n, sampling=sigma, dummies=d, method=method).delta
    chk = np.asarray(chk)
    status = np.asarray(status).copy()
    failed = (chk > delta) & ((status == 0) | (status == 2))
    status[failed] = 3
    if sources is None:
        msgs = np.zeros(np.shape(value))
    else:
        msgs = scrambler_costs(sources=sources, targets=T, n=n, sampling=sigma, dummies=d).messages
    return Deployment(np.asarray(value), status, chk, np.asarray(limit), np.asarray(msgs))


def fewest_dummies(
    eps, delta, *, targets, n, sampling, sources=None, max_messages=None, max_dummies=100_000, method="exact"
) -> Deployment:
    """Fewest dummies per scrambler d with ``scrambler_delta(eps) <= delta`` (Ladjel et al. §IV-C, §V-B),
    under a network-load budget: ``max_messages`` bounds the total volume S_t + SF (n + d) of
    :func:`scrambler_costs` (needs ``sources`` = S, the real contributions to keep), which caps d at
    floor((max_messages - S_t - SF n) / SF); without a budget d <= ``max_dummies``.  Integer bisection by
    amplify_jax.calibrate.invert_monotone (delta is non-increasing in d), feasible endpoint re-checked."""
    method = _deploy_method(method)
    eps, delta = _target(eps, delta)
    _, T, n_, sigma, _ = _check_common(0.0, targets, n, sampling, 0)
    dmax = V.integer("max_dummies", max_dummies, minimum=1).astype(np.float64)
    shape = V.broadcastable(eps=eps, delta=delta, targets=T, n=n_, sampling=sigma, max_dummies=dmax)
    if max_messages is not None:
        if sources is None:
            raise ValueError("Expected sources (S) when max_messages is given, got sources=None.")
        budget = V.positive("max_messages", max_messages)
        c0 = scrambler_costs(sources=sources, targets=T, n=n_, sampling=sigma, dummies=0)
        with np.errstate(invalid="ignore"):
            room = np.where(c0.feasible, np.floor((budget - c0.messages) / np.where(c0.feasible, c0.scramblers, 1.0)), -1.0)
        shape = np.broadcast_shapes(shape, np.shape(room))
        limit = np.minimum(room, dmax)
    else:
        limit = dmax
    eps, delta, T, n_, sigma, limit = (np.broadcast_to(np.asarray(x, np.float64), shape) for x in (eps, delta, T, n_, sigma, limit))
    at0 = np.asarray(scrambler_delta(eps, targets=T, n=n_, sampling=sigma, dummies=0, method=method).delta) <= delta
    hi = np.maximum(limit, 2.0)
    inv = invert_monotone(_bound_fn(_delta_in_dummies, method), delta, args=(eps, T, n_, sigma), lo=1.0, hi=hi,
                          feasible="above", integer=True)
    value = np.asarray(inv.value)
    status = np.where(np.asarray(inv.status) == 2, 0, np.asarray(inv.status))  # d = 1 suffices (d = 0 did not)
    value = np.where(at0, 0.0, value)
    status = np.where(at0, 2, status)
    over = (value > limit) & ~at0  # only possible through hi = max(limit, 2)
    status = np.where(over | (limit < 0), 1, status)
    value = np.where(status == 1, np.maximum(limit, 0.0), value)
    return _finish_deploy(value, status, limit, eps, delta, T, n_, sigma, value, method, sources)


def smallest_sampling(
    eps, delta, *, targets, n, dummies, sources=None, max_messages=None, rtol=1e-6, method="exact"
) -> Deployment:
    """Smallest local sampling rate sigma with ``scrambler_delta(eps) <= delta`` (§IV-C, §V-B: sampling costs
    utility, or consents S_t = S / (1 - sigma) at fixed utility), under a network-load budget ``max_messages``
    on the volume S_t + SF (n + d) (needs ``sources``), which caps sigma.  Bisection by
    amplify_jax.calibrate.invert_monotone (delta is non-increasing in sigma), feasible endpoint re-checked;
    sigma = 0 is tried first (status 2 when it suffices)."""
    method = _deploy_method(method)
    eps, delta = _target(eps, delta)
    _, T, n_, _, d = _check_common(0.0, targets, n, 0.0, dummies)
    shape = V.broadcastable(eps=eps, delta=delta, targets=T, n=n_, dummies=d)
    if max_messages is not None:
        if sources is None:
            raise ValueError("Expected sources (S) when max_messages is given, got sources=None.")
        budget = V.positive("max_messages", max_messages)
        S = V.integer("sources", sources, minimum=1).astype(np.float64)
        shape = np.broadcast_shapes(shape, np.shape(budget), np.shape(S))
        # messages(sigma) ~ S (2n + d) / (n (1 - sigma)); start there and step down until the rounded costs fit.
        Sb, nb, db, Tb, Bb = (np.broadcast_to(np.asarray(x, np.float64), shape) for x in (S, n_, d, T, budget))
        lim = np.clip(1.0 - Sb * (2.0 * nb + db) / (nb * Bb), 0.0, 1.0 - 1e-12)
        for _ in range(200):
            c = scrambler_costs(sources=Sb, targets=Tb, n=nb, sampling=lim, dummies=db)
            bad = c.messages > Bb
            if not np.any(bad & (lim > 0)):
                break
            lim = np.where(bad, np.maximum(lim - np.maximum(1e-9, 1e-3 * (1.0 - lim)), 0.0), lim)
        fits0 = scrambler_costs(sources=Sb, targets=Tb, n=nb, sampling=0.0, dummies=db).messages <= Bb
        limit = np.where(fits0, lim, -1.0)
    else:
        limit = np.ones(shape)
    eps, delta, T, n_, d, limit = (np.broadcast_to(np.asarray(x, np.float64), shape) for x in (eps, delta, T, n_, d, limit))
    at0 = np.asarray(scrambler_delta(eps, targets=T, n=n_, sampling=0.0, dummies=d, method=method).delta) <= delta
    hi = np.clip(limit, 2e-9, 1.0)
    inv = invert_monotone(_bound_fn(_delta_in_sampling, method), delta, args=(eps, T, n_, d), lo=1e-9, hi=hi,
                          feasible="above", rtol=rtol)
    value = np.where(at0, 0.0, np.asarray(inv.value))
    status = np.where(np.asarray(inv.status) == 2, 0, np.asarray(inv.status))  # sigma = 1e-9 suffices, 0 did not
    status = np.where(at0, 2, status)
    status = np.where((limit < 0) & ~at0, 1, status)
    value = np.where(status == 1, np.maximum(limit, 0.0), value)
    return _finish_deploy(value, status, limit, eps, delta, T, n_, value, d, method, sources)


def messages_per_scrambler(
    eps, delta, *, targets, sampling, dummies, max_channels=None, max_n=100_000, sources=None, method="exact"
) -> Deployment:
    """Messages per scrambler n for a target (eps, delta) under an individual-load budget (§IV-D, §V-B: a
    scrambler opens n + T secure channels).  ``limit`` is the most messages per scrambler the budget allows,
    ``max_channels - T`` (or ``max_n``); ``value`` is the fewest n with ``scrambler_delta(eps) <= delta``
    (integer bisection by amplify_jax.calibrate.invert_monotone, re-checked; delta is non-increasing in n).
    Every n in [value, limit] meets the target; status 1 when even ``limit`` does not."""
    method = _deploy_method(method)
    eps, delta = _target(eps, delta)
    _, T, _, sigma, d = _check_common(0.0, targets, 1, sampling, dummies)
    nmax = V.integer("max_n", max_n, minimum=1).astype(np.float64)
    shape = V.broadcastable(eps=eps, delta=delta, targets=T, sampling=sigma, dummies=d, max_n=nmax)
    if max_channels is not None:
        ch = V.integer("max_channels", max_channels, minimum=1).astype(np.float64)
        shape = np.broadcast_shapes(shape, np.shape(ch))
        limit = np.minimum(ch - np.asarray(T, np.float64), nmax)
    else:
        limit = nmax
    eps, delta, T, sigma, d, limit = (np.broadcast_to(np.asarray(x, np.float64), shape) for x in (eps, delta, T, sigma, d, limit))
    hi = np.maximum(limit, 2.0)
    inv = invert_monotone(_bound_fn(_delta_in_n, method), delta, args=(eps, T, sigma, d), lo=1.0, hi=hi,
                          feasible="above", integer=True)
    value = np.asarray(inv.value)
    status = np.asarray(inv.status).copy()
    status = np.where((value > limit) | (limit < 1), 1, status)
    value = np.where(status == 1, np.maximum(limit, 1.0), value)
    return _finish_deploy(value, status, limit, eps, delta, T, value, sigma, d, method, sources)
