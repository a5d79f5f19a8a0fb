"""Product path: the readable page of any incoming invoice, valid or not, complete for the model or not.

    read (the parse path's source and canonical stages) -> (the official verdict, when asked) -> page (html.xsl,
    the same page ZUGFeRD generation draws) -> PDF (WeasyPrint), or the HTML itself
"""
from __future__ import annotations

from pipeline.flows.parse import read_canonical, source_of, validate_source
from pipeline.pdf import page


def render(data: bytes, language: str = "en", business_terms: bool = False, validate: bool = False,
           html: bool = False, request_id: str | None = None) -> bytes:
    """An uploaded e-invoice -> its page as PDF/A-3b (or HTML). ApiError 400 when it is no e-invoice."""
    source = source_of(data)
    canonical = read_canonical(source).canonical
    verdict = validate_source(source, request_id) if validate else None
    label = source.profile.level if source.profile else ""
    out = page.invoice_html(canonical, page.language_of(language), label, business_terms=business_terms,
                            verdict=verdict)
    return out if html else page.html_to_pdf(out)
