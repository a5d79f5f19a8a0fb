"""The HTTP/1.1 parsers we could frame requests with, on the load's request (bench/load.py: a one-line XRechnung
validation, multipart, keep-alive): microseconds per request to find its end and read its head and body, in one
process, interleaved rounds. h11 is pure Python; httptools wraps llhttp (C). The figure is what the parser adds to
every request a worker answers (the old hand-written framing + head parser cost ~7-10 us on plain heads).

    python3 bench/bench_parsers.py [--rounds 20] [--requests 2000]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import multipart, sample_invoice  # noqa: E402


def request_bytes() -> bytes:
    body, ctype = multipart(sample_invoice())
    head = (f"POST /v1/invoice/xrechnung/validate HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nUser-Agent: load\r\n"
            f"Accept-Encoding: identity\r\nAuthorization: Bearer einv_test_abcdefgh.0123456789abcdef0123456789\r\n"
            f"Content-Type: {ctype}\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    return head + body


def with_httptools(data: bytes, n: int) -> float:
    import httptools

    class Collect:
        def __init__(self):
            self.headers, self.body, self.done = [], [], 0

        def on_url(self, url):
            self.url = url

        def on_header(self, name, value):
            self.headers.append((name, value))

        def on_body(self, chunk):
            self.body.append(chunk)

        def on_message_complete(self):
            self.done += 1

    sink = Collect()
    parser = httptools.HttpRequestParser(sink)
    started = time.perf_counter()
    for _ in range(n):
        parser.feed_data(data)
        sink.headers, sink.body = [], []
    assert sink.done == n
    return (time.perf_counter() - started) / n * 1e6


def with_h11(data: bytes, n: int) -> float:
    import h11

    conn = h11.Connection(h11.SERVER)
    done = 0
    started = time.perf_counter()
    for _ in range(n):
        conn.receive_data(data)
        body = []
        while True:
            event = conn.next_event()
            if isinstance(event, h11.Data):
                body.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                done += 1
                break
        conn.send(h11.Response(status_code=200, headers=[("Content-Length", "0")]))
        conn.send(h11.EndOfMessage())
        conn.start_next_cycle()
    assert done == n
    return (time.perf_counter() - started) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--requests", type=int, default=2000)
    args = ap.parse_args()
    data = request_bytes()
    figures = {"httptools": [], "h11": []}
    for _ in range(args.rounds):
        figures["httptools"].append(with_httptools(data, args.requests))
        figures["h11"].append(with_h11(data, args.requests))
    print(f"request: {len(data)} bytes; median of {args.rounds} rounds x {args.requests} requests")
    for name, values in figures.items():
        print(f"{name:10s} {statistics.median(values):7.1f} us/request (min {min(values):.1f})")


if __name__ == "__main__":
    main()
