"""What EN 16931 takes one of, and Factur-X EXTENDED's line hierarchy, going to UBL (issue 35: CONVERSION_LOSS naming
what is left out, allowLoss converting without it). Real files from ../shared/realworld, each converted document
judged by the official rules run on their own.

- A buyer with an ID and a GlobalID (intarsys' ZUGFeRD 2.0 samples): EN 16931 has one buyer identifier (BT-46), UBL
  one place (UBL-SR-16). The GlobalID is it, with its scheme (BT-46-1, a GLN): UBL keeps the GLN, the ID is the
  named loss; a CII target (a ZUGFeRD PDF) keeps both.
- An EXTENDED line hierarchy (BT-X-304 parent line, BT-X-8 subtype): a top-level line that is a whole EN 16931 line
  stays with its amounts, which hold its sub-lines'; a group line without quantity, price and VAT category gives way
  to its sub-lines. Every value left out is named, and the document adds up on the CEN rules."""
from __future__ import annotations

from decimal import Decimal

import pytest

from conftest import SHARED
from pipeline.errors import ApiError
from pipeline.flows.convert import convert
from pipeline.pdf import checks
from roundtrip import official
from roundtrip.reader import read_terms

REALWORLD = SHARED / "realworld"
MIETE = REALWORLD / "corpus/ZUGFeRDv2/correct/intarsys/EN16931/zugferd_2p0_EN16931_Miete.pdf"
BUYER_ID = "/ram:BuyerTradeParty/ram:ID"
GROUPS = REALWORLD / "mustang/library/subinvoicelines/Extended_SubInvoiceLines_Hardware_Bsp2.xml"
GROUPS_WITHOUT_PRICE = REALWORLD / "mustang/validator/X03_01_Abschlagsrechnung_SubInvoiceLine_u_LV_Nr.xml"


def _refusal(data: bytes, to: str) -> ApiError:
    with pytest.raises(ApiError) as refused:
        convert(data, to)
    assert refused.value.error_code == "CONVERSION_LOSS" and "send request.allowLoss true" in refused.value.message
    return refused.value


def test_the_buyers_gln_goes_to_ubl_and_its_other_id_is_the_named_loss():
    data = MIETE.read_bytes()
    err = _refusal(data, "UBL")
    assert [(e.businessTerm, BUYER_ID in e.message, "9314110911" in e.message) for e in err.errors] == [
        ("BT-46", True, True)], err.errors
    done = convert(data, "UBL", allow_loss=True)
    assert [(u["value"], u["businessTerm"].split()[0]) for u in done.losses] == [("9314110911", "BT-46")]
    assert "UBL-SR-16" in done.losses[0]["reason"]
    buyer = read_terms(done.document).terms["buyer"]
    assert (buyer["identifier"], buyer["identifierSchemeId"]) == ("4304171000002", "0088")
    judged = official.cen(done.document)
    assert judged.valid, sorted(judged.errors)


def test_a_zugferd_pdf_of_the_same_invoice_keeps_both_buyer_identifiers():
    done = convert(MIETE.read_bytes(), "ZUGFERD")
    assert not done.losses
    xml = checks.inspect(done.document, validate_xml=False, check_pdfa=False).xml
    assert b"<ram:ID>9314110911</ram:ID>" in xml and b'<ram:GlobalID schemeID="0088">4304171000002</ram:GlobalID>' in xml
    assert xml.index(b"9314110911") < xml.index(b"4304171000002")   # the D16B schema's order: ID before GlobalID
    judged = official.cen(xml)
    assert judged.valid, sorted(judged.errors)


def test_a_group_line_that_is_a_whole_line_stands_for_its_sub_lines_in_ubl():
    data = GROUPS.read_bytes()
    err = _refusal(data, "UBL")
    assert all(e.code == "NOT_CARRIED" for e in err.errors)
    hierarchy = [e for e in err.errors if "line hierarchy" in e.message]
    assert {"BT-X-8", "BT-126", "BT-131", "BT-153"} <= {e.businessTerm for e in hierarchy}
    done = convert(data, "UBL", allow_loss=True)
    judged = official.cen(done.document)
    assert judged.valid, sorted(judged.errors)
    lines = read_terms(done.document).terms["invoiceLines"]
    assert [(line["lineIdentifier"], line["netAmount"], line["itemInformation"]["name"]) for line in lines] == [
        ("01", Decimal("1050.00"), "Subtotal hardware"), ("02", Decimal("450.00"), "Subtotal Accessories")]
    lost = {(u["value"], (u["businessTerm"] or "").split(" ")[0]) for u in done.losses}
    # each sub-line's values, and the subtype of the lines kept, are named
    assert {("Laser printer B/W", "BT-153"), ("0101", "BT-126"), ("01", "BT-X-304"), ("GROUP", "BT-X-8")} <= lost
    assert len(done.losses) == len(err.errors)


def test_a_group_line_without_price_gives_way_to_its_sub_lines():
    """X03: the group lines state no quantity, price or VAT category, which EN 16931 requires of a line: the detail
    lines under them are the invoice's EN 16931 lines (they add up to the same line total, BT-106)."""
    data = GROUPS_WITHOUT_PRICE.read_bytes()
    _refusal(data, "UBL")
    done = convert(data, "UBL", allow_loss=True)
    judged = official.cen(done.document)
    assert judged.valid, sorted(judged.errors)
    terms = read_terms(done.document).terms
    assert [line["lineIdentifier"] for line in terms["invoiceLines"]] == ["01.01.01", "01.01.02", "01.01.03", "01.02"]
    assert sum(line["netAmount"] for line in terms["invoiceLines"]) == terms["documentTotals"]["lineExtensionAmount"]
    lost = {(u["value"], (u["businessTerm"] or "").split(" ")[0]) for u in done.losses}
    assert {("01.01", "BT-126"), ("Summe 01 Bauabschnitt 1 - Vorarbeiten", "BT-153"), ("DETAIL", "BT-X-8")} <= lost
