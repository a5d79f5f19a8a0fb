"""Rate limiting behind one small interface: `Limiter.hit(bucket, limit, window) -> Decision`.

Fixed windows: a bucket's window starts with its first hit and lasts `window` seconds; every hit in it
counts (rejected ones too, so hammering does not help). Backends:
- `RedisLimiter` (`EINVOICE_REDIS_URL`): one atomic Lua call (INCR, PEXPIRE on the first hit, PTTL); the
  window lives in Redis, so every node and worker shares it and clocks do not matter.
- `SqliteLimiter` (default with the SQLite store): one atomic UPSERT in the store's file; shared by the
  workers of one node.
- `MemoryLimiter`: per worker process (a node with W workers lets a key through up to W x limit); used with
  PostgreSQL but without Redis, and in tests.
A backend that cannot answer raises `LimiterUnavailable`; the service then fails closed (503).
"""
from __future__ import annotations

import math
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass

from pipeline.settings import Settings, get_settings
from pipeline.storage import Store, StorageUnavailable


@dataclass(frozen=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset: int  # whole seconds until the window ends (>= 1)


class LimiterUnavailable(Exception):
    """The limiter's backend cannot be read: fail closed."""


def _decision(hits: int, limit: int, seconds_left: float) -> Decision:
    return Decision(hits <= limit, limit, max(0, limit - hits), max(1, math.ceil(seconds_left)))


class Limiter(ABC):
    @abstractmethod
    def hit(self, bucket: str, limit: int, window: float) -> Decision: ...

    def ping(self) -> None:
        """Raise LimiterUnavailable unless the backend answers."""


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
    _UPSERT = (
        "INSERT INTO rate_windows (bucket, window_end, hits) VALUES (:bucket, :now + :window, 1) "
        "ON CONFLICT (bucket) DO UPDATE SET "
        "hits = CASE WHEN rate_windows.window_end <= :now THEN 1 ELSE rate_windows.hits + 1 END, "
        "window_end = CASE WHEN rate_windows.window_end <= :now THEN excluded.window_end ELSE rate_windows.window_end END "
        "RETURNING hits, window_end"
    )

    def __init__(self, store):
        self.store = store  # a SqliteStore: the table comes with its schema (migration 2)

    def hit(self, bucket, limit, window):
        now = time.time()
        try:
            hits, window_end = self.store.connection().execute(
                self._UPSERT, {"bucket": bucket, "now": now, "window": float(window)}).fetchone()
        except (sqlite3.Error, StorageUnavailable) as exc:
            raise LimiterUnavailable(f"SQLite rate limiter: {exc}") from exc
        return _decision(hits, limit, window_end - now)


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
        self.client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        self.prefix = prefix
        self._script = self.client.register_script(_LUA)

    def hit(self, bucket, limit, window):
        try:
            hits, ttl_ms = self._script(keys=[self.prefix + bucket], args=[int(window * 1000)])
        except self._errors as exc:
            raise LimiterUnavailable(f"Redis rate limiter: {type(exc).__name__}") from exc
        return _decision(int(hits), limit, int(ttl_ms) / 1000)

    def ping(self):
        try:
            self.client.ping()
        except self._errors as exc:
            raise LimiterUnavailable(f"Redis rate limiter: {type(exc).__name__}") from exc


def open_limiter(store: Store | None = None, settings: Settings | None = None) -> Limiter:
    settings = settings or get_settings()
    if settings.redis_url:
        return RedisLimiter(settings.redis_url)
    from pipeline.storage.sqlite import SqliteStore

    if isinstance(store, SqliteStore):
        return SqliteLimiter(store)
    return MemoryLimiter()
