"""The Rényi-DP curves behind :mod:`amplify_jax.rdp` (the public module, which re-exports them and states their
conventions and references): the base mechanisms, subsampling, and composition; each function's docstring names
its paper and theorem.

The accounting layer's modules (``conversions``, ``_rdp_conversions``, ``_rdp_accountant``, ``_bounds``) import
this module, not ``rdp``: ``rdp`` builds its ``Accountant`` from ``_rdp_accountant`` on first use, and nothing
below it imports it back.
"""

from __future__ import annotations

import numpy as np
import jax
import jax.numpy as jnp

from .._core import validate as V
from .._core.domains import check_params
from . import _params as P
from ._params import LAPLACE_RANGE, MAX_ORDER, SIGMA_RANGE, WOR_MAX_ORDER  # noqa: F401  (rdp.MAX_ORDER, ...)
from ._subsampled_gaussian import AUTO, log_a_minus_one_fractional, log_a_minus_one_integer_grid
from .._core.numerics import float64_jit, log_binom_pmf, log_comb_table, log_expm1, logsumexp, run_in_slabs, x64_scope

#: Default Rényi orders: fine near 1 (where large epsilons are optimal), every tenth up to 11 (the grid of
#: the reference accountants), the integers up to 64, then a geometric tail to 1024.  167 orders.
DEFAULT_ORDERS = np.concatenate(
    [
        [1.01, 1.02, 1.03, 1.05, 1.075],
        1.0 + np.arange(1, 100) / 10.0,
        np.arange(11, 64, dtype=float),
        [64.0, 80.0, 96.0, 128.0, 192.0, 256.0, 384.0, 512.0, 768.0, 1024.0],
    ]
)


# MAX_ORDER, WOR_MAX_ORDER, SIGMA_RANGE and LAPLACE_RANGE (the ends of the curves' domains, documented there) are
# stated in ``_params.py`` with the Params the functions validate through, and importable from here and from rdp.


def _noise_per_sensitivity(noise_name, noise, sensitivity, lo, hi):
    """Refuse noise / sensitivity outside [lo, hi] where sensitivity > 0 (a zero sensitivity has RDP 0), naming
    both parameters and their values at the first offending point."""
    n, d = np.broadcast_arrays(np.asarray(noise, dtype=np.float64), np.asarray(sensitivity, dtype=np.float64))
    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
        r = n / np.where(d > 0, d, 1.0)
    bad = (d > 0) & ~((r >= lo) & (r <= hi))
    if bad.any():
        i = tuple(int(j) for j in np.argwhere(bad)[0]) if bad.ndim else ()
        raise ValueError(f"Expected {noise_name} / sensitivity in [{lo:g}, {hi:g}], got {noise_name}={n[i].item()!r}, "
                         f"sensitivity={d[i].item()!r}.")


def _shape(*arrays) -> tuple:
    """The broadcast shape of checked arrays (their shapes were found to broadcast: ``check_params``)."""
    return np.broadcast_shapes(*(np.shape(x) for x in arrays))


def _finish(shape, x):
    """Broadcast a kernel's output to the full parameter shape + orders axis."""
    return jnp.broadcast_to(x, shape + x.shape[-1:])


# ----------------------------------------------------------------------------------------------------------
# Base mechanisms (closed forms)


@float64_jit
def _gaussian_kernel(alpha, sigma, sensitivity):
    return alpha * (sensitivity / sigma)[..., None] ** 2 / 2.0


def gaussian_rdp(orders, *, sigma, sensitivity=1.0):
    """Gaussian mechanism: D_alpha = alpha Delta^2 / (2 sigma^2) (Mironov 2017, Table II). Exact.

    Orders up to :data:`MAX_ORDER`; sigma / sensitivity in :data:`SIGMA_RANGE` (a zero sensitivity: 0), where the
    value is finite and not rounded to 0.
    """
    a = P.check_orders(P.ORDERS, orders)
    s, d = check_params((P.NOISE_SIGMA, P.ANY_SENSITIVITY), broadcast=False, sigma=sigma, sensitivity=sensitivity)
    _noise_per_sensitivity("sigma", s, d, *SIGMA_RANGE)
    return _gaussian_curve(a, s, d)


def _gaussian_curve(a, s, d):
    """:func:`gaussian_rdp`'s computation on checked values (orders ``a``; sigma / sensitivity in SIGMA_RANGE)."""
    with x64_scope():
        return _finish(_shape(s, d), _gaussian_kernel(a, s, d))


def _expm1_minus_x(y):
    """e^y - 1 - y >= 0 without cancellation: the series y^2 sum_k y^k / (k + 2)! for |y| < 1/2 (17 terms,
    truncation < 1e-17 relative), expm1(y) - y elsewhere."""
    ys = jnp.clip(y, -0.5, 0.5)
    acc, term = jnp.zeros_like(ys), jnp.full_like(ys, 0.5)
    for k in range(17):
        acc = acc + term
        term = term * ys / (k + 3.0)
    return jnp.where(jnp.abs(y) < 0.5, ys * ys * acc, jnp.expm1(y) - y)


@float64_jit
def _laplace_kernel(alpha, scale, sensitivity):
    lam = (scale / sensitivity)[..., None]  # noise scale per unit sensitivity
    t1 = jnp.log(alpha / (2 * alpha - 1)) + (alpha - 1) / lam
    t2 = jnp.log((alpha - 1) / (2 * alpha - 1)) - alpha / lam
    # For a large scale the two terms nearly sum to 1 and logaddexp loses relative accuracy (up to 4e-12 below
    # the exact value at lambda ~ 1e3, benchmarks/soundness_campaign.py).  There, with x = 1 / lambda,
    # the sum minus 1 is (alpha phi((alpha-1) x) + (alpha-1) phi(-alpha x)) / (2 alpha - 1), phi(y) = e^y - 1 - y:
    # two non-negative terms (the first-order parts cancel exactly), so log1p of it keeps full accuracy.
    x = 1.0 / lam
    small = alpha * x < 1.0
    xs = jnp.where(small, x, 0.0)
    excess = (alpha * _expm1_minus_x((alpha - 1) * xs) + (alpha - 1) * _expm1_minus_x(-alpha * xs)) / (2 * alpha - 1)
    val = jnp.where(small, jnp.log1p(excess), jnp.logaddexp(t1, t2))
    return val / (alpha - 1) * (1.0 + 4.0 * _EPS)


def laplace_rdp(orders, *, scale, sensitivity=1.0):
    """Laplace mechanism with scale b, sensitivity Delta, lambda = b / Delta (Mironov 2017, Table II). Exact:

    D_alpha = 1/(alpha-1) log( alpha/(2 alpha-1) e^{(alpha-1)/lambda} + (alpha-1)/(2 alpha-1) e^{-alpha/lambda} ).

    Orders up to :data:`MAX_ORDER`; lambda in :data:`LAPLACE_RANGE` (where the terms stay finite).
    """
    a = P.check_orders(P.ORDERS, orders)
    b, d = check_params((P.LAPLACE_SCALE, P.SENSITIVITY), broadcast=False, scale=scale, sensitivity=sensitivity)
    _noise_per_sensitivity("scale", b, d, *LAPLACE_RANGE)
    return _laplace_curve(a, b, d)


def _laplace_curve(a, b, d):
    """:func:`laplace_rdp`'s computation on checked values (orders ``a``; scale / sensitivity in LAPLACE_RANGE)."""
    with x64_scope():
        return _finish(_shape(b, d), _laplace_kernel(a, b, d))


def _rr_log_excess(alpha, eps0):
    """log( sum_y P^alpha Q^(1-alpha) - 1 ) times (e^eps0 + k - 1): see randomized_response_rdp."""
    return log_expm1((alpha - 1) * eps0) + log_expm1(alpha * eps0) - (alpha - 1) * eps0


def randomized_response_log_excess(alpha, eps0, k=2.0):
    """log(E_Q[(P/Q)^alpha] - 1) of k-ary randomized response at level eps0 (pure jnp, broadcasting).

    The curve of :func:`randomized_response_rdp` is log1p(exp(this)) / (alpha - 1); with k = 2 it is the tight
    RDP of any eps0-DP mechanism (:func:`pure_dp_rdp`).  For use inside kernels that sum moments in log space.
    """
    log_norm = jnp.logaddexp(eps0, jnp.log(jnp.asarray(k, dtype=jnp.float64) - 1.0))  # log(e^eps0 + k - 1)
    return _rr_log_excess(alpha, eps0) - log_norm


@float64_jit
def _rr_kernel(alpha, eps0, k):
    log_excess = randomized_response_log_excess(alpha, eps0[..., None], k[..., None])
    # D_alpha <= D_inf = eps0 (the largest log-ratio of the two laws): where alpha eps0 leaves float64
    # (eps0 ~ 1e303 at MAX_ORDER: inf - inf) the curve is eps0, not NaN (fmin drops a NaN)
    return jnp.fmin(jnp.logaddexp(0.0, log_excess) / (alpha - 1), eps0[..., None])


def randomized_response_rdp(orders, *, eps0, k=2):
    """k-ary randomized response with local guarantee eps0 (keep w.p. e^eps0 / (e^eps0 + k - 1)). Exact.

    For neighbouring inputs the output laws differ on two outcomes, so
    ``sum_y P^alpha Q^(1-alpha) = (e^{alpha eps0} + e^{(1-alpha) eps0} + k - 2) / (e^eps0 + k - 1)``
    (Mironov 2017, Table II, for k = 2).  We evaluate it as
    ``1 + expm1((alpha-1) eps0) expm1(alpha eps0) e^{-(alpha-1) eps0} / (e^eps0 + k - 1)``, which has no
    cancellation when eps0 is tiny.
    """
    a = P.check_orders(P.ORDERS, orders)
    e, kk = check_params((P.RR_EPS0, P.RR_K), broadcast=False, eps0=eps0, k=k)
    return _randomized_response_curve(a, e, kk)


def _randomized_response_curve(a, e, kk):
    """:func:`randomized_response_rdp`'s computation on checked values (orders ``a``, eps0 ``e``, k ``kk``)."""
    with x64_scope():
        return _finish(_shape(e, kk), _rr_kernel(a, e, kk))


def pure_dp_rdp(orders, *, eps0):
    """Tight RDP of any eps0-DP mechanism: that of binary randomized response.

    Every eps0-DP pair of output laws is a post-processing of binary randomized response (Kairouz, Oh,
    Viswanath 2015, Thm 2.1) and Rényi divergences obey data processing, so the curve of
    :func:`randomized_response_rdp` with k = 2 bounds every eps0-DP mechanism, and it is attained.  It is
    below both eps0 and 2 alpha eps0^2 (Bun and Steinke 2016).
    """
    return randomized_response_rdp(orders, eps0=eps0, k=2)


# ----------------------------------------------------------------------------------------------------------
# Poisson-subsampled Gaussian (Mironov, Talwar, Zhang 2019)


def _sgm_int_log_a_minus_one(q, sigma, alpha, kmax):
    """log(A_alpha - 1) at integer alpha <= kmax: A_alpha - 1 = sum_{k=2}^alpha Bin(k; alpha, q) expm1(k(k-1)/(2 sigma^2)).

    This is MTZ 2019's integer-order series with the k = 0, 1 terms (whose exponent is 0) removed against the
    binomial normalisation, so every term is non-negative and the result is accurate relative to A - 1 even
    when it is ~1e-16 (q = 1e-8).  q, sigma broadcast with alpha (which carries the orders axis).
    """
    k = jnp.arange(kmax + 1, dtype=jnp.float64)
    a = alpha[..., None]
    qq = q[..., None]
    ss = sigma[..., None]
    kk = jnp.minimum(k, a)  # keep the log-pmf finite in the masked region
    terms = log_binom_pmf(kk, a, qq) + log_expm1(jnp.maximum(kk * (kk - 1.0), 1.0) / (2.0 * ss * ss))
    terms = jnp.where((k >= 2) & (k <= a), terms, -jnp.inf)
    return logsumexp(terms, axis=-1)


def sgm_log_a_minus_one(alpha, q, sigma, *, kmax=0, n_panels=None):
    """log(A_alpha - 1) of the Poisson-subsampled Gaussian, a pure jnp function for use inside kernels.

    ``alpha`` broadcasts with ``q`` and ``sigma``.  Integer orders <= ``kmax`` use the exact finite series;
    other orders use the exact fractional-order evaluation of :mod:`amplify_jax.accounting._subsampled_gaussian`.
    ``kmax`` and ``n_panels`` are static (they fix shapes).
    """
    alpha, q, sigma = jnp.broadcast_arrays(jnp.asarray(alpha), jnp.asarray(q), jnp.asarray(sigma))
    frac = log_a_minus_one_fractional(q, sigma, alpha, **({} if n_panels is None else {"n_panels": n_panels}))
    if kmax < 2:
        return frac
    is_int = (alpha == jnp.round(alpha)) & (alpha <= kmax)
    integ = _sgm_int_log_a_minus_one(q, sigma, jnp.where(is_int, alpha, 2.0), kmax)
    return jnp.where(is_int, integ, frac)


def _integer_buckets(alpha):
    """Group integer orders by the power of two above them, so short series are not padded to the longest."""
    buckets = {}
    for i, a in enumerate(alpha):
        kmax = 1 << int(np.ceil(np.log2(a)))
        buckets.setdefault(max(kmax, 4), []).append(i)
    return buckets


class SGMCurve:
    """Static plan to evaluate the Poisson-subsampled Gaussian RDP at a fixed grid of orders inside kernels.

    Integer orders are grouped into buckets of series length 2^j; fractional orders use the quadrature of
    :mod:`amplify_jax.accounting._subsampled_gaussian` with ``n_panels`` panels.  Hashable, so it can be a static
    argument of a compiled function.
    """

    def __init__(self, orders, n_panels: int | None = None):
        a = np.asarray(orders, dtype=np.float64)
        self.orders = tuple(float(x) for x in a)
        is_int = a == np.round(a)
        ia = np.nonzero(is_int)[0]
        self.int_groups = tuple(
            (kmax, tuple(int(i) for i in ia[idx])) for kmax, idx in sorted(_integer_buckets(a[ia]).items())
        )
        self.frac_idx = tuple(int(i) for i in np.nonzero(~is_int)[0])
        self.n_panels = n_panels
        order = [i for _, g in self.int_groups for i in g] + list(self.frac_idx)
        self.inverse = tuple(int(i) for i in np.argsort(order))

    def _key(self):
        return (self.orders, self.n_panels)

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, SGMCurve) and self._key() == other._key()

    def log_a_minus_one(self, q, sigma):
        """log(A_alpha - 1) at every order of the plan: shape broadcast(q, sigma) + (n_orders,)."""
        parts = []
        for kmax, idx in self.int_groups:
            parts.append(log_a_minus_one_integer_grid(q, sigma, tuple(self.orders[i] for i in idx), kmax))
        q = jnp.asarray(q)[..., None]
        sigma = jnp.asarray(sigma)[..., None]
        if self.frac_idx:
            alpha = jnp.asarray([self.orders[i] for i in self.frac_idx])
            kw = {} if self.n_panels is None else {"n_panels": self.n_panels}
            parts.append(log_a_minus_one_fractional(q, sigma, alpha, **kw))
        out = jnp.concatenate(parts, axis=-1)
        return out[..., jnp.asarray(self.inverse)]

    def __call__(self, q, sigma):
        alpha = jnp.asarray(self.orders)
        # rounded up: the integer series carries its own error bound; the fractional quadrature came out up to
        # 2.1e-15 below mpmath (benchmarks/soundness_campaign.py), so _QUAD_ULPS covers both and the last steps
        return jnp.logaddexp(0.0, self.log_a_minus_one(q, sigma)) / (alpha - 1.0) * (1.0 + _QUAD_ULPS * _EPS)


@float64_jit(static_argnames=("curve",), persist=True)
def _sgm_curve_kernel(q, sigma, curve):
    return curve(q, sigma)


_EPS = float(np.finfo(np.float64).eps)
#: ulps added to the subsampled Gaussian's RDP (the quadrature was found 2.1e-15 = 9.5 ulps below mpmath)
_QUAD_ULPS = 16.0

#: Smallest positive sampling rate evaluated as given; smaller positive rates are raised to it.
Q_FLOOR = 1e-100


def raise_tiny_rate(q):
    """Positive rates below :data:`Q_FLOOR` raised to it (a sound upper bound where the RDP grows with q)."""
    q = np.asarray(q, dtype=np.float64)
    return np.where((q > 0) & (q < Q_FLOOR), Q_FLOOR, q)


def poisson_subsampled_gaussian_rdp(orders, *, q, sigma):
    """RDP of the Poisson-subsampled Gaussian mechanism (sensitivity 1, noise multiplier sigma, rate q).

    Exact at every order alpha > 1 (Mironov, Talwar, Zhang 2019): integer orders by the finite binomial
    series (with the k = 0, 1 terms cancelled analytically, so tiny q keeps full relative accuracy), fractional
    orders by the cancellation-free integral of :mod:`amplify_jax.accounting._subsampled_gaussian`.  Unlike the
    reference accountants this neither returns inf for alpha <= 1.5 nor over-states fractional orders, and it
    does not stop a series early (the TensorFlow Privacy / Opacus series under-states q = 0.4, sigma = 12,
    alpha = 58.75).  Rates in (0, Q_FLOOR) are evaluated at Q_FLOOR (sound: the RDP grows with q; the
    fractional quadrature's plan underflows below ~1e-150 at large sigma).  Orders up to :data:`MAX_ORDER`,
    sigma in :data:`SIGMA_RANGE` (as DP-SGD's accountant).
    """
    a = P.check_orders(P.ORDERS, orders)
    qq, s = check_params((P.Q, P.CURVE_SIGMA), broadcast=False, q=q, sigma=sigma)
    return _poisson_subsampled_gaussian_curve(a, qq, s)


def _poisson_subsampled_gaussian_curve(a, q, s):
    """:func:`poisson_subsampled_gaussian_rdp`'s computation on checked values (orders ``a``, q, sigma ``s``)."""
    qq = raise_tiny_rate(q)
    shape = _shape(qq, s)
    # one compiled program per orders grid, whatever the batch: fixed slabs (numerics.run_in_slabs), and every
    # fractional order on its own need of quadrature panels (_subsampled_gaussian.AUTO, certified per point)
    curve = SGMCurve(a, AUTO)
    return run_in_slabs(lambda q_, s_: (_sgm_curve_kernel(q_, s_, curve),), shape, qq, s)[0]


# ----------------------------------------------------------------------------------------------------------
# Sampling without replacement (Wang, Balle, Kasiviswanathan 2019, Thm 9)


def _wor_orders(orders, amax):
    if orders is None:
        return tuple(range(2, amax + 1))
    a = V.orders("orders", orders, integer=True, maximum=amax)  # static: a NaN or a string is named here
    return tuple(int(o) for o in a)


def without_replacement_log_excess(base, log_q, orders=None, *, log_inf_factor=None):
    """log(M_alpha - 1) of Wang, Balle, Kasiviswanathan 2019, Thm 9, where eps'(alpha) = log(M_alpha)/(alpha - 1).

    Pure jnp (for use inside kernels; any batch shape, traced values).  ``base[..., j - 2]`` is the base
    mechanism's RDP eps(j) at the integer orders j = 2..A (A = ``base.shape[-1] + 1``, finite values);
    ``log_q`` is the log of the sampling ratio q = m / n (-inf for q = 0), broadcasting with ``base[..., 0]``;
    ``orders`` (static: a tuple of integers in [2, A], default all of 2..A) are the output orders;
    ``log_inf_factor`` is log(e^{eps(inf)} - 1) of the base mechanism (None: eps(inf) = inf, e.g. Gaussian).
    Returns batch + (len(orders),):

        M_alpha - 1 = q^2 C(alpha,2) min{4(e^{eps(2)}-1), e^{eps(2)} min{2, (e^{eps(inf)}-1)^2}}
                      + sum_{j=3}^{alpha} q^j C(alpha,j) e^{(j-1) eps(j)} min{2, (e^{eps(inf)}-1)^j}.

    Every term is non-negative and kept in log space, so M - 1 keeps full relative accuracy when it is tiny.
    The binomial coefficients are a trace-time table (exact to rounding up to alpha = 1024,
    :func:`numerics.log_comb_table`).
    """
    base = jnp.asarray(base)
    amax = base.shape[-1] + 1
    alpha_int = _wor_orders(orders, amax)
    j = jnp.arange(2, amax + 1, dtype=jnp.float64)
    eps2 = base[..., 0:1]
    if log_inf_factor is None:
        cap2 = capj = jnp.log(2.0)
    else:
        lf = jnp.asarray(log_inf_factor)[..., None]
        cap2 = jnp.minimum(jnp.log(2.0), 2.0 * lf)
        capj = jnp.minimum(jnp.log(2.0), j * lf)
    t2 = jnp.minimum(jnp.log(4.0) + log_expm1(eps2), eps2 + cap2)
    tj = jnp.where(j == 2.0, t2, (j - 1.0) * base + capj)  # batch + (J,)
    table = jnp.asarray(log_comb_table(alpha_int, amax))  # (A, J)
    terms = j * jnp.asarray(log_q)[..., None, None] + table + tj[..., None, :]
    return logsumexp(terms, axis=-1)


def without_replacement_rdp_kernel(base, q, orders=None, *, log_inf_factor=None):
    """RDP of sampling without replacement, Wang-Balle-Kasiviswanathan 2019 Thm 9, as a pure jnp function.

    The kernel of :func:`without_replacement_rdp` for use inside other kernels: ``base[..., j - 2]`` is the
    base curve at the integer orders j = 2..A, ``q`` the sampling ratio (broadcasting with ``base[..., 0]``),
    ``orders`` a static tuple of output orders in [2, A] (default 2..A), ``log_inf_factor`` as in
    :func:`without_replacement_log_excess`.  Returns eps'(alpha) = log(M_alpha)/(alpha - 1),
    shape batch + (len(orders),).  No input checks (see :func:`without_replacement_rdp`).
    """
    base = jnp.asarray(base)
    q = jnp.asarray(q)
    alpha = jnp.asarray(_wor_orders(orders, base.shape[-1] + 1), dtype=jnp.float64)
    log_q = jnp.where(q > 0, jnp.log(jnp.where(q > 0, q, 1.0)), -jnp.inf)
    log_excess = without_replacement_log_excess(base, log_q, orders, log_inf_factor=log_inf_factor)
    # Rounded up by a bound on the float64 error (the sum was up to 8e-15 below the exact value,
    # benchmarks/soundness_campaign.py): a few ulps of the magnitudes of each log-term's parts (alpha |log q|,
    # log C(alpha, j) <= alpha log 2, (alpha - 1) eps(alpha)) and one ulp per summed term.
    amax = base.shape[-1] + 1
    lq_abs = jnp.where(q > 0, jnp.abs(log_q), 0.0)[..., None]
    top = jnp.max(jnp.abs(base), axis=-1, keepdims=True)
    err = 8.0 * _EPS * (alpha * (lq_abs + np.log(2.0) + top) + jnp.where(jnp.isfinite(log_excess), jnp.abs(log_excess), 0.0))
    log_excess = log_excess + err + (amax + 4.0) * _EPS
    return jnp.logaddexp(0.0, log_excess) / (alpha - 1.0) * (1.0 + 4.0 * _EPS)


@float64_jit
def _wor_kernel(base, q, log_inf_factor):
    """base: (..., A-1) curve at orders 2..A; q: (...); log_inf_factor: (...) = log(e^{eps_inf} - 1)."""
    return without_replacement_rdp_kernel(base, q, log_inf_factor=log_inf_factor)


def without_replacement_rdp(base_rdp, *, q, base_rdp_inf=None):
    """RDP of sampling without replacement (replace-one adjacency), Wang, Balle, Kasiviswanathan 2019, Thm 9.

    ``base_rdp[..., j]`` is the base mechanism's RDP at the integer order ``j + 2`` (orders 2, 3, ..., A
    contiguous); ``q = m / n`` is the sampling ratio; ``base_rdp_inf`` is the base mechanism's eps(inf)
    (None means unbounded, e.g. Gaussian).  Returns the bound at orders 2..A:

        eps'(alpha) <= 1/(alpha-1) log(1 + q^2 C(alpha,2) min{4(e^{eps(2)}-1), e^{eps(2)} min{2, (e^{eps(inf)}-1)^2}}
                       + sum_{j=3}^{alpha} q^j C(alpha,j) e^{(j-1) eps(j)} min{2, (e^{eps(inf)}-1)^j}).

    Broadcasts over the leading axes of ``base_rdp`` and over ``q``; many base curves (e.g. one per group
    size k) are amplified in one call.  Fractional orders: see :func:`interpolate_integer_rdp`.  Inside other
    kernels use the jnp-level :func:`without_replacement_rdp_kernel` / :func:`without_replacement_log_excess`.
    """
    base, = check_params((P.BASE_RDP,), broadcast=False, base_rdp=base_rdp)
    if base.ndim < 1 or base.shape[-1] < 1:
        raise ValueError(f"Expected base_rdp with a trailing orders axis (orders 2..A), got shape {base.shape}.")
    qq, = check_params((P.Q,), broadcast=False, q=q)
    if base_rdp_inf is None:
        lif = np.full(np.shape(qq), np.inf)
    else:
        einf, = check_params((P.BASE_RDP_INF,), broadcast=False, base_rdp_inf=base_rdp_inf)
        with np.errstate(over="ignore"):  # e^eps(inf) beyond float64: log(inf) = inf, eps(inf) unbounded
            lif = np.where(einf > 0, np.log(np.expm1(np.maximum(einf, 1e-300))), -np.inf)
    shape = V.broadcastable(base_rdp=base[..., 0], q=qq, base_rdp_inf=lif)
    base_b = np.broadcast_to(base, shape + base.shape[-1:])
    with x64_scope():
        return _wor_kernel(jnp.asarray(base_b), jnp.broadcast_to(qq, shape), jnp.broadcast_to(lif, shape))


def interpolate_integer_rdp(orders, integer_rdp):
    """Upper bound at any orders from a curve at integer orders 2..A, by convexity.

    (alpha - 1) D_alpha is convex in alpha (it is a cumulant generating function) and vanishes at alpha = 1,
    so the linear interpolation of (alpha - 1) eps(alpha) between the neighbouring integers (and 1) is an
    upper bound at every fractional order (Wang, Balle, Kasiviswanathan 2019, Sec. 3; Mironov 2017).
    Orders above A are refused.
    """
    a = P.check_orders(P.ORDERS, orders)
    r, = check_params((P.INTEGER_RDP,), broadcast=False, integer_rdp=integer_rdp)
    if r.ndim < 1 or r.shape[-1] < 1:
        raise ValueError(f"Expected integer_rdp with a trailing orders axis (orders 2..A), got shape {r.shape}.")
    top = r.shape[-1] + 1
    if np.any(a > top):
        raise ValueError(f"Expected orders <= {top} (the largest integer order given), got orders={a.max().item()!r}.")
    with x64_scope():
        return jax.device_put(_interpolate_integer_host(a, r))


def subsampled_gaussian_wor_rdp(orders, *, q, sigma, sensitivity=1.0):
    """Gaussian mechanism under sampling without replacement (WBK 2019, Thm 9 with Gaussian base).

    Base curve alpha Delta^2 / (2 sigma^2), eps(inf) = inf.  Integer orders are the Thm 9 bound; fractional
    orders are interpolated by convexity (:func:`interpolate_integer_rdp`), an upper bound.  Orders up to
    :data:`WOR_MAX_ORDER`; sigma / sensitivity in :data:`SIGMA_RANGE` (as :func:`gaussian_rdp`).
    """
    a = P.check_orders(P.WOR_CURVE_ORDERS, orders)
    qq, s, d = check_params((P.Q, P.NOISE_SIGMA, P.SENSITIVITY), broadcast=False, q=q, sigma=sigma,
                            sensitivity=sensitivity)
    _noise_per_sensitivity("sigma", s, d, *SIGMA_RANGE)
    return _subsampled_gaussian_wor_curve(a, qq, s, d)


def _subsampled_gaussian_wor_curve(a, qq, s, d):
    """:func:`subsampled_gaussian_wor_rdp`'s computation on checked values (integer orders ``a`` up to
    WOR_MAX_ORDER; sigma / sensitivity in SIGMA_RANGE)."""
    shape = _shape(qq, s, d)
    top = int(np.ceil(a.max()))
    ints = np.arange(2, top + 1, dtype=np.float64)
    base = ints * (np.broadcast_to(d / s, shape)[..., None] ** 2) / 2.0
    # one program (issue 25): Thm 9's kernel on NumPy arrays (an eager jnp operation is a small program per shape),
    # interpolated on the host as interpolate_integer_rdp does
    q_b = np.broadcast_to(qq, shape)
    curve = np.asarray(_wor_kernel(np.array(base), np.array(q_b), np.full(shape, np.inf)))
    with x64_scope():
        return jax.device_put(_interpolate_integer_host(a, curve))


def _interpolate_integer_host(a, r):
    """:func:`interpolate_integer_rdp`'s formula, in NumPy (``a`` checked orders <= A, ``r`` the curve at 2..A):
    no compiled program per shape."""
    top = r.shape[-1] + 1
    grid = np.arange(1, top + 1, dtype=np.float64)
    k = np.concatenate([np.zeros(r.shape[:-1] + (1,)), (grid[1:] - 1.0) * r], axis=-1)  # (alpha-1) eps
    lo = np.clip(np.floor(a), 1, top - 1).astype(int)
    t = a - lo
    val = (1 - t) * k[..., lo - 1] + t * k[..., lo]
    # the division as the former eager jnp op computed it (the same values): XLA makes a division by a broadcast
    # divisor a product with its reciprocal (within an ulp of the quotient); one point's is a plain division
    return val * (1.0 / (a - 1.0)) if val.size > a.size else val / (a - 1.0)


# ----------------------------------------------------------------------------------------------------------
# Composition


def compose(curves, steps=1):
    """Adaptive composition of RDP curves at common orders: sum_i steps_i * curves_i (Mironov 2017, Prop. 1).

    ``curves`` is one array or a sequence of arrays (orders axis last, broadcasting leading axes); ``steps``
    is one count or a sequence of counts (arrays allowed, they broadcast with the leading axes).
    """
    if isinstance(curves, (list, tuple)):
        steps_list = list(steps) if isinstance(steps, (list, tuple)) else [steps] * len(curves)
        if len(steps_list) != len(curves):
            raise ValueError(f"Expected one steps entry per curve, got {len(steps_list)} for {len(curves)} curves.")
    else:
        curves, steps_list = [curves], [steps]
    total = None
    with x64_scope():
        for i, (c, t) in enumerate(zip(curves, steps_list)):
            c = jnp.asarray(P.CURVES.domain.check(f"curves[{i}]", np.asarray(c)))
            t = P.ANY_STEPS.domain.check(f"steps[{i}]", t)  # a count: 1.5 steps is refused
            term = jnp.asarray(t)[..., None] * c
            total = term if total is None else total + term
    return total
