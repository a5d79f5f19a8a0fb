"""A German report painted RULE-ENGINE-ERROR in English ("The official rules (...) stopped with a dynamic error on this
document: A sequence of more than one item ..."): the sentence is ours and Saxon's words are the engine's, neither an
official rule text. The finding now carries its German (`messageDe`); the API's `message` stays as it was."""
from __future__ import annotations

from lxml import html as lxml_html

from conftest import CORPUS
from pipeline.check import engine
from pipeline.check.xsd_german import rule_engine_error
from pipeline.flows.validate_xml import validate_xml
from pipeline.flows.validation_report import readable_report
from test_render_page import pdftotext

# Mustang's sample with two URIIDs on a party: the CEN CII stylesheet stops with XPTY0004 (bench/README.md)
TWO_URIID = CORPUS / "mustangproject/library/Extended_fremdwaehrung.xml"


def _painted(page: bytes) -> str:
    return " ".join(lxml_html.fromstring(page).text_content().split())


def test_a_german_report_says_why_the_official_rules_stopped_in_german(tmp_path):
    data = TWO_URIID.read_bytes()
    report = validate_xml(data, "en16931")
    [stopped] = [i for i in report.issues if i.code == engine.RULE_ENGINE_ERROR]
    assert stopped.message.startswith("The official rules (FACTUR-X_EXTENDED.xslt) stopped")  # the API's text
    german = stopped.to_dict()["messageDe"]
    assert german == ('Die offiziellen Regeln (FACTUR-X_EXTENDED.xslt) brachen bei diesem Dokument mit einem '
                      'Laufzeitfehler ab: Eine Folge aus mehr als einem Wert { ("0204", "EM") } ist als erstes '
                      'Argument von fn:normalize-space() nicht erlaubt')
    page = _painted(readable_report(data, report, TWO_URIID.name, "de"))
    assert german in page and "stopped with" not in page and "sequence" not in page
    pdf = " ".join(pdftotext(readable_report(data, report, TWO_URIID.name, "de", pdf=True), tmp_path, "-raw").split())
    assert "brachen bei diesem Dokument mit einem Laufzeitfehler ab" in pdf and "stopped with" not in pdf
    assert "stopped with a dynamic error" in _painted(readable_report(data, report, TWO_URIID.name, "en"))


def test_saxons_other_dynamic_errors_in_german():
    """What SaxonC 13 and the French rules raise (tests/test_validate.py): the quoted values and names unchanged."""
    assert rule_engine_error("A.xslt", "A sequence of more than one item is not allowed as the first argument of "
                             "fn:string() (<ram:URIID>, <ram:URIID>)").endswith(
        "ab: Eine Folge aus mehr als einem Wert ist als erstes Argument von fn:string() nicht erlaubt "
        "(<ram:URIID>, <ram:URIID>)")
    assert rule_engine_error("B.xslt", 'Cannot convert string "" to xs:decimal: no digits in value').endswith(
        'ab: Die Zeichenkette "" lässt sich nicht in xs:decimal umwandeln: der Wert enthält keine Ziffern')
    # a sentence not in the table: our sentence in German, Saxon's quoted as it came
    assert rule_engine_error("C.xslt", "Something new") == \
        "Die offiziellen Regeln (C.xslt) brachen bei diesem Dokument mit einem Laufzeitfehler ab; Saxon meldet: " \
        "Something new"
