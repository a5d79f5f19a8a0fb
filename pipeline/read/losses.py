"""What the JSON invoice cannot give back: the values of the canonical document as read that the canonical document
written again from the parsed invoice does not reproduce (a computed-only value that is not what generation
derives, e.g. a BT-147 price discount other than gross - net; a value the model normalises). Their source nodes
count as unmapped: a value is carried only if writing the invoice again keeps it.
"""
from __future__ import annotations

from decimal import Decimal, InvalidOperation

from lxml import etree

from pipeline.read.canonical import SOURCE_NS

_SRC = f"{{{SOURCE_NS}}}src"
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)


def _leaves(root) -> dict[str, etree._Element]:
    """Leaf elements by their path with positions among same-named siblings (`invoiceLine[2]/netAmount[1]`)."""
    out: dict[str, etree._Element] = {}

    def visit(element, path: str) -> None:
        children = [c for c in element if isinstance(c.tag, str)]
        if not children:
            out[path] = element
            return
        seen: dict[str, int] = {}
        for child in children:
            seen[child.tag] = seen.get(child.tag, 0) + 1
            visit(child, f"{path}/{etree.QName(child).localname}[{seen[child.tag]}]")

    visit(root, "")
    return out


def _same(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return Decimal(a) == Decimal(b)
    except InvalidOperation:
        return False


def lost_sources(read: bytes, written: bytes) -> set[str]:
    """Source paths (`s:src` of `read`, the canonical document with provenance) of every value that `written`
    (the canonical document generation makes from the parsed invoice) lacks or holds differently."""
    again = {path: (el.text or "").strip() for path, el in _leaves(etree.fromstring(written, _PARSER)).items()}
    lost: set[str] = set()
    for path, element in _leaves(etree.fromstring(read, _PARSER)).items():
        value = (element.text or "").strip()
        if value and not _same(value, again.get(path, "")):
            lost.update((element.get(_SRC) or "").split())
    return lost
