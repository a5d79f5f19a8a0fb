"""Issue 37, a document that states its specification identifier (BT-24) twice. EN 16931 has it once; CII's XSD lets
GuidelineSpecifiedDocumentContextParameter repeat (the CEN rules' CII-SR-009 and CII-SR-010, fatal, say once), UBL's
XSD refuses a second CustomizationID. The CEN stylesheets stop on two ids (RULE-ENGINE-ERROR: an error of the rules
that ran, so `invalid`, as CII-SR-009 means). Before, the second claim was dropped unsaid, and the order decided
whether any rules ran: 2017 then 2026 ran the CEN rules (`invalid`), 2026 then 2017 ran none (`indeterminate`). Now
it is judged on the claim whose rules we have whatever the order, and the other claim is named as not judged, in
the XML and the PDF routes alike."""
from __future__ import annotations

import pytest

from conftest import CORPUS
from pipeline.check import verdict
from pipeline.flows.validate_pdf import validate_pdf
from pipeline.flows.validate_xml import validate_xml
from test_parse import upload
from test_verdict import client  # noqa: F401 - the fixture
from test_verdict_more_xmp import EN16931_PDF, _xmp_edited

CII = (CORPUS / "en16931-cen/cii/examples/CII_business_example_01.xml").read_bytes()
UBL = (CORPUS / "en16931-cen/ubl/examples/ubl-tc434-example1.xml").read_bytes()
NORM, LATER = "urn:cen.eu:en16931:2017", "urn:cen.eu:en16931:2026"
PARAMETER = "<ram:GuidelineSpecifiedDocumentContextParameter><ram:ID>{}</ram:ID>" \
            "</ram:GuidelineSpecifiedDocumentContextParameter>"


def _cii(*ids: str) -> bytes:
    one = b"<ram:GuidelineSpecifiedDocumentContextParameter>\n            <ram:ID>urn:cen.eu:en16931:2017</ram:ID>\n" \
          b"        </ram:GuidelineSpecifiedDocumentContextParameter>"
    assert CII.count(one) == 1
    return CII.replace(one, "".join(PARAMETER.format(i) for i in ids).encode())


def _ubl(*ids: str) -> bytes:
    one = b"<cbc:CustomizationID>urn:cen.eu:en16931:2017</cbc:CustomizationID>"
    assert UBL.count(one) == 1
    return UBL.replace(one, "".join(f"<cbc:CustomizationID>{i}</cbc:CustomizationID>" for i in ids).encode())


def test_one_claim_is_valid():
    assert validate_xml(_cii(NORM), "en16931").verdict == verdict.VALID
    assert validate_xml(_ubl(NORM), "en16931").verdict == verdict.VALID


@pytest.mark.parametrize("ids", [(NORM, LATER), (LATER, NORM)], ids=["2017-first", "2026-first"])
def test_two_claims_in_cii_are_invalid_whatever_the_order_and_the_other_is_named(client, ids):
    report = upload(client, _cii(*ids), {}, path="/v1/invoice/en16931/validate").json
    assert (report["verdict"], report["valid"]) == ("invalid", False), report
    assert [r["pack"] for r in report["rules"]] == ["en16931"]  # the 2017 rules ran, as on 2017 first
    assert "RULE-ENGINE-ERROR" in {i["code"] for i in report["issues"] if i["severity"] == "ERROR"}
    (other,) = report["notJudged"]
    assert (other["code"], other["claim"]) == (verdict.RULES_NOT_INSTALLED, LATER)
    assert "2 times" in other["message"] and "CII-SR-009" in other["message"] and NORM in other["message"]
    assert "2-mal" in other["messageDe"] and "nicht beurteilt" in other["messageDe"]


def test_two_claims_in_ubl_are_a_format_error_and_the_other_is_named():
    report = validate_xml(_ubl(NORM, LATER), "en16931")
    assert report.verdict == verdict.INVALID
    assert "XSD-ELEMENT-CONTENT" in {i.code for i in report.issues}
    assert [(n.code, n.claim) for n in report.not_judged] == [(verdict.RULES_NOT_INSTALLED, LATER)]
    assert "one CustomizationID" in report.not_judged[0].message


def test_the_same_claim_twice_names_nothing_unjudged():
    report = validate_xml(_cii(NORM, NORM), "en16931")
    assert report.verdict == verdict.INVALID and report.not_judged == []


def test_at_the_xrechnung_endpoint_too():
    report = validate_xml(_cii(LATER, NORM), "xrechnung")
    assert report.verdict == verdict.INVALID
    assert [n.claim for n in report.not_judged] == [LATER]


def test_the_same_invoice_in_a_pdf_gets_the_same_claims(tmp_path):
    old = b"</ram:GuidelineSpecifiedDocumentContextParameter>"  # a second parameter after it (XSD-valid)
    new = old + PARAMETER.format(LATER).encode()
    report = validate_pdf(_xmp_edited(EN16931_PDF, "<fx:Version>1.0</fx:Version>", "<fx:Version>1.0</fx:Version>",
                                      tmp_path, invoice=(old, new)))
    assert report.verdict == verdict.INVALID
    assert [(n.code, n.claim) for n in report.not_judged] == [(verdict.RULES_NOT_INSTALLED, LATER)]
    assert "RULE-ENGINE-ERROR" in {i.code for i in report.issues}
    assert not {i.code for i in report.issues if i.code.startswith("XSD-")}


def test_the_ubl_syntax_version_25_under_a_2017_claim_is_the_official_rules_warning():
    """UBLVersionID 2.5 (the 2026 edition's syntax) under BT-24 `urn:cen.eu:en16931:2017`. The claim of rules is
    BT-24 (EN 16931-1's "specification identifier"), and the 2017 edition binds UBL 2.1 (CEN/TS 16931-3-2). The UBL
    2.1 XSD does not fix UBLVersionID (an IdentifierType), and the CEN rules of 2017 judge it themselves: UBL-CR-002,
    flag warning, "should not include the UBLVersionID or it should be 2.1". A document that passes the UBL 2.1 XSD
    uses UBL 2.1's elements only, and UBL's minor versions keep every earlier instance valid, so it is a UBL 2.5
    instance as well: both its claims were checked in full, and the official rules call the label a warning, not an
    error. It stays `valid` with that warning; a 2.5 element would fail the 2.1 XSD (a format error under the 2017
    claim, whose binding has none), and a 2026 BT-24 is `indeterminate` whatever UBLVersionID says."""
    def versioned(data: bytes, version: str) -> bytes:
        return data.replace(b"<cbc:CustomizationID>", f"<cbc:UBLVersionID>{version}</cbc:UBLVersionID>"
                            "<cbc:CustomizationID>".encode(), 1)
    report = validate_xml(versioned(_ubl(NORM), "2.5"), "en16931")
    assert (report.verdict, report.not_judged) == (verdict.VALID, [])
    assert [(i.severity, i.code) for i in report.issues if i.code.startswith("UBL-")] == [("WARNING", "UBL-CR-002")]
    assert validate_xml(versioned(_ubl(NORM), "2.1"), "en16931").warnings == 0
    later = validate_xml(versioned(_ubl(LATER), "2.5"), "en16931")
    assert (later.verdict, [n.claim for n in later.not_judged]) == (verdict.INDETERMINATE, [LATER])


def test_the_command_line_in_german_prints_what_was_not_judged_in_german(tmp_path, capsys):
    from pipeline.cli import main
    path = tmp_path / "zwei.xml"
    path.write_bytes(_cii(LATER, NORM))
    assert main(["validate", str(path), "--spec", "en16931", "--lang", "de"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("INVALID:")  # the first line stays for scripts
    assert "NICHT BEURTEILT RULES-NOT-INSTALLED: Das Dokument nennt seine Spezifikationskennung" in out
    assert "Angewandte Regeln: en16931 1.3.16" in out and "NOT JUDGED" not in out
    assert "Die offiziellen Regeln" in out  # the finding's German message
    assert main(["validate", str(path), "--spec", "en16931"]) == 1
    out = capsys.readouterr().out
    assert "NOT JUDGED RULES-NOT-INSTALLED: The document states" in out and "  rules: en16931" in out
