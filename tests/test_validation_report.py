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


# ---- through the endpoints and the CLI ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def client():
    import falcon.testing

    from pipeline.service.app import create_app
    return falcon.testing.TestClient(create_app(platform=False))


@pytest.mark.parametrize("path", ["/v1/invoice/xrechnung/validate", "/v1/invoice/en16931/validate"])
def test_the_xml_endpoints_answer_the_report_for_people_on_request(client, path):
    from test_parse import upload
    data = INVALID[1].read_bytes()
    json_report = upload(client, data, {}, path=path).json
    html = upload(client, data, {"metadataLanguage": "de"}, name="lieferant.xml", path=path,
                  headers={"Accept": "text/html"})
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    text = _text(html.content)
    assert "lieferant.xml" in text and ("Ungültig" if not json_report["valid"] else "Gültig") in text
    assert all(i["code"] in text for i in json_report["issues"])
    pdf = upload(client, data, {}, path=path, headers={"Accept": "application/pdf"})
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF-")
    assert upload(client, data, {}, path=path, headers={"Accept": "image/png"}).status_code == 406
    assert upload(client, data, {}, path=path, headers={"Accept": "*/*"}).headers["content-type"] == "application/json"


def test_the_zugferd_endpoint_answers_the_report_for_people_on_request(client):
    from test_parse import upload
    data = (CORPUS / "mustangproject/validator/invalidXRechnung.pdf").read_bytes()
    html = upload(client, data, {}, name="invalid.pdf", path="/v1/invoice/zugferd/validate",
                  headers={"Accept": "text/html"})
    assert html.status_code == 200 and "Invalid" in _text(html.content)
    assert upload(client, data, {"metadataLanguage": "fr"}, path="/v1/invoice/zugferd/validate",
                  headers={"Accept": "text/html"}).status_code == 400


def test_cli_writes_the_report_for_people(tmp_path):
    import subprocess
    import sys
    from pathlib import Path
    out_html, out_pdf = tmp_path / "r.html", tmp_path / "r.pdf"
    done = subprocess.run([sys.executable, "-m", "pipeline", "validate", str(INVALID[0]), "--html", str(out_html),
                           "--pdf", str(out_pdf)], capture_output=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode in (0, 1), done.stderr
    assert INVALID[0].name in _text(out_html.read_bytes()) and out_pdf.read_bytes().startswith(b"%PDF-")
