"""`pipeline validate FILE [--spec xrechnung|en16931] [--version V] [--json] [--strict] [--html OUT] [--pdf OUT]
[--lang de]`: exit 0 valid, 1 invalid, 2 error. --html / --pdf also write the report for people (as the validate
endpoints answer Accept: text/html / application/pdf).

A PDF (by its `%PDF-` header) is checked as ZUGFeRD / Factur-X: PDF/A-3, XMP and the embedded invoice XML
against its profile's rules, as POST /v1/invoice/zugferd/validate does; `--spec` and `--version` then do not apply.
The report has the content checks (`CHECK-...`, `pipeline.check.content`) as the endpoints do: WARNINGs, ERRORs
with `--strict` (then a finding makes the exit code 1).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from pipeline.errors import ApiError


def register(sub) -> None:
    p = sub.add_parser("validate", help="validate an e-invoice (CII / UBL XML, or a ZUGFeRD PDF) on the official rules")
    p.add_argument("file", type=Path, help="CII or UBL XML file, or a ZUGFeRD / Factur-X PDF")
    p.add_argument("--spec", choices=("xrechnung", "en16931"), default="xrechnung", help="rules for an XML file")
    p.add_argument("--version", default=None, help="validation package version (default: latest active)")
    p.add_argument("--json", action="store_true", help="print the report as JSON (service spec 2.10)")
    p.add_argument("--html", type=Path, metavar="OUT", help="also write the report for people as HTML here")
    p.add_argument("--pdf", type=Path, metavar="OUT", help="also write the report for people as PDF here")
    p.add_argument("--lang", choices=("en", "de"), default="en", help="language of the --html / --pdf report")
    p.add_argument("--strict", action="store_true",
                   help="content-check findings (CHECK-IBAN, CHECK-VAT-ID, ...) are errors, not warnings")
    p.set_defaults(func=_run)


def _run(args) -> int:
    from pipeline.flows.validate_pdf import validate_pdf  # lazy: Saxon and pikepdf only for this command
    from pipeline.flows.validate_xml import validate  # lazy: as above

    data = args.file.read_bytes()
    try:
        if data.lstrip()[:5] == b"%PDF-":
            report, what = validate_pdf(data, content_checks=True, strict=args.strict), "zugferd"
        else:
            outcome = validate(data, args.spec, args.version, content_checks=True, strict=args.strict)
            report = outcome.report
            what = args.spec + (f", scenario {outcome.scenario!r}" if outcome.scenario else "")
    except ApiError as exc:
        print(f"pipeline validate: {exc.error_code}: {exc.message}", file=sys.stderr)
        return 2
    if args.html or args.pdf:
        from pipeline.flows.validation_report import readable_report  # lazy: as above

        for out, pdf in ((args.html, False), (args.pdf, True)):
            if out:
                out.write_bytes(readable_report(data, report, args.file.name, args.lang, pdf=pdf))
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        verdict = "VALID" if report.valid else "INVALID"
        print(f"{verdict}: {args.file} ({what} {report.version}, {report.syntax or 'unknown syntax'}) "
              f"- {report.errors} error(s), {report.warnings} warning(s)")
        for i in report.issues:
            loc = i.location
            where = f" line {loc.line}" + (f":{loc.column}" if loc.column else "") if loc and loc.line else ""
            print(f"  {i.severity:7} {i.code}{where}: {i.message}")
    return 0 if report.valid else 1
