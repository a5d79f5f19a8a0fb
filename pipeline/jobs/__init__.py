"""Jobs: many documents worked on in the background, on as many machines as there are workers.

    POST /v1/jobs -> files.Intake (upload on disk, one file of documents) -> store.create_job (rows + credits
    + chunks, one transaction) -> engine: Procrastinate on PostgreSQL (`pipeline worker` processes) or the
    embedded local pool on SQLite -> chunks.run_chunk -> flows.job_document (the flows a request uses)
    -> store.record_results (each document once)

Which engine follows from the store: PostgreSQL (EINVOICE_DATABASE_URL) uses Procrastinate, SQLite the pool.
"""
from __future__ import annotations

import json
import uuid

from pipeline.jobs import files
from pipeline.jobs.chunks import chunks
from pipeline.settings import get_settings
from pipeline.storage.jobs import Job
from pipeline.storage.sqlite import SqliteStore


def embedded(store) -> bool:
    """True when jobs run in the embedded pool (the SQLite store), not on Procrastinate workers."""
    return isinstance(store, SqliteStore)


def new_job_id() -> str:
    return "job_" + uuid.uuid4().hex


def submit(store, job_id: str, key_id: str | None, operation: str, options: dict, intake: files.Intake,
           cost: int) -> Job | None:
    """Store the job whose documents `intake` holds, with `cost` credits held per accepted document; None (and
    the files gone) when the key's balance is too low."""
    enqueue = None
    if not embedded(store):
        from pipeline.jobs import engine  # lazy: Procrastinate loads only where PostgreSQL runs the jobs

        ranges = chunks(len(intake.names), get_settings().job_chunk)
        enqueue = lambda cursor: engine.enqueue(job_id, ranges, cursor)  # noqa: E731
    try:
        intake.check()
        intake.close()
        job = store.create_job(job_id, key_id or "", operation, json.dumps(options), intake.names, intake.refused,
                               intake.spans, cost, enqueue, notices=intake.notices, emails=intake.emails,
                               signatures=intake.signatures)
    except BaseException:
        intake.discard()
        raise
    if job is None or not job.active:
        intake.discard()
    return job
