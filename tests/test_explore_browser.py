"""The explorer page in a real browser: Playwright driving the system's Chromium (``/usr/bin/chromium``).

One browser and one server (in this process, on a free loopback port) for the module.  Each test opens the page,
picks a bound of one paper, types a value or moves a slider as a user does, waits until the page has drawn, and
compares the curves the page drew (``window.explorerShown``: the request sent and the traces handed to the
plotting code) with :func:`amplify_jax.bounds.evaluate` called here at the parameter values the page's boxes
show.  Cheap bounds (closed forms, small kernels) and 25-point curves keep the file to a few seconds of
compilation.  Skips only where the ``playwright`` package or a Chromium executable is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import threading

import numpy as np
import pytest

from amplify_jax import bounds, explore

sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed "
                                                             "(pip install playwright; the test extra has it)")


def _chromium() -> str | None:
    for name in (os.environ.get("AMPLIFY_JAX_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name) if name else None
        if path:
            return path
    return None


TIMEOUT_MS = 30_000  # a bound's first curve compiles its kernel


@pytest.fixture(scope="module")
def sweep_store(tmp_path_factory):
    """A tiny bound sweep (6 x 3 x 2 points of the FMT closed form), opened by the server as --sweep does."""
    from amplify_jax import sweep

    out = tmp_path_factory.mktemp("sweep") / "fmt-sweep"
    spec = sweep.load_spec({"sweep": {"bound": "shuffle.fmt-closed-form", "quantity": "evaluate", "output": str(out)},
                            "grid": {"eps0": {"start": 0.1, "stop": 5.0, "num": 6, "scale": "log"},
                                     "n": [1000, 10000, 100000], "delta": [1e-6, 1e-5]}})
    sweep.run_sweep(spec, progress=False)
    return out


@pytest.fixture(scope="module")
def server(sweep_store):
    srv = explore.make_server("127.0.0.1", 0, sweeps=[sweep_store])
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium executable on PATH (apt-get install chromium; or set AMPLIFY_JAX_CHROMIUM)")
    with sync_api.sync_playwright() as pw:
        try:
            b = pw.chromium.launch(executable_path=exe, headless=True,
                                   args=["--no-sandbox", "--disable-dev-shm-usage"])
        except sync_api.Error as exc:
            pytest.skip(f"Chromium at {exe} does not start under Playwright: {str(exc).splitlines()[0]}")
        yield b
        b.close()


@pytest.fixture
def page(browser, server):
    pg = browser.new_page(viewport={"width": 1400, "height": 1000})
    pg.set_default_timeout(TIMEOUT_MS)
    errors = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.base = server.page_url  # "http://127.0.0.1:PORT/?token=...": the page sends the token on every API call
    yield pg
    pg.close()
    assert not errors, f"JavaScript errors in the page: {errors}"


def _drawn(page) -> int:
    return page.evaluate("window.explorerShown ? window.explorerShown.drawn : 0")


def _settle(page, before: int) -> dict:
    """Wait until the page has drawn after ``before`` drawings and no change waits; what it shows."""
    page.wait_for_function("n => { const s = window.explorerShown; return s && s.settled && s.drawn > n; }",
                           arg=before)
    shown = page.evaluate("window.explorerShown")
    assert shown["error"] is None, shown["error"]
    return shown


def _open(page, query: str) -> dict:
    page.goto(page.base + "&" + query)  # base: the page with this launch's token (server.page_url)
    return _settle(page, 0)


def _type(page, name: str, text: str) -> dict:
    """Type an exact value into a parameter's box and leave it (a change event), as a user does."""
    before = _drawn(page)
    box = page.locator(f"#box-{name}")
    box.fill(text)
    box.press("Tab")
    return _settle(page, before)


def _slide(page, name: str, key: str, times: int = 1) -> tuple[dict, float]:
    """Move a parameter's slider with the keyboard; the value its box then shows."""
    before = _drawn(page)
    slider = page.locator(f"#slider-{name}")
    for _ in range(times):
        slider.press(key)
    shown = _settle(page, before)
    return shown, float(page.locator(f"#box-{name}").input_value())


def _column(values) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def _python_value(name, v):
    """A parameter as the page sent it -> as a Python caller passes it (orders typed as "2,16": a list)."""
    if isinstance(v, list) or (name == "orders" and isinstance(v, str)):
        return np.array([float(t) for t in (v.split(",") if isinstance(v, str) else v)], dtype=np.float64)
    return v


def _check_against_python(shown: dict) -> np.ndarray:
    """The drawn curves equal bounds.evaluate at the request's parameters and the drawn x values (bit for bit:
    floats cross JSON and JavaScript unchanged).  Returns the x values."""
    req = shown["request"]
    curves = [t for t in shown["traces"] if t["style"] == "solid"]
    xs = _column(curves[0]["x"])
    kw = {k: _python_value(k, v) for k, v in req["params"].items()}
    kw[req["x"]] = xs
    ref = np.asarray(bounds.evaluate(req["bound"], **kw).value)
    ref = ref[:, None] if ref.ndim == 1 else ref
    assert len(curves) == ref.shape[1] and all(t["label"] for t in curves)
    for j, t in enumerate(curves):
        np.testing.assert_array_equal(_column(t["x"]), xs)
        np.testing.assert_array_equal(_column(t["y"]), ref[:, j])
    # and the same as the JSON interface's answer to the request the page sent
    answer = explore.request("curve", req)
    for t, s in zip(curves, answer["series"]):
        np.testing.assert_array_equal(_column(t["y"]), _column(s["y"]))
    return xs


# ----------------------------------------------------------------------------------------------------------
# one bound of each paper: type a value, move a slider, compare with the Python API


def test_shuffle_type_and_slide(page):
    shown = _open(page, "bound=shuffle.fmt-closed-form&x=eps0&points=25")
    assert shown["bound"] == "shuffle.fmt-closed-form" and shown["x"] == "eps0"
    xs = _check_against_python(shown)
    assert xs.size == 25 and page.locator("#plot svg").count() == 1  # matplotlib's drawing is in the page
    shown = _type(page, "n", "20000")
    assert shown["request"]["params"]["n"] == 20000
    before = shown["request"]["params"]["delta"]
    shown, delta = _slide(page, "delta", "ArrowRight", 3)
    assert shown["request"]["params"]["delta"] == delta != before
    _check_against_python(shown)
    assert "shuffle.fmt-closed-form=" not in page.url and "p.n=20000" in page.url  # the state is in the URL


def test_traffic_pick_bound_and_slide(page):
    _open(page, "bound=shuffle.fmt-closed-form&points=25")
    before = _drawn(page)
    page.select_option("#bound", "traffic.local")  # pick from the list grouped by paper
    shown = _settle(page, before)
    assert shown["bound"] == "traffic.local"
    _check_against_python(shown)
    shown, sampling = _slide(page, "sampling", "ArrowLeft", 5)
    assert shown["request"]["params"]["sampling"] == sampling
    assert shown["x"] == "targets"
    shown = _type(page, "dummies", "30")
    assert shown["request"]["params"]["dummies"] == 30
    _check_against_python(shown)


def test_checkin_rdp_orders_typed(page):
    _open(page, "bound=checkin.shuffled-gaussian-rdp&x=sigma&points=25")
    shown = _type(page, "orders", "2,16")
    assert shown["request"]["params"]["orders"] == "2,16"
    assert [t["label"] for t in shown["traces"]] == ["α=2", "α=16"]
    shown = _type(page, "n", "5000")
    _check_against_python(shown)


def test_network_family_of_curves(page):
    _open(page, "bound=network.ring-histogram&x=eps0&points=25")
    before = _drawn(page)
    page.select_option("#family", "n")
    shown = _settle(page, before)
    assert shown["request"]["family"] == "n" and len(shown["traces"]) == 3
    req = shown["request"]
    xs = _column(shown["traces"][0]["x"])
    ns = np.array([float(t["label"].split("=")[1]) for t in shown["traces"]])
    kw = {k: v for k, v in req["params"].items()}
    ref = bounds.evaluate(req["bound"], eps0=xs[None, :], n=ns[:, None], **kw).epsilon
    for i, t in enumerate(shown["traces"]):
        np.testing.assert_array_equal(_column(t["y"]), ref[i])
    shown, steps = _slide(page, "steps", "ArrowRight", 2)
    assert shown["request"]["params"]["steps"] == steps


def test_secrdp_graph_picker(page):
    _open(page, "bound=secrdp.step&x=sigma_cor&points=25")
    shown = _type(page, "graph", "torus:3x3")
    assert shown["request"]["params"]["graph"] == "torus:3x3"
    _check_against_python(shown)
    before = _drawn(page)
    page.locator("#box-graph").fill("/etc/passwd")  # a path is refused in the page, and the page goes on
    page.locator("#box-graph").press("Tab")
    page.wait_for_function("() => window.explorerShown.settled && window.explorerShown.error")
    assert "graph='/etc/passwd'" in page.locator("#message").inner_text()
    assert _drawn(page) == before
    shown = _type(page, "graph", "ring:8")
    _check_against_python(shown)


def test_rdp_accounting_and_bad_value(page):
    _open(page, "bound=rdp.gaussian&x=sigma&points=25")
    shown = _type(page, "orders", "1.5,4")
    _check_against_python(shown)
    box = page.locator("#box-orders")
    box.fill("0.5")  # outside the domain: one line naming the parameter, the old curves stay
    box.press("Tab")
    page.wait_for_function("() => window.explorerShown.settled && window.explorerShown.error")
    message = page.locator("#message").inner_text()
    assert "orders" in message and "\n" not in message and "Traceback" not in message
    before = _drawn(page)
    page.select_option("#bound", "gaussian")  # eps of the composed Gaussian mechanism, by Rényi DP
    shown = _settle(page, before)
    assert shown["bound"] == "gaussian" and page.locator("#message").inner_text() == ""
    shown = _type(page, "steps", "50")
    _check_against_python(shown)


# ----------------------------------------------------------------------------------------------------------
# solving from the page


def test_solve_equals_invert(page):
    _open(page, "bound=shuffle.fmt-closed-form&x=delta&points=25")
    shown = _type(page, "eps0", "3")
    page.select_option("#solve-for", "n")
    page.locator("#solve-target").fill("0.5")
    page.locator("#solve").click()
    page.wait_for_function("() => window.explorerShown.solved")
    solved = page.evaluate("window.explorerShown.solved")
    assert shown["request"]["params"]["eps0"] == 3 and solved["params"]["eps0"] == 3
    delta = solved["params"]["delta"]  # the value the page holds for the x axis's parameter: the example's
    assert delta == bounds.get("shuffle.fmt-closed-form").example["delta"]
    ref = bounds.invert("shuffle.fmt-closed-form", solve_for="n", target_epsilon=0.5, eps0=3.0, delta=delta)
    assert solved["status"] == "ok" and solved["value"] == float(ref.n) and solved["achieved"] <= 0.5
    assert f"n = {int(ref.n)}" in page.locator("#solve-result").inner_text()
    op = page.evaluate("window.explorerShown.operational")  # the solved point's (eps, delta), read as an attack
    assert (op["epsilon"], op["delta"], op["fpr"]) == (solved["achieved"], delta, 0.01)
    assert op["tpr"] == pytest.approx(float(explore.tpr_bound(solved["achieved"], delta, 0.01)), rel=1e-14)
    before_tpr = op["tpr"]
    page.locator("#op-fpr").fill("0.1")
    op = page.evaluate("window.explorerShown.operational")
    assert op["tpr"] == pytest.approx(float(explore.tpr_bound(solved["achieved"], delta, 0.1)), rel=1e-14)
    assert op["tpr"] > before_tpr and page.locator("#op-tpr").inner_text() != ""
    before = _drawn(page)
    page.get_by_role("button", name="use it").click()  # the answer becomes the parameter's value
    shown = _settle(page, before)
    assert shown["request"]["params"]["n"] == float(ref.n)
    _check_against_python(shown)


def test_solved_answer_marked_on_the_curve_and_cited_legend(page):
    shown = _open(page, "bound=shuffle.fmt-closed-form&x=n&lo=100&hi=1000000&points=25&p.eps0=2")
    svg = page.locator("#plot svg").inner_html()
    assert "shuffle.fmt-closed-form — FMT 2021, Thm 3.1" in svg  # the legend names the paper and theorem
    assert page.locator("#plot svg #explore-solved").count() == 0
    before = shown["drawn"]
    page.select_option("#solve-for", "n")
    page.locator("#solve-target").fill("0.5")
    page.locator("#solve").click()
    page.wait_for_function("n => { const s = window.explorerShown; return s.solved && s.drawn > n && s.mark; }",
                           arg=before)
    shown = page.evaluate("window.explorerShown")
    solved = shown["solved"]
    assert solved["status"] == "ok" and 100 <= solved["value"] <= 1e6
    assert shown["mark"]["x"] == solved["value"] and shown["mark"]["y"] == solved["achieved"] <= 0.5
    page.wait_for_selector("#plot svg #explore-solved", state="attached")  # the point (n, eps) in matplotlib's SVG
    assert page.locator("#plot svg #explore-solved path").count() >= 1
    _check_against_python(shown)  # the traces themselves are unchanged
    # solved for a parameter that is not the x axis: a line at the target
    before = _drawn(page)
    page.select_option("#x", "eps0")
    _settle(page, before)
    before = _drawn(page)
    page.locator("#solve").click()
    page.wait_for_function("n => { const s = window.explorerShown; return s.drawn > n && s.mark && s.mark.x === "
                           "undefined; }", arg=before)
    mark = page.evaluate("window.explorerShown.mark")
    assert mark["y"] == 0.5 and "target ε = 0.5" in mark["label"]
    page.wait_for_selector("#plot svg #explore-solved", state="attached")


def test_url_reopens_the_same_view(page):
    shown = _open(page, "bound=shuffle.fmt-closed-form&x=n&lo=100&hi=100000&points=20&p.eps0=2&logy=1")
    url = page.url
    page.goto(url)
    again = _settle(page, 0)
    assert json.dumps(again["request"], sort_keys=True) == json.dumps(shown["request"], sort_keys=True)
    assert again["request"]["params"]["eps0"] == 2 and again["request"]["lo"] == 100
    _check_against_python(again)


# ----------------------------------------------------------------------------------------------------------
# export: PNG, CSV of the curves shown, the command and the Python call


def test_export_png_csv_and_command(page, capsys):
    import csv
    import io
    import shlex

    from amplify_jax.cli import main

    shown = _open(page, "bound=shuffle.fmt-closed-form&x=eps0&points=20&family=n&fv=10000,100000")
    assert [t["label"] for t in shown["traces"]] == ["n=10000", "n=100000"]
    with page.expect_download() as dl:
        page.locator("#export-csv").click()
    with open(dl.value.path(), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["curve", "eps0", "epsilon"] and len(rows) == 40
    xs = _column(shown["traces"][0]["x"])
    ref = bounds.evaluate("shuffle.fmt-closed-form", eps0=xs[None, :], n=np.array([[1e4], [1e5]]),
                          delta=shown["request"]["params"]["delta"]).epsilon
    for i, label in enumerate(["n=10000", "n=100000"]):
        mine = [r for r in rows if r["curve"] == label]
        np.testing.assert_array_equal([float(r["eps0"]) for r in mine], xs)
        np.testing.assert_array_equal([float(r["epsilon"]) for r in mine], ref[i])

    with page.expect_download() as dl:
        page.locator("#export-png").click()
    assert dl.value.suggested_filename == "shuffle.fmt-closed-form-eps0.png"
    with open(dl.value.path(), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"

    page.locator("#export-code").click()
    page.wait_for_function("() => window.explorerShown.exported")
    command = page.locator("#export-command").inner_text()
    assert command == explore.export(shown["request"])["command"]
    assert "--n 10000,100000" in command and "--eps0 log:" in command
    capsys.readouterr()
    assert main(shlex.split(command)[1:]) == 0
    out = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    got = np.array([float(r["epsilon"]) for r in out]).reshape(xs.size, 2).T  # eps0 the outer loop
    np.testing.assert_array_equal(got, ref)
    ns = {}
    exec(page.locator("#export-python").inner_text(), ns)  # noqa: S102 - the snippet the page shows
    np.testing.assert_array_equal(ns["res"].epsilon, ref)


# ----------------------------------------------------------------------------------------------------------
# a sweep store opened with --sweep


def _sweep_settle(page, before: int) -> dict:
    page.wait_for_function("n => { const s = window.explorerShown; return s.sweepSettled && s.sweep && "
                           "s.sweep.drawn > n; }", arg=before)
    return page.evaluate("window.explorerShown.sweep")


def test_sweep_store_curves_and_heatmap(page):
    _open(page, "bound=shuffle.fmt-closed-form&points=20")
    assert page.locator("#sweep-section").is_visible()
    assert "fmt-sweep" in page.locator("#sweep-store").inner_text()
    sw = _sweep_settle(page, 0)
    assert sw["request"]["x"] == "eps0" and sw["request"]["y"] == "n" and sw["request"]["fixed"] == {"delta": 0}
    ans = sw["answer"]
    xs = _column(ans["x"]["values"])
    np.testing.assert_allclose(xs, np.geomspace(0.1, 5.0, 6), rtol=1e-15)
    ref = bounds.evaluate("shuffle.fmt-closed-form", eps0=xs[None, :], n=np.array([[1e3], [1e4], [1e5]]),
                          delta=1e-6).epsilon
    np.testing.assert_array_equal([_column(s["y"]) for s in ans["series"]], ref)
    assert page.locator("#sweep-plot svg").count() == 1
    page.select_option("#sweep-kind", "heatmap")
    sw = _sweep_settle(page, sw["drawn"])
    page.locator("#sweep-fixed-delta").press("ArrowRight")  # delta: index 0 -> 1
    sw = _sweep_settle(page, sw["drawn"])
    assert sw["request"]["kind"] == "heatmap" and sw["request"]["fixed"] == {"delta": 1}
    assert "delta = 1e-5" in page.locator("#sweep-fixed-value-delta").inner_text()
    ref = bounds.evaluate("shuffle.fmt-closed-form", eps0=xs[None, :], n=np.array([[1e3], [1e4], [1e5]]),
                          delta=1e-5).epsilon
    np.testing.assert_array_equal(np.array(sw["answer"]["z"], dtype=float), ref)


# ----------------------------------------------------------------------------------------------------------
# the Plotly path: where the server finds plotly.js (inside an installed ``plotly`` package) the page draws with
# it.  plotly is not a dependency, so the test needs a plotly.min.js on this machine: the installed package's, or
# the file AMPLIFY_JAX_PLOTLY_JS names (e.g. unzipped from a plotly wheel), which is laid out as a package only
# while the server starts.  Nothing is fetched from the network, by the test or by the page.


def _plotly_file():
    found = explore.plotly_js()
    if found is not None:
        return found, False
    env = os.environ.get("AMPLIFY_JAX_PLOTLY_JS")
    if env and os.path.isfile(env):
        return env, True
    pytest.skip("plotly.js cannot be loaded offline here: the plotly package is not installed (pip install plotly) "
                "and AMPLIFY_JAX_PLOTLY_JS names no plotly.min.js")


@pytest.fixture(scope="module")
def plotly_server(tmp_path_factory):
    path, lay_out = _plotly_file()
    mp = pytest.MonkeyPatch()
    try:
        if lay_out:  # a package directory "plotly" with package_data/plotly.min.js, first on sys.path
            root = tmp_path_factory.mktemp("plotly-pkg")
            (root / "plotly" / "package_data").mkdir(parents=True)
            (root / "plotly" / "__init__.py").write_text("")
            shutil.copyfile(path, root / "plotly" / "package_data" / "plotly.min.js")
            mp.syspath_prepend(str(root))
        srv = explore.make_server("127.0.0.1", 0)
    finally:
        mp.undo()
    assert "/static/plotly.min.js" in srv.assets
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=10)


@pytest.fixture
def plotly_page(browser, plotly_server):
    pg = browser.new_page(viewport={"width": 1400, "height": 1000})
    pg.set_default_timeout(TIMEOUT_MS)
    errors, requests = [], []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("request", lambda req: requests.append(req.url))
    pg.base = plotly_server.page_url
    yield pg
    pg.close()
    assert not errors, f"JavaScript errors in the page: {errors}"
    origin = plotly_server.page_url.split("/?")[0]
    assert all(u.startswith(origin) for u in requests), [u for u in requests if not u.startswith(origin)]


def _plotly_state(page) -> dict:
    """What Plotly drew: its traces, axes (type, tick values and labels), title, shapes, and the tick labels and
    legend entries present in the page's SVG."""
    return page.evaluate("""() => {
      const gd = document.getElementById("plot"), L = gd._fullLayout;
      const texts = (sel) => [...gd.querySelectorAll(sel)].map((e) => e.textContent).filter((t) => t.trim());
      return {
        traces: gd.data.map((d) => ({ name: d.name, mode: d.mode, x: Array.from(d.x), y: Array.from(d.y),
                                      symbol: d.marker ? d.marker.symbol : null })),
        xaxis: { type: L.xaxis.type, range: L.xaxis.range, tickvals: L.xaxis.tickvals, ticktext: L.xaxis.ticktext },
        yaxis: { type: L.yaxis.type, range: L.yaxis.range, tickvals: L.yaxis.tickvals, ticktext: L.yaxis.ticktext },
        title: texts(".gtitle").join(" "), shapes: (gd.layout.shapes || []).length,
        xticks: texts(".xtick text"), yticks: texts(".ytick text"), legend: texts(".legendtext"),
        svgs: gd.querySelectorAll("svg.main-svg").length,
      };
    }""")


def test_plotly_draws_the_curves_with_labelled_log_ticks_and_marked_fallbacks(plotly_page):
    page = plotly_page
    shown = _open(page, "bound=shuffle.fmt-closed-form&x=eps0&lo=0.1&hi=30&points=25")
    assert page.evaluate("typeof window.Plotly") == "object" and page.evaluate("window.Plotly.version")
    assert "Plotly" in page.locator("body").inner_text()  # the page says what draws its curves
    _check_against_python(shown)
    st = _plotly_state(page)
    assert st["svgs"] >= 1 and page.locator("#plot svg #explore-solved").count() == 0  # Plotly's, not matplotlib's
    # the lines Plotly holds are the curves the page computed (bit for bit) ...
    lines = [t for t in st["traces"] if t["mode"] == "lines"]
    solid = [t for t in shown["traces"] if t["style"] == "solid"]
    assert len(lines) == len(shown["traces"])
    for t, s in zip(lines, solid):
        np.testing.assert_array_equal(_column(t["x"]), _column(s["x"]))
        np.testing.assert_array_equal(_column(t["y"]), _column(s["y"]))
        assert t["name"].startswith(s["label"] or shown["bound"])
    # ... on log axes whose ticks are labelled (at least two each, drawn in the SVG, within the data's range)
    assert shown["logy"] and st["xaxis"]["type"] == st["yaxis"]["type"] == "log"
    for ax, drawn in (("xaxis", st["xticks"]), ("yaxis", st["yticks"])):
        assert len(st[ax]["ticktext"]) >= 2 and len(drawn) >= 2, (ax, st[ax], drawn)
        assert set(drawn) <= set(st[ax]["ticktext"])
    ys = _column(solid[0]["y"])
    assert st["yaxis"]["tickvals"][0] >= np.nanmin(ys) / 10 and st["yaxis"]["tickvals"][-1] <= np.nanmax(ys) * 10
    assert "shuffle.fmt-closed-form" in st["title"]
    # the fallback points carry a marker of their own and a legend entry
    marks = [t for t in st["traces"] if t["mode"] == "markers"]
    status = solid[0]["status"]
    n_fallback = sum(s == "fallback" for s in status)
    assert n_fallback > 0 and len(marks) == 1 and marks[0]["symbol"] == "triangle-up-open"
    assert len(marks[0]["x"]) == n_fallback
    assert any(e.startswith("fallback: the theorem") for e in st["legend"])


def test_plotly_zoom_relabels_the_log_ticks(plotly_page):
    page = plotly_page
    _open(page, "bound=shuffle.fmt-closed-form&x=eps0&lo=0.1&hi=30&points=25")
    before = _plotly_state(page)["yaxis"]
    # a drag on the plot area zooms in (Plotly's default drag mode), as a user does
    box = page.locator("#plot .nsewdrag").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.45, box["y"] + box["height"] * 0.45)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.55, box["y"] + box["height"] * 0.55, steps=5)
    page.mouse.up()
    page.wait_for_function("r => { const a = document.getElementById('plot')._fullLayout.yaxis; "
                           "return a.range[0] !== r[0] || a.range[1] !== r[1]; }", arg=before["range"])
    page.wait_for_timeout(300)  # the relayout handler's own relayout
    st = _plotly_state(page)
    lo, hi = (10 ** v for v in st["yaxis"]["range"])
    assert hi / lo < 100  # zoomed in
    for ax, drawn in (("xaxis", st["xticks"]), ("yaxis", st["yticks"])):
        vals = st[ax]["tickvals"]
        a, b = (10 ** v for v in st[ax]["range"])
        inside = [v for v in vals if min(a, b) <= v <= max(a, b)]
        assert len(inside) >= 2 and len(drawn) >= 2, (ax, st[ax], drawn)


def test_plotly_solved_answer_marked(plotly_page):
    page = plotly_page
    shown = _open(page, "bound=shuffle.fmt-closed-form&x=n&lo=100&hi=1000000&points=25&p.eps0=2")
    assert _plotly_state(page)["shapes"] == 0
    page.select_option("#solve-for", "n")
    page.locator("#solve-target").fill("0.5")
    page.locator("#solve").click()
    page.wait_for_function("n => { const s = window.explorerShown; return s.solved && s.drawn > n && s.mark; }",
                           arg=shown["drawn"])
    shown = page.evaluate("window.explorerShown")
    assert shown["solved"]["status"] == "ok" and shown["mark"]["x"] == shown["solved"]["value"]
    st = _plotly_state(page)
    assert st["shapes"] == 1 and len(st["xticks"]) >= 2 and len(st["yticks"]) >= 2
    assert page.locator("#plot .annotation-text").count() == 1
