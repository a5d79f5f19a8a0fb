"""What the signature of a signed file says (pipeline.unpack.signature): every document out of a .p7m (uploaded, in
a ZIP, attached to a message) or an opaque S/MIME message carries "intact", "broken" or "unchecked", with the
signer's name and a sentence in English and German that says the certificate's trust was not checked. Each file is
signed here by OpenSSL (RSA, RSA-PSS, ECDSA; with and without signed attributes, by key id, BER-streamed)
of a real-world invoice, then changed byte by byte where a test says so."""
from __future__ import annotations

import base64
import email
import email.policy
import shutil
import subprocess
import time

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs7

from conftest import SHARED
from mailbuild import compound_file, message, outlook_message, zipped
from pipeline.unpack import Limits, Unpacker

CII = (SHARED / "realworld/corpus/XML-Rechnung/CII/EN16931_Einfach.cii.xml").read_bytes()
LIMITS = Limits(max_files=100, max_member=10 << 20, max_total=100 << 20)
EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
KEYS = {"rsa": ["-newkey", "rsa:2048"], "ec": EC, **{f"ec{n}": EC for n in range(1, 9)}}  # ec1..8: co-signers


@pytest.fixture(scope="module")
def sign(tmp_path_factory):
    """sign(data, key kind, *openssl cms options) -> a .p7m (DER, content inside) signed by "Seller SpA"."""
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed to sign the test files (Debian: apt-get install openssl)")
    d = tmp_path_factory.mktemp("signature")
    for kind, how in KEYS.items():
        subprocess.run(["openssl", "req", "-x509", *how, "-nodes", "-days", "2", "-subj",
                        f"/CN=fatture@seller.example/O=Seller SpA {kind}", "-keyout", f"{kind}.key",
                        "-out", f"{kind}.pem"], check=True, capture_output=True, cwd=d)

    def signed(data: bytes, kind: str = "rsa", *options: str) -> bytes:
        (d / "in").write_bytes(data)
        subprocess.run(["openssl", "cms", "-sign", "-nodetach", "-binary", "-signer", f"{kind}.pem", "-inkey",
                        f"{kind}.key", "-in", "in", "-outform", "DER", "-out", "out", *options], check=True,
                       capture_output=True, cwd=d)
        return (d / "out").read_bytes()
    signed.dir = d
    return signed


def documents(name: str, data: bytes):
    return [m for m in Unpacker(LIMITS).file(name, data)]


def changed(p7m: bytes, old: bytes = b"Rechnung", new: bytes = b"Rechnunq") -> bytes:
    """The file with one byte of its content changed (as a forger or a broken transfer would)."""
    assert p7m.count(old) >= 1
    return p7m.replace(old, new, 1)


@pytest.mark.parametrize("kind, options", [("rsa", ()), ("rsa", ("-stream",)), ("rsa", ("-noattr",)),
                                           ("rsa", ("-keyid",)), ("rsa", ("-md", "sha1")),
                                           ("rsa", ("-keyopt", "rsa_padding_mode:pss")), ("ec", ("-md", "sha384"))],
                         ids=["rsa", "ber-streamed", "no-signed-attributes", "by-key-id", "sha1", "pss", "ecdsa"])
def test_an_intact_signature_names_its_signer_and_says_trust_was_not_checked(sign, kind, options):
    (doc,) = documents("IT01234567890_FPA01.xml.p7m", sign(CII, kind, *options))
    assert doc.data == CII and doc.error is None
    said = doc.signature
    assert said["status"] == "intact" and said["signer"] == f"fatture@seller.example / Seller SpA {kind}"
    assert ("signedAt" in said) == ("-noattr" not in options)
    assert said["meaning"]["en"].startswith(f"The signature matches the content: the document is as {said['signer']}")
    assert "was not checked" in said["meaning"]["en"] and "wurde nicht geprüft" in said["meaning"]["de"]


@pytest.mark.parametrize("options", [(), ("-noattr",)], ids=["signed-attributes", "no-signed-attributes"])
def test_a_changed_document_is_named_broken_and_still_read(sign, options):
    (doc,) = documents("r.xml.p7m", changed(sign(CII, "rsa", *options)))
    assert doc.data == CII.replace(b"Rechnung", b"Rechnunq", 1)  # worked on as it is: the rules judge it
    assert doc.signature["status"] == "broken"
    why = "the document was changed after it was signed" if options == () else "is not the one the signer's"
    assert why in doc.signature["meaning"]["en"] and "Absender" in doc.signature["meaning"]["de"]


def test_a_changed_signature_is_broken_and_a_file_without_certificate_unchecked(sign):
    p7m = sign(CII)
    tail = len(p7m) - 10  # inside the RSA signature, the block's last element
    (doc,) = documents("r.xml.p7m", p7m[:tail] + bytes([p7m[tail] ^ 1]) + p7m[tail + 1:])
    assert doc.signature["status"] == "broken" and doc.signature["signer"].startswith("fatture@")
    (doc,) = documents("r.xml.p7m", sign(CII, "rsa", "-nocerts"))
    assert doc.data == CII and doc.signature["status"] == "unchecked"
    assert doc.signature["meaning"] == {
        "en": "The signature was not checked: the signer's certificate is not in the file.",
        "de": "Die Signatur wurde nicht geprüft: Das Zertifikat des Unterzeichners liegt der Datei nicht bei."}


def test_every_document_of_a_signed_zip_and_of_a_signed_message_carries_it(sign):
    signed_zip = documents("batch.zip.p7m", sign(zipped([("a.xml", CII), ("b.xml", CII)])))
    assert [m.name for m in signed_zip] == ["batch.zip.p7m/batch.zip/a.xml", "batch.zip.p7m/batch.zip/b.xml"]
    assert all(m.signature["status"] == "intact" for m in signed_zip)
    inner = message(1, [("a.xml", CII)]).as_bytes().replace(b"\n", b"\r\n")
    opaque = (b"From: billing@seller.example\r\nSubject: signed\r\nMIME-Version: 1.0\r\nContent-Type: "
              b"application/pkcs7-mime; smime-type=signed-data; name=smime.p7m\r\nContent-Transfer-Encoding: base64"
              b"\r\n\r\n" + base64.encodebytes(sign(inner)))
    (doc,) = documents("m.eml", opaque)
    assert doc.name.endswith("/a.xml") and doc.data == CII and doc.signature["status"] == "intact"


def test_an_attached_p7m_and_a_file_signed_twice(sign):
    mail = message(1, [("fattura.xml.p7m", sign(CII, "ec"))]).as_bytes()
    (doc,) = documents("m.eml", mail)
    assert doc.name.endswith("/fattura.xml.p7m/fattura.xml") or doc.name.endswith("/fattura.xml"), doc.name
    assert doc.signature["signer"].endswith("Seller SpA ec")
    twice = sign(sign(CII, "ec"), "rsa")  # the innermost signature is the document's own
    (doc,) = documents("r.xml.p7m.p7m", twice)
    assert doc.data == CII and doc.signature["signer"].endswith("Seller SpA ec")


def test_a_damaged_certificate_leaves_the_signature_unchecked_and_the_document_read(sign):
    p7m = sign(CII)
    cert = pkcs7.load_der_pkcs7_certificates(p7m)[0].public_bytes(serialization.Encoding.DER)
    version_3, version_8 = bytes.fromhex("a003020102"), bytes.fromhex("a003020107")  # (x509.InvalidVersion)
    for damaged in (cert.replace(version_3, version_8, 1), cert[:200] + bytes([cert[200] ^ 0xFF]) + cert[201:]):
        (doc,) = documents("r.xml.p7m", p7m.replace(cert, damaged))
        assert doc.data == CII and doc.signature["status"] == "unchecked"
        assert doc.signature["meaning"]["en"] == "The signature was not checked: the signature block is damaged."


def test_a_plain_file_has_no_signature():
    (doc,) = documents("a.xml", CII)
    assert doc.signature is None


def test_co_signers_are_each_checked_and_too_many_are_not(sign):
    (doc,) = documents("r.xml.p7m", sign(CII, "rsa", "-signer", "ec.pem", "-inkey", "ec.key"))
    assert doc.signature["status"] == "intact"
    assert sorted(doc.signature["signer"].split(", ")) == ["fatture@seller.example / Seller SpA ec",
                                                           "fatture@seller.example / Seller SpA rsa"]
    many = [option for n in range(1, 9) for option in ("-signer", f"ec{n}.pem", "-inkey", f"ec{n}.key")]
    (doc,) = documents("r.xml.p7m", sign(CII, "rsa", *many))
    assert doc.data == CII and doc.signature["status"] == "unchecked"
    assert "more than 8 signers" in doc.signature["meaning"]["en"]


def clear_signed(sign_dir, entity: bytes, key: str = "rsa") -> bytes:
    """A message clear-signed by `openssl smime -sign` (multipart/signed, the signature a pkcs7-signature part)."""
    (sign_dir / "entity.txt").write_bytes(entity)
    subprocess.run(["openssl", "smime", "-sign", "-in", "entity.txt", "-out", "signed.eml", "-signer", f"{key}.pem",
                    "-inkey", f"{key}.key", "-from", "billing@seller.example", "-subject", "Rechnung"],
                   check=True, capture_output=True, cwd=sign_dir)
    return (sign_dir / "signed.eml").read_bytes()


ENTITY = (b'Content-Type: multipart/mixed; boundary="inner"\r\n\r\n--inner\r\nContent-Type: text/plain\r\n\r\n'
          b'Sehr geehrte Damen und Herren, anbei die Rechnung.\r\n--inner\r\nContent-Type: application/xml; '
          b'name="rechnung.xml"\r\nContent-Disposition: attachment; filename="rechnung.xml"\r\n'
          b'Content-Transfer-Encoding: base64\r\n\r\n' + base64.encodebytes(CII).replace(b"\n", b"\r\n")
          + b'--inner--\r\n')


@pytest.mark.parametrize("line_ends", [b"\r\n", b"\n"], ids=["crlf", "lf-as-an-mbox-keeps-it"])
def test_a_clear_signed_message_s_invoices_carry_its_signature(sign, line_ends):
    raw = clear_signed(sign.dir, ENTITY).replace(b"\r\n", b"\n").replace(b"\n", line_ends)
    assert b"multipart/signed" in raw
    (doc,) = documents("m.eml", raw)
    assert doc.name.endswith("/rechnung.xml") and doc.data == CII
    assert doc.signature["status"] == "intact" and doc.signature["signer"] == "fatture@seller.example / Seller SpA rsa"
    (doc,) = documents("m.eml", raw.replace(b"anbei die Rechnung", b"anbei die Rechnunq"))  # the letter changed
    assert doc.signature["status"] == "broken" and doc.data == CII
    assert "the signed part of the message was changed" in doc.signature["meaning"]["en"]


def test_a_clear_signed_message_forwarded_and_in_an_mbox(sign):
    signed = clear_signed(sign.dir, ENTITY, "ec")
    forward = message(2, [], forwarded=email.message_from_bytes(signed, policy=email.policy.default))
    docs = documents("box.mbox", b"From a@b Sun Mar  1 08:00:00 2026\n" + signed.replace(b"\r\n", b"\n")
                     + b"\nFrom a@b Sun Mar  1 08:01:00 2026\n" + forward.as_bytes() + b"\n")
    assert [d.name.rsplit("/", 1)[-1] for d in docs] == ["rechnung.xml", "rechnung.xml"]
    assert [d.signature["status"] for d in docs] == ["intact", "intact"], [d.signature for d in docs]


def test_outlook_s_msg_of_a_clear_signed_message_and_its_smime_p7m_saved_alone(sign):
    # Outlook keeps a clear-signed message it received as one attachment "smime.p7m" holding the whole
    # multipart/signed (MS-OXOSMIME 2.1.3.2); before: SMIME_OPAQUE, "ask the sender for a clear-signed message"
    signed = clear_signed(sign.dir, ENTITY)
    entity = signed[signed.index(b"Content-Type: multipart/signed"):]
    (doc,) = documents("signed.msg", compound_file(outlook_message(1, [("smime.p7m", entity)])))
    assert doc.name.endswith("/rechnung.xml") and doc.data == CII and doc.signature["status"] == "intact"
    (doc,) = documents("smime.p7m", entity)
    assert doc.name.endswith("/rechnung.xml") and doc.data == CII and doc.signature["status"] == "intact"


def test_a_message_of_many_signed_parts_checks_eight(sign):
    signed = clear_signed(sign.dir, ENTITY)
    entity = signed[signed.index(b"Content-Type: multipart/signed"):]
    many = (b"From: billing@seller.example\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"M\""
            b"\r\n\r\n" + b"".join(b"--M\r\n" + entity + b"\r\n" for _ in range(10)) + b"--M--\r\n")
    started = time.monotonic()
    docs = documents("m.eml", many)
    assert time.monotonic() - started < 5 and len(docs) == 10
    assert [d.signature["status"] for d in docs] == ["intact"] * 8 + ["unchecked"] * 2
    assert docs[-1].signature["meaning"]["en"] == ("The signature was not checked: the message has more signed "
                                                  "parts than are checked.")
