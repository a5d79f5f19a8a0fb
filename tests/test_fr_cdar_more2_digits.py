"""A status code, a SIREN or a date of a status request is written in the digits 0-9.

Python's `\\d` matches the digits of every script, so "２０７" (full width) or "٢٠٧" (Arabic-Indic) passed as a status
code and "２０００００００８" as the buyer's SIREN: the message was generated with them, and FNFE's chain alone finds it
valid (a code outside the list is only its warning BR-FR-CDV-CL-06, and XPath's `\\d` takes any script's digits
too), for a platform that knows no status "２０７". They are a 400 naming field and MDT term now (the request's JSON
Schema pattern `\\d` meant 0-9 already), and reading such a message says the code is not one to send again. A
date-time in such digits, which the chain takes too, is read as written (format 204 was made ISO in the other
script's digits) and the timeline places it by its value (it sorted after every date in 0-9).
"""
from __future__ import annotations


import falcon.testing
import pytest
from lxml import etree

from cdar_cases import NS, RRD, examples, official_chain
from conftest import REPO
from pipeline.flows import status_generate, status_read
from pipeline.invoice.request_json import dump_request, load_request
from pipeline.service.app import create_app

BASE = "/v1/invoice/fr-ctc/status"
ACK = "/rsm:CrossDomainAcknowledgementAndResponse/rsm:AcknowledgementDocument"
FIXTURE = (REPO / "fixtures" / "fr-status-207.json").read_bytes()
SCRIPTS = {"full width": 0xFF10, "Arabic-Indic": 0x0660, "Devanagari": 0x0966}


def _in(script: str, text: str) -> str:
    return "".join(chr(SCRIPTS[script] + int(c)) if c.isascii() and c.isdigit() else c for c in text)


# (field, MDT term, where it is in the fixture)
FIELDS = [("status.code", "MDT-105", ("status", "code")),
          ("status.details[0].statusCode", "MDT-115", ("status", "details", 0, "statusCode")),
          ("invoice.sellerSiren", "MDT-129", ("invoice", "sellerSiren")),
          ("invoice.buyerSiren", None, ("invoice", "buyerSiren")),
          ("invoice.issueDate", "MDT-100", ("invoice", "issueDate")),
          ("status.dateTime", "MDT-78", ("status", "dateTime"))]


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("field, term, where", FIELDS, ids=[f for f, _, _ in FIELDS])
def test_digits_of_another_script_are_a_400_naming_the_field(client, field, term, where, script):
    request = load_request(FIXTURE)
    request["status"]["details"][0]["statusCode"] = "207"   # the detail's own status, as the message's
    node = request
    for key in where[:-1]:
        node = node[key]
    sent = node[where[-1]]
    node[where[-1]] = _in(script, sent)
    assert node[where[-1]] != sent
    r = client.simulate_post(BASE, body=dump_request(request),
                             headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    [error] = r.json["errors"]
    assert (error["field"], error["code"], error["businessTerm"]) == (field, "INVALID_FORMAT", term)
    assert "0-9" in error["message"] or "YYYY" in error["message"]
    node[where[-1]] = sent   # the same request in 0-9 is generated
    ok = client.simulate_post(BASE, body=dump_request(request),
                              headers={"Content-Type": "application/json"})
    assert ok.status_code == 200, ok.text


def _message_with(xpath: str, value: str) -> bytes:
    """The fixture's message, valid on the chain, with one element's text set to `value`."""
    xml = status_generate.generate_status(FIXTURE)[0]
    tree = etree.fromstring(xml)
    [node] = tree.xpath(xpath, namespaces=NS)
    node.text = value
    return etree.tostring(tree, encoding="UTF-8", xml_declaration=True)


@pytest.mark.parametrize("xpath, value, field, warned", [
    (f"{RRD}/ram:ProcessConditionCode", _in("full width", "207"), "status.code", {"BR-FR-CDV-CL-06_MDT-105"}),
    (f"{RRD}/ram:RecipientTradeParty/ram:GlobalID", _in("Arabic-Indic", "200000008"), "invoice.buyerSiren", set())])
def test_the_official_chain_alone_lets_them_through_reading_flags_them(xpath, value, field, warned):
    """So the 400 is ours; a message carrying such a value reads as not complete, the field named."""
    data = _message_with(xpath, value)
    valid, rules, xsd_valid, _ = official_chain(data)
    assert valid and xsd_valid and set(rules) == warned
    found = status_read.parse_status(data)
    assert not found["complete"]
    assert [(p["field"], p["code"], p["rejectedValue"]) for p in found["problems"]] == [
        (field, "INVALID_FORMAT", value)]
    # the same message with 0-9 reads complete: the digits alone made the difference
    plain = status_read.parse_status(_message_with(xpath, value.translate(
        {SCRIPTS[s] + n: str(n) for s in SCRIPTS for n in range(10)})))
    assert plain["complete"] and not plain.get("problems")


def test_the_timeline_places_a_status_dated_in_other_digits_by_its_value():
    """FNFE's UC1 with its 202 (Reçue, 1 July 16:10) dated in full-width digits, which the official chain accepts:
    the timeline put it last, after the 212 of 2 August (its digits sorted after 0-9); now in its place."""
    files = []
    for path in examples():
        if "UC1" not in path.name:
            continue
        tree = etree.parse(str(path))
        if "-CDV-202_" in path.name:
            [when] = tree.xpath(f"{ACK}/ram:IssueDateTime/udt:DateTimeString", namespaces=NS)
            when.text = _in("full width", when.text)
        files.append((path.name, etree.tostring(tree, encoding="UTF-8", xml_declaration=True)))
    [received] = [data for name, data in files if "-CDV-202_" in name]
    assert official_chain(received)[0]
    # read as written (format 204 is made ISO from 0-9 only), and flagged as no date-time to send again
    found = status_read.parse_status(received)
    assert found["status"]["dateTime"] == _in("full width", "20250701161000")
    assert [p["field"] for p in found["problems"]] == ["status.dateTime"]
    [invoice] = status_read.timeline(files)["invoices"]
    assert [s["status"]["code"] for s in invoice["statuses"]] == ["200", "202", "204", "211", "212"]
