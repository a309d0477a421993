"""Parsing of grid values written as text (command-line flags, TOML strings): numbers, lists and ranges."""

from __future__ import annotations

import numpy as np

__all__ = ["parse_values", "join_negative_values"]


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


def _negative_value(text: str) -> bool:
    """Whether a word that starts with "-" is a value (a number, list or range: ``-inf``, ``-1e-3,2``, ``-3:5:10``),
    which argparse would otherwise read as an option."""
    if not text.startswith("-") or text.startswith("--"):
        return False
    try:
        parse_values("value", text)
    except ValueError:
        return False
    return True


def join_negative_values(argv: list[str]) -> list[str]:
    """``--flag -inf`` -> ``--flag=-inf`` (argparse reads a word starting with "-" as an option unless it is a
    plain negative number like -3): every flag followed by a negative number, list or range, up to ``--``.
    Flags are also spelled with dashes (``--target_epsilon`` -> ``--target-epsilon``): - and _ alike."""
    out, i = [], 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return out + list(argv[i:])
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            word = name.replace("_", "-") + eq + value
        if (word.startswith("--") and "=" not in word and i + 1 < len(argv)
                and _negative_value(argv[i + 1])):
            out.append(f"{word}={argv[i + 1]}")
            i += 2
            continue
        out.append(word)
        i += 1
    return out
