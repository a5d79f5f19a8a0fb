"""Content only Factur-X EXTENDED has, left out of a conversion to UBL, is named by Factur-X's own business terms
(BT-X-n) where the Factur-X documents number the element (pipeline/read/extended_terms.py), and by none where they
do not: the refusal's entries and allowLoss's losses say "BT-X-2" for the document name instead of nothing."""
from __future__ import annotations

import pytest
from lxml import etree

from conftest import CORPUS
from pipeline.errors import ApiError
from pipeline.flows.convert import convert
from pipeline.invoice.terms import bt_name
from pipeline.read import provenance
from pipeline.read.extended_terms import BY_VALUE, EXTENDED_TERMS

EXTENDED = CORPUS / "mustangproject/library/factur-x-extended.xml"
NUMBERED = {"/rsm:CrossIndustryInvoice/rsm:ExchangedDocumentContext/ram:TestIndicator/udt:Indicator": "BT-X-1",
            "/rsm:CrossIndustryInvoice/rsm:ExchangedDocument/ram:Name": "BT-X-2",
            "/rsm:CrossIndustryInvoice/rsm:ExchangedDocument/ram:IncludedNote[1]/ram:ContentCode": "BT-X-5",
            "/rsm:CrossIndustryInvoice/rsm:ExchangedDocument/ram:IncludedNote[2]/ram:ContentCode": "BT-X-5"}


def test_the_losses_of_an_extended_invoice_name_its_bt_x_terms():
    done = convert(EXTENDED.read_bytes(), "UBL", allow_loss=True)
    terms = {loss["xpath"]: loss["businessTerm"] for loss in done.losses}
    assert {xpath: (terms[xpath] or "").split(" ")[0] for xpath in NUMBERED} == NUMBERED, terms
    assert terms["/rsm:CrossIndustryInvoice/rsm:ExchangedDocument/ram:Name"] == "BT-X-2 Document name"
    # an element the sources number by a value is named by the id its value decides: a gross price's allowance or
    # charge reason is BT-X-36 or BT-X-303 by its ChargeIndicator (this one's is false, a discount)
    reason = ("/rsm:CrossIndustryInvoice/rsm:SupplyChainTradeTransaction/ram:IncludedSupplyChainTradeLineItem[3]"
              "/ram:SpecifiedLineTradeAgreement/ram:GrossPriceProductTradePrice/ram:AppliedTradeAllowanceCharge"
              "/ram:Reason")
    assert terms[reason] == "BT-X-36 Item price discount reason"


def test_the_refusal_entries_carry_the_ids():
    with pytest.raises(ApiError) as refused:
        convert(EXTENDED.read_bytes(), "UBL")
    assert refused.value.error_code == "CONVERSION_LOSS"
    named = {e.businessTerm for e in refused.value.errors}
    assert {"BT-X-1", "BT-X-2", "BT-X-5"} <= named, named


def test_every_id_without_our_name_is_one_an_official_rule_text_names():
    """The ids with no name of their own are named by the installed Factur-X EXTENDED rules (UNBOUND_NAMES)."""
    for bt, name in EXTENDED_TERMS.values():
        assert name or bt_name(bt), bt
    for _, ids in BY_VALUE.values():  # (ids by a value carry their own names)
        assert all(bt.startswith("BT-X-") and name for bt, name in ids.values()), ids


@pytest.mark.parametrize("scheme,term", [("VA", "BT-X-242 Invoicee VAT identifier"), ("FC", None)])
def test_a_further_partys_tax_registration_is_its_bt_x_only_when_vat(scheme, term):
    """BR-FXEXT-03 allows the invoicee (and the other further parties) a VAT registration only, BT-X-242."""
    path = ("/rsm:CrossIndustryInvoice/rsm:SupplyChainTradeTransaction/ram:ApplicableHeaderTradeSettlement"
            "/ram:InvoiceeTradeParty/ram:SpecifiedTaxRegistration/ram:ID")
    registration = etree.SubElement(etree.Element("SpecifiedTaxRegistration"), "ID", schemeID=scheme)
    registration.text = "DE123456789"
    assert provenance.term_of_element(registration, path) == term
