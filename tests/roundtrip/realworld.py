"""What the pipeline does with one real-world e-invoice (../shared/realworld): the verdict, convert, parse, round
trip and render, each through the in-process flows, judged by the official rules and by the independent reader of
business terms (`roundtrip.reader`). Shared by tests/test_realworld.py (targets) and bench/realworld.py (table).

- official: the verdict of the official rules alone on the invoice XML (for a PDF: the embedded XML on the rules its
  BT-24 names, as for the same XML: `pipeline.check.judging`); None where they do not judge it (it claims rules
  this service does not have, e.g. ZUGFeRD 1.0 or XRechnung 1.2: indeterminate). ours: what the validation flow
  answers for the file (a PDF: with the PDF/A, XMP and container checks). `pdfa_only`: official valid, ours
  invalid, and every ERROR is a PDF/A finding.
- convert (official valid XML only): to the other syntax, no allowLoss; `same` when the independent reader reads
  identical business terms from source and target (the target is valid: convert validates it).
- roundtrip (complete parses of official valid XML): the parse's JSON generated again in the source's syntax and spec; `same`
  when the terms read back equal the source's.
- server error: anything but an ApiError below 500.
"""
from __future__ import annotations

import re
import traceback
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from pipeline.check import engine, judging
from pipeline.check.xmlinput import load
from pipeline.check.report import ERROR
from pipeline.errors import ApiError
from pipeline.flows.convert import convert
from pipeline.flows.generate_xml import generate_xml
from pipeline.flows.parse import parse, validate_source
from pipeline.flows.render import render
from pipeline.flows.validate_pdf import validate_pdf
from pipeline.invoice.request_json import dump_request
from pipeline.invoice.terms import business_term
from pipeline.pdf import checks
from roundtrip.reader import diff_lines, flatten, read_terms

OTHER = {"CII": "UBL", "UBL": "CII"}
PDFA_PREFIX = "PDFA:"


@dataclass
class Outcome:
    name: str                          # path below the real-world folder
    kind: str                          # xml | pdf
    read: str = "ok"                   # ok, or the 4xx error code of parse
    official: bool | None = None       # official rules on the invoice XML (None: not judged, e.g. ZUGFeRD 1.0)
    ours: bool | None = None           # our validation flow's verdict on the file
    ours_errors: list[str] = field(default_factory=list)
    complete: bool = False
    convert: str = "n/a"               # same | differs | refused CODE | n/a
    convert_diff: list[str] = field(default_factory=list)
    roundtrip: str = "n/a"             # same | differs | refused CODE | n/a
    roundtrip_diff: list[str] = field(default_factory=list)
    rendered: bool | None = None
    server_errors: list[str] = field(default_factory=list)

    @property
    def pdfa_only(self) -> bool:
        return (self.kind == "pdf" and self.official is True and self.ours is False and bool(self.ours_errors)
                and all(code.startswith(PDFA_PREFIX) for code in self.ours_errors))

    @property
    def agrees(self) -> bool | None:
        return None if self.official is None else self.official == self.ours


def _terms(xml: bytes) -> dict[str, str]:
    return flatten(read_terms(xml).terms)


def _attempt(outcome: Outcome, stage: str, fn):
    """fn() -> (result, None); an ApiError below 500 -> (None, its code); anything else is a server error."""
    try:
        return fn(), None
    except ApiError as err:
        if err.http_status < 500:
            return None, err.error_code
        outcome.server_errors.append(f"{stage}: {err.http_status} {err.error_code} {err.message}")
    except Exception as exc:  # noqa: BLE001 - what a user would get as a 500
        outcome.server_errors.append(f"{stage}: {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}")
    return None, "SERVER_ERROR"


def _drop_derived_discounts(source: dict[str, str], target: dict[str, str]) -> None:
    """UBL needs an amount beside a gross price (BT-148), and convert says it wrote gross - net there (`changed`
    BT-147): such a discount that the source lacks and that is exactly gross - net is no difference."""
    for key in [k for k in target if k.endswith(".priceDetails.priceDiscount") and k not in source]:
        base = key[:-len("priceDiscount")]
        gross, net = target.get(base + "grossPrice"), target.get(base + "netPrice")
        if gross is not None and net is not None and Decimal(gross) - Decimal(net) == Decimal(target[key]):
            del target[key]


def _drop_derived_gross_prices(source: dict[str, str], target: dict[str, str]) -> None:
    """CII needs a gross price beside a discount (BT-147), and convert says it wrote net + discount there (`changed`
    BT-148): such a gross price that the source lacks and that is exactly net + discount is no difference."""
    for key in [k for k in target if k.endswith(".priceDetails.grossPrice") and k not in source]:
        base = key[:-len("grossPrice")]
        net, discount = target.get(base + "netPrice"), target.get(base + "priceDiscount")
        if net is not None and discount is not None and Decimal(net) + Decimal(discount) == Decimal(target[key]):
            del target[key]


def _take_said_dates(changed: list[dict], source: dict[str, str], target: dict[str, str]) -> None:
    """A target date that `changed` says was written for the source's (a time zone CII cannot carry: source
    2016-04-04+01:00, written 2016-04-04) is no silent difference: only such a pair is taken back."""
    said = {(c["source"], c["written"]) for c in changed if c["source"] is not None and c["written"] is not None}
    for key in [k for k in target if k.endswith("Date") and k in source and (source[k], target[k]) in said]:
        target[key] = source[key]


_INDEX = re.compile(r"\[\d+\]")


def conversion_diff(source_terms: dict[str, str], conversion) -> list[str]:
    """The business terms the converted document reads otherwise than its source (`_terms` of it), but for what the
    conversion's `changed` says it wrote otherwise (BT-24 included) and why (UBL's and CII's required values)."""
    target_terms = _terms(conversion.document)
    said = {c["businessTerm"] for c in conversion.changed}
    if "BT-147" in said:
        _drop_derived_discounts(source_terms, target_terms)
    if "BT-148" in said:
        _drop_derived_gross_prices(source_terms, target_terms)
    if "BT-6" in said and source_terms.get("vatAccountingCurrencyCode") == source_terms.get("currencyCode"):
        del source_terms["vatAccountingCurrencyCode"]   # BT-6 = BT-5 is no BT-6 (BR-53), said
    if "BT-13" in said:  # UBL's placeholder, said
        target_terms.pop("purchaseOrderReference", None)
    _take_said_dates(conversion.changed, source_terms, target_terms)
    if "BT-81" in said and target_terms.get("paymentInstructions.meansCode") == "1":  # UBL's required code, said
        del target_terms["paymentInstructions.meansCode"]
    written = next((c["written"] for c in conversion.changed if c["businessTerm"] == "BT-110"), None)
    if written is not None and Decimal(target_terms.get("documentTotals.taxTotalAmount", "NaN")) == Decimal(written):
        del target_terms["documentTotals.taxTotalAmount"]   # the breakdowns' sum where the source had none, said
    # a value written otherwise where `changed` says exactly that (BT-24; BT-121 in the VATEX list's capitals in a
    # ZUGFeRD PDF): a term of that business term reading the source's value in the source and the written one here
    for c in conversion.changed:
        for key in [k for k, v in target_terms.items() if v == c["written"] and source_terms.get(k) == c["source"]]:
            if business_term("invoice." + _INDEX.sub("[]", key)) == c["businessTerm"]:
                target_terms[key] = source_terms[key]
    return diff_lines(source_terms, target_terms)


def _official_pdf(data: bytes) -> bool | None:
    found = checks.inspect(data, validate_xml=False, check_pdfa=False)
    if found.xml is None:
        return False
    try:
        doc = load(found.xml)
        judged = judging.judge(doc, "zugferd", None, engine.saxon_document(doc) if doc.syntax else None)
    except Exception:  # noqa: BLE001 - unreadable XML: the rules cannot pass it
        return False
    if any(i.severity == ERROR for i in judged.issues):
        return False
    return None if judged.not_judged else True  # not judged: it claims rules we do not have


def examine(path: Path, root: Path, render_pdf: bool = False) -> Outcome:
    data = path.read_bytes()
    kind = "pdf" if b"%PDF-" in data[:1024] else "xml"
    out = Outcome(str(path.relative_to(root)), kind)
    parsed, code = _attempt(out, "parse", lambda: parse(data))
    if parsed is None:
        out.read = code
    else:
        out.complete = parsed.complete
    if kind == "pdf":
        report, _ = _attempt(out, "validate", lambda: validate_pdf(data))
        official, _ = _attempt(out, "official", lambda: _official_pdf(data))
        out.official = official
    elif parsed is not None:
        report, _ = _attempt(out, "validate", lambda: validate_source(parsed.source))
        out.official = None if report is None or report.verdict == "indeterminate" else report.valid
    else:
        report = None
    if report is not None:
        out.ours = report.valid
        out.ours_errors = sorted({i.code for i in report.issues if i.severity == ERROR})
    if parsed is None:
        return out
    rendered, _ = _attempt(out, "render", lambda: render(data, html=not render_pdf))
    out.rendered = rendered is not None
    if kind != "xml":
        return out
    syntax = parsed.source.syntax
    source_terms = _terms(parsed.source.xml)
    if out.official:
        conversion, code = _attempt(out, "convert", lambda: convert(data, OTHER[syntax]))
        if conversion is None:
            out.convert = f"refused {code}"
        else:
            out.convert_diff = conversion_diff(source_terms, conversion)
            out.convert = "differs" if out.convert_diff else "same"
    if parsed.complete and out.official:
        spec = parsed.config["spec"]
        request = {"invoice": parsed.invoice, "config": {**parsed.config, "syntax": syntax}}
        if spec == "zugferd":
            return out
        generated, code = _attempt(out, "roundtrip", lambda: generate_xml(dump_request(request), spec)[0])
        if generated is None:
            out.roundtrip = f"refused {code}"
        else:
            out.roundtrip_diff = diff_lines(source_terms, _terms(generated))
            out.roundtrip = "differs" if out.roundtrip_diff else "same"
    return out


def files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix.lower() in (".xml", ".pdf") and p.is_file())


def folder_of(name: str, depth: int = 3) -> str:
    parts = name.split("/")[:-1]
    return "/".join(parts[:depth]) or "."
