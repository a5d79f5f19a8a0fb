"""Issue 41, a client talking to `pipeline serve` directly (no nginx) and pipelining requests on one connection behind
one the worker refuses before its body is read. A 404/405/413 decided from the head, or a 503 for want of room while
the body arrives, of a keep-alive request with at most 1 MiB of body still to come: answered `Connection: keep-alive`,
the body read and dropped (never buffered), and the requests behind it served (before: the connection closed after
the refusal and every request queued behind it went unanswered). Where the worker cannot go on (a larger body, a
chunked one, a request that asked for 100-continue, framing it cannot trust: a bad header, 431), it says
`Connection: close`, the answer reaches the client without a reset, and nothing sent after the refused request is run
(so it is safe to resend). After any last answer, bytes the client pipelined past it that are still unread are
dropped, not closed under (a reset that cost a client reading late the answers already written).

Requests come from 127.0.0.3: 127.0.0.1 is gunicorn's default forwarded_allow_ips, whose bodies the app reads and
answers itself. Nothing here is timed: each exchange waits for the server to close, with a hang guard."""
from __future__ import annotations

import json
import re
import socket
import time

import pytest

from faults_common import access_lines, wait_for
from test_faults_hostile_load import _spool_files
from test_http_front import _error_shape
from test_platform_helpers import embedded_node, worker_pids

CLIENT = "127.0.0.3"
VALIDATE = b"/v1/invoice/xrechnung/validate"
UPLOAD = 200_000  # EINVOICE_MAX_UPLOAD_BYTES: the worker takes 64 KiB of multipart framing on top
SPOOL = 150_000  # EINVOICE_BODY_SPOOL: a body of more than this is refused 503 SERVER_BUSY as it arrives
MiB = 1 << 20


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    yield from embedded_node(tmp_path_factory, "pipelining", EINVOICE_MAX_UPLOAD_BYTES=str(UPLOAD),
                             EINVOICE_BODY_MEMORY="4096", EINVOICE_BODY_SPOOL=str(SPOOL),
                             EINVOICE_KEEPALIVE_REQUESTS="4", EINVOICE_MAX_CLIENT_CONNECTIONS="20")


def _follow(tag: str) -> bytes:
    """Two requests pipelined behind the refused one, the last closing the connection."""
    return (f"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: {tag}-next\r\n\r\n"
            f"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: {tag}-last\r\nConnection: close\r\n\r\n").encode()


def _exchange(port: int, *parts: bytes, pause: float = 0.0) -> tuple[bytes, str]:
    """Sends `parts` one after the other (`pause` s between them, a slow client), then reads until the server
    closes: (what was read, how it ended: 'closed', or 'reset' when the answer was cut off by one)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30, source_address=(CLIENT, 0)) as s:
        ended = "closed"
        try:
            for i, part in enumerate(parts):
                if i and pause:
                    time.sleep(pause)  # (a client's pace, not an assertion: nothing waits for it)
                s.sendall(part)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server closed first: what it said is read below
        data = b""
        try:
            while chunk := s.recv(65536):
                data += chunk
        except ConnectionResetError:
            ended = "reset"
    return data, ended


def _answers(data: bytes) -> list[tuple[int, bytes, dict | None]]:
    """The answers in `data`: (status, head, JSON body if any), split by their Content-Length."""
    found = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        assert sep, data[:300]
        size = int(re.search(rb"\r\ncontent-length: *(\d+)", head, re.I).group(1))
        body, data = rest[:size], rest[size:]
        assert len(body) == size, (head, len(body), size)  # (an answer cut off)
        found.append((int(head.split()[1]), head, json.loads(body) if body.startswith(b"{") else None))
    return found


def _connection(head: bytes) -> bytes:
    return re.search(rb"\r\nConnection: *([^\r]+)", head, re.I).group(1).lower()


def _lines(server, tag: str) -> dict[str, int]:
    """The access lines (request id -> status) of the requests tagged `tag`."""
    return {e["requestId"]: e["status"] for e in access_lines(server.log_path)
            if str(e.get("requestId", "")).startswith(tag)}


def _head(line: bytes, tag: str, framing: bytes) -> bytes:
    return line + b" HTTP/1.1\r\nHost: x\r\nX-Request-Id: " + tag.encode() + b"\r\n" + framing + b"\r\n"


def _chunked(size: int, piece: int = 65536) -> bytes:
    whole, rest = divmod(size, piece)
    chunks = [b"%x\r\n" % piece + b"c" * piece + b"\r\n"] * whole + ([b"%x\r\n" % rest + b"c" * rest + b"\r\n"] if rest
                                                                    else [])
    return b"".join(chunks) + b"0\r\n\r\n"


GOING_ON = {  # the refused request's line, its framing and body, status, errorCode
    "404 of a path": (b"POST /nope", b"Content-Length: 5000\r\n", b"x" * 5000, 404, "NOT_FOUND"),
    "405 of a method": (b"PUT /healthz", b"Content-Length: 5000\r\n", b"x" * 5000, 405, "METHOD_NOT_ALLOWED"),
    "413 of a length": (b"POST " + VALIDATE, b"Content-Length: 300000\r\n", b"x" * 300_000, 413,
                        "PAYLOAD_TOO_LARGE"),
    "503 for want of spool": (b"POST " + VALIDATE, b"Content-Type: application/xml\r\nContent-Length: 190000\r\n",
                              b"<" * 190_000, 503, "SERVER_BUSY"),
}


@pytest.mark.parametrize("slow", [False, True], ids=["at-once", "body-later"])
@pytest.mark.parametrize("name", GOING_ON)
def test_requests_pipelined_behind_an_early_refusal_are_answered(node, name, slow):
    """The refusal in our error shape with `Connection: keep-alive` and its access line, then both requests behind
    it answered 200, the connection closed by the last one's `Connection: close`, without a reset. `body-later`: the
    head first, the body and the requests behind it half a second later (the refusal is out before the body)."""
    line, framing, body, status, code = GOING_ON[name]
    tag = f"on-{status}-{slow}-{len(body)}"
    head = _head(line, tag, framing)
    parts = (head, body + _follow(tag)) if slow else (head + body + _follow(tag),)
    (worker,) = worker_pids(node)
    data, ended = _exchange(node.port, *parts, pause=0.5)
    answers = _answers(data)
    assert [a[0] for a in answers] == [status, 200, 200] and ended == "closed", (name, data[:400])
    refused_status, refused_head, parsed = answers[0]
    assert _connection(refused_head) == b"keep-alive"
    assert (parsed["errorCode"], parsed["requestId"]) == (code, tag)
    assert set(parsed) == {"requestId", "status", "errorCode", "message", "errors"}
    if status == 503:
        assert b"\r\nRetry-After: " in refused_head
    assert _connection(answers[2][1]) == b"close"
    assert _lines(node, tag) == {tag: status, f"{tag}-next": 200, f"{tag}-last": 200}
    assert _spool_files([worker]) == 0  # the dropped body holds nothing


def test_a_dropped_body_is_never_read_as_a_request(node):
    """The body of a refused request that is itself a request (as a smuggler would send it) is dropped by its length:
    the refusal and the two requests behind it are answered, the one inside the body never runs."""
    tag = "inside"
    smuggled = f"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: {tag}-smuggled\r\n\r\n".encode()
    data, ended = _exchange(node.port, _head(b"PUT /healthz", tag, b"Content-Length: %d\r\n" % (3 * len(smuggled)))
                            + smuggled * 3 + _follow(tag))
    assert [a[0] for a in _answers(data)] == [405, 200, 200] and ended == "closed", data[:400]
    assert _lines(node, tag) == {tag: 405, f"{tag}-next": 200, f"{tag}-last": 200}


def test_refusals_in_a_row_each_answered_until_the_connections_last_request(node):
    """Five refused requests pipelined with their bodies and a GET: EINVOICE_KEEPALIVE_REQUESTS (4) answers, the
    fourth saying `Connection: close`; the fifth and the GET are not run (no access line): safe to send again."""
    tag = "row"
    refused = b"".join(_head(b"POST /nope", f"{tag}-{i}", b"Content-Length: 3000\r\n") + b"y" * 3000 for i in range(5))
    data, ended = _exchange(node.port, refused + _follow(tag))
    answers = _answers(data)
    assert [a[0] for a in answers] == [404] * 4 and ended == "closed", data[:400]
    assert [_connection(a[1]) for a in answers] == [b"keep-alive"] * 3 + [b"close"]
    assert _lines(node, tag) == {f"{tag}-{i}": 404 for i in range(4)}


CLOSING = {  # the refused request (head and what follows it), status: the worker cannot or should not go on
    "a body past 1 MiB": (_head(b"POST " + VALIDATE, "close-big", b"Content-Length: %d\r\n" % (2 * MiB))
                          + b"x" * 2 * MiB, 413),
    "a chunked body (its size unknown)": (_head(b"POST /nope", "close-chunked", b"Transfer-Encoding: chunked\r\n")
                                          + _chunked(200_000), 404),
    "HTTP/1.0": (b"POST /nope HTTP/1.0\r\nX-Request-Id: close-10\r\nContent-Length: 5\r\n\r\nabcde", 404),
    "Connection: close": (_head(b"POST /nope", "close-asked", b"Connection: close\r\nContent-Length: 5\r\n")
                          + b"abcde", 404),
    "a control character in a header": (_head(b"GET /healthz", "close-nul", b"X-A: a\x00b\r\n"), 400),
    "a second Host": (_head(b"GET /healthz", "close-host", b"Host: y\r\n"), 400),
    "a field past the limit (431)": (_head(b"GET /healthz", "close-431", b"X-A: " + b"a" * 9000 + b"\r\n"), 431),
    "101 fields (431)": (_head(b"GET /healthz", "close-fields", b"".join(b"X-%d: v\r\n" % i for i in range(101))),
                         431),
    "an expectation other than 100-continue": (_head(b"POST /nope", "close-417", b"Expect: x\r\nContent-Length: 5\r\n")
                                               + b"abcde", 417),
}


@pytest.mark.parametrize("name", CLOSING)
def test_a_refusal_the_connection_cannot_outlive_says_close_and_runs_nothing_after_it(node, name):
    """One answer, `Connection: close`, read whole (no reset), and the requests pipelined behind never run."""
    raw, status = CLOSING[name]
    tag = re.search(rb"X-Request-Id: ([\w-]+)", raw).group(1).decode()
    data, ended = _exchange(node.port, raw + _follow(tag))
    answers = _answers(data)
    assert [a[0] for a in answers] == [status] and ended == "closed", (name, data[:400])
    assert _connection(answers[0][1]) == b"close"
    _error_shape(data, status)
    assert f"{tag}-next" not in _lines(node, tag) and f"{tag}-last" not in _lines(node, tag)


@pytest.mark.parametrize("line,length,status", [(b"POST /nope", None, 404), (b"POST " + VALIDATE, 300_000, 413)])
def test_a_body_sent_slowly_after_its_100_continue_was_refused_is_never_read_as_a_request(node, line, length, status):
    """The client asked for 100-continue and got a final answer instead: it may withhold its body or send it anyway,
    so the worker says `Connection: close` before any of it. A client that sends it anyway, slowly, whose body is
    itself a request (`GET /healthz`, as a smuggler would send it), followed by a pipelined request: one answer, no
    reset, and neither the body's request nor the one behind it runs."""
    tag = f"expect-{status}"
    smuggled = f"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: {tag}-smuggled\r\n\r\n".encode()
    length = length or len(smuggled)  # (the 404's body: the smuggled request alone)
    head = _head(line, tag, b"Expect: 100-continue\r\nContent-Length: %d\r\n" % length)
    body = (smuggled * (length // len(smuggled) + 1))[:length]
    pieces = [body[i:i + 4096] for i in range(0, min(len(body), 64 * 1024), 4096)]
    data, ended = _exchange(node.port, head, *pieces, _follow(tag), pause=0.05)
    answers = _answers(data)
    assert [a[0] for a in answers] == [status] and ended == "closed", data[:400]
    assert _connection(answers[0][1]) == b"close" and answers[0][2]["requestId"] == tag
    assert set(_lines(node, tag)) == {tag}


def test_the_worker_serves_on_after_all_of_it(node):
    """The same worker answers a plain request afterwards, and holds no spool file."""
    (worker,) = worker_pids(node)
    data, ended = _exchange(node.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert [a[0] for a in _answers(data)] == [200] and ended == "closed"
    assert worker_pids(node) == {worker} and _spool_files([worker]) == 0


PAST_ONE_READ = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" * 3000  # 102 KB: more than the worker reads at once
OPENAPI = "GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\nX-Request-Id: {}\r\n{}\r\n"  # an answer of ~400 KB
LAST_ANSWERED = {  # what comes before the pipelined flood, the statuses answered, the id of the last one answered
    "the connection's last request": (b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" * 3
                                      + OPENAPI.format("last-cap", "").encode(), [200] * 4, "last-cap"),
    "Connection: close": (OPENAPI.format("last-asked", "Connection: close\r\n").encode(), [200], "last-asked"),
    "a chunked 404": (OPENAPI.format("last-chunked-before", "").encode()
                      + _head(b"POST /nope", "last-chunked", b"Transfer-Encoding: chunked\r\n") + _chunked(65536)[:-5],
                      [200, 404], "last-chunked"),
    "a 400 on a bad header": (OPENAPI.format("last-400-before", "").encode()
                              + _head(b"GET /healthz", "last-400", b"X-A: a\x00b\r\n"), [200, 400], "last-400"),
}


@pytest.fixture(scope="module")
def roomy(tmp_path_factory):
    """The default budgets (the node's spool budget cannot hold a 400 KB answer), four requests a connection."""
    yield from embedded_node(tmp_path_factory, "pipelining-roomy", EINVOICE_KEEPALIVE_REQUESTS="4")


@pytest.mark.parametrize("name", LAST_ANSWERED)
def test_the_last_answers_reach_a_client_that_pipelined_past_what_the_worker_reads(roomy, name):
    """The worker closes after its last answer while requests the client pipelined are still unread in the kernel
    (more than one read of 16 KiB): closed under them, the connection was reset, and a client reading late (a 4 KiB
    receive buffer, reading once the last answer's access line is written) got 4,096 bytes of the first ~400 KB
    answer and nothing of the others. Now the worker shuts its side and drops what still comes: every answer whole."""
    first, statuses, last = LAST_ANSWERED[name]
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.bind((CLIENT, 0))
        s.settimeout(30)
        s.connect(("127.0.0.1", roomy.port))
        s.sendall(first + PAST_ONE_READ)
        assert wait_for(lambda: last in _lines(roomy, last), 30), name
        data, ended = b"", "closed"
        try:
            while chunk := s.recv(65536):
                data += chunk
        except ConnectionResetError:
            ended = "reset"
    assert ended == "closed" and [a[0] for a in _answers(data)] == statuses, (name, ended, len(data), data[:400])
