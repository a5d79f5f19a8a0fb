"""Issue 36's leftover against a started `pipeline serve`: a job upload may take longer than the request deadline
while its body keeps arriving at EINVOICE_JOB_UPLOAD_MIN_RATE or faster (a month's archive on an office line), up to
EINVOICE_JOB_UPLOAD_DEADLINE; one that falls below the rate gets 408 as before, its spool file gone. Other requests
keep the fixed deadline. Scaled down to seconds: the request deadline 3 s, the rate 20 kB/s, the maximum 6 s.

Each body is sent at a set pace, a tenth of a second's bytes at a time; the bounds on when a 408 comes leave a second
or more for a loaded machine."""
from __future__ import annotations

import io
import json
import select
import socket
import time
import zipfile

import pytest

from test_faults_hostile_load import _spool_files
from test_http_front import BODY_PATH, _error_shape, _read_all
from test_jobs import documents, results, wait_for
from test_platform_helpers import Server, cli, free_port_in, worker_pids

DEADLINE, RATE, MAXIMUM = 3, 20_000, 6  # s, bytes/s, s
FAST, SLOW = 50_000, 8_000  # bytes/s: 2.5 times the rate; 0.4 times it (its slack drains 0.6 s a second: 408 at 5 s)
DOCUMENTS, INVALID_EVERY = 24, 4


@pytest.fixture(scope="module")
def paced(tmp_path_factory):
    data = tmp_path_factory.mktemp("pace")
    env = {"EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_REQUEST_DEADLINE": str(DEADLINE), "EINVOICE_JOB_UPLOAD_MIN_RATE": str(RATE),
           "EINVOICE_JOB_UPLOAD_DEADLINE": str(MAXIMUM)}
    token = cli(env, "keys", "create", "--name", "pace", "--env", "test", "--credits", "100").stdout.strip()
    server = Server(env, workers=1, port=free_port_in(18100, 18199), log_path=data / "serve.log")
    try:
        yield server, token
    finally:
        server.stop()


def _job_body() -> tuple[bytes, str]:
    """A validate job's multipart body over an archive of the official suite's typical invoice, every fourth copy
    without its invoice number (BR-02), stored uncompressed (~230 kB: 4.6 s at FAST); and its boundary."""
    valid, invalid = documents()
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as z:
        for i in range(DOCUMENTS):
            z.writestr(f"doc-{i:02d}.xml", invalid if i % INVALID_EVERY == 0 else valid)
    boundary = "pace"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"request\"\r\nContent-Type: application/json"
            f"\r\n\r\n{json.dumps({'operation': 'validate', 'spec': 'xrechnung'})}\r\n--{boundary}\r\n"
            "Content-Disposition: form-data; name=\"file\"; filename=\"month.zip\"\r\n"
            "Content-Type: application/zip\r\n\r\n").encode() + archive.getvalue() + f"\r\n--{boundary}--\r\n".encode()
    return body, boundary


def _job_head(token: str, boundary: str, length: int) -> bytes:
    return (f"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {length}\r\n\r\n").encode()


def _send_paced(port: int, head: bytes, body: bytes, rate: int, during=None) -> tuple[bytes, float]:
    """`head`, then `body` at `rate` bytes/s until it is sent or an answer comes; the answer and the seconds from the
    first byte to it. `during(seconds)` is called between sends."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        started = time.monotonic()
        s.sendall(head)
        step, sent = rate // 10, 0
        try:
            while sent < len(body) and not select.select([s], [], [], 0)[0]:
                s.sendall(body[sent:sent + step])
                sent += step
                if during is not None:
                    during(time.monotonic() - started)
                time.sleep(max(0.0, started + sent / rate - time.monotonic()))  # on schedule, whatever a send took
        except OSError:  # cut off: the answer says why
            pass
        answer = _read_all(s, 30)
        return answer, time.monotonic() - started


def test_a_job_upload_at_the_rate_outlasts_the_request_deadline_and_its_documents_are_judged(paced):
    server, token = paced
    body, boundary = _job_body()
    answer, took = _send_paced(server.port, _job_head(token, boundary, len(body)), body, FAST)
    head, _, payload = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 202 "), answer[:500]
    assert took > DEADLINE + 1, took  # longer than any other request may take
    job = wait_for(server.url, token, json.loads(payload)["id"], timeout=120)
    lines = results(server.url, token, job["id"])
    assert job["state"] == "done" and job["total"] == job["done"] == DOCUMENTS, job
    assert [line["name"] for line in lines] == [f"doc-{i:02d}.xml" for i in range(DOCUMENTS)]
    # the official rules' verdicts: the copies without BT-1 fail BR-02, the others pass
    verdicts = [line["report"]["valid"] for line in lines]
    assert verdicts == [i % INVALID_EVERY != 0 for i in range(DOCUMENTS)], lines[0]
    assert job["valid"] == DOCUMENTS - DOCUMENTS // INVALID_EVERY and job["invalid"] == DOCUMENTS // INVALID_EVERY


def test_a_job_upload_below_the_rate_gets_408_when_its_slack_is_spent_and_leaves_no_spool_file(paced):
    server, token = paced
    pids = worker_pids(server)
    body, boundary = _job_body()
    held = []
    answer, took = _send_paced(server.port, _job_head(token, boundary, len(body)), body, SLOW,
                               lambda t: held.append(_spool_files(pids)) if 1 < t < 2 and not held else None)
    assert held == [1]  # spooled in the jobs directory while it arrived
    parsed = _error_shape(answer, 408)
    assert parsed["errorCode"] == "REQUEST_TIMEOUT" and "EINVOICE_JOB_UPLOAD_MIN_RATE" in parsed["message"]
    assert DEADLINE / (1 - SLOW / RATE) - 1 < took < DEADLINE / (1 - SLOW / RATE) + 2.5, took
    time.sleep(0.3)
    assert _spool_files(pids) == 0


def test_a_job_upload_at_the_rate_gets_408_at_the_job_upload_deadline(paced):
    server, token = paced
    pids = worker_pids(server)
    body, boundary = _job_body()
    answer, took = _send_paced(server.port, _job_head(token, boundary, 10 * len(body)), body * 10, FAST)
    parsed = _error_shape(answer, 408)
    assert "EINVOICE_JOB_UPLOAD_DEADLINE" in parsed["message"], parsed
    assert MAXIMUM - 0.5 < took < MAXIMUM + 2.5, took
    time.sleep(0.3)
    assert _spool_files(pids) == 0


def test_other_requests_keep_the_request_deadline_whatever_their_pace(paced):
    server, _ = paced
    head = b"POST " + BODY_PATH + b" HTTP/1.1\r\nHost: x\r\nContent-Length: 500000\r\n\r\n"
    answer, took = _send_paced(server.port, head, b"x" * 500_000, FAST)
    parsed = _error_shape(answer, 408)
    assert "EINVOICE_REQUEST_DEADLINE" in parsed["message"] and "JOB" not in parsed["message"], parsed
    assert DEADLINE - 0.5 < took < DEADLINE + 2.5, took
