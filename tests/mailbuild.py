"""Test messages built from parts: e-mails with attachments, mailboxes, and Outlook's winmail.dat (TNEF).

The TNEF writer follows the format's framing (MS-OXTNEF 2.1): a signature and key, then attributes of one level
byte, a 32-bit id (name, type), a length, the data and a 16-bit checksum (the sum of the data's bytes)."""
from __future__ import annotations

import io
import struct
import zipfile
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from datetime import datetime, timezone, timedelta

TNEF_SIGNATURE = 0x223E9F78


def _attribute(level: int, name: int, kind: int, data: bytes) -> bytes:
    return (struct.pack("<BHHI", level, name, kind, len(data)) + data
            + struct.pack("<H", sum(data) & 0xFFFF))


def tnef(files: list[tuple[str, bytes]]) -> bytes:
    """A winmail.dat holding `files` (name, bytes) as attachments."""
    out = struct.pack("<IH", TNEF_SIGNATURE, 0x1234)
    out += _attribute(1, 0x9006, 0x0008, struct.pack("<I", 0x00010000))      # attTnefVersion
    out += _attribute(1, 0x9007, 0x0006, struct.pack("<II", 1252, 0))        # attOemCodepage
    out += _attribute(1, 0x8008, 0x0007, b"IPM.Microsoft Mail.Note\x00")     # attMessageClass
    for name, data in files:
        out += _attribute(2, 0x9002, 0x0006, struct.pack("<HiiiHI", 1, -1, 0, 0, 0, 0))  # attAttachRendData
        out += _attribute(2, 0x8010, 0x0001, name.encode("cp1252") + b"\x00")          # attAttachTitle
        out += _attribute(2, 0x800F, 0x0006, data)                                     # attAttachData
    return out


def zipped(members: list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members:
            z.writestr(name, data)
    return buf.getvalue()


MEDIA = {"xml": ("application", "xml"), "pdf": ("application", "pdf"), "zip": ("application", "zip"),
         "dat": ("application", "ms-tnef"), "png": ("image", "png"), "txt": ("text", "plain")}


def message(n: int, attachments: list[tuple[str, bytes]], subject: str | None = None,
            sender: str = "billing@seller.example", forwarded: EmailMessage | None = None) -> EmailMessage:
    """Message number `n` with `attachments` (name, bytes; the media type from the suffix)."""
    m = EmailMessage()
    m["From"] = f"Seller {n} <{sender}>"
    m["To"] = "ap@buyer.example"
    m["Subject"] = subject or f"Invoice {n:04d}"
    m["Date"] = format_datetime(datetime(2026, 3, 1, 8, 0, tzinfo=timezone.utc) + timedelta(minutes=n))
    m["Message-ID"] = make_msgid(f"m{n}", "seller.example")
    m.set_content(f"Dear customer,\n\nplease find invoice {n} attached.\n")
    for name, data in attachments:
        maintype, subtype = MEDIA.get(name.rsplit(".", 1)[-1].lower(), ("application", "octet-stream"))
        m.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    if forwarded is not None:
        m.add_attachment(forwarded)
    return m


def mbox(messages: list[bytes], escape: bool = True, separate: bool = True) -> bytes:
    """An mbox of `messages`. `escape`: quote body lines that begin with "From " as ">From " (mboxo), as not every
    writer does; `separate`: an empty line after each message, as RFC 4155 has it (a mailbox pasted together from
    .eml files has none)."""
    out = b""
    for data in messages:
        body = b"\n".join((b">" + line if escape and line.startswith(b"From ") else line) for line in data.split(b"\n"))
        out += b"From sender@example Sun Mar  1 08:00:00 2026\n" + body.rstrip(b"\n") + (b"\n\n" if separate else b"\n")
    return out
