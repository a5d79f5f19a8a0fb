"""How long a job's results are kept: a job that ended more than EINVOICE_JOB_RETENTION_DAYS ago (default 30; 0
keeps every job) is deleted with its documents' results, a batch of jobs at a time. Invoices hold personal and
business data, and a service that receives them for others should not keep them longer than asked; the key's
owner can delete a job sooner (DELETE /v1/jobs/{id}?forget=true). The embedded pool runs this when idle, the
PostgreSQL engine as a periodic task: whoever runs jobs also ends their keeping.
"""
from __future__ import annotations

import logging
import time

from pipeline.jobs import files
from pipeline.settings import get_settings

log = logging.getLogger("pipeline.jobs")

EVERY = 600.0  # seconds between two looks
BATCH = 100    # jobs deleted per look at most (the next look takes the rest)


def forget(store, job_id: str) -> bool:
    """Delete an ended job, its results and whatever of its files is left; False while it is active."""
    if not store.forget_job(job_id):
        return False
    files.remove(job_id)
    return True


def forget_expired(store, now: float | None = None) -> int:
    """Delete the jobs that ended longer ago than the retention; how many."""
    days = get_settings().job_retention_days
    if days <= 0:
        return 0
    gone = sum(forget(store, job_id) for job_id in store.expired_jobs((now or time.time()) - days * 86400, BATCH))
    if gone:
        log.info("%d job(s) ended more than %g day(s) ago were deleted with their results", gone, days)
    return gone
