"""Fault: PostgreSQL without Redis. Each worker used to count a key's requests on its own (a 60/min key got 100
of 100 through). With a shared database and no Redis the windows now live in that database: every worker
of every node counts in the same window."""
from __future__ import annotations

import uuid

import pytest
import requests

from faults_common import PgNode
from test_platform_helpers import pg_url
from test_serve import _multipart, _ubl_sample

from pipeline.storage.postgres import PostgresStore
from pipeline.storage.ratelimit import LimiterUnavailable, PostgresLimiter, open_limiter
from pipeline.settings import get_settings


def test_postgres_without_redis_gets_the_database_limiter(monkeypatch):
    monkeypatch.delenv("EINVOICE_REDIS_URL", raising=False)
    get_settings.cache_clear()
    store = PostgresStore(pg_url("faults_lim_" + uuid.uuid4().hex[:8]))
    try:
        limiter = open_limiter(store)
        assert isinstance(limiter, PostgresLimiter)
        decisions = [limiter.hit("k", 3, 60) for _ in range(5)]
        assert [d.allowed for d in decisions] == [True, True, True, False, False]
        assert [d.remaining for d in decisions] == [2, 1, 0, 0, 0] and 55 <= decisions[0].reset <= 60
        with pytest.raises(LimiterUnavailable):  # never a per-worker fallback
            open_limiter(None)
    finally:
        store.drop_schema()
        get_settings.cache_clear()


@pytest.fixture
def two_nodes(tmp_path):
    a = PgNode(tmp_path / "a", workers=2, redis_url=None, warm=True)
    try:
        b = PgNode(tmp_path / "b", workers=2, redis_url=None, warm=True, schema=a.schema)
    except BaseException:
        a.stop()
        raise
    yield a, b
    b.stop()
    a.stop()


def test_limits_are_shared_by_every_worker_of_two_nodes_without_redis(two_nodes):
    a, b = two_nodes
    _, token = a.key(credits=0, rate_limit="10/min")
    sample = _ubl_sample()
    statuses = []
    for i in range(24):
        node = (a, b)[i % 2]
        r = requests.post(node.server.url + "/v1/invoice/xrechnung/validate", files=_multipart(sample), timeout=30,
                          headers={"Authorization": f"Bearer {token}"})
        statuses.append(r.status_code)
        assert r.headers["RateLimit-Limit"] == "10"
    assert statuses.count(200) == 10 and statuses.count(429) == 14, statuses
    assert statuses[:10] == [200] * 10


def test_an_unreachable_database_limiter_fails_closed(two_nodes):
    a, _ = two_nodes
    _, token = a.key(credits=0)
    a.proxy.set_mode("swallow")
    try:
        r = requests.post(a.server.url + "/v1/invoice/xrechnung/validate", files=_multipart(_ubl_sample()),
                          timeout=30, headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 503  # the key lookup or the limiter: either way fail closed, never unlimited
    finally:
        a.proxy.set_mode("pass")
