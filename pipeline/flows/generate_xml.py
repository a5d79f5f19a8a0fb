"""Product path: JSON request -> validated CII / UBL for XRechnung or EN 16931.

    parse (model) -> calculate (AUTO amounts) -> canonical XML -> content checks -> transform (CII/UBL) -> validate

Each stage is one function here, so `pipeline run STAGE` and the benchmarks call exactly one of them;
`generate_xml` chains them. A document that fails validation is never returned: the caller gets ApiError 422
VALIDATION_FAILED with one entry per failed rule, pointing at the JSON field and business term where the rule maps
to one (`pipeline.check.rejection`). The checks the official rules miss (`pipeline.check.content`) run on the
canonical XML of the request, so each finding names its JSON field: warnings in the returned report, or 400
INVALID_INPUT with `config.strict`.
"""
from __future__ import annotations

import logging
from datetime import date

from lxml import etree

from pipeline import write
from pipeline.check import content, engine, packs
from pipeline.check.rejection import rejection
from pipeline.check.report import Location, Report
from pipeline.errors import ApiError, ErrorDetail, TransformError, invalid_input
from pipeline.flows.validate_xml import validate_xml
from pipeline.check.verdict import INVALID
from pipeline.invoice import model
from pipeline.invoice.specs import RULES_VERSION, profile_for_guideline
from pipeline.invoice.request_json import load_request
from pipeline.write.transform import transform, transform_to_tree

SPECS = model.XML_SPECS
log = logging.getLogger("pipeline.generate")
# Our own canonical XML; huge_tree for an attached document (BT-125) over libxml2's 10 MB text node limit.
_CANONICAL_PARSER = etree.XMLParser(huge_tree=True, resolve_entities=False, no_network=True)
__all__ = ["parse", "calculate", "to_canonical", "normalize", "check_content", "transform", "validate",
           "generate_xml", "write_validated"]


# ---- stages ---------------------------------------------------------------------------------------------

def parse(body: bytes, spec: str) -> model.InvoiceRequest:
    """Stage 1, model: request bytes -> InvoiceRequest (ApiError 400 INVALID_INPUT with field paths). On the XML
    endpoints config.version must name a rule pack version of the spec that is installed here: an unknown one is
    an INVALID_INPUT entry on config.version (with every other invalid field), a known one this server lacks too."""
    request = model.parse_request(body, spec, tuple(packs.known_versions(spec)) if spec in SPECS else None)
    sepa = _sepa_schemes(request.invoice)
    if sepa:
        raise invalid_input(f"The request has {len(sepa)} invalid field(s).", sepa)
    version = request.config.version
    if spec in SPECS and version is not None:
        try:
            engine.pick_pack(spec, version, str(request.config.syntax).upper())
        except ApiError as exc:
            if exc.error_code != "UNSUPPORTED_VERSION":
                raise
            raise invalid_input("The request has 1 invalid field(s).", [model.detail(
                "UNSUPPORTED_VERSION", "config.version", f"is not installed on this server ({exc.message})",
                version)]) from exc
    return request


def _sepa_schemes(invoice: model.Invoice) -> list[ErrorDetail]:
    """A seller or payee identifier under the scheme "SEPA": UBL's binding makes any such identifier the bank
    assigned creditor identifier (BT-90, the only place its BR-CL-10 allows "SEPA"), so a UBL would read back a
    creditor id instead of the party's identifier, and CII's rules refuse the scheme (BR-CL-10, no ISO 6523 code).
    Refused alike for either syntax, pointing to BT-90's own field."""
    places = [("invoice.seller", invoice.seller), ("invoice.payee", invoice.payee)]
    places += [(f"invoice.seller.additionalIdentifiers[{i}]", extra)
               for i, extra in enumerate(invoice.seller.additionalIdentifiers or [])]
    return [model.detail("INVALID_VALUE", f"{path}.identifierSchemeId", "SEPA is no ISO 6523 scheme: it marks "
                         "the bank assigned creditor identifier (BT-90), which UBL would read this identifier as "
                         "(and CII's rules refuse it, BR-CL-10); send a SEPA creditor id as "
                         "invoice.paymentInstructions.directDebit.creditorIdentifier", party.identifierSchemeId)
            for path, party in places
            if party is not None and (party.identifierSchemeId or "").strip().upper() == "SEPA"]


def calculate(request: model.InvoiceRequest, kept: dict | None = None) -> model.InvoiceRequest:
    """Stage 2, calculation: fill the derived amounts (AUTO) or keep them as sent (MANUAL); `kept` receives the
    sent amounts AUTO kept although it computes others (for the 422's message). MANUAL: an amount EN 16931 requires
    and the request leaves out is a 400 REQUIRED; so is a BT-111 that contradicts BT-110 in the invoice currency."""
    write.check_manual_amounts(request)
    calculated = write.calculate(request, kept)
    write.check_vat_accounting_total(calculated)
    return calculated


def to_canonical(request: model.InvoiceRequest, indent: bool = False) -> bytes:
    """Stage 3, canonical XML (docs/canonical.md) of a calculated request (derived file names filled in)."""
    return write.to_canonical(write.with_derived(request), indent)


def normalize(body: bytes, spec: str, indent: bool = False, kept: dict | None = None,
              parsed: model.InvoiceRequest | None = None) -> tuple[model.InvoiceRequest, bytes]:
    """Stages 1-3: (InvoiceRequest after calculation and derivation, canonical XML bytes; `indent` for people).
    `parsed`: stage 1's result for `body`, when the caller has it already (the service checks the request before
    it reserves credits)."""
    request = write.with_derived(calculate(parsed if parsed is not None else parse(body, spec), kept))
    return request, write.to_canonical(request, indent)


def check_content(request: model.InvoiceRequest, canonical: bytes, spec: str) -> list[content.Finding]:
    """Stage 3b: the checks the official rules miss on the request's canonical XML, each located at its JSON field
    (`location.xpath` = the field path, e.g. `invoice.paymentInstructions.creditTransfer.accountIdentifier`).
    Warnings; with `config.strict` any finding is ApiError 400 INVALID_INPUT naming field and business term."""
    config = request.config
    xrechnung = spec == "xrechnung" or (spec == "zugferd" and str(config.profile or "").upper() == "XRECHNUNG")
    root = etree.fromstring(canonical, _CANONICAL_PARSER)
    findings = content.check(root, lambda element: Location(xpath=content.json_field(element)), xrechnung)
    if findings and config.strict:
        raise invalid_input(
            f"The content checks found {len(findings)} problem(s) the official rules do not check (config.strict).",
            [ErrorDetail(f.code, f.message, f.location.xpath if f.location else None, f.business_term, f.value,
                         messageDe=f.message_de) for f in findings])
    return findings


# Stage 4 is `transform` (pipeline.write.transform), imported above.

def validate(xml: bytes, spec: str, version: str | None = None, request_id: str | None = None,
             tree=None, specification_id: str | None = None) -> Report:
    """Stage 5: the spec's active rule pack in force today (or `version`; unknown version -> ApiError 400). `tree` =
    the document as stage 4's Saxon tree (saves parsing it again). A CII whose BT-24 (`specification_id`, given for
    a CII only) names Factur-X EXTENDED is judged on that profile's rules, as a received one is
    (`parse.validate_source`): EXTENDED holds all of EN 16931's CII and more (its line hierarchy), whose group lines
    the EN 16931 rules would sum into every total."""
    profile = profile_for_guideline(specification_id) if specification_id else None
    if profile is not None and profile.name == "EXTENDED":  # its claim routes to its profile's rules
        report = validate_xml(xml, "en16931", request_id=request_id, tree=tree, on=date.today())
        report.version = f"{RULES_VERSION} {profile.name}"
        return report
    return validate_xml(xml, spec, version=version, request_id=request_id, tree=tree, on=date.today())


# ---- the whole path -------------------------------------------------------------------------------------

def generate_xml(body: bytes, spec: str, request_id: str | None = None,
                 parsed: model.InvoiceRequest | None = None) -> tuple[bytes, Report]:
    """JSON request -> (validated XML, report with any warnings: the official rules', then the content checks'
    located at their JSON fields). `parsed`: `parse(body, spec)` when the caller has it. Raises ApiError (400,
    422, 500)."""
    if spec not in SPECS:
        raise ValueError(f"unknown specification {spec!r}")
    kept: dict = {}
    request, canonical = normalize(body, spec, kept=kept, parsed=parsed)
    findings = check_content(request, canonical, spec)
    xml, report = write_validated(request, canonical, spec, request_id, kept, lambda: load_request(body))
    report.issues += findings
    return xml, report


def write_validated(request: model.InvoiceRequest, canonical: bytes, spec: str, request_id: str | None = None,
                    kept: dict | None = None, sent=None, fillers: dict | None = None) -> tuple[bytes, Report]:
    """Stages 4-5: the canonical XML of `request` (calculated) -> (XML of its syntax, the official report). A
    document the rules refuse is ApiError 422 VALIDATION_FAILED (`kept`: the amounts the calculation kept as sent;
    `sent()`: the request JSON, for the entries' rejectedValue; called only then; `fillers`: a converted source's
    syntax fillers, `transform.transform_to_tree`)."""
    syntax = str(request.config.syntax).upper()
    control = request.invoice.processControl  # BT-24 as sent (the model has checked it against the endpoint)
    try:
        out = transform_to_tree(canonical, syntax, spec, control.specificationIdentifier if control else None,
                                fillers)
    except TransformError as exc:  # a stylesheet bug, not the client's: log it, answer 500
        log.error("transform failed request_id=%s: %s", request_id, exc)
        raise ApiError(500, "GENERATION_FAILED", "The document could not be generated.") from exc
    report = validate(out.xml, spec, request.config.version, request_id, out.tree,
                      control.specificationIdentifier if control and syntax == "CII" else None)
    if report.verdict == INVALID:  # a claim the rules do not judge (a CIUS id kept on en16931) is the sender's
        raise rejection(report, syntax, kept, sent() if sent else None, request)
    return out.xml, report
