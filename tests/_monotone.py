"""The declared monotone directions of registered bounds, checked on grids (shared by the family tests;
tests/test_bounds.py only checks one step around each example)."""

from __future__ import annotations

import numpy as np


def monotone_grid(p, points=8):
    """``points`` values of a monotone parameter across its search range (fixed length: one compile per bound)."""
    from amplify_jax.bounds import Integer

    d = p.domain
    lo, hi = p.search if p.search is not None else (d.lo, d.hi)
    if isinstance(d, Integer):
        return np.round(np.geomspace(max(float(lo), 1.0), min(float(hi), 1e7), points))
    lo = max(float(lo), 1e-12)
    hi = float(hi) * (1 - 1e-9) if d.hi_open else float(hi)
    return np.geomspace(lo, hi, points)


def assert_declared_monotone(bound, base, rtol=1e-12):
    """Every declared direction on its grid, all the monotone parameters in ONE batched call (one compile per
    bound): block i of the batch moves parameter i along its grid, the others stay at ``base``."""
    from amplify_jax import bounds

    mono = [p for p in bound.params if p.monotone]
    if not mono:
        return
    grids = [monotone_grid(p) for p in mono]
    batch = {}
    for i, p in enumerate(mono):
        col = np.full((len(mono), len(grids[i])), float(base.get(p.name, p.default)))
        col[i] = grids[i]
        batch[p.name] = col.reshape(-1)
    v = np.asarray(bounds.evaluate(bound.id, **{**base, **batch}).value, dtype=float)
    v = v.reshape(len(mono), len(grids[0]), -1)
    for i, p in enumerate(mono):
        a, b = v[i, :-1], v[i, 1:]
        both_inf = np.isinf(a) & np.isinf(b)
        with np.errstate(invalid="ignore"):
            step = (b - a) * p.monotone
        bad = ~both_inf & (step < -rtol * np.abs(a))
        assert not bad.any(), (bound.id, p.name, grids[i], v[i])
