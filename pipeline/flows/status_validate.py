"""Product path: validate a lifecycle status message of France's reform (CDV, UN/CEFACT CDAR D22B) on the `fr-cdar`
rule pack, as POST /v1/invoice/fr-ctc/status/validate, its batch endpoint, jobs and `pipeline validate --spec
fr-cdar` take it.

    read safely (no DTD, entities, network) -> a CDAR root? -> pack -> XSD + BR-FR-CDV + BR-FR-CDV warnings -> report

The report is the validation report of every other endpoint (service spec 2.10) with syntax `CDAR` and the FNFE
release as its version. A document that cannot be read, or is no CDAR message, gets a report with that finding, never
an exception. The content checks of invoices (IBAN, VAT ids) have nothing to judge in a status message.
"""
from __future__ import annotations

from pipeline.check import applied, cdar, engine, xmlinput
from pipeline.check.applied import Rules
from pipeline.check.report import Report
from pipeline.check.xmlinput import XmlInputError


def validate_status(data: bytes, version: str | None = None, request_id: str | None = None, tree=None,
                    doc: xmlinput.ParsedXml | None = None) -> Report:
    """The FNFE chain's report on a CDAR message. `version`: the fr-cdar pack version (None: the active one);
    `tree` / `doc`: the same document as a Saxon tree / as `xmlinput.load` read it, when the caller has them.
    ApiError 400 for an unknown version, 500 when no fr-cdar pack is installed."""
    engine.check_spec(cdar.SPEC, version)
    pack = engine.pick_pack(cdar.SPEC, version, cdar.SYNTAX)
    try:
        doc = doc if doc is not None else xmlinput.load(data)
    except XmlInputError as exc:
        return Report(pack.version, None, [exc.issue], request_id, sentences=cdar.MEANING)
    if not cdar.is_cdar(doc):
        return Report(pack.version, None, [cdar.root_issue(doc)], request_id, sentences=cdar.MEANING)
    # a status message is no invoice: its summary sentence is not the BMF letter's on e-invoices
    report = Report(pack.version, cdar.SYNTAX, [], request_id, sentences=cdar.MEANING)
    try:
        sdoc = tree if tree is not None else engine.saxon_document(doc)
    except XmlInputError as exc:  # lxml accepted it but Saxon does not: report, do not crash
        report.issues.append(exc.issue)
        return report
    report.issues = cdar.chain_issues(doc, pack, sdoc)
    rules = pack.rules_for(cdar.SYNTAX)  # what judged it, as every report says (issue 37)
    report.rules = [Rules(pack.spec, pack.version,
                          applied.steps(pack.root, rules.xsd, [pack.runnable(s) for s in rules.stylesheets]))]
    return report
