"""The reading endpoints: POST /v1/invoice/parse (an e-invoice -> the JSON invoice generation takes).

HTTP only: multipart `file` + optional `request` JSON part; the work is `pipeline.flows.parse`."""
from __future__ import annotations

import falcon

from pipeline.errors import ApiError, ErrorDetail
from pipeline.flows.parse import parse_report
from pipeline.invoice.request_json import dump_request
from pipeline.service.upload import read_validation_upload


def _flag(request: dict, name: str) -> bool:
    value = request.get(name, False)
    if not isinstance(value, bool):
        raise ApiError(400, "INVALID_INPUT", f"'{name}' must be true or false.",
                       [ErrorDetail("INVALID_TYPE", "must be a boolean", field=f"request.{name}", rejectedValue=value)])
    return value


class Parse:
    def on_post(self, req, resp):
        data, request = read_validation_upload(req, request_optional=True)
        result = parse_report(data, _flag(request, "validate"), getattr(req.context, "request_id", None))
        resp.data = dump_request(result)  # amounts as JSON numbers, exactly as the document states them
        resp.content_type = falcon.MEDIA_JSON


def add_routes(app: falcon.App) -> None:
    app.add_route("/v1/invoice/parse", Parse())
