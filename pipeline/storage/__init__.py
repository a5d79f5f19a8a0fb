"""Platform storage: API keys, credits (atomic reserve / commit / release) and the ledger, plus rate limiting.

One small interface (`Store`), two backends:
- SQLite (default): a file under `settings.data_dir`, WAL, `BEGIN IMMEDIATE` around every debit.
- PostgreSQL (`EINVOICE_DATABASE_URL=postgresql://...`): psycopg 3, row-level atomic debits.

Credits move in two steps so that a failed or crashed request never pays: `reserve` debits the balance
atomically (never below zero) and parks the amount in a reservation; `commit` turns it into a ledger charge
(after a 2xx), `release` gives it back (any failure). Reservations that are never settled (a worker died)
expire and are given back by `release_expired`, which the service runs now and then.

Rate limiting lives in `pipeline.storage.ratelimit` behind its own interface.
"""
from __future__ import annotations

from pipeline.settings import Settings, get_settings
from pipeline.storage.sqlite import SqliteStore
from pipeline.storage.store import ApiKey, LedgerEntry, StorageUnavailable, Store

__all__ = ["ApiKey", "LedgerEntry", "StorageUnavailable", "Store", "open_store"]


def open_store(settings: Settings | None = None) -> Store:
    """The store the settings ask for: PostgreSQL when EINVOICE_DATABASE_URL is set, else SQLite."""
    settings = settings or get_settings()
    url = settings.database_url
    if url and url.startswith(("postgresql://", "postgres://")):
        from pipeline.storage.postgres import PostgresStore  # lazy: psycopg loads only where PostgreSQL is configured

        return PostgresStore(url)
    if url and url.startswith("sqlite:///"):
        return SqliteStore(url[len("sqlite:///"):])  # sqlite:///rel/path or sqlite:////abs/path
    if url:
        raise ValueError("EINVOICE_DATABASE_URL must start with postgresql:// or sqlite:///")
    return SqliteStore(settings.data_dir / "platform.sqlite3")
