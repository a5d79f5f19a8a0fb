"""Product path: JSON request -> checked ZUGFeRD / Factur-X PDF/A-3.

    parse -> calculate -> canonical XML -> content checks -> transform (EN 16931 CII, reduced to the profile) ->
    validate (profile rules) -> page (html.xsl) -> PDF (WeasyPrint) -> embed (XMP + XML + attachments) -> check
    (PDF/A, Factur-X)

The first stages are those of the XML path (`pipeline.flows.generate_xml`), the content checks too: their findings
go to the caller's `warnings` list, or refuse the request (400) with `config.strict`.

`config.rules: "fr-ctc"` (France's reform): the request is checked for the French data first (400), and the
profile's invoice must pass BR-FR Flux 2 as well as its profile rules (422), as French platforms check it.
"""
from __future__ import annotations

import base64
import time

from pipeline.check import engine, fr_ctc, generated, profiles as profile_rules, xmlinput
from pipeline.check.rejection import profile_rejection
from pipeline.check.report import WARNING, Report
from pipeline.check.verdict import INVALID
from pipeline.errors import ApiError, ErrorDetail, TransformError, invalid_input
from pipeline.flows.generate_xml import check_content, normalize
from pipeline.invoice.request_json import load_request
from pipeline.invoice.specs import RULES_VERSION, profile_named
from pipeline.pdf import checks, page
from pipeline.pdf.assemble import Attachment, embed_facturx
from pipeline.write.transform import to_profile, warm_up as _warm_transform
from pipeline.xslt import source_tree

_TITLE = {"en": "Invoice", "de": "Rechnung"}


def supporting_files(request) -> list[Attachment]:
    """The supporting documents (BG-24) that carry their file (BT-125), to be embedded in the PDF for every profile
    (also those whose XML cannot carry them). Base64 that does not decode -> 400."""
    files = []
    for i, doc in enumerate(request.invoice.additionalSupportingDocuments or []):
        if doc.attachedDocument is None:
            continue
        try:
            data = base64.b64decode("".join(doc.attachedDocument.split()), validate=True)
        except ValueError as exc:  # binascii.Error, or characters outside ASCII
            raise invalid_input("An attached document is not valid base64.", [ErrorDetail(
                "INVALID_VALUE", f"attachedDocument (BT-125) must be base64: {exc}",
                field=f"invoice.additionalSupportingDocuments[{i}].attachedDocument")]) from exc
        files.append(Attachment(doc.attachedDocumentFilename, data,
                                doc.attachedDocumentMimeType or "application/octet-stream",
                                doc.description or doc.reference))
    return files


def generate_zugferd(body: bytes, request_id: str | None = None, timings: dict | None = None,
                     clock=None, warnings: list | None = None, request=None,
                     rule_warnings: list | None = None, fillers: dict | None = None) -> bytes:
    """JSON InvoiceRequest -> checked Factur-X PDF/A-3 bytes. ApiError 400 / 422 (VALIDATION_FAILED for the XML,
    PDF_A3_VALIDATION_FAILED for the PDF) / 500. `timings`, when given, receives seconds per stage as measured
    by `clock` (default: wall clock; the bench also uses process CPU time). `warnings`, when given, receives the
    content-check findings (`pipeline.check.content`, located at their JSON fields), `rule_warnings` the warnings
    of the profile's official rules on the embedded XML. `request`: the body already parsed
    (`generate_xml.parse(body, "zugferd")`), when the caller has it. `fillers`: a converted CII's syntax fillers
    (`transform.to_profile`)."""
    now = clock or time.perf_counter
    started = now()
    marks = timings if timings is not None else {}

    def lap(stage: str) -> None:
        nonlocal started
        t = now()
        marks[stage] = marks.get(stage, 0.0) + t - started
        started = t

    kept: dict = {}
    request, canonical = normalize(body, "zugferd", kept=kept, parsed=request)
    findings = check_content(request, canonical, "zugferd")
    profile = profile_named(request.config.profile)
    language = page.language_of(request.config.metadataLanguage)
    attachments = supporting_files(request)
    lap("model")
    try:
        tree = source_tree(canonical)  # one Saxon parse of the canonical document for the CII and the page
        xml = to_profile(canonical, profile, tree, fillers)
    except TransformError as exc:
        raise ApiError(500, "GENERATION_FAILED", "The invoice XML could not be generated.") from exc
    lap("cii")
    checked = generated.validate_profile(xml, profile)
    report = Report(f"{RULES_VERSION} {profile.name}", "CII", checked.issues, request_id, rules=checked.rules)
    if request.config.rules == fr_ctc.SPEC:
        french = engine.pick_pack(fr_ctc.SPEC, None, "CII")
        report.version += f" + {fr_ctc.SPEC} {french.version}"
        br_fr = fr_ctc.br_fr_checked(xmlinput.load(xml), french)
        report.issues += br_fr.issues
        report.rules += br_fr.rules
    if report.verdict == INVALID:
        raise profile_rejection(report, profile, request, kept, load_request(body))
    lap("validate")
    html = page.invoice_html(canonical, language, profile.level, tree=tree)
    lap("html")
    pages = page.html_to_pdf(html, compress=False)  # embed_facturx compresses every stream as it saves
    lap("render")
    title = f"{_TITLE[language]} {request.invoice.invoiceNumber}"
    document = embed_facturx(pages, xml, profile, title, request.invoice.seller.name, attachments=attachments)
    lap("embed")
    checks.gate_generated(document, xml, profile, attachments)
    lap("check")
    if warnings is not None:
        warnings += findings
    if rule_warnings is not None:
        rule_warnings += [i for i in report.issues if i.severity == WARNING]
    return document


def warm_up() -> None:
    """Worker warm-up for the ZUGFeRD endpoints (the serve command's post-fork hook): the profile filter, every
    profile's XSD and Schematron, the page with WeasyPrint, and the PDF/A checker with its schemas (~1 s), so that
    no first request of a profile pays for them."""
    _warm_transform()
    profile_rules.warm_up()
    checks.inspect(page.warm_up(), validate_xml=False)
