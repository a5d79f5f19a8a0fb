"""Product path: validate many documents at once (a ZIP archive, e-mails, or several files).

    upload -> documents (pipeline.unpack: bounded reads, hostile members refused one by one) -> each: the single
    validate flow -> results

Each document gets exactly the report its single validate path gives (`validate_xml` for xrechnung / en16931,
`validate_pdf` for zugferd; content checks and `strict` included), by what it is (`detect.route`, as a job: a PDF on
XML rules is a ZUGFeRD / Factur-X PDF, XML on the ZUGFeRD batch is held to the rules it names), or an `error` entry
with a code and message when it could not be validated, or a `notice` (NO_INVOICE: a message without an invoice,
nothing failed). One bad member
never fails the others; only the upload as a whole can be refused (ApiError 400/413): not a readable ZIP, more than
`max_files` documents, more than `max_total` bytes decompressed or decoded. How uploads are unpacked, and how
hostile archives and mail are bounded: `pipeline.unpack`.
"""
from __future__ import annotations

import logging
from dataclasses import replace

from pipeline import budget
from pipeline.check import engine
from pipeline.check.detect import SPECS, route
from pipeline.check.report import Report
from pipeline.errors import ApiError
from pipeline.flows.status_validate import validate_status
from pipeline.flows.validate_fr_ctc import validate_fr_ctc
from pipeline.flows.validate_pdf import validate_pdf
from pipeline.flows.validate_xml import validate_xml
from pipeline.unpack import NOTICES, Limits, Member, document, is_zip, too_many_files  # noqa: F401 - the batch's
from pipeline.unpack.archive import iter_archive, read_archive  # noqa: F401 - names, as before the move to unpack

log = logging.getLogger("pipeline.validate.batch")

def check_request(spec: str, version: str | None) -> None:
    """Refuse the whole batch (ApiError 400) for an unknown spec or unsupported version, as the single path does
    for one document, before any work."""
    if spec not in SPECS:
        raise ApiError(400, "UNSUPPORTED_SPEC", f"Unknown specification {spec!r}; one of {', '.join(SPECS)}.")
    if spec != "zugferd":
        engine.check_spec(spec, version)


def validate_document(data: bytes, spec: str, version: str | None = None, request_id: str | None = None,
                      strict: bool = False) -> dict:
    """The report of one document as its single validate path answers it (JSON shape), or {"error": ...} when
    that path refuses the document itself (a file that is not a PDF on the ZUGFeRD path: INVALID_PDF)."""
    return document_outcome(data, spec, version, request_id, strict)[0]


def document_outcome(data: bytes, spec: str, version: str | None = None, request_id: str | None = None,
                     strict: bool = False) -> tuple[dict, Report | None]:
    """`validate_document` and the Report itself (None for an error entry), for a report for people."""
    try:
        if spec == "zugferd":
            report = validate_pdf(data, request_id, content_checks=True, strict=strict)
        elif spec == "fr-ctc":
            report = validate_fr_ctc(data, version, request_id, content_checks=True, strict=strict)
        elif spec == "fr-cdar":
            report = validate_status(data, version, request_id)
        else:
            report = validate_xml(data, spec, version, request_id, content_checks=True, strict=strict)
    except budget.Exhausted:
        raise
    except ApiError as exc:  # as the single endpoint answers it, its errors[] included
        return {"error": {"code": exc.error_code, "message": exc.message,
                          **({"errors": [e.to_dict() for e in exc.errors]} if exc.errors else {})}}, None
    except Exception as exc:  # noqa: BLE001 - one document's crash must not cost the others their reports
        log.exception("validating a batch member failed request_id=%s", request_id)
        return {"error": {"code": "INTERNAL_ERROR", "message": f"The document could not be validated: "
                                                               f"{type(exc).__name__}"}}, None
    return {"report": report.to_dict()}, report


def entry(member: Member, outcome: dict | None) -> dict:
    """A results[] entry: {"name", "report"}, {"name", "error": {"code", "message"}} or {"name", "notice": {"code",
    "message"}}; documents found in an e-mail carry the message as "email" ({"messageId", "date", "from",
    "subject", "index"}), documents out of a signed file what its signature says as "signature"
    (pipeline.unpack.signature)."""
    head = {"name": member.name, **origin(member.email, member.signature)}
    if member.error is not None:
        code, message = member.error
        return {**head, "notice" if code in NOTICES else "error": {"code": code, "message": message}}
    return {**head, **outcome}


def origin(email: dict | None, signature: dict | None) -> dict:
    """The fields of an entry that say where its document came from: {"email"?, "signature"?}."""
    return {**({"email": email} if email is not None else {}),
            **({"signature": signature} if signature is not None else {})}


def summary(results: list[dict]) -> dict:
    """{"files", "valid", "invalid", "indeterminate", "errors", "noInvoice"}: entries, reports valid and invalid
    (`invalid`: every report whose `valid` is false, failing closed; `indeterminate`: how many of those were not judged
    rather than found wrong, `pipeline.check.verdict`), error entries, and messages without an invoice (notices)."""
    reports = [r["report"] for r in results if "report" in r]
    notices = sum(1 for r in results if "notice" in r)
    return {"files": len(results), "valid": sum(1 for r in reports if r["valid"]),
            "invalid": sum(1 for r in reports if not r["valid"]),
            "indeterminate": sum(1 for r in reports if r["verdict"] == "indeterminate"),
            "errors": len(results) - len(reports) - notices, "noInvoice": notices}


TIME_BUDGET = ("TIME_BUDGET", "Not validated: the request's time budget (EINVOICE_REQUEST_BUDGET) was spent on the "
               f"documents before it; {budget.JOBS_HINT}, or send it in a smaller batch.")


def validate_batch(members: list[Member], spec: str, version: str | None = None, request_id: str | None = None,
                   strict: bool = False) -> dict:
    """{"summary": {"files", "valid", "invalid", "indeterminate", "errors"}, "results": [...]} in the members' order,
    one by one.
    Once the request's time budget is spent (`pipeline.budget`), the batch takes no further document: those left,
    and one whose check the budget cut short, get a TIME_BUDGET entry, and the answer holds what was done."""
    check_request(spec, version)
    results = []
    for m in members:
        if m.error is None and budget.spent():
            m = replace(m, data=None, error=TIME_BUDGET)  # (where it came from kept)
        if m.error is not None:
            results.append(entry(m, None))
            continue
        routed = route(m.data, spec)  # a receiver's month mixes ZUGFeRD PDFs and XML, as jobs take it
        try:
            results.append(entry(m, validate_document(m.data, routed, version if routed == spec else None,
                                                      request_id, strict)))
        except budget.Exhausted:
            results.append(entry(replace(m, data=None, error=TIME_BUDGET), None))
    return {"summary": summary(results), "results": results}
