"""The storage interface: API keys, the ledger, and the Store every backend implements (SQLite, PostgreSQL)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass


@dataclass(frozen=True)
class ApiKey:
    key_id: str
    name: str
    env: str
    secret_hash: str
    balance: int
    rate_limit: int | None  # requests per minute; None -> the service default
    revoked: bool
    created_at: str


@dataclass(frozen=True)
class LedgerEntry:
    key_id: str
    kind: str  # "charge" (a delivered document) or "credit" (a top-up)
    amount: int
    request_id: str | None
    endpoint: str | None
    created_at: str


# The largest balance a key may hold (and so the largest top-up). Unbounded, a top-up past 2**63 - 1 turned SQLite's
# INTEGER balance into a REAL (rounded: the ledger no longer summed to it) and was a bigint overflow on PostgreSQL.
MAX_BALANCE = 10**15


class StorageUnavailable(Exception):
    """The backing database cannot be reached or answered with an error."""


class Store(ABC):
    @abstractmethod
    def create_key(self, key_id: str, name: str, env: str, secret_hash: str, credits: int,
                   rate_limit: int | None) -> ApiKey: ...

    @abstractmethod
    def get_key(self, key_id: str) -> ApiKey | None: ...

    @abstractmethod
    def list_keys(self) -> list[ApiKey]: ...

    @abstractmethod
    def revoke_key(self, key_id: str) -> bool: ...

    @abstractmethod
    def add_credits(self, key_id: str, amount: int) -> int | None:
        """Top up (or, with a negative amount, take back) credits; returns the new balance, None if the key is
        unknown or the balance would leave 0..MAX_BALANCE."""

    @abstractmethod
    def reserve(self, key_id: str, amount: int, request_id: str | None, endpoint: str | None,
                ttl_seconds: float) -> str | None:
        """Atomically debit `amount` if the balance allows it; returns a reservation id, or None if too few."""

    @abstractmethod
    def commit(self, reservation_id: str) -> bool:
        """The document was delivered: the reservation becomes a ledger charge."""

    @abstractmethod
    def release(self, reservation_id: str) -> bool:
        """The request failed: the reserved amount goes back to the balance."""

    @abstractmethod
    def release_expired(self) -> int:
        """Give back reservations whose request never settled them (crashed worker); returns how many."""

    @abstractmethod
    def usage(self, key_id: str, limit: int = 1000) -> list[LedgerEntry]: ...

    @abstractmethod
    def ping(self, timeout: float | None = None) -> None:
        """Raise StorageUnavailable unless the database answers (within `timeout` seconds where the backend
        can bound it: PostgreSQL)."""

    @abstractmethod
    def schema_version(self) -> int: ...

    def close(self) -> None:  # pragma: no cover - backends override when they hold connections
        pass
