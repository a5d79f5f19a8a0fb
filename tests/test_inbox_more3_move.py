"""`pipeline inbox` when a message's move is cut short, against Debian's dovecot (tests/dovecot.py). A move is two
steps on the server: MOVE copies the message to the folder, then removes it from INBOX (dovecot commits the two
apart), and without MOVE our COPY and EXPUNGE are two commands. The server stopped between them (a restart: its
session's process killed, as test_inbox's restart test does) or the inbox between them left the message in both
places, its row open; the next session moved it again: two copies in the folder (test_inbox's restart test saw one
such message once). Now the row says `moving` before the move, and a move that began before is finished: the
message, still in INBOX, is only removed there where the folder holds its copy (known by its Message-ID, or the
digest of a message without one, among the folder's messages of its size), and moved where it does not."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO
from dovecot import PASSWORD
from test_inbox import FOLDERS
from pipeline.jobs.inbox import Address
from test_inbox_uidvalidity import (KEY_ID, Backend, append, check_filed, folder_contents, ident, mailbox,  # noqa: F401
                                    mid, run_inbox, server)

pytestmark = pytest.mark.slow

CUT_SCRIPT = r"""
import imaplib, logging, os, ssl, sys
from pipeline.flows.job_document import check_options
from pipeline.jobs.inbox import LOST, Address, Inbox, Mailbox, _quote
from pipeline.service.platform import PlatformConfig
from pipeline.service.resources.jobs import job_prices
from pipeline.storage import open_store
url, cafile, password, key_id, cut_at, how = sys.argv[1:7]
moves = 0


class Cut(Mailbox):
    def move(self, uid, folder):
        global moves
        moves += 1
        if moves != int(cut_at):
            return super().move(uid, folder)
        if how != "nothing":
            self._uid("COPY", str(uid), _quote(folder))  # the server's first step, as dovecot's MOVE takes it
        if how == "session":
            raise imaplib.IMAP4.abort("socket error: EOF")  # the server stopped before the second
        os._exit(9)  # the inbox stopped


logging.basicConfig(level=logging.INFO)
store = open_store()
operation, options = check_options({"operation": "validate"})
cost, options = job_prices(PlatformConfig.from_env(), operation, options)
inbox = Inbox(store, key_id, operation, options, cost, {"valid": "Valid", "invalid": "Invalid", "other": "Other"})
context = ssl.create_default_context(cafile=cafile)
box = Cut(Address.parse(url), password, context)
inbox.prepare(box)
try:
    inbox.run_once(box)
except LOST as exc:  # as `pipeline inbox` goes on: a new session
    logging.warning("connection lost: %s", exc)
    box.close()
    box = Cut(Address.parse(url), password, context)
    inbox.run_once(box)
print("rows", store._read("SELECT uid, state FROM inbox_messages ORDER BY uid"))
"""


@pytest.fixture
def backend(tmp_path):
    b = Backend("sqlite", tmp_path)  # (the inbox runs the jobs itself)
    yield b
    b.stop()


@pytest.mark.parametrize("cut_at, how", [(1, "session"), (2, "process"), (1, "nothing")],
                         ids=["copied-then-the-server-stopped", "copied-then-the-inbox-stopped",
                              "the-inbox-stopped-before-the-server-did-anything"])
def test_a_move_cut_short_is_finished_not_made_again(server, backend, cut_at, how):
    """Message 2 has no Message-ID (its copy is known by its digest), the others have one."""
    items = mailbox(5)
    assert mid(items[1]) is None and mid(items[0])
    append(server, items)
    r = subprocess.run([sys.executable, "-c", CUT_SCRIPT, server.url, str(server.cafile), PASSWORD, KEY_ID,
                        str(cut_at), how], cwd=REPO, env=backend.env, capture_output=True, text=True, timeout=900)
    (backend.tmp / "cut.log").write_text(r.stdout + r.stderr)
    if how == "session":  # the session broke, the process went on in a new one and finished the round
        assert r.returncode == 0, r.stderr[-3000:]
        assert "is in " in r.stderr and "its move was cut short): removed here only" in r.stderr, r.stderr[-3000:]
    else:
        assert r.returncode == 9, r.stderr[-3000:]
        validity = backend.rows()[0][0]
        assert backend.store.inbox_row(Address.parse(server.url).key, validity, cut_at)[1] == "moving"
        copies = folder_contents(server)[ident(items[cut_at - 1])]
        assert sorted(copies) == (["INBOX"] if how == "nothing" else sorted(["INBOX", copies[-1]]))
        text = run_inbox(server, backend, *FOLDERS.values(), name="again")
        assert ("removed here only" in text) == (how != "nothing"), text[-3000:]
    check_filed(server, backend, items)  # each message once, where its verdict says; INBOX empty; rows done

