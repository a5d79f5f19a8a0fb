"""Product path: read an e-invoice into the JSON model generation takes.

    PDF? -> its embedded invoice -> read safely -> syntax -> canonical XML (read-cii.xsl / read-ubl.xsl, with
    provenance) -> JSON invoice (the model's field names and types) -> completeness (the model itself) -> what
    writing it again would not reproduce -> unmapped source nodes -> (validation report, when asked)

What comes back can be sent to the generation endpoints unchanged (`config.calculationMode` MANUAL: every amount as
the source states it).
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from pipeline import budget, saxon, write
from pipeline.check import detect, engine, fr_ctc, xmlinput
from pipeline.check.report import Report
from pipeline.errors import ApiError, ErrorDetail, TransformError, bad_request
from pipeline.flows.validate_pdf import validate_pdf
from pipeline.flows.validate_xml import validate_xml
from pipeline.invoice import peppol
from pipeline.invoice.model import InvoiceRequest, specification_id_problem, validate_request
from pipeline.invoice.specs import (EN16931_ID, RULES_VERSION, XRECHNUNG_EXTENSION_ID, XRECHNUNG_ID,
                                    XRECHNUNG_ID_PREFIX, ZUGFERD1_NS, Profile, profile_for_guideline, profile_named)
from pipeline.pdf import checks
from pipeline.read import canonical as reading, losses, provenance
from pipeline.read.to_json import invoice_json
from pipeline.settings import get_settings

log = logging.getLogger("pipeline.parse")
NOT_AN_EINVOICE = "NOT_AN_EINVOICE"
XRECHNUNG_3_PREFIX = XRECHNUNG_ID_PREFIX + "3."
# The XRechnung extension's BT-24 names it after the standard's id: "...#conformant#urn:xeinkauf.de:kosit:extension:
# xrechnung_3.0" since 3.0, "...#conformant#urn:xoev-de:kosit:extension:xrechnung_2.x" before (2.x, under xoev-de)
XRECHNUNG_EXTENSION_MARK = re.compile(r"#conformant#urn:(?:xeinkauf\.de|xoev-de):kosit:extension:xrechnung_")


def names_xrechnung_extension(spec_id: str | None) -> bool:
    """Whether a BT-24 claims the XRechnung extension (sub-invoice lines, third-party payments), of any release."""
    return bool(spec_id) and XRECHNUNG_EXTENSION_MARK.search(spec_id) is not None


@dataclass
class Source:
    """What was read: the invoice XML and where it came from."""
    xml: bytes
    doc: xmlinput.ParsedXml
    syntax: str                         # CII | UBL
    specification_id: str | None        # BT-24 as written
    profile: Profile | None = None      # Factur-X / ZUGFeRD profile its BT-24 names (CII only)
    embedded_file_name: str | None = None  # the PDF's invoice file
    pdf: bytes | None = None
    # what the PDF holds beside the invoice read that a reader must know (a second invoice file with other content)
    pdf_problems: tuple[ErrorDetail, ...] = ()
    pdf_problems_de: tuple[str | None, ...] = ()   # their messages in German, for the pages for people (render)
    _trees: dict = field(default_factory=dict, repr=False, compare=False)

    def reading_tree(self):
        """The document as a Saxon tree for the reading stylesheet when the official rules read the same characters
        (`engine.rules_view` stood in for no attachment): then parsed once for both (`rules_tree`). None when they
        differ or Saxon refuses the document (the stylesheet then parses and reports as it does alone)."""
        if "reading" not in self._trees:
            view = engine.rules_view(self.doc.text)
            self._trees["reading"] = None
            if view == self.doc.text:
                self._trees["reading"] = self._trees["rules"] = _saxon_tree(view)
        return self._trees["reading"]

    def rules_tree(self):
        """The document as the Saxon tree the official rules read, parsed once per source (None when Saxon refuses
        it: validation then parses and reports as it does alone)."""
        if "rules" not in self._trees:
            self._trees["rules"] = _saxon_tree(engine.rules_view(self.doc.text))
        return self._trees["rules"]

    def to_dict(self) -> dict:
        return {"syntax": self.syntax, "specificationIdentifier": self.specification_id,
                "profile": self.profile.name if self.profile else None, "embeddedFileName": self.embedded_file_name}


@dataclass
class Parsed:
    source: Source
    canonical: bytes
    invoice: dict
    config: dict
    unmapped: list[dict]
    unmapped_truncated: bool = False
    missing: list[str] = field(default_factory=list)
    problems: list[ErrorDetail] = field(default_factory=list)
    # the model of a complete invoice (with `config`) and the canonical XML writing it again gives (the loss
    # check's), for `convert`, which writes it in the target syntax
    request: InvoiceRequest | None = field(default=None, repr=False, compare=False)
    written: bytes | None = field(default=None, repr=False, compare=False)
    changed: list[dict] = field(default_factory=list)   # values generation writes otherwise (`changed_value`)
    read: provenance.Split | None = field(default=None, repr=False, compare=False)   # where each value came from

    @property
    def complete(self) -> bool:
        return not self.missing and not self.problems

    def to_dict(self) -> dict:
        out = {"invoice": self.invoice, "config": self.config, "source": self.source.to_dict(),
               "unmapped": self.unmapped, "complete": self.complete, "missing": self.missing}
        if self.unmapped_truncated:
            out["unmappedTruncated"] = True
        if self.problems:
            out["problems"] = [p.to_dict() for p in self.problems]
        if self.changed:
            out["changed"] = self.changed
        return out


def written_specification_id(spec: str, profile: str | None = None) -> str:
    """The BT-24 generation writes for a spec (and ZUGFeRD profile) when the request sends none."""
    if spec == "zugferd":
        return profile_named(profile).guideline_id
    if spec == "peppol":
        return peppol.BILLING_ID
    return XRECHNUNG_ID if spec == "xrechnung" else EN16931_ID


def changed_value(business_term: str, source: str, written: str, why: str, why_de: str | None = None) -> dict:
    """An entry of `changed`: a source value the target writes otherwise, and why (said, never silent); `why_de`:
    the reason in German (`reasonDe`, as a lost value's), which `pipeline convert --lang de` says."""
    entry = {"businessTerm": business_term, "source": source, "written": written, "reason": why}
    return {**entry, "reasonDe": why_de} if why_de else entry


# The fixed words of `changed_line` (the German page says them in its own: strings.json's convert_words)
NOT_IN_SOURCE, NOT_WRITTEN = "(not in the source)", "(not written)"


def changed_line(change: dict) -> str:
    """An entry of `changed` in words (header, CLI): `BT-24 <source> -> <written>`; a value the target needs and the
    source does not state comes from NOT_IN_SOURCE, one the target does not write goes to NOT_WRITTEN (a value
    "None" is a value)."""
    source = NOT_IN_SOURCE if change["source"] is None else change["source"]
    written = NOT_WRITTEN if change["written"] is None else change["written"]
    return f"{change['businessTerm']} {source} -> {written}"


def keep_specification_id(invoice: dict, spec_id: str | None, spec: str, profile: str | None = None) -> list[dict]:
    """BT-24 as the source states it into `invoice` when the target (`spec`, `profile`) may write it, else the
    identifier the target writes instead -> the `changed` entries (none or one)."""
    control = {k: v for k, v in (invoice.get("processControl") or {}).items() if k != "specificationIdentifier"}
    if spec_id is None:
        return []
    problem = specification_id_problem(spec_id, spec, profile)
    if problem is None and spec == "xrechnung" and not spec_id.startswith(XRECHNUNG_3_PREFIX):
        problem = "the XRechnung 3 rules need the identifier of XRechnung 3.0"
    if problem is None:
        invoice["processControl"] = {**control, "specificationIdentifier": spec_id}
        return []
    if spec == "xrechnung" and names_xrechnung_extension(spec_id):
        # an older release's extension: written as today's, which the model asks of sub-lines and third-party
        # payments (generation writes the standard's id unless it is sent)
        invoice["processControl"] = {**control, "specificationIdentifier": XRECHNUNG_EXTENSION_ID}
        return [changed_value("BT-24", spec_id, XRECHNUNG_EXTENSION_ID, problem + " (its extension: the "
                              "identifier of XRechnung 3.0's extension)")]
    if control:
        invoice["processControl"] = control
    else:
        invoice.pop("processControl", None)
    written = written_specification_id(spec, profile)
    return [] if written == spec_id else [changed_value("BT-24", spec_id, written, problem)]


def _saxon_tree(text: str):
    try:
        return saxon.parse(text)
    except budget.Exhausted:
        raise
    except Exception:  # noqa: BLE001 - saxonche raises PySaxonApiError; the stage that needs the tree says why
        return None


def _refuse(message: str, code: str, detail: str) -> ApiError:
    return bad_request(NOT_AN_EINVOICE, message, [ErrorDetail(code, detail, field="file")])


# ---- stages -----------------------------------------------------------------------------------------------

def source_of(data: bytes) -> Source:
    """Stage 1: the invoice XML of an upload (a CII / UBL file, or the invoice a ZUGFeRD / Factur-X PDF embeds),
    read safely. ApiError 400 NOT_AN_EINVOICE saying what was found instead."""
    pdf, name, pdf_problems, pdf_problems_de = None, None, (), ()
    if b"%PDF-" in data[:1024]:
        try:
            found = checks.inspect(data, validate_xml=False, check_pdfa=False)
        except checks.NotAPdf as exc:
            raise checks.not_a_pdf(exc) from exc
        if found.xml is None:
            reasons = "; ".join(i.message for i in found.errors) or "no embedded invoice file"
            raise _refuse("The PDF carries no readable e-invoice.", "FX_NO_EMBEDDED_INVOICE", reasons)
        limit = get_settings().max_upload_bytes
        if len(found.xml) > limit:  # as an XML upload of that size would be
            raise ApiError(413, "PAYLOAD_TOO_LARGE", f"The embedded invoice has {len(found.xml)} bytes; at most "
                           f"{limit} are read.", [ErrorDetail("FX_XML_TOO_LARGE", f"at most {limit} bytes",
                                                              field="file")])
        pdf, name, data = data, found.file_name, found.xml
        second = [n for n in found.not_judged if n.code == "FX_SECOND_INVOICE"]
        pdf_problems = tuple(ErrorDetail(n.code, n.message, field="file", rejectedValue=_named_file(found, n.message))
                             for n in second)
        pdf_problems_de = tuple(n.message_de for n in second)
    try:
        doc = xmlinput.load(data)
    except xmlinput.XmlInputError as exc:
        raise _refuse("The file is not a readable XML e-invoice.", exc.issue.code, exc.issue.message) from exc
    if doc.syntax is None:
        if doc.root_name == f"{{{ZUGFERD1_NS}}}CrossIndustryDocument":
            raise _refuse("ZUGFeRD 1.0 invoices cannot be read into the EN 16931 model.", xmlinput.XML_UNKNOWN_ROOT,
                          "the invoice is a ZUGFeRD 1.0 CrossIndustryDocument; this service reads CII D16B "
                          "(ZUGFeRD 2.x / Factur-X / XRechnung) and UBL 2.1")
        raise _refuse("The file is not an e-invoice.", xmlinput.XML_UNKNOWN_ROOT, xmlinput.unknown_root_issue(doc).message)
    spec_id, _ = xmlinput.specification_id(doc)
    profile = profile_for_guideline(spec_id) if doc.syntax == "CII" else None
    if pdf is None and profile is not None and profile.name in ("EN16931", "XRECHNUNG"):
        profile = None  # a plain EN 16931 / XRechnung XML names no Factur-X profile
    return Source(data, doc, doc.report_syntax, spec_id, profile, name, pdf, pdf_problems, pdf_problems_de)


_DONE_DE = {"converted": "Umgewandelt", "shown": "Gezeigt"}


def only_read(source: Source, done: str, language: str = "en") -> str:
    """What an answer about a PDF with a second invoice file (`Source.pdf_problems`) adds to the check's message:
    the invoice file it was made of (`done`: "converted" or "shown"; `language` en or de, for the pages)."""
    if language == "de":
        return f"{_DONE_DE[done]} wird nur die gelesene Rechnungsdatei ({source.embedded_file_name!r})."
    return f"Only the invoice file read ({source.embedded_file_name!r}) is {done}."


def _named_file(found: checks.Inspection, message: str) -> str | None:
    """The embedded file a PDF check's message names (as `repr`), e.g. the second invoice file: its rejected value,
    and the place a conversion names when it leaves that file out."""
    return next((f.name for f in found.other_files if repr(f.name) in message), None)


def to_canonical(source: Source, stylesheet=None, ids: bool = False) -> bytes:
    """Stage 2: canonical XML with provenance (`s:src` on every element read from the source; `ids`: naming the
    source nodes by id, for `read_canonical`)."""
    try:
        return reading.to_canonical(source.xml, source.doc, stylesheet, tree=source.reading_tree(), ids=ids)
    except TransformError as exc:
        # The reading stylesheets follow the syntax's schema (one settlement, one indicator, ...). A document that
        # breaks it is the sender's problem, said with the schema's findings; one that follows it is our bug.
        schema = engine.pick_pack("en16931", None, source.doc.syntax).rules_for(source.doc.syntax).xsd
        findings = engine.xsd_issues(source.doc, schema)
        if findings:
            raise _refuse(f"The document does not follow the {source.syntax} schema, so it cannot be read: "
                          f"{findings[0].message}", findings[0].code, "; ".join(
                              f"line {f.location.line}: {f.message}" if f.location and f.location.line else f.message
                              for f in findings[:10])) from exc
        log.error("reading failed: %s", exc)
        raise ApiError(500, "READ_FAILED", "The document could not be read.") from exc


def read_canonical(source: Source) -> provenance.Split:
    """Stages 2 and 3: the canonical document read and its provenance taken off. The stylesheet names the source
    nodes by id (path() in the stylesheet was half of its run); `provenance.in_paths` gives their path()s."""
    return provenance.split(to_canonical(source, ids=True), source.doc.tree.getroot())


def config_for(source: Source) -> dict:
    """The generation config that writes the document again: same syntax, the spec (and profile) its BT-24 names,
    amounts as stated (MANUAL)."""
    if source.pdf is not None and source.profile is not None:
        return {"spec": "zugferd", "syntax": "CII", "profile": source.profile.name, "calculationMode": "MANUAL"}
    if names_xrechnung_extension(source.specification_id):
        # an extension of an XRechnung release before 3.0 (no rules of ours judge it, source_spec: en16931): its
        # sub-lines and third-party payments are the xrechnung endpoint's only, so it is read for that endpoint
        return {"spec": "xrechnung", "syntax": source.syntax, "calculationMode": "MANUAL"}
    return {"spec": source_spec(source), "syntax": source.syntax, "calculationMode": "MANUAL"}


def completeness(invoice: dict, config: dict) -> tuple[InvoiceRequest | None, list[str], list[ErrorDetail]]:
    """What the model says of the read invoice: (the request as read, JSON paths of required fields the document
    lacks, other problems). The request is built without the fields only a JSON request must send (conversion
    needs none of them: `model.API_REQUIRED`) and beyond a JSON request's bounds (`model.READING`); `missing` names
    the former, the problems the latter, since generating from the parse's JSON needs them. No request = the invoice
    cannot be written from as it is."""
    errors: list[ErrorDetail] = []
    try:
        request = validate_request({"invoice": invoice, "config": config}, config["spec"], reading=True)
    except ApiError as err:
        request, errors = None, err.errors
    try:
        validate_request({"invoice": invoice, "config": config}, config["spec"])
    except ApiError as err:
        errors += [e for e in err.errors if e.code == "REQUIRED" and e.field and e not in errors]
        if request is not None:  # a text or number beyond a JSON request's bounds: read (and converted) as stated,
            # yet generation refuses the JSON, so it is no complete parse
            errors += [e for e in err.errors if e.code in ("TOO_LONG", "OUT_OF_RANGE") and e.field]
    missing = list(dict.fromkeys(e.field for e in errors if e.code == "REQUIRED" and e.field))
    return request, missing, [e for e in errors if not (e.code == "REQUIRED" and e.field)]


def written_again(request: InvoiceRequest) -> bytes:
    """The canonical XML generation writes for the read invoice (amounts as stated)."""
    return write.to_canonical(write.with_derived(write.calculate(request)))


def unmapped_of(source: Source, read: provenance.Split, written: bytes | None):
    """The source nodes no field carries: those no canonical element was read from, BT-24 aside (carried by
    source.specificationIdentifier and config.spec), plus those whose value writing the invoice again (`written`,
    when the invoice is complete) would not reproduce (`pipeline.read.losses`)."""
    used = read.used
    if written is not None:
        used = used - losses.lost_sources(read.leaves, written)
    return provenance.unmapped(source.doc, used, read.names, xmlinput.specification_id(source.doc)[1])


# ---- the whole path -----------------------------------------------------------------------------------------

def parse(data: bytes) -> Parsed:
    """An uploaded e-invoice -> Parsed (invoice JSON, config, source, unmapped, completeness). ApiError 400."""
    source = source_of(data)
    read = read_canonical(source)
    invoice = invoice_json(read.root)
    config = config_for(source)
    # BT-24 travels as sent where generation of the spec may write it (an XRechnung 1.x / 2.x id is written as
    # today's 3.0, and said so in `changed`)
    changed = keep_specification_id(invoice, source.specification_id, config["spec"], config.get("profile"))
    request, missing, problems = completeness(invoice, config)
    problems += source.pdf_problems  # (the invoice read is complete; the PDF says another thing too)
    written = written_again(request) if request is not None else None
    unmapped, truncated = unmapped_of(source, read, written)
    return Parsed(source, read.canonical, invoice, config, unmapped, truncated, missing, problems, request, written,
                  changed, read)


def source_spec(source: Source) -> str:
    """The rule pack a source's BT-24 names: xrechnung, peppol (BIS Billing 3.0 or its self-billing, in UBL) or
    en16931."""
    spec_id = source.specification_id or ""
    if spec_id.startswith(XRECHNUNG_ID_PREFIX):
        return "xrechnung"
    return "peppol" if spec_id in peppol.PROCESSES and source.syntax == "UBL" else "en16931"


def validate_source(source: Source, request_id: str | None = None, content_checks: bool = True,
                    as_received: bool = True) -> Report:
    """The official rules on what was read, as the validation endpoints judge it, with the same content checks
    (CHECK-*, WARNINGs): a PDF as the ZUGFeRD endpoint does; with `as_received`, XML between French parties (or
    claiming EXTENDED-CTC-FR) on France's chain, as the page, jobs and `pipeline validate` hold it
    (`detect.of_invoice`: a French invoice without its BR-FR notes is not valid); a CII naming a Factur-X profile by
    its profile's rules; else the XRechnung or EN 16931 pack its BT-24 names. render and parse with `validate` thus
    give the validation endpoint's answer, not one without the content checks (convert, which judges a source by
    what it claims and returns no warnings: `as_received=False`, `content_checks=False`)."""
    if source.pdf is not None:
        return validate_pdf(source.pdf, request_id, content_checks=content_checks)
    if as_received and source.doc is not None and detect.of_invoice(source.doc) == fr_ctc.SPEC:
        return validate_xml(source.xml, fr_ctc.SPEC, request_id=request_id, tree=source.rules_tree(), doc=source.doc,
                            content_checks=content_checks)
    if source.profile is not None:  # the en16931 endpoint's route for a Factur-X profile: its own rules
        report = validate_xml(source.xml, "en16931", request_id=request_id, tree=source.rules_tree(), doc=source.doc,
                              content_checks=content_checks)
        report.version = f"{RULES_VERSION} {source.profile.name}"
        return report
    return validate_xml(source.xml, source_spec(source), request_id=request_id, tree=source.rules_tree(),
                        doc=source.doc, content_checks=content_checks)


def parse_report(data: bytes, validate: bool = False, request_id: str | None = None) -> dict:
    """`parse` as the endpoint answers it; `validate` adds the official validation report of the source."""
    parsed = parse(data)
    out = parsed.to_dict()
    if validate:
        out["validation"] = validate_source(parsed.source, request_id).to_dict()
    return out
