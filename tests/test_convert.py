"""Converting e-invoices (POST /v1/invoice/convert, `pipeline convert`): read + write, judged by the official rules and
by an independent reader of business terms (tests/roundtrip/reader.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import falcon.testing
import pytest

from conftest import CORPUS
from pipeline.cli.golden import FIXTURES
from pipeline.errors import ApiError
from pipeline.flows.convert import SPECS, convert, request_for
from pipeline.flows.generate_xml import generate_xml
from pipeline.flows.generate_zugferd import generate_zugferd
from pipeline.flows.parse import parse, validate_source
from pipeline.invoice.request_json import dump_request, with_config
from pipeline.service.app import create_app
from roundtrip.reader import diff_lines, flatten, read_terms
from test_parse import upload

REPO = Path(__file__).resolve().parents[1]
TESTSUITE = sorted((CORPUS / "xrechnung-testsuite").rglob("*.xml"))
CONVERTIBLE = [p for p in TESTSUITE if parse(p.read_bytes()).complete]
OTHER = {"CII": "UBL", "UBL": "CII"}
BT24 = "processControl.specificationIdentifier"


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _terms(xml: bytes) -> dict[str, str]:
    """Business terms by the independent reader; BT-24 aside (each target writes its own) and UBL's placeholder
    order id 'NA' (the UBL schema requires an order id beside a lone sales order reference, BT-14)."""
    terms = flatten(read_terms(xml).terms)
    terms.pop(BT24, None)
    if terms.get("purchaseOrderReference") == "NA" and "salesOrderReference" in terms:
        del terms["purchaseOrderReference"]
    return terms


@pytest.mark.slow
@pytest.mark.parametrize("source", CONVERTIBLE, ids=[p.name for p in CONVERTIBLE])
def test_conversion_reaches_a_fixed_point_and_passes_the_official_rules(source):
    """CII -> UBL -> CII (and UBL -> CII -> UBL): both outputs are valid (convert validates every result, and the
    validation endpoint agrees), and the second conversion gives the terms of the first back."""
    data = source.read_bytes()
    syntax = parse(data).source.syntax
    try:
        there = convert(data, OTHER[syntax], allow_loss=True)
    except ApiError as err:  # the other syntax cannot carry the source: said so, with the field
        assert err.error_code == "CONVERSION_LOSS" and all(e.field for e in err.errors), err.to_dict(None)
        return
    back = convert(there.document, syntax, allow_loss=True)
    for document in (there.document, back.document):
        assert validate_source(parse(document).source).valid
    first, second = _terms(there.document), _terms(back.document)
    assert first == second, "\n".join(diff_lines(first, second))
    source_terms = _terms(data)
    lost = {k for k in source_terms if first.get(k) != source_terms[k]}
    assert not lost or there.losses, f"terms lost without being reported: {sorted(lost)}"


def test_a_zugferd_pdf_converted_to_cii_is_its_embedded_xml(client):
    pdf = generate_zugferd(with_config((FIXTURES / "invoice-all-fields.json").read_bytes(), syntax="CII"))
    resp = upload(client, pdf, {"to": "CII"}, path="/v1/invoice/convert")
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/xml"
    assert resp.content == parse(pdf).source.xml


def test_xml_to_zugferd_gives_a_checked_pdf_with_the_same_terms(client):
    data = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml").read_bytes()
    resp = upload(client, data, {"to": "zugferd", "metadataLanguage": "de"}, path="/v1/invoice/convert")
    assert resp.status_code == 200 and resp.content.startswith(b"%PDF-")
    parsed = parse(resp.content)
    assert validate_source(parsed.source).valid and parsed.source.profile.name == "XRECHNUNG"
    assert _terms(parsed.source.xml) == _terms(convert(data, "CII").document)


def test_an_invalid_source_is_refused_with_its_findings(client):
    data = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml").read_bytes()
    broken = data.replace(b"<ram:DuePayableAmount>", b"<ram:DuePayableAmount>1", 1)
    resp = upload(client, broken, {"to": "UBL"}, path="/v1/invoice/convert")
    assert resp.status_code == 422 and resp.json["errorCode"] == "SOURCE_INVALID"
    assert any(e["code"] == "BR-CO-16" and e["businessTerm"] == "BT-115" for e in resp.json["errors"])


def test_what_the_target_cannot_carry_is_refused_unless_allowed(client):
    data = (CORPUS / "en16931-cen/ubl/examples/guide-example2.xml").read_bytes()  # BT-147 other than gross - net
    refused = upload(client, data, {"to": "CII"}, path="/v1/invoice/convert")
    assert refused.status_code == 422 and refused.json["errorCode"] == "CONVERSION_LOSS"
    assert {e["businessTerm"] for e in refused.json["errors"]} - {None} == {"BT-147"}  # with its indicator, currency
    assert all("cac:Price/cac:AllowanceCharge/cbc:" in e["message"] for e in refused.json["errors"])
    allowed = upload(client, data, {"to": "CII", "allowLoss": True}, path="/v1/invoice/convert")
    assert allowed.status_code == 200 and allowed.headers["X-Conversion-Losses"] == str(len(refused.json["errors"]))
    assert "cbc:Amount" in allowed.headers["X-Conversion-Lost"]


def test_a_term_the_target_syntax_refuses_is_a_conversion_loss(client):
    data = next((CORPUS / "xrechnung-testsuite").rglob("01.01_comprehensive_test_ubl.xml")).read_bytes()
    resp = upload(client, data, {"to": "CII", "allowLoss": True}, path="/v1/invoice/convert")
    assert resp.status_code == 422 and resp.json["errorCode"] == "CONVERSION_LOSS"
    assert resp.json["errors"][0]["field"] == "invoice.additionalPrecedingInvoiceReferences"


def test_a_source_the_model_cannot_carry_is_not_convertible(client):
    resp = upload(client, (CORPUS / "en16931-cen/cii/examples/CII_example3.xml").read_bytes(), {"to": "UBL"},
                  path="/v1/invoice/convert")
    assert resp.status_code == 422 and resp.json["errorCode"] == "SOURCE_NOT_CONVERTIBLE"
    assert "invoice.seller.contact.contactPoint" in [e["field"] for e in resp.json["errors"]]


@pytest.mark.parametrize("request_part,field", [
    ({}, "request.to"), ({"to": "XLS"}, "request.to"), ({"to": "UBL", "spec": "facturae"}, "request.spec"),
    ({"to": "zugferd", "profile": "PLATINUM"}, "request.profile"), ({"to": "UBL", "allowLoss": "yes"},
                                                                    "request.allowLoss"),
    ({"to": "zugferd", "metadataLanguage": "fr"}, "request.metadataLanguage"),
])
def test_bad_parameters_are_a_400_naming_the_field(client, request_part, field):
    data = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml").read_bytes()
    resp = upload(client, data, request_part, path="/v1/invoice/convert")
    assert resp.status_code == 400 and resp.json["errors"][0]["field"] == field


def test_cli_convert(tmp_path):
    source = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml"
    out = tmp_path / "out.xml"
    done = subprocess.run([sys.executable, "-m", "pipeline", "convert", str(source), "--to", "cii", "-o", str(out)],
                          capture_output=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert parse(out.read_bytes()).source.syntax == "CII"
    refused = subprocess.run([sys.executable, "-m", "pipeline", "convert", str(CORPUS / "en16931-cen/ubl/examples/"
                              "guide-example2.xml"), "--to", "cii"], capture_output=True, cwd=REPO, timeout=120)
    assert refused.returncode == 1 and json.loads(refused.stderr)["errorCode"] == "CONVERSION_LOSS"


def _errors(err: ApiError) -> list[dict]:
    return [e.to_dict() for e in err.errors]


@pytest.mark.slow
@pytest.mark.parametrize("source", CONVERTIBLE, ids=[p.name for p in CONVERTIBLE])
def test_convert_writes_what_the_xml_endpoint_writes_from_the_parsed_json(source):
    """convert hands the parsed model (checked for the target's config) and the canonical XML of its loss check
    straight to the generation stylesheets: the document, or the refusal with the same entries, is what the XML
    endpoint makes of the parse's JSON, in either syntax and for either spec."""
    data = source.read_bytes()
    parsed = parse(data)
    for to, spec in [(to, spec) for to in OTHER for spec in SPECS]:
        request, endpoint = request_for(parsed, to, spec, None, None)
        try:
            expected = generate_xml(dump_request(request), endpoint)[0]
        except ApiError as err:  # 400 on invoice fields = CONVERSION_LOSS, 422 VALIDATION_FAILED as it is
            with pytest.raises(ApiError) as raised:
                convert(data, to, spec, allow_loss=True)
            assert raised.value.error_code in ("CONVERSION_LOSS", err.error_code)
            assert _errors(raised.value) == _errors(err)
            continue
        assert convert(data, to, spec, allow_loss=True).document == expected, (to, spec)


def test_convert_runs_no_content_checks(monkeypatch):
    """Their findings would be warnings, which convert does not return (it sends no config.strict)."""
    from pipeline.check import content

    data = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml").read_bytes()
    expected = convert(data, "UBL").document
    ran = []
    monkeypatch.setattr(content, "check", lambda *a, **k: ran.append(a) or [])
    assert convert(data, "UBL").document == expected and not ran
