"""Checks of a ZUGFeRD / Factur-X PDF: PDF/A-3, the Factur-X XMP, the embedded invoice file and its XML.

Used twice: as the gate on every PDF we generate (`gate_generated`), and by the validation endpoint on
uploaded PDFs (`inspect`). Findings are report Issues with stable codes:

- `PDFA:<rule>`      pikepdf.pdfa (an allowlist validator) violation -> ERROR. A construct it merely does
                     not check (`unsupported`) -> WARNING `PDFA_NOT_CHECKED:<rule>`, never an ERROR.
- not judged (`Inspection.not_judged`, the verdict is never valid): the PDF/A-3 check did not complete
  (`PDFA_CHECK_TIMEOUT`), did not run (`PDF_TOO_COMPLEX`, `PDF_STREAM_TOO_LARGE`: our bounds), the file declares
  PDF/A-4 (`PDFA_4_NOT_CHECKED`: we check PDF/A-3 only), the invoice is beyond the size we validate
  (`FX_XML_TOO_LARGE`), a second embedded file under an invoice file name with other content (`FX_SECOND_INVOICE`:
  which of the two a receiver reads depends on its software).
  Known false alarms of pikepdf 10.17 on files veraPDF accepts are dropped, each only when our own check
  shows the construct is fine: XMP properties of extension schemas that the XMP declares (6.6.2.3.1-1),
  `pdfaid:conformance` A or U of a part-3 file checked as 3b (6.6.4-3), and `/PageMode /UseAttachments`.
- `XMP_*`            our Factur-X XMP checks.
- `FX_*`, `PDF_*`    the embedded file, encryption, JavaScript, stream size caps.
- then the embedded XML's own findings: the rules its guideline id (BT-24) names, as for the same invoice sent as
  XML (`pipeline.check.judging`, endpoint `zugferd`).

Untrusted input stays bounded: stream data is only ever decompressed up to a cap, encrypted files are
reported rather than cracked, and nothing in the PDF is executed.
"""
from __future__ import annotations

import gc
import io
import logging
import re
import signal
import threading
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field

import pikepdf
from lxml import etree
from pikepdf import Name, pdfa

from pipeline import budget
from pipeline.check import claims, engine, fr_ctc, judging, packs
from pipeline.check.applied import Checked, Rules, Step
from pipeline.check.report import ERROR, WARNING, Issue, Location
from pipeline.check.verdict import NotJudged
from pipeline.check.xmlinput import XmlInputError, load as load_xml
from pipeline.errors import ApiError, ErrorDetail, bad_request, pdf_validation_failed
from pipeline.invoice.specs import CII_NS, INVOICE_FILE_NAMES, Profile, profile_for_guideline
from pipeline.pdf import collector
from pipeline.pdf.assemble import attachment_names, subtype_for
from pipeline.settings import get_settings

log = logging.getLogger(__name__)

MAX_STREAM_BYTES = 64 * 1024 * 1024      # any one stream, decompressed
MAX_TOTAL_BYTES = 256 * 1024 * 1024      # all streams together, decompressed
MAX_OBJECTS = 500_000                    # objects in the file
PDFA_CHECK_SECONDS = 30.0                # time limit of the PDF/A walk (sync workers: main thread, SIGALRM)

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
PDFAID = "http://www.aiim.org/pdfa/ns/id/"
EXT = "http://www.aiim.org/pdfa/ns/extension/"
EXT_SCHEMA = "http://www.aiim.org/pdfa/ns/schema#"
EXT_PROPERTY = "http://www.aiim.org/pdfa/ns/property#"
EXT_TYPE = "http://www.aiim.org/pdfa/ns/type#"
EXT_FIELD = "http://www.aiim.org/pdfa/ns/field#"
EXTENSION_NAMESPACES = {EXT, EXT_SCHEMA, EXT_PROPERTY, EXT_TYPE, EXT_FIELD}
# Factur-X 1.0x / ZUGFeRD 2.x, ZUGFeRD 2.0, ZUGFeRD 1.0 XMP namespaces.
FX_NAMESPACES = ("urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#",
                 "urn:zugferd:pdfa:CrossIndustryDocument:invoice:2p0#",
                 "urn:ferd:pdfa:CrossIndustryDocument:invoice:1p0#")
FX_LEVELS = {"MINIMUM", "BASIC WL", "BASIC", "EN 16931", "EXTENDED", "XRECHNUNG", "COMFORT"}
RELATIONSHIPS = {"/Data", "/Source", "/Alternative", "/Supplement", "/Unspecified", "/EncryptedPayload",
                 "/FormData", "/Schema"}

_NOT_PERMITTED = re.compile(r"XMP (namespace (?P<prefix>[^=\s]+)=(?P<uri>\S+)|property (?P<qname>\S+)) is not permitted")


class NotAPdf(Exception):
    """`de`: the same in German for the page and reports in German (the reader's own words stay as they are)."""

    def __init__(self, message: str, de: str | None = None):
        super().__init__(message)
        self.de = de


@dataclass
class OtherFile:
    """An embedded file besides the invoice (e.g. a supporting document): not an invoice, not validated."""

    name: str
    relationship: str | None
    subtype: str | None
    data: bytes | None = None  # read only when asked for (the generation gate)


@dataclass
class Inspection:
    """What the checks found, plus what they read (for the generation gate and tests)."""

    issues: list[Issue] = field(default_factory=list)
    pdfa_part: str | None = None
    pdfa_conformance: str | None = None
    fx: dict[str, str] = field(default_factory=dict)   # XMP Factur-X properties by local name
    fx_namespace: str | None = None  # the FX_NAMESPACES entry they are in (ZUGFeRD 1.0's is a claim of its own)
    file_name: str | None = None
    relationship: str | None = None
    subtype: str | None = None
    xml: bytes | None = None
    profile: Profile | None = None
    guideline_id: str | None = None
    other_files: list[OtherFile] = field(default_factory=list)
    not_judged: list[NotJudged] = field(default_factory=list)  # checks that could not run (PDF/A, the invoice's)
    pdfa_checked: bool = False   # the PDF/A-3 walk ran to its end
    judged: Checked | None = None  # the embedded invoice's rules (`pipeline.check.judging`): its findings are in
    #                                `issues` too
    zugferd1: bool = False       # the embedded invoice is a ZUGFeRD 1.0 document

    def not_checked(self, code: str, message: str, claim: str | None = None, de: str | None = None) -> None:
        """A required check that could not run: the verdict cannot be valid (`pipeline.check.verdict`); `de`: the
        message in German, for the reports for people in German."""
        self.not_judged.append(NotJudged(code, message, claim, de))

    def add(self, severity: str, code: str, message: str, where: str | None = None, de: str | None = None) -> None:
        """A finding; `where` = the PDF object it concerns (`location.pdfObject`; no xpath: a PDF has none); `de`:
        its message in German, for the reports for people in German (the API's `message` is English)."""
        issue = Issue(severity, code, message, Location(pdfObject=where) if where else None)
        issue.message_de = de
        self.issues.append(issue)

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == ERROR]


# --- entry points ------------------------------------------------------------------------------------

def inspect(data: bytes, validate_xml: bool = True, read_other_files: bool = False,
            check_pdfa: bool = True, french: packs.Pack | None = None) -> Inspection:
    """Check an uploaded (or generated) PDF. Raises NotAPdf when it is not a PDF we can parse at all.
    `read_other_files`: also read the embedded files besides the invoice (bounded like every stream).
    `french` (the fr-ctc pack): the embedded invoice is judged as the French endpoint judges it sent as XML.
    `validate_xml=False, check_pdfa=False` only reads (the reading side): the embedded invoice, under the same
    bounds, with the structural findings but without the PDF/A walk and the invoice's rules."""
    if b"%PDF-" not in data[:1024]:  # (the header may follow some junk bytes, as readers allow)
        hint = ("; an XML e-invoice is validated by POST /v1/invoice/xrechnung/validate or /v1/invoice/en16931/validate"
                if data.lstrip()[:1] == b"<" or data.startswith(b"\xef\xbb\xbf<") else "")
        hint_de = ("; eine XML-E-Rechnung prüft POST /v1/invoice/xrechnung/validate oder /v1/invoice/en16931/validate"
                   if hint else "")
        raise NotAPdf(f"the file is not a PDF (no %PDF- header){hint}",
                      de=f"Die Datei ist kein PDF (der Kopf %PDF- fehlt){hint_de}.")
    result = Inspection()
    try:
        pdf = pikepdf.open(io.BytesIO(data))
    except pikepdf.PasswordError:
        result.add(ERROR, "PDF_ENCRYPTED", "The PDF is encrypted with a password; PDF/A forbids encryption "
                   "and the embedded invoice cannot be read.",
                   de="Das PDF ist mit einem Passwort verschlüsselt; PDF/A verbietet Verschlüsselung, und die "
                      "eingebettete Rechnung ist nicht lesbar.")
        return result
    except Exception as exc:  # pikepdf raises PdfError (and friends) for unparseable files
        raise NotAPdf(f"the PDF cannot be parsed (truncated or damaged): {qpdf_message(exc)}",
                      de=f"Das PDF lässt sich nicht lesen (abgeschnitten oder beschädigt); Meldung des Lesers: "
                         f"{qpdf_message(exc)}") from exc
    with pdf:
        if pdf.is_encrypted:
            result.add(ERROR, "PDF_ENCRYPTED", "The PDF is encrypted; PDF/A forbids encryption (ISO 19005-3 6.1.3).",
                   de="Das PDF ist verschlüsselt; PDF/A verbietet Verschlüsselung (ISO 19005-3 6.1.3).")
        try:
            _check_structure(data, pdf, result, read_other_files, check_pdfa)
        except _DAMAGE as exc:  # an object of the wrong type where the file structure needs another
            log.warning("damaged PDF structure: %s", exc, exc_info=True)
            result.add(ERROR, "PDF_STRUCTURE_BROKEN", "The PDF's object structure is damaged "
                       f"({type(exc).__name__}: {qpdf_message(exc)}); it was not checked completely.",
                   de="Die Objektstruktur des PDF ist beschädigt; es wurde nicht vollständig geprüft.")
    if validate_xml and result.xml is not None:
        limit = get_settings().max_upload_bytes
        if len(result.xml) > limit:  # as on the XML endpoints: the rules' time grows with the document
            result.not_checked("FX_XML_TOO_LARGE", f"The embedded invoice has {len(result.xml)} bytes; this service "
                               f"validates invoices of up to {limit} bytes (the XML upload limit), so its rules did "
                               "not run.",
                               de=f"Die eingebettete Rechnung hat {len(result.xml)} Bytes; dieser Dienst prüft "
                                  f"Rechnungen bis {limit} Bytes (die Grenze für XML-Uploads), ihre Regeln liefen "
                                  "daher nicht.")
        else:
            _check_xml(result, french)
    return result


_QPDF_SOURCE = re.compile(r"^(?:stream )?<_io\.\w+ object at 0x[0-9a-fA-F]+>(?: \(object \d+ \d+[^)]*\))?:?\s*")


def qpdf_message(exc: Exception) -> str:
    """qpdf's message without the name it gives our in-memory file ("stream <_io.BytesIO object at 0x...>: "),
    which says nothing to the sender and shows an address of this process."""
    return _QPDF_SOURCE.sub("", str(exc)) or type(exc).__name__


# What a damaged object graph raises in the checks below (pikepdf: ValueError/TypeError for an object of another
# type than the structure requires; PdfError for unreadable objects).
_DAMAGE = (ValueError, TypeError, AttributeError, KeyError, UnicodeError, pikepdf.PdfError)


def _check_structure(data: bytes, pdf: pikepdf.Pdf, result: Inspection, read_other_files: bool,
                     check_pdfa: bool) -> None:
    bounded = _check_object_count(pdf, result) and _check_stream_sizes(pdf, result)
    _check_javascript(pdf, result)
    xmp_root = _read_xmp(pdf, result)
    declared = _declared_extension_properties(xmp_root)
    _check_fx_xmp(xmp_root, declared, result)
    if bounded and check_pdfa:
        _check_pdfa(data, pdf, declared, _prefixes(xmp_root), result)
    _extract_invoice(pdf, result, read_other_files and bounded)


def gate_generated(data: bytes, xml: bytes, profile: Profile, attachments=()) -> Inspection:
    """The check before a generated PDF is returned: every error -> 422, and the embedded XML must be
    byte for byte the XML we validated, with the profile's file name, relationship and XMP level; the
    supporting documents (`pdf.Attachment`s) must be embedded byte for byte as /Supplement files."""
    try:
        with collector.paused():  # a PDF we made, bounded by the line limit (`pipeline.pdf.collector`)
            result = inspect(data, validate_xml=False, read_other_files=bool(attachments))
    except NotAPdf as exc:
        raise pdf_validation_failed("The generated PDF cannot be read back.", [
            ErrorDetail("PDF_UNREADABLE", str(exc))]) from exc
    expected = {
        "file name": (result.file_name, profile.file_name),
        "AFRelationship": (result.relationship, "/" + profile.relationship),
        "embedded file /Subtype": (result.subtype, "/text/xml"),
        "fx:ConformanceLevel": (result.fx.get("ConformanceLevel"), profile.level),
        "fx:DocumentFileName": (result.fx.get("DocumentFileName"), profile.file_name),
        "pdfaid:part": (result.pdfa_part, "3"),
        "pdfaid:conformance": (result.pdfa_conformance, "B"),
    }
    for what, (got, want) in expected.items():
        if got != want:
            result.add(ERROR, "FX_MISMATCH", f"{what} is {got!r}, expected {want!r}")
    if result.xml != xml:
        result.add(ERROR, "FX_XML_DIFFERS", "The embedded XML differs from the validated XML.")
    _check_attachments(result, attachments)
    if result.errors or result.not_judged:  # a check that did not run confirms nothing
        raise pdf_validation_failed("The generated PDF failed the PDF/A-3 / Factur-X checks.", [
            ErrorDetail(i.code, i.message + (f" (PDF object: {i.location.pdfObject})"
                                             if i.location and i.location.pdfObject else ""))
            for i in result.errors] + [ErrorDetail(n.code, n.message) for n in result.not_judged])
    return result


def _check_attachments(result: Inspection, attachments) -> None:
    want = {name: (str(subtype_for(a.mime_type)), a.data) for name, a in zip(attachment_names(attachments), attachments)}
    got = {f.name: (f.subtype, f.data) for f in result.other_files if f.relationship == "/Supplement"}
    if got != want or len(result.other_files) != len(want):
        result.add(ERROR, "FX_ATTACHMENTS_DIFFER", f"The embedded supporting documents {sorted(got)} differ from "
                   f"the invoice's {sorted(want)} (names, MIME types, bytes or relationship).")


# --- bounded stream access ------------------------------------------------------------------------------

class TooLarge(Exception):
    pass


def _pdf_text(obj) -> str | None:
    """A PDF object of an untrusted file as text: names and strings with bytes that are no valid text (a
    damaged file) come out with replacement characters instead of raising."""
    if obj is None:
        return None
    try:
        return str(obj)
    except UnicodeDecodeError:
        return obj.unparse().decode("utf-8", "replace")


_UNBOUNDED = ("/FlateDecode", "/LZWDecode")   # filters whose output may be orders of magnitude larger


def _filter_names(stream: pikepdf.Stream) -> list[str]:
    """The stream's filter chain as names ('?' for anything that is no valid name)."""
    filters = stream.get("/Filter")
    if isinstance(filters, pikepdf.Name):
        filters = [filters]
    items = list(filters) if isinstance(filters, (list, pikepdf.Array)) else []
    return [_pdf_text(item) if isinstance(item, pikepdf.Name) else "?" for item in items]


def _bounded_bytes(stream: pikepdf.Stream, cap: int) -> bytes:
    """Decoded stream data, refusing to produce more than `cap` bytes (decompression bombs)."""
    filters = _filter_names(stream)
    raw = stream.read_raw_bytes()
    if not filters:
        if len(raw) > cap:
            raise TooLarge(f"stream of {len(raw)} bytes exceeds {cap}")
        return raw
    if filters[0] == "/FlateDecode":
        inflater = zlib.decompressobj()
        out = inflater.decompress(raw, cap + 1)
        if len(out) > cap or inflater.unconsumed_tail:
            raise TooLarge(f"stream inflates beyond {cap} bytes")
        if filters == ["/FlateDecode"] and "/DecodeParms" not in stream:
            return out
        # a predictor (DecodeParms) or a further filter on data now known to be small: qpdf decodes the chain
        return stream.read_bytes()
    if any(f in _UNBOUNDED for f in filters):
        raise TooLarge(f"filter chain {' '.join(filters)} has no bound on its output")
    # ASCIIHex, ASCII85, RunLength: at most 64 x their input
    if len(raw) * 64 > cap:
        raise TooLarge(f"filtered stream of {len(raw)} bytes may exceed {cap} bytes")
    return stream.read_bytes()


def _check_object_count(pdf: pikepdf.Pdf, result: Inspection) -> bool:
    count = len(pdf.objects)
    if count > MAX_OBJECTS:
        result.not_checked("PDF_TOO_COMPLEX", f"The PDF has {count} objects (limit {MAX_OBJECTS}); it was not "
                           "checked for PDF/A conformance.",
                           de=f"Das PDF hat {count} Objekte (Grenze {MAX_OBJECTS}); seine PDF/A-Konformität wurde "
                              "nicht geprüft.")
        return False
    return True


def _check_stream_sizes(pdf: pikepdf.Pdf, result: Inspection) -> bool:
    """Inflate every Flate stream once, bounded; False (and an ERROR) if any would be a bomb."""
    total = 0
    for obj in pdf.objects:
        if not isinstance(obj, pikepdf.Stream):
            continue
        budget.check()
        if not any(f in _UNBOUNDED for f in _filter_names(obj)):
            continue
        try:
            total += len(_bounded_bytes(obj, MAX_STREAM_BYTES))
        except TooLarge as exc:
            result.not_checked("PDF_STREAM_TOO_LARGE", f"A stream (obj {obj.objgen[0]} {obj.objgen[1]}) was not read: "
                               f"{exc}; the PDF was not checked for PDF/A conformance.",
                               de="Ein Datenstrom wurde nicht gelesen (zu groß oder nicht lesbar); die PDF/A-"
                                  "Konformität wurde nicht geprüft.")
            return False
        except (zlib.error, pikepdf.PdfError):
            continue  # a broken stream is the PDF/A checker's business
        if total > MAX_TOTAL_BYTES:
            result.not_checked("PDF_STREAM_TOO_LARGE", f"Streams inflate beyond {MAX_TOTAL_BYTES} bytes in total; the "
                               "PDF was not checked for PDF/A conformance.",
                               de=f"Die Datenströme wachsen entpackt über {MAX_TOTAL_BYTES} Bytes; die PDF/A-"
                                  "Konformität wurde nicht geprüft.")
            return False
    return True


def _check_javascript(pdf: pikepdf.Pdf, result: Inspection) -> None:
    names = pdf.Root.get("/Names")
    found = isinstance(names, pikepdf.Dictionary) and "/JavaScript" in names
    if not found:
        for n, obj in enumerate(pdf.objects):
            if n % 1024 == 0:
                budget.check()
            if isinstance(obj, pikepdf.Dictionary) and (obj.get("/S") == Name.JavaScript or "/JS" in obj):
                found = True
                break
    if found:
        result.add(ERROR, "PDF_JAVASCRIPT", "The PDF contains JavaScript, which PDF/A forbids (ISO 19005-3 6.6.1). "
                   "It was not executed.",
                   de="Das PDF enthält JavaScript, das PDF/A verbietet (ISO 19005-3 6.6.1); es wurde nicht "
                      "ausgeführt.")


# --- XMP ---------------------------------------------------------------------------------------------

def _read_xmp(pdf: pikepdf.Pdf, result: Inspection) -> etree._Element | None:
    meta = pdf.Root.get("/Metadata")
    if not isinstance(meta, pikepdf.Stream):
        result.add(ERROR, "XMP_MISSING", "The PDF has no XMP metadata stream (required by PDF/A-3 and Factur-X).",
                   de="Das PDF hat keine XMP-Metadaten (PDF/A-3 und Factur-X verlangen sie).")
        return None
    try:
        root = load_xml(_bounded_bytes(meta, 4 * 1024 * 1024)).tree.getroot()
    except (TooLarge, XmlInputError, zlib.error, pikepdf.PdfError) as exc:
        result.add(ERROR, "XMP_NOT_WELL_FORMED", f"Could not parse the XMP metadata: {qpdf_message(exc)}",
                   de="Die XMP-Metadaten sind nicht lesbar (kein wohlgeformtes XML).")
        return None
    result.pdfa_part = _xmp_value(root, PDFAID, "part")
    result.pdfa_conformance = _xmp_value(root, PDFAID, "conformance")
    return root


def _xmp_value(root: etree._Element, ns: str, name: str) -> str | None:
    """A simple XMP property in element form or attribute form (both are valid RDF)."""
    for desc in root.iter(f"{{{RDF}}}Description"):
        value = desc.get(f"{{{ns}}}{name}")
        if value is not None:
            return value.strip()
        el = desc.find(f"{{{ns}}}{name}")
        if el is not None:
            return (el.text or "").strip()
    return None


def _namespaces_of(root: etree._Element, names) -> set[str]:
    """The namespaces in which the XMP states a property of one of these local names (element or attribute form)."""
    found = {etree.QName(el).namespace for el in root.iter() if isinstance(el.tag, str)
             and etree.QName(el).localname in names}
    return found | {etree.QName(a).namespace for desc in root.iter(f"{{{RDF}}}Description") for a in desc.attrib
                    if etree.QName(a).localname in names}


def _prefixes(root: etree._Element | None) -> dict[str, str]:
    """prefix -> namespace URI as bound in the XMP (pikepdf names findings by the file's prefixes)."""
    found: dict[str, str] = {}
    for el in (root.iter() if root is not None else ()):
        for prefix, uri in el.nsmap.items():
            if prefix:
                found.setdefault(prefix, uri)
    return found


def _declared_extension_properties(root: etree._Element | None) -> dict[str, set[str]]:
    """namespace URI -> property names declared in pdfaExtension:schemas (ISO 19005-3 6.6.2.3.2)."""
    declared: dict[str, set[str]] = {}
    if root is None:
        return declared
    for schemas in root.iter(f"{{{EXT}}}schemas"):
        for li in schemas.iter(f"{{{RDF}}}li"):
            uri = _values(li, EXT_SCHEMA, "namespaceURI")
            if uri:
                declared.setdefault(uri[0], set()).update(_values(li, EXT_PROPERTY, "name"))
    return declared


def _values(el: etree._Element, ns: str, name: str) -> list[str]:
    """All values of a property below `el`, in element form or attribute form."""
    found = [(e.text or "").strip() for e in el.iter(f"{{{ns}}}{name}")]
    found += [e.get(f"{{{ns}}}{name}").strip() for e in el.iter() if e.get(f"{{{ns}}}{name}") is not None]
    return [v for v in found if v]


def _check_fx_xmp(root: etree._Element | None, declared: dict[str, set[str]], result: Inspection) -> None:
    if root is None:
        return
    ns = next((u for u in FX_NAMESPACES if _xmp_value(root, u, "ConformanceLevel") is not None
               or _xmp_value(root, u, "DocumentFileName") is not None), None)
    if ns is None:
        # Factur-X / ZUGFeRD properties in a namespace of a version we do not know (ZUGFeRD's RC, a later one):
        # rules not here, not a PDF without them
        unknown = claims.of_xmp_namespaces(_namespaces_of(root, ("ConformanceLevel", "DocumentFileName")))
        if unknown is not None:
            result.not_judged.append(unknown)
            return
        result.add(ERROR, "XMP_FX_MISSING", "The XMP has no Factur-X/ZUGFeRD properties (fx:DocumentType, "
                   "DocumentFileName, Version, ConformanceLevel).",
                   de="Die XMP-Metadaten haben keine Factur-X-/ZUGFeRD-Angaben (fx:DocumentType, DocumentFileName, "
                      "Version, ConformanceLevel).")
        return
    result.fx_namespace = ns
    for name in ("DocumentType", "DocumentFileName", "Version", "ConformanceLevel"):
        value = _xmp_value(root, ns, name)
        if value is None:
            result.add(ERROR, "XMP_FX_PROPERTY_MISSING", f"XMP Factur-X property {name} is missing.",
                   de=f"Die Factur-X-Angabe {name} fehlt in den XMP-Metadaten.")
            continue
        result.fx[name] = value
        if name not in declared.get(ns, set()):
            result.add(ERROR, "XMP_EXTENSION_SCHEMA_MISSING", f"XMP property {name} of {ns} is not declared in "
                       "a PDF/A extension schema (ISO 19005-3 6.6.2.3.2).",
                   de=f"Die XMP-Angabe {name} aus {ns} ist in keinem PDF/A-Erweiterungsschema deklariert (ISO "
                      "19005-3 6.6.2.3.2).")
    if result.fx.get("DocumentType", "INVOICE") != "INVOICE":
        result.add(ERROR, "XMP_FX_DOCUMENT_TYPE", f"fx:DocumentType is {result.fx['DocumentType']!r}, expected 'INVOICE'.",
                   de=f"fx:DocumentType ist {result.fx['DocumentType']!r}, erwartet wird 'INVOICE'.")
    level = result.fx.get("ConformanceLevel")
    if level is not None and level.upper() not in FX_LEVELS:
        result.add(ERROR, "XMP_FX_CONFORMANCE_LEVEL", f"fx:ConformanceLevel {level!r} is not a Factur-X/ZUGFeRD profile.",
                   de=f"fx:ConformanceLevel {level!r} ist kein Factur-X-/ZUGFeRD-Profil.")


# --- PDF/A-3 (pikepdf.pdfa) ----------------------------------------------------------------------------

def _check_pdfa(data: bytes, pdf: pikepdf.Pdf, declared: dict[str, set[str]], prefixes: dict[str, str],
                result: Inspection) -> None:
    part = result.pdfa_part
    if part is None:
        result.add(ERROR, "PDFA_NOT_DECLARED", "The XMP declares no PDF/A part (pdfaid:part); a Factur-X PDF "
                   "must be PDF/A-3.",
                   de="Die XMP-Metadaten nennen keinen PDF/A-Teil (pdfaid:part); ein Factur-X-PDF muss PDF/A-3 sein.")
    elif part == "4":
        result.not_checked("PDFA_4_NOT_CHECKED", "The file declares PDF/A-4; this service checks PDF/A-3 "
                           "conformance only, so the PDF/A-4 rules were not checked.", "PDF/A-4",
                           de="Die Datei gibt PDF/A-4 an; dieser Dienst prüft nur PDF/A-3, die Regeln von PDF/A-4 "
                              "wurden nicht geprüft.")
        return
    elif part != "3":
        result.add(ERROR, "PDFA_NOT_PART_3", f"The file declares PDF/A-{part}; Factur-X requires PDF/A-3.",
                   de=f"Die Datei gibt PDF/A-{part} an; Factur-X verlangt PDF/A-3.")
    _check_file_syntax(data, pdf, result)
    left = budget.remaining()
    if left is not None and left <= 0:
        raise budget.Exhausted()
    seconds = PDFA_CHECK_SECONDS if left is None else min(PDFA_CHECK_SECONDS, left)
    try:
        with _time_limit(seconds), _collecting_only_new_garbage():
            report = pdfa.validate_written(io.BytesIO(data), "3b")
    except CheckTimeout:
        if seconds < PDFA_CHECK_SECONDS:  # the request's budget ran out, not the check's own limit
            raise budget.Exhausted() from None
        result.not_checked("PDFA_CHECK_TIMEOUT", f"The PDF/A-3 check did not finish within {PDFA_CHECK_SECONDS:g} "
                           "s; the file was not confirmed as PDF/A-3.",
                           de=f"Die PDF/A-3-Prüfung wurde nicht binnen {PDFA_CHECK_SECONDS:g} s fertig; die Datei "
                              "ist nicht als PDF/A-3 bestätigt.")
        return
    result.pdfa_checked = True
    for f in report.findings:
        if _known_false_alarm(f, declared, prefixes, result) or _cid_system_info_is_valid(f, pdf):
            continue
        if f.kind == "unsupported" or _undetermined(f):
            result.add(WARNING, f"PDFA_NOT_CHECKED:{f.rule}", f"Not checked by the PDF/A validator: {f.message}", f.where,
                       de=f"Vom PDF/A-Prüfer nicht geprüft: {pdfa_message_de(f.message)}")
        else:
            result.add(ERROR, f"PDFA:{f.rule}", f.message, f.where, de=pdfa_message_de(f.message))


# pikepdf.pdfa's messages (English) as German reports say them: the forms met in the corpus and our own PDFs; the
# names, keys and values in them stay as the file has them. Any other message is quoted as the checker wrote it.
_PDFA_DE = [(re.compile(p), de) for p, de in (
    (r"^embedded files are not supported$", "eingebettete Dateien werden nicht unterstützt"),
    (r"^associated files \(/AF\) are not supported$", "verknüpfte Dateien (/AF) werden nicht unterstützt"),
    (r"^interactive forms \(/AcroForm\) are not supported$", "interaktive Formulare (/AcroForm) werden nicht unterstützt"),
    (r"^optional content \(BDC /OC\) is not supported$", "optionale Inhalte (BDC /OC) werden nicht unterstützt"),
    (r"^no OutputIntents; device colour cannot be checked$",
     "keine OutputIntents; geräteabhängige Farben lassen sich nicht prüfen"),
    (r"^marked-content property lists are not checked yet$",
     "Eigenschaftslisten markierter Inhalte werden noch nicht geprüft"),
    (r"^unrecognized key\(s\) (.+) are not checked$", r"unbekannte Schlüssel werden nicht geprüft: \1"),
    (r"^the content of structured XMP property (\S+) is not checked$",
     r"der Inhalt der strukturierten XMP-Eigenschaft \1 wird nicht geprüft"),
    (r"^/CIDSet on a (\S+) subset is not checked$", r"/CIDSet einer Teilmenge (\1) wird nicht geprüft"),
    # pikepdf says "None" where the OutputIntent names no colour space: a German report printed "OutputIntent: None"
    (r"^(\S+) used with OutputIntent colour space None$", r"\1 verwendet, der OutputIntent nennt aber keinen Farbraum"),
    (r"^(\S+) used with OutputIntent colour space (\S+)$", r"\1 verwendet, Farbraum des OutputIntent: \2"),
    (r"^(\S+) is not supported$", r"\1 wird nicht unterstützt"),
    (r"^pdfaid:(part|conformance) is (.+), expected (.+)$", r"pdfaid:\1 ist \2, erwartet \3"),
    (r"^XMP namespace (\S+) is not permitted$", r"XMP-Namensraum \1 ist nicht zulässig"),
    (r"^XMP property (\S+) is not permitted$", r"XMP-Eigenschaft \1 ist nicht zulässig"),
    (r"^XMP is not well-formed XML: (.+)$", r"XMP ist kein wohlgeformtes XML: \1"),
    (r"^file is encrypted$", "die Datei ist verschlüsselt"),
    (r"^(\S+) is a required property$", r"\1 ist eine verlangte Angabe"),
    (r"^the embedded file is not an associated file: no /AF array lists its file specification$",
     "die eingebettete Datei ist keine verknüpfte Datei: kein /AF-Verzeichnis nennt ihre Dateispezifikation"),
    (r"^(.+) is not of type (\S+)$", r"\1 ist nicht vom Typ \2"),
)]


def pdfa_message_de(message: str) -> str:
    """A pikepdf.pdfa message in German where its form is known, else the checker's own words, marked as such."""
    for pattern, de in _PDFA_DE:
        if pattern.match(message):
            return pattern.sub(de, message, count=1)
    return f"(Meldung des Prüfers pikepdf) {message}"


_HEADER = re.compile(rb"%PDF-1\.[0-7](?:\r\n|\r|\n)")
_EOL_ONLY = (b"", b"\n", b"\r", b"\r\n")


def _check_file_syntax(data: bytes, pdf: pikepdf.Pdf, result: Inspection) -> None:
    """The file-level rules of ISO 19005-3 6.1.2-6.1.3 that pikepdf.pdfa trusts (it checks files qpdf has just
    written): header at byte 0 with its binary comment, nothing after the last %%EOF (codes as pikepdf.pdfa's); and
    a file qpdf had to repair to read (wrong byte offsets, a missing startxref), which a reader can only guess at."""
    header = _HEADER.match(data)
    if not header:
        result.add(ERROR, "PDFA:ISO_19005_3:6.1.2-1", "The file header does not begin at byte 0 as %PDF-1.n (n 0 to 7) followed "
                   "by an end-of-line marker" + (" (bytes precede it)" if b"%PDF-" in data[1:1024] else "") + ".",
                   "header", de="Der Dateikopf beginnt nicht bei Byte 0 als %PDF-1.n (n 0 bis 7) mit folgendem "
                   "Zeilenende.")
    elif not (data[header.end():header.end() + 1] == b"%"
              and all(byte > 127 for byte in data[header.end() + 1:header.end() + 5])):
        result.add(ERROR, "PDFA:ISO_19005_3:6.1.2-2", "The header line is not followed by a comment of at least four bytes "
                   "above 127 (the binary marker).", "header",
                   de="Auf die Kopfzeile folgt kein Kommentar mit mindestens vier Bytes über 127 (Binärkennung).")
    end = data.rfind(b"%%EOF")
    if end < 0 or data[end + 5:] not in _EOL_ONLY:
        result.add(ERROR, "PDFA:ISO_19005_3:6.1.3-3", "Data follows the last end-of-file marker (%%EOF)" if end >= 0 else
                   "The file has no end-of-file marker (%%EOF): it is truncated or damaged.", "trailer",
                   de="Auf die letzte Dateiende-Markierung (%%EOF) folgen Daten." if end >= 0 else
                   "Die Datei hat keine Dateiende-Markierung (%%EOF): sie ist abgeschnitten oder beschädigt.")
    repaired = [qpdf_message(Exception(w)) for w in pdf.get_warnings()]
    if repaired:
        result.add(ERROR, "PDF_DAMAGED", "The file is damaged and had to be repaired to be read "
                   f"({'; '.join(repaired[:3])}); readers may see other content than the sender's.", "trailer",
                   de="Die Datei ist beschädigt und musste zum Lesen repariert werden; Leser sehen womöglich anderen "
                   "Inhalt als der Absender.")


@contextmanager
def _collecting_only_new_garbage():
    """What is alive when the PDF/A walk starts stays out of collections during it (gc.freeze; unfrozen after).
    pikepdf's content check records every Python warning raised while its (C++) parser runs on a stream as a
    finding about the stream (`catch_warnings`, "always"); a collection its allocations set off would run the
    finalisers of garbage from elsewhere in the process: the ResourceWarning of a socket left unclosed
    ("unclosed <socket.socket ...>") called a valid PDF invalid. The walk's own garbage is still collected, so an
    uploaded PDF's walk stays bounded in memory (`pipeline.pdf.collector`)."""
    gc.freeze()
    try:
        yield
    finally:
        # What the walk left in cycles (fontTools' glyphs of the PDF's fonts, ~10,000 objects) is collected here,
        # while the rest of the process is still frozen: cheap (only the walk's objects are looked at) and no other
        # finaliser runs. Left to the collector, it stayed: freeze() sets every generation's count to 0, so a
        # process checking one PDF after another never reached a full collection (+6 MB a PDF; 200 requests to
        # /zugferd/validate grew a worker by 535 MB, a `pipeline worker` grew by 420 MB a 504-document job).
        gc.collect()
        gc.unfreeze()


class CheckTimeout(BaseException):
    """A BaseException: pikepdf.pdfa turns every Exception inside the walk into a finding."""


@contextmanager
def _time_limit(seconds: float):
    """Interrupt the (pure Python) PDF/A walk after `seconds`. Only in the main thread, where gunicorn's sync
    workers run requests; elsewhere the worker timeout is the limit."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def on_alarm(signum, frame):
        raise CheckTimeout()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _undetermined(f: pdfa.Finding) -> bool:
    """A violation the checker derived from something it could not read (here: an OutputIntent whose ICC
    colour space it did not identify) - a construct it does not recognise, so a warning."""
    return f.rule.endswith("6.2.4.3-2") and "OutputIntent colour space None" in f.message


_CID_SYSTEM_INFO = re.compile(r"^obj (\d+) (\d+) \(Font\) /DescendantFonts\[(\d+)\] \(CIDFont\) /CIDSystemInfo$")


def _cid_system_info_is_valid(f: pdfa.Finding, pdf: pikepdf.Pdf) -> bool:
    """pikepdf's schema check of a CIDFont (10.18) takes /Registry and /Ordering of /CIDSystemInfo as the
    references they may be (ISO 32000-1 7.3.10: any value may be an indirect object) and calls the dictionary
    invalid. Our own check of the clause (ISO 32000-1 9.7.3 Table 116, which PDF/A-3 6.2.11.3.1 builds on) decides:
    /Registry and /Ordering strings, /Supplement an integer, each resolved."""
    m = _CID_SYSTEM_INFO.match(f.where or "") if f.rule == "pikepdf:schema-CIDFont" else None
    if m is None:
        return False
    try:
        font = pdf.get_object(int(m[1]), int(m[2]))
        info = font.get("/DescendantFonts")[int(m[3])].get("/CIDSystemInfo")
        return (isinstance(info, pikepdf.Dictionary) and isinstance(info.get("/Registry"), pikepdf.String)
                and isinstance(info.get("/Ordering"), pikepdf.String) and isinstance(info.get("/Supplement"), int))
    except (*_DAMAGE, IndexError, KeyError, AttributeError):
        return False  # not what the finding describes: it stands


def _known_false_alarm(f: pdfa.Finding, declared: dict[str, set[str]], prefixes: dict[str, str],
                       result: Inspection) -> bool:
    if f.rule.endswith("6.6.2.3.1-1"):
        m = _NOT_PERMITTED.search(f.message)
        if not m:
            return False
        if m.group("uri"):
            uri = m.group("uri")
            return uri in EXTENSION_NAMESPACES and bool(declared) or uri in declared
        prefix, _, name = m.group("qname").partition(":")
        uri = prefixes.get(prefix)
        if uri == EXT and name == "schemas":
            return bool(declared)
        return name in declared.get(uri, set())
    if f.rule.endswith("6.6.4-3"):  # part-3 files of level A or U are checked as 3b
        return result.pdfa_part == "3" and result.pdfa_conformance in ("A", "U")
    if f.rule == "pikepdf:schema-Catalog" and "/PageMode" in f.where and "/UseAttachments" in f.message:
        return True
    return False


# --- the embedded invoice --------------------------------------------------------------------------------

def _file_specs(pdf: pikepdf.Pdf) -> list[tuple[str, pikepdf.Dictionary]]:
    """The file specifications of the name tree and of the catalog's /AF array (objects of another type, as in a
    damaged file, are passed over)."""
    specs: list[tuple[str, pikepdf.Dictionary]] = []
    names = pdf.Root.get("/Names")
    tree = names.get("/EmbeddedFiles") if isinstance(names, pikepdf.Dictionary) else None
    if isinstance(tree, pikepdf.Dictionary):
        for name, spec in pikepdf.NameTree(tree).items():
            budget.check()  # thousands of files: the request's time budget bounds the work, not the file's size
            if isinstance(spec, pikepdf.Dictionary):
                specs.append((_pdf_text(spec.get("/UF", spec.get("/F", name))), spec))
    listed = {s.objgen for _, s in specs if s.is_indirect}
    for spec in _catalog_af(pdf):  # associated files not in the name tree
        if not (spec.is_indirect and spec.objgen in listed):
            specs.append((_pdf_text(spec.get("/UF", spec.get("/F", ""))), spec))
    return specs


def _catalog_af(pdf: pikepdf.Pdf) -> list[pikepdf.Dictionary]:
    af = pdf.Root.get("/AF")
    return [a for a in af if isinstance(a, pikepdf.Dictionary)] if isinstance(af, pikepdf.Array) else []


def _extract_invoice(pdf: pikepdf.Pdf, result: Inspection, read_other_files: bool = False) -> None:
    specs = _file_specs(pdf)
    named = ([result.fx["DocumentFileName"]] if "DocumentFileName" in result.fx else []) + list(INVOICE_FILE_NAMES)
    wanted = [n.lower() for n in named]
    # Each name spelt exactly before another spelling of it: a file 'FACTUR-X.XML' sorts before 'factur-x.xml' in
    # the name tree and must not take the invoice's place.
    chosen = next(((n, s) for w in named for exact in (True, False) for n, s in specs
                   if (n == w if exact else n.lower() == w.lower())), None)
    if chosen is None:
        result.add(ERROR, "FX_NO_EMBEDDED_INVOICE", "The PDF carries no embedded invoice XML "
                   f"(looked for {', '.join(dict.fromkeys(wanted))}; found {[n for n, _ in specs] or 'no files'}).",
                   de=f"Das PDF trägt keine eingebettete Rechnung (gesucht: {', '.join(dict.fromkeys(wanted))}; "
                      f"gefunden: {', '.join(n for n, _ in specs) or 'keine Dateien'}).")
        return
    name, spec = chosen
    declared = result.fx.get("DocumentFileName")
    if declared is not None and declared.lower() != name.lower():  # read by its usual name instead
        result.add(WARNING, "XMP_FX_DOCUMENT_FILE_NAME", f"The XMP's fx:DocumentFileName is {declared!r}, but the "
                   f"PDF embeds no file of that name; the invoice read is {name!r}.",
                   de=f"fx:DocumentFileName der XMP-Metadaten ist {declared!r}, das PDF enthält aber keine Datei "
                      f"dieses Namens; gelesen wurde die Rechnung {name!r}.")
    result.other_files = []
    rivals = []  # other files a receiver's software may take for the invoice
    for other_name, other in specs:
        if other is not spec:
            budget.check()
            result.other_files.append(_other_file(other_name, other, read_other_files))
            if other_name.lower() in wanted:
                rivals.append((other_name, other))
    result.file_name = name
    rel = spec.get("/AFRelationship")
    result.relationship = _pdf_text(rel)
    if not any(a.objgen == spec.objgen for a in _catalog_af(pdf)):
        result.add(ERROR, "FX_NOT_ASSOCIATED", f"{name} is not listed in the catalog's /AF array (ISO 19005-3 6.8).",
                   de=f"{name} steht nicht im /AF-Verzeichnis des Katalogs (ISO 19005-3 6.8).")
    if rel is None:
        result.add(ERROR, "FX_AFRELATIONSHIP_MISSING", f"{name} has no /AFRelationship (ISO 19005-3 6.8).",
                   de=f"{name} hat keine /AFRelationship (ISO 19005-3 6.8).")
    elif result.relationship not in RELATIONSHIPS:
        result.add(ERROR, "FX_AFRELATIONSHIP_INVALID", f"{name} has /AFRelationship {result.relationship}.",
                   de=f"{name} hat /AFRelationship {result.relationship}.")
    elif result.relationship not in ("/Data", "/Alternative", "/Source"):
        result.add(WARNING, "FX_AFRELATIONSHIP_UNUSUAL", f"{name} has /AFRelationship {result.relationship}; "
                   "Factur-X expects /Data, /Alternative or /Source.",
                   de=f"{name} hat /AFRelationship {result.relationship}; Factur-X erwartet /Data, /Alternative oder "
                      "/Source.")
    ef = spec.get("/EF")
    stream = ef.get("/UF", ef.get("/F")) if isinstance(ef, pikepdf.Dictionary) else None
    if not isinstance(stream, pikepdf.Stream):
        result.add(ERROR, "FX_EMBEDDED_FILE_BROKEN", f"{name} has no embedded file stream.",
                   de=f"{name} hat keinen eingebetteten Datenstrom.")
        return
    subtype = stream.get("/Subtype")
    result.subtype = _pdf_text(subtype)
    if subtype is None:
        result.add(ERROR, "FX_SUBTYPE_MISSING", f"The embedded file stream of {name} has no /Subtype (MIME type), "
                   "required by ISO 19005-3 6.8.",
                   de=f"Der eingebettete Datenstrom von {name} hat keinen /Subtype (MIME-Typ), den ISO 19005-3 6.8 "
                      "verlangt.")
    elif result.subtype not in ("/text/xml", "/application/xml"):
        result.add(WARNING, "FX_SUBTYPE", f"The embedded file stream of {name} has /Subtype {result.subtype}; "
                   "Factur-X specifies /text#2Fxml.",
                   de=f"Der eingebettete Datenstrom von {name} hat /Subtype {result.subtype}; Factur-X sieht "
                      "/text#2Fxml vor.")
    params = stream.get("/Params")
    if not isinstance(params, pikepdf.Dictionary) or "/ModDate" not in params:
        result.add(WARNING, "FX_PARAMS_MODDATE", f"The embedded file stream of {name} has no /Params /ModDate.",
                   de=f"Der eingebettete Datenstrom von {name} hat kein /Params /ModDate.")
    try:
        result.xml = _bounded_bytes(stream, MAX_STREAM_BYTES)
    except TooLarge as exc:
        result.add(ERROR, "FX_XML_TOO_LARGE", f"The embedded invoice was not read: {exc}.",
                   de="Die eingebettete Rechnung wurde nicht gelesen (zu groß).")
    except (zlib.error, pikepdf.PdfError) as exc:
        result.add(ERROR, "FX_EMBEDDED_FILE_BROKEN", f"The embedded invoice cannot be decoded: {qpdf_message(exc)}",
                   de="Die eingebettete Rechnung lässt sich nicht entpacken.")
    for other_name, other in rivals:
        budget.check()
        if not _same_bytes(other, result.xml):  # the same bytes twice say nothing new
            _second_invoice(result, name, other_name)
            break  # one is enough to withhold the verdict: no reading of every copy a file may list


def _same_bytes(spec: pikepdf.Dictionary, data: bytes | None) -> bool:
    """Whether the file `spec` embeds is `data`, read no further than its length (a rival file is never inflated
    much beyond the invoice it is compared with; 1 MiB at least, so that a copy under a filter bounded only by 64
    times its input, ASCIIHex, is still read)."""
    ef = spec.get("/EF")
    stream = ef.get("/UF", ef.get("/F")) if isinstance(ef, pikepdf.Dictionary) else None
    if data is None or not isinstance(stream, pikepdf.Stream):
        return False
    try:
        return _bounded_bytes(stream, max(len(data), 1 << 20)) == data
    except (TooLarge, zlib.error, pikepdf.PdfError):
        return False


def _second_invoice(result: Inspection, name: str, other: str) -> None:
    """Another embedded file under an invoice file name with other content: which invoice a receiver's software
    reads depends on that software (readers take the first or the last such name), and only one of them was judged
    here, so the report cannot vouch for the PDF's invoice."""
    result.not_checked("FX_SECOND_INVOICE", f"The PDF embeds a second invoice file {other!r} whose content differs "
                       f"from the invoice judged ({name!r}); it was not judged, and a receiver's software may read it "
                       "instead.",
                       de=f"Das PDF enthält eine zweite Rechnungsdatei {other!r} mit anderem Inhalt als die geprüfte "
                          f"Rechnung ({name!r}); sie wurde nicht geprüft, und die Software eines Empfängers liest "
                          "womöglich sie.")


def _other_file(name: str, spec: pikepdf.Dictionary, read: bool) -> OtherFile:
    rel, ef = spec.get("/AFRelationship"), spec.get("/EF")
    stream = ef.get("/UF", ef.get("/F")) if isinstance(ef, pikepdf.Dictionary) else None
    subtype = stream.get("/Subtype") if isinstance(stream, pikepdf.Stream) else None
    found = OtherFile(name, _pdf_text(rel), _pdf_text(subtype))
    if read and isinstance(stream, pikepdf.Stream):
        try:
            found.data = _bounded_bytes(stream, MAX_STREAM_BYTES)
        except (TooLarge, zlib.error, pikepdf.PdfError):
            pass  # left None: the gate reports it as differing
    return found


def _check_xml(result: Inspection, french: packs.Pack | None = None) -> None:
    """The embedded invoice on the rules its guideline id (BT-24) names (`pipeline.check.judging`): the same rules
    and findings as the invoice sent as XML (to the French endpoint with `french`). A ZUGFeRD 1.0 invoice: its XSD,
    and not judged beyond it."""
    try:
        doc = load_xml(result.xml)
    except XmlInputError as exc:
        result.issues.append(exc.issue)
        return
    claim = claims.of_document(doc)
    if claim.root:  # ZUGFeRD 1.0 (its XSD), or its release candidate (no rules of this service): not FX_NOT_CII
        result.zugferd1 = claim.family == claims.ZUGFERD1
        _judged(result, judging.judge(doc, "zugferd", None, None, claim))
        return
    root = doc.tree.getroot()
    if etree.QName(root).namespace != CII_NS or etree.QName(root).localname != "CrossIndustryInvoice":
        result.add(ERROR, "FX_NOT_CII", f"The embedded invoice is {root.tag}, not a CII CrossIndustryInvoice.",
                   de=f"Die eingebettete Rechnung ist {root.tag}, keine CII-CrossIndustryInvoice.")
        return
    result.guideline_id = claim.text
    result.profile = profile_for_guideline(result.guideline_id)
    if claim.family == claims.NONE:  # the error, and still the rules the same invoice gets as XML (the CEN rules)
        result.add(ERROR, "FX_UNKNOWN_PROFILE", "The embedded invoice has no guideline identifier (BT-24), so it "
                   "names no Factur-X/ZUGFeRD profile.",
                   de="Die eingebettete Rechnung hat keine Spezifikationskennung (BT-24) und nennt so kein "
                      "Factur-X-/ZUGFeRD-Profil.")
    level = result.fx.get("ConformanceLevel")
    if result.profile and level and level.upper() != result.profile.level and not (
            level.upper() == "COMFORT" and result.profile.name == "EN16931"):
        # A WARNING, as Factur-X's hybrid rule BR-HYBRID-15 says ("SHOULD match"; Mustang does not compare them):
        # the invoice's own BT-24 decides its rules either way (e.g. an XRechnung invoice under "EN 16931")
        result.add(WARNING, "XMP_FX_LEVEL_MISMATCH", f"fx:ConformanceLevel {level!r} does not match the embedded "
                   f"invoice's profile {result.profile.level!r} (Factur-X BR-HYBRID-15: it should); software that "
                   "takes the profile from the XMP may read the invoice as another profile.",
                   de=f"fx:ConformanceLevel {level!r} passt nicht zum Profil der eingebetteten Rechnung "
                      f"{result.profile.level!r} (Factur-X BR-HYBRID-15: es sollte passen); Software, die das Profil "
                      "aus den XMP-Metadaten liest, liest die Rechnung womöglich als anderes Profil.")
    try:
        sdoc = engine.saxon_document(doc)
    except XmlInputError as exc:
        result.issues.append(exc.issue)
        return
    _judged(result, judging.judge(doc, fr_ctc.SPEC if french is not None else "zugferd", french, sdoc, claim))


def container_rules(result: Inspection) -> Rules:
    """The report's `rules` entry of the PDF's own checks, before the invoice's rules: the PDF/A-3 walk where it
    ran to its end, the Factur-X XMP, the embedded invoice file."""
    steps = ((Step("pdfa", "PDF/A-3b (pikepdf.pdfa)"),) if result.pdfa_checked else ()) + (
        Step("xmp", "Factur-X / ZUGFeRD XMP"), Step("embedded-file", "embedded invoice file"))
    return Rules("pdf", f"pikepdf {pikepdf.__version__}", steps)


def _judged(result: Inspection, checked: Checked) -> None:
    result.judged = checked
    result.issues += checked.issues


def not_a_pdf(exc: NotAPdf) -> ApiError:
    return bad_request("INVALID_PDF", "The uploaded file is not a readable PDF.",
                       [ErrorDetail("INVALID_PDF", str(exc), field="file", messageDe=exc.de)])

