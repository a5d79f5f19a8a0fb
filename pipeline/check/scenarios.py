"""KoSIT's validator configuration (`scenarios.xml` of an XRechnung pack), honoured the way the KoSIT validator
does: the first scenario whose `match` XPath holds selects the XSD and the Schematron steps, and its `customLevel`s
override the severity of named rules (error -> ERROR; warning/information -> WARNING)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from xml.sax.saxutils import quoteattr

from lxml import etree

from pipeline import saxon

SCENARIOS_NS = "http://www.xoev.de/de/validator/framework/1/scenarios"


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


def select_scenario(scenarios: tuple[Scenario, ...], sdoc, tree=None) -> Scenario | None:
    """The first scenario whose match expression is true for the (Saxon) document, as the KoSIT validator
    picks it; the match expressions are compiled once per process into one chooser stylesheet. With `tree` (the same
    document as xmlinput parsed it) and every expression of the form `_tests` reads, lxml answers on that tree."""
    tests = _tests(scenarios) if tree is not None else None
    if tests is not None:
        root = tree.getroot().tag
        return next((sc for sc, (tag, test) in zip(scenarios, tests) if tag == root and test(tree)), None)
    chooser = saxon.compile_generated(("chooser", id(scenarios)), lambda: _chooser_xslt(scenarios), keep=scenarios)
    index = int(chooser.transform_to_string(xdm_node=sdoc).strip())
    return scenarios[index] if index >= 0 else None


# KoSIT's match expressions as its configurations write them: `exists(/r:Root[...]/...)`, steps by prefixed name, each
# with at most one predicate comparing a relative path (or `.`, or the path's `text()`) with a string literal. On these
# XPath 1.0 and 2.0 mean the same: a node-set's existence, a general comparison of string values with a string
# (codepoints, no collation, no number), so libxml2 on the lxml tree answers as Saxon on its own. The lxml tree is the
# document as sent and Saxon's the rules' view (an attachment's base64 stood in): names ending in BinaryObject are
# not read here. Saxon: 0.02 ms, 0.06-0.08 after the rules' work left the caches; lxml 0.002-0.013 / 0.03-0.06
# (bench/README.md). A literal with a doubled quote (XPath 2.0's escape) does not match: Saxon reads it.
_NAME = r"[A-Za-z_][\w.-]*:[A-Za-z_][\w.-]*"
_STRING = "'[^']*'|\"[^\"]*\""
_PREDICATE = rf"\[\s*(?:\.|{_NAME}(?:/{_NAME})*(?:/text\(\))?)\s*=\s*(?:{_STRING})\s*\]"
_MATCH = re.compile(rf"\s*exists\(\s*(?P<path>(?:/{_NAME}(?:\s*{_PREDICATE})?)+)\s*\)\s*")
_ROOT = re.compile(rf"/(?P<prefix>[^:/\[\s]+):(?P<local>[^/\[\s]+)")
_DERIVED: dict[tuple[str, int], tuple] = {}  # (what, id(scenarios)) -> (the scenarios, held so that the id is not
#                                                reused; what was derived from them)


def per_reading(scenarios: tuple[Scenario, ...], what: str, make):
    """`make(scenarios)`, made once per reading of a scenarios file (`load_scenarios` gives the same tuple until the
    file is read again): what a validation would otherwise derive from the same expressions every time."""
    key = (what, id(scenarios))
    hit = _DERIVED.get(key)
    if hit is None or hit[0] is not scenarios:
        if len(_DERIVED) > 32:  # scenario files read again many times over: the old readings go
            _DERIVED.clear()
        hit = _DERIVED[key] = (scenarios, make(scenarios))
    return hit[1]


def _tests(scenarios: tuple[Scenario, ...]) -> list[tuple[str, etree.XPath]] | None:
    """(the root element's Clark name, the compiled XPath 1.0 test) of each scenario, or None when an expression is
    not of the form read here (Saxon decides then); made once per scenarios read."""
    return per_reading(scenarios, "lxml tests", _make_tests)


def _make_tests(scenarios: tuple[Scenario, ...]) -> list[tuple[str, etree.XPath]] | None:
    tests = []
    for sc in scenarios:
        matched, namespaces = _MATCH.fullmatch(sc.match), dict(sc.namespaces)
        root = _ROOT.match(matched.group("path")) if matched else None
        path = re.sub(_STRING, "''", matched.group("path")) if matched else ""  # (a literal's colons)
        prefixes = set(re.findall(r"([A-Za-z_][\w.-]*):", path))
        if root is None or "BinaryObject" in sc.match or not prefixes <= namespaces.keys():
            return None
        try:
            test = etree.XPath(f"boolean({matched.group('path')})", namespaces=namespaces)
        except etree.XPathError:
            return None
        tests.append((f"{{{namespaces[root.group('prefix')]}}}{root.group('local')}", test))
    return tests


def warm_up(scenarios: tuple[Scenario, ...]) -> None:
    """Compile the chooser of these scenarios in this process, and their tests on the lxml tree."""
    saxon.compile_generated(("chooser", id(scenarios)), lambda: _chooser_xslt(scenarios), keep=scenarios)
    _tests(scenarios)
