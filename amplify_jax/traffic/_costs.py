"""Sec. II-E, III-C and IV-D of Ladjel, Anciaux, Bellet, Scerri: utility and efficiency of a cluster deployment
(consents, messages, secure channels), without and with scramblers."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._core import validate as V
from .._core.domains import check_params
from ._params import DUMMIES, N, SAMPLING, TARGETS


# ---------------------------------------------------------------------------------------------------------
# §III-C and §IV-D: utility and efficiency metrics
# ---------------------------------------------------------------------------------------------------------


class Costs(NamedTuple):
    """Utility and efficiency of a cluster deployment (Ladjel et al. §II-E, §III-C, §IV-D), in messages of
    size mu = 1.  ``feasible`` is False where sigma = 1 (no real contribution survives; counts are +inf)."""

    sources: np.ndarray  # S_t = ceil(S / (1 - sigma)) source nodes, i.e. user consents
    extra_consents: np.ndarray  # S_t - S
    scramblers: np.ndarray  # SF = ceil(S_t / n) (0 without scramblers)
    messages: np.ndarray  # total volume of exchanged messages (network load)
    extra_messages: np.ndarray  # messages - S: the load added w.r.t. the non-private execution (S messages)
    channels: np.ndarray  # total number of secure channels
    channels_per_source: np.ndarray
    channels_per_scrambler: np.ndarray  # n + T (0 without scramblers): the individual load of §V-B
    channels_per_target: np.ndarray  # at most
    feasible: np.ndarray


def _ceil_safe(x):
    # ceil that is not pushed up by a rounding error of the division (S / (1 - sigma) = 12500.000000000002)
    return np.ceil(x * (1.0 - 8.0 * np.finfo(np.float64).eps))


def _sources_needed(S, sigma):
    with np.errstate(divide="ignore"):
        return np.where(sigma < 1, _ceil_safe(S / np.where(sigma < 1, 1.0 - sigma, 1.0)), np.inf)


def local_costs(*, sources, targets, sampling, dummies) -> Costs:
    """Costs of local sampling + flooding without scramblers (§III-C): S_t = S / (1 - sigma) sources for the
    same utility (rounded up), each sending d + 1 messages on d + 1 channels; S_t (d + 1) messages in total, a
    factor (d + 1) w.r.t. the non-private execution; a target receives from at most S_t sources."""
    S = V.integer("sources", sources, minimum=1).astype(np.float64)
    T, sigma, d = check_params((TARGETS, SAMPLING, DUMMIES), broadcast=False,
                               targets=targets, sampling=sampling, dummies=dummies)
    shape = V.broadcastable(sources=S, targets=T, sampling=sigma, dummies=d)
    S, T, sigma, d = (np.broadcast_to(x, shape) for x in (S, T, sigma, d))
    St = _sources_needed(S, sigma)
    msgs = St * (d + 1.0)
    zero = np.zeros(shape)
    return Costs(St, St - S, zero, msgs, msgs - S, msgs, d + 1.0, zero, St, sigma < 1)


def scrambler_costs(*, sources, targets, n, sampling, dummies) -> Costs:
    """Costs with scramblers (§IV-D): S_t = S / (1 - sigma) sources, SF = S_t / n scramblers (both rounded up;
    the paper assumes n divides S_t).  Each scrambler opens n + T channels and exchanges 2 n + d messages:
    S_t + SF T channels and S_t + SF (n + d) messages in total."""
    S = V.integer("sources", sources, minimum=1).astype(np.float64)
    T, n_, sigma, d = check_params((TARGETS, N, SAMPLING, DUMMIES), broadcast=False,
                                   targets=targets, n=n, sampling=sampling, dummies=dummies)
    shape = V.broadcastable(sources=S, targets=T, n=n_, sampling=sigma, dummies=d)
    S, T, n_, sigma, d = (np.broadcast_to(x, shape) for x in (S, T, n_, sigma, d))
    St = _sources_needed(S, sigma)
    SF = np.where(np.isfinite(St), _ceil_safe(np.where(np.isfinite(St), St, 0.0) / n_), np.inf)
    msgs = St + SF * (n_ + d)
    chans = St + SF * T
    return Costs(St, St - S, SF, msgs, msgs - S, chans, np.ones(shape), n_ + T, SF, sigma < 1)
