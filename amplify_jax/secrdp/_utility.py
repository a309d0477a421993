"""The privacy-utility trade-off of Decor's two noise levels (Sec. 5.3, Sec. 6 setup, Eq. 4): the
Metropolis-Hastings mixing matrix (Boyd et al. 2006), the utility cost k_unc sigma_unc^2 + k_cor sigma_cor^2 of
a noise pair (:func:`utility_weights`) and the admissible pair that minimises it (:func:`optimal_noise`, optax
along the frontier of App. D.1's calibration)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

from .._core import validate as V
from .._core.numerics import x64_scope
from .._core.status import Status
from . import _params as P
from ._adversaries import _validate_adversary
from ._calibration import _eps1_fn, _sigma_cor_for_budget, noise_frontier
from ._graph import prepare_graph


class OptimalNoise(NamedTuple):
    """The pair on the frontier minimising ``cost = k_unc sigma_unc^2 + k_cor sigma_cor^2`` (see
    :func:`optimal_noise`), re-checked: eps1 <= eps1_budget."""

    sigma_unc: jax.Array
    sigma_cor: jax.Array
    cost: jax.Array
    eps1: jax.Array
    eps1_budget: jax.Array
    k_unc: jax.Array
    k_cor: jax.Array


def metropolis_hastings(graph) -> np.ndarray:
    """Metropolis-Hastings mixing matrix W_ij = 1 / (1 + max(d_i, d_j)) on edges, W_ii = 1 - sum_j W_ij
    (Boyd et al. 2006; Decor Sec. 6 setup).  Dense."""
    g = prepare_graph(graph)
    a = (g.adjacency.toarray() > 0).astype(float)
    deg = a.sum(1)
    w = a / (1.0 + np.maximum(deg[:, None], deg[None, :]))
    return w + np.diag(1.0 - w.sum(1))


def utility_weights(graph, cost="gossip", kappa=None):
    """(k_unc, k_cor) of the utility cost k_unc sigma_unc^2 + k_cor sigma_cor^2.

    "gossip": the noise variance per user and coordinate left after one gossip step of Decor with the
        Metropolis-Hastings matrix W (Decor Eq. 4, Sec. 6): the step noise has covariance
        sigma_unc^2 I + sigma_cor^2 L (the pairwise terms sum to B v, B the incidence matrix), so after mixing
        it is W (sigma_unc^2 I + sigma_cor^2 L) W: k_unc = tr(W^2)/n, k_cor = tr(W L W)/n.  This is the
        quantity Lemma 8 analyses exactly (the correlated-noise term of Thm 2, whose constants the extraction
        lost); k_cor = 0 for the complete graph with W = 11^T/n.
    "variance": the total injected variance per user, sigma_unc^2 + mean degree * sigma_cor^2.
    ``kappa``: overrides k_cor (with k_unc = 1).
    """
    g = prepare_graph(graph)
    V.one_of("cost", cost, ("gossip", "variance"))
    if kappa is not None:
        return 1.0, V.scalar(P.KAPPA.name, kappa, P.KAPPA.domain.check)
    if cost == "variance":
        return 1.0, float(g.degrees.sum() / g.n)
    w = metropolis_hastings(g)
    lap = g.laplacian
    return float(np.trace(w @ w) / g.n), float(np.trace(w @ lap @ w) / g.n)


def optimal_noise(graph, *, clip, target_epsilon, delta, steps, adversary="eavesdropper", colluders=None, cost="gossip",
                  kappa=None, num=24, iterations=60, learning_rate=0.1, method="closed_form") -> OptimalNoise:
    """The admissible pair minimising a utility cost k_unc sigma_unc^2 + k_cor sigma_cor^2 (see
    :func:`utility_weights`: "gossip" by default, "variance", or a given kappa), with optax.

    Method: the problem is one-dimensional along the frontier sigma_cor = s(sigma_unc) (minimal sigma_cor,
    :func:`calibrate_sigma_cor`).  A frontier grid (:func:`noise_frontier`) gives the start; optax.adam then descends
    on u = logit of sigma_unc's position in (sigma_low, sigma_ldp) with the implicit-function gradient
    ds/dsigma_unc = -(d eps1/d sigma_unc)/(d eps1/d sigma_cor) (jax.grad of the accountant), s re-computed by
    the core's inversion at every step.  Every candidate is a feasible endpoint; the best is returned.
    """
    import optax  # lazy: optax takes ~100 ms to import, for this function only

    # the descent's options, checked before any work (one descent for the whole call)
    iterations = V.count("iterations", iterations, minimum=0, maximum=10**5)
    learning_rate = V.scalar("learning_rate", learning_rate, V.positive)
    num = V.count("num", num, minimum=2, maximum=10**4)
    g = prepare_graph(graph)
    c = _validate_adversary(g, adversary, colluders)
    k_u, k_c = utility_weights(g, cost, kappa)
    cl = V.scalar(P.ACCOUNTANT_CLIP.name, clip, P.ACCOUNTANT_CLIP.domain.check)  # in CLIP_RANGE
    fr = noise_frontier(g, clip=cl, target_epsilon=target_epsilon, delta=delta, steps=steps, adversary=adversary,
                        colluders=colluders, num=num, method=method)
    su_grid = np.asarray(fr.sigma_unc)
    sc_grid = np.asarray(fr.sigma_cor)
    ok = np.isin(np.asarray(fr.status), (Status.OK, Status.AT_LIMIT))
    cost_grid = np.where(ok, k_u * su_grid**2 + k_c * sc_grid**2, np.inf)
    k0 = int(np.argmin(cost_grid))
    budget = float(fr.eps1_budget[0])
    best = (cost_grid[k0], su_grid[k0], sc_grid[k0], float(fr.eps1[k0]))
    low, high = su_grid[0] / (1.0 + 1e-3), su_grid[-1]
    fn = _eps1_fn(g, adversary, c)

    def to_su(u):
        return low + (high - low) / (1.0 + np.exp(-u))

    frac = np.clip((su_grid[k0] - low) / (high - low), 1e-6, 1 - 1e-6)
    u = np.array(np.log(frac / (1.0 - frac)))
    opt = optax.adam(learning_rate)
    state = opt.init(u)
    with x64_scope():
        grad_fn = jax.jit(jax.grad(lambda sc_, su_: jnp.sum(fn(sc_, su_, jnp.asarray(cl))), argnums=(0, 1)))
    for _ in range(iterations):
        su = float(to_su(u))
        sc, st, ach = _sigma_cor_for_budget(g, adversary, c, np.asarray(su), cl, budget, 1e-9, certified=False)
        sc = float(sc)
        if int(st) in (Status.OK, Status.AT_LIMIT):
            val = k_u * su**2 + k_c * sc**2
            if val < best[0]:
                best = (val, su, sc, float(ach))
        if int(st) != Status.OK or sc <= 0:
            break  # at the local-DP end or infeasible: the gradient is not defined there
        with x64_scope():
            g_sc, g_su = grad_fn(jnp.asarray([sc]), jnp.asarray([su]))
        ds = -float(g_su[0]) / float(g_sc[0]) if float(g_sc[0]) != 0 else 0.0
        dcost = 2.0 * k_u * su + 2.0 * k_c * sc * ds
        dsu_du = (high - low) * np.exp(-u) / (1.0 + np.exp(-u)) ** 2
        # gradient of log(cost): scale-free steps
        updates, state = opt.update(np.array(dcost * dsu_du / (k_u * su**2 + k_c * sc**2)), state, u)
        u = optax.apply_updates(u, updates)
    val, su, sc, e1 = best
    with x64_scope():
        return OptimalNoise(jnp.asarray(su), jnp.asarray(sc), jnp.asarray(val), jnp.asarray(e1),
                            jnp.asarray(budget), jnp.asarray(k_u), jnp.asarray(k_c))
