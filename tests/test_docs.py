"""Every code block of README.md and docs/*.md runs, alone, and prints what the page says it prints.

A block is one of (the info string of its fence, and an HTML comment on the line just above it):

- ```python: exec'd in a fresh namespace (a block that needs ``np`` imports it itself);
- ```bash: run by ``bash -euo pipefail`` in a fresh temporary directory, as a user would paste it (the host path
  of first answers as a user has it: ``AMPLIFY_JAX_HOST`` unset); it must exit 0.  ``amplify-jax figures`` runs
  "from a checkout": the directory links to the checkout's benchmarks/ and figures/ (CI installs the package
  without ``-e``, so the command cannot find the scripts from the installed package);
- ```bash under ``<!-- docs-test: server -->``: a command that serves until stopped (``amplify-jax explore``):
  started, its printed URL fetched with the token (the page, and the catalog through the API), then stopped;
- ```text under ``<!-- docs-test: output -->``: what the block above prints; compared token by token, numbers to
  the digits shown (one unit of the last digit shown, so that the host path's last bits cannot flip a rounding);
- any block under ``<!-- docs-test: not run (why) -->``: not run; the list of these is EXPECTED_NOT_RUN, exactly,
  so a new block that no test runs fails here.

Any other block (```toml, an unmarked ```text, no info string) fails :func:`test_every_block_is_run_or_listed`.
docs/architecture.md belongs to the architecture tests: its two Python blocks are one example (the second uses
the bound the first registers), run by ``tests/test_architecture.py``; here they run in turn and its command-line
block runs in-process after them (:func:`test_architecture_example_runs_in_turn`).

Blocks in SLOW are marked ``slow`` (run with ``-m slow``), each with its reason; RUN_ELSEWHERE names blocks that
another test runs and checks (the README's dp_accounting / Opacus blocks: tests/test_rdp_accountant.py).  The rest
of the file aims at about 90 s on 2 quiet cores.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
OWN_TESTS = {"docs/architecture.md"}  # run in turn by test_architecture_example_runs_in_turn
MARK = re.compile(r"^<!--\s*docs-test:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^```(\S*)\s*$")

# A block is named by (file, a string only it contains).
# Why no test runs it.  Exactly these; a new one must be added here, visibly.
EXPECTED_NOT_RUN = {
    ("README.md", "pip install . && amplify-jax demo"): "the set-up commands: CI runs them itself (.ci/run)",
    ("docs/sweeps.md", "#SBATCH"): "a SLURM batch script: it needs a cluster",
}
# Why the block is marked slow (times at a load of ~11 on the 2-core machine, 2026-11-27).
SLOW = {
    ("docs/sweeps.md", "--process-id 1"): "two processes through jax.distributed (a coordinator, two start-ups)",
    ("docs/sweeps.md", "cat > grid.toml"): "a DP-SGD sweep compiles its own program (49 s)",
    ("docs/pld.md", "pld.dpsgd_delta("): "compiles the PLD's delta and Laplace programs (144 s)",
}
# The test that runs the block and checks its values, instead of this file (no second run of the same code).
RUN_ELSEWHERE = {
    ("README.md", "calibrate_dp_mechanism(rdp.Accountant"): "tests/test_rdp_accountant.py::test_readme_section_runs",
    ("README.md", "accountant = RDPAccountant()"): "tests/test_rdp_accountant.py::test_readme_section_runs",
    ("README.md", "acc = pld.Accountant()"): "tests/test_pld_accountant.py::test_readme_pld_block_runs",
    ("README.md", "class AmplifyPldConfig"): "tests/test_pld_accountant.py::test_readme_jax_privacy_block_runs",
}
SETUP = "pip install . && amplify-jax demo\npip install \".[test]\" && python -m pytest\n"


@dataclass
class Block:
    file: str  # relative to the repository root
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    marker: str  # the docs-test comment just above ("" if none)
    output: "Block | None" = None  # the output block that follows it

    @property
    def id(self):
        return f"{self.file}:{self.line}"


def parse(path: Path) -> list[Block]:
    lines = path.read_text().splitlines()
    rel = path.relative_to(ROOT).as_posix()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        assert j < len(lines), f"{rel}:{i + 1}: unclosed code block"
        above = lines[i - 1] if i else ""
        mk = MARK.match(above)
        blocks.append(Block(rel, i + 1, m.group(1), "\n".join(lines[i + 1:j]) + "\n", mk.group(1) if mk else ""))
        i = j + 1
    # an output block belongs to the block before it
    out = []
    for b in blocks:
        if b.marker == "output":
            assert out and out[-1].output is None, f"{b.id}: an output block must follow the block it shows"
            out[-1].output = b
        else:
            out.append(b)
    return out


ALL = [b for f in FILES for b in parse(f)]


def _matches(b, table):
    return [k for k in table if k[0] == b.file and k[1] in b.text]


RUN = [b for b in ALL
       if b.file not in OWN_TESTS and not b.marker.startswith("not run") and not _matches(b, RUN_ELSEWHERE)]


def _param(b):
    marks = [pytest.mark.slow] if _matches(b, SLOW) else []
    return pytest.param(b, id=b.id, marks=marks)


# ------------------------------------------------------------------------------------------------------------
# The rules


def test_every_block_is_run_or_listed():
    """Every block is a kind this file runs, or is listed (with its reason) as not run; the list is exact."""
    for table in (EXPECTED_NOT_RUN, SLOW, RUN_ELSEWHERE):
        for key in table:
            assert len([b for b in ALL if key in _matches(b, table)]) == 1, f"{key} names no block, or several"
    not_run = [b for b in ALL if b.marker.startswith("not run")]
    listed = sorted(k for b in not_run for k in _matches(b, EXPECTED_NOT_RUN))
    assert listed == sorted(EXPECTED_NOT_RUN) and all(_matches(b, EXPECTED_NOT_RUN) for b in not_run), \
        "blocks marked 'docs-test: not run' differ from EXPECTED_NOT_RUN"
    for (file, _), where in RUN_ELSEWHERE.items():
        path, name = where.split("::")
        assert f"def {name}(" in (ROOT / path).read_text(), where
    bad = []
    for b in RUN:
        if b.marker not in ("", "server") or b.lang not in ("python", "bash"):
            bad.append(f"{b.id} ({b.lang or 'no info string'}, marker {b.marker!r})")
        if b.marker == "server" and b.lang != "bash":
            bad.append(f"{b.id}: a server block is a bash block")
    assert not bad, f"blocks that no test runs (mark them, or make them python/bash): {bad}"


def test_readme_opens_with_the_two_set_up_commands():
    """.ci/run and the reviewers read these two commands; they stay the README's first block, as they are."""
    first = ALL[0]
    assert first.file == "README.md" and first.lang == "bash" and first.text == SETUP
    assert first.marker.startswith("not run")


def test_output_blocks_parse():
    """Every output block has something to compare (a check that cannot pass vacuously)."""
    outs = [b.output for b in ALL if b.output is not None]
    assert len(outs) >= 8
    for o in outs:
        assert _tokens(o.text), o.id


# ------------------------------------------------------------------------------------------------------------
# Comparing what a block prints with what the page shows

NUM = r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?"
TOKEN = re.compile(rf"{NUM}|[A-Za-z_][A-Za-z_0-9.-]*|\S")


def _tokens(text):
    return TOKEN.findall(text)


def _unit(doc: str) -> float:
    """One unit of the last digit shown in ``doc`` (a number as written)."""
    mant, _, exp = doc.lower().partition("e")
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    return 10.0 ** (-decimals + (int(exp) if exp else 0))


def _is_num(tok):
    return re.fullmatch(NUM, tok) is not None


def assert_output_matches(shown: Block, printed: str):
    doc, got = _tokens(shown.text), _tokens(printed)
    where = f"{shown.id}: the output shown differs from what the block prints:\n{printed}"
    assert len(doc) == len(got), where
    for d, g in zip(doc, got):
        if _is_num(d) and _is_num(g):
            assert abs(float(d) - float(g)) <= _unit(d) * (1 + 1e-9), f"{where}\n{d} shown, {g} printed"
        else:
            assert d == g, f"{where}\n{d!r} shown, {g!r} printed"


def test_output_comparison_can_fail():
    """The comparison rejects a changed digit, a changed word and a missing value; it accepts the last digit's
    rounding either way."""
    shown = Block("x", 1, "text", "eps 5.6318 at order 4.67 ok\n", "output")
    assert_output_matches(shown, "eps 5.63181 at order 4.6714 ok")
    assert_output_matches(shown, "eps 5.6317 at order 4.68 ok")
    for wrong in ("eps 5.6338 at order 4.67 ok", "eps 5.6318 at order 4.67 infeasible", "eps 5.6318 at order ok"):
        with pytest.raises(AssertionError):
            assert_output_matches(shown, wrong)


# ------------------------------------------------------------------------------------------------------------
# Running the blocks


def _user_env():
    """The environment a user's shell has: the suite's compilation cache and XLA flags (shared programs), but
    the host path of first answers as a user has it."""
    env = dict(os.environ)
    env.pop("AMPLIFY_JAX_HOST", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.mark.parametrize("block", [_param(b) for b in RUN if b.lang == "python"])
def test_python_block(block, monkeypatch, tmp_path):
    monkeypatch.delenv("AMPLIFY_JAX_HOST", raising=False)  # as a user has it
    monkeypatch.chdir(tmp_path)
    ns = {"__name__": "__main__"}
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(block.text, block.id, "exec"), ns)
    if block.output is not None:
        assert_output_matches(block.output, buf.getvalue())


@pytest.mark.parametrize("block", [_param(b) for b in RUN if b.lang == "bash" and b.marker != "server"])
def test_shell_block(block, tmp_path):
    text = block.text
    if "127.0.0.1:12355" in text:  # the distributed sweep's coordinator: a port the OS says is free, in this run
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            text = text.replace("127.0.0.1:12355", f"127.0.0.1:{sock.getsockname()[1]}")
    if "amplify-jax figures" in text:  # run "from a checkout" (the README says so), without writing into it
        for name in ("benchmarks", "figures"):
            (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", text], cwd=tmp_path, env=_user_env(),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{block.id} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    if block.output is not None:
        assert_output_matches(block.output, r.stdout)


@pytest.mark.parametrize("block", [_param(b) for b in RUN if b.marker == "server"])
def test_server_block(block, tmp_path):
    """The command starts a server that prints its URL; the page and the API answer with that URL's token."""
    p = subprocess.Popen(["bash", "-c", block.text], cwd=tmp_path, env=_user_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        url, seen, deadline = None, [], time.monotonic() + 120
        while url is None and time.monotonic() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            seen.append(line)
            m = re.search(r"http://127\.0\.0\.1:\d+/\?token=[\w-]+", line)
            url = m.group(0) if m else None
        assert url, f"{block.id}: no URL printed:\n{''.join(seen)}"
        with urllib.request.urlopen(url, timeout=30) as r:
            assert r.status == 200 and b"<html" in r.read().lower()
        base, token = url.split("/?token=")
        with urllib.request.urlopen(f"{base}/api/catalog?token={token}", timeout=60) as r:
            catalog = json.loads(r.read())
        ids = {b["id"] for g in catalog["groups"] for b in g["bounds"]}
        assert "shuffle.clones" in ids and "dpsgd" in ids
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=30)


def test_architecture_example_runs_in_turn(tmp_path, monkeypatch):
    """docs/architecture.md's example: register (block 1), use (block 2), then its commands in-process (the
    bound is registered in this process only)."""
    from amplify_jax import bounds, cli
    from amplify_jax._core import registry as _registry

    blocks = [b for b in ALL if b.file == "docs/architecture.md"]
    assert [b.lang for b in blocks] == ["python", "python", "bash"]
    monkeypatch.chdir(tmp_path)
    try:
        ns = {"__name__": "__main__"}
        for b in blocks[:2]:
            exec(compile(b.text, b.id, "exec"), ns)
        assert bounds.get("example.advanced-composition").id == "example.advanced-composition"
        for line in blocks[2].text.splitlines():
            argv = shlex.split(line)
            assert argv[0] == "amplify-jax"
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                rc = cli.main(argv[1:])
            assert rc in (0, None) and buf.getvalue().strip(), line
    finally:
        _registry._REGISTRY.pop("example.advanced-composition", None)


def _undefined_names(text: str) -> set[str]:
    """Names a block loads that it neither imports, assigns, binds as an argument, nor finds among builtins."""
    import ast
    import builtins

    tree = ast.parse(text)
    defined = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            defined |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return loaded - defined


def test_no_block_reads_a_name_it_does_not_define():
    """Self-contained Python blocks: every name a block loads is defined in the block or is a builtin (the PLD
    snippet once used ``np`` without importing it). Static, so it holds for the slow blocks and for those run
    elsewhere too."""
    assert _undefined_names("from amplify_jax import pld\npld.dpsgd_epsilon(sigma=np.linspace(0.5, 5, 9))") == {"np"}
    bad = [f"{b.id}: {sorted(_undefined_names(b.text))}" for b in ALL
           if b.lang == "python" and b.file not in OWN_TESTS and _undefined_names(b.text)]
    assert not bad, bad


def test_readme_lists_the_explorer_url_parameters():
    """The README's table of the page's URL parameters names exactly those the page reads (explore.js)."""
    js = (ROOT / "amplify_jax" / "explore" / "static" / "explore.js").read_text()
    read_url = js[js.index("function readURL()"):]
    read_url = read_url[:read_url.index("\n}\n")]
    read = set(re.findall(r'q\.(?:get|has|getAll)\("([\w.]+)"', read_url))
    for group in re.findall(r"for \(const k of \[([^\]]*)\]\) if \(q\.has\(k\)\)", read_url):
        read |= set(re.findall(r'"(\w+)"', group))
    read |= set(re.findall(r'URLSearchParams\(location\.search\)\.get\("(\w+)"\)', js))  # the token
    read = {"p.NAME" if r == "p." else r for r in read}
    text = (ROOT / "README.md").read_text()
    table = text[text.index("| parameter | meaning |"):]
    table = table[:table.index("\n\n")]
    documented = {name for row in table.splitlines()[2:]
                  for name in re.findall(r"`([\w.]+|p\.NAME)`", row.split("|")[1])}
    assert len(read) >= 12 and documented == read, (sorted(documented), sorted(read))


if __name__ == "__main__":  # print what each block prints, to write its output block: python tests/test_docs.py
    for b in RUN:
        if b.output is None:
            continue
        print(f"--- {b.id}")
        if b.lang == "python":
            ns = {"__name__": "__main__"}
            exec(compile(b.text, b.id, "exec"), ns)
        else:
            sys.stdout.write(subprocess.run(["bash", "-euo", "pipefail", "-c", b.text], capture_output=True,
                                            text=True, cwd=tempfile.mkdtemp(), env=_user_env()).stdout)
