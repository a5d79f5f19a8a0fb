"""`pipeline generate request.json --spec xrechnung|en16931|fr-ctc|peppol [--syntax UBL] [-o out.xml]`
`pipeline generate request.json --spec zugferd [--profile BASIC] [--rules fr-ctc] [--lang de] -o invoice.pdf`
`pipeline generate status.json [-o statut.xml]`: a status request (top-level message, status, invoice, as POST
/v1/invoice/fr-ctc/status takes it) -> France's lifecycle status message (CDAR), valid on the fr-cdar chain"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from pipeline.check.xmlinput import json_request_kind
from pipeline.cli.files import names_folder, output_path, shown
from pipeline.cli.language import in_language
from pipeline.errors import ApiError
from pipeline.invoice.request_json import dumps, with_config


def register(sub) -> None:
    p = sub.add_parser("generate", help="generate and validate an XRechnung / EN 16931 document or a ZUGFeRD PDF "
                                        "from request JSON, or a French lifecycle status message from a status "
                                        "request")
    p.add_argument("request", type=Path, help="InvoiceRequest JSON file, or a status request (top-level message, "
                                              "status, invoice: generates the CDAR status message) ('-' for stdin)")
    p.add_argument("--spec", choices=SPECS,
                   help="what to generate: XRechnung, EN 16931, French (fr-ctc) or Peppol BIS XML, or a ZUGFeRD PDF "
                        "(default: the request's config.spec, else xrechnung; a status request: its message, of "
                        "France's reform)")
    p.add_argument("--syntax", type=str.upper, choices=("CII", "UBL"), help="override config.syntax")
    p.add_argument("--profile", help="zugferd: override config.profile (EN16931, BASIC, XRECHNUNG, ...)")
    p.add_argument("--rules", help="zugferd: override config.rules (fr-ctc: France's reform rules too)")
    p.add_argument("--lang", help="zugferd: override config.metadataLanguage (en, de)")
    p.add_argument("-o", "--output", type=output_path, help="write the document here (default, or '-': stdout)")
    p.set_defaults(func=run)


SPECS = ("xrechnung", "en16931", "zugferd", "fr-ctc", "peppol")


def _requested_spec(body: bytes) -> str | None:
    """The request's own config.spec, where it names one of SPECS: `pipeline generate fixtures/fr-b2b-goods.json`
    was refused ("config.spec: contradicts the endpoint, which generates xrechnung") for a request that says what it
    is, as `pipeline run normalize` reads it. A body that is no JSON object is left to the generation's refusal."""
    try:
        config = json.loads(body).get("config")
    except (ValueError, AttributeError):
        return None
    spec = config.get("spec") if isinstance(config, dict) else None
    return spec if spec in SPECS else None


def read_input(path: Path) -> bytes:
    return sys.stdin.buffer.read() if is_stdio(path) else path.read_bytes()


def is_stdio(path: Path | None) -> bool:
    """`-` names stdin as an input and stdout as an output (`-o -`), as it does for other tools (`-/` a folder)."""
    return path is not None and str(path) == "-" and not names_folder(path)


# Why an output cannot be written, and a PDF's refusal of a terminal, by language
CANNOT_WRITE = {"en": {"file": "is a file, not a folder", "folder": "is a folder",
                       "named folder": "names a folder (it ends in a separator); give a file name",
                       "missing": "its folder {} does not exist",
                       "terminal": "a PDF is not written to a terminal: give -o FILE, or redirect stdout"},
                "de": {"file": "ist eine Datei, kein Ordner", "folder": "ist ein Ordner",
                       "named folder": "nennt einen Ordner (es endet mit einem Trennzeichen); einen Dateinamen angeben",
                       "missing": "der Ordner {} existiert nicht",
                       "terminal": "ein PDF wird nicht ins Terminal geschrieben: -o DATEI angeben oder die "
                                   "Standardausgabe umleiten"}}


def output_refused(program: str, output: Path | None, folder: bool = False, language: str = "en") -> bool:
    """True (said on stderr in `language`) when `output` cannot be written: checked before the work, which was done
    in full and then lost (and `pipeline validate` printed no verdict) when the folder was missing. `folder`:
    `output` is a folder to be made (`--html-dir`, convert's -o for several files, or typed so: `-o out/`), so an
    existing file is in the way; where a file is written, `out/` (`names_folder`) is refused, not written as `out`."""
    if output is None or is_stdio(output):
        return False
    if folder:
        why = "file" if output.exists() and not output.is_dir() else None
    else:
        why = "folder" if output.is_dir() else "named folder" if names_folder(output) else \
            "missing" if not output.parent.is_dir() else None
    if why:
        print(f"{program}: {shown(output)}{os.sep if names_folder(output) else ''}: "
              f"{CANNOT_WRITE[language][why].format(shown(output.parent))}", file=sys.stderr)
    return why is not None


def pdf_to_terminal(program: str, output: Path | None, language: str = "en") -> bool:
    """True (said on stderr) when a PDF would go to stdout and stdout is a terminal: its bytes garbled the screen."""
    if (output is None or is_stdio(output)) and sys.stdout.isatty():
        print(f"{program}: {CANNOT_WRITE[language]['terminal']}", file=sys.stderr)
        return True
    return False


def write_output(output: Path | None, data: bytes) -> None:
    """A document to `output`, or to stdout when there is none or it is `-` (which wrote a file named "-")."""
    if output is None or is_stdio(output):
        sys.stdout.buffer.write(data)
    else:
        output.write_bytes(data)


def print_api_error(err: ApiError, name: str | Path | None = None, language: str = "en") -> int:
    """An ApiError on stderr as a person reads it: one line `[name: ]CODE: message`, then one line per entry
    (rule or field, business term, the value sent), the messages in `language` (`in_language`; the codes and field
    paths stay). 4xx -> 1 (a finding about the input), else 2."""
    print(f"{f'{name}: ' if name else ''}{err.error_code}: {in_language(language, err.error_code, err.message)}",
          file=sys.stderr)
    for detail in err.to_dict(None).get("errors") or []:
        where = " ".join(x for x in (detail.get("field"), f"({detail['businessTerm']})"
                                     if detail.get("businessTerm") else None) if x)
        sent = f" [{SENT[language]}: {dumps(detail['rejectedValue'])}]" \
            if detail.get("rejectedValue") is not None else ""
        message, field = detail.get("message") or "", detail.get("field")
        if field and message.startswith(field) and ": " in message:  # the API's message names the field: once here
            message = message.split(": ", 1)[1]
        message = in_language(language, detail.get("code"), message, detail.get("messageDe"))
        print(f"  {detail.get('code')}{' ' + where if where else ''}: {message}{sent}", file=sys.stderr)
    return 1 if err.http_status < 500 else 2


SENT = {"en": "sent", "de": "gesendet"}


def _status_options_refused(args) -> bool:
    """True (said on stderr) when an invoice's option is given with a status request, which has none of them."""
    given = [f"--{name}" for name in ("syntax", "profile", "rules", "lang") if getattr(args, name) is not None]
    if args.spec not in (None, "fr-ctc"):
        given.insert(0, f"--spec {args.spec}")
    if given:
        print(f"pipeline generate: {shown(args.request)} is a status request (message, status, invoice): it generates "
              f"France's lifecycle status message (CDAR), to which {', '.join(given)} "
              f"{'does' if len(given) == 1 else 'do'} not apply", file=sys.stderr)
    return bool(given)


def _status(body: bytes, args) -> int:
    from pipeline.flows.status_generate import generate_status  # lazy: Saxon only for this command

    try:
        document, report = generate_status(body)
    except ApiError as err:
        return print_api_error(err)
    write_output(args.output, document)
    for issue in report.issues:
        print(f"{issue.severity} {issue.code}: {issue.message}", file=sys.stderr)
    return 0


def run(args) -> int:
    from pipeline.flows import generate_xml, generate_zugferd  # lazy: Saxon and WeasyPrint only for this command

    if output_refused("pipeline generate", args.output):
        return 2
    body = read_input(args.request)
    if json_request_kind(body) == "status":   # what POST /v1/invoice/fr-ctc/status takes, not an invoice
        return 2 if _status_options_refused(args) else _status(body, args)
    args.spec = args.spec or _requested_spec(body) or "xrechnung"
    if args.spec == "zugferd" and pdf_to_terminal("pipeline generate", args.output):
        return 2
    overrides = {"syntax": args.syntax, "profile": args.profile, "rules": args.rules, "metadataLanguage": args.lang}
    overrides = {k: v for k, v in overrides.items() if v is not None}
    if overrides:
        body = with_config(body, **overrides)
    issues: list = []
    try:
        if args.spec == "zugferd":  # its warnings said as the XML's are (the PDF's were dropped without a word)
            content: list = []
            document = generate_zugferd.generate_zugferd(body, warnings=content, rule_warnings=issues)
            issues += content
        else:
            document, report = generate_xml.generate_xml(body, args.spec)
            issues = report.issues
    except ApiError as err:
        return print_api_error(err)
    write_output(args.output, document)
    for issue in issues:
        print(f"{issue.severity} {issue.code}: {issue.message}", file=sys.stderr)
    return 0
