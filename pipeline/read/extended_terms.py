"""Factur-X EXTENDED's own business terms (BT-X-n) of CII elements EN 16931 has no term for, by the steps of the
element's path: what an unmapped value of an EXTENDED invoice (a loss of its conversion) is named by, where the
Factur-X field list numbers it. Only ids a published source states for the element itself are listed, nothing
inferred from neighbours or from a numbering pattern:

- the official Factur-X EXTENDED rules (BR-FXEXT-01 BT-X-5 the coded note text of a header note with a subject
  code, BR-FXEXT-02 BT-X-9 / BT-X-10 a line note's, BR-FXEXT-03 the VAT identifier of each further party, the
  VAT exemption reasons of a line BT-X-96 / BT-X-97) and FeRD's analysed EXTENDED examples (BT-X-1 the test
  indicator's value, BT-X-2 the document name);
- libraries that bind the FeRD field list to the CII elements, each id here stated by at least one of them for
  the element: node-zugferd (jslno/node-zugferd: packages/node-zugferd/src/profiles/extended/{schema,mask}.ts, the
  element's xpath with its id; packages/profiles/extended/src/schema.ts, the ids by CII structure), carthorse
  (tammoippen/getafix: src/carthorse/schema/{line,settlement}.py, the ids on the XML tags) and i-effect's ZUGFeRD
  2.4 XPath reference (BT-X-115).

Where these sources give one element several ids by a value (node-zugferd's xpath predicates), `BY_VALUE` lists
them with what decides: the gross price's AppliedTradeAllowanceCharge is an item price discount (ChargeIndicator
false: BT-X-34 percent, BT-X-35 basis, BT-X-313 / BT-X-36 reason code and text; its amount is EN 16931's BT-147) or
an item price charge (true: BT-X-300, BT-X-301, BT-X-302 amount, BT-X-314 / BT-X-303), a line's TaxTotalAmount is
BT-X-329 in the invoice currency (BT-5) and BT-X-590 in the VAT accounting currency (BT-6) by its currencyID
(BT-X-329-0 / BT-X-590-0). Where the value decides none of them (no indicator, another currency) none is given;
an element the sources do not number keeps no term.
"""
from __future__ import annotations

from collections.abc import Callable

from lxml import etree

from pipeline.invoice.terms import bt_name

_DOC = ("CrossIndustryInvoice", "ExchangedDocument")
_TX = ("CrossIndustryInvoice", "SupplyChainTradeTransaction")
_LINE = _TX + ("IncludedSupplyChainTradeLineItem",)
_AGREEMENT = _TX + ("ApplicableHeaderTradeAgreement",)
_DELIVERY = _TX + ("ApplicableHeaderTradeDelivery",)
_SETTLEMENT = _TX + ("ApplicableHeaderTradeSettlement",)
_VAT_ID = ("SpecifiedTaxRegistration", "ID")
_DATE = ("DateTimeString",)  # a date's value under its wrapper (udt: / qdt:, prefixes left out)

# BR-FXEXT-03: "Only a VAT registration ID may be provided for ..." each of these parties, with its term; the line's
# item seller (BG-X-90) has its VAT identifier BT-X-587 by node-zugferd (the tax number there is BT-X-588: a
# registration is named only when it is a VAT one, `provenance.term_of_element`)
_PARTY_VAT_IDS = {
    _LINE + ("SpecifiedLineTradeDelivery", "ShipToTradeParty"): "BT-X-66",
    _LINE + ("SpecifiedLineTradeDelivery", "UltimateShipToTradeParty"): "BT-X-84",
    _LINE + ("SpecifiedLineTradeAgreement", "ItemSellerTradeParty"): "BT-X-587",
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
_VAT_NAMES = {"BT-X-587": "Line level Item-Seller VAT identifier"}

_ADDRESS = ("PostcodeCode", "LineOne", "LineTwo", "LineThree", "CityName", "CountryID", "CountrySubDivisionName")


def _address(party: tuple[str, ...], ids: range, who: str) -> dict[tuple[str, ...], tuple[str, str]]:
    """A party's postal address: its seven fields with the ids node-zugferd states for each of them, which run in
    the field list's order (post code first), so `ids` writes that list short."""
    names = ("post code", "address line 1", "address line 2", "address line 3", "city", "country code",
             "country subdivision")
    return {party + ("PostalTradeAddress", step): (f"BT-X-{n}", f"{who} {name}")
            for step, n, name in zip(_ADDRESS, ids, names)}


_INVOICEE = _SETTLEMENT + ("InvoiceeTradeParty",)
_ITEM_SELLER = _LINE + ("SpecifiedLineTradeAgreement", "ItemSellerTradeParty")
_DISCOUNT = _SETTLEMENT + ("SpecifiedTradePaymentTerms", "ApplicableTradePaymentDiscountTerms")
_PENALTY = _SETTLEMENT + ("SpecifiedTradePaymentTerms", "ApplicableTradePaymentPenaltyTerms")
_EXCHANGE = _SETTLEMENT + ("TaxApplicableTradeCurrencyExchange",)
_PRODUCT = _LINE + ("SpecifiedTradeProduct",)
_INCLUDED = _PRODUCT + ("IncludedReferencedProduct",)
_LINE_AGREEMENT = _LINE + ("SpecifiedLineTradeAgreement",)
_LINE_DOCUMENT = _LINE_AGREEMENT + ("AdditionalReferencedDocument",)
_LINE_SETTLEMENT = _LINE + ("SpecifiedLineTradeSettlement",)
_LINE_TOTALS = _LINE_SETTLEMENT + ("SpecifiedTradeSettlementLineMonetarySummation",)
_LINE_PRECEDING = _LINE_SETTLEMENT + ("InvoiceReferencedDocument",)

# (id, English name where no official rule text names it: the field list's, as the sources give it)
EXTENDED_TERMS: dict[tuple[str, ...], tuple[str, str | None]] = {
    ("CrossIndustryInvoice", "ExchangedDocumentContext", "TestIndicator", "Indicator"): ("BT-X-1", "Test indicator"),
    _DOC + ("Name",): ("BT-X-2", "Document name"),
    _DOC + ("IncludedNote", "ContentCode"): ("BT-X-5", None),
    _LINE + ("AssociatedDocumentLineDocument", "IncludedNote", "ContentCode"): ("BT-X-9", None),
    _LINE + ("AssociatedDocumentLineDocument", "IncludedNote", "SubjectCode"): ("BT-X-10", None),
    **{party + _VAT_ID: (bt, _VAT_NAMES.get(bt)) for party, bt in _PARTY_VAT_IDS.items()},
    # the contacts' fax numbers (BG-6, BG-9; i-effect's XPath reference names the buyer's too)
    _AGREEMENT + ("SellerTradeParty", "DefinedTradeContact", "FaxUniversalCommunication", "CompleteNumber"):
        ("BT-X-107", "Seller contact fax number"),
    _AGREEMENT + ("BuyerTradeParty", "DefinedTradeContact", "FaxUniversalCommunication", "CompleteNumber"):
        ("BT-X-115", "Buyer contact fax number"),
    # the deliver-to party's contact (BG-X-26) and electronic address
    _DELIVERY + ("ShipToTradeParty", "DefinedTradeContact", "PersonName"): ("BT-X-155", "Ship-To contact point"),
    _DELIVERY + ("ShipToTradeParty", "DefinedTradeContact", "DepartmentName"):
        ("BT-X-156", "Ship-To contact department"),
    _DELIVERY + ("ShipToTradeParty", "URIUniversalCommunication", "URIID"):
        ("BT-X-160", "Ship-To electronic address"),
    # the delivery note (BT-X-202-00)
    _DELIVERY + ("DeliveryNoteReferencedDocument", "IssuerAssignedID"): ("BT-X-202", "Delivery note reference"),
    _DELIVERY + ("DeliveryNoteReferencedDocument", "FormattedIssueDateTime") + _DATE:
        ("BT-X-203", "Delivery note date"),
    # the invoicee (BG-X-36), its contact (BG-X-37) and address (BG-X-38)
    _INVOICEE + ("ID",): ("BT-X-224", "Invoicee identifier"),
    _INVOICEE + ("GlobalID",): ("BT-X-225", "Invoicee global identifier"),
    _INVOICEE + ("Name",): ("BT-X-226", "Invoicee name"),
    _INVOICEE + ("DefinedTradeContact", "PersonName"): ("BT-X-229", "Invoicee contact point"),
    _INVOICEE + ("DefinedTradeContact", "DepartmentName"): ("BT-X-230", "Invoicee contact department"),
    **_address(_INVOICEE, range(234, 241), "Invoicee"),
    # the payee's address (BG-X-40)
    **_address(_SETTLEMENT + ("PayeeTradeParty",), range(249, 256), "Payee"),
    # the currency exchange (BG-X-41): invoice currency to the local currency
    _EXCHANGE + ("SourceCurrencyCode",): ("BT-X-258", "Exchange source currency"),
    _EXCHANGE + ("TargetCurrencyCode",): ("BT-X-259", "Exchange target currency"),
    _EXCHANGE + ("ConversionRate",): ("BT-X-260", "Exchange rate"),
    _EXCHANGE + ("ConversionRateDateTime",) + _DATE: ("BT-X-261", "Exchange rate date"),
    # a VAT breakdown's parts of its taxable amount (BG-23)
    _SETTLEMENT + ("ApplicableTradeTax", "LineTotalBasisAmount"): ("BT-X-262", "VAT line total basis amount"),
    _SETTLEMENT + ("ApplicableTradeTax", "AllowanceChargeBasisAmount"):
        ("BT-X-263", "VAT allowance and charge basis amount"),
    # a payment term's late payment penalty (BG-X-43) and cash discount (BG-X-44)
    _PENALTY + ("BasisPeriodMeasure",): ("BT-X-277", "Payment penalty period"),
    _PENALTY + ("BasisPeriodMeasure", "@unitCode"): ("BT-X-278", "Payment penalty period unit"),
    _PENALTY + ("BasisAmount",): ("BT-X-279", "Payment penalty basis amount"),
    _PENALTY + ("CalculationPercent",): ("BT-X-280", "Payment penalty percentage"),
    _PENALTY + ("ActualPenaltyAmount",): ("BT-X-281", "Payment penalty amount"),
    _DISCOUNT + ("BasisPeriodMeasure",): ("BT-X-283", "Payment discount period"),
    _DISCOUNT + ("BasisPeriodMeasure", "@unitCode"): ("BT-X-284", "Payment discount period unit"),
    _DISCOUNT + ("BasisAmount",): ("BT-X-285", "Payment discount basis amount"),
    _DISCOUNT + ("CalculationPercent",): ("BT-X-286", "Payment discount percentage"),
    _DISCOUNT + ("ActualDiscountAmount",): ("BT-X-287", "Payment discount amount"),
    # the preceding invoice's type (BG-3) and the buyer accounting reference's type (BT-19-00)
    _SETTLEMENT + ("InvoiceReferencedDocument", "TypeCode"): ("BT-X-555", "Preceding invoice type code"),
    _SETTLEMENT + ("ReceivableSpecifiedTradeAccountingAccount", "TypeCode"):
        ("BT-X-290", "Buyer accounting reference type code"),
    # the item (BG-31): its further identifiers and names, and the products it includes (BG-X-1)
    _PRODUCT + ("ID",): ("BT-X-305", "Item identifier"),
    _PRODUCT + ("IndustryAssignedID",): ("BT-X-532", "Item industry assigned identifier"),
    _PRODUCT + ("ModelID",): ("BT-X-533", "Item model identifier"),
    _PRODUCT + ("BatchID",): ("BT-X-534", "Item batch identifier"),
    _PRODUCT + ("BrandName",): ("BT-X-535", "Item brand name"),
    _PRODUCT + ("ModelName",): ("BT-X-536", "Item model name"),
    _INCLUDED + ("ID",): ("BT-X-308", "Included product identifier"),
    _INCLUDED + ("GlobalID",): ("BT-X-15", "Included product standard identifier"),
    _INCLUDED + ("GlobalID", "@schemeID"): ("BT-X-15-1", "Included product standard identifier scheme"),
    _INCLUDED + ("SellerAssignedID",): ("BT-X-16", "Included product seller's identifier"),
    _INCLUDED + ("BuyerAssignedID",): ("BT-X-17", "Included product buyer's identifier"),
    _INCLUDED + ("IndustryAssignedID",): ("BT-X-309", "Included product industry assigned identifier"),
    _INCLUDED + ("Name",): ("BT-X-18", "Included product name"),
    _INCLUDED + ("Description",): ("BT-X-19", "Included product description"),
    _INCLUDED + ("UnitQuantity",): ("BT-X-20", "Included product quantity"),
    _INCLUDED + ("UnitQuantity", "@unitCode"): ("BT-X-20-1", "Included product quantity unit"),
    # the line's order reference (BT-132-00) and further documents (BG-X-3)
    _LINE_AGREEMENT + ("BuyerOrderReferencedDocument", "IssuerAssignedID"):
        ("BT-X-21", "Line purchase order reference"),
    _LINE_AGREEMENT + ("BuyerOrderReferencedDocument", "FormattedIssueDateTime") + _DATE:
        ("BT-X-22", "Line purchase order date"),
    _LINE_DOCUMENT + ("IssuerAssignedID",): ("BT-X-27", "Line additional document reference"),
    _LINE_DOCUMENT + ("URIID",): ("BT-X-28", "Line additional document location"),
    _LINE_DOCUMENT + ("LineID",): ("BT-X-29", "Line additional document line reference"),
    _LINE_DOCUMENT + ("TypeCode",): ("BT-X-30", "Line additional document type code"),
    _LINE_DOCUMENT + ("Name",): ("BT-X-299", "Line additional document description"),
    _LINE_DOCUMENT + ("AttachmentBinaryObject",): ("BT-X-31", "Line additional document attachment"),
    _LINE_DOCUMENT + ("ReferenceTypeCode",): ("BT-X-32", "Line additional document reference type code"),
    _LINE_DOCUMENT + ("FormattedIssueDateTime",) + _DATE: ("BT-X-33", "Line additional document date"),
    # the line's item seller (BG-X-90) and its address (BG-X-92)
    _ITEM_SELLER + ("ID",): ("BT-X-567", "Item seller identifier"),
    _ITEM_SELLER + ("GlobalID",): ("BT-X-568", "Item seller global identifier"),
    _ITEM_SELLER + ("GlobalID", "@schemeID"): ("BT-X-568-0", "Item seller global identifier scheme"),
    _ITEM_SELLER + ("Name",): ("BT-X-569", "Item seller name"),
    _ITEM_SELLER + ("SpecifiedLegalOrganization", "ID"): ("BT-X-572", "Item seller legal registration identifier"),
    _ITEM_SELLER + ("SpecifiedLegalOrganization", "ID", "@schemeID"):
        ("BT-X-572-0", "Item seller legal registration identifier scheme"),
    **_address(_ITEM_SELLER, range(579, 586), "Item seller"),
    # the line's quantities and delivery (BT-129-00)
    _LINE + ("SpecifiedLineTradeDelivery", "PackageQuantity"): ("BT-X-47", "Package quantity"),
    _LINE + ("SpecifiedLineTradeDelivery", "PackageQuantity", "@unitCode"): ("BT-X-47-0", "Package quantity unit"),
    _LINE + ("SpecifiedLineTradeDelivery", "ActualDeliverySupplyChainEvent", "OccurrenceDateTime") + _DATE:
        ("BT-X-85", "Line actual delivery date"),
    # the line's VAT (BG-30), totals (BT-131-00; TaxTotalAmount by its currency: `BY_VALUE`), preceding invoice
    # (BG-X-48) and accounting reference (BT-133-00)
    _LINE_SETTLEMENT + ("ApplicableTradeTax", "ExemptionReason"): ("BT-X-96", None),
    _LINE_SETTLEMENT + ("ApplicableTradeTax", "ExemptionReasonCode"): ("BT-X-97", None),
    _LINE_SETTLEMENT + ("ApplicableTradeTax", "DueDateTypeCode"): ("BT-X-589", "Line VAT point date code"),
    _LINE_TOTALS + ("ChargeTotalAmount",): ("BT-X-327", "Line charge total amount"),
    _LINE_TOTALS + ("AllowanceTotalAmount",): ("BT-X-328", "Line allowance total amount"),
    _LINE_TOTALS + ("GrandTotalAmount",): ("BT-X-330", "Line gross amount"),
    _LINE_TOTALS + ("TotalAllowanceChargeAmount",): ("BT-X-98", "Line allowance and charge total amount"),
    _LINE_PRECEDING + ("IssuerAssignedID",): ("BT-X-331", "Line preceding invoice reference"),
    _LINE_PRECEDING + ("LineID",): ("BT-X-540", "Line preceding invoice line reference"),
    _LINE_PRECEDING + ("TypeCode",): ("BT-X-332", "Line preceding invoice type code"),
    _LINE_PRECEDING + ("FormattedIssueDateTime",) + _DATE: ("BT-X-333", "Line preceding invoice date"),
    _LINE_SETTLEMENT + ("ReceivableSpecifiedTradeAccountingAccount", "TypeCode"):
        ("BT-X-99", "Line buyer accounting reference type code"),
}

_PRICE_ALLOWANCE_CHARGE = _LINE_AGREEMENT + ("GrossPriceProductTradePrice", "AppliedTradeAllowanceCharge")
_LINE_TAX_TOTAL = _LINE_TOTALS + ("TaxTotalAmount",)
_HEADER_CURRENCY = "{*}SupplyChainTradeTransaction/{*}ApplicableHeaderTradeSettlement/{*}"
_INDICATOR = {"false": "allowance", "0": "allowance", "true": "charge", "1": "charge"}  # as xslt's r:is-false/true


def _price_side(holder: etree._Element) -> str | None:
    """"allowance" / "charge": the gross price's allowance or charge `holder` is a child of, by its ChargeIndicator."""
    return _INDICATOR.get((holder.getparent().findtext("{*}ChargeIndicator/{*}Indicator") or "").strip())


def _tax_currency(holder: etree._Element) -> str | None:
    """"invoice" / "accounting": the line VAT total `holder` in the invoice currency (BT-5) or the VAT accounting
    currency (BT-6), by its currencyID (the invoice currency first where both are the same)."""
    currency = (holder.get("currencyID") or "").strip()
    root = holder.getroottree().getroot()
    return next((kind for kind, code in (("invoice", "InvoiceCurrencyCode"), ("accounting", "TaxCurrencyCode"))
                 if currency and (root.findtext(_HEADER_CURRENCY + code) or "").strip() == currency), None)


# steps -> (what decides, on the element holding the value: {its answer: (id, name)}); an answer missing here (an
# item price discount's amount) leaves the element its binding's term, none where it has no binding
BY_VALUE: dict[tuple[str, ...], tuple[Callable[[etree._Element], str | None], dict[str, tuple[str, str]]]] = {
    _PRICE_ALLOWANCE_CHARGE + ("CalculationPercent",): (_price_side, {
        "allowance": ("BT-X-34", "Item price discount percentage"),
        "charge": ("BT-X-300", "Item price charge percentage")}),
    _PRICE_ALLOWANCE_CHARGE + ("BasisAmount",): (_price_side, {
        "allowance": ("BT-X-35", "Item price discount base amount"),
        "charge": ("BT-X-301", "Item price charge base amount")}),
    _PRICE_ALLOWANCE_CHARGE + ("ActualAmount",): (_price_side, {"charge": ("BT-X-302", "Item price charge amount")}),
    _PRICE_ALLOWANCE_CHARGE + ("ReasonCode",): (_price_side, {
        "allowance": ("BT-X-313", "Item price discount reason code"),
        "charge": ("BT-X-314", "Item price charge reason code")}),
    _PRICE_ALLOWANCE_CHARGE + ("Reason",): (_price_side, {
        "allowance": ("BT-X-36", "Item price discount reason"),
        "charge": ("BT-X-303", "Item price charge reason")}),
    _LINE_TAX_TOTAL: (_tax_currency, {
        "invoice": ("BT-X-329", "Line VAT total amount"),
        "accounting": ("BT-X-590", "Line VAT total amount in accounting currency")}),
    _LINE_TAX_TOTAL + ("@currencyID",): (_tax_currency, {
        "invoice": ("BT-X-329-0", "Line VAT total amount currency code"),
        "accounting": ("BT-X-590-0", "Line VAT total amount in accounting currency, currency code")}),
}


def term_by_value(steps: tuple[str, ...], holder: etree._Element) -> str | None:
    """"BT-X-n name" of a value `BY_VALUE` numbers by a value (`holder`: its element, an attribute's owner), None
    where the value decides none."""
    decide, ids = BY_VALUE[steps]
    found = ids.get(decide(holder) or "")
    return f"{found[0]} {found[1]}" if found else None


def extended_term(steps: tuple[str, ...]) -> str | None:
    """"BT-X-n name" of a CII element's path steps (prefixes and positions left out), None where Factur-X numbers
    none. (A party's tax registration is named so only when it is a VAT one, schemeID VA: `term_of_element`.)"""
    found = EXTENDED_TERMS.get(steps)
    if found is None:
        return None
    bt, name = found
    return f"{bt} {name or bt_name(bt) or ''}".strip()
