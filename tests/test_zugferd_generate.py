"""POST /v1/invoice/zugferd: every profile, both languages, checked as a client would check them.

Each generated PDF is read back independently: PDF/A-3b with pikepdf.pdfa (known false alarms only), the XMP
Factur-X values of the profile, the associated file, fonts embedded, sRGB OutputIntent, and the embedded XML
against the profile's official Factur-X XSD + Schematron (and the XRechnung rules for XRECHNUNG).
"""
from __future__ import annotations

import io
import json
import subprocess

import falcon.testing
import pikepdf
import pytest
from pikepdf import pdfa

from pipeline.cli.golden import syntaxes_of, invoice_fixtures
from pipeline.invoice import specs
from pipeline.pdf import assemble, checks
from pipeline.service.app import create_app
from tests.conftest import REPO
from tests.test_zugferd_samples import invoice_request

PROFILES = ["EN16931", "BASIC", "BASIC WL", "MINIMUM", "EXTENDED", "XRECHNUNG"]


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def post(client, body: dict, **headers):
    return client.simulate_post("/v1/invoice/zugferd", body=json.dumps(body),
                                headers={"Content-Type": "application/json", **headers})


@pytest.fixture(scope="module")
def generated(client):
    """(profile, language) -> PDF bytes, generated once per module."""
    cache = {}

    def get(profile: str, language: str) -> bytes:
        if (profile, language) not in cache:
            resp = post(client, invoice_request(10, profile, language))
            assert resp.status_code == 200, resp.text
            assert resp.headers["content-type"] == "application/pdf"
            cache[(profile, language)] = resp.content
        return cache[(profile, language)]

    return get


def pdftotext(data: bytes, tmp_path) -> str:
    path = tmp_path / "x.pdf"
    path.write_bytes(data)
    return subprocess.run(["pdftotext", str(path), "-"], capture_output=True, check=True).stdout.decode()


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("language", ["en", "de"])
def test_generated_pdf_passes_every_check(generated, profile, language):
    data = generated(profile, language)
    p = specs.PROFILES[profile]
    result = checks.inspect(data)  # PDF/A-3 + XMP + embedded file + the XML on the official rules
    assert [i for i in result.issues if i.severity == "ERROR"] == []
    assert result.profile == p
    assert (result.file_name, result.relationship) == (p.file_name, "/" + p.relationship)
    assert result.fx == {"DocumentType": "INVOICE", "DocumentFileName": p.file_name, "Version": "1.0",
                         "ConformanceLevel": p.level}
    assert (result.pdfa_part, result.pdfa_conformance) == ("3", "B")
    assert result.guideline_id == p.guideline_id


@pytest.mark.parametrize("profile", PROFILES)
def test_pdfa_findings_are_only_the_known_false_alarms(generated, profile):
    report = pdfa.validate_written(io.BytesIO(generated(profile, "en")), "3b")
    for f in report.findings:
        assert f.rule == "ISO_19005_3:6.6.2.3.1-1", f  # the declared extension schema, nothing else
        assert any(ns in f.message for ns in ("fx=", "fx:", "pdfaExtension", "pdfaSchema", "pdfaProperty")), f


@pytest.mark.parametrize("profile", ["EN16931", "MINIMUM", "XRECHNUNG"])
def test_container_structure(generated, profile):
    p = specs.PROFILES[profile]
    with pikepdf.open(io.BytesIO(generated(profile, "de"))) as doc:
        (spec,) = list(doc.Root.AF)
        assert spec.AFRelationship == pikepdf.Name("/" + p.relationship)
        assert str(spec.F) == str(spec.UF) == p.file_name
        stream = spec.EF.F
        assert stream.Subtype == pikepdf.Name("/text/xml")
        assert stream.Params.Size == len(stream.read_bytes())
        assert str(stream.Params.ModDate).startswith("D:") and str(stream.Params.CreationDate).startswith("D:")
        names = list(pikepdf.NameTree(doc.Root.Names.EmbeddedFiles).keys())
        assert names == [p.file_name]
        intent = doc.Root.OutputIntents[0]
        assert intent.S == pikepdf.Name.GTS_PDFA1 and intent.DestOutputProfile.N == 3  # sRGB ICC
        fonts = [f for page in doc.pages for f in page.Resources.Font.values()]
        assert fonts
        for font in fonts:
            desc = font.DescendantFonts[0].FontDescriptor if "/DescendantFonts" in font else font.FontDescriptor
            assert any(k in desc for k in ("/FontFile", "/FontFile2", "/FontFile3")), font.BaseFont
        for page in doc.pages:
            for annot in page.get("/Annots", []):
                assert int(annot.F) & 4
        assert str(doc.docinfo.Title) == f"Rechnung RE-2024-0815"


def test_xml_of_each_profile_is_its_subset(generated):
    """BASIC WL and MINIMUM carry no lines; BASIC keeps them; all keep the totals."""
    ns = {"ram": "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100",
          "rsm": "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"}
    from lxml import etree
    counts = {}
    for profile in ("EN16931", "BASIC", "BASIC WL", "MINIMUM"):
        xml = checks.inspect(generated(profile, "en"), validate_xml=False).xml
        root = etree.fromstring(xml)
        counts[profile] = len(root.findall(".//ram:IncludedSupplyChainTradeLineItem", ns))
        assert root.findtext(".//ram:DuePayableAmount", namespaces=ns)
    assert counts == {"EN16931": 10, "BASIC": 10, "BASIC WL": 0, "MINIMUM": 0}


@pytest.mark.parametrize("language,expected", [
    ("en", ["Invoice", "Page 1 of", "1 March 2024", "Amount due for payment", "DE02 1203 0000 0000 2020 51",
            "Stundennachweis-02-2024", "Muster Consulting GmbH", "Beispiel Handels AG"]),
    ("de", ["Rechnung", "Seite 1 von", "01.03.2024", "Zahlbetrag", "DE02 1203 0000 0000 2020 51",
            "Stundennachweis-02-2024", "Muster Consulting GmbH", "Beispiel Handels AG"]),
])
def test_page_text_follows_the_language(generated, tmp_path, language, expected):
    text = pdftotext(generated("EN16931", language), tmp_path)
    for needle in expected:
        assert needle in text, needle


def test_xmp_escapes_user_text():
    xmp = assemble.build_xmp(specs.PROFILES["EN16931"], 'Invoice <1> & "2"', "A&B <GmbH>",
                          __import__("datetime").datetime(2024, 3, 1))
    from lxml import etree
    root = etree.fromstring(xmp)
    assert 'Invoice <1> & "2"' in root.xpath("string(//*[local-name()='title']//*[local-name()='li'])")
    assert "A&B <GmbH>" == root.xpath("string(//*[local-name()='creator']//*[local-name()='li'])")


def test_user_text_in_metadata_round_trips(client):
    body = invoice_request(2)
    body["invoice"]["invoiceNumber"] = 'R<1>&"x"'
    body["invoice"]["seller"]["name"] = "Müller & Söhne <KG>"
    resp = post(client, body)
    assert resp.status_code == 200, resp.text
    result = checks.inspect(resp.content)
    assert [i for i in result.issues if i.severity == "ERROR"] == []
    with pikepdf.open(io.BytesIO(resp.content)) as doc, doc.open_metadata() as meta:
        assert meta["dc:title"] == 'Invoice R<1>&"x"'
        assert str(doc.docinfo.Author) == "Müller & Söhne <KG>"


WORLD_TEXT = {
    "buyer": "上海贸易有限公司 · Ελληνική Εταιρεία · ООО «Ромашка» · Zażółć gęślą jaźń",
    "note": "Danke \U0001F642 I \u2764\ufe0f it \U0001F1E9\U0001F1EA · हिन्दी · ภาษาไทย · \U00013000 \U0010FFFD",
}


def test_text_of_any_script_is_drawn_and_kept(client, tmp_path):
    """Names and notes in any script (CJK, Greek, Cyrillic, emoji with joiners and variation selectors) get a PDF/A-3b
    PDF; the page draws them with fallback fonts (no .notdef, which PDF/A forbids), a character that no installed font
    has (an Egyptian hieroglyph, a private-use code point) is shown as U+FFFD, and the embedded XML keeps every
    character as sent. Before the fallback fonts, such requests got a 422 PDF_A3_VALIDATION_FAILED."""
    body = invoice_request(2)
    body["invoice"]["buyer"]["name"] = WORLD_TEXT["buyer"]
    body["invoice"]["invoiceNote"] = WORLD_TEXT["note"]
    resp = post(client, body)
    assert resp.status_code == 200, resp.text
    result = checks.inspect(resp.content)
    assert [i for i in result.issues if i.severity == "ERROR"] == []
    xml = result.xml.decode("utf-8")
    assert WORLD_TEXT["buyer"] in xml and WORLD_TEXT["note"] in xml
    page = " ".join(pdftotext(resp.content, tmp_path).split())
    assert "上海贸易有限公司" in page and "ООО «Ромашка»" in page and "Ελληνική" in page
    assert "\U0001F642" in page and "\u2764" in page
    assert "\ufffd \ufffd" in page and "\U00013000" not in page


def test_a_supporting_document_of_12_mb_is_carried_and_checked(client, monkeypatch):
    """A 12 MB attachment (16 MB of base64 in the XML) passes: libxml2's default limits refused a text node over
    10 MB as malformed XML, and the PDF check read at most 10 MB of embedded invoice, so such an invoice got a 422.
    On the validate endpoint the embedded invoice is validated up to the XML upload limit, like an XML upload."""
    import base64
    import os

    from pipeline import budget
    from pipeline.settings import get_settings

    # the paces earlier tests of this process taught the time budget (one slow run counts at once) are not this
    # test's subject: with them a 16 MB document's rules were expected to outlast the budget (503 in one full run)
    monkeypatch.setattr(budget, "_pace", {})
    body = invoice_request(2)
    data = os.urandom(12_000_000)
    body["invoice"]["additionalSupportingDocuments"].append({
        "reference": "Anlage-1", "attachedDocument": base64.b64encode(data).decode(),
        "attachedDocumentMimeType": "application/pdf", "attachedDocumentFilename": "anlage.pdf"})
    # nor is the time budget: an app of its own with ten minutes (on a host loaded 6x over, 60 s ran out: 503)
    monkeypatch.setenv("EINVOICE_REQUEST_BUDGET", "600")
    get_settings.cache_clear()
    roomy = falcon.testing.TestClient(create_app(platform=False))
    monkeypatch.delenv("EINVOICE_REQUEST_BUDGET")
    get_settings.cache_clear()
    resp = post(roomy, body)
    assert resp.status_code == 200, resp.text[:2000]
    result = checks.inspect(resp.content)
    assert [i for i in result.issues if i.severity == "ERROR"] == []
    assert len(result.xml) > 16_000_000
    with pikepdf.open(io.BytesIO(resp.content)) as doc:
        assert doc.attachments["anlage.pdf"].get_file().read_bytes() == data

    monkeypatch.setenv("EINVOICE_MAX_UPLOAD_BYTES", str(len(result.xml) - 1))
    get_settings.cache_clear()
    try:
        found = checks.inspect(resp.content)
    finally:
        monkeypatch.undo()
        get_settings.cache_clear()
    # its rules did not run: not judged (issue 37), no error
    assert [i.code for i in found.issues if i.severity == "ERROR"] == []
    assert [n.code for n in found.not_judged] == ["FX_XML_TOO_LARGE"]


# --- errors ----------------------------------------------------------------------------------------------

def test_unknown_profile_is_400(client):
    resp = post(client, invoice_request(1, "COMFORTABLE"))
    assert resp.status_code == 400
    assert resp.json["errorCode"] == "INVALID_INPUT"
    assert resp.json["errors"][0]["field"] == "config.profile"


def test_ubl_is_400(client):
    body = invoice_request(1)
    body["config"]["syntax"] = "UBL"
    resp = post(client, body)
    assert resp.status_code == 400
    assert any(e["field"] == "config.syntax" for e in resp.json["errors"])


@pytest.mark.parametrize("language", ["de-DE", "fr", "EN-gb", ""])
def test_unsupported_language_is_400(client, language):
    resp = post(client, invoice_request(1, None, language))
    assert resp.status_code == 400, resp.text
    assert any(e["field"] == "config.metadataLanguage" for e in resp.json["errors"])


def test_language_is_case_insensitive(client, tmp_path):
    resp = post(client, invoice_request(1, None, "DE"))
    assert resp.status_code == 200
    assert "Seite 1 von " in pdftotext(resp.content, tmp_path)


def test_invoice_failing_the_rules_is_422_not_a_pdf(client):
    body = invoice_request(1, "XRECHNUNG")
    del body["invoice"]["buyerReference"]  # BR-DE-15: XRechnung requires the buyer reference (Leitweg-ID)
    resp = post(client, body)
    assert resp.status_code == 422
    assert resp.json["errorCode"] == "VALIDATION_FAILED"
    assert any(e["code"] == "BR-DE-15" for e in resp.json["errors"])


def test_accept_header_must_allow_pdf(client):
    resp = post(client, invoice_request(1), Accept="application/xml")
    assert resp.status_code == 406


def test_gate_rejects_a_pdf_whose_xml_differs(generated):
    data = generated("EN16931", "en")
    xml = checks.inspect(data, validate_xml=False).xml
    with pytest.raises(Exception) as exc:
        checks.gate_generated(data, xml.replace(b"RE-2024-0815", b"RE-2024-0816"), specs.PROFILES["EN16931"])
    assert exc.value.error_code == "PDF_A3_VALIDATION_FAILED"
    assert any(e.code == "FX_XML_DIFFERS" for e in exc.value.errors)


def test_gate_rejects_wrong_relationship_and_unspecified_attachments(generated):
    data = generated("EN16931", "en")
    with pikepdf.open(io.BytesIO(data)) as doc:
        doc.Root.AF[0].AFRelationship = pikepdf.Name.Unspecified
        out = io.BytesIO()
        doc.save(out)
    xml = checks.inspect(data, validate_xml=False).xml
    with pytest.raises(Exception) as exc:
        checks.gate_generated(out.getvalue(), xml, specs.PROFILES["EN16931"])
    assert exc.value.error_code == "PDF_A3_VALIDATION_FAILED"


# --- the team's request fixtures (every VAT category, payment means, credit note, MANUAL totals) -------------

# ZUGFeRD embeds CII: fixtures CII cannot carry (golden.syntaxes_of: the XRechnung extension's groups) are refused,
# see the next test.
FIXTURES = sorted(p for p in invoice_fixtures()
                  if p.stem != "xrechnung-spec-id" and "CII" in syntaxes_of(p))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_every_fixture_becomes_a_valid_zugferd_pdf(client, path):
    body = json.loads(path.read_text())
    body["config"] = {k: v for k, v in body["config"].items() if k == "calculationMode"} | {"syntax": "CII"}
    resp = post(client, body)
    assert resp.status_code == 200, resp.text
    result = checks.inspect(resp.content)
    assert [i for i in result.issues if i.severity == "ERROR"] == []
    assert result.profile is specs.PROFILES["EN16931"]


def test_a_fixture_cii_cannot_carry_is_refused_with_the_field(client):
    body = json.loads((REPO / "fixtures" / "xrechnung-extension.json").read_text())
    body["config"] = {"syntax": "CII", "profile": "XRECHNUNG"}
    resp = post(client, body)
    assert resp.status_code == 400, resp.text
    fields = {e["field"] for e in resp.json["errors"]}
    assert {"invoice.invoiceLines[0].subInvoiceLines", "invoice.thirdPartyPayments"} <= fields, fields


def test_xrechnung_spec_id_fixture_with_the_xrechnung_profile(client):
    body = json.loads((REPO / "fixtures" / "xrechnung-spec-id.json").read_text())
    body["config"] = {"syntax": "CII", "profile": "XRECHNUNG"}
    resp = post(client, body)
    assert resp.status_code == 200, resp.text
    assert checks.inspect(resp.content).file_name == "xrechnung.xml"


def test_link_annotations_get_the_print_flag():
    """WeasyPrint writes link annotations without /F; PDF/A needs the Print flag (ISO 19005-3 6.3.2)."""
    from pipeline.pdf import page
    pages = page.html_to_pdf(b'<html><body><p><a href="https://example.org/pay">pay online</a></p></body></html>')
    with pikepdf.open(io.BytesIO(pages)) as doc:
        assert [a for p in doc.pages for a in p.get("/Annots", [])], "WeasyPrint wrote no link annotation"
    xml = (REPO.parent / "shared" / "corpus" / "en16931-cen" / "cii" / "examples" / "CII_example1.xml").read_bytes()
    p = specs.PROFILES["EN16931"]
    data = assemble.embed_facturx(pages, xml, p, "Invoice 1", "Seller")
    with pikepdf.open(io.BytesIO(data)) as doc:
        annots = [a for page in doc.pages for a in page.get("/Annots", [])]
        assert annots and all(int(a.F) & 4 for a in annots)
    checks.gate_generated(data, xml, p)  # passes: no PDF/A violation left


@pytest.mark.parametrize("content, merged", [
    (b"[<002c>0<0051>0<0059>0] TJ", b"[<002c00510059>] TJ"),                  # WeasyPrint's rounding residue
    (b"[<002c>0<0051>-91<0059>0] TJ", b"[<002c0051>-91<0059>] TJ"),           # a real kerning pair stays
    (b"[<0a>0.5<0b>] TJ", b"[<0a>0.5<0b>] TJ"),                               # 0.5 moves the glyph: kept
    (b"[<0a>10<0b>0<0c>]TJ", b"[<0a>10<0b0c>]TJ"),
    (b"[<0a1>0<0b>] TJ", b"[<0a1>0<0b>] TJ"),                                 # odd digits read as <0a10>: not joined
    (b"[(ab)0(cd)] TJ", b"[(ab)0(cd)] TJ"),                                   # literal strings: left alone
    (b"BT [<0a>0 <0b>] TJ ET", b"BT [<0a>0 <0b>] TJ ET"),
    (b"/P <</MCID 0>> BDC [<0a>0<0b>0]TJ EMC", b"/P <</MCID 0>> BDC [<0a0b>] TJ EMC"),  # array by array
])
def test_zero_adjustments_are_dropped_from_text_arrays_and_nothing_else(content, merged):
    assert assemble.merge_zero_adjustments(content) == merged


def png_pages(data: bytes, tmp_path, name: str) -> list[bytes]:
    (tmp_path / f"{name}.pdf").write_bytes(data)
    subprocess.run(["pdftoppm", "-r", "100", "-png", str(tmp_path / f"{name}.pdf"), str(tmp_path / name)], check=True)
    return [p.read_bytes() for p in sorted(tmp_path.glob(f"{name}-*.png"))]


def test_embedding_draws_every_page_as_weasyprint_drew_it(tmp_path):
    """The Factur-X container (zero kerning adjustments dropped, XMP, files) draws the same pixels as WeasyPrint's
    pages, and its text arrays no longer split after each glyph."""
    from pipeline.flows.generate_xml import normalize
    from pipeline.pdf import page
    _, canonical = normalize(json.dumps(invoice_request(10, "EN16931")).encode(), "zugferd")
    pages = page.html_to_pdf(page.invoice_html(canonical, "en", "EN 16931"))
    xml = (REPO.parent / "shared" / "corpus" / "en16931-cen" / "cii" / "examples" / "CII_example1.xml").read_bytes()
    data = assemble.embed_facturx(pages, xml, specs.PROFILES["EN16931"], "Invoice 1", "Seller")
    before, after = png_pages(pages, tmp_path, "weasyprint"), png_pages(data, tmp_path, "facturx")
    assert len(before) == len(after) >= 2 and before == after
    with pikepdf.open(io.BytesIO(data)) as doc:
        text = b"".join(p.Contents.read_bytes() for p in doc.pages)
    assert b"TJ" in text and b">0<" not in text


def test_every_stream_is_compressed_but_the_xmp(generated):
    """WeasyPrint renders the pages uncompressed for the container (`html_to_pdf(compress=False)`), which pikepdf
    compresses as it saves: nothing leaves uncompressed but the XMP packet (readable by design)."""
    with pikepdf.open(io.BytesIO(generated("EN16931", "en"))) as doc:
        streams = [o for o in doc.objects if isinstance(o, pikepdf.Stream)]
        plain = [o.get("/Type") for o in streams if o.get("/Filter") is None]
        assert len(streams) > 5 and plain == [pikepdf.Name.Metadata]


def test_the_pdfa_walk_pauses_the_collector_for_our_pdfs_only(generated, monkeypatch):
    """The gate on a PDF we made walks it with the cyclic collector off (`pipeline.pdf.collector`); an uploaded PDF,
    whose size nothing but the upload limit bounds, is checked with the collector on."""
    import gc

    data = generated("EN16931", "en")
    seen = []
    walk = pdfa.validate_written

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return walk(*args, **kwargs)

    monkeypatch.setattr(pdfa, "validate_written", spy)
    result = checks.inspect(data, validate_xml=False)
    checks.gate_generated(data, result.xml, specs.PROFILES["EN16931"])
    assert seen == [True, False] and gc.isenabled()


# --- profiles without a rounding amount (BT-114) ----------------------------------------------------------------

@pytest.mark.parametrize("profile", PROFILES)
def test_rounding_flag_follows_the_profile_xsd(profile):
    p = specs.PROFILES[profile]
    declared = any('name="RoundingAmount"' in f.read_text(encoding="utf-8")
                   for f in p.xsd_path.parent.glob("*.xsd"))
    assert p.rounding == declared


@pytest.mark.parametrize("profile", ["BASIC", "BASIC WL"])
def test_rounding_amount_in_a_profile_without_bt114_is_a_422_naming_the_fix(client, profile):
    """manual-totals.json sends BT-114 = 0.10 (BT-115 = 149.10 - 50.00 + 0.10). BASIC and BASIC WL cannot carry
    BT-114, so their XML fails BR-CO-16; the 422 says why and what to send instead, and that advice works."""
    body = json.loads((REPO / "fixtures" / "manual-totals.json").read_text())
    body["config"]["profile"] = profile
    resp = post(client, body)
    assert resp.status_code == 422
    first = resp.json["errors"][0]
    assert (first["code"], first["field"], first["businessTerm"]) == (
        "PROFILE_WITHOUT_ROUNDING_AMOUNT", "invoice.documentTotals.payableRoundingAmount", "BT-114")
    assert "without payableRoundingAmount" in resp.json["message"] and "EN16931" in resp.json["message"]
    assert "BR-CO-16" in [e["code"] for e in resp.json["errors"]]  # the official rule's finding stays listed

    totals = body["invoice"]["documentTotals"]
    del totals["payableRoundingAmount"]
    totals["payableAmount"] = 99.10  # taxInclusiveAmount - prepaidAmount
    resp = post(client, body)
    assert resp.status_code == 200, resp.text
    assert [i for i in checks.inspect(resp.content).issues if i.severity == "ERROR"] == []


def test_too_many_lines_for_a_pdf_is_400_before_any_work(client, monkeypatch):
    """The page costs ~10 ms per line: past EINVOICE_MAX_PDF_LINES the request is refused with the field, not
    left to run into the worker timeout. The XML endpoints keep their own (much higher) limit."""
    from pipeline.settings import get_settings

    monkeypatch.setenv("EINVOICE_MAX_PDF_LINES", "3")
    get_settings.cache_clear()
    try:
        resp = post(client, invoice_request(4, "EN16931"))
        assert resp.status_code == 400, resp.text
        [err] = resp.json["errors"]
        assert (err["code"], err["field"], err["businessTerm"], err["rejectedValue"]) == (
            "TOO_MANY_LINES", "invoice.invoiceLines", "BG-25", 4)
        assert "3" in err["message"]
        assert post(client, invoice_request(3, "EN16931")).status_code == 200
        xml_body = invoice_request(4, "EN16931")
        xml_body["config"] = {"syntax": "CII"}
        resp = client.simulate_post("/v1/invoice/en16931", body=json.dumps(xml_body),
                                    headers={"Content-Type": "application/json"})
        assert resp.status_code == 200, resp.text
    finally:
        get_settings.cache_clear()


@pytest.mark.parametrize("version", ["3.0.2", "1.0", "Factur-X 2.0", "1.09 NOPROFILE"])
def test_an_unknown_zugferd_version_is_refused_on_config_version(client, version):
    body = invoice_request(2)
    body["config"]["version"] = version
    resp = post(client, body)
    assert resp.status_code == 400 and resp.json["errorCode"] == "INVALID_INPUT", resp.text
    [entry] = resp.json["errors"]
    assert (entry["field"], entry["rejectedValue"]) == ("config.version", version)


@pytest.mark.parametrize("version", ["1.09", "Factur-X 1.09", "Factur-X 1.09 EN16931"])
def test_the_factur_x_release_is_honoured_as_config_version(client, version):
    body = invoice_request(2)
    body["config"]["version"] = version
    resp = post(client, body)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "application/pdf"


# --- each finding once, with the value sent -------------------------------------------------------------------

def test_a_422_lists_each_finding_once_with_the_value_sent(client):
    """The BASIC profile's Schematron reports BR-CO-16 under its own id (FX-SCH-A-000122, message `[BR-CO-16]...`)
    and the EN 16931 rules under BR-CO-16: one entry, the one that maps to the field, with the value sent."""
    body = json.loads((REPO / "fixtures" / "manual-totals.json").read_text())
    body["config"]["profile"] = "BASIC"
    resp = post(client, body)
    assert resp.status_code == 422
    rules = [e for e in resp.json["errors"] if e["code"] != "PROFILE_WITHOUT_ROUNDING_AMOUNT"]
    assert [(e["code"], e["field"], e["rejectedValue"]) for e in rules] == [
        ("BR-CO-16", "invoice.documentTotals.payableAmount", 99.2)]


def test_a_profile_report_lists_each_finding_once():
    """The Factur-X EN16931 Schematron repeats CII-SR-475/476 that the EN 16931 pack reports too."""
    from pipeline.check import generated, profiles
    from pipeline.flows.generate_xml import normalize
    from pipeline.invoice.request_json import with_config
    from pipeline.write.transform import to_profile

    request = json.loads(with_config((REPO / "fixtures" / "invoice-all-fields.json").read_bytes(), syntax="CII"))
    documents = request["invoice"]["additionalSupportingDocuments"]
    documents.append(dict(documents[0], reference="Stundennachweis-04", attachedDocumentFilename="s-04.pdf"))
    _, canonical = normalize(json.dumps(request).encode(), "zugferd")  # two named files: CII-SR-475 / 476
    issues = generated.validate_profile_xml(to_profile(canonical, specs.PROFILES["EN16931"]), specs.PROFILES["EN16931"])
    keys = [(profiles.rule_id(i), i.location.xpath if i.location else None) for i in issues]
    assert {"CII-SR-475", "CII-SR-476"} <= {k[0] for k in keys}
    assert len(keys) == len(set(keys))
