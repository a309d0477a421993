"""The one table of the named mechanisms: what each takes, and which accountant and registered bound answers it.

``accountants.epsilon`` / ``calibrate_sigma`` (the RDP accountant), ``pld.epsilon`` / ``pld.delta`` (the PLD), the
registry's declarations of this layer (``_bounds.py``) and the command line's ``epsilon`` / ``rdp`` /
``calibrate`` (aliases of ``evaluate`` / ``invert`` on the ids below) all read this table; nothing else lists
the mechanisms.  Data only (no imports): the registry's ids are names here, the bounds are declared in
``_bounds.py``.
"""

from __future__ import annotations

from typing import NamedTuple


class Mechanism(NamedTuple):
    """A mechanism composed over ``steps``: its parameters and, per accountant, the registered bound answering it.

    ``rdp`` / ``curve`` are None where the RDP accountant does not answer it (the PLD's Poisson-subsampled Laplace
    and sampling without replacement); ``sigma_via`` is None where no calibration of sigma is offered."""

    params: tuple  #: its parameters, as keyword arguments and command-line flags (``steps`` last but one or last)
    noise: str  #: the parameter that sets its noise: the PLD's kernel parameter
    pld_kind: str  #: the PLD's kernel (``pld._results.answer``'s ``kind``)
    pld: str  #: the registered bound of its eps on the PLD accountant
    rdp: str | None  #: the registered bound of its eps on the RDP accountant (optimal order)
    curve: str | None  #: the registered bound of its RDP curve composed over steps (the ``rdp`` command)
    #: (mechanism, fixed parameters) whose bounds' ``sigma`` solvers (``rdp``, ``pld``) calibrate its noise: the
    #: Gaussian is the Poisson-subsampled one at q = 1
    sigma_via: tuple | None = None


#: mechanism -> :class:`Mechanism`.  "wor-gaussian": the Gaussian on a batch of a fraction q = m / n drawn without
#: replacement each step, under the replace-one relation; sigma = noise std / ``sensitivity``, the batch function's
#: replace-one sensitivity (default 1; 2 for a sum of gradients clipped to norm C with sigma = std / C); see
#: ``pld._mechanisms.WorGaussianLoss``.  Randomized response is k-ary on the RDP accountant, binary on the PLD.
MECHANISMS = {
    "poisson-gaussian": Mechanism(("sigma", "q", "steps"), "sigma", "gaussian", "pld.dpsgd", "dpsgd",
                                  "rdp.poisson-subsampled-gaussian", ("poisson-gaussian", ())),
    "gaussian": Mechanism(("sigma", "steps"), "sigma", "gaussian", "pld.gaussian", "gaussian", "rdp.gaussian",
                          ("poisson-gaussian", (("q", 1.0),))),
    "poisson-laplace": Mechanism(("scale", "q", "steps"), "scale", "laplace", "pld.poisson-laplace", None, None),
    "laplace": Mechanism(("scale", "steps"), "scale", "laplace", "pld.laplace", "laplace", "rdp.laplace"),
    "randomized-response": Mechanism(("eps0", "k", "steps"), "eps0", "randomized-response",
                                     "pld.randomized-response", "randomized-response", "rdp.randomized-response"),
    "wor-gaussian": Mechanism(("sigma", "q", "steps", "sensitivity"), "sigma", "wor-gaussian", "pld.wor-gaussian",
                              None, None),
}

#: The mechanisms the RDP accountant answers (the command line's ``--mechanism`` choices), in the table's order.
RDP_MECHANISMS = tuple(name for name, m in MECHANISMS.items() if m.rdp is not None)
