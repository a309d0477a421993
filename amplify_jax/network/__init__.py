"""Network DP for token walks: Cyffers & Bellet, "Privacy Amplification by Decentralization" (AISTATS 2022).

In network DP (Definition 1) a user v only sees the messages she receives, so a token that walks the graph
and aggregates contributions hides each contribution among the others.  This module gives

* composition tools: advanced composition (Dwork, Rothblum, Vadhan 2010) and the heterogeneous optimal
  composition bound of Kairouz, Oh, Viswanath 2015 (Thm 3.5), with an exact homogeneous variant (Thm 3.3);
* the closed forms of the paper: ring (Thm 1, Remark 1, Thm 2), complete graph (Thm 3 with the full
  non-asymptotic form of App. D, Thm 6 / App. E), SGD (Thm 4 Eq. 7, Lemma 1 + Remark 5), collusions (Sec. 4.3),
  spotted contributions (App. G, Lemma 2) and the baselines (the same algorithms under local DP; central
  DP-SGD with amplification by subsampling);
* noise calibration for network, local and central DP-SGD (Sec. 5.2), batched through
  :func:`amplify_jax.calibrate.invert_monotone`;
* the empirical walk simulation of Sec. 5.1 (Figures 1(b) and 3), vectorised over pairs and walks.

Where the printed paper is wrong or does not support a number, the docstring says so (see ERRATA.md):

* App. D, Thm 3: the second term of the advanced composition uses eps_c, not eps (ERRATA).
* App. E, Thm 6: the same slip in the second term.  Its per-cycle constant 21 does not follow from the
  printed chain of inequalities (which gives 42) but does hold; see :func:`complete_graph_histogram_bound`.
* App. G, Lemma 2: advanced composition over S spotted contributions is sqrt(2 S ln(1/delta')) eps + ...;
  the printed sqrt(S ln(1/delta')) drops the factor 2.
* The Chernoff bound N = mu + sqrt(3 mu ln(1/delta_hat)) used throughout holds only when
  3 ln(1/delta_hat) <= mu (the paper's alpha <= 1); elsewhere the general multiplicative bound
  P(X >= (1 + a) mu) <= exp(-a^2 mu / (2 + a)) is used and the result's ``valid`` flag is False.
* Remark 1: per-user noise sigma_loc / sqrt(n) leaves each window of n - 1 contributions with variance
  (n - 1)/n sigma_loc^2 < sigma_loc^2; we use sigma_loc / sqrt(n - 1).
* App. D / E state delta_cycle <= delta_A for Eq. 10.  A cycle samples users *with replacement*, and
  Balle, Barthe, Gaboardi 2018 Thm 10's delta' also carries the group-privacy deltas of the cycles where u
  is drawn k >= 2 times.  Both the closed forms and the walk simulation add them by default
  (``cycle_delta="group"``; ``"paper"`` reproduces the paper's delta).  They are far larger (about 1e-2
  instead of 1e-5 for Fig. 1(b) at n = 400; close to 1 for histograms, where k >= 2 reports of one user are
  only bounded by group privacy of the local randomizer).  The epsilons are unchanged.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np
import jax
import jax.numpy as jnp

from .. import _validate as V
from ..numerics import float64_jit, log_comb, x64_scope

__all__ = [
    # results
    "NetworkBound",
    "SpottedBound",
    "RingNoise",
    "SgdEpsilon",
    "WalkLosses",
    "WalkSummary",
    # composition
    "advanced_composition_epsilon",
    "kov_composition_epsilon",
    "kov_composition_delta",
    "kov_homogeneous_epsilon",
    "contribution_bound",
    # ring
    "ring_sum_bound",
    "ring_noise",
    "ring_histogram_gamma",
    "ring_histogram_bound",
    # complete graph
    "subsampled_cycle_epsilon",
    "complete_graph_sum_epsilon",
    "complete_graph_sum_bound",
    "complete_graph_histogram_bound",
    "local_sum_bound",
    "spotted_contributions_epsilon",
    # sgd
    "sgd_theorem4_bound",
    "network_sgd_rdp",
    "network_sgd_epsilon",
    "local_sgd_epsilon",
    "central_sgd_epsilon",
    "central_sgd_bassily_epsilon",
    "calibrate_sgd_sigma",
    # simulation
    "sample_walks",
    "walk_privacy_losses",
    "summarize_walk_losses",
]

_EXP1 = math.e


class NetworkBound(NamedTuple):
    epsilon: jax.Array  #: the network-DP (or local-DP) epsilon
    delta: jax.Array  #: the matching delta
    valid: jax.Array  #: True where the paper's own form applies; False where a documented general form was used


class SpottedBound(NamedTuple):
    epsilon: jax.Array
    spotted: jax.Array  #: the high-probability bound on the number of spotted contributions
    valid: jax.Array


class RingNoise(NamedTuple):
    per_user_sigma: jax.Array  #: std of the noise added by every user but the first
    first_sigma: jax.Array  #: std of the first user's noise (sigma_loc)
    total_std: jax.Array  #: std of the noise in the final sum


class SgdEpsilon(NamedTuple):
    epsilon: jax.Array
    order: jax.Array  #: the Renyi order used in the conversion


def _f64(x):
    return jnp.asarray(x, dtype=jnp.float64)


def _b(shape, *arrays):
    with x64_scope():
        return tuple(jnp.broadcast_to(_f64(a), shape) for a in arrays)


# ----------------------------------------------------------------------------------------------------------
# Composition and the Chernoff bound on the number of contributions


def _advanced(eps, k, log_inv_dp):
    """Dwork, Rothblum, Vadhan 2010: k-fold (eps, delta) ->
    (sqrt(2 k ln(1/d')) eps + k eps (e^eps - 1), k delta + d')."""
    return jnp.sqrt(2.0 * k * log_inv_dp) * eps + k * eps * jnp.expm1(eps)


@float64_jit
def _advanced_kernel(eps, k, dp):
    return _advanced(eps, k, -jnp.log(dp))


def advanced_composition_epsilon(eps, *, k, delta_prime):
    """Advanced composition (Dwork, Rothblum, Vadhan 2010, Thm III.3), the form used throughout Cyffers & Bellet.

    k-fold adaptive composition of (eps, delta)-DP mechanisms is
    (sqrt(2 k ln(1/delta')) eps + k eps (e^eps - 1), k delta + delta')-DP.  Returns the epsilon; ``k`` may be
    real (a high-probability bound on a count).  Broadcasts.
    """
    e = V.nonnegative("eps", eps)
    kk = V.nonnegative("k", k)
    d = V.unit_open("delta_prime", delta_prime)
    shape = V.broadcastable(eps=e, k=kk, delta_prime=d)
    return _advanced_kernel(*_b(shape, e, kk, d))


def _kov_from_sums(s1, s2, s3, log_inv_dt):
    """KOV 2015 Thm 3.5 from the sums s1 = sum eps_l, s2 = sum eps_l^2, s3 = sum eps_l tanh(eps_l / 2).

    eps = min{ s1, s3 + sqrt(2 s2 ln(e + sqrt(s2)/dt)), s3 + sqrt(2 s2 ln(1/dt)) }.
    """
    log_term = jnp.logaddexp(1.0, 0.5 * jnp.log(s2) + log_inv_dt)  # ln(e + sqrt(s2)/dt), fine at s2 = 0
    a = s3 + jnp.sqrt(2.0 * s2 * log_term)
    b = s3 + jnp.sqrt(2.0 * s2 * log_inv_dt)
    return jnp.minimum(s1, jnp.minimum(a, b))


def _kov_terms(eps):
    return eps, eps * eps, eps * jnp.tanh(0.5 * eps)  # (e^x - 1)/(e^x + 1) = tanh(x / 2)


@float64_jit(static_argnames=("axis",))
def _kov_kernel(eps, dt, axis):
    t1, t2, t3 = _kov_terms(eps)
    return _kov_from_sums(t1.sum(axis), t2.sum(axis), t3.sum(axis), -jnp.log(dt))


def kov_composition_epsilon(eps, *, delta_tilde, axis=-1):
    """Optimal-composition bound for heterogeneous mechanisms, Kairouz, Oh, Viswanath 2015 (ICML), Thm 3.5.

    The adaptive composition of (eps_l, delta_l)-DP mechanisms, l = 1..k, is
    (eps_tilde, 1 - (1 - delta_tilde) prod_l (1 - delta_l))-DP for every delta_tilde in (0, 1], with

        eps_tilde = min{ sum eps_l,
                         sum eps_l (e^eps_l - 1)/(e^eps_l + 1)
                             + sqrt(2 sum eps_l^2 ln(e + sqrt(sum eps_l^2)/delta_tilde)),
                         sum eps_l (e^eps_l - 1)/(e^eps_l + 1) + sqrt(2 sum eps_l^2 ln(1/delta_tilde)) }.

    ``eps`` holds the per-mechanism epsilons along ``axis`` (pad with zeros: a zero contributes nothing to any
    sum); ``delta_tilde`` broadcasts with the remaining axes.  The matching delta is
    :func:`kov_composition_delta`.  For equal epsilons this is never larger than advanced composition or the
    sum (tests check the ordering); :func:`kov_homogeneous_epsilon` gives the exact optimum (Thm 3.3).
    """
    e = V.nonnegative("eps", eps)
    d = V.unit_open("delta_tilde", delta_tilde)
    if e.ndim == 0:
        e = e[None]
    ax = axis % e.ndim
    rest = e.shape[:ax] + e.shape[ax + 1:]
    shape = V.broadcastable(eps_without_axis=np.empty(rest), delta_tilde=d)
    e = np.moveaxis(e, ax, -1)
    with x64_scope():
        eb = jnp.broadcast_to(_f64(e), shape + e.shape[-1:])
        return _kov_kernel(eb, jnp.broadcast_to(_f64(d), shape), -1)


def kov_composition_delta(deltas, *, delta_tilde, axis=-1):
    """The delta of KOV Thm 3.5: 1 - (1 - delta_tilde) prod_l (1 - delta_l), computed with log1p/expm1."""
    d = V.probability("deltas", deltas)
    dt = V.unit_open("delta_tilde", delta_tilde)
    with x64_scope():
        s = jnp.sum(jnp.log1p(-_f64(d)), axis=axis) if d.ndim else jnp.log1p(-_f64(d))
        return -jnp.expm1(jnp.log1p(-_f64(dt)) + s)


@float64_jit(static_argnames=("kmax",))
def _kov_homog_kernel(eps0, k, log_delta, kmax):
    """Exact optimal composition of k pure eps0-DP mechanisms (KOV 2015 Thm 3.3 / the k-fold randomized response).

    delta(eps) = E_{l ~ Bin(k, 1/(1+e^eps0))}[(1 - e^{eps - (k - 2 l) eps0})_+]; the optimal epsilon at a target
    delta is the least eps with delta(eps) <= target.  delta(.) is evaluated at every atom (k - 2i) eps0 and the
    answer is the smallest atom meeting the target (delta is piecewise smooth and decreasing, so between atoms
    a finer answer exists; the atom is the safe side, matching Thm 3.3's statement at eps = (k - 2i) eps0).
    """
    l = jnp.arange(kmax + 1, dtype=jnp.float64)  # number of "flips"
    e0 = eps0[..., None]
    kk = k[..., None]
    logp_flip = -jnp.logaddexp(0.0, e0)  # log 1/(1+e^eps0)
    logp_keep = e0 + logp_flip
    logpmf = log_comb(kk, jnp.minimum(l, kk)) + l * logp_flip + (kk - l) * logp_keep
    logpmf = jnp.where(l <= kk, logpmf, -jnp.inf)
    loss = (kk - 2.0 * l) * e0  # privacy loss of outcome l
    # candidate eps = loss at atom i (i = 0..kmax): delta_i = sum_l pmf_l (1 - e^{eps_i - loss_l})_+
    eps_c = loss  # (..., kmax+1) over i
    diff = eps_c[..., :, None] - loss[..., None, :]  # (..., i, l)
    w = jnp.where(diff < 0, -jnp.expm1(jnp.minimum(diff, 0.0)), 0.0)
    delta_i = jnp.sum(jnp.exp(logpmf)[..., None, :] * w, axis=-1)
    ok = (delta_i <= jnp.exp(log_delta)[..., None]) & (l <= kk) & (eps_c >= 0)
    # the smallest feasible atom; eps = 0 is feasible only if delta(0) <= target
    best = jnp.min(jnp.where(ok, eps_c, jnp.inf), axis=-1)
    d0 = jnp.sum(jnp.exp(logpmf) * jnp.where(loss > 0, -jnp.expm1(-jnp.maximum(loss, 0.0)), 0.0), axis=-1)
    best = jnp.where(d0 <= jnp.exp(log_delta), 0.0, best)
    return jnp.minimum(best, k * eps0)


def kov_homogeneous_epsilon(*, eps0, k, delta):
    """Exact optimal k-fold composition of eps0-DP mechanisms (Kairouz, Oh, Viswanath 2015, Thm 3.3), at atoms.

    Returns the smallest eps in {(k - 2i) eps0 : i = 0..floor(k/2)} (and 0) such that the composition is
    (eps, delta)-DP; no composition theorem can give a smaller eps at these atoms.  ``k`` is an integer
    (at most 4096 here: the kernel is O(k^2)).
    """
    e = V.positive("eps0", eps0)
    kk = V.integer("k", k, minimum=0)
    d = V.unit_open("delta", delta)
    if np.max(kk) > 4096:
        raise ValueError(f"Expected k <= 4096 for the exact optimal composition, got k={np.max(kk)}.")
    shape = V.broadcastable(eps0=e, k=kk, delta=d)
    kmax = int(max(np.max(kk), 1))
    eb, kb, db = _b(shape, e, kk.astype(np.float64), d)
    return _kov_homog_kernel(eb, kb, jnp.log(db), kmax)


def _chernoff_count(mu, log_inv):
    """High-probability bound N on X ~ sum of independent Bernoullis with mean mu: P(X >= N) <= e^{-log_inv}.

    Paper's form (App. D, alpha <= 1): N = mu + sqrt(3 mu ln(1/delta_hat)), valid when 3 ln(1/delta_hat) <= mu.
    Otherwise the general multiplicative Chernoff bound P(X >= (1+a) mu) <= exp(-a^2 mu / (2 + a)), a > 0,
    gives N = mu + (l + sqrt(l^2 + 8 mu l)) / 2 with l = ln(1/delta_hat).  Returns (N, paper_form_valid).
    """
    paper = 3.0 * log_inv <= mu
    n_paper = mu + jnp.sqrt(3.0 * mu * log_inv)
    n_gen = mu + 0.5 * (log_inv + jnp.sqrt(log_inv * log_inv + 8.0 * mu * log_inv))
    return jnp.where(paper, n_paper, n_gen), paper


@float64_jit
def _contrib_kernel(n, T, dh):
    return _chernoff_count(T / n, -jnp.log(dh))


def contribution_bound(*, n, T, delta_hat):
    """Bound on a user's number of contributions (or visits) in a T-step random walk on the complete graph.

    The count is Binomial(T, 1/n); App. D's Chernoff bound gives N_v = T/n + sqrt(3 T/n ln(1/delta_hat)) with
    probability 1 - delta_hat, valid when T/n >= 3 ln(1/delta_hat); otherwise the general multiplicative bound
    is used (see :func:`_chernoff_count`).  Returns (N, paper_form_valid).
    """
    nn = _n("n", n)
    tt = V.integer("T", T, minimum=1).astype(np.float64)
    dh = V.unit_open("delta_hat", delta_hat)
    shape = V.broadcastable(n=nn, T=tt, delta_hat=dh)
    return _contrib_kernel(*_b(shape, nn, tt, dh))


def _n(name, n):
    a = V.finite(name, n)
    if np.any(a < 2):
        raise ValueError(f"Expected {name} >= 2, got {name}={np.min(a)!r}.")
    return a


def _colluders(n, c):
    cc = V.integer("colluders", c, minimum=1)
    if np.any(np.broadcast_to(cc, np.broadcast_shapes(np.shape(cc), np.shape(n))) >= n):
        raise ValueError(f"Expected colluders < n, got colluders={np.max(cc)!r} with n={np.min(n)!r}.")
    return cc.astype(np.float64)


# ----------------------------------------------------------------------------------------------------------
# Ring (Section 3)


@float64_jit
def _ring_sum_kernel(K, eps0, delta0, dp):
    return _advanced(eps0, K, -jnp.log(dp)), K * delta0 + dp


def ring_sum_bound(*, K, eps0, delta0, delta_prime):
    """Real summation on the ring, Cyffers & Bellet Thm 1 (Algorithm 1, and Remark 1's distributed variant).

    Perturb(.; sigma_loc) is (eps0, delta0)-LDP and noise is added once every n - 1 hops; every window between
    two visits of v contains one full sigma_loc, so each of the K visits costs (eps0, delta0) and advanced
    composition gives (sqrt(2K ln(1/delta')) eps0 + K eps0 (e^eps0 - 1), K delta0 + delta')-network DP.
    Remark 1's distributed noise gives the same guarantee (see :func:`ring_noise`).
    """
    k = V.integer("K", K, minimum=1).astype(np.float64)
    e = V.positive("eps0", eps0)
    d0 = V.unit_open("delta0", delta0)
    dp = V.unit_open("delta_prime", delta_prime)
    shape = V.broadcastable(K=k, eps0=e, delta0=d0, delta_prime=dp)
    eps, delta = _ring_sum_kernel(*_b(shape, k, e, d0, dp))
    return NetworkBound(eps, delta, jnp.ones(shape, bool))


@float64_jit
def _ring_noise_kernel(n, K, sigma, distributed):
    alg1 = jnp.sqrt(jnp.floor(K * n / (n - 1.0))) * sigma
    per = jnp.where(distributed, sigma / jnp.sqrt(n - 1.0), 0.0)
    dist = sigma * jnp.sqrt(1.0 + (K * n - 1.0) / (n - 1.0))
    return RingNoise(jnp.where(distributed, per, sigma), sigma, jnp.where(distributed, dist, alg1))


def ring_noise(*, n, K, sigma_loc, distributed=False):
    """Noise of the ring protocols (Cyffers & Bellet Thm 1 utility, Remark 1).

    Algorithm 1 (``distributed=False``): sigma_loc once every n - 1 hops, total std
    sqrt(floor(K n / (n - 1))) sigma_loc (local DP needs sqrt(K n) sigma_loc).
    Remark 1 (``distributed=True``): the first user adds sigma_loc, every other contribution
    sigma_loc / sqrt(n - 1) -- corrected from the printed sigma_loc / sqrt(n), which leaves each window of
    n - 1 contributions with only (n - 1)/n sigma_loc^2 of variance -- total std
    sigma_loc sqrt(1 + (K n - 1)/(n - 1)).
    """
    nn = _n("n", n)
    k = V.integer("K", K, minimum=1).astype(np.float64)
    s = V.positive("sigma_loc", sigma_loc)
    shape = V.broadcastable(n=nn, K=k, sigma_loc=s)
    nb, kb, sb = _b(shape, nn, k, s)
    return _ring_noise_kernel(nb, kb, sb, jnp.asarray(bool(distributed)))


def ring_histogram_gamma(*, n, L, eps, delta):
    """The randomized-response parameter of Cyffers & Bellet Thm 2 as printed:
    gamma = L / (exp(12 eps sqrt(ln(1/delta)/n)) + L - 1).

    RR_gamma over L values is eps_l-LDP with eps_l = ln(1 + L (1 - gamma)/gamma); the printed gamma gives
    eps_l = 12 eps sqrt(ln(1/delta)/n).  Note (not in ERRATA): Erlingsson et al.'s Cor. 9 maps an eps_l-LDP
    randomizer to 12 eps_l sqrt(ln(1/delta)/n) after shuffling, so the printed gamma over-randomizes (it is
    safe whenever 144 ln(1/delta) <= n); the privacy actually obtained for a given gamma is
    :func:`ring_histogram_bound`.  The theorem's conditions (eps < 1/2, delta < 1/100, n > 1000) are enforced.
    """
    nn = _n("n", n)
    ll = V.integer("L", L, minimum=2).astype(np.float64)
    e = V.positive("eps", eps)
    d = V.unit_open("delta", delta)
    if np.any(e >= 0.5):
        raise ValueError(f"Theorem 2 requires eps < 1/2, got eps={np.max(e)!r}.")
    if np.any(d >= 0.01):
        raise ValueError(f"Theorem 2 requires delta < 1/100, got delta={np.max(d)!r}.")
    if np.any(nn <= 1000):
        raise ValueError(f"Theorem 2 requires n > 1000, got n={np.min(nn)!r}.")
    with x64_scope():
        return _f64(ll) / (jnp.exp(12.0 * _f64(e) * jnp.sqrt(jnp.log(1.0 / _f64(d)) / _f64(nn))) + _f64(ll) - 1.0)


def _fmt_epsilon(eps0, n, delta):
    """Feldman, McMillan, Talwar 2021 Thm 3.1 closed form (Cyffers & Bellet Thm 7) for n shuffled eps0-LDP
    reports: min(eps0, FMT) where eps0 <= ln(n / (16 ln(4/delta))) (ERRATA: ln(4/delta)), else eps0; and the
    validity flag.  The kernel of :func:`amplify_jax.shuffle.fmt_closed_form_epsilon` (jnp, inside kernels)."""
    from ..shuffle._closed_forms import _fmt_kernel

    r = _fmt_kernel.jitted(eps0, n, delta)
    return r.epsilon, r.valid


@float64_jit
def _ring_hist_kernel(n, K, eps_l, delta, dp, use_fmt):
    m = n - 1.0  # v knows its own report: n - 1 unknown reports are shuffled between two visits
    erl = 12.0 * eps_l * jnp.sqrt(jnp.log(1.0 / delta) / m)
    fmt, fmt_ok = _fmt_epsilon(eps_l, m, delta)
    per = jnp.where(use_fmt, fmt, erl)
    valid = jnp.where(use_fmt, fmt_ok, True)
    return _advanced(per, K, -jnp.log(dp)), K * delta + dp, valid


def ring_histogram_bound(*, n, K, eps_local, delta, delta_prime, form="erlingsson"):
    """Histograms on the ring, Cyffers & Bellet Thm 2 (Algorithm 2) and its general form (Remark 2).

    Between two visits of v the token gains a histogram of the other users' RR_gamma reports, i.e. their
    shuffle; ``eps_local`` is the LDP level of RR_gamma (ln(1 + L (1 - gamma)/gamma)).  Per visit:

    * ``form="erlingsson"`` (Thm 2, Erlingsson et al. 2019 Cor. 9): 12 eps_local sqrt(ln(1/delta)/(n - 1)),
      refused outside the stated conditions eps_local < 1/2, delta < 1/100, n > 1000;
    * ``form="fmt"`` (Remark 2, Feldman-McMillan-Talwar Thm 3.1): min(eps_local, FMT(eps_local, n - 1, delta)),
      and eps_local itself where FMT's condition fails (``valid`` False there).

    We shuffle n - 1 reports (v's own is known to v; the paper writes n).  Advanced composition over K
    visits: (sqrt(2K ln(1/delta')) e + K e (e^e - 1), K delta + delta').
    """
    V.one_of("form", form, ("erlingsson", "fmt"))
    nn = _n("n", n)
    k = V.integer("K", K, minimum=1).astype(np.float64)
    e = V.positive("eps_local", eps_local)
    d = V.unit_open("delta", delta)
    dp = V.unit_open("delta_prime", delta_prime)
    if form == "erlingsson":
        if np.any(e >= 0.5):
            raise ValueError(f"Theorem 2 (Erlingsson et al.) requires eps_local < 1/2, got eps_local={np.max(e)!r}; "
                             "use form='fmt'.")
        if np.any(d >= 0.01):
            raise ValueError(f"Theorem 2 requires delta < 1/100, got delta={np.max(d)!r}; use form='fmt'.")
        if np.any(nn <= 1000):
            raise ValueError(f"Theorem 2 requires n > 1000, got n={np.min(nn)!r}; use form='fmt'.")
    shape = V.broadcastable(n=nn, K=k, eps_local=e, delta=d, delta_prime=dp)
    eps, delta_t, valid = _ring_hist_kernel(*_b(shape, nn, k, e, d, dp), jnp.asarray(form == "fmt"))
    return NetworkBound(eps, delta_t, valid)


# ----------------------------------------------------------------------------------------------------------
# Complete graph (Section 4.1, App. D, App. E)


def _eq10(n, m, eps_a):
    """Eq. 10 (Balle, Barthe, Gaboardi 2018 Thm 10 as used in App. D): log(1 + (1 - (1 - 1/n)^m)(e^eps_A - 1))."""
    q = -jnp.expm1(m * jnp.log1p(-1.0 / n))
    return jnp.log1p(q * jnp.expm1(eps_a))


@float64_jit
def _eq10_kernel(n, m, eps_a):
    return _eq10(n, m, eps_a)


def subsampled_cycle_epsilon(*, n, m, eps_aggregate):
    """Privacy loss of one cycle of length m, Cyffers & Bellet Eq. 10 (App. D).

    The token's change over a cycle is a mechanism A (epsilon eps_aggregate) applied to m users drawn
    uniformly with replacement among n: eps_cycle = log(1 + (1 - (1 - 1/n)^m)(e^eps_aggregate - 1)), with
    delta_cycle <= delta_A as stated in App. D -- Balle et al.'s Thm 10 adds the group-privacy deltas of
    repeated draws (module docstring).  Gaussian aggregation of m contributions: eps_aggregate =
    eps0 / sqrt(m) (classical Gaussian mechanism, eps0 < 1).
    """
    nn = _n("n", n)
    mm = V.nonnegative("m", m)
    e = V.nonnegative("eps_aggregate", eps_aggregate)
    shape = V.broadcastable(n=nn, m=mm, eps_aggregate=e)
    return _eq10_kernel(*_b(shape, nn, mm, e))


@float64_jit
def _thm3_kernel(n, T, eps0, dp, dh):
    nv, ok = _chernoff_count(T / n, -jnp.log(dh))
    k = nv + T / n  # real visits (Chernoff) + at most T/n fictive observations
    ec = 3.0 * eps0 / jnp.sqrt(n)
    return _advanced(ec, k, -jnp.log(dp)), k, ok


def _thm3_as_printed(*, n, T, eps0, delta_prime, delta_hat):
    """App. D's final bound exactly as printed (second term k eps (e^{eps_c} - 1)); for the tests only."""
    n, T, eps0 = (np.asarray(x, dtype=np.float64) for x in (n, T, eps0))
    r = np.sqrt(3.0 * T / n * np.log(1.0 / delta_hat))
    ec = 3.0 * eps0 / np.sqrt(n)
    return np.sqrt((4.0 * T / n + 2.0 * r) * np.log(1.0 / delta_prime)) * ec + (2.0 * T / n + r) * eps0 * np.expm1(ec)


def _thm3_inputs(n, T, eps0, delta_prime, delta_hat):
    nn = _n("n", n)
    tt = V.integer("T", T, minimum=1).astype(np.float64)
    e = V.positive("eps0", eps0)
    if np.any(e >= 1):
        raise ValueError(f"Theorem 3 requires eps0 < 1 (the Gaussian aggregation step e^(eps0/sqrt(m)) - 1 <= "
                         f"2 eps0/sqrt(m)), got eps0={np.max(e)!r}.")
    dp = V.unit_open("delta_prime", delta_prime)
    dh = V.unit_open("delta_hat", delta_hat)
    return nn, tt, e, dp, dh


def complete_graph_sum_epsilon(*, n, T, eps0, delta_prime, delta_hat):
    """Epsilon of Cyffers & Bellet Thm 3 in its full non-asymptotic form (App. D), CORRECTED per ERRATA.

    Real summation by a T-step random walk on the complete graph of n users, each contribution
    (eps0, delta0)-LDP by Gaussian noise (eps0 < 1).  v's visits are bounded by the Chernoff bound
    N_v = T/n + sqrt(3 T/n ln(1/delta_hat)) (probability 1 - delta_hat), plus at most T/n fictive observations;
    each cycle of length m <= n costs at most eps_c = 3 eps0 / sqrt(n) (Eq. 10 with e^x - 1 <= 2x and
    1 - (1 - 1/n)^m <= 3m/(2n)); advanced composition over k = N_v + T/n cycles:

        eps_f = sqrt(2 k ln(1/delta')) eps_c + k eps_c (e^{eps_c} - 1).

    The printed App. D has eps instead of eps_c in the second term (ERRATA).  The delta is
    (N_v + T/n) delta0 + delta' + delta_hat (:func:`complete_graph_sum_bound`).  Where T/n < 3 ln(1/delta_hat)
    the paper's Chernoff form does not hold and the general one is used (``valid`` in
    :func:`complete_graph_sum_bound`).  Broadcasts over all arguments; eps0 >= 1 is refused.
    """
    nn, tt, e, dp, dh = _thm3_inputs(n, T, eps0, delta_prime, delta_hat)
    shape = V.broadcastable(n=nn, T=tt, eps0=e, delta_prime=dp, delta_hat=dh)
    return _thm3_kernel(*_b(shape, nn, tt, e, dp, dh))[0]


def complete_graph_sum_bound(*, n, T, eps0, delta0, delta_prime, delta_hat, colluders=1, fixed_contributions=False,
                             cycle_delta="group"):
    """Thm 3 / App. D as a full (epsilon, delta, valid) bound, with collusions and the fixed-contribution variant.

    ``colluders`` = c: Sec. 4.3, c colluding users act as one node of a graph with n / c users (the visits to
    the coalition are Binomial(T, c/n) and cycles Geometric(c/n)), so the bound is evaluated at n / c.
    ``fixed_contributions=True``: Fig. 1(a)'s dashed curves, every user contributes exactly T/n times
    (N_v = T/n, no delta_hat).  delta = (N_v + T/n) delta_c + delta' + delta_hat, with delta_c = delta0 as in
    App. D (``cycle_delta="paper"``) or, by default (``"group"``), the per-cycle delta with Balle et al.
    Thm 10's group terms for a user drawn several times in one cycle (:func:`_closed_group_delta`), which the
    paper omits (module docstring).  The epsilon is the same either way.
    """
    V.one_of("cycle_delta", cycle_delta, ("group", "paper"))
    nn, tt, e, dp, dh = _thm3_inputs(n, T, eps0, delta_prime, delta_hat)
    d0 = V.probability("delta0", delta0)
    cc = _colluders(nn, colluders)
    shape = V.broadcastable(n=nn, T=tt, eps0=e, delta0=d0, delta_prime=dp, delta_hat=dh, colluders=cc)
    nb, tb, eb, d0b, dpb, dhb, cb = _b(shape, nn, tt, e, d0, dp, dh, cc)
    if cycle_delta == "group" and np.any(d0 <= 0):
        raise ValueError(f"Expected delta0 > 0 with cycle_delta='group' (the Gaussian's calibration), got "
                         f"delta0={np.min(d0)!r}.")
    return _sum_bound_kernel(nb / cb, tb, eb, d0b, dpb, dhb, jnp.asarray(bool(fixed_contributions)),
                             jnp.asarray(cycle_delta == "group"))


def _closed_group_delta(n, eps0, d_base, gaussian):
    """Per-cycle delta of the fictive walk with Balle et al. Thm 10's group terms, sup over cycle lengths m <= n.

    K ~ Binomial(m, 1/n) draws of u; delta'(m) = sum_k P(K = k) D_k(m), D_1 = d_base (the paper's delta_A).
    Gaussian, k >= 2: D_k(m) = Phi(r/2 - c0/k) - e^{eps_A} Phi(-r/2 - c0/k), r = k eps0 / (sqrt(m) c0),
    c0 = sqrt(2 ln(1.25/delta0)), eps_A = eps0/sqrt(m) (the exact hockey-stick of the Gaussian with sensitivity k
    and noise sqrt(m) sigma); with eps_A / r = c0/k fixed it increases with r (its derivative in r is
    phi(r/2 - c) - c e^{rc} Phi(-r/2 - c) >= phi(r/2 - c) r/2 / (r/2 + c) > 0 by Mills' ratio), so it is
    non-increasing in m.  Histograms, k >= 2: tanh(k eps0 / 2) (worst k eps0-DP pair).  On each
    interval [m_a, m_b] of the grid of :func:`_hist_cycle_sup` the bound sum_k P_{m_b}(K = k) max_{j <= k} D_j(m_a)
    holds (stochastic monotonicity of the Binomial in m); k >= 25 is charged 1 with the Chernoff bound
    e^{-mu} (e mu / 25)^25.  Returns the max over the intervals up to n.
    """
    from ..numerics import log_ndtr, log_sub

    g = jnp.asarray(_M_GRID)
    nn = n[..., None]
    lo = jnp.minimum(g, jnp.ceil(nn))
    hi = jnp.minimum(jnp.where(g <= _M_INT, g, jnp.concatenate([g[1:], g[-1:]])), jnp.ceil(nn))
    k = jnp.arange(1, _KMAX_GROUP + 1, dtype=jnp.float64)
    e = eps0[..., None, None]
    if gaussian:
        c0 = jnp.sqrt(2.0 * jnp.log(1.25 / d_base))[..., None, None]
        r = k * e / (jnp.sqrt(lo)[..., None] * c0)
        ea = r * c0 / k  # eps_A(m_a) = eps0 / sqrt(m_a)
        dk = jnp.exp(log_sub(log_ndtr(0.5 * r - c0 / k), ea + log_ndtr(-0.5 * r - c0 / k)))
    else:
        dk = jnp.broadcast_to(jnp.tanh(0.5 * k * e), lo.shape + k.shape)
    dk = jnp.where(k == 1.0, d_base[..., None, None], dk)
    dk = jax.lax.cummax(dk, axis=dk.ndim - 1)
    m = hi[..., None]
    p = 1.0 / nn[..., None]
    ratio = jnp.log(jnp.maximum(m - k + 1.0, 1.0)) - jnp.log(k) + jnp.log(p) - jnp.log1p(-p)
    pmf = jnp.where(k <= m, jnp.exp(m * jnp.log1p(-p) + jnp.cumsum(ratio, axis=-1)), 0.0)
    a = _KMAX_GROUP + 1.0
    mu = hi / nn
    tail = jnp.where(hi >= a, jnp.minimum(jnp.exp(-mu + a * (1.0 + jnp.log(mu) - jnp.log(a))), 1.0), 0.0)
    per = jnp.minimum(jnp.sum(pmf * dk, axis=-1) + tail, 1.0)
    return jnp.max(jnp.where(g <= jnp.ceil(nn), per, 0.0), axis=-1)


@float64_jit
def _sum_bound_kernel(n, T, eps0, d0, dp, dh, fixed, group):
    eps_r, k_r, ok = _thm3_kernel.jitted(n, T, eps0, dp, dh)
    k_f = 2.0 * T / n
    ec = 3.0 * eps0 / jnp.sqrt(n)
    eps_f = _advanced(ec, k_f, -jnp.log(dp))
    eps = jnp.where(fixed, eps_f, eps_r)
    dc = jnp.where(group, _closed_group_delta(n, eps0, d0, True), d0)
    delta = jnp.where(fixed, k_f * dc + dp, k_r * dc + dp + dh)
    return NetworkBound(eps, jnp.minimum(delta, 1.0), jnp.where(fixed, True, ok))


@float64_jit
def _local_sum_kernel(n, T, eps0, d0, dp, dh, fixed):
    nu, ok = _chernoff_count(T / n, -jnp.log(dh))
    k = jnp.where(fixed, T / n, nu)
    eps = _advanced(eps0, k, -jnp.log(dp))
    return NetworkBound(eps, jnp.where(fixed, k * d0 + dp, k * d0 + dp + dh), jnp.where(fixed, True, ok))


def local_sum_bound(*, n, T, eps0, delta0, delta_prime, delta_hat, fixed_contributions=False):
    """Local-DP analogue of Thm 3 (Sec. 5.1, Fig. 1(a)): Algorithm 3 analysed under LDP.

    Every contribution of u is seen; u contributes at most N_u = T/n + sqrt(3 T/n ln(1/delta_hat)) times
    (Chernoff, probability 1 - delta_hat; exactly T/n with ``fixed_contributions``), each (eps0, delta0)-LDP:
    eps = sqrt(2 N_u ln(1/delta')) eps0 + N_u eps0 (e^eps0 - 1), delta = N_u delta0 + delta' (+ delta_hat).
    """
    nn = _n("n", n)
    tt = V.integer("T", T, minimum=1).astype(np.float64)
    e = V.positive("eps0", eps0)
    d0 = V.probability("delta0", delta0)
    dp = V.unit_open("delta_prime", delta_prime)
    dh = V.unit_open("delta_hat", delta_hat)
    shape = V.broadcastable(n=nn, T=tt, eps0=e, delta0=d0, delta_prime=dp, delta_hat=dh)
    return _local_sum_kernel(*_b(shape, nn, tt, e, d0, dp, dh), jnp.asarray(bool(fixed_contributions)))


# m-grid for the sup over cycle lengths 1..n of the histogram cycle loss: all integers up to _M_INT, then a
# geometric grid (ratio _M_RATIO) on which each interval is bounded from its endpoints (monotonicity).
_M_INT = 512
_M_RATIO = 1.01
_M_GRID = np.unique(np.concatenate([
    np.arange(1, _M_INT + 1, dtype=np.float64),
    np.floor(_M_INT * _M_RATIO ** np.arange(1, int(np.ceil(np.log(1e13 / _M_INT) / np.log(_M_RATIO))) + 1)),
]))


def _hist_cycle_sup(n, eps0, delta):
    """sup over m in [1, n] of Eq. 10 with eps_A(m) = min(eps0, FMT(eps0, m, delta) if valid), a sound upper bound.

    On [m_j, m_{j+1}] the subsampling factor increases and eps_A(m) does not increase with m, so
    log(1 + q(m_{j+1}) (e^{eps_A(m_j)} - 1)) bounds every integer m in the interval.
    """
    g = jnp.asarray(_M_GRID)
    nn = n[..., None]
    lo = jnp.minimum(g, nn)
    hi = jnp.minimum(jnp.concatenate([g[1:], g[-1:]]), nn)
    ea, _ = _fmt_epsilon(eps0[..., None], lo, delta[..., None])
    exact = g <= _M_INT
    m_top = jnp.where(exact, lo, hi)
    val = _eq10(nn, m_top, ea)
    return jnp.max(jnp.where(g <= nn, val, -jnp.inf), axis=-1)


@float64_jit
def _hist_kernel(n, T, eps0, delta, dp, dh, use_fmt, group):
    nv, ok = _chernoff_count(T / n, -jnp.log(dh))
    k = nv + T / n
    closed = 21.0 * jnp.sqrt(jnp.log(4.0 / delta)) * eps0 / jnp.sqrt(n)
    ec = jnp.where(use_fmt, _hist_cycle_sup(n, eps0, delta), closed)
    dc = jnp.where(group, _closed_group_delta(n, eps0, delta, False), delta)
    return NetworkBound(_advanced(ec, k, -jnp.log(dp)), jnp.minimum(k * dc + dp + dh, 1.0), ok)


def complete_graph_histogram_bound(*, n, T, eps0, delta, delta_prime, delta_hat, form="fmt", colluders=1,
                                   cycle_delta="group"):
    """Histograms on the complete graph, Cyffers & Bellet Thm 6 / App. E (Algorithm 5, RR with eps0-LDP).

    Same fictive walk as App. D; a cycle of length m shuffles the m reports it aggregates:

    * ``form="fmt"`` (App. E's "complete formula", Remark 4): eps_c = sup_{1 <= m <= n} Eq. 10 with
      eps_A(m) = min(eps0, FMT(eps0, m, delta)) (FMT Thm 3.1, eps0 where its condition fails), computed
      numerically and soundly (:func:`_hist_cycle_sup`); no condition on eps0 or n.
    * ``form="eq11"`` (the closed form of Thm 6 through Eq. 11): eps_c = 21 sqrt(ln(4/delta)) eps0 / sqrt(n).
      App. E's printed chain (1 - (1-1/n)^m <= 3m/(2n), e^x - 1 <= 2x, Eq. 11) would give 42, but 21 holds
      (our check, l = ln(4/delta), eps0 <= 1, n >= 196 l): a cycle where FMT's condition fails (m < 16 e l)
      costs <= (m/n)(e - 1) eps0 <= 5.4 sqrt(l/n) eps0; where it holds, FMT's factor is <= eps0 and
      8 e^eps0 / m <= 3.92 sqrt(l/m), so eps_A <= 17.1 eps0 sqrt(l/m) and, with
      1 - (1 - 1/n)^m <= 1 - e^{-1.004 m/n} and sup_{x <= 1} (1 - e^{-1.004 x})/sqrt(x) <= 0.634, the cycle
      costs <= (e - 1) 17.1 * 0.634 sqrt(l/n) eps0 = 18.6 sqrt(l/n) eps0.  Tests check it against the
      numerical ``"fmt"`` form.  Refused outside Thm 6's conditions eps0 <= 1, n >= 14^2 ln(4/delta).

    Advanced composition over k = N_v + T/n cycles with the corrected second term k eps_c (e^{eps_c} - 1)
    (the printed Thm 6 has the same slip as App. D); delta = k delta_c + delta' + delta_hat with delta_c = delta
    as in App. E (``cycle_delta="paper"``) or, by default, with Balle et al. Thm 10's group terms
    (:func:`_closed_group_delta`; for randomized response they are large, since k >= 2 reports of one user are
    only bounded by group privacy).  ``colluders``: Sec. 4.3, evaluated at n / c.
    """
    V.one_of("form", form, ("fmt", "eq11"))
    V.one_of("cycle_delta", cycle_delta, ("group", "paper"))
    nn = _n("n", n)
    tt = V.integer("T", T, minimum=1).astype(np.float64)
    e = V.positive("eps0", eps0)
    d = V.unit_open("delta", delta)
    dp = V.unit_open("delta_prime", delta_prime)
    dh = V.unit_open("delta_hat", delta_hat)
    cc = _colluders(nn, colluders)
    if form == "eq11":
        if np.any(e > 1):
            raise ValueError(f"Theorem 6 (Eq. 11) requires eps0 <= 1, got eps0={np.max(e)!r}; use form='fmt'.")
        bad = np.broadcast_to(nn / cc < 196.0 * np.log(4.0 / d), np.broadcast_shapes(nn.shape, cc.shape, d.shape))
        if np.any(bad):
            raise ValueError(f"Theorem 6 (Eq. 11) requires n >= 14^2 ln(4/delta), got n={np.min(nn)!r}, "
                             f"delta={np.min(d)!r}; use form='fmt'.")
    shape = V.broadcastable(n=nn, T=tt, eps0=e, delta=d, delta_prime=dp, delta_hat=dh, colluders=cc)
    nb, tb, eb, db, dpb, dhb, cb = _b(shape, nn, tt, e, d, dp, dh, cc)
    return _hist_kernel(nb / cb, tb, eb, db, dpb, dhb, jnp.asarray(form == "fmt"), jnp.asarray(cycle_delta == "group"))


@float64_jit
def _spotted_kernel(n, nu, eps0, dp, dt, advanced):
    s, ok = _chernoff_count(2.0 * nu / n, -jnp.log(dt))
    adv = _advanced(eps0, s, -jnp.log(dp))
    return SpottedBound(jnp.where(advanced, jnp.minimum(adv, s * eps0), s * eps0), s, ok)


def spotted_contributions_epsilon(*, n, contributions, eps0, delta_prime, delta_tilde, composition="advanced"):
    """Privacy loss of spotted contributions when sender and receiver are known, Cyffers & Bellet App. G, Lemma 2.

    Each of u's ``contributions`` (N_u) is adjacent to v with probability 2/n; Chernoff bounds the number of
    spotted ones by S = 2 N_u/n + sqrt(6 N_u/n ln(1/delta_tilde)) (probability 1 - delta_tilde; the general
    multiplicative bound where 3 ln(1/delta_tilde) > 2 N_u / n, ``valid`` False), each costing eps0:

    * ``composition="simple"``: S eps0;
    * ``composition="advanced"``: sqrt(2 S ln(1/delta')) eps0 + S eps0 (e^eps0 - 1) (capped by S eps0).  The
      printed Lemma 2 writes sqrt(S ln(1/delta')): advanced composition has the factor 2 (corrected here).

    To be added (with delta_tilde and S delta0 + delta') to the hidden-path bound.
    """
    V.one_of("composition", composition, ("advanced", "simple"))
    nn = _n("n", n)
    nu = V.nonnegative("contributions", contributions)
    e = V.positive("eps0", eps0)
    dp = V.unit_open("delta_prime", delta_prime)
    dt = V.unit_open("delta_tilde", delta_tilde)
    shape = V.broadcastable(n=nn, contributions=nu, eps0=e, delta_prime=dp, delta_tilde=dt)
    return _spotted_kernel(*_b(shape, nn, nu, e, dp, dt), jnp.asarray(composition == "advanced"))


# ----------------------------------------------------------------------------------------------------------
# SGD (Section 4.2, App. F)


@float64_jit
def _thm4_kernel(n, T, eps, delta, dh):
    nu, ok = _chernoff_count(T / n, -jnp.log(dh))
    l = -jnp.log(delta)
    q = jnp.maximum(2.0 * nu * jnp.log(n) / n, 2.0 * l)
    out = jnp.sqrt(2.0 * q * l) * eps / jnp.sqrt(jnp.log(1.25 / delta))
    # App. F's order alpha = sigma sqrt(ln(1/delta)) / (L sqrt q) must satisfy alpha >= 2 and
    # sigma >= L sqrt(2 alpha (alpha - 1)), with sigma / L = sqrt(8 ln(1.25/delta)) / eps.
    s_over_l = jnp.sqrt(8.0 * jnp.log(1.25 / delta)) / eps
    alpha = s_over_l * jnp.sqrt(l / q)
    cond = (alpha >= 2.0) & (s_over_l >= jnp.sqrt(2.0 * alpha * (alpha - 1.0)))
    return NetworkBound(out, delta + dh, ok & cond)


def sgd_theorem4_bound(*, n, T, eps, delta, delta_hat, colluders=1):
    """Network DP of private SGD on the complete graph, Cyffers & Bellet Thm 4 (Eq. 7), closed form.

    Each step adds N(0, 8 L^2 ln(1.25/delta) / eps^2) noise (eps-LDP per step, sensitivity 2L).  With
    N_u = T/n + sqrt(3 T/n ln(1/delta_hat)) and q = max(2 N_u ln n / n, 2 ln(1/delta)),
    eps' = sqrt(2 q ln(1/delta)) eps / sqrt(ln(1.25/delta)) and the guarantee is (eps', delta + delta_hat).
    Requires eps < 1 and delta < 1/2 (refused otherwise).  ``valid`` is False where App. F's order
    alpha = sigma sqrt(ln(1/delta)) / (L sqrt q) misses alpha >= 2 or Lemma 1's constraint, or where the
    Chernoff form is replaced by the general one; use :func:`network_sgd_epsilon` there (Remark 5).
    """
    nn = _n("n", n)
    tt = V.integer("T", T, minimum=1).astype(np.float64)
    e = V.positive("eps", eps)
    if np.any(e >= 1):
        raise ValueError(f"Theorem 4 requires eps < 1, got eps={np.max(e)!r}.")
    d = V.unit_open("delta", delta)
    if np.any(d >= 0.5):
        raise ValueError(f"Theorem 4 requires delta < 1/2, got delta={np.max(d)!r}.")
    dh = V.unit_open("delta_hat", delta_hat)
    cc = _colluders(nn, colluders)
    shape = V.broadcastable(n=nn, T=tt, eps=e, delta=d, delta_hat=dh, colluders=cc)
    nb, tb, eb, db, dhb, cb = _b(shape, nn, tt, e, d, dh, cc)
    return _thm4_kernel(nb / cb, tb, eb, db, dhb)


def _lemma1_coef(sigma, n, tu, L):
    """Lemma 1: network RDP (alpha, c alpha) with c = 4 T_u L^2 ln n / (sigma^2 n)."""
    return 4.0 * tu * L * L * jnp.log(n) / (sigma * sigma * n)


def _alpha_max(sigma, L):
    """Largest alpha with sigma >= L sqrt(2 alpha (alpha - 1)): (1 + sqrt(1 + 2 sigma^2 / L^2)) / 2, rounded down."""
    r = sigma / L
    a = 0.5 * (1.0 + jnp.sqrt(1.0 + 2.0 * r * r))
    a = a * (1.0 - 4e-16)
    return jnp.where(2.0 * a * (a - 1.0) <= r * r, a, 1.0 + (a - 1.0) * (1.0 - 1e-12))


_N_ALPHA = 96


def _best_linear_rdp_epsilon(c, log_delta, alpha_max, method):
    """min over alpha in (1, alpha_max] of the RDP->DP conversion of the linear curve c alpha.

    Evaluated on a geometric grid of alpha - 1 in (1e-6 (alpha_max - 1), alpha_max - 1] plus a golden-section
    refinement around the best grid point; every evaluated order is admissible, so the minimum is a valid bound.
    For ``method="mironov"`` the optimum is also available in closed form (alpha* = 1 + sqrt(ln(1/delta)/c),
    clipped to alpha_max) and included.
    """
    from ..conversions import rdp_epsilon_terms

    am1 = alpha_max - 1.0
    t = jnp.linspace(-14.0, 0.0, _N_ALPHA)
    alphas = 1.0 + am1[..., None] * jnp.exp(t)
    e = rdp_epsilon_terms(alphas, c[..., None] * alphas, log_delta[..., None], method)
    i = jnp.argmin(e, axis=-1)
    best = jnp.take_along_axis(e, i[..., None], -1)[..., 0]
    best_a = jnp.take_along_axis(alphas, i[..., None], -1)[..., 0]
    # golden section on log(alpha - 1) between the neighbours of the best grid point
    step = t[1] - t[0]
    lo_t = t[0] + step * jnp.maximum(i - 1, 0)
    hi_t = t[0] + step * jnp.minimum(i + 1, _N_ALPHA - 1)
    g = 0.6180339887498949

    def f(tt):
        a = 1.0 + am1 * jnp.exp(tt)
        return rdp_epsilon_terms(a, c * a, log_delta, method), a

    def body(_, s):
        a, b, be, ba = s
        x1 = b - g * (b - a)
        x2 = a + g * (b - a)
        f1, a1 = f(x1)
        f2, a2 = f(x2)
        left = f1 <= f2
        na = jnp.where(left, a, x1)
        nb = jnp.where(left, x2, b)
        fm = jnp.where(left, f1, f2)
        am = jnp.where(left, a1, a2)
        better = fm < be
        return na, nb, jnp.where(better, fm, be), jnp.where(better, am, ba)

    _, _, best, best_a = jax.lax.fori_loop(0, 40, body, (lo_t, hi_t, best, best_a))
    if method == "mironov":
        a_star = jnp.minimum(1.0 + jnp.sqrt(-log_delta / c), alpha_max)
        e_star = rdp_epsilon_terms(a_star, c * a_star, log_delta, method)
        better = e_star < best
        best = jnp.where(better, e_star, best)
        best_a = jnp.where(better, a_star, best_a)
    return best, best_a


def network_sgd_rdp(orders, *, sigma, n, contributions, lipschitz=1.0, colluders=1):
    """Lemma 1 (Cyffers & Bellet App. F): Algorithm 4 is (alpha, 4 T_u alpha L^2 ln n / (sigma^2 n))-network RDP
    for every alpha > 1 with sigma >= L sqrt(2 alpha (alpha - 1)) (weak convexity, Feldman et al. 2018 Prop. 4
    with c = 1, and amplification by iteration, their Thm 23).

    Returns the curve at ``orders`` (trailing axis).  An order violating the constraint for some sigma is a
    ValueError naming sigma (the lemma says nothing there).  ``colluders``: Sec. 4.3, n -> n / c.
    """
    a = V.orders("orders", orders)
    s = V.positive("sigma", sigma)
    nn = _n("n", n)
    tu = V.nonnegative("contributions", contributions)
    L = V.positive("lipschitz", lipschitz)
    cc = _colluders(nn, colluders)
    shape = V.broadcastable(sigma=s, n=nn, contributions=tu, lipschitz=L, colluders=cc)
    need = np.broadcast_to(L, shape)[..., None] * np.sqrt(2.0 * a * (a - 1.0))
    if np.any(np.broadcast_to(s, shape)[..., None] < need):
        raise ValueError(f"Expected sigma >= L sqrt(2 alpha (alpha - 1)) for every order (Lemma 1), got "
                         f"sigma={np.min(s)!r} with max order {a.max()!r} (needs sigma >= {need.max()!r}).")
    with x64_scope():
        sb, nb, tb, lb, cb = _b(shape, s, nn, tu, L, cc)
        return _lemma1_coef(sb, nb / cb, tb, lb)[..., None] * jnp.asarray(a)


def _network_sgd_eps(sigma, n, tu, delta, L, method):
    c = _lemma1_coef(sigma, n, tu, L)
    return _best_linear_rdp_epsilon(c, jnp.log(delta), _alpha_max(sigma, L), method)


@float64_jit(static_argnames=("method",))
def _network_sgd_kernel(sigma, n, tu, delta, L, method):
    return SgdEpsilon(*_network_sgd_eps(sigma, n, tu, delta, L, method))


@float64_jit(static_argnames=("method",))
def _network_sgd_fixed_kernel(sigma, n, tu, delta, L, order, method):
    from ..conversions import rdp_epsilon_terms

    c = _lemma1_coef(sigma, n, tu, L)
    return SgdEpsilon(rdp_epsilon_terms(order, c * order, jnp.log(delta), method), order)


def network_sgd_epsilon(*, sigma, n, contributions, delta, lipschitz=1.0, order=None, colluders=1,
                        method="balle2020"):
    """Network-DP epsilon of Algorithm 4 from Lemma 1, with the order optimised in the admissible interval
    (Cyffers & Bellet Remark 5): alpha in (1, alpha_max], alpha_max = (1 + sqrt(1 + 2 sigma^2/L^2)) / 2.

    ``contributions`` is T_u, the (high-probability or enforced, Sec. 5.2's c T / n) maximal number of
    contributions of a user.  The RDP -> DP conversion is ``amplify_jax.conversions.rdp_epsilon_terms``
    (``method="balle2020"``, Balle et al. 2020, or ``"mironov"``, Mironov 2017 Prop. 3 as in the paper).
    ``order`` fixes alpha instead (ValueError naming sigma if Lemma 1's constraint fails).
    Returns :class:`SgdEpsilon` (epsilon, order).  This is Lemma 1 alone: for small sigma the admissible
    interval is short and the result can exceed :func:`local_sgd_epsilon` (local DP implies network DP, so
    the smaller of the two is also a valid network-DP guarantee).
    """
    V.one_of("method", method, ("balle2020", "mironov"))
    s = V.positive("sigma", sigma)
    nn = _n("n", n)
    tu = V.positive("contributions", contributions)
    d = V.unit_open("delta", delta)
    L = V.positive("lipschitz", lipschitz)
    cc = _colluders(nn, colluders)
    if order is not None:
        o = V.orders("order", order)
        if np.ndim(order) == 0:
            o = o.reshape(())
        shape = V.broadcastable(sigma=s, n=nn, contributions=tu, delta=d, lipschitz=L, colluders=cc, order=o)
        need = np.broadcast_to(L, shape) * np.sqrt(2.0 * o * (o - 1.0))
        if np.any(np.broadcast_to(s, shape) < need):
            raise ValueError(f"Expected sigma >= L sqrt(2 alpha (alpha - 1)) = {np.max(need)!r} at order={np.max(o)!r} "
                             f"(Lemma 1), got sigma={np.min(s)!r}.")
        sb, nb, tb, db, lb, cb, ob = _b(shape, s, nn, tu, d, L, cc, o)
        return _network_sgd_fixed_kernel(sb, nb / cb, tb, db, lb, ob, method)
    shape = V.broadcastable(sigma=s, n=nn, contributions=tu, delta=d, lipschitz=L, colluders=cc)
    sb, nb, tb, db, lb, cb = _b(shape, s, nn, tu, d, L, cc)
    return _network_sgd_kernel(sb, nb / cb, tb, db, lb, method)


def _local_sgd_eps(sigma, tu, delta, L, method):
    c = 2.0 * tu * L * L / (sigma * sigma)  # T_u alpha (2L)^2 / (2 sigma^2)
    amax = 2.0 + 8.0 * jnp.sqrt(-jnp.log(delta) / c) + 8.0
    return _best_linear_rdp_epsilon(c, jnp.log(delta), amax, method)


@float64_jit(static_argnames=("method",))
def _local_sgd_kernel(sigma, tu, delta, L, method):
    return SgdEpsilon(*_local_sgd_eps(sigma, tu, delta, L, method))


def local_sgd_epsilon(*, sigma, contributions, delta, lipschitz=1.0, method="balle2020"):
    """Local-DP epsilon of Algorithm 4 (Cyffers & Bellet Sec. 5.2 "Local DP-SGD").

    Every one of u's ``contributions`` is a Gaussian gradient release with sensitivity 2L (Bassily et al. 2014):
    RDP T_u alpha (2L)^2 / (2 sigma^2) (Mironov 2017), converted with the order optimised over alpha > 1.
    """
    V.one_of("method", method, ("balle2020", "mironov"))
    s = V.positive("sigma", sigma)
    tu = V.positive("contributions", contributions)
    d = V.unit_open("delta", delta)
    L = V.positive("lipschitz", lipschitz)
    shape = V.broadcastable(sigma=s, contributions=tu, delta=d, lipschitz=L)
    return _local_sgd_kernel(*_b(shape, s, tu, d, L), method)


_CENTRAL_MAX_ORDER = 128


def _central_sgd_eps(sigma, n, T, delta, L):
    from ..conversions import rdp_epsilon_terms
    from ..rdp import without_replacement_rdp_kernel

    j = jnp.arange(2, _CENTRAL_MAX_ORDER + 1, dtype=jnp.float64)
    base = j * (2.0 * L[..., None]) ** 2 / (2.0 * sigma[..., None] ** 2)
    curve = without_replacement_rdp_kernel(base, 1.0 / n)
    e = rdp_epsilon_terms(j, T[..., None] * curve, jnp.log(delta)[..., None], "balle2020")
    i = jnp.argmin(e, axis=-1)
    return jnp.take_along_axis(e, i[..., None], -1)[..., 0], j[i]


@float64_jit
def _central_sgd_kernel(sigma, n, T, delta, L):
    return SgdEpsilon(*_central_sgd_eps(sigma, n, T, delta, L))


def _central_inputs(sigma, n, T, delta, lipschitz):
    """Validated, broadcast inputs of the central DP-SGD baselines."""
    s = V.positive("sigma", sigma)
    nn = _n("n", n)
    tt = V.integer("T", T, minimum=1).astype(np.float64)
    d = V.unit_open("delta", delta)
    L = V.positive("lipschitz", lipschitz)
    shape = V.broadcastable(sigma=s, n=nn, T=tt, delta=d, lipschitz=L)
    return _b(shape, s, nn, tt, d, L)


def central_sgd_epsilon(*, sigma, n, T, delta, lipschitz=1.0):
    """Central DP-SGD baseline (Bassily, Smith, Thakurta 2014; Cyffers & Bellet Sec. 5.2 "Centralized DP-SGD").

    A trusted curator runs T steps; each samples one user uniformly (sampling without replacement of size 1,
    q = 1/n) and adds N(0, sigma^2) to the gradient (sensitivity 2L under replace-one).  Accounting: RDP of the
    subsampled Gaussian by Wang, Balle, Kasiviswanathan 2019 Thm 9 (``amplify_jax.rdp``) at integer orders
    2..128, composed over T steps and converted (Balle et al. 2020).  This replaces Bassily et al.'s
    amplification + advanced composition by the tighter RDP accountant for the same algorithm.
    """
    return _central_sgd_kernel(*_central_inputs(sigma, n, T, delta, lipschitz))


def _analytic_gaussian_epsilon(ratio, log_delta):
    """Exact eps of the Gaussian mechanism with sensitivity / sigma = ``ratio`` at delta (Balle & Wang 2018, Thm 8):
    the least eps with Phi(r/2 - eps/r) - e^eps Phi(-r/2 - eps/r) <= delta, by 100 bisection steps on
    [0, r^2/2 + r sqrt(2 ln(1/delta)) + 1] returning the feasible end."""
    from ..numerics import log_ndtr, log_sub

    def log_d(e):
        return log_sub(log_ndtr(0.5 * ratio - e / ratio), e + log_ndtr(-0.5 * ratio - e / ratio))

    lo = jnp.zeros_like(ratio)
    hi = 0.5 * ratio * ratio + ratio * jnp.sqrt(-2.0 * log_delta) + 1.0  # the classical bound, always feasible

    def body(_, s):
        lo, hi = s
        mid = 0.5 * (lo + hi)
        ok = log_d(mid) <= log_delta
        return jnp.where(ok, lo, mid), jnp.where(ok, mid, hi)

    lo, hi = jax.lax.fori_loop(0, 100, body, (lo, hi))
    return jnp.where(log_d(jnp.zeros_like(ratio)) <= log_delta, 0.0, hi)


def _bassily(sigma, n, T, delta, L):
    """Central DP-SGD by amplification + advanced composition (the route of Bassily et al. 2014)."""
    d1 = n * delta / (2.0 * T)  # T * delta1 / n = delta / 2
    e1 = _analytic_gaussian_epsilon(2.0 * L / sigma, jnp.log(d1))
    e2 = jnp.log1p(jnp.expm1(e1) / n)  # one user sampled out of n (Balle, Barthe, Gaboardi 2018)
    eps = _advanced(e2, T, -jnp.log(0.5 * delta))
    valid = d1 < 1.0
    return jnp.where(valid, eps, jnp.inf), valid


@float64_jit
def _bassily_kernel(sigma, n, T, delta, L):
    eps, valid = _bassily(sigma, n, T, delta, L)
    return NetworkBound(eps, delta, valid)


def central_sgd_bassily_epsilon(*, sigma, n, T, delta, lipschitz=1.0):
    """Central DP-SGD accounted as in Bassily, Smith, Thakurta 2014 (the paper's "Centralized DP-SGD").

    Per step the noisy gradient (sensitivity 2L) is (e1, delta1)-DP with e1 the exact (analytic) Gaussian
    epsilon (Balle & Wang 2018; the classical sqrt(2 ln(1.25/delta1)) form would need e1 < 1); sampling one
    user out of n amplifies it to e2 = ln(1 + (e^e1 - 1)/n), delta1 / n; advanced composition over T steps with
    delta' = delta/2 and delta1 = n delta / (2T) gives (sqrt(2T ln(2/delta)) e2 + T e2 (e^e2 - 1), delta).
    This is our own derivation along Bassily et al.'s route (their Thm 2.1 fixes T = n^2; the authors' script
    uses the closed form 16 L sqrt(T ln(2/delta) ln(1.25 T/(delta n))) / (n eps)).  ``valid`` is False (and
    epsilon inf) only where delta1 = n delta / (2T) >= 1.
    Much looser than :func:`central_sgd_epsilon` (RDP); kept to reproduce the paper's comparison.
    """
    return _bassily_kernel(*_central_inputs(sigma, n, T, delta, lipschitz))


def _central_bassily_for_sigma(sigma, n, T, delta, L):
    return _bassily(sigma, n, T, delta, L)[0]


def _net_eps_for_sigma(sigma, n, tu, delta, L):
    return _network_sgd_eps(sigma, n, tu, delta, L, "balle2020")[0]


def _local_eps_for_sigma(sigma, n, tu, delta, L):
    return _local_sgd_eps(sigma, tu, delta, L, "balle2020")[0]


def _central_eps_for_sigma(sigma, n, T, delta, L):
    return _central_sgd_eps(sigma, n, T, delta, L)[0]


def calibrate_sgd_sigma(*, eps, delta, n, T, setting, contributions=None, lipschitz=1.0, rtol=1e-6):
    """Minimal per-step noise std sigma meeting (eps, delta) for network, local or central DP-SGD (Sec. 5.2).

    ``setting``: ``"network"`` (Lemma 1 + Remark 5, :func:`network_sgd_epsilon`), ``"local"``
    (:func:`local_sgd_epsilon`), ``"central"`` (:func:`central_sgd_epsilon`, RDP) or ``"central_bassily"``
    (:func:`central_sgd_bassily_epsilon`, the paper's baseline).  ``contributions`` (T_u) is
    required for network and local (Sec. 5.2 enforces T_u = c T / n); central uses ``T``.  Batched through
    :func:`amplify_jax.calibrate.invert_monotone` (bisection on log sigma, feasible endpoint re-checked):
    returns its ``Inversion(value, status, achieved)`` with achieved = eps(value) <= eps when status is 0.
    """
    from ..calibrate import invert_monotone

    V.one_of("setting", setting, ("network", "local", "central", "central_bassily"))
    e = V.positive("eps", eps)
    d = V.unit_open("delta", delta)
    nn = _n("n", n)
    tt = V.integer("T", T, minimum=1).astype(np.float64)
    L = V.positive("lipschitz", lipschitz)
    if setting in ("central", "central_bassily"):
        fn = _central_eps_for_sigma if setting == "central" else _central_bassily_for_sigma
        args = (nn, tt, d, L)
    else:
        if contributions is None:
            raise ValueError(f"Expected contributions (T_u) for setting={setting!r}, got contributions=None.")
        tu = V.positive("contributions", contributions)
        fn = _net_eps_for_sigma if setting == "network" else _local_eps_for_sigma
        args = (nn, tu, d, L)
    return invert_monotone(fn, e, args=args, lo=1e-3, hi=1e6, feasible="above", rtol=rtol)


# ----------------------------------------------------------------------------------------------------------
# Empirical walk simulation (Section 5.1, Figures 1(b) and 3)


class WalkLosses(NamedTuple):
    network: jax.Array  #: (walks, n, n) eps of target u (axis 1) seen by observer v (axis 2); 0 on the diagonal
    network_delta: jax.Array  #: (walks, n, n) the matching delta (KOV Thm 3.5)
    local: jax.Array  #: (walks, n) local-DP eps of each user (all its contributions observed)
    local_delta: jax.Array  #: (walks, n)


class WalkSummary(NamedTuple):
    mean: jax.Array
    min: jax.Array
    max: jax.Array


def sample_walks(seed, *, n, T, num_walks=10, topology="complete"):
    """Token paths of Algorithm 3: ``num_walks`` independent walks of T steps (shape (num_walks, T), int32).

    ``topology="complete"``: every step draws the next user uniformly in {0..n-1} (the walk may stay);
    ``"ring"``: the deterministic directed ring t mod n.
    """
    V.one_of("topology", topology, ("complete", "ring"))
    nn = int(V.integer("n", n, minimum=2))
    tt = int(V.integer("T", T, minimum=1))
    w = int(V.integer("num_walks", num_walks, minimum=1))
    if topology == "ring":
        return jnp.broadcast_to(jnp.arange(tt, dtype=jnp.int32) % nn, (w, tt))
    key = jax.random.PRNGKey(int(seed)) if not isinstance(seed, jax.Array) else seed
    return jax.random.randint(key, (w, tt), 0, nn, dtype=jnp.int32)


def _aggregate_eps(m, eps0, delta, mechanism, agg=None):
    """eps of the aggregate of m >= 1 contributions containing u's: Gaussian eps0 / sqrt(m), histograms
    min(eps0, FMT(eps0, m, delta)) (FMT where its condition holds)."""
    mm = jnp.maximum(m, 1.0)
    if agg is not None:  # a precomputed table over m = 0..T (numerical shuffling bound)
        return agg[jnp.clip(mm, 0, agg.shape[0] - 1).astype(jnp.int32)]
    if mechanism == "gaussian":
        return eps0 / jnp.sqrt(mm)
    return _fmt_epsilon(eps0, mm, delta)[0]


def _tables(T, n, eps0, delta, mechanism, subsample, agg=None):
    """Per-cycle loss for every cycle length m = 0..T (0 at m = 0) and its three KOV sums' terms."""
    m = jnp.arange(T + 1, dtype=jnp.float64)
    ea = _aggregate_eps(m, eps0, delta, mechanism, agg)
    e = _eq10(n - 1.0, m, ea) if subsample else ea
    e = jnp.where(m > 0, e, 0.0)
    return jnp.stack(_kov_terms(e))  # (3, T+1)


_KMAX_GROUP = 24


def _group_delta_table(T, n, eps0, delta0, mechanism, agg=None):
    """log(1 - delta_cycle(m)) for m = 0..T with the group terms of Balle, Barthe, Gaboardi 2018 Thm 10.

    Sampling m users with replacement among the n - 1 others, u is drawn K ~ Binomial(m, 1/(n-1)) times;
    Thm 10's delta' = sum_k P(K = k) delta_k(eps_A), delta_k the base mechanism's delta at eps_A for k changed
    elements.  delta_1 = delta0 (as in the paper).  k >= 2: Gaussian -- the exact hockey-stick of the Gaussian
    with sensitivity k and noise sqrt(m) sigma (Balle & Wang 2018); histograms -- the worst k eps0-DP pair,
    (e^{k eps0} - e^{eps_A}) / (e^{k eps0} + 1).  k > 24 is charged delta = 1, with P(K >= 25) bounded by
    the Chernoff bound e^{-mu} (e mu / 25)^25 (mu = m/(n-1) < 25; 1 otherwise).
    """
    from ..numerics import log_ndtr, log_sub

    m = jnp.arange(T + 1, dtype=jnp.float64)[:, None]
    k = jnp.arange(1, _KMAX_GROUP + 1, dtype=jnp.float64)[None, :]
    p = 1.0 / (n - 1.0)
    mm = jnp.maximum(m, 1.0)
    ea = _aggregate_eps(mm, eps0, delta0, mechanism, agg)
    if mechanism == "gaussian":
        r = k * eps0 / (jnp.sqrt(mm) * jnp.sqrt(2.0 * jnp.log(1.25 / delta0)))
        log_dk = log_sub(log_ndtr(0.5 * r - ea / r), ea + log_ndtr(-0.5 * r - ea / r))
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
    tail bound on the privacy loss N(r^2/2, r^2), valid for every r).  Histograms: j eps0 for j >= 2 (group
    privacy of the j eps0-LDP reports; shuffling is not used), the shuffled eps_A(m) for j = 1.
    """
    mm = jnp.maximum(m, 1.0)
    if mechanism == "gaussian":
        lin = j * eps0 / jnp.sqrt(mm)
        r = lin / jnp.sqrt(2.0 * jnp.log(1.25 / delta0))
        tail = 0.5 * r * r + r * jnp.sqrt(-2.0 * jnp.log(delta0))
        return jnp.where(lin < 1.0, lin, tail)
    one = _aggregate_eps(mm, eps0, delta0, mechanism, agg)
    return jnp.where(j <= 1.0, one, j * eps0)


def _path_known_one(walk, n, eps0, delta0, mechanism, log_inv_dt, log1m_d0, agg=None):
    """Public path (ring, Sec. 3): u's contributions in each cycle of v are known.

    If u appears j times in a cycle of length m, that cycle costs one item eps(j, m) (:func:`_multi_eps`):
    the j-th occurrence adds the increment of the KOV sums from eps(j - 1, m) to eps(j, m) (telescoping).
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
        e_j = _multi_eps(j, m, eps0, delta0, mechanism, agg)
        e_prev = jnp.where(j > 1.0, _multi_eps(j - 1.0, m, eps0, delta0, mechanism, agg), 0.0)
        inc = [jnp.where(seen, a - b, 0.0) for a, b in zip(_kov_terms(e_j), _kov_terms(e_prev))]
        sums = jax.ops.segment_sum(jnp.stack(inc, -1), walk, num_segments=n)  # (n, 3) per target u
        cnt = jax.ops.segment_sum((seen & (j == 1.0)).astype(jnp.float64), walk, num_segments=n)
        return sums, cnt

    sums, cnt = jax.lax.map(per_v, jnp.arange(n, dtype=jnp.int32))  # (v, u, 3), (v, u)
    sums = jnp.maximum(jnp.swapaxes(sums, 0, 1), 0.0)  # (u, v, 3); clip round-off of the telescoping
    cnt = cnt.T
    eps = _kov_from_sums(sums[..., 0], sums[..., 1], sums[..., 2], log_inv_dt)
    delta = -jnp.expm1(jnp.log1p(-jnp.exp(-log_inv_dt)) + cnt * log1m_d0)
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
                                                        log1m_d0, agg))(walks)
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
    (upper end), evaluated on a geometric grid of m (ratio 1.05, all m <= 64) and used on [m_j, m_{j+1}) from
    its left end m_j: sound as the bound does not increase with the number of users m (checked on the grid);
    Fig. 3 of the paper used Balle et al.'s numerical blanket bound).  The cycles are composed with the heterogeneous bound of
    Kairouz, Oh, Viswanath 2015 Thm 3.5 at delta_tilde = ``delta_prime`` (:func:`kov_composition_epsilon`);
    the delta is 1 - (1 - delta') (1 - delta_cycle)^(number of cycles) (delta_cycle: the Gaussian's delta0, or
    the shuffling delta).

    ``view``:

    * ``"hidden"`` (Sec. 4): sender and receiver unknown; the loss depends on v only (all u alike).
    * ``"receiver_known"`` (App. G): v knows who sent it the token and to whom it sent it; those spotted
      contributions cost the full eps0 each (App. G), the rest of the cycle is amplified as above.
    * ``"path_known"`` (ring, Sec. 3, or any public path): no subsampling; a cycle of length m in which u
      appears j times costs the aggregate's eps with sensitivity j (eps_A(m) for j = 1; see
      :func:`_multi_eps` for j >= 2).

    ``cycle_delta`` (hidden and receiver-known views): the epsilon of a cycle is Eq. 10 either way; its delta is
    ``"paper"``: delta_cycle per cycle, as App. D states (delta_cycle <= delta_A), or ``"group"`` (default):
    Balle, Barthe, Gaboardi 2018 Thm 10's full delta' = sum_k P(K = k) delta_k(eps_A), which also charges the
    cycles where u is drawn K >= 2 times (sampling with replacement) with the base mechanism's group-privacy
    delta (:func:`_group_delta_table`).  The paper omits these terms; with m ~ n they dominate (P(K >= 2) is
    about 1/4), so the "group" delta is much larger than the paper's: that is the delta the epsilon is
    actually supported with.

    The local-DP comparison (Fig. 1(b)) composes eps0 over each user's actual number of contributions with the
    same KOV bound.  Returns :class:`WalkLosses`; see :func:`summarize_walk_losses`.
    """
    V.one_of("mechanism", mechanism, ("gaussian", "histogram"))
    V.one_of("view", view, ("hidden", "receiver_known", "path_known"))
    V.one_of("cycle_delta", cycle_delta, ("paper", "group"))
    V.one_of("shuffle_bound", shuffle_bound, ("fmt", "clones"))
    nn = int(V.integer("n", n, minimum=2))
    e = float(V.positive("eps0", eps0))
    if mechanism == "gaussian" and e >= 1:
        raise ValueError(f"Expected eps0 < 1 for mechanism='gaussian' (eps0/sqrt(m) is the classical Gaussian "
                         f"mechanism's scaling), got eps0={e!r}.")
    dp = float(V.unit_open("delta_prime", delta_prime))
    dc = float(V.unit_open("delta_cycle", delta_cycle))
    w = np.asarray(walks)
    if w.ndim == 1:
        w = w[None]
    if w.ndim != 2 or w.shape[1] < 1:
        raise ValueError(f"Expected walks of shape (num_walks, T), got shape {w.shape}.")
    if w.min() < 0 or w.max() >= nn:
        raise ValueError(f"Expected walk entries in [0, n), got values in [{w.min()}, {w.max()}] with n={nn}.")
    custom = mechanism == "histogram" and shuffle_bound == "clones"
    agg = _clones_table(e, w.shape[1], dc) if custom else np.zeros(1)
    with x64_scope():
        return _walk_kernel(jnp.asarray(w, jnp.int32), _f64(e), _f64(dc), _f64(dp), _f64(agg), nn, mechanism, view,
                            cycle_delta == "group", custom)


def _clones_table(eps0, T, delta):
    """eps_A(m), m = 0..T, from FMT's numerical shuffling bound on a geometric grid, used from the left grid point.

    Cached per (eps0, delta) for a power-of-two length >= 2^17 and sliced, so figures sweeping n reuse it.
    """
    big = max(1 << int(np.ceil(np.log2(max(T, 2)))), 1 << 17)
    return _clones_table_full(float(eps0), big, float(delta))[: T + 1]


@functools.lru_cache(maxsize=16)
def _clones_table_full(eps0, T, delta):
    from ..shuffle import clones_epsilon

    top = max(T, 65)
    pts = int(np.ceil(np.log(top / 64.0) / np.log(1.05))) + 1
    grid = np.unique(np.concatenate([np.arange(1, 65), np.floor(np.geomspace(64, top, pts))]))
    res = clones_epsilon(eps0, grid, delta)
    up = np.where(np.asarray(res.valid), np.minimum(np.asarray(res.upper), eps0), eps0)
    if np.any(np.diff(up) > 1e-12):
        raise ValueError("Expected FMT's numerical shuffling bound to be non-increasing in the number of users on "
                         "the grid; it is not, so the step table would not be sound.")
    m = np.arange(T + 1)
    idx = np.clip(np.searchsorted(grid, m, side="right") - 1, 0, len(grid) - 1)
    return np.where(m >= 1, up[idx], eps0)


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


from . import _bounds  # noqa: F401, E402  (registers the bounds)
