"""Product path: the readable page of any incoming invoice, valid or not, complete for the model or not.

    read (the parse path's source and canonical stages) -> (the official verdict, when asked) -> page (html.xsl,
    the same page ZUGFeRD generation draws) -> PDF (WeasyPrint), or the HTML itself

A PDF holds at most EINVOICE_MAX_PDF_LINES invoice lines, as on the ZUGFeRD path (400 TOO_MANY_LINES before
any layout). A ZUGFeRD PDF that embeds a second invoice file with other content (FX_SECOND_INVOICE) gets a notice
above the invoice (under the verdict) naming that file, which the page does not show, as convert names it when it
leaves it out.
"""
from __future__ import annotations

from pipeline.flows.parse import Source, only_read, read_canonical, source_of, validate_source
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
    shown = page.language_of(language)
    out = page.invoice_html(canonical, shown, label, business_terms=business_terms, verdict=verdict,
                            not_shown=not_shown(source, shown))
    return page.styled(out) if html else page.html_to_pdf(out)


def not_shown(source: Source, language: str = "en") -> list[str]:
    """What the page leaves out of the upload, in `language` (en, de): each second invoice file of a PDF with other
    content, in the words of the PDF check (`Source.pdf_problems`) and of convert, which names it alike."""
    said = source.pdf_problems_de if language == "de" else (None,) * len(source.pdf_problems)   # (as many)
    return [f"{german or p.message} {only_read(source, 'shown', language)}"
            for p, german in zip(source.pdf_problems, said)]

