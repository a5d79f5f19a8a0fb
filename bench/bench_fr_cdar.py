"""France's lifecycle status messages (fr-cdar): what each path costs for one message, and the optimised copies.

    python3 bench/bench_fr_cdar.py [--runs 30]

Same run, alternating, in process, on fixtures/fr-status-207.json (a dispute with a reason, an action and two data)
and FNFE's UC1 examples (one invoice's five statuses):
- each BR-FR-CDV stylesheet as published vs its optimised copy (the engine's call, the parsed document shared);
- the paths: validate (XSD + both stylesheets), generate (model -> canonical -> cdar.xsl -> validate), parse (read
  -> JSON -> completeness -> unmapped), the page as HTML and as PDF, the five messages' timeline page as PDF.
- with --large N,M: the HTML page of one message about N invoices (MDT-74 true, a status each) and of one message
  of N statuses of one invoice (each its own receipt time, MDT-95), for each size: the time should grow as N does.
Prints medians in ms.
"""
from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from lxml import etree  # noqa: E402

from pipeline.check import cdar, engine, packs, xmlinput  # noqa: E402
from pipeline.flows.status_generate import generate_status  # noqa: E402
from pipeline.flows.status_read import parse_status, render_status  # noqa: E402
from pipeline.flows.status_validate import validate_status  # noqa: E402
from bench_fr_ctc import median_ms  # noqa: E402 - the same interleaved medians (this folder is on the path)

UC1 = sorted((REPO.parent / "shared" / "corpus-cdar").glob("UC1_*.xml"))
RAM = "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"
UDT = "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100"


def large(n: int, one_invoice: bool) -> bytes:
    """FNFE's Déposée (200) of F202500003 made a message about n invoices (MDT-74 true), or of n statuses of that
    one invoice, the others received a minute apart from 1 June on (MDT-95): no two the same."""
    tree = etree.parse(str(UC1[0]))
    tree.find(f".//{{{RAM}}}MultipleReferencesIndicator/{{{UDT}}}Indicator").text = "true"
    first = tree.find(f".//{{{RAM}}}ReferenceReferencedDocument")
    last = first
    for i in range(1, n):
        ref = copy.deepcopy(first)
        if one_invoice:
            ref.find(f"{{{RAM}}}ReceiptDateTime/{{{UDT}}}DateTimeString").text = \
                f"202506{1 + i // 1440:02d}{i // 60 % 24:02d}{i % 60:02d}00"   # in June: before the first's
        else:
            ref.find(f"{{{RAM}}}IssuerAssignedID").text = f"F{300000000 + i}"
        last.addnext(ref)
        last = ref
    return etree.tostring(tree, encoding="UTF-8", xml_declaration=True)


def bench_large(sizes: list[int], runs: int) -> None:
    calls = {}
    for n in sizes:
        for one_invoice, shape in ((False, "invoices"), (True, "statuses of one invoice")):
            data = large(n, one_invoice)
            calls[f"page HTML, {n:,} {shape}"] = lambda d=data: render_status([("large.xml", d)], html=True)
    print(", ".join(f"{k} {v:.0f} ms" for k, v in median_ms(calls, runs).items()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--large", default="", help="sizes of the large messages, e.g. 1000,3001 (3 runs each)")
    args = parser.parse_args()
    if args.large:
        bench_large([int(n) for n in args.large.split(",")], 3)
        return
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
