"""The validate endpoint over HTTP against the same validation in process (issue 15: at most 1.15 x).

    python3 bench/bench_http.py [--runs 60] [--port 8973] [--profile]

Starts `pipeline serve --workers 1` (the full platform layer: API key, rate limit, credits on a SQLite store in a
temporary folder) and sends POST /v1/invoice/xrechnung/validate over ONE keep-alive connection. Each round
interleaves, on the same document: **in-process** = `validate_xml(data, content_checks=True)`, the work the
endpoint does (official rules + our content checks); **rules only** = `validate_xml(data)`; **HTTP** = the POST
from send to the last byte of the JSON report. Ratio = HTTP / in-process, medians. Documents: XRechnung business
cases 01.01a (typical) and 01.15a (a ~200 KB attachment), CII and UBL.

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
import logging
import os
import pstats
import statistics
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
    args = ap.parse_args()

    engine.warm_up()
    server, token, _ = start_server(args.port, 1)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=60)
        load = os.getloadavg()
        print(f"pipeline serve --workers 1, one keep-alive connection, platform layer on (SQLite); load "
              f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
        print(f"\n{'document':12} {'KB':>5} {'rules only':>10} {'in-process':>10} {'HTTP':>8} {'HTTP/in-process':>15}")
        for name, path in DOCUMENTS.items():
            data = path.read_bytes()
            body, ctype = multipart(data)
            headers = {"Authorization": f"Bearer {token}", "Content-Type": ctype}
            times = {"rules": [], "inproc": [], "http": []}
            for r in range(5 + args.runs):
                t = time.perf_counter()
                validate_xml(data)
                t1 = time.perf_counter()
                validate_xml(data, content_checks=True)
                t2 = time.perf_counter()
                post(conn, body, headers)
                t3 = time.perf_counter()
                if r >= 5:
                    times["rules"].append((t1 - t) * 1000)
                    times["inproc"].append((t2 - t1) * 1000)
                    times["http"].append((t3 - t2) * 1000)
            m = {k: statistics.median(v) for k, v in times.items()}
            print(f"{name:12} {len(data) / 1024:5.0f} {m['rules']:10.2f} {m['inproc']:10.2f} {m['http']:8.2f} "
                  f"{m['http'] / m['inproc']:15.2f}", flush=True)
        conn.close()
    finally:
        server.terminate()
        server.wait(60)
    load = os.getloadavg()
    print(f"\nload after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; medians of {args.runs} interleaved rounds")
    if args.profile:
        profile_request_path()
    if args.parts:
        time_request_path()
    return 0


if __name__ == "__main__":
    sys.exit(main())
