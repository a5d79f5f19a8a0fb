"""A refusal `pipeline serve`'s worker gives before the body announced with Content-Length is read (404, 405, 413)
reaches a client that sends its whole body without listening first, as nginx does: the worker answers, shuts down
its side and reads and drops the rest instead of closing under unread bytes (a reset that cost the client the answer:
nginx in front of a node that does not trust it answered 502). The bytes dropped are never buffered, and such a
lingering connection is the first to make room at a cap."""
from __future__ import annotations

import json
import socket
import threading
import time

import pytest
import requests

from test_faults_hostile_load import _spool_files
from test_http_framing_more import _access_line
from test_platform_helpers import serve_with_key, worker_pids

CLIENT = "127.0.0.3"  # not 127.0.0.1: gunicorn's default forwarded_allow_ips, whose bodies the app reads and answers
VALIDATE = "/v1/invoice/xrechnung/validate"


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    data = tmp_path_factory.mktemp("lingering")
    server, _, token = serve_with_key(data, "lingering", 10, workers=1, warm=False, env={
        "EINVOICE_MAX_CLIENT_CONNECTIONS": "5", "EINVOICE_MAX_WORKER_CONNECTIONS": "8"})
    yield server, token
    server.stop()


def _send_whole_then_read(port: int, head: bytes, size: int) -> tuple[bytes, str | None]:
    """Sends the head and `size` body bytes at full speed and only then reads, as nginx does (it sends the whole body
    whatever it hears, and a failed send is its 502): (what was read until the server closed, the error that ended
    the sending or the reading, if any)."""
    with socket.create_connection(("127.0.0.1", port), timeout=20, source_address=(CLIENT, 0)) as s:
        answer, error = b"", None
        try:
            s.sendall(head)
            piece = b"x" * 262144
            for _ in range(size // len(piece)):
                s.sendall(piece)
            s.sendall(b"x" * (size % len(piece)))
            while chunk := s.recv(65536):
                answer += chunk
        except OSError as exc:
            error = type(exc).__name__
    return answer, error


CASES = [  # the request line, body bytes sent, status, errorCode
    ("POST /nope", 5_000_000, 404, "NOT_FOUND"),
    ("PUT /healthz", 5_000_000, 405, "METHOD_NOT_ALLOWED"),
    ("DELETE " + VALIDATE, 3_000_000, 405, "METHOD_NOT_ALLOWED"),
    ("POST " + VALIDATE, 21_500_000, 413, "PAYLOAD_TOO_LARGE"),  # past 20 MB and 64 KiB of framing
]


@pytest.mark.parametrize("line,size,status,code", CASES)
def test_a_refusal_before_the_body_reaches_a_client_that_sends_it_all(node, line, size, status, code):
    """Five times each: the status and the ErrorResponse with the client's request id, never a reset; the worker
    holds no spool file for the body and has the refusal's access line."""
    server, token = node
    (worker,) = worker_pids(server)
    for i in range(5):
        rid = f"linger-{status}-{line.split()[0]}-{i}"
        head = (f"{line} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nX-Request-Id: {rid}\r\n"
                f"Content-Type: application/octet-stream\r\nContent-Length: {size}\r\n\r\n").encode()
        answer, error = _send_whole_then_read(server.port, head, size)
        assert error is None, (line, i, error, answer[:200])
        said_head, _, body = answer.partition(b"\r\n\r\n")
        assert said_head.startswith(b"HTTP/1.1 %d " % status) and b"\r\nConnection: close\r\n" in said_head, answer[:300]
        parsed = json.loads(body)
        assert (parsed["errorCode"], parsed["requestId"]) == (code, rid), parsed
        entry = _access_line(server, rid)
        assert (entry["status"], entry["front"]) == (status, True)
    assert _spool_files([worker]) == 0
    assert worker_pids(server) == {worker}


def test_lingering_connections_make_room_for_a_new_one_and_cost_no_worker(node):
    """Five connections from one address (its cap) are refused early and keep sending the body they announced, never
    idle long enough to be let go: a sixth from that address is served (one of them made room), again and again, and
    the worker lives on (a lingering connection evicted while its bytes arrived stopped the worker)."""
    server, _ = node
    (worker,) = worker_pids(server)
    stop = threading.Event()
    streamed = [0]

    def linger():
        while not stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", server.port), timeout=5,
                                              source_address=(CLIENT, 0)) as s:
                    s.sendall(b"PUT /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n")
                    while not stop.is_set():
                        s.sendall(b"x" * 4096)
                        streamed[0] += 4096
                        time.sleep(0.01)
            except OSError:
                time.sleep(0.01)  # made room for another, or let go: it comes back

    threads = [threading.Thread(target=linger) for _ in range(5)]
    for t in threads:
        t.start()
    try:
        time.sleep(1)
        statuses = []
        for _ in range(20):
            with socket.create_connection(("127.0.0.1", server.port), timeout=10, source_address=(CLIENT, 0)) as s:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                answer = b""
                while chunk := s.recv(65536):
                    answer += chunk
            statuses.append(int(answer.split()[1]))
            time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    assert statuses == [200] * 20, statuses
    assert streamed[0] > 1_000_000  # they kept sending all along
    assert worker_pids(server) == {worker}
    assert requests.get(server.url + "/healthz", timeout=10).status_code == 200
