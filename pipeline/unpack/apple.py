"""Apple Mail's attachments stored apart from their messages, read as those messages' own attachments wherever they
are given together: a folder's files, a ZIP's members, a job's parts.

An IMAP account in Apple Mail keeps a message whose attachments it has not stored with it as
`Messages/<n>.partial.emlx`: each such part keeps its headers, with X-Apple-Content-Length, and no body. Its file
is `Attachments/<n>/<section>/<file name>` beside the Messages folder (`<n>`: the message file's number,
`<section>`: the part's IMAP section number, RFC 3501 6.4.5: "2", "1.2", "2.4"), named as the part names it, else
as Mail names a file of no name ("Mail-Anhang.pdf" on a German Mac), holding the attachment's bytes decoded. Mail
2 (Mac OS X 10.4) kept such a part as `Messages/<n>.<section>.emlxpart` beside the message instead. Newer stores
nest the same two folders deeper (`INBOX.mbox/<id>/Data/1/2/Messages`, `.../Data/1/2/Attachments`).

A stored file is the message's (`Stored.claimed`) only where the message is given with it; one whose message is
not given stays a file of its own, read as any file is, and so does one its message did not take (a message that
could not be read, or was read whole: `Stored.unread`), so that no invoice is lost to a damaged message.
"""
from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from typing import Callable, Iterable, Iterator

from pipeline.unpack.members import Member

_SECTION = r"\d{1,9}(?:\.\d{1,9}){0,31}"
_ATTACHMENT = re.compile(r"(?:(.*)/)?Attachments/(\d{1,15})/(" + _SECTION + r")/[^/]+")
_EMLXPART = re.compile(r"(?:(.*)/)?(\d{1,15})\.(" + _SECTION + r")\.emlxpart", re.IGNORECASE)
_MESSAGE = re.compile(r"(?:(.*)/)?(\d{1,15})(?:\.partial)?\.emlx", re.IGNORECASE)
_BASE64 = re.compile(rb"[A-Za-z0-9+/]+={0,2}")
_FOLDER_FILES = 16  # files of a section's folder looked at (Mail keeps one; a hostile folder may hold thousands)

# (its name) -> the file's bytes, or why it cannot be read, as a Member named by it
Read = Callable[[str], Member]


def _mailbox(folder: str) -> str:
    """The folder both Messages and Attachments are in."""
    parent, _, last = folder.rpartition("/")
    return parent if last.lower() == "messages" else folder


def stored(name: str) -> tuple[str, str, str] | None:
    """(mailbox folder, message number, section) of a file in Apple Mail's layout of stored attachments, else None."""
    name = name.replace("\\", "/")
    if (found := _ATTACHMENT.fullmatch(name)) is not None:
        return found.group(1) or "", found.group(2), found.group(3)
    if (found := _EMLXPART.fullmatch(name)) is not None:
        return _mailbox(found.group(1) or ""), found.group(2), found.group(3)
    return None


def message(name: str) -> tuple[str, str] | None:
    """(mailbox folder, number) of an Apple Mail message file (`<n>.emlx`, `<n>.partial.emlx`), else None."""
    found = _MESSAGE.fullmatch(name.replace("\\", "/"))
    return None if found is None else (_mailbox(found.group(1) or ""), found.group(2))


class Stored:
    """The stored attachments among files given together (`names`), by the message each belongs to; `read` reads
    one by its name when its message is read."""

    def __init__(self, names: Iterable[str], read: Read):
        names = list(names)
        given = {key for key in map(message, names) if key is not None}
        self.read = read
        self.files: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (mailbox, number) -> [(section, name)]
        for name in names:
            key = stored(name)
            if key is not None and key[:2] in given:
                self.files.setdefault(key[:2], []).append((key[2], name))
        self.claimed = {name for files in self.files.values() for _, name in files}
        self.order = [name for name in names if name in self.claimed]
        self.made: list[Apart] = []

    def of(self, name: str) -> Apart | None:
        """The stored attachments of the message file `name`, or None where it has none given."""
        files = self.files.get(message(name) or ("", ""))
        if not files:
            return None
        self.made.append(Apart(files, self.read))
        return self.made[-1]

    def unread(self) -> list[str]:
        """The claimed files no message took, once all messages were read: files of their own after all."""
        taken = set().union(*(apart.used for apart in self.made))
        return [name for name in self.order if name not in taken]


def _nfc(name: str) -> str:
    """A file name as a header names it (composed umlauts), as macOS writes it too (decomposed)."""
    return unicodedata.normalize("NFC", name)


def base_name(name: str) -> str:
    return name.replace("\\", "/").rsplit("/", 1)[-1]


class Apart:
    """One message's stored attachments: each taken by the part that stands for it (`take`), those no part took
    after the message's other attachments (`left`: the part numbering of a message we had to repair can differ
    from Mail's, and an invoice must not be lost to it)."""

    def __init__(self, files: list[tuple[str, str]], read: Read):
        self.files, self.read, self.used = files, read, set()
        self.section_of = {name: section for section, name in files}
        self.sections: dict[str, list[str]] = {}  # section -> its files
        self.named: dict[str, list[str]] = {}  # a file's own name (NFC) -> the files so named, in any section
        for section, name in files:
            self.sections.setdefault(section, []).append(name)
            if not name.lower().endswith(".emlxpart"):
                self.named.setdefault(_nfc(base_name(name)), []).append(name)

    def take(self, section: str | None, file: str | None, base64_part: bool) -> Member | None:
        """The stored file of the part at `section` named `file` (its .emlxpart; the file of that name in its
        Attachments folder, else the folder's only file; else the one file of that name in another section's
        folder), read; None where there is none. Its name: the file's own, "" for an .emlxpart (the part names
        it)."""
        here = [n for n in self.sections.get(section or "", ())[:_FOLDER_FILES] if n not in self.used]
        part = [n for n in here if n.lower().endswith(".emlxpart")]
        in_folder = [n for n in here if n not in part]
        elsewhere = [n for n in self.named.get(_nfc(file), ()) if n not in self.used] if file else []
        named = [n for n in elsewhere if self.section_of[n] == section]
        chosen = (part or named or (in_folder if len(in_folder) == 1 else []) or
                  (elsewhere if len(elsewhere) == 1 else []))
        if not chosen:
            return None
        self.used.add(chosen[0])
        return self._read(chosen[0], base64_part)

    def left(self) -> Iterator[Member]:
        for _, name in self.files:
            if name not in self.used:
                self.used.add(name)
                yield self._read(name, False)

    def _read(self, name: str, base64_part: bool) -> Member:
        member = self.read(name)
        emlxpart = name.lower().endswith(".emlxpart")
        data = member.data
        if data is not None and emlxpart and base64_part:
            data = _decoded(data)
        return Member("" if emlxpart else base_name(name), data, member.error)


def _decoded(data: bytes) -> bytes:
    """An .emlxpart of a base64 part: decoded where it is base64 text, else its bytes as they are (a document's
    first "<" or "%" is no base64). Whether Mail 2 wrote the part as sent or decoded is documented nowhere: both
    are read."""
    text = b"".join(data.split())
    if not text or len(text) % 4 or _BASE64.fullmatch(text) is None:
        return data
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return data
