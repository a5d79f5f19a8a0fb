"""Stage: France's lifecycle status message (CDV, CDAR D22B, read safely by `pipeline.check.xmlinput`) -> canonical
status XML (xslt/read-cdar.xsl) -> the status JSON the generation endpoint takes, typed by the same model
(`pipeline.invoice.cdar.StatusRequest`): numbers as Decimal exactly as written, booleans, sequence numbers as
integers, everything else as text.

What the message says that the JSON does not carry (a second invoice of a message about several, a party's second
identifier, a value in another form) is found by writing the JSON again (xslt/cdar.xsl) and comparing every value of
the source with what comes back: `unmapped` lists the source's values that do not, by path.
"""
from __future__ import annotations

from collections import Counter
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from lxml import etree
from pydantic import BaseModel

from pipeline import xslt
from pipeline.check.xmlinput import ParsedXml
from pipeline.errors import TransformError
from pipeline.invoice.cdar import StatusRequest
from pipeline.invoice.model import field_kind
from pipeline.settings import XSLT_DIR
from pipeline.write import cdar as writing

READ_CDAR_XSL = XSLT_DIR / "read-cdar.xsl"
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)


def to_canonical(data: bytes, reference: int = 1) -> bytes:
    """The message (`data`, already read safely) as canonical status XML; `reference`: which invoice of a message
    about several (MDT-74 true) to read, from 1. TransformError when the stylesheet fails."""
    return xslt.run_stylesheet(READ_CDAR_XSL, data, {"reference": str(reference)})


def status_jsons(data: bytes, references: range) -> list[dict]:
    """The status JSON of each of the invoices numbered `references` (from 1) of a message read safely: one run of
    the stylesheet for all (one per invoice walked the invoices before it: 3,001 took seconds). TransformError
    when the stylesheet fails."""
    if len(references) == 1:
        return [status_json(to_canonical(data, references[0]))]
    out = xslt.run_stylesheet(READ_CDAR_XSL, data, {"reference": str(references[0]), "last": str(references[-1])})
    return [_object(status, StatusRequest) for status in etree.fromstring(out, _PARSER)]


def _value(typ, text: str):
    if typ is Decimal:
        try:
            return Decimal(text)
        except InvalidOperation:
            return text   # the model refuses it with its field path
    if typ is bool:
        return {"true": True, "false": False}.get(text, text)
    if typ is int:
        return int(text) if text.isdigit() else text
    return text


@lru_cache(maxsize=None)
def _fields(model: type[BaseModel]) -> dict:
    found = {}
    for name, field in model.model_fields.items():
        kind, typ = field_kind(field.annotation)
        found[name] = (kind, typ, isinstance(typ, type) and issubclass(typ, BaseModel))
    return found


def _object(element, model: type[BaseModel]) -> dict:
    out: dict = {}
    fields = _fields(model)
    for child in element.iterchildren(etree.Element):
        name = etree.QName(child).localname
        kind, typ, is_model = fields[name]
        if kind == "list":
            out[name] = [_object(item, typ) if is_model else _value(typ, item.text or "") for item in child]
        else:
            out[name] = _object(child, typ) if is_model else _value(typ, child.text or "")
    return out


def status_json(canonical: bytes) -> dict:
    """Canonical status XML -> the status JSON ({message, status, invoice}), typed by the model."""
    return _object(etree.fromstring(canonical, _PARSER), StatusRequest)


def _values(root) -> Counter:
    """Every value of a CDAR message: (path with the position of every step, trimmed text) of each element holding
    text and of each attribute."""
    found: Counter = Counter()
    paths = {root: ""}
    for element in root.iter(etree.Element):
        seen: Counter = Counter()
        for child in element.iterchildren(etree.Element):
            seen[child.tag] += 1
            paths[child] = f"{paths[element]}/{_prefixed(child.tag)}[{seen[child.tag]}]"
        path = paths[element]
        if len(element) == 0 and (element.text or "").strip():
            found[(path, element.text.strip())] += 1
        for name, value in element.attrib.items():
            found[(f"{path}/@{etree.QName(name).localname}", value.strip())] += 1
    return found


def unmapped(doc: ParsedXml, data: dict) -> list[dict]:
    """The source's values that writing `data` (as read) again does not reproduce: [{"xpath", "value"}], in the
    source's order. The values are compared with surrounding space removed, as the reading trims codes."""
    try:
        written = writing.to_cdar(writing.to_canonical(data)).xml
    except TransformError:
        written = b""
    again = _values(etree.fromstring(written, _PARSER)) if written else Counter()
    lost = _values(doc.tree.getroot()) - again
    out = []
    for (path, value), count in lost.items():
        out += [{"xpath": _readable(path), "value": value}] * count
    return out


_PREFIXES = {"urn:un:unece:uncefact:data:standard:CrossDomainAcknowledgementAndResponse:100": "rsm",
             "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100": "ram",
             "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100": "udt",
             "urn:un:unece:uncefact:data:standard:QualifiedDataType:100": "qdt"}


def _prefixed(tag: str) -> str:
    name = etree.QName(tag)
    prefix = _PREFIXES.get(name.namespace or "")
    return f"{prefix}:{name.localname}" if prefix else f"Q{{{name.namespace or ''}}}{name.localname}"


def _readable(path: str) -> str:
    """A value's path from the root with the CDAR prefixes, positions shown where a step repeats."""
    return "/rsm:CrossDomainAcknowledgementAndResponse" + path.replace("[1]", "")


_REFERENCES = etree.XPath("count(/*/rsm:AcknowledgementDocument[1]/ram:ReferenceReferencedDocument)",
                          namespaces={prefix: ns for ns, prefix in _PREFIXES.items()})


def references(doc: ParsedXml) -> int:
    """How many invoices the message reports a status of (its ReferenceReferencedDocuments; several: MDT-74 true)."""
    return int(_REFERENCES(doc.tree))


_NUMBERS = etree.XPath("/*/rsm:AcknowledgementDocument[1]/ram:ReferenceReferencedDocument/ram:IssuerAssignedID[1]",
                       namespaces={prefix: ns for ns, prefix in _PREFIXES.items()})


def invoice_numbers(doc: ParsedXml) -> int:
    """How many different invoice numbers (MDT-74 true: several) the message reports a status of, counted on the
    message alone: a floor of the statuses its timeline has (statuses of different numbers are never copies of
    each other; Python's split trims at least what the reading's normalize-space does, so never more)."""
    return len({" ".join((number.text or "").split()) for number in _NUMBERS(doc.tree)})
