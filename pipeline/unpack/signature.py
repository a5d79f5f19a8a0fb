"""What the signature of a signed file (.p7m, an opaque S/MIME message: CMS SignedData, RFC 5652 5.4-5.6) says
about its content, or a clear-signed message's detached signature about its first part (pipeline.unpack.mail),
checked with the `cryptography` library: the signer's certificate is the one the file carries,
the content's digest must be the one the signer signed, and the signature must be the certificate key's over the
signed attributes (or over the content, where there are none).

    {"status": "intact" | "broken" | "unchecked", "signer"?, "signedAt"?, "certificateValid"?,
     "meaning": {"en", "de"}}

`certificateValid` (an intact signature that says when it was made): whether every signer's certificate was within
its validity period (notBefore .. notAfter) at that time. A certificate that had expired, or was not yet valid, is
named in the meaning with its period; the status stays intact (the content is as signed), as with trust.

"intact" says the document is as the named certificate's holder signed it, no more: whether that certificate is
to be trusted (a qualified or known issuer, not revoked) is not checked, since that needs the trust lists and
revocation answers of the issuers, which this service does not keep; the meaning says so. The document is worked
on whatever the status: the rules judge the invoice, the signature only says who sent it as it is.
"""
from __future__ import annotations

import re
from datetime import datetime, timezone

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

from pipeline.unpack import ber

_HASHES = {"1.3.14.3.2.26": hashes.SHA1, "2.16.840.1.101.3.4.2.4": hashes.SHA224,
           "2.16.840.1.101.3.4.2.1": hashes.SHA256, "2.16.840.1.101.3.4.2.2": hashes.SHA384,
           "2.16.840.1.101.3.4.2.3": hashes.SHA512}
_PSS = "1.2.840.113549.1.1.10"
_MESSAGE_DIGEST, _SIGNING_TIME = "1.2.840.113549.1.9.4", "1.2.840.113549.1.9.5"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
# Signers and certificates read from one file: real ones have one to three signers (co-signed Italian invoices) and
# a chain of a few certificates; a crafted file of thousands would cost a certificate parse and a key operation each
MAX_SIGNERS, MAX_CERTIFICATES = 8, 32

INTACT, BROKEN, UNCHECKED = "intact", "broken", "unchecked"
_WHY = {  # (English, German) of each reason a signature is broken or was not checked
    "changed": ("the document was changed after it was signed", "Das Dokument wurde nach dem Signieren geändert"),
    "part changed": ("the signed part of the message was changed after it was signed (a mail server that re-encodes "
                     "messages changes it too)", "Der signierte Teil der Nachricht wurde nach dem Signieren geändert "
                     "(auch ein Mailserver, der Nachrichten umkodiert, ändert ihn)"),
    "not signer's": ("the signature is not the one the signer's certificate ({signer}) makes over this content",
                     "Die Signatur ist nicht die, die das Zertifikat des Unterzeichners ({signer}) über diesen "
                     "Inhalt ergibt"),
    "no signer": ("the file names no signer", "Die Datei nennt keinen Unterzeichner"),
    "no certificate": ("the signer's certificate is not in the file", "Das Zertifikat des Unterzeichners liegt der "
                       "Datei nicht bei"),
    "algorithm": ("the signature's algorithm ({algorithm}) is not supported here", "Das Signaturverfahren "
                  "({algorithm}) wird hier nicht unterstützt"),
    "damaged": ("the signature block is damaged", "Der Signaturblock ist beschädigt"),
    "unlocated": ("the signed part is not found as it was sent", "Der signierte Teil ist nicht so auffindbar, wie er "
                  "gesendet wurde"),
    "too many": (f"it has more than {MAX_SIGNERS} signers", f"Sie hat mehr als {MAX_SIGNERS} Unterzeichner"),
    "too many parts": ("the message has more signed parts than are checked", "Die Nachricht hat mehr signierte Teile, "
                       "als geprüft werden"),
}


class _Outcome(Exception):
    """A signer's signature is broken or cannot be checked: the status and the reason (a key of _WHY)."""

    def __init__(self, status: str, why: str, **values: str):
        super().__init__(why)
        self.status, self.why, self.values = status, why, values


def check(block: bytes, rest: list, octets: bytes, part: bool = False) -> dict:
    """The signature of a SignedData whose fields after encapContentInfo are `rest` ([0] certificates, [1] CRLs,
    signerInfos: pipeline.unpack.ber's elements of `block`) over the content `octets` (`part`: a clear-signed message's first
    part, whose change is told as such); every signer's must be intact."""
    try:
        certificates = _certificates(block, rest)
        signers = [f for f in rest if f.tag == 0x31]
        infos = ber.children(block, signers[-1]) if signers else []
        if not infos:
            raise _Outcome(UNCHECKED, "no signer")
        if len(infos) > MAX_SIGNERS:
            raise _Outcome(UNCHECKED, "too many")
        digests: dict[str, bytes] = {}  # the content hashed once per algorithm, not once per signer
        checked = [_signer(block, info, certificates, octets, digests, part) for info in infos]
    except _Outcome as outcome:
        return _said(outcome.status, outcome.why, outcome.values)
    except Exception:  # noqa: BLE001 - cut elements, a certificate `cryptography` refuses (a bad version, a
        # repeated extension, ...): the block is damaged, the document inside is read all the same
        return _said(UNCHECKED, "damaged", {})
    names = ", ".join(dict.fromkeys(name for name, _, _ in checked))
    at = next((when for _, when, _ in checked if when), "")
    lapsed = {name: period for name, when, period in checked if when and period}
    valid = {"certificateValid": not lapsed} if all(when for _, when, _ in checked) else {}
    return {"status": INTACT, "signer": names, **({"signedAt": at} if at else {}), **valid,
            "meaning": _intact(names, at, lapsed)}


def damaged() -> dict:
    """A signature block that cannot be taken apart."""
    return _said(UNCHECKED, "damaged", {})


def unlocated() -> dict:
    """A clear-signed message whose signed part is not found as it was sent (pipeline.unpack.mail)."""
    return _said(UNCHECKED, "unlocated", {})


def skipped() -> dict:
    """A clear-signed part past the number a message has checked (pipeline.unpack.mail.MAX_CLEAR_SIGNED)."""
    return _said(UNCHECKED, "too many parts", {})


def _certificates(block: bytes, rest: list) -> list[x509.Certificate]:
    """The certificates the file carries ([0] IMPLICIT SET OF CertificateChoices; only X.509 ones are read)."""
    out = []
    for field in (f for f in rest if f.tag == 0xA0):
        for cert in ber.children(block, field):
            if cert.tag == 0x30 and len(out) < MAX_CERTIFICATES:
                out.append(x509.load_der_x509_certificate(bytes(block[cert.at:cert.next])))
    return out


def _signer(block: bytes, info, certificates: list[x509.Certificate], octets: bytes,
            digests: dict[str, bytes], part: bool) -> tuple[str, str, tuple[str, str] | None]:
    """(the signer's name, when it signed, the certificate's validity period where that time lies outside it) of
    one SignerInfo whose signature is intact, else _Outcome.

    SignerInfo ::= SEQUENCE { version, sid, digestAlgorithm, [0] signedAttrs OPTIONAL, signatureAlgorithm,
                              signature OCTET STRING, [1] unsignedAttrs OPTIONAL }"""
    fields = ber.children(block, info)
    digest_oid = _oid(ber.children(block, fields[2])[0].value(block))
    attrs = fields[3] if fields[3].tag == 0xA0 else None
    algorithm, signature = fields[4:6] if attrs is not None else fields[3:5]
    cert = _find(block, fields[1], certificates)
    name = _name(cert)
    if digest_oid not in _HASHES:
        raise _Outcome(UNCHECKED, "algorithm", algorithm=digest_oid)
    digest = _HASHES[digest_oid]()
    when = ""
    if attrs is None:
        signed = octets
    else:
        values = {_oid(a[0].value(block)): ber.children(block, a[1])[0]
                  for a in (ber.children(block, attr) for attr in ber.children(block, attrs))}
        found = values.get(_MESSAGE_DIGEST)
        if digest_oid not in digests:
            digests[digest_oid] = _hash(digest, octets)
        if found is None or found.value(block) != digests[digest_oid]:
            raise _Outcome(BROKEN, "part changed" if part else "changed")
        when = _time(values[_SIGNING_TIME].value(block)) if _SIGNING_TIME in values else ""
        signed = b"\x31" + bytes(block[attrs.at + 1:attrs.next])  # signed as a SET OF (RFC 5652 5.4), not [0]
    _verify(cert, block, algorithm, signature.value(block), signed, digest, name)
    return name, when, _lapsed(cert, when)


def _lapsed(cert: x509.Certificate, when: str) -> tuple[str, str] | None:
    """The certificate's validity period (ISO 8601 UTC) where the signing time `when` lies outside it, else None."""
    if not when:
        return None
    at = datetime.fromisoformat(when.replace("Z", "+00:00"))
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    if start <= at <= end:
        return None
    return tuple(t.isoformat().replace("+00:00", "Z") for t in (start, end))


def _find(block: bytes, sid, certificates: list[x509.Certificate]) -> x509.Certificate:
    """The certificate a SignerIdentifier names: IssuerAndSerialNumber, or [0] SubjectKeyIdentifier."""
    issuer, serial = ber.children(block, sid)[:2] if sid.tag == 0x30 else (None, None)
    for cert in certificates:
        if issuer is not None:
            if cert.serial_number == int.from_bytes(serial.value(block), "big", signed=True) and \
                    cert.issuer.public_bytes() == bytes(block[issuer.at:issuer.next]):
                return cert
        elif sid.tag == 0x80:
            try:
                key_id = cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
            except x509.ExtensionNotFound:
                continue
            if key_id == sid.value(block):
                return cert
    raise _Outcome(UNCHECKED, "no certificate")


def _verify(cert: x509.Certificate, block: bytes, algorithm, signature: bytes, signed: bytes, digest, name: str):
    """The certificate's public key's check of `signature` over `signed`, by the kind of key it is."""
    oid = _oid(ber.children(block, algorithm)[0].value(block))
    try:
        key = cert.public_key()
        if isinstance(key, rsa.RSAPublicKey):
            key.verify(signature, signed, _pss(block, algorithm) if oid == _PSS else padding.PKCS1v15(), digest)
        elif isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(signature, signed, ec.ECDSA(digest))
        else:
            raise _Outcome(UNCHECKED, "algorithm", algorithm=f"{type(key).__name__} / {oid}")
    except InvalidSignature:
        raise _Outcome(BROKEN, "not signer's", signer=name) from None
    except UnsupportedAlgorithm:
        raise _Outcome(UNCHECKED, "algorithm", algorithm=oid) from None


def _pss(block: bytes, algorithm) -> padding.PSS:
    """RSASSA-PSS-params (RFC 4055): [0] hash (SHA-1), [1] MGF1 with a hash (SHA-1), [2] salt length (20)."""
    params = ber.children(block, algorithm)[1:]
    fields = {f.tag: ber.children(block, f)[0] for f in
              (ber.children(block, params[0]) if params and params[0].tag == 0x30 else [])}
    mgf_hash = hashes.SHA1()
    if 0xA1 in fields:
        mgf_params = ber.children(block, fields[0xA1])[1:]
        inner = ber.children(block, mgf_params[0]) if mgf_params else []
        if inner:
            mgf_hash = _HASHES.get(_oid(inner[0].value(block)), hashes.SHA1)()
    salt = int.from_bytes(fields[0xA2].value(block), "big") if 0xA2 in fields else 20
    return padding.PSS(mgf=padding.MGF1(mgf_hash), salt_length=salt)


def _hash(digest, data: bytes) -> bytes:
    h = hashes.Hash(digest)
    h.update(data)
    return h.finalize()


def _oid(raw: bytes) -> str:
    """An OBJECT IDENTIFIER's content as dotted text (base-128 digits; the first two arcs in the first value)."""
    values, n = [], 0
    for byte in raw:
        n = (n << 7) | (byte & 0x7F)
        if not byte & 0x80:
            values.append(n)
            n = 0
    if not values:
        return ""
    first = min(values[0] // 40, 2)
    return ".".join(str(v) for v in (first, values[0] - 40 * first, *values[1:]))


def _time(raw: bytes) -> str:
    """A signing time (UTCTime YYMMDDHHMMSSZ or GeneralizedTime YYYYMMDDHHMMSSZ) as ISO 8601 UTC, else ''."""
    text = raw.decode("ascii", "replace")
    try:
        when = datetime.strptime(text, "%y%m%d%H%M%SZ" if len(text) == 13 else "%Y%m%d%H%M%SZ")
    except ValueError:
        return ""
    return when.replace(tzinfo=timezone.utc).isoformat().replace("+00:00", "Z")


def _name(cert: x509.Certificate) -> str:
    """Who a certificate is for, for people: its common name and organisation, else its whole subject."""
    subject = cert.subject
    parts = [a.value for oid in (x509.NameOID.COMMON_NAME, x509.NameOID.ORGANIZATION_NAME)
             for a in subject.get_attributes_for_oid(oid) if isinstance(a.value, str)]
    text = " / ".join(dict.fromkeys(parts)) or subject.rfc4514_string()
    return _CONTROL.sub(" ", text).strip()[:200] or "an unnamed certificate"


def _intact(signer: str, at: str, lapsed: dict[str, tuple[str, str]]) -> dict[str, str]:
    when = f" {at[:16].replace('T', ' ')} UTC" if at else ""
    trust = ("Whether that certificate is to be trusted (who issued it, whether it was revoked) was not checked.",
             "Ob diesem Zertifikat zu trauen ist (wer es ausgestellt hat, ob es gesperrt wurde), wurde nicht geprüft.")
    day = lambda t: t[:10]  # noqa: E731
    period = [(f" The certificate of {name} was not valid when it signed (valid from {day(a)} to {day(b)}).",
               f" Das Zertifikat von {name} war beim Signieren nicht gültig (gültig vom {day(a)} bis {day(b)}).")
              for name, (a, b) in lapsed.items()]
    return {"en": f"The signature matches the content: the document is as {signer} signed it"
                  f"{' on' + when if when else ''}.{''.join(en for en, _ in period)} {trust[0]}",
            "de": f"Die Signatur passt zum Inhalt: Das Dokument ist so, wie {signer} es{' am' + when if when else ''} "
                  f"signiert hat.{''.join(de for _, de in period)} {trust[1]}"}


def _said(status: str, why: str, values: dict) -> dict:
    en, de = (text.format(**values) for text in _WHY[why])
    if status == BROKEN:
        meaning = {"en": f"The signature does not match the content: {en}. Ask the sender for the document again.",
                   "de": f"Die Signatur passt nicht zum Inhalt: {de}. Fordern Sie das Dokument beim Absender neu an."}
    else:
        meaning = {"en": f"The signature was not checked: {en}.", "de": f"Die Signatur wurde nicht geprüft: {de}."}
    return {"status": status, **({"signer": values["signer"]} if "signer" in values else {}), "meaning": meaning}


def attach(members, said: dict | None):
    """The documents found in a signed file, each with what its signature says (the innermost one where a signed
    file holds another)."""
    for member in members:
        if said is not None and member.signature is None:
            member.signature = said
        yield member
