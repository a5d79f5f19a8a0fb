"""A failed report of a document we generated -> 422 VALIDATION_FAILED, one entry per failed rule, pointing at the
JSON field and business term the rule maps to (the business-term table, `pipeline.invoice.terms`)."""
from __future__ import annotations

import re

from pipeline.check.report import ERROR, Issue, Report
from pipeline.errors import ApiError, ErrorDetail, validation_failed
from pipeline.invoice import terms
from pipeline.invoice.specs import Profile

# The line step of a finding's XPath, plain (`InvoiceLine[2]`) or Saxon's (`*:InvoiceLine[namespace-uri()='…'][2]`).
_NS_PREDICATE = r"(?:\[namespace-uri\(\)='[^']*'\])?"
_LINE_STEP = {"CII": re.compile(r"IncludedSupplyChainTradeLineItem" + _NS_PREDICATE + r"\[(\d+)\]"),
              "UBL": re.compile(r"(?:InvoiceLine|CreditNoteLine)" + _NS_PREDICATE + r"\[(\d+)\]")}


def rejection(report: Report, syntax: str) -> ApiError:
    """422 VALIDATION_FAILED listing every failed rule of a report."""
    errors = [error_detail(i, syntax) for i in report.issues if i.severity == ERROR]
    rules = ", ".join(dict.fromkeys(e.code for e in errors))
    return validation_failed(f"The generated document failed validation ({report.version}): {rules}", errors)


def error_detail(issue: Issue, syntax: str) -> ErrorDetail:
    """One failed rule -> ErrorDetail: code = rule id, the JSON field and BT it maps to. A line-level field gets the
    line index from the finding's XPath when the XPath names one."""
    field, bt = terms.field_for_rule(issue.code)
    if field and "invoiceLines[]" in field:
        xpath = issue.location.xpath if issue.location else None
        match = _LINE_STEP.get(syntax, _LINE_STEP["CII"]).search(xpath or "")
        if match:
            field = field.replace("invoiceLines[]", f"invoiceLines[{int(match.group(1)) - 1}]", 1)
    return ErrorDetail(code=issue.code, message=issue.message, field=field, businessTerm=bt)


def profile_rejection(report: Report, profile: Profile, request) -> ApiError:
    """`rejection` for a Factur-X profile document. When the cause is a rounding amount the profile cannot carry,
    the message says so and what to send instead: the subsets BASIC and BASIC WL have no BT-114, so the amount due
    (BT-115, which includes the rounding) no longer equals BT-112 - BT-113 in their XML and BR-CO-16 fails
    (MINIMUM's rules do not check BR-CO-16)."""
    error = rejection(report, "CII")
    rounding = request.invoice.documentTotals.payableRoundingAmount
    if profile.rounding or not rounding or not any("BR-CO-16" in e.code + e.message for e in error.errors):
        return error
    hint = ErrorDetail(
        "PROFILE_WITHOUT_ROUNDING_AMOUNT",
        f"The {profile.name} profile has no rounding amount (BT-114), so its XML cannot carry payableRoundingAmount "
        f"{rounding}, and the amount due (BT-115) no longer equals the total with VAT (BT-112) minus the paid "
        "amount (BT-113) (BR-CO-16). Send the invoice without payableRoundingAmount (payableAmount = "
        "taxInclusiveAmount - prepaidAmount), or use the EN16931 profile, which carries it.",
        field="invoice.documentTotals.payableRoundingAmount", businessTerm="BT-114", rejectedValue=str(rounding))
    return validation_failed(hint.message, [hint] + error.errors)
