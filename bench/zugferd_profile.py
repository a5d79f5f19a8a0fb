"""Where one ZUGFeRD generation's CPU goes: the flow's stages, WeasyPrint's phases inside the render, pikepdf's
PDF/A walk inside the gate (issue 40, last part).

    python3 bench/zugferd_profile.py [--lines 10] [--runs 9] [--cprofile 25] [--calls]

Each run generates the same invoice (`tests/test_zugferd_samples.invoice_request`, EN16931) in this process after a
warm-up, timed with the process's CPU clock (time.process_time: on a shared machine wall time mostly measures the
neighbours). Medians of the runs, milliseconds:
  flow      generate_zugferd's own stages: model, cii, validate (the profile's XSD and Schematron), html, render,
            embed, check
  render    inside page.html_to_pdf: parse (libxml2 + drawable), styles (the cascade), boxes (the box tree), layout
            (pagination, line breaking), paint (drawing the pages into content streams), pdf (objects, font subsets)
            = write_pdf's time less paint
  check     inside checks.gate_generated: pdfa (pikepdf.pdfa.validate_written, the third-party walk) and ours (the
            rest: opening, bounds, XMP, the invoice read back); pdfa's parts: content (the pages' content streams
            walked operator by operator), fonts (each embedded font program read with fontTools: its cost grows
            with the subset's highest glyph id, as WeasyPrint keeps glyph ids) and schemas (each object's
            dictionary against pikepdf's JSON schemas)
The phases are measured by wrapping WeasyPrint 70's module functions (`weasyprint.document`); a release that moves
them prints what it cannot find instead of a figure. --cprofile N: one more round of runs under cProfile, the N
functions with most own time. --calls: the Python function calls of one generation, of its render and of its gate
(cProfile's count): the same on a loaded machine, where CPU medians move by 5 % between two identical runs, so a
change of the page or the code can be weighed before a quiet host confirms it in milliseconds.
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
GATE_PARTS = ("content", "fonts", "schemas")
GATE = ("pdfa", "ours", "rest") + GATE_PARTS
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
    # pikepdf.pdfa's own modules (pikepdf 10.17-10.18); another release prints what it cannot find
    from pikepdf.pdfa import _content, _fonts, _schemas

    timed(getattr(_content, "ContentWalker", None), "walk_page", "content")
    timed(getattr(_fonts, "FontInfo", None), "finalize", "fonts")
    timed(getattr(_schemas, "SchemaSet", None), "check", "schemas")


def calls(body: bytes) -> str:
    """The function calls of one generation, its render and its gate (each counted by a profiler of its own)."""
    seen: dict = {}

    def keep(owner, name: str):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            seen[name] = (args, kwargs)
            return original(*args, **kwargs)

        setattr(owner, name, wrapper)
        return original

    def counted(fn, *args, **kwargs) -> int:
        profiler = cProfile.Profile()
        profiler.enable()
        fn(*args, **kwargs)
        profiler.disable()
        return pstats.Stats(profiler).total_calls

    render, gate = keep(page, "html_to_pdf"), keep(checks, "gate_generated")
    try:
        flow.generate_zugferd(body)  # records what the render and the gate are given
    finally:
        page.html_to_pdf, checks.gate_generated = render, gate
    return (f"  calls:  generation {counted(flow.generate_zugferd, body):,}  "
            f"render {counted(render, *seen['html_to_pdf'][0], **seen['html_to_pdf'][1]):,}  "
            f"gate {counted(gate, *seen['gate_generated'][0], **seen['gate_generated'][1]):,}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=10)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--cprofile", type=int, default=0, metavar="N")
    ap.add_argument("--calls", action="store_true")
    args = ap.parse_args()
    body = json.dumps(invoice_request(args.lines, "EN16931")).encode()
    flow.warm_up()
    flow.generate_zugferd(body)
    counts = calls(body) if args.calls else None  # before the phases' wrappers, which would add their own calls
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
        inner["rest"] = inner.get("pdfa", 0.0) - sum(inner.get(k, 0.0) for k in GATE_PARTS)
        for key, value in {**stages, **{f"check.{k}" if k in GATE else f"render.{k}": v
                                        for k, v in inner.items()}}.items():
            samples.setdefault(key, []).append(value)
    med = {k: statistics.median(v) * 1000 for k, v in samples.items()}
    print(f"ZUGFeRD EN16931, {args.lines} lines: CPU medians of {args.runs} runs, ms; load average "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print("  flow:   " + "  ".join(f"{k} {med[k]:.1f}" for k in
                                   ("model", "cii", "validate", "html", "render", "embed", "check", "total")))
    print("  render: " + "  ".join(f"{k} {med['render.' + k]:.1f}" for k in
                                   ("parse", "styles", "boxes", "layout", "paint", "pdf")))
    print("  check:  " + "  ".join(f"{k} {med.get('check.' + k, 0.0):.1f}" for k in ("pdfa", "ours"))
          + "  (pdfa: " + "  ".join(f"{k} {med.get('check.' + k, 0.0):.1f}" for k in GATE_PARTS + ("rest",)) + ")")
    if counts:
        print(counts)
    if args.cprofile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(args.runs):
            flow.generate_zugferd(body)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.cprofile)


if __name__ == "__main__":
    main()
