"""Issue 37, a PDF's XMP in ZUGFeRD 1.0's namespace (`urn:ferd:pdfa:CrossIndustryDocument:invoice:1p0#`, with its
PDF/A extension schema) around a Factur-X 2.x invoice: the XMP claims a ZUGFeRD 1.0 PDF (its zf:Version is 1.0 as
Factur-X's is, so nothing else showed it), whose rules this service does not have. It stood as `valid`; now it is
`indeterminate` with the namespace named, its invoice still judged on the rules its BT-24 names. A real ZUGFeRD 1.0
PDF keeps its own claim (its invoice is ZUGFeRD 1.0) and is not named twice."""
from __future__ import annotations

import pikepdf

from conftest import SHARED
from pipeline.check import claims, verdict
from pipeline.flows.validate_pdf import validate_pdf
from pipeline.flows.validation_report import readable_report
from test_parse import upload
from test_verdict import client  # noqa: F401 - the fixture
from test_verdict_more_xmp import EN16931_PDF

FACTUR_X = "urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#"
ZUGFERD1_PDF = SHARED / "realworld/corpus/ZUGFeRDv1/correct/4s4u/additional-data-sample-1.pdf"  # its XMP: zf 1.0


def _in_zugferd1_namespace(tmp_path) -> bytes:
    with pikepdf.open(EN16931_PDF) as pdf:  # the properties and their extension schema, both in ZUGFeRD 1.0's
        text = pdf.Root.Metadata.read_bytes().decode("utf-8")
        assert text.count(FACTUR_X) == 2
        pdf.Root.Metadata.write(text.replace(FACTUR_X, claims.ZUGFERD1_XMP_NS).encode("utf-8"))
        pdf.save(tmp_path / "zf1.pdf")
    return (tmp_path / "zf1.pdf").read_bytes()


def test_the_original_is_valid():
    report = validate_pdf(EN16931_PDF.read_bytes())
    assert (report.verdict, report.not_judged) == (verdict.VALID, [])


def test_zugferd1_xmp_around_a_factur_x_invoice_is_a_claim_not_judged(client, tmp_path):
    data = _in_zugferd1_namespace(tmp_path)
    report = upload(client, data, {}, name="invoice.pdf", path="/v1/invoice/zugferd/validate").json
    assert (report["verdict"], report["valid"], report["summary"]["errors"]) == ("indeterminate", False, 0), report
    (named,) = report["notJudged"]
    assert (named["code"], named["claim"]) == (verdict.RULES_NOT_INSTALLED, claims.ZUGFERD1_XMP_NS)
    assert "ZUGFeRD 1.0" in named["message"] and "ZUGFeRD 1.0" in named["messageDe"]
    assert [r["pack"] for r in report["rules"]] == ["pdf", "en16931"]  # its invoice judged all the same
    assert not {"XMP_FX_MISSING", "XMP_EXTENSION_SCHEMA_MISSING"} & {i["code"] for i in report["issues"]}
    html = readable_report(data, validate_pdf(data), "zf1.pdf", "de").decode("utf-8")
    assert "Nicht beurteilbar" in html and claims.ZUGFERD1_XMP_NS in html


def test_a_zugferd1_pdf_is_named_once_by_its_invoice():
    with pikepdf.open(ZUGFERD1_PDF) as pdf:
        assert claims.ZUGFERD1_XMP_NS in pdf.Root.Metadata.read_bytes().decode("utf-8")
    report = validate_pdf(ZUGFERD1_PDF.read_bytes())
    assert report.verdict == verdict.INDETERMINATE
    assert [n.claim for n in report.not_judged] == ["urn:ferd:CrossIndustryDocument:invoice:1p0:extended"]
