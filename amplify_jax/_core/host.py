"""The host path: the package's own kernels run by NumPy, for the first small questions of a process.

A fresh process's first answer through XLA waits for compilation (seconds: the DP-SGD accountant's program is
large), where the question itself is a few milliseconds of arithmetic.  So the front doors answer their first
small batches on the host: with the *same source code* as the compiled kernels, executed by NumPy.

How: :func:`twin` loads a module of this package a second time, as ``amplify_jax._twin.<name>``, from the same
file, with ``jax``, ``jax.numpy``, ``jax.lax`` and ``jax.scipy.special`` bound to the NumPy stand-ins below
(:data:`jax_on_numpy`): ``jnp.where`` is ``numpy.where``, ``lax.while_loop`` a Python loop, ``jax.jit`` the
function itself.  Nothing of the live package is rebound (thread-safe); there is no second copy of any
formula, and a kernel edited once changes both paths.  Kernels that only use the stand-ins' subset of JAX run
on both (the DP-SGD accountant and its calibration do; tests/test_host.py checks host against compiled).

When: :func:`use_host` (``AMPLIFY_JAX_HOST``): ``auto`` (default) answers batches of at most ``MAX_POINTS``
points on the host until the process has spent ``BUDGET_SECONDS`` there per front door (about what one
compilation costs: rent until the rent equals the price, then buy), then compiles; ``off`` never uses the
host path, ``always`` always does for small batches.  Inside a JAX transformation (tracers) it is never used.

Soundness: both paths compute the same float64 formulas with the same outward rounding; they differ only in
the last bits of the elementary functions (XLA's exp/log against the C library's, ~1 ulp), which the kernels'
outward rounding margins (8-16 ulps, see conversions and rdp) cover.  tests/test_host.py compares the two.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import threading
import time
import types

import jax as _jax  # the process has it: amplify_jax._core.numerics imports this module after JAX
import numpy as np

__all__ = ["ENV", "MAX_POINTS", "BUDGET_SECONDS", "mode", "use_host", "answer", "to_live", "give_up", "inside", "off",
           "front_door", "size", "n_points", "twin", "run", "jax_on_numpy"]

ENV = "AMPLIFY_JAX_HOST"
#: Batches up to this many points may take the host path (NumPy evaluates them at about the cost of one).
MAX_POINTS = 8
#: Seconds of host evaluation per front door before the process compiles instead (about one compilation).
BUDGET_SECONDS = 4.0

_PKG = __name__.split(".", 1)[0]  # amplify_jax
_TWIN = _PKG + "._twin"
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package's folder
_spent: dict[str, float] = {}
_lock = threading.Lock()
_local = threading.local()


def mode() -> str:
    """``auto``, ``off`` or ``always`` from ``$AMPLIFY_JAX_HOST`` (an unknown value raises ValueError)."""
    m = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if m in ("0", "false", "no", "none"):
        m = "off"
    if m not in ("auto", "off", "always"):
        raise ValueError(f"{ENV} must be auto, off or always, got {m!r}")
    return m


def use_host(door: str, n_points: int, *arrays) -> bool:
    """Whether the front door ``door`` answers a batch of ``n_points`` on the host (see the module docstring).
    ``arrays``: its inputs (a JAX tracer among them rules the host out)."""
    if getattr(_local, "inside", False) or getattr(_local, "off", False) or n_points > MAX_POINTS:
        return False
    m = mode()
    if m == "off":
        return False
    if any(isinstance(a, _jax.core.Tracer) for a in arrays):
        return False
    return m == "always" or _spent.get(door, 0.0) < BUDGET_SECONDS


def run(door: str, module: str, name: str, *args, **kwargs):
    """``amplify_jax.<module>.<name>(*args, **kwargs)`` on the host twin, timed against ``door``'s budget.
    Floating-point warnings are silenced as under XLA (the kernels mask what they do not use)."""
    fn = getattr(twin(module), name)
    t = time.perf_counter()
    _local.inside = True
    try:
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)
    finally:
        _local.inside = False
        with _lock:
            _spent[door] = _spent.get(door, 0.0) + time.perf_counter() - t


def answer(door: str, module: str, name: str, n_points: int, *args, **kwargs):
    """``amplify_jax.<module>.<name>(*args, **kwargs)`` answered on the host when :func:`use_host` says so, as
    the live function returns it (:func:`to_live`); None where the compiled path is to answer: the host path
    is off or spent, or the twin failed with anything but a ValueError (a part of JAX the stand-ins lack: the
    door is not tried again).  A ValueError is the live function's own (same code) and propagates."""
    if not use_host(door, n_points, *args, *kwargs.values()):
        return None
    try:
        return to_live(run(door, module, name, *args, **kwargs))
    except ValueError:
        raise
    except Exception:  # noqa: BLE001 - the compiled path answers instead
        give_up(door)
        return None


def to_live(result):
    """A twin's result as the live package returns it: its named tuples as the live classes of the same name,
    their arrays as float64 (int for statuses) ``jax.Array`` values (a copy; no compiled conversion)."""
    if isinstance(result, tuple) and hasattr(result, "_fields"):
        mod = type(result).__module__
        live_mod = sys.modules.get(_PKG + mod[len(_TWIN):]) if mod.startswith(_TWIN) else None
        kind = getattr(live_mod, type(result).__name__, type(result))
        return kind(*(to_live(x) for x in result))
    if isinstance(result, (np.ndarray, np.generic)):
        with _jax.enable_x64(True):
            return _jax.device_put(np.asarray(result))
    return result


def front_door(fn):
    """Decorate a public function of the package: a process's first small questions (every numeric argument
    of at most ``MAX_POINTS`` points, no ``devices``) are answered by its twin, as :func:`answer` says.  The
    door is the function with its string arguments (a mechanism's name, the accountant): each has its budget."""
    module = fn.__module__[len(_PKG) + 1:]

    @functools.wraps(fn)
    def door(*args, **kwargs):
        if kwargs.get("devices") is None and not inside():
            key = ":".join([fn.__name__, *(str(a) for a in (*args, *kwargs.values()) if isinstance(a, str))])
            hosted = answer(key, module, fn.__name__, n_points(args, kwargs), *args, **kwargs)
            if hosted is not None:
                return hosted
        return fn(*args, **kwargs)

    return door


def size(shape) -> int:
    """The number of points of a batch of ``shape``."""
    return int(np.prod(shape, dtype=np.int64))


def n_points(*values) -> int:
    """The largest number of points among ``values`` (numbers, arrays, dicts of them): a front door's test of
    a small batch before its validation (what does not parse counts as one point; validation refuses it)."""
    sizes = [1]
    for v in values:
        for x in (v.values() if isinstance(v, dict) else v if isinstance(v, tuple) else (v,)):
            try:
                sizes.append(int(np.size(np.asarray(x, dtype=np.float64))))
            except (TypeError, ValueError):
                pass
    return max(sizes)


def give_up(door: str) -> None:
    """The host path failed for ``door`` (its kernels use a part of JAX the stand-ins lack): compile from now on."""
    with _lock:
        _spent[door] = float("inf")


@contextlib.contextmanager
def off():
    """No host path in this thread for the body (sweeps: every chunk compiled, so a resumed store is
    bit-identical to an uninterrupted one)."""
    before = getattr(_local, "off", False)
    _local.off = True
    try:
        yield
    finally:
        _local.off = before


def inside() -> bool:
    """True while the host twin runs in this thread (kernels that branch on it: ``numerics.run_in_slabs``)."""
    return getattr(_local, "inside", False)


# --------------------------------------------------------------------------------------------------------------
# JAX's API on NumPy: the subset the kernels use.


def _nonzero(a, *, size=None, fill_value=None):
    idx = np.nonzero(a)
    if size is None:
        return idx
    fill = 0 if fill_value is None else fill_value
    out = []
    for i in idx:
        i = i[:size]
        out.append(np.concatenate([i, np.full(size - i.size, fill, dtype=i.dtype)]) if i.size < size else i)
    return tuple(out)


def _asarray(a, dtype=None, **_):
    return np.asarray(a, dtype=dtype)


def _array(a, dtype=None, **_):
    return np.array(a, dtype=dtype)


class _AtArray(np.ndarray):
    """A NumPy array with JAX's functional updates (``x.at[i].set(v)`` returns an updated copy): what
    ``jnp.zeros`` and its kin return on the host.  (Other arrays have no ``.at``: a kernel using it on one
    leaves the host path, and the compiled path answers.)"""

    @property
    def at(self):
        return _AtIndexer(self)


class _AtIndexer:
    def __init__(self, a):
        self.a = a

    def __getitem__(self, idx):
        return _AtUpdate(self.a, idx)


class _AtUpdate:
    def __init__(self, a, idx):
        self.a, self.idx = a, idx

    def _apply(self, fn, v):
        out = np.array(self.a).view(_AtArray)
        fn(out, self.idx, v)
        return out

    def set(self, v, **_):
        return self._apply(lambda o, i, v: o.__setitem__(i, v), v)

    def add(self, v, **_):
        return self._apply(np.add.at, v)

    def min(self, v, **_):
        return self._apply(np.minimum.at, v)

    def max(self, v, **_):
        return self._apply(np.maximum.at, v)

    def get(self, **_):
        return self.a[self.idx]


def _with_at(make):
    return lambda *a, **k: np.asarray(make(*a, **k)).view(_AtArray)


_jnp = types.ModuleType("jax.numpy (NumPy stand-in)")
_jnp.__dict__.update({k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
_jnp.asarray, _jnp.array, _jnp.nonzero = _asarray, _array, _nonzero
_jnp.ndarray = np.ndarray


def _take(a, indices, axis=None, mode=None, unique_indices=False, indices_are_sorted=False, fill_value=None):
    """``jnp.take``: NumPy's, without the compiler's hints (unique / sorted indices)."""
    return np.take(a, indices, axis=axis, mode="clip" if mode in (None, "clip") else mode)


_jnp.take = _take
for _k in ("zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like"):
    setattr(_jnp, _k, _with_at(getattr(np, _k)))


def _cond(pred, true_fun, false_fun, *operands):
    return true_fun(*operands) if bool(pred) else false_fun(*operands)


def _switch(index, branches, *operands):
    i = int(np.clip(int(index), 0, len(branches) - 1))
    return branches[i](*operands)


def _while_loop(cond_fun, body_fun, init_val):
    val = init_val
    while bool(cond_fun(val)):
        val = body_fun(val)
    return val


def _fori_loop(lower, upper, body_fun, init_val, **_):
    val = init_val
    for i in range(int(lower), int(upper)):
        val = body_fun(np.int64(i), val)  # an array scalar, as JAX's traced index (.astype works)
    return val


def _tree_map(f, *trees):
    return _jax.tree_util.tree_map(f, *trees)


def _stack(outs):
    return _jax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *outs)


def _scan(f, init, xs=None, length=None, reverse=False, **_):
    n = length if xs is None else len(_jax.tree_util.tree_leaves(xs)[0])
    order = range(n - 1, -1, -1) if reverse else range(n)
    carry, ys = init, []
    for i in order:
        carry, y = f(carry, None if xs is None else _tree_map(lambda x: x[i], xs))
        ys.append(y)
    if reverse:
        ys.reverse()
    return carry, (_stack(ys) if ys and ys[0] is not None else None)


def _map(f, xs, **_):
    n = len(_jax.tree_util.tree_leaves(xs)[0])
    return _stack([f(_tree_map(lambda x: x[i], xs)) for i in range(n)])


def _vmap(f, in_axes=0, out_axes=0, **_):
    """``jax.vmap`` as a loop over the mapped axis (``in_axes``: an int, None or a tuple of them; out_axes 0)."""
    if out_axes != 0:
        raise NotImplementedError("vmap with out_axes != 0 is not available on the host path")

    def mapped(*args):
        axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
        n = {np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None}.pop()
        take = lambda a, ax, i: a if ax is None else np.take(np.asarray(a), i, axis=ax)  # noqa: E731
        return _stack([f(*(take(a, ax, i) for a, ax in zip(args, axes))) for i in range(n)])

    return mapped


def _associative_scan(fn, elems, reverse=False, axis=0):
    """``lax.associative_scan``: Hillis-Steele's prefix scan, log2(n) vectorised rounds (``fn`` associative,
    applied as fn(earlier, later) along ``axis``; ``reverse``: flipped in and out, as JAX does)."""
    leaves, tree = _jax.tree_util.tree_flatten(elems)
    xs = [np.moveaxis(np.asarray(x), axis, 0) for x in leaves]
    if reverse:
        xs = [x[::-1] for x in xs]
    n, d = xs[0].shape[0], 1
    while d < n:
        earlier = _jax.tree_util.tree_unflatten(tree, [x[:-d] for x in xs])
        later = _jax.tree_util.tree_unflatten(tree, [x[d:] for x in xs])
        comb = _jax.tree_util.tree_leaves(fn(earlier, later))
        xs = [np.concatenate([x[:d], np.asarray(c)], axis=0) for x, c in zip(xs, comb)]
        d *= 2
    if reverse:
        xs = [x[::-1] for x in xs]
    return _jax.tree_util.tree_unflatten(tree, [np.moveaxis(x, 0, axis) for x in xs])


_lax = types.ModuleType("jax.lax (NumPy stand-in)")
_lax.cond, _lax.switch, _lax.while_loop, _lax.fori_loop = _cond, _switch, _while_loop, _fori_loop
_lax.scan, _lax.map, _lax.associative_scan = _scan, _map, _associative_scan
_lax.cummax = lambda x, axis=0, reverse=False: _cumulative(np.maximum, x, axis, reverse)
_lax.cummin = lambda x, axis=0, reverse=False: _cumulative(np.minimum, x, axis, reverse)
_lax.cumsum = lambda x, axis=0, reverse=False: _cumulative(np.add, x, axis, reverse)
_lax.stop_gradient = lambda x: x


def _dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    """``lax.dynamic_slice_in_dim``: the start clamped to [0, dim - slice_size], as XLA does."""
    a = np.asarray(operand)
    start = int(np.clip(int(start_index), 0, a.shape[axis] - slice_size))
    return np.take(a, np.arange(start, start + slice_size), axis=axis)


def _dynamic_update_slice_in_dim(operand, update, start_index, axis):
    """``lax.dynamic_update_slice_in_dim``: a copy with ``update`` written from the start, clamped to
    [0, dim - update's size], as XLA does."""
    a = np.array(operand)
    u = np.asarray(update)
    start = int(np.clip(int(start_index), 0, a.shape[axis] - u.shape[axis]))
    index = [slice(None)] * a.ndim
    index[axis] = slice(start, start + u.shape[axis])
    a[tuple(index)] = u
    return a


_lax.dynamic_slice_in_dim, _lax.dynamic_update_slice_in_dim = _dynamic_slice_in_dim, _dynamic_update_slice_in_dim


# lax.erf / lax.erfc: SciPy's, through the special-function stand-in below (imported on first use)
_lax.erf = lambda x: _special_attr("erf")(x)
_lax.erfc = lambda x: _special_attr("erfc")(x)


def _cumulative(ufunc, x, axis, reverse):
    x = np.asarray(x)
    if reverse:
        return np.flip(ufunc.accumulate(np.flip(x, axis), axis=axis), axis)
    return ufunc.accumulate(x, axis=axis)


def _segment(reduce, empty):
    def seg(data, segment_ids, num_segments, **_):
        data = np.asarray(data)
        out = np.full((num_segments,) + data.shape[1:], empty(data.dtype), dtype=data.dtype)
        reduce.at(out, np.asarray(segment_ids), data)
        return out

    return seg


def _lowest(dt):
    return -np.inf if np.issubdtype(dt, np.floating) else np.iinfo(dt).min


def _highest(dt):
    return np.inf if np.issubdtype(dt, np.floating) else np.iinfo(dt).max


_ops = types.ModuleType("jax.ops (NumPy stand-in)")
_ops.segment_min, _ops.segment_max = _segment(np.minimum, _highest), _segment(np.maximum, _lowest)

_SPECIAL = ("log_ndtr", "ndtr", "ndtri", "erf", "erfc", "erfcx", "gammaln", "logsumexp", "xlogy", "xlog1py",
            "expit", "logit", "betaln", "digamma", "i0e", "i1e", "entr")
_special = types.ModuleType("jax.scipy.special (SciPy stand-in)")


def _special_attr(name):  # SciPy's special functions, imported when a twin first asks for one
    if name not in _SPECIAL:
        raise AttributeError(f"jax.scipy.special.{name} is not available on the host path (amplify_jax._core.host)")
    import scipy.special

    if name == "log_ndtr":  # jax's series_order (its asymptotic tail's length): SciPy's is accurate without one
        return lambda x, series_order=3: scipy.special.log_ndtr(x)
    return getattr(scipy.special, name)


_special.__getattr__ = _special_attr
_scipy = types.ModuleType("jax.scipy (NumPy stand-in)")
_scipy.special = _special


def _jit(fun=None, **_):
    if fun is None:
        return lambda f: f
    return fun


class _CustomJVP:
    """``jax.custom_jvp`` on the host: the primal function (nothing is differentiated there)."""

    def __init__(self, fun, nondiff_argnums=()):
        self.fun = fun
        functools.update_wrapper(self, fun)

    def defjvp(self, jvp, **_):
        return jvp

    def __call__(self, *args, **kwargs):
        return self.fun(*args, **kwargs)


def _no_transform(*_, **__):
    raise NotImplementedError("JAX transformations are not available on the host path (amplify_jax._core.host)")


class _NoTracer:  # nothing on the host is a tracer
    pass


jax_on_numpy = types.ModuleType("jax (NumPy stand-in, amplify_jax._core.host)")
jax_on_numpy.numpy, jax_on_numpy.lax, jax_on_numpy.ops, jax_on_numpy.scipy = _jnp, _lax, _ops, _scipy
jax_on_numpy.jit = _jit
jax_on_numpy.enable_x64 = lambda *_: contextlib.nullcontext()
jax_on_numpy.ensure_compile_time_eval = contextlib.nullcontext
jax_on_numpy.custom_jvp = lambda fun=None, nondiff_argnums=(): (
    (lambda f: _CustomJVP(f, nondiff_argnums)) if fun is None else _CustomJVP(fun, nondiff_argnums))
jax_on_numpy.jvp = jax_on_numpy.grad = jax_on_numpy.jacfwd = _no_transform
jax_on_numpy.vmap = _vmap
jax_on_numpy.device_put = lambda x, *_, **__: x
jax_on_numpy.core = types.SimpleNamespace(Tracer=_NoTracer)
jax_on_numpy.tree_util = _jax.tree_util  # pytrees of NumPy arrays: JAX's own utilities (no compilation)
jax_on_numpy.Array = np.ndarray
_nn = types.ModuleType("jax.nn (NumPy stand-in)")
_nn.sigmoid = lambda x: _special_attr("expit")(x)
jax_on_numpy.nn = _nn

_SUBMODULES = {"jax": jax_on_numpy, "jax.numpy": _jnp, "jax.lax": _lax, "jax.ops": _ops, "jax.scipy": _scipy,
               "jax.scipy.special": _special, "jax.nn": _nn}


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    """``__import__`` of the twin modules: ``jax`` and its submodules come from the stand-ins."""
    if level == 0 and (name == "jax" or name.startswith("jax.")):
        if name not in _SUBMODULES:
            raise ImportError(f"{name} is not available on the host path (amplify_jax._core.host)")
        return _SUBMODULES[name] if fromlist else jax_on_numpy
    return builtins.__import__(name, globals, locals, fromlist, level)


_BUILTINS = dict(builtins.__dict__, __import__=_import)
#: Modules of the package that the twins share with the live package (no JAX inside, or state that must be one).
_SHARED = {"_core.host", "_core.validate", "_core.status", "_core.parse", "_core.io", "_core.cache"}


class _TwinFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``amplify_jax._twin.X`` at the source of ``amplify_jax.X`` and runs it with the stand-ins."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _TWIN and not fullname.startswith(_TWIN + "."):
            return None
        rel = fullname[len(_TWIN) + 1:].split(".") if fullname != _TWIN else []
        base = os.path.join(_ROOT, *rel)
        if os.path.isdir(base):
            spec = importlib.machinery.ModuleSpec(fullname, self, origin=os.path.join(base, "__init__.py"),
                                                  is_package=True)
        elif os.path.isfile(base + ".py"):
            spec = importlib.machinery.ModuleSpec(fullname, self, origin=base + ".py")
        else:
            return None
        spec.has_location = True  # __file__: the live module's file (tracebacks and inspect point at it)
        return spec

    def create_module(self, spec):
        rel = spec.name[len(_TWIN) + 1:]
        if rel in _SHARED:
            return importlib.import_module(f"{_PKG}.{rel}")
        return None

    def exec_module(self, module):
        if module.__name__ != _TWIN and not module.__name__.startswith(_TWIN + "."):
            return  # a live module shared with the twins (create_module returned it): run already, leave it
        rel = module.__name__[len(_TWIN) + 1:]
        module.__dict__["__builtins__"] = _BUILTINS
        if module.__name__ == _TWIN:
            module.__path__ = []  # the twin package's own __init__ is not run: modules load on demand
            return
        if module.__spec__.submodule_search_locations is not None:
            module.__path__ = []
        # the live module's bytecode (its __pycache__ entry: the same source, the same code object)
        real = f"{_PKG}.{rel}"
        code = importlib.machinery.SourceFileLoader(real, module.__spec__.origin).get_code(real)
        exec(code, module.__dict__)
        # its warnings and exceptions are the live module's classes: a user's filter or except clause for
        # amplify_jax.checkin.OrderCapWarning catches what the twin raises too
        own = [k for k, v in module.__dict__.items() if isinstance(v, type) and issubclass(v, (Warning, Exception))
               and v.__module__ == module.__name__]
        if own:
            live = importlib.import_module(real)
            for k in own:
                module.__dict__[k] = getattr(live, k, module.__dict__[k])


_finder = _TwinFinder()


def twin(module: str) -> types.ModuleType:
    """The host twin of ``amplify_jax.<module>`` (loaded once; see the module docstring)."""
    with _lock:
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)
        return importlib.import_module(f"{_TWIN}.{module}")
