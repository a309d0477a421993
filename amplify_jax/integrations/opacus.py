"""An Opacus accountant backed by amplify_jax's exact RDP of the Poisson-subsampled Gaussian.

:class:`RDPAccountant` has Opacus's ``IAccountant`` interface (``step(noise_multiplier=, sample_rate=)``,
``get_epsilon(delta)``, ``get_privacy_spent``, ``history`` as Opacus's list of (noise_multiplier,
sample_rate, steps), ``state_dict`` / ``load_state_dict``, ``mechanism()``, ``len``, ``get_optimizer_hook_fn``).
Where Opacus is importable it is a subclass of ``opacus.accountants.IAccountant``; Opacus's
``PrivacyEngine(accountant=...)`` takes a mechanism *name* only, so hand an instance over by attribute::

    engine = opacus.PrivacyEngine()
    engine.accountant = amplify_jax.integrations.opacus.RDPAccountant()

Neither torch nor Opacus is a dependency: the class is built on first use (PEP 562), so importing this module
loads neither.  The history is composed with :class:`amplify_jax.rdp.Accountant` (one Poisson-sampled Gaussian
event per distinct (noise_multiplier, sample_rate), add/remove relation), exact at every order (Mironov,
Talwar, Zhang 2019): it agrees with Opacus's ``RDPAccountant`` on the same orders where Opacus's series is
right, is below it where its fractional-order series is loose, and above it where that series under-states
(q = 0.4, sigma = 12, alpha = 58.75); the conversion is the same bound (Balle et al. 2020), rounded up.
"""

from __future__ import annotations

import numbers
from collections import OrderedDict
from copy import deepcopy

import numpy as np

from amplify_jax.accounting import conversions, rdp

__all__ = ["RDPAccountant"]


class _Core:
    """Opacus's RDP accountant interface on amplify_jax's RDP accountant.

    ``orders``: the Rényi orders (default :data:`amplify_jax.rdp.DEFAULT_ORDERS`, a superset of Opacus's
    default alphas ``1 + x/10, x = 1..99`` and ``12..63``).
    """

    def __init__(self, orders=None):
        self.history = []  # Opacus's: [(noise_multiplier, sample_rate, steps)]
        self.orders = orders

    def step(self, *, noise_multiplier: float, sample_rate: float):
        """One optimisation step with this noise multiplier and Poisson sampling rate."""
        for name, x, lo, hi in (("noise_multiplier", noise_multiplier, 0.0, float("inf")),
                                ("sample_rate", sample_rate, 0.0, 1.0)):
            if isinstance(x, bool) or not (isinstance(x, numbers.Real) and lo <= float(x) <= hi):
                raise ValueError(f"Expected {name} in [{lo:g}, {hi:g}], got {name}={x!r}.")
        if self.history and self.history[-1][:2] == (noise_multiplier, sample_rate):
            nm, sr, steps = self.history.pop()
            self.history.append((nm, sr, steps + 1))
        else:
            self.history.append((noise_multiplier, sample_rate, 1))

    def _accountant(self):
        from amplify_jax.accounting import dp_events as E  # lazy: ~10 ms; rdp.Accountant below loads it anyway

        acc = rdp.Accountant(orders=self.orders)
        for nm, sr, steps in self.history:
            acc.compose(E.PoissonSampledDpEvent(float(sr), E.GaussianDpEvent(float(nm))), int(steps))
        return acc

    def get_privacy_spent(self, *, delta: float, alphas=None):
        """(eps, best order) as Opacus's ``RDPAccountant.get_privacy_spent``; ``alphas`` replaces the orders."""
        if alphas is not None:
            saved, self.orders = self.orders, alphas
            try:
                return self.get_privacy_spent(delta=delta)
            finally:
                self.orders = saved
        if not self.history:
            return 0.0, 0.0
        acc = self._accountant()
        eps = acc.get_epsilon(delta)
        return eps, _best_order(acc, eps, delta)

    def get_epsilon(self, delta: float, alphas=None, **kwargs):
        """eps spent so far at ``delta`` (a float)."""
        return float(self.get_privacy_spent(delta=delta, alphas=alphas)[0])

    def __len__(self) -> int:
        return sum(steps for _, _, steps in self.history)

    @classmethod
    def mechanism(cls) -> str:
        return "rdp"

    def state_dict(self, destination=None):
        destination = OrderedDict() if destination is None else destination
        destination["history"] = deepcopy(self.history)
        destination["mechanism"] = self.mechanism()
        return destination

    def load_state_dict(self, state_dict):
        if not state_dict or "history" not in state_dict or "mechanism" not in state_dict:
            raise ValueError("Expected a state_dict with the keys 'history' and 'mechanism', got "
                             f"state_dict={state_dict!r}.")
        if state_dict["mechanism"] != self.mechanism():
            raise ValueError(f"Expected a state_dict of mechanism {self.mechanism()!r}, got "
                             f"mechanism={state_dict['mechanism']!r}.")
        self.history = list(state_dict["history"])

    def get_optimizer_hook_fn(self, sample_rate: float):
        """Opacus's hook: one step per optimiser step, at the optimiser's noise multiplier."""

        def hook_fn(optim):
            self.step(noise_multiplier=optim.noise_multiplier, sample_rate=sample_rate * optim.accumulated_iterations)

        return hook_fn


def _best_order(acc, eps, delta):
    """The order whose conversion gives eps (Opacus reports it beside eps)."""
    a = acc.orders
    ok = (a > 1) & np.isfinite(a) & np.isfinite(acc.rdp)
    if not ok.any() or not 0 < delta < 1:
        return float("nan")
    return float(conversions.epsilon_from_rdp(a[ok], acc.rdp[ok], delta=delta).order)


_CLASS = None


def _build():
    global _CLASS
    if _CLASS is None:
        try:
            from opacus.accountants import IAccountant  # lazy: optional (with torch ~2.6 s to import)
        except ImportError:
            IAccountant = None
        bases = (_Core,) if IAccountant is None else (_Core, IAccountant)
        ns = {"__module__": __name__, "__qualname__": "RDPAccountant", "__doc__": _Core.__doc__}
        _CLASS = type(bases[-1])("RDPAccountant", bases, ns)
    return _CLASS


def __getattr__(name):
    """``RDPAccountant``, built on first use so that importing this module loads neither torch nor Opacus."""
    if name == "RDPAccountant":
        return _build()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
