"""Working on a chunk of a job: its documents without a result, through the flows, results recorded in small
batches (pipeline.storage.jobs makes a recording count each document once, whoever records it first).

Both engines call `run_chunk` with a chunk's index range: the Procrastinate task (PostgreSQL) with its own, the
embedded pool with the next EINVOICE_JOB_CHUNK documents of the job it holds (a turn: pipeline.jobs.local). A chunk
that was started before, by a worker since killed, does only what is missing.
"""
from __future__ import annotations

import json
import logging
import os
import time

from pipeline.errors import job_failure
from pipeline.flows import job_document
from pipeline.jobs import files
from pipeline.storage.jobs import Outcome
from pipeline.storage.store import StorageUnavailable

log = logging.getLogger("pipeline.jobs")

# s: results go to the database at least this often, so that progress and a cancel are seen soon
RECORD_EVERY = float(os.environ.get("EINVOICE_JOB_RECORD_EVERY") or 2)


class FilesMissing(Exception):
    """An active job's documents are not in the jobs directory of this worker (not shared across machines?)."""


def run_chunk(store, job_id: str, first: int, last: int, on_batch=None) -> int:
    """Work on the documents in [first, last) of a job that have no result yet; returns how many this call
    recorded. Stops early when the job has ended (cancelled). `on_batch()` runs after each recording (the
    embedded pool renews its lease there)."""
    job = store.get_job(job_id)
    if job is None or not job.active:
        return 0
    if job.state == "queued":
        store.mark_running(job_id)
    options = json.loads(job.options)
    prices = options.get("prices") or {}  # validate: the price of each spec a document may be routed to
    recorded, outcomes, since = 0, [], time.monotonic()
    for index, name, pos, size, email, signature in store.open_documents(job_id, first, last):
        try:
            data = files.read_document(job_id, pos, size)
        except FileNotFoundError:
            job = store.get_job(job_id)
            if job is None or not job.active:
                return recorded  # cancelled meanwhile: its folder is gone
            raise FilesMissing(job_failure("files_missing", job=job_id, index=index,
                                           folder=files.job_dir(job_id))) from None
        done = job_document.work(job.operation, options, name, data, request_id=job_id,
                                 email=json.loads(email) if email else None,
                                 signature=json.loads(signature) if signature else None)
        outcomes.append(Outcome(index, done.kind, done.line, done.page, prices.get(done.rules)))
        if time.monotonic() - since >= RECORD_EVERY:
            recorded += _record(store, job_id, outcomes)
            outcomes, since = [], time.monotonic()
            if on_batch is not None:
                on_batch()
            if not store.get_job(job_id).active:
                return recorded
    if outcomes:
        recorded += _record(store, job_id, outcomes)
    return recorded


def _record(store, job_id: str, outcomes: list[Outcome]) -> int:
    try:
        new = store.record_results(job_id, outcomes)
    except StorageUnavailable as exc:  # a lock wait or a dropped connection: once more before the work is redone
        log.warning("job %s: recording %d results failed, once more: %s", job_id, len(outcomes), exc)
        getattr(store, "drop_connection", lambda: None)()
        new = store.record_results(job_id, outcomes)
    if new < len(outcomes):
        log.info("job %s: %d of %d results were recorded before (a retried chunk)", job_id,
                 len(outcomes) - new, len(outcomes))
    job = store.get_job(job_id)
    if job is not None and not job.active:
        files.remove(job_id)
    return new


def chunks(total: int, size: int) -> list[tuple[int, int]]:
    return [(first, min(first + size, total)) for first in range(0, total, size)]
