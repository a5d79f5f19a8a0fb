"""Fault: PostgreSQL stalls behind a silent network (the proxy swallows every packet: no answer, no refusal)
or resets its connections. API calls get 503 RATE_LIMIT_CONFIGURATION_UNAVAILABLE (errors[0].code STORAGE_UNAVAILABLE)
within a few seconds, /healthz never waits for the database, /readyz answers 503 within its own timeout, and service
resumes when the database does."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from faults_common import FIXTURE, PgNode, wait_for
from test_platform_helpers import REDIS_URL

# EINVOICE_DB_STATEMENT_TIMEOUT 3 s + 0.5 s client-side margin; the first call on a stalled connection waits
# that long, later ones fail fast during the cooldown; a call queued in the same worker behind the first waits
# for it too (5.7 s seen with other tests busy on both cores). A bound with room for a loaded machine:
STALL_BOUND = 8.0
READY_BOUND = 1.6  # EINVOICE_READY_TIMEOUT 1 s


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    n = PgNode(tmp_path_factory.mktemp("stall"), workers=2, redis_url=REDIS_URL, warm=True)
    key_id, token = n.key(credits=100)
    yield n, key_id, token
    n.stop()


UNAVAILABLE = ("RATE_LIMIT_CONFIGURATION_UNAVAILABLE", "STORAGE_UNAVAILABLE")   # (errorCode, errors[0].code)


def _generate(n, token, rid):
    t = time.perf_counter()
    try:
        r = requests.post(n.server.url + "/v1/invoice/xrechnung", data=FIXTURE.read_bytes(), timeout=30, headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json", "X-Request-Id": rid})
        # an unreachable store is the spec's 503 RATE_LIMIT_CONFIGURATION_UNAVAILABLE, refined in errors[0].code
        code = (r.json()["errorCode"], r.json()["errors"][0]["code"] if r.json()["errors"] else None) \
            if r.status_code != 200 else None
        return r.status_code, code, time.perf_counter() - t
    except requests.RequestException as exc:
        return type(exc).__name__, None, time.perf_counter() - t


def _timed_get(url):
    t = time.perf_counter()
    r = requests.get(url, timeout=30)
    return r.status_code, time.perf_counter() - t, r


def test_normal_service_through_the_proxy(node):
    n, _, token = node
    assert _generate(n, token, "stall-ok-1")[0] == 200
    status, _, r = _timed_get(n.server.url + "/readyz")
    assert status == 200 and r.json()["storage"] == "ok" and r.json()["rateLimiter"] == "ok"


def test_a_stalled_database_gives_503_within_seconds_and_healthz_stays_up(node):
    n, _, token = node
    n.proxy.set_mode("swallow")
    try:
        with ThreadPoolExecutor(8) as pool:
            calls = [pool.submit(_generate, n, token, f"stall-{i}") for i in range(6)]
            time.sleep(0.2)
            health = [pool.submit(_timed_get, n.server.url + "/healthz") for _ in range(2)]
            results = [c.result(60) for c in calls]
            healths = [h.result(60) for h in health]
        for status, code, took in results:
            assert (status, code) == (503, UNAVAILABLE) and took < STALL_BOUND, results
        # while API calls wait on the database a /healthz may queue behind one of them, never longer
        assert all(s == 200 and took < STALL_BOUND for s, took, _ in healths), healths
        # on its own, during the outage, it answers at once: it never touches the database
        for _ in range(5):
            status, took, _ = _timed_get(n.server.url + "/healthz")
            assert status == 200 and took < 0.5, took
        # readiness says why, within its own timeout, again and again
        for _ in range(3):
            status, took, r = _timed_get(n.server.url + "/readyz")
            assert status == 503 and took < READY_BOUND, (status, took)
            assert r.json()["errorCode"] == "NOT_READY" and "storage" in r.json()["message"]
        # later calls during the outage get their 503 fast too
        status, code, took = _generate(n, token, "stall-late")
        assert (status, code) == (503, UNAVAILABLE) and took < STALL_BOUND
    finally:
        n.proxy.set_mode("pass")
    # the database is back: so is the service, on every worker once its cooldown (2 s) has run out
    back = time.monotonic()
    assert wait_for(lambda: _generate(n, token, "stall-back")[0] == 200, 15, step=0.5)
    time.sleep(max(0.0, back + 2.5 - time.monotonic()))
    assert [_generate(n, token, "stall-back")[0] for _ in range(4)] == [200] * 4
    assert _timed_get(n.server.url + "/readyz")[0] == 200


def test_reset_connections_cost_503s_only_until_the_cooldown_then_recover(node):
    """Each worker's connection is reset: its next request is a 503 and it answers 503 for the fail-fast cooldown
    (2 s), then reconnects. Which worker gets which request is gunicorn's choice, so the test asks until two answers
    in a row are 200, within a bound: recovery, never another status."""
    n, _, token = node
    assert _generate(n, token, "reset-before")[0] == 200
    n.proxy.reset()
    outcomes, deadline = [], time.monotonic() + 15
    while outcomes[-2:] != [200, 200] and time.monotonic() < deadline:
        outcomes.append(_generate(n, token, f"reset-{len(outcomes)}")[0])
    assert outcomes[-2:] == [200, 200], outcomes
    assert set(outcomes) <= {200, 503}


def test_nothing_was_charged_for_the_503s(node):
    n, key_id, _ = node
    charges = n.charges(key_id)
    assert not any(rid.startswith("stall-") and rid not in ("stall-back",) and rid != "stall-ok-1"
                   for rid in charges if rid), charges
    assert n.direct.pending(key_id) == 0
