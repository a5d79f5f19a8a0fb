"""Whether the signer's certificate was valid when it signed: a signature that says when it was made (the signed
attribute signingTime) tells `certificateValid`, and a certificate that had expired or was not yet valid then is
named in the meaning with its period (English and German). The status stays what the content says (intact): trust
in the certificate is not checked either. A signature without a signing time says nothing of it."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs7

from conftest import SHARED
from pipeline.unpack import Limits, Unpacker

CII = (SHARED / "realworld/corpus/XML-Rechnung/CII/EN16931_Einfach.cii.xml").read_bytes()
LIMITS = Limits(max_files=100, max_member=10 << 20, max_total=100 << 20)
NOW = datetime.now(timezone.utc)


def certificate(name: str, start: datetime, end: datetime):
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, name)])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
            .sign(key, hashes.SHA256()))
    return cert, key


def signed(*signers, attributes: bool = True) -> bytes:
    builder = pkcs7.PKCS7SignatureBuilder().set_data(CII)
    for cert, key in signers:
        builder = builder.add_signer(cert, key, hashes.SHA256())
    options = [pkcs7.PKCS7Options.Binary] + ([] if attributes else [pkcs7.PKCS7Options.NoAttributes])
    return builder.sign(serialization.Encoding.DER, options)


def said(p7m: bytes) -> dict:
    (doc,) = Unpacker(LIMITS).file("rechnung.xml.p7m", p7m)
    assert doc.data == CII and doc.error is None
    return doc.signature


VALID = certificate("Valid GmbH", NOW - timedelta(days=30), NOW + timedelta(days=30))
EXPIRED = certificate("Expired GmbH", datetime(2020, 1, 1, tzinfo=timezone.utc),
                      datetime(2021, 1, 1, tzinfo=timezone.utc))
EARLY = certificate("Early GmbH", NOW + timedelta(days=400), NOW + timedelta(days=800))


def test_a_certificate_valid_when_it_signed_says_so():
    s = said(signed(VALID))
    assert (s["status"], s["signer"], s["certificateValid"]) == ("intact", "Valid GmbH", True)
    assert "not valid when it signed" not in s["meaning"]["en"]


@pytest.mark.parametrize("cert, period", [(EXPIRED, "valid from 2020-01-01 to 2021-01-01"),
                                          (EARLY, f"valid from {(NOW + timedelta(days=400)).date()}")],
                         ids=["expired", "not-yet-valid"])
def test_a_certificate_outside_its_period_when_it_signed_is_named_in_the_meaning(cert, period):
    s = said(signed(cert))
    assert (s["status"], s["certificateValid"]) == ("intact", False) and "signedAt" in s
    name = cert[0].subject.rfc4514_string().removeprefix("CN=")
    assert f"The certificate of {name} was not valid when it signed ({period}" in s["meaning"]["en"]
    assert f"Das Zertifikat von {name} war beim Signieren nicht gültig (gültig vom" in s["meaning"]["de"]
    assert "was not checked" in s["meaning"]["en"]


def test_co_signers_each_and_a_signature_without_a_signing_time():
    s = said(signed(VALID, EXPIRED))
    assert s["certificateValid"] is False and s["signer"] == "Valid GmbH, Expired GmbH"
    assert "Expired GmbH was not valid" in s["meaning"]["en"] and "Valid GmbH was not valid" not in s["meaning"]["en"]
    s = said(signed(EXPIRED, attributes=False))  # no signing time: nothing to compare the period with
    assert s["status"] == "intact" and "certificateValid" not in s and "signedAt" not in s
