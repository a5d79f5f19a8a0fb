"""deploy/'s nginx in front of a `pipeline serve` node (SQLite): a browser's preflight (OPTIONS) passes through and
is answered 200 with the route's Allow whatever the key, and a 15 MB body sent with a method its route does not answer
is the node's 405 every time. nginx reads a client's whole body before it sends the head and then sends all of it:
the node's worker, which closes a direct client's connection right after an early 405, reads a trusted proxy's body
and lets the app answer (a connection closed under nginx made its answer a 502, about half of the time)."""
from __future__ import annotations

import pytest
import requests

from test_deploy_nginx import Front
from test_platform_helpers import serve_with_key

VALIDATE = "/v1/invoice/xrechnung/validate"


@pytest.fixture(scope="module")
def front(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nginx-methods")
    (tmp / "node").mkdir()
    server, _, token = serve_with_key(tmp / "node", "nginx-methods", 10, workers=1, warm=False)
    try:
        (tmp / "nginx").mkdir()
        f = Front(tmp / "nginx", [server.port])
    except BaseException:
        server.stop()
        raise
    yield f, token
    f.stop()
    server.stop()


def test_a_preflight_through_nginx_is_200_with_allow_whatever_the_key(front):
    f, token = front
    for authorization in (None, "Bearer einv_test_nope", f"Bearer {token}"):
        headers = {"Origin": "https://elsewhere.example", "Access-Control-Request-Method": "POST"}
        if authorization:
            headers["Authorization"] = authorization
        r = requests.options(f.url + VALIDATE, headers=headers, timeout=10)
        assert (r.status_code, r.headers["Allow"], r.content) == (200, "OPTIONS, POST", b""), r.text
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
