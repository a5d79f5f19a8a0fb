"""The validation engine: well-formedness -> syntax detection -> XSD -> official Schematron (compiled XSLT).

- `validate_xml(data, spec, version, request_id)` -> `Report` (service spec 2.10) for the XML endpoints and CLI.
- `run_checks(doc, xsd_path, stylesheet_paths, custom_levels)` -> issues: the reusable primitive (one XSD, then
  SVRL-producing stylesheets in order), e.g. for the Factur-X profile rules.

XRechnung packs carry KoSIT's validator configuration (`scenarios.xml`); it is honoured the way the KoSIT
validator does: the first scenario whose `match` XPath holds selects the XSD and the Schematron steps, and its
`customLevel`s override the severity of named rules (error -> ERROR; warning/information -> WARNING).
EN 16931 packs use the registry's XSD and CEN stylesheet per syntax.

Severity of Schematron findings: flag fatal/error -> ERROR, warning/information -> WARNING (pipeline.report);
warnings never make a document invalid. A dynamic error raised by an official stylesheet (e.g. XPTY0004 in the
CEN CII rules on a party with two URIIDs) is a finding about the document: RULE-ENGINE-ERROR, valid=false.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from xml.sax.saxutils import quoteattr

from lxml import etree

from pipeline import rules, saxon, xmlinput
from pipeline.errors import ApiError
from pipeline.report import ERROR, Issue, Location, Report, severity_of_flag
from pipeline.xmlinput import ParsedXml, XmlInputError

RULE_ENGINE_ERROR = "RULE-ENGINE-ERROR"
NO_SCENARIO = "XRECHNUNG-NO-SCENARIO"
SYNTAX_NOT_COVERED = "SYNTAX-NOT-COVERED"
XSD_PREFIX = "XSD-"

SVRL_NS = "http://purl.oclc.org/dsdl/svrl"
SCENARIOS_NS = "http://www.xoev.de/de/validator/framework/1/scenarios"
# Findings beyond this many per stylesheet keep their xpath but are not resolved to line/column (cost bound).
MAX_LOCATED = 1000

# Each official Schematron XSLT runs inside a small wrapper that imports it unchanged, lets it build its SVRL
# as a temporary tree (xsl:apply-imports) and returns only the findings: 4 strings per failed assert or
# successful report - id, flag, location, text. One transform per stylesheet, no SVRL document handed to
# Python, no serialise/re-parse of the SVRL (which the CEN XSLTs fill with fired-rule elements).
_RULES_WRAPPER = """<xsl:stylesheet version="3.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:svrl="{svrl}">
  <xsl:import href="{href}"/>
  <xsl:template match="/" priority="1000">
    <xsl:variable name="svrl"><xsl:apply-imports/></xsl:variable>
    <xsl:sequence select="for $a in ($svrl//svrl:failed-assert | $svrl//svrl:successful-report) return
        (string($a/@id), string($a/@flag), string($a/@location), normalize-space(string($a/svrl:text)))"/>
  </xsl:template>
</xsl:stylesheet>"""

# ---------------------------------------------------------------- scenarios (KoSIT validator configuration)

@dataclass(frozen=True)
class Scenario:
    name: str
    namespaces: tuple[tuple[str, str], ...]
    match: str
    xsd: Path
    stylesheets: tuple[Path, ...]
    custom_levels: dict[str, str] = field(default_factory=dict, hash=False, compare=False)


@lru_cache(maxsize=8)
def load_scenarios(path: Path) -> tuple[Scenario, ...]:
    """Scenarios of a KoSIT `scenarios.xml`, in document order (first match wins); resources resolve against
    the file's folder."""
    base = path.parent
    root = etree.parse(str(path), etree.XMLParser(resolve_entities=False, no_network=True)).getroot()
    ns = {"s": SCENARIOS_NS}
    out = []
    for sc in root.findall("s:scenario", ns):
        out.append(Scenario(
            name=sc.findtext("s:name", namespaces=ns).strip(),
            namespaces=tuple((n.get("prefix"), n.text.strip()) for n in sc.findall("s:namespace", ns)),
            match=sc.findtext("s:match", namespaces=ns).strip(),
            xsd=base / sc.findtext("s:validateWithXmlSchema/s:resource/s:location", namespaces=ns).strip(),
            stylesheets=tuple(base / loc.text.strip()
                              for loc in sc.findall("s:validateWithSchematron/s:resource/s:location", ns)),
            custom_levels={c.text.strip(): c.get("level") for c in sc.findall("s:createReport/s:customLevel", ns)},
        ))
    return tuple(out)


def _chooser_xslt(scenarios: tuple[Scenario, ...]) -> str:
    """One stylesheet that returns the index of the first scenario whose `match` holds (-1: none); each test
    carries its scenario's namespace declarations."""
    whens = "".join(
        "<xsl:when test={} {}>{}</xsl:when>".format(
            quoteattr(sc.match), " ".join(f"xmlns:{p}={quoteattr(u)}" for p, u in sc.namespaces), i)
        for i, sc in enumerate(scenarios))
    return ('<xsl:stylesheet version="3.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">'
            '<xsl:output method="text"/><xsl:template match="/"><xsl:choose>'
            f"{whens}<xsl:otherwise>-1</xsl:otherwise></xsl:choose></xsl:template></xsl:stylesheet>")


def select_scenario(scenarios: tuple[Scenario, ...], sdoc) -> Scenario | None:
    """The first scenario whose match expression is true for the (Saxon) document, as the KoSIT validator
    picks it; the match expressions are compiled once per process into one chooser stylesheet."""
    chooser = saxon.compile_generated(("chooser", id(scenarios)), lambda: _chooser_xslt(scenarios), keep=scenarios)
    index = int(chooser.transform_to_string(xdm_node=sdoc).strip())
    return scenarios[index] if index >= 0 else None


# ---------------------------------------------------------------- checks

_schemas: dict[str, etree.XMLSchema] = {}
_schema_lock = threading.Lock()


def load_schema(path: Path) -> etree.XMLSchema:
    """An XSD, loaded once per process (local includes/imports only)."""
    schema = _schemas.get(str(path))
    if schema is None:
        key = str(Path(path).resolve())
        with _schema_lock:
            schema = _schemas.get(key)
            if schema is None:
                parser = etree.XMLParser(resolve_entities=False, no_network=True)
                schema = _schemas[key] = _schemas[str(path)] = etree.XMLSchema(etree.parse(key, parser))
    return schema


def xsd_issues(doc: ParsedXml, xsd_path: Path) -> list[Issue]:
    """XSD findings; each located by its path (line and column of the element's start tag) when the path
    resolves, else by the line libxml2 gives."""
    schema = load_schema(xsd_path)
    if schema.validate(doc.tree):
        return []
    issues = []
    for n, e in enumerate(schema.error_log):
        path = getattr(e, "path", None)
        where = doc.locate(path) if path and n < MAX_LOCATED else Location(xpath=path)
        if where.line is None:
            where = Location(xpath=path, line=e.line or None, column=e.column or None)
        code = XSD_PREFIX + e.type_name.replace("SCHEMAV_", "").replace("_", "-")
        issues.append(Issue(ERROR, code, e.message, where))
    return issues


def rules_executable(stylesheet: Path):
    """The official stylesheet wrapped to return its findings (see _RULES_WRAPPER); compiled once per process."""
    return saxon.compile_generated(("rules", str(stylesheet)),
                         lambda: _RULES_WRAPPER.format(svrl=SVRL_NS, href=Path(stylesheet).resolve().as_uri()))


def schematron_issues(sdoc, stylesheet: Path, custom_levels: dict[str, str] | None = None,
                      doc: ParsedXml | None = None) -> list[Issue]:
    """Run one official compiled Schematron stylesheet (SVRL output) on the Saxon document and read its failed
    asserts and successful reports; with `doc` (the same document parsed by xmlinput) findings get line/column."""
    exe = rules_executable(stylesheet)
    try:
        found = exe.transform_to_value(xdm_node=sdoc)
    except Exception as exc:  # saxonche raises PySaxonApiError for XSLT dynamic errors
        message = " ".join(str(exc).split()) or type(exc).__name__
        return [Issue(ERROR, RULE_ENGINE_ERROR,
                      f"The official rules ({Path(stylesheet).name}) stopped with a dynamic error on this document: "
                      f"{message}", None)]
    if found is None:
        return []
    values = [found.item_at(i).string_value for i in range(found.size)]
    levels = custom_levels or {}
    issues = []
    for n, i in enumerate(range(0, len(values), 4)):
        rule_id, flag, location, text = values[i:i + 4]
        severity = severity_of_flag(levels.get(rule_id, flag or None))
        where = doc.locate(location) if doc is not None and n < MAX_LOCATED else Location(xpath=location or None)
        issues.append(Issue(severity, rule_id or "SCHEMATRON", text, where))
    return issues


def saxon_document(doc: ParsedXml):
    """The document as a Saxon tree. XmlInputError (XML-MALFORMED) when Saxon's parser refuses what lxml read, e.g.
    more than 100 levels of nesting (its JAXP limit; lxml allows more)."""
    try:
        return saxon.parse(doc.text)
    except Exception as exc:  # saxonche raises PySaxonApiError
        message = " ".join(str(exc).split())
        raise XmlInputError(Issue(ERROR, xmlinput.XML_MALFORMED, f"The XML could not be read: {message}",
                                  None)) from None


def run_checks(doc: ParsedXml, xsd_path: Path | None, stylesheet_paths, custom_levels: dict[str, str] | None = None,
               sdoc=None) -> list[Issue]:
    """XSD (if given), then each Schematron stylesheet in order; `custom_levels` maps rule id -> Schematron
    level (error/warning/information) overriding the stylesheet's flag. Schematron runs even when the XSD
    fails, so the report lists every finding. `sdoc` = the document already parsed by Saxon (parsed here
    if omitted)."""
    issues = xsd_issues(doc, Path(xsd_path)) if xsd_path else []
    if sdoc is None and stylesheet_paths:
        try:
            sdoc = saxon_document(doc)
        except XmlInputError as exc:
            return issues + [exc.issue]
    for sheet in stylesheet_paths:
        issues.extend(schematron_issues(sdoc, Path(sheet), custom_levels, doc))
    return issues


# ---------------------------------------------------------------- the engine

@dataclass
class Outcome:
    report: Report
    scenario: str | None = None  # XRechnung: name of the KoSIT scenario applied


def _unsupported_version(spec: str, version: str, why: str) -> ApiError:
    known = rules.known_versions(spec)
    return ApiError(400, "UNSUPPORTED_VERSION",
                    f"{spec} validation package version {version!r} {why}; supported: {', '.join(known) or 'none'}")


def _pack(spec: str, version: str | None, syntax: str | None) -> rules.Pack:
    try:
        if version is not None:
            return rules.get_pack(spec, version)
        return rules.latest_active(spec, syntax)
    except rules.PackNotInstalled as exc:
        if version is not None:
            raise _unsupported_version(spec, version, "is not available on this server") from exc
        raise ApiError(500, "RULES_NOT_INSTALLED", f"No {spec} validation package is installed: {exc}") from exc
    except rules.RulesError as exc:
        raise ApiError(500, "RULES_UNAVAILABLE", str(exc)) from exc


def validate(data: bytes, spec: str = "xrechnung", version: str | None = None,
             request_id: str | None = None, tree=None) -> Outcome:
    """`validate_xml` plus the name of the XRechnung scenario applied (for the CLI and the corpus tests).
    `tree` = the same document as a Saxon tree when the caller already has one (a transform's result)."""
    if spec not in rules.SPECS:
        raise ApiError(400, "UNSUPPORTED_SPEC", f"unknown specification {spec!r}; supported: {', '.join(rules.SPECS)}")
    if version is not None:
        if not isinstance(version, str) or version not in rules.known_versions(spec):
            raise _unsupported_version(spec, str(version), "is not supported")
    try:
        doc = xmlinput.load(data)
    except XmlInputError as exc:
        return Outcome(Report(_pack(spec, version, None).version, None, [exc.issue], request_id))
    if doc.syntax is None:
        return Outcome(Report(_pack(spec, version, None).version, None, [xmlinput.unknown_root_issue(doc)],
                              request_id))
    pack = _pack(spec, version, doc.syntax)
    report = Report(pack.version, doc.report_syntax, [], request_id)
    try:
        sdoc = tree if tree is not None else saxon_document(doc)
    except XmlInputError as exc:  # lxml accepted it but Saxon does not: report, do not crash
        report.issues.append(exc.issue)
        return Outcome(report)
    if pack.scenarios is not None:
        scenario = select_scenario(load_scenarios(pack.scenarios), sdoc)
        if scenario is None:
            report.issues.append(Issue(ERROR, NO_SCENARIO,
                                       "The document matches no scenario of the XRechnung validator configuration "
                                       f"{pack.version}: its specification identifier (CII GuidelineSpecified"
                                       "DocumentContextParameter/ID, UBL CustomizationID) is not one of XRechnung "
                                       "3.0 (standard, extension, CVD) or EN 16931.",
                                       doc.locate("/*[1]")))
            return Outcome(report)
        report.issues = run_checks(doc, scenario.xsd, scenario.stylesheets, scenario.custom_levels, sdoc=sdoc)
        return Outcome(report, scenario.name)
    if doc.syntax not in pack.syntaxes:
        report.issues.append(Issue(ERROR, SYNTAX_NOT_COVERED,
                                   f"{spec} {pack.version} has no rules for {doc.syntax} documents.", None))
        return Outcome(report)
    entry = pack.rules_for(doc.syntax)
    report.issues = run_checks(doc, entry.xsd, entry.stylesheets, sdoc=sdoc)
    return Outcome(report)


def validate_xml(data: bytes, spec: str = "xrechnung", version: str | None = None,
                 request_id: str | None = None, tree=None) -> Report:
    """Validate an XML e-invoice on the official rules of `spec` (xrechnung | en16931); `version=None` = the
    latest active pack for the detected syntax; `tree` = the document already parsed by Saxon, if at hand.
    Raises ApiError 400 for an unsupported spec/version."""
    return validate(data, spec, version, request_id, tree).report


def validate_pdf(data: bytes, request_id: str | None = None) -> Report:
    """A ZUGFeRD / Factur-X PDF -> report (service spec 2.10): PDF/A-3, XMP and the embedded XML against the
    profile its guideline id names (`pipeline.pdfcheck.inspect`). Not a PDF -> ApiError 400."""
    from pipeline import pdfcheck  # pikepdf only when a PDF is checked
    from pipeline.facturx import RULES_VERSION

    try:
        result = pdfcheck.inspect(data)
    except pdfcheck.NotAPdf as exc:
        raise pdfcheck.not_a_pdf(exc) from exc
    version = RULES_VERSION + (f" {result.profile.name}" if result.profile else "")
    return Report(version, "CII" if result.xml is not None else None, result.issues, request_id)


def warm_up(specs=rules.SPECS) -> int:
    """Compile every installed active pack's stylesheets and load its schemas in this process (e.g. in a
    worker after fork) so the first request does not pay for it. Returns the number of stylesheets."""
    sheets = set()
    for pack in rules.list_installed():
        if pack.spec in specs and pack.status == rules.ACTIVE:
            for entry in pack.syntaxes.values():
                load_schema(entry.xsd)
                sheets.update(entry.stylesheets)
            if pack.scenarios is not None:
                scenarios = load_scenarios(pack.scenarios)
                saxon.compile_generated(("chooser", id(scenarios)), lambda: _chooser_xslt(scenarios), keep=scenarios)
    for sheet in sorted(sheets):
        rules_executable(sheet)
    return len(sheets)


warm = warm_up  # the name the serve command's post-fork hook looks for
