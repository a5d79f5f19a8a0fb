"""A job upload larger than the room left in a full jobs directory: its body's spool file finds the disk full while
the body arrives, so the HTTP front answers, not the app. That was a 503 SERVER_BUSY with no errors[] (a client
reading errors[0].code for JOBS_DISK_FULL, as the README says, found nothing); now it is the app's answer to the same
condition: the retry-later code, errors[0] JOBS_DISK_FULL, Retry-After: 60."""
from __future__ import annotations

import requests

from test_jobs_disk_full import _pdfs, full_jobs_server


def test_a_body_larger_than_the_full_jobs_directory_gets_the_apps_answer(tmp_path):
    server, token = full_jobs_server(tmp_path, 2 << 20)
    try:
        auth = {"Authorization": f"Bearer {token}"}
        big = _pdfs(5 << 20)  # more than the whole tmpfs: the spool itself cannot hold it
        assert len(big) > 3 << 20
        r = requests.post(f"{server.url}/v1/jobs", headers=auth, timeout=120,
                          files=[("file", ("month.zip", big)), ("request", (None, '{"operation": "validate"}'))])
        assert r.status_code == 503, r.text
        said = r.json()
        assert said["errors"][0]["code"] == "JOBS_DISK_FULL" and r.headers["Retry-After"] == "60", r.text
        assert said["errorCode"] == "RATE_LIMIT_CONFIGURATION_UNAVAILABLE" and "EINVOICE_JOBS_DIR" in said["message"]
        assert set(said["errors"][0]) == {"code", "field", "businessTerm", "rejectedValue", "message"}
        log = (tmp_path / "serve.log").read_text(errors="replace")
        assert "Traceback" not in log and '"status":500' not in log, log[-3000:]
    finally:
        server.stop()
