"""deploy/'s nginx in front of a `pipeline serve` node (SQLite): a browser's preflight (OPTIONS) passes through and
is answered 200 with the route's Allow whatever the key, and a 15 MB body sent with a method its route does not answer
is the node's 405 every time. nginx reads a client's whole body before it sends the head and then sends all of it:
the node's worker, which closes a direct client's connection right after an early 405, reads a trusted proxy's body
and lets the app answer (a connection closed under nginx made its answer a 502, about half of the time). Behind a
proxy not configured as trusted (FORWARDED_ALLOW_IPS) the worker refuses early all the same (404, 405, 413) and
then reads and drops what nginx still sends before it closes: the client gets the node's refusal, never a 502."""
from __future__ import annotations

import json
import time
from contextlib import contextmanager

import pytest
import requests

from test_deploy_nginx import Front
from test_platform_helpers import serve_with_key

VALIDATE = "/v1/invoice/xrechnung/validate"


@contextmanager
def _behind_nginx(tmp, name: str, env: dict | None = None):
    """nginx in front of one node of its own: (front, node, the key's token)."""
    (tmp / "node").mkdir()
    server, _, token = serve_with_key(tmp / "node", name, 10, workers=1, warm=False, env=env)
    try:
        (tmp / "nginx").mkdir()
        f = Front(tmp / "nginx", [server.port])
    except BaseException:
        server.stop()
        raise
    try:
        yield f, server, token
    finally:
        f.stop()
        server.stop()


@pytest.fixture(scope="module")
def front(tmp_path_factory):
    with _behind_nginx(tmp_path_factory.mktemp("nginx-methods"), "nginx-methods") as (f, _, token):
        yield f, token


def test_a_preflight_through_nginx_is_200_with_allow_whatever_the_key(front):
    f, token = front
    for authorization in (None, "Bearer einv_test_nope", f"Bearer {token}"):
        headers = {"Origin": "https://elsewhere.example", "Access-Control-Request-Method": "POST"}
        if authorization:
            headers["Authorization"] = authorization
        r = requests.options(f.url + VALIDATE, headers=headers, timeout=10)
        assert (r.status_code, r.headers["Allow"], r.content) == (200, "OPTIONS, POST", b""), r.text
        assert r.headers["Content-Length"] == "0" and "Content-Type" not in r.headers, r.headers  # nothing to type
        assert not [h for h in r.headers if h.lower().startswith("access-control-")]


def test_a_15_mb_body_with_a_method_nothing_answers_is_405_through_nginx_every_time(front):
    f, _ = front
    body = b"x" * 15_000_000
    statuses = []
    for method in ("PUT", "DELETE", "PATCH") * 4:
        r = requests.request(method, f.url + "/healthz", data=body, timeout=30)
        statuses.append(r.status_code)
        if r.status_code == 405:
            assert r.headers["Allow"] == "GET, HEAD, OPTIONS" and r.json()["errorCode"] == "METHOD_NOT_ALLOWED"
    assert statuses == [405] * 12, statuses
    assert requests.get(f.url + "/healthz", timeout=10).status_code == 200


@pytest.fixture(scope="module")
def untrusted_front(tmp_path_factory):
    """nginx in front of a node whose forwarded_allow_ips does not name nginx's address (a documentation address)."""
    with _behind_nginx(tmp_path_factory.mktemp("nginx-untrusted"), "nginx-untrusted",
                       {"FORWARDED_ALLOW_IPS": "192.0.2.1"}) as (f, server, _):
        yield f, server


EARLY = [  # method, path, body bytes, status, errorCode: refusals the node's worker gives before reading the body
    ("POST", "/nope", 5_000_000, 404, "NOT_FOUND"),
    ("PUT", "/healthz", 5_000_000, 405, "METHOD_NOT_ALLOWED"),
    ("DELETE", VALIDATE, 3_000_000, 405, "METHOD_NOT_ALLOWED"),
    # above the node's upload limit (20 MB and 64 KiB of framing), below nginx's client_max_body_size (21,999,999 bytes)
    ("POST", VALIDATE, 21_500_000, 413, "PAYLOAD_TOO_LARGE"),
]


def test_early_refusals_behind_an_untrusted_proxy_reach_the_client_not_as_502(untrusted_front):
    """Each refusal 6 times (it was a 502 NODE_UNAVAILABLE 2-6 times of 10): the node's status and ErrorResponse with
    the client's request id, given by the worker's front (its access line says `front`), and the node serves on."""
    f, server = untrusted_front
    got = []
    for method, path, size, status, code in EARLY:
        body = b"x" * size
        for i in range(6):
            rid = f"untrusted-{status}-{method}-{i}"
            r = requests.request(method, f.url + path, data=body, timeout=60, headers={
                "X-Request-Id": rid, "Content-Type": "application/octet-stream"})
            got.append((method, path, r.status_code))
            assert r.status_code == status, (method, path, r.status_code, r.text[:300])
            said = r.json()
            assert (said["errorCode"], said["requestId"], said["errors"]) == (code, rid, []), said
        time.sleep(0.5)  # nginx's rate limit (30/s, burst 60) is not what this test is about
    lines = [json.loads(x) for x in server.log_path.read_text(errors="replace").splitlines() if x.startswith("{")]
    front = {x["requestId"] for x in lines if x.get("front") and str(x.get("requestId", "")).startswith("untrusted-")}
    assert len(front) == 6 * len(EARLY), sorted(front)
    assert requests.get(f.url + "/healthz", timeout=10).status_code == 200
    print(f"\n{len(got)} early refusals through nginx, none a 502")
