"""Where a worker's CPU goes per request: py-spy samples of both workers of `pipeline serve --workers 2` while
`ab` sends the validate endpoint XRechnung 01.01a CII (multipart, with a key), split by stage.

    python3 bench/profile_http.py [--storage sqlite|postgres] [--requests 3000] [--concurrency 4] [--rate 100]
    python3 bench/profile_http.py --split 100 [--storage postgres]    # the app's stages in one process
    python3 bench/profile_http.py --worker-path 300                   # the worker's whole path but the flow

Needs py-spy (`pip install py-spy`) and ab (`apt-get install apache2-utils`). Samples are taken only while a
worker thread is running (py-spy leaves idle threads out); the workers' CPU time per request comes from the kernel
(/proc utime + stime over the ab run) and is split in the proportions of the samples. Caveat: a thread waiting for
a core counts as running where it was preempted, which under load is often right after it woke another process (a
send on loopback): such lines are over-counted; `--split` measures the app's stages without that bias.
A sample counts for the first stage whose code is on its stack, in the order below (innermost work first: a SQLite
call made by the limiter counts as limiter).
"""
from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load  # noqa: E402

# (stage, markers): a frame "function (file:line)" belongs to a stage when it contains one of the markers.
STAGES = [
    ("flow (validate_xml)", ["pipeline/flows/", "pipeline/check/", "pipeline/read/", "saxonche", "lxml"]),
    ("report -> JSON", ["answer_report", "to_dict", "falcon/media/json", "request_json"]),
    ("multipart", ["pipeline/service/upload.py", "falcon/media/multipart"]),
    ("auth (key lookup)", ["get_key", "apikeys.py"]),
    ("limiter", ["storage/ratelimit.py"]),
    ("ledger / sweep", ["storage/sql.py", "storage/postgres.py", "storage/pending.py", "sweep"]),
    ("platform other", ["service/platform.py"]),
    ("access log", ["accesslog.py", "logging/__init__.py"]),
    ("falcon app other", ["falcon/", "pipeline/service/"]),
    ("framing / worker loop", ["pipeline/cli/serve.py", "gunicorn/", "httptools"]),
]


def stage_of(stack: list[str]) -> str:
    for stage, markers in STAGES:
        if any(m in frame for frame in stack for m in markers):
            return stage
    return "other"


def profile(storage: str, requests: int, concurrency: int, rate: int, port: int) -> dict:
    server, token, _env = load.start_server(port, 2, storage)
    try:
        body, ctype = load.multipart(load.typical_invoice())
        bodyfile = Path(tempfile.mkdtemp(prefix="einvoice-prof-")) / "body"
        bodyfile.write_bytes(body)
        ab = ["ab", "-q", "-k", "-n", str(requests), "-c", str(concurrency), "-p", str(bodyfile), "-T", ctype,
              "-H", f"Authorization: Bearer {token}", f"http://127.0.0.1:{port}/v1/invoice/xrechnung/validate"]
        subprocess.run(ab[:4] + ["200"] + ab[5:], capture_output=True, check=True)  # warm
        outs = []
        spies = []
        for pid in load.workers_of(server.pid):
            out = bodyfile.parent / f"{pid}.txt"
            outs.append(out)
            spies.append(subprocess.Popen(["py-spy", "record", "--pid", str(pid), "--rate", str(rate), "--format",
                                           "raw", "--output", str(out), "--nonblocking"],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(1.5)
        workers = load.workers_of(server.pid)
        cpu0 = sum(load.cpu_seconds(p) for p in workers)
        result = subprocess.run(ab, capture_output=True, text=True, check=True).stdout
        cpu = sum(load.cpu_seconds(p) for p in workers) - cpu0
        for spy in spies:
            spy.send_signal(2)
        for spy in spies:
            spy.wait(60)
    finally:
        server.terminate()
        server.wait(60)
    counts, detail = collections.Counter(), collections.Counter()
    for out in outs:
        for line in out.read_text().splitlines():
            stack, _, n = line.rpartition(" ")
            frames = stack.split(";")
            stage = stage_of(frames)
            counts[stage] += int(n)
            ours = [f for f in frames if "pipeline/" in f or "falcon/" in f or "logging/" in f]
            where = ours[-1].split(" (")[0] + " " + ours[-1].rsplit("/", 1)[-1] if ours else frames[-1]
            detail[stage, where] += int(n)
    rps = next((x for x in result.splitlines() if x.startswith("Requests per second")), "")
    return {"counts": counts, "ab": rps, "requests": requests, "rate": rate, "cpu": cpu, "detail": detail}


def app_split(storage: str, runs: int, rounds: int) -> None:
    """CPU per request inside one process (time.thread_time, alternating rounds, medians) of: the flow alone
    (validate_xml), the Falcon app without the platform layer, with it (a key, the limiter, the sweep), and with it
    and the access log written (to /dev/null): the differences are the stages' CPU without sampling bias. The
    worker's framing is what the workers' CPU per request (above) adds to the last one."""
    import io
    import logging
    import os
    import statistics

    from pipeline.cli.serve import configure_logging
    from pipeline.flows.validate_xml import validate_xml
    from pipeline.service import apikeys
    from pipeline.service.app import create_app
    from dataclasses import replace

    from pipeline.service.platform import Backends, PlatformConfig
    from pipeline.service.upload import read_validation_upload
    from pipeline.settings import get_settings
    from pipeline.storage import open_store

    data = load.typical_invoice()
    body, ctype = load.multipart(data)
    tmp = Path(tempfile.mkdtemp(prefix="einvoice-split-"))
    os.environ.update({"EINVOICE_DATA_DIR": str(tmp), "EINVOICE_RATE_LIMIT": "1000000/min",
                       "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": ""})
    if storage == "postgres":
        os.environ["EINVOICE_DATABASE_URL"] = f"{load.PG_BASE}?options=-csearch_path%3Dsplit_{tmp.name[-8:].lower()}"
        os.environ["EINVOICE_REDIS_URL"] = load.REDIS_URL
    get_settings.cache_clear()
    store = open_store()
    key_id, token, digest = apikeys.mint("test")
    store.create_key(key_id, "split", "test", digest, 1000, None)
    configure_logging()
    for h in logging.getLogger("pipeline").handlers:
        h.setStream(open(os.devnull, "w"))
    access = logging.getLogger("pipeline.access")

    class Upload:
        """The validate endpoint's own part around the flow: the multipart read and a JSON answer."""

        def on_post(self, req, resp):
            read_validation_upload(req)
            resp.media = {"valid": True}

    path = "/v1/invoice/bench/validate"  # free, as every /validate
    apps = {}
    for name, backends in [("platform off", None), ("platform on", Backends()),
                           ("platform on, key cache off", Backends(config=replace(PlatformConfig.from_env(),
                                                                                  key_cache_seconds=0)))]:
        apps[name] = create_app(platform=backends is not None, backends=backends)
        apps[name].add_route(path, Upload())

    def call(app):
        env = {"REQUEST_METHOD": "POST", "PATH_INFO": path, "QUERY_STRING": "",
               "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
               "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body), "wsgi.errors": io.StringIO(),
               "CONTENT_TYPE": ctype, "CONTENT_LENGTH": str(len(body)), "HTTP_AUTHORIZATION": f"Bearer {token}"}
        status = []
        b"".join(app(env, lambda s, h, e=None: status.append(s)))
        assert status[0].startswith("200"), status

    cases = {
        "flow alone (validate_xml)": (lambda: validate_xml(data, "xrechnung", None, None, content_checks=True), 1),
        "app: multipart + JSON, platform off": (lambda: call(apps["platform off"]), 20),
        "+ platform (key cached), no log": (lambda: call(apps["platform on"]), 20),
        "+ access log": (lambda: call(apps["platform on"]), 20),
        "the same, key cache off": (lambda: call(apps["platform on, key cache off"]), 20),
    }
    got = {name: [] for name in cases}
    for r in range(rounds + 1):
        for name, (fn, factor) in cases.items():
            access.disabled = "no log" in name or "platform off" in name
            t = time.thread_time()
            for _ in range(runs * factor):
                fn()
            if r:  # round 0 warms up
                got[name].append((time.thread_time() - t) / (runs * factor))
    access.disabled = False
    print(f"\nin one process, {storage}, CPU per request (thread_time, median of {rounds} rounds):")
    for name, values in got.items():
        print(f"  {name:<38}{statistics.median(values) * 1e6:8.0f} us")
    if hasattr(store, "drop_schema"):
        store.drop_schema()


def request_path(flow=None):
    """A worker's path for the load's request without the socket, in this process: the raw request through httptools
    and the worker's Request, gunicorn's `wsgi.create`, the whole app (SQLite store, key, limiter, access log to
    /dev/null) and gunicorn's Response into the buffer the loop sends, as `BufferedWorker._handle_request` runs it.
    `flow` replaces the validate endpoint's `validate_xml` (default: answer the report it gave for this document
    once). Returns (parsed, create, whole): callables for the first part, up to `wsgi.create`, and all of it."""
    import logging
    import os

    import gunicorn.util
    from gunicorn.config import Config
    from gunicorn.glogging import Logger
    from gunicorn.http import wsgi

    data = load.typical_invoice()
    body, ctype = load.multipart(data)
    os.environ.update({"EINVOICE_DATA_DIR": tempfile.mkdtemp(prefix="einvoice-wpath-"), "EINVOICE_DATABASE_URL": "",
                       "EINVOICE_RATE_LIMIT": "1000000/min", "EINVOICE_REDIS_URL": ""})
    from pipeline.cli import serve
    from pipeline.flows.validate_xml import validate_xml
    from pipeline.service import apikeys
    from pipeline.service.app import create_app
    from pipeline.service.resources import validation
    from pipeline.storage import open_store

    key_id, token, digest = apikeys.mint("test")
    open_store().create_key(key_id, "wpath", "test", digest, 1_000_000, None)
    serve.configure_logging()
    for h in logging.getLogger("pipeline").handlers:
        h.setStream(open(os.devnull, "w"))
    raw = (f"POST /v1/invoice/xrechnung/validate HTTP/1.0\r\nContent-Length: {len(body)}\r\nContent-Type: {ctype}\r\n"
           f"Host: 127.0.0.1\r\nUser-Agent: ApacheBench/2.3\r\nAccept: */*\r\nAuthorization: Bearer {token}\r\n\r\n"
           ).encode() + body  # what ab sends
    if flow is None:
        report = validate_xml(data, "xrechnung", None, None, content_checks=True)
        flow = lambda *a, **k: report  # noqa: E731
    validation.validate_xml = flow
    cfg = Config()
    worker = serve.BufferedWorker.__new__(serve.BufferedWorker)  # the parts of init_process the path reads
    worker.cfg, worker.log, worker.wsgi, worker.alive, worker.nr, worker.max_requests = cfg, Logger(cfg), create_app(), \
        True, 0, 0
    worker.listener_name, worker.Request = ("127.0.0.1", 8000), serve._request_class()
    worker.client_timeout, worker.request_deadline, worker.keepalive_requests = 30.0, 60.0, 1000
    worker.body_limit = worker.upload_limit = 1 << 24
    worker.line_limit, worker.fields_limit, worker.field_limit = 8190, 100, 8190
    gunicorn.util.http_date = serve._http_date

    def parsed():
        conn = serve._Conn(None, ("127.0.0.1", 40000), worker, time.monotonic())
        conn.parser.feed_data(raw)
        return conn, conn.pending.popleft()

    def whole():
        conn, req = parsed()
        sink = serve._Sink()
        worker._handle_request(req, sink, conn)
        assert sink.data.startswith(b"HTTP/1.0 200"), bytes(sink.data[:200])

    return parsed, lambda: wsgi.create(parsed()[1], serve._Sink(), ("127.0.0.1", 40000), worker.listener_name,
                                       cfg), whole


def worker_path(runs: int, rounds: int) -> None:
    """CPU per request (time.thread_time, alternating rounds, medians) of everything a worker does for the load's
    request but the validation and the socket (`request_path`; the flow's CPU is the in-process figure)."""
    import statistics

    parsed, create, whole = request_path()
    cases = {"parse + Request": parsed, "+ wsgi.create": create, "whole path (app, log, Response)": whole}
    got = {name: [] for name in cases}
    for r in range(rounds + 1):
        for name, fn in cases.items():
            t = time.thread_time()
            for _ in range(runs):
                fn()
            if r:  # round 0 warms up
                got[name].append((time.thread_time() - t) / runs)
    print(f"the worker's path around the validation, SQLite, CPU per request (thread_time, median of {rounds}):")
    for name, values in got.items():
        print(f"  {name:<34}{statistics.median(values) * 1e6:8.1f} us")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--storage", choices=["sqlite", "postgres"], default="sqlite")
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--rate", type=int, default=100, help="py-spy samples per second")
    ap.add_argument("--detail", action="store_true", help="also the innermost frames of each stage")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--split", type=int, default=0, metavar="RUNS",
                    help="instead: the in-process CPU split, RUNS per round")
    ap.add_argument("--worker-path", type=int, default=0, metavar="RUNS",
                    help="instead: the worker's path around the validation in one process, RUNS per round")
    args = ap.parse_args()
    if args.worker_path:
        worker_path(args.worker_path, 7)
        return 0
    if args.split:
        app_split(args.storage, args.split, 5)
        return 0
    r = profile(args.storage, args.requests, args.concurrency, args.rate, args.port or load.free_port())
    total = sum(r["counts"].values())
    per = r["cpu"] / args.requests  # CPU seconds per request, from the kernel's accounting of both workers
    print(f"{args.storage}: {args.requests} requests; workers' CPU {per * 1000:.2f} ms per request "
          f"(utime + stime); {total} samples; ab: {r['ab']}")
    for stage, _ in STAGES + [("other", [])]:
        n = r["counts"].get(stage, 0)
        print(f"  {stage:<24}{n:>7} samples {n / total * 100:6.1f} %  {n / total * per * 1e6:8.0f} us CPU/request")
    if args.detail:
        print("\ninnermost pipeline / falcon / logging frame, outside the flow:")
        for (stage, frame), n in r["detail"].most_common():
            if n >= total / 1000 and not stage.startswith("flow"):
                print(f"  {n / total * per * 1e6:7.0f} us  {stage:<22} {frame}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
