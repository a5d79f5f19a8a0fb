"""Fault: the rate limiter (Redis) is unreachable. Every API call answers 503 (fail closed), so /readyz must
say not ready, naming the limiter, within its own timeout; /healthz stays up; both recover with Redis."""
from __future__ import annotations

import time

import pytest
import requests

from fault_proxy import FaultProxy
from test_platform_helpers import REDIS_URL, Server, cli, free_port
from test_serve import _multipart, _ubl_sample

READY_BOUND = 1.6  # EINVOICE_READY_TIMEOUT 1 s


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    data = tmp_path_factory.mktemp("ready")
    proxy = FaultProxy(int(REDIS_URL.rsplit(":", 1)[1].split("/")[0]))
    env = {"EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "",
           "EINVOICE_REDIS_URL": f"redis://127.0.0.1:{proxy.port}/0"}
    token = cli(env, "keys", "create", "--name", "ready", "--env", "test", "--credits", "0").stdout.strip()
    server = Server(env, workers=2, warm=True, log_path=data / "serve.log")
    yield server, proxy, token
    server.stop()
    proxy.stop()


def _ready(server):
    t = time.perf_counter()
    r = requests.get(server.url + "/readyz", timeout=30)
    return r, time.perf_counter() - t


def test_ready_covers_the_rate_limiter(node):
    server, proxy, token = node
    r, _ = _ready(server)
    assert r.status_code == 200 and r.json()["rateLimiter"] == "ok" and r.json()["storage"] == "ok"
    for mode in ("swallow", "reset"):
        if mode == "swallow":
            proxy.set_mode("swallow")
        try:
            if mode == "reset":
                proxy.reset()
                proxy.set_mode("swallow")
            t = time.perf_counter()
            api = requests.post(server.url + "/v1/invoice/xrechnung/validate", files=_multipart(_ubl_sample()),
                                headers={"Authorization": f"Bearer {token}"}, timeout=30)
            assert api.status_code == 503 and api.json()["errorCode"] == "RATE_LIMIT_CONFIGURATION_UNAVAILABLE"
            assert time.perf_counter() - t < 2
            for _ in range(3):
                r, took = _ready(server)
                assert r.status_code == 503 and took < READY_BOUND, (r.status_code, took)
                assert "rate limiter" in r.json()["message"] and "storage" not in r.json()["message"]
            t = time.perf_counter()
            assert requests.get(server.url + "/healthz", timeout=5).status_code == 200
            assert time.perf_counter() - t < 0.5
        finally:
            proxy.set_mode("pass")
        r, _ = _ready(server)
        assert r.status_code == 200, r.text


def test_ready_is_not_ready_with_redis_on_a_dead_port(tmp_path):
    env = {"EINVOICE_DATA_DIR": str(tmp_path), "EINVOICE_DATABASE_URL": "",
           "EINVOICE_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"}
    server = Server(env, workers=1, warm=False, log_path=tmp_path / "serve.log")
    try:
        r, took = _ready(server)
        assert r.status_code == 503 and "rate limiter" in r.json()["message"] and took < READY_BOUND
    finally:
        server.stop()
