"""`pipeline parse FILE... [-o request.json | -o FOLDER] [--validate]`: read e-invoices (CII, UBL, or ZUGFeRD /
Factur-X PDFs; a folder reads every *.xml and *.pdf in it) into the JSON the generation endpoints take, as POST
/v1/invoice/parse answers it. Exit 0 when every invoice is complete, 1 when the model cannot carry one fully
(`missing` / `problems`), 2 when a file is no e-invoice."""
from __future__ import annotations

import sys
from pathlib import Path

from pipeline.cli.files import expand, output_for, progress
from pipeline.cli.generate import is_stdio, print_api_error, read_input
from pipeline.errors import ApiError
from pipeline.invoice.request_json import dump_request


def register(sub) -> None:
    p = sub.add_parser("parse", help="read an e-invoice (CII, UBL, ZUGFeRD PDF) into the JSON invoice")
    p.add_argument("file", type=Path, nargs="+", help="CII / UBL XML or ZUGFeRD / Factur-X PDF ('-' for stdin), or "
                                                     "a folder")
    p.add_argument("-o", "--output", type=Path, help="write the JSON here (default, or '-': stdout); for several "
                                                     "files a folder, one <name>.json each")
    p.add_argument("--validate", action="store_true", help="add the official validation report of the file")
    p.add_argument("--request-only", action="store_true",
                   help="write only the InvoiceRequest (invoice + config), ready for `pipeline generate`")
    p.set_defaults(func=run)


def run(args) -> int:
    files = expand(args.file)
    if len(files) > 1 and (args.output is None or is_stdio(args.output)):
        print("pipeline parse: several files need -o FOLDER", file=sys.stderr)
        return 2
    many = len(files) > 1
    return max((_one(path, output_for(path, args.output, many, ".json"), args, many) for path in progress(files)),
               default=0)


def _one(path: Path, output: Path | None, args, many: bool) -> int:
    from pipeline.flows.parse import parse_report  # lazy: Saxon and pikepdf only for this command

    try:
        result = parse_report(read_input(path), args.validate)
    except ApiError as err:
        print_api_error(err, path)
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
        print(f"{path}: incomplete; missing: {', '.join(result.get('missing', [])) or '-'}", file=sys.stderr)
        return 1
    return 0
