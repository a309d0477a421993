"""``amplify_jax.rdp.Accountant``: an RDP accountant with dp_accounting's ``PrivacyAccountant`` interface.

The class is built on first use (PEP 562: :func:`__getattr__` below, called by :mod:`amplify_jax.rdp`'s), so
``import amplify_jax`` never imports dp_accounting.  Where dp_accounting is importable the class subclasses
``dp_accounting.PrivacyAccountant`` (its ``supports``, ``compose``, ``ledger``, ``neighboring_relation``,
``UnsupportedEventError``; ``dp_accounting.calibrate_dp_mechanism`` accepts it); without it, the same class
stands on :mod:`amplify_jax.dp_events`.  Events are read by class name and attributes (duck-typed), so
dp_accounting's events and :mod:`amplify_jax.dp_events`'s are accepted alike.

The curves of the events are amplify_jax's (module :mod:`amplify_jax.rdp`, each exact or a cited upper bound):
the Poisson-subsampled Gaussian is exact at every order (MTZ 2019; dp_accounting's fractional-order series is
loose there and gives inf at alpha <= 1.5 for q = 0.1, sigma = 1).  Orders the curves of rdp do not take (the
order 1, i.e. the KL divergence, and orders above ``rdp.MAX_ORDER`` up to inf) are filled with sound values
named per event: a closed form where one exists, else D_1 <= D_alpha and D_alpha <= D_inf (Rényi divergences
do not decrease with the order: van Erven and Harremoës 2014, Thm 3).  Conversions to (eps, delta) are those
of :mod:`amplify_jax.conversions` (Balle et al. 2020 / Canonne-Kamath-Steinke 2020, the bound dp_accounting
uses too), with the total-variation bound (KL, Bretagnolle-Huber) and the pure-DP order inf as dp_accounting has
them (``_rdp_conversions``).

Batches: any number of an event (noise multiplier, sampling probability, eps0 parameters, rho, xi) may be a
NumPy array; the accountant's curve ``_rdp`` has shape broadcast(all events' parameters) + (len(orders),), and
``get_epsilon(delta)`` / ``get_delta(eps)`` broadcast the query with that batch shape (a float where both are
scalars).  Counts, ``num_buckets``, data set sizes, tree step counts and repeat-and-select's mean/shape are
Python numbers.
"""

from __future__ import annotations

import math

import numpy as np

from . import _rdp_conversions as C
from . import _rdp_curves as rdp  # the curves' module, not the public rdp (which loads this one lazily)
from . import dp_events

_U = float(np.finfo(np.float64).eps)


def _up(x, ulps=4.0):
    """x rounded up by a relative margin of ``ulps`` ulps (the few roundings of a closed form)."""
    return np.where(np.isfinite(x), x + ulps * _U * np.abs(x), x)


def _kind(event) -> str:
    name = type(event).__name__
    name = name[:-len("DpEvent")] if name.endswith("DpEvent") else name
    return "ZCDp" if name == "ZC" else name  # dp_accounting's ZCDpEvent


def _array(name, x):
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"Expected {name} to be a number or an array of numbers, got {name}={x!r}.") from None
    if np.isnan(a).any():
        raise ValueError(f"Expected {name} to be a number, got {name}={x!r}.")
    return a


def _first_bad(a, bad):
    return (a[tuple(np.argwhere(bad)[0])] if a.ndim else a).item()


def _noise(x, name="noise_multiplier", what="Noise multiplier"):
    a = _array(name, x)
    bad = ~(a >= 0) | np.isinf(a)
    if bad.any():
        raise ValueError(f"{what} must be non-negative and finite: expected {name} >= 0, "
                         f"got {name}={_first_bad(a, bad)!r}.")
    return a


def _rate(x):
    a = _array("sampling_probability", x)
    bad = ~((a >= 0) & (a <= 1))
    if bad.any():
        raise ValueError("Sampling rate out of range: expected sampling_probability in [0, 1], got "
                         f"sampling_probability={_first_bad(a, bad)!r}.")
    return a


def _int(name, x, minimum=0):
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < minimum:
        raise ValueError(f"Expected {name} to be an integer >= {minimum} (non-negative), got {name}={x!r}.")
    return int(x)


# ----------------------------------------------------------------------------------------------------------
# Curves of the events: arrays of shape batch + (len(orders),), every entry an upper bound on D_alpha


def _fill(shape, orders, regular, other):
    """The curve over ``orders``: ``regular(a)`` at the orders rdp's curves take (1 < a <= MAX_ORDER),
    ``other(a)`` at the rest (a = 1, a > MAX_ORDER, a = inf); each returns batch + (len(a),)."""
    reg = (orders > 1.0) & (orders <= rdp.MAX_ORDER)
    out = np.empty(shape + orders.shape, dtype=np.float64)
    if reg.any():
        out[..., reg] = np.broadcast_to(np.asarray(regular(orders[reg]), dtype=np.float64), shape + (int(reg.sum()),))
    if (~reg).any():
        out[..., ~reg] = np.broadcast_to(np.asarray(other(orders[~reg]), dtype=np.float64),
                                         shape + (int((~reg).sum()),))
    return out


def _gaussian_closed(orders, sigma):
    """alpha / (2 sigma^2) (Mironov 2017, Table II; its limit alpha -> 1 is the KL divergence, and inf at
    alpha = inf), rounded up; sigma = 0 gives inf (no noise)."""
    s = sigma[..., None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        v = np.where(s > 0, orders / (2.0 * s * s), np.inf)
    return _up(v)


def gaussian_curve(orders, sigma):
    """The Gaussian mechanism, noise multiplier sigma (Mironov 2017, Table II, exact): rdp.gaussian_rdp where
    sigma is in its range, the same closed form elsewhere."""
    ok = (sigma >= rdp.SIGMA_RANGE[0]) & (sigma <= rdp.SIGMA_RANGE[1])

    def regular(a):
        v = np.asarray(rdp.gaussian_rdp(a, sigma=np.where(ok, sigma, 1.0)))
        return np.where(ok[..., None], v, _gaussian_closed(a, sigma))

    return _fill(sigma.shape, orders, regular, lambda a: _gaussian_closed(a, sigma))


def poisson_gaussian_curve(orders, q, sigma):
    """Poisson-subsampled Gaussian (add/remove, or replace-by-a-special-record: the same pair), exact:
    rdp.poisson_subsampled_gaussian_rdp (Mironov, Talwar, Zhang 2019).  q = 0 costs nothing; sigma = 0 with
    q > 0 is inf.  Where sigma leaves rdp.SIGMA_RANGE, at orders above MAX_ORDER, and as D_1 <= D_1.01 at the
    order 1, the unsampled Gaussian bounds it too: the subsampled pair is a mixture of pairs each no further
    apart than the Gaussian's (quasi-convexity of D_alpha, van Erven and Harremoës 2014, Thm 13)."""
    shape = np.broadcast_shapes(q.shape, sigma.shape)
    q, sigma = np.broadcast_to(q, shape), np.broadcast_to(sigma, shape)
    ok = (q > 0) & (sigma >= rdp.SIGMA_RANGE[0]) & (sigma <= rdp.SIGMA_RANGE[1])
    gauss = lambda a: _gaussian_closed(a, sigma)  # noqa: E731

    def exact(a):
        v = np.asarray(rdp.poisson_subsampled_gaussian_rdp(a, q=np.where(ok, q, 0.5), sigma=np.where(ok, sigma, 1.0)))
        return np.where(ok[..., None], np.minimum(v, gauss(a)), gauss(a))

    def other(a):
        at_one = np.minimum(exact(np.array([1.01])), gauss(np.array([1.0])))  # D_1 <= D_1.01, D_1 <= Gaussian KL
        return np.where(a == 1.0, at_one, gauss(a))

    out = _fill(shape, orders, exact, other)
    return np.where((q == 0)[..., None], 0.0, out)


def wor_gaussian_curve(orders, q, sigma):
    """Gaussian under sampling without replacement (replace-one), rdp.subsampled_gaussian_wor_rdp (Wang,
    Balle, Kasiviswanathan 2019, Thm 9; fractional orders by convexity) at orders up to rdp.WOR_MAX_ORDER; the
    unsampled Gaussian above it, where sigma leaves its range and (with D_2) at the order 1 (quasi-convexity
    as for Poisson sampling).  q = 0 (an empty batch) costs nothing."""
    shape = np.broadcast_shapes(q.shape, sigma.shape)
    q, sigma = np.broadcast_to(q, shape), np.broadcast_to(sigma, shape)
    ok = (q > 0) & (sigma >= rdp.SIGMA_RANGE[0]) & (sigma <= rdp.SIGMA_RANGE[1])
    gauss = lambda a: _gaussian_closed(a, sigma)  # noqa: E731

    def bound(a):
        a = np.asarray(a, dtype=np.float64)
        small = a <= rdp.WOR_MAX_ORDER
        out = gauss(a)
        if small.any():
            v = np.asarray(rdp.subsampled_gaussian_wor_rdp(a[small], q=np.where(ok, q, 0.5),
                                                           sigma=np.where(ok, sigma, 1.0)))
            out[..., small] = np.where(ok[..., None], np.minimum(v, out[..., small]), out[..., small])
        return out

    def other(a):
        return np.where(a == 1.0, bound(np.array([2.0])), gauss(a))

    out = _fill(shape, orders, bound, other)
    return np.where((q == 0)[..., None], 0.0, out)


def laplace_curve(orders, b):
    """Laplace mechanism of scale b per unit l1 sensitivity, eps = 1/b: rdp.laplace_rdp (Mironov 2017,
    Prop. 6, exact); at the order 1 its limit, the KL divergence eps + e^{-eps} - 1 (<= eps^2 / 2, used below
    eps = 1e-3 where the difference cancels); above MAX_ORDER D_inf = eps; b = 0 is inf.  Scales above
    rdp.LAPLACE_RANGE: eps-DP implies (alpha, alpha eps^2 / 2)-RDP (Bun and Steinke 2016, Prop. 1.4 and 1.3)."""
    with np.errstate(divide="ignore"):
        eps = _up(np.where(b > 0, 1.0 / b, np.inf), 2.0)
    ok = (b >= rdp.LAPLACE_RANGE[0]) & (b <= rdp.LAPLACE_RANGE[1])

    def regular(a):
        v = np.asarray(rdp.laplace_rdp(a, scale=np.where(ok, b, 1.0)))
        with np.errstate(invalid="ignore", over="ignore"):
            tiny = np.minimum(_up(a * eps[..., None] ** 2 / 2.0), eps[..., None])
        return np.where(ok[..., None], v, np.where((b > 0)[..., None], tiny, np.inf))

    def other(a):
        e = eps[..., None]
        with np.errstate(invalid="ignore", over="ignore"):
            kl = np.where(e < 1e-3, _up(e * e / 2.0), e + np.expm1(-np.minimum(e, 1e300)) + 4.0 * _U * e)
        return np.where(a == 1.0, np.minimum(kl, e), e)

    return _fill(b.shape, orders, regular, other)


def zcdp_curve(orders, rho, xi):
    """(xi, rho)-zCDP: D_alpha <= xi + rho alpha for alpha > 1 (Bun and Steinke 2016, Def. 1.1), the same at
    the order 1 (the limit), inf at the order inf unless rho = 0."""
    shape = np.broadcast_shapes(rho.shape, xi.shape)
    r, x = np.broadcast_to(rho, shape)[..., None], np.broadcast_to(xi, shape)[..., None]
    with np.errstate(invalid="ignore"):
        v = np.where(r > 0, x + r * orders, x)
    return np.broadcast_to(_up(v), shape + orders.shape)


def rr_replace_one_curve(orders, p, k):
    """k-ary randomized response (uniform bucket w.p. p), replace-one: the output laws differ on two buckets
    with ratio e^{eps0}, eps0 = log(1 + k (1 - p) / p), i.e. rdp.randomized_response_rdp (Mironov 2017,
    Table II, exact); at the order 1 the KL divergence eps0 (e^{eps0} - 1) / (e^{eps0} + k - 1); above
    MAX_ORDER D_inf = eps0.  p = 1 or k = 1: 0; p = 0: inf."""
    with np.errstate(divide="ignore"):
        eps0 = _up(np.log1p(np.where(p > 0, k * (1.0 - p) / np.where(p > 0, p, 1.0), np.inf)), 2.0)
    if k == 1:
        return np.zeros(p.shape + orders.shape)
    fin = np.isfinite(eps0)

    def regular(a):
        v = np.asarray(rdp.randomized_response_rdp(a, eps0=np.where(fin, eps0, 1.0), k=k))
        return np.where(fin[..., None], v, np.inf)

    def other(a):
        e = eps0[..., None]
        with np.errstate(invalid="ignore", over="ignore"):
            em = np.expm1(np.minimum(e, 700.0))
            kl = _up(e * em / (em + k))
        return np.where(a == 1.0, np.where(np.isfinite(e), np.minimum(kl, e), np.inf), e)

    return _fill(p.shape, orders, regular, other)


def rr_replace_special_curve(orders, p, k):
    """k-ary randomized response, replace-special (the special record's output is uniform): the Rényi
    divergence of order alpha (Mironov 2017, Def. 3) between P = (1 - p + p/k, p/k, ...) and the uniform U,
    in both directions, computed exactly in log space:
    D_alpha(P||U) = log((e^{alpha l1} + (k-1) p^alpha) / k) / (alpha - 1), l1 = log(1 + (k-1)(1-p)), and
    D_alpha(U||P) with 1 - alpha in place of alpha; at the order 1 the two KL divergences; above MAX_ORDER
    D_inf = max(l1, -log p) (the largest log-ratio).  p = 1 or k = 1: 0; p = 0: inf."""
    from scipy.special import logsumexp  # lazy: SciPy costs ~100 ms to import; only this curve needs it

    pp = p[..., None]
    l1 = np.log1p((k - 1) * (1.0 - pp))
    with np.errstate(divide="ignore"):
        l2 = np.log(pp)
    w = np.log(np.array([1.0 / k, 1.0 - 1.0 / k]))
    if k == 1:
        return np.zeros(p.shape + orders.shape)

    def regular(a):
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            out = []
            for x in (a, 1.0 - a):
                t = np.stack(np.broadcast_arrays(x * l1 + w[0], np.where(pp > 0, x * l2, -np.inf) + w[1]), -1)
                out.append(logsumexp(t, axis=-1) / (a - 1.0))
            return np.where(pp > 0, _up(np.maximum(*out), 16.0), np.inf)

    def other(a):
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            kl_pu = np.exp(l1) / k * l1 + np.where(pp > 0, (k - 1) * pp / k * l2, 0.0)
            kl_up = -l1 / k - (k - 1) / k * l2
            dinf = np.maximum(l1, -l2)
            kl = np.minimum(np.maximum(kl_pu, kl_up), dinf)
        return np.where(pp > 0, _up(np.where(a == 1.0, kl, dinf), 16.0), np.inf)

    return np.where((p == 1)[..., None], 0.0, _fill(p.shape, orders, regular, other))


def tree_curve(orders, sigma, step_counts):
    """Single-epoch tree aggregation with restarts (Kairouz et al. 2021, "Practical and private (deep)
    learning without sampling or shuffling", Appendix D): a record enters at most one tree and there at most
    depth = ceil(log2(max steps + 1)) nodes, so the release is a Gaussian of sensitivity sqrt(depth):
    alpha depth / (2 sigma^2)."""
    steps = [step_counts] if np.isscalar(step_counts) else list(step_counts)
    if not steps:
        raise ValueError(f"Expected step_counts to be a non-empty list or a number, got step_counts={step_counts!r}.")
    for s in steps:
        _int("step_counts", s)
    depth = max(int(s) for s in steps).bit_length()  # ceil(log2(n + 1)) for an integer n >= 0
    if depth == 0:
        return np.zeros(sigma.shape + orders.shape)
    with np.errstate(divide="ignore"):
        return gaussian_curve(orders, np.where(sigma > 0, sigma / math.sqrt(depth), 0.0))


# ----------------------------------------------------------------------------------------------------------
# Repeat and select (Papernot and Steinke 2022, "Hyperparameter tuning with Renyi differential privacy")


def _tnb_mean(gamma, eta):
    """E[K] of the truncated negative binomial (Papernot-Steinke 2022, Def. 1): eta (1 - g) / (g (1 - g^eta)),
    its limits (1 - g) / (g log(1/g)) at eta = 0 (logarithmic) and 1 at g = 1."""
    lg = np.log(gamma)
    if eta == 0:
        return np.where(gamma < 1, (1.0 - gamma) / (gamma * -np.where(gamma < 1, lg, -1.0)), 1.0)
    return np.where(gamma < 1, eta * (1.0 - gamma) / (gamma * -np.expm1(eta * np.where(gamma < 1, lg, -1.0))), 1.0)


def tnb_gamma(mean, eta):
    """The gamma of the truncated negative binomial of mean ``mean`` and shape eta, from below: the mean
    decreases in gamma, and a smaller gamma only increases Papernot-Steinke's bound (its log(1/gamma) term).
    Bisection on log gamma, returning the low end of a bracket of relative width 1e-13."""
    if mean == 1.0:
        return 1.0
    if eta == 1:
        return float(np.nextafter(1.0 / mean, 0.0))
    lo, hi = -1.0, 0.0  # log gamma; expand lo until the mean there exceeds the target
    while _tnb_mean(math.exp(lo), eta) < mean:
        lo *= 2.0
        if lo < -1e4:
            raise ValueError(f"Expected a mean the truncated negative binomial reaches, got mean={mean!r}.")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if hi - lo <= 1e-13 * abs(lo):
            break
        if _tnb_mean(math.exp(mid), eta) >= mean:
            lo = mid
        else:
            hi = mid
    return math.exp(lo) * (1.0 - 4.0 * _U)


def repeat_and_select_curve(orders, inner, mean, shape):
    """RDP of running a mechanism (curve ``inner``) a random K times and releasing the best run.

    Poisson K (shape = inf), Papernot-Steinke 2022 Thm 6: eps'(l) = eps(l) + mean delta_hat + log(mean)/(l-1)
    where the mechanism is (eps_hat, delta_hat)-DP, e^{eps_hat} = 1 + 1/(l-1) (eps_hat rounded down, delta_hat
    from the inner curve by the conversions here).  Truncated negative binomial (0 <= shape < inf; 0
    logarithmic, 1 geometric), Thm 2: eps'(l) = eps(l) + log(mean)/(l-1)
    + (1 + shape) min_{l_hat >= 1} [(1 - 1/l_hat) eps(l_hat) + log(1/gamma)/l_hat], the minimum over the grid.
    Orders <= 1 and inf get the next larger order's value (D_alpha does not decrease with alpha), which is
    applied to every order (the lower envelope from above)."""
    if isinstance(shape, bool) or not (isinstance(shape, (int, float, np.floating, np.integer)) and shape >= 0):
        raise ValueError(f"Expected shape >= 0 (the distribution of repetitions), got shape={shape!r}.")
    if isinstance(mean, bool) or not (isinstance(mean, (int, float, np.floating, np.integer)) and mean >= 1):
        raise ValueError(f"Expected mean >= 1 (the mean number of repetitions), got mean={mean!r}.")
    mean, shape = float(mean), float(shape)
    a = orders
    valid = (a > 1) & np.isfinite(a)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_term = np.where(valid, math.log(mean) / np.where(valid, a - 1.0, 1.0), np.inf)
    if shape == math.inf:
        with np.errstate(divide="ignore"):
            eps_hat = np.where(valid, np.log1p(1.0 / np.where(valid, a - 1.0, 1.0)), 0.0) * (1.0 - 4.0 * _U)
        delta_hat = C.delta(a, inner[..., None, :], eps_hat)  # batch + (len(orders),)
        out = inner + mean * delta_hat + log_term
    else:
        gamma = tnb_gamma(mean, shape)
        lg = -math.log(gamma)
        hat = (a >= 1) & np.isfinite(a)
        with np.errstate(invalid="ignore", divide="ignore"):
            terms = np.where(hat, (1.0 - 1.0 / np.where(hat, a, 1.0)) * np.where(a == 1, 0.0, inner)
                             + lg / np.where(hat, a, 1.0), np.inf)
        c = (1.0 + shape) * np.min(terms, axis=-1, keepdims=True)
        out = inner + log_term + c
    out = np.where(valid, _up(out, 8.0), np.inf)
    order = np.argsort(a, kind="stable")
    env = np.minimum.accumulate(out[..., order[::-1]], axis=-1)[..., ::-1]  # min over larger orders
    res = np.empty_like(env)
    res[..., order] = env
    return res


# ----------------------------------------------------------------------------------------------------------
# The accountant


def _relation_name(rel) -> str:
    name = getattr(rel, "name", None)
    if name not in ("ADD_OR_REMOVE_ONE", "REPLACE_ONE", "REPLACE_SPECIAL"):
        raise ValueError(f"Expected neighboring_relation in ADD_OR_REMOVE_ONE, REPLACE_ONE, REPLACE_SPECIAL, got "
                         f"neighboring_relation={rel!r}.")
    return name


def _gaussian_structure(event):
    """Noise multiplier of one Gaussian equivalent to a nested composition of Gaussians on the same data,
    (sum_i sigma_i^-2)^-1/2 (Mironov, Talwar, Zhang 2019, Sec. 3: a vector query of l2 sensitivity
    sqrt(sum sigma_i^-2) under unit noise), or the first event that is not one (the unsupported sub-event)."""
    kind = _kind(event)
    if kind == "Gaussian":
        return _noise(event.noise_multiplier)
    if kind == "SelfComposed":
        s = _gaussian_structure(event.event)
        if not isinstance(s, np.ndarray):
            return s
        c = _int("count", event.count)
        with np.errstate(divide="ignore"):
            return s / math.sqrt(c) if c else np.full(s.shape, np.inf)
    if kind == "Composed":
        inv = np.float64(0.0)
        for e in event.events:
            s = _gaussian_structure(e)
            if not isinstance(s, np.ndarray):
                return s
            with np.errstate(divide="ignore"):
                inv = inv + np.where(s > 0, 1.0 / np.where(s > 0, s, 1.0) ** 2, np.inf)
        with np.errstate(divide="ignore"):
            return np.asarray(np.where(inv > 0, 1.0 / np.sqrt(inv), np.inf))
    return event


class _Core:
    """The accountant's behaviour; :func:`_build` adds dp_accounting's ``PrivacyAccountant`` where installed.

    ``Accountant(orders=None, neighboring_relation=ADD_OR_REMOVE_ONE)``: ``orders`` any numbers >= 1 (the
    order 1 is the KL divergence, inf is pure DP), default :data:`amplify_jax.rdp.DEFAULT_ORDERS` (a superset
    of dp_accounting's default grid).  Events accounted, by relation (as dp_accounting's RdpAccountant):
    NoOp (nothing), NonPrivate (inf), Gaussian, Laplace, ZCDp (Bun-Steinke), SelfComposed, Composed
    (any relation); PoissonSampled of a (composition of) Gaussian (add/remove, replace-special);
    SampledWithoutReplacement of a (composition of) Gaussian (replace-one); RandomizedResponse (replace-one,
    replace-special); SingleEpochTreeAggregation (replace-special); RepeatAndSelect of any of these.
    Others raise ``UnsupportedEventError``; bad parameters raise ValueError naming them.
    """

    _EventError = dp_events.CompositionErrorDetails

    def __init__(self, orders=None, neighboring_relation=None, *, _base_init=None):
        rel = neighboring_relation if neighboring_relation is not None else self._relations.ADD_OR_REMOVE_ONE
        self._relation = _relation_name(rel)
        if _base_init is not None:
            _base_init(self, rel)
        else:
            self._neighboring_relation = rel
        a = _array("orders", rdp.DEFAULT_ORDERS if orders is None else orders)
        a = np.atleast_1d(a)
        if a.ndim != 1 or a.size == 0 or np.any(a < 1):
            raise ValueError(f"Expected orders to be a non-empty 1-D list of numbers >= 1, got orders={orders!r}.")
        self._orders = a
        self._rdp = np.zeros(a.shape, dtype=np.float64)
        self._events = []  # the ledger: (event, count)

    # -- dp_accounting's interface -------------------------------------------------------------------------

    @property
    def neighboring_relation(self):
        return self._neighboring_relation

    def supports(self, event) -> bool:
        return self._check(event) is None

    def _maybe_compose(self, event, count, do_compose):
        err = self._check(event)
        if err is None and do_compose:
            self._add(event, count)
        return err

    def compose(self, event, count=1):
        """Account ``event`` composed ``count`` times; returns self.  UnsupportedEventError for an event (or
        sub-event) not accounted under this relation, ValueError for a bad parameter (nothing is recorded)."""
        count = _int("count", count)
        err = self._check(event)
        if err is not None:
            raise self._unsupported(f"Unsupported event: {event}. Error: [{err.error_message}] caused by subevent "
                                    f"{err.invalid_event}.")
        self._add(event, count)
        return self

    def _add(self, event, count):
        if count == 0:
            return
        curve = self._curve(event)
        self._rdp = self._rdp + count * curve
        self._record(event, count)

    def _record(self, event, count):
        dp_events.record_event(self._events, event, count)

    @property
    def ledger(self):
        """The composed event accounted so far (NoOp when empty), in the events' own vocabulary."""
        return dp_events.ledger_event(self._events, self._event_types)

    def get_epsilon(self, target_delta):
        """Least eps such that the composition is (eps, target_delta)-DP by the grid's orders; target_delta in
        [0, 1], an array broadcasting with the batch; a float where both are scalars."""
        d = _array("target_delta", target_delta)
        bad = ~((d >= 0) & (d <= 1))
        if bad.any():
            raise ValueError(f"Expected target_delta in [0, 1], got target_delta={_first_bad(d, bad)!r}.")
        return self._out(C.epsilon(self._orders, self._rdp, d))

    def get_delta(self, target_epsilon):
        """Least delta at ``target_epsilon`` (>= 0, inf allowed) by the grid's orders; broadcasts as
        :meth:`get_epsilon`."""
        e = _array("target_epsilon", target_epsilon)
        bad = ~(e >= 0)
        if bad.any():
            raise ValueError(f"Expected target_epsilon >= 0, got target_epsilon={_first_bad(e, bad)!r}.")
        return self._out(C.delta(self._orders, self._rdp, e))

    @staticmethod
    def _out(x):
        x = np.asarray(x, dtype=np.float64)
        return float(x) if x.ndim == 0 else x

    @property
    def rdp(self):
        """The composed curve, batch + (len(orders),)."""
        return np.copy(self._rdp)

    @property
    def orders(self):
        return np.copy(self._orders)

    # -- events ----------------------------------------------------------------------------------------------

    def _check(self, event):
        """None if the event is accounted under this relation, else the error details (no numerics)."""
        kind, rel = _kind(event), self._relation
        err = lambda msg, ev=event: self._EventError(invalid_event=ev, error_message=msg)  # noqa: E731
        if kind in ("NoOp", "NonPrivate", "Gaussian", "Laplace", "ZCDp"):
            return None
        if kind == "SelfComposed":
            return self._check(event.event)
        if kind == "Composed":
            for e in event.events:
                r = self._check(e)
                if r is not None:
                    return r
            return None
        if kind in ("PoissonSampled", "SampledWithoutReplacement"):
            want = ("ADD_OR_REMOVE_ONE", "REPLACE_SPECIAL") if kind == "PoissonSampled" else ("REPLACE_ONE",)
            if rel not in want:
                return err(f"neighboring_relation must be {' or '.join(want)} for {type(event).__name__}; found "
                           f"{rel}.")
            sub = _gaussian_structure_kind(event.event)
            if sub is not None:
                return err(f"Subevent of {type(event).__name__} must be a Gaussian event or a nested composition "
                           f"of Gaussian events; found subevent {sub}.")
            return None
        if kind == "RandomizedResponse":
            if rel == "ADD_OR_REMOVE_ONE":
                return err("neighboring_relation must be REPLACE_ONE or REPLACE_SPECIAL for "
                           f"RandomizedResponseDpEvent; found {rel}.")
            return None
        if kind == "SingleEpochTreeAggregation":
            if rel != "REPLACE_SPECIAL":
                return err(f"neighboring_relation must be REPLACE_SPECIAL for tree aggregation; found {rel}.")
            return None
        if kind == "RepeatAndSelect":
            return self._check(event.event)
        return err("Unsupported event.")

    def _curve(self, event):
        """The event's curve, batch + (len(orders),): every entry an upper bound on D_alpha."""
        a, kind = self._orders, _kind(event)
        if kind == "NoOp":
            return np.zeros(a.shape)
        if kind == "NonPrivate":
            return np.full(a.shape, np.inf)
        if kind == "Gaussian":
            return gaussian_curve(a, _noise(event.noise_multiplier))
        if kind == "Laplace":
            return laplace_curve(a, _noise(event.noise_multiplier))
        if kind == "ZCDp":
            return zcdp_curve(a, _noise(event.rho, "rho", "rho"), _noise(getattr(event, "xi", 0.0), "xi", "xi"))
        if kind == "SelfComposed":
            c = _int("count", event.count)
            return c * self._curve(event.event) if c else np.zeros(a.shape)
        if kind == "Composed":
            total = np.zeros(a.shape)
            for e in event.events:
                total = total + self._curve(e)
            return total
        if kind == "PoissonSampled":
            q = _rate(event.sampling_probability)
            return poisson_gaussian_curve(a, q, _gaussian_structure(event.event))
        if kind == "SampledWithoutReplacement":
            n = _int("source_dataset_size", event.source_dataset_size, 1)
            m = _int("sample_size", event.sample_size)
            if m > n:
                raise ValueError(f"Expected sample_size <= source_dataset_size={n}, got sample_size={m}.")
            return wor_gaussian_curve(a, np.asarray(m / n), _gaussian_structure(event.event))
        if kind == "RandomizedResponse":
            p = _array("noise_parameter", event.noise_parameter)
            bad = ~((p >= 0) & (p <= 1))
            if bad.any():
                raise ValueError(f"Expected noise_parameter in [0, 1], got noise_parameter={_first_bad(p, bad)!r}.")
            k = _int("num_buckets", event.num_buckets, 1)
            fn = rr_replace_one_curve if self._relation == "REPLACE_ONE" else rr_replace_special_curve
            return fn(a, p, k)
        if kind == "SingleEpochTreeAggregation":
            return tree_curve(a, _noise(event.noise_multiplier), event.step_counts)
        if kind == "RepeatAndSelect":
            return repeat_and_select_curve(a, self._curve(event.event), event.mean, event.shape)
        raise self._unsupported(f"Unsupported event: {event}.")  # pragma: no cover - _check ran first


def _gaussian_structure_kind(event):
    """None if ``event`` is a nested composition of Gaussians (no numerics), else the offending sub-event."""
    kind = _kind(event)
    if kind == "Gaussian":
        return None
    if kind == "SelfComposed":
        return _gaussian_structure_kind(event.event)
    if kind == "Composed":
        for e in event.events:
            r = _gaussian_structure_kind(e)
            if r is not None:
                return r
        return None
    return event


_CLASS = None


def _build():
    """The Accountant class: a dp_accounting ``PrivacyAccountant`` where dp_accounting is importable."""
    global _CLASS
    if _CLASS is None:
        def make_init(pa):
            def __init__(self, orders=None, neighboring_relation=pa.NeighboringRelation.ADD_OR_REMOVE_ONE):
                _Core.__init__(self, orders, neighboring_relation, _base_init=pa.PrivacyAccountant.__init__)
            return __init__

        _CLASS = dp_events.accountant_class(_Core, "amplify_jax.rdp", make_init)
    return _CLASS


def __getattr__(name):
    """``amplify_jax.rdp.Accountant``, built on first use (PEP 562), so that importing amplify_jax does not
    import dp_accounting."""
    if name == "Accountant":
        return _build()
    raise AttributeError(f"module 'amplify_jax.rdp' has no attribute {name!r}")
