"""What a route answers is decided by its path and method alone, before any credentials and before any body: OPTIONS
(a browser's CORS preflight carries no credentials, Fetch standard) answers 200 with the route's Allow and no body
whatever the key state (it was a 401 on authenticated routes); every route's Allow is what really answers there
(Falcon's OPTIONS left OPTIONS out); a method the route does not answer is a 405 before a 401, and `pipeline serve`'s
worker gives it (or a 404 for a path no route serves) as soon as the head is in, never reading the body, then closes.
The service answers no cross-origin requests: no Access-Control-* header anywhere."""
from __future__ import annotations

import json
import re
import select
import socket
import time

import pytest
import requests
from falcon.inspect import inspect_routes
from falcon.testing import create_environ

from test_faults_hostile_load import _spool_files
from test_http_framing_more import _access_line
from test_http_front import _read_all
from test_platform_helpers import Platform, serve_with_key, worker_pids
from pipeline.storage.sqlite import SqliteStore

METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"]
VALIDATE = "/v1/invoice/xrechnung/validate"
MB15 = 15_000_000
# a client's address: 127.0.0.1 is gunicorn's default forwarded_allow_ips, a trusted proxy (nginx), whose requests
# the app answers once their body is in (see the last test)
CLIENT = "127.0.0.2"


def _concrete(template: str) -> str:
    return re.sub(r"\{[^}]+\}", "x", template)


@pytest.fixture
def platform(tmp_path):
    store = SqliteStore(tmp_path / "platform.sqlite3")
    yield Platform(store)
    store.close()


class _Answer:
    def __init__(self, status: str, headers: list, body: bytes):
        self.status_code, self.content = int(status.split()[0]), body
        self.headers = requests.structures.CaseInsensitiveDict(headers)
        self.text = body.decode("utf-8", "replace")


def _options(app, path: str, headers: dict | None = None) -> _Answer:
    """An OPTIONS request to the app in process. Not through Falcon's test client: its wsgiref validator wants a
    Content-Type on every 200 (its reading of RFC 2616), and an OPTIONS answer without a body has none."""
    said = []
    body = b"".join(app(create_environ(path, method="OPTIONS", headers=headers or {}),
                        lambda status, head, exc_info=None: said.extend((status, head))))
    return _Answer(said[0], said[1], body)


def _no_cors(headers) -> None:
    assert not [h for h in headers if h.lower().startswith("access-control-")], headers


def test_every_routes_allow_is_what_answers_there_without_a_key(platform):
    """For each mounted route: OPTIONS without a key is 200 with no body; each method listed in its Allow answers
    something other than 405 (a 401 where a key is needed), every other method is a 405 (never a 401) with the same
    Allow."""
    client = platform.client
    for route in inspect_routes(platform.app):
        path = _concrete(route.path)
        options = _options(platform.app, path, headers={"Origin": "https://elsewhere.example",
                                                         "Access-Control-Request-Method": "POST"})
        assert options.status_code == 200 and options.content == b"", (path, options.status_code, options.text)
        assert "Content-Type" not in options.headers, (path, options.headers)
        _no_cors(options.headers)
        allow = options.headers["Allow"].split(", ")
        assert "OPTIONS" in allow and allow == sorted(allow), (path, allow)
        for method in METHODS:
            r = _options(platform.app, path) if method == "OPTIONS" else client.simulate_request(method, path)
            if method in allow:
                assert r.status_code != 405, (method, path)
            else:
                assert r.status_code == 405, (method, path, r.status_code, r.text)
                assert r.headers["Allow"] == options.headers["Allow"], (method, path)
                assert method == "HEAD" or json.loads(r.text)["errorCode"] == "METHOD_NOT_ALLOWED"


def test_options_answers_whatever_the_key_state(platform):
    """No key, an unknown one, a revoked one, a valid one without credits, another scheme: the same 200 and Allow,
    no rate-limit hit, nothing charged."""
    key_id, token = platform.key(credits=0)
    revoked_id, revoked = platform.key()
    platform.store.revoke_key(revoked_id)
    for authorization in (None, "Bearer einv_test_nope", f"Bearer {token}", f"Bearer {revoked}", "Basic eDp5"):
        headers = {"Authorization": authorization} if authorization else {}
        r = _options(platform.app, VALIDATE, headers=headers)
        assert (r.status_code, r.headers["Allow"], r.content) == (200, "OPTIONS, POST", b""), (authorization, r.text)
        assert "RateLimit-Remaining" not in r.headers
    assert platform.store.get_key(key_id).balance == 0
    r = platform.client.simulate_request("PUT", VALIDATE, headers={"Authorization": f"Bearer {revoked}"})
    assert r.status_code == 405 and r.headers["Allow"] == "OPTIONS, POST"  # the method first, then the key


# -- through `pipeline serve` ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def node(tmp_path_factory):
    data = tmp_path_factory.mktemp("methods")
    server, _, token = serve_with_key(data, "methods", 10, workers=1, warm=False)
    yield server, token
    server.stop()


def test_a_preflight_through_serve_is_200_with_allow_and_no_body_whatever_the_key(node):
    server, token = node
    for i, authorization in enumerate((None, "Bearer einv_test_nope", f"Bearer {token}")):
        rid = f"preflight-{i}"
        headers = {"Origin": "https://elsewhere.example", "Access-Control-Request-Method": "POST",
                   "Access-Control-Request-Headers": "authorization, content-type", "X-Request-Id": rid}
        if authorization:
            headers["Authorization"] = authorization
        r = requests.options(server.url + VALIDATE, headers=headers, timeout=10)
        assert (r.status_code, r.headers["Allow"], r.content) == (200, "OPTIONS, POST", b""), r.text
        assert r.headers["Content-Length"] == "0" and "Content-Type" not in r.headers, r.headers  # nothing to type
        _no_cors(r.headers)
        line = _access_line(server, rid)
        assert (line["status"], line["keyId"], line["creditsCharged"]) == (200, None, 0)


def _slowly(port: int, head: bytes, piece: bytes, total: int, pause: float = 0.05,
            source: str = CLIENT) -> tuple[bytes, int, float, bool]:
    """Sends `head`, then `piece` after `piece` with a pause between them until `total` body bytes are sent (15 MB:
    ~12 s at this pace) or an answer can be read. (the answer, body bytes sent before it, seconds to it, whether
    the server closed the connection after it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0)) as s:
        s.sendall(head)
        started, sent = time.monotonic(), 0
        while sent < total and not select.select([s], [], [], pause)[0]:
            try:
                s.sendall(piece)
            except OSError:  # closed by the server: its answer is already on its way
                break
            sent += len(piece)
        took = time.monotonic() - started
        s.settimeout(5)
        answer, closed = b"", False
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            answer += chunk
    return answer, sent, took, closed


def _refusal(answer: bytes, status: int, close: bool = True) -> tuple[dict, str]:
    """`close`: the connection closes after the refusal (a body past 1 MiB, chunked or behind 100-continue); else a
    small body is dropped and the connection goes on (test_hostile_more2_pipelining.py)."""
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 %d " % status), answer[:300]
    said = b"close" if close else b"keep-alive"
    assert b"100 Continue" not in head and b"\r\nConnection: %s\r\n" % said in head, head
    return json.loads(body), head.decode("latin-1")


CASES = [  # method and target, how the body is sent, status, Allow, the path the message names
    ("PUT /healthz", "length", 405, "GET, HEAD, OPTIONS", "/healthz"),
    ("POST /healthz", "continue", 405, "GET, HEAD, OPTIONS", "/healthz"),
    ("PATCH /v1/jobs/abc", "chunked", 405, "DELETE, GET, HEAD, OPTIONS", "/v1/jobs/abc"),
    ("DELETE " + VALIDATE, "length", 405, "OPTIONS, POST", VALIDATE),
    ("PUT /%68ealthz/", "length", 405, "GET, HEAD, OPTIONS", "/healthz"),
    ("PUT /nope", "length", 404, None, "/nope"),
]


@pytest.mark.parametrize("line,framing,status,allow,path", CASES)
def test_a_15_mb_body_sent_slowly_to_a_method_or_path_nothing_answers_is_refused_before_the_body(
        node, line, framing, status, allow, path):
    """The answer comes as soon as the head is in (the body would take ~12 s at this pace), the body is never read
    (the worker holds no spool file for it) and the connection is closed; the
    refusal has its access line. With a key too: the method is refused before the key is looked at."""
    server, token = node
    (worker,) = worker_pids(server)
    rid = f"early-{abs(hash(line)) % 10 ** 8}-{framing}"
    head = (f"{line} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nX-Request-Id: {rid}\r\n"
            "Content-Type: application/octet-stream\r\n").encode()
    piece = b"x" * 65536
    if framing == "chunked":
        head += b"Transfer-Encoding: chunked\r\n\r\n"
        piece = b"10000\r\n" + piece + b"\r\n"
    else:
        head += b"Content-Length: %d\r\n" % MB15 + (b"Expect: 100-continue\r\n" if framing == "continue" else b"")
        head += b"\r\n"
    answer, sent, took, closed = _slowly(server.port, head, piece, MB15)
    parsed, said = _refusal(answer, status)
    assert sent < 1 << 20 and took < 3, (sent, took)
    assert closed
    if allow:
        assert f"\r\nAllow: {allow}\r\n" in said
        assert parsed["errorCode"] == "METHOD_NOT_ALLOWED" and parsed["message"] == (
            f"{line.split()[0]} is not allowed on {path}; it answers {allow}.")
    else:
        assert parsed["errorCode"] == "NOT_FOUND" and f"no resource at {path};" in parsed["message"]
    assert parsed["requestId"] == rid
    entry = _access_line(server, rid)
    assert (entry["method"], entry["status"], entry["front"], entry["creditsCharged"]) == (
        line.split()[0], status, True, 0)
    assert _spool_files([worker]) == 0


def test_the_front_and_the_app_give_the_same_405(node):
    """Without a body the app answers (on a connection that stays open); with one the worker does, before the body:
    the same status, Allow and message."""
    server, _ = node
    with socket.create_connection(("127.0.0.1", server.port), timeout=10, source_address=(CLIENT, 0)) as s:
        s.sendall(b"PUT /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                  b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        both = _read_all(s)
    app_head, _, rest = both.partition(b"\r\n\r\n")
    assert re.findall(rb"HTTP/1\.1 (\d{3}) ", both) == [b"405", b"200"], both[:500]
    app_said = json.loads(rest[:int(re.search(rb"(?i)content-length: (\d+)", app_head).group(1))])
    front, _, _, _ = _slowly(server.port, b"PUT /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n", b"", 0)
    front_said, front_head = _refusal(front, 405, close=False)  # (its 10-byte body would be dropped)
    assert re.search(rb"(?i)\r\nallow: GET, HEAD, OPTIONS\r\n", app_head) and "Allow: GET, HEAD, OPTIONS" in front_head
    assert app_said["message"] == front_said["message"] and app_said["errorCode"] == front_said["errorCode"]


def test_a_body_on_a_method_the_route_answers_is_still_read(node):
    """The refusal is only for what nothing answers: a POST with a body where POST is answered is read whole (a 401
    without a key once it is in, on a connection that stays open)."""
    server, _ = node
    body = b"x" * 300_000
    with socket.create_connection(("127.0.0.1", server.port), timeout=10, source_address=(CLIENT, 0)) as s:
        s.sendall(b"POST /v1/invoice/parse HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body
                  + b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert re.findall(rb"HTTP/1\.1 (\d{3}) ", _read_all(s)) == [b"401", b"200"]


def test_a_trusted_proxys_request_is_answered_by_the_app_once_its_body_is_in(node):
    """nginx (a peer in forwarded_allow_ips; here the default, 127.0.0.1) reads a client's whole body before it sends
    the head and then sends all of it whatever it hears: a connection closed under it turned the 405 into nginx's 502
    (sendfile: broken pipe), and a failure of the node. From such a peer the body is read and the app answers, on a
    connection that stays open."""
    server, _ = node
    body = b"x" * 2_000_000
    with socket.create_connection(("127.0.0.1", server.port), timeout=10, source_address=("127.0.0.1", 0)) as s:
        s.sendall(b"PUT /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body
                  + b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answers = _read_all(s)
    assert re.findall(rb"HTTP/1\.1 (\d{3}) ", answers) == [b"405", b"200"], answers[:500]
    assert re.search(rb"(?i)\r\nallow: GET, HEAD, OPTIONS\r\n", answers)
