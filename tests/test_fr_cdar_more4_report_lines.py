"""The report for people (PDF) of a valid status message leaves its page out when the page is too long for a PDF
(a reason text of megabytes took minutes of layout, past the worker's timeout), saying so in the report's language;
the page of a message of FNFE's kind stays below the verdict."""
from __future__ import annotations

import copy
import time

import pytest
from lxml import etree

from cdar_cases import NS, example
from pipeline.flows.status_validate import validate_status
from pipeline.flows.validation_report import readable_report
from test_render_page import pdftotext


def _long_reason() -> bytes:
    tree = etree.parse(str(example("207")))
    [reason] = tree.xpath("//ram:SpecifiedDocumentStatus/ram:Reason", namespaces=NS)
    reason.text = "motif " * 100_000
    return etree.tostring(tree, encoding="UTF-8", xml_declaration=True)


@pytest.mark.parametrize("language, said", [("en", "is left out of this PDF above 4000"),
                                            ("de", "fehlt in diesem PDF über 4000")])
def test_a_valid_message_whose_page_is_too_long_gets_the_report_without_it(language, said, tmp_path):
    data = _long_reason()
    report = validate_status(data)
    assert report.valid
    started = time.monotonic()
    text = " ".join(pdftotext(readable_report(data, report, "litige.xml", language, pdf=True), tmp_path,
                              "-raw").split())
    assert time.monotonic() - started < 60   # the page laid out took 10 minutes
    assert said in text and "ctc/status/render" in text   # (the PDF may break "fr-ctc" at its hyphen)
    assert "motif motif" not in text


def test_a_message_of_fnfe_kind_keeps_its_page_below_the_verdict(tmp_path):
    data = example("207").read_bytes()
    text = pdftotext(readable_report(data, validate_status(data), "litige.xml", "en", pdf=True), tmp_path, "-raw")
    assert "TX_TVA_ERR" in text and "left out" not in text


def test_a_valid_message_about_a_thousand_invoices_gets_its_report_without_the_page(tmp_path):
    """FNFE's 200 made a message about 1,000 invoices (MDT-74 true): valid, and its report's PDF took 5 minutes
    (3,000 invoices: 297 s), laying out a page of every invoice's status."""
    tree = etree.parse(str(example("200")))
    tree.xpath("//ram:MultipleReferencesIndicator/udt:Indicator", namespaces=NS)[0].text = "true"
    [first] = tree.xpath("//ram:ReferenceReferencedDocument", namespaces=NS)
    for n in range(1, 1000):
        more = copy.deepcopy(first)
        more.find("ram:IssuerAssignedID", NS).text = f"F{300000000 + n}"
        first.getparent().append(more)
    data = etree.tostring(tree, encoding="UTF-8", xml_declaration=True)
    report = validate_status(data)
    assert report.valid
    started = time.monotonic()
    text = " ".join(pdftotext(readable_report(data, report, "multi.xml", "en", pdf=True), tmp_path,
                              "-raw").split())
    assert time.monotonic() - started < 60
    assert "is left out of this PDF above 4000" in text and "F300000999" not in text
