"""The XRechnung extension: sub-invoice lines (BG-DEX-01) and third-party payments (BG-DEX-09).

- The official extension business cases (and KoSIT's third-party payment instance), parsed into requests and
  generated again, pass the official extension scenario and read back with the same business terms (independent
  reader, tests/roundtrip/reader.py), sub-lines and payments included.
- The groups are accepted on the xrechnung endpoint only with the extension's BT-24, and in UBL only (XRechnung binds
  them there): anything else is a 400 naming the group's field path and business term.
- AUTO computes a sub-line's amounts like a line's, a parent's as the sum of the sub-lines below it (BR-DEX-02), and
  adds the third-party payments to BT-115 (BR-DEX-09).
"""
from __future__ import annotations

import copy
import json
import re
from decimal import Decimal
from pathlib import Path

import falcon.testing
import pytest

from conftest import CORPUS
from pipeline.errors import ApiError
from pipeline.flows.generate_xml import generate_xml
from pipeline.flows.parse import parse
from pipeline.flows.validate_xml import validate
from pipeline.invoice.request_json import dump_request
from pipeline.invoice.specs import XRECHNUNG_EXTENSION_ID, XRECHNUNG_ID
from pipeline.service.app import create_app
from roundtrip.reader import diff_lines, flatten, read_terms

EXTENSION = CORPUS / "xrechnung-testsuite/business-cases/extension"
THIRD_PARTY = CORPUS / "kosit-validator-configuration-tests/instances/ubl-br-dex-09-prepaidpayment.xml"
REQUEST = Path(__file__).parent / "data" / "request-standard.json"
SCENARIO = {"UBL": "EN16931 XRechnung Extension (UBL Invoice)", "CII": "EN16931 XRechnung Extension (CII)"}
# (source, syntaxes it is generated in): the groups exist in UBL only; 04.05a (CII) uses the extension for its
# DiGA identifier schemes and has neither group, so it is generated in both syntaxes.
CASES = [(EXTENSION / "04.01a-INVOICE_ubl.xml", "UBL"), (EXTENSION / "04.03a-INVOICE_ubl.xml", "UBL"),
         (EXTENSION / "04.05a-INVOICE_uncefact.xml", "CII"), (EXTENSION / "04.05a-INVOICE_uncefact.xml", "UBL"),
         (THIRD_PARTY, "UBL")]


def _request(source: Path, syntax: str) -> dict:
    parsed = parse(source.read_bytes())
    assert parsed.complete and not parsed.unmapped, (parsed.missing, parsed.unmapped[:3])
    assert parsed.invoice["processControl"]["specificationIdentifier"] == XRECHNUNG_EXTENSION_ID
    return {"invoice": parsed.invoice, "config": {**parsed.config, "syntax": syntax}}


_ZONED_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:Z|[+-]\d{2}:\d{2})")


def _terms(xml: bytes) -> dict[str, str]:
    """Business terms by JSON path; a date with a time zone (the KoSIT instance writes `2016-04-04+01:00`) as the
    date the model carries."""
    return {k: _ZONED_DATE.sub(r"\1", v) for k, v in flatten(read_terms(xml).terms).items()}


def _depth(lines: list[dict]) -> int:
    return max((1 + _depth(line.get("subInvoiceLines", [])) for line in lines), default=0)


@pytest.mark.parametrize("source,syntax", CASES, ids=[f"{s.name}-{x}" for s, x in CASES])
def test_official_extension_cases_round_trip_in_the_extension_scenario(source: Path, syntax: str):
    request = _request(source, syntax)
    xml, report = generate_xml(dump_request(request), "xrechnung")
    outcome = validate(xml, "xrechnung")
    assert report.valid and outcome.report.valid and outcome.scenario == SCENARIO[syntax]

    expected, back = _terms(source.read_bytes()), _terms(xml)
    assert back.pop("processControl.specificationIdentifier") == XRECHNUNG_EXTENSION_ID
    expected.pop("processControl.specificationIdentifier")
    added = {k for k in back.keys() - expected.keys() if k.endswith(".priceDiscount")}   # BT-147 = gross - net
    assert {k: v for k, v in back.items() if k not in added} == expected, "\n".join(diff_lines(expected, back))
    source_lines = read_terms(source.read_bytes()).terms["invoiceLines"]
    assert _depth(read_terms(xml).terms["invoiceLines"]) == _depth(source_lines)


def test_the_cases_carry_the_groups():
    """What the round trip above compares: 04.01a nests sub-lines three deep, the KoSIT instance has two payments."""
    lines = _request(EXTENSION / "04.01a-INVOICE_ubl.xml", "UBL")["invoice"]["invoiceLines"]
    assert _depth(lines) == 3 and lines[0]["subInvoiceLines"][0]["subInvoiceLines"][1]["netAmount"] == Decimal("48.75")
    payments = _request(THIRD_PARTY, "UBL")["invoice"]["thirdPartyPayments"]
    assert [p["amount"] for p in payments] == [Decimal("19.96"), Decimal("10.00")]
    assert payments[0] == {"paymentType": "MobilesBezahlen", "amount": Decimal("19.96"),
                           "description": "Mobiles Bezahlen (Brutto-Forderung für Fremdleistungen)"}


# ---- where the groups are accepted ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _errors(client, request: dict, spec: str = "xrechnung") -> list[dict]:
    resp = client.simulate_post(f"/v1/invoice/{spec}", body=dump_request(request),
                                headers={"Content-Type": "application/json"})
    assert resp.status_code == 400, resp.text[:500]
    return resp.json["errors"]


def _fields(errors: list[dict]) -> dict[str, str]:
    return {e["field"]: e["businessTerm"] for e in errors}


def test_sub_lines_need_the_extension_specification_identifier(client):
    request = _request(EXTENSION / "04.01a-INVOICE_ubl.xml", "UBL")
    groups = {"invoice.invoiceLines[0].subInvoiceLines": "BG-DEX-01",
              "invoice.invoiceLines[1].subInvoiceLines": "BG-DEX-01"}
    request["invoice"]["processControl"]["specificationIdentifier"] = XRECHNUNG_ID   # plain XRechnung
    errors = _errors(client, request)
    assert _fields(errors) == groups and all(XRECHNUNG_EXTENSION_ID in e["message"] for e in errors)
    del request["invoice"]["processControl"]["specificationIdentifier"]              # the endpoint's default
    assert _fields(_errors(client, request)) == groups


def test_third_party_payments_need_the_xrechnung_endpoint(client):
    request = _request(THIRD_PARTY, "UBL")
    request["config"]["spec"] = "en16931"
    del request["invoice"]["processControl"]["specificationIdentifier"]
    assert _fields(_errors(client, request, "en16931")) == {"invoice.thirdPartyPayments": "BG-DEX-09"}


@pytest.mark.parametrize("source,field,bt", [
    (EXTENSION / "04.01a-INVOICE_ubl.xml", "invoice.invoiceLines[0].subInvoiceLines", "BG-DEX-01"),
    (THIRD_PARTY, "invoice.thirdPartyPayments", "BG-DEX-09")])
def test_cii_cannot_carry_the_groups(client, source, field, bt):
    """XRechnung binds both groups in UBL only: its CII extension scenario runs the EN 16931 rules, which count
    every CII line into BT-106 (BR-CO-10) and refuse third-party payments in BT-115 (BR-CO-16)."""
    errors = _errors(client, _request(source, "CII"))
    assert _fields(errors)[field] == bt and "UBL" in next(e["message"] for e in errors if e["field"] == field)


# ---- AUTO -------------------------------------------------------------------------------------------------------

def _sub(identifier: str, quantity, price, **more) -> dict:
    return {"lineIdentifier": identifier, "itemInformation": {"name": f"Position {identifier}"},
            "quantity": quantity, "unitCode": "H87", "priceDetails": {"netPrice": price},
            "lineVatInformation": {"vatCategoryCode": "S", "vatRate": 19}, **more}


def _extension_request() -> dict:
    """The standard request (lines at 19 % and 7 %) with a sub-line tree under line 1 and a third-party payment;
    no amount sent."""
    request = json.loads(REQUEST.read_text())
    request["config"] = {"syntax": "UBL"}
    invoice = request["invoice"]
    invoice["processControl"]["specificationIdentifier"] = XRECHNUNG_EXTENSION_ID
    invoice["invoiceLines"][0]["subInvoiceLines"] = [
        {**_sub("1.1", 1, 7.65), "subInvoiceLines": [_sub("1.1.1", 3, 1.30), _sub("1.1.2", 2.5, 1.50)]},
        _sub("1.2", 2, 10, invoiceLineAllowances=[{"amount": 1, "reason": "Rabatt"}]),
    ]
    invoice["thirdPartyPayments"] = [{"paymentType": "Gebühr", "amount": 12.5, "description": "Verwaltungsgebühr"}]
    return request


def test_auto_computes_sub_line_amounts_as_the_extension_rules_require():
    request = _extension_request()
    xml, report = generate_xml(dump_request(request), "xrechnung")
    outcome = validate(xml, "xrechnung")
    assert report.valid and outcome.scenario == SCENARIO["UBL"]
    assert not [i.code for i in outcome.report.issues if i.code.startswith("BR-DEX")]   # BR-DEX-02 (warning) too
    terms = read_terms(xml).terms
    line = terms["invoiceLines"][0]
    sub = line["subInvoiceLines"]
    # a sub-line's own amount: quantity x price - allowances; a parent's: the sum of the sub-lines below it
    assert [s["netAmount"] for s in sub[0]["subInvoiceLines"]] == [Decimal("3.90"), Decimal("3.75")]
    assert [s["netAmount"] for s in sub] == [Decimal("7.65"), Decimal("19.00")]
    assert line["netAmount"] == Decimal("26.65")
    # the lines carry their sub-lines: only they count in BT-106 and the VAT breakdown
    totals = terms["documentTotals"]
    assert totals["lineExtensionAmount"] == sum(x["netAmount"] for x in terms["invoiceLines"])
    assert totals["payableAmount"] == totals["taxInclusiveAmount"] + Decimal("12.50")           # BR-DEX-09


def test_auto_keeps_a_sent_sub_line_amount_and_sums_the_sent_value():
    request = _extension_request()
    first = request["invoice"]["invoiceLines"][0]["subInvoiceLines"][0]
    first["subInvoiceLines"][1]["netAmount"] = 3.76   # an ERP's cent from an unrounded price: kept
    xml, report = generate_xml(dump_request(request), "xrechnung")
    sub = read_terms(xml).terms["invoiceLines"][0]["subInvoiceLines"]
    assert report.valid and sub[0]["subInvoiceLines"][1]["netAmount"] == Decimal("3.76")
    assert sub[0]["netAmount"] == Decimal("7.66")


def test_a_parent_amount_that_contradicts_its_sub_lines_is_the_rules_business():
    """A sent parent amount is kept; the extension's BR-DEX-02 (a warning) says it is not the sum."""
    request = _extension_request()
    request["invoice"]["invoiceLines"][0]["subInvoiceLines"][0]["netAmount"] = 8
    xml, report = generate_xml(dump_request(request), "xrechnung")
    assert report.valid and "BR-DEX-02" in {i.code for i in report.issues}


def _nested(levels: int) -> dict:
    request = _extension_request()
    line = request["invoice"]["invoiceLines"][0]
    for level in range(levels):
        line["subInvoiceLines"] = [copy.deepcopy(_sub(f"{level}", 1, 1))]
        line = line["subInvoiceLines"][0]
    return request


def test_sub_lines_nest_at_most_ten_levels(client):
    xml, report = generate_xml(dump_request(_nested(10)), "xrechnung")
    assert report.valid and xml.count(b"<cac:SubInvoiceLine>") == 10
    errors = _errors(client, _nested(11))
    assert [(e["code"], e["businessTerm"]) for e in errors] == [("OUT_OF_RANGE", "BG-DEX-01")]
    assert errors[0]["field"].count("subInvoiceLines") == 11


def test_an_auto_sub_line_without_quantity_or_price_names_its_path():
    request = _extension_request()
    del request["invoice"]["invoiceLines"][0]["subInvoiceLines"][0]["subInvoiceLines"][0]["quantity"]
    with pytest.raises(ApiError) as err:
        generate_xml(dump_request(request), "xrechnung")
    assert err.value.http_status == 400
    assert [e.field for e in err.value.errors] == ["invoice.invoiceLines[0].subInvoiceLines[0].subInvoiceLines[0].quantity"]


def test_the_openapi_text_says_where_the_groups_are_accepted():
    from pipeline.invoice.model import InvoiceRequest
    defs = InvoiceRequest.model_json_schema()["$defs"]
    for text in (defs["InvoiceLine"]["properties"]["subInvoiceLines"]["description"],
                 defs["Invoice"]["properties"]["thirdPartyPayments"]["description"]):
        assert "Extension" in text and XRECHNUNG_EXTENSION_ID in text and "UBL" in text
