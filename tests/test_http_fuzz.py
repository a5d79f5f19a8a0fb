"""Fuzzing the HTTP framing of a started `pipeline serve` (issue 22): random chunk sizes and extensions, obsolete
header folding, huge and duplicate headers, pipelined requests, half-closed sockets, the bytes split anywhere.
Passes when no answer is a 5xx, no worker gets stuck (the same workers serve throughout) and /healthz answers
within 1 s after every example. Bounded: 250 examples, about a minute."""
from __future__ import annotations

import re
import socket
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from test_platform_helpers import Server, cli, worker_pids

STATUS = re.compile(rb"HTTP/1\.[01] (\d{3}) ")


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    data = tmp_path_factory.mktemp("fuzz")
    env = {"EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_CLIENT_TIMEOUT": "2", "EINVOICE_MAX_UPLOAD_BYTES": "100000", "EINVOICE_RATE_LIMIT": "100000/min"}
    token = cli(env, "keys", "create", "--name", "fuzz", "--env", "test", "--credits", "0").stdout.strip()
    server = Server(env, workers=2, warm=False, log_path=data / "serve.log")
    yield server, token, worker_pids(server)
    server.stop()


def _healthz_within_1s(port: int) -> None:
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := s.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200 ") and time.monotonic() - started < 1, answer[:200]


def _exchange(port: int, pieces: list[bytes], half_close: bool, pause: float) -> bytes:
    """Send the pieces (one send each, TCP_NODELAY, `pause` between), half-close if asked, read what comes back
    until the server closes or is quiet for 0.5 s."""
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            for piece in pieces:
                s.sendall(piece)
                if pause:
                    time.sleep(pause)
            if half_close:
                s.shutdown(socket.SHUT_WR)
        except OSError:  # the server refused early and closed: what it said is read below
            pass
        s.settimeout(0.5)
        try:
            while chunk := s.recv(65536):
                answer += chunk
        except (socket.timeout, ConnectionResetError):
            pass
    return answer


# -- strategies -----------------------------------------------------------------------------------------------------

token_chars = st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_!#$%&'*+.^`|~")
header_names = st.one_of(st.sampled_from(["Host", "Content-Type", "X-Pad", "Accept", "Connection", "Expect",
                                          "Transfer-Encoding", "Content-Length", "X-Forwarded-For",
                                          "X-Forwarded-Proto", "X_Forwarded_For"]),
                         st.text(token_chars, min_size=1, max_size=20))
header_values = st.one_of(st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40),
                          st.sampled_from(["close", "keep-alive", "100-continue", "chunked", "gzip, chunked",
                                           "10", "-1", "0x10", " 5", "https"]),
                          st.integers(1000, 12000).map(lambda n: "a" * n))  # huge


@st.composite
def header_lines(draw) -> bytes:
    lines = []
    for name, value in draw(st.lists(st.tuples(header_names, header_values), max_size=6)):
        line = f"{name}: {value}".encode("latin-1")
        if draw(st.booleans()) and draw(st.booleans()):
            line += b"\r\n " + draw(st.sampled_from([b"folded", b"", b"\tmore"]))  # obsolete line folding
        lines.append(line)
        if draw(st.integers(0, 5)) == 0:
            lines.append(line)  # duplicate
    return b"".join(line + b"\r\n" for line in lines)


chunk_sizes = st.one_of(st.integers(0, 300).map(lambda n: b"%x" % n),
                        st.sampled_from([b"-6", b"0x3", b"+3", b"1_0", b" 3", b"zz", b"", b"fffffffffffffffffff",
                                         b"3 ", b"03", b"A", b"a"]))
extensions = st.sampled_from([b"", b";a", b";a=b", b';a="q;x"', b"; a = b", b";" + b"e" * 5000, b";\x01"])


@st.composite
def chunked_body(draw) -> bytes:
    body = b""
    for size in draw(st.lists(chunk_sizes, max_size=5)):
        n = int(size, 16) if re.fullmatch(rb"[0-9a-fA-F]{1,4}", size) else 3
        body += size + draw(extensions) + b"\r\n" + b"x" * n + b"\r\n"
    if draw(st.booleans()):
        body += b"0" + draw(extensions) + b"\r\n" + draw(st.sampled_from([b"", b"T: 1\r\n", b"Host: y\r\n"])) + b"\r\n"
    return body


@st.composite
def one_request(draw) -> bytes:
    method = draw(st.sampled_from([b"GET", b"GET", b"POST", b"POST", b"POST", b"PUT", b"get", b"BREW", b"OPTIONS"]))
    target = draw(st.sampled_from([b"/healthz", b"/readyz", b"/v1/invoice/xrechnung/validate", b"/nope", b"*",
                                   b"//x", b"/a#f", b"http://h/healthz", b"/" + b"a" * 5000]))
    version = draw(st.sampled_from([b"HTTP/1.1"] * 6 + [b"HTTP/1.0", b"HTTP/2.0", b"HTTP/1.10"]))
    head = method + b" " + target + b" " + version + b"\r\nHost: x\r\n" + draw(header_lines())
    framing = draw(st.sampled_from(["none", "length", "short", "chunked"]))
    if framing == "chunked":
        return head + b"Transfer-Encoding: chunked\r\n\r\n" + draw(chunked_body())
    body = draw(st.binary(max_size=200))
    if framing == "length":
        return head + b"Content-Length: %d\r\n\r\n" % len(body) + body
    if framing == "short":  # a body shorter than announced: the rest never comes
        return head + b"Content-Length: %d\r\n\r\n" % (len(body) + 7) + body
    return head + b"\r\n"


@st.composite
def streams(draw) -> tuple[list[bytes], bool, float]:
    data = b"".join(draw(st.lists(one_request(), min_size=1, max_size=3)))  # pipelined
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=6, unique=True)))
    pieces = [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)]) if data[a:b]]
    return pieces, draw(st.booleans()), draw(st.sampled_from([0, 0, 0.002]))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow, HealthCheck.data_too_large])
@given(stream=streams())
def test_no_framing_gets_a_5xx_or_sticks_a_worker(fuzzed, stream):
    server = fuzzed[0]
    pieces, half_close, pause = stream
    answer = _exchange(server.port, pieces, half_close, pause)
    statuses = [int(s) for s in STATUS.findall(answer)]
    # 505: HTTP/2.0, 1.10 refused; 501: a transfer coding other than chunked (`gzip, chunked`, a random value) or
    # a method the server does not know (`BREW`, `get`: RFC 9110 9.1)
    assert all(s < 500 or s in (501, 505) for s in statuses), (statuses, answer[:500])
    _healthz_within_1s(server.port)


def test_a_pipelined_pair_split_at_every_position_is_answered_whole(fuzzed):
    """A chunked POST with extensions and a trailer, then a GET, on one connection, the bytes split in two at every
    position: both answered (401: no key, once the body is in; and 200) each time, in order."""
    server = fuzzed[0]
    data = (b"POST /v1/invoice/parse HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;a=b\r\nabc\r\n"
            b"10\r\n0123456789abcdef\r\n0\r\nT: 1\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    for i in range(1, len(data)):
        answer = _exchange(server.port, [data[:i], data[i:]], False, 0.001)
        assert [int(s) for s in STATUS.findall(answer)] == [401, 200], (i, answer[:300])


def test_the_same_workers_served_throughout(fuzzed):
    server, _, workers = fuzzed
    _healthz_within_1s(server.port)
    assert worker_pids(server) == workers
    assert "WORKER TIMEOUT" not in server.log_path.read_text()
