"""A worker's spool budget for request bodies (EINVOICE_BODY_SPOOL) is not one attacker's to keep: bodies sent fast
and then held open by a trickle filled it, and every other client's large upload got 503 SERVER_BUSY until the
request deadline (60 s; then the attacker reconnects). When the budget is full, the largest slow body of the address
holding the most bytes in slow bodies makes room (503 for it, its budget given back)."""
from __future__ import annotations

import socket
import threading
import time

import pytest

from test_faults_hostile_load import _spool_files
from test_http_front import _error_shape, _read_all
from test_platform_helpers import serve_with_key, worker_pids

MB = 1_000_000
ATTACKER, CLIENT = "127.0.0.4", "127.0.0.5"  # (127.0.0.1 is the trusted proxy of gunicorn's default)


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    data = tmp_path_factory.mktemp("body-budget")
    server, _, _ = serve_with_key(data, "body-budget", 10, workers=1, warm=False, env={
        "EINVOICE_BODY_SPOOL": str(100 * MB), "EINVOICE_BODY_MEMORY": str(4 * MB)})
    yield server
    server.stop()


def _upload(port: int, source: str, size: int, sent: int) -> socket.socket:
    """A connection that announced `size` body bytes and sent `sent` of them at once."""
    s = socket.create_connection(("127.0.0.1", port), timeout=20, source_address=(source, 0))
    s.sendall(b"POST /v1/invoice/parse HTTP/1.1\r\nHost: x\r\nContent-Type: application/xml\r\n"
              b"Content-Length: %d\r\n\r\n" % size)
    s.sendall(b"<" * sent)
    return s


@pytest.mark.parametrize("piece,pause", [(1, 0.3), (20_000, 0.1)], ids=["trickle", "fair-pace"])
def test_bodies_held_by_a_trickle_make_room_for_another_clients_upload(node, piece, pause):
    """Six bodies of 20 MB, 15 MB of each sent at once (90 of the budget's 100 MB), then a byte every 0.3 s (never
    idle for the client timeout, far below a fair pace) or 200 KB/s each. A client's 12 MB upload from another
    address: with the trickles it is served (one or two of them went with 503 SERVER_BUSY, where it was the upload
    that got the 503), with bodies arriving at a fair pace it waits its turn (its 503) and none of them goes."""
    (worker,) = worker_pids(node)
    hogs = [_upload(node.port, ATTACKER, 20 * MB, 15 * MB) for _ in range(6)]
    stop = threading.Event()

    def trickle():
        while not stop.wait(pause):
            for s in hogs:
                try:
                    s.send(b"<" * piece)
                except OSError:
                    pass

    trickler = threading.Thread(target=trickle)
    trickler.start()
    try:
        time.sleep(3.5)  # their first second is behind them, and windows at their pace
        assert _spool_files([worker]) == 6
        honest = _upload(node.port, CLIENT, 12 * MB, 0)
        try:
            honest.sendall(b"<" * (12 * MB))
        except OSError:
            pass  # refused while sending: its answer is there to read
        answer = _read_all(honest, 20)
        honest.close()
        evicted = []
        for s in hogs:
            s.setblocking(False)
            try:
                evicted.append(s.recv(65536))
            except BlockingIOError:
                pass
    finally:
        stop.set()
        trickler.join(5)
        for s in hogs:
            s.close()
    if piece == 1:
        assert answer.startswith(b"HTTP/1.1 401 "), answer[:300]  # it arrived whole: the app asks for a key
        assert 1 <= len(evicted) <= 2, evicted  # 12 MB needed room: one 15 MB body, at most two
        for said in evicted:
            parsed = _error_shape(said, 503)
            assert parsed["errorCode"] == "SERVER_BUSY" and b"Retry-After: 5" in said
    else:
        assert _error_shape(answer, 503)["errorCode"] == "SERVER_BUSY", answer[:300]
        assert evicted == []
    time.sleep(1)
    assert _spool_files([worker]) == 0 and worker_pids(node) == {worker}
