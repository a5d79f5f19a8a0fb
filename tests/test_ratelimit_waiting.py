"""A hit that waited for the database's lock counts in the window another hit opened meanwhile. The hit's clock is
read after the wait: read before it, the window looked as if it ended further away than its length (the rule for a
clock set back) and was restarted, letting 12 of 30 concurrent hits through a limit of 10."""
from __future__ import annotations

import sqlite3
import threading
import time

import psycopg
import pytest

from pipeline.storage.ratelimit import PostgresLimiter, SqliteLimiter
from test_platform_helpers import make_store


@pytest.fixture(params=["sqlite", "postgres"])
def limiter(request, tmp_path):
    store = make_store(request.param, tmp_path)
    limiter = SqliteLimiter(store) if request.param == "sqlite" else PostgresLimiter(store)
    limiter.hit("warm", 1, 60)  # the table exists before the lock is taken
    yield limiter
    if request.param == "postgres":
        store.drop_schema()
    store.close()


def _other_writer(limiter):
    """A second connection that opens the bucket's window inside a transaction the hit must wait for."""
    if isinstance(limiter, SqliteLimiter):
        conn = sqlite3.connect(limiter.store.path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        return conn, "INSERT INTO rate_windows (bucket, window_end, hits) VALUES (?, ?, 5)", "COMMIT"
    conn = psycopg.connect(limiter.store.url)
    return conn, "INSERT INTO rate_windows (bucket, window_end, hits) VALUES (%s, %s, 5)", "COMMIT"


def test_a_hit_that_waited_counts_in_the_window_opened_meanwhile(limiter):
    conn, insert, commit = _other_writer(limiter)
    if not isinstance(limiter, SqliteLimiter):
        conn.execute(insert, ("b", time.time() + 0.4 + 60))  # the row is locked until the commit
    answers = []
    waiting = threading.Thread(target=lambda: answers.append(limiter.hit("b", 10, 60)))
    waiting.start()
    time.sleep(0.4)
    if isinstance(limiter, SqliteLimiter):
        conn.execute(insert, ("b", time.time() + 60))
    conn.execute(commit)
    waiting.join(5)
    conn.close()
    (decision,) = answers
    assert decision.remaining == 10 - 6 and decision.allowed
    assert 59 <= decision.reset <= 60
