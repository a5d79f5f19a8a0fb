"""The content of an opaque S/MIME message (application/pkcs7-mime): the signed MIME entity inside a CMS
SignedData (RFC 5652 5.1, `smime-type=signed-data`, what Outlook sends when "clear-signed" is off and
`openssl smime -sign -nodetach` writes) or a CompressedData (RFC 3274, zlib): a message's own body, a signed file
attached to it (pipeline.unpack.mail), or a signed file (.p7m) uploaded or in a ZIP (pipeline.unpack).

The ASN.1 framing is read here (BER: definite and indefinite lengths, an OCTET STRING in constructed pieces, as
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

_SIGNED = bytes.fromhex("2a864886f70d010702")            # 1.2.840.113549.1.7.2
_ENVELOPED = bytes.fromhex("2a864886f70d010703")         # 1.2.840.113549.1.7.3
_AUTH_ENVELOPED = bytes.fromhex("2a864886f70d0109100117")  # 1.2.840.113549.1.9.16.1.23
_COMPRESSED = bytes.fromhex("2a864886f70d0109100109")    # 1.2.840.113549.1.9.16.1.9
_MAX_DEPTH = 32  # nesting of ASN.1 elements we follow (a signed message has about 6 levels to its content)
# Elements read in one block: 10,000, and one more per 256 bytes. BER's pieces of an OCTET STRING are the many
# (`openssl cms -stream` writes 4 KiB each: 1,200 for 5 MB); a 9 MB block of 1-byte pieces took 54 s and 600 MB
# before this bound (now refused in 0.1 s), and a message of many such blocks is bounded by its size alike.
_ELEMENTS, _BYTES_PER_ELEMENT = 10_000, 256


class Unreadable(Exception):
    """The block is no CMS structure we can take the content out of (the message says why)."""


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
    from pipeline.unpack import signature  # (it reads the block with this module's reader)

    data, kind, fields, inner = _structure(data)
    if len(inner) < 2:
        raise Unreadable("it holds no content (a detached signature, sent without the signed message)")
    try:
        explicit = _children(data, inner[1], 0)
        if not explicit or explicit[0].tag & 0x1F != 0x04:
            raise Unreadable("its content is no OCTET STRING")
        octets = _octets(data, explicit[0], 0)
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
    from pipeline.unpack import signature

    try:
        data, kind, fields, _ = _structure(data)
    except Unreadable:
        return signature.damaged()
    return signature.check(data, fields[3:], content, part=True) if kind == _SIGNED else signature.damaged()


def _structure(data: bytes) -> tuple[_Block, bytes, list, list]:
    """(the block, its content type, the fields of its signed-data or compressed-data, the elements of its
    encapContentInfo); Encrypted for enveloped data, Unreadable for anything else."""
    if data[:1] != b"\x30":  # a ContentInfo is a SEQUENCE: anything else is no CMS block at all
        raise Unreadable("it is no PKCS#7 / CMS block")
    data = _Block(data)
    try:
        info = _children(data, _element(data, 0, 0), 0)
        if len(info) < 2 or info[0].tag != 0x06:
            raise Unreadable("it is no CMS ContentInfo")
        kind = info[0].value(data)
        if kind in (_ENVELOPED, _AUTH_ENVELOPED):
            raise Encrypted("it is encrypted (enveloped-data)")
        if kind not in (_SIGNED, _COMPRESSED):
            raise Unreadable("it is neither signed-data nor compressed-data")
        body = _children(data, info[1], 0)  # [0] EXPLICIT: the one element inside
        fields = _children(data, body[0], 0) if body else []
        encap = fields[2] if len(fields) > 2 else None  # both: version, an algorithm (set), encapContentInfo
        return data, kind, fields, _children(data, encap, 0) if encap is not None and encap.tag == 0x30 else []
    except (IndexError, RecursionError) as exc:
        raise Unreadable("its ASN.1 structure is cut short or damaged") from exc


class _Block(bytes):
    """A block's bytes, with where each element of indefinite length found so far ends (`ends`: its content's
    start -> end; each is scanned for its end once, not again by each element around it), and how many more
    elements may be read (`left`)."""
    ends: dict[int, int]
    left: int

    def __new__(cls, data: bytes):
        block = super().__new__(cls, data)
        block.ends, block.left = {}, _ELEMENTS + len(data) // _BYTES_PER_ELEMENT
        return block


class _Element:
    __slots__ = ("tag", "at", "start", "end", "next")

    def __init__(self, tag: int, at: int, start: int, end: int, next_: int):
        self.tag, self.at, self.start, self.end, self.next = tag, at, start, end, next_

    @property
    def constructed(self) -> bool:
        return bool(self.tag & 0x20)

    def value(self, data: bytes) -> bytes:
        return data[self.start:self.end]


def _element(data: bytes, pos: int, depth: int) -> _Element:
    """The element at `pos`: its tag byte, where its content starts and ends, where the next one begins."""
    if depth > _MAX_DEPTH:
        raise Unreadable("its ASN.1 structure nests too deep")
    data.left -= 1
    if data.left < 0:
        raise Unreadable("it is split into too many small pieces (more elements than its size allows)")
    head, tag = pos, data[pos]
    pos += 1
    if tag & 0x1F == 0x1F:  # a high tag number: base-128 digits (none in CMS's framing; skipped over)
        while data[pos] & 0x80:
            pos += 1
        pos += 1
    first = data[pos]
    pos += 1
    if first == 0x80:  # indefinite length (BER): the content runs to the end-of-contents octets 00 00
        if not tag & 0x20:
            raise Unreadable("a primitive element has an indefinite length")
        at = data.ends.get(pos)
        if at is None:
            at = pos
            while data[at:at + 2] != b"\x00\x00":
                at = _element(data, at, depth + 1).next
                if at >= len(data):
                    raise IndexError
            data.ends[pos] = at
        return _Element(tag, head, pos, at, at + 2)
    if first & 0x80:
        count = first & 0x7F
        if count > 4:
            raise Unreadable("an element's length is larger than 4 GiB")
        length = int.from_bytes(data[pos:pos + count], "big")
        pos += count
    else:
        length = first
    if pos + length > len(data):
        raise IndexError
    return _Element(tag, head, pos, pos + length, pos + length)


def children(data: bytes, parent: _Element) -> list[_Element]:
    """The elements inside `parent` (pipeline.unpack.signature reads a signed-data's signers with it)."""
    return _children(data, parent, 0)


def _children(data: bytes, parent: _Element, depth: int) -> list[_Element]:
    out, at = [], parent.start
    while at < parent.end:
        child = _element(data, at, depth + 1)
        out.append(child)
        at = child.next
    return out


def _octets(data: bytes, element: _Element, depth: int) -> bytes:
    """An OCTET STRING's bytes, put together from its pieces where it is constructed (BER)."""
    if not element.constructed:
        return element.value(data)
    if depth > _MAX_DEPTH:
        raise Unreadable("its ASN.1 structure nests too deep")
    return b"".join(_octets(data, child, depth + 1) for child in _children(data, element, depth))
