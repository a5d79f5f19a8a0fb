"""The reading endpoints (multipart `file` + optional `request` JSON part, like validation). HTTP only; the work is
in `pipeline.flows`:

    POST /v1/invoice/parse     an e-invoice -> the JSON invoice generation takes (flows.parse)
    POST /v1/invoice/convert   an e-invoice -> the same invoice in CII, UBL or as a ZUGFeRD PDF (flows.convert)
    POST /v1/invoice/render    an e-invoice -> its readable page, PDF or HTML (flows.render)
"""
from __future__ import annotations

from urllib.parse import quote

import falcon

from pipeline.errors import ApiError
from pipeline.flows.convert import convert
from pipeline.flows.options import convert_options, flag, language
from pipeline.flows.parse import changed_line, parse_report
from pipeline.flows.render import render
from pipeline.invoice.request_json import dump_request
from pipeline.service.schemas import ConvertRequest, ParseRequest, RenderRequest
from pipeline.service.upload import read_validation_upload

HTML, PDF = "text/html", "application/pdf"
MAX_LOSS_HEADER = 2000  # characters of the X-Conversion-Lost header


def _request_id(req) -> str | None:
    return getattr(req.context, "request_id", None)


class Parse:
    def on_post(self, req, resp):
        data, request = read_validation_upload(req, ParseRequest)
        result = parse_report(data, flag(request, "validate"), _request_id(req))
        resp.data = dump_request(result)  # amounts as JSON numbers, exactly as the document states them
        resp.content_type = falcon.MEDIA_JSON


class Convert:
    def read_input(self, req) -> tuple:
        """(document, ConvertOptions): the upload and its options, checked once per request. The platform calls it
        before it reserves credits (a malformed request is a 400 whatever the balance)."""
        read = getattr(req.context, "convert_input", None)
        if read is None:
            data, request = read_validation_upload(req, ConvertRequest)
            read = req.context.convert_input = (data, convert_options(request))
        return read

    def on_post(self, req, resp):
        data, options = self.read_input(req)
        result = convert(data, *options.as_args(), _request_id(req))
        resp.data, resp.content_type = result.document, result.media_type
        for name, value in conversion_headers(result).items():
            resp.set_header(name, header_text(value))


def header_text(text: str) -> str:
    """A header value as HTTP carries it: visible ASCII; other characters (a BT-24 in Chinese, a line break) as
    percent-encoded UTF-8, and `%` itself as %25, so the value decodes back unambiguously. (gunicorn refuses any
    other value after the response has begun: a 500 after the work was done.)"""
    return quote(text, safe=_HEADER_SAFE)


_HEADER_SAFE = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) != "%")


def _listed(items) -> str:
    text = "; ".join(items)
    return text if len(text) <= MAX_LOSS_HEADER else text[:MAX_LOSS_HEADER] + " ..."


def conversion_headers(result) -> dict[str, str]:
    """What a conversion did besides the document (`Conversion.summary` in headers): the rules that judged the source
    and the errors of the CIUS it claims that they did not apply (X-Source-Rules, X-Source-Findings: rule ids),
    values written otherwise (X-Conversion-Changed), content left out with allowLoss (X-Conversion-Losses count,
    X-Conversion-Lost xpaths) and technical values the target has no place for (X-Conversion-Technical count,
    X-Conversion-Technical-Left xpaths); a French invoice's result held to France's rules (X-Target-Rules) and their
    errors on it (X-Target-Findings: rule ids; the document is then no valid French invoice)."""
    headers = {"X-Source-Rules": result.judged_on} if result.judged_on else {}
    if result.source_findings:
        headers["X-Source-Findings"] = _listed(dict.fromkeys(f["code"] for f in result.source_findings)).replace(
            "; ", ", ")
    if result.changed:  # e.g. BT-24 where the target specification needs its own identifier
        headers["X-Conversion-Changed"] = _listed(changed_line(c) for c in result.changed)
    if result.losses:
        headers["X-Conversion-Losses"] = str(len(result.losses))
        headers["X-Conversion-Lost"] = _listed(u["xpath"] for u in result.losses)
    if result.technical:
        headers["X-Conversion-Technical"] = str(len(result.technical))
        headers["X-Conversion-Technical-Left"] = _listed(u["xpath"] for u in result.technical)
    if result.target_rules:
        headers["X-Target-Rules"] = result.target_rules
    if result.target_findings:
        headers["X-Target-Findings"] = _listed(dict.fromkeys(f["code"] for f in result.target_findings)).replace(
            "; ", ", ")
    return headers


def page_media(req) -> str:
    """PDF or HTML, as a page endpoint answers (no Accept header or */*: PDF); 406 when the header allows neither.
    The status messages' page (resources/status.py) answers so too."""
    media = req.client_prefers([PDF, HTML])
    if media is None:
        raise ApiError(406, "NOT_ACCEPTABLE", "This endpoint returns application/pdf or text/html; the Accept "
                       "header excludes both.")
    return media


class Render:
    def on_post(self, req, resp):
        html = page_media(req) == HTML
        data, request = read_validation_upload(req, RenderRequest)
        resp.data = render(data, language(request) or "en", flag(request, "showBusinessTerms"),
                           flag(request, "validate"), html, _request_id(req))
        resp.content_type = HTML + "; charset=utf-8" if html else PDF


def add_routes(app: falcon.App) -> None:
    app.add_route("/v1/invoice/parse", Parse())
    app.add_route("/v1/invoice/convert", Convert())
    app.add_route("/v1/invoice/render", Render())
