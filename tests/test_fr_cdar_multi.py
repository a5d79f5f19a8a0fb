"""A lifecycle status message about several invoices (CDV "MULTI", MDT-74 true: one ReferenceReferencedDocument per
invoice, each with its own status) is valid on FNFE's chain; the timeline and the page give each invoice its status
(the timeline showed the first invoice alone, the others vanished), parse keeps reading the first and lists the
others as unmapped."""
from __future__ import annotations

import copy

import falcon.testing
import pytest
from lxml import etree

from cdar_cases import NS, example, examples, official_chain
from pipeline import budget, saxon
from pipeline.flows import status_read
from pipeline.invoice.request_json import load_request
from pipeline.service.app import create_app
from test_fr_cdar_read import BASE, UC1, _files
from test_render_page import page_text

RRD = "/rsm:CrossDomainAcknowledgementAndResponse/rsm:AcknowledgementDocument/ram:ReferenceReferencedDocument"


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _text(node, path: str, value: str) -> None:
    [found] = node.xpath(path, namespaces=NS)
    found.text = value


def multi(message_id: str = "F202500003_MULTI_20250701151000") -> bytes:
    """FNFE's Déposée (200) of F202500003 made a message about three invoices: F202500004, issued the day before, is
    Rejetée (213, a reason of that status), F202500005 Déposée too."""
    tree = etree.parse(str(example("200")))
    _text(tree, "//rsm:ExchangedDocument/ram:ID", message_id)
    _text(tree, "//ram:MultipleReferencesIndicator/udt:Indicator", "true")
    [first] = tree.xpath(RRD, namespaces=NS)
    rejected, third = copy.deepcopy(first), copy.deepcopy(first)
    _text(rejected, "ram:IssuerAssignedID", "F202500004")
    _text(rejected, "ram:FormattedIssueDateTime/qdt:DateTimeString", "20250630")
    _text(rejected, "ram:ProcessConditionCode", "213")
    _text(rejected, "ram:ProcessCondition", "Rejetée")
    reason = etree.SubElement(rejected, f"{{{NS['ram']}}}SpecifiedDocumentStatus")
    etree.SubElement(reason, f"{{{NS['ram']}}}ReasonCode").text = "REJ_SEMAN"
    etree.SubElement(reason, f"{{{NS['ram']}}}SequenceNumeric").text = "1"
    _text(third, "ram:IssuerAssignedID", "F202500005")
    first.addnext(rejected)
    rejected.addnext(third)
    return etree.tostring(tree, encoding="UTF-8", xml_declaration=True)


def test_a_message_about_several_invoices_is_valid_on_the_official_chain():
    valid, rules, xsd_valid, _ = official_chain(multi())
    assert valid and xsd_valid and not rules


def test_the_timeline_gives_each_invoice_of_the_message_its_status(client):
    body = load_request(_files(client, BASE + "/timeline", [("multi.xml", multi())], {"validate": True}).content)
    assert [(i["invoice"]["number"], i["invoice"]["issueDate"],
             [(s["status"]["code"], s["reference"], s["references"], s["file"]) for s in i["statuses"]])
            for i in body["invoices"]] == [
        ("F202500003", "2025-07-01", [("200", 1, 3, "multi.xml")]),
        ("F202500004", "2025-06-30", [("213", 2, 3, "multi.xml")]),
        ("F202500005", "2025-07-01", [("200", 3, 3, "multi.xml")])]
    rejected = body["invoices"][1]["statuses"][0]
    assert rejected["status"]["details"] == [{"reasonCode": "REJ_SEMAN", "sequence": 1}]
    # the verdict is the message's, as the official chain gives it
    assert {s["validation"]["verdict"] for i in body["invoices"] for s in i["statuses"]} == {"valid"}
    assert body["unread"] == []


def test_beside_one_invoice_s_own_messages_the_message_takes_its_place_and_a_copy_stays_one_status(client):
    files = [(p.name, p.read_bytes()) for p in UC1] + [("multi.xml", multi()), ("again.xml", multi())]
    body = load_request(_files(client, BASE + "/timeline", files).content)
    found = {i["invoice"]["number"]: [(s["file"], s["status"]["code"], s.get("copies")) for s in i["statuses"]]
             for i in body["invoices"]}
    assert found["F202500003"] == [(UC1[0].name, "200", None), ("multi.xml", "200", ["again.xml"]),
                                   *[(p.name, p.name.split("-CDV-")[1][:3], None) for p in UC1[1:]]]
    assert found["F202500004"] == [("multi.xml", "213", ["again.xml"])]
    assert found["F202500005"] == [("multi.xml", "200", ["again.xml"])]


def test_a_message_about_one_invoice_has_no_reference_numbers(client):
    body = load_request(_files(client, BASE + "/timeline", [(p.name, p.read_bytes()) for p in examples()]).content)
    assert not any({"reference", "references"} & set(s) for i in body["invoices"] for s in i["statuses"])


@pytest.mark.parametrize("lang, label", [("en", "Invoice of the message MDT-74{n} of 3"),
                                         ("fr", "Facture du message MDT-74{n} sur 3")])
def test_the_page_shows_each_invoice_with_its_place_in_the_message(lang, label):
    text = page_text(status_read.render_status([("multi.xml", multi())], lang, html=True))   # (term, then value)
    for n, number in enumerate(("F202500003", "F202500004", "F202500005"), 1):
        assert label.format(n=n) in text and number in text
    assert "213" in text and "REJ_SEMAN" in text


def test_parse_reads_the_first_invoice_and_lists_the_others_as_unmapped():
    found = status_read.parse_status(multi())
    assert found["invoice"]["number"] == "F202500003" and found["status"]["code"] == "200"
    unmapped = {u["value"] for u in found["unmapped"]}
    assert {"true", "F202500004", "F202500005", "213", "REJ_SEMAN"} <= unmapped


def test_a_message_about_hundreds_of_invoices_is_parsed_once(monkeypatch):
    """Each invoice was read from the message's bytes again: 500 invoices (750 KB) took 67 s, past the request's
    budget; the message is now parsed once for all of them (0.6 s)."""
    tree = etree.fromstring(multi())
    first = tree.xpath(RRD, namespaces=NS)[0]
    for n in range(4, 501):
        twin = copy.deepcopy(first)
        _text(twin, "ram:IssuerAssignedID", f"G{n:09d}")
        tree.xpath(RRD, namespaces=NS)[-1].addnext(twin)
    data = etree.tostring(tree, encoding="UTF-8", xml_declaration=True)
    parses = []
    real = saxon.parse
    monkeypatch.setattr(saxon, "parse", lambda *a, **k: parses.append(1) or real(*a, **k))
    found = status_read.timeline([("many.xml", data)])
    assert len(found["invoices"]) == 500 and {s["references"] for i in found["invoices"] for s in i["statuses"]} == \
        {500}
    assert len(parses) <= 2   # the first invoice as parse reads it, then the others from one tree


def test_a_pdf_holds_at_most_so_many_statuses_a_message_about_several_counting_each(client, monkeypatch):
    monkeypatch.setattr(status_read, "MAX_PDF_MESSAGES", 2)
    r = _files(client, BASE + "/render", [("multi.xml", multi())])
    assert r.status_code == 400 and r.json["errorCode"] == "TOO_MANY_FILES" and "3" in r.json["message"]
    r = _files(client, BASE + "/render", [("multi.xml", multi())], headers={"Accept": "text/html"})
    assert r.status_code == 200


def test_a_timeline_whose_budget_runs_out_is_a_503_not_files_unread():
    """The request's time budget running out while messages are read is the request's TIME_BUDGET (pointing to the
    jobs API), not a reason to list the files as unread: they are readable, the time was short."""
    files = [(p.name, p.read_bytes()) for p in UC1]
    token = budget.start(0)
    try:
        with pytest.raises(budget.Exhausted):
            status_read.timeline(files)
    finally:
        budget.end(token)
    assert status_read.timeline(files)["unread"] == [] and len(UC1) > 1
