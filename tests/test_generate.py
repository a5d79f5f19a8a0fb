"""Generation orchestration: generate_xml, the XML endpoints and the generate / run CLI.

Documents are checked against the official rules (pipeline.flows.validate_xml), not against strings we wrote.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from falcon import testing
from lxml import etree

from pipeline.flows import generate_xml as generate
from pipeline.invoice.request_json import dump_request, load_request, with_config
from pipeline.cli import main
from pipeline.cli.golden import FIXTURES
from pipeline.errors import ApiError
from pipeline.service.app import create_app

XR_ID = "urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0"
EN_ID = "urn:cen.eu:en16931:2017"
NS = {"rsm": "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100",
      "ram": "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100",
      "cbc": "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2"}
FULL = FIXTURES / "invoice-all-fields.json"
SMALL = FIXTURES / "vat-g-export.json"


@pytest.fixture(scope="module")
def client():
    return testing.TestClient(create_app(platform=False))


def _without(path: Path, *keys: str) -> bytes:
    request = load_request(path.read_bytes())
    for key in keys:
        request["invoice"].pop(key, None)
    return dump_request(request)


def _spec_id(xml: bytes) -> str:
    root = etree.fromstring(xml)
    return root.xpath("string(rsm:ExchangedDocumentContext/ram:GuidelineSpecifiedDocumentContextParameter/ram:ID"
                      "|cbc:CustomizationID)", namespaces=NS)


# ---- generate_xml ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec,spec_id", [("xrechnung", XR_ID), ("en16931", EN_ID)])
@pytest.mark.parametrize("syntax", ["CII", "UBL", "ubl"])
def test_generate_xml_is_valid_for_the_spec(spec, spec_id, syntax):
    xml, report = generate.generate_xml(with_config(FULL.read_bytes(), syntax=syntax), spec)
    assert report.valid and report.syntax.startswith(syntax.upper())
    assert _spec_id(xml) == spec_id
    assert generate.validate(xml, spec).valid  # an independent second check of the returned bytes


def test_failed_rules_are_a_422_with_rule_field_and_business_term():
    # BR-DE-15 (XRechnung): the buyer reference BT-10 is required; the model itself allows leaving it out.
    body = _without(SMALL, "buyerReference")
    with pytest.raises(ApiError) as err:
        generate.generate_xml(body, "xrechnung")
    e = err.value
    assert (e.http_status, e.error_code) == (422, "VALIDATION_FAILED")
    detail = next(d for d in e.errors if d.code == "BR-DE-15")
    assert (detail.field, detail.businessTerm) == ("invoice.buyerReference", "BT-10")
    assert detail.message
    # the same request is a valid EN 16931 invoice: the spec's own rule pack decides
    assert generate.generate_xml(body, "en16931")[1].valid


def test_line_level_rule_points_at_the_line():
    # BR-S-05: a standard-rated line needs a rate > 0; line 2 of 2 breaks it.
    request = load_request(FIXTURES.joinpath("credit-note.json").read_bytes())
    request["invoice"]["invoiceLines"][1]["lineVatInformation"]["vatRate"] = 0
    request["invoice"]["vatBreakdowns"].append({"vatCategoryCode": "S", "vatCategoryRate": 0})
    with pytest.raises(ApiError) as err:
        generate.generate_xml(dump_request(request), "en16931")
    detail = next(d for d in err.value.errors if d.code == "BR-S-05")
    assert detail.field.startswith("invoice.invoiceLines[1].lineVatInformation.")
    assert detail.businessTerm in ("BT-151", "BT-152")


def _failed(request: dict, rule: str, spec: str = "en16931") -> list:
    with pytest.raises(ApiError) as err:
        generate.generate_xml(dump_request(request), spec)
    return [d for d in err.value.errors if d.code == rule]


def _reverse_charge(request: dict) -> dict:
    invoice = request["invoice"]
    for line in invoice["invoiceLines"]:
        line["lineVatInformation"] = {"vatCategoryCode": "AE", "vatRate": 0}
    invoice["vatBreakdowns"] = [{"vatCategoryCode": "AE", "vatCategoryRate": 0, "exemptionReason": "Reverse charge"}]
    for key in ("documentLevelAllowances", "documentLevelCharges"):
        for item in invoice.get(key) or []:
            item.update(vatCategoryCode="AE", vatRate=0)
    invoice["buyer"].pop("vatIdentifier", None)
    invoice["buyer"].pop("legalRegistrationIdentifier", None)
    return request


@pytest.mark.parametrize("syntax", ["CII", "UBL"])
def test_a_rule_naming_both_parties_points_at_the_missing_one(syntax):
    """BR-AE-02 asks for the seller's VAT identifier and the buyer's: with the seller's there, the entry is about the
    buyer's (BT-48), with no rejectedValue (nothing was sent there)."""
    request = _reverse_charge(load_request(with_config(FULL.read_bytes(), syntax=syntax)))
    assert request["invoice"]["seller"]["vatIdentifier"]
    details = _failed(request, "BR-AE-02")
    assert details and {(d.field, d.businessTerm, d.rejectedValue) for d in details} == {
        ("invoice.buyer.vatIdentifier", "BT-48", None)}


@pytest.mark.parametrize("syntax", ["CII", "UBL"])
@pytest.mark.parametrize("party,rule,field,term", [
    ("buyer", "BR-CL-25", "electronicAddressSchemeId", "BT-49-1"),
    ("buyer", "BR-CL-11", "legalRegistrationIdentifierSchemeId", "BT-47-1"),
    ("buyer", "BR-CL-10", "identifierSchemeId", "BT-46-1"),
    ("seller", "BR-CL-25", "electronicAddressSchemeId", "BT-34-1"),
])
def test_a_code_list_rule_points_at_the_party_whose_code_is_wrong(syntax, party, rule, field, term):
    """The rule names every party's scheme; the finding's place in the document says whose it is."""
    request = load_request(with_config(FULL.read_bytes(), syntax=syntax))
    values = {"electronicAddressSchemeId": ("electronicAddress", "x@example.org"),
              "legalRegistrationIdentifierSchemeId": ("legalRegistrationIdentifier", "X1"),
              "identifierSchemeId": ("identifier", "B1")}
    key, value = values[field]
    request["invoice"][party].setdefault(key, value)
    request["invoice"][party][field] = "ZZZZ"
    (detail,) = _failed(request, rule)
    assert (detail.field, detail.businessTerm, detail.rejectedValue) == (f"invoice.{party}.{field}", term, "ZZZZ")


@pytest.mark.parametrize("syntax", ["CII", "UBL"])
def test_an_allowance_or_charge_finding_names_its_index(syntax):
    """Allowances and charges share one element in both syntaxes: the entry numbers the charge among the charges."""
    request = load_request(with_config(FULL.read_bytes(), syntax=syntax))
    invoice = request["invoice"]
    line = next(i for i, l in enumerate(invoice["invoiceLines"]) if l.get("invoiceLineCharges"))
    charges = invoice["invoiceLines"][line]["invoiceLineCharges"]
    charges[-1]["reasonCode"] = "QQQ"
    invoice["documentLevelCharges"][-1]["reasonCode"] = "QQQ"
    assert invoice.get("documentLevelAllowances") and invoice["invoiceLines"][line].get("invoiceLineAllowances")
    fields = {(d.field, d.businessTerm, d.rejectedValue) for d in _failed(request, "BR-CL-20")}
    assert fields == {
        (f"invoice.documentLevelCharges[{len(invoice['documentLevelCharges']) - 1}].reasonCode", "BT-105", "QQQ"),
        (f"invoice.invoiceLines[{line}].invoiceLineCharges[{len(charges) - 1}].reasonCode", "BT-145", "QQQ")}


def test_a_peppol_rule_without_a_term_in_its_message_points_at_the_field():
    # PEPPOL-EN16931-R055 (XRechnung): BT-111 sent positive while a negative line makes BT-110 negative.
    request = load_request(FULL.read_bytes())
    request["invoice"]["invoiceLines"][0]["quantity"] = -50
    with pytest.raises(ApiError) as err:
        generate.generate_xml(dump_request(request), "xrechnung")
    detail = next(d for d in err.value.errors if d.code == "PEPPOL-EN16931-R055")
    assert (detail.field, detail.businessTerm) == ("invoice.documentTotals.taxTotalAmountInAccountingCurrency",
                                                   "BT-111")


def test_every_error_is_listed_and_warnings_are_not():
    body = _without(SMALL, "buyerReference")
    request = load_request(body)
    del request["invoice"]["seller"]["contact"]  # BR-DE-2 too
    with pytest.raises(ApiError) as err:
        generate.generate_xml(dump_request(request), "xrechnung")
    codes = {d.code for d in err.value.errors}
    assert {"BR-DE-15", "BR-DE-2"} <= codes
    assert all(not c.startswith("BR-DE-TMP") for c in codes)


def test_unknown_version_is_a_400():
    body = with_config(SMALL.read_bytes(), version="0.0.1")
    with pytest.raises(ApiError) as err:
        generate.generate_xml(body, "xrechnung")
    assert err.value.http_status == 400


@pytest.mark.parametrize("spec,version", [("xrechnung", "0.0.1"), ("en16931", "3.0.2"), ("xrechnung", "1.3.16")])
def test_unknown_generation_version_is_an_invalid_input_entry_on_config_version(client, spec, version):
    resp = client.simulate_post(f"/v1/invoice/{spec}", body=with_config(SMALL.read_bytes(), version=version),
                                headers={"Content-Type": "application/json"})
    assert resp.status_code == 400 and resp.json["errorCode"] == "INVALID_INPUT", resp.text
    [entry] = resp.json["errors"]
    assert (entry["field"], entry["rejectedValue"]) == ("config.version", version)
    assert "validation package" not in resp.json["message"]


@pytest.mark.parametrize("spec", ["xrechnung", "en16931"])
def test_a_known_generation_version_is_honoured(spec):
    from pipeline.check import packs

    version = packs.latest_active(spec).version
    xml, report = generate.generate_xml(with_config(SMALL.read_bytes(), version=version), spec)
    assert report.valid and report.version == version


@pytest.mark.parametrize("spec", ["xrechnung", "en16931"])
def test_profile_is_refused_on_the_xml_endpoints(client, spec):
    resp = client.simulate_post(f"/v1/invoice/{spec}", body=with_config(SMALL.read_bytes(), profile="BASIC"),
                                headers={"Content-Type": "application/json"})
    assert resp.status_code == 400 and resp.json["errorCode"] == "INVALID_INPUT", resp.text
    assert [(e["field"], e["rejectedValue"]) for e in resp.json["errors"]] == [("config.profile", "BASIC")]


def test_stages_chain_to_the_same_document():
    body = SMALL.read_bytes()
    request = generate.calculate(generate.parse(body, "en16931"))
    canonical = generate.to_canonical(request)
    assert canonical == generate.normalize(body, "en16931")[1]
    xml = generate.transform(canonical, str(request.config.syntax).upper(), "en16931")
    assert xml == generate.generate_xml(body, "en16931")[0]


def test_dump_request_keeps_decimals_exactly():
    body = b'{"a": 0.1, "b": [1.10, 2], "c": "x", "d": 12345678901234567890.123456789}'
    again = load_request(dump_request(load_request(body)))
    assert again == load_request(body)
    assert str(again["d"]) == "12345678901234567890.123456789"


# ---- endpoints ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec,spec_id", [("xrechnung", XR_ID), ("en16931", EN_ID)])
@pytest.mark.parametrize("accept", [None, "application/xml", "*/*", "text/html, application/xml;q=0.5"])
def test_endpoint_returns_valid_xml(client, spec, spec_id, accept):
    headers = {"Content-Type": "application/json"}
    if accept:
        headers["Accept"] = accept
    resp = client.simulate_post(f"/v1/invoice/{spec}", body=SMALL.read_bytes(), headers=headers)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("application/xml")
    assert _spec_id(resp.content) == spec_id
    assert generate.validate(resp.content, spec).valid


def test_endpoint_syntax_from_config(client):
    body = with_config(SMALL.read_bytes(), syntax="UBL")
    resp = client.simulate_post("/v1/invoice/en16931", body=body, headers={"Content-Type": "application/json"})
    assert resp.status_code == 200
    assert etree.fromstring(resp.content).tag.endswith("}Invoice")


def _error(resp, status: int, code: str) -> dict:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    body = resp.json
    assert body["errorCode"] == code and body["requestId"] and body["message"]
    assert set(body) == {"requestId", "status", "errorCode", "message", "errors"}
    return body


def test_endpoint_422_lists_failed_rules_and_returns_no_document(client):
    resp = client.simulate_post("/v1/invoice/xrechnung", body=_without(SMALL, "buyerReference"),
                                headers={"Content-Type": "application/json", "X-Request-Id": "gen-422"})
    body = _error(resp, 422, "VALIDATION_FAILED")
    assert body["requestId"] == "gen-422"
    assert {"code": "BR-DE-15", "field": "invoice.buyerReference", "businessTerm": "BT-10"}.items() <= \
        next(e for e in body["errors"] if e["code"] == "BR-DE-15").items()
    assert b"<" not in resp.content


@pytest.mark.parametrize("accept", ["text/xml", "text/*", "text/xml, application/json;q=0.9"])
def test_endpoint_answers_text_xml_to_a_client_that_accepts_only_that(client, accept):
    """text/xml and application/xml name the same documents (RFC 7303): the XML, labelled as the client asks."""
    resp = client.simulate_post("/v1/invoice/xrechnung", body=SMALL.read_bytes(),
                                headers={"Content-Type": "application/json", "Accept": accept})
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "text/xml"
    assert generate.validate(resp.content, "xrechnung").valid


@pytest.mark.parametrize("accept", ["application/json", "application/pdf", "text/html", "image/*"])
def test_endpoint_406_when_accept_excludes_xml(client, accept):
    resp = client.simulate_post("/v1/invoice/xrechnung", body=SMALL.read_bytes(),
                                headers={"Content-Type": "application/json", "Accept": accept})
    _error(resp, 406, "NOT_ACCEPTABLE")


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/xml", "multipart/form-data"])
def test_endpoint_415_unless_json(client, content_type):
    headers = {"Content-Type": content_type} if content_type else {}
    resp = client.simulate_post("/v1/invoice/en16931", body=SMALL.read_bytes(), headers=headers)
    _error(resp, 415, "UNSUPPORTED_MEDIA_TYPE")


@pytest.mark.parametrize("path", ["/v1/invoice/en16931", "/v1/invoice/en16931/validate"])
def test_a_compressed_body_is_415_saying_so_not_malformed(client, path):
    import gzip
    resp = client.simulate_post(path, body=gzip.compress(SMALL.read_bytes()), headers={
        "Content-Type": "application/json" if path.endswith("16931") else "multipart/form-data; boundary=b",
        "Content-Encoding": "gzip"})
    assert "Content-Encoding gzip" in _error(resp, 415, "UNSUPPORTED_MEDIA_TYPE")["message"]


@pytest.mark.parametrize("body", [b"", b"{", b"[]", b'{"invoice": {}}'])
def test_endpoint_400_for_bad_bodies(client, body):
    resp = client.simulate_post("/v1/invoice/xrechnung", body=body, headers={"Content-Type": "application/json"})
    _error(resp, 400, "INVALID_INPUT")


def test_endpoint_400_for_metadata_language(client):
    body = with_config(SMALL.read_bytes(), metadataLanguage="de")
    resp = client.simulate_post("/v1/invoice/en16931", body=body, headers={"Content-Type": "application/json"})
    body = _error(resp, 400, "INVALID_INPUT")
    assert any(e["field"] == "config.metadataLanguage" for e in body["errors"])


def test_endpoint_400_for_a_typo_with_its_path(client):
    request = load_request(SMALL.read_bytes())
    request["invoice"]["seller"]["postalAddress"]["cty"] = "Berlin"
    resp = client.simulate_post("/v1/invoice/en16931", body=dump_request(request),
                                headers={"Content-Type": "application/json; charset=utf-8"})
    body = _error(resp, 400, "INVALID_INPUT")
    assert any(e["field"] == "invoice.seller.postalAddress.cty" for e in body["errors"])


# ---- CLI ------------------------------------------------------------------------------------------------

def test_cli_generate_writes_a_valid_document(tmp_path, capsys):
    out = tmp_path / "out.xml"
    assert main(["generate", str(SMALL), "--spec", "en16931", "--syntax", "UBL", "-o", str(out)]) == 0
    xml = out.read_bytes()
    assert etree.fromstring(xml).tag.endswith("}Invoice") and _spec_id(xml) == EN_ID
    assert generate.validate(xml, "en16931").valid


def test_cli_generate_reports_failed_rules(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_bytes(_without(SMALL, "buyerReference"))
    assert main(["generate", str(bad), "--spec", "xrechnung"]) == 1
    lines = capsys.readouterr().err.splitlines()  # one readable line, then one per failed rule
    assert lines[0].startswith("VALIDATION_FAILED: ")
    assert any(line.startswith("  BR-DE-15 invoice.buyerReference (BT-10): ") for line in lines[1:]), lines


def test_cli_run_stages(tmp_path, capsys):
    assert main(["run", "normalize", str(SMALL)]) == 0
    canonical = capsys.readouterr().out.encode()
    root = etree.fromstring(canonical)
    assert root.tag == "{urn:einvoice-pipeline:canonical:1}invoice"
    assert root.findtext("{*}documentTotals/{*}payableAmount") == "2390.00"  # AUTO amounts filled in
    path = tmp_path / "canonical.xml"
    path.write_bytes(canonical)

    assert main(["run", "transform", str(path), "--to", "ubl", "--spec", "xrechnung"]) == 0
    ubl = capsys.readouterr().out.encode()
    assert _spec_id(ubl) == XR_ID
    doc = tmp_path / "doc.xml"
    doc.write_bytes(ubl)

    assert main(["run", "validate", str(doc), "--spec", "xrechnung"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] is True and report["syntax"].startswith("UBL")


def test_cli_run_validate_exit_1_for_an_invalid_document(tmp_path, capsys):
    doc = tmp_path / "doc.xml"
    doc.write_bytes(generate.transform(generate.normalize(_without(SMALL, "buyerReference"), "en16931")[1],
                                       "CII", "xrechnung"))
    assert main(["run", "validate", str(doc), "--spec", "xrechnung"]) == 1
    assert any(i["code"] == "BR-DE-15" for i in json.loads(capsys.readouterr().out)["issues"])


def test_cli_run_transform_points_at_the_stylesheet_line(tmp_path, capsys):
    canonical = tmp_path / "canonical.xml"
    canonical.write_bytes(generate.normalize(SMALL.read_bytes(), "en16931")[1])
    broken = tmp_path / "my.xsl"
    broken.write_text('<xsl:stylesheet version="3.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">\n'
                      '  <xsl:template match="/">\n'
                      '    <out><xsl:value-of select="1 div 0"/></out>\n'
                      '  </xsl:template>\n'
                      '</xsl:stylesheet>\n')
    assert main(["run", "transform", str(canonical), "--xslt", str(broken)]) == 2
    err = capsys.readouterr().err
    assert "my.xsl" in err and "line 3" in err


def test_a_sent_xrechnung_extension_id_is_written_and_validated_as_such():
    ext = XR_ID + "#conformant#urn:xeinkauf.de:kosit:extension:xrechnung_3.0"
    request = load_request(FIXTURES.joinpath("xrechnung-spec-id.json").read_bytes())
    request["invoice"]["processControl"]["specificationIdentifier"] = ext
    for syntax in ("CII", "UBL"):
        request["config"]["syntax"] = syntax
        xml, report = generate.generate_xml(dump_request(request), "xrechnung")
        assert _spec_id(xml) == ext and report.valid
    with pytest.raises(ApiError) as err:  # the en16931 endpoint refuses it (the model checks BT-24)
        generate.generate_xml(dump_request(request), "en16931")
    assert err.value.http_status == 400


def test_a_failing_stylesheet_is_a_500_generation_failed(client, tmp_path, monkeypatch):
    from pipeline.write import transform
    broken = tmp_path / "cii.xsl"
    broken.write_text('<xsl:stylesheet version="3.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">'
                      '<xsl:template match="/"><xsl:sequence select="error()"/></xsl:template></xsl:stylesheet>')
    monkeypatch.setattr(transform, "CII_XSL", broken)
    resp = client.simulate_post("/v1/invoice/en16931", body=SMALL.read_bytes(),
                                headers={"Content-Type": "application/json"})
    body = _error(resp, 500, "GENERATION_FAILED")
    assert "xsl" not in body["message"].lower()  # no internals leak to the client


def test_warm_up_compiles_the_generation_stylesheets():
    from pipeline import saxon
    from pipeline.write import transform

    transform.warm_up()
    key = {str(transform.CII_XSL.resolve()), str(transform.UBL_XSL.resolve())}
    assert key <= set(saxon._get()["compiled"])


def test_a_failed_rule_carries_the_value_sent_at_its_field(client):
    """MANUAL amounts are used as sent: a payable amount of 1.0 fails BR-CO-16, and the entry says 1.0 was sent (the
    number, as sent)."""
    request = load_request((FIXTURES / "manual-totals.json").read_bytes())
    assert request["config"]["calculationMode"] == "MANUAL"
    request["invoice"]["documentTotals"]["payableAmount"] = load_request(b'{"v": 1.0}')["v"]
    resp = client.simulate_post("/v1/invoice/en16931", body=dump_request(request),
                                headers={"Content-Type": "application/json"})
    assert resp.status_code == 422, resp.text
    entry = next(e for e in resp.json["errors"] if e["code"] == "BR-CO-16")
    assert (entry["field"], entry["rejectedValue"]) == ("invoice.documentTotals.payableAmount", 1.0)
    assert '"rejectedValue": 1.0,' in resp.text   # the number as sent, digit for digit
    assert [e["code"] for e in resp.json["errors"]].count("BR-CO-16") == 1
