"""Jobs take turns: a small job submitted right behind a big one finishes long before it, on PostgreSQL
(Procrastinate: a chunk's priority is its turn in its job) and on the embedded pool (a worker lets its job go after
a chunk when another job waits), with real workers; and a worker killed while jobs take turns still gives every
document once, its credits exact.

Documents: the typical XRechnung CII invoice of the official test suite (tests.test_jobs.archive).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid

from pipeline.jobs import engine
from pipeline.jobs.chunks import chunks
from pipeline.storage.postgres import PostgresStore
from pipeline.storage.sqlite import SqliteStore
from tests.test_jobs import COST, archive, assert_exactly_once, results, submit, wait_for
from tests.test_platform_helpers import REPO, Server, cli, pg_url, serve_with_key

ENV = {"EINVOICE_JOB_CHUNK": "50", "EINVOICE_JOB_RECORD_EVERY": "0.2",
       "EINVOICE_CREDIT_COSTS": f"/v1/invoice/xrechnung/validate={COST}"}


def test_a_chunk_s_priority_is_its_turn_in_its_job():
    """Procrastinate runs the highest priority first: the n-th chunks of all jobs rank together."""
    store = PostgresStore(pg_url("jobs_turns_" + uuid.uuid4().hex[:12]))
    try:
        store.create_key("k1", "t", "test", "x", 0, None)
        for job_id, n in (("big", 1000), ("small", 5)):
            store.create_job(job_id, "k1", "validate", "{}", [f"d{i}" for i in range(n)], {},
                             {i: (i, 1) for i in range(n)}, 0,
                             enqueue=lambda cur, job_id=job_id, n=n: engine.enqueue(job_id, chunks(n, 100), cur))
        rows = store._read("SELECT args->>'job_id', (args->>'first')::int, priority FROM procrastinate_jobs "
                           "WHERE task_name = 'jobs:run_chunk' ORDER BY priority DESC, id")  # the workers' order
        assert rows[:3] == [("big", 0, 0), ("small", 0, 0), ("big", 100, -1)]
        assert [r[2] for r in rows if r[0] == "big"] == [-i for i in range(10)]
        assert engine.turn(10**9) == -engine.LAST_TURN and engine.retry_stalled.priority > 0
    finally:
        store.drop_schema()
        store.close()


def _small_behind_big(url: str, token: str, n: int) -> tuple[dict, dict]:
    """Submit an n-document job, then a 5-document one: (the big job when the small one was done, then at its
    end)."""
    big = submit(url, token, archive(n)).json()["id"]
    small = submit(url, token, archive(5)).json()["id"]
    done = wait_for(url, token, small, timeout=600)
    at_small = wait_for(url, token, big, until=lambda j: True)
    assert done["state"] == "done" and done["valid"] == 5, done
    assert_exactly_once(done, results(url, token, small), 5)
    end = wait_for(url, token, big, timeout=900)
    assert end["state"] == "done"
    assert_exactly_once(end, results(url, token, big), n)
    assert done["finishedAt"] < end["finishedAt"]
    return at_small, end


def test_a_small_job_behind_a_big_one_finishes_first_on_postgresql(tmp_path):
    schema = "jobs_turns_" + uuid.uuid4().hex[:12]
    store = PostgresStore(pg_url(schema))
    env = {"EINVOICE_DATABASE_URL": pg_url(schema), "EINVOICE_DATA_DIR": str(tmp_path / "data"),
           "EINVOICE_REDIS_URL": "", "EINVOICE_RATE_LIMIT": "100000/min", **ENV}
    node, workers = None, []
    try:
        node = Server(env, workers=1, log_path=tmp_path / "node.log")
        for i in range(2):
            workers.append(subprocess.Popen([sys.executable, "-m", "pipeline", "worker"], cwd=REPO,
                                            stdout=open(tmp_path / f"worker-{i}.log", "wb"),
                                            stderr=subprocess.STDOUT, env={**os.environ, **env}))
        token = cli(env, "keys", "create", "--name", "turns", "--env", "test", "--credits", "5000").stdout.strip()
        at_small, _ = _small_behind_big(node.url, token, 1000)
        assert at_small["done"] <= 1000 - 200, at_small  # first come, first served, it waited for (nearly) all
    finally:
        for proc in workers:
            proc.terminate()
        for proc in workers:
            proc.wait(60)
        if node is not None:
            node.stop()
        store.drop_schema()
        store.close()


def test_a_small_job_behind_a_big_one_finishes_first_on_the_embedded_pool(tmp_path):
    """`pipeline serve` with one worker process: one pool thread, which takes turns between the two jobs."""
    server, env, token = serve_with_key(tmp_path, "turns", 5000, workers=1, warm=False, env=ENV)
    try:
        at_small, _ = _small_behind_big(server.url, token, 800)
        assert at_small["done"] <= 800 - 200, at_small
        assert "its turn ends, another job waits" in (tmp_path / "serve.log").read_text(errors="replace")
    finally:
        server.stop()


def test_a_worker_killed_while_jobs_take_turns_loses_nothing_and_counts_nothing_twice(tmp_path):
    """Two jobs, the service's pool thread and a `pipeline worker` on the same SQLite store, taking turns; the
    process holding a job's lease is killed (SIGKILL): its lease runs out, the job goes on where its results end."""
    env = {**ENV, "EINVOICE_JOB_LEASE": "3"}
    server, env, token = serve_with_key(tmp_path, "turns-kill", 5000, workers=1, warm=False, env=env)
    worker = subprocess.Popen([sys.executable, "-m", "pipeline", "worker"], cwd=REPO, env={**os.environ, **env},
                              stdout=open(tmp_path / "worker.log", "wb"), stderr=subprocess.STDOUT)
    store = SqliteStore(tmp_path / "platform.sqlite3")
    try:
        n = 600
        ids = [submit(server.url, token, archive(n, invalid_every=50)).json()["id"] for _ in range(3)]
        for job_id in ids:
            wait_for(server.url, token, job_id, until=lambda j: j["done"] >= 60, timeout=600)
        holders = [o for o, in store._read("SELECT lease_owner FROM jobs WHERE lease_owner IS NOT NULL "
                                           "AND state = 'running'")]
        assert holders, "no job held"
        victim = int(holders[0].split(":")[1])
        os.kill(victim, signal.SIGKILL)  # the worker process, or a service worker (its master forks another)
        if victim == worker.pid:
            worker.wait()
        for job_id in ids:
            job = wait_for(server.url, token, job_id, timeout=900)
            assert job["state"] == "done", job
            assert_exactly_once(job, results(server.url, token, job_id), n)
            assert job["invalid"] == n // 50
            charged = sum(int(a) for a, in store._read("SELECT amount FROM ledger WHERE request_id = ? AND "
                                                        "kind = 'charge'", (job_id,)))
            assert job["creditsCharged"] == charged == n * COST
        key_id = token.split("_", 2)[2].split(".")[0]
        assert store.get_key(key_id).balance == 5000 - 3 * n * COST
    finally:
        if worker.poll() is None:
            worker.terminate()
            worker.wait(60)
        server.stop()
        store.close()
