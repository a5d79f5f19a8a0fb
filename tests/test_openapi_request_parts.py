"""What the OpenAPI fuzzing (tests/test_openapi_fuzz.py) found in the request parts and parameters, fixed: each
answer follows the document, and the document says what the service refuses."""
from __future__ import annotations

import json

import pytest

from conftest import CORPUS
from test_platform_helpers import sqlite_platform

XML = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml").read_bytes()


def _form(parts: list[tuple[str, str | None, bytes]], boundary: str = "b0undary") -> tuple[bytes, str]:
    body = b""
    for name, filename, data in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        body += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + data + b"\r\n"
    return body + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


@pytest.fixture
def service(tmp_path, monkeypatch):
    """(client, Authorization header, the OpenAPI document) of the app in this process."""
    with sqlite_platform(tmp_path, monkeypatch) as platform:
        _, token = platform.key(1000)
        doc = platform.client.simulate_get("/v1/openapi.json").json
        yield platform.client, {"Authorization": f"Bearer {token}"}, doc


def test_status_validate_refuses_a_strict_that_is_no_boolean(service):
    """`request.strict` of /fr-ctc/status/validate (its request part is XRechnungValidationRequest) was taken
    whatever it was (`{}`, "yes", 1: a 200); now a 400 naming it, as on every validate endpoint."""
    client, auth, _ = service
    for strict, status in (({}, 400), ("yes", 400), (1, 400), (True, 200), (False, 200), (None, 200)):
        body, ctype = _form([("file", "s.xml", b"<x/>"), ("request", None, json.dumps({"strict": strict}).encode())])
        r = client.simulate_post("/v1/invoice/fr-ctc/status/validate", body=body,
                                 headers={**auth, "Content-Type": ctype})
        assert r.status_code == status, (strict, r.text[:300])
        if status == 400:
            assert r.json["errors"][0]["field"] == "request.strict" and r.json["errors"][0]["code"] == "INVALID_STRICT"


def test_every_form_is_documented_closed_and_refuses_another_part(service):
    """A part of another name is a 400 UNKNOWN_PART on every multipart endpoint, so each form's schema says
    `additionalProperties: false` (a client generated from the document, or a fuzzer, sends no other part)."""
    client, auth, doc = service
    forms = {path: item["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
             for path, item in doc["paths"].items()
             if "multipart/form-data" in item.get("post", {}).get("requestBody", {}).get("content", {})}
    assert len(forms) >= 19 and "/v1/jobs" in forms and "/v1/invoice/fr-ctc/status/render" in forms
    for path, schema in forms.items():
        assert schema["additionalProperties"] is False, path
        assert schema["properties"]["file"]["format"] == "binary", path  # any bytes
        body, ctype = _form([("file", "a.xml", XML), ("requests", None, b"{}")])
        r = client.simulate_post(path, body=body, headers={**auth, "Content-Type": ctype, "Accept": "*/*"})
        assert r.status_code == 400 and r.json["errors"][0]["code"] == "UNKNOWN_PART", (path, r.text[:300])
        assert r.json["errors"][0]["field"] == "requests"


def test_a_language_the_pages_do_not_have_is_documented_as_taken_as_none(service):
    """`?lang=` of the pages and of this document: en or de; any other value is taken as none (by Accept-Language,
    else en), a 200, so the parameter is a string and its description says so (it was an enum: `lang=xx` read as
    a request wrongly accepted)."""
    client, _, doc = service
    for path in ("/", "/docs", "/v1/openapi.json"):
        parameter, = [p for p in doc["paths"][path]["get"]["parameters"] if p["name"] == "lang"]
        assert parameter["schema"]["type"] == "string" and "any other value" in parameter["description"]
        r = client.simulate_get(path, params={"lang": "xx"}, headers={"Accept-Language": "de"})
        assert r.status_code == 200 and r.headers["Content-Language"] == "de", path
        assert client.simulate_get(path, params={"lang": "xx"}).headers["Content-Language"] == "en"


def test_an_empty_results_format_is_refused_not_taken_as_jsonl(service):
    """GET /v1/jobs/{id}/results?format= (empty) answered the JSON lines as if no format was asked for; the
    document's enum is jsonl | zip, so it is a 400 naming `format`, as `format=JSONL` is."""
    client, auth, _ = service
    body, ctype = _form([("file", "a.xml", XML), ("request", None, b'{"operation": "validate"}')])
    job = client.simulate_post("/v1/jobs", body=body, headers={**auth, "Content-Type": ctype})
    assert job.status_code == 202, job.text
    results = f"/v1/jobs/{job.json['id']}/results"
    for fmt in ("", "JSONL", "xml"):
        r = client.simulate_get(results, query_string=f"format={fmt}", headers=auth)
        assert r.status_code == 400 and r.json["errors"][0]["field"] == "format", (fmt, r.text[:300])
    assert client.simulate_get(results, query_string="format=jsonl", headers=auth).status_code == 200
    client.simulate_delete(f"/v1/jobs/{job.json['id']}", headers=auth)
