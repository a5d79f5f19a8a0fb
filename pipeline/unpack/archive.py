"""ZIP archives: their members, read as hostile input.

Nothing is ever written to disk and no declared size is trusted. Every member is decompressed through a reader
that stops one byte past `max_member` (a member that would grow larger gets FILE_TOO_LARGE and is read no further),
and every byte decompressed counts toward the upload's room (`max_total`; 413 BATCH_TOO_LARGE when the archive
would grow past it: a zip bomb of many members). A name that climbs out of the archive (`..`, an absolute path, a
drive letter) gets UNSAFE_NAME; an encrypted or damaged member gets ENCRYPTED_MEMBER / DAMAGED_MEMBER. What an
operating system or a mail program keeps beside documents (`__MACOSX/._name`, `.DS_Store`, `Thumbs.db`, an Apple
Mail export's `Info.plist` and `table_of_contents`, Thunderbird's `.msf` and its empty mail folders) is left out as
folders are,
before the documents are counted against `max_files`. Whether a
member is itself a container (a ZIP: NESTED_ARCHIVE; an e-mail: opened) is the caller's question
(`pipeline.unpack`).
"""
from __future__ import annotations

import contextlib
import io
import lzma
import struct
import zipfile
import zlib
from typing import Callable, Iterator

from pipeline import budget
from pipeline.errors import ApiError, ErrorDetail
from pipeline.unpack.members import OS_METADATA_HEAD, Limits, Member, Room, empty_mail_folder, member_too_large, \
    metadata_test, too_large_total, too_many_files, unsafe_name

_CHUNK = 1 << 16
_ASK_EVERY = 1000  # members sorted out between two asks of the request's time budget (`_asking`)
# what reading a damaged member raises: zipfile's own errors, and its decompressors' (a deflate stream with a bad
# code raised zlib.error, no OSError: a 500 for a whole month's archive)
_DAMAGED = (zipfile.BadZipFile, NotImplementedError, EOFError, OSError, ValueError, RuntimeError, zlib.error,
            lzma.LZMAError)


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int, room: Room) -> bytes | None:
    """The member's bytes, decompressed at most `limit` + 1 bytes far whatever its header declares (None:
    larger). Each byte is taken from `room` (413 when it runs out)."""
    chunks, size = [], 0
    with archive.open(info) as stream:
        while True:
            chunk = stream.read(min(_CHUNK, limit + 1 - size))
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            room.take(len(chunk))
            if size > limit:
                return None
            chunks.append(chunk)


def read_archive(data: bytes, limits: Limits) -> list[Member]:
    """The members of a ZIP archive in archive order (folders left out), each with its bytes or its error.
    Raises ApiError 400 (not a readable ZIP, too many documents) or 413 (decompresses past `max_total`)."""
    return list(iter_archive(io.BytesIO(data), limits))


def iter_archive(source, limits: Limits, room: Room | None = None) -> Members:
    """`read_archive` one member at a time, for an archive in a file (a path or a binary file object) far larger
    than memory: a job's upload. The archive as a whole is checked (400 / 413) before the first member."""
    declared = _declared_members(source)
    if declared > DIRECTORY_FACTOR * limits.max_files + DIRECTORY_SLACK:
        raise too_many_files(declared, limits.max_files, limits.files_setting)
    try:
        archive = zipfile.ZipFile(source)
        infos = [i for i in archive.infolist() if not i.is_dir()]
    except UnicodeDecodeError:  # (a ValueError) zipfile reads the whole directory or nothing
        raise _invalid("The 'file' part is a damaged ZIP archive: a member's name is marked as UTF-8 but is not "
                       "UTF-8, so its directory cannot be read and no member was read. Pack the files again.")
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        raise _invalid(f"The 'file' part is not a readable ZIP archive: {exc}")
    names = {member_name(i) for i in infos}
    infos = [i for i in _asking(infos) if not _os_metadata(archive, i)  # left out before counting: never read
             and not empty_mail_folder(i.file_size, names.__contains__, member_name(i))]
    if len(infos) > limits.max_files:
        raise too_many_files(len(infos), limits.max_files, limits.files_setting, exact=True)
    room = room or Room(limits.max_total)
    # the declared sizes: an early no, never a yes (a member declared over max_member is refused unread below)
    if sum(i.file_size for i in infos if i.file_size <= limits.max_member) > room.left:
        raise too_large_total(room.limit)
    return Members(archive, infos, limits.max_member, room)


# zipfile reads an archive's whole directory in one go (~9 us a member, no budget can stop it; a 2 GiB ZIP can declare
# 27 million members of an empty name: 4 min, and more memory than the host has): an archive that declares more than
# this many times the documents taken (folders, a Finder ZIP's `__MACOSX/._name` twins and the like beside them) is
# refused before it is read (the slack: a small upload's folders and such files are never counted against it)
DIRECTORY_FACTOR, DIRECTORY_SLACK = 4, 10_000
_END = b"PK\x05\x06"  # the end of central directory record: its member count 10 bytes on (2 bytes)
_END64_LOCATOR = b"PK\x06\x07"  # ZIP64's, 20 bytes before it: where ZIP64's end record is (8 bytes at 8)
_END64 = b"PK\x06\x06"  # ZIP64's end record: its member count 32 bytes on (8 bytes)


def _declared_members(source) -> int:
    """The member count an archive's end record declares (ZIP64's where the plain one says 0xFFFF), 0 where it
    cannot be told (zipfile says what is wrong). `source`: a path or a seekable binary file."""
    with open(source, "rb") if not hasattr(source, "read") else contextlib.nullcontext(source) as f:
        size = f.seek(0, io.SEEK_END)
        start = max(0, size - (22 + 0xFFFF))  # the record (22 bytes) and a comment of up to 64 KiB after it
        f.seek(start)
        tail = f.read()
        at = tail.rfind(_END)
        if at < 0 or len(tail) < at + 22:
            return 0
        count = struct.unpack_from("<H", tail, at + 10)[0]
        if count != 0xFFFF or at < 20 or tail[at - 20:at - 16] != _END64_LOCATOR:
            return count
        f.seek(struct.unpack_from("<Q", tail, at - 12)[0])
        end64 = f.read(40)
        return struct.unpack_from("<Q", end64, 32)[0] if len(end64) == 40 and end64[:4] == _END64 else count


def _asking(infos: list[zipfile.ZipInfo]) -> Iterator[zipfile.ZipInfo]:
    """`infos`, the request's time budget asked every _ASK_EVERY of them (a job's upload): a directory of millions of
    tiny members takes ~40 us each to sort out, before the first is read."""
    for n, info in enumerate(infos):
        if n % _ASK_EVERY == 0:
            budget.check()
        yield info


def _os_metadata(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bool:
    """Whether a member is one an operating system or a mail program keeps beside documents
    (`members.os_metadata`): only a member so named has its first bytes read, to be sure (a Finder ZIP has one
    `__MACOSX/._name` per document; an Apple Mail export one Info.plist and table_of_contents per mailbox)."""
    test = metadata_test(member_name(info))
    if test is None or info.flag_bits & 0x1 or info.file_size == 0:
        return False
    try:
        with archive.open(info) as stream:
            return test(stream.read(OS_METADATA_HEAD))
    except _DAMAGED:
        return False  # a damaged member is counted, and gets its entry


def _invalid(message: str) -> ApiError:
    return ApiError(400, "INVALID_ARCHIVE", message, [ErrorDetail("INVALID_ARCHIVE", message, field="file")])


def member_name(info: zipfile.ZipInfo) -> str:
    """The member's name as its maker wrote it. Without the UTF-8 flag (bit 11) the ZIP specification says CP437,
    as zipfile reads it, but macOS's Finder and Info-ZIP's `zip` write UTF-8 there unflagged ("Rechnung für
    März.xml" would be named "Rechnung f├╝r M├ñrz.xml"): a name whose bytes are UTF-8 beyond ASCII is read so.
    CP437 text is next to never valid UTF-8 (an umlaut is one byte above 0x7F, which UTF-8 never has alone)."""
    if info.flag_bits & 0x800:
        return info.filename
    raw = info.filename.encode("cp437")  # the bytes as stored: zipfile decoded them with CP437
    try:
        return raw.decode("utf-8") if not raw.isascii() else info.filename
    except UnicodeDecodeError:
        return info.filename


class Members:
    """A ZIP's members, each read as the iteration reaches it; their `names` known before, and while they are
    iterated any one read by its name (`read`), those in `skip` left to it, and those `then` names (once the
    others are through) last: the attachments Apple Mail stored apart from a message are read as that message's
    (pipeline.unpack.apple), not as members of their own, unless the message did not take them."""

    def __init__(self, archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo], limit: int, room: Room):
        self.archive, self.infos, self.limit, self.room = archive, infos, limit, room
        self.names = [member_name(i) for i in infos]
        self.by_name = dict(zip(self.names, infos))
        self.skip: set[str] = set()
        self.then: Callable[[], list[str]] = list

    def __iter__(self) -> Iterator[Member]:
        with self.archive:
            for name, info in zip(self.names, self.infos):
                if name not in self.skip:
                    yield self._member(name, info)
            for name in self.then():
                yield self._member(name, self.by_name[name])

    def read(self, name: str) -> Member:
        return self._member(name, self.by_name[name])

    def _member(self, name: str, info: zipfile.ZipInfo) -> Member:
        if unsafe_name(name):
            return Member(name, error=("UNSAFE_NAME", "The member's name leaves the archive (`..`, an absolute path "
                                       "or a drive letter); it was not read."))
        if info.flag_bits & 0x1:
            return Member(name, error=("ENCRYPTED_MEMBER", "The member is encrypted; it was not read."))
        if info.file_size > self.limit:
            return Member(name, error=member_too_large(self.limit))
        try:
            body = _read_member(self.archive, info, self.limit, self.room)
        except _DAMAGED as exc:
            return Member(name, error=("DAMAGED_MEMBER", f"The member could not be decompressed: {exc}"))
        return Member(name, body) if body is not None else Member(name, error=member_too_large(self.limit))
