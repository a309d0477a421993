"""Section 4.1 of Cyffers & Bellet: the complete graph (Eq. 10, Thm 3 with the non-asymptotic form of App. D,
Thm 6 / App. E for histograms, Sec. 4.3 collusions) and spotted contributions (App. G, Lemma 2)."""

from __future__ import annotations

import numpy as np
import jax
import jax.numpy as jnp

from .._core import validate as V
from .._core.domains import check_params
from ..accounting.approx_dp import advanced_composition, fmt_closed_form, subsampled_epsilon
from .._core.numerics import float64_jit, log_ndtr, log_sub
from ._common import NetworkBound, SpottedBound, _b, _colluders, _up
from ._composition import _chernoff_count
from . import _params as P

#: Largest number of draws of one user in a cycle whose group delta is computed (more is charged delta = 1).
_KMAX_GROUP = 24
#: Factor on the per-cycle group delta's sum (its log-space binomial pmf's rounding, :func:`_closed_group_delta`).
_GROUP_SUM_MARGIN = 1.0 + 1e-12


def _eq10(n, m, eps_a):
    """Eq. 10 (Balle, Barthe, Gaboardi 2018 Thm 10 as used in App. D): log(1 + (1 - (1 - 1/n)^m)(e^eps_A - 1)),
    rounded up by ``CLOSED_FORM_MARGIN`` (1 + 8 ulps: it grows with q, never faster in relative terms, and q's
    and the log1p's roundings are a few ulps).  ln(1 - 1/n) is ln((n - 1)/n) below n = 4: XLA's CPU log1p is up
    to ~90 ulps low in magnitude on (-0.41, -0.36), which n / c (colluders) reaches."""
    q = -jnp.expm1(m * jnp.where(n < 4.0, jnp.log((n - 1.0) / n), jnp.log1p(-1.0 / n)))
    return _up(subsampled_epsilon(eps_a, q))


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
    # a cycle length: 1.5 users is refused
    nn, mm, e = check_params((P.N, P.CYCLE_LENGTH, P.EPS_AGGREGATE), broadcast=False, n=n, m=m,
                             eps_aggregate=eps_aggregate)
    shape = V.broadcastable(n=nn, m=mm, eps_aggregate=e)
    return _eq10_kernel(*_b(shape, nn, mm, e))


@float64_jit
def _thm3_kernel(n, T, eps0, dp, dh):
    nv, ok = _chernoff_count(T / n, -jnp.log(dh))
    k = _up(nv + T / n)  # real visits (Chernoff) + at most T/n fictive observations, rounded up
    ec = _up(3.0 * eps0 / jnp.sqrt(n))
    return advanced_composition(ec, k, -jnp.log(dp)), k, ok


def _thm3_as_printed(*, n, T, eps0, delta_prime, delta_hat):
    """App. D's final bound exactly as printed (second term k eps (e^{eps_c} - 1)); for the tests only."""
    n, T, eps0 = (np.asarray(x, dtype=np.float64) for x in (n, T, eps0))
    r = np.sqrt(3.0 * T / n * np.log(1.0 / delta_hat))
    ec = 3.0 * eps0 / np.sqrt(n)
    return np.sqrt((4.0 * T / n + 2.0 * r) * np.log(1.0 / delta_prime)) * ec + (2.0 * T / n + r) * eps0 * np.expm1(ec)


def _thm3_inputs(n, steps, eps0, delta_prime, delta_hat):
    return check_params((P.N, P.STEPS_T, P.EPS0_GAUSS, P.DELTA_PRIME, P.DELTA_HAT), broadcast=False, n=n,
                        steps=steps, eps0=eps0, delta_prime=delta_prime, delta_hat=delta_hat)


def complete_graph_sum_epsilon(*, n, steps, eps0, delta_prime, delta_hat):
    """Epsilon of Cyffers & Bellet Thm 3 in its full non-asymptotic form (App. D), CORRECTED (docs/errata.md).

    Real summation by a T-step random walk (T = ``steps``) on the complete graph of n users, each contribution
    (eps0, delta0)-LDP by Gaussian noise (eps0 < 1).  v's visits are bounded by the Chernoff bound
    N_v = T/n + sqrt(3 T/n ln(1/delta_hat)) (probability 1 - delta_hat), plus at most T/n fictive observations;
    each cycle of length m <= n costs at most eps_c = 3 eps0 / sqrt(n) (Eq. 10 with e^x - 1 <= 2x and
    1 - (1 - 1/n)^m <= 3m/(2n)); advanced composition over k = N_v + T/n cycles:

        eps_f = sqrt(2 k ln(1/delta')) eps_c + k eps_c (e^{eps_c} - 1).

    The printed App. D has eps instead of eps_c in the second term (docs/errata.md#e-network-thm3-composition).
    The delta is (N_v + T/n) delta0 + delta' + delta_hat (:func:`complete_graph_sum_bound`).  Where
    T/n < 3 ln(1/delta_hat) the paper's Chernoff form does not hold and the general one is used (``valid`` in
    :func:`complete_graph_sum_bound`; docs/errata.md#e-network-chernoff).  Broadcasts over all arguments;
    eps0 >= 1 is refused.
    """
    nn, tt, e, dp, dh = _thm3_inputs(n, steps, eps0, delta_prime, delta_hat)
    shape = V.broadcastable(n=nn, steps=tt, eps0=e, delta_prime=dp, delta_hat=dh)
    return _thm3_kernel(*_b(shape, nn, tt, e, dp, dh))[0]


def complete_graph_sum_bound(*, n, steps, eps0, delta0, delta_prime, delta_hat, colluders=1,
                             fixed_contributions=False, cycle_delta="group"):
    """Thm 3 / App. D as a full (epsilon, delta, valid) bound, with collusions and the fixed-contribution variant.

    T = ``steps`` is the length of the walk.

    ``colluders`` = c: Sec. 4.3, c colluding users act as one node of a graph with n / c users (the visits to
    the coalition are Binomial(T, c/n) and cycles Geometric(c/n)), so the bound is evaluated at n / c.
    ``fixed_contributions=True``: Fig. 1(a)'s dashed curves, every user contributes exactly T/n times
    (N_v = T/n, no delta_hat).  delta = (N_v + T/n) delta_c + delta' + delta_hat, with delta_c = delta0 as in
    App. D (``cycle_delta="paper"``) or, by default (``"group"``), the per-cycle delta with Balle et al.
    Thm 10's group terms for a user drawn several times in one cycle (:func:`_closed_group_delta`), which the
    paper omits (module docstring).  The epsilon is the same either way.
    """
    P.CYCLE_DELTA.domain.check("cycle_delta", cycle_delta)
    nn, tt, e, dp, dh = _thm3_inputs(n, steps, eps0, delta_prime, delta_hat)
    d0, = check_params((P.DELTA0_PURE,), broadcast=False, delta0=delta0)
    cc = _colluders(nn, colluders)
    shape = V.broadcastable(n=nn, steps=tt, eps0=e, delta0=d0, delta_prime=dp, delta_hat=dh, colluders=cc)
    nb, tb, eb, d0b, dpb, dhb, cb = _b(shape, nn, tt, e, d0, dp, dh, cc)
    if cycle_delta == "group" and np.any(d0 <= 0):
        raise ValueError(f"Expected delta0 > 0 with cycle_delta='group' (the Gaussian's calibration), got "
                         f"delta0={np.min(d0)!r}.")
    return _sum_bound_kernel(nb / cb, tb, eb, d0b, dpb, dhb, np.asarray(bool(fixed_contributions)),
                             np.asarray(cycle_delta == "group"))


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
    # rounded up by _GROUP_SUM_MARGIN: the pmf's log-space cumsum of up to 24 terms of |log| <= ~60 each carries
    # <= ~24 * 4 * 60 ulps (~3e-13) of absolute error into its exponent (the histogram's sum was 2.2e-15 below
    # mpmath at 39 of 60 random points; the Gaussian D_k's own log_sub(log_ndtr) error is not covered: it was
    # up to ~1.4e-9 below, see the report of the soundness audit)
    per = jnp.minimum((jnp.sum(pmf * dk, axis=-1) + tail) * _GROUP_SUM_MARGIN, 1.0)
    return jnp.max(jnp.where(g <= jnp.ceil(nn), per, 0.0), axis=-1)


@float64_jit
def _sum_bound_kernel(n, T, eps0, d0, dp, dh, fixed, group):
    eps_r, k_r, ok = _thm3_kernel.jitted(n, T, eps0, dp, dh)
    k_f = _up(2.0 * T / n)
    ec = _up(3.0 * eps0 / jnp.sqrt(n))
    eps_f = advanced_composition(ec, k_f, -jnp.log(dp))
    eps = jnp.where(fixed, eps_f, eps_r)
    dc = jnp.where(group, _closed_group_delta(n, eps0, d0, True), d0)
    delta = _up(jnp.where(fixed, k_f * dc + dp, k_r * dc + dp + dh))
    return NetworkBound(eps, jnp.minimum(delta, 1.0), jnp.where(fixed, True, ok))



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
    ea, _ = fmt_closed_form(eps0[..., None], lo, delta[..., None])
    exact = g <= _M_INT
    m_top = jnp.where(exact, lo, hi)
    val = _eq10(nn, m_top, ea)
    return jnp.max(jnp.where(g <= nn, val, -jnp.inf), axis=-1)


@float64_jit
def _hist_kernel(n, T, eps0, delta, dp, dh, use_fmt, group):
    nv, ok = _chernoff_count(T / n, -jnp.log(dh))
    k = _up(nv + T / n)
    closed = 21.0 * jnp.sqrt(jnp.log(4.0 / delta)) * eps0 / jnp.sqrt(n)
    # each rounded up (the sup's Eq. 10 is, its FMT eps_A not: a second margin)
    ec = _up(jnp.where(use_fmt, _hist_cycle_sup(n, eps0, delta), closed))
    dc = jnp.where(group, _closed_group_delta(n, eps0, delta, False), delta)
    return NetworkBound(advanced_composition(ec, k, -jnp.log(dp)), jnp.minimum(_up(k * dc + dp + dh), 1.0), ok)


def complete_graph_histogram_bound(*, n, steps, eps0, delta, delta_prime, delta_hat, form="fmt", colluders=1,
                                   cycle_delta="group"):
    """Histograms on the complete graph, Cyffers & Bellet Thm 6 / App. E (Algorithm 5, RR with eps0-LDP).

    Same fictive walk as App. D (T = ``steps`` steps); a cycle of length m
    shuffles the m reports it aggregates:

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
      numerical ``"fmt"`` form (docs/errata.md#e-network-thm6-constant).  Refused outside Thm 6's conditions
      eps0 <= 1, n >= 14^2 ln(4/delta).

    Advanced composition over k = N_v + T/n cycles with the corrected second term k eps_c (e^{eps_c} - 1)
    (the printed Thm 6 has the same slip as App. D: docs/errata.md#e-network-thm6-composition);
    delta = k delta_c + delta' + delta_hat with delta_c = delta as in App. E (``cycle_delta="paper"``) or, by
    default, with Balle et al. Thm 10's group terms (:func:`_closed_group_delta`; for randomized response they
    are large, since k >= 2 reports of one user are only bounded by group privacy;
    docs/errata.md#e-network-cycle-delta).  ``colluders``: Sec. 4.3, evaluated at n / c.
    """
    V.one_of("form", form, ("fmt", "eq11"))
    P.CYCLE_DELTA.domain.check("cycle_delta", cycle_delta)
    nn, tt, e, d, dp, dh = check_params((P.N, P.STEPS_T, P.EPS0_LOCAL, P.VISIT_DELTA, P.DELTA_PRIME, P.DELTA_HAT),
                                        broadcast=False, n=n, steps=steps, eps0=eps0, delta=delta,
                                        delta_prime=delta_prime, delta_hat=delta_hat)
    cc = _colluders(nn, colluders)
    if form == "eq11":
        if np.any(e > 1):
            raise ValueError(f"Theorem 6 (Eq. 11) requires eps0 <= 1, got eps0={np.max(e)!r}; use form='fmt'.")
        bad = np.broadcast_to(nn / cc < 196.0 * np.log(4.0 / d), np.broadcast_shapes(nn.shape, cc.shape, d.shape))
        if np.any(bad):
            raise ValueError(f"Theorem 6 (Eq. 11) requires n >= 14^2 ln(4/delta), got n={np.min(nn)!r}, "
                             f"delta={np.min(d)!r}; use form='fmt'.")
    shape = V.broadcastable(n=nn, steps=tt, eps0=e, delta=d, delta_prime=dp, delta_hat=dh, colluders=cc)
    nb, tb, eb, db, dpb, dhb, cb = _b(shape, nn, tt, e, d, dp, dh, cc)
    return _hist_kernel(nb / cb, tb, eb, db, dpb, dhb, np.asarray(form == "fmt"), np.asarray(cycle_delta == "group"))


@float64_jit
def _spotted_kernel(n, nu, eps0, dp, dt, advanced):
    s, ok = _chernoff_count(2.0 * nu / n, -jnp.log(dt))
    adv = advanced_composition(eps0, s, -jnp.log(dp))
    return SpottedBound(jnp.where(advanced, jnp.minimum(adv, _up(s * eps0)), _up(s * eps0)), s, ok)


def spotted_contributions_epsilon(*, n, contributions, eps0, delta_prime, delta_tilde, composition="advanced"):
    """Privacy loss of spotted contributions when sender and receiver are known, Cyffers & Bellet App. G, Lemma 2.

    Each of u's ``contributions`` (N_u) is adjacent to v with probability 2/n; Chernoff bounds the number of
    spotted ones by S = 2 N_u/n + sqrt(6 N_u/n ln(1/delta_tilde)) (probability 1 - delta_tilde; the general
    multiplicative bound where 3 ln(1/delta_tilde) > 2 N_u / n, ``valid`` False), each costing eps0:

    * ``composition="simple"``: S eps0;
    * ``composition="advanced"``: sqrt(2 S ln(1/delta')) eps0 + S eps0 (e^eps0 - 1) (capped by S eps0).  The
      printed Lemma 2 writes sqrt(S ln(1/delta')): advanced composition has the factor 2 (corrected here,
      docs/errata.md#e-network-lemma2-factor).

    To be added (with delta_tilde and S delta0 + delta') to the hidden-path bound.
    """
    P.COMPOSITION.domain.check("composition", composition)
    nn, nu, e, dp, dt = check_params((P.N, P.SPOTTED_CONTRIBUTIONS, P.EPS0_LOCAL, P.DELTA_PRIME, P.DELTA_TILDE),
                                     broadcast=False, n=n, contributions=contributions, eps0=eps0,
                                     delta_prime=delta_prime, delta_tilde=delta_tilde)
    shape = V.broadcastable(n=nn, contributions=nu, eps0=e, delta_prime=dp, delta_tilde=dt)
    return _spotted_kernel(*_b(shape, nn, nu, e, dp, dt), np.asarray(composition == "advanced"))
