"""The HTTP front of `pipeline serve` against odd and hostile clients, beyond issue 22's framing (issue 41): Host
(RFC 9112 3.2, 3.2.2), `OPTIONS *` (RFC 9110 9.3.7), unknown methods (9.1), other protocols on the port (TLS,
HTTP/2's preface), bytes that carry no body (chunk extensions, empty lines: llhttp skips them without bound), a
client that half-closes mid-request, and which limit a 431 broke. Each against a started server, raw sockets."""
from __future__ import annotations

import json
import os
import re
import socket
import time
from pathlib import Path

import pytest

from test_http_front import BODY_PATH, _answer, _read_all
from test_platform_helpers import REPO, Server, embedded_node, worker_pids

STATUS = re.compile(rb"HTTP/1\.[01] (\d{3}) ")
NEXT = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"  # pipelined after a refused request: never answered


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    yield from embedded_node(tmp_path_factory, "framing", EINVOICE_CLIENT_TIMEOUT="10")


def _error(data: bytes, status: int) -> dict:
    """The ErrorResponse of the first answer in `data`, which must have `status`."""
    head, _, body = data.partition(b"\r\n\r\n")
    assert STATUS.match(head) and int(STATUS.match(head).group(1)) == status, data[:300]
    parsed = json.loads(body[:int(re.search(rb"(?i)Content-Length: (\d+)", head).group(1))])
    assert set(parsed) == {"requestId", "status", "errorCode", "message", "errors"}, parsed
    return parsed


def _access_line(server, request_id: str) -> dict:
    deadline = time.monotonic() + 3
    while True:
        lines = [json.loads(x) for x in server.log_path.read_text().splitlines()
                 if x.startswith("{") and f'"{request_id}"' in x]
        if lines or time.monotonic() > deadline:
            assert lines, request_id
            return lines[-1]
        time.sleep(0.05)


# -- Host ---------------------------------------------------------------------------------------------------------

BAD_HOSTS = [b"a b", b"a/b", b"user@a", b"a, b", b"a:xx", b"[::1", b"b\xc3\xbccher.de", b"a\tb", b"a;b c"]
GOOD_HOSTS = [b"", b"example.com", b"example.com:8080", b"[::1]:80", b"10.0.0.1", b"ex%41mple", b"my_host.local",
              b"a,b", b"xn--bcher-kva.de"]


@pytest.mark.parametrize("host", BAD_HOSTS)
def test_an_invalid_host_is_400_before_the_body(node, host):
    """RFC 9112 3.2: a Host with an invalid value MUST be a 400 (any value was served). Refused on its head: the
    announced body is never sent, the pipelined request never answered."""
    started = time.monotonic()
    data, closed = _answer(node.port, b"POST /healthz HTTP/1.1\r\nHost: " + host + b"\r\nX-Request-Id: bad-host\r\n"
                           b"Content-Length: 1000\r\n\r\n")
    parsed = _error(data, 400)
    assert "the Host header" in parsed["message"] and parsed["requestId"] == "bad-host", parsed
    assert closed and time.monotonic() - started < 2
    data, closed = _answer(node.port, b"GET /healthz HTTP/1.1\r\nHost: " + host + b"\r\n\r\n" + NEXT)
    assert STATUS.findall(data) == [b"400"] and closed


def test_valid_hosts_are_served(node):
    """uri-host [":" port]: a reg-name (sub-delims such as "," included), an IP literal, a port, or empty (RFC 9110
    7.2: the server's own name then)."""
    for host in GOOD_HOSTS:
        data, _ = _answer(node.port, b"GET /healthz HTTP/1.1\r\nHost: " + host + b"\r\nConnection: close\r\n\r\n")
        assert STATUS.findall(data) == [b"200"], (host, data[:300])


@pytest.mark.parametrize("name,second", [(b"Host", b"a"), (b"Host", b"b"), (b"Content-Type", b"text/plain"),
                                         (b"Content-Type", b"application/json")])
def test_a_second_host_or_content_type_is_400_before_the_body(node, name, second):
    """Singleton fields (RFC 9110 5.3): refused by gunicorn's header policy only once the whole body was in, as
    `InvalidHeader: 'HOST'`; a client waiting to send its body heard nothing until the 408."""
    started = time.monotonic()
    data, closed = _answer(node.port, b"POST /healthz HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
                           + name + b": " + second + b"\r\nContent-Length: 1000\r\n\r\n")
    assert f"more than one {name.decode()} header field" in _error(data, 400)["message"]
    assert closed and time.monotonic() - started < 2


@pytest.mark.parametrize("target,why", [(b"http://u:p@other/healthz", "user information"),
                                        (b"http:///healthz", "authority is not host[:port]"),
                                        (b"http://:80/healthz", "authority is not host[:port]"),
                                        (b"http://a:8x/healthz", "authority is not host[:port]"),
                                        (b"http://[::1/healthz", "authority is not host[:port]"),
                                        (b"ftp://other/healthz", "http or https URI")])
def test_an_absolute_form_target_that_is_no_http_uri_is_400(node, target, why):
    """RFC 9110 4.2.1: an http URI with an empty host MUST be rejected; 4.2.4: user information is an error."""
    data, closed = _answer(node.port, b"GET " + target + b" HTTP/1.1\r\nHost: a\r\n\r\n" + NEXT)
    assert why in _error(data, 400)["message"] and closed and len(STATUS.findall(data)) == 1


def test_an_absolute_form_target_stands_for_host():
    """RFC 9112 3.2.2: the origin server MUST ignore Host and use the target's authority. The app saw the Host
    header (`a`) as the request's host; it now sees `other:8443` (the environ the worker builds, gunicorn's own)."""
    from gunicorn.config import Config
    from gunicorn.http import wsgi

    from pipeline.cli.serve import _Sink
    from test_serve import _ours

    for target, host, path in [(b"http://other:8443/healthz?x", "other:8443", "/healthz"),
                               (b"HTTPS://Other/", "Other", "/"), (b"/healthz", "a", "/healthz")]:
        req = _ours(Config(), b"GET " + target + b" HTTP/1.1\r\nHost: a\r\n\r\n", ("10.9.8.7", 5))
        _, environ = wsgi.create(req, _Sink(), ("10.9.8.7", 5), ("127.0.0.1", 8000), Config())
        assert (environ["HTTP_HOST"], environ["PATH_INFO"]) == (host, path), target


def test_an_absolute_form_target_with_another_host_is_served(node):
    data, _ = _answer(node.port, b"GET http://other/healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    assert STATUS.findall(data) == [b"200"], data[:300]


# -- OPTIONS * and methods -------------------------------------------------------------------------------------------

def _service_methods() -> set[str]:
    """What the routes answer: their responders (`on_get`, ...), HEAD beside GET and OPTIONS (Falcon's)."""
    names = set()
    for path in (REPO / "pipeline" / "service").rglob("*.py"):
        names |= {m.upper() for m in re.findall(r"def on_([a-z]+)\(", path.read_text())}
    return names | {"HEAD", "OPTIONS"}


def test_options_asterisk_names_the_servers_methods(node):
    """RFC 9110 9.3.7: `OPTIONS *` asks about the server, not a resource: it was a 404 "no such resource". Now 200
    with Allow and no body, on a connection that stays open (the pipelined request is answered), with its access
    line."""
    data, _ = _answer(node.port, b"OPTIONS * HTTP/1.1\r\nHost: x\r\nX-Request-Id: opt-star\r\n\r\n"
                      + NEXT.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
    assert STATUS.findall(data) == [b"200", b"200"], data[:500]
    head = data.partition(b"\r\n\r\n")[0].decode()
    allow = re.search(r"\r\nAllow: ([^\r]*)", head).group(1)
    assert set(allow.split(", ")) == _service_methods(), allow
    assert "Content-Length: 0" in head and "Connection: keep-alive" in head and "X-Request-Id: opt-star" in head
    line = _access_line(node, "opt-star")
    assert (line["method"], line["path"], line["status"], line["front"]) == ("OPTIONS", "*", 200, True)
    data, closed = _answer(node.port, b"OPTIONS * HTTP/1.0\r\n\r\n")
    assert data.startswith(b"HTTP/1.0 200 OK\r\n") and b"Connection: close" in data and closed
    for line in (b"GET * HTTP/1.1", b"POST * HTTP/1.1"):  # `*` is OPTIONS's alone
        assert "origin-form" in _error(_answer(node.port, line + b"\r\nHost: x\r\n\r\n")[0], 400)["message"]


@pytest.mark.parametrize("method", [b"FOO", b"get", b"PURGE", b"LINK", b"BREW"])
def test_an_unknown_method_is_501_before_the_body(node, method):
    """RFC 9110 9.1: a method the server does not recognise SHOULD be a 501. llhttp's unknown ones (FOO, lower-case
    get) were a 400 "Invalid method encountered", those it knows and the app does not (PURGE) the app's 400
    INVALID_INPUT after the body."""
    started = time.monotonic()
    data, closed = _answer(node.port, method + b" /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
    parsed = _error(data, 501)
    assert parsed["errorCode"] == "METHOD_NOT_IMPLEMENTED" and parsed["status"] == "not_implemented"
    assert repr(method.decode()) in parsed["message"] and "GET, HEAD, POST, DELETE, OPTIONS" in parsed["message"]
    assert closed and time.monotonic() - started < 2


@pytest.mark.parametrize("line", [b"NOT HTTP AT ALL", b"FOO /healthz", b"\x00\x01\x02 / HTTP/1.1"])
def test_bytes_that_are_no_request_line_stay_400(node, line):
    """Only a well-formed request line with an unknown method is a 501."""
    data, closed = _answer(node.port, line + b"\r\nHost: x\r\n\r\n")
    assert _error(data, 400)["errorCode"] == "MALFORMED_HTTP_REQUEST" and closed


def test_a_known_method_a_route_lacks_is_still_405_with_allow(node):
    data, _ = _answer(node.port, b"PUT /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert _error(data, 405)["errorCode"] == "METHOD_NOT_ALLOWED" and b"allow: get, head" in data.lower()


# -- other protocols on the port -------------------------------------------------------------------------------------

def test_a_tls_handshake_on_the_plain_port_is_told_so(node):
    hello = bytes.fromhex("16030100a5010000a10303") + os.urandom(32) + b"\x00" * 100
    data, closed = _answer(node.port, hello)
    assert "TLS handshake on a plain-HTTP port" in _error(data, 400)["message"] and closed


def test_the_http2_preface_is_505(node):
    """`curl --http2-prior-knowledge`: it was a 400 "Pause on PRI/Upgrade"."""
    data, closed = _answer(node.port, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x12\x04\x00\x00\x00\x00\x00")
    parsed = _error(data, 505)
    assert parsed["errorCode"] == "HTTP_VERSION_NOT_SUPPORTED" and "HTTP/2.0" in parsed["message"] and closed


@pytest.mark.parametrize("raw, said", [
    (b"GET /healthz RTSP/1.0\r\n\r\n", "RTSP/1.0"),
    (b"OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n\r\n", "RTSP/1.0"),
    (b"DESCRIBE rtsp://x/stream RTSP/1.0\r\nCSeq: 2\r\n\r\n", "RTSP/1.0"),
    (b"SOURCE /healthz ICE/1.0\r\n\r\n", "ICE/1.0"),
])
def test_a_request_line_of_another_protocol_is_505(node, raw, said):
    """llhttp takes RTSP/x.y and ICE/x.y as well as HTTP/x.y and tells only the version: `GET /healthz RTSP/1.0`
    was answered `HTTP/1.0 200 OK`."""
    data, closed = _answer(node.port, raw + NEXT)
    parsed = _error(data, 505)
    assert parsed["errorCode"] == "HTTP_VERSION_NOT_SUPPORTED" and said in parsed["message"] and closed
    assert len(STATUS.findall(data)) == 1, data  # the pipelined request after it is not answered


def test_another_protocol_is_505_also_when_its_request_line_trickles_in(node):
    """The target and the protocol name split across reads, a byte at a time where they meet."""
    with socket.create_connection(("127.0.0.1", node.port), timeout=5) as s:
        for piece in (b"GET /heal", b"thz", b" ", b"R", b"TSP/1", b".0\r", b"\n\r\n"):
            s.sendall(piece)
            time.sleep(0.15)  # (each piece its own read)
        parsed = _error(_read_all(s, 5), 505)
    assert "RTSP/1.0" in parsed["message"]


def test_http_requests_naming_another_protocol_elsewhere_are_served(node):
    """In one read: an HTTP/1.1 request whose body holds an RTSP request line, one whose field value does, both
    with the same target as the RTSP request that follows them: 200, 200, then 505 for the RTSP one."""
    fake = b"/healthz RTSP/1.0\r\n"
    raw = (b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\nGET " % (len(fake) + 4) + fake
           + b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Note: " + fake
           + b"\r\nGET /healthz RTSP/1.0\r\n\r\n")
    data, closed = _answer(node.port, raw)
    assert STATUS.findall(data) == [b"200", b"200", b"505"] and closed, data[-600:]


# -- bytes that carry no body ----------------------------------------------------------------------------------------

def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _flood(port: int, head: bytes, filler: bytes, seconds: float) -> tuple[int, bytes]:
    """Send `head`, then `filler` again and again for up to `seconds` or until the server stops reading: (bytes
    sent, what it answered)."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        s.sendall(head)
        started = time.monotonic()
        try:
            while time.monotonic() - started < seconds:
                s.sendall(filler)
                sent += len(filler)
        except OSError:
            pass
        return sent, _read_all(s, 3)


def test_an_endless_chunk_extension_is_cut_off_at_once(node):
    """One chunk whose extension never ends: llhttp skips it without bound, and the worker parsed 8 GB of it in 8 s
    with a core busy (it would have gone on to the 60 s request deadline; Node.js's CVE-2024-22019). Now 413
    within the first few hundred KB, a fraction of a second of the worker's CPU."""
    (worker,) = worker_pids(node)
    cpu = _cpu_seconds(worker)
    sent, data = _flood(node.port, b"POST " + BODY_PATH + b" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                        b"X-Request-Id: ext-flood\r\n\r\n1;", b"e" * 65536, 8)
    parsed = _error(data, 413)
    assert "chunked framing" in parsed["message"] and parsed["requestId"] == "ext-flood", parsed
    assert sent < 64 << 20 and _cpu_seconds(worker) - cpu < 2, (sent, _cpu_seconds(worker) - cpu)
    # extensions on every chunk of a body count too; so do small ones in bulk
    _, data = _flood(node.port, b"POST " + BODY_PATH + b" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                     b"1;" + b"e" * 40 + b"\r\nx\r\n", 8)
    assert "chunked framing" in _error(data, 413)["message"]


def test_endless_empty_lines_before_a_request_are_cut_off(node):
    """RFC 9112 2.2 lets a server skip empty lines before a request line; llhttp skipped any number of them (for
    the whole client timeout, a core busy)."""
    sent, data = _flood(node.port, b"", b"\r\n" * 32768, 8)
    assert "empty lines" in _error(data, 400)["message"] and sent < 64 << 20


def test_a_body_in_1_byte_chunks_is_still_read(node):
    """Framing five times the body (`1\\r\\nx\\r\\n`) is an honest, if wasteful, client: not refused."""
    body = b"".join(b"1\r\n%c\r\n" % c for c in b"x" * 60000) + b"3;a=b\r\nabc\r\n0\r\n\r\n"
    data, _ = _answer(node.port, b"POST " + BODY_PATH + b" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                      + body + NEXT.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"), timeout=10)
    assert STATUS.findall(data) == [b"401", b"200"], data[:300]


def _rss_mib(pid: int) -> float:
    return int(Path(f"/proc/{pid}/status").read_text().split("VmRSS:")[1].split()[0]) / 1024


def test_bursts_of_pipelined_requests_that_are_never_read_hold_little_memory(node):
    """40 connections (from 40 addresses: no per-address cap) each send 256 KiB of minimal pipelined requests and
    read nothing. llhttp parsed a whole 256 KiB read at once: 10,000 requests queued per connection, the worker grew
    by 3.2 MB per connection (128 MB here; 3 GB at its 1,000 connections). Reads outside a body are 16 KiB now:
    ~600 queued at most, the rest waits in the kernel. All are still answered to a client that reads (up to
    EINVOICE_KEEPALIVE_REQUESTS, 1,000, per connection)."""
    (worker,) = worker_pids(node)
    _answer(node.port, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")  # the page, rendered once
    before = _rss_mib(worker)
    burst = b"GET / HTTP/1.1\r\nHost:x\r\n\r\n" * (256 * 1024 // 27)
    socks = []
    try:
        for i in range(40):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.bind((f"127.0.1.{i + 1}", 0))
            s.connect(("127.0.0.1", node.port))
            s.sendall(burst)
            socks.append(s)
        time.sleep(2)
        grown = _rss_mib(worker) - before
    finally:
        for s in socks:
            s.close()
    assert grown < 48, grown
    with socket.create_connection(("127.0.0.1", node.port), timeout=20) as s:
        s.sendall(NEXT * 1200)
        assert STATUS.findall(_read_all(s, 20)).count(b"200") == 1000


# -- half-closed clients and the limits a 431 names --------------------------------------------------------------

def test_a_client_that_half_closes_mid_request_is_told_and_logged(node):
    """The client shut its side with 3 of 10 body bytes sent: the connection was closed without a word and no
    access line. Now a 400 saying so (the client can still read), with the client's request id, and its line."""
    for rid, partial in [("half-body", b"Content-Length: 10\r\n\r\nabc"), ("half-head", b"X-A: 1\r\n")]:
        data, closed = _answer(node.port, b"POST " + BODY_PATH + b" HTTP/1.1\r\nHost: x\r\nX-Request-Id: "
                               + rid.encode() + b"\r\n" + partial, half_close=True)
        parsed = _error(data, 400)
        assert "closed its side of the connection before the request was complete" in parsed["message"] and closed
        if rid == "half-body":
            assert parsed["requestId"] == rid
            line = _access_line(node, rid)
            assert (line["method"], line["path"], line["status"], line["front"]) == ("POST", BODY_PATH.decode(),
                                                                                     400, True)
    # complete requests before the half-close are all answered, and nothing more is said
    data, closed = _answer(node.port, NEXT + NEXT, half_close=True)
    assert STATUS.findall(data) == [b"200", b"200"] and closed


@pytest.mark.parametrize("fields,said", [
    (b"X-Big: " + b"a" * 9000 + b"\r\n", "a field of 9009 bytes, at most 8190 (header 'X-Big')"),
    (b"".join(b"X-%d: v\r\n" % i for i in range(120)), "more than 100 fields"),
    (b"".join(b"X-%d: %s\r\n" % (i, b"v" * 8000) for i in range(60)), "the fields exceed 64 KiB in all"),
], ids=["one field", "field count", "head size"])
def test_a_431_names_the_limit_broken(node, fields, said):
    """It said "at most 100 fields of 8190 bytes each" whichever limit was broken (60 fields of 8 KB broke the
    64 KiB of the whole head)."""
    data, closed = _answer(node.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + fields + b"\r\n" + NEXT)
    assert said in _error(data, 431)["message"] and closed and len(STATUS.findall(data)) == 1


def test_the_worker_lived_through_it_all(node):
    data, _ = _answer(node.port, NEXT.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
    assert STATUS.findall(data) == [b"200"]
    assert "WORKER TIMEOUT" not in node.log_path.read_text() and "Traceback" not in node.log_path.read_text()


# -- IPv6 ------------------------------------------------------------------------------------------------------------

def test_serve_listens_on_ipv6_and_counts_ipv4_clients_of_a_dual_stack_listener_as_ipv4(tmp_path):
    """`pipeline serve --host ::` did not start: gunicorn read the bind `:::8000` as host `::` with an empty port.
    On the dual-stack listener an IPv4 client was `::ffff:127.0.0.1`, which forwarded_allow_ips (127.0.0.1) did not
    trust and the caps counted apart from 127.0.0.1; it is now 127.0.0.1, as on an IPv4 listener."""
    env = {"EINVOICE_DATA_DIR": str(tmp_path), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_HOST": "::"}
    server = Server(env, workers=1, warm=False, log_path=tmp_path / "serve.log")  # it waits on 127.0.0.1
    try:
        with socket.create_connection(("::1", server.port), timeout=3) as s:
            s.sendall(NEXT.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
            assert STATUS.findall(_read_all(s, 3)) == [b"200"]
        for source, shown in (("127.0.0.1", "127.0.0.1"), ("::1", "::1")):
            with socket.create_connection((source, server.port), timeout=3) as s:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: a b\r\n\r\n")
                _error(_read_all(s, 3), 400)
            assert f"client {shown}: 400" in server.log_path.read_text()
        assert "::ffff:" not in server.log_path.read_text()
    finally:
        server.stop()


def test_a_global_ipv6_client_counts_with_its_64_block():
    """One client on many addresses of its /64 (a host is given 2^64 of them) is one client for the caps, as the
    fair caps of issue 41 need; loopback, link-local, unique-local and documentation addresses count alone."""
    from pipeline.cli.serve import _client_group

    assert _client_group("2a00:1450:4001:80b::200e") == _client_group("2a00:1450:4001:80b:ffff::1") == \
        "2a00:1450:4001:80b::/64"
    assert _client_group("2a00:1450:4001:80c::1") == "2a00:1450:4001:80c::/64"
    for alone in ("::1", "fe80::1%eth0", "fd00::1", "2001:db8::1", "10.0.0.1", "127.0.0.1"):
        assert _client_group(alone) == alone
