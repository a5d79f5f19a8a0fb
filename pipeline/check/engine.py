"""The validation engine: XSD + official Schematron (compiled XSLT in Saxon) on a document that `xmlinput` has
read safely, by rule pack.

- `pack_issues(doc, pack, sdoc)` -> (issues, scenario): one rule pack on one document. XRechnung packs go through
  KoSIT's scenarios (`pipeline.check.scenarios`), EN 16931 packs use the registry's XSD and CEN stylesheet per
  syntax.
- `run_checks(doc, xsd_path, stylesheet_paths, custom_levels)` -> issues: the reusable primitive (one XSD, then
  SVRL-producing stylesheets in order), e.g. for the Factur-X profile rules.

Severity of Schematron findings: flag fatal/error -> ERROR, warning/information -> WARNING (`pipeline.check.report`);
warnings never make a document invalid. A dynamic error raised by an official stylesheet (e.g. XPTY0004 in the
CEN CII rules on a party with two URIIDs) is a finding about the document: RULE-ENGINE-ERROR, valid=false. When an
optimised copy stops with one, the official stylesheet answers the document instead, so the error is the official one.
"""
from __future__ import annotations

import functools
import os
import re
import threading
from contextlib import contextmanager
from datetime import date
from pathlib import Path

from lxml import etree

from pipeline import budget, saxon
from pipeline.check import applied, optimise, packs, scenarios, xmlinput, xsd_german
from pipeline.check.applied import Checked, Rules
from pipeline.check.report import ERROR, Issue, Location, severity_of_flag
from pipeline.check.xmlinput import ParsedXml, XmlInputError
from pipeline.errors import ApiError, refined, rules_changed

RULE_ENGINE_ERROR = "RULE-ENGINE-ERROR"
NO_SCENARIO = "XRECHNUNG-NO-SCENARIO"
SYNTAX_NOT_COVERED = "SYNTAX-NOT-COVERED"
XSD_PREFIX = "XSD-"

SVRL_NS = "http://purl.oclc.org/dsdl/svrl"
# Findings beyond this many per stylesheet keep their xpath but are not resolved to line/column (cost bound).
MAX_LOCATED = 1000

# Each official Schematron XSLT runs inside a small wrapper that imports it unchanged, lets it build its SVRL
# as a temporary tree (xsl:apply-imports) and returns only the findings: 4 strings per failed assert or
# successful report - id, flag, location, text. One transform per stylesheet, no SVRL document handed to
# Python, no serialise/re-parse of the SVRL (which the CEN XSLTs fill with fired-rule elements).
_RULES_WRAPPER = """<xsl:stylesheet version="3.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:svrl="{svrl}">
  <xsl:import href="{href}"/>
  <xsl:template match="/" priority="1000">
    <xsl:variable name="svrl"><xsl:apply-imports/></xsl:variable>
    <xsl:sequence select="for $a in ($svrl//svrl:failed-assert | $svrl//svrl:successful-report) return
        (string($a/@id), string($a/@flag), string($a/@location), normalize-space(string($a/svrl:text)))"/>
  </xsl:template>
</xsl:stylesheet>"""

_schemas: dict[tuple, etree.XMLSchema] = {}
_schema_lock = threading.Lock()

# What was compiled or loaded from a file is kept under the file's identity as well as its path: a pack removed and
# added again with other files (same version, same paths) must not be judged by what the old files compiled to. The
# identity is read once, and again after this process forgot what it read of the rules home (`packs.epoch`).
_identities: dict[str, tuple] = {}
_identities_epoch = [-1]


def _forget_files_if_changed() -> None:
    """After the rules home changed (`packs.epoch`), files are looked at again: identities and scenario files."""
    if _identities_epoch[0] != packs.epoch():
        _identities.clear()
        scenarios.load_scenarios.cache_clear()
        _identities_epoch[0] = packs.epoch()


def _identity(path) -> tuple:
    _forget_files_if_changed()
    key = str(path)
    found = _identities.get(key)
    if found is None:
        st = os.stat(key)
        found = _identities[key] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return found


def load_schema(path: Path) -> etree.XMLSchema:
    """An XSD, loaded once per process and file (`_identity`; local includes/imports only)."""
    try:
        fast = (str(path), _identity(path))
        schema = _schemas.get(fast)
        if schema is None:
            key = (str(Path(path).resolve()), fast[1])
            with _schema_lock:
                schema = _schemas.get(key)
                if schema is None:
                    parser = etree.XMLParser(resolve_entities=False, no_network=True)
                    schema = _schemas[key] = _schemas[fast] = etree.XMLSchema(etree.parse(key[0], parser))
    except (OSError, etree.LxmlError) as exc:
        _pack_file_failed(path, exc)
        raise
    return schema


def _pack_file_failed(path, exc: Exception) -> None:
    """A rule file that cannot be read or compiled, when it belongs to an installed pack: what this process read of
    the rules home is forgotten, and the request gets 503 RULES_CHANGED (Retry-After) when the pack is no longer
    there (`pipeline rules remove` while it ran: a 500 before; the next request chooses again), else 500
    RULES_UNAVAILABLE naming the file (the pack is damaged: reinstall it). Any other file: returns (the caller
    raises `exc`)."""
    root = packs.pack_root_of(path)
    if root is None:
        return
    packs.clear_caches()
    key = f"{root.parent.name} {root.name}"
    if not (root / packs.MANIFEST_NAME).is_file():
        raise rules_changed(f"The {key} rules were removed or replaced while this request ran; retry it: the next "
                            "request is judged by the rules installed then.") from exc
    why = " ".join(str(exc).replace(str(root) + "/", "").split())[:300]
    raise refined(500, "RULES_UNAVAILABLE", f"{Path(path).relative_to(root).as_posix()} of the installed pack {key} "
                  f"cannot be read or compiled ({why}); reinstall the pack (pipeline rules install, or rules add its "
                  "release again)") from exc


@functools.lru_cache(maxsize=512)
def _stage(kind: str, path) -> str:
    """A budget stage's name (`rules:EN16931-CII-validation.xslt`), made once per file, not on every validation."""
    return f"{kind}:{Path(path).name}"


def xsd_issues(doc: ParsedXml, xsd_path: Path) -> list[Issue]:
    """XSD findings; each located by its path (line and column of the element's start tag) when the path
    resolves, else by the line libxml2 gives."""
    schema = load_schema(xsd_path)
    with _attachments_stood_in(doc) as faults, budget.stage(_stage("xsd", xsd_path), len(doc.text)):
        if schema.validate(doc.tree):
            return faults
    issues = []
    for n, e in enumerate(schema.error_log):
        if n % 1000 == 999:
            budget.check()
        path = getattr(e, "path", None)
        where = doc.locate(path) if path and n < MAX_LOCATED else Location(xpath=path)
        if where.line is None:
            where = Location(xpath=path, line=e.line or None, column=e.column or None)
        code = XSD_PREFIX + e.type_name.replace("SCHEMAV_", "").replace("_", "-")
        # libxml2's English sentence; pages and reports in German show message_de
        issues.append(Issue(ERROR, code, e.message, where, message_de=xsd_german.german(e.message)))
    return issues + faults


def rules_executable(stylesheet: Path):
    """The official stylesheet wrapped to return its findings (see _RULES_WRAPPER); compiled once per process (and
    per file: `_identity`)."""
    try:
        return saxon.compile_generated(
            ("rules", str(stylesheet), _identity(stylesheet)),
            lambda: _RULES_WRAPPER.format(svrl=SVRL_NS, href=Path(stylesheet).resolve().as_uri()),
            prepare=lambda exe: _bind_documents(exe, Path(stylesheet)))
    except (OSError, saxon.StylesheetError) as exc:
        _pack_file_failed(stylesheet, exc)
        raise


def _bind_documents(exe, stylesheet: Path) -> None:
    """The documents an optimised copy reads as parameters (its code lists), parsed once per process instead of
    by every run (`optimise.document_parameters`); an official stylesheet has none."""
    for name, path in optimise.document_parameters(stylesheet).items():
        exe.set_parameter(name, saxon.processor().parse_xml(xml_file_name=str(path)))


# SaxonC 12 words a dynamic error with where it happened ("Type error at char 48 in expression in xsl:when/@test on
# line 1068 column 315 of X.xslt: XPTY0004 <message> In template rule ... invoked by ... at file:///<rules home>/...");
# SaxonC 13 gives the message alone. The report carries the message alone with either: the same text from both
# releases, and no path of this server's files in an answer.
_SAXON_WHERE = re.compile(r"^.*? on line \d+(?: column \d+)? of [^ ]+: (?:[A-Z]{4}\d{4} )?(?P<message>.*?)"
                          r"(?: In template rule .*| In function .*| During .*)?$", re.S)


def saxon_message(exc: Exception) -> str:
    """The text of a Saxon dynamic error as a report shows it (see _SAXON_WHERE)."""
    message = " ".join(str(exc).split())
    where = _SAXON_WHERE.match(message)
    return (where.group("message") if where else message) or type(exc).__name__


def schematron_issues(sdoc, stylesheet: Path, custom_levels: dict[str, str] | None = None,
                      doc: ParsedXml | None = None) -> list[Issue]:
    """Run one official compiled Schematron stylesheet (SVRL output) on the Saxon document and read its failed
    asserts and successful reports; with `doc` (the same document parsed by xmlinput) findings get line/column."""
    exe = rules_executable(stylesheet)
    try:
        with budget.stage(_stage("rules", stylesheet), len(doc.text) if doc is not None else 0):
            found = exe.transform_to_value(xdm_node=sdoc)
    except budget.Exhausted:
        raise
    except Exception as exc:  # saxonche raises PySaxonApiError for XSLT dynamic errors
        original = optimise.original_of(Path(stylesheet))
        if original != Path(stylesheet):
            # an optimised copy may meet an error elsewhere or in other words than the official rules (its
            # rules run in another order): the document gets the official stylesheet's own answer
            return schematron_issues(sdoc, original, custom_levels, doc)
        message, name = saxon_message(exc), optimise.original_name(Path(stylesheet).name)
        return [Issue(ERROR, RULE_ENGINE_ERROR,
                      f"The official rules ({name}) stopped with a dynamic error on this document: {message}", None,
                      message_de=xsd_german.rule_engine_error(name, message))]
    if found is None:
        return []
    values = [found.item_at(i).string_value for i in range(found.size)]
    levels = custom_levels or {}
    issues = []
    for n, i in enumerate(range(0, len(values), 4)):
        if n % 1000 == 999:  # tens of thousands of findings: reading them counts too
            budget.check()
        rule_id, flag, location, text = values[i:i + 4]
        severity = severity_of_flag(levels.get(rule_id, flag or None))
        where = doc.locate(location) if doc is not None and n < MAX_LOCATED else Location(xpath=location or None)
        issues.append(Issue(severity, finding_code(rule_id, text), text, where))
    return issues


# An assert the official rules left without an id may still name its rule where the packs put it, in front of its
# text (`[BR-FXEXT-04]-To ensure ...`, the EXTENDED-CTC-FR Schematron): that rule is its code. The Factur-X profile
# Schematron's reports of an element or attribute its profile does not use ("... marked as not used in the given
# context.") name none, nor do their rules or patterns (no id in the official source either): NO_ID.
_ID_IN_TEXT = re.compile(r"\[([A-Za-z][\w.-]*)\]")
NO_ID = "SCHEMATRON"


def finding_code(rule_id: str, text: str) -> str:
    """A Schematron finding's code: the assert's id, else the rule id its text starts with, else NO_ID."""
    if rule_id:
        return rule_id
    named = _ID_IN_TEXT.match(text)
    return named.group(1) if named else NO_ID


# The official rules test an attached document (BT-125) for presence and count, never its base64 content, which
# costs Saxon's parser ~6 ms per 200 KB (the JVM parses it 6 x faster): the Saxon tree the rules read carries a short
# stand-in instead, its edges' whitespace kept. lxml (XSD, line and column of findings) reads the document as sent.
# Same findings on every official sample with an attachment (tests/test_validate.py).
_BINARY_START = re.compile(r"<(?:[\w.-]+:)?(?:AttachmentBinaryObject|EmbeddedDocumentBinaryObject)\b[^>]*(?<!/)>")
_BINARY_END = re.compile(r"</(?:[\w.-]+:)?(?:AttachmentBinaryObject|EmbeddedDocumentBinaryObject)>")
BINARY_STAND_IN = "AAAA"
STAND_IN_FROM = 4096  # characters of base64 below which the content is left as it is


def _stood_in(content: str) -> list[str] | None:
    """The pieces standing for an element's content in the rules' view (its edges' whitespace kept), or None to
    leave content shorter than STAND_IN_FROM as it is."""
    core = content.strip()
    if len(core) < STAND_IN_FROM:
        return None
    return [content[:len(content) - len(content.lstrip())], BINARY_STAND_IN, content[len(content.rstrip()):]]


# The XSD pass reads an attached document's base64 too: libxml2 checks xs:base64Binary character by character (~1.4 ms
# of the ~1.6 ms XSD pass on a 200 KB attachment). When our own check (C-level byte translations, ~0.1 ms) finds the
# content surely valid, the element holds the stand-in while the schema validates the tree, and its text is put
# back: valid content, valid stand-in, no facet on these types in any installed schema, so the same findings.
# Content in any doubt is judged by `base64_fault` (xs:base64Binary's lexical space, as Xerces in the official
# validators decides it) instead of libxml2, which ignores characters outside the alphabet ('*', '!', U+00A0): it
# holds the stand-in too, and a fault is the XSD finding Xerces reports (`_base64_issue`).
_ATTACHMENTS = ("{urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100}"
                "AttachmentBinaryObject",
                "{urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2}EmbeddedDocumentBinaryObject")
_BASE64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_XML_SPACE = b" \t\r\n"


def surely_base64(text: str) -> bool:
    """True when `text` is valid xs:base64Binary for certain, to libxml2 and Xerces alike: base64 characters and XML
    whitespace, '=' padding only at the end, a multiple of four characters in all, the padding's bits zero. False
    in any doubt (whitespace inside the padding, which is valid, too): `base64_fault` decides then. One pass in C over
    the content (the translation), the rest on the few characters left."""
    if not text.isascii():
        return False
    raw = text.encode("ascii")
    rest = raw.translate(None, _BASE64)  # whitespace and padding, unless the content is no base64
    if rest.translate(None, _XML_SPACE + b"="):
        return False
    pad, count = rest.count(b"="), len(raw) - len(rest)
    if pad == 0:
        return count % 4 == 0
    first = raw.find(b"=")
    if pad > 2 or raw[first:].translate(None, _XML_SPACE + b"=") or raw[first:].strip(_XML_SPACE) != b"=" * pad:
        return False  # a character after the padding, or whitespace inside it
    last = first - 1
    while raw[last] in _XML_SPACE:
        last -= 1
    # the last character before one '=' carries 4 data bits and 2 zero bits, before '==' 2 and 4
    return count % 4 == 4 - pad and not _BASE64.find(raw[last:last + 1]) & (0x03 if pad == 1 else 0x0F)


_NOT_BASE64 = re.compile(r"[^A-Za-z0-9+/= \t\r\n]")
_WITHOUT_SPACE = str.maketrans("", "", " \t\r\n")


def base64_fault(text: str) -> str | None:
    """Why `text` is not in xs:base64Binary's lexical space (XSD 1.1 Part 2, 3.3.17; Xerces, which the official
    validators run, decides the same), or None when it is: after XML whitespace is taken out (the grammar allows it
    between any two characters), base64 characters in groups of four, the last group may end in '=' or '==' whose
    preceding character has the unused low bits zero. Empty content is valid."""
    foreign = _NOT_BASE64.search(text)
    if foreign:
        char = foreign.group()
        return (f"the character {char!r} (U+{ord(char):04X}) at character {foreign.start() + 1:,} of the content is "
                "neither a base64 character (A-Z a-z 0-9 + /), padding '=' nor whitespace")
    core = text.translate(_WITHOUT_SPACE)
    data = core.rstrip("=")
    if "=" in data:
        at = text.index("=") + 1
        return (f"the padding '=' at character {at:,} of the content is followed by base64 characters: '=' may only "
                "end the content")
    pad = len(core) - len(data)
    if pad > 2:
        return f"the content ends in {pad} '=': padding is one or two"
    if len(core) % 4:
        return (f"the content holds {len(core):,} base64 characters and padding (whitespace not counted), not a "
                "multiple of four")
    if pad and _BASE64.find(data[-1].encode()) & (0x0F if pad == 2 else 0x03):
        allowed = "A Q g w" if pad == 2 else "A E I M Q U Y c g k o s w 0 4 8"
        return (f"the character {data[-1]!r} before the padding {'=' * pad!r} has bits set that the padding leaves "
                f"unused: only one of {allowed} may stand there")
    return None


def _base64_issue(doc: ParsedXml, element, fault: str) -> Issue:
    """The XSD finding for an attachment that is no xs:base64Binary, at the element's start tag: the code Xerces and
    libxml2 give a value outside its type's lexical space (cvc-datatype-valid.1.2.1), the term BT-125 named."""
    line, column = doc.start_of(element)
    name = etree.QName(element).localname
    shown = f"{element.prefix}:{name}" if element.prefix else name
    return Issue(ERROR, XSD_PREFIX + "CVC-DATATYPE-VALID-1-2-1",
                 f"Element '{shown}' (attached document, BT-125): the content is not a valid value of the atomic type "
                 f"'xs:base64Binary': {fault}.", Location(xpath=doc.tree.getpath(element), line=line, column=column))


def _may_hold_attachments(text: str) -> bool:
    """Whether the document can hold an attachment worth a stand-in: long enough, and an `...BinaryObject` element
    named in it (a scan for the word, ~20 x cheaper than the attachment regex over a long document)."""
    return len(text) > STAND_IN_FROM and "BinaryObject" in text


@contextmanager
def _attachments_stood_in(doc: ParsedXml):
    """The tree with every attachment's base64 that libxml2 need not read replaced by the stand-in, for the XSD pass:
    large content surely valid, and any content `base64_fault` judged. Yields the XSD findings of those judged
    faulty (`_base64_issue`)."""
    replaced, faults = [], []
    if "BinaryObject" in doc.text:  # a scan for the word, ~20 x cheaper than walking the tree of a long document
        for element in list(doc.tree.iter(*_ATTACHMENTS)):  # listed first: each found is moved out of the tree
            text = element.text
            if not text or len(element):
                continue  # children (or a comment) inside: libxml2 judges the element as sent
            if surely_base64(text):
                if len(text) < STAND_IN_FROM:
                    continue  # short valid content is cheap for libxml2
            else:
                fault = base64_fault(text)
                if fault is not None:
                    faults.append(_base64_issue(doc, element, fault))
            replaced.append((element, _standing_in(element)))
    try:
        yield faults
    finally:
        for element, stand_in in replaced:
            stand_in.getparent().replace(stand_in, element)


def _standing_in(element):
    """A copy of `element` without its content (the stand-in's text instead, same name, attributes, line and tail),
    put in its place: the element itself is kept aside whole and put back after the XSD pass. Setting the text back
    copied the 200 KB content into the tree again (0.28-0.53 ms, bench/README.md); moving an element: 12-22 us."""
    stand_in = element.makeelement(element.tag, element.attrib, element.nsmap)
    stand_in.text, stand_in.tail = BINARY_STAND_IN, element.tail
    if element.sourceline:
        stand_in.sourceline = element.sourceline  # libxml2's line of a finding on the element
    element.getparent().replace(element, stand_in)
    return stand_in


def rules_view(text: str) -> str:
    """The document as the rules read it: attached documents' base64 replaced by a stand-in (`text` itself, the
    same object, when there is nothing to replace). An element's content is the text up to the next '<', which must
    close it (else it holds markup and stays as it is): a `str.find` over the base64 instead of a regex group that
    read it character by character (0.18-0.43 -> 0.05-0.13 ms on a 200 KB attachment, bench/README.md)."""
    if not _may_hold_attachments(text):
        return text
    pieces, done, at = [], 0, 0
    while True:
        start = _BINARY_START.search(text, at)
        if start is None:
            break
        end = text.find("<", start.end())
        close = _BINARY_END.match(text, end) if end >= 0 else None
        if close is None:
            at = start.start() + 1  # as a regex over the whole element would try again from the next character
            continue
        stand_in = _stood_in(text[start.end():end])
        if stand_in is not None:
            pieces += [text[done:start.end()], *stand_in]
            done = end
        at = close.end()
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def saxon_document(doc: ParsedXml, view: str | None = None):
    """The document as a Saxon tree for the rules (`view`: `rules_view(doc.text)` when the caller has it).
    XmlInputError (XML-MALFORMED) when Saxon's parser refuses what lxml read (nesting deeper than 100 levels is
    refused by xmlinput before, whichever SaxonC release runs)."""
    try:
        return saxon.parse(rules_view(doc.text) if view is None else view)
    except budget.Exhausted:
        raise
    except Exception as exc:  # saxonche raises PySaxonApiError
        message = " ".join(str(exc).split())
        raise XmlInputError(Issue(ERROR, xmlinput.XML_MALFORMED, f"The XML could not be read: {message}",
                                  None)) from None


def run_checks(doc: ParsedXml, xsd_path: Path | None, stylesheet_paths, custom_levels: dict[str, str] | None = None,
               sdoc=None) -> list[Issue]:
    """XSD (if given), then each Schematron stylesheet in order; `custom_levels` maps rule id -> Schematron
    level (error/warning/information) overriding the stylesheet's flag. Schematron runs even when the XSD
    fails, so the report lists every finding. `sdoc` = the document already parsed by Saxon (parsed here
    if omitted)."""
    issues = xsd_issues(doc, xsd_path) if xsd_path else []
    if sdoc is None and stylesheet_paths:
        try:
            sdoc = saxon_document(doc)
        except XmlInputError as exc:
            return issues + [exc.issue]
    for sheet in stylesheet_paths:
        issues.extend(schematron_issues(sdoc, sheet, custom_levels, doc))
    return issues




# ---------------------------------------------------------------- rule packs

def unsupported_version(spec: str, version: str, why: str) -> ApiError:
    known = packs.known_versions(spec)
    return ApiError(400, "UNSUPPORTED_VERSION",
                    f"{spec} validation package version {version!r} {why}; supported: {', '.join(known) or 'none'}")


def check_spec(spec: str, version: str | None) -> None:
    """ApiError 400 for a specification or pack version this server does not know."""
    if spec not in packs.SPECS:
        raise ApiError(400, "UNSUPPORTED_SPEC", f"unknown specification {spec!r}; supported: {', '.join(packs.SPECS)}")
    if version is not None and (not isinstance(version, str) or version not in packs.known_versions(spec)):
        raise unsupported_version(spec, str(version), "is not supported")


_CBC = "{urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2}"
_CII_DATE = ("{urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100}ExchangedDocument",
             "{urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100}IssueDateTime",
             "{urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100}DateTimeString")


def issue_date(doc: ParsedXml) -> date | None:
    """BT-2 of a CII (format 102, YYYYMMDD) or UBL (YYYY-MM-DD) document; None when absent or not a date."""
    root = doc.tree.getroot()
    if doc.syntax == "CII":
        node = root
        for tag in _CII_DATE:
            node = node.find(tag) if node is not None else None
        text = (node.text or "").strip() if node is not None else ""
        text = f"{text[:4]}-{text[4:6]}-{text[6:8]}" if len(text) == 8 and text.isdigit() else ""
    else:
        text = (root.findtext(_CBC + "IssueDate") or "").strip()[:10]   # an xs:date may carry a time zone
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def pick_pack(spec: str, version: str | None, syntax: str | None, doc: ParsedXml | None = None,
              on: date | None = None) -> packs.Pack:
    """The pack `version` of `spec`, or the active one for the syntax in force on the date `on` (a document: its
    issue date, read only when several are installed; generation: today); ApiError when none is installed. When no
    installed pack of `spec` has rules for `syntax`, the one in force for the spec (the caller refuses the document
    with `syntax_not_available`)."""
    try:
        try:
            return _chosen(spec, version, syntax, doc, on)
        except packs.RulesError:
            if not packs.forget_removed():
                raise
        # a pack this worker listed was removed before it looked at the rules home again: choose among those there
        return _chosen(spec, version, syntax, doc, on)
    except packs.PackNotInstalled as exc:
        if version is not None:
            raise unsupported_version(spec, version, "is not available on this server") from exc
        raise refined(500, "RULES_NOT_INSTALLED", f"No {spec} validation package is installed: {exc}") from exc
    except packs.RulesError as exc:
        raise refined(500, "RULES_UNAVAILABLE", str(exc)) from exc


def _chosen(spec: str, version: str | None, syntax: str | None, doc: ParsedXml | None, on: date | None) -> packs.Pack:
    if version is not None:
        return packs.get_pack(spec, version)
    if syntax is not None and not packs.covers(spec, syntax):
        syntax = None  # a pack without rules for it (Peppol and CII): the caller says so (syntax_not_available)
    if on is None and doc is not None and packs.several_active(spec, syntax):
        on = issue_date(doc)
    return packs.in_force(spec, syntax, on)


def syntax_not_available(pack: packs.Pack, syntax: str) -> ApiError:
    """400 for a document in a syntax the pack has no rules for (Peppol 2026.5 and CII)."""
    covered = sorted({"CII" if s == "CII" else "UBL " + s.split("-", 1)[1] for s in pack.syntaxes})
    why = (" OpenPEPPOL publishes the Peppol CII rules as Schematron only, without a compiled release, so they are "
           "not available here." if pack.spec == "peppol" and syntax == "CII" else "")
    return ApiError(400, "UNSUPPORTED_SYNTAX",
                    f"The {pack.spec} {pack.version} rules are not available for {syntax} documents; this release "
                    f"covers {', '.join(covered)}.{why}")


def pack_issues(doc: ParsedXml, pack: packs.Pack, sdoc) -> tuple[list[Issue], str | None]:
    """XSD + Schematron of one rule pack on a document (`sdoc`: the same document as a Saxon tree) -> (issues,
    name of the XRechnung scenario or of the pack's variant applied (Peppol `self-billing`), or None)."""
    checked = pack_checked(doc, pack, sdoc)
    return checked.issues, checked.scenario


def pack_scenarios(pack: packs.Pack) -> tuple[scenarios.Scenario, ...]:
    """The KoSIT scenarios of an XRechnung pack, read again after the rules home changed (a configuration added
    again with other scenarios); one that cannot be read is the request's 503 or 500 (`_pack_file_failed`)."""
    try:
        _forget_files_if_changed()
        return scenarios.load_scenarios(pack.scenarios)
    except OSError as exc:
        _pack_file_failed(pack.scenarios, exc)
        raise


def pack_checked(doc: ParsedXml, pack: packs.Pack, sdoc) -> Checked:
    """`pack_issues` with the rules that ran (`pipeline.check.applied`). XRechnung packs go through KoSIT's
    scenarios: none matching is XRECHNUNG-NO-SCENARIO, no rules run. The pack's optimised stylesheets run where it
    has them."""
    if pack.scenarios is not None:
        loaded = pack_scenarios(pack)
        scenario = scenarios.select_scenario(loaded, sdoc, doc.tree)  # (lxml answers where it can)
        if scenario is None:
            return Checked([no_scenario(doc, pack)])
        sheets = [pack.runnable(s) for s in scenario.stylesheets]
        rules = Rules(pack.spec, pack.version, applied.steps(pack.root, scenario.xsd, sheets), scenario=scenario.name)
        return Checked(run_checks(doc, scenario.xsd, sheets, scenario.custom_levels, sdoc=sdoc), [rules],
                       scenario=scenario.name)
    if doc.syntax not in pack.syntaxes:
        return Checked([Issue(ERROR, SYNTAX_NOT_COVERED, f"{pack.spec} {pack.version} has no rules for {doc.syntax} "
                              "documents.", None)])
    entry = pack.rules_for(doc.syntax)
    variant = pack.variant_for(xmlinput.specification_id(doc)[0]) if pack.variants else None
    sheets = [pack.runnable(s) for s in (variant.stylesheets if variant is not None else entry.stylesheets)]
    name = variant.name if variant is not None else None
    return Checked(run_checks(doc, entry.xsd, sheets, sdoc=sdoc),
                   [Rules(pack.spec, pack.version, applied.steps(pack.root, entry.xsd, sheets), variant=name)],
                   scenario=name)


def no_scenario(doc: ParsedXml, pack: packs.Pack) -> Issue:
    # the identifier as written, quoted: KoSIT compares it exactly, so a stray space is the whole difference
    element = xmlinput.specification_id(doc)[1] if doc.syntax else None
    gid = element.text if element is not None and element.text and element.text.strip() else None
    said = f" (it reads “{gid}”)" if gid else " (the document states none)"
    return Issue(ERROR, NO_SCENARIO,
                 "The document matches no scenario of the XRechnung validator configuration "
                 f"{pack.version}: its specification identifier (CII GuidelineSpecified"
                 f"DocumentContextParameter/ID, UBL CustomizationID){said} is not exactly one of XRechnung "
                 "3.0 (standard, extension, CVD) or EN 16931.",
                 doc.locate("/*[1]"))


def warm_up(specs=packs.SPECS) -> int:
    """Compile every installed active pack's stylesheets and load its schemas in this process (e.g. in a
    worker after fork) so the first request does not pay for it. Returns the number of stylesheets."""
    sheets = set()
    for pack in packs.list_installed():
        if pack.spec in specs and pack.status == packs.ACTIVE:
            for entry in pack.syntaxes.values():
                load_schema(entry.xsd)
            sheets.update(pack.runnable(s) for s in pack.stylesheets())  # profile rules, variants too
            if pack.scenarios is not None:
                scenarios.warm_up(scenarios.load_scenarios(pack.scenarios))
    for sheet in sorted(sheets):
        rules_executable(sheet)
    return len(sheets)
