"""BER / DER elements (ITU-T X.690) as a CMS block is framed: definite and indefinite lengths, elements of
indefinite length scanned for their end once, bounds on nesting and on the number of elements read in one block.
Read by pipeline.unpack.smime (the content) and pipeline.unpack.signature (the signers and certificates)."""
from __future__ import annotations

_MAX_DEPTH = 32  # nesting of ASN.1 elements we follow (a signed message has about 6 levels to its content)
# Elements read in one block: 10,000, and one more per 256 bytes. BER's pieces of an OCTET STRING are the many
# (`openssl cms -stream` writes 4 KiB each: 1,200 for 5 MB); a 9 MB block of 1-byte pieces took 54 s and 600 MB
# before this bound (now refused in 0.1 s), and a message of many such blocks is bounded by its size alike.
_ELEMENTS, _BYTES_PER_ELEMENT = 10_000, 256


class Unreadable(Exception):
    """The block is no CMS structure we can take the content out of (the message says why)."""


class Block(bytes):
    """A block's bytes, with where each element of indefinite length found so far ends (`ends`: its content's
    start -> end; each is scanned for its end once, not again by each element around it), and how many more
    elements may be read (`left`)."""
    ends: dict[int, int]
    left: int

    def __new__(cls, data: bytes):
        block = super().__new__(cls, data)
        block.ends, block.left = {}, _ELEMENTS + len(data) // _BYTES_PER_ELEMENT
        return block


class Element:
    __slots__ = ("tag", "at", "start", "end", "next")

    def __init__(self, tag: int, at: int, start: int, end: int, next_: int):
        self.tag, self.at, self.start, self.end, self.next = tag, at, start, end, next_

    @property
    def constructed(self) -> bool:
        return bool(self.tag & 0x20)

    def value(self, data: bytes) -> bytes:
        return data[self.start:self.end]


def element(data: bytes, pos: int, depth: int) -> Element:
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
                at = element(data, at, depth + 1).next
                if at >= len(data):
                    raise IndexError
            data.ends[pos] = at
        return Element(tag, head, pos, at, at + 2)
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
    return Element(tag, head, pos, pos + length, pos + length)


def children(data: bytes, parent: Element) -> list[Element]:
    """The elements inside `parent`."""
    return children_at(data, parent, 0)


def children_at(data: bytes, parent: Element, depth: int) -> list[Element]:
    out, at = [], parent.start
    while at < parent.end:
        child = element(data, at, depth + 1)
        out.append(child)
        at = child.next
    return out


def octets(data: bytes, string: Element, depth: int) -> bytes:
    """An OCTET STRING's bytes, put together from its pieces where it is constructed (BER)."""
    if not string.constructed:
        return string.value(data)
    if depth > _MAX_DEPTH:
        raise Unreadable("its ASN.1 structure nests too deep")
    return b"".join(octets(data, child, depth + 1) for child in children_at(data, string, depth))
