"""Fault: slow clients. 100 connections that trickle a request head or a body, a connection that sends nothing,
and a client that never reads its answer must not take `pipeline serve --workers 2` down: /healthz and a real
validation keep answering within 1 s, and idle or stalled connections are dropped after the client timeout."""
from __future__ import annotations

import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from test_platform_helpers import REPO, Server, cli
from test_serve import _multipart, _ubl_sample

CLIENT_TIMEOUT = 3  # EINVOICE_CLIENT_TIMEOUT for the server under test


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data = tmp_path_factory.mktemp("slow")
    env = {"EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_CLIENT_TIMEOUT": str(CLIENT_TIMEOUT), "EINVOICE_RATE_LIMIT": "100000/min"}
    token = cli(env, "keys", "create", "--name", "slow", "--env", "test", "--credits", "10").stdout.strip()
    srv = Server(env, workers=2, warm=True, log_path=data / "serve.log")
    # both workers answer the tests' requests once before they are timed
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda _: _normal_clients_answer(srv, token, 1.0), range(2)))
    yield srv, token
    srv.stop()


class Tricklers:
    """`n` connections, each sending `prefix` at once and then `payload` one byte every `interval` seconds."""

    def __init__(self, port: int, n: int, prefix: bytes, payload: bytes, interval: float):
        self.stop = threading.Event()
        self.socks: list[socket.socket] = []
        self.closed_by_server = 0
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run, args=(port, prefix, payload, interval), daemon=True)
                        for _ in range(n)]
        for t in self.threads:
            t.start()

    def _run(self, port, prefix, payload, interval):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            return
        with self._lock:
            self.socks.append(s)
        try:
            s.sendall(prefix)
            for byte in payload:
                if self.stop.wait(interval):
                    return
                s.send(bytes([byte]))
        except OSError:
            with self._lock:
                self.closed_by_server += 1

    def close(self):
        self.stop.set()
        for t in self.threads:
            t.join(5)
        for s in self.socks:
            s.close()


def _normal_clients_answer(srv, token, seconds: float) -> list[float]:
    """healthz and a validation, again and again for `seconds`: how long each took, a validation without the app's
    own time (a full collection of Saxon's heap pauses a worker ~0.7 s whatever the clients do; the bound is on
    what slow clients can cause)."""
    sample = _ubl_sample()
    auth = {"Authorization": f"Bearer {token}"}
    took = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        t = time.perf_counter()
        r = requests.get(srv.url + "/healthz", timeout=5)
        took.append(time.perf_counter() - t)
        assert r.status_code == 200
        t = time.perf_counter()
        r = requests.post(srv.url + "/v1/invoice/xrechnung/validate", files=_multipart(sample), headers=auth, timeout=5)
        took.append(time.perf_counter() - t)
        assert r.status_code == 200, r.text
        took[-1] -= srv.app_seconds(r.headers["X-Request-Id"])
        time.sleep(0.2)
    return took


def test_100_connections_trickling_headers_do_not_block_normal_clients(server):
    srv, token = server
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 500 + b"\r\n\r\n"
    slow = Tricklers(srv.port, 100, b"", head, interval=1.0)
    try:
        time.sleep(1.5)
        took = _normal_clients_answer(srv, token, 4)
    finally:
        slow.close()
    assert max(took) < 1.0, took


def test_100_connections_trickling_bodies_do_not_block_normal_clients(server):
    srv, token = server
    prefix = (b"POST /v1/invoice/xrechnung/validate HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token.encode()
              + b"\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 10000000\r\n\r\n")
    slow = Tricklers(srv.port, 100, prefix, b"x" * 1000, interval=1.0)
    try:
        time.sleep(1.5)
        took = _normal_clients_answer(srv, token, 4)
    finally:
        slow.close()
    assert max(took) < 1.0, took


def _read_all(sock: socket.socket, limit: float) -> tuple[bytes, float]:
    started = time.monotonic()
    sock.settimeout(limit)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except socket.timeout:
        raise AssertionError(f"the server kept the connection open for more than {limit} s") from None
    except ConnectionResetError:
        pass
    return data, time.monotonic() - started


def test_a_connection_that_sends_nothing_is_dropped(server):
    srv, _ = server
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
        data, took = _read_all(s, CLIENT_TIMEOUT + 5)
    assert data == b""
    assert CLIENT_TIMEOUT - 0.5 <= took <= CLIENT_TIMEOUT + 2.5, took


def test_a_head_that_never_ends_gets_408_in_the_error_shape(server):
    srv, _ = server
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # no blank line: the head never ends
        data, took = _read_all(s, CLIENT_TIMEOUT + 5)
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408"), data[:200]
    assert json.loads(body)["errorCode"] == "REQUEST_TIMEOUT"
    assert took <= CLIENT_TIMEOUT + 2.5


def test_a_body_that_stops_gets_408_and_the_worker_stays_free(server):
    srv, token = server
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
        s.sendall(b"POST /v1/invoice/xrechnung HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Authorization: Bearer " + token.encode() + b"\r\nContent-Length: 1000\r\n\r\n{\"a\":")
        assert requests.get(srv.url + "/healthz", timeout=1).status_code == 200
        data, _ = _read_all(s, CLIENT_TIMEOUT + 5)
    assert data.startswith(b"HTTP/1.1 408"), data[:200]


def test_clients_that_never_read_their_answers_do_not_block(server):
    """40 connections each pipeline 200 requests and read nothing: their answers pile up in the worker's
    buffers and the kernel's, not in a blocked worker."""
    srv, _ = server
    socks = []
    try:
        for _ in range(40):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(b"GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n" * 200)
            socks.append(s)
        time.sleep(0.5)
        for _ in range(5):
            t = time.perf_counter()
            assert requests.get(srv.url + "/healthz", timeout=2).status_code == 200
            assert time.perf_counter() - t < 1.0
    finally:
        for s in socks:
            s.close()


def test_pipeline_serve_runs_the_buffered_worker(server):
    """The README's command (scripts/serve.sh ends in `pipeline serve`) gives this protection, not an option."""
    srv, _ = server
    assert (REPO / "scripts" / "serve.sh").read_text().rstrip().endswith('exec pipeline serve "$@"')
    assert "Using worker: pipeline.cli.serve.BufferedWorker" in srv.log_path.read_text()
