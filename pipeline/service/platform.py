"""The platform layer as Falcon middleware: API key -> rate limit -> credit reservation, before any work.

Resources know nothing of it. A resource opts out of authentication with a class attribute `auth = False`
(health, readiness, OpenAPI). OPTIONS and a method the route does not answer (405) never reach it: they are
answered from the route alone (pipeline.service.app.MethodsMiddleware), whatever the key. Every other routed request:
1. authenticates (401, see pipeline.service.apikeys),
2. takes one hit from the key's rate limit (429 RATE_LIMIT_EXCEEDED with Retry-After; 503
   RATE_LIMIT_CONFIGURATION_UNAVAILABLE when the limiter or its configuration cannot be read: fail closed),
3. reserves the route's cost in credits (402 INSUFFICIENT_CREDITS), then the resource runs;
4. afterwards the reservation is committed on a 2xx (a ledger charge) and released on anything else.
Rejected requests never reach the resource, so they do no work and cost nothing.
Input validation comes before credits: a resource with a cost may offer `read_input(req)`, which reads the body
and checks it (media type, size, the request model: the cheap part, no document is produced) and keeps the
result on `req.context` for the responder. The middleware calls it between the rate limit and the reservation, so
a malformed request answers its 400 (or 406 / 413 / 415) whatever the balance, and a valid one still reserves its
credits before any work. (Reserving after the model inside the resource would have put credit calls into the
resources and the flows; validating first keeps the credits here, and a 400 never touches the credit store.)

Charged exactly once: the charge is settled before the answer leaves the worker. A settlement that fails
(connection reset, database gone) is retried once on a fresh connection; a reservation found gone on the
retry was committed by the first attempt (only a commit or the expiry sweep deletes one, and it is far from
expiry), so it counts as charged. If the database still cannot be reached, the document is delivered anyway
(it is produced and its credits are already debited) and the reservation is written to the node's journal of
owed charges (pipeline.storage.pending), which every worker commits before it gives back expired reservations:
an owed charge is never released. The access log says what the ledger says: `creditsCharged` is what the
ledger holds for the request, `chargePending` what is owed to it; a replayed charge logs a `charge-settled`
line with the request id. A client that disconnects before its answer is written is charged like any other
(the document was produced; whether its last bytes reach the client is not something the server can know).

Configuration (environment, read once per process):
- EINVOICE_RATE_LIMIT       service default per key, `N/s`, `N/min` or `N/h` (default 120/min); a key's own
                            limit (`pipeline keys create --rate-limit N/min`) wins.
- EINVOICE_CREDIT_COSTS     `path=n,...` overrides (e.g. `/v1/invoice/zugferd=2`; n <= 2**31 - 1). Default: a POST to
                            /v1/invoice/<spec> (generation) and /v1/invoice/convert cost 1, a path ending in
                            /validate, /parse or /render costs 0. A request is priced by the route it reached
                            (`//v1/invoice/zugferd` costs what /v1/invoice/zugferd costs).
- EINVOICE_RESERVATION_TTL  seconds after which an unsettled reservation (a crashed worker) is given back
                            (default 600; longer than any request may run; a finite number above 0).
- EINVOICE_KEY_CACHE_SECONDS how long a worker trusts a key it verified without reading the store again
                            (default 5, 0: always read): a revocation reaches free endpoints within that time,
                            charged ones at once (see pipeline.service.apikeys.KeyCache). Finite, >= 0.
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
import threading
import time
from dataclasses import dataclass, field

from pipeline.errors import ApiError, refined
from pipeline.service import apikeys
from pipeline.settings import get_settings
from pipeline.storage import StorageUnavailable, Store, open_store
from pipeline.storage.jobs import MAX_COST
from pipeline.storage.pending import PendingCharges
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
    """Generation and conversion cost 1; validation, parsing and rendering (reading what one received, and a status
    timeline) cost 0."""
    if method != "POST" or not path.startswith("/v1/invoice/"):
        return 0
    return 0 if path.endswith(("/validate", "/validate/batch", "/parse", "/render", "/timeline")) else 1


def _seconds(env, name: str, default: float, positive: bool) -> float:
    """A duration setting. `nan`, `inf` and negatives are refused: a TTL of 0 or less let a sweep give a reservation
    back while its request ran (a document delivered uncharged), a NaN one failed the reservation's NOT NULL (500)."""
    text = env.get(name) or str(default)
    try:
        value = float(text)
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise ConfigError(f"{name} {text!r}: expected a number of seconds {'> 0' if positive else '>= 0'}")
    return value


@dataclass(frozen=True)
class PlatformConfig:
    rate_limit: int = 120
    rate_window: int = 60
    costs: dict[str, int] = field(default_factory=dict)
    reservation_ttl: float = 600.0
    key_cache_seconds: float = 5.0

    @classmethod
    def from_env(cls, env=os.environ) -> "PlatformConfig":
        limit, window = parse_rate(env.get("EINVOICE_RATE_LIMIT") or "120/min")
        costs = {}
        for item in filter(None, (p.strip() for p in (env.get("EINVOICE_CREDIT_COSTS") or "").split(","))):
            path, sep, n = item.partition("=")
            if not sep or not path.startswith("/") or not n.strip().isdigit():
                raise ConfigError(f"EINVOICE_CREDIT_COSTS entry {item!r}: expected /path=n")
            if int(n) > MAX_COST:  # (a job's price column holds 32 bits: 3,000,000,000 was a 500 on PostgreSQL)
                raise ConfigError(f"EINVOICE_CREDIT_COSTS entry {item!r}: at most {MAX_COST} credits")
            costs[path.strip().rstrip("/")] = int(n)
        ttl = _seconds(env, "EINVOICE_RESERVATION_TTL", 600, positive=True)
        key_cache = _seconds(env, "EINVOICE_KEY_CACHE_SECONDS", 5, positive=False)
        return cls(limit, window, costs, ttl, key_cache)

    def cost(self, method: str, path: str) -> int:
        if method == "POST" and path in self.costs:
            return self.costs[path]
        return default_cost(method, path)


class Backends:
    """Store, limiter and configuration of this process, built on first use (never inherited across fork)."""

    def __init__(self, store: Store | None = None, limiter: Limiter | None = None,
                 config: PlatformConfig | None = None, pending=None):
        self._given = (store, limiter, config)
        self._pid = None
        self._lock = threading.Lock()
        self._next_sweep = self._next_replay = self._next_look = 0.0
        self._pending = pending

    def pending(self):
        """The node's journal of owed charges (pipeline.storage.pending)."""
        if self._pending is None:
            self._pending = PendingCharges(get_settings().data_dir / "pending-charges.jsonl")
        return self._pending

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
            self._keys = apikeys.KeyCache(self._config.key_cache_seconds if self._config else 0)
            self._pid = os.getpid()

    def store(self) -> Store:
        self._ensure()
        if self._store is None:
            # Retry on the next request: the database may come up after the service.
            self._pid = None
            raise StorageUnavailable(str(self._store_error))
        return self._store

    def key_cache(self) -> apikeys.KeyCache:
        self._ensure()
        return self._keys

    def limiter_and_config(self) -> tuple[Limiter, PlatformConfig]:
        self._ensure()
        if self._config_error is not None:
            raise LimiterUnavailable(f"rate limit configuration: {self._config_error}")
        return self._limiter, self._config

    def sweep(self, store: Store) -> None:
        """Commit the owed charges of this node's journal (every 2 s while it has any), and now and then give
        back expired reservations (cheap: an indexed range delete). Never the second while the first has
        entries left, so that no owed charge is given back here. Looked at once a second at most: the journal's
        size is a stat() per look, ~20 us of a request after a validation has left the caches cold."""
        now = time.monotonic()
        if now < self._next_look:
            return
        self._next_look = now + 1
        pending = self.pending()
        if pending.has_any():
            if now < self._next_replay:
                return
            self._next_replay = now + 2
            for entry in pending.replay(store.commit):
                logging.getLogger("pipeline.access").info(json.dumps({
                    "event": "charge-settled", "requestId": entry["requestId"], "keyId": entry["keyId"],
                    "creditsCharged": entry["amount"]}, separators=(",", ":")))
            if pending.has_any():
                return  # the database is still away
        if now >= self._next_sweep:
            self._next_sweep = now + 30
            n = store.release_expired()
            if n:
                log.warning("released %d expired credit reservation(s)", n)


_shared = Backends()


def shared() -> Backends:
    return _shared


def storage_unavailable() -> ApiError:
    return refined(503, "STORAGE_UNAVAILABLE", "The key and credit store is unavailable; retry later.",
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
        ctx.charge_pending = 0
        ctx.platform = self.backends  # readiness checks the store this app really uses
        if resource is None or getattr(resource, "auth", True) is False:
            return
        env, key_id, secret = apikeys.parse_authorization(req.get_header("Authorization"))
        try:
            store = self.backends.store()
        except StorageUnavailable as exc:
            log.error("storage unavailable request_id=%s: %s", ctx.request_id, exc)
            raise storage_unavailable() from None
        key = self._verified_key(store, env, key_id, secret, ctx)
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

        # Priced by the route the request reached, not the path as sent: Falcon routes `//v1/invoice/xrechnung` (and
        # percent-encoded variants) to the generation resource, and pricing req.path made that a free document.
        route = getattr(req, "uri_template", None) or req.path
        cost = config.cost(req.method, route)
        read_input = getattr(resource, "read_input", None)
        if cost > 0 and read_input is not None:
            read_input(req)  # the request's own faults (400, 406, 413, 415) before credits: see the module doc
        try:
            self.backends.sweep(store)
        except StorageUnavailable as exc:  # the request's own calls below decide whether it can go on
            log.warning("sweep skipped request_id=%s: %s", ctx.request_id, exc)
        if cost > 0:
            try:
                ctx.reserved_at = time.time()
                reservation = store.reserve(key.key_id, cost, ctx.request_id, route, config.reservation_ttl)
            except StorageUnavailable as exc:
                log.error("storage unavailable request_id=%s: %s", ctx.request_id, exc)
                raise storage_unavailable() from None
            if reservation is None:
                self.backends.key_cache().forget(key.key_id)
                self._verified_key(store, env, key_id, secret, ctx)  # revoked since it was cached: 401
                raise ApiError(402, "INSUFFICIENT_CREDITS",
                               f"This request costs {cost} credit(s); the key's balance is too low. "
                               "Nothing was done or charged.")
            ctx.reservation, ctx.reservation_cost, ctx.reservation_ttl = reservation, cost, config.reservation_ttl

    def _verified_key(self, store, env, key_id, secret, ctx):
        """The key of a request (401 unless it exists in this environment, its secret matches and it is not
        revoked), from this worker's cache of verified keys or else the store."""
        cache = self.backends.key_cache()
        key = cache.get(key_id)
        if key is not None and key.env == env and apikeys.secret_matches(secret, key.secret_hash):
            return key
        try:
            key = store.get_key(key_id)
        except StorageUnavailable as exc:
            log.error("storage unavailable request_id=%s: %s", ctx.request_id, exc)
            raise storage_unavailable() from None
        if key is None or key.env != env or not apikeys.secret_matches(secret, key.secret_hash):
            raise apikeys.unauthorized("INVALID_API_KEY")
        if key.revoked:
            raise apikeys.unauthorized("API_KEY_REVOKED")
        cache.put(key)
        return key

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
        if delivered:
            self._charge(ctx, reservation)
            return
        for attempt in range(2):  # on this connection, then once on a fresh one
            try:
                store = self.backends.store()
                if attempt:
                    getattr(store, "drop_connection", lambda: None)()
                store.release(reservation)
                return
            except StorageUnavailable as exc:
                failed = exc
        # Not released now: the reservation expires and is given back, so the caller never pays for it.
        log.error("could not release reservation %s request_id=%s: %s", reservation, ctx.request_id, failed)

    def _charge(self, ctx, reservation) -> None:
        """Commit a delivered request's reservation: on this connection, then once on a fresh one; if the
        database cannot be reached, record the charge as owed (never given back)."""
        for attempt in range(2):
            try:
                store = self.backends.store()
                if attempt:
                    getattr(store, "drop_connection", lambda: None)()
                committed = store.commit(reservation)
            except StorageUnavailable as exc:
                log.warning("settling reservation %s request_id=%s failed (attempt %d): %s",
                            reservation, ctx.request_id, attempt + 1, exc)
                continue
            if committed or (attempt and time.time() - ctx.reserved_at < ctx.reservation_ttl):
                ctx.credits_charged = ctx.reservation_cost  # now, or by the attempt whose answer was lost
            else:
                log.warning("reservation %s expired before commit request_id=%s", reservation, ctx.request_id)
            return
        self.backends.pending().add(reservation, ctx.key_id, ctx.reservation_cost, ctx.request_id,
                                    ctx.reservation_ttl - (time.time() - ctx.reserved_at))
        ctx.charge_pending = ctx.reservation_cost
        log.error("could not settle reservation %s request_id=%s: charge owed, journaled in %s",
                  reservation, ctx.request_id, self.backends.pending().path)


def middleware(backends: Backends | None = None) -> list:
    return [PlatformMiddleware(backends)]
