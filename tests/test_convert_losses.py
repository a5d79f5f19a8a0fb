"""What a conversion leaves out, said exactly (issue 35): a ZUGFeRD PDF's second invoice file with other content, and the
further preceding invoices (BG-3) a UBL invoice or credit note holds and CII cannot. Refused as CONVERSION_LOSS
naming each; with allowLoss converted, valid on the official rules, every other business term read back, and the
X-Conversion-* headers naming exactly what was left out."""
from __future__ import annotations

import io
import subprocess
import sys

import falcon.testing
import pikepdf
import pytest

from conftest import CORPUS, SHARED
from pipeline.flows.parse import parse, validate_source
from pipeline.service.app import create_app
from roundtrip.reader import diff_lines, flatten, read_terms
from test_parse import upload

PDF = SHARED / "realworld/corpus/XML-Rechnung/FX/EN16931_Einfach.pdf"
CREDIT_NOTE = CORPUS / "en16931-cen/test/testfiles/CreditNote-Max_content.xml"  # BillingReference twice
THIRD_PARTY = CORPUS / "kosit-validator-configuration-tests/instances/ubl-br-dex-09-prepaidpayment.xml"


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _with_second_invoice(pdf: bytes, same: bool = False) -> tuple[bytes, bytes]:
    """(the PDF with an xrechnung.xml beside its factur-x.xml, listed as an invoice file too; the invoice it embeds).
    `same`: the same bytes twice; else an invoice of another number."""
    with pikepdf.open(io.BytesIO(pdf)) as doc:
        invoice = doc.attachments["factur-x.xml"].get_file().read_bytes()
        other = invoice if same else invoice.replace(b"<ram:ID>", b"<ram:ID>X", 1)
        doc.attachments["xrechnung.xml"] = pikepdf.AttachedFileSpec(
            doc, other, mime_type="text/xml", filename="xrechnung.xml", relationship=pikepdf.Name.Alternative)
        doc.Root.AF.append(pikepdf.NameTree(doc.Root.Names.EmbeddedFiles)["xrechnung.xml"])
        out = io.BytesIO()
        doc.save(out)
    return out.getvalue(), invoice


def _terms(xml: bytes) -> dict[str, str]:
    terms = flatten(read_terms(xml).terms)
    terms.pop("processControl.specificationIdentifier", None)  # each target names its rules (X-Conversion-Changed)
    return terms


def _convert(client, data: bytes, request: dict, name: str = "invoice.xml"):
    return upload(client, data, request, name=name, path="/v1/invoice/convert")


@pytest.mark.parametrize("to", ["CII", "UBL"])
def test_a_pdf_with_a_second_invoice_file_is_not_converted_silently(client, to):
    """The PDF's invoice is valid, but it embeds another invoice a receiver's software may read instead: convert
    refuses, naming that file, and with allowLoss converts the invoice it read and says the other was left out."""
    pdf, invoice = _with_second_invoice(PDF.read_bytes())
    refused = _convert(client, pdf, {"to": to}, "invoice.pdf")
    assert refused.status_code == 422 and refused.json["errorCode"] == "CONVERSION_LOSS", refused.text
    [entry] = refused.json["errors"]
    assert entry["code"] == "FX_SECOND_INVOICE" and entry["rejectedValue"] == "xrechnung.xml", entry
    assert "'factur-x.xml'" in entry["message"]

    done = _convert(client, pdf, {"to": to, "allowLoss": True}, "invoice.pdf")
    assert done.status_code == 200, done.text
    assert done.headers["X-Conversion-Losses"] == "1"
    assert done.headers["X-Conversion-Lost"] == "PDF embedded file 'xrechnung.xml'"
    if to == "CII":  # a ZUGFeRD PDF converted to CII is its embedded XML
        assert done.content == invoice
    assert validate_source(parse(done.content).source).valid
    source, target = _terms(invoice), _terms(done.content)
    if to == "UBL":  # UBL needs an amount beside a gross price: gross - net, said in X-Conversion-Changed
        assert done.headers["X-Conversion-Changed"] == "BT-147 (not in the source) -> gross price - net price"
        target = {k: v for k, v in target.items() if not k.endswith("priceDiscount")}
    assert source == target, "\n".join(diff_lines(source, target))


def test_the_same_invoice_file_twice_converts_without_a_loss(client):
    pdf, invoice = _with_second_invoice(PDF.read_bytes(), same=True)
    done = _convert(client, pdf, {"to": "CII"}, "invoice.pdf")
    assert done.status_code == 200 and done.content == invoice, done.text
    assert "X-Conversion-Losses" not in done.headers


def test_the_command_line_names_the_second_invoice_file(tmp_path):
    pdf, _ = _with_second_invoice(PDF.read_bytes())
    (tmp_path / "in.pdf").write_bytes(pdf)
    run = subprocess.run([sys.executable, "-m", "pipeline", "convert", str(tmp_path / "in.pdf"), "--to", "ubl",
                          "--allow-loss", "-o", str(tmp_path / "out.xml")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "not carried: PDF embedded file 'xrechnung.xml' = 'xrechnung.xml'" in run.stderr and "line None" \
        not in run.stderr
    refused = subprocess.run([sys.executable, "-m", "pipeline", "convert", str(tmp_path / "in.pdf"), "--to", "ubl",
                              "-o", str(tmp_path / "out2.xml")], capture_output=True, text=True)
    assert refused.returncode == 1 and "FX_SECOND_INVOICE" in refused.stderr, refused.stderr


def test_further_preceding_invoices_of_a_credit_note_are_a_loss_cii_cannot_carry(client):
    """A UBL credit note citing two preceding invoices: CII (D16B) has one BG-3. Refused naming the second one's
    node and terms; with allowLoss a valid CII credit note (381) with the first one and every other term."""
    data = CREDIT_NOTE.read_bytes()
    refused = _convert(client, data, {"to": "CII"})
    assert refused.status_code == 422 and refused.json["errorCode"] == "CONVERSION_LOSS", refused.text
    [entry] = refused.json["errors"]
    assert entry["businessTerm"] == "BT-25" and entry["field"] is None
    assert entry["message"].startswith("/CreditNote/cac:BillingReference[2]/cac:InvoiceDocumentReference/cbc:ID "
                                       "(line 59) = 'Preceding invoice no.2'")

    done = _convert(client, data, {"to": "CII", "allowLoss": True})
    assert done.status_code == 200, done.text
    assert done.headers["X-Conversion-Losses"] == "1"
    assert done.headers["X-Conversion-Lost"] == "/CreditNote/cac:BillingReference[2]/cac:InvoiceDocumentReference/cbc:ID"
    assert validate_source(parse(done.content).source).valid
    source, target = _terms(data), _terms(done.content)
    assert target["invoiceTypeCode"] == "381"
    assert source.pop("additionalPrecedingInvoiceReferences[0].documentReference") == "Preceding invoice no.2"
    assert _seller_ids(source) == _seller_ids(target)  # BT-29 repeats; CII's schema puts ram:ID before ram:GlobalID
    assert source == target, "\n".join(diff_lines(source, target))


def _seller_ids(terms: dict[str, str]) -> list[tuple]:
    """The seller's identifiers (BT-29 with its scheme), taken out of `terms`, in no order."""
    ids = []
    for prefix in ["seller."] + sorted({k.rpartition(".")[0] + "." for k in terms
                                        if k.startswith("seller.additionalIdentifiers[")}):
        ids.append((terms.pop(prefix + "identifier", None), terms.pop(prefix + "identifierSchemeId", None)))
    return sorted(ids, key=str)


def test_a_refusal_names_the_terms_not_a_request_the_client_never_sent(client):
    """XRechnung's third-party payments (BG-DEX-09) exist in UBL only: the refusal's message names the term, not
    "The request has 1 invalid field(s)" (the client sent a document), says why allowLoss cannot drop them (the
    amount due includes them), and gives no advice meant for a JSON request ("send config.syntax UBL")."""
    refused = _convert(client, THIRD_PARTY.read_bytes(), {"to": "CII", "allowLoss": True})
    assert refused.status_code == 422 and refused.json["errorCode"] == "CONVERSION_LOSS", refused.text
    message = refused.json["message"]
    assert message.startswith("The target cannot carry the source's third-party payments (BG-DEX-09): "), message
    assert "allowLoss does not apply: the amount due (BT-115) would not add up without them." in message
    entries = refused.json["errors"]   # a payment each, at its source node
    assert len(entries) == 2, entries
    for i, entry in enumerate(entries, 1):
        assert entry["businessTerm"] == "BG-DEX-09" and "config." not in entry["message"], entry
        assert entry["message"].startswith("Third party payment (BG-DEX-09): CII has no place for it"), entry
        assert f"in the source: /ubl:Invoice/cac:PrepaidPayment[{i}]/cbc:ID" in entry["message"]
