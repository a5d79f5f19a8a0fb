"""The reading side against what it is built from, on the same documents in the same run (issue 13's budgets):

    python3 bench/bench_read.py [--runs 30]
    python3 bench/bench_read.py --big [LINES ...]

  parse     pipeline.flows.parse.parse of a typical official invoice (CII and UBL)    budget: <= its validation
  validate  the official validation of the same document (pipeline.flows.validate_xml)
  convert   CII -> UBL (and UBL -> CII) of the same document                          budget: <= 1.2 x (validate
  gen       generation of the target from the parsed request (generate_xml)                    source + gen target)
  render    the page of a received 10-line invoice (flows.render, PDF)                budget: <= the ZUGFeRD page
  zugferd   the page of the same invoice on the ZUGFeRD path (html.xsl + WeasyPrint)          (html + render)

With --big the endpoints' cost per line on long generated CII and UBL invoices (1,000 and 5,000 lines by default), through
the app in process: a figure that grows with the lines shows work that is not linear (parse answered 5,000 lines in
15 s of which 14 s were the JSON writer's number substitution, quadratic; the report page read the invoice with
path()s, quadratic in Saxon).

Parse stages are timed too (source: safe parse + BT-24; read: read-*.xsl; split: provenance off; json: typed JSON;
model: completeness; write + losses: writing the invoice again + compare; unmapped), so that the budget's margin has
a where. Medians of interleaved runs after one warm-up, by wall clock and by process CPU time (steadier when other
processes share the cores); the load average is printed before and after.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
CORPUS = REPO.parent / "shared" / "corpus"

from pipeline import write  # noqa: E402
from pipeline.flows import parse as parse_flow  # noqa: E402
from pipeline.flows.convert import convert  # noqa: E402
from pipeline.flows.generate_xml import generate_xml, normalize  # noqa: E402
from pipeline.flows.render import render  # noqa: E402
from pipeline.flows.validate_xml import validate_xml  # noqa: E402
from pipeline.invoice.request_json import dump_request  # noqa: E402
from pipeline.pdf import page  # noqa: E402
from pipeline.read import losses, provenance  # noqa: E402
from pipeline.read.to_json import invoice_json  # noqa: E402
from tests.test_zugferd_samples import invoice_request  # noqa: E402

SAMPLES = {
    "CII": CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml",
    "UBL": CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml",
}
OTHER = {"CII": "UBL", "UBL": "CII"}


CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}
clock = time.perf_counter


def timed(fn, *args) -> tuple[object, float]:
    t = clock()
    out = fn(*args)
    return out, (clock() - t) * 1000


def parse_stages(data: bytes) -> dict[str, float]:
    """parse, stage by stage (the same calls as pipeline.flows.parse.parse)."""
    t = {}
    source, t["source"] = timed(parse_flow.source_of, data)
    traced, t["read"] = timed(lambda: parse_flow.to_canonical(source, ids=True))
    read, t["split"] = timed(provenance.split, traced, source.doc.tree.getroot())
    invoice, t["json"] = timed(invoice_json, read.root)
    config = parse_flow.config_for(source)
    (request, _, _), t["model"] = timed(parse_flow.completeness, invoice, config)
    written, t["write"] = timed(lambda: write.to_canonical(write.with_derived(write.calculate(request))))
    lost, t["losses"] = timed(losses.lost_sources, read.leaves, written)
    _, t["unmapped"] = timed(provenance.unmapped, source.doc, read.used - lost, read.names)
    return t


def median(values: list[float]) -> float:
    return statistics.median(values)


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


BIG_CALLS = {
    "validate": ("/v1/invoice/en16931/validate", {}, None),
    "parse": ("/v1/invoice/parse", {}, None),
    "convert": ("/v1/invoice/convert", {"to": "OTHER"}, None),  # to the other syntax
    "render html": ("/v1/invoice/render", {}, {"Accept": "text/html"}),
    "report html": ("/v1/invoice/en16931/validate", {}, {"Accept": "text/html"}),
}


def scaling(line_counts: list[int]) -> None:
    """ms per invoice line of each endpoint on generated CII and UBL invoices of `line_counts` lines (one run each,
    after a warm-up on the smallest)."""
    import falcon.testing

    from pipeline.service.app import create_app
    sys.path.insert(0, str(REPO / "tests"))  # the tests' multipart upload helper and its conftest
    from test_parse import upload

    client = falcon.testing.TestClient(create_app(platform=False))
    print(f"{'':4} {'lines':>6} {'KB':>6} " + " ".join(f"{k:>12}" for k in BIG_CALLS) + "   (s; ms per line)")
    for syntax in OTHER:
        docs = {n: generate_xml(json.dumps(dict(invoice_request(n), config={"syntax": syntax})).encode(),
                                "en16931")[0] for n in line_counts}
        calls = [(path, {k: OTHER[syntax] if v == "OTHER" else v for k, v in request.items()}, headers)
                 for path, request, headers in BIG_CALLS.values()]
        for path, request, headers in calls:
            upload(client, docs[line_counts[0]], request, path=path, headers=headers)
        for n, data in docs.items():
            cells = []
            for path, request, headers in calls:
                resp, ms = timed(upload, client, data, request, "invoice.xml", path, headers)
                assert resp.status_code == 200, resp.text[:200]
                cells.append(f"{ms / 1000:5.1f} {ms / n:5.2f}")
            print(f"{syntax:4} {n:6} {len(data) // 1024:6} " + " ".join(f"{c:>12}" for c in cells))


def main() -> None:
    global clock
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--clock", choices=sorted(CLOCK), default="wall")
    ap.add_argument("--big", type=int, nargs="*", help="lines of the long invoices (default 1000 5000)")
    args = ap.parse_args()
    clock = CLOCK[args.clock]
    if args.big is not None:
        scaling(args.big or [1000, 5000])
        return

    print(f"{load()} (2 cores); clock: {args.clock}")
    print(f"{'document':10} {'parse':>7} {'validate':>9} {'ratio':>6} | {'convert':>8} {'val+gen':>8} {'ratio':>6}"
          f"  (ms, medians of {args.runs})")
    for syntax, path in SAMPLES.items():
        data = path.read_bytes()
        parsed = parse_flow.parse(data)
        target = dict(parsed.config, syntax=OTHER[syntax])
        body = dump_request({"invoice": parsed.invoice, "config": target})
        spec = parsed.config["spec"]
        convert(data, OTHER[syntax])  # warm-up: every stylesheet compiled
        runs: dict[str, list[float]] = {k: [] for k in ("parse", "validate", "convert", "gen")}
        stages: dict[str, list[float]] = {}
        for _ in range(args.runs):
            runs["parse"].append(timed(parse_flow.parse, data)[1])
            runs["validate"].append(timed(validate_xml, data, spec)[1])
            runs["convert"].append(timed(convert, data, OTHER[syntax])[1])
            runs["gen"].append(timed(generate_xml, body, spec)[1])
            for k, v in parse_stages(data).items():
                stages.setdefault(k, []).append(v)
        m = {k: median(v) for k, v in runs.items()}
        print(f"{syntax:10} {m['parse']:7.1f} {m['validate']:9.1f} {m['parse'] / m['validate']:6.2f} | "
              f"{m['convert']:8.1f} {m['validate'] + m['gen']:8.1f} {m['convert'] / (m['validate'] + m['gen']):6.2f}")
        print("           parse stages: " + ", ".join(f"{k} {median(v):.2f}" for k, v in stages.items()))

    body = json.dumps(invoice_request(10)).encode()
    _, canonical = normalize(body, "zugferd")
    cii = write.to_cii(canonical)
    render(cii)  # warm-up
    r_runs, z_runs = [], []
    for _ in range(max(5, args.runs // 3)):
        r_runs.append(timed(render, cii)[1])
        z_runs.append(timed(lambda: page.html_to_pdf(page.invoice_html(canonical, "en", "EN 16931")))[1])
    print(f"render, 10 lines: {median(r_runs):.0f} ms; the ZUGFeRD page of the same invoice (html + render): "
          f"{median(z_runs):.0f} ms; ratio {median(r_runs) / median(z_runs):.2f}")
    print(load())


if __name__ == "__main__":
    main()
