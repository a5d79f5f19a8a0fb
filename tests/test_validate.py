"""The validation engine on official documents: scenarios, custom levels, locations, versions, encodings."""
from __future__ import annotations

import re

import pytest

from conftest import CORPUS
from pipeline.check import engine, packs, verdict, xmlinput
from pipeline.flows import validate_xml as validate
from pipeline.errors import ApiError

TS = CORPUS / "xrechnung-testsuite"
UBL_STD = TS / "business-cases/standard/01.01a-INVOICE_ubl.xml"
CII_STD = TS / "business-cases/standard/01.01a-INVOICE_uncefact.xml"
UBL_CVD = TS / "technical-cases/cvd/02.01a-cvd_INVOICE_ubl.xml"
CEN_CII = CORPUS / "en16931-cen/cii/examples/CII_business_example_01.xml"
TWO_URIID = CORPUS / "mustangproject/library/Extended_fremdwaehrung.xml"


def test_xrechnung_ubl_standard_is_valid_with_its_scenario():
    out = validate.validate(UBL_STD.read_bytes(), "xrechnung")
    r = out.report
    assert out.scenario == "EN16931 XRechnung (UBL Invoice)"
    assert (r.valid, r.version, r.syntax) == (True, "3.0.2", "UBL")
    # the official XRechnung rules report BR-DE-TMP-32 with flag information -> WARNING, not an error
    assert [(i.severity, i.code) for i in r.issues] == [("WARNING", "BR-DE-TMP-32")]
    assert r.issues[0].message.startswith("[BR-DE-TMP-32]")


def test_custom_level_downgrades_cen_fatal_for_cvd():
    out = validate.validate(UBL_CVD.read_bytes(), "xrechnung")
    assert out.scenario == "EN16931 XRechnung CVD (UBL Invoice)"
    assert out.report.valid
    finding = next(i for i in out.report.issues if i.code == "BR-CL-13")
    assert finding.severity == "WARNING"
    # located on the start tag of the offending element
    lines = UBL_CVD.read_text("utf-8").splitlines()
    loc = finding.location
    assert lines[loc.line - 1][loc.column - 1:].startswith('<cbc:ItemClassificationCode listID="CVD"')
    assert finding.location.xpath.endswith("ItemClassificationCode[1]")
    # without the scenario's customLevel, CEN 1.3.16 reports it as fatal
    cen = validate.validate_xml(UBL_CVD.read_bytes(), "en16931")
    assert not cen.valid and ("ERROR", "BR-CL-13") in [(i.severity, i.code) for i in cen.issues]


def test_finding_is_located_by_line_and_column():
    data = CII_STD.read_bytes().replace(b"<ram:BuyerReference>", b"<ram:BuyerReference>   ", 1)
    text = CII_STD.read_text("utf-8")
    # remove the invoice number (BT-1): BR-02 fires on the root's ExchangedDocument
    data = text.replace("<ram:ID>123456XX</ram:ID>", "", 1).encode()
    assert data != text.encode()
    r = validate.validate_xml(data, "en16931")
    br02 = [i for i in r.issues if i.code == "BR-02"]
    assert br02 and br02[0].severity == "ERROR"
    loc = br02[0].location
    assert loc.xpath and loc.line and loc.column
    # line and column where the start tag of the node the finding is about begins (here: the root)
    assert text.splitlines()[loc.line - 1][loc.column - 1:].startswith("<rsm:CrossIndustryInvoice")


def test_locations_in_a_one_line_document():
    """Minified documents: the column tells the elements of the single line apart."""
    from lxml import etree
    tree = etree.fromstring(UBL_STD.read_bytes())
    for el in tree.iter():
        el.tail = None
        if len(el):
            el.text = None
    text = etree.tostring(tree, encoding="unicode").replace("<cbc:ID>123456XX</cbc:ID>", "", 1)
    assert "\n" not in text
    data = ('<?xml version="1.0" encoding="UTF-8"?>' + text).encode()
    r = validate.validate_xml(data, "xrechnung")
    located = [i for i in r.issues if i.code in ("BR-02", "BR-DE-TMP-32")]
    assert {i.code for i in located} == {"BR-02", "BR-DE-TMP-32"}
    for issue in located:
        assert issue.location.line == 1
        assert data.decode()[issue.location.column - 1:].startswith("<Invoice") or \
            data.decode()[issue.location.column - 1:].startswith("<ubl:Invoice")


def test_a_finding_per_line_of_a_long_one_line_document_points_at_each_line():
    """A one-line invoice of 300 lines (generated, its indentation taken out), each with an unknown unit code: every
    BR-CL-23 finding points at its own line's BilledQuantity start tag (a long line is located by counting start
    tags, once for all findings; searching the line per finding was quadratic)."""
    import json
    import re

    from lxml import etree

    from pipeline.check.xmlinput import LONG_LINE
    from pipeline.flows.generate_xml import generate_xml
    from test_zugferd_samples import invoice_request

    indented = generate_xml(json.dumps(dict(invoice_request(300), config={"syntax": "CII"})).encode(), "en16931")[0]
    xml = etree.tostring(etree.fromstring(indented, etree.XMLParser(remove_blank_text=True)), xml_declaration=True,
                         encoding="UTF-8")
    data = re.sub(rb'unitCode="[A-Z0-9]+"', b'unitCode="QQQQ"', xml)
    text = data.decode()
    assert text.count("\n") <= 1 and len(text) > 50 * LONG_LINE
    found = [i.location for i in validate.validate_xml(data, "en16931").issues if i.code == "BR-CL-23"]
    assert len(found) == 300
    lines = text.split("\n")
    offsets = [sum(len(x) + 1 for x in lines[:loc.line - 1]) + loc.column - 1 for loc in found]
    assert all(text.startswith("<ram:BilledQuantity", at) for at in offsets)
    assert sorted(offsets) == [m.start() for m in re.finditer("<ram:BilledQuantity", text)]


def test_xsd_findings_carry_line_and_column():
    text = UBL_STD.read_text("utf-8").replace("<cbc:IssueDate>", "<cbc:Bogus>x</cbc:Bogus><cbc:IssueDate>", 1)
    r = validate.validate_xml(text.encode(), "xrechnung")
    xsd = [i for i in r.issues if i.code.startswith("XSD-")]
    assert not r.valid and xsd
    assert "Bogus" in xsd[0].message and xsd[0].location.line == 8
    # libxml2 gives no column for schema errors: the finding's path locates the start tag
    assert text.splitlines()[7][xsd[0].location.column - 1:].startswith("<cbc:Bogus>")


def test_en16931_cii_example_is_valid():
    r = validate.validate_xml(CEN_CII.read_bytes(), "en16931")
    assert (r.valid, r.version, r.syntax, r.errors) == (True, "1.3.16", "CII", 0)


def test_document_claiming_nothing_matches_no_scenario_and_is_invalid():
    data = re.sub(rb"<ram:GuidelineSpecifiedDocumentContextParameter>.*?</ram:GuidelineSpecifiedDocumentContext"
                  rb"Parameter>", b"", CII_STD.read_bytes(), count=1, flags=re.S)
    r = validate.validate_xml(data, "xrechnung")
    assert r.verdict == "invalid" and not r.valid and [i.code for i in r.issues] == [engine.NO_SCENARIO]


def test_document_claiming_a_cius_we_do_not_know_is_indeterminate_after_the_en16931_rules():
    """KoSIT's configuration has no scenario for it: not judged as what it claims, held to the EN 16931 rules."""
    data = CII_STD.read_bytes().replace(b"urn:xeinkauf.de:kosit:xrechnung_3.0", b"urn:example:other", 1)
    r = validate.validate_xml(data, "xrechnung")
    assert (r.verdict, r.valid, r.errors) == ("indeterminate", False, 0)
    assert [n.code for n in r.not_judged] == [verdict.RULES_NOT_INSTALLED]
    assert "urn:example:other" in r.not_judged[0].claim
    assert [(x.pack, x.version) for x in r.rules] == [("en16931", "1.3.16")]
    broken = data.replace(b"<ram:TypeCode>380</ram:TypeCode>", b"<ram:TypeCode>999</ram:TypeCode>", 1)
    r = validate.validate_xml(broken, "xrechnung")
    assert r.verdict == "invalid" and "BR-CL-01" in {i.code for i in r.issues if i.severity == "ERROR"}


def test_dynamic_error_in_official_rules_is_a_finding_and_the_engine_stays_healthy():
    r = validate.validate_xml(TWO_URIID.read_bytes(), "en16931")
    stopped = [i for i in r.issues if i.code == engine.RULE_ENGINE_ERROR]
    assert not r.valid and stopped and "normalize-space" in stopped[0].message
    assert validate.validate_xml(CEN_CII.read_bytes(), "en16931").valid  # next document is fine


def test_unsupported_version_is_a_400():
    with pytest.raises(ApiError) as exc:
        validate.validate_xml(UBL_STD.read_bytes(), "xrechnung", version="9.9")
    assert exc.value.http_status == 400 and exc.value.error_code == "UNSUPPORTED_VERSION"
    with pytest.raises(ApiError) as exc:
        validate.validate_xml(UBL_STD.read_bytes(), "xrechnung", version="1.3.16")  # an en16931 version
    assert exc.value.http_status == 400
    assert validate.validate_xml(UBL_STD.read_bytes(), "xrechnung", version="3.0.2").valid


def test_non_utf8_encodings_are_decoded_as_declared():
    text = UBL_STD.read_text("utf-8")
    assert text.startswith("<?xml")
    body = text.split("?>", 1)[1]
    for enc, decl in (("iso-8859-1", "ISO-8859-1"), ("utf-16", "UTF-16")):
        data = f'<?xml version="1.0" encoding="{decl}"?>{body}'.encode(enc, errors="xmlcharrefreplace")
        r = validate.validate_xml(data, "xrechnung")
        assert r.valid, (enc, [i.to_dict() for i in r.issues if i.severity == "ERROR"])


def test_run_checks_primitive_with_custom_levels():
    pack = packs.latest_active("en16931", "UBL-Invoice")
    entry = pack.rules_for("UBL-Invoice")
    doc = xmlinput.load(UBL_CVD.read_bytes())
    plain = engine.run_checks(doc, entry.xsd, entry.stylesheets)
    assert ("ERROR", "BR-CL-13") in [(i.severity, i.code) for i in plain]
    lowered = engine.run_checks(doc, entry.xsd, entry.stylesheets, {"BR-CL-13": "information"})
    assert ("WARNING", "BR-CL-13") in [(i.severity, i.code) for i in lowered]
    assert not [i for i in lowered if i.severity == "ERROR"]


WITH_ATTACHMENTS = sorted(p for p in CORPUS.rglob("*.xml") if b"BinaryObject" in p.read_bytes())


@pytest.mark.parametrize("source", WITH_ATTACHMENTS, ids=[p.name for p in WITH_ATTACHMENTS])
def test_the_rules_read_attachments_as_a_stand_in_with_the_same_findings(source, monkeypatch):
    """engine.rules_view hands Saxon a short stand-in for an attached document's base64, and the XSD pass validates
    the tree with it when the content is surely valid base64: every finding (code, severity, text, location) is
    the same as with the content itself, on every official sample that attaches one."""
    from pipeline.check import engine

    data = source.read_bytes()
    for spec in ("xrechnung", "en16931"):
        fast = validate.validate_xml(data, spec)
        monkeypatch.setattr(engine, "STAND_IN_FROM", 10 ** 12)
        full = validate.validate_xml(data, spec)
        monkeypatch.undo()
        assert [i.to_dict() for i in fast.issues] == [i.to_dict() for i in full.issues]


def test_base64_we_call_surely_valid_is_valid_to_libxml2():
    """engine.surely_base64 never calls valid what libxml2's xs:base64Binary check refuses (then the XSD pass would
    lose a finding): random encodings, wrapped, padded, and each of them damaged in one place."""
    import base64
    import random

    from lxml import etree as et

    from pipeline.check import engine

    schema = et.XMLSchema(et.fromstring(
        b'<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="b" type="xs:base64Binary"/>'
        b'</xs:schema>'))
    rnd = random.Random(40)
    samples = ["", "AQ==", "AB==", "ABE=", "ABC=", "A===", "====", "AAAA=", "AA AA", "A\tQ\r\n==", "AQ= =", "AQ==A"]
    for n in range(200):
        text = base64.b64encode(rnd.randbytes(n % 40)).decode()
        if n % 3 == 0:
            text = "\n".join(text[i:i + 7] for i in range(0, len(text), 7))
        samples.append(text)
        at = rnd.randrange(len(text) + 1)
        samples.append(text[:at] + rnd.choice("=A-_ \u00e4+/\n") + text[at:])
    called_valid = 0
    for text in samples:
        element = et.Element("b")
        element.text = text
        if engine.surely_base64(text):
            called_valid += 1
            assert schema.validate(et.ElementTree(element)), repr(text)
    assert called_valid > 200  # and the check says something


def test_an_attachment_that_is_no_base64_keeps_its_xsd_finding():
    from pipeline.check import engine

    data = (TS / "business-cases/standard/01.15a-INVOICE_uncefact.xml").read_bytes()
    broken = re.sub(rb"(<ram:AttachmentBinaryObject[^>]*>)([A-Za-z0-9+/]{100})", rb"\1\2==", data, count=1)
    assert broken != data
    codes = [i.code for i in validate.validate_xml(broken, "en16931").issues]
    assert any(c.startswith(engine.XSD_PREFIX) for c in codes), codes


def test_the_stand_in_keeps_empty_and_small_contents_and_whitespace():
    from pipeline.check import engine

    big = "Q" * 5000
    text = (f"<r><cbc:EmbeddedDocumentBinaryObject mimeCode='x'>\n  {big}\n</cbc:EmbeddedDocumentBinaryObject>"
            "<ram:AttachmentBinaryObject/><ram:AttachmentBinaryObject>QUFB</ram:AttachmentBinaryObject>"
            f"<ram:Other>{big}</ram:Other></r>")
    view = engine.rules_view(text)
    assert "<cbc:EmbeddedDocumentBinaryObject mimeCode='x'>\n  AAAA\n</cbc:EmbeddedDocumentBinaryObject>" in view
    assert "<ram:AttachmentBinaryObject/><ram:AttachmentBinaryObject>QUFB</ram:AttachmentBinaryObject>" in view
    assert f"<ram:Other>{big}</ram:Other>" in view


def test_content_checks_in_validation_equal_their_own_run():
    """The rules read a document with an attachment as a stand-in (`rules_view` hands back the text itself
    otherwise); the content checks read lxml's tree of the document as sent, so validate() reports what they find
    on their own."""
    samples = [CII_STD, UBL_STD, TS / "business-cases/standard/01.15a-INVOICE_uncefact.xml",
               CORPUS / "en16931-cen/cii/examples/CII_business_example_02.xml"]
    found = 0
    for path in samples:
        data = path.read_bytes()
        doc = xmlinput.load(data)
        shared = engine.rules_view(doc.text) is doc.text
        assert shared is (b"BinaryObject" not in data or len(data) < 8192), path.name
        own = [i.to_dict() for i in validate.content_issues(doc, True)]
        report = validate.validate_xml(data, "xrechnung", content_checks=True)
        assert [i.to_dict() for i in report.issues if i.code.startswith("CHECK-")] == own
        found += len(own)
    assert found  # the samples carry content findings, so equality says something


@pytest.mark.parametrize("raised, shown", [
    ('Type error at char 48 in expression in xsl:when/@test on line 1068 column 315 of EN16931-CII-validation.xslt:\n'
     '  XPTY0004  A sequence of more than one item { ("0204", "EM") } is not allowed as the first\n  argument of '
     'fn:normalize-space()\n  In template rule with match="x" on line 868 of E.xslt\n     invoked by xsl:apply-templates'
     ' at file:///srv/rules/en16931/1.3.16/cii/xslt/EN16931-CII-validation.xslt#185\nDuring lazy evaluation of '
     'xsl:document on line 5 of file:///srv/app/',
     'A sequence of more than one item { ("0204", "EM") } is not allowed as the first argument of fn:normalize-space()'),
    ('Error at char 22 in expression in xsl:variable/@select on line 48 column 78 of BR-FR-Flux2-Schematron-UBL.xslt: '
     'FORG0001 Cannot convert string "" to xs:decimal: no digits in value In template rule with match="a" on line 1209',
     'Cannot convert string "" to xs:decimal: no digits in value'),
    (' A sequence of more than one item is not allowed as the first argument of fn:string() (<ram:URIID>, <ram:URIID>)',
     'A sequence of more than one item is not allowed as the first argument of fn:string() (<ram:URIID>, <ram:URIID>)'),
])
def test_a_dynamic_error_is_reported_by_its_message_alone(raised, shown):
    """SaxonC 12 words a dynamic error with where it happened, paths of this server's files included; SaxonC 13
    gives the message alone (the last case): the report shows the message alone with either."""
    assert engine.saxon_message(Exception(raised)) == shown
