"""E-mail as a container: an .eml file (one RFC 5322 message), Apple Mail's .emlx (one message after a line with its
length: `read_emlx`) or an .mbox file (many; Thunderbird's and Apple Mail's exports have no extension: "Inbox",
"Inbox.mbox/mbox", known by their first "From " line), each message's invoices as documents, named by the message
and the attachment's file name.

    message -> MIME tree (the standard library's `email`, modern policy; parts counted as the parser makes them)
      XML / PDF attachment                -> a document
      ZIP attachment                      -> its members (the caller's ZIP rules: pipeline.unpack)
      winmail.dat (TNEF)                  -> its files, each taken as an attachment (pipeline.unpack.tnef)
      message/rfc822, *.eml attachment    -> its own attachments, named under it (a forwarded invoice; one
                                             sent in base64, which RFC 2046 forbids, decoded first)
      *.msg attachment (Outlook's)        -> its attachments, named under it (pipeline.unpack.outlook)
      a multipart the parser cannot split -> split at the boundary line its body has, else MAIL_DAMAGED (a
                                             boundary of 8-bit bytes, UTF-8 or CP1252, is split at those bytes)
      a Content-Transfer-Encoding with    -> decoded as the token it is ("base64 ", "base64 (MIME)", '"base64"')
        blanks, a comment or quotes
      S/MIME opaque-signed or compressed  -> the MIME entity inside the PKCS#7 block, read as the message's body
                                             (pipeline.unpack.smime; what the signature says: .signature)
      a signed file attached (*.p7m, any  -> the document inside, named by the file's name without ".p7m"
        media type, DER or base64)
      multipart/signed (clear-signed)     -> its parts, the first's documents with what the signature says
        (Outlook's .msg: as "smime.p7m")
      S/MIME or PGP encrypted             -> one SMIME_ENCRYPTED / PGP_ENCRYPTED entry (cannot be read here)
      files uuencoded in a text body      -> each taken as an attachment ("begin 644 rechnung.xml" ... "end")
      an application/* part of no name    -> a document where its content is one (XML by its "<", PDF, ...)
      a text/plain body that is XML       -> a document ("<?xml" first: an invoice pasted as the text)
      text bodies, pictures (SVG too),    -> not invoices
      calendars, vCards, signatures, message/external-body, a Mac file's resource fork (AppleDouble)
      message/partial (one piece)         -> one MAIL_DAMAGED entry (the pieces are not put together)
      a part Apple Mail stored apart      -> its file where it was given with the message (pipeline.unpack.apple),
        (.partial.emlx)                      else named in the message's NO_INVOICE notice
    a message without any of these        -> one NO_INVOICE entry (a notice: nothing failed, nothing is charged)

Hostile mail is bounded as hostile ZIPs are: a message larger than `Limits.max_message` (MESSAGE_TOO_LARGE) or of
more lines than it over LINE_COST (MESSAGE_TOO_LARGE too), more than MAX_PARTS parts (MAIL_TOO_MANY_PARTS: the
parser stops at the first part too many) or MAX_FIELDS header fields (MAIL_HEADER_TOO_LONG), each counted for a
message and the messages attached to it together (`Budget`), a header we read longer than MAX_HEADER
(MAIL_HEADER_TOO_LONG: the modern header parser is slow on long ones), messages and multiparts
nested deeper than MAX_DEPTH (MAIL_TOO_DEEP), an attachment that decodes past `max_member` (FILE_TOO_LARGE) and
all decoded bytes counted toward the upload's room (413), damaged base64 (BROKEN_ENCODING), an Outlook .msg
that cannot be taken apart (MSG_UNREADABLE). Header text in an unknown or wrong charset is kept with replacement
characters: the document is still named and worked on; raw 8-bit header bytes are read as UTF-8 where they are,
else as CP1252 (`_eight_bit`). Within a request (a job's upload, a batch) the time budget (`pipeline.budget`) is
asked while a message is read: before each piece the parser is fed (`_FEED`), as it makes each part and as the
walk reaches each part; once it is spent, Exhausted (503 TIME_BUDGET) as a mailbox's blocks raise it. Outside a
request (the command line, `pipeline inbox`) each message is read within a time of its own (`message_seconds`),
asked by the same checks: a message that outlasts it is one MAIL_TIME_BUDGET entry, and the next is read.
"""
from __future__ import annotations

import base64
import binascii
import email.errors
import email.headerregistry
import email.policy
import email.utils
import functools
import re
from email.message import EmailMessage
from email.parser import BytesFeedParser, BytesParser
from typing import Callable, Iterator

from pipeline import budget as time_budget
from pipeline.unpack import apple, outlook, signature, smime, tnef
from pipeline.unpack.members import Limits, Member, Room, is_zip, member_too_large

MAX_PARTS = 500   # MIME parts of one message, all levels together (its attached messages too)
MAX_FIELDS = 200_000  # header fields of one message, all its parts and attached messages together
LINE_COST = 32    # bytes a line counts as toward `Limits.max_message` when the parser reads it (see `Budget`)
MAX_HEADER = 8192  # characters of a header we read (From, Subject, Content-Type, ...; others are never parsed)
MAX_DEPTH = 12    # multiparts and messages inside each other (a forwarded message is one with its message/rfc822 part)
_MBOX_LINE = 1 << 16  # bytes of a line read at a time from an mbox (a longer one is read in pieces)

XML_TYPES = {"application/xml", "text/xml"}
ZIP_TYPES = {"application/zip", "application/x-zip-compressed", "application/x-zip"}
TNEF_TYPES = {"application/ms-tnef", "application/vnd.ms-tnef"}
SMIME_TYPES = {"application/pkcs7-mime", "application/x-pkcs7-mime"}
SIGNATURE_TYPES = {"application/pkcs7-signature", "application/x-pkcs7-signature"}  # multipart/signed's protocol
MAX_CLEAR_SIGNED = 8  # clear-signed parts checked in one message (each a search of its bytes and a key operation)
_BROKEN_BASE64 = (email.errors.InvalidBase64CharactersDefect, email.errors.InvalidBase64LengthDefect)
_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SPACE = re.compile(r"\s+")
# A boundary line: the first line of a multipart's body that begins with "--", up to 70 characters (RFC 2046
# 5.1.1), not ending in a space. RFC 2046 allows printable ASCII only; 8-bit bytes are taken too (a mailer that made
# its boundary of a non-ASCII text, "----=_Teil_\xc3\xa4" or an en dash, in UTF-8 or CP1252), counted as characters
_BOUNDARY_LINE = re.compile(rb"^--([!-~\x80-\xff](?:[ !-~\x80-\xff]{0,208}[!-~\x80-\xff])?)[ \t]*\r?$", re.MULTILINE)
_BOUNDARY_CHARS = 70
_SAFE_BOUNDARY = re.compile(r'[ !#-\[\]-~]+')  # what a quoted boundary parameter carries as it is (no quote, backslash)

# A ZIP found in a message: (its name, bytes, the message's identity) -> its documents (pipeline.unpack decides)
OpenZip = Callable[[str, bytes, dict], Iterator[Member]]


class _TooManyParts(Exception):
    pass


class _TooManyFields(Exception):
    pass


class _TooManyLines(Exception):
    pass


class Budget:
    """What the parser may still build for one message, all its levels together: MIME parts, header fields and
    lines. An attached message (.eml, a signed entity, a part split again) is parsed on its own, and each parse was
    bounded alone: a 12 MB message of 499 attached messages of 498 parts each made the parser build 250,000 parts
    (17 s CPU, MAIL_TOO_MANY_PARTS never said). Lines, because the parser's time and memory go by lines as much as
    by bytes: 40 MB of empty lines took 27 s and 650 MB, 40 MB of short header fields 26 s and 1.2 GB, where a
    40 MB message of base64 takes 2 s. A line counts as LINE_COST bytes toward `max_message`: real mail's lines
    are longer (base64 and quoted-printable 76 characters, an XML invoice's at least 35 on average)."""

    def __init__(self, max_message: int):
        self.parts, self.fields, self.lines = MAX_PARTS, MAX_FIELDS, max_message // LINE_COST
        self.max_lines = self.lines


class _HeaderTooLong(Exception):
    pass


UNREAD_TYPE = "application/x-header-too-long"   # stands for a Content-Type longer than MAX_HEADER


class _Policy(email.policy.EmailPolicy):
    """The modern policy (headers decoded per RFC 2047 / 2231, EmailMessage objects), with two changes for speed
    and safety: a header value is parsed once, not at every look (the parser itself looks at Content-Type several
    times per part; 2.5x faster, bench/README.md), and a header longer than MAX_HEADER is not parsed at all (the
    header parser's time grows faster than linearly: a 250 KB Subject took minutes)."""

    budget: Budget | None = None  # (set per message by `_parse`: each header field the parser reads takes one)

    def header_source_parse(self, sourcelines):
        if self.budget is not None:
            self.budget.fields -= 1
            if self.budget.fields < 0:
                raise _TooManyFields
        return super().header_source_parse(sourcelines)

    def header_fetch_parse(self, name, value):
        if hasattr(value, "name"):
            return value
        if len(value) > MAX_HEADER:
            if name.lower() != "content-type":
                raise _HeaderTooLong(name)
            value = UNREAD_TYPE  # the parser looks at every part's type: that part stays unread, not the message
        return _parsed(self.header_factory, name, _eight_bit(value))


def _eight_bit(value: str) -> str:
    """A header with raw 8-bit bytes (the parser keeps them as lone surrogates): read as UTF-8 (RFC 6532), as the
    header parser reads them itself, else as CP1252, where the parser made each byte U+FFFD: an older German
    mailer's Latin-1 `filename="Rechnung M\xe4rz.xml"` was named "Rechnung M\ufffdrz.xml"."""
    if value.isascii():
        return value
    try:
        raw = value.encode("ascii", "surrogateescape")
    except UnicodeEncodeError:  # real non-ASCII text (a header set as text), no raw bytes
        return value
    try:
        raw.decode("utf-8")
        return value
    except UnicodeDecodeError:
        return raw.decode("cp1252", "replace")


# A header as text, for one the modern parser fails on (`_parsed`)
_UNSTRUCTURED = email.headerregistry.HeaderRegistry(default_class=email.headerregistry.UnstructuredHeader,
                                                    use_default_map=False)


@functools.lru_cache(maxsize=1024)
def _parsed(factory, name: str, value: str):
    text = "".join(value.splitlines())
    try:
        return factory(name, text)
    except Exception:  # noqa: BLE001 - the standard library's header parser fails on some hostile values (IndexError
        # on a parameter `filename*0*` without `=`: 500 INTERNAL_ERROR for a 200-byte message): the value is kept
        # as text, which the message's own parameter reading (get_filename, get_param) takes apart
        return _UNSTRUCTURED(name, text)


class _Message(EmailMessage):
    """A part as the parser makes it, with two places where the standard library fails on hostile parameters made
    safe (each was 500 INTERNAL_ERROR for a batch of one small message)."""

    def _get_params_preserve(self, failobj, header):
        try:
            return super()._get_params_preserve(failobj, header)
        except (TypeError, ValueError):  # RFC 2231 sections numbered and not ("boundary*", "boundary*1*"): its
            # sort compares None with a number; the header's value without parameters then
            value = self.get(header)
            return failobj if value is None else [(str(value).split(";", 1)[0].strip(), "")]

    def get_payload(self, i=None, decode=False):
        try:
            return super().get_payload(i, decode)
        except TypeError:  # the text of a part with 8-bit bytes and an RFC 2231 charset ("charset*=utf-8''x"):
            # the standard library decodes it by the parameter's (charset, language, value) tuple
            if i is not None or decode or not isinstance(self._payload, str):
                raise
            return self._payload.encode("ascii", "surrogateescape").decode("ascii", "replace")


def _param(part: EmailMessage, name: str) -> str:
    """A parameter of the part's Content-Type as text (one in RFC 2231's form is a (charset, language, value) tuple
    to `get_param`: its decoded value)."""
    return email.utils.collapse_rfc2231_value(part.get_param(name) or "")


POLICY = _Policy(message_factory=_Message)


def looks_like_mail(head: bytes) -> bool:
    """A message by its first bytes: header lines (`Name: value`, folded lines) up to the first blank line or the
    end of `head`, among them From, Date, Message-ID, MIME-Version, Received or Return-Path."""
    lines = head.lstrip(b"\r\n").split(b"\n")[:-1] or [head]
    names = set()
    for line in lines[:200]:
        line = line.rstrip(b"\r")
        if not line:
            break
        if line[:1] in (b" ", b"\t") and names:
            continue
        name, colon, _ = line.partition(b":")
        if not colon or not re.fullmatch(rb"[!-9;-~]+", name):
            return False
        names.add(name.lower())
    return bool(names & {b"from", b"date", b"message-id", b"mime-version", b"received", b"return-path"})


def is_mbox(head: bytes) -> bool:
    return head.startswith(b"From ")


def read_mbox(stream, prefix: str, limits: Limits, room: Room, open_zip: OpenZip) -> Iterator[Member]:
    """The documents of every message of an mbox (messages begin at "From " envelope lines: `_mbox_messages`),
    read one message at a time from a binary stream: a mailbox of any size is never held whole."""
    index = 0
    for data in _mbox_messages(stream, limits.max_message):
        index += 1
        if isinstance(data, _TooLarge):
            yield _too_large(data.head, prefix, limits, index)
        else:
            yield from read_message(data, prefix, limits, room, open_zip, index)


class _TooLarge:
    """A message larger than the limit, skipped: its first bytes only, for its headers (its name)."""

    def __init__(self, head: bytes):
        self.head = head


_HEAD_KEPT = 64 * 1024

# The envelope line an mbox writer puts before each message (RFC 4155): "From " , the return path (some writers
# leave it out), then the date as asctime ("Sun Mar  1 08:00:00 2026", a zone before the year as Gmail writes
# it: "+0000 2026") or as RFC 5322 writes it ("Sun, 1 Mar 2026 08:00:00"). A body line that merely begins with
# "From " ("From 1 March on, please pay to ...") is none. Some writers put the return path alone ("From
# user@host") or an ISO 8601 date after it: such a line (`_BARE_ENVELOPE`) starts a message only after an empty
# line (or at the file's start) and followed by a header a message's head begins with (`_HEAD_FIRST`).
_DAY = rb"(?i:mon|tue|wed|thu|fri|sat|sun)"
_MONTH = rb"(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"
_TIME = rb"\d{1,2}:\d\d(?::\d\d)?"
_ENVELOPE = re.compile(rb"From (?:\S+ +)?(?:(?:" + _DAY + rb",? +)?" + _MONTH + rb" +\d{1,2} +" + _TIME
                       + rb"(?: +(?:[A-Za-z]{1,5}|[+-]\d{4}))* +\d{4}|" + _DAY + rb", +\d{1,2} +" + _MONTH
                       + rb" +\d{4} +" + _TIME + rb")(?:\s|$)")
_ISO_DATE = rb"\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d(?::?\d\d)?)?)?"
_BARE_ENVELOPE = re.compile(rb"From (?:[^\s@]*@[^\s@]+|MAILER-DAEMON)(?: +" + _ISO_DATE + rb")? *\r?\n?\Z")
_HEAD_FIRST = re.compile(rb"(?i:return-path|received|delivered-to|envelope-to|x-[!-9;-~]+|from|sender|date"
                         rb"|message-id|mime-version|dkim-signature|arc-[a-z-]+|authentication-results|to|subject"
                         rb"|reply-to|status):")
_HEADER_LINE = re.compile(rb"[!-9;-~]+:")
HEADER_START = re.compile(rb"[ \t\r\n]*[!-9;-~]+:")  # content that begins with a header line (a MIME entity)
_ESCAPED_FROM = re.compile(rb">+From ")


_BLOCK = 1 << 20  # bytes of an mbox read at a time
_SPECIAL = re.compile(rb"^>*From ", re.MULTILINE)  # a line that may start a message, or is one quoted (">From ")
_NOT_BLANK = re.compile(rb"[^ \t\r\n\x0b\x0c]")


class _Lines:
    """A binary stream read in blocks: a line at a time (as `readline(_MBOX_LINE)`: a longer line in pieces), or
    whole lines up to the next that begins with "From " or ">From " (`run`), so that a message's plain lines are taken
    together rather than one Python step each (20 MB of empty lines took 20 s so)."""

    def __init__(self, stream):
        self.stream, self.buf, self.pos = stream, b"", 0

    def _fill(self) -> bool:
        # the request's time budget (a job's upload), asked at each block: a block of "From 1" lines that begin no
        # message is 150,000 Python steps (0.3-0.6 s), and one message of them grows up to the file's end (2 GiB
        # of them took ~15 min of CPU, past the worker timeout)
        time_budget.check()
        block = self.stream.read(_BLOCK)
        if block:
            self.buf, self.pos = self.buf[self.pos:] + block, 0
        return bool(block)

    def _take(self, end: int) -> bytes:
        out, self.pos = self.buf[self.pos:end], end
        return out

    def readline(self) -> bytes:
        while True:
            end = self.buf.find(b"\n", self.pos, self.pos + _MBOX_LINE)
            if end >= 0:
                return self._take(end + 1)
            if len(self.buf) - self.pos >= _MBOX_LINE or not self._fill():
                return self._take(min(len(self.buf), self.pos + _MBOX_LINE))

    def run(self) -> bytes:
        """Whole lines from here (a line's start) up to the next that begins with "From " or ">From ", or up to the
        last whole line read so far; b"" where the next line is such a line, or is not read whole yet."""
        if _SPECIAL.match(self.buf, self.pos):  # (the next line is one: no search for the last whole line)
            return b""
        while (whole := self.buf.rfind(b"\n", self.pos) + 1) == 0 and len(self.buf) - self.pos < _MBOX_LINE \
                and self._fill():
            pass
        if whole == 0:
            return b""
        stop = _SPECIAL.search(self.buf, self.pos, whole)
        return self._take(stop.start() if stop is not None else whole)


def _kept(lines: bytearray, size: int, piece: bytes, limit: int, head: bytes) -> bytes:
    """Add `piece` to the message while its `size` is within `limit`; past it, drop its bytes and keep their start,
    which names the message skipped as too large. Returns that start (`head` until then)."""
    if size <= limit:
        lines += piece
    elif lines:
        head = bytes(lines[:_HEAD_KEPT])
        lines.clear()
    return head


def _mbox_messages(stream, limit: int) -> Iterator[bytes | _TooLarge]:
    """Each message's bytes (the "From " line left out, mboxrd's and mboxo's ">From " quoting taken off), or
    _TooLarge for one larger than `limit` (skipped).

    Not every writer quotes a body line that begins with "From ", so such a line starts a new message only where
    it is an envelope (`_ENVELOPE`) followed by a header line, as every message begins, after the empty line
    RFC 4155 has writers put before it or without it (mailboxes pasted together); a bare one (`_BARE_ENVELOPE`:
    "From user@host", maybe with an ISO date) only after an empty line and followed by a header of `_HEAD_FIRST`.
    Else a message would be cut in two at "From our accounts department: ..." or at an envelope line quoted in a
    body after an empty line, and the attachments after the cut lost to it."""
    lines: bytearray | None = None  # the message's bytes so far (a list of its lines took 90 bytes a line:
    # 20 MB of empty lines made 1.8 GB)
    size, at_start, after_blank, head = 0, True, True, b""
    ahead: bytes | None = None  # a line read to decide whether the line before it starts a message
    source = _Lines(stream)
    while True:
        if ahead is None and at_start and (run := source.run()):  # whole lines none of which can start a message
            if lines is None:  # (before the first message: blank lines are left out, the first other opens one)
                text = _NOT_BLANK.search(run)
                if text is not None:
                    first = run.rfind(b"\n", 0, text.start()) + 1
                    lines, size, head = bytearray(run[first:]), len(run) - first, b""
            else:
                size += len(run)
                head = _kept(lines, size, run, limit, head)
            after_blank = run in (b"\n", b"\r\n") or run.endswith((b"\n\n", b"\n\r\n"))
            continue
        line, ahead = (ahead, None) if ahead is not None else (source.readline(), None)
        starts = at_start and line.startswith(b"From ")
        if starts and lines is not None:  # not the file's first line: an envelope, then a header line?
            asctime = _ENVELOPE.match(line) is not None
            starts = asctime or (after_blank and _BARE_ENVELOPE.match(line) is not None)
            if starts:
                ahead = source.readline()
                starts = (_HEADER_LINE if asctime else _HEAD_FIRST).match(ahead) is not None
        if not line or starts:
            if lines is not None:
                yield bytes(lines) if size <= limit else _TooLarge(head)
            if not line:
                return
            lines, size, head = bytearray(), 0, b""
        elif lines is None and line.strip():  # a ".mbox" without its "From " line (an .eml renamed): one message
            lines, size, head = bytearray(line), len(line), b""
        elif lines is not None:
            if at_start and _ESCAPED_FROM.match(line):
                line = line[1:]
            size += len(line)
            head = _kept(lines, size, line, limit, head)
        after_blank = at_start and line in (b"\n", b"\r\n")
        at_start = line.endswith(b"\n")


def _too_large(head: bytes, prefix: str, limits: Limits, index: int) -> Member:
    """The entry of a message too large to read, named by its headers where they are readable."""
    ident = identity(_headers_only(head), index)
    return Member(_join(prefix, label(ident)), error=_message_too_large(limits), email=ident)


# The time one message may take to read outside a request (the command line, `pipeline inbox`): within one, the
# request's budget bounds it (503 TIME_BUDGET for the upload), outside there was none. The parts' bounds leave a
# message of 499 parts with 8 KB of parameters in a header each (3.9 MB): 22-28 s of CPU in the modern header
# parser, 50-83 s on a busy host, per message (tests/test_mail_more3_budget.py). A real message's parse takes
# ~0.05 s of CPU per MB (a 41 MB one of base64 attachments 2 s), so its share grows with its size, ten times that
# and more; a hostile message padded to the largest allowed gets 30 s at the default upload limit.
MESSAGE_SECONDS = 10.0
MESSAGE_SECONDS_PER_MB = 0.5


def message_seconds(size: int) -> float:
    """The time a message of `size` bytes may take to read outside a request (`_own_budget`)."""
    return MESSAGE_SECONDS + MESSAGE_SECONDS_PER_MB * size / (1 << 20)


def _time_spent(seconds: float) -> tuple[str, str]:
    return "MAIL_TIME_BUDGET", (f"Reading the message took longer than {seconds:g} s, the time a message of its size "
                                "may take (many parts with long header parameters cost the e-mail parser most); "
                                "it was read no further.")


def _own_budget(members: Iterator[Member], seconds: float, spent: Callable[[], Member]) -> Iterator[Member]:
    """`members` (one message's documents), read under a time budget of `seconds` of their own where no request's
    is open: the same checks (`pipeline.budget`) stop the parser and the walk as within a request, and a message
    they stop is one entry, `spent()`, after the documents found before it; the run goes on with the next. Only
    the reading counts: the budget is open while a document is looked for, never while the caller works on one
    (a validation's stages would be refused by it)."""
    if time_budget.remaining() is not None:  # within a request (or an enclosing message): its budget applies
        yield from members
        return
    left = seconds
    while True:
        token = time_budget.start(left)
        try:
            member = next(members)
        except StopIteration:
            return
        except time_budget.Exhausted:
            member = None
        finally:
            left = time_budget.remaining()
            time_budget.end(token)
        yield member if member is not None else spent()  # (its budget closed: the caller's work never meets it)
        if member is None:
            return


def read_message(data: bytes, prefix: str, limits: Limits, room: Room, open_zip: OpenZip,
                 index: int = 1, apart: str = "", stored: apple.Apart | None = None) -> Iterator[Member]:
    """The documents of one message: its invoices, else one entry that says why there are none. `apart`: where
    Apple Mail keeps the attachments of this message it stored apart from it, `stored`: those files where they
    were given with it (`read_emlx`). Outside a request, within a time of its own (`_own_budget`)."""
    if len(data) > limits.max_message:
        yield _too_large(data[:_HEAD_KEPT], prefix, limits, index)
        return
    seconds = message_seconds(len(data))

    def spent() -> Member:
        ident = identity(_headers_only(data), index)
        return Member(_join(prefix, label(ident)), error=_time_spent(seconds), email=ident)

    yield from _own_budget(_read_message(data, prefix, limits, room, open_zip, index, apart, stored), seconds, spent)


def _read_message(data: bytes, prefix: str, limits: Limits, room: Room, open_zip: OpenZip, index: int, apart: str,
                  stored: apple.Apart | None) -> Iterator[Member]:
    budget = Budget(limits.max_message)
    try:
        message = _parse(data, budget)
    except _UNREAD as exc:
        ident = identity(_headers_only(data), index)
        yield Member(_join(prefix, label(ident)), error=_unread(exc, budget), email=ident)
        return
    ident = identity(message, index)
    reader = _Reader(ident, limits, room, open_zip, budget, stored)
    reader.sources.append(data)
    if stored is not None:
        reader.sections = _sections(message)
    found = False
    try:
        for member in reader.walk(message, _join(prefix, label(ident)), 0):
            found = True
            yield member
        if reader.stubs:  # the message's stored files no part stood for: its attachments too
            for member in reader.stored_left(_join(prefix, label(ident))):
                found = True
                yield member
    except _HeaderTooLong as exc:  # a part's header, looked at as the walk reaches it
        found = True
        yield Member(_join(prefix, label(ident)), error=_header_too_long(exc), email=ident)
    except _SPENT as exc:  # an attached message took what was left of the message's budget
        found = True
        yield Member(_join(prefix, label(ident)), error=_unread(exc, budget), email=ident)
    if not found:
        yield no_invoice(_join(prefix, label(ident)), reader.others, ident, reader.apart, apart)


# Apple Mail's message file: a line with the message's length in bytes (padded with blanks), the message, then a
# property list of Mail's own (flags, dates; XML, in old files binary), which is no document
_EMLX_COUNT = re.compile(rb"[ \t]*(\d{1,15})[ \t]*\r?\n")
_PLIST_TAIL = re.compile(rb"\s*(?:<\?xml|<!DOCTYPE plist|<plist|bplist0)")


def is_emlx(head: bytes) -> bool:
    """An Apple Mail message file (.emlx) by its first bytes: its length line, then a message's headers."""
    count = _EMLX_COUNT.match(head)
    return count is not None and looks_like_mail(head[count.end():])


def read_emlx(data: bytes, prefix: str, limits: Limits, room: Room, open_zip: OpenZip,
              file: str = "message.emlx", stored: apple.Apart | None = None) -> Iterator[Member]:
    """The documents of an Apple Mail message file (.emlx; .partial.emlx): the message of as many bytes as its first
    line says, read as an .eml's; the property list after it is Mail's own, never a document. A length the file
    does not bear out (cut short, or followed by anything but the property list) is one MAIL_DAMAGED entry named
    `prefix`, else `file`: the message's end is not known, and no invoice is read from a guess.

    A .partial.emlx is a message Apple Mail stored without (some of) its attachments: each such part keeps its
    headers, with X-Apple-Content-Length, and no body; its file is in `Attachments/<number>/<section>/` beside the
    mailbox's Messages folder, or `<number>.<section>.emlxpart` beside the message (pipeline.unpack.apple).
    `stored`: those files where they were given with the message (a folder, a ZIP of the mailbox, a job's
    parts), each read as the part it stands for, named by the message as its other attachments are; a part whose
    file was not given is named in the message's NO_INVOICE notice."""
    where = prefix or file
    count = _EMLX_COUNT.match(data)
    if count is None:
        yield Member(where, error=("MAIL_DAMAGED", "The Apple Mail message (.emlx) does not begin with its length "
                                   "in bytes; it was not read."))
        return
    size, start = int(count.group(1)), count.end()
    message, tail = data[start:start + size], data[start + size:]
    ident = identity(_headers_only(data[start:start + _HEAD_KEPT]), 1)
    if len(message) < size:
        yield Member(where, email=ident, error=("MAIL_DAMAGED", f"The Apple Mail message (.emlx) says it is {size} "
                     f"bytes long, but only {len(message)} follow (the file is cut short); it was not read."))
        return
    if tail.strip() and _PLIST_TAIL.match(tail) is None:
        yield Member(where, email=ident, error=("MAIL_DAMAGED", f"The Apple Mail message (.emlx) says it is {size} "
                     "bytes long, but Mail's property list does not follow them (the length is wrong); it was not "
                     "read."))
        return
    number = file.replace("\\", "/").rsplit("/", 1)[-1].split(".", 1)[0]
    yield from read_message(message, prefix, limits, room, open_zip, 1, f"Attachments/{number}/", stored)


def read_msg(data: bytes, prefix: str, limits: Limits, room: Room, open_zip: OpenZip, file: str = "message.msg",
             depth: int = 0, outer: dict | None = None) -> Iterator[Member]:
    """The documents of an Outlook .msg file (pipeline.unpack.outlook), named under `prefix` as an .eml's are; a
    file that cannot be read is one MSG_UNREADABLE entry named `prefix`, or `file` (its own name) where there is
    none. `outer`: the e-mail the file is attached to, which its documents come from (as a forwarded message's);
    a .msg without an invoice attached to one adds no notice of its own (that message's says it). Outside a request,
    within a time of its own, as a message's (`_own_budget`: the messages attached to it are parsed as e-mail)."""
    seconds = message_seconds(len(data))
    yield from _own_budget(_read_msg(data, prefix, limits, room, open_zip, file, depth, outer), seconds,
                           lambda: Member(prefix or file, error=_time_spent(seconds), email=outer))


def _read_msg(data: bytes, prefix: str, limits: Limits, room: Room, open_zip: OpenZip, file: str, depth: int,
              outer: dict | None) -> Iterator[Member]:
    try:
        message = outlook.read(data, limits.max_member, MAX_PARTS, MAX_DEPTH - depth)
    except outlook.Unreadable as exc:
        yield Member(prefix or file, error=_msg_unreadable(str(exc)), email=outer)
        return
    ident = {**_msg_identity(message), "index": 1}
    where = _join(prefix, label(ident))
    reader = _Reader(outer or ident, limits, room, open_zip)
    found = False
    for member in reader.msg(message, where, depth):
        found = True
        yield member
    if not found and outer is None:
        yield no_invoice(where, reader.others, ident)


def _msg_identity(message: outlook.Message) -> dict:
    """An Outlook message's identity as `identity` gives an e-mail's: from the headers it was received with where
    it has them, else from its properties (a message saved from Sent Items, or a draft, has none)."""
    if message.headers.strip():
        ident = identity(_headers_only(message.headers.encode("utf-8", "surrogatepass")), None)
        if ident["messageId"] or ident["date"] or ident["from"]:
            ident["subject"] = ident["subject"] or clean(message.subject, 300, name=False)
            return ident
    return {"messageId": clean(message.message_id, name=False), "date": clean(message.date, name=False),
            "from": clean(message.sender, name=False), "subject": clean(message.subject, 300, name=False)}


def _msg_unreadable(why: str) -> tuple[str, str]:
    return "MSG_UNREADABLE", f"The Outlook message (.msg) could not be read: {why}."


def no_invoice(name: str, others: list[str], ident: dict, apart: list[str] = (), where: str = "") -> Member:
    """The one entry of a message without an invoice, naming (some of) the attachments it has instead, and those
    Apple Mail stored apart from it (`read_emlx`), with where their files are."""
    shown = ", ".join(others[:10]) + (", ..." if len(others) > 10 else "")
    beside = f" (attached: {shown})" if shown else ""
    text = f"The message has no invoice: no XML, PDF, ZIP or winmail.dat attachment{beside}."
    if apart:
        kept = ", ".join(apart[:10]) + (", ..." if len(apart) > 10 else "")
        text = (f"The message holds no invoice itself: Apple Mail stored its attachments {kept} apart from it "
                f"(.partial.emlx), in the folder {where or 'Attachments/'} beside its Messages folder, and they "
                "were not given with it. Give the mailbox's folder (or a ZIP of it) with its Attachments folder: "
                "they are read as this message's attachments." + (f" Attached here: {shown}." if shown else ""))
    return Member(name, error=("NO_INVOICE", text), email=ident)


class _Reader:
    """One message's walk: its identity, the upload's bounds, and the attachments that were not invoices."""

    def __init__(self, ident: dict, limits: Limits, room: Room, open_zip: OpenZip, budget: Budget | None = None,
                 stored: apple.Apart | None = None):
        self.ident, self.limits, self.room, self.open_zip = ident, limits, room, open_zip
        self.budget = budget or Budget(limits.max_message)  # (an Outlook .msg's attached messages: one of their own)
        self.others: list[str] = []
        self.apart: list[str] = []  # attachments Apple Mail stored apart from the message, not given (.partial.emlx)
        self.stored = stored  # those that were given with it
        self.sections: dict[int, str] = {}  # id(part) -> its IMAP section number, where `stored` is given
        self.stubs = 0  # parts that stand for a stored attachment
        self.parts = 0
        self.too_deep = False
        self.sources: list[bytes] = []  # the bytes of each message or entity parsed: where signed parts are found
        self.clear_signed_left = MAX_CLEAR_SIGNED

    def walk(self, part: EmailMessage, where: str, depth: int) -> Iterator[Member]:
        time_budget.check()  # each part: its header fields are parsed as the walk looks at them (about 0.1 s for 8 KB)
        if depth > MAX_DEPTH:
            if not self.too_deep:  # one entry for the message, however many branches go too deep
                self.too_deep = True
                yield Member(where, error=_too_deep(), email=self.ident)
            return
        ctype = part.get_content_type()
        if ctype == "multipart/encrypted" or ctype == "application/pgp-encrypted":
            yield Member(where, error=("PGP_ENCRYPTED", "The message is encrypted with PGP/MIME; it cannot be read "
                                       "without the recipient's key."), email=self.ident)
            return
        if part.get_content_maintype() == "multipart" and not part.is_multipart():
            yield from self.unsplit(part, where, depth)
            return
        if part.is_multipart():
            if part.get_content_maintype() == "message":  # message/rfc822: a forwarded or attached message
                if part.get_content_subtype() == "external-body":  # only where the content lies: none here
                    self.others.append(part.get_content_type())
                    return
                if part.get_content_subtype() == "partial":  # one piece of a message (RFC 2046 5.2.2): its
                    yield Member(where, error=_PARTIAL, email=self.ident)  # attachments cut at the piece's end
                    return
                inner = part.get_payload(0)
                if (part.get("content-transfer-encoding") or "").strip().lower() == "base64":
                    yield from self.encoded_message(inner, where, depth)
                    return
                yield from self.walk(inner, _join(where, label(identity(inner, None))), depth + 1)
            elif ctype == "multipart/signed" and _param(part, "protocol").lower() in SIGNATURE_TYPES:
                yield from self.clear_signed(part, where, depth)
            else:
                for sub in part.iter_parts():  # (a forwarded message is one level with its message/rfc822 part)
                    yield from self.walk(sub, where, depth + (sub.get_content_maintype() != "message"))
            return
        if ctype in SMIME_TYPES or (_filename(part) or "").lower().endswith(".p7m"):
            yield from self.smime(part, where, depth)
            return
        self.parts += 1
        name = _filename(part)
        try:
            if ctype == UNREAD_TYPE:
                raise _HeaderTooLong("Content-Type")
            data = _payload(part)  # (its Content-Transfer-Encoding looked at)
            attached = _attached(part, name)  # (its Content-Disposition)
        except _HeaderTooLong as exc:  # this part's own header: the parts beside it are read
            named = _join(where, name or f"part-{self.parts}") if depth else where
            yield Member(named, email=self.ident, error=_header_too_long(exc, part=depth > 0))
            return
        if not data.strip() and part.get("x-apple-content-length") is not None:  # (a .partial.emlx's part)
            self.stubs += 1
            kept = self.stored and self.stored.take(self.sections.get(id(part)), name, "base64" in str(
                part.get("content-transfer-encoding") or "").lower())
            if not kept:
                self.apart.append(name or ctype)
                return
            name = name or kept.name or None
            if kept.error is not None:
                yield Member(_join(where, name or f"part-{self.parts}"), error=kept.error, email=self.ident)
                return
            data, attached = kept.data, True
        kind = _kind(ctype, name, data, attached)
        if kind is None:
            if attached:
                self.others.append(name or ctype)
            if ctype == "text/plain":
                yield from self.uuencoded(data, where, depth)
            return
        name = _join(where, name or f"part-{self.parts}.{kind}")
        if _broken_base64(part):
            yield Member(name, error=("BROKEN_ENCODING", "The attachment's base64 is damaged (characters outside "
                                      "base64, or a cut last group); it was not read."), email=self.ident)
            return
        yield from self.attachment(name, data, kind, depth)

    def stored_left(self, where: str) -> Iterator[Member]:
        """The message's stored attachments (.partial.emlx) that no part of it took, each taken as an attachment."""
        for n, kept in enumerate(self.stored.left() if self.stored else (), start=1):
            if kept.error is not None:
                yield Member(_join(where, kept.name or f"stored-{n}"), error=kept.error, email=self.ident)
                continue
            kind = _kind("application/octet-stream", kept.name, kept.data, True)
            if kind is None:
                self.others.append(kept.name or "stored attachment")
            else:
                yield from self.attachment(_join(where, kept.name or f"stored-{n}.{kind}"), kept.data, kind, 1)

    def encoded_message(self, parsed: EmailMessage, where: str, depth: int) -> Iterator[Member]:
        """A message/rfc822 part in base64 (RFC 2046 forbids it; Outlook and some gateways forward so): the parser
        took the base64 text for a message of no headers and the forwarded invoices were lost (NO_INVOICE). The
        text is decoded and read as the attached message it is."""
        text = parsed.get_payload()
        text = text if isinstance(text, str) else ""  # (base64 has no ":" a header would need: all of it is body)
        try:
            data = base64.b64decode(re.sub(r"\s+", "", text), validate=True)
        except ValueError:  # (binascii.Error)
            yield Member(where, error=("BROKEN_ENCODING", "The attached message's base64 is damaged; it was not "
                                       "read."), email=self.ident)
            return
        yield from self.attachment(where, data, "eml", depth)

    def smime(self, part: EmailMessage, where: str, depth: int) -> Iterator[Member]:
        """An opaque S/MIME block (application/pkcs7-mime, or any attachment named *.p7m: a signed invoice file
        sent as application/octet-stream was NO_INVOICE): `signed`."""
        yield from self.signed(where, _filename(part), _payload(part),
                               _param(part, "smime-type").lower(), depth)

    def signed(self, where: str, file: str | None, data: bytes, declared: str, depth: int) -> Iterator[Member]:
        """A PKCS#7 block (DER, or base64 text) of the message at `where`, the message's own body (depth 0) or a
        file attached as `file` (its smime-type parameter: `declared`). Signed or compressed, its MIME entity is
        taken out and read as the message's body (Outlook's opaque-signed invoices were SMIME_OPAQUE, never
        checked), a bare document in it is named by the file's name without ".p7m" (a file signed twice,
        x.xml.p7m.p7m, is taken apart twice); encrypted, or a block we cannot take apart, one entry that says so."""
        named = _join(where, file) if file and depth else where
        if depth > MAX_DEPTH:
            yield Member(named, error=_too_deep(), email=self.ident)
            return
        if is_entity(data):  # Outlook's .msg of a clear-signed message: the whole multipart/signed as "smime.p7m"
            entity = self.parsed(data, where)
            yield from [entity] if isinstance(entity, Member) else self.walk(entity, where, depth + 1)
            return
        try:
            inner, said = smime.opened(der(data), self.limits.max_message)
        except smime.Encrypted:
            yield Member(named, error=_SMIME_ENCRYPTED, email=self.ident)
            return
        except smime.Unreadable as exc:
            if declared in ("enveloped-data", "authenveloped-data"):
                yield Member(named, error=_SMIME_ENCRYPTED, email=self.ident)
            elif named != where:
                yield Member(named, email=self.ident, error=("SMIME_OPAQUE", f"The attached signed file (PKCS#7) "
                             f"could not be read: {exc}."))
            else:
                yield Member(where, email=self.ident, error=("SMIME_OPAQUE", f"The message is S/MIME in one opaque "
                             f"block that could not be read: {exc}. Ask the sender for a clear-signed "
                             "(multipart/signed) message."))
            return
        if HEADER_START.match(inner) is None:  # no MIME entity: a bare document signed as it is (XML, PDF)
            kind = "p7m" if _DER_BLOCK.match(inner) else _kind("application/octet-stream", None, inner, True)
            if kind is not None:
                name = (file[:-4] if file and file.lower().endswith(".p7m") else "") or "smime"  # x.xml.p7m: x.xml
                name = name if name.lower().endswith(f".{kind}") else f"{name}.{kind}"
                yield from signature.attach(self.attachment(_join(where, name), inner, kind, depth + 1), said)
                return
        self.room.take(len(inner))
        entity = self.parsed(inner, where)
        yield from signature.attach([entity] if isinstance(entity, Member) else self.walk(entity, where, depth + 1),
                                    said)

    def uuencoded(self, body: bytes, where: str, depth: int) -> Iterator[Member]:
        """Files uuencoded into a text body (`begin 644 rechnung.xml` ... `end`), as older mailers and Outlook's
        "plain text, UUENCODE" setting attach them: each taken as an attachment (they were NO_INVOICE)."""
        at = 0
        while (begin := _UU_BEGIN.search(body, at)) is not None:
            end = _UU_END.search(body, begin.end())
            if end is None:  # (no later block can end either: stop, rather than search again from each "begin")
                return
            at = end.end()
            name = clean(begin.group(1).decode("utf-8", "surrogateescape").replace("\\", "/").rsplit("/", 1)[-1])
            data = _uudecode(body[begin.end():end.start()])
            if data is None:
                yield Member(_join(where, name or "attachment"), email=self.ident, error=(
                    "BROKEN_ENCODING", "The uuencoded attachment is damaged; it was not read."))
                continue
            kind = _kind("application/octet-stream", name, data, True)
            if kind is None:
                self.others.append(name or "uuencoded file")
            else:
                yield from self.attachment(_join(where, name or f"attachment.{kind}"), data, kind, depth + 1)

    def parsed(self, data: bytes, where: str) -> EmailMessage | Member:
        """A message (or MIME entity) found inside this one, parsed; or the entry that says why it cannot be."""
        try:
            parsed = _parse(data, self.budget)
        except _SPENT:
            raise  # (the message's budget: read no further, one entry for the message, `read_message`)
        except _UNREAD as exc:
            return Member(where, error=_unread(exc, self.budget), email=self.ident)
        self.sources.append(data)
        return parsed

    def clear_signed(self, part: EmailMessage, where: str, depth: int) -> Iterator[Member]:
        """A clear-signed message (multipart/signed, RFC 5751 3.5, Outlook's default): its parts are read as any
        multipart's, each document of the first with what the second, the signature, says of that part's bytes."""
        parts = list(part.iter_parts())
        said = None
        if len(parts) == 2 and self.clear_signed_left <= 0:
            said = signature.skipped()
        elif len(parts) == 2:
            self.clear_signed_left -= 1
            signed = self.signed_part(part.get_boundary())
            block = der(_payload(parts[1]))
            said = signature.unlocated() if signed is None else smime.detached(block, signed)
        for n, sub in enumerate(parts):
            inner = self.walk(sub, where, depth + 1)
            yield from signature.attach(inner, said) if n == 0 else inner

    def signed_part(self, boundary: str | None) -> bytes | None:
        """The first part of a multipart/signed as it was sent: the bytes between its first two boundary lines
        (the line end before the second belongs to it), line ends made CRLF (RFC 5751 3.1.1: what was signed),
        found in the message or entity it was parsed from."""
        if not boundary or not boundary.isascii():
            return None
        mark = re.escape(boundary.encode("ascii"))
        start, end = re.compile(rb"^--" + mark + rb"[ \t]*\r?\n", re.MULTILINE), re.compile(rb"\r?\n--" + mark)
        for raw in reversed(self.sources):
            first = start.search(raw)
            second = end.search(raw, first.end()) if first else None
            if second is not None:
                return re.sub(rb"\r?\n", b"\r\n", raw[first.end():second.start()])
        return None

    def unsplit(self, part: EmailMessage, where: str, depth: int) -> Iterator[Member]:
        """A multipart the parser could not split: no boundary parameter (or one unquoted with `=` in it, as
        some mailers write it), or one that never occurs in the body. Its parts are split at the boundary its
        body begins with instead; where it has none, the part is an entry of its own (MAIL_DAMAGED), never
        NO_INVOICE: its attachments are there, they cannot be told apart."""
        body = part.get_payload(decode=True) or b""
        mark = _boundary_in(part, body)
        if mark is not None:
            mark, body = _ascii_boundary(mark, body)
            params = "".join(f'; {k}="{v}"' for k, v in (part.get_params() or [])[1:]
                             if k.lower() != "boundary" and _SAFE_BOUNDARY.fullmatch(f"{k}{v}"))  # (protocol=...)
            head = f'Content-Type: {part.get_content_type()}{params}; boundary="'.encode() + mark + b'"\n\n'
            inner = self.parsed(head + body, where)
            if isinstance(inner, Member):
                yield inner
                return
            if inner.is_multipart():
                yield from self.walk(inner, where, depth + 1)
                return
        if body.strip():
            yield Member(where, email=self.ident, error=("MAIL_DAMAGED", f"The message's {part.get_content_type()} "
                         "part has no boundary its body holds, so its attachments cannot be told apart; it was "
                         "not read."))

    def attachment(self, name: str, data: bytes, kind: str, depth: int) -> Iterator[Member]:
        if len(data) > self.limits.max_member:
            yield Member(name, error=member_too_large(self.limits.max_member), email=self.ident)
            return
        self.room.take(len(data))
        if kind == "zip":
            yield from self.open_zip(name, data, self.ident)
        elif kind == "eml":
            inner = self.parsed(data, name)
            if isinstance(inner, Member):
                yield inner
            else:
                yield from self.walk(inner, _join(name, label(identity(inner, None))), depth + 1)
        elif kind == "tnef":
            yield from self.tnef(name, data, depth)
        elif kind == "msg":
            yield from read_msg(data, name, self.limits, self.room, self.open_zip, name.rsplit("/", 1)[-1],
                                depth + 1, self.ident)
        elif kind == "p7m":  # (a signed file inside a winmail.dat, uuencoded, or signed twice)
            where, _, file = name.rpartition("/")
            yield from self.signed(where, file, data, "", depth)
        else:
            yield Member(name, data, email=self.ident)

    def msg(self, message: outlook.Message, where: str, depth: int) -> Iterator[Member]:
        """An Outlook message's attachments (`read_msg`), each taken as an e-mail's attachment is."""
        if message.too_deep:
            yield Member(where, error=_too_deep(), email=self.ident)
            return
        for n, item in enumerate(message.attachments, start=1):
            name = clean(item.name.replace("\\", "/").rsplit("/", 1)[-1])
            name = name if name.strip(".") else ""
            if item.message is not None:  # an Outlook message attached as one: under its own name
                yield from self.msg(item.message, _join(where, label(_msg_identity(item.message))), depth + 1)
            elif item.problem == "linked":
                self.others.append(name or "linked attachment")
            elif item.problem == "too large":
                yield Member(_join(where, name or f"attachment-{n}"), error=member_too_large(self.limits.max_member),
                             email=self.ident)
            elif item.problem is not None:
                yield Member(_join(where, name or f"attachment-{n}"), email=self.ident, error=_msg_unreadable(
                    f"{item.problem}; it was not read"))
            else:
                kind = _kind(item.ctype or "application/octet-stream", name, item.data, True)
                if kind is None:
                    self.others.append(name or item.ctype or "attachment")
                else:
                    yield from self.attachment(_join(where, name or f"attachment-{n}.{kind}"), item.data, kind, depth)
        if message.too_many:
            yield Member(where, email=self.ident, error=("MAIL_TOO_MANY_PARTS", f"The message has more than "
                                                         f"{MAX_PARTS} attachments; it was read no further."))

    def tnef(self, name: str, data: bytes, depth: int) -> Iterator[Member]:
        """winmail.dat: its files, each taken as an attachment of the message (TNEF inside TNEF too)."""
        try:
            contents = tnef.attachments(data)
        except tnef.Unreadable as exc:
            yield Member(name, error=("TNEF_UNREADABLE", f"The winmail.dat (TNEF) could not be read: {exc}."),
                         email=self.ident)
            return
        for inner_name, inner in contents.files:
            inner_name = clean(inner_name) or "attachment"
            kind = _kind("application/octet-stream", inner_name, inner, True)
            if kind is None:
                self.others.append(inner_name)
            else:
                yield from self.attachment(_join(name, inner_name), inner, kind, depth + 1)
        if contents.damaged is not None:  # the files before the cut are whole; the one it falls in is not
            inner_name, problem = contents.damaged
            yield Member(_join(name, clean(inner_name) or "attachment") if inner_name else name, email=self.ident,
                         error=("TNEF_UNREADABLE", f"The winmail.dat (TNEF) could not be read whole: {problem}."))


def _boundary_in(part: EmailMessage, body: bytes) -> bytes | None:
    """The boundary a multipart's body is split at, as its bytes: the declared one where a line of the body is it
    (a non-ASCII boundary: the parser compares the text it decoded the header to with the body's raw bytes, and
    never found it), else the first line that looks like a boundary (`_BOUNDARY_LINE`)."""
    try:
        declared = part.get_boundary()
    except Exception:  # noqa: BLE001 - a parameter the header parser cannot take apart: the body's line decides
        declared = None
    for encoding in ("utf-8", "cp1252"):
        try:
            raw = declared.encode(encoding) if declared else b""
        except UnicodeEncodeError:
            continue
        if raw and re.search(rb"^--" + re.escape(raw) + rb"(?:--)?[ \t]*\r?$", body, re.MULTILINE):
            return raw
    for line in _BOUNDARY_LINE.finditer(body):
        if len(line.group(1).decode("utf-8", "replace")) <= _BOUNDARY_CHARS:
            return line.group(1)
    return None


def _ascii_boundary(mark: bytes, body: bytes) -> tuple[bytes, bytes]:
    """A boundary the parser can split at: `mark` where it is one a quoted parameter carries as it is (printable
    ASCII, no quote or backslash); else the body with each of its lines (`--mark`, `--mark--`) put as a stand-in
    of printable ASCII that the body does not hold."""
    if _SAFE_BOUNDARY.fullmatch(mark.decode("latin-1")):
        return mark, body
    n = 0
    while (stand_in := b"=_boundary_%d_" % n + mark.hex().encode()[:40]) in body:
        n += 1
    line = re.compile(rb"^--" + re.escape(mark) + rb"(--)?(?=[ \t]*\r?$)", re.MULTILINE)
    return stand_in, line.sub(lambda m: b"--" + stand_in + (m.group(1) or b""), body)


# A uuencoded file: "begin <mode> <name>", lines of encoded data, a last line of length zero ("`" or " "), "end"
_UU_BEGIN = re.compile(rb"^begin [0-7]{3,4} ([^\r\n]*[^\s])[ \t]*\r?\n", re.MULTILINE)
_UU_END = re.compile(rb"^end[ \t]*\r?$", re.MULTILINE)


_DER_BLOCK = re.compile(rb"\x30[\x80-\x84]")  # a SEQUENCE of a long or open length: a CMS block, never text
_PEM_LINE = re.compile(rb"^-----(BEGIN|END) [A-Z0-9 ]+-----[ \t]*\r?$", re.MULTILINE)


def is_entity(data: bytes) -> bool:
    """Whether a file named as a signed one (.p7m) is a MIME entity in text instead: Outlook keeps a clear-signed
    message it received as an attachment "smime.p7m" holding the whole multipart/signed (MS-OXOSMIME 2.1.3.2)."""
    return data.lstrip()[:13].lower() == b"content-type:"


def der(data: bytes) -> bytes:
    """A PKCS#7 block as DER: a .p7m file is often base64 text (PEM armour or none) inside its base64 part."""
    if data[:1] == b"\x30":
        return data
    try:
        return base64.b64decode(b"".join(_PEM_LINE.sub(b"", data).split()), validate=True) or data
    except ValueError:  # (binascii.Error) not base64 either: the reader says what it is not
        return data


def _uudecode(text: bytes) -> bytes | None:
    """A uuencoded block's bytes, or None where a line is no uuencode. Many encoders pad a line's last group with
    characters past its length byte, which binascii refuses: such a line is decoded to its stated length."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            out.append(binascii.a2b_uu(line))
        except binascii.Error:
            size = (((line[0] - 32) & 63) * 4 + 5) // 3  # (the standard library uu module's own remedy)
            try:
                out.append(binascii.a2b_uu(line[:size]))
            except binascii.Error:
                return None
    return b"".join(out)


def _sections(message: EmailMessage) -> dict[int, str]:
    """Each leaf part's IMAP section number (RFC 3501 6.4.5), by id(part): a multipart's parts 1, 2, ... under its
    own number; a message/rfc822 part's message as its own number, its body (not multipart) `<number>.1`; a
    message of one part, that part "1". Apple Mail names the folders of a message's stored attachments so."""
    out: dict[int, str] = {}
    todo = [(message, "", 0)]
    while todo:
        part, number, depth = todo.pop()
        if depth > MAX_DEPTH:
            continue
        if part.get_content_maintype() == "multipart" and part.is_multipart():
            todo += [(sub, f"{number}.{n}" if number else str(n), depth + 1)
                     for n, sub in enumerate(part.iter_parts(), start=1)]
        elif part.get_content_maintype() == "message" and part.is_multipart() and number:
            inner = part.get_payload(0)
            todo.append((inner, number, depth + 1) if inner.is_multipart() else (inner, f"{number}.1", depth + 1))
        else:
            out[id(part)] = number or "1"
    return out


# Bytes given to the parser at a time, the request's time budget asked before each: a message parsed in one call
# could not be stopped (a 118 MB one, where EINVOICE_MAX_UPLOAD_BYTES allows it, held a worker 8-12 s against a
# 2 s budget). 64 KiB of the costliest lines (one byte each) is ~0.1 s of the parser's time on a busy host; each
# part the parser makes asks too (`_parse`): a part's long header fields cost more than its lines.
_FEED = 64 << 10


def _parse(data: bytes, budget: Budget) -> EmailMessage:
    """The message tree, taken from `budget` (the message's, all levels together): raises _TooManyLines before
    parsing where the lines are more than it has left, _TooManyParts at the first part past them (the parser makes
    each part through the policy's factory, which counts them), _TooManyFields at the first header field past
    them (the policy reads each). The parser is fed `_FEED` bytes at a time, as the standard library's own
    `BytesParser` feeds it (in pieces, each decoded alone: a byte is one character), and the request's time budget
    (`pipeline.budget`) is asked before each piece: Exhausted once it is spent, as the mailbox reader raises it."""
    budget.lines -= data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")  # (the parser's line ends)
    if budget.lines < 0:
        raise _TooManyLines

    def factory(policy=POLICY):
        # each part, as the parser begins it: 499 parts of 8 KB Content-Type parameters took 30 s of CPU (3.9 MB)
        time_budget.check()
        budget.parts -= 1
        if budget.parts < 0:
            raise _TooManyParts
        return _Message(policy)

    parser = BytesFeedParser(policy=POLICY.clone(message_factory=factory, budget=budget))
    view = memoryview(data)  # (a slice of it copies nothing; `feed` decodes its piece)
    for at in range(0, len(data), _FEED):
        time_budget.check()
        parser.feed(view[at:at + _FEED].tobytes())
    time_budget.check()  # (`close` parses what the last piece left: its last line)
    return parser.close()


_SPENT = (_TooManyParts, _TooManyFields, _TooManyLines)  # a message's `Budget` used up
_UNREAD = (*_SPENT, RecursionError, _HeaderTooLong)


def _unread(exc: BaseException, budget: Budget) -> tuple[str, str]:
    """The entry's error for a message (or one attached to it) that `_parse` stopped at."""
    if isinstance(exc, _TooManyParts):
        return _too_many_parts()
    if isinstance(exc, _TooManyFields):
        return "MAIL_HEADER_TOO_LONG", (f"The message has more than {MAX_FIELDS} header fields (its parts' and its "
                                        "attached messages' together); it was read no further.")
    if isinstance(exc, _TooManyLines):
        return "MESSAGE_TOO_LARGE", (f"The message has more than {budget.max_lines} lines (its attached messages' "
                                     f"together): read line by line, it costs as much as one larger than "
                                     f"{budget.max_lines * LINE_COST} bytes; it was not read.")
    if isinstance(exc, RecursionError):
        return _too_deep()
    return _header_too_long(exc)


def _headers_only(data: bytes) -> EmailMessage:
    """The message's headers alone, to name a message that could not be read (empty if even they cannot)."""
    try:
        return BytesParser(policy=POLICY).parsebytes(data[:1 << 20], headersonly=True)
    except (_HeaderTooLong, RecursionError):
        return _Message(POLICY)


_BASE64_TEXT = re.compile(r"[A-Za-z0-9+/]*=*")


def _broken_base64(part: EmailMessage) -> bool:
    """Whether a part's base64 is damaged: a character outside its alphabet, or a cut last group. Blanks are not
    (RFC 2045 6.8: decoders ignore line breaks and white space): a gateway that pads each line with a space or a
    tab sent whole attachments that the parser marks as defective, and they were BROKEN_ENCODING, not read."""
    found = [d for d in part.defects if isinstance(d, _BROKEN_BASE64)]
    if not found or any(isinstance(d, email.errors.InvalidBase64LengthDefect) for d in found):
        return bool(found)
    text = part.get_payload()
    return not isinstance(text, str) or _BASE64_TEXT.fullmatch(re.sub(r"\s+", "", text)) is None


_ENCODINGS = ("base64", "quoted-printable", "x-uuencode", "uuencode", "x-uue", "uue")


def _payload(part: EmailMessage) -> bytes:
    """A part's content, decoded by its Content-Transfer-Encoding read as RFC 2045 has it: a token, blanks and
    comments around it allowed ("base64 ", "base64 (MIME)"), or in quotes as some mailers write it. The standard
    library's get_payload compares the header's whole text with "base64": such an attachment came out as its
    base64 text, and an XML invoice was "not well-formed" at line 1."""
    header = part.get("content-transfer-encoding")
    if header is not None:
        text = str(header).lower()  # (what get_payload compares)
        bare = text.strip().strip('"\'').strip()
        mechanism = bare if bare in _ENCODINGS else getattr(header, "cte", text)
        if mechanism != text and mechanism in _ENCODINGS:
            part.replace_header("content-transfer-encoding", mechanism)
    return part.get_payload(decode=True) or b""


def _kind(ctype: str, name: str | None, data: bytes, attached: bool) -> str | None:
    """What an attachment is to us: xml, pdf, zip, tnef, eml, msg (Outlook's), p7m (a signed file), or None (not
    an invoice)."""
    suffix = name.lower().rpartition(".")[2] if name and "." in name else ""
    if ctype == "application/applefile":  # a Mac file's resource fork, named as the file beside it (AppleDouble)
        return None
    if tnef.is_tnef(data) or ctype in TNEF_TYPES or (name or "").lower() == "winmail.dat":
        return "tnef"
    if suffix == "p7m":
        return "p7m"
    if is_zip(data) or suffix == "zip" or ctype in ZIP_TYPES:
        return "zip"
    if suffix == "eml" or ctype == "message/rfc822":
        return "eml"
    if suffix == "msg" or ctype == "application/vnd.ms-outlook":  # an Outlook message attached as its file
        return "msg"
    if data.lstrip()[:5] == b"%PDF-" or suffix == "pdf" or ctype == "application/pdf":
        return "pdf"
    if suffix == "xml":
        return "xml"
    if ctype.startswith("image/") or suffix in ("svg", "htm", "html", "xhtml"):  # an SVG logo is XML, no invoice
        return None
    if ctype in XML_TYPES or ctype.endswith("+xml"):
        return "xml"
    head = _head(data)
    if attached and ctype != "text/html" and head[:1] == b"<":
        return "xml"
    if ctype == "text/plain" and head[:5] == b"<?xml":  # an invoice pasted as the message's text: no letter does so
        return "xml"
    return None


def _head(data: bytes) -> bytes:
    """The content's first characters as bytes, blanks and a UTF-8 byte order mark left out; a text in UTF-16 (its
    byte order mark first, as Windows tools write XML) read as such: its `<` is no first byte."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        data = data[2:66].decode("utf-16-le" if data[0] == 0xFF else "utf-16-be", "ignore").encode("ascii", "replace")
    return data.lstrip(b"\xef\xbb\xbf \t\r\n")


def _attached(part: EmailMessage, name: str | None) -> bool:
    """A file sent beside the text: named, or said to be an attachment, or of an application/* type (a mailer
    that sends an XML invoice as application/octet-stream with neither name nor disposition: it was lost)."""
    return bool(name) or part.get_content_disposition() == "attachment" or part.get_content_maintype() == "application"


_PARTIAL = ("MAIL_DAMAGED", "The message is one piece of a message sent in several (message/partial); the pieces "
            "are not put together here, so its attachments were not read. Ask the sender to send it whole.")
_SMIME_ENCRYPTED = ("SMIME_ENCRYPTED", "The message is S/MIME-encrypted; it cannot be read without the recipient's "
                    "private key.")


def _filename(part: EmailMessage) -> str | None:
    try:
        name = part.get_filename()
    except Exception:  # noqa: BLE001 - a header the parser cannot take apart names nothing
        name = None
    name = clean(name.replace("\\", "/").rsplit("/", 1)[-1]) if name else None
    return name if name and name.strip(".") else None  # "..": no name (the document is named by its content)


def clean(text: str | None, limit: int = 200, name: bool = True) -> str:
    """Header text fit for JSON and, with `name`, for a document's name: lone surrogates (undecodable bytes) become
    U+FFFD, runs of white space one space, control characters and (in a name) path separators "_"."""
    if not text:
        return ""
    text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return (_UNSAFE if name else _CONTROL).sub("_", _SPACE.sub(" ", text)).strip()[:limit]


def _header(message: EmailMessage, name: str) -> str:
    try:
        value = message.get(name)
        return "" if value is None else str(value)
    except Exception:  # noqa: BLE001 - a header the modern parser cannot take apart: its raw text
        return next((v for k, v in message.raw_items() if k.lower() == name), "")


def identity(message: EmailMessage, index: int | None) -> dict:
    """{"messageId", "date" (ISO 8601 where readable), "from", "subject", "index" (position in an mbox)}."""
    date = _header(message, "date")
    try:
        date = email.utils.parsedate_to_datetime(date).isoformat() if date else ""
    except (TypeError, ValueError, IndexError, OverflowError):
        pass
    # what the headers say, slashes included ("Rechnung 03/2026"); `label` makes a name of it
    out = {"messageId": clean(_header(message, "message-id"), name=False), "date": clean(date, name=False),
           "from": clean(_header(message, "from"), name=False),
           "subject": clean(_header(message, "subject"), 300, name=False)}
    if index is not None:
        out["index"] = index
    return out


def label(ident: dict) -> str:
    """A message as a name: `2026-03-02 10:15 billing@example.com "Invoice 4711" <id@example.com>`."""
    date = ident["date"][:16].replace("T", " ")
    sender = email.utils.parseaddr(ident["from"])[1] or ident["from"]
    subject = f'"{ident["subject"][:60]}"' if ident["subject"] else ""
    mark = ident["messageId"] or (f"#{ident['index']}" if ident.get("index") else "")
    return clean(" ".join(p for p in (date, sender, subject, mark) if p)) or "message"


def _join(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


def _message_too_large(limits: Limits) -> tuple[str, str]:
    return "MESSAGE_TOO_LARGE", f"The message is larger than {limits.max_message} bytes; it was not read."


def _header_too_long(exc: _HeaderTooLong, part: bool = False) -> tuple[str, str]:
    if part:
        return "MAIL_HEADER_TOO_LONG", (f"The part's {exc} header is longer than {MAX_HEADER} characters; the part "
                                        "was not read (the message's other parts were).")
    return "MAIL_HEADER_TOO_LONG", (f"The message's {exc} header is longer than {MAX_HEADER} characters; the "
                                    "message was read no further.")


def _too_many_parts() -> tuple[str, str]:
    return "MAIL_TOO_MANY_PARTS", (f"The message has more than {MAX_PARTS} MIME parts (its attached messages' "
                                   "together); it was read no further.")


def _too_deep() -> tuple[str, str]:
    return "MAIL_TOO_DEEP", (f"The message nests parts or messages deeper than {MAX_DEPTH} levels; the part "
                             "was read no further.")
