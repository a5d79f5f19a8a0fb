"""API key format, minting and checking.

A key reads `einv_<env>_<keyId>.<secret>`: env is `test` or `live`, keyId 12 lower-case hex characters (the
public handle shown by `pipeline keys list` and in logs), secret 43 URL-safe characters (256 random bits).
Only sha256(secret) is stored: with 256 bits of entropy a slow hash adds nothing but latency, and the
comparison is constant-time. The secret is printed once at creation and never logged.

401 error codes (all with `WWW-Authenticate: Bearer`):
- AUTHENTICATION_REQUIRED  no `Authorization: Bearer ...` header
- MALFORMED_API_KEY        the bearer token is not of the form above
- INVALID_API_KEY          unknown key id, wrong secret, or a key of another environment
- API_KEY_REVOKED          the key was revoked (`pipeline keys revoke`)

`KeyCache`: each worker keeps the keys it verified for a few seconds (EINVOICE_KEY_CACHE_SECONDS, default 5;
0 turns it off), so that a request does not read the store for its key: on PostgreSQL that is a round trip per
request. A revoked key is refused by every worker at the latest that many seconds after `pipeline keys revoke`
(at once on a charged endpoint: the reservation re-checks revocation in the store).
"""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time

from pipeline.errors import ApiError

PREFIX = "einv"
ENVIRONMENTS = ("test", "live")
_TOKEN = re.compile(r"^einv_(test|live)_([0-9a-f]{12})\.([A-Za-z0-9_-]{43})$")

AUTH_CODES = {
    "AUTHENTICATION_REQUIRED": "No API key: send `Authorization: Bearer <key>`.",
    "MALFORMED_API_KEY": "The API key is not of the form einv_<test|live>_<keyId>.<secret>.",
    "INVALID_API_KEY": "The API key is not valid.",
    "API_KEY_REVOKED": "The API key has been revoked.",
}


def unauthorized(code: str) -> ApiError:
    return ApiError(401, code, AUTH_CODES[code], headers={"WWW-Authenticate": 'Bearer realm="einvoice"'})


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def mint(env: str) -> tuple[str, str, str]:
    """A new key: (key_id, full token to hand out once, hash to store)."""
    if env not in ENVIRONMENTS:
        raise ValueError(f"env must be one of {ENVIRONMENTS}")
    key_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    return key_id, f"{PREFIX}_{env}_{key_id}.{secret}", hash_secret(secret)


def parse_authorization(header: str | None) -> tuple[str, str, str]:
    """`Authorization` header -> (env, key_id, secret); raises the matching 401."""
    if not header:
        raise unauthorized("AUTHENTICATION_REQUIRED")
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        raise unauthorized("AUTHENTICATION_REQUIRED")
    parts = token_parts(token)
    if parts is None:
        raise unauthorized("MALFORMED_API_KEY")
    return parts


def token_parts(token: str) -> tuple[str, str, str] | None:
    """A whole key -> (env, key_id, secret), or None when it is not of that form."""
    m = _TOKEN.match(token.strip())
    return None if m is None else (m.group(1), m.group(2), m.group(3))


def secret_matches(secret: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_secret(secret), stored_hash)


class KeyCache:
    """Keys whose secret matched, by key id, for `seconds` after they were read from the store. Only verified keys
    enter (an unknown id or a wrong secret always asks the store), and at most `size` of them."""

    def __init__(self, seconds: float, size: int = 10_000):
        self.seconds, self.size = seconds, size
        self._keys: dict[str, tuple[float, object]] = {}
        self._lock = threading.Lock()

    def get(self, key_id: str):
        hit = self._keys.get(key_id)
        if hit is not None and hit[0] > time.monotonic():
            return hit[1]
        return None

    def put(self, key) -> None:
        if self.seconds <= 0:
            return
        now = time.monotonic()
        with self._lock:
            if len(self._keys) >= self.size:
                self._keys = {k: v for k, v in self._keys.items() if v[0] > now}
                if len(self._keys) >= self.size:
                    self._keys.clear()
            self._keys[key.key_id] = (now + self.seconds, key)

    def forget(self, key_id: str) -> None:
        self._keys.pop(key_id, None)
