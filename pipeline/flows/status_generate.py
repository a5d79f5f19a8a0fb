"""Product path: JSON status request -> France's lifecycle status message (CDV, UN/CEFACT CDAR D22B), validated.

    parse (model: pipeline.invoice.cdar, 400 with field and MDT term) -> derive (status name, phase, document
    status code, sequence numbers) -> canonical status XML (pipeline.write.cdar) -> CDAR (xslt/cdar.xsl, Saxon)
    -> validate on the fr-cdar chain (XSD, BR-FR-CDV, BR-FR-CDV warnings)

A message the chain refuses is never returned: ApiError 422 VALIDATION_FAILED with one entry per failed rule,
pointing at the JSON field and MDT term the rule names (`pipeline.invoice.cdar_terms`). The model checks what the
rules require before any generation, so a 422 means the two disagree (a bug worth reporting).
"""
from __future__ import annotations

import logging

from pipeline.check.report import ERROR, Report
from pipeline.errors import ApiError, ErrorDetail, TransformError, validation_failed
from pipeline.flows.status_validate import validate_status
from pipeline.invoice import cdar, cdar_terms
from pipeline.write import cdar as writing

log = logging.getLogger("pipeline.status")


def canonical_of(request: cdar.StatusRequest) -> bytes:
    """The canonical status XML of a request with its derived values filled in."""
    return writing.to_canonical(cdar.with_derived(request))


def rejection(report: Report) -> ApiError:
    """422 VALIDATION_FAILED listing every failed rule with the JSON field and MDT term it names."""
    errors = []
    for issue in (i for i in report.issues if i.severity == ERROR):
        field, term = cdar_terms.field_for_rule(issue.code)
        errors.append(ErrorDetail(issue.code, issue.message, field=field, businessTerm=term))
    rules = ", ".join(dict.fromkeys(e.code for e in errors))
    return validation_failed(f"The generated status message failed validation (fr-cdar {report.version}): {rules}",
                             errors)


def write_validated(request: cdar.StatusRequest, request_id: str | None = None) -> tuple[bytes, Report]:
    """A checked request -> (CDAR message, its report: warnings at most). ApiError 422 when the chain refuses it,
    500 GENERATION_FAILED when our stylesheet fails."""
    try:
        out = writing.to_cdar(canonical_of(request))
    except TransformError as exc:  # a stylesheet bug, not the client's: log it, answer 500
        log.error("status transform failed request_id=%s: %s", request_id, exc)
        raise ApiError(500, "GENERATION_FAILED", "The status message could not be generated.") from exc
    report = validate_status(out.xml, request_id=request_id, tree=out.tree)
    if not report.valid:
        raise rejection(report)
    return out.xml, report


def generate_status(body: bytes, request_id: str | None = None,
                    parsed: cdar.StatusRequest | None = None) -> tuple[bytes, Report]:
    """JSON request -> (validated CDAR message, report with any warnings). `parsed`: the request already checked
    (`cdar.parse_status_request(body)`). Raises ApiError (400, 422, 500)."""
    request = parsed if parsed is not None else cdar.parse_status_request(body)
    return write_validated(request, request_id)
