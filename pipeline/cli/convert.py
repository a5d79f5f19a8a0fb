"""`pipeline convert FILE... --to cii|ubl|zugferd [--spec xrechnung|en16931|peppol] [--profile P] [--lang de]
[--allow-loss] [-o OUT] [--json]` and `pipeline render FILE... [--lang de] [--html] [--business-terms] [--validate]
-o OUT`: the reading side's conversion and page, as POST /v1/invoice/convert and /render answer them. A folder or several files are
processed each (OUT is then a folder); a ZIP or an e-mail (.eml, .mbox), named or in a folder, each of its invoices,
as `pipeline validate` reads them. Exit 0 done, 1 refused (a source is invalid, or the target cannot carry it),
2 error (no e-invoice, unreadable file, a ZIP's member refused unread)."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from pipeline.cli.files import content, destinations, documents, into_folder, output_path, progress, said_unread, \
    shown
from pipeline.cli.generate import is_stdio, output_refused, pdf_to_terminal, print_api_error, write_output
from pipeline.cli.language import in_language
from pipeline.errors import ApiError
from pipeline.invoice.request_json import dumps
from pipeline.unpack import NOTICES


def register(sub) -> None:
    p = sub.add_parser("convert", help="convert an e-invoice to CII, UBL or a ZUGFeRD PDF (validated)")
    p.add_argument("file", type=Path, nargs="+", help="CII / UBL XML or ZUGFeRD / Factur-X PDF ('-' for stdin), "
                                                     "a ZIP or an e-mail (.eml, .mbox), or a folder")
    p.add_argument("--to", required=True, type=str.upper, choices=("CII", "UBL", "ZUGFERD"),
                   help="target: CII or UBL XML, or a ZUGFeRD PDF")
    p.add_argument("--spec", type=str.lower, choices=("xrechnung", "en16931", "peppol"),  # as the API takes it
                   help="rules of the target (default: the source's; a Peppol source to CII: en16931)")
    p.add_argument("--profile", help="zugferd: the Factur-X profile (default: the source's, else EN16931)")
    p.add_argument("--lang", choices=("en", "de"), help="language of the refusals on stderr (their codes stay) and, "
                                                        "zugferd, of the PDF's page (default: en; a PDF's page: the "
                                                        "source's)")
    p.add_argument("--allow-loss", action="store_true", help="convert even if the target cannot carry some values")
    p.add_argument("-o", "--output", type=output_path,
                   help="write the document here (default, or '-': stdout); a folder (for several files, or ending "
                        "in '/': made if missing) gets one file per source, named after it: a.xml stays a.xml, "
                        "a.pdf becomes a.pdf.xml, x.cii.xml to UBL x.ubl.xml (a syntax named before .xml, as "
                        ".cii/.ubl/_uncefact, follows the target)")
    p.add_argument("--json", action="store_true", help="print one JSON object per file on stdout: the rules that "
                   "judged the source, its findings under the rules it claims, changed, lost and technical values, "
                   "France's rules on a French invoice's result and their findings (as the endpoint's headers say "
                   "them), or the refusal; needs -o")
    p.set_defaults(func=run_convert)

    p = sub.add_parser("render", help="the readable page of any e-invoice (PDF, or HTML)")
    p.add_argument("file", type=Path, nargs="+", help="CII / UBL XML or ZUGFeRD / Factur-X PDF ('-' for stdin), "
                                                     "a ZIP or an e-mail (.eml, .mbox), or a folder")
    p.add_argument("--lang", choices=("en", "de"), default="en", help="language of the page and of the refusals "
                                                                      "on stderr (default: en)")
    p.add_argument("--html", action="store_true", help="write HTML instead of PDF")
    p.add_argument("--business-terms", action="store_true", help="list every value with its business term")
    p.add_argument("--validate", action="store_true", help="add the verdict and the failed rules on top")
    p.add_argument("-o", "--output", type=output_path, required=True,
                   help="write the page here ('-': stdout); a folder (for several files, or ending in '/': made if "
                        "missing) gets one <source name>.pdf (.html) per source")
    p.set_defaults(func=run_render)


def _answer(err: ApiError, name=None, language: str = "en") -> int:
    print_api_error(err, name, language)
    return 1 if err.http_status == 422 else 2


SEVERAL = {"en": "several files need -o FOLDER", "de": "mehrere Dateien brauchen -o ORDNER"}


def _each(args, suffix: str, one, refused=None, unread=None, renamed=lambda name: name) -> int:
    """Run `one(data, output, name, several)` for every document (`several`: more than one), the worst exit code
    wins; `refused(err, name)` answers an ApiError, `unread(document)` a document refused unread or a message
    without an invoice (by default both said on stderr in --lang's language)."""
    language = args.lang or "en"
    refused = refused or (lambda err, name: _answer(err, name, language))
    unread = unread or (lambda doc: said_unread(doc, language))
    try:
        docs = documents(args.file, f"pipeline {args.command}", language)
    except ApiError as err:  # the only file is no readable ZIP, or a zip bomb
        return refused(err, None)
    if len(docs) > 1 and (args.output is None or is_stdio(args.output)):
        print(f"pipeline {args.command}: {SEVERAL[language]}", file=sys.stderr)
        return 2
    # before the work: a missing folder failed only when writing, after the notes were said as if it was done
    if output_refused(f"pipeline {args.command}", args.output, into_folder(docs, args.output), language):
        return 2
    where = destinations(docs, args.output, suffix, renamed)
    worst = 0
    for doc in progress(docs):
        try:
            code = unread(doc) if doc.error is not None else one(content(doc), where(doc), doc.name, len(docs) > 1)
        except ApiError as err:
            code = refused(err, doc.name)
        worst = max(worst, code)
    return worst


# The words of `_said`'s lines; the codes, business terms, paths, values and official rule texts stay
NOTES = {"en": {"finding": "source finding", "not applied": "not applied to the target", "line": "line",
                "changed": "changed", "lost": "not carried", "technical": "technical, no place in the target",
                "target": "target finding", "not french": "the converted document is no valid French invoice"},
         "de": {"finding": "Befund der Quelle", "not applied": "nicht auf das Ziel angewandt", "line": "Zeile",
                "changed": "geändert", "lost": "nicht übernommen", "technical": "technisch, im Ziel ohne Platz",
                "target": "Befund des Ziels",
                "not french": "das umgewandelte Dokument ist keine gültige französische Rechnung"}}


def _said(result, language: str, name: str | None = None) -> None:
    """What the conversion did besides the document, on stderr (the endpoint's headers in lines), in `language`:
    in German each entry's own German (`reasonDe`, `messageDe`), a changed value's fixed words as the German page
    says them (strings.json's convert_words), an official rule's text as published. `name`: the document's, put
    before each line when a folder or several files are converted (as their refusals are), else whose note a line
    was could not be told."""
    from pipeline.flows.convert import PDF_CHECKS  # lazy: as in `run`, the flows load Saxon
    from pipeline.flows.parse import changed_line  # lazy: as above
    said, german = NOTES[language], language == "de"
    head = f"{name}: " if name else ""

    def line(number) -> str:
        return f" ({said['line']} {number})" if number else ""

    for f in result.source_findings:
        rules = PDF_CHECKS[1] if german and f["rules"] == PDF_CHECKS[0] else f["rules"]
        message = in_language(language, f["code"], f["message"], f.get("messageDe"))
        where = line((f.get("location") or {}).get("line"))
        print(f"{head}{said['finding']} ({rules}, {said['not applied']}){where}: {f['code']}: {message}",
              file=sys.stderr)
    for c in result.changed:
        change, reason = changed_line(c), c.get("reasonDe") if german else None
        if german:
            from pipeline.service.resources.web import strings  # lazy: the page's German only in German
            for english, word in strings()["de"]["convert_words"].items():
                change = change.replace(english, word)
        print(f"{head}{said['changed']}: {change} ({reason or c['reason']})", file=sys.stderr)
    for lost in result.losses:  # (a PDF's second invoice file has no line)
        print(f"{head}{said['lost']}: {lost['xpath']}{line(lost.get('line'))} = {lost['value']!r}", file=sys.stderr)
    for value in result.technical:
        print(f"{head}{said['technical']}: {value['xpath']}{line(value.get('line'))} = {value['value']!r}",
              file=sys.stderr)
    for f in result.target_findings:  # (France's rules on the converted document: lines of it, not of the source)
        where = line((f.get("location") or {}).get("line"))
        print(f"{head}{said['target']} ({f['rules']}, {said['not french']}){where}: {f['code']}: {f['message']}",
              file=sys.stderr)


# Options that do not go together, said before any work
OPTIONS_REFUSED = {
    "en": {"profile": "--profile applies to --to zugferd only (a PDF's profile)",
           "peppol": "--spec peppol applies to --to ubl only (Peppol BIS Billing 3.0 is a UBL invoice); CII and a "
                     "ZUGFeRD PDF are written on en16931 (a Peppol source's default) or xrechnung",
           "json": "--json needs -o FILE (the document goes to a file, the JSON to stdout)"},
    "de": {"profile": "--profile gilt nur für --to zugferd (das Profil eines PDFs)",
           "peppol": "--spec peppol gilt nur für --to ubl (Peppol BIS Billing 3.0 ist eine UBL-Rechnung); CII und ein "
                     "ZUGFeRD-PDF werden nach en16931 (der Vorgabe einer Peppol-Quelle) oder xrechnung geschrieben",
           "json": "--json braucht -o DATEI (das Dokument geht in eine Datei, das JSON auf die Standardausgabe)"}}


def run_convert(args) -> int:
    from pipeline.flows.convert import convert  # lazy: Saxon, WeasyPrint and pikepdf only for this command
    from pipeline.flows.validate_batch import entry  # lazy: as above

    language = args.lang or "en"
    refusal = None
    if args.to != "ZUGFERD" and args.profile:  # it did nothing to a CII or UBL target
        refusal = "profile"
    elif args.spec == "peppol" and args.to != "UBL":  # (the endpoint's 400 names request.spec: `check_spec`)
        refusal = "peppol"
    elif args.json and (args.output is None or is_stdio(args.output)):
        refusal = "json"
    if refusal:
        print(f"pipeline convert: {OPTIONS_REFUSED[language][refusal]}", file=sys.stderr)
        return 2
    if args.to == "ZUGFERD" and pdf_to_terminal("pipeline convert", args.output, language):
        return 2

    def one(data: bytes, output: Path | None, name: str, several: bool) -> int:
        page = args.lang if args.to == "ZUGFERD" else None  # (an XML target has no page: --lang is the messages')
        result = convert(data, args.to, args.spec, args.profile, page, args.allow_loss)
        write_output(output, result.document)  # (first: the notes follow a document written)
        if args.json:
            print(dumps({"name": name, "output": shown(output), **result.summary()}))
        else:
            _said(result, args.lang or "en", name if several else None)
        return 0

    def refused(err: ApiError, name: str | None) -> int:
        if not args.json:
            return _answer(err, name, args.lang or "en")
        # (amounts as JSON numbers, digit for digit, as the endpoint's error body writes them)
        print(dumps({"name": name, "error": err.to_dict(None)}))
        return 1 if err.http_status == 422 else 2

    def unread(doc) -> int:
        if not args.json:
            return said_unread(doc, args.lang or "en")
        print(json.dumps(entry(doc, None), ensure_ascii=False))
        return 0 if doc.error[0] in NOTICES else 2

    return _each(args, ".pdf" if args.to == "ZUGFERD" else ".xml", one, refused, unread,
                 lambda name: named_for(name, args.to))


# The syntax a file name says before its .xml (`x.cii.xml`, `01.01a-INVOICE_uncefact.xml`), by target
_SYNTAX_WORDS = {"cii": "CII", "uncefact": "CII", "ubl": "UBL"}
_SYNTAX_NAME = re.compile(r"(?<=[._-])(cii|uncefact|ubl)(?=\.xml$)", re.IGNORECASE)


def named_for(name: str, target: str) -> str:
    """A source's name as its converted result's in a folder: a syntax it names before `.xml` that is not the
    target's becomes the target's (`x.cii.xml` to UBL: `x.ubl.xml`, `a_UBL.xml` to CII: `a_CII.xml`), its case
    kept; else the name stays (a ZUGFeRD PDF's `x.cii.xml.pdf` carries the CII it names)."""
    if target not in ("CII", "UBL"):
        return name

    def word(found: re.Match) -> str:
        said = found.group(1)
        if _SYNTAX_WORDS[said.lower()] == target:
            return said
        return target if said.isupper() else target.lower()

    return _SYNTAX_NAME.sub(word, name)


def run_render(args) -> int:
    from pipeline.flows.render import render  # lazy: as above

    if not args.html and pdf_to_terminal("pipeline render", args.output, args.lang):
        return 2

    def one(data: bytes, output: Path, _name: str, _several: bool) -> int:
        write_output(output, render(data, args.lang, args.business_terms, args.validate, args.html))
        return 0

    return _each(args, ".html" if args.html else ".pdf", one)
