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

import os

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
    import jax

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
