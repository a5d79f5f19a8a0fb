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
from pipeline.read import cdar as reading
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


def test_one_invoice_stated_differently_by_one_message_names_the_status_stating_each_value():
    """The message reports F202500003 three times: Déposée, Rejetée dated the day before, Déposée again (a copy).
    The box of the data stated differently named each value's file with the file's first status: the Rejetée's
    date was shown as the Déposée's; and the file was listed once per status stating it."""
    tree = etree.fromstring(multi())
    for ref in tree.xpath(RRD, namespaces=NS)[1:]:
        _text(ref, "ram:IssuerAssignedID", "F202500003")
    data = etree.tostring(tree, encoding="UTF-8", xml_declaration=True)
    valid, rules, xsd_valid, _ = official_chain(data)
    assert valid and xsd_valid and not rules
    [invoice] = status_read.timeline([("m.xml", data)])["invoices"]
    assert invoice["conflicts"] == [{"field": "invoice.issueDate", "values": [
        {"value": "2025-07-01", "files": ["m.xml"]}, {"value": "2025-06-30", "files": ["m.xml"]}]}]
    rows = etree.HTML(status_read.render_status([("m.xml", data)], html=True)).xpath(
        "//table[contains(@class, 'conflicts')]//tr[td[@class = 'stated']]")
    assert [[" ".join(td.xpath("string()").split()) for td in row.xpath("td[@class]")] for row in rows] == [
        ["2025-07-01", "m.xml (200 Submitted, 2025-07-01 15:10)"],
        ["2025-06-30", "m.xml (213 Rejected, 2025-07-01 15:10)"]]
    assert "m.xml, m.xml" not in page_text(status_read.render_status([("m.xml", data)], html=True))


def test_parse_reads_the_first_invoice_and_lists_the_others_as_unmapped():
    found = status_read.parse_status(multi())
    assert found["invoice"]["number"] == "F202500003" and found["status"]["code"] == "200"
    unmapped = {u["value"] for u in found["unmapped"]}
    assert {"true", "F202500004", "F202500005", "213", "REJ_SEMAN"} <= unmapped


def test_a_message_about_hundreds_of_invoices_is_parsed_once(monkeypatch):
    """Each invoice was read from the message's bytes again: 500 invoices (750 KB) took 67 s, past the request's
    budget; the message is now parsed once, and read in one run, for all of them."""
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
    assert len(parses) == 1   # one tree for every invoice


def test_every_invoice_read_in_one_run_is_read_as_on_its_own():
    data = multi()
    alone = [reading.status_json(reading.to_canonical(data, n)) for n in (1, 2, 3)]
    assert reading.status_jsons(data, range(1, 4)) == alone
    assert reading.status_jsons(data, range(2, 4)) == alone[1:]
    assert [s["invoice"]["number"] for s in alone] == ["F202500003", "F202500004", "F202500005"]


def _statuses_of_one_invoice(n: int) -> bytes:
    """FNFE's Déposée (200) of F202500003 made a message of n statuses of that invoice (MDT-74 true): the first
    received at 15:10 as FNFE's, the others each a minute apart before it (MDT-95): n steps, no two the same."""
    tree = etree.fromstring(multi())
    for extra in tree.xpath(RRD, namespaces=NS)[1:]:
        extra.getparent().remove(extra)
    first = tree.xpath(RRD, namespaces=NS)[0]
    for before in range(1, n):
        twin = copy.deepcopy(first)
        at = 15 * 60 + 10 - before
        _text(twin, "ram:ReceiptDateTime/udt:DateTimeString", f"20250701{at // 60:02d}{at % 60:02d}00")
        first.addnext(twin)
    return etree.tostring(tree, encoding="UTF-8", xml_declaration=True)


def test_hundreds_of_statuses_of_one_invoice_are_each_kept_and_the_file_sent_again_is_their_copy():
    """Each status was compared with every one before it to find copies of a message read twice: 3,001 statuses of
    one invoice took 27 s to draw (bench/bench_fr_cdar.py --large); copies are now looked up by what they say."""
    data = _statuses_of_one_invoice(300)
    valid, rules, xsd_valid, _ = official_chain(data)
    assert valid and xsd_valid and not rules
    [invoice] = status_read.timeline([("many.xml", data), ("again.xml", data)])["invoices"]
    received = [s["invoice"]["receiptDateTime"] for s in invoice["statuses"]]
    assert len(received) == len(set(received)) == 300
    assert {tuple(s["copies"]) for s in invoice["statuses"]} == {("again.xml",)}
    assert [s["reference"] for s in invoice["statuses"]] == list(range(1, 301))


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


def _without_seller_siren(data: bytes, number: str | None = None) -> bytes:
    tree = etree.fromstring(data)
    for ref in tree.xpath(RRD, namespaces=NS):
        for issuer in ref.xpath("ram:IssuerTradeParty", namespaces=NS):
            ref.remove(issuer)
        if number:
            _text(ref, "ram:IssuerAssignedID", number)
    return etree.tostring(tree, encoding="UTF-8", xml_declaration=True)


def test_a_status_without_the_seller_s_siren_joins_the_one_invoice_of_its_number():
    """A platform's message that names the invoice's number but not its seller (a 501 Irrecevable about an invoice it
    could not read) was shown as a second invoice beside the one it is about; with two sellers' invoices of that
    number it stays apart, since which one it is about is not said."""
    first, second = UC1[0].read_bytes(), UC1[1].read_bytes()
    unnamed = _without_seller_siren(second)
    read = status_read.timeline([("a.xml", first), ("b.xml", unnamed)])
    assert [len(i["statuses"]) for i in read["invoices"]] == [2], read["invoices"]
    [invoice] = read["invoices"]
    assert invoice["invoice"]["number"] == "F202500003" and invoice["invoice"]["sellerSiren"]
    # another seller's invoice of the same number: the unnamed status cannot be placed
    other = etree.fromstring(first)
    for siren in other.xpath(RRD + "/ram:IssuerTradeParty/ram:GlobalID", namespaces=NS):
        siren.text = "300000007"
    read = status_read.timeline([("a.xml", first), ("c.xml", etree.tostring(other)), ("b.xml", unnamed)])
    assert sorted(len(i["statuses"]) for i in read["invoices"]) == [1, 1, 1]
