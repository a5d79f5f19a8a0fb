"""Where one ZUGFeRD generation's CPU goes: the flow's stages, WeasyPrint's phases inside the render, pikepdf's
PDF/A walk inside the gate (issue 40, last part).

    python3 bench/zugferd_profile.py [--lines 10] [--runs 9] [--cprofile 25]

Each run generates the same invoice (`tests/test_zugferd_samples.invoice_request`, EN16931) in this process after a
warm-up, timed with the process's CPU clock (time.process_time: on a shared machine wall time mostly measures the
neighbours). Medians of the runs, milliseconds:
  flow      generate_zugferd's own stages: model, cii, validate (the profile's XSD and Schematron), html, render,
            embed, check
  render    inside page.html_to_pdf: parse (libxml2 + drawable), styles (the cascade), boxes (the box tree), layout
            (pagination, line breaking), paint (drawing the pages into content streams), pdf (objects, font subsets)
            = write_pdf's time less paint
  check     inside checks.gate_generated: pdfa (pikepdf.pdfa.validate_written, the third-party walk) and ours (the
            rest: opening, bounds, XMP, the invoice read back)
The phases are measured by wrapping WeasyPrint 70's module functions (`weasyprint.document`); a release that moves
them prints what it cannot find instead of a figure. --cprofile N: one more round of runs under cProfile, the N
functions with most own time.
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.flows import generate_zugferd as flow  # noqa: E402
from pipeline.pdf import checks, page  # noqa: E402
from tests.test_zugferd_samples import invoice_request  # noqa: E402

CLOCK = time.process_time
spent: dict[str, float] = {}


def timed(owner, name: str, label: str) -> None:
    """Replace owner.name by a wrapper that adds its CPU time to spent[label] (nested calls: the outer one only)."""
    original = getattr(owner, name, None)
    if original is None:
        print(f"(not found: {getattr(owner, '__name__', owner)}.{name}; {label} not measured)")
        return
    active = []

    def wrapper(*args, **kwargs):
        if active:
            return original(*args, **kwargs)
        active.append(1)
        start = CLOCK()
        try:
            return original(*args, **kwargs)
        finally:
            spent[label] = spent.get(label, 0.0) + CLOCK() - start
            active.pop()

    setattr(owner, name, wrapper)


def instrument() -> None:
    import weasyprint.document as document

    timed(page, "parse_page", "parse")
    timed(document, "get_all_computed_styles", "styles")
    timed(document, "build_formatting_structure", "boxes")
    timed(document.Page, "paint", "paint")
    timed(document.Document, "write_pdf", "write")
    timed(checks.pdfa, "validate_written", "pdfa")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=10)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--cprofile", type=int, default=0, metavar="N")
    args = ap.parse_args()
    body = json.dumps(invoice_request(args.lines, "EN16931")).encode()
    flow.warm_up()
    flow.generate_zugferd(body)
    instrument()
    samples: dict[str, list[float]] = {}
    for _ in range(args.runs):
        spent.clear()
        stages: dict[str, float] = {}
        start = CLOCK()
        flow.generate_zugferd(body, timings=stages, clock=CLOCK)
        stages["total"] = CLOCK() - start
        inner = dict(spent)
        # write_pdf holds paint; the render less the other phases is the layout (the rest of Document._render)
        inner["pdf"] = inner.pop("write", 0.0) - inner.get("paint", 0.0)
        inner["layout"] = stages["render"] - sum(inner.get(k, 0.0) for k in ("parse", "styles", "boxes", "paint", "pdf"))
        inner["ours"] = stages["check"] - inner.get("pdfa", 0.0)
        for key, value in {**stages, **{f"render.{k}" if k not in ("pdfa", "ours") else f"check.{k}": v
                                        for k, v in inner.items()}}.items():
            samples.setdefault(key, []).append(value)
    med = {k: statistics.median(v) * 1000 for k, v in samples.items()}
    print(f"ZUGFeRD EN16931, {args.lines} lines: CPU medians of {args.runs} runs, ms; load average "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print("  flow:   " + "  ".join(f"{k} {med[k]:.1f}" for k in
                                   ("model", "cii", "validate", "html", "render", "embed", "check", "total")))
    print("  render: " + "  ".join(f"{k} {med['render.' + k]:.1f}" for k in
                                   ("parse", "styles", "boxes", "layout", "paint", "pdf")))
    print("  check:  " + "  ".join(f"{k} {med['check.' + k]:.1f}" for k in ("pdfa", "ours")))
    if args.cprofile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(args.runs):
            flow.generate_zugferd(body)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.cprofile)


if __name__ == "__main__":
    main()
