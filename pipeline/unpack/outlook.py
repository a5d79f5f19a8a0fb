"""Outlook's .msg files (a message saved or dragged out of Outlook: an OLE compound file, MS-OXMSG) taken apart:
the message's identity and its attachments, each a file or an attached Outlook message. What is an invoice among
them, and how each is named, is mail's question (pipeline.unpack.mail.read_msg reads a .msg as an .eml).

The compound file is read with olefile (its directory, FAT chains and sector bounds); the message's properties
are read here: a property of variable length is the stream `__substg1.0_<id><type>` (type 001F UTF-16, 001E
8-bit, 0102 binary, 000D an embedded object), a fixed one is a 16-byte record of `__properties_version1.0`,
after a header of 32 bytes (the message), 24 (an attached message) or 8 (an attachment).

    message:    0x007D transport headers (Message-ID, Date, From as received), else 0x1035 Message-ID,
                0x0039 submit time (0x0E06 delivery time), 0x0C1A / 0x5D01 / 0x0C1F sender, 0x0037 subject
    attachment: 0x3707 / 0x3704 / 0x3001 file name, 0x370E media type, 0x3701 data (or an attached message)

Bounds: an attachment declared larger than `max_member` is never read, at most `max_parts` attachments (all
levels together), attached messages at most `max_depth` deep; a stream that is not whole (its sectors cut off)
is named as such, never passed on cut.
"""
from __future__ import annotations

import datetime
import io
import struct
from dataclasses import dataclass, field

import olefile

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_PROPERTIES = "__properties_version1.0"
_ATTACHMENT = "__attach_version1.0_#"
_EMBEDDED = "__substg1.0_3701000D"
_DATA = "__substg1.0_37010102"
_TEXT_LIMIT = 1 << 16  # bytes of a text property read (headers, names): more is never needed to name a message


def is_msg(name: str) -> bool:
    """An Outlook message by its name (Word's .doc and Windows' Thumbs.db are OLE files too: the name tells them
    apart; a .msg that is no OLE file gets its entry, MSG_UNREADABLE, rather than being judged as XML)."""
    return name.lower().endswith(".msg")


class Unreadable(Exception):
    """No Outlook message could be read from the file (the message says why)."""


@dataclass
class Attachment:
    name: str                            # its file name ("" where it has none)
    ctype: str = ""                      # its media type, as Outlook kept it
    data: bytes | None = None            # the file (None: an attached message, or `problem`)
    message: Message | None = None       # an Outlook message attached as one (attach method 5)
    problem: str | None = None           # "too large", "linked" (no file in it), or what is damaged


@dataclass
class Message:
    headers: str = ""                    # the headers it was received with ("" for a sent or draft message)
    message_id: str = ""
    date: str = ""                       # ISO 8601
    sender: str = ""
    subject: str = ""
    attachments: list[Attachment] = field(default_factory=list)
    too_deep: bool = False               # an attached message deeper than max_depth: its attachments not read
    too_many: bool = False               # attachments past max_parts left out


def read(data: bytes, max_member: int, max_parts: int, max_depth: int) -> Message:
    """The message a .msg file holds. Raises Unreadable (no OLE file, no message in it, damaged properties)."""
    try:
        # (olefile takes short bytes for a path to open: the content is always given as a file object)
        ole = olefile.OleFileIO(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - olefile raises what it meets (OSError, struct.error, IndexError, ...)
        raise Unreadable(f"it is no readable OLE compound file ({exc})") from exc
    with ole:
        if not ole.exists(_PROPERTIES):
            raise Unreadable("it is an OLE compound file without a message's properties: cut short or damaged, or "
                             "no Outlook message (an old Word or Excel file?)")
        reader = _Reader(ole, max_member, max_parts, max_depth)
        try:
            return reader.message([], 0)
        except Exception as exc:  # noqa: BLE001 - a damaged directory or property stream (as above)
            raise Unreadable(f"its properties are damaged ({exc.__class__.__name__}: {exc})") from exc


class _Reader:
    def __init__(self, ole: olefile.OleFileIO, max_member: int, max_parts: int, max_depth: int):
        self.ole, self.max_member, self.max_parts, self.max_depth = ole, max_member, max_parts, max_depth
        self.parts = 0

    def message(self, path: list[str], depth: int) -> Message:
        """The message stored at `path` (the root, or an attached message's storage)."""
        ole = self.ole
        name, address = _text(ole, path, 0x0C1A), _text(ole, path, 0x5D01) or _text(ole, path, 0x0C1F)
        header = 24 if path else 32
        out = Message(headers=_text(ole, path, 0x007D), message_id=_text(ole, path, 0x1035),
                      date=_time(ole, path, 0x0039, header) or _time(ole, path, 0x0E06, header),
                      sender=f"{name} <{address}>" if name and "@" in address else (address or name),
                      subject=_text(ole, path, 0x0037))
        if depth > self.max_depth:
            out.too_deep = True
            return out
        kids = _entry(ole, path).kids
        for storage in sorted(k.name for k in kids if k.name.startswith(_ATTACHMENT)
                              and k.entry_type == olefile.STGTY_STORAGE):
            self.parts += 1
            if self.parts > self.max_parts:
                out.too_many = True
                break
            out.attachments.append(self.attachment(path + [storage], depth))
        return out

    def attachment(self, path: list[str], depth: int) -> Attachment:
        ole = self.ole
        out = Attachment(name=_text(ole, path, 0x3707) or _text(ole, path, 0x3704) or _text(ole, path, 0x3001),
                         ctype=_text(ole, path, 0x370E).strip().lower())
        try:
            if ole.exists(path + [_EMBEDDED]):  # an Outlook message attached as one: its own storage
                out.message = self.message(path + [_EMBEDDED], depth + 1)
            elif not ole.exists(path + [_DATA]):  # attached by reference (a link), or an OLE object: no file here
                out.problem = "linked"
            elif ole.get_size(path + [_DATA]) > self.max_member:  # the declared size: never read past it
                out.problem = "too large"
            else:
                out.data = ole.openstream(path + [_DATA]).read()
                if len(out.data) != ole.get_size(path + [_DATA]):  # (olefile gives what it has of a cut stream)
                    out.data, out.problem = None, "the attachment is not whole (the file is cut short or damaged)"
        except Exception as exc:  # noqa: BLE001 - this attachment's streams are damaged; the others may not be
            out.data, out.message, out.problem = None, None, f"the attachment is damaged ({exc})"
        return out


def _entry(ole: olefile.OleFileIO, path: list[str]):
    return ole.direntries[ole._find(path)] if path else ole.root


def _text(ole: olefile.OleFileIO, path: list[str], prop: int) -> str:
    """A string property ("" where there is none), as UTF-16 (001F) or 8-bit text (001E, CP1252 as Outlook
    writes western mail)."""
    for kind, codec in (("001F", "utf-16-le"), ("001E", "cp1252")):
        stream = path + [f"__substg1.0_{prop:04X}{kind}"]
        if ole.exists(stream) and ole.get_type(stream) == olefile.STGTY_STREAM:
            raw = ole.openstream(stream).read(_TEXT_LIMIT)
            return raw.decode(codec, "replace").split("\x00", 1)[0]
    return ""


def _time(ole: olefile.OleFileIO, path: list[str], prop: int, header: int) -> str:
    """A time property (PT_SYSTIME: FILETIME, 100 ns since 1601) of the fixed properties, ISO 8601; "" if none."""
    stream = path + [_PROPERTIES]
    if not ole.exists(stream) or ole.get_size(stream) > 1 << 20:
        return ""
    raw = ole.openstream(stream).read()
    for at in range(header, len(raw) - 15, 16):
        tag, = struct.unpack_from("<I", raw, at)
        if tag == (prop << 16 | 0x0040):
            ticks, = struct.unpack_from("<Q", raw, at + 8)
            try:
                when = datetime.datetime(1601, 1, 1, tzinfo=datetime.timezone.utc) + \
                    datetime.timedelta(microseconds=ticks // 10)
            except OverflowError:
                return ""
            return when.isoformat()
    return ""
