"""Is a validation slower inside a worker than alone, and why (issue 29)? load.py's ceiling runs `validate_xml`
back to back in one process; a worker does other work between two validations. This script measures what that
costs the validation itself, in CPU time around `validate_xml` only:

1. in this process: back to back; after a 1 ms pause before each (the core idles, as a worker waits for the next
   request); after touching 32 MB before each (what other work does to the caches);
2. in this process, inside a worker's whole path for the request without the socket (profile_http.request_path:
   httptools, gunicorn's environ, the app with the SQLite platform layer and the access log, the Response), against
   back to back in the same rounds;
3. inside the workers of `pipeline serve` under `ab` load: the same call's CPU per request (2 workers, ab -c 4; the
   same with a bare WSGI app instead of ours, the floor of any app in this worker; 1 worker, ab -c 1), and each
   worker's own back-to-back loop right after its warm-up.

    python3 bench/warm_caches.py [--runs 300] [--requests 2000]

Part 3 runs the service from an export of HEAD (`git archive`) with a `sitecustomize.py` that wraps `validate_xml`
and writes its CPU time to /tmp; the service code itself is not changed.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load  # noqa: E402

# The service's processes of an exported tree run this as Python's sitecustomize (PYTHONPATH puts the export first).
# With WARM_CACHES_OUT: validate_xml's CPU time per call, summed, and one back-to-back loop after the worker's
# warm-up. With WARM_CACHES_BARE: a bare WSGI app instead of ours.
HOOK = r'''
import os, sys, time
import pipeline.cli.serve as serve
import pipeline.flows.validate_xml as flow

sys.path.insert(0, BENCH)  # this script's folder: the hook's helpers as they are, not as HEAD has them
from warm_caches import counted

OUT = os.environ.get("WARM_CACHES_OUT")
_validate, _warm, _sum, _fd = flow.validate_xml, serve.warm_worker, [0, 0.0], {}


def _record(seconds):
    _sum[0] += 1
    _sum[1] += seconds
    pid = os.getpid()  # a file per worker, opened once after the fork: one pwrite per call
    fd = _fd.get(pid) or _fd.setdefault(pid, os.open(f"{OUT}/calls-{pid}", os.O_WRONLY | os.O_CREAT))
    os.pwrite(fd, f"{_sum[0]:12d} {_sum[1]:18.9f}".encode(), 0)


validate_xml = counted(_validate, _record)


def warm_worker(worker=None):
    _warm(worker)
    data = open(os.environ["WARM_CACHES_DOC"], "rb").read()
    for _ in range(30):
        _validate(data, "xrechnung", None, None, content_checks=True)
    start = time.thread_time()
    for _ in range(300):
        _validate(data, "xrechnung", None, None, content_checks=True)
    with open(f"{OUT}/loop-{os.getpid()}", "w") as f:
        f.write(str((time.thread_time() - start) / 300))


if OUT:
    flow.validate_xml, serve.warm_worker = validate_xml, warm_worker

if os.environ.get("WARM_CACHES_BARE"):
    import json
    import pipeline.service.app as service

    def bare_app(*args, **kwargs):
        """The least a validation endpoint can do: the file part split out of the body, validate_xml, the report as
        JSON. No Falcon, no key, limiter or log."""
        def app(environ, start_response):
            if environ["REQUEST_METHOD"] == "GET":  # readiness
                start_response("200 OK", [("Content-Length", "2")])
                return [b"ok"]
            body = environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"]))
            boundary = b"--" + environ["CONTENT_TYPE"].split("boundary=")[1].encode()
            part = next(p for p in body.split(boundary) if b'name="file"' in p)
            report = flow.validate_xml(part.split(b"\r\n\r\n", 1)[1][:-2], "xrechnung", None, None,
                                       content_checks=True)
            out = json.dumps(report.to_dict()).encode()
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(out)))])
            return [out]
        return app

    service.create_app = bare_app
'''


def counted(fn, record):
    """`fn`, handing each call's CPU time (time.thread_time, seconds) to `record`."""
    def call(*args, **kwargs):
        start = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            record(time.thread_time() - start)
    return call


def in_process(data: bytes, runs: int) -> None:
    from pipeline.flows.validate_xml import validate_xml

    junk = [bytearray(8 << 20) for _ in range(4)]
    touch = b"\1" * ((8 << 20) // 64)

    def block(before) -> float:
        spent = 0.0
        for _ in range(runs):
            before()
            start = time.thread_time()
            validate_xml(data, "xrechnung", None, None, content_checks=True)
            spent += time.thread_time() - start
        return spent / runs * 1000

    def pollute():
        for j in junk:
            j[::64] = touch

    for _ in range(30):
        validate_xml(data, "xrechnung", None, None, content_checks=True)
    print(f"1. validate_xml of 01.01a in this process, CPU per call (ms), {runs} calls per figure:")
    for r in range(3):
        print(f"   round {r + 1}: back to back {block(lambda: None):5.2f}   after a 1 ms pause "
              f"{block(lambda: time.sleep(0.001)):5.2f}   after touching 32 MB {block(pollute):5.2f}")


def in_request_path(data: bytes, runs: int) -> None:
    from pipeline.flows.validate_xml import validate_xml
    from profile_http import request_path

    inside = [0, 0.0]

    def record(seconds):
        inside[0] += 1
        inside[1] += seconds

    whole = request_path(counted(validate_xml, record))[2]
    for _ in range(30):
        whole()
    print(f"2. the whole request path in this process (no socket), CPU per request (ms), {runs} per figure:")
    for r in range(3):
        inside[:] = [0, 0.0]
        start = time.thread_time()
        for _ in range(runs):
            whole()
        request = (time.thread_time() - start) / runs * 1000
        start = time.thread_time()
        for _ in range(runs):
            validate_xml(data, "xrechnung", None, None, content_checks=True)
        alone = (time.thread_time() - start) / runs * 1000
        flow = inside[1] / inside[0] * 1000
        print(f"   round {r + 1}: request {request:5.2f}, of it validate_xml {flow:5.2f} and the path "
              f"{request - flow:5.2f};  validate_xml back to back {alone:5.2f}")


def hooked_tree(folder: Path) -> Path:
    """An export of HEAD into `folder`/tree with the hook above as its sitecustomize: the service code unchanged."""
    tree = folder / "tree"
    tree.mkdir()
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=load.REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    (tree / "sitecustomize.py").write_text(HOOK.replace("BENCH", repr(str(Path(__file__).resolve().parent)), 1))
    return tree


def in_workers(data: bytes, requests: int) -> None:
    body, ctype = load.multipart(data)
    with tempfile.TemporaryDirectory(prefix="warm-caches-") as tmp:
        tree, out = hooked_tree(Path(tmp)), Path(tmp) / "out"
        out.mkdir()
        (Path(tmp) / "doc.xml").write_bytes(data)
        os.environ.update(WARM_CACHES_OUT=str(out), WARM_CACHES_DOC=str(Path(tmp) / "doc.xml"))
        print("3. the same call inside the workers of `pipeline serve` (SQLite), CPU per call (ms); the ratio is the "
              "HTTP rate to load.py's ceiling (2 / in-process median, measured after each ab run):")
        for workers, concurrency, bare in ((2, 4, ""), (2, 4, "1"), (1, 1, "")):
            for f in out.iterdir():
                f.unlink()
            port = load.free_port()
            os.environ["WARM_CACHES_BARE"] = bare
            server, token, _ = load.start_server(port, workers, "sqlite", tree)
            try:
                load.ab(port, token, body, ctype, 200, concurrency)
                pids = load.workers_of(server.pid)
                for _ in range(600):  # a worker answers /readyz before the other has finished its warm-up
                    if all((out / f"loop-{p}").exists() for p in pids):
                        break
                    time.sleep(0.2)
                time.sleep(0.1)
                loops = [float((out / f"loop-{p}").read_text()) * 1000 for p in pids]
                for r in range(3):
                    before = calls(out, pids)
                    rate, _, cpu, _ = load.ab(port, token, body, ctype, requests, concurrency, pids)
                    done = calls(out, pids)
                    per_call = (done[1] - before[1]) / (done[0] - before[0]) * 1000
                    ceiling = workers / load.in_process(data, 200)[0]
                    print(f"   {workers} worker(s), ab -c {concurrency}{', bare WSGI app' if bare else ''}, round "
                          f"{r + 1}: {rate:6.1f} requests/s (ratio {rate / ceiling:4.2f}), workers' CPU "
                          f"{cpu * 1000:5.2f} ms per request, of it validate_xml {per_call:5.2f}, the rest "
                          f"{cpu * 1000 - per_call:5.2f}")
                print(f"   the same workers' back-to-back loop after warm-up: "
                      f"{', '.join(f'{x:5.2f}' for x in loops)}")
            finally:
                server.terminate()
                server.wait(60)


def calls(out: Path, pids: list[int]) -> tuple[int, float]:
    time.sleep(0.3)  # the last answers' files are written after ab has its response
    n, spent = 0, 0.0
    for pid in pids:
        count, seconds = (out / f"calls-{pid}").read_text().split()
        n, spent = n + int(count), spent + float(seconds)
    return n, spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--requests", type=int, default=2000)
    args = ap.parse_args()
    sys.path.insert(0, str(load.REPO))
    data = load.typical_invoice()
    in_process(data, args.runs)
    in_request_path(data, args.runs)
    in_workers(data, args.requests)


if __name__ == "__main__":
    main()
