"""Reading a document, made cheaper without changing what it gives (issue 40, eighth session): the parties' countries
read by compiled XPath instead of lxml's ElementPath, the question whether an upload is a PDF, archive, mail or JSON
asked only of what libxml2 refused, the DOCTYPE regex run only where "<!" occurs, the depth XPath compiled once, and
KoSIT's scenario chosen by lxml on the tree already parsed instead of a chooser stylesheet in Saxon."""
from __future__ import annotations

import dataclasses
import io
import zipfile

import pytest
from conftest import CORPUS, SHARED

from pipeline.check import engine, packs, scenarios, xmlinput

DOCUMENTS = sorted(p for root in (CORPUS, SHARED / "realworld") for p in root.rglob("*.xml"))


def _reference_countries(doc) -> set[str]:
    """party_countries as lxml's ElementPath read each path (the way before): the reference."""
    paths = xmlinput.PARTY_PATHS.get(doc.report_syntax or "")
    if paths is None:
        return set()
    root = doc.tree.getroot()

    def found(path):
        return [" ".join((e.text or "").split()).upper()
                for e in root.iterfind("/".join(f"{{{ns}}}{name}" for ns, name in path))]
    countries = {text for path in paths["countries"] for text in found(path)}
    countries |= {text[:2] for path in paths["vatIds"] for text in found(path)}
    return {c for c in countries if len(c) == 2 and c.isalpha()}


def _loaded():
    for path in DOCUMENTS:
        data = path.read_bytes()
        try:
            yield path, data, xmlinput.load(data)
        except xmlinput.XmlInputError:
            continue


def test_the_parties_countries_are_those_element_path_reads_on_every_corpus_document():
    read = [(path, doc) for path, _, doc in _loaded() if doc.report_syntax]
    assert len(read) > 450  # 483 CII and UBL documents of 783 (the others: CDAR, ZUGFeRD 1.0, orders, ...)
    assert sum(bool(xmlinput.party_countries(doc)) for _, doc in read) > 450
    for path, doc in read:
        assert xmlinput.party_countries(doc) == _reference_countries(doc), path


@pytest.mark.parametrize("syntax", ["CII", "UBL"])
def test_the_parties_countries_of_every_path_with_spaces_case_and_several_ids(syntax):
    """Each of the five paths holding a value, written with spaces and in lower case, a VAT id repeated, a country
    of three letters and a VAT id starting with digits (neither a country)."""
    ns = {"CII": xmlinput.CII_NS, "UBL": xmlinput.UBL_INVOICE_NS}[syntax]
    root_name = {"CII": "CrossIndustryInvoice", "UBL": "Invoice"}[syntax]
    values = {"countries": [" de ", "fra"], "vatIds": ["at U123", "12345", "nl 1", "nl 2"]}
    xml = [f'<r:{root_name} xmlns:r="{ns}">']

    def element(path, text):
        opened = "".join(f'<n{i}:{name} xmlns:n{i}="{uri}">' for i, (uri, name) in enumerate(path))
        closed = "".join(f"</n{i}:{name}>" for i, (_, name) in reversed(list(enumerate(path))))
        return opened + text + closed
    for kind, texts in values.items():
        for path, text in zip(xmlinput.PARTY_PATHS[syntax][kind] * 2, texts):
            xml.append(element(path, text))
    xml.append(f"</r:{root_name}>")
    doc = xmlinput.load("".join(xml).encode())
    assert xmlinput.party_countries(doc) == _reference_countries(doc) == {"DE", "AT", "NL"}


def _zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("invoice.xml", b"<a/>")
    return out.getvalue()


_MAIL = b"From: billing@example.org\r\nTo: ap@example.com\r\nSubject: Rechnung\r\n\r\nHallo\r\n"
CONTAINERS = {"pdf": b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n", "pdf after spaces": b" \n%PDF-1.4\n",
              "zip": _zip(), "eml": _MAIL, "emlx": b"%d\n" % len(_MAIL) + _MAIL,
              "mbox": b"From billing@example.org Mon Jan  5 10:00:00 2026\n" + _MAIL,
              "status request": b'{"message": {}, "status": {}, "invoice": {}}',
              "invoice request": b'\xef\xbb\xbf {"invoice": {"number": "1"}}', "other json": b"[1, 2]",
              "pem cms": b"-----BEGIN PKCS7-----\nMIIB\n-----END PKCS7-----\n"}


@pytest.mark.parametrize("name", CONTAINERS)
def test_a_container_is_refused_by_the_parse_and_then_named(name):
    """Each kind the container question names is no well-formed XML, so it reaches the question after libxml2
    refused it, and the finding is the one the question gives (the message of the kind, line 1, column 1)."""
    data = CONTAINERS[name]
    said = xmlinput._container(data)
    assert said is not None
    with pytest.raises(xmlinput.XmlInputError) as refused:
        xmlinput.load(data)
    issue = refused.value.issue
    assert (issue.code, issue.message, issue.message_de) == (xmlinput.XML_MALFORMED, *said)
    assert (issue.location.line, issue.location.column) == (1, 1)


def test_no_corpus_document_that_parses_is_a_container():
    """The question moved after the parse changes nothing for a document libxml2 reads: on none of them would the
    question asked before the parse have refused it."""
    read = [(path, data) for path, data, _ in _loaded()]
    assert len(read) > 700
    for path, data in read:
        assert xmlinput._container(data) is None, path


@pytest.mark.parametrize("data", [b'<!doctype x><x/>', b'<?xml version="1.0"?>\n<!-- a -->\n<!ENTITY e "x"><x/>',
                                  '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE x><x/>'.encode("utf-16")])
def test_a_doctype_or_entity_is_still_refused_before_the_parse(data):
    with pytest.raises(xmlinput.XmlInputError) as refused:
        xmlinput.load(data)
    assert refused.value.issue.code == xmlinput.XML_DTD_FORBIDDEN


def test_a_comment_naming_a_doctype_is_read():
    """"<!" of a comment sends the document through the regex, which finds no declaration in it."""
    assert xmlinput.load(b'<?xml version="1.0"?><!-- DOCTYPE, ENTITY --><x><!--y--></x>').root_name == "x"


# ---- the KoSIT scenario chosen on the lxml tree

def _chosen():
    return scenarios.load_scenarios(packs.latest_active("xrechnung").scenarios)


def _both(chosen, data: bytes):
    """(lxml's choice, Saxon's choice) for a document, each as select_scenario makes it."""
    doc = xmlinput.load(data)
    sdoc = engine.saxon_document(doc, engine.rules_view(doc.text))
    return scenarios.select_scenario(chosen, sdoc, doc.tree), scenarios.select_scenario(chosen, sdoc)


def test_every_scenario_expression_of_the_installed_configuration_is_read_by_lxml():
    chosen = _chosen()
    assert scenarios._tests(chosen) is not None and len(scenarios._tests(chosen)) == len(chosen)


def test_lxml_chooses_the_scenario_saxon_chooses_on_every_corpus_document():
    chosen, compared, found = _chosen(), 0, set()
    for path, data, doc in _loaded():
        try:
            lxml_choice, saxon_choice = _both(chosen, data)
        except xmlinput.XmlInputError:  # Saxon refuses it (no scenario is chosen then)
            continue
        assert lxml_choice == saxon_choice, path
        compared += 1
        found.add(saxon_choice.name if saxon_choice else None)
    assert compared > 700 and len(found) == 12  # each of the 11 scenarios (782 documents: 446 none)


CII_ID = ('<rsm:CrossIndustryInvoice xmlns:rsm="urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100" '
          'xmlns:ram="urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100">'
          '<rsm:ExchangedDocumentContext><ram:GuidelineSpecifiedDocumentContextParameter>{}'
          '</ram:GuidelineSpecifiedDocumentContextParameter></rsm:ExchangedDocumentContext></rsm:CrossIndustryInvoice>')
UBL_ID = ('<{0} xmlns="urn:oasis:names:specification:ubl:schema:xsd:{0}-2" '
          'xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2">{1}</{0}>')
XR = "urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0"
CASES = {
    "cii standard": CII_ID.format(f"<ram:ID>{XR}</ram:ID>"),
    "cii in cdata and text": CII_ID.format(f"<ram:ID>urn:cen.eu:<![CDATA[en16931:2017]]>#compliant#"
                                           f"{XR.split('#', 2)[2]}</ram:ID>"),
    "cii split by a comment": CII_ID.format(f"<ram:ID>urn:cen.eu:en16931:2017<!-- c -->#compliant#"
                                            f"{XR.split('#', 2)[2]}</ram:ID>"),
    "cii with a space": CII_ID.format(f"<ram:ID> {XR}</ram:ID>"),
    "cii second id": CII_ID.format(f"<ram:ID>x</ram:ID><ram:ID>{XR}#conformant#urn:xeinkauf.de:kosit:extension:"
                                   "xrechnung_3.0</ram:ID>"),
    "cii the norm": CII_ID.format("<ram:ID>urn:cen.eu:en16931:2017</ram:ID>"),
    "cii character reference": CII_ID.format(f"<ram:ID>&#x75;rn{XR[3:]}</ram:ID>"),
    "ubl invoice": UBL_ID.format("Invoice", f"<cbc:CustomizationID>{XR}</cbc:CustomizationID>"),
    "ubl invoice cvd": UBL_ID.format("Invoice", f"<cbc:CustomizationID>{XR}#compliant#urn:xeinkauf.de:kosit:"
                                                "xrechnung:cvd_0.9</cbc:CustomizationID>"),
    "ubl credit note, element inside": UBL_ID.format(
        "CreditNote", f"<cbc:CustomizationID>{XR}<cbc:X/></cbc:CustomizationID>"),
    "ubl credit note": UBL_ID.format("CreditNote", f"<cbc:CustomizationID>{XR}</cbc:CustomizationID>"),
    "ubl invoice, element inside": UBL_ID.format("Invoice", f"<cbc:CustomizationID>urn:cen.eu:<cbc:X/>en16931:2017"
                                                            "</cbc:CustomizationID>"),
    "other root": f'<Invoice xmlns="urn:other"><ID>{XR}</ID></Invoice>',
}


@pytest.mark.parametrize("name", CASES)
def test_lxml_chooses_as_saxon_on_crafted_identifiers(name):
    lxml_choice, saxon_choice = _both(_chosen(), CASES[name].encode())
    assert lxml_choice == saxon_choice


def test_an_expression_of_another_form_leaves_the_choice_to_saxon():
    chosen = _chosen()
    other = tuple(dataclasses.replace(sc, match=f"not(not({sc.match}))") if n == 0 else sc
                  for n, sc in enumerate(chosen))
    assert scenarios._tests(other) is None
    data = CASES["cii standard"].encode()
    doc = xmlinput.load(data)
    assert scenarios.select_scenario(other, engine.saxon_document(doc), doc.tree).name == "EN16931 XRechnung (CII)"
