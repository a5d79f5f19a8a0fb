"""What a French platform expects of a status message beyond FNFE's BR-FR-CDV rules, which check neither dates nor
check digits: a SIREN or SIRET whose Luhn key is wrong, a status dated in the future, after the message that reports
it or before its invoice was issued or received, and two details with one sequence number are a 400 naming field and
MDT term before any generation. Several messages about one invoice that state its data differently are listed as
`conflicts` in the timeline instead of the merged invoice silently keeping one value.

Each refused value is shown to be one the official chain alone lets through (so the 400 is ours, not the rules'),
and the value next to it that is right generates a message the official chain finds valid."""
from __future__ import annotations

import copy
from datetime import datetime, timedelta

import falcon.testing
import jsonschema
import pytest
from lxml import etree

from cdar_cases import EXD, NS, RRD, example, examples, official_chain
from conftest import REPO
from pipeline.errors import ApiError
from pipeline.flows import status_generate, status_read
from pipeline.invoice.request_json import dump_request, load_request
from pipeline.service.app import create_app
from test_fr_cdar_read import _files

BASE = "/v1/invoice/fr-ctc/status"


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _fixture(status: str) -> dict:
    return load_request((REPO / "fixtures" / f"fr-status-{status}.json").read_bytes())


def _refused(request: dict) -> dict:
    """{field: ErrorDetail} of the 400 the request gets."""
    with pytest.raises(ApiError) as caught:
        status_generate.generate_status(dump_request(request))
    assert caught.value.http_status == 400 and caught.value.error_code == "INVALID_INPUT"
    return {e.field: e for e in caught.value.errors}


def _generated_valid(request: dict) -> bytes:
    xml = status_generate.generate_status(dump_request(request))[0]
    assert official_chain(xml)[0]
    return xml


def _edited(path, xpath: str, value: str) -> bytes:
    tree = etree.parse(str(path))
    for node in tree.xpath(xpath, namespaces=NS):
        node.text = value
    return etree.tostring(tree, xml_declaration=True, encoding="UTF-8")


# ---------------------------------------------------------------- SIREN and SIRET check digits

@pytest.mark.parametrize("where, change, right, field, term", [
    ("seller's SIREN", lambda r, v: r["invoice"].update(sellerSiren=v), "100000009", "invoice.sellerSiren",
     "MDT-129"),
    ("buyer's SIREN", lambda r, v: r["invoice"].update(buyerSiren=v), "200000008", "invoice.buyerSiren", None),
    ("issuer's SIREN", lambda r, v: r["message"]["issuer"].update(id=v), "200000008", "message.issuer.id", "MDT-38"),
    ("recipient's SIRET", lambda r, v: r["message"]["recipients"][0].update(id=v, idScheme="0009"),
     "10000000900017", "message.recipients[0].id", "MDT-57"),
])
def test_an_identifier_whose_check_digit_is_wrong_is_a_400_naming_it(where, change, right, field, term):
    wrong = right[:-1] + str((int(right[-1]) + 1) % 10)   # one digit mistyped: the length still right
    request = _fixture("207")
    change(request, wrong)
    entry = _refused(request)[field]
    assert entry.code == "INVALID_VALUE" and entry.rejectedValue == wrong
    assert entry.businessTerm == term and "check digit" in entry.message and entry.message.startswith(field)
    change(request, right)
    _generated_valid(request)


def test_the_official_rules_alone_accept_a_seller_siren_with_a_wrong_check_digit_parse_names_it():
    data = _edited(example("204"), f"{RRD}/ram:IssuerTradeParty/ram:GlobalID", "100000008")
    assert official_chain(data)[0]   # the rules check presence, not the number
    read = status_read.parse_status(data)
    assert not read["complete"]
    [problem] = read["problems"]
    assert (problem["field"], problem["code"], problem["rejectedValue"]) == \
        ("invoice.sellerSiren", "INVALID_VALUE", "100000008")


def test_la_poste_siret_and_the_ppf_s_own_ids_are_not_held_to_a_siren_key():
    request = _fixture("212")   # the PPF (0000) and a platform (0003) of scheme 0238: no SIREN
    request["message"]["issuer"].update(id="35600000000048", idScheme="0009")   # La Poste: INSEE's own key
    request["invoice"]["sellerSiren"] = "356000000"
    _generated_valid(request)


# ---------------------------------------------------------------- dates

def _later(days: float) -> str:
    return (datetime.now() + timedelta(days=days)).replace(microsecond=0).isoformat()


@pytest.mark.parametrize("what, change, field, term", [
    ("a status next year", lambda r: r["status"].update(dateTime=_later(365)), "status.dateTime", "MDT-78"),
    ("a message next week", lambda r: r["message"].update(issueDateTime=_later(7)), "message.issueDateTime", "MDT-8"),
    ("an invoice issued next month", lambda r: r["invoice"].update(issueDate=_later(30)[:10]), "invoice.issueDate",
     "MDT-100"),
    ("a status after the message reporting it", lambda r: r["status"].update(dateTime="2026-09-18T14:36:00"),
     "status.dateTime", "MDT-78"),
    ("an invoice received after its status", lambda r: r["invoice"].update(receiptDateTime="2026-09-18T14:31:00"),
     "invoice.receiptDateTime", "MDT-95"),
    ("an invoice issued two days after its status", lambda r: r["invoice"].update(issueDate="2026-09-20"),
     "invoice.issueDate", "MDT-100"),
])
def test_dates_out_of_order_or_in_the_future_are_a_400_the_rules_would_not_give(what, change, field, term):
    request = _fixture("207")   # invoice 09-12, received 09-15 09:15, disputed 09-18 14:30, reported 14:35
    change(request)
    errors = _refused(request)
    assert list(errors) == [field], what
    assert errors[field].businessTerm == term and errors[field].code == "INVALID_VALUE"
    # the official chain alone would have taken the message: generate it with the valid fixture's dates swapped in
    written = _generated_valid(_fixture("207"))
    tree = etree.fromstring(written)
    value = errors[field].rejectedValue.replace("-", "").replace("T", "").replace(":", "")
    xpath = {"status.dateTime": "//rsm:AcknowledgementDocument/ram:IssueDateTime/udt:DateTimeString",
             "message.issueDateTime": f"{EXD}/ram:IssueDateTime/udt:DateTimeString",
             "invoice.issueDate": f"{RRD}/ram:FormattedIssueDateTime/qdt:DateTimeString",
             "invoice.receiptDateTime": f"{RRD}/ram:ReceiptDateTime/udt:DateTimeString"}[field]
    [node] = tree.xpath(xpath, namespaces=NS)
    node.text = value
    assert official_chain(etree.tostring(tree))[0]


def test_a_day_of_difference_between_places_is_allowed():
    """The invoice's date is the seller's, the status's time the platform's: an invoice dated the 12th in Réunion
    may be filed at 22:30 on the 11th in Paris."""
    request = _fixture("200")
    request["invoice"].update(issueDate="2026-09-16")   # filed 09-15 09:15, reported 09:20
    _generated_valid(request)
    request["message"]["issueDateTime"] = request["status"]["dateTime"]   # reported the second it happened
    _generated_valid(request)


def test_every_official_example_keeps_its_dates_in_order():
    for path in examples():
        assert status_read.parse_status(path.read_bytes())["complete"], path.name


# ---------------------------------------------------------------- sequence numbers

def test_two_details_with_one_sequence_number_are_a_400():
    request = _fixture("207")
    request["status"]["details"][0]["sequence"] = 1
    request["status"]["details"].append({"reasonCode": "DOUBLON", "sequence": 1})
    errors = _refused(request)
    assert set(errors) == {"status.details[0].sequence", "status.details[1].sequence"}
    assert errors["status.details[1].sequence"].businessTerm == "MDT-124-2"
    request["status"]["details"][1]["sequence"] = 2
    xml = _generated_valid(request)
    assert [n.text for n in etree.fromstring(xml).iterfind(".//{*}SequenceNumeric")] == ["1", "2"]


# ---------------------------------------------------------------- the timeline

def _message(request: dict, **invoice) -> bytes:
    changed = copy.deepcopy(request)
    changed["invoice"].update(invoice)
    return _generated_valid(changed)


def test_messages_stating_an_invoice_differently_are_listed_as_conflicts(client):
    dispute = _message(_fixture("207"))
    other_date = _message(_fixture("204"), issueDate="2026-09-13", typeCode="381")
    r = _files(client, BASE + "/timeline", [("207.xml", dispute), ("204.xml", other_date)])
    assert r.status_code == 200
    [invoice] = r.json["invoices"]
    conflicts = {c["field"]: c["values"] for c in invoice["conflicts"]}
    assert conflicts == {
        "invoice.issueDate": [{"value": "2026-09-12", "files": ["207.xml"]},
                              {"value": "2026-09-13", "files": ["204.xml"]}],
        "invoice.typeCode": [{"value": "380", "files": ["207.xml"]}, {"value": "381", "files": ["204.xml"]}]}
    schema = client.simulate_get("/v1/openapi.json").json["paths"][BASE + "/timeline"]["post"]["responses"]["200"]
    jsonschema.validate(r.json, schema["content"]["application/json"]["schema"])
    page = _files(client, BASE + "/render", [("207.xml", dispute), ("204.xml", other_date)],
                  headers={"Accept": "text/html"})
    assert page.status_code == 200   # the canonical timeline carries them too


def test_one_invoice_s_messages_from_both_sides_have_no_conflict():
    """FNFE's UC1: the seller's messages give the receipt time of Déposée, the buyer's that of Reçue (MDT-95 is
    each side's): not a conflict about the invoice."""
    files = [(p.name, p.read_bytes()) for p in examples() if p.name.startswith("UC1_")]
    [invoice] = status_read.timeline(files)["invoices"]
    assert "conflicts" not in invoice and len(invoice["statuses"]) == 5
    assert len({s["status"]["code"] for s in invoice["statuses"]}) == 5


# ---------------------------------------------------------------- the amounts of a payment received

def test_an_amount_s_currency_is_an_iso_4217_code():
    request = _fixture("212")
    request["status"]["details"][0]["characteristics"][0]["currencyCode"] = "EURO"
    entry = _refused(request)["status.details[0].characteristics[0].currencyCode"]
    assert entry.businessTerm == "MDT-215" and entry.code == "INVALID_VALUE" and "ISO 4217" in entry.message
    data = example("212").read_bytes().replace(b'currencyID="EUR"', b'currencyID="EURO"')
    assert b"EURO" in data and official_chain(data)[0]   # the XSD takes any token, the rules do not look
    request["status"]["details"][0]["characteristics"][0]["currencyCode"] = "eur"
    assert b'currencyID="EUR"' in _generated_valid(request)


def test_an_amount_received_is_stated_at_a_french_vat_rate():
    request = _fixture("212")
    request["status"]["details"][0]["characteristics"][1]["percent"] = 19
    entry = _refused(request)["status.details[0].characteristics[1].percent"]
    assert entry.businessTerm == "MDT-224" and "19.6" in entry.message
    data = _edited(example("212"), f"{RRD}/ram:SpecifiedDocumentStatus/ram:SpecifiedDocumentCharacteristic"
                                   "/ram:ValuePercent", "19.00")
    assert official_chain(data)[0]
    assert not status_read.parse_status(data)["complete"]
    request["status"]["details"][0]["characteristics"][1]["percent"] = 19.6
    _generated_valid(request)


def test_a_business_process_is_read_as_the_roles_are_case_and_spaces_aside():
    """`regulated` was a 400 while a role `by` was taken as BY; the PPF's own short code stays as sent."""
    request = _fixture("207")
    request["message"]["businessProcess"] = " regulated "
    assert b"<ram:ID>REGULATED</ram:ID>" in _generated_valid(request)
    request["message"]["businessProcess"] = "B2X"
    assert _refused(request)["message.businessProcess"].businessTerm == "MDT-2"


# ---------------------------------------------------------------- the directory's addresses

@pytest.mark.parametrize("address", ["100000009 STATUTS", "100000009_STATUTS/é", "<100000009>", "\u202e100000009"])
def test_an_address_of_the_directory_s_scheme_has_the_invoices_form(address):
    """The rules check no address: a recipient's address of scheme 0225 that no directory can hold (BR-FR-23 of the
    invoices' rules allows letters, digits and - _ . + only) reached the message; it is a 400 naming it."""
    request = _fixture("207")
    request["message"]["recipients"][0]["electronicAddress"] = address
    entry = _refused(request)["message.recipients[0].electronicAddress"]
    assert entry.businessTerm == "MDT-73" and entry.code == "INVALID_VALUE" and "BR-FR-23" in entry.message
    data = _edited(example("207"), f"{EXD}/ram:RecipientTradeParty/ram:URIUniversalCommunication/ram:URIID", address)
    assert official_chain(data)[0]   # the official chain alone lets it through
    assert "message.recipients[0].electronicAddress" in {p["field"] for p in status_read.parse_status(data)["problems"]}
    request["message"]["recipients"][0].update(electronicAddress="100000009_STATUTS.fr+1-a")
    _generated_valid(request)
    request["message"]["recipients"][0].update(electronicAddress=address, electronicAddressScheme="0088")
    _generated_valid(request)   # another scheme's addresses are that scheme's business
