"""`pipeline parse FILE [-o request.json] [--validate]`: read an e-invoice (CII, UBL, or a ZUGFeRD / Factur-X PDF)
into the JSON the generation endpoints take, as POST /v1/invoice/parse answers it. Exit 0 when the invoice is
complete, 1 when the model cannot carry it fully (`missing` / `problems`), 2 when the file is no e-invoice."""
from __future__ import annotations

import sys
from pathlib import Path

from pipeline.cli.generate import print_api_error, read_input
from pipeline.errors import ApiError
from pipeline.invoice.request_json import dump_request


def register(sub) -> None:
    p = sub.add_parser("parse", help="read an e-invoice (CII, UBL, ZUGFeRD PDF) into the JSON invoice")
    p.add_argument("file", type=Path, help="CII / UBL XML or ZUGFeRD / Factur-X PDF ('-' for stdin)")
    p.add_argument("-o", "--output", type=Path, help="write the JSON here (default: stdout)")
    p.add_argument("--validate", action="store_true", help="add the official validation report of the file")
    p.add_argument("--request-only", action="store_true",
                   help="write only the InvoiceRequest (invoice + config), ready for `pipeline generate`")
    p.set_defaults(func=run)


def run(args) -> int:
    from pipeline.flows.parse import parse_report  # lazy: Saxon and pikepdf only for this command

    try:
        result = parse_report(read_input(args.file), args.validate)
    except ApiError as err:
        print_api_error(err)
        return 2
    if args.request_only:
        result = {"invoice": result["invoice"], "config": result["config"]}
    out = dump_request(result)
    if args.output:
        args.output.write_bytes(out)
    else:
        sys.stdout.buffer.write(out + b"\n")
    if "complete" in result and not result["complete"]:
        print(f"pipeline parse: incomplete; missing: {', '.join(result['missing']) or '-'}", file=sys.stderr)
        return 1
    return 0
