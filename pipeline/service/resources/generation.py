"""POST /v1/invoice/xrechnung and /v1/invoice/en16931: JSON InvoiceRequest -> validated XML (spec 4.1).

HTTP only: content negotiation and reading the body. The work is `pipeline.flows.generate_xml`.
Warnings reach the client in headers: `X-Validation-Warnings` counts them (the official rules' and the content
checks'), `X-Content-Warnings` names each content-check finding as `CODE field (BT)`.
"""
from __future__ import annotations

import falcon

from pipeline.check import content
from pipeline.errors import ApiError
from pipeline.flows.generate_xml import SPECS, generate_xml, parse
from pipeline.service.upload import refuse_encoded
from pipeline.settings import get_settings

XML = "application/xml"
TEXT_XML = "text/xml"  # the same documents (RFC 7303); clients written for SOAP-era services ask for it
CONTENT_WARNINGS = "X-Content-Warnings"
_MAX_HEADER = 2000


def set_content_warnings(resp, findings) -> None:
    """`X-Content-Warnings: CODE field (BT); ...` (cut after 2000 characters) when a content check found
    something; no header otherwise. Field paths and codes are ASCII, as a header must be."""
    text = "; ".join(content.fields(findings))
    if text:
        resp.set_header(CONTENT_WARNINGS, text if len(text) <= _MAX_HEADER else text[:_MAX_HEADER - 3] + "...")


def check_media(req, produces: str = XML) -> None:
    """406 when the Accept header excludes what the endpoint produces (none and */* accept it);
    415 unless the body is JSON. Shared by every generation endpoint."""
    if not req.client_accepts(produces) and not (produces == XML and req.client_accepts(TEXT_XML)):
        raise ApiError(406, "NOT_ACCEPTABLE", f"This endpoint returns {produces}; the Accept header excludes it.")
    refuse_encoded(req)
    media = (req.content_type or "").split(";", 1)[0].strip().lower()
    if media != falcon.MEDIA_JSON:
        raise ApiError(415, "UNSUPPORTED_MEDIA_TYPE",
                       f"Content-Type must be application/json, not {req.content_type or 'missing'}.")


def xml_media(req) -> str:
    """application/xml, or text/xml for a client whose Accept header takes only that."""
    return TEXT_XML if not req.client_accepts(XML) and req.client_accepts(TEXT_XML) else XML


def read_body(req) -> bytes:
    """The body, at most the upload limit (413 beyond it). A chunked body (Transfer-Encoding, no
    Content-Length) is read from the de-chunked WSGI stream to its end; bounded_stream would see length 0."""
    limit = get_settings().max_upload_bytes
    if req.content_length is not None and req.content_length > limit:
        raise ApiError(413, "PAYLOAD_TOO_LARGE", f"The request body exceeds {limit} bytes.")
    if req.content_length is None and "chunked" in (req.get_header("Transfer-Encoding") or "").lower():
        parts, size = [], 0
        while size <= limit and (part := req.stream.read(min(1 << 16, limit + 1 - size))):
            parts.append(part)
            size += len(part)
        body = b"".join(parts)
    else:
        body = req.bounded_stream.read(limit + 1)
    if len(body) > limit:
        raise ApiError(413, "PAYLOAD_TOO_LARGE", f"The request body exceeds {limit} bytes.")
    return body


def read_invoice_request(req, spec: str, produces: str):
    """(body, InvoiceRequest) of a generation request: media types, size and the request model, once per request
    (kept on req.context). The platform calls it before it reserves credits (`read_input`), so that a malformed
    request is a 400 whatever the balance; without the platform the responder calls it."""
    read = getattr(req.context, "invoice_request", None)
    if read is None:
        check_media(req, produces)
        body = read_body(req)
        read = req.context.invoice_request = (body, parse(body, spec))
    return read


class GenerateXml:
    def __init__(self, spec: str):
        self.spec = spec

    def read_input(self, req):
        return read_invoice_request(req, self.spec, XML)

    def on_post(self, req, resp):
        body, request = self.read_input(req)
        xml, report = generate_xml(body, self.spec, getattr(req.context, "request_id", None), request)
        resp.content_type = xml_media(req)
        resp.set_header("X-Validation-Warnings", str(report.warnings))
        set_content_warnings(resp, [i for i in report.issues if content.is_content_issue(i)])
        resp.data = xml


def add_routes(app: falcon.App) -> None:
    for spec in SPECS:
        app.add_route(f"/v1/invoice/{spec}", GenerateXml(spec))
