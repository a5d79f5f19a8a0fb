"""OpenAPI 3.1 description of the service, generated from the models the code uses.

Request bodies come from `pipeline.invoice.model.InvoiceRequest` (the model the generation endpoints parse with) and
`schemas.XRechnungValidationRequest`; responses from `pipeline.service.schemas`, whose models tests hold
against real `Report` / `ApiError` output. Only endpoints actually mounted in the app are described.
"""
from __future__ import annotations

import copy
from functools import partial

from pydantic.json_schema import models_json_schema

from pipeline.check.content import CHECKS
from pipeline.check.detect import SPECS
from pipeline.errors import REFINES, SPEC_CODES, STATUS_TEXT
from pipeline.flows.convert import SPECS as CONVERT_SPECS
from pipeline.flows.job_document import OPERATIONS
from pipeline.invoice.model import InvoiceRequest
from pipeline.service import apikeys, openapi_status, schemas
from pipeline.service.openapi_text import ENGLISH, Texts
from pipeline.service.platform import PlatformConfig
from pipeline.storage.jobs import JOB_STATES, JOBS_PAGE, MAX_JOBS_PAGE

REF = "#/components/schemas/{model}"

GENERATION = {
    "/v1/invoice/xrechnung": ("xrechnung", "application/xml", "XRechnung document (CII or UBL per config.syntax)."),
    "/v1/invoice/en16931": ("en16931", "application/xml", "EN 16931 document (CII or UBL per config.syntax)."),
    "/v1/invoice/fr-ctc": ("fr-ctc", "application/xml", "EN 16931 document for France's reform (CII or UBL per "
                                                        "config.syntax), valid on the FNFE chain with BR-FR Flux 2; "
                                                        "the French data (BT-23 billing frame, PMT/PMD/AAB notes, "
                                                        "SIREN, electronic addresses, ...) is required (400)."),
    "/v1/invoice/peppol": ("peppol", "application/xml", "Peppol BIS Billing 3.0 UBL Invoice or CreditNote (release in "
                                                        "force today; self-billing with its specification identifier "
                                                        "in invoice.processControl). Peppol's requirements (BT-34 / "
                                                        "BT-49 with a Peppol EAS scheme, buyer or order reference, one "
                                                        "note, ...) are checked first: 400 INVALID_INPUT on the field; "
                                                        "config.syntax CII is 400."),
    "/v1/invoice/zugferd": ("zugferd", "application/pdf", "ZUGFeRD/Factur-X PDF/A-3 with the embedded CII XML. "
                                                      "At most EINVOICE_MAX_PDF_LINES invoice lines (default 2000; "
                                                      "400 TOO_MANY_LINES above)."),
}
VALIDATION = {
    "/v1/invoice/xrechnung/validate": "Validate XRechnung XML (CII or UBL, detected) on the official XRechnung rules.",
    "/v1/invoice/en16931/validate": "Validate EN 16931 XML (CII or UBL, detected) on the official EN 16931 rules.",
    "/v1/invoice/peppol/validate": "Validate a Peppol BIS Billing 3.0 UBL Invoice or CreditNote on the official Peppol "
                                   "rules (CEN + PEPPOL; self-billing recognised by its CustomizationID). A CII "
                                   "document is 400 UNSUPPORTED_SYNTAX: the Peppol CII rules are not published as a "
                                   "compiled release.",
    "/v1/invoice/zugferd/validate": "Validate a ZUGFeRD PDF/A-3: PDF/A-3 conformance and the embedded CII XML.",
    "/v1/invoice/fr-ctc/validate": "Validate on France's reform rules (FNFE chain: XSD, the profile's rules, BR-FR "
                                   "Flux 2): UBL or CII XML, or a Factur-X PDF (its checks plus BR-FR). The report's "
                                   "version is the FNFE release; French rule texts as published.",
}
BATCH = {f"/v1/invoice/{spec}/validate/batch": f"Validate many {name} documents at once: a ZIP archive or several "
                                                f"`file` parts." for spec, name in
         (("xrechnung", "XRechnung"), ("en16931", "EN 16931"), ("zugferd", "ZUGFeRD PDF"),
          ("fr-ctc", "French (fr-ctc) XML or Factur-X PDF"), ("peppol", "Peppol BIS Billing 3.0"))}
READING = {
    "/v1/invoice/parse": ("parse", "Read an e-invoice (CII, UBL, ZUGFeRD / Factur-X PDF) into the JSON invoice the "
                          "generation endpoints take.", "ParseRequest",
                          {"application/json": {"schema": {"$ref": REF.format(model="ParseResponse")}}}),
    "/v1/invoice/convert": ("convert", "Convert an e-invoice to CII, UBL or a ZUGFeRD PDF; the result is validated "
                            "like every generated document. 422 SOURCE_INVALID: the source fails its rules; "
                            "SOURCE_NOT_CONVERTIBLE: it lacks fields the model requires; CONVERSION_LOSS: the target "
                            "cannot carry some of its values (request.allowLoss converts anyway); VALIDATION_FAILED.",
                            "ConvertRequest", {"application/xml": {"schema": {"type": "string"}},
                                               "application/pdf": {"schema": {"type": "string",
                                                                              "contentMediaType": "application/pdf"}}}),
    "/v1/invoice/render": ("render", "The readable page of any e-invoice, valid or not: PDF (default) or HTML "
                           "(Accept: text/html). A PDF holds at most EINVOICE_MAX_PDF_LINES invoice lines "
                           "(default 2000; 400 TOO_MANY_LINES above, before any layout); HTML has no such limit.", "RenderRequest",
                           {"application/pdf": {"schema": {"type": "string", "contentMediaType": "application/pdf"}},
                            "text/html": {"schema": {"type": "string"}}}),
}

# The pages for people and their files (pipeline.service.resources.web): no key, no credits.
PAGES = {
    "/": ("page", "The page for people: validate a received invoice, read it, generate one from JSON (en / de)."),
    "/docs": ("page_docs", "This reference as a page (Swagger UI), with the bearer scheme for \"Try it out\"."),
}
PAGE_FILES = {
    "/static/{name}": ("page_file", "A script or stylesheet of the pages.", ("text/javascript", "text/css")),
    "/static/swagger-ui/{name}": ("swagger_ui_file", "A file of the Swagger UI bundle that /docs uses.",
                                  ("text/javascript", "text/css")),
    "/examples/{name}": ("example_request", "An example InvoiceRequest as the page offers it (`fixtures/*.json`).",
                         ("application/json",)),
}

_ERROR_TEXT = {
    400: "Invalid request (INVALID_INPUT and other 400 codes); `errors[]` names the field and business term.",
    401: "Missing or rejected API key: " + ", ".join(f"`{c}`" for c in apikeys.AUTH_CODES) + ".",
    402: "INSUFFICIENT_CREDITS: the key's balance does not cover the request; nothing was done.",
    406: "The Accept header allows no representation this endpoint produces.",
    404: "No such file (jobs: JOB_NOT_FOUND, no job of this key has that id).",
    413: "The upload exceeds the size limit.",
    415: "Unsupported Content-Type.",
    422: "VALIDATION_FAILED (or PDF_A3_VALIDATION_FAILED): the generated document failed the official rules; "
         "convert: also SOURCE_INVALID, SOURCE_NOT_CONVERTIBLE, CONVERSION_LOSS.",
    429: "RATE_LIMIT_EXCEEDED: wait `Retry-After` seconds; nothing was done or charged.",
    500: "GENERATION_FAILED or INTERNAL_ERROR: quote the request id.",
    503: "RATE_LIMIT_CONFIGURATION_UNAVAILABLE (limiter backend, rate limit configuration or the key store "
         "unreadable, or a rule pack removed while the request ran: `errors[0].code` RULES_CHANGED); nothing was "
         "done or charged, retry after `Retry-After` seconds.",
}
_TIME_BUDGET_TEXT = ("TIME_BUDGET: the document needs more time than a request has (EINVOICE_REQUEST_BUDGET); nothing "
                     "was charged and the same request would run out again (no `Retry-After`): send it to the jobs "
                     "API, POST /v1/jobs.")

# Every code an endpoint can answer, per kind of endpoint and HTTP status (the statuses every authenticated
# endpoint shares in _COMMON_CODES). Each error response's schema narrows `errorCode` to its list, so the schemathesis
# run and tests/test_openapi.py hold real answers against it: a new code must be added here. A code of ours that
# refines a spec code (pipeline.errors.REFINES) is answered as that code in `errorCode` and as itself in
# `errors[0].code`: `error_codes` and `refinements` sort them out.
_RULES_MISSING = ("RULES_NOT_INSTALLED", "RULES_UNAVAILABLE")
_COMMON_CODES = {
    400: ("INVALID_INPUT",),
    401: tuple(apikeys.AUTH_CODES),
    402: ("INSUFFICIENT_CREDITS",),
    406: ("NOT_ACCEPTABLE",),
    413: ("PAYLOAD_TOO_LARGE",),
    415: ("UNSUPPORTED_MEDIA_TYPE",),
    422: (),
    429: ("RATE_LIMIT_EXCEEDED",),
    500: ("INTERNAL_ERROR",),
    503: ("RATE_LIMIT_CONFIGURATION_UNAVAILABLE", "STORAGE_UNAVAILABLE", "RULES_CHANGED"),
}
_READING_400 = ("NOT_AN_EINVOICE", "INVALID_PDF")
ERROR_CODES = {
    "generate_xml": {422: ("VALIDATION_FAILED",), 500: ("GENERATION_FAILED",) + _RULES_MISSING},
    "generate_pdf": {422: ("VALIDATION_FAILED", "PDF_A3_VALIDATION_FAILED"), 500: ("GENERATION_FAILED",)
                     + _RULES_MISSING},
    "validate_xml": {400: ("UNSUPPORTED_VERSION", "UNSUPPORTED_SYNTAX"), 500: _RULES_MISSING},
    "validate_pdf": {400: ("UNSUPPORTED_VERSION", "INVALID_PDF"), 500: _RULES_MISSING},
    "batch": {400: ("UNSUPPORTED_VERSION", "UNSUPPORTED_SPEC", "TOO_MANY_FILES", "INVALID_ARCHIVE"),
              500: _RULES_MISSING},
    "parse": {400: _READING_400, 500: ("READ_FAILED",) + _RULES_MISSING},
    "convert": {400: _READING_400, 422: ("SOURCE_INVALID", "SOURCE_NOT_CONVERTIBLE", "CONVERSION_LOSS",
                                         "VALIDATION_FAILED", "PDF_A3_VALIDATION_FAILED"),
                500: ("READ_FAILED", "GENERATION_FAILED") + _RULES_MISSING},
    "render": {400: _READING_400, 500: ("READ_FAILED",) + _RULES_MISSING},
    "readyz": {503: ("NOT_READY",)},
    "jobs": {400: ("UNSUPPORTED_VERSION", "UNSUPPORTED_SPEC", "TOO_MANY_FILES", "INVALID_ARCHIVE"),
             404: ("JOB_NOT_FOUND",), 503: ("JOBS_DISK_FULL",)},
    **openapi_status.ERROR_CODES,   # France's lifecycle status messages
    **{kind: {404: ("NOT_FOUND",)} for kind, _, _ in PAGE_FILES.values()},
}
# A single document's work stops at the request's time budget (pipeline.budget): 503 TIME_BUDGET, no Retry-After.
# (The generation endpoints' 503 is the service specification's table, RATE_LIMIT_CONFIGURATION_UNAVAILABLE only
# (tests/test_spec_conformance.py); their TIME_BUDGET, README "Limits", is the one answer beyond it.)
BUDGETED = ("validate_xml", "validate_pdf", "parse", "convert", "render", "generate_status", "read_status")
for _kind in BUDGETED:
    ERROR_CODES[_kind] = {**ERROR_CODES[_kind], 503: ("TIME_BUDGET",)}
# A job upload whose unpacking outlasts the budget (pipeline.jobs.files.out_of_time): 503 TIME_BUDGET, no Retry-After,
# beside JOBS_DISK_FULL's 503, which has one.
ERROR_CODES["jobs"] = {**ERROR_CODES["jobs"], 503: ERROR_CODES["jobs"][503] + ("TIME_BUDGET",)}
_NO_RETRY_503 = BUDGETED + ("jobs",)  # kinds whose 503 may come without Retry-After


# The codes of a batch's (and a job's) entries for documents that were not checked, as pipeline.unpack gives them
# (the single endpoint's 400s aside): the batch operation lists them all. tests/test_openapi_entry_codes.py holds
# this list to the codes pipeline.unpack's sources give and to the README's tables.
ENTRY_CODES = (
    "UNSAFE_NAME", "NESTED_ARCHIVE", "FILE_TOO_LARGE", "ENCRYPTED_MEMBER", "DAMAGED_MEMBER", "INVALID_ARCHIVE",
    "EMPTY_ARCHIVE", "EMPTY_FILE", "BROKEN_ENCODING", "SMIME_ENCRYPTED", "PGP_ENCRYPTED", "SMIME_OPAQUE",
    "MSG_UNREADABLE", "TNEF_UNREADABLE", "MAIL_TOO_DEEP", "MAIL_TOO_MANY_PARTS", "MAIL_HEADER_TOO_LONG",
    "MESSAGE_TOO_LARGE", "MAIL_DAMAGED", "MAIL_TIME_BUDGET",
)
_DESCRIBED_ENTRY_CODES = ("UNSAFE_NAME", "NESTED_ARCHIVE", "FILE_TOO_LARGE")  # each with its note before the list


def _codes(kind: str, status: int) -> tuple[str, ...]:
    common = _COMMON_CODES.get(status, ()) if kind != "readyz" else ()
    return tuple(dict.fromkeys(common + ERROR_CODES.get(kind, {}).get(status, ())))


def error_codes(kind: str, status: int) -> tuple[str, ...]:
    """The errorCodes an endpoint of `kind` answers with `status` (public endpoints: their own only)."""
    return tuple(dict.fromkeys(REFINES.get(code, code) for code in _codes(kind, status)))


def refinements(kind: str, status: int) -> dict[str, str]:
    """Our codes this response may carry in errors[0].code -> the spec's errorCode they refine."""
    return {code: REFINES[code] for code in _codes(kind, status) if code in REFINES}


def _with_int32(node):
    """Spec section 2 has one integer type, `integer (int32)`: every integer field of the document says so."""
    if isinstance(node, dict):
        if node.get("type") == "integer":
            node.setdefault("format", "int32")
        for value in node.values():
            _with_int32(value)
    elif isinstance(node, list):
        for value in node:
            _with_int32(value)
    return node


# The X-Conversion-* lists carry the source's text (a name in Chinese, a line break), written by header_text
# (pipeline.service.resources.reading): a client must decode them.
_PERCENT_ENCODED = (" Percent-encoded: every character outside visible ASCII, and `%` itself, as `%XX` per UTF-8 byte "
                    "(as in a URL; not RFC 8187's `UTF-8''` form): decode the value, e.g. with Python's "
                    "`urllib.parse.unquote`, before reading it.")

_HEADERS = {
    "X-Request-Id": {"description": "The client's id if valid (<= 128 of `A-Za-z0-9._:-`), else a new one.",
                     "required": True, "schema": {"type": "string", "maxLength": 128}},
    "RateLimit-Limit": {"description": "Requests allowed in the current window for this key.", "required": True,
                        "schema": {"type": "integer", "minimum": 1}},
    "RateLimit-Remaining": {"description": "Requests left in the current window.", "required": True,
                            "schema": {"type": "integer", "minimum": 0}},
    "RateLimit-Reset": {"description": "Seconds until the current window ends.", "required": True,
                        "schema": {"type": "integer", "minimum": 1}},
    "Retry-After": {"description": "Seconds to wait before retrying.", "required": True, "schema": {"type": "integer", "minimum": 0}},
    "X-Conversion-Losses": {"description": "convert with allowLoss: how many source values of content (a business "
                                           "term's, or content EN 16931 has no term for) the target does not carry; "
                                           "technical values are never counted here.",
                            "schema": {"type": "integer", "minimum": 1}},
    "X-Conversion-Technical": {"description": "convert: how many technical source values (syntax plumbing such as "
                                              "identifier qualifiers, and fillers a syntax requires where EN 16931 "
                                              "has no term, e.g. CII's project name, UBL's card network id) the "
                                              "target syntax has no place for. Never a loss, never a refusal.",
                               "schema": {"type": "integer", "minimum": 1}},
    "X-Conversion-Technical-Left": {"description": "convert: their xpaths in the source, `; `-separated (cut after "
                                                   "2000 characters)." + _PERCENT_ENCODED,
                                    "schema": {"type": "string"}},
    "X-Source-Rules": {"description": "convert: the rules the source was judged on, which are the target's (e.g. "
                                      "`en16931 1.3.16` for a Peppol or XRechnung document going to EN 16931 CII).",
                       "schema": {"type": "string"}},
    "X-Source-Findings": {"description": "convert: errors of the CIUS the source claims (its BT-24: Peppol, "
                                         "XRechnung) under rules the target does not apply, as rule ids, `, `-separated "
                                         "(e.g. `PEPPOL-EN16931-R010, PEPPOL-EN16931-R020`): the source was converted "
                                         "as valid EN 16931, and its claim is worth a finding, not a refusal.",
                          "schema": {"type": "string"}},
    "X-Target-Rules": {"description": "convert, a French invoice (its parties in France, or EXTENDED-CTC-FR): the "
                                      "rules a French platform holds the converted document to, which checked it "
                                      "(e.g. `fr-ctc 1.4.0.04`).", "schema": {"type": "string"}},
    "X-Target-Findings": {"description": "convert: their errors on the converted document, as rule ids, `, `-separated "
                                         "(e.g. `BR-FR-MV-01_EXT-FR-FE-163`): it is valid EN 16931 but no valid "
                                         "French invoice (allowLoss left out what France's rules require).",
                          "schema": {"type": "string"}},
    "X-Conversion-Lost": {"description": "convert with allowLoss: their xpaths in the source, `; `-separated "
                                         "(cut after 2000 characters); a PDF's second invoice file as `PDF embedded "
                                         "file 'name'`." + _PERCENT_ENCODED, "schema": {"type": "string"}},
    "Location": {"description": "POST /v1/jobs: the job's address, `/v1/jobs/{id}`.", "required": True,
                 "schema": {"type": "string"}},
    "X-Job-State": {"description": "The job's state when its results were read.", "required": True,
                    "schema": {"type": "string", "enum": ["queued", "running", "done", "failed", "cancelled"]}},
    "X-Results-Next": {"description": "With `after`: the `after` to ask for the entries that come next (the number "
                                      "of the last entry so far; once the job has ended, its number of documents).",
                       "schema": {"type": "integer", "minimum": 0}},
    "X-Conversion-Changed": {"description": "convert: source values the target writes otherwise, `; `-separated "
                                            "`BT-n source -> written` (e.g. BT-24, which names the rules that judged "
                                            "the output: a Peppol document written as EN 16931 CII says "
                                            "`urn:cen.eu:en16931:2017`; cut after 2000 characters)." + _PERCENT_ENCODED,
                             "schema": {"type": "string"}},
    "WWW-Authenticate": {"description": "`Bearer realm=\"einvoice\"`.", "required": True, "schema": {"type": "string"}},
    "X-Validation-Warnings": {"description": "Generation: how many warnings the report of the returned document "
                                             "(a ZUGFeRD PDF: its embedded XML, on its profile's rules) has (the "
                                             "official rules' and the content checks').",
                              "required": True, "schema": {"type": "integer", "minimum": 0}},
    "X-Content-Warnings": {"description": "Generation: the content checks' findings (see the API description), each "
                                          "as `CODE field (BT)`, `; `-separated (cut after 2000 characters); absent "
                                          "when there are none. `config.strict: true` refuses such a request with "
                                          "400 instead.", "schema": {"type": "string"}},
}
# A 503 of a budgeted operation: TIME_BUDGET comes after the limiter (its RateLimit-* headers, no Retry-After),
# the limiter's own 503 before it (Retry-After, no RateLimit-*): each header there is optional.
_HEADERS.update({f"{name}-503": {**_HEADERS[name], "required": False}
                 for name in ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")})
_HEADERS["Retry-After-503"] = {"description": "Seconds to wait before retrying: with RATE_LIMIT_CONFIGURATION_UNAVAILABLE "
                               "and STORAGE_UNAVAILABLE, not with TIME_BUDGET.", "required": False,
                               "schema": {"type": "integer", "minimum": 0}}


def _headers(*names: str) -> dict:
    return {n: {"$ref": f"#/components/headers/{n}"} for n in names}


def _schemas() -> dict:
    """Component schemas from the pydantic models."""
    models = [schemas.ErrorResponse, schemas.XRechnungValidationResponse, schemas.XRechnungValidationRequest,
              InvoiceRequest, schemas.ParseResponse, schemas.ParseRequest, schemas.ConvertRequest, schemas.RenderRequest]
    _, top = models_json_schema([(m, "validation") for m in models], ref_template=REF)
    return top.get("$defs", {})


def _error(status: int, authenticated: bool, kind: str | None = None, tr: Texts = ENGLISH) -> dict:
    """An error response; with `kind` (see ERROR_CODES) its description and schema list the errorCodes."""
    headers = ["X-Request-Id"]
    if authenticated and status not in (401, 503):
        headers += ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"]
    if status == 429 or (status == 503 and kind not in BUDGETED):
        headers.append("Retry-After")
    if status == 401:
        headers.append("WWW-Authenticate")
    schema: dict = {"$ref": REF.format(model="ErrorResponse")}
    description = [f"`{STATUS_TEXT[status]}`: {tr(_ERROR_TEXT[status])}"]
    if status == 503 and kind in BUDGETED:   # Retry-After comes with the limiter's 503 only
        description.append(tr(_TIME_BUDGET_TEXT))
    codes = error_codes(kind, status) if kind else ()
    response: dict = {}
    if codes:
        schema["properties"] = {"errorCode": {"enum": list(codes)}}
        description.append("errorCode: " + ", ".join(f"`{c}`" for c in codes) + ".")
        extra = [c for c in codes if c not in SPEC_CODES]
        if extra:   # the spec's table (section 7) lists no such code: say so where a generated client looks
            response["x-codes-beyond-spec"] = extra
            description.append(tr("Not in the service specification's error table: {codes}.",
                                  codes=", ".join(f"`{c}`" for c in extra)))
    refined = refinements(kind, status) if kind else {}
    if refined:   # ours in errors[0].code, the spec's code in errorCode (pipeline.errors.REFINES)
        response["x-refinements"] = refined
        description.append(tr("`errors[0].code` may refine it: {codes}.", codes=", ".join(
            f"`{ours}` (errorCode `{spec}`)" for ours, spec in refined.items())))
    listed = _headers(*headers)
    if status == 503 and kind in _NO_RETRY_503:
        listed.update({name: {"$ref": f"#/components/headers/{name}-503"} for name in (
            "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After")})
    return {"description": tr.join(*description), "headers": listed,
            "content": {"application/json": {"schema": schema}}, **response}


def _ok(description: str, content: dict) -> dict:
    return {"description": description, "content": content,
            "headers": _headers("X-Request-Id", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")}


_REQUEST_ID_PARAM = {"name": "X-Request-Id", "in": "header", "required": False,
                     "description": "Client request id, echoed back and in every `requestId`.",
                     "schema": {"type": "string"}}


def _generation(spec: str, media: str, summary: str, cost: int, tr: Texts = ENGLISH) -> dict:
    body = {"$ref": REF.format(model="InvoiceRequest")}
    ok = {"type": "string"} if media == "application/xml" else {"type": "string", "contentMediaType": media}
    statuses = [400, 401, 402, 406, 413, 415, 422, 429, 500, 503] if cost else [400, 401, 406, 413, 415, 422, 429,
                                                                                500, 503]
    kind = "generate_xml" if media == "application/xml" else "generate_pdf"
    # text/xml: the same document for a client whose Accept header takes only that (RFC 7303)
    ok_response = _ok(summary, {media: {"schema": ok}, **({"text/xml": {"schema": ok}} if kind == "generate_xml"
                                                            else {})})
    ok_response["headers"].update(_headers("X-Validation-Warnings", "X-Content-Warnings"))
    return {"post": {
        "operationId": f"generate_{spec}",
        "summary": summary,
        "description": tr("Costs {cost} credit(s) when a document is returned; failures cost nothing.", cost=cost),
        "tags": ["generation"],
        "parameters": [_REQUEST_ID_PARAM],
        "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
        "responses": {"200": ok_response, **{str(s): _error(s, True, kind, tr) for s in statuses}},
    }}


def _validation(path: str, summary: str, cost: int, tr: Texts = ENGLISH) -> dict:
    name = path.split("/")[3]
    multipart = {
        "type": "object",
        "required": ["file"],  # an absent request part means {}
        "additionalProperties": False,  # a part of another name is a 400 UNKNOWN_PART (upload.unexpected_part)
        "properties": {
            # format binary beside 3.1's contentMediaType: any bytes (tools read a file part's type so; a fuzzer
            # otherwise "breaks" it by sending `true` or `5.6e16`, which are bytes like any other)
            "file": {"type": "string", "format": "binary", "contentMediaType": "application/octet-stream",
                     "description": "The document to validate."},
            "request": {"$ref": REF.format(model="XRechnungValidationRequest")},
        },
    }
    statuses = [400, 401, 402, 406, 413, 415, 429, 500, 503] if cost else [400, 401, 406, 413, 415, 429, 500, 503]
    return {"post": {
        "operationId": f"validate_{name}",
        "summary": summary,
        "description": tr.join(tr("HTTP 200 means validation completed; read `valid`. "
                       "Warnings never make a document invalid. "
                       "`verdict` (an extension) tells a document not judged from one found wrong: `indeterminate` "
                       "(`valid` false) when it claims rules this service does not have (another EN 16931 edition, an "
                       "XRechnung or Peppol BIS version, a Factur-X / ZUGFeRD profile or version, ZUGFeRD 1.0, an "
                       "unknown CIUS) or a specification this endpoint does not judge, or a required check could not "
                       "run, and the rules that ran found no error; `notJudged` says why, `rules` what judged it. "
                       "Each finding names the business terms it is about in `businessTerms` (an extension). "
                       "The report adds the content checks (`CHECK-...`, see the API description) as WARNINGs, "
                       "ERRORs with `request.strict: true`. JSON by default; `Accept: text/html` or `application/pdf` "
                       "answers the same report for people (verdict, every finding with its business term and a code "
                       "frame of the source, a valid document's invoice page), in `request.metadataLanguage`."),
                       tr.costs(cost)),
        "tags": ["validation"],
        "parameters": [_REQUEST_ID_PARAM],
        "requestBody": {"required": True, "content": {"multipart/form-data": {
            "schema": multipart, "encoding": {"request": {"contentType": "application/json"}}}}},
        "responses": {"200": _ok("Validation report.", {
            "application/json": {"schema": {"$ref": REF.format(model="XRechnungValidationResponse")}},
            "text/html": {"schema": {"type": "string"}},
            "application/pdf": {"schema": {"type": "string", "contentMediaType": "application/pdf"}}}),
            **{str(s): _error(s, True, "validate_pdf" if name == "zugferd" else "validate_xml", tr)
               for s in statuses}},
    }}


def _entry(german: bool = False) -> dict:
    """The entry of a document in a batch's `results` (and, `german`, a line of a job's results: its `error` and
    `notice` carry `messageDe`, pipeline.flows.validation_report.with_german)."""
    entry = {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "description": "The member's name in the archive, the part's filename, or for "
                 "an e-mail's document the message (date, sender, subject, Message-ID) / the attachment's name."},
        "email": {"type": "object", "description": "The message a document came from.", "properties": {
            k: {"type": "string"} for k in ("messageId", "date", "from", "subject")} | {
            "index": {"type": "integer", "description": "The message's position in its .mbox (1: an .eml)."}}},
        "signature": {"type": "object", "required": ["status", "meaning"], "description": "What the signature of the "
                      "signed file (.p7m, an S/MIME-signed message) a document came out of says: `intact` (the "
                      "document is as the certificate's holder, `signer`, signed it; whether that certificate is to "
                      "be trusted is not checked), `broken` (changed after signing, or not the signer's signature) "
                      "or `unchecked` (no certificate in the file, an algorithm not supported, a damaged block). The "
                      "document is worked on whatever it says.", "properties": {
                          "status": {"type": "string", "enum": ["intact", "broken", "unchecked"]},
                          "signer": {"type": "string"}, "signedAt": {"type": "string", "format": "date-time"},
                          "certificateValid": {"type": "boolean", "description": "Whether every signer's "
                                               "certificate was within its validity period at `signedAt` (absent "
                                               "where the signature does not say when it was made); one that was "
                                               "not is named in the meaning with its period."},
                          "meaning": {"type": "object", "description": "The status as a sentence, in English and "
                                      "German.", "properties": {"en": {"type": "string"}, "de": {"type": "string"}}}}},
        "report": {"$ref": REF.format(model="XRechnungValidationResponse")},
        "error": {"type": "object", "required": ["code", "message"], "properties": {
            "code": {"type": "string"}, "message": {"type": "string"},
            "errors": {"type": "array", "items": {"$ref": REF.format(model="ErrorDetail")},
                       "description": "The single endpoint's errors[] where it gives any."}}},
        "notice": {"type": "object", "required": ["code", "message"], "description": "`NO_INVOICE`: a message "
                   "without an invoice (not an error, not charged).", "properties": {
                       "code": {"type": "string"}, "message": {"type": "string"}}}}}
    if german:
        said = entry["properties"]
        for kind in ("error", "notice"):
            said[kind]["properties"]["messageDe"] = {"type": "string", "description": _ENTRY_GERMAN}
        said["error"]["properties"]["errors"]["description"] = (
            "The single endpoint's errors[] where it gives any, each with `messageDe` as the error has it.")
        said.update({
            "invoice": {"type": "object", "description": "parse: the invoice JSON POST /v1/invoice/parse answers."},
            "mediaType": {"type": "string", "description": "convert: the document's media type."},
            "conversion": {"type": "object", "description": "convert: what the endpoint's X-Conversion-* and "
                           "X-Source-Findings headers say (`judgedOn`, `sourceFindings`, `changed`, `lost`, "
                           "`technical`, `targetRules`, `targetFindings`); an entry of `changed`, and of `lost` with "
                           "a reason of its own, says it in `reason`, in German in `reasonDe`."},
            "document": {"type": "string", "contentEncoding": "base64", "description": "convert: the document."}})
    return entry


# A job's line says in German too why a document has no result: one sentence per code, as the web page and the
# ZIP's pages for people say it
_ENTRY_GERMAN = ("Extension. The message in German, in every job whatever its language: the service's own where it "
                 "wrote one (`messageDe` of an error's errors[]), else the sentence the web page shows for the code; "
                 "absent where there is none.")


def _batch(path: str, summary: str, cost: int, tr: Texts = ENGLISH) -> dict:
    """A batch: the single endpoint's report per document (pipeline.service.resources.batch)."""
    op = _validation(path.removesuffix("/batch"), summary, cost, tr)["post"]
    op["requestBody"]["content"]["multipart/form-data"]["schema"]["required"] = ["file"]
    op["requestBody"]["content"]["multipart/form-data"]["schema"]["properties"]["file"]["description"] = (
        "Documents, ZIP archives, signed files (.p7m: the document inside) or e-mails (.eml, .mbox, Outlook's .msg: "
        "each message's XML, PDF, ZIP and winmail.dat attachments), one per `file` part (repeat the part).")
    count = {"type": "integer", "minimum": 0}
    result = _entry()
    op.update(operationId=f"validate_batch_{path.split('/')[3]}", description=tr.join(tr(
        "HTTP 200: every document got an entry in `results`, in archive (or part) order: `report` exactly as the "
        "single validate endpoint answers it (content checks and `request.strict` included) for what the document "
        "is (a PDF on XML rules as a ZUGFeRD / Factur-X PDF, XML on the ZUGFeRD batch on the rules it names), or "
        "`error` (code, "
        "message) when it could not be validated: `UNSAFE_NAME` (a `..` or absolute name; not read), "
        "`NESTED_ARCHIVE` (a ZIP inside the batch; not opened), `FILE_TOO_LARGE` (a member over "
        "EINVOICE_MAX_UPLOAD_BYTES uncompressed; read no further), the single endpoint's 400s (`INVALID_PDF`), "
        "archives, e-mails, Outlook messages and signed files: {codes} (README: receiving by e-mail), "
        "`TIME_BUDGET` (the request's time budget, EINVOICE_REQUEST_BUDGET, was spent before this "
        "document: the batch answers what it has done; send the rest to the jobs API, POST /v1/jobs). One bad "
        "document never fails the others. The whole batch is refused with 400 "
        "`TOO_MANY_FILES` (more than EINVOICE_MAX_BATCH_FILES documents, default 200) or `INVALID_ARCHIVE` (its one file is no readable ZIP; one among several files is an entry), and "
        "413 when the body exceeds EINVOICE_MAX_UPLOAD_BYTES or the archive decompresses to more than 5 times it "
        "(`BATCH_TOO_LARGE`, a zip bomb). JSON only.", codes=", ".join(
            f"`{code}`" for code in ENTRY_CODES if code not in _DESCRIBED_ENTRY_CODES)),
        tr("Costs {cost} credit(s) per validated document (refused members cost nothing); 402 before any "
           "validation when the balance does not cover the batch.", cost=cost) if cost else
        tr("Costs no credits (the single validate endpoint's cost, per validated document).")))
    op["responses"] = {"200": _ok("Summary and one entry per document.", {"application/json": {"schema": {
        "type": "object", "required": ["summary", "results"], "properties": {
            "summary": {"type": "object", "required": ["files", "valid", "invalid", "indeterminate", "errors",
                                                       "noInvoice"],
                        "properties": {k: count for k in ("files", "valid", "invalid", "indeterminate", "errors",
                                                          "noInvoice")},
                        "description": "`invalid`: every report whose `valid` is false; `indeterminate`: how many "
                                       "of those have the verdict indeterminate (not judged, rather than wrong)."},
            "results": {"type": "array", "items": result}}}}}),
        **{str(s): _error(s, True, "batch", tr) for s in (400, 401, 402, 406, 413, 415, 429, 500, 503)}}
    return {"post": op}


_JOB = {"type": "object", "required": ["id", "state", "operation", "total", "done", "valid", "invalid", "errors",
                                        "createdAt", "startedAt", "finishedAt"], "properties": {
    "id": {"type": "string"}, "state": {"type": "string", "enum": list(JOB_STATES)},
    "operation": {"type": "string", "enum": ["validate", "parse", "convert"]},
    **{k: {"type": "integer", "minimum": 0} for k in ("total", "done", "valid", "invalid", "errors")},
    # (a job of EINVOICE_MAX_JOB_FILES documents at a price of up to 2**31 - 1 each holds more than int32 carries)
    "creditsReserved": {"type": "integer", "format": "int64", "minimum": 0, "description": "Extension. The credits "
                        "held when the job was accepted (its documents at the operation's price); it stays as held: "
                        "when the job ends (done, failed or cancelled) what was not charged goes back to the key."},
    "creditsCharged": {"type": "integer", "format": "int64", "minimum": 0, "description": "Extension. The credits "
                       "charged for the documents delivered so far; once the job has ended, what it cost."},
    "noInvoice": {"type": "integer", "minimum": 0, "description": "Messages without an invoice (NO_INVOICE notices; "
                  "not errors, not charged)."},
    "indeterminate": {"type": "integer", "minimum": 0, "description": "Of `invalid`: the documents whose verdict "
                      "is indeterminate (not judged, rather than found wrong)."},
    "unchecked": {"type": "integer", "minimum": 0, "description": "Extension. Documents that got their result "
                  "without being validated (a parse job without `validate`): neither `valid` nor `invalid`."},
    **{k: {"type": ["string", "null"], "format": "date-time"} for k in ("createdAt", "startedAt", "finishedAt")},
    "message": {"type": "string", "description": "Why the job failed."},
    "messageDe": {"type": "string", "description": "Extension. Why the job failed, in German (absent where there is "
                  "no German of the message)."}}}
_JOB_ID = {"name": "job_id", "in": "path", "required": True, "schema": {"type": "string"}}


def _jobs(config: PlatformConfig, tr: Texts = ENGLISH) -> dict:
    """The jobs API (pipeline.service.resources.jobs)."""
    other_params = "A query parameter this operation does not take is refused (400 UNKNOWN_FIELD), not ignored."

    def op(op_id, summary, ok_status, ok, statuses, description="", **extra):
        return {"operationId": op_id, "summary": summary, "description": description, "tags": ["jobs"],
                "parameters": [_REQUEST_ID_PARAM] + extra.pop("parameters", []), **extra,
                "responses": {ok_status: ok, **{str(s): _error(s, True, "jobs", tr) for s in statuses}}}

    job = {"application/json": {"schema": _JOB}}
    accepted = _ok("The job, queued.", job)
    accepted["headers"].update(_headers("Location"))
    request = {"type": "object", "additionalProperties": False, "description": (
        "The keys the operation takes (`validate`: operation, spec, version, strict, html, metadataLanguage; "
        "`parse`: operation, validate; `convert`: operation, to, spec, profile, metadataLanguage, allowLoss); any "
        "other key is refused (400 UNKNOWN_FIELD), not ignored."), "properties": {
        "operation": {"type": "string", "enum": list(OPERATIONS), "default": "validate"},
        "spec": {"type": "string", "description": tr(
            "validate: auto (default: each document's rules detected from it, as the web page and `pipeline "
            "validate` do), {validate_specs}; convert: the target's rules ({convert_specs}; default: the source's).",
            validate_specs=", ".join(SPECS), convert_specs=", ".join(CONVERT_SPECS))},
        "version": {"type": ["string", "null"], "description": "validate with a spec: its rules' version."},
        "to": {"type": "string", "enum": ["CII", "UBL", "ZUGFERD"], "description": "convert: required."},
        "strict": {"type": "boolean", "default": False, "description": "validate: the content checks' findings are "
                   "errors, as `request.strict` of the validate endpoints."},
        "validate": {"type": "boolean", "default": False, "description": "parse: add the validation report."},
        "html": {"type": "boolean", "default": False, "description": "validate: an HTML report per document too "
                 "(the results' ZIP holds them, in metadataLanguage; a refused document gets a page saying why, "
                 "`a.pdf.error.html`, a message without an invoice one saying so)."},
        "metadataLanguage": {"type": "string", "enum": ["en", "de"], "description": "validate with html: the "
                             "reports' language; convert to ZUGFERD: the page's."},
        "profile": {"type": "string", "description": "convert to ZUGFERD: the Factur-X profile (default: the "
                    "source's, else EN16931)."},
        "allowLoss": {"type": "boolean", "default": False, "description": "convert: convert even when the target "
                      "cannot carry some source values of content; each document's line lists them "
                      "(`conversion`)."}}}
    multipart = {"type": "object", "required": ["file"], "additionalProperties": False, "properties": {
        "file": {"type": "string", "format": "binary", "description": "A document, a ZIP archive of documents, a "
                 "signed file (.p7m) or an e-mail (.eml, .mbox, Outlook's .msg: each message's invoices); repeat the "
                 "part for more."},
        "request": request}}
    results = _ok("One JSON line per document in archive order (`{name, report | invoice | document | error | "
                  "notice}`, with `email` for a document found in an e-mail; each line as `x-itemSchema` describes "
                  "it, an `error` or `notice` with `messageDe`); while the job runs, the documents done so far.",
                  {"application/jsonl": {"schema": {"type": "string"},
                                         "x-itemSchema": {"$ref": REF.format(model="JobEntry")}},
                   "application/zip": {"schema": {"type": "string", "contentMediaType": "application/zip"}}})
    results["headers"].update(_headers("X-Job-State", "X-Results-Next"))
    cancel = op("cancel_job", "Cancel a job: documents done keep their results.", "200",
                _ok("The job, cancelled (or as it ended before).", job), (400, 401, 404, 429, 500, 503),
                description="With `forget=true` the job is then deleted with its results (204), as every job is "
                            "EINVOICE_JOB_RETENTION_DAYS (default 30) after it ended.",
                parameters=[_JOB_ID, {"name": "forget", "in": "query", "required": False,
                                      "description": "Delete the job and its results after cancelling it.",
                                      "schema": {"type": "boolean", "default": False}}])
    cancel["responses"]["204"] = {"description": "The job and its results are deleted.",
                                  "headers": _headers("X-Request-Id", "RateLimit-Limit", "RateLimit-Remaining",
                                                      "RateLimit-Reset")}
    costs = ", ".join(f"{name} {config.cost('POST', path)}" for name, path in (
        ("validate", "/v1/invoice/xrechnung/validate"), ("parse", "/v1/invoice/parse"),
        ("convert", "/v1/invoice/convert")))
    return {
        "/v1/jobs": {
            "post": op("submit_job", "Submit many documents as a job, worked on in the background.", "202", accepted,
                       (400, 401, 402, 413, 415, 429, 500, 503), description=tr(
                           "Documents as `file` parts (documents, ZIP archives or e-mails, unpacked as the batch "
                           "endpoint does; refused members become `error` lines, messages without an invoice "
                           "`notice` lines), options in the `request` part. At most "
                           "EINVOICE_MAX_JOB_BYTES (default 2 GiB, 413) and EINVOICE_MAX_JOB_FILES documents. "
                           "Credits per accepted document, as its single endpoint costs ({costs}): held from the "
                           "submission (402: nothing stored), charged when the document gets its result, given "
                           "back for the rest on cancel or failure.", costs=costs),
                       requestBody={"required": True, "content": {"multipart/form-data": {"schema": multipart}}}),
            "get": op("list_jobs", "The key's jobs, newest first.", "200", _ok("The jobs.", {"application/json": {
                "schema": {"type": "object", "required": ["jobs"], "properties": {
                    "jobs": {"type": "array", "items": _JOB},
                    "next": {"type": "string", "description": "The next page's path, when there are more jobs."}}}}}),
                      (400, 401, 429, 500, 503), description=other_params, parameters=[
                          {"name": "limit", "in": "query", "required": False, "description": "Jobs per page.",
                           "schema": {"type": "integer", "minimum": 1, "maximum": MAX_JOBS_PAGE,
                                      "default": JOBS_PAGE}},
                          {"name": "before", "in": "query", "required": False,
                           "description": "The last job id of the page before (as `next` gives it).",
                           "schema": {"type": "string"}},
                          {"name": "state", "in": "query", "required": False,
                           "description": "Only jobs in these states, comma-separated (e.g. `queued,running`).",
                           "schema": {"type": "string"}}])},
        "/v1/jobs/{job_id}": {
            "get": op("get_job", "A job's state and counts.", "200", _ok("The job.", job),
                      (400, 401, 404, 429, 500, 503), description=other_params, parameters=[_JOB_ID]),
            "delete": cancel},
        "/v1/jobs/{job_id}/results": {
            "get": op("job_results", "A job's results, streamed.", "200", results, (400, 401, 404, 429, 500, 503),
                      parameters=[_JOB_ID, {"name": "format", "in": "query", "required": False, "schema": {
                          "type": "string", "enum": ["jsonl", "zip"], "default": "jsonl"}},
                                  {"name": "after", "in": "query", "required": False, "description": (
                                      "Only the entries that came after the n-th, in the order they came (each "
                                      "document's entry is numbered 1, 2, ... as it gets its result; once the job "
                                      "has ended, the documents never worked on are numbered on, in archive "
                                      "order): start with 0, then ask with X-Results-Next to read the results "
                                      "while the job runs, each entry once; a number past the last entry so far "
                                      "is a 400, as it would skip the entries between."),
                                   "schema": {"type": "integer", "minimum": 0}}])},
    }


def _reading(path: str, cost: int, tr: Texts = ENGLISH) -> dict:
    name, summary, request_model, ok = READING[path]
    multipart = {
        "type": "object",
        "required": ["file"],
        "additionalProperties": False,  # a part of another name is a 400 UNKNOWN_PART
        "properties": {
            "file": {"type": "string", "format": "binary", "contentMediaType": "application/octet-stream",
                     "description": "CII or UBL XML, or a ZUGFeRD / Factur-X PDF."},
            "request": {"$ref": REF.format(model=request_model)},
        },
    }
    statuses = {"parse": [400, 401, 413, 415, 429, 500, 503],
                "render": [400, 401, 406, 413, 415, 429, 500, 503]}.get(name, [400, 401, 406, 413, 415, 422, 429,
                                                                          500, 503])
    if cost:
        statuses = sorted(statuses + [402])
    ok_response = _ok(summary, ok)
    if name == "convert":
        ok_response["headers"].update(_headers("X-Source-Rules", "X-Source-Findings", "X-Conversion-Changed",
                                               "X-Conversion-Losses", "X-Conversion-Lost", "X-Conversion-Technical",
                                               "X-Conversion-Technical-Left", "X-Target-Rules",
                                               "X-Target-Findings"))
    return {"post": {
        "operationId": name,
        "summary": summary,
        "description": tr.costs(cost),
        "tags": ["reading"],
        "parameters": [_REQUEST_ID_PARAM],
        "requestBody": {"required": True, "content": {"multipart/form-data": {
            "schema": multipart, "encoding": {"request": {"contentType": "application/json"}}}}},
        "responses": {"200": ok_response, **{str(s): _error(s, True, name, tr) for s in statuses}},
    }}


def _public(op_id: str, summary: str, schema: dict, statuses=(), tr: Texts = ENGLISH) -> dict:
    return {"get": {
        "operationId": op_id, "summary": summary, "tags": ["service"], "security": [],
        "responses": {"200": {"description": summary, "headers": _headers("X-Request-Id"),
                              "content": {"application/json": {"schema": schema}}},
                      **{str(s): _error(s, False, op_id, tr) for s in statuses}},
    }}



# Any other value is taken as none (web.language): the pages answer every browser, so the schema says string and
# the description names the two languages (an enum made a fuzzer's `lang=xx` a request wrongly accepted).
_LANG_PARAM = {"name": "lang", "in": "query", "required": False,
               "schema": {"type": "string", "examples": ["en", "de"]},
               "description": "Language: en or de (default, and for any other value: by Accept-Language, else en)."}


def _page(path: str, tr: Texts = ENGLISH) -> dict:
    """A page (HTML, `?lang=`) or a file of the pages (by name; 404 for any other)."""
    if path in PAGES:
        op_id, summary = PAGES[path]
        media, parameters, statuses = ("text/html",), [_LANG_PARAM], ()
    else:
        op_id, summary, media = PAGE_FILES[path]
        parameters, statuses = [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}], (404,)
    ok = {m: {"schema": {"type": "object"} if m == "application/json" else {"type": "string"}} for m in media}
    return {"get": {
        "operationId": op_id, "summary": summary, "tags": ["pages"], "security": [], "parameters": parameters,
        "responses": {"200": {"description": summary, "headers": _headers("X-Request-Id"), "content": ok},
                      **{str(s): _error(s, False, op_id, tr) for s in statuses}},
    }}

_DESCRIPTION = """\
Generate XRechnung / EN 16931 (CII or UBL) and ZUGFeRD/Factur-X documents from a JSON invoice, and validate
e-invoices on the official rules.

**Authentication**: `Authorization: Bearer einv_<test|live>_<keyId>.<secret>`. 401 codes:
{auth}.

**Credits**: a delivered generated document costs credits (default 1; validation 0). With too few credits the
request is refused with 402 `INSUFFICIENT_CREDITS` before any work. Failed requests cost nothing.

**Rate limits** per key (service default {rate}/{window}s unless the key has its own): every authenticated response
carries `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` (seconds); 429 `RATE_LIMIT_EXCEEDED` adds
`Retry-After`. If the limiter cannot be read the service fails closed with 503
`RATE_LIMIT_CONFIGURATION_UNAVAILABLE` (and `Retry-After`).

**Checks the official rules miss.** Validation reports and generation add findings on the content, each with its
own code; WARNING by default, so they never change the official verdict. `request.strict: true` (validation) makes
them ERRORs; `config.strict: true` (generation) refuses the request with 400 `INVALID_INPUT`, one entry per finding
with its JSON field and business term; without it generation names them in `X-Content-Warnings`.
{checks}

**Errors** use the ErrorResponse shape. `status` is the reason class of the HTTP status: {statuses}.
Where the service specification names a code for a case, `errorCode` is that code; a finer code of ours rides in
`errors[0].code` (each response lists them as `x-refinements`, and codes the specification does not know as
`x-codes-beyond-spec`). `rejectedValue` is the value as sent, in its JSON type.
"""


def build(mounted_paths: set[str], config: PlatformConfig | None = None, texts: Texts | None = None) -> dict:
    """The document of the app whose routes are `mounted_paths`, in English or in the language of `texts` (which
    lists the texts it has no translation for in `texts.missing`)."""
    config, tr = config or PlatformConfig(), texts or ENGLISH
    components, status_components = _schemas(), openapi_status.components()
    components["JobEntry"] = _entry(german=True)  # a line of a job's results (`x-itemSchema`)
    clash = sorted(n for n in set(components) & set(status_components) if components[n] != status_components[n])
    if clash:  # one name, two models: the second would silently replace the first
        raise RuntimeError(f"OpenAPI component names used twice: {', '.join(clash)}")
    components.update(status_components)
    paths: dict[str, dict] = {}
    for path, (spec, media, summary) in GENERATION.items():
        if path in mounted_paths:
            paths[path] = _generation(spec, media, summary, config.cost("POST", path), tr)
    for path, summary in VALIDATION.items():
        if path in mounted_paths:
            paths[path] = _validation(path, summary, config.cost("POST", path), tr)
    for path, summary in BATCH.items():
        if path in mounted_paths:
            paths[path] = _batch(path, summary, config.cost("POST", path.removesuffix("/batch")), tr)
    for path in READING:
        if path in mounted_paths:
            paths[path] = _reading(path, config.cost("POST", path), tr)
    paths.update({path: item for path, item in _jobs(config, tr).items() if path in mounted_paths})
    paths.update(openapi_status.paths(mounted_paths, lambda path: config.cost("POST", path), _ok,
                                      partial(_error, tr=tr), _REQUEST_ID_PARAM, partial(_validation, tr=tr),
                                      partial(_batch, tr=tr), tr))
    paths["/healthz"] = _public("healthz", "The service is alive.", {"type": "object"})
    paths["/readyz"] = _public("readyz", "Rule packs loaded and storage reachable (503 otherwise).",
                               {"type": "object"}, statuses=(503,), tr=tr)
    paths["/v1/openapi.json"] = _public("openapi", "This document.", {"type": "object"})
    paths["/v1/openapi.json"]["get"]["parameters"] = [_LANG_PARAM]  # its texts in German with lang=de
    for path in (*PAGES, *PAGE_FILES):
        if path in mounted_paths:
            paths[path] = _page(path, tr)
    return tr.translate({
        "openapi": "3.1.0",
        "info": {
            "title": "E-invoice generation and validation service",
            "version": "v1",
            "description": tr(
                _DESCRIPTION, auth=", ".join(f"`{c}` ({tr(t)})" for c, t in apikeys.AUTH_CODES.items()),
                rate=config.rate_limit, window=config.rate_window,
                checks="\n".join(tr("- `{code}`: {what} *Why:* {why}", code=code, what=tr(what), why=tr(why))
                                 for code, (what, why) in CHECKS.items()),
                statuses=", ".join(f"`{v}` = {k}" for k, v in sorted(STATUS_TEXT.items()))),
        },
        "servers": [{"url": "/"}],
        "security": [{"bearerAuth": []}],
        "paths": _with_int32(paths),
        "components": {
            "schemas": _with_int32(copy.deepcopy(components)),
            "headers": copy.deepcopy(_HEADERS),
            "securitySchemes": {"bearerAuth": {
                "type": "http", "scheme": "bearer",
                "bearerFormat": "API key: einv_<test|live>_<keyId>.<secret>",
            }},
        },
    })

