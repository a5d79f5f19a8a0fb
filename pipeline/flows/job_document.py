"""Product path: one document of a job, through the flow its single endpoint uses, as one JSON Lines entry.

    validate  -> validate_batch.document_outcome (the batch's and the single validate endpoint's report; with
                 `html`, validation_report.readable_report: the endpoint's page for people as well), each document
                 on the rules for what it is (`pipeline.check.detect.route`: "auto", the default, detects them
                 as the web page and `pipeline validate` do; a PDF is a ZUGFeRD / Factur-X PDF whatever XML rules
                 were named)
    parse     -> parse.parse_report             (the invoice JSON POST /v1/invoice/parse answers)
    convert   -> convert.convert                (the document POST /v1/invoice/convert answers, base64, and what its
                                                 headers say: `Conversion.summary`)

`check_options` refuses a job's request before anything is stored (ApiError 400 with the field's path), so that
a job's documents only fail one by one, never as a whole. `run` never raises for a document: a refusal of the
flow (an ApiError) or a crash becomes the entry's `error`.
"""
from __future__ import annotations

import base64
import json
import logging

from pipeline.check.detect import AUTO, SPECS, route
from pipeline.errors import ApiError, ErrorDetail
from pipeline.flows import convert as convert_flow
from pipeline.flows.parse import parse_report
from pipeline.flows.validate_batch import check_request, document_outcome
from pipeline.flows.validation_report import readable_report
from pipeline.invoice.request_json import dump_request

log = logging.getLogger("pipeline.jobs.document")

OPERATIONS = ("validate", "parse", "convert")
VALIDATE_SPECS = (AUTO, *SPECS)


def _bad(field: str, message: str, value) -> ApiError:
    return ApiError(400, "INVALID_INPUT", f"request.{field} {message}.",
                    [ErrorDetail("INVALID_VALUE", message, field=f"request.{field}", rejectedValue=value)])


def check_options(request: dict) -> tuple[str, dict]:
    """(operation, options) of a job's `request` part: {"operation", "spec", "version", "to", "strict",
    "validate" (parse), "html" and "metadataLanguage" (validate: a report for people per document too)}.
    ApiError 400 for anything the operation does not take."""
    operation = request.get("operation") or "validate"
    if operation not in OPERATIONS:
        raise _bad("operation", f"must be one of {', '.join(OPERATIONS)}", operation)
    strict = request.get("strict", False)
    if not isinstance(strict, bool):
        raise _bad("strict", "must be true or false", strict)
    version = request.get("version")
    if version is not None and not isinstance(version, str):
        raise _bad("version", "must be a string or null", version)
    spec = request.get("spec")
    options: dict = {"strict": strict}
    if operation == "validate":
        html = request.get("html", False)
        if not isinstance(html, bool):
            raise _bad("html", "must be true or false", html)
        language = request.get("metadataLanguage") or "en"
        if language not in ("en", "de"):
            raise _bad("metadataLanguage", "must be en or de", language)
        spec = spec or AUTO
        if spec not in VALIDATE_SPECS:
            raise _bad("spec", f"must be one of {', '.join(VALIDATE_SPECS)}", spec)
        if spec == AUTO and version is not None:
            raise _bad("version", "needs a spec: each document's detected rules have versions of their own", version)
        if spec != AUTO:
            check_request(spec, version)
        options.update(spec=spec, version=version, html=html, language=language)
    elif operation == "convert":
        to = request.get("to")
        to = to.strip().upper() if isinstance(to, str) else to
        if to not in convert_flow.TARGETS:
            raise _bad("to", f"is required for convert: one of {', '.join(convert_flow.TARGETS)}", to)
        if spec is not None and spec not in convert_flow.SPECS:
            raise _bad("spec", f"must be one of {', '.join(convert_flow.SPECS)} for convert", spec)
        options.update(to=to, spec=spec)
    else:
        validate = request.get("validate", False)
        if not isinstance(validate, bool):
            raise _bad("validate", "must be true or false", validate)
        options.update(validate=validate)
    return operation, options


def error_line(name: str, code: str, message: str, email: dict | None = None) -> str:
    return json.dumps({"name": name, **({"email": email} if email else {}),
                       "error": {"code": code, "message": message}}, ensure_ascii=False)


def run(operation: str, options: dict, name: str, data: bytes, request_id: str | None = None,
        email: dict | None = None) -> tuple[str, str, str | None]:
    """(kind, line, page) of one document: kind valid | invalid | indeterminate (it got its result) or error; page
    the HTML report (validate with `html`; the validate endpoint's page for people), else None. `email`: the message
    the document came from, put in its line."""
    head = '{"name": ' + json.dumps(name, ensure_ascii=False)
    if email:
        head += ', "email": ' + json.dumps(email, ensure_ascii=False)
    try:
        if operation == "validate":
            outcome, report_obj = document_outcome(data, route(data, options["spec"]), options.get("version"),
                                                   request_id, options.get("strict", False))
            if "error" in outcome:
                return "error", error_line(name, outcome["error"]["code"], outcome["error"]["message"], email), None
            report = outcome["report"]
            page = None
            if options.get("html"):
                page = readable_report(data, report_obj, name, options.get("language", "en")).decode("utf-8")
            line = head + ', "report": ' + json.dumps(report) + "}"
            return report["verdict"], line, page  # valid | invalid | indeterminate
        if operation == "parse":
            result = parse_report(data, options.get("validate", False), request_id)
            kind = (result.get("validation") or {}).get("verdict", "valid")
            # amounts exactly as the document states them; the indentation's line breaks would split the line
            invoice = dump_request(result).decode("utf-8").replace("\n", "")
            return kind, head + ', "invoice": ' + invoice + "}", None
        conversion = convert_flow.convert(data, options["to"], options.get("spec"), request_id=request_id)
        document = base64.b64encode(conversion.document).decode("ascii")
        return "valid", (head + ', "mediaType": ' + json.dumps(conversion.media_type) + ', "conversion": '
                         + json.dumps(conversion.summary(), ensure_ascii=False) + ', "document": "' + document + '"}'
                         ), None
    except ApiError as exc:
        return "error", error_line(name, exc.error_code, exc.message, email), None
    except Exception as exc:  # noqa: BLE001 - one document's crash must not cost the others their results
        log.exception("a job's document failed request_id=%s", request_id)
        return "error", error_line(name, "INTERNAL_ERROR", f"The document could not be processed: "
                                                           f"{type(exc).__name__}", email), None
