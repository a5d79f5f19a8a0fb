"""Where a typical invoice's rules go, pattern by pattern, in the optimised copies (issue 40, h5 2026-12-07).

    python3 bench/profile_copy_patterns.py [--syntax CII] [--rounds 400] [--before-home DIR [--copies 4]] [--parts]

The scenario's copies (XRechnung pack) on the typical invoice of bench_jvm.py, each timed alone in saxonche, CPU
(time.process_time), medians of interleaved rounds in one process:
  patterns  each copy as installed; with no pattern applied; each pattern alone: its select only counted (the
            selection), applied with its rule templates emptied (+ matching), applied as installed (+ the rules)
  suffixes  the selection of a local-name suffix scan in the forms tried (as the dispatch wrote it, with
            `contains` in front, by a string concatenated with a character no name holds)
  before    with --before-home (a rules home installed by an earlier tree): each copy there against the one here,
            the same findings asserted first; each side compiled --copies times from byte-identical files and
            the median of their medians taken: one compiled executable alone runs 5-10 % faster or slower than
            another of the same file in the same process (h8, 2026-12-07), as much as most rewrites give
  parts     with --parts (instead of the patterns): the CEN copy with one kind of work taken out, each variant
            compiled --copies times: the absence guards with their asserts, the rules' other absence asserts
            `not(not(path))`, and the tests of the business rules on the document element that name a VAT
            category (h6, 2026-12-07); and three rewrites of those tests (h11, 2026-12-07): their paths
            `//cac:(Classified)TaxCategory[...'X']` read from an xsl:key on the categories' codes (meant to be exact
            on documents the error() guard lets through; not proved), and each test naming a single code skipped
            while no category has that code: where proved to pass then, and all of them (an upper bound)
Variants are written to a temporary folder and compiled with the engine's wrapper (engine.schematron_issues).
"""
from __future__ import annotations

import argparse
import itertools
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lxml import etree
from saxonche import PySaxonProcessor

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_jvm import TYPICAL  # noqa: E402
from pipeline.check import dispatch, engine, packs, scenarios, xmlinput  # noqa: E402
from pipeline.settings import get_settings  # noqa: E402

XSL = "http://www.w3.org/1999/XSL/Transform"
NS = {"xsl": XSL}


def timed(sdoc, sheets: dict[str, Path], rounds: int) -> dict[str, float]:
    """Median CPU ms of each stylesheet, the order shuffled every round."""
    for path in sheets.values():
        engine.schematron_issues(sdoc, path)
    times: dict[str, list[float]] = {name: [] for name in sheets}
    names = list(sheets)
    for _ in range(rounds):
        random.shuffle(names)
        for name in names:
            t = time.process_time()
            engine.schematron_issues(sdoc, sheets[name])
            times[name].append(time.process_time() - t)
    return {name: statistics.median(v) * 1000 for name, v in times.items()}


def variant(copy: Path, folder: Path, name: str, change) -> Path:
    tree = etree.parse(str(copy))
    change(tree.getroot())
    path = folder / f"{name}.xsl"
    tree.write(str(path), encoding="UTF-8", xml_declaration=True)
    return path


def dispatching(root) -> list:
    return [a for a in root.iter(f"{{{XSL}}}apply-templates") if a.get("mode") not in (None, "#current")]


def pattern_alone(mode: str | None, how: str):
    """Only the pattern of `mode` applied (None: none); how = 'count' (its select counted), 'empty' (its rule
    templates emptied) or 'apply' (as installed)."""
    def change(root):
        for apply in dispatching(root):
            if apply.get("mode") != mode:
                apply.getparent().remove(apply)
            elif how == "count":
                apply.tag = f"{{{XSL}}}value-of"
                apply.set("select", f"count({apply.get('select')})")
                del apply.attrib["mode"]
        if how == "empty":
            for template in root.iterfind(f"{{{XSL}}}template[@mode='{mode}']"):
                if template.get("priority") != "-5":  # the copy's error for an unmatched node stays
                    for child in list(template):
                        template.remove(child)
                    template.text = None
    return change


def select_only(expr: str):
    def change(root):
        apply = dispatching(root)[0]
        for other in dispatching(root)[1:]:
            other.getparent().remove(other)
        apply.tag = f"{{{XSL}}}value-of"
        apply.set("select", f"count({expr})")
        del apply.attrib["mode"]
    return change


SUFFIX = "DocumentContextParameter"
SUFFIX_FORMS = {
    "nothing selected": "()",
    "ends-with(local-name())": f"//*[ends-with(local-name(), '{SUFFIX}')]",
    "contains() and ends-with()": f"//*[contains(local-name(), '{SUFFIX}') and ends-with(local-name(), '{SUFFIX}')]",
    "contains(local-name() || '|')": f"//*[contains(local-name() || '|', '{SUFFIX}|')]",
    "matches(local-name(), 'X$')": f"//*[matches(local-name(), '{SUFFIX}$')]",
    "contains() alone (not the same)": f"//*[contains(local-name(), '{SUFFIX}')]",
}


def dispatch_once(template) -> bool:
    return dispatch.once_per_document(template.get("match") or "")


def without(kind: str):
    """The copy with one kind of work removed (--parts); the findings change where that work finds something."""
    def guard(el) -> bool:
        test = el.get("test", "")
        return test.startswith("exists(") or (test.startswith("$") and " and exists(" in test)

    def change(root):
        for template in root.iterfind(f"{{{XSL}}}template"):
            for el in list(template.iter(f"{{{XSL}}}if", f"{{{XSL}}}variable")):
                test = el.get("test") or ""
                gone = {"absence guards": guard(el) or el.get("name", "").endswith("-any"),
                        "other absence asserts": test.startswith("not(not(") and not guard(el.getparent()),
                        "VAT-category tests of root rules": dispatch_once(template) and not guard(el)
                        and not test.startswith("not(not(") and ("Category" in test or "optimised-path-" in test)}[kind]
                if gone and el.getparent() is not None:
                    el.getparent().remove(el)
    return change


BUSINESS_ROOT = ("/ubl:Invoice | /cn:CreditNote", "d17e40-d17e40")  # the CEN UBL business rules on the root
CATEGORY_KEY = "cbc:ID/normalize-space(.)"  # every code of a category: no error on a category with two IDs
SCHEME = r"\[cac:TaxScheme/\(?normalize-space\(upper-case\(cbc:ID\)\)\)? ?= ?'VAT'\)?\]"
CODE = r"\[normalize-space\(cbc:ID\) ?= ?'([A-Z]+)'\]"
INDICATOR = r"\[cbc:ChargeIndicator ?= ?(?:true|false)\(\)\]"
KEYED = [  # the three forms of the category paths, each read from the key
    (re.compile(r"//cac:(TaxCategory|ClassifiedTaxCategory)(" + SCHEME + r")/cbc:ID\[normalize-space\(\.\) = '([A-Z]+)'\]"),
     lambda m: f"key('categories', '{m[3]}')[self::cac:{m[1]}]{m[2]}/cbc:ID[normalize-space(.) = '{m[3]}']"),
    (re.compile(r"//cac:AllowanceCharge(" + INDICATOR + r")?/cac:TaxCategory" + CODE),
     lambda m: f"key('categories', '{m[2]}')[self::cac:TaxCategory][parent::cac:AllowanceCharge{m[1] or ''}]"),
    (re.compile(r"//cac:(TaxCategory|ClassifiedTaxCategory)" + CODE),
     lambda m: f"key('categories', '{m[2]}')[self::cac:{m[1]}]"),
]
# what could make the category paths (or the VAT-scheme paths beside them) stop with an error: the rewritten copy
# stops first (error()), so that the engine answers by the original
UNSAFE = ("exists((//cac:TaxCategory | //cac:ClassifiedTaxCategory)[cbc:ID[2]] | //cac:TaxScheme[cbc:ID[2]])"
          " or exists(//cac:AllowanceCharge/cbc:ChargeIndicator[not(. castable as xs:boolean)])")
# a path to categories of one code ('X'), empty while no category has that code
CODE_PATH = (r"(?://cac:(?:Classified)?TaxCategory|//cac:AllowanceCharge(?:" + INDICATOR + r")?/cac:TaxCategory"
             r"|(?:\(/ubl:Invoice\|/cn:CreditNote\)/)?cac:AllowanceCharge(?:" + INDICATOR + r")?/cac:TaxCategory"
             r"|cac:TaxTotal/cac:TaxSubtotal/cac:TaxCategory)"
             r"(?:\[normalize-space\(cbc:ID\) ?= ?'X'\]|\[cbc:ID ?= ?'X'\]|" + SCHEME + "|" + INDICATOR + r")*"
             r"(?:/cbc:ID\[normalize-space\(\.\) = 'X'\])?")
# another path the test only asks for emptiness of, error-free behind UNSAFE
OTHER = re.compile(r"(exists|not)\(\((//(?:cac:\w+(?:" + SCHEME + r")?/)*(?:cac|cbc):\w+)\)\)")


def passes_without(test: str, code: str, xpath) -> bool:
    """True when the test (the assert's failure condition) is false for every document without a category of
    `code`: its paths to such categories made empty, every other path only asked whether it is empty, and every
    combination of empty / not empty evaluated."""
    rest = re.sub(CODE_PATH.replace("'X'", f"'{code}'"), "()", test)
    others = sorted({m[2] for m in OTHER.finditer(rest)})
    rest = OTHER.sub(lambda m: f"{m[1]}($other{others.index(m[2])})", rest)
    if re.search(r"(?:cac|cbc):\w+|//|\$(?!other)", rest):
        return False
    for values in itertools.product(("()", "(1)"), repeat=len(others)):
        filled = re.sub(r"\$other(\d+)", lambda m: values[int(m[1])], rest)
        if xpath.evaluate_single(filled).string_value != "false":
            return False
    return True


def category_rewrite(how: str):
    """how = 'keyed' (the paths read from the key), 'proved' (each root test naming one code skipped while no
    category has that code, where passes_without proves it passes then) or 'gated' (every test naming one code
    skipped so: an upper bound, it hides other conjuncts' findings and errors); each behind the error() guard."""
    xpath = PySaxonProcessor(license=False).new_xpath_processor()

    def change(root):
        for template in root.iterfind(f"{{{XSL}}}template"):
            if (template.get("match"), template.get("mode")) != BUSINESS_ROOT:
                continue
            paths = {v.get("name"): v.get("select") for v in template.iter(f"{{{XSL}}}variable")}
            for el in list(template.iter(f"{{{XSL}}}variable", f"{{{XSL}}}if")):
                attr = "select" if el.get("select") else "test"
                if how == "keyed":
                    for pattern, into in KEYED:
                        el.set(attr, pattern.sub(into, el.get(attr)))
                    continue
                whole = re.sub(r"\$([\w-]+)", lambda m: f"({paths[m[1]]})" if m[1] in paths else m[0], el.get(attr))
                codes = set(re.findall(r"= ?'([A-Z]{1,2})'", whole))
                if el.getparent() is not template or attr != "test" or "Category" not in whole or len(codes) != 1:
                    continue
                code = codes.pop()
                if how == "gated" or passes_without(whole, code, xpath):
                    gate = etree.Element(f"{{{XSL}}}if", test=f"exists(key('categories', '{code}'))")
                    el.addprevious(gate)
                    gate.append(el)
            guard = etree.Element(f"{{{XSL}}}if", test=UNSAFE)
            etree.SubElement(guard, f"{{{XSL}}}sequence", select="error()")
            template.insert(0, guard)
        key = etree.Element(f"{{{XSL}}}key", name="categories", use=CATEGORY_KEY,
                            match="cac:TaxCategory | cac:ClassifiedTaxCategory")
        root.find(f"{{{XSL}}}template").addprevious(key)
    return change


def parts(sdoc, copy: Path, rounds: int, copies: int) -> None:
    kinds = ("absence guards", "other absence asserts", "VAT-category tests of root rules")
    rewrites = {"category paths keyed": category_rewrite("keyed"),
                "category tests gated where proved": category_rewrite("proved"),
                "category tests gated (upper bound)": category_rewrite("gated")}
    with tempfile.TemporaryDirectory(prefix="copy-parts-") as tmp:
        sheets = {}
        for name, change in [("as installed", lambda root: None)] + [(k, without(k)) for k in kinds] + list(
                rewrites.items()):
            made = variant(copy, Path(tmp), name.replace(" ", "-"), change)
            for n in range(copies):
                sheets[f"{name}#{n}"] = Path(tmp) / f"{n}-{made.name}"
                shutil.copyfile(made, sheets[f"{name}#{n}"])
        got = timed(sdoc, sheets, rounds)
    print(f"\n{copy.name} without each kind of work, CPU ms (median of {copies} compiled copies)")
    for name in ["as installed", *kinds, *rewrites]:
        print(f"  {name:40} {statistics.median(v for k, v in got.items() if k.rsplit('#', 1)[0] == name):7.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--syntax", default="CII")
    ap.add_argument("--rounds", type=int, default=400)
    ap.add_argument("--before-home", type=Path)
    ap.add_argument("--copies", type=int, default=4, help="compiled copies of each side with --before-home")
    ap.add_argument("--parts", action="store_true", help="the CEN copy without each kind of work (see above)")
    args = ap.parse_args()
    data = TYPICAL[args.syntax].read_bytes()
    doc = xmlinput.load(data)
    sdoc = engine.saxon_document(doc)
    pack = packs.latest_active("xrechnung")
    chosen = scenarios.select_scenario(scenarios.load_scenarios(pack.scenarios), sdoc)
    copies = [pack.runnable(s) for s in chosen.stylesheets]
    if args.parts:
        parts(sdoc, copies[0], args.rounds, args.copies)
        return
    with tempfile.TemporaryDirectory(prefix="copy-patterns-") as tmp:
        folder = Path(tmp)
        for n, copy in enumerate(copies):
            modes = [a.get("mode") for a in dispatching(etree.parse(str(copy)).getroot())]
            sheets = {"as installed": copy, "no pattern": variant(copy, folder, f"{n}-none", pattern_alone(None, ""))}
            for mode in modes:
                for how in ("count", "empty", "apply"):
                    sheets[f"{mode} {how}"] = variant(copy, folder, f"{n}-{mode}-{how}", pattern_alone(mode, how))
            print(f"\n{copy.name} ({len(modes)} patterns), CPU ms")
            for name, ms in timed(sdoc, sheets, args.rounds).items():
                print(f"  {name:40} {ms:7.3f}")
        if args.syntax == "CII":
            sheets = {form: variant(copies[0], folder, f"suffix-{i}", select_only(expr))
                      for i, (form, expr) in enumerate(SUFFIX_FORMS.items())}
            print(f"\nthe '{SUFFIX}' scan of {copies[0].name} in other forms, CPU ms")
            for name, ms in timed(sdoc, sheets, args.rounds).items():
                print(f"  {name:40} {ms:7.3f}")
    if args.before_home:
        home = get_settings().rules_home
        print(f"\nbefore ({args.before_home}) / after ({home}), CPU ms, the median of {args.copies} compiled copies"
              " of each side (one executable alone is 5-10 % faster or slower than a byte-identical one)")
        with tempfile.TemporaryDirectory(prefix="copy-before-after-") as tmp:
            for copy in copies:
                before = args.before_home / copy.relative_to(home)
                want = [i.to_dict() for i in engine.schematron_issues(sdoc, before, None, doc)]
                assert [i.to_dict() for i in engine.schematron_issues(sdoc, copy, None, doc)] == want, copy.name
                sheets = {}
                for n in range(args.copies):
                    for side, path in (("before", before), ("after", copy)):
                        sheets[f"{side} {n}"] = Path(tmp) / f"{side}-{n}-{copy.name}"
                        shutil.copyfile(path, sheets[f"{side} {n}"])
                got = timed(sdoc, sheets, args.rounds)
                b, a = (statistics.median(ms for name, ms in got.items() if name.startswith(side))
                        for side in ("before", "after"))
                print(f"  {copy.name:44} {b:7.3f} {a:7.3f}  {a / b:5.2f}  findings {len(want)}")


if __name__ == "__main__":
    main()
