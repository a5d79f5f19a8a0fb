"""PostgreSQL and Redis restarted (or their connections reset) while the service runs: the next request is served
on a fresh connection instead of a 503 per worker, nothing is reserved or counted twice for it, and a dependency
that is really away still fails closed within its bounds."""
from __future__ import annotations

import shutil
import subprocess
import time
import uuid

import pytest
import requests

from fault_proxy import FaultProxy
from pipeline.storage.postgres import PostgresStore, _DeadConnection
from pipeline.storage.ratelimit import LimiterUnavailable, PostgresLimiter, RedisLimiter
from pipeline.storage.store import StorageUnavailable
from test_platform_helpers import GEN, PG_BASE, Server, cli, free_port, pg_url


def _redis(port: int) -> subprocess.Popen:
    exe = shutil.which("redis-server")
    assert exe, "redis-server is needed (scripts/test.sh runs on a machine with Redis)"
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    probe = RedisLimiter(f"redis://127.0.0.1:{port}/0")
    for _ in range(100):
        try:
            probe.ping()
            return proc
        except LimiterUnavailable:
            time.sleep(0.05)
    raise AssertionError("redis-server did not start")


@pytest.fixture
def pg_behind_proxy():
    schema = "h19rs_" + uuid.uuid4().hex[:10]
    proxy = FaultProxy(int(PG_BASE.rsplit(":", 1)[1].split("/")[0]))
    store = PostgresStore(proxy.url(schema=schema))
    yield proxy, store
    proxy.stop()
    store.close()
    direct = PostgresStore(pg_url(schema))
    direct.drop_schema()
    direct.close()


def test_postgres_calls_survive_their_connection_being_reset(pg_behind_proxy):
    """A database restart (or a proxy or firewall dropping connections) leaves every worker's kept connection
    dead. Before: the next call on it raised StorageUnavailable, a 503 for one request per worker although the
    database answered again. Now the key lookup, the limiter's window and the reservation run once more on a
    fresh connection."""
    proxy, store = pg_behind_proxy
    limiter = PostgresLimiter(store)
    store.create_key("restart00001", "r", "test", "x", 5, None)
    assert limiter.hit("restart00001", 10, 60).remaining == 9
    for call in (lambda: store.get_key("restart00001").balance == 5,
                 lambda: limiter.hit("restart00001", 10, 60).remaining == 8,
                 lambda: store.reserve("restart00001", 2, "after-reset", GEN, 600) is not None):
        proxy.reset()
        assert call()
    assert store.get_key("restart00001").balance == 3 and store.pending("restart00001") == 2


def test_a_reservation_whose_answer_was_lost_is_not_made_twice(pg_behind_proxy, monkeypatch):
    """The retry of `reserve` uses the same reservation id: when the first attempt did reserve and only its answer
    was lost, the second finds the id taken and the credits are debited once, not twice."""
    _, store = pg_behind_proxy
    store.create_key("restart00002", "r", "test", "x", 5, None)
    real, calls = store._one_trip, []

    def lost_answer(sql, params, durable):
        calls.append(params["id"])
        if len(calls) == 1:
            real(sql, params, durable)
            raise _DeadConnection("PostgreSQL: the answer was lost")
        return real(sql, params, durable)

    monkeypatch.setattr(store, "_one_trip", lost_answer)
    reservation = store.reserve("restart00002", 2, "lost-answer", GEN, 600)
    assert reservation is not None and calls == [reservation, reservation]
    assert store.get_key("restart00002").balance == 3 and store.pending("restart00002") == 2


def test_a_database_that_is_really_away_still_fails_within_its_bounds(pg_behind_proxy):
    """The retry is for a dead kept connection only: a silent network (the proxy swallowing) still fails after
    the statement deadline (3.5 s) without a second wait, and a reset then silent network after one connect
    timeout (2 s)."""
    proxy, store = pg_behind_proxy
    store.create_key("restart00003", "r", "test", "x", 5, None)
    proxy.set_mode("swallow")
    started = time.monotonic()
    with pytest.raises(StorageUnavailable):
        store.get_key("restart00003")
    assert time.monotonic() - started < 3.5 + 1.5
    store.drop_connection()
    proxy.set_mode("pass")
    assert store.get_key("restart00003").balance == 5
    proxy.set_mode("swallow")
    proxy.reset()
    started = time.monotonic()
    with pytest.raises(StorageUnavailable):
        store.get_key("restart00003")
    assert time.monotonic() - started < 2 + 1.5


def test_the_redis_limiter_answers_at_once_after_redis_restarted():
    """Redis restarted: the limiter's kept connection is closed. Before: the next hit was a 503 in every worker.
    Now once more on a fresh connection; Redis really down is still a 503 at once."""
    port = free_port()
    proc = _redis(port)
    limiter = RedisLimiter(f"redis://127.0.0.1:{port}/0", prefix=f"h19rs:{uuid.uuid4().hex[:8]}:")
    try:
        assert limiter.hit("k", 5, 60).remaining == 4
        proc.terminate()
        proc.wait()
        proc = _redis(port)
        assert limiter.hit("k", 5, 60).remaining == 4   # a new Redis: a new window (--save ""), and no 503
        proc.terminate()
        proc.wait()
        started = time.monotonic()
        with pytest.raises(LimiterUnavailable):
            limiter.hit("k", 5, 60)
        assert time.monotonic() - started < 1.5
    finally:
        proc.kill()
        proc.wait()


def test_through_pipeline_serve_a_restart_of_both_costs_no_request(tmp_path):
    """Two workers on PostgreSQL (behind a proxy) and Redis; the database's connections are reset and Redis is
    restarted; /readyz (which reads both) and the requests after that are answered as before by both workers,
    none with 503."""
    schema = "h19rs_" + uuid.uuid4().hex[:10]
    proxy = FaultProxy(int(PG_BASE.rsplit(":", 1)[1].split("/")[0]))
    port = free_port()
    redis = _redis(port)
    env = {"EINVOICE_DATA_DIR": str(tmp_path), "EINVOICE_DATABASE_URL": proxy.url(schema=schema),
           "EINVOICE_REDIS_URL": f"redis://127.0.0.1:{port}/0", "EINVOICE_KEY_CACHE_SECONDS": "0"}
    token = cli({**env, "EINVOICE_DATABASE_URL": pg_url(schema)}, "keys", "create", "--name", "restart", "--env",
                "test", "--rate-limit", "1000/min").stdout.strip()
    server = Server(env, workers=2, warm=False, log_path=tmp_path / "serve.log")
    try:
        session = requests.Session()
        headers = {"Authorization": f"Bearer {token}"}

        def statuses(n):  # an authenticated 405: the key read from the database, one hit of the limiter
            return [session.get(server.url + "/v1/invoice/xrechnung", headers=headers, timeout=30).status_code
                    for _ in range(n)]

        assert set(statuses(8)) == {405}
        proxy.reset()
        redis.terminate()
        redis.wait()
        redis = _redis(port)
        ready = [requests.get(server.url + "/readyz", timeout=10) for _ in range(4)]
        assert [r.status_code for r in ready] == [200] * 4, [r.text for r in ready]
        proxy.reset()
        after = statuses(12)
        assert after == [405] * 12, after
    finally:
        server.stop()
        proxy.stop()
        redis.kill()
        redis.wait()
        direct = PostgresStore(pg_url(schema))
        direct.drop_schema()
        direct.close()
