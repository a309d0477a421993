"""The explorer's server under attack, on loopback: each attack of issue 26 refused with a 4xx JSON answer.

One server for the module (``make_server("127.0.0.1", 0, timeout=2)``: a request must arrive whole within 2 s),
driven through raw sockets so that what comes back is seen as sent: a status line and one JSON object, never a
reset or a silent close.  Only cheap endpoints are used (``/api/catalog``, a POST naming no registered bound,
refused before any kernel runs): nothing compiles, and the module takes a few seconds.
"""

from __future__ import annotations

import json
import select
import selectors
import socket
import threading
import time

import pytest

from amplify_jax import explore
from amplify_jax.explore._server import MAX_BODY, MAX_DEPTH, host_is_loopback

TIMEOUT_S = 2.0  # the server's deadline for a whole request
CHEAP = json.dumps({"bound": "no.such-bound", "x": "eps0"}).encode()  # refused by validation (400), no kernel


@pytest.fixture(scope="module")
def server():
    srv = explore.make_server("127.0.0.1", 0, timeout=TIMEOUT_S, workers=8, queue=4)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=10)
    assert not thread.is_alive()


def _connect(server, timeout: float = 15.0) -> socket.socket:
    sock = socket.create_connection(server.server_address[:2], timeout=timeout)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while True:
        chunk = sock.recv(65536)  # ConnectionResetError here fails the test: a reset is not an answer
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _parse(raw: bytes) -> tuple[int, dict, dict]:
    """(status, headers, JSON body) of one HTTP answer; fails unless the body is one JSON object."""
    assert raw, "the server closed the connection without an answer"
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    payload = json.loads(body, parse_constant=lambda c: pytest.fail(f"bare {c} in the JSON"))
    assert isinstance(payload, dict)
    return status, headers, payload


def _exchange(server, data: bytes) -> tuple[int, dict, dict]:
    with _connect(server) as sock:
        sock.sendall(data)
        return _parse(_read_all(sock))


def _request(method: str, path: str, *, host: str | None = "127.0.0.1", token: str | None = None,
             body: bytes | None = None, headers: dict | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1"]
    if host is not None:
        lines.append(f"Host: {host}")
    if token is not None:
        lines.append(f"X-Amplify-Token: {token}")
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")


def _assert_refused(answer, code: int, needle: str):
    status, headers, payload = answer
    assert status == code and headers["content-type"] == "application/json", answer
    assert set(payload) == {"error"} and needle in payload["error"] and "\n" not in payload["error"], payload


# ----------------------------------------------------------------------------------------------------------
# who may ask: the Host by address, the launch's token

BAD_HOSTS = ["127.evil.com", "127.0.0.1.nip.io", "127.0.0.1@evil.com", "127.0.0.1:80@evil.com", "evil.com",
             "attacker.example:80", "localhost.evil.com", "localhost.", "127.1", "::1", "[::1].evil.com",
             "[fe80::1]:80", "[::ffff:127.0.0.1]", "0.0.0.0", "10.0.0.1", "127.0.0.1:", "127.0.0.1:8050:1",
             "127.0.0.1:80x", "127.0.0.1/evil", ""]
GOOD_HOSTS = ["127.0.0.1", "127.0.0.1:8050", "localhost", "LOCALHOST:8050", "127.5.6.7", "[::1]", "[::1]:8050"]


@pytest.mark.parametrize("host", BAD_HOSTS)
def test_host_not_loopback_is_refused(server, host):
    assert not host_is_loopback(host)
    answer = _exchange(server, _request("GET", "/api/catalog", host=host, token=server.token))
    _assert_refused(answer, 403, "Host")
    answer = _exchange(server, _request("POST", "/api/curve", host=host, token=server.token, body=CHEAP))
    _assert_refused(answer, 403, "Host")


def test_no_host_header_is_refused(server):
    _assert_refused(_exchange(server, b"GET /api/catalog HTTP/1.0\r\nX-Amplify-Token: " + server.token.encode()
                              + b"\r\n\r\n"), 403, "Host")


@pytest.mark.parametrize("host", GOOD_HOSTS)
def test_host_loopback_is_answered(server, host):
    assert host_is_loopback(host)
    status, _, payload = _exchange(server, _request("GET", "/api/catalog", host=host, token=server.token))
    assert status == 200 and "groups" in payload


def test_api_needs_the_token(server):
    tok = server.token
    for token, path in ((None, "/api/catalog"), ("wrong", "/api/catalog"), (tok[:-1], "/api/catalog"),
                        (None, "/api/catalog?token="), (None, "/api/catalog?token=wrong"), ("", "/api/catalog")):
        _assert_refused(_exchange(server, _request("GET", path, token=token)), 403, "token")
    _assert_refused(_exchange(server, _request("POST", "/api/curve", body=CHEAP)), 403, "token")
    _assert_refused(_exchange(server, _request("POST", "/api/curve?token=x", body=CHEAP)), 403, "token")
    assert _exchange(server, _request("GET", f"/api/catalog?token={tok}"))[0] == 200  # in the query
    assert _exchange(server, _request("GET", "/api/catalog", token=tok))[0] == 200  # in the header
    status, _, payload = _exchange(server, _request("POST", f"/api/curve?token={tok}", body=CHEAP))
    assert status == 400 and "no.such-bound" in payload["error"]  # past the gate: the bound is named
    # the page itself needs no token: it reads the token from its own URL and sends it (explore.js)
    with _connect(server) as sock:
        sock.sendall(_request("GET", "/"))
        raw = _read_all(sock)
    assert raw.startswith(b"HTTP/1.0 200") and b"/static/explore.js" in raw
    with _connect(server) as sock:
        sock.sendall(_request("GET", "/static/explore.js"))
        js = _read_all(sock)
    assert b"X-Amplify-Token" in js and b'get("token")' in js
    assert server.page_url == f"{server.url}?token={tok}" and len(tok) >= 32


def test_tokens_differ_per_launch_and_may_be_given():
    a, b = explore.make_server("127.0.0.1", 0), explore.make_server("127.0.0.1", 0, token="fixed-token")
    try:
        assert b.token == "fixed-token"
        c = explore.make_server("127.0.0.1", 0)
        assert c.token != a.token
        c.server_close()
        with pytest.raises(ValueError, match="token="):
            explore.make_server("127.0.0.1", 0, token="a b")
    finally:
        a.server_close()
        b.server_close()


# ----------------------------------------------------------------------------------------------------------
# bursts: every connection answered (200, 400 or 503 with JSON), none reset


def _burst(server, requests: list[bytes], deadline_s: float = 25.0) -> list[int]:
    """Open one connection per request at once, send them all, then read every answer (one thread, a selector)."""
    socks = []
    try:
        for data in requests:
            socks.append(_connect(server))
        for sock, data in zip(socks, requests):
            sock.sendall(data)
        sel = selectors.DefaultSelector()
        buf = {}
        for sock in socks:
            sock.setblocking(False)
            sel.register(sock, selectors.EVENT_READ)
            buf[sock] = []
        done, end = {}, time.monotonic() + deadline_s
        while len(done) < len(socks) and time.monotonic() < end:
            for key, _ in sel.select(timeout=0.5):
                chunk = key.fileobj.recv(65536)  # a reset raises here
                if chunk:
                    buf[key.fileobj].append(chunk)
                else:
                    sel.unregister(key.fileobj)
                    done[key.fileobj] = b"".join(buf[key.fileobj])
        assert len(done) == len(socks), f"{len(socks) - len(done)} of {len(socks)} unanswered in {deadline_s} s"
        return [_parse(done[s])[0] for s in socks]
    finally:
        for sock in socks:
            sock.close()


def test_200_simultaneous_posts_are_all_answered(server):
    t0 = time.monotonic()
    codes = _burst(server, [_request("POST", "/api/curve", token=server.token, body=CHEAP)] * 200)
    elapsed = time.monotonic() - t0
    assert set(codes) <= {200, 400, 503}, sorted(set(codes))
    assert codes.count(400) + codes.count(503) == 200  # the bound is refused, or the gate's queue is full
    print(f"200 simultaneous POSTs: {codes.count(400)} answered 400, {codes.count(503)} 503, in {elapsed:.2f} s")


def test_200_simultaneous_gets_are_all_answered(server):
    t0 = time.monotonic()
    codes = _burst(server, [_request("GET", "/api/catalog", token=server.token)] * 200)
    assert codes == [200] * 200
    print(f"200 simultaneous GETs of the catalog: all 200 in {time.monotonic() - t0:.2f} s")


def test_threads_are_a_fixed_pool(server):
    pool = [t for t in threading.enumerate() if t.name.startswith("amplify-explore-")]
    assert len(pool) >= 8 and all(t.daemon for t in pool)
    mine = [t for t in pool if t in server._threads]
    assert len(mine) == 8  # workers=8, whatever the bursts before


# ----------------------------------------------------------------------------------------------------------
# slow clients: a deadline for the whole request, and the others answered meanwhile


def test_a_body_that_never_completes_is_answered_408_and_others_are_served(server):
    slow = []
    try:
        t0 = time.monotonic()
        for _ in range(4):  # half the pool held by clients that stop sending
            sock = _connect(server)
            sock.sendall(_request("POST", "/api/curve", token=server.token, body=CHEAP)[:-10])  # 10 bytes short
            slow.append(sock)
        for _ in range(3):  # meanwhile, the others are answered at once
            t1 = time.monotonic()
            status, _, _ = _exchange(server, _request("GET", "/api/catalog", token=server.token))
            assert status == 200 and time.monotonic() - t1 < 1.5
        for sock in slow:
            _assert_refused(_parse(_read_all(sock)), 408, f"within {TIMEOUT_S:g} s")
        elapsed = time.monotonic() - t0
        assert TIMEOUT_S - 0.1 <= elapsed < TIMEOUT_S + 3, elapsed
    finally:
        for sock in slow:
            sock.close()


def test_a_dripping_request_meets_the_same_deadline(server):
    """One byte every 0.3 s never lets a read time out, but the request as a whole must arrive in 2 s."""
    data = _request("POST", "/api/curve", token=server.token, body=CHEAP)
    with _connect(server) as sock:
        t0 = time.monotonic()
        for byte in data:
            if select.select([sock], [], [], 0.3)[0]:  # the server has answered: stop sending, read it
                break
            sock.sendall(bytes([byte]))
            assert time.monotonic() - t0 < TIMEOUT_S + 3
        answer = _read_all(sock)
        assert time.monotonic() - t0 < TIMEOUT_S + 4
    _assert_refused(_parse(answer), 408, "whole request")


def test_an_idle_connection_is_closed_after_the_deadline(server):
    with _connect(server) as sock:
        t0 = time.monotonic()
        assert _read_all(sock) == b""  # nothing asked: closed, not held
        assert time.monotonic() - t0 < TIMEOUT_S + 2


# ----------------------------------------------------------------------------------------------------------
# sizes and shapes: an oversized body, deep nesting, malformed requests


def test_oversized_body_is_refused_413(server):
    body = b" " * (MAX_BODY + 1)
    _assert_refused(_exchange(server, _request("POST", "/api/curve", token=server.token, body=body)), 413,
                    str(MAX_BODY))
    # a Content-Length the client never means to send: refused at once, without waiting for the body
    t0 = time.monotonic()
    answer = _exchange(server, _request("POST", "/api/curve", token=server.token,
                                        headers={"Content-Length": str(10 ** 12)}))
    _assert_refused(answer, 413, "10000000000")
    assert time.monotonic() - t0 < TIMEOUT_S


@pytest.mark.parametrize("body", [b"[" * 100_000, b'{"a":' * 100_000, b"[" * 999 + b"]" * 999,
                                  (b'{"bound": ' * (MAX_DEPTH + 1)) + b"1" + b"}" * (MAX_DEPTH + 1)],
                         ids=["open-100000", "objects-100000", "closed-999", f"objects-{MAX_DEPTH + 1}"])
def test_deep_nesting_is_refused_400(server, body):
    answer = _exchange(server, _request("POST", "/api/curve", token=server.token, body=body))
    _assert_refused(answer, 400, f"nested at most {MAX_DEPTH} deep")


MALFORMED = [
    (b"HELLO\r\n\r\n", 400, ""),
    (b"GET / HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n", 400, "HTTP/1.0 or HTTP/1.1"),
    (b"GET /\r\n\r\n", 400, "HTTP/0.9"),
    (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", 414, "65536"),
    (b"PUT /api/curve HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 405, "'PUT'"),
    (b"POST /api/curve HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Amplify-Token: TOKEN\r\n\r\n", 411, "Content-Length"),
    (b"POST /api/curve HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Amplify-Token: TOKEN\r\nContent-Length: abc\r\n\r\n", 400,
     "'abc'"),
    (b"POST /api/curve HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Amplify-Token: TOKEN\r\nContent-Length: -5\r\n\r\n", 413,
     "-5"),
    (b"POST /api/curve HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Amplify-Token: TOKEN\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"5\r\nhello\r\n0\r\n\r\n", 411, "Transfer-Encoding"),
    (b"POST /api/curve HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Amplify-Token: TOKEN\r\nContent-Length: 5\r\n\r\nnope!", 400,
     "JSON object"),
    (b"POST /api/curve HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Amplify-Token: TOKEN\r\nContent-Length: 2\r\n\r\n\xff\xfe", 400,
     "JSON object"),
    (b"POST /api/nothing HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Amplify-Token: TOKEN\r\nContent-Length: 2\r\n\r\n{}", 404,
     "/api/curve"),
    (b"GET /static/../../pyproject.toml HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 404, "pages"),
    (b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(150)) + b"\r\n", 431, ""),
]


@pytest.mark.parametrize("data, code, needle", MALFORMED, ids=[f"{m[1]}-{i}" for i, m in enumerate(MALFORMED)])
def test_malformed_requests_get_one_json_line(server, data, code, needle):
    answer = _exchange(server, data.replace(b"TOKEN", server.token.encode()))
    _assert_refused(answer, code, needle)


def test_still_serving_after_the_attacks(server):
    status, _, payload = _exchange(server, _request("GET", "/api/catalog", token=server.token))
    assert status == 200 and payload["groups"]
