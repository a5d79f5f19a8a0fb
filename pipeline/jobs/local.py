"""The embedded job engine (no PostgreSQL: the job tables are in the SQLite store): a pool of local workers.

Each service worker process runs one daemon thread from its start (`pipeline.cli.serve.start_embedded_jobs`; the
first /v1/jobs request otherwise), and `pipeline worker` without EINVOICE_DATABASE_URL runs the same loop in the
foreground. A loop takes one active
job nobody holds, under a lease it renews as it records results, and works on its documents without a result
(pipeline.jobs.chunks); a process that dies leaves its lease to run out (LEASE seconds) and another process
takes the job over where its results end. So `bash scripts/serve.sh` starts nothing extra. One process works on a
job at a time (several jobs run side by side in several processes); spreading one job over many processes and
machines is what the PostgreSQL engine is for.

Jobs take turns: a loop works on its job a chunk (EINVOICE_JOB_CHUNK documents) at a time, and after each, when
another job waits with nobody on it, lets its own go (its results so far are recorded: nothing is lost, nothing
done twice) and takes the one that waited longest (`claim_job`), so a small job behind a big one waits for one
chunk, not for the whole big one.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
import time

from pipeline.jobs import retention
from pipeline.jobs.chunks import FilesMissing, run_chunk
from pipeline.settings import get_settings

log = logging.getLogger("pipeline.jobs")

LEASE = float(os.environ.get("EINVOICE_JOB_LEASE") or 30)
IDLE_POLL = 1.0

_started: dict = {}  # (pid, the store's owner) -> True
_wake = threading.Event()


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


def work_once(store) -> bool:
    """Take one job and work on it until it has ended, lost its lease or given its turn to a job waiting; False if
    there was none."""
    owner = _owner()
    job_id = store.claim_job(owner, LEASE)
    if job_id is None:
        return False
    size = get_settings().job_chunk

    def renew():
        if not store.renew_lease(job_id, owner, LEASE) and store.get_job(job_id).active:
            raise _LeaseLost  # (an ended job has no lease to renew: nothing lost)

    try:
        first = store.first_open(job_id)
        while first is not None:
            run_chunk(store, job_id, first, first + size, on_batch=renew)
            if not store.get_job(job_id).active:
                break
            if store.job_waiting(job_id):
                if store.release_job(job_id, owner):
                    log.info("job %s: its turn ends, another job waits", job_id)
                break
            renew()
            first = store.first_open(job_id, first + size)
    except _LeaseLost:
        log.warning("job %s: lease lost, another process goes on with it", job_id)
    except FilesMissing as exc:
        store.fail_job(job_id, str(exc))
    return True


class _LeaseLost(Exception):
    pass


def loop(store_factory, stop: threading.Event | None = None) -> None:
    store, next_retention = None, 0.0
    while stop is None or not stop.is_set():
        try:
            store = store or store_factory()
            if work_once(store):
                continue
            if time.monotonic() >= next_retention:  # idle: the jobs kept past their time go
                next_retention = time.monotonic() + retention.EVERY
                retention.forget_expired(store)
        except Exception:  # noqa: BLE001 - the pool outlives a bad moment of the database
            log.exception("embedded job worker")
        _wake.wait(IDLE_POLL)
        _wake.clear()


def ensure_started(store_factory) -> None:
    """Start this process's worker thread for this store once (after fork: a thread does not survive it)."""
    key = (os.getpid(), id(getattr(store_factory, "__self__", store_factory)))
    if key in _started:
        _wake.set()
        return
    _started[key] = True
    threading.Thread(target=loop, args=(store_factory,), name="einvoice-jobs", daemon=True).start()
