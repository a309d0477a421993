"""The privacy blanket of the shuffle model (Balle, Bell, Gascon, Nissim 2019) with dummy messages
(Ladjel, Anciaux, Bellet, Scerri, App. E: Lemma 2, Lemma 3, Lemma 4, Lemma 5, Theorem 5, Algorithm 2).

Setting.  n users apply a local randomizer R, whose output law is mu_x = (1 - gamma) upsilon_x + gamma omega
(gamma: the blanket mass / total-variation similarity, omega: the blanket); a shuffler adds d dummies drawn
from omega and shuffles the n + d messages.  With the privacy amplification variable
L = (mu_x(W) - e^eps mu_x'(W)) / omega(W), W ~ omega (Ladjel Eq. 9), Ladjel Lemma 2 gives

    delta(eps) <= sum_{m'=0}^{n-1} C(n-1, m') gamma^m' (1 - gamma)^(n-1-m') E[sum_{i <= m'+1+d} L_i]_+ / (m'+1+d)
               = (1/(gamma n)) sum_{m=1}^{n} (m/(m+d)) C(n, m) gamma^m (1-gamma)^(n-m) E[sum_{i<=m+d} L_i]_+ ,

(the first form, used here, stays defined at gamma = 0: the dummies-only case of Ladjel Thm 4, sigma = 0).
Generic randomizers: the binomial sum runs over a window of m' fixed at compile time (mean +- ``tail_sd``
standard deviations); the truncated binomial mass is bounded by a Chernoff bound and, since every term is at
most max(L_max, 0) (sum L / k <= L_max), added to delta times max(L_max, 0).  delta is capped at 1.

Randomized response / the target randomizer have their own engine (:func:`rr_delta`, :func:`rr_epsilon`,
:func:`rr_delta_traced`), which ``amplify_jax.traffic`` uses too.  g(K) = E[sum_{i<=K} L_i]_+ / K is
non-increasing in K, so m' runs over bins (one value each while the window covers mean +- tail_sd sd; several
beyond, each bin's mass times g at its lowest K: an upper bound), the mass below the window is charged
E[L_+] >= g and the mass above g at the last bin (Chernoff).  Window sizes are planned per point in Python,
points sharing a (power-of-2) bin count are run together, and the inner loop over M (below) runs for the
largest need of its chunk -- a traced trip count, so few shapes are compiled.

E[sum_{i<=k} L_i]_+ is bounded by
- ``"hoeffding"``: b^2/(4a) exp(-2 k a^2 / b^2), a = -E[L] = e^eps - 1, b = L_max - L_min (Ladjel Lemma 3;
  docs/errata.md#e-traffic-thm4-a: Thm 4/Thm 5 print a = 1 - e^eps, which makes b^2/(4a) negative; Hoeffding
  needs a = e^eps - 1 > 0);
- ``"bennett"``: (b_+ / ln(1 + beta)) exp(-(k c / b_+^2) phi(beta)), beta = a b_+ / c, phi(u) = (1+u) ln(1+u) - u,
  c >= E[L^2], b_+ = L_max: the CORRECTED form (docs/errata.md#e-traffic-lemma3-bennett).  Ladjel Lemma 3 prints
  b_+ / (a k ln(1 + beta)) exp(...), which copies a misprint of Balle et al. that its authors later fixed;
  re-derived: E[S]_+ = int_0^inf P[S >= t] dt, P[S >= t] <= exp(-(k c/b_+^2) phi(beta + b_+ t/(k c))) (Bennett
  with the non-central second moment), and phi(beta + u) >= phi(beta) + ln(1 + beta) u (convexity);
  for randomized response both are also capped by E[L_+] = max(b_+, 0) / T per term;
- ``"exact"`` (randomized response / target randomizer only): sum L over k terms depends only on the counts
  (N1, N2) ~ Multinomial(k; 1/T, 1/T) of the blanket messages that land on the two targets t, t'
  (docs/errata.md#e-traffic-monte-carlo: sum L = k sigma (1 - e^eps) + (1 - sigma) T (N1 - e^eps N2)).
  With M = N1 + N2 ~ Bin(k, 2/T) and N2 | M ~ Bin(M, 1/2), sum L = C_M - A N2
  (C_M = (1 - sigma) T M - k sigma (e^eps - 1),
  A = (1 - sigma) T (1 + e^eps)) and E[(C_M - A N2)_+ | M] = C_M F_M(u) - A (M/2) F_{M-1}(u - 1), u the
  largest integer with C_M - A u > 0, F the Bin(., 1/2) CDF from a SciPy table (both terms are lower tails:
  no catastrophic cancellation; 1e-12 of them is added for round-off).  M is streamed from the first value
  with C_M > 0 (below, the term is 0) over a window of mean +- tail_sd sd, the Bin(k, 2/T) weights by the
  exact ratio recurrence; outside, E[. | M] <= (1 - sigma) T M (Chernoff) and a conditional Hoeffding bound
  above.  Every truncation is bounded (O(k^0.5) work per k, O((n sigma)^0.5 k^0.5) per point);
- ``"monte_carlo"`` (randomized response / target randomizer only): Ladjel Algorithm 2, sampled jointly with
  the binomial weights: draw M' ~ Bin(n-1, gamma), K = M' + 1 + d, M = N1 + N2 ~ Bin(K, 2/T) (exact
  inverse-CDF draws from tables, 32-bit uniforms, the resulting bias bounded and added), and take
  Y = E[(S_K)_+ | K, M] / K in closed form (as above: the last draw, N2 | M, integrated out -- a
  Rao-Blackwellisation, unbiased with lower variance); Y in [0, B], B = max(L_max, 0), and draws outside the
  tables count as B.  Returns the mean and a one-sided upper confidence bound at level ``confidence``
  (Maurer 2003 for non-negative variables with E[Y^2] <= B mu: mean + s + sqrt(2 mean s + s^2),
  s = B ln(1/alpha)/R), monotone in eps for fixed draws.  (Drawing the counts is exactly equivalent to
  drawing L_1..L_k one by one, at O(1) instead of O(k) per sample.)

Randomizers (the numbers are the gamma, L bounds and second-moment bound c at a given eps):
- ``generic_randomizer(eps0)``: any eps0-LDP randomizer, gamma = e^-eps0 (Balle et al. 2019), bounds that
  hold whatever its true total-variation similarity: e^-eps0 - e^(eps+eps0) <= L <= e^eps0 - e^(eps-eps0),
  E[L^2] <= e^eps0 (1 + e^2eps) - 2 e^(eps - 3 eps0) (Balle et al.'s generic lemma, the values of their
  notebook).  Ladjel Lemma 4 states the same bounds multiplied by gamma: valid when gamma is the randomizer's
  true total-variation similarity, not when gamma is only the lower bound e^-eps0; we keep the form that
  is valid with gamma = e^-eps0 (docs/errata.md#e-traffic-lemma4-generic).
- ``laplace_randomizer(eps0)``: the Laplace mechanism with scale 1/eps0 on inputs in [0, 1]:
  gamma = e^(-eps0/2), gamma (1 - e^(eps+eps0)) <= L <= gamma (e^eps0 - e^eps), E[L^2] exact at the
  extreme pair (x, x') = (0, 1) (checked against numerical integration over other pairs in the tests).
- ``randomized_response(eps0, k=...)``: k-ary randomized response, gamma = k / (e^eps0 + k - 1); it is the
  target randomizer below with T = k, sigma = gamma.
- ``target_randomizer(targets=T, sampling=sigma)``: Ladjel's local randomizer R_sigma: keep the true target
  with probability 1 - sigma, otherwise send to a target drawn uniformly among ALL T targets (the convention
  of Section III and App. E-C; Theorem 3 uses T - 1 other targets, R_lie = sigma / (T - 1), see
  docs/errata.md#e-traffic-targets -- that theorem lives in ``amplify_jax.traffic``).  gamma = sigma, omega
  uniform over T, L = sigma (1 - e^eps) + (1 - sigma) T (1[W = t] - e^eps 1[W = t']),
  -(1-sigma) T e^eps + sigma (1 - e^eps) <= L <= (1-sigma) T + sigma (1 - e^eps) (docs/errata.md#e-traffic-lemma5:
  Lemma 5 prints the upper end with the sign of sigma (1 - e^eps) flipped), E[L^2] = sigma (2 - sigma)(1 - e^eps)^2
  + (1 - sigma)^2 T (1 + e^2eps) (Lemma 5), range b = (1 - sigma) T (1 + e^eps) (docs/errata.md#e-traffic-thm4-b:
  Thm 4 adds -2 sigma (1 - e^eps)).

Where the code lives (this module holds the engine, shared with ``amplify_jax.traffic``; its user-facing
functions are listed by :mod:`amplify_jax.shuffle`, and its own ``__all__`` is empty; the files it draws on are
private): ``_blanket_model.py`` (randomizers, result types, properties of L), ``_blanket_concentration.py``
(the generic path, Hoeffding / Bennett), ``_blanket_exact.py`` (the engine for randomized response / the target
randomizer, its plans and its traced kernel), ``_blanket_monte_carlo.py`` (Algorithm 2).  The entry points
:func:`blanket_delta`, :func:`blanket_epsilon` and, for the target randomizer on validated arrays,
:func:`rr_delta`, :func:`rr_epsilon`, :func:`rr_delta_traced` are here.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._core import validate as _validate
from .._core.domains import check_params
from .._core.numerics import x64_scope
from ._blanket_concentration import _conc_eps_kernel, _conc_kernel, _conc_window
from ._blanket_exact import EXACT_MAX_M as EXACT_MAX_M
from ._blanket_exact import exact_table_check as exact_table_check
from ._blanket_exact import rr_delta_traced as rr_delta_traced
from ._blanket_exact import _plan_rr, _rr_eps_chunk, _rr_planned, _rr_table_only_if_exact, _run_planned
from ._blanket_model import BLANKET_METHODS as BLANKET_METHODS
from ._blanket_model import DEFAULT_TAIL_SD as DEFAULT_TAIL_SD
from ._blanket_model import BlanketDelta as BlanketDelta
from ._blanket_model import BlanketEpsilon as BlanketEpsilon
from ._blanket_model import BlanketProperties as BlanketProperties
from ._blanket_model import BlanketRandomizer as BlanketRandomizer
from ._blanket_model import blanket_properties as blanket_properties
from ._blanket_model import generic_randomizer as generic_randomizer
from ._blanket_model import laplace_randomizer as laplace_randomizer
from ._blanket_model import randomized_response as randomized_response
from ._blanket_model import target_randomizer as target_randomizer
from ._blanket_model import _check_randomizer
from ._blanket_monte_carlo import _mc_eps_chunk, _mc_planned, _pascal_cdf_np, _plan_mc
from ._params import DELTA, DUMMIES, EPSILON, N

#: Empty (issue 29: one home per name): the user-facing names defined or gathered here (blanket_delta,
#: blanket_epsilon, the randomizers) are listed by :mod:`amplify_jax.shuffle`, their one public home; the engine
#: (rr_delta, rr_epsilon, rr_delta_traced, exact_table_check), shared with amplify_jax.traffic, and the result
#: types and constants stay importable from here, documented, as the package's building blocks.
__all__: list[str] = []


def _prepare(eps_or_delta_name, value, n, dummies, randomizer, method, tail_sd):
    r = _check_randomizer(randomizer)
    _validate.one_of("method", method, BLANKET_METHODS)
    if method in ("exact", "monte_carlo") and r.kind != "rr":
        raise ValueError(
            f"Expected method in ['bennett', 'hoeffding'] for a {r.kind!r} randomizer ('exact' and "
            f"'monte_carlo' need randomized response or the target randomizer), got method={method!r}."
        )
    n, d = check_params((N, DUMMIES), broadcast=False, n=n, dummies=dummies)
    tail_sd = _validate.scalar("tail_sd", tail_sd, _validate.positive)  # one window size for the batch
    shape = _validate.broadcastable(**{eps_or_delta_name: value}, n=n, dummies=d, eps0=r.eps0, k=r.k,
                                    sigma=r.sigma)
    return r, n, d, shape, tail_sd


def _as_key(key):
    if key is None:
        raise ValueError("Expected key to be a jax.random.PRNGKey for method='monte_carlo', got key=None.")
    if hasattr(key, "dtype") and jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    key = np.asarray(key)
    if key.shape != (2,) or key.dtype != np.uint32:
        raise ValueError(f"Expected key to be a jax.random.PRNGKey (2 uint32 words), got key={key!r}.")
    return key


def _flat(shape, *xs):
    return [np.ascontiguousarray(np.broadcast_to(np.asarray(x, np.float64), shape)).reshape(-1) for x in xs]


def _to_jnp(shape, *xs):
    with x64_scope():
        return [jax.device_put(np.asarray(x, np.float64).reshape(shape)) for x in xs]  # no program per shape


def _mc_options(confidence, samples):
    """(confidence, samples) of Monte Carlo, checked (for every method: a bad value is refused even where the
    method does not use it)."""
    return (_validate.scalar("confidence", confidence, _validate.unit_open),
            _validate.count("samples", samples, minimum=2))


def rr_delta(method, epsilon, n, d, T, sigma, *, key=None, confidence=0.95, samples=5000,
             tail_sd=DEFAULT_TAIL_SD):
    """delta of Lemma 2 for the target randomizer at ``epsilon`` (validated numpy inputs that broadcast) as
    numpy arrays (delta, estimate) of the broadcast shape; the shared engine of :func:`blanket_delta` and
    ``amplify_jax.traffic.scrambler_delta``."""
    shape = np.broadcast_shapes(*(np.shape(x) for x in (epsilon, n, d, T, sigma)))
    fe, fn, fd, fT, fs = _flat(shape, epsilon, n, d, T, sigma)
    if method == "monte_carlo":
        alpha = np.full(fe.shape, 1.0 - float(confidence))
        ucb, mean = _mc_planned(_as_key(key), fe, fn, fd, fT, fs, alpha, tail_sd, int(samples))
        return ucb.reshape(shape), mean.reshape(shape)
    delta, _ = _rr_planned(method, fe, fn, fd, fT, fs, tail_sd)
    return delta.reshape(shape), delta.reshape(shape)


def blanket_delta(epsilon, *, n, randomizer, dummies=0, method="hoeffding", key=None, confidence=0.95,
                  samples=5000, tail_sd=DEFAULT_TAIL_SD) -> BlanketDelta:
    """delta(epsilon) of the shuffle model with d dummies (Ladjel Lemma 2 / Thm 5; Balle et al. 2019 at d = 0).

    epsilon, n, dummies and the randomizer's numeric fields broadcast.  ``method`` in
    {"hoeffding", "bennett", "exact", "monte_carlo"} (see the module docstring; "exact" and "monte_carlo"
    need a randomized-response or target randomizer).  Monte Carlo needs ``key`` (a PRNG key) and returns
    the one-sided upper confidence bound at ``confidence`` in ``delta`` and the point estimate in
    ``estimate``; ``samples`` draws per point.  ``tail_sd``: half-width of the binomial windows.
    """
    (eps,) = check_params((EPSILON,), epsilon=epsilon)
    r, n, d, shape, tail_sd = _prepare("epsilon", eps, n, dummies, randomizer, method, tail_sd)
    confidence, samples = _mc_options(confidence, samples)  # checked whatever the method
    if method == "monte_carlo":
        _as_key(key)
    if method in ("exact", "monte_carlo"):
        delta, est = rr_delta(method, eps, n, d, r.k, r.sigma, key=key, confidence=confidence, samples=samples,
                              tail_sd=tail_sd)
        return BlanketDelta(*_to_jnp(shape, delta, est))
    with x64_scope():
        bc = lambda x: jnp.broadcast_to(jnp.asarray(x, jnp.float64), shape)  # noqa: E731
        out = _conc_kernel(method, r.kind, bc(eps), bc(n), bc(d), bc(r.eps0), bc(r.k), bc(r.sigma),
                           Wm=_conc_window(r, n, shape, tail_sd), tail_sd=tail_sd)
    return BlanketDelta(out, out)



# ---------------------------------------------------------------------------------------------------------
# eps from delta (amplify_jax.calibrate.invert_monotone_kernel: fn traced once, feasible endpoint)


def rr_epsilon(method, delta, n, d, T, sigma, eps0, *, rtol=1e-9, key=None, confidence=0.95, samples=5000,
               tail_sd=DEFAULT_TAIL_SD):
    """The smallest eps with the Lemma 2 delta of the target randomizer <= delta (validated numpy inputs that
    broadcast): numpy (epsilon, fallback, delta) of the broadcast shape, the engine of :func:`blanket_epsilon`
    and ``amplify_jax.traffic.scrambler_epsilon``.

    Monte Carlo: one set of draws serves every eps of the search (common random numbers).  For fixed draws
    the upper confidence bound U(eps) is non-increasing in eps (see :func:`_mc_from_draws`), so the returned
    eps* (U(eps*) <= delta) can fall below the true threshold eps_t only if U(e) <= delta < delta(e) at every
    fixed e in (eps*, eps_t): an event of probability <= 1 - confidence for each fixed e, hence
    P(eps* < eps_t) <= 1 - confidence.  No re-check with fresh draws is needed (one would fail half the time
    at the boundary, for no gain in confidence)."""
    shape = np.broadcast_shapes(*(np.shape(x) for x in (delta, n, d, T, sigma, eps0)))
    fdl, fn, fd, fT, fs, fe0 = _flat(shape, delta, n, d, T, sigma, eps0)
    rt = float(rtol)
    if method == "monte_carlo":
        k = _as_key(key)
        alpha = np.full(fn.shape, 1.0 - float(confidence))
        plan = _plan_mc(fn, fd, fT, fs, tail_sd, int(samples))

        kd = jax.device_put(k)

        def call(statics, a, F, r0, i):
            Wm, Wj, T_ = statics
            table = jax.device_put(_pascal_cdf_np(T_, Wm, Wj))
            return _mc_eps_chunk(kd, i, *a, jax.device_put(np.float64(rt)), table, F, r0, Wm=Wm, Wj=Wj,
                                 samples=int(samples), tail_sd=tail_sd)

        out = _run_planned(call, plan, [fdl, fn, fd, fT, fs, alpha, fe0], 3)
    else:
        plan = _rr_table_only_if_exact(method, _plan_rr(fn, fd, fT, fs, tail_sd))

        def call(statics, a, F, r0, nsteps):
            Wm, S = statics
            return _rr_eps_chunk(method, *a, jax.device_put(np.float64(rt)), F, r0, nsteps, Wm=Wm, S=S,
                                 tail_sd=tail_sd)

        out = _run_planned(call, plan, [fdl, fn, fd, fT, fs, fe0], 3)
    return out[0].reshape(shape), out[1].astype(bool).reshape(shape), out[2].reshape(shape)


def blanket_epsilon(delta, *, n, randomizer, dummies=0, method="hoeffding", key=None, confidence=0.95,
                    samples=5000, rtol=1e-9, tail_sd=DEFAULT_TAIL_SD) -> BlanketEpsilon:
    """The smallest eps with delta(eps) <= delta (Ladjel Thm 5 / Balle et al. 2019), by the core's inversion
    (``amplify_jax.calibrate.invert_monotone_kernel``: log-space bisection on eps in [1e-12, eps0], eps0 the
    local guarantee, capped at 50 when infinite; the feasible endpoint, relative width ``rtol``).  Where even
    eps0 does not reach delta (or the re-check fails) the result falls back to the local guarantee eps0 (inf
    for the target randomizer with sigma = 0) with ``fallback=True``.  Monte Carlo: the search uses draws
    from ``key`` (common random numbers for every eps; the bound is monotone in eps, so the returned eps
    keeps the confidence level, see :func:`rr_epsilon`).
    """
    (delta,) = check_params((DELTA,), delta=delta)
    r, n, d, shape, tail_sd = _prepare("delta", delta, n, dummies, randomizer, method, tail_sd)
    rtol = _validate.tolerance("rtol", rtol)  # one number in [1e-15, 0.5]
    confidence, samples = _mc_options(confidence, samples)  # checked whatever the method
    if method == "monte_carlo":
        _as_key(key)
    if method in ("exact", "monte_carlo"):
        e, fb, ach = rr_epsilon(method, delta, n, d, r.k, r.sigma, r.eps0, rtol=rtol, key=key,
                                confidence=confidence, samples=samples, tail_sd=tail_sd)
        e, ach = _to_jnp(shape, e, ach)
        with x64_scope():
            return BlanketEpsilon(e, jax.device_put(np.asarray(fb).reshape(shape)), ach)
    with x64_scope():
        bc = lambda x: jnp.broadcast_to(jnp.asarray(x, jnp.float64), shape)  # noqa: E731
        return _conc_eps_kernel(method, r.kind, bc(delta), bc(n), bc(d), bc(r.eps0), bc(r.k), bc(r.sigma),
                                jnp.asarray(rtol), Wm=_conc_window(r, n, shape, tail_sd), tail_sd=tail_sd)
