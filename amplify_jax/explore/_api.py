"""The explorer's JSON interface: ``catalog``, ``curve``, ``solve`` and ``request`` (pure functions, no server).

Every answer is a dict of JSON values (lists, floats, strings; a non-finite number becomes ``null``).  A bad
request (a value outside its parameter's domain, an unknown bound or parameter, a grid over the cap) answers
``{"error": "<one line naming the parameter and the value>"}``: the registry's own validation
(:mod:`amplify_jax.bounds`) speaks, never a traceback.
"""

from __future__ import annotations

import math
import os
import re
import time

import numpy as np

from .. import bounds
from ..bounds import DECREASING, INCREASING, Graph, Integer, Orders, Real
from .._core.status import Status, status_names

__all__ = ["MAX_POINTS", "MAX_CURVES", "MAX_ORDERS", "MAX_GRAPH_USERS", "DEFAULT_POINTS", "LOGY_DECADES", "catalog",
           "curve", "default_request", "solve", "request"]

MAX_POINTS = 2000  #: points (x values x curves x Rényi orders) that one curve request may evaluate
MAX_CURVES = 12  #: values of the family parameter in one request
MAX_ORDERS = 64  #: Rényi orders of an RDP bound in one request
MAX_GRAPH_USERS = 1000  #: users of a graph given to the explorer (the SecRDP kernels are cubic in them)
DEFAULT_POINTS = 200  #: x values of a curve when only its range is given
LOG_DECADES = 3  #: a slider or axis spanning at least 10**3 is log-scaled
SLIDER_DECADES = 6  #: a log slider reaches at most 10**6 either side of the parameter's example value
X_RANGE_DECADES = 2  #: the default x axis of a log-scaled parameter: 10**2 either side of its example value
LOGY_DECADES = 1.5  #: a curve whose positive values span more than 10**1.5 is drawn on a log y axis by default

#: the papers' subpackages, in the order the page lists them, with the words the page groups them under
FAMILIES = {
    "shuffle": "Shuffling",
    "traffic": "Communication patterns (scramblers, dummies)",
    "checkin": "Self check-in",
    "network": "Network DP (token walks)",
    "secrdp": "Decor / SecRDP (correlated noise)",
    "accounting": "DP-SGD and mechanism accounting (Rényi DP)",
    "pld": "DP-SGD accounting (privacy-loss distributions)",
    "rdp": "Rényi DP curves",
}
GRAPH_EXAMPLES = ("ring:16", "torus:4x4", "complete:16", "star:16", "random-regular:d=4,n=200,seed=7",
                  "erdos-renyi:n=100,p=0.1,seed=1")
_GRAPH_SPEC = re.compile(r"^(ring|complete|star|torus|random-regular|erdos-renyi):[0-9a-z=,. ]{1,80}$")
_PAIR = {"epsilon": "delta", "delta": "epsilon", "rdp": "orders"}  # the parameter at which the answer is given
_SYMBOL = {"epsilon": "ε", "delta": "δ", "rdp": "RDP"}
_STATUS_TEXT = {
    Status.OK: "ok",
    Status.INFEASIBLE: "no value in the search range meets the target: the value is the range's best end",
    Status.AT_LIMIT: "the whole search range meets the target: the value is the range's extreme end",
    Status.NOT_MONOTONE: "the re-check at the returned value failed (the bound is not monotone there)",
    Status.MAX_ITER: "feasible, but the search did not reach its tolerance",
    Status.FALLBACK: "the theorem's conditions fail: a weaker bound that holds is shown",
    Status.ERROR: "the kernel gave no number: the safe value is shown",
    Status.LOOSE: "sound, but its own lower value is far below it: the truth may be well under the value shown",
}


# ----------------------------------------------------------------------------------------------------------
# Values from JSON or a query string


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(name: str, value) -> float:
    """One number: a JSON number or a numeric string (from a query string)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:  # an int beyond float range
            pass
    elif isinstance(value, str) and 0 < len(value) <= 64:
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise ValueError(f"Expected {name} to be a number, got {name}={_short(value)}.")


def _numbers(name: str, value, limit: int) -> np.ndarray:
    """A list of numbers (a JSON list, or a comma-separated string), 1 to ``limit`` of them."""
    if isinstance(value, str):
        items = [v for v in value.split(",") if v.strip()] if len(value) <= 64 * limit else None
    elif isinstance(value, (list, tuple)):
        items = list(value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        items = [value]
    else:
        items = None
    if items is None or not 1 <= len(items) <= limit:
        raise ValueError(f"Expected {name} as a list of 1 to {limit} numbers, got {name}={_short(value)}.")
    return np.array([_number(name, v) for v in items], dtype=np.float64)


def _flag(name: str, value) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("0", "1", "true", "false", "yes", "no", "on", "off"):
        return value.strip().lower() in ("1", "true", "yes", "on")
    raise ValueError(f"Expected {name} to be true or false, got {name}={_short(value)}.")


def _graph_users(kind: str, body: str) -> int | None:
    """Users of a graph spec (None where the spec is malformed: the library's parser then says why)."""
    if kind in ("ring", "complete", "star"):
        return int(body) if body.isdigit() else None
    if kind == "torus":
        dims = body.split("x")
        if not all(d.isdigit() for d in dims) or len(dims) not in (1, 2):
            return None
        return int(dims[0]) ** 2 if len(dims) == 1 else int(dims[0]) * int(dims[1])
    m = re.search(r"(?:^|,)\s*n\s*=\s*([0-9]+)", body)
    return int(m.group(1)) if m else None


def _graph_spec(name: str, value) -> str:
    """A graph spec string, never a path: the explorer reads no file of the machine."""
    text = value.strip().lower() if isinstance(value, str) else ""
    m = _GRAPH_SPEC.match(text)
    if not m or os.path.lexists(value):
        raise ValueError(f"Expected {name} as a graph spec ({', '.join(GRAPH_EXAMPLES)}; the explorer opens no "
                         f"files), got {name}={_short(value)}.")
    users = _graph_users(m.group(1), text.partition(":")[2].strip())
    if users is not None and users > MAX_GRAPH_USERS:
        raise ValueError(f"Expected a graph of at most {MAX_GRAPH_USERS} users in the explorer, got {name}="
                         f"{value!r} ({users} users).")
    return text


def _fixed_value(bound, name: str, value):
    """One fixed parameter's value, validated by the registry's domain of it."""
    d = bound.param(name).domain
    if isinstance(d, Orders):
        return d.check(name, _numbers(name, value, MAX_ORDERS))
    if isinstance(d, (Real, Integer)):
        if isinstance(value, (list, tuple)):
            raise ValueError(f"Expected one value for {name} (several go on the x axis or in the family), "
                             f"got {name}={_short(value)}.")
        return d.check(name, _number(name, value))
    if isinstance(d, Graph):
        spec = _graph_spec(name, value)
        d.check(name, spec)
        return spec
    if not isinstance(value, str):
        raise ValueError(f"Expected {name} to be one of {list(getattr(d, 'values', ()))}, got {name}={_short(value)}.")
    return d.check(name, value)


def _example(bound, name: str):
    if name in bound.example:
        return bound.example[name]
    return bound.param(name).default


def _resolve(bound, params, skip=()) -> dict:
    """Every parameter of ``bound`` but ``skip``: the given value, else the bound's example (or default)."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise ValueError(f"Expected params as an object {{name: value}}, got params={_short(params)}.")
    names = [p.name for p in bound.params]
    for k in params:
        if k not in names:
            raise ValueError(f"Expected parameters of {bound.id} ({', '.join(names)}), got {k}={_short(params[k])}.")
    out = {}
    for p in bound.params:
        if p.name in skip:
            continue
        out[p.name] = _fixed_value(bound, p.name, params[p.name] if p.name in params else _example(bound, p.name))
    return out


def _jsonable(v):
    """Arrays and NumPy scalars as JSON values: lists of floats, None where not finite."""
    a = np.asarray(v)
    if a.dtype.kind in "US":
        return a.tolist()
    if a.dtype.kind == "b":
        return a.tolist()
    f = a.astype(np.float64)
    if f.ndim == 0:
        return float(f) if math.isfinite(f) else None
    obj = f.astype(object)
    obj[~np.isfinite(f)] = None
    return obj.tolist()


def _params_json(vals: dict) -> dict:
    return {k: (v if isinstance(v, str) else _jsonable(v)) for k, v in vals.items()}


def _error(exc: Exception) -> dict:
    text = str(exc).strip()
    return {"error": text.splitlines()[0] if text else type(exc).__name__}


# ----------------------------------------------------------------------------------------------------------
# The catalog


def _slider(p, value) -> tuple:
    """(lo, hi, log) of the slider of a numeric parameter: inside its domain, around its example value."""
    d = p.domain
    integer = isinstance(d, Integer)
    lo, hi = float(d.lo), float(d.hi)
    a, b = (float(v) for v in p.search) if p.search is not None else (lo, hi)
    v = float(value)
    if a <= 0:  # a domain from 0: a log slider starts a few decades below the example value
        first = (v if v > 0 else b) * 10.0 ** -SLIDER_DECADES
        first = max(1.0, math.ceil(first)) if integer else first
        log = b / first >= 10.0 ** LOG_DECADES
        if log:
            a = first
    else:
        log = b / a >= 10.0 ** LOG_DECADES
    if log and v > 0:
        a, b = max(a, v * 10.0 ** -SLIDER_DECADES), min(b, v * 10.0 ** SLIDER_DECADES)
    if isinstance(d, Real) and d.lo_open and a <= lo:
        a = lo + (b - lo) * 1e-3
    if isinstance(d, Real) and d.hi_open and b >= hi:
        b = hi * (1 - 1e-3) if log else hi - (hi - a) * 1e-3
    if integer:
        a, b = float(max(math.ceil(a), d.lo)), float(min(math.floor(b), d.hi))
    if v > b:
        b = v
    if 0 < v < a or (not log and v < a):
        a = v
    if not b > a:
        a, b, log = lo, hi, False
    return a, b, log


def _x_range(a: float, b: float, log: bool, value: float, integer: bool) -> list:
    if log and value > 0:
        lo, hi = max(a, value * 10.0 ** -X_RANGE_DECADES), min(b, value * 10.0 ** X_RANGE_DECADES)
    else:
        lo, hi = a, b
    if integer:
        lo, hi = float(math.ceil(lo)), float(math.floor(hi))
    return [lo, hi] if hi > lo else [a, b]


def _param_info(bound, p) -> dict:
    d = p.domain
    value = _example(bound, p.name)
    info = {"name": p.name, "doc": p.doc, "domain": d.describe(), "required": p.required}
    if isinstance(d, (Real, Integer)):
        integer = isinstance(d, Integer)
        a, b, log = _slider(p, value)
        info.update(kind="integer" if integer else "real", lo=float(d.lo), hi=float(d.hi),
                    lo_open=bool(getattr(d, "lo_open", False)), hi_open=bool(getattr(d, "hi_open", False)),
                    integer=integer, log=log, slider=[a, b], x_range=_x_range(a, b, log, float(value), integer),
                    value=float(value))
        smaller = {INCREASING: "low", DECREASING: "high"}.get(p.monotone)
        info["monotone"] = {INCREASING: "increasing", DECREASING: "decreasing"}.get(p.monotone)
        info["smaller_answer_at"] = smaller  # the end of the slider where the answer (eps, delta, RDP) is smaller
        # the end that means more privacy (None for the other half of the (eps, delta) pair: not a knob)
        info["more_privacy_at"] = None if p.name == _PAIR[bound.answer] else smaller
        info["solvable"] = p.name in bound.solvable
    elif isinstance(d, Orders):
        info.update(kind="orders", hi=float(d.hi), integer=bool(d.integer), value=[float(v) for v in value])
    elif isinstance(d, Graph):
        info.update(kind="graph", value=str(value), examples=list(GRAPH_EXAMPLES))
    else:
        info.update(kind="choice", choices=list(getattr(d, "values", ())), value=value)
    return info


_CITE_WORDS = {"Theorem": "Thm", "Corollary": "Cor.", "Proposition": "Prop.", "Section": "Sec.", "Appendix": "App."}
_CITE_ITEM = re.compile(r"\b(Thm\.?|Theorem|Cor\.?|Corollary|Prop\.?|Proposition|Lemma|Sec\.|Section|App\.|Appendix|"
                        r"Table|Algorithm|Eq\.)\s+([A-Z]?[0-9IVX][0-9.IVX]*[0-9A-Za-z]?)")


def cite(paper: str, theorem: str) -> str:
    """A bound's paper and theorem in short: ``"FMT 2021, Thm 3.2"`` (two or three authors: their initials,
    or both names for two; more: the first et al.; the first numbered item of ``theorem``), for the legend."""
    head = re.split(r"[(;]", paper or "", maxsplit=1)[0]
    year = re.search(r"\b(19|20)[0-9]{2}\b", head)
    names_text = head[:year.start()] if year else head
    names = [n.strip() for n in re.split(r",|&|\band\b", names_text) if n.strip()]
    if not year:  # a title follows the authors: keep the first
        names = names[:1] + (["", ""] if len(names) > 1 else [])
    if not names:
        who = head.strip()
    elif len(names) == 1:
        who = names[0]
    elif len(names) == 2 and year:
        who = f"{names[0]} & {names[1]}"
    elif len(names) == 3 and year:
        who = "".join(n.split()[-1][0] for n in names)
    else:
        who = f"{names[0]} et al."
    short = who + (f" {year.group(0)}" if year else "")
    item = _CITE_ITEM.search(theorem or "") or _CITE_ITEM.search(paper or "")
    if item:
        word = item.group(1).rstrip(".")
        word = _CITE_WORDS.get(word, word + "." if word in ("Cor", "Prop", "Sec", "App", "Eq") else word)
        short += f", {word} {item.group(2).rstrip('.')}"
    return short


def _default_view(b, params, axes) -> dict:
    """The page's first view of a bound: the x axis (its first monotone parameter that is not the other half of
    the (eps, delta) pair, else its first axis) over that parameter's ``x_range`` (Rényi orders: 2..256, log);
    the y scale is chosen from the values (the curve's ``view``)."""
    info = {q["name"]: q for q in params}
    x = next((n for n in axes if n in info and info[n].get("monotone") and n != _PAIR[b.answer]), axes[0])
    if x == "orders":
        return {"x": x, "lo": 2.0, "hi": 256.0, "logx": True}
    return {"x": x, "lo": info[x]["x_range"][0], "hi": info[x]["x_range"][1], "logx": bool(info[x]["log"])}


def default_request(bound_id, points=None) -> dict:
    """The curve request of a bound's default view (what the page asks for first): ``request("curve", it)``
    draws it; its answer's ``view`` says the y scale."""
    b = bounds.get(bound_id)
    info = _bound_info(b)
    v = info["view"]
    req = {"bound": b.id, "x": v["x"], "lo": v["lo"], "hi": v["hi"], "log": v["logx"]}
    if points is not None:
        req["points"] = points
    return req


def _y_view(answer: str, y: np.ndarray) -> dict:
    """The default y scale of a curve: log where its positive finite values span more than
    :data:`LOGY_DECADES` decades, or where the answer is a delta (a probability read by its exponent)."""
    pos = y[np.isfinite(y) & (y > 0)]
    decades = float(np.log10(pos.max() / pos.min())) if pos.size else None
    logy = pos.size > 0 and (answer == "delta" or decades > LOGY_DECADES)
    return {"logy": bool(logy), "y_decades": None if decades is None else round(decades, 3)}


def _bound_info(b) -> dict:
    params = [_param_info(b, p) for p in b.params]
    axes = [q["name"] for q in params if q["kind"] in ("real", "integer")]
    if b.answer == "rdp":
        axes.append("orders")
    return {"id": b.id, "family": b.family, "paper": b.paper, "theorem": b.theorem, "cite": cite(b.paper, b.theorem),
            "summary": b.summary, "notes": b.notes, "answer": b.answer, "symbol": _SYMBOL[b.answer], "side": b.side,
            "outputs": list(b.outputs), "solvable": list(b.solvable),
            "target": None if b.answer == "rdp" else "target_" + b.answer, "pair": _PAIR[b.answer],
            "axes": axes, "params": params, "example": _params_json(b.example), "view": _default_view(b, params, axes)}


def catalog() -> dict:
    """Every registered bound grouped by paper: its paper, theorem, one-line summary and parameters.

    ``{"groups": [{"family", "title", "paper", "bounds": [...]}], "limits": {...}}``.  Each bound: ``id``,
    ``answer`` (``epsilon``, ``delta`` or ``rdp``), ``side`` (``upper`` / ``lower``), ``outputs``,
    ``solvable`` (the parameters :func:`solve` can solve for), ``target`` (``target_epsilon`` or
    ``target_delta``), ``axes`` (what can be the x axis or the family), ``view`` (the page's first view:
    ``{"x", "lo", "hi", "logx"}``) and ``params``.  Each numeric parameter:
    ``lo``, ``hi``, ``lo_open``, ``hi_open``, ``integer``, ``log`` (its slider spans at least 10**3),
    ``slider`` (its ends), ``x_range`` (the default x axis), ``value`` (the example's), ``monotone``
    (``increasing`` / ``decreasing`` / null), ``smaller_answer_at`` and ``more_privacy_at`` (``low`` / ``high``
    / null: which end of the slider gives the smaller answer, which means more privacy).
    """
    groups, index = [], {}
    order = {f: i for i, f in enumerate(FAMILIES)}
    for b in sorted(bounds.list(), key=lambda b: (order.get(b.family, len(order)), b.family, b.id)):
        key = (b.family, b.paper)
        if key not in index:
            index[key] = {"family": b.family, "title": FAMILIES.get(b.family, b.family), "paper": b.paper,
                          "bounds": []}
            groups.append(index[key])
        index[key]["bounds"].append(_bound_info(b))
    return {"groups": groups,
            "limits": {"max_points": MAX_POINTS, "max_curves": MAX_CURVES, "max_orders": MAX_ORDERS,
                       "max_graph_users": MAX_GRAPH_USERS, "default_points": DEFAULT_POINTS}}


# ----------------------------------------------------------------------------------------------------------
# Curves


def _axis_param(bound, name, role: str):
    numeric = [p.name for p in bound.params if isinstance(p.domain, (Real, Integer))]
    allowed = numeric + (["orders"] if bound.answer == "rdp" else [])
    if not isinstance(name, str) or name not in allowed:
        raise ValueError(f"Expected {role} to be a numeric parameter of {bound.id} ({', '.join(allowed)}), "
                         f"got {role}={_short(name)}.")
    return bound.param(name)


def _x_grid(bound, p, x_values, lo, hi, points, log) -> tuple:
    """The x values (validated by the parameter's domain) and whether the axis is log-scaled."""
    name, d = p.name, p.domain
    if isinstance(d, Orders):
        limit = min(MAX_POINTS, MAX_ORDERS * 4)
        lo = 2.0 if lo is None else lo
        hi = min(256.0, float(d.hi)) if hi is None else hi
        info = {"log": True}
    else:
        info = _param_info(bound, p)
        limit = MAX_POINTS
    if x_values is not None:
        xs = _numbers("x_values", x_values, limit)
        log = _flag("log", log) if log is not None else info["log"]
    else:
        lo = _number("lo", lo) if lo is not None else info["x_range"][0]
        hi = _number("hi", hi) if hi is not None else info["x_range"][1]
        n = _number("points", points) if points is not None else DEFAULT_POINTS
        if not (2 <= n <= limit and n == int(n)):
            raise ValueError(f"Expected points (x values of the curve) in 2..{limit}, got points={_short(points)}.")
        log = _flag("log", log) if log is not None else info["log"]
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValueError(f"Expected finite lo < hi on the x axis ({name}), got lo={lo:g}, hi={hi:g}.")
        if log and lo <= 0:
            raise ValueError(f"Expected lo > 0 for a log-scaled x axis ({name}), got lo={lo:g}.")
        xs = np.geomspace(lo, hi, int(n)) if log else np.linspace(lo, hi, int(n))
        if isinstance(d, Integer) or (isinstance(d, Orders) and d.integer):
            xs = np.unique(np.round(xs))
    return d.check(name, xs), log


def _family_grid(bound, p, family_values) -> np.ndarray:
    name, d = p.name, p.domain
    if family_values is None:
        if isinstance(d, Orders):
            return d.check(name, np.asarray(_example(bound, name), dtype=np.float64))
        info = _param_info(bound, p)
        v, (a, b) = info["value"], info["slider"]
        fs = [v / 10, v, v * 10] if info["log"] and v > 0 else [a, v, b]
        fs = np.clip(np.array(fs), a, b)
        if info["integer"]:
            fs = np.round(fs)
        fs = np.unique(fs)
    else:
        fs = _numbers("family_values", family_values, MAX_CURVES)
    return d.check(name, fs)


def _label(name: str, v: float) -> str:
    return f"{'α' if name == 'orders' else name}={v:g}"


def curve(bound_id, x, *, x_values=None, lo=None, hi=None, points=None, log=None, params=None, family=None,
          family_values=None) -> dict:
    """The bound ``bound_id`` along the parameter ``x``, one curve per value of ``family``: one call of
    :func:`amplify_jax.bounds.evaluate`, broadcast over x values x family values.

    ``x_values`` (a list), or ``lo``, ``hi``, ``points`` (default 200) and ``log`` (default: the parameter's
    slider scale; integers are rounded and deduplicated).  ``params``: the other parameters (a missing one
    takes the bound's example value); ``family_values``: up to 12 values (default: a decade either side of the
    example's).  For an RDP bound, ``orders`` may be the x axis or the family; otherwise each order given is
    a curve.  At most 2000 points per request (``max_points`` in the answer).

    Returns ``{"x": {"name", "values", "log"}, "family": ..., "series": [{"label", "value", "y", "status",
    "outputs"}], "params", "points", "max_points", "elapsed_ms", "view": {"logy", "y_decades"}, ...}`` or
    ``{"error": "..."}`` (``view.logy``: the default y scale, log where the values span more than
    :data:`LOGY_DECADES` decades or the answer is a delta).
    """
    try:
        return _curve(bound_id, x, x_values, lo, hi, points, log, params, family, family_values)
    except ValueError as exc:
        return _error(exc)


def _plan(bound_id, x, x_values, lo, hi, points, log, params, family, family_values) -> tuple:
    """A curve request, validated: (bound, x parameter, family parameter or None, fixed values, x values,
    family values or None, log x, Rényi orders that are curves or None, the keyword arguments of the one
    bounds.evaluate call); raises ValueError naming the bad value."""
    b = bounds.get(bound_id)
    xp = _axis_param(b, x, "x")
    fp = None
    if family not in (None, ""):
        fp = _axis_param(b, family, "family")
        if fp.name == xp.name:
            raise ValueError(f"Expected a family parameter other than the x axis, got family={family!r}.")
    elif family_values is not None:
        raise ValueError(f"Expected a family parameter with family_values, got family_values={_short(family_values)}.")
    fixed = _resolve(b, params, skip={xp.name} | ({fp.name} if fp else set()))
    xs, xlog = _x_grid(b, xp, x_values, lo, hi, points, log)
    fs = _family_grid(b, fp, family_values) if fp else None
    rdp = b.answer == "rdp"
    orders = fixed.get("orders") if rdp else None  # the orders, where they are neither the x axis nor the family
    n_curves = (fs.size if fs is not None else 1) * (orders.size if orders is not None else 1)
    total = xs.size * n_curves
    if total > MAX_POINTS:
        raise ValueError(f"Expected at most {MAX_POINTS} points per request (x values x curves), got "
                         f"{xs.size} x {n_curves} = {total}: fewer points, family values or orders.")

    kw = dict(fixed)
    if xp.name == "orders":  # the answer's trailing axis is x: shape (family, x)
        kw["orders"] = xs
        if fs is not None:
            kw[fp.name] = fs
    elif fp is not None and fp.name == "orders":  # shape (x, family): transposed below
        kw[xp.name], kw["orders"] = xs, fs
    elif fs is not None:
        kw[xp.name], kw[fp.name] = xs[None, :], fs[:, None]
    else:
        kw[xp.name] = xs
    return b, xp, fp, fixed, xs, fs, xlog, orders, kw


def _curve(bound_id, x, x_values, lo, hi, points, log, params, family, family_values) -> dict:
    b, xp, fp, fixed, xs, fs, xlog, orders, kw = _plan(bound_id, x, x_values, lo, hi, points, log, params, family,
                                                       family_values)
    rdp = b.answer == "rdp"
    total = xs.size * (fs.size if fs is not None else 1) * (orders.size if orders is not None else 1)
    t0 = time.perf_counter()
    res = bounds.evaluate(b.id, **kw)
    elapsed = (time.perf_counter() - t0) * 1e3

    y = np.asarray(res.value, dtype=np.float64)
    status = np.asarray(res.status)
    labels, values = [], []
    if xp.name == "orders":
        y, status = y.reshape(-1, xs.size), np.broadcast_to(status.reshape(-1, 1), y.reshape(-1, xs.size).shape)
        values = list(fs) if fs is not None else [None]
        labels = [_label(fp.name, v) if v is not None else b.id for v in values]
    elif fp is not None and fp.name == "orders":
        y, status = y.T, np.broadcast_to(status[None, :], (fs.size, xs.size))
        values = list(fs)
        labels = [_label("orders", v) for v in fs]
    elif rdp:  # x numeric, each order a curve (within each family value)
        y = np.moveaxis(y.reshape(-1, xs.size, orders.size), 2, 1)  # (family, order, x)
        status = np.broadcast_to(status.reshape(-1, 1, xs.size), y.shape)
        fvals = list(fs) if fs is not None else [None]
        for fv in fvals:
            for o in orders:
                values.append(fv)
                labels.append(", ".join(([_label(fp.name, fv)] if fv is not None else []) + [_label("orders", o)]))
        y, status = y.reshape(-1, xs.size), status.reshape(-1, xs.size)
    else:
        y, status = y.reshape(-1, xs.size), status.reshape(-1, xs.size)
        values = list(fs) if fs is not None else [None]
        labels = [_label(fp.name, v) if v is not None else b.id for v in values]

    extra = {}
    if not rdp:  # the bound's other outputs, per point (e.g. the clone bound's lower value)
        for k in b.outputs:
            a = np.asarray(res.outputs[k])
            if a.shape == np.shape(res.value) and a.dtype.kind in "fiub":
                extra[k] = a.reshape(-1, xs.size)
    series = []
    for i, (lab, v) in enumerate(zip(labels, values)):
        names = status_names(status[i])
        series.append({"label": lab, "value": None if v is None else float(v), "y": _jsonable(y[i]),
                       "status": names, "outputs": {k: _jsonable(a[i]) for k, a in extra.items()}})
    counts = {}
    for s in series:
        for name in s["status"]:
            counts[name] = counts.get(name, 0) + 1
    notes = [f"{counts[str(Status(c))]} point(s) {Status(c)}: {_STATUS_TEXT[Status(c)]}" for c in Status
             if c != Status.OK and str(Status(c)) in counts]
    return {"bound": b.id, "paper": b.paper, "theorem": b.theorem, "cite": cite(b.paper, b.theorem),
            "answer": b.answer, "symbol": _SYMBOL[b.answer], "side": b.side,
            "x": {"name": xp.name, "values": _jsonable(xs), "log": bool(xlog)},
            "family": None if fp is None else {"name": fp.name, "values": _jsonable(fs)},
            "series": series, "params": _params_json(fixed), "points": int(total), "max_points": MAX_POINTS,
            "status_counts": counts, "notes": notes, "elapsed_ms": round(elapsed, 3), "view": _y_view(b.answer, y)}


# ----------------------------------------------------------------------------------------------------------
# Solving for a parameter


def solve(bound_id, solve_for, *, target_epsilon=None, target_delta=None, params=None, lo=None, hi=None) -> dict:
    """The extreme value of the monotone parameter ``solve_for`` that meets the target, through
    :func:`amplify_jax.bounds.invert` (feasible end of the bracket, re-checked).

    ``params``: the other parameters (``solve_for`` itself, if present, is ignored: the page sends its whole
    state; a missing one takes the bound's example value).  For a bound that answers eps give
    ``target_epsilon`` (and ``delta`` in ``params``, or ``target_delta``), for one that answers delta
    ``target_delta``.  Returns ``{"value", "achieved", "status", "message", "direction", ...}`` or
    ``{"error": "..."}``.
    """
    try:
        return _solve(bound_id, solve_for, target_epsilon, target_delta, params, lo, hi)
    except ValueError as exc:
        return _error(exc)


def _solve(bound_id, solve_for, target_epsilon, target_delta, params, lo, hi) -> dict:
    b = bounds.get(bound_id)
    if not isinstance(solve_for, str):
        raise ValueError(f"Expected solve_for to be one of {list(b.solvable)}, got solve_for={_short(solve_for)}.")
    tname = b.inversion_target(solve_for)
    targets = {"target_epsilon": target_epsilon, "target_delta": target_delta}
    if targets[tname] is None:
        raise ValueError(f"Expected {tname} for {b.id}, which answers {b.answer}.")
    given = {k: _number(k, v) for k, v in targets.items() if v is not None}
    params = dict(params) if isinstance(params, dict) else params
    skip = {solve_for}
    other = "target_" + _PAIR[b.answer]
    if other in given:  # the pair's other half given as a target: it replaces the parameter
        skip.add(_PAIR[b.answer])
    if isinstance(params, dict):
        for k in skip:
            params.pop(k, None)
    fixed = _resolve(b, params, skip=skip)
    p = b.param(solve_for)
    bracket = {}
    for key, v in (("lo", lo), ("hi", hi)):
        if v is not None:
            bracket[key] = p.domain.check(f"{key} ({solve_for})", _number(key, v))
    t0 = time.perf_counter()
    res = bounds.invert(b.id, solve_for=solve_for, **given, **bracket, **fixed)
    elapsed = (time.perf_counter() - t0) * 1e3
    code = Status(int(np.asarray(res.status).ravel()[0]))
    direction = "smallest" if p.monotone == DECREASING else "largest"
    value = float(np.asarray(res.value).ravel()[0])
    achieved = float(np.asarray(res.outputs[b.answer]).ravel()[0])
    return {"bound": b.id, "solve_for": solve_for, "value": value if math.isfinite(value) else None,
            "answer": b.answer, "symbol": _SYMBOL[b.answer],
            "achieved": achieved if math.isfinite(achieved) else None, "status": str(code),
            "message": (f"{direction} {solve_for} with {b.answer} <= {given[tname]:g}" if code == Status.OK
                        else _STATUS_TEXT[code]),
            "direction": direction, "integer": isinstance(p.domain, Integer), "targets": given,
            "params": _params_json(fixed), "elapsed_ms": round(elapsed, 3)}


# ----------------------------------------------------------------------------------------------------------
# Requests as JSON objects (what the server receives)

_KEYS = {
    "curve": ("bound", "x", "x_values", "lo", "hi", "points", "log", "params", "family", "family_values"),
    "solve": ("bound", "solve_for", "target_epsilon", "target_delta", "params", "lo", "hi"),
}


def request(kind: str, body) -> dict:
    """A JSON request object -> the JSON answer: ``kind`` is ``"curve"`` or ``"solve"``; ``body`` carries
    ``bound`` and the keyword arguments of :func:`curve` / :func:`solve` (``x``, ``solve_for``, ...)."""
    if kind not in _KEYS:
        return {"error": f"Expected a request kind in {list(_KEYS)}, got {kind!r}."}
    if not isinstance(body, dict):
        return {"error": f"Expected a JSON object as the {kind} request, got {_short(body)}."}
    unknown = [k for k in body if k not in _KEYS[kind]]
    if unknown:
        return {"error": f"Expected {kind} request keys {', '.join(_KEYS[kind])}, got {unknown[0]!r}."}
    for key in ("bound", "x" if kind == "curve" else "solve_for"):
        if key not in body:
            return {"error": f"Expected {key!r} in the {kind} request."}
    args = {k: v for k, v in body.items() if k != "bound"}
    if kind == "curve":
        return curve(body["bound"], args.pop("x"), **args)
    return solve(body["bound"], args.pop("solve_for"), **args)
