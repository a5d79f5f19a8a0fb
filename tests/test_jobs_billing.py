"""What a job's documents are charged: each the price of the endpoint whose check it got.

A validate document holds the dearest validate endpoint `detect.route` may send it to (with "auto" every spec's)
and is charged the one it was routed to: with only ZUGFeRD validation priced, an auto job of XRechnung XML holds
that price and is charged nothing (before, every document was charged the highest price). Shown on a running
`pipeline serve` (SQLite, its own pool), on both stores' recording and on PostgreSQL through a chunk's run.
"""
from __future__ import annotations

import uuid

from pipeline.storage.jobs import Outcome
from pipeline.storage.postgres import PostgresStore
from pipeline.storage.sqlite import SqliteStore
from tests.test_jobs import MIXED_PDF, _mixed_folder, _zip_of, documents, job_store, submit, wait_for  # noqa: F401
from tests.test_platform_helpers import pg_url, serve_with_key

ZUGFERD, XRECHNUNG = 5, 2  # credits per document of each validate endpoint below; the others cost 0
COSTS = f"/v1/invoice/zugferd/validate={ZUGFERD},/v1/invoice/xrechnung/validate={XRECHNUNG}"


def _balance(data_dir) -> int:
    store = SqliteStore(data_dir / "platform.sqlite3")
    try:
        return store.list_keys()[0].balance
    finally:
        store.close()


def test_a_document_is_charged_the_price_of_the_check_it_got(tmp_path):
    data = tmp_path / "data"
    server, env, token = serve_with_key(data, "jobs-billing", 100, workers=1, warm=False,
                                        env={"EINVOICE_CREDIT_COSTS": COSTS})
    try:
        def job_of(body: bytes, request: dict) -> dict:
            r = submit(server.url, token, body, request)
            assert r.status_code == 202, r.text
            return {**wait_for(server.url, token, r.json()["id"]), "held": r.json()["creditsReserved"]}

        valid, _ = documents()  # XRechnung CII: the xrechnung check
        folder = _mixed_folder(tmp_path / "mixed")  # a PDF, an XRechnung, a Peppol and a French invoice
        (folder / "e.xml").write_bytes(valid.replace(b"xrechnung", b"x"))  # its BT-24 no XRechnung's: en16931

        job = job_of(_zip_of(folder), {"operation": "validate"})  # auto: each holds the dearest (ZUGFeRD's)
        assert (job["state"], job["done"], job["held"]) == ("done", 5, 5 * ZUGFERD), job
        assert job["creditsCharged"] == ZUGFERD + XRECHNUNG  # the PDF and the XRechnung; Peppol, fr-ctc, EN 16931 0
        assert _balance(data) == 100 - ZUGFERD - XRECHNUNG  # the rest held went back

        two = tmp_path / "two"
        two.mkdir()
        (two / "a.pdf").write_bytes(MIXED_PDF.read_bytes())
        (two / "b.xml").write_bytes(valid)
        job = job_of(_zip_of(two), {"operation": "validate", "spec": "xrechnung"})  # the PDF gets ZUGFeRD's check
        assert (job["held"], job["creditsCharged"]) == (2 * ZUGFERD, ZUGFERD + XRECHNUNG), job

        en16931 = tmp_path / "en16931"
        en16931.mkdir()
        (en16931 / "a.xml").write_bytes(valid)
        (en16931 / "b.xml").write_bytes(valid)
        job = job_of(_zip_of(en16931), {"operation": "validate", "spec": "en16931"})  # no PDF: held 0 beyond
        assert (job["held"], job["creditsCharged"]) == (2 * ZUGFERD, 0), job
        assert _balance(data) == 100 - 2 * ZUGFERD - 2 * XRECHNUNG
    finally:
        server.stop()


def test_recording_charges_each_document_its_own_price_never_above_what_it_holds(job_store):
    store = job_store
    store.create_key("k1", "t", "test", "x", 100, None)
    store.create_job("j1", "k1", "validate", "{}", list("abcde"), {}, {i: (i, 1) for i in range(5)}, 5)
    assert store.get_key("k1").balance == 75
    assert store.record_results("j1", [Outcome(0, "valid", "{}", cost=0), Outcome(1, "invalid", "{}", cost=2),
                                       Outcome(2, "error", "{}", cost=5)]) == 3
    assert store.record_results("j1", [Outcome(3, "indeterminate", "{}"),  # no price of its own: what it holds
                                       Outcome(4, "valid", "{}", cost=9)]) == 2  # more than held: what it holds
    job = store.get_job("j1")
    assert (job.state, job.charged) == ("done", 0 + 2 + 5 + 5)
    assert store.get_key("k1").balance == 100 - 12
    charges = store._read("SELECT amount FROM ledger WHERE request_id = ? AND kind = 'charge'", ("j1",))
    assert sorted(int(a) for a, in charges) == [2, 10]  # one line per recorded batch


def test_on_postgresql_a_chunk_charges_the_route_each_document_took(tmp_path, monkeypatch):
    """The worker's path on PostgreSQL (submit enqueues the chunks on Procrastinate; the chunk runs here)."""
    from pipeline import jobs
    from pipeline.flows.job_document import check_options
    from pipeline.jobs import files
    from pipeline.jobs.chunks import run_chunk
    from pipeline.service.platform import PlatformConfig
    from pipeline.service.resources.jobs import job_prices
    from pipeline.settings import get_settings

    monkeypatch.setenv("EINVOICE_JOBS_DIR", str(tmp_path / "jobs"))
    get_settings.cache_clear()
    store = PostgresStore(pg_url("jobs_" + uuid.uuid4().hex[:12]))
    try:
        store.create_key("k1", "t", "test", "x", 100, None)
        operation, options = check_options({"operation": "validate"})
        hold, options = job_prices(PlatformConfig(costs={"/v1/invoice/zugferd/validate": ZUGFERD,
                                                         "/v1/invoice/xrechnung/validate": XRECHNUNG}),
                                   operation, options)
        assert hold == ZUGFERD
        intake = files.Intake("job_pg_billing")
        intake.add_bytes("a.pdf", MIXED_PDF.read_bytes())
        intake.add_bytes("b.xml", documents()[0])
        intake.add_bytes("c.xml", documents()[0].replace(b"xrechnung", b"x"))
        job = jobs.submit(store, "job_pg_billing", "k1", operation, options, intake, hold)
        assert job.reserved == 3 * ZUGFERD and store.get_key("k1").balance == 100 - 3 * ZUGFERD
        assert run_chunk(store, job.id, 0, 3) == 3
        job = store.get_job(job.id)
        assert (job.state, job.charged) == ("done", ZUGFERD + XRECHNUNG)
        assert store.get_key("k1").balance == 100 - ZUGFERD - XRECHNUNG
    finally:
        get_settings.cache_clear()
        store.drop_schema()
        store.close()
