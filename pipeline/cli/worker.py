"""`pipeline worker [--concurrency N]`: work on jobs (POST /v1/jobs) in N processes on this machine.

With EINVOICE_DATABASE_URL=postgresql://... each process is a Procrastinate worker (pipeline.jobs.engine) taking
one chunk at a time; run as many as you like on any machines that reach the database and share the jobs
directory (EINVOICE_JOBS_DIR). Without it, the embedded pool's loop on the SQLite store of this machine
(pipeline.jobs.local), next to (or instead of) the service's own threads. Every process compiles the rule packs
once before it takes work. SIGTERM / SIGINT: the chunk in progress is finished, then the process ends.
"""
from __future__ import annotations

import os
import signal
import threading
import subprocess
import sys

from pipeline.cli.serve import configure_logging, warm_worker


def _children(n: int) -> int:
    procs = [subprocess.Popen([sys.executable, "-m", "pipeline", "worker", "--concurrency", "1"]) for _ in range(n)]

    def forward(signum, _frame):
        for p in procs:
            if p.poll() is None:
                p.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    return max(p.wait() for p in procs)


def _worker(args) -> int:
    if args.concurrency > 1:
        return _children(args.concurrency)
    configure_logging()
    from pipeline import jobs  # lazy: the job engine and the flows load only in a worker
    from pipeline.storage import open_store  # lazy: with the engine above

    store = open_store()
    warm_worker()
    if jobs.embedded(store):
        from pipeline.jobs import local  # lazy: the embedded pool's loop

        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        local.loop(lambda: store, stop)
        return 0
    from pipeline.jobs import engine  # lazy: Procrastinate loads only where PostgreSQL runs the jobs

    engine.run_worker(name=f"{os.uname().nodename}-{os.getpid()}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("worker", help="work on jobs (POST /v1/jobs) in N processes")
    p.add_argument("--concurrency", type=int, default=1, help="worker processes (default 1)")
    p.set_defaults(func=_worker)
