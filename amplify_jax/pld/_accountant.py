"""An accountant for compositions of different events, in dp_accounting's vocabulary (duck-typed).

Events: :class:`Gaussian` (noise multiplier), :class:`Laplace` (scale), :class:`RandomizedResponse` (eps0,
binary), :class:`PoissonSampled` (rate, event), :class:`SampledWithoutReplacement` (data set size, batch
size, a Gaussian event), :class:`SelfComposed` (event, count), :class:`Composed` (events).  dp_accounting's
``GaussianDpEvent``, ``LaplaceDpEvent``, ``PoissonSampledDpEvent``, ``SampledWithoutReplacementDpEvent``,
``SelfComposedDpEvent``, ``ComposedDpEvent`` and ``RandomizedResponseDpEvent`` (two buckets) are accepted
as they are, read by their attributes (dp_accounting is not imported), so code written for its
``PLDAccountant`` switches with one line::

    acc = amplify_jax.pld.Accountant()        # was: dp_accounting.pld.PLDAccountant()
    acc.compose(event)                        # the same DpEvent objects
    acc.get_epsilon(1e-5)                     # a sound upper bound of eps

The composition is one FFT product of every distinct event's PLD raised to its count (``_compose``), on a
shared grid, for both neighbouring relations; the answer is the worse relation's.

Neighbouring relations: Poisson sampling is accounted under add/remove one record, sampling without
replacement under replace-one (a fixed data set size; ``_mechanisms.WorGaussianLoss``), as dp_accounting's
accountants do (one relation per accountant; its PLD accountant has no sampling without replacement, its RDP
accountant takes it under ``REPLACE_ONE`` only).  So an accountant that holds a sampled-without-replacement
event refuses Poisson-sampled ones (and the reverse), naming both.  Unsampled Gaussian, Laplace and randomized
response events compose with either: their pairs are the same under every relation, with the noise
multiplier (or scale) taken over the sensitivity of the relation in force (replace-one once a
sampled-without-replacement event is present, as dp_accounting's ``noise_multiplier`` is there).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from ..numerics import float64_jit, x64_scope
from ._compose import compose, delta_at, epsilon_at
from ._results import PldDelta, PldEpsilon, auto_check, status_of
from ._grid import AUTO_RTOL, AUTO_RTOL_DELTA, check_grid_size
from ._mechanisms import RELATIONS
from ._queries import DELTA_QUERY_TAIL, TAIL_FRACTION, event

__all__ = ["Gaussian", "Laplace", "RandomizedResponse", "PoissonSampled", "SampledWithoutReplacement",
           "SelfComposed", "Composed", "Accountant"]


@dataclass(frozen=True)
class Gaussian:
    """The Gaussian mechanism with sensitivity 1 and noise multiplier ``noise_multiplier``."""

    noise_multiplier: float


@dataclass(frozen=True)
class Laplace:
    """The Laplace mechanism with sensitivity 1 and scale ``noise_multiplier`` (dp_accounting's name)."""

    noise_multiplier: float


@dataclass(frozen=True)
class RandomizedResponse:
    """Binary randomized response with local guarantee ``eps0``."""

    eps0: float


@dataclass(frozen=True)
class PoissonSampled:
    """``event`` run on a Poisson sample of rate ``sampling_probability``."""

    sampling_probability: float
    event: object


@dataclass(frozen=True)
class SampledWithoutReplacement:
    """``event`` (a :class:`Gaussian`) run on a batch of ``sample_size`` records drawn uniformly without
    replacement from the ``source_dataset_size`` records, afresh each time; replace-one relation, the
    Gaussian's noise multiplier taken over the batch function's replace-one sensitivity (dp_accounting's
    ``SampledWithoutReplacementDpEvent``; see ``_mechanisms.WorGaussianLoss`` for the dominating pair)."""

    source_dataset_size: int
    sample_size: int
    event: object


@dataclass(frozen=True)
class SelfComposed:
    """``event`` composed ``count`` times."""

    event: object
    count: int


@dataclass(frozen=True)
class Composed:
    """The events composed in turn."""

    events: tuple


def _flatten(ev, count=1, q=1.0, out=None):
    """The event tree as a list of (kind, parameter, rate, count)."""
    out = [] if out is None else out
    name = type(ev).__name__
    if name in ("Composed", "ComposedDpEvent"):
        for e in ev.events:
            _flatten(e, count, q, out)
    elif name in ("SelfComposed", "SelfComposedDpEvent"):
        c = int(ev.count)
        if c < 0 or c != ev.count:
            raise ValueError(f"Expected a non-negative integer count, got count={ev.count!r}")
        _flatten(ev.event, count * c, q, out)
    elif name in ("PoissonSampled", "PoissonSampledDpEvent"):
        p = float(ev.sampling_probability)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Expected sampling_probability in [0, 1], got sampling_probability={p!r}")
        if q != 1.0:
            raise ValueError("Nested Poisson sampling is not supported")
        if type(ev.event).__name__ in ("SampledWithoutReplacement", "SampledWithoutReplacementDpEvent"):
            raise ValueError("Nested sampling is not supported (sampling without replacement inside Poisson "
                             "sampling)")
        _flatten(ev.event, count, p, out)
    elif name in ("SampledWithoutReplacement", "SampledWithoutReplacementDpEvent"):
        n_all, m = ev.source_dataset_size, ev.sample_size
        if isinstance(n_all, bool) or int(n_all) != n_all or n_all < 1:
            raise ValueError(f"Expected a positive integer source_dataset_size, got source_dataset_size={n_all!r}")
        if isinstance(m, bool) or int(m) != m or not 0 <= m <= n_all:
            raise ValueError(f"Expected an integer sample_size in [0, source_dataset_size={int(n_all)}], got "
                             f"sample_size={m!r}")
        if q != 1.0:
            raise ValueError("Nested sampling is not supported (sampling without replacement inside Poisson "
                             "sampling)")
        sub = type(ev.event).__name__
        if sub not in ("Gaussian", "GaussianDpEvent"):
            raise ValueError(f"Unsupported event for the PLD accountant: {name} of {sub} (sampling without "
                             "replacement of the Gaussian mechanism only)")
        if m > 0:  # a batch of 0 records: the output does not depend on the data
            out.append(("wor-gaussian", float(ev.event.noise_multiplier), int(m) / int(n_all), count))
    elif name in ("Gaussian", "GaussianDpEvent"):
        out.append(("gaussian", float(ev.noise_multiplier), q, count))
    elif name in ("Laplace", "LaplaceDpEvent"):
        out.append(("laplace", float(ev.noise_multiplier), q, count))
    elif name == "RandomizedResponse":
        out.append(("randomized-response", float(ev.eps0), q, count))
    elif name == "RandomizedResponseDpEvent":
        k, p = int(ev.num_buckets), float(ev.noise_parameter)
        if k != 2:
            raise ValueError(f"Expected num_buckets=2 (binary randomized response), got num_buckets={k!r}")
        if not 0.0 < p <= 1.0:
            raise ValueError(f"Expected noise_parameter in (0, 1], got noise_parameter={p!r}")
        # the output is a uniform bucket with probability p: the true one is kept with probability 1 - p / 2
        out.append(("randomized-response", float(np.log((1.0 - p / 2.0) / (p / 2.0))), q, count))
    elif name in ("NoOpDpEvent",):
        pass
    else:
        raise ValueError(f"Unsupported event for the PLD accountant: {name}")
    return out


def _one_relation(items):
    """Refuse Poisson-sampled events beside sampled-without-replacement ones: the first are accounted under
    add/remove, the second under replace-one, and one accountant answers for one relation."""
    wor = any(k == "wor-gaussian" for k, _, _, _ in items)
    poisson = [k for k, _, q, _ in items if k != "wor-gaussian" and q != 1.0]
    if wor and poisson:
        raise ValueError("Expected one neighbouring relation per accountant: a SampledWithoutReplacement event "
                         "(replace-one) cannot be composed with a PoissonSampled event (add/remove, here of "
                         f"{poisson[0]}); use one accountant per relation")


def _merged(items):
    """Identical (kind, parameter, rate) events merged by adding their counts; zero counts dropped."""
    acc = {}
    for kind, a, q, c in items:
        if c > 0:
            acc[(kind, a, q)] = acc.get((kind, a, q), 0) + c
    return acc


def _composed_all(kinds, a, q, counts, log_tail, n, coarsen=1.0):
    out = []
    for r in RELATIONS:
        evs = [event(k, r, a[i], q[i]) for i, k in enumerate(kinds)]
        out.append(compose(tuple(m for m, _ in evs), tuple(p for _, p in evs),
                           tuple(counts[i] for i in range(len(kinds))), n, log_tail, coarsen))
    return out


@float64_jit(static_argnames=("kinds", "n"))
def _eps_kernel(a, q, counts, delta, coarsen, kinds, n):
    cs = _composed_all(kinds, a, q, counts, jnp.log(TAIL_FRACTION * jnp.min(delta)), n, coarsen)
    up = jnp.max(jnp.stack([epsilon_at(c, delta) for c in cs]), axis=0)
    lo = jnp.max(jnp.stack([epsilon_at(c, delta, "opt") for c in cs]), axis=0)
    bare = jnp.max(jnp.stack([epsilon_at(c, delta, roundoff=False) for c in cs]), axis=0)
    return up, jnp.minimum(lo, up), jnp.minimum(bare, up)


@float64_jit(static_argnames=("kinds", "n"))
def _delta_kernel(a, q, counts, eps, coarsen, kinds, n):
    cs = _composed_all(kinds, a, q, counts, jnp.log(DELTA_QUERY_TAIL), n, coarsen)
    up = jnp.max(jnp.stack([delta_at(c, eps) for c in cs]), axis=0)
    lo = jnp.max(jnp.stack([delta_at(c, eps, "opt") for c in cs]), axis=0)
    bare = jnp.max(jnp.stack([delta_at(c, eps, roundoff=False) for c in cs]), axis=0)
    return up, jnp.minimum(lo, up), jnp.minimum(bare, up)


#: The least number of query values of one compiled call of the accountant's kernels (``Accountant._run``).
_QUERY_BUCKET = 8


def _query_bucket(k: int) -> int:
    """The padded number of query values: the least power of two >= k, at least ``_QUERY_BUCKET``."""
    return max(_QUERY_BUCKET, 1 << max(int(k) - 1, 0).bit_length())


class Accountant:
    """A PLD accountant for compositions of different events (dp_accounting's ``PLDAccountant`` interface:
    ``compose``, ``get_epsilon``, ``get_delta``), plus ``epsilon`` / ``delta`` with the lower bound.

    ``grid_size``: the grid points of the composition (a power of two), or None (the default): the
    automatic grid of :func:`amplify_jax.pld.dpsgd_epsilon`, its check made for every query value at once
    (one composition serves them all) and the finer grid used for all of them where one asks for it.
    Parameters are checked as the named functions check them (:func:`amplify_jax.pld.epsilon`)."""

    def __init__(self, grid_size=None):
        self._n = check_grid_size(grid_size, ())
        self._auto = grid_size is None
        self._items = []

    def _run(self, kernel, a, q, c, x, kinds, rtol):
        """(up, lo) of ``kernel`` at the query values x: on the one grid, or the automatic grid's passes
        (``_results.auto_check``: the error estimate at every query value, the finer grid for all where one
        asks).  The query values are padded (with the last one) to a power of two, at least
        ``_QUERY_BUCKET``: a few compiled shapes serve every number of them (the padding leaves the window's
        tail, set by the smallest delta, as it is)."""
        n, k = self._n, x.size
        x = np.pad(x, (0, _query_bucket(k) - k), mode="edge")
        with x64_scope():
            first = [np.array(v, dtype=np.float64) for v in kernel(a, q, c, x, 1.0, kinds, n)]
            if not self._auto:
                return first[0][:k], first[1][:k]

            def batch(a_, q_, c_, x_, kinds_, n_, coarsen=1.0):  # auto_check's calling convention
                return kernel(a_, q_, c_, x_, coarsen, kinds_, n_)

            sizes, up, lo = auto_check(batch, kinds, (a, q, c, x), first, k, (), rtol)
            size = int(np.max(sizes))
            if size:
                uf, lf, _ = (np.asarray(v, dtype=np.float64) for v in kernel(a, q, c, x, 1.0, kinds, size))
                up, lo = np.minimum(up, uf), np.maximum(lo, lf)
            return up[:k], lo[:k]

    def compose(self, event, count: int = 1) -> "Accountant":
        """Add ``event`` composed ``count`` times; returns the accountant (calls chain)."""
        from ._api import check_parameter

        if int(count) != count or count < 0:
            raise ValueError(f"Expected a non-negative integer count, got count={count!r}")
        items = _flatten(event, int(count))
        for kind, a, _, _ in items:
            check_parameter(kind, a)
        _one_relation(self._items + items)
        self._items.extend(items)
        return self

    def _arrays(self):
        m = _merged(self._items)
        kinds = tuple(k for k, _, _ in m)
        a = np.array([x for _, x, _ in m], dtype=np.float64)
        q = np.array([x for _, _, x in m], dtype=np.float64)
        c = np.array(list(m.values()), dtype=np.float64)
        return kinds, a, q, c

    def epsilon(self, delta) -> PldEpsilon:
        """(epsilon, epsilon_lower, status) at each delta (a scalar or a 1-D array)."""
        from .. import _validate as V

        d = np.atleast_1d(V.unit_open("delta", delta)).astype(np.float64)
        kinds, a, q, c = self._arrays()
        if not kinds:
            z = np.zeros_like(d)
            return PldEpsilon(z, z, status_of(z))
        up, lo = self._run(_eps_kernel, a, q, c, d, kinds, AUTO_RTOL)
        return PldEpsilon(up, lo, status_of(up))

    def delta(self, epsilon) -> PldDelta:
        """(delta, delta_lower, status) at each epsilon (a scalar or a 1-D array)."""
        from .. import _validate as V

        e = np.atleast_1d(V.nonnegative("epsilon", epsilon)).astype(np.float64)
        kinds, a, q, c = self._arrays()
        if not kinds:
            z = np.zeros_like(e)
            return PldDelta(z, z, status_of(z))
        up, lo = self._run(_delta_kernel, a, q, c, e, kinds, AUTO_RTOL_DELTA)
        return PldDelta(up, lo, status_of(up))

    def get_epsilon(self, target_delta: float) -> float:
        """The sound eps at ``target_delta`` (dp_accounting's name): an upper bound of the true eps."""
        return float(self.epsilon(target_delta).epsilon[0])

    def get_delta(self, target_epsilon: float) -> float:
        """The sound delta at ``target_epsilon`` (dp_accounting's name): an upper bound of the true delta."""
        return float(self.delta(target_epsilon).delta[0])
