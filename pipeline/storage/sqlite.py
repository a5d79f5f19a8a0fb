"""SQLite backend (the embedded default): one file, WAL, `BEGIN IMMEDIATE` for every write transaction.

Connections are per thread and per process (a connection must not cross fork), opened lazily.
"""
from __future__ import annotations

import os
import sqlite3
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from pipeline.storage.inbox import INBOX_V4, INBOX_V6
from pipeline.storage.jobs import JOBS_V3, JOBS_V4, JOBS_V5, JOBS_V7, JOBS_V8, JOBS_V9
from pipeline.storage.store import StorageUnavailable
from pipeline.storage.sql import SqlStore

_V1 = [
    "CREATE TABLE api_keys (key_id TEXT PRIMARY KEY, name TEXT NOT NULL, env TEXT NOT NULL, "
    "secret_hash TEXT NOT NULL, balance INTEGER NOT NULL CHECK (balance >= 0), rate_limit INTEGER, "
    "revoked_at TEXT, created_at TEXT NOT NULL)",
    "CREATE TABLE reservations (id TEXT PRIMARY KEY, key_id TEXT NOT NULL REFERENCES api_keys (key_id), "
    "amount INTEGER NOT NULL, request_id TEXT, endpoint TEXT, expires_at REAL NOT NULL)",
    "CREATE INDEX reservations_expiry ON reservations (expires_at)",
    "CREATE TABLE ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, key_id TEXT NOT NULL, kind TEXT NOT NULL, "
    "amount INTEGER NOT NULL, request_id TEXT, endpoint TEXT, created_at TEXT NOT NULL)",
    "CREATE INDEX ledger_by_key ON ledger (key_id, id)",
]
# v2: fixed rate-limit windows, so that the workers of one node share their limits (pipeline.storage.ratelimit).
_V2 = [
    "CREATE TABLE rate_windows (bucket TEXT PRIMARY KEY, window_end REAL NOT NULL, hits INTEGER NOT NULL)",
]


class SqliteStore(SqlStore):
    # v3: jobs (pipeline.storage.jobs); v4: a document's message, the inbox's messages (pipeline.storage.inbox);
    # v5: the jobs' indeterminate documents; v6: the inbox's message keys; v7: the order of a job's results;
    # v9: the jobs' unchecked documents (read, not validated)
    migrations = [_V1, _V2, JOBS_V3, JOBS_V4 + INBOX_V4, JOBS_V5, INBOX_V6, JOBS_V7, JOBS_V8, JOBS_V9]

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._migrate()

    def connection(self) -> sqlite3.Connection:
        local = self._local
        if getattr(local, "pid", None) != os.getpid():
            try:
                conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")  # durable across process crashes; WAL keeps it atomic
            except sqlite3.Error as exc:
                raise StorageUnavailable(f"SQLite database {self.path.name}: {exc}") from exc
            local.conn, local.pid = conn, os.getpid()
        return local.conn

    @contextmanager
    def _tx(self, long=False):
        conn = self.connection()
        cur = conn.cursor()
        try:
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:  # locked past the timeout, disk full, file gone...
            raise StorageUnavailable(f"SQLite database {self.path.name}: {exc}") from exc
        finally:
            cur.close()

    def _read(self, sql, params=()):
        try:
            return self.connection().execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            raise StorageUnavailable(f"SQLite database {self.path.name}: {exc}") from exc

    def _now(self):
        return datetime.now(timezone.utc).isoformat()

    def _migration_lock(self, cur):
        pass  # BEGIN IMMEDIATE already holds the database's write lock

    def close(self):
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            conn.close()
            self._local.pid = None
