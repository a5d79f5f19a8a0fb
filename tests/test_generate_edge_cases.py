"""Generation edge cases a demanding ERP team sends: every answer is a document the official rules accept, or a
400/422 whose entries name the JSON field (judged by the official packs, read back with parse)."""
from __future__ import annotations

import json

import pytest

from pipeline.errors import ApiError
from pipeline.flows import generate_xml as generate
from pipeline.flows.parse import parse
from pipeline.cli.golden import FIXTURES


def _request(mutate) -> bytes:
    request = json.loads(FIXTURES.joinpath("vat-k-intra-community.json").read_text())
    inv = request["invoice"]
    inv["buyer"]["postalAddress"]["countryCode"] = "DE"
    inv["buyer"]["vatIdentifier"] = "DE987654328"
    inv["vatBreakdowns"] = []
    inv["invoiceLines"] = [{"lineIdentifier": "1", "itemInformation": {"name": "Pumpe"}, "quantity": 2,
                            "unitCode": "C62", "priceDetails": {"netPrice": 10},
                            "lineVatInformation": {"vatCategoryCode": "S", "vatRate": 19}}]
    mutate(inv, request)
    return json.dumps(request).encode()


def _refused(body: bytes, spec: str, syntax: str) -> ApiError:
    request = json.loads(body)
    request["config"]["syntax"] = syntax
    with pytest.raises(ApiError) as err:
        generate.generate_xml(json.dumps(request).encode(), spec)
    return err.value


BOTH = pytest.mark.parametrize("spec,syntax", [(s, x) for s in ("xrechnung", "en16931") for x in ("CII", "UBL")])


@BOTH
def test_xrechnung_findings_name_the_item_and_field(spec, syntax):
    # the XRechnung packs locate findings by EQNames (Q{urn:...}Name[2]): the index and field come from them too
    def mutate(inv, _):
        inv["documentLevelAllowances"] = [{"amount": 1, "vatCategoryCode": "S", "vatRate": 19, "reason": "Skonto"},
                                          {"amount": 1, "vatCategoryCode": "S", "vatRate": 19}]
        inv["buyer"]["electronicAddressSchemeId"] = "9999"
    fields = {(d.code, d.field) for d in _refused(_request(mutate), spec, syntax).errors}
    assert any(code == "BR-33" and field.startswith("invoice.documentLevelAllowances[1].reason")
               for code, field in fields)   # reason (BT-97) or reasonCode (BT-98): either is what to send
    assert ("BR-CL-25", "invoice.buyer.electronicAddressSchemeId") in fields


@BOTH
def test_missing_category_code_of_an_allowance_names_it(spec, syntax):
    body = _request(lambda inv, _: inv.update(documentLevelAllowances=[{"amount": 1, "reason": "Skonto"}]))
    fields = {(d.code, d.field) for d in _refused(body, spec, syntax).errors}
    assert ("BR-32", "invoice.documentLevelAllowances[0].vatCategoryCode") in fields


@BOTH
def test_allowance_without_amount_or_percentage_is_a_400_naming_it(spec, syntax):
    # before: an empty amount element, refused by the UBL XSD without a field path
    body = _request(lambda inv, _: inv["invoiceLines"][0].update(
        invoiceLineAllowances=[{"baseAmount": 20, "reason": "Rabatt"}]))
    err = _refused(body, spec, syntax)
    assert err.http_status == 400
    assert [(d.code, d.field) for d in err.errors] == [
        ("REQUIRED", "invoice.invoiceLines[0].invoiceLineAllowances[0].amount")]


@BOTH
def test_invalid_base64_attachment_is_a_400(spec, syntax):
    # libxml2 lets '!!!' pass as xs:base64Binary; Xerces (the official validators') refuses the document
    body = _request(lambda inv, _: inv.update(additionalSupportingDocuments=[{
        "reference": "A1", "attachedDocument": "QR==", "attachedDocumentMimeType": "application/pdf",
        "attachedDocumentFilename": "a.pdf"}]))
    err = _refused(body, spec, syntax)
    assert err.http_status == 400
    assert [d.field for d in err.errors] == ["invoice.additionalSupportingDocuments[0].attachedDocument"]


@BOTH
def test_not_subject_breakdown_sent_without_rate(spec, syntax):
    # the OpenAPI says null for category O; XRechnung requires BT-119 (BR-DE-14): AUTO writes 0, as for the ones it adds
    def mutate(inv, request):
        inv["invoiceLines"][0]["lineVatInformation"] = {"vatCategoryCode": "O", "vatRate": 0}
        inv["buyer"].pop("vatIdentifier")
        inv["seller"].pop("vatIdentifier")
        inv["seller"].update(identifier="4000001000005", identifierSchemeId="0088")
        inv["vatBreakdowns"] = [{"vatCategoryCode": "O", "exemptionReason": "Nicht steuerbar"}]
        request["config"]["syntax"] = syntax
    xml, report = generate.generate_xml(_request(mutate), spec)
    assert report.valid and generate.validate(xml, spec).valid
    breakdown = parse(xml).invoice["vatBreakdowns"]
    assert [(b["vatCategoryCode"], b["vatCategoryRate"], b["vatCategoryTaxAmount"]) for b in breakdown] == [
        ("O", 0, 0)]


@BOTH
def test_many_rates_categories_allowances_read_back_as_sent(spec, syntax):
    def line(i, qty, price, cat, rate, **more):
        return {"lineIdentifier": str(i), "itemInformation": {"name": f"Müller 株式会社 😀 {i}"}, "quantity": qty,
                "unitCode": "C62", "priceDetails": {"netPrice": price}, "lineVatInformation":
                {"vatCategoryCode": cat, "vatRate": rate}, **more}

    def mutate(inv, request):
        inv["invoiceLines"] = [
            line(1, 1.2345, 0.3333333333, "S", 19, invoiceLineAllowances=[{"percentage": 33.333, "reason": "R"}]),
            line(2, -3, 0.005, "S", 7), line(3, 7, 12.3456789, "S", 7, invoiceLineCharges=[{"amount": 1.5,
                                                                                          "reasonCode": "FC"}]),
            line(4, 1, 100, "Z", 0), line(5, 1, 50, "E", 0)]
        inv["invoiceLines"][2]["priceDetails"].update(priceBasisQuantity=100, basisUnitCode="C62")
        inv["vatBreakdowns"] = [{"vatCategoryCode": "E", "vatCategoryRate": 0, "exemptionReason": "Steuerfrei"}]
        inv["documentLevelAllowances"] = [{"percentage": 3, "vatCategoryCode": "S", "vatRate": 19, "reason": "Skonto"}]
        inv["documentLevelCharges"] = [{"percentage": 2.5, "baseAmount": 21, "vatCategoryCode": "S", "vatRate": 7,
                                        "reasonCode": "FC"}]
        inv["documentTotals"] = {"prepaidAmount": 10, "payableRoundingAmount": 0.01}
        request["config"]["syntax"] = syntax
    body = _request(mutate)
    xml, report = generate.generate_xml(body, spec)
    assert report.valid and generate.validate(xml, spec).valid
    sent, read = json.loads(body)["invoice"], parse(xml).invoice
    assert [line["itemInformation"]["name"] for line in read["invoiceLines"]] == [
        line["itemInformation"]["name"] for line in sent["invoiceLines"]]
    assert [str(line["priceDetails"]["netPrice"]) for line in read["invoiceLines"]] == [
        "0.3333333333", "0.005", "12.3456789", "100", "50"]
    assert {b["vatCategoryCode"] for b in read["vatBreakdowns"]} == {"S", "Z", "E"}
