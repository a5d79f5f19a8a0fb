"""Product path: the validation report as a page for people (HTML or PDF) instead of JSON.

    the report (validate_xml / validate_pdf) -> the source read (a PDF's embedded invoice; for code frames) ->
    a valid document's readable page (the reading side's canonical XML -> html.xsl; in a PDF up to
    EINVOICE_MAX_PDF_LINES lines, as every PDF page) -> report page (Jinja2) -> PDF

A job's document that got no report (refused: not an e-invoice, a damaged PDF, too large, not processed; or a
message without an invoice) gets a page of its own in the job's language (`refusal_page`): the ZIP of a job's
reports is read by people, who should not have to open JSON, nor read English in a German job. The same German per
code (`german`) rides in every job's JSON lines as `messageDe` (`with_german`).
"""
from __future__ import annotations

import functools
import json
from datetime import datetime

from pipeline.check.cdar import SYNTAX as CDAR
from pipeline.check.report import Report
from pipeline.errors import ApiError
from pipeline.flows.parse import read_canonical, source_of
from pipeline.flows.status_read import least_page_lines, status_html
from pipeline.pdf import bidi, checks, page, report_page, status_page
from pipeline.read import provenance
from pipeline.settings import TEMPLATES_DIR


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
            # too many invoices for a PDF, known from the message: a page of 10,000 took 10 s to build for nothing
            limit = status_page.pdf_line_limit()
            least = least_page_lines(data) if pdf else 0
            if least > limit:
                left_out = least
            else:
                invoice_html = status_html(data, language)
                # (counted for a PDF only: a reason of megabytes is minutes of layout, an HTML page has no limit)
                if pdf and (lines := status_page.line_count(invoice_html)) > limit:
                    invoice_html, left_out = None, lines
    render = report_page.report_pdf if pdf else report_page.report_html
    return render(report, name, text, language, invoice_html, left_out, short_path=short)


# What the refusal page says beside the sentences of the codes (the web page's, templates/web/strings.json)
REFUSAL_LABELS = {"en": {"from": "From", "subject": "Subject", "date": "Date", "signature": "Signature"},
                  "de": {"from": "Von", "subject": "Betreff", "date": "Datum", "signature": "Signatur"}}


@functools.lru_cache(maxsize=1)
def _page_strings() -> dict:
    """The web page's texts: its sentence for each error code, in each language, is what a refused document's
    page says too (one wording wherever a person meets the code)."""
    return json.loads((TEMPLATES_DIR / "web" / "strings.json").read_text(encoding="utf-8"))


def page_words(language: str) -> dict:
    """The web page's texts in `language`: the command line says what the page shows (a job's state) in its words."""
    return _page_strings()[language]


def german(code: str | None, own: str | None = None) -> str | None:
    """The German of a message with `code`: the service's own (`messageDe`, where it wrote one), else the page's
    sentence for the code; None where neither exists (a job's code without a sentence is a gap
    tests/test_german_job_zip.py looks for)."""
    return own or _page_strings()["de"]["errors"].get(code or "")


def with_german(said: dict) -> dict:
    """A job entry's `error` / `notice` object with `messageDe` (`german`) beside `message`, on it and on each of its
    `errors[]`, where German exists: the additive field the API's errors have, whatever the job's language."""
    out = dict(said)
    text = german(out.get("code"), out.get("messageDe"))
    if text:
        out["messageDe"] = text
    if out.get("errors"):
        out["errors"] = [with_german(item) if isinstance(item, dict) else item for item in out["errors"]]
    return out


def _said(code: str | None, english: str, language: str, own: str | None = None) -> str:
    """A message in `language`: in German `german`'s, the English message where there is none."""
    if language != "de":
        return english
    return german(code, own) or english


def _when(value: str | None, language: str) -> str:
    """A message's date (ISO 8601, as its entry has it) as people write it: 01.03.2026 08:01 (UTC+01:00)."""
    try:
        moment = datetime.fromisoformat(value or "")
    except ValueError:
        return value or "-"
    offset = moment.strftime("%z")
    zone = f" (UTC{offset[:3]}:{offset[3:]})" if offset else ""
    return moment.strftime("%d.%m.%Y %H:%M" if language == "de" else "%Y-%m-%d %H:%M") + zone


def refusal_page(entry: dict, language: str = "en") -> bytes:
    """The page for people of a job's entry without a report (`{"name", "error" | "notice", "email"?,
    "signature"?}`, as its JSON line has it): what happened in `language` with its code, each of its `errors[]`,
    and the message and signature it came from."""
    strings = _page_strings()[language]
    labels = REFUSAL_LABELS[language]
    kind = "error" if "error" in entry else "notice"
    said = entry.get(kind) or {}
    code = said.get("code")
    details = []
    for item in said.get("errors") or ():
        text = _said(item.get("code"), str(item.get("message") or ""), language, item.get("messageDe"))
        field = item.get("field")
        if field and field != "file" and not text.startswith(field):  # every entry is about its file
            text = f"{field}: {text}"
        details.append((item.get("code"), text))
    origin = []
    email = entry.get("email")
    if email:
        origin += [(labels["from"], email.get("from") or "-"),
                   (labels["subject"], email.get("subject") or strings["mail_no_subject"]),
                   (labels["date"], _when(email.get("date"), language))]
    signature = entry.get("signature")
    if signature:
        meaning = signature.get("meaning") or {}
        origin.append((labels["signature"], meaning.get(language) or meaning.get("en") or signature.get("status")))
    html = report_page.template("refused.html.j2").render(
        lang=language, kind=kind, title=report_page.LABELS[language]["title"], name=bidi.visible(entry.get("name", "")),
        heading=strings["doc_error" if kind == "error" else "doc_notice"], code=code,
        sentence=_said(code, str(said.get("message") or ""), language, said.get("messageDe")),
        details=details, origin=origin,
        screen_style=page.screen_style())
    return html.encode("utf-8")
