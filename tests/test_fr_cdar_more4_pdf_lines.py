"""The PDF of a status page is bounded by what it lays out, not only by its number of statuses: one status may hold
thousands of details or a reason text of megabytes (FNFE's XSD bounds neither), and WeasyPrint took 568 s for a
207 whose reason (MDT-114) was 2 MB of words, far past the worker's timeout. Past twice EINVOICE_MAX_PDF_LINES the
PDF is a 400 TOO_MANY_LINES before any layout; the HTML page draws it all."""
from __future__ import annotations

import copy
import time

import falcon.testing
import pytest
from lxml import etree

from cdar_cases import NS, example
from pipeline.flows import status_read
from pipeline.pdf import status_page
from pipeline.service.app import create_app
from test_fr_cdar_read import _files

RENDER = "/v1/invoice/fr-ctc/status/render"
PDF, HTML = "application/pdf", "text/html"


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _dispute(edit) -> bytes:
    """FNFE's UC5 207 (En litige) edited."""
    tree = etree.parse(str(example("207")))
    edit(tree)
    return etree.tostring(tree, encoding="UTF-8", xml_declaration=True)


def _long_reason(tree) -> None:
    [reason] = tree.xpath("//ram:SpecifiedDocumentStatus/ram:Reason", namespaces=NS)
    reason.text = "motif " * 100_000   # 600,000 characters


def _many_details(tree) -> None:
    [detail] = tree.xpath("//ram:SpecifiedDocumentStatus", namespaces=NS)
    for n in range(2, 600):
        more = copy.deepcopy(detail)
        more.find("ram:SequenceNumeric", NS).text = str(n)
        detail.getparent().append(more)


@pytest.mark.parametrize("edit", [_long_reason, _many_details], ids=["reason-600k", "600-details"])
def test_a_page_too_long_for_a_pdf_is_refused_before_layout_and_drawn_as_html(client, edit):
    data = _dispute(edit)
    started = time.monotonic()
    answer = _files(client, RENDER, [("litige.xml", data)], headers={"Accept": PDF})
    assert answer.status_code == 400, answer.text[:300]
    assert time.monotonic() - started < 20   # no layout: the 600 details' PDF took 60-90 s
    body = answer.json
    assert body["errorCode"] == "TOO_MANY_LINES"
    [entry] = body["errors"]
    assert entry["field"] == "file" and entry["rejectedValue"] > status_page.pdf_line_limit()
    assert "Accept: text/html" in body["message"] and "EINVOICE_MAX_PDF_LINES" in body["message"]
    page = _files(client, RENDER, [("litige.xml", data)], headers={"Accept": HTML})
    assert page.status_code == 200
    assert page.text.count("TX_TVA_ERR") >= (599 if edit is _many_details else 1)
    assert ("motif " * 1000) in page.text or edit is _many_details


def test_the_limit_follows_the_pdf_lines_setting(client, monkeypatch):
    """EINVOICE_MAX_PDF_LINES 20: 40 lines of a status page; FNFE's 207 (some 55) is then refused as a PDF."""
    from pipeline.settings import get_settings
    monkeypatch.setenv("EINVOICE_MAX_PDF_LINES", "20")
    get_settings.cache_clear()
    try:
        assert status_page.pdf_line_limit() == 40
        assert status_read.too_many_lines(40) is None
        data = example("207").read_bytes()
        answer = _files(client, RENDER, [("litige.xml", data)], headers={"Accept": PDF})
        assert answer.status_code == 400 and answer.json["errorCode"] == "TOO_MANY_LINES", answer.text[:300]
        assert "a PDF is drawn up to 40 (" in answer.json["message"]
    finally:
        monkeypatch.undo()
        get_settings.cache_clear()
    assert _files(client, RENDER, [("litige.xml", data)], headers={"Accept": PDF}).content.startswith(b"%PDF")


def test_fifty_statuses_of_fnfe_kind_stay_within_a_pdf():
    """The 50 statuses a PDF takes, each FNFE's UC5 207 with its reason, action and two data in dispute, are
    counted well within the limit: the bound refuses only what no PDF could lay out in time."""
    messages = []
    for n in range(50):
        def renumber(tree, n=n):
            tree.xpath("//ram:ReferenceReferencedDocument/ram:IssuerAssignedID", namespaces=NS)[0].text = f"F{n:09d}"
        messages.append((f"m{n}.xml", _dispute(renumber)))
    found = status_read.timeline(messages, names=False)
    assert len(found["invoices"]) == 50
    html = status_page.status_html(status_read.writing.timeline_canonical(found), "fr")
    lines = status_page.line_count(html)
    assert 1000 < lines < status_page.pdf_line_limit() * 3 // 4


def test_long_texts_count_by_their_wrapped_lines():
    short = status_page.line_count(status_read.status_html(_dispute(lambda tree: None), "en"))
    longer = status_page.line_count(status_read.status_html(_dispute(_long_reason), "en"))
    assert longer - short == pytest.approx(600_000 // status_page.WRAP, abs=5)
