"""An attachment's Content-Transfer-Encoding as RFC 2045 has it: a token with blanks or comments around it
("base64 ", "base64 (MIME)") or, as some mailers write it, in quotes. The standard library decodes only a header
whose whole text is the token: such an attachment came out as its base64 text, and its XML invoice was named
"not well-formed" (its PDF "no PDF") instead of being checked."""
from __future__ import annotations

import base64
import quopri

import pytest

from conftest import CORPUS
from test_mail import client, post  # noqa: F401 - the client fixture
from pipeline.unpack import Limits, Unpacker

UBL = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml").read_bytes()
LIMITS = Limits(max_files=100, max_member=10 << 20, max_total=100 << 20)
HEAD = (b"From: billing@seller.example\r\nMessage-ID: <m1@seller.example>\r\nSubject: Rechnung\r\n"
        b"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"B\"\r\n\r\n--B\r\n"
        b"Content-Type: text/plain\r\n\r\nAnbei die Rechnung.\r\n--B\r\n")


def message(encoding: bytes, body: bytes) -> bytes:
    return (HEAD + b'Content-Type: application/xml; name="rechnung.xml"\r\nContent-Disposition: attachment; '
            b'filename="rechnung.xml"\r\nContent-Transfer-Encoding: ' + encoding + b"\r\n\r\n" + body
            + b"\r\n--B--\r\n")


BASE64 = base64.encodebytes(UBL).replace(b"\n", b"\r\n")


@pytest.mark.parametrize("encoding", [b"base64 ", b"base64\t", b"base64 (MIME)", b'"base64"', b" Base64 ",
                                      b"BASE64"], ids=["space", "tab", "comment", "quoted", "around", "upper"])
def test_a_base64_attachment_of_any_legal_spelling_is_decoded(encoding):
    (doc,) = Unpacker(LIMITS).file("m.eml", message(encoding, BASE64))
    assert (doc.name.rsplit("/", 1)[1], doc.data, doc.error) == ("rechnung.xml", UBL, None)


def test_quoted_printable_with_a_blank_and_an_unknown_encoding_left_as_it_is():
    qp = quopri.encodestring(UBL).replace(b"\n", b"\r\n")
    (doc,) = Unpacker(LIMITS).file("m.eml", message(b"quoted-printable ", qp))
    assert doc.data.replace(b"\r\n", b"\n") == UBL
    (doc,) = Unpacker(LIMITS).file("m.eml", message(b"x-token ", UBL))  # unknown: the bytes as sent
    assert doc.error is None and doc.data.startswith(UBL[:200])


def test_through_the_batch_endpoint_the_report_is_the_single_endpoint_s(client):  # noqa: F811 - the fixture
    r = post(client, [("m.eml", message(b"base64 ", BASE64))])
    (entry,) = r.json["results"]
    assert r.status_code == 200 and entry["name"].endswith("/rechnung.xml") and entry["report"]["valid"], r.text


@pytest.mark.parametrize("spaced", [BASE64.replace(b"\r\n", b" \r\n"), BASE64.replace(b"\r\n", b"\t\r\n"),
                                    BASE64.replace(b"A", b"A ")], ids=["line-end-space", "line-end-tab", "inner"])
def test_base64_with_blanks_is_whole_as_rfc_2045_reads_it(spaced):
    """RFC 2045 6.8: decoders ignore white space in base64. The parser marks such a part as defective, and a
    gateway's blank-padded lines made every attachment BROKEN_ENCODING."""
    (doc,) = Unpacker(LIMITS).file("m.eml", message(b"base64", spaced))
    assert (doc.data, doc.error) == (UBL, None)


@pytest.mark.parametrize("broken", [BASE64.replace(b"\r\n", b"!\r\n", 1), base64.b64encode(UBL)[:4 * 100 + 1],
                                    b"PD94b=bWwg" + BASE64], ids=["outside-alphabet", "cut-group", "padding-inside"])
def test_base64_with_other_characters_or_a_cut_group_is_still_broken(broken):
    (entry,) = Unpacker(LIMITS).file("m.eml", message(b"base64", broken))
    assert entry.error[0] == "BROKEN_ENCODING" and entry.data is None
