"""`pipeline golden [--update] [NAME ...]`: check (or, on purpose, rewrite) the golden outputs.

Every request in `fixtures/*.json` is generated for each spec and syntax through the whole pipeline
(validation included) and compared with `fixtures/golden/<name>.<spec>.<syntax>.xml`. A fixture that names
its spec (config.spec or processControl.specificationIdentifier) is generated for that spec only; one that carries
content CII cannot carry (`syntaxes_of`) in UBL only.
Golden files are reviewed outputs: `--update` rewrites them, and the diff is what a reviewer reads.
They hold the output byte for byte as a client gets it, which is indented (one element per line), so a diff
stays readable.
"""
from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass
from pathlib import Path

from pipeline.check.report import WARNING
from pipeline.errors import ApiError
from pipeline.invoice.request_json import load_request, with_config
from pipeline.invoice.specs import EN16931_ID, XRECHNUNG_ID
from pipeline.settings import REPO_ROOT

FIXTURES = REPO_ROOT / "fixtures"
STATUS_REQUESTS = "fr-status-"  # France's lifecycle status requests (POST /v1/invoice/fr-ctc/status): no invoices
GOLDEN = FIXTURES / "golden"


@dataclass(frozen=True)
class Case:
    fixture: Path
    spec: str
    syntax: str

    @property
    def id(self) -> str:
        return f"{self.fixture.stem}.{self.spec}.{self.syntax.lower()}"

    @property
    def golden(self) -> Path:
        return GOLDEN / f"{self.id}.xml"

    def render(self) -> bytes:
        """Generate (and validate) this case; ApiError when the pipeline rejects it."""
        return self.generate()[0]

    def generate(self):
        """(document, its validation report) of this case; ApiError when the pipeline rejects it."""
        from pipeline.flows.generate_xml import generate_xml  # lazy: Saxon only when a case is generated
        return generate_xml(with_config(self.fixture.read_bytes(), syntax=self.syntax), self.spec)


def specs_of(fixture: Path) -> tuple[str, ...]:
    """The XML specs a fixture is generated for; none for a ZUGFeRD request (a PDF: tested where PDFs are)."""
    request = load_request(fixture.read_bytes())
    if request.get("config", {}).get("spec") == "zugferd":
        return ()
    spec_id = request.get("invoice", {}).get("processControl", {}).get("specificationIdentifier") or ""
    named = request.get("config", {}).get("spec") or (
        "en16931" if spec_id == EN16931_ID else "xrechnung" if spec_id.startswith(XRECHNUNG_ID) else None)
    return (named,) if named else ("xrechnung", "en16931")


def syntaxes_of(fixture: Path) -> tuple[str, ...]:
    """("UBL",) for a request CII cannot carry (several preceding invoices; the XRechnung extension's groups: the
    model refuses them in CII; Peppol, a UBL invoice), else both syntaxes."""
    request = load_request(fixture.read_bytes())
    invoice = request.get("invoice", {})
    ubl_only = (request.get("config", {}).get("spec") == "peppol"
                or len(invoice.get("additionalPrecedingInvoiceReferences") or []) > 0 or invoice.get("thirdPartyPayments")
                or any(line.get("subInvoiceLines") for line in invoice.get("invoiceLines") or []))
    return ("UBL",) if ubl_only else ("CII", "UBL")


def invoice_fixtures() -> list[Path]:
    """The fixtures that are invoice requests; the status requests (`fr-status-*.json`) have tests of their own
    (tests/test_fr_cdar_generate.py)."""
    return sorted(p for p in FIXTURES.glob("*.json") if not p.name.startswith(STATUS_REQUESTS))


def cases(names: list[str] | None = None) -> list[Case]:
    return [case for f in _named(names) for case in cases_of(f)]


def cases_of(fixture: Path) -> list[Case]:
    """The cases of one fixture; ValueError (or ApiError) when it is no JSON request."""
    return [Case(fixture, spec, syntax) for spec in specs_of(fixture) for syntax in syntaxes_of(fixture)]


def _named(names: list[str] | None) -> list[Path]:
    fixtures = invoice_fixtures()
    return [f for f in fixtures if f.stem in names] if names else fixtures


def diff(expected: bytes, actual: bytes, name: str) -> str:
    """Unified diff of two XML outputs, line by line, for a human. Where the lines are equal and only the bytes
    differ (line endings, a final newline, a byte-order mark: a golden file an editor or a checkout rewrote), the
    diff was empty, so a failure showed nothing: that difference is said instead."""
    a = expected.decode("utf-8", "replace").splitlines()
    b = actual.decode("utf-8", "replace").splitlines()
    lines = "\n".join(difflib.unified_diff(a, b, f"golden/{name}.xml", f"generated/{name}.xml", lineterm=""))
    return lines or f"golden/{name}.xml differs from generated/{name}.xml in {_byte_difference(expected, actual)}"


def _byte_difference(expected: bytes, actual: bytes) -> str:
    """What differs between two outputs whose lines are equal."""
    def endings(data: bytes) -> str:
        return "CRLF" if b"\r\n" in data else "CR" if b"\r" in data else "LF"

    if expected.startswith(b"\xef\xbb\xbf") != actual.startswith(b"\xef\xbb\xbf"):
        return "a byte-order mark only (golden " + ("has" if expected.startswith(b"\xef\xbb\xbf") else "has none") + ")"
    if endings(expected) != endings(actual):
        return f"line endings only (golden {endings(expected)}, generated {endings(actual)})"
    if expected.rstrip(b"\r\n") == actual.rstrip(b"\r\n"):
        return "the newline at the end only"
    first = next((n for n, (x, y) in enumerate(zip(expected, actual)) if x != y), min(len(expected), len(actual)))
    return f"bytes only that are no line's text (first at byte {first})"


def _shown(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def register(sub) -> None:
    p = sub.add_parser("golden", help="check or rewrite the golden outputs of fixtures/")
    p.add_argument("names", nargs="*", help="fixture names (file stems); default all")
    p.add_argument("--update", action="store_true", help="rewrite the golden files from the current pipeline")
    p.set_defaults(func=run)


def run(args) -> int:
    unknown = sorted(set(args.names) - {f.stem for f in invoice_fixtures()})
    if unknown:  # a typo matched no fixture, and "nothing checked" passed as "every golden file matches"
        print(f"pipeline golden: no fixture named {', '.join(unknown)} in {_shown(FIXTURES)} (known: "
              f"{', '.join(f.stem for f in invoice_fixtures())})", file=sys.stderr)
        return 2
    total, unread = [], set()
    for fixture in _named(args.names):
        try:
            total += cases_of(fixture)
        except (ValueError, ApiError) as exc:  # a fixture being edited: said, the others still checked
            unread.add(fixture.stem)
            print(f"FAIL {_shown(fixture)}: not a JSON request: {getattr(exc, 'message', exc)}", file=sys.stderr)
    differ = broken = written = stale = warned = 0
    for case in total:
        try:
            actual, report = case.generate()
        except ApiError as err:
            broken += 1
            details = "; ".join(f"{e.code} {e.field or ''}".strip() for e in err.errors) or err.message
            print(f"FAIL {case.id}: {err.http_status} {err.error_code}: {details}", file=sys.stderr)
            continue
        if report.warnings:  # a showcase that carries warnings is shown so, not passed as clean (issue 38 item 10)
            warned += 1
            codes = dict.fromkeys(i.code for i in report.issues if i.severity == WARNING)
            print(f"WARNINGS {case.id}: {', '.join(codes)}", file=sys.stderr)
        before = case.golden.read_bytes() if case.golden.exists() else None
        if before == actual:
            continue
        if args.update:
            GOLDEN.mkdir(parents=True, exist_ok=True)
            case.golden.write_bytes(actual)
            written += 1
            # what the rewrite changed, as the check would have shown it: the reviewer reads it here too
            print(f"wrote {_shown(case.golden)}" + (" (new)" if before is None else ":\n"
                                                      + diff(before, actual, case.id)))
        elif before is None:
            differ += 1
            print(f"MISSING {_shown(case.golden)} (run: pipeline golden --update)", file=sys.stderr)
        else:
            differ += 1
            print(diff(before, actual, case.id))
    if not args.names:  # a golden file no fixture generates any more is never checked again: said, as the tests do
        expected = {c.golden.name for c in total}
        for path in sorted(p for p in GOLDEN.glob("*.xml")
                           if p.name not in expected and p.name.split(".")[0] not in unread):
            stale += 1
            print(f"STALE {_shown(path)}: no fixture generates it (remove it, or restore its fixture)",
                  file=sys.stderr)
    # a run that found everything equal said nothing at all: the count says what was compared
    said = [f"{written} rewritten" if args.update else f"{len(total) - differ - broken} match",
            f"{differ} differ or are missing" if differ else "", f"{broken} failed to generate" if broken else "",
            f"{stale} stale" if stale else "",
            f"{len(unread)} {'fixture' if len(unread) == 1 else 'fixtures'} unreadable" if unread else "",
            f"{warned} with warnings (not failing: their documents are valid)" if warned else ""]
    print(f"golden: {len(total)} cases; " + ", ".join(x for x in said if x), file=sys.stderr)
    return 1 if differ or broken or stale or unread else 0
