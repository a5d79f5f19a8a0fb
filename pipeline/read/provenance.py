"""Nothing is dropped silently: the source nodes that no canonical element was read from.

The reading stylesheets name, on every canonical element that carries a value, the source node(s) it came from
(`s:src`, XPath 3.1 `path()`: `/Q{ns}local[n]/.../@name`; or, cheaper for the stylesheet, an id per node that `split`
turns into that path()). `split` takes those names off the canonical document;
`unmapped` lists every source element with text and every attribute whose path no element named, with a readable
XPath (the document's own prefixes), its line and column, its value, and the business term the binding gives that
place where it has one (a term in a place the model cannot carry, e.g. a second buyer identifier).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from lxml import etree

from pipeline.check.xmlinput import ParsedXml
from pipeline.invoice.terms import TERMS
from pipeline.read.canonical import SOURCE_NS

_SRC = f"{{{SOURCE_NS}}}src"
_IDS = f"{{{SOURCE_NS}}}ids"  # the source's element ids in document order, with the stylesheets' $src = 'id'
PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)
# Attributes that say how the document is written, not what it says.
_FORMAL = {"{http://www.w3.org/2001/XMLSchema-instance}schemaLocation"}
MAX_UNMAPPED = 1000  # entries listed; a document with more is reported as truncated


_PREDICATE = re.compile(r"\[[^\[\]]*\]")


def _local_steps(xpath: str) -> tuple[str, ...]:
    """The steps of a path without prefixes, predicates and parentheses: `(/rsm:A/ram:B)[1]/@c` -> ('A', 'B', '@c')."""
    previous = None
    while previous != xpath:
        previous, xpath = xpath, _PREDICATE.sub("", xpath)
    return tuple(step.split(":")[-1] if not step.startswith("@") else "@" + step[1:].split(":")[-1]
                 for step in xpath.replace("(", "").replace(")", "").strip().strip("/").split("/"))


@lru_cache(maxsize=1)
def _terms_by_place() -> dict[tuple[str, ...], str]:
    """The business-term table's CII and UBL bindings by their steps (a CreditNote reads like an Invoice)."""
    places: dict[tuple[str, ...], str] = {}
    for term in TERMS:
        for xpath in filter(None, (term.cii, term.ubl)):
            for alternative in xpath.split("|"):
                places.setdefault(_local_steps(alternative), f"{term.bt} {term.name}")
    return places


def business_term_of(xpath: str) -> str | None:
    """"BT-n name" of the binding a source path is in, if any."""
    steps = _local_steps(xpath)
    if steps and steps[0] == "CreditNote":
        steps = ("Invoice",) + tuple("InvoiceLine" if s == "CreditNoteLine" else
                                     "InvoicedQuantity" if s == "CreditedQuantity" else s for s in steps[1:])
    return _terms_by_place().get(steps)


@dataclass
class Split:
    """The canonical document read, without provenance, and what the provenance said."""
    canonical: bytes                        # serialised
    root: etree._Element                    # the same, parsed (the JSON stage reads it)
    used: set[str]                          # every source path some element was read from
    leaves: dict[str, tuple[str, str]]      # leaf path (`invoiceLine[2]/netAmount[1]`) -> (value, its s:src)
    source_paths: list[str] | None = None   # `source_paths` of the source, when split worked them out


def leaves(root) -> dict[str, etree._Element]:
    """Leaf elements of a canonical document by their path with positions among same-named siblings."""
    out: dict[str, etree._Element] = {}

    def visit(element, path: str) -> None:
        seen: dict[str, int] = {}
        for child in element:
            tag = child.tag
            if isinstance(tag, str):  # (comments and processing instructions are no values)
                n = seen[tag] = seen.get(tag, 0) + 1
                visit(child, f"{path}/{tag.rpartition('}')[2]}[{n}]")
        if not seen:
            out[path] = element

    visit(root, "")
    return out


def source_paths(root) -> list[str]:
    """XPath 3.1 `path()` of every element of a source tree, in document order."""
    out: list[str] = []

    def visit(element, path: str) -> None:
        out.append(path)
        seen: dict[str, int] = {}
        for child in element:
            tag = child.tag
            if isinstance(tag, str):
                n = seen[tag] = seen.get(tag, 0) + 1
                visit(child, f"{path}/Q{tag}[{n}]" if tag[0] == "{" else f"{path}/Q{{}}{tag}[{n}]")

    tag = root.tag
    visit(root, f"/Q{tag}[1]" if tag[0] == "{" else f"/Q{{}}{tag}[1]")
    return out




def split(traced: bytes, source=None) -> Split:
    """Take the provenance off the canonical document the reading stylesheets wrote. `source`: the root of the
    document read (lxml), needed when they named its nodes by id (`$src = 'id'`): the ids become path()s here."""
    root = etree.fromstring(traced, PARSER)
    ids = root.attrib.pop(_IDS, None)
    paths = None
    if ids is None:
        def named(src: str) -> str:
            return src
    else:
        if source is None:
            raise ValueError("the canonical document names its sources by id: split needs the source tree")
        listed, paths = ids.split(), source_paths(source)
        if len(listed) != len(paths):  # not the document that was read: the ids would name the wrong nodes
            raise ValueError(f"s:ids lists {len(listed)} elements, the source has {len(paths)}")
        by_id = dict(zip(listed, paths))

        def token(t: str) -> str:  # 'd1e42' / 'd1e42/@schemeID' -> path(); a path() as it is
            head, slash, rest = t.partition("/")
            if not head or head not in by_id:  # (a node of no source element, as path() would name none either)
                return t
            return by_id[head] + slash + rest

        def named(src: str) -> str:
            return " ".join(map(token, src.split()))
    found: dict[str, tuple[str, str]] = {}
    used: set[str] = set()

    def visit(element, path: str) -> None:  # one walk: s:src off every element, the leaves as `leaves` has them
        src = element.attrib.pop(_SRC, None)
        if src:
            src = named(src)
            used.update(src.split())
        seen: dict[str, int] = {}
        for child in element:
            tag = child.tag
            if isinstance(tag, str):
                n = seen[tag] = seen.get(tag, 0) + 1
                visit(child, f"{path}/{tag.rpartition('}')[2]}[{n}]")
        if not seen:
            found[path] = ((element.text or "").strip(), src or "")

    visit(root, "")
    etree.cleanup_namespaces(root)
    return Split(etree.tostring(root, xml_declaration=True, encoding="UTF-8"), root, used, found, paths)


def _step(element, index: int) -> tuple[str, str]:
    """(path() step, readable step) of an element that is the index-th of its name among its siblings."""
    q = etree.QName(element)
    readable = f"{element.prefix}:{q.localname}" if element.prefix else q.localname
    return f"Q{{{q.namespace or ''}}}{q.localname}[{index}]", readable


def path_of(element, readable: bool = False) -> str:
    """XPath 3.1 `path()` of an element of the source; `readable`: with the document's own prefixes
    (`/rsm:CrossIndustryInvoice[1]/...`)."""
    steps = []
    while element is not None:
        index = 1 + sum(1 for s in element.itersiblings(preceding=True) if s.tag == element.tag)
        path_step, shown = _step(element, index)
        steps.append(f"{shown}[{index}]" if readable else path_step)
        element = element.getparent()
    return "/" + "/".join(reversed(steps))


def _attribute_step(name: str, element) -> tuple[str, str]:
    q = etree.QName(name)
    if not q.namespace:
        return f"@{q.localname}", f"@{q.localname}"
    prefix = next((p for p, ns in (element.nsmap or {}).items() if ns == q.namespace and p), None)
    return f"@Q{{{q.namespace}}}{q.localname}", f"@{prefix}:{q.localname}" if prefix else f"@{q.localname}"


def _readable(element) -> str:
    """The readable XPath of a source element: the document's prefixes, a position only where the parent has
    several children of its name (`/rsm:CrossIndustryInvoice/.../ram:IncludedNote[2]/ram:Content`)."""
    steps = []
    while element is not None:
        parent = element.getparent()
        shown = f"{element.prefix}:{etree.QName(element).localname}" if element.prefix else etree.QName(element).localname
        if parent is not None:
            same = [c for c in parent if c.tag == element.tag]
            if len(same) > 1:
                shown += f"[{same.index(element) + 1}]"
        steps.append(shown)
        element = parent
    return "/" + "/".join(reversed(steps))


def unmapped(doc: ParsedXml, used: set[str], paths: list[str] | None = None) -> tuple[list[dict], bool]:
    """Every source leaf (an element with text and no child elements, or an attribute) that `used` does not name
    -> ([{"xpath", "line", "column", "value"}], truncated). `paths`: `source_paths` of the document, when the
    caller has them. Readable paths and lines are worked out only for what is listed (most leaves are used)."""
    found: list[dict] = []
    root = doc.tree.getroot()
    for element, path in zip(root.iter(etree.Element), paths if paths is not None else source_paths(root)):
        line, column = None, None
        for name, value in element.attrib.items():
            if name in _FORMAL or (f"{path}/@Q{name}" if name[0] == "{" else f"{path}/@{name}") in used:
                continue  # ('{ns}local' is the path() step '@Q{ns}local')
            if line is None:
                line, column = doc.start_of(element)
            readable = f"{_readable(element)}/{_attribute_step(name, element)[1]}"
            found.append({"xpath": readable, "line": line, "column": column, "value": value,
                          "businessTerm": business_term_of(readable)})
        if len(element) and any(isinstance(c.tag, str) for c in element):
            continue  # not a leaf (comments and processing instructions are no children here)
        if (element.text or "").strip() and path not in used:
            if line is None:
                line, column = doc.start_of(element)
            readable = _readable(element)
            found.append({"xpath": readable, "line": line, "column": column, "value": element.text.strip(),
                          "businessTerm": business_term_of(readable)})
    return found[:MAX_UNMAPPED], len(found) > MAX_UNMAPPED
