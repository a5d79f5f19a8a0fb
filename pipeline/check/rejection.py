"""A failed report of a document we generated -> 422 VALIDATION_FAILED, one entry per failed rule, pointing at the
JSON field and business term the rule maps to (the business-term table, `pipeline.invoice.terms`). When that field is
an amount AUTO kept as sent although the other amounts give another value (`kept`, from the calculation), the
entry names the field as sent, with the sent value (rejectedValue) and the computed one in the message."""
from __future__ import annotations

import re

from pipeline.check.report import ERROR, Issue, Report
from pipeline.errors import ApiError, ErrorDetail, validation_failed
from pipeline.invoice import terms
from pipeline.invoice.model import KeptAmount, rejected_value
from pipeline.invoice.specs import Profile

# Steps of a finding's XPath that number an array of the request, plain (`InvoiceLine[2]`), Saxon's
# (`*:InvoiceLine[namespace-uri()='…'][2]`) or an EQName (`Q{urn:…}InvoiceLine[2]`, the XRechnung packs').
_NS_PREDICATE = r"(?:\[namespace-uri\(\)='[^']*'\])?"
_ANY_PREDICATES = r"(?:\[[^\]]*\])*"
_PREFIX = r"(?:[\w*]+:|Q\{[^}]*\})?"
_LINE_STEP = {"CII": re.compile(r"IncludedSupplyChainTradeLineItem" + _NS_PREDICATE + r"\[(\d+)\]"),
              "UBL": re.compile(r"(?:InvoiceLine|CreditNoteLine)" + _NS_PREDICATE + r"\[(\d+)\]")}
# The VAT breakdown step (BG-23): the document-level trade tax in CII, the tax subtotal in UBL.
_BREAKDOWN_STEP = {"CII": re.compile(r"ApplicableHeaderTradeSettlement" + _ANY_PREDICATES + "/" + _PREFIX
                                     + r"ApplicableTradeTax" + _NS_PREDICATE + r"\[(\d+)\]"),
                   "UBL": re.compile(r"TaxSubtotal" + _NS_PREDICATE + r"\[(\d+)\]")}
# Allowances and charges share one element, allowances first (the stylesheets write them in the request's order).
_DOCUMENT_ALLOWANCE_CHARGE = {
    "CII": re.compile(r"ApplicableHeaderTradeSettlement" + _ANY_PREDICATES + "/" + _PREFIX
                      + r"SpecifiedTradeAllowanceCharge" + _NS_PREDICATE + r"\[(\d+)\]"),
    "UBL": re.compile(r"^/" + _PREFIX + r"(?:Invoice|CreditNote)" + _ANY_PREDICATES + "/" + _PREFIX
                      + r"AllowanceCharge" + _NS_PREDICATE + r"\[(\d+)\]")}
_LINE_ALLOWANCE_CHARGE = {
    "CII": re.compile(r"SpecifiedLineTradeSettlement" + _ANY_PREDICATES + "/" + _PREFIX
                      + r"SpecifiedTradeAllowanceCharge" + _NS_PREDICATE + r"\[(\d+)\]"),
    "UBL": re.compile(r"(?:InvoiceLine|CreditNoteLine)" + _ANY_PREDICATES + "/" + _PREFIX
                      + r"AllowanceCharge" + _NS_PREDICATE + r"\[(\d+)\]")}
_ARRAY_STEPS = (("invoiceLines[]", _LINE_STEP), ("vatBreakdowns[]", _BREAKDOWN_STEP))
_ALLOWANCE_CHARGE_ARRAYS = (("documentLevelAllowances[]", "documentLevelCharges[]", _DOCUMENT_ALLOWANCE_CHARGE),
                            ("invoiceLineAllowances[]", "invoiceLineCharges[]", _LINE_ALLOWANCE_CHARGE))


def _step(name: str) -> re.Pattern:
    """An XPath step of an element `name` (any prefix or EQName) with its position: `/ram:Name[2]`."""
    return re.compile(r"(?:^|/)" + _PREFIX + name + _NS_PREDICATE + r"\[(\d+)\]")


# Arrays whose items are the syntax's elements of one name, written in the request's order before any other element
# of that name (a supporting document before BT-17's and BT-18's referenced documents): item = position - 1.
_ITEM_STEPS = {
    "additionalSupportingDocuments[]": {"CII": _step("AdditionalReferencedDocument"),
                                        "UBL": _step("AdditionalDocumentReference")},
    "itemAttributes[]": {"CII": _step("ApplicableProductCharacteristic"), "UBL": _step("AdditionalItemProperty")},
    "thirdPartyPayments[]": {"UBL": _step("PrepaidPayment")},
}
_SUB_LINE_STEP = _step("SubInvoiceLine")   # the XRechnung extension's sub-lines (BG-DEX-01), UBL only
# The further occurrences of a term section 2 has one field for (model.ADDITIONAL_OCCURRENCES): the syntax writes the
# single field's element first and the array's items after it, so position k is the array's item k - 2.
_FURTHER_STEPS = (   # (single field, array, whether the single field is a leaf rather than an object, steps)
    ("invoiceNote", "additionalInvoiceNotes", True, {"CII": _step("IncludedNote"), "UBL": _step("Note")}),
    ("classifiedIdentifier", "additionalClassifiedIdentifiers", True,
     {"CII": _step("DesignatedProductClassification"), "UBL": _step("CommodityClassification")}),
    ("precedingInvoiceReference", "additionalPrecedingInvoiceReferences", False,
     {"CII": _step("InvoiceReferencedDocument"), "UBL": _step("BillingReference")}),
    ("creditTransfer", "additionalCreditTransfers", False,
     {"CII": _step("SpecifiedTradeSettlementPaymentMeans"), "UBL": _step("PaymentMeans")}),
)
# The seller's identifiers (BT-29: `identifier`, then `additionalIdentifiers`): UBL writes them in that order, CII
# those without a scheme (ram:ID) before those with one (ram:GlobalID, the D16B schema's order).
_SELLER_ID_STEP = {"CII": re.compile(r"SellerTradeParty" + _ANY_PREDICATES + "/" + _PREFIX + r"(ID|GlobalID)"
                                     + _NS_PREDICATE + r"\[(\d+)\]"),
                   "UBL": re.compile(r"AccountingSupplierParty" + _ANY_PREDICATES + "/" + _PREFIX + r"Party"
                                     + _ANY_PREDICATES + "/" + _PREFIX + r"PartyIdentification" + _NS_PREDICATE
                                     + r"\[(\d+)\]")}


GENERATED_FAILED = "The generated document failed validation "  # the 422 message's start


def rejection(report: Report, syntax: str, kept: dict[str, KeptAmount] | None = None,
              sent: dict | None = None, written=None) -> ApiError:
    """422 VALIDATION_FAILED listing every failed rule of a report (`kept`: the amounts the calculation of the
    request kept as sent, see `error_detail`; `sent`: the request JSON as sent, for rejectedValue; `written`: the
    calculated request the document was written from)."""
    content = as_json(written)
    errors = [error_detail(i, syntax, kept, sent, content) for i in report.issues if i.severity == ERROR]
    rules = ", ".join(dict.fromkeys(e.code for e in errors))
    return validation_failed(f"{GENERATED_FAILED}({report.version}): {rules}", errors)


def as_json(request) -> dict | None:
    """A request model as the JSON it stands for (no absent fields), for `error_detail`'s `written`."""
    return request.model_dump(mode="json", exclude_none=True) if request is not None else None


def error_detail(issue: Issue, syntax: str, kept: dict[str, KeptAmount] | None = None,
                 sent: dict | None = None, written: dict | None = None) -> ErrorDetail:
    """One failed rule -> ErrorDetail: code = rule id, the JSON field and BT it maps to. A line or VAT breakdown field
    gets its index from the finding's XPath when the XPath names one. `kept` (the generated request's amounts AUTO
    kept as sent, by place in the document): when the field is one of them, the entry names the field as sent and
    carries the sent value (rejectedValue) and the value computed from the other amounts. Otherwise rejectedValue
    is the value `sent` (the request JSON) has at the field, if the request sent one there. rejectedValue keeps the
    JSON type it was sent as (spec 2.11): amounts are Decimals, which the error body writes as the numbers sent.
    `written` (the request JSON the document was written from, calculated, see `as_json`): which of the fields a
    rule names the document has (`terms.field_for_rule`), and how many allowances precede the charges."""
    xpath = (issue.location.xpath if issue.location else None) or ""
    # which fields the document has: in the items the finding's XPath names (BR-52 on the third supporting document
    # lacks its reference although the others have theirs)
    present = (lambda f: has_value(_numbered(f, xpath, syntax, written), written)) if written else None
    field, bt = terms.field_for_rule(issue.code, xpath, present, issue.message)
    pattern, field = field, _numbered(field, xpath, syntax, written)
    if field and terms.pattern_of(field) != pattern and terms.term_for(field) is not None:
        bt = terms.term_for(field).bt or bt   # a charge's field where the rule's element was an allowance's
    amount = _kept_amount(field, kept or {})
    if amount is None:
        return ErrorDetail(code=issue.code, message=issue.message, field=field, businessTerm=bt,
                           rejectedValue=sent_value(field, sent), messageDe=issue.message_de)
    message = (f"{issue.message} {amount.field} was sent as {amount.sent} and kept (AUTO never overwrites a sent "
               f"amount); computed from the other amounts it would be {amount.computed}.")
    german = (f"{issue.message_de or issue.message} {amount.field} wurde als {amount.sent} gesendet und "
              f"beibehalten (AUTO überschreibt keinen gesendeten Betrag); aus den anderen Beträgen berechnet wäre er "
              f"{amount.computed}.")
    return ErrorDetail(code=issue.code, message=message, field=amount.field, businessTerm=bt,
                       rejectedValue=amount.sent, messageDe=german)


def _numbered(field: str | None, xpath: str, syntax: str, written: dict | None) -> str | None:
    """A field pattern with the indexes of the line, VAT breakdown and allowance or charge the finding's XPath
    names (`invoiceLines[].invoiceLineCharges[].reasonCode` -> `invoiceLines[2].invoiceLineCharges[0].reasonCode`).
    An allowance's or charge's index needs the request (`written`): the XPath numbers both together."""
    if not field:
        return field
    for array, steps in _ARRAY_STEPS:
        match = steps.get(syntax, steps["CII"]).search(xpath) if array in field else None
        if match:
            field = field.replace(array, f"{array[:-2]}[{int(match.group(1)) - 1}]", 1)
    for allowances, charges, steps in _ALLOWANCE_CHARGE_ARRAYS:
        array = allowances if allowances in field else charges if charges in field else None
        match = steps.get(syntax, steps["CII"]).search(xpath) if array else None
        if not match:
            continue
        parent = field[:field.index(array)].rstrip(".")
        listed = _node(parent + "." + allowances[:-2], written)
        if not isinstance(listed, list) and listed is not None or "[]" in parent:
            continue
        before = len(listed or [])          # allowances come first
        position = int(match.group(1)) - 1 - (before if array == charges else 0)
        if array == allowances and position >= before and _node(parent + "." + charges[:-2], written):
            # a rule bound to either (CII writes both as one element): the element is a charge
            field, array, position = field.replace(allowances, charges, 1), charges, position - before
        if 0 <= position and (array == charges or position < before):
            field = field.replace(array, f"{array[:-2]}[{position}]", 1)
    sub_lines = _SUB_LINE_STEP.findall(xpath) if ".subInvoiceLines[]" in field and syntax == "UBL" else ()
    if sub_lines:   # one pattern for sub-lines at any depth (terms.pattern_of): a step per level the XPath names
        field = field.replace(".subInvoiceLines[]", "".join(f".subInvoiceLines[{int(k) - 1}]" for k in sub_lines), 1)
    for array, steps in _ITEM_STEPS.items():
        match = steps[syntax].search(xpath) if array in field and syntax in steps else None
        if match:
            field = field.replace(array, f"{array[:-2]}[{int(match.group(1)) - 1}]", 1)
    return _further(_seller_identifier(field, xpath, syntax, written), xpath, syntax, written)


def _further(field: str, xpath: str, syntax: str, written: dict | None) -> str:
    """The field of the occurrence the finding's element is, the single field's or an array item's, either way
    round (`...itemInformation.classifiedIdentifierSchemeId` <-> `...additionalClassifiedIdentifiers[1]
    .classifiedIdentifierSchemeId`), when the request has that item."""
    for first, array, leaf, steps in _FURTHER_STEPS:
        single = re.fullmatch(rf"(.*)\.{first}(\w*)" if leaf else rf"(.*)\.{first}((?:\..*)?)", field)
        listed = re.fullmatch(rf"(.*)\.{array}\[\]((?:\..*)?)", field)
        match = steps[syntax].search(xpath) if single or listed else None
        if not match:
            continue
        owner, rest = (single or listed).groups()
        if listed and leaf:   # `.additionalInvoiceNotes[].invoiceNoteSubjectCode`: the single field's suffix
            rest = rest[len(first) + 1:] if rest else ""
        item = f"{owner}.{array}[{int(match.group(1)) - 2}]"
        if int(match.group(1)) == 1:
            return f"{owner}.{first}{rest}"
        if _node(item, written) is not None:
            return item + (f".{first}{rest}" if leaf and (rest or single) else rest)
    return field


def _seller_identifier(field: str, xpath: str, syntax: str, written: dict | None) -> str:
    """`invoice.seller.identifier[SchemeId]` -> the identifier of `additionalIdentifiers` the finding's element is."""
    name = re.fullmatch(r"invoice\.seller\.(identifier(?:SchemeId)?)", field or "")
    match = _SELLER_ID_STEP[syntax].search(xpath) if name and syntax in _SELLER_ID_STEP else None
    seller = _node("invoice.seller", written) if match else None
    if not isinstance(seller, dict):
        return field
    ids = [("invoice.seller", seller)] + [(f"invoice.seller.additionalIdentifiers[{i}]", extra)
                                         for i, extra in enumerate(seller.get("additionalIdentifiers") or [])]
    ids = [(path, extra) for path, extra in ids if extra.get("identifier")]
    if syntax == "CII":
        scheme = match.group(1) == "GlobalID"
        ids = [(path, extra) for path, extra in ids if bool(extra.get("identifierSchemeId")) == scheme]
    position = int(match.group(len(match.groups()))) - 1
    return f"{ids[position][0]}.{name.group(1)}" if position < len(ids) else field


_STEP = re.compile(r"([^.\[\]]+)((?:\[\d*\])*)")


def _nodes(field: str, request) -> list:
    """What request JSON holds at a field path, one entry per array item a `[]` step walks (None where an item
    has nothing there; a concrete path: at most one entry)."""
    nodes = [request]
    for name, indexes in _STEP.findall(field):
        nodes = [node.get(name) if isinstance(node, dict) else None for node in nodes]
        for index in re.findall(r"\[(\d*)\]", indexes):
            nodes = [item for node in nodes
                     for item in ((node if index == "" else node[int(index):int(index) + 1])
                                  if isinstance(node, list) else [None])]
    return nodes


def _node(path: str, request: dict | None):
    """What the request JSON holds at a concrete path (`invoice.invoiceLines[2].invoiceLineAllowances`); None when
    nothing is there."""
    return next(iter(_nodes(path, request)), None)


def has_value(field: str, request: dict | None) -> bool:
    """Whether request JSON has a value at a field (pattern or concrete path) in any of the items of its arrays."""
    return any(node not in (None, "", [], {}) for node in _nodes(field, request))


def sent_value(field: str | None, sent: dict | None):
    """The scalar the request JSON `sent` holds at a field path (`invoice.invoiceLines[0].lineNetAmount`; `[]`
    when it has a single item), as sent (an amount as its Decimal); None when it sent nothing (or an object) there."""
    if not field or not isinstance(sent, dict):
        return None
    found = _nodes(field, sent)   # a `[]` over several items names none of them
    if len(found) != 1 or found[0] is None or isinstance(found[0], (dict, list)):
        return None
    return rejected_value(found[0])


def _kept_amount(field: str | None, kept: dict[str, KeptAmount]) -> KeptAmount | None:
    """The kept amount at a rule's field: by its place, or the only kept amount of that pattern when the finding's
    XPath gave no index."""
    if not field or not kept:
        return None
    if field in kept:
        return kept[field]
    if "[]" in field:
        matches = [amount for place, amount in kept.items() if terms.pattern_of(place) == field]
        if len(matches) == 1:
            return matches[0]
    return None


def profile_rejection(report: Report, profile: Profile, request, kept: dict[str, KeptAmount] | None = None,
                      sent: dict | None = None) -> ApiError:
    """`rejection` for a Factur-X profile document. When the cause is a rounding amount the profile cannot carry,
    the message says so and what to send instead: the subsets BASIC and BASIC WL have no BT-114, so the amount due
    (BT-115, which includes the rounding) no longer equals BT-112 - BT-113 in their XML and BR-CO-16 fails
    (MINIMUM's rules do not check BR-CO-16)."""
    error = rejection(report, "CII", kept, sent, request)
    rounding = request.invoice.documentTotals.payableRoundingAmount
    if profile.rounding or not rounding or not any("BR-CO-16" in e.code + e.message for e in error.errors):
        return error
    hint = ErrorDetail(
        "PROFILE_WITHOUT_ROUNDING_AMOUNT",
        f"The {profile.name} profile has no rounding amount (BT-114), so its XML cannot carry payableRoundingAmount "
        f"{rounding}, and the amount due (BT-115) no longer equals the total with VAT (BT-112) minus the paid "
        "amount (BT-113) (BR-CO-16). Send the invoice without payableRoundingAmount (payableAmount = "
        "taxInclusiveAmount - prepaidAmount), or use the EN16931 profile, which carries it.",
        field="invoice.documentTotals.payableRoundingAmount", businessTerm="BT-114", rejectedValue=rounding,
        messageDe=f"Das Profil {profile.name} hat keinen Rundungsbetrag (BT-114); sein XML kann payableRoundingAmount "
        f"{rounding} daher nicht tragen, und der fällige Betrag (BT-115) ist nicht mehr der Gesamtbetrag mit "
        "Umsatzsteuer (BT-112) abzüglich des gezahlten Betrags (BT-113) (BR-CO-16). Senden Sie die Rechnung ohne "
        "payableRoundingAmount (payableAmount = taxInclusiveAmount - prepaidAmount), oder nehmen Sie das Profil "
        "EN16931, das ihn trägt.")
    return validation_failed(hint.message, [hint] + error.errors)
