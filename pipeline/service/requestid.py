"""X-Request-Id: keep a valid client value (<= 128 safe characters), otherwise mint a new one.

A minted id is 32 hex characters, as a uuid4's: 80 random bits drawn once per process (after fork: each worker
its own) and a 48-bit counter. Unique like a uuid4 without drawing from the OS per request (that, cold after a
validation, was ~15 us of a request); request ids name requests, they guard nothing.
"""
from __future__ import annotations

import itertools
import os
import re
import secrets

# fullmatch, not `^...$`: `$` also matches before a final newline, and "abc\n" would go out as a header value
_SAFE = re.compile(r"[A-Za-z0-9._:\-]{1,128}")
_minting: tuple[int, str, itertools.count] = (-1, "", itertools.count())   # pid, random prefix, counter


def new_id() -> str:
    global _minting
    pid, prefix, counter = _minting
    if pid != os.getpid():
        pid, prefix, counter = _minting = (os.getpid(), secrets.token_hex(10), itertools.count())
    return f"{prefix}{next(counter) & 0xFFFFFFFFFFFF:012x}"


def accept_or_new(value: str | None) -> str:
    if value and _SAFE.fullmatch(value):
        return value
    return new_id()


class RequestIdMiddleware:
    def process_request(self, req, resp):
        req.context.request_id = accept_or_new(req.get_header("X-Request-Id"))

    def process_response(self, req, resp, resource, req_succeeded):
        rid = getattr(req.context, "request_id", None)
        if rid:
            resp.set_header("X-Request-Id", rid)
