"""The boundary probes shared by the families' ``test_*_params.py`` (issue 29, item 2): does a public function
refuse exactly what its Param refuses?  The tests replace the family's kernels by :func:`stub`, so a call that
passes validation raises :class:`Accepted` and nothing compiles."""

from __future__ import annotations

import math

import numpy as np

from amplify_jax._core.domains import Integer


class Accepted(Exception):
    """Raised by the stub kernels: validation let the call through."""


def stub(*args, **kwargs):
    raise Accepted


def probes(domain) -> list:
    """The domain's ends, one ulp either side of each, and values no domain or every domain takes."""
    out = [-1.0, 0.0, 0.5, 1.0, 2.0, 1e-300, 1e300, math.nan, math.inf, -math.inf]
    lo, hi = float(domain.lo), float(domain.hi)
    for end in (lo, hi):
        out += [end, np.nextafter(end, -math.inf), np.nextafter(end, math.inf)]
    if isinstance(domain, Integer):
        out += [lo - 1, lo + 0.5, hi + 1, hi - 0.5]
    return out


def param_refuses(param, value) -> bool:
    try:
        param.domain.check(param.name, value)
    except ValueError:
        return True
    return False


def function_refuses(call, base, name, value, *, answered_is_accepted=True) -> bool:
    """Whether ``call(**base, name=value)`` refuses with one ValueError line naming ``name`` and its value.
    A call that returns (a function with no kernel to stub) counts as accepted where ``answered_is_accepted``;
    otherwise every call must reach a stub."""
    try:
        call(**{**base, name: value})
    except Accepted:
        return False
    except ValueError as exc:
        msg = str(exc)
        assert "\n" not in msg and f"{name}=" in msg, msg  # one line, naming the parameter and its value
        return True
    if not answered_is_accepted:
        raise AssertionError("every call reaches a stubbed kernel")
    return False
