"""The cheaper request path (issue 15): the journal of owed charges is looked at once a second at most, and
still never lets an expired reservation go while it holds an owed charge; minted request ids stay unique,
across forked workers too."""
from __future__ import annotations

import os
import re
import time
import types

from pipeline.service import apikeys, platform, requestid
from pipeline.service.platform import Backends, PlatformConfig
from pipeline.storage.pending import PendingCharges
from pipeline.storage.ratelimit import MemoryLimiter
from pipeline.storage.sqlite import SqliteStore


class CountingJournal(PendingCharges):
    """The real journal, counting how often a sweep looks at it."""

    def __init__(self, path):
        super().__init__(path)
        self.looks = 0

    def has_any(self) -> bool:
        self.looks += 1
        return super().has_any()


def test_the_sweep_looks_at_the_journal_once_a_second_and_settles_owed_charges_before_giving_any_back(
        tmp_path, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(platform, "time", types.SimpleNamespace(monotonic=lambda: clock[0], time=time.time))
    store = SqliteStore(tmp_path / "platform.db")
    key_id, _, secret_hash = apikeys.mint("test")
    store.create_key(key_id, "k", "test", secret_hash, 5, None)
    journal = CountingJournal(tmp_path / "pending-charges.jsonl")
    backends = Backends(store, MemoryLimiter(), PlatformConfig(), journal)

    owed = store.reserve(key_id, 1, "owed-1", "/v1/invoice/x", 600)    # delivered, its charge journaled
    journal.add(owed, key_id, 1, "owed-1", 600)
    store.reserve(key_id, 1, "crashed", "/v1/invoice/x", -1)           # a crashed worker's, expired
    backends.sweep(store)
    assert journal.looks and journal.path.stat().st_size == 0
    charges = [e.request_id for e in store.usage(key_id) if e.kind == "charge"]
    assert charges == ["owed-1"] and store.pending(key_id) == 0        # settled first, then the expired one back
    assert store.get_key(key_id).balance == 4
    looks = journal.looks

    for step in (0.2, 0.5, 0.9):   # within the second: no stat per request
        clock[0] = 1000.0 + step
        backends.sweep(store)
    assert journal.looks == looks

    owed = store.reserve(key_id, 1, "owed-2", "/v1/invoice/x", 600)
    journal.add(owed, key_id, 1, "owed-2", 600)
    store.reserve(key_id, 1, "crashed-2", "/v1/invoice/x", -1)
    clock[0] = 1001.1   # looked at, but the last replay was 1.1 s ago (replays every 2 s): nothing given back
    backends.sweep(store)
    assert journal.looks > looks and store.pending(key_id) == 2
    clock[0] = 1002.2
    backends.sweep(store)
    assert [e.request_id for e in store.usage(key_id) if e.kind == "charge"] == ["owed-1", "owed-2"]
    assert store.pending(key_id) == 1   # expired reservations go back every 30 s
    clock[0] = 1030.5
    backends.sweep(store)
    assert store.pending(key_id) == 0 and store.get_key(key_id).balance == 3


def test_minted_request_ids_are_32_hex_characters_unique_in_a_process_and_across_a_fork():
    ids = [requestid.new_id() for _ in range(10_000)]
    assert len(set(ids)) == len(ids) and all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    assert requestid.accept_or_new("client-id.1") == "client-id.1"
    assert re.fullmatch(r"[0-9a-f]{32}", requestid.accept_or_new("bad id"))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:   # a worker forked from a parent that has minted already
        os.write(write, requestid.new_id().encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 64).decode()
    os.close(read), os.close(write)
    assert child not in ids and child[:20] != ids[0][:20]
