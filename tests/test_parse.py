"""Reading e-invoices (POST /v1/invoice/parse, `pipeline parse`, `pipeline run read`): CII, UBL and ZUGFeRD PDFs into
the JSON invoice generation takes. The corpus round trip (parse -> generate -> same business terms as the source)
is in test_roundtrip.py; here: our own documents come back as they were sent, PDFs read as their embedded XML,
nothing is dropped without being listed, and bad input gets a clear 400."""
from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import falcon.testing
import pytest

from conftest import CORPUS
from pipeline.cli.golden import FIXTURES, specs_of, syntaxes_of, invoice_fixtures
from pipeline.flows.generate_xml import generate_xml, normalize
from pipeline.flows.generate_zugferd import generate_zugferd
from pipeline.flows.parse import parse
from pipeline.invoice.request_json import dump_request, load_request, with_config
from pipeline.read.to_json import invoice_json
from pipeline.service import schemas
from pipeline.service.app import create_app
from pipeline.service.platform import default_cost
from roundtrip.reader import flatten

REPO = Path(__file__).resolve().parents[1]
FIXTURE_CASES = [(f, spec, syntax) for f in invoice_fixtures() for spec in specs_of(f)
                 for syntax in syntaxes_of(f)]
# What generation adds or cannot write: BT-24 (an XRechnung id is read back into the request so that extension and
# CVD ids survive), the BT-23 default of the xrechnung endpoint, and invoiceSubType (no binding in either syntax).
ADDED_BY_GENERATION = {"processControl.specificationIdentifier", "processControl.businessProcessType"}
NOT_IN_THE_SYNTAXES = {"invoiceSubType"}
PDFS_WITH_AN_INVOICE = ["mustangproject/library/EN16931_1_Teilrechnung.pdf",
                        "mustangproject/library/EXTENDED_Fremdwaehrung_wdis_fx-pdfa4.pdf",
                        "mustangproject/validator/validXRechnung.pdf",
                        "horstoeko-zugferd/assets/pdf_zf_en16931_1.pdf",
                        "horstoeko-zugferd/assets/pdf_zf_xrechnung_1.pdf",
                        "horstoeko-zugferd/assets/pdf_fx_extended_1.pdf"]
INCOMPLETE = CORPUS / "en16931-cen/cii/examples/CII_example3.xml"  # no seller contact point (BT-41), required by the model


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def upload(client, data: bytes, request: dict | None = None, name: str = "invoice.xml", path: str = "/v1/invoice/parse",
           headers: dict | None = None):
    files = {"file": (name, data, "application/octet-stream")}
    if request is not None:
        files["request"] = ("request.json", json.dumps(request).encode(), "application/json")
    boundary = "----parse-test"
    body = b"".join(f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{fn}"\r\n'
                    f"Content-Type: {ct}\r\n\r\n".encode() + content + b"\r\n"
                    for field, (fn, content, ct) in files.items()) + f"--{boundary}--\r\n".encode()
    return client.simulate_post(path, body=body, headers={"Content-Type": f"multipart/form-data; boundary={boundary}",
                                                          **(headers or {})})


def _comparable(invoice: dict) -> dict:
    return {k: (format(v.normalize(), "f") if isinstance(v, Decimal) else v) for k, v in flatten(invoice).items()
            if k not in ADDED_BY_GENERATION and k not in NOT_IN_THE_SYNTAXES}


@pytest.mark.parametrize("fixture,spec,syntax", FIXTURE_CASES,
                         ids=[f"{f.stem}.{spec}.{syntax.lower()}" for f, spec, syntax in FIXTURE_CASES])
def test_our_documents_read_back_as_they_were_sent(fixture, spec, syntax):
    """parse(generate(fixture)) is the fixture with the amounts AUTO filled in: every field, nothing unmapped."""
    body = with_config(fixture.read_bytes(), syntax=syntax)
    xml, _ = generate_xml(body, spec)
    parsed = parse(xml)
    assert parsed.complete and parsed.unmapped == []
    # a French invoice's BT-24 is the EN 16931 id: it reads as en16931; the French rules are the sender's choice
    read_spec = "en16931" if spec == "fr-ctc" else spec
    assert parsed.config == {"spec": read_spec, "syntax": syntax, "calculationMode": "MANUAL"}
    assert _comparable(parsed.invoice) == _comparable(invoice_json(normalize(body, spec)[1]))
    again, report = generate_xml(dump_request({"invoice": parsed.invoice, "config": {**parsed.config, "spec": spec}}),
                                 spec)
    assert report.valid and again == xml  # written back unchanged, byte for byte


def test_a_zugferd_pdf_reads_as_its_embedded_invoice():
    body = (FIXTURES / "invoice-all-fields.json").read_bytes()
    pdf = generate_zugferd(with_config(body, syntax="CII", profile="EN16931"))
    parsed = parse(pdf)
    assert parsed.source.to_dict() == {"syntax": "CII", "specificationIdentifier": "urn:cen.eu:en16931:2017",
                                       "profile": "EN16931", "embeddedFileName": "factur-x.xml"}
    assert parsed.config == {"spec": "zugferd", "syntax": "CII", "profile": "EN16931", "calculationMode": "MANUAL"}
    assert parsed.complete and parsed.unmapped == []
    assert parsed.invoice == parse(parsed.source.xml).invoice
    back = generate_zugferd(dump_request({"invoice": parsed.invoice, "config": parsed.config}))
    assert parse(back).invoice == parsed.invoice


@pytest.mark.parametrize("name", PDFS_WITH_AN_INVOICE)
def test_official_pdfs_read_as_their_embedded_xml(name):
    parsed = parse((CORPUS / name).read_bytes())
    assert parsed.source.embedded_file_name and parsed.source.pdf is not None
    alone = parse(parsed.source.xml)
    assert parsed.invoice == alone.invoice and parsed.unmapped == alone.unmapped
    assert parsed.source.profile is not None and parsed.config.get("profile") == parsed.source.profile.name


def test_what_the_model_cannot_carry_is_listed_with_its_position():
    """What the model has no field for is unmapped, each entry with line, column and value: here the second
    payment terms of an EXTENDED CII. Its line hierarchy (BT-X-304, BT-X-8) is carried since issue 23, as UBL's nested
    SubInvoiceLine is."""
    source = CORPUS / "mustangproject/library/subinvoicelines/Extended_SubInvoiceLines_Hardware_Bsp2.xml"
    parsed = parse(source.read_bytes())
    second = [u for u in parsed.unmapped if "SpecifiedTradePaymentTerms[2]" in u["xpath"] and u["value"]]
    assert second and all(u["line"] and u["column"] for u in second)
    text = source.read_text("utf-8").splitlines()
    for u in second:
        assert u["value"] in text[u["line"] - 1], u
    assert not [u for u in parsed.unmapped if u["xpath"].endswith(("ram:ParentLineID", "ram:LineStatusReasonCode"))]
    assert [line.get("parentLineIdentifier") for line in parsed.invoice["invoiceLines"]][:3] == ["01", "01", None]
    ubl = parse((CORPUS / "xrechnung-testsuite/business-cases/extension/04.01a-INVOICE_ubl.xml").read_bytes())
    assert not ubl.unmapped and ubl.invoice["invoiceLines"][0]["subInvoiceLines"]


def test_the_item_price_discount_travels_as_stated():
    """BT-147 is a field (issue 23): a source's discount is kept as stated, even where it is not gross - net, and
    none is made up where the source states none (MANUAL writes what was read)."""
    parsed = parse((CORPUS / "en16931-cen/ubl/examples/guide-example2.xml").read_bytes())
    discounts = {str(line.get("priceDetails", {}).get("priceDiscount")) for line in parsed.invoice["invoiceLines"]}
    assert {"225.00", "0.75"} <= discounts
    assert not [u for u in parsed.unmapped if "Price/cac:AllowanceCharge/cbc:Amount" in u["xpath"]]
    # (tests/test_realworld.py: a gross price without a discount gains none)


@pytest.mark.parametrize("name, shared", [("01.01a-INVOICE_uncefact.xml", True), ("01.01a-INVOICE_ubl.xml", True),
                                          ("03.07a-INVOICE_uncefact.xml", False)])  # 03.07a: a 400 KB attachment
def test_the_source_is_parsed_once_for_reading_and_rules_when_they_read_the_same_text(name, shared):
    """A source read and validated (convert, render with validation) is one Saxon tree for the reading stylesheet and
    the official rules, unless the rules read an attachment as a stand-in: then reading keeps the real base64. Either
    way the canonical document and the report are those of the stages run alone."""
    from pipeline.flows import parse as parse_flow
    from pipeline.flows.validate_xml import validate_xml
    from pipeline.read import canonical as reading

    data = (CORPUS / "xrechnung-testsuite/business-cases/standard" / name).read_bytes()
    source = parse_flow.source_of(data)
    assert (source.reading_tree() is source.rules_tree()) is shared
    assert (source.reading_tree() is None) is not shared
    assert parse_flow.to_canonical(source) == reading.to_canonical(source.xml, source.doc)
    shared_report = parse_flow.validate_source(source).to_dict()
    alone = validate_xml(data, parse_flow.source_spec(source), content_checks=True).to_dict()  # as the endpoint
    assert shared_report == alone and shared_report["valid"]


def _large_documents() -> list[bytes]:
    """A 300-line invoice in both syntaxes: over the 2,000 elements from which read.xsl builds path()s itself."""
    from pipeline import write
    from test_zugferd_samples import invoice_request

    _, canonical = normalize(json.dumps(invoice_request(300)).encode(), "zugferd")
    return [write.to_cii(canonical), write.to_ubl(canonical)]


def test_sources_named_by_id_split_into_the_path_s_path_itself_writes():
    """parse has the reading stylesheets name source nodes by generate-id() (`$src = 'id'`, cheaper than path())
    and `provenance.in_paths` turns the ids into path()s over the lxml tree: the same canonical document, the same
    source paths and the same leaves as with path(), for small and large documents, attributes and CreditNotes;
    and the unmapped walk, which pairs the ids with the elements, lists what it lists with path()s."""
    from pipeline.flows import parse as parse_flow
    from pipeline.read import provenance

    names = ["xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml",
             "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml",
             "xrechnung-testsuite/business-cases/extension/04.01a-INVOICE_ubl.xml",
             "mustangproject/library/subinvoicelines/Extended_SubInvoiceLines_Hardware_Bsp2.xml",
             "en16931-cen/ubl/examples/ubl-tc434-creditnote1.xml"]
    for data in [(CORPUS / n).read_bytes() for n in names] + _large_documents():
        source = parse_flow.source_of(data)
        by_path = provenance.split(parse_flow.to_canonical(source))
        root = source.doc.tree.getroot()
        by_id = provenance.split(parse_flow.to_canonical(source, ids=True), root)
        assert len(by_id.names) == len(list(root.iter("{*}*"))) and not by_id.used & set(by_path.used)
        as_paths = provenance.in_paths(by_id, root)
        assert as_paths.used and any("/@" in p for p in as_paths.used)
        assert (by_id.canonical, as_paths.used, as_paths.leaves) == (by_path.canonical, by_path.used, by_path.leaves)
        assert provenance.source_paths(root) == [provenance.path_of(e, source.doc.position) for e in root.iter("{*}*")]
        some = set(sorted(by_path.used)[::3])  # (two thirds left out, so that there is something to list)
        path = provenance.path_namer(by_id.names, root)
        assert (provenance.unmapped(source.doc, {t for t in by_id.used if path(t) in some}, by_id.names)
                == provenance.unmapped(source.doc, some))
    with pytest.raises(ValueError):  # ids without the tree they name
        provenance.split(parse_flow.to_canonical(parse_flow.source_of(data), ids=True))


def test_an_incomplete_document_answers_200_with_the_missing_paths(client):
    resp = upload(client, INCOMPLETE.read_bytes())
    assert resp.status_code == 200
    body = resp.json
    assert body["complete"] is False and "invoice.seller.contact.contactPoint" in body["missing"]
    assert body["invoice"]["invoiceNumber"] and body["source"]["syntax"] == "CII"


def test_the_endpoint_answers_the_parse_and_on_request_the_report(client):
    data = (CORPUS / "en16931-cen/ubl/examples/ubl-tc434-example1.xml").read_bytes()
    plain = upload(client, data)
    assert plain.status_code == 200 and "validation" not in plain.json
    body = upload(client, data, {"validate": True}).json
    assert body["validation"]["valid"] is True and body["validation"]["syntax"] == "UBL"
    assert set(body) >= {"invoice", "config", "source", "unmapped", "complete", "missing"}
    assert isinstance(body["invoice"]["documentTotals"]["payableAmount"], (int, float))  # numbers stay numbers
    assert load_request(plain.content)["invoice"] == parse(data).invoice  # exactly the decimals of the document
    assert upload(client, data, {"validate": "yes"}).status_code == 400
    schemas.ParseResponse.model_validate(body)  # the OpenAPI description is the contract of what is answered
    schemas.ParseResponse.model_validate(upload(client, INCOMPLETE.read_bytes()).json)


@pytest.mark.parametrize("data,code", [
    (b"hello", "XML-MALFORMED"),
    (b"<html><body>not an invoice</body></html>", "XML-UNKNOWN-ROOT"),
    (b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e "e">]><x>&e;</x>', "XML-DTD-FORBIDDEN"),
    (b"", "XML-EMPTY"),
])
def test_what_is_not_an_einvoice_is_a_400_saying_what_was_found(client, data, code):
    resp = upload(client, data)
    assert resp.status_code == 400, resp.text
    assert resp.json["errorCode"] == "NOT_AN_EINVOICE" and resp.json["errors"][0]["code"] == code


def test_a_pdf_without_an_invoice_and_zugferd_1_are_refused(client):
    plain = upload(client, (CORPUS / "mustangproject/cli/EmptyPDFA1.pdf").read_bytes(), name="a.pdf")
    assert plain.status_code == 400 and "no readable e-invoice" in plain.json["message"]
    v1 = upload(client, (CORPUS / "mustangproject/library/zugferd_invoice.pdf").read_bytes())
    assert v1.status_code == 400 and "ZUGFeRD 1.0" in v1.json["message"]
    broken = upload(client, b"%PDF-1.7\n garbage", name="b.pdf")
    assert broken.status_code == 400 and broken.json["errorCode"] == "INVALID_PDF"


def test_parsing_costs_like_validation_and_converting_like_generation():
    assert default_cost("POST", "/v1/invoice/parse") == 0
    assert default_cost("POST", "/v1/invoice/render") == 0
    assert default_cost("POST", "/v1/invoice/convert") == 1


def _cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline", *args], input=stdin, capture_output=True, cwd=REPO,
                          timeout=120)


def test_cli_parse_writes_a_request_generate_takes(tmp_path):
    xml, _ = generate_xml((FIXTURES / "vat-k-intra-community.json").read_bytes(), "en16931")
    source = tmp_path / "in.xml"
    source.write_bytes(xml)
    out = tmp_path / "request.json"
    assert _cli("parse", str(source), "--request-only", "-o", str(out)).returncode == 0
    assert set(json.loads(out.read_text())) == {"invoice", "config"}
    again = _cli("generate", str(out), "--spec", "en16931")
    assert again.returncode == 0 and again.stdout == xml
    incomplete = _cli("parse", str(INCOMPLETE))
    assert incomplete.returncode == 1 and "contactPoint" in incomplete.stderr.decode()
    assert json.loads(incomplete.stdout)["complete"] is False
    junk = tmp_path / "junk.txt"
    junk.write_text("hello")
    assert _cli("parse", str(junk)).returncode == 2


def test_pipeline_run_read_prints_the_canonical_xml(tmp_path):
    xml, _ = generate_xml((FIXTURES / "credit-note.json").read_bytes(), "en16931")
    source = tmp_path / "in.xml"
    source.write_bytes(xml)
    plain = _cli("run", "read", str(source))
    assert plain.returncode == 0 and b"<invoiceNumber>" in plain.stdout and b"s:src" not in plain.stdout
    traced = _cli("run", "read", str(source), "--provenance")
    assert traced.returncode == 0 and b"s:src=" in traced.stdout
    broken = tmp_path / "broken.xsl"
    broken.write_text('<xsl:stylesheet version="3.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">'
                      '<xsl:template match="/"><xsl:sequence select="error()"/></xsl:template></xsl:stylesheet>')
    failed = _cli("run", "read", str(source), "--xslt", str(broken))
    assert failed.returncode == 2 and b"broken.xsl" in failed.stderr


def test_cli_reads_a_folder_into_a_folder(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for fixture in ("credit-note", "vat-g-export"):
        (folder / f"{fixture}.xml").write_bytes(generate_xml((FIXTURES / f"{fixture}.json").read_bytes(), "en16931")[0])
    (folder / "notes.txt").write_text("not an invoice, not picked up")
    out = tmp_path / "out"
    done = _cli("parse", str(folder), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["credit-note.xml.json", "vat-g-export.xml.json"]
    assert json.loads((out / "credit-note.xml.json").read_text())["complete"] is True
    (folder / "broken.xml").write_text("<x")
    assert _cli("parse", str(folder), "-o", str(out)).returncode == 2  # the worst outcome decides
    assert _cli("parse", str(folder)).returncode == 2  # several files need a folder to write to


def test_an_older_xrechnung_reads_and_is_written_as_today_s():
    """Accepts an XRechnung of any version: a 2.3 document reads into the model and generates as XRechnung 3.0."""
    data = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml").read_bytes()
    parsed = parse(data.replace(b"xrechnung_3.0", b"xrechnung_2.3"))
    assert parsed.source.specification_id.endswith("xrechnung_2.3") and parsed.config["spec"] == "xrechnung"
    assert "specificationIdentifier" not in parsed.invoice.get("processControl", {})
    xml, report = generate_xml(dump_request({"invoice": parsed.invoice, "config": parsed.config}), "xrechnung")
    assert report.valid and b"xrechnung_3.0" in xml


def test_an_embedded_invoice_over_the_upload_limit_is_a_413(monkeypatch):
    from pipeline.errors import ApiError
    from pipeline.settings import get_settings

    pdf = generate_zugferd(with_config((FIXTURES / "invoice-all-fields.json").read_bytes(), syntax="CII"))
    monkeypatch.setenv("EINVOICE_MAX_UPLOAD_BYTES", "2000")
    get_settings.cache_clear()
    try:
        with pytest.raises(ApiError) as err:
            parse(pdf)
        assert err.value.http_status == 413 and err.value.errors[0].code == "FX_XML_TOO_LARGE"
    finally:
        monkeypatch.delenv("EINVOICE_MAX_UPLOAD_BYTES")
        get_settings.cache_clear()


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_damaged_documents_never_get_a_server_error_on_the_reading_endpoints(client, seed):
    """Official documents damaged at random (elements removed, duplicated, text and attributes replaced by junk):
    parse, convert and render answer 200, 400 or 422, never 5xx."""
    import random

    from lxml import etree

    rng = random.Random(seed)
    junk = ["", " ", "x" * 300, "-1", "1e9999", "NaN", "2024-13-45", "<>&", "99999999999999999999.99", "0"]
    sources = sorted(p for p in CORPUS.glob("*/**/*.xml") if p.stat().st_size < 300_000
                     and b"testSet" not in p.read_bytes()[:3000])
    for _ in range(12):
        root = etree.fromstring(rng.choice(sources).read_bytes())
        for _ in range(rng.randint(1, 4)):
            element = rng.choice(list(root.iter(etree.Element)))
            parent, roll = element.getparent(), rng.random()
            if roll < 0.3 and parent is not None:
                parent.remove(element)
            elif roll < 0.6:
                element.text = rng.choice(junk)
            elif roll < 0.8 and parent is not None:
                parent.append(etree.fromstring(etree.tostring(element)))
            else:
                for name in element.attrib:
                    element.attrib[name] = rng.choice(junk)
        data = etree.tostring(root, xml_declaration=True, encoding="UTF-8")
        for path, request in (("/v1/invoice/parse", {"validate": True}),
                              ("/v1/invoice/convert", {"to": rng.choice(["CII", "UBL", "ZUGFERD"]), "allowLoss": True}),
                              ("/v1/invoice/render", {"validate": True, "showBusinessTerms": True})):
            resp = upload(client, data, request, path=path)
            assert resp.status_code in (200, 400, 422), (path, resp.status_code, resp.text[:300])


def test_an_unmapped_value_on_every_line_is_listed_up_to_the_limit_with_each_lines_position():
    """A value no field carries on each of 1,500 lines: the first MAX_UNMAPPED are listed, each with its line's
    position in its xpath and its own line and column; the list says it was cut (positions counted once per
    parent: counting siblings per value was quadratic)."""
    import re

    from pipeline.read.provenance import MAX_UNMAPPED
    from test_zugferd_samples import invoice_request

    xml = generate_xml(json.dumps(dict(invoice_request(1500), config={"syntax": "CII"})).encode(), "en16931")[0]
    odd = xml.replace(b"<ram:BilledQuantity ", b'<ram:BilledQuantity extra="x" ')
    parsed = parse(odd)
    listed = [u for u in parsed.unmapped if u["xpath"].endswith("/@extra")]
    assert len(listed) == len(parsed.unmapped) == MAX_UNMAPPED < 1500 and parsed.unmapped_truncated
    text = odd.decode()
    starts = [m.start() for m in re.finditer("<ram:BilledQuantity ", text)]
    for n, entry in enumerate(listed, 1):
        assert f"/ram:IncludedSupplyChainTradeLineItem[{n}]/" in entry["xpath"]
        at = starts[n - 1]
        line, column = text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
        assert (entry["line"], entry["column"], entry["value"]) == (line, column, "x")


def test_a_french_invoice_read_with_validate_is_held_to_france_s_chain_as_the_page_holds_it():
    """An EN 16931 CII between two French companies without its PMD note (BR-FR-05): valid EN 16931, not valid
    as France's platforms receive it. parse and render with `validate` judged it by BT-24 alone and said "valid",
    while the page, jobs and `pipeline validate` (detect: French parties -> fr-ctc) call it invalid; convert still
    judges a source by what it claims."""
    from pipeline.check.detect import detect  # (the decision the page and jobs take)
    from pipeline.flows.parse import validate_source  # (the report parse and render give)
    from pipeline.flows.validate_xml import validate_xml  # (the endpoints' own flow)
    request = json.loads((FIXTURES / "fr-b2b-goods.json").read_text(encoding="utf-8"))
    request["invoice"]["additionalInvoiceNotes"] = [n for n in request["invoice"]["additionalInvoiceNotes"]
                                                    if n["invoiceNoteSubjectCode"] != "PMD"]
    xml, _ = generate_xml(with_config(json.dumps(request).encode(), spec="en16931", syntax="CII"), "en16931")
    assert detect(xml) == "fr-ctc"
    official = validate_xml(xml, "fr-ctc")
    assert official.verdict == "invalid" and "BR-FR-05_BT-22_PMD" in {i.code for i in official.issues}
    source = parse(xml).source
    report = validate_source(source)
    assert (report.verdict, sorted(i.code for i in report.issues if i.severity == "ERROR")) == \
        (official.verdict, sorted(i.code for i in official.issues if i.severity == "ERROR"))
    assert validate_source(source, as_received=False).verdict == "valid"  # EN 16931, as it claims
    answer = upload(falcon.testing.TestClient(create_app(platform=False)), xml, {"validate": True})
    assert answer.status_code == 200 and answer.json["validation"]["verdict"] == "invalid"
