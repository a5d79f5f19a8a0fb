"""Charges owed to the ledger: delivered documents whose settlement could not reach the database.

A generation request reserves its credits before the work and settles (commits) the reservation before the
answer leaves. When the database cannot be reached for the settlement, even on a fresh connection, the
document still goes out (it was produced and the credits are already debited), and the reservation id is
written here, in a small append-only file of the node (`<data dir>/pending-charges.jsonl`, flock'd, fsync'd).
Every worker replays the file before it gives back expired reservations (`Backends.sweep`), so a reservation
owed as a charge is committed, never released, once the database answers again on this node.

Settling is idempotent by construction: only a commit or the expiry sweep deletes a reservation, so a
reservation that is gone before its TTL ran out was committed (a commit whose answer was lost).
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import time
from pathlib import Path

from pipeline.storage.store import StorageUnavailable

log = logging.getLogger("pipeline.storage.pending")


class PendingCharges:
    def __init__(self, path: Path):
        self.path = Path(path)

    def add(self, reservation_id: str, key_id: str | None, amount: int, request_id: str | None,
            ttl_seconds: float) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"reservation": reservation_id, "keyId": key_id, "amount": amount, "requestId": request_id,
                           "expiresAt": time.time() + ttl_seconds}) + "\n"
        with open(self.path, "a", encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def has_any(self) -> bool:
        try:
            return self.path.stat().st_size > 0
        except OSError:
            return False

    def replay(self, commit) -> list[dict]:
        """Commit every owed charge with `commit(reservation_id) -> bool`; returns the entries settled now.
        Stops at the first StorageUnavailable (the entries stay for the next sweep)."""
        if not self.has_any():
            return []
        settled = []
        with open(self.path, "r+", encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            entries = [json.loads(x) for x in f.read().splitlines() if x.strip()]
            left = list(entries)
            for entry in entries:
                try:
                    committed = commit(entry["reservation"])
                except StorageUnavailable:
                    break
                left.remove(entry)
                if committed or time.time() < entry["expiresAt"]:
                    settled.append(entry)  # charged now, or earlier by the commit whose answer was lost
                else:
                    log.error("owed charge lost: reservation %s (request %s) expired before the database "
                              "answered again", entry["reservation"], entry["requestId"])
            f.seek(0)
            f.truncate()
            f.write("".join(json.dumps(e) + "\n" for e in left))
            f.flush()
            os.fsync(f.fileno())
        return settled
