"""A 422 entry names the concrete item of every repeated group: for each group the SECOND item is made faulty in a
way only the official rules catch (a code outside its list, a term a rule requires), and the entry's field carries
index [1] and the business term of the field, on every generation endpoint and syntax (judged by the official packs
and the Factur-X profile rules through the real app)."""
from __future__ import annotations

import copy
import json

import pytest
from falcon import testing

from pipeline.cli.golden import FIXTURES
from pipeline.service.app import create_app

_PDF = "JVBERi0xLjQK"   # "%PDF-1.4\n"


def _line(inv, i=1):
    return inv["invoiceLines"][i]


def _allowance(**fields):
    return {"amount": 1, "vatCategoryCode": "S", "vatRate": 19, "reason": "Skonto", **fields}


def _exempt_breakdown(inv):
    inv["invoiceLines"].append({"lineIdentifier": "3", "itemInformation": {"name": "Buch"}, "quantity": 1,
                                "unitCode": "C62", "priceDetails": {"netPrice": 10},
                                "lineVatInformation": {"vatCategoryCode": "E", "vatRate": 0}})
    inv["vatBreakdowns"].append({"vatCategoryCode": "E", "vatCategoryRate": 0, "exemptionReasonCode": "VATEX-QQQ"})


# group -> (fault made in the second item of repeated-terms.json, expected field, business term): faults the request
# model leaves to the official rules (a code outside its list, BR-CL-*; a line period ending before it starts, BR-30).
CASES = {
    "invoiceLines": (lambda inv: _line(inv).update(invoiceLinePeriod={"startDate": "2024-05-10",
                                                                      "endDate": "2024-05-01"}),
                     "invoice.invoiceLines[1].invoiceLinePeriod.endDate", "BT-135"),
    "documentLevelAllowances": (
        lambda inv: inv.update(documentLevelAllowances=[_allowance(), _allowance(reasonCode="999")]),
        "invoice.documentLevelAllowances[1].reasonCode", "BT-98"),
    "documentLevelCharges": (
        lambda inv: inv.update(documentLevelCharges=[_allowance(), _allowance(reasonCode="999")]),
        "invoice.documentLevelCharges[1].reasonCode", "BT-105"),
    "vatBreakdowns": (_exempt_breakdown, "invoice.vatBreakdowns[1].exemptionReasonCode", "BT-121"),
    "additionalSupportingDocuments": (
        lambda inv: inv.update(additionalSupportingDocuments=[
            {"reference": "A1", "description": "Lieferschein"},
            {"reference": "A2", "attachedDocument": _PDF, "attachedDocumentMimeType": "text/html",
             "attachedDocumentFilename": "a.html"}]),
        "invoice.additionalSupportingDocuments[1].attachedDocumentMimeType", "BT-125-1"),
    "invoiceLineAllowances": (
        lambda inv: _line(inv).update(invoiceLineAllowances=[{"amount": 1, "reason": "Rabatt"},
                                                             {"amount": 1, "reasonCode": "999"}]),
        "invoice.invoiceLines[1].invoiceLineAllowances[1].reasonCode", "BT-140"),
    "invoiceLineCharges": (
        lambda inv: _line(inv).update(invoiceLineCharges=[{"amount": 1, "reason": "Fracht"},
                                                          {"amount": 1, "reasonCode": "999"}]),
        "invoice.invoiceLines[1].invoiceLineCharges[1].reasonCode", "BT-145"),
    "additionalInvoiceNotes": (lambda inv: inv["additionalInvoiceNotes"][1].update(invoiceNoteSubjectCode="QQQ"),
                               "invoice.additionalInvoiceNotes[1].invoiceNoteSubjectCode", "BT-21"),
    "additionalIdentifiers": (lambda inv: inv["seller"]["additionalIdentifiers"][1].update(identifierSchemeId="9999"),
                              "invoice.seller.additionalIdentifiers[1].identifierSchemeId", "BT-29-1"),
    "additionalClassifiedIdentifiers": (
        lambda inv: _line(inv, 0)["itemInformation"]["additionalClassifiedIdentifiers"][1].update(
            classifiedIdentifierSchemeId="QQ"),
        "invoice.invoiceLines[0].itemInformation.additionalClassifiedIdentifiers[1].classifiedIdentifierSchemeId",
        "BT-158-1"),
}
ENDPOINTS = [("xrechnung", "CII"), ("xrechnung", "UBL"), ("en16931", "CII"), ("en16931", "UBL"), ("zugferd", "CII")]


@pytest.fixture(scope="module")
def client():
    return testing.TestClient(create_app(platform=False))


def _body(mutate, syntax: str) -> str:
    request = copy.deepcopy(json.loads(FIXTURES.joinpath("repeated-terms.json").read_text("utf-8")))
    mutate(request["invoice"])
    request["config"]["syntax"] = syntax
    return json.dumps(request)


@pytest.mark.parametrize("group", CASES)
@pytest.mark.parametrize("spec,syntax", ENDPOINTS)
def test_the_second_items_official_finding_names_its_index_and_term(client, group, spec, syntax):
    mutate, field, bt = CASES[group]
    answer = client.simulate_post(f"/v1/invoice/{spec}", body=_body(mutate, syntax),
                                  headers={"Content-Type": "application/json"})
    assert answer.status_code == 422, answer.text
    entries = [(e["field"], e.get("businessTerm")) for e in answer.json["errors"]]
    assert (field, bt) in entries, entries
    assert all("[]" not in (f or "") for f, _ in entries), entries


def test_a_lines_object_identifier_scheme_names_the_line_not_the_invoice(client):
    # BR-CL-07 judges BT-18-1 and BT-128-1 alike; the invoice has an object identifier of its own (BT-18)
    body = _body(lambda inv: _line(inv).update(objectIdentifier="SN-2", objectIdentifierSchemeId="QQQ"), "UBL")
    answer = client.simulate_post("/v1/invoice/en16931", body=body, headers={"Content-Type": "application/json"})
    assert answer.status_code == 422, answer.text
    assert [(e["field"], e.get("businessTerm")) for e in answer.json["errors"]] == [
        ("invoice.invoiceLines[1].objectIdentifierSchemeId", "BT-128-1")]


def test_an_items_attribute_without_value_names_the_attribute(client):
    # XRechnung's Peppol rule on an empty element (PEPPOL-EN16931-R008): the second attribute of the second line
    body = _body(lambda inv: _line(inv)["itemInformation"].update(
        itemAttributes=[{"name": "Farbe", "value": "rot"}, {"name": "Größe"}]), "UBL")
    answer = client.simulate_post("/v1/invoice/xrechnung", body=body, headers={"Content-Type": "application/json"})
    assert answer.status_code == 422, answer.text
    assert ("invoice.invoiceLines[1].itemInformation.itemAttributes[1].value", "BT-161") in [
        (e["field"], e.get("businessTerm")) for e in answer.json["errors"]]


def test_a_sub_lines_finding_names_the_sub_line_at_its_depth(client):
    # the XRechnung extension (UBL only): sub-lines at any depth share one pattern, the XPath numbers each level
    request = json.loads(FIXTURES.joinpath("xrechnung-extension.json").read_text("utf-8"))
    subs = request["invoice"]["invoiceLines"][0]["subInvoiceLines"]
    subs[1]["itemInformation"].update(standardIdentifier="4012345000016", standardIdentifierSchemeId="9999")
    answer = client.simulate_post("/v1/invoice/xrechnung", body=json.dumps(request),
                                  headers={"Content-Type": "application/json"})
    assert answer.status_code == 422, answer.text
    assert [e["field"] for e in answer.json["errors"]] == [
        "invoice.invoiceLines[0].subInvoiceLines[1].itemInformation.standardIdentifierSchemeId"]
