"""The validate endpoint over HTTP against the same validation in process (issue 15: at most 1.15 x).

    python3 bench/bench_http.py [--runs 60] [--port 8973] [--profile] [--parts] [--baseline DIR] [--pin] [--gaps]

Starts `pipeline serve --workers 1` (the full platform layer: API key, rate limit, credits on a SQLite store in a
temporary folder) and sends POST /v1/invoice/xrechnung/validate over ONE keep-alive connection. Each round
interleaves, on the same document: **in-process** = `validate_xml(data, content_checks=True)`, the work the
endpoint does (official rules + our content checks); **rules only** = `validate_xml(data)`; **HTTP** = the POST
from send to the last byte of the JSON report; **app** = the access log's durationMs of that POST (the app's own
time in the worker). Ratio = HTTP / in-process, medians. Documents: XRechnung business
cases 01.01a (typical) and 01.15a (a ~200 KB attachment), CII and UBL.

`--baseline DIR`: a second server from another checkout (e.g. `git worktree add /tmp/old HEAD`) on port+1, same
store and key; every round then also sends the POST to it (the two servers' turns alternate from round to round),
and a `GET /healthz` to both and to a bare socket echo (a loopback process that answers every read with a fixed
response: the kernel's and the client's part of a round trip), so that old and new worker are compared in one run.

`--gaps`: POSTs of CII 01.01a to the same server with nothing, a sleep or client validations between them (two
rounds of 40 each): how the worker's own time (access log durationMs) grows with the time it sat idle.

`--profile`: cProfile of 200 requests through Falcon's TestClient with the platform layer off (what the request
path costs besides validation: multipart parsing, middleware, the JSON report), grouped by module.
`--parts`: each step of the request path timed in process, with the platform layer on (SQLite in a temporary
folder): every request follows a validation, as in a worker, so the steps run with the caches the validation left
(cold: several times their cost in a tight loop). Medians in microseconds.
"""
from __future__ import annotations

import argparse
import cProfile
import http.client
import json
import logging
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
CASES = REPO.parent / "shared" / "corpus" / "xrechnung-testsuite" / "business-cases" / "standard"
DOCUMENTS = {f"{syntax} {case}": CASES / f"{case}-INVOICE_{suffix}.xml"
             for case in ("01.01a", "01.15a") for syntax, suffix in (("CII", "uncefact"), ("UBL", "ubl"))}

from bench_validate import multipart  # noqa: E402
from load import start_server  # noqa: E402
from pipeline.check import engine  # noqa: E402
from pipeline.flows.validate_xml import validate_xml  # noqa: E402


ECHO = """
import socket, sys
answer = (b"HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nContent-Length: 16\\r\\n\\r\\n"
          b'{"status": "ok"}')
listener = socket.create_server(("127.0.0.1", int(sys.argv[1])))
while True:
    conn, _ = listener.accept()
    while conn.recv(65536):
        conn.sendall(answer)
    conn.close()
"""


def start_baseline(checkout: str, port: int, env: dict) -> subprocess.Popen:
    """`pipeline serve --workers 1` from another checkout, sharing the store (and so the key) of `env`."""
    with open(Path(env["EINVOICE_DATA_DIR"]) / "baseline.log", "wb") as log:
        server = subprocess.Popen([sys.executable, "-m", "pipeline", "serve", "--port", str(port), "--workers", "1"],
                                  env={**env, "PYTHONPATH": checkout}, cwd=checkout, stdout=log,
                                  stderr=subprocess.STDOUT)
    for _ in range(300):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/readyz")
            if c.getresponse().status == 200:
                return server
        except OSError:
            pass
        time.sleep(0.2)
    server.terminate()
    raise SystemExit(f"baseline server in {checkout} did not become ready")


def get(conn: http.client.HTTPConnection, path: str = "/healthz") -> None:
    conn.request("GET", path)
    resp = conn.getresponse()
    resp.read()


def app_times(log: Path) -> dict[str, float]:
    """durationMs of the access log lines by request id: the app's own time in the worker (Falcon, middleware,
    validation), so that HTTP - app is what the worker loop, gunicorn, the kernel and the client add."""
    times = {}
    for line in log.read_text().splitlines():
        if line.startswith('{"event":"request"'):
            entry = json.loads(line)
            times[entry["requestId"]] = entry["durationMs"]
    return times


def idle_gaps(conn: http.client.HTTPConnection, token: str, log: Path, rounds: int = 2, n: int = 40) -> None:
    data = DOCUMENTS["CII 01.01a"].read_bytes()
    body, ctype = multipart(data)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": ctype}
    gaps = {"none": lambda: None, "sleep 3.4 ms": lambda: time.sleep(0.0034), "sleep 12 ms": lambda: time.sleep(0.012),
            "1 validation": lambda: validate_xml(data, content_checks=True),
            "3 validations": lambda: [validate_xml(data, content_checks=True) for _ in range(3)]}
    http_ms: dict[str, list[float]] = {}
    for rnd in range(rounds):
        for gap, run in gaps.items():
            spent = []
            for r in range(n):
                run()
                t = time.perf_counter()
                post(conn, body, {**headers, "X-Request-Id": f"gap-{rnd}-{gap.replace(' ', '_')}-{r}"})
                spent.append(time.perf_counter() - t)
            http_ms.setdefault(gap, []).append(statistics.median(spent) * 1000)
    time.sleep(0.2)
    app = app_times(log)
    print(f"\nCII 01.01a, POSTs after a gap in the client; medians of {n} per round, ms")
    print(f"{'gap':14} {'HTTP':>14} {'app in worker':>14}")
    for gap, values in http_ms.items():
        worker = [statistics.median(app[f"gap-{rnd}-{gap.replace(' ', '_')}-{r}"] for r in range(n))
                  for rnd in range(rounds)]
        print(f"{gap:14} {' / '.join(f'{v:.2f}' for v in values):>14} {' / '.join(f'{v:.2f}' for v in worker):>14}")


def post(conn: http.client.HTTPConnection, body: bytes, headers: dict) -> bytes:
    conn.request("POST", "/v1/invoice/xrechnung/validate", body=body, headers=headers)
    resp = conn.getresponse()
    answer = resp.read()
    if resp.status != 200:
        raise SystemExit(f"HTTP {resp.status}: {answer[:300]!r}")
    return answer


def profile_request_path(n: int = 200) -> None:
    import falcon.testing

    from pipeline.service.app import create_app

    client = falcon.testing.TestClient(create_app(platform=False))
    body, ctype = multipart(DOCUMENTS["CII 01.01a"].read_bytes())
    for _ in range(20):
        client.simulate_post("/v1/invoice/xrechnung/validate", body=body, headers={"Content-Type": ctype})
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        client.simulate_post("/v1/invoice/xrechnung/validate", body=body, headers={"Content-Type": ctype})
    prof.disable()
    stats = pstats.Stats(prof)
    by_module: dict[str, float] = {}
    for (file, _, _), (_, _, tottime, _, _) in stats.stats.items():
        key = file if "site-packages" not in file else file.split("site-packages/")[1].split("/")[0]
        key = key.replace(str(REPO) + "/", "")
        by_module[key] = by_module.get(key, 0.0) + tottime
    total = sum(by_module.values())
    print(f"\nprofile: {n} requests (CII 01.01a) through TestClient, platform off; own time per module, ms/request")
    for key, t in sorted(by_module.items(), key=lambda kv: -kv[1])[:18]:
        print(f"  {t / n * 1000:7.3f}  {100 * t / total:5.1f} %  {key}")


def time_request_path(n: int = 200) -> None:
    import falcon.testing
    import tempfile

    from pipeline.service import accesslog, platform, requestid, upload
    from pipeline.service.app import create_app
    from pipeline.storage import ratelimit, sql

    os.environ.update({"EINVOICE_DATA_DIR": tempfile.mkdtemp(prefix="einvoice-parts-"), "EINVOICE_DATABASE_URL": "",
                       "EINVOICE_REDIS_URL": "", "EINVOICE_RATE_LIMIT": "1000000/min"})
    from pipeline.settings import get_settings
    getattr(get_settings, "cache_clear", lambda: None)()
    from pipeline.service import apikeys
    key_id, token, secret_hash = apikeys.mint("test")
    platform.shared().store().create_key(key_id, "parts", "test", secret_hash, 0, None)
    # the access log as the service writes it (pipeline.cli.serve: INFO, one line per request), to a file here
    handler = logging.FileHandler(os.path.join(os.environ["EINVOICE_DATA_DIR"], "access.log"))
    handler.setFormatter(logging.Formatter("%(message)s"))
    logging.getLogger("pipeline").addHandler(handler)
    logging.getLogger("pipeline").setLevel(logging.INFO)
    logging.getLogger("pipeline").propagate = False
    spent: dict[str, list[float]] = {}

    def timed(owner, name, label):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent.setdefault(label, []).append(time.perf_counter() - t)
        setattr(owner, name, wrapper)
    for owner, name, label in (
            (requestid.RequestIdMiddleware, "process_request", "request id"),
            (platform.PlatformMiddleware, "process_resource", "platform: all before the resource"),
            (sql.SqlStore, "get_key", "  key lookup (SQLite)"),
            (ratelimit.SqliteLimiter, "hit", "  rate limit hit (SQLite upsert)"),
            (platform.Backends, "sweep", "  sweep (owed charges, expired reservations)"),
            (upload, "read_validation_upload", "multipart upload"),
            (upload, "answer_report", "report: to_dict (Falcon dumps the JSON after it)"),
            (platform.PlatformMiddleware, "process_response", "platform: after the resource"),
            (accesslog.AccessLogMiddleware, "process_response", "access log line")):
        timed(owner, name, label)
    from pipeline.service.resources import validation
    validation.read_validation_upload, validation.answer_report = upload.read_validation_upload, upload.answer_report
    client = falcon.testing.TestClient(create_app(platform=True))
    data = DOCUMENTS["CII 01.01a"].read_bytes()
    body, ctype = multipart(data)
    headers = {"Content-Type": ctype, "Authorization": f"Bearer {token}"}
    for r in range(20 + n):
        if r == 20:
            spent.clear()
        validate_xml(data, content_checks=True)
        client.simulate_post("/v1/invoice/xrechnung/validate", body=body, headers=headers)
    print(f"\nrequest path steps after a validation (CII 01.01a, TestClient, platform on, SQLite), medians of {n}, us")
    for label, values in spent.items():
        print(f"  {statistics.median(values) * 1e6:7.1f}  {label}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--port", type=int, default=8973)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--parts", action="store_true")
    ap.add_argument("--baseline", metavar="DIR", help="checkout whose server to compare with, in the same rounds")
    ap.add_argument("--pin", action="store_true", help="this process on the first core, the servers on the last")
    ap.add_argument("--gaps", action="store_true", help="the worker's time after idle gaps of several lengths")
    args = ap.parse_args()

    engine.warm_up()
    server, token, env = start_server(args.port, 1)
    others = []
    try:
        servers = {"HTTP": args.port}
        if args.baseline:
            others.append(start_baseline(args.baseline, args.port + 1, env))
            others.append(subprocess.Popen([sys.executable, "-c", ECHO, str(args.port + 2)]))
            time.sleep(0.5)
            servers["baseline"] = args.port + 1
        if args.pin:  # as with a remote client: the worker's caches are not the client's validation's
            cores = sorted(os.sched_getaffinity(0))
            for proc in [server] + others:
                for pid in [proc.pid] + subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                                       text=True).stdout.split():
                    os.sched_setaffinity(int(pid), {cores[-1]})
            os.sched_setaffinity(0, {cores[0]})
        conns = {name: http.client.HTTPConnection("127.0.0.1", port, timeout=60) for name, port in servers.items()}
        echo = http.client.HTTPConnection("127.0.0.1", args.port + 2, timeout=60) if args.baseline else None
        load = os.getloadavg()
        print(f"pipeline serve --workers 1, one keep-alive connection, platform layer on (SQLite); load "
              f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
        columns = ["rules", "inproc"] + [n for n in servers] + [f"{n} app" for n in servers]
        columns += [f"{n}/in" for n in servers]
        if args.baseline:
            columns += ["healthz", "healthz base", "echo"]
        print(f"\n{'document':12} {'KB':>5} " + " ".join(f"{c:>12}" for c in columns) + "  (ms)")
        for name, path in DOCUMENTS.items():
            data = path.read_bytes()
            body, ctype = multipart(data)
            headers = {"Authorization": f"Bearer {token}", "Content-Type": ctype}
            times: dict[str, list[float]] = {c: [] for c in columns}
            for r in range(5 + args.runs):
                t = time.perf_counter()
                validate_xml(data)
                t1 = time.perf_counter()
                validate_xml(data, content_checks=True)
                t2 = time.perf_counter()
                spent = {"rules": t1 - t, "inproc": t2 - t1}
                order = list(servers) if r % 2 == 0 else list(servers)[::-1]
                for n in order:  # each POST follows a validation here, as the first did before --baseline
                    if n != order[0]:
                        validate_xml(data, content_checks=True)
                    t = time.perf_counter()
                    post(conns[n], body, {**headers, "X-Request-Id": f"bench-{n}-{r}"})
                    spent[n] = time.perf_counter() - t
                if args.baseline:
                    for label, conn in (("healthz", conns["HTTP"]), ("healthz base", conns["baseline"]),
                                        ("echo", echo)):
                        t = time.perf_counter()
                        get(conn)
                        spent[label] = time.perf_counter() - t
                if r >= 5:
                    for c, v in spent.items():
                        times[c].append(v * 1000)
            time.sleep(0.2)  # the access lines reach the logs
            for n, log in (("HTTP", "serve.log"), ("baseline", "baseline.log")):
                if n in servers:
                    app = app_times(Path(env["EINVOICE_DATA_DIR"]) / log)
                    times[f"{n} app"] = [app[f"bench-{n}-{r}"] for r in range(5, 5 + args.runs)]
            m = {c: statistics.median(v) for c, v in times.items() if v}
            for n in servers:
                m[f"{n}/in"] = m[n] / m["inproc"]
            print(f"{name:12} {len(data) / 1024:5.0f} " + " ".join(f"{m[c]:12.3f}" for c in columns), flush=True)
        if args.gaps:
            idle_gaps(conns["HTTP"], token, Path(env["EINVOICE_DATA_DIR"]) / "serve.log")
        for conn in list(conns.values()) + ([echo] if echo else []):
            conn.close()
    finally:
        for proc in [server] + others:
            proc.terminate()
            proc.wait(60)
    load = os.getloadavg()
    print(f"\nload after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; medians of {args.runs} interleaved rounds"
          + ("; healthz / echo: GET round trips after the POSTs, us figures in ms" if args.baseline else ""))
    if args.profile:
        profile_request_path()
    if args.parts:
        time_request_path()
    return 0


if __name__ == "__main__":
    sys.exit(main())
