"""Generation orchestration: JSON request -> validated CII / UBL for XRechnung or EN 16931.

    parse (model) -> calculate (AUTO amounts) -> canonical XML -> transform (CII/UBL) -> validate

Each stage is one function here, so `pipeline run STAGE` and the benchmark call exactly one of them;
`generate_xml` chains them. A document that fails validation is never returned: the caller gets
ApiError 422 VALIDATION_FAILED with one entry per failed rule, pointing at the JSON field and business
term where the rule maps to one (`pipeline.terms`).
"""
from __future__ import annotations

import json
import logging
import re
from decimal import Decimal

from pipeline import canonical as _canonical
from pipeline import calc as _calc
from pipeline import model as _model
from pipeline import terms, transform as _transform
from pipeline.errors import ApiError, ErrorDetail, invalid_input, validation_failed
from pipeline.report import ERROR, Issue, Report

SPECS = ("xrechnung", "en16931")
log = logging.getLogger("pipeline.generate")


# ---- stages ---------------------------------------------------------------------------------------------

def parse(body: bytes, spec: str):
    """Stage 1, model: request bytes -> InvoiceRequest (ApiError 400 INVALID_INPUT with field paths)."""
    return _model.parse_request(body, spec)


def calculate(request):
    """Stage 2, calculation: fill the derived amounts (AUTO) or keep them as sent (MANUAL)."""
    return _calc.calculate(request)


def to_canonical(request) -> bytes:
    """Stage 3, canonical XML (docs/canonical.md) of a calculated request (derived file names filled in)."""
    return _canonical.to_canonical(_canonical.with_derived(request))


def normalize(body: bytes, spec: str, indent: bool = False):
    """Stages 1-3: (InvoiceRequest after calculation, canonical XML bytes; `indent` for people)."""
    return _canonical.normalize(body, spec, indent)


def syntax_of(request) -> str:
    """config.syntax, upper-cased (the model accepts it case-insensitively)."""
    return str(request.config.syntax).upper()


def version_of(request) -> str | None:
    return getattr(request.config, "version", None)


def specification_id_of(request) -> str | None:
    """BT-24 as sent (the model has checked it against the endpoint, e.g. an XRechnung extension id)."""
    control = request.invoice.processControl
    return control.specificationIdentifier if control is not None else None


def transform(canonical: bytes, syntax: str, spec: str, xslt: str | None = None,
              specification_id: str | None = None) -> bytes:
    """Stage 4: canonical XML -> CII or UBL with the spec's stylesheet parameters (BT-24, BT-23 default).
    `specification_id` overrides the spec's BT-24; `xslt` runs another stylesheet file instead (for
    stylesheet authors)."""
    params = _transform.params_for(spec, **{"specification-id": specification_id})
    return _transform.run_stylesheet(xslt or stylesheet_for(syntax), canonical, params)


def transform_to_tree(canonical: bytes, syntax: str, spec: str,
                      specification_id: str | None = None) -> _transform.Output:
    """Stage 4 as `generate_xml` runs it: the document as bytes and as the Saxon tree that stage 5 reads."""
    params = _transform.params_for(spec, **{"specification-id": specification_id})
    return _transform.run_to_tree(stylesheet_for(syntax), canonical, params)


def stylesheet_for(syntax: str):
    """xslt/cii.xsl or xslt/ubl.xsl (ApiError 400 for any other syntax)."""
    if syntax.upper() == "CII":
        return _transform.CII_XSL
    if syntax.upper() == "UBL":
        return _transform.UBL_XSL
    raise invalid_input("Unsupported syntax", [ErrorDetail(
        "INVALID_VALUE", "syntax must be CII or UBL", field="config.syntax", rejectedValue=syntax)])


def validate(xml: bytes, spec: str, version: str | None = None, request_id: str | None = None,
             tree=None) -> Report:
    """Stage 5: the spec's active rule pack (or `version`; unknown version -> ApiError 400). `tree` = the
    document as stage 4's Saxon tree (saves parsing it again)."""
    from pipeline.validate import validate_xml  # the validation engine loads its packs lazily
    return validate_xml(xml, spec, version=version, request_id=request_id, tree=tree)


def warm_up() -> None:
    """Compile the generation stylesheets in this worker, as files (CLI, ZUGFeRD) and inside the wrapper that
    `generate_xml` runs (the rule packs are the validation engine's)."""
    from pipeline import saxon
    for stylesheet in (_transform.CII_XSL, _transform.UBL_XSL):
        saxon.compile_stylesheet(stylesheet)
        _transform.tree_executable(stylesheet)


# ---- the whole pipeline ---------------------------------------------------------------------------------

def generate_xml(body: bytes, spec: str, request_id: str | None = None) -> tuple[bytes, Report]:
    """JSON request -> (validated XML, report with any warnings). Raises ApiError (400, 422, 500)."""
    if spec not in SPECS:
        raise ValueError(f"unknown specification {spec!r}")
    request, canonical = normalize(body, spec)
    try:
        out = transform_to_tree(canonical, syntax_of(request), spec, specification_id_of(request))
    except _transform.TransformError as exc:  # a stylesheet bug, not the client's: log it, answer 500
        log.error("transform failed request_id=%s: %s", request_id, exc)
        raise ApiError(500, "GENERATION_FAILED", "The document could not be generated.") from exc
    xml = out.xml
    report = validate(xml, spec, version_of(request), request_id, out.tree)
    if not report.valid:
        raise rejection(report, syntax_of(request))
    return xml, report


def rejection(report: Report, syntax: str) -> ApiError:
    """422 VALIDATION_FAILED listing every failed rule of a report."""
    errors = [error_detail(i, syntax) for i in report.issues if i.severity == ERROR]
    rules = ", ".join(dict.fromkeys(e.code for e in errors))
    return validation_failed(f"The generated document failed validation ({report.version}): {rules}", errors)


# The line step of a finding's XPath, plain (`InvoiceLine[2]`) or Saxon's (`*:InvoiceLine[namespace-uri()='…'][2]`).
_NS_PREDICATE = r"(?:\[namespace-uri\(\)='[^']*'\])?"
_LINE_STEP = {"CII": re.compile(r"IncludedSupplyChainTradeLineItem" + _NS_PREDICATE + r"\[(\d+)\]"),
              "UBL": re.compile(r"(?:InvoiceLine|CreditNoteLine)" + _NS_PREDICATE + r"\[(\d+)\]")}


def error_detail(issue: Issue, syntax: str) -> ErrorDetail:
    """One failed rule -> ErrorDetail: code = rule id, the JSON field and BT it maps to (`pipeline.terms`).
    A line-level field gets the line index from the finding's XPath when the XPath names one."""
    field, bt = terms.field_for_rule(issue.code)
    if field and "invoiceLines[]" in field:
        xpath = issue.location.xpath if issue.location else None
        match = _LINE_STEP.get(syntax, _LINE_STEP["CII"]).search(xpath or "")
        if match:
            field = field.replace("invoiceLines[]", f"invoiceLines[{int(match.group(1)) - 1}]", 1)
    return ErrorDetail(code=issue.code, message=issue.message, field=field, businessTerm=bt)


# ---- request JSON helpers (CLI, golden files, tests) ----------------------------------------------------

def load_request(body: bytes) -> dict:
    """Request JSON as a dict with numbers as Decimal (so nothing is rounded through float)."""
    return json.loads(body, parse_float=Decimal)


def dump_request(request: dict) -> bytes:
    """Inverse of `load_request`: JSON with every Decimal written exactly as it was read."""
    decimals: list[Decimal] = []

    def mark(value):
        if isinstance(value, dict):
            return {k: mark(v) for k, v in value.items()}
        if isinstance(value, list):
            return [mark(v) for v in value]
        if isinstance(value, Decimal):
            decimals.append(value)
            return f"\x00{len(decimals) - 1}\x00"
        return value

    text = json.dumps(mark(request), ensure_ascii=False, indent=1)
    for i, d in enumerate(decimals):
        text = text.replace(f'"\\u0000{i}\\u0000"', format(d, "f"), 1)
    return text.encode("utf-8")


def with_config(body: bytes, **config) -> bytes:
    """The same request with config values replaced (e.g. syntax="UBL")."""
    request = load_request(body)
    request.setdefault("config", {}).update(config)
    return dump_request(request)
