"""Pauses inside a validation: a worker's Saxon heap collected in full.

Warms this process as `pipeline serve` warms a worker (`warm_worker`: rule packs, generation stylesheets, ZUGFeRD
rendering), then validates one document again and again as a request does (`validate_xml`) and prints every run
slower than --over, with the process CPU it used and the pages it first touched (minor faults). A run whose CPU
equals its wall time and that touches some hundred MB of pages is a full collection of SaxonC's GraalVM heap:
the whole live heap (the compiled rules of every pack) is copied. SaxonC exposes no switch for its collector.

    python3 bench/gc_pauses.py [--runs 3000] [--over 0.15] [--cold | --specs xrechnung,...]

`--specs` warms as a worker with EINVOICE_WARM_SPECS set to them does.
"""
from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from load import sample_invoice  # noqa: E402  (bench/load.py: the first UBL XRechnung sample of the corpus)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3000)
    ap.add_argument("--over", type=float, default=0.15, help="seconds: slower runs are listed")
    ap.add_argument("--cold", action="store_true", help="no worker warm-up: packs compile on first use")
    ap.add_argument("--specs", help="EINVOICE_WARM_SPECS for the warm-up (default: every installed pack)")
    args = ap.parse_args()
    if args.specs:
        os.environ["EINVOICE_WARM_SPECS"] = args.specs
    if not args.cold:
        from pipeline.cli.serve import warm_worker

        started = time.perf_counter()
        warm_worker()
        print(f"warm_worker ({args.specs or 'every pack'}): {time.perf_counter() - started:.1f} s")
    from pipeline.flows.validate_xml import validate_xml

    data = sample_invoice()
    walls, slow = [], []
    for i in range(args.runs):
        faults, cpu, wall = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.process_time(), time.perf_counter()
        validate_xml(data, "xrechnung", None, None, content_checks=True)
        wall = time.perf_counter() - wall
        walls.append(wall)
        if wall > args.over:
            slow.append((i, wall, time.process_time() - cpu, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{args.runs} validations: median {statistics.median(walls) * 1000:.1f} ms, "
          f"p99 {statistics.quantiles(walls, n=100)[98] * 1000:.1f} ms, max {max(walls) * 1000:.0f} ms; "
          f"peak RSS {rss:.0f} MB")
    for i, wall, cpu, faults in slow:
        print(f"  run {i:>5}: {wall * 1000:6.0f} ms wall, {cpu * 1000:6.0f} ms CPU, {faults:>7} pages first touched "
              f"({faults * resource.getpagesize() / 2**20:.0f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
