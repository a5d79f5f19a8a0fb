"""Fault: streamed uploads. Many HTTP clients send `Transfer-Encoding: chunked` (no Content-Length). Every
endpoint reads a chunked body like a sized one, with the same size limit (413 PAYLOAD_TOO_LARGE beyond it),
under `pipeline serve` and under plain gunicorn (`gunicorn app:app`, the WSGI entry)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import requests

from faults_common import FIXTURE
from test_platform_helpers import REPO, Server, cli, free_port
from test_serve import _ubl_sample

LIMIT = 200_000  # EINVOICE_MAX_UPLOAD_BYTES for these servers


def _chunks(data: bytes, size: int = 7_000):
    """A generator body: requests sends it with Transfer-Encoding: chunked."""
    for i in range(0, len(data), size):
        yield data[i:i + size]


def _multipart(file_bytes: bytes, name: str, media: str) -> tuple[bytes, str]:
    b = "chunkedboundary42"
    body = (f"--{b}\r\nContent-Disposition: form-data; name=\"request\"\r\nContent-Type: application/json\r\n\r\n"
            f"{{}}\r\n--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
            f"Content-Type: {media}\r\n\r\n").encode() + file_bytes + f"\r\n--{b}--\r\n".encode()
    return body, f"multipart/form-data; boundary={b}"


class Gunicorn:
    """Plain `gunicorn app:app` (sync worker): the app's own chunked handling, without pipeline serve."""

    def __init__(self, env, log_path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "app:app", "-b", f"127.0.0.1:{self.port}",
                                      "-w", "1", "--timeout", "120"], cwd=REPO, env={**os.environ, **env},
                                     stdout=self._log, stderr=subprocess.STDOUT)
        Server.wait_ready(self)

    def stop(self):
        Server.stop(self)


@pytest.fixture(scope="module", params=["pipeline serve", "gunicorn app:app"])
def node(request, tmp_path_factory):
    data = tmp_path_factory.mktemp("chunked")
    env = {"EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_MAX_UPLOAD_BYTES": str(LIMIT), "EINVOICE_RATE_LIMIT": "100000/min"}
    token = cli(env, "keys", "create", "--name", "chunked", "--env", "test", "--credits", "20").stdout.strip()
    if request.param == "pipeline serve":
        server = Server(env, workers=1, warm=True, log_path=data / "serve.log")
    else:
        server = Gunicorn(env, data / "gunicorn.log")
    yield server, token, request.param
    server.stop()


def _post(server, token, path, data: bytes, content_type: str, accept: str | None = None):
    headers = {"Authorization": f"Bearer {token}", "Content-Type": content_type}
    if accept:
        headers["Accept"] = accept
    r = requests.post(server.url + path, data=_chunks(data), headers=headers, timeout=120)
    assert r.request.headers.get("Transfer-Encoding") == "chunked" and "Content-Length" not in r.request.headers
    return r


def test_chunked_json_on_every_generation_endpoint(node):
    server, token, _ = node
    en16931 = (REPO / "fixtures" / "vat-z-card-payment.json").read_bytes()
    for path, body, media in (("/v1/invoice/xrechnung", FIXTURE.read_bytes(), "application/xml"),
                              ("/v1/invoice/en16931", en16931, "application/xml"),
                              ("/v1/invoice/zugferd", en16931, "application/pdf")):
        r = _post(server, token, path, body, "application/json")
        assert r.status_code == 200, (path, r.text[:300])
        assert r.headers["Content-Type"].startswith(media)


def test_chunked_multipart_on_every_validation_endpoint(node):
    server, token, _ = node
    xml = _ubl_sample()
    for path in ("/v1/invoice/xrechnung/validate", "/v1/invoice/en16931/validate"):
        body, ctype = _multipart(xml, "invoice.xml", "application/xml")
        r = _post(server, token, path, body, ctype)
        assert r.status_code == 200, (path, r.text[:300])
        assert r.json()["syntax"] == "UBL" and "valid" in r.json()
    en16931 = (REPO / "fixtures" / "vat-z-card-payment.json").read_bytes()
    pdf = requests.post(server.url + "/v1/invoice/zugferd", data=en16931, timeout=120, headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json"}).content
    assert pdf.startswith(b"%PDF")
    body, ctype = _multipart(pdf, "invoice.pdf", "application/pdf")
    r = _post(server, token, "/v1/invoice/zugferd/validate", body, ctype)
    assert r.status_code == 200, r.text[:300]
    assert r.json()["valid"] is True


@pytest.mark.parametrize("size", [LIMIT + 1_000, LIMIT + 200_000, 5 * LIMIT])
def test_chunked_bodies_over_the_limit_get_413(node, size):
    server, token, _ = node
    body = b'{"invoice": "' + b"x" * size + b'"}'
    r = _post(server, token, "/v1/invoice/xrechnung", body, "application/json")
    assert r.status_code == 413 and r.json()["errorCode"] == "PAYLOAD_TOO_LARGE"
    mp, ctype = _multipart(b"<x>" + b"a" * size + b"</x>", "big.xml", "application/xml")
    r = _post(server, token, "/v1/invoice/en16931/validate", mp, ctype)
    assert r.status_code == 413 and r.json()["errorCode"] == "PAYLOAD_TOO_LARGE"


def test_a_chunked_body_just_under_the_limit_is_read(node):
    server, token, _ = node
    body = FIXTURE.read_bytes().rstrip()
    body += b" " * (LIMIT - len(body) - 10)  # JSON whitespace: the body is just under the limit
    assert LIMIT - 1000 < len(body) <= LIMIT
    r = _post(server, token, "/v1/invoice/xrechnung", body, "application/json")
    assert r.status_code == 200, r.text[:300]
