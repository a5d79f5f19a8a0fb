"""A mailbox as a source of jobs (`pipeline inbox`): each new message of an IMAP mailbox becomes one job of its
invoices (the message unpacked as an uploaded .eml is: pipeline.unpack), and once the job has ended the message
is moved to the folder its verdict names.

    IMAP (TLS, imaplib) -> new UIDs -> per message: job (files.Intake + jobs.submit) -> row in inbox_messages
                        -> the job ends (any worker) -> verdict -> UID MOVE -> row done

A message is submitted once and moved once wherever the process stops. Its job id is derived from (mailbox,
UIDVALIDITY, UID), so a message whose job exists is never submitted again; the row written after the job says the
UID is taken; a row that is not done is a message still to be moved (after a restart: its job is waited for and
it is moved then). Moving a UID that has already left the mailbox changes nothing, so a crash between the move
and the row's end moves nothing twice. A new UIDVALIDITY (the mailbox was rebuilt) starts the count anew.
One inbox process per mailbox: two would both submit a new message's job at the same moment.
"""
from __future__ import annotations

import hashlib
import imaplib
import logging
import re
import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from pipeline import jobs
from pipeline.jobs import files
from pipeline.storage.jobs import Job
from pipeline.unpack import Member

log = logging.getLogger("pipeline.inbox")

WAIT_POLL = 0.5  # s between looks at a job that is still running
GONE = ""  # the job id a message that left the mailbox before it was read is remembered with (it has no job)


class InboxError(Exception):
    """The mailbox cannot be used as given (URL, login, folder). `refused`: the server said no (a wrong password,
    a folder that does not exist), which trying again will not change; else the network or the server failed."""

    def __init__(self, message: str, refused: bool = False):
        super().__init__(message)
        self.refused = refused


# A session that broke under a command (the server restarted, the network went): imaplib raises its `abort` (an
# IMAP4.error, not an OSError) where the socket ended, OSError where it failed. A new session goes on.
LOST = (OSError, EOFError, imaplib.IMAP4.abort)


def _said(data) -> str:
    """The server's words in a NO or BAD answer, as text (imaplib hands them over as a list of bytes)."""
    items = data if isinstance(data, (list, tuple)) else [data]
    return " ".join(i.decode("utf-8", "replace") if isinstance(i, bytes) else str(i) for i in items if i)


@dataclass(frozen=True)
class Address:
    user: str
    host: str
    port: int
    mailbox: str

    @classmethod
    def parse(cls, url: str) -> "Address":
        """imaps://user@host[:port]/MAILBOX (default INBOX). A password in the URL is refused: it would show in
        the process list."""
        parts = urlsplit(url)
        if parts.scheme != "imaps":
            raise InboxError(f"{url}: only imaps:// (IMAP over TLS) is read")
        if parts.password is not None:
            raise InboxError("the password does not belong in the URL (anyone can read a command line): "
                             "set EINVOICE_IMAP_PASSWORD or EINVOICE_IMAP_PASSWORD_FILE")
        if not parts.username or not parts.hostname:
            raise InboxError(f"{url}: expected imaps://user@host[:port]/MAILBOX")
        return cls(unquote(parts.username), parts.hostname, parts.port or 993,
                   unquote(parts.path.lstrip("/")) or "INBOX")

    @property
    def key(self) -> str:
        """The mailbox's name in the database (no password, ever)."""
        return f"imaps://{self.user}@{self.host}:{self.port}/{self.mailbox}"


def _quote(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Mailbox:
    """One IMAP session on one mailbox, selected read-write."""

    def __init__(self, address: Address, password: str, context: ssl.SSLContext, timeout: float = 60):
        self.address, self.timeout = address, timeout
        try:
            self.imap = imaplib.IMAP4_SSL(address.host, address.port, ssl_context=context, timeout=timeout)
        except OSError as exc:
            raise InboxError(f"{address.key}: cannot connect: {exc}") from None
        try:
            self.imap.login(address.user, password)
        except LOST as exc:
            raise InboxError(f"{address.key}: the connection broke during the login: {exc}") from None
        except imaplib.IMAP4.error as exc:
            reason = _said(exc.args[0]) if exc.args else ""
            raise InboxError(f"{address.key}: the server refused the login of {address.user!r}: {reason} (check "
                             "EINVOICE_IMAP_PASSWORD / EINVOICE_IMAP_PASSWORD_FILE)", refused=True) from None
        try:
            typ, data = self.imap.select(_quote(address.mailbox))
        except LOST as exc:
            raise InboxError(f"{address.key}: the connection broke: {exc}") from None
        if typ != "OK":
            raise InboxError(f"{address.key}: the mailbox {address.mailbox!r} cannot be opened: {_said(data)}",
                             refused=True)
        self.uidvalidity = int(self.imap.untagged_responses.get("UIDVALIDITY", [b"0"])[-1])
        typ, data = self.imap.capability()  # after login: MOVE, UIDPLUS, IDLE are often offered only now
        self.capabilities = set((data[0] or b"").decode("ascii", "replace").upper().split()) if typ == "OK" \
            else set(self.imap.capabilities)

    def close(self) -> None:
        try:
            self.imap.logout()
        except (OSError, imaplib.IMAP4.error):
            pass

    def _uid(self, *args) -> list:
        typ, data = self.imap.uid(*args)
        if typ != "OK":
            raise InboxError(f"UID {args[0]}: {data}")
        return data

    def uids_after(self, last: int) -> list[int]:
        data = self._uid("SEARCH", f"UID {last + 1}:*")
        return sorted(u for u in (int(x) for x in (data[0] or b"").split()) if u > last)  # n:* has the last too

    def size(self, uid: int) -> int | None:
        """The message's size in bytes, or None when the UID has left the mailbox."""
        for item in self._uid("FETCH", str(uid), "(RFC822.SIZE)"):
            if item is None:  # imaplib's answer for a UID that is gone: a crash (TypeError) before
                continue
            found = re.search(rb"RFC822\.SIZE (\d+)", item if isinstance(item, bytes) else item[0])
            if found:
                return int(found.group(1))
        return None

    def fetch(self, uid: int) -> bytes | None:
        """The message as it was received (BODY.PEEK: its \\Seen flag is left as it is)."""
        for item in self._uid("FETCH", str(uid), "(BODY.PEEK[])"):
            if isinstance(item, tuple):
                return item[1]
        return None

    def ensure_folder(self, folder: str) -> None:
        self.imap.create(_quote(folder))  # NO when it exists: nothing to do either way

    def move(self, uid: int, folder: str) -> None:
        """Move the message (RFC 6851 MOVE, else COPY + \\Deleted + expunge of this UID). A UID no longer here is
        not an error: it was moved before."""
        if "MOVE" in self.capabilities:
            self._uid("MOVE", str(uid), _quote(folder))
            return
        self._uid("COPY", str(uid), _quote(folder))
        self._uid("STORE", str(uid), "+FLAGS.SILENT", r"(\Deleted)")
        if "UIDPLUS" in self.capabilities:
            self._uid("EXPUNGE", str(uid))
        else:
            self.imap.expunge()

    def wait(self, seconds: float) -> bool:
        """Wait for news (IDLE where offered; True when the server said something). Without IDLE: sleep.
        A quiet IDLE ends with a timeout that leaves the connection unusable: the caller opens a new one."""
        if "IDLE" not in self.capabilities:
            time.sleep(seconds)
            return True
        tag = self.imap._new_tag().decode()
        self.imap.send(f"{tag} IDLE\r\n".encode())
        if not self.imap.readline().startswith(b"+"):
            raise InboxError("IDLE was refused")
        self.imap.sock.settimeout(seconds)
        try:
            self.imap.readline()  # "* n EXISTS" or any other news
        except (TimeoutError, socket.timeout):
            return False
        self.imap.sock.settimeout(self.timeout)
        self.imap.send(b"DONE\r\n")
        while not self.imap.readline().startswith(tag.encode()):
            pass
        return True


def job_id_of(address: Address, uidvalidity: int, uid: int) -> str:
    return "job_" + hashlib.sha256(f"{address.key}\n{uidvalidity}\n{uid}".encode()).hexdigest()[:32]


def verdict(job: Job) -> str:
    """valid: every invoice valid; invalid: an invoice invalid or not readable; other: no invoice (or the job
    failed or was cancelled)."""
    if job.state != "done":
        return "other"
    if job.invalid or job.errors:
        return "invalid"
    return "valid" if job.valid else "other"


class Inbox:
    """Takes a mailbox's new messages as jobs and moves each once its job has ended."""

    def __init__(self, store, key_id: str, operation: str, options: dict, cost: int,
                 folders: dict[str, str | None]):
        self.store, self.key_id, self.operation, self.options, self.cost = store, key_id, operation, options, cost
        self.folders = folders  # verdict -> folder (None: the message stays)
        self.store_factory = lambda: store  # one object: the embedded pool starts once per process

    def prepare(self, box: Mailbox) -> None:
        for folder in {f for f in self.folders.values() if f}:
            box.ensure_folder(folder)

    def run_once(self, box: Mailbox) -> int:
        """Submit every new message, then move each message taken (now or before a restart) once its job has
        ended; returns how many messages were moved."""
        key, validity = box.address.key, box.uidvalidity
        if jobs.embedded(self.store):  # the jobs of a process that stopped are this one's to finish too
            from pipeline.jobs import local  # lazy: the embedded pool, only on the SQLite store

            local.ensure_started(self.store_factory)
        last = self.store.inbox_last_uid(key, validity)
        for uid in box.uids_after(last):
            job_id = self.submit(box, uid)
            if job_id is None:
                break  # the key's balance: the rest waits for the next round
            self.store.inbox_taken(key, validity, uid, job_id)
            if job_id == GONE:
                log.info("uid %s left the mailbox before it was read (another client moved or deleted it)", uid)
        moved = 0
        for uid, job_id in self.store.inbox_open(key, validity):
            if job_id == GONE:  # nothing to check, nothing to move
                self.store.inbox_done(key, validity, uid, None)
                continue
            job = self.wait(job_id)
            folder = self.folders.get(verdict(job)) if job is not None else self.folders.get("other")
            if folder:
                box.move(uid, folder)
            self.store.inbox_done(key, validity, uid, folder)
            moved += 1
            log.info("uid %s -> %s (job %s: %s)", uid, folder or "kept", job_id,
                     "gone" if job is None else f"{job.valid} valid, {job.invalid} invalid, {job.errors} errors, "
                     f"{job.done - job.valid - job.invalid - job.errors} without invoice")
        return moved

    def submit(self, box: Mailbox, uid: int) -> str | None:
        """The message's job (made now, or found: made before a crash); None when the balance is too low; GONE
        when the message left the mailbox before it was read (it was a MESSAGE_GONE job, an error, whose message
        went to the "invalid" folder in the log and the database while it was somewhere else)."""
        job_id = job_id_of(box.address, box.uidvalidity, uid)
        if self.store.get_job(job_id) is not None:
            return job_id
        files.remove(job_id)  # what a process that stopped before the job's row was written left behind
        size = box.size(uid)
        if size is None:
            return GONE
        intake = files.Intake(job_id)
        try:
            name = f"{uid}.eml"
            data = box.fetch(uid) if size <= intake.limits.max_message else None
            if size > intake.limits.max_message:
                intake.add(Member(name, error=("MESSAGE_TOO_LARGE", f"The message is larger than "
                                               f"{intake.limits.max_message} bytes; it was not read.")))
            elif data is None:  # expunged between the two commands
                intake.discard()
                return GONE
            else:
                intake.add_bytes(name, data)
        except BaseException:
            intake.discard()
            raise
        job = jobs.submit(self.store, job_id, self.key_id, self.operation, self.options, intake, self.cost)
        if job is None:
            log.warning("uid %s: the key's balance does not cover its job; it waits", uid)
            return None
        return job_id

    def wait(self, job_id: str) -> Job | None:
        while True:
            job = self.store.get_job(job_id)
            if job is None or not job.active:
                return job
            time.sleep(WAIT_POLL)
