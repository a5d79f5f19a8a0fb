"""Issue 36: a MIME parameter in RFC 2231's sectioned form without its `=` (`filename*0*`, `name*`), as a hostile or
broken mailer sends it, made the standard library's modern header parser raise IndexError: a batch of one
200-byte message was answered 500 INTERNAL_ERROR, and `pipeline validate` and `pipeline inbox` ended with a
traceback (each shape below). Such a header is kept as text now, which the message's own parameter reading
takes apart: the attachment is read (named by what its parameters give, else by its part) and checked. Two more
places of the standard library failed on such parameters once read as text (found by feeding the unpacker
random parameters: none of 18,000 fails now): RFC 2231 sections numbered and not (`x*; x*1*`: TypeError
sorting them, as the parser looks for the boundary), and a part's text with 8-bit bytes under a `charset*1*`
(TypeError: decoded by a tuple)."""
from __future__ import annotations

import falcon.testing
import pytest

from conftest import CORPUS
from pipeline.service.app import create_app
from pipeline.unpack import Limits, Unpacker
from test_validate_batch import post

UBL = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml").read_bytes()
HEAD = b'From: a@seller.example\nMessage-ID: <x@seller.example>\nMIME-Version: 1.0\nContent-Type: multipart/mixed; ' \
       b'boundary="B"\n\n--B\n'
XML = b"Content-Type: application/xml"
DISPOSITION = XML + b"\nContent-Disposition: attachment"
# (the part's header, the attachment's name in its entry, or the entry's code where the part is no attachment)
SHAPES = [
    (DISPOSITION + b"; filename*0*", "part-1.xml"),
    (XML + b"; name*0*", "part-1.xml"),
    (XML + b"; name*", "part-1.xml"),
    (DISPOSITION + b"; filename*0*=utf-8''a; filename*1*", "a"),
    (DISPOSITION + b"; filename*0*=''%; x*", "%"),
    (DISPOSITION + b'; filename="a.xml"; filename*0*', "a.xml"),
    (b"Content-Type: multipart/signed; protocol*0*", "MAIL_DAMAGED"),
    (b"Content-Type: application/pkcs7-mime; smime-type*0*", "SMIME_OPAQUE"),
]


def message(header: bytes) -> bytes:
    return HEAD + header + b"\n\n" + UBL + b"\n--B--\n"


TOP = b"From: a@seller.example\nMessage-ID: <x@seller.example>\nMIME-Version: 1.0\n"
# (a whole message, what its one entry is: the attachment's name, or the entry's code)
WHOLE = [
    (TOP + b"Content-Type: multipart/signed; x*; x*1*;name*0*\n\n--B\n" + XML + b"\n\n" + UBL + b"\n--B--\n",
     "part-1.xml"),  # (no boundary read: split at the line its body begins with)
    (TOP + b"Content-Type: multipart/mixed; boundary=B; x*; x*1*;name*0*\n\n--B\n" + XML + b"\n\n" + UBL
     + b"\n--B--\n", "part-1.xml"),
    (TOP + XML + b"; charset*1*\nContent-Transfer-Encoding: base64\n\nPHg+\xc3\xa4PC94Pg==\n", "BROKEN_ENCODING"),
]


@pytest.mark.parametrize("header, named", SHAPES)
def test_a_parameter_without_its_value_is_no_crash(header, named):
    found = list(Unpacker(Limits(10, 1 << 20, 1 << 30)).file("m.eml", message(header)))
    assert len(found) == 1
    if named.isupper():
        assert found[0].error[0] == named
    else:
        assert found[0].error is None and found[0].data == UBL and found[0].name.endswith(f"/{named}")


@pytest.mark.parametrize("data, named", WHOLE)
def test_parameters_the_standard_library_cannot_decode_are_no_crash(data, named):
    (found,) = Unpacker(Limits(10, 1 << 20, 1 << 30)).file("m.eml", data)
    assert (found.error[0] if found.error else found.name.rsplit("/", 1)[-1]) == named
    assert found.error or found.data == UBL


def test_a_batch_of_such_messages_is_answered():
    client = falcon.testing.TestClient(create_app(platform=False))
    messages = [message(header) for header, _ in SHAPES] + [data for data, _ in WHOLE]
    r = post(client, [(f"m{n}.eml", data) for n, data in enumerate(messages)])
    assert r.status_code == 200, r.text[:500]
    got = [(e.get("error") or {}).get("code") or e["report"]["verdict"] for e in r.json["results"]]
    assert got == [named if named.isupper() else "valid" for _, named in SHAPES + WHOLE]
