"""The credit and key logic both SQL backends share; a backend supplies connections, transactions and DDL.

Statements are written with `?` placeholders; a backend with another paramstyle rewrites them once.
The debit is a single conditional UPDATE (`balance = balance - n WHERE balance >= n`) inside a write
transaction, so two requests can never both spend the last credit and a balance never goes below zero.
PostgreSQL replaces the hot path (reserve, commit, release) with one-round-trip equivalents.
"""
from __future__ import annotations

import time
import uuid
from abc import abstractmethod
from datetime import datetime, timezone
from typing import Iterator

from pipeline.storage.inbox import InboxTables
from pipeline.storage.jobs import JobTables
from pipeline.storage.store import MAX_BALANCE, ApiKey, LedgerEntry, Store

_KEY_COLUMNS = "key_id, name, env, secret_hash, balance, rate_limit, revoked_at, created_at"


class SqlStore(JobTables, InboxTables, Store):
    # Ordered migrations: migrations[i] brings the schema from version i to i + 1. Never edit a released one;
    # append a new one instead.
    migrations: list[list[str]] = []

    @abstractmethod
    def _tx(self, long: bool = False) -> Iterator:
        """Context manager: a cursor inside a write transaction (serialised against other debits). `long`: a
        transaction of many statements (a job's submission) that may outlast one statement's deadline."""

    @abstractmethod
    def _read(self, sql: str, params: tuple = ()) -> list[tuple]:
        """Run one read-only statement outside an explicit transaction."""

    def _sql(self, sql: str) -> str:
        return sql

    def _now(self):
        return datetime.now(timezone.utc)

    @staticmethod
    def _ts(value) -> str:
        return value.isoformat() if isinstance(value, datetime) else str(value)

    # -- schema -----------------------------------------------------------------------------------------------

    @abstractmethod
    def _migration_lock(self, cur) -> None:
        """Inside the migration transaction: make concurrent starters wait for each other."""

    def _migrate(self) -> None:
        with self._tx(long=True) as cur:
            self._migration_lock(cur)
            cur.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
            cur.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version")
            current = cur.fetchone()[0]
            for version, statements in enumerate(self.migrations[current:], start=current + 1):
                for statement in statements:
                    cur.execute(statement)
                cur.execute(self._sql("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)"),
                            (version, self._ts(self._now())))

    def schema_version(self) -> int:
        return self._read("SELECT COALESCE(MAX(version), 0) FROM schema_version")[0][0]

    # -- keys -------------------------------------------------------------------------------------------------

    def _key(self, row) -> ApiKey:
        key_id, name, env, secret_hash, balance, rate_limit, revoked_at, created_at = row
        return ApiKey(key_id, name, env, secret_hash, int(balance), rate_limit, revoked_at is not None,
                      self._ts(created_at))

    def create_key(self, key_id, name, env, secret_hash, credits, rate_limit):
        if not 0 <= int(credits) <= MAX_BALANCE:
            raise ValueError(f"credits must be between 0 and {MAX_BALANCE}")
        now = self._now()
        with self._tx() as cur:
            cur.execute(self._sql(f"INSERT INTO api_keys ({_KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, NULL, ?)"),
                        (key_id, name, env, secret_hash, int(credits), rate_limit, now))
            if credits:
                self._ledger(cur, key_id, "credit", int(credits), None, None, now)
        return self.get_key(key_id)

    def get_key(self, key_id):
        rows = self._read(f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE key_id = ?", (key_id,))
        return self._key(rows[0]) if rows else None

    def list_keys(self):
        return [self._key(r) for r in self._read(f"SELECT {_KEY_COLUMNS} FROM api_keys ORDER BY created_at, key_id")]

    def revoke_key(self, key_id):
        with self._tx() as cur:
            cur.execute(self._sql("UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL"),
                        (self._now(), key_id))
            return cur.rowcount == 1

    def add_credits(self, key_id, amount):
        if abs(int(amount)) > MAX_BALANCE:
            return None  # no balance can take it (and the sum below must not overflow)
        with self._tx() as cur:
            cur.execute(self._sql("UPDATE api_keys SET balance = balance + ? "
                                  "WHERE key_id = ? AND balance + ? BETWEEN 0 AND ?"),
                        (int(amount), key_id, int(amount), MAX_BALANCE))
            if cur.rowcount != 1:
                return None
            self._ledger(cur, key_id, "credit", int(amount), None, None, self._now())
            cur.execute(self._sql("SELECT balance FROM api_keys WHERE key_id = ?"), (key_id,))
            return int(cur.fetchone()[0])

    # -- credits ----------------------------------------------------------------------------------------------

    def _ledger(self, cur, key_id, kind, amount, request_id, endpoint, when) -> None:
        cur.execute(self._sql("INSERT INTO ledger (key_id, kind, amount, request_id, endpoint, created_at) "
                              "VALUES (?, ?, ?, ?, ?, ?)"), (key_id, kind, amount, request_id, endpoint, when))

    def reserve(self, key_id, amount, request_id, endpoint, ttl_seconds):
        reservation_id = uuid.uuid4().hex
        with self._tx() as cur:
            cur.execute(self._sql("UPDATE api_keys SET balance = balance - ? "
                                  "WHERE key_id = ? AND revoked_at IS NULL AND balance >= ?"),
                        (int(amount), key_id, int(amount)))
            if cur.rowcount != 1:
                return None
            cur.execute(self._sql("INSERT INTO reservations (id, key_id, amount, request_id, endpoint, expires_at) "
                                  "VALUES (?, ?, ?, ?, ?, ?)"),
                        (reservation_id, key_id, int(amount), request_id, endpoint, time.time() + ttl_seconds))
        return reservation_id

    def commit(self, reservation_id):
        with self._tx() as cur:
            cur.execute(self._sql("DELETE FROM reservations WHERE id = ? RETURNING key_id, amount, request_id, endpoint"),
                        (reservation_id,))
            row = cur.fetchone()
            if row is None:  # already expired and given back: the request outlived its reservation
                return False
            key_id, amount, request_id, endpoint = row
            self._ledger(cur, key_id, "charge", int(amount), request_id, endpoint, self._now())
        return True

    def _give_back(self, cur, rows) -> None:
        for key_id, amount in rows:
            cur.execute(self._sql("UPDATE api_keys SET balance = balance + ? WHERE key_id = ?"), (int(amount), key_id))

    def release(self, reservation_id):
        with self._tx() as cur:
            cur.execute(self._sql("DELETE FROM reservations WHERE id = ? RETURNING key_id, amount"), (reservation_id,))
            rows = cur.fetchall()
            self._give_back(cur, rows)
        return bool(rows)

    def release_expired(self):
        with self._tx() as cur:
            cur.execute(self._sql("DELETE FROM reservations WHERE expires_at < ? RETURNING key_id, amount"), (time.time(),))
            rows = cur.fetchall()
            self._give_back(cur, rows)
        return len(rows)

    def pending(self, key_id: str) -> int:
        """Credits currently held by unsettled reservations of a key."""
        return int(self._read("SELECT COALESCE(SUM(amount), 0) FROM reservations WHERE key_id = ?", (key_id,))[0][0])

    def usage(self, key_id, limit=1000):
        """The key's latest `limit` ledger rows, oldest first."""
        rows = self._read("SELECT key_id, kind, amount, request_id, endpoint, created_at FROM ledger "
                          "WHERE key_id = ? ORDER BY id DESC LIMIT ?", (key_id, int(limit)))
        return [LedgerEntry(k, kind, int(a), rid, ep, self._ts(ts)) for k, kind, a, rid, ep, ts in reversed(rows)]

    def ping(self, timeout=None):
        self._read("SELECT 1")
