"""The readable invoice page: canonical XML -> HTML (xslt/html.xsl) -> PDF/A-3b pages (WeasyPrint).

WeasyPrint fetches nothing: every URL is refused, fonts come from the local fontconfig only
(DejaVu / Liberation, installed by scripts/setup.sh). The CSS and font configuration are built once
per process and reused.
"""
from __future__ import annotations

import threading

from pipeline.errors import ErrorDetail, invalid_input
from pipeline.settings import TEMPLATES_DIR, XSLT_DIR
from pipeline.transform import run_stylesheet

HTML_XSL = XSLT_DIR / "html.xsl"
CSS_FILE = TEMPLATES_DIR / "invoice.css"
LANGUAGES = ("en", "de")

_lock = threading.Lock()
_weasy: dict = {}


class FetchRefused(Exception):
    pass


def refuse_all_urls(url: str, *args, **kwargs):
    """The page is self-contained, so any fetch is a bug or an attack."""
    raise FetchRefused(f"fetching {url[:80]!r} is not allowed")


def _refusing_fetcher():
    """A WeasyPrint 70 URLFetcher whose every fetch fails (WeasyPrint then leaves the resource out)."""
    from weasyprint.urls import URLFetcher

    class RefusingFetcher(URLFetcher):
        def fetch(self, url, headers=None):
            refuse_all_urls(url)

    return RefusingFetcher(allowed_protocols=(), allow_redirects=False, fail_on_errors=False)


def language_of(value: str | None) -> str:
    """config.metadataLanguage -> 'en' | 'de' (case-insensitive, default en); anything else -> 400."""
    if value is None:
        return "en"
    lang = str(value).strip().lower()
    if lang not in LANGUAGES:
        raise invalid_input("Unsupported metadataLanguage.", [ErrorDetail(
            "UNSUPPORTED_LANGUAGE", "metadataLanguage must be 'en' or 'de' (ISO 639-1, no region subtag)",
            field="config.metadataLanguage", rejectedValue=value)])
    return lang


def invoice_html(canonical: bytes, language: str = "en", profile_label: str = "") -> bytes:
    return run_stylesheet(HTML_XSL, canonical, {"lang": language, "profile": profile_label})


def _weasyprint() -> dict:
    if not _weasy:
        with _lock:
            if not _weasy:
                from weasyprint import CSS
                from weasyprint.text.fonts import FontConfiguration

                fonts = FontConfiguration()
                _weasy["fonts"] = fonts
                _weasy["fetcher"] = _refusing_fetcher()
                _weasy["css"] = CSS(filename=str(CSS_FILE), font_config=fonts, url_fetcher=_weasy["fetcher"])
    return _weasy


def html_to_pdf(html: bytes) -> bytes:
    """HTML -> PDF/A-3b bytes (fonts embedded as subsets, sRGB OutputIntent by WeasyPrint)."""
    from weasyprint import HTML

    w = _weasyprint()
    doc = HTML(string=html.decode("utf-8"), url_fetcher=w["fetcher"], base_url=None)
    return doc.write_pdf(stylesheets=[w["css"]], font_config=w["fonts"], pdf_variant="pdf/a-3b",
                         pdf_identifier=None, custom_metadata=False)
