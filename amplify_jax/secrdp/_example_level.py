"""Example-level privacy (Decor Sec. 6.2 and App. D: privacy amplification by subsampling, Wang et al. 2019).

One step of Decor is, for one example, a scalar Gaussian mechanism with the effective noise multiplier of
:func:`effective_noise_multiplier`; the subsampled curve comes from the core (``amplify_jax.rdp``), composed over
T steps (unlike the authors' code, which returns the single-step bound:
docs/errata.md#e-secrdp-example-level).
"""

from __future__ import annotations

import numpy as np

import jax.numpy as jnp

from .. import _validate as V
from .._compat import renamed_params
from ..numerics import x64_scope
from ._step import step_account

_SAMPLINGS = ("poisson", "without_replacement")


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
    from .. import rdp as core_rdp

    if sampling == "poisson":
        return core_rdp.poisson_subsampled_gaussian_rdp(orders, q=q, sigma=sigma)
    return core_rdp.subsampled_gaussian_wor_rdp(orders, q=q, sigma=sigma)


@renamed_params(sampling_rate="q")
def example_level_rdp(orders, graph, *, sigma_unc, sigma_cor, clip, batch_size, q, steps=1,
                      sampling="poisson", adversary="eavesdropper", colluders=None):
    """Example-level SecRDP curve of T steps of Decor with subsampled mini-batches (Decor Sec. 6.2 and
    App. D: "privacy amplification by subsampling (Wang et al., 2019)"), through the core:
    ``amplify_jax.rdp.poisson_subsampled_gaussian_rdp`` (sampling="poisson") or
    ``amplify_jax.rdp.subsampled_gaussian_wor_rdp`` (Wang-Balle-Kasiviswanathan Thm 9, "without_replacement";
    integer orders exact, fractional ones interpolated by convexity), with the effective noise multiplier of
    :func:`effective_noise_multiplier`; composed over ``steps``.  Unlike the authors' code, which returns the
    single-step subsampled bound (docs/errata.md#e-secrdp-example-level), the T steps are composed here.
    """
    a = V.orders("orders", orders)
    q = V.unit_open("q", q)
    t = V.integer("steps", steps, minimum=1).astype(np.float64)
    V.one_of("sampling", sampling, _SAMPLINGS)
    acc = step_account(graph, sigma_unc=sigma_unc, sigma_cor=sigma_cor, clip=clip, adversary=adversary,
                       colluders=colluders)
    eps1 = np.asarray(acc.eps1)
    sig = effective_noise_multiplier(eps1, clip=clip, batch_size=batch_size, sampling=sampling)
    V.broadcastable(steps=t, q=q, effective_noise_multiplier=sig)
    curve = _subsampled_curve(a, q, sig, sampling)
    with x64_scope():
        return jnp.asarray(t)[..., None] * curve


@renamed_params(sampling_rate="q")
def example_level_epsilon(graph, *, sigma_unc, sigma_cor, clip, batch_size, q, steps, delta,
                          sampling="poisson", adversary="eavesdropper", colluders=None, orders=None,
                          method="balle2020"):
    """Example-level eps after T steps (curve of :func:`example_level_rdp`, converted by the core's
    ``epsilon_from_rdp``).  Default orders: 1.1 .. 256 (integers 2..256 for "without_replacement")."""
    from ..conversions import epsilon_from_rdp

    if orders is None:
        orders = _example_orders(sampling)
    a = V.orders("orders", orders)
    curve = example_level_rdp(a, graph, sigma_unc=sigma_unc, sigma_cor=sigma_cor, clip=clip,
                              batch_size=batch_size, q=q, steps=steps, sampling=sampling,
                              adversary=adversary, colluders=colluders)
    return epsilon_from_rdp(a, curve, delta=delta, method=method).epsilon


def _example_orders(sampling):
    if sampling == "poisson":
        return np.concatenate([np.linspace(1.1, 1.9, 9), np.arange(2.0, 65.0), np.geomspace(66.0, 256.0, 20)])
    return np.arange(2.0, 257.0)
