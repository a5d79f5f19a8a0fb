"""A job's JSON lines say in German too why a document has no result (issue 38: a German job with no English word
outside the official rule texts and codes).

The API's errors carry `messageDe` beside `message`; a job's `error` and `notice` entries had English only ("The
uploaded file is not a readable PDF."). Now each entry without a result, and each of its errors[], carries
`messageDe` in every job, whatever its language: the service's own German where it wrote one, else the sentence the
web page shows for the code (one source, pipeline.flows.validation_report.german); `message` stays as it was."""
from __future__ import annotations

import io
import json
import re
import time
import zipfile
from types import SimpleNamespace

from jsonschema import Draft202012Validator

from mailbuild import message
from pipeline.flows.validation_report import with_german
from pipeline.service.resources.jobs import _not_processed
from pipeline.settings import TEMPLATES_DIR
from test_platform_helpers import sqlite_platform

SENTENCES = json.loads((TEMPLATES_DIR / "web" / "strings.json").read_text(encoding="utf-8"))["de"]["errors"]
ENGLISH = {"file", "not", "the", "invoice", "message", "is", "no", "has", "document", "readable"}


def _words(text: str) -> set[str]:
    """The words of `text` but its codes (NESTED_ARCHIVE), the file names it quotes and the PDF reader's own words
    (quoted after "Meldung des Lesers:", pipeline.pdf.checks)."""
    text = text.split("Meldung des Lesers:")[0]
    text = re.sub(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|'[^']*'|\S+\.(?:pdf|zip|xml|eml)\b", "", text)
    return {w.lower() for w in re.findall(r"[A-Za-zÄÖÜäöüß]+", text)}


def _posted(client, auth, body: bytes, request: dict) -> dict:
    """POST /v1/jobs in this process, then the job once the embedded pool has ended it."""
    boundary = "b0undary"
    form = b"".join(f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"{extra}\r\n\r\n".encode()
                    + data + b"\r\n" for name, extra, data in (
                        ("file", '; filename="post.zip"', body), ("request", "", json.dumps(request).encode())))
    r = client.simulate_post("/v1/jobs", body=form + f"--{boundary}--\r\n".encode(),
                             headers={**auth, "Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert r.status_code == 202, r.text
    deadline = time.monotonic() + 120
    while True:
        job = client.simulate_get(f"/v1/jobs/{r.json['id']}", headers=auth).json
        if job["state"] not in ("queued", "running"):
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.2)


def _post_box() -> bytes:
    buf, inner = io.BytesIO(), io.BytesIO()
    with zipfile.ZipFile(inner, "w") as z:
        z.writestr("x.xml", "<a/>")
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("broken.pdf", b"%PDF-1.4\n1 0 obj garbage")
        z.writestr("nested.zip", inner.getvalue())
        z.writestr("mail.eml", message(1, [], subject="Ihre Rechnung").as_bytes())
    return buf.getvalue()


def test_every_line_without_a_result_carries_german_beside_its_english(tmp_path, monkeypatch):
    with sqlite_platform(tmp_path, monkeypatch) as platform:
        _, token = platform.key(100)
        client, auth = platform.client, {"Authorization": f"Bearer {token}"}
        doc = client.simulate_get("/v1/openapi.json").json
        results = doc["paths"]["/v1/jobs/{job_id}/results"]["get"]["responses"]["200"]["content"]["application/jsonl"]
        # each line as the document describes it (its `$ref`s into components resolved in the document itself)
        line_schema = Draft202012Validator({**results["x-itemSchema"], "components": doc["components"]})
        for request in ({"operation": "validate"}, {"operation": "validate", "html": True, "metadataLanguage": "de"}):
            job = _posted(client, auth, _post_box(), request)
            assert (job["state"], job["total"], job["errors"], job["noInvoice"]) == ("done", 3, 2, 1), job
            r = client.simulate_get(f"/v1/jobs/{job['id']}/results", headers=auth)
            lines = {line["name"]: line for line in map(json.loads, r.text.splitlines())}
            mail = next(name for name in lines if name.startswith("mail.eml/"))
            assert {lines["broken.pdf"]["error"]["code"], lines["nested.zip"]["error"]["code"],
                    lines[mail]["notice"]["code"]} == {"INVALID_PDF", "NESTED_ARCHIVE", "NO_INVOICE"}
            for name, line in lines.items():
                assert not list(line_schema.iter_errors(line)), (name, [e.message for e in
                                                                        line_schema.iter_errors(line)])
                said = line.get("error") or line["notice"]
                assert said["message"].startswith("The "), said  # the English, as it was
                assert said["messageDe"] == SENTENCES[said["code"]], said
                for item in [said, *said.get("errors", ())]:
                    assert not _words(item["messageDe"]) & ENGLISH, (name, item["messageDe"])
            # the PDF reader's German for its own finding stays the item's; the entry says the code's sentence
            item = lines["broken.pdf"]["error"]["errors"][0]
            assert item["code"] == "INVALID_PDF" and item["messageDe"] != item["message"], item
            if not request.get("html"):  # the ZIP of the JSON entries holds the same lines
                z = zipfile.ZipFile(io.BytesIO(client.simulate_get(f"/v1/jobs/{job['id']}/results",
                                                                   params={"format": "zip"}, headers=auth).content))
                assert json.loads(z.read("broken.pdf.error.json")) == lines["broken.pdf"]


def test_german_comes_from_one_source_and_never_replaces_the_services_own():
    said = with_german({"code": "INVALID_INPUT", "message": "The request is invalid.", "errors": [
        {"code": "UNKNOWN_FIELD", "field": "request.x", "message": "is not a field"},
        {"code": "INVALID_PDF", "field": "file", "message": "cannot be parsed", "messageDe": "Nicht lesbar."},
        {"code": "BR-CO-16", "message": "An official rule's text."}]})
    assert said["message"] == "The request is invalid." and said["messageDe"] == SENTENCES["INVALID_INPUT"]
    first, own, rule = said["errors"]
    assert first["messageDe"] == SENTENCES["UNKNOWN_FIELD"] and first["message"] == "is not a field"
    assert own["messageDe"] == "Nicht lesbar."
    assert "messageDe" not in rule  # no German exists for it: absent, never English under the German name


def test_a_document_a_cancel_left_unprocessed_is_said_in_german_too():
    line = json.loads(_not_processed(SimpleNamespace(state="cancelled"), "a.xml"))
    assert line["error"] == {"code": "NOT_PROCESSED", "message": "The job was cancelled before this document was "
                             "worked on.", "messageDe": SENTENCES["NOT_PROCESSED"]}
