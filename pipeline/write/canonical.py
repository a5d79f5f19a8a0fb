"""The canonical invoice XML (docs/canonical.md): the calculated request written with lxml, one element per
business term, named and nested like the JSON, and the schema of that vocabulary (xslt/canonical.xsd), generated
from the same models and the business-term table so the two cannot drift.

  to_canonical(req)            -> bytes   (req already calculated; deterministic)
  schema_xsd()                 -> bytes   (`python3 scripts/write_canonical_xsd.py` rewrites xslt/canonical.xsd)
"""
from __future__ import annotations

import re
from datetime import date
from decimal import Decimal
from functools import lru_cache

from lxml import etree
from pydantic import BaseModel

from pipeline import budget
from pipeline.invoice.model import AdditionalSupportingDocument, DateText, Invoice, InvoiceRequest, field_kind
from pipeline.invoice.terms import ARRAY_ITEMS, CANONICAL_NS, pattern_of, term_for
from pipeline.settings import XSLT_DIR
from pipeline.write.calc import CENT, EXACT, NO_RATE_CATEGORIES

XSD_PATH = XSLT_DIR / "canonical.xsd"

# Fields of the model that are not written (docs/canonical.md rule 7): BT-24 is a stylesheet parameter and
# invoiceCurrencyCode is an alias of currencyCode (the model checks they are equal).
NOT_WRITTEN = frozenset({"invoice.processControl.specificationIdentifier", "invoice.invoiceCurrencyCode"})
# VAT rate fields left out for category O "Not subject to VAT" (BR-O-05, BR-O-06, BR-O-07). The breakdown keeps
# its rate (BT-119): BR-48 allows it and XRechnung's BR-DE-14 requires it.
RATE_FIELDS = frozenset({"vatRate"})

# BT-125-2 derivation: mime code -> file extension (docs/canonical.md, extension fields).
MIME_EXTENSIONS = {
    "application/pdf": "pdf",
    "image/png": "png",
    "image/jpeg": "jpg",
    "text/csv": "csv",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "application/xml": "xml",
}
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def derived_filename(reference: str | None, mime_code: str | None) -> str:
    """BT-125-2 when not sent: `<reference>.<ext>` from the mime code, unsafe characters replaced by `_`."""
    stem = _UNSAFE.sub("_", reference or "attachment")
    ext = MIME_EXTENSIONS.get((mime_code or "").strip().lower())
    return f"{stem}.{ext}" if ext else stem


def attachment_filename(doc: AdditionalSupportingDocument) -> str | None:
    """BT-125-2 of a supporting document: as sent, else derived when a document is attached."""
    if doc.attachedDocumentFilename is not None or doc.attachedDocument is None:
        return doc.attachedDocumentFilename
    return derived_filename(doc.reference, doc.attachedDocumentMimeType)


@lru_cache(maxsize=None)
def is_amount(name: str) -> bool:
    """Amount fields (two decimals) by naming convention of spec section 2: `amount`, `...Amount`."""
    return name == "amount" or name.endswith("Amount")


def format_number(name: str, value: Decimal) -> str:
    """Plain decimal without exponent; amounts with two fraction digits unless sent with more (MANUAL: the
    official rules judge them, so they are not rounded here)."""
    if value.is_zero():
        value = value.copy_abs()   # -0 -> 0
    if is_amount(name) and value.as_tuple().exponent >= -2:
        value = value.quantize(CENT, context=EXACT)   # only appends zeros; exact for any length
    return format(value, "f")


def _text(name: str, value) -> str:
    if type(value) is str:
        return value
    if isinstance(value, Decimal):
        return format_number(name, value)
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def _invoice(obj: dict) -> dict:
    """BT-6 equal to BT-5 says nothing (the VAT is accounted in the invoice currency) and the rules refuse it
    (CEN CII BR-53, XRechnung PEPPOL-EN16931-R005): it is not written, nor BT-111, the same amount as BT-110."""
    if obj.get("vatAccountingCurrencyCode") != obj["currencyCode"]:
        return obj
    totals = {k: v for k, v in obj["documentTotals"].items() if k != "taxTotalAmountInAccountingCurrency"}
    return {**{k: v for k, v in obj.items() if k != "vatAccountingCurrencyCode"}, "documentTotals": totals}


# Objects whose children are computed or left out here, by JSON path pattern (computed children come last, as in
# the schema). BT-125-2 is derived before (with_derived), so that the request and the canonical XML agree.
_COMPUTED = {
    "invoice": _invoice,
}
_NOT_WRITTEN_NAMES = frozenset(p.rsplit(".", 1)[1] for p in NOT_WRITTEN)


# Text as XML character data: the model admits only characters XML can carry (model._clean_text); a CR is written
# as a reference so that the parser's line-end normalisation keeps it.
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"})


def _write(out: list[str], name: str, obj: dict, path: str) -> None:
    """One object (a model dumped without None values, so in field order); absent when it has no children."""
    start = len(out)
    out.append(f"<{name}>")
    _write_children(out, obj, path)
    if len(out) == start + 1:   # an object whose fields are all absent is absent (rule 3)
        out.pop()
    else:
        out.append(f"</{name}>")


def _write_children(out: list[str], obj: dict, path: str) -> None:
    derive = _COMPUTED.get(pattern_of(path) if "subInvoiceLines" in path else path)
    if derive is not None:
        obj = derive(obj)
    no_rate = obj.get("vatCategoryCode") in NO_RATE_CATEGORIES
    for field, value in obj.items():
        if (no_rate and field in RATE_FIELDS) or (field in _NOT_WRITTEN_NAMES and f"{path}.{field}" in NOT_WRITTEN):
            continue
        if isinstance(value, dict):
            _write(out, field, value, f"{path}.{field}")
        elif isinstance(value, list):
            item_name, item_path = ARRAY_ITEMS[field], f"{path}.{field}[]"
            for item in value:
                if path == "invoice":  # each invoice line (note, ...) of a request of any size
                    budget.check()
                _write(out, item_name, item, item_path)
        else:
            out.append(f"<{field}>{_text(field, value).translate(_ESCAPES)}</{field}>")


def to_canonical(req: InvoiceRequest, indent: bool = False) -> bytes:
    """Canonical XML of a calculated and derived request (`with_derived`; UTF-8, with XML declaration,
    deterministic). Written as text (element names are the model's field names; twice as fast as building an
    lxml tree) and not indented by default: whitespace between elements would be text nodes that Saxon builds
    and the stylesheets skip; `indent` is for people."""
    out = [f"<?xml version='1.0' encoding='UTF-8'?>\n<invoice xmlns=\"{CANONICAL_NS}\">"]
    _write_children(out, req.invoice.model_dump(exclude_none=True), "invoice")
    out.append("</invoice>")
    xml = "".join(out).encode("utf-8")
    if not indent:
        return xml
    return etree.tostring(etree.fromstring(xml), xml_declaration=True, encoding="UTF-8", pretty_print=True)


def with_derived(req: InvoiceRequest) -> InvoiceRequest:
    """The request with the derived attachment file names filled in (what to_canonical writes)."""
    docs = req.invoice.additionalSupportingDocuments
    if not docs:
        return req
    filled = [d.model_copy(update={"attachedDocumentFilename": attachment_filename(d)}) for d in docs]
    return req.model_copy(update={"invoice": req.invoice.model_copy(update={"additionalSupportingDocuments": filled})})


# ---- the schema ----------------------------------------------------------------------------------------------

XS = "http://www.w3.org/2001/XMLSchema"
_XS = "{%s}" % XS
# Computed-only elements that are not request fields, written after the fields: parent model -> (name, type).
COMPUTED_ELEMENTS: dict = {}   # (BT-147 priceDiscount was one; it is a field now)


def _has_required(model: type[BaseModel]) -> bool:
    return any(f.is_required() for f in model.model_fields.values())


def _doc(el: etree._Element, path: str, extra: str = "") -> None:
    term = term_for(path)
    text = f"{term.bt + ' ' if term and term.bt else ''}{term.name if term else ''}{extra}".strip()
    if text:
        ann = etree.SubElement(el, _XS + "annotation")
        etree.SubElement(ann, _XS + "documentation").text = f"{text} (JSON {path})"


def _xs_element(seq: etree._Element, name: str, typ, path: str, min_occurs: int, many: bool,
                outer: tuple = ()) -> None:
    el = etree.SubElement(seq, _XS + "element", name=name)
    if min_occurs != 1:
        el.set("minOccurs", str(min_occurs))
    if many:
        el.set("maxOccurs", "unbounded")
    _doc(el, path)
    if isinstance(typ, type) and issubclass(typ, BaseModel):
        if typ in outer:   # a model nested in itself (sub-invoice lines): a named type that refers to itself
            el.set("type", f"c:{name}")
            _named_type(seq.getroottree().getroot(), name, typ, path)
        else:
            _xs_complex(el, typ, path, outer)
    else:
        el.set("type", {Decimal: "xs:decimal", DateText: "xs:date"}.get(typ, "c:text"))


def _named_type(root: etree._Element, name: str, model: type[BaseModel], path: str) -> None:
    """The top-level complex type `name` (once), its nested occurrences referring to it."""
    if root.find(f"{_XS}complexType[@name='{name}']") is None:
        _xs_sequence(etree.SubElement(root, _XS + "complexType", name=name), model, path, (model,))


def _xs_complex(el: etree._Element, model: type[BaseModel], path: str, outer: tuple = ()) -> None:
    _xs_sequence(etree.SubElement(el, _XS + "complexType"), model, path, outer)


def _xs_sequence(complex_type: etree._Element, model: type[BaseModel], path: str, outer: tuple) -> None:
    outer += (model,)
    seq = etree.SubElement(complex_type, _XS + "sequence")
    for name, field in model.model_fields.items():
        child_path = f"{path}.{name}"
        if child_path in NOT_WRITTEN:
            continue
        kind, typ = field_kind(field.annotation)
        required = field.is_required() and name not in RATE_FIELDS and not (
            isinstance(typ, type) and issubclass(typ, BaseModel) and not _has_required(typ))
        if kind == "list":   # required only when the model demands items (invoiceLines), not just the key
            min_items = max((getattr(m, "min_length", 0) or 0 for m in field.metadata), default=0)
            _xs_element(seq, ARRAY_ITEMS[name], typ, f"{child_path}[]", 1 if required and min_items else 0, True,
                        outer)
        else:
            _xs_element(seq, name, typ, child_path, 1 if required else 0, False, outer)
    for name, typ in COMPUTED_ELEMENTS.get(model, []):
        _xs_element(seq, name, typ, f"{path}.{name}", 0, False)


def schema_xsd() -> bytes:
    """XSD of the canonical vocabulary, generated from the model and the business-term table."""
    root = etree.Element(_XS + "schema", nsmap={"xs": XS, "c": CANONICAL_NS},
                         targetNamespace=CANONICAL_NS, elementFormDefault="qualified")
    root.append(etree.Comment(" GENERATED by `python3 scripts/write_canonical_xsd.py` from "
                              "pipeline/invoice/model.py and pipeline/invoice/terms.py; do not edit. "
                              "Vocabulary: docs/canonical.md. "))
    text = etree.SubElement(root, _XS + "simpleType", name="text")
    etree.SubElement(etree.SubElement(text, _XS + "restriction", base="xs:string"), _XS + "minLength", value="1")
    invoice = etree.SubElement(root, _XS + "element", name="invoice")
    _doc(invoice, "invoice", " - root of the canonical invoice")
    _xs_complex(invoice, Invoice, "invoice")
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)


_SCHEMA: etree.XMLSchema | None = None


def schema() -> etree.XMLSchema:
    """The checked-in xslt/canonical.xsd, loaded once."""
    global _SCHEMA
    if _SCHEMA is None:
        _SCHEMA = etree.XMLSchema(etree.parse(str(XSD_PATH)))
    return _SCHEMA

