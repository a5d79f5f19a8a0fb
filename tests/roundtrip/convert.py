"""Corpus converter: an official CII / UBL invoice -> InvoiceRequest JSON (service spec section 2).

Amounts are taken as stated (`calculationMode` MANUAL) so the generated document must carry exactly the
source's business terms. BT-24 is sent only where the endpoint accepts it (an XRechnung extension or CVD id on
the xrechnung endpoint); otherwise the endpoint writes its own.
"""
from __future__ import annotations

import copy

from pipeline.invoice.specs import EN16931_ID, XRECHNUNG_ID

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


# BT-24 values an endpoint accepts in a request (it writes its own otherwise).
_SPEC_ID_OK = {
    "xrechnung": lambda v: v.startswith(XRECHNUNG_ID),
    "en16931": lambda v: v == EN16931_ID,
}


def request_from_reading(reading: Reading, syntax: str | None = None, spec: str | None = None) -> dict:
    invoice = copy.deepcopy(reading.terms)
    spec_id = invoice.get("processControl", {}).get("specificationIdentifier")
    dropped = computed_only()
    if not (spec and spec_id and _SPEC_ID_OK[spec](spec_id)):
        dropped |= {"processControl.specificationIdentifier"}
    for dotted in dropped:
        _drop(invoice, dotted)
    if invoice.get("processControl") == {}:
        del invoice["processControl"]
    invoice.setdefault("documentTotals", {})
    return {"invoice": invoice, "config": {"syntax": syntax or reading.syntax, "calculationMode": "MANUAL"}}


def convert(xml: bytes, syntax: str | None = None, spec: str | None = None) -> tuple[dict, list[str]]:
    """(InvoiceRequest dict for the `spec` endpoint, business terms the model cannot carry)."""
    reading = read_terms(xml)
    return request_from_reading(reading, syntax, spec), reading.losses
