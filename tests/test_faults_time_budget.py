"""Issue 41, item 3: every single-document request works within its time budget (`pipeline.budget`,
EINVOICE_REQUEST_BUDGET) and answers before the worker timeout; the access log has a line for every request, also
for one whose worker was killed. Documents of 20 MB are generated here (31,500 invoice lines, valid XRechnung UBL)
and given a finding on every line (an unknown unit code) for the validation.

The machine is shared and loaded: the bounds are the issue's (answered within 18 s with a 6 s budget, before the
120 s worker timeout with the default 60 s), far above what the work takes when the checks hold."""
from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from faults_common import FIXTURE, access_lines, wait_for
from test_platform_helpers import serve_with_key, worker_pids

LINES = 31_500


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> dict:
    """{"valid": a 20 MB XRechnung UBL invoice of 31,500 lines, "findings": 19.5 MB of it with an unknown unit
    code on every line}."""
    from pipeline.flows.generate_xml import generate_xml

    request = json.loads(FIXTURE.read_text())
    line = request["invoice"]["invoiceLines"][0]
    request["invoice"]["invoiceLines"] = [dict(copy.deepcopy(line), lineIdentifier=str(i + 1)) for i in range(LINES)]
    request["invoice"]["vatBreakdowns"] = []
    request["config"]["syntax"] = "UBL"
    valid = generate_xml(json.dumps(request).encode(), "xrechnung")[0]
    head, _, rest = valid.partition(b"<cac:InvoiceLine>")
    lines = (b"<cac:InvoiceLine>" + rest).split(b"</cac:InvoiceLine>")
    kept = b"</cac:InvoiceLine>".join(lines[:30_700]) + b"</cac:InvoiceLine>" + lines[-1]
    findings = head + kept.replace(b'unitCode="DAY"', b'unitCode="QQQ"')
    assert len(valid) > 20_000_000 and 19_400_000 < len(findings) < 19_600_000, (len(valid), len(findings))
    return {"valid": valid, "findings": findings}


def _post(url: str, token: str, path: str, data: bytes, request: dict | None = None, timeout: float = 200):
    started = time.monotonic()
    files = {"file": ("big.xml", data, "application/xml")}
    if request is not None:
        files["request"] = ("request.json", json.dumps(request), "application/json")
    r = requests.post(url + path, files=files, headers={"Authorization": f"Bearer {token}"}, timeout=timeout)
    return r, time.monotonic() - started


def _line(log_path, request_id: str) -> dict:
    found = wait_for(lambda: [x for x in access_lines(log_path) if x["requestId"] == request_id], 5)
    assert found, f"no access line for {request_id}"
    return found[0]


def test_a_19_5_mb_validation_with_a_6_s_budget_answers_within_18_s(big, tmp_path):
    """Today's uninterrupted work: ~21 s (the CEN rules alone 16 s, one finding per line). With
    EINVOICE_REQUEST_BUDGET=6 the rules are not begun when what is left cannot cover them: 503 TIME_BUDGET."""
    server, _, token = serve_with_key(tmp_path, "budget", 10, workers=1, warm=True,
                                      env={"EINVOICE_REQUEST_BUDGET": "6"})
    try:
        pids = worker_pids(server)
        r, took = _post(server.url, token, "/v1/invoice/xrechnung/validate", big["findings"])
        print(f"19.5 MB validation, budget 6 s: {r.status_code} after {took:.1f} s")
        assert took < 18, took
        assert r.status_code in (200, 503), r.text[:300]
        if r.status_code == 503:
            assert r.json()["errorCode"] == "TIME_BUDGET" and "/v1/jobs" in r.json()["message"]
        line = _line(server.log_path, r.headers["X-Request-Id"])
        assert line["status"] == r.status_code and line["path"] == "/v1/invoice/xrechnung/validate"
        assert worker_pids(server) == pids
    finally:
        server.stop()


def test_a_20_mb_convert_on_a_busy_host_is_answered_by_the_same_workers(big, tmp_path):
    """Two processes keep both cores busy on top of whatever else runs; the default budget (60 s) against the worker
    timeout (120 s): the convert is answered (the converted document, or 503 TIME_BUDGET) and no worker is lost."""
    server, _, token = serve_with_key(tmp_path, "budget", 10, workers=2, warm=True)
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        pids = worker_pids(server)
        r, took = _post(server.url, token, "/v1/invoice/convert", big["valid"], {"to": "CII"})
        print(f"20 MB convert on a busy host: {r.status_code} after {took:.1f} s, load {os.getloadavg()[0]:.1f}")
        assert r.status_code in (200, 503), r.text[:300]
        if r.status_code == 503:
            assert r.json()["errorCode"] == "TIME_BUDGET"
        assert took < 120, took
        assert _line(server.log_path, r.headers["X-Request-Id"])["status"] == r.status_code
        assert worker_pids(server) == pids
        assert "WORKER TIMEOUT" not in server.log_path.read_text()
    finally:
        for p in burners:
            p.kill()
            p.wait()
        server.stop()


def _bytes_read(pid: int) -> int:
    """What a process has read through read() and recv() (sockets included): /proc/<pid>/io's rchar."""
    io = Path(f"/proc/{pid}/io").read_text()
    return int(next(line.split()[1] for line in io.splitlines() if line.startswith("rchar:")))


def test_a_request_whose_worker_is_killed_still_gets_its_access_line(big, tmp_path):
    """The worker running a long validation is killed (SIGKILL: nothing of it runs after): the master writes the
    request's access line, with the client's request id and `workerKilled`; a new worker serves."""
    server, _, token = serve_with_key(tmp_path, "killed", 10, workers=1, warm=False)
    try:
        victim, = worker_pids(server)
        import threading

        answer = {}

        def post():
            try:
                answer["r"] = requests.post(server.url + "/v1/invoice/xrechnung/validate", timeout=120,
                                            files={"file": ("big.xml", big["findings"], "application/xml")},
                                            headers={"Authorization": f"Bearer {token}", "X-Request-Id": "doomed-1"})
            except requests.RequestException as exc:
                answer["error"] = exc

        read_before = _bytes_read(victim)
        client = threading.Thread(target=post)
        client.start()
        # the body is in (the worker has read it: a fixed wait was too short on a busy host), then the app is at work
        deadline = time.monotonic() + 60
        while _bytes_read(victim) - read_before < len(big["findings"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(3.5)
        os.kill(victim, signal.SIGKILL)
        client.join(120)
        assert "error" in answer, (answer, answer["r"].text[:300] if "r" in answer else "")  # its worker is gone
        line = _line(server.log_path, "doomed-1")
        assert line["workerKilled"] is True and line["status"] is None
        assert line["method"] == "POST" and line["path"] == "/v1/invoice/xrechnung/validate"
        assert line["durationMs"] >= 3000
        server.wait_ready()
        assert requests.get(server.url + "/healthz", timeout=10).status_code == 200
    finally:
        server.stop()
