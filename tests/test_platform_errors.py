"""Request ids, the one error contract for every non-2xx (including Falcon's own 404/405 and the stages'
406/413/415), no leaks, 500s logged with the request id, and one JSON access line per request."""
from __future__ import annotations

import json
import logging

import pytest

from pipeline.errors import STATUS_TEXT
from test_platform_helpers import GEN, VAL, Platform, make_store

ERROR_KEYS = {"requestId", "status", "errorCode", "message", "errors"}


@pytest.fixture
def p(tmp_path):
    s = make_store("sqlite", tmp_path)
    yield Platform(s)
    s.close()


def _is_error(r, status, code=None):
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json
    assert set(body) == ERROR_KEYS
    assert body["status"] == STATUS_TEXT[status]
    assert body["requestId"] == r.headers["X-Request-Id"]
    if code:
        assert body["errorCode"] == code
    for leak in ("Traceback", "/work/", "site-packages", ".py\"", "RuntimeError"):
        assert leak not in r.text
    return body


@pytest.mark.parametrize("sent, kept", [
    ("abc-123", True), ("A.b_c:d-1", True), ("x" * 128, True),
    ("x" * 129, False), ("has space", False), ("semi;colon", False), ("ünï", False), ("", False),
    # `^...$` let a final newline through ($ matches before it): the id went back out as a header value with it
    ("abc-123\n", False), ("abc\r\nSet-Cookie: a=b", False),
])
def test_request_id_kept_or_replaced(p, sent, kept):
    _, token = p.key()
    r = p.post(token, path=VAL, headers={"X-Request-Id": sent})
    rid = r.headers["X-Request-Id"]
    assert (rid == sent) is kept
    assert 1 <= len(rid) <= 128
    # echoed in the error body too
    r = p.client.simulate_post(GEN, headers={"X-Request-Id": sent})
    assert r.json["requestId"] == r.headers["X-Request-Id"]
    assert (r.headers["X-Request-Id"] == sent) is kept


def test_falcon_errors_use_the_error_shape(p):
    _is_error(p.client.simulate_get("/no/such/path"), 404, "NOT_FOUND")
    _, token = p.key()
    r = p.client.simulate_request("PATCH", "/healthz")
    _is_error(r, 405, "METHOD_NOT_ALLOWED")


def test_500_is_generic_and_logged_with_the_request_id(p, caplog):
    _, token = p.key()
    with caplog.at_level(logging.INFO):
        r = p.post(token, params={"outcome": "raise"}, headers={"X-Request-Id": "trace-500"})
    body = _is_error(r, 500, "INTERNAL_ERROR")
    assert body["requestId"] == "trace-500"
    assert "/secret/internal/path" not in r.text
    errors = [rec for rec in caplog.records if rec.levelno >= logging.ERROR]
    assert any("trace-500" in rec.getMessage() and rec.exc_info for rec in errors)


def test_one_json_access_line_per_request(p, caplog):
    key_id, token = p.key(credits=1)
    with caplog.at_level(logging.INFO, logger="pipeline.access"):
        p.post(token, headers={"X-Request-Id": "log-1"})
        p.post(token, headers={"X-Request-Id": "log-2"})
        p.client.simulate_get("/healthz", headers={"X-Request-Id": "log-3"})
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "pipeline.access"]
    assert [x["requestId"] for x in lines] == ["log-1", "log-2", "log-3"]
    first, second, health = lines
    assert first["method"] == "POST" and first["path"] == GEN and first["status"] == 200
    assert first["keyId"] == key_id and first["creditsCharged"] == 1 and first["durationMs"] >= 0
    assert second["status"] == 402 and second["creditsCharged"] == 0
    assert health["keyId"] is None and health["status"] == 200
    assert set(first) == {"event", "method", "path", "status", "durationMs", "keyId", "requestId", "creditsCharged"}


# -- against the real stage endpoints, through the platform layer ------------------------------------------


@pytest.fixture
def real(tmp_path, monkeypatch):
    from pipeline.settings import get_settings

    monkeypatch.setenv("EINVOICE_MAX_UPLOAD_BYTES", "2000")
    get_settings.cache_clear()
    s = make_store("sqlite", tmp_path)
    p = Platform(s)
    yield p
    s.close()
    get_settings.cache_clear()


def _mounted(p, path):
    return p.app._router.find(path) is not None


def test_stage_errors_use_the_error_shape(real):
    p = real
    assert _mounted(p, "/v1/invoice/xrechnung") and _mounted(p, "/v1/invoice/xrechnung/validate")
    key_id, token = p.key(credits=5)
    auth = {"Authorization": f"Bearer {token}"}
    _is_error(p.client.simulate_get("/v1/invoice/xrechnung", headers=auth), 405, "METHOD_NOT_ALLOWED")
    _is_error(p.client.simulate_post("/v1/invoice/xrechnung", headers={**auth, "Content-Type": "text/plain"},
                                     body="x"), 415)
    _is_error(p.client.simulate_post("/v1/invoice/xrechnung", headers={
        **auth, "Content-Type": "application/json", "Accept": "image/png"}, body="{}"), 406)
    _is_error(p.client.simulate_post("/v1/invoice/xrechnung", headers={**auth, "Content-Type": "application/json"},
                                     body="{not json"), 400, "INVALID_INPUT")
    boundary = "h4boundary"
    big = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"request\"\r\n"
           f"Content-Type: application/json\r\n\r\n{{}}\r\n"
           f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.xml\"\r\n"
           f"Content-Type: application/xml\r\n\r\n<a>{'x' * 5000}</a>\r\n--{boundary}--\r\n")
    r = p.client.simulate_post("/v1/invoice/xrechnung/validate", body=big, headers={
        **auth, "Content-Type": f"multipart/form-data; boundary={boundary}"})
    _is_error(r, 413)
    # none of these failures cost anything
    assert p.store.get_key(key_id).balance == 5
    assert [e for e in p.store.usage(key_id) if e.kind == "charge"] == []
