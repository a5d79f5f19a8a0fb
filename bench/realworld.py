"""Real invoices nobody on this project wrote (../shared/realworld, issue 23), through the in-process flows:

    python3 bench/realworld.py [--pdf-render] [--show-diffs] [--only SUBSTRING] [--json OUT] [--root DIR]

Per folder: files; official verdict (valid / invalid / not judged) and our agreement with it; PDFs called invalid
on PDF/A findings alone; converts of valid XML to the other syntax with identical business terms (and why the
others failed); complete parses; identical round trips of complete XML parses; renders; server errors. Then the
issue's targets on the valid XML invoices. What each column means: tests/roundtrip/realworld.py.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from dataclasses import asdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
REALWORLD = REPO.parent / "shared" / "realworld"

from roundtrip.realworld import examine, files, folder_of  # noqa: E402


READ_OK = "ok"
COLUMNS = ("valid/inv/-", "agree", "pdfA", "convert=", "complete", "rt=", "render", "500")
WIDTHS = (11, 7, 4, 9, 8, 7, 7, 4)


def same(outcomes, stage: str) -> int:
    return sum(getattr(o, stage) == "same" for o in outcomes)


def pct(n: int, of: int) -> str:
    return f"{n}/{of} ({100 * n / of:.0f} %)" if of else "0/0"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pdf-render", action="store_true", help="render PDFs (WeasyPrint) instead of HTML pages")
    ap.add_argument("--show-diffs", action="store_true", help="print each failed conversion / round trip")
    ap.add_argument("--only", default="", help="only files whose path contains this")
    ap.add_argument("--json", help="write every outcome to this file")
    ap.add_argument("--root", type=Path, default=REALWORLD,
                    help="another folder of invoices, examined the same way (default: ../shared/realworld)")
    args = ap.parse_args()

    started = time.perf_counter()
    outcomes = []
    for path in files(args.root):
        if args.only in str(path):
            outcomes.append(examine(path, args.root, render_pdf=args.pdf_render))
    by_folder = defaultdict(list)
    for o in outcomes:
        by_folder[folder_of(o.name)].append(o)

    head = f"{'folder':42} {'files':>5} " + " ".join(f"{c:>{w}}" for c, w in zip(COLUMNS, WIDTHS))
    print(head)
    print("-" * len(head))
    for folder in sorted(by_folder):
        os_ = by_folder[folder]
        valid = sum(o.official is True for o in os_)
        invalid = sum(o.official is False for o in os_)
        judged = [o for o in os_ if o.official is not None]
        conv = [o for o in os_ if o.convert != "n/a"]
        rt = [o for o in os_ if o.roundtrip != "n/a"]
        cells = [f"{valid}/{invalid}/{len(os_) - valid - invalid}", f"{sum(bool(o.agrees) for o in judged)}/{len(judged)}",
                 str(sum(o.pdfa_only for o in os_)), f"{same(conv, 'convert')}/{len(conv)}",
                 f"{sum(o.complete for o in os_)}/{sum(o.read == READ_OK for o in os_)}",
                 f"{same(rt, 'roundtrip')}/{len(rt)}", f"{sum(bool(o.rendered) for o in os_)}/{len(os_)}",
                 str(sum(len(o.server_errors) for o in os_))]
        print(f"{folder:42} {len(os_):>5} " + " ".join(f"{c:>{w}}" for c, w in zip(cells, WIDTHS)))

    valid_xml = [o for o in outcomes if o.kind == "xml" and o.official]
    complete_xml = [o for o in outcomes if o.roundtrip != "n/a"]
    pdfs_valid = [o for o in outcomes if o.kind == "pdf" and o.official]
    print()
    print("valid XML invoices converting with identical terms:",
          pct(sum(o.convert == "same" for o in valid_xml), len(valid_xml)), "(target >= 95 %)")
    print("  not: ", dict(Counter(o.convert for o in valid_xml if o.convert != "same")))
    print("complete XML parses regenerating identical terms: ",
          pct(sum(o.roundtrip == "same" for o in complete_xml), len(complete_xml)), "(target >= 95 %)")
    print("  not: ", dict(Counter(o.roundtrip for o in complete_xml if o.roundtrip != "same")))
    print("valid PDFs called invalid on PDF/A findings alone:", sum(o.pdfa_only for o in outcomes), "of",
          len(pdfs_valid), "(target 0)")
    disagree = [o for o in outcomes if o.agrees is False]
    print("verdicts differing from the official rules':", len(disagree))
    for o in disagree:
        print(f"  {o.name}: official {o.official}, ours {o.ours} {o.ours_errors[:6]}")
    not_judged_valid = [o for o in outcomes if o.official is None and o.ours]
    for o in not_judged_valid:
        print(f"  {o.name}: not an EN 16931 invoice, yet ours says valid")
    errors = [(o.name, e) for o in outcomes for e in o.server_errors]
    print("server errors:", len(errors), "(target 0)")
    for name, e in errors:
        print(f"  {name}: {e}")
    if args.show_diffs:
        for o in outcomes:
            if o.convert not in ("same", "n/a"):
                print(f"\n== convert {o.name}: {o.convert}\n" + "\n".join(o.convert_diff[:40]))
            if o.roundtrip not in ("same", "n/a"):
                print(f"\n== roundtrip {o.name}: {o.roundtrip}\n" + "\n".join(o.roundtrip_diff[:40]))
    if args.json:
        Path(args.json).write_text(json.dumps([{**asdict(o), "pdfa_only": o.pdfa_only} for o in outcomes],
                                              indent=1, default=str))
    print(f"\n{len(outcomes)} files in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
