"""The optimizer layer: invert any monotone bound, batched, always on the safe side.

:func:`invert_monotone` finds, for every element of a batch, the extreme parameter x that keeps a bound
``fn(x, *args) <= target``: the minimal x when the bound decreases in x (noise level, number of dummies),
the maximal x when it increases (sampling or check-in rate, number of steps).  It is a bracketed bisection in
log space inside one ``lax.while_loop`` (Style: optimistix's bisection, dp_accounting's
``inverse_monotone_function``), but unlike a root finder it returns the endpoint on the feasible side,
re-checks it, and stops on the width of the bracket in the parameter, not on |f - target|.  One element
that cannot be met does not fail the batch: it gets a status code.

Status codes (array ``status``):

- ``OK`` (0): ``value`` is feasible and within ``rtol`` (relative, or 1 for integers) of the boundary.
- ``INFEASIBLE`` (1): no x in [lo, hi] meets the target; ``value`` is the least bad end of the range and
  ``achieved`` says what it gives.  Never NaN.
- ``AT_LIMIT`` (2): the whole range is feasible; ``value`` is the extreme end of the range (lo for
  ``feasible="above"``, hi for ``"below"``).
- ``NOT_MONOTONE`` (3): the re-check at the returned value failed (the bound was not monotone).
- ``MAX_ITER`` (4): feasible, but the bracket did not reach ``rtol`` within ``max_iter`` steps.

Gradients: :func:`invert_monotone_implicit` (jnp level, for use inside kernels) and
:func:`invert_monotone_differentiable` (compiled, validated when its inputs are concrete) return the same
:class:`Inversion` as the search, with derivatives of ``value`` with respect to ``target`` and the array
``args`` given by the implicit function theorem at the returned point (the search loop itself is not
differentiated): dx*/dtheta = -(d fn/d theta) / (d fn/d x).  Where the status is not OK, or the slope
d fn/d x is zero or not finite, the tangent of ``value`` is 0 (never NaN), except that the tangent of
``lo``/``hi`` passes through where ``value`` *is* that end of the range (AT_LIMIT, INFEASIBLE).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
import jax
import jax.numpy as jnp

from .._core import validate as V
from .._core.domains import check_params
from .._core.numerics import float64_jit, x64_scope
from . import _params as P
from .._core.status import Status

# importable, not in __all__: the result type Inversion (named by the functions' docstrings), the kernels
# invert_monotone_kernel / invert_monotone_implicit (public from amplify_jax.internal), the status codes (the same
# as amplify_jax.Status: OK, INFEASIBLE, AT_LIMIT, NOT_MONOTONE, STATUS_NAMES) and the tunables (MAX_ITER, HOST_BLOCKS)
__all__ = ["invert_monotone", "invert_monotone_differentiable", "invert_monotone_host"]

OK, INFEASIBLE, AT_LIMIT, NOT_MONOTONE, MAX_ITER = (int(Status.OK), int(Status.INFEASIBLE), int(Status.AT_LIMIT),
                                                   int(Status.NOT_MONOTONE), int(Status.MAX_ITER))
STATUS_NAMES = {int(s): str(s) for s in Status}


class Inversion(NamedTuple):
    """The answer of :func:`invert_monotone` (and its host and differentiable variants), per element: the
    feasible endpoint, its status code, and the function recomputed there."""

    value: jax.Array  #: the feasible endpoint (see status)
    status: jax.Array  #: int32 status code per element
    achieved: jax.Array  #: fn(value, *args), re-computed


def invert_monotone_kernel(fn, target, args, lo, hi, *, above: bool, rtol, integer: bool, max_iter: int = 200,
                           illinois: bool = False, near_first: bool = False, guess=None):
    """Pure jnp body of :func:`invert_monotone` (for use inside other kernels; all arrays broadcast).

    ``above=True``: feasible set [x*, hi], returns x*; ``above=False``: feasible set [lo, x*], returns x*.
    Bisection on log x (integers: on x, rounded toward the infeasible side and stopped at width 1).  With
    ``illinois=True`` (continuous x only) the new point is the Illinois regula-falsi point on
    (log x, f - target), safeguarded to stay in the inner 90% of the bracket, alternating with bisection
    steps when the bracket does not shrink by half: superlinear on smooth bounds, never slower than
    bisection by more than a factor 2.  The interpolation is on log f when f > 0.
    ``fn`` is traced once: the loop's first two iterations evaluate the two ends of the range, the next ones
    the midpoints, which keeps compilation cheap when ``fn`` is a large kernel.  ``achieved`` is the value of
    ``fn`` computed at the returned point.

    ``near_first=True``: the near end (the candidate answer) is evaluated first, and the points where it is
    feasible stop there (their answer, at one evaluation of ``fn``; the far end, more private, is then feasible
    by monotonicity); the others go on as above.  For a re-check whose failures are searched in the same loop,
    so that ``fn`` is traced once for both.

    ``guess`` (continuous x, an array broadcasting with target): the first point evaluated inside the bracket,
    where it lies strictly inside (a step that splits the bracket there instead of at its midpoint; a good
    guess near the answer narrows it at once, and costs no extra trace of ``fn``).
    """
    target, lo, hi = jnp.broadcast_arrays(jnp.asarray(target, jnp.float64), jnp.asarray(lo, jnp.float64),
                                          jnp.asarray(hi, jnp.float64))
    args = tuple(jnp.broadcast_to(jnp.asarray(a), target.shape) for a in args)
    far, near = (hi, lo) if above else (lo, hi)  # far end: most private; near end: the candidate answer side

    def cond(s):
        return (s[0] < max_iter + 2) & jnp.any(s[5])

    guess = None if guess is None else jnp.broadcast_to(jnp.asarray(guess, jnp.float64), target.shape)

    def body(s):
        x = _propose(s, target, far, near, integer=integer, illinois=illinois, near_first=near_first, guess=guess)
        return _absorb(s, x, fn(x, *args), target, far, near, rtol=rtol, integer=integer, near_first=near_first)

    final = jax.lax.while_loop(cond, body, _search_init(target, far, near))
    return _search_result(final, target, far, near, near_first=near_first)


# The search, cut at the call of ``fn`` so that one algorithm serves both drivers: the compiled loop above
# (``fn`` traced inside it) and :func:`invert_monotone_host` (``fn`` any host function of arrays, called
# between two small compiled steps).  State: (iteration, feasible end, infeasible end, fn there, fn at the two
# ends of the range, active mask, fn at the infeasible end, Illinois bookkeeping, bracket width at the last
# checkpoint).


def _feasible(v, target):
    return (v <= target) & ~jnp.isnan(v)


def _width_ok(f, i, rtol, integer):
    if integer:
        return jnp.abs(f - i) <= 1.0
    return jnp.abs(jnp.log(f) - jnp.log(i)) <= jnp.log1p(rtol)


def _search_init(target, far, near):
    return (0, far, near, jnp.full_like(target, jnp.inf),
            jnp.stack([target, target]) * jnp.nan, jnp.ones(target.shape, dtype=bool),
            jnp.full_like(target, jnp.inf), jnp.zeros(target.shape, jnp.int32), jnp.full_like(target, jnp.inf))


def _propose(s, target, far, near, *, integer, illinois, near_first=False, guess=None):
    """The next point to evaluate: the two ends of the range first (far then near, or near then far), then the
    bracket's (safeguarded) midpoint; ``guess`` instead of the first midpoint where it lies inside the bracket."""
    it, feas, infeas, f_feas, f_ends, active, f_inf, side, width0 = s
    mid = jnp.sqrt(feas * infeas)
    if illinois:
        lf, li = jnp.log(feas), jnp.log(infeas)
        # interpolate log f against log x when f and the target are positive (bounds are close to power
        # laws in their parameters), f itself otherwise; gf <= 0 < gi either way
        pos = (f_feas > 0) & (target > 0)
        gf = jnp.where(pos, jnp.log(jnp.where(pos, f_feas / target, 1.0)), f_feas - target)
        gi = jnp.where(pos, jnp.log(jnp.where(pos, f_inf / target, 1.0)), f_inf - target)
        # Illinois: halve the function value kept on the side that was retained twice in a row
        last, prev = side % 4, (side // 4) % 4  # 1: the feasible end moved; 2: the infeasible end moved
        gf = jnp.where((last == 2) & (prev == 2), gf * 0.5, gf)  # retained twice in a row: halve (Illinois)
        gi = jnp.where((last == 1) & (prev == 1), gi * 0.5, gi)
        t = gf / (gf - gi)
        t = jnp.clip(jnp.where(jnp.isfinite(t), t, 0.5), 0.05, 0.95)
        rf = jnp.exp(lf + t * (li - lf))
        # force a bisection when two steps in a row did not halve the bracket (width0: the width at the
        # last checkpoint; ``side`` counts the steps since, in its upper bits)
        slow = ((side // 16) >= 2) & (jnp.abs(li - lf) > 0.5 * width0)
        mid = jnp.where(slow | ~jnp.isfinite(f_inf) | ~jnp.isfinite(f_feas), mid, rf)
    if integer:
        # Round toward the infeasible end so the bracket strictly shrinks.
        mid = jnp.where(feas > infeas, jnp.floor(mid), jnp.ceil(mid))
        mid = jnp.where(mid == feas, jnp.where(feas > infeas, feas - 1.0, feas + 1.0), mid)
        mid = jnp.where(mid == infeas, jnp.where(feas > infeas, infeas + 1.0, infeas - 1.0), mid)
    if guess is not None:
        inside = (guess - feas) * (guess - infeas) < 0.0
        mid = jnp.where((it == 2) & inside, guess, mid)
    first, second = (near, far) if near_first else (far, near)
    return jnp.where(it == 0, first, jnp.where(it == 1, second, mid))


def _absorb(s, x, f_x, target, far, near, *, rtol, integer, near_first=False):
    """The state after evaluating ``fn`` at the proposed ``x`` (``f_x``)."""
    it, feas, infeas, f_feas, f_ends, active, f_inf, side, width0 = s
    ok = _feasible(f_x, target)
    i_far, i_near = (1, 0) if near_first else (0, 1)  # the iterations that evaluate the two ends
    f_ends = jnp.stack([jnp.where(it == i_far, f_x, f_ends[0]), jnp.where(it == i_near, f_x, f_ends[1])])
    # after evaluating both ends: start the bisection only where far is feasible and near is not
    start = active & ~(_feasible(f_ends[0], target) & ~_feasible(f_ends[1], target) & ~_width_ok(far, near, rtol,
                                                                                                     integer))
    bis = (it >= 2) & active
    take = bis & ok
    nfeas = jnp.where(take, x, feas)
    nf = jnp.where(take, f_x, jnp.where(it == i_far, f_x, f_feas))
    ninf = jnp.where(bis & ~ok, x, infeas)
    nf_inf = jnp.where(bis & ~ok, f_x, jnp.where(it == i_near, f_x, f_inf))
    # side = 16 * (steps since the last checkpoint) + 4 * (previous move) + (last move), where a move is
    # 1 if the feasible end moved and 2 if the infeasible end moved
    width = jnp.abs(jnp.log(nfeas) - jnp.log(ninf))
    checkpoint = width <= 0.5 * width0
    moved = jnp.where(ok, 1, 2)
    count = jnp.where(checkpoint, 0, side // 16 + 1)
    nside = jnp.where(bis, 16 * count + 4 * (side % 4) + moved, side)
    nwidth0 = jnp.where(bis & checkpoint, width, width0)
    nwidth0 = jnp.where(it == 1, jnp.abs(jnp.log(far) - jnp.log(near)), nwidth0)
    # near first: a point whose near end is feasible has its answer after the first evaluation
    first = (active & ~ok) if near_first else active
    nactive = jnp.where(it < 1, first, jnp.where(it == 1, active & ~start,
                                                  active & ~_width_ok(nfeas, ninf, rtol, integer)))
    return it + 1, nfeas, ninf, nf, f_ends, nactive, nf_inf, nside, nwidth0


def _search_result(s, target, far, near, near_first=False):
    _, feas, infeas, f_feas, f_ends, still, _, _, _ = s
    near_ok = _feasible(f_ends[1], target)
    # near first: a feasible near end stopped the point before the far end was evaluated (feasible too, by
    # monotonicity)
    far_ok = _feasible(f_ends[0], target) | (near_ok if near_first else False)
    value = jnp.where(near_ok, near, feas)
    achieved = jnp.where(near_ok, f_ends[1], f_feas)
    status = jnp.where(
        ~far_ok,
        INFEASIBLE,
        jnp.where(near_ok, AT_LIMIT, jnp.where(_feasible(achieved, target), jnp.where(still, MAX_ITER, OK),
                                               NOT_MONOTONE)),
    ).astype(jnp.int32)
    value = jnp.where(far_ok, value, far)
    achieved = jnp.where(far_ok, achieved, f_ends[0])
    return Inversion(value, status, achieved)


def _check_options(feasible, method):
    """The static options every inversion takes (checked even when its inputs are traced)."""
    P.FEASIBLE.domain.check("feasible", feasible)
    P.SEARCH_METHOD.domain.check("method", method)


def _check_inputs(target, args, lo, hi, rtol, integer, max_iter=200):
    """Boundary checks of the inversions: (target, lo, hi, rtol, broadcast shape) as numpy arrays."""
    V.scalar("max_iter", max_iter, P.MAX_ITER.domain.check)  # one integer in 1..1e6
    t, lo_, hi_ = check_params((P.TARGET, P.LO, P.HI), broadcast=False, target=target, lo=lo, hi=hi)
    if np.any(np.asarray(lo_) >= np.asarray(hi_)):
        raise ValueError(f"Expected lo < hi, got lo={np.min(lo_)!r}, hi={np.max(hi_)!r}.")
    r, = check_params((P.RTOL,), broadcast=False, rtol=rtol)
    if integer:
        lo_, hi_ = check_params((P.INTEGER_LO, P.INTEGER_HI), broadcast=False, lo=lo_, hi=hi_)
    shape = V.broadcastable(target=t, lo=lo_, hi=hi_, rtol=r,
                            **{f"args[{i}]": np.asarray(a) for i, a in enumerate(args)})
    return t, lo_, hi_, r, shape


@float64_jit(static_argnames=("fn", "above", "integer", "max_iter", "illinois"))
def _invert_jit(fn, target, args, lo, hi, rtol, above, integer, max_iter, illinois):
    return invert_monotone_kernel(fn, target, args, lo, hi, above=above, rtol=rtol, integer=integer,
                                  max_iter=max_iter, illinois=illinois)


def invert_monotone(
    fn: Callable,
    target,
    *,
    args=(),
    lo,
    hi,
    feasible: str = "above",
    rtol=1e-6,
    integer: bool = False,
    max_iter: int = 200,
    method: str = "bisection",
) -> Inversion:
    """The extreme parameter x in [lo, hi] with ``fn(x, *args) <= target``, for every element of a batch.

    ``fn`` is a pure jnp function, monotone in x (decreasing for ``feasible="above"``, increasing for
    ``"below"``), hashable and reused across calls so that compiled code is reused (a module-level function
    or a ``functools.partial`` of one; new targets and args are arrays and do not recompile).  ``target``,
    ``args``, ``lo`` and ``hi`` broadcast.  ``lo`` must be > 0 (the search is in log space).

    Returns :class:`Inversion` ``(value, status, achieved)``; see the module docstring for the status codes.
    The returned value always satisfies ``achieved <= target`` when status is OK or AT_LIMIT.
    ``method="illinois"`` (continuous parameters) uses safeguarded regula-falsi steps: fewer evaluations
    of a smooth bound, the same guarantees.
    """
    _check_options(feasible, method)
    t, lo_, hi_, r, shape = _check_inputs(target, args, lo, hi, rtol, integer, max_iter)
    with x64_scope():
        b = lambda x: jnp.broadcast_to(jnp.asarray(x, dtype=jnp.float64), shape)  # noqa: E731
        return _invert_jit(fn, b(t), tuple(b(a) for a in args), b(lo_), b(hi_), jnp.asarray(r, jnp.float64),
                           feasible == "above", bool(integer), int(max_iter),
                           method == "illinois" and not integer)


#: Flat sizes the host driver's compiled steps run at: a batch is padded (copies of its first element) to the
#: smallest that holds it, and a batch larger than the last runs as blocks of that size, so the steps compile
#: at most one program per size per option set whatever the batch shapes (issue 25; elementwise updates of 256
#: lanes cost microseconds, so small batches lose nothing by the padding).
HOST_BLOCKS = (256, 4096)


@float64_jit(static_argnames=("integer", "illinois"))
def _host_start(target, far, near, max_iter, integer, illinois):
    """The search's initial state and its first point (one compiled call per block)."""
    s = _search_init(target, far, near)
    go = (s[0] < max_iter + 2) & jnp.any(s[5])
    return s, _propose(s, target, far, near, integer=integer, illinois=illinois), go


@float64_jit(static_argnames=("integer", "illinois"))
def _host_step(s, x, f_x, target, far, near, rtol, max_iter, integer, illinois):
    """One step of the search driven from the host: absorb ``fn`` at ``x``, propose the next point, and whether
    any element is still searching (the loop condition of :func:`invert_monotone_kernel`)."""
    s = _absorb(s, x, f_x, target, far, near, rtol=rtol, integer=integer)
    go = (s[0] < max_iter + 2) & jnp.any(s[5])
    return s, _propose(s, target, far, near, integer=integer, illinois=illinois), go


@float64_jit
def _host_result(s, target, far, near):
    return _search_result(s, target, far, near)


def _host_layout(size: int):
    """(padded size, block size) of the host driver for a batch of ``size`` elements."""
    block = next((b for b in HOST_BLOCKS if size <= b), HOST_BLOCKS[-1])
    return -(-size // block) * block, block


def invert_monotone_host(
    fn: Callable,
    target,
    *,
    lo,
    hi,
    feasible: str = "above",
    rtol=1e-6,
    integer: bool = False,
    max_iter: int = 200,
    method: str = "bisection",
) -> Inversion:
    """:func:`invert_monotone` for a bound that is a host function of arrays (not traceable by JAX).

    ``fn(x)`` takes a float64 NumPy array of the batch's shape and returns the bound there (same shape); it
    may call compiled kernels, group points on the host, run its own searches.  The search is the one of
    :func:`invert_monotone_kernel` (same steps, same feasible endpoint, same status codes), driven from the
    host: each step is one small compiled update per block and one call of ``fn`` on the whole batch, so a
    kernel behind ``fn`` compiles once for the batch's shape.  The updates run on the flattened batch padded
    to one of :data:`HOST_BLOCKS` elements (larger batches: blocks of the largest), so they compile a fixed
    set of programs whatever the batch's shape (issue 25); inputs reach them by ``jax.device_put``.  Elements
    whose bracket has converged are evaluated again at their current point (the batch keeps its shape);
    ``fn`` must act elementwise.  ``target``, ``lo`` and ``hi`` broadcast; ``value`` is re-checked
    (``achieved`` is ``fn`` at it).
    """
    _check_options(feasible, method)
    t, lo_, hi_, r, shape = _check_inputs(target, (), lo, hi, rtol, integer, max_iter)
    illinois = method == "illinois" and not integer
    n = int(np.prod(shape, dtype=np.int64))
    size, block = _host_layout(n)

    def flat(a):  # flattened, padded with copies of the first element: padded lanes repeat lane 0's search
        f = np.broadcast_to(np.asarray(a, dtype=np.float64), shape).reshape(-1)
        return np.concatenate([f, np.full(size - n, f[0])]) if size > n else np.ascontiguousarray(f)

    t_, lo_f, hi_f, r_ = flat(t), flat(lo_), flat(hi_), flat(r)
    far_, near_ = (hi_f, lo_f) if feasible == "above" else (lo_f, hi_f)
    blocks = [slice(k, k + block) for k in range(0, size, block)]
    with x64_scope():
        put = lambda a: jax.device_put(np.asarray(a))  # noqa: E731  (no program per shape)
        mi = put(np.asarray(max_iter, np.int32))
        args = [(put(t_[b]), put(far_[b]), put(near_[b]), put(r_[b])) for b in blocks]
        states, xs, gos = [], [], []
        for tb, fb, nb, _ in args:
            s, x, go = _host_start(tb, fb, nb, mi, bool(integer), illinois)
            states.append(s)
            xs.append(x)
            gos.append(go)
        while any(bool(g) for g in gos):
            x = np.concatenate([np.asarray(v) for v in xs]) if len(xs) > 1 else np.asarray(xs[0])
            f_x = np.asarray(fn(x[:n].reshape(shape)), dtype=np.float64)
            if f_x.shape != shape:
                raise ValueError(f"Expected fn to return an array of shape {shape}, got shape {f_x.shape}.")
            f_x = flat(f_x)
            for i, (b, (tb, fb, nb, rb)) in enumerate(zip(blocks, args)):
                states[i], xs[i], gos[i] = _host_step(states[i], xs[i], put(f_x[b]), tb, fb, nb, rb, mi,
                                                      bool(integer), illinois)
        parts = [_host_result(s, tb, fb, nb) for s, (tb, fb, nb, _) in zip(states, args)]
        out = [np.concatenate([np.asarray(p[k]) for p in parts])[:n].reshape(shape) for k in range(3)]
        return Inversion(*(jax.device_put(o) for o in out))


# ----------------------------------------------------------------------------------------------------------
# Differentiable inversion (implicit function theorem)


def _implicit_primal(fn, above, integer, max_iter, illinois, target, args, lo, hi, rtol):
    inv = invert_monotone_kernel(fn, target, args, lo, hi, above=above, rtol=rtol, integer=integer,
                                 max_iter=max_iter, illinois=illinois)
    # status travels as float64 inside the custom rule (its tangent is 0); cast back outside
    return inv.value, inv.status.astype(jnp.float64), inv.achieved


_implicit_solve = jax.custom_jvp(_implicit_primal, nondiff_argnums=(0, 1, 2, 3, 4))


@_implicit_solve.defjvp
def _implicit_solve_jvp(fn, above, integer, max_iter, illinois, primals, tangents):
    target, args, lo, hi, rtol = primals
    d_target, d_args, d_lo, d_hi, _ = tangents  # no derivative in rtol
    value, status, achieved = _implicit_solve(fn, above, integer, max_iter, illinois, target, args, lo, hi, rtol)
    # partial derivatives of fn at the returned point, on primal values only (so that every branch below is
    # linear in the tangents): fn acts elementwise on the batch, so a jvp with a tangent of ones gives the
    # diagonal.  Integer args have no derivative.
    ones = jnp.ones_like(value)
    _, slope = jax.jvp(lambda x: fn(x, *args), (value,), (ones,))
    slope = jnp.broadcast_to(slope, value.shape)
    partials = []
    for k, a in enumerate(args):
        if not jnp.issubdtype(a.dtype, jnp.inexact):
            continue

        def fn_k(ak, k=k):
            return fn(value, *args[:k], ak, *args[k + 1:])

        _, pk = jax.jvp(fn_k, (a,), (jnp.ones_like(a),))
        partials.append((k, jnp.broadcast_to(pk, value.shape)))
    finite = jnp.isfinite(slope) & (slope != 0.0)
    for _, pk in partials:
        finite = finite & jnp.isfinite(pk)
    good = (status == OK) & finite
    if integer:
        good = jnp.zeros_like(good)  # piecewise constant in target and args
    d_fn_args = jnp.zeros_like(value)
    for k, pk in partials:
        d_fn_args = d_fn_args + jnp.where(finite, pk, 0.0) * d_args[k]
    inv_slope = jnp.where(good, 1.0 / jnp.where(good, slope, 1.0), 0.0)
    d_value = (d_target - d_fn_args) * inv_slope
    # where the value is an end of the range, it moves with that end (and only with it)
    d_far, d_near = (d_hi, d_lo) if above else (d_lo, d_hi)
    d_value = jnp.where(status == AT_LIMIT, d_near, jnp.where(status == INFEASIBLE, d_far, d_value))
    # achieved = fn(value, *args): chain rule where the partial derivatives are finite, else 0
    d_achieved = jnp.where(finite, slope, 0.0) * d_value + d_fn_args
    return (value, status, achieved), (d_value, jnp.zeros_like(status), d_achieved)


def invert_monotone_implicit(fn, target, args, lo, hi, *, above: bool, rtol, integer: bool = False,
                             max_iter: int = 200, illinois: bool = False) -> Inversion:
    """:func:`invert_monotone_kernel` with derivatives by the implicit function theorem (pure jnp, traceable).

    The primal result is exactly that of :func:`invert_monotone_kernel` (same search, same status codes,
    same feasible endpoint).  Under ``jax.jvp`` / ``jax.grad`` the search loop is not differentiated:
    at the returned x* the bound is (to ``rtol``) at the target, fn(x*, theta) = target, so

        dx*/d target = 1 / (d fn/d x),     dx*/d theta = -(d fn/d theta) / (d fn/d x)

    (implicit function theorem), with the partial derivatives taken by ``jax.jvp`` of ``fn`` at x*.  The
    derivative is that of the exact boundary point evaluated at the returned x*, which lies within ``rtol``
    of it.  ``fn`` must act elementwise on the batch (element i of the result depends on element i of x and
    of the args only), be differentiable in the mode used (``jax.grad`` needs ``fn`` reverse-differentiable:
    no ``while_loop`` inside), and be locally C^1 near x*.

    Tangents are 0, never NaN: where the status is not OK; where d fn/d x is 0 or not finite (a flat or
    non-smooth bound); for integer parameters (piecewise constant).  The exception is the range: where
    ``value`` is an end of it (AT_LIMIT: the near end, INFEASIBLE: the far end) its tangent is that end's.
    ``achieved`` gets the chain-rule tangent of fn(x*, theta); ``status`` has none.
    """
    target, lo, hi = jnp.broadcast_arrays(jnp.asarray(target, jnp.float64), jnp.asarray(lo, jnp.float64),
                                          jnp.asarray(hi, jnp.float64))
    args = tuple(jnp.broadcast_to(jnp.asarray(a), target.shape) for a in args)
    value, status, achieved = _implicit_solve(fn, bool(above), bool(integer), int(max_iter), bool(illinois),
                                              target, args, lo, hi, jnp.asarray(rtol, jnp.float64))
    return Inversion(value, status.astype(jnp.int32), achieved)


@float64_jit(static_argnames=("fn", "above", "integer", "max_iter", "illinois"))
def _invert_implicit_jit(fn, target, args, lo, hi, rtol, above, integer, max_iter, illinois):
    return invert_monotone_implicit(fn, target, args, lo, hi, above=above, rtol=rtol, integer=integer,
                                    max_iter=max_iter, illinois=illinois)


def _is_concrete(*xs):
    return not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(xs))


def invert_monotone_differentiable(
    fn: Callable,
    target,
    *,
    args=(),
    lo,
    hi,
    feasible: str = "above",
    rtol=1e-6,
    integer: bool = False,
    max_iter: int = 200,
    method: str = "bisection",
) -> Inversion:
    """:func:`invert_monotone`, differentiable in ``target``, ``args``, ``lo`` and ``hi`` (implicit function theorem).

    Same arguments, result and guarantees as :func:`invert_monotone`; the derivatives are those of
    :func:`invert_monotone_implicit` (0 where the status is not OK or the bound is flat there).  Inputs are
    validated when they are concrete; under a JAX transformation (``jax.grad``, ``jax.jacfwd``, ``jax.vmap``)
    they are traced and only the static options are checked.  Run the transformation under
    :func:`amplify_jax.internal.x64_scope` so that the tangents are float64 too, e.g.::

        with x64_scope():
            dsigma_deps = jax.grad(lambda t: invert_monotone_differentiable(fn, t, args=(d,), lo=0.1,
                                                                            hi=100.0).value)(1.0)
    """
    _check_options(feasible, method)
    if _is_concrete(target, args, lo, hi, rtol):
        target, lo, hi, rtol, _ = _check_inputs(target, args, lo, hi, rtol, integer, max_iter)
    with x64_scope():
        shape = jnp.broadcast_shapes(jnp.shape(target), jnp.shape(lo), jnp.shape(hi), *(jnp.shape(a) for a in args))
        b = lambda x: jnp.broadcast_to(jnp.asarray(x, dtype=jnp.float64), shape)  # noqa: E731
        return _invert_implicit_jit(fn, b(target), tuple(b(a) for a in args), b(lo), b(hi),
                                    jnp.asarray(rtol, jnp.float64), feasible == "above", bool(integer),
                                    int(max_iter), method == "illinois" and not integer)
