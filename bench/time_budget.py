"""How far past its time budget a single-document request runs (issue 41, `pipeline.budget`).

A 20 MB XRechnung UBL invoice of 31,500 lines (generated here) and a copy with a finding on every line (an unknown
unit code) go through the flows a request runs: validate, parse with validation, convert to CII, render as HTML.
First each flow without a budget, every stage timed (the steps that cannot be stopped: Saxon parses and transforms,
XSD checks, WeasyPrint; `budget.stage`); then each flow under budgets ending at fractions of its own time, with the
paces this process has learned from the first run ("learned") and with none learned ("fresh": the default paces,
as in a worker that has not yet run a large document). For every run: what it answered and when, against the
budget. The figure that matters is the largest "over": how far past its budget a request can run. `--burn N` keeps
N more processes spinning on the CPU meanwhile (a host busy with other work: the stages' estimates divide their CPU
time by the share of a CPU the request gets, `budget.share`); `--budgets 60` runs each flow under fixed budgets too.

    python3 bench/time_budget.py [--lines 31500] [--flows validate,findings,parse,convert,render]
                                 [--fractions 0.1,0.3,0.5,0.7,0.9] [--budgets 60] [--burn 2]
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pipeline import budget  # noqa: E402

FIXTURE = REPO / "fixtures" / "xrechnung-spec-id.json"


def documents(lines: int) -> dict[str, bytes]:
    from pipeline.flows.generate_xml import generate_xml

    request = json.loads(FIXTURE.read_text())
    line = request["invoice"]["invoiceLines"][0]
    request["invoice"]["invoiceLines"] = [dict(copy.deepcopy(line), lineIdentifier=str(i + 1)) for i in range(lines)]
    request["invoice"]["vatBreakdowns"] = []
    request["config"]["syntax"] = "UBL"
    valid = generate_xml(json.dumps(request).encode(), "xrechnung")[0]
    return {"valid": valid, "findings": valid.replace(b'unitCode="DAY"', b'unitCode="QQQ"')}


def flows(docs: dict[str, bytes]) -> dict:
    from pipeline.flows.convert import convert
    from pipeline.flows.parse import parse_report
    from pipeline.flows.render import render
    from pipeline.flows.validate_xml import validate_xml

    return {"validate": lambda: validate_xml(docs["valid"], "xrechnung"),
            "findings": lambda: validate_xml(docs["findings"], "xrechnung"),
            "parse": lambda: parse_report(docs["valid"], validate=True),
            "convert": lambda: convert(docs["valid"], "CII"),
            "render": lambda: render(docs["valid"], html=True)}


stages: list[tuple[str, int, float, float, float]] = []


def recording():
    """budget.stage, each stage's name, input size, seconds, the seconds estimated when it began
    (`budget.wall_expected`) and when it ended (from the run's start, `run`) appended to `stages`."""
    real = budget.stage

    @contextmanager
    def stage(name, size):
        began, estimate = time.monotonic(), budget.wall_expected(name, size)
        with real(name, size):
            yield
        ended = time.monotonic()
        stages.append((name, size, ended - began, estimate, ended - run_began[0]))
    return stage


run_began = [0.0]


def run(flow, seconds: float | None) -> tuple[str, float]:
    token = budget.start(seconds) if seconds is not None else None
    began = run_began[0] = time.monotonic()
    try:
        flow()
        outcome = "done"
    except budget.Exhausted:
        outcome = "TIME_BUDGET"
    except Exception as exc:  # noqa: BLE001 - a refusal (422, 400) is an answer too
        outcome = type(exc).__name__ + ": " + str(getattr(exc, "error_code", exc))[:40]
    finally:
        if token is not None:
            budget.end(token)
    return outcome, time.monotonic() - began


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=31_500)
    ap.add_argument("--flows", default="validate,findings,parse,convert,render")
    ap.add_argument("--fractions", default="0.1,0.3,0.5,0.7,0.9")
    ap.add_argument("--budgets", default="", help="fixed budgets in seconds, run after the fractions")
    ap.add_argument("--burn", type=int, default=0, help="processes kept spinning on the CPU meanwhile")
    args = ap.parse_args()
    from pipeline.check import engine
    from pipeline.write import transform

    engine.warm_up(("xrechnung", "en16931"))
    transform.warm_up()
    docs = documents(args.lines)
    print(f"documents: valid {len(docs['valid']) / 1e6:.1f} MB, with findings {len(docs['findings']) / 1e6:.1f} MB; "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    budget.stage = recording()
    table = flows(docs)
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.burn)]
    try:
        measure(table, args, [float(f) for f in args.fractions.split(",") if f],
                [float(b) for b in args.budgets.split(",") if b])
    finally:
        for p in burners:
            p.kill()
            p.wait()


def measure(table: dict, args, fractions: list[float], fixed: list[float]) -> None:
    worst = []
    for name in args.flows.split(","):
        budget._pace.clear()
        stages.clear()
        cpu = budget.cpu_clock()
        outcome, total = run(table[name], None)
        share = budget.share_since(cpu) or 1.0
        longest = max(stages, key=lambda s: s[2])
        print(f"\n{name}: {outcome} in {total:.1f} s without a budget, {len(stages)} stages, the longest "
              f"{longest[0]} {longest[2]:.1f} s on {longest[1] / 1e6:.1f} MB; share of a CPU {share:.2f}, "
              f"load {os.getloadavg()[0]:.1f}",
              flush=True)
        for stage_name, size, seconds, _, _ in stages:
            if seconds >= 0.5:
                print(f"    {stage_name:50s} {seconds:6.1f} s  {seconds / max(size, 1) * 1e6:5.2f} s/MB")
        learned = dict(budget._pace)
        for mode in ("learned", "fresh"):
            for seconds in [round(f * total, 1) for f in fractions] + fixed:
                budget._pace.clear()
                budget._pace.update(learned if mode == "learned" else {})
                stages.clear()
                outcome, took = run(table[name], seconds)
                worst.append((took - seconds, name, mode, seconds))
                past = [s for s in stages if s[4] > seconds]  # the stage that ran past the budget, if one did
                said = (f"; {past[0][0]} began with {seconds - past[0][4] + past[0][2]:.1f} s left, estimated "
                        f"{past[0][3]:.1f} s, took {past[0][2]:.1f} s") if past else ""
                print(f"  {mode:7s} budget {seconds:5.1f} s: {outcome:12s} after {took:5.1f} s, over by "
                      f"{took - seconds:+5.1f} s; load {os.getloadavg()[0]:.1f}{said}", flush=True)
    if not worst:
        return
    over, name, mode, seconds = max(worst)
    print(f"\nlargest overrun: {over:+.1f} s ({name}, {mode} paces, budget {seconds} s)")


if __name__ == "__main__":
    main()
