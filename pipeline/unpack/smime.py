"""The content of an opaque S/MIME message (application/pkcs7-mime): the signed MIME entity inside a CMS
SignedData (RFC 5652 5.1, `smime-type=signed-data`, what Outlook sends when "clear-signed" is off and
`openssl smime -sign -nodetach` writes) or a CompressedData (RFC 3274, zlib): a message's own body, a signed file
attached to it (pipeline.unpack.mail), or a signed file (.p7m) uploaded or in a ZIP (pipeline.unpack).

The ASN.1 framing is read with pipeline.unpack.ber (BER: definite and indefinite lengths, an OCTET STRING in constructed pieces, as
`openssl cms -stream` writes it); whether the signature matches the content is checked by
pipeline.unpack.signature on these elements. The invoice is judged by the rules whatever the signature says.
EnvelopedData (encrypted) is named as such: it cannot be read without the recipient's private key.

    ContentInfo ::= SEQUENCE { contentType OID, content [0] EXPLICIT ANY }
    SignedData ::= SEQUENCE { version, digestAlgorithms SET, encapContentInfo, [0] certificates, [1] crls, SET }
    CompressedData ::= SEQUENCE { version, compressionAlgorithm, encapContentInfo }
    EncapsulatedContentInfo ::= SEQUENCE { eContentType OID, eContent [0] EXPLICIT OCTET STRING OPTIONAL }
"""
from __future__ import annotations

import zlib

from pipeline.unpack import ber, signature
from pipeline.unpack.ber import Unreadable

_SIGNED = bytes.fromhex("2a864886f70d010702")            # 1.2.840.113549.1.7.2
_ENVELOPED = bytes.fromhex("2a864886f70d010703")         # 1.2.840.113549.1.7.3
_AUTH_ENVELOPED = bytes.fromhex("2a864886f70d0109100117")  # 1.2.840.113549.1.9.16.1.23
_COMPRESSED = bytes.fromhex("2a864886f70d0109100109")    # 1.2.840.113549.1.9.16.1.9


class Encrypted(Unreadable):
    pass


_KINDS = (_SIGNED, _ENVELOPED, _AUTH_ENVELOPED, _COMPRESSED)
_PEM = (b"-----BEGIN PKCS7-----", b"-----BEGIN CMS-----")


def is_cms(head: bytes) -> bool:
    """Whether a file's first bytes are a CMS ContentInfo of a kind read here (or named as encrypted): a DER or
    BER SEQUENCE whose first element is that OID, or PEM armour around one (`openssl cms -outform PEM`)."""
    if head.lstrip().startswith(_PEM):
        return True
    if len(head) < 4 or head[0] != 0x30:
        return False
    first = head[1]
    at = 2 + (first & 0x7F if first > 0x80 else 0)  # after a long form's length bytes (0x80: open length)
    if head[at:at + 1] != b"\x06":
        return False
    return head[at + 2:at + 2 + head[at + 1]] in _KINDS if at + 1 < len(head) else False


def opened(data: bytes, limit: int) -> tuple[bytes, dict | None]:
    """The MIME entity (or file) a signed-data or compressed-data block carries (at most `limit` bytes), and for
    signed data what its signature says (`pipeline.unpack.signature.check`; None for compressed data, which has
    none). Raises Encrypted for enveloped data, Unreadable for anything else (damaged, detached: no content)."""

    data, kind, fields, inner = _structure(data)
    if len(inner) < 2:
        raise Unreadable("it holds no content (a detached signature, sent without the signed message)")
    try:
        explicit = ber.children_at(data, inner[1], 0)
        if not explicit or explicit[0].tag & 0x1F != 0x04:
            raise Unreadable("its content is no OCTET STRING")
        octets = ber.octets(data, explicit[0], 0)
    except (IndexError, RecursionError) as exc:
        raise Unreadable("its ASN.1 structure is cut short or damaged") from exc
    if kind == _COMPRESSED:
        inflater = zlib.decompressobj()
        try:
            octets = inflater.decompress(octets, limit + 1)
        except zlib.error as exc:
            raise Unreadable(f"its compressed content is damaged ({exc})") from exc
    if len(octets) > limit:
        raise Unreadable(f"its content is larger than {limit} bytes")
    return octets, (signature.check(data, fields[3:], octets) if kind == _SIGNED else None)


def detached(data: bytes, content: bytes) -> dict:
    """What a detached signature (a clear-signed message's application/pkcs7-signature part: signed-data without
    the content) says of `content`, the bytes it was made over."""
    try:
        data, kind, fields, _ = _structure(data)
    except Unreadable:
        return signature.damaged()
    return signature.check(data, fields[3:], content, part=True) if kind == _SIGNED else signature.damaged()


def _structure(data: bytes) -> tuple[ber.Block, bytes, list, list]:
    """(the block, its content type, the fields of its signed-data or compressed-data, the elements of its
    encapContentInfo); Encrypted for enveloped data, Unreadable for anything else."""
    if data[:1] != b"\x30":  # a ContentInfo is a SEQUENCE: anything else is no CMS block at all
        raise Unreadable("it is no PKCS#7 / CMS block")
    data = ber.Block(data)
    try:
        info = ber.children_at(data, ber.element(data, 0, 0), 0)
        if len(info) < 2 or info[0].tag != 0x06:
            raise Unreadable("it is no CMS ContentInfo")
        kind = info[0].value(data)
        if kind in (_ENVELOPED, _AUTH_ENVELOPED):
            raise Encrypted("it is encrypted (enveloped-data)")
        if kind not in (_SIGNED, _COMPRESSED):
            raise Unreadable("it is neither signed-data nor compressed-data")
        body = ber.children_at(data, info[1], 0)  # [0] EXPLICIT: the one element inside
        fields = ber.children_at(data, body[0], 0) if body else []
        encap = fields[2] if len(fields) > 2 else None  # both: version, an algorithm (set), encapContentInfo
        return data, kind, fields, ber.children_at(data, encap, 0) if encap is not None and encap.tag == 0x30 else []
    except (IndexError, RecursionError) as exc:
        raise Unreadable("its ASN.1 structure is cut short or damaged") from exc
