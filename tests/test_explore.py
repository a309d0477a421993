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
    (explore.curve, (FMT, "eps0"), {"x_values": [1.0, 40.0]}, "eps0=40"),
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


# ----------------------------------------------------------------------------------------------------------
# the server and the command line


def _get(url, headers=None):
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=30) as resp:
        return resp.status, resp.headers.get("Content-Type"), resp.read()


def _post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
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
        base = server.url
        assert base.startswith("http://127.0.0.1:")
        status, ctype, page = _get(base)
        assert status == 200 and ctype.startswith("text/html") and b"/static/explore.js" in page
        status, ctype, js = _get(base + "static/explore.js")
        assert status == 200 and b"/api/curve" in js
        status, ctype, body = _get(base + "api/catalog")
        cat = json.loads(body)
        assert ctype == "application/json" and cat["plotting"] in ("plotly", "matplotlib")
        assert len([b for g in cat["groups"] for b in g["bounds"]]) == len(bounds.list())
        req = {"bound": FMT, "x": "eps0", "x_values": [0.5, 1.0, 2.0], "params": {"n": 1e5, "delta": 1e-6}}
        status, r = _post(base + "api/curve", req)
        assert status == 200
        assert r["series"][0]["y"] == explore.request("curve", req)["series"][0]["y"]
        status, r = _post(base + "api/curve", {**req, "params": {"n": 1e5, "delta": 2}})
        assert status == 400 and r == {"error": "Expected delta in (0, 1), got delta=2.0."}
        status, r = _post(base + "api/solve", {"bound": FMT, "solve_for": "n", "target_epsilon": 1.0})
        assert status == 200 and r["status"] == "ok"
        for path in ("static/../../pyproject.toml", "static/_api.py", "etc/passwd", "static/"):
            with pytest.raises(urllib.error.HTTPError) as err:
                _get(base + path)
            assert err.value.code == 404
        with pytest.raises(urllib.error.HTTPError) as err:  # a page that rebinds its name to 127.0.0.1
            _get(base + "api/catalog", headers={"Host": "attacker.example:80"})
        assert err.value.code == 403
        status, r = _post(base + "api/nothing", {})
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
