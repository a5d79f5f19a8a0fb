"""The readable invoice page: canonical XML -> HTML (xslt/html.xsl) -> PDF/A-3b pages (WeasyPrint).

WeasyPrint fetches nothing: every URL is refused, fonts come from the local fontconfig only
(Liberation / DejaVu, installed by scripts/setup.sh). The CSS and font configuration are built once
per process and reused (`warm_up` builds them in a worker before its first request).

Two costs of WeasyPrint's own entry point are avoided, with the same PDF bytes as a result (tested):
its pure-Python HTML5 parser (libxml2's HTML parser reads the generated page 30x faster) and its
user-agent stylesheet for all of HTML (templates/page-ua.css holds the defaults the page's elements need).

Every character on the page is drawn with a glyph of some installed font (the page's Liberation Sans for Latin,
Greek, Cyrillic; Pango falls back through fontconfig: DejaVu for Arabic, Hebrew and more; Droid Sans Fallback for
CJK; Symbola for emoji and symbols; Unifont for the rest of the BMP). A character no font has would be drawn as .notdef, which PDF/A forbids
(ISO 19005-3 6.2.11.8), so it is shown as U+FFFD instead; the embedded XML keeps the text as sent.
"""
from __future__ import annotations

import bisect
import json
import logging
import re
import subprocess
import threading
from functools import lru_cache

from pipeline import budget, saxon
from pipeline.check import categories
from pipeline.check.report import ERROR, Report
from pipeline.errors import ApiError, ErrorDetail, invalid_input
from pipeline.invoice.model import NOT_XML, metadata_language
from pipeline.invoice.terms import ARRAY_ITEMS, CANONICAL_NS, TERMS, term_name
from pipeline.pdf import bidi, collector
from pipeline.settings import TEMPLATES_DIR, XSLT_DIR, get_settings
from pipeline.xslt import run_stylesheet

HTML_XSL = XSLT_DIR / "html.xsl"
CSS_FILE = TEMPLATES_DIR / "invoice.css"
# The rules for narrow screens: WeasyPrint reads no media queries (it logged each block as ignored on every PDF), so
# they live apart and only HTML answered to people carries them.
SCREEN_CSS_FILE = TEMPLATES_DIR / "invoice-screen.css"
UA_CSS_FILE = TEMPLATES_DIR / "page-ua.css"

log = logging.getLogger(__name__)
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
    """config.metadataLanguage -> 'en' | 'de' (case-insensitive, default en; `model.metadata_language`); anything
    else -> 400."""
    if value is None:
        return "en"
    try:
        return metadata_language(value)
    except (TypeError, ValueError) as exc:
        raise invalid_input("Unsupported metadataLanguage.", [ErrorDetail(
            "UNSUPPORTED_LANGUAGE", f"metadataLanguage {exc} (ISO 639-1, no region subtag)",
            field="config.metadataLanguage", rejectedValue=value)]) from None


# Unicode Default_Ignorable_Code_Point ranges (joiners, variation selectors, bidi marks, soft hyphen, tags): they
# need no glyph (HarfBuzz drops them), so they are never replaced. Controls: tab and line ends are layout.
_NO_GLYPH_NEEDED = ((0x00, 0x1F), (0xAD, 0xAD), (0x34F, 0x34F), (0x61C, 0x61C), (0x115F, 0x1160), (0x17B4, 0x17B5),
                    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
                    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
                    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))
NO_GLYPH = "\ufffd"


@lru_cache(maxsize=1)
def _drawable_ranges() -> tuple[list[int], list[int]]:
    """(starts, ends) of the merged code point ranges some installed font draws, as fontconfig reports them (the
    fonts Pango falls back to), plus those that need no glyph. Read once per process (~10 ms)."""
    try:
        listing = subprocess.run(["fc-list", "--format", "%{charset}\n"], capture_output=True, text=True,
                                 timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        # Without fontconfig's tools nothing is replaced: a page that needs it fails the PDF/A gate (422).
        log.error("fc-list failed (%s): characters without a glyph are not replaced", exc)
        listing = "0-10ffff"
    ranges = sorted(list(_NO_GLYPH_NEEDED) + [
        (int(lo, 16), int(hi or lo, 16)) for lo, _, hi in (token.partition("-") for token in listing.split())])
    starts, ends = [ranges[0][0]], [ranges[0][1]]
    for lo, hi in ranges[1:]:
        if lo <= ends[-1] + 1:
            ends[-1] = max(ends[-1], hi)
        else:
            starts.append(lo)
            ends.append(hi)
    return starts, ends


def drawable(text: str) -> str:
    """`text` with each character that no installed font can draw, or XML cannot carry (a control character in the
    code frame of a malformed upload), replaced by U+FFFD. A line separator (U+2028) is a line break: Pango breaks
    the line there but draws it too, with a glyph the font subset lacks, which PDF/A forbids."""
    text = NOT_XML.sub(NO_GLYPH, text).replace("\u2028", "\n")
    if text.isascii():
        return text
    starts, ends = _drawable_ranges()

    def draw(c: str) -> str:
        i = bisect.bisect_right(starts, ord(c)) - 1
        return c if i >= 0 and ord(c) <= ends[i] else NO_GLYPH

    return "".join(c if c < "\x80" else draw(c) for c in text)


def invoice_html(canonical: bytes, language: str = "en", profile_label: str = "", xslt=HTML_XSL,
                 business_terms: bool = False, verdict: Report | None = None, tree=None,
                 not_shown: list[str] | None = None) -> bytes:
    """Canonical XML -> the page (`xslt`: another page stylesheet, for template authors). `business_terms` adds the
    list of every value with its business term; `verdict` a box with a validation report's verdict and failed rules;
    `not_shown` a box of sentences (in `language`) naming what the page leaves out of the upload (all three for the
    reading side). `tree`: the canonical document already parsed by Saxon (`pipeline.xslt`)."""
    params = {"lang": language, "profile": profile_label}
    if business_terms:
        params["business-terms"] = _business_term_labels(language)
    if verdict is not None:
        params["verdict"] = json.dumps(_verdict(verdict, language), ensure_ascii=False)
    if not_shown:
        params["not-shown"] = json.dumps(not_shown, ensure_ascii=False)
    shown = bidi.isolated_values(canonical)
    return run_stylesheet(xslt, shown, params, tree=tree if shown is canonical else None)


# HTML answered to people (render as HTML, the report for people) carries the page's stylesheet, for the screen:
# WeasyPrint adds it to a PDF, a browser has nothing else. The PDF paths never take this copy.
# On a phone (the web page's report pane is 351 px wide at 375) half of that: 64 px of margins left 287 px of text.
SCREEN_CSS = ("@media screen { body { max-width: 210mm; margin: 16px auto; padding: 0 16px; } }\n"
              "@media screen and (max-width: 480px) { body { margin: 8px auto; padding: 0 8px; } }")


@lru_cache(maxsize=1)
def screen_style() -> str:
    """The invoice page's stylesheet, its rules for narrow screens and the screen margins, as the text of one <style>
    element."""
    return "\n".join(f.read_text(encoding="utf-8") for f in (CSS_FILE, SCREEN_CSS_FILE)) + "\n" + SCREEN_CSS


def styled(html: bytes) -> bytes:
    """`html` (a page of html.xsl) with the stylesheet in its head, for a browser."""
    style = ("<style>" + screen_style() + "</style>").encode("utf-8")
    head_end = html.find(b"</head>")
    return html[:head_end] + style + html[head_end:] if head_end >= 0 else style + html


_LINES = (f"{{{CANONICAL_NS}}}invoiceLine", f"{{{CANONICAL_NS}}}subInvoiceLine")


def line_count(root) -> int:
    """The invoice lines (sub-invoice lines included) the page of a canonical document (its lxml root) lays out:
    what its PDF costs (WeasyPrint takes ~7-10 ms a line)."""
    return sum(1 for _ in root.iter(*_LINES))


def too_many_lines(lines: int) -> ApiError | None:
    """400 TOO_MANY_LINES (as on the ZUGFeRD path) for a received invoice whose PDF page would hold more lines than
    EINVOICE_MAX_PDF_LINES: far more would hold a worker for minutes and outlast its timeout. None if it fits."""
    limit = get_settings().max_pdf_lines
    if lines <= limit:
        return None
    return invalid_input(f"The invoice has {lines} lines; its PDF page is drawn up to {limit} "
                         "(EINVOICE_MAX_PDF_LINES). HTML (Accept: text/html) has no such limit.",
                         [ErrorDetail("TOO_MANY_LINES", f"file (Invoice line, BG-25): a PDF page holds at most "
                                      f"{limit} invoice lines", field="file", businessTerm="BG-25",
                                      rejectedValue=lines)])


@lru_cache(maxsize=2)
def _business_term_labels(language: str = "en") -> str:
    """The business-term table as html.xsl looks it up: canonical element path -> "BT-n name" (in `language`)."""
    labels = {}
    for term in TERMS:
        if term.bt:
            steps = [ARRAY_ITEMS[s[:-2]] if s.endswith("[]") else s for s in term.json_path.split(".")]
            labels["/".join(steps)] = f"{term.bt} {term_name(term, language)}"
    return json.dumps(labels, ensure_ascii=False)


MAX_SHOWN_FINDINGS = 200  # on the page; the JSON report has them all


# An XSD finding names elements in Clark notation ("Element '{urn:un:unece:...:100}URIID'", 90 characters of
# namespace): the verdict box writes each namespace with the prefix the finding's path gives an element of it
# ("/.../ram:URIID[2]" -> "ram:URIID", "Expected is ( ram:CompleteNumber )"), as the page's job list does.
_CLARK = re.compile(r"\{([^{}\s]+)\}([A-Za-z_][\w.-]*)")


def _prefixed(message: str, xpath: str | None) -> str:
    if not xpath or "{" not in message:
        return message
    steps = [step.split("[")[0] for step in xpath.split("/") if re.match(r"\w[\w.-]*:", step)]
    prefixes: dict[str, str] = {}
    for namespace, local in _CLARK.findall(message):
        step = next((s for s in steps if s.endswith(":" + local)), None)
        if step:
            prefixes.setdefault(namespace, step.split(":")[0])
    return _CLARK.sub(lambda m: f"{prefixes[m.group(1)]}:{m.group(2)}" if m.group(1) in prefixes else m.group(0),
                      message)


def _verdict(report: Report, language: str = "en") -> dict:
    """Every finding, errors first: a count of warnings the box does not list would leave the reader guessing.
    With each its class and the sentence on what the worst class means (`pipeline.check.categories`)."""
    shown = sorted(report.issues, key=lambda i: i.severity != ERROR)[:MAX_SHOWN_FINDINGS]
    labels = categories.LABELS.get(language, categories.LABELS["en"])
    return {"valid": report.valid, "verdict": report.verdict, "version": report.version, "errors": report.errors,
            "warnings": report.warnings, "meaning": report.meaning(language),
            "meaningAlso": [{"lang": other, "text": text} for other, text in report.meanings_beneath(language)],
            "notJudged": [{"code": n.code, "message": (n.message_de if language == "de" else None) or n.message}
                          for n in report.not_judged],
            "rules": [r.label for r in report.rules],
            "failed": [{"code": i.code, "severity": i.severity, "category": labels[i.category],
                        # our own findings' German text where we wrote one; the official rules' are as published
                        "message": _prefixed((i.message_de if language == "de" else None) or i.message,
                                             i.location.xpath if i.location else None),
                        "line": i.location.line if i.location else None,
                        "column": i.location.column if i.location else None} for i in shown]}


def _weasyprint() -> dict:
    if not _weasy:
        with _lock:
            if not _weasy:
                from weasyprint import CSS
                from weasyprint.text.fonts import FontConfiguration

                fonts = FontConfiguration()
                fetcher = _refusing_fetcher()
                _weasy["css"] = CSS(filename=str(CSS_FILE), font_config=fonts, url_fetcher=fetcher)
                _weasy["ua"] = CSS(filename=str(UA_CSS_FILE), font_config=fonts, url_fetcher=fetcher)
                _weasy["page"] = _page_class()
                _weasy["fetcher"] = fetcher
                _weasy["fonts"] = fonts
    return _weasy


def _page_class():
    """weasyprint.HTML for a tree we parsed ourselves, with the page's user-agent stylesheet.

    Sets the attributes WeasyPrint's own constructor sets after parsing (WeasyPrint 62-70)."""
    import cssselect2
    from weasyprint import HTML

    class InvoicePage(HTML):
        def __init__(self, root, url_fetcher, ua_stylesheet):
            self.base_url = None
            self.url_fetcher = url_fetcher
            self.media_type = "print"
            self.wrapper_element = cssselect2.ElementWrapper.from_html_root(root, content_language=None)
            self.etree_element = self.wrapper_element.etree_element
            self._ua = ua_stylesheet

        def _ua_stylesheets(self, forms=False):
            return [self._ua]

    return InvoicePage


def parse_page(html: bytes):
    """HTML bytes -> the ElementTree WeasyPrint lays out (libxml2's HTML parser: no network, no DTD)."""
    import xml.etree.ElementTree as ElementTree

    from lxml import etree, html as lxml_html

    root = lxml_html.document_fromstring(html, parser=lxml_html.HTMLParser(encoding="utf-8", no_network=True))
    # <wbr> (after a path's slashes) is for browsers: Pango breaks after a slash by itself (UAX #14), and WeasyPrint,
    # given the elements, broke a path inside a step instead ("ram:SpecifiedLineTrade / Settlement")
    etree.strip_tags(root, "wbr")
    for el in root.iter():
        if el.text:
            el.text = drawable(el.text)
        if el.tail:
            el.tail = drawable(el.tail)
    return ElementTree.fromstring(etree.tostring(root, encoding="utf-8"))


def html_to_pdf(html: bytes, compress: bool = True) -> bytes:
    """HTML -> PDF/A-3b bytes (fonts embedded as subsets, sRGB OutputIntent by WeasyPrint). Made for the pages
    html.xsl writes: elements that templates/page-ua.css does not name get no browser defaults. `compress=False`
    leaves the streams as they are, for a caller that saves the PDF again with compression (the Factur-X
    container: pikepdf compresses each stream once instead of inflating WeasyPrint's; 10 lines: 6 ms)."""
    w = _weasyprint()
    # (a stage of the request's time budget: the layout cannot be stopped; EINVOICE_MAX_PDF_LINES bounds it)
    with budget.stage("pdf", len(html)), collector.paused():  # (the box tree is walked by every collection pass)
        page = w["page"](parse_page(html), w["fetcher"], w["ua"])
        return page.write_pdf(stylesheets=[w["css"]], font_config=w["fonts"], pdf_variant="pdf/a-3b",
                              pdf_identifier=None, custom_metadata=False, uncompressed_pdf=not compress)


def warm_up() -> bytes:
    """Compile html.xsl and load WeasyPrint, the fonts and the stylesheets in this process (about 1 s on the
    first page); returns the little PDF it rendered."""
    saxon.compile_stylesheet(HTML_XSL)
    _drawable_ranges()
    return html_to_pdf("<html><body><h1>Rechnung</h1><p>1 \u2013 2,00 \u20ac</p></body></html>".encode())
