"""France's lifecycle status messages (fr-cdar): what each path costs for one message, and the optimised copies.

    python3 bench/bench_fr_cdar.py [--runs 30]

Same run, alternating, in process, on fixtures/fr-status-207.json (a dispute with a reason, an action and two data)
and FNFE's UC1 examples (one invoice's five statuses):
- each BR-FR-CDV stylesheet as published vs its optimised copy (the engine's call, the parsed document shared);
- the paths: validate (XSD + both stylesheets), generate (model -> canonical -> cdar.xsl -> validate), parse (read
  -> JSON -> completeness -> unmapped), the page as HTML and as PDF, the five messages' timeline page as PDF.
Prints medians in ms.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pipeline.check import cdar, engine, packs, xmlinput  # noqa: E402
from pipeline.flows.status_generate import generate_status  # noqa: E402
from pipeline.flows.status_read import parse_status, render_status  # noqa: E402
from pipeline.flows.status_validate import validate_status  # noqa: E402
from bench_fr_ctc import median_ms  # noqa: E402 - the same interleaved medians (this folder is on the path)

UC1 = sorted((REPO.parent / "shared" / "corpus-cdar").glob("UC1_*.xml"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    body = (REPO / "fixtures" / "fr-status-207.json").read_bytes()
    xml = generate_status(body)[0]
    doc = xmlinput.load(xml)
    sdoc = engine.saxon_document(doc)
    pack = packs.latest_active(cdar.SPEC)
    sheets = {}
    for sheet in pack.rules_for(cdar.SYNTAX).stylesheets:
        sheets[f"{sheet.stem} as published"] = sheet
        sheets[f"{sheet.stem} optimised copy"] = pack.runnable(sheet)
    calls = {name: (lambda s=sheet: engine.schematron_issues(sdoc, s, None, doc)) for name, sheet in sheets.items()}
    for call in calls.values():
        call()  # compiled outside the timing
    print(", ".join(f"{k} {v:.2f} ms" for k, v in median_ms(calls, args.runs).items()))
    timeline = [(p.name, p.read_bytes()) for p in UC1]
    paths = {"validate": lambda: validate_status(xml), "generate": lambda: generate_status(body),
             "parse": lambda: parse_status(xml), "page HTML": lambda: render_status([("207.xml", xml)], html=True),
             "page PDF": lambda: render_status([("207.xml", xml)]),
             f"timeline PDF ({len(timeline)} messages)": lambda: render_status(timeline, "fr")}
    for call in paths.values():
        call()
    print(", ".join(f"{k} {v:.1f} ms" for k, v in median_ms(paths, args.runs).items()))


if __name__ == "__main__":
    main()
