"""Product path: validate an e-invoice on the French reform's rules (`fr-ctc`): UBL or CII XML, or a Factur-X PDF
(by its `%PDF-` header), as POST /v1/invoice/fr-ctc/validate, its batch endpoint and `pipeline validate --spec
fr-ctc` take them. XML: `validate_xml` with the French chain (`pipeline.check.fr_ctc`); a PDF: the ZUGFeRD
endpoint's checks of the PDF and the French chain on the embedded invoice, as for XML. The report's `version` is the FNFE release."""
from __future__ import annotations

from pipeline.check import engine
from pipeline.check.detect import is_pdf
from pipeline.check.fr_ctc import SPEC
from pipeline.check.report import Report
from pipeline.flows.validate_pdf import validate_pdf
from pipeline.flows.validate_xml import validate_xml


def validate_fr_ctc(data: bytes, version: str | None = None, request_id: str | None = None,
                    content_checks: bool = False, strict: bool = False) -> Report:
    """Raises ApiError 400 for an unsupported version (and INVALID_PDF for a PDF that cannot be read)."""
    if not is_pdf(data):
        return validate_xml(data, SPEC, version, request_id, content_checks=content_checks, strict=strict)
    engine.check_spec(SPEC, version)
    pack = engine.pick_pack(SPEC, version, "CII")
    return validate_pdf(data, request_id, content_checks=content_checks, strict=strict, french=pack)
