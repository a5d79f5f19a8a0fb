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

from dataclasses import dataclass, field

from lxml import etree

from pipeline.check.rejection import error_detail
from pipeline.check.report import ERROR
from pipeline.errors import ApiError, ErrorDetail
from pipeline.flows.generate_xml import write_validated
from pipeline.flows.generate_zugferd import generate_zugferd
from pipeline.flows.parse import Parsed, parse, source_spec, validate_source
from pipeline.invoice.model import InvoiceRequest, validate_request
from pipeline.invoice.request_json import dump_request

TARGETS = ("CII", "UBL", "ZUGFERD")
SPECS = ("xrechnung", "en16931", "peppol")
MAX_LISTED = 100  # errors[] entries of a 422


@dataclass
class Conversion:
    document: bytes
    media_type: str
    losses: list[dict] = field(default_factory=list)  # the unmapped source values (with allow_loss)
    changed: list[dict] = field(default_factory=list)  # identifiers the target writes otherwise (BT-24, BT-23)


_UBL_IDS = {"BT-24": "CustomizationID", "BT-23": "ProfileID"}
_CII_IDS = {"BT-24": "GuidelineSpecifiedDocumentContextParameter", "BT-23": "BusinessProcessSpecifiedDocumentContextParameter"}


def identifiers(xml: bytes) -> dict[str, str | None]:
    """BT-24 and BT-23 of a CII or UBL document (whitespace normalised), read from its context elements."""
    root = etree.fromstring(xml, etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True))
    out = {}
    for term in ("BT-24", "BT-23"):
        if etree.QName(root).localname == "CrossIndustryInvoice":
            found = root.xpath(f"*[local-name() = 'ExchangedDocumentContext']/*[local-name() = '{_CII_IDS[term]}']"
                               "/*[local-name() = 'ID']")
        else:
            found = root.xpath(f"*[local-name() = '{_UBL_IDS[term]}']")
        out[term] = " ".join((found[0].text or "").split()) or None if found else None
    return out


def changed_identifiers(source: bytes, target: bytes) -> list[dict]:
    """[{businessTerm, source, target}] for each of BT-24 / BT-23 the converted document states otherwise."""
    before, after = identifiers(source), identifiers(target)
    return [{"businessTerm": term, "source": before[term], "target": after[term]}
            for term in ("BT-24", "BT-23") if before[term] != after[term]]


def _refusal(code: str, message: str, errors: list[ErrorDetail]) -> ApiError:
    shown = f" (the first {MAX_LISTED} are listed)" if len(errors) > MAX_LISTED else ""
    return ApiError(422, code, message + shown, errors[:MAX_LISTED])


def loss_details(unmapped: list[dict]) -> list[ErrorDetail]:
    return [ErrorDetail("NOT_CARRIED", f"{u['xpath']} (line {u['line']}) = {u['value']!r}: no field of the model carries "
                        "it, so the converted document would not have it", businessTerm=(u.get("businessTerm") or
                                                                                          "").split(" ")[0] or None)
            for u in unmapped]


def request_for(parsed: Parsed, to: str, spec: str, profile: str | None, language: str | None) -> tuple[dict, str]:
    """(InvoiceRequest of the parsed invoice for the target, the endpoint spec it is generated for)."""
    invoice = dict(parsed.invoice)
    control = dict(invoice.get("processControl") or {})
    if to == "ZUGFERD" or spec != parsed.config["spec"]:  # the target writes its own BT-24
        control.pop("specificationIdentifier", None)
    invoice.pop("processControl", None)
    if control:
        invoice["processControl"] = control
    config = {"calculationMode": "MANUAL"}
    if to == "ZUGFERD":
        default = parsed.source.profile.name if parsed.source.profile else (
            "XRECHNUNG" if spec == "xrechnung" else "EN16931")
        config.update(syntax="CII", profile=profile or default, **({"metadataLanguage": language} if language else {}))
        return {"invoice": invoice, "config": config}, "zugferd"
    config.update(syntax=to)
    return {"invoice": invoice, "config": config}, spec


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
    return validate_request({"invoice": invoice, "config": request["config"]}, spec)


def convert(data: bytes, to: str, spec: str | None = None, profile: str | None = None, language: str | None = None,
            allow_loss: bool = False, request_id: str | None = None) -> Conversion:
    """An uploaded e-invoice -> the validated document in the target syntax. ApiError 400 (no e-invoice, bad
    parameters), 422 SOURCE_INVALID / SOURCE_NOT_CONVERTIBLE / CONVERSION_LOSS / VALIDATION_FAILED."""
    parsed = parse(data)
    if spec is None:  # the source's rules; Peppol is UBL: its content goes to CII as EN 16931
        spec = source_spec(parsed.source)
        spec = "en16931" if spec == "peppol" and to == "CII" else spec
    report = validate_source(parsed.source, request_id)
    if not report.valid:
        raise _refusal("SOURCE_INVALID", f"The source document is not valid ({report.version}); it is not converted.",
                       [error_detail(i, parsed.source.syntax) for i in report.issues if i.severity == ERROR])
    if to == "CII" and parsed.source.pdf is not None and spec == source_spec(parsed.source):
        return Conversion(parsed.source.xml, "application/xml")  # the PDF's own invoice, validated above
    if not parsed.complete:
        raise _refusal("SOURCE_NOT_CONVERTIBLE", "The source lacks fields the invoice model requires: "
                       + ", ".join(parsed.missing or [p.field or p.code for p in parsed.problems]),
                       [ErrorDetail("REQUIRED", "the source has no value for it", field=m) for m in parsed.missing]
                       + parsed.problems)
    if parsed.unmapped and not allow_loss:
        raise _refusal("CONVERSION_LOSS", f"The target cannot carry {len(parsed.unmapped)} value(s) of the source; "
                       "send request.allowLoss true to convert without them.", loss_details(parsed.unmapped))
    request, endpoint = request_for(parsed, to, spec, profile, language)
    try:
        if endpoint == "zugferd":
            return Conversion(generate_zugferd(dump_request(request), request_id), "application/pdf", parsed.unmapped)
        document, _ = write_validated(target_model(parsed, request, endpoint), parsed.written, endpoint, request_id,
                                      sent=lambda: request)
        return Conversion(document, "application/xml", parsed.unmapped,
                          changed_identifiers(parsed.source.xml, document))
    except ApiError as err:
        fields = [e.field or "" for e in err.errors]
        if err.http_status != 400 or not fields or not all(f.startswith("invoice.") for f in fields):
            raise
        # the target syntax refuses a term the source has (e.g. several preceding invoices in CII)
        raise _refusal("CONVERSION_LOSS", f"The target cannot carry the source: {err.message}", err.errors) from err
