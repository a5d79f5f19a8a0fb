"""Issue 41 against a started `pipeline serve`: what a hostile client does with the answers. Clients that ask for a
job's results (tens of MB of JSON Lines) and never read them: the answers wait in spool files within the worker's
budgets, not in its memory (20 such clients grew each worker by 650 MB, which stayed with the process), and go when
the clients do. A bare HTTP/0.9 request line is answered at once (llhttp waited for headers that never come).

Load on this machine varies: the assertions are about what is answered, memory and files, never latency."""
from __future__ import annotations

import copy
import hashlib
import io
import json
import socket
import time
import zipfile

import pytest
import requests

from faults_common import FIXTURE, access_lines, wait_for
from test_faults_hostile_load import RssWatch, _spool_files
from test_http_front import _error_shape, _read_all
from test_platform_helpers import serve_with_key, worker_pids

MiB = 1 << 20
DOCUMENTS, LINES = 6, 1500  # each converted to CII: ~2.6 MB of base64 in its result line


def _invoice(lines: int) -> bytes:
    from pipeline.flows.generate_xml import generate_xml

    request = json.loads(FIXTURE.read_text())
    line = request["invoice"]["invoiceLines"][0]
    request["invoice"]["invoiceLines"] = [dict(copy.deepcopy(line), lineIdentifier=str(i + 1)) for i in range(lines)]
    request["invoice"]["vatBreakdowns"] = []
    request["config"]["syntax"] = "UBL"
    return generate_xml(json.dumps(request).encode(), "xrechnung")[0]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One worker (its memory is the one measured) and a done convert job whose results are ~16 MB."""
    data = tmp_path_factory.mktemp("answers")
    server, _, token = serve_with_key(data, "answers", 1000, rate_limit="100000/min", workers=1, warm=False)
    try:
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
            document = _invoice(LINES)
            for i in range(DOCUMENTS):
                z.writestr(f"invoice-{i}.xml", document)
        auth = {"Authorization": f"Bearer {token}"}
        r = requests.post(server.url + "/v1/jobs", headers=auth, timeout=120, files={
            "file": ("month.zip", archive.getvalue(), "application/zip"),
            "request": ("request.json", json.dumps({"operation": "convert", "to": "CII"}), "application/json")})
        assert r.status_code == 202, r.text[:300]
        job = r.headers["Location"]
        state = wait_for(lambda: requests.get(server.url + job, headers=auth, timeout=60).json()["state"] in (
            "done", "failed"), 900, step=2)
        assert state, "the job did not end"
        yield server, token, job + "/results"
    finally:
        server.stop()


def test_answers_nobody_reads_wait_in_spool_files_not_in_the_workers_memory(served):
    """30 connections ask for the job's results and read nothing (a 4 KiB receive buffer): each worker grows by
    at most 64 MiB (before: the 30 answers, ~500 MB, in memory), the answers wait in spool files, and those are
    gone once the clients are; a client that reads gets every byte."""
    server, token, results = served
    whole = requests.get(server.url + results, headers={"Authorization": f"Bearer {token}"}, timeout=120)
    assert whole.status_code == 200 and len(whole.content) > 12 * MiB, len(whole.content)
    assert all(json.loads(x).get("document") for x in whole.content.splitlines())
    pids = worker_pids(server)
    watch = RssWatch(pids)
    head = f"GET {results} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
    socks = []
    try:
        for _ in range(30):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", server.port))
            s.sendall(head)
            socks.append(s)
        answered = wait_for(lambda: len([x for x in access_lines(server.log_path) if x["path"] == results]) >= 31,
                            300, step=0.5)
        assert answered, "the worker did not answer the 30 requests"
        held = wait_for(lambda: _spool_files(pids) >= 30, 10)
        assert held, _spool_files(pids)
        assert requests.get(server.url + "/healthz", timeout=30).status_code == 200
    finally:
        for s in socks:
            s.close()
    growth = watch.close()
    print("30 unread answers of", len(whole.content) // MiB, "MiB: growth at peak MiB",
          {p: g / MiB for p, g in growth.items()})
    assert all(g <= 64 * MiB for g in growth.values()), growth
    assert wait_for(lambda: _spool_files(pids) == 0, 10)
    again = requests.get(server.url + results, headers={"Authorization": f"Bearer {token}"}, timeout=120)
    assert hashlib.sha256(again.content).digest() == hashlib.sha256(whole.content).digest()
    assert worker_pids(server) == pids


def test_clients_that_read_their_answers_slowly_or_never_lose_them_and_their_spool_files(served):
    """Two clients never read; two read 1 KiB every half second (2 KiB/s) and never pause for the 10 s client
    timeout. An answer must be taken at 16 KiB/s or faster, with the client timeout of slack (serve.py `_flush`;
    before, every byte taken gave a whole client timeout more): the worker drops all four connections and their
    spool files within a minute, while the clients still hold their sockets (what the kernel had taken of the
    answers still trickles to them). The count of such files per worker is bounded by its connections (one answer
    each) and their bytes by EINVOICE_BODY_SPOOL."""
    server, token, results = served
    pids = worker_pids(server)
    head = f"GET {results} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
    socks = []
    try:
        for _ in range(4):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", server.port))
            s.settimeout(0.2)
            s.sendall(head)
            socks.append(s)
        answered = wait_for(lambda: len([x for x in access_lines(server.log_path) if x["path"] == results]) >= 4,
                            300, step=0.5)
        assert answered, "the worker did not answer the 4 requests"
        started, got, held = time.monotonic(), 0, _spool_files(pids)
        while time.monotonic() - started < 90 and held:
            for s in socks[2:]:
                try:
                    got += len(s.recv(1024))
                except (socket.timeout, ConnectionResetError):
                    pass
            time.sleep(0.5)
            held = _spool_files(pids)
        gone = time.monotonic() - started
        print(f"slow and non-reading clients: spool files gone after {gone:.1f} s; the trickling ones read {got} bytes")
        assert held == 0 and gone < 60, (held, gone)
        assert requests.get(server.url + "/healthz", timeout=30).status_code == 200
    finally:
        for s in socks:
            s.close()
    assert worker_pids(server) == pids


def test_a_bare_http_0_9_request_line_is_answered_at_once(served):
    """`GET /healthz` and its end of line, nothing more, as an HTTP/0.9 client sends it and then waits: 505 in our
    error shape at once (it was answered at the client timeout, 10 s), with its access line."""
    server, _, _ = served
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        started = time.monotonic()
        s.sendall(b"GET /healthz\r\n")
        answer = _read_all(s, 10)
        took = time.monotonic() - started
    parsed = _error_shape(answer, 505)
    assert parsed["errorCode"] == "HTTP_VERSION_NOT_SUPPORTED" and "HTTP/0.9" in parsed["message"]
    assert took < 5, took
    line = wait_for(lambda: [x for x in access_lines(server.log_path) if x["requestId"] == parsed["requestId"]], 5)
    assert line and line[0]["status"] == 505
