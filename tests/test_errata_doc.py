"""docs/errata.md against the code: every anchor a docstring cites exists, no docstring or comment cites the
papers' ERRATA.md (outside the project) any more, and every test and function the page names exists.

Pure text (ast/tokenize on the sources, no JAX): fast.
"""

from __future__ import annotations

import ast
import io
import math
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "errata.md"
PKG = ROOT / "amplify_jax"

# Files left to others, not edited when the citations were moved to docs/errata.md: modules another helper was
# editing at the time (amplify_jax/accounting/rdp.py, _subsampled_gaussian.py, accountants.py, sweep/*).  None of them cited
# ERRATA.md then, so the list is empty; a file named here may still cite it anywhere.
LEFT_TO_OTHERS: frozenset[str] = frozenset()

# Registry strings (a Bound's ``notes`` and ``theorem``) are run-time data that users read (``amplify-jax bounds
# --json``, the explorer, the README's generated table): they cite docs/errata.md too, since 2026-11-26.  A file
# named here could keep "ERRATA" in such strings; none does.
RUNTIME_STRINGS_MAY_CITE: frozenset[str] = frozenset()

ANCHOR_CITE = re.compile(r"docs/errata\.md#([A-Za-z0-9_-]+)")
TEST_REF = re.compile(r"(tests/[\w/]+\.py)::(\w+)")
CODE_REF = re.compile(r"(amplify_jax/[\w/]+\.py)::(\w+)")


def _doc() -> str:
    return DOC.read_text(encoding="utf-8")


def _entries() -> dict[str, str]:
    """Entry id (the text of a '### E-...' heading, lower case, i.e. its Markdown anchor) -> its text."""
    parts = re.split(r"^### (E-[A-Za-z0-9-]+)[ \t]*$", _doc(), flags=re.M)
    ids = [p.lower() for p in parts[1::2]]
    assert len(ids) == len(set(ids)), "duplicate entry ids in docs/errata.md"
    return dict(zip(ids, parts[2::2]))


def _sources():
    for path in sorted(PKG.rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")


def _docstring_lines(src: str) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def _errata_mentions(src: str):
    """(kind, line) of every 'ERRATA' in a comment, a docstring or another string literal (not identifiers)."""
    doc_lines = _docstring_lines(src)
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if "ERRATA" not in tok.string or tok.type == tokenize.NAME:
            continue
        if tok.type == tokenize.COMMENT:
            yield "comment", tok.start[0]
        elif tok.type == tokenize.STRING and tok.start[0] in doc_lines:
            yield "docstring", tok.start[0]
        else:
            yield "string", tok.start[0]


def test_entries_are_parsed():
    entries = _entries()
    assert len(entries) >= 25
    for family in ("network", "traffic", "checkin", "secrdp", "ref"):
        assert any(k.startswith(f"e-{family}-") for k in entries), family


def test_every_cited_anchor_exists():
    entries = _entries()
    cited = {}
    for rel, src in _sources():
        for m in ANCHOR_CITE.finditer(src):
            cited.setdefault(m.group(1), []).append(rel)
    assert cited, "no module cites docs/errata.md"
    missing = {a: files for a, files in cited.items() if a not in entries}
    assert not missing, f"anchors cited in amplify_jax/ but absent from docs/errata.md: {missing}"
    # links inside the page
    inner = set(re.findall(r"\]\(#([A-Za-z0-9_-]+)\)", _doc()))
    assert inner <= set(entries), sorted(inner - set(entries))


def test_no_docstring_or_comment_cites_the_papers_errata_file():
    bad = []
    for rel, src in _sources():
        if rel in LEFT_TO_OTHERS:
            continue
        if "shared/papers/ERRATA" in src:
            bad.append((rel, "path to shared/papers/ERRATA.md"))
        for kind, line in _errata_mentions(src):
            if kind == "string" and rel in RUNTIME_STRINGS_MAY_CITE:
                continue
            bad.append((rel, kind, line))
    assert not bad, f"cite docs/errata.md#<id> instead of ERRATA(.md): {bad}"


def test_allow_lists_name_existing_files():
    for rel in LEFT_TO_OTHERS | RUNTIME_STRINGS_MAY_CITE:
        assert (ROOT / rel).is_file(), rel


def test_every_test_named_in_the_doc_exists():
    refs = set(TEST_REF.findall(_doc()))
    assert len(refs) >= 30
    missing = []
    for rel, name in sorted(refs):
        path = ROOT / rel
        if not path.is_file() or not re.search(rf"^\s*def {name}\(", path.read_text(encoding="utf-8"), re.M):
            missing.append(f"{rel}::{name}")
    assert not missing, f"tests named in docs/errata.md that do not exist: {missing}"


def test_every_function_named_in_the_doc_exists():
    refs = set(CODE_REF.findall(_doc()))
    assert refs
    missing = []
    for rel, name in sorted(refs):
        path = ROOT / rel
        pattern = rf"^\s*(def|class) {name}\b|^{name}\s*="
        if not path.is_file() or not re.search(pattern, path.read_text(encoding="utf-8"), re.M):
            missing.append(f"{rel}::{name}")
    assert not missing, f"functions named in docs/errata.md that do not exist: {missing}"


@pytest.mark.parametrize("entry", sorted(_entries()))
def test_every_entry_names_code_and_a_test(entry):
    text = _entries()[entry]
    assert CODE_REF.search(text) or "amplify_jax." in text, f"{entry}: which code?"
    assert TEST_REF.search(text) or re.search(r"no test yet", text, re.I), f"{entry}: which test?"


def test_project_findings_are_listed():
    entries = _entries()
    thm3, rate = entries["e-traffic-thm3"], entries["e-checkin-rate"]
    assert "1.47174" in thm3 and "1.40415" in thm3
    assert "k/n" in rate and "gamma" in rate


def test_thm3_numbers_follow_from_the_formulas():
    """The two numbers of E-traffic-thm3, recomputed: Thm 3 as printed and the exact worst case at App. C's
    configuration (the hand computation of tests/test_traffic.py::test_thm3_hand_computed_counterexample),
    T = 3, n = 3, d = 1, sigma = 0.3."""
    T, n, d, sigma = 3, 3, 1, 0.3
    sb, r = 1 - sigma, sigma / (T - 1)
    num = den = 0.0
    for k in range(min(d, n - 1) + 1):
        c = math.comb(d, k) * math.comb(n - 1, k) * sb**k * r ** (n - k - 1)
        num += c * (sb + k * r * r / sb)
        den += c * (r + k * r * r / sb)
    printed = math.log(num / den)
    exact = math.log((sb * r**2 / 2 + (2 * sb**2 * r + r**3) / 3) / (r**3 / 2 + (2 * sb * r**2 + r**3) / 3))
    local = math.log(sb * (T - 1) / sigma)
    text = _entries()["e-traffic-thm3"]
    assert f"{printed:.5f}" == "1.40415" and f"{exact:.5f}" == "1.47174" and f"{local:.5f}" == "1.54045"
    for v in (printed, exact, local):
        assert f"{v:.5f}" in text
    assert printed < exact <= local
