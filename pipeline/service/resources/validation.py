"""POST /v1/invoice/xrechnung/validate, /v1/invoice/en16931/validate (service spec 4.2),
/v1/invoice/fr-ctc/validate (the French reform's rules: UBL, CII or a Factur-X PDF) and /v1/invoice/peppol/validate
(Peppol BIS Billing 3.0: UBL only; CII is 400 UNSUPPORTED_SYNTAX).

200 = validation completed (read `valid`); request-level problems are 400/413 ErrorResponses. The report adds the
checks the official rules miss (`CHECK-...`): WARNINGs, ERRORs with `request.strict: true`. JSON by default;
`Accept: text/html` or `application/pdf` answers the report for people (`request.metadataLanguage` en | de)."""
from __future__ import annotations

from pipeline.service.upload import answer_report, read_validation_upload, report_media, strict_flag
from pipeline.flows.validate_fr_ctc import validate_fr_ctc
from pipeline.flows.validate_xml import validate_xml


class XmlValidation:
    def __init__(self, spec: str):
        self.spec = spec

    def on_post(self, req, resp):
        media = report_media(req)
        data, request = read_validation_upload(req)
        report = validate_xml(data, self.spec, request.get("version"), getattr(req.context, "request_id", None),
                              content_checks=True, strict=strict_flag(request))
        answer_report(req, resp, data, request, report, media)


class FrCtcValidation:
    def on_post(self, req, resp):
        media = report_media(req)
        data, request = read_validation_upload(req)
        report = validate_fr_ctc(data, request.get("version"), getattr(req.context, "request_id", None),
                                 content_checks=True, strict=strict_flag(request))
        answer_report(req, resp, data, request, report, media)


def add_routes(app) -> None:
    app.add_route("/v1/invoice/xrechnung/validate", XmlValidation("xrechnung"))
    app.add_route("/v1/invoice/en16931/validate", XmlValidation("en16931"))
    app.add_route("/v1/invoice/fr-ctc/validate", FrCtcValidation())
    app.add_route("/v1/invoice/peppol/validate", XmlValidation("peppol"))
