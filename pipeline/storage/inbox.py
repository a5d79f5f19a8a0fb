"""The messages `pipeline inbox` has taken from a mailbox: one row per (mailbox, UIDVALIDITY, UID), written when
the message's job exists and ended once the message has been moved (or kept, without move folders).

A row is the inbox's memory across crashes and restarts: a message whose UID is above the highest row is new; a
row not yet `done` is a message whose job may still run and which has not been moved. The row is written before
its job (state `taking`, then `open` once the job exists), so that a message whose job a crash left without a row
cannot come back as a new one: under a new UIDVALIDITY its key finds the row, and the row's job is made then if it
never was. Together with the job id derived from the same three values (pipeline.jobs.inbox) a message is
submitted once and moved once, wherever the inbox process stopped. A row is `moving` (its folder set) from just
before the message's move to its end: a move cut short (the server stopped between copying the message and
removing it here, or the inbox between the two commands of a server without MOVE) is finished, not made again.

A new UIDVALIDITY numbers every message anew, so UIDs no longer say what was taken: each row also holds the
message's `message_key` (its Message-ID, else a digest of it, pipeline.jobs.inbox.message_key). A message under
the new UIDVALIDITY whose key an earlier row holds is that row's message: its row under the new UIDVALIDITY
carries the earlier row's job (no second job), and the earlier row, if still open, is finished by it.
"""
from __future__ import annotations

import json
import time

INBOX_V4 = [
    "CREATE TABLE inbox_messages (mailbox TEXT NOT NULL, uidvalidity BIGINT NOT NULL, uid BIGINT NOT NULL, "
    "job_id TEXT NOT NULL, state TEXT NOT NULL, folder TEXT, created_at DOUBLE PRECISION NOT NULL, "
    "done_at DOUBLE PRECISION, PRIMARY KEY (mailbox, uidvalidity, uid))",
]
# v6: the message's Message-ID or digest (NULL: a row from before v6, not yet looked up; "": not known), so that a
# new UIDVALIDITY takes no message twice
INBOX_V6 = [
    "ALTER TABLE inbox_messages ADD COLUMN message_key TEXT",
    "CREATE INDEX inbox_messages_by_key ON inbox_messages (mailbox, message_key)",
    "CREATE INDEX inbox_messages_by_job ON inbox_messages (mailbox, job_id)",  # is a job carried yet?
]


# A server that numbers new mail from below the UIDs taken already under the same UIDVALIDITY (a maildir restored
# from a backup with its UID list; IMAP forbids it) gives those UIDs to other messages. The inbox then keeps its
# rows under the next "epoch" of that UIDVALIDITY, `uidvalidity + n * EPOCH` (UIDVALIDITY is 32 bits), and takes
# the mailbox as renumbered: each message is looked at again and one taken before is known by its key.
EPOCH = 1 << 32

NOT_DONE = "('taking', 'open', 'moving')"  # the states of a row whose message is still to be moved (SQL)


class InboxTables:
    """Mixin for SqlStore: the inbox's statements, with `?` placeholders like the rest of the store."""

    def inbox_epoch(self, mailbox: str, uidvalidity: int) -> int:
        """The number this mailbox's rows under the server's `uidvalidity` are kept under: its latest epoch
        (`EPOCH`), or `uidvalidity` itself when it has none."""
        kept = self._read("SELECT DISTINCT uidvalidity FROM inbox_messages WHERE mailbox = ? AND uidvalidity >= ?",
                          (mailbox, int(uidvalidity)))  # (a few: one per change; no `%`, a placeholder to psycopg)
        return max((int(v) for v, in kept if (int(v) - int(uidvalidity)) % EPOCH == 0), default=int(uidvalidity))

    def inbox_last_uid(self, mailbox: str, uidvalidity: int) -> int:
        """The highest UID taken from this mailbox under this UIDVALIDITY (0: none)."""
        rows = self._read("SELECT MAX(uid) FROM inbox_messages WHERE mailbox = ? AND uidvalidity = ?",
                          (mailbox, int(uidvalidity)))
        return int(rows[0][0] or 0)

    def inbox_open(self, mailbox: str, uidvalidity: int) -> list[tuple[int, str, str | None, str]]:
        """(uid, job id, folder, state) of the messages taken but not yet moved, in UID order; `folder`: where the
        message goes whatever its job says (one filed before a new UIDVALIDITY brought it back, or one whose move
        began), else None; `state`: taking (its job may not exist yet), open or moving (its move began)."""
        return [(int(u), j, f, s) for u, j, f, s in self._read(
            "SELECT uid, job_id, folder, state FROM inbox_messages WHERE mailbox = ? AND uidvalidity = ? AND "
            f"state IN {NOT_DONE} ORDER BY uid", (mailbox, int(uidvalidity)))]

    def inbox_row(self, mailbox: str, uidvalidity: int, uid: int) -> tuple[str, str, str | None, str | None] | None:
        """(job id, state, folder, message key) of the row of this UID, or None."""
        rows = self._read("SELECT job_id, state, folder, message_key FROM inbox_messages WHERE mailbox = ? AND "
                          "uidvalidity = ? AND uid = ?", (mailbox, int(uidvalidity), int(uid)))
        return tuple(rows[0]) if rows else None

    def inbox_taken(self, mailbox: str, uidvalidity: int, uid: int, job_id: str, message_key: str | None,
                    state: str = "open") -> None:
        """Remember that the message is taken (`taking`: its job is made next; `open`: its job exists); a second
        call changes nothing."""
        with self._tx() as cur:
            cur.execute(self._sql("INSERT INTO inbox_messages (mailbox, uidvalidity, uid, job_id, state, created_at, "
                                  "message_key) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"),
                        (mailbox, int(uidvalidity), int(uid), job_id, state, time.time(), message_key))

    def inbox_untaken(self, mailbox: str, uidvalidity: int, uid: int) -> None:
        """Forget a `taking` row whose job was refused (the key's balance): the message is new again."""
        with self._tx() as cur:
            cur.execute(self._sql("DELETE FROM inbox_messages WHERE mailbox = ? AND uidvalidity = ? AND uid = ? "
                                  "AND state = 'taking'"), (mailbox, int(uidvalidity), int(uid)))

    def inbox_submitted(self, mailbox: str, uidvalidity: int, uid: int) -> None:
        """The job of a `taking` row exists now."""
        with self._tx() as cur:
            cur.execute(self._sql("UPDATE inbox_messages SET state = 'open' WHERE mailbox = ? AND uidvalidity = ? "
                                  "AND uid = ? AND state = 'taking'"), (mailbox, int(uidvalidity), int(uid)))

    def inbox_moving(self, mailbox: str, uidvalidity: int, uid: int, folder: str) -> None:
        """The message's move to `folder` begins: until `inbox_done`, it may be in both places."""
        with self._tx() as cur:
            cur.execute(self._sql("UPDATE inbox_messages SET state = 'moving', folder = ? WHERE mailbox = ? AND "
                                  "uidvalidity = ? AND uid = ? AND state = 'open'"),
                        (folder, mailbox, int(uidvalidity), int(uid)))

    def inbox_done(self, mailbox: str, uidvalidity: int, uid: int, folder: str | None) -> None:
        """The message is where it belongs (`folder`; None: kept in the mailbox)."""
        with self._tx() as cur:
            cur.execute(self._sql("UPDATE inbox_messages SET state = 'done', folder = ?, done_at = ? "
                                  "WHERE mailbox = ? AND uidvalidity = ? AND uid = ?"),
                        (folder, time.time(), mailbox, int(uidvalidity), int(uid)))

    # -- a new UIDVALIDITY --------------------------------------------------------------------------------------

    def inbox_renumbered(self, mailbox: str, uidvalidity: int) -> bool:
        """Rows of this mailbox under another UIDVALIDITY exist: its messages may have been taken before."""
        return bool(self._read("SELECT 1 FROM inbox_messages WHERE mailbox = ? AND uidvalidity <> ? LIMIT 1",
                               (mailbox, int(uidvalidity))))

    def inbox_recall_keys(self, mailbox: str, uidvalidity: int, key_of) -> int:
        """Give the rows of earlier UIDVALIDITYs written before v6 their message's key, from the Message-ID their
        job's documents were named by (`key_of(message id text)` -> key or None; "" when the job is gone or named
        none: not looked up again). Returns how many rows got one."""
        rows = self._read("SELECT uidvalidity, uid, job_id FROM inbox_messages WHERE mailbox = ? AND uidvalidity <> ? "
                          "AND message_key IS NULL", (mailbox, int(uidvalidity)))
        found = 0
        for validity, uid, job_id in rows:
            emails = self._read("SELECT email FROM job_documents WHERE job_id = ? AND email IS NOT NULL "
                                "ORDER BY idx LIMIT 1", (job_id,)) if job_id else []
            key = key_of(json.loads(emails[0][0]).get("messageId") or "") if emails else None
            found += bool(key)
            with self._tx() as cur:
                cur.execute(self._sql("UPDATE inbox_messages SET message_key = ? "
                                      "WHERE mailbox = ? AND uidvalidity = ? AND uid = ?"),
                            (key or "", mailbox, validity, uid))
        return found

    def inbox_known(self, mailbox: str, uidvalidity: int, message_key: str) -> tuple[str, str, str | None] | None:
        """(job id, state, folder) of the message a row under an earlier UIDVALIDITY holds with this key and whose
        job no row under this UIDVALIDITY carries yet (so two messages with one Message-ID are two); the state and
        folder are its job's latest row's (a job carried across two changes has two). None: a new message."""
        rows = self._read(
            "SELECT o.job_id FROM inbox_messages o WHERE o.mailbox = ? AND o.message_key = ? AND o.uidvalidity <> ? "
            "AND o.job_id <> '' AND NOT EXISTS (SELECT 1 FROM inbox_messages n WHERE n.mailbox = o.mailbox AND "
            "n.uidvalidity = ? AND n.job_id = o.job_id) ORDER BY o.created_at, o.uidvalidity, o.uid LIMIT 1",
            (mailbox, message_key, int(uidvalidity), int(uidvalidity)))
        if not rows:
            return None
        state, folder = self._read("SELECT state, folder FROM inbox_messages WHERE mailbox = ? AND job_id = ? "
                                   "ORDER BY created_at DESC LIMIT 1", (mailbox, rows[0][0]))[0]
        return rows[0][0], state, folder

    def inbox_carried(self, mailbox: str, uidvalidity: int, uid: int, job_id: str, message_key: str,
                      folder: str | None, state: str) -> None:
        """The message at `uid` is the one `job_id` was made (or was to be made) for under an earlier UIDVALIDITY:
        its row carries that job in `state` (done: nothing left to do, it stays; open: to be moved to `folder`, or
        where the job's verdict says when None; moving: to `folder`, its move there begun under the earlier
        UIDVALIDITY; taking: the job is made first if it does not exist), and the earlier open rows of that job are
        finished (their message is this one)."""
        now, done = time.time(), state == "done"
        with self._tx() as cur:
            cur.execute(self._sql("INSERT INTO inbox_messages (mailbox, uidvalidity, uid, job_id, state, folder, "
                                  "created_at, done_at, message_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                                  "ON CONFLICT DO NOTHING"),
                        (mailbox, int(uidvalidity), int(uid), job_id, state, folder, now,
                         now if done else None, message_key))
            cur.execute(self._sql("UPDATE inbox_messages SET state = 'done', done_at = ? WHERE mailbox = ? AND "
                                  f"uidvalidity <> ? AND job_id = ? AND state IN {NOT_DONE}"),
                        (now, mailbox, int(uidvalidity), job_id))

    def inbox_stale(self, mailbox: str, uidvalidity: int) -> list[tuple[int, int, str]]:
        """(uidvalidity, uid, job id) of the rows not done under earlier UIDVALIDITYs."""
        return [(int(v), int(u), j) for v, u, j in self._read(
            "SELECT uidvalidity, uid, job_id FROM inbox_messages WHERE mailbox = ? AND uidvalidity <> ? "
            f"AND state IN {NOT_DONE} ORDER BY uidvalidity, uid", (mailbox, int(uidvalidity)))]
