"""The explorer's drawings can be read (issue 27 item 3): labelled ticks on every axis at any data range, a default
view per bound that shows its range (log y where the answer spans decades), titles that fit, points whose status
is not ok marked.

Each bound's default view is drawn through the server-side renderer (``explore/_render.py``, what ``/api/render``
answers; no browser) with small curves (4 points), and the SVG's tick labels are parsed.  Every registered bound:
``test_default_view_of_every_bound_has_labelled_axes`` (slow: 50 s to 5 min on the 2-core machine, by load and
compile cache); a handful of representative bounds (the default bound, the traffic scrambler, DP-SGD, SecRDP,
a bound with fallback points) in the fast test.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from amplify_jax import bounds, explore
from amplify_jax.explore import _render
from amplify_jax.explore._render import TITLE_LINES, TITLE_WIDTH, default_view, log_ticks, wrap_title

SVG = "{http://www.w3.org/2000/svg}"
POINTS = 4
REPRESENTATIVE = ("shuffle.clones", "traffic.scrambler", "dpsgd", "secrdp.step", "network.complete-graph-sum")
JS = Path(explore.__file__).parent / "static" / "explore.js"


def tick_labels(svg: str) -> dict:
    """{"x": [...], "y": [...]}: the text of each labelled major tick that matplotlib drew (``xtick_N`` groups)."""
    out = {"x": [], "y": []}
    for g in ET.fromstring(svg).iter(SVG + "g"):
        m = re.fullmatch(r"([xy])tick_[0-9]+", g.get("id", ""))
        if m:
            text = "".join(t for e in g.iter(SVG + "text") for t in e.itertext()).strip()
            if text:
                out[m.group(1)].append(text)
    return out


def _check_view(bound_id: str) -> dict:
    v = default_view(bound_id, points=POINTS)
    assert v["spec"] is not None, (bound_id, v["curve"])
    svg = explore.render(v["spec"])["svg"]
    labels = tick_labels(svg)
    for axis in "xy":
        assert len(labels[axis]) >= 2, (bound_id, axis, labels, v["spec"]["logx"], v["spec"]["logy"])
        assert len(set(labels[axis])) == len(labels[axis]), (bound_id, axis, labels)  # no two labels alike
    flagged = {s for series in v["curve"]["series"] for s in series["status"] if s != "ok"}
    for name in flagged:  # each status not ok is marked (on the curve, or at the top edge without a value)
        assert f'id="explore-status-{name}' in svg, (bound_id, name)
    if not flagged:
        assert "explore-status-" not in svg
    return v


# ----------------------------------------------------------------------------------------------------------
# the tick rule


@pytest.mark.parametrize("lo, hi", [(1e-3, 1), (0.2, 0.9), (0.5, 0.7), (1.01, 1.02), (3, 4), (0.3, 3), (1e-6, 1e-6),
                                    (1e-300, 1e300), (0.999, 1.001), (7.5, 9.9), (2e-7, 3.1e-7), (1e5, 1e9)])
def test_log_ticks_at_least_two_inside_any_range(lo, hi):
    t = log_ticks(lo, hi)
    inside = t[(t >= lo * (1 - 1e-9)) & (t <= max(hi, lo * 1.001) * (1 + 1e-9))]
    assert 2 <= inside.size == t.size <= 10, (lo, hi, t)
    assert np.all(np.diff(t) > 0)
    assert len({_render._tick_label(v) for v in t}) == t.size  # labels differ


def test_log_ticks_decades_then_125():
    assert list(log_ticks(1e-3, 1)) == [1e-3, 1e-2, 1e-1, 1.0]
    assert list(log_ticks(0.3, 3)) == [0.5, 1.0, 2.0]
    assert list(log_ticks(0.2, 0.9)) == [0.2, 0.5]
    assert len(log_ticks(1e-300, 1e300)) <= 9
    assert [_render._tick_label(v) for v in (1e-5, 0.02, 300, 1.5e6)] == ["1e-5", "0.02", "300", "1.5e6"]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_page_log_ticks_equal_the_renderers():
    """explore.js's logTicks (Plotly's tick values) follows the renderer's rule (node runs the function)."""
    src = JS.read_text()
    start = src.index("function logTicks(")
    depth, i = 0, src.index("{", start)
    while True:
        depth += {"{": 1, "}": -1}.get(src[i], 0)
        if depth == 0:
            break
        i += 1
    ranges = [(1e-3, 1), (0.2, 0.9), (0.5, 0.7), (3, 4), (0.3, 3), (1e5, 1e9), (1e-300, 1e300), (7.5, 9.9)]
    script = src[start:i + 1] + f"\nconsole.log(JSON.stringify({json.dumps(ranges)}.map(([a, b]) => logTicks(a, b))));"
    got = json.loads(subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True).stdout)
    for (lo, hi), js in zip(ranges, got):
        np.testing.assert_allclose(js, log_ticks(lo, hi), rtol=1e-9, err_msg=f"{lo}..{hi}")


# ----------------------------------------------------------------------------------------------------------
# the renderer


@pytest.mark.parametrize("logx, logy", [(True, True), (False, True), (True, False), (False, False)])
@pytest.mark.parametrize("lo, hi", [(1e-3, 1.0), (0.2, 0.9), (1.01, 1.02), (10, 12), (1e-12, 1e40)])
def test_render_labels_each_axis_at_any_range(lo, hi, logx, logy):
    x = list(np.geomspace(lo, hi, 5))
    svg = explore.render({"series": [{"label": "a", "x": x, "y": x[::-1]}], "logx": logx, "logy": logy})["svg"]
    labels = tick_labels(svg)
    assert len(labels["x"]) >= 2 and len(labels["y"]) >= 2, labels


def test_render_marks_points_by_status_and_refuses_bad_status():
    x, y = [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, None]
    svg = explore.render({"series": [{"label": "a", "x": x, "y": y,
                                      "status": ["ok", "fallback", "infeasible", "error"]}]})["svg"]
    for name in ("fallback", "infeasible"):
        assert f'id="explore-status-{name}"' in svg
    assert 'id="explore-status-error-top"' in svg  # no value: at the top edge
    assert "fallback: the theorem" in svg  # a legend entry
    plain = explore.render({"series": [{"label": "a", "x": x, "y": y, "status": ["ok"] * 4}]})["svg"]
    assert "explore-status-" not in plain
    assert "status" in explore.render({"series": [{"x": x, "y": y, "status": ["ok"]}]})["error"]
    assert "status" in explore.render({"series": [{"x": x, "y": y, "status": ["ok", "bogus", "ok", "ok"]}]})["error"]


def test_title_wraps_to_fit():
    long = "shuffle.x — FMT 2021, Thm 3.2\n" + " ".join(["condition"] * 50)
    lines = wrap_title(long)
    assert len(lines) == TITLE_LINES and all(len(t) <= TITLE_WIDTH for t in lines) and lines[-1].endswith("…")
    assert wrap_title("short") == ["short"]
    svg = explore.render({"series": [{"x": [1, 2], "y": [1, 2]}], "title": long})["svg"]
    assert "condition…" in svg and "shuffle.x — FMT 2021, Thm 3.2" in svg


# ----------------------------------------------------------------------------------------------------------
# default views


def test_catalog_names_each_default_view():
    for g in explore.catalog()["groups"]:
        for b in g["bounds"]:
            v = b["view"]
            assert v["x"] in b["axes"] and v["lo"] < v["hi"], (b["id"], v)


def test_default_bound_default_view_is_log_y():
    """The page's first view (shuffle.clones along eps0): eps from ~1e-3 to ~10, drawn on a log y axis."""
    v = _check_view("shuffle.clones")
    assert v["request"]["x"] == "eps0" and v["curve"]["view"]["logy"] and v["spec"]["logy"]
    assert v["curve"]["view"]["y_decades"] > 3
    labels = tick_labels(explore.render(v["spec"])["svg"])
    assert {"0.001", "0.01", "0.1", "1"} <= set(labels["y"]), labels


@pytest.mark.parametrize("bound_id", REPRESENTATIVE)
def test_default_view_has_labelled_axes(bound_id):
    _check_view(bound_id)


@pytest.mark.slow
def test_default_view_of_every_bound_has_labelled_axes():
    bad = []
    for b in bounds.list():
        try:
            _check_view(b.id)
        except AssertionError as exc:
            bad.append(f"{b.id}: {exc}")
    assert not bad, "\n".join(bad)
