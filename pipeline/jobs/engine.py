"""The job engine on PostgreSQL: Procrastinate (its tables sit in our schema, pipeline.storage.postgres v3).

A job's chunks (EINVOICE_JOB_CHUNK documents each, default 100) are Procrastinate jobs of the task
`jobs:run_chunk`, deferred with the connection of the transaction that inserts the job and holds its credits, so
a job exists with its credits and its chunks, or not at all. `pipeline worker` processes run them: each compiles
the rule packs once (`warm_worker`), then takes one chunk at a time.

Crashed workers: a worker writes a heartbeat every HEARTBEAT seconds. The periodic task `jobs:retry_stalled`
(every 5 s, one instance at a time) puts the chunks of workers silent for STALLED seconds back in the queue;
a retried chunk does only the documents without a result (pipeline.jobs.chunks), and recording a result counts
it once (pipeline.storage.jobs), so nothing is lost and nothing counts twice. A chunk that keeps failing
(its files are not on this worker, the database is away) is retried MAX_ATTEMPTS times, then its job fails and
the credits it still holds go back.

Jobs take turns: a chunk's Procrastinate priority is minus its index in its job (workers take the highest first,
ties in the order deferred), so the n-th chunks of all jobs rank together and a job submitted behind a big one has
its first chunks run before the big one's later ones: a receiver's five documents wait for one chunk, not for
someone's month. The periodic tasks rank above every chunk.
"""
from __future__ import annotations

import logging
import os

import procrastinate
from procrastinate.retry import RetryStrategy

from pipeline.errors import job_failure
from pipeline.jobs import retention
from pipeline.jobs.chunks import run_chunk
from pipeline.settings import get_settings
from pipeline.storage import open_store

log = logging.getLogger("pipeline.jobs")

QUEUE = "einvoice_jobs"
HEARTBEAT = float(os.environ.get("EINVOICE_JOB_HEARTBEAT") or 2)
STALLED = float(os.environ.get("EINVOICE_JOB_STALLED") or 15)
MAX_ATTEMPTS = 5
PERIODIC = 1  # the periodic tasks' priority: before any chunk (a first chunk has 0)
LAST_TURN = 1_000_000  # chunks further down their job share this turn (far inside PostgreSQL's integer)

tasks = procrastinate.Blueprint()
_store = {"pid": None, "store": None}


def store():
    if _store["pid"] != os.getpid():
        _store.update(pid=os.getpid(), store=open_store())
    return _store["store"]


@tasks.task(name="run_chunk", queue=QUEUE, pass_context=True,
            retry=RetryStrategy(max_attempts=MAX_ATTEMPTS, wait=2))
def chunk_task(context, job_id: str, first: int, last: int) -> int:
    try:
        return run_chunk(store(), job_id, first, last)
    except Exception as exc:
        if context.job.attempts + 1 >= MAX_ATTEMPTS:
            log.error("job %s: chunk %d-%d failed %d times, the job fails: %s", job_id, first, last,
                      MAX_ATTEMPTS, exc)
            store().fail_job(job_id, job_failure("chunk_failed", reason=f"{type(exc).__name__}: {exc}"))
        raise


@tasks.periodic(cron="* * * * * */5", periodic_id="stalled")
@tasks.task(name="retry_stalled", queue=QUEUE, queueing_lock="retry_stalled", pass_context=True, priority=PERIODIC)
async def retry_stalled(context, timestamp: int) -> int:
    manager = context.app.job_manager
    stalled = list(await manager.get_stalled_jobs(seconds_since_heartbeat=STALLED, queue=QUEUE,
                                                  task_name="jobs:run_chunk"))
    for job in stalled:
        log.warning("chunk %s of a stalled worker goes back to the queue: %s", job.id, job.call_string)
        await manager.retry_job(job)
    return len(stalled)


@tasks.periodic(cron="*/10 * * * *", periodic_id="retention")
@tasks.task(name="forget_expired", queue=QUEUE, queueing_lock="forget_expired", pass_context=True,
            priority=PERIODIC)
def forget_expired(context, timestamp: int) -> int:
    """The jobs kept past EINVOICE_JOB_RETENTION_DAYS go (pipeline.jobs.retention), every 10 minutes."""
    return retention.forget_expired(store())


def _app(connector) -> procrastinate.App:
    app = procrastinate.App(connector=connector)
    app.add_tasks_from(tasks, namespace="jobs")
    return app


_sync = {"pid": None, "app": None}


def turn(index: int) -> int:
    """The priority of a job's `index`-th chunk (module docstring)."""
    return -min(index, LAST_TURN)


def enqueue(job_id: str, ranges: list[tuple[int, int]], cursor) -> None:
    """Defer the chunks of a job on `cursor`'s connection (inside the caller's transaction), each at its turn."""
    if _sync["pid"] != os.getpid():
        _sync.update(pid=os.getpid(), app=_app(procrastinate.SyncPsycopgConnector()))
    app = _sync["app"]
    deferrer = app.configure_task("jobs:run_chunk", connection=cursor.connection)
    app.job_manager.batch_defer_jobs(
        [deferrer.make_new_job(job_id=job_id, first=first, last=last).evolve(priority=turn(n))
         for n, (first, last) in enumerate(ranges)], connection=cursor.connection)


def run_worker(name: str | None = None) -> None:
    """One worker: one chunk at a time in this process, until SIGTERM / SIGINT (Procrastinate's handlers:
    the chunk in progress is finished first)."""
    url = get_settings().database_url
    app = _app(procrastinate.PsycopgConnector(conninfo=url, min_size=1, max_size=3))
    app.run_worker(queues=[QUEUE], concurrency=1, name=name, update_heartbeat_interval=HEARTBEAT,
                   stalled_worker_timeout=STALLED * 4, delete_jobs="successful")
