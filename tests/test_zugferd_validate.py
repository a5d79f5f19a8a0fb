"""POST /v1/invoice/zugferd/validate against the Mustang and horstoeko sample PDFs (their stated verdicts), our own
PDFs, and hostile PDFs (encrypted, JavaScript, decompression bombs, not a PDF)."""
from __future__ import annotations

import io
import json
import re
import zlib

import falcon.testing
import pikepdf
import pytest
from lxml import html as lxml_html

from pipeline.invoice.specs import CII_NS as CII
from pipeline.service.app import create_app
from tests.conftest import CORPUS
from tests.test_zugferd_samples import invoice_request

MUSTANG = CORPUS / "mustangproject"
HORSTOEKO = CORPUS / "horstoeko-zugferd"
PDF_SIDE = ("PDFA", "XMP_", "PDF_", "FX_")  # codes of the PDF/A-3, XMP and container checks


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def upload(client, data: bytes, request: dict | None = None, headers: dict | None = None):
    boundary = "----h5boundary7MA4YWxkTrZu0gW"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"invoice.pdf\"\r\n"
            f"Content-Type: application/pdf\r\n\r\n").encode() + data + (
            f"\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"request\"\r\n"
            f"Content-Type: application/json\r\n\r\n{json.dumps(request or {})}\r\n--{boundary}--\r\n").encode()
    return client.simulate_post("/v1/invoice/zugferd/validate", body=body,
                                headers={"Content-Type": f"multipart/form-data; boundary={boundary}", **(headers or {})})


def errors(report: dict, side: str | None = None) -> list[str]:
    codes = [i["code"] for i in report["issues"] if i["severity"] == "ERROR"]
    if side == "pdf":
        return [c for c in codes if c.startswith(PDF_SIDE)]
    if side == "xml":
        return [c for c in codes if not c.startswith(PDF_SIDE)]
    return codes


def not_judged(report: dict) -> list[str]:
    return [n["code"] for n in report["notJudged"]]


def indeterminate(report: dict, *codes: str) -> bool:
    """Not judged for these reasons, no error: never valid (`pipeline.check.verdict`)."""
    return (report["verdict"], report["valid"], not_judged(report)) == ("indeterminate", False, list(codes))


def expectations(source) -> dict[str, dict]:
    data = json.loads((source / "expected.json").read_text())
    return {e["path"]: e for e in data["files"] if e["path"].endswith(".pdf")}


MUSTANG_STATED = {p: e["expected"]["mustang_validator_expectation"] for p, e in expectations(MUSTANG).items()
                  if e["expected"].get("mustang_validator_expectation")}


def test_the_corpus_states_verdicts_for_these_pdfs():
    assert set(MUSTANG_STATED) == {"validator/103767-Invoice-2026-03-24-1.pdf", "validator/invalidXMP-ParseError.pdf",
                                   "validator/invalidXRechnung.pdf", "validator/validV1WithAdditionalData.pdf",
                                   "validator/validXRechnung.pdf"}


@pytest.mark.parametrize("path", sorted(MUSTANG_STATED))
def test_mustang_verdicts(client, path):
    """Mustang's JUnit verdicts (veraPDF for the PDF part, XSD + Schematron for the XML part)."""
    stated = MUSTANG_STATED[path]
    resp = upload(client, (MUSTANG / path).read_bytes())
    assert resp.status_code == 200
    report = resp.json
    if report["version"] == "ZUGFeRD 1.0" or "xrechnung_1.2" in json.dumps(report["notJudged"]):
        # claims rules this service does not have (ZUGFeRD 1.0, XRechnung 1.2): Mustang judges them on rules of its
        # own; here they are indeterminate, never valid, after the checks that could run (issue 37)
        assert indeterminate(report, "RULES-NOT-INSTALLED"), report
        return
    if "overall" in stated:
        assert report["valid"] is (stated["overall"] == "valid"), report["issues"]
    if "pdf" in stated:
        assert (errors(report, "pdf") == []) is (stated["pdf"] == "valid"), report["issues"]
    if "xml" in stated:
        assert (errors(report, "xml") == []) is (stated["xml"] == "valid"), report["issues"]
    if stated.get("errors") == 0:
        assert report["summary"]["errors"] == 0, report["issues"]
    if "XMP" in stated.get("message", ""):
        assert "XMP_NOT_WELL_FORMED" in errors(report)


@pytest.mark.parametrize("path", ["validator/invalidXRechnung.pdf", "validator/validXRechnung.pdf"])
def test_xrechnung_1_2_is_indeterminate_after_the_en16931_rules(client, path):
    """XRechnung 1.2's rules are not installed (only 3.0's): the embedded invoice is held to the EN 16931 rules it
    builds on and stays unjudged as XRechnung 1.2 (Mustang, with XRechnung 1.2 rules, finds BR-DE-2 in one)."""
    report = upload(client, (MUSTANG / path).read_bytes()).json
    assert indeterminate(report, "RULES-NOT-INSTALLED"), report
    assert "XRechnung 1.2" in report["notJudged"][0]["message"]
    assert [r["pack"] for r in report["rules"]] == ["pdf", "en16931"]


# Files without a stated verdict: the facts recorded in expected.json (embedded XML valid on the official Factur-X
# XSD + Schematron, PDF/A-3) -> valid, and the files named/observed as broken -> invalid with the reason.
OBSERVED_VALID = [
    (MUSTANG, "library/EN16931_1_Teilrechnung.pdf", "EN16931"),
    (HORSTOEKO, "assets/pdf_fx_extended_1.pdf", "EXTENDED"),
    (HORSTOEKO, "assets/pdf_zf_en16931_1.pdf", "EN16931"),
    (HORSTOEKO, "assets/pdf_zf_en16931_3.pdf", "EN16931"),
]


@pytest.mark.parametrize("source,path,profile", OBSERVED_VALID)
def test_third_party_pdfs_accepted(client, source, path, profile):
    entry = expectations(source)[path]
    (xml_entry,) = entry["pdf"]["embedded_xml"].values()
    observed = xml_entry["observed"]
    key = f"facturx-1.09-{profile.lower()}"
    assert observed[f"xsd {key}"]["valid"] and not set(observed[key]) - {"warning"}  # the corpus' own facts
    report = upload(client, (source / path).read_bytes()).json
    assert report["valid"], report["issues"]
    assert report["version"] == f"Factur-X 1.09 {profile}"


def test_pdfa4_is_named_as_not_checked_and_indeterminate(client):
    """A PDF/A-4 file: the PDF/A-3 check does not apply and PDF/A-4 is not checked here, so the file is not valid
    on this report, though its invoice is (observed: valid on the Factur-X XSD + Schematron)."""
    report = upload(client, (MUSTANG / "library/EXTENDED_Fremdwaehrung_wdis_fx-pdfa4.pdf").read_bytes()).json
    assert indeterminate(report, "PDFA_4_NOT_CHECKED"), report
    assert report["notJudged"][0]["claim"] == "PDF/A-4" and report["summary"]["errors"] == 0
    assert [(r["pack"], r.get("profile")) for r in report["rules"]] == [("pdf", None), ("factur-x", "EXTENDED")]
    assert "pdfa" not in [s["step"] for s in report["rules"][0]["steps"]]  # the PDF/A walk did not run


@pytest.mark.parametrize("source,path,code", [
    (MUSTANG, "validator/XMLinvalidV2PDF.pdf", "XSD-ELEMENT-CONTENT"),  # observed: Factur-X XSD rejects it
    (MUSTANG, "validator/corruptedV2PDF.pdf", "FX-SCH-A-000556"),       # BT-24 is a draft identifier
    (HORSTOEKO, "assets/pdf_invalid.pdf", "FX_NO_EMBEDDED_INVOICE"),
    (MUSTANG, "cli/EmptyPDFA1.pdf", "FX_NO_EMBEDDED_INVOICE"),
    (MUSTANG, "library/MustangGnuaccountingBeispielRE-20171118_506blanko.pdf", "FX_NO_EMBEDDED_INVOICE"),
])
def test_broken_pdfs_are_invalid_with_a_clear_issue(client, source, path, code):
    resp = upload(client, (source / path).read_bytes())
    assert resp.status_code == 200
    assert resp.json["valid"] is False
    assert code in errors(resp.json)


def test_zugferd_1_pdf_is_named_as_what_it_is(client):
    """ZUGFeRD 1.0 predates EN 16931: not an EN 16931 invoice, not valid as one, and not labelled Factur-X (issue
    23); its XSD is still checked."""
    report = upload(client, (MUSTANG / "library/zugferd_invoice.pdf").read_bytes()).json
    assert report["version"] == "ZUGFeRD 1.0" and indeterminate(report, "RULES-NOT-INSTALLED"), report
    assert "ZUGFeRD 1.0" in report["notJudged"][0]["message"] and errors(report) == []
    assert report["rules"][-1] == {"pack": "zugferd-1.0", "version": "1.0",
                                   "steps": [{"step": "xsd", "name": "zugferd/ZUGFeRD1p0.xsd"}]}


def test_unrecognised_constructs_are_warnings(client):
    """pikepdf's 'unsupported' findings (e.g. /OpenAction, xmpMM:History) never make a file invalid."""
    report = upload(client, (MUSTANG / "library/EN16931_1_Teilrechnung.pdf").read_bytes()).json
    assert report["valid"]
    assert any(i["code"].startswith("PDFA_NOT_CHECKED:") and i["severity"] == "WARNING" for i in report["issues"])


# --- our own PDFs -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def own_pdf(client) -> bytes:
    resp = client.simulate_post("/v1/invoice/zugferd", body=json.dumps(invoice_request(3, "EN16931", "de")),
                                headers={"Content-Type": "application/json"})
    assert resp.status_code == 200, resp.text
    return resp.content


def test_own_pdf_is_valid(client, own_pdf):
    report = upload(client, own_pdf, {"version": None}).json
    assert report["valid"] and report["summary"]["errors"] == 0, report["issues"]
    assert report["syntax"] == "CII" and report["requestId"]


def rewrite(data: bytes, change, **save) -> bytes:
    with pikepdf.open(io.BytesIO(data)) as doc:
        change(doc)
        out = io.BytesIO()
        doc.save(out, **save)
        return out.getvalue()


def _cut_after(data: bytes, marker: bytes) -> bytes:
    return data[:data.rfind(marker)]


def _wrong_startxref(data: bytes) -> bytes:
    at = data.rfind(b"startxref")
    offset = re.match(rb"startxref\s+(\d+)", data[at:])
    return data[:at + offset.start(1)] + str(int(offset.group(1)) + 7).encode() + data[at + offset.end(1):]


@pytest.mark.parametrize("change,codes", [
    (lambda d: b"GARBAGE\n" + d, {"PDFA:ISO_19005_3:6.1.2-1"}),
    (lambda d: d + b"\nGARBAGE", {"PDFA:ISO_19005_3:6.1.3-3"}),
    (lambda d: _cut_after(d, b"%%EOF"), {"PDFA:ISO_19005_3:6.1.3-3"}),
    (_wrong_startxref, {"PDF_DAMAGED"}),
    (lambda d: d[:d.index(b"\n") + 1] + b"%abcd" + d[d.index(b"\n") + 6:], {"PDFA:ISO_19005_3:6.1.2-2"}),
], ids=["bytes-before-the-header", "bytes-after-eof", "no-eof", "wrong-startxref", "no-binary-comment"])
def test_a_pdf_damaged_at_file_level_is_not_pdfa(client, own_pdf, change, codes):
    """What readers silently repair is no PDF/A-3 (ISO 19005-3 6.1.2, 6.1.3): pikepdf.pdfa trusts the file
    syntax of what qpdf wrote, so these are ours; the embedded invoice is still read and judged."""
    assert own_pdf[own_pdf.index(b"\n") + 1:own_pdf.index(b"\n") + 2] == b"%"   # the binary comment replaced above
    report = upload(client, change(own_pdf)).json
    assert report["valid"] is False and set(errors(report, "pdf")) == codes, report["issues"]
    assert report["syntax"] == "CII"


def test_pdf_without_xmp_fx_properties_is_invalid(client, own_pdf):
    def strip(doc):
        from lxml import etree
        root = etree.fromstring(doc.Root.Metadata.read_bytes())
        for prop in root.xpath("//*[namespace-uri() = 'urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#']"):
            prop.getparent().remove(prop)
        doc.Root.Metadata.write(etree.tostring(root))
    report = upload(client, rewrite(own_pdf, strip)).json
    assert "XMP_FX_MISSING" in errors(report)


def test_a_document_file_name_that_names_no_embedded_file_is_a_warning(client, own_pdf):
    """The invoice is still found by its usual name (factur-x.xml) and judged; the XMP's wrong name is said."""
    def rename(doc):
        doc.Root.Metadata.write(doc.Root.Metadata.read_bytes().replace(b">factur-x.xml<", b">invoice.xml<"))
    report = upload(client, rewrite(own_pdf, rename)).json
    warning = next(i for i in report["issues"] if i["code"] == "XMP_FX_DOCUMENT_FILE_NAME")
    assert warning["severity"] == "WARNING" and "'invoice.xml'" in warning["message"]
    assert "'factur-x.xml'" in warning["message"]
    assert report["valid"] and report["syntax"] == "CII", report["issues"]


def _attach(name: str, data: bytes):
    """A change for `rewrite`: one more embedded file, listed in the name tree and the catalog's /AF as the invoice."""
    def change(doc):
        spec = pikepdf.AttachedFileSpec(doc, data, mime_type="text/xml", filename=name,
                                        relationship=pikepdf.Name.Alternative)
        doc.attachments[name] = spec
        doc.Root.AF.append(pikepdf.NameTree(doc.Root.Names.EmbeddedFiles)[name])
    return change


def _embedded_invoice(pdf: bytes) -> bytes:
    with pikepdf.open(io.BytesIO(pdf)) as doc:
        return doc.attachments["factur-x.xml"].get_file().read_bytes()


def test_a_second_invoice_file_with_other_content_is_not_vouched_for(client, own_pdf):
    """factur-x.xml is judged; an xrechnung.xml beside it with another invoice is what some readers take (Mustang
    reads any of the invoice names): the report cannot call the PDF valid, and says which file it did not judge."""
    other = _embedded_invoice(own_pdf).replace(b"<ram:ID>", b"<ram:ID>X", 1)
    report = upload(client, rewrite(own_pdf, _attach("xrechnung.xml", other))).json
    assert indeterminate(report, "FX_SECOND_INVOICE"), report
    assert "'xrechnung.xml'" in report["notJudged"][0]["message"]
    same = upload(client, rewrite(own_pdf, _attach("xrechnung.xml", _embedded_invoice(own_pdf)))).json
    assert same["verdict"] == "valid", same  # the same bytes twice: one invoice
    from pipeline.flows.parse import parse
    parsed = parse(rewrite(own_pdf, _attach("xrechnung.xml", other)))   # parse says it too: not a complete reading
    assert not parsed.complete and [p.code for p in parsed.problems] == ["FX_SECOND_INVOICE"]


def test_another_spelling_of_the_invoice_name_does_not_take_its_place(client, own_pdf):
    """'FACTUR-X.XML' sorts before 'factur-x.xml' in the name tree: the file of the exact name is the invoice (it
    was the other one, read as malformed XML), and the other spelling is named as a second invoice file."""
    report = upload(client, rewrite(own_pdf, _attach("FACTUR-X.XML", b"not xml"))).json
    assert "XML-MALFORMED" not in errors(report) and report["syntax"] == "CII", report
    assert indeterminate(report, "FX_SECOND_INVOICE") and "'FACTUR-X.XML'" in report["notJudged"][0]["message"]


def test_the_pdfa_checker_s_findings_are_german_in_a_german_report(client, own_pdf):
    """pikepdf.pdfa writes English; the forms it uses are said in German (names and values as in the file), any
    other is quoted as the checker's; so are the names of the PDF's own checks under "Angewandte Regeln"."""
    from pipeline.pdf import checks

    def part_1(doc):
        doc.Root.Metadata.write(doc.Root.Metadata.read_bytes().replace(b"<pdfaid:part>3<", b"<pdfaid:part>1<"))
    data = rewrite(own_pdf, part_1)
    assert "pdfaid:part is '1', expected 3" in json.dumps(upload(client, data).json)
    resp = upload(client, data, {"metadataLanguage": "de"}, headers={"Accept": "text/html"})
    text = " ".join(lxml_html.document_fromstring(resp.content).body.text_content().split())
    assert "pdfaid:part ist '1', erwartet 3" in text and "expected" not in text
    assert "Factur-X-/ZUGFeRD-XMP-Metadaten → eingebettete Rechnungsdatei" in text
    assert "embedded invoice file" not in text
    assert checks.pdfa_message_de("embedded files are not supported") == \
        "eingebettete Dateien werden nicht unterstützt"
    assert checks.pdfa_message_de("Type 3 fonts are not supported") == \
        "(Meldung des Prüfers pikepdf) Type 3 fonts are not supported"


@pytest.mark.parametrize("user", ["", "secret"])
def test_encrypted_pdf_is_reported(client, own_pdf, user):
    data = rewrite(own_pdf, lambda doc: None, encryption=pikepdf.Encryption(owner="owner", user=user))
    resp = upload(client, data)
    assert resp.status_code == 200
    assert resp.json["valid"] is False and "PDF_ENCRYPTED" in errors(resp.json)


def test_javascript_is_reported_not_run(client, own_pdf):
    def add_js(doc):
        action = doc.make_indirect(pikepdf.Dictionary(S=pikepdf.Name.JavaScript, JS=pikepdf.String("app.alert(1)")))
        doc.Root.OpenAction = action
    report = upload(client, rewrite(own_pdf, add_js)).json
    assert report["valid"] is False and "PDF_JAVASCRIPT" in errors(report)


def _bomb(size: int) -> bytes:
    z = zlib.compressobj(9)
    chunk = b"\0" * (1 << 20)
    return b"".join(z.compress(chunk) for _ in range(size >> 20)) + z.flush()


@pytest.mark.parametrize("depth", [150, 300])
def test_deeply_nested_embedded_invoice_is_a_finding_not_a_500(client, own_pdf, depth):
    """lxml reads up to 2048 levels, Saxon's parser 100: an embedded invoice in between was an unhandled Saxon error
    (500); now it is reported as XML that cannot be read."""
    ram = "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"
    deep = (f'<rsm:CrossIndustryInvoice xmlns:rsm="{CII}" xmlns:ram="{ram}"><rsm:ExchangedDocumentContext>'
            '<ram:GuidelineSpecifiedDocumentContextParameter><ram:ID>urn:cen.eu:en16931:2017</ram:ID>'
            '</ram:GuidelineSpecifiedDocumentContextParameter></rsm:ExchangedDocumentContext>'
            f'{"<a>" * depth}{"</a>" * depth}</rsm:CrossIndustryInvoice>').encode()

    def swap(doc):
        doc.Root.AF[0].EF.F.write(deep)
    resp = upload(client, rewrite(own_pdf, swap))
    assert resp.status_code == 200, resp.text
    assert resp.json["valid"] is False and "XML-MALFORMED" in errors(resp.json, "xml")


def test_decompression_bomb_in_the_embedded_file(client, own_pdf):
    """A 1 GiB Flate bomb as the invoice: refused after the cap, without inflating it."""
    bomb = _bomb(1 << 30)

    def swap(doc):
        stream = doc.Root.AF[0].EF.F
        stream.write(bomb, filter=pikepdf.Name.FlateDecode)
    report = upload(client, rewrite(own_pdf, swap)).json
    assert report["valid"] is False
    assert {"PDF_STREAM_TOO_LARGE"} <= set(errors(report)) or {"FX_XML_TOO_LARGE"} <= set(errors(report))


@pytest.mark.parametrize("data", [b"", b"<?xml version='1.0'?><a/>", b"%PDF-1.7\n garbage without objects",
                                  b"\x89PNG\r\n\x1a\n" + b"\0" * 100])
def test_not_a_pdf_is_400(client, data):
    resp = upload(client, data)
    assert resp.status_code == 400
    assert resp.json["errorCode"] == "INVALID_PDF"
    # an XML invoice sent here is told where XML goes
    assert ("/v1/invoice/xrechnung/validate" in resp.json["errors"][0]["message"]) == data.startswith(b"<?xml")


def test_unsupported_version_is_400(client, own_pdf):
    resp = upload(client, own_pdf, {"version": "9.99"})
    assert resp.status_code == 400 and resp.json["errorCode"] == "UNSUPPORTED_VERSION"


def test_the_version_a_report_names_is_accepted_back(client, own_pdf):
    report = upload(client, own_pdf).json
    assert report["version"].startswith("Factur-X 1.09")
    for version in (report["version"], "Factur-X 1.09", "1.09"):
        again = upload(client, own_pdf, {"version": version})
        assert again.status_code == 200, again.text
        assert again.json["version"] == report["version"]


def test_missing_request_part_is_400(client):
    resp = client.simulate_post("/v1/invoice/zugferd/validate", body=b"x",
                                headers={"Content-Type": "application/pdf"})
    assert resp.status_code == 400


def test_pdfa_check_has_a_time_limit(client, own_pdf, monkeypatch):
    from pipeline.pdf import checks
    monkeypatch.setattr(checks, "PDFA_CHECK_SECONDS", 0.001)
    report = upload(client, own_pdf).json
    assert indeterminate(report, "PDFA_CHECK_TIMEOUT"), report  # a check that did not complete passes nothing


def test_object_count_is_capped(client, own_pdf, monkeypatch):
    from pipeline.pdf import checks
    monkeypatch.setattr(checks, "MAX_OBJECTS", 10)
    report = upload(client, own_pdf).json
    assert indeterminate(report, "PDF_TOO_COMPLEX"), report


def test_false_alarms_are_dropped_only_when_the_extension_schema_is_declared(client, own_pdf):
    """Without the pdfaExtension declaration the fx properties really are not permitted: pikepdf's finding stays."""
    def undeclare(doc):
        from lxml import etree
        root = etree.fromstring(doc.Root.Metadata.read_bytes())
        for el in root.xpath("//*[namespace-uri() = 'http://www.aiim.org/pdfa/ns/extension/']"):
            el.getparent().remove(el)
        doc.Root.Metadata.write(etree.tostring(root))
    report = upload(client, rewrite(own_pdf, undeclare)).json
    codes = errors(report)
    assert "XMP_EXTENSION_SCHEMA_MISSING" in codes
    assert "PDFA:ISO_19005_3:6.6.2.3.1-1" in codes


@pytest.mark.parametrize("encode", ["predictor", "hex-chain"])
def test_decompression_bombs_behind_predictors_and_filter_chains(client, own_pdf, encode):
    """A 256 MiB Flate bomb in a stream that carries a predictor or sits behind another filter: refused from its
    first 64 MiB, never inflated whole (the PDF/A walk would otherwise have read it)."""
    bomb = _bomb(256 << 20)

    def add(doc):
        stream = pikepdf.Stream(doc, b"")
        if encode == "hex-chain":
            stream.write(bomb.hex().encode(), filter=pikepdf.Array([pikepdf.Name.ASCIIHexDecode,
                                                                     pikepdf.Name.FlateDecode]))
        else:
            stream.write(bomb, filter=pikepdf.Name.FlateDecode, decode_parms=pikepdf.Dictionary(Predictor=12, Columns=4))
        doc.pages[0].Resources.XObject = pikepdf.Dictionary(Bomb=doc.make_indirect(stream))
    # saved as built: qpdf must not decode and re-encode the stream
    data = rewrite(own_pdf, add, stream_decode_level=pikepdf.StreamDecodeLevel.none, compress_streams=False)
    with pikepdf.open(io.BytesIO(data)) as doc:
        stream = doc.pages[0].Resources.XObject.Bomb
        assert "/DecodeParms" in stream or isinstance(stream.Filter, pikepdf.Array)
    report = upload(client, data).json
    assert indeterminate(report, "PDF_STREAM_TOO_LARGE"), report


def test_undecodable_text_in_a_pdf_is_reported_as_json_and_as_a_page(own_pdf):
    """Names and strings of a damaged file can decode to lone surrogates; a finding holds U+FFFD instead, so the
    JSON report and the report page (UTF-8) both carry it. The page gave a 500 (found by fuzzing: a key name
    /Resour\x84es in a page dictionary)."""
    from pipeline.check.report import Issue, Location, Report
    from pipeline.pdf.report_page import report_html, report_pdf

    report = Report("v", None, [Issue("ERROR", "X\udcc4", "bad \udcc4 name", Location(xpath="/a\ud800",
                                                                                    pdfObject="obj \udc84"))])
    text = json.dumps(report.to_dict(), ensure_ascii=False).encode("utf-8")
    assert "\ufffd".encode() in text and "\\ud" not in json.dumps(report.to_dict())
    assert "bad \ufffd name" in report_html(report, "x.pdf").decode("utf-8")
    assert report_pdf(report, "x.pdf").startswith(b"%PDF-")


def test_a_pdf_with_an_undecodable_key_name_gets_its_report_page(own_pdf, client):
    with pikepdf.open(io.BytesIO(own_pdf)) as doc:  # objects in plain sight, then one byte of a key name changed
        out = io.BytesIO()
        doc.save(out, object_stream_mode=pikepdf.ObjectStreamMode.disable, compress_streams=False)
    data = out.getvalue().replace(b"/Resources", b"/Resour\x84es", 1)
    assert "PDFA_NOT_CHECKED" in json.dumps(upload(client, data).json)  # the finding that names the key
    for accept in ("text/html", "application/pdf"):
        resp = upload(client, data, headers={"Accept": accept})
        assert resp.status_code == 200 and resp.headers["content-type"].startswith(accept), resp.text[:300]


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

def damaged(pdf: bytes, draw) -> bytes:
    """`pdf` with up to 20 bytes overwritten, runs deleted or junk inserted."""
    data = bytearray(pdf)
    for _ in range(draw(st.integers(1, 20))):
        pos = draw(st.integers(0, len(data) - 1))
        how = draw(st.sampled_from(["byte", "delete", "insert"]))
        if how == "byte":
            data[pos] = draw(st.integers(0, 255))
        elif how == "delete":
            del data[pos:pos + draw(st.integers(1, 200))]
        else:
            data[pos:pos] = draw(st.binary(min_size=1, max_size=50))
    return bytes(data)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_damaged_pdfs_get_a_report_or_a_400(client, own_pdf, data):
    resp = upload(client, damaged(own_pdf, data.draw))
    assert resp.status_code in (200, 400), resp.text
    if resp.status_code == 200:
        assert resp.json["valid"] == (resp.json["summary"]["errors"] == 0)
    else:
        assert resp.json["errorCode"] == "INVALID_PDF"
