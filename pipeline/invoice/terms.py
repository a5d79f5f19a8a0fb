"""The business-term table: every JSON field of the request (service spec section 2 + the extensions in
docs/canonical.md) with its EN 16931 business term, name, canonical element path and syntax bindings.

One table, used by the model's error messages, the 422 mapping (rule id -> BT -> JSON field), the OpenAPI
descriptions and the round-trip tests. JSON path patterns use `[]` for array items
(`invoice.invoiceLines[].quantity`); a concrete path (`invoice.invoiceLines[2].quantity`) is looked up by
`term_for`. CII XPaths start at `/rsm:CrossIndustryInvoice`, UBL XPaths at `/Invoice` (a CreditNote uses
`/CreditNote`, `cac:CreditNoteLine`, `cbc:CreditedQuantity` and `cbc:CreditNoteTypeCode` in the same places).
Where a binding needs a qualifier (VAT id vs. tax number, allowance vs. charge) the XPath carries it as a
predicate. tests/test_model_terms.py checks the bindings against the documents the stylesheets generate.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

from pipeline.invoice.codes import RULE_TERMS as _GENERATED_RULE_TERMS
from pipeline.settings import TEMPLATES_DIR

CANONICAL_NS = "urn:einvoice-pipeline:canonical:1"

# Array field -> element name of one item in the canonical XML (docs/canonical.md rule 2).
ARRAY_ITEMS = {
    "vatBreakdowns": "vatBreakdown",
    "invoiceLines": "invoiceLine",
    "documentLevelAllowances": "documentLevelAllowance",
    "documentLevelCharges": "documentLevelCharge",
    "additionalSupportingDocuments": "additionalSupportingDocument",
    "invoiceLineAllowances": "invoiceLineAllowance",
    "invoiceLineCharges": "invoiceLineCharge",
    "itemAttributes": "itemAttribute",
    # extensions: the further occurrences of a term section 2 has one field for (docs/canonical.md)
    "additionalInvoiceNotes": "additionalInvoiceNote",
    "additionalPrecedingInvoiceReferences": "additionalPrecedingInvoiceReference",
    "additionalIdentifiers": "additionalIdentifier",
    "additionalCreditTransfers": "additionalCreditTransfer",
    "additionalClassifiedIdentifiers": "additionalClassifiedIdentifier",
    # the XRechnung extension (docs/canonical.md): sub-invoice lines (BG-DEX-01), third-party payments (BG-DEX-09)
    "subInvoiceLines": "subInvoiceLine",
    "thirdPartyPayments": "thirdPartyPayment",
}


@dataclass(frozen=True)
class Term:
    json_path: str          # pattern, `[]` for array items
    bt: str | None          # BT-nn / BG-nn, None for fields that are no EN 16931 business term
    name: str               # short EN 16931 name
    cii: str | None         # CII D16B XPath of the syntax binding
    ubl: str | None         # UBL 2.1 XPath of the syntax binding
    extension: bool = False  # not in service spec section 2 (docs/canonical.md "Extension fields")

    @property
    def canonical(self) -> str:
        """Canonical XML path (docs/canonical.md rules 1-2): same names, arrays as repeated singular items."""
        steps = []
        for step in self.json_path.split("."):
            if step.endswith("[]"):
                step = ARRAY_ITEMS[step[:-2]]
            steps.append(f"c:{step}")
        return "/" + "/".join(steps)


# ---- syntax binding prefixes -------------------------------------------------------------------------------
_C = "/rsm:CrossIndustryInvoice"
C_CTX = f"{_C}/rsm:ExchangedDocumentContext"
C_DOC = f"{_C}/rsm:ExchangedDocument"
C_TX = f"{_C}/rsm:SupplyChainTradeTransaction"
C_AGR = f"{C_TX}/ram:ApplicableHeaderTradeAgreement"
C_DEL = f"{C_TX}/ram:ApplicableHeaderTradeDelivery"
C_SET = f"{C_TX}/ram:ApplicableHeaderTradeSettlement"
C_LINE = f"{C_TX}/ram:IncludedSupplyChainTradeLineItem"
C_LSET = f"{C_LINE}/ram:SpecifiedLineTradeSettlement"
C_PROD = f"{C_LINE}/ram:SpecifiedTradeProduct"
_U = "/Invoice"
U_SELLER = f"{_U}/cac:AccountingSupplierParty/cac:Party"
U_BUYER = f"{_U}/cac:AccountingCustomerParty/cac:Party"
U_LINE = f"{_U}/cac:InvoiceLine"
U_ITEM = f"{U_LINE}/cac:Item"
_FALSE = "[ram:ChargeIndicator/udt:Indicator='false']"
_NOT_SEPA = "[not(@schemeID='SEPA')]"   # UBL PartyIdentification with scheme SEPA is BT-90
_TRUE = "[ram:ChargeIndicator/udt:Indicator='true']"


def _address(json: str, bg: str, bts: tuple[str, ...], cii: str, ubl: str) -> list[Term]:
    """The postal address shape shared by seller, buyer, tax representative and delivery (spec 2.4)."""
    line1, line2, line3, city, postcode, subdivision, country = bts
    return [
        Term(json, bg, "Postal address", cii, ubl),
        Term(f"{json}.addressLine1", line1, "Address line 1", f"{cii}/ram:LineOne", f"{ubl}/cbc:StreetName"),
        Term(f"{json}.addressLine2", line2, "Address line 2", f"{cii}/ram:LineTwo", f"{ubl}/cbc:AdditionalStreetName"),
        Term(f"{json}.addressLine3", line3, "Address line 3", f"{cii}/ram:LineThree",
             f"{ubl}/cac:AddressLine/cbc:Line"),
        Term(f"{json}.city", city, "City", f"{cii}/ram:CityName", f"{ubl}/cbc:CityName"),
        Term(f"{json}.postcode", postcode, "Post code", f"{cii}/ram:PostcodeCode", f"{ubl}/cbc:PostalZone"),
        Term(f"{json}.countrySubdivision", subdivision, "Country subdivision", f"{cii}/ram:CountrySubDivisionName",
             f"{ubl}/cbc:CountrySubentity"),
        Term(f"{json}.countryCode", country, "Country code", f"{cii}/ram:CountryID",
             f"{ubl}/cac:Country/cbc:IdentificationCode"),
    ]


def _allowance_charge(json: str, bg: str, bts: tuple[str, ...], what: str, cii: str, ubl: str,
                      vat: tuple[str, str] | None) -> list[Term]:
    """Allowance/charge shape (spec 2.6): document level carries VAT category and rate, line level not."""
    amount, base, pct, *rest = bts
    reason, code = rest[-2:]
    rows = [
        Term(json, bg, what, cii, ubl),
        Term(f"{json}.amount", amount, f"{what} amount", f"{cii}/ram:ActualAmount", f"{ubl}/cbc:Amount"),
        Term(f"{json}.percentage", pct, f"{what} percentage", f"{cii}/ram:CalculationPercent",
             f"{ubl}/cbc:MultiplierFactorNumeric"),
        Term(f"{json}.baseAmount", base, f"{what} base amount", f"{cii}/ram:BasisAmount", f"{ubl}/cbc:BaseAmount"),
    ]
    if vat:
        rows += [
            Term(f"{json}.vatCategoryCode", vat[0], f"{what} VAT category code",
                 f"{cii}/ram:CategoryTradeTax/ram:CategoryCode", f"{ubl}/cac:TaxCategory/cbc:ID"),
            Term(f"{json}.vatRate", vat[1], f"{what} VAT rate",
                 f"{cii}/ram:CategoryTradeTax/ram:RateApplicablePercent", f"{ubl}/cac:TaxCategory/cbc:Percent"),
        ]
    rows += [
        Term(f"{json}.reason", reason, f"{what} reason", f"{cii}/ram:Reason", f"{ubl}/cbc:AllowanceChargeReason"),
        Term(f"{json}.reasonCode", code, f"{what} reason code", f"{cii}/ram:ReasonCode",
             f"{ubl}/cbc:AllowanceChargeReasonCode"),
    ]
    return rows


def _credit_transfer(json: str, name: str, cii_means: str, ubl_means: str, extension: bool = False) -> list[Term]:
    """BG-17 within one payment means (CII SpecifiedTradeSettlementPaymentMeans, UBL PaymentMeans)."""
    account, ubl_account = f"{cii_means}/ram:PayeePartyCreditorFinancialAccount", f"{ubl_means}/cac:PayeeFinancialAccount"
    return [
        Term(json, "BG-17", name, account, ubl_account, extension),
        Term(f"{json}.accountIdentifier", "BT-84", "Payment account identifier",
             f"{account}/ram:IBANID | {account}/ram:ProprietaryID", f"{ubl_account}/cbc:ID", extension),
        Term(f"{json}.accountName", "BT-85", "Payment account name", f"{account}/ram:AccountName",
             f"{ubl_account}/cbc:Name", extension),
        Term(f"{json}.serviceProviderIdentifier", "BT-86", "Payment service provider identifier",
             f"{cii_means}/ram:PayeeSpecifiedCreditorFinancialInstitution/ram:BICID",
             f"{ubl_account}/cac:FinancialInstitutionBranch/cbc:ID", extension),
    ]


# Repeatable terms: the single field of section 2 binds the first occurrence, the `additional...` extension array
# the further ones (docs/canonical.md), so that every binding finds exactly the values of its field.
_FIRST = "[1]"
_MORE = "[position() > 1]"


def _classification(parent: str, cii: str, ubl: str, further: str | None = None) -> list[Term]:
    """BT-158 with its list id and version (extensions) at the CII/UBL classification elements `cii`/`ubl`:
    the first occurrence (fields of `parent`), or the further ones (the array `parent`, named `further`)."""
    code, ubl_code = f"{cii}/ram:ClassCode", f"{ubl}/cbc:ItemClassificationCode"
    return ([Term(parent, "BT-158", further, cii, ubl, extension=True)] if further else []) + [
        Term(f"{parent}.classifiedIdentifier", "BT-158", "Item classification identifier", code, ubl_code,
             extension=bool(further)),
        Term(f"{parent}.classifiedIdentifierSchemeId", "BT-158-1", "Item classification identifier scheme identifier",
             f"{code}/@listID", f"{ubl_code}/@listID", extension=True),
        Term(f"{parent}.classifiedIdentifierVersion", "BT-158-2", "Scheme version identifier",
             f"{code}/@listVersionID", f"{ubl_code}/@listVersionID", extension=True),
    ]


def _notes(parent: str, which: str, extension: bool) -> list[Term]:
    """BT-22 with its subject code BT-21 (UBL: a "#CODE#" prefix of the note), first or further occurrences."""
    cii, ubl = f"({C_DOC}/ram:IncludedNote){which}", f"({_U}/cbc:Note){which}"
    return [
        Term(f"{parent}.invoiceNote", "BT-22", "Invoice note", f"{cii}/ram:Content", ubl, extension),
        Term(f"{parent}.invoiceNoteSubjectCode", "BT-21", "Invoice note subject code", f"{cii}/ram:SubjectCode",
             f"{ubl}[starts-with(., '#')]", extension=True),
    ]


def _preceding_invoice(json: str, name: str, cii: str | None, ubl: str, extension: bool) -> list[Term]:
    """BG-3 at the CII InvoiceReferencedDocument / UBL InvoiceDocumentReference element paths given."""
    return [
        Term(json, "BG-3", name, cii, ubl, extension),
        Term(f"{json}.documentReference", "BT-25", "Preceding invoice reference", cii and f"{cii}/ram:IssuerAssignedID",
             f"{ubl}/cbc:ID", extension),
        Term(f"{json}.issueDate", "BT-26", "Preceding invoice issue date",
             cii and f"{cii}/ram:FormattedIssueDateTime/qdt:DateTimeString", f"{ubl}/cbc:IssueDate", extension),
    ]


def _period(json: str, bg: str, start: str, end: str, what: str, cii: str, ubl: str) -> list[Term]:
    return [
        Term(json, bg, what, cii, ubl),
        Term(f"{json}.startDate", start, f"{what} start date", f"{cii}/ram:StartDateTime/udt:DateTimeString",
             f"{ubl}/cbc:StartDate"),
        Term(f"{json}.endDate", end, f"{what} end date", f"{cii}/ram:EndDateTime/udt:DateTimeString",
             f"{ubl}/cbc:EndDate"),
    ]


_SELLER = f"{C_AGR}/ram:SellerTradeParty"
_BUYER = f"{C_AGR}/ram:BuyerTradeParty"
_SELLER_IDS = f"({_SELLER}/ram:ID | {_SELLER}/ram:GlobalID)"   # D16B: every ID before the GlobalIDs
U_SELLER_IDS = f"({U_SELLER}/cac:PartyIdentification/cbc:ID{_NOT_SEPA})"
_PAYEE = f"{C_SET}/ram:PayeeTradeParty"
_TAXREP = f"{C_AGR}/ram:SellerTaxRepresentativeTradeParty"
_SHIPTO = f"{C_DEL}/ram:ShipToTradeParty"
_MEANS = f"{C_SET}/ram:SpecifiedTradeSettlementPaymentMeans"
_SUM = f"{C_SET}/ram:SpecifiedTradeSettlementHeaderMonetarySummation"
_TAX = f"{C_SET}/ram:ApplicableTradeTax"
_DOCS = f"{C_AGR}/ram:AdditionalReferencedDocument[ram:TypeCode='916']"
# UBL BG-24: the document references that are no BT-18 (type 130) and no CreditNote BT-11 (type 50, UBL-SR-43)
U_DOCS = f"{_U}/cac:AdditionalDocumentReference[not(cbc:DocumentTypeCode='130' or cbc:DocumentTypeCode='50')]"
_NET = f"{C_LINE}/ram:SpecifiedLineTradeAgreement/ram:NetPriceProductTradePrice"
_GROSS = f"{C_LINE}/ram:SpecifiedLineTradeAgreement/ram:GrossPriceProductTradePrice"
# BT-149/150: on the net price, or on the gross price where only that has them (as the XRechnung testsuite writes)
_BASIS = f"({_NET}/ram:BasisQuantity | {_GROSS}[not(../ram:NetPriceProductTradePrice/ram:BasisQuantity)]/ram:BasisQuantity)"
# BT-128: a line's document reference of type 130 (written so; the CEN examples leave the type code out). In CII an
# untyped one too, as EN 16931 binds no other document to a line, except in Factur-X EXTENDED (and EXTENDED-CTC-FR),
# whose lines have documents of types 50 and 916 as well (xslt/read-cii.xsl)
_C_LINE_OBJECT = (f"{C_LSET}/ram:AdditionalReferencedDocument[ram:TypeCode='130' or not(ram:TypeCode) and not("
                  "contains(/rsm:CrossIndustryInvoice/rsm:ExchangedDocumentContext/"
                  "ram:GuidelineSpecifiedDocumentContextParameter/ram:ID, ':extended'))]")
_U_LINE_OBJECT = f"{U_LINE}/cac:DocumentReference[not(cbc:DocumentTypeCode) or cbc:DocumentTypeCode='130']"
_I = "invoice"
_L = "invoice.invoiceLines[]"

TERMS: tuple[Term, ...] = tuple([
    # -- request envelope and config (spec 2.1, 2.2): no business terms
    Term("invoice", None, "Invoice", _C, _U),
    Term("config", None, "Generation configuration", None, None),
    Term("config.spec", None, "Specification", None, None),
    Term("config.syntax", None, "XML syntax", None, None),
    Term("config.version", None, "Specification version", None, None),
    Term("config.profile", None, "ZUGFeRD/Factur-X profile", None, None),
    Term("config.rules", None, "National rules the PDF's invoice passes too (fr-ctc)", None, None, extension=True),
    Term("config.metadataLanguage", None, "PDF presentation language", None, None),
    Term("config.calculationMode", None, "Calculation mode (AUTO/MANUAL)", None, None, extension=True),
    Term("config.strict", None, "Content-check findings refuse the request", None, None, extension=True),
    # -- invoice header (spec 2.3)
    Term(f"{_I}.invoiceNumber", "BT-1", "Invoice number", f"{C_DOC}/ram:ID", f"{_U}/cbc:ID"),
    Term(f"{_I}.issueDate", "BT-2", "Invoice issue date", f"{C_DOC}/ram:IssueDateTime/udt:DateTimeString",
         f"{_U}/cbc:IssueDate"),
    Term(f"{_I}.invoiceTypeCode", "BT-3", "Invoice type code", f"{C_DOC}/ram:TypeCode", f"{_U}/cbc:InvoiceTypeCode"),
    Term(f"{_I}.currencyCode", "BT-5", "Invoice currency code", f"{C_SET}/ram:InvoiceCurrencyCode",
         f"{_U}/cbc:DocumentCurrencyCode"),
    Term(f"{_I}.invoiceSubType", None, "Invoice sub type (no EN 16931 business term; not written to XML)",
         None, None),
    Term(f"{_I}.valueAddedTaxPointDate", "BT-7", "Value added tax point date",
         f"{_TAX}/ram:TaxPointDate/udt:DateString", f"{_U}/cbc:TaxPointDate"),
    Term(f"{_I}.valueAddedTaxPointDateCode", "BT-8", "Value added tax point date code (UNTDID 2005)",
         f"{_TAX}/ram:DueDateTypeCode", f"{_U}/cac:InvoicePeriod/cbc:DescriptionCode", extension=True),
    Term(f"{_I}.invoiceCurrencyCode", "BT-5", "Invoice currency code (must equal currencyCode)",
         f"{C_SET}/ram:InvoiceCurrencyCode", f"{_U}/cbc:DocumentCurrencyCode"),
    Term(f"{_I}.vatAccountingCurrencyCode", "BT-6", "VAT accounting currency code", f"{C_SET}/ram:TaxCurrencyCode",
         f"{_U}/cbc:TaxCurrencyCode"),
    Term(f"{_I}.buyerReference", "BT-10", "Buyer reference", f"{C_AGR}/ram:BuyerReference", f"{_U}/cbc:BuyerReference"),
    Term(f"{_I}.projectReference", "BT-11", "Project reference", f"{C_AGR}/ram:SpecifiedProcuringProject/ram:ID",
         f"{_U}/cac:ProjectReference/cbc:ID | {_U}/cac:AdditionalDocumentReference[cbc:DocumentTypeCode='50']/cbc:ID"),
    Term(f"{_I}.contractReference", "BT-12", "Contract reference",
         f"{C_AGR}/ram:ContractReferencedDocument/ram:IssuerAssignedID", f"{_U}/cac:ContractDocumentReference/cbc:ID"),
    Term(f"{_I}.purchaseOrderReference", "BT-13", "Purchase order reference",
         f"{C_AGR}/ram:BuyerOrderReferencedDocument/ram:IssuerAssignedID", f"{_U}/cac:OrderReference/cbc:ID"),
    Term(f"{_I}.salesOrderReference", "BT-14", "Sales order reference",
         f"{C_AGR}/ram:SellerOrderReferencedDocument/ram:IssuerAssignedID",
         f"{_U}/cac:OrderReference/cbc:SalesOrderID"),
    Term(f"{_I}.despatchAdviceReference", "BT-16", "Despatch advice reference",
         f"{C_DEL}/ram:DespatchAdviceReferencedDocument/ram:IssuerAssignedID",
         f"{_U}/cac:DespatchDocumentReference/cbc:ID"),
    Term(f"{_I}.receivingAdviceReference", "BT-15", "Receiving advice reference",
         f"{C_DEL}/ram:ReceivingAdviceReferencedDocument/ram:IssuerAssignedID",
         f"{_U}/cac:ReceiptDocumentReference/cbc:ID"),
    Term(f"{_I}.tenderOrLotReference", "BT-17", "Tender or lot reference",
         f"{C_AGR}/ram:AdditionalReferencedDocument[ram:TypeCode='50']/ram:IssuerAssignedID",
         f"{_U}/cac:OriginatorDocumentReference/cbc:ID"),
    Term(f"{_I}.invoicedObjectIdentifier", "BT-18", "Invoiced object identifier",
         f"{C_AGR}/ram:AdditionalReferencedDocument[ram:TypeCode='130']/ram:IssuerAssignedID",
         f"{_U}/cac:AdditionalDocumentReference[cbc:DocumentTypeCode='130']/cbc:ID"),
    Term(f"{_I}.invoicedObjectIdentifierSchemeId", "BT-18-1", "Invoiced object identifier scheme identifier",
         f"{C_AGR}/ram:AdditionalReferencedDocument[ram:TypeCode='130']/ram:ReferenceTypeCode",
         f"{_U}/cac:AdditionalDocumentReference[cbc:DocumentTypeCode='130']/cbc:ID/@schemeID", extension=True),
    Term(f"{_I}.buyerAccountingReference", "BT-19", "Buyer accounting reference",
         f"{C_SET}/ram:ReceivableSpecifiedTradeAccountingAccount/ram:ID", f"{_U}/cbc:AccountingCost", extension=True),
    Term(f"{_I}.paymentTerms", "BT-20", "Payment terms", f"{C_SET}/ram:SpecifiedTradePaymentTerms/ram:Description",
         f"{_U}/cac:PaymentTerms/cbc:Note"),
    *_notes(_I, _FIRST, extension=False),
    Term(f"{_I}.paymentDueDate", "BT-9", "Payment due date",
         f"{C_SET}/ram:SpecifiedTradePaymentTerms/ram:DueDateDateTime/udt:DateTimeString", f"{_U}/cbc:DueDate",
         extension=True),
    Term(f"{_I}.additionalInvoiceNotes[]", "BG-1", "Further invoice notes",
         f"({C_DOC}/ram:IncludedNote){_MORE}", f"({_U}/cbc:Note){_MORE}", extension=True),
    *_notes(f"{_I}.additionalInvoiceNotes[]", _MORE, extension=True),
    # -- process control, preceding invoice (spec 2.8)
    Term(f"{_I}.processControl", "BG-2", "Process control", C_CTX, _U),
    Term(f"{_I}.processControl.businessProcessType", "BT-23", "Business process type",
         f"{C_CTX}/ram:BusinessProcessSpecifiedDocumentContextParameter/ram:ID", f"{_U}/cbc:ProfileID"),
    Term(f"{_I}.processControl.specificationIdentifier", "BT-24", "Specification identifier",
         f"{C_CTX}/ram:GuidelineSpecifiedDocumentContextParameter/ram:ID", f"{_U}/cbc:CustomizationID"),
    *_preceding_invoice(f"{_I}.precedingInvoiceReference", "Preceding invoice reference",
                        f"({C_SET}/ram:InvoiceReferencedDocument){_FIRST}",
                        f"({_U}/cac:BillingReference/cac:InvoiceDocumentReference){_FIRST}", extension=False),
    # CII D16B has one InvoiceReferencedDocument: further preceding invoices only in UBL (the model refuses CII)
    *_preceding_invoice(f"{_I}.additionalPrecedingInvoiceReferences[]", "Further preceding invoice references", None,
                        f"({_U}/cac:BillingReference/cac:InvoiceDocumentReference){_MORE}", extension=True),
    # -- seller (spec 2.4)
    Term(f"{_I}.seller", "BG-4", "Seller", _SELLER, U_SELLER),
    Term(f"{_I}.seller.name", "BT-27", "Seller name", f"{_SELLER}/ram:Name",
         f"{U_SELLER}/cac:PartyLegalEntity/cbc:RegistrationName"),
    Term(f"{_I}.seller.tradingName", "BT-28", "Seller trading name",
         f"{_SELLER}/ram:SpecifiedLegalOrganization/ram:TradingBusinessName", f"{U_SELLER}/cac:PartyName/cbc:Name"),
    Term(f"{_I}.seller.identifier", "BT-29", "Seller identifier", f"{_SELLER_IDS}{_FIRST}", f"{U_SELLER_IDS}{_FIRST}"),
    Term(f"{_I}.seller.legalRegistrationIdentifier", "BT-30", "Seller legal registration identifier",
         f"{_SELLER}/ram:SpecifiedLegalOrganization/ram:ID", f"{U_SELLER}/cac:PartyLegalEntity/cbc:CompanyID"),
    Term(f"{_I}.seller.vatIdentifier", "BT-31", "Seller VAT identifier",
         f"{_SELLER}/ram:SpecifiedTaxRegistration/ram:ID[@schemeID='VA']",
         f"{U_SELLER}/cac:PartyTaxScheme[cac:TaxScheme/cbc:ID='VAT']/cbc:CompanyID"),
    Term(f"{_I}.seller.taxRegistrationIdentifier", "BT-32", "Seller tax registration identifier",
         f"{_SELLER}/ram:SpecifiedTaxRegistration/ram:ID[@schemeID='FC']",
         f"{U_SELLER}/cac:PartyTaxScheme[cac:TaxScheme/cbc:ID!='VAT']/cbc:CompanyID"),
    Term(f"{_I}.seller.electronicAddress", "BT-34", "Seller electronic address",
         f"{_SELLER}/ram:URIUniversalCommunication/ram:URIID", f"{U_SELLER}/cbc:EndpointID"),
    Term(f"{_I}.seller.electronicAddressSchemeId", "BT-34-1", "Seller electronic address scheme identifier",
         f"{_SELLER}/ram:URIUniversalCommunication/ram:URIID/@schemeID", f"{U_SELLER}/cbc:EndpointID/@schemeID"),
    *_address(f"{_I}.seller.postalAddress", "BG-5", ("BT-35", "BT-36", "BT-162", "BT-37", "BT-38", "BT-39", "BT-40"),
              f"{_SELLER}/ram:PostalTradeAddress", f"{U_SELLER}/cac:PostalAddress"),
    Term(f"{_I}.seller.contact", "BG-6", "Seller contact", f"{_SELLER}/ram:DefinedTradeContact",
         f"{U_SELLER}/cac:Contact"),
    Term(f"{_I}.seller.contact.contactPoint", "BT-41", "Seller contact point",
         f"{_SELLER}/ram:DefinedTradeContact/ram:PersonName", f"{U_SELLER}/cac:Contact/cbc:Name"),
    Term(f"{_I}.seller.contact.telephone", "BT-42", "Seller contact telephone number",
         f"{_SELLER}/ram:DefinedTradeContact/ram:TelephoneUniversalCommunication/ram:CompleteNumber",
         f"{U_SELLER}/cac:Contact/cbc:Telephone"),
    Term(f"{_I}.seller.contact.email", "BT-43", "Seller contact email address",
         f"{_SELLER}/ram:DefinedTradeContact/ram:EmailURIUniversalCommunication/ram:URIID",
         f"{U_SELLER}/cac:Contact/cbc:ElectronicMail"),
    Term(f"{_I}.seller.identifierSchemeId", "BT-29-1", "Seller identifier scheme identifier",
         f"{_SELLER_IDS}{_FIRST}/@schemeID", f"{U_SELLER_IDS}{_FIRST}/@schemeID", extension=True),
    Term(f"{_I}.seller.legalRegistrationIdentifierSchemeId", "BT-30-1",
         "Seller legal registration identifier scheme identifier",
         f"{_SELLER}/ram:SpecifiedLegalOrganization/ram:ID/@schemeID",
         f"{U_SELLER}/cac:PartyLegalEntity/cbc:CompanyID/@schemeID", extension=True),
    Term(f"{_I}.seller.additionalLegalInformation", "BT-33", "Seller additional legal information",
         f"{_SELLER}/ram:Description", f"{U_SELLER}/cac:PartyLegalEntity/cbc:CompanyLegalForm", extension=True),
    Term(f"{_I}.seller.additionalIdentifiers[]", "BT-29", "Further seller identifiers", f"{_SELLER_IDS}{_MORE}",
         f"({U_SELLER}/cac:PartyIdentification[cbc:ID{_NOT_SEPA}]){_MORE}", extension=True),
    Term(f"{_I}.seller.additionalIdentifiers[].identifier", "BT-29", "Seller identifier", f"{_SELLER_IDS}{_MORE}",
         f"{U_SELLER_IDS}{_MORE}", extension=True),
    Term(f"{_I}.seller.additionalIdentifiers[].identifierSchemeId", "BT-29-1", "Seller identifier scheme identifier",
         f"{_SELLER_IDS}{_MORE}/@schemeID", f"{U_SELLER_IDS}{_MORE}/@schemeID", extension=True),
    # -- buyer (spec 2.4)
    Term(f"{_I}.buyer", "BG-7", "Buyer", _BUYER, U_BUYER),
    Term(f"{_I}.buyer.name", "BT-44", "Buyer name", f"{_BUYER}/ram:Name",
         f"{U_BUYER}/cac:PartyLegalEntity/cbc:RegistrationName"),
    Term(f"{_I}.buyer.tradingName", "BT-45", "Buyer trading name",
         f"{_BUYER}/ram:SpecifiedLegalOrganization/ram:TradingBusinessName", f"{U_BUYER}/cac:PartyName/cbc:Name"),
    Term(f"{_I}.buyer.identifier", "BT-46", "Buyer identifier", f"{_BUYER}/ram:ID | {_BUYER}/ram:GlobalID",
         f"{U_BUYER}/cac:PartyIdentification/cbc:ID"),
    Term(f"{_I}.buyer.legalRegistrationIdentifier", "BT-47", "Buyer legal registration identifier",
         f"{_BUYER}/ram:SpecifiedLegalOrganization/ram:ID", f"{U_BUYER}/cac:PartyLegalEntity/cbc:CompanyID"),
    Term(f"{_I}.buyer.vatIdentifier", "BT-48", "Buyer VAT identifier",
         f"{_BUYER}/ram:SpecifiedTaxRegistration/ram:ID[@schemeID='VA']",
         f"{U_BUYER}/cac:PartyTaxScheme/cbc:CompanyID"),
    Term(f"{_I}.buyer.electronicAddress", "BT-49", "Buyer electronic address",
         f"{_BUYER}/ram:URIUniversalCommunication/ram:URIID", f"{U_BUYER}/cbc:EndpointID"),
    Term(f"{_I}.buyer.electronicAddressSchemeId", "BT-49-1", "Buyer electronic address scheme identifier",
         f"{_BUYER}/ram:URIUniversalCommunication/ram:URIID/@schemeID", f"{U_BUYER}/cbc:EndpointID/@schemeID"),
    *_address(f"{_I}.buyer.postalAddress", "BG-8", ("BT-50", "BT-51", "BT-163", "BT-52", "BT-53", "BT-54", "BT-55"),
              f"{_BUYER}/ram:PostalTradeAddress", f"{U_BUYER}/cac:PostalAddress"),
    Term(f"{_I}.buyer.contact", "BG-9", "Buyer contact", f"{_BUYER}/ram:DefinedTradeContact", f"{U_BUYER}/cac:Contact"),
    Term(f"{_I}.buyer.contact.contactPoint", "BT-56", "Buyer contact point",
         f"{_BUYER}/ram:DefinedTradeContact/ram:PersonName", f"{U_BUYER}/cac:Contact/cbc:Name"),
    Term(f"{_I}.buyer.contact.telephone", "BT-57", "Buyer contact telephone number",
         f"{_BUYER}/ram:DefinedTradeContact/ram:TelephoneUniversalCommunication/ram:CompleteNumber",
         f"{U_BUYER}/cac:Contact/cbc:Telephone"),
    Term(f"{_I}.buyer.contact.email", "BT-58", "Buyer contact email address",
         f"{_BUYER}/ram:DefinedTradeContact/ram:EmailURIUniversalCommunication/ram:URIID",
         f"{U_BUYER}/cac:Contact/cbc:ElectronicMail"),
    Term(f"{_I}.buyer.identifierSchemeId", "BT-46-1", "Buyer identifier scheme identifier",
         f"{_BUYER}/ram:GlobalID/@schemeID", f"{U_BUYER}/cac:PartyIdentification/cbc:ID/@schemeID", extension=True),
    Term(f"{_I}.buyer.legalRegistrationIdentifierSchemeId", "BT-47-1",
         "Buyer legal registration identifier scheme identifier",
         f"{_BUYER}/ram:SpecifiedLegalOrganization/ram:ID/@schemeID",
         f"{U_BUYER}/cac:PartyLegalEntity/cbc:CompanyID/@schemeID", extension=True),
    # -- payee, tax representative, delivery (spec 2.4)
    Term(f"{_I}.payee", "BG-10", "Payee", _PAYEE, f"{_U}/cac:PayeeParty"),
    Term(f"{_I}.payee.name", "BT-59", "Payee name", f"{_PAYEE}/ram:Name",
         f"{_U}/cac:PayeeParty/cac:PartyName/cbc:Name"),
    Term(f"{_I}.payee.identifier", "BT-60", "Payee identifier", f"{_PAYEE}/ram:ID | {_PAYEE}/ram:GlobalID",
         f"{_U}/cac:PayeeParty/cac:PartyIdentification/cbc:ID{_NOT_SEPA}"),
    Term(f"{_I}.payee.legalRegistrationIdentifier", "BT-61", "Payee legal registration identifier",
         f"{_PAYEE}/ram:SpecifiedLegalOrganization/ram:ID", f"{_U}/cac:PayeeParty/cac:PartyLegalEntity/cbc:CompanyID"),
    Term(f"{_I}.payee.identifierSchemeId", "BT-60-1", "Payee identifier scheme identifier",
         f"{_PAYEE}/ram:GlobalID/@schemeID", f"{_U}/cac:PayeeParty/cac:PartyIdentification/cbc:ID{_NOT_SEPA}/@schemeID",
         extension=True),
    Term(f"{_I}.payee.legalRegistrationIdentifierSchemeId", "BT-61-1",
         "Payee legal registration identifier scheme identifier",
         f"{_PAYEE}/ram:SpecifiedLegalOrganization/ram:ID/@schemeID",
         f"{_U}/cac:PayeeParty/cac:PartyLegalEntity/cbc:CompanyID/@schemeID", extension=True),
    Term(f"{_I}.sellerTaxRepresentativeParty", "BG-11", "Seller tax representative party", _TAXREP,
         f"{_U}/cac:TaxRepresentativeParty"),
    Term(f"{_I}.sellerTaxRepresentativeParty.name", "BT-62", "Seller tax representative name", f"{_TAXREP}/ram:Name",
         f"{_U}/cac:TaxRepresentativeParty/cac:PartyName/cbc:Name"),
    Term(f"{_I}.sellerTaxRepresentativeParty.vatIdentifier", "BT-63", "Seller tax representative VAT identifier",
         f"{_TAXREP}/ram:SpecifiedTaxRegistration/ram:ID[@schemeID='VA']",
         f"{_U}/cac:TaxRepresentativeParty/cac:PartyTaxScheme/cbc:CompanyID"),
    *_address(f"{_I}.sellerTaxRepresentativeParty.postalAddress", "BG-12",
              ("BT-64", "BT-65", "BT-164", "BT-66", "BT-67", "BT-68", "BT-69"),
              f"{_TAXREP}/ram:PostalTradeAddress", f"{_U}/cac:TaxRepresentativeParty/cac:PostalAddress"),
    Term(f"{_I}.deliveryInformation", "BG-13", "Delivery information", C_DEL, f"{_U}/cac:Delivery"),
    Term(f"{_I}.deliveryInformation.partyName", "BT-70", "Deliver to party name", f"{_SHIPTO}/ram:Name",
         f"{_U}/cac:Delivery/cac:DeliveryParty/cac:PartyName/cbc:Name"),
    Term(f"{_I}.deliveryInformation.locationIdentifier", "BT-71", "Deliver to location identifier",
         f"{_SHIPTO}/ram:ID | {_SHIPTO}/ram:GlobalID", f"{_U}/cac:Delivery/cac:DeliveryLocation/cbc:ID"),
    Term(f"{_I}.deliveryInformation.actualDeliveryDate", "BT-72", "Actual delivery date",
         f"{C_DEL}/ram:ActualDeliverySupplyChainEvent/ram:OccurrenceDateTime/udt:DateTimeString",
         f"{_U}/cac:Delivery/cbc:ActualDeliveryDate"),
    *_address(f"{_I}.deliveryInformation.address", "BG-15",
              ("BT-75", "BT-76", "BT-165", "BT-77", "BT-78", "BT-79", "BT-80"),
              f"{_SHIPTO}/ram:PostalTradeAddress", f"{_U}/cac:Delivery/cac:DeliveryLocation/cac:Address"),
    Term(f"{_I}.deliveryInformation.locationIdentifierSchemeId", "BT-71-1", "Deliver to location identifier scheme",
         f"{_SHIPTO}/ram:GlobalID/@schemeID", f"{_U}/cac:Delivery/cac:DeliveryLocation/cbc:ID/@schemeID",
         extension=True),
    *_period(f"{_I}.invoicingPeriod", "BG-14", "BT-73", "BT-74", "Invoicing period",
             f"{C_SET}/ram:BillingSpecifiedPeriod", f"{_U}/cac:InvoicePeriod"),
    # -- payment (spec 2.5)
    Term(f"{_I}.paymentInstructions", "BG-16", "Payment instructions", _MEANS, f"{_U}/cac:PaymentMeans"),
    Term(f"{_I}.paymentInstructions.meansCode", "BT-81", "Payment means type code", f"{_MEANS}/ram:TypeCode",
         f"{_U}/cac:PaymentMeans/cbc:PaymentMeansCode"),
    Term(f"{_I}.paymentInstructions.meansText", "BT-82", "Payment means text", f"{_MEANS}/ram:Information",
         f"{_U}/cac:PaymentMeans/cbc:PaymentMeansCode/@name"),
    Term(f"{_I}.paymentInstructions.remittanceInformation", "BT-83", "Remittance information",
         f"{C_SET}/ram:PaymentReference", f"{_U}/cac:PaymentMeans/cbc:PaymentID"),
    *_credit_transfer(f"{_I}.paymentInstructions.creditTransfer", "Credit transfer",
                      f"({_MEANS}[ram:PayeePartyCreditorFinancialAccount]){_FIRST}",
                      f"({_U}/cac:PaymentMeans[cac:PayeeFinancialAccount]){_FIRST}"),
    *_credit_transfer(f"{_I}.paymentInstructions.additionalCreditTransfers[]", "Further credit transfers",
                      f"({_MEANS}[ram:PayeePartyCreditorFinancialAccount]){_MORE}",
                      f"({_U}/cac:PaymentMeans[cac:PayeeFinancialAccount]){_MORE}", extension=True),
    Term(f"{_I}.paymentInstructions.paymentCardInformation", "BG-18", "Payment card information",
         f"{_MEANS}/ram:ApplicableTradeSettlementFinancialCard", f"{_U}/cac:PaymentMeans/cac:CardAccount"),
    Term(f"{_I}.paymentInstructions.paymentCardInformation.primaryAccountNumber", "BT-87",
         "Payment card primary account number", f"{_MEANS}/ram:ApplicableTradeSettlementFinancialCard/ram:ID",
         f"{_U}/cac:PaymentMeans/cac:CardAccount/cbc:PrimaryAccountNumberID"),
    Term(f"{_I}.paymentInstructions.paymentCardInformation.cardHolderName", "BT-88", "Payment card holder name",
         f"{_MEANS}/ram:ApplicableTradeSettlementFinancialCard/ram:CardholderName",
         f"{_U}/cac:PaymentMeans/cac:CardAccount/cbc:HolderName"),
    Term(f"{_I}.paymentInstructions.directDebit", "BG-19", "Direct debit", C_SET,
         f"{_U}/cac:PaymentMeans/cac:PaymentMandate"),
    Term(f"{_I}.paymentInstructions.directDebit.mandateReferenceIdentifier", "BT-89", "Mandate reference identifier",
         f"{C_SET}/ram:SpecifiedTradePaymentTerms/ram:DirectDebitMandateID",
         f"{_U}/cac:PaymentMeans/cac:PaymentMandate/cbc:ID"),
    Term(f"{_I}.paymentInstructions.directDebit.debtorAccountIdentifier", "BT-91", "Debited account identifier",
         f"{_MEANS}/ram:PayerPartyDebtorFinancialAccount/ram:IBANID",
         f"{_U}/cac:PaymentMeans/cac:PaymentMandate/cac:PayerFinancialAccount/cbc:ID"),
    Term(f"{_I}.paymentInstructions.directDebit.creditorIdentifier", "BT-90", "Bank assigned creditor identifier",
         f"{C_SET}/ram:CreditorReferenceID",   # UBL: the seller's or, when there is one, the payee's SEPA id
         f"{U_SELLER}/cac:PartyIdentification/cbc:ID[@schemeID='SEPA'] | "
         f"{_U}/cac:PayeeParty/cac:PartyIdentification/cbc:ID[@schemeID='SEPA']"),
    # -- totals (spec 2.6) and the computed-only totals (docs/canonical.md rule 6)
    Term(f"{_I}.documentTotals", "BG-22", "Document totals", _SUM, f"{_U}/cac:LegalMonetaryTotal"),
    Term(f"{_I}.documentTotals.lineExtensionAmount", "BT-106", "Sum of Invoice line net amount",
         f"{_SUM}/ram:LineTotalAmount", f"{_U}/cac:LegalMonetaryTotal/cbc:LineExtensionAmount"),
    Term(f"{_I}.documentTotals.allowanceTotalAmount", "BT-107", "Sum of allowances on document level",
         f"{_SUM}/ram:AllowanceTotalAmount", f"{_U}/cac:LegalMonetaryTotal/cbc:AllowanceTotalAmount"),
    Term(f"{_I}.documentTotals.chargeTotalAmount", "BT-108", "Sum of charges on document level",
         f"{_SUM}/ram:ChargeTotalAmount", f"{_U}/cac:LegalMonetaryTotal/cbc:ChargeTotalAmount"),
    Term(f"{_I}.documentTotals.taxExclusiveAmount", "BT-109", "Invoice total amount without VAT",
         f"{_SUM}/ram:TaxBasisTotalAmount", f"{_U}/cac:LegalMonetaryTotal/cbc:TaxExclusiveAmount"),
    Term(f"{_I}.documentTotals.taxInclusiveAmount", "BT-112", "Invoice total amount with VAT",
         f"{_SUM}/ram:GrandTotalAmount", f"{_U}/cac:LegalMonetaryTotal/cbc:TaxInclusiveAmount"),
    Term(f"{_I}.documentTotals.prepaidAmount", "BT-113", "Paid amount", f"{_SUM}/ram:TotalPrepaidAmount",
         f"{_U}/cac:LegalMonetaryTotal/cbc:PrepaidAmount"),
    Term(f"{_I}.documentTotals.payableRoundingAmount", "BT-114", "Rounding amount", f"{_SUM}/ram:RoundingAmount",
         f"{_U}/cac:LegalMonetaryTotal/cbc:PayableRoundingAmount"),
    Term(f"{_I}.documentTotals.payableAmount", "BT-115", "Amount due for payment", f"{_SUM}/ram:DuePayableAmount",
         f"{_U}/cac:LegalMonetaryTotal/cbc:PayableAmount"),
    Term(f"{_I}.documentTotals.taxTotalAmount", "BT-110", "Invoice total VAT amount",
         f"{_SUM}/ram:TaxTotalAmount[@currencyID = {C_SET}/ram:InvoiceCurrencyCode]",
         f"{_U}/cac:TaxTotal/cbc:TaxAmount[@currencyID = {_U}/cbc:DocumentCurrencyCode]", extension=True),
    Term(f"{_I}.documentTotals.taxTotalAmountInAccountingCurrency", "BT-111",
         "Invoice total VAT amount in accounting currency",
         f"{_SUM}/ram:TaxTotalAmount[@currencyID = {C_SET}/ram:TaxCurrencyCode]",
         f"{_U}/cac:TaxTotal/cbc:TaxAmount[@currencyID = {_U}/cbc:TaxCurrencyCode]", extension=True),
    # -- VAT breakdown (spec 2.6)
    Term(f"{_I}.vatBreakdowns[]", "BG-23", "VAT breakdown", _TAX, f"{_U}/cac:TaxTotal/cac:TaxSubtotal"),
    Term(f"{_I}.vatBreakdowns[].vatCategoryCode", "BT-118", "VAT category code", f"{_TAX}/ram:CategoryCode",
         f"{_U}/cac:TaxTotal/cac:TaxSubtotal/cac:TaxCategory/cbc:ID"),
    Term(f"{_I}.vatBreakdowns[].vatCategoryRate", "BT-119", "VAT category rate", f"{_TAX}/ram:RateApplicablePercent",
         f"{_U}/cac:TaxTotal/cac:TaxSubtotal/cac:TaxCategory/cbc:Percent"),
    Term(f"{_I}.vatBreakdowns[].vatCategoryTaxableAmount", "BT-116", "VAT category taxable amount",
         f"{_TAX}/ram:BasisAmount", f"{_U}/cac:TaxTotal/cac:TaxSubtotal/cbc:TaxableAmount"),
    Term(f"{_I}.vatBreakdowns[].vatCategoryTaxAmount", "BT-117", "VAT category tax amount",
         f"{_TAX}/ram:CalculatedAmount", f"{_U}/cac:TaxTotal/cac:TaxSubtotal/cbc:TaxAmount"),
    Term(f"{_I}.vatBreakdowns[].exemptionReason", "BT-120", "VAT exemption reason text", f"{_TAX}/ram:ExemptionReason",
         f"{_U}/cac:TaxTotal/cac:TaxSubtotal/cac:TaxCategory/cbc:TaxExemptionReason"),
    Term(f"{_I}.vatBreakdowns[].exemptionReasonCode", "BT-121", "VAT exemption reason code",
         f"{_TAX}/ram:ExemptionReasonCode",
         f"{_U}/cac:TaxTotal/cac:TaxSubtotal/cac:TaxCategory/cbc:TaxExemptionReasonCode"),
    # -- document level allowances and charges (spec 2.6)
    *_allowance_charge(f"{_I}.documentLevelAllowances[]", "BG-20", ("BT-92", "BT-93", "BT-94", "BT-97", "BT-98"),
                       "Document level allowance", f"{C_SET}/ram:SpecifiedTradeAllowanceCharge{_FALSE}",
                       f"{_U}/cac:AllowanceCharge[cbc:ChargeIndicator='false']", ("BT-95", "BT-96")),
    *_allowance_charge(f"{_I}.documentLevelCharges[]", "BG-21", ("BT-99", "BT-100", "BT-101", "BT-104", "BT-105"),
                       "Document level charge", f"{C_SET}/ram:SpecifiedTradeAllowanceCharge{_TRUE}",
                       f"{_U}/cac:AllowanceCharge[cbc:ChargeIndicator='true']", ("BT-102", "BT-103")),
    # -- additional supporting documents (spec 2.8)
    Term(f"{_I}.additionalSupportingDocuments[]", "BG-24", "Additional supporting documents", _DOCS,
         U_DOCS),
    Term(f"{_I}.additionalSupportingDocuments[].reference", "BT-122", "Supporting document reference",
         f"{_DOCS}/ram:IssuerAssignedID", f"{U_DOCS}/cbc:ID"),
    Term(f"{_I}.additionalSupportingDocuments[].description", "BT-123", "Supporting document description",
         f"{_DOCS}/ram:Name", f"{U_DOCS}/cbc:DocumentDescription"),
    Term(f"{_I}.additionalSupportingDocuments[].externalLocation", "BT-124", "External document location",
         f"{_DOCS}/ram:URIID", f"{U_DOCS}/cac:Attachment/cac:ExternalReference/cbc:URI"),
    Term(f"{_I}.additionalSupportingDocuments[].attachedDocument", "BT-125", "Attached document",
         f"{_DOCS}/ram:AttachmentBinaryObject",
         f"{U_DOCS}/cac:Attachment/cbc:EmbeddedDocumentBinaryObject"),
    Term(f"{_I}.additionalSupportingDocuments[].attachedDocumentMimeType", "BT-125-1", "Attached document mime code",
         f"{_DOCS}/ram:AttachmentBinaryObject/@mimeCode",
         f"{U_DOCS}/cac:Attachment/cbc:EmbeddedDocumentBinaryObject/@mimeCode"),
    Term(f"{_I}.additionalSupportingDocuments[].attachedDocumentFilename", "BT-125-2", "Attached document filename",
         f"{_DOCS}/ram:AttachmentBinaryObject/@filename",
         f"{U_DOCS}/cac:Attachment/cbc:EmbeddedDocumentBinaryObject/@filename",
         extension=True),
    # -- invoice line (spec 2.7)
    Term(_L, "BG-25", "Invoice line", C_LINE, U_LINE),
    Term(f"{_L}.lineIdentifier", "BT-126", "Invoice line identifier",
         f"{C_LINE}/ram:AssociatedDocumentLineDocument/ram:LineID", f"{U_LINE}/cbc:ID"),
    Term(f"{_L}.note", "BT-127", "Invoice line note",
         f"{C_LINE}/ram:AssociatedDocumentLineDocument/ram:IncludedNote/ram:Content", f"{U_LINE}/cbc:Note"),
    Term(f"{_L}.objectIdentifier", "BT-128", "Invoice line object identifier",
         f"{_C_LINE_OBJECT}/ram:IssuerAssignedID",
         f"{_U_LINE_OBJECT}/cbc:ID", extension=True),
    Term(f"{_L}.objectIdentifierSchemeId", "BT-128-1", "Invoice line object identifier scheme identifier",
         f"{_C_LINE_OBJECT}/ram:ReferenceTypeCode",
         f"{_U_LINE_OBJECT}/cbc:ID/@schemeID", extension=True),
    # Factur-X EXTENDED's line hierarchy: CII only (the CEN rules warn of UBL's cac:SubInvoiceLine, UBL-CR-646)
    Term(f"{_L}.parentLineIdentifier", "BT-X-304", "Parent line identifier",
         f"{C_LINE}/ram:AssociatedDocumentLineDocument/ram:ParentLineID", None, extension=True),
    Term(f"{_L}.lineStatusReasonCode", "BT-X-8", "Invoice line subtype",
         f"{C_LINE}/ram:AssociatedDocumentLineDocument/ram:LineStatusReasonCode", None, extension=True),
    Term(f"{_L}.quantity", "BT-129", "Invoiced quantity", f"{C_LINE}/ram:SpecifiedLineTradeDelivery/ram:BilledQuantity",
         f"{U_LINE}/cbc:InvoicedQuantity"),
    Term(f"{_L}.unitCode", "BT-130", "Invoiced quantity unit of measure code",
         f"{C_LINE}/ram:SpecifiedLineTradeDelivery/ram:BilledQuantity/@unitCode",
         f"{U_LINE}/cbc:InvoicedQuantity/@unitCode"),
    Term(f"{_L}.netAmount", "BT-131", "Invoice line net amount",
         f"{C_LSET}/ram:SpecifiedTradeSettlementLineMonetarySummation/ram:LineTotalAmount",
         f"{U_LINE}/cbc:LineExtensionAmount"),
    Term(f"{_L}.referencedPurchaseOrderLine", "BT-132", "Referenced purchase order line reference",
         f"{C_LINE}/ram:SpecifiedLineTradeAgreement/ram:BuyerOrderReferencedDocument/ram:LineID",
         f"{U_LINE}/cac:OrderLineReference/cbc:LineID"),
    Term(f"{_L}.buyerAccountingReference", "BT-133", "Invoice line Buyer accounting reference",
         f"{C_LSET}/ram:ReceivableSpecifiedTradeAccountingAccount/ram:ID", f"{U_LINE}/cbc:AccountingCost"),
    *_period(f"{_L}.invoiceLinePeriod", "BG-26", "BT-134", "BT-135", "Invoice line period",
             f"{C_LSET}/ram:BillingSpecifiedPeriod", f"{U_LINE}/cac:InvoicePeriod"),
    *_allowance_charge(f"{_L}.invoiceLineAllowances[]", "BG-27", ("BT-136", "BT-137", "BT-138", "BT-139", "BT-140"),
                       "Invoice line allowance", f"{C_LSET}/ram:SpecifiedTradeAllowanceCharge{_FALSE}",
                       f"{U_LINE}/cac:AllowanceCharge[cbc:ChargeIndicator='false']", None),
    *_allowance_charge(f"{_L}.invoiceLineCharges[]", "BG-28", ("BT-141", "BT-142", "BT-143", "BT-144", "BT-145"),
                       "Invoice line charge", f"{C_LSET}/ram:SpecifiedTradeAllowanceCharge{_TRUE}",
                       f"{U_LINE}/cac:AllowanceCharge[cbc:ChargeIndicator='true']", None),
    Term(f"{_L}.priceDetails", "BG-29", "Price details", f"{C_LINE}/ram:SpecifiedLineTradeAgreement",
         f"{U_LINE}/cac:Price"),
    Term(f"{_L}.priceDetails.netPrice", "BT-146", "Item net price", f"{_NET}/ram:ChargeAmount",
         f"{U_LINE}/cac:Price/cbc:PriceAmount"),
    Term(f"{_L}.priceDetails.grossPrice", "BT-148", "Item gross price", f"{_GROSS}/ram:ChargeAmount",
         f"{U_LINE}/cac:Price/cac:AllowanceCharge/cbc:BaseAmount"),
    Term(f"{_L}.priceDetails.priceBasisQuantity", "BT-149", "Item price base quantity", _BASIS,
         f"{U_LINE}/cac:Price/cbc:BaseQuantity"),
    Term(f"{_L}.priceDetails.basisUnitCode", "BT-150", "Item price base quantity unit of measure code",
         f"{_BASIS}/@unitCode", f"{U_LINE}/cac:Price/cbc:BaseQuantity/@unitCode"),
    Term(f"{_L}.priceDetails.priceDiscount", "BT-147", "Item price discount",
         f"{_GROSS}/ram:AppliedTradeAllowanceCharge/ram:ActualAmount",
         f"{U_LINE}/cac:Price/cac:AllowanceCharge/cbc:Amount", extension=True),
    Term(f"{_L}.lineVatInformation", "BG-30", "Line VAT information", f"{C_LSET}/ram:ApplicableTradeTax",
         f"{U_ITEM}/cac:ClassifiedTaxCategory"),
    Term(f"{_L}.lineVatInformation.vatCategoryCode", "BT-151", "Invoiced item VAT category code",
         f"{C_LSET}/ram:ApplicableTradeTax/ram:CategoryCode", f"{U_ITEM}/cac:ClassifiedTaxCategory/cbc:ID"),
    Term(f"{_L}.lineVatInformation.vatRate", "BT-152", "Invoiced item VAT rate",
         f"{C_LSET}/ram:ApplicableTradeTax/ram:RateApplicablePercent",
         f"{U_ITEM}/cac:ClassifiedTaxCategory/cbc:Percent"),
    Term(f"{_L}.itemInformation", "BG-31", "Item information", C_PROD, U_ITEM),
    Term(f"{_L}.itemInformation.name", "BT-153", "Item name", f"{C_PROD}/ram:Name", f"{U_ITEM}/cbc:Name"),
    Term(f"{_L}.itemInformation.description", "BT-154", "Item description", f"{C_PROD}/ram:Description",
         f"{U_ITEM}/cbc:Description"),
    Term(f"{_L}.itemInformation.sellersIdentifier", "BT-155", "Item Seller's identifier",
         f"{C_PROD}/ram:SellerAssignedID", f"{U_ITEM}/cac:SellersItemIdentification/cbc:ID"),
    Term(f"{_L}.itemInformation.buyersIdentifier", "BT-156", "Item Buyer's identifier", f"{C_PROD}/ram:BuyerAssignedID",
         f"{U_ITEM}/cac:BuyersItemIdentification/cbc:ID"),
    Term(f"{_L}.itemInformation.standardIdentifier", "BT-157", "Item standard identifier", f"{C_PROD}/ram:GlobalID",
         f"{U_ITEM}/cac:StandardItemIdentification/cbc:ID"),
    *_classification(f"{_L}.itemInformation", f"{C_PROD}/ram:DesignatedProductClassification{_FIRST}",
                     f"{U_ITEM}/cac:CommodityClassification{_FIRST}"),
    Term(f"{_L}.itemInformation.countryOfOrigin", "BT-159", "Item country of origin",
         f"{C_PROD}/ram:OriginTradeCountry/ram:ID", f"{U_ITEM}/cac:OriginCountry/cbc:IdentificationCode"),
    Term(f"{_L}.itemInformation.itemAttributes[]", "BG-32", "Item attributes",
         f"{C_PROD}/ram:ApplicableProductCharacteristic", f"{U_ITEM}/cac:AdditionalItemProperty"),
    Term(f"{_L}.itemInformation.itemAttributes[].name", "BT-160", "Item attribute name",
         f"{C_PROD}/ram:ApplicableProductCharacteristic/ram:Description",
         f"{U_ITEM}/cac:AdditionalItemProperty/cbc:Name"),
    Term(f"{_L}.itemInformation.itemAttributes[].value", "BT-161", "Item attribute value",
         f"{C_PROD}/ram:ApplicableProductCharacteristic/ram:Value", f"{U_ITEM}/cac:AdditionalItemProperty/cbc:Value"),
    Term(f"{_L}.itemInformation.standardIdentifierSchemeId", "BT-157-1", "Item standard identifier scheme identifier",
         f"{C_PROD}/ram:GlobalID/@schemeID", f"{U_ITEM}/cac:StandardItemIdentification/cbc:ID/@schemeID",
         extension=True),
    *_classification(f"{_L}.itemInformation.additionalClassifiedIdentifiers[]",
                     f"{C_PROD}/ram:DesignatedProductClassification{_MORE}", f"{U_ITEM}/cac:CommodityClassification{_MORE}",
                     further="Further item classification identifiers"),
])

# ---- the XRechnung extension: UBL only (model._extension_errors says why), so no CII binding -----------------------
_SUB = f"{_L}.subInvoiceLines[]"
U_SUB_LINE = f"{U_LINE}//cac:SubInvoiceLine"   # at any depth: nested sub-lines share the rows (pattern_of)
# A sub-invoice line has the terms of a line; its groups are the extension's (XRechnung 3.0, BG-DEX-01..08).
_SUB_GROUPS = {"BG-25": "BG-DEX-01", "BG-31": "BG-DEX-02", "BG-27": "BG-DEX-03", "BG-28": "BG-DEX-04",
               "BG-26": "BG-DEX-05", "BG-30": "BG-DEX-06", "BG-29": "BG-DEX-07", "BG-32": "BG-DEX-08"}


def _sub_line(row: Term) -> Term:
    name = "Sub-invoice line" if row.json_path == _L else f"{row.name} (sub-invoice line)"
    return Term(_SUB + row.json_path[len(_L):], _SUB_GROUPS.get(row.bt, row.bt), name,
                None, row.ubl and row.ubl.replace(U_LINE, U_SUB_LINE), extension=True)


_U_THIRD_PARTY = f"{_U}/cac:PrepaidPayment"
TERMS += tuple(_sub_line(t) for t in TERMS if t.json_path == _L or t.json_path.startswith(_L + ".")) + (
    Term(f"{_I}.thirdPartyPayments[]", "BG-DEX-09", "Third party payment", None, _U_THIRD_PARTY, extension=True),
    Term(f"{_I}.thirdPartyPayments[].paymentType", "BT-DEX-001", "Third party payment type", None,
         f"{_U_THIRD_PARTY}/cbc:ID", extension=True),
    Term(f"{_I}.thirdPartyPayments[].amount", "BT-DEX-002", "Third party payment amount", None,
         f"{_U_THIRD_PARTY}/cbc:PaidAmount", extension=True),
    Term(f"{_I}.thirdPartyPayments[].description", "BT-DEX-003", "Third party payment description", None,
         f"{_U_THIRD_PARTY}/cbc:InstructionID", extension=True),
)

BY_PATH: dict[str, Term] = {t.json_path: t for t in TERMS}

# Terms the official rule texts name that no field of the request carries: a name only, no field and no binding (a
# row of TERMS is a field). The installed Factur-X EXTENDED and FNFE EXTENDED-CTC-FR rules name Factur-X's own
# terms (BT-X-n, BG-X-n), ids beyond EN 16931-1:2017's BT-165 for elements the CII has (BT-173..195: the VAT
# exemption reasons of allowances, charges and lines, non-VAT tax codes) and currency attributes (BT-110-0,
# BT-111-1). The English names are the rule texts' own words for them (BR-FXEXT-01/02/03, BR-FXEXT-BR-54-1/2,
# BR-FXEXT-CO-16, the BR-FXEXT VAT category rules naming "Logistics Service fee amounts (BT-X-272)"); their German
# names stand in templates/term-names-de.json with the other German names (its "source" says where each comes from).
# tests/test_terms_unbound_names.py: every id an installed official rule text names has a row here or in TERMS.
UNBOUND_NAMES: dict[str, str] = {
    "BT-X-5": "Coded message free text", "BT-X-9": "Coded invoice line item free text",
    "BT-X-10": "Invoice line item free text subject code",
    "BT-X-11": "Item attribute code", "BT-X-12": "Item attribute value with unit of measure",
    "BT-X-12-0": "Item attribute value unit of measure",
    # BR-FXEXT-03: "Only a VAT registration ID may be provided for the following business partners: ..."
    "BT-X-66": "Line level Ship-To VAT identifier", "BT-X-84": "Line level Ultimate-Ship-To VAT identifier",
    "BT-X-144": "Product-Enduser VAT identifier", "BT-X-161": "Document level Ship-To VAT identifier",
    "BT-X-180": "Document level Ultimate-Ship-To VAT identifier", "BT-X-199": "Ship-From VAT identifier",
    "BT-X-223": "Invoicer VAT identifier", "BT-X-242": "Invoicee VAT identifier",
    "BT-X-257": "Document level Payee VAT identifier", "BT-X-340": "Sales-Agent VAT identifier",
    "BT-X-367": "Buyer-Tax-Representative VAT identifier", "BT-X-411": "Buyer-Agent VAT identifier",
    "BT-X-481": "Payer VAT identifier", "BT-X-509": "Payment-term-specific Payee VAT identifier",
    # the logistics service charge (CII SpecifiedLogisticsServiceCharge), which the EXTENDED rules count into BT-108
    "BG-X-42": "Logistics service charge", "BT-X-272": "Logistics service charge amount",
    "BT-X-273": "Logistics service charge VAT category code", "BT-X-274": "Logistics service charge VAT rate",
    "BT-X-591": "Logistics service charge VAT exemption reason text",
    "BT-X-592": "Logistics service charge VAT exemption reason code",
    # "the exemption reasons in Text (BT-120) and Code (BT-121) ... on each line (BT-X-96 / BT-X-97), on Document
    # level Allowances (BT-173 / BT-174) and on Document Level Charges (BT-175 / BT-176)"
    "BT-X-96": "Invoice line VAT exemption reason text", "BT-X-97": "Invoice line VAT exemption reason code",
    "BT-173": "Document level allowance VAT exemption reason text",
    "BT-174": "Document level allowance VAT exemption reason code",
    "BT-175": "Document level charge VAT exemption reason text",
    "BT-176": "Document level charge VAT exemption reason code",
    "BT-194": "Invoiced item VAT exemption reason text", "BT-195": "Invoiced item VAT exemption reason code",
    "BT-177": "Document level non-VAT tax code", "BT-193": "Invoice line non-VAT tax code",
    "BT-179": "Charge amount collected on behalf of a third party",
    "BT-110-0": "Invoice total VAT amount currency",
    "BT-111-1": "Invoice total VAT amount in accounting currency, currency",
}

# Rules whose message names no business term (code-list rules): the terms their context binds, written by hand
# from the rule contexts of the CEN Schematron (EN16931-*-codes.sch).
_CODE_LIST_RULE_TERMS: dict[str, tuple[str, ...]] = {
    "BR-CL-01": ("BT-3",), "BR-CL-03": ("BT-5",), "BR-CL-04": ("BT-5",), "BR-CL-05": ("BT-6",),
    "BR-CL-06": ("BT-8",), "BR-CL-07": ("BT-18-1", "BT-128-1"), "BR-CL-08": ("BT-21",),
    "BR-CL-10": ("BT-29-1", "BT-46-1", "BT-60-1", "BT-71-1", "BT-157-1"),
    "BR-CL-11": ("BT-30-1", "BT-47-1", "BT-61-1"), "BR-CL-13": ("BT-158-1",),
    "BR-CL-14": ("BT-40", "BT-55", "BT-69", "BT-80"), "BR-CL-15": ("BT-159",), "BR-CL-16": ("BT-81",),
    "BR-CL-17": ("BT-118", "BT-151", "BT-95", "BT-102"), "BR-CL-18": ("BT-118", "BT-151", "BT-95", "BT-102"),
    "BR-CL-19": ("BT-98", "BT-140"), "BR-CL-20": ("BT-105", "BT-145"), "BR-CL-21": ("BT-157-1",),
    "BR-CL-22": ("BT-121",), "BR-CL-23": ("BT-130", "BT-150"), "BR-CL-24": ("BT-125-1",),
    "BR-CL-25": ("BT-34-1", "BT-49-1"), "BR-CL-26": ("BT-71-1",),
}

# Other rules the XRechnung and EN 16931 packs run whose message names no business term (mostly the Peppol rules
# XRechnung includes): the terms the rule text is about, written by hand from the rule texts and contexts.
# Allowance/charge rules list the document level first (AUTO computes amounts, so they fire for MANUAL input).
_UNNAMED_RULE_TERMS: dict[str, tuple[str, ...]] = {
    "BR-CO-25": ("BT-20", "BT-9", "BT-115"), "BR-DE-22": ("BT-125-2",),
    "PEPPOL-EN16931-R001": ("BT-23",), "PEPPOL-EN16931-R005": ("BT-6",),
    "PEPPOL-EN16931-R010": ("BT-49",), "PEPPOL-EN16931-R020": ("BT-34",),
    "PEPPOL-EN16931-R040": ("BT-92", "BT-99", "BT-136", "BT-141"),
    "PEPPOL-EN16931-R041": ("BT-93", "BT-100", "BT-137", "BT-142"),
    "PEPPOL-EN16931-R042": ("BT-94", "BT-101", "BT-138", "BT-143"),
    "PEPPOL-EN16931-R046": ("BT-146", "BT-148", "BT-147"), "PEPPOL-EN16931-R053": ("BT-110",),
    "PEPPOL-EN16931-R055": ("BT-111", "BT-110"), "PEPPOL-EN16931-R061": ("BT-89",),
    "PEPPOL-EN16931-R101": ("BT-128",), "PEPPOL-EN16931-R110": ("BT-134", "BT-73"),
    "PEPPOL-EN16931-R111": ("BT-135", "BT-74"), "PEPPOL-EN16931-R120": ("BT-131",),
    "PEPPOL-EN16931-R121": ("BT-149",), "PEPPOL-EN16931-R130": ("BT-150", "BT-130"),
    # the XRechnung extension's scheme rules (its own code lists), from their contexts, as BR-CL-10/11/21/25/26
    # (not BR-DEX-05: in CII it judges every scheme of a ram:ID, the buyer's identifier's too)
    "BR-DEX-04": ("BT-29-1", "BT-46-1", "BT-60-1"), "BR-DEX-06": ("BT-157-1",), "BR-DEX-07": ("BT-34-1", "BT-49-1"),
    "BR-DEX-08": ("BT-71-1",),
    # rules only the Peppol pack runs (PEPPOL-EN16931-UBL.sch), from their texts and contexts
    "PEPPOL-EN16931-R002": ("BT-22",), "PEPPOL-EN16931-R003": ("BT-10", "BT-13"), "PEPPOL-EN16931-R004": ("BT-24",),
    "PEPPOL-EN16931-R007": ("BT-23",), "PEPPOL-EN16931-R080": ("BT-11",),
    "PEPPOL-EN16931-CL008": ("BT-34-1", "BT-49-1"), "PEPPOL-EN16931-P0100": ("BT-3",),
    "PEPPOL-EN16931-P0101": ("BT-3",), "PEPPOL-EN16931-P0112": ("BT-3",),
    # the XRechnung extension's rules name extension terms (BT-DEX-nnn), which the generated table does not read
    "BR-DEX-03": ("BG-DEX-06",), "BR-DEX-10": ("BT-DEX-001",), "BR-DEX-11": ("BT-DEX-002",),
    "BR-DEX-12": ("BT-DEX-003",), "BR-DEX-13": ("BT-DEX-002",), "BR-DEX-14": ("BT-DEX-002",),
}

# Rule id -> business terms (generated from the official rule messages, plus the hand-written tables above for
# rules whose message names none).
RULE_TERMS: dict[str, tuple[str, ...]] = {
    **_GENERATED_RULE_TERMS,
    **{k: v for k, v in {**_CODE_LIST_RULE_TERMS, **_UNNAMED_RULE_TERMS}.items() if not _GENERATED_RULE_TERMS.get(k)},
}

_INDEX_RE = re.compile(r"\[\d+\]")
_NESTED_SUB_LINES = re.compile(r"(?:\.subInvoiceLines\[\])+")


def pattern_of(field: str) -> str:
    """`invoice.invoiceLines[2].quantity` -> `invoice.invoiceLines[].quantity`; sub-invoice lines at any depth
    share one pattern (`...invoiceLines[].subInvoiceLines[].quantity`)."""
    pattern = _INDEX_RE.sub("[]", field)
    return _NESTED_SUB_LINES.sub(".subInvoiceLines[]", pattern) if "subInvoiceLines" in pattern else pattern


def term_for(field: str | None) -> Term | None:
    """The table row of a JSON field path (concrete or pattern); None when the path is not a known field."""
    if not field:
        return None
    path = pattern_of(field)
    return BY_PATH.get(path) or BY_PATH.get(path + "[]")   # an array as a whole: the row of its items


# German names: the labels of KoSIT's official XRechnung viewer (templates/term-names-de.json names the file). A
# viewer shows them under their party's heading, so a label alone can be "Ort" or "Name": outside that heading the
# party (or group) is added in brackets, from the field's place in the request.
_GERMAN_GROUPS = (
    ("invoice.sellerTaxRepresentativeParty.", "Steuervertreter"), ("invoice.seller.", "Verkäufer"),
    ("invoice.buyer.", "Käufer"), ("invoice.payee.", "Zahlungsempfänger"), ("invoice.deliveryInformation.", "Lieferung"),
    ("invoice.invoicingPeriod.", "Abrechnungszeitraum"), ("invoice.precedingInvoiceReference.", "Vorausgegangene Rechnung"),
    ("invoice.paymentInstructions.creditTransfer.", "Überweisung"),
    ("invoice.paymentInstructions.directDebit.", "Lastschrift"),
    ("invoice.invoiceLines[].subInvoiceLines[].", "Unterposition"), ("invoice.invoiceLines[].", "Rechnungsposition"),
    ("invoice.documentLevelAllowances[].", "Nachlass"), ("invoice.documentLevelCharges[].", "Zuschlag"))


# A sub-invoice line's groups (BG-DEX-01..08) are its line's groups again: no German list names them, so they carry
# the German name of the core group they mirror, with the sub-invoice line's bracket as its terms do.
_MIRRORED_GROUPS = {extension: core for core, extension in _SUB_GROUPS.items()}


@lru_cache(maxsize=1)
def _german_names() -> dict[str, str]:
    return json.loads((TEMPLATES_DIR / "term-names-de.json").read_text(encoding="utf-8"))["names"]


def term_name(term: Term, language: str = "en") -> str:
    """A business term's name in `language` (en | de); the English name where the German list has none."""
    mirrored = term.bt in _MIRRORED_GROUPS
    german = _german_names().get(_MIRRORED_GROUPS[term.bt] if mirrored else term.bt or "") if language == "de" else None
    if not german:
        return term.name
    path = term.json_path + ("." if mirrored else "")   # BG-DEX-01 is the sub-invoice line itself: in its bracket
    for prefix, group in _GERMAN_GROUPS:
        if path.startswith(prefix):
            return german if group.lower()[:6] in german.lower() else f"{german} ({group})"
    return german


def bt_name(bt: str, language: str = "en") -> str | None:
    """The name of a business term by its id alone, in `language` (en | de): the name of the first field carrying it
    (as `term_name` gives it), else of a term no field carries (UNBOUND_NAMES, German from the German list); None
    for an id neither knows."""
    fields = fields_for_bt(bt)
    if fields:
        return term_name(BY_PATH[fields[0]], language)
    english = UNBOUND_NAMES.get(bt)
    if english is None:
        return None
    return (_german_names().get(bt) if language == "de" else None) or english


def business_term(field: str | None) -> str | None:
    """BT/BG id of a JSON field path, walking up to the nearest parent that has one (e.g. `config.x` -> None)."""
    path = pattern_of(field) if field else ""
    while path:
        term = term_for(path)
        if term is not None and term.bt:
            return term.bt
        path = path.rsplit(".", 1)[0] if "." in path else ""
    return None


@lru_cache(maxsize=None)
def fields_for_bt(bt: str) -> tuple[str, ...]:
    """JSON path patterns carrying a business term (several for BT-5, which has an alias field)."""
    return tuple(t.json_path for t in TERMS if t.bt == bt)


# The French reform's rules (FNFE BR-FR Flux 2) carry the terms they judge in their ids: `BR-FR-05_BT-22_PMT`,
# `BR-FR-15_BT-95_BT-102`, `BR-FR-23_EXT-FR-FE-12`; a trailing `-1`/`-2` there numbers variants of one rule.
_FRENCH_RULE = re.compile(r"BR-FR-[A-Z0-9-]*?[_-](?=BT-|BG-|EXT-FR-FE-)")
_FRENCH_TERM = re.compile(r"(?:EXT-FR-FE-(?:BG-)?\d+|BT-\d+|BG-\d+)")


def terms_for_rule(rule_id: str) -> tuple[str, ...]:
    """BT/BG ids an official rule names (empty for pure syntax rules); French rules (BR-FR-...) also name French
    extension terms (EXT-FR-FE-...)."""
    found = RULE_TERMS.get(rule_id)
    if found is None and _FRENCH_RULE.match(rule_id):
        return tuple(dict.fromkeys(_FRENCH_TERM.findall(rule_id[_FRENCH_RULE.match(rule_id).end():])))
    return found or ()


def rule_fields(rule_id: str) -> tuple[tuple[str, str], ...]:
    """(JSON path pattern, BT id) of every field an official rule names; business terms before groups ("Each VAT
    breakdown (BG-23) shall have ... (BT-116)" is about BT-116)."""
    return _fields_of(terms_for_rule(rule_id))


def _fields_of(terms) -> tuple[tuple[str, str], ...]:
    ordered = sorted(terms, key=lambda t: not t.startswith("BT-"))
    return tuple((field, bt) for bt in ordered for field in fields_for_bt(bt))


# "An Invoice that contains ... shall contain the Seller VAT Identifier (BT-31), the Seller tax registration
# identifier (BT-32) and/or the Seller tax representative VAT identifier (BT-63) and the Buyer VAT identifier
# (BT-48) and/or the Buyer legal registration identifier (BT-47)": one of a set is enough.
_ALTERNATIVES = (frozenset({"BT-31", "BT-32", "BT-63"}), frozenset({"BT-48", "BT-47"}))
# The VAT category codes that make a VAT rule apply: what the rule is conditional on, never what it wants changed.
_TRIGGERS = frozenset({"BT-95", "BT-102", "BT-118", "BT-151"})
# A term a message names: "... the element "Buyer reference" (BT-10) shall be provided."
_TERM_IN_TEXT = re.compile(r"\((B[TG]-\d+(?:-\d+)?)\)")
# The rule a finding's message opens with ("[BR-CO-26]-In order for ...").
_NAMED_RULE = re.compile(r"\s*\[([A-Z][A-Z0-9-]*)\]")
# Rules about which terms an invoice has ("shall contain", "shall not contain", "shall have", "shall be present"),
# not their values.
_PRESENCE = re.compile(r"\b(?:shall|must)( not)? (?:contain|have|be present)\b", re.IGNORECASE)


def field_for_rule(rule_id: str, xpath: str | None = None, present=None,
                   message: str = "") -> tuple[str | None, str | None]:
    """(JSON path pattern, BT id) a finding of an official rule points at; (None, None) when the rule names no term.
    Of the fields the rule names: the one bound to the finding's element (`xpath`, e.g. BR-CL-25 on the buyer's
    electronic address, not the seller's), a VAT category code only when the rule is about nothing else; else, for
    a rule about which terms an invoice has (its `message`) and `present(field)` telling which fields the document
    has, the one that makes the rule fail: the first of the required ones it lacks (the buyer's VAT identifier of
    BR-AE-02 when the seller's is there) or, for a rule that forbids them ("shall not contain"), the first one it
    has; else the first. A rule naming only terms without a field gives (None, its first term); a rule the tables
    do not know, the terms its message names; a rule naming no term, the term bound at its location (`field_at`)."""
    named = _NAMED_RULE.match(message or "")
    if not terms_for_rule(rule_id) and named and terms_for_rule(named.group(1)):
        rule_id = named.group(1)   # a Factur-X profile rule (FX-SCH-A-000001) quoting an EN 16931 one: "[BR-CO-26]-..."
    # a rule the tables do not know (Peppol's national rules, DE-R-001...): the terms its message names
    terms = terms_for_rule(rule_id) or tuple(dict.fromkeys(_TERM_IN_TEXT.findall(message or "")))
    fields = _fields_of(terms)
    if not fields:
        return (None, terms[0]) if terms else field_at(xpath)
    about_codes = all(bt in _TRIGGERS for _, bt in fields)
    located = [f for f in fields if xpath and bound_at(f[0], xpath) and (about_codes or f[1] not in _TRIGGERS)]
    if located and not located[0][1].startswith("BG-"):
        return located[0]
    elsewhere = _rebased(fields, xpath) if xpath and not located else None
    if elsewhere:
        return elsewhere
    presence = _PRESENCE.search(message)   # a group's finding ("Each (BG-24) shall contain ... (BT-122)"): the term
    if present is not None and presence:
        blamed = _blamed(fields, present, negated=bool(presence.group(1)))
        if blamed:
            return blamed
    return located[0] if located else fields[0]


def _rebased(fields, xpath: str) -> tuple[str, str] | None:
    """The counterparts, at the finding's element, of the fields a rule names when the finding stands on a group of
    the same name elsewhere: a rule whose context is any `cac:InvoicePeriod` not a line's (BR-29, BR-CO-19) fires on
    a sub-invoice line's period too, and names the invoice's period (BT-73, BT-74) for it. None when the finding
    stands on or above the place the fields are bound (the rule's own group) or nothing is bound there."""
    at = element_steps(xpath)
    table = _fields_by_element()
    found = []
    for field, _ in fields:
        for bound in _bindings(field):
            if bound[:len(at)] == at:
                return None   # the finding's element holds the field where the rule means it
            k = len(bound) - 1 - bound[::-1].index(at[-1]) if at and at[-1] in bound[:-1] else None
            if k is not None and table.get(at + bound[k + 1:]) is not None:
                found.append(table[at + bound[k + 1:]])
    return found[0] if found else None


def _blamed(fields, present, negated: bool):
    """The field a presence rule fails on (see field_for_rule); None when presence does not tell."""
    candidates = [(field, bt) for field, bt in fields if bt not in _TRIGGERS]
    if negated:
        return next(((field, bt) for field, bt in candidates if present(field)), None)
    named = {bt for _, bt in fields}
    for field, bt in candidates:
        group = next((named & g for g in _ALTERNATIVES if bt in g), {bt})
        if not any(present(f) for f, b in fields if b in group):
            return field, bt
    # a category code a rule requires ("Each (BG-20) shall have a ... VAT category code (BT-95)", BR-32): a rule
    # conditional on a code fires only where the code is there, so an absent one is what the rule wants
    return next(((field, bt) for field, bt in fields if bt in _TRIGGERS and not present(field)), None)


_PREDICATE = re.compile(r"\[[^\[\]]*\]")
_EQNAME_URI = re.compile(r"Q\{[^}]*\}")
_UBL_NAMES = {"CreditNote": "Invoice", "CreditNoteLine": "InvoiceLine", "CreditedQuantity": "InvoicedQuantity",
              "SubCreditNoteLine": "SubInvoiceLine"}


def element_steps(xpath: str) -> tuple[str, ...]:
    """The element names along an XPath, without prefixes, predicates and a final attribute, a credit note's UBL
    names as the invoice's: `/*:Invoice[namespace-uri()='…'][1]/*:AccountingCustomerParty[…][1]/…` (or EQNames,
    `/Q{urn:…}Invoice[1]/…`) ->
    ("Invoice", "AccountingCustomerParty", …)."""
    xpath = _EQNAME_URI.sub("", xpath)   # `Q{urn:…}Invoice[1]` (the XRechnung packs' locations): its URI has colons
    while _PREDICATE.search(xpath):
        xpath = _PREDICATE.sub("", xpath)
    steps = [_UBL_NAMES.get(name, name) for name in
             (step.rsplit(":", 1)[-1] for step in xpath.split("/") if step and not step.startswith("@"))]
    # sub-invoice lines at any depth share one binding (`U_SUB_LINE`, as `pattern_of` shares their JSON pattern)
    return tuple(step for i, step in enumerate(steps) if not (i and step == "SubInvoiceLine" and steps[i - 1] == step))


@lru_cache(maxsize=None)
def _bindings(field: str) -> tuple[tuple[str, ...], ...]:
    term = term_for(field)
    return tuple(element_steps(path) for path in (term.cii, term.ubl) if path) if term else ()


@lru_cache(maxsize=1)
def _fields_by_element() -> dict[tuple[str, ...], tuple[str, str]]:
    """Element steps of a syntax binding (CII and UBL) -> (JSON path pattern, BT/BG id) of the first term bound
    there, a term bound to the element itself before one bound to its attribute (BT-46 before its scheme, BT-46-1);
    terms without a business term left out."""
    found: dict[tuple[str, ...], tuple[str, str]] = {}
    for on_attribute in (False, True):
        for term in TERMS:
            for path in (term.cii, term.ubl) if term.bt else ():
                if path and path.rsplit("/", 1)[-1].startswith("@") == on_attribute:
                    found.setdefault(element_steps(path), (term.json_path, term.bt))
    return found


def field_at(xpath: str | None) -> tuple[str | None, str | None]:
    """(JSON path pattern, BT/BG id) of the term bound at a finding's element, else at its nearest ancestor below the
    root: for a rule that names no term and judges the element it points at (PEPPOL-EN16931-R008 on an empty
    element, a format rule on an identifier, UBL-SR-53 on a party's tax scheme: the party). (None, None) for a
    finding on the root (a syntax rule about what the document as a whole holds) or where nothing is bound."""
    steps = element_steps(xpath) if xpath else ()
    table = _fields_by_element()
    while len(steps) > 1:
        if steps in table:
            return table[steps]
        steps = steps[:-1]
    return None, None


def bound_at(field: str, xpath: str) -> bool:
    """Whether a field's syntax binding (CII or UBL) is the element a finding's XPath names."""
    return element_steps(xpath) in _bindings(field)
