"""Generation's check of the Factur-X / ZUGFeRD XML it writes: the profile's rules (pipeline.check.profiles) plus the
EN 16931 or XRechnung rule pack where the profile is such an invoice, the XRechnung part judged as
pipeline.check.judging judges a received invoice naming the same id."""
from __future__ import annotations

from datetime import date

from pipeline.check import applied, claims, engine, judging, profile_copies, scenarios, xmlinput
from pipeline.check.applied import Checked, Rules
from pipeline.check.profiles import once, profile_checked, profile_rules
from pipeline.check.report import WARNING, Issue
from pipeline.invoice.specs import Profile

# The Factur-X EN 16931 Schematron checks BT-24 against its own code list, which by design does not hold
# the XRechnung identifier; for the XRECHNUNG profile BT-24 is checked by the XRechnung rules instead.
_NOT_FOR_XRECHNUNG = {"FX-SCH-A-000556"}
# Peppol rules joined the XRechnung rules with XRechnung 3.0; documents that name XRechnung 1.x/2.x are held
# to the BR-DE rules but not to rules their version did not have.
_XRECHNUNG_3_ONLY_PREFIX = "PEPPOL-EN16931-"
_XRECHNUNG_CII_SCENARIO = "EN16931 XRechnung (CII)"

def validate_profile_xml(data: bytes, profile: Profile, guideline_id: str | None = None) -> list[Issue]:
    """`validate_profile`'s findings."""
    return validate_profile(data, profile, guideline_id).issues


def validate_profile(data: bytes, profile: Profile, guideline_id: str | None = None) -> Checked:
    """XSD + Schematron of the profile. EN16931 and BASIC (EN 16931 invoices) add the EN 16931 rule pack, the same
    checks as the en16931 endpoint; XRECHNUNG adds the XRechnung rules (for XRechnung 3.x ids as
    `pipeline.check.judging` judges the invoice in a PDF, for older ids the BR-DE rules with a warning). MINIMUM and
    BASIC WL are not EN 16931 invoices, and EXTENDED goes beyond it: profile rules only. (Generation's check of
    what it writes; a received document is judged by `pipeline.check.judging`, which takes a document naming
    XRechnung to the XRechnung rules alone.)"""
    try:
        doc = xmlinput.load(data)  # safe parse: no DTD, entities or network
        tree = engine.saxon_document(doc)  # one Saxon tree for the profile rules and the EN 16931 / XRechnung packs
    except xmlinput.XmlInputError as exc:
        return Checked([exc.issue])
    if not profile.xrechnung:
        return profile_checked(doc, profile, tree)
    sheet = profile_copies.runnable(profile.schematron_path)
    issues = engine.run_checks(doc, profile.xsd_path, [sheet], sdoc=tree)
    issues = [i for i in issues if i.code not in _NOT_FOR_XRECHNUNG]
    gid = guideline_id or profile.guideline_id
    claim = claims.of_id(gid, doc.syntax)
    # the release of the XRechnung version it names (not another version's in force today: `claims.release_for`)
    pack = claims.release_for(engine.pick_pack("xrechnung", None, doc.syntax), claim, doc, date.today())
    if "xrechnung_3." in gid:
        # judged as the same invoice is in a PDF or as XML, so that the rules listed are the same: an id KoSIT's
        # scenarios do not name lists its scenario selection, an XRechnung version we lack is not judged
        xrechnung = judging.judge(doc, "zugferd", pack, tree, claim)
        return Checked(once(issues, xrechnung.issues), [*profile_rules(profile, sheet), *xrechnung.rules],
                       xrechnung.not_judged, xrechnung.scenario)
    scenario = next(s for s in scenarios.load_scenarios(pack.scenarios) if s.name == _XRECHNUNG_CII_SCENARIO)
    return Checked(once(issues, _legacy_xrechnung_issues(doc, gid, tree, pack, scenario)),
                   [*profile_rules(profile, sheet),
                    Rules(pack.spec, pack.version, applied.steps(pack.root, None, scenario.stylesheets),
                          scenario=scenario.name)])


def _legacy_xrechnung_issues(doc, guideline_id: str, tree, pack, scenario) -> list[Issue]:
    found = engine.run_checks(doc, None, scenario.stylesheets, scenario.custom_levels, sdoc=tree)
    for issue in found:
        if issue.code.startswith(_XRECHNUNG_3_ONLY_PREFIX):
            issue.severity = WARNING
    return [Issue(WARNING, "XRECHNUNG_LEGACY_VERSION",
                  f"{guideline_id!r} names an XRechnung version before 3.0; checked with the EN 16931 and BR-DE rules "
                  f"of XRechnung {pack.version}, Peppol rules (new in 3.0) reported as warnings.")] + found
