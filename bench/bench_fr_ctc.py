"""France's reform rules (fr-ctc): what the French chain costs, and what the optimised copies save.

    python3 bench/bench_fr_ctc.py [--runs 30] [--lines 1,300]

Same run, alternating, on a generated French invoice (fixtures/fr-b2b-goods.json with its lines repeated):
- the BR-FR Flux 2 stylesheet as published vs its optimised copy (the engine's call, the parsed document shared);
- validate_fr_ctc (XSD + CEN + BR-FR) vs validate_xml on en16931 (XSD + CEN): the price of the French step.
Prints medians in ms per syntax and size.
"""
from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pipeline.check import engine, packs, xmlinput  # noqa: E402
from pipeline.flows.generate_xml import generate_xml  # noqa: E402
from pipeline.flows.validate_fr_ctc import validate_fr_ctc  # noqa: E402
from pipeline.flows.validate_xml import validate_xml  # noqa: E402


def document(syntax: str, lines: int) -> bytes:
    request = json.loads((REPO / "fixtures" / "fr-b2b-goods.json").read_text("utf-8"))
    request["config"]["syntax"] = syntax
    first = request["invoice"]["invoiceLines"][0]
    request["invoice"]["invoiceLines"] = [dict(copy.deepcopy(first), lineIdentifier=str(n + 1)) for n in range(lines)]
    return generate_xml(json.dumps(request).encode(), "fr-ctc")[0]


def median_ms(pairs: dict, runs: int) -> dict:
    """Each callable `runs` times, interleaved (a, b, a, b, ...): the machine's load hits both alike."""
    times = {name: [] for name in pairs}
    for _ in range(runs):
        for name, call in pairs.items():
            started = time.perf_counter()
            call()
            times[name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--lines", default="1,300")
    args = parser.parse_args()
    pack = packs.latest_active("fr-ctc")
    for syntax in ("CII", "UBL"):
        official = pack.rules_for("CII" if syntax == "CII" else "UBL-Invoice").stylesheets[0]
        copy_ = pack.runnable(official)
        for lines in map(int, args.lines.split(",")):
            data = document(syntax, lines)
            doc = xmlinput.load(data)
            sdoc = engine.saxon_document(doc)
            for sheet in (official, copy_):
                engine.schematron_issues(sdoc, sheet, None, doc)  # compile outside the timing
            validate_fr_ctc(data), validate_xml(data, "en16931")
            rules = median_ms({"BR-FR as published": lambda: engine.schematron_issues(sdoc, official, None, doc),
                               "BR-FR optimised copy": lambda: engine.schematron_issues(sdoc, copy_, None, doc)},
                              args.runs)
            chain = median_ms({"validate fr-ctc": lambda: validate_fr_ctc(data),
                               "validate en16931": lambda: validate_xml(data, "en16931")}, args.runs)
            print(f"{syntax} {lines:4} lines: " + ", ".join(f"{k} {v:.1f} ms" for k, v in {**rules, **chain}.items()))


if __name__ == "__main__":
    main()
