"""ZUGFeRD generation over HTTP: the figure issue 40 asks for (a 10-line invoice, 150 ms or less).

    python3 bench/zugferd_http.py [--runs 30] [--lines 10] [--port 8975]

Starts `pipeline serve --workers 1` on its own SQLite store (bench/load.py's start_server), sends 3 warm-up POSTs
and then --runs POSTs of `tests/test_zugferd_samples.invoice_request(lines)` to /v1/invoice/zugferd over one
keep-alive connection, one after the other. Prints the client's wall-clock time per request (send to last byte of
the PDF: median, min, max) and the worker's own time from the access log (durationMs), with the load average.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from load import start_server  # noqa: E402
from tests.test_zugferd_samples import invoice_request  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--lines", type=int, default=10)
    ap.add_argument("--port", type=int, default=8975)
    args = ap.parse_args()
    body = json.dumps(invoice_request(lines=args.lines)).encode()
    load_before = os.getloadavg()
    server, token, env = start_server(args.port, 1)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=120)
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        wall, ids = [], []
        for i in range(3 + args.runs):
            start = time.perf_counter()
            conn.request("POST", "/v1/invoice/zugferd", body, headers)
            resp = conn.getresponse()
            pdf = resp.read()
            spent = time.perf_counter() - start
            if resp.status != 200 or not pdf.startswith(b"%PDF"):
                raise SystemExit(f"POST answered {resp.status}: {pdf[:300]!r}")
            if i >= 3:
                wall.append(spent * 1000)
                ids.append(resp.getheader("X-Request-Id"))
    finally:
        server.terminate()
        server.wait(10)
    app = {}
    for line in (Path(env["EINVOICE_DATA_DIR"]) / "serve.log").read_text().splitlines():
        if line.startswith('{"event":"request"'):
            entry = json.loads(line)
            app[entry.get("requestId")] = entry["durationMs"]
    worker = [app[i] for i in ids if i in app]
    print(f"ZUGFeRD {args.lines} lines over HTTP, pipeline serve --workers 1, {args.runs} POSTs after 3 warm-ups, "
          f"PDF {len(pdf):,} bytes; load {load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after")
    print(f"  client ms: median {statistics.median(wall):.1f}, min {min(wall):.1f}, max {max(wall):.1f}")
    if worker:
        print(f"  worker ms (access log durationMs): median {statistics.median(worker):.1f}, min {min(worker):.1f}, "
              f"max {max(worker):.1f}")


if __name__ == "__main__":
    main()
