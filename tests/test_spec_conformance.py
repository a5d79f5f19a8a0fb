"""The service specification (../shared/spec/service-spec.md), statement by statement, where a client generated from
it (or from our OpenAPI document) tripped (issue 28). Each test quotes the sentence it checks; the quotes are
checked to be the spec's own words, so a test cannot hold the service to a sentence the spec does not say.

Answers come from the real app (falcon's test client, or the platform with a key store where auth, credits and
storage matter); the OpenAPI document is the one GET /v1/openapi.json serves.
"""
from __future__ import annotations

import copy
import json
import re
from decimal import Decimal

import falcon.testing
import pytest

from conftest import REPO, SHARED
from pipeline.errors import REFINES, SPEC_CODES
from pipeline.invoice.request_json import dumps
from pipeline.service.app import create_app
from pipeline.settings import get_settings

SPEC_TEXT = " ".join((SHARED / "spec" / "service-spec.md").read_text("utf-8").split())
FIXTURE = json.loads((REPO / "fixtures" / "invoice-all-fields.json").read_text("utf-8"), parse_float=Decimal)
JSON = {"Content-Type": "application/json"}


@pytest.fixture(autouse=True)
def _quotes_are_the_specs(request):
    """Every `"..."` a test's docstring quotes after `Spec` is in the spec, word for word (whitespace aside)."""
    doc = " ".join((request.function.__doc__ or "").split())
    quotes = re.findall(r'Spec [^"]*"([^"]+)"', doc)
    assert quotes, f"{request.function.__name__} quotes no spec sentence"
    for quote in quotes:
        assert quote in SPEC_TEXT, f"not in the spec: {quote!r}"


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


@pytest.fixture(scope="module")
def openapi(client):
    r = client.simulate_get("/v1/openapi.json")
    assert r.status_code == 200
    return r.json


def request(**invoice) -> dict:
    """The all-fields fixture with invoice fields replaced (None: removed)."""
    body = copy.deepcopy(FIXTURE)
    for name, value in invoice.items():
        if value is None:
            body["invoice"].pop(name, None)
        else:
            body["invoice"][name] = value
    return body


def post(client, path: str, body) -> falcon.testing.Result:
    return client.simulate_post(path, body=body if isinstance(body, (bytes, str)) else dumps(body), headers=JSON)


def schema_of(openapi: dict, name: str) -> dict:
    return openapi["components"]["schemas"][name]


def branch(prop: dict) -> dict:
    """The non-null branch of an optional property (pydantic writes `anyOf: [X, {type: null}]`)."""
    options = [p for p in prop.get("anyOf", [prop]) if p.get("type") != "null"]
    assert len(options) == 1, prop
    return {**options[0], **{k: v for k, v in prop.items() if k != "anyOf"}}


# ---- 1. rejectedValue: the value as sent, its JSON type included, on every status --------------------------------

def test_rejected_value_of_a_422_is_the_number_sent(client):
    """Spec 2.11: "ErrorDetail: code (string), field (string), businessTerm (string), rejectedValue (any JSON object),
    message (string)." A 422 for BR-CO-16 on payableAmount 1.23 answers the number 1.23, digit for digit as sent,
    not the string "1.23"."""
    totals = {"prepaidAmount": 100, "taxTotalAmountInAccountingCurrency": Decimal("241.42"),
              "payableAmount": Decimal("1.230")}
    r = post(client, "/v1/invoice/en16931", request(documentTotals=totals))
    assert (r.status_code, r.json["errorCode"]) == (422, "VALIDATION_FAILED"), r.text[:500]
    entry = next(e for e in r.json["errors"] if e["code"] == "BR-CO-16")
    assert (entry["field"], entry["businessTerm"]) == ("invoice.documentTotals.payableAmount", "BT-115")
    assert entry["rejectedValue"] == 1.23 and not isinstance(entry["rejectedValue"], str)
    assert re.search(r'"rejectedValue": 1\.230[,}]', r.text)   # the number as written in the request


@pytest.mark.parametrize("field,sent", [("invoiceNumber", 4711), ("invoiceNumber", True), ("invoiceNumber", [1, "a"]),
                                        ("invoiceNumber", {"v": Decimal("1.50")}), ("issueDate", "15.03.2024"),
                                        ("issueDate", Decimal("20240315.0"))])
def test_rejected_value_of_a_400_keeps_the_json_type_sent(client, field, sent):
    """Spec 2.11: "rejectedValue (any JSON object)" and 4.1: "400 | INVALID_INPUT | Invalid request body": a number,
    boolean, list, object or string comes back as the same JSON value."""
    r = post(client, "/v1/invoice/xrechnung", request(**{field: sent}))
    assert (r.status_code, r.json["errorCode"]) == (400, "INVALID_INPUT")
    answered = json.loads(r.text, parse_float=Decimal)
    entry = next(e for e in answered["errors"] if e["field"] == f"invoice.{field}")
    assert entry["rejectedValue"] == sent and type(entry["rejectedValue"]) is type(sent)


# ---- 2. metadataLanguage: an ISO 639-1 code, nothing around it --------------------------------------------------

@pytest.mark.parametrize("language", [" de", "de ", "de\n", "\tde", " en ", "d e"])
def test_metadata_language_with_whitespace_is_400(client, language):
    """Spec 2.2: "ISO 639-1 two-letter code, case-insensitive." and "Unsupported codes and region-qualified codes
    (BCP 47 subtags) are rejected with 400." A code with whitespace is no ISO 639-1 code: 400 INVALID_INPUT naming
    config.metadataLanguage with the value as sent, like every other malformed value."""
    body = request()
    body["config"] = {"syntax": "CII", "metadataLanguage": language}
    r = post(client, "/v1/invoice/zugferd", body)
    assert (r.status_code, r.json["errorCode"]) == (400, "INVALID_INPUT"), r.text[:300]
    assert [(e["field"], e["rejectedValue"]) for e in r.json["errors"]] == [("config.metadataLanguage", language)]


# ---- 3. OpenAPI types: int32 and the closed value sets ----------------------------------------------------------

def test_openapi_integers_are_int32(openapi):
    """Spec 2: "Types: string, number, integer (int32), boolean, date" and 2.10: "errors (integer int32), warnings
    (integer int32)", "location (optional: xpath string, line int32, column int32)"."""
    summary = schema_of(openapi, "ValidationSummary")["properties"]
    location = schema_of(openapi, "Location")["properties"]
    for prop in (summary["errors"], summary["warnings"], location["line"], location["column"]):
        assert (branch(prop)["type"], branch(prop)["format"]) == ("integer", "int32")
    found = []

    def walk(node):
        if isinstance(node, dict):
            if node.get("type") == "integer":
                found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(openapi["components"]["schemas"])
    assert found and all(node.get("format") == "int32" for node in found)


def test_openapi_lists_the_closed_value_sets(openapi):
    """Spec 2.2: "XML syntax: CII or UBL." and "Allowed values: en, de." The values are an enum, not prose only."""
    config = schema_of(openapi, "GenerationConfig")["properties"]
    assert branch(config["syntax"])["enum"] == ["CII", "UBL"]
    assert branch(config["metadataLanguage"])["enum"] == ["en", "de"]
    assert branch(config["spec"])["enum"] == ["xrechnung", "en16931", "zugferd"]
    assert branch(schema_of(openapi, "Issue")["properties"]["severity"])["enum"] == ["ERROR", "WARNING"]
    assert branch(schema_of(openapi, "XRechnungValidationResponse")["properties"]["syntax"])["enum"] == ["CII", "UBL"]


# ---- 4. error codes: the spec's where it names the case, ours as refinements ------------------------------------

def _generation_table() -> dict[int, set[str]]:
    """Spec 4.1's error table: status -> the codes it names."""
    section = SPEC_TEXT[SPEC_TEXT.index("Error statuses for each generation endpoint"):SPEC_TEXT.index("### 4.2")]
    return {int(status): set(re.findall(r"[A-Z][A-Z0-9]*_[A-Z0-9_]+", f"{codes} {condition}"))   # codes have a _
            for status, codes, condition in re.findall(r"\| (\d{3}) \| ([^|]+) \| ([^|]+) \|", section)}


def test_generation_error_codes_in_openapi_are_the_specs(openapi):
    """Spec 4.1: "500 | GENERATION_FAILED or INTERNAL_ERROR | Internal engine failure." and "503 |
    RATE_LIMIT_CONFIGURATION_UNAVAILABLE | Rate limit configuration unavailable; retry later." For every status the
    table names, each errorCode OpenAPI lists is one the table names; our finer codes are only `x-refinements`
    (in errors[0].code) of such a code."""
    table = _generation_table()
    assert table[500] == {"GENERATION_FAILED", "INTERNAL_ERROR"} and set(table) == {400, 402, 422, 429, 500, 503}
    for path in ("/v1/invoice/xrechnung", "/v1/invoice/en16931", "/v1/invoice/zugferd"):
        for status, codes in table.items():
            response = openapi["paths"][path]["post"]["responses"][str(status)]
            listed = set(response["content"]["application/json"]["schema"]["properties"]["errorCode"]["enum"])
            assert listed <= codes, (path, status, listed - codes)
            assert set(response.get("x-refinements", {}).values()) <= codes
            assert not response.get("x-codes-beyond-spec")
    assert set(table[500] | table[503]) <= set(SPEC_CODES)


@pytest.fixture
def no_rule_packs(tmp_path, monkeypatch):
    monkeypatch.setenv("EINVOICE_RULES_HOME", str(tmp_path / "no-rules"))
    get_settings.cache_clear()
    yield
    monkeypatch.undo()
    get_settings.cache_clear()


def test_rules_not_installed_is_the_specs_500_refined(client, no_rule_packs):
    """Spec 4.1: "500 | GENERATION_FAILED or INTERNAL_ERROR | Internal engine failure." A server without rule packs
    answers errorCode INTERNAL_ERROR (the branch a spec client takes) and our RULES_NOT_INSTALLED in errors[0].code,
    on generation and validation alike."""
    r = post(client, "/v1/invoice/en16931", request())
    assert (r.status_code, r.json["errorCode"], r.json["errors"][0]["code"]) == (500, "INTERNAL_ERROR",
                                                                               "RULES_NOT_INSTALLED")
    xml = sorted((SHARED / "corpus" / "xrechnung-testsuite").rglob("*.xml"))[0].read_bytes()
    boundary = "spec28"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.xml\"\r\n"
            f"Content-Type: application/xml\r\n\r\n").encode() + xml + (
        f"\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"request\"\r\nContent-Type: application/json"
        f"\r\n\r\n{{}}\r\n--{boundary}--\r\n").encode()
    r = client.simulate_post("/v1/invoice/xrechnung/validate", body=body,
                             headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert (r.status_code, r.json["errorCode"], r.json["errors"][0]["code"]) == (500, "INTERNAL_ERROR",
                                                                               "RULES_NOT_INSTALLED")


def test_unreachable_key_store_is_the_specs_503_refined(tmp_path):
    """Spec 7: "RATE_LIMIT_CONFIGURATION_UNAVAILABLE | 503 | No invoice work is done and no credit is charged; retry
    later." The store that holds the keys, their rate limits and credits being unreachable is that case: errorCode
    RATE_LIMIT_CONFIGURATION_UNAVAILABLE with Retry-After, our STORAGE_UNAVAILABLE in errors[0].code."""
    from pipeline.service.platform import Backends, PlatformConfig
    from pipeline.storage.ratelimit import MemoryLimiter
    from pipeline.storage.store import StorageUnavailable

    class Unreachable(Backends):
        def store(self):
            raise StorageUnavailable("connection refused")

    app = falcon.testing.TestClient(create_app(backends=Unreachable(None, MemoryLimiter(), PlatformConfig())))
    r = app.simulate_post("/v1/invoice/xrechnung", body=dumps(request()), headers={
        **JSON, "Authorization": "Bearer einv_test_0123456789ab." + "A" * 43})
    assert (r.status_code, r.json["errorCode"], r.json["errors"][0]["code"]) == (
        503, "RATE_LIMIT_CONFIGURATION_UNAVAILABLE", "STORAGE_UNAVAILABLE")
    assert "Retry-After" in r.headers


def test_refinements_are_documented(openapi):
    """Spec 7: "Errors use the ErrorResponse shape (section 2.11): requestId, status, errorCode, message, and an
    errors list of ErrorDetail entries (code, field, businessTerm, rejectedValue, message)." Every code of ours that
    refines a spec code is named in OpenAPI (x-refinements of the responses that can carry it) and the README."""
    readme = (REPO / "README.md").read_text("utf-8")
    refined = {}
    for item in openapi["paths"].values():
        for op in item.values():
            for response in op.get("responses", {}).values():
                refined.update(response.get("x-refinements", {}))
    assert refined == REFINES
    for ours, spec in REFINES.items():
        assert spec in SPEC_CODES and ours not in SPEC_CODES
        assert re.search(rf"`{ours}`[^\n]*`{spec}`", readme), ours


# ---- 5. where the spec is silent: what we do, said where a client sees it ---------------------------------------

@pytest.mark.parametrize("path", ["/v1/invoice/xrechnung", "/v1/invoice/en16931"])
def test_profile_on_an_xml_endpoint_is_400_and_documented(client, openapi, path):
    """Spec 2.2: "profile | string | no | ZUGFeRD/Factur-X profile. When omitted, the configured default is used."
    The spec does not say what an XML endpoint does with it: we refuse it (400 INVALID_INPUT on config.profile), as
    the spec does for metadataLanguage there, and say so in the field's OpenAPI description."""
    body = request()
    body["config"] = {"syntax": "CII", "profile": "EN16931"}
    r = post(client, path, body)
    assert (r.status_code, r.json["errorCode"]) == (400, "INVALID_INPUT")
    assert [(e["field"], e["rejectedValue"]) for e in r.json["errors"]] == [("config.profile", "EN16931")]
    text = schema_of(openapi, "GenerationConfig")["properties"]["profile"]["description"]
    assert "XML endpoints" in text and "400 INVALID_INPUT" in text


def test_vat_accounting_currency_needs_the_bt111_extension_field(client, openapi):
    """Spec 2.3: "vatAccountingCurrencyCode | string" and 2.6: "DocumentTotals (all number, all optional):
    lineExtensionAmount, allowanceTotalAmount, chargeTotalAmount, taxExclusiveAmount, taxInclusiveAmount,
    prepaidAmount, payableRoundingAmount, payableAmount." A VAT accounting currency other than the invoice's needs
    BT-111, which DocumentTotals has no field for: the 400 and OpenAPI name our extension field."""
    field = "invoice.documentTotals.taxTotalAmountInAccountingCurrency"
    r = post(client, "/v1/invoice/en16931", request(documentTotals={"prepaidAmount": 100}))
    assert (r.status_code, r.json["errorCode"]) == (400, "INVALID_INPUT")
    assert [(e["code"], e["field"], e["businessTerm"]) for e in r.json["errors"]] == [("REQUIRED", field, "BT-111")]
    assert "extension field" in r.json["errors"][0]["message"]
    assert post(client, "/v1/invoice/en16931", request()).status_code == 200   # with it (the fixture sends it)
    totals = schema_of(openapi, "DocumentTotals")["properties"]
    assert "BT-111" in totals["taxTotalAmountInAccountingCurrency"]["description"]
    text = schema_of(openapi, "Invoice")["properties"]["vatAccountingCurrencyCode"]["description"]
    assert "documentTotals.taxTotalAmountInAccountingCurrency" in text and "400" in text


def test_empty_price_details_is_400_for_bt146_and_documented(client, openapi):
    """Spec 2.7: "PriceDetails: netPrice, grossPrice, priceBasisQuantity (number); basisUnitCode (string)." and
    "Fields not listed as required are optional." EN 16931 requires the item net price BT-146 on every line (BR-26):
    `priceDetails: {}` is refused naming BT-146, and OpenAPI says so."""
    lines = copy.deepcopy(FIXTURE["invoice"]["invoiceLines"])
    lines[0]["priceDetails"] = {}
    r = post(client, "/v1/invoice/en16931", request(invoiceLines=lines))
    assert (r.status_code, r.json["errorCode"]) == (400, "INVALID_INPUT")
    assert [(e["code"], e["field"], e["businessTerm"]) for e in r.json["errors"]] == [
        ("REQUIRED", "invoice.invoiceLines[0].priceDetails.netPrice", "BT-146")]
    text = schema_of(openapi, "InvoiceLine")["properties"]["priceDetails"]["description"]
    assert "BT-146" in text and "400" in text


def test_pdf_report_locations_and_a_report_without_syntax_are_documented(client, openapi):
    """Spec 2.10: "syntax | string | CII or UBL." and "location (optional: xpath string, line int32, column int32)".
    A PDF without an embedded invoice gets a report without syntax (valid false), its PDF findings located by
    `location.pdfObject`; OpenAPI has syntax optional and describes both."""
    import io

    import pikepdf

    pdf = pikepdf.new()
    pdf.add_blank_page()
    out = io.BytesIO()
    pdf.save(out)
    boundary = "spec28"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.pdf\"\r\n"
            f"Content-Type: application/pdf\r\n\r\n").encode() + out.getvalue() + (
        f"\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"request\"\r\nContent-Type: application/json"
        f"\r\n\r\n{{}}\r\n--{boundary}--\r\n").encode()
    r = client.simulate_post("/v1/invoice/zugferd/validate", body=body,
                             headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert r.status_code == 200 and r.json["valid"] is False and "syntax" not in r.json
    located = [i["location"] for i in r.json["issues"] if i.get("location")]
    assert located and all(set(loc) == {"pdfObject"} for loc in located)
    report = schema_of(openapi, "XRechnungValidationResponse")
    assert "syntax" not in report["required"] and "Absent" in report["properties"]["syntax"]["description"]
    assert "Extension" in schema_of(openapi, "Location")["properties"]["pdfObject"]["description"]
