"""The platform layer as Falcon middleware: API key -> rate limit -> credit reservation, before any work.

Resources know nothing of it. A resource opts out of authentication with a class attribute `auth = False`
(health, readiness, OpenAPI). Every other routed request:
1. authenticates (401, see pipeline.service.apikeys),
2. takes one hit from the key's rate limit (429 RATE_LIMIT_EXCEEDED with Retry-After; 503
   RATE_LIMIT_CONFIGURATION_UNAVAILABLE when the limiter or its configuration cannot be read: fail closed),
3. reserves the route's cost in credits (402 INSUFFICIENT_CREDITS), then the resource runs;
4. afterwards the reservation is committed on a 2xx (a ledger charge) and released on anything else.
Rejected requests never reach the resource, so they do no work and cost nothing.

Configuration (environment, read once per process):
- EINVOICE_RATE_LIMIT       service default per key, `N/s`, `N/min` or `N/h` (default 120/min); a key's own
                            limit (`pipeline keys create --rate-limit N/min`) wins.
- EINVOICE_CREDIT_COSTS     `path=n,...` overrides (e.g. `/v1/invoice/zugferd=2`). Default: a POST to
                            /v1/invoice/<spec> (generation) costs 1, a path ending in /validate costs 0.
- EINVOICE_RESERVATION_TTL  seconds after which an unsettled reservation (a crashed worker) is given back
                            (default 600; longer than any request may run).
"""
from __future__ import annotations

import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field

from pipeline.errors import ApiError
from pipeline.service import apikeys
from pipeline.storage import StorageUnavailable, Store, open_store
from pipeline.storage.ratelimit import Limiter, LimiterUnavailable, open_limiter

log = logging.getLogger("pipeline.service.platform")

_UNITS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600}
_RATE = re.compile(r"^\s*(\d+)\s*/\s*([a-z]+)\s*$")
RETRY_AFTER_UNAVAILABLE = 5


class ConfigError(ValueError):
    pass


def parse_rate(text: str) -> tuple[int, int]:
    """`120/min` -> (120, 60)."""
    m = _RATE.match(text.lower())
    if m is None or m.group(2) not in _UNITS or int(m.group(1)) < 1:
        raise ConfigError(f"rate limit {text!r}: expected N/s, N/min or N/h with N >= 1")
    return int(m.group(1)), _UNITS[m.group(2)]


def default_cost(method: str, path: str) -> int:
    if method != "POST" or not path.startswith("/v1/invoice/"):
        return 0
    return 0 if path.endswith("/validate") else 1


@dataclass(frozen=True)
class PlatformConfig:
    rate_limit: int = 120
    rate_window: int = 60
    costs: dict[str, int] = field(default_factory=dict)
    reservation_ttl: float = 600.0

    @classmethod
    def from_env(cls, env=os.environ) -> "PlatformConfig":
        limit, window = parse_rate(env.get("EINVOICE_RATE_LIMIT") or "120/min")
        costs = {}
        for item in filter(None, (p.strip() for p in (env.get("EINVOICE_CREDIT_COSTS") or "").split(","))):
            path, sep, n = item.partition("=")
            if not sep or not path.startswith("/") or not n.strip().isdigit():
                raise ConfigError(f"EINVOICE_CREDIT_COSTS entry {item!r}: expected /path=n")
            costs[path.strip().rstrip("/")] = int(n)
        try:
            ttl = float(env.get("EINVOICE_RESERVATION_TTL") or 600)
        except ValueError as exc:
            raise ConfigError(f"EINVOICE_RESERVATION_TTL: {exc}") from None
        return cls(limit, window, costs, ttl)

    def cost(self, method: str, path: str) -> int:
        if method == "POST" and path in self.costs:
            return self.costs[path]
        return default_cost(method, path)


class Backends:
    """Store, limiter and configuration of this process, built on first use (never inherited across fork)."""

    def __init__(self, store: Store | None = None, limiter: Limiter | None = None,
                 config: PlatformConfig | None = None):
        self._given = (store, limiter, config)
        self._pid = None
        self._lock = threading.Lock()
        self._next_sweep = 0.0

    def _ensure(self) -> None:
        if self._pid == os.getpid():
            return
        with self._lock:
            if self._pid == os.getpid():
                return
            store, limiter, config = self._given
            self._store, self._store_error = store, None
            if store is None:
                try:
                    self._store = open_store()
                except (StorageUnavailable, ValueError) as exc:
                    self._store_error = exc
            self._limiter, self._config, self._config_error = limiter, config, None
            try:
                if config is None:
                    self._config = PlatformConfig.from_env()
                if limiter is None:
                    self._limiter = open_limiter(self._store)
            except Exception as exc:  # any unreadable limit configuration fails closed, per request
                self._config_error = exc
            self._pid = os.getpid()

    def store(self) -> Store:
        self._ensure()
        if self._store is None:
            # Retry on the next request: the database may come up after the service.
            self._pid = None
            raise StorageUnavailable(str(self._store_error))
        return self._store

    def limiter_and_config(self) -> tuple[Limiter, PlatformConfig]:
        self._ensure()
        if self._config_error is not None:
            raise LimiterUnavailable(f"rate limit configuration: {self._config_error}")
        return self._limiter, self._config

    def sweep(self, store: Store) -> None:
        """Give back expired reservations now and then (cheap: an indexed range delete)."""
        now = time.monotonic()
        if now >= self._next_sweep:
            self._next_sweep = now + 30
            n = store.release_expired()
            if n:
                log.warning("released %d expired credit reservation(s)", n)


_shared = Backends()


def shared() -> Backends:
    return _shared


def storage_unavailable() -> ApiError:
    return ApiError(503, "STORAGE_UNAVAILABLE", "The key and credit store is unavailable; retry later.",
                    headers={"Retry-After": str(RETRY_AFTER_UNAVAILABLE)})


def limiter_unavailable() -> ApiError:
    return ApiError(503, "RATE_LIMIT_CONFIGURATION_UNAVAILABLE",
                    "The rate limit configuration cannot be read; nothing was done or charged. Retry later.",
                    headers={"Retry-After": str(RETRY_AFTER_UNAVAILABLE)})


def ratelimit_headers(decision) -> dict[str, str]:
    return {"RateLimit-Limit": str(decision.limit), "RateLimit-Remaining": str(decision.remaining),
            "RateLimit-Reset": str(decision.reset)}


class PlatformMiddleware:
    def __init__(self, backends: Backends | None = None):
        self.backends = backends or _shared

    def process_resource(self, req, resp, resource, params):
        ctx = req.context
        ctx.key_id, ctx.ratelimit, ctx.reservation, ctx.credits_charged = None, None, None, 0
        ctx.platform = self.backends  # readiness checks the store this app really uses
        if resource is None or getattr(resource, "auth", True) is False:
            return
        env, key_id, secret = apikeys.parse_authorization(req.get_header("Authorization"))
        try:
            store = self.backends.store()
            key = store.get_key(key_id)
        except StorageUnavailable as exc:
            log.error("storage unavailable request_id=%s: %s", ctx.request_id, exc)
            raise storage_unavailable() from None
        if key is None or key.env != env or not apikeys.secret_matches(secret, key.secret_hash):
            raise apikeys.unauthorized("INVALID_API_KEY")
        if key.revoked:
            raise apikeys.unauthorized("API_KEY_REVOKED")
        ctx.key_id = key.key_id

        try:
            limiter, config = self.backends.limiter_and_config()
            limit, window = (key.rate_limit, 60) if key.rate_limit else (config.rate_limit, config.rate_window)
            decision = limiter.hit(key.key_id, limit, window)
        except LimiterUnavailable as exc:
            log.error("rate limiter unavailable request_id=%s: %s", ctx.request_id, exc)
            raise limiter_unavailable() from None
        ctx.ratelimit = decision
        if not decision.allowed:
            raise ApiError(429, "RATE_LIMIT_EXCEEDED",
                           f"Rate limit of {limit} requests per {window} s exceeded; retry after {decision.reset} s.",
                           headers={"Retry-After": str(decision.reset)})

        cost = config.cost(req.method, req.path)
        if cost > 0:
            try:
                self.backends.sweep(store)
                reservation = store.reserve(key.key_id, cost, ctx.request_id, req.path, config.reservation_ttl)
            except StorageUnavailable as exc:
                log.error("storage unavailable request_id=%s: %s", ctx.request_id, exc)
                raise storage_unavailable() from None
            if reservation is None:
                raise ApiError(402, "INSUFFICIENT_CREDITS",
                               f"This request costs {cost} credit(s); the key's balance is too low. "
                               "Nothing was done or charged.")
            ctx.reservation, ctx.reservation_cost = reservation, cost

    def process_response(self, req, resp, resource, req_succeeded):
        ctx = req.context
        decision = getattr(ctx, "ratelimit", None)
        if decision is not None:
            for name, value in ratelimit_headers(decision).items():
                resp.set_header(name, value)
        reservation = getattr(ctx, "reservation", None)
        if reservation is None:
            return
        ctx.reservation = None
        delivered = req_succeeded and 200 <= resp.status_code < 300
        try:
            store = self.backends.store()
            if delivered:
                if store.commit(reservation):
                    ctx.credits_charged = ctx.reservation_cost
                else:
                    log.warning("reservation %s expired before commit request_id=%s", reservation, ctx.request_id)
            else:
                store.release(reservation)
        except StorageUnavailable as exc:
            # Not settled now: the reservation expires and is given back, so the caller is never overcharged.
            log.error("could not settle reservation %s request_id=%s: %s", reservation, ctx.request_id, exc)


def middleware(backends: Backends | None = None) -> list:
    return [PlatformMiddleware(backends)]
