"""Results while a job runs: each document's entry is numbered as it gets its result (`seq`, schema v7), and
GET /v1/jobs/{id}/results?after=n gives the entries after the n-th, with X-Results-Next, the n to ask next; an
ended job's documents never worked on are numbered on in archive order. `pipeline jobs results --after / --follow`.

Store level on both backends (the numbering, the upgrade of rows recorded before v7), the endpoint in this process
on jobs whose results the test records, and the command line following a real job on `pipeline serve`.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import uuid
import zipfile

import pytest

from pipeline.storage.jobs import Outcome
from pipeline.storage.postgres import PostgresStore
from pipeline.storage.sqlite import SqliteStore
from tests.test_jobs import archive, job_store, submit, wait_for  # noqa: F401 - job_store: a fixture
from tests.test_platform_helpers import REPO, pg_url, serve_with_key, sqlite_platform

NAMES = ["a.xml", "b.xml", "c.xml", "d.xml", "e.xml"]
SPANS = {i: (i, 1) for i in range(5)}


def line(name: str) -> str:
    return json.dumps({"name": name, "report": {"valid": True}})


def _job(store, refused: dict | None = None, job_id: str = "j1", key_id: str = "k1") -> None:
    store.create_job(job_id, key_id, "validate", "{}", NAMES, refused or {}, SPANS, 0)


def _since(store, after: int, upto: int, job_id: str = "j1") -> list[int]:
    return [row[0] for row in store.results_since(job_id, after, upto, batch=2)]


def test_results_are_numbered_in_the_order_they_came(job_store):
    store = job_store
    store.create_key("k1", "t", "test", "x", 10, None)
    _job(store, refused={2: json.dumps({"name": "c.xml", "error": {"code": "X"}})})
    assert _since(store, 0, 1) == [2]  # a refused document's entry is the job's first result
    assert store.record_results("j1", [Outcome(4, "valid", line("e.xml")), Outcome(0, "valid", line("a.xml"))]) == 2
    assert _since(store, 0, 3) == [2, 4, 0]
    assert _since(store, 1, 3) == [4, 0] and _since(store, 2, 3) == [0] and _since(store, 3, 3) == []
    # recorded again (a retried chunk) with one more: numbered once, the new one after
    assert store.record_results("j1", [Outcome(0, "valid", line("a.xml")), Outcome(3, "valid", line("d.xml"))]) == 1
    assert _since(store, 0, 4) == [2, 4, 0, 3] and store.get_job("j1").done == 4
    assert _since(store, 0, 3) == [2, 4, 0]  # never past `upto`, the last result the reader saw counted


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_upgrade_numbers_the_results_recorded_before_in_archive_order(tmp_path, backend):
    def before_v7(cls):
        return type(cls.__name__ + "V6", (cls,), {"migrations": cls.migrations[:6]})

    if backend == "sqlite":
        where = tmp_path / "db.sqlite3"
        old, new = before_v7(SqliteStore)(where), lambda: SqliteStore(where)
    else:
        url = pg_url("jobs_v7_" + uuid.uuid4().hex[:12])
        old, new = before_v7(PostgresStore)(url), lambda: PostgresStore(url)
    try:
        assert old.schema_version() == 6
        old.create_key("k1", "t", "test", "x", 10, None)
        with old._tx() as cur:  # a job as v6 wrote it: no seq column yet
            cur.execute(old._sql("INSERT INTO jobs (id, key_id, state, operation, options, total, done, cost, "
                                 "reserved, created_at) VALUES ('j1', 'k1', 'running', 'validate', '{}', 5, 3, 0, "
                                 "0, 1)"))
            cur.executemany(old._sql("INSERT INTO job_documents (job_id, idx, name, pos, size, outcome, result) "
                                     "VALUES ('j1', ?, ?, ?, 1, ?, ?)"),
                            [(i, n, i, "valid" if i in (1, 3, 4) else None, line(n) if i in (1, 3, 4) else None)
                             for i, n in enumerate(NAMES)])
        store = new()
        assert store.schema_version() == len(store.migrations)
        assert _since(store, 0, 3) == [1, 3, 4]
        assert store.record_results("j1", [Outcome(0, "valid", line("a.xml"))]) == 1
        assert _since(store, 3, 4) == [0]
    finally:
        if backend == "postgres":
            old.drop_schema()


@pytest.fixture
def app(tmp_path, monkeypatch):
    """The app in this process on a SQLite store: (client, store, the key's Authorization header, its key id)."""
    with sqlite_platform(tmp_path, monkeypatch) as platform:
        key_id, token = platform.key(100)
        yield platform.client, platform.store, {"Authorization": f"Bearer {token}"}, key_id


def _lines(text: str) -> list[str]:
    return text.split("\n")[:-1]  # (not splitlines: a report's text may hold a Unicode line separator)


def _get(client, auth, query: str):
    r = client.simulate_get("/v1/jobs/j1/results", query_string=query, headers=auth)
    return r, [json.loads(x)["name"] for x in r.text.splitlines()] if r.status_code == 200 else None


def test_after_gives_the_entries_that_came_since_and_the_next_to_ask(app):
    client, store, auth, key_id = app
    _job(store, refused={2: json.dumps({"name": "c.xml", "error": {"code": "X"}})}, key_id=key_id)
    store.record_results("j1", [Outcome(4, "valid", line("e.xml")), Outcome(0, "valid", line("a.xml"))])
    r, names = _get(client, auth, "after=0")
    assert names == ["c.xml", "e.xml", "a.xml"]
    assert r.headers["X-Results-Next"] == "3" and r.headers["X-Job-State"] == "running"
    r, names = _get(client, auth, "after=3")
    assert names == [] and r.headers["X-Results-Next"] == "3"
    for past in ("4", "99"):  # no answer gave it: the entries up to it would be skipped without a word
        r = client.simulate_get("/v1/jobs/j1/results", query_string=f"after={past}", headers=auth)
        assert r.status_code == 400 and "X-Results-Next" not in r.headers, r.text
        assert r.json["errors"][0]["field"] == "after" and r.json["errors"][0]["rejectedValue"] == int(past)
        assert "(3)" in r.json["message"]
    r, names = _get(client, auth, "after=1")
    assert names == ["e.xml", "a.xml"] and r.headers["X-Results-Next"] == "3"
    r, names = _get(client, auth, "")  # without `after`: archive order, as before, and no X-Results-Next
    assert names == ["a.xml", "c.xml", "e.xml"] and "X-Results-Next" not in r.headers
    store.cancel_job("j1", key_id)
    # ended: the documents never worked on are numbered on, in archive order, each with its NOT_PROCESSED line
    r, names = _get(client, auth, "after=3")
    assert names == ["b.xml", "d.xml"] and r.headers["X-Results-Next"] == "5"
    assert all(json.loads(x)["error"]["code"] == "NOT_PROCESSED" for x in r.text.splitlines())
    r, names = _get(client, auth, "after=4")
    assert names == ["d.xml"] and r.headers["X-Results-Next"] == "5"
    r, names = _get(client, auth, "after=5")  # the end of an ended job: an empty page, the same next
    assert names == [] and r.headers["X-Results-Next"] == "5"
    r = client.simulate_get("/v1/jobs/j1/results", query_string="after=6&format=zip", headers=auth)
    assert r.status_code == 400 and r.json["errors"][0]["field"] == "after", r.text
    r, names = _get(client, auth, "after=2")
    assert names == ["a.xml", "b.xml", "d.xml"]
    r = client.simulate_get("/v1/jobs/j1/results", query_string="after=3&format=zip", headers=auth)
    assert sorted(zipfile.ZipFile(io.BytesIO(r.content)).namelist()) == ["b.xml.error.json", "d.xml.error.json"]
    assert r.headers["X-Results-Next"] == "5"


@pytest.mark.parametrize("value", ["-1", "x", "1.5", "9" * 19])
def test_an_after_that_is_no_count_is_a_400_with_the_field(app, value):
    client, store, auth, key_id = app
    _job(store, key_id=key_id)
    r = client.simulate_get("/v1/jobs/j1/results", query_string=f"after={value}", headers=auth)
    assert r.status_code == 400 and r.json["errors"][0]["field"] == "after", r.text


def test_the_command_line_follows_a_job_s_results_as_they_come(tmp_path):
    """`pipeline jobs results --follow` on a running job: every document's entry once, then it ends with the
    job; `--after N` gives the rest and says the N to ask next."""
    server, env, token = serve_with_key(tmp_path, "follow", 1000, workers=1, warm=False,
                                        env={"EINVOICE_JOB_RECORD_EVERY": "0.2", "EINVOICE_JOB_CHUNK": "20"})
    try:
        n = 300
        job_id = submit(server.url, token, archive(n, invalid_every=7)).json()["id"]
        env = {**env, "EINVOICE_URL": server.url, "EINVOICE_API_KEY": token}
        follow = subprocess.Popen([sys.executable, "-m", "pipeline", "jobs", "results", job_id, "--follow"], cwd=REPO,
                                  env={**os.environ, **env}, stdout=subprocess.PIPE, text=True)
        first = follow.stdout.readline()  # an entry arrives while the job still runs
        running = wait_for(server.url, token, job_id, until=lambda j: True)
        out = follow.stdout.read()  # (not communicate(timeout=): it would lose what readline buffered)
        assert follow.wait(60) == 0
        names = [json.loads(x)["name"] for x in _lines(first + out)]
        assert sorted(names) == [f"doc-{i:05d}.xml" for i in range(n)]  # each once
        job = wait_for(server.url, token, job_id)
        assert job["state"] == "done" and running["done"] < n  # it followed a job that ran
        rest = subprocess.run([sys.executable, "-m", "pipeline", "jobs", "results", job_id, "--after", str(n - 10)],
                              cwd=REPO, env={**os.environ, **env}, capture_output=True, text=True,
                              timeout=120)
        assert rest.returncode == 0 and [json.loads(x)["name"] for x in _lines(rest.stdout)] == names[-10:]
        assert f"--after {n}" in rest.stderr
    finally:
        server.stop()
