"""Amplification by shuffling: closed forms, the "clones" numerical bound, and the privacy blanket.

- Erlingsson et al. 2019 and Feldman-McMillan-Talwar 2021 (Thm 3.1) closed forms, validity reported
  (:func:`erlingsson_epsilon`, :func:`fmt_closed_form_epsilon`);
- the Feldman-McMillan-Talwar numerical bound, lower and upper (:func:`clones_epsilon`);
- the privacy blanket of Balle, Bell, Gascon, Nissim 2019 with dummy messages (Ladjel et al. Lemma 2,
  Thm 5): :func:`blanket_delta`, :func:`blanket_epsilon` with Hoeffding, Bennett (corrected), exact and
  Monte Carlo evaluations, for generic eps0-LDP, Laplace, k-ary randomized response and Ladjel's target
  randomizer.

Where each paper lives:

- ``_closed_forms.py``: Erlingsson et al. 2019 (Corollary 9 of the arXiv version) and Feldman-McMillan-Talwar
  2021 Thm 3.1 (its formula's one home is :func:`amplify_jax.approx_dp.fmt_closed_form`);
- ``_clones.py``, ``_binomial.py``: Feldman-McMillan-Talwar 2021, the numerical clone bound (the
  reduction of Thm 3.2 and its numerical use in Sec. 4, upper and lower);
- :mod:`amplify_jax.shuffle.blanket`: the privacy blanket (Balle et al. 2019; with dummies, Ladjel,
  Anciaux, Bellet, Scerri App. E: Lemma 2-5, Thm 5, Algorithm 2) and the engine shared with
  ``amplify_jax.traffic`` (``rr_delta``, ``rr_epsilon``, ``rr_delta_traced``); its user-facing functions are
  listed here, in this package's ``__all__`` (their one public home), and its own ``__all__`` is empty.  It
  draws on the private
  ``_blanket_model.py`` (randomizers, properties of L), ``_blanket_concentration.py`` (generic path,
  Hoeffding / Bennett), ``_blanket_exact.py`` (randomized response / target randomizer) and
  ``_blanket_monte_carlo.py`` (Algorithm 2);
- ``_bounds.py``: the family's bounds, declared for the registry.

Corrections of the printed papers applied here (each in docs/errata.md, with the test that shows it): the FMT
condition with ln(4/delta) (Cyffers & Bellet and Liew et al. quote ln(2/delta);
docs/errata.md#e-network-fmt-condition); Ladjel Thm 4/5's a = e^eps - 1 (printed 1 - e^eps;
docs/errata.md#e-traffic-thm4-a) and range b = (1 - sigma) T (1 + e^eps) (docs/errata.md#e-traffic-thm4-b);
Lemma 5's upper end of L with the sign of sigma (1 - e^eps) corrected (docs/errata.md#e-traffic-lemma5); the
Bennett bound of Lemma 3 in its corrected form (docs/errata.md#e-traffic-lemma3-bennett; see
:mod:`amplify_jax.shuffle.blanket`).

Names follow the registry's vocabulary (:mod:`amplify_jax.bounds`): ``epsilon`` is the eps at which a delta is
computed (:func:`erlingsson_delta`, :func:`clones_delta`, :func:`blanket_delta`, :func:`blanket_properties`,
``blanket.rr_delta``, ``blanket.rr_delta_traced``), ``delta`` the one at which an eps is.

Each numeric parameter's domain is stated once, as a registry ``Param`` in ``_params.py``: the functions
validate through it (:func:`amplify_jax._core.domains.check_params`) and ``_bounds.py`` declares the registry's
bounds with it, so both refuse the same values with the same message.  eps0 and eps in [0, 700] (e^eps0 finite
in float64; eps0 > 0 where a formula divides by it and in the registry), n in 1..10**9 for the numerical bounds
(their binomial windows) and 1..2**53 for the closed forms, delta in (0, 1), k in 2..10**6, dummies in
0..10**9 (``_params.py`` gives each end's reason).

What ``__all__`` lists (issue 29: one home per name): the bounds (:func:`erlingsson_epsilon`,
:func:`erlingsson_delta`, :func:`fmt_closed_form_epsilon`, :func:`clones_epsilon`, :func:`clones_delta`,
:func:`blanket_epsilon`, :func:`blanket_delta`) and the randomizers they take (:func:`generic_randomizer`,
:func:`laplace_randomizer`, :func:`randomized_response`, :func:`target_randomizer`).  Also importable from here,
documented, but not in ``__all__``: the result types (:class:`ClosedForm`, :class:`ClonesBound`,
:class:`ClonesDelta`, :class:`BlanketDelta`, :class:`BlanketEpsilon`, :class:`BlanketProperties`, and
:class:`BlanketRandomizer`, which the four randomizer functions build; each function names the one it returns),
the intermediate quantities :func:`fmt_validity_bound` (FMT's condition) and :func:`blanket_properties` (the
bounds on L of a randomizer), and the method names ``BLANKET_METHODS``.
"""

from ._closed_forms import erlingsson_delta as erlingsson_delta
from ._closed_forms import erlingsson_epsilon as erlingsson_epsilon
from ._closed_forms import fmt_closed_form_epsilon as fmt_closed_form_epsilon
from ._clones import clones_delta as clones_delta
from ._clones import clones_epsilon as clones_epsilon
from .blanket import blanket_delta as blanket_delta
from .blanket import blanket_epsilon as blanket_epsilon
from .blanket import generic_randomizer as generic_randomizer
from .blanket import laplace_randomizer as laplace_randomizer
from .blanket import randomized_response as randomized_response
from .blanket import target_randomizer as target_randomizer

# importable and documented, not in __all__ (result types, intermediate quantities, method names: see the
# docstring)
from ._closed_forms import ClosedForm, fmt_validity_bound
from ._clones import ClonesBound, ClonesDelta
from .blanket import (BLANKET_METHODS, BlanketDelta, BlanketEpsilon, BlanketProperties, BlanketRandomizer,
                      blanket_properties)

__all__ = [
    "erlingsson_epsilon",
    "erlingsson_delta",
    "fmt_closed_form_epsilon",
    "clones_epsilon",
    "clones_delta",
    "blanket_epsilon",
    "blanket_delta",
    "generic_randomizer",
    "laplace_randomizer",
    "randomized_response",
    "target_randomizer",
]

from . import _bounds  # noqa: F401, E402  (registers the bounds)
