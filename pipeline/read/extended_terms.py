"""Factur-X EXTENDED's own business terms (BT-X-n) of CII elements EN 16931 has no term for, by the steps of the
element's path: what an unmapped value of an EXTENDED invoice (a loss of its conversion) is named by, where the
Factur-X specification numbers it. Only ids the Factur-X documents state for the element are listed, nothing
inferred from neighbours: the official Factur-X EXTENDED rules (BR-FXEXT-01 BT-X-5 the coded note text of a header
note with a subject code, BR-FXEXT-02 BT-X-9 / BT-X-10 a line note's, BR-FXEXT-03 the VAT identifier of each
further party) and FeRD's analysed EXTENDED examples (BT-X-1 the test indicator's value, BT-X-2 the document name).
An element they do not number keeps no term.
"""
from __future__ import annotations

from pipeline.invoice.terms import bt_name

_DOC = ("CrossIndustryInvoice", "ExchangedDocument")
_TX = ("CrossIndustryInvoice", "SupplyChainTradeTransaction")
_LINE = _TX + ("IncludedSupplyChainTradeLineItem",)
_AGREEMENT = _TX + ("ApplicableHeaderTradeAgreement",)
_DELIVERY = _TX + ("ApplicableHeaderTradeDelivery",)
_SETTLEMENT = _TX + ("ApplicableHeaderTradeSettlement",)
_VAT_ID = ("SpecifiedTaxRegistration", "ID")

# BR-FXEXT-03: "Only a VAT registration ID may be provided for ..." each of these parties, with its term
_PARTY_VAT_IDS = {
    _LINE + ("SpecifiedLineTradeDelivery", "ShipToTradeParty"): "BT-X-66",
    _LINE + ("SpecifiedLineTradeDelivery", "UltimateShipToTradeParty"): "BT-X-84",
    _AGREEMENT + ("SalesAgentTradeParty",): "BT-X-340",
    _AGREEMENT + ("BuyerTaxRepresentativeTradeParty",): "BT-X-367",
    _AGREEMENT + ("ProductEndUserTradeParty",): "BT-X-144",
    _AGREEMENT + ("BuyerAgentTradeParty",): "BT-X-411",
    _DELIVERY + ("ShipToTradeParty",): "BT-X-161",
    _DELIVERY + ("UltimateShipToTradeParty",): "BT-X-180",
    _DELIVERY + ("ShipFromTradeParty",): "BT-X-199",
    _SETTLEMENT + ("InvoicerTradeParty",): "BT-X-223",
    _SETTLEMENT + ("InvoiceeTradeParty",): "BT-X-242",
    _SETTLEMENT + ("PayeeTradeParty",): "BT-X-257",
    _SETTLEMENT + ("PayerTradeParty",): "BT-X-481",
    _SETTLEMENT + ("SpecifiedTradePaymentTerms", "PayeeTradeParty"): "BT-X-509",
}

# (id, English name where no official rule text names it: FeRD's)
EXTENDED_TERMS: dict[tuple[str, ...], tuple[str, str | None]] = {
    ("CrossIndustryInvoice", "ExchangedDocumentContext", "TestIndicator", "Indicator"): ("BT-X-1", "Test indicator"),
    _DOC + ("Name",): ("BT-X-2", "Document name"),
    _DOC + ("IncludedNote", "ContentCode"): ("BT-X-5", None),
    _LINE + ("AssociatedDocumentLineDocument", "IncludedNote", "ContentCode"): ("BT-X-9", None),
    _LINE + ("AssociatedDocumentLineDocument", "IncludedNote", "SubjectCode"): ("BT-X-10", None),
    **{party + _VAT_ID: (bt, None) for party, bt in _PARTY_VAT_IDS.items()},
}


def extended_term(steps: tuple[str, ...]) -> str | None:
    """"BT-X-n name" of a CII element's path steps (prefixes and positions left out), None where Factur-X numbers
    none. (A party's tax registration is named so only when it is a VAT one, schemeID VA: `term_of_element`.)"""
    found = EXTENDED_TERMS.get(steps)
    if found is None:
        return None
    bt, name = found
    return f"{bt} {name or bt_name(bt) or ''}".strip()
