"""The validation report for people (HTML / PDF): every failed rule of the JSON report is on it with its line and a
code frame, nothing is fetched, the PDF fits its pages, and a valid document's report carries the invoice page."""
from __future__ import annotations

import json

import pytest
from lxml import etree, html as lxml_html

from conftest import CORPUS
from test_platform_helpers import REPO
from pipeline.flows.validate_pdf import validate_pdf
from pipeline.flows.validate_xml import validate_xml
from pipeline.flows.validation_report import readable_report
from test_render_page import layout_faults, pdf_pages, pdftotext

INVALID = sorted((CORPUS / "xrechnung-schematron-tests" / "cii").glob("*.xml"))[:6] + sorted(
    (CORPUS / "xrechnung-schematron-tests" / "ubl-inv").glob("*.xml"))[:6]
VALID = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml"
XR_UBL = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml"


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


def test_a_file_name_cannot_disguise_itself_with_a_direction_override(tmp_path):
    """"Rechnung<U+202E>lmx.exe" showed as "Rechnungexe.xml" on the report: a name's bidi controls are written out."""
    data = XR_UBL.read_bytes()
    report = validate_xml(data, "xrechnung")
    html = readable_report(data, report, "Rechnung\u202elmx.exe")
    assert "Rechnung<U+202E>lmx.exe" in _text(html) and "\u202e" not in html.decode()
    first = pdf_pages(readable_report(data, report, "Rechnung\u202elmx.exe", pdf=True), tmp_path)[0]
    assert "Rechnung<U+202E>lmx.exe" in first and "Rechnungexe.xml" not in first


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


def _many_findings(lines: int) -> bytes:
    """A generated CII invoice of `lines` lines whose every line has an unknown unit code (BR-CL-23 each)."""
    import re

    from pipeline.flows.generate_xml import generate_xml
    from test_zugferd_samples import invoice_request

    request = dict(invoice_request(lines), config={"syntax": "CII"})
    xml = generate_xml(json.dumps(request).encode(), "en16931")[0]
    return re.sub(rb'unitCode="[A-Z0-9]+"', b'unitCode="QQQQ"', xml)


def test_a_report_with_a_finding_per_line_shows_the_first_ones_and_lists_the_rest(tmp_path):
    """A large invoice broken on every line gave a PDF of a page per four findings (500 findings: 126 pages, 6.9 s,
    minutes for the 18,000 lines an upload may hold). The first findings of a rule are shown in full, the rest listed
    by place under the rule; the counts and the JSON report keep every finding."""
    from pipeline.pdf.report_page import LISTED_LINES, SHOWN_PER_RULE

    data = _many_findings(120)
    report = validate_xml(data, "en16931")
    assert [i.code for i in report.issues] == ["BR-CL-23"] * 120 and len(report.to_dict()["issues"]) == 120
    html = readable_report(data, report, "big.xml")
    root = lxml_html.fromstring(html)
    assert len(root.xpath("//pre[@class='frame']")) == SHOWN_PER_RULE
    text = _text(html)
    assert "120 errors" in text and f"{120 - SHOWN_PER_RULE} more of this rule, not shown in full" in text
    rest = [i.location for i in report.issues[SHOWN_PER_RULE:]]
    assert f"{rest[0].line}:{rest[0].column}" in text and f"(+{len(rest) - LISTED_LINES})" in text
    assert "the JSON report lists every finding" in text
    pdf = readable_report(data, report, "big.xml", pdf=True)
    assert len(pdf_pages(pdf, tmp_path)) <= 4 and layout_faults(pdf, tmp_path) == []


def test_the_report_shows_findings_in_full_up_to_its_budget_then_each_rule_once():
    """Many rules with many findings each: at most SHOWN_IN_ALL in full, and every rule after the budget is still
    named with its text, count and places."""
    from pipeline.check.report import ERROR, Issue, Location, Report
    from pipeline.pdf.report_page import SHOWN_IN_ALL, SHOWN_PER_RULE

    issues = [Issue(ERROR, f"R-{r:03d}", f"rule {r} text", Location(line=r * 100 + k, column=1))
              for r in range(40) for k in range(12)]
    html = readable_report(b"<x/>", Report("test", "CII", issues), "synthetic.xml")
    root = lxml_html.fromstring(html)
    full = root.xpath("//div[@class='finding']")
    assert len(full) == SHOWN_IN_ALL == 20 * SHOWN_PER_RULE
    rests = root.xpath("//div[@class='finding rest']")
    assert len(rests) == 40  # the 20 rules shown in part, the 20 after the budget named once
    text = _text(html)
    assert "rule 39 text" in text and "12 more of this rule" in text and "3900:1" in text


def test_a_valid_invoice_too_long_for_a_pdf_page_gets_its_report_without_the_page(monkeypatch, tmp_path):
    from pipeline.settings import get_settings

    data = VALID.read_bytes()
    report = validate_xml(data, "xrechnung")
    monkeypatch.setenv("EINVOICE_MAX_PDF_LINES", "1")
    get_settings.cache_clear()
    try:
        pdf = readable_report(data, report, "01.01a.xml", pdf=True)
        html = readable_report(data, report, "01.01a.xml")
    finally:
        monkeypatch.delenv("EINVOICE_MAX_PDF_LINES")
        get_settings.cache_clear()
    text = " ".join(pdftotext(pdf, tmp_path, "-raw").split())
    assert "Valid" in text and "its page is left out of this PDF above 1 lines" in text and "123456XX" not in text
    assert "123456XX" in _text(html)  # HTML has no layout cost: the page stays


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
    said = {"valid": "Gültig", "invalid": "Ungültig", "indeterminate": "Nicht beurteilbar"}[json_report["verdict"]]
    assert "lieferant.xml" in text and said in text
    assert all(i["code"] in text for i in json_report["issues"] + json_report["notJudged"])
    pdf = upload(client, data, {}, path=path, headers={"Accept": "application/pdf"})
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF-")
    assert upload(client, data, {}, path=path, headers={"Accept": "image/png"}).status_code == 406
    assert upload(client, data, {}, path=path, headers={"Accept": "*/*"}).headers["content-type"] == "application/json"


def test_a_malformed_upload_with_a_control_character_gets_its_pdf_report(client, tmp_path):
    """XML-MALFORMED for a control character; the report's code frame shows the line with U+FFFD in its place
    (the PDF report gave a 500: found by fuzzing)."""
    from test_parse import upload
    data = VALID.read_bytes().replace(b"123456XX", b"1234\x0156XX", 1)
    json_report = upload(client, data, {}, path="/v1/invoice/xrechnung/validate").json
    assert [i["code"] for i in json_report["issues"]] == ["XML-MALFORMED"]
    pdf = upload(client, data, {}, path="/v1/invoice/xrechnung/validate", headers={"Accept": "application/pdf"})
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF-"), pdf.text[:300]
    text = pdftotext(pdf.content, tmp_path, "-raw")
    assert "XML-MALFORMED" in text and "1234\ufffd56XX" in text


def test_the_zugferd_endpoint_answers_the_report_for_people_on_request(client):
    from test_parse import upload
    data = (CORPUS / "mustangproject/validator/corruptedV2PDF.pdf").read_bytes()  # FX-SCH-A-000556
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


def test_one_line_xml_findings_show_their_real_columns_in_html_pdf_and_render(tmp_path):
    """XML is often one line (as other systems generate it): the report names each finding's column in the document
    (what the JSON report says), not its column inside the cut code frame; the caret still points at it in the
    frame."""
    from pipeline.flows.render import render

    source = INVALID[6]  # UBL, a failed rule deep inside the document
    tree = etree.fromstring(source.read_bytes(), etree.XMLParser(remove_blank_text=True))
    data = etree.tostring(tree, xml_declaration=True, encoding="UTF-8")
    assert data.count(b"\n") < 15  # line breaks inside text values only
    report = validate_xml(data, "xrechnung", content_checks=True)
    far = [i for i in report.issues if i.location and i.location.column and i.location.column > 1000]
    assert far, [i.to_dict() for i in report.issues]
    text = _text(readable_report(data, report, "one-line.xml"))
    for issue in far:
        assert f"column {issue.location.column}" in text, issue.to_dict()
    pdf_text = pdftotext(readable_report(data, report, "one-line.xml", pdf=True), tmp_path, "-raw")
    assert any(str(issue.location.column) in pdf_text for issue in far)
    # the caret sits under the finding's column of the cut line
    root = lxml_html.fromstring(readable_report(data, report, "one-line.xml"))
    frame = next(f for f in root.xpath("//pre[@class='frame']") if f.xpath(".//span[@class='mark']"))
    shown = frame.xpath(".//span[@class='at']")[0].text_content()
    caret = frame.xpath(".//span[@class='mark']")[0].text_content()
    assert shown[:8].strip().endswith("|") and len(caret) - 1 <= len(shown)
    # render with validate names the real columns too
    page = _text(render(data, validate=True, html=True))
    for issue in far:
        assert f"{issue.location.line}:{issue.location.column}" in page, issue.to_dict()


@pytest.mark.parametrize("name", ["xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml",
                                  "kosit-validator-configuration-tests/instances/ubl004.xml",
                                  "mustangproject/validator/validXRechnung.pdf"])
def test_render_and_parse_with_validate_give_the_validation_endpoints_answer(name, client):
    """One answer: render's verdict box and parse's `validation` hold the findings the validate endpoint reports,
    content checks included, and the box lists every one it counts (warnings too)."""
    from pipeline.flows.parse import parse_report
    from pipeline.flows.render import render

    data = (CORPUS / name).read_bytes()
    spec = "zugferd" if name.endswith(".pdf") else "xrechnung"
    from test_parse import upload
    answer = upload(client, data, {}, path=f"/v1/invoice/{spec}/validate")
    assert answer.status_code == 200, answer.text
    endpoint = answer.json
    if "01.01a" in name:  # render skipped its content finding before
        assert any(i["code"].startswith("CHECK-") for i in endpoint["issues"])
    parsed = parse_report(data, validate=True)["validation"]
    assert [(i["code"], i["severity"]) for i in parsed["issues"]] == [
        (i["code"], i["severity"]) for i in endpoint["issues"]]
    page = lxml_html.fromstring(render(data, validate=True, html=True))
    box = page.xpath("//section[contains(@class, 'verdict')]")[0]
    counts = " ".join(box.xpath(".//div[@class='verdict-line']")[0].text_content().split())
    errors, warnings = endpoint["summary"]["errors"], endpoint["summary"]["warnings"]
    assert f"{errors} error{'' if errors == 1 else 's'}, {warnings} warning{'' if warnings == 1 else 's'}" in counts
    rows = box.xpath(".//table//tbody/tr")
    assert len(rows) == len(endpoint["issues"])
    assert sorted(r.xpath("./td")[0].text.strip() for r in rows) == sorted(i["code"] for i in endpoint["issues"])


def test_html_from_the_api_carries_the_page_style(client):
    """Accept: text/html on validate, and render as HTML, answer a page with the invoice page's stylesheet in a
    <style> element (a browser has nothing else: fonts, margins, headings); nothing is linked or fetched."""
    from pipeline.pdf.page import CSS_FILE
    from test_parse import upload

    data = INVALID[1].read_bytes()
    rule = "table.lines th.num.amount"  # a rule only invoice.css has
    assert rule in CSS_FILE.read_text()
    for path, request in (("/v1/invoice/xrechnung/validate", {}), ("/v1/invoice/render", {"validate": True})):
        answer = upload(client, data, request, path=path, headers={"Accept": "text/html"})
        assert answer.status_code == 200, answer.text
        root = lxml_html.document_fromstring(answer.content)
        styles = " ".join(s.text_content() for s in root.xpath("//head/style"))
        assert rule in styles and "@media screen" in styles, path
        assert not root.xpath("//link | //script"), path


def test_german_reports_name_business_terms_and_content_findings_in_german(tmp_path):
    """German business-term names (KoSIT's XRechnung viewer labels, templates/term-names-de.json) on the report,
    the render term table and the content findings; singular and plural counts in both languages."""
    import json as json_module

    from pipeline.flows.render import render
    from pipeline.settings import TEMPLATES_DIR

    names = json_module.loads((TEMPLATES_DIR / "term-names-de.json").read_text())
    assert "itplr-kosit/xrechnung-visualization" in names["source"] and names["names"]["BT-1"] == "Rechnungsnummer"
    data = (CORPUS / "kosit-validator-configuration-tests/instances/ubl004.xml").read_bytes()  # BR-DE-3: BT-37
    report = validate_xml(data, "xrechnung", content_checks=True)
    text = _text(readable_report(data, report, "x.xml", "de"))
    assert "BT-37 Ort (Verkäufer)" in text and "BT-37 City" not in text
    assert "1 Fehler" in text and "1 Warnung" in text and "1 Warnungen" not in text
    english = _text(readable_report(data, report, "x.xml", "en"))
    assert "BT-37 City" in english and "1 error" in english and "1 warning" in english and "1 warnings" not in english
    # a content finding (CHECK-VAT-ID on the sample's placeholder VAT id) in German; the JSON keeps English
    sample = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml").read_bytes()
    checked = validate_xml(sample, "xrechnung", content_checks=True)
    vat = next(i for i in checked.issues if i.code == "CHECK-VAT-ID")
    assert "fails the check digits" in vat.to_dict()["message"] and "message_de" not in vat.to_dict()
    german = _text(readable_report(sample, checked, "x.xml", "de"))
    assert "BT-31 Umsatzsteuer-ID (Verkäufer) 'DE 123456789' hat falsche Prüfziffern" in german
    assert "fails the check digits" not in german and "2 Warnungen" in german
    page = _text(render(sample, language="de", business_terms=True, html=True))
    assert "BT-1 Rechnungsnummer" in page and "BT-1 Invoice number" not in page


def test_findings_carry_their_class_after_the_bmf_letter(tmp_path):
    """`category` in the JSON (format / business-rule / content / undetermined), a class on every finding of the
    reports for people, and the verdict's sentence on what the worst class means, in English and German: both in
    the JSON summary, and in a report for people its own language's first, the other's beneath."""
    from pipeline.check import categories
    from pipeline.flows.render import render

    assert [categories.category_of(c) for c in ("XML-MALFORMED", "XSD-SCHEMA", "BR-CO-10", "BR-DE-15", "CHECK-IBAN",
                                                "UBL-CR-470", "CII-SR-475", "FX-SCH-A-000556", "PDFA:6.1.3-1",
                                                "XRECHNUNG-NO-SCENARIO")] == [
        "format", "format", "business-rule", "business-rule", "content", "undetermined", "undetermined",
        "undetermined", "undetermined", "undetermined"]
    malformed = b"<Invoice><unclosed></Invoice>"
    cases = [(malformed, "format", "Formatfehler"),
             (XR_UBL.read_bytes().replace(b'PayableAmount currencyID="EUR">336.9<',
                                          b'PayableAmount currencyID="EUR">336.8<'), "business-rule",  # BR-CO-16
              "Geschäftsregelfehler"),
             ((CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml").read_bytes(), "content",
              "Inhaltsfehler")]
    for data, worst, german in cases:  # content findings are errors with strict only
        report = validate_xml(data, "xrechnung", content_checks=True, strict=worst == "content")
        assert all(i["category"] == categories.category_of(i["code"]) for i in report.to_dict()["issues"])
        assert categories.worst_category(report.issues) == worst
        english = lxml_html.fromstring(readable_report(data, report, "x.xml", "en"))
        sentence = english.xpath("//section[contains(@class, 'verdict')]/p[@class='meaning']")[0].text_content()
        assert sentence == categories.MEANING["en"][worst] and "BMF letter of 15 October 2025" in sentence
        summary = report.to_dict()["summary"]
        assert summary["worstCategory"] == worst
        assert summary["meaning"] == {"en": sentence, "de": categories.MEANING["de"][worst]}
        beneath = english.xpath("//section[contains(@class, 'verdict')]/p[@class='meaning']/following-sibling::p")
        assert [(p.get("class"), p.get("lang"), p.text_content()) for p in beneath] == [
            ("meaning-also", "de", summary["meaning"]["de"])]
        shown = english.xpath("//div[contains(@class, 'finding')]//span[@class='category']")
        assert len(shown) == len(english.xpath("//div[contains(@class, 'finding')]"))
        deutsch = _text(readable_report(data, report, "x.xml", "de"))
        assert deutsch.count(german) >= 1 and "BMF-Schreiben vom 15. Oktober 2025" in deutsch
        assert categories.MEANING["en"][worst] not in deutsch  # no English in a German report (issue 38)
    # render with validate: the class column and the sentence
    page = _text(render(cases[1][0], validate=True, html=True))
    assert "Class" in page and "business rule" in page and categories.MEANING["en"]["business-rule"] in page
    assert categories.MEANING["de"]["business-rule"] in page
    assert validate_xml(b"<Invoice>", "xrechnung").to_dict()["summary"]["meaning"]["de"] == \
        categories.MEANING["de"]["format"]


PEPPOL_GB_SE = CORPUS / "peppol/2026.5/billing/base-example.xml"  # seller in the UK, buyer in Sweden


def test_the_sentence_follows_the_errors_and_names_the_law_of_its_class():
    """Warnings are recommendations: a valid invoice whose only findings are warnings (a content check's among
    them) gets the no-error sentence, and one whose only error is BR-CO-16 is a business-rule error whatever its
    warnings. The BMF letter's consequences are German VAT law's: an invoice from the UK to Sweden (Peppol) or
    within France (fr-ctc, without its PMD note: BR-FR-05) gets its class, whose class it is, and no German
    consequence; German invoices keep theirs."""
    from pipeline.check import categories

    valid = validate_xml(XR_UBL.read_bytes(), "xrechnung", content_checks=True)
    assert valid.valid and {i.code for i in valid.issues} >= {"CHECK-VAT-ID"}
    assert valid.to_dict()["summary"]["worstCategory"] is None
    assert valid.to_dict()["summary"]["meaning"] == {"en": categories.MEANING["en"][None],
                                                     "de": categories.MEANING["de"][None]}
    totals = XR_UBL.read_bytes().replace(b'PayableAmount currencyID="EUR">336.9<', b'PayableAmount currencyID="EUR">336.8<')
    german = validate_xml(totals, "xrechnung", content_checks=True)
    assert [i.code for i in german.issues if i.severity == "ERROR"] == ["BR-CO-16"] and german.warnings >= 1
    assert german.to_dict()["summary"]["worstCategory"] == "business-rule"
    assert german.to_dict()["summary"]["meaning"]["en"] == categories.MEANING["en"]["business-rule"]
    assert "UStG" in german.to_dict()["summary"]["meaning"]["de"]

    peppol = PEPPOL_GB_SE.read_bytes().replace(b'PayableAmount currencyID="EUR">1656.25<',
                                                b'PayableAmount currencyID="EUR">1656.20<')
    french = (REPO / "fixtures/golden/fr-b2b-goods.fr-ctc.cii.xml").read_bytes().replace(
        b"<ram:SubjectCode>PMD</ram:SubjectCode>", b"<ram:SubjectCode>AAI</ram:SubjectCode>")
    for data, spec, error in ((peppol, "peppol", "BR-CO-16"), (french, "fr-ctc", "BR-FR-05")):
        report = validate_xml(data, spec, content_checks=True)
        assert [i.code[:len(error)] for i in report.issues if i.severity == "ERROR"] == [error]
        summary = report.to_dict()["summary"]
        assert summary["worstCategory"] == "business-rule"
        en, de = summary["meaning"]["en"], summary["meaning"]["de"]
        assert en.startswith("Business-rule error:") and "German BMF letter of 15 October 2025" in en
        assert "UStG" not in en and "input VAT" not in en and "neither seller nor buyer is in Germany" in en
        assert de.startswith("Geschäftsregelfehler:") and "UStG" not in de and "deutschem Umsatzsteuerrecht" in de
        page = _text(readable_report(data, report, "x.xml", "en"))
        assert en in page and "UStG" not in page


def test_code_frames_fit_the_page_and_stay_aligned(tmp_path):
    """Generated XML is indented, and Saxon aligns a long start tag's attributes far right (the root's namespaces),
    so lines around a finding can be longer than the PDF's width: each line of a frame is shown through the same
    window as the finding's line (cut with an ellipsis), so nothing wraps under the gutter and columns line up."""
    from pipeline.pdf.report_page import MAX_FRAME_CHARS

    source = INVALID[0]  # CII, a finding on the root element
    tree = etree.fromstring(source.read_bytes(), etree.XMLParser(remove_blank_text=True))
    for prefix, uri in tree.nsmap.items():  # the attributes of a long start tag, one per line, as Saxon writes them
        tree.set(f"{{urn:example:frame}}{prefix or 'x'}{'-long' * 20}", uri)
    data = etree.tostring(tree, xml_declaration=True, encoding="UTF-8", pretty_print=True)
    report = validate_xml(data, "xrechnung")
    root = lxml_html.fromstring(readable_report(data, report, "frames.xml"))
    lines = [span.text_content() for span in root.xpath("//pre[@class='frame']/span[not(@class='mark')]")]
    assert lines and any(line.endswith("…") for line in lines)
    assert all(len(line) <= len("    1 | ") + MAX_FRAME_CHARS + 2 for line in lines), max(lines, key=len)
    pdf = readable_report(data, report, "frames.xml", pdf=True)
    assert not layout_faults(pdf, tmp_path)


def test_every_line_of_a_pdf_code_frame_starts_at_the_frame_edge(tmp_path):
    """The gutter bars ("  1 | ...") of a code frame stand one under another in the PDF: the frame was an inline
    element there (the PDF's user-agent stylesheet has no rule for pre), whose padding moved its first line one
    character right."""
    import re

    data = (CORPUS / "kosit-validator-configuration-tests/instances/ubl002.xml").read_bytes()
    pdf = readable_report(data, validate_xml(data, "xrechnung"), "frames.xml", pdf=True)
    bars = [float(x) for x in re.findall(r'<word xMin="([\d.]+)"[^>]*>\|</word>', pdftotext(pdf, tmp_path, "-bbox"))]
    assert len(bars) >= 5 and max(bars) - min(bars) < 0.5, bars


def test_people_read_short_prefixed_paths_and_the_json_keeps_the_rules_own(tmp_path):
    """A finding's place in the reports for people is the document's own prefixes, positions only where needed;
    the JSON report keeps the path the rule gave. render's verdict table puts a warning's severity under its code
    (it read "CHECK-VAT-IDwarning" in the PDF)."""
    from pipeline.flows.render import render

    data = INVALID[0].read_bytes()  # CII
    report = validate_xml(data, "xrechnung")
    assert any("Q{" in (i.location.xpath or "") for i in report.issues if i.location)
    for html in (readable_report(data, report, "x.xml"), readable_report(data, report, "x.xml", "de")):
        where = [w.text_content() for w in lxml_html.fromstring(html).find_class("where")]
        assert where and all("Q{" not in w and "namespace-uri" not in w for w in where), where
        assert any("/rsm:CrossIndustryInvoice/rsm:SupplyChainTradeTransaction" in w for w in where), where
    pdf = render(XR_UBL.read_bytes(), validate=True)
    text = " ".join(pdftotext(pdf, tmp_path, "-raw").split())
    assert "CHECK-VAT-ID" in text and "CHECK-VAT-IDwarning" not in text


def test_a_german_report_gives_our_own_findings_in_german():
    """Reading and PDF findings are ours (XML-MALFORMED, XML-EMPTY, the Factur-X / XMP checks): a German report
    gives them in German; the JSON keeps the English message."""
    cases = [(b"<Invoice><unclosed></Invoice>", validate_xml(b"<Invoice><unclosed></Invoice>", "xrechnung"),
              "kein wohlgeformtes XML"),
             (b"  ", validate_xml(b"  ", "xrechnung"), "Die Datei ist leer")]
    broken_xmp = (CORPUS / "mustangproject/validator/invalidXMP-ParseError.pdf").read_bytes()
    cases.append((broken_xmp, validate_pdf(broken_xmp), "Die XMP-Metadaten sind nicht lesbar"))
    for data, report, german in cases:
        text = _text(readable_report(data, report, "x", "de"))
        assert german in text, text[:1500]
        assert all("message_de" not in i for i in report.to_dict()["issues"])
        ours = [i for i in report.issues if getattr(i, "message_de", None)]  # not the rules' or validator's texts
        assert ours and not any(i.message in text for i in ours), [i.message for i in ours]


def test_a_pdf_whose_invoice_is_malformed_xml_gets_the_code_frame_its_finding_points_to():
    """The invoice in a PDF declares an encoding no parser knows (a real case: Mustang's
    factur-x-invalid-xml-encoding-attribute.pdf): XML-MALFORMED at line 1, column 38, whose text says the frame shows
    where reading stopped; the reading side refuses the invoice, so the frame comes from the embedded file as the
    PDF check read it (there was none before)."""
    import io

    import pikepdf
    from pipeline.flows.generate_zugferd import generate_zugferd
    from test_zugferd_samples import invoice_request

    with pikepdf.open(io.BytesIO(generate_zugferd(json.dumps(invoice_request(2, "EN16931", "de")).encode()))) as doc:
        ef = pikepdf.NameTree(doc.Root.Names.EmbeddedFiles)["factur-x.xml"].EF
        xml = ef.UF.read_bytes()
        bad = xml.replace(b'encoding="UTF-8"', b'encoding="UTF-8-W/O-BOM"', 1)
        assert bad != xml
        for key in ("/F", "/UF"):
            ef[key].write(bad)
        out = io.BytesIO()
        doc.save(out)
    data = out.getvalue()
    report = validate_pdf(data)
    [malformed] = [i for i in report.issues if i.code == "XML-MALFORMED"]
    assert (malformed.location.line, malformed.location.column) == (1, 38)
    root = lxml_html.fromstring(readable_report(data, report, "x.pdf", "de"))
    frames = [" ".join(f.text_content().split()) for f in root.xpath("//pre[@class='frame']")]
    assert len(frames) == 1 and 'encoding="UTF-8-W/O-BOM"' in frames[0], frames


def test_each_finding_is_labelled_with_a_term_of_its_json_business_terms():
    """The label beside a finding's rule is one of the terms the JSON report names for it (`businessTerms`): a
    content check's own term, not the group its place is in (CHECK-IBAN on the CEN sample's Danish account was
    labelled "BG-16 Payment instructions", CHECK-CREDITOR-ID on a payee's id "BT-60 Payee identifier"); our
    XRECHNUNG-NO-SCENARIO, which had none, the specification identifier."""
    import re

    from pipeline.pdf.report_page import report_html

    cases = [(CORPUS / "en16931-cen/cii/examples/CII_example3.xml", "en16931", "CHECK-IBAN",
              "BT-84 Payment account identifier"),
             (CORPUS / "xrechnung-schematron-tests/ubl-inv/ubl-inv-peppol-en16931-r061-1.xml", "en16931",
              "CHECK-CREDITOR-ID", "BT-90 Bank assigned creditor identifier"),
             (CORPUS / "kosit-validator-configuration-tests/instances/ubl006.xml", "xrechnung",
              "XRECHNUNG-NO-SCENARIO", "BT-24 Specification identifier"),
             (CORPUS / "kosit-validator-configuration-tests/instances/ubl008.xml", "en16931", "BR-S-08",
              "BT-116 VAT category taxable amount")]
    for path, spec, code, label in cases:
        report = validate_xml(path.read_bytes(), spec, content_checks=True)
        root = lxml_html.fromstring(report_html(report, path.name, path.read_text(encoding="utf-8")))
        shown = {}
        for head in root.xpath("//div[contains(@class, 'finding')]/div[1]"):
            rule = head.xpath("string(span[@class='rule'])")
            term = re.match(r"\s*· ((?:BT|BG)-\S+)", head.xpath("string(span[@class='rule']/following-sibling::text())"))
            shown.setdefault(rule, set()).add(term.group(1) if term else None)
        named: dict[str, set] = {}   # a rule's findings, shown one after the other: their terms together
        for issue in report.issues:
            named.setdefault(issue.code, set()).update(issue.business_terms or [None])
        assert all(shown[rule] <= named[rule] for rule in shown), (shown, named)
        assert f"{code} · {label}" in _text(report_html(report, path.name)), (path.name, code)
