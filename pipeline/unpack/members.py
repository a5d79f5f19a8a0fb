"""What unpacking yields: one Member per document found in an upload (its bytes, or why it is not worked on),
the bounds an upload is unpacked under, and the refusals of an upload as a whole (400 / 413)."""
from __future__ import annotations

import re
from dataclasses import dataclass

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


# Files an operating system keeps beside documents, by name and by their first bytes (both must agree, so that an
# invoice is never taken for one): macOS's AppleDouble companions ("._name"; in a ZIP made by the Finder under
# "__MACOSX/"), the Finder's ".DS_Store" and Windows' "Thumbs.db" (an OLE file).
_OS_METADATA = (("._", b"\x00\x05\x16\x07"), (".ds_store", b"\x00\x00\x00\x01Bud1"),
                ("thumbs.db", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"))
OS_METADATA_HEAD = 8  # bytes `os_metadata` looks at


def metadata_magic(name: str) -> bytes | None:
    """The first bytes a file so named has if it is one an operating system keeps (`_OS_METADATA`), else None."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return next((magic for prefix, magic in _OS_METADATA
                 if (base.startswith(prefix) if prefix == "._" else base == prefix)), None)


def os_metadata(name: str, head: bytes) -> bool:
    """Whether a file is one an operating system keeps beside documents (`_OS_METADATA`): left out of an upload's
    documents as its folders are, rather than reported as a document that is no e-invoice."""
    magic = metadata_magic(name)
    return magic is not None and head.startswith(magic)


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
