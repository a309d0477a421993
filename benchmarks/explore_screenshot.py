"""A screenshot of the explorer page (docs/explorer.png), made with Playwright driving the system's Chromium.

The view: the clones bound (Feldman-McMillan-Talwar) along eps0
with Erlingsson et al.'s bound and the FMT closed form pinned on the same plot, a solve for the smallest n at
eps = 1 with its operational reading, and a sweep store (a small FMT sweep made here) as a heat map.

    python benchmarks/explore_screenshot.py [--output docs/explorer.png] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import threading
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]


def _sweep(folder: Path) -> Path:
    from amplify_jax import sweep

    out = folder / "fmt-sweep"
    spec = sweep.load_spec({"sweep": {"bound": "shuffle.fmt-closed-form", "quantity": "evaluate", "output": str(out)},
                            "grid": {"eps0": {"start": 0.1, "stop": 5.0, "num": 40, "scale": "log"},
                                     "n": [int(round(10 ** (3 + k / 8))) for k in range(25)],
                                     "delta": [1e-6, 1e-5]}})
    sweep.run_sweep(spec, progress=False)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", default=str(ROOT / "docs" / "explorer.png"))
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = ap.parse_args()

    from playwright.sync_api import sync_playwright

    from amplify_jax import explore

    with tempfile.TemporaryDirectory() as tmp:
        server = explore.make_server("127.0.0.1", 0, sweeps=[_sweep(Path(tmp))])
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        pins = [{"bound": b, "x": "eps0", "lo": 0.1, "hi": 5, "points": 60, "log": True,
                 "params": {"n": 100000, "delta": 1e-6}} for b in ("shuffle.erlingsson", "shuffle.fmt-closed-form")]
        query = [("bound", "shuffle.clones"), ("x", "eps0"), ("lo", "0.1"), ("hi", "5"), ("points", "60"),
                 ("logx", "1"), ("logy", "1"), ("p.n", "100000"), ("p.delta", "0.000001"), ("solve_for", "n"),
                 ("target", "1")] + [("pin", json.dumps(p)) for p in pins]
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=args.chromium, headless=True,
                                             args=["--no-sandbox", "--disable-dev-shm-usage"])
                page = browser.new_page(viewport={"width": 1500, "height": 1000})
                page.set_default_timeout(300_000)  # the clones bound's kernel compiles on its first curve
                page.goto(server.url + "?" + urlencode([("token", server.token)] + query))
                page.wait_for_function("() => window.explorerShown.settled && window.explorerShown.drawn > 0")
                page.locator("#solve").click()
                page.wait_for_function("() => window.explorerShown.solved")
                page.wait_for_function("() => window.explorerShown.settled && window.explorerShown.sweepSettled")
                page.select_option("#sweep-kind", "heatmap")
                page.locator("#sweep-logz").check()
                page.wait_for_function("() => window.explorerShown.sweepSettled && "
                                       "window.explorerShown.sweep.request.kind === 'heatmap' && "
                                       "window.explorerShown.sweep.request.logz")
                Path(args.output).parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=args.output, full_page=True)
                browser.close()
        finally:
            server.shutdown()
            server.server_close()
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
