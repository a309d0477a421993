"""Bounds of the shuffle family, declared for the registry (:mod:`amplify_jax.bounds`).

Every kernel calls the family's public function (the registered answer is what the family returns) and maps
its validity flag to :data:`Status.FALLBACK` (the value there is the local guarantee, a weaker bound that
holds).  Monotone directions are the theorems' (each stated where declared) and were checked numerically on
grids (tests/test_shuffle.py::test_registered_*).

The clone bound's window (a static size of the compiled kernel) follows the largest variance of its batch, so
the generic inversion over n or eps0 would compile a new kernel at almost every step (~7 s each).  Its
``solvers`` run the same search (:func:`amplify_jax.calibrate.invert_monotone_host`, the generic one) on a
batch padded with the search range's widest point, so that one kernel serves every step, then re-check the
returned value with the registered kernel itself and move it to the feasible end by whole steps (integers) or
by rtol (reals): the generic semantics (feasible endpoint, re-checked), one compilation.  The padding changes
the truncated tail (~1e-10 delta) and so the bracket's end by at most its rtol (1e-9): the re-check absorbs it.

Corrections of the printed papers and of their public code (those the registry's ``notes`` refer to; each
entry of docs/errata.md gives the test that shows it):

* FMT Thm 3.1's condition: Cyffers & Bellet (Thm 7) and Liew et al. (footnote 3) print
  eps0 <= ln(n / (16 ln(2/delta))); used ln(4/delta), the source's (docs/errata.md#e-network-fmt-condition,
  docs/errata.md#e-checkin-fmt-condition).  Its factor: printed (e^eps0 - 1)/(e^eps0 + 1), used the authors'
  code's, never smaller (docs/errata.md#e-ref-fmt-factor).
* The clone bound: the authors' code evaluates the second direction with the first one's cut-off; here each
  direction with its own (docs/errata.md#e-ref-clones).
* The privacy blanket: Hoeffding with a = e^eps - 1 (Ladjel Thm 4/5 print 1 - e^eps;
  docs/errata.md#e-traffic-thm4-a) and the range b = (1 - sigma) T (1 + e^eps) (printed with an extra
  -2 sigma (1 - e^eps); docs/errata.md#e-traffic-thm4-b); Bennett in the corrected form
  (b_+ / ln(1 + beta)) exp(-(k c / b_+^2) phi(beta)) (printed b_+ / (a k ln(1 + beta)) exp(...);
  docs/errata.md#e-traffic-lemma3-bennett, #e-ref-blanket-bennett); the upper end of L with Lemma 5's sign
  corrected (docs/errata.md#e-traffic-lemma5); the generic randomizer's L bounds unscaled (Ladjel Lemma 4 prints
  them times gamma; docs/errata.md#e-traffic-lemma4-generic).
"""

from __future__ import annotations

import math

import numpy as np

from ..bounds import DECREASING, INCREASING, Bound, Choice, Param, register
from ..accounting.calibrate import invert_monotone_host
from .._core.status import Status
from .._core.numerics import CLOSED_FORM_MARGIN
from ._closed_forms import erlingsson_delta, erlingsson_epsilon, fmt_closed_form_epsilon
from ._clones import clones_delta, clones_epsilon
from ._params import BLANKET_DELTA, BLANKET_N, DELTA, DUMMIES, EPS0_POSITIVE, EPSILON, K, N, N_CLOSED
from .blanket import (
    blanket_delta,
    blanket_epsilon,
    exact_table_check,
    generic_randomizer,
    laplace_randomizer,
    randomized_response,
)

ERLINGSSON = "Erlingsson, Feldman, Mironov, Raghunathan, Talwar, Thakurta 2019 (Amplification by shuffling)"
FMT = "Feldman, McMillan, Talwar 2021 (Hiding among the clones)"
BLANKET = ("Balle, Bell, Gascon, Nissim 2019 (The privacy blanket of the shuffle model); with dummies: Ladjel, "
           "Anciaux, Bellet, Scerri (App. E)")



def _status(valid):
    return np.where(np.asarray(valid), Status.OK, Status.FALLBACK).astype(np.int32)


def _local_delta(epsilon, eps0):
    """delta(eps) implied by the local guarantee alone: an eps0-DP mechanism is (eps, (e^eps0 - e^eps) /
    (e^eps0 + 1))-DP (Kairouz, Oh, Viswanath 2015; the A1 = D_0 of the clone pair), 0 for eps >= eps0.  Rounded
    up by CLOSED_FORM_MARGIN (1 + 8 ulps; its float64 value was up to ~1 ulp below the exact one)."""
    e = np.minimum(epsilon, eps0)
    # + 0: -expm1(0) is -0.0, printed "-0"
    return -np.expm1(e - eps0) / (1.0 + np.exp(-eps0)) * CLOSED_FORM_MARGIN + 0.0


# ---------------------------------------------------------------------------------------------------------
# Closed forms


def _erlingsson(eps0, n, delta):
    r = erlingsson_epsilon(eps0, n=n, delta=delta)
    return {"epsilon": np.asarray(r.epsilon), "status": _status(r.valid)}


register(Bound(
    id="shuffle.erlingsson", example=dict(eps0=0.3, n=10_000, delta=1e-6),
    paper=ERLINGSSON, theorem="Corollary 9 (arXiv version): eps = 12 eps0 sqrt(ln(1/delta) / n)",
    summary="closed-form eps of shuffling n eps0-LDP reports; eps0 outside eps0 < 1/2, n >= 1000, delta < 1/100",
    params=(EPS0_POSITIVE, N_CLOSED,
            Param("delta", DELTA.domain, "target delta (the theorem needs delta < 1/100; not monotone across that "
                  "cut, where the answer falls back to eps0)")),
    answer="epsilon", kernel=_erlingsson,
    notes="status fallback (value eps0, the local guarantee) where the conditions fail; capped at eps0. "
          "Increasing in eps0, decreasing in n (the formula's, and the fallback eps0 is never below it)."))


def _erlingsson_delta(epsilon, eps0, n):
    d, valid = erlingsson_delta(epsilon, eps0=eps0, n=n)
    valid = np.asarray(valid)
    local = _local_delta(epsilon, eps0)
    return {"delta": np.where(valid, np.minimum(np.asarray(d), local), local), "status": _status(valid)}


register(Bound(
    id="shuffle.erlingsson-delta", example=dict(epsilon=0.1, eps0=0.25, n=10_000),
    paper=ERLINGSSON, theorem="Corollary 9, solved for delta: delta = exp(-n (eps / (12 eps0))^2)",
    summary="closed-form delta(eps) of shuffling n eps0-LDP reports (valid for eps0 < 1/2, n >= 1000, "
            "delta < 1/100)",
    params=(EPSILON, EPS0_POSITIVE, N_CLOSED), answer="delta", kernel=_erlingsson_delta,
    notes="capped by the local guarantee's delta (e^eps0 - e^eps) / (e^eps0 + 1) (0 for eps >= eps0); where "
          "the conditions fail the value is that local delta, status fallback."))


def _fmt(eps0, n, delta):
    r = fmt_closed_form_epsilon(eps0, n=n, delta=delta)
    return {"epsilon": np.asarray(r.epsilon), "status": _status(r.valid)}


register(Bound(
    id="shuffle.fmt-closed-form", example=dict(eps0=4.0, n=100_000, delta=1e-6),
    paper=FMT, theorem="Theorem 3.1 (closed form), condition eps0 <= ln(n / (16 ln(4/delta)))",
    summary="closed-form eps of shuffling n eps0-LDP reports (Feldman-McMillan-Talwar Thm 3.1)",
    params=(EPS0_POSITIVE, N_CLOSED, DELTA), answer="epsilon", kernel=_fmt,
    notes="Errata (docs/errata.md#e-network-fmt-condition): Cyffers & Bellet (Thm 7) and Liew et al. (footnote 3) quote the condition with ln(2/delta); "
          "the source and its authors' code use ln(4/delta), used here.  The factor is the authors' code's "
          "(>= the printed (e^eps0 - 1)/(e^eps0 + 1): the safe one).  Status fallback (value eps0) where the "
          "condition fails; capped at eps0."))


# ---------------------------------------------------------------------------------------------------------
# The clone bound (numerical)


def _clones(eps0, n, delta):
    r = clones_epsilon(eps0, n, delta)
    return {"epsilon": np.asarray(r.upper), "lower": np.asarray(r.lower), "converged": np.asarray(r.converged)}


def _clones_delta(epsilon, eps0, n):
    r = clones_delta(epsilon, eps0=eps0, n=n)
    return {"delta": np.asarray(r.upper), "lower": np.asarray(r.lower)}


def _clones_pads(name, lo, hi, params):
    """Padding points of the search over ``name`` that fix the clone kernel's static window sizes: the
    largest variance of C ~ Bin(n - 1, e^-eps0) (n = hi; eps0 nearest ln 2) and the largest mean (eps0 = lo)."""
    lo, hi = float(np.min(lo)), float(np.max(hi))
    if name == "n":
        return [hi]
    return [lo, hi, min(max(math.log(2.0), lo), hi)]


def _blanket_pads(name, lo, hi, params):
    """The blanket's window (Hoeffding / Bennett path) follows the largest (n - 1) gamma (1 - gamma): pad with
    n = hi.  The exact path plans its windows per point (no padding)."""
    return [] if params["method"] == "exact" else [float(np.max(hi))]


def _padded_solver(kernel, answer, name, monotone, integer, pads_fn):
    """A dedicated inversion over ``name`` for a clone kernel: the generic search on a padded batch (one
    compiled window), then the registered kernel's re-check at the returned value (see the module docstring)."""

    def solve(target, lo, hi, rtol, **params):
        shape = np.shape(target)
        b = {k: (np.broadcast_to(np.asarray(v, np.float64), shape).ravel() if not isinstance(v, str) else v)
             for k, v in params.items()}
        t = np.asarray(target, np.float64).ravel()
        lo_, hi_ = (np.broadcast_to(np.asarray(x, np.float64), shape).ravel() for x in (lo, hi))
        pads = pads_fn(name, lo_, hi_, params)
        m = t.size
        pad_params = {k: v if isinstance(v, str) else np.concatenate([v, np.full(len(pads), v[0])])
                      for k, v in b.items()}
        offset = float(np.min(lo_)) - 1.0 if integer else 0.0

        def fn(y):
            x = np.concatenate([np.asarray(y, np.float64).ravel() + offset, pads])
            return np.asarray(kernel(**pad_params, **{name: x})[answer])[:m]

        feasible = "above" if monotone == DECREASING else "below"
        inv = invert_monotone_host(fn, t, lo=lo_ - offset, hi=hi_ - offset, feasible=feasible, rtol=rtol,
                                   integer=integer, method="bisection" if integer else "illinois")
        value = np.asarray(inv.value, np.float64) + offset
        status = np.asarray(inv.status, np.int32).copy()
        found = (status == Status.OK) | (status == Status.AT_LIMIT)

        def at(v):
            return np.asarray(kernel(**b, **{name: v})[answer], np.float64)

        # re-check with the registered kernel and move to its feasible end (the padding's effect is ~rtol)
        toward = 1.0 if monotone == DECREASING else -1.0  # the direction that lowers the answer
        for _ in range(16):
            bad = found & (at(value) > t)
            if not bad.any():
                break
            step = np.where(integer, 1.0, np.abs(value) * max(rtol, 1e-12))
            value = np.where(bad, np.clip(value + toward * step, lo_, hi_), value)
        achieved = at(value)
        if integer:  # the extreme feasible integer: one step back must fail (as the generic search returns)
            for _ in range(16):
                back = np.clip(value - toward, lo_, hi_)
                better = found & (back != value) & (at(back) <= t)
                if not better.any():
                    break
                value = np.where(better, back, value)
            achieved = at(value)
        status = np.where(found & (achieved > t), Status.NOT_MONOTONE, status).astype(np.int32)
        r = lambda a: np.asarray(a).reshape(shape)  # noqa: E731
        return r(value), r(achieved), r(status)

    return solve


CLONES_THEOREM = ("Thm 3.2 (reduction to the clone pair) and Sec. 4 (numerical bound): exact hockey-stick "
                  "divergence of the pair, sound float64 upper bound")
CLONES_NOTES = ("Errata (docs/errata.md#e-ref-clones): the authors' public code takes the maximum of the two directions with one cut-off "
                "twice; here both directions are computed exactly (they are equal by the pair's mirror "
                "symmetry).  Increasing in eps0 (an eps0-LDP randomizer is eps0'-LDP for eps0' > eps0: the "
                "worst case over a larger class) and decreasing in n (C ~ Bin(n - 1, e^-eps0) grows "
                "stochastically with n and D_c does not increase in c, data processing).  `lower`: a lower "
                "bound on what this reduction certifies (not on the mechanism's true privacy); `converged`: "
                "the bracket reached rtol = 1e-9 (the upper end is sound either way).")


def _clones_solvers(kernel, answer):
    return {"n": _padded_solver(kernel, answer, "n", DECREASING, True, _clones_pads),
            "eps0": _padded_solver(kernel, answer, "eps0", INCREASING, False, _clones_pads)}


register(Bound(
    id="shuffle.clones", example=dict(eps0=2.0, n=10_000, delta=1e-6),
    paper=FMT, theorem=CLONES_THEOREM,
    summary="eps of shuffling n eps0-LDP reports, the numerical clone bound (upper end; `lower` as output)",
    params=(EPS0_POSITIVE, N, DELTA), answer="epsilon", kernel=_clones, outputs=("lower", "converged"),
    notes=CLONES_NOTES, solvers=_clones_solvers(_clones, "epsilon")))

register(Bound(
    id="shuffle.clones-delta", example=dict(epsilon=0.3, eps0=2.0, n=10_000),
    paper=FMT, theorem=CLONES_THEOREM,
    summary="delta(eps) of shuffling n eps0-LDP reports, the clone pair's divergence (upper; `lower` output)",
    params=(EPSILON, Param("eps0", EPS0_POSITIVE.domain, EPS0_POSITIVE.doc), Param("n", N.domain, N.doc)),
    answer="delta", kernel=_clones_delta, outputs=("lower",),
    notes=CLONES_NOTES.replace(" `converged`: the bracket reached rtol = 1e-9 (the upper end is sound either "
                               "way).", "")
    + "  Decreasing in eps (the hockey-stick divergence).  eps0 and n are NOT declared monotone here: the "
      "divergence itself is, but the sound upper end adds the bounded truncated mass of a window sized for "
      "delta ~ 1e-12, a slack of ~1e-28 that is not monotone (seen on grids where the divergence is below "
      "~1e-27).  To solve for n or eps0, invert shuffle.clones (eps at delta) instead."))


# ---------------------------------------------------------------------------------------------------------
# The privacy blanket (Hoeffding / Bennett / exact), with dummies

RANDOMIZERS = ("generic", "laplace", "randomized-response")
METHOD = Param("method", Choice(("hoeffding", "bennett", "exact")),
               "bound on E[sum L]_+: hoeffding, bennett (corrected) or exact (randomized-response only)",
               default="hoeffding")
RANDOMIZER = Param("randomizer", Choice(RANDOMIZERS),
                   "local randomizer: generic (any eps0-LDP, gamma = e^-eps0), laplace (scale 1/eps0 on [0, 1]) "
                   "or k-ary randomized-response", default="generic")


def _randomizer(kind, eps0, k):
    if kind == "generic":
        return generic_randomizer(eps0)
    if kind == "laplace":
        return laplace_randomizer(eps0)
    return randomized_response(eps0, k=k)


def _blanket(randomizer, eps0, k, n, dummies, method, delta):
    _blanket_exact_check(randomizer, eps0, k, n, dummies, method)
    r = blanket_epsilon(delta, n=n, randomizer=_randomizer(randomizer, eps0, k), dummies=dummies, method=method)
    fb = np.asarray(r.fallback)
    return {"epsilon": np.asarray(r.epsilon), "achieved_delta": np.asarray(r.delta), "status": _status(~fb)}


def _blanket_exact_check(randomizer, eps0, k, n, dummies, method):
    if randomizer == "randomized-response":
        exact_table_check(method, n, dummies, k, k / (np.exp(eps0) + k - 1.0))


def _blanket_delta(randomizer, eps0, k, n, dummies, method, epsilon):
    _blanket_exact_check(randomizer, eps0, k, n, dummies, method)
    r = blanket_delta(epsilon, n=n, randomizer=_randomizer(randomizer, eps0, k), dummies=dummies, method=method)
    return {"delta": np.asarray(r.delta)}


BLANKET_THEOREM = ("Balle et al. 2019 Thm 3.1 / Lemma 5.3 (privacy blanket); Ladjel et al. Lemma 2 (dummies), "
                   "Lemma 3 (Hoeffding, Bennett corrected), Lemma 4 / Lemma 5 (bounds on L)")
BLANKET_NOTES = ("Errata (docs/errata.md#e-traffic-thm4-a, #e-ref-blanket-bennett): Hoeffding's a = e^eps - 1 (Ladjel Thm 4/5 print 1 - e^eps); Bennett in its corrected "
                 "form (b_+ / ln(1 + beta)) exp(-(k c / b_+^2) phi(beta)); the generic randomizer's L bounds are "
                 "Balle et al.'s (valid with gamma = e^-eps0; Ladjel Lemma 4 multiplies them by gamma).  'exact' "
                 "(randomized-response only): the exact expectation through the counts of the two targets.  "
                 "Decreasing in n and in dummies (Lemma 2: m' ~ Bin(n - 1, gamma) grows stochastically with n, "
                 "and g(K) = E[sum_{i<=K} L_i]_+ / K does not increase in K = m' + 1 + d); eps0 and k not "
                 "declared monotone (gamma and the L bounds move together).")

register(Bound(
    id="shuffle.blanket", example=dict(eps0=2.0, n=10_000, dummies=10, delta=1e-6),
    paper=BLANKET, theorem=BLANKET_THEOREM,
    summary="eps of the shuffle model by the privacy blanket (with dummies), smallest eps with delta(eps) <= delta",
    params=(RANDOMIZER, Param("eps0", EPS0_POSITIVE.domain, EPS0_POSITIVE.doc), K, BLANKET_N,
            DUMMIES, METHOD, BLANKET_DELTA),
    answer="epsilon", kernel=_blanket, outputs=("achieved_delta",),
    notes=BLANKET_NOTES + "  Status fallback (value eps0, the local guarantee) where no eps below eps0 reaches "
                          "delta.  The search is a log-space bisection to rtol 1e-9 (feasible end, re-checked).",
    solvers={"n": _padded_solver(_blanket, "epsilon", "n", DECREASING, True, _blanket_pads)}))

register(Bound(
    id="shuffle.blanket-delta", example=dict(epsilon=1.0, eps0=2.0, n=10_000, dummies=10),
    paper=BLANKET, theorem=BLANKET_THEOREM,
    summary="delta(eps) of the shuffle model by the privacy blanket (with dummies)",
    params=(Param("epsilon", EPSILON.domain, EPSILON.doc),
            RANDOMIZER, Param("eps0", EPS0_POSITIVE.domain, EPS0_POSITIVE.doc), K,
            Param("n", BLANKET_N.domain, BLANKET_N.doc),
            Param("dummies", DUMMIES.domain, DUMMIES.doc, default=0), METHOD),
    answer="delta", kernel=_blanket_delta,
    notes=BLANKET_NOTES.replace("Decreasing in n and in dummies", "The theorem's sum decreases in n and dummies")
    + "  Not declared monotone: eps (the generic randomizer's bound rises with eps near eps0, e.g. eps0 = 3, "
      "n = 2e4, Hoeffding: 0.0386 at eps = 3.08, 0.0397 at 3.23), n and dummies (the theorem's sum is, but the "
      "bounded truncated mass of windows sized for the batch, ~1e-18, is not: seen where delta < ~1e-17).  To "
      "solve for n or dummies, invert shuffle.blanket (eps at delta)."))
