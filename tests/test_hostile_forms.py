"""Hostile and sloppy forms against a started `pipeline serve`.

An empty `file` part written as RFC 2046 allows (its header lines, then at once the next delimiter) or with its
header lines' last CRLF left out: Falcon's multipart reader took the next part as the empty file's content (a
`request` part lost: its options silently not applied; a second file not checked) or as more of its headers (the
file part lost: 400 MISSING_PART). Now the empty part is an empty file and the next part stays a part.

A query parameter the jobs API does not take (`GET /v1/jobs?stauts=done`) was ignored: the whole list answered as if
no filter had been asked for. Now it is a 400 naming it (UNKNOWN_FIELD), as an unknown key of a request part is."""
from __future__ import annotations

import pytest
import requests

from conftest import CORPUS
from faults_common import wait_for
from test_platform_helpers import serve_with_key

UBL = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml"
EMPTY_PARTS = {
    # the part's header lines, then the delimiter at once (valid: `body-part := MIME-part-headers [CRLF *OCTET]`)
    "headers-then-boundary": b'Content-Disposition: form-data; name="file"; filename="empty.xml"\r\n',
    # and without the header lines' last CRLF (clients that build the body by hand)
    "no-line-end": b'Content-Disposition: form-data; name="file"; filename="empty.xml"',
}


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    server, _, token = serve_with_key(tmp_path_factory.mktemp("forms"), "forms", 100, workers=1, warm=False)
    yield server, {"Authorization": f"Bearer {token}"}
    server.stop()


def _form(*parts: bytes) -> tuple[bytes, dict]:
    """A multipart body from raw parts (headers and content as sent), each after a delimiter."""
    body = b"--BOUND\r\n" + b"\r\n--BOUND\r\n".join(parts) + b"\r\n--BOUND--\r\n"
    return body, {"Content-Type": "multipart/form-data; boundary=BOUND"}


def _part(name: str, content: bytes, filename: str | None = None) -> bytes:
    named = f'; filename="{filename}"' if filename else ""
    return f'Content-Disposition: form-data; name="{name}"{named}\r\n\r\n'.encode() + content


@pytest.mark.parametrize("empty", EMPTY_PARTS.values(), ids=EMPTY_PARTS.keys())
def test_an_empty_file_part_keeps_the_request_part_after_it(node, empty):
    """The `request` part after an empty file is read: parse refuses its unknown key (before: the file part took it
    as content and answered NOT_AN_EINVOICE, or the file part was lost: MISSING_PART)."""
    server, auth = node
    body, headers = _form(empty, _part("request", b'{"strict": true}'))
    r = requests.post(server.url + "/v1/invoice/parse", data=body, headers={**auth, **headers}, timeout=60)
    assert r.status_code == 400, r.text[:300]
    assert [(e["code"], e["field"]) for e in r.json()["errors"]] == [("UNKNOWN_FIELD", "request.strict")]
    body, headers = _form(empty, _part("request", b"{}"))
    r = requests.post(server.url + "/v1/invoice/parse", data=body, headers={**auth, **headers}, timeout=60)
    assert r.status_code == 400 and r.json()["errorCode"] == "NOT_AN_EINVOICE", r.text[:300]


@pytest.mark.parametrize("empty", EMPTY_PARTS.values(), ids=EMPTY_PARTS.keys())
def test_an_empty_file_part_before_an_invoice_is_its_own_document(node, empty):
    """Batch: the empty file and the invoice after it are two entries, the invoice judged valid (before: one entry,
    the invoice's part inside the empty one's content, or no file at all); a job counts two documents."""
    server, auth = node
    body, headers = _form(empty, _part("file", UBL.read_bytes(), "invoice.xml"))
    r = requests.post(server.url + "/v1/invoice/xrechnung/validate/batch", data=body, headers={**auth, **headers},
                      timeout=120)
    assert r.status_code == 200, r.text[:300]
    results = r.json()["results"]
    assert [x["name"] for x in results] == ["empty.xml", "invoice.xml"]
    assert results[1]["report"]["valid"] is True
    body, headers = _form(empty, _part("file", UBL.read_bytes(), "invoice.xml"),
                          _part("request", b'{"operation": "validate"}'))
    r = requests.post(server.url + "/v1/jobs", data=body, headers={**auth, **headers}, timeout=60)
    assert r.status_code == 202 and r.json()["total"] == 2, r.text[:300]
    job = r.headers["Location"]
    assert wait_for(lambda: requests.get(server.url + job, headers=auth, timeout=30).json()["state"] == "done", 120)
    lines = requests.get(server.url + job + "/results", headers=auth, timeout=30).text.splitlines()
    assert len(lines) == 2 and '"invoice.xml"' in lines[1] and '"valid": true' in lines[1]


@pytest.mark.parametrize("path,query,named", [
    ("/v1/jobs", "stauts=done", ["stauts"]),
    ("/v1/jobs", "limit=5&Limit=6&x", ["Limit", "x"]),
    ("/v1/jobs/job_0/results", "fromat=zip", ["fromat"]),
    ("/v1/jobs/job_0", "verbose=1", ["verbose"]),
])
def test_the_jobs_api_names_a_query_parameter_it_does_not_take(node, path, query, named):
    """400 INVALID_INPUT with an UNKNOWN_FIELD entry per unknown parameter (before: `?stauts=done` listed every
    job, as if no filter had been asked for); the parameters a route takes still work."""
    server, auth = node
    r = requests.get(f"{server.url}{path}?{query}", headers=auth, timeout=30)
    assert r.status_code == 400, r.text[:300]
    parsed = r.json()
    assert parsed["errorCode"] == "INVALID_INPUT"
    assert [(e["code"], e["field"]) for e in parsed["errors"]] == [("UNKNOWN_FIELD", n) for n in named]
    r = requests.delete(f"{server.url}/v1/jobs/job_0?forgt=true", headers=auth, timeout=30)
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "forgt", r.text[:300]
    r = requests.get(f"{server.url}/v1/jobs?limit=2&state=done,failed", headers=auth, timeout=30)
    assert r.status_code == 200 and "jobs" in r.json(), r.text[:300]


@pytest.mark.parametrize("content_type", ["multipart/form-data", "multipart/form-data; boundary=" + "b" * 71])
def test_a_form_without_a_usable_boundary_names_the_header(node, content_type):
    """A multipart Content-Type without a boundary, or with one beyond RFC 2046's 70 characters (Werkzeug's test
    client makes such 20 % of the time): a 400 whose `errors` name the header, as a bad body field is named."""
    server, auth = node
    body, _ = _form(_part("file", UBL.read_bytes(), "a.xml"))
    r = requests.post(server.url + "/v1/invoice/parse", data=body, headers={**auth, "Content-Type": content_type},
                      timeout=60)
    assert r.status_code == 400 and r.json()["errorCode"] == "INVALID_INPUT", r.text[:300]
    assert [(e["code"], e["field"]) for e in r.json()["errors"]] == [("INVALID_HEADER", "header Content-Type")]
