"""Where a worker's CPU goes per request: py-spy samples of both workers of `pipeline serve --workers 2` while
`ab` sends the validate endpoint XRechnung 01.01a CII (multipart, with a key), split by stage.

    python3 bench/profile_http.py [--storage sqlite|postgres] [--requests 3000] [--concurrency 4] [--rate 100]

Needs py-spy (`pip install py-spy`) and ab (`apt-get install apache2-utils`). Samples are taken only while a
worker thread is running (py-spy leaves idle threads out), so on a loaded machine the split stays a CPU split;
the workers' CPU time per request comes from the kernel
(/proc utime + stime over the ab run) and is split in the proportions of the samples (a thread waiting for a core
is sampled where it was preempted, i.e. in proportion to the CPU it used). A sample counts for the first stage whose code is on its
stack, in the order below (innermost work first: a SQLite call made by the limiter counts as limiter).
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
            detail[(stage, ours[-1].split(" (")[0] + " " + ours[-1].rsplit("/", 1)[-1] if ours else frames[-1])] += int(n)
    rps = next((x for x in result.splitlines() if x.startswith("Requests per second")), "")
    return {"counts": counts, "ab": rps, "requests": requests, "rate": rate, "cpu": cpu, "detail": detail}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--storage", choices=["sqlite", "postgres"], default="sqlite")
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--rate", type=int, default=100, help="py-spy samples per second")
    ap.add_argument("--detail", action="store_true", help="also the innermost frames of each stage")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
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
