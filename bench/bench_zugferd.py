"""Median latency of ZUGFeRD generation, split by stage, for a 10-line and a 300-line invoice.

    python3 bench/bench_zugferd.py [--runs N] [--profile EN16931]

Stages (pipeline.facturx.generate_zugferd): model (parse + AUTO calculation + canonical XML), cii (CII mapping +
profile subset), validate (official Factur-X XSD + Schematron) = the XML part; html (html.xsl), render
(WeasyPrint PDF/A-3b), embed (pikepdf: XMP + associated file), check (PDF/A-3b + XMP + read-back) = the PDF part.
The first run (stylesheet compilation, font loading) is a warm-up and not counted.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.facturx import generate_zugferd  # noqa: E402
from tests.test_zugferd_samples import invoice_request  # noqa: E402

XML_STAGES = ("model", "cii", "validate")
PDF_STAGES = ("html", "render", "embed", "check")


def measure(lines: int, runs: int, profile: str, clock) -> dict[str, float]:
    body = json.dumps(invoice_request(lines, profile)).encode()
    generate_zugferd(body)  # warm-up
    samples: dict[str, list[float]] = {}
    for _ in range(runs):
        timings: dict[str, float] = {}
        start = clock()
        generate_zugferd(body, timings=timings, clock=clock)
        timings["total"] = clock() - start
        for stage, seconds in timings.items():
            samples.setdefault(stage, []).append(seconds)
    return {stage: statistics.median(values) for stage, values in samples.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--profile", default="EN16931")
    args = ap.parse_args()
    print(f"ZUGFeRD {args.profile}: median of {args.runs} runs (300 lines: {max(3, args.runs // 2)}), milliseconds")
    print("wall = latency; cpu = process CPU time (steadier on a shared machine)")
    print(f"{'lines':>6} {'clock':>5} " + " ".join(f"{s:>9}" for s in XML_STAGES + PDF_STAGES) +
          f" {'XML part':>9} {'PDF part':>9} {'PDF/XML':>8} {'total':>8}")
    for lines, runs in ((10, args.runs), (300, max(3, args.runs // 2))):
        for name, clock in (("wall", time.perf_counter), ("cpu", time.process_time)):
            m = measure(lines, runs, args.profile, clock)
            xml = sum(m[s] for s in XML_STAGES)
            pdf = sum(m[s] for s in PDF_STAGES)
            print(f"{lines:>6} {name:>5} " + " ".join(f"{m[s] * 1000:>9.1f}" for s in XML_STAGES + PDF_STAGES) +
                  f" {xml * 1000:>9.1f} {pdf * 1000:>9.1f} {pdf / xml:>8.2f} {m['total'] * 1000:>8.1f}")


if __name__ == "__main__":
    main()
