"""Median latency of ZUGFeRD generation, split by stage, for a 10-line and a 300-line invoice, with the floors of
the two third-party parts measured on the same document in the same run.

    python3 bench/bench_zugferd.py [--runs N] [--profile EN16931] [--against DIR]

Stages (pipeline.generate_zugferd): model (parse + AUTO calculation + canonical XML), cii (CII mapping +
profile subset), validate (official Factur-X XSD + Schematron) = the XML part; html (html.xsl); render
(WeasyPrint PDF/A-3b), embed (pikepdf: XMP + associated file), check (PDF/A-3b + XMP + read-back) = the PDF part
(issue 4: render + embed + check, budget 3 x the XML part at 10 lines).

Floors, on the same invoice:
  text    WeasyPrint on the page's text alone: every text node of the page in one paragraph, one per line, with
          the page's CSS. No boxes, tables or floats: what WeasyPrint costs for this content whatever the layout.
  pdfa    pikepdf.pdfa.validate_written on the finished PDF alone: the PDF/A-3b checker the gate is built on.
'floor/XML' = (text + pdfa) / XML part: the PDF part cannot go below it with WeasyPrint and pikepdf's checker.
The first run (stylesheet compilation, font loading) is a warm-up and not counted.

--against DIR: another page (DIR/html.xsl, DIR/invoice.css, DIR/page-ua.css, e.g. copies of an earlier commit's)
against this checkout's, the 10-line invoice generated with each in turn in the same process (CPU): render, PDF/A
gate and total with their ratio, and the pages each page takes. For a change of the page measured on a busy machine.
"""
from __future__ import annotations

import argparse
import html as html_text
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lxml import html as lxml_html  # noqa: E402
import pikepdf  # noqa: E402
from pikepdf import pdfa  # noqa: E402

from pipeline.flows.generate_xml import normalize  # noqa: E402
from pipeline.flows.generate_zugferd import generate_zugferd  # noqa: E402
from pipeline.pdf import page  # noqa: E402
from tests.test_zugferd_samples import invoice_request  # noqa: E402

XML_STAGES = ("model", "cii", "validate")
PDF_STAGES = ("render", "embed", "check")
FLOORS = ("text", "pdfa")
COLUMNS = XML_STAGES + ("html",) + PDF_STAGES + FLOORS


def text_only_page(page: bytes) -> bytes:
    """The page's text nodes as one paragraph, a line each (the least WeasyPrint can be given for this content)."""
    body = lxml_html.document_fromstring(page).find("body")
    lines = [html_text.escape(t.strip()) for t in body.itertext() if t.strip()]
    return ("<html><body><p>" + "<br>".join(lines) + "</p></body></html>").encode()


def measure(lines: int, runs: int, profile: str, clock) -> dict[str, float]:
    body = json.dumps(invoice_request(lines, profile)).encode()
    _, canonical = normalize(body, "zugferd")
    text_page = text_only_page(page.invoice_html(canonical))
    document = generate_zugferd(body)  # warm-up
    page.html_to_pdf(text_page)
    samples: dict[str, list[float]] = {}
    for _ in range(runs):  # interleaved, so that load from other processes hits stages and floors alike
        timings: dict[str, float] = {}
        start = clock()
        document = generate_zugferd(body, timings=timings, clock=clock)
        timings["total"] = clock() - start
        start = clock()
        page.html_to_pdf(text_page)
        timings["text"] = clock() - start
        start = clock()
        pdfa.validate_written(io.BytesIO(document), "3b")
        timings["pdfa"] = clock() - start
        for stage, seconds in timings.items():
            samples.setdefault(stage, []).append(seconds)
    return {stage: statistics.median(values) for stage, values in samples.items()}


def compare_pages(other: Path, runs: int, profile: str) -> None:
    """This checkout's page against the one in `other`, alternating, CPU medians (see --against)."""
    from weasyprint import CSS

    weasy = page._weasyprint()
    pages = {"this": (page.HTML_XSL, weasy["css"], weasy["ua"]),
             "other": (other / "html.xsl",) + tuple(CSS(filename=str(other / name), font_config=weasy["fonts"],
                                                          url_fetcher=weasy["fetcher"])
                                                      for name in ("invoice.css", "page-ua.css"))}
    body = json.dumps(invoice_request(10, profile)).encode()
    samples: dict[str, dict[str, list[float]]] = {"this": {}, "other": {}}
    page_count = {}
    try:
        for run in range(runs + 1):  # the first round is the warm-up; the order alternates (ABBA)
            for name in (("this", "other") if run % 2 else ("other", "this")):
                xslt, css, ua = pages[name]
                # the flow calls page.invoice_html without an xslt: its default is swapped for the round
                page.invoice_html.__defaults__ = _with_xslt(page.invoice_html.__defaults__, xslt)
                weasy["css"], weasy["ua"] = css, ua
                timings: dict[str, float] = {}
                start = time.process_time()
                document = generate_zugferd(body, timings=timings, clock=time.process_time)
                timings["total"] = time.process_time() - start
                if not run:
                    with pikepdf.open(io.BytesIO(document)) as pdf:
                        page_count[name] = len(pdf.pages)
                if run:
                    for stage in ("render", "check", "total"):
                        samples[name].setdefault(stage, []).append(timings[stage])
    finally:
        xslt, weasy["css"], weasy["ua"] = pages["this"]
        page.invoice_html.__defaults__ = _with_xslt(page.invoice_html.__defaults__, xslt)
    print(f"10 lines: this page ({page_count['this']} pages) against {other} ({page_count['other']} pages), "
          f"CPU medians of {runs}, alternating; load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    for stage in ("render", "check", "total"):
        mine, theirs = (statistics.median(samples[n][stage]) * 1000 for n in ("this", "other"))
        print(f"  {stage:>6}: this {mine:7.1f} ms, other {theirs:7.1f} ms, this/other {mine / theirs:.2f}")


def _with_xslt(defaults: tuple, xslt) -> tuple:
    """page.invoice_html's positional defaults (language, profile_label, xslt, ...) with `xslt` in place."""
    return defaults[:2] + (xslt,) + defaults[3:]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--profile", default="EN16931")
    ap.add_argument("--against", type=Path, help="a directory with another page's html.xsl, invoice.css, page-ua.css")
    args = ap.parse_args()
    if args.against:
        compare_pages(args.against, args.runs, args.profile)
        return
    print(f"ZUGFeRD {args.profile}: median of {args.runs} runs (300 lines: {max(3, args.runs // 2)}), milliseconds")
    print("wall = latency; cpu = process CPU time (steadier on a shared machine); load average "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()) + " (2 cores)")
    print(f"{'lines':>6} {'clock':>5} " + " ".join(f"{s:>8}" for s in COLUMNS) +
          f" {'XML part':>9} {'PDF part':>9} {'PDF/XML':>8} {'floor/XML':>9} {'total':>8}")
    for lines, runs in ((10, args.runs), (300, max(3, args.runs // 2))):
        for name, clock in (("wall", time.perf_counter), ("cpu", time.process_time)):
            m = measure(lines, runs, args.profile, clock)
            xml = sum(m[s] for s in XML_STAGES)
            pdf = sum(m[s] for s in PDF_STAGES)
            floor = sum(m[s] for s in FLOORS)
            print(f"{lines:>6} {name:>5} " + " ".join(f"{m[s] * 1000:>8.1f}" for s in COLUMNS) +
                  f" {xml * 1000:>9.1f} {pdf * 1000:>9.1f} {pdf / xml:>8.2f} {floor / xml:>9.2f}"
                  f" {m['total'] * 1000:>8.1f}")
    print("load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
