"""France's lifecycle status messages (CDV, "compte rendu de vie") on the `fr-cdar` rule pack.

A platform (PA) or a business reports every status of an invoice (200 Déposée ... 212 Encaissée, 213 Rejetée) in a
UN/CEFACT Cross Domain Acknowledgement and Response D22B message (CDAR). FNFE-MPE's chain, in this order:
1. the CDAR D22B XSD (uncoupled);
2. BR-FR-CDV-Schematron-CDAR (flags as written: fatal -> ERROR; the two code-list checks FNFE left as warnings,
   BR-FR-CDV-CL-06, stay WARNINGs);
3. BR-FR-CDV-Schematron-CDAR_WARNING: the same checks as FNFE publishes them for the transition, every finding a
   WARNING (a failed rule is therefore listed twice: as an error and as a warning).
Every step runs even when an earlier one fails, so that the report lists every finding.

The rule ids name the term of the CDV's semantic model they judge (`BR-FR-CDV-14_MDT-207`, `BR-FR-CDV-01_MDG-3`):
`pipeline.invoice.cdar_terms` reads it from there; the texts stay French, as published.
"""
from __future__ import annotations

import dataclasses

from lxml import etree

from pipeline.check import engine, packs
from pipeline.check.report import ERROR, WARNING, Issue
from pipeline.check.xmlinput import CDAR_NS as NS, CDAR_ROOT as ROOT, XML_UNKNOWN_ROOT, ParsedXml, is_cdar

SPEC = "fr-cdar"
SYNTAX = "CDAR"
RAM_NS = "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"
CONTENT_NAMESPACE = "CDAR-CONTENT-NAMESPACE"
__all__ = ["SPEC", "SYNTAX", "NS", "RAM_NS", "ROOT", "MEANING", "CONTENT_NAMESPACE", "is_cdar", "root_issue",
           "content_issue", "chain_issues"]


_NO_INVOICE = ("A status message is no invoice: the German BMF letter of 15 October 2025, which classes the defects "
               "of e-invoices, does not concern it.",
               "Eine Statusmeldung ist keine Rechnung: Das BMF-Schreiben vom 15. Oktober 2025, das Fehler von "
               "E-Rechnungen einordnet, betrifft sie nicht.")
# What a status report's worst class means for the sender and the receiver (`Report.sentences`): the rules are
# FNFE-MPE's for France's reform, not a German e-invoice's, so the BMF letter's consequences are not stated.
MEANING = {
    None: {"en": "No error: the message meets the CDAR D22B syntax and FNFE-MPE's BR-FR-CDV rules; warnings are "
                 "recommendations of the rules. " + _NO_INVOICE[0],
           "de": "Kein Fehler: Die Meldung entspricht der Syntax CDAR D22B und den Regeln BR-FR-CDV von FNFE-MPE; "
                 "Warnungen sind Empfehlungen der Regeln. " + _NO_INVOICE[1]},
    "format": {"en": "Format error: the file is no lifecycle status message in the syntax France's reform requires "
                     "(UN/CEFACT CDAR D22B); it has to be sent again as one. " + _NO_INVOICE[0],
               "de": "Formatfehler: Die Datei ist keine Statusmeldung in der Syntax, die Frankreichs Reform "
                     "vorschreibt (UN/CEFACT CDAR D22B); sie ist als solche neu zu senden. " + _NO_INVOICE[1]},
    "business-rule": {"en": "Business-rule error: the message breaks FNFE-MPE's BR-FR-CDV rules of France's reform "
                            "(see the rules listed, each naming its MDT term); it has to be corrected and sent again. "
                            + _NO_INVOICE[0],
                      "de": "Geschäftsregelfehler: Die Meldung verstößt gegen die Regeln BR-FR-CDV von FNFE-MPE für "
                            "Frankreichs Reform (siehe die genannten Regeln, jede mit ihrem MDT-Begriff); sie ist zu "
                            "berichtigen und neu zu senden. " + _NO_INVOICE[1]},
    "undetermined": {"en": "The rules could not judge the message in full (see the findings): it is not shown to meet "
                           "FNFE-MPE's BR-FR-CDV rules. " + _NO_INVOICE[0],
                     "de": "Die Regeln konnten die Meldung nicht vollständig beurteilen (siehe die Befunde): Es ist "
                           "nicht gezeigt, dass sie den Regeln BR-FR-CDV von FNFE-MPE entspricht. " + _NO_INVOICE[1]},
}


def root_issue(doc: ParsedXml) -> Issue:
    return Issue(ERROR, XML_UNKNOWN_ROOT,
                 f"Unknown document type {doc.root_name}: expected a lifecycle status message (CDV), a UN/CEFACT "
                 "CDAR D22B rsm:CrossDomainAcknowledgementAndResponse. An invoice is validated by "
                 "POST /v1/invoice/fr-ctc/validate.", doc.locate("/*[1]"))


def content_issue(doc: ParsedXml) -> Issue | None:
    """An Issue when a CDAR root holds its content in other namespaces than D22B's: no rsm child of the root, or an
    rsm part (ExchangedDocument, AcknowledgementDocument) with children but none of them ram (a `ram` prefix bound to
    a wrong URI). Read anyway, such a message came out as an empty status on the timeline and page; None otherwise
    (a stray foreign element beside ram ones is the XSD's finding, the rest is read)."""
    root = doc.tree.getroot()
    for parent, position, expected in [(root, "/*[1]", NS)] + [
            (part, f"/*[1]/*[{n}]", RAM_NS) for n, part in enumerate(root.iterchildren("*"), 1)
            if etree.QName(part).namespace == NS]:
        children = [etree.QName(child) for child in parent.iterchildren("*")]
        if children and all(child.namespace != expected for child in children):
            return Issue(ERROR, CONTENT_NAMESPACE,
                         f"The message's content is in another namespace: {children[0].localname} is in "
                         f"\"{children[0].namespace or '(none)'}\", expected \"{expected}\" (UN/CEFACT CDAR "
                         "D22B), so its status cannot be read; check the namespace declarations on the root.",
                         doc.locate(f"{position}/*[1]"))
    return None


def chain_issues(doc: ParsedXml, pack: packs.Pack, sdoc) -> list[Issue]:
    """The FNFE chain's findings on a CDAR message (`sdoc`: it as a Saxon tree): the pack's XSD and first stylesheet
    as written, then its further stylesheets (FNFE's _WARNING publication) with every finding a WARNING. The engine
    runs the optimised copies where the pack has them."""
    rules = pack.rules_for(SYNTAX)
    fatal, *warnings = rules.stylesheets
    issues = engine.run_checks(doc, rules.xsd, [pack.runnable(fatal)], sdoc=sdoc)
    for sheet in warnings:
        issues += [dataclasses.replace(i, severity=WARNING)
                   for i in engine.schematron_issues(sdoc, pack.runnable(sheet), None, doc)]
    return issues
