"""Our validation against the JVM validators' engine, same run: Saxon-HE on a warm JVM running the same official
compiled Schematron XSLTs (the yardstick of issue 15; KoSIT's validator and Mustang do this).

    python3 bench/bench_jvm.py [--runs 40] [--sizes 100,1000,5000] [--syntaxes CII,UBL] [--no-install]

Per document, rounds interleave three measurements so that load from other processes hits all alike:
  ours  pipeline.flows.validate_xml.validate_xml(bytes): safe parse, scenario, XSD, the scenario's official XSLTs,
        findings located (what the validate endpoint runs, without HTTP)
  bare  the same official XSLTs in saxonche on the same document as bench_validate.bare measures it: lxml parse +
        XSD + Saxon parse + each stylesheet (compiled once), nothing read from the results
  JVM   bench/jvm/ValidateHarness.java on Debian's Saxon-HE (libsaxonhe-java): build a tree from the file + each
        of the scenario's stylesheets into an in-memory SVRL tree, timed inside the JVM (no pipe in the figure);
        'JVM+XSD' adds a JAXP (JDK Xerces) XSD validation of the file, timed apart, for a like-for-like figure
Figures are medians. The harness is asked over stdin/stdout (one request per document and round); it compiles
each stylesheet once and keeps it. 'findings' = our Schematron findings / the SVRL's failed asserts + successful
reports in the JVM: equal when both sides did the same work.

Documents: official XRechnung business cases (a typical 1-line invoice; two with a ~210 KB attachment) and
the typical one with its line repeated to 100 / 1,000 / 5,000 lines (bench_validate.with_lines), CII and UBL.

Java is a yardstick only: the service never needs it. Without `java`/`javac` or the jar, this script installs
them with apt-get (as root; --no-install to refuse) and compiles the harness into ~/.cache (never into the repo).
The official stylesheets are read where `pipeline rules install` put them.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_validate import CORPUS, bare, with_lines  # noqa: E402
from pipeline import saxon  # noqa: E402
from pipeline.check import engine, packs, scenarios, xmlinput  # noqa: E402
from pipeline.flows.validate_xml import validate_xml  # noqa: E402

HARNESS = HERE / "jvm" / "ValidateHarness.java"
JAR_DIR = Path("/usr/share/java")
CASES = CORPUS / "xrechnung-testsuite/business-cases/standard"
TYPICAL = {"CII": CASES / "01.01a-INVOICE_uncefact.xml", "UBL": CASES / "01.01a-INVOICE_ubl.xml"}
ATTACHMENT = {"CII": [CASES / "01.15a-INVOICE_uncefact.xml", CASES / "02.01a-INVOICE_uncefact.xml"],
              "UBL": [CASES / "01.15a-INVOICE_ubl.xml", CASES / "02.01a-INVOICE_ubl.xml"]}


# ---------------------------------------------------------------- the JVM side

def saxon_jar() -> Path | None:
    for name in ("Saxon-HE.jar", "saxonhe.jar"):
        if (JAR_DIR / name).exists():
            return JAR_DIR / name
    return None


def ensure_java(install: bool) -> Path:
    """java, javac and Debian's Saxon-HE jar; installed with apt-get when missing (apt-get update once)."""
    missing = [pkg for pkg, ok in (("libsaxonhe-java", saxon_jar() is not None),
                                   ("default-jdk-headless", shutil.which("javac") and shutil.which("java")))
               if not ok]
    if missing:
        if not install or os.geteuid() != 0:
            sys.exit(f"missing {', '.join(missing)}: apt-get install -y {' '.join(missing)} (or run this as root)")
        print(f"installing {' '.join(missing)} with apt-get ...", flush=True)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update"], check=True, env=env, stdout=subprocess.DEVNULL)
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", *missing], check=True, env=env,
                       stdout=subprocess.DEVNULL)
    jar = saxon_jar()
    if jar is None:
        sys.exit(f"no Saxon-HE jar under {JAR_DIR} after installing libsaxonhe-java")
    return jar


SHARED_JAVA = HERE / "jvm" / "Compiled.java"  # the processor and compile caches both harnesses extend


def compile_harness(jar: Path, source: Path = HARNESS) -> Path:
    """A harness's classes (with the shared base class), compiled once per source version into the user's cache
    (outside the repo)."""
    sources = [source, SHARED_JAVA]
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources) + str(jar.resolve()).encode()).hexdigest()[:16]
    out = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "einvoice-pipeline" / "bench-jvm" / digest
    if not (out / f"{source.stem}.class").exists():
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-nowarn", "-cp", str(jar), "-d", str(out), *map(str, sources)], check=True)
    return out


class Jvm:
    """A harness class on a warm JVM, asked one line at a time over stdin/stdout."""
    harness = "ValidateHarness"

    def __init__(self, jar: Path, classes: Path):
        self.proc = subprocess.Popen(["java", "-cp", f"{classes}{os.pathsep}{jar}", self.harness],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                                     encoding="utf-8")
        ready = self.proc.stdout.readline().rstrip("\n").split("\t")
        if ready[0] != "READY":
            raise RuntimeError(f"harness did not start: {ready}")
        self.version = f"Saxon-HE {ready[1]} on Java {ready[2]}"

    def run(self, doc: Path, xsd: Path | None, sheets) -> tuple[float, float, float, int]:
        """(parse ms, rules ms, xsd ms, findings) of one document, as the JVM timed them."""
        self.proc.stdin.write(f"RUN\t{doc}\t{xsd or '-'}\t{'|'.join(str(s) for s in sheets)}\n")
        answer = self.proc.stdout.readline().rstrip("\n").split("\t")
        if answer[0] != "OK":
            raise RuntimeError(f"harness: {answer}")
        parse, rules, xsd_ns = (int(v) / 1e6 for v in answer[1:4])
        return parse, rules, xsd_ns, int(answer[4])

    def close(self) -> None:
        try:
            self.proc.stdin.write("QUIT\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001
            self.proc.kill()


# ---------------------------------------------------------------- documents and rounds

def documents(syntaxes, sizes) -> list[tuple[str, str, bytes]]:
    docs = []
    for syntax in syntaxes:
        typical = TYPICAL[syntax].read_bytes()
        docs.append((f"{syntax} {TYPICAL[syntax].stem.split('-')[0]} typical", syntax, typical))
        for path in ATTACHMENT[syntax]:
            docs.append((f"{syntax} {path.stem.split('-')[0]} attachment", syntax, path.read_bytes()))
        for n in sizes:
            docs.append((f"{syntax} {n:,} lines", syntax, with_lines(typical, syntax, n)))
    return docs


def rounds_for(size: int, runs: int) -> tuple[int, int]:
    """(warm-up rounds, timed rounds) for a document of this many bytes."""
    if size < 300_000:
        return 5, runs
    if size < 3_000_000:
        return 2, max(5, runs // 5)
    return 1, max(3, runs // 13)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=40, help="timed rounds of the small documents (fewer for big ones)")
    ap.add_argument("--sizes", default="100,1000,5000", help="line counts of the synthetic documents")
    ap.add_argument("--syntaxes", default="CII,UBL")
    ap.add_argument("--no-install", action="store_true", help="never apt-get install Java / Saxon-HE")
    args = ap.parse_args()

    jar = ensure_java(not args.no_install)
    jvm = Jvm(jar, compile_harness(jar))
    load_before = os.getloadavg()
    print(f"JVM: {jvm.version}; ours: saxonche {saxon.processor().version}; load {load_before[0]:.2f} "
          f"{load_before[1]:.2f} {load_before[2]:.2f} on {os.cpu_count()} cores", flush=True)
    engine.warm_up()
    pack = packs.latest_active("xrechnung")
    chosen = scenarios.load_scenarios(pack.scenarios)
    sizes = [int(n) for n in args.sizes.split(",") if n]
    docs = documents([s.strip() for s in args.syntaxes.split(",")], sizes)

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-jvm-") as tmp:
        prepared = []
        for i, (name, syntax, data) in enumerate(docs):
            path = Path(tmp) / f"{i:02d}.xml"
            path.write_bytes(data)
            sc = scenarios.select_scenario(chosen, saxon.parse(xmlinput.load(data).text))
            prepared.append((name, data, path, sc))
        # JIT warm-up of the JVM on every small document before any timing (a long-running validator is warm)
        for _ in range(30):
            for name, data, path, sc in prepared:
                if len(data) < 300_000:
                    jvm.run(path, sc.xsd, sc.stylesheets)

        print(f"\n{'document':28} {'KB':>6} {'ours ms':>8} {'bare ms':>8} {'JVM ms':>8} {'ours/JVM':>8} "
              f"{'JVM parse':>9} {'+XSD ms':>8} {'ours/+XSD':>9} {'findings':>9} {'rounds':>6}", flush=True)
        for name, data, path, sc in prepared:
            warm, runs = rounds_for(len(data), args.runs)
            ours, bares, jvms, jparse, jxsd = [], [], [], [], []
            for r in range(warm + runs):
                t = time.perf_counter()
                report = validate_xml(data)
                t_ours = time.perf_counter() - t
                t = time.perf_counter()
                bare(data, sc.xsd, sc.stylesheets)
                t_bare = time.perf_counter() - t
                p, rules, x, found = jvm.run(path, sc.xsd, sc.stylesheets)
                if r >= warm:
                    ours.append(t_ours * 1000)
                    bares.append(t_bare * 1000)
                    jvms.append(p + rules)
                    jparse.append(p)
                    jxsd.append(p + rules + x)
            ours_found = sum(1 for i in report.issues if not i.code.startswith(engine.XSD_PREFIX))
            m = [statistics.median(v) for v in (ours, bares, jvms, jparse, jxsd)]
            rows.append((name, len(data), *m))
            print(f"{name:28} {len(data) / 1024:6.0f} {m[0]:8.1f} {m[1]:8.1f} {m[2]:8.1f} {m[0] / m[2]:8.2f} "
                  f"{m[3]:9.1f} {m[4]:8.1f} {m[0] / m[4]:9.2f} {f'{ours_found}/{found}':>9} {runs:6}", flush=True)
    jvm.close()
    load_after = os.getloadavg()
    print(f"\nload after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}; peak RSS of this process "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    print("ours = validate_xml(); bare = lxml parse + XSD + Saxon parse + the XSLTs in saxonche; JVM = Saxon parse "
          "+ the same XSLTs on a warm JVM (no XSD); +XSD = JVM with JAXP XSD validation; medians of interleaved rounds")


if __name__ == "__main__":
    main()
