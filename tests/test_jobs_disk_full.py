"""A full jobs directory. A job upload that did not fit (ENOSPC while its part was spooled or its documents were
written) was a 500 INTERNAL_ERROR; now it is a 503 with Retry-After and our code JOBS_DISK_FULL, nothing is left
behind, and a job that fits is taken as soon as there is room. The jobs directory is a real full file system: a
4 MiB tmpfs mounted in the server's own mount namespace (`unshare -m`, gone with the server)."""
from __future__ import annotations

import glob
import io
import os
import subprocess
import sys
import time
import zipfile

import requests

from conftest import REPO
from test_platform_helpers import Server, cli, free_port

REALWORLD = "/work/shared/realworld"


class TmpfsServer(Server):
    """`pipeline serve` whose EINVOICE_JOBS_DIR is a tmpfs of `size` bytes of its own."""

    def __init__(self, env: dict, jobs: str, size: int, log_path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self._log = open(log_path, "wb")
        serve = f"{sys.executable} -m pipeline serve --port {self.port} --workers 1 --no-warm"
        self.proc = subprocess.Popen(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size={size} tmpfs {jobs} && "
                                      f"exec {serve}"], cwd=REPO, env={**os.environ, **env}, stdout=self._log,
                                     stderr=subprocess.STDOUT)
        self.wait_ready()


def full_jobs_server(tmp_path, size: int) -> tuple[TmpfsServer, str]:
    """A server on embedded defaults whose jobs directory is a tmpfs of `size` bytes, and a key with credits."""
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    env = {"EINVOICE_DATA_DIR": str(tmp_path / "data"), "EINVOICE_JOBS_DIR": str(jobs), "EINVOICE_DATABASE_URL": "",
           "EINVOICE_REDIS_URL": "", "EINVOICE_RATE_LIMIT": "10000/min"}
    token = cli(env, "keys", "create", "--name", "full", "--env", "test", "--credits", "100").stdout.strip()
    return TmpfsServer(env, str(jobs), size, tmp_path / "serve.log"), token


def _pdfs(limit: int) -> bytes:
    """A ZIP of real PDF invoices (stored: they do not compress), about `limit` bytes."""
    buf, total = io.BytesIO(), 0
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for path in sorted(glob.glob(f"{REALWORLD}/**/*.pdf", recursive=True)):
            size = os.path.getsize(path)
            if total + size <= limit:
                z.write(path, os.path.basename(path))
                total += size
    return buf.getvalue()


def test_a_full_jobs_directory_is_a_503_and_nothing_stays(tmp_path):
    server, token = full_jobs_server(tmp_path, 4 << 20)
    try:
        auth = {"Authorization": f"Bearer {token}"}
        request = ("request", (None, '{"operation": "validate"}', "application/json"))
        big = _pdfs(3 << 20)  # its body fits the tmpfs once, not with the spooled part beside it
        assert len(big) > 2 << 20
        for _ in range(2):  # and again: the first left nothing behind
            r = requests.post(f"{server.url}/v1/jobs", headers=auth, files=[("file", ("month.zip", big)), request],
                              timeout=120)
            assert r.status_code == 503, r.text
            assert r.json()["errors"][0]["code"] == "JOBS_DISK_FULL" and r.headers["Retry-After"] == "60", r.text
            assert "EINVOICE_JOBS_DIR" in r.json()["message"]
        small = _pdfs(600_000)
        r = requests.post(f"{server.url}/v1/jobs", headers=auth, files=[("file", ("small.zip", small)), request],
                          timeout=120)
        assert r.status_code == 202, r.text
        job = r.json()
        deadline = time.monotonic() + 600
        while job["state"] in ("queued", "running"):
            assert time.monotonic() < deadline, job
            time.sleep(0.5)
            job = requests.get(f"{server.url}/v1/jobs/{job['id']}", headers=auth, timeout=30).json()
        assert job["state"] == "done" and job["done"] == job["total"] == len(zipfile.ZipFile(io.BytesIO(small)).namelist())
        log = (tmp_path / "serve.log").read_text(errors="replace")
        assert "Traceback" not in log and '"status":500' not in log, log[-3000:]
    finally:
        server.stop()
