"""The validation report for people (HTML / PDF): every failed rule of the JSON report is on it with its line and a
code frame, nothing is fetched, the PDF fits its pages, and a valid document's report carries the invoice page."""
from __future__ import annotations

import json

import pytest
from lxml import etree, html as lxml_html

from conftest import CORPUS
from pipeline.flows.validate_pdf import validate_pdf
from pipeline.flows.validate_xml import validate_xml
from pipeline.flows.validation_report import readable_report
from test_render_page import layout_faults

INVALID = sorted((CORPUS / "xrechnung-schematron-tests" / "cii").glob("*.xml"))[:6] + sorted(
    (CORPUS / "xrechnung-schematron-tests" / "ubl-inv").glob("*.xml"))[:6]
VALID = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml"


def _text(html: bytes) -> str:
    return " ".join(lxml_html.fromstring(html).text_content().split())


@pytest.mark.parametrize("source", INVALID, ids=[p.name for p in INVALID])
def test_every_failed_rule_is_on_the_report_with_its_line(source):
    data = source.read_bytes()
    report = validate_xml(data, "xrechnung")
    html = readable_report(data, report, source.name)
    etree.fromstring(html.replace(b"<!DOCTYPE html>", b"", 1), etree.XMLParser(no_network=True))  # well-formed
    text = _text(html)
    for issue in report.issues:
        assert issue.code in text
        if issue.location and issue.location.line:
            assert f"line {issue.location.line}" in text, issue.to_dict()
    frames = lxml_html.fromstring(html).xpath("//pre[@class='frame']")
    assert len(frames) == sum(1 for i in report.issues if i.location and i.location.line)
    assert ("Invalid" if not report.valid else "Valid") in text


def test_the_report_is_well_formed_and_refers_to_nothing_outside():
    data = INVALID[0].read_bytes()
    html = readable_report(data, validate_xml(data, "xrechnung"), "x.xml")
    root = lxml_html.document_fromstring(html)
    assert not root.xpath("//script | //link | //img | //iframe | //object | //*[@src] | //*[@href]")
    assert b"url(" not in html and b"@import" not in html


def test_user_text_in_the_document_cannot_inject_markup():
    data = VALID.read_bytes().replace(b"<ram:BuyerReference>04011000-12345-03</ram:BuyerReference>",
                                      b"<ram:BuyerReference>&lt;script&gt;alert(1)&lt;/script&gt;</ram:BuyerReference>"
                                      b"<ram:Foo>1</ram:Foo>")
    html = readable_report(data, validate_xml(data, "xrechnung"), "<b>name</b>.xml")
    root = lxml_html.document_fromstring(html)
    assert not root.xpath("//script") and not root.xpath("//b")
    assert "<b>name</b>.xml" in root.text_content()


def test_a_valid_document_carries_the_invoice_page_in_german():
    data = VALID.read_bytes()
    report = validate_xml(data, "xrechnung")
    assert report.valid
    html = readable_report(data, report, "01.01a.xml", "de")
    etree.fromstring(html.replace(b"<!DOCTYPE html>", b"", 1), etree.XMLParser(no_network=True))  # with the page
    text = _text(html)
    assert "Gültig" in text and "Rechnungsnummer" in text and "123456XX" in text


def test_the_pdf_fits_its_pages(tmp_path):
    for source in INVALID[:3] + [VALID]:
        data = source.read_bytes()
        pdf = readable_report(data, validate_xml(data, "xrechnung"), source.name, pdf=True)
        assert pdf.startswith(b"%PDF-")
        assert layout_faults(pdf, tmp_path) == [], source.name


def test_a_pdf_report_names_the_pdf_findings(tmp_path):
    pdf_source = (CORPUS / "mustangproject/validator/invalidXRechnung.pdf").read_bytes()
    report = validate_pdf(pdf_source)
    html = readable_report(pdf_source, report, "invalidXRechnung.pdf")
    text = _text(html)
    assert not report.valid and all(i.code in text for i in report.issues)
    assert json.dumps(report.to_dict())  # the JSON report is unchanged by having a page
