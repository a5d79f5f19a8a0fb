"""Issue 22 against a started `pipeline serve`: the five attacks it names, each as a regression test, and the limits
a public endpoint needs (whole-request deadline, connections per client address and per worker, requests per
keep-alive connection)."""
from __future__ import annotations

import io
import json
import re
import socket
import threading
import time
import zipfile

import pytest
import requests

from conftest import CORPUS
from test_platform_helpers import REPO, Server, SlowConnections, cli, worker_pids
from test_serve import _multipart, _ubl_sample

FIXTURE = REPO / "fixtures" / "xrechnung-spec-id.json"
ZUGFERD_SAMPLE = CORPUS / "horstoeko-zugferd" / "assets" / "pdf_zf_en16931_1.pdf"


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    data = tmp_path_factory.mktemp("front")
    env = {"EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_RATE_LIMIT": "100000/min"}
    token = cli(env, "keys", "create", "--name", "front", "--env", "test", "--credits", "1000").stdout.strip()
    server = Server(env, workers=2, warm=True, log_path=data / "serve.log")
    yield server, token
    server.stop()


def _timed_get(url: str, path: str = "/healthz") -> float:
    started = time.perf_counter()
    r = requests.get(url + path, timeout=5)
    assert r.status_code == 200, r.text
    return time.perf_counter() - started


def _validate_once(server, token) -> float:
    """Seconds a validation took beyond the app's own time (the front's share: framing, queueing, accepting)."""
    started = time.perf_counter()
    r = requests.post(server.url + "/v1/invoice/xrechnung/validate", files=_multipart(_ubl_sample()),
                      headers={"Authorization": f"Bearer {token}"}, timeout=5)
    took = time.perf_counter() - started
    assert r.status_code == 200, r.text
    return took - server.app_seconds(r.headers["X-Request-Id"])


# A route that answers POST and reads its body before it answers (401 without a key): framing and slow bodies are
# tried on it. A route that does not answer POST (/healthz) is a 405 before its body is read (test_http_methods.py)
BODY_PATH = b"/v1/invoice/parse"


def _read_all(sock: socket.socket, timeout: float = 5) -> bytes:
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    return data


def _error_shape(answer: bytes, status: int) -> dict:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert int(head.split()[1]) == status, answer[:300]
    parsed = json.loads(body)
    assert set(parsed) == {"requestId", "status", "errorCode", "message", "errors"}
    assert parsed["requestId"].encode() in head
    return parsed


# -- 1: chunk sizes that int(size, 16) took ----------------------------------------------------------------------

BAD_SIZES = [b"-6", b"0x3", b"+3", b"1_0", b" 3"]


def test_1_bad_chunk_sizes_get_400_and_healthz_answers_within_1s(node):
    server, _ = node
    socks = []
    for size in BAD_SIZES:
        for _ in range(2):  # two such connections took the service down
            s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            s.sendall(b"POST " + BODY_PATH + b" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + size +
                      b"\r\nabcdef\r\n")  # and the connection stays open, its terminating chunk never sent
            socks.append((size, s))
    try:
        took = [_timed_get(server.url) for _ in range(10)]
        assert max(took) < 1, took
        for size, s in socks:
            parsed = _error_shape(_read_all(s), 400)
            assert parsed["errorCode"] == "MALFORMED_HTTP_REQUEST" and "chunk size" in parsed["message"], size
    finally:
        for _, s in socks:
            s.close()


# -- 2: a malformed chunk size is the client's error ---------------------------------------------------------------

def test_2_a_bad_chunk_size_is_400_on_generation_validation_and_parse(node):
    server, token = node
    for path, media in [("/v1/invoice/xrechnung", "application/json"),
                        ("/v1/invoice/xrechnung/validate", "multipart/form-data; boundary=b"),
                        ("/v1/invoice/parse", "multipart/form-data; boundary=b")]:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
            s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: {media}\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\nzz\r\n".encode())
            parsed = _error_shape(_read_all(s), 400)
        assert parsed["status"] == "bad_request" and parsed["errorCode"] == "MALFORMED_HTTP_REQUEST", path
    # the client's request id, once its headers were read, as the app would answer it (a new one was minted)
    for head, status in ((b"Content-Length: 99999999999\r\n\r\n", 413), (b"Expect: foo\r\n\r\n", 417)):
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
            s.sendall(b"POST /v1/invoice/xrechnung HTTP/1.1\r\nHost: x\r\nX-Request-Id: mine-front\r\n" + head)
            parsed = _error_shape(_read_all(s), status)
        assert parsed["requestId"] == "mine-front", parsed


# -- 3: slow bodies from one address --------------------------------------------------------------------------------

# `n` connections from one address, each with a request head announcing a body it then sends one byte every 3 s
_TRICKLE_HEAD = (b"POST /v1/invoice/xrechnung/validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/xml\r\n"
                 b"Content-Length: 100000\r\n\r\n")


@pytest.mark.parametrize("source", ["127.0.0.2", "127.0.0.1"])  # a client; a trusted proxy's address
def test_3_healthz_and_a_validation_answer_within_1s_under_2100_trickling_connections(node, source):
    """From a client address the cap per address acts (64 per worker); from a trusted proxy's address
    (forwarded_allow_ips, here loopback) the worker's cap (1,000). Either way new connections are served."""
    server, token = node
    flood = SlowConnections(server.port, [source] * 2100, b"x" * 100_000, _TRICKLE_HEAD, interval=3.0)
    try:
        time.sleep(4)  # the whole flood is open and has begun to trickle
        took = []
        ends = time.monotonic() + 8
        while time.monotonic() < ends:
            took.append(_timed_get(server.url))
            took.append(_validate_once(server, token))
        assert max(took) < 1, sorted(took)[-5:]
        assert flood.opened >= 2100
    finally:
        flood.close()
    assert _timed_get(server.url) < 1


# -- 4: a batch that would outlive the worker -----------------------------------------------------------------------

def _pdf_with_files(count: int) -> bytes:
    """The horstoeko EN 16931 sample with `count` more embedded files (one flat name tree, object streams)."""
    import pikepdf

    pdf = pikepdf.open(io.BytesIO(ZUGFERD_SAMPLE.read_bytes()))
    names = pikepdf.Array()
    for name, spec in pikepdf.NameTree(pdf.Root.Names.EmbeddedFiles).items():
        names.extend([pikepdf.String(name), spec])
    for i in range(count):
        stream = pdf.make_stream(b"file %d" % i)
        stream.Type = pikepdf.Name.EmbeddedFile
        name = pikepdf.String(f"extra-{i:05}.txt")
        names.extend([name, pdf.make_indirect(pikepdf.Dictionary(
            Type=pikepdf.Name.Filespec, F=name, UF=name, EF=pikepdf.Dictionary(F=stream)))])
    pdf.Root.Names.EmbeddedFiles = pdf.make_indirect(pikepdf.Dictionary(Names=names))
    out = io.BytesIO()
    pdf.save(out, object_stream_mode=pikepdf.ObjectStreamMode.generate)
    return out.getvalue()


@pytest.mark.slow
def test_4_a_zugferd_batch_of_60_pdfs_with_5000_files_each_answers_before_the_worker_timeout(node):
    """The defaults: a 60 s budget (EINVOICE_REQUEST_BUDGET) against gunicorn's 120 s worker timeout. Each PDF
    takes ~30-40 s (the PDF/A walk over 5,000 file specifications), so the batch would take ~40 min."""
    server, token = node
    pdf = _pdf_with_files(5000)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(60):
            z.writestr(f"invoice-{i:02}.pdf", pdf)
    workers_before = worker_pids(server)
    answer = {}

    def batch():
        started = time.monotonic()
        answer["response"] = requests.post(
            server.url + "/v1/invoice/zugferd/validate/batch", headers={"Authorization": f"Bearer {token}"},
            files={"file": ("month.zip", archive.getvalue(), "application/zip")}, timeout=150)
        answer["took"] = time.monotonic() - started

    runner = threading.Thread(target=batch)
    runner.start()
    took = []
    while runner.is_alive():  # the other worker answers meanwhile
        took.append(_timed_get(server.url))
        time.sleep(0.5)
    runner.join()
    r = answer["response"]
    assert r.status_code == 200, r.text[:500]
    assert answer["took"] < 100, answer["took"]  # budget 60 s + at most one document's bounded check
    results = r.json()["results"]
    assert len(results) == 60 and "report" in results[0]
    left = [x for x in results if "error" in x]
    assert left and all(x["error"]["code"] == "TIME_BUDGET" and "/v1/jobs" in x["error"]["message"] for x in left)
    assert results[-1]["error"]["code"] == "TIME_BUDGET"
    assert r.json()["summary"]["errors"] == len(left)
    assert max(took) < 1, sorted(took)[-3:]
    assert worker_pids(server) == workers_before  # no worker was lost
    assert "WORKER TIMEOUT" not in server.log_path.read_text()
    for _ in range(4):
        _validate_once(server, token)


# -- 5: security headers on every HTML answer -----------------------------------------------------------------------

def _assert_security_headers(r):
    csp = r.headers["Content-Security-Policy"]
    directives = dict((d.strip().split(" ", 1) + [""])[:2] for d in csp.split(";"))
    script = directives.get("script-src", directives["default-src"])
    assert "'unsafe-inline'" not in script and "'unsafe-eval'" not in script, csp
    assert directives["frame-ancestors"] == "'none'" and r.headers["X-Frame-Options"] == "DENY"
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert r.headers["Referrer-Policy"] == "no-referrer"


def test_5_html_answers_carry_the_security_headers(node):
    server, token = node
    auth = {"Authorization": f"Bearer {token}", "Accept": "text/html"}
    report = requests.post(server.url + "/v1/invoice/xrechnung/validate", files=_multipart(_ubl_sample()),
                           headers=auth, timeout=30)
    rendered = requests.post(server.url + "/v1/invoice/render", headers=auth, timeout=30,
                             files={"file": ("invoice.xml", _ubl_sample(), "application/xml")})
    page = requests.get(server.url + "/", timeout=10)
    for r in (report, rendered, page):
        assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/html"), r.text[:300]
        _assert_security_headers(r)
    assert "<style" in report.text and "<script" not in report.text  # the report's styles are allowed inline
    assert "style-src 'unsafe-inline'" in report.headers["Content-Security-Policy"]


# -- the limits -----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tight(tmp_path_factory):
    """One worker with small limits, to see each act."""
    data = tmp_path_factory.mktemp("tight")
    env = {"EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_CLIENT_TIMEOUT": "10", "EINVOICE_REQUEST_DEADLINE": "3", "EINVOICE_KEEPALIVE_REQUESTS": "3",
           "EINVOICE_MAX_CLIENT_CONNECTIONS": "5", "EINVOICE_MAX_WORKER_CONNECTIONS": "8"}
    server = Server(env, workers=1, warm=False, log_path=data / "serve.log")
    yield server
    server.stop()


def test_a_request_that_keeps_trickling_gets_408_at_the_whole_request_deadline(tight):
    with socket.create_connection(("127.0.0.1", tight.port), timeout=10) as s:
        started = time.monotonic()
        s.sendall(b"POST " + BODY_PATH + b" HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
        try:
            while time.monotonic() - started < 8:  # a byte every 0.5 s: never idle for the 10 s client timeout
                s.send(b"x")
                time.sleep(0.5)
        except OSError:
            pass
        parsed = _error_shape(_read_all(s), 408)
        assert 2.5 < time.monotonic() - started < 6
    assert parsed["errorCode"] == "REQUEST_TIMEOUT" and "EINVOICE_REQUEST_DEADLINE" in parsed["message"]


def test_a_keep_alive_connection_carries_at_most_the_configured_requests(tight):
    with socket.create_connection(("127.0.0.1", tight.port), timeout=10) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" * 5)
        answers = _read_all(s)
    assert answers.count(b"HTTP/1.1 200 OK") == 3
    assert [c for c in re.findall(rb"Connection: (\S+)", answers)] == [b"keep-alive", b"keep-alive", b"close"]


def _from(source: str, port: int) -> socket.socket:
    s = socket.socket()
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    return s


def _waiting_bodies(port: int, sources: list[str]) -> list[socket.socket]:
    """A connection from each of `sources` whose request announces a body it never sends."""
    slow = []
    for source in sources:
        s = _from(source, port)
        s.sendall(b"POST " + BODY_PATH + b" HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
        slow.append(s)
    time.sleep(0.3)
    return slow


def test_connections_past_the_cap_of_one_address_push_out_its_oldest_slow_one(tight):
    slow = _waiting_bodies(tight.port, ["127.0.0.2"] * 5)
    try:
        with _from("127.0.0.2", tight.port) as sixth:  # a sixth connection from the same address is served
            sixth.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert _read_all(sixth, 2).startswith(b"HTTP/1.1 200 OK")
        parsed = _error_shape(_read_all(slow[0], 2), 503)  # and the oldest slow one made room
        assert parsed["errorCode"] == "TOO_MANY_CONNECTIONS"
    finally:
        for s in slow:
            s.close()


def test_connections_past_the_workers_cap_push_out_a_slow_one_of_the_address_holding_the_most(tight):
    """Eight slow connections, five from one address and three from another, fill the worker (its cap: 8): a ninth
    from a third address is served, and the oldest slow connection of the address holding five made room."""
    slow = _waiting_bodies(tight.port, ["127.0.0.1"] * 3 + ["127.0.0.2"] * 5)
    try:
        with _from("127.0.0.3", tight.port) as s9:
            s9.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert _read_all(s9, 2).startswith(b"HTTP/1.1 200 OK")
        assert _error_shape(_read_all(slow[3], 2), 503)["errorCode"] == "TOO_MANY_CONNECTIONS"
        _still_waiting(slow[:3] + slow[4:])  # the others are still open and waiting
    finally:
        for s in slow:
            s.close()


def _still_waiting(sockets) -> None:
    """Each connection is open and has been answered nothing."""
    for s in sockets:
        s.setblocking(False)
        with pytest.raises(BlockingIOError):
            s.recv(1)


def test_at_the_workers_cap_no_address_holding_a_handful_is_pushed_out(tight):
    """Four slow connections from each of two addresses (a handful each) fill the worker: a ninth is turned away
    with 503 and none of the eight is closed."""
    slow = _waiting_bodies(tight.port, ["127.0.0.1"] * 4 + ["127.0.0.2"] * 4)
    try:
        with _from("127.0.0.3", tight.port) as s9:
            s9.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert _error_shape(_read_all(s9, 2), 503)["errorCode"] == "TOO_MANY_CONNECTIONS"
        _still_waiting(slow)
    finally:
        for s in slow:
            s.close()


def test_the_time_budget_stops_a_batch_between_documents(monkeypatch):
    """In process: a spent budget leaves the remaining documents of a batch TIME_BUDGET, and the answer holds those
    done before."""
    from pipeline import budget
    from pipeline.flows import validate_batch as vb

    sample = _ubl_sample()
    members = [vb.Member(f"{i}.xml", sample) for i in range(4)]
    calls = []
    real = vb.validate_document

    def one(*args, **kw):
        calls.append(1)
        outcome = real(*args, **kw)
        if len(calls) == 2:
            monkeypatch.setattr(time, "monotonic", lambda: float("inf"))  # the budget is spent after the second
        return outcome

    monkeypatch.setattr(vb, "validate_document", one)
    token = budget.start(60)
    try:
        out = vb.validate_batch(members, "xrechnung")
    finally:
        budget.end(token)
    assert [("report" in r, r.get("error", {}).get("code")) for r in out["results"]] == [
        (True, None), (True, None), (False, "TIME_BUDGET"), (False, "TIME_BUDGET")]
    assert out["summary"]["errors"] == 2 and len(calls) == 2


# -- framing a hostile client may try (RFC 9112): each refused in our error shape before any body, then closed ---------

def _answer(port: int, raw: bytes, timeout: float = 3, half_close: bool = False) -> tuple[bytes, bool]:
    """What the server says to `raw` (after which the client shuts its side if `half_close`) and whether it closed
    the connection (False: it was still open at `timeout`)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(raw)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        data, closed = b"", False
        try:
            while chunk := s.recv(65536):
                data += chunk
            closed = True
        except ConnectionResetError:
            closed = True
        except socket.timeout:
            pass
    return data, closed


def _statuses(data: bytes) -> list[bytes]:
    return re.findall(rb"HTTP/1\.[01] (\d{3}) ", data)  # (a status line, not a message naming a version)


_POST = b"POST /v1/invoice/xrechnung HTTP/1.1\r\nHost: x\r\nX-Request-Id: framing-1\r\n"
_NEXT = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"  # pipelined after the refused one: never answered


@pytest.mark.parametrize("codings", [b"gzip, chunked", b"gzip\r\nTransfer-Encoding: chunked", b"identity", b"gzip",
                                     b"deflate, chunked", b"chunked;q=1"])
def test_a_transfer_coding_other_than_chunked_is_501_before_its_body_is_read(tight, codings):
    """llhttp frames `gzip, chunked` as chunked: the app was handed the gzipped bytes as the body (and the connection
    kept), and `identity` or `gzip` alone were a 400 naming llhttp's error. RFC 9112 6.1: 501 for a coding not
    understood, and the framing cannot be trusted, so the connection closes."""
    started = time.monotonic()
    gzipped = b"3\r\n\x1f\x8b\x08\r\n0\r\n\r\n"
    data, closed = _answer(tight.port, _POST + b"Transfer-Encoding: " + codings + b"\r\n\r\n" + gzipped + _NEXT)
    parsed = _error_shape(data, 501)
    assert parsed["errorCode"] == "TRANSFER_ENCODING_NOT_IMPLEMENTED" and parsed["status"] == "not_implemented"
    assert parsed["requestId"] == "framing-1" and b"Connection: close" in data
    assert closed and len(_statuses(data)) == 1 and time.monotonic() - started < 2
    line = [json.loads(x) for x in tight.log_path.read_text().splitlines()
            if x.startswith("{") and '"framing-1"' in x][-1]
    assert line["status"] == 501 and line["front"] is True  # answered by the front: the app never saw it


@pytest.mark.parametrize("codings", [b"chunked, gzip", b"chunked, chunked", b"chunked\r\nTransfer-Encoding: gzip"])
def test_chunked_not_last_or_twice_is_400(tight, codings):
    data, closed = _answer(tight.port, _POST + b"Transfer-Encoding: " + codings + b"\r\n\r\n0\r\n\r\n" + _NEXT)
    assert _error_shape(data, 400)["errorCode"] == "MALFORMED_HTTP_REQUEST"
    assert closed and len(_statuses(data)) == 1


def test_plain_chunked_in_any_case_and_with_empty_list_elements_is_still_read(tight):
    for codings in (b"chunked", b"Chunked", b", chunked"):
        last = _NEXT.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
        data, _ = _answer(tight.port, b"POST " + BODY_PATH + b" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + codings
                          + b"\r\n\r\n3\r\nabc\r\n0\r\n\r\n" + last)
        assert _statuses(data) == [b"401", b"200"], (codings, data[:300])


def test_transfer_encoding_in_http_1_0_is_400_and_the_connection_closes(tight):
    """RFC 9112 6.1: a 1.0 message with Transfer-Encoding has faulty framing and the connection MUST close; it was
    read as chunked and, with `Connection: keep-alive`, the next request on it was served."""
    data, closed = _answer(tight.port, b"POST /healthz HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n"
                           b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /healthz HTTP/1.0\r\n\r\n")
    assert "HTTP/1.0" in _error_shape(data, 400)["message"]
    assert closed and len(_statuses(data)) == 1


def test_an_http_1_1_request_without_host_is_400(tight):
    """RFC 9112 3.2: MUST be 400 (it was served); HTTP/1.0 needs none."""
    data, closed = _answer(tight.port, b"GET /healthz HTTP/1.1\r\nX-Request-Id: no-host\r\n\r\n" + _NEXT)
    parsed = _error_shape(data, 400)
    assert "without Host" in parsed["message"] and parsed["requestId"] == "no-host"
    assert closed and len(_statuses(data)) == 1
    data, _ = _answer(tight.port, b"GET /healthz HTTP/1.0\r\n\r\n")
    assert data.startswith(b"HTTP/1.0 200 ")


def test_an_expectation_other_than_100_continue_is_417_before_the_body(tight):
    """Refused by gunicorn's header policy only once the body was in, so a client waiting for its 100 heard nothing
    until the 408."""
    started = time.monotonic()
    data, closed = _answer(tight.port, _POST + b"Expect: 100-continue, x-more\r\nContent-Length: 1000\r\n\r\n")
    assert _error_shape(data, 417)["requestId"] == "framing-1"
    assert closed and time.monotonic() - started < 2


SMUGGLING = {  # each refused by llhttp or our checks; a regression table
    "CL and TE": b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "TE and CL": b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
    "CL and TE gzip": b"Content-Length: 5\r\nTransfer-Encoding: gzip\r\n\r\nabcde",
    "two CLs": b"Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
    "a CL list": b"Content-Length: 3, 3\r\n\r\nabc",
    "a signed CL": b"Content-Length: +3\r\n\r\nabc",
    "a CL overflowing": b"Content-Length: 99999999999999999999999\r\n\r\nabc",
    "a folded TE": b"Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n",
    "obs-fold": b"X-A: a\r\n b\r\n\r\n",
    "a bare CR": b"X-A: a\rb\r\n\r\n",
    "a bare LF": b"X-A: a\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "a NUL": b"X-A: a\x00b\r\n\r\n",
    "a space before the colon": b"Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
    "a vertical tab": b"Transfer-Encoding: \x0bchunked\r\n\r\n0\r\n\r\n",
    "a trailer CL": b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nContent-Length: 9\r\n\r\n",
    "a chunk longer than its size": b"Transfer-Encoding: chunked\r\n\r\n3\r\nabcGET\r\n0\r\n\r\n",
    "101 fields": b"".join(b"X-%d: v\r\n" % i for i in range(101)) + b"\r\n",
}


@pytest.mark.parametrize("name", SMUGGLING)
def test_smuggling_shapes_get_a_clean_4xx_and_the_connection_closes(tight, name):
    data, closed = _answer(tight.port, _POST + SMUGGLING[name] + _NEXT)
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else None
    assert status in (400, 431), (name, data[:300])
    _error_shape(data, status)
    assert closed and len(_statuses(data)) == 1, (name, data[:300])


@pytest.mark.parametrize("line", [b"CONNECT evil.example:443 HTTP/1.1", b"CONNECT /healthz HTTP/1.1",
                                  b"TRACE / HTTP/1.1", b"GET * HTTP/1.1", b"PRI * HTTP/2.0", b"GET /a\x00b HTTP/1.1"])
def test_odd_methods_and_targets_get_our_error_shape(tight, line):
    data, _ = _answer(tight.port, line + b"\r\nHost: x\r\nConnection: close\r\n\r\n")
    status = int(data.split(b" ", 2)[1])
    assert 400 <= status < 500 or status == 505, data[:300]
    _error_shape(data, status)


@pytest.mark.parametrize("framing", [b"Content-Length: 5\r\n\r\nabcde",
                                     b"Transfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n0\r\n\r\n"])
def test_a_request_asking_to_upgrade_with_a_body_is_refused_not_answered_without_it(tight, framing):
    """httptools skips the body of an Upgrade request (what `curl --http2` sends on http://): the app was handed an
    empty body (405 here, 400 `EMPTY_BODY` on a generation), the body's bytes dropped. Without a body the Upgrade is
    ignored and the request served."""
    upgrade = b"POST /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
    data, closed = _answer(tight.port, upgrade + framing)
    assert _error_shape(data, 400)["errorCode"] == "UPGRADE_WITH_BODY" and closed
    data, _ = _answer(tight.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n")
    assert _statuses(data) == [b"200"]
