"""Reading Peppol BIS Billing 3.0: parse keeps its identifiers, parse -> generate gives the same business terms,
a Peppol document converts to EN 16931 CII saying which identifiers changed, and XRechnung UBL converts to Peppol
where its content allows (else 422 naming the rules)."""
from __future__ import annotations

import pytest
from falcon import testing
from lxml import etree

from conftest import CORPUS
from pipeline.check import xmlinput
from pipeline.errors import ApiError
from pipeline.flows.convert import convert
from pipeline.flows.generate_xml import generate_xml
from pipeline.flows.parse import parse, source_of, source_spec, validate_source
from pipeline.flows.validate_xml import validate_xml
from pipeline.invoice import peppol
from pipeline.invoice.request_json import dump_request
from pipeline.service import schemas
from pipeline.service.app import create_app
from test_peppol_validation import VALID_EXAMPLES, _name, _official_findings
from test_validate_endpoints import post

CBC = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2"


@pytest.fixture(scope="module")
def client():
    return testing.TestClient(create_app(platform=False))


def test_parse_keeps_the_peppol_identifiers():
    for path, spec_id, process in (
            (CORPUS / "peppol/2026.5/billing/base-example.xml", peppol.BILLING_ID, peppol.BILLING_PROCESS),
            (CORPUS / "peppol/2026.5/SB-base-example.xml", peppol.SELF_BILLING_ID, peppol.SELF_BILLING_PROCESS)):
        parsed = parse(path.read_bytes())
        assert parsed.config["spec"] == "peppol" and parsed.source.specification_id == spec_id
        assert parsed.invoice["processControl"] == {"businessProcessType": process, "specificationIdentifier": spec_id}
        assert validate_source(parsed.source).version == "2026.5"


def test_the_parse_endpoint_answers_a_peppol_document_as_the_openapi_describes_it(client):
    r = post(client, "/v1/invoice/parse", file=(CORPUS / "peppol/2026.5/billing/base-example.xml").read_bytes())
    assert r.status_code == 200 and r.json["config"]["spec"] == "peppol"
    schemas.ParseResponse.model_validate(r.json)  # config.spec peppol is one of the described values


@pytest.mark.parametrize("path", VALID_EXAMPLES, ids=_name)
def test_parse_then_generate_gives_the_same_business_terms(path):
    parsed = parse(path.read_bytes())   # category O without a VAT rate (as Peppol demands) parses complete too
    assert parsed.complete and not parsed.unmapped
    xml, report = generate_xml(dump_request({"invoice": parsed.invoice, "config": parsed.config}), "peppol")
    assert report.valid
    again = parse(xml)
    assert again.invoice == parsed.invoice and again.source.specification_id == parsed.source.specification_id
    xsd_ok, official = _official_findings(xml)
    assert xsd_ok and not [rule for rule, severity in official if severity == "ERROR"]


def test_a_peppol_document_converts_to_en16931_cii_keeping_its_identifiers(client):
    """BT-24 and BT-23 travel verbatim (issue 23): EN 16931 CII may state a Peppol identifier, so none changes and
    none is said to; the CII is judged by the EN 16931 rules."""
    data = (CORPUS / "peppol/2026.5/SB-base-example.xml").read_bytes()
    result = convert(data, "CII")
    assert validate_xml(result.document, "en16931").valid
    assert result.changed == []
    r = post(client, "/v1/invoice/convert", file=data, request='{"to": "CII"}')
    assert r.status_code == 200, r.text
    assert "X-Conversion-Changed" not in r.headers
    control = parse(r.content).invoice["processControl"]
    assert control == {"businessProcessType": peppol.SELF_BILLING_PROCESS,
                       "specificationIdentifier": peppol.SELF_BILLING_ID}


def test_peppol_to_cii_with_spec_peppol_is_a_400_on_the_syntax():
    with pytest.raises(ApiError) as refused:
        convert((CORPUS / "peppol/2026.5/billing/base-example.xml").read_bytes(), "CII", "peppol")
    assert refused.value.http_status == 400 and refused.value.errors[0].field == "config.syntax"


def _valid_xrechnung_ubl():
    """Every UBL document of the corpus whose BT-24 names XRechnung, valid on the XRechnung rules, that converts to
    XRechnung UBL itself (complete in the model, nothing the model cannot carry)."""
    for path in sorted(CORPUS.rglob("*.xml")):
        data = path.read_bytes()
        if b"xrechnung" not in data[:5000]:
            continue
        try:
            source = source_of(data)
        except (ApiError, xmlinput.XmlInputError):
            continue
        if source.syntax != "UBL" or source_spec(source) != "xrechnung" or not validate_source(source).valid:
            continue
        try:
            convert(data, "UBL", "xrechnung")
        except ApiError:
            continue
        yield path, data


def _with_peppol_endpoints(data: bytes) -> bytes:
    """The document with its electronic addresses as GLNs (EAS 0088): XRechnung mostly sends e-mail addresses (EAS
    EM), which Peppol does not deliver to."""
    root = etree.fromstring(data)
    for n, endpoint in enumerate(root.iter(f"{{{CBC}}}EndpointID")):
        endpoint.set("schemeID", "0088")
        endpoint.text = ("4000001123452", "5400000000003")[n % 2]
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8")


def _converted_or_refused_naming_rules(data: bytes) -> bool:
    """True: converted to a document the official Peppol rules alone find valid. False: refused with 422 whose every
    entry names the rule that refuses it (an official rule id, a PEPPOL rule in the message) or the XRechnung
    extension Peppol has no place for."""
    try:
        result = convert(data, "UBL", "peppol")
    except ApiError as err:
        assert err.http_status == 422 and err.error_code in ("CONVERSION_LOSS", "VALIDATION_FAILED"), err
        for entry in err.errors:
            assert ("PEPPOL-" in entry.message or "XRechnung extension" in entry.message
                    or entry.code.startswith(("BR-", "PEPPOL-"))), entry
        return False
    xsd_ok, official = _official_findings(result.document)
    assert xsd_ok and not [rule for rule, severity in official if severity == "ERROR"]
    assert {c["businessTerm"] for c in result.changed} <= {"BT-24", "BT-23"}
    return True


@pytest.mark.slow
def test_every_valid_xrechnung_ubl_converts_to_peppol_where_its_content_allows():
    documents = list(_valid_xrechnung_ubl())
    assert len(documents) >= 25
    as_sent = sum(_converted_or_refused_naming_rules(data) for _, data in documents)
    with_endpoints = sum(_converted_or_refused_naming_rules(_with_peppol_endpoints(data)) for _, data in documents)
    # as sent, nearly all carry e-mail endpoints (PEPPOL-EN16931-CL008); with Peppol endpoints, all but those with
    # other content Peppol refuses (XRechnung extension, invalid GLNs elsewhere, code lists, a type code) convert
    assert with_endpoints >= 15 and with_endpoints > as_sent
