"""Each step of an invoice's lifecycle keeps what its own message says of the invoice: the receipt time (MDT-95) and
the reference type (MDT-97).

FNFE's UC1 is one invoice from Déposée to Encaissée: the seller's platform states its receipt at 15:10 (200, 212),
the buyer's at 16:10 (202, 204, 211), and only the 212 to the PPF names a reference type. The timeline merged them
into the invoice, the first file's value winning, so the page showed one receipt time for every step: 15:10 for
the buyer's statuses (or 16:10 for the seller's, by upload order). Now each status carries the invoice as its
message states it, the merged invoice keeps only what every message shares, and the page shows each step's receipt
in the timeline and in the message's facts; checked against the source XML read with lxml, never against our
reading of it.
"""
from __future__ import annotations

import re

import falcon.testing
import pytest
from lxml import etree, html as lxml_html

from cdar_cases import NS, RRD, examples, official_chain
from pipeline.invoice.request_json import load_request
from pipeline.service.app import create_app
from test_fr_cdar_read import BASE, _files
from test_render_page import pdftotext
from test_validate_endpoints import post

UC1 = [p for p in examples() if p.name.startswith("UC1_")]


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _stated(data: bytes) -> dict:
    """What the message itself says (lxml on the source): status code, receipt time and reference type as written."""
    root = etree.fromstring(data)

    def one(path):
        found = root.xpath(f"{RRD}/{path}", namespaces=NS)
        return found[0].strip() if found else None
    return {"code": one("ram:ProcessConditionCode/text()"),
            "receipt": one("ram:ReceiptDateTime/udt:DateTimeString/text()"),
            "reference": one("ram:ReferenceTypeCode/text()")}


def _iso(stamp: str | None) -> str | None:   # format 204, as the source writes it
    return None if stamp is None else re.sub(r"^(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)$", r"\1-\2-\3T\4:\5:\6", stamp)


def _shown(stamp: str, lang: str) -> str:   # as the page shows a date-time (no seconds when they are 00)
    y, mo, d, h, mi = stamp[:4], stamp[4:6], stamp[6:8], stamp[8:10], stamp[10:12]
    return f"{d}/{mo}/{y} {h}:{mi}" if lang == "fr" else f"{y}-{mo}-{d} {h}:{mi}"


@pytest.fixture(scope="module")
def uc1():
    files = [(p.name, p.read_bytes()) for p in UC1]
    for _, data in files:
        assert official_chain(data)[0]
    stated = {name: _stated(data) for name, data in files}
    # the premise: the sides state different receipt times, and one message alone a reference type
    assert len({s["receipt"] for s in stated.values()}) == 2
    assert sum(s["reference"] is not None for s in stated.values()) == 1
    return files, stated


@pytest.mark.parametrize("order", ["as named", "reversed"])
def test_each_status_carries_its_own_message_s_receipt_time(client, uc1, order):
    files, stated = uc1
    sent = files if order == "as named" else files[::-1]
    r = _files(client, BASE + "/timeline", sent)
    assert r.status_code == 200, r.text
    [invoice] = load_request(r.content)["invoices"]
    # the merged invoice holds only what all its messages share: whichever file came first
    assert not {"receiptDateTime", "referenceTypeCode"} & set(invoice["invoice"])
    for status in invoice["statuses"]:
        source = stated[status["file"]]
        assert status["status"]["code"] == source["code"]
        assert status["invoice"].get("receiptDateTime") == _iso(source["receipt"]), status["file"]
        assert status["invoice"].get("referenceTypeCode") == source["reference"], status["file"]
        # each status is the request generation takes, as parse reads its file
        parsed = load_request(post(client, BASE + "/parse", file=dict(files)[status["file"]]).content)
        assert {k: status[k] for k in ("message", "status", "invoice")} == \
            {k: parsed[k] for k in ("message", "status", "invoice")}


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_the_page_shows_each_step_s_receipt_time(client, uc1, lang):
    files, stated = uc1
    r = _files(client, BASE + "/render", files[::-1], {"language": lang}, headers={"Accept": "text/html"})
    assert r.status_code == 200
    page = lxml_html.document_fromstring(r.content)
    [table] = page.xpath("//table[contains(@class, 'timeline')]")
    heads = [" ".join(th.text_content().split()) for th in table.xpath("thead/tr/th")]
    column = next(i for i, head in enumerate(heads) if "MDT-95" in head)
    rows = [[" ".join(td.text_content().split()) for td in tr.xpath("td")] for tr in table.xpath("tbody/tr")]
    by_code = {s["code"]: s for s in stated.values()}
    assert len(rows) == len(files)
    for row in rows:
        code = row[heads.index(next(h for h in heads if h in ("Status", "Statut")))].split()[0]
        assert row[column] == _shown(by_code[code]["receipt"], lang), (code, row)
    # the invoice's facts no longer carry a receipt time; each message's section has its own
    [facts] = page.xpath("//section[contains(@class, 'facts')]")
    assert "MDT-95" not in facts.text_content() and "MDT-97" not in facts.text_content()
    for section in page.xpath("//section[contains(@class, 'status-entry')]"):
        code = section.xpath(".//span[@class='status-code']")[0].text_content().strip()
        facts = {fact.xpath("dt/span[@class='term']")[0].text_content(): fact.xpath("dd")[0].text_content()
                 for fact in section.xpath(".//div[contains(@class, 'fact')][dt/span[@class='term']]")}
        assert facts["MDT-95"] == _shown(by_code[code]["receipt"], lang), code
        assert facts.get("MDT-97") == by_code[code]["reference"], code


def test_the_pdf_shows_each_step_s_receipt_time(client, uc1, tmp_path):
    files, stated = uc1
    r = _files(client, BASE + "/render", files, {"language": "fr"})
    assert r.status_code == 200 and r.content.startswith(b"%PDF-")
    text = pdftotext(r.content, tmp_path, "-raw")
    for source in stated.values():
        # the status's time, then its receipt: on the status's own line of the timeline
        line = next(line for line in text.splitlines() if f" {source['code']} " in f" {line} "
                    and re.match(r"\d\d/\d\d/\d{4} \d\d:\d\d \d\d/", line))
        assert line.split()[2:4] == _shown(source["receipt"], "fr").split(), line


def test_a_message_about_two_invoices_gives_each_its_own_receipt_time(client):
    """MDT-74 true: each referenced invoice carries its own receipt (MDT-95); each invoice's status keeps its own."""
    tree = etree.parse(str(UC1[1]))   # 202 Reçue
    [first] = tree.xpath(RRD, namespaces=NS)
    second = etree.fromstring(etree.tostring(first))
    second.find(f"{{{NS['ram']}}}IssuerAssignedID").text = "F202500099"
    second.find(f"{{{NS['ram']}}}ReceiptDateTime/{{{NS['udt']}}}DateTimeString").text = "20250701170500"
    first.addnext(second)
    tree.find(f".//{{{NS['ram']}}}MultipleReferencesIndicator/{{{NS['udt']}}}Indicator").text = "true"
    data = etree.tostring(tree, encoding="UTF-8", xml_declaration=True)
    assert official_chain(data)[0]
    body = load_request(_files(client, BASE + "/timeline", [("two.xml", data)]).content)
    found = {i["invoice"]["number"]: [s["invoice"]["receiptDateTime"] for s in i["statuses"]] for i in body["invoices"]}
    assert found == {"F202500003": [_iso(_stated(data)["receipt"])], "F202500099": ["2025-07-01T17:05:00"]}
