"""`pipeline inbox` when UIDs cannot be trusted, against Debian's dovecot (tests/dovecot.py):
- a maildir restored from a backup with its UID list gives UIDs taken already to new mail, under the same
  UIDVALIDITY; once newer mail had passed the highest UID taken (UIDNEXT above it again), the messages at the
  UIDs given again were passed over for good;
- the inbox killed between a message's row and its job, then a new UIDVALIDITY: the message came back as a new
  one (a second job, a second charge) when its job had been made and its row had not said so.
Now the newest message at or below the highest UID taken is compared with the one its row took, and a row is
written before its job (made on the next round when the process stopped between the two)."""
from __future__ import annotations

import shutil
import ssl
import subprocess

import pytest

from dovecot import PASSWORD
from mailbuild import message
from pipeline.jobs.inbox import Address, Mailbox
from test_inbox import FOLDERS, documents
from test_inbox_uidvalidity import (CREDITS, Backend, append, backend, check_filed, crash_after,  # noqa: F401
                                    mailbox, run_inbox, server)

pytestmark = pytest.mark.slow


def _inbox_files(maildir):
    """INBOX's own files: its messages, UID list and index (the folders, `.Valid` ..., are directories of their
    own; the list of folders is not INBOX's)."""
    return [p for p in maildir.iterdir() if p.name in ("cur", "new", "tmp") or
            (p.is_file() and p.name.startswith("dovecot") and not p.name.startswith("dovecot.list"))]


def _copy(paths, to) -> None:
    subprocess.run(["cp", "-a", *map(str, paths), str(to)], check=True)  # owners kept: dovecot's mail user


def snapshot(server, to) -> None:
    """A backup of INBOX, taken with the server stopped."""
    server.halt()
    to.mkdir()
    _copy(_inbox_files(server.dir / "home" / "Maildir"), to)
    server.start()


def restore(server, backup) -> None:
    """INBOX as the backup had it (its UID list too: the next UID goes back), the folders as they are."""
    server.halt()
    maildir = server.dir / "home" / "Maildir"
    for path in _inbox_files(maildir):
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    _copy(backup.iterdir(), maildir)
    server.start()


@pytest.mark.parametrize("moved", [False, True], ids=["kept", "moved"])
def test_uids_given_again_once_newer_mail_has_passed_them(server, tmp_path, moved):
    backend = Backend("sqlite", tmp_path)
    folders = list(FOLDERS.values()) if moved else []
    try:
        xml, _ = documents()
        items = [message(n, [xml[n]]).as_bytes() for n in range(4)]
        append(server, items[:2])
        run_inbox(server, backend, *folders, name="first")
        snapshot(server, tmp_path / "backup")
        append(server, items[2:])  # UIDs 3 and 4
        run_inbox(server, backend, *folders, name="second")
        restore(server, tmp_path / "backup")
        later = [message(n, [xml[n]]).as_bytes() for n in range(10, 13)]
        validity = append(server, later)  # UIDs 3, 4 (taken already) and 5: UIDNEXT is above 4 again
        text = run_inbox(server, backend, *folders, name="third")
        assert "UID 4 holds another message than the one taken under it" in text, text[-3000:]
        assert backend.jobs() == 7, text[-3000:]  # each of the three later messages taken, none twice
        assert text.count("taken before the UIDVALIDITY changed") == (0 if moved else 2), text[-3000:]
        text = run_inbox(server, backend, *folders, name="again")  # nothing new, nothing said again
        assert "holds another message" not in text and backend.jobs() == 7, text[-3000:]
        backend.settled()
        assert backend.balance() == CREDITS - 7
        epoch = [r for r in backend.rows() if r[0] == validity + (1 << 32)]
        assert [r[1] for r in epoch] == ([1, 2, 3, 4, 5] if not moved else [3, 4, 5])
        if moved:
            check_filed(server, backend, items + later)
    finally:
        backend.stop()


@pytest.mark.parametrize("point", ["before-job", "after-job"])
def test_killed_between_a_message_s_row_and_its_job_then_a_new_uidvalidity(server, backend, point):
    items = mailbox(6)  # five invoices (one message without a Message-ID), one message without
    old = append(server, items)
    crash_after(server, backend, moved=3, point=point)  # dies taking the fourth message
    rows = backend.rows()
    assert [r[3] for r in rows] == ["open"] * 3 + ["taking"]
    made = backend.jobs()
    assert made == (4 if point == "after-job" else 3)
    if backend.kind == "postgres":  # (on SQLite the jobs the crash left go on in the next inbox)
        backend.settled()

    assert server.renumber() != old
    text = run_inbox(server, backend, *FOLDERS.values(), name="after")
    backend.settled()
    assert text.count("taken before the UIDVALIDITY changed") == 4, text[-3000:]
    assert backend.jobs() == 6, "a message was read twice, or not at all"
    assert backend.balance() == CREDITS - 5, "a message was charged twice"
    check_filed(server, backend, items)


def test_the_highest_uid_up_to_a_number_with_and_without_esearch(server):
    xml, _ = documents()
    append(server, [message(n, [xml[n]]).as_bytes() for n in range(5)])
    context = ssl.create_default_context(cafile=server.cafile)
    box = Mailbox(Address.parse(server.url), PASSWORD, context)
    try:
        assert "ESEARCH" in box.capabilities  # dovecot offers it: the one-number answer
        box.ensure_folder("Elsewhere")
        box.move(4, "Elsewhere")
        answers = [box.highest_upto(n) for n in (1, 3, 4, 9)]
        box.capabilities.discard("ESEARCH")  # a server without it: the UIDs listed
        assert [box.highest_upto(n) for n in (1, 3, 4, 9)] == answers == [1, 3, 3, 5]
        box.move(1, "Elsewhere")
        assert box.highest_upto(1) is None
    finally:
        box.close()
