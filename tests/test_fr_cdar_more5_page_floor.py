"""The report for people (PDF) of a valid CDAR message about many invoices (MDT-74 true) leaves its page out: it
used to read every invoice's status and build the whole HTML page (10,000 invoices: ~10 s) only to count its lines
and leave it out. The invoices the message names give a floor of those lines before any page is built
(`status_page.least_lines`): past the PDF's limit the page is not built at all, below it the exact count decides
as before."""
from __future__ import annotations

import copy

import pytest
from lxml import etree

from cdar_cases import NS, example, examples
from pipeline.check import xmlinput
from pipeline.flows import status_read, validation_report
from pipeline.flows.status_validate import validate_status
from pipeline.pdf import status_page
from pipeline.read import cdar as reading


def _multi(invoices: int, distinct: bool = True) -> bytes:
    """FNFE's 200 about `invoices` invoices (MDT-74 true); with `distinct` false all of one number (copies)."""
    tree = etree.parse(str(example("200")))
    tree.xpath("//ram:MultipleReferencesIndicator/udt:Indicator", namespaces=NS)[0].text = "true"
    [first] = tree.xpath("//ram:ReferenceReferencedDocument", namespaces=NS)
    for n in range(1, invoices):
        more = copy.deepcopy(first)
        if distinct:
            more.find("ram:IssuerAssignedID", NS).text = f" F{300000000 + n}\n"   # (trimmed by the reading)
        first.getparent().append(more)
    return etree.tostring(tree, encoding="UTF-8", xml_declaration=True)


@pytest.mark.parametrize("data", [p.read_bytes() for p in examples()] + [_multi(30), _multi(30, distinct=False)],
                         ids=[p.name for p in examples()] + ["30-invoices", "30-copies"])
def test_the_floor_never_passes_the_page_it_stands_for(data):
    exact = status_page.line_count(status_read.status_html(data, "en"))
    assert 0 < status_read.least_page_lines(data) <= exact


def test_copies_of_one_invoice_count_once():
    assert reading.invoice_numbers(xmlinput.load(_multi(30, distinct=False))) == 1
    assert reading.invoice_numbers(xmlinput.load(_multi(30))) == 30


@pytest.mark.parametrize("language, said", [("en", "would lay out at least 4500 lines"),
                                            ("de", "hätte mindestens 4500 Zeilen")])
def test_a_message_past_the_limit_gets_its_report_without_building_the_page(monkeypatch, language, said):
    data = _multi(900)   # 5 rows each at least: 4,500, past twice EINVOICE_MAX_PDF_LINES (4,000)
    report = validate_status(data)
    assert report.valid and status_page.pdf_line_limit() == 4000

    def built(*args, **kwargs):
        raise AssertionError("the page was built")
    monkeypatch.setattr(validation_report, "status_html", built)
    # the report's HTML as the PDF would lay it out (its layout is the PDF's own test's)
    monkeypatch.setattr(validation_report.report_page, "report_pdf", validation_report.report_page.report_html)
    text = " ".join(validation_report.readable_report(data, report, "multi.xml", language, pdf=True).decode().split())
    assert said in text and "F300000899" not in text


def test_below_the_limit_the_exact_count_decides_as_before(monkeypatch):
    data = _multi(700)   # floor 3,500: under the limit; the page itself (40 rows an invoice) is far past it
    report = validate_status(data)
    assert status_read.least_page_lines(data) < status_page.pdf_line_limit()
    monkeypatch.setattr(validation_report.report_page, "report_pdf", validation_report.report_page.report_html)
    text = " ".join(validation_report.readable_report(data, report, "multi.xml", "en", pdf=True).decode().split())
    exact = "would lay out at least 28000 lines"   # the page built and counted: 40 rows an invoice
    assert exact in text and "F300000699" not in text
