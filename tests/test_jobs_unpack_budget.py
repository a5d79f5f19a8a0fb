"""Issue 41 / 36: a job upload is unpacked within the request's time budget (EINVOICE_REQUEST_BUDGET). Unpacking
ran inside POST /v1/jobs with no time limit: an mbox of 100 MB of "From 1" lines (one message that begins no other)
kept a worker busy 41 s of CPU against a 5 s budget, so 2 GiB of them outlived gunicorn's worker timeout; a ZIP of
very many small members costs ~66 us each. Now both answer 503 TIME_BUDGET soon after the budget, nothing is left
(job folder, job row, credits) and the same worker serves the next upload.

One `pipeline serve` (one worker, not warmed: unpacking needs no rules) with a 2 s budget for the whole module."""
from __future__ import annotations

import io
import json
import struct
import time
import uuid
import zipfile

import pytest
import requests

from test_platform_helpers import Server, cli, free_port_in, worker_pids

from pipeline.storage.sqlite import SqliteStore

BUDGET = 2.0
SLACK = 4.0  # s past the budget: one block of an mbox (1 MiB, ~0.5 s of CPU) on a loaded 2-core machine, and more


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data = tmp_path_factory.mktemp("unpack_budget")
    env = {"EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_RATE_LIMIT": "10000/min", "EINVOICE_REQUEST_BUDGET": str(BUDGET)}
    token = cli(env, "keys", "create", "--name", "unpack", "--env", "test", "--credits", "10").stdout.strip()
    assert token.startswith("einv_test_"), token
    srv = Server(env, workers=1, port=free_port_in(19900, 19999), log_path=data / "serve.log")
    srv.data, srv.token = data, token
    try:
        yield srv
    finally:
        srv.stop()


def _post(server, name: str, body: bytes, operation: str = "convert"):
    request_id = f"unpack-{uuid.uuid4().hex[:12]}"
    r = requests.post(server.url + "/v1/jobs", timeout=300,
                      headers={"Authorization": f"Bearer {server.token}", "X-Request-Id": request_id},
                      files={"file": (name, body, "application/octet-stream"),
                             "request": ("request.json", json.dumps({"operation": operation, **(
                                 {"to": "CII"} if operation == "convert" else {})}), "application/json")})
    return r, server.app_seconds(request_id, wait=5)


def _balance(server) -> int:
    key, = SqliteStore(server.data / "platform.sqlite3").list_keys()
    return key.balance


def _described(server, r) -> None:
    """The answer is one the OpenAPI document describes: its errorCode listed, no header it requires missing (the
    jobs' other 503, JOBS_DISK_FULL, has Retry-After)."""
    spec = requests.get(server.url + "/v1/openapi.json", timeout=30).json()
    described = spec["paths"]["/v1/jobs"]["post"]["responses"][str(r.status_code)]
    assert r.json()["errorCode"] in described["content"]["application/json"]["schema"]["properties"]["errorCode"][
        "enum"]
    required = {name.lower() for name, ref in described["headers"].items()
                if spec["components"]["headers"][ref["$ref"].rsplit("/", 1)[1]].get("required")}
    assert required <= {name.lower() for name in r.headers}, required


def _folders(server) -> set[str]:
    jobs = server.data / "jobs"
    return {p.name for p in jobs.iterdir()} if jobs.exists() else set()


def _refused_in_time_and_nothing_left(server, name: str, body: bytes, unbounded: str) -> None:
    pids, balance, folders = worker_pids(server), _balance(server), _folders(server)
    r, took = _post(server, name, body)
    print(f"{name}, {len(body)} bytes, budget {BUDGET:g} s: {r.status_code} after {took:.1f} s in the app "
          f"(without the budget: {unbounded})")
    assert r.status_code == 503, r.text[:500]
    answer = r.json()
    assert answer["errorCode"] == "TIME_BUDGET" and "EINVOICE_REQUEST_BUDGET" in answer["message"]
    assert answer["errors"][0]["field"] == "file" and "Retry-After" not in r.headers
    assert took < BUDGET + SLACK, took
    _described(server, r)
    assert worker_pids(server) == pids  # the same worker answered and lives on
    assert _folders(server) == folders  # no job folder (its spool files were in it)
    listed = requests.get(server.url + "/v1/jobs", headers={"Authorization": f"Bearer {server.token}"}, timeout=30)
    assert listed.json()["jobs"] == []  # no job row
    assert _balance(server) == balance  # nothing held
    r, _ = _post(server, "a.xml", b"<Invoice/>")
    assert r.status_code == 202, r.text[:300]  # the worker serves the next upload
    assert r.json()["creditsReserved"] == 1
    requests.delete(server.url + r.headers["Location"] + "?forget=true", timeout=30,
                    headers={"Authorization": f"Bearer {server.token}"})
    assert worker_pids(server) == pids


def test_an_mbox_of_from_lines_that_begin_no_message_stops_at_the_budget(server):
    """40 MB of "From 1" lines after one envelope: ~6 million lines of one message, each a Python step before the
    message is known to be too large."""
    body = b"From a@example.com Sun Mar  1 08:00:00 2026\nFrom: a@example.com\n\n" + b"From 1\n" * (6 << 20)
    _refused_in_time_and_nothing_left(server, "hostile.mbox", body, "16-25 s of CPU")


def test_a_zip_of_very_many_small_members_stops_at_the_budget(server):
    """100,000 members of a few bytes each (the job takes 200,000): each read and written on its own."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
        for i in range(100_000):
            z.writestr(zipfile.ZipInfo(f"m/{i}.xml"), b"<a/>")
    _refused_in_time_and_nothing_left(server, "many.zip", buffer.getvalue(), "7-13 s of CPU")


def test_a_zip_declaring_millions_of_members_is_refused_before_its_directory_is_read(server):
    """zipfile reads a whole directory in one go, no budget can stop it (~9 us a member; a 2 GiB ZIP can hold 27
    million): a ZIP64 archive of 70,000 members whose end record says 27 million is refused at once (400
    TOO_MANY_FILES), where its directory would be read first."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
        for i in range(70_000):
            z.writestr(zipfile.ZipInfo(f"{i}"), b"")
    body = bytearray(buffer.getvalue())
    end64 = body.rfind(b"PK\x06\x06")
    struct.pack_into("<QQ", body, end64 + 24, 27_000_000, 27_000_000)  # members on this disk, in all
    pids = worker_pids(server)
    r, took = _post(server, "huge.zip", bytes(body))
    assert r.status_code == 400 and r.json()["errors"][0]["code"] == "TOO_MANY_FILES", r.text[:300]
    assert took < 1.0 and worker_pids(server) == pids, took


def test_an_ordinary_mailbox_and_zip_are_taken_within_the_budget(server):
    """The check costs the work in time nothing: a mailbox of 200 messages and a ZIP of 2,000 members are taken."""
    messages = b"".join(b"From a@example.com Sun Mar  1 08:00:00 2026\nFrom: a@example.com\nSubject: %d\n\nHello\n\n"
                        % i for i in range(200))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(2_000):
            z.writestr(f"m/{i}.xml", b"<Invoice/>")
    for name, body, total in (("month.mbox", messages, 200), ("month.zip", buffer.getvalue(), 2_000)):
        started = time.monotonic()
        r, _ = _post(server, name, body, "validate")
        assert r.status_code == 202 and r.json()["total"] == total, (r.status_code, r.text[:300])
        print(f"{name}: 202 after {time.monotonic() - started:.1f} s")
        requests.delete(server.url + r.headers["Location"] + "?forget=true", timeout=30,
                        headers={"Authorization": f"Bearer {server.token}"})
