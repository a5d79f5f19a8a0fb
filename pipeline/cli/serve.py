"""`pipeline serve [--host H] [--port P] [--workers N]`: the service under gunicorn.

Workers are processes (default: one per CPU core; the GIL is held during a Saxon transform, so threads
would not add throughput). The app is built in each worker after fork (no preload), so Saxon processors,
compiled stylesheets and database connections are never inherited across fork; each worker then compiles
the active rule packs' stylesheets before taking traffic. SIGTERM/SIGINT is a graceful shutdown: workers
finish the requests in flight (up to --graceful-timeout seconds).

Slow clients: the worker class is `BufferedWorker` (below), gunicorn's sync worker with the network side
turned into a readiness loop. Each worker reads every connection without blocking, hands the bytes to httptools
(llhttp, the parser of Node.js: request line, headers, Content-Length or chunked bodies with extensions and
trailers, pipelining, keep-alive; nothing of HTTP's framing is parsed here) and runs the app (one request at a
time, exactly as the sync worker does) only on a request that has fully arrived; the response is buffered and
written back by the same loop. A client that trickles its headers or body, or reads its answer slowly, costs a
socket and its buffered bytes, never a worker. What stays ours: buffering a request until it is complete, one app
call at a time, writing the answer back, Expect: 100-continue (any other expectation: 417 before the body; a body
announced past what the budgets can take, room made: 503 before the 100, `_room_for`), the
RFC 9112 checks llhttp lets through (a transfer coding other than chunked: 501; Transfer-Encoding in HTTP/1.0, an
HTTP/1.1 request without Host, a second Host or Content-Type, a Host that is no host[:port], a body on a request
asking to switch protocols, which httptools would skip: 400; a method the app's framework does not know: 501; an
absolute-form target's authority stands for Host), a body sent to a path no route serves or with a method its route
does not answer (the app's 404, or 405 and Allow, given as soon as the head is in; the body is never buffered: a
small one is dropped and the requests pipelined behind it are served (`_DISCARD_LIMIT`), else the connection closes,
lingering (`_LINGER_IDLE`); a trusted proxy's body is read, see `route_refused`), `OPTIONS *`
(the server's methods), the bytes llhttp skips without bound (chunk extensions, empty lines before a request line),
the upload cap (413 without buffering the rest), the deadlines (408) and the caps a public endpoint needs (settings:
EINVOICE_CLIENT_TIMEOUT for the head and between reads (an answer is taken at _FAIR_PACE or faster with
that slack, counted by the bytes it takes: `_paced`), EINVOICE_REQUEST_DEADLINE for the whole request (a job
upload whose body keeps arriving at EINVOICE_JOB_UPLOAD_MIN_RATE runs on, up to EINVOICE_JOB_UPLOAD_DEADLINE:
`job_paced`), EINVOICE_MAX_CLIENT_CONNECTIONS per address and EINVOICE_MAX_WORKER_CONNECTIONS per worker with room
made fairly (`_make_fair_room`; a trusted proxy's connections count for the clients their requests name, _PROXY_AHEAD),
EINVOICE_KEEPALIVE_REQUESTS per connection), and where bodies and answers wait
(pipeline.cli.bodies: small ones in memory within EINVOICE_BODY_MEMORY, large ones and job uploads in spool files
within EINVOICE_BODY_SPOOL; `_Sink`). A liveness probe (GET /healthz) runs before the requests queued in the
worker, the others take fair turns by client (`_next_ready`), and a worker behind takes its whole backlog of
connections (`_ACCEPT_BEHIND`). Headers go through gunicorn's own header policy and the request through its
`wsgi.create`, so X-Forwarded-* count only from `forwarded_allow_ips`, as under gunicorn's parser. Every
malformed request gets our ErrorResponse JSON.
Why not gthread or gevent: gthread still reads the request in a pool thread (a trickle holds a thread, and
threads would run Saxon transforms concurrently under the GIL); gevent is not installed, monkey-patches
psycopg's and Saxon's threads, and would give every greenlet its own database connection.
"""
from __future__ import annotations

import errno
import fcntl
import io
import ipaddress
import json
import logging
import mmap
import os
import re
import socket
import struct
import sys
import tempfile
import termios
import time
from collections import deque
from datetime import datetime
from pathlib import Path

from pipeline.cli.bodies import SPOOL_ABOVE, Body, Budgets, Full
from pipeline.errors import STATUS_TEXT
from pipeline.service.accesslog import front_line
from pipeline.service.platform import shared
from pipeline.service.requestid import accept_or_new
from pipeline.settings import WORKER_TIMEOUT, get_settings

log = logging.getLogger("pipeline.serve")


def configure_logging() -> None:
    """JSON access lines (pipeline.access) and service errors to stderr, one message per line."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    root = logging.getLogger("pipeline")
    if not any(getattr(h, "_pipeline", False) for h in root.handlers):
        handler._pipeline = True
        root.addHandler(handler)
    root.setLevel(logging.INFO)
    root.propagate = False


def _open_store() -> None:
    shared().store()


def _call(module: str, name: str):
    def step() -> None:
        import importlib

        getattr(importlib.import_module(module), name)()
    return step


def warm_specs() -> tuple[str, ...]:
    """The specs whose rule packs a worker compiles at start (EINVOICE_WARM_SPECS, default all); SystemExit
    naming the known ones for a spec there is none of."""
    from pipeline.check.packs import SPECS  # (lxml only; the CLI's other commands need none of it)

    chosen = get_settings().warm_specs
    unknown = [s for s in chosen or () if s not in SPECS]
    if unknown:
        raise SystemExit(f"EINVOICE_WARM_SPECS: unknown spec(s) {', '.join(unknown)}; known: {', '.join(SPECS)}")
    return chosen if chosen is not None else SPECS


def _warm_rule_packs() -> None:
    from pipeline.check.engine import warm_up  # lazy: Saxon starts in the worker, after fork

    warm_up(warm_specs())


def warm_worker(worker=None) -> None:
    """In each worker after fork: open the store connection, compile the active rule packs (the validation
    engine's `warm_up`), the generation stylesheets, the Factur-X profile rules and WeasyPrint with the PDF/A
    checker, so that no request pays for them (about 5-6 s)."""
    steps = [("key store", _open_store), ("rule packs", _warm_rule_packs)]
    steps += [("generation stylesheets", _call("pipeline.write.transform", "warm_up")),
              ("ZUGFeRD rendering and PDF checks", _call("pipeline.flows.generate_zugferd", "warm_up"))]
    for what, step in steps:
        try:
            step()
        except Exception as exc:  # a cold worker still serves; /readyz says whether it can
            log.warning("worker %s: %s not warmed: %s", os.getpid(), what, exc)


def start_embedded_jobs() -> None:
    """On the embedded default (SQLite) every worker process runs the job pool's thread from its start, so a job
    whose holder died (its lease ran out) is taken over without waiting for a request, also after a restart of the
    whole service (pipeline.jobs.local)."""
    from pipeline import jobs  # lazy: the job engine loads in the worker
    from pipeline.jobs import local  # lazy: with the engine above

    try:
        if jobs.embedded(shared().store()):
            local.ensure_started(shared().store)
    except Exception as exc:  # noqa: BLE001 - the first /v1/jobs request starts it again
        log.warning("worker %s: the job pool did not start: %s", os.getpid(), exc)


def _json_protocol_error(sock, status_int, reason, mesg) -> None:
    """Gunicorn answers requests it cannot parse (bad request line, 414, 431, ...) itself, before the app sees
    them; this replaces its HTML page with our ErrorResponse so that every non-2xx has one shape."""
    from gunicorn.util import write_nonblock

    request_id = accept_or_new(None)
    body = json.dumps({
        "requestId": request_id,
        "status": STATUS_TEXT.get(status_int, "bad_request" if status_int < 500 else "internal_error"),
        "errorCode": "MALFORMED_HTTP_REQUEST" if status_int < 500 else "INTERNAL_ERROR",
        "message": f"{reason}: the HTTP request could not be parsed." if status_int < 500 else "Internal error.",
        "errors": [],
    }).encode()
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"X-Request-Id: {request_id}\r\nContent-Length: {len(body)}\r\n\r\n").encode("latin-1")
    write_nonblock(sock, head + body)


# -- the buffered worker ----------------------------------------------------------------------------------------

_HEAD_LIMIT = 64 * 1024  # request line + headers (gunicorn's per-line and per-field limits come first)
_BODY_SLACK = 64 * 1024  # multipart framing on top of the upload limit (pipeline.service.upload)
_RECV = 256 * 1024  # a read while a body arrives
# a read otherwise (heads, pipelined requests): llhttp parses all of a read at once, and a read of 256 KiB of minimal
# pipelined requests (`GET / HTTP/1.1\r\nHost:x\r\n\r\n`) queued 10,000 of them, 3.2 MB of the worker's memory per
# connection (64 MB for 20 connections; a worker holds 1,000). A 16 KiB read queues at most ~600 (~0.2 MB); the
# rest waits in the kernel until they are answered. Heads and small bodies still come in one read.
_HEAD_RECV = 16 * 1024
_EVENT_READ, _EVENT_WRITE = 1, 2  # selectors.EVENT_READ / EVENT_WRITE
_NOTIFY_EVERY = 0.5  # s between heartbeats to the arbiter (its timeout is minutes; a utime per loop is waste)
_EXPIRE_EVERY = 0.2  # s between deadline sweeps (deadlines are seconds; a sweep walks every connection)
# glibc keeps the heap that bodies held in memory grew: after 1,800 bodies of 1 MB had gone, 116-140 MiB of each worker
# stayed resident (malloc_trim gave back 137 MiB of one). It is handed back once the bodies in memory, after a
# high-water mark of _TRIM_FROM or more, have fallen to a quarter of _TRIM_FROM (`_trim_heap`, at the deadline sweeps;
# trimmed at a quarter of the mark itself, 26 MB were still held and 87 MiB stayed)
_TRIM_FROM = 32 << 20
# connections taken from the backlog per readiness event: one, as gunicorn's sync worker does. A worker that took
# several would answer them one after the other while the other worker idles (load.py, 2 workers, 4 clients, a new
# connection per request: p99 18 ms with 64 against 12-13 ms with 1, same run); a flood of connections is taken
# one per loop turn all the same (test_http_front: 2,100 trickling connections)
_ACCEPT_BATCH = 1
# ... unless more than _BACKLOG_BEHIND wait in the listening socket's accept queue (every worker is behind): then up
# to _ACCEPT_BEHIND per turn. A turn runs one request, so at one a turn a connection waited in the backlog behind
# every connection that came before it, unseen by the fair queue (`_next_ready`): a validation from one address
# waited 26 s behind 30 of another address's, each 1 s of work, where its turn was due after one
_BACKLOG_BEHIND = 4
_ACCEPT_BEHIND = 32
_RUNNING_SIZE = 4096  # bytes of the record of the request being run (method, path, request id, start)
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_OUTQ = getattr(termios, "TIOCOUTQ", None)  # Linux: SIOCOUTQ, the bytes of a TCP socket's send queue not yet acked
_NEVER = float("inf")
_JOBS = (b"/v1/jobs", b"/v1/jobs/")  # POST: a job upload, spooled into the jobs directory under its own limit
_JOB_SLACK = 1 << 20  # multipart framing on top of EINVOICE_MAX_JOB_BYTES (pipeline.service.resources.jobs)
# Fair caps: at a cap, room is made at the expense of the address holding the most connections, never of one that
# holds at most _HANDFUL, and only with a connection that has no request in and is idle, still sending its head, or
# sending its body slower than _FAIR_PACE bytes/s (after its first second: over the last _PACE_WINDOW s, so a body
# sent fast and then held by a trickle counts as slow). When the spool budget is full, the slow body or slowly read
# answer of the address holding the most bytes in them goes instead (`make_body_room`).
_HANDFUL = 4
# ... unless no client holds more than a handful (an attacker spread over so many addresses that each holds a few:
# 700 loopback addresses x 4 trickling heads filled both workers' caps and turned away 44 of 46 new connections of a
# client on its own address): then the oldest connection, whoever holds it, that has not sent a byte or is still
# sending its head, else the oldest idle for _STALE s after a request (`_make_stale_room`). A client's head arrives
# with its connection, and its keep-alive connection is rarely that long idle between requests; an age asked of the
# trickles or the silent ones too let a flood reconnecting at once take every place that came free (3 of a client's
# first new connections, and 27 of 37 uploads, turned away). A request whose head is in stays, its body however slow
# (a handful's upload on a slow line) ... unless it is a trickle (`_Message.trickle`): after _TRICKLE_AFTER s its body
# comes slower than _TRICKLE_PACE, or too slowly for the rest it announced to arrive by its deadline (it would get its
# 408 anyway), at the better of its pace since its head and over its last window. 700 addresses x 4 uploads dripping
# a byte a second held every place: a client on its own address was turned away on 60 of 60 new connections. 1 KiB/s
# is 8 kbit/s, below any line a client uploads invoices on (GSM data: 9.6 kbit/s). Then, before an idle one, the
# oldest connection whose answer is taken more than _PACE_WINDOW s behind _FAIR_PACE (`_reads_slowly`, the rule the
# spool budget holds answers to): 40 addresses x 3 connections each pipelining GET /v1/openapi.json (400 KB) and
# reading nothing held every place until their client timeouts, and reconnected at once (0 of 39 new connections of
# a client on its own address answered).
_STALE = 1.0
_TRICKLE_PACE = 1024
_TRICKLE_AFTER = 2.0
_FAIR_PACE = 16 * 1024
_PACE_WINDOW = 1.0
# Behind a trusted proxy (forwarded_allow_ips) every connection comes from the proxy's address and carries a complete
# request (nginx reads heads and bodies before it sends them) or waits idle for its next one: it counts for the client
# its last request names (X-Forwarded-For's last entry, `_regroup`). At the cap a new one is taken (up to _PROXY_AHEAD
# over the cap) and room is made once its request names its client: the client holding the most loses a connection of
# the proxy idle for _PROXY_IDLE s, closed without a word (nginx reuses its idle connections most recent first, and
# resends a GET that met a closed one), else its newest request not yet begun, answered 503 TOO_MANY_CONNECTIONS as if
# it had come a moment later (it may be the new one itself; `_owed`); _PROXY_AHEAD over the cap, before a new one is
# taken. Before, the new connection was turned away (its client unknown, all look alike: a client behind nginx got 503
# on 10 of 10 requests while two others flooded), and a proxy's idle connection was closed with a 503 whoever it last
# served: nginx took that 503, or a 502, as the answer to the request it had just sent on it.
_PROXY_AHEAD = 32
_PROXY_IDLE = 1.0
# The clients whose fair-queue tags a worker keeps (`_turn_taken`); past it those at the clock go
_FAIR_CLIENTS = 4096
# Bytes on the wire that carry no body (chunk sizes and extensions; empty lines before a request line): llhttp skips
# them without bound, so a connection could keep a worker's core busy parsing gigabytes of one chunk extension until
# the request deadline (CVE-2024-22019 in Node.js). Framing may outweigh a chunked body by _FRAMING_PER_BYTE per byte
# (1-byte chunks: 5) beyond the head's own allowance; empty lines before a request line stop at _HEAD_LIMIT.
_FRAMING_PER_BYTE = 16
# The methods a route of this service answers (`on_get`, `on_post`, `on_delete`; HEAD and OPTIONS by Falcon):
# the Allow of `OPTIONS *` (RFC 9110 9.3.7)
_SERVICE_METHODS = "GET, HEAD, POST, DELETE, OPTIONS"
# A refusal given before a body announced with Content-Length was read (413, 404/405, 400, 417) closes the connection,
# but a socket closed with unread bytes sends a reset, and the peer loses the answer it has not read yet: a proxy
# that sends the whole body whatever it hears (nginx, which sends Content-Length bodies only) answered its client 502.
# So after the answer the worker shuts down its side and reads on, discarding, until the peer closes, pauses
# _LINGER_IDLE s, or _LINGER_TIME s or the announced length (at most the job limit) have passed (as nginx's lingering
# close); nothing is buffered and the connection can be evicted meanwhile. Not after a 408 (too slow for the
# deadline), nor for chunked bodies or floods of framing (those are cut off at once) unless bytes of them are still
# unread when the answer is out (as after any last answer: `_flush`).
_LINGER_IDLE = 2.0
_LINGER_TIME = 30.0
# ... unless the refused request's framing is sound and its body small: a 404/405/413 decided from the head, or a 503
# for want of room while the body arrives, of a keep-alive request that did not ask for 100-continue, whose
# Content-Length leaves at most _DISCARD_LIMIT bytes to come. Then the refusal is answered in its turn among the
# connection's requests with `Connection: keep-alive`, the body is read and dropped as it comes (never buffered), and
# the requests pipelined behind it are served: a client sending several on one connection lost every one after the
# refusal (RFC 9112 9.3.1: it may resend them, but on a new connection). A larger body still closes the connection (it
# would cost more than the client's reconnecting), as do a chunked one (its size is not known when the refusal goes
# out) and a request that asked for 100-continue (its client may never send the body: bytes read as it would be its
# next request).
_DISCARD_LIMIT = 1 << 20
# A stopping worker (SIGTERM, a restart) runs its queued requests until this long before gunicorn's graceful timeout,
# when the master kills it, and answers the rest 503 (`_stopped`)
_STOP_MARGIN = 1.0


def _path(target: bytes) -> bytes:
    """The path of a request target (origin-form or absolute-form)."""
    if target.startswith(b"/"):
        return target.partition(b"?")[0]
    _, _, rest = target.partition(b"://")
    rest = rest.partition(b"?")[0]
    return rest[rest.find(b"/"):] if b"/" in rest else b"/"


# RFC 9110 7.2 / RFC 3986 3.2.2: Host = uri-host [ ":" port ] (an IP literal, or a reg-name of unreserved,
# sub-delims and percent-encoded octets; empty is allowed: the server's own name then). No spaces, "/", "@", ...
_HOST = re.compile(rb"(?:\[(?:[0-9A-Fa-f:.]+|v[0-9A-Fa-f]+\.[\w\-.~!$&'()*+,;=:]+)\]"
                   rb"|(?:[\w\-.~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)(?::[0-9]*)?")
_AUTHORITY_END = re.compile(rb"[/?#]")
# a request line but for its method (RFC 9110 5.6.2: a token): an unknown method, not bytes that are no HTTP
_METHOD = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}) [\x21-\x7e]+ HTTP/[0-9]\.[0-9]\r\n")


def _authority(target: bytes) -> bytes | None:
    """The authority of an absolute-form target, which stands for Host (RFC 9112 3.2.2: the origin server MUST
    ignore the Host header then); None for origin-form and `*`. An authority that is no http(s) URI's is a 400."""
    if target.startswith(b"/") or target == b"*":
        return None
    scheme, sep, rest = target.partition(b"://")
    if not sep or scheme.lower() not in (b"http", b"https"):
        raise _malformed(400, "Bad Request", "an absolute-form request target must be an http or https URI")
    authority = _AUTHORITY_END.split(rest, 1)[0]
    if b"@" in authority:  # RFC 9110 4.2.4: user information in an http(s) URI is an error
        raise _malformed(400, "Bad Request", "user information (`user@`) in the request target's authority")
    if not authority or authority.startswith(b":") or not _HOST.fullmatch(authority):
        raise _malformed(400, "Bad Request", "the request target's authority is not host[:port]")  # 4.2.1: MUST
    return authority


_SLASHES = re.compile(rb"//+")  # Falcon routes `//v1/jobs` as /v1/jobs: a job upload either way


def _chunked(fields) -> bool:
    return any(n.lower() == b"transfer-encoding" and b"chunked" in v.lower() for n, v in fields)


def _transfer_codings(fields) -> list[bytes] | None:
    """The request's transfer codings in the order applied (all Transfer-Encoding lines as one list, lower-cased,
    empty list elements skipped); None when it has no Transfer-Encoding."""
    codings = None
    for name, value in fields:
        if name.lower() == b"transfer-encoding":
            codings = (codings or []) + [c.strip(b" \t").lower() for c in value.split(b",") if c.strip(b" \t")]
    return codings


def _check_transfer_codings(codings: list[bytes], version: str) -> None:
    """RFC 9112 6.1 / 6.3. llhttp frames `gzip, chunked` as chunked and would hand the app a body still gzipped, so
    what it lets through is checked here, before any of the body is read."""
    if version == "1.0":  # framing MUST be treated as faulty: a 1.0 hop in front would read it differently
        raise _malformed(400, "Bad Request", "Transfer-Encoding in an HTTP/1.0 request")
    if not codings or (b"chunked" in codings and (codings[-1] != b"chunked" or codings.count(b"chunked") > 1)):
        raise _malformed(400, "Bad Request", "chunked must be the last transfer coding, applied once")
    unknown = [c for c in codings if c != b"chunked"]
    if unknown:
        named = ", ".join(c.decode("latin-1") for c in unknown)
        raise _Refused(501, "Not Implemented", "TRANSFER_ENCODING_NOT_IMPLEMENTED",
                       f"Transfer coding {named!r} is not implemented: send the body with Content-Length, or with "
                       "Transfer-Encoding: chunked alone.")


def _again(body: Body) -> bool:
    """Whether an add refused for want of spool can be tried again once room is made: not when it spilled the body
    from memory, which loses what was there."""
    return body.spooled or not body.size


def _fits(body: Body, announced: int) -> bool:
    """Whether the budgets can take `body` whole at its announced length now: in memory as `Body.add` keeps a small
    body, or else in its spool file (where what it holds in memory would move)."""
    budgets = body.budgets
    in_memory = budgets.in_memory - body.held_memory + announced
    if not body.spooled and announced <= SPOOL_ABOVE and in_memory <= budgets.memory:
        return True
    return budgets.on_disk - body.held_disk + announced <= budgets.disk


class _Sink:
    """Stands in for the client socket while the app runs: gunicorn's response and error writers append here, and
    the worker's loop sends the bytes when the client can take them. The answer waits in a Body, within the same
    budgets as request bodies (pipeline.cli.bodies): in memory while small, else in a spool file. A job's results
    (tens of MB of JSON Lines) held in memory for clients that did not read them grew a worker by 650 MB for 20
    such clients, and the memory stayed with the process. An answer past the spool budget first makes room
    (`make_body_room`), else stops the app's writing (`Full`) and becomes a 503 SERVER_BUSY (`_serve`)."""

    def __init__(self, budgets: Budgets | None = None, make_room=None):
        """`budgets`: the worker's; without them (a request built by hand) the answer's bytes are not bounded.
        `make_room`: called when the spool budget is full, True when it made room (`make_body_room`)."""
        if budgets is None:
            budgets = Budgets(1 << 62, 1 << 62, Path(tempfile.gettempdir()))
        self.body, self.full, self.make_room = Body(budgets), False, make_room

    @property
    def empty(self) -> bool:
        return self.body.size == 0

    @property
    def data(self) -> bytes:
        """The bytes written so far (as gunicorn's sync worker would have sent them)."""
        body = self.body
        if not body.spooled:
            return bytes(body.data)
        body.file.flush()
        return os.pread(body.file.fileno(), body.size, 0)

    def sendall(self, data):
        while True:
            again = _again(self.body)
            try:
                self.body.add(data)
                return
            except Full:
                if not (again and self.make_room is not None and self.make_room()):
                    self.full = True
                    raise

    def send(self, data):
        self.sendall(data)
        return len(data)

    def taken(self) -> Body:
        """The answer written so far, handed over; the sink is left empty."""
        body, self.body = self.body, Body(self.body.budgets)
        return body

    def clear(self) -> None:
        self.taken().release()

    def gettimeout(self):
        return 0.0

    def setblocking(self, flag):
        pass

    def settimeout(self, value):
        pass


class _Outgoing:
    """What a connection still has to send: bytes of the worker's own (refusals, 100 Continue), then the answer of
    the app as its _Sink holds it (memory or a spool file, sent with sendfile), whose budget is given back once it
    is out or the connection goes."""

    __slots__ = ("data", "pos", "answer", "view", "offset")

    def __init__(self):
        self.data = bytearray()
        self.pos = 0  # bytes of `data` already sent
        self.answer: Body | None = None
        self.view = None  # the answer's bytes when it is held in memory
        self.offset = 0  # bytes of the answer already sent

    def __bool__(self) -> bool:
        return self.pos < len(self.data) or self.answer is not None

    def __iadd__(self, data: bytes):
        self.data += data
        return self

    def take(self, sink: _Sink) -> None:
        """The answer in `sink` goes after the bytes already here (the sink is left empty)."""
        body = sink.taken()
        if not body.size:
            body.release()
            return
        stream = body.stream()  # (from its start; a spool file is flushed)
        self.answer, self.offset = body, 0
        self.view = None if body.spooled else stream.getbuffer()

    def send(self, sock) -> int:
        """Send what the socket takes now; BlockingIOError when it takes nothing."""
        if self.pos < len(self.data):
            with memoryview(self.data) as view:
                n = sock.send(view[self.pos:])
            self.pos += n
            if self.pos == len(self.data):
                self.data.clear()
                self.pos = 0
            return n
        answer = self.answer
        if self.view is not None:
            n = sock.send(self.view[self.offset:])
        else:
            n = os.sendfile(sock.fileno(), answer.file.fileno(), self.offset, answer.size - self.offset)
        self.offset += n
        if self.offset >= answer.size or not n:  # (0: the file ended early; nothing more can come)
            self.discard()
        return n

    def discard(self) -> None:
        """Nothing more goes out: the answer's budget and bytes are given back."""
        self.data.clear()
        self.pos = 0
        if self.answer is not None:
            if self.view is not None:
                self.view.release()
            self.answer.release()
            self.answer = self.view = None


class _Said:
    """A refusal queued in its turn among a connection's requests, the connection going on (see _DISCARD_LIMIT);
    in the shape the queue reads of a request (method, path, the headers that name its id and client, no spool)."""

    __slots__ = ("refused", "method", "path", "uri", "headers", "spool", "must_close", "answered")

    def __init__(self, refused: "_Refused", fields):
        self.refused, self.spool, self.must_close, self.answered = refused, None, False, False
        self.method, self.path = refused.request[0], refused.request[1] or ""
        self.uri = self.path
        self.headers = [(n.decode("latin-1").upper(), v.decode("latin-1")) for n, v in fields
                        if n.lower() in (b"x-request-id", b"x-forwarded-for")]

    def force_close(self):
        self.must_close = True


class _Refused(Exception):
    """A request the worker answers itself in the ErrorResponse shape, after which the connection closes (unless it
    is queued as a `_Said`: see _DISCARD_LIMIT)."""

    def __init__(self, status: int, reason: str, code: str, message: str, headers: str = "",
                 detail: str | None = None):
        super().__init__(message)
        self.status, self.reason, self.code, self.message, self.headers = status, reason, code, message, headers
        self.detail = detail  # our own code for errors[0], where the app names one for the same refusal
        # (method, path, when it began, its X-Request-Id) of the request refused, as far as known
        self.request = (None, None, None, None)

    def answer(self, keep: bool = False) -> bytes:
        """The answer's bytes; its access line is written (a line for every request). `keep`: the connection goes
        on after it (a body dropped as it comes, `_DISCARD_LIMIT`), said with `Connection: keep-alive`."""
        method, path, began, asked = self.request
        request_id = accept_or_new(asked)  # the client's id where its headers were read, as the app answers
        front_line(method, path, self.status, None if began is None else time.monotonic() - began, request_id,
                   front=True)
        return _error_bytes(self.status, self.reason, self.code, self.message, self.headers, request_id,
                            self.detail, keep)


def _malformed(status: int, reason: str, detail: str) -> _Refused:
    return _Refused(status, reason, "MALFORMED_HTTP_REQUEST", f"{reason}: the HTTP request could not be parsed "
                    f"({detail}).")


_VERSIONS = ("1.0", "1.1")
# llhttp also takes `RTSP/x.y` (and `ICE/x.y` after SOURCE) as a request line's protocol and tells only the version
# (`GET / RTSP/1.0` was served as HTTP/1.0): the bytes after the target, up to this many, name it (`_Conn.on_url`)
_PROTOCOL_BYTES = 12  # " RTSP/1.0\r\n" and one more


def _unsupported_version(version: str | None, protocol: str = "HTTP") -> _Refused:
    said = f"{protocol}/{version}" if version else "This HTTP version"
    return _Refused(505, "HTTP Version Not Supported", "HTTP_VERSION_NOT_SUPPORTED",
                    f"{said} is not supported; send HTTP/1.1 or HTTP/1.0.")


def _protocol(after_target) -> str | None:
    """The protocol name of a request line from the bytes after its target (` RTSP/1.0\r\n`); None: not known."""
    name, slash, _ = bytes(after_target or b"").lstrip(b" ").partition(b"/")
    return name.decode("latin-1") if slash else None


def _shown(value: bytes, limit: int = 64) -> str:
    """A client's bytes quoted in a message, cut at `limit`."""
    return repr(value[:limit].decode("latin-1")) + ("..." if len(value) > limit else "")


_KNOWN_METHODS: list[frozenset] = []


def _known_methods() -> frozenset:
    """The methods the app's framework recognises (it answers a known one a route lacks with 405 and Allow)."""
    if not _KNOWN_METHODS:
        from falcon.constants import COMBINED_METHODS  # the app's framework, only once a request arrives

        _KNOWN_METHODS.append(frozenset(m.encode("ascii") for m in COMBINED_METHODS))
    return _KNOWN_METHODS[0]


def _method_not_implemented(method: bytes) -> _Refused:
    """RFC 9110 9.1: a method the server does not recognise is a 501 (methods are case-sensitive: `get` is one)."""
    return _Refused(501, "Not Implemented", "METHOD_NOT_IMPLEMENTED", f"The method {_shown(method, 32)} is not "
                    f"implemented; this service answers {_SERVICE_METHODS}.")


def _error_bytes(status: int, reason: str, code: str, message: str, headers: str = "",
                 request_id: str | None = None, detail: str | None = None, keep: bool = False) -> bytes:
    request_id = request_id or accept_or_new(None)
    errors = [] if detail is None else [{"code": detail, "field": None, "businessTerm": None, "rejectedValue": None,
                                         "message": message}]
    body = json.dumps({"requestId": request_id, "status": STATUS_TEXT.get(status, reason.lower().replace(" ", "_")),
                       "errorCode": code, "message": message, "errors": errors}).encode()
    return (f"HTTP/1.1 {status} {reason}\r\nConnection: {'keep-alive' if keep else 'close'}\r\n"
            f"Content-Type: application/json\r\n{headers}"
            f"X-Request-Id: {request_id}\r\nContent-Length: {len(body)}\r\n\r\n").encode("latin-1") + body


_date_cache = [-1, ""]  # second, its Date header


def _http_date(timestamp=None) -> str:
    """gunicorn formats the Date header anew for every answer (email.utils, several us); it changes once a second."""
    from email.utils import formatdate

    if timestamp is not None:
        return formatdate(timestamp, usegmt=True)
    now = int(time.time())
    if now != _date_cache[0]:
        _date_cache[:] = [now, formatdate(now, usegmt=True)]
    return _date_cache[1]


_INVALID_VALUE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")  # RFC 9110 5.5, as gunicorn refuses them
_INVALID_TARGET = re.compile(r"[^\x21-\x7e]")  # RFC 9112 3.2: printable ASCII, the rest percent-encoded


def _split_target(uri: str) -> tuple[str, str, str]:
    """(path, query, fragment) of a request target, as gunicorn's parser splits it (its `wsgi.create` makes the
    path PATH_INFO)."""
    if uri.startswith("/") and not uri.startswith("//") and "#" not in uri:
        path, _, query = uri.partition("?")
        return path, query, ""
    from gunicorn.util import split_request_uri  # gunicorn loads in the worker

    parts = split_request_uri(uri)  # urllib's reading, as gunicorn's parser does
    return parts.path or "", parts.query or "", parts.fragment or ""


def _request_class():
    from gunicorn.http.message import HeaderPolicy

    class Request(HeaderPolicy):
        """A parsed request in the shape gunicorn's `wsgi.create` and `Response` read from their own `Request`.
        Headers go through gunicorn's own `HeaderPolicy` (the one its parsers share): X-Forwarded-* and the secure
        scheme headers count only from `forwarded_allow_ips`, names with "_" are dropped, a repeated Host or
        Content-Type is refused, exactly as under gunicorn's parser."""

        fragment = ""
        proxy_protocol_info = None
        must_close = False
        spool = None  # its Body (pipeline.cli.bodies), whose budget is held until it is answered

        @classmethod
        def trusted_proxy(cls, cfg, peer_addr) -> bool:
            """Whether the peer is in gunicorn's forwarded_allow_ips (default: this host's loopback)."""
            probe = cls.__new__(cls)
            probe.cfg, probe.peer_addr = cfg, peer_addr
            return probe._peer_is_trusted_proxy()

        _forwarding: dict = {}  # (cfg, client address) -> forwarding; this class is made once per worker

        @classmethod
        def forwarding(cls, cfg, peer_addr) -> tuple:
            """The (secure scheme headers, forwarder headers) this peer may set: gunicorn's rule (it parses the
            address against forwarded_allow_ips, ~3 us), asked once per client address: a client that opens a
            connection per request paid it on every request."""
            key = (id(cfg), peer_addr[0]) if isinstance(peer_addr, tuple) and peer_addr else None
            known = cls._forwarding.get(key) if key is not None else None
            if known is None:
                probe = cls.__new__(cls)
                probe.cfg, probe.peer_addr = cfg, peer_addr
                known = probe._peer_trusted_for_forwarded()
                if key is not None:
                    if len(cls._forwarding) > 4096:
                        cls._forwarding.clear()
                    cls._forwarding[key] = known
            return known

        def __init__(self, cfg, peer_addr, forwarding: tuple, method: str, target: bytes, version: tuple,
                     keep_alive: bool, fields: list):
            self.cfg, self.peer_addr, self.remote_addr = cfg, peer_addr, peer_addr
            self.scheme = "https" if cfg.is_ssl else "http"
            self.method, self.version, self.keep_alive = method, version, keep_alive
            self.uri = uri = target.decode("latin-1")
            if _INVALID_TARGET.search(uri) or not (uri.startswith("/") or "://" in uri
                                                   or (uri == "*" and method == "OPTIONS")):
                raise _malformed(400, "Bad Request", "the request target is not origin-form or absolute-form")
            self.path, self.query, self.fragment = _split_target(uri)
            self._expected_100_continue = False
            secure, forwarder = forwarding
            headers, scheme_state, seen = [], [False], set()
            for name, value in fields:
                if _INVALID_VALUE.search(value):
                    raise _malformed(400, "Bad Request", "a control character in a header value")
                name, value = name.decode("latin-1").upper(), value.decode("latin-1").strip(" \t")
                kept = self._apply_header_policy(name, value, scheme_state, seen, secure, forwarder)
                if kept is not None:
                    headers.append(kept)
            self.headers = headers
            self._expected_100_continue = False  # the loop answers Expect: 100-continue before the body arrives
            self.body = None

        def force_close(self):
            self.must_close = True

        def should_close(self):
            return self.must_close or not self.keep_alive

    return Request


class _Message:
    """The request being received on a connection."""

    __slots__ = ("started", "target", "fields", "head_bytes", "headers_done", "body", "expect", "continued",
                 "fed_at", "job", "body_since", "method", "authority", "announced", "window_at", "window_size",
                 "recent", "moved_at", "after_target", "earned", "credited", "said", "dropped")

    def __init__(self, started: float, fed_at: int):
        self.started, self.fed_at = started, fed_at
        # a job upload's time past the request deadline, earned by the bytes of its body counted so far (`job_paced`)
        self.earned, self.credited = 0.0, 0
        self.target = b""
        self.after_target = None  # the first bytes after its target, where the protocol is named (_PROTOCOL_BYTES)
        self.fields = []
        self.head_bytes = 0
        self.headers_done = self.expect = self.continued = self.job = False
        self.body: Body | None = None
        self.said: _Said | None = None  # its refusal, queued: its body is dropped as it comes (_DISCARD_LIMIT)
        self.dropped = 0  # bytes of its body dropped so far
        self.body_since = _NEVER  # when its head was complete: the body's pace counts from there
        self.method = None
        self.authority = None  # an absolute-form target's authority: the Host the app sees
        self.announced = None  # its Content-Length
        # its body's pace: bytes of it when the current window began, the pace of the last complete window, and
        # when body bytes last arrived
        self.window_at, self.window_size, self.recent, self.moved_at = _NEVER, 0, float("inf"), _NEVER

    def described(self) -> tuple:
        """(method, path, when it began, its X-Request-Id if read) for the answer and access line of a request the
        app will not see."""
        method = self.method.decode("ascii", "replace") if self.method else None
        asked = next((v.decode("latin-1") for n, v in self.fields if n.lower() == b"x-request-id"), None)
        return method, _path(self.target).decode("latin-1") if self.target else None, self.started, asked

    def drop(self) -> None:
        if self.body is not None:
            self.body.release()

    def slow(self, now: float) -> bool:
        """Whether the request is still sending its head, or its body at less than _FAIR_PACE: in its first second
        on average, then over its last complete window of _PACE_WINDOW s or more; nothing for _PACE_WINDOW is slow."""
        if not self.headers_done:
            return True
        if now - self.body_since < _PACE_WINDOW:
            return self.received < _FAIR_PACE * (now - self.body_since)
        return now - min(self.moved_at, now) >= _PACE_WINDOW or self.recent < _FAIR_PACE

    def trickle(self, now: float, by: float) -> bool:
        """Whether its body, arriving for _TRICKLE_AFTER s or more, comes at no reasonable rate: slower than
        _TRICKLE_PACE, or too slowly for the rest its Content-Length announced to arrive by `by` (its deadline), at the
        better of its pace since its head and over its last window (nothing for _PACE_WINDOW: 0), so that a line's
        dip does not make a trickle of an upload that keeps up on average."""
        since = now - self.body_since
        if not self.headers_done or since < _TRICKLE_AFTER:
            return False
        recent = 0.0 if now - min(self.moved_at, now) >= _PACE_WINDOW or self.recent == _NEVER else self.recent
        pace = max(self.received / since, recent)
        rest = None if self.announced is None else self.announced - self.received
        return pace < _TRICKLE_PACE or (rest is not None and rest > pace * (by - now))

    @property
    def received(self) -> int:
        """Bytes of its body received (kept, or dropped after its refusal)."""
        return self.body.size if self.body is not None else self.dropped

    def paced(self, now: float) -> None:
        """Body bytes arrived: a window that has lasted _PACE_WINDOW s closes with its pace."""
        size, self.moved_at = self.received, now
        if now - self.window_at >= _PACE_WINDOW:
            self.recent = (size - self.window_size) / (now - self.window_at)
            self.window_at, self.window_size = now, size


class _Conn:
    """One client connection: httptools' parser (this object takes its callbacks), the requests it completed
    and not yet answered, the answer bytes not yet sent, and its deadline."""

    __slots__ = ("sock", "addr", "worker", "parser", "msg", "pending", "refusal", "out", "close_after",
                 "deadline", "mask", "served", "fed", "eof", "forwarding", "quiet_at", "unread", "linger",
                 "linger_until", "feeding", "scan", "handed", "taken", "group", "proxied", "idle_at", "arrived")

    def __init__(self, sock, addr, worker, now: float):
        import httptools

        self.sock, self.addr, self.worker = sock, addr, worker
        self.parser = httptools.HttpRequestParser(self)
        self.msg: _Message | None = None
        self.pending = deque()  # complete requests, in arrival order (pipelining)
        self.refusal: _Refused | None = None  # answered once the requests before it are
        self.out = _Outgoing()
        self.close_after = self.eof = False
        self.deadline = now + worker.client_timeout
        self.mask = 0  # the events the selector holds for this socket (0: not registered)
        self.served = 0
        self.fed = 0  # bytes given to the parser (bounds a head the parser buffers internally)
        self.quiet_at = 0  # `fed` when its last request was complete: what follows before the next is empty lines
        self.forwarding = None  # the forwarded headers this peer may set (Request.forwarding), on its first request
        self.unread = 0  # bytes of a refused request's announced body that may still come (see _LINGER_IDLE)
        self.linger = None  # lingering after a refusal: bytes it may still discard; None: not lingering
        self.linger_until = _NEVER
        self.feeding, self.scan = b"", 0  # the read being parsed; where in it the last target part was found
        self.handed = self.taken = 0  # bytes given to the kernel to send; of those, the ones out of its queue
        # whom it counts for in the fair caps (`by_addr`): its address's group, or behind a trusted proxy (`proxied`)
        # the client its last request named (`_regroup`); since when it has been idle; when its last request came
        self.group = _client_group(addr[0] if isinstance(addr, tuple) and addr else None)
        self.proxied = False  # (the worker says, `_accept`)
        self.idle_at = self.arrived = now

    def drop_message(self) -> None:
        """The request being received is not going on: its body's bytes and budget go."""
        if self.msg is not None:
            self.msg.drop()
            self.msg = None

    def drop_pending(self) -> None:
        for req in self.pending:
            if req.spool is not None:
                req.spool.release()
        self.pending.clear()

    @property
    def reading(self) -> bool:
        return not (self.pending or self.out or self.refusal or self.close_after or self.eof) and self.sock is not None

    # -- httptools callbacks (they raise _Refused to stop the parser) --

    def on_message_begin(self):
        self.msg = _Message(time.monotonic(), self.fed)

    def on_url(self, part: bytes):
        msg = self.msg
        msg.target += part
        if len(msg.target) > self.worker.line_limit:
            raise _Refused(414, "URI Too Long", "MALFORMED_HTTP_REQUEST", f"URI Too Long: the request target "
                           f"exceeds {self.worker.line_limit} bytes.")
        # where the part is in the read being parsed (the parser does not say): the first place from the last one
        # found that is a whole token (a space or the read's edge on each side), the bytes after it name the protocol
        # (what came before it on this read, the heads and bodies of requests before it, is passed: `_passed`)
        data, end = self.feeding, len(part)
        at = data.find(part, self.scan)
        while at >= 0 and not ((at == 0 or data[at - 1] == 32) and data[at + end:at + end + 1] in (b" ", b"")):
            at = data.find(part, at + 1)
        if at >= 0:
            self.scan = at + end
            msg.after_target = bytearray(data[at + end:at + end + _PROTOCOL_BYTES])

    def _passed(self, part: bytes) -> bool:
        """The parser is past `part` of the read (its head's end, a piece of its body): the next target is after."""
        at = self.feeding.find(part, self.scan)
        if at >= 0:
            self.scan = at + len(part)
        return at >= 0

    def on_header(self, name: bytes, value: bytes):
        msg, worker = self.msg, self.worker
        size = len(name) + len(value) + 4
        msg.head_bytes += size
        if size > worker.field_limit or len(msg.fields) >= worker.fields_limit or msg.head_bytes > _HEAD_LIMIT:
            if size > worker.field_limit:  # the limit it broke, named (it said "at most 100 fields" of any of them)
                broke = f"a field of {size} bytes, at most {worker.field_limit}"
            elif len(msg.fields) >= worker.fields_limit:
                broke = f"more than {worker.fields_limit} fields"
            else:
                broke = f"the fields exceed {_HEAD_LIMIT // 1024} KiB in all"
            raise _Refused(431, "Request Header Fields Too Large", "MALFORMED_HTTP_REQUEST",
                           f"Request Header Fields Too Large: {broke} (header {_shown(name, 40)}).")
        if not msg.headers_done:  # trailers count toward the limits and are dropped, as gunicorn's reader does
            msg.fields.append((name, value))

    def on_headers_complete(self):
        msg, worker, parser = self.msg, self.worker, self.parser
        msg.headers_done, msg.body_since, msg.method = True, time.monotonic(), parser.get_method()
        self._passed(b"\n\r\n") or self._passed(b"\n\n")  # the head's end
        msg.window_at = msg.moved_at = msg.body_since
        version = parser.get_http_version()
        protocol = _protocol(msg.after_target)
        if protocol not in ("HTTP", None):  # RTSP/1.0, ICE/1.0
            raise _unsupported_version(version, protocol)
        if version not in _VERSIONS:  # llhttp reads a request line without a version as HTTP/0.9, and takes 2.0
            raise _unsupported_version(version)
        codings = _transfer_codings(msg.fields)
        if codings is not None:
            _check_transfer_codings(codings, version)
        if msg.method not in _known_methods():  # Falcon answered these 400 "Invalid HTTP method"
            raise _method_not_implemented(msg.method)
        msg.job = msg.method == b"POST" and _SLASHES.sub(b"/", _path(msg.target)) in _JOBS
        announced = host = media = refused = None
        for name, value in msg.fields:
            lower = name.lower()
            if lower == b"host":
                # RFC 9112 3.2: a second Host or an invalid value MUST be a 400 (gunicorn's policy refused the second
                # only once the body was in, naming 'HOST'; any value was served)
                if host is not None:
                    raise _malformed(400, "Bad Request", "more than one Host header field")
                host = value.strip(b" \t")
                if not _HOST.fullmatch(host):
                    raise _malformed(400, "Bad Request", f"the Host header {_shown(host)} is not host[:port]")
            elif lower == b"content-type":  # a singleton too (RFC 9110 5.3), refused before the body as Host is
                if media is not None:
                    raise _malformed(400, "Bad Request", "more than one Content-Type header field")
                media = value
            elif lower == b"content-length":
                announced = msg.announced = int(value.strip() or 0)  # llhttp: digits
                if announced > worker.body_limit(msg.job):  # (after the checks of the head: they close)
                    refused = worker.too_large(msg.job)
            elif lower == b"expect":
                # gunicorn's header policy refuses any other expectation, but only once the body is in: refused
                # now, before the client sends a body for nothing (it may be waiting for a 100 that never comes)
                expected = value.strip(b" \t").decode("latin-1")
                if expected.lower() != "100-continue":
                    raise _malformed(417, "Expectation Failed", f"Unable to comply with expectation: {expected!r}")
                msg.expect = version == "1.1"
        if version == "1.1" and host is None:
            raise _malformed(400, "Bad Request", "an HTTP/1.1 request without Host")  # RFC 9112 3.2: MUST
        msg.authority = _authority(msg.target)
        if (announced or codings) and parser.should_upgrade():
            # httptools skips the body of a request asking to switch protocols (Upgrade, CONNECT): it reached the
            # app empty. Nothing here switches protocols, so such a request cannot carry a body
            raise _Refused(400, "Bad Request", "UPGRADE_WITH_BODY", "A request asking to switch protocols (Upgrade "
                           "with Connection: upgrade, or CONNECT) cannot carry a body here: send it without them.")
        if refused is None and (announced or codings):
            # no route, or one that does not answer the method: 404 or 405 now, no body kept
            refused = worker.route_refused(msg.method, msg.target, self.addr)
        if self.proxied:
            worker._regroup(self, msg.fields)
        if refused is not None:
            self._drop_body(refused)
        elif announced:
            msg.body = Body(worker.bodies, announced, worker.jobs_dir if msg.job else None)

    def on_body(self, part: bytes):
        self._passed(part)
        msg = self.msg
        if msg.said is not None:  # refused: dropped as it comes (llhttp holds it to its Content-Length)
            msg.dropped += len(part)
            msg.paced(time.monotonic())
            return
        body = msg.body
        if body is None:  # chunked
            body = msg.body = Body(self.worker.bodies, None, self.worker.jobs_dir if msg.job else None)
        while True:
            again = _again(body)
            try:
                body.add(part)
                break
            except Full:
                if not (again and self.worker.make_body_room(self)):
                    self._drop_body(self.worker.busy())
                    msg.dropped += len(part)
                    return
        now = time.monotonic()
        msg.paced(now)
        if msg.job:
            self.worker.job_paced(msg, now)
        if body.size > self.worker.body_limit(msg.job):
            self._drop_body(self.worker.too_large(msg.job))

    def _drop_body(self, refused: _Refused) -> None:
        """A refusal of the request arriving before its body is in: queued in its turn, its body dropped as it comes
        and the connection going on, where that is safe and cheap (see _DISCARD_LIMIT); else raised (the refusal
        closes the connection)."""
        msg = self.msg
        if (msg.announced is None or msg.announced - msg.received > _DISCARD_LIMIT or (msg.expect and not msg.continued)
                or not self.parser.should_keep_alive()):
            raise refused
        refused.request = msg.described()
        msg.said = _Said(refused, msg.fields)
        if msg.body is not None:  # (what it kept goes)
            msg.dropped = msg.body.size
            msg.body.release()
            msg.body = None
        self._queue(msg.said)

    def _queue(self, request) -> None:
        self.pending.append(request)
        self.arrived = time.monotonic()

    def on_message_complete(self):
        msg, worker, parser = self.msg, self.worker, self.parser
        if msg.said is not None:  # refused (its answer queued or out): its body was dropped
            self.msg, self.quiet_at = None, self.fed
            return
        major, _, minor = parser.get_http_version().partition(".")
        if self.forwarding is None:
            self.forwarding = worker.Request.forwarding(worker.cfg, self.addr)
        fields, body = msg.fields, msg.body
        if body is not None and _chunked(fields):  # the app reads the body whole, with its length (no second spool)
            fields = [(n, v) for n, v in fields if n.lower() != b"transfer-encoding"]
            fields.append((b"Content-Length", b"%d" % body.size))
        if msg.authority is not None:  # RFC 9112 3.2.2: the target's authority, not the Host header
            fields = [(n, v) for n, v in fields if n.lower() != b"host"] + [(b"Host", msg.authority)]
        req = worker.Request(worker.cfg, self.addr, self.forwarding, parser.get_method().decode("ascii"),
                             msg.target, (int(major), int(minor)), parser.should_keep_alive(), fields)
        self.msg = None  # (only now: a refusal by gunicorn's header policy above still knows the request's id)
        self.quiet_at = self.fed
        req.body = body.stream() if body is not None else io.BytesIO()
        req.spool = body
        self._queue(req)


def _backlog(listener) -> int:
    """Connections waiting in a listening socket's accept queue: Linux tells it as a listening TCP socket's
    tcpi_unacked (TCP_INFO); 0 where it is not told (a Unix socket, another system)."""
    try:
        return struct.unpack_from("I", listener.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104), 24)[0]
    except (OSError, struct.error, AttributeError):
        return 0


def _unmapped(addr):
    """An IPv4 client of a dual-stack listener (`--host ::`) as IPv4: `::ffff:10.0.0.1` is 10.0.0.1 to the caps, to
    forwarded_allow_ips (a proxy on 127.0.0.1 was not trusted) and to REMOTE_ADDR, as on an IPv4 listener."""
    if isinstance(addr, tuple) and len(addr) == 4 and addr[0].startswith("::ffff:") and "." in addr[0]:
        return addr[0][7:], addr[1]
    return addr


_GROUPS: dict[str, str] = {}  # IPv6 address -> its group (the parse costs ~9 us; a client reconnects often)


def _client_group(address: str | None) -> str | None:
    """Whose connections an address counts among for the caps: an IPv4 address alone; a global IPv6 address with
    its /64, the block one host or subscriber is given (one client on many addresses of it is one client, as an
    office behind one IPv4 address is); loopback, link-local and unique-local IPv6 addresses alone, as private IPv4
    ones are."""
    if address is None or ":" not in address:
        return address
    group = _GROUPS.get(address)
    if group is None:
        try:
            ip = ipaddress.IPv6Address(address)
            group = str(ipaddress.IPv6Network((int(ip) >> 64 << 64, 64))) if ip.is_global else address
        except ValueError:
            group = address
        if len(_GROUPS) > 4096:
            _GROUPS.clear()
        _GROUPS[address] = group
    return group


def _malloc_trim():
    """glibc's malloc_trim (its argument: the bytes to keep at the heap's top), or None where the C library has none
    (musl)."""
    import ctypes

    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)
    except OSError:
        return None


def _worker_base():
    from gunicorn.workers import base

    return base.Worker


class BufferedWorker(_worker_base()):
    """gunicorn's sync worker (one request at a time per process) behind a non-blocking reader and writer.

    The loop (a selector over the listening sockets, the signal pipe and every client) accepts connections, feeds
    what they send to httptools (llhttp: request line, headers, Content-Length or chunked bodies, pipelining,
    keep-alive), queues the complete requests, runs them one by one through gunicorn's `wsgi.create` and
    `Response` and writes the buffered answers as the clients read them."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # made in the master before fork and shared with it: the request this worker's app is running, so that a
        # request whose worker is killed (the worker timeout, the OOM killer) still gets its access line
        self.running = mmap.mmap(-1, _RUNNING_SIZE)

    def _run_begins(self, req) -> None:
        request_id = next((v for n, v in req.headers if n == "X-REQUEST-ID"), None)
        record = json.dumps([time.time(), req.method, req.path, accept_or_new(request_id)]).encode()[:_RUNNING_SIZE - 2]
        self.running[2:2 + len(record)] = record
        self.running[:2] = len(record).to_bytes(2, "big")

    def _run_ends(self) -> None:
        self.running[:2] = b"\0\0"

    def init_process(self):
        settings = get_settings()
        self.client_timeout = float(settings.client_timeout)
        self.request_deadline = float(settings.request_deadline)
        self.job_min_rate = float(settings.job_upload_min_rate)
        self.job_deadline = max(float(settings.job_upload_deadline), self.request_deadline)
        self.per_client = settings.max_client_connections
        self.max_conns = settings.max_worker_connections
        self.keepalive_requests = settings.keepalive_requests
        self.upload_limit, self.job_limit = settings.max_upload_bytes, settings.max_job_bytes
        self.limits = (settings.max_upload_bytes + _BODY_SLACK, settings.max_job_bytes + _JOB_SLACK)
        self.bodies = Budgets(settings.body_memory, settings.body_spool, settings.data_dir / "spool")
        self.jobs_dir = settings.jobs_dir or settings.data_dir / "jobs"
        cfg = self.cfg
        self.line_limit = cfg.limit_request_line or 8190
        self.fields_limit = cfg.limit_request_fields or 100
        self.field_limit = cfg.limit_request_field_size or 8190
        self.Request = _request_class()
        import gunicorn.util

        gunicorn.util.http_date = _http_date  # this worker process only
        super().init_process()

    def job_paced(self, msg, now: float) -> None:
        """A job upload may arrive past EINVOICE_REQUEST_DEADLINE while its body keeps coming at
        EINVOICE_JOB_UPLOAD_MIN_RATE or faster (Apache mod_reqtimeout's MinRate: a month's archive takes minutes on an
        office line): each byte received since last asked moves its deadline 1/rate s on, at most to the request
        deadline from now (a burst earns no more: sent fast and then trickled, it gets its 408 a request deadline
        later) and never past EINVOICE_JOB_UPLOAD_DEADLINE of its first byte. The rule `_paced` holds answers to."""
        if self.job_min_rate > 0:
            by = min(now + self.request_deadline, msg.started + self.job_deadline,
                     self.arrive_by(msg) + (msg.body.size - msg.credited) / self.job_min_rate)
            msg.earned, msg.credited = by - msg.started - self.request_deadline, msg.body.size

    def arrive_by(self, msg) -> float:
        """When the request must have arrived whole."""
        return msg.started + self.request_deadline + msg.earned

    def body_limit(self, job: bool) -> int:
        return self.limits[job]

    def too_large(self, job: bool = False) -> _Refused:
        if job:
            return _Refused(413, "Payload Too Large", "PAYLOAD_TOO_LARGE", f"The job's upload exceeds {self.job_limit} "
                            "bytes (EINVOICE_MAX_JOB_BYTES); nothing was stored.")
        return _Refused(413, "Payload Too Large", "PAYLOAD_TOO_LARGE",
                        f"The request body exceeds the limit of {self.upload_limit} bytes.")

    def route_refused(self, method: bytes, target: bytes, addr) -> _Refused | None:
        """The 404 of a request to a path no route serves, or the 405 of one whose route does not answer its method
        (what the app would answer, decided by the path and method alone), given before the body is read: the connection
        closes after it, so the body is never buffered (what still comes is dropped, `_LINGER_IDLE`). None when the
        route answers the method, when the target is left to the checks that follow (an invalid one, `*`), under a
        SCRIPT_NAME (the app sees another path), and for a trusted proxy: nginx has read the whole body before it sends
        the head and sends all of it whatever it hears, so a connection closed under it made its answer a 502 (sendfile:
        broken pipe) and counted as a failure of this node; the app answers it once the body is in, as before."""
        uri = target.decode("latin-1")
        allow = getattr(self.wsgi, "allow", None)  # pipeline.service.app._App; another app: the app decides
        client = addr[0] if isinstance(addr, tuple) and addr else None
        if allow is None or method == b"OPTIONS" or _INVALID_TARGET.search(uri) or not (
                uri.startswith("/") or "://" in uri) or os.environ.get("SCRIPT_NAME") or (
                client is not None and self._proxy(client)):
            return None
        from gunicorn.util import unquote_to_wsgi_str  # gunicorn loads in the worker
        from pipeline.service import errors  # the app's words for its own 404 and 405 (falcon is loaded by now)

        try:
            path, methods = allow(unquote_to_wsgi_str(_split_target(uri)[0]))
        except ValueError:  # a target urllib cannot split: its 400 comes with the request
            return None
        if methods is None:
            return _Refused(404, "Not Found", "NOT_FOUND", errors.no_resource(path))
        name = method.decode("ascii")
        if name in methods:
            return None
        allowed = ", ".join(methods)
        return _Refused(405, "Method Not Allowed", "METHOD_NOT_ALLOWED", errors.method_not_allowed(name, path, allowed),
                        f"Allow: {allowed}\r\n")

    def make_body_room(self, needy: _Conn) -> bool:
        """The spool budget is full while `needy`'s body arrives or its answer is written: of the address holding
        the most spooled bytes for slow clients (`_held_for_slow`), the largest such body or answer goes, never
        `needy`'s and never one moving at a fair pace: bodies held open by trickles and answers nobody reads cannot
        keep out the uploads of others. A body gets 503 SERVER_BUSY; an answer begun cannot be taken back, so its
        connection closes. False when there is none."""
        now = time.monotonic()
        held: dict = {}
        for conn in self.conns.values():
            size = 0 if conn is needy else self._held_for_slow(conn, now)
            if size:
                held.setdefault(conn.group, []).append((size, conn))
        if not held:
            return False
        holder = max(held.values(), key=lambda pairs: sum(size for size, _ in pairs))
        _, victim = max(holder, key=lambda pair: pair[0])
        if victim.out.answer is None:
            self._refuse(victim, self.busy())
            self._next(victim)
        else:
            self.log.warning("client %s: an answer read slower than %d bytes/s closed to make room in the spool",
                             victim.addr[0] if victim.addr else "?", _FAIR_PACE)
            self._close(victim)
        return True

    def _held_for_slow(self, conn: _Conn, now: float) -> int:
        """Spooled bytes the connection holds for a slow client: a body arriving slower than _FAIR_PACE
        (`_Message.slow`), or an answer taken more than _PACE_WINDOW s behind that pace (`_paced`); else 0."""
        msg, answer = conn.msg, conn.out.answer
        if msg is not None:
            slow = msg.body is not None and msg.body.spooled and conn.refusal is None and msg.slow(now)
            return msg.body.size if slow else 0
        if answer is None or not answer.spooled:
            return 0
        return answer.held_disk if self._reads_slowly(conn, now) else 0

    def busy(self, what: str = "request bodies") -> _Refused:
        return _Refused(503, "Service Unavailable", "SERVER_BUSY", f"This worker holds as many {what} as it may "
                        "(EINVOICE_BODY_SPOOL); try again later.", "Retry-After: 5\r\n")

    # -- loop --------------------------------------------------------------------------------------------------

    signalled = 0.0  # when the worker was told to stop (SIGTERM)

    def handle_exit(self, sig, frame):
        """SIGTERM: stop as gunicorn's workers do, noting when. The master kills the worker a graceful timeout after
        its signal; the loop sees the signal only after the request being run, so a stop counted from then (1.3 s
        later on a loaded host) fell after the kill, and the queued requests got no answer at all."""
        self.signalled = time.monotonic()
        super().handle_exit(sig, frame)

    def run(self):
        import selectors

        self.sel = selectors.DefaultSelector()
        self.conns: dict[int, _Conn] = {}
        self.by_addr: dict[str, dict[_Conn, None]] = {}  # a client address's connections, oldest first
        self.proxies: dict[str, bool] = {}  # address -> in forwarded_allow_ips
        self.ready: deque[_Conn] = deque()
        self.tags: dict[str, float] = {}  # the fair queue's tags by client (`_next_ready`), and its clock
        self.clock = 0.0
        for s in self.sockets:
            s.setblocking(False)
            self.sel.register(s, selectors.EVENT_READ, ("listen", s))
        self.sel.register(self.PIPE[0], selectors.EVENT_READ, ("pipe", None))
        self.accepting = True
        self.listener_name = self.sockets[0].getsockname() if self.sockets else ("", 0)
        start_embedded_jobs()
        stop_by = None
        notified = expired = 0.0
        turns = deque([0.0], maxlen=8)  # how long the last requests ran
        self.body_high, self.trim = 0, _malloc_trim()
        while True:
            now = time.monotonic()
            if now - notified >= _NOTIFY_EVERY:
                notified = now
                self.notify()
                if self.ppid != os.getppid():
                    self.log.info("Parent changed, shutting down: %s", self)
                    break
            if not self.alive:
                if stop_by is None:  # (the master's graceful timeout runs from its signal, `handle_exit`)
                    stop_by = ((self.signalled or time.monotonic())  # (or max_requests reached)
                               + max(0.0, self.cfg.graceful_timeout - _STOP_MARGIN))
                    self._stop_accepting()
                self._close_idle()
                # a request is begun only if it can end before the kill, as long as the longest of the last turns
                # took: one begun at the margin's edge on a loaded host ran into the kill, and every request queued
                # behind it lost its 503 with it
                if not self.conns or time.monotonic() + (max(turns) if self.ready else 0.0) > stop_by:
                    break
            if self.ready:
                conn, group = self._next_ready()
                began = time.monotonic()
                self._serve(conn)
                turns.append(time.monotonic() - began)
                self._turn_taken(group, turns[-1])
                timeout = 0
            else:
                timeout = 1.0
            try:
                events = self.sel.select(timeout)
            except InterruptedError:
                events = []
            listening = []
            for key, mask in events:
                kind, obj = key.data
                if kind == "listen":
                    listening.append(obj)
                elif kind == "pipe":
                    try:
                        os.read(self.PIPE[0], 4096)
                    except OSError:
                        pass
                else:
                    if mask & _EVENT_READ:
                        if obj.linger is not None:
                            self._drain(obj)
                        elif obj.reading:
                            self._read(obj)
                        else:  # its requests are queued or being answered: stop watching its input now
                            self._events(obj)
                    if mask & _EVENT_WRITE and obj.sock is not None:
                        self._flush(obj)
            # new connections after the events of those held: a burst taken at once (`_ACCEPT_BEHIND`) would otherwise
            # meet the caps with connections whose clients have closed them, not yet read, and push out live ones
            for listener in listening:
                self._accept(listener)
            now = time.monotonic()
            if now - expired >= _EXPIRE_EVERY:
                expired = now
                self._expire(now)
                self._trim_heap()
        for conn in list(self.conns.values()):
            self._stopped(conn)

    def _trim_heap(self) -> None:
        """After a flood of bodies held in memory, the C library's free heap goes back to the system (_TRIM_FROM)."""
        held = self.bodies.in_memory
        if held > self.body_high:
            self.body_high = held
        elif self.body_high >= _TRIM_FROM and held <= _TRIM_FROM // 4:
            self.body_high = held
            if self.trim is not None:
                self.trim(0)

    def _stopped(self, conn) -> None:
        """The worker stops (a restart, SIGTERM) with this connection open: a request queued and not begun, or one
        still arriving, gets 503 SERVER_BUSY + Retry-After: 1 (it was not run: send it again) and its access line,
        written once without waiting, and the connection closes. Before, 23 of 30 validations queued when a worker
        was stopped got the connection closed after the graceful timeout, without an answer or an access line."""
        if conn.sock is None:
            return
        if conn.out:  # an answer begun: it cannot be taken back
            self._close(conn)
            return
        first = conn.pending[0] if conn.pending else None
        answer = first.refused.answer() if isinstance(first, _Said) else b""  # a refusal queued first: said as is
        asked = [(req.method, req.path, None, next((v for n, v in req.headers if n == "X-REQUEST-ID"), None))
                 for req in conn.pending if not (answer and req is first)]
        if conn.msg is not None and conn.msg.said is None:  # (a queued refusal's request is in `pending`)
            asked.append(conn.msg.described())
        if conn.refusal is not None and not asked:
            answer = conn.refusal.answer()
        for request in asked:  # (the first answer closes the connection: each request has its line)
            refused = _Refused(503, "Service Unavailable", "SERVER_BUSY", "This worker is stopping (a restart) and did "
                               "not run the request; send it again.", "Retry-After: 1\r\n")
            refused.request = request
            said = refused.answer()  # (its access line, whether its bytes go out or not)
            answer = answer or said
        sock, client = conn.sock, conn.addr[0] if isinstance(conn.addr, tuple) and conn.addr else None
        self._forget(conn)
        if asked:
            self.log.warning("client %s: %d request(s) not run, the worker stops", client or "?", len(asked))
        try:
            sock.setblocking(False)
            if answer:
                sock.send(answer)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        sock.close()

    def _next_ready(self) -> tuple[_Conn, str | None]:
        """The connection whose request runs next, and the client it counts for: a liveness probe (GET /healthz, no
        work) before the queue, so that requests queued behind slow ones (20 job results of 67 MB: 7 s) do not make
        the worker look dead to a load balancer; the rest by fair queuing across clients (`_turn_group`): the client
        with the least tag goes first, its tag being the worker time its requests took, counted from the clock of the
        request last begun (self-clocked fair queuing), ties in arrival order. One address's 30 queued validations of
        1.4 s made a validation from another address wait 26 s in arrival order; now it waits for the request being
        run, and a client that sent nothing lately waits for no one's backlog."""
        best = None
        for i, conn in enumerate(self.ready):
            if conn.sock is None or not conn.pending or conn.pending[0].path == "/healthz":
                del self.ready[i]
                return conn, None
            group = self._turn_group(conn)
            tag = max(self.tags.get(group, 0.0), self.clock)
            if best is None or tag < best[0]:
                best = (tag, i, conn, group)
        tag, i, conn, group = best
        del self.ready[i]
        self.clock = tag
        return conn, group

    def _turn_group(self, conn) -> str | None:
        """Whom a queued request counts for in the fair queue: its address's group (`_client_group`), or behind a
        trusted proxy the address that proxy forwards (the last X-Forwarded-For entry, which nginx sets to the
        client's address: `deploy/nginx.conf`), so that the clients behind one proxy take turns too."""
        client = conn.addr[0] if isinstance(conn.addr, tuple) and conn.addr else None
        if client is not None and self._proxy(client):
            forwarded = next((v for n, v in conn.pending[0].headers if n == "X-FORWARDED-FOR"), "")
            client = forwarded.rsplit(",", 1)[-1].strip()[:64] or client
        return _client_group(client)

    def _turn_taken(self, group: str | None, spent: float) -> None:
        """A request of `group` took `spent` s of the worker: its tag moves on by that (see `_next_ready`)."""
        if group is None:
            return
        if group not in self.tags and len(self.tags) >= _FAIR_CLIENTS:  # a tag at or below the clock is as none
            self.tags = {g: t for g, t in self.tags.items() if t > self.clock}
            if len(self.tags) >= _FAIR_CLIENTS:
                self.tags.clear()
        self.tags[group] = max(self.tags.get(group, 0.0), self.clock) + spent

    def _stop_accepting(self):
        if self.accepting:
            for s in self.sockets:
                try:
                    self.sel.unregister(s)
                except (KeyError, ValueError):
                    pass
            self.accepting = False

    def _idle(self, conn) -> bool:
        return conn.msg is None and not conn.pending and not conn.out and conn.refusal is None

    def _close_idle(self):
        for conn in list(self.conns.values()):
            if self._idle(conn):
                self._close(conn)

    def _accept(self, listener):
        import selectors

        waiting = _backlog(listener)
        for _ in range(min(waiting, _ACCEPT_BEHIND) if waiting > _BACKLOG_BEHIND else _ACCEPT_BATCH):
            try:
                sock, addr = listener.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError as exc:  # out of file descriptors: leave the rest in the backlog
                self.log.warning("accept: %s", exc)
                return
            addr = _unmapped(addr)
            client = addr[0] if isinstance(addr, tuple) and addr else None
            group = _client_group(client)
            same = self.by_addr.get(group) if group is not None else None
            proxied = client is not None and self._proxy(client)
            # a trusted proxy's connections carry many clients: only the worker's cap counts for its address
            if (self.per_client and same is not None and len(same) >= self.per_client and not proxied
                    and not self._make_room(same)):
                self._turn_away(sock, client, f"{self.per_client} connections from {group}")
                continue
            # a proxy's: its client is known once its request is in, when room is made (`_read`); until then it is
            # taken while _PROXY_AHEAD over the cap, past that the client holding the most pays at once
            if (len(self.conns) >= self.max_conns and not self._make_fair_room(lossless=proxied) and not (
                    proxied and (len(self.conns) < self.max_conns + _PROXY_AHEAD or self._make_fair_room()))):
                self._turn_away(sock, client, f"{self.max_conns} connections")
                continue
            sock.setblocking(False)
            conn = _Conn(sock, addr, self, time.monotonic())
            conn.proxied = proxied
            self.conns[sock.fileno()] = conn
            if group is not None:
                self.by_addr.setdefault(group, {})[conn] = None
            self.sel.register(sock, selectors.EVENT_READ, ("conn", conn))
            conn.mask = selectors.EVENT_READ
            self._read(conn)  # the request usually arrived with the connection

    def _proxy(self, client: str) -> bool:
        trusted = self.proxies.get(client)
        if trusted is None:
            if len(self.proxies) > 4096:
                self.proxies.clear()
            trusted = self.proxies[client] = self.Request.trusted_proxy(self.cfg, (client, 0))
        return trusted

    def _regroup(self, conn, fields) -> None:
        """A trusted proxy's connection counts for the client its request's head names, as in the fair queue
        (`_turn_group`)."""
        forwarded = next((v for n, v in fields if n.lower() == b"x-forwarded-for"), b"").decode("latin-1")
        group = _client_group(forwarded.rsplit(",", 1)[-1].strip()[:64] or conn.addr[0])
        if group != conn.group:
            self._ungroup(conn)
            conn.group = group
            self.by_addr.setdefault(group, {})[conn] = None

    def _ungroup(self, conn) -> None:
        same = self.by_addr.get(conn.group)
        if same is not None:
            same.pop(conn, None)
            if not same:
                del self.by_addr[conn.group]

    def _make_fair_room(self, lossless: bool = False) -> bool:
        """At the worker's cap: room is made among the connections of the client that holds the most (the next
        one if none of its connections may go), never of a client that holds at most _HANDFUL; when no client holds
        more, a connection left stale (`_make_stale_room`). False: none.
        `lossless`: no request of a trusted proxy's goes (see _PROXY_AHEAD)."""
        for _, conns in sorted(self.by_addr.items(), key=lambda item: len(item[1]), reverse=True):
            if len(conns) <= _HANDFUL:
                break
            if self._make_room(conns, lossless):
                return True
        return self._make_stale_room()

    def _make_stale_room(self) -> bool:
        """No client holds more than a handful that may go: the oldest connection (the worker's books keep them in
        the order they came) that has not sent a byte, is still sending its head or trickles its body
        (`_Message.trickle`), else the oldest whose answer is taken more than a second behind _FAIR_PACE
        (`_reads_slowly`), else the oldest idle for _STALE s, whoever holds it; never a request whose body arrives at
        a reasonable rate, an answer taken at a fair pace, requests waiting their turn behind no slow answer, or a
        trusted proxy's connection. False: none."""
        now = time.monotonic()
        idle = unread = None
        for c in self.conns.values():
            if c.proxied or c.refusal is not None:
                continue
            if c.pending or c.out:
                if unread is None and self._reads_slowly(c, now):
                    unread = c
                continue
            if c.msg is not None:
                if not c.msg.headers_done or c.msg.trickle(now, self.arrive_by(c.msg)):
                    self._evict(c)
                    return True
            elif not c.fed:  # not a byte since it came: a head not begun (a client sends its head with the connection)
                self._evict(c)
                return True
            elif idle is None and now - c.idle_at >= _STALE:
                idle = c
        if idle is None and unread is None:
            return False
        self._evict(unread or idle)
        return True

    def _make_room(self, conns, lossless: bool = False) -> bool:
        """At a cap a new connection is served and the oldest of `conns` without a request in goes: an idle
        keep-alive one, one still sending its head, or one sending its body slower than _FAIR_PACE. A flood of slow
        connections thus pushes out its own oldest, never a request already in nor a body arriving at a fair pace.
        A trusted proxy's idle connection goes only once idle for _PROXY_IDLE s (closed without an answer); when none
        may go, the newest request of `conns` that came through a proxy and has not begun is answered 503 instead
        (not when `lossless`; see _PROXY_AHEAD).
        False when no connection of `conns` may go."""
        now = time.monotonic()
        oldest = queued = None
        for c in conns:
            if c.out or c.refusal is not None:
                continue
            if not c.proxied or c.msg is not None:
                # (a proxy sends a head and a body it holds at once: one of its still arriving after _PROXY_IDLE s is
                # a trickle, or a client on the proxy's own address)
                if not c.pending and (c.msg is None or c.msg.slow(now)) and (
                        not c.proxied or now - c.msg.started >= _PROXY_IDLE):
                    oldest = c
                    break
            elif not c.pending:
                if now - c.idle_at >= _PROXY_IDLE and c.linger is None and self._quiet(c):
                    self._close(c)
                    return True
            elif queued is None or c.arrived > queued.arrived:  # a request of a proxy's, complete and not begun
                queued = c
        if oldest is None:
            if queued is None or lossless:
                return False
            self._refuse_queued(queued)
            return True
        self._evict(oldest)
        return True

    def _evict(self, conn) -> None:
        """`conn` makes room: 503 TOO_MANY_CONNECTIONS (with the access line of a request begun on it) and closed."""
        sock, client = conn.sock, conn.addr[0] if isinstance(conn.addr, tuple) else None
        # (a request whose refusal went out, its body still being dropped, has had its answer and access line)
        request = conn.msg.described() if conn.msg is not None and conn.msg.said is None else None
        self._forget(conn)
        self._turn_away(sock, client, "too many connections; the oldest made room", quiet=True, request=request)

    def _owed(self, conn) -> bool:
        """No room now, but `conn`'s client holds a handful and another more, all of it in requests still arriving
        or running: its request stays, over the cap, and that client's next request to come in pays (`_read`)."""
        proxy = _client_group(conn.addr[0])  # (its connections waiting for a first request count for no client)
        return (len(self.by_addr.get(conn.group, ())) <= _HANDFUL
                and any(len(conns) > _HANDFUL for group, conns in self.by_addr.items() if group != proxy))

    @staticmethod
    def _quiet(conn) -> bool:
        """Nothing has arrived on the connection (a request sent on it makes it no idle one)."""
        try:
            return not conn.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except OSError:  # (BlockingIOError: nothing to read; another error: it goes all the same)
            return True

    def _refuse_queued(self, conn) -> None:
        """A trusted proxy's request not yet begun is answered 503 TOO_MANY_CONNECTIONS, and the connection closes."""
        req = conn.pending[-1]
        self.log.warning("client %s via %s: a request not begun refused, this worker holds %d connections",
                         conn.group, conn.addr[0], self.max_conns)
        refused = _Refused(503, "Service Unavailable", "TOO_MANY_CONNECTIONS",
                           f"Too many open connections ({self.max_conns} connections; the client with the most made "
                           "room); try again later.", "Retry-After: 1\r\n")
        refused.request = (req.method, req.path, None, next((v for n, v in req.headers if n == "X-REQUEST-ID"), None))
        conn.drop_pending()
        if conn in self.ready:
            self.ready.remove(conn)
        conn.refusal = refused
        self._next(conn)

    def _turn_away(self, sock, client, what, quiet=False, request=None):
        """503 + Retry-After, written once without waiting, and the connection closed. `request`: the (method, path,
        began) of a request that had begun on it, which gets its access line."""
        if not quiet:
            self.log.warning("client %s: turned away, this worker holds %s", client or "?", what)
        refused = _Refused(503, "Service Unavailable", "TOO_MANY_CONNECTIONS",
                           f"Too many open connections ({what}); try again later.", "Retry-After: 1\r\n")
        if request is not None:
            refused.request = request
            answer = refused.answer()
        else:
            answer = _error_bytes(refused.status, refused.reason, refused.code, refused.message, refused.headers)
        try:
            sock.setblocking(False)
            sock.send(answer)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        sock.close()

    def _events(self, conn):
        """Tell the selector what the connection waits for, only when that changed: a keep-alive request read
        and answered at once ends where it began (reading), with no epoll_ctl. A connection whose request is
        queued keeps reading registered until an event says there is input (see `run`): usually none comes."""
        if conn.sock is None:
            return
        mask = (_EVENT_READ if conn.reading or conn.linger is not None else 0) | (_EVENT_WRITE if conn.out else 0)
        if mask == conn.mask:
            return
        if not mask:
            self.sel.unregister(conn.sock)
        elif not conn.mask:
            self.sel.register(conn.sock, mask, ("conn", conn))
        else:
            self.sel.modify(conn.sock, mask, ("conn", conn))
        conn.mask = mask

    def _read(self, conn):
        import httptools

        msg = conn.msg
        try:
            data = conn.sock.recv(_RECV if msg is not None and msg.headers_done else _HEAD_RECV)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(conn)
            return
        if not data:  # the client closed its side: answer what it has sent whole, then close
            conn.eof = True
            if conn.msg is not None and conn.refusal is None:  # and say why the request it began goes unanswered
                self._refuse(conn, _malformed(400, "Bad Request", "the client closed its side of the connection "
                                              "before the request was complete"))
            conn.drop_message()
            self._next(conn)
            return
        had = len(conn.pending)
        conn.fed += len(data)
        after = msg.after_target if msg is not None and not msg.headers_done else None
        if after is not None and len(after) < _PROTOCOL_BYTES:  # the target ended with the last read
            after += data[:_PROTOCOL_BYTES - len(after)]
        conn.feeding, conn.scan = data, 0
        try:
            conn.parser.feed_data(data)
        except httptools.HttpParserUpgrade:  # no protocol switch here: the request is answered, then close
            conn.eof = True
            if conn.pending:
                conn.pending[-1].force_close()
        except _Refused as refused:
            self._refuse(conn, refused)
        except httptools.HttpParserCallbackError as exc:
            cause = exc.__context__
            job = conn.msg is not None and conn.msg.job
            self._refuse(conn, cause if isinstance(cause, _Refused) else self._bad_request(cause, job))
        except httptools.HttpParserInvalidMethodError:
            self._refuse(conn, self._no_method(conn, data, had))
        except httptools.HttpParserError as exc:
            detail = str(exc) or type(exc).__name__
            if "PRI/Upgrade" in detail:  # HTTP/2's connection preface (prior knowledge, `curl --http2-prior-knowledge`)
                refused = _unsupported_version("2.0")
            else:
                refused = _unsupported_version(None) if "HTTP version" in detail else _malformed(400, "Bad Request",
                                                                                                  detail)
            self._refuse(conn, refused)
        conn.feeding = b""  # (a read of 256 KiB is not kept)
        now = time.monotonic()
        msg = conn.msg
        if msg is not None and conn.refusal is None:
            if not msg.headers_done and data.endswith(b"\n") and conn.parser.get_http_version() == "0.0":
                # a request line without a version (HTTP/0.9): llhttp waits for the headers of a head, while the
                # client waits for its answer (it got none until the client timeout)
                self._refuse(conn, _unsupported_version("0.9"))
            elif not msg.headers_done and conn.fed - msg.fed_at > _HEAD_LIMIT:
                self._refuse(conn, _Refused(431, "Request Header Fields Too Large", "MALFORMED_HTTP_REQUEST",
                                            "Request Header Fields Too Large: the request head exceeds 64 KiB."))
            elif msg.headers_done:
                body = msg.received
                framing = conn.fed - msg.fed_at - body
                if framing > 2 * _HEAD_LIMIT + _FRAMING_PER_BYTE * body:
                    self._refuse(conn, _Refused(413, "Payload Too Large", "PAYLOAD_TOO_LARGE", (
                        f"The chunked framing (chunk sizes and extensions) outweighs its body: {framing} bytes for "
                        f"{body} bytes of body; send chunks without extensions, or the body with Content-Length.")))
        elif msg is None and conn.refusal is None and conn.sock is not None and conn.fed - conn.quiet_at > _HEAD_LIMIT:
            self._refuse(conn, _malformed(400, "Bad Request", f"{conn.fed - conn.quiet_at} bytes of empty lines "
                                          "and no request line"))
        if msg is not None:  # a request is arriving: its head within the client timeout, all of it by the deadline
            head_by = msg.started + self.client_timeout if not msg.headers_done else now + self.client_timeout
            conn.deadline = min(head_by, self.arrive_by(msg))
        if len(conn.pending) > had or conn.refusal is not None:
            self._next(conn)
            # a trusted proxy's request over the cap (taken at accept): its client is known, room is made now
            if conn.proxied and len(conn.pending) > had and len(self.conns) > self.max_conns and conn.sock is not None:
                if not self._make_fair_room() and not self._owed(conn):
                    self._refuse_queued(conn)
        else:
            self._continue(conn)

    def _continue(self, conn):
        """Expect: 100-continue, once the answers before it are out: the client may send its body now, if the
        budgets can take it; else 503 SERVER_BUSY at once, before the client sends a body only to hear that."""
        msg = conn.msg
        if msg is not None and msg.expect and not msg.continued and not conn.pending and not conn.out:
            if not self._room_for(conn):
                self._refuse(conn, self.busy())
                self._next(conn)
                return
            msg.continued = True
            conn.out += _CONTINUE
            self._flush(conn)

    def _room_for(self, conn) -> bool:
        """Whether the budgets can take the rest of the body `conn`'s request announced (Content-Length; a chunked
        one says nothing ahead), making room as for an arriving body (`make_body_room`) while they cannot."""
        msg = conn.msg
        while msg.announced and not _fits(msg.body, msg.announced):
            if not self.make_body_room(conn):
                return False
        return True

    def _no_method(self, conn, data: bytes, had: int) -> _Refused:
        """llhttp stops at a method it does not know (or at bytes that are no method): a request line with a
        method it does not know is a 501, a TLS handshake gets a message saying so, anything else a 400. The
        request's first bytes are read from `data` when it began there, before any other request of it (otherwise
        only llhttp's words are left)."""
        msg = conn.msg
        start = data.lstrip(b"\r\n") if msg is not None and msg.fed_at == conn.fed and len(conn.pending) == had else b""
        if start[:1] == b"\x16":  # a TLS record of type handshake: https:// to a plain-HTTP port
            return _malformed(400, "Bad Request", "a TLS handshake on a plain-HTTP port: send http://, not https://")
        method = _METHOD.match(start)
        if method:
            return _method_not_implemented(method.group(1))
        return _malformed(400, "Bad Request", "Invalid method encountered")

    def _bad_request(self, exc, job: bool = False) -> _Refused:
        """A refusal by gunicorn's header policy (a repeated Host, conflicting scheme headers, an Expect other
        than 100-continue, ...), or a body's spool file that found its disk full: for a job upload (`job`) the
        app's answer to a full jobs directory (pipeline.jobs.files.disk_full: errors[0] JOBS_DISK_FULL)."""
        from gunicorn.http import errors

        if isinstance(exc, errors.ExpectationFailed):
            return _malformed(417, "Expectation Failed", str(exc))
        from pipeline.jobs.files import disk_full  # (here: the jobs layer pulls in the flows, not for the master)

        full = disk_full(exc) if isinstance(exc, OSError) and job else None
        if full is not None:  # the app's own answer, word for word
            return _Refused(full.http_status, "Service Unavailable", full.error_code, full.message,
                            "".join(f"{k}: {v}\r\n" for k, v in full.headers.items()), full.errors[0].code)
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):  # the body's spool: our disk is full
            return _Refused(503, "Service Unavailable", "SERVER_BUSY", "The disk that holds request bodies is full "
                            "(EINVOICE_JOBS_DIR, the data directory's spool); nothing was stored. Try again later.",
                            "Retry-After: 60\r\n")
        if not isinstance(exc, errors.ParseException):
            self.log.error("request parsing failed: %r", exc)
        return _malformed(400, "Bad Request", f"{type(exc).__name__}: {exc}")

    def _refuse(self, conn, refused: _Refused):
        msg = conn.msg
        said = msg.said if msg is not None else None
        if said is not None:  # its refusal was queued (its body dropped as it came, _DISCARD_LIMIT)
            if said.answered:  # and said: nothing more to answer (the client closed, or is too slow: 408), it closes
                self._close(conn)
                return
            if said in conn.pending:
                conn.pending.remove(said)
            if refused.status != 408:  # (what may still come is dropped, lingering: see _LINGER_IDLE)
                conn.unread = _DISCARD_LIMIT + _HEAD_LIMIT
            refused = said.refused  # said now, closing the connection
        self.log.warning("client %s: %s %s", conn.addr[0] if conn.addr else "?", refused.status, refused.message)
        if msg is not None:
            if refused.request[0] is None:  # (a queued refusal knows its request already)
                refused.request = msg.described()
            if msg.announced and refused.status != 408 and said is None:  # (and a pipelined head after it)
                conn.unread = min(msg.announced, self.limits[1]) + _HEAD_LIMIT
        conn.refusal = refused
        conn.drop_message()

    def _next(self, conn):
        """After a request arrived or an answer went out: queue the next request, or the refusal, or read on."""
        if conn.sock is None or conn.out:
            return
        if conn.pending:
            conn.deadline = _NEVER  # waiting for the worker: no client deadline runs
            if conn not in self.ready:
                self.ready.append(conn)
        elif conn.refusal is not None:
            conn.out += conn.refusal.answer()
            conn.close_after = True
            self._answer_by(conn, time.monotonic() + self.client_timeout)
            self._flush(conn)
        elif conn.eof:
            self._close(conn)
        else:
            self._events(conn)
            self._continue(conn)

    def _paced(self, conn, now: float) -> None:
        """An answer is taken at _FAIR_PACE or faster, with EINVOICE_CLIENT_TIMEOUT of slack: each byte the client
        took since last asked moves the deadline 1/_FAIR_PACE s on, at most to the client timeout from now (a client
        that read a little every few seconds held its answer and its spool file for good). Taken are the bytes out
        of the kernel's send queue, not those handed to it: the kernel takes megabytes at once and wakes the writer
        only once much of them has gone, so a client reading 64 KiB/s went without a byte handed for longer than the
        client timeout and was cut off mid-answer."""
        taken = self._taken(conn)
        if taken > conn.taken:
            conn.deadline = min(now + self.client_timeout, conn.deadline + (taken - conn.taken) / _FAIR_PACE)
            conn.taken = taken

    @staticmethod
    def _taken(conn) -> int:
        """The bytes of the connection's answers that left the kernel's send queue."""
        if conn.handed == conn.taken:
            return conn.taken
        try:
            queued = struct.unpack("i", fcntl.ioctl(conn.sock.fileno(), _OUTQ, b"\0\0\0\0"))[0]
        except (OSError, TypeError):  # (no TIOCOUTQ here: what was handed counts as taken)
            queued = 0
        return conn.handed - queued

    def _answer_by(self, conn, deadline: float) -> None:
        """A new answer's deadline: the bytes taken of the answers before it earn it nothing (`_paced`)."""
        conn.taken = self._taken(conn)
        conn.deadline = deadline

    def _reads_slowly(self, conn, now: float) -> bool:
        """An answer is being written and its client takes it more than _PACE_WINDOW s behind _FAIR_PACE (`_paced`)."""
        if not conn.out:
            return False
        self._paced(conn, now)
        return conn.deadline < now + self.client_timeout - _PACE_WINDOW

    def _expire(self, now: float):
        for conn in list(self.conns.values()):
            if conn.sock is None or now < conn.deadline:
                continue
            if conn.out:
                self._paced(conn, now)
                if now < conn.deadline:
                    continue
            if conn.msg is not None and not conn.out:
                self._refuse(conn, _Refused(408, "Request Timeout", "REQUEST_TIMEOUT", self._late(conn.msg, now)))
                conn.drop_pending()
                self._next(conn)
                conn.deadline = now + 1  # one more second to take the 408, then it goes
            else:  # idle keep-alive, a client that never reads its answer, or one that had its last chance
                self._close(conn)

    def _late(self, msg, now: float) -> str:
        """The 408's message: the limit the request broke."""
        if now < self.arrive_by(msg):
            return f"The request did not arrive within {self.client_timeout:g} s (EINVOICE_CLIENT_TIMEOUT)."
        if not msg.credited:  # (not a job upload's body: no time was earned)
            return (f"The request did not arrive within {self.request_deadline:g} s of its first byte "
                    "(EINVOICE_REQUEST_DEADLINE).")
        if now >= msg.started + self.job_deadline > msg.started + self.request_deadline:
            return (f"The job upload did not arrive within {self.job_deadline:g} s of its first byte "
                    "(EINVOICE_JOB_UPLOAD_DEADLINE); nothing was stored.")
        size = msg.body.size if msg.body is not None else 0
        return (f"The job upload fell below {self.job_min_rate:g} bytes/s (EINVOICE_JOB_UPLOAD_MIN_RATE, with "
                f"{self.request_deadline:g} s of slack, EINVOICE_REQUEST_DEADLINE): {size} bytes of its body in "
                f"{now - msg.started:.0f} s; nothing was stored.")

    def _flush(self, conn):
        if conn.sock is None:
            return
        while conn.out:
            try:
                sent = conn.out.send(conn.sock)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self._close(conn)
                return
            conn.handed += sent  # (the pace is counted by what the client takes: `_paced`)
        if conn.out:
            self._events(conn)
            return
        if conn.close_after:
            refusal = conn.refusal
            if not conn.eof and (refusal is None or refusal.status != 408) and (
                    refusal is not None and conn.unread or not self._quiet(conn)):
                # (unread bytes: requests pipelined past the last one answered, the rest of a body; closed under them,
                # the connection was reset and the client lost the answers it had not read yet, earlier ones too)
                conn.unread = conn.unread or _DISCARD_LIMIT + _HEAD_LIMIT
                self._linger(conn)
            else:
                self._close(conn, graceful=True)
            return
        if conn.msg is None and not conn.pending:
            conn.idle_at = time.monotonic()
            conn.deadline = conn.idle_at + self.cfg.keepalive
        self._next(conn)

    def _linger(self, conn):
        """The refusal is out: the worker's side closes and what the peer still sends is read and dropped (see
        _LINGER_IDLE). The connection counts as idle from now on (graceful shutdown, fair room)."""
        try:
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            self._close(conn)
            return
        now = time.monotonic()
        conn.refusal, conn.linger = None, conn.unread
        conn.linger_until = now + _LINGER_TIME
        conn.deadline = min(now + _LINGER_IDLE, conn.linger_until)
        self._events(conn)
        self._drain(conn)

    def _drain(self, conn):
        if conn.sock is None:  # made room for another earlier in this turn of the loop
            return
        try:
            data = conn.sock.recv(_RECV)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(conn)
            return
        conn.linger -= len(data)
        if not data or conn.linger <= 0:
            self._close(conn)
            return
        conn.deadline = min(time.monotonic() + _LINGER_IDLE, conn.linger_until)

    def _forget(self, conn):
        """Take the connection out of the loop's books; the caller closes its socket."""
        sock, conn.sock = conn.sock, None
        self.conns.pop(sock.fileno(), None)
        conn.drop_message()
        conn.drop_pending()
        conn.out.discard()
        self._ungroup(conn)
        if conn.mask:
            try:
                self.sel.unregister(sock)
            except (KeyError, ValueError):
                pass

    def _close(self, conn, graceful=False):
        sock = conn.sock
        if sock is None:
            return
        self._forget(conn)
        try:
            if graceful:
                sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        sock.close()

    # -- one request, as the sync worker runs it ---------------------------------------------------------------

    def _serve(self, conn):
        if conn.sock is None or not conn.pending:
            return
        req = conn.pending.popleft()
        conn.served += 1
        if conn.served >= self.keepalive_requests:
            req.force_close()
        if isinstance(req, _Said):
            self._say(conn, req)
            return
        sink = _Sink(self.bodies, lambda: self.make_body_room(conn))
        try:
            keep = self._options_server(req, sink) if req.uri == "*" else self._handle_request(req, sink, conn)
        except BaseException as exc:  # noqa: BLE001 - as the sync worker: an error page
            if isinstance(exc, SystemExit):
                raise
            if sink.empty and not sink.full:
                try:
                    self.handle_error(req, sink, conn.addr, exc)
                except Full:
                    pass
            else:  # an answer begun and cut off: nothing of it goes out
                sink.clear()
            if sink.full:  # said, not cut off (the app's access line has the status it meant to answer)
                sink.clear()
                refused = self.busy("request bodies and answers")
                refused.request = (req.method, req.path, None,
                                   next((v for n, v in req.headers if n == "X-REQUEST-ID"), None))
                conn.out += refused.answer()
            keep = False
        finally:
            if req.spool is not None:
                req.spool.release()
        conn.out.take(sink)
        if not keep:
            conn.close_after = True
            conn.drop_pending()
        self._answer_by(conn, time.monotonic() + self.client_timeout)
        self._flush(conn)

    def _say(self, conn, said: _Said) -> None:
        """A refusal queued in its turn: answered, and the connection goes on (its body, if still coming, is dropped
        as it comes); or closing it, when it must (its last request, a stopping worker), as any refusal does."""
        if said.must_close or not self.alive:
            conn.drop_pending()  # (what came after it is not run: the connection closes)
            if conn.msg is None or conn.msg.said is not said:
                conn.drop_message()
            conn.unread = _DISCARD_LIMIT + _HEAD_LIMIT  # (what still comes is dropped, lingering: _LINGER_IDLE)
            self._refuse(conn, said.refused)
            self._next(conn)
            return
        said.answered = True
        self.log.warning("client %s: %s %s (its body dropped, the connection goes on)",
                         conn.addr[0] if conn.addr else "?", said.refused.status, said.refused.message)
        conn.out += said.refused.answer(keep=True)
        self._answer_by(conn, time.monotonic() + self.client_timeout)
        self._flush(conn)

    def _options_server(self, req, sink) -> bool:
        """`OPTIONS *` (the only request a `*` target passes with): the server's own methods (RFC 9110 9.3.7), not the
        app's 404 for a resource named `*`. Whether the connection stays open, as for any answer."""
        began = time.monotonic()
        request_id = accept_or_new(next((v for n, v in req.headers if n == "X-REQUEST-ID"), None))
        keep = self.alive and not req.should_close()
        sink.sendall((f"HTTP/{req.version[0]}.{req.version[1]} 200 OK\r\nServer: gunicorn\r\nDate: {_http_date()}\r\n"
                      f"Connection: {'keep-alive' if keep else 'close'}\r\nAllow: {_SERVICE_METHODS}\r\n"
                      f"X-Request-Id: {request_id}\r\nContent-Length: 0\r\n\r\n").encode("latin-1"))
        front_line(req.method, "*", 200, time.monotonic() - began, request_id, front=True)
        return keep

    def _handle_request(self, req, sink, conn) -> bool:
        from gunicorn.http import wsgi

        environ, resp = {}, None
        try:
            self.cfg.pre_request(self, req)
            started = datetime.now()
            resp, environ = wsgi.create(req, sink, conn.addr, self.listener_name, self.cfg)
            if not self.alive or not self.cfg.keepalive:
                resp.force_close()
            self.nr += 1
            if self.max_requests and self.nr >= self.max_requests:
                self.log.info("Autorestarting worker after current request.")
                self.alive = False
                resp.force_close()
            self._run_begins(req)
            try:
                respiter = self.wsgi(environ, resp.start_response)
                try:
                    for item in respiter:
                        resp.write(item)
                    resp.close()
                finally:
                    self.log.access(resp, req, environ, datetime.now() - started)
                    if hasattr(respiter, "close"):
                        respiter.close()
            except SystemExit:  # gunicorn's SIGABRT at its timeout: the record stays for the master's access line
                raise
            except BaseException:
                self._run_ends()
                raise
            self._run_ends()
            return not resp.should_close()
        finally:
            try:
                self.cfg.post_request(self, req, environ, resp)
            except Exception:
                self.log.exception("Exception in post_request hook")


def killed_request(arbiter, worker) -> None:
    """In the master, once a worker has exited (gunicorn's child_exit): the access line of the request its app was
    running when it died, if any (`BufferedWorker.running`)."""
    running = getattr(worker, "running", None)
    if running is None:
        return
    size = int.from_bytes(running[:2], "big")
    if size:
        began, method, path, request_id = json.loads(running[2:2 + size])
        front_line(method, path, None, time.time() - began, request_id, workerKilled=True)
    running.close()


def _raise_open_files_limit() -> None:
    """Every connection is a file descriptor: each worker may hold EINVOICE_MAX_WORKER_CONNECTIONS of them, more
    than the usual soft limit of 1,024, so the soft limit goes up to the hard one (the workers inherit it)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else 65536, hard))
        except (ValueError, OSError) as exc:
            log.warning("open files limit stays %s: %s", soft, exc)


def run(host: str, port: int, workers: int, timeout: int = WORKER_TIMEOUT, graceful_timeout: int = 30,
        warm: bool = True) -> None:
    from gunicorn.app.base import BaseApplication

    class Service(BaseApplication):
        def load_config(self):
            settings = {
                # an IPv6 address in brackets: gunicorn read `:::8000` as host `::` with an empty port ("'' is not
                # a valid port number"), so `--host ::` did not start
                "bind": f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}",
                "workers": workers,
                "worker_class": "pipeline.cli.serve.BufferedWorker",
                "keepalive": 5,
                "timeout": timeout,
                "graceful_timeout": graceful_timeout,
                "accesslog": None,  # our middleware writes one JSON line per request
                "errorlog": "-",
                "loglevel": "info",
                "proc_name": "einvoice-pipeline",
                "preload_app": False,
                "control_socket_disable": True,  # several instances may run on one host
            }
            if warm:
                settings["post_worker_init"] = warm_worker
            settings["child_exit"] = killed_request
            for key, value in settings.items():
                self.cfg.set(key, value)

        def load(self):
            from pipeline.service.app import create_app  # lazy: the app (Saxon, WeasyPrint) loads in the workers

            return create_app()

    import gunicorn.util

    gunicorn.util.write_error = _json_protocol_error
    configure_logging()
    _raise_open_files_limit()
    Service().run()


def _serve(args) -> int:
    warm_specs()  # a wrong EINVOICE_WARM_SPECS stops the start, before any worker
    run(args.host, args.port, args.workers, graceful_timeout=args.graceful_timeout, warm=not args.no_warm)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("serve", help="run the HTTP service under gunicorn")
    # An empty variable (an env file's `EINVOICE_HOST=`) means unset, as for every other setting: an empty host
    # would bind every interface. The port stays a string until `serve` parses it, so that a bad EINVOICE_PORT is
    # serve's usage error, not a traceback of every other command.
    p.add_argument("--host", default=os.environ.get("EINVOICE_HOST") or "127.0.0.1",
                   help="address to listen on (default: EINVOICE_HOST or 127.0.0.1; 0.0.0.0 for every interface)")
    p.add_argument("--port", type=int, default=os.environ.get("EINVOICE_PORT") or "8000",
                   help="port (default: EINVOICE_PORT or 8000)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPU cores)")
    p.add_argument("--graceful-timeout", type=int, default=30,
                   help="seconds workers get to finish requests in flight on shutdown")
    p.add_argument("--no-warm", action="store_true", help="do not compile rule packs when a worker starts")
    p.set_defaults(func=_serve)
