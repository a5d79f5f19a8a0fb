"""Corpus converter: an official CII / UBL invoice -> InvoiceRequest JSON (service spec section 2).

Amounts are taken as stated (`calculationMode` MANUAL) so the generated document must carry exactly the
source's business terms. BT-24 is a spec-level value (the endpoint sets it), so it is not sent.
"""
from __future__ import annotations

import copy

from .reader import Reading, computed_only, read_terms


def _drop(terms: dict, dotted: str) -> None:
    head, _, rest = dotted.partition(".")
    value = terms.get(head)
    if not rest:
        terms.pop(head, None)
    elif isinstance(value, dict):
        _drop(value, rest)
    elif isinstance(value, list):
        for item in value:
            _drop(item, rest)


def request_from_reading(reading: Reading, syntax: str | None = None) -> dict:
    invoice = copy.deepcopy(reading.terms)
    for dotted in computed_only() | {"processControl.specificationIdentifier"}:
        _drop(invoice, dotted)
    if invoice.get("processControl") == {}:
        del invoice["processControl"]
    invoice.setdefault("documentTotals", {})
    return {"invoice": invoice, "config": {"syntax": syntax or reading.syntax, "calculationMode": "MANUAL"}}


def convert(xml: bytes, syntax: str | None = None) -> tuple[dict, list[str]]:
    """(InvoiceRequest dict, business terms the model cannot carry)."""
    reading = read_terms(xml)
    return request_from_reading(reading, syntax), reading.losses
