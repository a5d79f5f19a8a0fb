"""The readable page of France's lifecycle status messages (CDV), in French, English or German: the canonical timeline
(`pipeline.write.cdar.timeline_canonical`: one message or several, grouped by invoice) -> HTML (xslt/cdar-html.xsl,
styled like the invoice page: templates/invoice.css) -> PDF/A-3b through `pipeline.pdf.page.html_to_pdf`.

The labels come from the same tables as the API's messages: each value's name and MDT term from the term table
(`pipeline.invoice.cdar_terms`), the names of status, business process (MDT-2), role, reason, action and data type
codes, of the document status (MDT-88), of the invoice's type (MDT-91) and of identifier schemes from the model's
code lists (`pipeline.invoice.cdar.CODE_LISTS`), beside the code; a code without a name there is shown alone; the
messages' own texts are shown as sent. The German names are ours (the reform names its codes in French only), so a
German page keeps each code's official French name beside the German one.
"""
from __future__ import annotations

import json
from functools import lru_cache

from lxml import html as lxml_html

from pipeline.invoice import cdar, cdar_terms
from pipeline.settings import XSLT_DIR, get_settings
from pipeline.write.cdar import ITEMS
from pipeline.xslt import run_stylesheet

PAGE_XSL = XSLT_DIR / "cdar-html.xsl"
LANGUAGES = ("en", "fr", "de")
# What the PDF's layout costs: each row of the page (a table row, a term and its value, a heading, a paragraph) and
# each further 100 characters of a text, which wrap (WeasyPrint: 6-10 ms a line, bench/bench_fr_cdar.py)
_ROWS = frozenset(("tr", "dt", "dd", "h1", "h2", "p", "li"))
WRAP = 100
# A row of a status page, a few cells, costs about half an invoice line: a PDF lays out twice EINVOICE_MAX_PDF_LINES
# of them (4,000: 25-40 s); 50 messages of FNFE's kind (a reason, an action, two data) take about 2,100
PDF_LINES_PER_INVOICE_LINE = 2


@lru_cache(maxsize=None)
def _labels(language: str) -> tuple[str, str]:
    """(terms, codes) as the stylesheet's JSON parameters: canonical path (`message/recipients/recipient/role`) ->
    {"term", "label"}; `kind:code` -> the code's name (the kinds of `cdar.CODE_LISTS`)."""
    terms = {}
    for row in cdar_terms.TERMS:
        path = "/".join(step[:-2] + "/" + ITEMS[step[:-2]] if step.endswith("[]") else step
                        for step in row.json_path.split("."))
        terms[path] = {"term": row.term or "", "label": row.name(language)}
    codes = {f"{kind}:{c}": _code_name(kind, c, names, language) for kind, table in cdar.CODE_LISTS.items()
             for c, names in table.items() if names}
    return json.dumps(terms, ensure_ascii=False), json.dumps(codes, ensure_ascii=False)


def _code_name(kind: str, code: str, names: tuple[str, str], language: str) -> str:
    """A code's name in `language`; in German with the official French name beside it ("Empfangen, frz. „Reçue“":
    quoted, as names may hold parentheses and the document status joins several with slashes)."""
    if language == "de":
        german = cdar.GERMAN_NAMES[kind][code]
        return german if german == names[0] else f"{german}, frz. „{names[0]}“"
    return names[0] if language == "fr" else names[1]


def status_html(canonical: bytes, language: str = "en") -> bytes:
    """The canonical timeline -> the page's HTML (language en, fr or de)."""
    terms, codes = _labels(language if language in LANGUAGES else "en")
    return run_stylesheet(PAGE_XSL, canonical, {"lang": language, "terms": terms, "codes": codes})


def line_count(html: bytes) -> int:
    """The lines the page's PDF lays out (`_ROWS`, long texts by `WRAP` characters): its cost, which the number of
    statuses does not bound (one status may hold thousands of details, a reason text megabytes)."""
    root = lxml_html.document_fromstring(html, parser=lxml_html.HTMLParser(encoding="utf-8", no_network=True))
    body = root.body   # (not the head's <style>)
    rows = sum(1 for el in body.iter() if el.tag in _ROWS)
    return rows + sum(len(text) // WRAP for text in body.itertext())


# The rows (`_ROWS`) xslt/cdar-html.xsl draws for each invoice whatever the messages hold: its header's h1, the
# "Invoice" h2, and of its status the h2 heading, the parties' h2 and their table's head row
ROWS_PER_INVOICE = 5


def least_lines(invoices: int) -> int:
    """A floor of `line_count` for a page of `invoices` invoices with a status each, known before the page is built:
    a message about 10,000 invoices took 10 s to read and draw as HTML only to be left out of a PDF."""
    return ROWS_PER_INVOICE * invoices


def pdf_line_limit() -> int:
    """The lines (`line_count`) a status page's PDF lays out at most."""
    return PDF_LINES_PER_INVOICE_LINE * get_settings().max_pdf_lines
