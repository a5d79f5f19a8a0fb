"""`pipeline parse FILE... [-o request.json | -o FOLDER] [--validate] [--lang de]`: read e-invoices (CII, UBL, or
ZUGFeRD / Factur-X PDFs; a folder reads every *.xml and *.pdf in it; a ZIP or an e-mail (.eml, .mbox), named or in
a folder, each of its invoices, as `pipeline validate` reads them) into the JSON the generation endpoints take, as
POST /v1/invoice/parse answers it. Exit 0 when every invoice is complete, 1 when the model cannot carry one fully
(`missing` / `problems`), 2 when a file is no e-invoice (or a ZIP's member is refused unread: NESTED_ARCHIVE, ...).
`--lang de`: the messages on stderr in German, as `pipeline validate --lang de` says them; the JSON is the same."""
from __future__ import annotations

import sys
from pathlib import Path

from pipeline.cli.files import Document, content, destinations, documents, into_folder, output_path, progress, \
    said_unread
from pipeline.cli.generate import is_stdio, output_refused, print_api_error
from pipeline.cli.language import lang_argument
from pipeline.errors import ApiError
from pipeline.invoice.request_json import dump_request


def register(sub) -> None:
    p = sub.add_parser("parse", help="read an e-invoice (CII, UBL, ZUGFeRD PDF) into the JSON invoice")
    p.add_argument("file", type=Path, nargs="+", help="CII / UBL XML or ZUGFeRD / Factur-X PDF ('-' for stdin), a "
                                                     "ZIP or an e-mail (.eml, .mbox), or a folder")
    p.add_argument("-o", "--output", type=output_path,
                   help="write the JSON here (default, or '-': stdout); a folder (for several files, or ending in "
                        "'/': made if missing) gets one <source name>.json each (a.xml: a.xml.json)")
    p.add_argument("--validate", action="store_true", help="add the official validation report of the file")
    p.add_argument("--request-only", action="store_true",
                   help="write only the InvoiceRequest (invoice + config), ready for `pipeline generate`")
    lang_argument(p, "language of the messages on stderr (their codes stay; the JSON is the same)")
    p.set_defaults(func=run)


# What this command says itself, in each --lang
SAID = {"en": {"several": "pipeline parse: several files need -o FOLDER", "incomplete": "{name}: incomplete; missing: "
               "{missing}"},
        "de": {"several": "pipeline parse: mehrere Dateien brauchen -o ORDNER",
               "incomplete": "{name}: unvollständig; es fehlt: {missing}"}}


def run(args) -> int:
    try:
        docs = documents(args.file, "pipeline parse", args.lang)
    except ApiError as err:  # the only file is no readable ZIP, or a zip bomb
        print_api_error(err, language=args.lang)
        return 2
    if len(docs) > 1 and (args.output is None or is_stdio(args.output)):
        print(SAID[args.lang]["several"], file=sys.stderr)
        return 2
    # before the work: a missing folder failed after every document was read, in English
    if output_refused("pipeline parse", args.output, into_folder(docs, args.output), args.lang):
        return 2
    where = destinations(docs, args.output, ".json")
    return max((_one(doc, where(doc), args) for doc in progress(docs)), default=0)


def _one(doc: Document, output: Path | None, args) -> int:
    from pipeline.flows.parse import parse_report  # lazy: Saxon and pikepdf only for this command

    if doc.error is not None:
        return said_unread(doc, args.lang)
    try:
        result = parse_report(content(doc), args.validate)
    except ApiError as err:
        print_api_error(err, doc.name, args.lang)
        return 2
    complete = result["complete"]
    if args.request_only:
        result = {"invoice": result["invoice"], "config": result["config"]}
    out = dump_request(result)
    if output and not is_stdio(output):
        output.write_bytes(out)
    else:
        sys.stdout.buffer.write(out + b"\n")
    if not complete:
        print(SAID[args.lang]["incomplete"].format(name=doc.name, missing=", ".join(result.get("missing", [])) or "-"),
              file=sys.stderr)
        return 1
    return 0
