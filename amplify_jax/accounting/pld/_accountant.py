"""``amplify_jax.pld.Accountant``: a PLD accountant with dp_accounting's ``PrivacyAccountant`` interface.

The class is built on first use (PEP 562: ``__getattr__`` below, bound in :mod:`amplify_jax.pld`), so
``import amplify_jax`` never imports dp_accounting.  Where dp_accounting is importable the class subclasses
``dp_accounting.PrivacyAccountant`` (``supports``, ``compose``, ``_maybe_compose``, ``ledger``,
``neighboring_relation``, ``UnsupportedEventError``; ``dp_accounting.calibrate_dp_mechanism`` accepts it);
without it the same class stands on :mod:`amplify_jax.dp_events`.  Events are read by class name and
attributes, so dp_accounting's events, :mod:`amplify_jax.dp_events`' and the small dataclasses below
(:class:`Gaussian`, :class:`Laplace`, :class:`RandomizedResponse` (eps0, binary), :class:`PoissonSampled`,
:class:`SampledWithoutReplacement`, :class:`SelfComposed`, :class:`Composed`) are accepted alike; code
written for dp_accounting's ``PLDAccountant`` switches with one line::

    acc = amplify_jax.pld.Accountant()        # was: dp_accounting.pld.PLDAccountant()
    acc.compose(event)                        # the same DpEvent objects
    acc.get_epsilon(1e-5)                     # a sound upper bound of eps

Which pair accounts which event under which relation: :mod:`amplify_jax.accounting.pld._events` (each cited).  The
composition is one FFT product of every distinct event's PLD raised to its count (``_compose``), on a shared
grid, for both directions (remove, add); the answer is the worse direction's.  A composition of finite pairs
only (randomized response, discrete Laplace, binary eps0 pairs) is composed exactly on the host instead
(``_events.exact_discrete``) while it has at most 2^18 atoms.  Every answer is also capped by the
composition's largest loss (its pure-DP eps, ``_events.pure_cap``; finite without Gaussians): delta is 0 at
eps at or above it, as it is for the Laplace mechanism.  Degenerate events: NoOp, Poisson sampling at rate 0,
randomized response over one bucket or with a uniform output, an empty batch, a zero sensitivity cost
nothing (eps 0, delta 0); zero noise (and NonPrivate) answers eps = inf, delta = 1.

Grids (issue 28 item 4): an event's noise parameters, Poisson rates and counts may be arrays
(``_events.BATCHABLE``: ``GaussianDpEvent.noise_multiplier``, ``PoissonSampledDpEvent.sampling_probability``,
``SelfComposedDpEvent.count``, ``compose``'s ``count``, ...), and the accountant then accounts one composition
per point of their broadcast shape (``shape``; NumPy's rules, across the events of one call and across
calls).  A query broadcasts with it: ``get_epsilon(delta)`` / ``epsilon(delta)`` answer an array of shape
broadcast(``shape``, delta's shape), each point answering the deltas that fall on it exactly as the
one-composition accountant at that point asked ``epsilon`` of those deltas (a 1-D array) would: the same
items merged the same way, the same pairs, passes and grid choices (its own finer grid where its own check
asks).  The points of one structure (the same kinds of pairs after merging, the same number of query values
up to the padding) run through one compiled program, the accountant's kernel vmapped over the points
(``_eps_kernel_grid``), in chunks of a fixed size; its values equal the one-composition kernel's to ~1e-9
relative (XLA rounds the batched sums apart; measured up to 2.2e-8 on 2^10 points), not bit for bit.
Points of finite pairs are composed exactly on the host, point by point.  Arrays where a grid is not taken
(the number of randomized-response buckets, a discrete Laplace sensitivity, data set and batch sizes: each
value a pair of another support size, so a compilation of its own), or that do not broadcast, raise
``UnsupportedEventError`` naming them.

Where it answers differently from dp_accounting 0.6.0's ``PLDAccountant``: a ``RandomizedResponseDpEvent``
composed ``count`` times is composed ``count`` times (dp_accounting composes it once, whatever the count:
10 releases of 4-bucket randomized response at p = 0.5 give delta(1) = 0.940 here, 0.285 there); under
REPLACE_ONE the Poisson-sampled Gaussian takes the replace pair of ``WorGaussianLoss`` (never below
dp_accounting's); the truncated subsampled Gaussian takes the pair of ``_events``' coupling; and
``value_discretization_interval`` is a step to reach, None (the default) the automatic grid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .. import dp_events
from ..._core import validate as V
from ..._core.numerics import float64_jit, x64_scope
from . import _events as E
from ._compose import compose, delta_at, epsilon_at
from ._grid import (
    AUTO_RTOL,
    AUTO_RTOL_DELTA,
    DEFAULT_GRID_SIZE,
    GROUP_BYTES,
    auto_refined_size,
    bytes_per_point,
    check_grid_size,
    points_at_once,
)
from ._mechanisms import RELATIONS, REMOVE, DiscreteLoss
from ._mixture import MixtureLoss, RevealedMixture
from ._queries import DELTA_QUERY_TAIL, TAIL_FRACTION, event
from ._results import PldDelta, PldEpsilon, grid_error, status_of

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


def _pair(kind, relation, par):
    """(mechanism, params) of one item under one direction (``_events``: the pairs and their sources)."""
    if kind == E.DISCRETE:
        p_r, q_r, p_a, q_a = par
        return DiscreteLoss(p_r.shape[0]), ((p_r, q_r) if relation == REMOVE else (p_a, q_a))
    if kind == "mixture":
        return MixtureLoss(relation), par
    if kind == "truncated":
        return RevealedMixture(relation), par
    return event(kind, relation, par[0], par[1])


def _composed_all(kinds, pars, counts, log_tail, n, coarsen=1.0):
    out = []
    for r in RELATIONS:
        evs = [_pair(k, r, pars[i]) for i, k in enumerate(kinds)]
        out.append(compose(tuple(m for m, _ in evs), tuple(p for _, p in evs),
                           tuple(counts[i] for i in range(len(kinds))), n, log_tail, coarsen))
    return out


@float64_jit(static_argnames=("kinds", "n"))
def _eps_kernel(pars, counts, delta, coarsen, kinds, n):
    cs = _composed_all(kinds, pars, counts, jnp.log(TAIL_FRACTION * jnp.min(delta)), n, coarsen)
    up = jnp.max(jnp.stack([epsilon_at(c, delta) for c in cs]), axis=0)
    lo = jnp.max(jnp.stack([epsilon_at(c, delta, "opt") for c in cs]), axis=0)
    bare = jnp.max(jnp.stack([epsilon_at(c, delta, roundoff=False) for c in cs]), axis=0)
    return up, jnp.minimum(lo, up), jnp.minimum(bare, up), jnp.max(jnp.stack([c.h for c in cs]))


@float64_jit(static_argnames=("kinds", "n"))
def _delta_kernel(pars, counts, eps, coarsen, kinds, n):
    cs = _composed_all(kinds, pars, counts, jnp.log(DELTA_QUERY_TAIL), n, coarsen)
    up = jnp.max(jnp.stack([delta_at(c, eps) for c in cs]), axis=0)
    lo = jnp.max(jnp.stack([delta_at(c, eps, "opt") for c in cs]), axis=0)
    bare = jnp.max(jnp.stack([delta_at(c, eps, roundoff=False) for c in cs]), axis=0)
    return up, jnp.minimum(lo, up), jnp.minimum(bare, up), jnp.max(jnp.stack([c.h for c in cs]))


@float64_jit(static_argnames=("kinds", "n"))
def _eps_kernel_grid(pars, counts, delta, coarsen, kinds, n):
    """``_eps_kernel`` at each point of a grid of compositions of one structure (leading axis: the points)."""
    return jax.vmap(lambda p, c, d: _eps_kernel.jitted(p, c, d, coarsen, kinds, n))(pars, counts, delta)


@float64_jit(static_argnames=("kinds", "n"))
def _delta_kernel_grid(pars, counts, eps, coarsen, kinds, n):
    """``_delta_kernel`` at each point of a grid of compositions of one structure."""
    return jax.vmap(lambda p, c, e: _delta_kernel.jitted(p, c, e, coarsen, kinds, n))(pars, counts, eps)


_GRID_KERNELS = {_eps_kernel: _eps_kernel_grid, _delta_kernel: _delta_kernel_grid}


def _grid_chunk(n, items):
    """Points of one call of a grid kernel: ``_grid.points_at_once(n)`` (8 on a CPU up to 2^17 points, 64 on
    an accelerator), halved while the composition's items' working memory (each item is composed on its own
    n-point grid) exceeds ``GROUP_BYTES``.  One shape per grid size and structure, whatever the grid's
    number of points: a grid smaller than a chunk is padded to it (a single point costs a chunk), as the
    front doors' batches are (``_queries._run``)."""
    g = points_at_once(n)
    while g > 1 and g * bytes_per_point(n) * max(items, 1) > GROUP_BYTES:
        g //= 2
    return g


def _on_grid(kernel, pars, c, x, coarsen, kinds, n):
    """``kernel`` (a grid kernel) over G points, in chunks of one shape (the last padded with its last
    point): NumPy (up, lo, bare) (G, K) and h (G,)."""
    g = c.shape[0]
    size = _grid_chunk(n, len(kinds))
    outs = []
    for i in range(0, g, size):
        k = min(size, g - i)

        def cut(a, i=i, k=k):
            a = np.asarray(a)[i:i + k]
            return np.concatenate([a, np.repeat(a[-1:], size - k, axis=0)]) if k < size else a

        outs.append(kernel(jax.tree_util.tree_map(cut, pars), cut(c), cut(x), coarsen, kinds, n))
    return tuple(np.concatenate([np.asarray(o[j])[:min(size, g - i * size)] for i, o in enumerate(outs)])
                 for j in range(4))


#: The least number of query values of one compiled call of the accountant's kernels (``_Core._run``).
_QUERY_BUCKET = 8
#: The largest grid a ``value_discretization_interval`` may ask for (2^20 points).
MAX_INTERVAL_GRID = 1 << 20


def _query_bucket(k: int) -> int:
    """The padded number of query values: the least power of two >= k, at least ``_QUERY_BUCKET``."""
    return max(_QUERY_BUCKET, 1 << max(int(k) - 1, 0).bit_length())


def _merged(items):
    """Identical (kind, parameter, rate) events merged by adding their counts; zero counts dropped."""
    acc = {}
    for kind, a, q, c in items:
        if c > 0:
            acc[(kind, a, q)] = acc.get((kind, a, q), 0) + c
    return acc


def _relation_name(rel) -> str:
    name = getattr(rel, "name", None)
    if name not in ("ADD_OR_REMOVE_ONE", "REPLACE_ONE", "REPLACE_SPECIAL"):
        raise ValueError(f"Expected neighboring_relation in ADD_OR_REMOVE_ONE, REPLACE_ONE, REPLACE_SPECIAL, got "
                         f"neighboring_relation={rel!r}")
    return name


class _Core:
    """A PLD accountant for compositions of different events (dp_accounting's ``PLDAccountant`` interface:
    ``compose``, ``get_epsilon``, ``get_delta``, ``supports``, ``ledger``, ``neighboring_relation``), plus
    ``epsilon`` / ``delta``, which take arrays of query values and add a lower bound and a status.

    ``Accountant(neighboring_relation=ADD_OR_REMOVE_ONE, value_discretization_interval=None, *,
    grid_size=None)``: ``neighboring_relation`` as dp_accounting's (its enum, or
    :class:`amplify_jax.dp_events.NeighboringRelation`); ``value_discretization_interval`` (dp_accounting's
    name): a grid step to reach at least, on up to 2^20 points (the answer is the least of that grid's and
    the default grid's, each sound); None (the default): ``grid_size``'s grid, None being the automatic grid
    of :func:`amplify_jax.pld.dpsgd_epsilon` (its check made for every query value at once, one composition
    serving them all, the finer grid used for all where one asks), or a power of two for one pass on that
    grid.  Events and their pairs: :mod:`amplify_jax.accounting.pld._events`; unsupported events raise
    ``UnsupportedEventError``, bad parameters ValueError naming them (nothing is recorded then).
    """

    _EventError = dp_events.CompositionErrorDetails

    def __init__(self, neighboring_relation=None, value_discretization_interval=None, *, grid_size=None,
                 _base_init=None):
        rel = neighboring_relation if neighboring_relation is not None else self._relations.ADD_OR_REMOVE_ONE
        self._relation = _relation_name(rel)
        if _base_init is not None:
            _base_init(self, rel)
        else:
            self._neighboring_relation = rel
        if value_discretization_interval is not None:
            v = value_discretization_interval
            if isinstance(v, bool) or not (isinstance(v, (int, float, np.integer, np.floating)) and 0 < v < math.inf):
                raise ValueError("Expected value_discretization_interval > 0 and finite (or None: the automatic "
                                 f"grid), got value_discretization_interval={v!r}")
            v = float(v)
        self._interval = None if value_discretization_interval is None else v
        self._n = check_grid_size(grid_size, ())
        self._auto = grid_size is None
        self._shape = ()  # the grid's shape: broadcast of every composed event's (() for one composition)
        self._parts = []  # per compose call: (its shape, [items (kind, a, q, count) at each of its points])
        self._events = []  # the ledger: (event, count)

    # -- dp_accounting's interface -------------------------------------------------------------------------

    @property
    def neighboring_relation(self):
        return self._neighboring_relation

    @property
    def shape(self) -> tuple:
        """The shape of the grid of compositions accounted (() for one composition): the broadcast of the
        array parameters of every event composed (``_events.BATCHABLE``) and of array counts."""
        return self._shape

    def supports(self, event) -> bool:
        return self._maybe_compose(event, 0, False) is None

    def _maybe_compose(self, event, count, do_compose):
        shape, r = E.batch_shape(event)
        if r is None:
            try:
                np.broadcast_shapes(self._shape, shape, np.shape(count))
            except ValueError:
                r = (event, f"the event's grid (shape {shape}) does not broadcast with the accountant's (shape "
                            f"{self._shape})")
        if r is None:
            point = E.at_point(event, (0,) * len(shape), shape)
            r = E.walk(point, self._relation)
            try:
                if r is None:
                    E.walk(point, self._relation, 1, 1.0, [])  # reads the parameters as numbers (a dry run)
            except ValueError:  # a parameter out of its range: compose raises it, naming the parameter
                pass
            except TypeError as exc:  # float() of a sequence where a number is read
                r = (event, f"a parameter is not a number ({exc}); grids of events: array parameters at "
                            f"{E.grid_names()}")
        if r is not None:
            return self._EventError(invalid_event=E.original(r[0]), error_message=r[1])
        if do_compose:
            self._add(event, count)
        return None

    def compose(self, event, count=1):
        """Account ``event`` composed ``count`` times (a positive integer, or an array of them: a grid of
        counts); returns self (calls chain).  An event with array parameters (``_events.BATCHABLE``: noise
        multipliers, rates, counts) is a grid of events, which broadcasts with the grid accounted so far."""
        c = np.asarray(count) if not isinstance(count, bool) else None
        if (c is None or c.dtype.kind not in "iu" or (c < 1).any() or c.size == 0 or
                (c.ndim == 0 and not isinstance(count, (int, np.integer)))):
            raise ValueError(f"Expected count to be a positive integer (or an array of them), got count={count!r}")
        err = self._maybe_compose(event, count, False)
        if err is not None:
            raise self._unsupported(f"Unsupported event: {event}. Error: [{err.error_message}] caused by subevent "
                                    f"{err.invalid_event}.")
        self._add(event, count if c.ndim else int(count))
        return self

    def _add(self, event, count):
        ev_shape, _ = E.batch_shape(event)
        shape = tuple(np.broadcast_shapes(ev_shape, np.shape(count)))
        counts = np.broadcast_to(np.asarray(count), shape)
        points = []
        for idx in np.ndindex(*shape):
            items = []
            E.walk(E.at_point(event, idx, shape) if ev_shape else event, self._relation, int(counts[idx]), 1.0,
                   items)
            points.append(items)
        new = tuple(np.broadcast_shapes(self._shape, shape))
        if self._relation == "ADD_OR_REMOVE_ONE":
            for b in range(int(np.prod(new, dtype=np.int64))):
                E.one_relation(self._items_at(b, new) + points[_flat_index(shape, new, b)])
        self._parts.append((shape, points))
        self._shape = new
        self._record(event, count)

    def _items_at(self, b, shape=None):
        """The items of every part at the flat point ``b`` of the grid ``shape`` (the accountant's)."""
        shape = self._shape if shape is None else shape
        return [it for s, pts in self._parts for it in pts[_flat_index(s, shape, b)]]

    @property
    def _items(self):
        """Every item of the composition (one point; the first point of a grid)."""
        return self._items_at(0)

    def _record(self, event, count):
        if np.ndim(count) or E.batch_shape(event)[0] != ():  # a grid: its own ledger entry, never merged
            self._events.append((event, count) if not np.ndim(count) else
                                (self._event_types.SelfComposedDpEvent(event, count), 1))
        else:
            dp_events.record_event(self._events, event, count)

    @property
    def ledger(self):
        """The composed event accounted so far (NoOp when empty), in the events' own vocabulary."""
        return dp_events.ledger_event(self._events, self._event_types)

    def get_epsilon(self, target_delta):
        """The sound eps at ``target_delta`` in [0, 1] (dp_accounting's name): an upper bound of the true eps
        (inf where none is certified).  A float for one composition and a scalar delta; else an array of
        shape broadcast(``shape``, delta's shape) (see :meth:`epsilon`)."""
        out = self.epsilon(target_delta).epsilon
        return float(out[0]) if not self._shape and np.ndim(target_delta) == 0 else \
            out.reshape(np.broadcast_shapes(self._shape, np.shape(target_delta)))

    def get_delta(self, target_epsilon):
        """The sound delta at ``target_epsilon`` >= 0 (inf allowed; dp_accounting's name): an upper bound of
        the true delta; a float or an array as :meth:`get_epsilon`."""
        out = self.delta(target_epsilon).delta
        return float(out[0]) if not self._shape and np.ndim(target_epsilon) == 0 else \
            out.reshape(np.broadcast_shapes(self._shape, np.shape(target_epsilon)))

    # -- queries ---------------------------------------------------------------------------------------------

    @staticmethod
    def _state(items):
        """(non_private, merged items of the grid, pure cap, exact atoms or None) of one point's items."""
        non_private = any(k == E.NON_PRIVATE for k, _, _, _ in items)
        m = _merged([it for it in items if it[0] != E.NON_PRIVATE])
        cap = E.pure_cap(m)
        return non_private, m, cap, (E.exact_discrete(m) if m else None)

    @staticmethod
    def _kernel_inputs(m):
        kinds, pars = [], []
        for (kind, a, q) in m:
            pair = E.discrete_pairs(kind, a, q) if kind == E.DISCRETE else None
            if pair is not None:
                kinds.append(E.DISCRETE)
                pars.append(tuple(np.asarray(x, dtype=np.float64) for x in pair))
            elif kind == "truncated":
                kinds.append(kind)
                pars.append(tuple(np.float64(v) for v in (a[0], a[1], q, a[2])))
            elif kind == "mixture":
                kinds.append(kind)
                pars.append((np.asarray(a[0], dtype=np.float64), np.asarray(a[1], dtype=np.float64), np.float64(a[2])))
            else:
                kinds.append(kind)
                pars.append((np.float64(a), np.float64(q)))
        return tuple(kinds), tuple(pars), np.array(list(m.values()), dtype=np.float64)

    def _passes(self, run, real, rtol):
        """The accountant's one choice of passes, for ``_run`` (one composition) and ``_run_grid`` (many):
        ``run(coarsen, n, idx)`` is the kernel's (up, lo, bare) (P, K) and step h (P,) at the points ``idx``
        (None: all P), ``real`` (P, K) the query values that are not padding.  The automatic grid (its check
        at h and 2h on ``DEFAULT_GRID_SIZE`` points, ``_results.grid_error``, then each point's finer grid
        where its own check asks, from its real query values), one grid, or ``DEFAULT_GRID_SIZE`` and the grid
        that reaches ``value_discretization_interval`` from each point's own step.  Each point answers the
        least of its passes' upper values and the largest of their lower values (each a bound of the truth).
        Returns NumPy (up, lo) (P, K)."""
        n = DEFAULT_GRID_SIZE if self._interval else self._n
        u1, l1, b1, h = run(1.0, n, None)
        up, lo = u1, l1
        sizes = np.zeros(u1.shape[0], dtype=np.int64)
        if self._interval:
            need = h > self._interval
            sizes[need] = [min(MAX_INTERVAL_GRID, 1 << int(math.ceil(math.log2(n * v / self._interval))))
                           for v in h[need]]
        elif self._auto:
            u2, l2, b2, _ = run(2.0, DEFAULT_GRID_SIZE, None)
            per = auto_refined_size(grid_error(u1, b1, u2, b2), u1, (), rtol)
            sizes = np.max(np.where(real, per, 0), axis=1)
            up, lo = np.minimum(u1, u2), np.maximum(l1, l2)
        for size in np.unique(sizes[sizes > 0]):
            idx = np.flatnonzero(sizes == size)
            uf, lf, _, _ = run(1.0, int(size), idx)
            up[idx], lo[idx] = np.minimum(up[idx], uf), np.maximum(lo[idx], lf)
        return up, lo

    def _run(self, kernel, m, x, rtol):
        """(up, lo) of ``kernel`` at the query values x for one composition (``_passes``).  The query values
        are padded (with the last one) to a power of two, at least ``_QUERY_BUCKET``: a few compiled shapes
        serve every number of them."""
        kinds, pars, c = self._kernel_inputs(m)
        k = x.size
        x = np.pad(x, (0, _query_bucket(k) - k), mode="edge")

        def run(coarsen, n, idx):
            out = kernel(pars, c, x, coarsen, kinds, n)
            return (*(np.array(v, dtype=np.float64)[None] for v in out[:3]), np.array([float(out[3])]))

        with x64_scope():
            up, lo = self._passes(run, (np.arange(x.size) < k)[None], rtol)
        return up[0, :k], lo[0, :k]

    def _run_grid(self, kernel, jobs, rtol):
        """``_run`` for many points at once: ``jobs`` a list of (merged items, query values); the points of
        one structure (kinds, the pairs' shapes, the padded number of queries) go through the grid kernel
        together, each with ``_run``'s passes and choices (``_passes``: its own finer grid, from its own
        check): one compiled program per structure and grid size.  Returns [(up, lo)] in the order of
        ``jobs``."""
        grid_kernel = _GRID_KERNELS[kernel]
        groups = {}
        for j, (m, x) in enumerate(jobs):
            kinds, pars, c = self._kernel_inputs(m)
            xp = np.pad(x, (0, _query_bucket(x.size) - x.size), mode="edge")
            key = (kinds, tuple(np.shape(v) for v in jax.tree_util.tree_leaves(pars)), xp.size)
            groups.setdefault(key, []).append((j, pars, c, xp, x.size))
        out = [None] * len(jobs)
        with x64_scope():
            for (kinds, _, _), rows in groups.items():
                pars = jax.tree_util.tree_map(lambda *a: np.stack(a), *[r[1] for r in rows])
                c = np.stack([r[2] for r in rows])
                x = np.stack([r[3] for r in rows])
                real = np.arange(x.shape[1])[None, :] < np.array([r[4] for r in rows])[:, None]

                def run(coarsen, n, idx, pars=pars, c=c, x=x, kinds=kinds):
                    if idx is not None:
                        pars, c, x = jax.tree_util.tree_map(lambda a: a[idx], pars), c[idx], x[idx]
                    return _on_grid(grid_kernel, pars, c, x, coarsen, kinds, n)

                up, lo = self._passes(run, real, rtol)
                for i, r in enumerate(rows):
                    out[r[0]] = (up[i, :r[4]], lo[i, :r[4]])
        return out

    def _rows(self, x):
        """The query values ``x`` (checked, any shape) against the grid: (rows (P, K), the output shape,
        the order mapping rows back) with P the grid's points and K the query values of each point."""
        shape = tuple(np.broadcast_shapes(self._shape, x.shape))
        p = int(np.prod(self._shape, dtype=np.int64))
        owner = np.broadcast_to(np.arange(p).reshape(self._shape), shape).ravel()
        order = np.argsort(owner, kind="stable")
        return np.broadcast_to(x, shape).ravel()[order].reshape(p, -1), shape, order

    def _answer(self, query, x):
        """(up, lo) of the query at the values x (checked): for one composition, 1-D over x raveled; for a
        grid, of shape broadcast(``shape``, x's shape), each point's values computed as one composition's
        1-D query over the values that fall on it."""
        if not self._shape:
            rows, out_shape, order = x.reshape(1, -1), None, None
        else:
            rows, out_shape, order = self._rows(x)
        eps_q = query == "epsilon"
        kernel, rtol = (_eps_kernel, AUTO_RTOL) if eps_q else (_delta_kernel, AUTO_RTOL_DELTA)
        plans, jobs = [], []
        for b, v in enumerate(rows):
            plan = (self._plan_eps if eps_q else self._plan_delta)(self._items_at(b), v)
            if plan[2] is not None:
                jobs.append((plan[3], v[plan[2]]))
            plans.append(plan)
        if not self._shape:
            done = [self._run(kernel, m, v, rtol) for m, v in jobs]
        else:
            done = self._run_grid(kernel, jobs, rtol) if jobs else []
        ups, los, it = np.empty(rows.shape), np.empty(rows.shape), iter(done)
        for b, (up, lo, mask, m, cap) in enumerate(plans):
            if mask is not None:
                up[mask], lo[mask] = next(it)
            if m and eps_q:
                up = np.minimum(up, cap)
            elif m:
                up = np.where(rows[b] < cap, up, 0.0)
            ups[b], los[b] = up, (np.minimum(lo, up) if m else lo)
        if order is None:
            return ups[0], los[0]
        up_out, lo_out = np.empty(ups.size), np.empty(los.size)
        up_out[order], lo_out[order] = ups.ravel(), los.ravel()
        return up_out.reshape(out_shape), lo_out.reshape(out_shape)

    def _plan_eps(self, items, d):
        """One point's eps query at the deltas d (1-D): (up, lo, mask of d for the kernel or None, merged
        items, pure cap), everything but the kernel's values."""
        non_private, m, cap, exact = self._state(items)
        up, lo = np.zeros_like(d), np.zeros_like(d)
        if non_private:  # dp_accounting's convention: inf at every delta, 1 included
            return np.full_like(d, np.inf), lo, None, {}, math.inf
        mask = None
        if m:
            inner = (d > 0.0) & (d < 1.0)
            up = np.where(d == 0.0, cap, 0.0)
            if exact is not None:
                up = np.where(d < 1.0, E.epsilon_of_atoms(exact, d), 0.0)
                lo = up.copy()
            elif inner.any():
                mask = inner
        return up, lo, mask, m, cap

    def _plan_delta(self, items, e):
        """One point's delta query at the epsilons e (1-D), as :meth:`_plan_eps`."""
        non_private, m, cap, exact = self._state(items)
        up, lo = np.zeros_like(e), np.zeros_like(e)
        if non_private:
            return np.ones_like(e), lo, None, {}, math.inf
        mask = None
        if m:
            below = e < cap  # at or above the pure-DP cap delta is 0 (no +inf losses: finite pairs only)
            if exact is not None:
                up = E.delta_of_atoms(exact, e)
                lo = up.copy()
            elif below.any():
                mask = below
        return up, lo, mask, m, cap

    def epsilon(self, delta) -> PldEpsilon:
        """(epsilon, epsilon_lower, status) at each delta in [0, 1].  One composition (``shape`` ()): delta a
        scalar or an array, the answers 1-D over it raveled, one composition serving every value.  A grid
        (array event parameters or counts): the answers have shape broadcast(``shape``, delta's shape) by
        NumPy's rules, each grid point answering the deltas that fall on it exactly as one composition's
        accountant asked for those deltas (1-D) would (up to the last ~9 digits: the compiled program is the
        same one vmapped, whose sums XLA rounds apart)."""
        d = np.asarray(V.probability("delta", delta), dtype=np.float64)
        up, lo = self._answer("epsilon", d if self._shape else d.ravel())
        return PldEpsilon(up, lo, status_of(up))

    def delta(self, epsilon) -> PldDelta:
        """(delta, delta_lower, status) at each epsilon >= 0 (inf allowed); shapes as :meth:`epsilon`."""
        e = np.asarray(epsilon, dtype=np.float64)
        if np.isnan(e).any() or (e < 0).any():
            bad = e[np.isnan(e) | (e < 0)].ravel()[0]
            raise ValueError(f"Expected epsilon >= 0, got epsilon={bad!r}")
        up, lo = self._answer("delta", e if self._shape else e.ravel())
        return PldDelta(up, lo, status_of(up))


def _flat_index(shape, grid, b):
    """The flat index, in an array of ``shape`` broadcast to ``grid``, of the grid's flat point ``b``."""
    if not shape:
        return 0
    idx = np.unravel_index(b, grid)[len(grid) - len(shape):]
    return int(np.ravel_multi_index(tuple(i if s > 1 else 0 for i, s in zip(idx, shape)), shape))


_CLASS = None


def _unsupported_error(base):
    """The library's UnsupportedEventError is also a ValueError (what the accountant raised for these events
    before it was a PrivacyAccountant), so callers catching either keep working."""
    return type("UnsupportedEventError", (base, ValueError), {"__module__": "amplify_jax.pld"})


def _build():
    """The Accountant class: a dp_accounting ``PrivacyAccountant`` where dp_accounting is importable."""
    global _CLASS
    if _CLASS is None:
        def make_init(pa):
            def __init__(self, neighboring_relation=pa.NeighboringRelation.ADD_OR_REMOVE_ONE,
                         value_discretization_interval=None, *, grid_size=None):
                _Core.__init__(self, neighboring_relation, value_discretization_interval, grid_size=grid_size,
                               _base_init=pa.PrivacyAccountant.__init__)
            return __init__

        _CLASS = dp_events.accountant_class(_Core, "amplify_jax.pld", make_init, _unsupported_error)
    return _CLASS


def __getattr__(name):
    """``amplify_jax.pld.Accountant``, built on first use (PEP 562), so that importing amplify_jax does not
    import dp_accounting."""
    if name == "Accountant":
        return _build()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
