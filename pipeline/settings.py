"""Settings from the environment, read once. Every knob has an embedded default so the service runs bare."""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
XSLT_DIR = REPO_ROOT / "xslt"
TEMPLATES_DIR = REPO_ROOT / "templates"
SCHEMATRON_DIR = REPO_ROOT / "schematron"


# gunicorn's worker timeout under `pipeline serve`: a worker silent for longer is killed with the connections it holds
# (pipeline.budget keeps every request's work below it).
WORKER_TIMEOUT = 120


def _cache_home() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


def _data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


@dataclass(frozen=True)
class Settings:
    rules_home: Path
    data_dir: Path
    database_url: str | None
    redis_url: str | None
    max_upload_bytes: int
    max_pdf_lines: int
    # Documents in one batch (POST .../validate/batch, a ZIP or several file parts): 400 TOO_MANY_FILES above.
    max_batch_files: int = 200
    # Slow clients (pipeline serve): the request head must arrive, and a connection that sends or reads nothing
    # is dropped, within this many seconds.
    client_timeout: float = 10.0
    # Public endpoint limits (pipeline serve): a request's head and body must arrive whole within this many seconds
    # of its first byte (408 after), whatever the pace of its bytes.
    request_deadline: float = 60.0
    # ... except a job upload (POST /v1/jobs) whose body keeps arriving: each byte of it moves that deadline on by
    # 1/job_upload_min_rate s, at most to the request deadline from now (the slack for a line's dips), and never past
    # job_upload_deadline s of its first byte (a rate of 0: job uploads keep the request deadline). 64 KiB/s is about
    # half of a 1 Mbit/s line (125 kB/s: 110 MB in ~15 min), and above the fair pace (pipeline.cli.serve._FAIR_PACE,
    # 16 KiB/s), so an upload at the rate is never a slow connection the fair caps close. An hour carries 110 MB even
    # at the rate itself (28 min); EINVOICE_MAX_JOB_BYTES (2 GiB) takes ~5 Mbit/s.
    job_upload_min_rate: float = 64 * 1024
    job_upload_deadline: float = 3600.0
    # Open connections a worker process holds from one client address (0: no cap; a trusted proxy's address, in
    # gunicorn's forwarded_allow_ips, has none) and in all. At a cap a connection is closed for the new one by the
    # fair-cap rule (pipeline.cli.serve: the address holding the most, never one holding a handful, only a
    # connection idle or slow); if none may go, the new one gets 503 + Retry-After.
    max_client_connections: int = 64
    max_worker_connections: int = 1000
    # Requests one keep-alive connection may carry; the last is answered with Connection: close.
    keepalive_requests: int = 1000
    # Request bodies a worker process holds while they arrive (pipeline serve): bytes in memory (bodies over 1 MiB,
    # and any past this budget, go to unnamed spool files instead), and bytes in spool files (a body past this budget
    # is refused with 503 + Retry-After). Job uploads (POST /v1/jobs) are spooled into the jobs directory.
    body_memory: int = 128 << 20
    body_spool: int = 4 << 30
    # The time a request's work may take (a batch stops taking documents past it); below the worker timeout
    # (120 s), so that no request ever costs a worker.
    request_budget: float = 60.0
    # PostgreSQL: connecting, and every statement (a client-side deadline as well as statement_timeout).
    db_connect_timeout: float = 2.0
    db_statement_timeout: float = 3.0
    db_lock_timeout: float = 1.0
    # /readyz: each dependency must answer within this many seconds.
    ready_timeout: float = 1.0
    # Jobs (POST /v1/jobs): uploads and their documents live here; shared by every node and worker when they run
    # on several machines (default <data dir>/jobs).
    jobs_dir: Path | None = None
    max_job_bytes: int = 2 << 30          # one job's upload (all its file parts), streamed to disk
    max_job_files: int = 200_000          # documents in one job
    # The documents a key's active jobs keep in the jobs directory, in all (413 JOB_DISK_QUOTA_EXCEEDED past it), and
    # a job's documents against its upload: an archive may expand at most this many times (413
    # ARCHIVE_EXPANSION_TOO_LARGE; generated invoices with identical lines deflate ~100-150 x, zeros ~1,000 x).
    job_disk_quota: int = 10 << 30
    max_job_expansion: float = 200.0
    job_chunk: int = 100                  # documents a worker takes at a time
    job_retention_days: float = 30.0      # a job that ended longer ago is deleted with its results (0: kept)
    # Rule packs (specs) a worker compiles when it starts; None: every installed one. A pack not warmed compiles on
    # its first request (~0.5 s). Fewer warm packs make a smaller Saxon heap, and its full collections, every few
    # thousand validations, pause the worker in proportion (bench/gc_pauses.py).
    warm_specs: tuple[str, ...] | None = None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    env = os.environ
    return Settings(
        rules_home=Path(env.get("EINVOICE_RULES_HOME") or _cache_home() / "einvoice-pipeline" / "rules"),
        data_dir=Path(env.get("EINVOICE_DATA_DIR") or _data_home() / "einvoice-pipeline"),
        database_url=env.get("EINVOICE_DATABASE_URL") or None,
        redis_url=env.get("EINVOICE_REDIS_URL") or None,
        max_upload_bytes=int(env.get("EINVOICE_MAX_UPLOAD_BYTES") or 20 * 1024 * 1024),
        # WeasyPrint lays out ~10 ms per line: 2,000 lines take ~20 s, far more would outlast the worker timeout
        max_pdf_lines=int(env.get("EINVOICE_MAX_PDF_LINES") or 2_000),
        max_batch_files=int(env.get("EINVOICE_MAX_BATCH_FILES") or 200),
        client_timeout=float(env.get("EINVOICE_CLIENT_TIMEOUT") or 10),
        request_deadline=float(env.get("EINVOICE_REQUEST_DEADLINE") or 60),
        job_upload_min_rate=float(env.get("EINVOICE_JOB_UPLOAD_MIN_RATE") or 64 * 1024),
        job_upload_deadline=float(env.get("EINVOICE_JOB_UPLOAD_DEADLINE") or 3600),
        max_client_connections=int(env.get("EINVOICE_MAX_CLIENT_CONNECTIONS") or 64),
        max_worker_connections=int(env.get("EINVOICE_MAX_WORKER_CONNECTIONS") or 1000),
        keepalive_requests=int(env.get("EINVOICE_KEEPALIVE_REQUESTS") or 1000),
        body_memory=int(env.get("EINVOICE_BODY_MEMORY") or 128 << 20),
        body_spool=int(env.get("EINVOICE_BODY_SPOOL") or 4 << 30),
        request_budget=float(env.get("EINVOICE_REQUEST_BUDGET") or 60),
        db_connect_timeout=float(env.get("EINVOICE_DB_CONNECT_TIMEOUT") or 2),
        db_statement_timeout=float(env.get("EINVOICE_DB_STATEMENT_TIMEOUT") or 3),
        db_lock_timeout=float(env.get("EINVOICE_DB_LOCK_TIMEOUT") or 1),
        ready_timeout=float(env.get("EINVOICE_READY_TIMEOUT") or 1),
        jobs_dir=Path(env.get("EINVOICE_JOBS_DIR") or Path(env.get("EINVOICE_DATA_DIR") or _data_home() /
                                                               "einvoice-pipeline") / "jobs"),
        max_job_bytes=int(env.get("EINVOICE_MAX_JOB_BYTES") or 2 << 30),
        max_job_files=int(env.get("EINVOICE_MAX_JOB_FILES") or 200_000),
        job_disk_quota=int(env.get("EINVOICE_JOB_DISK_QUOTA") or 10 << 30),
        max_job_expansion=float(env.get("EINVOICE_MAX_JOB_EXPANSION") or 200),
        job_chunk=max(1, int(env.get("EINVOICE_JOB_CHUNK") or 100)),
        job_retention_days=float(env.get("EINVOICE_JOB_RETENTION_DAYS") or 30),
        warm_specs=tuple(dict.fromkeys(s.strip() for s in env["EINVOICE_WARM_SPECS"].split(",") if s.strip()))
        if (env.get("EINVOICE_WARM_SPECS") or "").strip() else None,
    )
