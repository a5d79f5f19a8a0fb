"""The Factur-X container: WeasyPrint's PDF/A-3b pages + our XMP + the validated XML as associated file.

What is written (Factur-X 1.0x / ZUGFeRD 2.x, ISO 19005-3):
- XMP: PDF/A identification (part 3, B), Dublin Core title/creator, dates, and the Factur-X properties
  (fx:DocumentType INVOICE, DocumentFileName, Version, ConformanceLevel) with their PDF/A extension schema
  description. The packet is built with lxml, so user text (title, seller name) is escaped, never pasted.
- The document information dictionary mirrors the XMP (PDF/A requires them to agree).
- The XML as an embedded file stream (/Subtype /text#2Fxml, /Params with ModDate, CreationDate, Size),
  its file specification in the /EmbeddedFiles name tree and in the catalog's /AF array, with the
  profile's /AFRelationship. We never use WeasyPrint attachments (they get /AFRelationship /Unspecified).
- The invoice's supporting documents (BG-24 with an attached document, BT-125) as further associated files
  the same way, with /AFRelationship /Supplement and their MIME code as /Subtype. They never take an
  invoice file name (factur-x.xml, xrechnung.xml, zugferd-invoice.xml) and their names are unique.
- Every annotation gets the Print flag (PDF/A 6.3.2; WeasyPrint writes link annotations without it).
- The pages' text arrays lose their zero kerning adjustments (see `merge_zero_adjustments`): the same page,
  drawn identically, that the PDF/A check reads in a fraction of the time.
"""
from __future__ import annotations

import hashlib
import io
import re
from dataclasses import dataclass
from datetime import datetime, timezone

import pikepdf
from lxml import etree
from pikepdf import Dictionary, Name, String, pdfa

from pipeline.invoice.specs import FACTURX_VERSION, INVOICE_FILE_NAMES, Profile
from pipeline.pdf import bidi

PRODUCER = "einvoice-pipeline (WeasyPrint, pikepdf)"
# What PDF/A checkers accept as an embedded file's /Subtype (veraPDF's pattern for ISO 19005-3 6.8-1).
MIME_TYPE = re.compile(r"[-A-Za-z0-9_+.]+/[-A-Za-z0-9_+.]+")
FX_NS = "urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#"
NS = {
    "x": "adobe:ns:meta/",
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "pdfaid": "http://www.aiim.org/pdfa/ns/id/",
    "dc": "http://purl.org/dc/elements/1.1/",
    "pdf": "http://ns.adobe.com/pdf/1.3/",
    "xmp": "http://ns.adobe.com/xap/1.0/",
    "fx": FX_NS,
    "pdfaExtension": "http://www.aiim.org/pdfa/ns/extension/",
    "pdfaSchema": "http://www.aiim.org/pdfa/ns/schema#",
    "pdfaProperty": "http://www.aiim.org/pdfa/ns/property#",
}
FX_PROPERTIES = (
    ("DocumentFileName", "name of the embedded XML invoice file"),
    ("DocumentType", "INVOICE"),
    ("Version", "The actual version of the Factur-X XML schema"),
    ("ConformanceLevel", "The conformance level of the embedded Factur-X data"),
)


def _q(prefix: str, name: str) -> str:
    return f"{{{NS[prefix]}}}{name}"


def _description(rdf: etree._Element, prefix: str) -> etree._Element:
    return etree.SubElement(rdf, _q("rdf", "Description"), {_q("rdf", "about"): ""}, nsmap={prefix: NS[prefix]})


def _text(parent: etree._Element, prefix: str, name: str, value: str) -> etree._Element:
    el = etree.SubElement(parent, _q(prefix, name))
    el.text = value
    return el


def build_xmp(profile: Profile, title: str, author: str, when: datetime) -> bytes:
    """The XMP packet (UTF-8) for a Factur-X PDF/A-3b document."""
    stamp = when.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    meta = etree.Element(_q("x", "xmpmeta"), nsmap={"x": NS["x"]})
    rdf = etree.SubElement(meta, _q("rdf", "RDF"), nsmap={"rdf": NS["rdf"]})

    d = _description(rdf, "pdfaid")
    _text(d, "pdfaid", "part", "3")
    _text(d, "pdfaid", "conformance", "B")

    d = _description(rdf, "dc")
    _text(d, "dc", "format", "application/pdf")
    alt = etree.SubElement(etree.SubElement(d, _q("dc", "title")), _q("rdf", "Alt"))
    li = _text(alt, "rdf", "li", title)
    li.set("{http://www.w3.org/XML/1998/namespace}lang", "x-default")
    seq = etree.SubElement(etree.SubElement(d, _q("dc", "creator")), _q("rdf", "Seq"))
    _text(seq, "rdf", "li", author)

    d = _description(rdf, "pdf")
    _text(d, "pdf", "Producer", PRODUCER)

    d = _description(rdf, "xmp")
    _text(d, "xmp", "CreatorTool", PRODUCER)
    _text(d, "xmp", "CreateDate", stamp)
    _text(d, "xmp", "ModifyDate", stamp)
    _text(d, "xmp", "MetadataDate", stamp)

    d = _description(rdf, "fx")
    _text(d, "fx", "DocumentType", "INVOICE")
    _text(d, "fx", "DocumentFileName", profile.file_name)
    _text(d, "fx", "Version", FACTURX_VERSION)
    _text(d, "fx", "ConformanceLevel", profile.level)

    # The PDF/A extension schema description of the fx properties (ISO 19005-3 6.6.2.3.2).
    d = etree.SubElement(rdf, _q("rdf", "Description"), {_q("rdf", "about"): ""},
                         nsmap={p: NS[p] for p in ("pdfaExtension", "pdfaSchema", "pdfaProperty")})
    bag = etree.SubElement(etree.SubElement(d, _q("pdfaExtension", "schemas")), _q("rdf", "Bag"))
    schema = etree.SubElement(bag, _q("rdf", "li"), {_q("rdf", "parseType"): "Resource"})
    _text(schema, "pdfaSchema", "schema", "Factur-X PDFA Extension Schema")
    _text(schema, "pdfaSchema", "namespaceURI", FX_NS)
    _text(schema, "pdfaSchema", "prefix", "fx")
    props = etree.SubElement(etree.SubElement(schema, _q("pdfaSchema", "property")), _q("rdf", "Seq"))
    for name, description in FX_PROPERTIES:
        li = etree.SubElement(props, _q("rdf", "li"), {_q("rdf", "parseType"): "Resource"})
        _text(li, "pdfaProperty", "name", name)
        _text(li, "pdfaProperty", "valueType", "Text")
        _text(li, "pdfaProperty", "category", "external")
        _text(li, "pdfaProperty", "description", description)

    body = etree.tostring(meta, encoding="utf-8")
    return (b'<?xpacket begin="\xef\xbb\xbf" id="W5M0MpCehiHzreSzNTczkc9d"?>\n' + body +
            b'\n<?xpacket end="w"?>')


def _pdf_date(when: datetime) -> str:
    return when.strftime("D:%Y%m%d%H%M%S+00'00'")


def _drop_empty_resources(pdf: pikepdf.Pdf) -> None:
    """WeasyPrint writes empty /Pattern and /Shading resource dictionaries; they carry nothing and the
    allowlist checker cannot vouch for them, so they go."""
    for obj in pdf.objects:
        if isinstance(obj, Dictionary) and not isinstance(obj, pikepdf.Stream):
            for key in ("/Pattern", "/Shading"):
                value = obj.get(key)
                if isinstance(value, Dictionary) and len(value.keys()) == 0:
                    del obj[key]


# A TJ array of hex strings and numbers, as WeasyPrint writes each run of text: [<002c>0<0051>-91<0059>0] TJ
_TJ_ARRAY = re.compile(rb"\[((?:<[0-9A-Fa-f]*>|-?[0-9]*\.?[0-9]+)+)\]\s*TJ")
_ZERO = re.compile(rb">0(?=<|$)")
_ZERO_LAST = re.compile(rb">0\]\s*TJ")
_ODD_HEX = re.compile(rb"<(?:[0-9A-Fa-f]{2})*[0-9A-Fa-f]>")  # a final digit alone reads as d0: never joined
_INLINE_IMAGE = re.compile(rb"(?:^|\s)BI\s")  # (searched only where "BI" occurs at all: slow at every byte)


def _merged(match: re.Match) -> bytes:
    items = match.group(1)
    if _ODD_HEX.search(items):
        return match.group(0)
    return b"[" + _ZERO.sub(b">", items).replace(b"><", b"") + b"] TJ"


def merge_zero_adjustments(content: bytes) -> bytes:
    """Content with every 0 between two strings of a TJ array dropped and the strings joined.

    WeasyPrint ends nearly every glyph with an adjustment, the difference between Pango's advance and the font's
    rounded width, which is 0 after its int() for almost all glyphs; each one still splits the array into
    one-glyph strings. A 0 moves nothing (ISO 32000-1 9.4.3), so the page is drawn the same; the PDF/A check
    decodes each string separately (300 lines: about 40,000 strings per file, a quarter of its time)."""
    if b"<<" in content or b"BI" in content and _INLINE_IMAGE.search(content) or _ODD_HEX.search(content):
        return _TJ_ARRAY.sub(_merged, content)  # array by array (16 ms for a 300-line invoice)
    # No dictionary, inline image or string of half a byte (WeasyPrint's pages): hex strings stand only in TJ
    # arrays, and ">0<" only between two of them. Two passes in C (4 ms).
    return _ZERO_LAST.sub(b">] TJ", content.replace(b">0<", b""))


def _merge_page_text(pdf: pikepdf.Pdf) -> None:
    for page in pdf.pages:
        contents = page.obj.get("/Contents")
        for stream in (contents if isinstance(contents, pikepdf.Array) else [contents]):
            if isinstance(stream, pikepdf.Stream):
                data = stream.read_bytes()
                merged = merge_zero_adjustments(data)
                if merged != data:
                    stream.write(merged)  # compressed again by save (compress_streams)


@dataclass(frozen=True)
class Attachment:
    """A supporting document (BG-24) whose file the invoice carries (BT-125), to embed next to the XML."""

    name: str                       # BT-125-2
    data: bytes
    mime_type: str                  # BT-125-1
    description: str | None = None


def subtype_for(mime_type: str) -> Name:
    """The MIME type as /Subtype (written as e.g. /application#2Fpdf); anything else is octet-stream."""
    mime_type = mime_type.strip().lower()
    return Name("/" + (mime_type if MIME_TYPE.fullmatch(mime_type) else "application/octet-stream"))


def _ascii(name: str) -> str:
    """/F is a byte string for older readers; /UF carries the name as sent."""
    return "".join(c if " " <= c < "\x7f" else "_" for c in name)


def attachment_names(attachments: list[Attachment] | tuple[Attachment, ...]) -> list[str]:
    """Names the attachments are embedded under: path separators, control characters and bidi controls replaced
    (an override makes "x<RLO>fdp.exe" look like "xexe.pdf" in a reader's attachment list), never an invoice file
    name, unique ignoring case (a repeated name becomes `name (2).ext`)."""
    taken = set(INVOICE_FILE_NAMES)  # a reader must not take a supporting document for the invoice
    names = []
    for a in attachments:
        clean = re.sub(rf"[\x00-\x1f\x7f/\\{bidi.CONTROLS}]", "_", a.name).strip() or "attachment"
        stem, dot, ext = clean.rpartition(".") if "." in clean.lstrip(".") else (clean, "", "")
        name, n = clean, 1
        while name.casefold() in taken:
            n += 1
            name = f"{stem} ({n}){dot}{ext}"
        taken.add(name.casefold())
        names.append(name)
    return names


def _embed_file(pdf: pikepdf.Pdf, data: bytes, name: str, subtype: Name, relationship: str, description: str,
                when: datetime) -> pikepdf.Dictionary:
    """An embedded file stream and its file specification (ISO 19005-3 6.8); returns the (indirect) spec."""
    stream = pikepdf.Stream(pdf, data)
    stream.Type = Name.EmbeddedFile
    stream.Subtype = subtype
    stream.Params = Dictionary(
        ModDate=String(_pdf_date(when)),
        CreationDate=String(_pdf_date(when)),
        Size=len(data),
        CheckSum=String(hashlib.md5(data).digest()),
    )
    return pdf.make_indirect(Dictionary(
        Type=Name.Filespec,
        F=String(_ascii(name)),
        UF=String(name),
        Desc=String(description),
        AFRelationship=Name("/" + relationship),
        EF=Dictionary(F=stream, UF=stream),
    ))


def embed_facturx(pages_pdf: bytes, xml: bytes, profile: Profile, title: str, author: str,
                  when: datetime | None = None, attachments: tuple[Attachment, ...] | list[Attachment] = ()) -> bytes:
    """WeasyPrint PDF/A-3b bytes + validated XML (+ supporting documents) -> the Factur-X PDF (bytes). Every stream
    comes out Flate-compressed (pikepdf `compress_streams`; the XMP packet stays readable), also those of pages
    rendered uncompressed."""
    when = (when or datetime.now(timezone.utc)).replace(microsecond=0)
    with pikepdf.open(io.BytesIO(pages_pdf)) as pdf:
        if "/Names" in pdf.Root and "/EmbeddedFiles" in pdf.Root.Names:
            raise ValueError("the rendered pages already carry embedded files")  # we add exactly ours
        pdfa.repair_annotation_flags(pdf)
        _drop_empty_resources(pdf)
        _merge_page_text(pdf)

        description = "Factur-X/ZUGFeRD invoice data" if not profile.xrechnung else "XRechnung invoice data"
        specs = [(profile.file_name, _embed_file(pdf, xml, profile.file_name, Name("/text/xml"),
                                                 profile.relationship, description, when))]
        for a, name in zip(attachments, attachment_names(attachments)):
            specs.append((name, _embed_file(pdf, a.data, name, subtype_for(a.mime_type), "Supplement",
                                            a.description or name, when)))
        names = pdf.Root.get("/Names")
        if names is None:
            names = pdf.Root.Names = pdf.make_indirect(Dictionary())
        tree = pikepdf.NameTree.new(pdf)  # keeps the keys sorted, as name trees must be
        for name, spec in specs:
            tree[name] = spec
        names.EmbeddedFiles = tree.obj
        pdf.Root.AF = pikepdf.Array([spec for _, spec in specs])

        xmp = pikepdf.Stream(pdf, build_xmp(profile, title, author, when))
        xmp.Type = Name.Metadata
        xmp.Subtype = Name.XML
        pdf.Root.Metadata = pdf.make_indirect(xmp)
        pdf.trailer.Info = pdf.make_indirect(Dictionary(
            Title=String(title), Author=String(author), Producer=String(PRODUCER), Creator=String(PRODUCER),
            CreationDate=String(_pdf_date(when)), ModDate=String(_pdf_date(when)),
        ))
        out = io.BytesIO()
        kwargs = pdfa.resolve_save_kwargs("3b")
        kwargs["fix_metadata_version"] = False  # keep our XMP exactly as built
        pdf.save(out, **kwargs)
        return out.getvalue()
