"""Generation latency in process, split per stage: model, calculation, canonical XML, transform, validation.

Invoices of 1, 10, 100 and 1000 lines (XRechnung, CII and UBL) with the header of
fixtures/invoice-all-fields.json (every field of service spec section 2) and one of two line shapes:
  simple  a catalogue line: item name and seller's id, quantity, unit, net price, VAT (~1 KB of CII per line)
  full    the fixture's own lines repeated: notes, period, line allowances and charges, gross price, item
          ids, classification, origin, attributes (~2 KB of CII per line)
Each stage is timed alone on the output of the previous one (pipeline.flows.generate_xml's stage functions, as
generate_xml chains them: the transform hands its Saxon tree to validation); the figures are medians. Stylesheets and rule packs are compiled before timing (a worker
does that once, at start). 'official' is the bare cost of the official checks on the same generated document in
the same run (lxml parse + XSD + Saxon parse + the scenario's official XSLTs, as bench_validate measures it):
the floor under any generate-and-validate of that document with saxonche.

'xf/val' = the transform stage alone / validation: Saxon parsing the canonical document, running the mapping and
building + serialising the result; at 10 lines it is already about 30 %, with model, calculation and canonical XML
still to add.

Budgets (issue 3): stages before validation <= 30 % of validation for a typical invoice (10 simple lines), and
a 1000-line XRechnung generated and validated in < 1 s (end to end); both are checked for every line shape.

    python3 bench/bench_generate.py [--sizes 1,10,100,1000] [--syntaxes CII,UBL] [--shapes simple,full]
                                    [--spec xrechnung]
"""
from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_validate import bare  # noqa: E402
from pipeline import saxon  # noqa: E402
from pipeline.check import packs, scenarios, xmlinput  # noqa: E402
from pipeline.flows import generate_xml as generate  # noqa: E402
from pipeline.invoice.request_json import dump_request, load_request  # noqa: E402
from pipeline.cli.golden import FIXTURES  # noqa: E402

STAGES = ("model", "calculation", "canonical", "transform", "validation")
SHAPES = ("simple", "full")


def simple_line(i: int) -> dict:
    """A catalogue line: what most lines of a long invoice look like."""
    return {"lineIdentifier": str(i + 1), "quantity": Decimal(i % 9 + 1), "unitCode": "C62",
            "priceDetails": {"netPrice": Decimal(f"{12 + i % 7}.{i % 100:02d}")},
            "lineVatInformation": {"vatCategoryCode": "S", "vatRate": Decimal(19)},
            "itemInformation": {"name": f"Article {i + 1}", "sellersIdentifier": f"A-{i + 1:05d}"}}


def full_lines(template: list[dict], n: int) -> list[dict]:
    """The fixture's own lines repeated to n (renumbered, quantities varied)."""
    lines = []
    for i in range(n):
        line = copy.deepcopy(template[i % len(template)])
        line["lineIdentifier"] = str(i + 1)
        line["quantity"] = Decimal(i % 9 + 1) * (Decimal(10) if line.get("unitCode") == "C62" and i % 3 == 2 else 1)
        for allowance in line.get("invoiceLineAllowances", []):
            allowance.pop("baseAmount", None)  # AUTO: the base is the line's own gross amount
        lines.append(line)
    return lines


def request_with_lines(n: int, syntax: str, shape: str = "full") -> bytes:
    """The all-fields fixture's header with n lines of the given shape (AUTO computes every amount)."""
    request = load_request((FIXTURES / "invoice-all-fields.json").read_bytes())
    invoice = request["invoice"]
    lines = full_lines(invoice["invoiceLines"], n) if shape == "full" else [simple_line(i) for i in range(n)]
    invoice["invoiceLines"] = lines
    used = {(l["lineVatInformation"]["vatCategoryCode"], l["lineVatInformation"]["vatRate"]) for l in lines}
    invoice["vatBreakdowns"] = [b for b in invoice["vatBreakdowns"]
                                if (b["vatCategoryCode"], b["vatCategoryRate"]) in used]
    invoice["documentLevelAllowances"][0].pop("baseAmount", None)
    invoice["documentTotals"].pop("taxTotalAmountInAccountingCurrency", None)
    invoice.pop("vatAccountingCurrencyCode", None)
    request["config"]["syntax"] = syntax
    return dump_request(request)


def timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return out, (time.perf_counter() - t) * 1000


def run_stages(body: bytes, spec: str) -> tuple[dict[str, float], bytes]:
    times = {}
    request, times["model"] = timed(generate.parse, body, spec)
    request, times["calculation"] = timed(generate.calculate, request)
    canonical, times["canonical"] = timed(generate.to_canonical, request)
    out, times["transform"] = timed(generate.transform_to_tree, canonical, str(request.config.syntax).upper(), spec)
    report, times["validation"] = timed(lambda: generate.validate(out.xml, spec, tree=out.tree))
    assert report.valid, [i.code for i in report.issues]
    return times, out.xml


def official_checks(xml: bytes, spec: str):
    """The bare official checks of the document's scenario (bench_validate.bare), ready to call."""
    doc = xmlinput.load(xml)
    pack = packs.latest_active(spec, doc.syntax)
    if pack.scenarios is not None:
        scenario = scenarios.select_scenario(scenarios.load_scenarios(pack.scenarios), saxon.parse(doc.text))
        xsd, sheets = scenario.xsd, scenario.stylesheets
    else:
        entry = pack.rules_for(doc.syntax)
        xsd, sheets = entry.xsd, entry.stylesheets
    return lambda: bare(xml, xsd, sheets)


def repeats(n: int) -> int:
    return 30 if n <= 10 else 10 if n <= 100 else 5


def measure(body: bytes, spec: str, n: int) -> tuple[dict[str, float], float, float]:
    """Per-stage medians, end-to-end median and the official checks' median; runs interleaved so that load from
    other processes hits all three alike."""
    stage_runs, e2e, floor = [], [], []
    check = None
    for _ in range(repeats(n)):
        times, xml = run_stages(body, spec)
        stage_runs.append(times)
        e2e.append(timed(generate.generate_xml, body, spec)[1])
        check = check or official_checks(xml, spec)
        floor.append(timed(check)[1])
    med = {s: statistics.median(r[s] for r in stage_runs) for s in STAGES}
    return med, statistics.median(e2e), statistics.median(floor)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,10,100,1000")
    ap.add_argument("--syntaxes", default="CII,UBL")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--spec", default="xrechnung", choices=generate.SPECS)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    syntaxes = [s.strip().upper() for s in args.syntaxes.split(",")]
    shapes = [s.strip() for s in args.shapes.split(",")]

    for syntax in syntaxes:  # compile stylesheets and rule packs once, as a worker does at start
        generate.generate_xml(request_with_lines(1, syntax), args.spec)

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"spec={args.spec}; median ms; 'pre/val' = (model+calc+canonical+transform) / validation; 'official' = "
          f"bare official checks of the same document; load average {load} on {os.cpu_count()} cores")
    print(f"{'syntax':6} {'shape':6} {'lines':>5} " + " ".join(f"{s:>11}" for s in STAGES)
          + f" {'pre/val':>8} {'xf/val':>7} {'end-to-end':>11} {'official':>9} {'e2e/off':>8}")
    ok = True
    for syntax in syntaxes:
        for shape in shapes:
            for n in sizes:
                med, e2e, floor = measure(request_with_lines(n, syntax, shape), args.spec, n)
                pre = sum(med[s] for s in STAGES[:-1]) / med["validation"]
                print(f"{syntax:6} {shape:6} {n:>5} " + " ".join(f"{med[s]:>11.2f}" for s in STAGES)
                      + f" {pre:>7.0%} {med['transform'] / med['validation']:>7.0%} {e2e:>11.1f} {floor:>9.1f}"
                      f" {e2e / floor:>8.2f}")
                if n == 10 and shape == "simple" and pre > 0.30:
                    ok = False
                    print(f"  over budget: stages before validation cost {pre:.0%} of validation (budget 30 %)")
                if n == 1000 and e2e >= 1000:
                    ok = False
                    print(f"  over budget: 1000 lines took {e2e:.0f} ms end to end (budget < 1000 ms; the official "
                          f"checks alone took {floor:.0f} ms)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
