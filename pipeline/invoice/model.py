"""The request model: pydantic v2 models of `InvoiceRequest` (service spec section 2, names exactly as written
there, plus the extension fields of docs/canonical.md), and `parse_request`, which turns a request body into a
model or a 400 INVALID_INPUT with one ErrorDetail per problem.

Amounts are `Decimal` end to end: JSON numbers are parsed as Decimal (never float), NaN/Infinity are rejected,
and number fields accept JSON numbers only. Dates are strict `YYYY-MM-DD`. Unknown fields and empty strings are
rejected. Error codes in `errors[]`: REQUIRED, UNKNOWN_FIELD, INVALID_TYPE, INVALID_FORMAT, INVALID_VALUE,
OUT_OF_RANGE, TOO_LONG, MALFORMED_JSON, EMPTY_BODY, UNSUPPORTED_VERSION (config.version); every entry with a field carries its business term.
"""
from __future__ import annotations

import base64
import binascii
import copy
import json
import re
import types
import typing
from datetime import date
from decimal import ROUND_UP, Decimal, InvalidOperation
from typing import Annotated, Any, NamedTuple, NoReturn

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints,
                      TypeAdapter, ValidationError, WithJsonSchema)
from pydantic_core import PydanticCustomError, core_schema

from pipeline import budget
from pipeline.errors import ApiError, ErrorDetail, invalid_input
from pipeline.invoice import france, peppol, specs
from pipeline.invoice.codes import COUNTRY_CODES, CURRENCY_CODES, INVOICE_TYPE_CODES, VAT_CATEGORY_CODES
from pipeline.invoice.request_json import dumps
from pipeline.invoice.terms import ARRAY_ITEMS, BY_PATH, business_term, term_for
from pipeline.settings import get_settings

SPECS = ("xrechnung", "en16931", "zugferd", "fr-ctc", "peppol")
XML_SPECS = ("xrechnung", "en16931", "fr-ctc", "peppol")
# config.rules on /zugferd: national rules the PDF's invoice must pass as well (fr-ctc: France's reform, BR-FR).
RULES = ("fr-ctc",)
METADATA_LANGUAGES = ("en", "de")
CALCULATION_MODES = ("AUTO", "MANUAL")

# Bounds: generous for real invoices, tight enough that hostile input cannot blow up formatting or memory.
MAX_TEXT = 1_000             # identifiers, names, codes
MAX_LONG_TEXT = 100_000      # notes, descriptions, payment terms
MAX_BINARY = 30_000_000      # base64 attachment (BT-125)
MAX_LINES = 100_000
MAX_ITEMS = 1_000            # any other array
MAX_INTEGER_DIGITS = 15
MAX_FRACTION_DIGITS = 10
MAX_ERRORS = 100             # errors[] entries in one 400 response
MAX_KEY = 100                # characters of an unknown key echoed in `field`
_SMALLEST = Decimal(1).scaleb(-MAX_FRACTION_DIGITS)
FRACTION_BOUND = f"must have at most {MAX_FRACTION_DIGITS} decimal places"


def field_kind(annotation) -> tuple[str, Any]:
    """Model field annotation -> (kind, type): kind is 'list' or 'one'; Optional and Annotated are removed. The type walk
    both directions share: the canonical schema is generated with it, and read documents are typed with it."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return field_kind(args[0])
    if origin is typing.Annotated:
        return field_kind(typing.get_args(annotation)[0])
    if origin is list:
        return "list", field_kind(typing.get_args(annotation)[0])[1]
    return "one", annotation


# ---- field types ---------------------------------------------------------------------------------------------

# Characters XML 1.0 cannot carry (C0 controls other than tab/LF/CR, surrogates, U+FFFE/U+FFFF).
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _clean_text(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("INVALID_VALUE", "must not be empty")
    bad = NOT_XML.search(value)
    if bad:
        # pydantic fills in plain {placeholders} only: the code point is formatted here
        raise PydanticCustomError("INVALID_VALUE", "contains a character XML cannot carry ({code})",
                                  {"code": f"U+{ord(bad.group()):04X}"})
    return value


def _text(max_length: int):
    return Annotated[str, StringConstraints(strict=True, min_length=1, max_length=max_length),
                     AfterValidator(_clean_text)]


Text = _text(MAX_TEXT)
LongText = _text(MAX_LONG_TEXT)
Binary = _text(MAX_BINARY)
# config.profile: the Factur-X profile names (specs.profile_named also takes their other spellings, e.g. BASIC-WL)
ProfileName = Annotated[Text, WithJsonSchema({"type": "string", "enum": list(specs.PROFILES)})]


def _number(value: Any) -> Decimal:
    """JSON numbers only (parse_request turns JSON fractions into Decimal); Python floats via their repr."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise PydanticCustomError("INVALID_TYPE", "must be a number")
    try:
        number = value if isinstance(value, Decimal) else Decimal(repr(value) if isinstance(value, float) else value)
    except (InvalidOperation, ValueError):
        raise PydanticCustomError("INVALID_TYPE", "must be a number")
    if not number.is_finite():
        raise PydanticCustomError("INVALID_VALUE", "must be a finite number")
    if number != 0 and number.adjusted() >= MAX_INTEGER_DIGITS:
        raise PydanticCustomError("OUT_OF_RANGE", f"must have at most {MAX_INTEGER_DIGITS} integer digits")
    _, digits, exponent = number.as_tuple()
    if exponent >= -MAX_FRACTION_DIGITS:   # the usual case
        return number
    kept = len("".join(map(str, digits)).rstrip("0"))   # digits without trailing zeros
    if kept and -(exponent + len(digits) - kept) > MAX_FRACTION_DIGITS:
        raise PydanticCustomError("OUT_OF_RANGE", FRACTION_BOUND)
    return number.quantize(_SMALLEST)   # only trailing zeros beyond: drop them (0E-999999999 is just 0)


def _range(low: Decimal | None = None, high: Decimal | None = None, low_exclusive: bool = False):
    def check(value: Decimal) -> Decimal:
        if low is not None and (value < low or (low_exclusive and value == low)):
            relation = "greater than" if low_exclusive else "at least"
            raise PydanticCustomError("OUT_OF_RANGE", f"must be {relation} {low}")
        if high is not None and value > high:
            raise PydanticCustomError("OUT_OF_RANGE", f"must be at most {high}")
        return value
    return AfterValidator(check)


# The JSON schema (OpenAPI) says what the validators accept: JSON numbers only.
# amounts, quantities, prices
Number = Annotated[Decimal, BeforeValidator(_number), WithJsonSchema({"type": "number"})]
Rate = Annotated[Decimal, BeforeValidator(_number), _range(Decimal(0), Decimal(100)),      # VAT rate in percent
                 WithJsonSchema({"type": "number", "minimum": 0, "maximum": 100})]
NonNegative = Annotated[Decimal, BeforeValidator(_number), _range(Decimal(0)),
                        WithJsonSchema({"type": "number", "minimum": 0})]

# A calendar date, with the time zone some UBL documents give it (xs:date allows one: `2016-04-04+01:00`)
DATE_RE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:Z|[+-](?:(?:0\d|1[0-3]):[0-5]\d|14:00))?")


def _iso_date(value: Any) -> str:
    """The date as its ISO text, time zone kept as sent (values travel verbatim; CII's format 102 has no place for
    one, which convert says in `changed`)."""
    if type(value) is date:   # Python callers; a datetime is not a date here
        return value.isoformat()
    if not isinstance(value, str):
        raise PydanticCustomError("INVALID_TYPE", "must be a date string YYYY-MM-DD")
    found = DATE_RE.fullmatch(value)
    if not found:
        raise PydanticCustomError("INVALID_FORMAT", "must be an ISO 8601 calendar date YYYY-MM-DD")
    try:
        date.fromisoformat(found.group(1))
    except ValueError:
        raise PydanticCustomError("INVALID_FORMAT", "is not a valid calendar date")
    return value


class DateText(str):
    """A date as its ISO text (`_iso_date`); its own type so that the canonical schema says xs:date for it, which
    allows the time zone."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        return core_schema.no_info_before_validator_function(lambda v: cls(_iso_date(v)), core_schema.str_schema())


IsoDate = Annotated[DateText, WithJsonSchema({"type": "string", "format": "date"})]


def _code(codes: frozenset[str] | tuple[str, ...], what: str, fold=str.upper, enum: bool = False):
    """A code from a closed list, case-insensitive on input and written in the list's case. `enum`: the OpenAPI
    schema lists the codes (short lists; long code lists are named in the description only)."""
    def check(value: Any) -> str:
        if not isinstance(value, str):
            raise PydanticCustomError("INVALID_TYPE", "must be a string")
        code = fold(value.strip())
        if code not in codes:
            raise PydanticCustomError("INVALID_VALUE", f"is not a valid {what}")
        return code
    schema = {"type": "string", "description": f"Code list: {what} (case-insensitive)."}
    if enum:
        schema["enum"] = list(codes) if isinstance(codes, tuple) else sorted(codes)
    return Annotated[str, BeforeValidator(check), WithJsonSchema(schema)]


CurrencyCode = _code(CURRENCY_CODES, "ISO 4217 currency code")
CountryCode = _code(COUNTRY_CODES, "ISO 3166-1 alpha-2 country code")
VatCategoryCode = _code(VAT_CATEGORY_CODES, "VAT category code (UNCL 5305: S, Z, E, AE, K, G, O, L, M, B)",
                        enum=True)
InvoiceTypeCode = _code(INVOICE_TYPE_CODES, "invoice type code (UNTDID 1001 subset of EN 16931, e.g. 380, 381)",
                        fold=str.strip)
Spec = _code(SPECS, "specification (xrechnung, en16931, zugferd; extension: fr-ctc, peppol)", fold=str.lower,
             enum=True)
Rules = _code(RULES, "national rules (fr-ctc)", fold=str.lower, enum=True)
Syntax = _code(("CII", "UBL"), "syntax (CII or UBL)", enum=True)
CalculationMode = _code(CALCULATION_MODES, "calculation mode (AUTO or MANUAL)", enum=True)
TaxPointDateCode = _code(("3", "35", "432"), "VAT point date code (UNTDID 2005: 3 invoice issue date, 35 delivery "
                         "date, 432 payment date)", fold=str.strip, enum=True)


def metadata_language(value: Any) -> str:
    """metadataLanguage as sent -> en | de. Spec 2.2: an ISO 639-1 code, case-insensitive; unsupported and
    region-qualified codes are refused, and so is any whitespace around the code (" de" is no ISO 639-1 code).
    TypeError / ValueError saying why otherwise."""
    if not isinstance(value, str):
        raise TypeError("must be a string")
    code = value.lower()
    if code in METADATA_LANGUAGES:
        return code
    if re.fullmatch(r"[a-z]{2,3}[-_].+", code.strip()):
        raise ValueError("region-qualified language codes are not supported; use en or de")
    if code != code.strip():
        raise ValueError("must be en or de, without whitespace around it")
    raise ValueError("must be en or de (ISO 639-1)")


def _language(value: Any) -> str:
    try:
        return metadata_language(value)
    except TypeError as exc:
        raise PydanticCustomError("INVALID_TYPE", str(exc))
    except ValueError as exc:
        raise PydanticCustomError("INVALID_VALUE", str(exc))


MetadataLanguage = Annotated[str, BeforeValidator(_language),
                             WithJsonSchema({"type": "string", "enum": list(METADATA_LANGUAGES)})]


def _items(max_length: int = MAX_ITEMS, min_length: int = 0):
    return Field(default=None, min_length=min_length, max_length=max_length)


# ---- models (field order = spec order, extensions last: it is the canonical element order) ---------------------

def _describe(schema: dict, cls: type) -> None:
    """JSON schema hook: each property's description from the business-term table (OpenAPI text); the fields a
    JSON request must send although a read document may lack them (`API_REQUIRED`) are required as sent."""
    api_required = API_REQUIRED.get(cls, ())
    if cls is VatBreakdown:   # spec 2: required; null (or absent) only for category O, which has no rate (BR-O-05)
        schema["required"] = [n for n in schema.get("properties", {})
                              if n in {*schema.get("required", ()), "vatCategoryRate"}]
        rate = schema["properties"]["vatCategoryRate"]
        rate.pop("default", None)
        rate["description"] = "Required; null for category O (not subject to VAT), which states no rate (BR-O-05)."
    if api_required:
        required = set(schema.get("required", ())) | set(api_required)
        schema["required"] = [n for n in schema.get("properties", {}) if n in required]
        for name in api_required:
            prop = schema["properties"][name]
            prop.pop("default", None)
            options = [o for o in prop.pop("anyOf", ()) if o.get("type") != "null"]
            if len(options) == 1:
                prop.update(options[0])
    for name, prop in schema.get("properties", {}).items():
        text = field_descriptions().get((cls, name))
        if text:
            own = prop.get("description")   # e.g. the code list of a code type
            prop["description"] = f"{text} {own}" if own else text


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=False, json_schema_extra=_describe)


class Period(_Model):
    startDate: IsoDate | None = None
    endDate: IsoDate | None = None


class PostalAddress(_Model):
    """SellerPostalAddress, BuyerPostalAddress, SellerTaxRepresentativePostalAddress and DeliveryAddress."""
    addressLine1: Text | None = None   # API_REQUIRED
    addressLine2: Text | None = None
    addressLine3: Text | None = None
    city: Text | None = None           # API_REQUIRED
    postcode: Text | None = None
    countrySubdivision: Text | None = None
    countryCode: CountryCode


class SellerContact(_Model):
    contactPoint: Text | None = None   # API_REQUIRED
    telephone: Text | None = None
    email: Text | None = None


class BuyerContact(_Model):
    contactPoint: Text | None = None
    telephone: Text | None = None
    email: Text | None = None


class PartyIdentifier(_Model):
    """One more seller identifier (BT-29 is 0..n): the fields of the first, `identifier` and its scheme."""
    identifier: Text
    identifierSchemeId: Text | None = None


class Seller(_Model):
    name: Text
    tradingName: Text | None = None
    identifier: Text | None = None
    legalRegistrationIdentifier: Text | None = None
    vatIdentifier: Text | None = None
    taxRegistrationIdentifier: Text | None = None
    electronicAddress: Text | None = None
    electronicAddressSchemeId: Text | None = None
    postalAddress: PostalAddress | None = None
    contact: SellerContact | None = None
    identifierSchemeId: Text | None = None                   # extension BT-29-1
    legalRegistrationIdentifierSchemeId: Text | None = None  # extension BT-30-1
    additionalLegalInformation: LongText | None = None       # extension BT-33
    additionalIdentifiers: list[PartyIdentifier] | None = _items()   # extension: BT-29 is 0..n


class Buyer(_Model):
    name: Text
    tradingName: Text | None = None
    identifier: Text | None = None
    legalRegistrationIdentifier: Text | None = None
    vatIdentifier: Text | None = None
    electronicAddress: Text | None = None
    electronicAddressSchemeId: Text | None = None
    postalAddress: PostalAddress | None = None
    contact: BuyerContact | None = None
    identifierSchemeId: Text | None = None                   # extension BT-46-1
    legalRegistrationIdentifierSchemeId: Text | None = None  # extension BT-47-1


class Payee(_Model):
    name: Text
    identifier: Text | None = None
    legalRegistrationIdentifier: Text | None = None
    identifierSchemeId: Text | None = None                   # extension BT-60-1
    legalRegistrationIdentifierSchemeId: Text | None = None  # extension BT-61-1


class SellerTaxRepresentativeParty(_Model):
    name: Text
    vatIdentifier: Text | None = None
    postalAddress: PostalAddress | None = None


class DeliveryInformation(_Model):
    partyName: Text | None = None
    locationIdentifier: Text | None = None
    actualDeliveryDate: IsoDate | None = None
    address: PostalAddress | None = None
    locationIdentifierSchemeId: Text | None = None           # extension BT-71-1


class CreditTransfer(_Model):
    accountIdentifier: Text
    accountName: Text | None = None
    serviceProviderIdentifier: Text | None = None


class PaymentCardInformation(_Model):
    primaryAccountNumber: Text | None = None
    cardHolderName: Text | None = None


class DirectDebit(_Model):
    mandateReferenceIdentifier: Text | None = None   # API_REQUIRED
    debtorAccountIdentifier: Text | None = None
    creditorIdentifier: Text | None = None


class PaymentInstructions(_Model):
    # API_REQUIRED: CII binds BT-83 outside the payment means, so a read document may state it without BT-81
    meansCode: Text | None = None
    meansText: Text | None = None
    remittanceInformation: Text | None = None
    creditTransfer: CreditTransfer | None = None
    paymentCardInformation: PaymentCardInformation | None = None
    directDebit: DirectDebit | None = None
    additionalCreditTransfers: list[CreditTransfer] | None = _items()   # extension: BG-17 is 0..n


class DocumentTotals(_Model):
    lineExtensionAmount: Number | None = None
    allowanceTotalAmount: Number | None = None
    chargeTotalAmount: Number | None = None
    taxExclusiveAmount: Number | None = None
    taxInclusiveAmount: Number | None = None
    prepaidAmount: Number | None = None
    payableRoundingAmount: Number | None = None
    payableAmount: Number | None = None
    taxTotalAmount: Number | None = None                       # extension BT-110 (computed; MANUAL may send it)
    taxTotalAmountInAccountingCurrency: Number | None = None   # extension BT-111


class VatBreakdown(_Model):
    vatCategoryCode: VatCategoryCode
    vatCategoryRate: Rate | None = None   # required but for category O (BT-119 is 0..1; `_context_errors`)
    vatCategoryTaxableAmount: Number | None = None
    vatCategoryTaxAmount: Number | None = None
    exemptionReason: LongText | None = None
    exemptionReasonCode: Text | None = None


class DocumentLevelAllowance(_Model):
    """Also the shape of DocumentLevelCharge (spec 2.6)."""
    amount: Number | None = None
    percentage: Number | None = None
    baseAmount: Number | None = None
    vatCategoryCode: VatCategoryCode | None = None
    vatRate: Rate | None = None
    reason: Text | None = None
    reasonCode: Text | None = None


class DocumentLevelCharge(DocumentLevelAllowance):
    pass


class InvoiceLineAllowance(_Model):
    """Also the shape of InvoiceLineCharge (spec 2.6)."""
    amount: Number | None = None
    percentage: Number | None = None
    baseAmount: Number | None = None
    reason: Text | None = None
    reasonCode: Text | None = None


class InvoiceLineCharge(InvoiceLineAllowance):
    pass


class PriceDetails(_Model):
    netPrice: Number | None = None
    grossPrice: Number | None = None
    # BT-149: 0 is valid EN 16931 (real senders write 0.00) and kept as sent; AUTO, which divides by it, refuses 0
    priceBasisQuantity: NonNegative | None = None
    basisUnitCode: Text | None = None
    priceDiscount: Number | None = None   # extension BT-147 (AUTO: gross - net price where it is not sent)


class LineVatInformation(_Model):
    vatCategoryCode: VatCategoryCode
    vatRate: Rate


class ItemAttribute(_Model):
    name: Text | None = None
    value: Text | None = None


class ItemClassification(_Model):
    """One more item classification (BT-158 is 0..n): the fields of the first, with its list id and version."""
    classifiedIdentifier: Text
    classifiedIdentifierSchemeId: Text | None = None
    classifiedIdentifierVersion: Text | None = None


class ItemInformation(_Model):
    name: Text
    description: LongText | None = None
    sellersIdentifier: Text | None = None
    buyersIdentifier: Text | None = None
    standardIdentifier: Text | None = None
    classifiedIdentifier: Text | None = None
    countryOfOrigin: CountryCode | None = None
    itemAttributes: list[ItemAttribute] | None = _items()
    standardIdentifierSchemeId: Text | None = None     # extension BT-157-1
    classifiedIdentifierSchemeId: Text | None = None   # extension BT-158-1
    classifiedIdentifierVersion: Text | None = None    # extension BT-158-2
    additionalClassifiedIdentifiers: list[ItemClassification] | None = _items()   # extension: BT-158 is 0..n


class InvoiceLine(_Model):
    lineIdentifier: Text
    itemInformation: ItemInformation
    note: LongText | None = None
    quantity: Number | None = None
    unitCode: Text | None = None
    netAmount: Number | None = None
    referencedPurchaseOrderLine: Text | None = None
    buyerAccountingReference: Text | None = None
    invoiceLinePeriod: Period | None = None
    invoiceLineAllowances: list[InvoiceLineAllowance] | None = _items()
    invoiceLineCharges: list[InvoiceLineCharge] | None = _items()
    priceDetails: PriceDetails | None = None
    lineVatInformation: LineVatInformation | None = None
    objectIdentifier: Text | None = None           # extension BT-128
    objectIdentifierSchemeId: Text | None = None   # extension BT-128-1
    # extension, Factur-X EXTENDED (CII only): the line this one details (BT-X-304) and the line's subtype (BT-X-8:
    # DETAIL, GROUP, INFORMATION); GROUP and INFORMATION lines count into no total (BR-FXEXT-CO-10)
    parentLineIdentifier: Text | None = None
    lineStatusReasonCode: Text | None = None
    # extension BG-DEX-01 (XRechnung extension, UBL only): lines that detail this one, each shaped like a line
    subInvoiceLines: list[InvoiceLine] | None = _items()


class ThirdPartyPayment(_Model):
    """XRechnung extension BG-DEX-09: an amount collected for a third party (added to BT-115, BR-DEX-09)."""
    paymentType: Text        # BT-DEX-001
    amount: Number           # BT-DEX-002
    description: Text        # BT-DEX-003


class ProcessControl(_Model):
    businessProcessType: Text | None = None
    specificationIdentifier: Text | None = None


class PrecedingInvoiceReference(_Model):
    documentReference: Text
    issueDate: IsoDate | None = None


class InvoiceNote(_Model):
    """One more invoice note (BG-1 is 0..n): the fields of the first, `invoiceNote` and its subject code."""
    invoiceNote: LongText
    invoiceNoteSubjectCode: Text | None = None


class AdditionalSupportingDocument(_Model):
    reference: Text | None = None
    description: LongText | None = None
    externalLocation: Text | None = None
    attachedDocument: Binary | None = None
    attachedDocumentMimeType: Text | None = None
    attachedDocumentFilename: Text | None = None   # extension BT-125-2


class Invoice(_Model):
    invoiceNumber: Text
    issueDate: IsoDate
    invoiceTypeCode: InvoiceTypeCode
    currencyCode: CurrencyCode
    seller: Seller
    buyer: Buyer
    paymentInstructions: PaymentInstructions | None = None   # API_REQUIRED
    documentTotals: DocumentTotals
    vatBreakdowns: list[VatBreakdown] = Field(max_length=MAX_ITEMS)
    invoiceLines: list[InvoiceLine] = Field(min_length=1, max_length=MAX_LINES)
    invoiceSubType: Text | None = None
    valueAddedTaxPointDate: IsoDate | None = None
    invoiceCurrencyCode: CurrencyCode | None = None
    vatAccountingCurrencyCode: CurrencyCode | None = None
    buyerReference: Text | None = None
    projectReference: Text | None = None
    contractReference: Text | None = None
    purchaseOrderReference: Text | None = None
    salesOrderReference: Text | None = None
    despatchAdviceReference: Text | None = None
    receivingAdviceReference: Text | None = None
    tenderOrLotReference: Text | None = None
    invoicedObjectIdentifier: Text | None = None
    paymentTerms: LongText | None = None
    invoiceNote: LongText | None = None
    processControl: ProcessControl | None = None
    precedingInvoiceReference: PrecedingInvoiceReference | None = None
    payee: Payee | None = None
    sellerTaxRepresentativeParty: SellerTaxRepresentativeParty | None = None
    deliveryInformation: DeliveryInformation | None = None
    invoicingPeriod: Period | None = None
    documentLevelAllowances: list[DocumentLevelAllowance] | None = _items()
    documentLevelCharges: list[DocumentLevelCharge] | None = _items()
    additionalSupportingDocuments: list[AdditionalSupportingDocument] | None = _items()
    paymentDueDate: IsoDate | None = None          # extension BT-9
    invoiceNoteSubjectCode: Text | None = None     # extension BT-21
    additionalInvoiceNotes: list[InvoiceNote] | None = _items()       # extension: BG-1 is 0..n
    additionalPrecedingInvoiceReferences: list[PrecedingInvoiceReference] | None = _items()   # extension: BG-3
    valueAddedTaxPointDateCode: TaxPointDateCode | None = None   # extension BT-8 (excludes BT-7: BR-CO-03)
    invoicedObjectIdentifierSchemeId: Text | None = None         # extension BT-18-1
    buyerAccountingReference: Text | None = None                 # extension BT-19
    thirdPartyPayments: list[ThirdPartyPayment] | None = _items()   # extension BG-DEX-09 (XRechnung extension)


# Fields service spec section 2 requires of a JSON request that EN 16931 leaves optional (BG-16 payment
# instructions, BT-41 seller contact point, BT-35 / BT-37 address line 1 and city...). A request must send them
# (`validate_request` says REQUIRED, the JSON schema lists them as required); a document read from CII / UBL may lack
# them, and converting it needs none of them (`validate_request(..., reading=True)`).
API_REQUIRED: dict[type, tuple[str, ...]] = {
    PostalAddress: ("addressLine1", "city"),
    SellerContact: ("contactPoint",),
    Invoice: ("paymentInstructions",),
    DirectDebit: ("mandateReferenceIdentifier",),   # BT-89
    PaymentInstructions: ("meansCode",),            # BT-81
}


def _api_required_errors(data: Any) -> list[ErrorDetail]:
    """REQUIRED entries for the `API_REQUIRED` fields a request (raw JSON) leaves out or sends as null."""
    invoice = data.get("invoice") if isinstance(data, dict) else None
    if not isinstance(invoice, dict):
        return []
    found: list[tuple[str, Any, type]] = [("invoice", invoice, Invoice)]
    for party, field_name in (("seller", "postalAddress"), ("buyer", "postalAddress"),
                              ("sellerTaxRepresentativeParty", "postalAddress"), ("deliveryInformation", "address")):
        owner = invoice.get(party)
        if isinstance(owner, dict) and isinstance(owner.get(field_name), dict):
            found.append((f"invoice.{party}.{field_name}", owner[field_name], PostalAddress))
    seller, payment = invoice.get("seller"), invoice.get("paymentInstructions")
    if isinstance(seller, dict) and isinstance(seller.get("contact"), dict):
        found.append(("invoice.seller.contact", seller["contact"], SellerContact))
    if isinstance(payment, dict):
        found.append(("invoice.paymentInstructions", payment, PaymentInstructions))
    if isinstance(payment, dict) and isinstance(payment.get("directDebit"), dict):
        found.append(("invoice.paymentInstructions.directDebit", payment["directDebit"], DirectDebit))
    return [detail("REQUIRED", f"{path}.{name}", "is required") for path, obj, cls in found
            for name in API_REQUIRED[cls] if obj.get(name) is None]


class GenerationConfig(_Model):
    spec: Spec | None = None
    syntax: Syntax
    version: Text | None = None
    profile: ProfileName | None = None
    rules: Rules | None = None                      # extension: /zugferd on national rules too (fr-ctc)
    metadataLanguage: MetadataLanguage | None = None
    calculationMode: CalculationMode = "AUTO"      # extension: AUTO fills in absent derived amounts, MANUAL none
    strict: bool = Field(False, strict=True)       # extension: content-check findings refuse the request (400)


class InvoiceRequest(_Model):
    invoice: Invoice
    config: GenerationConfig


_CONFIG_TEXT = {
    "strict": "Extension. The checks the official rules miss (IBAN, BIC, SEPA creditor id, EU VAT ids, Leitweg-ID, "
              "due date, duplicate line ids, attachment mime code; codes CHECK-...) run on every request. false "
              "(default): their findings are warnings (response header X-Content-Warnings) and the document is "
              "generated. true: any finding refuses the request with 400 INVALID_INPUT, one entry per finding with "
              "its code, JSON field and business term.",
    "spec": "Specification: xrechnung, en16931 or zugferd (extension: fr-ctc, peppol), case-insensitive; must match "
            "the endpoint, which is the default.",
    "rules": "Extension. ZUGFeRD endpoint only: national rules the embedded invoice must pass as well. fr-ctc: "
             "France's reform (FNFE-MPE BR-FR Flux 2): the French data is required (400 with field paths, as on "
             "POST /v1/invoice/fr-ctc) and the invoice is validated on BR-FR besides its profile rules (422).",
    "syntax": "XML syntax: CII or UBL (case-insensitive). ZUGFeRD requires CII, Peppol UBL.",
    "version": "Version of the specification to generate, omitted: the latest active. XML endpoints: a rule pack "
               "version of the endpoint's specification installed on the server (GET /readyz lists the active "
               "ones); ZUGFeRD: the Factur-X rules release (1.09; `Factur-X 1.09` and a report's version are "
               "accepted too). Any other value: 400 INVALID_INPUT with an entry on config.version.",
    "profile": "ZUGFeRD / Factur-X profile (MINIMUM, BASIC WL, BASIC, EN16931 = default, EXTENDED, XRECHNUNG; "
               "case-insensitive, `-` or `_` for the space). Only on the ZUGFeRD endpoint: on the XML endpoints "
               "(xrechnung, en16931) any value is refused with 400 INVALID_INPUT, an entry on config.profile (the "
               "service specification does not say; like metadataLanguage there, it could have no effect).",
    "metadataLanguage": "PDF presentation language: en (default) or de, an ISO 639-1 code, case-insensitive, "
                        "without whitespace around it. Only on the ZUGFeRD endpoint; any value is rejected with 400 "
                        "INVALID_INPUT on the XML endpoints, and so are other codes, region-qualified codes (de-DE) "
                        "and codes with whitespace (` de`).",
    "calculationMode": "Extension. AUTO (default): the service fills in every derived amount the request leaves "
                       "out (line net amounts, allowance/charge amounts from percentages, VAT breakdown, document "
                       "totals) and never overwrites one it sends: a sent line net amount, allowance/charge amount, "
                       "VAT breakdown amount or document total is kept as sent, and the amounts derived from it are "
                       "computed from the sent value (e.g. the sum of line net amounts BT-106 from the sent line "
                       "amounts, BT-117 from a sent BT-116, BT-115 from a sent BT-112 and the prepaid and rounding "
                       "amounts). The official rules then judge the result: sent amounts that contradict each other "
                       "give 422 VALIDATION_FAILED with the rule ids, and where the rule maps to a sent amount the "
                       "entry names the field with the sent value (rejectedValue) and the value computed from the "
                       "other amounts. A sent VAT breakdown whose category and rate no line, allowance or charge "
                       "has is left out when it sends no amount or only zero amounts (it changes no total). "
                       "MANUAL: amounts are used as sent and the official rules judge them. Case-insensitive.",
}


# Where the service specification is silent, what we do (added to the field's description;
# tests/test_spec_conformance.py holds each against the service).
_SILENT_SPEC_TEXT = {
    (Invoice, "vatAccountingCurrencyCode"): (
        "When it differs from currencyCode, the VAT total in this currency (BT-111, BR-53) cannot be computed without "
        "an exchange rate and section 2.6 has no field for it: send the extension field "
        "documentTotals.taxTotalAmountInAccountingCurrency, else 400 INVALID_INPUT with a REQUIRED entry on it."),
    (InvoiceLine, "priceDetails"): (
        "Section 2.7 lists it and its fields as optional, but EN 16931 requires the item net price (BT-146, BR-26) on "
        "every line: send priceDetails.netPrice (or grossPrice, less priceDiscount where sent, which AUTO then takes as "
        "the net price). Without it, `{}` or no priceDetails is refused: 400 INVALID_INPUT, REQUIRED on "
        "priceDetails.netPrice (BT-146), when AUTO needs it to compute netAmount and always in MANUAL mode; 422 "
        "VALIDATION_FAILED BR-26 on the same field when AUTO is sent netAmount."),
}


_XRECHNUNG_EXTENSION_TEXT = (
    " XRechnung extension: accepted on /v1/invoice/xrechnung with invoice.processControl.specificationIdentifier "
    f"{specs.XRECHNUNG_EXTENSION_ID} and config.syntax UBL (XRechnung binds it in UBL only); else 400.")


class KeptAmount(NamedTuple):
    """An amount AUTO kept as sent although it computes another value from the other amounts."""
    field: str            # JSON path in the request
    sent: Decimal
    computed: Decimal




def _walk(model: type[BaseModel], path: str, out: dict, outer: tuple = ()) -> None:
    """(model, field) -> the JSON paths it is used at; a model nested in itself (sub-invoice lines) once."""
    for name, field in model.model_fields.items():
        child = f"{path}.{name}" if path else name
        inner = field.annotation
        many = name in ARRAY_ITEMS
        out.setdefault((model, name), []).append(child + ("[]" if many else ""))
        for arg in typing.get_args(inner) or (inner,):
            for sub in typing.get_args(arg) or (arg,):
                if isinstance(sub, type) and issubclass(sub, BaseModel) and sub not in outer + (model,):
                    _walk(sub, child + ("[]" if many else ""), out, outer + (model,))


_DESCRIPTIONS: dict | None = None


def field_descriptions() -> dict[tuple[type, str], str]:
    """(model class, field) -> description naming the business term(s) of every place the class is used."""
    global _DESCRIPTIONS
    if _DESCRIPTIONS is None:
        paths: dict = {}
        _walk(InvoiceRequest, "", paths)
        _DESCRIPTIONS = {}
        for key, where in paths.items():
            rows = [BY_PATH[p] for p in where if p in BY_PATH]
            if key[0] is GenerationConfig and key[1] in _CONFIG_TEXT:
                _DESCRIPTIONS[key] = _CONFIG_TEXT[key[1]]
                continue
            if rows:
                bts = ", ".join(dict.fromkeys(f"{r.bt} ({r.json_path})" if len(rows) > 1 else r.bt
                                              for r in rows if r.bt))
                text = rows[0].name.split(" (")[0] + (f" - {bts}" if bts else "") + "."
                if rows[0].extension:
                    text += " Extension field (not in service spec section 2)."
                if (rows[0].bt or "").startswith(("BG-DEX", "BT-DEX")):
                    text += _XRECHNUNG_EXTENSION_TEXT
                _DESCRIPTIONS[key] = text
            if key in _SILENT_SPEC_TEXT:
                _DESCRIPTIONS[key] = f"{_DESCRIPTIONS.get(key, '')} {_SILENT_SPEC_TEXT[key]}".strip()
    return _DESCRIPTIONS


# ---- parsing a request body ----------------------------------------------------------------------------------

def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a valid JSON number")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"duplicate key {dup!r}")
    return obj


def loads(body: bytes | str) -> Any:
    """JSON with fractions as Decimal, NaN/Infinity and duplicate keys rejected (ValueError)."""
    text = body.decode("utf-8") if isinstance(body, (bytes, bytearray)) else body
    return json.loads(text, parse_float=Decimal, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)


def json_path(loc: tuple) -> str | None:
    """pydantic location -> `invoice.invoiceLines[2].quantity`."""
    path = ""
    for step in loc:
        name = str(step)[:MAX_KEY]   # an unknown key is echoed; a hostile one is cut
        path += f"[{step}]" if isinstance(step, int) else (f".{name}" if path else name)
    return path or None


_PYDANTIC_CODES = {
    "missing": "REQUIRED",
    "extra_forbidden": "UNKNOWN_FIELD",
    "string_too_long": "TOO_LONG",
    "too_long": "TOO_LONG",
    "too_short": "INVALID_VALUE",
}


def rejected_value(value: Any) -> Any:
    """A rejected value as it can be shown in the error body: the JSON type it was sent as (spec 2.11 "as sent"),
    numbers as the Decimals they were read as (written digit for digit, see request_json.dumps), texts over 200
    characters and objects or lists over 500 cut."""
    if isinstance(value, Decimal):
        return value if value.is_finite() else str(value)
    if isinstance(value, str) and len(value) > 200:
        return value[:200] + "..."
    if isinstance(value, (dict, list)):   # small ones only, as a copy of plain JSON data
        try:
            text = dumps(value)
        except (TypeError, ValueError, RecursionError):
            return None
        return loads(text) if len(text) <= 500 else None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def term_label(field: str | None) -> str:
    """"Name, BT-n" (or "BT-n") of a JSON field from the term table; "" for a field without a business term."""
    bt = business_term(field)
    term = term_for(field)
    return f"{term.name}, {bt}" if term and bt else (bt or "")


def detail(code: str, field: str | None, message: str, rejected: Any = None) -> ErrorDetail:
    """An ErrorDetail whose message and businessTerm come from the term table."""
    label = term_label(field)
    prefix = f"{field}" + (f" ({label})" if label else "")
    return ErrorDetail(code=code, field=field, businessTerm=business_term(field),
                       rejectedValue=rejected_value(rejected), message=f"{prefix}: {message}" if field else message)


_JSON_KINDS = {"model_type": "must be a JSON object", "dict_type": "must be a JSON object",
               "list_type": "must be a JSON array"}


def from_pydantic(err: ValidationError, make_detail=None) -> list[ErrorDetail]:
    """pydantic's errors as ErrorDetails, each made by `make_detail(code, field, message, rejected)` (default:
    `detail`, which names the field's business term; the status messages' model names its MDT term)."""
    make_detail = make_detail or detail
    details = []
    for e in err.errors(include_url=False):
        kind = e["type"]
        code = kind if kind.isupper() else _PYDANTIC_CODES.get(kind, "INVALID_TYPE" if kind.endswith("_type")
                                                                else "INVALID_VALUE")
        field = json_path(tuple(e["loc"]))
        msg = e["msg"]
        if kind == "missing":
            msg, rejected = "is required", None
        elif kind == "extra_forbidden":
            msg, rejected = "is not a field of this object (unknown field)", e.get("input")
        elif kind in _JSON_KINDS:   # pydantic names its Python class ("instance of GenerationConfig")
            msg, rejected = _JSON_KINDS[kind], e.get("input")
        else:
            rejected = e.get("input")
        details.append(make_detail(code, field, msg[:1].lower() + msg[1:], rejected))
    return details


def _version_error(version: Any, endpoint_spec: str, versions: tuple[str, ...] | None) -> ErrorDetail | None:
    """config.version: on /zugferd a Factur-X rules release (specs.facturx_release), on the XML endpoints one of
    `versions` (the caller's rule packs; None = not checked here). Unknown -> an entry on config.version."""
    if version is None or not isinstance(version, str):
        return None  # absent, or the model reports the wrong type
    if endpoint_spec == "zugferd":
        if specs.facturx_release(version) is not None:
            return None
        versions = specs.VERSIONS
    elif versions is None or version in versions:
        return None
    return detail("UNSUPPORTED_VERSION", "config.version",
                  f"is not a {endpoint_spec} version this server generates; supported: "
                  f"{', '.join(versions) or 'none'}", version)


def _endpoint_errors(config: Any, endpoint_spec: str, versions: tuple[str, ...] | None = None) -> list[ErrorDetail]:
    """Config checks that need the endpoint. They read the raw config so that they are reported together with
    any other invalid field (the model may have failed elsewhere)."""
    if not isinstance(config, dict):
        return []
    errors = []
    spec, language, syntax = config.get("spec"), config.get("metadataLanguage"), config.get("syntax")
    if isinstance(spec, str) and spec.strip().lower() in SPECS and spec.strip().lower() != endpoint_spec:
        errors.append(detail("INVALID_VALUE", "config.spec",
                             f"contradicts the endpoint, which generates {endpoint_spec}", spec))
    if language is not None and endpoint_spec in XML_SPECS:
        errors.append(detail("INVALID_VALUE", "config.metadataLanguage",
                             "applies to PDF output only and is not accepted on the XML endpoints", language))
    if config.get("profile") is not None and endpoint_spec in XML_SPECS:
        errors.append(detail("INVALID_VALUE", "config.profile",
                             "names a ZUGFeRD / Factur-X profile and is not accepted on the XML endpoints",
                             config.get("profile")))
    if config.get("rules") is not None and endpoint_spec != "zugferd":
        errors.append(detail("INVALID_VALUE", "config.rules",
                             "chooses national rules for a ZUGFeRD PDF; on the XML endpoints the path names the "
                             "rules (POST /v1/invoice/fr-ctc)", config.get("rules")))
    version_error = _version_error(config.get("version"), endpoint_spec, versions)
    if version_error is not None:
        errors.append(version_error)
    if endpoint_spec == "zugferd" and isinstance(syntax, str) and syntax.strip().upper() == "UBL":
        errors.append(detail("INVALID_VALUE", "config.syntax", "ZUGFeRD embeds CII: syntax must be CII", syntax))
    return errors


def _pdf_size_errors(invoice: Any, endpoint_spec: str) -> list[ErrorDetail]:
    """The readable page of a ZUGFeRD invoice is laid out line by line (~10 ms each): past the configured number
    of lines the request is refused up front instead of running into the worker timeout."""
    lines = invoice.get("invoiceLines") if isinstance(invoice, dict) else None
    limit = get_settings().max_pdf_lines
    if endpoint_spec != "zugferd" or not isinstance(lines, list) or len(lines) <= limit:
        return []
    return [detail("TOO_MANY_LINES", "invoice.invoiceLines",
                   f"a ZUGFeRD PDF holds at most {limit} invoice lines (EINVOICE_MAX_PDF_LINES); the XML endpoints "
                   f"(/v1/invoice/en16931, /v1/invoice/xrechnung) take up to {MAX_LINES}", len(lines))]


def _context_errors(req: InvoiceRequest, endpoint_spec: str, reading: bool = False) -> list[ErrorDetail]:
    """Checks that need several fields at once (after the model accepted each of them)."""
    errors = []
    cfg, inv = req.config, req.invoice
    if inv.invoiceCurrencyCode is not None and inv.invoiceCurrencyCode != inv.currencyCode:
        errors.append(detail("INVALID_VALUE", "invoice.invoiceCurrencyCode",
                             f"must equal currencyCode ({inv.currencyCode}); both carry BT-5",
                             inv.invoiceCurrencyCode))
    if (inv.vatAccountingCurrencyCode not in (None, inv.currencyCode)
            and inv.documentTotals.taxTotalAmountInAccountingCurrency is None):
        errors.append(detail("REQUIRED", "invoice.documentTotals.taxTotalAmountInAccountingCurrency",
                             "is required when vatAccountingCurrencyCode differs from currencyCode (BR-53): "
                             "the VAT total in the accounting currency cannot be computed without an exchange rate "
                             "(an extension field: DocumentTotals in the service specification has none for BT-111)"))
    errors += _additional_occurrence_errors(inv)
    if inv.additionalPrecedingInvoiceReferences and cfg.syntax == "CII":
        errors.append(detail("INVALID_VALUE", "invoice.additionalPrecedingInvoiceReferences",
                             "CII (D16B) carries one preceding invoice reference (BG-3); several need syntax UBL",
                             [r.documentReference for r in inv.additionalPrecedingInvoiceReferences]))
    seen: dict = {}
    for i, b in enumerate(inv.vatBreakdowns):   # one breakdown per category and rate (O: per category)
        if b.vatCategoryRate is None and b.vatCategoryCode != "O":   # "not subject to VAT" may state no rate
            errors.append(detail("REQUIRED", f"invoice.vatBreakdowns[{i}].vatCategoryRate", "is required"))
            continue
        key = (b.vatCategoryCode, None if b.vatCategoryCode == "O" else b.vatCategoryRate.normalize())
        if key in seen:
            errors.append(detail("INVALID_VALUE", f"invoice.vatBreakdowns[{i}]",
                                 f"repeats the VAT breakdown vatBreakdowns[{seen[key]}] (same category and rate)",
                                 {"vatCategoryCode": b.vatCategoryCode, "vatCategoryRate": b.vatCategoryRate}))
        seen.setdefault(key, i)
    if not reading:
        errors += _rates_without_place(inv) + _attachment_errors(inv)
    spec_id = inv.processControl.specificationIdentifier if inv.processControl else None
    if spec_id is not None:
        problem = specification_id_problem(spec_id.strip(), endpoint_spec, cfg.profile)
        if problem:
            errors.append(detail("INVALID_VALUE", "invoice.processControl.specificationIdentifier", problem, spec_id))
    if endpoint_spec == "peppol":
        errors += [detail(*requirement) for requirement in peppol.requirements(inv, cfg, reading)]
    return (errors + _extension_errors(inv, cfg, endpoint_spec, (spec_id or "").strip())
            + _line_hierarchy_errors(inv, cfg, endpoint_spec, (spec_id or "").strip()))


_BASE64_SPACE = re.compile(r"[ \t\r\n]+")


def _attachment_errors(inv: Invoice) -> list[ErrorDetail]:
    """An attached document (BT-125) that is not base64 as xs:base64Binary defines it (the alphabet, padding, zero
    bits after the last byte; XML whitespace allowed): the XSD of either syntax refuses the document, as Xerces does
    (libxml2, which our XSD check runs on, lets it pass), and the receiver cannot open it."""
    errors = []
    for i, doc in enumerate(inv.additionalSupportingDocuments or []):
        text = _BASE64_SPACE.sub("", doc.attachedDocument or "")
        try:
            canonical = bool(text) and base64.b64encode(base64.b64decode(text, validate=True)).decode() == text
        except (binascii.Error, ValueError):
            canonical = False
        if doc.attachedDocument is not None and not canonical:
            errors.append(detail("INVALID_VALUE", f"invoice.additionalSupportingDocuments[{i}].attachedDocument",
                                 "is not valid base64 (RFC 4648 alphabet A-Z a-z 0-9 + /, padded with = to a multiple "
                                 "of 4 characters): send the file's bytes base64-encoded, or a link in "
                                 "externalLocation", doc.attachedDocument))
    return errors


def _rates_without_place(inv: Invoice) -> list[ErrorDetail]:
    """A VAT rate other than 0 on a line or a document allowance or charge of category O: "not subject to VAT" has
    no rate (BR-O-05..07), so it is not written; a rate sent there says the category is wrong, and dropping it would
    hide that. (The service specification requires a line's vatRate: 0 is the rate of category O.)"""
    def walk(lines, path):
        for i, line in enumerate(lines or []):
            yield line.lineVatInformation, f"{path}[{i}].lineVatInformation.vatRate"
            yield from walk(line.subInvoiceLines, f"{path}[{i}].subInvoiceLines")

    places = list(walk(inv.invoiceLines, "invoice.invoiceLines"))
    places += [(item, f"invoice.{kind}[{j}].vatRate") for kind in ("documentLevelAllowances", "documentLevelCharges")
               for j, item in enumerate(getattr(inv, kind) or [])]
    return [detail("INVALID_VALUE", field, "must be 0 or left out for category O (not subject to VAT), which has no "
                   "VAT rate (BR-O-05..07); a rate says the category is another", item.vatRate)
            for item, field in places
            if item is not None and item.vatCategoryCode == "O" and item.vatRate not in (None, 0)]


def _line_hierarchy_errors(inv: Invoice, cfg: GenerationConfig, endpoint_spec: str,
                           spec_id: str) -> list[ErrorDetail]:
    """Factur-X EXTENDED's line hierarchy (BT-X-304, BT-X-8) belongs to a CII that says EXTENDED (BT-24, or
    config.profile on the zugferd endpoint): the EN 16931 rules would count group lines into every total, and UBL
    has no place for it (the CEN rules warn of cac:SubInvoiceLine, UBL-CR-646)."""
    used = [f"invoice.invoiceLines[{i}].{name}" for i, line in enumerate(inv.invoiceLines)
            for name in ("parentLineIdentifier", "lineStatusReasonCode") if getattr(line, name) is not None]
    if not used:
        return []
    profile = specs.profile_for_guideline(spec_id) if spec_id else None
    if endpoint_spec == "zugferd" and cfg.profile:
        try:
            profile = specs.profile_named(cfg.profile)
        except ApiError:   # an unknown profile is reported by the config checks
            profile = None
    if cfg.syntax == "CII" and profile is not None and profile.name == "EXTENDED":
        return []
    problem = ("is Factur-X EXTENDED content: accepted in CII whose invoice.processControl.specificationIdentifier "
               f"is {specs.PROFILES['EXTENDED'].guideline_id}, or on the zugferd endpoint with config.profile EXTENDED")
    return [detail("INVALID_VALUE", path, problem) for path in used]


MAX_SUB_LINE_DEPTH = 10   # sub-invoice lines below sub-invoice lines (the official cases nest 3 deep)


def _extension_errors(inv: Invoice, cfg: GenerationConfig, endpoint_spec: str, spec_id: str) -> list[ErrorDetail]:
    """The XRechnung extension's groups (sub-invoice lines BG-DEX-01, third-party payments BG-DEX-09) belong to
    documents that say so in BT-24, and XRechnung binds them in UBL only: its CII extension scenario runs the EN 16931
    rules, which sum every CII line into BT-106 (BR-CO-10) and BT-115 without third-party payments (BR-CO-16), and
    D16B has no place for a payment's type and description (XRechnung's own BR-DEX-15 warns of CII sub-lines)."""
    used = [f"invoice.invoiceLines[{i}].subInvoiceLines" for i, line in enumerate(inv.invoiceLines)
            if line.subInvoiceLines]
    if inv.thirdPartyPayments:
        used.append("invoice.thirdPartyPayments")
    if not used:
        return []
    if endpoint_spec != "xrechnung" or spec_id != specs.XRECHNUNG_EXTENSION_ID:
        problem = ("is part of the XRechnung extension: accepted on the xrechnung endpoint only, with "
                   f"invoice.processControl.specificationIdentifier {specs.XRECHNUNG_EXTENSION_ID}")
    elif cfg.syntax == "CII":
        problem = ("XRechnung binds the extension's sub-invoice lines and third-party payments in UBL only (in CII "
                   "the EN 16931 rules would count sub-lines into BT-106 and refuse the payments in BT-115): "
                   "send config.syntax UBL")
    else:
        return _sub_line_depth_errors(inv)
    return [detail("INVALID_VALUE", path, problem) for path in used]


def _sub_line_depth_errors(inv: Invoice) -> list[ErrorDetail]:
    errors: list[ErrorDetail] = []

    def walk(line: InvoiceLine, path: str, depth: int) -> None:
        for j, sub in enumerate(line.subInvoiceLines or []):
            where = f"{path}.subInvoiceLines[{j}]"
            if depth > MAX_SUB_LINE_DEPTH:
                errors.append(detail("OUT_OF_RANGE", where, f"sub-invoice lines nest at most {MAX_SUB_LINE_DEPTH} "
                                     "levels deep"))
                return
            walk(sub, where, depth + 1)

    for i, line in enumerate(inv.invoiceLines):
        walk(line, f"invoice.invoiceLines[{i}]", 1)
    return errors[:MAX_ERRORS]


# Extension arrays that carry the further occurrences of a business term section 2 has one field for, and that
# field (same parent). The single field is the first occurrence: an array without it is refused, not promoted.
ADDITIONAL_OCCURRENCES = {
    "additionalInvoiceNotes": "invoiceNote",
    "additionalPrecedingInvoiceReferences": "precedingInvoiceReference",
    "additionalIdentifiers": "identifier",
    "additionalCreditTransfers": "creditTransfer",
    "additionalClassifiedIdentifiers": "classifiedIdentifier",
}


def _additional_occurrence_errors(inv: Invoice) -> list[ErrorDetail]:
    owners = [("invoice", inv), ("invoice.seller", inv.seller), ("invoice.paymentInstructions", inv.paymentInstructions)]
    owners += [(f"invoice.invoiceLines[{i}].itemInformation", line.itemInformation)
               for i, line in enumerate(inv.invoiceLines) if line.itemInformation.additionalClassifiedIdentifiers]
    errors = []
    for path, owner in owners:
        for extra, first in ADDITIONAL_OCCURRENCES.items():
            if getattr(owner, extra, None) and getattr(owner, first) is None:
                errors.append(detail("REQUIRED", f"{path}.{first}",
                                     f"is required when {extra} is sent (they are its further occurrences)"))
    return errors


def specification_id_problem(spec_id: str, endpoint_spec: str, profile: str | None) -> str | None:
    """BT-24 is set by the endpoint (and profile); a sent value may only repeat it or, on en16931, name a
    specification that builds on EN 16931 (`urn:cen.eu:en16931:2017#compliant#...` / `#conformant#...`, e.g. Peppol
    BIS: the EN 16931 rules judge such a document, and a document read from elsewhere keeps its BT-24) other than
    XRechnung, which has its own endpoint and rules. France's reform (fr-ctc) takes the CEN identifier only."""
    if endpoint_spec == "fr-ctc" and spec_id != specs.EN16931_ID:
        return f"contradicts the fr-ctc endpoint, whose specification identifier is {specs.EN16931_ID}"
    if endpoint_spec == "en16931" and spec_id != specs.EN16931_ID and (
            not spec_id.startswith(specs.EN16931_ID + "#") or spec_id.startswith(specs.XRECHNUNG_ID_PREFIX)):
        return (f"contradicts the en16931 endpoint, whose specification identifier is {specs.EN16931_ID} (or one "
                "that starts with it and '#' and is no XRechnung identifier)")
    if endpoint_spec == "peppol" and spec_id not in peppol.PROCESSES:
        return ("contradicts the peppol endpoint, whose specification identifier is "
                f"{peppol.BILLING_ID} (self-billing: {peppol.SELF_BILLING_ID})")
    if endpoint_spec == "xrechnung" and not spec_id.startswith(specs.XRECHNUNG_ID_PREFIX):
        return ("contradicts the xrechnung endpoint, whose specification identifier starts with "
                f"{specs.XRECHNUNG_ID_PREFIX}")
    if endpoint_spec == "zugferd":
        try:
            wanted = specs.profile_named(profile)
        except ApiError:
            return None  # the unknown profile is reported where the profile is resolved
        if specs.profile_for_guideline(spec_id) != wanted:
            return f"contradicts the ZUGFeRD profile {wanted.name}, whose identifier is {wanted.guideline_id}"
    return None


def parse_request(body: bytes, endpoint_spec: str, versions: tuple[str, ...] | None = None) -> InvoiceRequest:
    """Request body -> InvoiceRequest, or ApiError 400 INVALID_INPUT listing every problem.

    `endpoint_spec` is xrechnung, en16931 or zugferd; `config.spec` defaults to it. `versions`: the versions
    config.version may name on an XML endpoint (the flow knows the rule packs; None = not checked here); on
    zugferd the Factur-X release is checked always."""
    if endpoint_spec not in SPECS:
        raise ValueError(f"unknown endpoint spec {endpoint_spec!r}")
    if not body or not body.strip():
        raise invalid_input("The request body is empty.", [detail("EMPTY_BODY", None, "the request body is empty; "
                                                                  "send an InvoiceRequest JSON object")])
    try:
        data = loads(body)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise invalid_input("The request body is not valid JSON.",
                            [detail("MALFORMED_JSON", None, f"malformed JSON: {exc}")])
    return validate_request(data, endpoint_spec, versions)


def _refuse_fields(exc: ValidationError, endpoint_errors: list[ErrorDetail]) -> NoReturn:
    errors = from_pydantic(exc)
    reported = {e.field for e in errors}
    errors += [e for e in endpoint_errors if e.field not in reported]
    shown = f" (the first {MAX_ERRORS} are listed)" if len(errors) > MAX_ERRORS else ""
    raise invalid_input(f"The request has {len(errors)} invalid field(s){shown}.", errors[:MAX_ERRORS])


def _as_read(data: dict, exc: ValidationError) -> InvoiceRequest | None:
    """An invoice read from a document whose only faults are a JSON request's bounds (MAX_TEXT / MAX_LONG_TEXT
    characters, MAX_FRACTION_DIGITS decimal places), which guard the API and which EN 16931 does not set: validated
    with a stand-in within the bounds for each such value, then given each value back as the document states it (the
    document itself is bounded by its upload). None when anything else is wrong. Only this rare retry pays for it:
    the validation of every request stays as it is."""
    stand_ins = []
    for e in exc.errors(include_url=False):
        value, loc = e.get("input"), tuple(e["loc"])
        if e["type"] == "string_too_long" and isinstance(value, str):
            try:
                _clean_text(value)   # (the stand-in is checked as text; the whole value must pass too)
            except PydanticCustomError:
                return None
            stand_ins.append((loc, value, value[:e["ctx"]["max_length"]]))
        elif e["type"] == "OUT_OF_RANGE" and e["msg"] == FRACTION_BOUND and isinstance(value, Decimal):
            # away from zero onto the grid: a value beyond a range's bound (0, 100) stays beyond it
            stand_ins.append((loc, value, value.quantize(_SMALLEST, rounding=ROUND_UP)))
        else:
            return None
    stood = copy.deepcopy(data)
    try:
        for loc, _, stand_in in stand_ins:
            _set(stood, loc, stand_in, lambda node, key, v: node.__setitem__(key, v))
        req = InvoiceRequest.model_validate(stood)
        for loc, value, _ in stand_ins:
            _set(req, loc, value, lambda node, key, v: (
                node.__setitem__(key, v) if isinstance(key, int) else setattr(node, key, v)))
    except (ValidationError, LookupError, AttributeError, TypeError):   # (a place the walk cannot take back)
        return None
    return req


def _set(root: Any, loc: tuple, value: Any, put) -> None:
    node = root
    for key in loc[:-1]:
        node = node[key] if isinstance(key, int) or isinstance(node, dict) else getattr(node, key)
    put(node, loc[-1], value)


# Invoice lines validated at a time within a request's time budget (~50 ms of pydantic's work on a quiet core)
LINES_AT_A_TIME = 2_000
_LINES = TypeAdapter(list[InvoiceLine])


def _model_validate(data: Any) -> InvoiceRequest:
    """InvoiceRequest.model_validate(data), the budget asked every LINES_AT_A_TIME invoice lines: pydantic's
    validation of a whole request cannot be stopped (100,000 lines, 18.5 MB of JSON: 3.5 s of CPU, three times that
    on a busy host). Within a request the lines go first, a slice at a time; a slice that passes is handed to the
    validation of the whole as models (not validated again: 4 ms for 100,000 lines), one that fails as it came, so
    that the whole's validation reports every error at its place, as before."""
    invoice = data.get("invoice") if isinstance(data, dict) else None
    lines = invoice.get("invoiceLines") if isinstance(invoice, dict) else None
    if (budget.remaining() is None or not isinstance(lines, list) or len(lines) <= LINES_AT_A_TIME
            or len(lines) > MAX_LINES):
        return InvoiceRequest.model_validate(data)
    staged = []
    for start in range(0, len(lines), LINES_AT_A_TIME):
        budget.check()
        part = lines[start:start + LINES_AT_A_TIME]
        try:
            staged += _LINES.validate_python(part)
        except ValidationError:
            staged += part
    budget.check()
    return InvoiceRequest.model_validate({**data, "invoice": {**invoice, "invoiceLines": staged}})


def validate_request(data: Any, endpoint_spec: str, versions: tuple[str, ...] | None = None,
                     reading: bool = False) -> InvoiceRequest:
    """Parsed JSON (Decimals for fractions) -> InvoiceRequest, or ApiError 400 INVALID_INPUT (`versions`: as in
    parse_request). `reading`: an invoice read from a document, which need not have the fields only a JSON request
    must send (`API_REQUIRED`) and may go beyond a JSON request's bounds of length and decimal places (`_as_read`)."""
    budget.check()
    if not isinstance(data, dict):
        raise invalid_input("The request body must be a JSON object.",
                            [detail("INVALID_TYPE", None, "the request body must be a JSON object (InvoiceRequest)",
                                    data)])
    endpoint_errors = (_endpoint_errors(data.get("config"), endpoint_spec, versions)
                       + _pdf_size_errors(data.get("invoice"), endpoint_spec))
    if not reading:
        endpoint_errors = _api_required_errors(data) + endpoint_errors
    try:
        req = _model_validate(data)
    except ValidationError as exc:
        req = _as_read(data, exc) if reading else None
        if req is None:
            _refuse_fields(exc, endpoint_errors)
    errors = endpoint_errors + _context_errors(req, endpoint_spec, reading)
    if endpoint_spec == "fr-ctc" or (endpoint_spec == "zugferd" and req.config.rules == "fr-ctc"):
        errors += france.request_errors(req, detail)
    if errors:
        raise invalid_input(f"The request has {len(errors)} invalid field(s).", errors)
    if req.config.spec is None:
        req.config.spec = endpoint_spec
    return req
