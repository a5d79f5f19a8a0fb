"""Product path: validate an XML e-invoice on the official rules.

    read safely (no DTD, entities, network) -> syntax from the root -> rule pack -> XSD + Schematron -> report

XRechnung packs follow KoSIT's `scenarios.xml` (first matching scenario, its steps, its `customLevel`s); EN 16931
packs use the CEN XSD and stylesheet of the document's syntax. A document that cannot be read, or is no CII / UBL
invoice, gets a report with that finding, never an exception.
"""
from __future__ import annotations

from dataclasses import dataclass

from pipeline.check import engine, xmlinput
from pipeline.check.report import Report
from pipeline.check.xmlinput import XmlInputError


@dataclass
class Outcome:
    report: Report
    scenario: str | None = None  # XRechnung: name of the KoSIT scenario applied


def validate(data: bytes, spec: str = "xrechnung", version: str | None = None,
             request_id: str | None = None, tree=None) -> Outcome:
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
    try:
        sdoc = tree if tree is not None else engine.saxon_document(doc)
    except XmlInputError as exc:  # lxml accepted it but Saxon does not: report, do not crash
        report.issues.append(exc.issue)
        return Outcome(report)
    report.issues, scenario = engine.pack_issues(doc, pack, sdoc)
    return Outcome(report, scenario)


def validate_xml(data: bytes, spec: str = "xrechnung", version: str | None = None,
                 request_id: str | None = None, tree=None) -> Report:
    """Validate an XML e-invoice on the official rules of `spec` (xrechnung | en16931); `version=None` = the
    latest active pack for the detected syntax; `tree` = the document already parsed by Saxon, if at hand.
    Raises ApiError 400 for an unsupported spec/version."""
    return validate(data, spec, version, request_id, tree).report
