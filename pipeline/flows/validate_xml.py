"""Product path: validate an XML e-invoice on the official rules.

    read safely (no DTD, entities, network) -> syntax from the root -> rule pack -> XSD + Schematron -> report

XRechnung packs follow KoSIT's `scenarios.xml` (first matching scenario, its steps, its `customLevel`s); EN 16931
packs use the CEN XSD and stylesheet of the document's syntax. A document that cannot be read, or is no CII / UBL
invoice, gets a report with that finding, never an exception.

With `content_checks` the checks the official rules miss (`pipeline.check.content`: IBAN, VAT ids, ...) run on
the document read into canonical XML (`pipeline.read`), each finding located at the source node its value came
from; WARNINGs that never change the verdict, ERRORs with `strict`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from pipeline.check import content, engine, xmlinput
from pipeline.check.report import Issue, Location, Report
from pipeline.check.xmlinput import ParsedXml, XmlInputError
from pipeline.errors import TransformError
from pipeline.invoice.specs import XRECHNUNG_ID_PREFIX
from pipeline.read import canonical as reading, provenance

log = logging.getLogger("pipeline.validate")


@dataclass
class Outcome:
    report: Report
    scenario: str | None = None  # XRechnung: name of the KoSIT scenario applied


def _source_location(doc: ParsedXml, path: str) -> Location:
    """Where a source path (XPath 3.1 `path()`, as `s:src` names it) is: a readable xpath with the document's own
    prefixes, and the line and column of its element."""
    element = doc.element_at(path)
    if element is None:
        return Location(xpath=path)
    xpath = provenance.path_of(element, readable=True)
    last = path.rsplit("/", 1)[-1]
    if last.startswith("@"):
        xpath += "/@" + last.rsplit("}", 1)[-1].lstrip("@")
    line, column = doc.start_of(element)
    return Location(xpath, line, column)


def content_issues(data: bytes, doc: ParsedXml, xrechnung: bool = False, strict: bool = False,
                   tree=None) -> list[Issue]:
    """The content findings (`pipeline.check.content`) of a CII / UBL document read safely as `doc`, each located
    at the source node its value was read from (xpath, line, column). `xrechnung`: also when BT-24 names XRechnung;
    `tree`: the document as a Saxon tree of exactly its characters, when the caller has one (not parsed again).
    A document the reading stylesheets cannot read gets none: these checks come on top of the official rules and
    must never cost the report."""
    if doc.syntax is None:
        return []
    try:
        read = provenance.split(reading.to_canonical(data, doc, tree=tree))
    except TransformError as exc:
        log.warning("content checks skipped, the document could not be read: %s", exc)
        return []
    sources = {element: read.leaves[path][1] for path, element in provenance.leaves(read.root).items()
               if path in read.leaves}

    def locate(element):
        src = (sources.get(element) or "").split()
        return _source_location(doc, src[0]) if src else None

    spec_id, _ = reading.specification_id(doc)
    xrechnung = xrechnung or (spec_id or "").startswith(XRECHNUNG_ID_PREFIX)
    try:
        return list(content.check(read.root, locate, xrechnung, strict))
    except Exception:  # noqa: BLE001 - a bug in a check of our own must not cost the official report
        log.exception("content checks failed")
        return []


def validate(data: bytes, spec: str = "xrechnung", version: str | None = None,
             request_id: str | None = None, tree=None, content_checks: bool = False, strict: bool = False) -> Outcome:
    """`validate_xml` plus the name of the XRechnung scenario applied (for the CLI and the corpus tests).
    `tree` = the same document as a Saxon tree when the caller already has one (a transform's result)."""
    engine.check_spec(spec, version)
    try:
        doc = xmlinput.load(data)
    except XmlInputError as exc:
        return Outcome(Report(engine.pick_pack(spec, version, None).version, None, [exc.issue], request_id))
    if doc.syntax is None:
        return Outcome(Report(engine.pick_pack(spec, version, None).version, None,
                              [xmlinput.unknown_root_issue(doc)], request_id))
    pack = engine.pick_pack(spec, version, doc.syntax)
    report = Report(pack.version, doc.report_syntax, [], request_id)
    view = engine.rules_view(doc.text) if tree is None else doc.text
    try:
        sdoc = tree if tree is not None else engine.saxon_document(doc, view)
    except XmlInputError as exc:  # lxml accepted it but Saxon does not: report, do not crash
        report.issues.append(exc.issue)
        return Outcome(report)
    report.issues, scenario = engine.pack_issues(doc, pack, sdoc)
    if content_checks:  # one Saxon parse for both, unless the rules read attachments as a stand-in
        report.issues += content_issues(data, doc, spec == "xrechnung", strict, sdoc if view is doc.text else None)
    return Outcome(report, scenario)


def validate_xml(data: bytes, spec: str = "xrechnung", version: str | None = None,
                 request_id: str | None = None, tree=None, content_checks: bool = False,
                 strict: bool = False) -> Report:
    """Validate an XML e-invoice on the official rules of `spec` (xrechnung | en16931); `version=None` = the
    latest active pack for the detected syntax; `tree` = the document already parsed by Saxon, if at hand.
    `content_checks` adds the checks the official rules miss (WARNINGs; ERRORs with `strict`).
    Raises ApiError 400 for an unsupported spec/version."""
    return validate(data, spec, version, request_id, tree, content_checks, strict).report
