"""A finding in the reports for people as painted. Its code frame points at its place: in a tab-indented invoice
(the parser counts a tab as one column, the frame shows it as spaces to the next stop of 4) the caret stood left of
its element, by three characters per tab. Its text names elements by the document's prefixes: an XSD finding
listed a dozen `{urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2}...` lines."""
from __future__ import annotations

import re

from lxml import html as lxml_html

from conftest import CORPUS
from pipeline.flows.validate_xml import validate_xml
from pipeline.flows.validation_report import readable_report
from test_render_page import pdftotext

TYPICAL_CII = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml"


def tab_indented_with_an_unknown_element() -> bytes:
    """The official sample indented with tabs (4 spaces each), one element the XSD does not know deep inside."""
    text = TYPICAL_CII.read_text(encoding="utf-8")
    text = re.sub(r"(?m)^((?:    )+)(?=<)", lambda m: "\t" * (len(m.group(1)) // 4), text)
    text = text.replace("<ram:BuyerReference>", "<ram:NoSuchElement/><ram:BuyerReference>", 1)
    assert "\t\t\t<ram:NoSuchElement/>" in text
    return text.encode()


def test_the_caret_stands_under_the_finding_in_a_tab_indented_invoice(tmp_path):
    data = tab_indented_with_an_unknown_element()
    report = validate_xml(data, "xrechnung")
    finding = next(i for i in report.issues if i.code.startswith("XSD-"))
    assert finding.location.column == 4  # three tabs before it, as the parser counts them
    # the HTML: the caret's column in its line is where the element starts in the marked line
    frame = lxml_html.fromstring(readable_report(data, report, "tabs.xml")).find_class("frame")[0]
    marked = frame.find_class("at")[0].text_content()
    caret = frame.find_class("mark")[0].text_content()
    assert marked.index("<ram:NoSuchElement/>") == caret.index("^"), (marked, caret)
    # the PDF, as painted: the caret's left edge under the element's first character (monospace: same x)
    bbox = pdftotext(readable_report(data, report, "tabs.xml", pdf=True), tmp_path, "-bbox")
    x = lambda word: [float(v) for v in re.findall(rf'<word xMin="([\d.]+)"[^>]*>{word}', bbox)]  # noqa: E731
    carets, elements = x(r"\^</word>"), x("&lt;ram:NoSuchElement/&gt;")
    assert carets and elements and abs(carets[0] - elements[0]) < 1.0, (carets, elements)


def test_xsd_findings_name_elements_by_the_document_s_prefixes(tmp_path):
    data = tab_indented_with_an_unknown_element()
    report = validate_xml(data, "xrechnung")
    finding = next(i for i in report.issues if i.code.startswith("XSD-"))
    assert "{urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100}NoSuchElement" in \
        finding.message  # the JSON report keeps the validator's words
    for lang in ("en", "de"):
        html = readable_report(data, report, "x.xml", lang)
        text = lxml_html.fromstring(html).find_class("finding")[0].find_class("text")[0].text_content()
        said = {"en": "This element is not expected. Expected is one of ( ",  # (German: pipeline.check.xsd_german)
                "de": "Dieses Element ist hier nicht erwartet. Erwartet wird eines von ( "}[lang]
        assert text.startswith(f"Element 'ram:NoSuchElement': {said}ram:"), text
        assert "{urn:" not in text
    painted = " ".join(pdftotext(readable_report(data, report, "x.xml", pdf=True), tmp_path, "-raw").split())
    assert "Element 'ram:NoSuchElement': This element is not expected." in painted and "{urn:" not in painted
