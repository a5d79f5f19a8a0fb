"""Credits: atomic reserve/commit/release, 402 before any work, no charge for failures, ledger rows,
crash safety and concurrency, on SQLite and on real PostgreSQL."""
from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from pipeline.service.platform import PlatformConfig
from test_platform_helpers import GEN, VAL, Platform, store  # noqa: F401  (store is a fixture)


def test_successful_generation_is_charged_once_with_a_ledger_row(store):
    p = Platform(store)
    key_id, token = p.key(credits=3)
    r = p.post(token, headers={"X-Request-Id": "req-charge-1"})
    assert r.status_code == 200 and p.work.calls == 1
    assert store.get_key(key_id).balance == 2
    charges = [e for e in store.usage(key_id) if e.kind == "charge"]
    assert [(e.amount, e.request_id, e.endpoint) for e in charges] == [(1, "req-charge-1", GEN)]
    assert charges[0].created_at
    assert store.pending(key_id) == 0


def test_validation_costs_nothing_by_default(store):
    p = Platform(store)
    key_id, token = p.key(credits=0)
    r = p.post(token, path=VAL)
    assert r.status_code == 200 and p.work.calls == 1
    assert store.get_key(key_id).balance == 0
    assert [e for e in store.usage(key_id) if e.kind == "charge"] == []


def test_insufficient_credits_is_402_before_any_work(store):
    p = Platform(store)
    key_id, token = p.key(credits=0)
    r = p.post(token)
    assert r.status_code == 402
    assert r.json["errorCode"] == "INSUFFICIENT_CREDITS" and r.json["status"] == "payment_required"
    assert r.json["requestId"] == r.headers["X-Request-Id"]
    assert p.work.calls == 0
    assert store.get_key(key_id).balance == 0


@pytest.mark.parametrize("outcome", ["400", "422", "500", "raise"])
def test_failed_requests_are_not_charged(store, outcome):
    p = Platform(store)
    key_id, token = p.key(credits=1)
    r = p.post(token, params={"outcome": outcome})
    assert r.status_code == (500 if outcome == "raise" else int(outcome))
    assert p.work.calls == 1
    assert store.get_key(key_id).balance == 1
    assert store.pending(key_id) == 0
    assert [e for e in store.usage(key_id) if e.kind == "charge"] == []
    # the credit given back is spendable right away
    assert p.post(token).status_code == 200
    assert store.get_key(key_id).balance == 0


def test_cost_per_route_is_configurable(store):
    p = Platform(store, config=PlatformConfig(rate_limit=1000, costs={GEN: 3, VAL: 2}))
    key_id, token = p.key(credits=5)
    assert p.post(token).status_code == 200
    assert store.get_key(key_id).balance == 2
    assert p.post(token, path=VAL).status_code == 200
    assert store.get_key(key_id).balance == 0
    assert p.post(token).status_code == 402
    assert [e.amount for e in store.usage(key_id) if e.kind == "charge"] == [3, 2]


def test_concurrent_requests_spend_exactly_the_balance(store):
    """Balance N, M > N concurrent requests: exactly N succeed, the rest get 402, never below zero."""
    n, m = 7, 40
    p = Platform(store)
    key_id, token = p.key(credits=n)

    def one(_):
        return p.post(token, params={"sleep": "0.01"}).status_code

    with ThreadPoolExecutor(max_workers=12) as pool:
        statuses = list(pool.map(one, range(m)))
    assert statuses.count(200) == n
    assert statuses.count(402) == m - n
    assert store.get_key(key_id).balance == 0
    assert p.work.calls == n
    assert len([e for e in store.usage(key_id) if e.kind == "charge"]) == n


def _reserve_in_processes(kind_and_url, key_id, attempts, results):
    """Child process: open its own store connection and try to reserve `attempts` single credits."""
    kind, where = kind_and_url
    if kind == "sqlite":
        from pipeline.storage.sqlite import SqliteStore
        s = SqliteStore(where)
    else:
        from pipeline.storage.postgres import PostgresStore
        s = PostgresStore(where)
    got = 0
    for i in range(attempts):
        rid = s.reserve(key_id, 1, f"p{os.getpid()}-{i}", GEN, 600)
        if rid is not None:
            s.commit(rid)
            got += 1
    results.put(got)


def test_concurrent_processes_never_overdraw(store):
    """The same across processes (several workers or nodes on one database)."""
    key_id = "proc" + os.urandom(4).hex()
    store.create_key(key_id, "procs", "test", "x", 25, None)
    where = ("sqlite", str(store.path)) if hasattr(store, "path") else ("postgres", store.url)
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=_reserve_in_processes, args=(where, key_id, 15, results)) for _ in range(4)]
    for pr in procs:
        pr.start()
    got = sum(results.get(timeout=60) for _ in procs)
    for pr in procs:
        pr.join(30)
    assert got == 25
    assert store.get_key(key_id).balance == 0
    assert len([e for e in store.usage(key_id) if e.kind == "charge"]) == 25


def _reserve_and_crash(where, key_id):
    kind, url = where
    if kind == "sqlite":
        from pipeline.storage.sqlite import SqliteStore
        s = SqliteStore(url)
    else:
        from pipeline.storage.postgres import PostgresStore
        s = PostgresStore(url)
    s.reserve(key_id, 2, "crashed-request", GEN, 0.5)
    os._exit(9)  # the worker dies mid-request: no commit, no release


def test_a_crash_never_charges_for_an_undelivered_document(store):
    key_id = "crash" + os.urandom(4).hex()
    store.create_key(key_id, "crash", "test", "x", 5, None)
    where = ("sqlite", str(store.path)) if hasattr(store, "path") else ("postgres", store.url)
    ctx = multiprocessing.get_context("spawn")
    pr = ctx.Process(target=_reserve_and_crash, args=(where, key_id))
    pr.start()
    pr.join(60)
    assert pr.exitcode == 9
    assert store.get_key(key_id).balance == 3 and store.pending(key_id) == 2  # held, not charged
    time.sleep(0.6)
    assert store.release_expired() == 1
    assert store.get_key(key_id).balance == 5 and store.pending(key_id) == 0
    assert [e for e in store.usage(key_id) if e.kind == "charge"] == []


def test_revoked_key_cannot_reserve_and_topups_are_ledger_rows(store):
    store.create_key("topup0000001", "t", "test", "x", 1, None)
    assert store.add_credits("topup0000001", 4) == 5
    assert store.add_credits("topup0000001", -9) is None  # never below zero
    assert store.add_credits("nosuchkey", 1) is None
    assert [(e.kind, e.amount) for e in store.usage("topup0000001")] == [("credit", 1), ("credit", 4)]
    assert store.revoke_key("topup0000001") and not store.revoke_key("topup0000001")
    assert store.reserve("topup0000001", 1, "r", GEN, 60) is None


def test_the_service_gives_back_expired_reservations_by_itself(store):
    """A reservation left by a dead worker is swept by the next paying request once its TTL has passed."""
    p = Platform(store, config=PlatformConfig(rate_limit=1000, reservation_ttl=0.2))
    key_id, token = p.key(credits=1)
    assert store.reserve(key_id, 1, "from-a-dead-worker", GEN, 0.2) is not None
    assert store.get_key(key_id).balance == 0
    time.sleep(0.3)
    r = p.post(token)
    assert r.status_code == 200
    assert store.get_key(key_id).balance == 0 and store.pending(key_id) == 0
    assert [e.request_id for e in store.usage(key_id) if e.kind == "charge"] == [r.headers["X-Request-Id"]]


@pytest.mark.parametrize("path", ["/v1/invoice/en16931", "/v1/invoice/xrechnung", "/v1/invoice/zugferd"])
@pytest.mark.parametrize("body,content_type,status", [
    (b'{"invoice": ', "application/json", 400),                  # malformed JSON
    (b'{"invoice": {}, "config": {"syntax": "CII"}}', "application/json", 400),  # the model refuses it
    (b'{}', "text/plain", 415)])
def test_input_validation_comes_before_credits(store, path, body, content_type, status):
    """A request that is wrong in itself is told so whatever the balance (400, not 402), and reserves nothing;
    a valid request with a zero balance is still 402 before any work."""
    p = Platform(store)
    key_id, token = p.key(credits=0)
    r = p.post(token, path=path, body=body, headers={"Content-Type": content_type})
    assert r.status_code == status, r.text
    assert store.get_key(key_id).balance == 0 and store.pending(key_id) == 0
    rich, rich_token = p.key(credits=1)
    assert p.post(rich_token, path=path, body=body, headers={"Content-Type": content_type}).status_code == status
    assert store.get_key(rich).balance == 1 and store.pending(rich) == 0
    assert [e for e in store.usage(rich) if e.kind == "charge"] == []


def test_a_malformed_conversion_request_is_400_before_credits(store):
    p = Platform(store)
    key_id, token = p.key(credits=0)
    r = p.post(token, path="/v1/invoice/convert", body=b"not multipart",
               headers={"Content-Type": "multipart/form-data; boundary=x"})
    assert r.status_code == 400, r.text
    assert store.get_key(key_id).balance == 0 and store.pending(key_id) == 0


def test_a_valid_generation_request_without_credits_is_402():
    from pipeline.cli.golden import FIXTURES
    from pipeline.storage.sqlite import SqliteStore
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "s.sqlite3")
        p = Platform(store)
        _, token = p.key(credits=0)
        r = p.post(token, path="/v1/invoice/en16931", body=(FIXTURES / "vat-g-export.json").read_bytes(),
                   headers={"Content-Type": "application/json"})
        assert r.status_code == 402, r.text
        _, token = p.key(credits=1)
        r = p.post(token, path="/v1/invoice/en16931", body=(FIXTURES / "vat-g-export.json").read_bytes(),
                   headers={"Content-Type": "application/json"})
        assert r.status_code == 200, r.text
        store.close()


@pytest.mark.parametrize("sent", ["//v1/invoice/h4work", "///v1/invoice/h4work/", "/v1/invoice/h4work/"])
def test_a_path_spelled_otherwise_that_reaches_a_charged_resource_is_charged(store, sent):
    """Falcon routes `//v1/invoice/xrechnung` to the generation resource, but the price was read from the path as
    sent, which did not start with /v1/invoice/: a document for free (found through `pipeline serve`). The price
    and the ledger's endpoint are the route's."""
    p = Platform(store, config=PlatformConfig(rate_limit=1000, costs={GEN: 3}))
    key_id, token = p.key(credits=5)
    r = p.post(token, path=sent, headers={"X-Request-Id": "spelled-otherwise"})
    assert r.status_code == 200 and p.work.calls == 1, r.text
    assert store.get_key(key_id).balance == 2
    assert [(e.amount, e.endpoint) for e in store.usage(key_id) if e.kind == "charge"] == [(3, GEN)]
    r = p.post(token, path=sent)
    assert r.status_code == 402 and p.work.calls == 1


def test_balances_stay_whole_numbers_within_their_bound(store):
    """A top-up past 2**63 - 1 turned SQLite's INTEGER balance into a REAL (rounded: ledger and balance no longer
    agreed) and was an uncaught bigint overflow on PostgreSQL: balances and top-ups are bounded."""
    from pipeline.storage.store import MAX_BALANCE

    store.create_key("bounded00001", "b", "test", "x", MAX_BALANCE - 1, None)
    with pytest.raises(ValueError):
        store.create_key("bounded00002", "b", "test", "x", MAX_BALANCE + 1, None)
    assert store.add_credits("bounded00001", 2) is None
    assert store.add_credits("bounded00001", 2**63) is None and store.add_credits("bounded00001", -2**63) is None
    assert store.add_credits("bounded00001", 1) == MAX_BALANCE
    key = store.get_key("bounded00001")
    assert key.balance == MAX_BALANCE and type(key.balance) is int
    assert sum(e.amount for e in store.usage("bounded00001")) == MAX_BALANCE


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf", "soon"])
def test_a_reservation_ttl_that_is_no_duration_is_refused(value):
    """A TTL of 0 or less let a sweep give reservations back while their requests ran (documents delivered
    uncharged); a NaN one failed the reservation's NOT NULL: both a 500 or a loss, now a configuration error
    (every API request fails closed with 503, as for an unreadable rate limit)."""
    from pipeline.service.platform import ConfigError

    with pytest.raises(ConfigError):
        PlatformConfig.from_env({"EINVOICE_RESERVATION_TTL": value})
    with pytest.raises(ConfigError):
        PlatformConfig.from_env({"EINVOICE_KEY_CACHE_SECONDS": "-1" if value == "0" else value})
    assert PlatformConfig.from_env({"EINVOICE_RESERVATION_TTL": "30"}).reservation_ttl == 30


def test_postgres_reservations_expire_on_the_database_clock(tmp_path, monkeypatch):
    """Nodes share PostgreSQL but not a clock. Expiry was written and swept on each node's own clock: a node set an
    hour ahead gave back a reservation another node had just made (its document then went out uncharged), and one
    set an hour behind wrote reservations every other node swept at once. Both now use the database's clock."""
    from test_platform_helpers import make_store

    pg = make_store("postgres", tmp_path)
    try:
        pg.create_key("skewed000001", "s", "test", "x", 5, None)
        real = time.time
        held = pg.reserve("skewed000001", 1, "r-ok", GEN, 600)         # a node with the right time
        monkeypatch.setattr(time, "time", lambda: real() + 3600)        # a node an hour ahead sweeps
        assert pg.release_expired() == 0
        monkeypatch.setattr(time, "time", lambda: real() - 3600)        # a node an hour behind reserves
        behind = pg.reserve("skewed000001", 1, "r-behind", GEN, 600)
        monkeypatch.setattr(time, "time", real)
        assert pg.release_expired() == 0 and pg.pending("skewed000001") == 2
        assert pg.commit(held) and pg.commit(behind)
        assert pg.get_key("skewed000001").balance == 3
        short = pg.reserve("skewed000001", 2, "r-short", GEN, 0.05)     # expiry itself still works
        time.sleep(0.2)
        assert pg.release_expired() == 1 and pg.get_key("skewed000001").balance == 3
    finally:
        pg.drop_schema()
        pg.close()


def test_through_pipeline_serve_a_doubled_slash_generates_nothing_for_free(tmp_path):
    """The reproduction: `POST //v1/invoice/xrechnung` to `pipeline serve` answered 200 with the document and the
    access log said `creditsCharged: 0`, the balance untouched. Now charged like the path it reaches, and refused
    with 402 once the balance is spent."""
    import json

    import requests

    from pipeline.cli.golden import FIXTURES
    from test_platform_helpers import cli, serve_with_key

    server, env, token = serve_with_key(tmp_path, "slashes", 1, workers=1, warm=False)
    try:
        body = (FIXTURES / "invoice-all-fields.json").read_bytes()
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        r = requests.post(server.url + "//v1/invoice/xrechnung", data=body, headers=headers, timeout=300)
        assert r.status_code == 200 and r.content.startswith(b"<?xml"), r.text[:300]
        r2 = requests.post(server.url + "//v1/invoice/xrechnung", data=body, headers=headers, timeout=300)
        assert r2.status_code == 402 and r2.json()["errorCode"] == "INSUFFICIENT_CREDITS", r2.text
        keys = json.loads(cli(env, "keys", "list", "--json").stdout)
        assert keys[0]["balance"] == 0
        usage = json.loads(cli(env, "keys", "usage", keys[0]["keyId"], "--json").stdout)
        assert [(u["kind"], u["amount"], u["endpoint"]) for u in usage] == \
            [("credit", 1, None), ("charge", 1, "/v1/invoice/xrechnung")]
        lines = [json.loads(x) for x in server.log_path.read_text().splitlines() if x.startswith('{"event"')]
        line = next(x for x in lines if x["requestId"] == r.headers["X-Request-Id"])
        assert line["creditsCharged"] == 1
    finally:
        server.stop()
