"""Issue 38 item 4: the "no error" sentence named the German BMF letter of 15 October 2025 on every valid invoice,
also on a UK-to-Sweden Peppol invoice that German VAT law does not govern. There it now says that no error was
found, without the letter; an invoice with a party in Germany keeps the letter's sentence. The report for people
says the same sentence."""
from __future__ import annotations

from lxml import html as lxml_html

from conftest import CORPUS
from pipeline.check import categories
from pipeline.flows.validate_xml import validate_xml
from pipeline.flows.validation_report import readable_report

PEPPOL_GB_SE = CORPUS / "peppol/2026.5/billing/base-example.xml"  # seller in the UK, buyer in Sweden
XRECHNUNG_DE = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml"


def _sentence(page: bytes) -> str:
    root = lxml_html.fromstring(page)
    return root.xpath("//section[contains(@class, 'verdict')]/p[@class='meaning']")[0].text_content()


def test_no_error_abroad_says_so_without_the_german_letter():
    data = PEPPOL_GB_SE.read_bytes()
    report = validate_xml(data, "peppol", content_checks=True)
    assert report.verdict == "valid" and report.german_law is False and report.warnings >= 1
    meaning = report.to_dict()["summary"]["meaning"]
    assert meaning["en"].startswith("No error:") and meaning["de"].startswith("Kein Fehler:")
    assert all("BMF" not in text for text in meaning.values()), meaning
    assert _sentence(readable_report(data, report, "x.xml", "de")) == meaning["de"]
    assert _sentence(readable_report(data, report, "x.xml", "en")) == meaning["en"]


def test_no_error_in_germany_keeps_the_letter():
    report = validate_xml(XRECHNUNG_DE.read_bytes(), "xrechnung", content_checks=True)
    assert report.verdict == "valid" and report.german_law is True
    assert report.to_dict()["summary"]["meaning"] == {"en": categories.MEANING["en"][None],
                                                      "de": categories.MEANING["de"][None]}
