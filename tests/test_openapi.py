"""GET /v1/openapi.json: a valid OpenAPI 3.1 document covering every mounted endpoint, built from the models
the code uses (held against real reports and errors here), and a bounded schemathesis run against a live
`pipeline serve` that finds no 500 and no response breaking the document."""
from __future__ import annotations

import pytest
from openapi_spec_validator import validate as validate_openapi

from pipeline.errors import ApiError, ErrorDetail
from pipeline.service import schemas
from pipeline.service.openapi import GENERATION
from test_platform_helpers import Platform, make_store, serve_with_key

from conftest import CORPUS


@pytest.fixture(scope="module")
def doc(tmp_path_factory):
    s = make_store("sqlite", tmp_path_factory.mktemp("openapi"))
    p = Platform(s)
    r = p.client.simulate_get("/v1/openapi.json")
    assert r.status_code == 200
    from falcon.inspect import inspect_routes

    mounted = {route.path for route in inspect_routes(p.app)} - {"/v1/invoice/h4work", "/v1/invoice/h4work/validate"}
    s.close()
    return r.json, mounted


def test_is_valid_openapi_31(doc):
    d, _ = doc
    validate_openapi(d)
    assert d["openapi"].startswith("3.1") and d["info"]["version"] == "v1"


def test_describes_every_mounted_endpoint_with_errors_headers_and_security(doc):
    d, mounted = doc
    assert {"/v1/invoice/xrechnung", "/v1/invoice/xrechnung/validate",
            "/v1/invoice/en16931/validate"} <= mounted
    # every route the app serves is described (a new route must be added to pipeline.service.openapi)
    assert mounted == set(d["paths"])
    mounted -= {path for path, item in d["paths"].items() if "get" in item}  # public: service and pages
    assert d["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    assert d["security"] == [{"bearerAuth": []}]
    for path in mounted:
        op = d["paths"][path]["post"]
        for status in ("400", "401", "429", "500", "503"):
            assert op["responses"][status]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorResponse")
        assert "Retry-After" in op["responses"]["429"]["headers"]
        assert "WWW-Authenticate" in op["responses"]["401"]["headers"]
        assert {"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} <= set(op["responses"]["200"]["headers"])
    for path in mounted & set(GENERATION):
        body = d["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
        assert body == {"$ref": "#/components/schemas/InvoiceRequest"}
        assert "402" in d["paths"][path]["post"]["responses"]
    for code in ("AUTHENTICATION_REQUIRED", "MALFORMED_API_KEY", "INVALID_API_KEY", "API_KEY_REVOKED",
                 "INSUFFICIENT_CREDITS", "RATE_LIMIT_EXCEEDED", "RATE_LIMIT_CONFIGURATION_UNAVAILABLE"):
        assert code in str(d)
    for public in ("/healthz", "/readyz", "/v1/openapi.json", "/", "/docs"):
        assert d["paths"][public]["get"]["security"] == []


def test_invoice_schema_is_the_models_schema(doc):
    from pipeline.invoice.model import InvoiceRequest

    d, _ = doc
    own = InvoiceRequest.model_json_schema(ref_template="#/components/schemas/{model}", mode="validation")
    comp = d["components"]["schemas"]
    assert comp["InvoiceRequest"]["required"] == own["required"]
    assert set(comp["InvoiceRequest"]["properties"]) == set(own["properties"])
    for name in own.get("$defs", {}):
        assert name in comp


def test_real_reports_match_the_described_schema():
    """The response models are the contract of Report.to_dict: checked on official documents."""
    from pipeline.flows.validate_xml import validate_xml

    samples = sorted(p for p in CORPUS.rglob("*.xml"))[:6]
    assert samples
    for path in samples:
        report = validate_xml(path.read_bytes(), "xrechnung")
        report.request_id = "rid"
        schemas.XRechnungValidationResponse.model_validate(report.to_dict())
    broken = validate_xml(b"<Invoice><unclosed></Invoice>", "xrechnung")
    body = broken.to_dict()
    schemas.XRechnungValidationResponse.model_validate(body)
    assert body["valid"] is False and body["issues"][0]["location"]["line"] == 1


def test_report_fields_keep_their_meaning():
    """`syntax` is CII, UBL or absent (never null); a PDF finding's position is `location.pdfObject`, not xpath."""
    import io

    import pikepdf
    from pydantic import ValidationError

    from pipeline.flows.validate_pdf import validate_pdf
    from pipeline.flows.validate_xml import validate_xml

    for data in (b"<Invoice><unclosed></Invoice>", b"<NoInvoice/>"):
        body = validate_xml(data, "en16931").to_dict()
        assert "syntax" not in body
        schemas.XRechnungValidationResponse.model_validate(body)
        with pytest.raises(ValidationError):
            schemas.XRechnungValidationResponse.model_validate({**body, "syntax": None})
    pdf = pikepdf.new()
    pdf.add_blank_page()
    out = io.BytesIO()
    pdf.save(out)
    body = validate_pdf(out.getvalue()).to_dict()
    schemas.XRechnungValidationResponse.model_validate(body)
    assert "syntax" not in body  # no embedded invoice
    located = [i["location"] for i in body["issues"] if "location" in i]
    assert located and all(set(loc) == {"pdfObject"} and loc["pdfObject"] for loc in located)


def test_real_errors_match_the_described_schema():
    err = ApiError(400, "INVALID_INPUT", "bad", [ErrorDetail("REQUIRED", "missing", "invoice.seller.name", "BT-27",
                                                             {"any": ["json"]})])
    for status in (400, 401, 402, 404, 405, 406, 413, 415, 422, 429, 500, 503):
        err.http_status = status
        schemas.ErrorResponse.model_validate(err.to_dict("rid"))
        schemas.ErrorResponse.model_validate(err.to_dict(None))


def _multipart(file: bytes, request: dict | None = None, boundary: str = "b0undary") -> tuple[bytes, str]:
    import json

    parts = [("file", "upload", "application/octet-stream", file)]
    if request is not None:
        parts.append(("request", None, "application/json", json.dumps(request).encode()))
    body = b""
    for name, filename, media, data in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        body += (f"--{boundary}\r\nContent-Disposition: {disposition}\r\nContent-Type: {media}\r\n\r\n"
                 .encode() + data + b"\r\n")
    return body + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


_OUR_HEADERS = ("x-", "ratelimit-", "retry-after", "www-authenticate")


def test_every_answer_is_described_with_its_code_and_headers(tmp_path):
    """Real answers of every kind of endpoint, the error codes the issue names among them: each status is listed
    for its operation, each errorCode in that response's list, each header of ours declared there."""
    import json

    from test_platform_helpers import REPO

    s = make_store("sqlite", tmp_path)
    p = Platform(s)
    d = p.client.simulate_get("/v1/openapi.json").json
    _, token = p.key(credits=1000)
    _, broke = p.key(credits=0)
    invoice = (REPO / "fixtures" / "invoice-all-fields.json").read_bytes()
    with_finding = json.loads(invoice)
    with_finding["invoice"]["paymentInstructions"]["creditTransfer"] = {"accountIdentifier": "DE00123456780000000000"}
    xml = sorted((CORPUS / "xrechnung-testsuite").rglob("*.xml"))[0].read_bytes()
    text, _ = _multipart(b"just text", {})
    json_type = {"Content-Type": "application/json"}
    calls = []  # (path, body, headers, expected status, expected errorCode)
    for path in ("/v1/invoice/xrechnung", "/v1/invoice/en16931", "/v1/invoice/zugferd"):
        calls += [(path, invoice, json_type, 200, None),  # X-Validation-Warnings (XML), RateLimit-*: required
                  (path, json.dumps(with_finding).encode(), json_type, 200, None),
                  (path, b'{"invoice": ', json_type, 400, "INVALID_INPUT"),
                  (path, invoice, {"Content-Type": "text/plain"}, 415, "UNSUPPORTED_MEDIA_TYPE"),
                  (path, invoice, {**json_type, "Accept": "image/png"}, 406, "NOT_ACCEPTABLE"),
                  (path, b"x" * 100, {**json_type, "Content-Length": str(10 ** 10)}, 413, "PAYLOAD_TOO_LARGE")]
    body, media = _multipart(xml, {"version": "9.99"})
    for path in ("/v1/invoice/xrechnung/validate", "/v1/invoice/en16931/validate", "/v1/invoice/zugferd/validate"):
        calls += [(path, body, {"Content-Type": media}, 400, "UNSUPPORTED_VERSION"),
                  (path, body, {"Content-Type": media, "Accept": "image/png"}, 406, "NOT_ACCEPTABLE")]
    body, media = _multipart(b"not a pdf", {})
    calls.append(("/v1/invoice/zugferd/validate", body, {"Content-Type": media}, 400, "INVALID_PDF"))
    for path, request in (("/v1/invoice/parse", {}), ("/v1/invoice/convert", {"to": "UBL"}),
                          ("/v1/invoice/render", {})):
        body, media = _multipart(b"just text", request)
        calls.append((path, body, {"Content-Type": media}, 400, "NOT_AN_EINVOICE"))
    body, media = _multipart(xml, {"to": "CII", "spec": "en16931"})
    calls.append(("/v1/invoice/convert", body, {"Content-Type": media}, None, None))
    seen = set()
    for path, body, headers, status, code in calls:
        r = p.post(token, path=path, body=body, headers=headers)
        assert status is None or r.status_code == status, (path, r.status_code, r.text[:300])
        _check_described(d, path, r)
        seen.add(r.json["errorCode"] if r.status_code >= 400 else None)
        assert code is None or r.json["errorCode"] == code
    r = p.post(broke, path="/v1/invoice/en16931", body=invoice, headers=json_type)
    assert r.status_code == 402
    _check_described(d, "/v1/invoice/en16931", r)
    r = p.post("einv_test_nokey.nosecret", path="/v1/invoice/en16931", body=invoice, headers=json_type)
    assert r.status_code == 401
    _check_described(d, "/v1/invoice/en16931", r)
    assert {"UNSUPPORTED_VERSION", "INVALID_PDF", "NOT_ACCEPTABLE", "UNSUPPORTED_MEDIA_TYPE", "PAYLOAD_TOO_LARGE",
            "NOT_AN_EINVOICE"} <= seen
    s.close()


def test_a_spent_time_budget_is_described_without_retry_after(tmp_path, monkeypatch):
    """503 TIME_BUDGET: the same request would run out again, so no Retry-After (the limiter's 503 has one)."""
    from pipeline.settings import get_settings
    from test_platform_helpers import REPO

    monkeypatch.setenv("EINVOICE_REQUEST_BUDGET", "0.001")
    get_settings.cache_clear()
    s = make_store("sqlite", tmp_path)
    try:
        p = Platform(s)
        d = p.client.simulate_get("/v1/openapi.json").json
        _, token = p.key(credits=10)
        xml = sorted((CORPUS / "xrechnung-testsuite").rglob("*.xml"))[0].read_bytes()
        body, media = _multipart(xml, {})
        r = p.post(token, path="/v1/invoice/xrechnung/validate", body=body, headers={"Content-Type": media})
        assert r.status_code == 503 and r.json["errorCode"] == "TIME_BUDGET" and "Retry-After" not in r.headers
        _check_described(d, "/v1/invoice/xrechnung/validate", r)
    finally:
        s.close()
        monkeypatch.undo()
        get_settings.cache_clear()


def _check_described(d: dict, path: str, r) -> None:
    responses = d["paths"][path]["post"]["responses"]
    assert str(r.status_code) in responses, (path, r.status_code, r.text[:200])
    described = responses[str(r.status_code)]
    if r.status_code >= 400:
        schema = described["content"]["application/json"]["schema"]
        assert r.json["errorCode"] in schema["properties"]["errorCode"]["enum"], (path, r.status_code, r.json)
        assert f"`{r.json['errorCode']}`" in described["description"]
    ours = {h.lower() for h in r.headers if h.lower().startswith(_OUR_HEADERS)}
    declared = {h.lower() for h in described.get("headers", {})}
    assert ours <= declared, (path, r.status_code, ours - declared)
    required = {h.lower() for h, ref in described.get("headers", {}).items()
                if d["components"]["headers"][ref["$ref"].rsplit("/", 1)[1]].get("required")}
    assert required <= {h.lower() for h in r.headers}, (path, r.status_code, required - set(r.headers))


# -- schemathesis against the live service ------------------------------------------------------------------

MAX_EXAMPLES = 15


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server, _, token = serve_with_key(tmp_path_factory.mktemp("schemathesis"), "schemathesis", 100000, "100000/min")
    yield server, token
    server.stop()


def test_schemathesis_finds_no_500_and_no_schema_breaking_response(live):
    import schemathesis
    from hypothesis import HealthCheck, given, settings
    from schemathesis.checks import (content_type_conformance, not_a_server_error, response_headers_conformance,
                                     response_schema_conformance, status_code_conformance)

    server, token = live
    schema = schemathesis.openapi.from_url(server.url + "/v1/openapi.json")
    checks = [not_a_server_error, status_code_conformance, content_type_conformance,
              response_headers_conformance, response_schema_conformance]
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 6
    for operation in operations:
        @settings(max_examples=MAX_EXAMPLES, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def run(case):
            case.call_and_validate(base_url=server.url, headers={"Authorization": f"Bearer {token}"},
                                   checks=checks)

        run()

    # schema-random invoices rarely pass the business rules: add real ones, so 200 responses (XML, PDF,
    # reports) are held against the document too
    import json as _json

    from test_platform_helpers import REPO

    request = _json.loads((REPO / "fixtures" / "invoice-all-fields.json").read_text())
    by_path = {op.path: op for op in operations}
    auth = {"Authorization": f"Bearer {token}"}
    pdf = None
    for path in ("/v1/invoice/xrechnung", "/v1/invoice/en16931", "/v1/invoice/zugferd"):
        if path in by_path:
            response = by_path[path].Case(body=request, media_type="application/json").call_and_validate(
                base_url=server.url, headers=auth, checks=checks)
            assert response.status_code == 200, response.text
            if path.endswith("zugferd"):
                pdf = response.content
    xml = sorted((CORPUS / "xrechnung-testsuite").rglob("*.xml"))[0].read_bytes()
    for path, document in (("/v1/invoice/xrechnung/validate", xml), ("/v1/invoice/en16931/validate", xml),
                           ("/v1/invoice/zugferd/validate", pdf)):
        if path in by_path and document is not None:
            response = by_path[path].Case(body={"file": document, "request": {"version": None}},
                                          media_type="multipart/form-data").call_and_validate(
                base_url=server.url, headers=auth, checks=checks)
            assert response.status_code == 200, response.text

    # the run really went through the service: read its access log
    import json
    import re

    lines = [json.loads(x) for x in server.log_path.read_text().splitlines() if x.startswith('{"event"')]
    hit = {(x["path"], x["status"]) for x in lines}
    logged = {path for path, _ in hit}
    for op in operations:  # a templated path (/static/{name}) was hit by some name
        assert any(re.fullmatch(re.sub(r"\{[^/}]+\}", "[^/]+", op.path), path) for path in logged), op.path
    assert not [x for x in lines if x["status"] >= 500]


def test_every_request_part_takes_the_keys_it_documents_and_refuses_any_other(tmp_path):
    """The `request` part of each multipart endpoint: a key its OpenAPI schema lists is never an unknown field; a
    key it does not list (a typo, another endpoint's option) is a 400 UNKNOWN_FIELD naming `request.<key>`, not
    silently ignored. (The jobs API takes its keys per operation: tests/test_jobs.py.)"""
    s = make_store("sqlite", tmp_path)
    p = Platform(s)
    d = p.client.simulate_get("/v1/openapi.json").json
    _, token = p.key(credits=1000)
    xml = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml").read_bytes()
    checked = []
    for path, item in d["paths"].items():
        form = item.get("post", {}).get("requestBody", {}).get("content", {}).get("multipart/form-data")
        if form is None or path == "/v1/jobs":
            continue
        ref = form["schema"]["properties"]["request"]["$ref"]
        documented = d["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"]
        for request, unknown in (({key: None for key in documented}, []), ({"vresion": "3.0"}, ["request.vresion"])):
            body, ctype = _multipart(xml, request)
            r = p.post(token, path, body=body, headers={"Content-Type": ctype, "Accept": "*/*"})
            named = [e["field"] for e in (r.json or {}).get("errors", []) if e["code"] == "UNKNOWN_FIELD"] \
                if r.status_code == 400 else []
            assert named == unknown, (path, request, r.status_code, r.text[:300])
        checked.append(path)
    s.close()
    assert {"/v1/invoice/xrechnung/validate", "/v1/invoice/convert", "/v1/invoice/render", "/v1/invoice/parse",
            "/v1/invoice/zugferd/validate/batch", "/v1/invoice/fr-ctc/status/timeline"} <= set(checked), checked
