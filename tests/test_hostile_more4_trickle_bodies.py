"""Issue 41, re-run: an attacker spread over so many addresses that none holds more than a handful (_HANDFUL) found
the one thing the stale room (`_make_stale_room`) never took: a request whose head is in, its body dripping a byte a
second. 700 addresses x 4 such uploads filled both workers' caps, and a client on its own address was turned away on
every new connection. Now a body that comes at no reasonable rate (`_Message.trickle`: slower than 1 KiB/s, or too
slow for the rest it announced to arrive by its deadline) goes when room is needed; an upload on a slow line that
keeps up stays.

Against a started `pipeline serve` (one worker, its cap lowered to 60 connections so that 40 addresses x 3 fill it)."""
from __future__ import annotations

import socket
import threading
import time

import pytest

from test_faults_hostile_load import KeepAsking
from test_hostile_more3_handful_flood import _closed, _new_connection_get, client_traffic
from test_platform_helpers import SlowConnections, embedded_node, worker_pids

ADDRESSES = [f"127.0.{30 + i // 200}.{1 + i % 200}" for i in range(40)]  # the attacker's: 3 each, a handful
CLIENT = "127.0.99.9"  # the well-behaved client's own address (the same as the handful flood's, for its helpers)
SLOW_LINE = "127.0.98.8"  # a client uploading on a slow line that keeps up: 4 uploads, a handful
PATH = b"/v1/invoice/xrechnung/validate"


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    yield from embedded_node(tmp_path_factory, "trickle", EINVOICE_MAX_WORKER_CONNECTIONS="60")


class SlowLine:
    """Uploads from SLOW_LINE, each of `size` bytes sent at `rate` bytes/s on a connection of its own (a thread
    each); `answers` collects the first bytes of each answer (or what came instead)."""

    def __init__(self, port: int, count: int, size: int, rate: int):
        self.port, self.size, self.rate = port, size, rate
        self.answers: list = []
        self.threads = [threading.Thread(target=self._upload, daemon=True) for _ in range(count)]
        for t in self.threads:
            t.start()

    def _upload(self) -> None:
        head = (b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/xml\r\nContent-Length: %d\r\n"
                b"Connection: close\r\n\r\n" % (PATH, self.size))
        step = self.rate // 10
        with socket.socket() as s:
            s.bind((SLOW_LINE, 0))
            s.settimeout(60)
            try:
                s.connect(("127.0.0.1", self.port))
                s.sendall(head)
                for sent in range(0, self.size, step):
                    s.sendall(b"p" * min(step, self.size - sent))
                    time.sleep(0.1)
                self.answers.append(s.recv(65536)[:12])
            except OSError as exc:
                self.answers.append(repr(exc))

    def join(self) -> None:
        for t in self.threads:
            t.join(90)


@pytest.mark.parametrize("head, drip", [
    (b"POST " + PATH + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/xml\r\nContent-Length: 100000\r\n\r\n",
     b"p" * 1000),
    (b"POST " + PATH + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/xml\r\nTransfer-Encoding: chunked\r\n\r\n",
     b"1\r\np\r\n" * 200),
], ids=["content-length", "chunked"])
def test_bodies_dripping_a_byte_a_second_from_a_handful_on_each_address_keep_no_client_out(node, head, drip):
    """120 uploads whose heads are in and whose bodies drip a byte a second, 3 from each of 40 addresses, against a
    cap of 60: a client on its own address meanwhile opens a new connection for each GET, asks on one keep-alive
    connection and sends 200 KB bodies over a second: every request is answered by the app (200; 401 for the
    upload without a key), and the flood's uploads made the room. Four uploads of 40 KB at 4 KiB/s from one more
    address (a slow line that keeps up, a handful) all arrive and are answered."""
    server = node
    pids = worker_pids(server)
    flood = SlowConnections(server.port, [a for a in ADDRESSES for _ in range(3)], drip, head=head, interval=1.0)
    asking = slow_line = None
    try:
        time.sleep(2.5)  # the cap is full, and the flood's bodies have dripped past their first judging
        slow_line = SlowLine(server.port, 4, 40_000, 4096)
        asking = KeepAsking(server.port, CLIENT)
        fresh, uploads = client_traffic(server.port, 12)
        slow_line.join()
        pushed_out = flood.opened - len(flood.sources) + sum(map(_closed, flood.socks))
    finally:
        if asking is not None:
            asking.close()
        flood.close()
    print("new connections:", len(fresh), "keep-alive requests:", len(asking.statuses), "uploads:", len(uploads),
          "slow-line uploads:", slow_line.answers, "flood connections pushed out:", pushed_out)
    assert pushed_out >= len(fresh)  # each new connection of the client's took a place of the flood's
    assert len(fresh) >= 3 and all(s == 200 for s in fresh), fresh
    assert all(s == 200 for s in asking.statuses), asking.statuses
    assert all(s == 401 for s in uploads), uploads
    assert slow_line.answers == [b"HTTP/1.1 401"] * 4, slow_line.answers
    assert worker_pids(server) == pids


class PipelinedUnread:
    """From each of `sources`, a connection pipelining `count` GET /v1/openapi.json (400 KB each) at once and never
    reading an answer (a receive buffer of 2 KiB); a connection the server closed (a send fails, or its error is set)
    is opened again."""

    def __init__(self, port: int, sources: list[str], count: int = 20):
        self.port, self.sources, self.opened, self.closed = port, sources, 0, 0
        self.requests = b"GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n" * count
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _open(self, source: str):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        s.setblocking(False)
        s.bind((source, 0))
        s.connect_ex(("127.0.0.1", self.port))
        self.opened += 1
        return [s, 0]

    def _run(self) -> None:
        held = [self._open(source) for source in self.sources]
        while not self.stop.wait(0.1):
            for i, (s, sent) in enumerate(held):
                try:
                    if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                        raise ConnectionResetError
                    if sent < len(self.requests):
                        held[i][1] += s.send(self.requests[sent:])
                except BlockingIOError:
                    pass
                except OSError:
                    s.close()
                    self.closed += 1
                    held[i] = self._open(self.sources[i])
        for s, _ in held:
            s.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)


def test_pipelined_requests_whose_answers_are_never_read_keep_no_client_out(node):
    """120 connections, 3 from each of 40 addresses, each pipelining 20 GET /v1/openapi.json and reading none of
    the answers, against a cap of 60: each holds an answer being written (its deadline the client timeout, renewed
    by every byte taken) and requests queued. A client on its own address meanwhile opens a new connection for each
    GET and asks on one keep-alive connection: every request is answered 200, and the connections whose clients took
    nothing for a second made the room. Before: 503 TOO_MANY_CONNECTIONS for every new connection, the flood's
    reconnecting at once whenever one was cut off at its client timeout."""
    server = node
    pids = worker_pids(server)
    flood = PipelinedUnread(server.port, [a for a in ADDRESSES for _ in range(3)])
    asking = None
    try:
        time.sleep(3)  # the cap is full, and the connections held have answers their clients do not take
        asking = KeepAsking(server.port, CLIENT)
        fresh = []
        ends = time.monotonic() + 8
        while time.monotonic() < ends:
            fresh.append(_new_connection_get(server.port))
            time.sleep(0.2)
        closed = flood.closed
    finally:
        if asking is not None:
            asking.close()
        flood.close()
    print("new connections:", len(fresh), "keep-alive requests:", len(asking.statuses),
          "flood connections closed:", closed, "opened:", flood.opened)
    assert len(fresh) >= 10 and all(s == 200 for s in fresh), str(fresh)
    assert all(s == 200 for s in asking.statuses), str(asking.statuses)
    assert closed >= len(fresh)
    assert worker_pids(server) == pids
