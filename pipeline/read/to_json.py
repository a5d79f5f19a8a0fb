"""Stage: canonical XML -> the JSON invoice (`InvoiceRequest.invoice`), typed by the same model generation parses
with: element names are the model's field names, repeated elements become the arrays of `ARRAY_ITEMS`, numbers are
`Decimal` exactly as written, dates and text stay strings. Elements the model has no field for (the computed-only
ones of docs/canonical.md, e.g. BT-147 priceDiscount = gross - net) are left out: generation derives them again.
The one rule of the canonical layer that reading undoes: category O ("not subject to VAT") has no rate in the
documents (BR-O-05..07), where the model requires the line rate; it reads as 0, which generation leaves out again.
"""
from __future__ import annotations

from decimal import Decimal, InvalidOperation
from functools import lru_cache

from lxml import etree
from pydantic import BaseModel

from pipeline import budget
from pipeline.invoice.model import Invoice, field_kind
from pipeline.invoice.terms import ARRAY_ITEMS
from pipeline.read.provenance import PARSER
from pipeline.write.calc import NO_RATE_CATEGORIES
from pipeline.write.canonical import RATE_FIELDS

_LIST_OF = {item: name for name, item in ARRAY_ITEMS.items()}


def _value(typ, text: str):
    if typ is Decimal:
        try:
            return Decimal(text.strip())
        except InvalidOperation:
            return text  # the model reports it with its field path
    return text


@lru_cache(maxsize=None)
def _fields(model: type[BaseModel]) -> tuple[dict, frozenset]:
    """({field name: (field name, kind, type, is a model)}, required rate fields) of a model:
    the type walk once per model, not once per element read."""
    by_element = {}
    for field_name, field in model.model_fields.items():
        kind, typ = field_kind(field.annotation)
        entry = (field_name, kind, typ, isinstance(typ, type) and issubclass(typ, BaseModel))
        by_element[field_name] = entry
    rates = frozenset(RATE_FIELDS & {n for n, f in model.model_fields.items() if f.is_required()})
    return by_element, rates


def _object(element, model: type[BaseModel]) -> dict:
    fields, rates = _fields(model)
    out: dict = {}
    for child in element:
        tag = child.tag
        if not isinstance(tag, str):
            continue
        if model is Invoice:  # each top-level element (an invoice line) of a document of any size
            budget.check()
        name = tag.rpartition("}")[2]
        found = fields.get(_LIST_OF.get(name, name))
        if found is None:
            continue  # computed-only element
        field_name, kind, typ, is_model = found
        # (text as the reading stylesheet wrote it: trimmed, or verbatim where line breaks count, BT-20, notes)
        value = _object(child, typ) if is_model else _value(typ, child.text or "")
        if kind == "list":
            out.setdefault(field_name, []).append(value)
        else:
            out[field_name] = value
    if out.get("vatCategoryCode") in NO_RATE_CATEGORIES:
        for name in rates - set(out):
            out[name] = Decimal(0)
    return out


def invoice_json(canonical) -> dict:
    """Canonical XML (without provenance; bytes or the parsed root) -> dict shaped like `InvoiceRequest.invoice`."""
    root = etree.fromstring(canonical, PARSER) if isinstance(canonical, bytes) else canonical
    return _object(root, Invoice)
