"""Outside the rules, again (issue 40, eighth session): what a typical validation pays besides the rules' own work.

    python3 bench/profile_outside_rules_again.py [--runs 200] [--syntaxes CII,UBL] [--patched DIR] [--skip-gil]

1. Fixed costs of the Saxon calls, hot (the same call repeated, CPU ms): a trivial stylesheet on the parsed document
   (what any transform call costs), the rules' wrapper that never reads its SVRL (the imported copy's controller
   set up, nothing run), each rule stylesheet on `<a/>` and on the document, the findings read back one item at a
   time, the KoSIT scenario chosen in Saxon and by lxml on the tree xmlinput parsed.
2. Whether SaxonC and lxml let go of the GIL: each native step in a thread while the main thread runs Python.
3. Cold costs: each step timed once right after a whole validate_xml, the caches as a validation leaves them (what
   the step costs inside a real validation; hot loops show 1/3 to 1/7 of it).
4. Before / after: validate_xml with the old ways patched in (reading as xmlinput did, the chooser stylesheet)
   against this tree's, alternating blocks of 5 calls,
   each first in every other round, with an A/A control. `--patched DIR`: a tree holding patched copies of
   pipeline/budget.py and pipeline/check/claims.py (a patch for files of other owners), measured as a third side.
Times are CPU time of this process (time.process_time): on a shared host compare only figures of the same run.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import re
import statistics
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_jvm import documents  # noqa: E402
from lxml import etree  # noqa: E402

from pipeline import budget, saxon  # noqa: E402
from pipeline.check import claims, engine, packs, scenarios, xmlinput  # noqa: E402
from pipeline.flows.validate_xml import validate_xml  # noqa: E402

CLOCK = time.process_time
TRIVIAL = ('<xsl:stylesheet version="3.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">'
           '<xsl:template match="/"><xsl:sequence select="()"/></xsl:template></xsl:stylesheet>')
UNREAD = """<xsl:stylesheet version="3.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:import href="{href}"/>
  <xsl:template match="/" priority="1000"><xsl:variable name="svrl"><xsl:apply-imports/></xsl:variable>
    <xsl:sequence select="()"/></xsl:template></xsl:stylesheet>"""


def hot(fns: dict, rounds: int, per: int = 20) -> dict[str, float]:
    """Median CPU ms per call of each function, `per` calls in a row, the functions interleaved over `rounds`."""
    times = {k: [] for k in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t = CLOCK()
            for _ in range(per):
                fn()
            times[name].append((CLOCK() - t) / per * 1000)
    return {k: statistics.median(v) for k, v in times.items()}


def cold(fns: dict, data: bytes, rounds: int) -> dict[str, float]:
    """Median CPU ms of each function called once right after a whole validation of `data`."""
    times = {k: [] for k in fns}
    keys = list(fns)
    for r in range(rounds):
        for name in keys if r % 2 else keys[::-1]:
            validate_xml(data)
            t = CLOCK()
            fns[name]()
            times[name].append((CLOCK() - t) * 1000)
    return {k: statistics.median(v) for k, v in times.items()}


def lxml_chooser(chosen):
    """KoSIT's match expressions as XPath 1.0 on the lxml tree (`exists(p)` is `boolean(p)` for a node-set; the
    string comparisons mean the same in both): the bench's stand-in for a chooser without Saxon."""
    compiled = [etree.XPath(re.sub(r"^exists\(", "boolean(", sc.match), namespaces=dict(sc.namespaces))
                for sc in chosen]

    def choose(tree):
        return next((sc for sc, test in zip(chosen, compiled) if test(tree)), None)
    return choose


def fixed_costs(name: str, data: bytes, rounds: int) -> None:
    pack = packs.latest_active("xrechnung")
    chosen = scenarios.load_scenarios(pack.scenarios)
    doc = xmlinput.load(data)
    sdoc = engine.saxon_document(doc)
    sc = scenarios.select_scenario(chosen, sdoc)
    sheets = [pack.runnable(s) for s in sc.stylesheets]
    exes = [engine.rules_executable(s) for s in sheets]
    tiny = saxon.parse("<a/>")
    trivial = saxon.compile_generated(("bench-trivial",), lambda: TRIVIAL)
    choose = lxml_chooser(chosen)
    assert choose(doc.tree) == sc

    def read(value):
        return [value.item_at(i).string_value for i in range(value.size)] if value is not None else []
    fns = {"trivial stylesheet": lambda: trivial.transform_to_value(xdm_node=sdoc)}
    for n, (sheet, exe) in enumerate(zip(sheets, exes)):
        unread = saxon.compile_generated(("bench-unread", str(sheet)),
                                         lambda sheet=sheet: UNREAD.format(href=Path(sheet).as_uri()))
        label = "CEN" if n == 0 else "XRechnung"
        fns[f"{label}: wrapper, SVRL unread"] = lambda u=unread: u.transform_to_value(xdm_node=sdoc)
        fns[f"{label}: rules on <a/>"] = lambda e=exe: e.transform_to_value(xdm_node=tiny)
        fns[f"{label}: rules"] = lambda e=exe: e.transform_to_value(xdm_node=sdoc)
        fns[f"{label}: rules + findings read"] = lambda e=exe: read(e.transform_to_value(xdm_node=sdoc))
    fns["scenario: Saxon chooser"] = lambda: scenarios.select_scenario(chosen, sdoc)
    fns["scenario: lxml XPath 1.0"] = lambda: choose(doc.tree)
    print(f"{name}: Saxon calls, hot (CPU ms per call, medians)")
    for k, v in hot(fns, rounds // 4 or 1).items():
        print(f"    {k:36} {v:8.4f}")


def gil(data: bytes) -> None:
    """Wall ms of a native step alone, of a Python loop alone, and of both at once (step in a thread)."""
    pack = packs.latest_active("xrechnung")
    doc = xmlinput.load(data)
    sdoc = engine.saxon_document(doc)
    sc = scenarios.select_scenario(scenarios.load_scenarios(pack.scenarios), sdoc)
    exe = engine.rules_executable(pack.runnable(sc.stylesheets[0]))
    schema = engine.load_schema(sc.xsd)

    def spin():
        total = 0
        for i in range(300_000):
            total += i

    def timed(fn, n=5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t) * 1000
    steps = {"Saxon: CEN rules": lambda: exe.transform_to_value(xdm_node=sdoc),
             "Saxon: parse": lambda: engine.saxon_document(doc), "lxml: XSD": lambda: schema.validate(doc.tree),
             "lxml: parse": lambda: xmlinput.load(data)}
    print("  GIL: wall ms of the step x5 alone / a Python loop alone / both at once (sum if the GIL is kept)")
    for label, fn in steps.items():
        timed(fn)
        alone, loop = timed(fn), timed(spin, 1)
        worker = threading.Thread(target=timed, args=(fn,))
        t = time.perf_counter()
        worker.start()
        spin()
        worker.join()
        both = (time.perf_counter() - t) * 1000
        print(f"    {label:20} {alone:7.1f} / {loop:6.1f} / {both:7.1f} (sum {alone + loop:.1f})")


def cold_costs(name: str, data: bytes, rounds: int) -> None:
    pack = packs.latest_active("xrechnung")
    chosen = scenarios.load_scenarios(pack.scenarios)
    doc = xmlinput.load(data)
    sdoc = engine.saxon_document(doc)
    sc = scenarios.select_scenario(chosen, sdoc)
    choose = lxml_chooser(chosen)
    finding = "/*[1]/*[last()]"
    fns = {"nothing": lambda: None,
           "budget: two reads of the clock": lambda: (budget.cpu_clock(), budget.cpu_clock()),
           "scenario: Saxon chooser": lambda: scenarios.select_scenario(chosen, sdoc),
           "scenario: lxml XPath 1.0": lambda: choose(doc.tree),
           "depth: XPath compiled per call": lambda: doc.tree.xpath(xmlinput._TOO_DEEP),
           "depth: compiled once": lambda: xmlinput._too_deep_first(doc.tree),
           "container question (old: every document)": lambda: xmlinput._container(data),
           "party countries: old (ElementPath)": lambda: _old_party_countries(doc),
           "party countries: compiled XPath": lambda: xmlinput.party_countries(doc),
           "claim of the document": lambda: claims.of_document(doc),
           "locate a finding (fresh document)": lambda: xmlinput.ParsedXml(doc.tree, doc.text, doc.syntax,
                                                                            doc.root_name).locate(finding),
           "XSD pass": lambda: engine.xsd_issues(doc, sc.xsd),
           "lxml: xmlinput.load": lambda: xmlinput.load(data),
           "Saxon: parse": lambda: engine.saxon_document(doc)}
    print(f"{name}: each step once right after a validation (CPU ms, medians of {rounds})")
    for k, v in cold(fns, data, rounds).items():
        print(f"    {k:42} {v:8.4f}")


# ---- the old ways, copied here for the pairs (bench only)

def _old_found(root, path):
    return [" ".join((e.text or "").split()).upper()
            for e in root.iterfind("/".join(f"{{{ns}}}{name}" for ns, name in path))]


def _old_party_countries(doc):
    paths = xmlinput.PARTY_PATHS.get(doc.report_syntax or "")
    if paths is None:
        return set()
    root = doc.tree.getroot()
    found = {text for path in paths["countries"] for text in _old_found(root, path)}
    found |= {text[:2] for path in paths["vatIds"] for text in _old_found(root, path)}
    return {c for c in found if len(c) == 2 and c.isalpha()}


def _old_parse(data: bytes):
    """xmlinput.parse as it was: the container question before the parse, the DOCTYPE regex over every document,
    the depth XPath compiled per call (the rest as now, by calling this tree's parse on what passed)."""
    if data and data.strip():
        xmlinput._DOCTYPE.search(xmlinput._ascii_view(data))
        container = xmlinput._container(data)
        if container:
            raise xmlinput.XmlInputError(xmlinput._issue(xmlinput.XML_MALFORMED, container[0], 1, 1, container[1]))
    tree = etree.ElementTree(etree.fromstring(data, xmlinput._parser()))
    tree.xpath(xmlinput._TOO_DEEP)
    return tree


def _module_from(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = sys.modules[name] = importlib.util.module_from_spec(spec)  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def before_after(name: str, data: bytes, rounds: int, patched: Path | None, block: int = 5) -> None:
    """validate_xml with the old ways (before) against this tree's (after); with `patched`, a third side with
    the patched budget stage and claims' XRechnung ids as well."""
    now = {(xmlinput, "parse"): xmlinput.parse, (xmlinput, "party_countries"): xmlinput.party_countries,
           (budget, "stage"): budget.stage, (claims, "xrechnung_ids"): claims.xrechnung_ids,
           (scenarios, "select_scenario"): scenarios.select_scenario}
    saxon_chooser = scenarios.select_scenario
    sides = {"before": {(xmlinput, "parse"): _old_parse, (xmlinput, "party_countries"): _old_party_countries,
                        (scenarios, "select_scenario"): lambda chosen, sdoc, tree=None: saxon_chooser(chosen, sdoc)},
             "after": {}, "after (A/A)": {}}
    if patched is not None:
        new_budget = _module_from(patched / "pipeline/budget.py", "bench_patched_budget")
        new_claims = _module_from(patched / "pipeline/check/claims.py", "bench_patched_claims")
        sides["after + patch"] = {(budget, "stage"): new_budget.stage,
                                  (claims, "xrechnung_ids"): new_claims.xrechnung_ids}
    times = {k: [] for k in sides}
    keys = list(sides)
    try:
        for r in range(rounds):
            for side in keys if r % 2 else keys[::-1]:
                for (module, attr), fn in sides[side].items():
                    setattr(module, attr, fn)
                t = CLOCK()
                for _ in range(block):
                    validate_xml(data)
                times[side].append((CLOCK() - t) / block * 1000)
                for (module, attr), fn in now.items():
                    setattr(module, attr, fn)
    finally:
        for (module, attr), fn in now.items():
            setattr(module, attr, fn)
    base = statistics.median(times["before"])
    print(f"{name}: validate_xml, alternating blocks of {block} (CPU ms, medians of {rounds}; load "
          f"{os.getloadavg()[0]:.1f})")
    for side in keys:
        m = statistics.median(times[side])
        print(f"    {side:16} {m:7.3f}  {m - base:+.3f} ({(m - base) / base:+.1%})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--syntaxes", default="CII,UBL")
    ap.add_argument("--patched", type=Path, help="a tree with the patched pipeline/budget.py and check/claims.py")
    ap.add_argument("--skip-gil", action="store_true")
    ap.add_argument("--only", default="fixed,gil,cold,pairs")
    args = ap.parse_args()
    engine.warm_up(("xrechnung",))
    parts = set(args.only.split(","))
    print("load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    for name, _, data in documents([s.strip() for s in args.syntaxes.split(",")], []):
        if "typical" not in name:
            continue
        for _ in range(10):
            validate_xml(data)
        if "fixed" in parts:
            fixed_costs(name, data, args.runs)
        if "gil" in parts and not args.skip_gil:
            gil(data)
        if "cold" in parts:
            cold_costs(name, data, args.runs // 2 or 1)
        if "pairs" in parts:
            before_after(name, data, args.runs, args.patched)
    print("load after {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
