"""Product path: convert an e-invoice to another syntax (or to a ZUGFeRD PDF): read + write.

    parse (the reading path) -> the source judged by the official rules -> what the target cannot carry -> the
    parsed invoice generated again (the generation path: canonical -> CII / UBL / PDF -> official validation)

To CII / UBL the parsed model and the canonical XML its loss check wrote go straight to the generation stylesheets
(the model checked for the target's config only): the same document as sending the parse's JSON to the XML
endpoint gives (tests/test_convert.py), without writing and reading that JSON and the canonical XML again.

Two refusals a user must be able to tell apart: the source itself is invalid (422 SOURCE_INVALID, with the source's
findings) and the target cannot carry something the source has (422 CONVERSION_LOSS, each unmapped value with its
xpath and business term; `allow_loss` converts anyway and hands the losses back).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipeline.check.rejection import error_detail
from pipeline.check.report import ERROR
from pipeline.errors import ApiError, ErrorDetail
from pipeline.flows.generate_xml import write_validated
from pipeline.flows.generate_zugferd import generate_zugferd
from pipeline.flows.parse import (Parsed, changed_value, keep_specification_id, parse, source_spec, validate_source,
                                  written_specification_id)
from pipeline.invoice.model import DATE_RE, InvoiceRequest, term_label, validate_request
from pipeline.invoice.request_json import dump_request
from pipeline.invoice.terms import business_term
from pipeline.read import provenance
from pipeline.read.provenance import is_plumbing

TARGETS = ("CII", "UBL", "ZUGFERD")
SPECS = ("xrechnung", "en16931", "peppol")
MAX_LISTED = 100  # errors[] entries of a 422


@dataclass
class Conversion:
    document: bytes
    media_type: str
    losses: list[dict] = field(default_factory=list)  # the unmapped source values (with allow_loss)
    changed: list[dict] = field(default_factory=list)  # source values the target writes otherwise (BT-24)


def _refusal(code: str, message: str, errors: list[ErrorDetail]) -> ApiError:
    shown = f" (the first {MAX_LISTED} are listed)" if len(errors) > MAX_LISTED else ""
    return ApiError(422, code, message + shown, errors[:MAX_LISTED])


def loss_details(unmapped: list[dict]) -> list[ErrorDetail]:
    return [ErrorDetail("NOT_CARRIED", f"{u['xpath']} (line {u['line']}) = {u['value']!r}: no field of the model carries "
                        "it, so the converted document would not have it", businessTerm=(u.get("businessTerm") or
                                                                                          "").split(" ")[0] or None)
            for u in unmapped]


def request_for(parsed: Parsed, to: str, spec: str, profile: str | None, language: str | None) -> tuple[dict, str]:
    """(InvoiceRequest of the parsed invoice for the target, the endpoint spec it is generated for). BT-24 stays
    as the source states it where the target may write it (`parse.keep_specification_id`)."""
    invoice = dict(parsed.invoice)
    config = {"calculationMode": "MANUAL"}
    if to == "ZUGFERD":
        default = parsed.source.profile.name if parsed.source.profile else (
            "XRECHNUNG" if spec == "xrechnung" else "EN16931")
        config.update(syntax="CII", profile=profile or default, **({"metadataLanguage": language} if language else {}))
        keep_specification_id(invoice, parsed.source.specification_id, "zugferd", config["profile"])
        return {"invoice": invoice, "config": config}, "zugferd"
    keep_specification_id(invoice, parsed.source.specification_id, spec)
    config.update(syntax=to)
    return {"invoice": invoice, "config": config}, spec


def _lines(lines: list[dict]):
    for line in lines:
        yield line
        yield from _lines(line.get("subInvoiceLines") or [])


def _lines_with(request: dict, price_term: str, without: str) -> str:
    """The ids of the lines whose price details hold `price_term` and not `without` (the first 20, then "..."),
    or "" when there are none."""
    ids = [str(line.get("lineIdentifier")) for line in _lines(request["invoice"].get("invoiceLines") or [])
           if price_term in (line.get("priceDetails") or {}) and without not in line["priceDetails"]]
    return ", ".join(ids[:20]) + (" ..." if len(ids) > 20 else "")


def _zoned_dates(value, path: str):
    """(field, value) of each date with a time zone (`2016-04-04+01:00`, an xs:date as UBL may send it)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _zoned_dates(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _zoned_dates(item, f"{path}[{i}]")
    elif path.endswith("Date") and isinstance(value, str) and len(value) > 10 and DATE_RE.fullmatch(value):
        yield path, value


def changed_for(parsed: Parsed, request: dict, endpoint: str) -> list[dict]:
    """The `changed` entries of a conversion: BT-24 when the target writes another identifier than the source's;
    BT-147 on UBL lines with a gross price and no discount (UBL binds BT-148 in an allowance that needs an amount:
    gross - net, which EN 16931 defines BT-146 by), BT-148 on CII lines with a discount and no gross price (net +
    discount), a date's time zone in CII (format 102 has none), BT-13 "NA" beside a lone BT-14 in UBL, BT-81 "1"
    (instrument not defined) in UBL beside a BT-83 the source states without a means code."""
    out = []
    source_id = parsed.source.specification_id
    sent = (request["invoice"].get("processControl") or {}).get("specificationIdentifier")
    if source_id is not None and sent != source_id:
        written = sent or written_specification_id(endpoint, request["config"].get("profile"))
        target = f"the ZUGFeRD profile {request['config']['profile']}" if endpoint == "zugferd" else endpoint
        out.append(changed_value("BT-24", source_id, written, f"{target} writes its own specification identifier"))
    if request["config"]["syntax"] == "CII":
        out += [changed_value(business_term(path) or path, value, value[:10], "CII's date format 102 has no time "
                              "zone") for path, value in _zoned_dates(request["invoice"], "invoice")]
        lines = _lines_with(request, "priceDiscount", without="grossPrice")
        if lines:
            out.append(changed_value("BT-148", None, "net price + price discount", "CII carries the price discount "
                                     "(BT-147) inside the gross price, which needs its amount; lines " + lines))
    if request["config"]["syntax"] == "UBL":
        invoice = request["invoice"]
        if endpoint == "xrechnung" and invoice.get("salesOrderReference") and not invoice.get("purchaseOrderReference"):
            out.append(changed_value("BT-13", None, "NA", "UBL requires an order id beside the sales order "
                                     "reference (BT-14) and XRechnung refuses it empty; Peppol's placeholder is "
                                     "written"))
        payment = invoice.get("paymentInstructions")
        if payment and not payment.get("meansCode"):
            out.append(changed_value("BT-81", None, "1", "UBL binds the payment reference (BT-83) in a payment means, "
                                     "whose code it requires; the source states none: UNTDID 4461 1, instrument not "
                                     "defined"))
        lines = _lines_with(request, "grossPrice", without="priceDiscount")
        if lines:
            out.append(changed_value("BT-147", None, "gross price - net price", "UBL carries the gross price "
                                     "(BT-148) in a price allowance that needs its amount; lines " + lines))
    return out


def target_model(parsed: Parsed, request: dict, spec: str) -> InvoiceRequest:
    """`request` (of `request_for`) as the model generation builds from its JSON: the invoice parse validated
    (its BT-24 as `request` has it) with the target's config, checked as the XML endpoint of `spec` checks a
    request (config and the checks across fields; ApiError 400 as there). The content checks are left out: the
    report's warnings are not returned (with config.strict they would refuse; convert sends none)."""
    invoice = parsed.request.invoice
    spec_id = (request["invoice"].get("processControl") or {}).get("specificationIdentifier")
    if invoice.processControl is not None and invoice.processControl.specificationIdentifier != spec_id:
        invoice = invoice.model_copy(update={"processControl": invoice.processControl.model_copy(
            update={"specificationIdentifier": spec_id})})
    return validate_request({"invoice": invoice, "config": request["config"]}, spec, reading=True)


def _where(parsed: Parsed, json_field: str | None) -> str:
    """" (in the source: xpath, line n)" of the node a JSON field was read from (or, with "near", the nearest
    enclosing one the source has); "" when the reading path did not record it."""
    node = provenance.source_node(parsed.read, parsed.source.doc, json_field) if (
        parsed.read is not None and (json_field or "").startswith("invoice.")) else None
    return (f" (in the source{', near' if node['near'] else ''}: {node['xpath']}, line {node['line']})"
            if node else "")


def _named(field: str) -> str:
    """"Name (BT-n)" of a JSON field, or the field itself when no business term has it."""
    name, _, bt = term_label(field).rpartition(", ")
    return f"{name} ({bt})" if name else (bt or field)


_JSON_FIELD = re.compile(r"\binvoice(\.[A-Za-z]+(\[\d+\])?)+")

# Line structure one syntax binds and the other has no place for: the model refuses it for the target (400), and
# allowLoss cannot drop it, since the lines left would not add up as the target's rules count them.
_STRUCTURE = {
    "UBL": (("parentLineIdentifier", "lineStatusReasonCode"),
            "Factur-X EXTENDED's line hierarchy has no place in UBL (the CEN rules warn of sub-invoice lines, "
            "UBL-CR-646), and without it group and information lines would count into the line total (BT-106, "
            "BR-CO-10)"),
    "CII": (("subInvoiceLines",),
            "XRechnung binds its sub-invoice lines in UBL only (its BR-DEX-15 warns of CII sub-lines), and as CII "
            "lines they would count into the line total (BT-106, BR-CO-10)"),
}


def _structure(field: str | None, to: str) -> bool:
    return bool(field) and field.rpartition(".")[2] in _STRUCTURE.get(to, ((), ""))[0]


def _in_terms(e: ErrorDetail, to: str) -> str:
    """A model entry's message for a client that sent a document: its field and any other JSON field it mentions
    named by business term ("invoice.x (Name, BT-n): ..." -> "Name (BT-n): ..."); a line structure the target has
    no place for said as such."""
    if _structure(e.field, to):
        return f"{_named(e.field)}: {to} has no place for it"
    label = term_label(e.field)
    prefix = (f"{e.field} ({label}): " if label else f"{e.field}: ") if e.field else None
    text = e.message
    if prefix and text.startswith(prefix):
        text = f"{_named(e.field)}: {text[len(prefix):]}" if label else text[len(prefix):]
    return _JSON_FIELD.sub(lambda m: _named(m.group(0)), text)


def in_source_terms(parsed: Parsed, errors: list[ErrorDetail], to: str = "") -> list[ErrorDetail]:
    """The entries of a refused target in the source's terms: the client sent a document, not JSON, so an entry
    names the source node (xpath, line) the field was read from, or the nearest enclosing one the source has,
    instead of a JSON field it never sent."""
    return [ErrorDetail(e.code, _in_terms(e, to) + _where(parsed, e.field), None, e.businessTerm, e.rejectedValue)
            for e in errors]


def _cannot_carry(errors: list[ErrorDetail], to: str, message: str) -> str:
    """The refusal's message: the line structure's reason first when that is among the entries."""
    if any(_structure(e.field, to) for e in errors):
        return (f"The target cannot carry the source's line structure: {_STRUCTURE[to][1]}. allowLoss does not "
                "apply: the lines would not add up without it.")
    return f"The target cannot carry the source: {message}"


def _reading_problems(parsed: Parsed) -> list[ErrorDetail]:
    """Why the model refuses the invoice as read (the entries of validate_request(reading=True))."""
    try:
        validate_request({"invoice": parsed.invoice, "config": parsed.config}, parsed.config["spec"], reading=True)
    except ApiError as err:
        return err.errors
    return parsed.problems


def convert(data: bytes, to: str, spec: str | None = None, profile: str | None = None, language: str | None = None,
            allow_loss: bool = False, request_id: str | None = None) -> Conversion:
    """An uploaded e-invoice -> the validated document in the target syntax. ApiError 400 (no e-invoice, bad
    parameters), 422 SOURCE_INVALID / SOURCE_NOT_CONVERTIBLE / CONVERSION_LOSS / VALIDATION_FAILED."""
    parsed = parse(data)
    if spec is None:  # the source's rules; Peppol is UBL: its content goes to CII as EN 16931
        spec = source_spec(parsed.source)
        spec = "en16931" if spec == "peppol" and to == "CII" else spec
    report = validate_source(parsed.source, request_id, content_checks=False)  # warnings it would not return
    if not report.valid:
        raise _refusal("SOURCE_INVALID", f"The source document is not valid ({report.version}); it is not converted.",
                       [error_detail(i, parsed.source.syntax) for i in report.issues if i.severity == ERROR])
    if to == "CII" and parsed.source.pdf is not None and spec == source_spec(parsed.source):
        return Conversion(parsed.source.xml, "application/xml")  # the PDF's own invoice, validated above
    if parsed.request is None:  # (fields only a JSON request must send are no reason: `model.API_REQUIRED`)
        blocking = _reading_problems(parsed)
        raise _refusal("SOURCE_NOT_CONVERTIBLE", "The source lacks values the invoice model requires or holds values "
                       "it refuses: " + ", ".join(dict.fromkeys(e.businessTerm or e.field or e.code for e in blocking)),
                       in_source_terms(parsed, blocking))
    lost = [u for u in parsed.unmapped if not is_plumbing(u["xpath"])]  # only content counts as loss
    if lost and not allow_loss:
        raise _refusal("CONVERSION_LOSS", f"The target cannot carry {len(lost)} value(s) of the source; "
                       "send request.allowLoss true to convert without them.", loss_details(lost))
    request, endpoint = request_for(parsed, to, spec, profile, language)
    changed = changed_for(parsed, request, endpoint)
    try:
        if endpoint == "zugferd":
            return Conversion(generate_zugferd(dump_request(request), request_id), "application/pdf", parsed.unmapped,
                              changed)
        document, _ = write_validated(target_model(parsed, request, endpoint), parsed.written, endpoint, request_id,
                                      sent=lambda: request)
        return Conversion(document, "application/xml", parsed.unmapped, changed)
    except ApiError as err:
        if err.http_status == 422:  # the target's rules refuse it: said in the source's terms
            message = (f"Without the {len(lost)} source value(s) that allowLoss left out, "
                       f"{err.message[:1].lower()}{err.message[1:]}" if lost else err.message)
            raise ApiError(422, err.error_code, message, in_source_terms(parsed, err.errors, to)) from err
        fields = [e.field or "" for e in err.errors]
        if err.http_status != 400 or not fields or not all(f.startswith("invoice.") for f in fields):
            raise
        # the target syntax refuses a term the source has (e.g. several preceding invoices in CII)
        raise _refusal("CONVERSION_LOSS", _cannot_carry(err.errors, to, err.message),
                       in_source_terms(parsed, err.errors, to)) from err
