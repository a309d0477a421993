"""Sec. IV-C, IV-D and V-B of Ladjel, Anciaux, Bellet, Scerri: deployment inversions of Thm 4 -- the fewest
dummies, the smallest sampling rate and the messages per scrambler that reach a target (target_epsilon,
target_delta), under a network-load or individual-load budget."""

from __future__ import annotations

import collections
import functools

import jax.numpy as jnp
import numpy as np

from .._core import validate as V
from .._core.domains import check_params
from ..accounting.calibrate import invert_monotone
from .._core.status import Status
from ..shuffle.blanket import rr_delta_traced
from .._core.numerics import CLOSED_FORM_MARGIN  # the closed forms' safe-side rounding (1 + 8 ulps)
from ._common import DUMMIES_CAP, N_CAP, _warn_cap
from ._params import DUMMIES, MIN_SEARCH_DELTA, N, SAMPLING, TARGET_DELTA, TARGET_EPSILON, TARGETS
from ._costs import scrambler_costs
from ._scrambler_delta import scrambler_delta


# ---------------------------------------------------------------------------------------------------------
# Deployment inversions: fewest dummies, smallest sampling rate, messages per scrambler
# ---------------------------------------------------------------------------------------------------------


class Deployment(tuple):
    """Base of the results of the deployment inversions: :class:`DummiesDeployment`
    (:func:`scrambler_calibrate_dummies`), :class:`SamplingDeployment` (:func:`scrambler_calibrate_sampling`),
    :class:`ScramblerSizeDeployment` (:func:`scrambler_calibrate_n`), each a named tuple (answer, status, delta,
    limit, messages) whose first field is named after the parameter it holds (``.dummies``, ``.sampling``, ``.n``).

    ``status`` holds :class:`amplify_jax.status.Status` codes: OK; INFEASIBLE within the budget (the answer is
    then the budget's end and ``delta`` what it gives); AT_LIMIT, the least costly end is already private
    enough; NOT_MONOTONE, the re-check failed (do not use the answer); MAX_ITER, feasible but the bracket did
    not reach rtol.  ``delta`` is re-computed at the answer by :func:`scrambler_delta`; ``limit`` is the
    budget's end of the parameter range; ``messages`` the network load (:func:`scrambler_costs`) at the answer
    when ``sources`` is given (else zeros).
    Target deltas below :data:`MIN_TARGET_DELTA` (1e-15) are refused (see there)."""

    __slots__ = ()


class DummiesDeployment(Deployment,
                        collections.namedtuple("DummiesDeployment", "dummies status delta limit messages")):
    """The fewest dummies per scrambler (:func:`scrambler_calibrate_dummies`), with its status, delta, limit and
    load."""

    __slots__ = ()


class SamplingDeployment(Deployment,
                         collections.namedtuple("SamplingDeployment", "sampling status delta limit messages")):
    """The smallest local sampling rate (:func:`scrambler_calibrate_sampling`), with its status, delta, limit and
    load."""

    __slots__ = ()


class ScramblerSizeDeployment(Deployment,
                              collections.namedtuple("ScramblerSizeDeployment", "n status delta limit messages")):
    """The fewest messages per scrambler n (:func:`scrambler_calibrate_n`), with its status, delta, limit and
    load."""

    __slots__ = ()


def _delta_traced(eps, T, n, sigma, d, method):
    """scrambler_delta as a pure jnp function of traced parameters (shuffle's fixed-window engine)."""
    delta = rr_delta_traced(method, eps, n, d, T, sigma)
    e0 = jnp.log1p((1.0 - sigma) * T / jnp.where(sigma > 0, sigma, 1.0))
    # eps at or above the local guarantee rounded up (CLOSED_FORM_MARGIN): delta = 0 only where the exact e0 <= eps
    local = (sigma > 0) & (eps >= e0 * CLOSED_FORM_MARGIN)
    return jnp.where(local, 0.0, jnp.minimum(delta, 1.0))


def _delta_in_dummies(d, eps, T, n, sigma, method):
    return _delta_traced(eps, T, n, sigma, d, method)


def _delta_in_sampling(sigma, eps, T, n, d, method):
    return _delta_traced(eps, T, n, sigma, d, method)


def _delta_in_n(n, eps, T, sigma, d, method):
    return _delta_traced(eps, T, n, sigma, d, method)


_FN_CACHE: dict = {}


def _bound_fn(f, method):
    key = (f.__name__, method)
    if key not in _FN_CACHE:
        _FN_CACHE[key] = functools.partial(f, method=method)
    return _FN_CACHE[key]


def _deploy_method(method):
    V.one_of("method", method, ("hoeffding", "bennett", "exact"))
    return method


#: Smallest target delta of the deployment inversions (as the registry's traffic bounds): every delta of the
#: scrambler's engine includes the bounded truncated mass of its binomial windows (~1e-18, ``tail_sd`` = 9; not
#: monotone in d, n or sigma below ~1e-17), so a smaller target is met by no deployment, or by accident of that
#: slack; the search only found so at the budget's end (scrambler_calibrate_dummies at target_delta = 1e-300: 168 s of
#: bisection over d up to 1e5, answer infeasible).
MIN_TARGET_DELTA = MIN_SEARCH_DELTA  # TARGET_DELTA's lower end (``_params.py``)

#: the target, then the cluster's parameters: the family's Params (``_params.py``)
_TARGET = (TARGET_EPSILON, TARGET_DELTA)


def _search_max(name, value, param):
    """A search's upper end (``max_dummies``, ``max_n``): at least 1 and at most its parameter's largest value,
    where :func:`scrambler_delta` still answers at the end the search may return."""
    a = V.integer(name, value, minimum=1)
    hi = param.domain.hi
    if np.any(a > hi):
        raise ValueError(f"Expected {name} <= {hi:g} (the largest {param.name}), got {name}={V._show(a, a > hi)}.")
    return a.astype(np.float64)


def _finish_deploy(result, value, status, limit, eps, delta, T, n, sigma, d, method, sources):
    chk = scrambler_delta(eps, targets=T, n=n, sampling=sigma, dummies=d, method=method).delta
    chk = np.asarray(chk)
    status = np.asarray(status).astype(np.int32)  # Status codes (IntEnum members would widen to int64)
    failed = (chk > delta) & ((status == Status.OK) | (status == Status.AT_LIMIT))
    status[failed] = Status.NOT_MONOTONE
    if sources is None:
        msgs = np.zeros(np.shape(value))
    else:
        msgs = scrambler_costs(sources=sources, targets=T, n=n, sampling=sigma, dummies=d).messages
    return result(np.asarray(value), status, chk, np.asarray(limit), np.asarray(msgs))


def scrambler_calibrate_dummies(
    target_epsilon, target_delta, *, targets, n, sampling, sources=None, max_messages=None, max_dummies=DUMMIES_CAP,
    method="exact"
) -> DummiesDeployment:
    """Fewest dummies per scrambler d with ``scrambler_delta(target_epsilon) <= target_delta`` (Ladjel et al.
    §IV-C, §V-B),
    under a network-load budget: ``max_messages`` bounds the total volume S_t + SF (n + d) of
    :func:`scrambler_costs` (needs ``sources`` = S, the real contributions to keep), which caps d at
    floor((max_messages - S_t - SF n) / SF); without a budget d <= ``max_dummies`` (default :data:`DUMMIES_CAP`,
    1000, the cap ``bounds.invert`` of ``traffic.scrambler`` over dummies searches to as well; points no d up to
    it satisfies are INFEASIBLE, with a warning naming it).  Integer bisection by
    amplify_jax.calibrate.invert_monotone (delta is non-increasing in d), feasible endpoint re-checked.
    ``target_delta`` >= :data:`MIN_TARGET_DELTA` (1e-15)."""
    method = _deploy_method(method)
    eps, delta, T, n_, sigma = check_params(_TARGET + (TARGETS, N, SAMPLING), broadcast=False,
                                            target_epsilon=target_epsilon, target_delta=target_delta,
                                            targets=targets, n=n, sampling=sampling)
    dmax = _search_max("max_dummies", max_dummies, DUMMIES)
    shape = V.broadcastable(target_epsilon=eps, target_delta=delta, targets=T, n=n_, sampling=sigma,
                            max_dummies=dmax)
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
    # d = 1 suffices (d = 0 did not)
    status = np.where(np.asarray(inv.status) == Status.AT_LIMIT, Status.OK, np.asarray(inv.status))
    value = np.where(at0, 0.0, value)
    status = np.where(at0, Status.AT_LIMIT, status)
    over = (value > limit) & ~at0  # only possible through hi = max(limit, 2)
    status = np.where(over | (limit < 0), Status.INFEASIBLE, status)
    value = np.where(status == Status.INFEASIBLE, np.maximum(limit, 0.0), value)
    capped = (status == Status.INFEASIBLE) & (limit == dmax)
    if capped.any():
        _warn_cap("scrambler_calibrate_dummies", "dummies", float(np.max(dmax)), capped,
                  "max_dummies; pass a larger one to search further")
    return _finish_deploy(DummiesDeployment, value, status, limit, eps, delta, T, n_, sigma, value, method,
                          sources)


def scrambler_calibrate_sampling(
    target_epsilon, target_delta, *, targets, n, dummies, sources=None, max_messages=None, rtol=1e-6,
    method="exact"
) -> SamplingDeployment:
    """Smallest local sampling rate sigma with ``scrambler_delta(target_epsilon) <= target_delta`` (§IV-C, §V-B:
    sampling costs
    utility, or consents S_t = S / (1 - sigma) at fixed utility), under a network-load budget ``max_messages``
    on the volume S_t + SF (n + d) (needs ``sources``), which caps sigma.  Bisection by
    amplify_jax.calibrate.invert_monotone (delta is non-increasing in sigma), feasible endpoint re-checked;
    sigma = 0 is tried first (status AT_LIMIT when it suffices)."""
    method = _deploy_method(method)
    eps, delta, T, n_, d = check_params(_TARGET + (TARGETS, N, DUMMIES), broadcast=False,
                                        target_epsilon=target_epsilon, target_delta=target_delta,
                                        targets=targets, n=n, dummies=dummies)
    shape = V.broadcastable(target_epsilon=eps, target_delta=delta, targets=T, n=n_, dummies=d)
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
    # sigma = 1e-9 suffices, 0 did not
    status = np.where(np.asarray(inv.status) == Status.AT_LIMIT, Status.OK, np.asarray(inv.status))
    status = np.where(at0, Status.AT_LIMIT, status)
    status = np.where((limit < 0) & ~at0, Status.INFEASIBLE, status)
    value = np.where(status == Status.INFEASIBLE, np.maximum(limit, 0.0), value)
    return _finish_deploy(SamplingDeployment, value, status, limit, eps, delta, T, n_, value, d, method, sources)


def scrambler_calibrate_n(
    target_epsilon, target_delta, *, targets, sampling, dummies, max_channels=None, max_n=N_CAP, sources=None,
    method="exact"
) -> ScramblerSizeDeployment:
    """Messages per scrambler n for a target (target_epsilon, target_delta) under an individual-load budget
    (§IV-D, §V-B: a scrambler opens n + T secure channels).  ``limit`` is the most messages per scrambler the
    budget allows, ``max_channels - T`` (or ``max_n``, default :data:`N_CAP`, 10 000, the cap ``bounds.invert`` of
    ``traffic.scrambler`` over n searches to as well); ``n`` is the fewest n with
    ``scrambler_delta(target_epsilon) <= target_delta`` (integer bisection by
    amplify_jax.calibrate.invert_monotone, re-checked; delta is non-increasing in n).  Every n in [n, limit]
    meets the target; status INFEASIBLE when even ``limit`` does not."""
    method = _deploy_method(method)
    eps, delta, T, sigma, d = check_params(_TARGET + (TARGETS, SAMPLING, DUMMIES), broadcast=False,
                                           target_epsilon=target_epsilon, target_delta=target_delta,
                                           targets=targets, sampling=sampling, dummies=dummies)
    nmax = _search_max("max_n", max_n, N)
    shape = V.broadcastable(target_epsilon=eps, target_delta=delta, targets=T, sampling=sigma, dummies=d,
                            max_n=nmax)
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
    status = np.where((value > limit) | (limit < 1), Status.INFEASIBLE, status)
    value = np.where(status == Status.INFEASIBLE, np.maximum(limit, 1.0), value)
    capped = (status == Status.INFEASIBLE) & (limit == nmax)
    if capped.any():
        _warn_cap("scrambler_calibrate_n", "n", float(np.max(nmax)), capped,
                  "max_n; pass a larger one to search further")
    return _finish_deploy(ScramblerSizeDeployment, value, status, limit, eps, delta, T, value, sigma, d, method,
                          sources)
