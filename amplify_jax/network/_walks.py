"""The empirical walk simulation of Cyffers & Bellet Section 5.1 (Figures 1(b) and 3): privacy losses of every
ordered pair of users from actual token walks, vectorised over pairs and walks."""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
import jax
import jax.numpy as jnp

from .._core import validate as V
from .._core.domains import check_params
from ..accounting.approx_dp import analytic_gaussian_log_delta, fmt_closed_form
from .._core.numerics import float64_jit, x64_scope
from ._common import _f64
from ._complete_graph import _KMAX_GROUP, _eq10
from ._composition import _kov_from_sums, _kov_terms
from . import _params as P


class WalkLosses(NamedTuple):
    """Privacy losses along simulated walks (:func:`walk_privacy_losses`): each pair's network-DP loss and each
    user's local-DP loss, with their deltas."""

    network: jax.Array  #: (walks, n, n) eps of target u (axis 1) seen by observer v (axis 2); 0 on the diagonal
    network_delta: jax.Array  #: (walks, n, n) the matching delta (KOV Thm 3.5)
    local: jax.Array  #: (walks, n) local-DP eps of each user (all its contributions observed)
    local_delta: jax.Array  #: (walks, n)


class WalkSummary(NamedTuple):
    """Mean, min and max of walk losses (:func:`summarize_walk_losses`)."""

    mean: jax.Array  #: over ordered pairs u != v and walks (or users)
    min: jax.Array
    max: jax.Array


def _scalars(params, **values) -> tuple:
    """One number per name, validated by its Param (:func:`check_params`), as Python floats: the simulation's
    inputs fix one walk table (or one static size) per call."""
    out = check_params(params, broadcast=False, **values)
    for name, a in zip(values, out):
        if np.ndim(a) != 0:
            raise ValueError(f"Expected {name} to be a single number, got {name}={np.array2string(a, threshold=6)} "
                             f"(shape {np.shape(a)}).")
    return tuple(float(a) for a in out)


def sample_walks(seed, *, n, steps, num_walks=10, topology="complete"):
    """Token paths of Algorithm 3: ``num_walks`` independent walks of ``steps`` steps (shape (num_walks, steps),
    int32).

    ``topology="complete"``: every step draws the next user uniformly in {0..n-1} (the walk may stay);
    ``"ring"``: the deterministic directed ring t mod n.  ``seed``: an integer in [0, 2^32 - 1] (``jax.random``'s
    32-bit seeds: larger ones collide) or a ``jax.random`` key; ``n`` (2..2^31 - 1), ``steps``, ``num_walks``
    (1..2^31 - 1): one integer each (the walks are int32; network/_params.py).
    """
    V.one_of("topology", topology, ("complete", "ring"))
    nn, tt, w = (int(x) for x in _scalars((P.WALK_N, P.WALK_STEPS, P.NUM_WALKS), n=n, steps=steps,
                                          num_walks=num_walks))
    if not isinstance(seed, jax.Array):
        seed = int(_scalars((P.SEED,), seed=seed)[0])  # checked for either topology
    return _draw_walks(seed, nn, tt, w, topology)


def _draw_walks(seed, nn, tt, w, topology):
    if topology == "ring":
        return jnp.broadcast_to(jnp.arange(tt, dtype=jnp.int32) % nn, (w, tt))
    key = jax.random.PRNGKey(seed) if not isinstance(seed, jax.Array) else seed
    return jax.random.randint(key, (w, tt), 0, nn, dtype=jnp.int32)


def _aggregate_eps(m, eps0, delta, mechanism, agg=None):
    """eps of the aggregate of m >= 1 contributions containing u's: Gaussian eps0 / sqrt(m), histograms
    min(eps0, FMT(eps0, m, delta)) (FMT where its condition holds)."""
    mm = jnp.maximum(m, 1.0)
    if agg is not None:  # a precomputed table over m = 0..T (numerical shuffling bound)
        return agg[jnp.clip(mm, 0, agg.shape[0] - 1).astype(jnp.int32)]
    if mechanism == "gaussian":
        return eps0 / jnp.sqrt(mm)
    return fmt_closed_form(eps0, mm, delta)[0]


def _tables(T, n, eps0, delta, mechanism, subsample, agg=None):
    """Per-cycle loss for every cycle length m = 0..T (0 at m = 0) and its three KOV sums' terms."""
    m = jnp.arange(T + 1, dtype=jnp.float64)
    ea = _aggregate_eps(m, eps0, delta, mechanism, agg)
    e = _eq10(n - 1.0, m, ea) if subsample else ea
    e = jnp.where(m > 0, e, 0.0)
    return jnp.stack(_kov_terms(e))  # (3, T+1)


def _group_delta_table(T, n, eps0, delta0, mechanism, agg=None):
    """log(1 - delta_cycle(m)) for m = 0..T with the group terms of Balle, Barthe, Gaboardi 2018 Thm 10, which
    App. D / E leave out (docs/errata.md#e-network-cycle-delta).

    Sampling m users with replacement among the n - 1 others, u is drawn K ~ Binomial(m, 1/(n-1)) times;
    Thm 10's delta' = sum_k P(K = k) delta_k(eps_A), delta_k the base mechanism's delta at eps_A for k changed
    elements.  delta_1 = delta0 (as in the paper).  k >= 2: Gaussian -- the exact hockey-stick of the Gaussian
    with sensitivity k and noise sqrt(m) sigma (Balle & Wang 2018); histograms -- the worst k eps0-DP pair,
    (e^{k eps0} - e^{eps_A}) / (e^{k eps0} + 1).  k > 24 is charged delta = 1, with P(K >= 25) bounded by
    the Chernoff bound e^{-mu} (e mu / 25)^25 (mu = m/(n-1) < 25; 1 otherwise).
    """
    m = jnp.arange(T + 1, dtype=jnp.float64)[:, None]
    k = jnp.arange(1, _KMAX_GROUP + 1, dtype=jnp.float64)[None, :]
    p = 1.0 / (n - 1.0)
    mm = jnp.maximum(m, 1.0)
    ea = _aggregate_eps(mm, eps0, delta0, mechanism, agg)
    if mechanism == "gaussian":
        r = k * eps0 / (jnp.sqrt(mm) * jnp.sqrt(2.0 * jnp.log(1.25 / delta0)))
        log_dk = analytic_gaussian_log_delta(r, ea)
        dk = jnp.exp(log_dk)
    else:
        ke = k * eps0
        dk = jnp.maximum(-jnp.expm1(ea - ke) / (1.0 + jnp.exp(-ke)), 0.0)
    dk = jnp.where(k == 1.0, delta0, dk)
    # Binomial(m, p) pmf at k = 1..24 by cumulative log-ratios
    ratio = jnp.log(jnp.maximum(m - k + 1.0, 1.0)) - jnp.log(k) + jnp.log(p) - jnp.log1p(-p)
    pmf = jnp.exp(m * jnp.log1p(-p) + jnp.cumsum(ratio, axis=-1))
    pmf = jnp.where(k <= m, pmf, 0.0)
    a = _KMAX_GROUP + 1.0
    mu = m[:, 0] * p
    log_tail = -mu + a * (1.0 + jnp.log(jnp.maximum(mu, 1e-300)) - jnp.log(a))
    tail = jnp.where(m[:, 0] >= a, jnp.where(mu < a, jnp.minimum(jnp.exp(log_tail), 1.0), 1.0), 0.0)
    d = jnp.minimum(jnp.sum(pmf * dk, axis=-1) + tail, 1.0)
    d = jnp.where(m[:, 0] > 0, d, 0.0)
    return jnp.log1p(-d)


def _cycles(walk):
    """Sorted (user, time) pairs and, for each visit, the previous visit time of the same user (-1 if none)."""
    T = walk.shape[0]
    order = jnp.argsort(walk, stable=True)
    users = walk[order]
    times = order.astype(jnp.int32)
    same = jnp.concatenate([jnp.zeros(1, bool), users[1:] == users[:-1]])
    prev = jnp.where(same, jnp.concatenate([jnp.full(1, -1, jnp.int32), times[:-1]]), -1)
    gap = times - prev - 1  # number of other users' contributions in the cycle closed by this visit
    return users, times, prev, gap


def _hidden_one(walk, n, tables, eps0_terms, log_inv_dt, log1m_d0, receiver_known, log1m_table):
    users, times, prev, gap = _cycles(walk)
    if receiver_known:
        known = jnp.minimum(gap, jnp.where(prev >= 0, 2, 1))  # v's receiver (regular cycles) and sender
        m_mid = gap - known
    else:
        m_mid = gap
    terms = tables[:, m_mid]  # (3, T)
    sums = jax.ops.segment_sum(terms.T, users, num_segments=n)  # (n, 3) per observer v
    log1m_cyc = jax.ops.segment_sum(log1m_table[m_mid], users, num_segments=n)  # sum of log(1 - delta_cycle)
    if receiver_known:
        T = walk.shape[0]
        last_user = walk[jnp.clip(times - 1, 0, T - 1)]
        first_user = walk[jnp.clip(prev + 1, 0, T - 1)]
        spotted = jnp.zeros((n, n), jnp.float64)
        spotted = spotted.at[last_user, users].add(jnp.where(gap >= 1, 1.0, 0.0))
        spotted = spotted.at[first_user, users].add(jnp.where((prev >= 0) & (gap >= 2), 1.0, 0.0))
    else:
        spotted = jnp.zeros((n, n), jnp.float64)
    s = [sums[None, :, k] + spotted * eps0_terms[k] for k in range(3)]  # (u, v)
    eps = _kov_from_sums(s[0], s[1], s[2], log_inv_dt)
    delta = -jnp.expm1(jnp.log1p(-jnp.exp(-log_inv_dt)) + log1m_cyc[None, :] + spotted * log1m_d0)
    eye = jnp.eye(n, dtype=bool)
    return jnp.where(eye, 0.0, eps), jnp.where(eye, 0.0, delta)


def _multi_eps(j, m, eps0, delta0, mechanism, agg=None):
    """eps of the aggregate of a cycle of m contributions in which u appears j >= 1 times (path known).

    Gaussian: the aggregate is a Gaussian mechanism with sensitivity j and noise sqrt(m) sigma, sigma the
    classical calibration of (eps0, delta0); its eps at delta0 is j eps0 / sqrt(m) while that is < 1 (classical
    bound), else r^2/2 + r sqrt(2 ln(1/delta0)) with r = j eps0 / (sqrt(m) sqrt(2 ln(1.25/delta0))) (Gaussian
    tail bound on the privacy loss N(r^2/2, r^2), valid for every r).  Histograms: j eps_A(m), group privacy of
    the shuffled aggregate: the aggregate of m randomized-response reports is (eps_A(m), delta0)-DP for one
    changed report whatever the other m - 1 inputs (the shuffling bound), so changing the j reports of u one at
    a time gives j eps_A(m), with the delta of :func:`_multi_terms`.
    """
    mm = jnp.maximum(m, 1.0)
    if mechanism == "gaussian":
        lin = j * eps0 / jnp.sqrt(mm)
        r = lin / jnp.sqrt(2.0 * jnp.log(1.25 / delta0))
        tail = 0.5 * r * r + r * jnp.sqrt(-2.0 * jnp.log(delta0))
        return jnp.where(lin < 1.0, lin, tail)
    return j * _aggregate_eps(mm, eps0, delta0, mechanism, agg)


def _multi_terms(j, m, eps0, delta0, mechanism, agg=None):
    """The KOV sums (sum eps, sum eps^2, sum eps tanh(eps/2)) and log(1 - delta) of what a cycle of length m in
    which u appears j times adds to the composition (all 0 for j = 0), path known.

    Gaussian: one item, eps of :func:`_multi_eps` with delta0.  Histograms, the cheaper of two valid accounts
    (the choice depends on j and m only, i.e. on the walk, never on the data):

    * one item j eps_A(m) with the group-privacy delta of an (e, d)-DP mechanism over j changed inputs (the
      chain P_0, ..., P_j of neighbours: P_0(S) <= e^e P_1(S) + d <= ... <= e^{j e} P_j(S) +
      d (1 + e^e + ... + e^{(j-1) e})), d_j = d (e^{j e} - 1) / (e^e - 1) with e = eps_A(m), d = delta0 (capped at
      1; log(1 - d_j) floored at -700 so that telescoped increments stay finite, the delta is then 1);
    * j items eps0, delta 0: u's j reports are each eps0-LDP and the aggregate is their post-processing.

    The first is taken when j eps_A(m)^2 < eps0^2 (it adds less to sum eps^2 and sum eps tanh(eps/2), the terms
    that dominate KOV's bound); otherwise, e.g. where shuffling does not amplify (eps_A = eps0) or for large j,
    the second (one item j eps0 would add j^2 eps0^2, j eps0-LDP items only j eps0^2).
    """
    if mechanism == "gaussian":
        t = _kov_terms(_multi_eps(j, m, eps0, delta0, mechanism, agg))
        l1m = jnp.log1p(-delta0)
        return tuple(jnp.where(j >= 1.0, x, 0.0) for x in (*t, l1m))
    ea = _aggregate_eps(jnp.maximum(m, 1.0), eps0, delta0, mechanism, agg)
    jj = jnp.maximum(j, 1.0)
    dj = jnp.minimum(delta0 * jnp.exp(jnp.log(jnp.expm1(jj * ea)) - jnp.log(jnp.expm1(ea))), 1.0)
    group = jj * ea * ea < eps0 * eps0
    ta = _kov_terms(jj * ea)
    tb = tuple(jj * x for x in _kov_terms(eps0))
    t = [jnp.where(group, x, y) for x, y in zip(ta, tb)]
    l1m = jnp.where(group, jnp.maximum(jnp.log1p(-dj), -700.0), 0.0)
    return tuple(jnp.where(j >= 1.0, x, 0.0) for x in (*t, l1m))


def _path_known_one(walk, n, eps0, delta0, mechanism, log_inv_dt, agg=None):
    """Public path (ring, Sec. 3): u's contributions in each cycle of v are known.

    If u appears j times in a cycle of length m, that cycle adds :func:`_multi_terms` (j, m) to the KOV sums and
    to sum log(1 - delta): the j-th occurrence adds the increment from (j - 1, m) to (j, m) (telescoping).
    """
    T = walk.shape[0]
    t = jnp.arange(T, dtype=jnp.int32)
    big = jnp.int32(T + 1)

    def per_v(v):
        is_v = walk == v
        prev_incl = jax.lax.cummax(jnp.where(is_v, t, -1), axis=0)
        prev_strict = jnp.concatenate([jnp.full(1, -1, jnp.int32), prev_incl[:-1]])
        nxt = jax.lax.cummin(jnp.where(is_v, t, big), axis=0, reverse=True)
        gap_at = t - prev_strict - 1  # meaningful where is_v
        nxt_c = jnp.clip(nxt, 0, T - 1)
        seen = (nxt < big) & ~is_v
        m = jnp.where(seen, gap_at[nxt_c], 0).astype(jnp.float64)
        # occurrence index j of walk[s] within its cycle (key: cycle end, user)
        key = jnp.where(seen, nxt.astype(jnp.int64) * n + walk, jnp.int64(T + 2) * n)
        order = jnp.argsort(key, stable=True)
        ks = key[order]
        idx = jnp.arange(T)
        start = jax.lax.cummax(jnp.where(jnp.concatenate([jnp.ones(1, bool), ks[1:] != ks[:-1]]), idx, 0))
        j = jnp.zeros(T, jnp.float64).at[order].set((idx - start + 1).astype(jnp.float64))
        now = _multi_terms(j, m, eps0, delta0, mechanism, agg)
        before = _multi_terms(j - 1.0, m, eps0, delta0, mechanism, agg)
        inc = [jnp.where(seen, a - b, 0.0) for a, b in zip(now, before)]
        sums = jax.ops.segment_sum(jnp.stack(inc, -1), walk, num_segments=n)  # (n, 4) per target u
        return sums

    sums = jax.lax.map(per_v, jnp.arange(n, dtype=jnp.int32))  # (v, u, 4)
    sums = jnp.swapaxes(sums, 0, 1)  # (u, v, 4)
    log1m_cyc = jnp.minimum(sums[..., 3], 0.0)  # sum over u's cycles of log(1 - delta of the cycle)
    sums = jnp.maximum(sums[..., :3], 0.0)  # clip round-off of the telescoping
    eps = _kov_from_sums(sums[..., 0], sums[..., 1], sums[..., 2], log_inv_dt)
    delta = -jnp.expm1(jnp.log1p(-jnp.exp(-log_inv_dt)) + log1m_cyc)
    eye = jnp.eye(n, dtype=bool)
    return jnp.where(eye, 0.0, eps), jnp.where(eye, 0.0, delta)


@float64_jit(static_argnames=("n", "mechanism", "view", "group", "custom"))
def _walk_kernel(walks, eps0, delta_cycle, delta_tilde, agg_table, n, mechanism, view, group, custom):
    T = walks.shape[1]
    nf = jnp.asarray(float(n))
    agg = agg_table if custom else None
    tables = _tables(T, nf, eps0, delta_cycle, mechanism, subsample=(view != "path_known"), agg=agg)
    log_inv_dt = -jnp.log(delta_tilde)
    log1m_d0 = jnp.log1p(-delta_cycle)
    e0 = jnp.stack(_kov_terms(eps0))
    if view == "path_known":
        net, net_d = jax.vmap(lambda w: _path_known_one(w, n, eps0, delta_cycle, mechanism, log_inv_dt,
                                                        agg))(walks)
    else:
        rk = view == "receiver_known"
        if group:
            l1m = _group_delta_table(T, nf, eps0, delta_cycle, mechanism, agg)
        else:
            l1m = jnp.where(jnp.arange(T + 1) > 0, log1m_d0, 0.0)
        net, net_d = jax.vmap(lambda w: _hidden_one(w, n, tables, e0, log_inv_dt, log1m_d0, rk, l1m))(walks)
    counts = jax.vmap(lambda w: jnp.bincount(w, length=n))(walks).astype(jnp.float64)
    loc = _kov_from_sums(counts * e0[0], counts * e0[1], counts * e0[2], log_inv_dt)
    loc_d = -jnp.expm1(jnp.log1p(-delta_tilde) + counts * log1m_d0)
    return WalkLosses(net, net_d, loc, loc_d)


def walk_privacy_losses(walks, *, n, eps0, delta_prime, delta_cycle, mechanism="gaussian", view="hidden",
                        cycle_delta="group", shuffle_bound="fmt"):
    """Privacy loss of every ordered pair (u, v) from actual walks (Cyffers & Bellet Sec. 5.1, Fig. 1(b), Fig. 3).

    For observer v, the walk is cut at v's visits; the visit at time t closes a cycle of the m = t - t_prev - 1
    contributions made by other users since v's previous visit (from the start for the first visit;
    contributions after v's last visit are never seen).  v knows its visit times; given them, the m users of a
    cycle are i.i.d. uniform on the n - 1 others, so u's participation is amplified by subsampling (Eq. 10 with
    population n - 1; the paper writes n and counts v's own step in m).  The aggregate of m contributions has
    eps_A(m) = eps0 / sqrt(m) (``mechanism="gaussian"``, classical Gaussian mechanism, eps0 < 1) or
    min(eps0, FMT(eps0, m, delta_cycle)) (``"histogram"``, shuffling of m RR reports: ``shuffle_bound="fmt"``,
    FMT Thm 3.1's closed form; ``"clones"``, FMT's numerical bound ``amplify_jax.shuffle.clones_epsilon``
    (upper end); ``"blanket"``, the privacy blanket of Balle, Bell, Gascon, Nissim 2019, the bound Fig. 3 of the
    paper used (App. H), for a generic eps0-LDP randomizer (the paper does not state the domain size L; see
    :func:`_blanket_table_full`).  The two numerical bounds are evaluated on a geometric grid of m (ratio
    1.05, all m <= 64) and used on [m_j, m_{j+1}) from the left end m_j: sound as the bound does not increase
    with the number of users m (checked on the grid).  The cycles are composed with the heterogeneous bound of
    Kairouz, Oh, Viswanath 2015 Thm 3.5 at delta_tilde = ``delta_prime`` (:func:`kov_composition_epsilon`);
    the delta is 1 - (1 - delta') prod_cycles (1 - delta of the cycle) (delta_cycle, the Gaussian's delta0 or
    the shuffling delta, per cycle; see ``cycle_delta`` and the path-known view for the exceptions).

    ``view``:

    * ``"hidden"`` (Sec. 4): sender and receiver unknown; the loss depends on v only (all u alike).
    * ``"receiver_known"`` (App. G): v knows who sent it the token and to whom it sent it; those spotted
      contributions cost the full eps0 each (App. G), the rest of the cycle is amplified as above.
    * ``"path_known"`` (ring, Sec. 3, or any public path): no subsampling; a cycle of length m in which u
      appears j times costs the aggregate's eps with sensitivity j (eps_A(m) for j = 1; see
      :func:`_multi_eps` for j >= 2): for histograms j eps_A(m), group privacy of the shuffled aggregate, with
      delta delta_cycle (e^{j eps_A} - 1) / (e^{eps_A} - 1), or j items eps0 where that is cheaper
      (:func:`_multi_terms`).  v learns more than in the hidden view, so these (eps, delta) hold there too; for
      histograms they are the sound pairs (the hidden view's group delta is close to 1, see ``cycle_delta``).

    ``cycle_delta`` (hidden and receiver-known views): the epsilon of a cycle is Eq. 10 either way; its delta is
    ``"paper"``: delta_cycle per cycle, as App. D states (delta_cycle <= delta_A), or ``"group"`` (default):
    Balle, Barthe, Gaboardi 2018 Thm 10's full delta' = sum_k P(K = k) delta_k(eps_A), which also charges the
    cycles where u is drawn K >= 2 times (sampling with replacement) with the base mechanism's group-privacy
    delta (:func:`_group_delta_table`).  The paper omits these terms; with m ~ n they dominate (P(K >= 2) is
    about 1/4), so the "group" delta is much larger than the paper's: that is the delta the epsilon is
    actually supported with (docs/errata.md#e-network-cycle-delta: App. D / E print delta_cycle <= delta_A).

    The local-DP comparison (Fig. 1(b)) composes eps0 over each user's actual number of contributions with the
    same KOV bound.  Returns :class:`WalkLosses`; see :func:`summarize_walk_losses`.
    """
    V.one_of("mechanism", mechanism, ("gaussian", "histogram"))
    V.one_of("view", view, ("hidden", "receiver_known", "path_known"))
    P.CYCLE_DELTA.domain.check("cycle_delta", cycle_delta)
    V.one_of("shuffle_bound", shuffle_bound, ("fmt", "clones", "blanket"))
    # scalars (one walk table), network/_params.py's domains; eps0 < 1 for the Gaussian (eps0/sqrt(m) is the
    # classical Gaussian mechanism's scaling), e^eps0 finite for histograms
    eps0_param = P.EPS0_GAUSS if mechanism == "gaussian" else P.EPS0_LOCAL
    nn, e, dp, dc = _scalars((P.WALK_N, eps0_param, P.DELTA_PRIME, P.DELTA_CYCLE), n=n, eps0=eps0,
                             delta_prime=delta_prime, delta_cycle=delta_cycle)
    nn = int(nn)
    w = np.asarray(walks)
    if w.ndim == 1:
        w = w[None]
    if w.ndim != 2 or w.shape[1] < 1:
        raise ValueError(f"Expected walks of shape (num_walks, T), got shape {w.shape}.")
    if w.min() < 0 or w.max() >= nn:
        raise ValueError(f"Expected walk entries in [0, n), got values in [{w.min()}, {w.max()}] with n={nn}.")
    custom = mechanism == "histogram" and shuffle_bound in ("clones", "blanket")
    if custom:
        agg = (_clones_table if shuffle_bound == "clones" else _blanket_table)(e, w.shape[1], dc)
    else:
        agg = np.zeros(1)
    with x64_scope():
        return _walk_kernel(jnp.asarray(w, jnp.int32), _f64(e), _f64(dc), _f64(dp), _f64(agg), nn, mechanism, view,
                            cycle_delta == "group", custom)


def _clones_table(eps0, T, delta):
    """eps_A(m), m = 0..T, from FMT's numerical shuffling bound on a geometric grid, used from the left grid point.

    Cached per (eps0, delta) for a power-of-two length >= 2^17 and sliced, so figures sweeping n reuse it.
    """
    big = max(1 << int(np.ceil(np.log2(max(T, 2)))), 1 << 17)
    return _clones_table_full(float(eps0), big, float(delta))[: T + 1]


def _shuffle_grid(T):
    """Cycle lengths 1..64, then geometric with ratio 1.05 up to T (the grid of the numerical tables)."""
    top = max(T, 65)
    pts = int(np.ceil(np.log(top / 64.0) / np.log(1.05))) + 1
    return np.unique(np.concatenate([np.arange(1, 65), np.floor(np.geomspace(64, top, pts))]))


def _step_table(grid, up, eps0, T, what):
    """eps_A(m), m = 0..T, from values on the grid, each used on [m_j, m_{j+1}) from its left end m_j: sound when
    the bound does not increase with the number of shuffled reports, which is checked on the grid."""
    if np.any(np.diff(up) > 1e-12):
        raise ValueError(f"Expected {what} to be non-increasing in the number of users on the grid; it is not, so "
                         "the step table would not be sound.")
    m = np.arange(T + 1)
    idx = np.clip(np.searchsorted(grid, m, side="right") - 1, 0, len(grid) - 1)
    return np.where(m >= 1, up[idx], eps0)


@functools.lru_cache(maxsize=16)
def _clones_table_full(eps0, T, delta):
    from ..shuffle import clones_epsilon  # lazy: shuffle takes ~60 ms to import; only these tables need it

    grid = _shuffle_grid(T)
    res = clones_epsilon(eps0, grid, delta)
    up = np.where(np.asarray(res.valid), np.minimum(np.asarray(res.upper), eps0), eps0)
    return _step_table(grid, up, eps0, T, "FMT's numerical shuffling bound")


def _blanket_table(eps0, T, delta):
    """eps_A(m), m = 0..T, from the privacy blanket (Balle, Bell, Gascon, Nissim 2019), the bound the paper's
    Fig. 3 uses, on the grid of :func:`_clones_table` (same caching)."""
    big = max(1 << int(np.ceil(np.log2(max(T, 2)))), 1 << 17)
    return _blanket_table_full(float(eps0), big, float(delta))[: T + 1]


@functools.lru_cache(maxsize=16)
def _blanket_table_full(eps0, T, delta):
    """The blanket bound for a generic eps0-LDP randomizer (gamma = e^-eps0, Balle et al.'s generic bounds on the
    amplification variable; valid for L-ary randomized response whatever L, which the paper does not state):
    the smaller of the Bennett (corrected form, docs/errata.md#e-traffic-lemma3-bennett) and Hoeffding
    evaluations, each an upper bound on delta(eps), so their smaller eps at ``delta`` is one too; eps0 where
    neither amplifies (``fallback``)."""
    from ..shuffle import blanket_epsilon, generic_randomizer  # lazy: shuffle takes ~60 ms to import

    grid = _shuffle_grid(T)
    ups = []
    for method in ("bennett", "hoeffding"):
        res = blanket_epsilon(delta, n=grid, randomizer=generic_randomizer(eps0), method=method)
        ups.append(np.where(np.asarray(res.fallback), eps0, np.minimum(np.asarray(res.epsilon), eps0)))
    return _step_table(grid, np.minimum(*ups), eps0, T, "the privacy-blanket bound")


def summarize_walk_losses(losses):
    """Mean, min and max over ordered pairs u != v and walks (or over users for the local (walks, n) array)."""
    with x64_scope():
        a = jnp.asarray(losses, dtype=jnp.float64)
        if a.ndim == 3:
            n = a.shape[-1]
            off = ~jnp.eye(n, dtype=bool)
            vals = a[:, off]
        else:
            vals = a
        return WalkSummary(jnp.mean(vals), jnp.min(vals), jnp.max(vals))
