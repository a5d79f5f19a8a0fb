"""mbox envelope lines as writers other than the RFC 4155 ones put them: "From user@host" alone or with an ISO 8601
date. Such a line starts a message after an empty line (or at the file's start) when a header a message's head
begins with follows it; a body line "From 1 April on ..." or "From max@firma.example" followed by prose does not."""
from __future__ import annotations

import pytest

from conftest import CORPUS
from mailbuild import message
from pipeline.unpack import Limits, Unpacker

UBL = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml").read_bytes()
CII = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml").read_bytes()


def unpacked(box: bytes) -> list[tuple[str, int, bytes | None]]:
    got = Unpacker(Limits(50, 1 << 20, 10 << 20)).file("month.mbox", box)
    return [(m.name.rsplit("/", 1)[-1], m.email["index"], m.data) for m in got]  # the file name under its message


def box_of(envelopes: list[bytes], bodies: list[bytes], blank: bool = True) -> bytes:
    return b"".join(env + b"\n" + body.rstrip(b"\n") + (b"\n\n" if blank else b"\n")
                    for env, body in zip(envelopes, bodies))


@pytest.mark.parametrize("envelope", [b"From billing@seller.example", b"From billing@seller.example ",
                                      b"From billing@seller.example 2026-03-01", b"From <>@x 2026-03-01T08:00:00Z",
                                      b"From billing@seller.example 2026-03-01T08:00:00.123+01:00",
                                      b"From MAILER-DAEMON 2026-03-01 08:00"])
def test_bare_and_iso_envelopes_start_messages(envelope):
    bodies = [message(n, [(f"{n}.xml", UBL if n % 2 else CII)]).as_bytes() for n in (1, 2, 3)]
    assert unpacked(box_of([envelope] * 3, bodies)) == [("1.xml", 1, UBL), ("2.xml", 2, CII), ("3.xml", 3, UBL)]
    crlf = box_of([envelope] * 3, bodies).replace(b"\n", b"\r\n")
    assert [(n, i) for n, i, _ in unpacked(crlf)] == [("1.xml", 1), ("2.xml", 2), ("3.xml", 3)]


@pytest.mark.parametrize("first", [b"Return-Path: <billing@seller.example>", b"Received: from mx by mx",
                                   b"Delivered-To: ap@buyer.example", b"X-Mozilla-Status: 0001",
                                   b"Message-ID: <a@b>", b"Date: Sun, 1 Mar 2026 08:00:00 +0000"])
def test_a_bare_envelope_before_each_kind_of_first_header(first):
    second = first + b"\n" + message(2, [("2.xml", CII)]).as_bytes()
    box = box_of([b"From billing@seller.example"] * 2, [message(1, [("1.xml", UBL)]).as_bytes(), second])
    assert [(n, i) for n, i, _ in unpacked(box)] == [("1.xml", 1), ("2.xml", 2)]


def test_body_lines_that_look_like_bare_envelopes_do_not_cut_a_message():
    """Without the empty line before it, or without a message head after it, a bare "From ..." is the body's."""
    first = message(1, [("a.xml", UBL)])
    first.get_body().set_content(
        "Dear customer,\n\nFrom 1 April on, please pay to our new account.\n\n"
        "From billing@seller.example\nour accounts department answers your questions.\n\n"
        "From billing@seller.example 2026-03-01\nplease see the attachment.\n"
        "From billing@seller.example\nSubject: directly after a text line, not after an empty one\n", cte="8bit")
    first.add_attachment(CII, maintype="application", subtype="xml", filename="b.xml")
    data = first.as_bytes()
    assert data.count(b"\nFrom billing@seller.example") == 3
    box = box_of([b"From billing@seller.example"] * 2, [data, message(2, [("c.xml", UBL)]).as_bytes()])
    assert unpacked(box) == [("a.xml", 1, UBL), ("b.xml", 1, CII), ("c.xml", 2, UBL)]


def test_a_bare_envelope_without_a_blank_line_before_it_is_the_body_s():
    """RFC 4155 writers put an empty line before each envelope; a bare envelope is only taken after one (an asctime
    one also without, for mailboxes pasted together)."""
    bodies = [message(n, [(f"{n}.xml", UBL)]).as_bytes() for n in (1, 2)]
    box = box_of([b"From billing@seller.example"] * 2, bodies, blank=False)
    got = unpacked(box)
    assert [(n, i) for n, i, _ in got] == [("1.xml", 1)]
    pasted = box_of([b"From billing@seller.example Sun Mar  1 08:00:00 2026"] * 2, bodies, blank=False)
    assert [(n, i) for n, i, _ in unpacked(pasted)] == [("1.xml", 1), ("2.xml", 2)]
