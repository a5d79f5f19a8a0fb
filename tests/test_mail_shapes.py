"""Mail as clients and lists write it, and hostile mail, each message with its entries: names (RFC 2231 continued
and Latin-1, RFC 2047 in an unknown charset), a mailing list's digest, a message forwarded three deep, an XML
invoice pasted as the text, mboxrd quoting of 8-bit XML, a Windows-1252 mbox with CRLF line ends; deep nesting,
10,000 parts, megabyte header lines, base64 with garbage. Read by the unpacker (what each message yields), then all
of them in one mbox through the batch endpoint: every message its entries, never a 5xx."""
from __future__ import annotations

import base64
import time

from conftest import CORPUS, SHARED
from mailbuild import message, mbox
from pipeline.unpack import Limits, Unpacker
from test_mail import client, post  # noqa: F401 - the client fixture

UBL = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml").read_bytes()
PDF = (SHARED / "realworld/corpus/XML-Rechnung/FX/EN16931_Rabatte.pdf").read_bytes()
LIMITS = Limits(max_files=20_000, max_member=20 << 20, max_total=200 << 20)
HEAD = (b"From: Seller <billing@seller.example>\r\nTo: ap@buyer.example\r\nSubject: Rechnung\r\n"
        b"Date: Sun, 1 Mar 2026 08:00:00 +0000\r\nMessage-ID: <m@seller.example>\r\nMIME-Version: 1.0\r\n")
LABEL = '2026-03-01 08:00 billing@seller.example "Rechnung" <m@seller.example>'


def mixed(*parts: bytes, head: bytes = HEAD) -> bytes:
    return head + b'Content-Type: multipart/mixed; boundary="B"\r\n\r\n' + b"".join(
        b"--B\r\n" + p + b"\r\n" for p in parts) + b"--B--\r\n"


def attached(headers: bytes, data: bytes) -> bytes:
    return headers + b"\r\nContent-Transfer-Encoding: base64\r\n\r\n" + base64.encodebytes(data)


def entries(data: bytes, name: str = "m.eml") -> list[tuple[str, str | int]]:
    """(name, the error code or the document's size) of each document a file yields."""
    return [(m.name, m.error[0] if m.error else len(m.data)) for m in Unpacker(LIMITS).file(name, data)]


# -- as clients write it ------------------------------------------------------------------------------------------

DIGEST = mixed(b"Content-Type: text/plain\r\n\r\nToday's topics: 2 invoices",
               b'Content-Type: multipart/digest; boundary="D"\r\n\r\n--D\r\n\r\n'
               + message(1, [("a.xml", UBL)]).as_bytes() + b"\r\n--D\r\n\r\n"
               + message(2, [("b.pdf", PDF)]).as_bytes() + b"\r\n--D--")
LATIN1_CONTINUED = mixed(attached(b"Content-Type: application/octet-stream\r\nContent-Disposition: attachment;\r\n"
                                  b" filename*0*=iso-8859-1'de'Rechnung%20M%E4rz;\r\n filename*1*=%202026.xml", UBL))
UNKNOWN_CHARSET = mixed(attached(b'Content-Type: application/octet-stream; name="=?x-unknown?Q?Rechnung_4711.pdf?="',
                                 PDF))
PASTED = HEAD + b"Content-Type: text/plain; charset=utf-8\r\n\r\n" + UBL
MENTIONED = HEAD + b"Content-Type: text/plain; charset=utf-8\r\n\r\nDear team, our files begin <?xml version=...\r\n"
GMAIL = mixed(b'Content-Type: multipart/alternative; boundary="A"\r\n\r\n--A\r\nContent-Type: text/plain\r\n\r\n'
              b"---------- Forwarded message ---------\r\n--A\r\nContent-Type: text/html\r\n\r\n"
              b"<div>fwd</div>\r\n--A--",
              attached(b'Content-Type: application/xml; name="inv.xml"\r\nContent-Disposition: attachment; '
                       b'filename="inv.xml"\r\nX-Attachment-Id: f_1\r\nContent-ID: <f_1>', UBL))
THUNDERBIRD = mixed(b"Content-Type: text/plain; charset=UTF-8; format=flowed\r\n\r\nHi",
                    attached(b'Content-Type: text/xml; charset=UTF-8;\r\n name="=?UTF-8?Q?Rechnung_M=C3=A4rz=2Exml?="'
                             b"\r\nContent-Disposition: attachment;\r\n filename*=UTF-8''Rechnung%20M%C3%A4rz.xml",
                             UBL))
UPPER_PDF = mixed(attached(b'Content-Type: application/octet-stream; name="R-1.PDF"', PDF))


def test_names_and_shapes_as_clients_write_them():
    assert [(n.rsplit("/", 1)[-1], size) for n, size in entries(DIGEST)] == [("a.xml", len(UBL)), ("b.pdf", len(PDF))]
    assert entries(LATIN1_CONTINUED) == [(f"{LABEL}/Rechnung März 2026.xml", len(UBL))]
    assert entries(UNKNOWN_CHARSET) == [(f"{LABEL}/Rechnung 4711.pdf", len(PDF))]
    assert entries(GMAIL) == [(f"{LABEL}/inv.xml", len(UBL))]
    assert entries(THUNDERBIRD) == [(f"{LABEL}/Rechnung März.xml", len(UBL))]
    assert entries(UPPER_PDF) == [(f"{LABEL}/R-1.PDF", len(PDF))]


def test_apple_double_s_resource_fork_is_no_document_and_a_message_piece_is_named():
    fork = b'Content-Type: application/applefile; name="R.pdf"\r\nContent-Transfer-Encoding: base64\r\n\r\nAAUWBwACAAA='
    apple = mixed(b'Content-Type: multipart/appledouble; boundary="AD"\r\n\r\n--AD\r\n' + fork + b"\r\n--AD\r\n"
                  + attached(b'Content-Type: application/pdf; name="R.pdf"', PDF) + b"\r\n--AD--")
    # before: the 8-byte resource fork was a second "R.pdf", a PDF that is none, charged and invalid
    assert entries(apple) == [(f"{LABEL}/R.pdf", len(PDF))]
    piece = mixed(b'Content-Type: message/partial; id="x@y"; number=1; total=2\r\n\r\n'
                  + message(1, [("g.xml", UBL)]).as_bytes()[:3000])
    # before: the piece's cut attachment was a document of its first 1,758 bytes
    assert entries(piece) == [(LABEL, "MAIL_DAMAGED")]


def test_an_invoice_pasted_as_the_text_is_one_a_letter_about_xml_is_not():
    # before: NO_INVOICE, the XML read as a letter
    assert entries(PASTED) == [(f"{LABEL}/part-1.xml", len(UBL))]
    assert entries(MENTIONED) == [(LABEL, "NO_INVOICE")]


def test_an_xml_invoice_in_utf16_without_a_name_is_one():
    # before: NO_INVOICE (its first byte is the byte order mark, not `<`); Windows tools write XML in UTF-16
    utf16 = UBL.decode().replace('encoding="UTF-8"', 'encoding="UTF-16"').encode("utf-16")
    for ctype in (b"application/octet-stream", b"text/plain; charset=utf-16"):
        assert entries(mixed(b"Content-Type: text/plain\r\n\r\nsee attachment",
                             attached(b"Content-Type: " + ctype, utf16))) == [(f"{LABEL}/part-2.xml", len(utf16))]


def test_a_message_forwarded_three_deep():
    deepest = message(1, [("deep.xml", UBL)])
    outer = message(4, [], forwarded=message(3, [], forwarded=message(2, [], forwarded=deepest)))
    ((name, size),) = entries(outer.as_bytes())
    assert size == len(UBL) and name.endswith("/deep.xml") and [p.split(" ")[-1] for p in name.split("/")[:-1]] == [
        m["Message-ID"] for m in (outer, outer.get_payload()[1].get_payload(0),
                                  outer.get_payload()[1].get_payload(0).get_payload()[1].get_payload(0), deepest)]


def test_mboxrd_quoting_gives_an_8bit_xml_back_byte_for_byte():
    xml = UBL.replace(b"<cbc:Note>", b"<cbc:Note>\nFrom 1 March on\n>From a quote\n", 1)
    assert xml != UBL
    raw = (HEAD.replace(b"\r\n", b"\n") + b'Content-Type: multipart/mixed; boundary="B"\n\n--B\nContent-Type: '
           b'text/xml; name="n.xml"\nContent-Transfer-Encoding: 8bit\n\n' + xml + b"\n--B--\n")
    quoted = b"\n".join(b">" + line if line.lstrip(b">").startswith(b"From ") else line for line in raw.split(b"\n"))
    (member,) = Unpacker(LIMITS).file("box.mbox", b"From a@b Sun Mar  1 08:00:00 2026\n" + quoted + b"\n")
    assert member.name.endswith("/n.xml") and member.data.rstrip(b"\n") == xml.rstrip(b"\n")


def windows_1252_message(n: int) -> bytes:
    head = HEAD.replace(b"Subject: Rechnung", b"Subject: Rechnung M\xe4rz %d" % n)
    return mixed(b"Content-Type: text/plain; charset=windows-1252\r\n\r\nSehr geehrte Damen, ab M\xe4rz\r\n\r\n"
                 b"From 1 March on, please pay to the new account.",
                 attached(b'Content-Type: application/xml; name="Rechnung M\xe4rz.xml"', UBL), head=head)


def test_a_windows_1252_mbox_with_crlf_line_ends():
    box = b"".join(b"From billing@seller.example Sun Mar  1 08:00:00 2026\r\n" + windows_1252_message(n) + b"\r\n"
                   for n in (1, 2))
    assert entries(box, "box.mbox") == [
        (f'2026-03-01 08:00 billing@seller.example "Rechnung März {n}" <m@seller.example>/Rechnung März.xml',
         len(UBL)) for n in (1, 2)]


# -- hostile ------------------------------------------------------------------------------------------------------

DEEP = HEAD + b"".join(b'Content-Type: multipart/mixed; boundary="b%d"\r\n\r\n--b%d\r\n' % (i, i)
                       for i in range(400)) + b"Content-Type: application/xml\r\n\r\n" + UBL
DEEP_MESSAGES = HEAD + b"Content-Type: message/rfc822\r\n\r\n" * 100 + b"Content-Type: application/xml\r\n\r\n" + UBL
MANY_PARTS = mixed(*[b"Content-Type: text/plain\r\n\r\nx"] * 10_000)
LONG_SUBJECT = HEAD.replace(b"Subject: Rechnung", b"Subject: " + b"A" * 1_000_000) + b"\r\nbody"
LONG_FOLDED = HEAD + b"Received: " + b"a\r\n " * 200_000 + b"x\r\n\r\nbody"
MANY_HEADERS = HEAD + b"".join(b"X-H%d: v\r\n" % i for i in range(100_000)) + b"\r\nbody"
LONG_DISPOSITION = mixed(b'Content-Type: application/xml\r\nContent-Disposition: attachment; filename="'
                         + b"a" * 1_000_000 + b'.xml"\r\n\r\n' + UBL,
                         attached(b'Content-Type: application/xml; name="b.xml"', UBL))
GARBAGE = mixed(b'Content-Type: application/pdf; name="a.pdf"\r\nContent-Transfer-Encoding: base64\r\n\r\n'
                + b"!!!@@@###" * 1000, attached(b'Content-Type: application/xml; name="b.xml"', UBL))
BAD_CHARSETS = mixed(b'Content-Type: text/plain; charset="utf-7777"\r\n\r\n\xff\xfe',
                     b'Content-Type: application/xml; charset="bogus"; name="a.xml"\r\n\r\n' + UBL)
HOSTILE = {DEEP: [(LABEL, "MAIL_TOO_DEEP")], MANY_PARTS: [(LABEL, "MAIL_TOO_MANY_PARTS")],
           LONG_FOLDED: [(LABEL, "NO_INVOICE")], MANY_HEADERS: [(LABEL, "NO_INVOICE")],
           # a part's Content-Disposition too long costs that part only (before: the whole message, b.xml lost)
           LONG_DISPOSITION: [(f"{LABEL}/part-1", "MAIL_HEADER_TOO_LONG"), (f"{LABEL}/b.xml", len(UBL))],
           GARBAGE: [(f"{LABEL}/a.pdf", "BROKEN_ENCODING"), (f"{LABEL}/b.xml", len(UBL))],
           BAD_CHARSETS: [(f"{LABEL}/a.xml", len(UBL))]}


def test_hostile_messages_each_give_their_entries_quickly():
    for raw, expected in HOSTILE.items():
        started = time.monotonic()
        assert entries(raw) == expected
        assert time.monotonic() - started < 5
    ((name, code),) = entries(DEEP_MESSAGES)
    assert code == "MAIL_TOO_DEEP" and name.startswith(LABEL)
    ((name, code),) = entries(LONG_SUBJECT)
    assert code == "NO_INVOICE" and '"' + "A" * 60 + '"' in name


def test_all_of_them_in_one_mbox_through_the_batch_endpoint(client):
    messages = [DIGEST, LATIN1_CONTINUED, PASTED, MENTIONED, windows_1252_message(1), *HOSTILE, LONG_SUBJECT]
    r = post(client, [("month.mbox", mbox([m.replace(b"\r\n", b"\n") for m in messages]))])
    assert r.status_code == 200, r.text
    by_message: dict[int, list] = {}
    for e in r.json["results"]:
        by_message.setdefault(e["email"]["index"], []).append(e)
    assert sorted(by_message) == list(range(1, len(messages) + 1))  # every message has its entries
    assert [len(by_message[n]) for n in (1, 3, 4, 6, 7)] == [2, 1, 1, 1, 1]
    assert "report" in by_message[3][0] and by_message[4][0]["notice"]["code"] == "NO_INVOICE"
    assert [e["error"]["code"] for e in (by_message[6][0], by_message[7][0])] == ["MAIL_TOO_DEEP",
                                                                                  "MAIL_TOO_MANY_PARTS"]
