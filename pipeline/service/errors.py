"""Turn every failure into the ErrorResponse shape (service spec 2.11), in one place."""
from __future__ import annotations

import logging
import re

import falcon

from pipeline.errors import STATUS_TEXT, ApiError, ErrorDetail
from pipeline.invoice.request_json import dumps

log = logging.getLogger("pipeline.service")

# Falcon's own HTTP errors (routing, method, media) -> our stable codes.
_FALCON_CODES = {
    400: "INVALID_INPUT",
    401: "UNAUTHORIZED",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    406: "NOT_ACCEPTABLE",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
}


def _write(req, resp, err: ApiError) -> None:
    resp.status = falcon.code_to_http_status(err.http_status)
    resp.content_type = falcon.MEDIA_JSON
    for k, v in err.headers.items():
        resp.set_header(k, v)
    # dumps: a rejectedValue sent as a number is a Decimal, written as the number sent (spec 2.11 "as sent"). A
    # string sent with half a surrogate pair (`"\ud800"`: JSON's grammar allows it, no UTF-8 can carry it) can only
    # be inside a JSON string here, where backslashreplace writes it back as the very escape that was sent.
    resp.data = dumps(err.to_dict(getattr(req.context, "request_id", None))).encode("utf-8", "backslashreplace")


def handle_api_error(req, resp, ex: ApiError, params) -> None:
    _write(req, resp, ex)


def handle_http_error(req, resp, ex: falcon.HTTPError, params) -> None:
    status = ex.status_code
    code = _FALCON_CODES.get(status, STATUS_TEXT.get(status, "ERROR").upper())
    headers = dict(ex.headers or {})
    message = ex.description or _said(status, req, headers) or ex.title or "Request failed"
    _write(req, resp, ApiError(status, code, message, _header_named(ex, message), headers=headers))


def _header_named(ex: falcon.HTTPError, message: str) -> list[ErrorDetail]:
    """A missing or malformed header (a multipart Content-Type without a boundary, or one beyond RFC 2046's 70
    characters) named as the field at fault, as the body's fields are. Falcon keeps the name only in its
    description ('The value provided for the "Content-Type" header is invalid. ...')."""
    named = re.search(r'"([^"]+)" header', message)
    if not named or not isinstance(ex, (falcon.HTTPInvalidHeader, falcon.HTTPMissingHeader)):
        return []
    code = "INVALID_HEADER" if isinstance(ex, falcon.HTTPInvalidHeader) else "MISSING_HEADER"
    return [ErrorDetail(code, message, field=f"header {named.group(1)}")]


def _said(status: int, req, headers: dict) -> str | None:
    """Falcon's routing errors in words: its own are the bare status line ("405 Method Not Allowed")."""
    if status == 404:
        return no_resource(req.path)
    if status == 405:
        return method_not_allowed(req.method, req.path, headers.get("Allow") or headers.get("allow") or "")
    return None


def no_resource(path: str) -> str:
    """A 404's message, the app's and `pipeline serve`'s worker's (which gives it before the body)."""
    return f"There is no resource at {path}; the API's paths are listed in /v1/openapi.json (or /docs)."


def method_not_allowed(method: str, path: str, allowed: str) -> str:
    """A 405's message, the app's and `pipeline serve`'s worker's (which gives it before the body)."""
    return f"{method} is not allowed on {path}" + (f"; it answers {allowed}." if allowed else ".")


def handle_unexpected(req, resp, ex: Exception, params) -> None:
    rid = getattr(req.context, "request_id", None)
    log.exception("unhandled error request_id=%s path=%s", rid, req.path)
    _write(req, resp, ApiError(500, "INTERNAL_ERROR", "Internal error; quote the request id when reporting it."))


def install(app: falcon.App) -> None:
    # Order matters: Falcon picks the most specific registered type.
    app.add_error_handler(Exception, handle_unexpected)
    app.add_error_handler(falcon.HTTPError, handle_http_error)
    app.add_error_handler(ApiError, handle_api_error)
