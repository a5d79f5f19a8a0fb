"""What unpacking yields: one Member per document found in an upload (its bytes, or why it is not worked on),
the bounds an upload is unpacked under, and the refusals of an upload as a whole (400 / 413)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from pipeline.errors import ApiError, ErrorDetail

ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header; an empty archive's end record
_DRIVE = re.compile(r"^[A-Za-z]:")

# Codes that are not errors: the entry says what was found (a message without an invoice), nothing was refused
NOTICES = frozenset({"NO_INVOICE"})


@dataclass
class Member:
    """One document of an upload: its bytes, or why it is not worked on (`error` = (code, message); a code in
    NOTICES is no error). `email`: the message it came from ({"messageId", "date", "from", "subject", "index"});
    `signature`: what the signature of the signed file it came out of says (pipeline.unpack.signature)."""
    name: str
    data: bytes | None = None
    error: tuple[str, str] | None = None
    email: dict | None = None
    signature: dict | None = None


BATCH_FILES, JOB_FILES = "EINVOICE_MAX_BATCH_FILES", "EINVOICE_MAX_JOB_FILES"


@dataclass(frozen=True)
class Limits:
    max_files: int          # documents per upload (EINVOICE_MAX_BATCH_FILES, EINVOICE_MAX_JOB_FILES)
    max_member: int         # bytes of one document (EINVOICE_MAX_UPLOAD_BYTES, as one upload)
    max_total: int          # bytes all members together decompress or decode to
    files_setting: str = BATCH_FILES  # the setting `max_files` comes from: a refusal names it

    @property
    def max_message(self) -> int:
        """Bytes of one e-mail message: a document of `max_member` base64-encoded, and headers and text beside it."""
        return 2 * self.max_member + (1 << 20)


def name_text(raw: bytes) -> str:
    """A file name that comes as bytes (a form part's header, a file system's name), as text: UTF-8, else CP1252,
    the code page of the Windows tools such names mostly come from. Never lone surrogates (Python's stand-ins for
    bytes that are no UTF-8), which no JSON, HTML or UTF-8 answer can carry."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp1252", errors="replace")


# Files an operating system or a mail program keeps beside documents, by name and by their first bytes (both must
# agree, so that an invoice is never taken for one): macOS's AppleDouble companions ("._name"; in a ZIP made by the
# Finder under "__MACOSX/"), the Finder's ".DS_Store" and Windows' "Thumbs.db" (an OLE file); and what a mail
# program keeps beside the mailbox it exports or stores: Apple Mail's "Info.plist" (an XML or binary property list)
# and "table_of_contents" (its binary index) in an exported "Inbox.mbox" folder, Thunderbird's "Inbox.msf" (a Mork
# text index beside the mailbox file "Inbox") and "msgFilterRules.dat" (its filters, `version="9"` first). None of
# them holds a message: the mailboxes beside them do.
def _plist(head: bytes) -> bool:
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(b"bplist0") or (text[:1] == b"<" and b"<plist" in head)


def _binary(head: bytes) -> bool:
    """Bytes no document, message or text of ours begins with: a NUL among them, and neither UTF-16 text (which has
    many: an XML invoice saved by a Windows tool) nor a PDF or a ZIP (which have them too)."""
    return b"\x00" in head and head[:2] not in (b"\xff\xfe", b"\xfe\xff", b"<\x00", b"\x00<", b"PK") and \
        b"%PDF-" not in head[:1024]


_OS_METADATA: tuple[tuple[Callable[[str], bool], Callable[[bytes], bool]], ...] = (
    (lambda base: base.startswith("._"), lambda head: head.startswith(b"\x00\x05\x16\x07")),
    (lambda base: base == ".ds_store", lambda head: head.startswith(b"\x00\x00\x00\x01Bud1")),
    (lambda base: base == "thumbs.db", lambda head: head.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")),
    (lambda base: base == "info.plist", _plist),
    (lambda base: base == "table_of_contents", _binary),
    (lambda base: base.endswith(".msf"), lambda head: head.startswith(b"// <!-- <mdb:mork:")),
    (lambda base: base == "msgfilterrules.dat", lambda head: head.startswith(b'version="')),
)
OS_METADATA_HEAD = 512  # bytes `os_metadata` looks at (a property list says "<plist" after its XML declaration)


def metadata_test(name: str) -> Callable[[bytes], bool] | None:
    """What the first bytes of a file so named must be for it to be one an operating system or a mail program
    keeps (`_OS_METADATA`), or None for a name none of them has."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return next((test for named, test in _OS_METADATA if named(base)), None)


def os_metadata(name: str, head: bytes) -> bool:
    """Whether a file is one an operating system or a mail program keeps beside documents (`_OS_METADATA`): left
    out of an upload's documents as its folders are, rather than reported as a document that is no e-invoice (an
    Apple Mail export's Info.plist is XML: it was an "invalid invoice")."""
    test = metadata_test(name)
    return test is not None and test(head[:OS_METADATA_HEAD])


def empty_mail_folder(size: int, beside: Callable[[str], bool], name: str) -> bool:
    """Whether a file is one of Thunderbird's empty mail folders: 0 bytes, with its index (`name`.msf, for which
    `beside` says whether it is there) beside it. Thunderbird keeps Trash, Drafts, Templates and "Unsent Messages"
    so, empty: left out as its index is, rather than an empty document's error entry."""
    return size == 0 and beside(f"{name}.msf")


def is_zip(data: bytes) -> bool:
    return data[:4] in ZIP_MAGIC


def too_many_files(count: int, limit: int, setting: str = BATCH_FILES, exact: bool = False) -> ApiError:
    """400 TOO_MANY_FILES naming `setting`. `count`: the documents found before the upload was refused, which is
    all of them only where `exact` (a ZIP's directory); else reading stopped at the first one past `limit`."""
    has = count if exact else f"more than {limit}"
    done = "taken in one job" if setting == JOB_FILES else "validated at once"
    message = f"The {'job' if setting == JOB_FILES else 'batch'} has {has} documents; at most {limit} are {done} " \
              f"({setting})."
    return ApiError(400, "TOO_MANY_FILES", message, [ErrorDetail("TOO_MANY_FILES", message, field="file",
                                                                 rejectedValue=count if exact else None)])


def too_large_total(limit: int) -> ApiError:
    message = (f"The archive decompresses to more than {limit} bytes (a zip bomb, or too much at once); "
               "nothing was validated.")
    return ApiError(413, "PAYLOAD_TOO_LARGE", message, [ErrorDetail("BATCH_TOO_LARGE", message, field="file")])


def member_too_large(limit: int) -> tuple[str, str]:
    return "FILE_TOO_LARGE", f"The document is larger than {limit} bytes uncompressed; it was read no further."


# Names Windows keeps for devices, with any extension ("nul.xml", "Com1.pdf.json"): a file so named cannot be made
# there (opening it opens the device). COM and LPT with superscript digits are devices too.
_DEVICE = re.compile(r"(?:CON|PRN|AUX|NUL|CONIN\$|CONOUT\$|COM[0-9\u00b9\u00b2\u00b3]|LPT[0-9\u00b9\u00b2\u00b3])",
                     re.IGNORECASE)


def windows_device(part: str) -> bool:
    """Whether a file or folder name is a Windows device name: Windows reads it up to its first dot, trailing
    spaces dropped (`CON.xml`, `aux .tar.gz`)."""
    return _DEVICE.fullmatch(part.split(".", 1)[0].rstrip(" ")) is not None


def unsafe_name(name: str) -> bool:
    """A name that would climb out of a folder it is extracted to: `..` parts, absolute, a drive letter, a NUL."""
    parts = re.split(r"[/\\]", name)
    return (name.startswith(("/", "\\")) or bool(_DRIVE.match(name)) or ".." in parts or "\x00" in name)


class Room:
    """What an upload may still decompress or decode, all its containers together; 413 once it is used up."""

    def __init__(self, limit: int):
        self.limit = self.left = limit

    def take(self, size: int) -> None:
        self.left -= size
        if self.left < 0:
            raise too_large_total(self.limit)


def document(name: str, body: bytes | None, max_member: int, email: dict | None = None) -> Member:
    """One document (an uploaded file, an archive member, an attachment): refused if too large or a ZIP that is
    not opened here."""
    if body is None or len(body) > max_member:
        return Member(name, error=member_too_large(max_member), email=email)
    if is_zip(body) or name.lower().endswith(".zip"):
        return Member(name, error=NESTED_ARCHIVE, email=email)
    return Member(name, body, email=email)


NESTED_ARCHIVE = ("NESTED_ARCHIVE", "The document is itself a ZIP archive inside an archive; archives are opened "
                  "one level deep. Put its documents in the batch itself.")
