"""Expect: 100-continue against the worker's body budgets (EINVOICE_BODY_MEMORY, EINVOICE_BODY_SPOOL): the worker
sent the 100 whatever the budgets held, so a client whose announced body could not fit sent all of it only to get
503 SERVER_BUSY. Now the 503 (with Retry-After) comes instead of the 100, once room was tried as for an arriving
body (a slow body of another address goes); a body that fits gets its 100 as before."""
from __future__ import annotations

import socket
import threading
import time

import pytest

from test_http_front import _error_shape, _read_all
from test_platform_helpers import Server, free_port_in

MB = 1_000_000
HOLDER, CLIENT = "127.0.0.6", "127.0.0.7"  # (127.0.0.1 is the trusted proxy of gunicorn's default)
HEAD = b"POST /v1/invoice/parse HTTP/1.1\r\nHost: x\r\nContent-Type: application/xml\r\nContent-Length: %d\r\n"


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    data = tmp_path_factory.mktemp("continue-budget")
    env = {"EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_BODY_SPOOL": str(3 * MB), "EINVOICE_BODY_MEMORY": str(MB)}
    server = Server(env, workers=1, port=free_port_in(18900, 18999), log_path=data / "serve.log")
    yield server
    server.stop()


def _expecting(port: int, size: int, source: str = CLIENT) -> socket.socket:
    """A connection whose head announced `size` body bytes and asked for a 100 first; no body sent."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    s.sendall(HEAD % size + b"Expect: 100-continue\r\n\r\n")
    return s


def _first_answer(s: socket.socket, timeout: float = 5) -> bytes:
    """What the server says before the client sends any body: a 100, or a whole refusal (it then closes)."""
    s.settimeout(timeout)
    data = s.recv(65536)
    if data.startswith(b"HTTP/1.1 100 "):
        return data
    return data + _read_all(s, timeout)


def _held(port: int, size: int, sent: int) -> socket.socket:
    """Another address's upload that announced `size` bytes, sent `sent` of them at once and then nothing."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(HOLDER, 0))
    s.sendall(HEAD % size + b"\r\n" + b"<" * sent)
    return s


def test_a_body_past_the_spool_budget_gets_503_instead_of_the_100(node):
    """4 MB announced against a 3 MB spool budget: 503 SERVER_BUSY and Retry-After at once, no 100 before it."""
    s = _expecting(node.port, 4 * MB)
    try:
        started = time.monotonic()
        answer = _first_answer(s)
    finally:
        s.close()
    assert b"100 Continue" not in answer, answer[:300]
    assert _error_shape(answer, 503)["errorCode"] == "SERVER_BUSY"
    assert b"Retry-After: 5\r\n" in answer
    assert time.monotonic() - started < 4  # answered before any body, not at a timeout


@pytest.mark.parametrize("size", [2000, 2 * MB], ids=["in-memory", "spooled"])
def test_a_body_that_fits_gets_the_100_and_is_served(node, size):
    s = _expecting(node.port, size)
    try:
        assert _first_answer(s).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        s.sendall(b"<" * size)
        answer = _read_all(s, 10)
    finally:
        s.close()
    assert answer.startswith(b"HTTP/1.1 401 "), answer[:300]  # it arrived whole: the app asks for a key


def test_a_slow_body_of_another_address_makes_room_for_the_announced_one(node):
    """2 MB of another address's 2.5 MB sent and then nothing (slow after _PACE_WINDOW): the 2 MB the client
    announces fit only without it, so that body gets 503 and the client its 100."""
    holder = _held(node.port, 2_500_000, 2 * MB)
    try:
        time.sleep(2.5)  # past its first second and a window without a byte
        s = _expecting(node.port, 2 * MB)
        try:
            assert _first_answer(s).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
            s.sendall(b"<" * (2 * MB))
            assert _read_all(s, 10).startswith(b"HTTP/1.1 401 ")
        finally:
            s.close()
        evicted = _read_all(holder, 5)
    finally:
        holder.close()
    assert _error_shape(evicted, 503)["errorCode"] == "SERVER_BUSY"


def test_a_body_arriving_at_a_fair_pace_is_not_evicted_for_an_announced_one(node):
    """The same 2 MB held, and more of it still arriving at a fair pace while the other client asks: nothing makes
    room, the client gets 503 instead of the 100 and the holder's body arrives whole (the pace is kept up by a
    thread, so that a slow turn of a busy machine does not make the holder look slow)."""
    holder = _held(node.port, 2_500_000, 2 * MB)
    asked, paced = threading.Event(), [0]

    def keep_pace():  # 50 KB/s, three times the fair pace, for as long as the other client waits (at most 8 s)
        for _ in range(40):
            if asked.wait(0.2):
                return
            holder.sendall(b"<" * 10_000)
            paced[0] += 10_000

    pacer = threading.Thread(target=keep_pace)
    try:
        pacer.start()
        time.sleep(0.3)
        s = _expecting(node.port, 2 * MB)
        try:
            answer = _first_answer(s)
        finally:
            s.close()
        asked.set()
        pacer.join()
        holder.sendall(b"<" * (500_000 - paced[0]))
        held = _read_all(holder, 10)
    finally:
        asked.set()
        holder.close()
    assert _error_shape(answer, 503)["errorCode"] == "SERVER_BUSY", answer[:300]
    assert held.startswith(b"HTTP/1.1 401 "), held[:300]


def test_a_chunked_body_sent_with_its_head_and_expect_is_served(node):
    """A chunked body announces no length: nothing to weigh ahead. Sent at once with its head (a client need not
    wait for the 100), the worker's check before the 100 meets a body already arriving and serves it."""
    with socket.create_connection(("127.0.0.1", node.port), timeout=10, source_address=(CLIENT, 0)) as s:
        s.sendall(b"POST /v1/invoice/parse HTTP/1.1\r\nHost: x\r\nContent-Type: application/xml\r\n"
                  b"Connection: close\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n5\r\n<a/>\n\r\n")
        time.sleep(0.3)  # (the chunk is read before the body's end comes)
        s.sendall(b"0\r\n\r\n")
        answer = _read_all(s, 5)
    assert b"HTTP/1.1 401 " in answer, answer[:300]
