"""Read a CII (D16B) or UBL 2.1 invoice back into the business terms of service spec section 2.

The result is a dict shaped like `InvoiceRequest.invoice` (same JSON names, nested the same way), with
strings for text and codes, ISO dates, and `Decimal` for numbers. It is written independently of the
stylesheets (one XPath per term and syntax, from the EN 16931-1 syntax bindings) so that a term the
stylesheets drop or alter shows up as a difference.

The further occurrences of a repeatable term (notes, preceding invoices, seller identifiers, credit transfers,
item classifications) are read into the model's `additional...` extension arrays, the first into the single
field. A term that occurs more often than the JSON model can carry (e.g. two buyer identifiers) or that the
model has no field for at all (CII advance payments, line references other than BT-128) is listed
in `losses`; those are limits of the model, not of the reader. The XRechnung extension's sub-invoice lines and
third-party payments are read from UBL, where XRechnung binds them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from lxml import etree

NS = {
    "rsm": "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100",
    "ram": "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100",
    "udt": "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100",
    "qdt": "urn:un:unece:uncefact:data:standard:QualifiedDataType:100",
    "cac": "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2",
    "cbc": "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2",
}
CII_ROOT = "{%s}CrossIndustryInvoice" % NS["rsm"]
UBL_ROOTS = {
    "{urn:oasis:names:specification:ubl:schema:xsd:Invoice-2}Invoice",
    "{urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2}CreditNote",
}

TEXT, DATE, NUM = "text", "date", "number"

_BASIS = ("(ram:NetPriceProductTradePrice/ram:BasisQuantity | ram:GrossPriceProductTradePrice["
          "not(../ram:NetPriceProductTradePrice/ram:BasisQuantity)]/ram:BasisQuantity)")

@dataclass(frozen=True)
class T:
    """One business term: JSON name, BT id, XPath in CII and in UBL (relative to the parent group)."""
    name: str
    bt: str
    cii: str | None
    ubl: str | None
    kind: str = TEXT


@dataclass(frozen=True)
class G:
    """A group of terms (an object of section 2), `many` for arrays."""
    name: str
    bg: str
    cii: str
    ubl: str
    terms: tuple = ()
    many: bool = False


_SETTLE = "rsm:SupplyChainTradeTransaction/ram:ApplicableHeaderTradeSettlement"
# CII: type code 130, or none (EN 16931 binds no other document to a line; the CEN example XRechnung-O leaves it out)
# where the invoice is no Factur-X EXTENDED, whose lines have documents of types 50 and 916 too
_LINE_OBJECT = ("ram:SpecifiedLineTradeSettlement/ram:AdditionalReferencedDocument[ram:TypeCode='130' or "
                "not(ram:TypeCode) and not(contains(/rsm:CrossIndustryInvoice/rsm:ExchangedDocumentContext/"
                "ram:GuidelineSpecifiedDocumentContextParameter/ram:ID, ':extended'))]")
# UBL: the line's document reference is BT-128 (type code 130, which the CEN examples leave out; Peppol R101)
_U_LINE_OBJECT = "cac:DocumentReference[not(cbc:DocumentTypeCode) or cbc:DocumentTypeCode='130']"
# BT-8 in CII is the UNTDID 2475 code; the model (and UBL) use the semantic model's UNTDID 2005 code
TAX_POINT_CODES = {"5": "3", "29": "35", "72": "432"}
_AGREE = "rsm:SupplyChainTradeTransaction/ram:ApplicableHeaderTradeAgreement"
_DELIV = "rsm:SupplyChainTradeTransaction/ram:ApplicableHeaderTradeDelivery"
_PARTY_ID_UBL = "cac:PartyIdentification/cbc:ID[not(@schemeID='SEPA')]"
# The scheme of the identifier that is read (the first one), not of some other identifier.
_FIRST_ID_SCHEME_CII = "(ram:ID|ram:GlobalID)[1]/@schemeID"
_FIRST_ID_SCHEME_UBL = "(%s)[1]/@schemeID" % _PARTY_ID_UBL


def _address(cii: str, ubl: str, bg: str) -> G:
    return G("postalAddress" if bg != "BG-15" else "address", bg, cii, ubl, (
        T("addressLine1", bg, "ram:LineOne", "cbc:StreetName"),
        T("addressLine2", bg, "ram:LineTwo", "cbc:AdditionalStreetName"),
        T("addressLine3", bg, "ram:LineThree", "cac:AddressLine/cbc:Line"),
        T("city", bg, "ram:CityName", "cbc:CityName"),
        T("postcode", bg, "ram:PostcodeCode", "cbc:PostalZone"),
        T("countrySubdivision", bg, "ram:CountrySubDivisionName", "cbc:CountrySubentity"),
        T("countryCode", bg, "ram:CountryID", "cac:Country/cbc:IdentificationCode"),
    ))


def _contact(bg: str) -> G:
    return G("contact", bg, "ram:DefinedTradeContact", "cac:Contact", (
        T("contactPoint", bg, "ram:PersonName|ram:DepartmentName", "cbc:Name"),
        T("telephone", bg, "ram:TelephoneUniversalCommunication/ram:CompleteNumber", "cbc:Telephone"),
        T("email", bg, "ram:EmailURIUniversalCommunication/ram:URIID", "cbc:ElectronicMail"),
    ))


def _credit_transfer(name: str, cii: str, ubl: str, many: bool) -> G:
    """BG-17 in one payment means (the first one carrying an account, or each further one)."""
    return G(name, "BG-17", cii, ubl, (
        T("accountIdentifier", "BT-84",
          "ram:PayeePartyCreditorFinancialAccount/ram:IBANID|ram:PayeePartyCreditorFinancialAccount/ram:ProprietaryID",
          "cac:PayeeFinancialAccount/cbc:ID"),
        T("accountName", "BT-85", "ram:PayeePartyCreditorFinancialAccount/ram:AccountName",
          "cac:PayeeFinancialAccount/cbc:Name"),
        # UBL: the branch's id, or without one the institution's (UBL 2.1's and Peppol BIS 2's place of the BIC)
        T("serviceProviderIdentifier", "BT-86", "ram:PayeeSpecifiedCreditorFinancialInstitution/ram:BICID",
          "cac:PayeeFinancialAccount/cac:FinancialInstitutionBranch/cbc:ID | cac:PayeeFinancialAccount/"
          "cac:FinancialInstitutionBranch[not(normalize-space(cbc:ID))]/cac:FinancialInstitution/cbc:ID"),
    ), many=many)


def _classification(cii: str, ubl: str) -> tuple:
    """BT-158 with its list id and version, below the classification element paths given (with a step's '/')."""
    return (
        T("classifiedIdentifier", "BT-158", cii + "ram:ClassCode", ubl + "cbc:ItemClassificationCode"),
        T("classifiedIdentifierSchemeId", "BT-158-1", cii + "ram:ClassCode/@listID",
          ubl + "cbc:ItemClassificationCode/@listID"),
        T("classifiedIdentifierVersion", "BT-158-2", cii + "ram:ClassCode/@listVersionID",
          ubl + "cbc:ItemClassificationCode/@listVersionID"),
    )


def _preceding_invoice(name: str, cii: str, ubl: str, many: bool) -> G:
    return G(name, "BG-3", cii, ubl, (
        T("documentReference", "BT-25", "ram:IssuerAssignedID", "cbc:ID"),
        T("issueDate", "BT-26", "ram:FormattedIssueDateTime/qdt:DateTimeString", "cbc:IssueDate", DATE),
    ), many=many)


def _allowance_charge(name: str, bg: str, charge: bool, line: bool) -> G:
    # xs:boolean: "true"/"1" or "false"/"0"
    flags = "('true', '1')" if charge else "('false', '0')"
    parent = "ram:SpecifiedLineTradeSettlement" if line else _SETTLE
    test = "normalize-space(%s)='%s' or normalize-space(%s)='%s'"
    cii = "%s/ram:SpecifiedTradeAllowanceCharge[%s]" % (parent, test % (
        ("ram:ChargeIndicator/udt:Indicator",) + (("true",) if charge else ("false",))
        + ("ram:ChargeIndicator/udt:Indicator",) + (("1",) if charge else ("0",))))
    ubl = "cac:AllowanceCharge[%s]" % (test % (("cbc:ChargeIndicator",) + (("true",) if charge else ("false",))
                                               + ("cbc:ChargeIndicator",) + (("1",) if charge else ("0",))))
    # Factur-X EXTENDED's logistics service charges are document level charges: its rules count their amount
    # (BT-X-272) into BT-108 (BR-FXEXT-CO-12) and, by their VAT category (BT-X-273, BT-X-274), into the breakdowns
    logistics = charge and not line
    if logistics:
        cii += " | %s/ram:SpecifiedLogisticsServiceCharge[contains(/rsm:CrossIndustryInvoice/rsm:ExchangedDocument" \
               "Context/ram:GuidelineSpecifiedDocumentContextParameter/ram:ID, ':extended')]" % parent
    terms = [
        T("amount", bg, "ram:ActualAmount" + ("|ram:AppliedAmount" if logistics else ""), "cbc:Amount", NUM),
        T("percentage", bg, "ram:CalculationPercent", "cbc:MultiplierFactorNumeric", NUM),
        T("baseAmount", bg, "ram:BasisAmount", "cbc:BaseAmount", NUM),
    ]
    if not line:
        terms += [
            T("vatCategoryCode", bg, "ram:CategoryTradeTax/ram:CategoryCode|ram:AppliedTradeTax/ram:CategoryCode",
              "cac:TaxCategory/cbc:ID"),
            T("vatRate", bg, "ram:CategoryTradeTax/ram:RateApplicablePercent|ram:AppliedTradeTax/ram:RateApplicablePercent",
              "cac:TaxCategory/cbc:Percent", NUM),
        ]
    terms += [
        T("reason", bg, "ram:Reason" + ("|ram:Description" if logistics else ""), "cbc:AllowanceChargeReason"),
        T("reasonCode", bg, "ram:ReasonCode", "cbc:AllowanceChargeReasonCode"),
    ]
    return G(name, bg, cii, ubl, tuple(terms), many=True)


def _line(name: str, bg: str, cii: str | None, ubl: str, depth: int) -> G:
    """BG-25, or (name subInvoiceLines) the XRechnung extension's sub-invoice lines BG-DEX-01, which nest in UBL
    (`cac:SubInvoiceLine`) and have no CII binding; read `depth` levels deep."""
    sub = (_line("subInvoiceLines", "BG-DEX-01", None, "cac:SubInvoiceLine|cac:SubCreditNoteLine", depth - 1),) \
        if depth else ()
    return G(name, bg, cii, ubl, (
        T("lineIdentifier", "BT-126", "ram:AssociatedDocumentLineDocument/ram:LineID", "cbc:ID"),
        T("note", "BT-127", "ram:AssociatedDocumentLineDocument/ram:IncludedNote/ram:Content", "cbc:Note"),
        T("quantity", "BT-129", "ram:SpecifiedLineTradeDelivery/ram:BilledQuantity",
          "cbc:InvoicedQuantity|cbc:CreditedQuantity", NUM),
        T("unitCode", "BT-130", "ram:SpecifiedLineTradeDelivery/ram:BilledQuantity/@unitCode",
          "cbc:InvoicedQuantity/@unitCode|cbc:CreditedQuantity/@unitCode"),
        T("netAmount", "BT-131",
          "ram:SpecifiedLineTradeSettlement/ram:SpecifiedTradeSettlementLineMonetarySummation/ram:LineTotalAmount",
          "cbc:LineExtensionAmount", NUM),
        T("referencedPurchaseOrderLine", "BT-132", "ram:SpecifiedLineTradeAgreement/ram:BuyerOrderReferencedDocument/ram:LineID",
          "cac:OrderLineReference/cbc:LineID"),
        T("buyerAccountingReference", "BT-133",
          "ram:SpecifiedLineTradeSettlement/ram:ReceivableSpecifiedTradeAccountingAccount/ram:ID", "cbc:AccountingCost"),
        T("objectIdentifier", "BT-128", _LINE_OBJECT + "/ram:IssuerAssignedID", _U_LINE_OBJECT + "/cbc:ID"),
        T("objectIdentifierSchemeId", "BT-128-1", _LINE_OBJECT + "/ram:ReferenceTypeCode",
          _U_LINE_OBJECT + "/cbc:ID/@schemeID"),
        # Factur-X EXTENDED's line hierarchy: CII only (UBL has no place the CEN rules accept, UBL-CR-646)
        T("parentLineIdentifier", "BT-X-304", "ram:AssociatedDocumentLineDocument/ram:ParentLineID", None),
        T("lineStatusReasonCode", "BT-X-8", "ram:AssociatedDocumentLineDocument/ram:LineStatusReasonCode", None),
        G("invoiceLinePeriod", "BG-26", "ram:SpecifiedLineTradeSettlement/ram:BillingSpecifiedPeriod", "cac:InvoicePeriod", (
            T("startDate", "BT-134", "ram:StartDateTime/udt:DateTimeString", "cbc:StartDate", DATE),
            T("endDate", "BT-135", "ram:EndDateTime/udt:DateTimeString", "cbc:EndDate", DATE),
        )),
        _allowance_charge("invoiceLineAllowances", "BG-27", charge=False, line=True),
        _allowance_charge("invoiceLineCharges", "BG-28", charge=True, line=True),
        G("priceDetails", "BG-29", "ram:SpecifiedLineTradeAgreement", "cac:Price", (
            T("netPrice", "BT-146", "ram:NetPriceProductTradePrice/ram:ChargeAmount", "cbc:PriceAmount", NUM),
            T("grossPrice", "BT-148", "ram:GrossPriceProductTradePrice/ram:ChargeAmount",
              "cac:AllowanceCharge/cbc:BaseAmount", NUM),
            T("priceDiscount", "BT-147", "ram:GrossPriceProductTradePrice/ram:AppliedTradeAllowanceCharge/ram:ActualAmount",
              "cac:AllowanceCharge/cbc:Amount", NUM),  # a field since issue 23 (as stated)
            # BT-149/150 on the net price, or on the gross price where only that has them (the XRechnung
            # testsuite writes them there)
            T("priceBasisQuantity", "BT-149", _BASIS, "cbc:BaseQuantity", NUM),
            T("basisUnitCode", "BT-150", f"{_BASIS}/@unitCode", "cbc:BaseQuantity/@unitCode"),
        )),
        G("lineVatInformation", "BG-30", "ram:SpecifiedLineTradeSettlement/ram:ApplicableTradeTax",
          "cac:Item/cac:ClassifiedTaxCategory", (
              T("vatCategoryCode", "BT-151", "ram:CategoryCode", "cbc:ID"),
              T("vatRate", "BT-152", "ram:RateApplicablePercent", "cbc:Percent", NUM),
          )),
        G("itemInformation", "BG-31", "ram:SpecifiedTradeProduct", "cac:Item", (
            T("name", "BT-153", "ram:Name", "cbc:Name"),
            T("description", "BT-154", "ram:Description", "cbc:Description"),
            T("sellersIdentifier", "BT-155", "ram:SellerAssignedID", "cac:SellersItemIdentification/cbc:ID"),
            T("buyersIdentifier", "BT-156", "ram:BuyerAssignedID", "cac:BuyersItemIdentification/cbc:ID"),
            T("standardIdentifier", "BT-157", "ram:GlobalID", "cac:StandardItemIdentification/cbc:ID"),
            T("standardIdentifierSchemeId", "BT-157-1", "ram:GlobalID/@schemeID",
              "cac:StandardItemIdentification/cbc:ID/@schemeID"),
            *_classification("ram:DesignatedProductClassification[1]/", "cac:CommodityClassification[1]/"),
            T("countryOfOrigin", "BT-159", "ram:OriginTradeCountry/ram:ID", "cac:OriginCountry/cbc:IdentificationCode"),
            G("itemAttributes", "BG-32", "ram:ApplicableProductCharacteristic", "cac:AdditionalItemProperty", (
                T("name", "BT-160", "ram:Description", "cbc:Name"),
                T("value", "BT-161", "ram:Value", "cbc:Value"),
            ), many=True),
            G("additionalClassifiedIdentifiers", "BT-158", "ram:DesignatedProductClassification[position() > 1]",
              "cac:CommodityClassification[position() > 1]", _classification("", ""), many=True),
        )),
    ) + sub, many=True)


INVOICE = G("invoice", "", ".", ".", (
    T("invoiceNumber", "BT-1", "rsm:ExchangedDocument/ram:ID", "cbc:ID"),
    T("issueDate", "BT-2", "rsm:ExchangedDocument/ram:IssueDateTime/udt:DateTimeString", "cbc:IssueDate", DATE),
    T("invoiceTypeCode", "BT-3", "rsm:ExchangedDocument/ram:TypeCode", "cbc:InvoiceTypeCode|cbc:CreditNoteTypeCode"),
    T("currencyCode", "BT-5", _SETTLE + "/ram:InvoiceCurrencyCode", "cbc:DocumentCurrencyCode"),
    T("invoiceCurrencyCode", "BT-5", _SETTLE + "/ram:InvoiceCurrencyCode", "cbc:DocumentCurrencyCode"),  # alias
    T("valueAddedTaxPointDate", "BT-7", _SETTLE + "/ram:ApplicableTradeTax/ram:TaxPointDate/udt:DateString",
      "cbc:TaxPointDate", DATE),
    T("valueAddedTaxPointDateCode", "BT-8", _SETTLE + "/ram:ApplicableTradeTax/ram:DueDateTypeCode",
      "cac:InvoicePeriod/cbc:DescriptionCode"),
    T("vatAccountingCurrencyCode", "BT-6", _SETTLE + "/ram:TaxCurrencyCode", "cbc:TaxCurrencyCode"),
    T("paymentDueDate", "BT-9", _SETTLE + "/ram:SpecifiedTradePaymentTerms/ram:DueDateDateTime/udt:DateTimeString",
      "cbc:DueDate|cac:PaymentMeans/cbc:PaymentDueDate", DATE),
    T("buyerReference", "BT-10", _AGREE + "/ram:BuyerReference", "cbc:BuyerReference"),
    T("projectReference", "BT-11", _AGREE + "/ram:SpecifiedProcuringProject/ram:ID",
      "cac:ProjectReference/cbc:ID|cac:AdditionalDocumentReference[cbc:DocumentTypeCode='50']/cbc:ID"),
    T("contractReference", "BT-12", _AGREE + "/ram:ContractReferencedDocument/ram:IssuerAssignedID",
      "cac:ContractDocumentReference/cbc:ID"),
    T("purchaseOrderReference", "BT-13", _AGREE + "/ram:BuyerOrderReferencedDocument/ram:IssuerAssignedID",
      "cac:OrderReference/cbc:ID"),
    T("salesOrderReference", "BT-14", _AGREE + "/ram:SellerOrderReferencedDocument/ram:IssuerAssignedID",
      "cac:OrderReference/cbc:SalesOrderID"),
    T("receivingAdviceReference", "BT-15", _DELIV + "/ram:ReceivingAdviceReferencedDocument/ram:IssuerAssignedID",
      "cac:ReceiptDocumentReference/cbc:ID"),
    T("despatchAdviceReference", "BT-16", _DELIV + "/ram:DespatchAdviceReferencedDocument/ram:IssuerAssignedID",
      "cac:DespatchDocumentReference/cbc:ID"),
    T("tenderOrLotReference", "BT-17",
      _AGREE + "/ram:AdditionalReferencedDocument[ram:TypeCode='50']/ram:IssuerAssignedID",
      "cac:OriginatorDocumentReference/cbc:ID"),
    T("invoicedObjectIdentifier", "BT-18",
      _AGREE + "/ram:AdditionalReferencedDocument[ram:TypeCode='130']/ram:IssuerAssignedID",
      "cac:AdditionalDocumentReference[cbc:DocumentTypeCode='130']/cbc:ID"),
    T("invoicedObjectIdentifierSchemeId", "BT-18-1",
      _AGREE + "/ram:AdditionalReferencedDocument[ram:TypeCode='130']/ram:ReferenceTypeCode",
      "cac:AdditionalDocumentReference[cbc:DocumentTypeCode='130']/cbc:ID/@schemeID"),
    T("buyerAccountingReference", "BT-19", _SETTLE + "/ram:ReceivableSpecifiedTradeAccountingAccount/ram:ID",
      "cbc:AccountingCost"),
    T("paymentTerms", "BT-20", _SETTLE + "/ram:SpecifiedTradePaymentTerms/ram:Description",
      "cac:PaymentTerms/cbc:Note"),
    T("invoiceNote", "BT-22", "rsm:ExchangedDocument/ram:IncludedNote[1]/ram:Content", "cbc:Note[1]"),
    T("invoiceNoteSubjectCode", "BT-21", "rsm:ExchangedDocument/ram:IncludedNote[1]/ram:SubjectCode", None),
    G("additionalInvoiceNotes", "BG-1", "rsm:ExchangedDocument/ram:IncludedNote[position() > 1]",
      "cbc:Note[position() > 1]", (
          T("invoiceNote", "BT-22", "ram:Content", "."),
          T("invoiceNoteSubjectCode", "BT-21", "ram:SubjectCode", None),
      ), many=True),
    G("processControl", "BG-2", "rsm:ExchangedDocumentContext", ".", (
        T("businessProcessType", "BT-23", "ram:BusinessProcessSpecifiedDocumentContextParameter/ram:ID",
          "cbc:ProfileID"),
        T("specificationIdentifier", "BT-24", "ram:GuidelineSpecifiedDocumentContextParameter/ram:ID",
          "cbc:CustomizationID"),
    )),
    _preceding_invoice("precedingInvoiceReference", "(%s/ram:InvoiceReferencedDocument)[1]" % _SETTLE,
                       "(cac:BillingReference/cac:InvoiceDocumentReference)[1]", many=False),
    # CII D16B has one InvoiceReferencedDocument; a document with more is read all the same
    _preceding_invoice("additionalPrecedingInvoiceReferences",
                       "(%s/ram:InvoiceReferencedDocument)[position() > 1]" % _SETTLE,
                       "(cac:BillingReference/cac:InvoiceDocumentReference)[position() > 1]", many=True),
    G("seller", "BG-4", _AGREE + "/ram:SellerTradeParty", "cac:AccountingSupplierParty/cac:Party", (
        T("name", "BT-27", "ram:Name", "cac:PartyLegalEntity/cbc:RegistrationName"),
        T("tradingName", "BT-28", "ram:SpecifiedLegalOrganization/ram:TradingBusinessName", "cac:PartyName/cbc:Name"),
        T("identifier", "BT-29", "(ram:ID|ram:GlobalID)[1]", "(%s)[1]" % _PARTY_ID_UBL),
        T("identifierSchemeId", "BT-29-1", _FIRST_ID_SCHEME_CII, _FIRST_ID_SCHEME_UBL),
        T("legalRegistrationIdentifier", "BT-30", "ram:SpecifiedLegalOrganization/ram:ID",
          "cac:PartyLegalEntity/cbc:CompanyID"),
        T("legalRegistrationIdentifierSchemeId", "BT-30-1", "ram:SpecifiedLegalOrganization/ram:ID/@schemeID",
          "cac:PartyLegalEntity/cbc:CompanyID/@schemeID"),
        T("vatIdentifier", "BT-31", "ram:SpecifiedTaxRegistration/ram:ID[@schemeID='VA']",
          "cac:PartyTaxScheme[cac:TaxScheme/cbc:ID='VAT']/cbc:CompanyID"),
        T("taxRegistrationIdentifier", "BT-32", "ram:SpecifiedTaxRegistration/ram:ID[@schemeID='FC']",
          "cac:PartyTaxScheme[not(cac:TaxScheme/cbc:ID='VAT')]/cbc:CompanyID"),
        T("additionalLegalInformation", "BT-33", "ram:Description", "cac:PartyLegalEntity/cbc:CompanyLegalForm"),
        T("electronicAddress", "BT-34", "ram:URIUniversalCommunication/ram:URIID", "cbc:EndpointID"),
        T("electronicAddressSchemeId", "BT-34-1", "ram:URIUniversalCommunication/ram:URIID/@schemeID",
          "cbc:EndpointID/@schemeID"),
        _address("ram:PostalTradeAddress", "cac:PostalAddress", "BG-5"),
        _contact("BG-6"),
        G("additionalIdentifiers", "BT-29", "(ram:ID|ram:GlobalID)[position() > 1]",
          "(%s)[position() > 1]" % _PARTY_ID_UBL, (
              T("identifier", "BT-29", ".", "."),
              T("identifierSchemeId", "BT-29-1", "@schemeID", "@schemeID"),
          ), many=True),
    )),
    G("buyer", "BG-7", _AGREE + "/ram:BuyerTradeParty", "cac:AccountingCustomerParty/cac:Party", (
        T("name", "BT-44", "ram:Name", "cac:PartyLegalEntity/cbc:RegistrationName"),
        T("tradingName", "BT-45", "ram:SpecifiedLegalOrganization/ram:TradingBusinessName", "cac:PartyName/cbc:Name"),
        T("identifier", "BT-46", "ram:ID|ram:GlobalID", _PARTY_ID_UBL),
        T("identifierSchemeId", "BT-46-1", _FIRST_ID_SCHEME_CII, _FIRST_ID_SCHEME_UBL),
        T("legalRegistrationIdentifier", "BT-47", "ram:SpecifiedLegalOrganization/ram:ID",
          "cac:PartyLegalEntity/cbc:CompanyID"),
        T("legalRegistrationIdentifierSchemeId", "BT-47-1", "ram:SpecifiedLegalOrganization/ram:ID/@schemeID",
          "cac:PartyLegalEntity/cbc:CompanyID/@schemeID"),
        T("vatIdentifier", "BT-48", "ram:SpecifiedTaxRegistration/ram:ID[@schemeID='VA']",
          "cac:PartyTaxScheme[cac:TaxScheme/cbc:ID='VAT']/cbc:CompanyID"),
        T("electronicAddress", "BT-49", "ram:URIUniversalCommunication/ram:URIID", "cbc:EndpointID"),
        T("electronicAddressSchemeId", "BT-49-1", "ram:URIUniversalCommunication/ram:URIID/@schemeID",
          "cbc:EndpointID/@schemeID"),
        _address("ram:PostalTradeAddress", "cac:PostalAddress", "BG-8"),
        _contact("BG-9"),
    )),
    G("payee", "BG-10", _SETTLE + "/ram:PayeeTradeParty", "cac:PayeeParty", (
        T("name", "BT-59", "ram:Name", "cac:PartyName/cbc:Name"),
        T("identifier", "BT-60", "ram:ID|ram:GlobalID", _PARTY_ID_UBL),
        T("identifierSchemeId", "BT-60-1", _FIRST_ID_SCHEME_CII, _FIRST_ID_SCHEME_UBL),
        T("legalRegistrationIdentifier", "BT-61", "ram:SpecifiedLegalOrganization/ram:ID",
          "cac:PartyLegalEntity/cbc:CompanyID"),
        T("legalRegistrationIdentifierSchemeId", "BT-61-1", "ram:SpecifiedLegalOrganization/ram:ID/@schemeID",
          "cac:PartyLegalEntity/cbc:CompanyID/@schemeID"),
    )),
    G("sellerTaxRepresentativeParty", "BG-11", _AGREE + "/ram:SellerTaxRepresentativeTradeParty",
      "cac:TaxRepresentativeParty", (
          T("name", "BT-62", "ram:Name", "cac:PartyName/cbc:Name"),
          T("vatIdentifier", "BT-63", "ram:SpecifiedTaxRegistration/ram:ID[@schemeID='VA']",
            "cac:PartyTaxScheme/cbc:CompanyID"),
          _address("ram:PostalTradeAddress", "cac:PostalAddress", "BG-12"),
      )),
    G("deliveryInformation", "BG-13", _DELIV, "cac:Delivery", (
        T("partyName", "BT-70", "ram:ShipToTradeParty/ram:Name", "cac:DeliveryParty/cac:PartyName/cbc:Name"),
        T("locationIdentifier", "BT-71", "ram:ShipToTradeParty/ram:ID|ram:ShipToTradeParty/ram:GlobalID",
          "cac:DeliveryLocation/cbc:ID"),
        T("locationIdentifierSchemeId", "BT-71-1",
          "(ram:ShipToTradeParty/ram:ID|ram:ShipToTradeParty/ram:GlobalID)[1]/@schemeID",
          "cac:DeliveryLocation/cbc:ID/@schemeID"),
        T("actualDeliveryDate", "BT-72", "ram:ActualDeliverySupplyChainEvent/ram:OccurrenceDateTime/udt:DateTimeString",
          "cbc:ActualDeliveryDate", DATE),
        _address("ram:ShipToTradeParty/ram:PostalTradeAddress", "cac:DeliveryLocation/cac:Address", "BG-15"),
    )),
    G("invoicingPeriod", "BG-14", _SETTLE + "/ram:BillingSpecifiedPeriod", "cac:InvoicePeriod", (
        T("startDate", "BT-73", "ram:StartDateTime/udt:DateTimeString", "cbc:StartDate", DATE),
        T("endDate", "BT-74", "ram:EndDateTime/udt:DateTimeString", "cbc:EndDate", DATE),
    )),
    G("paymentInstructions", "BG-16", _SETTLE, ".", (
        T("meansCode", "BT-81", "ram:SpecifiedTradeSettlementPaymentMeans/ram:TypeCode",
          "cac:PaymentMeans/cbc:PaymentMeansCode"),
        T("meansText", "BT-82", "ram:SpecifiedTradeSettlementPaymentMeans/ram:Information",
          "cac:PaymentMeans/cbc:PaymentMeansCode/@name"),
        T("remittanceInformation", "BT-83", "ram:PaymentReference", "cac:PaymentMeans/cbc:PaymentID"),
        _credit_transfer("creditTransfer", "ram:SpecifiedTradeSettlementPaymentMeans[ram:PayeePartyCreditorFinancialAccount][1]",
                         "cac:PaymentMeans[cac:PayeeFinancialAccount][1]", many=False),
        _credit_transfer("additionalCreditTransfers",
                         "ram:SpecifiedTradeSettlementPaymentMeans[ram:PayeePartyCreditorFinancialAccount][position() > 1]",
                         "cac:PaymentMeans[cac:PayeeFinancialAccount][position() > 1]", many=True),
        G("paymentCardInformation", "BG-18", "ram:SpecifiedTradeSettlementPaymentMeans/ram:ApplicableTradeSettlementFinancialCard",
          "cac:PaymentMeans/cac:CardAccount", (
              T("primaryAccountNumber", "BT-87", "ram:ID", "cbc:PrimaryAccountNumberID"),
              T("cardHolderName", "BT-88", "ram:CardholderName", "cbc:HolderName"),
          )),
        G("directDebit", "BG-19", ".", "/*", (
            T("mandateReferenceIdentifier", "BT-89", "ram:SpecifiedTradePaymentTerms/ram:DirectDebitMandateID",
              "cac:PaymentMeans/cac:PaymentMandate/cbc:ID"),
            T("debtorAccountIdentifier", "BT-91",
              "ram:SpecifiedTradeSettlementPaymentMeans/ram:PayerPartyDebtorFinancialAccount/ram:IBANID",
              "cac:PaymentMeans/cac:PaymentMandate/cac:PayerFinancialAccount/cbc:ID"),
            T("creditorIdentifier", "BT-90", "ram:CreditorReferenceID",
              "cac:AccountingSupplierParty/cac:Party/cac:PartyIdentification/cbc:ID[@schemeID='SEPA']"
              "|cac:PayeeParty/cac:PartyIdentification/cbc:ID[@schemeID='SEPA']"),
        )),
    )),
    G("documentTotals", "BG-22", _SETTLE + "/ram:SpecifiedTradeSettlementHeaderMonetarySummation",
      "cac:LegalMonetaryTotal", (
          T("lineExtensionAmount", "BT-106", "ram:LineTotalAmount", "cbc:LineExtensionAmount", NUM),
          T("allowanceTotalAmount", "BT-107", "ram:AllowanceTotalAmount", "cbc:AllowanceTotalAmount", NUM),
          T("chargeTotalAmount", "BT-108", "ram:ChargeTotalAmount", "cbc:ChargeTotalAmount", NUM),
          T("taxExclusiveAmount", "BT-109", "ram:TaxBasisTotalAmount", "cbc:TaxExclusiveAmount", NUM),
          T("taxTotalAmount", "BT-110", "ram:TaxTotalAmount[@currencyID=../../ram:InvoiceCurrencyCode]",
            "../cac:TaxTotal/cbc:TaxAmount[@currencyID=../../cbc:DocumentCurrencyCode]", NUM),  # computed
          T("taxTotalAmountInAccountingCurrency", "BT-111",
            "ram:TaxTotalAmount[@currencyID=../../ram:TaxCurrencyCode][../../ram:TaxCurrencyCode != ../../ram:InvoiceCurrencyCode]",
            "../cac:TaxTotal/cbc:TaxAmount[@currencyID=../../cbc:TaxCurrencyCode]"
            "[../../cbc:TaxCurrencyCode != ../../cbc:DocumentCurrencyCode]", NUM),
          T("taxInclusiveAmount", "BT-112", "ram:GrandTotalAmount", "cbc:TaxInclusiveAmount", NUM),
          T("prepaidAmount", "BT-113", "ram:TotalPrepaidAmount", "cbc:PrepaidAmount", NUM),
          T("payableRoundingAmount", "BT-114", "ram:RoundingAmount", "cbc:PayableRoundingAmount", NUM),
          T("payableAmount", "BT-115", "ram:DuePayableAmount", "cbc:PayableAmount", NUM),
      )),
    G("vatBreakdowns", "BG-23", _SETTLE + "/ram:ApplicableTradeTax", "cac:TaxTotal/cac:TaxSubtotal", (
        T("vatCategoryCode", "BT-118", "ram:CategoryCode", "cac:TaxCategory/cbc:ID"),
        T("vatCategoryRate", "BT-119", "ram:RateApplicablePercent", "cac:TaxCategory/cbc:Percent", NUM),
        T("vatCategoryTaxableAmount", "BT-116", "ram:BasisAmount", "cbc:TaxableAmount", NUM),
        T("vatCategoryTaxAmount", "BT-117", "ram:CalculatedAmount", "cbc:TaxAmount", NUM),
        T("exemptionReason", "BT-120", "ram:ExemptionReason", "cac:TaxCategory/cbc:TaxExemptionReason"),
        T("exemptionReasonCode", "BT-121", "ram:ExemptionReasonCode", "cac:TaxCategory/cbc:TaxExemptionReasonCode"),
    ), many=True),
    _allowance_charge("documentLevelAllowances", "BG-20", charge=False, line=False),
    _allowance_charge("documentLevelCharges", "BG-21", charge=True, line=False),
    G("additionalSupportingDocuments", "BG-24",
      _AGREE + "/ram:AdditionalReferencedDocument[ram:TypeCode='916']",
      "cac:AdditionalDocumentReference[not(cbc:DocumentTypeCode='130' or cbc:DocumentTypeCode='50')]", (
          T("reference", "BT-122", "ram:IssuerAssignedID", "cbc:ID"),
          T("description", "BT-123", "ram:Name", "cbc:DocumentDescription"),
          T("externalLocation", "BT-124", "ram:URIID", "cac:Attachment/cac:ExternalReference/cbc:URI"),
          T("attachedDocument", "BT-125", "ram:AttachmentBinaryObject", "cac:Attachment/cbc:EmbeddedDocumentBinaryObject"),
          T("attachedDocumentMimeType", "BT-125-1", "ram:AttachmentBinaryObject/@mimeCode",
            "cac:Attachment/cbc:EmbeddedDocumentBinaryObject/@mimeCode"),
          T("attachedDocumentFilename", "BT-125-2", "ram:AttachmentBinaryObject/@filename",
            "cac:Attachment/cbc:EmbeddedDocumentBinaryObject/@filename"),
      ), many=True),
    _line("invoiceLines", "BG-25", "rsm:SupplyChainTradeTransaction/ram:IncludedSupplyChainTradeLineItem",
          "cac:InvoiceLine|cac:CreditNoteLine", depth=10),
    G("thirdPartyPayments", "BG-DEX-09", None, "cac:PrepaidPayment", (
        T("paymentType", "BT-DEX-001", None, "cbc:ID"),
        T("amount", "BT-DEX-002", None, "cbc:PaidAmount", NUM),
        T("description", "BT-DEX-003", None, "cbc:InstructionID"),
    ), many=True),
))


# Request fields that are no business term and are not written to XML (compared by nobody).
NOT_WRITTEN = {"invoiceSubType"}

# Terms the JSON model has no field for: present in a source document, they are lost on conversion.
NOT_CARRIED = {
    "CII": {
        "line document reference that is no BT-128 (type 130)":
            "rsm:SupplyChainTradeTransaction/ram:IncludedSupplyChainTradeLineItem/ram:SpecifiedLineTradeSettlement"
            "/ram:AdditionalReferencedDocument[not(ram:TypeCode='130')]",
        "BT-11 project name": _AGREE + "/ram:SpecifiedProcuringProject/ram:Name[. != 'Project reference']",
        # XRechnung binds its extension in UBL only (docs/canonical.md): CII's advance payments have no field
        "advance payment (ram:SpecifiedAdvancePayment; XRechnung binds BG-DEX-09 in UBL only)":
            _SETTLE + "/ram:SpecifiedAdvancePayment",
    },
    "UBL": {
        "line document reference that is no BT-128 (type 130)":
            "(cac:InvoiceLine|cac:CreditNoteLine)/cac:DocumentReference[cbc:DocumentTypeCode != '130']",
    },
}


@dataclass
class Reading:
    syntax: str  # "CII" or "UBL"
    terms: dict
    losses: list[str] = field(default_factory=list)


def _value(text: str, kind: str):
    if kind == DATE and len(text) == 8 and text.isdigit():
        return f"{text[:4]}-{text[4:6]}-{text[6:]}"
    if kind == NUM:
        return Decimal(text)
    return text


def _values(ctx, xpath: str, kind: str) -> list:
    out = []
    for node in ctx.xpath(xpath, namespaces=NS):
        text = (node.text or "") if isinstance(node, etree._Element) else str(node)
        text = text.strip()
        if text:
            value = _value(text, kind)
            if value not in out:
                out.append(value)
    return out


def _read(group: G, ctx, syntax: str, path: str, losses: list[str]) -> dict:
    out: dict = {}
    for item in group.terms:
        xpath = item.cii if syntax == "CII" else item.ubl
        if xpath is None:
            continue
        where = f"{path}.{item.name}" if path else item.name
        if isinstance(item, T):
            values = _values(ctx, xpath, item.kind)
            if len(values) > 1:
                losses.append(f"{where} ({item.bt}): {len(values)} values, the model carries one")
            if values:
                out[item.name] = values[0]
            continue
        found = [d for d in (_read(item, c, syntax, where, losses) for c in ctx.xpath(xpath, namespaces=NS)) if d]
        if item.many:
            if found:
                out[item.name] = found
        elif found:
            out[item.name] = found[0]
            if any(d != found[0] for d in found[1:]):
                losses.append(f"{where} ({item.bg}): {len(found)} occurrences, the model carries one")
    return out


def read_terms(xml: bytes) -> Reading:
    """Business terms of a CII or UBL invoice, shaped like `InvoiceRequest.invoice`."""
    root = etree.fromstring(xml, etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True))
    if root.tag == CII_ROOT:
        syntax = "CII"
    elif root.tag in UBL_ROOTS:
        syntax = "UBL"
    else:
        raise ValueError(f"not a CII or UBL invoice: {root.tag}")
    losses: list[str] = []
    terms = _read(INVOICE, root, syntax, "", losses)
    if syntax == "UBL":  # UBL carries BT-21 as a '#CODE#' prefix of BT-22
        for note in [terms] + terms.get("additionalInvoiceNotes", []):
            _split_subject_code(note)
    if syntax == "CII" and "valueAddedTaxPointDateCode" in terms:
        code = terms["valueAddedTaxPointDateCode"]
        terms["valueAddedTaxPointDateCode"] = TAX_POINT_CODES.get(code, code)
    _o_rates(terms)
    _drop_lone_schemes(terms)
    for label, xpath in NOT_CARRIED[syntax].items():
        if root.xpath(xpath, namespaces=NS):
            losses.append(f"{label}: no field in the model")
    return Reading(syntax, terms, losses)


def _split_subject_code(note: dict) -> None:
    text = note.get("invoiceNote", "")
    if len(text) > 5 and text[0] == "#" and text[4] == "#" and text[1:4].isalpha():
        # (the text after the code without its surrounding whitespace, as every value is read)
        note["invoiceNoteSubjectCode"], note["invoiceNote"] = text[1:4], text[5:].strip()


def _o_rates(terms: dict) -> None:
    """BR-O-05/06/07 forbid a VAT rate on lines, allowances and charges of category O, while the model
    requires one (0): read the absent rate back as the 0 the request carried."""
    items = [line.get("lineVatInformation", {}) for line in _all_lines(terms)]
    items += terms.get("documentLevelAllowances", []) + terms.get("documentLevelCharges", [])
    for item in items:
        if item.get("vatCategoryCode") == "O":
            item.setdefault("vatRate", Decimal(0))


def _drop_lone_schemes(value) -> None:
    """A scheme id (`xSchemeId`) without its identifier (`x`) says nothing and cannot be written: drop it."""
    if isinstance(value, list):
        for item in value:
            _drop_lone_schemes(item)
    elif isinstance(value, dict):
        for key in [k for k in value if k.endswith("SchemeId") and k[:-len("SchemeId")] not in value]:
            del value[key]
        for item in value.values():
            _drop_lone_schemes(item)


def _all_lines(terms: dict) -> list[dict]:
    """The invoice lines and, depth first, their sub-invoice lines (XRechnung extension)."""
    out = []

    def walk(lines: list[dict]) -> None:
        for line in lines:
            out.append(line)
            walk(line.get("subInvoiceLines", []))

    walk(terms.get("invoiceLines", []))
    return out



# ---- comparing business terms ------------------------------------------------------------------

def flatten(value, path: str = "") -> dict[str, str]:
    """{json path: canonical text}; numbers as normalised decimals so 19, 19.0 and 19.00 compare equal."""
    out: dict[str, str] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            out.update(flatten(v, f"{path}.{k}" if path else k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.update(flatten(v, f"{path}[{i}]"))
    elif isinstance(value, (Decimal, int, float)) and not isinstance(value, bool):
        d = Decimal(str(value))
        out[path] = format(d.normalize(), "f") if d else "0"
    elif value is not None:
        out[path] = str(value)
    return out


def diff_lines(expected: dict[str, str], actual: dict[str, str]) -> list[str]:
    """A readable unified diff of two flattened term sets ('-' expected, '+' actual)."""
    import difflib
    a = [f"{k} = {v}" for k, v in sorted(expected.items())]
    b = [f"{k} = {v}" for k, v in sorted(actual.items())]
    return list(difflib.unified_diff(a, b, "expected", "actual", lineterm="", n=0))


# ---- the canonical XML (docs/canonical.md) as the same kind of dict -------------------------------------

def _numeric_names(group: G = INVOICE) -> set[str]:
    names = set()
    for item in group.terms:
        if isinstance(item, T):
            if item.kind == NUM:
                names.add(item.name)
        else:
            names |= _numeric_names(item)
    return names


_NUMERIC = _numeric_names()
_ARRAYS = {  # canonical item element -> JSON array name (docs/canonical.md rule 2)
    "vatBreakdown": "vatBreakdowns", "invoiceLine": "invoiceLines",
    "documentLevelAllowance": "documentLevelAllowances", "documentLevelCharge": "documentLevelCharges",
    "additionalSupportingDocument": "additionalSupportingDocuments",
    "invoiceLineAllowance": "invoiceLineAllowances", "invoiceLineCharge": "invoiceLineCharges",
    "itemAttribute": "itemAttributes",
    "additionalInvoiceNote": "additionalInvoiceNotes",
    "additionalPrecedingInvoiceReference": "additionalPrecedingInvoiceReferences",
    "additionalIdentifier": "additionalIdentifiers", "additionalCreditTransfer": "additionalCreditTransfers",
    "additionalClassifiedIdentifier": "additionalClassifiedIdentifiers",
    "subInvoiceLine": "subInvoiceLines", "thirdPartyPayment": "thirdPartyPayments",
}


def canonical_terms(xml: bytes) -> dict:
    """The canonical invoice as a dict shaped like `InvoiceRequest.invoice` (computed amounts included)."""
    def convert(element) -> dict:
        out: dict = {}
        for child in element:
            if not isinstance(child.tag, str):
                continue
            name = etree.QName(child).localname
            value = convert(child) if len(child) else _value((child.text or "").strip(),
                                                               NUM if name in _NUMERIC else TEXT)
            if name in _ARRAYS:
                out.setdefault(_ARRAYS[name], []).append(value)
            else:
                out[name] = value
        return out
    return convert(etree.fromstring(xml))
