"""Issue 37, found by sending every Factur-X / ZUGFeRD PDF of ../shared/corpus and realworld as XML and as PDF: the
invoice of ZUGFeRD's release candidate (2013/14, before 1.0: a UN/CEFACT CBFBUY Invoice stating
`urn:ferd:invoice:rc:comfort`) was an unknown document type, a format error (`invalid`), as XML, and FX_NOT_CII
inside its PDF: a ZUGFeRD version whose rules this service does not have judged as if it were a broken invoice. It
is a claim of rules not here now, named, with no rules run, the same as XML and inside the PDF."""
from __future__ import annotations

import json

import pytest

from conftest import SHARED
from pipeline.check import verdict
from pipeline.flows.validate_pdf import validate_pdf
from pipeline.flows.validate_xml import validate_xml
from pipeline.pdf import checks
from test_zugferd_validate import PDF_SIDE

RC_PDF = SHARED / "realworld/corpus/ZUGFeRDv1/correct/Mustangproject/MustangGnuaccountingBeispielRE-20140519_499.pdf"
RC_ID = "urn:ferd:invoice:rc:comfort"


def rc_xml() -> bytes:
    xml = checks.inspect(RC_PDF.read_bytes(), validate_xml=False, check_pdfa=False).xml
    assert b'xmlns:rsm="urn:un:unece:uncefact:data:standard:CBFBUY:5"' in xml and RC_ID.encode() in xml
    return xml


@pytest.mark.parametrize("endpoint", ["en16931", "xrechnung", "peppol", "fr-ctc"])
def test_a_release_candidate_invoice_is_a_claim_of_rules_not_here_not_a_format_error(endpoint):
    report = validate_xml(rc_xml(), endpoint)
    assert (report.verdict, report.valid, report.issues, report.rules) == (verdict.INDETERMINATE, False, [], [])
    [reason] = report.not_judged
    assert (reason.code, reason.claim) == (verdict.RULES_NOT_INSTALLED, RC_ID)
    assert "claims the release candidate of ZUGFeRD 1.0 (urn:ferd:invoice:rc:comfort)" in reason.message
    assert "auf den Release Candidate von ZUGFeRD 1.0" in reason.message_de


def test_the_release_candidate_gets_the_same_rules_and_findings_as_xml_and_inside_its_pdf():
    as_xml, in_pdf = validate_xml(rc_xml(), "en16931"), validate_pdf(RC_PDF.read_bytes())

    def findings(report):
        return sorted(json.dumps(i.to_dict(), sort_keys=True) for i in report.issues if not i.code.startswith(PDF_SIDE))

    assert "FX_NOT_CII" not in {i.code for i in in_pdf.issues}
    assert [r.pack for r in in_pdf.rules] == ["pdf"] and as_xml.rules == []
    assert findings(in_pdf) == findings(as_xml) == []
    assert RC_ID in [n.claim for n in in_pdf.not_judged]
    # (the PDF itself breaks PDF/A-3: an XMP namespace it does not permit; that error stands)
    assert in_pdf.verdict == verdict.INVALID


def test_another_root_of_that_family_stays_an_unknown_document_type():
    other = rc_xml().replace(b"standard:CBFBUY:5", b"standard:CBFBUY:6")
    report = validate_xml(other, "en16931")
    assert report.verdict == verdict.INVALID and [i.code for i in report.issues] == ["XML-UNKNOWN-ROOT"]
