"""Issue 37: a report never claims more than was checked. Documents that claim rules this service does not have, and
a PDF whose PDF/A check cannot complete, are `indeterminate` (never `valid`) in the JSON report, the reports for
people (HTML, PDF: what is painted) and the command line, with the rules that did run listed; the same Factur-X
invoice gets the same rules and findings as XML and inside a PDF."""
from __future__ import annotations

import json
import subprocess

import falcon.testing
import pytest

from cdar_cases import official_findings  # the official stylesheet alone, read as SVRL
from conftest import CORPUS, RULES_SOURCE
from pipeline.check import verdict
from pipeline.flows.validate_pdf import validate_pdf
from pipeline.flows.validate_xml import validate_xml
from pipeline.pdf import checks
from pipeline.service.app import create_app
from test_parse import upload
from test_zugferd_validate import PDF_SIDE

CEN_CII = CORPUS / "en16931-cen/cii/examples/CII_example1.xml"
XR_CII = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml"
ZUGFERD1_XML = CORPUS / "mustangproject/validator/validV1.xml"
ZUGFERD1_PDF = CORPUS / "mustangproject/library/zugferd_invoice.pdf"
EN16931_PDF = CORPUS / "horstoeko-zugferd/assets/pdf_zf_en16931_1.pdf"


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def edition_2026() -> bytes:
    """A CEN example claiming EN 16931-1:2026 (`urn:cen.eu:en16931:2026`), whose rules are not published yet."""
    data = CEN_CII.read_bytes()
    assert data.count(b"<ram:ID>urn:cen.eu:en16931:2017</ram:ID>") == 1
    return data.replace(b"<ram:ID>urn:cen.eu:en16931:2017</ram:ID>", b"<ram:ID>urn:cen.eu:en16931:2026</ram:ID>")


def xrechnung_40() -> bytes:
    """An XRechnung testsuite invoice labelled XRechnung 4.0 (announced, not backward compatible)."""
    return XR_CII.read_bytes().replace(b"urn:xeinkauf.de:kosit:xrechnung_3.0", b"urn:xeinkauf.de:kosit:xrechnung_4.0")


# (case, endpoint, document, what it claims, the rules that ran)
CASES = [
    ("EN 16931:2026", "en16931", edition_2026, "urn:cen.eu:en16931:2026", []),
    ("XRechnung 4.0", "xrechnung", xrechnung_40,
     "urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_4.0", ["en16931"]),
    ("ZUGFeRD 1.0 XML", "en16931", ZUGFERD1_XML.read_bytes, "urn:ferd:CrossIndustryDocument:invoice:1p0:extended",
     ["zugferd-1.0"]),
    ("ZUGFeRD 1.0 PDF", "zugferd", ZUGFERD1_PDF.read_bytes, "urn:ferd:CrossIndustryDocument:invoice:1p0:basic",
     ["pdf", "zugferd-1.0"]),
]


@pytest.mark.parametrize("case, endpoint, document, claim, ran", CASES, ids=[c[0] for c in CASES])
def test_a_claim_of_rules_we_do_not_have_is_indeterminate_in_json(client, case, endpoint, document, claim, ran):
    report = upload(client, document(), {}, path=f"/v1/invoice/{endpoint}/validate").json
    assert (report["verdict"], report["valid"], report["summary"]["errors"]) == ("indeterminate", False, 0), report
    assert [(n["code"], n["claim"]) for n in report["notJudged"]] == [(verdict.RULES_NOT_INSTALLED, claim)]
    assert [r["pack"] for r in report["rules"]] == ran
    # the BMF class and the sentence say what it means for the receiver, in English and German
    assert report["summary"]["worstCategory"] == "indeterminate"
    assert report["summary"]["meaning"] in (verdict.MEANING, verdict.MEANING_ABROAD)  # (BMF: seller or buyer in DE)


def test_before_issue_37_the_2026_edition_was_valid_on_the_2017_rules():
    """What the issue reported: the 2017 rules find nothing wrong with the 2026-labelled example, so any verdict
    from them would be `valid`; now they do not judge it."""
    assert validate_xml(CEN_CII.read_bytes(), "en16931").valid
    report = validate_xml(edition_2026(), "en16931")
    assert report.verdict == "indeterminate" and report.rules == [] and report.issues == []
    assert "EN 16931 edition 2026" in report.not_judged[0].message


def test_errors_on_the_rules_that_ran_still_make_it_invalid():
    """XRechnung 4.0 on EN 16931:2017: the CEN rules run; their error stands (BR-CL-01: a wrong type code)."""
    broken = xrechnung_40().replace(b"<ram:TypeCode>380</ram:TypeCode>", b"<ram:TypeCode>999</ram:TypeCode>", 1)
    report = validate_xml(broken, "xrechnung")
    assert report.verdict == "invalid" and "BR-CL-01" in {i.code for i in report.issues if i.severity == "ERROR"}
    assert report.not_judged and report.worst_category == "business-rule"


@pytest.fixture(scope="module")
def own_pdf(client) -> bytes:
    from test_zugferd_samples import invoice_request
    resp = client.simulate_post("/v1/invoice/zugferd", body=json.dumps(invoice_request(2, "EN16931", "en")),
                                headers={"Content-Type": "application/json"})
    assert resp.status_code == 200, resp.text
    return resp.content


def test_a_pdf_whose_pdfa_check_cannot_complete_is_indeterminate(client, own_pdf, monkeypatch):
    """The PDF/A-3 walk stopped by its time limit: the file is not confirmed as PDF/A-3, so it is not valid,
    although its invoice is (judged on the CEN rules, listed)."""
    assert upload(client, own_pdf, {}, path="/v1/invoice/zugferd/validate").json["verdict"] == "valid"
    monkeypatch.setattr(checks, "PDFA_CHECK_SECONDS", 0.001)
    report = upload(client, own_pdf, {}, path="/v1/invoice/zugferd/validate").json
    assert (report["verdict"], report["valid"], report["summary"]["errors"]) == ("indeterminate", False, 0)
    assert [n["code"] for n in report["notJudged"]] == ["PDFA_CHECK_TIMEOUT"]
    assert [r["pack"] for r in report["rules"]] == ["pdf", "en16931"]
    assert "pdfa" not in [s["step"] for s in report["rules"][0]["steps"]]  # the walk did not run to its end


def _painted_pdf(data: bytes, tmp_path) -> str:
    path = tmp_path / "report.pdf"
    path.write_bytes(data)
    return " ".join(subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True,
                                   check=True).stdout.split())


def _painted_html(data: bytes) -> str:
    from lxml import html
    return " ".join(html.fromstring(data).text_content().split())


@pytest.mark.parametrize("case, endpoint, document, claim, ran", CASES, ids=[c[0] for c in CASES])
def test_the_reports_for_people_say_indeterminate_why_and_what_ran(client, tmp_path, case, endpoint, document, claim,
                                                                    ran):
    path = f"/v1/invoice/{endpoint}/validate"
    for language, said, why, rules in (("en", "Indeterminate", "Not judged", "Rules applied"),
                                       ("de", "Nicht beurteilbar", "Nicht beurteilt", "Angewandte Regeln")):
        html = upload(client, document(), {"metadataLanguage": language}, path=path,
                      headers={"Accept": "text/html"})
        pdf = upload(client, document(), {"metadataLanguage": language}, path=path,
                     headers={"Accept": "application/pdf"})
        assert html.status_code == pdf.status_code == 200
        for text in (_painted_html(html.content), _painted_pdf(pdf.content, tmp_path)):
            assert said in text and why in text and verdict.RULES_NOT_INSTALLED in text and rules in text
            assert claim[:40] in text.replace(" ", "")  # the reason names the claim (a PDF may break it in a line)
            if ran:
                assert all(pack in text for pack in ran)
            else:
                assert f"{rules}: {'none' if language == 'en' else 'keine'}" in text
            assert verdict.MEANING[language][:60] in text


def test_the_command_line_says_indeterminate_and_exits_3(tmp_path, capsys):
    from pipeline.cli import main
    path = tmp_path / "edition-2026.xml"
    path.write_bytes(edition_2026())
    assert main(["validate", str(path), "--spec", "en16931"]) == 3
    out = capsys.readouterr().out
    assert out.startswith("INDETERMINATE:") and "NOT JUDGED RULES-NOT-INSTALLED" in out and "rules: none ran" in out
    assert main(["validate", str(path), "--spec", "en16931", "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["verdict"] == "indeterminate"
    other = tmp_path / "cen.xml"
    other.write_bytes(CEN_CII.read_bytes())
    assert main(["validate", str(path), str(other), "--spec", "en16931", "--jobs", "1"]) == 3
    table = capsys.readouterr().out
    assert "INDETERMINATE" in table and "1 valid, 0 invalid, 1 indeterminate" in table


# ---- one written rule for Factur-X, bare XML and inside a PDF -------------------------------------------------

FACTURX_PDFS = [
    "horstoeko-zugferd/assets/pdf_zf_en16931_1.pdf",     # urn:cen.eu:en16931:2017: the CEN rules both ways
    "horstoeko-zugferd/assets/pdf_fx_extended_1.pdf",    # Factur-X EXTENDED: its profile's rules both ways
    "mustangproject/validator/corruptedV2PDF.pdf",       # the draft EN16931 id: the profile's rules (an error)
    "mustangproject/validator/103767-Invoice-2026-03-24-1.pdf",
]


@pytest.mark.parametrize("name", FACTURX_PDFS)
def test_the_same_factur_x_invoice_gets_the_same_rules_and_findings_as_xml_and_in_a_pdf(name):
    data = (CORPUS / name).read_bytes()
    xml = checks.inspect(data, validate_xml=False, check_pdfa=False).xml
    as_xml, in_pdf = validate_xml(xml, "en16931"), validate_pdf(data)

    def findings(report):
        return sorted(json.dumps(i.to_dict(), sort_keys=True) for i in report.issues
                      if not i.code.startswith(PDF_SIDE))

    assert [r.pack for r in in_pdf.rules][0] == "pdf"
    assert [r.to_dict() for r in in_pdf.rules[1:]] == [r.to_dict() for r in as_xml.rules]
    assert findings(in_pdf) == findings(as_xml)
    assert as_xml.not_judged == [] and (as_xml.verdict == "invalid") == ("corruptedV2PDF" in name)


def test_own_en16931_pdf_and_its_xml_agree(own_pdf):
    xml = checks.inspect(own_pdf, validate_xml=False, check_pdfa=False).xml
    as_xml, in_pdf = validate_xml(xml, "en16931"), validate_pdf(own_pdf)
    assert as_xml.valid and in_pdf.valid
    assert [r.to_dict() for r in in_pdf.rules[1:]] == [r.to_dict() for r in as_xml.rules]
    assert [r.pack for r in as_xml.rules] == ["en16931"]


# ---- a claim built on Peppol BIS Billing 3.0 is held to the Peppol rules it builds on --------------------------

BIS3 = CORPUS / "en16931-cen/ubl/examples/BIS3_Invoice_positive.XML"
PEPPOL_XSLT = RULES_SOURCE / "peppol" / "2026.5" / "xslt" / "PEPPOL-EN16931-UBL.xslt"


def _customised(gid: str) -> bytes:
    data = BIS3.read_bytes()
    billing = b"urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0"
    assert data.count(b"<cbc:CustomizationID>" + billing + b"</cbc:CustomizationID>") == 1
    return data.replace(b"<cbc:CustomizationID>" + billing, b"<cbc:CustomizationID>" + gid.encode(), 1)


@pytest.mark.parametrize("gid", [
    "urn:fdc:peppol.eu:2017:poacc:billing:3.0",  # Peppol's ProfileID written as BT-24: the Peppol rules refuse it
    "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0#conformant#urn:example:extension",
])
def test_a_claim_built_on_peppol_bis_3_is_judged_by_the_peppol_rules(client, gid):
    """PEPPOL-EN16931-R004 says BT-24 "MUST begin with" the billing 3.0 id: Peppol's own rules judge these ids. Before,
    the first got no rules at all and the second the CEN rules alone, both `indeterminate`, the first with a reason
    that contradicted itself ("claims Peppol BIS Billing 3.0, whose rules this service does not have (it has Peppol
    BIS Billing 3.0 for UBL)"), although the official Peppol stylesheet refuses it."""
    data = _customised(gid)
    official = {rule for rule, flag in official_findings(data, PEPPOL_XSLT) if flag in ("fatal", "error")}
    report = upload(client, data, {}, path="/v1/invoice/peppol/validate").json
    ours = {i["code"] for i in report["issues"] if i["severity"] == "ERROR"}
    assert {code for code in ours if code.startswith("PEPPOL-")} == official
    assert [r["pack"] for r in report["rules"]] == ["peppol"]
    assert report["verdict"] == ("invalid" if official else "indeterminate") and report["valid"] is False
    [reason] = report["notJudged"]
    assert (reason["code"], reason["claim"]) == (verdict.RULES_NOT_INSTALLED, gid)
    assert "built on Peppol BIS Billing 3.0" in reason["message"] and "held to the Peppol BIS Billing 3.0" in \
        reason["message"]
    assert ("PEPPOL-EN16931-R004" in official) == (gid == "urn:fdc:peppol.eu:2017:poacc:billing:3.0")
    # elsewhere the id is a Peppol claim that endpoint does not judge: never valid
    elsewhere = upload(client, data, {}, path="/v1/invoice/en16931/validate").json
    assert elsewhere["verdict"] == "indeterminate" and "peppol" not in [r["pack"] for r in elsewhere["rules"]]


def test_a_pdf_whose_invoice_rules_are_not_installed_is_indeterminate_not_valid(monkeypatch):
    """An install without the rules the embedded invoice's claim calls for (here: the CEN rules for CII, as on a
    machine where the en16931 pack is missing or covers UBL only) ran nothing on the invoice and said `valid` on the
    PDF checks alone: the judging step returned no findings, no rules and no reason. It names what did not run."""
    from pipeline.check import packs
    data = EN16931_PDF.read_bytes()
    assert validate_pdf(data).verdict == "valid"   # with the CEN rules installed
    covers = packs.covers
    monkeypatch.setattr(packs, "covers", lambda spec, syntax: spec != "en16931" and covers(spec, syntax))
    report = validate_pdf(data)
    assert (report.verdict, report.valid) == ("indeterminate", False)
    assert [r.pack for r in report.rules] == ["pdf"]
    [reason] = report.not_judged
    assert reason.code == verdict.RULES_NOT_INSTALLED and reason.claim == "urn:cen.eu:en16931:2017"
    assert "en16931 rules, which are not installed here for CII documents" in reason.message
    assert "nicht installiert" in reason.message_de
