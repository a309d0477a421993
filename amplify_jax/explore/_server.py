"""The explorer's HTTP server: the page, its two static files and the JSON endpoints, on the standard library.

    GET  /                     the page (static/index.html)
    GET  /static/NAME          explore.js, explore.css, plotly.min.js (from the installed plotly, if any)
    GET  /api/catalog          catalog()
    POST /api/curve            request("curve", body)
    POST /api/solve            request("solve", body)
    POST /api/render           render(body): the curves as SVG (the page's drawing without Plotly), or PNG
    POST /api/export           export(body): the command and the Python snippet that reproduce a curve
    POST /api/sweep            a slice of a sweep store opened by --sweep (by its index: the page sends no path)

Files are read once at start from a fixed table: no path of a request reaches the file system; the only other
files read are the sweep stores given to ``make_server(sweeps=[...])`` (``--sweep``), named by index.  One computation
runs at a time (a lock); at most ``queue`` requests wait for it, each at most ``wait`` seconds, and the others
are answered 503 at once, so that requests never pile up.  Bound to loopback, the server also refuses a request
whose Host header names another machine (a web page that rebinds its name to 127.0.0.1 cannot read it).
"""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
import threading
import traceback
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from ._api import catalog, request
from ._export import export
from ._render import render
from ._sweeps import open_store, sweep_slice

__all__ = ["ExploreServer", "make_server", "serve", "plotly_js", "MAX_BODY"]

MAX_BODY = 2 * 1024 * 1024  #: bytes of a request body (a drawing of 24 curves of 2000 points fits)
STATIC = Path(__file__).resolve().parent / "static"
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8"}
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def plotly_js() -> Path | None:
    """plotly.js as shipped inside the installed ``plotly`` Python package (found without importing it)."""
    try:
        spec = importlib.util.find_spec("plotly")
    except (ImportError, ValueError):
        return None
    for loc in (spec.submodule_search_locations or []) if spec else []:
        path = Path(loc) / "package_data" / "plotly.min.js"
        if path.is_file():
            return path
    return None


def _assets() -> dict:
    """URL path -> (bytes, content type): the page's files, read once."""
    out = {"/": ((STATIC / "index.html").read_bytes(), _TYPES[".html"])}
    for name in ("explore.js", "explore.css"):
        out["/static/" + name] = ((STATIC / name).read_bytes(), _TYPES[Path(name).suffix])
    plotly = plotly_js()
    if plotly is not None:
        out["/static/plotly.min.js"] = (plotly.read_bytes(), _TYPES[".js"])
    return out


class _Busy(Exception):
    pass


class _Gate:
    """One computation at a time; at most ``queue`` waiting, each for at most ``wait`` seconds."""

    def __init__(self, queue: int, wait: float):
        self.queue, self.wait = queue, wait
        self._slots = threading.BoundedSemaphore(queue + 1)
        self._lock = threading.Lock()

    @contextmanager
    def __call__(self):
        if not self._slots.acquire(blocking=False):
            raise _Busy(f"busy: {self.queue} requests already wait for the computation in progress; try again")
        try:
            if not self._lock.acquire(timeout=self.wait):
                raise _Busy(f"busy: waited {self.wait:g} s for the computation in progress; try again")
            try:
                yield
            finally:
                self._lock.release()
        finally:
            self._slots.release()


class ExploreServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer with the explorer's assets, its computation gate and its cached catalog."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, *, queue: int = 32, wait: float = 120.0, verbose: bool = False, sweeps=()):
        self.assets = _assets()
        self.sweeps = [open_store(p, i) for i, p in enumerate(sweeps)]  # ValueError naming a bad path, at start
        cat = catalog()
        cat["plotting"] = "plotly" if "/static/plotly.min.js" in self.assets else "matplotlib"
        cat["sweeps"] = [s.info for s in self.sweeps]
        self.catalog_bytes = json.dumps(cat).encode()
        self.gate = _Gate(queue, wait)
        self.verbose = verbose
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}/"


class _Handler(BaseHTTPRequestHandler):
    server_version = "amplify-jax-explore"
    server: ExploreServer

    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        if self.server.verbose:
            super().log_message(format, *args)

    def _send(self, code: int, body: bytes, ctype: str):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, code: int, payload: dict):
        self._send(code, json.dumps(payload, allow_nan=False).encode(), "application/json")

    def _host_ok(self) -> bool:
        if self.server.server_address[0] not in ("127.0.0.1", "::1"):
            return True
        host = (self.headers.get("Host") or "").strip().lower()
        name = host[1:host.find("]")] if host.startswith("[") else host.rsplit(":", 1)[0] if ":" in host else host
        return name in _LOOPBACK or name.startswith("127.")

    def do_GET(self):  # noqa: N802 - http.server's names
        if not self._host_ok():
            return self._json(403, {"error": "Expected a request to this machine (Host 127.0.0.1 or localhost)."})
        path = urlsplit(self.path).path
        if path == "/api/catalog":
            return self._send(200, self.server.catalog_bytes, "application/json")
        if path == "/favicon.ico":  # browsers ask for it: no icon, no error in the page's console
            return self._send(204, b"", "image/x-icon")
        if path in self.server.assets:
            body, ctype = self.server.assets[path]
            return self._send(200, body, ctype)
        return self._json(404, {"error": f"Expected one of the explorer's pages, got {path[:80]!r}."})

    do_HEAD = do_GET

    def do_POST(self):  # noqa: N802
        if not self._host_ok():
            return self._json(403, {"error": "Expected a request to this machine (Host 127.0.0.1 or localhost)."})
        path = urlsplit(self.path).path
        handlers = {"/api/curve": lambda b: request("curve", b), "/api/solve": lambda b: request("solve", b),
                    "/api/render": render, "/api/export": export,
                    "/api/sweep": lambda b: sweep_slice(self.server.sweeps, b)}
        if path not in handlers:
            return self._json(404, {"error": f"Expected a POST to {', '.join(handlers)}, got {path[:80]!r}."})
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            return self._json(411, {"error": "Expected a Content-Length header."})
        if not 0 < length <= MAX_BODY:
            self.close_connection = True
            return self._json(413, {"error": f"Expected a JSON body of 1 to {MAX_BODY} bytes, got {length}."})
        try:
            body = json.loads(self.rfile.read(length))
        except (ValueError, UnicodeDecodeError):
            return self._json(400, {"error": "Expected a JSON object as the request body."})
        try:
            with self.server.gate():
                result = handlers[path](body)
        except _Busy as exc:
            return self._json(503, {"error": str(exc)})
        except Exception as exc:  # the server's boundary: log it here, answer one line, keep serving
            traceback.print_exc(file=sys.stderr)
            first = (str(exc).strip().splitlines() or [""])[0][:200]
            return self._json(500, {"error": f"internal error ({type(exc).__name__}): {first}"})
        return self._json(400 if "error" in result else 200, result)


def make_server(host: str = "127.0.0.1", port: int = 8050, **kw) -> ExploreServer:
    """The explorer's server, bound (port 0: a free port, see ``server.url``); run it with ``serve_forever``."""
    return ExploreServer((host, port), **kw)


def serve(host: str = "127.0.0.1", port: int = 8050, *, open_browser: bool = True, **kw) -> None:
    """Serve the explorer until Ctrl-C (``amplify-jax explore``)."""
    try:
        server = make_server(host, port, **kw)
    except (OSError, OverflowError) as exc:  # port in use, no such address, port out of 0..65535
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ValueError(f"Expected an address and a free port to serve on, got --host {host} --port {port} "
                         f"({reason.rstrip('.')}).") from None
    print(f"amplify-jax explore: {server.url}  (Ctrl-C to stop)", flush=True)
    for st in server.sweeps:
        print(f"sweep store {st.index}: {st.path} ({st.info['bound']}, dimensions "
              f"{', '.join(d['name'] for d in st.info['dims'])})", flush=True)
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(f"warning: bound to {host}: other machines can reach the explorer", file=sys.stderr, flush=True)
    if open_browser:
        import webbrowser

        threading.Timer(0.5, webbrowser.open, (server.url,)).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
