"""Issue 37: a specification identifier (BT-24) whose text a comment or processing instruction splits. XSD and the
official rules read it whole (XPath's string value); we read only the text before the first split (lxml's `.text`),
and KoSIT's CII match compares each text node on its own (`ram:ID/text() = '...'`). So
`urn:cen.eu:en16931:2017<!---->#compliant#...xrechnung_3.0` was taken for the norm's own id: `valid` at
/en16931/validate on the CEN rules although it claims XRechnung, and `valid` at /xrechnung/validate on KoSIT's plain
EN 16931 scenario, whose CEN rules alone ran (no BR-DE); an XRechnung 2.3 claim so written was `valid` on the 3.0
rules. The claim is now read whole, and a KoSIT scenario chosen for another identifier than the claim's leaves the
document `indeterminate` with the scenario named."""
from __future__ import annotations

import pytest

from conftest import CORPUS
from pipeline.flows.validate_xml import validate_xml

XR_CII = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml"  # valid XRechnung 3.0
XR_ID = b"urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0"


def written(gid: bytes) -> bytes:
    data = XR_CII.read_bytes()
    assert data.count(XR_ID) == 1
    return data.replace(XR_ID, gid)


def test_the_unsplit_xrechnung_invoice_is_valid_on_its_scenario():
    report = validate_xml(written(XR_ID), "xrechnung")
    assert (report.verdict, [r.scenario for r in report.rules], report.not_judged) == (
        "valid", ["EN16931 XRechnung (CII)"], [])


@pytest.mark.parametrize("split", [b"<!---->", b"<?pi here?>", b"<!-- a note -->"])
def test_an_xrechnung_id_split_after_the_norm_is_not_judged_on_the_plain_en16931_scenario(split):
    gid = XR_ID.replace(b"2017#", b"2017" + split + b"#")
    report = validate_xml(written(gid), "xrechnung")
    assert (report.valid, report.verdict) == (False, "indeterminate")
    assert [r.scenario for r in report.rules] == ["EN16931 (CII)"]  # what KoSIT's selection ran, said
    [reason] = [n.to_dict() for n in report.not_judged]
    assert reason["code"] == "CLAIM-NOT-COVERED" and reason["claim"] == XR_ID.decode()
    assert "the KoSIT scenario that judged it, 'EN16931 (CII)', is the one for urn:cen.eu:en16931:2017:" in \
        reason["message"], reason["message"]
    assert "KoSIT-Szenario" in reason["messageDe"]
    # at /en16931/validate the claim is XRechnung's, which those rules do not cover
    plain = validate_xml(written(gid), "en16931")
    assert plain.verdict == "indeterminate" and [n.code for n in plain.not_judged] == ["CLAIM-NOT-COVERED"]


def test_an_xrechnung_extension_id_split_after_the_standard_is_not_judged_as_the_standard():
    gid = XR_ID + b"<?x?>#conformant#urn:xeinkauf.de:kosit:extension:xrechnung_3.0"
    report = validate_xml(written(gid), "xrechnung")
    assert report.verdict == "indeterminate" and [r.scenario for r in report.rules] == ["EN16931 XRechnung (CII)"]
    assert [n.code for n in report.not_judged] == ["CLAIM-NOT-COVERED"]


@pytest.mark.parametrize("spec", ["xrechnung", "en16931"])
def test_an_xrechnung_2_3_claim_split_after_the_norm_is_rules_not_installed(spec):
    gid = b"urn:cen.eu:en16931:2017<!---->#compliant#urn:xoev-de:kosit:standard:xrechnung_2.3"
    report = validate_xml(written(gid), spec)
    assert report.verdict == "indeterminate", report.to_dict()
    [reason] = report.not_judged
    assert (reason.code, reason.claim) == ("RULES-NOT-INSTALLED", gid.decode().replace("<!---->", ""))
    assert [r.pack for r in report.rules] == ["en16931"]  # held to the CEN rules it builds on
