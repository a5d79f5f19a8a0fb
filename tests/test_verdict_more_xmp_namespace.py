"""Issue 37, a PDF's XMP in a Factur-X / ZUGFeRD namespace of a version the PDF checks do not know (ZUGFeRD's release
candidate `urn:ferd:pdfa:invoice:rc#`, a later Factur-X's): a claim of rules not here (`indeterminate` where the
invoice's own rules find no error), not XMP_FX_MISSING, which said that the XMP had no Factur-X properties at all."""
from __future__ import annotations

import pikepdf

from conftest import SHARED
from pipeline.check import verdict
from pipeline.flows.validate_pdf import validate_pdf
from test_parse import upload
from test_verdict import client  # noqa: F401 - the fixture
from test_verdict_more_xmp import EN16931_PDF

LATER = "urn:factur-x:pdfa:CrossIndustryDocument:invoice:2p0#"
RC_PDF = SHARED / "realworld/corpus/ZUGFeRDv1/correct/Mustangproject/MustangGnuaccountingBeispielRE-20140703_502.pdf"


def test_factur_x_properties_in_a_later_namespace_are_a_claim_not_judged(client, tmp_path):
    with pikepdf.open(EN16931_PDF) as pdf:  # the properties and their PDF/A extension schema, both moved
        text = pdf.Root.Metadata.read_bytes().decode("utf-8")
        assert text.count("urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#") == 2
        pdf.Root.Metadata.write(text.replace("urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#", LATER).encode())
        pdf.save(tmp_path / "later.pdf")
    data = (tmp_path / "later.pdf").read_bytes()
    report = upload(client, data, {}, name="invoice.pdf", path="/v1/invoice/zugferd/validate").json
    assert (report["verdict"], report["valid"], report["summary"]["errors"]) == ("indeterminate", False, 0), report
    assert [(n["code"], n["claim"]) for n in report["notJudged"]] == [(verdict.RULES_NOT_INSTALLED, LATER)]
    assert "XMP_FX_MISSING" not in {i["code"] for i in report["issues"]}
    assert [r["pack"] for r in report["rules"]] == ["pdf", "en16931"]  # its invoice judged all the same


def test_zugferds_release_candidate_is_named_as_such():
    report = validate_pdf(RC_PDF.read_bytes())
    assert "urn:ferd:pdfa:invoice:rc#" in [n.claim for n in report.not_judged]
    assert "XMP_FX_MISSING" not in {i.code for i in report.issues} and report.verdict != "valid"
