"""Renames that keep old spellings working for one release, with a DeprecationWarning naming the new one."""

from __future__ import annotations

import functools
import warnings

__all__ = ["renamed_params", "renamed_function"]


def renamed_params(**old_to_new):
    """Decorator: keyword ``old`` still accepted for ``new`` (warns); giving both is a ValueError."""

    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            for old, new in old_to_new.items():
                if old in kwargs:
                    if new in kwargs:
                        raise ValueError(f"Expected {new} (the new name of {old}), got both {old} and {new}.")
                    warnings.warn(f"{fn.__name__}: '{old}' is renamed '{new}'; the old name goes in the next release.",
                                  DeprecationWarning, stacklevel=2)
                    kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        inner.__renamed_params__ = dict(old_to_new)
        return inner

    return wrap


def renamed_function(new, old_name: str):
    """An alias ``old_name`` of function ``new`` that warns on every call."""

    @functools.wraps(new)
    def alias(*args, **kwargs):
        warnings.warn(f"{old_name} is renamed {new.__name__}; the old name goes in the next release.",
                      DeprecationWarning, stacklevel=2)
        return new(*args, **kwargs)

    alias.__name__ = old_name
    alias.__doc__ = f"Deprecated alias of :func:`{new.__name__}` (warns)."
    return alias
