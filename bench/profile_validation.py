"""Where a validation's time goes, stage by stage, on the documents of bench_jvm.py (issue 40).

    python3 bench/profile_validation.py [--runs 30] [--sizes 100,1000] [--syntaxes CII,UBL]

Stages of `validate_xml` on an XRechnung document, each timed alone in the same rounds (medians, ms):
  load     xmlinput.load: the safe lxml parse, the root and syntax, the text kept for locating
  view     engine.rules_view: an attachment's base64 replaced by a stand-in for the rules' tree
  saxon    engine.saxon_document: Saxon's parse of that view
  scenario scenarios.select_scenario on the Saxon tree
  xsd      engine.xsd_issues: lxml's XSD validation of the parsed tree (schema loaded once)
  rules    each stylesheet of the scenario as the engine runs it (the optimised copies), findings not located
  locate   doc.locate of every finding's location (line and column)
  total    validate_xml(bytes) end to end; 'rest' = total - the stages (report, content of the pack choice ...)
Times are the process's CPU time (time.process_time), less disturbed than wall time by other processes on a shared
machine; medians of the rounds.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_jvm import documents  # noqa: E402
from pipeline.check import engine, packs, scenarios, xmlinput  # noqa: E402
from pipeline.flows.validate_xml import validate_xml  # noqa: E402


CLOCK = time.process_time  # CPU of this process: on a shared machine wall time mostly measures the neighbours


def stages(data: bytes, chosen) -> dict[str, float]:
    times = {}

    def timed(name, fn, *args):
        t = CLOCK()
        out = fn(*args)
        times[name] = times.get(name, 0.0) + (CLOCK() - t) * 1000
        return out

    doc = timed("load", xmlinput.load, data)
    view = timed("view", engine.rules_view, doc.text)
    sdoc = timed("saxon", engine.saxon_document, doc, view)
    sc = timed("scenario", scenarios.select_scenario, chosen, sdoc)
    timed("xsd", engine.xsd_issues, doc, sc.xsd)
    pack = packs.latest_active("xrechnung")
    found = []
    for sheet in sc.stylesheets:
        found += timed("rules", engine.schematron_issues, sdoc, pack.runnable(sheet))
    timed("locate", lambda: [doc.locate(i.location.xpath) for i in found if i.location and i.location.xpath])
    timed("total", validate_xml, data)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--sizes", default="100,1000")
    ap.add_argument("--syntaxes", default="CII,UBL")
    args = ap.parse_args()
    engine.warm_up(("xrechnung",))
    chosen = scenarios.load_scenarios(packs.latest_active("xrechnung").scenarios)
    load = os.getloadavg()
    print(f"load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    names = ("load", "view", "saxon", "scenario", "xsd", "rules", "locate", "rest", "total")
    print(f"{'document':26}" + "".join(f"{n:>9}" for n in names))
    docs = documents([s.strip() for s in args.syntaxes.split(",")], [int(n) for n in args.sizes.split(",") if n])
    for name, _, data in docs:
        runs = args.runs if len(data) < 300_000 else max(5, args.runs // 5)
        stages(data, chosen)  # warm
        rounds = [stages(data, chosen) for _ in range(runs)]
        med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
        med["rest"] = max(0.0, med["total"] - sum(v for k, v in med.items() if k != "total"))
        print(f"{name:26}" + "".join(f"{med[n]:9.2f}" for n in names), flush=True)
    load = os.getloadavg()
    print(f"load after {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
