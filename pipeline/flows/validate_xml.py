"""Product path: validate an XML e-invoice on the official rules.

    read safely (no DTD, entities, network) -> syntax from the root -> rule pack -> XSD + Schematron -> report

XRechnung packs follow KoSIT's `scenarios.xml` (first matching scenario, its steps, its `customLevel`s); EN 16931
packs use the CEN XSD and stylesheet of the document's syntax; Peppol packs the UBL XSD, the CEN and the PEPPOL
stylesheets (self-billing, recognised by its CustomizationID: the self-billing PEPPOL stylesheet); `fr-ctc` runs the
French reform's chain (XSD, the rules of the profile BT-24 names, BR-FR Flux 2: `pipeline.check.fr_ctc`). What the
document claims (BT-24) decides which of these run (`pipeline.check.judging`): a Factur-X profile's rules for a
document naming one, the EN 16931 rules alone (and an indeterminate verdict) for a claim the endpoint's rules do not
cover or this service does not have (`pipeline.check.claims`). Without
`version` the pack in force on the document's issue date judges it (`pipeline.check.packs.in_force`). A syntax the
pack has no rules for (CII on Peppol) is ApiError 400 UNSUPPORTED_SYNTAX. A document that cannot be read, or is no
CII / UBL invoice, gets a report with that finding, never an exception.

With `content_checks` the checks the official rules miss (`pipeline.check.content`: IBAN, VAT ids, ...) run on
the few values they judge, read from the document's lxml tree as the reading stylesheets would read them
(`pipeline.check.content_source`), each finding located at the source node its value came from; WARNINGs that
never change the verdict, ERRORs with `strict`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date

from pipeline.check import categories, claims, content, content_source, engine, judging, xmlinput
from pipeline.check.report import Issue, Location, Report
from pipeline.check.xmlinput import ParsedXml, XmlInputError
from pipeline.invoice.specs import XRECHNUNG_ID_PREFIX
from pipeline.read import provenance

log = logging.getLogger("pipeline.validate")


@dataclass
class Outcome:
    report: Report
    scenario: str | None = None  # XRechnung: name of the KoSIT scenario applied


def _source_location(doc: ParsedXml, source) -> Location:
    """Where a source node is: a readable xpath with the document's own prefixes, and the line and column of its
    element (an attribute: `(element, name)`, located at its element)."""
    element, attribute = source if isinstance(source, tuple) else (source, None)
    xpath = provenance.path_of(element, doc.position, readable=True)
    if attribute:
        xpath += "/@" + attribute.rsplit("}", 1)[-1]
    line, column = doc.start_of(element)
    return Location(xpath, line, column)


def content_issues(doc: ParsedXml, xrechnung: bool = False, strict: bool = False) -> list[Issue]:
    """The content findings (`pipeline.check.content`) of a CII / UBL document read safely as `doc`, each located
    at the source node its value was read from (xpath, line, column). `xrechnung`: also when BT-24 names XRechnung.
    The values come straight from doc's lxml tree (`pipeline.check.content_source`: the nodes the reading
    stylesheets would read, ~0.1 ms instead of a reading transform). These checks come on top of the official rules
    and must never cost the report."""
    if doc.syntax is None:
        return []
    spec_id, _ = xmlinput.specification_id(doc)
    xrechnung = xrechnung or (spec_id or "").startswith(XRECHNUNG_ID_PREFIX)
    try:
        read = content_source.skeleton(doc.tree, doc.syntax)

        def locate(element):
            source = read.sources.get(element)
            return _source_location(doc, source) if source is not None else None

        return list(content.check(read.root, locate, xrechnung, strict, read.texts))
    except Exception:  # noqa: BLE001 - a bug in a check of our own must not cost the official report
        log.exception("content checks failed")
        return []


def validate(data: bytes, spec: str = "xrechnung", version: str | None = None,
             request_id: str | None = None, tree=None, content_checks: bool = False, strict: bool = False,
             doc: xmlinput.ParsedXml | None = None, on: date | None = None) -> Outcome:
    """`validate_xml` plus the name of the XRechnung scenario applied (for the CLI and the corpus tests).
    `tree` = the same document as a Saxon tree when the caller already has one (a transform's result); `doc` = it
    as `xmlinput.load(data)` read it, likewise (the reading side has read its source so). `on`: the date whose
    pack in force judges it when `version` is None (default: the document's issue date; generation: today)."""
    engine.check_spec(spec, version)
    try:
        doc = doc if doc is not None else xmlinput.load(data)
    except XmlInputError as exc:
        engine.pick_pack(spec, version, None)  # a version not installed is the request's error (400) first
        return Outcome(Report(None, None, [exc.issue], request_id))  # refused before any rules: none to name
    claim = claims.of_document(doc)
    if doc.syntax is None:
        engine.pick_pack(spec, version, None)  # as above
        if not claim.root:
            return Outcome(Report(None, None, [xmlinput.unknown_root_issue(doc)], request_id))
        # ZUGFeRD 1.0 (a CII of its own, before EN 16931): its XSD, not judged beyond it; its release candidate: none
        syntax = "CII" if claim.family == claims.ZUGFERD1 else None  # (the candidate's is none the reports name)
        return Outcome(_judged(Report(None, syntax, [], request_id), judging.judge(doc, spec, None, None, claim)))
    pack = engine.pick_pack(spec, version, doc.syntax, doc, on)
    if version is None:  # the release of the XRechnung version it claims, where it is not the one in force
        pack = claims.release_for(pack, claim, doc, on)
    if doc.syntax not in pack.syntaxes:  # Peppol: its CII rules are not published as a compiled release
        raise engine.syntax_not_available(pack, doc.syntax)
    report = Report(None, doc.report_syntax, [], request_id,
                    german_law=categories.under_german_law(xmlinput.party_countries(doc)))
    view = engine.rules_view(doc.text) if tree is None else doc.text
    try:
        sdoc = tree if tree is not None else engine.saxon_document(doc, view)
    except XmlInputError as exc:  # lxml accepted it but Saxon does not: report, do not crash
        report.issues.append(exc.issue)
        return Outcome(report)
    checked = judging.judge(doc, spec, pack, sdoc, claim)  # the rules its claim calls for here
    _judged(report, checked, pack)
    if content_checks:  # on the lxml tree already parsed: no Saxon work
        report.issues += content_issues(doc, spec == "xrechnung", strict)
    return Outcome(report, checked.scenario)


def _judged(report: Report, checked, pack=None) -> Report:
    """The report with what judged the document, and as its `version` only what did (`judging.version_judged`)."""
    report.issues, report.rules, report.not_judged = checked.issues, checked.rules, checked.not_judged
    report.version = judging.version_judged(checked, pack)
    return report


def validate_xml(data: bytes, spec: str = "xrechnung", version: str | None = None,
                 request_id: str | None = None, tree=None, content_checks: bool = False,
                 strict: bool = False, doc: xmlinput.ParsedXml | None = None, on: date | None = None) -> Report:
    """Validate an XML e-invoice on the official rules of `spec` (xrechnung | en16931 | fr-ctc | peppol);
    `version=None` = the pack in force for the detected syntax on `on` (default: the document's issue date); `tree` =
    the document already parsed by Saxon, if at hand; `doc`: it as read by `xmlinput.load`, likewise.
    `content_checks` adds the checks the official rules miss (WARNINGs; ERRORs with `strict`).
    Raises ApiError 400 for an unsupported spec/version."""
    return validate(data, spec, version, request_id, tree, content_checks, strict, doc, on).report
