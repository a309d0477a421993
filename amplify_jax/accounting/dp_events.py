"""dp_accounting's event vocabulary, for use without dp_accounting installed.

Small frozen dataclasses with the names, fields and field order of ``dp_accounting.dp_event`` (dp-accounting
0.6), so that code written against dp_accounting runs unchanged on :class:`amplify_jax.rdp.Accountant` with
``from amplify_jax import dp_events as dp_event``.  The accountant reads events by their class name and
attributes, so dp_accounting's own events, these and any look-alike are accepted alike; importing this module
never imports dp_accounting.  A field holding a number may hold a NumPy array instead: the accountant answers
for every point of the grid (see :class:`amplify_jax.rdp.Accountant`).
"""

from __future__ import annotations

import enum
import sys
from dataclasses import dataclass

# the events users construct, the relation they pass and the error they catch.  Importable, not in __all__: the
# base class DpEvent and the accountants' helpers (same_event, record_event, ledger_event, accountant_class,
# CompositionErrorDetails)
__all__ = ["NeighboringRelation", "UnsupportedEventError", "NoOpDpEvent", "NonPrivateDpEvent", "UnsupportedDpEvent",
           "GaussianDpEvent", "LaplaceDpEvent", "RandomizedResponseDpEvent", "ZCDpEvent", "SelfComposedDpEvent",
           "ComposedDpEvent", "PoissonSampledDpEvent", "SampledWithoutReplacementDpEvent",
           "SingleEpochTreeAggregationDpEvent", "RepeatAndSelectDpEvent", "DiscreteLaplaceDpEvent",
           "MixtureOfGaussiansDpEvent", "TruncatedSubsampledGaussianDpEvent"]


class NeighboringRelation(enum.Enum):
    """dp_accounting's neighbouring relations (the accountant compares them by name)."""

    ADD_OR_REMOVE_ONE = 1
    REPLACE_ONE = 2
    REPLACE_SPECIAL = 3  # a record replaced by a special (e.g. zero) record: Kairouz et al. 2021, Def. 1.1


class UnsupportedEventError(Exception):
    """An event the accountant cannot account (dp_accounting's exception of the same name where installed)."""


class DpEvent:
    """Base of the events below (dp_accounting's ``DpEvent``)."""


@dataclass(frozen=True)
class NoOpDpEvent(DpEvent):
    """Nothing is released: costs nothing."""


@dataclass(frozen=True)
class NonPrivateDpEvent(DpEvent):
    """A release with no privacy guarantee: eps = inf."""


@dataclass(frozen=True)
class UnsupportedDpEvent(DpEvent):
    """A release no accountant supports."""


@dataclass(frozen=True)
class GaussianDpEvent(DpEvent):
    """Gaussian noise of standard deviation ``noise_multiplier`` times the l2 sensitivity."""

    noise_multiplier: float


@dataclass(frozen=True)
class LaplaceDpEvent(DpEvent):
    """Laplace noise of scale ``noise_multiplier`` times the l1 sensitivity."""

    noise_multiplier: float


@dataclass(frozen=True)
class RandomizedResponseDpEvent(DpEvent):
    """k-ary randomized response: the true bucket w.p. 1 - p, a uniform one of ``num_buckets`` w.p. p."""

    noise_parameter: float
    num_buckets: int


@dataclass(frozen=True)
class ZCDpEvent(DpEvent):
    """A mechanism that is (xi, rho)-zCDP: D_alpha <= xi + rho alpha (Bun and Steinke 2016, Def. 1.1)."""

    rho: float
    xi: float = 0.0


@dataclass(frozen=True)
class SelfComposedDpEvent(DpEvent):
    """``event`` composed ``count`` times (adaptively)."""

    event: object
    count: int


@dataclass(frozen=True)
class ComposedDpEvent(DpEvent):
    """The events composed in turn (adaptively)."""

    events: tuple


@dataclass(frozen=True)
class PoissonSampledDpEvent(DpEvent):
    """``event`` run on a Poisson sample: each record kept independently w.p. ``sampling_probability``."""

    sampling_probability: float
    event: object


@dataclass(frozen=True)
class SampledWithoutReplacementDpEvent(DpEvent):
    """``event`` run on ``sample_size`` records drawn without replacement from ``source_dataset_size``."""

    source_dataset_size: int
    sample_size: int
    event: object


@dataclass(frozen=True)
class SingleEpochTreeAggregationDpEvent(DpEvent):
    """Tree aggregation over one epoch (each record at most once across the trees of ``step_counts`` steps)."""

    noise_multiplier: float
    step_counts: object


@dataclass(frozen=True)
class RepeatAndSelectDpEvent(DpEvent):
    """``event`` run a random number of times (mean ``mean``; ``shape`` 0 logarithmic, 1 geometric, inf
    Poisson, else truncated negative binomial) and the best run released (Papernot and Steinke 2022)."""

    event: object
    mean: float
    shape: float


@dataclass(frozen=True)
class DiscreteLaplaceDpEvent(DpEvent):
    """Discrete Laplace noise P(x) ~ e^{-noise_parameter |x|} on the integers, integer l1 ``sensitivity``."""

    noise_parameter: float
    sensitivity: int


@dataclass(frozen=True)
class MixtureOfGaussiansDpEvent(DpEvent):
    """Gaussian noise of ``standard_deviation`` on a query whose sensitivity is ``sensitivities[i]`` with
    probability ``sampling_probs[i]``."""

    standard_deviation: float
    sensitivities: tuple
    sampling_probs: tuple


@dataclass(frozen=True)
class TruncatedSubsampledGaussianDpEvent(DpEvent):
    """Poisson sampling at ``sampling_probability`` from ``dataset_size`` records, the batch truncated to
    ``truncated_batch_size``, then the Gaussian mechanism at ``noise_multiplier``."""

    dataset_size: int
    sampling_probability: float
    truncated_batch_size: int
    noise_multiplier: float


class CompositionErrorDetails:
    """Why an event cannot be composed (dp_accounting's ``CompositionErrorDetails`` where it is not
    installed): the offending sub-event and a message.  Returned by the accountants' ``_maybe_compose``."""

    def __init__(self, invalid_event, error_message):
        self.invalid_event, self.error_message = invalid_event, error_message

    def __repr__(self):
        return f"CompositionErrorDetails(invalid_event={self.invalid_event!r}, error_message={self.error_message!r})"


def same_event(a, b) -> bool:
    """Whether two events are equal (the accountants' ledgers merge a repeated event into one count); events
    holding arrays compare equal only when they are the same object."""
    if a is b:
        return True
    try:
        return bool(a == b)
    except (ValueError, TypeError):
        return False


def record_event(events: list, event, count: int) -> None:
    """Add ``event`` run ``count`` times to an accountant's ledger ``events`` (a list of (event, count)):
    NoOp dropped, a self-composition unrolled into its count, a repeat of the last event merged into it."""
    name = type(event).__name__
    if name == "NoOpDpEvent" or count == 0:
        return
    if name == "SelfComposedDpEvent":
        return record_event(events, event.event, count * int(event.count))
    if events and same_event(events[-1][0], event):
        events[-1] = (event, events[-1][1] + count)
    else:
        events.append((event, count))


def ledger_event(events: list, types):
    """The composed event of a ledger ``events`` (see :func:`record_event`) in the vocabulary ``types`` (this
    module, or dp_accounting): NoOp when empty, the event itself when alone, else their composition."""
    parts = [e if c == 1 else types.SelfComposedDpEvent(e, c) for e, c in events]
    if not parts:
        return types.NoOpDpEvent()
    return parts[0] if len(parts) == 1 else types.ComposedDpEvent(parts)


def accountant_class(core, module: str, make_init, error=lambda base: base):
    """The ``Accountant`` class of ``module`` built on ``core`` (the accountants' PEP 562 classes): a
    dp_accounting ``PrivacyAccountant`` subclass where dp_accounting is importable, its constructor
    ``make_init(privacy_accountant_module)``, on dp_accounting's events and relations; else ``core`` alone on
    this module's.  ``error(base)``: the UnsupportedEventError class it raises, from the base one."""
    try:
        from dp_accounting import dp_event as events  # lazy: an optional dependency (and ~700 ms to import)
        from dp_accounting import privacy_accountant as pa
    except ImportError:
        pa = None
    if pa is None:
        ns = {"_relations": NeighboringRelation, "_event_types": sys.modules[__name__],
              "_unsupported": staticmethod(error(UnsupportedEventError))}
        bases = (core,)
    else:
        ns = {"__init__": make_init(pa), "_relations": pa.NeighboringRelation, "_event_types": events,
              "_unsupported": staticmethod(error(pa.UnsupportedEventError)),
              "_EventError": pa.PrivacyAccountant.CompositionErrorDetails}
        bases = (core, pa.PrivacyAccountant)
    ns.update({"__module__": module, "__qualname__": "Accountant", "__doc__": core.__doc__})
    return type(bases[-1])("Accountant", bases, ns)  # ABCMeta under dp_accounting
