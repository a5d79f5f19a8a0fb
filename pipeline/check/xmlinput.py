"""Safe parsing of untrusted XML and syntax detection.

lxml parses with no DTD loading, no entity resolution and no network; a document that
carries a DOCTYPE (and with it any ENTITY declaration) is rejected outright, so XXE and entity expansion
("billion laughs") never happen. Findings are `Issue`s with a stable code and the line/column of the problem.
"""
from __future__ import annotations

import bisect
import itertools
import json
import re
from dataclasses import dataclass, field

from lxml import etree

from pipeline import budget, unpack
from pipeline.check.report import ERROR, Issue, Location

CII_NS = "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"
UBL_INVOICE_NS = "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"
UBL_CREDITNOTE_NS = "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2"

# France's lifecycle status messages (CDV, UN/CEFACT CDAR D22B): no invoice syntax; the fr-cdar pack judges them.
CDAR_NS = "urn:un:unece:uncefact:data:standard:CrossDomainAcknowledgementAndResponse:100"
CDAR_ROOT = f"{{{CDAR_NS}}}CrossDomainAcknowledgementAndResponse"

# (namespace, local name) of the root -> syntax key used by the rule packs.
ROOTS = {
    (CII_NS, "CrossIndustryInvoice"): "CII",
    (UBL_INVOICE_NS, "Invoice"): "UBL-Invoice",
    (UBL_CREDITNOTE_NS, "CreditNote"): "UBL-CreditNote",
}

# Stable issue codes for findings that are not official rules.
XML_EMPTY = "XML-EMPTY"
XML_MALFORMED = "XML-MALFORMED"
XML_DTD_FORBIDDEN = "XML-DTD-FORBIDDEN"
XML_UNKNOWN_ROOT = "XML-UNKNOWN-ROOT"

# huge_tree: libxml2's default limits refuse a text node over 10 MB, i.e. an invoice carrying a supporting document
# (BT-125, base64) of about 7.5 MB or more, which the official validators read. What that mode lifts is otherwise
# bounded: entities and DTDs never get in (above), the size by the upload limit, and the depth here (MAX_DEPTH, the
# limit SaxonC 13's parser applies too; SaxonC 12's applies none, and an e-invoice nests about 10 levels).
_PARSER_OPTIONS = dict(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True,
                       dtd_validation=False, remove_blank_text=False)
_DOCTYPE = re.compile(rb"<!(DOCTYPE|ENTITY)", re.IGNORECASE)
MAX_DEPTH = 100
# The first element deeper than MAX_DEPTH: one child step per level, so each element is visited once (1.4 ms on a
# 2.5 MB invoice of 1,000 lines, 6 us on a typical one; an ancestor test per element costs 6 x that).
_TOO_DEEP = "(" + "/*" * (MAX_DEPTH + 1) + ")[1]"
_too_deep_first = etree.XPath(_TOO_DEEP)  # compiled once (lxml locks an evaluator per call: safe in threads)


class XmlInputError(Exception):
    """The input is not a well-formed, acceptable XML document; `issue` says why and where."""

    def __init__(self, issue: Issue):
        super().__init__(issue.message)
        self.issue = issue


# ---------------------------------------------------------------- locating findings in the parsed document
# Schematron reports a finding's node as a location path; ParsedXml.locate() turns it into line/column by
# walking the lxml tree (no XPath compilation per finding).

# One step of a location path as the Schematron compilers write them: `Q{ns}local[n]` (SchXslt),
# `*:local[namespace-uri()='ns'][n]` (ISO skeleton), `prefix:local[n]`, `local[n]`, `*[n]`.
_STEP = re.compile(r"""^(?:Q\{(?P<ns>[^}]*)\}(?P<qlocal>[^\[]+)
                        |\*:(?P<slocal>[^\[]+)(?:\[namespace-uri\(\)=['"](?P<sns>[^'"]*)['"]\])?
                        |(?:[^:\[]+:)?(?P<local>[^\[:]+))
                       (?:\[(?P<index>\d+)\])?$""", re.X)
LONG_LINE = 4096  # characters: a line longer than this is located by counting start tags (see start_of)
_FIRST_LINES_CHUNK = 2048  # characters of text split into lines at first (ParsedXml._lines_to)
# Comments, CDATA sections, PIs (skipped whole) or the '<' of a start tag.
_MARKUP = re.compile(r"<!--.*?-->|<!\[CDATA\[.*?\]\]>|<\?.*?\?>|<(?![/!?])", re.S)
_PATH_STEP = re.compile(r"""(?:Q\{[^}]*\}|\[(?:[^\]'"]|'[^']*'|"[^"]*")*\]|[^/\[{])+""")


def _split_path(xpath: str) -> list[str]:
    """Split a location path into steps on '/' outside {...} and [...] (namespace URIs contain slashes)."""
    return _PATH_STEP.findall(xpath)


@dataclass
class ParsedXml:
    tree: etree._ElementTree
    text: str  # the document as decoded characters (what Saxon parses)
    syntax: str | None  # "CII" | "UBL-Invoice" | "UBL-CreditNote" | None (unknown root)
    root_name: str  # Clark name of the root element
    _line_starts: list[int] | None = None  # lazy, for locate(): where lines begin, as far as read (_lines_to)
    _all_lines: bool = False  # _line_starts covers the whole text (and ends with len(text) + 1)
    _scan: tuple | None = None  # lazy, for locate() in minified XML: start tags and elements in document order
    _children: dict = field(default_factory=dict)  # (parent, tag) -> its children of that tag, for element_at
    _positions: dict = field(default_factory=dict)  # element -> (n, of), for position

    @property
    def report_syntax(self) -> str | None:
        """Syntax as the report names it: CII or UBL."""
        return None if self.syntax is None else ("CII" if self.syntax == "CII" else "UBL")

    def element_at(self, xpath: str):
        """The element a Schematron location path points at (for attribute/text steps: their element), or
        None if the path does not resolve. Walks the lxml tree: no XPath compilation per finding."""
        node = None
        for step in _split_path(xpath):
            if step.startswith(("@", "text()", "node()", "comment()", "processing-instruction(")):
                break  # attribute / text() / node(): located on the element that holds it
            m = _STEP.match(step)
            if m is None:
                return None
            local = m.group("qlocal") or m.group("slocal") or m.group("local")
            ns = m.group("ns") if m.group("qlocal") else m.group("sns")
            if local == "*":
                tag = "*"
            elif ns is None:
                tag = "{*}" + local
            else:
                tag = f"{{{ns}}}{local}" if ns else local
            index = int(m.group("index") or 1)
            if node is None:
                root = self.tree.getroot()
                candidates = [root] if tag == "*" or etree.QName(root).localname == local and \
                    (ns is None or (etree.QName(root).namespace or "") == ns) else []
            else:
                candidates = self._children_named(node, tag)
            node = candidates[index - 1] if 0 < index <= len(candidates) else None
            if node is None:
                return None
        return node

    def position(self, element) -> tuple[int, int]:
        """(n, of): `element` is the n-th of `of` children of its parent with its tag. Each parent's children are
        counted once (the keys keep the lxml proxies alive): counting preceding siblings per finding or unmapped
        value was quadratic over a value per line."""
        hit = self._positions.get(element)
        if hit is None:
            parent = element.getparent()
            if parent is None:
                return 1, 1
            groups: dict[str, list] = {}
            for child in parent.iterchildren(etree.Element):
                groups.setdefault(child.tag, []).append(child)
            for same in groups.values():
                for n, child in enumerate(same, 1):
                    self._positions[child] = (n, len(same))
            hit = self._positions[element]
        return hit

    def _children_named(self, parent, tag: str) -> list:
        """The children of `parent` with `tag`, listed once per document: a finding on the n-th of thousands of
        lines would otherwise walk n siblings (quadratic over a finding per line). The key keeps the lxml proxy
        alive, so the same node always gives the same key."""
        key = (parent, tag)
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = list(parent.iterchildren(tag=tag))
        return children

    def locate(self, xpath: str | None) -> "Location":
        """Location of the element `xpath` points at: line and column where its start tag begins."""
        loc = Location(xpath=xpath or None)
        element = self.element_at(xpath) if xpath else None
        if element is None:
            return loc
        loc.line, loc.column = self.start_of(element)
        return loc

    def start_of(self, element) -> tuple[int | None, int | None]:
        """Line and column where the element's start tag begins. lxml only keeps the line where the start tag
        ends: look for '<qname' on that line (or, for a start tag spread over lines, before it); only when
        the line holds several such tags, or is long (minified XML: searching the one line per finding was
        quadratic, 4.7 of 8.6 s for 1,000 findings on 2,000 lines), count elements to know which one it is."""
        line = element.sourceline
        starts = self._lines_to(line or 0)
        if not line or line >= len(starts):
            return line, None
        begin, end = starts[line - 1], starts[line] - 1
        offset = self._nth_start_tag(element) if end - begin > LONG_LINE else self._on_line(element, begin, end)
        if offset is None:
            return line, None
        line = bisect.bisect_right(starts, offset)
        return line, offset - starts[line - 1] + 1

    def _lines_to(self, line: int) -> list[int]:
        """Offsets where lines begin, read as far as the start of line `line + 1` (all of them, ending with
        len(text) + 1, when the text has no more lines): a finding near the top of a long document no longer splits
        all of it (the whole table cost ~30 us on a typical invoice, ~0.45 ms on a 150 KB one, for one finding on
        line 2 or 77). Read in chunks that double (C-level splits, a few rounds even for a finding at the end)."""
        starts = self._line_starts
        if starts is None:
            starts = self._line_starts = [0]
        text = self.text
        while len(starts) <= line and not self._all_lines:
            at = starts[-1]
            end = at + max(_FIRST_LINES_CHUNK, at)
            # whole lines: up to the last line break in the chunk, or the end of a line longer than the chunk (an
            # attachment's base64 on one line is read only when a finding is on it or below)
            stop = -1 if end >= len(text) else text.rfind("\n", at, end)
            if stop < 0 and end < len(text):
                stop = text.find("\n", end)
            if stop < 0:  # the rest: split as a whole, so the last entry is len(text) + 1 as it always was
                chunk, self._all_lines = text[at:], True
            else:
                chunk = text[at:stop]  # the line break itself ends the last line read
            lengths = map((1).__add__, map(len, chunk.split("\n")))
            starts += itertools.islice(itertools.accumulate(lengths, initial=at), 1, None)
        return starts

    def _on_line(self, element, begin: int, end: int) -> int | None:
        """Offset of the element's start tag, searched for on the line from `begin` to `end` where it ends."""
        local = etree.QName(element).localname
        tag = re.compile(re.escape("<" + (f"{element.prefix}:{local}" if element.prefix else local)) + r"[\s/>]")
        found = [m.start() for m in tag.finditer(self.text, begin, end)]
        if len(found) == 1:
            return found[0]
        if not found:  # the start tag began on an earlier line
            before = [m.start() for m in tag.finditer(self.text, max(0, begin - 4096), begin)]
            return before[-1] if before else None
        return self._nth_start_tag(element)

    def _nth_start_tag(self, element) -> int | None:
        """Offset of the element's start tag by document order: the n-th element is the n-th start tag in
        the text (comments, CDATA and PIs skipped). Scanned lazily and remembered for further findings."""
        if self._scan is None:
            self._scan = ([], _MARKUP.finditer(self.text), {}, self.tree.getroot().iter(etree.Element))
        starts, tokens, order, elements = self._scan
        while element not in order:
            el = next(elements, None)
            if el is None:
                return None
            order[el] = len(order)
        i = order[element]
        while len(starts) <= i:
            m = next(tokens, None)
            if m is None:
                return None
            if m.group() == "<":
                starts.append(m.start())
        return starts[i]


def _issue(code: str, message: str, line: int | None = None, column: int | None = None,
           de: str | None = None) -> Issue:
    """A finding of reading; `de`: its message in German, for the reports for people in German."""
    issue = Issue(ERROR, code, message, Location(xpath=None, line=line, column=column))
    issue.message_de = de
    return issue


_DTD_DE = "DOCTYPE- und ENTITY-Deklarationen sind in E-Rechnungen nicht erlaubt; das Dokument wurde nicht verarbeitet."


def _malformed_de(line: int | None, column: int | None) -> str:
    """XML-MALFORMED in German with the place reading stopped: a job's list and its JSON lines show no excerpt, and
    "the excerpt shows where reading stopped" pointed at none there."""
    if not line:
        return "Die Datei ist kein wohlgeformtes XML."
    return f"Die Datei ist kein wohlgeformtes XML: Das Lesen brach in Zeile {line}, Spalte {column or 1} ab."


def _line_of(data: bytes, offset: int) -> tuple[int, int]:
    start = data.rfind(b"\n", 0, offset) + 1
    return data.count(b"\n", 0, offset) + 1, offset - start + 1


def _ascii_view(data: bytes) -> bytes:
    """The bytes to scan for markup: UTF-16/32 input (BOM or NUL bytes in the first characters) is transcoded
    so that a DOCTYPE cannot hide behind the encoding."""
    head = data[:4]
    for codec, marks in (("utf-32", (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff", b"<\x00\x00\x00", b"\x00\x00\x00<")),
                         ("utf-16", (b"\xff\xfe", b"\xfe\xff")), ("utf-16-le", (b"<\x00",)), ("utf-16-be", (b"\x00<",))):
        if any(head.startswith(m) for m in marks):
            return data.decode(codec, errors="replace").encode("utf-8", errors="replace")
    return data


def _parser() -> etree.XMLParser:
    return etree.XMLParser(**_PARSER_OPTIONS)


_BATCH = ("The invoices in it are checked by the batch endpoint of the rules (POST /v1/invoice/xrechnung/validate/batch "
          "and the others) or as a job (POST /v1/jobs).",
          "Die Rechnungen darin prüft der Batch-Endpunkt der Regeln (POST /v1/invoice/xrechnung/validate/batch und die "
          "anderen) oder ein Auftrag (POST /v1/jobs).")
_CONTAINERS = {
    "pdf": ("The file is a PDF, not XML. A ZUGFeRD / Factur-X PDF is checked with its embedded invoice by POST "
            "/v1/invoice/zugferd/validate.",
            "Die Datei ist ein PDF, kein XML. Ein ZUGFeRD-/Factur-X-PDF wird mit seiner eingebetteten Rechnung über "
            "POST /v1/invoice/zugferd/validate geprüft."),
    "zip": (f"The file is a ZIP archive, not XML. {_BATCH[0]}", f"Die Datei ist ein ZIP-Archiv, kein XML. {_BATCH[1]}"),
    "eml": (f"The file is an e-mail message, not XML. {_BATCH[0]}",
            f"Die Datei ist eine E-Mail-Nachricht, kein XML. {_BATCH[1]}"),
    "mbox": (f"The file is a mailbox (mbox), not XML. {_BATCH[0]}",
             f"Die Datei ist ein Postfach (mbox), kein XML. {_BATCH[1]}"),
    "emlx": (f"The file is an Apple Mail message (.emlx), not XML. {_BATCH[0]}",
             f"Die Datei ist eine Apple-Mail-Nachricht (.emlx), kein XML. {_BATCH[1]}"),
    "p7m": (f"The file is a signed file (PKCS#7 / CMS, .p7m), not XML. {_BATCH[0]}",
            f"Die Datei ist eine signierte Datei (PKCS#7 / CMS, .p7m), kein XML. {_BATCH[1]}"),
}


_GENERATE = ("the generation endpoint of its rules (POST /v1/invoice/xrechnung, /v1/invoice/en16931, "
             "/v1/invoice/fr-ctc, /v1/invoice/peppol or /v1/invoice/zugferd; `pipeline generate FILE --spec ...` on "
             "the command line)",
             "an den Erzeugungs-Endpunkt ihrer Regeln (POST /v1/invoice/xrechnung, /v1/invoice/en16931, "
             "/v1/invoice/fr-ctc, /v1/invoice/peppol oder /v1/invoice/zugferd; `pipeline generate DATEI --spec ...` "
             "auf der Kommandozeile)")
_JSON = {
    "status": ("The file is a status request in JSON (message, status, invoice), not XML. POST it as the request body "
               "(Content-Type: application/json) to /v1/invoice/fr-ctc/status (`pipeline generate FILE` on the "
               "command line), which generates the lifecycle status message (CDAR XML) from it; POST "
               "/v1/invoice/fr-ctc/status/validate validates such a message.",
               "Die Datei ist eine Statusanfrage in JSON (message, status, invoice), kein XML. Als Anfrage-Body "
               "(Content-Type: application/json) an POST /v1/invoice/fr-ctc/status senden (`pipeline generate DATEI` "
               "auf der Kommandozeile), das daraus die Statusmeldung (CDAR-XML) erzeugt; POST "
               "/v1/invoice/fr-ctc/status/validate prüft eine solche Meldung."),
    "invoice": (f"The file is an invoice request in JSON (invoice, config), not XML. POST it as the request body "
                f"(Content-Type: application/json) to {_GENERATE[0]}, which generates the e-invoice from it and "
                "validates it; validation takes the generated XML or PDF.",
                f"Die Datei ist eine Rechnungsanfrage in JSON (invoice, config), kein XML. Als Anfrage-Body "
                f"(Content-Type: application/json) {_GENERATE[1]} senden, der daraus die E-Rechnung erzeugt und "
                "prüft; die Prüfung nimmt das erzeugte XML oder PDF."),
    "other": ("The file is JSON, not XML: validation takes an XML document (an invoice in CII or UBL, a status "
              "message in CDAR) or a ZUGFeRD / Factur-X PDF.",
              "Die Datei ist JSON, kein XML: geprüft wird ein XML-Dokument (eine Rechnung in CII oder UBL, eine "
              "Statusmeldung in CDAR) oder ein ZUGFeRD-/Factur-X-PDF."),
}
STATUS_REQUEST_KEYS = {"message", "status", "invoice"}   # pipeline.invoice.cdar.StatusRequest's top level


def json_request_kind(data: bytes) -> str | None:
    """What JSON `data` is: "status" (a status request: top-level message, status and invoice), "invoice" (an
    invoice request: top-level invoice), "other" (other JSON), or None (no JSON). Only text that starts like JSON
    is parsed, so an XML document costs nothing here."""
    head = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if head not in (b"{", b"["):
        return None
    try:
        value = json.loads(data.decode("utf-8-sig"))
    except (ValueError, RecursionError):   # UnicodeDecodeError is a ValueError; nesting beyond Python's stack
        return None
    if isinstance(value, dict) and STATUS_REQUEST_KEYS <= value.keys():
        return "status"
    return "invoice" if isinstance(value, dict) and "invoice" in value else "other"


def _refuse_container(data: bytes) -> None:
    """XmlInputError saying what `data` is when it is a PDF, a ZIP archive, mail or JSON: asked only of what libxml2
    refused, since none of these is well-formed XML (each starts with bytes that cannot begin a document), so a
    document that parses is never one; the question cost every valid invoice 8 us (30-40 us after the rules' Saxon
    work, bench/README.md)."""
    container = _container(data)
    if container:  # the commonest wrong uploads: say what it is and where it belongs
        raise XmlInputError(_issue(XML_MALFORMED, container[0], 1, 1, container[1]))


# A picture's first bytes (none can begin an XML document): a scan or a photo of an invoice is the commonest upload
# of a person who received a paper invoice, and "not well-formed XML" told them nothing.
_PICTURES = ((b"\x89PNG", "PNG"), (b"\xff\xd8\xff", "JPEG"), (b"GIF8", "GIF"), (b"II*\x00", "TIFF"),
             (b"MM\x00*", "TIFF"), (b"BM", "BMP"))


def _picture(data: bytes) -> tuple[str, str] | None:
    """(English, German) message when `data` is a picture (PNG, JPEG, GIF, TIFF, BMP, WebP)."""
    kind = next((name for magic, name in _PICTURES if data.startswith(magic)), None)
    if kind is None and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        kind = "WebP"
    if kind is None:
        return None
    return (f"The file is a picture ({kind}), not XML: a scan or a photo of an invoice is not an e-invoice. An "
            "e-invoice is an XML file (CII or UBL) or a ZUGFeRD / Factur-X PDF; ask the sender for it.",
            f"Die Datei ist ein Bild ({kind}), kein XML: Ein Scan oder Foto einer Rechnung ist keine E-Rechnung. "
            "Eine E-Rechnung ist eine XML-Datei (CII oder UBL) oder ein ZUGFeRD-/Factur-X-PDF; bitte beim "
            "Absender anfordern.")


def _container(data: bytes) -> tuple[str, str] | None:
    """(English, German) message when `data` is a PDF, a ZIP archive, mail, JSON (a generation request, most
    often) or a picture rather than XML."""
    if data.lstrip()[:5] == b"%PDF-":
        return _CONTAINERS["pdf"]
    picture = _picture(data)
    if picture:
        return picture
    kind = json_request_kind(data)
    if kind:
        return _JSON[kind]
    return _CONTAINERS.get(unpack.kind("", data[:unpack.HEAD]))


def parse(data: bytes) -> etree._ElementTree:
    """Parse untrusted bytes safely. Raises XmlInputError (empty, malformed, DOCTYPE/ENTITY present)."""
    if not data or not data.strip():
        raise XmlInputError(_issue(XML_EMPTY, "The file is empty: no XML document to validate.", 1, 1,
                                   "Die Datei ist leer: kein XML-Dokument zu prüfen."))
    view = _ascii_view(data)
    at = declaration_at(view)
    if at is not None:  # refuse before the parser sees the internal subset
        line, col = _line_of(view, at)
        raise XmlInputError(_issue(XML_DTD_FORBIDDEN, "DOCTYPE and ENTITY declarations are not allowed in "
                                   "e-invoices; the document was not processed.", line, col, _DTD_DE))
    try:
        tree = etree.ElementTree(etree.fromstring(data, _parser()))
    except etree.XMLSyntaxError as exc:
        _refuse_container(data)
        line, col = (exc.position if exc.position else (None, None))
        if "Excessive depth" in exc.msg:  # libxml2's own bound (2048 levels): well-formed, just deeper than ours
            raise XmlInputError(_too_deep(line)) from None
        raise XmlInputError(_issue(XML_MALFORMED, f"The file is not well-formed XML: {exc.msg}", line,
                                   col, _malformed_de(line, col))) from None
    except ValueError as exc:  # e.g. unsupported encoding declaration
        _refuse_container(data)
        raise XmlInputError(_issue(XML_MALFORMED, f"The file is not well-formed XML: {exc}", 1, 1,
                                   _malformed_de(1, 1))) from None
    if tree.docinfo.doctype or tree.docinfo.internalDTD is not None:  # other encodings (e.g. UTF-16)
        raise XmlInputError(_issue(XML_DTD_FORBIDDEN, "DOCTYPE and ENTITY declarations are not allowed in "
                                   "e-invoices; the document was not processed.", 1, 1, _DTD_DE))
    deep = _too_deep_first(tree)
    if deep:
        raise XmlInputError(_too_deep(deep[0].sourceline))
    return tree


_BANGS_CHECKED = 64  # '!'s looked at one by one before the regex reads the rest (a text full of them)


def declaration_at(view: bytes) -> int | None:
    """Where the first `<!DOCTYPE` or `<!ENTITY` (any case) starts in `view`, as `_DOCTYPE.search` finds it, or
    None. A one-byte find for '!' runs at memchr's speed; `b"<!" in view` (a two-byte search) took 0.17-0.21 ms on a
    200 KB attachment or a 250 KB invoice, and where a comment had it say yes the regex read the whole text again
    (0.06-0.15 ms): ~2 us now (bench/README.md). Beyond a few '!' not opening a declaration the regex reads the
    rest, so a text full of them costs what it did."""
    at = view.find(b"!")
    for _ in range(_BANGS_CHECKED):
        if at < 0:
            return None
        if at and view[at - 1] == 0x3C and view[at + 1:at + 8].upper().startswith((b"DOCTYPE", b"ENTITY")):
            return at - 1
        at = view.find(b"!", at + 1)
    if at < 0:
        return None
    m = _DOCTYPE.search(view, max(at - 1, 0))
    return m.start() if m else None


def _too_deep(line: int | None) -> Issue:
    return _issue(XML_MALFORMED, f"The XML nests elements more than {MAX_DEPTH} levels deep (an e-invoice needs "
                  "about 10); the document was not processed.", line, None,
                  f"Das XML verschachtelt Elemente tiefer als {MAX_DEPTH} Ebenen (eine E-Rechnung braucht etwa 10); "
                  "das Dokument wurde nicht verarbeitet.")


def decoded_text(data: bytes, tree: etree._ElementTree) -> str:
    """The document's characters, decoded with the encoding the XML parser found."""
    encoding = (tree.docinfo.encoding or "utf-8").lower()
    codec = "utf-8-sig" if encoding in ("utf-8", "utf8") else encoding
    try:
        return data.decode(codec).lstrip("\ufeff")
    except (LookupError, UnicodeDecodeError):
        # lxml accepted it, Python cannot decode by that name: let lxml re-serialise as UTF-8.
        return etree.tostring(tree, encoding="unicode")


def detect_syntax(root: etree._Element) -> str | None:
    q = etree.QName(root)
    return ROOTS.get((q.namespace, q.localname))


def load(data: bytes) -> ParsedXml:
    """Parse and detect the syntax. Raises XmlInputError for unparseable input; an unknown root is not an
    error here (`syntax` is None) so the caller decides how to report it. A stage of the request's time budget."""
    with budget.stage("xml", len(data)):
        tree = parse(data)
    root = tree.getroot()
    return ParsedXml(tree=tree, text=decoded_text(data, tree), syntax=detect_syntax(root), root_name=root.tag)


_RAM = "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"
_CBC = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2"
# Where BT-24 is, as (namespace, name) steps from the root, by the report's syntax (the web page reads them too).
SPEC_ID_PATHS = {
    "CII": [(CII_NS, "ExchangedDocumentContext"), (_RAM, "GuidelineSpecifiedDocumentContextParameter"), (_RAM, "ID")],
    "UBL": [(_CBC, "CustomizationID")],
}
_SPEC_ID = {syntax: "/".join(f"{{{ns}}}{name}" for ns, name in SPEC_ID_PATHS[syntax[:3]])
            for syntax in ("CII", "UBL-Invoice", "UBL-CreditNote")}


def specification_id(doc: ParsedXml):
    """(BT-24 as written, XML whitespace around and within collapsed; its element) or (None, None): the one reader
    of BT-24, for the rules (a pack's scenario or variant) and for reading alike."""
    element = doc.tree.getroot().find(_SPEC_ID[doc.syntax]) if doc.syntax in _SPEC_ID else None
    text = normalize_space(string_value(element)) if element is not None else ""
    return (text or None), element


def string_value(element) -> str:
    """An element's text as XPath's string() reads it, what the official rules and KoSIT's scenarios compare: all of
    its text, around any comment or processing instruction in it. lxml's `.text` stops at the first of them, so
    `urn:cen.eu:en16931:2017<!---->#compliant#...xrechnung_2.3` was read as the norm's own id and called valid on
    rules it does not claim."""
    return "".join(element.itertext())


def specification_ids(doc: ParsedXml) -> list[str | None]:
    """Every BT-24 the document states, in document order, as `specification_id` reads the first: EN 16931 has
    one, but CII's XSD lets GuidelineSpecifiedDocumentContextParameter repeat (the CEN rules' CII-SR-009 says once),
    and a UBL document may write a second CustomizationID, which its XSD refuses (`claims.repeated`)."""
    if doc.syntax not in _SPEC_ID:
        return []
    return [normalize_space(string_value(el)) or None for el in doc.tree.getroot().iterfind(_SPEC_ID[doc.syntax])]


_XML_SPACES = re.compile(r"[ \t\r\n]+")


def normalize_space(text: str | None) -> str:
    """XPath's normalize-space(): only space, tab, CR and LF are trimmed and collapsed, as xs:token does. A
    no-break space is a character of an identifier (str.split took it for a space, and a BT-24 ending in one
    passed for the norm's id, which KoSIT's exact comparison does not match)."""
    return " ".join(_XML_SPACES.split(text or "")).strip(" ")


_CAC = "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2"


def _cii(party: str, *names: str) -> list[tuple[str, str]]:
    return [(CII_NS, "SupplyChainTradeTransaction"), (_RAM, "ApplicableHeaderTradeAgreement"), (_RAM, party),
            *((_RAM, n) for n in names)]


def _ubl(party: str, *steps: tuple[str, str]) -> list[tuple[str, str]]:
    return [(_CAC, party), (_CAC, "Party"), *steps]


# Where the parties' countries are, as (namespace, name) steps from the root: "countries" the address countries of
# seller and buyer (BT-40, BT-55), "vatIds" the VAT identifiers of seller, buyer and the seller's tax
# representative (BT-31, BT-48, BT-63; a tax number beside them starts with no country). The web page reads the
# same paths (pipeline.check.detect).
PARTY_PATHS = {
    "CII": {"countries": [_cii(p, "PostalTradeAddress", "CountryID") for p in ("SellerTradeParty", "BuyerTradeParty")],
            "vatIds": [_cii(p, "SpecifiedTaxRegistration", "ID")
                       for p in ("SellerTradeParty", "BuyerTradeParty", "SellerTaxRepresentativeTradeParty")]},
    "UBL": {"countries": [_ubl(p, (_CAC, "PostalAddress"), (_CAC, "Country"), (_CBC, "IdentificationCode"))
                          for p in ("AccountingSupplierParty", "AccountingCustomerParty")],
            "vatIds": [_ubl(p, (_CAC, "PartyTaxScheme"), (_CBC, "CompanyID"))
                       for p in ("AccountingSupplierParty", "AccountingCustomerParty")]
            + [[(_CAC, "TaxRepresentativeParty"), (_CAC, "PartyTaxScheme"), (_CBC, "CompanyID")]]},
}


def _union_of(paths: list[list[tuple[str, str]]]) -> etree.XPath:
    """One compiled XPath for the union of child paths from the root element: each element once (no two of the paths
    reach the same element)."""
    prefixes: dict[str, str] = {}
    terms = ["/".join(f"{prefixes.setdefault(ns, f'n{len(prefixes)}')}:{name}" for ns, name in path)
             for path in paths]
    return etree.XPath(" | ".join(terms), namespaces={p: ns for ns, p in prefixes.items()})


# PARTY_PATHS compiled: lxml's ElementPath (iterfind) is Python code that read five paths per validation in 39 us,
# 80-94 us after the rules' Saxon work had the caches (bench/README.md)
_PARTY_UNIONS = {syntax: (_union_of(paths["countries"]), _union_of(paths["vatIds"]))
                 for syntax, paths in PARTY_PATHS.items()}


def party_countries(doc: ParsedXml) -> set[str]:
    """The countries seller and buyer are in as the document states them: their address countries and the two
    letters before their VAT identifiers (PARTY_PATHS). Empty for a document of no known syntax."""
    unions = _PARTY_UNIONS.get(doc.report_syntax or "")
    if unions is None:
        return set()
    root = doc.tree.getroot()
    countries, vat_ids = (" ".join((e.text or "").split()).upper() for e in unions[0](root)), unions[1](root)
    found = {*countries, *(" ".join((e.text or "").split()).upper()[:2] for e in vat_ids)}
    return {c for c in found if len(c) == 2 and c.isalpha()}


def is_cdar(doc: ParsedXml) -> bool:
    """A lifecycle status message of France's reform (CDAR root), which no invoice syntax names."""
    return doc.root_name == CDAR_ROOT


def unknown_root_issue(doc: ParsedXml) -> Issue:
    # a status message sent where invoices are validated, read or converted (one endpoint, or a job over a mixed
    # archive): say what it is and which endpoint does what was asked, since this text cannot know which that was
    status = (" This is a lifecycle status message of France's reform (CDV), no invoice: POST "
              "/v1/invoice/fr-ctc/status/validate validates it, .../status/parse reads it as JSON, .../status/render "
              "shows it; a validate job (spec auto or fr-cdar) validates it beside invoices." if is_cdar(doc) else "")
    status_de = (" Das ist eine Statusmeldung der französischen Reform (CDV), keine Rechnung: POST "
                 "/v1/invoice/fr-ctc/status/validate prüft sie, .../status/parse liest sie als JSON, .../status/render "
                 "zeigt sie; ein Prüf-Job (spec auto oder fr-cdar) prüft sie neben Rechnungen." if status else "")
    issue = Issue(ERROR, XML_UNKNOWN_ROOT,
                  f"Unknown document type {doc.root_name}: expected a UN/CEFACT CII D16B rsm:CrossIndustryInvoice "
                  f"or a UBL 2.1 Invoice or CreditNote.{status}",
                  doc.locate("/*[1]"))
    issue.message_de = (f"Unbekannter Dokumenttyp {doc.root_name}: erwartet wird eine UN/CEFACT-CII-D16B-"
                        f"rsm:CrossIndustryInvoice oder eine UBL-2.1-Invoice bzw. -CreditNote.{status_de}")
    return issue
