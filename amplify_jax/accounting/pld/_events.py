"""The PLD accountant's events: the dominating pair each event is accounted by, per neighbouring relation.

An event tree (dp_accounting's ``DpEvent`` classes, :mod:`amplify_jax.dp_events`' look-alikes or the
accountant's own small dataclasses, all read by class name and attributes) is walked once by :func:`walk`:
either to check it (no numerics: the error details dp_accounting's ``_maybe_compose`` returns) or to flatten
it into items ``(kind, a, q, count)`` that the kernels compose:

- ``"gaussian"`` (a = noise multiplier over the shift of the pair, q = Poisson rate),
  ``"laplace"`` (a = scale), ``"randomized-response"`` (a = eps0, binary) and ``"wor-gaussian"``
  (``_mechanisms.WorGaussianLoss``, one symmetric pair): the pairs of ``_queries.event``;
- ``"discrete"``: a finite pair given by its pmfs, ``a = (p_remove, q_remove, p_add, q_add)`` (tuples), each
  the exact output laws of the event on a worst pair of neighbouring inputs (``_mechanisms.DiscreteLoss``);
- ``"non-private"``: the event's output reveals the record (zero noise, or noise below the PLD's range):
  eps = inf, delta = 1 (a sound answer for any mechanism).

Pairs, by relation (dp_accounting's ``PLDAccountant`` answers the same events under the same relations):

- Gaussian, noise multiplier s (its standard deviation over the l2 sensitivity of one record):
  ADD_OR_REMOVE_ONE and REPLACE_SPECIAL, N(1, s^2) vs N(0, s^2) (the special record contributes 0);
  REPLACE_ONE, N(-1, s^2) vs N(1, s^2), i.e. the shift-1 pair at s / 2 (one record's contribution moves by up
  to 2; dp_accounting's ``from_gaussian_mechanism``, REPLACE adjacency, has the same pair).
- Poisson-sampled Gaussian: ADD_OR_REMOVE_ONE / REPLACE_SPECIAL, the remove and add pairs
  ((1 - q) N(0) + q N(1), N(0)) and their swap (Mironov, Talwar, Zhang 2019, Sec. 3; Koskela, Jalko,
  Honkela 2020, Sec. 4).  REPLACE_ONE: the symmetric pair of ``WorGaussianLoss`` at s / 2 (its proof, in that
  class's docstring, needs a shared centre c and the three distances |u - c|, |v - c|, |u - v| at most the
  sensitivity; under Poisson sampling the batch without the record is shared and the distances are at most
  1, 1, 2).  dp_accounting uses the shared-centre pair ((1-q) N(0) + q N(-1), (1-q) N(0) + q N(1)) there,
  which that docstring shows is not always above the mechanism; ours is larger (never below).
- Laplace (scale b) and Poisson-sampled Laplace: ADD_OR_REMOVE_ONE / REPLACE_SPECIAL only (Koskela, Jalko,
  Honkela 2020, Sec. 5), as dp_accounting.
- Randomized response over k buckets, noise parameter p (the true bucket w.p. 1 - p, else a uniform one):
  REPLACE_ONE, the output laws on x and x' != x, P = (1 - p + p/k, p/k, (k - 2) p/k) over (x, x', any other)
  and Q = (p/k, 1 - p + p/k, (k - 2) p/k) (Warner 1965; every pair x != x' is this one relabelled);
  REPLACE_SPECIAL, x against the special input whose output is uniform: P = (1 - p + p/k, (k - 1) p/k) over
  (x, not x) and U = (1/k, (k - 1)/k), both directions (dp_accounting's ``from_randomized_response``
  describes the same laws).  Exact pairs: nothing is dominated.
- Discrete Laplace, parameter a, integer sensitivity s: P(x) = tanh(a/2) e^{-a|x|} on the integers against
  the same law shifted by s (Ghosh, Roughgarden, Sundararajan 2009, the geometric mechanism).  The loss
  a(|x - s| - |x|) takes s + 1 values: a s on x <= 0 (P-mass 1 / (1 + e^{-a})), a (s - 2x) at 0 < x < s
  (P-mass tanh(a/2) e^{-a x}), -a s on x >= s (P-mass e^{-a s} / (1 + e^{-a})).  A shift t < s is dominated
  by the shift s (the family has a monotone likelihood ratio, so the Neyman-Pearson tests are thresholds and
  their power grows with the shift).  Symmetric: the add direction is the same pair.
- Binary randomized response at eps0 (the accountant's own ``RandomizedResponse``), any relation: the worst
  pair of every eps0-DP mechanism (Kairouz, Oh, Viswanath 2015), Poisson-sampled as in ``_queries.event``.
- Sampling without replacement of a Gaussian: ``WorGaussianLoss`` (see its docstring) at s / 2 under
  REPLACE_ONE (the shift convention above), and at s under ADD_OR_REMOVE_ONE, where it switches the
  accountant to replace-one with s the noise over the batch function's replace-one sensitivity (the
  accountant's behaviour before it took a relation, kept; Poisson-sampled events are then refused).

- Mixture of Gaussians (standard deviation s, sensitivities c_i >= 0 w.p. w_i): ADD_OR_REMOVE_ONE /
  REPLACE_SPECIAL, N(0, s^2) against sum_i w_i N(c_i, s^2), both directions (``_mixture.MixtureLoss``;
  Choquette-Choo, Ganesh, Steinke, Thakurta 2023, Cor. 4.7), as dp_accounting.

- Truncated subsampled Gaussian (n records, Poisson rate q, batches cut to B records, noise multiplier s):
  couple the two neighbours' samples S of the other records (and the truncation's randomness).  Without
  the record's contribution the two outputs share the centre c = f(trunc(S)); with it (probability q, or
  less once truncated) the centres differ by at most 1 where |S| < B, and by at most 2 where |S| >= B (the
  record may displace another).  Revealing b = [|S| >= B] (same law under both neighbours) only adds
  information, so the pair ((b, x) laws) w_0 (Poisson pair at s, rate q) + w_1 (Poisson pair at s / 2, rate
  q), w_1 = P(|S| >= B) <= P(Binomial(n, q) >= B), dominates each step (joint convexity of the hockey-stick
  divergence over S, and a smaller rate or shift is dominated by a larger one); composed as one pair
  (``_mixture.RevealedMixture``).  Under REPLACE_ONE: the replace pair at s / 2 (``WorGaussianLoss``).
  dp_accounting's ``from_truncated_subsampled_gaussian_mechanism`` mixes the same two PLDs with a finer
  rate for the second; ours is larger (never below).

Not accounted (``UnsupportedEventError``, honest): discrete Gaussian, and every event
dp_accounting's PLD accountant does not take either (zCDP, tree aggregation, repeat-and-select...).
"""

from __future__ import annotations

import math

import numpy as np

from ._results import EPS0_RANGE, check_parameter

__all__ = ["walk", "one_relation", "discrete_pairs", "pure_cap", "exact_discrete", "delta_of_atoms",
           "epsilon_of_atoms", "NON_PRIVATE", "DISCRETE", "BATCHABLE", "batch_shape", "at_point", "original",
           "grid_names"]

NON_PRIVATE = "non-private"
DISCRETE = "discrete"

_AOR, _RO, _RS = "ADD_OR_REMOVE_ONE", "REPLACE_ONE", "REPLACE_SPECIAL"


def kind_of(event) -> str:
    """The event's class name without ``DpEvent`` (dp_accounting's and amplify_jax's names alike)."""
    if isinstance(event, _At):
        event = event.event_
    name = type(event).__name__
    return name[:-len("DpEvent")] if name.endswith("DpEvent") else name


# ----------------------------------------------------------------------------------------------------------
# Grids of events: array parameters, one event per point (the accountant's batches)

#: Event attributes that may hold an array: the noise parameters, the Poisson rates and the counts.  An
#: event tree whose such attributes are arrays is a grid of events over their broadcast shape, each point
#: the tree with every array replaced by its element there (:func:`at_point`).
BATCHABLE = {
    "Gaussian": ("noise_multiplier",), "Laplace": ("noise_multiplier",),
    "PoissonSampled": ("sampling_probability",), "SelfComposed": ("count",),
    "RandomizedResponse": ("noise_parameter", "eps0"), "DiscreteLaplace": ("noise_parameter",),
    "MixtureOfGaussians": ("standard_deviation",),
    "TruncatedSubsampledGaussian": ("sampling_probability", "noise_multiplier"),
}
#: Attributes that must stay one number for the whole grid: each fixes the size of a pair's support or of
#: a data set (a grid over them would be one compiled program per value), or is a vector already.
_SCALAR_ONLY = {
    "RandomizedResponse": ("num_buckets",), "DiscreteLaplace": ("sensitivity",),
    "SampledWithoutReplacement": ("source_dataset_size", "sample_size"),
    "TruncatedSubsampledGaussian": ("dataset_size", "truncated_batch_size"),
}


class _At:
    """``event`` at one point ``index`` of the grid ``shape``: its batchable array attributes read as the
    element there (a Python number), its sub-events as views at the same point, every other attribute as
    it is.  :func:`kind_of` reads the event's own class."""

    __slots__ = ("event_", "index_", "shape_")

    def __init__(self, event, index, shape):
        self.event_, self.index_, self.shape_ = event, index, shape

    def __getattr__(self, name):
        v = getattr(self.event_, name)
        if name == "event":
            return _At(v, self.index_, self.shape_)
        if name == "events":
            return tuple(_At(e, self.index_, self.shape_) for e in v)
        if name in BATCHABLE.get(kind_of(self.event_), ()) and np.ndim(v) > 0:
            return np.broadcast_to(np.asarray(v), self.shape_)[self.index_].item()
        return v

    def __repr__(self):
        return f"{self.event_!r} at {self.index_}"


def _subevents(event):
    k = kind_of(event)
    if k == "Composed":
        return list(event.events)
    if k in ("SelfComposed", "PoissonSampled", "SampledWithoutReplacement"):
        return [event.event]
    return []


def batch_shape(event):
    """(shape, None): the broadcast shape of the array attributes in ``event``'s tree (() where none is an
    array); or (None, (sub-event, message)) where an array stands where a grid is not taken (``_SCALAR_ONLY``,
    or any attribute of an event outside ``BATCHABLE``) or the arrays do not broadcast together."""
    shapes = []
    stack = [event]
    while stack:
        ev = stack.pop()
        k = kind_of(ev)
        for name in _SCALAR_ONLY.get(k, ()) + tuple(
                a for a in ("noise_multiplier", "sampling_probability", "count", "noise_parameter", "eps0",
                            "standard_deviation") if a not in BATCHABLE.get(k, ())):
            v = getattr(ev, name, None)
            if v is not None and np.ndim(v) > 0:
                return None, (ev, f"`{name}` of `{type(ev).__name__}` must be one number: the PLD accountant "
                                  f"takes a grid of events over {grid_names()} only (got an array of "
                                  f"shape {np.shape(v)})")
        for name in BATCHABLE.get(k, ()):
            v = getattr(ev, name, None)
            if v is not None and np.ndim(v) > 0:
                shapes.append(np.shape(v))
        stack.extend(_subevents(ev))
    try:
        return tuple(np.broadcast_shapes(*shapes)) if shapes else (), None
    except ValueError:
        return None, (event, f"the array parameters of the event do not broadcast together (shapes {shapes})")


def grid_names():
    """The batchable attributes, named for the messages."""
    return ", ".join(f"{k}.{a}" for k, names in BATCHABLE.items() for a in names)


def original(event):
    """The event a point view (:func:`at_point`) was made from; any other event itself."""
    return event.event_ if isinstance(event, _At) else event


def at_point(event, index, shape):
    """``event`` at the point ``index`` (a tuple) of its grid ``shape`` (:func:`batch_shape`); the event
    itself where the shape is ()."""
    return event if shape == () else _At(event, index, shape)


def _relation_msg(allowed, what, rel):
    a = " or ".join(f"`{r}`" for r in allowed)
    return f"neighboring_relation must be {a} for `{what}`. Found {rel}."


def _int(name, x, minimum=0):
    if isinstance(x, bool) or int(x) != x or x < minimum:
        raise ValueError(f"Expected {name} to be an integer >= {minimum}, got {name}={x!r}")
    return int(x)


def _unit(name, x, lo_open=False):
    v = float(x)
    if not (0.0 < v <= 1.0 if lo_open else 0.0 <= v <= 1.0):
        raise ValueError(f"Expected {name} in {'(' if lo_open else '['}0, 1], got {name}={x!r}")
    return v


def _noise(kind, x, name):
    """(kind, value) for a noise parameter: NON_PRIVATE at 0 (the output reveals the record), ValueError naming
    it when negative, NaN or outside the PLD's range otherwise (``_results.check_parameter``)."""
    v = float(x)
    if v == 0.0:
        return NON_PRIVATE, v
    check_parameter(kind, v, name)
    return kind, v


def walk(event, rel, count=1, q=1.0, out=None, legacy_wor=True):
    """Walk ``event`` under the relation named ``rel``.  ``out`` None: check only, returning None or
    (invalid sub-event, message) (no numerics, no ValueError).  ``out`` a list: append the items
    (kind, a, q, count) and return None; a bad parameter raises ValueError naming it."""
    k = kind_of(event)
    do = out is not None

    def err(msg, ev=event):
        return ev, msg

    if k == "NoOp":
        return None
    if k == "NonPrivate":
        if do:
            out.append((NON_PRIVATE, 0.0, 1.0, count))
        return None
    if k == "Composed":
        for e in event.events:
            r = walk(e, rel, count, q, out, legacy_wor)
            if r is not None:
                return r
        return None
    if k == "SelfComposed":
        c = _int("count", event.count) if do else 1
        return walk(event.event, rel, count * c, q, out, legacy_wor)
    if k == "PoissonSampled":
        sub = kind_of(event.event)
        if sub not in ("Gaussian", "Laplace"):
            nested = "Nested sampling is not supported. " if "Sampled" in sub else ""
            return err(f"{nested}Subevent of `PoissonSampledEvent` must be either `GaussianDpEvent` or `LaplaceDpEvent`. "
                       f"Found {event.event}.")
        if sub == "Laplace" and rel == _RO:
            return err(_relation_msg((_AOR, _RS), "PoissonSampledDpEvent` of a `LaplaceDpEvent", rel))
        if do:
            p = _unit("sampling_probability", event.sampling_probability)
            if p > 0.0:
                walk(event.event, rel, count, p, out, legacy_wor)
        return None
    if k == "SampledWithoutReplacement":
        if rel == _RS or (rel == _AOR and not legacy_wor):
            return err(_relation_msg((_RO,), "SampledWithoutReplacementDpEvent", rel))
        if kind_of(event.event) != "Gaussian":
            return err("Subevent of `SampledWithoutReplacementDpEvent` must be a `GaussianDpEvent` (sampling "
                       f"without replacement of the Gaussian mechanism only). Found {event.event}.")
        if do:
            n_all = _int("source_dataset_size", event.source_dataset_size, 1)
            m = event.sample_size
            if isinstance(m, bool) or int(m) != m or not 0 <= m <= n_all:
                raise ValueError(f"Expected an integer sample_size in [0, source_dataset_size={n_all}], got "
                                 f"sample_size={m!r}")
            if m > 0:  # a batch of 0 records: the output does not depend on the data
                s = float(event.event.noise_multiplier)
                kind, v = _noise("wor-gaussian", s / 2.0 if rel == _RO else s, "sigma")
                out.append((kind, v, int(m) / n_all, count))
        return None
    if k == "Gaussian":
        if do:
            s = float(event.noise_multiplier)
            if rel == _RO and q == 1.0:
                kind, v = _noise("gaussian", s / 2.0, "sigma")  # N(-1) vs N(1): the shift-1 pair at s / 2
            elif rel == _RO:
                kind, v = _noise("wor-gaussian", s / 2.0, "sigma")  # Poisson-sampled, replace-one (see above)
            else:
                kind, v = _noise("gaussian", s, "sigma")
            out.append((kind, v, q, count))
        return None
    if k == "Laplace":
        if rel == _RO:
            return err(_relation_msg((_AOR, _RS), "LaplaceDpEvent", rel))
        if do:
            kind, v = _noise("laplace", float(event.noise_multiplier), "scale")
            out.append((kind, v, q, count))
        return None
    if k == "RandomizedResponse":
        if not hasattr(event, "num_buckets"):  # the accountant's own binary RandomizedResponse(eps0)
            if do:
                a = float(event.eps0)
                if not a >= 0.0:
                    raise ValueError(f"Expected eps0 >= 0, got eps0={event.eps0!r}")
                if a > EPS0_RANGE[1]:
                    out.append((NON_PRIVATE, a, q, count))  # beyond the PLD's range: inf is sound
                elif a > 0.0:
                    out.append(("randomized-response", float(check_parameter("randomized-response", a)), q, count))
            return None
        if rel == _AOR:
            return err(_relation_msg((_RO, _RS), "RandomizedResponseDpEvent", rel))
        if do:
            p = _unit("noise_parameter", event.noise_parameter)
            kb = _int("num_buckets", event.num_buckets, 1)
            if kb > 1 and p < 1.0:  # one bucket, or a uniform output: nothing depends on the record
                out.append((NON_PRIVATE, p, q, count) if p == 0.0 else
                           (DISCRETE, _rr_pair(p, kb, rel), q, count))
        return None
    if k == "DiscreteLaplace":
        if rel == _RO:
            return err(_relation_msg((_AOR, _RS), "DiscreteLaplaceDpEvent", rel))
        if do:
            a = float(event.noise_parameter)
            if not a >= 0.0 or math.isinf(a):
                raise ValueError(f"Expected noise_parameter >= 0 and finite, got noise_parameter={a!r}")
            s = _int("sensitivity", event.sensitivity)
            if s > 0:
                out.append((NON_PRIVATE, a, q, count) if a == 0.0 else (DISCRETE, _dlap_pair(a, s), q, count))
        return None
    if k == "MixtureOfGaussians":
        if rel == _RO:
            return err(_relation_msg((_AOR, _RS), "MixtureOfGaussiansDpEvent", rel))
        sens = [float(x) for x in event.sensitivities]
        if all(x == 0.0 for x in sens):
            return None  # the output does not depend on the record
        if float(event.standard_deviation) == 0.0:
            if do:
                out.append((NON_PRIVATE, 0.0, q, count))
            return None
        if do:
            out.append(_mixture_item(event, q, count))
        return None
    if k == "TruncatedSubsampledGaussian":
        if do:
            item = _truncated_item(event, rel, count)
            if item is not None:
                out.append(item)
        return None
    return err("Unsupported event.")


def _truncated_item(event, rel, count):
    """The truncated subsampled Gaussian's item (module docstring): NON_PRIVATE at zero noise, None where
    no record can be used, else the Poisson pair at sigma (no truncation possible), the replace pair
    ("wor-gaussian", sigma / 2) under REPLACE_ONE, or ("truncated", (sigma, sigma / 2, tau), q) with tau an
    upper bound of P(Binomial(n, q) >= B)."""
    from scipy import stats  # lazy: scipy.stats takes ~540 ms to import; the PLD needs no other SciPy

    n = _int("dataset_size", event.dataset_size)
    b = _int("truncated_batch_size", event.truncated_batch_size)
    q = _unit("sampling_probability", event.sampling_probability)
    if n == 0 or b == 0 or q == 0.0:
        return None  # no record is ever used
    s = float(event.noise_multiplier)
    if s == 0.0:
        return NON_PRIVATE, 0.0, 1.0, count
    if rel == _RO:
        return ("wor-gaussian", float(check_parameter("wor-gaussian", s / 2.0, "noise_multiplier / 2")), q, count)
    tau = 0.0 if b >= n else min(1.0, float(stats.binom.sf(b - 1, n, q)) * (1.0 + 1e-9) + 1e-300)
    if tau == 0.0:
        return "gaussian", float(check_parameter("gaussian", s, "noise_multiplier")), q, count
    check_parameter("gaussian", s / 2.0, "noise_multiplier / 2")
    return "truncated", (float(check_parameter("gaussian", s, "noise_multiplier")), s / 2.0, tau), q, count


def _mixture_item(event, q, count):
    """("mixture", (sensitivities, probabilities, standard deviation), q, count), zero-probability components
    dropped; ValueError naming a bad parameter."""
    c = np.asarray(event.sensitivities, dtype=np.float64).ravel()
    w = np.asarray(event.sampling_probs, dtype=np.float64).ravel()
    if c.size == 0 or c.shape != w.shape:
        raise ValueError(f"Expected sensitivities and sampling_probs of one length, got sensitivities="
                         f"{event.sensitivities!r}, sampling_probs={event.sampling_probs!r}")
    if not np.all(np.isfinite(c) & (c >= 0)):
        raise ValueError(f"Expected sensitivities >= 0 and finite, got sensitivities={event.sensitivities!r}")
    if not (np.all(w >= 0) and abs(float(np.sum(w)) - 1.0) <= 1e-9):
        raise ValueError(f"Expected sampling_probs >= 0 summing to 1, got sampling_probs={event.sampling_probs!r}")
    kind, s = _noise("gaussian", float(event.standard_deviation), "standard_deviation")
    if kind == NON_PRIVATE:
        return NON_PRIVATE, s, q, count
    keep = w > 0
    return "mixture", (tuple(c[keep].tolist()), tuple(w[keep].tolist()), s), q, count


def one_relation(items):
    """Refuse Poisson-sampled events beside sampled-without-replacement ones under ADD_OR_REMOVE_ONE (the
    legacy replace-one switch): the first are accounted under add/remove, the second under replace-one."""
    wor = any(k == "wor-gaussian" for k, _, _, _ in items)
    poisson = [k for k, _, q, _ in items if k not in ("wor-gaussian", NON_PRIVATE) and q != 1.0]
    if wor and poisson:
        raise ValueError("Expected one neighbouring relation per accountant: a SampledWithoutReplacement event "
                         "(replace-one) cannot be composed with a PoissonSampled event (add/remove, here of "
                         f"{poisson[0]}); use Accountant(neighboring_relation=REPLACE_ONE) for both")


# ----------------------------------------------------------------------------------------------------------
# Finite pairs: (p_remove, q_remove, p_add, q_add), the add direction the remove one swapped


def _rr_pair(p, k, rel):
    """k-ary randomized response's exact output laws (module docstring), as pmf tuples."""
    top = 1.0 - p * (k - 1) / k  # 1 - p + p/k, without cancellation for p near 1
    if rel == _RO:
        pp = [top, p / k] + ([(k - 2) * p / k] if k > 2 else [])
        qq = [p / k, top] + ([(k - 2) * p / k] if k > 2 else [])
    else:
        pp, qq = [top, (k - 1) * p / k], [1.0 / k, (k - 1) / k]
    return tuple(pp), tuple(qq), tuple(qq), tuple(pp)


def _dlap_pair(a, s):
    """Discrete Laplace's loss atoms (module docstring): P-masses of x <= 0, x = 1..s-1, x >= s, and the
    Q-masses P e^{-loss}; symmetric."""
    em = math.exp(-a)
    t = math.tanh(a / 2.0)
    pp = [1.0 / (1.0 + em)] + [t * math.exp(-a * x) for x in range(1, s)] + [math.exp(-a * s) / (1.0 + em)]
    qq = pp[::-1]  # Q(x) = P(x - s): the same masses, the loss values mirrored
    return tuple(pp), tuple(qq), tuple(pp), tuple(qq)


def _subsampled_rr(eps0, q):
    """The binary eps0 pair Poisson-sampled at q (``_queries.event``'s ``randomized-response``), as pmfs."""
    keep = 1.0 / (1.0 + math.exp(-eps0))
    with_r = np.array([keep, 1.0 - keep])
    without = with_r[::-1]
    mixed = q * with_r + (1.0 - q) * without
    return tuple(mixed), tuple(without), tuple(without), tuple(mixed)


def discrete_pairs(kind, a, q):
    """The finite pair of a discrete item (``"discrete"`` or ``"randomized-response"``), else None."""
    if kind == DISCRETE:
        return a
    if kind == "randomized-response":
        return _subsampled_rr(a, q)
    return None


def _atoms(p, q):
    """(finite losses, their P-masses, the P-mass at loss +inf) of one direction's pmfs."""
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    keep = (p > 0) & (q > 0)
    return np.log(p[keep]) - np.log(q[keep]), p[keep], float(np.sum(p[(p > 0) & (q == 0)]))


#: Relative margin of the host computations on finite pairs (a few hundred roundings at most, each <= 2^-53
#: relative): losses are raised and masses multiplied by (1 + _MARGIN), so the answers stay upper bounds.
_MARGIN = 1e-12


def _max_loss(kind, a, q):
    """The largest loss of one item's pair, per direction (remove, add): +inf for the Gaussian pairs."""
    if kind == "laplace":
        return math.log1p(q * math.expm1(1.0 / a)), -math.log1p(q * math.expm1(-1.0 / a))
    pair = discrete_pairs(kind, a, q)
    if pair is None:
        return math.inf, math.inf
    out = []
    for p_, q_ in (pair[:2], pair[2:]):
        loss, _, inf_mass = _atoms(p_, q_)
        out.append(math.inf if inf_mass > 0 else (float(np.max(loss)) if loss.size else 0.0))
    return tuple(out)


def pure_cap(merged):
    """An upper bound of the composition's largest loss (its pure-DP eps; Dwork, Roth 2014, Thm 3.16): the
    sum over items of count x largest loss, the worse direction, rounded up; +inf where a Gaussian enters.
    delta is 0 at eps >= it, and eps at any delta is at most it."""
    tot = [0.0, 0.0]
    for (kind, a, q), c in merged.items():
        for i, m in enumerate(_max_loss(kind, a, q)):
            tot[i] += c * max(m, 0.0)
    cap = max(tot)
    return cap * (1.0 + _MARGIN) + 1e-300 if math.isfinite(cap) else math.inf


# ----------------------------------------------------------------------------------------------------------
# Exact composition of finite pairs (host, NumPy): every composed loss value and its P-mass

#: Most atoms a composition step may hold before the accountant takes the grid instead.
EXACT_MAX_ATOMS = 1 << 18


def _merge(loss, mass):
    """Atoms whose losses agree to 1e-12 (rounding of the sums) merged at the group's largest loss (raised:
    delta only grows)."""
    order = np.argsort(loss, kind="stable")
    loss, mass = loss[order], mass[order]
    new = np.concatenate([[True], np.diff(loss) > _MARGIN * (1.0 + np.abs(loss[1:]))])
    ids = np.cumsum(new) - 1
    out_mass = np.bincount(ids, weights=mass)
    last = np.concatenate([np.nonzero(new)[0][1:] - 1, [loss.size - 1]])
    return loss[last], out_mass


def _convolve(a, b):
    la, ma = a
    lb, mb = b
    if la.size * lb.size > 16 * EXACT_MAX_ATOMS:
        return None
    out = _merge((la[:, None] + lb[None, :]).ravel(), (ma[:, None] * mb[None, :]).ravel())
    return None if out[0].size > EXACT_MAX_ATOMS else out


def _power(atoms, c):
    result, base = (np.zeros(1), np.ones(1)), atoms
    while c:
        if c & 1:
            result = _convolve(result, base)
            if result is None:
                return None
        c >>= 1
        if c:
            base = _convolve(base, base)
            if base is None:
                return None
    return result


def exact_discrete(merged):
    """For a composition of finite pairs only: per direction (losses raised, P-masses raised, P-mass at +inf),
    the composed privacy-loss distribution, exact but for rounding (always to the safe side); None where an
    item is not finite or the atoms would exceed EXACT_MAX_ATOMS."""
    dirs = []
    for d in (0, 1):
        total, inf_keep, span = (np.zeros(1), np.ones(1)), 1.0, 0.0
        for (kind, a, q), c in merged.items():
            pair = discrete_pairs(kind, a, q)
            if pair is None:
                return None
            loss, mass, inf_mass = _atoms(*pair[2 * d: 2 * d + 2])
            span += c * (float(np.max(np.abs(loss))) if loss.size else 0.0)
            powered = _power(_merge(loss, mass), int(c))
            if powered is None:
                return None
            total = _convolve(total, powered)
            if total is None:
                return None
            inf_keep *= (1.0 - inf_mass) ** c
        loss, mass = total
        # the sums' rounding: a few ulps of the largest partial sum, at most sum_i c_i max |l_i|
        dirs.append((loss + _MARGIN * (1.0 + np.abs(loss)) + 1e-13 * span, mass * (1.0 + _MARGIN),
                     min(1.0, (1.0 - inf_keep) * (1.0 + _MARGIN))))
    return dirs


def delta_of_atoms(dirs, eps):
    """delta(eps) = P(L = inf) + sum_l P(L = l) (1 - e^{eps - l})_+, the worse direction, for each eps (1-D)."""
    eps = np.asarray(eps, dtype=np.float64)
    out = np.zeros(eps.shape)
    for loss, mass, inf_mass in dirs:
        with np.errstate(over="ignore", invalid="ignore"):
            w = -np.expm1(np.minimum(eps[:, None] - loss[None, :], 0.0))
        w = np.where(np.isposinf(eps)[:, None], 0.0, w)
        out = np.maximum(out, inf_mass + np.sum(mass[None, :] * w, axis=1) * (1.0 + _MARGIN))
    return np.minimum(out, 1.0)


def epsilon_of_atoms(dirs, delta):
    """The least eps >= 0 with delta_of_atoms(eps) <= delta (an upper bound of the true eps: the bisection
    keeps the end that meets delta), +inf where the mass at +inf alone exceeds delta."""
    delta = np.asarray(delta, dtype=np.float64)
    top = max([float(np.max(lo)) if lo.size else 0.0 for lo, _, _ in dirs] + [0.0])
    inf_mass = max(m for _, _, m in dirs)
    lo = np.zeros(delta.shape)
    hi = np.full(delta.shape, top * (1.0 + _MARGIN) + 1e-300)
    ok0 = delta_of_atoms(dirs, lo) <= delta
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        meets = delta_of_atoms(dirs, mid) <= delta
        hi, lo = np.where(meets, mid, hi), np.where(meets, lo, mid)
    out = np.where(ok0, 0.0, hi)
    return np.where(inf_mass > delta, np.inf, out)
