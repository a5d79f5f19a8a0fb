"""Request bodies as `pipeline serve`'s worker receives them, within two budgets per worker process.

A body is held in memory while it is small (at most SPOOL_ABOVE bytes) and the worker's memory budget for bodies
(EINVOICE_BODY_MEMORY) has room; otherwise it goes to an unnamed spool file (gone when closed, also when the process
dies), and every spooled byte counts toward the worker's disk budget (EINVOICE_BODY_SPOOL). A body past that budget
is refused (`Full`: the worker answers 503 + Retry-After). A job upload (POST /v1/jobs) is spooled from its first
byte into the jobs directory, where its documents will be written. Both budgets count the bytes received, not the
lengths announced, and are given back when the request has been answered or dropped: a flood of bodies grows
neither the worker's memory past its budget nor its disk past the other, and leaves nothing behind.
"""
from __future__ import annotations

import io
import tempfile
from pathlib import Path

SPOOL_ABOVE = 1 << 20  # bytes: a larger body goes to a spool file (its Content-Length says so at once)


class Full(Exception):
    """The worker's spool budget cannot take more."""


class Budgets:
    """What one worker's bodies hold: bytes in memory and bytes in spool files, against their limits."""

    def __init__(self, memory: int, disk: int, spool_dir: Path):
        self.memory, self.disk, self.spool_dir = memory, disk, spool_dir
        self.in_memory = self.on_disk = 0


class Body:
    """One request's body while it arrives and until its request is answered."""

    __slots__ = ("budgets", "data", "file", "size", "directory", "held_memory", "held_disk")

    def __init__(self, budgets: Budgets, announced: int | None = None, directory: Path | None = None):
        """`announced`: the Content-Length, if any; `directory`: spool there from the first byte."""
        self.budgets, self.directory = budgets, directory
        self.data = bytearray()
        self.file = None
        self.size = self.held_memory = self.held_disk = 0
        if directory is not None or (announced or 0) > SPOOL_ABOVE:
            self._spool()

    def add(self, part: bytes) -> None:
        n, budgets = len(part), self.budgets
        if self.file is None:
            if self.size + n <= SPOOL_ABOVE and budgets.in_memory + n <= budgets.memory:
                self.data += part
                self.size += n
                self.held_memory += n
                budgets.in_memory += n
                return
            self._spool()
        if budgets.on_disk + n > budgets.disk:
            raise Full()
        self.file.write(part)
        self.size += n
        self.held_disk += n
        budgets.on_disk += n

    def _spool(self) -> None:
        """From now on the body goes to a file; what was in memory moves there."""
        budgets = self.budgets
        directory = self.directory or budgets.spool_dir
        directory.mkdir(parents=True, exist_ok=True)
        self.file = tempfile.TemporaryFile(dir=directory, prefix="body-")
        if self.data:
            held, data = self.held_memory, self.data
            self.data, self.held_memory = bytearray(), 0
            budgets.in_memory -= held
            self.size = 0
            self.add(data)

    @property
    def spooled(self) -> bool:
        return self.file is not None

    def stream(self):
        """The whole body to read, from its start (the app's wsgi.input)."""
        if self.file is None:
            stream, self.data = io.BytesIO(self.data), bytearray()  # (its budget is held until `release`)
            return stream
        self.file.flush()
        self.file.seek(0)
        return self.file

    def release(self) -> None:
        """Give the budgets back and drop the bytes (idempotent)."""
        budgets = self.budgets
        budgets.in_memory -= self.held_memory
        budgets.on_disk -= self.held_disk
        self.held_memory = self.held_disk = 0
        self.data = bytearray()
        if self.file is not None:
            self.file.close()
            self.file = None
