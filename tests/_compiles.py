"""Counting XLA compilations in tests (issue 25): JAX's own count, ``jax.monitoring``'s
``/jax/core/compile/backend_compile_duration`` event (every program, small ones included; not timing).

    with compilations() as got:
        ...  # calls
    assert len(got) == 0, got
"""

from __future__ import annotations

import contextlib

import jax

_ACTIVE: list = []


def _listen(event, duration, **_):
    if event == "/jax/core/compile/backend_compile_duration":
        for got in _ACTIVE:
            got.append(duration)


jax.monitoring.register_event_duration_secs_listener(_listen)


@contextlib.contextmanager
def compilations():
    """A list that collects the compile seconds of every program compiled inside the block."""
    got: list = []
    _ACTIVE.append(got)
    try:
        yield got
    finally:
        _ACTIVE.remove(got)
