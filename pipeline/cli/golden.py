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
        from pipeline.flows.generate_xml import generate_xml  # lazy: Saxon only when a case is generated
        return generate_xml(with_config(self.fixture.read_bytes(), syntax=self.syntax), self.spec)[0]


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
    fixtures = invoice_fixtures()
    if names:
        fixtures = [f for f in fixtures if f.stem in names]
    return [Case(f, spec, syntax) for f in fixtures for spec in specs_of(f) for syntax in syntaxes_of(f)]


def diff(expected: bytes, actual: bytes, name: str) -> str:
    """Unified diff of two XML outputs, line by line, for a human."""
    a = expected.decode("utf-8").splitlines()
    b = actual.decode("utf-8").splitlines()
    return "\n".join(difflib.unified_diff(a, b, f"golden/{name}.xml", f"generated/{name}.xml", lineterm=""))


def _shown(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def register(sub) -> None:
    p = sub.add_parser("golden", help="check or rewrite the golden outputs of fixtures/")
    p.add_argument("names", nargs="*", help="fixture names (file stems); default all")
    p.add_argument("--update", action="store_true", help="rewrite the golden files from the current pipeline")
    p.set_defaults(func=run)


def run(args) -> int:
    failed = 0
    for case in cases(args.names):
        try:
            actual = case.render()
        except ApiError as err:
            failed += 1
            details = "; ".join(f"{e.code} {e.field or ''}".strip() for e in err.errors) or err.message
            print(f"FAIL {case.id}: {err.http_status} {err.error_code}: {details}", file=sys.stderr)
            continue
        if args.update:
            GOLDEN.mkdir(parents=True, exist_ok=True)
            if not case.golden.exists() or case.golden.read_bytes() != actual:
                case.golden.write_bytes(actual)
                print(f"wrote {_shown(case.golden)}")
            continue
        if not case.golden.exists():
            failed += 1
            print(f"MISSING {_shown(case.golden)} (run: pipeline golden --update)", file=sys.stderr)
        elif case.golden.read_bytes() != actual:
            failed += 1
            print(diff(case.golden.read_bytes(), actual, case.id))
    return 1 if failed else 0
