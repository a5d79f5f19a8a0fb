"""The production front (deploy/): requests/s through nginx vs straight to the nodes, and each node's share.

Two `pipeline serve` nodes (`--workers` each, default 1) on a fresh PostgreSQL schema with Redis rate limits, and
nginx in front of them as `deploy/run-local.sh --nginx-only` starts it. `--clients` threads (default 4), each on
its own keep-alive connection, send POST /v1/invoice/xrechnung/validate with a typical official invoice; rounds
alternate between **direct** (each client talks to one node, half the clients per node: the best balance a
client could do by itself) and **nginx** (every client to nginx, which picks the node), so that load from other
processes on the machine hits both alike. Per round: requests/s and p50 / p99; for nginx also the share each
node got (nginx's access log, `upstream`). `--healthz` sends GET /healthz instead (no work in the app: what the
extra hop costs per request); the per-address limits (30 requests/s) would refuse most of that from one
address, so for it the bench takes them out of its copy of the configuration and reloads nginx.

    python3 bench/bench_front.py [--rounds 6] [--requests 400] [--clients 4] [--workers 1] [--healthz]
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import multipart, sample_invoice  # noqa: E402

PG_BASE = os.environ.get("EINVOICE_TEST_POSTGRES", "postgresql://127.0.0.1:5432/test")
REDIS_URL = os.environ.get("EINVOICE_TEST_REDIS", "redis://127.0.0.1:6379/0")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port: int, proc: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"process on port {port} exited with {proc.returncode}")
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/healthz")
            if c.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"nothing healthy on port {port}")


def drive(ports: list[int], body: bytes | None, headers: dict, count: int,
          clients: int) -> tuple[list[float], dict, float]:
    """`count` requests from `clients` threads, client i on ports[i % len(ports)] over one keep-alive connection."""
    latencies, statuses, lock, left = [], {}, threading.Lock(), [count]

    def client(port):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while True:
            with lock:
                if left[0] <= 0:
                    break
                left[0] -= 1
            t = time.perf_counter()
            if body is None:
                conn.request("GET", "/healthz")
            else:
                conn.request("POST", "/v1/invoice/xrechnung/validate", body=body, headers=headers)
            resp = conn.getresponse()
            resp.read()
            dt = time.perf_counter() - t
            with lock:
                latencies.append(dt)
                statuses[resp.status] = statuses.get(resp.status, 0) + 1
        conn.close()

    threads = [threading.Thread(target=client, args=(ports[i % len(ports)],)) for i in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, statuses, time.perf_counter() - started


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=6, help="rounds of each arm, alternating")
    ap.add_argument("--requests", type=int, default=400, help="requests per round")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--workers", type=int, default=1, help="workers per node")
    ap.add_argument("--healthz", action="store_true", help="GET /healthz instead of a validation")
    args = ap.parse_args()
    if not shutil.which("nginx"):
        raise SystemExit("nginx is not installed (scripts/setup.sh)")

    from pipeline.storage.postgres import PostgresStore

    tmp = Path(tempfile.mkdtemp(prefix="einvoice-front-bench-"))
    schema = "bench_front_" + uuid.uuid4().hex[:8]
    db_url = f"{PG_BASE}?options=-csearch_path%3D{schema}"
    store = PostgresStore(db_url)  # creates the schema
    env = {**os.environ, "EINVOICE_DATABASE_URL": db_url, "EINVOICE_REDIS_URL": REDIS_URL,
           "EINVOICE_RATE_LIMIT": "10000000/min", "PYTHONPATH": str(REPO)}
    token = subprocess.run([sys.executable, "-m", "pipeline", "keys", "create", "--name", "bench", "--env", "test",
                            "--credits", "0"], env={**env, "EINVOICE_DATA_DIR": str(tmp)}, cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.strip()
    procs, node_ports = [], [free_port(), free_port()]
    try:
        for port in node_ports:
            (tmp / str(port)).mkdir()
            log = open(tmp / f"node-{port}.log", "wb")
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "pipeline", "serve", "--port", str(port), "--workers", str(args.workers)],
                cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env={**env, "EINVOICE_DATA_DIR": str(tmp / str(port))}))
        for port, proc in zip(node_ports, procs):
            wait_healthy(port, proc)
        front_port = free_port()
        cmd = ["bash", str(REPO / "deploy" / "run-local.sh"), "--nginx-only", "--port", str(front_port),
               "--dir", str(tmp / "nginx")]
        for port in node_ports:
            cmd += ["--node", f"127.0.0.1:{port}"]
        procs.append(subprocess.Popen(cmd, stdout=open(tmp / "front.out", "wb"), stderr=subprocess.STDOUT))
        wait_healthy(front_port, procs[-1])
        if args.healthz:
            conf = tmp / "nginx" / "nginx.conf"
            conf.write_text("\n".join(line for line in conf.read_text().splitlines()
                                      if not line.strip().startswith(("limit_req zone=", "limit_conn per_address"))))
            os.kill(int((tmp / "nginx" / "logs" / "nginx.pid").read_text()), signal.SIGHUP)
            time.sleep(2)  # the new workers take over

        body, ctype = multipart(sample_invoice())
        headers = {"Authorization": f"Bearer {token}", "Content-Type": ctype}
        if args.healthz:
            body = None
        drive(node_ports, body, headers, 100, args.clients)  # warm both arms
        drive([front_port], body, headers, 100, args.clients)
        access = tmp / "nginx" / "logs" / "access.log"
        rates: dict[str, list[float]] = {"direct": [], "nginx": []}
        what = "GET /healthz" if args.healthz else "validations"
        print(f"{args.clients} clients, keep-alive, {args.requests} {what} per round, 2 nodes x "
              f"{args.workers} worker(s), PostgreSQL + Redis")
        for r in range(args.rounds):
            for arm, ports in (("direct", node_ports), ("nginx", [front_port])):
                seen = len(access.read_text().splitlines())
                lat, statuses, elapsed = drive(ports, body, headers, args.requests, args.clients)
                q = statistics.quantiles(lat, n=100)
                rates[arm].append(len(lat) / elapsed)
                line = (f"  round {r + 1} {arm:<7}{len(lat) / elapsed:8.1f} req/s   "
                        f"p50 {statistics.median(lat) * 1000:6.2f} ms   p99 {q[98] * 1000:6.2f} ms   {statuses}")
                if arm == "nginx":
                    shares: dict[str, int] = {}
                    for entry in access.read_text().splitlines()[seen:]:
                        upstream = json.loads(entry)["upstream"]
                        shares[upstream] = shares.get(upstream, 0) + 1
                    line += "   per node " + ", ".join(f"{u}: {n}" for u, n in sorted(shares.items()))
                print(line, flush=True)
        d, n = statistics.median(rates["direct"]), statistics.median(rates["nginx"])
        print(f"median: direct {d:.1f} req/s, through nginx {n:.1f} req/s ({n / d:.2f} x)")
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        store.drop_schema()
        store.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
