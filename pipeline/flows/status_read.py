"""Product path: read France's lifecycle status messages (CDV, CDAR D22B): the JSON generation takes, an invoice's
statuses as a timeline, and the readable page (French, English or German) of one message or of several.

    read safely -> a CDAR root? -> canonical status (xslt/read-cdar.xsl) -> JSON (the model's types)
        -> completeness (the model itself: missing, problems) -> unmapped source values -> (the chain's report)
    several messages (one about several invoices, MDT-74 true: a status of each) -> grouped by invoice (seller's
        SIREN and number) -> ordered by status date-time -> timeline
    timeline -> canonical timeline XML -> page (xslt/cdar-html.xsl) -> HTML, or PDF (WeasyPrint, as every page)

What comes back can be sent to POST /v1/invoice/fr-ctc/status unchanged (its `message`, `status` and `invoice`):
generating it again gives the same message (tests/test_fr_cdar_generate.py).
"""
from __future__ import annotations

import json
import logging
import unicodedata

from pipeline import budget
from pipeline.check import cdar as rules, xmlinput
from pipeline.check.xmlinput import XmlInputError
from pipeline.errors import ApiError, ErrorDetail, TransformError, bad_request
from pipeline.flows.status_validate import validate_status
from pipeline.invoice import cdar
from pipeline.pdf import page, status_page
from pipeline.read import cdar as reading
from pipeline.write import cdar as writing

log = logging.getLogger("pipeline.status")
NOT_A_STATUS_MESSAGE = "NOT_A_STATUS_MESSAGE"
# Messages one PDF lays out: WeasyPrint takes ~0.1 s a message (bench/bench_fr_cdar.py), so 50 stay within a few
# seconds; the HTML page takes as many as the upload may carry (EINVOICE_MAX_BATCH_FILES).
MAX_PDF_MESSAGES = 50
LANGUAGES = status_page.LANGUAGES


def _refuse(message: str, code: str, detail: str) -> ApiError:
    return bad_request(NOT_A_STATUS_MESSAGE, message, [ErrorDetail(code, detail, field="file")])


def read_status(data: bytes) -> tuple[xmlinput.ParsedXml, dict]:
    """(the message read safely, its status JSON). ApiError 400 NOT_A_STATUS_MESSAGE for anything else."""
    doc, found = read_statuses(data, every=False)
    return doc, found[0]


def read_statuses(data: bytes, every: bool = True) -> tuple[xmlinput.ParsedXml, list[dict]]:
    """(the message read safely, the status JSON of each invoice it is about: several when MDT-74 is true; with
    `every` false, of its first). ApiError 400 NOT_A_STATUS_MESSAGE for anything else."""
    try:
        doc = xmlinput.load(data)
    except XmlInputError as exc:
        raise _refuse(f"The file is no readable status message: {exc.issue.message}", exc.issue.code,
                      exc.issue.message) from None
    if not rules.is_cdar(doc):
        issue = rules.root_issue(doc)
        raise _refuse("The file is no lifecycle status message (CDV).", issue.code, issue.message)
    issue = rules.content_issue(doc)
    if issue:  # (read anyway, it became an empty status on the timeline and page)
        raise _refuse(f"The file is no readable status message: {issue.message}", issue.code, issue.message)
    last = max(reading.references(doc), 1) if every else 1  # a message about no invoice: its status alone
    return doc, _status_jsons(data, range(1, last + 1))


def _status_jsons(data: bytes, references: range) -> list[dict]:
    """The status JSON of a CDAR message read safely, of each of its invoices numbered `references` (from 1)."""
    try:
        return reading.status_jsons(data, references)
    except TransformError as exc:  # our stylesheet failed: a bug to log, not the client's fault
        log.error("reading a status message failed: %s", exc)
        raise ApiError(500, "READ_FAILED", "The status message could not be read.") from exc


def parse_status(data: bytes, validate: bool = False, request_id: str | None = None) -> dict:
    """A CDAR message -> {"message", "status", "invoice"} (the JSON POST /v1/invoice/fr-ctc/status takes), with
    `complete` and the fields generation would still need (`missing`, `problems`), each code's name in French and
    English (`names`), the source values the JSON does not carry (`unmapped`) and, with `validate`, the chain's
    report (`validation`)."""
    doc, found = read_status(data)
    missing, problems = cdar.reading_problems(found)
    out = {**found, "complete": not missing and not problems, "missing": missing, "names": cdar.code_names(found),
           "unmapped": reading.unmapped(doc, found)}
    if problems:
        out["problems"] = [p.to_dict() for p in problems]
    if validate:
        out["validation"] = validate_status(data, request_id=request_id, doc=doc).to_dict()
    return out


# ---- several messages: one invoice's statuses in order ------------------------------------------------------

def _key(found: dict) -> tuple:
    invoice = found.get("invoice") or {}
    return invoice.get("sellerSiren") or "", invoice.get("number") or ""


def _digits(when: str | None) -> str:
    """A date-time as its digits: ISO text as read from format 204, and what the reading passes on as written (format
    203 YYYYMMDDHHMM, a date of format 102, no format at all: the XSD and the rules take any) sort alike; as text,
    a 202 of format 203 sorted after every ISO date-time of its year. Each digit as its value, whatever its script:
    the XSD and the rules take "２０２５-07-01" (XPath's \\d is any script's), which sorted after every date in 0-9."""
    return "".join(str(unicodedata.decimal(c)) for c in when or "" if c.isdecimal())


def _step(code: str | None) -> int:
    """A status's place in the invoice's life: its code (200 Déposée, 202 Reçue, ... 212 Encaissée follow each other
    in code order); a code that is no number of the list after every other."""
    return int(code) if isinstance(code, str) and code.isascii() and code.isdigit() else 1000


def _when(entry: dict) -> tuple:
    """Status date-time (MDT-78), then the message's own (MDT-8), by their digits, then the status's step in the
    invoice's life (`_step`): a platform that reports 202 Reçue and 203 Mise à disposition in one second had them
    ordered as uploaded (a ZIP's order, a file picker's), 203 before 202. A status stated less precisely than to the
    second (a date of format 102, minutes of format 203) is placed at its message's creation when that falls within
    what it states (a status is reported once it has happened), else at its start: a 202 dated 1 July alone came
    before the 200 of 1 July 15:10 it follows."""
    status = _digits((entry.get("status") or {}).get("dateTime"))
    created = _digits((entry.get("message") or {}).get("issueDateTime"))
    if status and len(status) < 14:
        status += created[len(status):14] if created.startswith(status) else "0" * (14 - len(status))
    return status, created, _step((entry.get("status") or {}).get("code"))


def _join_unnamed_sellers(groups: dict[tuple, list[dict]]) -> None:
    """A message that names the invoice's number but not its seller's SIREN (a platform's 501 Irrecevable about an
    invoice it could not read) joins the one invoice of that number whose seller is named; shown apart, it read as
    another invoice. With several sellers' invoices of that number it stays apart: which one it is about is not
    said."""
    for number in [number for seller, number in groups if not seller and number]:
        named = [key for key in groups if key[0] and key[1] == number]
        if len(named) == 1:
            groups[named[0]].extend(groups.pop(("", number)))


def _fingerprint(entry: dict) -> str | None:
    """What makes two statuses one message read twice: the same message identifier (MDT-4) saying the same. A key
    to look copies up by, not a comparison with each status before it: 3,001 statuses of one invoice took 27 s.
    None for a message without identifier (never a copy)."""
    if not entry["message"].get("id"):
        return None
    return json.dumps([entry[part] for part in ("message", "status", "invoice")], sort_keys=True, default=str)


# The invoice's own data, the same in every message about it (number and seller's SIREN are the group's key).
_INVOICE_FACTS = ("issueDate", "typeCode", "buyerSiren")
# What a message states of the invoice for its own step, not the invoice's: the receipt time (MDT-95) is the side's
# that reports (FNFE's UC1: 15:10 at the seller's platform for 200 and 212, 16:10 at the buyer's for 202, 204, 211),
# the reference type (MDT-97) the message's. Each status keeps its own; merged, one side's was shown for every step.
_STEP_FACTS = ("receiptDateTime", "referenceTypeCode")


def _conflicts(entries: list[dict]) -> list[dict]:
    """The invoice's data its messages state differently, each value with the files stating it (each once: a message
    about several invoices may state it for several): the merged invoice shows one of them, so the others must not
    vanish unseen."""
    stated: dict[str, dict[str, dict[str, None]]] = {}   # field -> value -> the files, in order
    for entry in entries:
        for field in _INVOICE_FACTS:
            if entry["invoice"].get(field) is not None:
                stated.setdefault(field, {}).setdefault(str(entry["invoice"][field]), {})[entry["file"]] = None
    return [{"field": f"invoice.{field}", "values": [{"value": value, "files": list(files)} for value, files in
                                                     values.items()]}
            for field, values in stated.items() if len(values) > 1]


def _verdict(report) -> dict:
    """A status's verdict in the timeline: `valid` and the verdict, as every report gives them (issue 37)."""
    return {"valid": report.valid, "verdict": report.verdict, "version": report.version, "errors": report.errors,
            "warnings": report.warnings, "failed": sorted({i.code for i in report.issues if i.severity == "ERROR"})}


def _mark_reused_identifiers(said: dict[str, dict[int, str]], kept: dict[int, list[dict]], names: list[str]) -> None:
    """Files whose message has the identifier (MDT-4) of another saying something else: each status of them names
    the others in `sameIdentifier`. A message is identified by MDT-4 alone, so two contents under one identifier
    (a correction sent again under it, or two senders' numbering colliding) leave its receiver unable to tell
    which one counts; shown as two plain statuses, the clash went unseen. `said`: identifier -> {file's position:
    what it says}; `kept`: file's position -> its statuses in the timeline (a copy's are its original's)."""
    for files in said.values():
        if len(set(files.values())) < 2:
            continue
        for position, text in files.items():
            others = [names[other] for other, says in files.items() if says != text]
            for entry in kept.get(position, []):
                entry["sameIdentifier"] = others


def timeline(files: list[tuple[str, bytes]], validate: bool = False, request_id: str | None = None,
             names: bool = True) -> dict:
    """Several messages -> {"invoices": [{"invoice", "statuses": [...]}], "unread": [...]}: the messages grouped by the
    invoice they are about (seller's SIREN and invoice number), each invoice's statuses ordered by their status
    date-time (then by the message's, then by their step in the invoice's life, then as sent), the invoice's data merged
    from its messages (the first value of each field; `conflicts` lists the fields they state differently) but for each
    step's own (`_STEP_FACTS`), which each status's `invoice` keeps: the invoice as its message states it. A message
    read again (same identifier, same content) is one status whose `copies` names the other files. A file that is no
    readable status message is listed in `unread` with the reason; with `validate` each status carries its message's
    verdict. A message about several invoices (MDT-74 true) is a status of each, numbered `reference` of `references`.
    Messages with one identifier saying different things name each other in `sameIdentifier`. Each status carries
    `names` as parse gives them, each code's name in French, English and German by its JSON path within the status; not
    with `names` false (the page, which names codes itself: a JSON path is no element name of its canonical XML)."""
    groups: dict[tuple, list[dict]] = {}   # the statuses of each invoice, as read
    seen: dict[tuple, dict] = {}           # (invoice, fingerprint) -> the status first read saying it
    said: dict[str, dict[int, str]] = {}   # message identifier (MDT-4) -> {file's position: what it says}
    kept: dict[int, list[dict]] = {}       # file's position -> its statuses in the timeline
    unread = []
    for number, (name, data) in enumerate(files):
        try:
            # a message about several invoices (MDT-74 true): the status of each
            doc, parts = read_statuses(data)
        except budget.Exhausted:
            raise  # the request's budget, not the file: 503 TIME_BUDGET for the whole timeline
        except ApiError as exc:
            unread.append({"file": name, "error": {"code": exc.errors[0].code if exc.errors else exc.error_code,
                                                   "message": exc.message}})
            continue
        if parts[0].get("message", {}).get("id"):
            said.setdefault(parts[0]["message"]["id"], {})[number] = json.dumps(parts, sort_keys=True, default=str)
        verdict = None
        for position, found in enumerate(parts, 1):
            entry = {"file": name, "message": found.get("message", {}), "status": found.get("status", {}),
                     "invoice": found.get("invoice", {})}
            if len(parts) > 1:
                entry.update(reference=position, references=len(parts))
            if names:
                entry["names"] = cdar.code_names({part: entry[part] for part in ("message", "status", "invoice")})
            fingerprint = _fingerprint(entry)
            copy_of = seen.get((_key(found), fingerprint)) if fingerprint else None
            if copy_of is not None:  # the same message again (from mail and the platform, or sent twice): one status
                copy_of.setdefault("copies", []).append(name)
                continue
            if fingerprint:
                seen[(_key(found), fingerprint)] = entry
            if validate:
                verdict = verdict or _verdict(validate_status(data, request_id=request_id, doc=doc))
                entry["validation"] = verdict
            groups.setdefault(_key(found), []).append(entry)
            kept.setdefault(number, []).append(entry)
    _mark_reused_identifiers(said, kept, [name for name, _ in files])
    _join_unnamed_sellers(groups)
    invoices = []
    for entries in groups.values():
        invoice: dict = {}
        for entry in entries:
            invoice.update({k: v for k, v in entry["invoice"].items() if k not in invoice and k not in _STEP_FACTS})
        found_invoice = {"invoice": invoice, "statuses": sorted(entries, key=_when)}
        conflicts = _conflicts(entries)
        if conflicts:
            found_invoice["conflicts"] = conflicts
        invoices.append(found_invoice)
    # invoices by their first status's time, then seller and number (a status's step orders one invoice's life only)
    invoices.sort(key=lambda i: (_when(i["statuses"][0])[:2], _key({"invoice": i["invoice"]})))
    return {"invoices": invoices, "unread": unread}


# ---- the page ---------------------------------------------------------------------------------------------------

def render_status(files: list[tuple[str, bytes]], language: str = "en", html: bool = False, validate: bool = False,
                  request_id: str | None = None) -> bytes:
    """The readable page of one status message or of several (the timeline of each invoice) as PDF/A-3b, or
    HTML with its stylesheet. ApiError 400 NOT_A_STATUS_MESSAGE when no file is a status message, TOO_MANY_FILES
    for a PDF of more than MAX_PDF_MESSAGES (before any reading)."""
    if not html and len(files) > MAX_PDF_MESSAGES:
        raise bad_request("TOO_MANY_FILES", f"A PDF holds at most {MAX_PDF_MESSAGES} status messages; this request "
                          f"has {len(files)}. Accept: text/html draws them all.",
                          [ErrorDetail("TOO_MANY_FILES", f"{len(files)} file parts", field="file")])
    found = timeline(files, validate, request_id, names=False)
    statuses = sum(len(i["statuses"]) for i in found["invoices"])
    if not html and statuses > MAX_PDF_MESSAGES:   # a message about several invoices is a status of each
        raise bad_request("TOO_MANY_FILES", f"A PDF holds at most {MAX_PDF_MESSAGES} statuses; these messages report "
                          f"{statuses} (one for each invoice a message is about). Accept: text/html draws them all.",
                          [ErrorDetail("TOO_MANY_FILES", f"{statuses} statuses", field="file")])
    if not found["invoices"]:
        reasons = "; ".join(f"{u['file']}: {u['error']['message']}" for u in found["unread"])
        raise _refuse("No file is a readable lifecycle status message (CDV).", found["unread"][0]["error"]["code"],
                      reasons)
    out = status_page.status_html(writing.timeline_canonical(found), language)
    if html:
        return page.styled(out)
    too_long = too_many_lines(status_page.line_count(out))
    if too_long:
        raise too_long
    return page.html_to_pdf(out)


def too_many_lines(lines: int) -> ApiError | None:
    """400 TOO_MANY_LINES for a status page whose PDF would lay out more than `status_page.pdf_line_limit()` lines
    (thousands of details, a reason text of megabytes: minutes of layout, past the worker's timeout); None if it
    fits."""
    limit = status_page.pdf_line_limit()
    if lines <= limit:
        return None
    return bad_request("TOO_MANY_LINES", f"The status page would lay out {lines} lines; a PDF is drawn up to {limit} "
                       "(twice EINVOICE_MAX_PDF_LINES). Accept: text/html draws it.",
                       [ErrorDetail("TOO_MANY_LINES", f"{lines} lines (rows, and long texts by "
                                    f"{status_page.WRAP} characters)", field="file", rejectedValue=lines)])


def least_page_lines(data: bytes) -> int:
    """A floor of the page's `status_page.line_count` for one message read safely, from the invoices it names alone
    (`status_page.least_lines`): above the PDF's limit no page need be built to know it is left out."""
    return status_page.least_lines(reading.invoice_numbers(xmlinput.load(data)))


def status_html(data: bytes, language: str = "en") -> bytes:
    """The page (HTML, unstyled) of one valid status message, as a report for people shows it below the verdict
    (in the report's language: en, fr or de)."""
    found = timeline([("", data)], names=False)
    return status_page.status_html(writing.timeline_canonical(found), language if language in LANGUAGES else "en")
