"""Outlook's winmail.dat (TNEF, application/ms-tnef): the files attached inside it.

Read by tnefparse (the maintained pure-Python TNEF reader on PyPI) in a child process with a time and memory
limit: the library trusts the counts a file declares (a property count of 2**32 loops that long, and each object
copies the rest of the file), so a hostile winmail.dat must cost a child its limits, never the worker its
request. The child is started with exec (never a fork of a worker that holds Saxon) and answers JSON.

    python -m pipeline.unpack.tnef < winmail.dat   ->   {"files": [{"name", "data" (base64)}], "damaged"?} | {"error"}

File names are decoded as Outlook wrote them: UTF-8 where the bytes are UTF-8, else the TNEF's declared code page
(attOemCodepage; a German Outlook writes 1252), else CP1252 (tnefparse decodes UTF-8 only, and raised on
'Rechnung_M\xe4rz.xml'). A stream cut short (its last attribute longer than what is left) is read up to the cut
and the attachment the cut falls in is reported damaged, not handed on truncated or left out unsaid.
"""
from __future__ import annotations

import base64
import json
import subprocess
import sys
from typing import NamedTuple

from pipeline import budget

SIGNATURE = b"\x78\x9f\x3e\x22"  # 0x223E9F78, little-endian
TIME_LIMIT = 5.0        # s of one winmail.dat (less when the request's budget has less left)
MEMORY_LIMIT = 1 << 30  # bytes of address space of the child beyond what it starts with


class Unreadable(Exception):
    """The winmail.dat could not be read (damaged, hostile, or over the child's limits)."""


ATTACH_REND_DATA = 0x9002  # the attribute that begins each attachment
_HEAD = 9                  # an attribute: level (1), id (4), length (4), then its data and a 2-byte checksum


class Contents(NamedTuple):
    """What a winmail.dat holds: `files` (name, bytes) in order, and `damaged` when it was cut short: (the damaged
    attachment's name, or None when the cut falls outside a named one; what happened)."""
    files: list[tuple[str, bytes]]
    damaged: tuple[str | None, str] | None = None


def is_tnef(data: bytes) -> bool:
    return data[:4] == SIGNATURE


def attachments(data: bytes) -> Contents:
    """The files attached in a TNEF stream, in order (`Contents`)."""
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
    damaged = answer.get("damaged")
    return Contents([(f["name"], base64.b64decode(f["data"])) for f in answer["files"]],
                    None if damaged is None else (damaged["name"], damaged["message"]))


def _last_line(stderr: bytes) -> str:
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[-1][:200] if lines else ""


def cut(data: bytes) -> tuple[int, int, int | None] | None:
    """(offset, level, attribute id or None) of the attribute the stream ends inside, None when it ends where its
    last attribute does (zero bytes after it are padding: an attribute's level is never 0)."""
    offset = 6
    while offset < len(data):
        head = data[offset:offset + _HEAD]
        if len(head) == _HEAD and offset + _HEAD + int.from_bytes(head[5:], "little") + 2 <= len(data):
            offset += _HEAD + int.from_bytes(head[5:], "little") + 2
            continue
        if not any(data[offset:]):
            return None
        return offset, head[0], int.from_bytes(head[1:3], "little") if len(head) >= 3 else None
    return None


def file_name(raw: str | bytes, codepage: str | None) -> str:
    """A name tnefparse left as bytes: UTF-8 if it is, else the declared code page, CP1252, Latin-1 (never fails)."""
    if isinstance(raw, str):
        return raw
    for encoding in ("utf-8", codepage or "cp1252", "cp1252"):
        try:
            return raw.decode(encoding)
        except (UnicodeDecodeError, LookupError):  # LookupError: a code page Python has no codec for
            continue
    return raw.decode("latin-1")


def _name(attachment, codepage: str | None, n: int) -> str:
    from tnefparse.properties import MAPI_ATTACH_LONG_FILENAME

    long = [p.data for p in attachment.mapi_attrs if p.name == MAPI_ATTACH_LONG_FILENAME]
    # `_name`: the raw title; tnefparse's `name` decodes it as strict UTF-8
    raw = long[0] if long else attachment._name
    return file_name(raw, codepage).strip("\x00") or f"attachment-{n}"


def _read(data: bytes) -> dict:
    from tnefparse.tnef import TNEF

    broken = cut(data)
    stream = TNEF(data if broken is None else data[:broken[0]], do_checksum=False)
    files = [{"name": _name(a, stream.codepage, n), "data": base64.b64encode(bytes(a.data)).decode("ascii")}
             for n, a in enumerate(stream.attachments, start=1)]
    if broken is None:
        return {"files": files}
    offset, level, attribute = broken
    if level == 2 and attribute not in (None, ATTACH_REND_DATA) and files:  # inside the last attachment begun
        return {"files": files[:-1], "damaged": {"name": files[-1]["name"], "message": f"damaged TNEF: the "
                                                 f"attachment is cut short at byte {offset} of {len(data)}"}}
    return {"files": files, "damaged": {"name": None, "message": f"damaged TNEF: cut short at byte {offset} of "
                                                                 f"{len(data)}; what followed is lost"}}


def _child() -> None:
    import logging
    import resource

    logging.disable(logging.CRITICAL)  # the library logs each property it skips; a hostile file has billions
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as statm:  # the address space the interpreter has mapped already
        cap = int(statm.read().split()[0]) * resource.getpagesize() + MEMORY_LIMIT
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    resource.setrlimit(resource.RLIMIT_CPU, (int(TIME_LIMIT) + 1, int(TIME_LIMIT) + 2))
    data = sys.stdin.buffer.read()
    try:
        answer = _read(data)
    except (Exception, RecursionError, MemoryError) as exc:  # noqa: BLE001 - any failure is the file's
        answer = {"error": f"damaged TNEF ({type(exc).__name__}: {str(exc)[:200]})"}
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    _child()
