"""Uploads as documents: a ZIP archive's members, the invoices of an e-mail (.eml, Apple Mail's .emlx, Outlook's .msg)
or a mailbox (.mbox, or a mailbox file of no extension as Thunderbird and Apple Mail's export keep them), the file a
signed file (.p7m) holds, or the file itself. Batch validation, jobs and the command line unpack what they are given
here, alike.

    file -> ZIP (archive.py)   -> each member: a document, an e-mail or mailbox (opened), a ZIP (NESTED_ARCHIVE)
         -> .eml / .emlx / .mbox -> each message's invoices; a ZIP attached is opened as above (unless the
            (mail.py), .msg         message itself came out of a ZIP: one ZIP level only), winmail.dat too
            (outlook.py)
         -> .p7m (smime.py)       -> the file inside, named "<file>.p7m/<its name>", taken as the .p7m would
                                     be where it was found (a ZIP in an uploaded .p7m opened; in a ZIP's, not)
         -> anything else         -> one document
    (the files of attachments Apple Mail stored apart from a message given with them, `Attachments/<n>/<section>/`
     and `<n>.<section>.emlxpart`: read as that message's, not as files of their own: apple.py)
    (a file the operating system or a mail program keeps beside documents, e.g. macOS's "._name" and ".DS_Store",
     an Apple Mail export's "Info.plist" and "table_of_contents", Thunderbird's "Inbox.msf" index: left out, as
     folders are: members.os_metadata)

What a file is follows from its first bytes (a ZIP's signature, an mbox's "From " line, a message's headers, an
.emlx's length line before them, a CMS block's content type), else from its name (.zip, .mbox, .eml, .emlx, .p7m,
.msg). Every document is bounded as one
upload (`Limits.max_member`), and all that an upload decompresses or decodes together by `Limits.max_total` (one
Room per upload, 413 past it). Each document gets a name no other of the upload has (`distinct`: "rechnung (2).xml").
"""
from __future__ import annotations

import io
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator

from pipeline import budget as time_budget
from pipeline.unpack import apple, archive, mail, outlook, signature, smime
from pipeline.errors import ApiError
from pipeline.unpack.members import JOB_FILES, NESTED_ARCHIVE, NOTICES, Limits, Member, Room, document, is_zip, \
    name_text, os_metadata, too_many_files, unsafe_name

__all__ = ["JOB_FILES", "NOTICES", "STDIN", "Limits", "Member", "Room", "Unpacker", "distinct", "document", "is_zip",
           "kind", "name_text", "os_metadata", "spool", "too_many_files", "unsafe_name"]

HEAD = 4096  # bytes read to tell what a file is


def kind(name: str, head: bytes) -> str | None:
    """"zip", "mbox", "eml", "emlx" (Apple Mail's), "p7m" (a signed file: CMS), "msg" (Outlook) or None (a
    document)."""
    lower = name.lower()
    if is_zip(head):
        return "zip"
    if mail.is_mbox(head):
        return "mbox"
    if lower.endswith(".emlx") or (not lower.endswith((".xml", ".pdf")) and mail.is_emlx(head)):
        return "emlx"
    if lower.endswith(".eml") or (not lower.endswith((".xml", ".pdf")) and mail.looks_like_mail(head)) or \
            (lower.endswith(".p7m") and mail.is_entity(head)):
        return "eml"  # (a signed message saved as "smime.p7m" in its S/MIME text form too)
    if smime.is_cms(head) or lower.endswith(".p7m"):
        return "p7m"
    if outlook.is_msg(name):
        return "msg"
    if lower.endswith(".mbox"):
        return "mbox"
    if lower.endswith(".zip"):
        return "zip"
    return None


STDIN = "(stdin)"  # the name of what was read from standard input (`-`), as the commands have always shown it


def spool(stream, folder: Path) -> Path:
    """A stream (a command's standard input) copied into a file of `folder`, so that it is read as a file is: a
    message or a mailbox piped in by a mail filter (procmail, sieve, `formail -s`) or a ZIP is a container whose
    invoices are checked, as a `.eml`, `.mbox` or `.zip` file is (a mailbox of any size is read from disk, never
    held whole). The file is named STDIN, so that `kind` tells it by its first bytes; an Outlook message, which only
    its name tells apart from other OLE files, gets ".msg" too."""
    path = folder / STDIN
    with open(path, "wb") as out:
        shutil.copyfileobj(stream, out, 1 << 20)
    with open(path, "rb") as f:
        if f.read(len(outlook.OLE_MAGIC)) == outlook.OLE_MAGIC:
            path = path.rename(path.with_name(STDIN + ".msg"))
    return path


class Unpacker:
    """The documents of one upload (one or several files), under one set of bounds."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.room = Room(limits.max_total)
        self.unreadable: ApiError | None = None  # the first file `one_of_several` found no readable ZIP
        self.names: set[str] = set()  # the names given so far (`_distinct`)
        self.copies: dict[str, int] = {}  # name -> the last copy number it was given: a mailbox of one message 10,000
        # times looks each copy's name up once, not 2..n each

    def one_of_several(self, name: str, source: bytes | Path, prefix: str = "",
                       stored: apple.Apart | None = None) -> Iterator[Member]:
        """`file` for one of several uploaded files: one that is no readable ZIP (damaged, cut short, 0 bytes named
        .zip) is an INVALID_ARCHIVE entry of its own, as a damaged member is, so that one bad file of a folder's 300
        does not refuse the other 299 (a 400). An upload of that file alone is still refused as a whole."""
        return self._distinct(self._one_of_several(name, source, prefix, stored))

    def file(self, name: str, source: bytes | Path, prefix: str = "", signed: int = 0,
             stored: apple.Apart | None = None) -> Iterator[Member]:
        """The documents of one uploaded file: `_file`, each under a name no other document of the upload has."""
        return self._distinct(self._file(name, source, prefix, signed, stored))

    def _distinct(self, members: Iterator[Member]) -> Iterator[Member]:
        """`members`, one named as a document before it ("rechnung.xml" twice in a message, a message twice in a
        mailbox) renamed "rechnung (2).xml": the results' rows (and their reports) were the same twice, and which
        verdict was whose could not be told."""
        for member in members:
            if member.name in self.names:
                name, self.copies[member.name] = distinct(member.name, self.names, self.copies.get(member.name, 1))
                member = replace(member, name=name)
            self.names.add(member.name)
            yield member

    def _one_of_several(self, name: str, source: bytes | Path, prefix: str,
                        stored: apple.Apart | None) -> Iterator[Member]:
        try:
            yield from self._file(name, source, prefix, stored=stored)
        except ApiError as exc:
            if exc.error_code != "INVALID_ARCHIVE":  # (an archive is read as a whole before its first member)
                raise
            self.unreadable = self.unreadable or exc  # what refuses an upload of this one file
            yield Member(prefix or name, error=("INVALID_ARCHIVE", exc.message.replace("The 'file' part", "The file")))

    def _file(self, name: str, source: bytes | Path, prefix: str = "", signed: int = 0,
              stored: apple.Apart | None = None) -> Iterator[Member]:
        """The documents of one uploaded file (its bytes, or a path for a file far larger than memory: a job's
        spooled upload). `prefix` names where the file came from (a folder's file: its relative path). A ZIP or
        a mailbox with no document in it gets one entry that says so (EMPTY_ARCHIVE, EMPTY_FILE): an upload is
        never answered with nothing. `signed`: how many signed files (.p7m) this one came out of; `stored`: the
        attachments Apple Mail stored apart from the message this file is, given with it (pipeline.unpack.apple)."""
        if isinstance(source, Path):
            with open(source, "rb") as f:
                head = f.read(HEAD)
        else:
            head = source[:HEAD]
        what = kind(name, head)
        if what == "zip":
            yield from _or_empty(self._zip(archive.iter_archive(source if isinstance(source, Path)
                                                                else io.BytesIO(source), self.limits, self.room),
                                           prefix, None), prefix or name, EMPTY_ARCHIVE)
        elif what == "mbox":
            with open(source, "rb") if isinstance(source, Path) else io.BytesIO(source) as stream:
                yield from _or_empty(mail.read_mbox(stream, prefix, self.limits, self.room, self._zip_in_mail),
                                     prefix or name, EMPTY_FILE)
        elif what in ("eml", "emlx", "msg"):
            data = _read(source, self.limits.max_message)
            if data is None:
                yield Member(prefix or name, error=("MESSAGE_TOO_LARGE", f"The message is larger than "
                                                    f"{self.limits.max_message} bytes; it was not read."))
            elif not data.strip():  # a message of no headers would be named "#1": the file's name says more
                yield Member(prefix or name, error=EMPTY_FILE)
            elif what == "msg":
                yield from mail.read_msg(data, prefix, self.limits, self.room, self._zip_in_mail, name)
            elif what == "emlx":
                yield from mail.read_emlx(data, prefix, self.limits, self.room, self._zip_in_mail, name, stored)
            else:
                yield from mail.read_message(data, prefix, self.limits, self.room, self._zip_in_mail)
        elif what == "p7m":
            yield from self._signed(name, _read(source, self.limits.max_message), prefix or name, None, signed,
                                    lambda inner_name, inner, where: self._signed_file(inner_name, inner, where,
                                                                                       signed + 1))
        elif not os_metadata(prefix or name, head):
            yield document(prefix or name, _read(source, self.limits.max_member), self.limits.max_member)

    def _signed_file(self, name: str, data: bytes, where: str, signed: int) -> Iterator[Member]:
        """What an uploaded signed file holds, taken as the file it is (a ZIP opened, a message read); a ZIP in it
        that cannot be read is that document's entry, not the upload's 400 (the upload was a readable .p7m)."""
        try:
            yield from self._file(name, data, where, signed)
        except ApiError as exc:  # (a ZIP is read as a whole before its first member: nothing was yielded yet)
            if exc.error_code != "INVALID_ARCHIVE":
                raise
            yield Member(where, error=("INVALID_ARCHIVE", exc.message.replace("The 'file' part", "The signed ZIP")))

    def _signed(self, name: str, data: bytes | None, where: str, email: dict | None, signed: int,
                then: Callable[[str, bytes, str], Iterator[Member]]) -> Iterator[Member]:
        """A signed file (.p7m: CMS signed-data, DER, BER or base64; `where` names it): the file inside it, named
        `where`/<its own name> (the .p7m's name without ".p7m": rechnung.xml.p7m/rechnung.xml), taken by `then`
        as a file of the place the .p7m was found, each with what the signature says (pipeline.unpack.signature). An
        encrypted file, a damaged one or one signed over and over gets one entry that says so."""
        if data is None:
            yield Member(where, email=email, error=("FILE_TOO_LARGE", f"The signed file is larger than "
                                                    f"{self.limits.max_message} bytes; it was not read."))
            return
        if signed >= mail.MAX_DEPTH:
            yield Member(where, email=email, error=("SMIME_OPAQUE", f"The file is signed inside itself more than "
                                                    f"{mail.MAX_DEPTH} times; it was read no further."))
            return
        try:
            inner, said = smime.opened(mail.der(data), self.limits.max_message)
        except smime.Encrypted:
            yield Member(where, error=SMIME_ENCRYPTED, email=email)
            return
        except smime.Unreadable as exc:
            yield Member(where, email=email, error=("SMIME_OPAQUE", f"The signed file (PKCS#7 / CMS) could not be "
                                                    f"read: {exc}."))
            return
        self.room.take(len(inner))
        yield from signature.attach(then(_inner_name(name, inner), inner, f"{where}/{_inner_name(name, inner)}"), said)

    def _zip(self, members: archive.Members, prefix: str, email: dict | None) -> Iterator[Member]:
        """A ZIP's members (without the operating system's files: `archive` leaves them out): a message among them
        is opened (a ZIP in it is not: NESTED_ARCHIVE), a signed file's content taken as a member; the attachments
        Apple Mail stored apart from a message among them read as that message's (pipeline.unpack.apple)."""
        stored = apple.Stored(members.names, members.read)
        members.skip |= stored.claimed
        members.then = stored.unread  # (claimed by a message that did not take them: it could not be read)
        for m in members:
            name = f"{prefix}/{m.name}" if prefix else m.name
            if m.error is not None:
                yield Member(name, error=m.error, email=email)
            else:
                yield from self._member(m.name, m.data, name, email, 0, stored.of(m.name))

    def _member(self, file: str, data: bytes, name: str, email: dict | None, signed: int,
                stored: apple.Apart | None = None) -> Iterator[Member]:
        """One file of a ZIP (`file`: its name in the archive; `name`: in results; `stored`: as `file` has it)."""
        what = kind(file, data[:HEAD])
        if what in ("eml", "emlx", "msg") and not data.strip():
            yield Member(name, error=EMPTY_FILE, email=email)
        elif what == "eml":
            yield from mail.read_message(data, name, self.limits, self.room, _no_zip)
        elif what == "emlx":
            yield from mail.read_emlx(data, name, self.limits, self.room, _no_zip, file, stored)
        elif what == "mbox":
            yield from _or_empty(mail.read_mbox(io.BytesIO(data), name, self.limits, self.room, _no_zip),
                                 name, EMPTY_FILE, email)
        elif what == "msg":
            yield from mail.read_msg(data, name, self.limits, self.room, _no_zip, file)
        elif what == "p7m":
            yield from self._signed(file, data, name, email, signed,
                                    lambda inner_name, inner, where: self._member(inner_name, inner, where, email,
                                                                                  signed + 1))
        else:
            yield document(name, data, self.limits.max_member, email)

    def _zip_in_mail(self, name: str, data: bytes, email: dict) -> Iterator[Member]:
        try:
            members = archive.iter_archive(io.BytesIO(data), self.limits, self.room)
        except ApiError as exc:  # an attachment that is no readable ZIP is that attachment's entry; a bomb is not,
            if exc.http_status == 413 or isinstance(exc, time_budget.Exhausted):  # nor the time spent on its directory
                raise
            yield Member(name, error=("INVALID_ARCHIVE", f"The attached ZIP cannot be read: {exc.message}"),
                         email=email)
            return
        yield from _or_empty(self._zip(members, name, email), name, EMPTY_ARCHIVE, email)


_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,5}$")


def distinct(name: str, taken: set[str], last: int = 1) -> tuple[str, int]:
    """(`name` with " (n)" before the extension of its last part, the first after copy `last` not in `taken`, n), as
    a file manager names a second copy (a message's name, which has none, ends in it)."""
    head, tail = name.rsplit("/", 1) if "/" in name else ("", name)
    ext = _EXTENSION.search(tail)
    stem, suffix = (tail[:ext.start()], ext.group()) if ext and ext.start() > 0 else (tail, "")
    n = last + 1
    while (new := f"{head}/{stem} ({n}){suffix}" if head else f"{stem} ({n}){suffix}") in taken:
        n += 1
    return new, n


def _inner_name(name: str, inner: bytes) -> str:
    """The name of the file a signed file holds: the signed file's own without ".p7m" (a folder's name left
    out), with an extension told by its content where that leaves none ("signed.p7m": "signed.xml")."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    base = base[:-4] if base.lower().endswith(".p7m") else base
    if "." in base.strip("."):
        return base
    return f"{base or 'signed'}.{_extension(inner)}"


def _extension(data: bytes) -> str:
    """What a file is by its content alone, as an extension: its reader goes by the name it is given."""
    head = data[:HEAD]
    if is_zip(head):
        return "zip"
    if smime.is_cms(head):
        return "p7m"
    if head.startswith(outlook.OLE_MAGIC):
        return "msg"
    if mail.is_mbox(head):
        return "mbox"
    if head.lstrip()[:5] == b"%PDF-":
        return "pdf"
    if mail.looks_like_mail(head) or mail.HEADER_START.match(head):  # a MIME entity: a signed message's body
        return "eml"
    return "xml"


def _or_empty(members: Iterator[Member], name: str, error: tuple[str, str], email: dict | None = None
              ) -> Iterator[Member]:
    """A container's documents, or one entry `error` for a container without any: a ZIP of no members, of folders
    only or of only what an operating system keeps beside documents (EMPTY_ARCHIVE), an empty mailbox
    (EMPTY_FILE). Before, such a file gave a batch of no results, a job "no documents: send one or more 'file'
    parts", and a message with an empty ZIP attached NO_INVOICE, "no ... ZIP attachment"."""
    empty = True
    for member in members:
        empty = False
        yield member
    if empty:
        yield Member(name, error=error, email=email)


EMPTY_ARCHIVE = ("EMPTY_ARCHIVE", "The ZIP archive holds no documents (no files, folders only, or only files an "
                 "operating system keeps beside documents); nothing was checked.")
EMPTY_FILE = ("EMPTY_FILE", "The file is empty: there is no message in it.")
SMIME_ENCRYPTED = ("SMIME_ENCRYPTED", "The file (.p7m) is encrypted (S/MIME, CMS enveloped-data), not only signed; it "
                   "cannot be read without the recipient's private key.")


def _no_zip(name: str, data: bytes, email: dict) -> Iterator[Member]:
    """A ZIP attached to a message that came out of a ZIP: archives open one level deep."""
    yield Member(name, error=NESTED_ARCHIVE, email=email)


def _read(source: bytes | Path, limit: int) -> bytes | None:
    """The file's bytes, or None when it is larger than `limit`."""
    if isinstance(source, bytes):
        return source if len(source) <= limit else None
    if source.stat().st_size > limit:
        return None
    return source.read_bytes()
