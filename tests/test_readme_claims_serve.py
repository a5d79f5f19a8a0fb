"""README claims about starting the service and its settings that no other test held, checked on a real `pipeline
serve` (one worker, no warm-up, a fresh SQLite store) and the command line:

- Configuration: `EINVOICE_HOST`, `EINVOICE_PORT` (127.0.0.1, 8000) are "where `pipeline serve` listens; `--host` /
  `--port` win"; an empty variable is no setting, as for every other one (an env file's `EINVOICE_HOST=` bound every
  interface, and an empty or bad `EINVOICE_PORT` broke every `pipeline` command with a traceback; an empty
  `EINVOICE_URL` broke `pipeline jobs`);
- Many documents at once: "a batch costs the single validate endpoint's configured cost (`EINVOICE_CREDIT_COSTS
  /v1/invoice/<spec>/validate=n`) per document that gets a report; ... too small a balance is 402 before any
  validation";
- API keys: "a key's rate limit within 2^31 - 1 per minute"."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from test_platform_helpers import REPO, Server, cli, free_port_in

INVOICE = (REPO / "fixtures/golden/invoice-all-fields.xrechnung.cii.xml").read_bytes()
PORTS = (18650, 18699)


def _serve(tmp: Path, env: dict, *args: str, port: int) -> Server:
    """`pipeline serve` with exactly `args` (no --port unless given) and `env`, waited for on `port`."""
    server = Server.__new__(Server)  # Server always passes --port; this one must not
    server.port, server.url, server.log_path = port, f"http://127.0.0.1:{port}", tmp / "serve.log"
    server._log = open(server.log_path, "wb")
    full = {**os.environ, "EINVOICE_DATA_DIR": str(tmp), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "", **env}
    server.proc = subprocess.Popen([sys.executable, "-m", "pipeline", "serve", "--workers", "1", "--no-warm", *args],
                                   cwd=REPO, env=full, stdout=server._log, stderr=subprocess.STDOUT)
    try:
        server.wait_ready()
    except BaseException:
        server.stop()
        raise
    return server


def _listens(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_serve_listens_on_EINVOICE_PORT_and_port_wins(tmp_path):
    first = free_port_in(*PORTS)
    server = _serve(tmp_path, {"EINVOICE_PORT": str(first)}, port=first)
    try:
        assert requests.get(server.url + "/healthz", timeout=10).status_code == 200
    finally:
        server.stop()
    unused, flag = first, free_port_in(first + 1, PORTS[1])
    server = _serve(tmp_path, {"EINVOICE_PORT": str(unused)}, "--port", str(flag), port=flag)
    try:
        assert requests.get(server.url + "/healthz", timeout=10).status_code == 200
        assert not _listens(unused)
    finally:
        server.stop()


def test_an_empty_EINVOICE_HOST_listens_on_loopback_only(tmp_path):
    port = free_port_in(*PORTS)
    server = _serve(tmp_path, {"EINVOICE_HOST": "", "EINVOICE_PORT": ""}, "--port", str(port), port=port)
    try:
        log = server.log_path.read_text(errors="replace")
        assert f"Listening at: http://127.0.0.1:{port}" in log, log[-2000:]
    finally:
        server.stop()


@pytest.mark.parametrize("value", ["", "abc"])
def test_an_empty_or_bad_EINVOICE_PORT_breaks_no_other_command(tmp_path, value):
    env = {"EINVOICE_DATA_DIR": str(tmp_path), "EINVOICE_DATABASE_URL": "", "EINVOICE_PORT": value}
    listed = cli(env, "keys", "list")
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    if value:  # serve itself says which option is wrong, as a usage error
        served = cli(env, "serve", "--no-warm")
        assert served.returncode == 2 and "--port" in served.stderr and "Traceback" not in served.stderr, \
            served.stderr


def test_a_batch_costs_the_configured_validate_cost_per_document(tmp_path):
    env = {"EINVOICE_DATA_DIR": str(tmp_path), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_CREDIT_COSTS": "/v1/invoice/xrechnung/validate=2"}
    token = cli(env, "keys", "create", "--name", "batch", "--env", "test", "--credits", "5").stdout.strip()
    key_id = token.split("_")[2].split(".")[0]
    port = free_port_in(*PORTS)
    server = _serve(tmp_path, env, "--port", str(port), port=port)
    try:
        auth = {"Authorization": f"Bearer {token}"}
        url = server.url + "/v1/invoice/xrechnung/validate/batch"
        parts = [("file", ("a.xml", INVOICE, "application/xml")), ("file", ("b.xml", INVOICE, "application/xml")),
               ("file", ("bad.zip", b"no zip", "application/zip"))]  # a refused member costs nothing
        r = requests.post(url, files=parts, headers=auth, timeout=120)
        assert r.status_code == 200, r.text[:500]
        assert r.json()["summary"] == {"files": 3, "valid": 2, "invalid": 0, "indeterminate": 0, "errors": 1,
                                           "noInvoice": 0}
        balance = re.search(rf"^{key_id}\s+test\s+(\d+)", cli(env, "keys", "list").stdout, re.M)
        assert balance and balance.group(1) == "1"
        r = requests.post(url, files=parts[:1], headers=auth, timeout=120)  # 2 credits for 1 document, 1 left
        assert r.status_code == 402 and r.json()["errorCode"] == "INSUFFICIENT_CREDITS", r.text[:500]
        assert "costs 2 credit" in r.json()["message"]
    finally:
        server.stop()


def test_a_key_s_rate_limit_is_bounded_by_2_31_minus_1_per_minute(tmp_path):
    env = {"EINVOICE_DATA_DIR": str(tmp_path), "EINVOICE_DATABASE_URL": ""}
    made = cli(env, "keys", "create", "--name", "fast", "--env", "live", "--rate-limit", f"{2 ** 31 - 1}/min")
    assert made.returncode == 0 and made.stdout.startswith("einv_live_"), made.stderr
    refused = cli(env, "keys", "create", "--name", "faster", "--env", "live", "--rate-limit", f"{2 ** 31}/min")
    assert refused.returncode == 2 and "at most 2147483647/min" in refused.stderr, refused.stderr
    assert cli(env, "keys", "list").stdout.count("einv") == 0  # the key is shown once, at creation
    assert len(cli(env, "keys", "list").stdout.strip().splitlines()) == 2  # the header and the one key made


def test_an_empty_EINVOICE_URL_is_the_default_url(tmp_path):
    """`pipeline jobs`: "EINVOICE_URL (default http://127.0.0.1:8000)"; empty, it was a ValueError's traceback."""
    env = {"EINVOICE_URL": "", "EINVOICE_API_KEY": "einv_test_000000000000.x"}
    listed = cli(env, "jobs", "list", "--limit", "1")
    assert listed.returncode == 2 and "Traceback" not in listed.stderr, listed.stderr
    assert listed.stderr.startswith("pipeline jobs: "), listed.stderr
