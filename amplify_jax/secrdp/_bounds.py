"""Bounds of Decor / SecRDP (Allouah, Koloskova, El Firdoussi, Jaggi, Guerraoui, ICML 2024), declared for the
registry.

Registered: ``secrdp.step`` (user-level eps after T steps, :func:`~amplify_jax.secrdp.epsilon`),
``secrdp.step-rdp`` (its RDP curve, :func:`~amplify_jax.secrdp.step_rdp` composed over steps),
``secrdp.spectral`` / ``secrdp.spectral-rdp`` (Thm 1's spectral bound, :func:`~amplify_jax.secrdp.spectral_bound`),
``secrdp.closed-form`` (eps from eps1, :func:`~amplify_jax.secrdp.closed_form_epsilon`),
``secrdp.example-level`` / ``secrdp.example-level-rdp`` (subsampled mini-batches,
:func:`~amplify_jax.secrdp.example_level_epsilon` / :func:`~amplify_jax.secrdp.example_level_rdp`).

Monotone declarations (by the theorem; checked numerically on grids in tests/test_secrdp.py):

* sigma_unc, sigma_cor: Sigma_H = sigma_unc^2 I + sigma_cor^2 L_H grows in the Loewner order with both (L_H is
  positive semi-definite), so Sigma_H^{-1} shrinks and so does every diagonal entry, their maximum over i and
  over the adversary's honest sets, eps1 = 2 C^2 max [Sigma_H^{-1}]_ii, and Thm 1's bound 1/(n su^2) +
  (1 - 1/n)/(su^2 + a sc^2); every eps below is non-decreasing in eps1: DECREASING (sigma_cor: non-strict,
  flat for the local adversary IV).
* clip C: eps1 = 2 C^2 (...): INCREASING.
* steps T: the composed curve is T alpha eps1, the closed form T eps1 + 2 sqrt(T eps1 ln(1/delta)) and the
  conversions grow with it: INCREASING.  delta: ln(1/delta) and the conversions' terms decrease: DECREASING.
* eps1 (closed form): INCREASING.
* example level: the effective noise multiplier b sqrt(2/eps1) (Poisson) or b / sqrt(2 eps1) (without
  replacement) decreases in eps1 and grows with the batch size b; the subsampled Gaussian RDP decreases in
  sigma and grows with the rate q (MTZ 2019; WBK 2019 Thm 9, a sum of positive terms in q^j): batch_size
  DECREASING, q INCREASING, and sigma_unc, sigma_cor, clip, steps, delta as above.
* colluders c: eps1 is non-decreasing in c (the removed sets of size <= c include those of size <= c - 1),
  but declared 0: its valid range ends at n - 2 (graph-dependent, beyond it only local DP is left) and the
  exact accountant enumerates every removed set, so the generic search over an integer range would run
  unaffordable enumerations.

Status: FALLBACK where the guarantee falls back to local DP: the graph is disconnected for the adversary (some
admissible removal disconnects the honest users, ``connected`` False: the value stays valid but some users are
protected by sigma_unc alone), or no amplification could be certified (a bound, not the exact accountant,
reaching the local-DP value; for Thm 1's spectral bound: the lower bound on the algebraic connectivity is 0).

``calibrate_sigma_cor`` is not attached as the solver of ``sigma_cor``: it calibrates on a traced twin of the
accountant (per-step budget eps1, not the registered eps), searches its own bracket (not ``[lo, hi]``) and
answers sigma_cor = 0 where no correlated noise is needed; the generic search on the registered kernel serves
``invert(..., solve_for="sigma_cor")``.  ``closed_form_eps1`` (exact, rounded down) solves ``secrdp.closed-form``
for eps1.

The errata the registry's ``notes`` refer to: our copy of the paper lost nearly every formula, and the ones used
here are rebuilt from the proofs (docs/errata.md gives each with the test that checks it):
the accountant eps1 = 2 C^2 max_{i in H} [Sigma_H^{-1}]_ii, Sigma_H = sigma_unc^2 I + sigma_cor^2 L_H (Thm 6 proof,
Eqs. 14-21; docs/errata.md#e-secrdp-accountant); Thm 1's spectral bound 1/(|H| sigma_unc^2) +
(1 - 1/|H|)/(sigma_unc^2 + a(H) sigma_cor^2) (docs/errata.md#e-secrdp-spectral); the closed form
T eps1 + 2 sqrt(T eps1 ln(1/delta)) over T steps (docs/errata.md#e-secrdp-closed-form).  Unlike the authors'
code, every adversary I-IV is accounted, not only I (docs/errata.md#e-secrdp-adversaries), and the example-level
bound composes the T steps at the requested delta, where their code returns one step's bound
(docs/errata.md#e-secrdp-example-level).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..bounds import Bound, register
from .._core.status import Status
from ._adversaries import DisconnectedGraphWarning
from ._conversion import closed_form_eps1, closed_form_epsilon, epsilon
from ._example_level import effective_noise_multiplier, example_level_epsilon, example_level_rdp
from ._graph import algebraic_connectivity
from ._params import (ADVERSARY, BATCH, CLIP, COLLUDERS, DELTA, EPS1, EXAMPLE_METHOD, EXAMPLE_ORDERS, GRAPH, METHOD,
                      ORDERS, Q, SAMPLING, SIGMA_COR, SIGMA_UNC, STEPS, STEPS_1)
from ._step import spectral_bound, step_account, step_rdp

PAPER = ("Allouah, Koloskova, El Firdoussi, Jaggi, Guerraoui 2024 (The privacy power of correlated noise in "
         "decentralized learning, Decor, ICML)")
ACCOUNTANT = ("Thm 6 proof (Eqs. 14-21, Eq. 19: (alpha, alpha eps1)-SecRDP per step, eps1 = 2 C^2 max_i "
              "[Sigma_H^-1]_ii) and Algorithms 2-3 (adversaries I-IV)")
ERRATA = ("The extraction lost the formulas: the accountant, the spectral bound and the closed form follow "
          "docs/errata.md#e-secrdp-accountant, #e-secrdp-spectral and #e-secrdp-closed-form (re-derived from the "
          "proof of Thm 6 and checked in tests/test_secrdp.py).")
CLOSED = "closed form T eps1 + 2 sqrt(T eps1 ln(1/delta)) (Cor. 12 proof, App. D.1; docs/errata.md#e-secrdp-closed-form)"


_REMOVED = {"eavesdropper": 0, "curious": 1, "local": None}


# ----------------------------------------------------------------------------------------------------------
# Plumbing: one flat, bucketed batch per call (compiled kernels see few shapes), one call per colluders value


def _flat(numeric: dict):
    """Broadcast the numeric parameters, flatten and pad them (by repetition) to a bucket of 8, 16, 32, ...
    points, so that the compiled kernels behind a bound compile once per bucket rather than once per shape."""
    arrays = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in numeric.values()))
    shape = arrays[0].shape
    size = int(np.prod(shape, dtype=np.int64))
    if size == 0:
        raise ValueError(f"Expected non-empty parameter arrays, got shape {shape}.")
    bucket = max(8, 1 << (size - 1).bit_length())
    return {k: np.resize(a.reshape(-1), bucket) for k, a in zip(numeric, arrays)}, shape, size


def _run(compute, adversary, numeric: dict):
    """``compute(flat, colluders)`` on the flat batch, grouped by the value of ``colluders`` (an int, or None
    unless the adversary is "colluding"); results reshaped to the batch's shape (plus any trailing axis)."""
    flat, shape, size = _flat(numeric)
    c = flat.pop("colluders")
    if adversary != "colluding":
        if np.any(c != 0):
            raise ValueError(f"Expected colluders=0 unless adversary='colluding', got colluders="
                             f"{float(c[c != 0][0]):g} with adversary={adversary!r}.")
        out = {k: np.asarray(v) for k, v in compute(flat, None).items()}
    else:
        out = None
        for cv in np.unique(c):
            part = {k: np.asarray(v) for k, v in compute(flat, int(cv)).items()}
            if out is None:
                out = {k: np.array(v) for k, v in part.items()}
            else:
                m = c == cv
                for k in out:
                    out[k][m] = part[k][m]
    return {k: v[:size].reshape(shape + v.shape[1:]) for k, v in out.items()}


def _account(graph, f, adversary, c):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DisconnectedGraphWarning)
        return step_account(graph, sigma_unc=f["sigma_unc"], sigma_cor=f["sigma_cor"], clip=f["clip"],
                            adversary=adversary, colluders=c)


def _status(acc, adversary):
    """FALLBACK where the guarantee falls back to local DP (see the module docstring)."""
    eps1, ldp = np.asarray(acc.eps1), np.asarray(acc.ldp)
    fallback = ~np.asarray(acc.connected, dtype=bool)
    if adversary != "local":
        fallback = fallback | (~np.asarray(acc.exact, dtype=bool) & (eps1 >= ldp))
    return np.where(fallback, Status.FALLBACK, Status.OK).astype(np.int32)


# ----------------------------------------------------------------------------------------------------------
# secrdp.step and secrdp.step-rdp: the exact accountant (or its certified bounds)


def _step(graph, sigma_unc, sigma_cor, clip, steps, delta, adversary, colluders, method):
    def compute(f, c):
        acc = _account(graph, f, adversary, c)
        if method == "closed_form":  # what secrdp.epsilon computes, without a second accountant call
            eps = closed_form_epsilon(acc.eps1, steps=f["steps"], delta=f["delta"])
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DisconnectedGraphWarning)
                eps = epsilon(graph, sigma_unc=f["sigma_unc"], sigma_cor=f["sigma_cor"], clip=f["clip"],
                              steps=f["steps"], delta=f["delta"], adversary=adversary, colluders=c, method=method)
        return {"epsilon": eps, "eps1": acc.eps1, "exact": acc.exact, "connected": acc.connected,
                "status": _status(acc, adversary)}

    return _run(compute, adversary, dict(sigma_unc=sigma_unc, sigma_cor=sigma_cor, clip=clip, steps=steps,
                                             delta=delta, colluders=colluders))


register(Bound(
    id="secrdp.step",
    example=dict(graph="ring:16", sigma_unc=1.0, sigma_cor=2.0, clip=1.0, steps=100, delta=1e-5,
                 adversary="eavesdropper"),
    paper=PAPER, theorem=f"{ACCOUNTANT}; over T steps the {CLOSED} or the core's RDP conversion",
    summary="user-level eps of (eps, delta)-SecLDP after T steps of Decor against one adversary",
    params=(GRAPH, SIGMA_UNC, SIGMA_COR, CLIP, STEPS, DELTA, ADVERSARY, COLLUDERS, METHOD),
    answer="epsilon", kernel=_step, outputs=("eps1", "exact", "connected"),
    notes=ERRATA + " Unlike the authors' code (adversary I only), every adversary I-IV is accounted. eps1 is "
                   "exact (plus a rounding margin) where `exact`, else a certified upper bound."))


def _step_rdp(orders, graph, sigma_unc, sigma_cor, clip, steps, adversary, colluders):
    def compute(f, c):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DisconnectedGraphWarning)
            curve = step_rdp(orders, graph, sigma_unc=f["sigma_unc"], sigma_cor=f["sigma_cor"], clip=f["clip"],
                             adversary=adversary, colluders=c)
        acc = _account(graph, f, adversary, c)
        return {"rdp": f["steps"][:, None] * np.asarray(curve), "status": _status(acc, adversary)}

    return _run(compute, adversary, dict(sigma_unc=sigma_unc, sigma_cor=sigma_cor, clip=clip, steps=steps,
                                             colluders=colluders))


register(Bound(
    id="secrdp.step-rdp",
    example=dict(orders=[2.0, 8.0, 32.0], graph="ring:16", sigma_unc=1.0, sigma_cor=2.0, clip=1.0,
                 adversary="eavesdropper"),
    paper=PAPER, theorem=f"{ACCOUNTANT}; composed over steps (Mironov 2017, Prop. 1)",
    summary="user-level SecRDP curve T alpha eps1 of T steps of Decor against one adversary",
    params=(ORDERS, GRAPH, SIGMA_UNC, SIGMA_COR, CLIP, STEPS_1, ADVERSARY, COLLUDERS),
    answer="rdp", kernel=_step_rdp, notes=ERRATA))


# ----------------------------------------------------------------------------------------------------------
# secrdp.spectral and secrdp.spectral-rdp: Thm 1's bound through the algebraic connectivity


def _spectral_eps1(graph, f, adversary, c):
    eps1 = np.asarray(spectral_bound(graph, sigma_unc=f["sigma_unc"], sigma_cor=f["sigma_cor"], clip=f["clip"],
                                     adversary=adversary, colluders=c))
    removed = c if adversary == "colluding" else _REMOVED[adversary]
    if removed is None:
        status = np.full(eps1.shape, Status.OK, dtype=np.int32)
    else:
        a, _ = algebraic_connectivity(graph, removed=removed)
        status = np.full(eps1.shape, Status.FALLBACK if a <= 0 else Status.OK, dtype=np.int32)
    return eps1, status


def _spectral(graph, sigma_unc, sigma_cor, clip, steps, delta, adversary, colluders):
    def compute(f, c):
        eps1, status = _spectral_eps1(graph, f, adversary, c)
        return {"epsilon": closed_form_epsilon(eps1, steps=f["steps"], delta=f["delta"]), "eps1": eps1,
                "status": status}

    return _run(compute, adversary, dict(sigma_unc=sigma_unc, sigma_cor=sigma_cor, clip=clip, steps=steps,
                                             delta=delta, colluders=colluders))


SPECTRAL = ("Thm 1: [Sigma_H^-1]_ii <= 1/(|H| sigma_unc^2) + (1 - 1/|H|)/(sigma_unc^2 + a(H) sigma_cor^2), a(H) "
            "the algebraic connectivity (or a certified lower bound on its worst value over removals)")

register(Bound(
    id="secrdp.spectral",
    example=dict(graph="ring:16", sigma_unc=1.0, sigma_cor=2.0, clip=1.0, steps=100, delta=1e-5,
                 adversary="eavesdropper"),
    paper=PAPER, theorem=f"{SPECTRAL}; over T steps the {CLOSED}",
    summary="user-level eps after T steps of Decor from the spectral bound of Thm 1 (>= secrdp.step)",
    params=(GRAPH, SIGMA_UNC, SIGMA_COR, CLIP, STEPS, DELTA, ADVERSARY, COLLUDERS),
    answer="epsilon", kernel=_spectral, outputs=("eps1",),
    notes=ERRATA + " The bound's form is the one docs/errata.md#e-secrdp-spectral derives, derived again in "
                   "secrdp.spectral_bound; exact for the complete graph."))


def _spectral_rdp(orders, graph, sigma_unc, sigma_cor, clip, steps, adversary, colluders):
    def compute(f, c):
        eps1, status = _spectral_eps1(graph, f, adversary, c)
        return {"rdp": (f["steps"] * eps1)[:, None] * orders[None, :], "status": status}

    return _run(compute, adversary, dict(sigma_unc=sigma_unc, sigma_cor=sigma_cor, clip=clip, steps=steps,
                                             colluders=colluders))


register(Bound(
    id="secrdp.spectral-rdp",
    example=dict(orders=[2.0, 8.0, 32.0], graph="ring:16", sigma_unc=1.0, sigma_cor=2.0, clip=1.0,
                 adversary="eavesdropper"),
    paper=PAPER, theorem=f"{SPECTRAL}; composed over steps (Mironov 2017, Prop. 1)",
    summary="SecRDP curve T alpha eps1 of T steps of Decor from the spectral bound of Thm 1",
    params=(ORDERS, GRAPH, SIGMA_UNC, SIGMA_COR, CLIP, STEPS_1, ADVERSARY, COLLUDERS),
    answer="rdp", kernel=_spectral_rdp, notes=ERRATA))


# ----------------------------------------------------------------------------------------------------------
# secrdp.closed-form: eps from the per-step coefficient


def _closed_form(eps1, steps, delta):
    return {"epsilon": np.asarray(closed_form_epsilon(eps1, steps=steps, delta=delta))}


def _closed_form_eps1(target, lo, hi, rtol, *, steps, delta):
    """Exact inversion (:func:`closed_form_eps1`, rounded down by 1e-12): the largest eps1 in [lo, hi] whose
    closed form is <= target; INFEASIBLE (value lo) where even lo exceeds it, AT_LIMIT (value hi) where hi
    meets it; re-checked (NOT_MONOTONE if the closed form at the value exceeds the target)."""
    t, lo_, hi_, st, de = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (target, lo, hi, steps,
                                                                                           delta)))
    best = np.asarray(closed_form_eps1(t, steps=st, delta=de))
    value = np.clip(best, lo_, hi_)
    status = np.where(best < lo_, Status.INFEASIBLE, np.where(best >= hi_, Status.AT_LIMIT, Status.OK))
    achieved = np.asarray(closed_form_epsilon(value, steps=st, delta=de))
    status = np.where((status != Status.INFEASIBLE) & (achieved > t), Status.NOT_MONOTONE, status)
    return value, achieved, status.astype(np.int32)


register(Bound(
    id="secrdp.closed-form", example=dict(eps1=0.01, steps=100, delta=1e-5),
    paper=PAPER, theorem=f"{CLOSED}: the exact minimum over alpha > 1 of Mironov's conversion of alpha T eps1",
    summary="eps after T steps that are each (alpha, alpha eps1)-SecRDP: T eps1 + 2 sqrt(T eps1 ln(1/delta))",
    params=(EPS1, STEPS, DELTA), answer="epsilon", kernel=_closed_form, solvers={"eps1": _closed_form_eps1},
    notes=ERRATA))


# ----------------------------------------------------------------------------------------------------------
# secrdp.example-level and secrdp.example-level-rdp: subsampled mini-batches through the core

EXAMPLE = ("Sec. 6.2 and App. D (amplification by subsampling) with the effective noise multiplier of "
           "secrdp.effective_noise_multiplier: Poisson (Mironov, Talwar, Zhang 2019) or without replacement "
           "(Wang, Balle, Kasiviswanathan 2019, Thm 9)")
EXAMPLE_NOTES = (ERRATA + " The authors' example-level code ignores the number of steps and delta (docs/errata.md#e-secrdp-example-level); "
                 "here the T steps are composed.")


def _example_level(graph, sigma_unc, sigma_cor, clip, batch_size, q, steps, delta, adversary, colluders,
                   sampling, method):
    def compute(f, c):
        acc = _account(graph, f, adversary, c)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DisconnectedGraphWarning)
            eps = example_level_epsilon(graph, sigma_unc=f["sigma_unc"], sigma_cor=f["sigma_cor"], clip=f["clip"],
                                        batch_size=f["batch_size"], q=f["q"], steps=f["steps"],
                                        delta=f["delta"], sampling=sampling, adversary=adversary, colluders=c,
                                        method=method)
        sig = effective_noise_multiplier(np.asarray(acc.eps1), clip=f["clip"], batch_size=f["batch_size"],
                                         sampling=sampling)
        return {"epsilon": eps, "eps1": acc.eps1, "noise_multiplier": sig, "status": _status(acc, adversary)}

    return _run(compute, adversary, dict(sigma_unc=sigma_unc, sigma_cor=sigma_cor, clip=clip,
                                             batch_size=batch_size, q=q, steps=steps, delta=delta,
                                             colluders=colluders))


register(Bound(
    id="secrdp.example-level",
    example=dict(graph="ring:16", sigma_unc=1.0, sigma_cor=2.0, clip=1.0, batch_size=32.0, q=0.01, steps=100,
                 delta=1e-5, adversary="eavesdropper"),
    paper=PAPER, theorem=f"{EXAMPLE}; {ACCOUNTANT}; composed over steps, converted by the core (Balle et al. 2020)",
    summary="example-level eps after T steps of Decor with subsampled mini-batches, against one adversary",
    params=(GRAPH, SIGMA_UNC, SIGMA_COR, CLIP, BATCH, Q, STEPS, DELTA, ADVERSARY, COLLUDERS, SAMPLING,
            EXAMPLE_METHOD),
    answer="epsilon", kernel=_example_level, outputs=("eps1", "noise_multiplier"), notes=EXAMPLE_NOTES))


def _example_level_rdp(orders, graph, sigma_unc, sigma_cor, clip, batch_size, q, steps, adversary, colluders,
                       sampling):
    def compute(f, c):
        acc = _account(graph, f, adversary, c)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DisconnectedGraphWarning)
            curve = example_level_rdp(orders, graph, sigma_unc=f["sigma_unc"], sigma_cor=f["sigma_cor"],
                                      clip=f["clip"], batch_size=f["batch_size"], q=f["q"],
                                      steps=f["steps"], sampling=sampling, adversary=adversary, colluders=c)
        return {"rdp": curve, "status": _status(acc, adversary)}

    return _run(compute, adversary, dict(sigma_unc=sigma_unc, sigma_cor=sigma_cor, clip=clip,
                                             batch_size=batch_size, q=q, steps=steps, colluders=colluders))


register(Bound(
    id="secrdp.example-level-rdp",
    example=dict(orders=[2.0, 8.0, 32.0], graph="ring:16", sigma_unc=1.0, sigma_cor=2.0, clip=1.0,
                 batch_size=32.0, q=0.01, adversary="eavesdropper"),
    paper=PAPER, theorem=f"{EXAMPLE}; {ACCOUNTANT}; composed over steps",
    summary="example-level SecRDP curve of T steps of Decor with subsampled mini-batches",
    params=(EXAMPLE_ORDERS, GRAPH, SIGMA_UNC, SIGMA_COR, CLIP, BATCH, Q, STEPS_1, ADVERSARY, COLLUDERS, SAMPLING),
    answer="rdp", kernel=_example_level_rdp, notes=EXAMPLE_NOTES))
