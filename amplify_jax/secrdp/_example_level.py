"""Example-level privacy (Decor Sec. 6.2 and App. D: privacy amplification by subsampling, Wang et al. 2019).

One step of Decor is, for one example, a scalar Gaussian mechanism with the effective noise multiplier of
:func:`effective_noise_multiplier`; the subsampled curve comes from the core (``amplify_jax.rdp``), composed over
T steps (unlike the authors' code, which returns the single-step bound:
docs/errata.md#e-secrdp-example-level).
"""

from __future__ import annotations

import numpy as np


from .._core import validate as V
from .._core.domains import check_params
from .._core.numerics import x64_scope
from ..accounting import rdp as core_rdp
from ..accounting.conversions import epsilon_from_rdp
from ..accounting.rdp import SIGMA_RANGE
from . import _params as P
from ._rounding import _dev
from ._step import step_account

_SAMPLINGS = P.SAMPLINGS
#: (Expected) batch sizes b :func:`~amplify_jax.secrdp.example_level_calibrate_eps1` takes.  The effective noise
#: multiplier b sqrt(2 / eps1) (Poisson; b / sqrt(2 eps1) without replacement) must lie in the core's
#: ``rdp.SIGMA_RANGE`` [1e-3, 1e10]: in this range of b the budget's search interval of eps1 (1e-12 .. 1e6, cut to
#: that range) keeps a factor >= 50 (b = 1e300 or 1e-300 was refused as "sigma=2e+300", naming neither).  The
#: registry's domain (1 .. 1e8) lies inside.  (:func:`example_level_rdp` checks the multiplier itself.)
BATCH_SIZE_RANGE = (P.ANY_BATCH.domain.lo, P.ANY_BATCH.domain.hi)


def _check_effective_sigma(sig, **named):
    """Refuse an effective noise multiplier outside the core's ``rdp.SIGMA_RANGE``, naming the inputs it comes
    from (``named``: the accountant's parameters and batch_size) and their values at the first offending point."""
    sig = np.asarray(sig)
    bad = ~((sig >= SIGMA_RANGE[0]) & (sig <= SIGMA_RANGE[1]))
    if np.any(bad):
        i = tuple(int(j) for j in np.argwhere(bad)[0]) if sig.ndim else ()
        vals = ", ".join(f"{k}={np.broadcast_to(np.asarray(v, dtype=float), sig.shape)[i].item()!r}"
                         for k, v in named.items())
        raise ValueError(f"Expected {', '.join(named)} whose effective noise multiplier is in rdp.SIGMA_RANGE "
                         f"[{SIGMA_RANGE[0]:g}, {SIGMA_RANGE[1]:g}], got {vals} (noise multiplier {sig[i].item()!r}).")


def effective_noise_multiplier(eps1, *, clip, batch_size, sampling="poisson"):
    """The noise multiplier of the scalar Gaussian mechanism that one step of Decor is, for one example.

    Whitening by Sigma_H^{-1/2} turns the shared vector into N(mean, I); a change of the user's input by a
    vector g moves the whitened mean by ||g|| sqrt([Sigma_H^{-1}]_ii).  With d = max_i [Sigma_H^{-1}]_ii =
    eps1 / (2 C^2) (eps1 from the accountant at clip C):

    - "poisson" (add/remove one example, each example sampled independently with rate q, the sum of clipped
      per-example gradients divided by the expected batch size b): the shift is at most (C/b) sqrt(d), so the
      step is the Poisson-subsampled Gaussian of Mironov-Talwar-Zhang with sigma = b / (C sqrt(d))
      = b sqrt(2 / eps1) (sensitivity 1).
    - "without_replacement" (replace one example, fixed batch of b out of m, mean of b clipped gradients):
      the shift is at most (2C/b) sqrt(d), sigma = b / (2 C sqrt(d)) = b / sqrt(2 eps1) (sensitivity 1): the
      base curve is alpha eps1 / b^2, which is the authors' "clip / batch_size" substitution (Decor App. D,
      Wang et al. 2019).
    """
    e = V.positive("eps1", eps1)
    cl = V.positive("clip", clip)
    b = V.positive("batch_size", batch_size)
    V.one_of("sampling", sampling, _SAMPLINGS)
    V.broadcastable(eps1=e, clip=cl, batch_size=b)
    if sampling == "poisson":
        return b * np.sqrt(2.0 / e)
    return b / np.sqrt(2.0 * e)


def _subsampled_curve(orders, q, sigma, sampling):
    """The core's subsampled Gaussian RDP curve at noise multiplier ``sigma`` (sensitivity 1): Poisson
    (Mironov-Talwar-Zhang) or without replacement (Wang-Balle-Kasiviswanathan Thm 9)."""
    if sampling == "poisson":
        return core_rdp.poisson_subsampled_gaussian_rdp(orders, q=q, sigma=sigma)
    return core_rdp.subsampled_gaussian_wor_rdp(orders, q=q, sigma=sigma)


def example_level_rdp(orders, graph, *, sigma_unc, sigma_cor, clip, batch_size, q, steps=1,
                      sampling="poisson", adversary="eavesdropper", colluders=None):
    """Example-level SecRDP curve of T steps of Decor with subsampled mini-batches (Decor Sec. 6.2 and
    App. D: "privacy amplification by subsampling (Wang et al., 2019)"), through the core:
    ``amplify_jax.rdp.poisson_subsampled_gaussian_rdp`` (sampling="poisson") or
    ``amplify_jax.rdp.subsampled_gaussian_wor_rdp`` (Wang-Balle-Kasiviswanathan Thm 9, "without_replacement";
    integer orders exact, fractional ones interpolated by convexity), with the effective noise multiplier of
    :func:`effective_noise_multiplier`; composed over ``steps``.  Unlike the authors' code, which returns the
    single-step subsampled bound (docs/errata.md#e-secrdp-example-level), the T steps are composed here.
    The effective noise multiplier must lie in ``rdp.SIGMA_RANGE`` (a ValueError naming sigma_unc, sigma_cor,
    clip and batch_size otherwise).
    """
    a = V.orders("orders", orders)
    q, t, b = check_params((P.ANY_Q, P.ANY_STEPS, P.ANY_BATCH), broadcast=False, q=q, steps=steps,
                           batch_size=batch_size)  # before the accountant runs; joint shapes checked below
    V.one_of("sampling", sampling, _SAMPLINGS)
    acc = step_account(graph, sigma_unc=sigma_unc, sigma_cor=sigma_cor, clip=clip, adversary=adversary,
                       colluders=colluders)
    eps1 = np.asarray(acc.eps1)
    sig = effective_noise_multiplier(eps1, clip=clip, batch_size=b, sampling=sampling)
    _check_effective_sigma(sig, sigma_unc=sigma_unc, sigma_cor=sigma_cor, clip=clip, batch_size=b)
    V.broadcastable(steps=t, q=q, effective_noise_multiplier=sig)
    curve = _subsampled_curve(a, q, sig, sampling)
    with x64_scope():
        return _dev(t[..., None] * np.asarray(curve))


def example_level_epsilon(graph, *, sigma_unc, sigma_cor, clip, batch_size, q, steps, delta,
                          sampling="poisson", adversary="eavesdropper", colluders=None, orders=None,
                          method="balle2020"):
    """Example-level eps after T steps (curve of :func:`example_level_rdp`, converted by the core's
    ``epsilon_from_rdp``).  Default orders: 1.1 .. 256 (integers 2..256 for "without_replacement")."""
    if orders is None:
        orders = _example_orders(sampling)
    a = V.orders("orders", orders)
    check_params((P.DELTA,), delta=delta)  # before the accountant runs (epsilon_from_rdp checks it again)
    curve = example_level_rdp(a, graph, sigma_unc=sigma_unc, sigma_cor=sigma_cor, clip=clip,
                              batch_size=batch_size, q=q, steps=steps, sampling=sampling,
                              adversary=adversary, colluders=colluders)
    return epsilon_from_rdp(a, curve, delta=delta, method=method).epsilon


def _example_orders(sampling):
    if sampling == "poisson":
        return np.concatenate([np.linspace(1.1, 1.9, 9), np.arange(2.0, 65.0), np.geomspace(66.0, 256.0, 20)])
    return np.arange(2.0, 257.0)
