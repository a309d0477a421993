"""The explorer's JSON interface (catalog, curve, solve, render) against the registry, and its server on loopback.

Only closed-form bounds are evaluated (shuffle.fmt-closed-form, shuffle.erlingsson-delta, rdp.gaussian), with
the same shapes throughout, so the file compiles a few small kernels (a few seconds in all).
"""

from __future__ import annotations

import json
import math
import threading
import urllib.error
import urllib.request

import numpy as np
import pytest

from amplify_jax import bounds, explore
from amplify_jax.bounds import Integer, Real
from amplify_jax.cli import build_parser
from amplify_jax.status import status_names

FMT = "shuffle.fmt-closed-form"


def _json_safe(obj):
    return json.loads(json.dumps(obj, allow_nan=False))


# ----------------------------------------------------------------------------------------------------------
# catalog


def test_catalog_lists_every_bound_grouped_by_paper():
    cat = explore.catalog()
    _json_safe(cat)
    listed = [b["id"] for g in cat["groups"] for b in g["bounds"]]
    assert sorted(listed) == [b.id for b in bounds.list()]
    for g in cat["groups"]:
        for b in g["bounds"]:
            reg = bounds.get(b["id"])
            assert (b["paper"], b["theorem"], b["summary"]) == (g["paper"], reg.theorem, reg.summary) == \
                (reg.paper, reg.theorem, reg.summary)
            assert "\n" not in b["summary"]
            assert b["solvable"] == list(reg.solvable)
    assert cat["limits"]["max_points"] == explore.MAX_POINTS


def test_catalog_parameters_clones():
    b = next(b for g in explore.catalog()["groups"] for b in g["bounds"] if b["id"] == "shuffle.clones")
    p = {q["name"]: q for q in b["params"]}
    assert p["eps0"]["kind"] == "real" and p["eps0"]["log"] and p["eps0"]["lo_open"] and not p["eps0"]["hi_open"]
    assert p["n"]["kind"] == "integer" and p["n"]["integer"] and p["n"]["log"]
    # eps grows with eps0 (less privacy at the high end) and shrinks with n; delta is half of the pair, not a knob
    assert (p["eps0"]["monotone"], p["eps0"]["more_privacy_at"]) == ("increasing", "low")
    assert (p["n"]["monotone"], p["n"]["more_privacy_at"]) == ("decreasing", "high")
    assert (p["delta"]["smaller_answer_at"], p["delta"]["more_privacy_at"]) == ("high", None)
    assert {k: p[k]["value"] for k in p} == bounds.get("shuffle.clones").example
    assert b["target"] == "target_epsilon" and b["axes"] == ["eps0", "n", "delta"]


def test_catalog_sliders_lie_in_their_domains():
    for g in explore.catalog()["groups"]:
        for b in g["bounds"]:
            for q in b["params"]:
                if q["kind"] not in ("real", "integer"):
                    continue
                dom = bounds.get(b["id"]).param(q["name"]).domain
                assert isinstance(dom, (Real, Integer))
                (a, z), (xa, xz) = q["slider"], q["x_range"]
                assert a < z and a <= xa < xz <= z, (b["id"], q["name"])
                dom.check(q["name"], np.array([a, z, xa, xz]))  # raises if outside
                if q["log"]:
                    assert a > 0 and z / a >= 1e3, (b["id"], q["name"])
                if q["integer"]:
                    assert a == round(a) and z == round(z)


# ----------------------------------------------------------------------------------------------------------
# curve and solve: the registry's values


def test_curve_equals_evaluate_with_family():
    r = explore.curve(FMT, "eps0", lo=0.1, hi=5.0, points=50, family="n", family_values=[1e4, 1e5],
                      params={"delta": 1e-6})
    _json_safe(r)
    xs = np.array(r["x"]["values"])
    assert xs.size == 50 and r["x"]["log"] and r["points"] == 100 and r["max_points"] == explore.MAX_POINTS
    np.testing.assert_allclose(xs, np.geomspace(0.1, 5.0, 50), rtol=1e-15)
    ref = bounds.evaluate(FMT, eps0=xs[None, :], n=np.array([[1e4], [1e5]]), delta=1e-6)
    assert [s["label"] for s in r["series"]] == ["n=10000", "n=100000"]
    for i, s in enumerate(r["series"]):
        np.testing.assert_array_equal(np.array(s["y"], dtype=float), ref.epsilon[i])
        assert s["status"] == status_names(ref.status[i])
    assert r["params"] == {"delta": 1e-6}


def test_curve_integer_axis_and_example_defaults():
    r = explore.curve(FMT, "n", lo=10, hi=1e6, points=50)
    xs = np.array(r["x"]["values"])
    assert np.all(xs == np.round(xs)) and np.all(np.diff(xs) > 0) and xs[0] == 10 and xs[-1] == 1e6
    ex = bounds.get(FMT).example
    assert r["params"] == {"eps0": ex["eps0"], "delta": ex["delta"]}  # parameters not given: the example's
    ref = bounds.evaluate(FMT, n=xs, eps0=ex["eps0"], delta=ex["delta"])
    np.testing.assert_array_equal(np.array(r["series"][0]["y"], dtype=float), ref.epsilon)


def test_curve_rdp_orders_as_curves_x_or_family():
    orders = [2.0, 8.0]
    r = explore.curve("rdp.gaussian", "sigma", x_values=[0.5, 1.0, 2.0, 4.0], params={"orders": orders})
    ref = bounds.evaluate("rdp.gaussian", sigma=np.array([0.5, 1.0, 2.0, 4.0]), orders=orders).rdp
    assert [s["label"] for s in r["series"]] == ["α=2", "α=8"]
    for j, s in enumerate(r["series"]):
        np.testing.assert_array_equal(np.array(s["y"]), ref[:, j])
    r = explore.curve("rdp.gaussian", "orders", x_values=[2, 4, 8, 16], family="sigma", family_values=[1.0, 2.0])
    ref = bounds.evaluate("rdp.gaussian", orders=[2, 4, 8, 16], sigma=np.array([1.0, 2.0])).rdp
    for i, s in enumerate(r["series"]):
        np.testing.assert_array_equal(np.array(s["y"]), ref[i])
    r = explore.curve("rdp.gaussian", "sigma", x_values=[0.5, 1.0, 2.0, 4.0], family="orders", family_values=orders)
    np.testing.assert_array_equal(np.array([s["y"] for s in r["series"]]).T,
                                  bounds.evaluate("rdp.gaussian", sigma=np.array([0.5, 1.0, 2.0, 4.0]),
                                                  orders=orders).rdp)


def test_solve_equals_invert():
    r = explore.solve(FMT, "n", target_epsilon=1.0, params={"eps0": 4.0, "delta": 1e-6, "n": 5})  # n ignored
    ref = bounds.invert(FMT, solve_for="n", target_epsilon=1.0, eps0=4.0, delta=1e-6)
    assert r["value"] == float(ref.n) and r["achieved"] == float(ref.epsilon) and r["status"] == "ok"
    assert r["direction"] == "smallest" and r["achieved"] <= 1.0 and r["integer"]
    r = explore.solve("shuffle.erlingsson-delta", "n", target_delta=1e-6)
    ex = bounds.get("shuffle.erlingsson-delta").example
    ref = bounds.invert("shuffle.erlingsson-delta", solve_for="n", target_delta=1e-6, epsilon=ex["epsilon"],
                        eps0=ex["eps0"])
    assert r["value"] == float(ref.n) and r["achieved"] <= 1e-6
    _json_safe(r)


def test_request_objects_route_to_curve_and_solve():
    body = {"bound": FMT, "x": "eps0", "x_values": "0.5,1,2", "params": {"n": "100000", "delta": "1e-6"}}
    r = explore.request("curve", body)  # numbers as strings (a query string's) are accepted
    ref = bounds.evaluate(FMT, eps0=np.array([0.5, 1.0, 2.0]), n=1e5, delta=1e-6)
    np.testing.assert_array_equal(np.array(r["series"][0]["y"]), ref.epsilon)


# ----------------------------------------------------------------------------------------------------------
# bad input: one line naming the parameter, never a traceback

BAD = [
    (explore.curve, (FMT, "eps0"), {"params": {"delta": 2.0}}, "delta=2"),
    (explore.curve, (FMT, "eps0"), {"params": {"n": "abc"}}, "n='abc'"),
    (explore.curve, (FMT, "eps0"), {"params": {"n": 0}}, "n=0"),
    (explore.curve, (FMT, "eps0"), {"params": {"n": 1e300}}, "n="),
    (explore.curve, (FMT, "eps0"), {"params": {"delta": math.nan}}, "delta=nan"),
    (explore.curve, (FMT, "eps0"), {"params": {"n": [1, 2]}}, "n=[1, 2]"),
    (explore.curve, (FMT, "eps0"), {"params": {"foo": 1}}, "foo=1"),
    (explore.curve, (FMT, "eps0"), {"params": [1]}, "params="),
    (explore.curve, (FMT, "zz"), {}, "x='zz'"),
    (explore.curve, (FMT, "eps0"), {"family": "eps0"}, "family='eps0'"),
    (explore.curve, (FMT, "eps0"), {"lo": -1.0}, "lo=-1"),
    (explore.curve, (FMT, "eps0"), {"lo": 2.0, "hi": 1.0}, "lo=2"),
    (explore.curve, (FMT, "eps0"), {"x_values": [1.0, 800.0]}, "eps0=800"),  # eps0 <= 700: e^eps0 finite
    (explore.curve, (FMT, "eps0"), {"x_values": ["a"]}, "x_values='a'"),
    (explore.curve, (FMT, "n"), {"x_values": [10.5]}, "n=10.5"),
    (explore.curve, (FMT, "eps0"), {"points": 1}, "points=1"),
    (explore.curve, (FMT, "eps0"), {"points": math.inf}, "points=inf"),
    (explore.curve, (FMT, "eps0"), {"hi": math.inf}, "hi=inf"),
    (explore.curve, (FMT, "eps0"), {"log": "maybe"}, "log='maybe'"),
    (explore.curve, (FMT, "eps0"), {"family": "n", "family_values": list(range(2, 16))}, "family_values"),
    (explore.curve, ("nope", "eps0"), {}, "id='nope'"),
    (explore.curve, ("secrdp.step", "sigma_cor"), {"params": {"graph": "/etc/passwd"}}, "graph='/etc/passwd'"),
    (explore.curve, ("secrdp.step", "sigma_cor"), {"params": {"graph": "ring:100000"}}, "graph='ring:100000'"),
    (explore.curve, ("secrdp.step", "sigma_cor"), {"params": {"adversary": "martian"}}, "adversary='martian'"),
    (explore.solve, (FMT, "n"), {"target_epsilon": -1.0}, "target_epsilon=-1"),
    (explore.solve, (FMT, "n"), {"target_epsilon": "x"}, "target_epsilon='x'"),
    (explore.solve, (FMT, "n"), {}, "target_epsilon"),
    (explore.solve, (FMT, "delta"), {"target_epsilon": 1.0}, "solve_for='delta'"),
    (explore.solve, (FMT, "n"), {"target_epsilon": 1.0, "params": {"eps0": -3}}, "eps0=-3"),
    (explore.solve, ("rdp.gaussian", "sigma"), {"target_epsilon": 1.0}, "rdp.gaussian"),
    (lambda: explore.request("curve", {"bound": FMT, "x": "eps0", "bogus": 1}), (), {}, "'bogus'"),
    (lambda: explore.request("curve", {"bound": FMT}), (), {}, "'x'"),
    (lambda: explore.request("curve", [1, 2]), (), {}, "[1, 2]"),
]


@pytest.mark.parametrize("fn, args, kw, needle", BAD, ids=[b[3] for b in BAD])
def test_bad_input_is_one_line_naming_it(fn, args, kw, needle):
    r = fn(*args, **kw)
    assert set(r) == {"error"}, r
    assert "\n" not in r["error"] and needle in r["error"], r["error"]


def test_grid_is_capped():
    cap = explore.MAX_POINTS
    r = explore.curve(FMT, "eps0", points=cap + 1)
    assert "error" in r and str(cap) in r["error"] and "points" in r["error"]
    r = explore.curve(FMT, "eps0", x_values=list(np.linspace(1, 2, cap + 1)))
    assert "error" in r and str(cap) in r["error"]
    r = explore.curve(FMT, "eps0", points=cap // 4 + 1, family="n", family_values=[1e3, 1e4, 1e5, 1e6])
    assert "error" in r and f"at most {cap} points" in r["error"]
    r = explore.curve("rdp.gaussian", "sigma", points=cap // 2, params={"orders": [2, 4, 8]})
    assert "error" in r and f"at most {cap} points" in r["error"]


# ----------------------------------------------------------------------------------------------------------
# drawing (matplotlib's SVG, for a page without Plotly)


def test_render_draws_svg_and_refuses_bad_series():
    r = explore.render({"series": [{"label": "a $x$", "x": [1, 2, 3], "y": [1.0, None, 3.0]},
                                   {"label": "b", "x": [1, 2, 3], "y": [2, 3, 4], "style": "dashed"}],
                        "logx": True, "logy": True, "xlabel": "eps0", "ylabel": "ε", "mark": {"x": 2, "label": "n"}})
    assert r["svg"].lstrip().startswith("<?xml") and "<svg" in r["svg"]
    assert "error" in explore.render({"series": [{"x": [1, 2], "y": [1]}]})
    assert "series[0].y" in explore.render({"series": [{"x": [1, 2], "y": [1]}]})["error"]
    assert "series" in explore.render({"series": []})["error"]
    assert "'bogus'" in explore.render({"series": [{"x": [1], "y": [1]}], "bogus": 1})["error"]


def test_render_band_between_lower_and_upper_with_cited_legend():
    """A curve with a lower output (shuffle.clones: epsilon and ``lower``) as the page sends it: one shaded
    band (matplotlib's fill_between, an SVG group with id explore-band) under the upper line, and a legend
    entry "bound — paper, theorem"; the solved mark is a point (explore-solved) or a line at the target."""
    b = next(b for g in explore.catalog()["groups"] for b in g["bounds"] if b["id"] == "shuffle.clones")
    assert b["cite"] == "FMT 2021, Thm 3.2" and "lower" in b["outputs"]
    x, upper = [0.5, 1.0, 2.0, 4.0], [0.05, 0.11, 0.3, 0.9]
    lower = [0.04, 0.1, 0.27, 0.8]
    spec = {"series": [{"label": "shuffle.clones", "cite": b["cite"], "x": x, "y": upper, "lower": lower}],
            "logx": True, "logy": True, "mark": {"x": 1.0, "y": 0.11, "label": "eps0 = 1"}}
    svg = explore.render(spec)["svg"]
    band = svg[svg.index('<g id="explore-band">'):]
    assert "<path" in band[:band.index("</g>")]  # the filled polygon
    assert svg.count('<g id="explore-band">') == 1
    assert "shuffle.clones — FMT 2021, Thm 3.2" in svg and '<g id="explore-solved">' in svg
    assert svg.index('<g id="explore-band">') < svg.index("shuffle.clones — ")  # the band under its line
    without = explore.render({**spec, "series": [{**spec["series"][0], "lower": None}],
                              "mark": {"y": 0.3, "label": "t"}})
    assert "explore-band" not in without["svg"] and '<g id="explore-solved">' in without["svg"]
    assert "series[0].lower" in explore.render({"series": [{"x": x, "y": upper, "lower": [1]}]})["error"]
    assert "mark.y" in explore.render({**spec, "mark": {"y": "high"}})["error"]
    # the short citation of every bound: authors (initials of three, et al. beyond) and year, numbered item
    cites = {b["id"]: b["cite"] for g in explore.catalog()["groups"] for b in g["bounds"]}
    assert cites["pld.dpsgd"] == "Doroshenko et al. 2022, Thm 3.3"
    assert cites["network.ring-sum"] == "Cyffers & Bellet 2022, Thm 1"
    assert cites["shuffle.erlingsson"] == "Erlingsson et al. 2019, Cor. 9"
    assert all(c and len(c) < 60 for c in cites.values())
    assert explore.curve(FMT, "eps0", points=5)["cite"] == "FMT 2021, Thm 3.1"


# ----------------------------------------------------------------------------------------------------------
# the server and the command line


def _get(url, headers=None):
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=30) as resp:
        return resp.status, resp.headers.get("Content-Type"), resp.read()


def _post(url, body, token=None):
    headers = {"Content-Type": "application/json", **({"X-Amplify-Token": token} if token else {})}
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_server_serves_the_page_and_json_on_loopback():
    server = explore.make_server("127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base, tok = server.url, server.token
        assert base.startswith("http://127.0.0.1:") and server.page_url == f"{base}?token={tok}" and len(tok) >= 24
        status, ctype, page = _get(base)
        assert status == 200 and ctype.startswith("text/html") and b"/static/explore.js" in page
        status, ctype, js = _get(base + "static/explore.js")
        assert status == 200 and b"/api/curve" in js
        status, ctype, body = _get(base + "api/catalog?token=" + tok)
        cat = json.loads(body)
        assert ctype == "application/json" and cat["plotting"] in ("plotly", "matplotlib")
        assert len([b for g in cat["groups"] for b in g["bounds"]]) == len(bounds.list())
        req = {"bound": FMT, "x": "eps0", "x_values": [0.5, 1.0, 2.0], "params": {"n": 1e5, "delta": 1e-6}}
        status, r = _post(base + "api/curve", req, tok)
        assert status == 200
        assert r["series"][0]["y"] == explore.request("curve", req)["series"][0]["y"]
        status, r = _post(base + "api/curve", {**req, "params": {"n": 1e5, "delta": 2}}, tok)
        assert status == 400 and r == {"error": "Expected delta in (0, 1), got delta=2.0."}
        status, r = _post(base + "api/solve", {"bound": FMT, "solve_for": "n", "target_epsilon": 1.0}, tok)
        assert status == 200 and r["status"] == "ok"
        for path in ("static/../../pyproject.toml", "static/_api.py", "etc/passwd", "static/"):
            with pytest.raises(urllib.error.HTTPError) as err:
                _get(base + path)
            assert err.value.code == 404
        with pytest.raises(urllib.error.HTTPError) as err:  # a page that rebinds its name to 127.0.0.1
            _get(base + "api/catalog?token=" + tok, headers={"Host": "attacker.example:80"})
        assert err.value.code == 403
        status, r = _post(base + "api/curve", req)  # no token: refused (tests/test_explore_server_attacks.py)
        assert status == 403 and "token" in r["error"]
        status, r = _post(base + "api/nothing", {}, tok)
        assert status == 404 and "error" in r
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    assert not thread.is_alive()


def test_gate_runs_one_computation_and_bounds_the_queue():
    from amplify_jax.explore._server import _Busy, _Gate

    def holding(gate):
        held, release = threading.Event(), threading.Event()

        def hold():
            with gate():
                held.set()
                release.wait(30)

        t = threading.Thread(target=hold)
        t.start()
        assert held.wait(30)
        return t, release

    gate = _Gate(queue=1, wait=0.2)
    t, release = holding(gate)
    with pytest.raises(_Busy, match="waited 0.2 s"):  # a queued request waits at most `wait` seconds
        with gate():
            pass
    release.set()
    t.join()
    with gate():  # free again
        pass
    gate = _Gate(queue=0, wait=30)
    t, release = holding(gate)
    with pytest.raises(_Busy, match="already wait"):  # no room in the queue: refused at once
        with gate():
            pass
    release.set()
    t.join()


def test_cli_explore_command():
    args = build_parser().parse_args(["explore", "--port", "0", "--no-browser"])
    assert (args.port, args.host, args.no_browser) == (0, "127.0.0.1", True)
    assert args.func.__name__ == "cmd_explore"
    args = build_parser().parse_args(["explore"])
    assert (args.port, args.host, args.no_browser) == (8050, "127.0.0.1", False)


# ----------------------------------------------------------------------------------------------------------
# export: the command and the Python snippet reproduce the curve


def _run_cli(capsys, command: str) -> list:
    import csv
    import io
    import shlex

    from amplify_jax.cli import main

    argv = shlex.split(command)
    assert argv[0] == "amplify-jax"
    capsys.readouterr()
    assert main(argv[1:]) == 0
    return list(csv.DictReader(io.StringIO(capsys.readouterr().out)))


def _snippet(python: str):
    ns = {}
    exec(python, ns)  # noqa: S102 - the snippet the page shows
    return ns["res"]


EXPORTS = [
    # (request, how the curve's series map onto the command's rows and columns)
    {"bound": FMT, "x": "eps0", "lo": 0.1, "hi": 5.0, "points": 20, "family": "n", "family_values": [1e4, 1e5],
     "params": {"delta": 1e-6}},
    {"bound": FMT, "x": "n", "lo": 10, "hi": 1e6, "points": 30, "params": {"eps0": "2.5"}},
    {"bound": "rdp.gaussian", "x": "sigma", "points": 12, "params": {"orders": "2,8"}},
    {"bound": "rdp.gaussian", "x": "orders", "x_values": [2, 4, 8], "family": "sigma", "family_values": [1, 2]},
    {"bound": "rdp.gaussian", "x": "sigma", "points": 5, "family": "orders", "family_values": [2, 3]},
]


@pytest.mark.parametrize("req", EXPORTS, ids=lambda r: f"{r['bound']}:{r['x']}:{r.get('family')}")
def test_export_command_and_snippet_reproduce_the_curve(req, capsys):
    c = explore.request("curve", req)
    e = explore.export(req)
    _json_safe(e)
    assert e["command"].startswith(f"amplify-jax evaluate {req['bound']} ") and e["command"].endswith(" --csv")
    series = np.array([s["y"] for s in c["series"]], dtype=np.float64)  # (curves, x)
    rows = _run_cli(capsys, e["command"])
    assert len(rows) == e["rows"]
    res = _snippet(e["python"])
    if req["bound"] == FMT:  # one row per point, row-major in the bound's parameter order (eps0, n, delta)
        assert e["row_order"] == [p for p in ("eps0", "n") if p in (req["x"], req.get("family"))]
        shape = series.shape if e["row_order"][0] != req["x"] else series.shape[::-1]
        got = np.array([float(r["epsilon"]) for r in rows]).reshape(shape)
        xcol = np.array([float(r[req["x"]]) for r in rows]).reshape(shape)
        got, xcol = (got, xcol) if shape == series.shape else (got.T, xcol.T)
        np.testing.assert_array_equal(xcol, np.broadcast_to(c["x"]["values"], series.shape))
        snippet = np.asarray(res.epsilon).reshape(series.shape)
    else:  # RDP: one column per order
        cols = [k for k in rows[0] if k.startswith("rdp@")]
        table = np.array([[float(r[k]) for k in cols] for r in rows])
        if req["x"] == "orders":  # rows: sigma, columns: the x axis
            got, snippet = table, np.asarray(res.rdp)
        else:  # rows: the x axis, columns: the orders (each a curve)
            got, snippet = table.T, np.asarray(res.rdp).T
    np.testing.assert_array_equal(got, series)
    np.testing.assert_array_equal(snippet, series)


def test_export_names_a_bad_request_in_one_line():
    assert explore.export({"bound": FMT, "x": "eps0", "params": {"delta": 2}}) == \
        {"error": "Expected delta in (0, 1), got delta=2.0."}
    assert "'bogus'" in explore.export({"bound": FMT, "x": "eps0", "bogus": 1})["error"]
    assert "'x'" in explore.export({"bound": FMT})["error"]
    e = explore.export({"bound": "secrdp.step", "x": "sigma_cor", "points": 5, "params": {"graph": "ring:8"}})
    assert "--graph ring:8" in e["command"] and "graph='ring:8'" in e["python"]


def test_render_png():
    import base64

    r = explore.render({"series": [{"label": "a", "x": [1, 2, 3], "y": [1.0, 2.0, 3.0]}], "format": "png"})
    assert base64.b64decode(r["png"]).startswith(b"\x89PNG\r\n\x1a\n")
    assert "format" in explore.render({"series": [{"x": [1], "y": [1]}], "format": "gif"})["error"]


# ----------------------------------------------------------------------------------------------------------
# sweep stores opened with --sweep


@pytest.fixture(scope="module")
def sweep_store(tmp_path_factory):
    from amplify_jax import sweep

    out = tmp_path_factory.mktemp("sweep") / "fmt"
    spec = sweep.load_spec({"sweep": {"bound": FMT, "quantity": "evaluate", "output": str(out)},
                            "grid": {"eps0": {"start": 0.1, "stop": 5.0, "num": 6, "scale": "log"},
                                     "n": [1000, 10000, 100000], "delta": [1e-6, 1e-5]}})
    assert sweep.run_sweep(spec, progress=False) is not None
    return out


def test_sweep_slice_curves_and_heatmap_equal_the_store_and_the_bound(sweep_store):
    from amplify_jax.explore._sweeps import open_store, sweep_slice

    stores = [open_store(sweep_store)]
    info = stores[0].info
    assert info["bound"] == FMT and info["variables"] == ["epsilon"] and "path" not in info
    assert [(d["name"], d["size"]) for d in info["dims"]] == [("eps0", 6), ("n", 3), ("delta", 2)]
    _json_safe(info)
    r = sweep_slice(stores, {"x": "eps0", "y": "n", "fixed": {"delta": 1}})
    _json_safe(r)
    xs = np.array(r["x"]["values"])
    ns = np.array([1e3, 1e4, 1e5])
    ref = bounds.evaluate(FMT, eps0=xs[None, :], n=ns[:, None], delta=1e-5).epsilon
    assert [s["label"] for s in r["series"]] == ["n=1000", "n=10000", "n=100000"] and "<svg" in r["svg"]
    np.testing.assert_array_equal(np.array([s["y"] for s in r["series"]]), ref)
    assert r["fixed"] == {"delta": {"index": 1, "value": 1e-5}}
    r = sweep_slice(stores, {"x": "n", "y": "eps0", "kind": "heatmap", "logz": True})  # delta at index 0
    ref = bounds.evaluate(FMT, eps0=xs[:, None], n=ns[None, :], delta=1e-6).epsilon
    np.testing.assert_array_equal(np.array(r["z"]), ref)
    assert r["y"]["name"] == "eps0" and "<svg" in r["svg"]
    r = sweep_slice(stores, {"x": "delta", "fixed": {"eps0": 5, "n": 2}})  # one curve
    np.testing.assert_array_equal(r["series"][0]["y"], bounds.evaluate(FMT, eps0=5.0, n=1e5,
                                                                        delta=np.array([1e-6, 1e-5])).epsilon)


SWEEP_BAD = [
    ({"x": "zz"}, "x='zz'"), ({"store": 3}, "store=3"), ({"store": "0"}, "store='0'"),
    ({"fixed": {"delta": 5}}, "delta=5"), ({"fixed": {"delta": -1}}, "delta=-1"), ({"fixed": {"zz": 0}}, "zz=0"),
    ({"kind": "heatmap", "y": None}, "y=null"), ({"kind": "pie"}, "kind='pie'"), ({"var": "status"}, "var='status'"),
    ({"x": "n", "y": "n"}, "y='n'"), ({"bogus": 1}, "'bogus'"), ({"logx": "maybe"}, "logx='maybe'"),
]


@pytest.mark.parametrize("body, needle", SWEEP_BAD, ids=[b[1] for b in SWEEP_BAD])
def test_sweep_bad_request_is_one_line(sweep_store, body, needle):
    from amplify_jax.explore._sweeps import open_store, sweep_slice

    r = sweep_slice([open_store(sweep_store)], body)
    assert set(r) == {"error"} and needle in r["error"] and "\n" not in r["error"], r


def test_sweep_paths_only_from_the_command_line(sweep_store, tmp_path):
    from amplify_jax.explore._sweeps import sweep_slice

    assert "none is open" in sweep_slice([], {"x": "eps0"})["error"]
    (tmp_path / "empty").mkdir()
    for bad in (tmp_path / "nothing", tmp_path / "empty"):
        with pytest.raises(ValueError, match="--sweep") as err:
            explore.make_server("127.0.0.1", 0, sweeps=[bad])
        assert "\n" not in str(err.value)
    server = explore.make_server("127.0.0.1", 0, sweeps=[sweep_store, sweep_store / "results.zarr"])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        _, _, body = _get(server.url + "api/catalog", headers={"X-Amplify-Token": server.token})
        assert str(sweep_store) not in body.decode() and "results.zarr" not in body.decode()
        cat = json.loads(body)
        assert [s["id"] for s in cat["sweeps"]] == [0, 1] and cat["sweeps"][0]["name"] == "fmt"
        status, r = _post(server.url + "api/sweep", {"store": 1, "x": "eps0", "y": "n"}, server.token)
        assert status == 200 and len(r["series"]) == 3
        status, r = _post(server.url + "api/sweep", {"store": str(sweep_store), "x": "eps0"}, server.token)  # a path
        assert status == 400 and "store=" in r["error"]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    args = build_parser().parse_args(["explore", "--sweep", "a", "--sweep", "b"])
    assert args.sweep == ["a", "b"]


# ----------------------------------------------------------------------------------------------------------
# operational reading: the attacker's true-positive rate at a false-positive rate


def test_tpr_bound_closed_form_and_properties():
    eps = np.array([0.0, 0.1, 1.0, 3.0, 8.0, 50.0])[:, None, None]
    delta = np.array([0.0, 1e-6, 1e-2])[None, :, None]
    fpr = np.linspace(0, 1, 101)[None, None, :]
    got = explore.tpr_bound(eps, delta, fpr)
    ref = np.minimum(1.0, np.minimum(np.exp(eps) * fpr + delta, 1 - np.exp(-eps) * (1 - delta - fpr)))
    np.testing.assert_array_equal(got, ref)
    # Dong-Roth-Su's trade-off function f(a) = max(0, 1 - delta - e^eps a, e^-eps (1 - delta - a)): TPR = 1 - f
    f = np.maximum(0, np.maximum(1 - delta - np.exp(eps) * fpr, np.exp(-eps) * (1 - delta - fpr)))
    np.testing.assert_allclose(got, 1 - f, rtol=0, atol=1e-15)
    assert np.all(got >= fpr - 1e-15) and np.all(np.diff(got, axis=-1) >= -1e-15) and np.all(got <= 1)
    np.testing.assert_array_equal(explore.tpr_bound(0.0, 0.0, [0.0, 0.3, 1.0]), [0.0, 0.3, 1.0])  # no advantage
    assert explore.tpr_bound(1.0, 0.0, 0.01) == pytest.approx(math.e * 0.01, rel=1e-15)
    assert explore.tpr_bound(1e4, 0.0, 0.01) == 1.0  # no overflow
    for bad, needle in (((-1, 0, 0.1), "epsilon=-1"), ((1, 2, 0.1), "delta=2"), ((1, 0, math.nan), "fpr=nan")):
        with pytest.raises(ValueError, match=needle):
            explore.tpr_bound(*bad)
