"""A mailbox as a source of jobs (`pipeline inbox`): each new message of an IMAP mailbox becomes one job of its
invoices (the message unpacked as an uploaded .eml is: pipeline.unpack), and once the job has ended the message
is moved to the folder its verdict names.

    IMAP (TLS, imaplib) -> new UIDs -> per message: row in inbox_messages (taking) -> job (files.Intake +
                        jobs.submit) -> row open -> the job ends (any worker) -> verdict -> UID MOVE -> row done

A message is submitted once and moved once wherever the process stops. Its row is written before its job and says
the UID is taken; its job id is derived from (mailbox, UIDVALIDITY, UID) and kept in the row, so a row whose job
does not exist yet (the process stopped between the two) gets that job on the next round, and a message whose job
exists is never submitted again. A row that is not done is a message still to be moved (after a restart: its job
is waited for and it is moved then). Moving a UID that has already left the mailbox changes nothing, so a crash
between the move and the row's end moves nothing twice. A move is two steps on the server (MOVE copies the message
to the folder, then removes it here; without MOVE, our COPY and EXPUNGE), and a server that stops between them (a
restart: dovecot's session killed mid-MOVE) leaves it in both places: the row says `moving` before the move, and
such a row's message, still here, is only removed here where the folder holds its copy already (`Inbox.file`;
before, it was moved again: two copies in the folder).

A new UIDVALIDITY (the mailbox rebuilt, restored or moved to another server under the same name) numbers every
message anew, so each is looked at again: a message whose key (`message_key`: its Message-ID, else a digest of
it) a row under an earlier UIDVALIDITY holds is that row's message, and gets no second job. Its new row carries
the earlier job: kept before, it stays (done); taken but not yet moved, it is moved where its job's verdict says
(the earlier row is finished then); filed before and back in the mailbox (a restored backup), it goes to the
folder it went to. An earlier open row whose message is not in the mailbox any more is finished once every message
there has been looked at. Rows written before the key existed get it from their job's documents (the Message-ID
each was named by).
A server that numbers new mail from below the UIDs taken already, under the same UIDVALIDITY (a maildir restored
from a backup with its UID list), would have those messages passed over. It is seen before new UIDs are taken:
UIDNEXT not above the highest UID taken, or (newer mail has passed it) the newest message at or below that UID
is not the one its row took (`reused`: new mail is numbered upwards, so a UID given again is above every message
of the backup). It is taken as a new UIDVALIDITY is: the rows go on under the next epoch of it
(pipeline.storage.inbox.EPOCH), so each message there is looked at again and one taken before is known by its key.
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
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from pipeline import jobs
from pipeline.jobs import files
from pipeline.settings import get_settings
from pipeline.storage.inbox import EPOCH
from pipeline.storage.jobs import Job
from pipeline.unpack import Member
from pipeline.unpack.members import Limits

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
        self.validity = self.uidvalidity  # what its rows and jobs are kept under (`Inbox.run_once`: an epoch of it)
        uidnext = self.imap.untagged_responses.get("UIDNEXT")
        self.uidnext = int(uidnext[-1]) if uidnext else None  # (optional before IMAP4rev2)
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

    def highest_upto(self, last: int) -> int | None:
        """The highest UID in the mailbox that is not above `last` (None: none is). One number with ESEARCH
        (RFC 4731), else every such UID is listed: a mailbox whose messages stay grows."""
        if "ESEARCH" not in self.capabilities:
            uids = [int(x) for x in (self._uid("SEARCH", f"UID 1:{last}")[0] or b"").split()]
            return max((u for u in uids if u <= last), default=None)
        self.imap.untagged_responses.pop("ESEARCH", None)
        self._uid("SEARCH", "RETURN", "(MAX)", f"UID 1:{last}")
        said = b" ".join(x for x in self.imap.untagged_responses.pop("ESEARCH", []) if isinstance(x, bytes))
        found = re.search(rb"\bMAX (\d+)", said)
        return int(found.group(1)) if found else None

    def look(self, uid: int) -> tuple[int, bytes | None] | None:
        """(size in bytes, the raw Message-ID header value or None) of the message, or None when the UID has left
        the mailbox. One command: the key a new UIDVALIDITY needs costs no round trip."""
        for item in self._uid("FETCH", str(uid), "(RFC822.SIZE BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])"):
            if not isinstance(item, tuple):  # None for a UID that is gone (imaplib), b")" closing an answer
                continue
            found = re.search(rb"RFC822\.SIZE (\d+)", item[0])
            if found and re.search(rb"\bUID %d\b" % uid, item[0]):  # not another message's unasked-for FETCH
                header = re.sub(rb"\r?\n[ \t]+", b" ", item[1] or b"")  # unfolded
                value = re.search(rb"(?im)^message-id:[ \t]*(.*?)[ \t]*\r?$", header)
                return int(found.group(1)), (value.group(1) if value and value.group(1) else None)
        return None

    def header(self, uid: int) -> bytes | None:
        """The message's header block (BODY.PEEK[HEADER]), or None when the UID has left the mailbox."""
        for item in self._uid("FETCH", str(uid), "(BODY.PEEK[HEADER])"):
            if isinstance(item, tuple):
                return item[1]
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
        self.expunge(uid)

    def expunge(self, uid: int) -> None:
        """Remove the message from this mailbox (\\Deleted, then expunged: this UID alone where UIDPLUS allows)."""
        self._uid("STORE", str(uid), "+FLAGS.SILENT", r"(\Deleted)")
        if "UIDPLUS" in self.capabilities:
            self._uid("EXPUNGE", str(uid))
        else:
            self.imap.expunge()

    def sized(self, size: int) -> list[int]:
        """The UIDs of the selected mailbox's messages of exactly `size` bytes (RFC822.SIZE), in UID order."""
        return sorted(int(x) for x in (self._uid("SEARCH", f"LARGER {size - 1} SMALLER {size + 1}")[0] or b"").split())

    @contextmanager
    def visiting(self, folder: str):
        """`folder` selected read-only for the commands inside, then this mailbox again. Its UIDVALIDITY changed
        meanwhile: InboxError (the next session looks at it anew)."""
        typ, data = self.imap.select(_quote(folder), readonly=True)
        if typ != "OK":
            raise InboxError(f"{self.address.key}: the folder {folder!r} cannot be opened: {_said(data)}")
        try:
            yield
        finally:
            typ, data = self.imap.select(_quote(self.address.mailbox))  # (imaplib drops the untagged answers)
            if typ != "OK" or int(self.imap.untagged_responses.get("UIDVALIDITY", [b"0"])[-1]) != self.uidvalidity:
                raise InboxError(f"{self.address.key}: the mailbox changed while {folder!r} was looked at")

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


KEY_MAX = 500  # characters of a Message-ID kept as it is (a longer one, or one not printable ASCII: its digest)


def message_key(message_id: bytes | str | None, data: bytes | None = None) -> str | None:
    """How a message is known across a new UIDVALIDITY: its Message-ID (the `<...>` part, white space taken out:
    folding differs between servers), or "sha256:" and the digest of the raw message `data` for a message without
    one; None when neither is at hand. A hostile Message-ID (huge, control characters, 8-bit) is kept as its
    digest: an index entry and a database text have limits."""
    if message_id:
        raw = message_id.encode("utf-8", "surrogateescape") if isinstance(message_id, str) else message_id
        raw = b"".join(raw.split())
        found = re.search(rb"<[^<>]+>", raw)
        raw = found.group() if found else raw
        if raw and len(raw) <= KEY_MAX and all(33 <= c < 127 for c in raw):
            return raw.decode("ascii")
        if raw:
            return "id-sha256:" + hashlib.sha256(raw).hexdigest()
    return None if data is None else "sha256:" + hashlib.sha256(data).hexdigest()


def job_id_of(address: Address, uidvalidity: int, uid: int) -> str:
    return "job_" + hashlib.sha256(f"{address.key}\n{uidvalidity}\n{uid}".encode()).hexdigest()[:32]


def verdict(job: Job) -> str:
    """valid: every invoice valid; invalid: an invoice invalid or not readable; other: no invoice, invoices read but
    not validated (a parse run without --validate: nothing says they are valid), or the job failed or was
    cancelled."""
    if job.state != "done":
        return "other"
    if job.invalid or job.errors:
        return "invalid"
    return "valid" if job.valid and not job.unchecked else "other"


def outcome(job: Job) -> str:
    """The log's counts of a message's job, as the job's summary has them: `invalid` without the indeterminate (a
    PDF whose rules are not installed was logged "1 invalid" where its report says not judged), messages without
    an invoice apart from the invoices."""
    return (f"{job.valid} valid, {job.invalid - job.indeterminate} invalid, {job.indeterminate} indeterminate, "
            f"{job.unchecked} read only, {job.errors} not validated, {job.no_invoice} without an invoice")


class Inbox:
    """Takes a mailbox's new messages as jobs and moves each once its job has ended."""

    def __init__(self, store, key_id: str, operation: str, options: dict, cost: int,
                 folders: dict[str, str | None]):
        self.store, self.key_id, self.operation, self.options, self.cost = store, key_id, operation, options, cost
        self.folders = folders  # verdict -> folder (None: the message stays)
        self.store_factory = lambda: store  # one object: the embedded pool starts once per process
        self.swept: set[tuple[str, int]] = set()  # (mailbox, UIDVALIDITY) whose earlier rows are settled

    def prepare(self, box: Mailbox) -> None:
        for folder in {f for f in self.folders.values() if f}:
            box.ensure_folder(folder)

    def run_once(self, box: Mailbox) -> int:
        """Submit every new message, then move each message taken (now or before a restart) once its job has
        ended; returns how many messages were moved."""
        key = box.address.key
        if jobs.embedded(self.store):  # the jobs of a process that stopped are this one's to finish too
            from pipeline.jobs import local  # lazy: the embedded pool, only on the SQLite store

            local.ensure_started(self.store_factory)
        validity = self.store.inbox_epoch(key, box.uidvalidity)
        last = self.store.inbox_last_uid(key, validity)
        box.validity = validity  # (the rows `reused` compares with)
        if last and box.uidnext is not None and box.uidnext <= last:
            log.warning("%s: the server numbers new messages from UID %s, but UID %s was taken already under "
                        "UIDVALIDITY %s (a mailbox restored without a new UIDVALIDITY?): its messages are looked at "
                        "again and matched to those taken before by Message-ID", key, box.uidnext, last,
                        box.uidvalidity)
            validity, last = validity + EPOCH, 0
        elif last and (uid := self.reused(box, last)):
            log.warning("%s: UID %s holds another message than the one taken under it (UIDVALIDITY %s; a mailbox "
                        "restored without a new UIDVALIDITY, and newer mail numbered past it?): its messages are "
                        "looked at again and matched to those taken before by Message-ID", key, uid, box.uidvalidity)
            validity, last = validity + EPOCH, 0
        box.validity = validity
        renumbered = self.store.inbox_renumbered(key, validity)
        if renumbered and (key, validity) not in self.swept:  # once a process: only this process writes the rows
            if not last and validity == box.uidvalidity:
                log.warning("%s: UIDVALIDITY %s is new (the mailbox was rebuilt, restored or moved): its messages "
                            "are matched to those taken before by Message-ID", key, validity)
            recalled = self.store.inbox_recall_keys(key, validity, message_key)  # rows from before the key existed
            if recalled:
                log.info("%s: %s messages taken before got their Message-ID from their jobs", key, recalled)
        complete = True
        for uid in box.uids_after(last):
            if not self.take(box, uid, renumbered):
                complete = False
                break  # the key's balance: the rest waits for the next round
        if renumbered and complete and (key, validity) not in self.swept:
            # every message here has been looked at: an earlier one not found has left the mailbox
            for old_validity, old_uid, job_id in self.store.inbox_stale(key, validity):
                self.store.inbox_done(key, old_validity, old_uid, None)
                log.info("uid %s of UIDVALIDITY %s (job %s) is not in the mailbox any more: nothing to move",
                         old_uid, old_validity, job_id or "none")
            self.swept.add((key, validity))
        moved = 0
        for uid, job_id, filed, state in self.store.inbox_open(key, validity):
            if job_id == GONE:  # nothing to check, nothing to move
                self.store.inbox_done(key, validity, uid, None)
                continue
            if state == "taking" and not self.resume(box, uid, job_id):
                continue
            job = self.wait(job_id)
            folder = filed or (self.folders.get(verdict(job)) if job is not None else self.folders.get("other"))
            if folder:
                self.file(box, uid, folder, again=state == "moving")
            self.store.inbox_done(key, validity, uid, folder)
            moved += 1
            log.info("uid %s -> %s (job %s: %s)", uid, folder or "kept", job_id,
                     "gone" if job is None else outcome(job))
        return moved

    def file(self, box: Mailbox, uid: int, folder: str, again: bool) -> None:
        """Move the message to `folder`, once: its row says `moving` first. `again`: a move that began before and
        was not seen to end: the message left already (nothing to do), or the server copied it to `folder` and
        stopped before removing it here (it is removed here only), or nothing happened (it is moved)."""
        key, validity = box.address.key, box.validity
        if not again:
            self.store.inbox_moving(key, validity, uid, folder)
        else:
            seen = box.look(uid)
            if seen is None:
                return
            row = self.store.inbox_row(key, validity, uid)
            mark = row[3] if row is not None else None
            if mark and self.copied(box, folder, seen[0], mark):
                log.info("uid %s is in %s already (its move was cut short): removed here only", uid, folder)
                box.expunge(uid)
                return
        box.move(uid, folder)

    def copied(self, box: Mailbox, folder: str, size: int, mark: str) -> bool:
        """Whether `folder` holds a message of `size` bytes whose key is `mark` (`read` on each of that size)."""
        with box.visiting(folder):
            return any((seen := self.read(box, uid, whole=mark.startswith("sha256:"))) is not None
                       and seen[1] == mark for uid in reversed(box.sized(size)))  # (the newest first)

    def read(self, box: Mailbox, uid: int, whole: bool) -> tuple[bytes | None, str | None] | None:
        """(the message as received, None when not asked for (`whole` false and its Message-ID names it) or too
        large to be read; its key), or None when the UID has left the mailbox. A message without a Message-ID
        is read for its key's digest; one too large to be read, too: of its size and header block."""
        seen = box.look(uid)
        if seen is None:
            return None
        size, message_id = seen
        if size > Limits(0, get_settings().max_upload_bytes, 0).max_message:
            return None, message_key(message_id) or message_key(None, b"%d\n" % size + (box.header(uid) or b""))
        if message_id is not None and not whole:
            return None, message_key(message_id)
        data = box.fetch(uid)
        if data is None:  # expunged between the two commands
            return None
        return data, message_key(message_id, data)

    def reused(self, box: Mailbox, last: int) -> int | None:
        """The UID, at or below `last` (the highest taken), the server gave to another message than the one taken
        under it, or None. Only the newest message there is looked at: a UID given again is above every message
        kept from before."""
        uid = box.highest_upto(last)
        if uid is None:
            return None
        row = self.store.inbox_row(box.address.key, box.validity, uid)
        if row is None:  # every UID seen up to `last` has its row
            return uid
        job_id, state, folder, mark = row
        if job_id == GONE or (state == "done" and folder):  # it had left the mailbox
            return uid
        if not mark:  # a row that names no message: nothing to compare
            return None
        read = self.read(box, uid, whole=mark.startswith("sha256:"))
        return uid if read is not None and read[1] != mark else None

    def take(self, box: Mailbox, uid: int, renumbered: bool) -> bool:
        """Take one new message: its row, then its job, or carrying the job an earlier UIDVALIDITY's row holds for
        the same message (`renumbered`: such rows exist). False when the key's balance does not cover its job (it
        waits as a new message: its row goes again). A message that left the mailbox before it was read gets a
        row without a job (GONE: no MESSAGE_GONE error job, which would be "moved" to the invalid folder in the
        log and the database while the message is somewhere else)."""
        key, validity = box.address.key, box.validity
        job_id = job_id_of(box.address, validity, uid)
        made = self.store.get_job(job_id) is not None  # (by a version that wrote the row after the job)
        seen = self.read(box, uid, whole=not made)
        if seen is None:
            self.store.inbox_taken(key, validity, uid, job_id if made else GONE, None)
            if not made:
                log.info("uid %s left the mailbox before it was read (another client moved or deleted it)", uid)
            return True
        data, mark = seen
        if renumbered and not made and mark:
            known = self.store.inbox_known(key, validity, mark)
            if known is not None:
                earlier, state, folder = known
                if state == "done" and folder:
                    state = "open"  # filed before and back: it goes there again
                self.store.inbox_carried(key, validity, uid, earlier, mark, folder, state)
                log.info("uid %s is %s, taken before the UIDVALIDITY changed or its UIDs were given again (job "
                         "%s): not submitted again", uid, mark, earlier)
                return True
        if made:
            self.store.inbox_taken(key, validity, uid, job_id, mark)
            return True
        self.store.inbox_taken(key, validity, uid, job_id, mark, state="taking")
        if self.submit(job_id, uid, data) is None:
            self.store.inbox_untaken(key, validity, uid)  # no job: the message waits as a new one
            return False
        self.store.inbox_submitted(key, validity, uid)
        return True

    def resume(self, box: Mailbox, uid: int, job_id: str) -> bool:
        """A row written before its job (the process stopped between the two; or such a row's message under a new
        UIDVALIDITY): its job is made now of the message at `uid`, unless it exists. False: nothing to wait for
        (the message left before its job was made; or the key's balance is short: it waits)."""
        key, validity = box.address.key, box.validity
        if self.store.get_job(job_id) is None:
            seen = self.read(box, uid, whole=True)
            if seen is None:
                self.store.inbox_done(key, validity, uid, None)
                log.info("uid %s left the mailbox before its job was made: nothing to check or move", uid)
                return False
            if self.submit(job_id, uid, seen[0]) is None:
                return False
        self.store.inbox_submitted(key, validity, uid)
        return True

    def submit(self, job_id: str, uid: int, data: bytes | None) -> str | None:
        """The message's job, of `data` (None: too large to be read, an error entry); None when the balance is too
        low."""
        files.remove(job_id)  # what a process that stopped before the job's row was written left behind
        intake = files.Intake(job_id)
        try:
            name = f"{uid}.eml"
            if data is None:
                intake.add(Member(name, error=("MESSAGE_TOO_LARGE", f"The message is larger than "
                                               f"{intake.limits.max_message} bytes; it was not read.")))
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
