"""Issue 37 for jobs: a job's counts never claim more than was checked.

A parse job without `"validate": true` reads its invoices and validates none: they are `unchecked`, neither `valid`
nor `invalid`, in `GET /v1/jobs/{id}`, in `pipeline jobs submit --wait`'s summary (exit 0: the job did what it was
asked) and in `pipeline jobs list`, and `pipeline inbox` files such a message under `other`, never `valid`. With
`validate` the documents get their reports' verdicts. A convert job's documents are `valid` because convert hands
back only what its target's rules passed: each converted document is validated again here, on the rules the
service detects for it. One real `pipeline serve` on the embedded SQLite store (no PostgreSQL), started here; the
documents are the typical XRechnung CII of the official test suite, a copy with BT-1 removed (BR-02), and the
issue's two documents that claim rules this service does not have (EN 16931:2026, XRechnung 4.0). The count's
bookkeeping (a retried chunk, the charge) on both backends, and a database of the release before, read as it is.
"""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from pipeline.check.detect import route
from pipeline.flows.validate_batch import document_outcome
from pipeline.flows.validate_xml import validate_xml
from pipeline.jobs.inbox import verdict
from pipeline.storage.jobs import JOBS_V9, Outcome
from pipeline.storage.sqlite import SqliteStore
from tests.mailbuild import zipped
from tests.test_jobs import documents, get, job_store, results, submit, wait_for  # noqa: F401 - the fixture
from tests.test_platform_helpers import Server, cli, free_port_in
from tests.test_verdict import edition_2026, xrechnung_40

PORTS = (19800, 19899)  # this suite's own range


def _zip(members: dict[str, bytes]) -> bytes:
    return zipped(list(members.items()))


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    data = tmp_path_factory.mktemp("unchecked")
    env = {"EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_RATE_LIMIT": "10000/min"}
    token = cli(env, "keys", "create", "--name", "unchecked", "--env", "test", "--credits", "1000").stdout.strip()
    assert token.startswith("einv_test_"), token
    server = Server(env, workers=1, port=free_port_in(*PORTS), log_path=data / "serve.log")
    try:
        yield server, {**env, "EINVOICE_URL": server.url, "EINVOICE_API_KEY": token}, token, data
    finally:
        server.stop()


def _counts(job: dict) -> dict:
    return {k: job[k] for k in ("state", "done", "valid", "invalid", "indeterminate", "unchecked", "errors",
                                "noInvoice")}


def _stored(data: Path, job_id: str):
    """The job as the service's database holds it: what `pipeline inbox` decides a message's folder by."""
    return SqliteStore(data / "platform.sqlite3").get_job(job_id)


def test_a_parse_job_without_validate_counts_its_invoices_unchecked_never_valid(service, tmp_path):
    server, env, token, data = service
    valid, invalid = documents()
    r = submit(server.url, token, _zip({"a.xml": valid, "b.xml": invalid}), {"operation": "parse"})
    assert r.status_code == 202, r.text
    job = wait_for(server.url, token, r.json()["id"])
    # both read (BT-1's absence does not stop the reading), neither judged
    assert _counts(job) == {"state": "done", "done": 2, "valid": 0, "invalid": 0, "indeterminate": 0, "unchecked": 2,
                            "errors": 0, "noInvoice": 0}, job
    lines = results(server.url, token, job["id"])
    assert [(x["name"], "invoice" in x, "validation" in x["invoice"]) for x in lines] == [("a.xml", True, False),
                                                                                           ("b.xml", True, False)]
    assert verdict(_stored(data, job["id"])) == "other"  # an inbox's parse run: not to --move-valid

    # the command line says the same: unchecked, not valid; exit 0, as the job did what was asked
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.xml").write_bytes(valid)
    (folder / "b.xml").write_bytes(invalid)
    run = cli(env, "jobs", "submit", str(folder), "--operation", "parse", "--wait")
    assert run.returncode == 0, run.stdout + run.stderr
    summary = {k.strip(): v for k, v in (line.rsplit(None, 1) for line in run.stdout.splitlines())}
    assert (summary["valid"], summary["invalid"], summary["unchecked"], summary["errors"]) == ("0", "0", "2", "0"), \
        run.stdout
    status = json.loads(cli(env, "jobs", "status", summary["job"]).stdout)
    assert _counts(status) == {**_counts(job), "state": "done"}, status
    listed = cli(env, "jobs", "list", "--limit", "1").stdout.splitlines()
    heading = listed[0].split()
    row = dict(zip(heading, listed[1].split()))
    assert (row["job"], row["operation"], row["valid"], row["invalid"], row["unchecked"]) == (
        summary["job"], "parse", "0", "0", "2"), listed
    german = cli(env, "jobs", "submit", str(folder / "a.xml"), "--operation", "parse", "--wait", "--lang", "de")
    assert german.returncode == 0 and "nur gelesen" in german.stdout and "unchecked" not in german.stdout, \
        german.stdout


def test_a_parse_job_with_validate_counts_the_official_rules_verdicts(service):
    server, env, token, data = service
    valid, invalid = documents()
    members = {"a.xml": valid, "b.xml": invalid, "c.xml": edition_2026()}
    r = submit(server.url, token, _zip(members), {"operation": "parse", "validate": True})
    assert r.status_code == 202, r.text
    job = wait_for(server.url, token, r.json()["id"])
    lines = {x["name"]: x for x in results(server.url, token, job["id"])}
    verdicts = {name: lines[name]["invoice"]["validation"]["verdict"] for name in members}
    # each the verdict of the source's own report (the rules its BT-24 names), as the validate endpoint gives it
    assert verdicts == {"a.xml": validate_xml(valid, "xrechnung").verdict,
                        "b.xml": validate_xml(invalid, "xrechnung").verdict,
                        "c.xml": validate_xml(edition_2026(), "en16931").verdict} == {
        "a.xml": "valid", "b.xml": "invalid", "c.xml": "indeterminate"}
    assert _counts(job) == {"state": "done", "done": 3, "valid": 1, "invalid": 2, "indeterminate": 1, "unchecked": 0,
                            "errors": 0, "noInvoice": 0}, job
    assert verdict(_stored(data, job["id"])) == "invalid"
    only_valid = wait_for(server.url, token, submit(server.url, token, _zip({"a.xml": valid}),
                                                    {"operation": "parse", "validate": True}).json()["id"])
    assert (only_valid["valid"], only_valid["unchecked"]) == (1, 0)
    assert verdict(_stored(data, only_valid["id"])) == "valid"


def test_a_convert_job_counts_as_valid_only_documents_their_rules_pass(service):
    """Also the sources that claim rules this service does not have (their own verdict: indeterminate): the
    conversion writes the identifier of the rules that judged the result, and the result passes them."""
    server, env, token, data = service
    valid, invalid = documents()
    members = {"a.xml": valid, "b.xml": invalid, "c.xml": edition_2026(), "d.xml": xrechnung_40()}
    for to in ("UBL", "CII"):
        r = submit(server.url, token, _zip(members), {"operation": "convert", "to": to, "allowLoss": True})
        assert r.status_code == 202, r.text
        job = wait_for(server.url, token, r.json()["id"])
        lines = {x["name"]: x for x in results(server.url, token, job["id"])}
        assert lines["b.xml"]["error"]["code"] == "SOURCE_INVALID"  # an invalid source converts to nothing
        converted = {name: line for name, line in lines.items() if "document" in line}
        assert sorted(converted) == ["a.xml", "c.xml", "d.xml"], lines
        z = zipfile.ZipFile(io.BytesIO(get(server.url, token, f"/v1/jobs/{job['id']}/results?format=zip").content))
        for name in converted:
            out = z.read(name)
            outcome, _ = document_outcome(out, route(out, "auto"), None, None, False)
            assert outcome["report"]["verdict"] == "valid", (to, name, outcome)
        assert _counts(job) == {"state": "done", "done": 4, "valid": 3, "invalid": 0, "indeterminate": 0,
                                "unchecked": 0, "errors": 1, "noInvoice": 0}, job


def test_an_unchecked_result_is_charged_and_counted_once_on_either_backend(job_store):
    """A retried chunk counts its unchecked document once; it got its result (the invoice), so it is charged, and
    it is neither valid, invalid nor a message without an invoice."""
    store = job_store
    store.create_key("k1", "t", "test", "x", 10, None)
    store.create_job("j1", "k1", "parse", "{}", ["a", "b"], {}, {0: (0, 1), 1: (1, 1)}, 2)
    chunk = [Outcome(0, "unchecked", '{"name": "a"}'), Outcome(1, "error", '{"name": "b"}')]
    assert store.record_results("j1", chunk) == 2 and store.record_results("j1", chunk) == 0
    job = store.get_job("j1")
    assert (job.state, job.valid, job.invalid, job.unchecked, job.errors, job.charged) == ("done", 0, 0, 1, 1, 2)
    assert job.to_dict()["noInvoice"] == 0 and verdict(job) == "invalid"  # b could not be read


def test_a_database_of_the_release_before_gets_the_count_at_zero(tmp_path):
    """A store made before the column existed (its migrations up to v8) keeps its jobs: they read unchecked 0."""
    class Before(SqliteStore):
        migrations = [m for m in SqliteStore.migrations if m is not JOBS_V9]

    old = Before(tmp_path / "s.sqlite3")
    old.create_key("k1", "t", "test", "x", 10, None)
    old.connection().execute("INSERT INTO jobs (id, key_id, state, operation, options, total, done, valid, invalid, "
                             "errors, cost, reserved, charged, created_at) VALUES ('j0', 'k1', 'done', 'validate', "
                             "'{}', 1, 1, 1, 0, 0, 1, 1, 1, 0)")
    old.close()
    job = SqliteStore(tmp_path / "s.sqlite3").get_job("j0")
    assert (job.valid, job.unchecked, job.to_dict()["unchecked"], job.to_dict()["noInvoice"]) == (1, 0, 0, 0)
