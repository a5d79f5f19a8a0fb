"""Peppol validation time against EN 16931 validation of the same documents, same run, calls interleaved.

    python3 bench/bench_peppol.py [--runs 30] [--sizes 1,100,1000]

Peppol = `validate(data, "peppol")`: UBL XSD, the CEN rules as Peppol ships them and the PEPPOL rules (self-billing:
the PEPPOL-SB rules). EN 16931 = `validate(data, "en16931")`: UBL XSD and the CEN 1.3.16 rules. Both through the
validation flow (safe parse, XSD, rules, locating findings; no content checks), on every example of
../shared/corpus/peppol/2026.5 and on base-example.xml with its first line repeated to each size.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_validate import medians_ms, with_lines  # noqa: E402

from pipeline.flows.validate_xml import validate  # noqa: E402

EXAMPLES = REPO.parent / "shared" / "corpus" / "peppol" / "2026.5"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--sizes", default="1,100,1000", help="line counts of the size series (comma-separated)")
    args = ap.parse_args()
    documents = [(p.relative_to(EXAMPLES).as_posix(), p.read_bytes()) for p in sorted(EXAMPLES.rglob("*.xml"))]
    base = (EXAMPLES / "billing" / "base-example.xml").read_bytes()
    documents += [(f"base-example x {n} lines", with_lines(base, "UBL", n)) for n in map(int, args.sizes.split(","))]
    print(f"{'document':44} {'peppol ms':>10} {'en16931 ms':>11} {'ratio':>6}")
    ratios = []
    for name, data in documents:
        runs = args.runs if len(data) < 200_000 else max(5, args.runs // 6)
        peppol, en16931 = medians_ms([lambda: validate(data, "peppol"), lambda: validate(data, "en16931")], runs)
        ratios.append(peppol / en16931)
        print(f"{name:44} {peppol:10.2f} {en16931:11.2f} {peppol / en16931:6.2f}")
    print(f"median ratio peppol / en16931 over {len(ratios)} documents: {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
