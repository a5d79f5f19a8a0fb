"""The harness's wait for a started server (test_platform_helpers.Server.wait_ready): as long as the server makes
progress, by its log or its CPU time, however long that takes on a busy machine; a server that does nothing is
given up after the stall window. Stand-in servers: Python processes that work (CPU or log lines) for a while
before /healthz answers, and one that only sleeps."""
from __future__ import annotations

import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from test_platform_helpers import Server, free_port

SERVE_AFTER = """
import http.server, sys, time
kind, seconds, log = sys.argv[1], float(sys.argv[2]), sys.argv[3]
end = time.monotonic() + seconds
while time.monotonic() < end:
    if kind == "cpu":
        sum(range(10000))
    elif kind == "log":
        open(log, "a").write("warming\\n"); time.sleep(0.3)
    else:
        time.sleep(0.3)
class Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers()
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[4])), Ok).serve_forever()
"""


def stand_in(kind: str, seconds: float, tmp_path):
    port, log = free_port(), tmp_path / "serve.log"
    proc = subprocess.Popen([sys.executable, "-c", SERVE_AFTER, kind, str(seconds), str(log), str(port)])
    return SimpleNamespace(proc=proc, url=f"http://127.0.0.1:{port}", log_path=log), proc


@pytest.mark.parametrize("kind", ["cpu", "log"])
def test_a_server_at_work_is_waited_for_beyond_the_stall_window(kind, tmp_path):
    server, proc = stand_in(kind, 6, tmp_path)
    try:
        started = time.monotonic()
        Server.wait_ready(server, stall=3)
        assert time.monotonic() - started >= 5.5  # came up after its work, past two stall windows
    finally:
        proc.kill()
        proc.wait()


def test_a_server_that_does_nothing_is_given_up(tmp_path):
    server, proc = stand_in("sleep", 600, tmp_path)
    try:
        started = time.monotonic()
        with pytest.raises(RuntimeError, match="did not come up.*without progress"):
            Server.wait_ready(server, stall=3)
        assert time.monotonic() - started < 60
    finally:
        proc.kill()
        proc.wait()
