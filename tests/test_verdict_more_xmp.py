"""Issue 37, a PDF's own claim: the XMP of a Factur-X / ZUGFeRD PDF states the version of the Factur-X XML schema
(fx:Version: 1.0 for every Factur-X 1.0x and ZUGFeRD 2.x, or ZUGFeRD's 2p1, ...). A PDF whose XMP claims another
version (2.0) was called `valid` because its invoice passed the rules its BT-24 names: the report said more than was
checked. Now such a PDF is `indeterminate` with the XMP's claim named (never `valid`), its invoice still judged and
an error there still `invalid`; the XRechnung version ZUGFeRD writes there under the XRECHNUNG level is no such
claim."""
from __future__ import annotations

import pikepdf
import pytest

from conftest import CORPUS
from pipeline.check import claims, verdict
from pipeline.flows.validate_pdf import validate_pdf
from test_parse import upload
from test_verdict import _painted_html, _painted_pdf, client  # noqa: F401 - the fixture

EN16931_PDF = CORPUS / "mustangproject/library/EN16931_1_Teilrechnung.pdf"  # fx:Version 1.0, EN 16931: valid
XRECHNUNG_PDF = CORPUS / "mustangproject/validator/validXRechnung.pdf"       # level XRECHNUNG, XRechnung 1.2


def _xmp_edited(path, old: str, new: str, tmp_path, invoice: tuple[bytes, bytes] | None = None) -> bytes:
    """The PDF with its XMP text `old` replaced by `new` (and, with `invoice`, a replacement in its embedded
    invoice), saved anew by pikepdf."""
    with pikepdf.open(path) as pdf:
        text = pdf.Root.Metadata.read_bytes().decode("utf-8")
        assert text.count(old) == 1, old
        pdf.Root.Metadata.write(text.replace(old, new).encode("utf-8"))
        if invoice is not None:
            (spec,) = list(pdf.Root.Names.EmbeddedFiles.Names)[1::2]
            stream = spec.EF.F
            data = stream.read_bytes()
            assert data.count(invoice[0]) >= 1
            stream.write(data.replace(invoice[0], invoice[1], 1))
        out = tmp_path / "edited.pdf"
        pdf.save(out)
    return out.read_bytes()


def test_the_untouched_pdf_is_valid_and_names_no_claim():
    report = validate_pdf(EN16931_PDF.read_bytes())
    assert report.verdict == "valid" and report.not_judged == []


@pytest.mark.parametrize("version", ["2.0", "1.1", "3p0", "banana"])
def test_an_xmp_claiming_another_factur_x_version_is_indeterminate(client, tmp_path, version):
    data = _xmp_edited(EN16931_PDF, "<fx:Version>1.0</fx:Version>", f"<fx:Version>{version}</fx:Version>", tmp_path)
    report = upload(client, data, {}, name="invoice.pdf", path="/v1/invoice/zugferd/validate").json
    assert (report["verdict"], report["valid"], report["summary"]["errors"]) == ("indeterminate", False, 0), report
    assert [(n["code"], n["claim"]) for n in report["notJudged"]] == [(verdict.RULES_NOT_INSTALLED,
                                                                       f"fx:Version {version}")]
    note = report["notJudged"][0]
    assert f"version {version} of the Factur-X / ZUGFeRD XML schema" in note["message"]
    assert f"Version {version} des Factur-X-/ZUGFeRD-XML-Schemas" in note["messageDe"]
    # its invoice was still judged, on the rules its BT-24 names (the CEN rules), and they are listed
    assert [r["pack"] for r in report["rules"]] == ["pdf", "en16931"]
    assert report["summary"]["worstCategory"] == "indeterminate"


def test_the_reports_for_people_name_the_xmp_claim(client, tmp_path):
    data = _xmp_edited(EN16931_PDF, "<fx:Version>1.0</fx:Version>", "<fx:Version>2.0</fx:Version>", tmp_path)
    for language, said, why in (("en", "Indeterminate", "Not judged"), ("de", "Nicht beurteilbar", "Nicht beurteilt")):
        html = upload(client, data, {"metadataLanguage": language}, name="invoice.pdf",
                      path="/v1/invoice/zugferd/validate", headers={"Accept": "text/html"})
        pdf = upload(client, data, {"metadataLanguage": language}, name="invoice.pdf",
                     path="/v1/invoice/zugferd/validate", headers={"Accept": "application/pdf"})
        assert html.status_code == pdf.status_code == 200
        for text in (_painted_html(html.content), _painted_pdf(pdf.content, tmp_path)):
            assert said in text and why in text and verdict.RULES_NOT_INSTALLED in text and "fx:Version" in text


def test_an_error_in_the_invoice_still_makes_it_invalid(tmp_path):
    data = _xmp_edited(EN16931_PDF, "<fx:Version>1.0</fx:Version>", "<fx:Version>2.0</fx:Version>", tmp_path,
                       invoice=(b"<ram:TypeCode>380</ram:TypeCode>", b"<ram:TypeCode>999</ram:TypeCode>"))
    report = validate_pdf(data)
    assert report.verdict == "invalid" and "BR-CL-01" in {i.code for i in report.issues if i.severity == "ERROR"}
    assert [n.claim for n in report.not_judged] == ["fx:Version 2.0"]


@pytest.mark.parametrize("version", ["1p0", "2p0", "2p1", "2p2"])
def test_zugferds_own_spellings_of_its_versions_are_no_unknown_claim(tmp_path, version):
    """Factur-X's code list HybridDocumentVersion (BR-HYBRID-09) has them: ZUGFeRD 1.0 / 2.x, whose rules are here."""
    data = _xmp_edited(EN16931_PDF, "<fx:Version>1.0</fx:Version>", f"<fx:Version>{version}</fx:Version>", tmp_path)
    report = validate_pdf(data)
    assert report.verdict == "valid" and report.not_judged == []


def test_the_xrechnung_version_under_the_xrechnung_level_is_no_factur_x_claim(tmp_path):
    """ZUGFeRD writes the XRechnung version in fx:Version under the XRECHNUNG level (1.2, 2.1 in the real-world
    corpus); the invoice's own BT-24 says which XRechnung rules judge it, so the XMP adds no claim."""
    data = _xmp_edited(XRECHNUNG_PDF, "<fx:Version>1.0</fx:Version>", "<fx:Version>1.2</fx:Version>", tmp_path)
    report = validate_pdf(data)
    assert [n.claim for n in report.not_judged] == [
        "urn:cen.eu:en16931:2017#compliant#urn:xoev-de:kosit:standard:xrechnung_1.2"]


def test_factur_x_properties_only_in_a_namespace_of_an_unknown_version_are_a_claim():
    """`claims.of_xmp_namespaces`: the namespaces an XMP states fx:ConformanceLevel / DocumentFileName in, when none
    is one the PDF checks know (ZUGFeRD's release candidate, a later version); another vocabulary's is no claim."""
    rc = claims.of_xmp_namespaces({"urn:ferd:pdfa:invoice:rc#", "http://purl.org/dc/elements/1.1/"})
    assert (rc.code, rc.claim) == (verdict.RULES_NOT_INSTALLED, "urn:ferd:pdfa:invoice:rc#")
    assert "urn:ferd:pdfa:invoice:rc#" in rc.message and "Namensraum urn:ferd:pdfa:invoice:rc#" in rc.message_de
    assert claims.of_xmp_namespaces({"http://purl.org/dc/elements/1.1/", None}) is None
