"""Product path: the validation report as a page for people (HTML or PDF) instead of JSON.

    the report (validate_xml / validate_pdf) -> the source read (a PDF's embedded invoice; for code frames) ->
    a valid document's readable page (the reading side's canonical XML -> html.xsl; in a PDF up to
    EINVOICE_MAX_PDF_LINES lines, as every PDF page) -> report page (Jinja2) -> PDF
"""
from __future__ import annotations

import functools

from pipeline.check.cdar import SYNTAX as CDAR
from pipeline.check.report import Report
from pipeline.errors import ApiError
from pipeline.flows.parse import read_canonical, source_of
from pipeline.flows.status_read import status_html
from pipeline.pdf import checks, page, report_page
from pipeline.read import provenance


def _embedded_text(data: bytes) -> str | None:
    """A PDF's embedded invoice as text, read as the PDF check reads it (bounded), when the reading side refused it
    (malformed XML, a wrong encoding declaration): its findings point into it."""
    try:
        xml = checks.inspect(data, validate_xml=False, check_pdfa=False).xml
    except checks.NotAPdf:
        return None
    return xml.decode("utf-8", "replace") if xml is not None else None


def readable_report(data: bytes, report: Report, name: str = "", language: str = "en", pdf: bool = False) -> bytes:
    """The report on `data` as HTML (or PDF): code frames from the document's text, and below a valid verdict the
    invoice page. A document that cannot be read (not an e-invoice) gets the report alone."""
    text, invoice_html, left_out, short = None, None, None, None
    try:
        source = source_of(data)
        text = source.doc.text
        short = functools.partial(provenance.short_path, source.doc)
        if report.valid:
            read = read_canonical(source)  # the provenance as ids: path()s cost half the reading stylesheet
            lines = page.line_count(read.root)
            if pdf and page.too_many_lines(lines):
                left_out = lines
            else:
                invoice_html = page.invoice_html(read.canonical, language,
                                                 source.profile.level if source.profile else "")
    except ApiError:
        # the text as it is, so that a finding on unreadable XML (XML-MALFORMED at its line) still gets its code frame
        text = _embedded_text(data) if data.startswith(b"%PDF") else data.decode("utf-8", "replace")
        if report.syntax == CDAR and report.valid:  # a lifecycle status message: its own page
            invoice_html = status_html(data, language)
    render = report_page.report_pdf if pdf else report_page.report_html
    return render(report, name, text, language, invoice_html, left_out, short_path=short)
