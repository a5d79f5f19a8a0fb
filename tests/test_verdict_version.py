"""Issue 37: a report's `version` names only the rules that judged the document. It named the endpoint's pack when
nothing ran (a 2026-edition invoice, an unreadable document) or when other rules did (an XRechnung 2.3 invoice at
/xrechnung/validate, held to the EN 16931 rules; a Factur-X EXTENDED invoice, judged by its profile's rules). And
a ZUGFeRD PDF whose XMP names another profile than its invoice (an XRechnung 1.2 invoice under "EN 16931") is
warned of, as Factur-X's hybrid rule BR-HYBRID-15 says ("SHOULD match"), not called invalid for it."""
from __future__ import annotations

import io
import re

import falcon.testing
import pikepdf
import pytest

from conftest import CORPUS, SHARED
from pipeline.cli import main
from pipeline.flows.validate_fr_ctc import validate_fr_ctc
from pipeline.flows.validate_pdf import validate_pdf
from pipeline.flows.validate_xml import validate_xml
from pipeline.service.app import create_app
from test_validate_endpoints import post

XR_CII = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml"
XR_UBL = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml"
EXTENDED_CII = CORPUS / "mustangproject/library/factur-x-extended.xml"
EN16931_PDF = CORPUS / "mustangproject/library/EN16931_1_Teilrechnung.pdf"
# a real ZUGFeRD 2.1 PDF (Mustang accepts it: ZUGFeRD corpus `correct/`) whose XMP says "EN 16931" for its XRechnung
# 1.2 invoice
XRECHNUNG_UNDER_EN16931 = (SHARED / "realworld/corpus/ZUGFeRDv2/correct/symtrax/Beispiele/EN16931/"
                           "zugferd_2p1_EN16931_Betriebskostenabrechnung_XRechnung_embedded.pdf")


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def claiming(path, gid: str) -> bytes:
    """The document with its specification identifier (BT-24) set to `gid`."""
    text = path.read_text("utf-8")
    text, n = re.subn(r"(<ram:GuidelineSpecifiedDocumentContextParameter>\s*<ram:ID>)[^<]*"
                      r"|(<cbc:CustomizationID>)[^<]*", lambda m: (m.group(1) or m.group(2)) + gid, text, count=1)
    assert n == 1
    return text.encode()


XR_23 = "urn:cen.eu:en16931:2017#compliant#urn:xoev-de:kosit:standard:xrechnung_2.3"
# (endpoint, document, verdict, version, the rule sets that ran)
CASES = {
    "2026 edition: nothing ran": ("en16931", lambda: claiming(XR_CII, "urn:cen.eu:en16931:2026"),
                                  "indeterminate", None, []),
    "2026 edition at xrechnung": ("xrechnung", lambda: claiming(XR_UBL, "urn:cen.eu:en16931:2026"),
                                  "indeterminate", None, []),
    "2026 edition at peppol": ("peppol", lambda: claiming(XR_UBL, "urn:cen.eu:en16931:2026"),
                               "indeterminate", None, []),
    "2026 edition at fr-ctc": ("fr-ctc", lambda: claiming(XR_CII, "urn:cen.eu:en16931:2026"),
                               "indeterminate", None, []),
    "XRechnung 2.3: the CEN rules ran, not XRechnung's": ("xrechnung", lambda: claiming(XR_UBL, XR_23),
                                                          "indeterminate", None, ["en16931"]),
    "XRechnung 3.0 at en16931: the CEN rules judged": ("en16931", XR_CII.read_bytes, "indeterminate", "1.3.16",
                                                       ["en16931"]),
    "XRechnung 3.0 at xrechnung": ("xrechnung", XR_CII.read_bytes, "valid", "3.0.2", ["xrechnung"]),
    # its scenario selection judged it (listed as the step `scenarios`; no XSD or Schematron of it ran)
    "no scenario: KoSIT's configuration judged": ("xrechnung", lambda: claiming(XR_UBL, "urn:cen.eu:en16931:2017 "),
                                                  "invalid", "3.0.2", ["xrechnung"]),
    "Factur-X EXTENDED: its profile's rules": ("en16931", EXTENDED_CII.read_bytes, "valid", "Factur-X 1.09 EXTENDED",
                                               ["factur-x"]),
    "not well-formed: refused before the rules": ("en16931", lambda: b"<?xml version='1.0'?><Invoice",
                                                  "invalid", None, []),
    "unknown root": ("xrechnung", lambda: b"<Order xmlns='urn:example'/>", "invalid", None, []),
}


@pytest.mark.parametrize("case", CASES)
def test_version_names_only_the_rules_that_judged(client, case):
    endpoint, document, verdict, version, ran = CASES[case]
    r = post(client, f"/v1/invoice/{endpoint}/validate", file=document())
    assert r.status_code == 200, r.text
    report = r.json
    assert (report["verdict"], report["version"]) == (verdict, version), report
    assert [x["pack"] for x in report["rules"]] == ran, report["rules"]
    if version is not None and ran:  # a version named is that of a rule set listed as having run
        assert any(version in (x["version"], f"Factur-X {x['version']} {x.get('profile')}") for x in report["rules"])


def test_a_version_not_installed_is_still_a_400_for_a_malformed_document(client):
    r = post(client, "/v1/invoice/en16931/validate", file=b"<Invoice", request='{"version": "0.9"}')
    assert r.status_code == 400 and r.json["errorCode"] == "UNSUPPORTED_VERSION"


def test_the_command_line_says_which_rules_ran(tmp_path, capsys):
    ed2026, xr23, ok = tmp_path / "ed2026.xml", tmp_path / "xr23.xml", tmp_path / "ok.xml"
    ed2026.write_bytes(claiming(XR_CII, "urn:cen.eu:en16931:2026"))
    xr23.write_bytes(claiming(XR_UBL, XR_23))
    ok.write_bytes(XR_UBL.read_bytes())
    assert main(["validate", str(ed2026), "--spec", "en16931"]) == 3
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("INDETERMINATE: ") and "(en16931: none of these rules ran, CII)" in first  # "en16931 None"
    assert main(["validate", str(ed2026), str(xr23), str(ok), "--jobs", "1"]) == 3
    rows = {line.split()[0].rsplit("/", 1)[-1]: line.split()[1:3] for line in capsys.readouterr().out.splitlines()[1:4]}
    # the rules column: what ran, not the spec the document was sent to
    assert rows == {"ed2026.xml": ["INDETERMINATE", "none"], "xr23.xml": ["INDETERMINATE", "en16931"],
                    "ok.xml": ["VALID", "xrechnung"]}


def _edited(data: bytes, level: str | None = None, invoice=None) -> bytes:
    """The PDF with its XMP fx:ConformanceLevel set to `level`, and/or its embedded invoice passed through
    `invoice` (bytes -> bytes)."""
    with pikepdf.open(io.BytesIO(data)) as pdf:
        if level:
            with pdf.open_metadata(set_pikepdf_as_editor=False, update_docinfo=False) as meta:
                keys = [k for k in meta if k.endswith("ConformanceLevel")]
                assert keys
                for key in keys:
                    meta[key] = level
        if invoice:
            embedded = pdf.attachments[next(iter(pdf.attachments))].get_file()
            embedded.obj.write(invoice(embedded.read_bytes()))
        out = io.BytesIO()
        pdf.save(out)
    return out.getvalue()


def _codes(report, severity: str) -> set[str]:
    return {i.code for i in report.issues if i.severity == severity}


def test_an_xmp_level_other_than_the_invoices_profile_is_a_warning():
    """BR-HYBRID-15 (Factur-X): fx:ConformanceLevel SHOULD match the embedded invoice's profile; Mustang does not
    compare them. The invoice's BT-24 decides its rules either way."""
    real = validate_pdf(XRECHNUNG_UNDER_EN16931.read_bytes())
    assert "XMP_FX_LEVEL_MISMATCH" in _codes(real, "WARNING") and not _codes(real, "ERROR"), real.to_dict()
    # it claims XRechnung 1.2, whose rules this service lacks: indeterminate, never invalid for its XMP, never valid
    assert real.verdict == "indeterminate" and [n.code for n in real.not_judged] == ["RULES-NOT-INSTALLED"]
    assert real.to_dict()["summary"]["worstCategory"] == "indeterminate"
    # its version names the Factur-X release whose PDF checks ran, not the XRECHNUNG profile: no XRechnung rules ran
    assert real.version == "Factur-X 1.09" and [r.pack for r in real.rules] == ["pdf", "en16931"]

    original = validate_pdf(EN16931_PDF.read_bytes())
    assert original.valid and "XMP_FX_LEVEL_MISMATCH" not in _codes(original, "WARNING")
    basic = validate_pdf(_edited(EN16931_PDF.read_bytes(), level="BASIC"))
    assert basic.valid and "XMP_FX_LEVEL_MISMATCH" in _codes(basic, "WARNING"), basic.to_dict()
    assert basic.version == original.version == "Factur-X 1.09 EN16931"  # the invoice's profile, not the XMP's
    warning = next(i for i in basic.issues if i.code == "XMP_FX_LEVEL_MISMATCH")
    assert "'BASIC'" in warning.message and "'EN 16931'" in warning.message and "BR-HYBRID-15" in warning.message
    assert [r.pack for r in basic.rules] == [r.pack for r in original.rules] == ["pdf", "en16931"]
    # a level that is no Factur-X level at all stays an error
    bogus = validate_pdf(_edited(EN16931_PDF.read_bytes(), level="PLATINUM"))
    assert "XMP_FX_CONFORMANCE_LEVEL" in _codes(bogus, "ERROR") and bogus.verdict == "invalid"


def test_a_french_pdf_names_the_fnfe_release_only_where_it_judged():
    """On fr-ctc a PDF's version was the FNFE release even when its invoice claims another edition and no French
    rule ran."""
    french = validate_fr_ctc(EN16931_PDF.read_bytes())
    assert french.version == "1.4.0.04" and "fr-ctc" in [r.pack for r in french.rules]
    other = _edited(EN16931_PDF.read_bytes(),
                    invoice=lambda xml: xml.replace(b"urn:cen.eu:en16931:2017", b"urn:cen.eu:en16931:2026"))
    report = validate_fr_ctc(other)
    assert report.verdict == "indeterminate" and [r.pack for r in report.rules] == ["pdf"], report.to_dict()
    assert report.version == "Factur-X 1.09"  # the container checks of Factur-X that ran, not the FNFE release


def test_an_invoice_without_bt24_in_a_pdf_gets_the_rules_it_gets_as_xml():
    """A PDF whose invoice states no BT-24 got FX_UNKNOWN_PROFILE alone and no rules, so its other errors stayed
    hidden; the same invoice as XML at /en16931/validate gets the CEN rules (BR-01 and whatever else they find)."""
    pdf = _edited(EN16931_PDF.read_bytes(), invoice=lambda xml: xml.replace(
        b"<ram:ID>urn:cen.eu:en16931:2017</ram:ID>", b"<ram:ID></ram:ID>", 1))
    with pikepdf.open(io.BytesIO(pdf)) as doc:
        xml = doc.attachments[next(iter(doc.attachments))].get_file().read_bytes()
    as_xml, in_pdf = validate_xml(xml, "en16931"), validate_pdf(pdf)
    assert [r.pack for r in in_pdf.rules] == ["pdf", *[r.pack for r in as_xml.rules]] == ["pdf", "en16931"]
    assert _codes(in_pdf, "ERROR") == _codes(as_xml, "ERROR") | {"FX_UNKNOWN_PROFILE"} and "BR-01" in _codes(as_xml,
                                                                                                             "ERROR")
    french = validate_fr_ctc(pdf)  # on fr-ctc: the whole FNFE chain, as for the XML, not BR-FR alone
    assert [r.pack for r in french.rules] == ["pdf", "fr-ctc", "en16931", "fr-ctc"] and "BR-01" in _codes(french,
                                                                                                          "ERROR")
