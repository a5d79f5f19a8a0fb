"""A worker's memory over a month of invoices (issue 36): what a job's PDFs leave behind is let go.

Checking a ZUGFeRD PDF leaves reference cycles (fontTools' glyphs of its embedded fonts, ~10,000 objects a PDF),
and the PDF/A walk's gc.freeze() reset the collector's counts each time, so a process checking PDFs one after
another never ran a full collection: a `pipeline worker` grew by ~420 MB with every 504-document job of ../shared's
files (564 MB -> 1.7 GB after five), a `pipeline serve` worker running the embedded pool by 1.3 GB with each
1,512-document job, and 200 requests to /v1/invoice/zugferd/validate by 535 MB. The walk now collects its own
garbage before it unfreezes the rest (pipeline.pdf.checks). Here a job's chunk runs on a SQLite store with the
automatic collector off, so that only the code's own collection can free them: nothing of them is left unreachable.
"""
from __future__ import annotations

import gc
from pathlib import Path

from pipeline import jobs
from pipeline.flows.job_document import check_options
from pipeline.jobs import files
from pipeline.jobs.chunks import run_chunk
from pipeline.settings import get_settings
from pipeline.storage.sqlite import SqliteStore

SHARED = Path(__file__).resolve().parents[2] / "shared"
PDF = SHARED / "realworld/corpus/ZUGFeRDv2/correct/symtrax/Beispiele/EN16931/zugferd_2p1_EN16931_Elektron.pdf"
XML = SHARED / "corpus/xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml"


def _left_behind(work) -> list:
    """The objects `work()` leaves unreachable when the collector runs only where the code asks for it."""
    gc.collect()
    was_on = gc.isenabled()
    gc.disable()
    try:
        work()
        gc.set_debug(gc.DEBUG_SAVEALL)  # (only now: a collection inside `work` frees what it finds)
        gc.collect()
        return list(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was_on:
            gc.enable()


def _from_the_pdf_check(objects: list) -> list:
    return [o for o in objects if type(o).__module__.startswith(("fontTools", "pikepdf"))]


def test_a_chunk_lets_go_of_what_its_pdfs_checks_left_in_cycles(tmp_path, monkeypatch):
    monkeypatch.setenv("EINVOICE_JOBS_DIR", str(tmp_path / "jobs"))
    get_settings.cache_clear()
    store = SqliteStore(tmp_path / "s.sqlite3")
    try:
        operation, options = check_options({"operation": "validate"})
        intake = files.Intake("job_memory")
        intake.add_bytes("a.pdf", PDF.read_bytes())
        intake.add_bytes("b.xml", XML.read_bytes())
        job_id = jobs.submit(store, "job_memory", "", operation, options, intake, 0).id
        left = _left_behind(lambda: run_chunk(store, job_id, 0, 2))
        assert _from_the_pdf_check(left) == []
        job = store.get_job(job_id)
        assert (job.state, job.done, job.valid + job.invalid) == ("done", 2, 2)
    finally:
        get_settings.cache_clear()
        store.close()
