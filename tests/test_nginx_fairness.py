"""deploy/nginx.conf counts its per-client limits (limit_req, limit_conn) by the client as a node does
(pipeline/cli/serve.py `_client_group`): an IPv4 address alone, a global IPv6 address by its /64, other IPv6
addresses alone. Keyed by the whole address, one host on its /64 took a new address for every request and was never
limited. The clients' addresses come from X-Forwarded-For through nginx's real_ip, as the file's comment says to
configure behind a trusted load balancer (loopback has no global IPv6 addresses to connect from)."""
from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import requests

from test_platform_helpers import REPO, Server, cli, free_port_in

from faults_common import wait_for


class RealIpFront:
    """nginx from its own prefix with deploy/nginx.conf as shipped plus real_ip for 127.0.0.1 (the clients' addresses
    in X-Forwarded-For), in front of one node, started as deploy/run-local.sh starts it."""

    def __init__(self, prefix: Path, node_port: int, ports: tuple[int, int] = (18550, 18599)):
        assert shutil.which("nginx"), "Debian's nginx is not installed: scripts/setup.sh (apt-get install nginx)"
        (prefix / "logs").mkdir(parents=True)
        (prefix / "tmp").mkdir()
        conf = (REPO / "deploy" / "nginx.conf").read_text()
        assert conf.count("\nhttp {\n") == 1
        conf = conf.replace("\nhttp {\n", "\nhttp {\n    set_real_ip_from 127.0.0.1;\n"
                                          "    real_ip_header X-Forwarded-For;\n")
        (prefix / "nginx.conf").write_text(conf)
        (prefix / "nodes.conf").write_text(f"server 127.0.0.1:{node_port} max_fails=1 fail_timeout=5s;\n")
        self.port = free_port_in(*ports)
        (prefix / "listen.conf").write_text(f"listen 127.0.0.1:{self.port};\n")
        globals_ = "daemon off;" + (" user root;" if os.getuid() == 0 else "")
        self.out = open(prefix / "nginx.out", "wb")
        self.proc = subprocess.Popen(["nginx", "-p", f"{prefix}/", "-c", str(prefix / "nginx.conf"), "-g", globals_],
                                     stdout=self.out, stderr=subprocess.STDOUT)
        up = wait_for(lambda: self.proc.poll() is not None or self.get("127.0.0.1")[0] == 200, 30)
        assert up and self.proc.poll() is None, (prefix / "nginx.out").read_text()

    def get(self, client: str, conn: http.client.HTTPConnection | None = None) -> tuple[int | None, str]:
        """GET /healthz as `client`: (status, errorCode or "")."""
        own = conn is None
        conn = conn or http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", "/healthz", headers={"X-Forwarded-For": client})
            answer = conn.getresponse()
            body = answer.read()
            return answer.status, body.decode() if answer.status != 200 else ""
        except OSError:
            return None, ""
        finally:
            if own:
                conn.close()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.out.close()


@pytest.fixture(scope="module")
def front(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fair")
    env = {"EINVOICE_DATA_DIR": str(tmp / "node"), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": ""}
    node = Server(env, workers=1, port=free_port_in(18500, 18549), log_path=tmp / "node.log")
    try:
        f = RealIpFront(tmp / "nginx", node.port)
    except BaseException:
        node.stop()
        raise
    yield f
    f.stop()
    node.stop()


def _flood(front, addresses: list[str]) -> tuple[list[int | None], float]:
    """One request from each address, in a row on one keep-alive connection: the statuses and the seconds taken."""
    conn = http.client.HTTPConnection("127.0.0.1", front.port, timeout=10)
    started = time.monotonic()
    statuses = [front.get(address, conn)[0] for address in addresses]
    elapsed = time.monotonic() - started
    conn.close()
    return statuses, elapsed


def test_one_host_on_many_addresses_of_its_ipv6_64_is_one_client(front):
    """150 requests, each from a new address of one global /64: limited after the burst (60) as one address is;
    another /64 of the same /48 is another client, and so is an IPv4 client."""
    statuses, elapsed = _flood(front, [f"2a01:4f8:10:7::{i:x}" for i in range(1, 151)])
    passed = statuses.count(200)
    assert statuses.count(429) == 150 - passed, statuses
    assert 60 <= passed <= 61 + 30 * elapsed + 2, (passed, elapsed)
    assert front.get("2a01:4f8:10:8::1")[0] == 200
    assert front.get("203.0.113.7")[0] == 200


def test_other_ipv6_addresses_count_alone(front):
    """Unique-local addresses (a private network, as 10.0.0.0/8), Teredo ones (their /64 is the Teredo server all its
    clients share) and IPv4 ones each count alone: 70 requests from 70 addresses of one /64 of fd00::/8 or of
    2001::/32, or of one IPv4 /24, all pass (one address's burst is 60)."""
    for addresses in ([f"fd00:1:2:3::{i:x}" for i in range(1, 71)],
                      [f"2001:0:4136:e378:8000:63bf:3fff:{i:x}" for i in range(1, 71)],
                      [f"198.51.100.{i}" for i in range(1, 71)]):
        statuses, _ = _flood(front, addresses)
        assert statuses == [200] * 70, statuses


@pytest.fixture(scope="module")
def capped(tmp_path_factory):
    """One warm node whose worker holds at most 24 connections (EINVOICE_MAX_WORKER_CONNECTIONS, 1,000 scaled down),
    behind nginx, and a key with a rate limit that does not bind."""
    tmp = tmp_path_factory.mktemp("capped")
    env = {"EINVOICE_DATA_DIR": str(tmp / "node"), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_MAX_WORKER_CONNECTIONS": "24", "EINVOICE_RATE_LIMIT": "100000/min"}
    token = cli(env, "keys", "create", "--name", "fair", "--env", "test", "--credits", "0").stdout.strip()
    assert token.startswith("einv_test_"), token
    node = Server(env, workers=1, port=free_port_in(18900, 18949), warm=True, log_path=tmp / "node.log")
    try:
        f = RealIpFront(tmp / "nginx", node.port, ports=(18950, 18999))
    except BaseException:
        node.stop()
        raise
    yield f, token, tmp / "node.log"
    f.stop()
    node.stop()


def test_a_client_behind_nginx_is_served_while_two_others_fill_the_nodes_connections(capped):
    """Two clients flood validations through nginx (28 in progress each, within nginx's 32 per client), more than the
    node's worker holds connections (24): every connection of nginx's to the node carries one of their requests. A
    third client's validations, one after the other, are all answered 200: its request comes in, names its client, and
    the newest queued request of the client holding the most is answered 503 TOO_MANY_CONNECTIONS instead (the fair
    queue then runs it next). Before, the node turned away the connection that carried it (503 on 10 of 10), and the
    idle connections it closed to make room were ones nginx had just sent a request on (503 and 502 answers). No
    answer is a 502 from nginx: nothing closes a connection nginx has just sent a request on."""
    from test_serve import _multipart, _ubl_sample  # (its module's fixtures and imports only for this test)

    front, token, log = capped
    sample = _ubl_sample()
    head, _, rest = sample.partition(b"<cac:InvoiceLine>")
    line, _, tail = rest.partition(b"</cac:InvoiceLine>")
    document = head + (b"<cac:InvoiceLine>" + line + b"</cac:InvoiceLine>") * 60 + tail
    prepared = requests.Request("POST", "http://x/v1/invoice/xrechnung/validate", files=_multipart(document),
                                headers={"Authorization": f"Bearer {token}"}).prepare()

    def post(client: str, out: list) -> int | None:
        conn = http.client.HTTPConnection("127.0.0.1", front.port, timeout=120)
        try:
            conn.request("POST", "/v1/invoice/xrechnung/validate", body=prepared.body,
                         headers={**prepared.headers, "X-Forwarded-For": client})
            answer = conn.getresponse()
            body = answer.read()
            code = json.loads(body).get("errorCode") if answer.status != 200 else None
            out.append((answer.status, code))
            return answer.status
        except OSError as exc:
            out.append((None, repr(exc)))
            return None
        finally:
            conn.close()

    stop, flood = threading.Event(), []

    def attacker(client: str) -> None:
        while not stop.is_set():
            if post(client, flood) != 200:
                time.sleep(0.05)  # (refused at once: no busy loop on a 2-core host)

    threads = [threading.Thread(target=attacker, args=(f"198.51.100.{1 + i % 2}",)) for i in range(56)]
    for thread in threads:
        thread.start()
    good = []
    try:
        time.sleep(3)  # the node's connections fill
        for _ in range(10):
            post("203.0.113.9", good)
            time.sleep(0.3)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    flooded = Counter(flood)
    assert good == [(200, None)] * 10, (Counter(good), flooded)
    assert flooded[(503, "TOO_MANY_CONNECTIONS")] > 0, flooded  # the cap bound: room was made at the flood's expense
    assert not [k for k in flooded if k[0] in (None, 502)], flooded
    said = log.read_text()
    assert "a request not begun refused" in said and "203.0.113.9 via" not in said
