"""JAX's persistent compilation cache, on for amplify_jax's users unless they opt out.

A fresh process spends most of its first answer compiling (6-30 s for the DP-SGD kernels on a 2-core CPU);
with the cache, a kernel compiled once on this machine loads from disk in well under a second.  The cache is
JAX's own (``jax_compilation_cache_dir``), pointed at ``$AMPLIFY_JAX_CACHE/xla`` (default
``~/.cache/amplify_jax/xla``).  ``AMPLIFY_JAX_CACHE=off`` (or ``0``, ``none``, ``false``, empty) turns it off; a
cache directory the user set in JAX before importing amplify_jax is kept as it is.

JAX's cache reads and writes files without a lock unless a size limit is set, so concurrent processes (a
multi-process sweep, parallel tests) could read an entry another is still writing: amplify_jax sets a limit
(``MAX_BYTES``, least recently used entries evicted), which makes JAX take a file lock (``filelock``).
"""

from __future__ import annotations

import functools
import hashlib
import os

import jax
import numpy as np

from .io import atomic_write

__all__ = ["ENV", "MAX_BYTES", "cache_path", "enable_compilation_cache"]

ENV = "AMPLIFY_JAX_CACHE"
MAX_BYTES = 4 << 30
_OFF = ("", "0", "off", "none", "false")


def cache_path() -> str | None:
    """The cache directory amplify_jax would use: ``xla`` in ``$AMPLIFY_JAX_CACHE`` (default
    ~/.cache/amplify_jax); None when opted out.  (A subdirectory: entries written by amplify_jax 0.1's command
    line, without the access-time files of a size-limited cache, would make JAX's eviction fail.)"""
    root = os.environ.get(ENV, os.path.join(os.path.expanduser("~"), ".cache", "amplify_jax"))
    return None if root.strip().lower() in _OFF else os.path.join(root, "xla")


def enable_compilation_cache(min_compile_time_secs: float = 0.5) -> str | None:
    """Turn JAX's persistent compilation cache on at :func:`cache_path` (programs that took at least
    ``min_compile_time_secs`` to compile are stored).  Returns the directory in use, or None where the cache
    stays off (opted out, or the directory cannot be created); a directory already set in JAX is kept."""
    current, path = jax.config.jax_compilation_cache_dir, cache_path()
    if current:
        if current == path:  # ours, set at import: only the threshold changes (the command line's is lower)
            jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_time_secs))
        return current
    if path is None:
        return None
    try:
        import filelock  # noqa: F401  (JAX locks its cache files with it once a size limit is set)
    except ImportError:  # pragma: no cover - a dependency; without it the cache stays off rather than unlocked
        return None
    try:
        os.makedirs(path, exist_ok=True)
        jax.config.update("jax_compilation_cache_max_size", MAX_BYTES)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_time_secs))
        jax.config.update("jax_compilation_cache_dir", path)
    except (OSError, AttributeError):  # a read-only home or an older jax: run without the cache
        return None
    return path


# ----------------------------------------------------------------------------------------------------------
# Persisted programs: a front door's kernel, exported once per machine (``jax.export``), so that a new process
# neither traces nor lowers it again (1-4 s for the DP-SGD accountants) and XLA's cache above finds its program.

EXPORT_DIR = "export"
_source_digest: str | None = None
_programs: dict = {}


def stable_key(obj) -> str:
    """A text that names a static argument the same way in every process: numbers, strings, tuples of them,
    and objects with a ``_key()`` method (amplify_jax's hashable kernel plans) -- never an address."""
    if hasattr(obj, "_key"):
        return f"{type(obj).__name__}{stable_key(obj._key())}"
    if isinstance(obj, (tuple, list)):
        return "(" + ",".join(stable_key(x) for x in obj) + ")"
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return repr(obj)
    raise TypeError(f"no stable key for {type(obj).__name__}")


def source_digest() -> str:
    """Digest of this package's source files (a program exported by other code is never reused)."""
    global _source_digest
    if _source_digest is None:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package's folder
        h = hashlib.sha256()
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(f for f in filenames if f.endswith(".py")):
                path = os.path.join(dirpath, name)
                h.update(os.path.relpath(path, root).encode())
                with open(path, "rb") as f:
                    h.update(f.read())
        _source_digest = h.hexdigest()
    return _source_digest


def persisted(name: str, jitted, static: dict, args: tuple):
    """``jitted(*args, **static)`` through a program exported once per machine and source (None where the
    compilation cache is off: the caller then calls ``jitted`` itself).  ``static``: the static arguments (each
    with a :func:`stable_key`); ``args``: arrays, whose shapes and dtypes are part of the key.  The exported
    program is the same StableHLO as ``jitted``'s, so its values are the same; it is stored atomically under
    ``cache_path()/../export`` and loaded by any later process with the same key.  In a process, the program is
    found again by the (hashable) static arguments and the shapes, without recomputing the file's key."""
    memo = (name, tuple(sorted(static.items())),
            tuple((np.shape(a), np.dtype(a.dtype if hasattr(a, "dtype") else np.result_type(a)).name) for a in args))
    prog = _programs.get(memo)
    if prog is None:
        prog = _load_or_export(name, jitted, static, memo[2])
        if prog is None:
            return None
        _programs[memo] = prog
    return prog(*args)


def _load_or_export(name, jitted, static, shapes):
    """The jitted call of the exported program for these static arguments and (shape, dtype) pairs: read from
    the cache directory, or exported there now; None where there is no cache or a static argument has no
    stable key."""
    path = cache_path()
    if path is None:
        return None
    try:
        import flatbuffers  # noqa: F401  (jax.export's serialization; a dependency, without it: no persistence)
    except ImportError:  # pragma: no cover
        return None
    from jax import export  # jax.export's own import costs ~0.1 s: paid by the first persisted program only

    try:
        skey = stable_key(tuple(sorted(static.items())))
    except TypeError:
        return None
    text = "|".join([name, skey, repr(shapes), source_digest(), jax.__version__, jax.default_backend(),
                     str(jax.config.jax_enable_x64)])
    digest = hashlib.sha256(text.encode()).hexdigest()[:32]
    file = os.path.join(os.path.dirname(path), EXPORT_DIR, f"{name}-{digest}.bin")
    exp = None
    if os.path.exists(file):
        try:
            with open(file, "rb") as f:
                exp = export.deserialize(bytearray(f.read()))
        except Exception:  # noqa: BLE001 - a damaged or foreign file: exported again below
            exp = None
    if exp is None:
        avals = tuple(jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in shapes)
        exp = export.export(jax.jit(functools.partial(jitted, **static)))(*avals)
        try:
            def write(tmp):
                with open(tmp, "wb") as f:
                    f.write(exp.serialize())

            atomic_write(file, write)  # makes the folder too
        except OSError:  # a read-only cache: this process still uses the program
            pass
    return jax.jit(exp.call)
