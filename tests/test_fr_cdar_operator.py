"""A French platform operator's requests, each judged by FNFE's chain run on its own (`cdar_cases.official_chain`).

- MDT-88, the document status code: the generator filled it in for 200 and 202 but left out 201, 203 and 213, whose
  codes (51, 48, 8) BR-FR-CDV-CL-05 pairs with them as it pairs 10 and 43 with 200 and 202, and the processing
  phase's other statuses (214, 220, 224-228), for which the 1.4.0 rule's text gives 5 ("pour les autres statuts").
  Every status of a phase now carries its code.
- An amount of a characteristic (MDT-215) with more than 2 decimals (10500.005 received at 20 %) was written as sent;
  it is money the invoice states to the cent (BR-FR-DEC-01): a 400 naming the field, not a silent rounding. A
  refund's negative amount and trailing zeros stay accepted.
- Status 501 (Irrecevable: a file empty, unreadable or infected) goes without the invoice's date and seller, as
  BR-FR-CDV-11 and -13 allow, but the model still required its type code (MDT-91), which no rule asks for and such a
  file may not tell either. Every other status still needs it (400 naming MDT-91).
- A field two requirements miss (the issuer's id sent with its scheme but without value, which the processing phase
  requires; a recipient's address scheme without the address BR-FR-CDV-08 requires) was named twice in the 400.
"""
from __future__ import annotations

import copy

import pytest
from lxml import etree

from cdar_cases import NS, RRD, official_chain
from conftest import REPO
from pipeline.errors import ApiError
from pipeline.flows import status_generate, status_read
from pipeline.invoice import cdar
from pipeline.invoice.request_json import dump_request, load_request
from test_fr_cdar_every_status import request_for

FIXTURE_212 = load_request((REPO / "fixtures" / "fr-status-212.json").read_bytes())
FIXTURE_207 = load_request((REPO / "fixtures" / "fr-status-207.json").read_bytes())
# the code each status takes, as the rule pairs them (written out here, not read from the table under test)
EXPECTED = {"200": "10", "201": "51", "202": "43", "203": "48", "213": "8", "221": None, "501": None,
            "204": "45", "205": "1", "206": "49", "207": "46", "208": "39", "209": "37", "210": "50", "211": "47",
            "212": "47", **{code: "5" for code in ("214", "220", "224", "225", "226", "227", "228")}}


def _document_status(xml: bytes) -> str | None:
    found = etree.fromstring(xml).xpath(f"{RRD}/ram:StatusCode/text()", namespaces=NS)
    return found[0] if found else None


def _refusal(request: dict) -> ApiError:
    with pytest.raises(ApiError) as caught:
        status_generate.generate_status(dump_request(request))
    assert caught.value.http_status == 400
    return caught.value


def test_every_status_of_a_phase_is_expected():
    assert set(EXPECTED) == {*cdar.TRANSMISSION_STATUSES, *cdar.PROCESSING_STATUSES}


@pytest.mark.parametrize("code", sorted(EXPECTED))
def test_each_status_gets_the_document_status_code_the_rule_pairs_it_with(code):
    xml, report = status_generate.generate_status(dump_request(request_for(code, full=False)))
    assert _document_status(xml) == EXPECTED[code]
    valid, rules, xsd_valid, _ = official_chain(xml)
    assert valid and xsd_valid and not rules, rules
    # read back and generated again: the same message
    found = status_read.parse_status(xml)
    assert found["status"].get("documentStatusCode") == EXPECTED[code]
    again = {key: found[key] for key in ("message", "status", "invoice")}
    assert status_generate.generate_status(dump_request(again))[0] == xml


@pytest.mark.parametrize("amount", ["10500.005", "0.001", "-12.345"])
def test_an_amount_beyond_the_cent_is_a_400_naming_it(amount):
    request = copy.deepcopy(FIXTURE_212)
    request["status"]["details"][0]["characteristics"][0]["amount"] = load_request(amount.encode())
    error = _refusal(request)
    [entry] = error.errors
    assert (entry.code, entry.field, entry.businessTerm) == \
        ("INVALID_VALUE", "status.details[0].characteristics[0].amount", "MDT-215")
    assert "BR-FR-DEC-01" in entry.message and amount in str(entry.rejectedValue)


@pytest.mark.parametrize("amount, written", [("10500.50", "10500.50"), ("10500.500", "10500.500"),
                                             ("-250.00", "-250.00"), ("12000", "12000")])
def test_amounts_to_the_cent_and_refunds_are_generated_as_written(amount, written):
    request = copy.deepcopy(FIXTURE_212)
    request["status"]["details"][0]["characteristics"][0]["amount"] = load_request(amount.encode())
    xml, _ = status_generate.generate_status(dump_request(request))
    assert official_chain(xml)[0]
    amounts = etree.fromstring(xml).xpath(f"{RRD}/ram:SpecifiedDocumentStatus/ram:SpecifiedDocumentCharacteristic"
                                          "/ram:ValueAmount/text()", namespaces=NS)
    assert amounts[0] == written


@pytest.mark.parametrize("edit, field, term, rule", [
    (lambda r: r["message"]["issuer"].pop("id"), "message.issuer.id", "MDT-38", "BR-FR-CDV-07"),
    (lambda r: r["message"]["recipients"][0].pop("electronicAddress"), "message.recipients[0].electronicAddress",
     "MDT-73", "BR-FR-CDV-08"),
])
def test_a_field_two_requirements_miss_is_named_once_with_the_rule(edit, field, term, rule):
    request = copy.deepcopy(FIXTURE_207)
    edit(request)
    error = _refusal(request)
    assert [(e.code, e.field, e.businessTerm) for e in error.errors] == [("REQUIRED", field, term)]
    assert rule in error.errors[0].message


def test_a_not_receivable_file_s_status_goes_without_the_invoice_s_type_and_the_others_do_not():
    request = request_for(cdar.NOT_RECEIVABLE, full=False)
    request["invoice"].pop("typeCode")
    assert set(request["invoice"]) == {"number"}
    xml, _ = status_generate.generate_status(dump_request(request))
    valid, rules, xsd_valid, _ = official_chain(xml)
    assert valid and xsd_valid and not rules, rules
    assert not etree.fromstring(xml).xpath(f"{RRD}/ram:TypeCode", namespaces=NS)
    found = status_read.parse_status(xml)
    assert found["complete"] and found["unmapped"] == [] and "typeCode" not in found["invoice"]
    for code in ("200", "207", "212"):
        request = request_for(code, full=False)
        request["invoice"].pop("typeCode")
        error = _refusal(request)
        assert [(e.code, e.field, e.businessTerm) for e in error.errors] == [("REQUIRED", "invoice.typeCode", "MDT-91")]
