"""Mail as a demanding receiver gets it, each odd or hostile shape the entry it calls for: the invoice found (its
bytes as sent, named by the attachment's name as its mailer wrote it) or one named entry, never a 5xx. Each
message is checked on its own (`Unpacker`), and all of them in one mailbox through the batch endpoint."""
from __future__ import annotations

import base64
import binascii
import quopri

import pytest

from conftest import SHARED
from pipeline.unpack import Limits, Unpacker, mail
from test_mail_senders import client  # noqa: F401 - the client fixture
from test_validate_batch import post as post_batch

REAL = SHARED / "realworld/corpus/XML-Rechnung"
XML = (REAL / "CII/EN16931_Einfach.cii.xml").read_bytes()
PDF = (REAL / "FX/EN16931_Einfach.pdf").read_bytes()
HEAD = (b"From: Seller <billing@seller.example>\r\nTo: ap@buyer.example\r\nSubject: Rechnung\r\n"
        b"Date: Mon, 2 Mar 2026 10:00:00 +0000\r\nMessage-ID: <r@seller.example>\r\nMIME-Version: 1.0\r\n")
TEXT = b"Content-Type: text/plain; charset=utf-8\r\n\r\nAnbei die Rechnung.\r\n"


def mixed(*parts: bytes, boundary: bytes = b"B") -> bytes:
    return (HEAD + b'Content-Type: multipart/mixed; boundary="' + boundary + b'"\r\n\r\n'
            + b"".join(b"--" + boundary + b"\r\n" + p + b"\r\n" for p in parts) + b"--" + boundary + b"--\r\n")


def b64(data: bytes) -> bytes:
    return base64.encodebytes(data).replace(b"\n", b"\r\n")


def uu(data: bytes) -> bytes:
    return b"".join(binascii.b2a_uu(data[i:i + 45]) for i in range(0, len(data), 45)).replace(b"\n", b"\r\n")


def forwarded(levels: int) -> bytes:
    """The invoice in a message forwarded as an attachment (message/rfc822) `levels` times."""
    inner = mixed(TEXT, b'Content-Type: application/xml; name="deep.xml"\r\n\r\n' + XML)
    for n in range(levels):
        inner = mixed(TEXT, b"Content-Type: message/rfc822\r\n\r\n" + inner, boundary=b"F%d" % n)
    return inner


CASES = {
    # (the message, [(its documents' file names, their bytes or an entry's code)])
    "named only in Content-Type": (mixed(TEXT, b'Content-Type: application/octet-stream; name="rechnung.xml"\r\n'
                                         b"Content-Transfer-Encoding: base64\r\n\r\n" + b64(XML)),
                                   [("rechnung.xml", XML)]),
    "RFC 2231 file name": (mixed(TEXT, b"Content-Type: application/xml\r\nContent-Disposition: attachment; "
                                 b"filename*=UTF-8''Rechnung%20M%C3%A4rz.xml\r\nContent-Transfer-Encoding: base64"
                                 b"\r\n\r\n" + b64(XML)), [("Rechnung März.xml", XML)]),
    "RFC 2231 continued, Latin-1": (mixed(TEXT, b"Content-Type: application/xml\r\nContent-Disposition: attachment;"
                                          b"\r\n filename*0*=ISO-8859-1''Rechnung%20M;\r\n filename*1*=%E4rz.xml\r\n"
                                          b"\r\n" + XML), [("Rechnung März.xml", XML)]),
    "the invoice as the body": (HEAD + b"Content-Type: text/xml; charset=utf-8\r\n\r\n" + XML,
                                [("part-1.xml", XML)]),
    "a PDF as the body": (HEAD + b"Content-Type: application/pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n"
                          + b64(PDF), [("part-1.pdf", PDF)]),
    "octet-stream .xml": (mixed(TEXT, b'Content-Type: application/octet-stream\r\nContent-Disposition: attachment; '
                                b'filename="r.xml"\r\nContent-Transfer-Encoding: base64\r\n\r\n' + b64(XML)),
                          [("r.xml", XML)]),
    "octet-stream .PDF": (mixed(TEXT, b'Content-Type: application/octet-stream; name="R.PDF"\r\n'
                                b"Content-Transfer-Encoding: BASE64\r\n\r\n" + b64(PDF)), [("R.PDF", PDF)]),
    "forwarded 10 deep": (forwarded(10), [("deep.xml", XML)]),
    "forwarded past the bound": (forwarded(mail.MAX_DEPTH + 1), [("", "MAIL_TOO_DEEP")]),
    "multipart without boundary": (HEAD + b"Content-Type: multipart/mixed\r\n\r\n--X\r\n" + TEXT + b"\r\n--X\r\n"
                                   b'Content-Type: application/xml; name="r.xml"\r\n\r\n' + XML + b"\r\n--X--\r\n",
                                   [("r.xml", XML)]),
    "multipart without boundary or parts": (HEAD + b"Content-Type: multipart/mixed\r\n\r\nnur Text\r\n",
                                            [("", "MAIL_DAMAGED")]),
    "quoted-printable XML": (mixed(TEXT, b'Content-Type: application/xml; name="r.xml"\r\n'
                                   b"Content-Transfer-Encoding: quoted-printable\r\n\r\n" + quopri.encodestring(XML)),
                             [("r.xml", XML)]),
    "LF line ends": (mixed(TEXT, b'Content-Type: application/xml; name="r.xml"\r\n'
                           b"Content-Transfer-Encoding: base64\r\n\r\n" + b64(XML)).replace(b"\r\n", b"\n"),
                     [("r.xml", XML)]),
    "CR line ends": (mixed(TEXT, b'Content-Type: application/xml; name="r.xml"\r\n'
                           b"Content-Transfer-Encoding: base64\r\n\r\n" + b64(XML)).replace(b"\r\n", b"\r"),
                     [("r.xml", XML)]),
    "a 0-byte attachment": (mixed(TEXT, b'Content-Type: application/pdf\r\nContent-Disposition: attachment; '
                                  b'filename="leer.pdf"\r\nContent-Transfer-Encoding: base64\r\n\r\n'),
                            [("leer.pdf", b"")]),  # (the single endpoint's report on an empty file: XML-EMPTY)
    "uuencoded (old Outlook)": (HEAD + b"Content-Type: text/plain\r\n\r\nAnbei.\r\n\r\nbegin 644 rechnung.xml\r\n"
                                + uu(XML) + b"`\r\nend\r\n", [("rechnung.xml", XML)]),
    "no invoice at all": (mixed(TEXT, b'Content-Type: image/png; name="logo.png"\r\n\r\n\x89PNG'),
                          [("", "NO_INVOICE")]),
}


def _entries(raw: bytes) -> list[tuple[str, bytes | str]]:
    members = Unpacker(Limits(100, 1 << 22, 1 << 26)).file("m.eml", raw)
    return [(m.name.rsplit(">/", 1)[-1] if m.error is None else "", m.data if m.error is None else m.error[0])
            for m in members]


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_each_shape_gives_its_entry(case):
    raw, expected = CASES[case]
    assert _entries(raw) == expected


def test_an_mbox_with_from_quoting_gives_the_lines_back():
    """A body line "From ..." is written ">From ..." in an mbox (mboxrd: every ">From" one more ">"): the XML comes
    back as it was sent, in both messages (the quoted line cuts no message in two)."""
    sent = XML.replace(b"<rsm:ExchangedDocumentContext>", b"<!--\nFrom 1 March\n>From 2 March\n-->"
                       b"<rsm:ExchangedDocumentContext>", 1)
    raw = mixed(TEXT, b'Content-Type: application/xml; name="r.xml"\r\nContent-Transfer-Encoding: 8bit\r\n\r\n'
                + sent).replace(b"\r\n", b"\n")
    quoted = raw.replace(b"\n>From ", b"\n>>From ").replace(b"\nFrom ", b"\n>From ")
    mbox = b"".join(b"From billing@seller.example Mon Mar  2 10:00:00 2026\n" + quoted + b"\n" for _ in range(2))
    members = list(Unpacker(Limits(100, 1 << 22, 1 << 26)).file("m.mbox", mbox))
    assert [(m.name.rsplit("/", 1)[-1], m.data == sent) for m in members] == [("r.xml", True), ("r (2).xml", True)]
    assert list(Unpacker(Limits(100, 1 << 22, 1 << 26)).file("m.mbox", mbox.replace(b"\n", b"\r\n")))[0].data == \
        sent.replace(b"\n", b"\r\n")


def test_all_of_them_in_one_mailbox_through_the_batch_endpoint(client):  # noqa: F811 - the fixture
    mbox = b"".join(b"From billing@seller.example Mon Mar  2 10:00:00 2026\n" + raw.replace(b"\r\n", b"\n")
                    .replace(b"\r", b"\n").replace(b"\nFrom ", b"\n>From ") + b"\n" for raw, _ in CASES.values())
    r = post_batch(client, [("month.mbox", mbox)])
    assert r.status_code == 200, r.text
    got = [(e.get("error") or e.get("notice") or {}).get("code") for e in r.json["results"]]
    expected = [None if isinstance(what, bytes) else what for _, found in CASES.values() for _, what in found]
    assert got == expected, [(e["name"][-40:], c) for e, c in zip(r.json["results"], got)]
    assert all("report" in e for e, c in zip(r.json["results"], got) if c is None)
