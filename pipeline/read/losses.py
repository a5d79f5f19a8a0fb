"""What the JSON invoice cannot give back: the values of the canonical document as read that the canonical document
written again from the parsed invoice does not reproduce (a computed-only value that is not what generation
derives, e.g. a BT-147 price discount other than gross - net; a value the model normalises). Their source nodes
count as unmapped: a value is carried only if writing the invoice again keeps it.
"""
from __future__ import annotations

from decimal import Decimal, InvalidOperation

from lxml import etree

from pipeline import budget
from pipeline.read.provenance import PARSER, leaves


def _same(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return Decimal(a) == Decimal(b)
    except InvalidOperation:
        return False


def lost_sources(read: dict[str, tuple[str, str]], written: bytes) -> set[str]:
    """Source paths of every value of `read` (the leaves of the canonical document read, with their s:src) that
    `written` (the canonical document generation makes from the parsed invoice) lacks or holds differently."""
    budget.check()
    again = {path: (el.text or "").strip() for path, el in leaves(etree.fromstring(written, PARSER)).items()}
    lost: set[str] = set()
    for n, (path, (value, src)) in enumerate(read.items()):
        if n % 1000 == 999:
            budget.check()
        if value and not _same(value, again.get(path, "")):
            lost.update(src.split())
    return lost
