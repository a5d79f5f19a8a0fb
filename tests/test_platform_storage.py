"""Storage: versioned automatic schema upgrades on both backends, concurrent starters, readiness."""
from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import falcon.testing
import pytest

from pipeline.service.app import create_app
from pipeline.service.platform import Backends, PlatformConfig
from pipeline.storage import StorageUnavailable, open_store
from pipeline.storage.postgres import PostgresStore
from pipeline.storage.ratelimit import MemoryLimiter
from pipeline.storage.sqlite import SqliteStore
from test_platform_helpers import PG_BASE, free_port, pg_url


def _v1_only(cls):
    return type(cls.__name__ + "V1", (cls,), {"migrations": cls.migrations[:1]})


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_schema_upgrades_in_order_and_keeps_data(tmp_path, backend):
    if backend == "sqlite":
        where = tmp_path / "db.sqlite3"
        old, new = _v1_only(SqliteStore)(where), lambda: SqliteStore(where)
    else:
        url = pg_url("h4_mig_" + uuid.uuid4().hex[:10])
        old, new = _v1_only(PostgresStore)(url), lambda: PostgresStore(url)
    try:
        assert old.schema_version() == 1
        old.create_key("aaaaaaaaaaaa", "kept", "test", "h", 4, None)
        upgraded = new()
        # v3: jobs, v4: documents' messages, inbox, v5: the jobs' indeterminate documents, v6: the inbox's message keys,
        # v7: the order of a job's results, v8: what a signed document's signature says
        assert upgraded.schema_version() == len(upgraded.migrations) == 9
        assert upgraded.get_key("aaaaaaaaaaaa").balance == 4
        again = new()  # reopening applies nothing twice
        assert again.schema_version() == 9
        rows = again._read("SELECT version FROM schema_version ORDER BY version")
        assert [r[0] for r in rows] == list(range(1, 10))
    finally:
        if backend == "postgres":
            old.drop_schema()


def test_concurrent_first_starts_migrate_once(tmp_path):
    url = pg_url("h4_race_" + uuid.uuid4().hex[:10])
    with ThreadPoolExecutor(6) as pool:
        stores = list(pool.map(lambda _: PostgresStore(url), range(6)))
    assert {s.schema_version() for s in stores} == {len(PostgresStore.migrations)} == {9}
    versions = stores[0]._read("SELECT version FROM schema_version ORDER BY version")
    assert [r[0] for r in versions] == list(range(1, 10))
    stores[0].drop_schema()


def test_open_store_follows_the_settings(tmp_path, monkeypatch):
    from pipeline.settings import get_settings

    monkeypatch.setenv("EINVOICE_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("EINVOICE_DATABASE_URL", raising=False)
    get_settings.cache_clear()
    try:
        s = open_store()
        assert isinstance(s, SqliteStore) and s.path == tmp_path / "platform.sqlite3"
        assert s.connection().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        monkeypatch.setenv("EINVOICE_DATABASE_URL", pg_url("h4_open_" + uuid.uuid4().hex[:8]))
        get_settings.cache_clear()
        pg = open_store()
        assert isinstance(pg, PostgresStore)
        pg.drop_schema()
    finally:
        get_settings.cache_clear()


def test_unreachable_database_is_503_not_500(tmp_path):
    with pytest.raises(StorageUnavailable):
        PostgresStore(f"postgresql://127.0.0.1:{free_port()}/test", connect_timeout=1)
    class Dead(Backends):
        def store(self):
            raise StorageUnavailable("connection refused")

    app = create_app(backends=Dead(None, MemoryLimiter(), PlatformConfig()))
    client = falcon.testing.TestClient(app)
    r = client.simulate_post("/v1/invoice/xrechnung",
                             headers={"Authorization": "Bearer einv_test_0123456789ab." + "A" * 43})
    assert r.status_code == 503 and "Retry-After" in r.headers
    assert (r.json["errorCode"], r.json["errors"][0]["code"]) == ("RATE_LIMIT_CONFIGURATION_UNAVAILABLE",
                                                                  "STORAGE_UNAVAILABLE")


def test_readyz_reports_rule_packs_and_storage(tmp_path, monkeypatch):
    from pipeline.settings import get_settings

    store = SqliteStore(tmp_path / "ok.sqlite3")
    client = falcon.testing.TestClient(create_app(backends=Backends(store, MemoryLimiter(), PlatformConfig())))
    r = client.simulate_get("/readyz")
    assert r.status_code == 200, r.text
    assert r.json["storage"] == "ok" and set(r.json["rulePacks"]) == {"xrechnung", "en16931", "fr-ctc", "peppol", "fr-cdar"}

    class Down(Backends):
        def store(self):
            raise StorageUnavailable("connection refused")

    down = falcon.testing.TestClient(create_app(backends=Down(None, MemoryLimiter(), PlatformConfig())))
    r = down.simulate_get("/readyz")
    assert r.status_code == 503 and "storage" in r.json["message"]

    monkeypatch.setenv("EINVOICE_RULES_HOME", str(tmp_path / "empty-rules-home"))
    get_settings.cache_clear()
    try:
        r = client.simulate_get("/readyz")
        assert r.status_code == 503 and r.json["errorCode"] == "NOT_READY"
        assert "rule packs" in r.json["message"] and "Retry-After" in r.headers
    finally:
        get_settings.cache_clear()


def test_postgres_reconnects_after_its_connection_is_killed():
    import psycopg

    store = PostgresStore(pg_url("h4_kill_" + uuid.uuid4().hex[:8]))
    try:
        store.create_key("killkillkill", "k", "test", "h", 3, None)
        backend_pid = store._read("SELECT pg_backend_pid()")[0][0]
        with psycopg.connect(PG_BASE, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (backend_pid,))
        outcomes = []
        for _ in range(2):
            try:
                outcomes.append(store.get_key("killkillkill").balance)
            except StorageUnavailable:
                outcomes.append("unavailable")  # the request that saw the dead connection gets a 503
        assert outcomes[-1] == 3 and set(outcomes) <= {3, "unavailable"}
        assert store.reserve("killkillkill", 1, "r", "/v1/invoice/x", 60) is not None
    finally:
        store.drop_schema()
