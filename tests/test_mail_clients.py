"""Mail as an accounts-payable team gets it from its suppliers' mail programs, through the batch endpoint: Outlook's
nested multipart/related with inline pictures and an invoice sent as application/octet-stream under an RFC 2047
name (.XML), Apple Mail's inline PDF and quoted-printable XML under an RFC 2231 Latin-1 name, a part of
application/octet-stream with neither name nor disposition, signed invoice files (*.xml.p7m, DER or base64, sent
as application/pkcs7-mime or application/octet-stream), and an mbox whose body holds an unquoted envelope line
after an empty line. Each invoice is found once, named by the message and its file name, and gets the single
endpoint's report for the same bytes."""
from __future__ import annotations

import base64
import quopri
import subprocess

import pytest

from mailbuild import mbox, message, tnef
from test_mail_senders import (CII, HEAD, PDF, TEXT, UBL, base_names, client, code, multipart, post,  # noqa: F401
                               reports_of, signer, single)

ZUGFERD = "/v1/invoice/zugferd/validate/batch"


def b64(data: bytes) -> bytes:
    return base64.encodebytes(data).replace(b"\n", b"\r\n")


def test_outlook_related_html_with_inline_pictures_and_octet_stream_invoices(client):
    related = (b'Content-Type: multipart/related; boundary="R"; type="multipart/alternative"\r\n\r\n'
               b'--R\r\nContent-Type: multipart/alternative; boundary="A"\r\n\r\n'
               b"--A\r\n" + TEXT + b"\r\n--A\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
               b'<html><body><img src="cid:image001.png@01DA"></body></html>\r\n--A--\r\n\r\n'
               b'--R\r\nContent-Type: image/png; name="image001.png"\r\nContent-ID: <image001.png@01DA>\r\n'
               b'Content-Disposition: inline; filename="image001.png"\r\nContent-Transfer-Encoding: base64\r\n\r\n'
               b"iVBORw0KGgo=\r\n--R--\r\n")
    xml = (b'Content-Type: application/octet-stream; name="=?iso-8859-1?Q?Rechnung_M=E4rz_2026.XML?="\r\n'
           b'Content-Disposition: attachment; filename="=?iso-8859-1?Q?Rechnung_M=E4rz_2026.XML?="; size=6742\r\n'
           b"Content-Transfer-Encoding: base64\r\n\r\n" + b64(UBL))
    pdf = (b'Content-Type: application/octet-stream; name="Rechnung.Pdf"\r\n'
           b'Content-Disposition: attachment; filename="Rechnung.Pdf"\r\nContent-Transfer-Encoding: base64\r\n\r\n'
           + b64(PDF))
    results = post(client, multipart(related, xml, pdf), path=ZUGFERD)
    assert base_names(results) == ["Rechnung März 2026.XML", "Rechnung.Pdf"]  # the picture is no invoice
    assert results[0]["name"].startswith('2026-03-01 08:00 billing@seller.example "Rechnung" <r1@seller.example>/')
    assert reports_of(client, results) == [single(client, UBL), single(client, PDF)]


def test_apple_mail_inline_pdf_and_quoted_printable_xml_named_in_latin1(client):
    inner = (b'Content-Type: multipart/mixed; boundary="Apple-Mail=_B"\r\n\r\n'
             b"--Apple-Mail=_B\r\nContent-Type: text/html; charset=us-ascii\r\n\r\n<html>anbei</html>\r\n"
             b"--Apple-Mail=_B\r\nContent-Disposition: inline; filename*=utf-8''Rechnung%20M%C3%A4rz.pdf\r\n"
             b"Content-Type: application/pdf; x-unix-mode=0644; name=\"=?utf-8?Q?Rechnung_M=C3=A4rz=2Epdf?=\"\r\n"
             b"Content-Transfer-Encoding: base64\r\n\r\n" + b64(PDF) +
             b"\r\n--Apple-Mail=_B\r\nContent-Disposition: inline; filename*=iso-8859-1''Gutschrift%20M%E4rz.xml\r\n"
             b"Content-Type: text/xml; x-unix-mode=0644\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"
             + quopri.encodestring(CII).replace(b"\n", b"\r\n") + b"\r\n--Apple-Mail=_B--\r\n")
    raw = (HEAD + b'MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary="Apple-Mail=_A"\r\n\r\n'
           b"--Apple-Mail=_A\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\nanbei\r\n"
           b"--Apple-Mail=_A\r\n" + inner + b"\r\n--Apple-Mail=_A--\r\n")
    results = post(client, raw, path=ZUGFERD)
    assert base_names(results) == ["Rechnung März.pdf", "Gutschrift März.xml"]
    assert reports_of(client, results) == [single(client, PDF), single(client, CII)]


def test_an_octet_stream_part_with_neither_name_nor_disposition(client):
    # before: the XML was passed over without a word (the PDF beside it was found by its %PDF- start)
    raw = multipart(TEXT, b"Content-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\r\n"
                    + b64(UBL), b"Content-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\r\n"
                    + b64(PDF), b"Content-Type: application/pgp-keys\r\n\r\n-----BEGIN PGP PUBLIC KEY BLOCK-----\r\n")
    results = post(client, raw, path=ZUGFERD)
    assert base_names(results) == ["part-2.xml", "part-3.pdf"]
    assert reports_of(client, results) == [single(client, UBL), single(client, PDF)]
    only_key = post(client, multipart(TEXT, b"Content-Type: application/pgp-keys\r\n\r\n-----BEGIN PGP-----\r\n"))
    assert [code(e) for e in only_key] == ["NO_INVOICE"] and "application/pgp-keys" in only_key[0]["notice"]["message"]


def _signed_file(signer, data: bytes, *how: str) -> bytes:
    (signer / "file.xml").write_bytes(data)
    subprocess.run(["openssl", *how, "-sign", "-nodetach", "-binary", "-in", "file.xml", "-signer", "cert.pem",
                    "-inkey", "key.pem", "-outform", "DER", "-out", "file.xml.p7m"], check=True, capture_output=True,
                   cwd=signer)
    return (signer / "file.xml.p7m").read_bytes()


def test_signed_invoice_files_are_read_under_their_own_names(client, signer):
    der = _signed_file(signer, UBL, "smime")
    ber = _signed_file(signer, CII, "cms")
    m = message(1, [("Rechnung-4711.xml", UBL)])
    m.add_attachment(der, maintype="application", subtype="pkcs7-mime", filename="Rechnung-4711.xml.p7m",
                     params={"smime-type": "signed-data"})
    m.add_attachment(ber, maintype="application", subtype="octet-stream", filename="Rechnung-4712.xml.p7m")
    armoured = b"-----BEGIN PKCS7-----\n" + base64.encodebytes(der) + b"-----END PKCS7-----\n"
    m.add_attachment(armoured, maintype="application", subtype="octet-stream", filename="Rechnung-4713.XML.P7M")
    m.add_attachment(b"\x30\x03\x02\x01\x01", maintype="application", subtype="octet-stream", filename="kaputt.p7m")
    results = post(client, m.as_bytes())
    # before: the .p7m sent as application/octet-stream were NO_INVOICE's "attached: ...", the other one smime.xml
    assert base_names(results)[:4] == ["Rechnung-4711.xml", "Rechnung-4711 (2).xml", "Rechnung-4712.xml",
                                       "Rechnung-4713.XML"]  # (the signed copy's row told from the plain one's)
    assert reports_of(client, results[:4]) == [single(client, UBL), single(client, UBL), single(client, CII),
                                               single(client, UBL)]
    assert [code(e) for e in results] == [None] * 4 + ["SMIME_OPAQUE"]


def test_an_unquoted_envelope_line_after_an_empty_line_in_a_body(client):
    first = message(1, [])
    first.set_content("Guten Tag,\n\nunten die Mail, auf die Sie sich beziehen:\n\n"
                      "From buchhaltung@seller.example Mon Mar  2 10:00:00 2026\nbitte beachten\n")
    first.add_attachment(UBL, maintype="application", subtype="xml", filename="a.xml")
    box = mbox([first.as_bytes(), message(2, [("b.xml", CII)]).as_bytes()], escape=False)
    assert b"\n\nFrom buchhaltung@seller.example Mon Mar  2" in box
    results = post(client, box)
    # before: the message was cut at the line, a.xml lost with its second half (two NO_INVOICE entries)
    assert base_names(results) == ["a.xml", "b.xml"] and [e["email"]["index"] for e in results] == [1, 2]
    assert reports_of(client, results) == [single(client, UBL), single(client, CII)]


@pytest.mark.parametrize("separate", [True, False])
def test_every_message_of_an_mbox_of_client_shapes_once(client, signer, separate):
    der = _signed_file(signer, CII, "smime")
    signed = message(3, [])
    signed.add_attachment(der, maintype="application", subtype="octet-stream", filename="c.xml.p7m")
    unnamed = message(4, [])
    unnamed.add_attachment(UBL, maintype="application", subtype="octet-stream", disposition="inline")
    items = [message(1, [("a.XML", UBL)]), message(2, [("b.Pdf", PDF)]), signed, unnamed,
             message(5, [], forwarded=message(6, [], forwarded=message(7, [("deep.xml", CII)])))]
    results = post(client, mbox([m.as_bytes() for m in items], escape=False, separate=separate), path=ZUGFERD)
    assert base_names(results) == ["a.XML", "b.Pdf", "c.xml", "part-2.xml", "deep.xml"]
    assert [e["email"]["messageId"] for e in results] == [m["Message-ID"] for m in items]
    assert len({e["name"] for e in results}) == 5


@pytest.mark.parametrize("part, expected", [
    (b'Content-Type: application/octet-stream; name="a.xml.p7m"\r\nContent-Transfer-Encoding: base64\r\n\r\n'
     + base64.encodebytes(b"\x30\x80" * 5000 + b"\x00\x00" * 5000), ("a.xml.p7m", "SMIME_OPAQUE")),  # nests deep
    (b'Content-Type: application/pkcs7-mime; name="b.xml.p7m"\r\nContent-Transfer-Encoding: base64\r\n\r\n'
     + base64.encodebytes(b"\x30\x84\xff\xff\xff\xff\x06\x09"), ("b.xml.p7m", "SMIME_OPAQUE")),  # 4 GiB said
    (b'Content-Type: application/octet-stream; name="c.p7m"\r\n\r\n-----BEGIN PKCS7-----\r\n!!\r\n'
     b"-----END PKCS7-----\r\n", ("c.p7m", "SMIME_OPAQUE")),  # armour around no base64
    (b'Content-Type: message/external-body; access-type=URL; URL="http://x.example/inv.xml"\r\n\r\n'
     b"Content-Type: application/xml\r\n\r\n", (None, "NO_INVOICE")),  # the invoice is elsewhere: none here
    (b'Content-Type: application/xml; name=".."\r\nContent-Disposition: attachment; filename=".."\r\n\r\n' + UBL,
     ("part-2.xml", None)),  # a name of dots names nothing
])
def test_hostile_signed_files_and_odd_parts_each_give_their_entry(client, part, expected):
    results = post(client, multipart(TEXT, part))
    assert len(results) == 1, results
    name, wanted = expected
    assert code(results[0]) == wanted and results[0]["name"].startswith('2026-03-01 08:00 billing@seller.example')
    assert results[0]["name"].endswith(f"/{name}") if name else "/" not in results[0]["name"]  # the message


def test_a_signed_file_inside_a_winmail_dat_and_one_signed_twice(client, signer):
    once = _signed_file(signer, UBL, "smime")
    twice = _signed_file(signer, once, "smime")
    m = message(1, [("winmail.dat", tnef([("Rechnung-1.xml.p7m", once)])), ("Rechnung-2.xml.p7m.p7m", twice)])
    results = post(client, m.as_bytes())
    assert base_names(results) == ["Rechnung-1.xml", "Rechnung-2.xml"]
    assert results[0]["name"].endswith("/winmail.dat/Rechnung-1.xml")
    assert reports_of(client, results) == [single(client, UBL)] * 2
    deep = UBL
    for _ in range(14):  # signed over and over: read no deeper than any nesting of parts
        deep = _signed_file(signer, deep, "smime")
    entry = post(client, message(2, [("deep.xml.p7m", deep)]).as_bytes())
    assert [code(e) for e in entry] == ["MAIL_TOO_DEEP"]
