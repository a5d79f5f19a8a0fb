"""Outlook's winmail.dat (TNEF, application/ms-tnef): the files attached inside it.

Read by tnefparse (the maintained pure-Python TNEF reader on PyPI) in a child process with a time and memory
limit: the library trusts the counts a file declares (a property count of 2**32 loops that long, and each object
copies the rest of the file), so a hostile winmail.dat must cost a child its limits, never the worker its
request. The child is started with exec (never a fork of a worker that holds Saxon) and answers JSON.

    python -m pipeline.unpack.tnef < winmail.dat   ->   {"files": [{"name", "data" (base64)}]} | {"error"}
"""
from __future__ import annotations

import base64
import json
import subprocess
import sys

from pipeline import budget

SIGNATURE = b"\x78\x9f\x3e\x22"  # 0x223E9F78, little-endian
TIME_LIMIT = 5.0        # s of one winmail.dat (less when the request's budget has less left)
MEMORY_LIMIT = 1 << 30  # bytes of address space of the child beyond what it starts with


class Unreadable(Exception):
    """The winmail.dat could not be read (damaged, hostile, or over the child's limits)."""


def is_tnef(data: bytes) -> bool:
    return data[:4] == SIGNATURE


def attachments(data: bytes) -> list[tuple[str, bytes]]:
    """(file name, bytes) of each file attached in a TNEF stream, in order."""
    left = budget.remaining()
    timeout = TIME_LIMIT if left is None else max(0.5, min(TIME_LIMIT, left))
    try:
        done = subprocess.run([sys.executable, "-I", "-m", "pipeline.unpack.tnef"], input=data,
                              capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise Unreadable(f"reading it took longer than {timeout:g} s") from None
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        raise Unreadable(f"the reader stopped ({_last_line(done.stderr) or f'exit {done.returncode}'})") from None
    if "error" in answer:
        raise Unreadable(answer["error"])
    return [(f["name"], base64.b64decode(f["data"])) for f in answer["files"]]


def _last_line(stderr: bytes) -> str:
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[-1][:200] if lines else ""


def _child() -> None:
    import logging
    import resource

    from tnefparse.tnef import TNEF

    logging.disable(logging.CRITICAL)  # the library logs each property it skips; a hostile file has billions
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as statm:  # the address space the interpreter has mapped already
        cap = int(statm.read().split()[0]) * resource.getpagesize() + MEMORY_LIMIT
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    resource.setrlimit(resource.RLIMIT_CPU, (int(TIME_LIMIT) + 1, int(TIME_LIMIT) + 2))
    data = sys.stdin.buffer.read()
    try:
        files = []
        for n, a in enumerate(TNEF(data, do_checksum=False).attachments, start=1):
            name = a.long_filename() or a.name or f"attachment-{n}"
            if isinstance(name, bytes):
                name = name.decode("latin-1")
            files.append({"name": name.strip("\x00") or f"attachment-{n}",
                          "data": base64.b64encode(bytes(a.data)).decode("ascii")})
        answer = {"files": files}
    except (Exception, RecursionError, MemoryError) as exc:  # noqa: BLE001 - any failure is the file's
        answer = {"error": f"damaged TNEF ({type(exc).__name__}: {str(exc)[:200]})"}
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    _child()
