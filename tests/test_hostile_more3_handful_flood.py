"""Issue 41, re-run: the fair caps held for 200 addresses x 13 connections, but an attacker spread thinner, on so many
addresses that none holds more than a handful (_HANDFUL) in a worker, found nothing the fair room could take: 700
loopback addresses x 4 trickling heads filled both workers' caps and a client on its own address was turned away on
44 of 46 new connections and 63 of 65 uploads. Now, when no client holds more than a handful, the oldest connection
that has sent no byte or is still sending its head goes, whoever holds it, else the oldest idle for a second after a
request; never a request whose head is in (tests/test_http_front.py: a handful's slow bodies stay).

Against a started `pipeline serve` (one worker, its cap lowered to 60 connections so that 40 addresses x 3 fill it)."""
from __future__ import annotations

import socket
import time

import pytest

from test_faults_hostile_load import KeepAsking, send_over
from test_platform_helpers import SlowConnections, embedded_node, worker_pids

ADDRESSES = [f"127.0.{20 + i // 200}.{1 + i % 200}" for i in range(40)]  # the attacker's: 3 each, a handful
CLIENT = "127.0.99.9"  # the well-behaved client's own address


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    yield from embedded_node(tmp_path_factory, "handful", EINVOICE_MAX_WORKER_CONNECTIONS="60")


def client_traffic(port: int, seconds: float) -> tuple[list, list]:
    """The well-behaved client for `seconds`: a new connection's GET, then a 200 KB upload sent over 1 s, in turn;
    (statuses of the GETs, statuses of the uploads) (what came instead of a status line, where none did)."""
    fresh, uploads = [], []
    body = b"<x>" + b"p" * 200_000 + b"</x>"
    upload = (b"POST /v1/invoice/xrechnung/validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/xml\r\n"
              b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body))
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        fresh.append(_new_connection_get(port))
        answer = send_over(port, CLIENT, upload, body, 1)
        uploads.append(int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else answer[:100])
    return fresh, uploads


def _new_connection_get(port: int) -> int | str:
    """GET /healthz on a connection of its own from CLIENT: the status, or what came instead."""
    with socket.socket() as s:
        s.bind((CLIENT, 0))
        s.settimeout(30)
        s.connect(("127.0.0.1", port))
        try:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = s.recv(65536)
        except OSError as exc:
            return repr(exc)
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else repr(answer[:60])


def _closed(sock) -> bool:
    """The server has closed a flood connection (its 503 or end of stream waits to be read)."""
    if sock is None:
        return False
    try:
        sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:  # open, nothing said
        return False
    except OSError:
        pass
    return True


@pytest.mark.parametrize("head, drip", [
    (b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"s" * 4096, b"s"),  # a head that never ends
    (b"", b""),  # connections that send nothing
    (b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", b""),  # one request each, then idle (keep-alive)
], ids=["heads", "silent", "idle"])
def test_an_attacker_with_a_handful_on_each_of_many_addresses_keeps_no_client_out(node, head, drip):
    """120 connections trickling their heads (or silent, or idle), 3 from each of 40 addresses, against a cap of 60:
    a client on its own address meanwhile opens a new connection for each GET, asks on one keep-alive connection,
    and sends 200 KB bodies over a second (a fair pace): every request is answered by the app (200; 401 for the
    upload without a key), none turned away or cut off, and the flood's connections made the room."""
    server = node
    pids = worker_pids(server)
    flood = SlowConnections(server.port, [a for a in ADDRESSES for _ in range(3)], drip, head=head, interval=0.2)
    asking = None
    try:
        time.sleep(2)  # the cap is full
        asking = KeepAsking(server.port, CLIENT)
        fresh, uploads = client_traffic(server.port, 8)
        pushed_out = flood.opened - len(flood.sources) + sum(map(_closed, flood.socks))
    finally:
        if asking is not None:
            asking.close()
        flood.close()
    print("new connections:", len(fresh), "keep-alive requests:", len(asking.statuses), "uploads:", len(uploads),
          "flood connections pushed out:", pushed_out)
    assert pushed_out >= len(fresh)  # each new connection of the client's took a place of the flood's
    assert len(fresh) >= 3 and all(s == 200 for s in fresh), fresh
    assert all(s == 200 for s in asking.statuses), asking.statuses
    assert all(s == 401 for s in uploads), uploads
    assert worker_pids(server) == pids
