"""Amplification by shuffling: closed forms, the "clones" numerical bound, and the privacy blanket.

- Erlingsson et al. 2019 and Feldman-McMillan-Talwar 2021 (Thm 3.1) closed forms, validity reported
  (:func:`erlingsson_epsilon`, :func:`fmt_closed_form_epsilon`);
- the Feldman-McMillan-Talwar numerical bound, lower and upper (:func:`clones_epsilon`);
- the privacy blanket of Balle, Bell, Gascon, Nissim 2019 with dummy messages (Ladjel et al. Lemma 2,
  Thm 5): :func:`blanket_delta`, :func:`blanket_epsilon` with Hoeffding, Bennett (corrected), exact and
  Monte Carlo evaluations, for generic eps0-LDP, Laplace, k-ary randomized response and Ladjel's target
  randomizer.
"""

from ._closed_forms import (
    ClosedForm,
    erlingsson_delta,
    erlingsson_epsilon,
    fmt_closed_form_epsilon,
    fmt_validity_bound,
)
from ._clones import ClonesBound, ClonesDelta, clones_delta, clones_epsilon
from ._blanket import (
    BLANKET_METHODS,
    BlanketDelta,
    BlanketEpsilon,
    BlanketProperties,
    BlanketRandomizer,
    blanket_delta,
    blanket_epsilon,
    blanket_properties,
    generic_randomizer,
    laplace_randomizer,
    randomized_response,
    target_randomizer,
)

__all__ = [
    "ClosedForm",
    "erlingsson_delta",
    "erlingsson_epsilon",
    "fmt_closed_form_epsilon",
    "fmt_validity_bound",
    "ClonesBound",
    "ClonesDelta",
    "clones_delta",
    "clones_epsilon",
    "BLANKET_METHODS",
    "BlanketDelta",
    "BlanketEpsilon",
    "BlanketProperties",
    "BlanketRandomizer",
    "blanket_delta",
    "blanket_epsilon",
    "blanket_properties",
    "generic_randomizer",
    "laplace_randomizer",
    "randomized_response",
    "target_randomizer",
]

from . import _bounds  # noqa: F401  (registers the bounds)
