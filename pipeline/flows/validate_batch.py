"""Product path: validate many documents at once (a ZIP archive, or several files).

    archive -> members (bounded reads, hostile members refused one by one) -> each: the single validate flow -> results

Each document gets exactly the report its single validate path gives (`validate_xml` for xrechnung / en16931,
`validate_pdf` for zugferd; content checks and `strict` included), or an `error` entry with a code and message when
it could not be validated. One bad member never fails the others; only the archive as a whole can be refused
(ApiError 400/413): not a ZIP, more than `max_files` documents, more than `max_total` bytes uncompressed.

Hostile archives: nothing is ever written to disk and no declared size is trusted. Every member is decompressed
through a reader that stops one byte past `max_member` (a member that would grow larger gets FILE_TOO_LARGE and is
read no further), and every byte decompressed counts toward `max_total` (413 BATCH_TOO_LARGE when the archive
would grow past it: a zip bomb of many members). A member that is itself a ZIP gets NESTED_ARCHIVE (never opened);
a name that climbs out of the archive (`..`, an absolute path, a drive letter) gets UNSAFE_NAME; an encrypted or
damaged member gets ENCRYPTED_MEMBER / DAMAGED_MEMBER.
"""
from __future__ import annotations

import io
import logging
import re
import zipfile
from dataclasses import dataclass
from typing import Iterator

from pipeline import budget
from pipeline.check import engine
from pipeline.check.detect import SPECS
from pipeline.check.report import Report
from pipeline.errors import ApiError, ErrorDetail
from pipeline.flows.validate_fr_ctc import validate_fr_ctc
from pipeline.flows.validate_pdf import validate_pdf
from pipeline.flows.validate_xml import validate_xml

log = logging.getLogger("pipeline.validate.batch")

ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header; an empty archive's end record
_CHUNK = 1 << 16
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass
class Member:
    """One document of a batch: its bytes, or why it cannot be validated (`error` = (code, message))."""
    name: str
    data: bytes | None = None
    error: tuple[str, str] | None = None


@dataclass(frozen=True)
class Limits:
    max_files: int          # documents per batch (EINVOICE_MAX_BATCH_FILES)
    max_member: int         # uncompressed bytes of one document (EINVOICE_MAX_UPLOAD_BYTES, as one upload)
    max_total: int          # uncompressed bytes of all members together


def is_zip(data: bytes) -> bool:
    return data[:4] in ZIP_MAGIC


def too_many_files(count: int, limit: int) -> ApiError:
    message = f"The batch has {count} documents; at most {limit} are validated at once (EINVOICE_MAX_BATCH_FILES)."
    return ApiError(400, "TOO_MANY_FILES", message, [ErrorDetail("TOO_MANY_FILES", message, field="file",
                                                                 rejectedValue=count)])


def _too_large_total(limit: int) -> ApiError:
    message = (f"The archive decompresses to more than {limit} bytes (a zip bomb, or too much at once); "
               "nothing was validated.")
    return ApiError(413, "PAYLOAD_TOO_LARGE", message, [ErrorDetail("BATCH_TOO_LARGE", message, field="file")])


def unsafe_name(name: str) -> bool:
    """A name that would climb out of a folder it is extracted to: `..` parts, absolute, a drive letter, a NUL."""
    parts = re.split(r"[/\\]", name)
    return (name.startswith(("/", "\\")) or bool(_DRIVE.match(name)) or ".." in parts or "\x00" in name)


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: Limits, room: list[int]) -> bytes | None:
    """The member's bytes, decompressed at most `max_member` + 1 bytes far whatever its header declares (None:
    larger). `room[0]` is what the archive may still decompress; running out raises 413."""
    limit = limits.max_member
    chunks, size = [], 0
    with archive.open(info) as stream:
        while True:
            chunk = stream.read(min(_CHUNK, limit + 1 - size))
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            room[0] -= len(chunk)
            if room[0] < 0:
                raise _too_large_total(limits.max_total)
            if size > limit:
                return None
            chunks.append(chunk)


def read_archive(data: bytes, limits: Limits) -> list[Member]:
    """The documents of a ZIP archive in archive order (folders left out), each with its bytes or its error.
    Raises ApiError 400 (not a readable ZIP, too many documents) or 413 (decompresses past `max_total`)."""
    return list(iter_archive(io.BytesIO(data), limits))


def iter_archive(source, limits: Limits) -> Iterator[Member]:
    """`read_archive` one member at a time, for an archive in a file (a path or a binary file object) far larger
    than memory: a job's upload. The archive as a whole is checked (400 / 413) before the first member."""
    try:
        archive = zipfile.ZipFile(source)
        infos = [i for i in archive.infolist() if not i.is_dir()]
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        message = f"The 'file' part is not a readable ZIP archive: {exc}"
        raise ApiError(400, "INVALID_ARCHIVE", message, [ErrorDetail("INVALID_ARCHIVE", message, field="file")])
    if len(infos) > limits.max_files:
        raise too_many_files(len(infos), limits.max_files)
    # the declared sizes: an early no, never a yes (a member declared over max_member is refused unread below)
    if sum(i.file_size for i in infos if i.file_size <= limits.max_member) > limits.max_total:
        raise _too_large_total(limits.max_total)
    return _members(archive, infos, limits)


def _members(archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo], limits: Limits) -> Iterator[Member]:
    room = [limits.max_total]
    with archive:
        for info in infos:
            name = info.filename
            if unsafe_name(name):
                yield Member(name, error=("UNSAFE_NAME", "The member's name leaves the archive (`..`, an "
                                          "absolute path or a drive letter); it was not read."))
                continue
            if info.flag_bits & 0x1:
                yield Member(name, error=("ENCRYPTED_MEMBER", "The member is encrypted; it was not read."))
                continue
            if info.file_size > limits.max_member:
                yield Member(name, error=_member_too_large(limits.max_member))
                continue
            try:
                body = _read_member(archive, info, limits, room)
            except (zipfile.BadZipFile, NotImplementedError, EOFError, OSError, ValueError, RuntimeError) as exc:
                yield Member(name, error=("DAMAGED_MEMBER", f"The member could not be decompressed: {exc}"))
                continue
            yield document(name, body, limits.max_member)


def _member_too_large(limit: int) -> tuple[str, str]:
    return "FILE_TOO_LARGE", f"The document is larger than {limit} bytes uncompressed; it was read no further."


def document(name: str, body: bytes | None, max_member: int) -> Member:
    """One document of a batch (an archive member or an uploaded file): refused if too large or itself a ZIP."""
    if body is None or len(body) > max_member:
        return Member(name, error=_member_too_large(max_member))
    if is_zip(body) or name.lower().endswith(".zip"):
        return Member(name, error=("NESTED_ARCHIVE", "The document is itself a ZIP archive; archives inside a batch "
                                   "are not opened. Put its documents in the batch itself."))
    return Member(name, body)


def check_request(spec: str, version: str | None) -> None:
    """Refuse the whole batch (ApiError 400) for an unknown spec or unsupported version, as the single path does
    for one document, before any work."""
    if spec not in SPECS:
        raise ApiError(400, "UNSUPPORTED_SPEC", f"Unknown specification {spec!r}; one of {', '.join(SPECS)}.")
    if spec != "zugferd":
        engine.check_spec(spec, version)


def validate_document(data: bytes, spec: str, version: str | None = None, request_id: str | None = None,
                      strict: bool = False) -> dict:
    """The report of one document as its single validate path answers it (JSON shape), or {"error": ...} when
    that path refuses the document itself (a file that is not a PDF on the ZUGFeRD path: INVALID_PDF)."""
    return document_outcome(data, spec, version, request_id, strict)[0]


def document_outcome(data: bytes, spec: str, version: str | None = None, request_id: str | None = None,
                     strict: bool = False) -> tuple[dict, Report | None]:
    """`validate_document` and the Report itself (None for an error entry), for a report for people."""
    try:
        if spec == "zugferd":
            report = validate_pdf(data, request_id, content_checks=True, strict=strict)
        elif spec == "fr-ctc":
            report = validate_fr_ctc(data, version, request_id, content_checks=True, strict=strict)
        else:
            report = validate_xml(data, spec, version, request_id, content_checks=True, strict=strict)
    except budget.Exhausted:
        raise
    except ApiError as exc:
        return {"error": {"code": exc.error_code, "message": exc.message}}, None
    except Exception as exc:  # noqa: BLE001 - one document's crash must not cost the others their reports
        log.exception("validating a batch member failed request_id=%s", request_id)
        return {"error": {"code": "INTERNAL_ERROR", "message": f"The document could not be validated: "
                                                               f"{type(exc).__name__}"}}, None
    return {"report": report.to_dict()}, report


def entry(member: Member, outcome: dict | None) -> dict:
    """A results[] entry: {"name", "report"} or {"name", "error": {"code", "message"}}."""
    if member.error is not None:
        return {"name": member.name, "error": {"code": member.error[0], "message": member.error[1]}}
    return {"name": member.name, **outcome}


def summary(results: list[dict]) -> dict:
    reports = [r["report"] for r in results if "report" in r]
    return {"files": len(results), "valid": sum(1 for r in reports if r["valid"]),
            "invalid": sum(1 for r in reports if not r["valid"]), "errors": len(results) - len(reports)}


TIME_BUDGET = ("TIME_BUDGET", "Not validated: the request's time budget (EINVOICE_REQUEST_BUDGET) was spent on the "
               f"documents before it; {budget.JOBS_HINT}, or send it in a smaller batch.")


def validate_batch(members: list[Member], spec: str, version: str | None = None, request_id: str | None = None,
                   strict: bool = False) -> dict:
    """{"summary": {"files", "valid", "invalid", "errors"}, "results": [...]} in the members' order, one by one.
    Once the request's time budget is spent (`pipeline.budget`), the batch takes no further document: those left,
    and one whose check the budget cut short, get a TIME_BUDGET entry, and the answer holds what was done."""
    check_request(spec, version)
    results = []
    for m in members:
        if m.error is None and budget.spent():
            m = Member(m.name, error=TIME_BUDGET)
        if m.error is not None:
            results.append(entry(m, None))
            continue
        try:
            results.append(entry(m, validate_document(m.data, spec, version, request_id, strict)))
        except budget.Exhausted:
            results.append(entry(Member(m.name, error=TIME_BUDGET), None))
    return {"summary": summary(results), "results": results}
