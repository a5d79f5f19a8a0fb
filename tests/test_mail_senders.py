"""Mail as real mail software sends it, through the batch endpoint: S/MIME signed by OpenSSL (clear-signed, and
opaque signed-data, whose invoice is inside the PKCS#7 block, DER and BER), encrypted, RFC 2231 file names,
a name only in Content-Type, a message forwarded twice, uuencoded attachments (old mailers, Outlook's plain-text
setting), quoted-printable XML, an XML body, and the noise beside invoices (calendar, vCard, an SVG logo). Every
invoice found gets the single endpoint's report for the same bytes."""
from __future__ import annotations

import base64
import binascii
import quopri
import shutil
import subprocess
import zlib

import falcon.testing
import pytest

from conftest import CORPUS, SHARED
from mailbuild import message
from pipeline.check.detect import route
from pipeline.service.app import create_app
from test_validate_batch import form
from test_validate_batch import post as post_batch

UBL = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml").read_bytes()
CII = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml").read_bytes()
PDF = (SHARED / "realworld/corpus/XML-Rechnung/FX/EN16931_Rabatte.pdf").read_bytes()
HEAD = (b"From: Seller <billing@seller.example>\r\nTo: ap@buyer.example\r\nSubject: Rechnung\r\n"
        b"Date: Sun, 1 Mar 2026 08:00:00 +0000\r\nMessage-ID: <r1@seller.example>\r\n")


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def post(client, raw: bytes, path="/v1/invoice/xrechnung/validate/batch"):
    r = post_batch(client, [("mail.eml", raw)], path=path)
    assert r.status_code == 200, r.text
    return r.json["results"]


def single(client, data: bytes):
    """The single endpoint's report on the rules the document is for, as a batch judges a receiver's month."""
    body, ctype = form([("doc", data)])
    r = client.simulate_post(f"/v1/invoice/{route(data, 'auto')}/validate", body=body,
                             headers={"Content-Type": ctype})
    return {k: v for k, v in r.json.items() if k != "requestId"}


def reports_of(client, results):
    return [{k: v for k, v in e["report"].items() if k != "requestId"} for e in results]


def base_names(results):
    return [e["name"].rsplit("/", 1)[-1] for e in results]


def code(entry):
    return (entry.get("error") or entry.get("notice") or {}).get("code")


def multipart(*parts: bytes) -> bytes:
    body = b"".join(b"--B\r\n" + p + b"\r\n" for p in parts)
    return HEAD + b'MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="B"\r\n\r\n' + body + b"--B--\r\n"


TEXT = b"Content-Type: text/plain; charset=utf-8\r\n\r\nSehr geehrte Damen und Herren, anbei die Rechnung.\r\n"


# -- S/MIME --------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def signer(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed to sign the test messages (Debian: apt-get install openssl)")
    d = tmp_path_factory.mktemp("smime")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                    "/CN=billing@seller.example", "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem")],
                   check=True, capture_output=True)
    # the MIME entity a mail program signs: the message's body with its Content-Type (the invoice attached)
    inner = message(1, [("rechnung.xml", UBL), ("rechnung.pdf", PDF)])
    (d / "entity.txt").write_bytes(b"Content-Type: " + inner["Content-Type"].encode() + b"\n\n"
                                   + inner.as_bytes().split(b"\n\n", 1)[1])
    return d


def openssl(d, command, *args) -> bytes:
    out = d / "out.eml"
    subprocess.run(["openssl", command, "-in", str(d / "entity.txt"), "-out", str(out), "-subject", "Rechnung",
                    *args], check=True, capture_output=True, cwd=d)
    return HEAD.split(b"Subject")[0] + out.read_bytes()


@pytest.mark.parametrize("how", [
    ("smime", "-sign", "-signer", "cert.pem", "-inkey", "key.pem"),                           # multipart/signed
    ("smime", "-sign", "-nodetach", "-signer", "cert.pem", "-inkey", "key.pem"),              # opaque, DER
    ("cms", "-sign", "-nodetach", "-stream", "-signer", "cert.pem", "-inkey", "key.pem"),     # opaque, BER
], ids=["clear-signed", "opaque-der", "opaque-ber-streamed"])
def test_a_signed_message_gives_its_invoices_however_it_is_signed(client, signer, how):
    raw = openssl(signer, *how)
    opaque = "-nodetach" in how
    assert (b"pkcs7-mime" in raw) == opaque and (b"smime-type=signed-data" in raw) == opaque
    results = post(client, raw, path="/v1/invoice/zugferd/validate/batch")
    # before: an opaque-signed message was one SMIME_OPAQUE entry, its invoices never checked
    assert base_names(results) == ["rechnung.xml", "rechnung.pdf"], results
    assert reports_of(client, results) == [single(client, UBL), single(client, PDF)]


def test_an_encrypted_message_and_a_damaged_signed_block_are_named(client, signer):
    encrypted = openssl(signer, "cms", "-encrypt", "cert.pem")  # (the recipient last)
    assert code(post(client, encrypted)[0]) == "SMIME_ENCRYPTED"
    signed = openssl(signer, "smime", "-sign", "-nodetach", "-signer", "cert.pem", "-inkey", "key.pem")
    head, _, body = signed.partition(b"\n\n")
    der = base64.b64decode(body)
    cut = head + b"\n\n" + base64.encodebytes(der[:len(der) // 3])  # a block cut short in transit
    entry = post(client, cut)[0]
    assert code(entry) == "SMIME_OPAQUE" and "cut short or damaged" in entry["error"]["message"]


def _der(tag: int, content: bytes) -> bytes:
    n = len(content)
    length = bytes([n]) if n < 0x80 else bytes([0x80 | ((n.bit_length() + 7) // 8)]) + n.to_bytes(
        (n.bit_length() + 7) // 8, "big")
    return bytes([tag]) + length + content


def test_a_compressed_smime_message_is_read(client):
    # RFC 3274 CompressedData (OpenSSL here is built without zlib, so the block is put together by hand)
    entity = b'Content-Type: application/xml; name="r.xml"\r\nContent-Disposition: attachment; filename="r.xml"\r\n\r\n' \
        + CII
    oid = bytes.fromhex("060b2a864886f70d0109100109")
    zlib_alg = _der(0x30, bytes.fromhex("060b2a864886f70d0109100308"))
    encap = _der(0x30, bytes.fromhex("06092a864886f70d010701") + _der(0xA0, _der(0x04, zlib.compress(entity))))
    block = _der(0x30, oid + _der(0xA0, _der(0x30, _der(0x02, b"\x00") + zlib_alg + encap)))
    raw = HEAD + (b'MIME-Version: 1.0\r\nContent-Type: application/pkcs7-mime; smime-type=compressed-data; '
                  b'name="smime.p7z"\r\nContent-Transfer-Encoding: base64\r\n\r\n') + base64.encodebytes(block)
    results = post(client, raw)
    assert base_names(results) == ["r.xml"] and reports_of(client, results) == [single(client, CII)]


# -- names, encodings, forwarding --------------------------------------------------------------------------------

def test_rfc2231_continued_names_and_a_name_only_in_the_content_type(client):
    raw = multipart(TEXT, b"Content-Type: application/octet-stream\r\nContent-Disposition: attachment;\r\n"
                    b" filename*0*=UTF-8''Rechnung%20f%C3%BCr%20;\r\n filename*1*=M%C3%A4rz%202026.xml\r\n"
                    b"Content-Transfer-Encoding: base64\r\n\r\n" + base64.encodebytes(UBL),
                    b'Content-Type: application/octet-stream; name="=?iso-8859-1?Q?Gutschrift_M=E4rz.xml?="\r\n'
                    b"Content-Transfer-Encoding: base64\r\n\r\n" + base64.encodebytes(CII))
    results = post(client, raw)
    assert base_names(results) == ["Rechnung für März 2026.xml", "Gutschrift März.xml"]
    assert reports_of(client, results) == [single(client, UBL), single(client, CII)]


def test_quoted_printable_xml_and_an_xml_body(client):
    qp = multipart(TEXT, b'Content-Type: text/xml; charset=utf-8\r\nContent-Disposition: attachment; filename="q.xml"'
                   b"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" + quopri.encodestring(UBL))
    body = HEAD + b"MIME-Version: 1.0\r\nContent-Type: application/xml\r\n\r\n" + CII
    assert reports_of(client, post(client, qp)) == [single(client, UBL)]
    assert reports_of(client, post(client, body)) == [single(client, CII)]


def test_an_invoice_forwarded_twice(client):
    inner = message(3, [("deep.xml", UBL)], subject="Original")
    results = post(client, message(1, [], subject="Fwd: Fwd", forwarded=message(2, [], subject="Fwd",
                                                                                  forwarded=inner)).as_bytes())
    assert base_names(results) == ["deep.xml"] and '"Original"' in results[0]["name"]
    assert reports_of(client, results) == [single(client, UBL)]


def uuencode(data: bytes, name: str) -> bytes:
    lines = [f"begin 644 {name}".encode()] + [binascii.b2a_uu(data[i:i + 45]).rstrip(b"\n")
                                                for i in range(0, len(data), 45)]
    return b"\r\n".join(lines + [b"`", b"end"]) + b"\r\n"


def test_uuencoded_attachments_in_the_text(client):
    # Outlook's "plain text" with UUENCODE, and a mailer of no MIME at all: the files sit in the body's text
    plain = HEAD + b"Content-Type: text/plain\r\n\r\nAnbei:\r\n\r\n" + uuencode(UBL, "rechnung.xml") + b"\r\n" \
        + uuencode(PDF, "rechnung.pdf") + b"\r\nMit freundlichen Gruessen\r\n"
    no_mime = HEAD + b"\r\nAnbei:\r\n" + uuencode(CII, "C:\\Rechnungen\\cii.xml")
    results = post(client, plain, path="/v1/invoice/zugferd/validate/batch")
    # before: NO_INVOICE, the invoices unseen
    assert base_names(results) == ["rechnung.xml", "rechnung.pdf"]
    assert reports_of(client, results) == [single(client, UBL), single(client, PDF)]
    results = post(client, no_mime)
    assert base_names(results) == ["cii.xml"] and reports_of(client, results) == [single(client, CII)]


def test_a_damaged_uuencoded_file_and_a_begin_without_end(client):
    damaged = HEAD + b"\r\nbegin 644 a.xml\r\n\xff\xfe not uuencode\r\nend\r\n"
    assert [code(e) for e in post(client, damaged)] == ["BROKEN_ENCODING"]
    open_ended = HEAD + b"\r\n" + b"begin 644 a.xml\r\nM" + b"A" * 60 + b"\r\n" * 20000
    assert [code(e) for e in post(client, open_ended)] == ["NO_INVOICE"]


def test_calendar_vcard_and_a_logo_are_noise_beside_the_invoice(client):
    m = message(1, [("rechnung.xml", UBL), ("termin.ics", b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nEND:VCALENDAR\r\n"),
                    ("kontakt.vcf", b"BEGIN:VCARD\r\nVERSION:3.0\r\nEND:VCARD\r\n")])
    svg = b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>'
    m.add_attachment(svg, maintype="image", subtype="svg+xml", filename="logo.svg")
    m.add_attachment(svg, maintype="image", subtype="svg+xml", disposition="inline")  # a signature's logo
    results = post(client, m.as_bytes())
    # before: both SVGs were "invoices", reported invalid, and the message went to the invalid folder
    assert base_names(results) == ["rechnung.xml"] and results[0]["report"]["valid"]
    only_noise = message(2, [("kontakt.vcf", b"BEGIN:VCARD\r\nEND:VCARD\r\n")])
    only_noise.add_attachment(svg, maintype="image", subtype="svg+xml", filename="logo.svg")
    entry = post(client, only_noise.as_bytes())[0]
    assert code(entry) == "NO_INVOICE" and "kontakt.vcf, logo.svg" in entry["notice"]["message"]


def test_the_same_invoice_twice_is_two_documents(client):
    results = post(client, message(1, [("a.xml", UBL), ("a.xml", UBL)]).as_bytes())
    assert base_names(results) == ["a.xml", "a (2).xml"]  # two rows told apart
    assert reports_of(client, results) == [single(client, UBL)] * 2


def test_a_bare_invoice_signed_as_it_is(client, signer):
    # a gateway that signs the XML itself, not a MIME entity around it
    entity = (signer / "entity.txt").read_bytes()
    (signer / "entity.txt").write_bytes(CII)
    try:
        raw = openssl(signer, "smime", "-sign", "-nodetach", "-binary", "-signer", "cert.pem", "-inkey", "key.pem")
    finally:
        (signer / "entity.txt").write_bytes(entity)  # the other tests' signed message
    results = post(client, raw)
    assert base_names(results) == ["smime.xml"] and reports_of(client, results) == [single(client, CII)]
