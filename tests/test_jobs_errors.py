"""A job's `error` line says what the single endpoint says for the document: its code, message and `errors[]`
(field, business term, the source's xpath in the message). Before, a convert job's CONVERSION_LOSS or
SOURCE_INVALID line had only code and message, and the details that tell the sender what to fix were lost."""
from __future__ import annotations

import json

import requests

from pipeline.flows.validation_report import with_german
from tests.test_jobs import LOSSY, documents, results, submit, wait_for
from tests.test_platform_helpers import serve_with_key
from tests.test_validate_batch import zipped


def test_a_refused_document_s_line_carries_the_endpoint_s_errors(tmp_path):
    server, env, token = serve_with_key(tmp_path, "jobs-errors", 10, workers=1, warm=False)
    try:
        sources = [("lossy.xml", LOSSY.read_bytes()), ("invalid.xml", documents()[1])]
        for to in ("UBL", "ZUGFERD"):
            r = submit(server.url, token, zipped(sources), {"operation": "convert", "to": to})
            assert r.status_code == 202, r.text
            job = wait_for(server.url, token, r.json()["id"])
            assert (job["errors"], job["creditsCharged"]) == (2, 0), job
            for line, (name, data) in zip(results(server.url, token, job["id"]), sources):
                single = requests.post(f"{server.url}/v1/invoice/convert", timeout=60,
                                       headers={"Authorization": f"Bearer {token}"},
                                       files={"file": (name, data, "application/xml"),
                                              "request": (None, json.dumps({"to": to}), "application/json")})
                assert single.status_code >= 400, single.text
                answer = single.json()
                assert answer["errors"], answer  # the endpoint names what is wrong: the line must as well
                assert line["name"] == name
                # (with the German each message has beside it, as every job's line carries it)
                assert line["error"] == with_german({"code": answer["errorCode"], "message": answer["message"],
                                                     "errors": answer["errors"]})
        codes = {line["error"]["code"] for line in results(server.url, token, job["id"])}
        assert codes == {"CONVERSION_LOSS", "SOURCE_INVALID"}, codes
    finally:
        server.stop()
