"""The messages `pipeline inbox` has taken from a mailbox: one row per (mailbox, UIDVALIDITY, UID), written when
the message's job exists and ended once the message has been moved (or kept, without move folders).

A row is the inbox's memory across crashes and restarts: a message whose UID is above the highest row is new; a
row not yet `done` is a message whose job may still run and which has not been moved. Together with the job id
derived from the same three values (pipeline.jobs.inbox) a message is submitted once and moved once, wherever the
inbox process stopped.
"""
from __future__ import annotations

import time

INBOX_V4 = [
    "CREATE TABLE inbox_messages (mailbox TEXT NOT NULL, uidvalidity BIGINT NOT NULL, uid BIGINT NOT NULL, "
    "job_id TEXT NOT NULL, state TEXT NOT NULL, folder TEXT, created_at DOUBLE PRECISION NOT NULL, "
    "done_at DOUBLE PRECISION, PRIMARY KEY (mailbox, uidvalidity, uid))",
]


class InboxTables:
    """Mixin for SqlStore: the inbox's statements, with `?` placeholders like the rest of the store."""

    def inbox_last_uid(self, mailbox: str, uidvalidity: int) -> int:
        """The highest UID taken from this mailbox under this UIDVALIDITY (0: none)."""
        rows = self._read("SELECT MAX(uid) FROM inbox_messages WHERE mailbox = ? AND uidvalidity = ?",
                          (mailbox, int(uidvalidity)))
        return int(rows[0][0] or 0)

    def inbox_open(self, mailbox: str, uidvalidity: int) -> list[tuple[int, str]]:
        """(uid, job id) of the messages taken but not yet moved, in UID order."""
        return [(int(u), j) for u, j in self._read(
            "SELECT uid, job_id FROM inbox_messages WHERE mailbox = ? AND uidvalidity = ? AND state = 'open' "
            "ORDER BY uid", (mailbox, int(uidvalidity)))]

    def inbox_taken(self, mailbox: str, uidvalidity: int, uid: int, job_id: str) -> None:
        """Remember that the message is taken (its job exists); a second call changes nothing."""
        with self._tx() as cur:
            cur.execute(self._sql("INSERT INTO inbox_messages (mailbox, uidvalidity, uid, job_id, state, created_at) "
                                  "VALUES (?, ?, ?, ?, 'open', ?) ON CONFLICT DO NOTHING"),
                        (mailbox, int(uidvalidity), int(uid), job_id, time.time()))

    def inbox_done(self, mailbox: str, uidvalidity: int, uid: int, folder: str | None) -> None:
        """The message is where it belongs (`folder`; None: kept in the mailbox)."""
        with self._tx() as cur:
            cur.execute(self._sql("UPDATE inbox_messages SET state = 'done', folder = ?, done_at = ? "
                                  "WHERE mailbox = ? AND uidvalidity = ? AND uid = ?"),
                        (folder, time.time(), mailbox, int(uidvalidity), int(uid)))
