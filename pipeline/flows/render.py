"""Product path: the readable page of any incoming invoice, valid or not, complete for the model or not.

    read (the parse path's source and canonical stages) -> (the official verdict, when asked) -> page (html.xsl,
    the same page ZUGFeRD generation draws) -> PDF (WeasyPrint), or the HTML itself

A PDF holds at most EINVOICE_MAX_PDF_LINES invoice lines, as on the ZUGFeRD path (400 TOO_MANY_LINES before
any layout).
"""
from __future__ import annotations

from pipeline.flows.parse import read_canonical, source_of, validate_source
from pipeline.pdf import page


def render(data: bytes, language: str = "en", business_terms: bool = False, validate: bool = False,
           html: bool = False, request_id: str | None = None) -> bytes:
    """An uploaded e-invoice -> its page as PDF/A-3b (or HTML). ApiError 400 when it is no e-invoice or its PDF
    would hold more lines than the limit."""
    source = source_of(data)
    read = read_canonical(source)
    refusal = None if html else page.too_many_lines(page.line_count(read.root))
    if refusal is not None:
        raise refusal
    canonical = read.canonical
    verdict = validate_source(source, request_id) if validate else None
    label = source.profile.level if source.profile else ""
    out = page.invoice_html(canonical, page.language_of(language), label, business_terms=business_terms,
                            verdict=verdict)
    return page.styled(out) if html else page.html_to_pdf(out)
