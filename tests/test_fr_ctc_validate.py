"""Validation on the French reform's rules (`fr-ctc`): the endpoint, batch and CLI, and agreement with the official
stylesheets run alone (Saxon, SVRL, the original files; no code of ours between) on real-world and corpus documents.

The FNFE chain the official side runs, per document (FNFE-MPE, France_RFE):
- UBL: UBL 2.1 XSD; EXTENDED-CTC-FR-UBL when CustomizationID names EXTENDED-CTC-FR, else the CEN UBL rules; BR-FR UBL.
- CII: EXTENDED-CTC-FR id: CII D22B XSD + EXTENDED-CTC-FR-CII; a Factur-X profile's id (BASIC WL, BASIC, EXTENDED,
  MINIMUM): the profile's XSD and rules; else CII D22B + CEN CII rules; then BR-FR CII.
"""
from __future__ import annotations

import json
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest
from lxml import etree
from saxonche import PySaxonProcessor

from conftest import CORPUS, SHARED
from pipeline.check import engine, packs, xmlinput
from pipeline.check.xmlinput import XmlInputError
from pipeline.flows.validate_fr_ctc import validate_fr_ctc
from pipeline.invoice.specs import EN16931_ID, profile_for_guideline
from pipeline.invoice.terms import terms_for_rule
from test_zugferd_validate import PDF_SIDE

REALWORLD = SHARED / "realworld"
SVRL = "{http://purl.oclc.org/dsdl/svrl}"
EXTENDED_CTC_FR = "urn:cen.eu:en16931:2017#conformant#urn.cpro.gouv.fr:1p0:extended-ctc-fr"
_SPEC_ID = {"CII": "{urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100}ExchangedDocumentContext/"
                   "{urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100}"
                   "GuidelineSpecifiedDocumentContextParameter/"
                   "{urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100}ID",
            "UBL": "{urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2}CustomizationID"}


@pytest.fixture(scope="module")
def home():
    """The installed fr-ctc and en16931 packs (`pipeline rules install` puts both in the rules home)."""
    french, cen = packs.latest_active("fr-ctc"), packs.latest_active("en16931")
    return french.root, cen.root


# ---------------------------------------------------------------- the official side, run alone

@lru_cache(maxsize=None)
def _processor():
    return PySaxonProcessor(license=False)


@lru_cache(maxsize=None)
def _official(stylesheet: str):
    return _processor().new_xslt30_processor().compile_stylesheet(stylesheet_file=stylesheet)


def _official_findings(data: bytes, stylesheet: Path) -> list[tuple[str, bool]]:
    """(rule id, is an error) of each failed assert / successful report in the stylesheet's SVRL; a dynamic error
    of the stylesheet counts as one error finding."""
    try:
        node = _processor().parse_xml(xml_text=data.decode("utf-8-sig"))
        svrl = _official(str(stylesheet)).transform_to_string(xdm_node=node)
    except Exception:  # noqa: BLE001 - saxonche's dynamic errors
        # Saxon adapts an executable to what it ran (a local variable always needed turns eager), so an error
        # XPath lets a processor raise or not (BR-FR's date check reading xs:decimal of a date with leading
        # whitespace) can depend on the documents run before: the stylesheet alone, compiled afresh, decides
        try:
            svrl = _official.__wrapped__(str(stylesheet)).transform_to_string(xdm_node=node)
        except Exception:  # noqa: BLE001
            return [(engine.RULE_ENGINE_ERROR, True)]
    root = etree.fromstring(svrl.encode("utf-8"))
    return [(e.get("id") or "SCHEMATRON", (e.get("flag") or "error").lower() in ("fatal", "error"))
            for e in root.iter(f"{SVRL}failed-assert", f"{SVRL}successful-report")]


def _official_chain(data: bytes, home: Path):
    """(valid, Counter of Schematron rule ids, XSD valid) from the FNFE chain's original files."""
    tree = etree.fromstring(data, etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True))
    ubl = etree.QName(tree).namespace.startswith("urn:oasis:names:specification:ubl:schema:xsd:")
    gid = " ".join((tree.findtext(_SPEC_ID["UBL" if ubl else "CII"]) or "").split())
    fr, cen = home
    if ubl:
        root = etree.QName(tree).localname
        xsd = fr / "ubl" / "maindoc" / f"UBL-{root}-2.1.xsd"
        rules = fr / "ubl" / "EXTENDED-CTC-FR-UBL.xslt" if gid == EXTENDED_CTC_FR else \
            cen / "ubl" / "xslt" / "EN16931-UBL-validation.xslt"
        sheets = [rules, fr / "ubl" / "BR-FR-Flux2-Schematron-UBL.xslt"]
    else:
        profile = profile_for_guideline(gid)
        if gid == EXTENDED_CTC_FR:
            xsd, rules = fr / "cii" / "extended-ctc-fr" / "CrossIndustryInvoice_100pD22B.xsd", \
                fr / "cii" / "extended-ctc-fr" / "EXTENDED-CTC-FR-CII.xslt"
        elif profile is not None and gid != EN16931_ID and not profile.xrechnung:
            xsd, rules = profile.xsd_path, profile.schematron_path
        else:
            xsd, rules = fr / "cii" / "extended-ctc-fr" / "CrossIndustryInvoice_100pD22B.xsd", \
                cen / "cii" / "xslt" / "EN16931-CII-validation.xslt"
        sheets = [rules, fr / "cii" / "BR-FR-Flux2-Schematron-CII.xslt"]
    schema = etree.XMLSchema(etree.parse(str(xsd), etree.XMLParser(no_network=True)))
    xsd_valid = schema.validate(tree)
    findings = [f for sheet in sheets for f in _official_findings(data, sheet)]
    return xsd_valid and not any(error for _, error in findings), Counter(i for i, _ in findings), xsd_valid


def _documents(*roots: Path):
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() == ".xml"):
            data = path.read_bytes()
            try:
                doc = xmlinput.load(data)
            except XmlInputError:
                continue
            if doc.syntax is not None:
                yield path, data


def _agree(home, roots, minimum):
    """Our report and the chain's official files alone: the same rule ids, XSD verdict and errors (`valid` here:
    no error; a document claiming rules beyond the chain's is indeterminate then, never valid). A document whose
    claim no rules here judge (another EN 16931 edition, a ZUGFeRD 1.0 id) runs none: indeterminate, not compared."""
    compared, disagree, invalid = 0, [], 0
    for path, data in _documents(*roots):
        report = validate_fr_ctc(data)
        if not report.rules:
            assert report.verdict == "indeterminate" and report.not_judged, path
            continue
        try:
            valid, ids, xsd_valid = _official_chain(data, home)
        except (etree.XMLSyntaxError, UnicodeDecodeError):
            continue  # lxml's plain parser refuses what ours reports on (e.g. a huge text node): not comparable
        ours = Counter(i.code for i in report.issues if not i.code.startswith(engine.XSD_PREFIX))
        our_xsd_valid = not any(i.code.startswith(engine.XSD_PREFIX) for i in report.issues)
        assert report.valid or report.verdict == "invalid" or report.not_judged
        if (report.verdict != "invalid", ours, our_xsd_valid) != (valid, ids, xsd_valid):
            disagree.append((str(path.relative_to(SHARED)), report.valid, valid, sorted((ours - ids) + (ids - ours))))
        compared += 1
        invalid += not valid
    assert not disagree, disagree[:5]
    assert compared >= minimum and invalid, (compared, invalid)
    return compared


@pytest.mark.slow
def test_realworld_documents_get_the_verdict_and_rule_ids_of_the_official_stylesheets_alone(home):
    _agree(home, [REALWORLD], 90)


@pytest.mark.slow
def test_corpus_documents_get_the_verdict_and_rule_ids_of_the_official_stylesheets_alone(home):
    _agree(home, [CORPUS], 380)


@pytest.mark.slow
def test_factur_x_pdfs_get_the_official_chain_on_their_invoice_as_xml_does(home):
    """Every PDF of ../shared/realworld and ../shared/corpus on fr-ctc: its embedded CII gets the rule ids and XSD
    verdict of the FNFE chain's original files alone (`_official_chain`, as for XML), and exactly the findings and
    rules the same invoice gets sent as XML to fr-ctc (one written rule for both routes); the PDF's own checks come
    on top and valid = both valid."""
    from pipeline.pdf import checks

    compared, disagree = 0, []
    for path in sorted(p for root in (REALWORLD, CORPUS) for p in root.rglob("*") if p.suffix.lower() == ".pdf"):
        data = path.read_bytes()
        try:
            french = validate_fr_ctc(data)
        except Exception:  # noqa: BLE001 - not a readable PDF: INVALID_PDF, as on the ZUGFeRD endpoint
            continue
        xml = checks.inspect(data, validate_xml=False, check_pdfa=False).xml
        try:
            doc = xmlinput.load(xml) if xml is not None else None
        except XmlInputError:
            doc = None
        if doc is None or doc.syntax != "CII" or doc.root_name.endswith("CrossIndustryDocument"):
            continue  # no CII invoice inside: the PDF's checks say so (tested with the ZUGFeRD endpoint)
        as_xml = validate_fr_ctc(xml)
        invoice = [i for i in french.issues if not i.code.startswith(PDF_SIDE)]
        container_ok = not any(i.severity == "ERROR" for i in french.issues if i.code.startswith(PDF_SIDE))
        same = ([(i.code, i.severity, i.location and i.location.line) for i in invoice] ==
                [(i.code, i.severity, i.location and i.location.line) for i in as_xml.issues]
                and [r.to_dict() for r in french.rules[1:]] == [r.to_dict() for r in as_xml.rules])
        if as_xml.rules:
            try:
                valid, ids, xsd_valid = _official_chain(xml, home)
            except (etree.XMLSyntaxError, UnicodeDecodeError):
                continue
            ours = Counter(i.code for i in invoice if not i.code.startswith(engine.XSD_PREFIX))
            official = (ours == ids and xsd_valid == (not any(i.code.startswith(engine.XSD_PREFIX) for i in invoice))
                        and (as_xml.verdict != "invalid") == valid)
        else:
            official = as_xml.verdict == "indeterminate"
        if not (same and official and french.valid == (container_ok and as_xml.valid and not french.not_judged)):
            disagree.append((str(path.relative_to(SHARED)), same, official, french.verdict, as_xml.verdict))
        compared += 1
    assert not disagree, disagree[:5]
    assert compared >= 85, compared  # 88 PDFs with a CII invoice inside (2026-11-28)


# ---------------------------------------------------------------- endpoint, batch, command line

import falcon.testing  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

from pipeline.service.app import create_app  # noqa: E402
from test_validate_endpoints import post  # noqa: E402

GERMAN_CII = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml"
GERMAN_UBL = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml"
FACTURX_PDF = REALWORLD / "corpus/ZUGFeRDv2/correct/intarsys/EN16931/zugferd_2p0_EN16931_Elektron.pdf"


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


@pytest.mark.parametrize("path, syntax", [(GERMAN_CII, "CII"), (GERMAN_UBL, "UBL")])
def test_a_valid_german_invoice_fails_the_french_rules_the_issue_names_in_french_with_business_terms(
        client, path, syntax):
    r = post(client, "/v1/invoice/fr-ctc/validate", file=path.read_bytes(), request="{}")
    assert r.status_code == 200, r.text
    body = r.json
    assert body["valid"] is False and body["syntax"] == syntax and body["version"] == "1.4.0.04"
    codes = {i["code"] for i in body["issues"] if i["severity"] == "ERROR"}
    # the payment notes PMT, PMD, AAB (ids BR-FR-05_BT-22_PMT in CII, BR-FR-05_BT-22-1 in UBL), billing frame, SIREN
    assert len([c for c in codes if c.startswith("BR-FR-05_BT-22")]) == 3
    assert {"BR-FR-08_BT-23", "BR-FR-10_BT-30"} <= codes
    note = next(i for i in body["issues"] if i["code"].startswith("BR-FR-05_BT-22") and "PMT" in i["message"])
    assert "frais de recouvrement" in note["message"] and note["location"]["line"]  # the FNFE's French text, located
    # the same document is valid EN 16931 (no CEN finding in the French chain's report)
    assert not [c for c in codes if c.startswith(("BR-", "CII-", "UBL-")) and not c.startswith("BR-FR")]
    assert terms_for_rule("BR-FR-08_BT-23") == ("BT-23",) and terms_for_rule("BR-FR-05_BT-22-1") == ("BT-22",)
    # the report for people names each French rule's business term
    html = post(client, "/v1/invoice/fr-ctc/validate", headers={"Accept": "text/html"}, file=path.read_bytes(),
                request="{}")
    assert html.status_code == 200 and "BR-FR-08_BT-23" in html.text and "BT-23" in html.text
    assert "Valeurs acceptées : B1, S1, M1" in html.text


def test_a_factur_x_pdf_gets_its_profile_checks_and_br_fr(client):
    data = FACTURX_PDF.read_bytes()
    r = post(client, "/v1/invoice/fr-ctc/validate", file=data, request="{}")
    assert r.status_code == 200, r.text
    codes = {i["code"] for i in r.json["issues"]}
    assert r.json["version"] == "1.4.0.04" and r.json["valid"] is False and "BR-FR-08_BT-23" in codes
    german = post(client, "/v1/invoice/zugferd/validate", file=data, request="{}").json
    # the ZUGFeRD endpoint's findings are all there, the French ones come on top
    assert Counter(i["code"] for i in german["issues"]) <= Counter(i["code"] for i in r.json["issues"])
    assert not any(c.startswith("BR-FR") for c in (i["code"] for i in german["issues"]))


def test_unknown_version_is_400(client):
    r = post(client, "/v1/invoice/fr-ctc/validate", file=GERMAN_CII.read_bytes(), request='{"version": "0.1"}')
    assert r.status_code == 400 and r.json["errorCode"] == "UNSUPPORTED_VERSION"


def test_batch_takes_xml_and_pdf_on_the_french_rules(client):
    from test_validate_batch import form

    body, ctype = form([("a.xml", GERMAN_CII.read_bytes()), ("b.pdf", FACTURX_PDF.read_bytes())])
    r = client.simulate_post("/v1/invoice/fr-ctc/validate/batch", body=body, headers={"Content-Type": ctype})
    assert r.status_code == 200, r.text
    assert r.json["summary"] == {"files": 2, "valid": 0, "invalid": 2, "indeterminate": 0, "errors": 0, "noInvoice": 0}
    single = post(client, "/v1/invoice/fr-ctc/validate", file=GERMAN_CII.read_bytes(), request="{}").json
    first = r.json["results"][0]["report"]
    assert [i["code"] for i in first["issues"]] == [i["code"] for i in single["issues"]]


def test_cli_spec_fr_ctc_for_xml_and_pdf():
    for path in (GERMAN_UBL, FACTURX_PDF):
        run = subprocess.run([sys.executable, "-m", "pipeline", "validate", "--spec", "fr-ctc", "--json", str(path)],
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 1, run.stderr
        report = json.loads(run.stdout)
        assert report["version"] == "1.4.0.04" and "BR-FR-08_BT-23" in {i["code"] for i in report["issues"]}


@pytest.mark.parametrize("data, code", [
    (b"not xml", "XML-MALFORMED"), (b"<a/>", "XML-UNKNOWN-ROOT"),
    (b'<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>', "XML-DTD-FORBIDDEN"),
    (b"%PDF-1.7 garbage", "INVALID_PDF")])
def test_bad_input_gets_the_report_or_400_of_the_other_endpoints_never_a_500(client, data, code):
    r = post(client, "/v1/invoice/fr-ctc/validate", file=data, request="{}")
    if code == "INVALID_PDF":
        assert r.status_code == 400 and r.json["errorCode"] == code
    else:
        assert r.status_code == 200 and r.json["valid"] is False and [i["code"] for i in r.json["issues"]] == [code]


# ---------------------------------------------------------------- what a French BT-24 claims

@lru_cache(maxsize=1)
def _french_invoice() -> bytes:
    """fixtures/fr-b2b-goods.json as CII, valid on the FNFE chain (BT-24: EN 16931)."""
    from conftest import REPO
    from pipeline.flows.generate_xml import generate_xml
    return generate_xml((REPO / "fixtures" / "fr-b2b-goods.json").read_bytes(), "fr-ctc")[0]


def _claiming(gid: str) -> bytes:
    data = _french_invoice()
    written = f"<ram:ID>{EN16931_ID}</ram:ID>".encode()
    assert data.count(written) == 1
    return data.replace(written, f"<ram:ID>{gid}</ram:ID>".encode())


@pytest.mark.parametrize("gid", [
    EXTENDED_CTC_FR + ":2p0",                                            # a later EXTENDED-CTC-FR
    "urn:cen.eu:en16931:2017#compliant#urn.cpro.gouv.fr:1p0:cius-fr",    # a French CIUS the pack has no rules of
    "urn.cpro.gouv.fr:1p0:CDV:invoice",                                  # the status messages' profile (MDT-3)
])
def test_a_french_id_whose_rules_the_pack_does_not_have_is_never_valid(home, gid):
    """BR-FR does not judge BT-24, and the pack has the rules of one French id (EXTENDED-CTC-FR). Any other id naming
    cpro.gouv.fr was held to be France's rules in full: `valid` on the CEN rules and BR-FR, which the official chain
    alone finds nothing wrong with, though the document claims rules that never ran. It is `indeterminate` now,
    with the same findings as the official chain's files where they ran (none here)."""
    data = _claiming(gid)
    assert validate_fr_ctc(_claiming(EXTENDED_CTC_FR)).verdict == "valid"   # the id the pack has rules of
    report = validate_fr_ctc(data)
    assert (report.verdict, report.valid, report.errors) == ("indeterminate", False, 0)
    assert [(n.code, n.claim) for n in report.not_judged] == [("RULES-NOT-INSTALLED", gid)]
    assert "French specification or version this service does not know" in report.not_judged[0].message
    if report.rules:   # built on EN 16931:2017: the FNFE chain on the CEN rules ran, as the official files do
        assert [r.pack for r in report.rules] == ["fr-ctc", "en16931", "fr-ctc"]
        valid, ids, xsd_valid = _official_chain(data, home)
        assert valid and xsd_valid and Counter(i.code for i in report.issues) == ids
