"""France's lifecycle status messages (CDV, "compte rendu de vie": UN/CEFACT CDAR D22B on FNFE-MPE's BR-FR-CDV rules,
rule pack `fr-cdar`). The paths sit under the reform's own, /v1/invoice/fr-ctc, and pair as the invoice endpoints do
(POST /v1/invoice/{spec} generates, .../validate validates): a status message exists only in France's reform and
is always about one of its invoices. HTTP only; the work is in `pipeline.flows.status_*`.

    POST /v1/invoice/fr-ctc/status                 JSON status request -> the CDAR message (application/xml),
                                                   valid on the chain (400 with field and MDT term, 422)
    POST /v1/invoice/fr-ctc/status/validate        multipart `file` (+ `request`) -> the validation report (JSON,
                                                   or HTML / PDF for people), as every validate endpoint
    POST /v1/invoice/fr-ctc/status/validate/batch  many at once (pipeline.service.resources.batch)
    POST /v1/invoice/fr-ctc/status/parse           a message -> the status JSON generation takes
    POST /v1/invoice/fr-ctc/status/timeline        several messages -> each invoice's statuses in time order (JSON)
    POST /v1/invoice/fr-ctc/status/render          one message or several -> the readable page (PDF, or HTML with
                                                   Accept: text/html), French, English or German, a timeline per invoice
"""
from __future__ import annotations

import falcon

from pipeline.errors import ApiError, ErrorDetail
from pipeline.flows.status_generate import generate_status
from pipeline.flows.status_read import LANGUAGES, parse_status, render_status, timeline
from pipeline.flows.options import choice, flag
from pipeline.flows.status_validate import validate_status
from pipeline.invoice.cdar import parse_status_request
from pipeline.invoice.request_json import dump_request
from pipeline.service.resources.generation import XML, check_media, read_body, xml_media
from pipeline.service.schemas import StatusReadRequest, StatusRenderRequest
from pipeline.service.resources.reading import page_media
from pipeline.service.upload import answer_report, parse_request_part, read_parts, read_validation_upload, \
    report_media, strict_flag
from pipeline.settings import get_settings

BASE = "/v1/invoice/fr-ctc/status"
VALIDATE = BASE + "/validate"
HTML, PDF = "text/html", "application/pdf"


def _language(request: dict) -> str:
    """request.language of the page: en (default), fr or de."""
    return choice(request, "language", LANGUAGES) or "en"


def _request_id(req) -> str | None:
    return getattr(req.context, "request_id", None)


class GenerateStatus:
    def read_input(self, req):
        """(body, StatusRequest): media types, size and the model, once per request (before credits)."""
        read = getattr(req.context, "status_request", None)
        if read is None:
            check_media(req, XML)
            body = read_body(req)
            read = req.context.status_request = (body, parse_status_request(body))
        return read

    def on_post(self, req, resp):
        body, request = self.read_input(req)
        xml, report = generate_status(body, _request_id(req), request)
        resp.content_type = xml_media(req)
        resp.set_header("X-Validation-Warnings", str(report.warnings))
        resp.data = xml


class ValidateStatus:
    def on_post(self, req, resp):
        media = report_media(req)
        data, request = read_validation_upload(req)
        # `strict` is a key of this request part too (XRechnungValidationRequest); status messages have no content
        # checks for it to raise, but a value that is no boolean is a 400 as on every validate endpoint (it was taken)
        strict_flag(request)
        report = validate_status(data, request.get("version"), _request_id(req))
        answer_report(req, resp, data, request, report, media)


class ParseStatus:
    def on_post(self, req, resp):
        data, request = read_validation_upload(req, StatusReadRequest)
        resp.data = dump_request(parse_status(data, flag(request, "validate"), _request_id(req)))
        resp.content_type = falcon.MEDIA_JSON


def read_files(req, fields=StatusReadRequest) -> tuple[list[tuple[str, bytes]], dict]:
    """(files as (name, bytes), request) of an upload of one or several `file` parts, at most the batch's number
    (EINVOICE_MAX_BATCH_FILES) within one upload's size; `fields`: the request part's model."""
    limit = get_settings().max_batch_files

    def too_many(n: int) -> ApiError:
        return ApiError(400, "TOO_MANY_FILES", f"At most {limit} messages at once (EINVOICE_MAX_BATCH_FILES).",
                        [ErrorDetail("TOO_MANY_FILES", f"{n} or more file parts", field="file")])

    files, raw = read_parts(req, get_settings().max_upload_bytes, limit, too_many)
    named = [(name or f"file-{n}", data) for n, (name, data) in enumerate(files, 1)]
    return named, parse_request_part(raw, fields, req.path) if raw is not None else {}


class Timeline:
    def on_post(self, req, resp):
        if not req.client_accepts_json:
            raise ApiError(406, "NOT_ACCEPTABLE", "The timeline is application/json; the Accept header excludes it.")
        files, request = read_files(req)
        resp.data = dump_request(timeline(files, flag(request, "validate"), _request_id(req)))
        resp.content_type = falcon.MEDIA_JSON


class RenderStatus:
    def on_post(self, req, resp):
        html = page_media(req) == HTML
        files, request = read_files(req, StatusRenderRequest)
        resp.data = render_status(files, _language(request), html, flag(request, "validate"), _request_id(req))
        resp.content_type = HTML + "; charset=utf-8" if html else PDF


def add_routes(app: falcon.App) -> None:
    app.add_route(BASE, GenerateStatus())
    app.add_route(VALIDATE, ValidateStatus())
    app.add_route(BASE + "/parse", ParseStatus())
    app.add_route(BASE + "/timeline", Timeline())
    app.add_route(BASE + "/render", RenderStatus())
