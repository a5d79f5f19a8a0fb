"""Rate limiting behind one small interface: `Limiter.hit(bucket, limit, window) -> Decision`.

Fixed windows: a bucket's window starts with its first hit and lasts `window` seconds; every hit in it
counts (rejected ones too, so hammering does not help). A window that ends further away than its length (the
wall clock was set back, or the limit's unit shortened from N/h to N/min) starts afresh: kept, it refused a key
for the window plus however far the clock went back, with a Retry-After to match. Backends:
- `RedisLimiter` (`EINVOICE_REDIS_URL`): one atomic Lua call (INCR, PEXPIRE on the first hit, PTTL); the
  window lives in Redis, so every node and worker shares it and clocks do not matter. A kept connection found
  closed (Redis restarted) is replaced and the hit sent once more; a timeout is not retried.
- `SqliteLimiter` (default with the SQLite store): one atomic UPSERT in the store's file; shared by the
  workers of one node.
- `PostgresLimiter` (PostgreSQL without Redis): the same UPSERT in the shared database, on the database's
  clock, so every node and worker shares the windows. One extra round trip per request; Redis is cheaper.
- `MemoryLimiter`: per worker process (a node with W workers lets a key through up to W x limit); only in
  tests and when given explicitly, never chosen by the service (a shared store must share its limits).
A backend that cannot answer raises `LimiterUnavailable`; the service then fails closed (503).
"""
from __future__ import annotations

import math
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass

from pipeline.settings import Settings, get_settings
from pipeline.storage.sqlite import SqliteStore
from pipeline.storage.store import StorageUnavailable, Store


@dataclass(frozen=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset: int  # whole seconds until the window ends (>= 1)


class LimiterUnavailable(Exception):
    """The limiter's backend cannot be read: fail closed."""


def _decision(hits: int, limit: int, seconds_left: float) -> Decision:
    # rounded first: (now + window) - now can come out a hair above the window, and ceil made 60 s a reset of 61
    return Decision(hits <= limit, limit, max(0, limit - hits), max(1, math.ceil(round(seconds_left, 6))))


class Limiter(ABC):
    @abstractmethod
    def hit(self, bucket: str, limit: int, window: float) -> Decision: ...

    def ping(self, timeout: float | None = None) -> None:
        """Raise LimiterUnavailable unless the backend answers (Redis: within its socket timeout, 0.5 s)."""


class MemoryLimiter(Limiter):
    def __init__(self):
        self._lock = threading.Lock()
        self._windows: dict[str, list] = {}  # bucket -> [window_end, hits]

    def hit(self, bucket, limit, window):
        now = time.monotonic()
        with self._lock:
            w = self._windows.get(bucket)
            if w is None or w[0] <= now:
                if len(self._windows) > 100_000:  # drop finished windows so idle keys do not pile up
                    self._windows = {b: v for b, v in self._windows.items() if v[0] > now}
                w = self._windows[bucket] = [now + window, 0]
            w[1] += 1
            return _decision(w[1], limit, w[0] - now)


class SqliteLimiter(Limiter):
    # The clock is read inside the statement, after the write lock is taken (SQLite's 'now' holds for one step):
    # read before the wait, a window opened meanwhile seemed to end further away than its length and restarted.
    _NOW = "((julianday('now') - 2440587.5) * 86400.0)"
    _UPSERT = (
        "INSERT INTO rate_windows (bucket, window_end, hits) VALUES (:bucket, {now} + :window, 1) "
        "ON CONFLICT (bucket) DO UPDATE SET "
        "hits = CASE WHEN rate_windows.window_end <= {now} OR rate_windows.window_end > {now} + :window "
        "THEN 1 ELSE rate_windows.hits + 1 END, "
        "window_end = CASE WHEN rate_windows.window_end <= {now} OR rate_windows.window_end > {now} + :window "
        "THEN excluded.window_end ELSE rate_windows.window_end END "
        "RETURNING hits, window_end - {now}"
    ).format(now=_NOW)

    def __init__(self, store):
        self.store = store  # a SqliteStore: the table comes with its schema (migration 2)

    def hit(self, bucket, limit, window):
        try:
            with _waiting_at_most(self.store.connection(), BUSY_SECONDS) as conn:
                hits, seconds_left = conn.execute(
                    self._UPSERT, {"bucket": bucket, "window": float(window)}).fetchone()
        except (sqlite3.Error, StorageUnavailable) as exc:
            raise LimiterUnavailable(f"SQLite rate limiter: {exc}") from exc
        return _decision(hits, limit, seconds_left)

    def ping(self, timeout=None):
        """Whether a window could be written now: a read alone passes under WAL while another process holds the
        write lock, and every request would then wait for it."""
        try:
            with _waiting_at_most(self.store.connection(), timeout or BUSY_SECONDS) as conn:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("ROLLBACK")
        except (sqlite3.Error, StorageUnavailable) as exc:
            raise LimiterUnavailable(f"SQLite rate limiter: {exc}") from exc


# How long a request waits for SQLite's write lock before the limiter answers 503 (the store's own writes wait up
# to 30 s: a long job result batch is worth waiting for, a rate-limit window is not).
BUSY_SECONDS = 1.0


@contextmanager
def _waiting_at_most(conn: sqlite3.Connection, seconds: float):
    previous = conn.execute("PRAGMA busy_timeout").fetchone()[0]
    conn.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")
    try:
        yield conn
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(previous)}")


class PostgresLimiter(Limiter):
    """Windows in an UNLOGGED table of the store's schema (`rate_windows`). It is limiter state, not ledger
    data: losing it in a database crash only restarts the windows, so it is created here on first use
    (IF NOT EXISTS) rather than by the store's versioned migrations."""

    _TABLE = ("CREATE UNLOGGED TABLE IF NOT EXISTS rate_windows (bucket TEXT PRIMARY KEY, "
              "window_end DOUBLE PRECISION NOT NULL, hits INTEGER NOT NULL)")
    # The clock is read in the conflict branch, after the row lock is granted (a clock read before the wait made a
    # window opened meanwhile look as if it ended further away than its length, and restarted it).
    _UPSERT = (
        "INSERT INTO rate_windows AS w (bucket, window_end, hits) "
        "VALUES (%(bucket)s, extract(epoch FROM clock_timestamp())::double precision + %(window)s, 1) "
        "ON CONFLICT (bucket) DO UPDATE SET (hits, window_end) = ("
        "SELECT CASE WHEN fresh THEN 1 ELSE w.hits + 1 END, CASE WHEN fresh THEN now + %(window)s "
        "ELSE w.window_end END FROM (SELECT now, w.window_end <= now OR w.window_end > now + %(window)s AS fresh "
        "FROM (SELECT extract(epoch FROM clock_timestamp())::double precision AS now) c) f) "
        "RETURNING hits, window_end - extract(epoch FROM clock_timestamp())::double precision"
    )

    def __init__(self, store):
        self.store = store  # a PostgresStore
        self._ready = False

    def _ensure(self) -> None:
        if not self._ready:
            import psycopg  # only a PostgreSQL deployment loads psycopg

            try:
                with self.store._bounded() as conn:
                    conn.execute(self._TABLE)
            except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateObject):
                pass  # another process created it at the same moment
            self._ready = True

    def hit(self, bucket, limit, window):
        try:
            self._ensure()
            rows = self.store._read(self._UPSERT, {"bucket": bucket, "window": float(window)})
        except StorageUnavailable as exc:
            raise LimiterUnavailable(f"PostgreSQL rate limiter: {exc}") from exc
        hits, seconds_left = rows[0]
        return _decision(int(hits), limit, float(seconds_left))

    def ping(self, timeout: float | None = None):
        try:
            self._ensure()
            self.store._read("SELECT 1 FROM rate_windows LIMIT 1", timeout=timeout)
        except StorageUnavailable as exc:
            raise LimiterUnavailable(f"PostgreSQL rate limiter: {exc}") from exc


_LUA = """
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {hits, ttl}
"""


class RedisLimiter(Limiter):
    def __init__(self, url: str, prefix: str = "einvoice:rl:", timeout: float = 0.5):
        import redis

        self._errors = (redis.RedisError, OSError)
        self._timeouts = (redis.TimeoutError, TimeoutError)
        self._lost = (redis.ConnectionError, ConnectionError)
        # the URL is read now (a malformed one is a configuration error); nothing connects before the first hit
        self._pool = redis.ConnectionPool.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        self._client = self._script = None
        self.prefix = prefix

    @property
    def client(self):
        """One connection per worker process instead of a pool: a worker asks one thing at a time, and the pool's
        checkout and return were a third of the client's CPU per hit (63 -> 42 us; with hiredis 36 us). Opened on
        first use (a single-connection client connects when it is made), again after a failed connect."""
        if self._client is None:
            import redis

            client = redis.Redis(connection_pool=self._pool, single_connection_client=True)
            self._script = client.register_script(_LUA)
            self._client = client
        return self._client

    def _call(self, call):
        """`call()` on the kept connection; once more on a fresh one when that was found closed (Redis restarted, a
        proxy reset it), else each worker's next request (and /readyz) after a restart was a 503 although Redis
        answered again. A timeout is not retried (a stalled Redis: no second wait). At worst one hit is counted
        twice (the script ran, its answer was lost): the strict side."""
        for attempt in (1, 2):
            try:
                self.client
                return call()
            except self._timeouts as exc:
                raise LimiterUnavailable(f"Redis rate limiter: {type(exc).__name__}") from exc
            except self._lost as exc:
                if attempt == 2:
                    raise LimiterUnavailable(f"Redis rate limiter: {type(exc).__name__}") from exc
                if getattr(self._client, "connection", None) is not None:
                    self._client.connection.disconnect()
            except self._errors as exc:
                raise LimiterUnavailable(f"Redis rate limiter: {type(exc).__name__}") from exc

    def hit(self, bucket, limit, window):
        hits, ttl_ms = self._call(lambda: self._script(keys=[self.prefix + bucket], args=[int(window * 1000)]))
        return _decision(int(hits), limit, int(ttl_ms) / 1000)

    def ping(self, timeout=None):
        self._call(lambda: self.client.ping())


def open_limiter(store: Store | None = None, settings: Settings | None = None) -> Limiter:
    settings = settings or get_settings()
    if settings.redis_url:
        return RedisLimiter(settings.redis_url)
    from pipeline.storage.postgres import PostgresStore  # lazy: psycopg loads only where a store may be PostgreSQL

    if isinstance(store, SqliteStore):
        return SqliteLimiter(store)
    if isinstance(store, PostgresStore):
        return PostgresLimiter(store)
    # No store (it could not be opened): no limiter either. Requests fail closed with 503 until it opens.
    raise LimiterUnavailable("the rate limiter lives in the store, which is not open")
