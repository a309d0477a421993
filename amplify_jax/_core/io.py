"""Atomic file writes: a reader (or a killed writer's successor) sees the old file or the whole new one.

The temporary file (``tempfile.mkstemp``: mode 0600) is given the mode an ordinary ``open`` would create, 0666
less the process's umask, before the rename: outputs are readable by whom the user's umask says (a group on a
shared cluster), not by the user alone.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Callable

import numpy as np

__all__ = ["atomic_write", "umask", "with_umask_mode", "dumps_strict", "JSON_NONFINITE"]

_UMASK_LOCK = threading.Lock()


def umask() -> int:
    """The process's umask, read without changing it where Linux shows it (/proc/self/status, Linux >= 4.7);
    elsewhere set and restored at once, under a lock."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            m = re.search(r"^Umask:\s*([0-7]+)$", f.read(), re.MULTILINE)
        if m:
            return int(m.group(1), 8)
    except OSError:
        pass
    with _UMASK_LOCK:
        old = os.umask(0o022)
        os.umask(old)
    return old


def with_umask_mode(path) -> None:
    """Give ``path`` the mode a newly created file gets from ``open``: 0o666 & ~umask."""
    os.chmod(path, 0o666 & ~umask())


def atomic_write(path, write: Callable[[str], None]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it onto ``path`` (atomic on POSIX)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        with_umask_mode(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


#: how ``--json`` writes a value that is not a finite number: strict JSON (RFC 8259) has no NaN or Infinity, so
#: +inf, -inf and nan are written as the strings "Infinity", "-Infinity" and "NaN" (which Python's ``float`` and
#: JavaScript's ``Number`` read back); every other number is a JSON number.
JSON_NONFINITE = "strict JSON: a value that is not a finite number is the string \"Infinity\", \"-Infinity\" or \"NaN\""


def _strict(obj):
    """``obj`` with every non-finite float replaced by its string (see :data:`JSON_NONFINITE`)."""
    if isinstance(obj, np.ndarray):
        obj = obj.tolist()
    elif isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float):
        if math.isfinite(obj):
            return obj
        return "NaN" if math.isnan(obj) else "Infinity" if obj > 0 else "-Infinity"
    if isinstance(obj, dict):
        return {k: _strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_strict(v) for v in obj]
    return obj


def dumps_strict(obj, **kw) -> str:
    """Strict JSON (never a bare NaN or Infinity): the one JSON writer of the command line and the demo."""
    return json.dumps(_strict(obj), allow_nan=False, **kw)
