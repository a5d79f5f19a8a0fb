"""Two saxonche releases side by side, same run (issue 40): speed against the warm JVM and findings on the corpus.

    python3 bench/saxon_releases.py --other /path/to/venv/bin/python [--runs 30] [--sizes 100,1000] [--corpus]
    python3 bench/saxon_releases.py --other-tree DIR [--other-rules-home DIR] [--other python] ...

`--other-tree` runs the other side from another checkout of this project (e.g. `git worktree add DIR <commit>`) with
its own rules home (installed by that tree's `pipeline rules install`), so that two states of the code and their
optimised copies are compared the same way as two releases.

The process running this script is one engine (its venv's saxonche); `--other` names the Python of a second venv
with the same project installed and another saxonche release. Each side is a worker process (this file with
`--worker`) asked over stdin/stdout, so the rounds of both and of the JVM (bench_jvm.py's harness) interleave:
  RUN <file>            -> OK <ms> <findings> <cpu ms>   validate_xml on XRechnung, wall and CPU ms in the worker
  REPORT <spec> <file>  -> OK <json>            the report's findings (code, severity, message, line, column, xpath)
Speed: bench_jvm.py's documents (typical, attachment, 100 / 1,000 lines, CII and UBL), medians, and the other
release's time over this one's. Findings (`--corpus`): every XML document of ../shared/corpus and
../shared/realworld and every invoice embedded in their PDFs (as tests/test_rules_optimised.py reads them),
validated on each pack that covers its syntax (xrechnung, en16931, peppol, fr-ctc) by both releases; every
difference is printed (a dynamic error's text is Saxon's own wording, so it may differ between releases).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
SPECS = ("xrechnung", "en16931", "peppol", "fr-ctc")


def worker() -> None:
    from pipeline import saxon
    from pipeline.check import engine
    from pipeline.flows.validate_xml import validate_xml

    engine.warm_up()
    print(f"READY\t{saxon.processor().version}", flush=True)
    for line in sys.stdin:
        parts = line.rstrip("\n").split("\t")
        try:
            if parts[0] == "RUN":
                data = Path(parts[1]).read_bytes()
                t, cpu = time.perf_counter(), time.process_time()
                report = validate_xml(data)
                ms, cpu_ms = (time.perf_counter() - t) * 1000, (time.process_time() - cpu) * 1000
                print(f"OK\t{ms}\t{sum(1 for i in report.issues if not i.code.startswith(engine.XSD_PREFIX))}"
                      f"\t{cpu_ms}", flush=True)
            elif parts[0] == "REPORT":
                report = validate_xml(Path(parts[2]).read_bytes(), parts[1])
                found = [(i.code, i.severity, i.message, i.location.line if i.location else None,
                          i.location.column if i.location else None, i.location.xpath if i.location else None)
                         for i in report.issues]
                print(f"OK\t{json.dumps(found)}", flush=True)
            else:
                return
        except Exception as exc:  # noqa: BLE001 - an answer per request, whatever happens
            print(f"ERR\t{type(exc).__name__}: {' '.join(str(exc).split())[:300]}", flush=True)


class Worker:
    def __init__(self, python: str, tree: Path = HERE.parent, rules_home: str | None = None):
        env = dict(os.environ, **({"EINVOICE_RULES_HOME": rules_home} if rules_home else {}))
        self.proc = subprocess.Popen([python, str(tree / "bench" / Path(__file__).name), "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                                     encoding="utf-8", cwd=str(tree), env=env)
        ready = self.proc.stdout.readline().rstrip("\n").split("\t")
        if ready[0] != "READY":
            raise RuntimeError(f"worker did not start: {ready}")
        self.version = ready[1]

    def ask(self, *parts: str) -> list[str]:
        self.proc.stdin.write("\t".join(parts) + "\n")
        return self.proc.stdout.readline().rstrip("\n").split("\t", 1)

    def close(self) -> None:
        self.proc.stdin.write("QUIT\n")
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def speed(a: Worker, b: Worker, runs: int, sizes: list[int], syntaxes: list[str]) -> None:
    from bench_jvm import Jvm, compile_harness, documents, ensure_java, rounds_for
    from pipeline import saxon
    from pipeline.check import packs, scenarios, xmlinput

    jar = ensure_java(False)
    jvm = Jvm(jar, compile_harness(jar))
    chosen = scenarios.load_scenarios(packs.latest_active("xrechnung").scenarios)
    print(f"JVM: {jvm.version}; A: saxonche {a.version}; B: saxonche {b.version}")
    print(f"{'document':26} {'A ms':>8} {'B ms':>8} {'JVM ms':>8} {'A/JVM':>6} {'B/JVM':>6} {'B/A':>6} {'findings':>9}"
          f"  {'A CPU':>7} {'B CPU':>7} {'B/A':>5}")
    with tempfile.TemporaryDirectory(prefix="saxon-releases-") as tmp:
        prepared = []
        for i, (name, syntax, data) in enumerate(documents(syntaxes, sizes)):
            path = Path(tmp) / f"{i:02d}.xml"
            path.write_bytes(data)
            sc = scenarios.select_scenario(chosen, saxon.parse(xmlinput.load(data).text))
            prepared.append((name, data, path, sc))
        for _ in range(30):  # the JVM's JIT warmed on every small document first, as bench_jvm.py does
            for name, data, path, sc in prepared:
                if len(data) < 300_000:
                    jvm.run(path, sc.xsd, sc.stylesheets)
        for name, data, path, sc in prepared:
            warm, n = rounds_for(len(data), runs)
            ta, tb, tj, found, ca, cb = [], [], [], set(), [], []
            for r in range(warm + n):
                order = (a, b) if r % 2 == 0 else (b, a)
                got = {}
                for w in order:
                    answer = w.ask("RUN", str(path))
                    got[w] = answer[1].split("\t")
                p, rules, _, jfound = jvm.run(path, sc.xsd, sc.stylesheets)
                if r >= warm:
                    ta.append(float(got[a][0]))
                    tb.append(float(got[b][0]))
                    # CPU of the worker's validation (an older worker answers wall time only)
                    ca.append(float(got[a][2]) if len(got[a]) > 2 else float("nan"))
                    cb.append(float(got[b][2]) if len(got[b]) > 2 else float("nan"))
                    tj.append(p + rules)
                found |= {(got[a][1], got[b][1], str(jfound))}
            ma, mb, mj, mca, mcb = (statistics.median(v) for v in (ta, tb, tj, ca, cb))
            print(f"{name:26} {ma:8.2f} {mb:8.2f} {mj:8.2f} {ma / mj:6.2f} {mb / mj:6.2f} {mb / ma:6.2f} "
                  f"{'/'.join(sorted(found)[0]) if len(found) == 1 else found!s:>9}  {mca:7.2f} {mcb:7.2f} "
                  f"{mcb / mca:5.2f}", flush=True)
    jvm.close()


def corpus_documents():
    """(name, bytes) as tests/test_rules_optimised.py reads the corpus (XML files, VEFA test sets, PDFs' invoices)."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from test_rules_optimised import _documents

    yield from _documents()


def findings(a: Worker, b: Worker) -> None:
    from pipeline.check import packs, xmlinput
    from pipeline.check.xmlinput import XmlInputError

    docs = differing = compared = 0
    with tempfile.TemporaryDirectory(prefix="saxon-releases-") as tmp:
        path = Path(tmp) / "doc.xml"
        for name, data in corpus_documents():
            try:
                syntax = xmlinput.load(data).syntax
            except XmlInputError:
                continue
            if syntax is None:
                continue
            docs += 1
            path.write_bytes(data)
            for spec in SPECS:
                if not packs.covers(spec, syntax):
                    continue
                ra, rb = a.ask("REPORT", spec, str(path)), b.ask("REPORT", spec, str(path))
                compared += 1
                if ra != rb:
                    differing += 1
                    print(f"DIFFERENT {name} {spec}:", flush=True)
                    found_a, found_b = (json.loads(r[1]) if r[0] == "OK" else [r] for r in (ra, rb))
                    for label, mine, theirs in (("A", found_a, found_b), ("B", found_b, found_a)):
                        for finding in (f for f in mine if f not in theirs):
                            print(f"  {label} only: {json.dumps(finding)[:400]}", flush=True)
    print(f"findings: {docs} documents, {compared} validations, {differing} with different reports")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--other", default=sys.executable, help="the Python of a venv with the other saxonche release")
    ap.add_argument("--other-tree", type=Path, default=HERE.parent, help="another checkout of this project")
    ap.add_argument("--other-rules-home", help="the rules home that checkout installed (EINVOICE_RULES_HOME)")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--sizes", default="100,1000")
    ap.add_argument("--syntaxes", default="CII,UBL")
    ap.add_argument("--corpus", action="store_true", help="compare the findings on the whole corpus too")
    ap.add_argument("--no-speed", action="store_true")
    args = ap.parse_args()
    if args.worker:
        worker()
        return
    load = os.getloadavg()
    print(f"load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores", flush=True)
    a, b = Worker(sys.executable), Worker(args.other, args.other_tree.resolve(), args.other_rules_home)
    try:
        if not args.no_speed:
            speed(a, b, args.runs, [int(n) for n in args.sizes.split(",") if n],
                  [s.strip() for s in args.syntaxes.split(",")])
        if args.corpus:
            findings(a, b)
    finally:
        a.close()
        b.close()
    load = os.getloadavg()
    print(f"load after {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
