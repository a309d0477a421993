"""Float64 scoping and the log-space toolbox shared by every family of bounds.

Every kernel of amplify_jax runs in float64 whatever the user's global JAX setting: :func:`float64_jit`
compiles a function and calls it under ``jax.enable_x64(True)``, scoped to that call, so the library never
flips the global flag at import time.  Results come back as float64 ``jax.Array`` values.

The log-space helpers follow the practice of the reference accountants (log-add, signed log-subtract,
log-binomials through ``gammaln``, ``log(1 - e^x)`` through ``expm1``/``log1p``) but are pure ``jnp``
functions that broadcast and can be traced inside any kernel; :func:`log_comb_table` is the one trace-time
table of exact log-binomial coefficients (static integer orders).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
from typing import Callable

import numpy as np
import jax
import jax.numpy as jnp
from jax.scipy import special as jsp

from . import host as _host
from .cache import persisted

# private module (amplify_jax._core); float64_jit and x64_scope are public from amplify_jax.internal
__all__ = [
    "run_in_slabs",
    "SLAB",
    "SLAB_BY_PLATFORM",
    "ACCELERATOR_SLAB",
    "slab_size",
    "log_comb",
    "bennett_phi",
    "BENNETT_PHI_REL_ERROR",
    "log_comb_table",
    "log_add",
    "log_sub",
    "log_sub_signed",
    "logsumexp",
    "log1mexp",
    "log1p",
    "log_binom_pmf",
    "log_erfc",
    "log_ndtr",
    "log_expm1",
    "stirlerr",
    "bd0",
    "LN2",
    "CLOSED_FORM_MARGIN",
]

LN2 = 0.6931471805599453
#: Factor (1 + 8 ulps) that rounds a closed form's float64 value up (soundness standard 1, "round toward the safe
#: side"): a handful of correctly rounded operations on non-negative terms lands within ~5 ulps of the formula's
#: exact value at the same inputs; the families' closed forms and ``accounting.approx_dp``'s blocks multiply by it
#: (tests/test_*_rounding.py compare each with mpmath).
CLOSED_FORM_MARGIN = 1.0 + 8.0 * 2.0 ** -52


@contextlib.contextmanager
def x64_scope():
    """Context manager that enables float64 in JAX for its body only (``jax.enable_x64(True)``)."""
    with jax.enable_x64(True):
        yield


def float64_jit(fun: Callable | None = None, *, static_argnames=(), persist: bool = False):
    """``jax.jit`` a kernel and run every call of it under :func:`x64_scope`.

    The compiled function is cached per x64 state by JAX, so calls from code running with the global
    ``jax_enable_x64`` flag off still trace and run in float64.  Only shape-fixing arguments should be
    listed in ``static_argnames``.  ``persist=True`` (a front door's kernel, called on concrete arrays): the
    program is exported once per machine and reused by later processes without tracing it
    (:func:`amplify_jax._core.cache.persisted`; the same program, the same values).
    """
    if fun is None:
        return functools.partial(float64_jit, static_argnames=static_argnames, persist=persist)
    persist = persist and not __name__.startswith(_host._TWIN)  # the host twin's jit is the function itself
    jitted = jax.jit(fun, static_argnames=static_argnames)
    signature = inspect.signature(fun)

    def run_persisted(args, kwargs):
        bound = signature.bind(*args, **kwargs)
        static = {k: v for k, v in bound.arguments.items() if k in static_argnames}
        dynamic = tuple(v for k, v in bound.arguments.items() if k not in static_argnames)
        if any(isinstance(a, jax.core.Tracer) or len(getattr(getattr(a, "sharding", None), "device_set", ())) > 1
               for a in dynamic):  # traced, or laid out over several devices: the plain jit
            return None
        return persisted(f"{fun.__module__}.{fun.__qualname__}", jitted, static, dynamic)

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        with jax.enable_x64(True):
            if persist:
                out = run_persisted(args, kwargs)
                if out is not None:
                    return out
            return jitted(*args, **kwargs)

    wrapper.jitted = jitted  # the raw jitted function, for use inside other float64 kernels
    return wrapper


#: Points of one slab on each platform: every batch runs as slabs of this one size (times the number of devices),
#: so one compiled program serves every batch size (two sizes, 8 and 256, compiled two programs; powers of two,
#: one program per power: 4-10 s each for the DP-SGD kernels on a 2-core CPU).  An accelerator takes larger
#: slabs: fewer launches for a large grid, and a single question is as fast there as a slab of one.
SLAB_BY_PLATFORM = {"cpu": 256}
#: The slab of platforms not in SLAB_BY_PLATFORM (GPU, TPU).
ACCELERATOR_SLAB = 4096
SLAB = SLAB_BY_PLATFORM["cpu"]


def slab_size(devices=None) -> int:
    """Points per slab (per device) on ``devices`` (default: JAX's default backend)."""
    platform = devices[0].platform if devices else jax.default_backend()
    return SLAB_BY_PLATFORM.get(platform, ACCELERATOR_SLAB)


def run_in_slabs(kernel: Callable, shape: tuple, *arrays, devices=None, slab: int | None = None):
    """Run a per-point ``kernel`` over a batch in slabs of one fixed size; returns its outputs in ``shape``.

    The ``arrays`` are broadcast to ``shape``, flattened and padded with edge values to whole slabs (a valid
    point repeated, so padding never evaluates a kernel outside its domain); ``kernel`` takes one slab of each
    and returns a tuple of arrays whose leading axis is the slab.  Every slab has ``slab`` points (default
    :func:`slab_size` of the platform) times the number of ``devices``, so a kernel compiles once whatever the
    batch; slabs are dispatched before any result is read (asynchronous), so the device never waits on the host
    between slabs.  Inputs reach the device with ``jax.device_put`` and outputs are gathered on the host, so no
    program is compiled for a batch's shape.  ``devices``: each slab is laid out over a 1-D mesh of them (by
    default every local accelerator where JAX has several, else JAX's default device; a CPU's host "devices"
    share its cores, so a CPU batch is not split).  Returns float64 / int ``jax.Array`` values of ``shape``
    (plus any trailing axes of the kernel's outputs).
    """
    n = int(np.prod(shape, dtype=np.int64))
    if _host.inside() or __name__.startswith(_host._TWIN):  # the host twin: NumPy takes the batch as it is
        flat = [np.broadcast_to(np.asarray(a, dtype=np.float64), shape).ravel() for a in arrays]
        return tuple(np.asarray(o).reshape(shape + np.shape(o)[1:]) for o in kernel(*flat))
    if devices is None and jax.default_backend() != "cpu" and jax.local_device_count() > 1:
        devices = tuple(jax.local_devices())  # several accelerators: every slab spans them all
    width = 1 if devices is None else len(devices)
    size = (slab_size(devices) if slab is None else int(slab)) * width
    put = jax.device_put
    if devices is not None:
        mesh = jax.sharding.Mesh(np.asarray(devices, dtype=object), ("points",))
        sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("points"))
        put = functools.partial(jax.device_put, device=sharding)
    n_slabs = max(1, -(-n // size))
    flat = []
    for a in arrays:
        f = np.broadcast_to(np.asarray(a, dtype=np.float64), shape).ravel()
        flat.append(np.pad(f, (0, n_slabs * size - n), mode="edge") if n else np.zeros(n_slabs * size))
    with x64_scope():
        outs = [kernel(*(put(f[k * size:(k + 1) * size]) for f in flat)) for k in range(n_slabs)]
        parts = [np.concatenate([np.asarray(o[i]) for o in outs]) for i in range(len(outs[0]))]
        return tuple(jax.device_put(p[:n].reshape(shape + p.shape[1:])) for p in parts)


_HALF_LOG_2PI = 0.9189385332046728


def stirlerr(n):
    """log(n!) - log(sqrt(2 pi n) (n/e)^n), the Stirling remainder (Loader 2000), accurate for n >= 0."""
    n = jnp.asarray(n)
    big = n > 15.0
    nb = jnp.where(big, n, 16.0)
    inv = 1.0 / nb
    inv2 = inv * inv
    series = inv * (1.0 / 12 - inv2 * (1.0 / 360 - inv2 * (1.0 / 1260 - inv2 * (1.0 / 1680 - inv2 / 1188))))
    ns = jnp.where(big, 1.0, jnp.maximum(n, 1e-300))
    direct = jsp.gammaln(ns + 1.0) - (ns + 0.5) * jnp.log(ns) + ns - _HALF_LOG_2PI
    return jnp.where(big, series, jnp.where(n == 0, 0.0, direct))


def bd0(x, m):
    """x log(x/m) + m - x >= 0 without cancellation when x ~ m (Loader 2000)."""
    x = jnp.asarray(x)
    m = jnp.asarray(m)
    close = jnp.abs(x - m) < 0.1 * (x + m)
    ms = jnp.where(m > 0, m, 1.0)
    xs = jnp.where(x > 0, x, 1.0)
    direct = jnp.where(x > 0, x * jnp.log(xs / ms), 0.0) + m - x
    v = jnp.where(close, (x - m) / jnp.where(close, x + m, 1.0), 0.0)
    v2 = v * v
    # 2x sum_{j>=1} v^(2j+1)/(2j+1) + (x-m) v, truncated where v^2 < 0.01 makes the tail < 1e-30 relative
    ej = 2.0 * x * v
    acc = (x - m) * v
    total = acc
    for j in range(1, 16):
        ej = ej * v2
        total = total + ej / (2 * j + 1)
    return jnp.where(close, total, direct)


#: A bound on the relative error of :func:`bennett_phi` in float64 (its terms are all positive below u = 1,
#: and above it (1 + u) log1p(u) is at least 2.6 times u; checked against mpmath in tests/test_numerics.py).
BENNETT_PHI_REL_ERROR = 64 * 2.0**-52


def bennett_phi(u):
    """phi(u) = (1 + u) log(1 + u) - u for u >= 0 (the rate function of Bennett's inequality, Bennett 1962;
    Ladjel et al. Lemma 3, Balle et al. 2019 Thm 3.3), to a few ulps relative for every u.

    The direct form cancels where u is small: phi(u) ~ u^2 / 2, while 1 + u keeps only 1e-16 absolute of u,
    so at u = 1e-11 it is off by 1e-5 relative, and forming bd0(1 + u, 1) loses the same digits.  Here, for
    u <= 1, with v = u / (2 + u) <= 1/3, phi(u) = u v + 2 (1 + u) sum_{j>=1} v^(2j+1) / (2j + 1) (Loader's
    bd0 series with x = 1 + u, m = 1, written in u so that 1 + u is never rounded before the difference):
    positive terms, 24 of them (v^48 < 1e-22); for u > 1 the direct form, whose two terms differ by a factor
    >= 2 ln 2 > 1.38.  Relative error <= :data:`BENNETT_PHI_REL_ERROR`; 0 at u = 0, +inf at u = +inf."""
    u = jnp.asarray(u)
    small = u <= 1.0
    us = jnp.where(small, u, 0.0)
    v = us / (2.0 + us)
    v2 = v * v
    ej = 2.0 * (1.0 + us) * v
    total = us * v
    for j in range(1, 25):
        ej = ej * v2
        total = total + ej / (2 * j + 1)
    ub = jnp.where(small | (u == jnp.inf), 2.0, u)
    direct = jnp.where(u == jnp.inf, jnp.inf, (1.0 + ub) * jnp.log1p(ub) - ub)
    return jnp.where(small, total, direct)


def log_comb(n, k):
    """log C(n, k) for real n >= k >= 0, accurate to ~1e-15 relative even for n ~ 1e12.

    Uses the Stirling-remainder form log C(n,k) = k log(n/k) - (n-k) log1p(-k/n)
    + 0.5 log(n / (2 pi k (n-k))) + stirlerr(n) - stirlerr(k) - stirlerr(n-k), which avoids the cancellation
    of lgamma(n+1) - lgamma(n-k+1) at large n (Loader 2000).
    """
    n = jnp.asarray(n)
    k = jnp.asarray(k)
    edge = (k <= 0) | (k >= n)
    ks = jnp.where(edge, 1.0, k)
    ns = jnp.where(edge, 2.0, n)
    rest = ns - ks
    main = ks * jnp.log(ns / ks) - rest * jnp.log1p(-ks / ns)
    out = main + 0.5 * jnp.log(ns / (2 * jnp.pi * ks * rest)) + stirlerr(ns) - stirlerr(ks) - stirlerr(rest)
    return jnp.where(edge, 0.0, out)


_log_comb_jit = jax.jit(log_comb)
_SQUARE = 1024


def _log_comb_eval(a, j):
    """log C(a, min(j, a)) on concrete arrays, in one compiled call (op by op, each of log_comb's ~30
    operations would be compiled for every new shape: seconds at the first trace of a kernel)."""
    with jax.ensure_compile_time_eval(), x64_scope():
        return np.asarray(_log_comb_jit(a, np.minimum(j, a)))


@functools.lru_cache(maxsize=None)
def _log_comb_row(a: int) -> np.ndarray:
    """log C(a, j) for j = 0..a (a <= _SQUARE).  Exact: the row in Python integers (C(a, j + 1) =
    C(a, j) (a - j) / (j + 1), exactly), then math.log of each, correctly rounded to ~1 ulp (Loader's log_comb
    is off by up to 8.5e-12 in absolute terms at a ~ 1000).  Only the rows a table asks for are computed."""
    row, c = [0.0] * (a + 1), 1
    for j in range(a):
        row[j] = math.log(c)
        c = c * (a - j) // (j + 1)
    row[a] = 0.0
    return np.asarray(row)


@functools.lru_cache(maxsize=16)  # up to 8 MB each at A = 1024
def log_comb_table(alpha_int: tuple, amax: int) -> np.ndarray:
    """log C(a, j) for a in ``alpha_int`` (rows), j = 2..amax (columns), -inf where j > a: a trace-time constant.

    ``alpha_int`` is a tuple of non-negative integers (hashable: tables are cached).  Exact (a slice of
    ``_log_comb_row``) for orders up to 1024; beyond, Loader's :func:`log_comb`.  The one log-binomial
    table of the package: it serves the WBK sum (:func:`amplify_jax.rdp.without_replacement_log_excess`) and
    the integer-order series of the subsampled Gaussian
    (:func:`amplify_jax.accounting._subsampled_gaussian.log_a_minus_one_integer_grid`) and the check-in
    paper's subsampled-shuffle moments (``checkin._shuffled``).
    """
    if max(alpha_int) <= _SQUARE and amax <= _SQUARE:
        table = np.full((len(alpha_int), amax - 1), -np.inf)
        for i, a in enumerate(alpha_int):
            r = _log_comb_row(int(a))[2:amax + 1]
            table[i, : r.size] = r
    else:
        table = _log_comb_eval(np.asarray(alpha_int, dtype=np.float64)[:, None],
                               np.arange(2, amax + 1, dtype=np.float64)[None, :])
    return np.where(np.arange(2, amax + 1)[None, :] <= np.asarray(alpha_int)[:, None], table, -np.inf)


def log_add(a, b):
    """log(e^a + e^b), exact at -inf."""
    return jnp.logaddexp(a, b)


def log_sub(a, b):
    """log(e^a - e^b) for a >= b; -inf where a == b (and where both are -inf)."""
    a = jnp.asarray(a)
    b = jnp.asarray(b)
    d = b - a  # <= 0
    safe_d = jnp.where(jnp.isfinite(d), d, -1.0)
    out = a + log1mexp(jnp.minimum(safe_d, 0.0))
    out = jnp.where(jnp.isneginf(b), a, out)
    return jnp.where(a == b, -jnp.inf, out)


def log_sub_signed(a, b):
    """Return (log|e^a - e^b|, sign(e^a - e^b)) with sign in {-1, 0, 1}."""
    a = jnp.asarray(a)
    b = jnp.asarray(b)
    hi = jnp.maximum(a, b)
    lo = jnp.minimum(a, b)
    mag = log_sub(hi, lo)
    sign = jnp.where(a > b, 1.0, jnp.where(a < b, -1.0, 0.0))
    return mag, sign


def logsumexp(a, axis=None, b=None, keepdims=False):
    """Weighted log-sum-exp, log(sum b * e^a), with jax.scipy semantics (weights b >= 0 expected)."""
    return jsp.logsumexp(a, axis=axis, b=b, keepdims=keepdims)


def log1p(x):
    """log(1 + x) for x > -1, within ~3 ulps everywhere.

    XLA's CPU ``log1p`` (jaxlib 0.10) is up to 128 ulps off on (-0.5, -0.3) (above or below the exact value:
    measured against mpmath, tests/test_numerics.py); elsewhere it is within 2 ulps.  On [-0.5, -0.25] this takes
    log(1 + x) instead: 1 + x in [0.5, 0.75] rounds by at most 2^-54, i.e. 2^-53 relative, which moves the log by
    at most 2^-53 absolute, under 2 ulps of |log(1 + x)| >= 0.287, plus the log's own rounding."""
    x = jnp.asarray(x)
    band = (x >= -0.5) & (x <= -0.25)
    return jnp.where(band, jnp.log(1.0 + jnp.where(band, x, -0.375)), jnp.log1p(x))


def log1mexp(x):
    """log(1 - e^x) for x <= 0, accurate near 0 and for very negative x (Maechler's switch at -ln 2)."""
    x = jnp.asarray(x)
    return jnp.where(x > -LN2, jnp.log(-jnp.expm1(x)), jnp.log1p(-jnp.exp(x)))


def log_binom_pmf(k, n, p):
    """log of the Binomial(n, p) pmf at k (0 <= k <= n real), p in [0, 1]; -inf outside the support.

    Loader's saddle-point form: stirlerr(n) - stirlerr(k) - stirlerr(n-k) - bd0(k, np) - bd0(n-k, n(1-p))
    + 0.5 log(n / (2 pi k (n-k))), accurate to ~1e-15 absolute near the mode even for n ~ 1e9.
    """
    k = jnp.asarray(k)
    n = jnp.asarray(n)
    p = jnp.asarray(p)
    q = 1.0 - p
    inner = (k > 0) & (k < n)
    ks = jnp.where(inner, k, 1.0)
    ns = jnp.where(inner, n, 2.0)
    rest = ns - ks
    ps = jnp.where((p > 0) & (p < 1), p, 0.5)
    lc = (stirlerr(ns) - stirlerr(ks) - stirlerr(rest) - bd0(ks, ns * ps) - bd0(rest, ns * (1.0 - ps))
          + 0.5 * jnp.log(ns / (2 * jnp.pi * ks * rest)))
    lc = jnp.where((p <= 0) | (p >= 1), -jnp.inf, lc)
    # k = 0: (1-p)^n; k = n: p^n
    at0 = jnp.where(p < 1, n * jnp.log1p(-jnp.where(p < 1, p, 0.0)), jnp.where(n > 0, -jnp.inf, 0.0))
    atn = jnp.where(p > 0, n * jnp.log(jnp.where(p > 0, p, 1.0)), jnp.where(n > 0, -jnp.inf, 0.0))
    out = jnp.where(k <= 0, at0, jnp.where(k >= n, atn, lc))
    del q
    return jnp.where((k < 0) | (k > n), -jnp.inf, out)


def log_ndtr(x):
    """log Phi(x), the standard normal CDF, accurate in both tails."""
    return jsp.log_ndtr(x)


def log_erfc(x):
    """log erfc(x) = log(2 Phi(-sqrt(2) x)), accurate for large positive x."""
    return LN2 + jsp.log_ndtr(-jnp.sqrt(2.0) * jnp.asarray(x))


def log_expm1(x):
    """log(e^x - 1) for x >= 0 (-inf at 0), without overflow for large x."""
    x = jnp.asarray(x)
    big = x > 1.0
    small = jnp.log(jnp.expm1(jnp.where(big, 1.0, x)))
    large = x + jnp.log1p(-jnp.exp(-jnp.where(big, x, 1.0)))
    return jnp.where(big, large, small)
