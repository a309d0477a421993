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
are answered 503 at once, so that requests never pile up.

Who may ask (as a notebook server does):

- Bound to a loopback address, the server answers only requests whose Host header is a loopback address
  (127.0.0.0/8, ``[::1]``, parsed by :mod:`ipaddress`) or exactly ``localhost``, with an optional port; anything
  else (``127.evil.com``, ``127.0.0.1.nip.io``, ``127.0.0.1@evil.com``, no Host) gets 403: a web page that
  rebinds its own name to 127.0.0.1 cannot use it.
- Every ``/api/`` call carries the launch's token (``secrets.token_urlsafe``; ``server.token``), as the query
  parameter ``token=`` or the header ``X-Amplify-Token``; without it, or with another, 403.  The page is opened
  at ``server.page_url`` (``http://127.0.0.1:PORT/?token=...``, printed by ``amplify-jax explore``) and sends the
  token of its own URL with each call.  The page's static files need no token (they hold no data).

What any client gets: a fixed pool of ``workers`` threads (no thread per connection) fed by a bounded queue of
accepted connections, a listen backlog of :data:`BACKLOG` connections for bursts, a deadline of ``timeout``
seconds to send a whole request (request line, headers and body: a request that never finishes is answered 408
and dropped), a body of at most :data:`MAX_BODY` bytes (413) and JSON nested at most :data:`MAX_DEPTH` deep
(400).  Every malformed request is answered with a 4xx status and one JSON line ``{"error": "..."}``; a
connection whose input was not read to its end is closed after draining it (a bounded "lingering close"), so
that the client reads the answer instead of a reset.
"""

from __future__ import annotations

import hmac
import importlib.util
import ipaddress
import io
import json
import queue as _queue
import secrets
import socket
import sys
import threading
import time
import traceback
import webbrowser
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

from ._api import catalog, request
from ._export import export
from ._render import render
from ._sweeps import open_store, sweep_slice

__all__ = ["ExploreServer", "make_server", "serve", "plotly_js", "MAX_BODY", "MAX_DEPTH", "BACKLOG",
           "TOKEN_HEADER"]

MAX_BODY = 2 * 1024 * 1024  #: bytes of a request body (a drawing of 24 curves of 2000 points fits)
MAX_DEPTH = 32  #: nesting of a request's JSON (the deepest request, a render spec, nests 4 deep)
BACKLOG = 256  #: the listen backlog: connections the kernel holds while the workers are busy
TOKEN_HEADER = "X-Amplify-Token"  #: the header that may carry the launch's token (else the query's token=)
LINGER_S = 1.0  #: at most this long, and at most LINGER_BYTES, drained from a connection closed with unread input
LINGER_BYTES = 2 * MAX_BODY + 65536
STATIC = Path(__file__).resolve().parent / "static"
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8"}


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


def _is_loopback(text: str) -> bool:
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False


def host_is_loopback(host: str | None) -> bool:
    """Whether a Host header names this machine: ``localhost`` or a loopback address ([::1] in brackets), with an
    optional port of digits; nothing else (no user part, no trailing name, no bare IPv6)."""
    host = (host or "").strip().lower()
    if host.startswith("["):
        end = host.find("]")
        name, rest = host[1:end], host[end + 1:]
        if end < 0 or ":" not in name:
            return False
    else:
        name, _, port = host.partition(":")
        rest = ":" + port if _ else ""
        if ":" in port:
            return False
    if rest and not (rest.startswith(":") and rest[1:].isascii() and rest[1:].isdigit() and len(rest) <= 6):
        return False
    return name == "localhost" or (name.isascii() and _is_loopback(name))


def _depth_ok(obj, limit: int) -> bool:
    """Whether JSON ``obj`` nests at most ``limit`` containers deep (an explicit stack: no recursion)."""
    stack = [(obj, 1)]
    while stack:
        o, d = stack.pop()
        if d > limit:
            return False
        vals = o.values() if isinstance(o, dict) else o
        stack.extend((v, d + 1) for v in vals if isinstance(v, (dict, list)))
    return True


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


class _DeadlineReader(io.RawIOBase):
    """The connection's input, each read given only the time left before the request's deadline."""

    def __init__(self, sock: socket.socket, handler: "_Handler"):
        self._sock, self._handler = sock, handler

    def readable(self):
        return True

    def readinto(self, buf):
        left = self._handler.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request's deadline passed")
        self._sock.settimeout(left)
        n = self._sock.recv_into(buf)
        self._handler.received += n
        return n


class ExploreServer(HTTPServer):
    """An HTTP server with the explorer's assets, its computation gate, its cached catalog and its token, and a
    fixed pool of ``workers`` daemon threads (``workers=None``: ``queue + 8``, so that the page's static files
    and the catalog are answered while ``queue`` requests wait for the computation)."""

    request_queue_size = BACKLOG  # the listen backlog (socketserver passes it to listen())
    allow_reuse_address = True

    def __init__(self, address, *, queue: int = 32, wait: float = 120.0, verbose: bool = False, sweeps=(),
                 token: str | None = None, workers: int | None = None, timeout: float = 10.0):
        self.assets = _assets()
        self.sweeps = [open_store(p, i) for i, p in enumerate(sweeps)]  # ValueError naming a bad path, at start
        cat = catalog()
        cat["plotting"] = "plotly" if "/static/plotly.min.js" in self.assets else "matplotlib"
        cat["sweeps"] = [s.info for s in self.sweeps]
        self.catalog_bytes = json.dumps(cat).encode()
        self.gate = _Gate(queue, wait)
        self.verbose = verbose
        if token is not None and (not isinstance(token, str) or not token or quote(token, safe="") != token):
            raise ValueError(f"Expected token to be a non-empty URL-safe string, got token={token!r}.")
        self.token = token if token is not None else secrets.token_urlsafe(24)
        workers = queue + 8 if workers is None else workers
        if not isinstance(workers, int) or workers < 1:
            raise ValueError(f"Expected workers >= 1 (an integer), got workers={workers!r}.")
        if not timeout > 0:
            raise ValueError(f"Expected timeout > 0 seconds, got timeout={timeout!r}.")
        self.request_timeout = float(timeout)
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)
        self.loopback = _is_loopback(self.server_address[0])
        self._closing = False
        self._jobs: _queue.Queue = _queue.Queue(maxsize=workers + BACKLOG)
        self._threads = [threading.Thread(target=self._work, name=f"amplify-explore-{i}", daemon=True)
                         for i in range(workers)]
        for t in self._threads:
            t.start()

    @property
    def url(self) -> str:
        """The server's root, ``http://HOST:PORT/`` (the API also needs ``token``: see :attr:`page_url`)."""
        host, port = self.server_address[:2]
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}/"

    @property
    def page_url(self) -> str:
        """The page with this launch's token, as ``amplify-jax explore`` prints and opens it."""
        return f"{self.url}?token={self.token}"

    def token_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode())

    # the pool: the accepting thread queues connections, a fixed set of threads answers them
    def process_request(self, request, client_address):
        while True:
            try:
                self._jobs.put((request, client_address), timeout=0.5)
                return
            except _queue.Full:  # every worker busy and the queue full: the listen backlog holds the rest
                if self._closing:
                    self.shutdown_request(request)
                    return

    def _work(self):
        while True:
            item = self._jobs.get()
            if item is None:
                return
            request, client_address = item
            try:
                self.finish_request(request, client_address)
            except Exception:  # noqa: BLE001 - the server's boundary (handle_error reports it)
                self.handle_error(request, client_address)
            finally:
                self.shutdown_request(request)

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):  # the client went away (reset, broken pipe, timeout on write)
            return
        super().handle_error(request, client_address)

    def shutdown(self):
        self._closing = True
        super().shutdown()

    def server_close(self):
        self._closing = True
        super().server_close()
        while True:  # connections never started: closed
            try:
                item = self._jobs.get_nowait()
            except _queue.Empty:
                break
            if item is not None:
                self.shutdown_request(item[0])
        for _ in self._threads:
            try:
                self._jobs.put_nowait(None)
            except _queue.Full:
                break


class _Handler(BaseHTTPRequestHandler):
    server_version = "amplify-jax-explore"
    server: ExploreServer
    deadline = 0.0
    received = 0
    unread = False

    def setup(self):
        super().setup()
        self.rfile.close()  # the base class's reader, replaced by one that keeps the request's deadline
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, self))

    def finish(self):
        try:
            super().finish()
        finally:
            if self.unread:
                self._linger()

    def _linger(self):
        """Close after draining what the client still sends (bounded), so that it reads the answer, not a reset."""
        try:
            self.connection.shutdown(socket.SHUT_WR)
            end, left = time.monotonic() + LINGER_S, LINGER_BYTES
            while left > 0:
                remaining = end - time.monotonic()
                if remaining <= 0:
                    break
                self.connection.settimeout(remaining)
                chunk = self.connection.recv(min(65536, left))
                if not chunk:
                    break
                left -= len(chunk)
        except OSError:
            pass

    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        if self.server.verbose:
            super().log_message(format, *args)

    def handle_one_request(self):
        self.deadline = time.monotonic() + self.server.request_timeout
        self.received, self.command, self.requestline = 0, None, ""
        self.request_version = "HTTP/1.0"
        try:
            self.raw_requestline = self.rfile.readline(65537)
            if len(self.raw_requestline) > 65536:
                return self.send_error(414, "Expected a request line of at most 65536 bytes.")
            if not self.raw_requestline:  # the client closed without asking anything
                self.close_connection = True
                return
            if not self.parse_request():  # answered (send_error)
                return
            if self.request_version == "HTTP/0.9":  # an answer without status line or headers: refused
                return self.send_error(400, "Expected HTTP/1.0 or HTTP/1.1, got HTTP/0.9.")
            method = getattr(self, "do_" + self.command, None)
            if method is None:
                return self.send_error(405, f"Expected GET, HEAD or POST, got {self.command[:20]!r}.")
            method()
            self.wfile.flush()
        except TimeoutError:
            self.close_connection = True
            if self.received == 0:  # an idle connection (a browser's preconnect): nothing asked, nothing to say
                return
            self.send_error(408, f"Expected the whole request within {self.server.request_timeout:g} s.")

    def send_error(self, code, message=None, explain=None):
        """Every error as one JSON line (the base class answers HTML), and the connection closed after it."""
        if code == 505:  # a version of HTTP this server does not speak: the client's error
            code, message = 400, f"Expected HTTP/1.0 or HTTP/1.1, got {self.request_version[:20]!r}."
        if message is None:
            message = self.responses.get(code, ("error",))[0]
        if self.request_version in ("", "HTTP/0.9"):
            self.request_version = "HTTP/1.0"
        self.close_connection = True
        self.unread = True
        self._json(code, {"error": message})

    def _send(self, code: int, body: bytes, ctype: str):
        self.connection.settimeout(self.server.request_timeout)  # writing: the reader's deadline no longer applies
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, code: int, payload: dict):
        self._send(code, json.dumps(payload, allow_nan=False).encode(), "application/json")

    def _refusal(self, path: str) -> tuple[int, str] | None:
        """403 and why, for a request from elsewhere or an API call without this launch's token."""
        if self.server.loopback and not host_is_loopback(self.headers.get("Host")):
            host = (self.headers.get("Host") or "")[:80]
            return 403, (f"Expected a request to this machine (Host 127.0.0.1, [::1] or localhost, with an optional "
                         f"port), got Host {host!r}.")
        if path.startswith("/api/"):
            given = self.headers.get(TOKEN_HEADER)
            if given is None:
                given = (parse_qs(urlsplit(self.path).query).get("token") or [None])[0]
            if not self.server.token_ok(given):
                return 403, (f"Expected this launch's token ({'wrong' if given else 'none given'}): open the page at "
                             f"the URL amplify-jax explore printed (?token=...), or send the {TOKEN_HEADER} header.")
        return None

    def do_GET(self):  # noqa: N802 - http.server's names
        path = urlsplit(self.path).path
        refused = self._refusal(path)
        if refused:
            return self._json(refused[0], {"error": refused[1]})
        if path == "/api/catalog":
            return self._send(200, self.server.catalog_bytes, "application/json")
        if path == "/favicon.ico":  # browsers ask for it: no icon, no error in the page's console
            return self._send(204, b"", "image/x-icon")
        if path in self.server.assets:
            body, ctype = self.server.assets[path]
            return self._send(200, body, ctype)
        return self._json(404, {"error": f"Expected one of the explorer's pages, got {path[:80]!r}."})

    do_HEAD = do_GET

    def _body(self):
        """The request's JSON body, or (status, message) naming what is wrong with it."""
        text = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding") or text is None:
            self.unread = True
            return 411, "Expected a Content-Length header (and no Transfer-Encoding)."
        try:
            length = int(text)
        except ValueError:
            self.unread = True
            return 400, f"Expected a Content-Length of digits, got {text[:40]!r}."
        if not 0 < length <= MAX_BODY:
            self.unread = True
            return 413, f"Expected a JSON body of 1 to {MAX_BODY} bytes, got Content-Length {length}."
        data = self.rfile.read(length)  # TimeoutError past the deadline: 408 (handle_one_request)
        if len(data) < length:
            return 400, f"Expected {length} bytes of body, got {len(data)} before the client closed."
        try:
            body = json.loads(data)
        except RecursionError:
            return 400, f"Expected a JSON body nested at most {MAX_DEPTH} deep."
        except (ValueError, UnicodeDecodeError):
            return 400, "Expected a JSON object as the request body."
        if not _depth_ok(body, MAX_DEPTH):
            return 400, f"Expected a JSON body nested at most {MAX_DEPTH} deep."
        return body

    def do_POST(self):  # noqa: N802
        path = urlsplit(self.path).path
        refused = self._refusal(path)
        if refused:
            self.unread = True
            return self._json(refused[0], {"error": refused[1]})
        handlers = {"/api/curve": lambda b: request("curve", b), "/api/solve": lambda b: request("solve", b),
                    "/api/render": render, "/api/export": export,
                    "/api/sweep": lambda b: sweep_slice(self.server.sweeps, b)}
        if path not in handlers:
            self.unread = True
            return self._json(404, {"error": f"Expected a POST to {', '.join(handlers)}, got {path[:80]!r}."})
        body = self._body()
        if isinstance(body, tuple):
            if self.unread:
                self.close_connection = True
            return self._json(body[0], {"error": body[1]})
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
    """The explorer's server, bound (port 0: a free port, see ``server.url``); run it with ``serve_forever``.

    Keywords (all optional): ``queue``, ``wait``, ``verbose``, ``sweeps`` as :class:`ExploreServer`; ``token``
    (default: a new random one, ``server.token``), ``workers`` (threads), ``timeout`` (seconds to send a request).
    """
    return ExploreServer((host, port), **kw)


def serve(host: str = "127.0.0.1", port: int = 8050, *, open_browser: bool = True, **kw) -> None:
    """Serve the explorer until Ctrl-C (``amplify-jax explore``): prints, and opens, the page's URL with its token."""
    try:
        server = make_server(host, port, **kw)
    except (OSError, OverflowError) as exc:  # port in use, no such address, port out of 0..65535
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ValueError(f"Expected an address and a free port to serve on, got --host {host} --port {port} "
                         f"({reason.rstrip('.')}).") from None
    print(f"amplify-jax explore: {server.page_url}  (Ctrl-C to stop)", flush=True)
    for st in server.sweeps:
        print(f"sweep store {st.index}: {st.path} ({st.info['bound']}, dimensions "
              f"{', '.join(d['name'] for d in st.info['dims'])})", flush=True)
    if not server.loopback:
        print(f"warning: bound to {host}: other machines can reach the explorer (its API still needs the token)",
              file=sys.stderr, flush=True)
    if open_browser:
        threading.Timer(0.5, webbrowser.open, (server.page_url,)).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
