"""Issue 41: slowloris on the chunked job upload. 2,600 connections from 200 addresses (13 each, far below the
per-address cap) begin `POST /v1/jobs` with Transfer-Encoding: chunked and send their chunks' framing a byte at a
time (a job upload is spooled into the jobs directory from its first byte, so each holds a file too). Both workers'
caps (1,000) fill; a well-behaved client on its own address meanwhile keeps asking /healthz on one keep-alive
connection and submits jobs whose bodies it sends chunked over 3 s: every one of its requests is answered.

Load on this machine varies: the assertions are about what is answered, never about latency."""
from __future__ import annotations

import io
import json
import time
import zipfile

from test_faults_hostile_load import FLOOD_ADDRESSES, KeepAsking, send_over
from test_faults_hostile_load import pair  # noqa: F401 - the fixture: two workers, default limits, SQLite
from test_platform_helpers import SlowConnections, worker_pids
from test_serve import _ubl_sample

# the head of a chunked job upload; then its framing, one byte per round (a 1-byte chunk every 12 s)
_TRICKLE_HEAD = (b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=t\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n")
_TRICKLE = b"1\r\nx\r\n" * 1000


def _job_upload_over(port: int, source: str, token: str, seconds: float) -> bytes:
    """A job of one document whose multipart body (200 KB) is sent in ten chunks over `seconds`; the answer."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as z:
        z.writestr("a.xml", _ubl_sample())
        z.writestr("padding.txt", b"p" * 200_000)  # (not a document: named in the results as such)
    boundary = "j0b"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"request\"\r\nContent-Type: application/json"
            f"\r\n\r\n{json.dumps({'operation': 'validate', 'spec': 'xrechnung'})}\r\n--{boundary}\r\n"
            "Content-Disposition: form-data; name=\"file\"; filename=\"month.zip\"\r\n"
            "Content-Type: application/zip\r\n\r\n").encode() + archive.getvalue() + f"\r\n--{boundary}--\r\n".encode()
    head = (f"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    return send_over(port, source, head, body, seconds, chunked=True)


def test_trickling_chunked_job_uploads_from_200_addresses_do_not_keep_out_a_well_behaved_client(pair):  # noqa: F811
    server, token = pair
    pids = worker_pids(server)
    jobs = []
    asking = KeepAsking(server.port, "127.0.9.9")
    flood = SlowConnections(server.port, [a for a in FLOOD_ADDRESSES for _ in range(13)], _TRICKLE,
                            head=_TRICKLE_HEAD)
    try:
        ends = time.monotonic() + 30  # the caps are reached within a few seconds; the flood renews itself
        while time.monotonic() < ends:
            answer = _job_upload_over(server.port, "127.0.9.9", token, 3)
            jobs.append(int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else answer[:100])
        opened = flood.opened
    finally:
        asking.close()
        flood.close()
    statuses = asking.statuses
    print("healthz:", len(statuses), "job uploads:", jobs, "flood connections opened:", opened)
    assert opened > 2600  # the flood was cut down and came back
    assert len(jobs) >= 3 and all(s == 202 for s in jobs), jobs
    assert len(statuses) >= 20 and all(s == 200 for s in statuses), [s for s in statuses if s != 200]
    assert worker_pids(server) == pids
