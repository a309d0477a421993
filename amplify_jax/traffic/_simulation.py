"""App. D and Figure 6 of Ladjel, Anciaux, Bellet, Scerri: Monte Carlo rerun of the scrambler on two
neighbouring communication graphs and the empirical log-ratios of its outputs (a figure reproduction, not a
bound)."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._core import validate as V
from ._params import DUMMIES, N, SAMPLING, TARGETS


# ---------------------------------------------------------------------------------------------------------
# App. D: empirical output distribution on neighbouring inputs (Figure 6)
# ---------------------------------------------------------------------------------------------------------


class OutputSimulation(NamedTuple):
    """Distinct outputs (target-count vectors, one row each) seen on two neighbouring inputs, with how often
    each occurred (``counts_1``, ``counts_2``) and the empirical log-ratio
    r(O) = |ln(c_1(O) / c_2(O))| (+inf where one count is 0), sorted by decreasing r then by total count;
    ``both_seen`` is False where one count is 0 (the log-ratio +inf: too few runs to estimate it)."""

    outputs: np.ndarray
    counts_1: np.ndarray
    counts_2: np.ndarray
    log_ratio: np.ndarray
    runs: int
    both_seen: np.ndarray | None = None


def _sim_counts(rng, first_counts, sigma, d, runs):
    """Target counts of ``runs`` runs of A_sigma^{n,d} (uncapped scrambler, T convention) on one input given by
    its per-target message counts: each message is kept with probability 1 - sigma, and the sampled messages
    plus the d dummies fall uniformly on the T targets (a multinomial)."""
    T = first_counts.shape[0]
    kept = rng.binomial(first_counts[None, :], 1.0 - sigma, size=(runs, T))
    rest = first_counts.sum() + d - kept.sum(axis=1)
    return kept + rng.multinomial(rest, np.full(T, 1.0 / T))


def simulate_scrambler_outputs(*, targets, n, sampling, dummies, runs, seed=0, first=None) -> OutputSimulation:
    """Monte Carlo rerun of Ladjel et al.'s Figure 6 simulation (App. D): run the scrambler algorithm
    A_sigma^{n,d} (local sampling, T convention, then d uniform dummies and a shuffle; only the vector of
    message counts per target is observable) ``runs`` times on each of two neighbouring communication
    graphs, count each distinct output, and return the empirical log-ratios.

    ``first``: the true targets of the n messages of the first graph (default: round robin over the targets);
    the second graph moves message 0 to the next target.  Simulation with NumPy's generator seeded by
    ``seed`` (a figure reproduction, not a bound: nothing here is reported as a guarantee).
    """
    # scalars: one simulation; the family's Params (``_params.py``)
    T, n_, d = (int(V.scalar(nm, x, p.domain.check)) for nm, x, p in
                (("targets", targets, TARGETS), ("n", n, N), ("dummies", dummies, DUMMIES)))
    sigma = V.scalar("sampling", sampling, SAMPLING.domain.check)
    runs = V.count("runs", runs, minimum=1, maximum=10**8)  # two (runs, targets) count arrays
    seed = V.count("seed", seed, minimum=0)
    if T * math.log(n_ + d + 1) > 62 * math.log(2):
        raise ValueError(f"Expected (n + dummies + 1)**targets < 2**62 for the output codes, got targets={T}, n={n_}, dummies={d}.")
    if first is None:
        first = np.arange(n_) % T
    first = V.integer("first", first, minimum=0)
    if first.shape != (n_,) or np.any(first >= T):
        raise ValueError(f"Expected first to hold n={n_} targets in [0, {T}), got first={first!r}.")
    second = first.copy()
    second[0] = (second[0] + 1) % T
    rng = np.random.default_rng(seed)
    c1 = _sim_counts(rng, np.bincount(first, minlength=T), sigma, d, runs)
    c2 = _sim_counts(rng, np.bincount(second, minlength=T), sigma, d, runs)
    base = (n_ + d + 1) ** np.arange(T, dtype=np.int64)  # exact integer code of a count vector
    codes = np.concatenate([c1 @ base, c2 @ base])
    ucodes, inv = np.unique(codes, return_inverse=True)
    uniq = (ucodes[:, None] // base[None, :]) % (n_ + d + 1)
    n1 = np.bincount(inv[:runs], minlength=len(uniq))
    n2 = np.bincount(inv[runs:], minlength=len(uniq))
    with np.errstate(divide="ignore"):
        r = np.abs(np.log(n1.astype(np.float64)) - np.log(n2.astype(np.float64)))
    order = np.lexsort((-(n1 + n2), -r))
    return OutputSimulation(uniq[order], n1[order], n2[order], r[order], runs, (n1 > 0)[order] & (n2 > 0)[order])
