"""Parsing of grid values written as text (command-line flags, TOML strings): numbers, lists and ranges."""

from __future__ import annotations

import numpy as np

__all__ = ["parse_values"]


def parse_values(name: str, text: str) -> np.ndarray:
    """A number, a comma list or a range start:stop:count (prefix ``log:`` for geometric) -> 1-D array."""
    text = str(text).strip()
    try:
        if ":" in text:
            parts = text.split(":")
            geometric = parts[0] == "log"
            if geometric:
                parts = parts[1:]
            if len(parts) != 3:
                raise ValueError
            start, stop, num = float(parts[0]), float(parts[1]), int(parts[2])
            if num < 1:
                raise ValueError
            if geometric:
                if start <= 0 or stop <= 0:
                    raise ValueError
                return np.geomspace(start, stop, num)
            return np.linspace(start, stop, num)
        vals = np.array([float(v) for v in text.split(",") if v.strip() != ""], dtype=np.float64)
        if vals.size == 0:
            raise ValueError
        return vals
    except ValueError:
        raise ValueError(
            f"Expected {name} as a number, a list like 1,3,8 or a range like 0.5:5:1000, got {name}={text!r}."
        ) from None
