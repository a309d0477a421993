"""Composition tools of the network-DP package (Cyffers & Bellet use them throughout): advanced composition
(Dwork, Rothblum, Vadhan 2010, from :mod:`amplify_jax.approx_dp`), the heterogeneous optimal composition bound of
Kairouz, Oh, Viswanath 2015 (Thm 3.5) with its exact homogeneous variant (Thm 3.3), and the Chernoff bound on the
number of contributions of a user (App. D)."""

from __future__ import annotations

import numpy as np
import jax.numpy as jnp

from .._core import validate as V
from .._core.domains import check_params
from ..accounting.approx_dp import advanced_composition_overflows, advanced_composition
from .._core.numerics import float64_jit, log_comb, x64_scope
from ._common import _b, _f64, _up
from . import _params as P


def _refuse_advanced_overflow(eps_name, eps, steps_name, steps, delta_prime_name, delta_prime):
    """Refuse (eps, k, delta') whose advanced composition sqrt(2 k ln(1/delta')) eps + k eps (e^eps - 1) leaves
    float64 (eps = 1e300: +inf; e^eps overflows from eps ~ 709), naming the three at the first such point."""
    e, k, d = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (eps, steps, delta_prime)))
    bad = advanced_composition_overflows(e, k, -np.log(d))
    if np.any(bad):
        i = tuple(int(j) for j in np.argwhere(bad)[0]) if bad.ndim else ()
        raise ValueError(f"Expected {eps_name}, {steps_name} and {delta_prime_name} whose advanced composition "
                         f"sqrt(2 k ln(1/delta')) eps + k eps (e^eps - 1) is finite in float64, got "
                         f"{eps_name}={e[i].item()!r}, {steps_name}={k[i].item()!r}, "
                         f"{delta_prime_name}={d[i].item()!r}.")


@float64_jit
def _advanced_kernel(eps, k, dp):
    return advanced_composition(eps, k, -jnp.log(dp))


def advanced_composition_epsilon(eps, *, steps, delta_prime):
    """Advanced composition (Dwork, Rothblum, Vadhan 2010, Thm III.3), the form used throughout Cyffers & Bellet.

    k-fold adaptive composition of (eps, delta)-DP mechanisms (k = ``steps``) is
    (sqrt(2 k ln(1/delta')) eps + k eps (e^eps - 1), k delta + delta')-DP.  Returns the epsilon; ``steps`` may be
    real (a high-probability bound on a count).  Broadcasts.
    Inputs whose value leaves float64 (k eps e^eps beyond 1.8e308) are refused.
    """
    e, kk, d = check_params((P.COMPOSED_EPS, P.COMPOSED_STEPS, P.DELTA_PRIME), broadcast=False, eps=eps,
                            steps=steps, delta_prime=delta_prime)
    shape = V.broadcastable(eps=e, steps=kk, delta_prime=d)
    _refuse_advanced_overflow("eps", e, "steps", kk, "delta_prime", d)
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


def _sum_up(x, axis):
    """The sum of nonnegative terms along ``axis``, rounded up: float64 summation of k terms, each within ~2 ulps
    of its exact value, is within (k + 2) ulps of the exact sum (relative; no cancellation), so the factor
    1 + (k + 8) ulps (k the static length of the axis) puts it above."""
    k = x.shape[axis]
    return x.sum(axis) * (1.0 + (k + 8.0) * 2.0 ** -52)


@float64_jit(static_argnames=("axis",))
def _kov_kernel(eps, dt, axis):
    t1, t2, t3 = _kov_terms(eps)
    # the three sums and ln(1/delta_tilde) rounded up, then the formula (increasing in each) by the margin
    return _up(_kov_from_sums(_sum_up(t1, axis), _sum_up(t2, axis), _sum_up(t3, axis), _up(-jnp.log(dt))))


def _axis(axis, ndim):
    """An axis of an array of ``ndim`` dimensions (a Python or NumPy integer in [-ndim, ndim)), or a ValueError."""
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)) or not -ndim <= axis < ndim:
        raise ValueError(f"Expected axis to be an integer in [-{ndim}, {ndim}), got axis={axis!r}.")
    return int(axis)


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
    Each eps_l in [0, 700] (e^eps finite, as for :func:`advanced_composition_epsilon`), delta_tilde in (0, 1).
    Rounded up: each sum by 1 + (k + 8) ulps (k terms summed), ln(1/delta_tilde) and the result by
    ``CLOSED_FORM_MARGIN`` (1 + 8 ulps).
    """
    (e,) = check_params((P.COMPOSED_EPS,), broadcast=False, eps=eps)  # eps carries the composed axis
    (d,) = check_params((P.KOV_DELTA_TILDE,), broadcast=False, delta_tilde=delta_tilde)
    if e.ndim == 0:
        e = e[None]
    ax = _axis(axis, e.ndim) % e.ndim
    rest = e.shape[:ax] + e.shape[ax + 1:]
    shape = V.broadcastable(eps_without_axis=np.empty(rest), delta_tilde=d)
    e = np.moveaxis(e, ax, -1)
    with x64_scope():
        eb = jnp.broadcast_to(_f64(e), shape + e.shape[-1:])
        return _kov_kernel(eb, jnp.broadcast_to(_f64(d), shape), -1)


def kov_composition_delta(deltas, *, delta_tilde, axis=-1):
    """The delta of KOV Thm 3.5: 1 - (1 - delta_tilde) prod_l (1 - delta_l), computed with log1p/expm1 and
    rounded up (a factor 1 + (k + 8) ulps for the k + 1 logarithms summed, capped at 1)."""
    (d,) = check_params((P.KOV_DELTAS,), broadcast=False, deltas=deltas)  # deltas carries the composed axis
    (dt,) = check_params((P.KOV_DELTA_TILDE,), broadcast=False, delta_tilde=delta_tilde)
    if d.ndim:
        axis = _axis(axis, d.ndim)
    # in NumPy (no compiled program; XLA's CPU log1p is up to ~90 ulps low in magnitude on (-0.41, -0.36)),
    # rounded up: k + 1 log1p's summed (each within an ulp, no cancellation) and an expm1 (the delta grows with
    # the sum's magnitude, at most as fast in relative terms) are within (k + 4) ulps; a delta is at most 1
    with np.errstate(divide="ignore"):  # a delta_l = 1: log1p(-1) = -inf, the delta is 1
        s = np.sum(np.log1p(-d), axis=axis) if d.ndim else np.log1p(-d)
    k = d.shape[axis] if d.ndim else 1
    r = -np.expm1(np.log1p(-dt) + s)
    with x64_scope():
        return _f64(np.minimum(r * (1.0 + (k + 8.0) * 2.0 ** -52), 1.0))


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
    return _up(jnp.minimum(best, k * eps0))  # the atom's product rounded up (CLOSED_FORM_MARGIN)


def kov_homogeneous_epsilon(*, eps0, steps, delta):
    """Exact optimal k-fold composition of eps0-DP mechanisms (Kairouz, Oh, Viswanath 2015, Thm 3.3), at atoms.

    Returns the smallest eps in {(k - 2i) eps0 : i = 0..floor(k/2)} (and 0), k = ``steps``, such that the
    composition is (eps, delta)-DP; no composition theorem can give a smaller eps at these atoms.  ``steps`` is
    an integer (at most 4096 here: the kernel is O(k^2)).  The atom is rounded up by ``CLOSED_FORM_MARGIN``
    (1 + 8 ulps: its float64 product (k - 2i) eps0 could be half an ulp below it).
    """
    e, kk, d = check_params((P.EPS0_LOCAL, P.KOV_STEPS, P.KOV_DELTA), broadcast=False, eps0=eps0, steps=steps,
                            delta=delta)
    shape = V.broadcastable(eps0=e, steps=kk, delta=d)
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
    # rounded up (an upper bound on a count: a few roundings of mu, l and a sqrt; CLOSED_FORM_MARGIN)
    return _up(jnp.where(paper, n_paper, n_gen)), paper


@float64_jit
def _contrib_kernel(n, T, dh):
    return _chernoff_count(T / n, -jnp.log(dh))


def contribution_bound(*, n, steps, delta_hat):
    """Bound on a user's number of contributions (or visits) in a T-step random walk on the complete graph.

    T = ``steps``.  The count is Binomial(T, 1/n); App. D's Chernoff bound gives
    N_v = T/n + sqrt(3 T/n ln(1/delta_hat)) with probability 1 - delta_hat, valid when T/n >= 3 ln(1/delta_hat);
    otherwise the general multiplicative bound is used (see :func:`_chernoff_count`): the paper uses the printed
    form for every T and n (docs/errata.md#e-network-chernoff).  The authors' scripts count
    T/n + sqrt(3T/2 ln(1/delta)) instead; the paper's form is used here (docs/errata.md#e-network-authors-code).
    Returns (N, paper_form_valid); N is rounded up by ``CLOSED_FORM_MARGIN`` (1 + 8 ulps).
    """
    nn, tt, dh = check_params((P.N, P.STEPS_T, P.DELTA_HAT), broadcast=False, n=n, steps=steps, delta_hat=delta_hat)
    shape = V.broadcastable(n=nn, steps=tt, delta_hat=dh)
    return _contrib_kernel(*_b(shape, nn, tt, dh))
