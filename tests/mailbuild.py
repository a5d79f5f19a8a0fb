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


# -- Outlook .msg: an OLE compound file (MS-CFB) of MAPI properties (MS-OXMSG) ------------------------------------
#
# olefile reads compound files but cannot make one, and no library on the machine writes .msg files, so the tests
# build them here by the two specifications: a 512-byte header, then 512-byte sectors: the FAT (each sector's next
# one), the directory (128-byte entries: storages and streams, each storage's children a binary tree), the mini
# FAT and the mini stream (streams under 4096 bytes, in 64-byte pieces), then the larger streams.

_FREE, _END, _FATSECT, _NONE = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD, 0xFFFFFFFF


def compound_file(tree: dict) -> bytes:
    """An OLE compound file of `tree`: name -> bytes (a stream) or a dict (a storage)."""
    entries: list[dict] = []

    def add(name: str, node) -> int:
        entries.append({"name": name, "node": node, "kids": [], "left": _NONE, "right": _NONE, "child": _NONE})
        at = len(entries) - 1
        if isinstance(node, dict):
            entries[at]["kids"] = [add(k, v) for k, v in node.items()]
        return at

    add("Root Entry", tree)
    for e in entries:  # each storage's children as a balanced tree, in the order the format compares names
        kids = sorted(e["kids"], key=lambda i: (len(entries[i]["name"]), entries[i]["name"].upper()))

        def tree_of(ids: list[int]) -> int:
            if not ids:
                return _NONE
            mid = len(ids) // 2
            entries[ids[mid]]["left"], entries[ids[mid]]["right"] = tree_of(ids[:mid]), tree_of(ids[mid + 1:])
            return ids[mid]
        e["child"] = tree_of(kids)
    mini, minifat, big = bytearray(), [], []  # the mini stream, its FAT, the larger streams
    for e in entries[1:]:
        data = e["node"]
        if isinstance(data, dict) or not data:
            e["start"], e["size"] = (0 if isinstance(data, dict) else _END), 0
        elif len(data) < 4096:
            e["start"], e["size"] = len(mini) // 64, len(data)
            count = -(-len(data) // 64)
            minifat += [e["start"] + i + 1 for i in range(count - 1)] + [_END]
            mini += data + b"\x00" * (count * 64 - len(data))
        else:
            e["size"] = len(data)
            big.append((e, data))
    sectors = lambda size: -(-size // 512)  # noqa: E731
    n_dir, n_minifat, n_mini = sectors(len(entries) * 128), sectors(len(minifat) * 4), sectors(len(mini))
    n_big = sum(sectors(len(d)) for _, d in big)
    n_fat = 1
    while n_fat * 128 < n_fat + n_dir + n_minifat + n_mini + n_big:
        n_fat += 1
    fat: list[int] = [_FATSECT] * n_fat

    def chain(count: int) -> int:
        start = len(fat)
        fat.extend([start + i + 1 for i in range(count - 1)] + [_END] if count else [])
        return start if count else _END

    first_dir, first_minifat, first_mini = chain(n_dir), chain(n_minifat), chain(n_mini)
    for e, data in big:
        e["start"] = chain(sectors(len(data)))
    entries[0]["start"], entries[0]["size"] = first_mini, len(mini)
    fat += [_FREE] * (n_fat * 128 - len(fat))
    directory = b""
    for e in entries:
        name = e["name"].encode("utf-16-le") + b"\x00\x00"
        kind = 5 if e is entries[0] else 1 if isinstance(e["node"], dict) else 2
        directory += struct.pack("<64sHBBIII16sIQQIQ", name, len(name), kind, 1, e["left"], e["right"], e["child"],
                                 b"\x00" * 16, 0, 0, 0, e["start"], e["size"])
    directory += struct.pack("<64sHBBIII16sIQQIQ", b"", 0, 0, 0, _NONE, _NONE, _NONE, b"\x00" * 16, 0, 0, 0, 0, 0) \
        * (n_dir * 4 - len(entries))
    difat = list(range(n_fat)) + [_FREE] * (109 - n_fat)
    header = struct.pack("<8s16sHHHHH6sIIIIIIIII109I", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", b"\x00" * 16, 0x3E, 3,
                         0xFFFE, 9, 6, b"\x00" * 6, 0, n_fat, first_dir, 0, 4096,
                         first_minifat if n_minifat else _END, n_minifat, _END, 0, *difat)
    pad = lambda b: b + b"\x00" * (-len(b) % 512)  # noqa: E731
    body = struct.pack(f"<{len(fat)}I", *fat) + pad(directory) + pad(struct.pack(f"<{len(minifat)}I", *minifat)) \
        + pad(bytes(mini)) + b"".join(pad(d) for _, d in big)
    return header + body


def _props(fixed: list[tuple[int, int, bytes]], texts: dict[int, str], header: bytes) -> dict:
    """A message's or an attachment's property streams: `fixed` (id, type, 8 value bytes) in the properties
    stream after `header`, `texts` (id -> text) each a UTF-16 stream (type 001F) with its entry there."""
    out, records = {}, b""
    for prop, value in texts.items():
        data = value.encode("utf-16-le")
        out[f"__substg1.0_{prop:04X}001F"] = data
        records += struct.pack("<IIII", prop << 16 | 0x001F, 6, len(data) + 2, 0)
    for prop, kind, value in fixed:
        records += struct.pack("<II", prop << 16 | kind, 6) + value
    out["__properties_version1.0"] = header + records
    return out


def _filetime(when: datetime) -> bytes:
    return struct.pack("<Q", int((when - datetime(1601, 1, 1, tzinfo=timezone.utc)).total_seconds() * 10_000_000))


def outlook_message(n: int, attachments: list, headers: bool = True, embedded: bool = False) -> dict:
    """Message `n` as Outlook stores it (a storage tree for `compound_file`): subject, sender, submit time, the
    headers it was received with (`headers`; a sent or draft message has none), a body, and `attachments`: (name,
    bytes) files, or another message's tree attached as a message (attach method 5)."""
    when = datetime(2026, 3, 1, 8, 0, tzinfo=timezone.utc) + timedelta(minutes=n)
    texts = {0x0037: f"Invoice {n:04d}", 0x0C1A: f"Seller {n}", 0x0C1F: "billing@seller.example",
             0x1035: f"<o{n}@seller.example>", 0x1000: f"Dear customer,\r\n\r\nplease find invoice {n} attached.\r\n",
             0x001A: "IPM.Note"}
    if headers:
        texts[0x007D] = (f"From: Seller {n} <billing@seller.example>\r\nTo: ap@buyer.example\r\n"
                         f"Subject: Invoice {n:04d}\r\nDate: {format_datetime(when)}\r\n"
                         f"Message-ID: <o{n}@seller.example>\r\n\r\n")
    count = len(attachments)
    # the properties stream's header: 8 reserved, next recipient id, next attachment id, recipients, attachments
    # (+ 8 reserved in a top-level message's)
    header = struct.pack("<8xIIII", 1, count, 1, count) + (b"" if embedded else b"\x00" * 8)
    tree = _props([(0x0039, 0x0040, _filetime(when))], texts, header)
    tree["__recip_version1.0_#00000000"] = _props([], {0x3001: "Accounts payable", 0x3003: "ap@buyer.example"},
                                                  b"\x00" * 8)
    for i, item in enumerate(attachments):
        if isinstance(item, dict):  # an attached message
            storage = _props([(0x3705, 0x0003, struct.pack("<II", 5, 0))], {0x3001: "Forwarded invoice"},
                             b"\x00" * 8)
            storage["__substg1.0_3701000D"] = item
        else:
            name, data = item
            storage = _props([(0x3705, 0x0003, struct.pack("<II", 1, 0))],
                             {0x3707: name, 0x3704: name[:8], 0x3001: name}, b"\x00" * 8)
            storage["__substg1.0_37010102"] = data
        tree[f"__attach_version1.0_#{i:08X}"] = storage
    if not embedded:  # the named-property mapping every .msg has (empty: none used)
        tree["__nameid_version1.0"] = {"__substg1.0_00020102": b"", "__substg1.0_00030102": b"",
                                       "__substg1.0_00040102": b""}
    return tree


def embedded(n: int, attachments: list) -> dict:
    """Message `n` as attached to another one (its properties stream's header is shorter)."""
    return outlook_message(n, attachments, embedded=True)
