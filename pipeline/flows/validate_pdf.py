"""Product path: validate a ZUGFeRD / Factur-X PDF.

    read the PDF (bounded) -> PDF/A-3 -> Factur-X XMP -> embedded invoice file -> its XML on the profile rules its
    guideline id names (XSD + Schematron, plus the EN 16931 / XRechnung packs) -> report
"""
from __future__ import annotations

from pipeline.check.report import Report
from pipeline.invoice.specs import RULES_VERSION
from pipeline.pdf import checks


def validate_pdf(data: bytes, request_id: str | None = None) -> Report:
    """A ZUGFeRD / Factur-X PDF -> report (service spec 2.10). Not a PDF -> ApiError 400 INVALID_PDF."""
    try:
        result = checks.inspect(data)
    except checks.NotAPdf as exc:
        raise checks.not_a_pdf(exc) from exc
    version = RULES_VERSION + (f" {result.profile.name}" if result.profile else "")
    return Report(version, "CII" if result.xml is not None else None, result.issues, request_id)
