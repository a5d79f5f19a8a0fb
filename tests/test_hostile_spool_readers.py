"""A worker's spool budget (EINVOICE_BODY_SPOOL) holds request bodies and the answers waiting for their clients. When
it was full of answers owed to clients that read them slowly, those answers were not pushed out: every other
client's upload got 503 SERVER_BUSY until the slow readers were cut by the answer's pace rule (16 KiB/s with the
client timeout of slack). Now an answer read slower than that pace makes room as a slow body does (its connection
closes), and an answer read at a fair pace is never cut."""
from __future__ import annotations

import socket
import threading
import time

import pytest
import requests

from test_faults_hostile_load import _spool_files
from test_http_front import _read_all
from test_platform_helpers import Server, free_port_in, worker_pids

KB = 1000
READER, CLIENT = "127.0.0.6", "127.0.0.7"  # (127.0.0.1 is the trusted proxy of gunicorn's default)


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    """One worker whose bodies and answers all go to spool files (no memory budget), within 3 MB."""
    data = tmp_path_factory.mktemp("spool-readers")
    env = {"EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_BODY_MEMORY": "0", "EINVOICE_BODY_SPOOL": str(3000 * KB)}
    server = Server(env, workers=1, port=free_port_in(18210, 18229), log_path=data / "serve.log")
    yield server
    server.stop()


def _asks_for_the_api_document(port: int) -> socket.socket:
    """A connection that asks for the OpenAPI document (~390 KB) 30 times in a row (pipelined) through a 4 KiB
    window: the kernel takes the first answers whole (a socket's send queue grows to megabytes), the next one waits
    in the worker's spool."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.bind((READER, 0))
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n" * 30)
    return s


def _upload(port: int, size: int) -> bytes:
    """A body of `size` bytes sent at once (no key: the app answers 401 once it is in)."""
    with socket.create_connection(("127.0.0.1", port), timeout=20, source_address=(CLIENT, 0)) as s:
        s.sendall(b"POST /v1/invoice/parse HTTP/1.1\r\nHost: x\r\nContent-Type: application/xml\r\n"
                  b"Content-Length: %d\r\nConnection: close\r\n\r\n" % size)
        try:
            s.sendall(b"<" * size)
        except OSError:
            pass  # refused while sending: its answer is there to read
        return _read_all(s, 20)


@pytest.mark.parametrize("reads", [0, 1024], ids=["never", "1-KiB-per-s"])
def test_answers_owed_to_slow_readers_make_room_for_another_clients_upload(node, reads):
    """Seven clients ask for the OpenAPI document and read nothing, or 1 KiB a second: their answers fill most of
    the 3 MB budget. A client's 900 KB upload from another address is served (401: it arrived whole; before, 503
    SERVER_BUSY) and the readers whose answers made room are cut (their answers end short)."""
    (worker,) = worker_pids(node)
    readers = [_asks_for_the_api_document(node.port) for _ in range(7)]
    stop = threading.Event()

    def read_slowly():
        while not stop.wait(1):
            for s in readers:
                s.setblocking(False)
                try:
                    s.recv(reads)
                except OSError:
                    pass

    reader = threading.Thread(target=read_slowly) if reads else None
    try:
        if reader:
            reader.start()
        assert _wait(lambda: _spool_files([worker]) == 7, 20), _spool_files([worker])
        time.sleep(2.5)  # more than a second behind the fair pace
        answer = _upload(node.port, 900 * KB)
        assert answer.startswith(b"HTTP/1.1 401 "), answer[:300]
    finally:
        stop.set()
        if reader:
            reader.join(5)
        for s in readers:
            s.close()
    assert _wait(lambda: _spool_files([worker]) == 0, 10)
    assert worker_pids(node) == {worker}


def test_an_answer_that_needs_the_spool_makes_room_as_an_upload_does(node):
    """The same seven unread answers; another client asks for the document: its answer, written by the app into a
    full spool, pushes one of them out and is answered whole (before: 503 SERVER_BUSY, the work done for nothing)."""
    (worker,) = worker_pids(node)
    readers = [_asks_for_the_api_document(node.port) for _ in range(7)]
    try:
        assert _wait(lambda: _spool_files([worker]) == 7, 20), _spool_files([worker])
        time.sleep(2.5)
        with socket.create_connection(("127.0.0.1", node.port), source_address=(CLIENT, 0)) as s:
            s.sendall(b"GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = _read_all(s, 20)
    finally:
        for s in readers:
            s.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), answer[:300]
    assert body == requests.get(node.url + "/v1/openapi.json", timeout=30).content
    assert _wait(lambda: _spool_files([worker]) == 0, 10)


def test_answers_read_at_a_fair_pace_are_not_cut_to_make_room(node):
    """Seven clients read their answers at 64 KiB/s (four times the fair pace) while their answers fill most of the
    budget: a 900 KB upload waits its turn (503 SERVER_BUSY + Retry-After) and none of them is cut; each reads on
    for 30 s (longer than the kernel takes to wake the writer: before, a client reading 64 KiB/s was cut off after
    about 40 s, its pace counted by the bytes handed to the kernel), every answer whole and in order."""
    (worker,) = worker_pids(node)
    readers = [_asks_for_the_api_document(node.port) for _ in range(7)]
    got = [bytearray() for _ in readers]
    stop = threading.Event()

    def read_fairly(s, into):
        s.settimeout(0.25)
        started = time.monotonic()
        while not stop.is_set():
            owed = int(64 * 1024 * (time.monotonic() - started)) - len(into)
            if owed > 0:
                try:
                    piece = s.recv(owed)
                except socket.timeout:
                    continue
                except OSError:
                    break
                if not piece:
                    break
                into.extend(piece)
            time.sleep(0.05)

    threads = [threading.Thread(target=read_fairly, args=pair) for pair in zip(readers, got)]
    for t in threads:
        t.start()
    try:
        assert _wait(lambda: _spool_files([worker]) == 7, 20), _spool_files([worker])
        time.sleep(2.5)
        answer = _upload(node.port, 900 * KB)
        assert answer.startswith(b"HTTP/1.1 503 ") and b"SERVER_BUSY" in answer, answer[:300]
        stop.wait(30)
        assert _spool_files([worker]) == 7
    finally:
        stop.set()
        for t in threads:
            t.join(5)
        for s in readers:
            s.close()
    document = requests.get(node.url + "/v1/openapi.json", timeout=30).content
    for into in got:
        assert len(into) > 1_800_000, len(into)
        head = b"HTTP/1.1 200 OK"
        answers = bytes(into).split(head)[1:]
        assert all(a.partition(b"\r\n\r\n")[2] == document for a in answers[:-1]), len(answers)
    assert worker_pids(node) == {worker}


def _wait(predicate, seconds: float):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()
