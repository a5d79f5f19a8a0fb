"""Generation latency in process, split per stage: model, calculation, canonical XML, transform, validation.

Invoices of 1, 100 and 1000 lines (XRechnung, CII and UBL) built from fixtures/invoice-all-fields.json (every
field of service spec section 2) by repeating its lines. Each stage is timed alone on the output of the
previous one (pipeline.generate's stage functions, the ones `pipeline run` calls); the figures are medians.
Stylesheets and rule packs are compiled before timing (a worker does that once, at start).

Budgets (issue 3): stages before validation <= 30 % of validation for a typical invoice (1 line here,
3 lines for the fixture itself), and a 1000-line XRechnung generated and validated in < 1 s (end to end).

    python3 bench/bench_generate.py [--sizes 1,100,1000] [--syntaxes CII,UBL] [--spec xrechnung]
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

from pipeline import generate  # noqa: E402
from pipeline.cli.golden import FIXTURES  # noqa: E402

STAGES = ("model", "calculation", "canonical", "transform", "validation")


def request_with_lines(n: int, syntax: str) -> bytes:
    """The all-fields fixture with n lines (its own lines repeated, renumbered, quantities varied)."""
    request = generate.load_request((FIXTURES / "invoice-all-fields.json").read_bytes())
    template = request["invoice"]["invoiceLines"]
    lines = []
    for i in range(n):
        line = copy.deepcopy(template[i % len(template)])
        line["lineIdentifier"] = str(i + 1)
        line["quantity"] = Decimal(i % 9 + 1) * (Decimal(10) if line.get("unitCode") == "C62" and i % 3 == 2 else 1)
        for allowance in line.get("invoiceLineAllowances", []):
            allowance.pop("baseAmount", None)  # AUTO: the base is the line's own gross amount
        lines.append(line)
    request["invoice"]["invoiceLines"] = lines
    used = {(l["lineVatInformation"]["vatCategoryCode"], l["lineVatInformation"]["vatRate"]) for l in lines}
    request["invoice"]["vatBreakdowns"] = [b for b in request["invoice"]["vatBreakdowns"]
                                           if (b["vatCategoryCode"], b["vatCategoryRate"]) in used]
    request["invoice"]["documentLevelAllowances"][0].pop("baseAmount", None)
    request["invoice"]["documentTotals"].pop("taxTotalAmountInAccountingCurrency", None)
    request["invoice"].pop("vatAccountingCurrencyCode", None)
    request["config"]["syntax"] = syntax
    return generate.dump_request(request)


def timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return out, (time.perf_counter() - t) * 1000


def run_stages(body: bytes, spec: str) -> dict[str, float]:
    times = {}
    request, times["model"] = timed(generate.parse, body, spec)
    request, times["calculation"] = timed(generate.calculate, request)
    canonical, times["canonical"] = timed(generate.to_canonical, request)
    xml, times["transform"] = timed(generate.transform, canonical, generate.syntax_of(request), spec)
    report, times["validation"] = timed(generate.validate, xml, spec)
    assert report.valid, [i.code for i in report.issues]
    return times


def repeats(n: int) -> int:
    return 30 if n <= 10 else 10 if n <= 100 else 5


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,100,1000")
    ap.add_argument("--syntaxes", default="CII,UBL")
    ap.add_argument("--spec", default="xrechnung", choices=generate.SPECS)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    syntaxes = [s.strip().upper() for s in args.syntaxes.split(",")]

    for syntax in syntaxes:  # compile stylesheets and rule packs once, as a worker does at start
        generate.generate_xml(request_with_lines(1, syntax), args.spec)

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"spec={args.spec}; median ms per stage; 'pre/val' = (model+calc+canonical+transform) / validation; "
          f"load average {load} on {os.cpu_count()} cores (other work inflates every figure)")
    print(f"{'syntax':6} {'lines':>5} " + " ".join(f"{s:>11}" for s in STAGES)
          + f" {'pre/val':>8} {'end-to-end':>11}")
    ok = True
    for syntax in syntaxes:
        for n in sizes:
            body = request_with_lines(n, syntax)
            runs = [run_stages(body, args.spec) for _ in range(repeats(n))]
            med = {s: statistics.median(r[s] for r in runs) for s in STAGES}
            e2e = statistics.median(timed(generate.generate_xml, body, args.spec)[1] for _ in range(repeats(n)))
            pre = sum(med[s] for s in STAGES[:-1]) / med["validation"]
            print(f"{syntax:6} {n:>5} " + " ".join(f"{med[s]:>11.2f}" for s in STAGES)
                  + f" {pre:>7.0%} {e2e:>10.1f}")
            if n == 1 and pre > 0.30:
                ok = False
                print(f"  over budget: stages before validation cost {pre:.0%} of validation (budget 30 %)")
            if n == 1000 and e2e >= 1000:
                ok = False
                print(f"  over budget: 1000 lines took {e2e:.0f} ms end to end (budget < 1000 ms)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
