"""A German page or report painted libxml2's English for every XSD finding ("Element 'ram:Name': This element is
not expected."): the validator's words, not an official rule text. Each XSD finding now carries its German text
(`messageDe`, the API's `message` unchanged), which German reports and the page's job list show."""
from __future__ import annotations

import re

from lxml import html as lxml_html

from conftest import SHARED
from pipeline.check.xsd_german import german
from pipeline.flows.validate_pdf import validate_pdf
from pipeline.flows.validate_xml import validate_xml
from pipeline.flows.validation_report import readable_report

PDF = SHARED / "realworld/corpus/ZUGFeRDv2/fail/MustangRE-20171118_506_ZUGFeRD1and2.pdf"
CII = SHARED / "realworld/corpus/XML-Rechnung/CII/EN16931_Einfach.cii.xml"


def _text(page: bytes) -> str:
    return " ".join(lxml_html.fromstring(page).text_content().split())


def test_a_german_report_says_the_xsd_finding_in_german():
    data = PDF.read_bytes()
    report = validate_pdf(data)
    [finding] = [i for i in report.issues if i.code == "XSD-ELEMENT-CONTENT"]
    assert finding.message.endswith("This element is not expected.")          # the API's text stays libxml2's
    assert finding.to_dict()["messageDe"].endswith("Dieses Element ist hier nicht erwartet.")
    german_page = _text(readable_report(data, report, PDF.name, "de"))
    assert "Element 'ram:Name': Dieses Element ist hier nicht erwartet." in german_page
    assert "This element is not expected" not in german_page
    assert "Element 'ram:Name': This element is not expected." in _text(readable_report(data, report, PDF.name, "en"))


def test_every_xsd_finding_of_a_broken_invoice_has_its_german_text():
    """A real invoice with an element out of place and an amount outside its type: every finding libxml2 gives has a
    German text quoting the same names and values."""
    xml = CII.read_text(encoding="utf-8")
    broken = (xml.replace("<ram:ID>471102</ram:ID>", "<ram:Name>x</ram:Name><ram:ID>471102</ram:ID>", 1)
                 .replace("<ram:LineTotalAmount>473.00<", "<ram:LineTotalAmount>viel<", 1))
    assert broken.count("<") == xml.count("<") + 2
    report = validate_xml(broken.encode(), "en16931")
    xsd = [i for i in report.issues if i.code.startswith("XSD-")]
    assert {i.code for i in xsd} == {"XSD-ELEMENT-CONTENT", "XSD-CVC-DATATYPE-VALID-1-2-1"}, report.issues
    assert [i.message for i in xsd if not i.message_de] == []
    for issue in xsd:   # what libxml2 quotes is quoted again
        assert re.findall(r"'[^']*'", issue.message) == re.findall(r"'[^']*'", issue.message_de), issue.message_de


def test_a_sentence_not_in_the_table_stays_english():
    assert german("Element 'x': Something libxml2 may say one day.") is None
    assert german("Element 'a:B', attribute 'c': The attribute 'c' is required but missing.") == \
        "Element 'a:B', Attribut 'c': Das Pflichtattribut 'c' fehlt."


def test_text_in_an_empty_element_is_said_in_german():
    """Mustang's failing MINIMUM sample: text in an element the schema defines as empty ("Character content is not
    allowed, because the content type is empty."), the one sentence of the real-world samples the table missed."""
    data = (SHARED / "realworld/mustang/validator/FAIL_zugferd_2p1_MINIMUM_Rechnung_380.xml").read_bytes()
    report = validate_xml(data, "en16931")
    xsd = [i for i in report.issues if i.code.startswith("XSD-")]
    assert "XSD-CVC-COMPLEX-TYPE-2-1" in {i.code for i in xsd}
    assert [i.message for i in xsd if not i.message_de] == []
    assert any(i.message_de.endswith("Text ist hier nicht erlaubt: der Inhalt dieses Elements ist leer.") for i in xsd)
