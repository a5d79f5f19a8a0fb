"""A job's files: its upload spooled to disk and unpacked into one file of documents, `<jobs dir>/<job id>/documents`
(each document's position and size are in its row: one file written in sequence, not a file per document, which
cost 0.4 ms each to create on a loaded machine, 4 of the 16 s a 10,000-document upload took).

The jobs directory (EINVOICE_JOBS_DIR, default `<data dir>/jobs`) must be shared by every web node and worker
when they run on several machines (NFS or any shared mount): a node writes a job's documents, any worker reads
them. Nothing is held in memory whole: each `file` part is streamed to a spool file under the job's bound
(EINVOICE_MAX_JOB_BYTES, 413), a ZIP or an e-mail (.eml, Apple Mail's .emlx, .mbox: one message at a time; a
mailbox file of no extension as Thunderbird keeps it, by its first bytes) is then unpacked as batch validation does
(`pipeline.unpack`: each document bounded as one upload, hostile members refused one by one, a message without an
invoice one NO_INVOICE notice), and the spool file is deleted. A part that a mail program keeps beside a mailbox
(Info.plist, Thunderbird's .msf index) is left out as a .DS_Store is (`unpack.os_metadata`). The folder goes when
the job ends (its results are rows in the database).

Names: a ZIP's or an e-mail's documents are named under the part's file name when the job has several files
(`month.zip/a.xml`; `sub/month.zip/a.xml` for a folder's ZIP that `pipeline jobs submit` sends), as `pipeline validate`
names them; the only file of a job names them alone (`a.xml`), as `pipeline validate month.zip` does. So each part
waits, spooled, until the next one shows there are several (two spool files on disk at a time), but for Apple Mail's
messages with attachments stored apart from them (`.partial.emlx`) and such stored files
(`INBOX.mbox/Attachments/102/2/x.pdf`, `102.2.emlxpart`, pipeline.unpack.apple): they wait to the end, when each
message is read with its stored files, and a stored file whose message was not sent is read as a file of its own.

Time: the upload is unpacked within the request's time budget (`pipeline.budget`, EINVOICE_REQUEST_BUDGET, below the
worker timeout), checked before each document is taken and, inside a mailbox, at each block read: a hostile upload
(an mbox of "From 1" lines, one message of them: 100 MB took 41 s of CPU, 440 MB had the worker killed at 121 s; a
ZIP of 100,000 tiny members takes 8 s) is refused with 503 TIME_BUDGET (`out_of_time`), nothing kept.
"""
from __future__ import annotations

import errno
import json
import os
import re
import shutil
from pathlib import Path

from pipeline import budget
from pipeline.errors import ApiError, ErrorDetail
from pipeline.flows.validate_batch import entry
from pipeline.settings import get_settings
from pipeline.unpack import JOB_FILES, NOTICES, Limits, Member, Unpacker, apple, too_many_files
from pipeline.unpack.members import OS_METADATA_HEAD, member_too_large, os_metadata, windows_device

_CHUNK = 1 << 16
DOCUMENTS = "documents"
ARCHIVE_TOTAL_FACTOR = 4  # an archive decompresses to at most 4 x EINVOICE_MAX_JOB_BYTES (a zip bomb beyond)


def jobs_dir() -> Path:
    settings = get_settings()
    return settings.jobs_dir or settings.data_dir / "jobs"


def job_dir(job_id: str) -> Path:
    return jobs_dir() / job_id


def read_document(job_id: str, pos: int, size: int) -> bytes:
    with open(job_dir(job_id) / DOCUMENTS, "rb") as f:
        f.seek(pos)
        data = f.read(size)
    if len(data) != size:
        raise FileNotFoundError(f"{job_dir(job_id) / DOCUMENTS} is shorter than its documents")
    return data


_NOT_ON_WINDOWS = re.compile(r'[<>:"|?*\x00-\x1f]')  # characters Windows refuses in a file or folder name


def zip_member_name(name: str) -> str:
    """A document's name as a ZIP member name every system can extract (a job's results ZIP): no absolute path, no
    `..`, forward slashes, no character Windows refuses (a message's folder holds its date's `:` and the `<id>` and
    `"subject"` of its name), no part ending in a dot or a space (Windows drops them), no part named as a Windows
    device (`CON.xml` -> `_CON.xml`; Windows reads the name up to its first dot, trailing spaces dropped)."""
    parts = [_NOT_ON_WINDOWS.sub("_", p) for p in name.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    parts = [p[:-1] + "_" if p[-1] in ". " else p for p in map(_shortened, parts)]
    return "/".join("_" + p if windows_device(p) else p for p in parts) or "document"


_PART_BYTES = 200  # of one folder or file name: file systems take 255, and the ZIP adds ".error.json", "12-"


def _shortened(part: str) -> str:
    """A folder or file name cut to _PART_BYTES of UTF-8, its extension kept: a ZIP member name longer than
    65,535 bytes broke the results ZIP off mid-stream, and no file system extracts a name over 255 bytes."""
    if len(part.encode("utf-8")) <= _PART_BYTES:
        return part
    stem, dot, ext = part.rpartition(".")
    if not dot or len(ext) > 16:
        stem, ext = part, ""
    room = _PART_BYTES - len(ext.encode("utf-8")) - 2
    return stem.encode("utf-8")[:room].decode("utf-8", "ignore") + "~" + (f".{ext}" if ext else "")


def remove(job_id: str) -> None:
    shutil.rmtree(job_dir(job_id), ignore_errors=True)


def job_too_large(limit: int) -> ApiError:
    message = f"The job's upload exceeds {limit} bytes (EINVOICE_MAX_JOB_BYTES); nothing was stored."
    return ApiError(413, "PAYLOAD_TOO_LARGE", message, [ErrorDetail("JOB_TOO_LARGE", message, field="file")])


def disk_full(exc: OSError) -> ApiError | None:
    """503 (retry later) for a jobs directory that is full (ENOSPC, EDQUOT): the server's want of room, not the
    client's fault (it was a 500); nothing is kept. None for another OSError. The spec's retry-later 503 code with
    ours, JOBS_DISK_FULL, in errors[0] (as pipeline.errors.refined answers)."""
    if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
        return None
    message = ("The jobs directory (EINVOICE_JOBS_DIR) is full: the upload cannot be stored now; nothing was stored "
               "or charged. Retry later, or send fewer documents at a time.")
    return ApiError(503, "RATE_LIMIT_CONFIGURATION_UNAVAILABLE", message, [ErrorDetail("JOBS_DISK_FULL", message)],
                    headers={"Retry-After": "60"})


def quota_exceeded(quota: int, held: int) -> ApiError:
    message = (f"The key's jobs would keep more than {quota} bytes of documents (EINVOICE_JOB_DISK_QUOTA; those in "
               f"progress keep {held}); nothing was stored. Wait for them to end, or cancel one.")
    return ApiError(413, "JOB_DISK_QUOTA_EXCEEDED", message,
                    [ErrorDetail("JOB_DISK_QUOTA_EXCEEDED", message, field="file")])


def expansion_too_large(ratio: float, uploaded: int) -> ApiError:
    message = (f"The job's documents would take more than {ratio:g} times its {uploaded}-byte upload "
               "(EINVOICE_MAX_JOB_EXPANSION: a zip bomb?); nothing was stored.")
    return ApiError(413, "ARCHIVE_EXPANSION_TOO_LARGE", message,
                    [ErrorDetail("ARCHIVE_EXPANSION_TOO_LARGE", message, field="file")])


def out_of_time() -> ApiError:
    """503 TIME_BUDGET for an upload whose unpacking outlasted the request's time budget: the same upload would run
    out again (no Retry-After), so the answer says how to send it in smaller pieces."""
    message = ("The request's time budget (EINVOICE_REQUEST_BUDGET) ran out while the upload was unpacked; nothing "
               "was stored or charged. Send its documents as several jobs (fewer ZIP members or e-mail messages "
               "each, a mailbox split).")
    return ApiError(503, "TIME_BUDGET", message, [ErrorDetail("TIME_BUDGET", message, field="file")])


class Intake:
    """Collects a job's documents in order: `names`, `refused` (index -> error line) for those that cannot be
    worked on (too large, nested archive, unsafe name, ...) as batch validation refuses them, `notices` (index ->
    notice line: a message without an invoice), `emails` (index -> the message a document came from, JSON) and
    `signatures` (index -> what the signature of the signed file it came out of says, JSON)."""

    def __init__(self, job_id: str, held: int = 0):
        """`held`: bytes of documents the key's other active jobs keep (its disk quota counts them)."""
        settings = get_settings()
        self.dir = job_dir(job_id)
        self.dir.mkdir(parents=True, exist_ok=False)
        self.left = settings.max_job_bytes
        self.max_job_bytes = settings.max_job_bytes
        self.held, self.quota, self.expansion = held, settings.job_disk_quota, settings.max_job_expansion
        self.limits = Limits(settings.max_job_files, settings.max_upload_bytes,
                             ARCHIVE_TOTAL_FACTOR * settings.max_job_bytes, JOB_FILES)
        self.unpacker = Unpacker(self.limits)
        self.names: list[str] = []
        self.refused: dict[int, str] = {}
        self.notices: dict[int, str] = {}
        self.emails: dict[int, str] = {}
        self.signatures: dict[int, str] = {}
        self.spans: dict[int, tuple[int, int]] = {}  # index -> (position, size) in the documents file
        self._spools = 0
        self._parts = 0  # parts that are not what an operating system keeps beside documents
        self._waiting: tuple[str, Path] | None = None  # the last part spooled, not unpacked yet (its name waits)
        self._apple: dict[str, Path] = {}  # Apple Mail's messages and stored attachments, read at `finish`
        self.files = 0  # files unpacked (a part, a fetched message)
        self._out = open(self.dir / DOCUMENTS, "wb")
        self._pos = 0

    def add_stream(self, name: str | None, stream) -> None:
        """One `file` part: spooled to disk under the job's bound. The part before it, now known to be one of
        several, is taken as an archive or a document; this one when the next comes, or at `finish`."""
        self._spools += 1
        spool = self.dir / f"upload-{self._spools}.part"
        with open(spool, "wb") as out:
            while True:
                chunk = stream.read(min(_CHUNK, self.left + 1))
                if not chunk:
                    break
                self.left -= len(chunk)
                if self.left < 0:
                    raise job_too_large(self.max_job_bytes)
                out.write(chunk)
        name = name or f"file-{self._spools}"
        with open(spool, "rb") as f:
            if os_metadata(name, f.read(OS_METADATA_HEAD)):  # (a .DS_Store beside a ZIP: still the only file)
                spool.unlink()
                return
        self._parts += 1
        self._unpack_waiting(several=True)
        if _apple_part(name, spool, self.limits.max_message):
            self._apple.pop(name, None)  # (a name sent twice: the last part of it, as a folder would hold it)
            self._apple[name] = spool
        else:
            self._waiting = (name, spool)

    def finish(self) -> None:
        """All parts are in: the last one's documents, named under its file name only when there were several;
        then Apple Mail's messages with their stored attachments, and the stored files no message took."""
        self._unpack_waiting(several=self._parts > 1)
        stored = apple.Stored(self._apple, self._read_spool)
        try:
            for name, spool in self._apple.items():
                if name not in stored.claimed:
                    self.add_file(name, spool, name if self._parts > 1 else "", stored.of(name))
            for name in stored.unread():  # (claimed by a message that could not be read: a file of its own)
                self.add_file(name, self._apple[name], name if self._parts > 1 else "")
        finally:
            for spool in self._apple.values():
                spool.unlink(missing_ok=True)

    def _read_spool(self, name: str) -> Member:
        """A stored attachment's spooled part, bounded as one document."""
        spool = self._apple[name]
        if spool.stat().st_size > self.limits.max_member:
            return Member(name, error=member_too_large(self.limits.max_member))
        return Member(name, spool.read_bytes())

    def _unpack_waiting(self, several: bool) -> None:
        if self._waiting is None:
            return
        name, spool = self._waiting
        self._waiting = None
        try:
            self.add_file(name, spool, name if several else "")
        finally:
            spool.unlink(missing_ok=True)

    def add_file(self, name: str, path: Path, prefix: str = "", stored: apple.Apart | None = None) -> None:
        """One file's documents (a ZIP's or a message's named under `prefix`, `stored`: the attachments Apple Mail
        stored apart from the message it is); one that is no readable ZIP is an entry (`Unpacker.one_of_several`)."""
        self.files += 1
        try:
            for member in self.unpacker.one_of_several(name, path, prefix, stored):
                self.add(member)
        except budget.Exhausted:  # (`add`'s check, or the unpacker's inside a long mailbox)
            raise out_of_time() from None

    def check(self) -> None:
        """Raise what refuses the job as a whole: its one file is no readable ZIP (400 INVALID_ARCHIVE), as batch
        validation refuses it."""
        if self.files == 1 and self.unpacker.unreadable is not None and len(self.names) == 1:
            raise self.unpacker.unreadable

    def add_bytes(self, name: str, data: bytes) -> None:
        """A file already in memory (a message the inbox fetched), bounded as one part."""
        if len(data) > self.left:
            raise job_too_large(self.max_job_bytes)
        self.left -= len(data)
        self.files += 1
        for member in self.unpacker.file(name, data):
            self.add(member)

    def add(self, member: Member) -> None:
        budget.check()  # each document, within a request (a job's upload); none outside one (the inbox)
        index = len(self.names)
        if index >= self.limits.max_files:
            raise too_many_files(index + 1, self.limits.max_files, JOB_FILES)
        self.names.append(member.name)
        if member.email is not None:
            self.emails[index] = json.dumps(member.email, ensure_ascii=False)
        if member.signature is not None:
            self.signatures[index] = json.dumps(member.signature, ensure_ascii=False)
        if member.error is not None:
            line = json.dumps(entry(member, None), ensure_ascii=False)
            (self.notices if member.error[0] in NOTICES else self.refused)[index] = line
        else:
            stored, uploaded = self._pos + len(member.data), self.max_job_bytes - self.left
            if stored > self.expansion * uploaded:  # checked before each write: the disk never holds more
                raise expansion_too_large(self.expansion, uploaded)
            if self.held + stored > self.quota:
                raise quota_exceeded(self.quota, self.held)
            self._out.write(member.data)
            self.spans[index] = (self._pos, len(member.data))
            self._pos += len(member.data)

    def close(self) -> None:
        """All documents are in: flush them to disk before the job's rows say they are there."""
        if not self._out.closed:
            self._out.flush()
            os.fsync(self._out.fileno())
            self._out.close()

    def discard(self) -> None:
        self._out.close()
        shutil.rmtree(self.dir, ignore_errors=True)


_STORED_MARK = re.compile(rb"^X-Apple-Content-Length:", re.IGNORECASE | re.MULTILINE)


def _apple_part(name: str, spool: Path, limit: int) -> bool:
    """Whether a part waits to the end (`Intake.finish`): a file of Apple Mail's stored attachments, or an Apple
    Mail message with a part stored apart from it (a .partial.emlx, or an .emlx of Mail 2 beside its .emlxpart)."""
    if apple.stored(name) is not None:
        return True
    if apple.message(name) is None:
        return False
    with open(spool, "rb") as f:
        return _STORED_MARK.search(f.read(limit)) is not None  # (a message past it is not read at all)
