"""POST /v1/invoice/zugferd (JSON InvoiceRequest -> Factur-X PDF/A-3) and /v1/invoice/zugferd/validate
(multipart PDF upload -> validation report, service spec 2.10 / 4.2).

HTTP only; the work is `pipeline.flows.generate_zugferd` and `pipeline.flows.validate_pdf`.
"""
from __future__ import annotations

import falcon

from pipeline.errors import ApiError
from pipeline.flows.generate_zugferd import generate_zugferd
from pipeline.flows.validate_pdf import validate_pdf
from pipeline.invoice.specs import VERSIONS, facturx_release
from pipeline.service.resources.generation import read_invoice_request, set_content_warnings
from pipeline.service.upload import answer_report, read_validation_upload, report_media, strict_flag

PDF = "application/pdf"
# request.version on the validate endpoint: the Factur-X rules release, also spelled as a report's `version` names
# it (`Factur-X 1.09 EN16931`), so that the version of a report can be sent back (specs.facturx_release).
SUPPORTED_VERSIONS = VERSIONS


class GenerateZugferd:
    def read_input(self, req):
        return read_invoice_request(req, "zugferd", PDF)

    def on_post(self, req, resp):
        body, request = self.read_input(req)
        findings, rule_warnings = [], []
        resp.data = generate_zugferd(body, getattr(req.context, "request_id", None), warnings=findings,
                                     request=request, rule_warnings=rule_warnings)
        resp.content_type = PDF
        # as on the XML endpoints: every warning, the official rules' and the content checks'
        resp.set_header("X-Validation-Warnings", str(len(rule_warnings) + len(findings)))
        set_content_warnings(resp, findings)


class ValidateZugferd:
    def on_post(self, req, resp):
        media = report_media(req)
        data, request = read_validation_upload(req)
        version = request.get("version")
        if version is not None and facturx_release(version) is None:
            raise ApiError(400, "UNSUPPORTED_VERSION", f"ZUGFeRD validation version {version!r} is not supported; "
                           f"supported: {', '.join(SUPPORTED_VERSIONS)}")
        report = validate_pdf(data, getattr(req.context, "request_id", None), content_checks=True,
                              strict=strict_flag(request))
        answer_report(req, resp, data, request, report, media)


def add_routes(app: falcon.App) -> None:
    app.add_route("/v1/invoice/zugferd", GenerateZugferd())
    app.add_route("/v1/invoice/zugferd/validate", ValidateZugferd())
