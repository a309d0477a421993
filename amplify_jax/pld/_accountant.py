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

Which pair accounts which event under which relation: :mod:`amplify_jax.pld._events` (each cited).  The
composition is one FFT product of every distinct event's PLD raised to its count (``_compose``), on a shared
grid, for both directions (remove, add); the answer is the worse direction's.  A composition of finite pairs
only (randomized response, discrete Laplace, binary eps0 pairs) is composed exactly on the host instead
(``_events.exact_discrete``) while it has at most 2^18 atoms.  Every answer is also capped by the
composition's largest loss (its pure-DP eps, ``_events.pure_cap``; finite without Gaussians): delta is 0 at
eps at or above it, as it is for the Laplace mechanism.  Degenerate events: NoOp, Poisson sampling at rate 0,
randomized response over one bucket or with a uniform output, an empty batch, a zero sensitivity cost
nothing (eps 0, delta 0); zero noise (and NonPrivate) answers eps = inf, delta = 1.

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

import jax.numpy as jnp
import numpy as np

from .. import dp_events
from ..numerics import float64_jit, x64_scope
from . import _events as E
from ._compose import compose, delta_at, epsilon_at
from ._grid import AUTO_RTOL, AUTO_RTOL_DELTA, DEFAULT_GRID_SIZE, check_grid_size
from ._mechanisms import RELATIONS, REMOVE, DiscreteLoss
from ._mixture import MixtureLoss, RevealedMixture
from ._queries import DELTA_QUERY_TAIL, TAIL_FRACTION, event
from ._results import PldDelta, PldEpsilon, auto_check, status_of

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
    grid.  Events and their pairs: :mod:`amplify_jax.pld._events`; unsupported events raise
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
        self._items = []  # (kind, a, q, count)
        self._events = []  # the ledger: (event, count)

    # -- dp_accounting's interface -------------------------------------------------------------------------

    @property
    def neighboring_relation(self):
        return self._neighboring_relation

    def supports(self, event) -> bool:
        return self._maybe_compose(event, 0, False) is None

    def _maybe_compose(self, event, count, do_compose):
        r = E.walk(event, self._relation)
        try:
            if r is None:
                E.walk(event, self._relation, 1, 1.0, [])  # reads the parameters as numbers (a dry run)
        except ValueError:  # a parameter out of its range: compose raises it, naming the parameter
            pass
        except TypeError as exc:  # float() of an array parameter: a grid of events is not one event here
            if "0-dimensional" not in str(exc) and "length-1" not in str(exc):
                raise
            r = (event, "the PLD accountant composes events with scalar parameters; for a grid of noise "
                        "multipliers or rates use amplify_jax.pld.dpsgd_epsilon / pld.epsilon (they broadcast), or "
                        "amplify_jax.rdp.Accountant (array parameters)")
        if r is not None:
            return self._EventError(invalid_event=r[0], error_message=r[1])
        if do_compose:
            self._add(event, count)
        return None

    def compose(self, event, count: int = 1):
        """Account ``event`` composed ``count`` (a positive integer) times; returns self (calls chain)."""
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
            raise ValueError(f"Expected count to be a positive integer, got count={count!r}")
        err = self._maybe_compose(event, int(count), False)
        if err is not None:
            raise self._unsupported(f"Unsupported event: {event}. Error: [{err.error_message}] caused by subevent "
                                    f"{err.invalid_event}.")
        self._add(event, int(count))
        return self

    def _add(self, event, count):
        items = []
        E.walk(event, self._relation, int(count), 1.0, items)
        if self._relation == "ADD_OR_REMOVE_ONE":
            E.one_relation(self._items + items)
        self._items.extend(items)
        self._record(event, int(count))

    def _record(self, event, count):
        dp_events.record_event(self._events, event, count)

    @property
    def ledger(self):
        """The composed event accounted so far (NoOp when empty), in the events' own vocabulary."""
        return dp_events.ledger_event(self._events, self._event_types)

    def get_epsilon(self, target_delta) -> float:
        """The sound eps at ``target_delta`` in [0, 1] (dp_accounting's name): an upper bound of the true eps
        (inf where none is certified)."""
        return float(self.epsilon(target_delta).epsilon[0])

    def get_delta(self, target_epsilon) -> float:
        """The sound delta at ``target_epsilon`` >= 0 (inf allowed; dp_accounting's name): an upper bound of
        the true delta."""
        return float(self.delta(target_epsilon).delta[0])

    # -- queries ---------------------------------------------------------------------------------------------

    def _state(self):
        """(non_private, merged items of the grid, pure cap, exact atoms or None)."""
        non_private = any(k == E.NON_PRIVATE for k, _, _, _ in self._items)
        m = _merged([it for it in self._items if it[0] != E.NON_PRIVATE])
        cap = E.pure_cap(m)
        return non_private, m, cap, (E.exact_discrete(m) if m else None)

    def _arrays(self):
        """(kinds, a, q, counts) of the merged items whose parameters are numbers (the continuous pairs)."""
        m = _merged(self._items)
        kinds = tuple(k for k, _, _ in m)
        a = np.array([x for _, x, _ in m], dtype=np.float64)
        q = np.array([x for _, _, x in m], dtype=np.float64)
        c = np.array(list(m.values()), dtype=np.float64)
        return kinds, a, q, c

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

    def _run(self, kernel, m, x, rtol):
        """(up, lo) of ``kernel`` at the query values x: the automatic grid's passes, one grid, or the grid
        that reaches ``value_discretization_interval``.  The query values are padded (with the last one) to
        a power of two, at least ``_QUERY_BUCKET``: a few compiled shapes serve every number of them."""
        kinds, pars, c = self._kernel_inputs(m)
        k = x.size
        x = np.pad(x, (0, _query_bucket(k) - k), mode="edge")
        n = DEFAULT_GRID_SIZE if self._interval else self._n
        with x64_scope():
            out = kernel(pars, c, x, 1.0, kinds, n)
            first = [np.array(v, dtype=np.float64) for v in out[:3]]
            up, lo = first[0], first[1]
            if self._interval:
                h = float(out[3])
                if h > self._interval:
                    size = min(MAX_INTERVAL_GRID, 1 << int(math.ceil(math.log2(n * h / self._interval))))
                    uf, lf = (np.asarray(v, dtype=np.float64) for v in kernel(pars, c, x, 1.0, kinds, size)[:2])
                    up, lo = np.minimum(up, uf), np.maximum(lo, lf)
            elif self._auto:
                def batch(p_, c_, x_, kinds_, n_, coarsen=1.0):  # auto_check's calling convention
                    return kernel(p_, c_, x_, coarsen, kinds_, n_)[:3]

                sizes, up, lo = auto_check(batch, kinds, (pars, c, x), first, k, (), rtol)
                size = int(np.max(sizes))
                if size:
                    uf, lf = (np.asarray(v, dtype=np.float64) for v in kernel(pars, c, x, 1.0, kinds, size)[:2])
                    up, lo = np.minimum(up, uf), np.maximum(lo, lf)
        return up[:k], lo[:k]

    def epsilon(self, delta) -> PldEpsilon:
        """(epsilon, epsilon_lower, status) at each delta in [0, 1] (a scalar or a 1-D array)."""
        from .. import _validate as V

        d = np.atleast_1d(V.probability("delta", delta)).astype(np.float64).ravel()
        non_private, m, cap, exact = self._state()
        up, lo = np.zeros_like(d), np.zeros_like(d)
        if non_private:  # dp_accounting's convention: inf at every delta, 1 included
            up = np.full_like(d, np.inf)
            return PldEpsilon(up, lo, status_of(up))
        if m:
            inner = (d > 0.0) & (d < 1.0)
            up = np.where(d == 0.0, cap, 0.0)
            if exact is not None:
                up = np.where(d < 1.0, E.epsilon_of_atoms(exact, d), 0.0)
                lo = up.copy()
            elif inner.any():
                u, l_ = self._run(_eps_kernel, m, d[inner], AUTO_RTOL)
                up[inner], lo[inner] = u, l_
            up = np.minimum(up, cap)
            lo = np.minimum(lo, up)
        return PldEpsilon(up, lo, status_of(up))

    def delta(self, epsilon) -> PldDelta:
        """(delta, delta_lower, status) at each epsilon >= 0 (inf allowed; a scalar or a 1-D array)."""
        e = np.atleast_1d(np.asarray(epsilon, dtype=np.float64)).ravel()
        if np.isnan(e).any() or (e < 0).any():
            bad = e[np.isnan(e) | (e < 0)][0]
            raise ValueError(f"Expected epsilon >= 0, got epsilon={bad!r}")
        non_private, m, cap, exact = self._state()
        up, lo = np.zeros_like(e), np.zeros_like(e)
        if non_private:
            up = np.ones_like(e)
            return PldDelta(up, lo, status_of(up))
        if m:
            below = e < cap  # at or above the pure-DP cap delta is 0 (no +inf losses: finite pairs only)
            if exact is not None:
                up = E.delta_of_atoms(exact, e)
                lo = up.copy()
            elif below.any():
                u, l_ = self._run(_delta_kernel, m, e[below], AUTO_RTOL_DELTA)
                up[below], lo[below] = u, l_
            up = np.where(below, up, 0.0)
            lo = np.minimum(lo, up)
        return PldDelta(up, lo, status_of(up))


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
