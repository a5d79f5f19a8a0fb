"""Load run on loopback: `pipeline serve --workers 2` in its own process, this process as the client.

For POST /v1/invoice/xrechnung/validate (a typical official invoice), the same endpoint on the corpus mix (every
XRechnung business case of ../shared/corpus, CII and UBL, 14 of 37 with an attachment, in turn) and
POST /v1/invoice/xrechnung (a fixture request) it prints throughput (requests/s) and p50/p99 latency with the full
platform layer on (SQLite store, keys, credits, rate limits). Then it drives the service to 10,000 requests in total and prints each worker's
resident memory at checkpoints (growth would show a leak). Last, POST /v1/invoice/zugferd (the all-fields
fixture as a PDF/A-3 with its attachments) with memory before and after. Bounded in count and in time.

    python3 bench/load.py [--requests 1000] [--concurrency 4] [--total 10000] [--zugferd 300] [--seconds 300]
                          [--rounds 3] [--ab-requests 1500] [--baseline DIR [--baseline-python PY]
                          [--baseline-rules-home DIR]] [--ceiling-only] [--floor]

First (issue 29) the ceiling comparison: XRechnung 01.01a CII validated in this process (the median gives the
ceiling of 2 workers as issue 29 defines it, 2 / median; the mean, what back-to-back validations sustain, gives the
rate two processes reach, 2 / mean: a validation's times lean right, the mean 1-13 % above the median) against
`pipeline serve --workers 2` driven by `ab` (needs apache2-utils), on the embedded SQLite default and on
PostgreSQL + Redis (EINVOICE_TEST_POSTGRES / EINVOICE_TEST_REDIS, defaults 127.0.0.1:5432/test in a schema of its
own and 127.0.0.1:6379/0), in alternating rounds, with their ratio.
`--baseline DIR` runs another source tree's service (e.g. `git archive main | tar -x -C DIR`) in the same rounds,
with its own interpreter (`--baseline-python`: another venv, e.g. another saxonche) and rule packs
(`--baseline-rules-home`: the optimised copies that tree's code makes) when given.
`--floor` adds the same workers serving a bare WSGI app (the file part split out of the body, `validate_xml`,
the report's JSON; no Falcon, key, limiter or log): the ratio no app in this worker can pass.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"


def sample_invoice() -> bytes:
    from lxml import etree

    for path in sorted((CORPUS / "xrechnung-testsuite").rglob("*ubl*.xml")):
        data = path.read_bytes()
        if etree.fromstring(data).tag == "{urn:oasis:names:specification:ubl:schema:xsd:Invoice-2}Invoice":
            return data
    raise SystemExit("no UBL sample in ../shared/corpus")


def typical_invoice(syntax: str = "CII") -> bytes:
    """XRechnung business case 01.01a (one line), CII by default: the document of issue 29's ceiling."""
    name = {"CII": "01.01a-INVOICE_uncefact.xml", "UBL": "01.01a-INVOICE_ubl.xml"}[syntax]
    return (CORPUS / "xrechnung-testsuite" / "business-cases" / "standard" / name).read_bytes()


def corpus_mix() -> list[bytes]:
    """Every XRechnung business case of the corpus (standard and extension, CII and UBL), in a fixed order."""
    return [p.read_bytes() for p in sorted((CORPUS / "xrechnung-testsuite" / "business-cases").rglob("*.xml"))]


def multipart(xml: bytes) -> tuple[bytes, str]:
    b = "loadboundary7f3a"
    body = (f"--{b}\r\nContent-Disposition: form-data; name=\"request\"\r\nContent-Type: application/json\r\n\r\n"
            f"{{}}\r\n--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"i.xml\"\r\n"
            f"Content-Type: application/xml\r\n\r\n").encode() + xml + f"\r\n--{b}--\r\n".encode()
    return body, f"multipart/form-data; boundary={b}"


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def workers_of(master: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == master:
                pids.append(int(entry.name))
    return sorted(pids)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PG_BASE = os.environ.get("EINVOICE_TEST_POSTGRES", "postgresql://127.0.0.1:5432/test")
REDIS_URL = os.environ.get("EINVOICE_TEST_REDIS", "redis://127.0.0.1:6379/0")


def start_server(port: int, workers: int, storage: str = "sqlite", source: Path = REPO, python: str = sys.executable,
                 rules_home: str | None = None) -> tuple[subprocess.Popen, str, dict]:
    """`pipeline serve` with its own store and an API key holding 1,000,000 credits, once /readyz answers 200:
    (process, key, environment). `storage`: "sqlite" (the embedded default, in a temporary folder that also
    holds serve.log) or "postgres" (PostgreSQL in a schema of its own + Redis, the multi-node configuration).
    `source`: the source tree the service runs from (another checkout, for before / after in one run); `python`
    and `rules_home`: its interpreter (another venv, e.g. another saxonche release) and its rule packs."""
    data = Path(tempfile.mkdtemp(prefix="einvoice-load-"))
    env = {**os.environ, "EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_RATE_LIMIT": "1000000/min", "PYTHONPATH": str(source)}
    if rules_home:
        env["EINVOICE_RULES_HOME"] = rules_home
    if storage == "postgres":
        env["EINVOICE_DATABASE_URL"] = f"{PG_BASE}?options=-csearch_path%3Dload_{data.name.split('-')[-1].lower()}"
        env["EINVOICE_REDIS_URL"] = REDIS_URL
    token = subprocess.run([python, "-m", "pipeline", "keys", "create", "--name", "load", "--env", "test",
                            "--credits", "1000000"], env=env, cwd=source, capture_output=True, text=True,
                           check=True).stdout.strip()
    with open(data / "serve.log", "wb") as log:
        server = subprocess.Popen([python, "-m", "pipeline", "serve", "--port", str(port), "--workers",
                                   str(workers)], env=env, cwd=source, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/readyz")
            if c.getresponse().status == 200:
                return server, token, env
        except OSError:
            pass
        time.sleep(0.2)
    server.terminate()
    raise SystemExit(f"service did not become ready (log: {data / 'serve.log'})")


def drive(port, path, body, headers, count, concurrency, deadline) -> tuple[list[float], dict, float]:
    """Send `count` requests from `concurrency` threads (stopping at `deadline`); latencies and statuses.
    `body` may be a list of bodies, sent in turn."""
    latencies, statuses, lock = [], {}, threading.Lock()
    left = [count]
    bodies = body if isinstance(body, list) else [body]

    def worker():
        while True:
            with lock:
                if left[0] <= 0 or time.monotonic() > deadline:
                    return
                left[0] -= 1
                body = bodies[left[0] % len(bodies)]
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            t = time.perf_counter()
            conn.request("POST", path, body=body, headers=headers)
            resp = conn.getresponse()
            resp.read()
            dt = time.perf_counter() - t
            conn.close()
            with lock:
                latencies.append(dt)
                statuses[resp.status] = statuses.get(resp.status, 0) + 1

    started = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, statuses, time.perf_counter() - started


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time the processes have used (from /proc/PID/stat)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def in_process(data: bytes, runs: int) -> tuple[float, float, float]:
    """Median and mean wall seconds and mean CPU seconds (all threads) of `validate_xml` on `data` in this process:
    the flow a request runs."""
    from pipeline.flows.validate_xml import validate_xml

    walls, cpus = [], []
    for i in range(runs + 10):
        t, c = time.perf_counter(), time.process_time()
        validate_xml(data, "xrechnung", None, None, content_checks=True)
        if i >= 10:  # the first ones warm the caches after the HTTP rounds
            walls.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.mean(walls), statistics.mean(cpus)


def ab(port: int, token: str, body: bytes, ctype: str, requests: int, concurrency: int,
       workers: list[int] = (), keepalive: bool = False) -> tuple[float, float, float, float]:
    """`ab -n requests -c concurrency` (a new connection per request, as in issue 29; `-k` with keepalive, as a
    client with a connection pool) on the validate endpoint:
    (requests/s, p99 seconds, CPU seconds of `workers` per request, ab's own CPU seconds per request: it runs on
    the same cores). Raises unless every answer is 200."""
    cpu, own = cpu_seconds(workers), os.times()
    with tempfile.NamedTemporaryFile(suffix=".body") as f:
        f.write(body)
        f.flush()
        url = f"http://127.0.0.1:{port}/v1/invoice/xrechnung/validate"
        out = subprocess.run(["ab", *(["-k"] if keepalive else []), "-n", str(requests), "-c", str(concurrency),
                              "-p", f.name, "-T", ctype, "-H",
                              f"Authorization: Bearer {token}", url],
                             capture_output=True, text=True, check=True).stdout
    cpu, done = (cpu_seconds(workers) - cpu) / requests, os.times()
    client = (done.children_user - own.children_user + done.children_system - own.children_system) / requests
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    if int(fields.get("Non-2xx responses", "0").strip() or 0) or int(fields["Failed requests"].split()[0]):
        raise SystemExit(f"ab: failed or non-2xx answers:\n{out}")
    p99 = next(int(line.split()[1]) for line in out.splitlines() if line.strip().startswith("99%"))
    return float(fields["Requests per second"].split()[0]), p99 / 1000, cpu, client


def ceiling(args, deadline) -> None:
    """Issue 29's figure: the HTTP rate of `pipeline serve --workers 2` on XRechnung 01.01a (CII) against the
    in-process ceiling of the same document (2 workers / median validate_xml), for the embedded default and for
    PostgreSQL + Redis; with --baseline, the same service from another source tree, alternating in the same run."""
    data = typical_invoice(args.syntax)
    body, ctype = multipart(data)
    trees = [("this tree", REPO)] + ([("baseline", Path(args.baseline).resolve())] if args.baseline else [])
    if args.baseline_first:
        trees.reverse()
    servers, schemas = {}, []
    floor = tempfile.TemporaryDirectory(prefix="einvoice-floor-")
    try:
        for storage in args.storages.split(","):
            for name, source in trees + ([("bare app", None)] if args.floor and storage == "sqlite" else []):
                port = free_port()
                if source is None:  # the same worker serving a bare WSGI app: the floor of any app (warm_caches.py)
                    from warm_caches import hooked_tree

                    os.environ["WARM_CACHES_BARE"] = "1"
                    server, token, env = start_server(port, 2, storage, hooked_tree(Path(floor.name)))
                    del os.environ["WARM_CACHES_BARE"]
                elif name == "baseline":
                    server, token, env = start_server(port, 2, storage, source, args.baseline_python or sys.executable,
                                                      args.baseline_rules_home)
                else:
                    server, token, env = start_server(port, 2, storage, source)
                servers[storage, name] = (server, port, token)
                schemas.append(env["EINVOICE_DATABASE_URL"])
                ab(port, token, body, ctype, 200, args.concurrency)  # warm both workers
        print(f"ceiling: validate_xml of 01.01a {args.syntax} in this process vs `pipeline serve --workers 2` "
              f"(ab{' -k' if args.keepalive else ''} -n {args.ab_requests} -c {args.concurrency}, multipart, a key), "
              f"{args.rounds} alternating rounds")
        rows = {k: [] for k in servers}
        for r in range(args.rounds):
            for key, (server, port, token) in servers.items():
                if time.monotonic() > deadline:
                    break
                wall, mean, cpu = in_process(data, args.inprocess_runs)
                rate, p99, wcpu, client = ab(port, token, body, ctype, args.ab_requests, args.concurrency,
                                             workers_of(server.pid), keepalive=args.keepalive)
                top, sustained = 2 / wall, 2 / mean
                rows[key].append((rate, p99, top, rate / top, cpu, wcpu, cpu / wcpu, client, rate / sustained))
                print(f"  round {r + 1} {key[0]:<9}{key[1]:<10} in-process median {wall * 1000:5.2f} / mean "
                      f"{mean * 1000:5.2f} ms -> ceiling {top:6.1f}/s (sustained {sustained:6.1f}/s)  HTTP "
                      f"{rate:6.1f}/s  p99 {p99 * 1000:5.0f} ms  ratio {rate / top:4.2f} ({rate / sustained:4.2f})   "
                      f"CPU: in-process {cpu * 1000:5.2f} ms, workers {wcpu * 1000:5.2f} ms/request, "
                      f"ratio {cpu / wcpu:4.2f}; ab {client * 1000:4.2f} ms/request")
        print("  medians of the rounds (ratio: HTTP rate / ceiling, 2 / median; in brackets HTTP rate / sustained "
              "in-process rate, 2 / mean; CPU ratio: in-process CPU / workers' CPU per request, the same figure "
              "unaffected by other load on the machine):")
        for (storage, name), got in rows.items():
            if got:
                med = lambda i: statistics.median(x[i] for x in got)  # noqa: E731
                print(f"    {storage:<9}{name:<10} HTTP {med(0):6.1f}/s  p99 {med(1) * 1000:5.0f} ms  "
                      f"ceiling {med(2):6.1f}/s  ratio {med(3):4.2f} ({med(8):4.2f})   CPU {med(4) * 1000:5.2f} vs "
                      f"{med(5) * 1000:5.2f} ms  CPU ratio {med(6):4.2f}  ab {med(7) * 1000:4.2f} ms")
    finally:
        for server, _, _ in servers.values():
            server.terminate()
        for server, _, _ in servers.values():
            server.wait(60)
        floor.cleanup()
        for url in filter(None, schemas):  # the PostgreSQL runs' own schemas
            from pipeline.storage.postgres import PostgresStore

            store = PostgresStore(url)
            store.drop_schema()
            store.close()


def report(label, latencies, statuses, elapsed, cpu=None) -> None:
    q = statistics.quantiles(latencies, n=100)
    print(f"  {label:<38}{len(latencies):>6} req {len(latencies) / elapsed:>8.1f} req/s   "
          f"p50 {statistics.median(latencies) * 1000:7.2f} ms   p99 {q[98] * 1000:7.2f} ms   statuses {statuses}"
          + (f"   worker CPU {cpu / len(latencies) * 1000:.2f} ms/req" if cpu is not None else ""))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=1000, help="requests per endpoint for the latency figures")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--total", type=int, default=10_000, help="requests before the last memory reading")
    ap.add_argument("--zugferd", type=int, default=300, help="ZUGFeRD PDF requests at the end (0: none)")
    ap.add_argument("--seconds", type=float, default=300, help="hard bound on the whole run")
    ap.add_argument("--port", type=int, default=8971)
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of the ceiling comparison")
    ap.add_argument("--ab-requests", type=int, default=1500, help="requests per ab run of the ceiling comparison")
    ap.add_argument("--inprocess-runs", type=int, default=200, help="validations per in-process median")
    ap.add_argument("--baseline", help="another source tree (e.g. an export of main) run alongside, same rounds")
    ap.add_argument("--storages", default="sqlite,postgres", help="storage configurations of the ceiling comparison")
    ap.add_argument("--baseline-python", help="the baseline's interpreter (a venv with other dependencies)")
    ap.add_argument("--baseline-rules-home", help="the baseline's rule packs (its own optimised copies)")
    ap.add_argument("--baseline-first", action="store_true", help="start and run the baseline before this tree")
    ap.add_argument("--keepalive", action="store_true", help="ab -k in the ceiling comparison (connections reused)")
    ap.add_argument("--floor", action="store_true", help="also the same workers serving a bare WSGI app (the file part "
                    "split out, validate_xml, the report's JSON; warm_caches.py): the floor of any app, SQLite only")
    ap.add_argument("--ceiling-only", action="store_true", help="only the ceiling comparison")
    ap.add_argument("--syntax", choices=("CII", "UBL"), default="CII", help="the syntax of the ceiling's 01.01a")
    args = ap.parse_args()
    deadline = time.monotonic() + args.seconds
    ceiling(args, deadline)
    if args.ceiling_only:
        return 0
    print()

    server, token, env = start_server(args.port, 2)
    try:
        auth = {"Authorization": f"Bearer {token}"}
        vbody, vtype = multipart(sample_invoice())
        mix = [multipart(x)[0] for x in corpus_mix()]  # the same boundary: one Content-Type for all
        gbody = (REPO / "fixtures" / "xrechnung-spec-id.json").read_bytes()
        endpoints = [
            ("POST /v1/invoice/xrechnung/validate", "/v1/invoice/xrechnung/validate", vbody, {**auth, "Content-Type": vtype}),
            ("POST /v1/invoice/xrechnung", "/v1/invoice/xrechnung", gbody, {**auth, "Content-Type": "application/json"}),
        ]
        corpus = (f"POST .../validate, corpus mix ({len(mix)})", "/v1/invoice/xrechnung/validate", mix,
                  {**auth, "Content-Type": vtype})
        print(f"pipeline serve --workers 2 on 127.0.0.1:{args.port}; client: this process, "
              f"{args.concurrency} connections; SQLite store, platform layer on")
        # warm both workers (first requests compile nothing: the workers warm the rule packs at start)
        for _, path, body, headers in endpoints:
            drive(args.port, path, body, headers, 20, args.concurrency, deadline)
        sent = 40
        print("\nthroughput and latency")
        # worker CPU per request: what a worker spends on one, less sensitive than requests/s to other processes
        # sharing the cores (requests/s on a busy machine measures the machine)
        for label, path, body, headers in [endpoints[0], corpus, endpoints[1]]:
            cpu = cpu_seconds(workers_of(server.pid))
            lat, st, el = drive(args.port, path, body, headers, args.requests, args.concurrency, deadline)
            sent += len(lat)
            report(label, lat, st, el, cpu_seconds(workers_of(server.pid)) - cpu)

        workers = workers_of(server.pid)
        print(f"\nmemory per worker (VmRSS, MiB) up to {args.total} requests (validate + generate, alternating blocks)")
        print(f"  {'requests':>9}  " + "  ".join(f"worker {p:>7}" for p in workers))

        readings = []

        def memline():
            readings.append([rss_kib(p) / 1024 for p in workers])
            print(f"  {sent:>9}  " + "  ".join(f"{mib:>14.1f}" for mib in readings[-1]))

        memline()
        checkpoints = sorted({min(args.total, c) for c in (2500, 5000, 7500, args.total)})
        block = 500
        i = 0
        while sent < args.total and time.monotonic() < deadline:
            _, path, body, headers = endpoints[i % 2]
            lat, _, _ = drive(args.port, path, body, headers, min(block, args.total - sent), args.concurrency, deadline)
            before, sent, i = sent, sent + len(lat), i + 1
            if any(before < c <= sent for c in checkpoints):
                memline()
        if len(readings) > 1:
            print("  change first -> last reading: "
                  + ", ".join(f"{b - a:+.1f} MiB" for a, b in zip(readings[0], readings[-1])))
        if sent < args.total:
            print(f"  stopped at {sent} requests: time bound of {args.seconds:.0f} s reached")
        if workers_of(server.pid) != workers:
            print("  note: a worker was replaced during the run")
        if args.zugferd:
            zbody = (REPO / "fixtures" / "invoice-all-fields.json").read_bytes()
            zheaders = {**auth, "Content-Type": "application/json", "Accept": "application/pdf"}
            drive(args.port, "/v1/invoice/zugferd", zbody, zheaders, 10, args.concurrency, deadline)  # warm
            before = [rss_kib(p) / 1024 for p in workers]
            lat, st, el = drive(args.port, "/v1/invoice/zugferd", zbody, zheaders, args.zugferd, args.concurrency,
                                deadline)
            print()
            report("POST /v1/invoice/zugferd", lat, st, el)
            print("  memory per worker before -> after: " + ", ".join(
                f"{a:.1f} -> {rss_kib(p) / 1024:.1f} MiB" for p, a in zip(workers, before)))
        charges = subprocess.run([sys.executable, "-m", "pipeline", "keys", "list", "--json"], env=env, cwd=REPO,
                                 capture_output=True, text=True).stdout
        print(f"\ncredits left on the load key: {json.loads(charges)[0]['balance']} of 1000000")
    finally:
        server.terminate()
        server.wait(60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
