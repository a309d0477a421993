"""Curves drawn as SVG by matplotlib, for a page without Plotly (``render``: a JSON request -> ``{"svg": ...}``).

The page sends the series it shows (the current curve and the pinned ones), so that one code path draws both;
matplotlib's object API (a ``Figure`` of its own, no pyplot state) keeps one drawing independent of another.

Readable at any scale: a log axis carries labelled ticks at every data range (``plotting.log_ticks``: decades, or
1-2-5 within a decade, or evenly spaced values when the range is under a factor of 2: at least two labels); the
title wraps to at most :data:`TITLE_LINES` lines (the last one shortened with an ellipsis); points whose status
is not ``ok`` (a fallback, an inversion's infeasible end, a kernel error) carry a marker of their own and a
legend entry.  :func:`view_spec` builds the drawing of a curve answer as the page does, :func:`default_view` a
bound's default view (the test of readable axes renders every registered bound through it).
"""

from __future__ import annotations

import base64
import io
import math
import textwrap

import numpy as np

from ..plotting import log_ticks, tick_label as _tick_label
from ._api import MAX_POINTS, default_request, request

__all__ = ["MAX_SERIES", "SOLVED_GID", "STATUS_MARKERS", "TITLE_LINES", "default_view", "log_ticks", "render",
           "view_spec"]

MAX_SERIES = 48  #: curves in one drawing (the current family and the pinned curves)
MAX_TOTAL_POINTS = 24 * MAX_POINTS  #: points in one drawing, all curves together
_DASHES = {"solid": "-", "dashed": "--", "dotted": ":"}
_SERIES_KEYS = ("label", "cite", "x", "y", "lower", "style", "status")
SOLVED_GID = "explore-solved"  #: the SVG id of the solved answer's mark (a point on the curve, or the target line)
TITLE_WIDTH = 92  #: characters of a title line (the drawing is 8.4 in wide, the title 10 pt)
TITLE_LINES = 3  #: lines of a title at most; a longer one ends with an ellipsis
#: the marker of a point by its status (matplotlib marker, legend text); ``ok`` points have none.  SVG ids
#: ``explore-status-<status>``.
STATUS_MARKERS = {
    "fallback": ("^", "fallback: the theorem's conditions fail, a weaker bound that holds"),
    "infeasible": ("s", "infeasible: no value in the search range meets the target"),
    "at_limit": ("D", "at_limit: the whole search range meets the target"),
    "not_monotone": ("v", "not_monotone: the re-check failed"),
    "max_iter": ("P", "max_iter: the search did not reach its tolerance"),
    "error": ("X", "error: the kernel gave no number"),
    "loose": ("o", "loose: sound, but far above its own lower value"),
}


def wrap_title(title: str, width: int = TITLE_WIDTH, lines: int = TITLE_LINES) -> list:
    """``title`` as at most ``lines`` lines of at most ``width`` characters (the last shortened with "…")."""
    out = []
    for part in title.split("\n"):
        out += textwrap.wrap(part, width) or [""]
    if len(out) > lines:
        out = out[:lines]
        out[-1] = out[-1][:width - 1].rstrip() + "…"
    return out


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
        unknown = [k for k in s if k not in _SERIES_KEYS]
        if unknown:
            raise ValueError(f"Expected series[{i}] keys {', '.join(_SERIES_KEYS)}, got {unknown[0]!r:.60}.")
        x = _column(f"series[{i}].x", s.get("x"), None)
        y = _column(f"series[{i}].y", s.get("y"), x.size)
        lower = None if s.get("lower") is None else _column(f"series[{i}].lower", s.get("lower"), x.size)
        style = s.get("style", "solid")
        if style not in _DASHES:
            raise ValueError(f"Expected series[{i}].style in {list(_DASHES)}, got style={style!r:.60}.")
        total += x.size * (1 if lower is None else 2)
        label, cite = _text(f"series[{i}].label", s.get("label")), _text(f"series[{i}].cite", s.get("cite"))
        status = s.get("status")
        if status is not None and not (isinstance(status, list) and len(status) == x.size and all(
                t is None or t == "ok" or t in STATUS_MARKERS for t in status)):
            raise ValueError(f"Expected series[{i}].status as a list of statuses (ok, {', '.join(STATUS_MARKERS)} "
                             f"or null) of the length of x ({x.size}), got status={status!r:.60}.")
        out.append((" — ".join(t for t in (label, cite) if t), x, y, _DASHES[style], lower, status))
    if total > MAX_TOTAL_POINTS:
        raise ValueError(f"Expected at most {MAX_TOTAL_POINTS} points in one drawing, got {total}.")
    return out


def _finite(name: str, value) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"Expected {name} as a finite number, got {name}={value!r:.60}.")
    return float(value)


def render(spec) -> dict:
    """Draw ``spec`` = ``{"series": [{"label", "cite", "x", "y", "lower", "style", "status"}], "xlabel", "ylabel",
    "title", "logx", "logy", "mark": {"x", "y", "label"}, "format"}`` as SVG (a legend entry reads "label —
    cite"; a series with ``lower`` is a shaded band from lower to y under its line; ``status``, one word a
    point, marks the points not ``ok`` (:data:`STATUS_MARKERS`); the title wraps (``"\\n"`` breaks a line);
    ``mark``: see ``_mark``):
    ``{"svg": "<svg ...>"}``, or with ``"format": "png"``
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
    from matplotlib import rc_context, rcParams  # lazy: matplotlib takes 0.15-0.3 s to import
    from matplotlib.figure import Figure
    from matplotlib.ticker import FixedLocator, FuncFormatter, Locator, NullLocator

    class LogTicks(Locator):  # labelled ticks at any range of a log axis (log_ticks)
        def __call__(self):
            return self.tick_values(*self.axis.get_view_interval())

        def tick_values(self, vmin, vmax):
            return log_ticks(vmin, vmax)

    if not isinstance(spec, dict):
        raise ValueError(f"Expected a JSON object as the render request, got {spec!r:.60}.")
    known = {"series", "xlabel", "ylabel", "title", "logx", "logy", "mark", "format"}
    unknown = [k for k in spec if k not in known]
    if unknown:
        raise ValueError(f"Expected render request keys {', '.join(sorted(known))}, got {unknown[0]!r}.")
    series = _series(spec.get("series"))
    logx, logy = bool(spec.get("logx")), bool(spec.get("logy"))
    title = wrap_title(_text("title", spec.get("title"), 600))
    with rc_context({"svg.fonttype": "none", "font.size": 10}):
        fig = Figure(figsize=(8.4, 4.6), dpi=100)
        ax = fig.add_axes((0.1, 0.12, 0.88, 0.8 - 0.04 * (len(title) - 1)))
        colors = rcParams["axes.prop_cycle"].by_key().get("color") or ["C0"]
        for i, (label, x, y, dash, lower, _status) in enumerate(series):
            color = colors[i % len(colors)]
            if logy:
                y = np.where(y > 0, y, np.nan)
                lower = None if lower is None else np.where(lower > 0, lower, np.nan)
            if lower is None:
                ax.plot(x, y, dash, color=color, label=label or None, lw=1.6)
                continue
            # an upper and a lower value: the band between them, the upper line on top, one colour
            ax.fill_between(x, lower, y, color=color, alpha=0.18, lw=0, zorder=1.5, gid="explore-band")
            ax.plot(x, lower, ":", color=color, lw=0.9, alpha=0.8, zorder=1.8)
            entry = (label + " (shaded: down to its lower value)") if label else None
            ax.plot(x, y, dash, color=color, label=entry, lw=1.6, zorder=2.5)
        flagged = _status_marks(ax, series, logy)
        _mark(ax, spec.get("mark"))
        for axis, set_scale, log in ((ax.xaxis, ax.set_xscale, logx), (ax.yaxis, ax.set_yscale, logy)):
            if log:  # plain tick labels (1e-05, 0.01, 10): mathtext labels cost ~0.3 s a drawing
                set_scale("log")
                axis.set_major_locator(LogTicks())
                axis.set_major_formatter(FuncFormatter(_tick_label))
                axis.set_minor_locator(NullLocator())  # minor ticks: ~90 Tick objects, 0.2 s
        if not logx and not any(np.isfinite(s[1]).any() for s in series):
            ax.xaxis.set_major_locator(FixedLocator([0.0, 0.5, 1.0]))
        ax.set_xlabel(_text("xlabel", spec.get("xlabel")))
        ax.set_ylabel(_text("ylabel", spec.get("ylabel")))
        if title and title != [""]:
            ax.set_title("\n".join(title), fontsize=10, loc="left")
        ax.grid(True, which="major", alpha=0.35)
        if flagged or (any(s[0] for s in series) and (
                len(series) > 1 or any(s[4] is not None for s in series)
                or any(isinstance(t, dict) and t.get("cite") for t in spec["series"]))):
            ax.legend(fontsize=8, loc="best", framealpha=0.85)
        buf = io.StringIO() if fmt == "svg" else io.BytesIO()
        fig.savefig(buf, format=fmt, **({"dpi": 150} if fmt == "png" else {}))
    return buf.getvalue()


def _status_marks(ax, series, logy: bool) -> int:
    """A marker on each point whose status is not ``ok`` (one legend entry per status shown); a point without a
    finite value (an error's +inf) is marked at the top edge.  Returns how many statuses are shown."""
    shown = 0
    for name, (marker, text) in STATUS_MARKERS.items():
        xs, ys, top = [], [], []
        for _label, x, y, _dash, _lower, status in series:
            if status is None:
                continue
            hit = np.array([t == name for t in status])
            if not hit.any():
                continue
            good = hit & np.isfinite(y) & ((y > 0) if logy else True)
            xs.append(x[good]), ys.append(y[good]), top.append(x[hit & ~good])
        if not xs:
            continue
        shown += 1
        x, y, t = np.concatenate(xs), np.concatenate(ys), np.concatenate(top)
        style = {"marker": marker, "ms": 6, "mfc": "white", "mec": "#c0392b", "mew": 1.3, "ls": "none", "zorder": 3.5}
        if x.size:
            ax.plot(x, y, label=text, gid=f"explore-status-{name}", **style)
        if t.size:
            ax.plot(t, np.full(t.size, 0.985), transform=ax.get_xaxis_transform(), clip_on=False,
                    label=f"{name}: no finite value (at the top edge)", gid=f"explore-status-{name}-top", **style)
    return shown


def view_spec(c: dict, logx: bool | None = None, logy: bool | None = None, title: str | None = None) -> dict:
    """The render request of a curve answer (:func:`~amplify_jax.explore.curve`) as the page builds it: one
    series per curve (its lower value, if any, as the band under it), the statuses, ``x.log`` and the answer's
    ``view.logy`` unless given, the title "bound — cite" over the theorem."""
    series = []
    for s in c["series"]:
        label = c["bound"] if len(c["series"]) == 1 else s["label"]
        out = {"label": label, "cite": c.get("cite"), "x": c["x"]["values"], "y": s["y"], "style": "solid",
               "status": s.get("status")}
        for k, v in (s.get("outputs") or {}).items():
            if "lower" in k and isinstance(v, list) and v and not isinstance(v[0], bool):
                out["lower"] = v
                break
        series.append(out)
    ylabel = c["symbol"] + (" (lower bound)" if c.get("side") == "lower" else "")
    if title is None:
        title = f"{c['bound']} — {c.get('cite', '')}\n{c.get('theorem', '')}"
    return {"series": series, "xlabel": c["x"]["name"], "ylabel": ylabel, "title": title,
            "logx": bool(c["x"]["log"] if logx is None else logx),
            "logy": bool(c.get("view", {}).get("logy") if logy is None else logy)}


def default_view(bound_id, points=None) -> dict:
    """A bound's default view as the page first shows it: ``{"request", "curve", "spec"}`` (``render(spec)``
    draws it; ``curve`` may be ``{"error": ...}``, then ``spec`` is None)."""
    req = default_request(bound_id, points)
    c = request("curve", req)
    return {"request": req, "curve": c, "spec": None if "error" in c else view_spec(c)}


def _mark(ax, mark) -> None:
    """The solved answer: ``{"x", "y", "label"}`` a point on the curve (the solved parameter is the x axis),
    ``{"y", "label"}`` a horizontal line at the target, ``{"x", "label"}`` a vertical line."""
    if mark is None:
        return
    if not isinstance(mark, dict) or any(k not in ("x", "y", "label") for k in mark):
        raise ValueError(f"Expected mark as an object {{x, y, label}}, got mark={mark!r:.60}.")
    x, y = _finite("mark.x", mark.get("x")), _finite("mark.y", mark.get("y"))
    label = _text("mark.label", mark.get("label"))
    note = {"fontsize": 9, "color": "0.2", "textcoords": "offset points",
            "bbox": {"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.8}}
    if x is not None:
        ax.axvline(x, color="0.3", ls=":", lw=1.2)
    if x is not None and y is not None:
        ax.plot([x], [y], "o", ms=7, mfc="none", mec="black", mew=1.6, zorder=4, gid=SOLVED_GID)
        ax.annotate(label, (x, y), xytext=(7, 7), **note)
    elif y is not None:
        ax.axhline(y, color="0.3", ls="--", lw=1.1, zorder=3, gid=SOLVED_GID)
        ax.annotate(label, (0.0, y), xycoords=("axes fraction", "data"), xytext=(4, 4), **note)
    elif x is not None:
        ax.annotate(label, (x, 1.0), xycoords=("data", "axes fraction"), xytext=(4, -12), **note)
