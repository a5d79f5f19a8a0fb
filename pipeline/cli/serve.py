"""`pipeline serve [--host H] [--port P] [--workers N]`: the service under gunicorn.

Workers are processes (default: one per CPU core; the GIL is held during a Saxon transform, so threads
would not add throughput). The app is built in each worker after fork (no preload), so Saxon processors,
compiled stylesheets and database connections are never inherited across fork; each worker then compiles
the active rule packs' stylesheets before taking traffic. SIGTERM/SIGINT is a graceful shutdown: workers
finish the requests in flight (up to --graceful-timeout seconds).

Slow clients: the worker class is `BufferedWorker` (below), gunicorn's sync worker with the network side
turned into a readiness loop. Each worker reads every connection without blocking and runs the app (one
request at a time, exactly as the sync worker does) only on a request that has fully arrived, headers and
body; the response is buffered and written back by the same loop. A client that trickles its headers or
body, or reads its answer slowly, costs a socket and its buffered bytes, never a worker. Deadlines
(`EINVOICE_CLIENT_TIMEOUT`, default 10 s): the request head must arrive within it, and a connection that
sends (or reads) nothing for that long is dropped (408 when a request had begun). Bodies are framed here
(Content-Length or chunked) and capped at the upload limit (413 beyond it, without reading the rest).
Why not gthread or gevent: gthread still reads the request in a pool thread (a trickle holds a thread, and
threads would run Saxon transforms concurrently under the GIL); gevent is not installed, monkey-patches
psycopg's and Saxon's threads, and would give every greenlet its own database connection.
"""
from __future__ import annotations

import io
import json
import logging
import os
import re
import socket
import sys
import time
from datetime import datetime

from pipeline.errors import STATUS_TEXT
from pipeline.service.platform import shared
from pipeline.service.requestid import accept_or_new
from pipeline.settings import get_settings

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


def warm_worker(worker=None) -> None:
    """In each worker after fork: open the store connection, compile the active rule packs (the validation
    engine's `warm_up`), the generation stylesheets, the Factur-X profile rules and WeasyPrint with the PDF/A
    checker, so that no request pays for them (about 5-6 s)."""
    steps = [("key store", _open_store), ("rule packs", _call("pipeline.check.engine", "warm_up"))]
    steps += [("generation stylesheets", _call("pipeline.write.transform", "warm_up")),
              ("ZUGFeRD rendering and PDF checks", _call("pipeline.flows.generate_zugferd", "warm_up"))]
    for what, step in steps:
        try:
            step()
        except Exception as exc:  # a cold worker still serves; /readyz says whether it can
            log.warning("worker %s: %s not warmed: %s", os.getpid(), what, exc)


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

_HEAD_LIMIT = 64 * 1024  # request line + headers; gunicorn's own limits (4094 per line, 8190 per field) come first
_CHUNK_LINE_LIMIT = 4096
_BODY_SLACK = 64 * 1024  # multipart framing on top of the upload limit (pipeline.service.upload)
_READING = ("idle", "head", "body")
_EVENT_READ, _EVENT_WRITE = 1, 2  # selectors.EVENT_READ / EVENT_WRITE
_NOTIFY_EVERY = 0.5  # s between heartbeats to the arbiter (its timeout is minutes; a utime per loop is waste)
_EXPIRE_EVERY = 0.05  # s between deadline sweeps (deadlines are seconds; a sweep walks every connection)


class _Sink:
    """Stands in for the client socket while the app runs: gunicorn's response and error writers append here,
    and the worker's loop sends the bytes when the client can take them."""

    def __init__(self):
        self.data = bytearray()

    def sendall(self, data):
        self.data += data

    def send(self, data):
        if bytes(data) != b"HTTP/1.1 100 Continue\r\n\r\n":  # the loop already answered Expect: 100-continue
            self.data += data
        return len(data)

    def gettimeout(self):
        return 0.0

    def setblocking(self, flag):
        pass

    def settimeout(self, value):
        pass


class _Framing:
    """Where a request ends in the bytes received so far: after its head, or its Content-Length body, or its
    last chunk. Anything this cannot frame is handed to gunicorn's parser as it is (it answers 400/501)."""

    def __init__(self, body_limit: int):
        self.body_limit = body_limit

    @staticmethod
    def head_end(buf: bytearray, start: int) -> int:
        i = buf.find(b"\r\n\r\n", start)
        return -1 if i < 0 else i + 4

    def parse_head(self, head: bytes):
        """('length', n) | ('chunked', None) | ('raw', None) | ('too_large', n); plus Expect: 100-continue."""
        lengths, codings, expect = [], [], False
        for line in head.split(b"\r\n")[1:]:
            name, sep, value = line.partition(b":")
            if not sep:
                continue
            name = name.strip().lower()
            if name == b"content-length":
                lengths.append(value.strip())
            elif name == b"transfer-encoding":
                codings += [c.strip().lower() for c in value.split(b",")]
            elif name == b"expect":
                expect = value.strip().lower() == b"100-continue"
        if codings:
            if lengths or codings[-1] != b"chunked":
                return ("raw", None), False
            return ("chunked", None), expect
        if not lengths:
            return ("length", 0), False
        if len(set(lengths)) != 1 or not lengths[0].isdigit():
            return ("raw", None), False
        n = int(lengths[0])
        if n > self.body_limit:
            return ("too_large", n), False
        return ("length", n), expect

    def chunked_end(self, buf: bytearray, pos: int, total: int):
        """Walk complete chunks from `pos`: (end offset or None, new pos, body bytes so far, error)."""
        while True:
            eol = buf.find(b"\r\n", pos, pos + _CHUNK_LINE_LIMIT)
            if eol < 0:
                return None, pos, total, len(buf) - pos >= _CHUNK_LINE_LIMIT
            size_text = bytes(buf[pos:eol]).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                return None, pos, total, True
            if size == 0:
                if buf[eol + 2:eol + 4] == b"\r\n":
                    return eol + 4, pos, total, False
                trailers_end = buf.find(b"\r\n\r\n", eol)
                if trailers_end < 0:
                    return None, pos, total, len(buf) - eol > _HEAD_LIMIT
                return trailers_end + 4, pos, total, False
            if total + size > self.body_limit:
                return None, pos, total + size, False
            if len(buf) < eol + 2 + size + 2:
                return None, pos, total, False
            pos, total = eol + 2 + size + 2, total + size


class _Conn:
    __slots__ = ("sock", "addr", "buf", "state", "head_end", "framing", "pos", "total", "deadline", "out",
                 "out_pos", "close_after", "started", "continue_sent", "request_end", "last_io", "scanned", "mask")

    def __init__(self, sock, addr):
        self.sock, self.addr = sock, addr
        self.buf = bytearray()
        self.out = bytearray()
        self.out_pos = 0  # bytes of `out` already sent (sent bytes are dropped once all are out)
        self.close_after = False
        self.mask = 0  # the events the selector holds for this socket (0: not registered)
        self.reset()

    def reset(self):
        self.state = "idle"  # idle -> head -> body -> ready -> (app) -> writing -> idle | closed
        self.head_end = self.pos = self.total = self.scanned = 0
        self.framing = None
        self.started = None
        self.continue_sent = False
        self.request_end = 0


def _error_bytes(status: int, reason: str, code: str, message: str) -> bytes:
    request_id = accept_or_new(None)
    body = json.dumps({"requestId": request_id, "status": STATUS_TEXT.get(status, reason.lower().replace(" ", "_")),
                       "errorCode": code, "message": message, "errors": []}).encode()
    return (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
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


_REQUEST_LINE = re.compile(rb"([A-Z]{3,16}) (/(?!/)[!-~]*) HTTP/1\.([01])")  # origin-form: no "//", no spaces
_FIELD = re.compile(rb"([!#$%&'*+\-.^`|~0-9A-Za-z]+):[ \t]*([ -~\t]*?)[ \t]*")  # token name; printable ASCII
# Headers whose meaning depends on gunicorn's trust and proxy rules (forwarded_allow_ips, secure_scheme_headers,
# forwarder_headers, header_map) or on its framing: a head carrying one goes through gunicorn's own parser.
_GUNICORN_ONLY = {"TRANSFER-ENCODING", "EXPECT", "UPGRADE", "FORWARDED", "HTTP2-SETTINGS", "SCRIPT_NAME", "PATH_INFO"}


class _Head:
    """A request head in the shape gunicorn's `wsgi.create` and `Response` read from its own `Request`, for plain
    heads only (`_plain_head`); its parser costs ~20-35 us a request, this ~7 us. The body is in memory."""

    scheme = "http"
    fragment = ""
    proxy_protocol_info = None
    _expected_100_continue = False
    must_close = False

    def __init__(self, method, uri, version, headers, body):
        self.method, self.uri, self.version, self.headers, self.body = method, uri, version, headers, body
        self.path, _, self.query = uri.partition("?")

    def force_close(self):
        self.must_close = True

    def should_close(self):  # gunicorn's Message.should_close
        if self.must_close:
            return True
        for name, value in self.headers:
            if name == "CONNECTION":
                value = value.lower().strip(" \t")
                if value == "close":
                    return True
                if value == "keep-alive":
                    return False
                break
        return self.version <= (1, 0)


def _plain_head(head: bytes, body: bytes, limits: tuple) -> _Head | None:
    """A `_Head` when every line of the head is unremarkable (origin-form target, HTTP/1.0 or 1.1, token names
    without "_", printable ASCII values, each name once, within gunicorn's limits, no proxy or framing headers);
    None sends the request through gunicorn's parser, which also answers everything malformed. `limits`: gunicorn's
    limit_request_line, _fields, _field_size and the header names only it handles (`BufferedWorker.init_process`)."""
    line_limit, fields_limit, field_limit, gunicorn_only = limits
    lines = head[:-4].split(b"\r\n")
    if len(lines[0]) > line_limit or len(lines) - 1 > fields_limit:
        return None
    m = _REQUEST_LINE.fullmatch(lines[0])
    if m is None or b"#" in m.group(2):
        return None
    headers, seen = [], set()
    for line in lines[1:]:
        f = _FIELD.fullmatch(line)
        if f is None or len(line) > field_limit or b"_" in f.group(1):
            return None
        name = f.group(1).decode("ascii").upper()
        if name in seen or name in gunicorn_only or name.startswith("X-FORWARDED"):
            return None
        seen.add(name)
        headers.append((name, f.group(2).decode("ascii")))
    return _Head(m.group(1).decode("ascii"), m.group(2).decode("ascii"), (1, int(m.group(3))), headers,
                 io.BytesIO(body))


def _worker_base():
    from gunicorn.workers import base

    return base.Worker


class BufferedWorker(_worker_base()):
    """gunicorn's sync worker (one request at a time per process) behind a non-blocking reader and writer.

    The loop (a selector over the listening sockets, the signal pipe and every client) accepts connections,
    buffers what they send until a request is complete, queues complete requests in arrival order, runs them
    one by one through a parser (the worker's own for plain heads, gunicorn's for the rest) and gunicorn's
    `wsgi.create` and `Response`, and writes the buffered answers as the clients read them. Keep-alive and
    pipelining work; a worker holds at most `worker_connections` clients."""

    def init_process(self):
        settings = get_settings()
        self.client_timeout = float(settings.client_timeout)
        self.body_limit = settings.max_upload_bytes + _BODY_SLACK
        self.framing = _Framing(self.body_limit)
        import gunicorn.util

        gunicorn.util.http_date = _http_date  # this worker process only
        # gunicorn takes SCRIPT_NAME from the environment, and the proxy protocol prefixes the head: both its own
        self.plain_heads = (not os.environ.get("SCRIPT_NAME") and not self.cfg.is_ssl
                            and str(self.cfg.proxy_protocol).lower() in ("off", "false", "none"))
        cfg = self.cfg
        self.head_limits = (cfg.limit_request_line, cfg.limit_request_fields, cfg.limit_request_field_size,
                            _GUNICORN_ONLY.union(cfg.secure_scheme_headers, cfg.forwarder_headers))
        super().init_process()

    # -- loop --------------------------------------------------------------------------------------------------

    def run(self):
        import selectors

        self.sel = selectors.DefaultSelector()
        self.conns: dict[int, _Conn] = {}
        self.ready: list[_Conn] = []
        for s in self.sockets:
            s.setblocking(False)
            self.sel.register(s, selectors.EVENT_READ, ("listen", s))
        self.sel.register(self.PIPE[0], selectors.EVENT_READ, ("pipe", None))
        self.accepting = True
        self.listener_name = self.sockets[0].getsockname() if self.sockets else ("", 0)
        stop_by = None
        notified = expired = 0.0
        while True:
            now = time.monotonic()
            if now - notified >= _NOTIFY_EVERY:
                notified = now
                self.notify()
                if self.ppid != os.getppid():
                    self.log.info("Parent changed, shutting down: %s", self)
                    break
            if not self.alive:
                if stop_by is None:
                    stop_by = time.monotonic() + self.cfg.graceful_timeout
                    self._stop_accepting()
                self._close_idle()
                if not self.conns or time.monotonic() > stop_by:
                    break
            if self.ready:
                self._serve(self.ready.pop(0))
                timeout = 0
            else:
                timeout = 1.0
            try:
                events = self.sel.select(timeout)
            except InterruptedError:
                events = []
            for key, mask in events:
                kind, obj = key.data
                if kind == "listen":
                    self._accept(obj)
                elif kind == "pipe":
                    try:
                        os.read(self.PIPE[0], 4096)
                    except OSError:
                        pass
                else:
                    if mask & _EVENT_READ:
                        if obj.state in _READING:
                            self._read(obj)
                        else:  # a request of its own is queued or being answered: stop watching its input now
                            self._events(obj)
                    if mask & _EVENT_WRITE and obj.sock is not None:
                        self._flush(obj)
            now = time.monotonic()
            if now - expired >= _EXPIRE_EVERY:
                expired = now
                self._expire()
        for conn in list(self.conns.values()):
            self._close(conn)

    def _stop_accepting(self):
        if self.accepting:
            for s in self.sockets:
                try:
                    self.sel.unregister(s)
                except (KeyError, ValueError):
                    pass
            self.accepting = False

    def _close_idle(self):
        for conn in list(self.conns.values()):
            if conn.state == "idle" and not conn.buf and not conn.out:
                self._close(conn)

    def _accept(self, listener):
        import selectors

        if len(self.conns) >= self.cfg.worker_connections:
            return  # the kernel's backlog (or another worker) holds it
        try:
            sock, addr = listener.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return
        sock.setblocking(False)
        conn = _Conn(sock, addr)
        conn.deadline = time.monotonic() + self.client_timeout
        conn.last_io = time.monotonic()
        self.conns[sock.fileno()] = conn
        self.sel.register(sock, selectors.EVENT_READ, ("conn", conn))
        conn.mask = selectors.EVENT_READ
        self._read(conn)  # the request usually arrived with the connection

    def _events(self, conn):
        """Tell the selector what the connection waits for, only when that changed: a keep-alive request read
        and answered at once ends where it began (reading), with no epoll_ctl. A connection whose request is
        queued keeps reading registered until an event says there is input (see `run`): usually none comes."""
        if conn.sock is None:
            return
        mask = (_EVENT_READ if conn.state in _READING else 0) | (_EVENT_WRITE if conn.out else 0)
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
        if conn.sock is None or conn.state not in _READING:
            return
        try:
            data = conn.sock.recv(256 * 1024)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(conn)
            return
        if not data:
            self._close(conn)  # the client went away before its request was complete
            return
        conn.buf += data
        conn.last_io = time.monotonic()
        self._advance(conn)

    def _advance(self, conn):
        """Move a connection on as far as the bytes it has sent allow."""
        now = time.monotonic()
        if conn.state == "idle":
            if not conn.buf:
                return
            conn.state, conn.started = "head", now
            conn.deadline = now + self.client_timeout  # the whole head within the client timeout
        if conn.state == "head":
            end = _Framing.head_end(conn.buf, max(0, conn.scanned - 3))  # resume the search where it stopped
            conn.scanned = len(conn.buf)
            if end < 0:
                if len(conn.buf) > _HEAD_LIMIT:
                    self._reject(conn, 431, "Request Header Fields Too Large", "MALFORMED_HTTP_REQUEST",
                                 "Request Header Fields Too Large: the request head exceeds 64 KiB.")
                return
            conn.head_end = end
            (kind, n), expect = self.framing.parse_head(bytes(conn.buf[:end]))
            if kind == "too_large":
                self._too_large(conn)
                return
            conn.framing = (kind, n)
            conn.pos = end
            conn.state = "body"
            conn.deadline = now + self.client_timeout  # from now on: idle timeout between reads
            if expect and not conn.continue_sent and len(conn.buf) == end:
                conn.continue_sent = True
                conn.out += b"HTTP/1.1 100 Continue\r\n\r\n"
                self._flush(conn)
        if conn.state == "body":
            kind, n = conn.framing
            if kind == "raw":
                conn.request_end = len(conn.buf)
            elif kind == "length":
                if len(conn.buf) - conn.head_end < n:
                    conn.deadline = now + self.client_timeout
                    return
                conn.request_end = conn.head_end + n
            else:
                end, conn.pos, conn.total, error = self.framing.chunked_end(conn.buf, conn.pos, conn.total)
                if conn.total > self.body_limit:
                    self._too_large(conn)
                    return
                if error:
                    conn.request_end = len(conn.buf)
                elif end is None:
                    conn.deadline = now + self.client_timeout
                    return
                else:
                    conn.request_end = end
            conn.state = "ready"
            self.ready.append(conn)

    def _reject(self, conn, status, reason, code, message):
        self.log.warning("client %s: %s %s", conn.addr[0] if conn.addr else "?", status, message)
        conn.out += _error_bytes(status, reason, code, message)
        conn.close_after = True
        conn.state = "writing"
        conn.buf.clear()
        self._flush(conn)

    def _too_large(self, conn):
        limit = self.body_limit - _BODY_SLACK
        self._reject(conn, 413, "Payload Too Large", "PAYLOAD_TOO_LARGE",
                     f"The request body exceeds the limit of {limit} bytes.")

    def _expire(self):
        now = time.monotonic()
        for conn in list(self.conns.values()):
            if conn.sock is None or conn.state == "ready" or now < conn.deadline:
                continue
            if conn.state == "head" or (conn.state == "body" and conn.buf):
                self._reject(conn, 408, "Request Timeout", "REQUEST_TIMEOUT",
                             f"The request did not arrive within {self.client_timeout:g} s.")
                conn.deadline = now + 1  # one more second to take the 408, then it goes
                conn.state = "expired"
            else:  # idle keep-alive, a client that never reads its answer, or one that had its last chance
                self._close(conn)

    def _flush(self, conn):
        if conn.sock is None:
            return
        while conn.out_pos < len(conn.out):
            try:
                with memoryview(conn.out) as view:
                    n = conn.sock.send(view[conn.out_pos:])
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self._close(conn)
                return
            conn.out_pos += n
            conn.deadline = time.monotonic() + self.client_timeout
        if conn.out_pos < len(conn.out):
            self._events(conn)
            return
        conn.out.clear()
        conn.out_pos = 0
        if conn.close_after:
            self._close(conn, graceful=True)
            return
        if conn.state == "writing":
            del conn.buf[:conn.request_end]
            conn.reset()
            conn.deadline = time.monotonic() + self.cfg.keepalive
            self._events(conn)
            if conn.buf:
                self._advance(conn)  # a pipelined request is already here
        else:
            self._events(conn)

    def _close(self, conn, graceful=False):
        sock, conn.sock = conn.sock, None
        if sock is None:
            return
        self.conns.pop(sock.fileno(), None)
        if conn.mask:
            try:
                self.sel.unregister(sock)
            except (KeyError, ValueError):
                pass
        if conn in self.ready:
            self.ready.remove(conn)
        try:
            if graceful:
                sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        sock.close()

    # -- one request, as the sync worker runs it ---------------------------------------------------------------

    def _serve(self, conn):
        from gunicorn import http

        if conn.sock is None:
            return
        sink = _Sink()
        length_framed = conn.framing is not None and conn.framing[0] == "length"
        # A Content-Length body is already here, whole: the app reads it from memory (gunicorn's reader copies
        # its buffer on every read: ~0.45 ms for a 200 KB upload), and a plain head needs no gunicorn parser.
        request = bytes(conn.buf[:conn.head_end if length_framed else conn.request_end])
        keep = False
        req = None
        try:
            if length_framed:
                body = bytes(conn.buf[conn.head_end:conn.request_end])
                req = _plain_head(request, body, self.head_limits) if self.plain_heads else None
                if req is None:
                    req = next(http.get_parser(self.cfg, iter([request]), conn.addr))
                    req.body = io.BytesIO(body)
            else:
                req = next(http.get_parser(self.cfg, iter([request]), conn.addr))
            keep = self._handle_request(req, sink, conn)
        except StopIteration:
            keep = False
        except http.errors.NoMoreData:
            keep = False  # the framing above and gunicorn's parser disagree: close, as the sync worker would
        except BaseException as exc:  # noqa: BLE001 - as the sync worker: an error page for parse errors
            if isinstance(exc, SystemExit):
                raise
            if not sink.data:
                self.handle_error(req, sink, conn.addr, exc)
            else:
                sink.data.clear()
            keep = False
        conn.out += sink.data
        conn.close_after = not keep
        conn.state = "writing"
        conn.deadline = time.monotonic() + self.client_timeout
        self._flush(conn)

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
            respiter = self.wsgi(environ, resp.start_response)
            try:
                for item in respiter:
                    resp.write(item)
                resp.close()
            finally:
                self.log.access(resp, req, environ, datetime.now() - started)
                if hasattr(respiter, "close"):
                    respiter.close()
            return not resp.should_close()
        finally:
            try:
                self.cfg.post_request(self, req, environ, resp)
            except Exception:
                self.log.exception("Exception in post_request hook")


def run(host: str, port: int, workers: int, timeout: int = 120, graceful_timeout: int = 30,
        warm: bool = True) -> None:
    from gunicorn.app.base import BaseApplication

    class Service(BaseApplication):
        def load_config(self):
            settings = {
                "bind": f"{host}:{port}",
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
            for key, value in settings.items():
                self.cfg.set(key, value)

        def load(self):
            from pipeline.service.app import create_app  # lazy: the app (Saxon, WeasyPrint) loads in the workers

            return create_app()

    import gunicorn.util

    gunicorn.util.write_error = _json_protocol_error
    configure_logging()
    Service().run()


def _serve(args) -> int:
    run(args.host, args.port, args.workers, graceful_timeout=args.graceful_timeout, warm=not args.no_warm)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("serve", help="run the HTTP service under gunicorn")
    p.add_argument("--host", default=os.environ.get("EINVOICE_HOST", "127.0.0.1"),
                   help="address to listen on (default: EINVOICE_HOST or 127.0.0.1; 0.0.0.0 for every interface)")
    p.add_argument("--port", type=int, default=int(os.environ.get("EINVOICE_PORT", "8000")),
                   help="port (default: EINVOICE_PORT or 8000)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPU cores)")
    p.add_argument("--graceful-timeout", type=int, default=30,
                   help="seconds workers get to finish requests in flight on shutdown")
    p.add_argument("--no-warm", action="store_true", help="do not compile rule packs when a worker starts")
    p.set_defaults(func=_serve)
