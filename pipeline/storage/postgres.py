"""PostgreSQL backend (psycopg 3) for several service nodes sharing keys, credits and the ledger.

`EINVOICE_DATABASE_URL=postgresql://...`. The tables live in the first schema of the connection's
search_path (created if missing), so a URL with `?options=-csearch_path%3Dtenant_a` isolates a deployment or
a test run. A debit is one row-locking conditional UPDATE; under READ COMMITTED a waiting UPDATE re-checks
`balance >= n` against the committed row, so concurrent requests on several nodes never overdraw.
"""
from __future__ import annotations

import os
import threading
import time
import uuid
from contextlib import contextmanager

import psycopg
from psycopg import sql as pgsql

from pipeline.storage import StorageUnavailable
from pipeline.storage.sql import SqlStore

_V1 = [
    "CREATE TABLE api_keys (key_id TEXT PRIMARY KEY, name TEXT NOT NULL, env TEXT NOT NULL, "
    "secret_hash TEXT NOT NULL, balance BIGINT NOT NULL CHECK (balance >= 0), rate_limit INTEGER, "
    "revoked_at TIMESTAMPTZ, created_at TIMESTAMPTZ NOT NULL)",
    "CREATE TABLE reservations (id TEXT PRIMARY KEY, key_id TEXT NOT NULL REFERENCES api_keys (key_id), "
    "amount BIGINT NOT NULL, request_id TEXT, endpoint TEXT, expires_at DOUBLE PRECISION NOT NULL)",
    "CREATE INDEX reservations_expiry ON reservations (expires_at)",
    "CREATE TABLE ledger (id BIGSERIAL PRIMARY KEY, key_id TEXT NOT NULL, kind TEXT NOT NULL, "
    "amount BIGINT NOT NULL, request_id TEXT, endpoint TEXT, created_at TIMESTAMPTZ NOT NULL)",
    "CREATE INDEX ledger_by_key ON ledger (key_id, id)",
]
# v2: settling and sweeping look reservations up by key as well.
_V2 = ["CREATE INDEX reservations_by_key ON reservations (key_id)"]


# The hot path (reserve, commit, release) as single statements, sent with psycopg's pipeline mode: one round
# trip each instead of one per statement. Same semantics as the portable versions in SqlStore.
_RESERVE = (
    "WITH debit AS (UPDATE api_keys SET balance = balance - %(n)s "
    "WHERE key_id = %(key)s AND revoked_at IS NULL AND balance >= %(n)s RETURNING key_id) "
    "INSERT INTO reservations (id, key_id, amount, request_id, endpoint, expires_at) "
    "SELECT %(id)s, key_id, %(n)s, %(request_id)s, %(endpoint)s, %(expires)s FROM debit"
)
_COMMIT = (
    "WITH settled AS (DELETE FROM reservations WHERE id = %s RETURNING key_id, amount, request_id, endpoint) "
    "INSERT INTO ledger (key_id, kind, amount, request_id, endpoint, created_at) "
    "SELECT key_id, 'charge', amount, request_id, endpoint, now() FROM settled"
)
_RELEASE = (
    "WITH released AS (DELETE FROM reservations WHERE id = %s RETURNING key_id, amount) "
    "UPDATE api_keys SET balance = api_keys.balance + released.amount FROM released "
    "WHERE api_keys.key_id = released.key_id"
)


class PostgresStore(SqlStore):
    migrations = [_V1, _V2]

    def __init__(self, url: str, connect_timeout: int = 5):
        self.url = url
        self.connect_timeout = connect_timeout
        self._local = threading.local()
        self._placeholders: dict[str, str] = {}
        self._ensure_schema()
        self._migrate()

    def connection(self) -> psycopg.Connection:
        local = self._local
        conn = getattr(local, "conn", None)
        if conn is None or local.pid != os.getpid() or conn.closed or conn.broken:
            try:
                conn = psycopg.connect(self.url, autocommit=True, connect_timeout=self.connect_timeout)
            except psycopg.Error as exc:
                raise StorageUnavailable(f"PostgreSQL: {type(exc).__name__}") from exc
            local.conn, local.pid = conn, os.getpid()
        return conn

    def _sql(self, sql):
        out = self._placeholders.get(sql)
        if out is None:
            out = self._placeholders[sql] = sql.replace("?", "%s")
        return out

    @contextmanager
    def _tx(self):
        conn = self.connection()
        try:
            with conn.transaction():
                with conn.cursor() as cur:
                    yield cur
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise StorageUnavailable(f"PostgreSQL: {type(exc).__name__}") from exc

    def _one_trip(self, sql: str, params, durable: bool) -> int:
        """Run one statement in its own transaction in a single round trip; returns its row count.

        Only a charge must wait for the disk. A reservation or release lost in a database crash is harmless:
        a lost reservation leaves the balance as before and its request's commit then charges nothing; a lost
        release leaves the reservation to expire and be given back. WAL order makes both durable as soon as
        any later charge is. So no overdraw and no double charge, with one fsync per delivered document."""
        conn = self.connection()
        try:
            with conn.pipeline(), conn.transaction():
                if not durable:
                    conn.execute("SET LOCAL synchronous_commit TO OFF")
                cur = conn.execute(sql, params)
            return cur.rowcount
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise StorageUnavailable(f"PostgreSQL: {type(exc).__name__}") from exc

    def reserve(self, key_id, amount, request_id, endpoint, ttl_seconds):
        reservation_id = uuid.uuid4().hex
        n = self._one_trip(_RESERVE, {"n": int(amount), "key": key_id, "id": reservation_id, "request_id": request_id,
                                      "endpoint": endpoint, "expires": time.time() + ttl_seconds}, durable=False)
        return reservation_id if n == 1 else None

    def commit(self, reservation_id):
        return self._one_trip(_COMMIT, (reservation_id,), durable=True) == 1

    def release(self, reservation_id):
        return self._one_trip(_RELEASE, (reservation_id,), durable=False) == 1

    def _read(self, sql, params=()):
        try:
            return self.connection().execute(self._sql(sql), params).fetchall()
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise StorageUnavailable(f"PostgreSQL: {type(exc).__name__}") from exc

    def _ensure_schema(self) -> None:
        first = self._read("SHOW search_path")[0][0].split(",")[0].strip().strip('"')
        if first and first not in ("$user", "public"):
            try:
                self.connection().execute(pgsql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(pgsql.Identifier(first)))
            except psycopg.errors.UniqueViolation:
                pass  # another process created it at the same moment

    def _migration_lock(self, cur):
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.einvoice_schema'))")

    def drop_schema(self) -> None:
        """Tests: remove this store's schema and everything in it."""
        schema = self._read("SELECT current_schema()")[0][0]
        if schema and schema != "public":
            self.connection().execute(pgsql.SQL("DROP SCHEMA {} CASCADE").format(pgsql.Identifier(schema)))

    def close(self):
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            conn.close()
            self._local.conn = None
