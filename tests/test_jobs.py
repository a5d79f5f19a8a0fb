"""Jobs (POST /v1/jobs) end to end: real PostgreSQL (a fresh schema for this module), two `pipeline serve` nodes and
two `pipeline worker` processes (Procrastinate); and the embedded default (SQLite, the service's own pool).

Every document exactly once (a result line per document, in archive order, counters and credits matching), a
worker killed with SIGKILL in the middle of a chunk (the job still completes, nothing counts twice, the credits
are exact), cancel, two keys that cannot see each other's jobs, a job submitted through node A fetched through
node B. Documents: the typical one-line XRechnung CII invoice of the official test suite (valid) and a copy with
BT-1 removed (invalid), so that valid and invalid counts are checked against the official rules' verdicts.
"""
from __future__ import annotations

import base64
import io
import json
import os
import signal
import subprocess
import sys
import time
import uuid
import zipfile
from pathlib import Path

import pytest
import requests

from pipeline.storage.jobs import Outcome
from pipeline.storage.postgres import PostgresStore
from pipeline.storage.sqlite import SqliteStore
from tests.test_platform_helpers import REPO, Server, cli, pg_url, serve_with_key, sqlite_platform

SHARED = REPO.parent / "shared"
TYPICAL = SHARED / "corpus/xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml"
COST = 1  # credits per validated document (EINVOICE_CREDIT_COSTS below)


def documents() -> tuple[bytes, bytes]:
    valid = TYPICAL.read_bytes()
    start = valid.index(b"<ram:ID>", valid.index(b"ExchangedDocument>"))
    end = valid.index(b"</ram:ID>", start) + len(b"</ram:ID>")
    return valid, valid[:start] + valid[end:]  # BT-1 (the invoice number) gone: BR-02 fails


def archive(n: int, invalid_every: int = 0) -> bytes:
    valid, invalid = documents()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(n):
            z.writestr(f"doc-{i:05d}.xml", invalid if invalid_every and i % invalid_every == 0 else valid)
    return buf.getvalue()


def submit(url: str, token: str, body: bytes, request: dict | None = None) -> requests.Response:
    return requests.post(f"{url}/v1/jobs", headers={"Authorization": f"Bearer {token}"}, timeout=120,
                         files={"request": (None, json.dumps(request or {"operation": "validate", "spec": "xrechnung"}),
                                            "application/json"),
                                "file": ("batch.zip", body, "application/zip")})


def get(url: str, token: str, path: str) -> requests.Response:
    return requests.get(url + path, headers={"Authorization": f"Bearer {token}"}, timeout=60)


def wait_for(url: str, token: str, job_id: str, until=lambda j: j["state"] not in ("queued", "running"),
             timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = get(url, token, f"/v1/jobs/{job_id}").json()
        if until(job):
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.3)


def results(url: str, token: str, job_id: str) -> list[dict]:
    r = get(url, token, f"/v1/jobs/{job_id}/results")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("application/jsonl")
    return [json.loads(line) for line in r.text.splitlines()]


def assert_exactly_once(job: dict, lines: list[dict], n: int) -> None:
    assert [line["name"] for line in lines] == [f"doc-{i:05d}.xml" for i in range(n)]
    assert job["total"] == job["done"] == n
    assert job["valid"] + job["invalid"] + job["errors"] == n
    assert sum(1 for line in lines if "report" in line and line["report"]["valid"]) == job["valid"]
    assert sum(1 for line in lines if "report" in line and not line["report"]["valid"]) == job["invalid"]


# -- PostgreSQL, Procrastinate, two nodes and two workers -----------------------------------------------------------

class Cluster:
    def __init__(self, tmp: Path):
        self.schema = "jobs_" + uuid.uuid4().hex[:12]
        self.url = pg_url(self.schema)
        self.store = PostgresStore(self.url)  # creates the schema, the job tables and Procrastinate's
        self.env = {"EINVOICE_DATABASE_URL": self.url, "EINVOICE_DATA_DIR": str(tmp / "data"),
                    "EINVOICE_JOBS_DIR": str(tmp / "shared-jobs"), "EINVOICE_REDIS_URL": "",
                    "EINVOICE_RATE_LIMIT": "100000/min", "EINVOICE_CREDIT_COSTS": f"/v1/invoice/xrechnung/validate={COST}",
                    "EINVOICE_JOB_CHUNK": "50", "EINVOICE_JOB_HEARTBEAT": "1", "EINVOICE_JOB_STALLED": "4",
                    "EINVOICE_JOB_RECORD_EVERY": "0.05"}
        self.logs = tmp
        self.workers: list[subprocess.Popen] = []
        self.nodes: list[Server] = []
        try:
            for n in "ab":
                self.nodes.append(Server(self.env, workers=1, log_path=tmp / f"node-{n}.log"))
            for _ in range(2):
                self.start_worker()
        except BaseException:
            self.stop()  # nothing started is left running
            raise

    def start_worker(self) -> subprocess.Popen:
        log = open(self.logs / f"worker-{len(self.workers)}.log", "wb")
        proc = subprocess.Popen([sys.executable, "-m", "pipeline", "worker"], cwd=REPO, stdout=log,
                                stderr=subprocess.STDOUT, env={**os.environ, **self.env})
        self.workers.append(proc)
        return proc

    def key(self, credits: int) -> tuple[str, str]:
        out = cli(self.env, "keys", "create", "--name", "jobs", "--env", "test", "--credits", str(credits))
        token = out.stdout.strip()
        assert token.startswith("einv_test_"), out
        return token.split("_", 2)[2].split(".")[0], token

    def charged(self, job_id: str) -> int:
        return sum(int(a) for a, in self.store._read("SELECT amount FROM ledger WHERE request_id = ? AND kind = 'charge'",
                                                     (job_id,)))

    def stop(self) -> None:
        for proc in self.workers:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.workers:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        for node in self.nodes:
            node.stop()
        self.store.drop_schema()
        self.store.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("jobs-pg"))
    yield c
    c.stop()


def test_a_2000_document_job_counts_every_document_once(cluster):
    a, b = (n.url for n in cluster.nodes)
    key_id, token = cluster.key(5000)
    n = 2000
    r = submit(a, token, archive(n, invalid_every=100))
    assert r.status_code == 202, r.text
    job_id = r.json()["id"]
    assert r.headers["Location"] == f"/v1/jobs/{job_id}"
    assert cluster.store.get_key(key_id).balance == 5000 - n * COST  # held from the submission on
    job = wait_for(b, token, job_id)  # submitted through node A, followed through node B
    assert job["state"] == "done", job
    lines = results(b, token, job_id)
    assert_exactly_once(job, lines, n)
    assert job["invalid"] == n // 100 and job["errors"] == 0
    assert job["creditsCharged"] == cluster.charged(job_id) == n * COST
    assert cluster.store.get_key(key_id).balance == 5000 - n * COST
    listed = get(a, token, "/v1/jobs").json()["jobs"]
    assert [j["id"] for j in listed] == [job_id]


def test_another_key_gets_404(cluster):
    a, b = (n.url for n in cluster.nodes)
    _, owner = cluster.key(100)
    _, other = cluster.key(100)
    job_id = submit(a, owner, archive(3)).json()["id"]
    for path in (f"/v1/jobs/{job_id}", f"/v1/jobs/{job_id}/results"):
        r = get(b, other, path)
        assert r.status_code == 404 and r.json()["errorCode"] == "JOB_NOT_FOUND"
    r = requests.delete(f"{b}/v1/jobs/{job_id}", headers={"Authorization": f"Bearer {other}"}, timeout=30)
    assert r.status_code == 404
    assert get(a, other, "/v1/jobs").json()["jobs"] == []
    assert wait_for(a, owner, job_id)["state"] == "done"


def test_cancel_keeps_what_is_done_and_gives_the_rest_back(cluster):
    a, b = (n.url for n in cluster.nodes)
    key_id, token = cluster.key(2000)
    n = 2000
    job_id = submit(a, token, archive(n)).json()["id"]
    wait_for(a, token, job_id, until=lambda j: j["done"] >= 50)
    r = requests.delete(f"{b}/v1/jobs/{job_id}", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert r.status_code == 200 and r.json()["state"] == "cancelled"
    time.sleep(3)  # chunks in progress finish; nothing they do after the cancel is taken
    job = get(a, token, f"/v1/jobs/{job_id}").json()
    assert job["state"] == "cancelled" and 50 <= job["done"] < n, job
    lines = results(a, token, job_id)
    assert len(lines) == n
    done = [line for line in lines if "report" in line]
    assert len(done) == job["done"] == job["valid"]
    assert {line["error"]["code"] for line in lines if "error" in line} == {"NOT_PROCESSED"}
    assert job["creditsCharged"] == cluster.charged(job_id) == job["done"] * COST
    assert cluster.store.get_key(key_id).balance == 2000 - job["done"] * COST  # the rest given back, once


def test_a_worker_killed_mid_chunk_loses_nothing_and_counts_nothing_twice(cluster):
    a, _ = (n.url for n in cluster.nodes)
    key_id, token = cluster.key(2000)
    n = 1200
    job_id = submit(a, token, archive(n)).json()["id"]
    wait_for(a, token, job_id, until=lambda j: j["done"] >= 100)
    doing = cluster.store._read("SELECT count(*) FROM procrastinate_jobs WHERE status = 'doing'")[0][0]
    assert doing >= 1
    # every worker is killed, so a chunk is surely caught in hand (one alone may be between chunks: then nothing
    # stalls and the periodic task has nothing to put back); a fresh worker finishes the job
    for victim in [p for p in cluster.workers if p.poll() is None]:
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
    cluster.start_worker()
    job = wait_for(a, token, job_id, timeout=300)
    assert job["state"] == "done", job
    assert_exactly_once(job, results(a, token, job_id), n)
    assert job["creditsCharged"] == cluster.charged(job_id) == n * COST
    assert cluster.store.get_key(key_id).balance == 2000 - n * COST
    logs = "".join(p.read_text(errors="replace") for p in cluster.logs.glob("worker-*.log"))
    assert "of a stalled worker goes back to the queue" in logs  # the periodic task put the chunk back
    cluster.start_worker()


def test_a_job_the_balance_does_not_cover_is_not_stored(cluster):
    a, _ = (n.url for n in cluster.nodes)
    key_id, token = cluster.key(5)
    r = submit(a, token, archive(6))
    assert r.status_code == 402 and r.json()["errorCode"] == "INSUFFICIENT_CREDITS"
    assert cluster.store.get_key(key_id).balance == 5
    orphans = cluster.store._read("SELECT count(*) FROM procrastinate_jobs p WHERE task_name = 'jobs:run_chunk' "
                                  "AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = p.args->>'job_id')")[0][0]
    assert orphans == 0  # a chunk exists only with its job: they are written in one transaction
    assert get(a, token, "/v1/jobs").json()["jobs"] == []


def test_a_bad_request_part_is_a_400_with_the_field(cluster):
    a, _ = (n.url for n in cluster.nodes)
    _, token = cluster.key(5)
    r = submit(a, token, archive(1), {"operation": "convert"})
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "request.to"
    r = submit(a, token, archive(1), {"operation": "shred"})
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "request.operation"


# -- a retried recording, on both stores ---------------------------------------------------------------------------

@pytest.fixture(params=["sqlite", "postgres"])
def job_store(request, tmp_path):
    """A fresh store of either backend (PostgreSQL: a schema of its own, dropped after)."""
    store = SqliteStore(tmp_path / "s.sqlite3") if request.param == "sqlite" else \
        PostgresStore(pg_url("jobs_" + uuid.uuid4().hex[:12]))
    yield store
    if isinstance(store, PostgresStore):
        store.drop_schema()
    store.close()


def test_an_indeterminate_document_is_counted_as_invalid_and_indeterminate_and_charged(job_store):
    """Issue 37: a report that could not judge its document is not valid (`invalid` counts it, failing closed) and
    says so (`indeterminate`); it got its report, so it is charged like any."""
    store = job_store
    store.create_key("k1", "t", "test", "x", 10, None)
    store.create_job("j1", "k1", "validate", "{}", ["a", "b"], {}, {0: (0, 1), 1: (1, 1)}, 2)
    assert store.record_results("j1", [Outcome(0, "indeterminate", '{"name": "a"}'),
                                       Outcome(1, "valid", '{"name": "b"}')]) == 2
    job = store.get_job("j1")
    assert (job.state, job.valid, job.invalid, job.indeterminate, job.charged) == ("done", 1, 1, 1, 4)
    assert job.to_dict()["indeterminate"] == 1


def test_a_job_runs_from_its_first_document_not_from_its_first_result(job_store):
    """state `running` and startedAt when a worker begins (a small job was `queued` to its end, and its
    startedAt equalled its finishedAt); marking it twice keeps the first start."""
    store = job_store
    store.create_key("k1", "t", "test", "x", 10, None)
    store.create_job("j1", "k1", "validate", "{}", ["a"], {}, {0: (0, 1)}, 0)
    assert store.get_job("j1").state == "queued" and store.get_job("j1").started_at is None
    store.mark_running("j1")
    started = store.get_job("j1").started_at
    assert store.get_job("j1").state == "running" and started is not None
    time.sleep(0.01)
    store.mark_running("j1")
    assert store.record_results("j1", [Outcome(0, "valid", '{"name": "a"}')]) == 1
    job = store.get_job("j1")
    assert (job.state, job.started_at) == ("done", started) and job.finished_at > started


def test_recording_a_chunk_twice_counts_it_once(job_store):
    store = job_store
    store.create_key("k1", "t", "test", "x", 10, None)
    store.create_job("j1", "k1", "validate", "{}", ["a", "b", "c"], {}, {0: (0, 1), 1: (1, 1), 2: (2, 1)}, 2)
    assert store.get_key("k1").balance == 4
    first = [Outcome(0, "valid", '{"name": "a"}'), Outcome(1, "error", '{"name": "b"}')]
    assert store.record_results("j1", first) == 2
    assert store.record_results("j1", first + [Outcome(2, "invalid", '{"name": "c"}')]) == 1
    job = store.get_job("j1")
    assert (job.state, job.done, job.valid, job.invalid, job.errors, job.charged) == ("done", 3, 1, 1, 1, 4)
    assert store.get_key("k1").balance == 6  # 6 held, 4 charged (a and c), 2 given back (b: an error)
    assert store.record_results("j1", first) == 0 and store.get_key("k1").balance == 6
    assert not store.cancel_job("j1", "k1").active and store.get_key("k1").balance == 6


# -- the embedded default: SQLite, the service's own pool -----------------------------------------------------------

def test_the_embedded_default_runs_jobs_without_postgresql(tmp_path):
    server, env, token = serve_with_key(tmp_path, "jobs", 1000, workers=2, warm=False)
    try:
        n = 120
        r = submit(server.url, token, archive(n, invalid_every=10))
        assert r.status_code == 202, r.text
        job = wait_for(server.url, token, r.json()["id"])
        assert job["state"] == "done"
        assert_exactly_once(job, results(server.url, token, job["id"]), n)
        assert job["invalid"] == n // 10
        z = zipfile.ZipFile(io.BytesIO(get(server.url, token, f"/v1/jobs/{job['id']}/results?format=zip").content))
        assert len(z.namelist()) == n
        job_id = submit(server.url, token, archive(2000)).json()["id"]
        r = requests.delete(f"{server.url}/v1/jobs/{job_id}", headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert r.json()["state"] == "cancelled"
        assert not (tmp_path / "jobs" / job_id).exists()  # the uploaded documents go with the job
    finally:
        server.stop()


def test_the_command_line_submits_a_folder_and_follows_it(tmp_path):
    server, env, token = serve_with_key(tmp_path / "data", "jobs-cli", 100, workers=1, warm=False)
    try:
        folder = tmp_path / "inbox"
        (folder / "march").mkdir(parents=True)
        valid, invalid = documents()
        (folder / "a.xml").write_bytes(valid)
        (folder / "march" / "b.xml").write_bytes(invalid)
        # a name from a Windows share, no UTF-8 on disk: zipped and named as it reads
        Path(os.fsdecode(bytes(folder) + "/c-für.xml".encode("cp1252"))).write_bytes(valid)
        env = {**env, "EINVOICE_URL": server.url, "EINVOICE_API_KEY": token}
        run = cli(env, "jobs", "submit", str(folder), "--wait")
        assert run.returncode == 1, run.stderr  # one document invalid
        summary = dict(line.split(None, 1) for line in run.stdout.splitlines() if line.strip() and " " in line)
        assert summary["state"].strip() == "done" and summary["valid"].strip() == "2"
        job_id = summary["job"].strip()
        lines = [json.loads(x) for x in cli(env, "jobs", "results", job_id).stdout.splitlines()]
        assert [(x["name"], x["report"]["valid"]) for x in lines] == [("a.xml", True), ("c-für.xml", True),
                                                                       ("march/b.xml", False)]
        assert json.loads(cli(env, "jobs", "status", job_id).stdout)["done"] == 3
        listed = cli(env, "jobs", "list").stdout.splitlines()
        assert listed[0].split()[4:8] == ["valid", "invalid", "indeterminate", "errors"], listed
        assert listed[1].split()[:8] == [job_id, "done", "validate", "3", "2", "1", "0", "0"], listed
        missing = cli(env, "jobs", "status", "job_unknown")
        assert missing.returncode == 2 and "404" in missing.stderr
        refused = cli({**env, "EINVOICE_API_KEY": "einv_test_nokey.nosecret"}, "jobs", "list")
        assert refused.returncode == 2 and refused.stdout == "", refused.stdout   # no table header over an error
        assert cli(env, "jobs", "list", "--state", "running,queued").stdout.splitlines()[1:] == []
        deleted = cli(env, "jobs", "delete", job_id)
        assert deleted.returncode == 0 and "deleted" in deleted.stdout, deleted.stderr
        assert cli(env, "jobs", "status", job_id).returncode == 2 and cli(env, "jobs", "list").stdout.count("\n") == 1
    finally:
        server.stop()


def test_convert_parse_and_html_jobs_answer_what_their_endpoints_answer(tmp_path):
    """A convert job's documents pass the official rules on their own; a validate job's HTML reports name the
    failed rule; a parse job's invoices are the endpoint's."""
    from pipeline.flows.parse import parse_report
    from pipeline.flows.validate_xml import validate_xml
    from pipeline.invoice.request_json import dump_request

    server, env, token = serve_with_key(tmp_path, "jobs-convert", 10, workers=1, warm=False)
    try:
        valid, _ = documents()
        r = submit(server.url, token, archive(2), {"operation": "convert", "to": "UBL"})
        assert r.status_code == 202, r.text
        job = wait_for(server.url, token, r.json()["id"])
        assert (job["state"], job["valid"], job["creditsCharged"]) == ("done", 2, 2)  # convert costs 1 each
        z = zipfile.ZipFile(io.BytesIO(get(server.url, token, f"/v1/jobs/{job['id']}/results?format=zip").content))
        assert z.namelist() == ["doc-00000.xml", "doc-00001.xml"]
        for name in z.namelist():
            report = validate_xml(z.read(name), "xrechnung")
            assert report.valid and report.syntax == "UBL", report.to_dict()
        r = submit(server.url, token, archive(2, invalid_every=2), {"operation": "validate", "html": True})
        job = wait_for(server.url, token, r.json()["id"])
        z = zipfile.ZipFile(io.BytesIO(get(server.url, token, f"/v1/jobs/{job['id']}/results?format=zip").content))
        assert z.namelist() == ["doc-00000.xml.html", "doc-00001.xml.html"]
        assert "BR-02" in z.read("doc-00000.xml.html").decode() and b"<html" in z.read("doc-00001.xml.html")
        r = submit(server.url, token, archive(1), {"operation": "parse"})
        job = wait_for(server.url, token, r.json()["id"])
        line, = results(server.url, token, job["id"])
        assert line["invoice"] == json.loads(dump_request(parse_report(valid)))
    finally:
        server.stop()


def test_an_upload_over_the_job_limit_is_413_and_leaves_nothing(tmp_path, monkeypatch):
    from pipeline.settings import get_settings
    from tests.test_platform_helpers import Platform

    monkeypatch.setenv("EINVOICE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("EINVOICE_MAX_JOB_BYTES", "60000")
    get_settings.cache_clear()
    try:
        platform = Platform(SqliteStore(tmp_path / "s.sqlite3"))
        _, token = platform.key(10)
        body = archive(60)  # ~120 KB of ZIP
        boundary = "b0undary"
        data = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.zip\"\r\n\r\n".encode()
                + body + f"\r\n--{boundary}--\r\n".encode())
        # a Content-Length within the framing slack: the bound holds while the part streams to disk
        r = platform.client.simulate_post("/v1/jobs", body=data, headers={
            "Authorization": f"Bearer {token}", "Content-Type": f"multipart/form-data; boundary={boundary}"})
        assert r.status_code == 413 and r.json["errors"][0]["code"] == "JOB_TOO_LARGE"
        assert list((tmp_path / "jobs").iterdir()) == []
        small = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.zip\"\r\n\r\n".encode()
                 + archive(2) + f"\r\n--{boundary}--\r\n".encode())
        r = platform.client.simulate_post("/v1/jobs", body=small, headers={
            "Authorization": f"Bearer {token}", "Content-Type": f"multipart/form-data; boundary={boundary}"})
        assert r.status_code == 202 and r.json["total"] == 2
    finally:
        get_settings.cache_clear()


@pytest.fixture
def in_process(tmp_path, monkeypatch):
    """The app in this process with a key (SQLite under tmp_path): (client, its Authorization header)."""
    with sqlite_platform(tmp_path, monkeypatch) as platform:
        _, token = platform.key(100)
        yield platform.client, {"Authorization": f"Bearer {token}"}


def _posted(in_process, body: bytes, ctype: str) -> dict:
    """POST /v1/jobs in this process: the 202's job, cancelled again."""
    client, auth = in_process
    r = client.simulate_post("/v1/jobs", body=body, headers={**auth, "Content-Type": ctype})
    assert r.status_code == 202, r.text
    client.simulate_delete(f"/v1/jobs/{r.json['id']}", headers=auth)
    return r.json


def test_a_folder_of_300_file_parts_is_one_job(in_process):
    """The page's folder upload sends a `file` part per document: 300 of them are one job (before, Falcon's
    multipart parser stopped at 64 parts: 400 "maximum number of form body parts exceeded")."""
    from tests.test_validate_batch import form

    valid, _ = documents()
    body, ctype = form([(f"doc-{n}.xml", valid) for n in range(300)], '{"operation": "validate"}')
    assert _posted(in_process, body, ctype)["total"] == 300


def test_a_file_name_in_a_windows_code_page_is_a_job_not_a_500(in_process):
    """A CP1252 file name in the part's header (Falcon decodes it as strict UTF-8) made the upload a 500."""
    from tests.test_validate_endpoints import with_file_name

    body, ctype = with_file_name("Rechnung für März.xml".encode("cp1252"), documents()[0])
    assert _posted(in_process, body, ctype)["total"] == 1


def test_the_job_list_comes_a_page_at_a_time_newest_first(in_process):
    """GET /v1/jobs stopped at the newest 100 with no way to the older ones; now `limit` and `next` page through
    all of them, each job once."""
    from tests.test_validate_endpoints import with_file_name

    client, auth = in_process
    posted = [_posted(in_process, *with_file_name(f"{n}.xml".encode(), documents()[0]))["id"] for n in range(7)]
    seen, path = [], "/v1/jobs?limit=3"
    while path:
        page = client.simulate_get(path.split("?")[0], query_string=path.partition("?")[2], headers=auth).json
        assert len(page["jobs"]) <= 3
        seen += [j["id"] for j in page["jobs"]]
        path = page.get("next")
    assert seen == posted[::-1]  # newest first, each once
    assert [j["id"] for j in client.simulate_get("/v1/jobs", headers=auth).json["jobs"]] == posted[::-1]
    for query, field in (("limit=0", "limit"), ("limit=1001", "limit"), ("limit=x", "limit"),
                         ("before=job_unknown", "before")):
        r = client.simulate_get("/v1/jobs", query_string=query, headers=auth)
        assert r.status_code == 400 and r.json["errors"][0]["field"] == field, r.text



def test_the_job_list_takes_only_the_states_asked_for(in_process):
    """`?state=` (one or several, comma-separated) lists those jobs only, page after page (`next` keeps it)."""
    from tests.test_validate_batch import form

    client, auth = in_process
    posted = [_posted(in_process, *form([("a.xml", documents()[0])]))["id"] for _ in range(3)]
    # (the embedded runner may end a one-document job before its DELETE: that one is done, not cancelled)
    state = {i: client.simulate_get(f"/v1/jobs/{i}", headers=auth).json["state"] for i in posted}
    cancelled = [i for i in posted if state[i] == "cancelled"]
    assert cancelled
    body, ctype = form([("b.xml", documents()[0])])
    kept = client.simulate_post("/v1/jobs", body=body, headers={**auth, "Content-Type": ctype}).json["id"]
    seen, path = [], "/v1/jobs?limit=1&state=cancelled"
    while path:
        page = client.simulate_get(path.split("?")[0], query_string=path.partition("?")[2], headers=auth).json
        assert [j["state"] for j in page["jobs"]] == ["cancelled"]
        seen += [j["id"] for j in page["jobs"]]
        path = page.get("next")
    assert seen == cancelled[::-1]
    others = client.simulate_get("/v1/jobs", query_string="state=queued,running,done,failed", headers=auth).json
    assert [j["id"] for j in others["jobs"]] == [kept] + [i for i in posted[::-1] if i not in cancelled]
    r = client.simulate_get("/v1/jobs", query_string="state=done,finished", headers=auth)
    assert r.status_code == 400 and r.json["errors"][0]["field"] == "state", r.text



def test_a_job_is_deleted_with_its_results_on_request_and_after_the_retention(in_process, tmp_path, monkeypatch):
    """Invoices are personal and business data: `DELETE /v1/jobs/{id}?forget=true` deletes a job and its results
    (204, then 404), and a job that ended more than EINVOICE_JOB_RETENTION_DAYS ago goes by itself; an active job
    and a recent one stay."""
    from pipeline.jobs import retention
    from pipeline.settings import get_settings
    from tests.test_validate_batch import form

    client, auth = in_process
    body, ctype = form([("a.xml", documents()[0]), ("b.xml", documents()[1])])
    gone, old, recent = (_posted(in_process, body, ctype)["id"] for _ in range(3))
    r = client.simulate_delete(f"/v1/jobs/{gone}", query_string="forget=true", headers=auth)
    assert r.status_code == 204 and not r.content, r.text
    for path in (f"/v1/jobs/{gone}", f"/v1/jobs/{gone}/results"):
        assert client.simulate_get(path, headers=auth).status_code == 404
    store = SqliteStore(tmp_path / "s.sqlite3")  # the service's own store
    monkeypatch.setenv("EINVOICE_JOB_RETENTION_DAYS", "30")
    get_settings.cache_clear()
    with store._tx() as cur:  # `old` ended 31 days ago, and is taken for running: never deleted while it runs
        cur.execute("UPDATE jobs SET finished_at = finished_at - 31 * 86400, state = 'running' WHERE id = ?", (old,))
    assert retention.forget_expired(store) == 0 and store.forget_job(old) is False
    with store._tx() as cur:
        cur.execute("UPDATE jobs SET state = 'cancelled' WHERE id = ?", (old,))
    assert retention.forget_expired(store) == 1
    assert store.get_job(old) is None and list(store.result_lines(old)) == []
    assert store.get_job(recent) is not None and len(list(store.result_lines(recent))) == 2
    monkeypatch.setenv("EINVOICE_JOB_RETENTION_DAYS", "0")  # 0: every job is kept
    get_settings.cache_clear()
    with store._tx() as cur:
        cur.execute("UPDATE jobs SET finished_at = finished_at - 365 * 86400 WHERE id = ?", (recent,))
    assert retention.forget_expired(store) == 0 and store.get_job(recent) is not None
    r = client.simulate_delete(f"/v1/jobs/{recent}", query_string="forget=perhaps", headers=auth)
    assert r.status_code == 400 and store.get_job(recent) is not None, r.text


MIXED_PDF = SHARED / "corpus/mustangproject/validator/validXRechnung.pdf"
PEPPOL = SHARED / "corpus/peppol/2026.5/billing/base-example.xml"
CONVERTIBLE_PDF = SHARED / "corpus/mustangproject/validator/103767-Invoice-2026-03-24-1.pdf"  # valid, EN 16931
FRENCH = REPO / "fixtures/golden/fr-b2b-goods.fr-ctc.cii.xml"


def _mixed_folder(folder: Path) -> Path:
    """A PDF, an XRechnung CII, a Peppol UBL and a French CII without its PMD note (BR-FR-05 on the French rules)."""
    folder.mkdir(parents=True)
    (folder / "a.pdf").write_bytes(MIXED_PDF.read_bytes())
    (folder / "b.xml").write_bytes(documents()[0])
    (folder / "c-peppol.xml").write_bytes(PEPPOL.read_bytes())
    (folder / "d-france.xml").write_bytes(FRENCH.read_bytes().replace(b"<ram:SubjectCode>PMD</ram:SubjectCode>",
                                                                      b"<ram:SubjectCode>AAI</ram:SubjectCode>"))
    return folder


def _zip_of(folder: Path) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for f in sorted(folder.iterdir()):
            z.writestr(f.name, f.read_bytes())
    return buf.getvalue()


def test_a_job_routes_each_document_by_what_it_is_as_the_command_line_does(tmp_path):
    """A mixed folder as a validate job, with the rules detected ("auto", the default) and with XRechnung named:
    the PDF is checked as a ZUGFeRD PDF (not read as broken XML), the Peppol invoice on the Peppol rules and the
    French one on the French rules (BR-FR-05), each report the one `pipeline validate` gives on the same folder.
    Peppol and fr-ctc are jobs' specs too."""
    server, env, token = serve_with_key(tmp_path / "data", "jobs-route", 100, workers=1, warm=False)
    try:
        folder = _mixed_folder(tmp_path / "mixed")
        cli_run = cli(env, "validate", str(folder), "--json", "--jobs", "1")
        expected = {r["name"]: r["report"] for r in json.loads(cli_run.stdout)["results"]}
        assert expected["d-france.xml"]["valid"] is False and "BR-FR-05" in json.dumps(expected["d-france.xml"])
        assert expected["c-peppol.xml"]["valid"] is True
        assert not any(i["code"].startswith("XML-") for i in expected["a.pdf"]["issues"])
        for request in ({"operation": "validate"}, {"operation": "validate", "spec": "auto"}):
            r = submit(server.url, token, _zip_of(folder), request)
            assert r.status_code == 202, r.text
            job = wait_for(server.url, token, r.json()["id"])
            got = {line["name"]: line["report"] for line in results(server.url, token, job["id"])}
            assert {n: (g["valid"], [i["code"] for i in g["issues"]]) for n, g in got.items()} == \
                   {n: (e["valid"], [i["code"] for i in e["issues"]]) for n, e in expected.items()}
        # XRechnung named: the PDF still goes to the PDF checks
        r = submit(server.url, token, _zip_of(folder), {"operation": "validate", "spec": "xrechnung"})
        job = wait_for(server.url, token, r.json()["id"])
        pdf, = [line for line in results(server.url, token, job["id"]) if line["name"] == "a.pdf"]
        assert [i["code"] for i in pdf["report"]["issues"]] == [i["code"] for i in expected["a.pdf"]["issues"]]
        for spec in ("peppol", "fr-ctc"):
            r = submit(server.url, token, _zip_of(folder), {"operation": "validate", "spec": spec})
            assert r.status_code == 202, r.text
            wait_for(server.url, token, r.json()["id"])
    finally:
        server.stop()


def test_converted_results_are_named_after_their_source_and_never_collide(tmp_path):
    """invoice.pdf and invoice.xml converted to UBL: invoice.pdf.xml and invoice.xml (before, the PDF's result took
    invoice.xml and the real one became 3-invoice.xml)."""
    server, env, token = serve_with_key(tmp_path / "data", "jobs-names", 100, workers=1, warm=False)
    try:
        folder = tmp_path / "two"
        folder.mkdir()
        (folder / "invoice.pdf").write_bytes(CONVERTIBLE_PDF.read_bytes())
        (folder / "invoice.xml").write_bytes(documents()[0])
        r = submit(server.url, token, _zip_of(folder), {"operation": "convert", "to": "UBL"})
        job = wait_for(server.url, token, r.json()["id"])
        assert (job["state"], job["valid"]) == ("done", 2), job
        z = zipfile.ZipFile(io.BytesIO(get(server.url, token, f"/v1/jobs/{job['id']}/results?format=zip").content))
        assert z.namelist() == ["invoice.pdf.xml", "invoice.xml"]
        lines = {line["name"]: base64.b64decode(line["document"]) for line in results(server.url, token, job["id"])}
        assert z.read("invoice.pdf.xml") == lines["invoice.pdf"] and z.read("invoice.xml") == lines["invoice.xml"]
    finally:
        server.stop()


LOSSY = SHARED / "realworld/corpus/XML-Rechnung/CII/XRECHNUNG_Elektron.cii.xml"  # a department beside a person name


def test_a_convert_job_takes_what_the_convert_endpoint_takes(tmp_path):
    """allowLoss, profile and metadataLanguage reach each document of a convert job (before, a job ignored them:
    the lossy invoice stayed refused whatever the request said, and a ZUGFeRD job could not choose its profile)."""
    from pipeline.flows.validate_pdf import validate_pdf
    from pipeline.flows.validate_xml import validate_xml
    from tests.test_validate_batch import zipped

    server, env, token = serve_with_key(tmp_path, "jobs-convert-options", 10, workers=1, warm=False)
    try:
        body = zipped([("lossy.xml", LOSSY.read_bytes())])
        refused = wait_for(server.url, token, submit(server.url, token, body, {"operation": "convert", "to": "UBL"})
                           .json()["id"])
        line, = results(server.url, token, refused["id"])
        assert line["error"]["code"] == "CONVERSION_LOSS", line
        r = submit(server.url, token, body, {"operation": "convert", "to": "ubl", "allowLoss": True})
        assert r.status_code == 202, r.text
        line, = results(server.url, token, wait_for(server.url, token, r.json()["id"])["id"])
        assert any("ram:DepartmentName" in lost["xpath"] for lost in line["conversion"]["lost"]), line["conversion"]
        report = validate_xml(base64.b64decode(line["document"]), "xrechnung")  # the official rules, on their own
        assert report.valid and report.syntax == "UBL", report.to_dict()

        r = submit(server.url, token, archive(1), {"operation": "convert", "to": "ZUGFERD", "profile": "basic",
                                                   "metadataLanguage": "de", "allowLoss": True})
        assert r.status_code == 202, r.text
        line, = results(server.url, token, wait_for(server.url, token, r.json()["id"])["id"])
        assert line["conversion"]["lost"], line   # what BASIC has no place for, said
        report = validate_pdf(base64.b64decode(line["document"]))
        assert report.valid and "BASIC" in report.version, report.to_dict()
    finally:
        server.stop()


@pytest.mark.parametrize("request_part, field", [
    ({"operation": "validate", "to": "UBL"}, "request.to"),  # another operation's option
    ({"operation": "convert", "to": "UBL", "strict": True}, "request.strict"),
    ({"operation": "parse", "spec": "xrechnung"}, "request.spec"),
    ({"operation": "convert", "to": "UBL", "allowloss": True}, "request.allowloss"),  # misspelt
])
def test_a_key_the_operation_does_not_take_is_refused_not_ignored(in_process, request_part, field):
    from tests.test_validate_batch import form

    client, auth = in_process
    body, ctype = form([("a.xml", documents()[0])], json.dumps(request_part))
    r = client.simulate_post("/v1/jobs", body=body, headers={**auth, "Content-Type": ctype})
    assert r.status_code == 400, r.text
    assert [(e["code"], e["field"]) for e in r.json["errors"]] == [("UNKNOWN_FIELD", field)]


def test_a_misspelt_part_or_a_compressed_upload_is_refused_not_ignored(in_process):
    """As on the other uploads: a 'requests' part's options must not be lost; a gzip body is a 415."""
    from tests.test_validate_batch import form

    client, auth = in_process
    body, ctype = form([("a.xml", documents()[0])], None)
    boundary = ctype.split("=", 1)[1]
    body = body.replace(f"--{boundary}--".encode(), (
        f'--{boundary}\r\nContent-Disposition: form-data; name="requests"\r\n\r\n{{"operation": "parse"}}\r\n'
        f"--{boundary}--").encode())
    r = client.simulate_post("/v1/jobs", body=body, headers={**auth, "Content-Type": ctype})
    assert r.status_code == 400 and r.json["errors"][0]["code"] == "UNKNOWN_PART", r.text
    r = client.simulate_post("/v1/jobs", body=body, headers={**auth, "Content-Type": ctype, "Content-Encoding": "gzip"})
    assert r.status_code == 415, r.text


def test_the_job_request_documented_is_the_one_taken(in_process):
    """The OpenAPI document's job request lists exactly the keys the operations take."""
    from pipeline.flows.job_document import FIELDS

    client, _ = in_process
    schema = client.simulate_get("/v1/openapi.json").json["paths"]["/v1/jobs"]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    documented = schema["properties"]["request"]["properties"]
    assert set(documented) == {key for keys in FIELDS.values() for key in keys}


def _job_lines(in_process, body: bytes, ctype: str) -> list[dict]:
    """POST /v1/jobs in this process and the result lines once it is done."""
    client, auth = in_process
    r = client.simulate_post("/v1/jobs", body=body, headers={**auth, "Content-Type": ctype})
    assert r.status_code == 202, r.text
    for _ in range(600):
        job = client.simulate_get(f"/v1/jobs/{r.json['id']}", headers=auth).json
        if job["state"] not in ("queued", "running"):
            break
        time.sleep(0.2)
    assert job["state"] == "done", job
    return [json.loads(x) for x in client.simulate_get(f"/v1/jobs/{job['id']}/results", headers=auth).text.split("\n")
            if x]


def test_a_file_name_in_html_s_form_encoding_is_read_back(in_process, tmp_path):
    """Browsers (and `pipeline jobs submit`) send `"`, CR and LF of a file name as %22, %0D, %0A inside the quoted
    filename; the job and the batch named the document `a%22b.xml`. Only these three are taken back: a `%` is sent
    as it is, so `100%25.xml` stays so, and an RFC 5987 filename* is decoded once, by its own rule."""
    from pipeline.cli.jobs import _body
    from tests.test_validate_batch import form

    valid, _ = documents()
    for name in ('Rechnung "März".xml', "line\nbreak.xml"):
        (tmp_path / "f.xml").write_bytes(valid)
        body, boundary = _body({"operation": "validate"}, [(name, tmp_path / "f.xml")], tmp_path)
        assert b"%22" in body.read_bytes() or b"%0A" in body.read_bytes()
        lines = _job_lines(in_process, body.read_bytes(), f"multipart/form-data; boundary={boundary}")
        assert [line["name"] for line in lines] == [name]
    body, ctype = form([("a%22b%0d%0A.xml", valid), ("100%25.xml", valid), ("x%2522.xml", valid)])
    star = body.replace(b'filename="x%2522.xml"', b"filename*=UTF-8''x%2522.xml")
    lines = _job_lines(in_process, star, ctype)
    assert [line["name"] for line in lines] == ['a"b\r\n.xml', "100%25.xml", "x%22.xml"]
    batch = in_process[0].simulate_post("/v1/invoice/xrechnung/validate/batch", body=star,
                                        headers={**in_process[1], "Content-Type": ctype})
    assert [e["name"] for e in batch.json["results"]] == ['a"b\r\n.xml', "100%25.xml", "x%22.xml"], batch.text


def test_an_unreadable_or_empty_zip_among_a_job_s_files_is_an_entry(in_process):
    """One damaged or 0-byte ZIP in a folder of files refused the whole job (400 INVALID_ARCHIVE), and an empty
    ZIP was "The job has no documents: send one or more 'file' parts". Now each is an entry of its own (not
    charged); a job of one unreadable ZIP alone is still the 400 batch validation answers."""
    from tests.test_validate_batch import form, zipped

    valid, _ = documents()
    body, ctype = form([("a.xml", valid), ("cut.zip", zipped([("b.xml", valid)])[:40]), ("zero.zip", b""),
                        ("empty.zip", zipped([]))], '{"operation": "validate"}')
    lines = _job_lines(in_process, body, ctype)
    assert [(line["name"], line.get("error", {}).get("code")) for line in lines] == [
        ("a.xml", None), ("cut.zip", "INVALID_ARCHIVE"), ("zero.zip", "INVALID_ARCHIVE"),
        ("empty.zip", "EMPTY_ARCHIVE")]
    assert lines[0]["report"]["valid"] and "not a readable ZIP archive" in lines[2]["error"]["message"]
    client, auth = in_process
    body, ctype = form([("zero.zip", b"")], '{"operation": "validate"}')
    r = client.simulate_post("/v1/jobs", body=body, headers={**auth, "Content-Type": ctype})
    assert r.status_code == 400 and r.json["errorCode"] == "INVALID_ARCHIVE", r.text
    body, ctype = form([("empty.zip", zipped([]))], '{"operation": "validate"}')
    assert [line["error"]["code"] for line in _job_lines(in_process, body, ctype)] == ["EMPTY_ARCHIVE"]
