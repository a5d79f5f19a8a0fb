"""The validation report as a page a person reads and forwards: HTML (Jinja2, templates/report.html.j2, styled like
the invoice page) or PDF (the same HTML through WeasyPrint, nothing fetched).

The verdict on top (valid / invalid / indeterminate, rule-pack version, syntax), the counts, what was not judged
and why, the rules that judged the document (`pipeline.check.applied`), then every finding grouped by severity
and rule: the rule id and its text as the official rules give it, the business term the rule is about (the
business-term table), the xpath, and a code frame (the source lines around the finding, its line marked, a caret
under its column) so that a supplier sees exactly what to fix. A valid document's report carries the readable
invoice page below (the page stage, `pipeline.pdf.page`).
"""
from __future__ import annotations

import re
from functools import lru_cache

from lxml import etree, html as lxml_html
from markupsafe import Markup

from pipeline.check import categories, verdict
from pipeline.check.cdar import SYNTAX as CDAR
from pipeline.check.report import ERROR, WARNING, Issue, Report
from pipeline.invoice import cdar_terms
from pipeline.invoice.terms import bt_name, field_for_rule, term_for, term_name
from pipeline.pdf import bidi, page, status_page
from pipeline.settings import TEMPLATES_DIR, get_settings

FRAME_LINES = 2          # source lines shown before and after a finding's line
MAX_FRAME_CHARS = 100    # of a source line shown: what fits the PDF's width at 7 pt (minified XML is one long
                         # line, and Saxon aligns a long start tag's attributes far right: the part around the column)
# Findings shown in full (text, place, code frame): the first of each rule, and so many in all. The rest are listed
# by line under their rule. WeasyPrint lays out ~14 ms a finding: a document with thousands of findings (one per
# line of a large invoice) would hold a worker for minutes; the JSON report lists every finding.
SHOWN_PER_RULE = 10
SHOWN_IN_ALL = 200
LISTED_LINES = 50        # places (line:column) listed per rule for the findings not shown in full
LABELS = {
    "en": {"title": "Validation report", "valid": "Valid", "invalid": "Invalid", "version": "Version",
           "syntax": "Syntax", "errors": "errors", "warnings": "warnings", "error": "error", "warning": "warning",
           ERROR: "Error", WARNING: "Warning", "class": "class", ERROR + "S": "Errors", WARNING + "S": "Warnings",
           "line": "line", "column": "column", "page": "Page", "of": "of", "lines": "at line:column",
           "more": "{n} more of this rule, not shown in full",
           "cut": "Shown in full: the first {per_rule} findings of each rule, {total} in all; the JSON report lists "
                  "every finding.",
           "no_page": "The invoice has {lines} lines: its page is left out of this PDF above {limit} lines "
                      "(EINVOICE_MAX_PDF_LINES). POST /v1/invoice/render with Accept: text/html draws it.",
           "no_status_page": "The message's page would lay out at least {lines} lines: it is left out of this PDF "
                             "above {limit} (twice EINVOICE_MAX_PDF_LINES). POST /v1/invoice/fr-ctc/status/render "
                             "with Accept: text/html draws it.",
           "binary": "The file is not text but an image, a scan or another binary file: an e-invoice is an XML file "
                     "or a PDF with one embedded, so there is no excerpt to show. Ask the sender for the e-invoice."},
    "de": {"title": "Prüfbericht", "valid": "Gültig", "invalid": "Ungültig", "version": "Version",
           "syntax": "Syntax", "errors": "Fehler", "warnings": "Warnungen", "error": "Fehler", "warning": "Warnung",
           ERROR: "Fehler", WARNING: "Warnung", "class": "Klasse", ERROR + "S": "Fehler",
           WARNING + "S": "Warnungen",
           "line": "Zeile", "column": "Spalte", "page": "Seite", "of": "von", "lines": "bei Zeile:Spalte",
           "more": "{n} weitere dieser Regel, nicht einzeln gezeigt",
           "cut": "Einzeln gezeigt: die ersten {per_rule} Befunde je Regel, insgesamt {total}; der JSON-Bericht "
                  "listet jeden Befund.",
           "no_page": "Die Rechnung hat {lines} Positionen: Ihre Seite fehlt in diesem PDF über {limit} Positionen "
                      "(EINVOICE_MAX_PDF_LINES). POST /v1/invoice/render mit Accept: text/html zeigt sie.",
           "no_status_page": "Die Seite der Nachricht hätte mindestens {lines} Zeilen: Sie fehlt in diesem PDF über "
                             "{limit} Zeilen (das Doppelte von EINVOICE_MAX_PDF_LINES). POST "
                             "/v1/invoice/fr-ctc/status/render mit Accept: text/html zeigt sie.",
           "binary": "Die Datei ist kein Text, sondern ein Bild, ein Scan oder eine andere Binärdatei: Eine E-Rechnung "
                     "ist eine XML-Datei oder ein PDF mit eingebetteter XML-Datei, daher gibt es keinen Ausschnitt. "
                     "Bitte beim Absender die E-Rechnung anfordern."},
}


@lru_cache(maxsize=1)
def _environment():
    from jinja2 import Environment, FileSystemLoader, select_autoescape  # lazy: only reports a person reads

    env = Environment(loader=FileSystemLoader(str(TEMPLATES_DIR)), autoescape=select_autoescape(["html", "j2"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["breakable"] = breakable_path
    env.filters["breakable_code"] = breakable_code
    return env


def template(name: str = "report.html.j2"):
    """A page for people from templates/ (the report's, or another in its style: a job's refused document's)."""
    return _environment().get_template(name)


def _frame(lines: list[str], line: int | None, column: int | None) -> tuple[list[tuple[int, str, bool]], int | None]:
    """(source lines around `line` as (number, text, is the finding's line), the caret column within the shown
    text). Long lines are cut around the column."""
    if not line or line > len(lines):
        return [], None
    start = max(1, line - FRAME_LINES)
    if column:
        # the parser counts a tab as one column; the frame shows it as spaces up to the next stop of 4 (in a
        # tab-indented invoice the caret stood left of its element, 3 characters per tab)
        column = len(lines[line - 1][:column - 1].expandtabs(4)) + 1
    offset = 0
    if column and column > MAX_FRAME_CHARS // 2:
        offset = column - MAX_FRAME_CHARS // 2
    shown = []
    for number in range(start, min(len(lines), line + FRAME_LINES) + 1):
        # every line through the same window, so that the lines around stay aligned with the finding's
        text = lines[number - 1].rstrip("\r").expandtabs(4)
        # "…" where text was cut on the left; a blank in its place where only spaces were (or the line is empty:
        # between the long lines of a CRLF document each empty line read "…", as if it hid something)
        cut = (("…" if text[:offset].strip() else " ") if offset else "") + text[offset:offset + MAX_FRAME_CHARS]
        shown.append((number, cut + ("…" if len(text) > offset + MAX_FRAME_CHARS else ""), number == line))
    return shown, (column - offset + (1 if offset else 0)) if column else None


def _is_binary(text: str | None) -> bool:
    """The document is no text (an image, a scan, an office file read as UTF-8): its code frame showed "PNG" after
    a replacement character, and control characters, under "the excerpt shows where reading stopped". A NUL, or
    more than one character in 20 of its start a control or replacement character (a mis-declared Latin-1 XML has
    an umlaut here and there)."""
    start = (text or "")[:1024]
    odd = sum(1 for c in start if c == "\ufffd" or (c < " " and c not in "\t\n\r"))
    return "\x00" in start or odd * 20 > len(start)


def _term_label(rule: str, language: str = "en", xpath: str | None = None, message: str = "") -> str | None:
    """"BT-n name" of the business term a rule's finding (at `xpath`, saying `message`) is about, in the report's
    language (its BT alone when the table has no name for it)."""
    field, bt = field_for_rule(rule, xpath, message=message)
    term = term_for(field)
    if bt is None:  # a lifecycle status message's rule names an MDT term (BR-FR-CDV-14_MDT-207)
        return cdar_terms.rule_label(rule, language)
    if bt and term:
        return f"{bt} {term_name(term, language)}"
    name = bt and bt_name(bt, language)   # a term no field carries (Factur-X's BT-X-273): its name alone
    return f"{bt} {name}" if name else bt


def _finding_term(issue: Issue, language: str, xpath: str | None = None) -> str | None:
    """The label of the term a finding is about: a content check's own term, the first of its `businessTerms` (at
    its place the table finds the group around it: CHECK-IBAN was labelled "BG-16 Payment instructions", a
    CHECK-CREDITOR-ID on a payee's identifier "BT-60 Payee identifier"); else `_term_label`, else the first term
    the JSON report names (XRECHNUNG-NO-SCENARIO: BT-24)."""
    label = None if issue.code.startswith("CHECK-") else _term_label(issue.code, language, xpath, issue.message)
    terms = issue.business_terms if label is None else ()
    if not terms:
        return label
    name = bt_name(terms[0], language)   # its first field's name, or the name of a term no field carries
    return f"{terms[0]} {name}" if name else terms[0]


def _message(issue: Issue, language: str, prefixes: dict[str, str] | None = None) -> str:
    """The finding's text in the report's language where we wrote it (CHECK-*: German beside the API's English);
    the official rules' texts are what they are. Names in Clark notation (the XSD's "Element '{urn:...}Name'")
    with the document's own prefixes (`prefixes`: namespace -> prefix): an XSD finding listed a dozen
    `{urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2}...` lines, read as `cac:...`."""
    message = (issue.message_de if language == "de" else None) or issue.message
    if not prefixes or "{" not in message:
        return message
    return _CLARK.sub(lambda m: (prefixes[m.group(1)] + ":" if prefixes[m.group(1)] else "")
                      if m.group(1) in prefixes else m.group(0), message)


_CLARK = re.compile(r"\{([^{}\s]+)\}(?=[A-Za-z_])")
_DECLARATION = re.compile(r"""\bxmlns(?::([\w.-]+))?\s*=\s*["']([^"']+)["']""")


def _prefixes(source_text: str | None) -> dict[str, str]:
    """namespace -> the prefix the document declares for it first ("" for a default namespace)."""
    found: dict[str, str] = {}
    for prefix, uri in _DECLARATION.findall(source_text or ""):
        found.setdefault(uri, prefix)
    return found


def _finding(issue: Issue, lines: list[str], language: str, short_path=None, prefixes=None) -> dict:
    location = issue.location
    line = location.line if location else None
    column = location.column if location else None
    frame, caret = _frame(lines, line, column)
    # `column` is the document's (what the JSON report says); `caret` is where it falls in the cut frame line.
    term = _finding_term(issue, language, location.xpath if location else None)
    return {"message": _message(issue, language, prefixes), "term": term,
            "category": categories.LABELS[language][issue.category],
            "xpath": ((short_path and short_path(location.xpath)) or location.xpath or location.pdfObject)
            if location else None, "line": line,
            "column": column, "caret": caret, "frame": frame}


def breakable_path(path: str) -> Markup:
    """A finding's place with a line break allowed after each step's slash (<wbr/>): on a phone Chromium broke
    `/rsm:CrossIndustryInvoice/.../ram:Inclu / dedSupplyChainTradeLineItem[1]` inside a step (the PDF is laid out
    without them: `pipeline.pdf.page.parse_page`). The leading slash keeps its step."""
    lead = "/" if path.startswith("/") else ""
    return lead + Markup("/<wbr/>").join(path[len(lead):].split("/"))


def breakable_code(code: str) -> Markup:
    """A finding's code with a line break allowed after each colon: on a phone the PDF checks' long codes broke
    inside a word ("PDFA_NOT_CHECKED:pikepdf:embedde / d-file"); now at a colon ("...:pikepdf: / embedded-file")."""
    return Markup(":<wbr/>").join(code.split(":"))


def _invoice_body(invoice_html: bytes) -> Markup:
    """The invoice page's body, to be shown inside the report (its own @page rules stay out)."""
    body = lxml_html.document_fromstring(invoice_html).find("body")
    return Markup("".join(etree.tostring(child, encoding="unicode", method="xml") for child in body))


def _rest(rule_issues: list[Issue], language: str, prefixes=None) -> dict:
    """The findings of a rule not shown in full: their number, the first lines, the rule's text and term once."""
    lines = list(dict.fromkeys(f"{i.location.line}:{i.location.column}" if i.location.column else str(i.location.line)
                               for i in rule_issues if i.location and i.location.line))
    first = rule_issues[0]
    return {"count": len(rule_issues), "lines": lines[:LISTED_LINES], "unlisted": max(0, len(lines) - LISTED_LINES),
            "message": _message(first, language, prefixes),
            "term": _finding_term(first, language),
            "category": categories.LABELS[language][first.category]}


def report_html(report: Report, name: str, source_text: str | None = None, language: str = "en",
                invoice_html: bytes | None = None, page_left_out: int | None = None, screen: bool = True,
                short_path=None) -> bytes:
    """The report as HTML. `source_text` = the document as decoded text (for code frames); `invoice_html` = the
    readable page of the document (shown below a valid verdict); `page_left_out`: the line count of a valid
    invoice whose page was left out (too many lines for a PDF; of a status message, its floor when the invoices it
    names already pass the limit: `status_page.least_lines`); `screen`: with the invoice page's stylesheet in it
    (a browser has no other; the PDF gets it from WeasyPrint); `short_path`: a finding's xpath as people read it
    (`provenance.short_path` on the document; the JSON report keeps the full one)."""
    binary = _is_binary(source_text)
    lines = source_text.split("\n") if source_text and not binary else []
    prefixes = _prefixes(source_text)
    groups, counts, budget, cut = [], {}, SHOWN_IN_ALL, False
    for severity in (ERROR, WARNING):
        rules: dict[str, list[Issue]] = {}
        for issue in report.issues:
            if issue.severity == severity:
                rules.setdefault(issue.code, []).append(issue)
        shown = []
        for rule, issues in rules.items():
            full = min(len(issues), SHOWN_PER_RULE, budget)
            budget -= full
            rest = _rest(issues[full:], language, prefixes) if len(issues) > full else None
            cut = cut or rest is not None
            shown.append((rule, [_finding(i, lines, language, short_path, prefixes) for i in issues[:full]], rest))
        if rules:
            groups.append((severity, shown))
            counts[severity] = sum(len(issues) for issues in rules.values())
    t = LABELS[language]
    notes = [t["cut"].format(per_rule=SHOWN_PER_RULE, total=SHOWN_IN_ALL)] if cut else []
    if binary:
        notes.append(t["binary"])
    if page_left_out and report.syntax == CDAR:
        notes.append(t["no_status_page"].format(lines=page_left_out, limit=status_page.pdf_line_limit()))
    elif page_left_out:
        notes.append(t["no_page"].format(lines=page_left_out, limit=get_settings().max_pdf_lines))
    html = template().render(report=report, name=bidi.visible(name), lang=language, t=t, groups=groups, counts=counts,
                              meaning=report.meaning(language), also=report.meanings_beneath(language),
                              v=verdict.LABELS[language], applied=applied_rules(report, language),
                              notes=notes, invoice_page=_invoice_body(invoice_html) if invoice_html else None,
                              screen_style=page.screen_style() if screen else None)
    return html.encode("utf-8")


# The PDF container's own steps (`pipeline.pdf.checks.container_rules`) are named by us, not files: German reports
# say them in German.
STEP_NAMES_DE = {"pdfa": "PDF/A-3b (pikepdf.pdfa)", "xmp": "Factur-X-/ZUGFeRD-XMP-Metadaten",
                 "embedded-file": "eingebettete Rechnungsdatei"}


def applied_rules(report: Report, language: str = "en") -> list[tuple[str, str]]:
    """(rule set, its steps in order) for people: `xrechnung 3.0.2 (EN16931 XRechnung (CII))`,
    `CrossIndustryInvoice_100pD16B.xsd → EN16931-CII-validation.xsl → ...`; the JSON report names every file by its
    path in the pack, and whether its optimised copy ran."""
    def name(step) -> str:
        if step.kind in ("xsd", "schematron"):
            return step.name.rsplit("/", 1)[-1]
        return STEP_NAMES_DE.get(step.kind, step.name) if language == "de" else step.name

    return [(r.label, " → ".join(name(s) for s in r.steps)) for r in report.rules]


def report_pdf(report: Report, name: str, source_text: str | None = None, language: str = "en",
               invoice_html: bytes | None = None, page_left_out: int | None = None, short_path=None) -> bytes:
    """The same report as PDF (WeasyPrint with the invoice page's stylesheet; nothing fetched)."""
    return page.html_to_pdf(report_html(report, name, source_text, language, invoice_html, page_left_out,
                                        screen=False, short_path=short_path))
