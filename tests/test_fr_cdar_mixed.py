"""A French archive holds invoices and the status messages (CDV) about them. A job over it answers each document:
a validate job on `auto` judges the messages on FNFE's chain beside the invoices; a parse or convert job, which reads
invoices, answers each message with an error line saying what it is and which endpoint does what was asked. Before,
the line pointed a parse job's user to /status/validate, which does not read the message; now it names validate,
parse and render, and each endpoint named takes the message. A real `pipeline serve` runs the jobs; the lines are
held against the single endpoints' answers and the official chain run alone.
"""
from __future__ import annotations

import io
import json
import zipfile

import pytest
import requests

from cdar_cases import example, official_chain
from pipeline.flows.validation_report import with_german
from tests.test_jobs import TYPICAL, results, submit, wait_for
from tests.test_platform_helpers import Server, cli, free_port_in

STATUS = "/v1/invoice/fr-ctc/status"
NAMED = {"/validate": "validate", "/parse": "parse", "/render": "render"}   # what the line names, and the endpoint



@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data = tmp_path_factory.mktemp("mixed")
    env = {"EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_RATE_LIMIT": "10000/min"}
    token = cli(env, "keys", "create", "--name", "mixed", "--env", "test", "--credits", "100").stdout.strip()
    running = Server(env, workers=1, port=free_port_in(18500, 18599), log_path=data / "serve.log")
    try:
        yield running, token
    finally:
        running.stop()


@pytest.fixture(scope="module")
def archive():
    files = [("invoice.xml", TYPICAL.read_bytes()), ("207-litige.xml", example("207").read_bytes()),
             ("212-encaissee.xml", example("212").read_bytes())]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files:
            z.writestr(name, data)
    return files, buf.getvalue()


def _single(server, token, path: str, name: str, data: bytes, request: dict | None = None) -> requests.Response:
    parts = {"file": (name, data, "application/xml")}
    if request is not None:
        parts["request"] = (None, json.dumps(request), "application/json")
    return requests.post(server.url + path, headers={"Authorization": f"Bearer {token}"}, files=parts, timeout=120)


def _job(server, token, body: bytes, request: dict) -> list[dict]:
    r = submit(server.url, token, body, request)
    assert r.status_code == 202, r.text
    job = wait_for(server.url, token, r.json()["id"])
    assert job["state"] == "done", job
    return results(server.url, token, job["id"])


@pytest.mark.parametrize("spec", ["auto", "xrechnung", "fr-ctc"])
def test_a_validate_job_judges_the_status_messages_beside_the_invoices(server, archive, spec):
    """Named invoice rules too: a status message is no invoice for them (as a PDF gets the ZUGFeRD checks)."""
    running, token = server
    files, body = archive
    lines = _job(running, token, body, {"operation": "validate", "spec": spec})
    assert [line["name"] for line in lines] == [name for name, _ in files]
    for line, (name, data) in zip(lines, files):
        if name == "invoice.xml":
            assert line["report"]["syntax"] == "CII" and line["report"]["rules"][0]["pack"] != "fr-cdar"
            continue
        assert line["report"]["syntax"] == "CDAR" and line["report"]["rules"][0]["pack"] == "fr-cdar"
        assert line["report"]["valid"] is official_chain(data)[0] is True


@pytest.mark.parametrize("request_part, single", [({"operation": "parse"}, ("/v1/invoice/parse", None)),
                                                   ({"operation": "convert", "to": "UBL"},
                                                    ("/v1/invoice/convert", {"to": "UBL"}))])
def test_a_parse_or_convert_job_names_where_each_status_message_belongs(server, archive, request_part, single):
    running, token = server
    files, body = archive
    lines = _job(running, token, body, request_part)
    assert [line["name"] for line in lines] == [name for name, _ in files]
    assert "error" not in lines[0], lines[0]   # the invoice is read (or converted) as ever
    for line, (name, data) in list(zip(lines, files))[1:]:
        # the line is what the single endpoint answers for the message (with the German beside each message)
        answer = _single(running, token, single[0], name, data, single[1])
        assert answer.status_code == 400, answer.text
        assert line["error"] == with_german({"code": answer.json()["errorCode"], "message": answer.json()["message"],
                                             "errors": answer.json()["errors"]})
        [detail] = line["error"]["errors"]
        assert detail["code"] == "XML-UNKNOWN-ROOT" and "status message" in detail["message"]
        # each endpoint it names takes the message and does what it says
        assert f"POST {STATUS}/validate" in detail["message"]
        for suffix in NAMED:
            assert f"{suffix} " in detail["message"].split("POST", 1)[1], suffix
            r = _single(running, token, STATUS + suffix, name, data, {"validate": True} if suffix == "/parse" else None)
            assert r.status_code == 200, (suffix, r.text)
        parsed = _single(running, token, STATUS + "/parse", name, data).json()
        assert parsed["status"]["code"] == name[:3] and parsed["complete"]
