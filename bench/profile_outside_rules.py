"""What a validation spends outside the rules, on the documents of bench_jvm.py (issue 40, "the next 20 %").

    python3 bench/profile_outside_rules.py [--runs 40] [--syntaxes CII,UBL] [--profile 200] [--sizes 100]
                                             [--only lines|declaration]

1. Inside vs outside: `validate_xml(bytes)` timed whole, and the Saxon transforms of the rules (the compiled
   stylesheets' `transform_to_value`) timed inside it, in the same calls: "outside" = the rest (parses, XSD,
   scenario, budget clock, locating, report). CPU time of this process (time.process_time), medians of the rounds.
2. Where "outside" goes: cProfile over --profile validations of each document, functions by their own time with the
   transforms left out (cProfile's overhead inflates every Python call; read shares, not milliseconds).
3. Pairs measured interleaved in the same rounds, the old way against the current one, each in a bench-only copy:
   the budget clock opening /proc/thread-self/schedstat per call against one open file read again (and
   budget.cpu_clock as this tree has it); an attachment's
   200 KB text set back into lxml's tree after the XSD pass against the element itself moved back; the rules' view
   made by a regex reading the base64 character by character against a `str.find` of its end; locating the
   document's findings with the whole table of line starts made per document against lines read only as far
   as the finding; a DOCTYPE or ENTITY looked for by `b"<!" in` and a regex against a one-byte find of '!'
   (both h2, 2026-12-07).
4. Before / after: validate_xml with the five old ways patched in against the current ones (--only: one of them),
   alternating blocks of 10 validations in one process, each first in every other round.
On a shared host, compare only figures of the same run.
"""
from __future__ import annotations

import argparse
import cProfile
import dataclasses
import itertools
import os
import pstats
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))

from bench_jvm import documents  # noqa: E402
from pipeline import budget  # noqa: E402
from pipeline.check import engine, xmlinput  # noqa: E402
from pipeline.flows.validate_xml import validate_xml  # noqa: E402

CLOCK = time.process_time
_CLOCK = budget.cpu_clock  # as this tree has it


class _TimedTransforms:
    """Wraps engine.rules_executable so that each executable's transform_to_value adds its CPU time to `spent`."""

    def __init__(self):
        self.spent = 0.0
        self._original = engine.rules_executable

    def __enter__(self):
        outer = self

        class Timed:
            def __init__(self, exe):
                self._exe = exe

            def transform_to_value(self, **kw):
                t = CLOCK()
                try:
                    return self._exe.transform_to_value(**kw)
                finally:
                    outer.spent += CLOCK() - t

        engine.rules_executable = lambda stylesheet: Timed(self._original(stylesheet))
        return self

    def __exit__(self, *exc):
        engine.rules_executable = self._original


def inside_outside(data: bytes, runs: int) -> tuple[float, float]:
    """(median ms of validate_xml, median ms of its rules' transforms), the same calls."""
    totals, rules = [], []
    with _TimedTransforms() as timed:
        for _ in range(runs):
            timed.spent = 0.0
            t = CLOCK()
            validate_xml(data)
            totals.append((CLOCK() - t) * 1000)
            rules.append(timed.spent * 1000)
    return statistics.median(totals), statistics.median(rules)


def outside_profile(data: bytes, calls: int, top: int = 18) -> None:
    profile = cProfile.Profile()
    with _TimedTransforms():  # the transforms as a Python function of their own, left out below
        profile.enable()
        for _ in range(calls):
            validate_xml(data)
        profile.disable()
    stats = pstats.Stats(profile).stats
    rows = []
    for (file, line, name), (_, ncalls, own, _, _) in stats.items():
        if name == "transform_to_value" and Path(file).name == Path(__file__).name:
            continue
        rows.append((own, ncalls, f"{Path(file).name}:{line}({name})" if line else name))
    rows.sort(reverse=True)
    whole = sum(r[0] for r in rows)
    print(f"  outside the transforms, by own time (cProfile, {calls} validations; {whole / calls * 1000:.2f} ms each "
          "with the profiler's overhead):")
    for own, ncalls, where in rows[:top]:
        print(f"    {own / calls * 1000:7.3f} ms  {own / whole:6.1%}  {ncalls / calls:6.1f} x  {where}")


# ---- the old ways, copied here for the pairs (bench only)

def _old_cpu_clock():
    with open("/proc/thread-self/schedstat", "rb") as f:
        ran, waited = f.read().split()[:2]
    return int(ran) / 1e9, int(waited) / 1e9


_SCHEDSTAT = open("/proc/thread-self/schedstat", "rb", buffering=0) if os.path.exists("/proc/thread-self") else None


def _read_again_clock():
    ran, waited = os.pread(_SCHEDSTAT.fileno(), 64, 0).split()[:2]
    return int(ran) / 1e9, int(waited) / 1e9


# the rules' view as one regex over whole elements, as engine.rules_view was written before: the test's reference
from test_speed_more_outside_rules import _reference_view as _old_view  # noqa: E402


@contextmanager
def _old_stood_in(doc):
    """engine._attachments_stood_in as it was: the stand-in as the element's text, the content set back after."""
    replaced, faults = [], []
    if "BinaryObject" in doc.text:
        for element in doc.tree.iter(*engine._ATTACHMENTS):
            text = element.text
            if not text or len(element):
                continue
            if engine.surely_base64(text):
                if len(text) < engine.STAND_IN_FROM:
                    continue
            else:
                fault = engine.base64_fault(text)
                if fault is not None:
                    faults.append(engine._base64_issue(doc, element, fault))
            replaced.append((element, text))
            element.text = engine.BINARY_STAND_IN
    try:
        yield faults
    finally:
        for element, text in replaced:
            element.text = text


def _old_lines_to(self, line: int) -> list[int]:
    """The line starts as locating read them before h2 (2026-12-07): the whole text split once per document."""
    if not self._all_lines:
        lengths = map((1).__add__, map(len, self.text.split("\n")))
        self._line_starts, self._all_lines = list(itertools.accumulate(lengths, initial=0)), True
    return self._line_starts


def _old_declaration_at(view: bytes) -> int | None:
    """Where xmlinput.parse found a DOCTYPE or ENTITY before h2 (2026-12-07): a two-byte search for "<!", then the
    regex over the whole text."""
    m = xmlinput._DOCTYPE.search(view) if b"<!" in view else None
    return m.start() if m else None


BEFORE = {(budget, "cpu_clock"): _old_cpu_clock, (engine, "rules_view"): _old_view,
          (engine, "_attachments_stood_in"): _old_stood_in, (xmlinput.ParsedXml, "_lines_to"): _old_lines_to,
          (xmlinput, "declaration_at"): _old_declaration_at}
AFTER = {(budget, "cpu_clock"): _read_again_clock, (engine, "rules_view"): engine.rules_view,
         (engine, "_attachments_stood_in"): engine._attachments_stood_in,
         (xmlinput.ParsedXml, "_lines_to"): xmlinput.ParsedXml._lines_to,
         (xmlinput, "declaration_at"): xmlinput.declaration_at}


# --only: the old way of one cut alone patched in (the others as this tree has them)
WAYS = {"clock": (budget, "cpu_clock"), "view": (engine, "rules_view"), "attachment": (engine, "_attachments_stood_in"),
        "lines": (xmlinput.ParsedXml, "_lines_to"), "declaration": (xmlinput, "declaration_at")}


def before_after(data: bytes, runs: int, block: int = 10, only: str | None = None) -> tuple[float, float]:
    """validate_xml with the old ways (BEFORE; `only`: that one of WAYS) against the current ones (AFTER, the clock
    reading its file again as the budget patch of issue 40 does), alternating blocks of `block` calls in one
    process: median ms of each."""
    times = {"before": [], "after": []}
    before = BEFORE if only is None else {**AFTER, WAYS[only]: BEFORE[WAYS[only]]}
    try:
        for n in range(runs):
            order = (("before", before), ("after", AFTER))
            for name, ways in order if n % 2 else order[::-1]:  # each first in every other round
                for (module, attr), fn in ways.items():
                    setattr(module, attr, fn)
                t = CLOCK()
                for _ in range(block):
                    validate_xml(data)
                times[name].append((CLOCK() - t) / block * 1000)
    finally:
        for (module, attr), fn in AFTER.items():
            setattr(module, attr, fn)
        budget.cpu_clock = _CLOCK
    return statistics.median(times["before"]), statistics.median(times["after"])


def pairs(data: bytes, runs: int) -> dict[str, float]:
    doc = xmlinput.load(data)
    element = next(doc.tree.iter(*engine._ATTACHMENTS), None)
    text = element.text if element is not None else None

    def text_set_back():
        element.text = engine.BINARY_STAND_IN
        element.text = text

    def element_moved_back():
        stand_in = engine._standing_in(element)
        stand_in.getparent().replace(stand_in, element)

    paths = [i.location.xpath for i in validate_xml(data).issues if i.location and i.location.xpath]
    view = xmlinput._ascii_view(data)

    def located(lines_to):
        """The document's findings located on a fresh ParsedXml (nothing of locating read yet), lines read so."""
        def locate():
            fresh = dataclasses.replace(doc, _line_starts=None, _all_lines=False, _scan=None, _children={},
                                        _positions={})
            for path in paths:
                fresh.locate(path)
        return lambda: (setattr(xmlinput.ParsedXml, "_lines_to", lines_to), locate())

    variants = {"clock: open per call": _old_cpu_clock, "clock: open file read again": _read_again_clock,
                "clock: budget.cpu_clock": budget.cpu_clock,
                "view: regex": lambda: _old_view(doc.text), "view: find": lambda: engine.rules_view(doc.text),
                f"locate {len(paths)}: whole line table": located(_old_lines_to),
                f"locate {len(paths)}: lines to the finding": located(AFTER[(xmlinput.ParsedXml, "_lines_to")]),
                "declaration: '<!' in, regex": lambda: _old_declaration_at(view),
                "declaration: find '!'": lambda: AFTER[(xmlinput, "declaration_at")](view)}
    if text is not None and len(text) >= engine.STAND_IN_FROM:
        variants.update({"attachment: text set back": text_set_back, "attachment: element moved": element_moved_back})
    per_round = 20
    times = {k: [] for k in variants}
    for _ in range(runs):
        for name, fn in variants.items():
            t = CLOCK()
            for _ in range(per_round):
                fn()
            times[name].append((CLOCK() - t) / per_round * 1000)
    xmlinput.ParsedXml._lines_to = AFTER[(xmlinput.ParsedXml, "_lines_to")]
    if text is not None:
        assert element.text == text
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--syntaxes", default="CII")
    ap.add_argument("--profile", type=int, default=200, help="validations profiled per document (0: none)")
    ap.add_argument("--sizes", default="", help="line counts of synthetic documents to add (bench_jvm.py's)")
    ap.add_argument("--only", choices=sorted(WAYS), help="before / after of this cut alone (the others as they are)")
    args = ap.parse_args()
    engine.warm_up(("xrechnung",))
    print("load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    for name, _, data in documents([s.strip() for s in args.syntaxes.split(",")],
                                   [int(n) for n in args.sizes.split(",") if n]):
        for _ in range(5):
            validate_xml(data)
        total, rules = inside_outside(data, args.runs)
        print(f"{name}: validate_xml {total:.2f} ms CPU, the rules' transforms {rules:.2f}, outside them "
              f"{total - rules:.2f} ({(total - rules) / total:.0%})")
        before, after = before_after(data, args.runs, only=args.only)
        print(f"  validate_xml before / after {args.only or 'the cuts'} (alternating blocks): {before:.2f} / "
              f"{after:.2f} ms, "
              f"{before - after:.2f} ms less ({(before - after) / before:.1%})")
        if args.profile:
            outside_profile(data, args.profile)
        print("  same-run pairs (ms per call, medians):")
        for k, v in pairs(data, args.runs).items():
            print(f"    {k:30} {v:8.4f}")
    print("load after {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
