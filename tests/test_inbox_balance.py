"""`pipeline inbox` on a key whose credits run out, against Debian's dovecot (tests/dovecot.py): a message whose job
the balance does not cover waits as a new message (its row, written before the job, goes again: no row is left
that every later round would try to submit anew), and is taken, once, after the key is topped up."""
from __future__ import annotations

import pytest

from mailbuild import message
from test_inbox import documents
from test_inbox_uidvalidity import KEY_ID, Backend, append, run_inbox, server  # noqa: F401 - server: a fixture

pytestmark = pytest.mark.slow


def test_messages_wait_for_credits_and_are_taken_once_after_a_top_up(server, tmp_path):
    backend = Backend("sqlite", tmp_path)
    try:
        backend.store.add_credits(KEY_ID, 2 - backend.balance())  # two invoices' worth
        xml, _ = documents()
        append(server, [message(n, [xml[n]]).as_bytes() for n in range(4)])
        text = run_inbox(server, backend, name="short")
        assert "the key's balance does not cover its job; it waits" in text, text[-3000:]
        assert backend.jobs() == 2 and [r[1] for r in backend.rows()] == [1, 2], text[-3000:]
        assert {r[3] for r in backend.rows()} == {"done"}  # no row left `taking`
        run_inbox(server, backend, name="still-short")
        assert backend.jobs() == 2 and len(backend.rows()) == 2
        backend.store.add_credits(KEY_ID, 10)
        run_inbox(server, backend, name="topped-up")
        backend.settled()
        assert backend.jobs() == 4 and [r[1] for r in backend.rows()] == [1, 2, 3, 4]
        assert {r[3] for r in backend.rows()} == {"done"} and backend.balance() == 8
    finally:
        backend.stop()
