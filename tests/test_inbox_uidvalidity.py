"""`pipeline inbox` across a new UIDVALIDITY (issue 36): dovecot's INBOX renumbered with its messages kept (its UID
list and indexes removed with the server stopped, as a rebuilt index, a restore or a migration does; tests/dovecot.py
`renumber`). Before, every message of the mailbox was new again: a second job and a second charge for each message
kept in INBOX and each one taken but not yet moved, and the earlier UIDVALIDITY's open rows were never finished.
Now a message taken before is known by its Message-ID (or the digest of a message without one) and gets no second
job; the earlier open rows are finished by moving their messages under the new UIDs. A database of the previous
schema (v5), whose rows have no key, migrates and finds the messages by the Message-ID their jobs were named by.
On the SQLite store (the inbox runs its jobs) and on PostgreSQL (a `pipeline worker` runs them)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid

import pytest

from conftest import REPO
from dovecot import PASSWORD, Dovecot
from mailbuild import message
from pipeline.flows.job_document import routes
from pipeline.jobs.inbox import message_key, verdict
from pipeline.storage.postgres import PostgresStore
from pipeline.storage.sqlite import SqliteStore
from test_inbox import FOLDERS, documents
from test_platform_helpers import pg_url

pytestmark = pytest.mark.slow
KEY_ID, CREDITS = "inboxkey0001", 1000
COSTS = ",".join(f"/v1/invoice/{spec}/validate=1" for spec in routes("auto"))  # one credit an invoice


class Backend:
    """The service's database for the inbox (and, on PostgreSQL, a `pipeline worker` on it)."""

    def __init__(self, kind: str, tmp, schema_version: int | None = None):
        self.kind, self.tmp, self.worker = kind, tmp, None
        self.env = {**os.environ, "EINVOICE_DATA_DIR": str(tmp / "data"), "EINVOICE_JOBS_DIR": str(tmp / "jobs"),
                    "EINVOICE_IMAP_PASSWORD": PASSWORD, "EINVOICE_JOB_LEASE": "3", "EINVOICE_JOB_RECORD_EVERY": "0.2",
                    "EINVOICE_CREDIT_COSTS": COSTS, "EINVOICE_REDIS_URL": "", "EINVOICE_DATABASE_URL": ""}
        cls = PostgresStore if kind == "postgres" else SqliteStore
        if schema_version is not None:  # the previous version's database
            cls = type(cls.__name__ + "Old", (cls,), {"migrations": cls.migrations[:schema_version]})
        if kind == "postgres":
            self.env["EINVOICE_DATABASE_URL"] = pg_url("h9_inbox_" + uuid.uuid4().hex[:10])
            self.store = cls(self.env["EINVOICE_DATABASE_URL"])
        else:
            self.store = cls(tmp / "data" / "platform.sqlite3")
        self.store.create_key(KEY_ID, "inbox", "test", "not-a-secret", CREDITS, None)

    def start_worker(self) -> None:
        if self.kind == "postgres":
            self.worker = subprocess.Popen([sys.executable, "-m", "pipeline", "worker"], cwd=REPO, env=self.env,
                                           stdout=open(self.tmp / "worker.log", "ab"), stderr=subprocess.STDOUT)

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.terminate()
            self.worker.wait(60)
        if self.kind == "postgres":
            self.store.drop_schema()
        self.store.close()

    def rows(self) -> list[tuple]:
        return self.store._read("SELECT uidvalidity, uid, job_id, state, folder, message_key FROM inbox_messages "
                                "ORDER BY uidvalidity, uid")

    def jobs(self) -> int:
        return self.store._read("SELECT COUNT(*) FROM jobs")[0][0]

    def balance(self) -> int:
        return self.store.get_key(KEY_ID).balance

    def settled(self, timeout: float = 600) -> None:
        """Wait until every job has ended (their charges are final then)."""
        deadline = time.monotonic() + timeout
        while self.store._read("SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'running')")[0][0]:
            assert time.monotonic() < deadline, "jobs did not end"
            time.sleep(0.3)


@pytest.fixture
def server():
    s = Dovecot()
    yield s
    s.stop()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request, tmp_path):
    b = Backend(request.param, tmp_path)
    b.start_worker()
    yield b
    b.stop()


def run_inbox(server, backend, *folders: str, name: str = "inbox") -> str:
    moves = [a for verdict_, folder in zip(("valid", "invalid", "other"), folders) for a in
             (f"--move-{verdict_}", folder)]
    r = subprocess.run([sys.executable, "-m", "pipeline", "inbox", server.url, "--cafile", str(server.cafile),
                        "--key-id", KEY_ID, "--once", *moves], cwd=REPO, env=backend.env, capture_output=True,
                       text=True, timeout=900)
    (backend.tmp / f"{name}.log").write_text(r.stdout + r.stderr)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    return r.stderr


def mailbox(n: int, start: int = 0) -> list[bytes]:
    """`n` messages: an invoice each (valid and invalid ones), the second without a Message-ID (known by its
    digest then), the last without an invoice."""
    xml, _ = documents()
    out = []
    for i in range(start, start + n):
        m = message(i, [] if i == start + n - 1 else [xml[i * 3 % len(xml)]])
        if i == start + 1:
            del m["Message-ID"]
        out.append(m.as_bytes())
    return out


def mid(data: bytes) -> str | None:
    found = re.search(rb"(?im)^message-id: *(<[^>]+>)", data)
    return found and found.group(1).decode()


def append(server, messages: list[bytes]) -> int:
    box = server.client()
    for data in messages:
        assert box.append("INBOX", None, None, data)[0] == "OK"
    box.select("INBOX", readonly=True)
    validity = int(box.untagged_responses["UIDVALIDITY"][-1])
    box.logout()
    return validity


def inbox_size(server) -> int:
    box = server.client()
    typ, data = box.select("INBOX", readonly=True)
    box.logout()
    return int(data[0])


def with_message_id(data: bytes, message_id: bytes) -> bytes:
    return re.sub(rb"(?im)^message-id: *<[^>]+>", b"Message-ID: " + message_id, data, count=1)


def test_messages_kept_in_the_inbox_are_not_taken_again(server, backend):
    xml, _ = documents()
    items = mailbox(6)
    items.append(with_message_id(message(7, [xml[9]]).as_bytes(), mid(items[0]).encode()))  # a Message-ID twice
    items.append(with_message_id(message(8, [xml[10]]).as_bytes(), b"<" + b"x" * 3000 + b"@huge.example>"))
    old = append(server, items)
    run_inbox(server, backend, name="first")  # no move folders: every message stays in INBOX
    backend.settled()
    before = backend.rows()
    assert len(before) == 8 and {r[3] for r in before} == {"done"} and {r[4] for r in before} == {None}
    assert backend.jobs() == 8 and backend.balance() == CREDITS - 7  # seven invoices, one message without
    keys = [r[5] for r in before]
    assert keys[0] == keys[6] and len(set(keys)) == 7 and all(k.startswith("<") for k in keys[2:6])
    assert keys[1].startswith("sha256:")  # the message without a Message-ID: its digest
    assert keys[7].startswith("id-sha256:")  # a Message-ID too long for an index entry: its digest

    new = server.renumber()
    assert new != old and inbox_size(server) == 8
    append(server, [message(50, [xml[5]]).as_bytes()])  # an invoice arrives after the rebuild
    text = run_inbox(server, backend, name="second")
    backend.settled()
    assert text.count("taken before the UIDVALIDITY changed") == 8, text[-3000:]
    assert f"UIDVALIDITY {new} is new" in text
    assert backend.jobs() == 9, "a message kept in INBOX was submitted again"
    assert backend.balance() == CREDITS - 8, "a message kept in INBOX was charged again"
    rows = backend.rows()
    after = [r for r in rows if r[0] == new]
    assert len(after) == 9 and {r[3] for r in after} == {"done"} and {r[4] for r in after} == {None}
    assert sorted(r[2] for r in after if r[5] in keys) == sorted(r[2] for r in before)  # the same jobs, each once
    assert [r for r in rows if r[0] == old] == before  # the earlier rows untouched (all done)
    assert inbox_size(server) == 9

    run_inbox(server, backend, name="third")  # and again: nothing new
    assert backend.jobs() == 9 and len(backend.rows()) == 17
    newer = server.renumber()  # and a second rebuild: each job is carried once more, none made
    text = run_inbox(server, backend, name="fourth")
    assert text.count("taken before the UIDVALIDITY changed") == 9, text[-3000:]
    assert backend.jobs() == 9 and backend.balance() == CREDITS - 8
    assert sorted(r[2] for r in backend.rows() if r[0] == newer) == sorted(r[2] for r in after)


def wait_rows(backend, proc, log, count, validity, timeout=600):
    deadline = time.monotonic() + timeout
    while len([r for r in backend.rows() if r[0] == validity and r[3] == "done"]) < count:
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.5)


def test_a_watching_inbox_across_a_rebuild(server, backend):
    # the realistic case: the inbox runs for weeks; the mail admin rebuilds the mailbox (the server stops and
    # starts, the session breaks, the next one finds a new UIDVALIDITY)
    xml, _ = documents()
    old = append(server, [message(n, [xml[n]]).as_bytes() for n in range(3)])
    log = backend.tmp / "watch.log"
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", "inbox", server.url, "--cafile", str(server.cafile),
                             "--key-id", KEY_ID, "--watch", "--idle", "600", "--poll", "600"], cwd=REPO,
                            env=backend.env, stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    try:
        wait_rows(backend, proc, log, 3, old)
        new = server.renumber()
        wait_rows(backend, proc, log, 3, new)  # the three kept messages, known again
        append(server, [message(9, [xml[9]]).as_bytes()])  # news the IDLE of the new session hears
        wait_rows(backend, proc, log, 4, new)
        backend.settled()
        assert backend.jobs() == 4 and backend.balance() == CREDITS - 4, log.read_text()[-3000:]
        assert "connection lost" in log.read_text() and "Traceback" not in log.read_text()
    finally:
        proc.terminate()
        proc.wait(60)


def test_uids_reused_under_the_same_uidvalidity_are_said_and_each_message_taken_once(server, tmp_path):
    # a maildir restored from a backup with its UID list: the server numbers new mail from below the UIDs taken
    # already, under the same UIDVALIDITY (IMAP forbids it); such a message was passed over without a word, then
    # with a warning only (its invoice lost until the admin gave the mailbox a new UIDVALIDITY). Now the mailbox is
    # looked at again as after a new UIDVALIDITY: the new message is taken, those taken before are not
    backend = Backend("sqlite", tmp_path)
    try:
        xml, _ = documents()
        append(server, [message(n, [xml[n]]).as_bytes() for n in range(2)])
        run_inbox(server, backend, name="first")
        server.halt()
        maildir = server.dir / "home" / "Maildir"
        subprocess.run(["cp", "-a", str(maildir), str(tmp_path / "backup")], check=True)
        server.start()
        append(server, [message(n, [xml[n]]).as_bytes() for n in range(2, 4)])
        run_inbox(server, backend, name="second")
        server.halt()
        subprocess.run(["rm", "-rf", str(maildir)], check=True)
        subprocess.run(["cp", "-a", str(tmp_path / "backup"), str(maildir)], check=True)
        server.start()
        fourth = message(4, [xml[4]]).as_bytes()
        validity = append(server, [fourth])  # given UID 3, taken already
        text = run_inbox(server, backend, name="third")
        assert "the server numbers new messages from UID 4, but UID 4 was taken already" in text, text[-3000:]
        assert text.count("taken before the UIDVALIDITY changed") == 2, text[-3000:]  # the two restored ones
        assert backend.jobs() == 5, text[-3000:]  # message 4 is taken, once
        epoch = [r for r in backend.rows() if r[0] != validity]
        assert {r[0] for r in epoch} == {validity + (1 << 32)} and [r[1] for r in epoch] == [1, 2, 3]
        assert [r[5] for r in epoch][2] == mid(fourth)
        text = run_inbox(server, backend, name="again")  # nothing new: the epoch is kept, nothing said twice
        assert "was taken already" not in text and backend.jobs() == 5 and len(backend.rows()) == 7, text[-3000:]
        append(server, [message(5, [xml[5]]).as_bytes()])  # later mail: new under the epoch
        run_inbox(server, backend, name="later")
        assert backend.jobs() == 6 and len(backend.rows()) == 8
        server.renumber()  # and a real new UIDVALIDITY after it: each known, none taken again
        text = run_inbox(server, backend, name="fourth")
        assert text.count("taken before the UIDVALIDITY changed") == 4 and backend.jobs() == 6, text[-3000:]
        backend.settled()
        assert backend.balance() == CREDITS - 6
    finally:
        backend.stop()


CRASH_SCRIPT = r"""
import logging, os, ssl, sys, time
from pipeline.flows.job_document import check_options
from pipeline.jobs.inbox import Address, Inbox, Mailbox
from pipeline.service.platform import PlatformConfig
from pipeline.service.resources.jobs import job_prices
from pipeline.settings import get_settings
from pipeline.storage.postgres import PostgresStore
from pipeline.storage.sqlite import SqliteStore
url, cafile, password, key_id, crash_at, version, point = sys.argv[1:8]
settings = get_settings()
base = PostgresStore if settings.database_url else SqliteStore
where = settings.database_url or settings.data_dir / "platform.sqlite3"


def taken(self, mailbox, uidvalidity, uid, job_id, message_key, state="open"):
    # the previous version's row: no message key (its schema has no column for one), written once the job existed
    with self._tx() as cur:
        cur.execute(self._sql("INSERT INTO inbox_messages (mailbox, uidvalidity, uid, job_id, state, created_at) "
                              "VALUES (?, ?, ?, ?, 'open', ?) ON CONFLICT DO NOTHING"),
                    (mailbox, uidvalidity, uid, job_id, time.time()))


def unnumbered(self, cur, job_id, first, indexes):
    pass  # the previous version numbered no results (its schema has no column for it)


def unsigned(self, job_id, first, last):
    # the previous version's documents: no signature (its schema has no column for one)
    return [(int(i), n, int(p), int(z), e, None) for i, n, p, z, e in self._read(
        "SELECT idx, name, pos, size, email FROM job_documents WHERE job_id = ? AND idx >= ? AND idx < ? "
        "AND outcome IS NULL ORDER BY idx", (job_id, int(first), int(last)))]


def uncounted(self, sql):
    # the previous version's job statements: no count of unchecked documents (its schema has no column for it)
    return base._sql(self, sql.replace("indeterminate, unchecked)", "indeterminate)").replace("NULL, 0, 0)", "NULL, 0)")
                     .replace("indeterminate, unchecked FROM", "indeterminate, 0 FROM")
                     .replace("unchecked = unchecked + ?, ", "cost = cost + 0 * ?, "))


def read_uncounted(self, sql, params=()):
    return base._read(self, uncounted(self, sql), params)


store = type("Old", (base,), {"migrations": base.migrations[:int(version)], "inbox_taken": taken,
                              "_number": unnumbered, "open_documents": unsigned, "_sql": uncounted,
                              "_read": read_uncounted})(where) \
    if version != "new" else base(where)


class Crashing(Inbox):
    calls = 0

    def die(self, here):
        if point == here:
            Crashing.calls += 1
            if Crashing.calls > int(crash_at):
                os._exit(9)

    def wait(self, job_id):
        self.die("wait")  # every message taken (its job submitted), the rest not moved
        return super().wait(job_id)

    def submit(self, job_id, uid, data):
        self.die("before-job")  # the message's row written, its job not
        made = super().submit(job_id, uid, data)
        self.die("after-job")  # its job made, its row not told so
        return made


logging.basicConfig(level=logging.INFO)
operation, options = check_options({"operation": "validate"})
cost, options = job_prices(PlatformConfig.from_env(), operation, options)
inbox = Crashing(store, key_id, operation, options, cost, {"valid": "Valid", "invalid": "Invalid", "other": "Other"})
box = Mailbox(Address.parse(url), password, ssl.create_default_context(cafile=cafile))
inbox.prepare(box)
inbox.run_once(box)
"""


def crash_after(server, backend, moved: int, version: str = "new", point: str = "wait") -> None:
    """Take every message and move the first `moved`, then die (the inbox killed between the two); or (`point`
    before-job / after-job) die while taking the message after the first `moved`."""
    r = subprocess.run([sys.executable, "-c", CRASH_SCRIPT, server.url, str(server.cafile), PASSWORD, KEY_ID,
                        str(moved), version, point], cwd=REPO, env=backend.env, capture_output=True, text=True,
                       timeout=900)
    (backend.tmp / "crash.log").write_text(r.stdout + r.stderr)
    assert r.returncode == 9, r.stderr[-3000:]


def ident(data: bytes) -> str:
    """A message's Message-ID, else its subject (the test's messages have one each)."""
    return mid(data) or re.search(rb"(?im)^subject: *(.*?)\r?$", data).group(1).decode()


def folder_contents(server) -> dict[str, list[str]]:
    """ident -> the folders it is in (INBOX and the three), once for each copy."""
    box, seen = server.client(), {}
    for folder in ("INBOX", *FOLDERS.values()):
        if box.select(folder, readonly=True)[0] != "OK":
            continue
        for item in box.uid("FETCH", "1:*", "(BODY.PEEK[HEADER.FIELDS (MESSAGE-ID SUBJECT)])")[1]:
            if isinstance(item, tuple):
                seen.setdefault(ident(item[1]), []).append(folder)
    box.logout()
    return seen


def check_filed(server, backend, items: list[bytes], gone: set[str] = frozenset(), twice: set[str] = frozenset()):
    """Every message in the folder its job's verdict names (once; `twice`: restored and filed again), INBOX empty,
    every row of every UIDVALIDITY done."""
    rows = backend.rows()
    assert {r[3] for r in rows} == {"done"}, [r for r in rows if r[3] != "done"]
    jobs = {r[5]: r[2] for r in rows if r[2]}  # message key -> its job (the latest row's)
    where = folder_contents(server)
    assert sorted(where) == sorted({ident(m) for m in items} - gone), sorted(where)
    for data in items:
        if ident(data) in gone:
            continue
        key = message_key(mid(data), re.sub(rb"\r?\n", b"\r\n", data))  # (APPEND sends CRLF lines)
        expected = FOLDERS[verdict(backend.store.get_job(jobs[key]))]
        assert where[ident(data)] == [expected] * (2 if ident(data) in twice else 1), (ident(data), where)
    assert inbox_size(server) == 0, "a message was left behind in INBOX"


def test_messages_taken_but_not_moved_when_the_uidvalidity_changes(server, backend):
    items = mailbox(8)
    old = append(server, items)
    crash_after(server, backend, moved=3)  # three moved; five taken, their jobs submitted, not moved
    rows = backend.rows()
    assert [r[3] for r in rows] == ["done"] * 3 + ["open"] * 5
    jobs, charged = backend.jobs(), CREDITS - backend.balance()
    assert jobs == 8 and charged == 7  # credits are held when a job is submitted
    box = server.client()
    box.select("INBOX")
    gone = mid(items[6])  # another client deletes one of the open ones
    typ, found = box.uid("SEARCH", None, "HEADER", "Message-ID", gone)
    box.uid("STORE", found[0].decode(), "+FLAGS", r"(\Deleted)")
    box.expunge()
    box.logout()
    restored = items[0]  # a restored backup brings back a message already filed
    append(server, [restored])
    if backend.kind == "postgres":  # (on SQLite the jobs the crash left go on in the next inbox)
        backend.settled()

    new = server.renumber()
    assert new != old
    text = run_inbox(server, backend, *FOLDERS.values(), name="after")
    backend.settled()
    assert backend.jobs() == jobs, "a message taken before the UIDVALIDITY changed was submitted again"
    assert CREDITS - backend.balance() <= charged, "a message taken before was charged again"
    assert text.count("taken before the UIDVALIDITY changed") == 5, text[-3000:]  # four open ones and the restored
    assert f"UIDVALIDITY {old}" in text and "not in the mailbox any more" in text  # the deleted one's row ended
    check_filed(server, backend, items, gone={gone}, twice={mid(restored)})
    old_rows = [r for r in backend.rows() if r[0] == old]
    assert [r[2] for r in old_rows] == [r[2] for r in rows]  # the same jobs, now all ended
    assert len([r for r in backend.rows() if r[0] == new]) == 5  # four carried, the restored one


def test_a_database_of_the_previous_schema_migrates_and_keeps_its_word(server, tmp_path):
    # schema v5 (before the message keys): its rows name no message; the messages were taken, none moved yet
    for kind in ("sqlite", "postgres"):
        where = tmp_path / kind
        where.mkdir()
        backend = Backend(kind, where, schema_version=5)
        try:
            assert backend.store.schema_version() == 5
            items = mailbox(5, start=10 if kind == "sqlite" else 20)
            old = append(server, items)
            crash_after(server, backend, moved=0, version="5")
            if kind == "postgres":  # the jobs run now (the worker, of the new version, migrates the schema)
                backend.start_worker()
                backend.settled()
            rows = backend.rows() if kind == "postgres" else backend.store._read(
                "SELECT uidvalidity, uid, job_id, state, folder FROM inbox_messages ORDER BY uid")
            assert [r[3] for r in rows] == ["open"] * 5
            assert kind == "postgres" or backend.store.schema_version() == 5
            assert kind == "sqlite" or {r[5] for r in rows} == {None}  # migrated, but no key for the old rows
            jobs, charged = backend.jobs(), CREDITS - backend.balance()
            assert jobs == 5 and charged == 4

            new = server.renumber()
            assert new != old
            text = run_inbox(server, backend, *FOLDERS.values(), name="new")
            backend.settled()
            current = SqliteStore(where / "data" / "platform.sqlite3") if kind == "sqlite" else backend.store
            assert current.schema_version() == len(SqliteStore.migrations) == 9
            assert "4 messages taken before got their Message-ID from their jobs" in text, text[-3000:]
            assert text.count("taken before the UIDVALIDITY changed") == 4, text[-3000:]
            # the one without a Message-ID: its job does not say which message it was (the previous version kept
            # no digest), so it is taken again, once; its earlier row ends as a message not found
            assert backend.jobs() == jobs + 1 and CREDITS - backend.balance() == charged + 1, text[-3000:]
            assert text.count("not in the mailbox any more") == 1, text[-3000:]
            check_filed(server, backend, items)
            recalled = [r[5] for r in backend.rows() if r[0] == old]
            assert sorted(recalled) == sorted(["", *filter(None, map(mid, items))])
        finally:
            backend.stop()
        box = server.client()  # the next backend starts on an empty mailbox
        for folder in FOLDERS.values():
            if int(box.select(folder)[1][0]):
                box.store("1:*", "+FLAGS", r"(\Deleted)")
                box.expunge()
        box.logout()


def test_message_key():
    assert message_key(b" <abc@x.example>") == message_key("<abc@x.example>") == "<abc@x.example>"
    assert message_key(b"<abc@\r\n x.example> (comment)") == "<abc@x.example>"  # folded, a comment beside it
    assert message_key(b"no-brackets@x") == "no-brackets@x"
    huge = message_key(b"<" + b"a" * 5000 + b"@x>")
    assert huge.startswith("id-sha256:") and len(huge) < 100  # an index entry has limits
    assert message_key("<r\u00e4ksm\u00f6rg\u00e5s@x>").startswith("id-sha256:")  # 8-bit: its digest
    assert message_key(b"<a\x00b@x>").startswith("id-sha256:")  # a NUL is no PostgreSQL text
    assert message_key(None, b"raw") == message_key(b"", b"raw") != message_key(None, b"raw2")
    assert message_key(None) is None
    assert json.dumps(message_key(b"<x@y>"))
