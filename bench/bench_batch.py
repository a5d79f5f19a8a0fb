"""Throughput of `pipeline validate --jobs N` over the official corpus XML files (../shared/corpus): --jobs 1 (one
process) against --jobs 2, each as the command runs it (worker start and rule compilation included), and the
steady state (the corpus twice minus once: start-up cancels out).

    python3 bench/bench_batch.py [--jobs 2] [--spec en16931]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"


def run(files: list[Path], jobs: int, spec: str) -> float:
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pipeline", "validate", *map(str, files), "--spec", spec,
                           "--json", "--jobs", str(jobs)], cwd=REPO, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    assert done.returncode in (0, 1, 2), done.returncode
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--spec", default="en16931")
    args = ap.parse_args()
    files = sorted(CORPUS.rglob("*.xml"))
    print(f"{len(files)} corpus XML files, {os.cpu_count()} CPU(s), spec {args.spec}")
    figures = {}
    for jobs in (1, args.jobs):
        once, twice = run(files, jobs, args.spec), run(files * 2, jobs, args.spec)
        steady = len(files) / (twice - once)
        figures[jobs] = (len(files) / once, steady)
        print(f"--jobs {jobs}: {once:6.1f} s for the corpus ({len(files) / once:5.1f} files/s), "
              f"steady state {steady:5.1f} files/s")
    (w1, s1), (wn, sn) = figures[1], figures[args.jobs]
    print(f"--jobs {args.jobs} vs --jobs 1: {wn / w1:.2f} x whole command, {sn / s1:.2f} x steady state")


if __name__ == "__main__":
    main()
