"""KoSIT's validator configuration (`scenarios.xml` of an XRechnung pack), honoured the way the KoSIT validator
does: the first scenario whose `match` XPath holds selects the XSD and the Schematron steps, and its `customLevel`s
override the severity of named rules (error -> ERROR; warning/information -> WARNING)."""
from __future__ import annotations

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


def select_scenario(scenarios: tuple[Scenario, ...], sdoc) -> Scenario | None:
    """The first scenario whose match expression is true for the (Saxon) document, as the KoSIT validator
    picks it; the match expressions are compiled once per process into one chooser stylesheet."""
    chooser = saxon.compile_generated(("chooser", id(scenarios)), lambda: _chooser_xslt(scenarios), keep=scenarios)
    index = int(chooser.transform_to_string(xdm_node=sdoc).strip())
    return scenarios[index] if index >= 0 else None




def warm_up(scenarios: tuple[Scenario, ...]) -> None:
    """Compile the chooser of these scenarios in this process."""
    saxon.compile_generated(("chooser", id(scenarios)), lambda: _chooser_xslt(scenarios), keep=scenarios)
