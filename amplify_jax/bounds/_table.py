"""The README's table of bounds, generated from the registry (a test checks that the README is current)."""

from __future__ import annotations

import re
from pathlib import Path

from .._core.registry import list as list_bounds

__all__ = ["markdown_table"]

_ARROW = {1: "↑", -1: "↓", 0: ""}


def _param(p) -> str:
    return p.name + _ARROW[p.monotone]


def markdown_table() -> str:
    """A Markdown table of every registered bound: id, answer, parameters (↑/↓: the answer grows/shrinks with
    it, so it can be solved for), paper and theorem."""
    rows = ["| id | answers | parameters | paper | theorem |", "|---|---|---|---|---|"]
    for b in list_bounds():
        answer = b.answer + (" (lower bound)" if b.side == "lower" else "")
        params = ", ".join(_param(p) for p in b.params)
        rows.append(f"| `{b.id}` | {answer} | {params} | {b.paper} | {b.theorem} |")
    return "\n".join(rows) + "\n"


def update_readme(path) -> bool:
    """Rewrite the table between ``<!-- bounds-table -->`` markers of ``path``; True if it changed."""
    p = Path(path)
    text = p.read_text()
    new = re.sub(r"(<!-- bounds-table -->\n).*?(<!-- /bounds-table -->)",
                 lambda m: m.group(1) + markdown_table() + m.group(2), text, flags=re.S)
    if new != text:
        p.write_text(new)
    return new != text


if __name__ == "__main__":  # python -m amplify_jax.bounds._table README.md
    import sys

    print("updated" if update_readme(sys.argv[1] if len(sys.argv) > 1 else "README.md") else "current")
