"""Curves drawn as SVG by matplotlib, for a page without Plotly (``render``: a JSON request -> ``{"svg": ...}``).

The page sends the series it shows (the current curve and the pinned ones), so that one code path draws both;
matplotlib's object API (a ``Figure`` of its own, no pyplot state) keeps one drawing independent of another.
"""

from __future__ import annotations

import base64
import io
import math

import numpy as np

from ._api import MAX_POINTS

__all__ = ["MAX_SERIES", "render"]

MAX_SERIES = 48  #: curves in one drawing (the current family and the pinned curves)
MAX_TOTAL_POINTS = 24 * MAX_POINTS  #: points in one drawing, all curves together
_DASHES = {"solid": "-", "dashed": "--", "dotted": ":"}


def _text(name: str, value, limit: int = 200) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > limit:
        raise ValueError(f"Expected {name} as a text of at most {limit} characters, got {name}={value!r:.60}.")
    return value.replace("$", r"\$")  # no mathtext: a label is shown as written


def _column(name: str, value, size: int | None) -> np.ndarray:
    ok = isinstance(value, list) and 1 <= len(value) <= MAX_POINTS and (size is None or len(value) == size)
    if ok:
        try:
            a = np.array([np.nan if v is None else v for v in value], dtype=np.float64)
        except (TypeError, ValueError):
            ok = False
    if not ok or any(isinstance(v, (bool, str)) for v in value):
        raise ValueError(f"Expected {name} as a list of 1 to {MAX_POINTS} numbers (or null)"
                         + (f" of the length of x ({size})" if size else "") + f", got {name}={value!r:.60}.")
    return a


def _series(spec) -> list:
    if not isinstance(spec, list) or not 1 <= len(spec) <= MAX_SERIES:
        raise ValueError(f"Expected series as a list of 1 to {MAX_SERIES} curves, got series={spec!r:.60}.")
    out, total = [], 0
    for i, s in enumerate(spec):
        if not isinstance(s, dict):
            raise ValueError(f"Expected series[{i}] as an object {{label, x, y}}, got {s!r:.60}.")
        x = _column(f"series[{i}].x", s.get("x"), None)
        y = _column(f"series[{i}].y", s.get("y"), x.size)
        style = s.get("style", "solid")
        if style not in _DASHES:
            raise ValueError(f"Expected series[{i}].style in {list(_DASHES)}, got style={style!r:.60}.")
        total += x.size
        out.append((_text(f"series[{i}].label", s.get("label")), x, y, _DASHES[style]))
    if total > MAX_TOTAL_POINTS:
        raise ValueError(f"Expected at most {MAX_TOTAL_POINTS} points in one drawing, got {total}.")
    return out


def render(spec) -> dict:
    """Draw ``spec`` = ``{"series": [{"label", "x", "y", "style"}], "xlabel", "ylabel", "title", "logx",
    "logy", "mark": {"x", "label"}, "format"}`` as SVG: ``{"svg": "<svg ...>"}``, or with ``"format": "png"``
    as a PNG (150 dpi) in base64: ``{"png": "iVBOR..."}`` (the page's export); ``{"error": "..."}``."""
    try:
        fmt = spec.get("format", "svg") if isinstance(spec, dict) else "svg"
        if fmt not in ("svg", "png"):
            raise ValueError(f"Expected format 'svg' or 'png', got format={fmt!r:.60}.")
        if fmt == "png":
            return {"png": base64.b64encode(_render(spec, "png")).decode("ascii")}
        return {"svg": _render(spec)}
    except ValueError as exc:
        text = str(exc).strip()
        return {"error": text.splitlines()[0] if text else type(exc).__name__}


def _render(spec, fmt: str = "svg"):
    from matplotlib import rc_context
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, NullLocator

    if not isinstance(spec, dict):
        raise ValueError(f"Expected a JSON object as the render request, got {spec!r:.60}.")
    known = {"series", "xlabel", "ylabel", "title", "logx", "logy", "mark", "format"}
    unknown = [k for k in spec if k not in known]
    if unknown:
        raise ValueError(f"Expected render request keys {', '.join(sorted(known))}, got {unknown[0]!r}.")
    series = _series(spec.get("series"))
    logx, logy = bool(spec.get("logx")), bool(spec.get("logy"))
    with rc_context({"svg.fonttype": "none", "font.size": 10}):
        fig = Figure(figsize=(8.4, 4.6), dpi=100)
        ax = fig.add_axes((0.09, 0.12, 0.89, 0.8))
        for label, x, y, dash in series:
            if logy:
                y = np.where(y > 0, y, np.nan)
            ax.plot(x, y, dash, label=label or None, lw=1.6)
        mark = spec.get("mark")
        if isinstance(mark, dict) and isinstance(mark.get("x"), (int, float)) and math.isfinite(mark["x"]):
            ax.axvline(float(mark["x"]), color="0.3", ls=":", lw=1.2)
            ax.annotate(_text("mark.label", mark.get("label")), (float(mark["x"]), 1.0),
                        xycoords=("data", "axes fraction"), xytext=(4, -12), textcoords="offset points", fontsize=9,
                        color="0.25")
        for axis, set_scale, log in ((ax.xaxis, ax.set_xscale, logx), (ax.yaxis, ax.set_yscale, logy)):
            if log:  # plain tick labels (1e-05, 0.01, 10): mathtext labels cost ~0.3 s a drawing
                set_scale("log")
                axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
                axis.set_minor_locator(NullLocator())  # minor ticks: ~90 Tick objects, 0.2 s
        ax.set_xlabel(_text("xlabel", spec.get("xlabel")))
        ax.set_ylabel(_text("ylabel", spec.get("ylabel")))
        title = _text("title", spec.get("title"), 300)
        if title:
            ax.set_title(title, fontsize=10, loc="left")
        ax.grid(True, which="major", alpha=0.35)
        if len(series) > 1 and any(s[0] for s in series):
            ax.legend(fontsize=8, loc="best", framealpha=0.85)
        buf = io.StringIO() if fmt == "svg" else io.BytesIO()
        fig.savefig(buf, format=fmt, **({"dpi": 150} if fmt == "png" else {}))
    return buf.getvalue()
