"""Jobs at scale: documents/s of a 10,000-document validation job with one and with two `pipeline worker` processes
(Procrastinate on the local PostgreSQL, a fresh schema), the scaling ratio, and each worker's peak RSS.

    python3 bench/jobs.py [--documents 10000] [--rounds 1] [--no-mbox]
    python3 bench/jobs.py --small-behind 2000 [--storage postgres|embedded] [--workers 2]
    python3 bench/jobs.py --compare OTHER_CHECKOUT [--documents 2000] [--rounds 2]

The documents are the typical one-line XRechnung CII invoice of the official test suite (01.01a). Workers are
started and warmed (a small job per worker) before the clock runs; the clock runs from the
202 of the submission to the job's `done`. Same run, alternating: 1 worker, 2 workers, (1, 2, ... with --rounds),
each right after its baseline: the validate flow in this process, one document after another (what one worker
process does per request, without HTTP), which the job's throughput per worker should reach to >= 90 %. The
workers' logs are counted for chunks put back after a stall (none expected without a crash).
Issue 26's targets: per worker >= 90 % of single-request throughput; 2 workers >= 1.8 x one.
Then the same documents as an .mbox (one message per document, the invoice a base64 attachment, as mail brings it)
with 2 workers: documents/s, and the submission's time, which now unpacks every message (issue 36).

--small-behind N: jobs take turns. A job of N documents, then at once a job of 5, on PostgreSQL (Procrastinate) or
on the embedded pool (`pipeline worker` processes on a SQLite store; the bench's own process works on nothing):
how long the small job takes from its 202 to its `done`, and the big one from its own. First come, first served,
the small one waited for (nearly) the whole big one; taking turns, one chunk at most.

--compare OTHER_CHECKOUT: this code against another checkout's (`git worktree add /tmp/before <commit>`) in one
run, alternating (which goes first alternates by round), on the embedded pool with 1 and 2 workers and on
PostgreSQL with 2 (--setups: some of them): each a separate process of this script running that checkout's `pipeline` (`--code`), its
workers started and warmed once, then a job of --documents alone (documents/s), then the same job with a
5-document job right behind it (the big one's documents/s, the small one's wait).
"""
from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CODE = REPO  # the checkout whose `pipeline` runs (--code): this process's and its workers'
TYPICAL = REPO.parent / "shared/corpus/xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml"
PG = os.environ.get("EINVOICE_TEST_POSTGRES", "postgresql://127.0.0.1:5432/test")


def archive(n: int) -> bytes:
    doc = TYPICAL.read_bytes()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(n):
            z.writestr(f"doc-{i:05d}.xml", doc)
    return buf.getvalue()


def mailbox(n: int) -> bytes:
    """An .mbox of n messages, each with the typical invoice attached."""
    from email.message import EmailMessage

    doc, out = TYPICAL.read_bytes(), io.BytesIO()
    for i in range(n):
        m = EmailMessage()
        m["From"], m["To"], m["Subject"] = "billing@seller.example", "ap@buyer.example", f"Invoice {i}"
        m["Message-ID"] = f"<bench-{i}@seller.example>"
        m.set_content("Please find the invoice attached.")
        m.add_attachment(doc, maintype="application", subtype="xml", filename=f"invoice-{i:05d}.xml")
        out.write(b"From billing@seller.example Mon Mar  2 10:00:00 2026\n" + m.as_bytes() + b"\n")
    return out.getvalue()


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Bench:
    def __init__(self, tmp: Path, storage: str = "postgres"):
        self.tmp = tmp
        self.url = (f"{PG}?options=-csearch_path%3Dbench_jobs_{uuid.uuid4().hex[:10]}" if storage == "postgres"
                    else f"sqlite:///{tmp}/platform.sqlite3")
        self.env = {"EINVOICE_DATABASE_URL": self.url, "EINVOICE_DATA_DIR": str(tmp), "EINVOICE_REDIS_URL": "",
                    "EINVOICE_RATE_LIMIT": "100000/min"}
        os.environ.update(self.env)
        import falcon.testing

        from pipeline.service import apikeys
        from pipeline.service.app import create_app
        from pipeline.storage import open_store

        self.store = open_store()
        if storage == "embedded":
            from pipeline.jobs import local

            local.ensure_started = lambda *_: None  # the bench's process takes no job: its workers alone do
        key_id, self.token, digest = apikeys.mint("test")
        self.store.create_key(key_id, "bench", "test", digest, 0, None)
        self.client = falcon.testing.TestClient(create_app())

    def submit(self, body: bytes, filename: str = "documents.zip") -> tuple[str, float]:
        boundary = uuid.uuid4().hex
        request = json.dumps({"operation": "validate", "spec": "xrechnung"})
        data = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"request\"\r\n\r\n{request}\r\n"
                f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n").encode() + body + f"\r\n--{boundary}--\r\n".encode()
        t = time.perf_counter()
        r = self.client.simulate_post("/v1/jobs", body=data, headers={
            "Authorization": f"Bearer {self.token}", "Content-Type": f"multipart/form-data; boundary={boundary}"})
        assert r.status_code == 202, r.text
        return r.json["id"], time.perf_counter() - t

    def wait(self, job_id: str) -> None:
        while True:
            job = self.store.get_job(job_id)
            if not job.active:
                assert job.state == "done" and job.done == job.total == job.valid, job
                return
            time.sleep(0.05)

    def workers(self, n: int) -> list[subprocess.Popen]:
        self.log = open(self.tmp / f"workers-{time.monotonic_ns()}.log", "w+b")
        procs = [subprocess.Popen([sys.executable, "-m", "pipeline", "worker"], cwd=CODE, env={**os.environ},
                                  stdout=self.log, stderr=subprocess.STDOUT) for _ in range(n)]
        # chunks for every worker: each one's first chunk is cold (a job per worker: the embedded pool works on a
        # job in one process at a time)
        for warm in [self.submit(archive(100 * 4))[0] for _ in range(n)]:
            self.wait(warm)
        return procs

    def run(self, n_workers: int, body: bytes, n_docs: int, baseline: float, filename: str = "documents.zip") -> float:
        procs = self.workers(n_workers)
        try:
            rate = self.alone(body, n_docs, filename)
            rss = [peak_rss_mb(p.pid) for p in procs]
        finally:
            self.stop(procs)
        self.log.seek(0)
        log = self.log.read().decode("utf-8", "replace")
        retried = log.count("of a stalled worker goes back")  # a chunk redone: work twice, never a count twice
        print(f"  {filename}, {n_workers} worker(s): {rate:7.1f} documents/s ({rate / n_workers:6.1f} per worker, "
              f"{rate / n_workers / baseline:.0%} of the flow alone just before), submission {self.upload:.1f} s, "
              f"peak RSS per worker {', '.join(f'{r:.0f} MB' for r in rss)}, chunks retried {retried}", flush=True)
        return rate

    def alone(self, body: bytes, n_docs: int, filename: str = "documents.zip") -> float:
        """documents/s of one job, from its 202 to its `done`, nothing else submitted."""
        job_id, self.upload = self.submit(body, filename)
        t = time.perf_counter()
        self.wait(job_id)
        return n_docs / (time.perf_counter() - t)

    def big_and_small(self, n_big: int) -> tuple[float, float]:
        """(seconds from the 202 of a 5-document job submitted right after an `n_big` one to its `done`, seconds
        of the big one from its own 202 to its `done`)."""
        big, _ = self.submit(archive(n_big))
        started = time.perf_counter()
        small, _ = self.submit(archive(5))
        submitted = time.perf_counter()
        ended: dict[str, float] = {}
        while len(ended) < 2:
            for job_id in (big, small):
                if job_id not in ended and not self.store.get_job(job_id).active:
                    self.wait(job_id)  # (done, every document valid)
                    ended[job_id] = time.perf_counter()
            time.sleep(0.05)
        return ended[small] - submitted, ended[big] - started

    def small_behind(self, n_big: int, n_workers: int, storage: str) -> float:
        procs = self.workers(n_workers)
        try:
            small, big = self.big_and_small(n_big)
        finally:
            self.stop(procs)
        print(f"  {storage}, {n_workers} worker(s): the 5-document job done {small:.1f} s after its submission, "
              f"the {n_big}-document job {big:.1f} s after its own", flush=True)
        return small

    def session(self, n_workers: int, n_docs: int) -> dict:
        """--compare's measurements in one set of warm workers: a job alone, then the same with a small one behind."""
        procs = self.workers(n_workers)
        try:
            alone = self.alone(archive(n_docs), n_docs)
            small, big = self.big_and_small(n_docs)
        finally:
            self.stop(procs)
        return {"alone": alone, "big": n_docs / big, "small": small}

    @staticmethod
    def stop(procs: list[subprocess.Popen]) -> None:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(60)

    def close(self) -> None:
        if hasattr(self.store, "drop_schema"):
            self.store.drop_schema()


def flow_rate(seconds: float = 8.0) -> float:
    from pipeline.flows.validate_batch import validate_document

    doc = TYPICAL.read_bytes()
    for _ in range(20):
        validate_document(doc, "xrechnung")
    n, t = 0, time.perf_counter()
    while time.perf_counter() - t < seconds:
        validate_document(doc, "xrechnung")
        n += 1
    return n / (time.perf_counter() - t)


SETUPS = (("embedded", 1), ("embedded", 2), ("postgres", 2))


def compare(other: Path, n_docs: int, rounds: int, setups=SETUPS) -> None:
    """This checkout against `other`, alternating (module docstring); a table of medians at the end."""
    codes = {"this": REPO, "other": other.resolve()}
    print(f"{n_docs} documents, this checkout against {codes['other']}, {rounds} round(s), {os.cpu_count()} CPU(s)",
          flush=True)
    got: dict[tuple, list[dict]] = {}
    for r in range(rounds):
        for storage, n in setups:
            for name in (("other", "this") if r % 2 == 0 else ("this", "other")):
                out = subprocess.run([sys.executable, __file__, "--code", str(codes[name]), "--session",
                                      "--storage", storage, "--workers", str(n), "--documents", str(n_docs)],
                                     capture_output=True, text=True, check=True)
                m = json.loads(out.stdout.strip().splitlines()[-1])
                got.setdefault((storage, n, name), []).append(m)
                print(f"  round {r + 1}, {storage}, {n} worker(s), {name}: alone {m['alone']:.1f} documents/s, "
                      f"with a small job behind {m['big']:.1f} documents/s, the small one {m['small']:.1f} s "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)
    print("medians: engine, workers, code: alone documents/s | big with small behind documents/s | small's wait s")
    for storage, n in setups:
        for name in ("other", "this"):
            ms = got[(storage, n, name)]
            print(f"  {storage}, {n}, {name}: " + " | ".join(
                f"{statistics.median(m[k] for m in ms):.1f}" for k in ("alone", "big", "small")), flush=True)


def main() -> None:
    global CODE
    ap = argparse.ArgumentParser()
    ap.add_argument("--documents", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--no-mbox", action="store_true", help="leave out the .mbox run")
    ap.add_argument("--small-behind", type=int, metavar="N", help="only: a 5-document job right after an N one")
    ap.add_argument("--storage", choices=("postgres", "embedded"), default="postgres",
                    help="--small-behind, --session: the job engine (default postgres)")
    ap.add_argument("--workers", type=int, default=2, help="--small-behind, --session: worker processes (default 2)")
    ap.add_argument("--compare", type=Path, metavar="OTHER_CHECKOUT", help="this code against another checkout's")
    ap.add_argument("--code", type=Path, default=REPO, help="(--compare) the checkout whose `pipeline` runs")
    ap.add_argument("--session", action="store_true", help="(--compare) one setup's measurements, as JSON")
    ap.add_argument("--setups", nargs="+", metavar="ENGINE:WORKERS", help="--compare: only these (embedded:2 ...)")
    args = ap.parse_args()
    if args.compare:
        setups = [(e, int(n)) for e, n in (x.split(":") for x in args.setups)] if args.setups else SETUPS
        compare(args.compare, args.documents, args.rounds, setups)
        return
    CODE = args.code.resolve()
    sys.path.insert(0, str(CODE))
    with tempfile.TemporaryDirectory(prefix="bench-jobs-") as tmp:
        bench = Bench(Path(tmp), args.storage if args.small_behind or args.session else "postgres")
        try:
            if args.session:
                print(json.dumps(bench.session(args.workers, args.documents)), flush=True)
                return
            if args.small_behind:
                print(f"a 5-document job behind a {args.small_behind}-document one, {os.cpu_count()} CPU(s)",
                      flush=True)
                bench.small_behind(args.small_behind, args.workers, args.storage)
                return
            body = archive(args.documents)
            print(f"{args.documents} documents ({len(body) / 1e6:.1f} MB ZIP), {os.cpu_count()} CPU(s)", flush=True)
            rates: dict[int, list[float]] = {1: [], 2: []}
            shares: dict[int, list[float]] = {1: [], 2: []}
            for _ in range(args.rounds):
                for n in (1, 2):  # alternating, each against the flow alone measured just before it
                    single = flow_rate()
                    print(f"  the validate flow alone in one process: {single:.1f} documents/s", flush=True)
                    rates[n].append(bench.run(n, body, args.documents, single))
                    shares[n].append(rates[n][-1] / n / single)
            ratios = [two / one for one, two in zip(rates[1], rates[2])]
            print(f"per worker vs the flow alone: 1 worker {statistics.median(shares[1]):.0%}, 2 workers "
                  f"{statistics.median(shares[2]):.0%} (median of {args.rounds}; target >= 90 %)")
            print(f"scaling 2 workers / 1: {statistics.median(ratios):.2f}x (median of {args.rounds} same-round "
                  "ratios; target >= 1.8x)")
            if not args.no_mbox:
                box = mailbox(args.documents)
                print(f"the same documents as an .mbox of {args.documents} messages ({len(box) / 1e6:.1f} MB):",
                      flush=True)
                single = flow_rate()
                print(f"  the validate flow alone in one process: {single:.1f} documents/s", flush=True)
                bench.run(2, box, args.documents, single, "month.mbox")
        finally:
            bench.close()


if __name__ == "__main__":
    main()
