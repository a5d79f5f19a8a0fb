"""The canonical status XML of France's lifecycle status messages (CDV): a status request (`pipeline.invoice.cdar`)
written with one element per field, named and nested like the JSON (arrays as repeated singular items:
`recipients/recipient`, `details/detail`, `characteristics/characteristic`), in its own namespace. xslt/cdar.xsl
turns it into the CDAR message, xslt/read-cdar.xsl reads a CDAR message back into it, xslt/cdar-html.xsl draws it.

Values as the JSON has them: numbers digit for digit, dates and date-times in ISO form, booleans true/false.
"""
from __future__ import annotations

from decimal import Decimal

from lxml import etree

from pipeline import xslt
from pipeline.invoice.cdar import StatusRequest
from pipeline.settings import XSLT_DIR

CDAR_XSL = XSLT_DIR / "cdar.xsl"

STATUS_NS = "urn:einvoice-pipeline:canonical:status:1"
ROOT = "lifecycleStatus"
ITEMS = {"recipients": "recipient", "details": "detail", "characteristics": "characteristic",
         # the timeline of several messages (pipeline.flows.status_read.timeline)
         "invoices": "invoiceTimeline", "statuses": "entry", "unread": "unreadFile", "failed": "rule",
         "copies": "file", "conflicts": "conflict", "values": "statedValue", "files": "file",
         "sameIdentifier": "file"}
TIMELINE_ROOT = "statusTimeline"


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return format(value, "f") if value.is_finite() else str(value)
    return str(value)


def _fill(parent, obj: dict) -> None:
    for name, value in obj.items():
        if value is None:
            continue
        if isinstance(value, dict):
            _fill(etree.SubElement(parent, f"{{{STATUS_NS}}}{name}"), value)
        elif isinstance(value, list):
            holder = etree.SubElement(parent, f"{{{STATUS_NS}}}{name}")
            for item in value:
                child = etree.SubElement(holder, f"{{{STATUS_NS}}}{ITEMS[name]}")
                if isinstance(item, dict):
                    _fill(child, item)
                else:
                    child.text = _text(item)
        else:
            etree.SubElement(parent, f"{{{STATUS_NS}}}{name}").text = _text(value)


def element(data: dict, root: str = ROOT):
    """The canonical element of status data (a request's `model_dump` or the JSON reading gives)."""
    top = etree.Element(f"{{{STATUS_NS}}}{root}", nsmap={None: STATUS_NS})
    _fill(top, data)
    return top


def to_canonical(req: StatusRequest | dict) -> bytes:
    """Canonical status XML (UTF-8, with declaration) of a request (derived values filled in by the caller:
    `pipeline.invoice.cdar.with_derived`) or of status data as read."""
    data = req.model_dump(exclude_none=True) if isinstance(req, StatusRequest) else req
    return etree.tostring(element(data), xml_declaration=True, encoding="UTF-8")


def timeline_canonical(timeline: dict) -> bytes:
    """Several messages' statuses grouped by invoice (`pipeline.flows.status_read.timeline`) in the same vocabulary,
    under `statusTimeline`: what the page (xslt/cdar-html.xsl) draws, for one message as for many."""
    return etree.tostring(element(timeline, TIMELINE_ROOT), xml_declaration=True, encoding="UTF-8")


def to_cdar(canonical: bytes) -> xslt.Output:
    """Canonical status XML -> the CDAR message, as bytes and as the Saxon tree validation reads (xslt/cdar.xsl).
    TransformError when the stylesheet fails."""
    return xslt.run_to_tree(CDAR_XSL, canonical)
