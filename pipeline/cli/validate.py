"""`pipeline validate FILE [--spec xrechnung|en16931] [--version V] [--json]`: exit 0 valid, 1 invalid, 2 error."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from pipeline.errors import ApiError


def register(sub) -> None:
    p = sub.add_parser("validate", help="validate an XML e-invoice on the official rules")
    p.add_argument("file", type=Path, help="CII or UBL XML file")
    p.add_argument("--spec", choices=("xrechnung", "en16931"), default="xrechnung")
    p.add_argument("--version", default=None, help="validation package version (default: latest active)")
    p.add_argument("--json", action="store_true", help="print the report as JSON (service spec 2.10)")
    p.set_defaults(func=_run)


def _run(args) -> int:
    from pipeline.validate import validate  # heavy imports only when this command runs

    try:
        data = args.file.read_bytes()
    except OSError as exc:
        print(f"pipeline validate: {exc}", file=sys.stderr)
        return 2
    try:
        outcome = validate(data, args.spec, args.version)
    except ApiError as exc:
        print(f"pipeline validate: {exc.error_code}: {exc.message}", file=sys.stderr)
        return 2
    report = outcome.report
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        verdict = "VALID" if report.valid else "INVALID"
        scenario = f", scenario {outcome.scenario!r}" if outcome.scenario else ""
        print(f"{verdict}: {args.file} ({args.spec} {report.version}, {report.syntax or 'unknown syntax'}{scenario}) "
              f"- {report.errors} error(s), {report.warnings} warning(s)")
        for i in report.issues:
            loc = i.location
            where = f" line {loc.line}" + (f":{loc.column}" if loc.column else "") if loc and loc.line else ""
            print(f"  {i.severity:7} {i.code}{where}: {i.message}")
    return 0 if report.valid else 1
