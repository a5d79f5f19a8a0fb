"""Generation for French sellers: POST /v1/invoice/fr-ctc (UBL, CII) and the ZUGFeRD endpoint with
`config.rules: "fr-ctc"`. The fixtures fixtures/fr-*.json generate documents that the official French chain,
run alone, accepts; removing a French field is a 400 naming it; parse -> generate keeps the terms."""
from __future__ import annotations

import json

import falcon.testing
import pytest

from pipeline.check import packs
from pipeline.cli.golden import FIXTURES
from pipeline.flows.parse import parse
from pipeline.flows.validate_fr_ctc import validate_fr_ctc
from pipeline.service.app import create_app
from roundtrip.reader import flatten, read_terms
from test_fr_ctc_validate import _official_chain, _official_findings

XML_FIXTURES = ["fr-b2b-goods", "fr-services-billing-frame", "fr-credit-note", "fr-self-billed"]
FACTURX = FIXTURES / "fr-facturx-en16931.json"


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _request(name: str, syntax: str | None = None) -> dict:
    request = json.loads((FIXTURES / f"{name}.json").read_text("utf-8"))
    if syntax:
        request["config"]["syntax"] = syntax
    return request


def _generate(client, request: dict, path="/v1/invoice/fr-ctc"):
    return client.simulate_post(path, body=json.dumps(request, ensure_ascii=False).encode(),
                                headers={"Content-Type": "application/json"})


def _french_roots():
    return packs.latest_active("fr-ctc").root, packs.latest_active("en16931").root


def test_a_line_without_its_vat_information_is_named_not_a_server_error(client):
    """The French request checks read every line's VAT category and rate and stopped with a 500 on a line that sent
    none; the line now goes to the rules, whose BR-CO-04 names it (a 422, as on the other endpoints)."""
    request = _request("fr-b2b-goods")
    del request["invoice"]["invoiceLines"][0]["lineVatInformation"]
    r = _generate(client, request)
    assert r.status_code == 422, r.text
    [entry] = [e for e in r.json["errors"] if e["code"] == "BR-CO-04"]
    assert entry["field"].startswith("invoice.invoiceLines[0]"), entry


@pytest.mark.parametrize("name", XML_FIXTURES)
@pytest.mark.parametrize("syntax", ["CII", "UBL"])
def test_the_fixtures_generate_documents_the_official_french_chain_accepts(client, name, syntax):
    r = _generate(client, _request(name, syntax))
    assert r.status_code == 200, r.text
    valid, ids, xsd_valid = _official_chain(r.content, _french_roots())
    assert valid and xsd_valid, ids
    assert not [i for i in ids if i.startswith("BR-FR")], ids


def test_the_factur_x_fixture_generates_a_pdf_that_passes_the_french_rules(client):
    r = _generate(client, json.loads(FACTURX.read_text("utf-8")), "/v1/invoice/zugferd")
    assert r.status_code == 200, r.text
    report = validate_fr_ctc(r.content)
    assert report.valid, [(i.code, i.message) for i in report.issues]
    embedded = parse(r.content).source.xml
    br_fr = packs.latest_active("fr-ctc").rules_for("CII").stylesheets[0]
    assert [f for f in _official_findings(embedded, br_fr) if f[1]] == []  # BR-FR alone, the original stylesheet
    # the same request without the French rules is a plain Factur-X; with a French field missing it is a 400 there too
    broken = json.loads(FACTURX.read_text("utf-8"))
    del broken["invoice"]["processControl"]
    refused = _generate(client, broken, "/v1/invoice/zugferd")
    assert refused.status_code == 400 and "invoice.processControl.businessProcessType" in _fields(refused)
    broken["config"].pop("rules")
    assert _generate(client, broken, "/v1/invoice/zugferd").status_code == 200


def test_a_german_style_request_is_refused_before_generation_with_every_french_field(client):
    request = json.loads((FIXTURES / "vat-g-export.json").read_text("utf-8"))
    request["config"].pop("spec", None)
    r = _generate(client, request)
    assert r.status_code == 400
    fields = _fields(r)
    assert {"invoice.processControl.businessProcessType", "invoice.seller.legalRegistrationIdentifier",
            "invoice.additionalInvoiceNotes"} <= fields


def _fields(response) -> set[str]:
    return {e["field"] for e in response.json["errors"]}


def _drop_note(code):
    def change(inv):
        inv["additionalInvoiceNotes"] = [n for n in inv["additionalInvoiceNotes"] if n["invoiceNoteSubjectCode"] != code]
    return change


def _set(path, value):
    def change(inv):
        *parents, last = path.split(".")
        node = inv
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        if value is None:
            del node[last]
        else:
            node[last] = value
    return change


# (what is removed or changed, the field the 400 names, its business term, the rule in the message)
REMOVED = [
    ("billing frame", _set("processControl", None), "invoice.processControl.businessProcessType", "BT-23", "BR-FR-08"),
    ("PMD note", _drop_note("PMD"), "invoice.additionalInvoiceNotes", "BG-1", "PMD"),
    ("AAB note", _drop_note("AAB"), "invoice.additionalInvoiceNotes", "BG-1", "AAB"),
    ("PMT note", _set("invoiceNoteSubjectCode", None), "invoice.additionalInvoiceNotes", "BG-1", "PMT"),
    ("seller SIREN", _set("seller.legalRegistrationIdentifier", None), "invoice.seller.legalRegistrationIdentifier",
     "BT-30", "BR-FR-10"),
    ("SIREN scheme", _set("seller.legalRegistrationIdentifierSchemeId", None),
     "invoice.seller.legalRegistrationIdentifierSchemeId", "BT-30-1", "0002"),
    ("SIRET scheme", _set("seller.identifierSchemeId", None), "invoice.seller.identifierSchemeId", "BT-29-1", "0009"),
    ("seller address", _set("seller.electronicAddress", None), "invoice.seller.electronicAddress", "BT-34",
     "BR-FR-13"),
    ("buyer address", _set("buyer.electronicAddress", None), "invoice.buyer.electronicAddress", "BT-49", "BR-FR-12"),
    ("address scheme", _set("buyer.electronicAddressSchemeId", None), "invoice.buyer.electronicAddressSchemeId",
     "BT-49-1", "0225"),
    ("buyer SIREN (B2B)", _set("buyer.legalRegistrationIdentifier", None), "invoice.buyer.legalRegistrationIdentifier",
     "BT-47", "BR-FR-11"),
    ("BAR value", _set("additionalInvoiceNotes.2.invoiceNote", "B2X"), "invoice.additionalInvoiceNotes[2].invoiceNote",
     "BT-22", "BR-FR-20"),
    ("VAT rate", _set("invoiceLines.0.lineVatInformation.vatRate", 19),
     "invoice.invoiceLines[0].lineVatInformation.vatRate", "BT-152", "BR-FR-16"),
    ("SIRET of another SIREN", _set("seller.identifier", "55210055400013"), "invoice.seller.identifier", "BT-29",
     "BR-FR-09"),
    ("multi-vendor frame", _set("processControl.businessProcessType", "B8"),
     "invoice.processControl.businessProcessType", "BT-23", "EXTENDED-CTC-FR"),
]


@pytest.mark.parametrize("what, change, field, term, rule", REMOVED, ids=[r[0] for r in REMOVED])
def test_removing_a_french_field_is_a_400_naming_it_with_its_business_term(client, what, change, field, term, rule):
    request = _request("fr-b2b-goods")
    change(request["invoice"])
    r = _generate(client, request)
    assert r.status_code == 400, r.text
    [entry] = [e for e in r.json["errors"] if e["field"] == field and rule in e["message"]]
    assert entry["businessTerm"] == term


# (the number as fr-b2b-goods has it, the same with one digit mistyped, the fields the 400 then names): the seller's
# SIREN (and so the SIRET that starts with it), the seller's SIRET alone, the buyer's SIREN (B2B: its address too)
MISTYPED = [("732829320", "732829321", {"seller.legalRegistrationIdentifier", "seller.identifier"}),
            ("73282932000074", "73282932000075", {"seller.identifier"}),
            ("552100554", "552100555", {"buyer.legalRegistrationIdentifier"})]


@pytest.mark.parametrize("right, wrong, named", MISTYPED, ids=["seller SIREN", "seller SIRET", "buyer SIREN"])
def test_a_siren_or_siret_whose_check_digit_is_wrong_is_a_400_the_rules_would_not_give(client, right, wrong, named):
    """BR-FR-09/10/11 check a SIREN's nine digits and a SIRET's fourteen, not INSEE's Luhn key (python-stdnum): an
    invoice with a mistyped digit passed them all and named a company that does not exist."""
    request = json.loads(json.dumps(_request("fr-b2b-goods")).replace(right, wrong))
    r = _generate(client, request)
    assert r.status_code == 400, r.text
    assert {e["field"] for e in r.json["errors"]} == {f"invoice.{f}" for f in named}, r.json["errors"]
    for entry in r.json["errors"]:
        assert entry["code"] == "INVALID_VALUE" and "check digit" in entry["message"] and entry["businessTerm"]
    # the official chain alone takes the document with that number
    document = _generate(client, _request("fr-b2b-goods")).content.replace(right.encode(), wrong.encode())
    assert _official_chain(document, _french_roots())[0]


def test_attachment_codes_are_checked(client):
    request = _request("fr-services-billing-frame")
    request["invoice"]["additionalSupportingDocuments"][0]["description"] = "Bon de livraison"
    r = _generate(client, request)
    assert r.status_code == 400
    [entry] = r.json["errors"]
    assert entry["field"] == "invoice.additionalSupportingDocuments[0].description" and entry["businessTerm"] == "BT-123"


def test_a_document_the_french_rules_refuse_is_a_422_naming_the_rule(client):
    """What the request checks leave to the rules: a credit note without the invoice it credits (BR-FR-CO-05)."""
    request = _request("fr-credit-note")
    del request["invoice"]["precedingInvoiceReference"]
    r = _generate(client, request)
    assert r.status_code == 422, r.text
    assert r.json["errorCode"] == "VALIDATION_FAILED"
    assert any(e["code"].startswith("BR-FR-CO-05") for e in r.json["errors"]), r.json["errors"]


@pytest.mark.parametrize("name", XML_FIXTURES)
@pytest.mark.parametrize("syntax", ["CII", "UBL"])
def test_parse_then_generate_keeps_the_business_terms_and_french_fields(client, name, syntax):
    first = _generate(client, _request(name, syntax))
    assert first.status_code == 200
    from test_parse import upload

    parsed = upload(client, first.content, path="/v1/invoice/parse").json
    assert parsed["complete"] and parsed["config"]["spec"] == "en16931"  # BT-24: the CEN id French invoices carry
    again = _generate(client, {"invoice": parsed["invoice"], "config": {**parsed["config"], "spec": "fr-ctc"}})
    assert again.status_code == 200, again.text
    before, after = flatten(read_terms(first.content).terms), flatten(read_terms(again.content).terms)
    assert before == after
    sent = flatten(_request(name, syntax)["invoice"])  # the reader's paths: below `invoice`
    french = [k for k in sent if k.startswith(("processControl", "seller.legalRegistration", "seller.electronicAddress",
                                               "buyer.electronicAddress", "seller.identifier", "invoiceNote",
                                               "additionalInvoiceNotes", "buyer.legalRegistration"))]
    assert len(french) >= 12 and {k: after.get(k) for k in french} == {k: sent[k] for k in french}


def test_the_readable_page_shows_the_french_fields(client):
    xml = _generate(client, _request("fr-b2b-goods")).content
    from test_parse import upload

    r = upload(client, xml, path="/v1/invoice/render", headers={"Accept": "text/html"})
    assert r.status_code == 200, r.text
    for shown in ("732829320", "B1", "PMT", "Pénalités de retard", "0225"):
        assert shown in r.text, shown


def test_cli_generates_and_validates_on_the_french_rules(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "avoir.xml"
    run = subprocess.run([sys.executable, "-m", "pipeline", "generate", "--spec", "fr-ctc", "--syntax", "UBL",
                          str(FIXTURES / "fr-credit-note.json"), "-o", str(out)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    check = subprocess.run([sys.executable, "-m", "pipeline", "validate", "--spec", "fr-ctc", str(out)],
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 0 and check.stdout.startswith("VALID"), check.stdout + check.stderr
