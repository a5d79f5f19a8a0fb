"""PostgreSQL backend (psycopg 3) for several service nodes sharing keys, credits and the ledger.

`EINVOICE_DATABASE_URL=postgresql://...`. The tables live in the first schema of the connection's
search_path (created if missing), so a URL with `?options=-csearch_path%3Dtenant_a` isolates a deployment or
a test run. A debit is one row-locking conditional UPDATE; under READ COMMITTED a waiting UPDATE re-checks
`balance >= n` against the committed row, so concurrent requests on several nodes never overdraw.

Every call is bounded in time, also when the network swallows packets (where no server-side timeout helps):
- connecting: `connect_timeout` (EINVOICE_DB_CONNECT_TIMEOUT, default 2 s, psycopg's minimum);
- each statement: the server's `statement_timeout` (EINVOICE_DB_STATEMENT_TIMEOUT, 3 s) and `lock_timeout`
  (EINVOICE_DB_LOCK_TIMEOUT, 1 s), set as connection options, plus a client-side deadline half a second later:
  a watchdog thread shuts the connection's socket down, psycopg's wait ends with an OperationalError and the
  call raises StorageUnavailable;
- after a failed connect or a missed deadline the store fails fast (no network) for a cooldown of
  `connect_timeout` seconds, so that requests during an outage get their 503 at once instead of each waiting;
- a kept connection found dead (the database restarted, a proxy reset it: an error at once, not a missed
  deadline) costs no 503 where the call may run twice (reads, the limiter's window, `reserve` by its id): it runs
  once more on a fresh connection.
Reservations expire on the database's clock (`clock_timestamp()`), the one clock all nodes share.
"""
from __future__ import annotations

import heapq
import itertools
import os
import socket
import threading
import time
import uuid
from contextlib import contextmanager

import psycopg
from procrastinate.schema import SchemaManager
from psycopg import sql as pgsql

from pipeline.settings import get_settings
from pipeline.storage.inbox import INBOX_V4, INBOX_V6
from pipeline.storage.jobs import JOBS_V3, JOBS_V4, JOBS_V5, JOBS_V7, JOBS_V8, JOBS_V9
from pipeline.storage.store import StorageUnavailable
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
# v3: jobs (pipeline.storage.jobs) and Procrastinate's own tables and functions, in the same schema, so that a job's
# chunks are enqueued in the transaction that holds its credits.
_V3 = JOBS_V3 + [SchemaManager.get_schema()]
# A job's submission inserts a row per document: bounded as a whole by this, each statement still by its timeout.
LONG_TX_SECONDS = 120


# The hot path (reserve, commit, release) as single statements, sent with psycopg's pipeline mode: one round
# trip each instead of one per statement. Same semantics as the portable versions in SqlStore.
# Reservations expire on the database's clock, which every node shares: on each node's own clock, a node set a
# few minutes ahead gave back the other nodes' reservations while their requests ran (documents delivered
# uncharged), and one set behind kept its own reservations past their TTL.
_EPOCH = "extract(epoch FROM clock_timestamp())::double precision"
_RESERVE = (
    "WITH debit AS (UPDATE api_keys SET balance = balance - %(n)s "
    "WHERE key_id = %(key)s AND revoked_at IS NULL AND balance >= %(n)s RETURNING key_id) "
    "INSERT INTO reservations (id, key_id, amount, request_id, endpoint, expires_at) "
    "SELECT %(id)s, key_id, %(n)s, %(request_id)s, %(endpoint)s, " + _EPOCH + " + %(ttl)s FROM debit"
)
_RELEASE_EXPIRED = (
    "WITH expired AS (DELETE FROM reservations WHERE expires_at < " + _EPOCH + " RETURNING key_id, amount), "
    "owed AS (SELECT key_id, SUM(amount) AS amount, COUNT(*) AS n FROM expired GROUP BY key_id), "
    "given AS (UPDATE api_keys SET balance = api_keys.balance + owed.amount FROM owed "
    "WHERE api_keys.key_id = owed.key_id RETURNING owed.n) "
    "SELECT COALESCE(SUM(n), 0) FROM given"
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


class _Watchdog:
    """Client-side deadlines: one daemon thread per process shuts down the socket of a connection whose call
    outlives its deadline (psycopg's blocking wait then fails at once). Armed and disarmed around every call."""

    def __init__(self):
        self._cond = threading.Condition()
        self._armed: dict[int, tuple[float, int]] = {}
        self._heap: list[tuple[float, int]] = []
        self._fired: set[int] = set()
        self._ids = itertools.count()
        self._pid = None

    def _start(self) -> None:
        if self._pid != os.getpid():  # threads do not survive fork: one per process, started on first use
            self._armed.clear()
            self._heap.clear()
            self._fired.clear()
            self._pid = os.getpid()
            threading.Thread(target=self._run, name="pg-deadline", daemon=True).start()

    def arm(self, fd: int, seconds: float) -> int:
        with self._cond:
            self._start()
            token = next(self._ids)
            deadline = time.monotonic() + seconds
            self._armed[token] = (deadline, fd)
            # Woken only when this deadline comes first: the thread otherwise sleeps until the earliest one
            # (deadlines of one timeout arrive in order). Waking it on every call cost a thread switch per
            # query, ~0.4 ms of CPU per request under load (bench/README.md).
            if not self._heap or deadline < self._heap[0][0]:
                self._cond.notify()
            heapq.heappush(self._heap, (deadline, token))
            return token

    def disarm(self, token: int) -> bool:
        """True if the deadline had already fired (the connection's socket is shut down)."""
        with self._cond:
            self._armed.pop(token, None)
            if token in self._fired:
                self._fired.discard(token)
                return True
            return False

    def _run(self) -> None:
        with self._cond:
            while True:
                while self._heap and self._heap[0][1] not in self._armed:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                deadline, token = self._heap[0]
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
                _, fd = self._armed.pop(token)
                self._fired.add(token)
                try:  # shutdown acts on the socket behind every descriptor of it; the dup is ours to close
                    with socket.socket(fileno=os.dup(fd)) as sock:
                        sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


_watchdog = _Watchdog()


class _DeadConnection(StorageUnavailable):
    """A connection kept from an earlier call was found dead (the server restarted or a proxy reset it), not a
    missed deadline: an idempotent call may run once more on a fresh one (`PostgresStore._again_if_dead`)."""


class PostgresStore(SqlStore):
    # v4: a document's message, the inbox (pipeline.storage.inbox); v5: the jobs' indeterminate documents;
    # v6: the inbox's message keys; v7: the order of a job's results; v9: the jobs' unchecked documents
    migrations = [_V1, _V2, _V3, JOBS_V4 + INBOX_V4, JOBS_V5, INBOX_V6, JOBS_V7, JOBS_V8, JOBS_V9]

    def __init__(self, url: str, connect_timeout: float | None = None, statement_timeout: float | None = None,
                 lock_timeout: float | None = None):
        settings = get_settings()
        self.url = url
        self.connect_timeout = max(2, int(connect_timeout or settings.db_connect_timeout))
        self.statement_timeout = float(statement_timeout or settings.db_statement_timeout)
        self.lock_timeout = float(lock_timeout or settings.db_lock_timeout)
        self._local = threading.local()
        self._placeholders: dict[str, str] = {}
        self._down_until = 0.0
        self._ensure_schema()
        self._migrate()

    def _options(self) -> str:
        from psycopg.conninfo import conninfo_to_dict

        given = conninfo_to_dict(self.url).get("options") or ""
        ms = lambda seconds: int(seconds * 1000)  # noqa: E731
        return (f"{given} -c statement_timeout={ms(self.statement_timeout)} -c lock_timeout={ms(self.lock_timeout)}"
                f" -c idle_in_transaction_session_timeout={ms(self.statement_timeout * 4)}").strip()

    def connection(self) -> psycopg.Connection:
        local = self._local
        conn = getattr(local, "conn", None)
        if conn is None or local.pid != os.getpid() or conn.closed or conn.broken:
            if time.monotonic() < self._down_until:
                raise StorageUnavailable("PostgreSQL: unreachable a moment ago; not retried yet")
            try:
                conn = psycopg.connect(self.url, autocommit=True, connect_timeout=self.connect_timeout,
                                       options=self._options())
            except psycopg.Error as exc:
                self._down_until = time.monotonic() + self.connect_timeout
                raise StorageUnavailable(f"PostgreSQL: {type(exc).__name__}") from exc
            local.conn, local.pid = conn, os.getpid()
        return conn

    def drop_connection(self) -> None:
        """Forget this thread's connection and the fail-fast cooldown: the next call connects afresh."""
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        self._down_until = 0.0
        if conn is not None and getattr(self._local, "pid", None) == os.getpid():
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - a broken connection may fail to close; it is gone either way
                pass

    @contextmanager
    def _bounded(self, timeout: float | None = None):
        """A connection for one call that must finish within the statement timeout (+0.5 s) or fail."""
        kept = getattr(self._local, "conn", None)
        reused = (kept is not None and getattr(self._local, "pid", None) == os.getpid() and not kept.closed
                  and not kept.broken)
        conn = self.connection()
        seconds = timeout if timeout is not None else self.statement_timeout + 0.5
        token = _watchdog.arm(conn.pgconn.socket, seconds)
        fired = False
        try:
            yield conn
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            fired = _watchdog.disarm(token)
            if fired:
                self._down_until = time.monotonic() + self.connect_timeout
                self._discard(conn)
                raise StorageUnavailable(f"PostgreSQL: no answer within {seconds:g} s") from exc
            if reused and conn.broken:
                raise _DeadConnection(f"PostgreSQL: {type(exc).__name__}") from exc
            raise StorageUnavailable(f"PostgreSQL: {type(exc).__name__}") from exc
        finally:
            if not fired and _watchdog.disarm(token):
                self._discard(conn)  # it fired just as the call finished: the socket is shut down

    def _discard(self, conn) -> None:
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None
        try:
            conn.close()
        except Exception:  # noqa: BLE001
            pass

    def _sql(self, sql):
        out = self._placeholders.get(sql)
        if out is None:
            out = self._placeholders[sql] = sql.replace("?", "%s")
        return out

    @contextmanager
    def _tx(self, long=False):
        with self._bounded(LONG_TX_SECONDS if long else None) as conn:
            with conn.transaction():
                with conn.cursor() as cur:
                    yield cur

    def _one_trip(self, sql: str, params, durable: bool) -> int:
        """Run one statement in its own transaction in a single round trip; returns its row count.

        Only a charge must wait for the disk. A reservation or release lost in a database crash is harmless:
        a lost reservation leaves the balance as before and its request's commit then charges nothing; a lost
        release leaves the reservation to expire and be given back. WAL order makes both durable as soon as
        any later charge is. So no overdraw and no double charge, with one fsync per delivered document."""
        with self._bounded() as conn:
            with conn.pipeline(), conn.transaction():
                if not durable:
                    conn.execute("SET LOCAL synchronous_commit TO OFF")
                cur = conn.execute(sql, params)
            return cur.rowcount

    def _again_if_dead(self, call):
        """`call()`, and once more on a fresh connection when it failed on a kept connection that had died. After
        a restart of the database every worker's kept connection is dead: each worker's next request got a 503
        although the database answered again. Only for calls that may run twice: reads, the rate limiter's hit
        (at worst one hit counted twice, on the strict side) and `reserve` (idempotent by its id)."""
        try:
            return call()
        except _DeadConnection:
            return call()

    def reserve(self, key_id, amount, request_id, endpoint, ttl_seconds):
        reservation_id = uuid.uuid4().hex
        params = {"n": int(amount), "key": key_id, "id": reservation_id, "request_id": request_id,
                  "endpoint": endpoint, "ttl": float(ttl_seconds)}
        try:
            n = self._one_trip(_RESERVE, params, durable=False)
        except _DeadConnection:  # once more on a fresh connection (`_again_if_dead`), by the same id
            try:
                n = self._one_trip(_RESERVE, params, durable=False)
            except psycopg.errors.UniqueViolation:
                n = 1  # the first attempt's answer was lost, not its reservation: the id is taken by it
        return reservation_id if n == 1 else None

    def commit(self, reservation_id):
        return self._one_trip(_COMMIT, (reservation_id,), durable=True) == 1

    def release(self, reservation_id):
        return self._one_trip(_RELEASE, (reservation_id,), durable=False) == 1

    def release_expired(self):
        with self._tx() as cur:
            cur.execute(_RELEASE_EXPIRED)
            return int(cur.fetchone()[0])

    def _read(self, sql, params=(), timeout: float | None = None):
        def once():
            with self._bounded(timeout) as conn:
                return conn.execute(self._sql(sql), params).fetchall()
        return self._again_if_dead(once)

    def ping(self, timeout: float | None = None):
        self._read("SELECT 1", timeout=timeout)

    def _ensure_schema(self) -> None:
        first = self._read("SHOW search_path")[0][0].split(",")[0].strip().strip('"')
        if first and first not in ("$user", "public"):
            try:
                with self._bounded() as conn:
                    conn.execute(pgsql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(pgsql.Identifier(first)))
            except psycopg.errors.UniqueViolation:
                pass  # another process created it at the same moment

    def _migration_lock(self, cur):
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.einvoice_schema'))")
        # an upgrade may rewrite every row of a table (v7 numbers the jobs' results): bounded as a job's submission
        cur.execute(f"SET LOCAL statement_timeout = '{LONG_TX_SECONDS}s'")

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
