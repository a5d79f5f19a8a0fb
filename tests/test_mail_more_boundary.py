"""A multipart whose boundary is not ASCII. RFC 2046 5.1.1 allows printable ASCII only, but mailers that make their
boundary of a text (a product name with an umlaut, an en dash pasted into a template) send UTF-8 or CP1252 bytes in
it, and mail clients split such messages at the bytes the body has. Python's parser compares the header's decoded
text with the body's raw bytes and never splits them: the message was MAIL_DAMAGED, its invoices lost."""
from __future__ import annotations

import base64

import pytest

from conftest import CORPUS
from test_p7m_signature import CII as SIGNED_CII
from test_p7m_signature import ENTITY, clear_signed, sign  # noqa: F401 - the sign fixture
from pipeline.unpack import Limits, Unpacker

UBL = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml").read_bytes()
CII = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml").read_bytes()
LIMITS = Limits(max_files=100, max_member=10 << 20, max_total=100 << 20)
HEAD = b"From: billing@seller.example\r\nMessage-ID: <m1@seller.example>\r\nSubject: Rechnung\r\nMIME-Version: 1.0\r\n"


def attachment(name: str, data: bytes) -> bytes:
    return (b"Content-Type: application/xml; name=" + name.encode() + b"\r\nContent-Disposition: attachment; "
            b"filename=" + name.encode() + b"\r\nContent-Transfer-Encoding: base64\r\n\r\n"
            + base64.encodebytes(data).replace(b"\n", b"\r\n"))


def multipart(boundary: bytes, parts: list[bytes], declared: bytes | None = None, ctype: bytes = b"mixed") -> bytes:
    declared = b'boundary="' + boundary + b'"' if declared is None else declared
    return (b"Content-Type: multipart/" + ctype + b"; " + declared + b"\r\n\r\nThis is a multi-part message.\r\n"
            + b"".join(b"--" + boundary + b"\r\n" + p + b"\r\n" for p in parts) + b"--" + boundary + b"--\r\n")


def documents(data: bytes):
    return list(Unpacker(LIMITS).file("m.eml", data))


TEXT = b"Content-Type: text/plain; charset=utf-8\r\n\r\nAnbei die Rechnung.\r\n"


@pytest.mark.parametrize("boundary", ["----=_Teil_ä_4711".encode(), "Grenze_ÄÖÜ".encode("cp1252"),
                                      "\u2013=_NextPart_01DA".encode(), "=_\u2013".encode("cp1252") + b"x" * 60,
                                      'with"quote'.encode(), "–\\".encode()],
                         ids=["utf-8", "cp1252", "en-dash", "cp1252-70-characters", "quote", "backslash"])
def test_a_message_of_a_non_ascii_boundary_is_split_at_the_bytes_its_body_has(boundary):
    (a, b) = documents(HEAD + multipart(boundary, [TEXT, attachment("a.xml", UBL), attachment("b.xml", CII)]))
    assert (a.name.rsplit("/", 1)[1], a.data, a.error) == ("a.xml", UBL, None)
    assert (b.name.rsplit("/", 1)[1], b.data, b.error) == ("b.xml", CII, None)
    assert a.name.startswith("billing@seller.example")


def test_an_rfc_2231_boundary_a_nested_one_and_one_the_header_does_not_name():
    inner = multipart("Innen_ü".encode(), [TEXT, attachment("inner.xml", CII)])
    raw = HEAD + multipart("Außen".encode(), [inner, attachment("outer.xml", UBL)],
                           declared=b"boundary*=utf-8''Au%C3%9Fen")
    assert [(d.name.rsplit("/", 1)[1], d.data) for d in documents(raw)] == [("inner.xml", CII), ("outer.xml", UBL)]
    # the header names another boundary: the body's first boundary line is taken, non-ASCII as it is
    raw = HEAD + multipart("Außen".encode(), [TEXT, attachment("x.xml", UBL)], declared=b'boundary="other"')
    assert [(d.name.rsplit("/", 1)[1], d.data) for d in documents(raw)] == [("x.xml", UBL)]


def test_a_body_of_no_boundary_line_is_still_mail_damaged_and_a_stand_in_never_cuts_an_attachment():
    raw = HEAD + b'Content-Type: multipart/mixed; boundary="Grenze_\xc3\xa4"\r\n\r\nnur Text\r\n'
    (entry,) = documents(raw)
    assert entry.error[0] == "MAIL_DAMAGED"
    # the body holds the text a stand-in would be made of: another one is taken
    stand_in = b"=_boundary_0_" + "Grenze_ä".encode().hex().encode()
    text = b"Content-Type: text/plain\r\n\r\n--" + stand_in + b"\r\n"
    (doc,) = documents(HEAD + multipart("Grenze_ä".encode(), [text, attachment("a.xml", UBL)]))
    assert doc.data == UBL and doc.name.endswith("/a.xml")


def test_a_clear_signed_message_of_a_non_ascii_boundary_keeps_its_signature(sign):  # noqa: F811 - the fixture
    raw = clear_signed(sign.dir, ENTITY)
    boundary = raw.split(b'boundary="', 1)[1].split(b'"', 1)[0]
    raw = raw.replace(boundary, boundary + "_ä".encode())
    (doc,) = documents(raw)
    assert doc.data == SIGNED_CII and doc.signature["status"] == "intact", doc.signature
