"""Conversions as a receiver meets them (issue 35), where the other conversion tests do not reach:

- a CII that is no Factur-X EXTENDED invoice yet states a line hierarchy (ram:ParentLineID, LineStatusReasonCode):
  EN 16931 counts each of its lines as it stands (its CII binding says both should not be present, CII-SR-036 /
  -038, though those asserts test the line item, not the line document that holds them, so no CEN rule fires), so
  the hierarchy is content outside EN 16931: a CONVERSION_LOSS naming it, which allowLoss leaves out. It was a
  SOURCE_NOT_CONVERTIBLE, allowLoss or not, whose entry spoke of "the zugferd endpoint with config.profile";
- `spec: peppol` with a target other than UBL: a 400 naming request.spec (the client's field), never config.syntax,
  and never set aside (a ZUGFeRD PDF was written on EN 16931 without a word);
- `pipeline convert --json` says what the endpoint's headers say, list for list, and takes `--spec` in any case;
- a Peppol self-billing invoice back from CII to Peppol UBL gets the self-billing BT-24 its BT-23 needs;
- a PDF's own faults (PDF/A-3) travel as source findings to CII too, where the PDF's own XML is handed back.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import falcon.testing
import pytest

from conftest import CORPUS, SHARED
from pipeline.errors import ApiError
from pipeline.flows.convert import convert
from pipeline.flows.parse import changed_line, parse
from pipeline.invoice import peppol
from pipeline.invoice.specs import EN16931_ID
from pipeline.service.app import create_app
from roundtrip import official
from roundtrip.reader import diff_lines, flatten, read_terms
from test_conversions import _check_headers
from test_parse import upload

REPO = Path(__file__).resolve().parents[1]
EINFACH_CII = SHARED / "realworld/corpus/XML-Rechnung/CII/EN16931_Einfach.cii.xml"
DEX_15 = CORPUS / "xrechnung-schematron-tests/cii/cii-br-dex-15-test-on-sub-invoice-lines.xml"  # XRechnung CII
NORWEGIAN = SHARED / "realworld/peppol-bis3/national-examples/NO/Norwegian-example-1.xml"
EXTENDED = SHARED / "realworld/mustang/library/subinvoicelines/Extended_SubInvoiceLines_Hardware_Bsp2.xml"
HIERARCHY = ("ram:ParentLineID", "ram:LineStatusReasonCode")
MISSING_AF = SHARED / ("realworld/corpus/ZUGFeRDv2/correct/intarsys/EN16931/"
                       "zugferd_2p0_EN16931_Reisekostenabrechnung.pdf")   # valid but for PDF/A 6.8


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _with_hierarchy(data: bytes) -> bytes:
    """A real EN 16931 CII (two lines, BT-24 EN 16931's) whose second line states the first as its parent, with a
    line status reason: valid EN 16931 still, each line counted as it stands."""
    marked = data.replace(b"<ram:LineID>2</ram:LineID>", b"<ram:LineID>2</ram:LineID><ram:ParentLineID>1"
                          b"</ram:ParentLineID><ram:LineStatusReasonCode>DETAIL</ram:LineStatusReasonCode>", 1)
    assert marked != data
    return marked


def test_a_line_hierarchy_outside_extended_is_content_no_field_carries():
    data = _with_hierarchy(EINFACH_CII.read_bytes())
    assert official.cen(data).valid
    parsed = parse(data)
    assert parsed.request is not None and parsed.problems == []   # (complete or not by what JSON requires)
    assert not any(line.get(k) for line in parsed.invoice["invoiceLines"]
                   for k in ("parentLineIdentifier", "lineStatusReasonCode"))
    unread = [u for u in parsed.unmapped if u["xpath"].endswith(HIERARCHY)]
    assert [(u["value"], u["technical"], u["businessTerm"].split(" ")[0]) for u in unread] == [
        ("1", False, "BT-X-304"), ("DETAIL", False, "BT-X-8")]


@pytest.mark.parametrize("to", ["UBL", "CII"])
def test_a_line_hierarchy_outside_extended_is_a_named_loss_that_allow_loss_leaves_out(client, to):
    data = _with_hierarchy(EINFACH_CII.read_bytes())
    refused = upload(client, data, {"to": to}, path="/v1/invoice/convert")
    assert refused.status_code == 422 and refused.json["errorCode"] == "CONVERSION_LOSS", refused.text
    entries = refused.json["errors"]
    assert [e["businessTerm"] for e in entries] == ["BT-X-304", "BT-X-8"]
    assert all("Factur-X EXTENDED content" in e["message"] and "CII-SR-036" in e["message"]
               and "config.profile" not in e["message"] for e in entries), entries
    resp = upload(client, data, {"to": to, "allowLoss": True}, path="/v1/invoice/convert")
    assert resp.status_code == 200, resp.text
    assert resp.headers["X-Conversion-Losses"] == "2"
    assert [p.rpartition("/")[2] for p in resp.headers["X-Conversion-Lost"].split("; ")] == list(HIERARCHY)
    assert official.cen(resp.content).valid
    _check_headers(data, resp.content, resp.headers, f"{EINFACH_CII.name} with a hierarchy -> {to}")
    # the same business terms as the source without the hierarchy (what EN 16931 reads of it), but for the price
    # discounts UBL needs beside a gross price (BT-147, said in X-Conversion-Changed and checked above)
    source, target = flatten(read_terms(EINFACH_CII.read_bytes()).terms), flatten(read_terms(resp.content).terms)
    target = {k: v for k, v in target.items() if k in source or not k.endswith(".priceDiscount")}
    assert diff_lines(source, target) == []


def test_xrechnungs_own_unit_test_of_cii_sub_lines_converts_with_allow_loss():
    """XRechnung binds sub-invoice lines in UBL only and warns of a CII hierarchy (BR-DEX-15): KoSIT's unit test of
    that warning is valid XRechnung, and goes to UBL once allowLoss leaves its ParentLineID out."""
    data = DEX_15.read_bytes()
    assert official.xrechnung(data).valid
    with pytest.raises(ApiError) as refused:
        convert(data, "UBL")
    assert refused.value.error_code == "CONVERSION_LOSS"
    assert [e.businessTerm for e in refused.value.errors] == ["BT-X-304"]
    done = convert(data, "UBL", allow_loss=True)
    assert [u["xpath"].rpartition("/")[2] for u in done.losses] == ["ram:ParentLineID"]
    assert official.xrechnung(done.document).valid


def test_an_extended_invoice_keeps_reading_its_hierarchy():
    parsed = parse(EXTENDED.read_bytes())
    assert any(line.get("parentLineIdentifier") for line in parsed.invoice["invoiceLines"])
    assert not [u for u in parsed.unmapped if u["xpath"].endswith(HIERARCHY)]


# ---- spec peppol is UBL's --------------------------------------------------------------------------------------

@pytest.mark.parametrize("to", ["CII", "ZUGFERD"])
def test_spec_peppol_with_another_target_than_ubl_is_a_400_naming_request_spec(client, to):
    resp = upload(client, EINFACH_CII.read_bytes(), {"to": to, "spec": "peppol"}, path="/v1/invoice/convert")
    assert resp.status_code == 400, resp.text
    assert resp.json["errorCode"] == "INVALID_INPUT"
    assert [(e["field"], e["rejectedValue"]) for e in resp.json["errors"]] == [("request.spec", "peppol")]
    assert "UBL target only" in resp.json["message"]


def test_spec_peppol_with_cii_on_the_command_line_is_said_before_any_work(tmp_path):
    out = tmp_path / "out.xml"
    run = subprocess.run([sys.executable, "-m", "pipeline", "convert", str(EINFACH_CII), "--to", "cii", "--spec",
                          "peppol", "-o", str(out)], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert run.returncode == 2 and "--spec peppol applies to --to ubl only" in run.stderr, run.stderr
    assert not out.exists()


def test_the_command_line_takes_a_spec_in_capitals_as_the_endpoint_does(tmp_path):
    """`--spec EN16931` was an argparse error while `--to UBL` and the endpoint's `"spec": "EN16931"` are taken."""
    out = tmp_path / "out.xml"
    run = subprocess.run([sys.executable, "-m", "pipeline", "convert", str(NORWEGIAN), "--to", "CII", "--spec",
                          "EN16931", "--json", "-o", str(out)], capture_output=True, text=True, cwd=REPO, timeout=180)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["judgedOn"].startswith("en16931 ") and official.cen(out.read_bytes()).valid


@pytest.mark.parametrize("to", ["CII", "UBL"])
def test_a_pdfs_own_faults_travel_as_source_findings_to_either_syntax(client, to):
    """A ZUGFeRD PDF valid but for its own PDF/A fault (its embedded file not listed in /AF, ISO 19005-3 6.8): to UBL
    the fault was said in X-Source-Findings, to CII (the PDF's own XML handed back) it was not said at all."""
    data = MISSING_AF.read_bytes()
    # (UBL takes one buyer id: the second is left out)
    resp = upload(client, data, {"to": to, "allowLoss": to == "UBL"}, name="invoice.pdf", path="/v1/invoice/convert")
    assert resp.status_code == 200, resp.text
    assert resp.headers["X-Source-Findings"] == "PDFA:ISO_19005_3:6.8-4"
    assert resp.headers["X-Source-Rules"].startswith("Factur-X ")
    if to == "CII":
        assert resp.content == parse(data).source.xml


# ---- the CLI's JSON and the endpoint's headers -------------------------------------------------------------------

def test_the_command_lines_json_says_what_the_endpoints_headers_say(client, tmp_path):
    """A Peppol invoice to CII (a BT-24 changed, five technical values left) and a source with findings of the
    CIUS it claims: the same rules, findings, changes, losses and technical values, by the CLI and the endpoint."""
    sources = [(NORWEGIAN, {"to": "CII"}), (SHARED / "realworld/corpus/XML-Rechnung/UBL/EN16931_Einfach.ubl.xml",
                                              {"to": "CII"}),
               (None, {"to": "UBL", "allowLoss": True})]
    hierarchy = tmp_path / "hierarchy.xml"
    hierarchy.write_bytes(_with_hierarchy(EINFACH_CII.read_bytes()))
    for path, request in sources:
        path = path or hierarchy
        out = tmp_path / f"{path.stem}.out.xml"
        argv = [sys.executable, "-m", "pipeline", "convert", str(path), "--to", request["to"].lower(), "--json",
                "-o", str(out)] + (["--allow-loss"] if request.get("allowLoss") else [])
        run = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=180)
        assert run.returncode == 0, run.stderr
        said = json.loads(run.stdout)
        resp = upload(client, path.read_bytes(), request, path="/v1/invoice/convert")
        assert resp.status_code == 200, resp.text
        headers = resp.headers
        assert resp.content == out.read_bytes(), path.name
        assert said["judgedOn"] == headers["X-Source-Rules"]
        assert ", ".join(dict.fromkeys(f["code"] for f in said["sourceFindings"])) == headers.get(
            "X-Source-Findings", "")
        assert "; ".join(changed_line(c) for c in said["changed"]) == headers.get("X-Conversion-Changed", "")
        for key, count, listed in (("lost", "X-Conversion-Losses", "X-Conversion-Lost"),
                                   ("technical", "X-Conversion-Technical", "X-Conversion-Technical-Left")):
            assert len(said[key]) == int(headers.get(count, "0")), (path.name, key)
            assert "; ".join(u["xpath"] for u in said[key]) == headers.get(listed, ""), (path.name, key)
        assert said["sourceFindings"] or said["changed"] or said["lost"] or said["technical"], path.name


# ---- Peppol self-billing back from CII ----------------------------------------------------------------------------

def test_a_self_billing_invoice_back_from_cii_gets_peppols_self_billing_identifier(client):
    """A Peppol self-billing invoice that went to CII (as EN 16931, its BT-23 kept) comes back to Peppol UBL with the
    self-billing BT-24 its process needs: the billing one failed PEPPOL-EN16931-R007 (VALIDATION_FAILED)."""
    source = (CORPUS / "peppol/2026.5/SB-base-example.xml").read_bytes()
    cii = convert(source, "CII").document
    assert parse(cii).invoice["processControl"]["businessProcessType"] == peppol.SELF_BILLING_PROCESS
    resp = upload(client, cii, {"to": "UBL", "spec": "peppol"}, path="/v1/invoice/convert")
    assert resp.status_code == 200, resp.text
    assert resp.headers["X-Conversion-Changed"] == f"BT-24 {EN16931_ID} -> {peppol.SELF_BILLING_ID}"
    assert official.peppol(resp.content).valid
    _check_headers(cii, resp.content, resp.headers, "SB-base-example.xml via CII")
    before, after = flatten(read_terms(source).terms), flatten(read_terms(resp.content).terms)
    assert diff_lines(before, after) == []
    # a billing invoice back from CII keeps getting the billing identifier
    billing = convert(convert((CORPUS / "peppol/2026.5/billing/base-example.xml").read_bytes(), "CII").document,
                      "UBL", "peppol")
    assert [c["written"] for c in billing.changed if c["businessTerm"] == "BT-24"] == [peppol.BILLING_ID]
