"""The OpenAPI description of France's lifecycle status messages (CDV): the endpoints of
`pipeline.service.resources.status` and the status batch, their request and response schemas. The request schema is
the model's (`pipeline.invoice.cdar.StatusRequest`, each field with its MDT term); responses are the validation
report and the shapes below, which tests hold against real answers. `pipeline.service.openapi.build` adds them."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from pipeline.invoice.cdar import StatusRequest
from pipeline.service import schemas
from pipeline.service.openapi_text import ENGLISH, Texts
from pipeline.service.resources.status import BASE, VALIDATE

REF = "#/components/schemas/{model}"
# The error codes of these endpoints beyond every endpoint's (pipeline.service.openapi.ERROR_CODES takes them).
ERROR_CODES = {
    "generate_status": {422: ("VALIDATION_FAILED",), 500: ("GENERATION_FAILED", "RULES_NOT_INSTALLED",
                                                           "RULES_UNAVAILABLE")},
    "read_status": {400: ("NOT_A_STATUS_MESSAGE", "TOO_MANY_FILES", "TOO_MANY_LINES"),
                    500: ("READ_FAILED", "RULES_NOT_INSTALLED", "RULES_UNAVAILABLE")},
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StatusValidationResponse(schemas.XRechnungValidationResponse):
    """The validation report of every validate endpoint, about a status message: `syntax` CDAR."""
    syntax: Literal["CDAR"] = Field(None, description="CDAR: a UN/CEFACT Cross Domain Acknowledgement and Response "
                                                      "message. Absent (never null) when the document is no readable "
                                                      "CDAR message (`valid` is then false).",
                                    json_schema_extra=lambda schema: schema.pop("default", None))


_NAMES = ("Each code of the message that has a name (business process MDT-2, status, role, reason, ...), by its "
          "JSON path: `code` and its name in French (`fr`), English (`en`) and German (`de`, this service's wording).")


class StatusParseResponse(_Strict):
    message: dict[str, Any] = Field(description="The message (MDT-4 id, parties ...), as the status request has it.")
    status: dict[str, Any] = Field(description="The status (MDT-105 code, MDT-106 name, reasons, amounts ...).")
    invoice: dict[str, Any] = Field(description="The invoice it is about (MDT-87 number, MDT-100 date, SIRENs ...).")
    complete: bool = Field(description="false: POST /v1/invoice/fr-ctc/status would refuse `{message, status, "
                                       "invoice}` (see `missing`, `problems`).")
    missing: list[str] = Field(description="JSON paths of required fields the message lacks.")
    problems: list[schemas.ErrorDetail] | None = Field(None, description="Other values the model refuses.")
    names: dict[str, dict[str, str]] = Field(description=_NAMES)
    unmapped: list[dict[str, str]] = Field(description="Every value of the message (`xpath`, `value`) the JSON does "
                                                       "not carry, e.g. a second invoice of a message about several.")
    validation: StatusValidationResponse | None = Field(
        None, description="With request.validate: the fr-cdar chain's report on the message.")



def components() -> dict:
    models = (StatusRequest, StatusValidationResponse, StatusParseResponse, schemas.StatusReadRequest,
              schemas.StatusRenderRequest)
    _, top = models_json_schema([(m, "validation") for m in models], ref_template=REF)
    return top.get("$defs", {})


_TIMELINE = {"type": "object", "required": ["invoices", "unread"], "properties": {
    "invoices": {"type": "array", "items": {"type": "object", "required": ["invoice", "statuses"], "properties": {
        "invoice": {"type": "object", "description": "The invoice's data, merged from its messages; its receipt "
                    "time (MDT-95) and reference type (MDT-97) are each status's own (see the status's invoice)."},
        "conflicts": {"type": "array", "description": "The invoice's data its messages state differently (issue "
                      "date, type code, buyer's SIREN); absent when they agree.", "items": {
                          "type": "object", "required": ["field", "values"], "properties": {
                              "field": {"type": "string"}, "values": {"type": "array", "items": {
                                  "type": "object", "required": ["value", "files"], "properties": {
                                      "value": {"type": "string"},
                                      "files": {"type": "array", "items": {"type": "string"}}}}}}}},
        "statuses": {"type": "array", "description": "Ordered by status date-time (MDT-78), then the message's "
                     "(MDT-8).", "items": {"type": "object",
                                           "required": ["file", "message", "status", "invoice", "names"],
                                           "properties": {
                         "file": {"type": "string"}, "message": {"type": "object"}, "status": {"type": "object"},
                         # parse's own description (StatusParseResponse.names): the same names, of this status
                         "names": {"type": "object", "description": _NAMES,
                                   "additionalProperties": {"type": "object", "required": ["code", "fr", "en", "de"],
                                                            "properties": {k: {"type": "string"} for k in
                                                                           ("code", "fr", "en", "de")}}},
                         "invoice": {"type": "object", "description": "The invoice as this message states it, with "
                                     "the receipt time (MDT-95) of the side reporting this status."},
                         "copies": {"type": "array", "items": {"type": "string"}, "description":
                                    "Other files holding the same message (same MDT-4, same content)."},
                         "sameIdentifier": {"type": "array", "items": {"type": "string"}, "description":
                                            "Files whose message has this one's identifier (MDT-4) but says "
                                            "something else; absent when none does."},
                         "reference": {"type": "integer", "minimum": 1, "description": "A message about several "
                                       "invoices (MDT-74 true) is a status of each: the position of this one's "
                                       "referenced document in it; absent for a message about one invoice."},
                         "references": {"type": "integer", "minimum": 2, "description": "How many invoices that "
                                        "message reports a status of."},
                         "validation": {"type": "object"}}}}}}},
    "unread": {"type": "array", "items": {"type": "object", "required": ["file", "error"], "properties": {
        "file": {"type": "string"}, "error": {"type": "object", "required": ["code", "message"], "properties": {
            "code": {"type": "string"}, "message": {"type": "string"}}}}}}}}


def _multipart(request_model: str, many: bool) -> dict:
    file = {"type": "string", "format": "binary", "contentMediaType": "application/octet-stream",
            "description": "A status message (CDAR XML)" + ("; repeat the part for several (at most "
                                                           "EINVOICE_MAX_BATCH_FILES)." if many else ".")}
    schema = {"type": "object", "required": ["file"], "additionalProperties": False,  # other parts: 400 UNKNOWN_PART
              "properties": {"file": file, "request": {"$ref": REF.format(model=request_model)}}}
    return {"required": True, "content": {"multipart/form-data": {
        "schema": schema, "encoding": {"request": {"contentType": "application/json"}}}}}


def _status_reports(item: dict) -> None:
    """The reports of an operation built like the invoices' validation (pipeline.service.openapi): about status
    messages (StatusValidationResponse, syntax CDAR)."""
    def swap(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "$ref" and value == REF.format(model="XRechnungValidationResponse"):
                    node[key] = REF.format(model="StatusValidationResponse")
                else:
                    swap(value)
        elif isinstance(node, list):
            for value in node:
                swap(value)
    swap(item["post"]["responses"]["200"])


def paths(mounted: set[str], costs, ok, error, request_id_param, validation, batch, tr: Texts = ENGLISH) -> dict:
    """The status paths mounted in the app. `costs(path)`: its credits; `ok`, `error`, `validation`, `batch`: the
    builders of pipeline.service.openapi, so that these operations read like the others; `tr`: the texts' language
    where they are composed (pipeline.service.openapi_text)."""
    out: dict[str, dict] = {}

    def operation(path, op_id, summary, description, tags, body, ok_response, statuses, kind):
        cost = costs(path)
        if cost:
            statuses = sorted(set(statuses) | {402})
        return {"post": {"operationId": op_id, "summary": summary, "tags": tags, "parameters": [request_id_param],
                         "description": tr.join(tr(description), tr.costs(cost)),
                         "requestBody": body, "responses": {"200": ok_response,
                                                            **{str(s): error(s, True, kind) for s in statuses}}}}

    path = BASE
    if path in mounted:
        answer = ok("The lifecycle status message (CDAR D22B), valid on the fr-cdar chain.",
                    {"application/xml": {"schema": {"type": "string"}}, "text/xml": {"schema": {"type": "string"}}})
        answer["headers"]["X-Validation-Warnings"] = {"$ref": "#/components/headers/X-Validation-Warnings"}
        out[path] = operation(
            path, "generate_fr_ctc_status", "Generate a lifecycle status message (CDV) of France's reform from JSON.",
            "The status (code and name, date-time, reasons, amounts received per VAT rate), the invoice it is about "
            "and the parties. What the BR-FR-CDV rules require for the status is checked first: 400 INVALID_INPUT, "
            "one entry per field with its MDT term in `businessTerm`. The message is validated on the fr-cdar chain "
            "(XSD, BR-FR-CDV, BR-FR-CDV warnings) before it leaves: 422 VALIDATION_FAILED otherwise.",
            ["generation"], {"required": True, "content": {"application/json": {
                "schema": {"$ref": REF.format(model="StatusRequest")}}}},
            answer, [400, 401, 406, 413, 415, 422, 429, 500, 503], "generate_status")
    if VALIDATE in mounted:
        item = validation(VALIDATE, "Validate a lifecycle status message (CDV) on France's rules (fr-cdar).",
                          costs(VALIDATE))
        item["post"]["operationId"] = "validate_fr_cdar"
        _status_reports(item)
        item["post"]["description"] = tr.join(tr(
            "The fr-cdar chain: the UN/CEFACT CDAR D22B XSD, FNFE-MPE's BR-FR-CDV rules (flags as written) and their "
            "_WARNING publication (every finding a WARNING). HTTP 200 means validation completed; read `valid`. "
            "Rule ids name the MDT term they judge (BR-FR-CDV-14_MDT-207); French rule texts as published; "
            "`syntax` is CDAR. `Accept: text/html` or `application/pdf`: the report for people (a valid message's "
            "page below it)."), tr.costs(costs(VALIDATE)))
        out[VALIDATE] = item
    path = VALIDATE + "/batch"
    if path in mounted:
        item = batch(path, "Validate many lifecycle status messages (CDV) at once: a ZIP archive or several "
                           "`file` parts.", costs(VALIDATE))
        item["post"]["operationId"] = "validate_batch_fr_cdar"
        _status_reports(item)
        out[path] = item
    path = BASE + "/parse"
    if path in mounted:
        out[path] = operation(
            path, "parse_fr_ctc_status", "Read a lifecycle status message (CDV) into the JSON generation takes.",
            "`message`, `status` and `invoice` can be posted to /v1/invoice/fr-ctc/status unchanged: it writes the "
            "same message again.", ["reading"], _multipart("StatusReadRequest", False),
            ok("The status JSON.", {"application/json": {"schema": {"$ref": REF.format(model="StatusParseResponse")}}}),
            [400, 401, 413, 415, 429, 500, 503], "read_status")
    path = BASE + "/timeline"
    if path in mounted:
        out[path] = operation(
            path, "fr_ctc_status_timeline", "Several status messages -> each invoice's statuses in time order.",
            "Grouped by the invoice they are about (seller's SIREN and invoice number); files that are no status "
            "message are listed in `unread`.", ["reading"], _multipart("StatusReadRequest", True),
            ok("The timeline of each invoice.", {"application/json": {"schema": _TIMELINE}}),
            [400, 401, 406, 413, 415, 429, 500, 503], "read_status")
    path = BASE + "/render"
    if path in mounted:
        out[path] = operation(
            path, "render_fr_ctc_status", "The readable page of one status message or of several (a timeline).",
            "PDF (default) or HTML (Accept: text/html), in English, French or German (request.language); each value "
            "named with its MDT term.", ["reading"], _multipart("StatusRenderRequest", True),
            ok("The page.", {"application/pdf": {"schema": {"type": "string", "contentMediaType": "application/pdf"}},
                             "text/html": {"schema": {"type": "string"}}}),
            [400, 401, 406, 413, 415, 429, 500, 503], "read_status")
    return out
