"""`pipeline rules add` (issue 37): official releases, built here from ../shared/rules files renamed as later
versions with later dates, installed as new pack versions without a new version of this project: recognised by
kind and version from their files, listed, chosen for documents issued from their date on and not before,
removable; an archive that is damaged, unknown or incomplete is refused and leaves the rules home as it was.
`pipeline rules list` names the releases the registry knows that are not installed."""
from __future__ import annotations

import io
import json
import re
import shutil
import zipfile
from pathlib import Path

import pytest

from conftest import CORPUS, RULES_SOURCE
from pipeline.check import packs
from pipeline.cli import main
from pipeline.flows.validate_xml import validate_xml
from pipeline.settings import get_settings

CEN_CII = CORPUS / "en16931-cen/cii/examples/CII_example1.xml"       # issued 2015-01-09
XR_UBL = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml"
SMALL_CORPUS = [CEN_CII, CORPUS / "en16931-cen/ubl/examples/ubl-tc434-example1.xml", XR_UBL,
                CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml"]


@pytest.fixture()
def home(tmp_path, monkeypatch):
    """A rules home of our own: a copy of the installed one (the other tests' packs are not touched)."""
    ours = tmp_path / "rules"
    shutil.copytree(get_settings().rules_home, ours, symlinks=False,
                    ignore=shutil.ignore_patterns(".add-*", ".install-*"))
    monkeypatch.setenv("EINVOICE_RULES_HOME", str(ours))
    get_settings.cache_clear()
    packs.clear_caches()
    yield ours
    monkeypatch.undo()
    get_settings.cache_clear()
    packs.clear_caches()


@pytest.fixture()
def corpus(tmp_path) -> Path:
    """A few official documents (CII and UBL) to prove the optimised copies on: the whole corpus takes minutes."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    for path in SMALL_CORPUS:
        shutil.copyfile(path, folder / path.name)
    return folder


def _zip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return out.getvalue()


def _tree(folder: Path, prefix: str = "", skip=()) -> dict[str, bytes]:
    return {prefix + p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not any(p.relative_to(folder).as_posix().startswith(s) for s in skip)}


def cen_release(version: str = "1.3.17", updated: str = "2026-11-01") -> dict[str, bytes]:
    """The CEN 1.3.16 artefacts as the CEN's release archive holds them (a top folder, no UBL XSD), restated as
    `version` of `updated`: only the version comment changes."""
    files = _tree(RULES_SOURCE / "en16931/1.3.16", f"eInvoicing-EN16931-validation-{version}/",
                  skip=("ubl/schema/xsd", "VERSION.json"))
    stated = re.compile(rb"Schematron version 1\.3\.16 - Last update: \d{4}-\d{2}-\d{2}")
    return {n: stated.sub(f"Schematron version {version} - Last update: {updated}".encode(), d)
            for n, d in files.items()}


def kosit_release(date: str = "2026-08-31", schematron: str = "2.6.0") -> dict[str, bytes]:
    """The KoSIT validator configuration of XRechnung 3.0.2 (scenarios.xml and its resources), dated `date` and
    naming XRechnung Schematron `schematron`, in its description and in its XRechnung stylesheets alike (KoSIT's
    releases state one version in both; `pipeline rules add` refuses a configuration where they differ)."""
    files = {n: d.replace(b"Schematron Version 2.5.0", f"Schematron Version {schematron}".encode())
             for n, d in _tree(RULES_SOURCE / "xrechnung/3.0.2", skip=("VERSION.json", "cii/", "ubl/",
                                                                       "common.sch")).items()}
    files["scenarios.xml"] = files["scenarios.xml"].replace(b"<date>2026-02-04</date>", f"<date>{date}</date>".encode()) \
        .replace(b"Schematron Rules version 2.5.0", f"Schematron Rules version {schematron}".encode())
    return files


def peppol_release(version: str = "2026.11", mandatory: str | None = "2026-11-16") -> dict[str, bytes]:
    files = _tree(RULES_SOURCE / "peppol/2026.5", f"openpeppol/{version}/")
    note = json.loads(files[f"openpeppol/{version}/VERSION.json"])
    note["version"] = version
    note.pop("mandatoryFrom")
    if mandatory:
        note["mandatoryFrom"] = mandatory
    files[f"openpeppol/{version}/VERSION.json"] = json.dumps(note).encode()
    return files


def issued(data: bytes, day: str) -> bytes:
    """The CII with its issue date (BT-2) set to `day` (YYYYMMDD)."""
    return re.sub(rb'(<udt:DateTimeString format="102">)\d{8}', rb"\g<1>" + day.encode(), data, count=1)


def listed(capsys) -> dict:
    assert main(["rules", "list", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def snapshot(home: Path) -> list[str]:
    """Every file and folder of the rules home (hidden staging folders included)."""
    return sorted(p.relative_to(home).as_posix() for p in home.rglob("*"))


def test_a_cen_release_is_added_listed_chosen_by_issue_date_and_removable(home, corpus, tmp_path, capsys):
    release = tmp_path / "eInvoicing-EN16931-validation-1.3.17.zip"
    release.write_bytes(_zip(cen_release()))
    assert main(["rules", "add", str(release), "--corpus", str(corpus)]) == 0
    out = capsys.readouterr().out
    assert "added CEN validation artefacts: en16931 1.3.17" in out and "from 2026-11-01" in out
    assert "ubl/schema/xsd/: taken from the installed en16931/1.3.16" in out
    [pack] = [p for p in listed(capsys)["packs"] if p["spec"] == "en16931" and p["version"] == "1.3.17"]
    assert pack["validFrom"] == "2026-11-01" and pack["added"] and pack["status"] == "active"
    assert pack["originals"] == {} and len(pack["optimised"]) == 2  # both copies proven equal on the corpus
    manifest = packs.read_manifest(home / "en16931/1.3.17")
    assert manifest[packs.ADDED]["release"] == "CEN validation artefacts 1.3.17" and manifest["files"]

    before, after = CEN_CII.read_bytes(), issued(CEN_CII.read_bytes(), "20261115")
    assert validate_xml(before, "en16931").version == "1.3.16"      # issued 2015: the release in force then
    report = validate_xml(after, "en16931")                          # issued after 2026-11-01: the new release
    assert (report.version, report.verdict, [r.version for r in report.rules]) == ("1.3.17", "valid", ["1.3.17"])
    assert validate_xml(before, "en16931", version="1.3.17").version == "1.3.17"  # a request may name it

    assert main(["rules", "remove", "en16931", "1.3.17"]) == 0
    assert capsys.readouterr().out.startswith("removed en16931 1.3.17")
    assert not (home / "en16931/1.3.17").exists()
    assert validate_xml(after, "en16931").version == "1.3.16"
    assert "1.3.17" not in [p["version"] for p in listed(capsys)["packs"]]


def test_a_kosit_configuration_is_added_and_the_known_release_no_longer_missing(home, corpus, tmp_path, capsys):
    missing = listed(capsys)["notInstalled"]
    assert [(k["spec"], k["release"], k["validFrom"]) for k in missing] == [
        ("xrechnung", "XRechnung Schematron 2.6.0", "2026-08-31")]
    assert main(["rules", "list"]) == 0
    assert "not installed: xrechnung XRechnung Schematron 2.6.0, in force from 2026-08-31" in capsys.readouterr().out

    release = tmp_path / "xrechnung-3.0.2-validator-configuration-2026-08-31.zip"
    release.write_bytes(_zip(kosit_release()))
    assert main(["rules", "add", str(release), "--corpus", str(corpus)]) == 0
    capsys.readouterr()
    state = listed(capsys)
    assert state["notInstalled"] == []
    [pack] = [p for p in state["packs"] if p["version"] == "3.0.2-2026-08-31"]
    assert pack["validFrom"] == "2026-08-31" and "XRechnung Schematron 2.6.0" in pack["release"]
    xml = XR_UBL.read_text("utf-8")
    assert "<cbc:IssueDate>2016-04-04</cbc:IssueDate>" in xml
    later = xml.replace("<cbc:IssueDate>2016-04-04</cbc:IssueDate>", "<cbc:IssueDate>2026-09-15</cbc:IssueDate>")
    report = validate_xml(later.encode(), "xrechnung")
    assert report.version == "3.0.2-2026-08-31" and report.valid
    assert report.rules[0].scenario == "EN16931 XRechnung (UBL Invoice)"
    assert validate_xml(xml.encode(), "xrechnung").version == "3.0.2"


def test_copies_not_proven_equal_are_not_made_and_the_list_says_the_originals_run(home, tmp_path, capsys):
    release = tmp_path / "peppol-2026.11.zip"
    release.write_bytes(_zip(peppol_release()))
    nothing = tmp_path / "empty"
    nothing.mkdir()
    assert main(["rules", "add", str(release), "--corpus", str(nothing)]) == 0
    assert "the original runs (no corpus documents to prove the copy equal on" in capsys.readouterr().out
    [pack] = [p for p in listed(capsys)["packs"] if p["version"] == "2026.11"]
    assert pack["optimised"] == [] and set(pack["originals"]) == {
        "xslt/CEN-EN16931-UBL.xslt", "xslt/PEPPOL-EN16931-UBL.xslt", "xslt/PEPPOL-EN16931-UBL-SB.xslt"}
    assert pack["validFrom"] == "2026-11-16"
    assert main(["rules", "list"]) == 0
    assert "the original runs: xslt/PEPPOL-EN16931-UBL.xslt (no corpus documents" in capsys.readouterr().out
    assert not list((home / "peppol/2026.11").rglob("*.optimised.*"))


def test_a_release_that_states_no_date_needs_valid_from(home, corpus, tmp_path, capsys):
    release = tmp_path / "peppol-2026.11.zip"
    release.write_bytes(_zip(peppol_release(mandatory=None)))
    before = snapshot(home)
    assert main(["rules", "add", str(release), "--corpus", str(corpus)]) == 2
    assert "states no day from which it is in force: give it with --valid-from" in capsys.readouterr().err
    assert snapshot(home) == before
    assert main(["rules", "add", str(release), "--corpus", str(corpus), "--valid-from", "2026-12-01"]) == 0
    assert packs.get_pack("peppol", "2026.11").valid_from.isoformat() == "2026-12-01"


def _flagged(data: bytes, bit: int) -> bytes:
    """A ZIP with a general-purpose flag bit set on every member (local headers and central directory)."""
    out = bytearray(data)
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = out.find(signature)
        while at >= 0:
            out[at + offset] |= bit & 0xFF
            out[at + offset + 1] |= bit >> 8
            at = out.find(signature, at + 4)
    return bytes(out)


@pytest.mark.parametrize("case", ["truncated", "not a zip", "unknown", "broken stylesheet", "scenario file missing",
                                  "unsafe name", "name no UTF-8", "encrypted member"])
def test_a_damaged_or_unknown_release_is_refused_and_nothing_is_left_behind(home, corpus, tmp_path, capsys, case):
    files = cen_release()
    if case == "truncated":
        data = _zip(files)[:200_000]
    elif case == "not a zip":
        data = b"PK\x03\x04 this is no archive"
    elif case == "unknown":
        data = _zip({"invoice.xml": CEN_CII.read_bytes(), "README.md": b"rules?"})
    elif case == "broken stylesheet":
        name = next(n for n in files if n.endswith("cii/xslt/EN16931-CII-validation.xslt"))
        files[name] = files[name][:len(files[name]) // 2]
        data = _zip(files)
    elif case == "scenario file missing":
        files = kosit_release()
        del files["resources/ubl/2.1/xsl/EN16931-UBL-validation.xsl"]
        data = _zip(files)
    elif case == "name no UTF-8":  # flagged UTF-8 (bit 11) with bytes that are none: zipfile raised a traceback
        data = _flagged(_zip({"AAAAAAAAAAAA.xslt": b"<x/>"}), 0x800).replace(b"AAAAAAAAAAAA", b"\xed\xa0\x80" * 4)
    elif case == "encrypted member":
        data = _flagged(_zip(files), 0x1)
    else:
        data = _zip({"../../evil/cii/xslt/EN16931-CII-validation.xslt": b"<x/>"})
    release = tmp_path / "release.zip"
    release.write_bytes(data)
    before = snapshot(home)
    assert main(["rules", "add", str(release), "--corpus", str(corpus)]) == 2
    said = capsys.readouterr().err
    assert said.startswith("pipeline rules add: ") and ("refused" in said or "not a readable ZIP" in said), said
    assert snapshot(home) == before  # nothing half-installed, no staging folder left


def test_the_same_version_with_other_files_is_refused_and_a_registry_version_cannot_be_added(home, corpus, tmp_path,
                                                                                            capsys):
    release = tmp_path / "cen.zip"
    release.write_bytes(_zip(cen_release()))
    assert main(["rules", "add", str(release), "--corpus", str(corpus)]) == 0
    assert main(["rules", "add", str(release), "--corpus", str(corpus)]) == 0  # the same again: nothing changes
    files = cen_release()
    name = next(n for n in files if n.endswith("LICENSE.txt"))
    files[name] += b"\n"
    release.write_bytes(_zip(files))
    capsys.readouterr()
    assert main(["rules", "add", str(release), "--corpus", str(corpus)]) == 2
    assert "is installed with other files: remove it first" in capsys.readouterr().err
    release.write_bytes(_zip(cen_release("1.3.16", "2026-04-10")))
    assert main(["rules", "add", str(release), "--corpus", str(corpus)]) == 2
    assert "is a release of the registry" in capsys.readouterr().err


def test_an_xrechnung_schematron_release_is_laid_over_its_configuration(home, corpus, tmp_path, capsys):
    """The XRechnung Schematron release alone (cii/, ubl/ of the release zip) replaces the XRechnung stylesheets of
    the installed KoSIT configuration of the same XRechnung version."""
    files = {n: d for n, d in _tree(RULES_SOURCE / "xrechnung/3.0.2").items()
             if n.startswith(("cii/", "ubl/")) or n == "common.sch"}
    files = {n: d.replace(b"Schematron Version 2.5.0", b"Schematron Version 2.6.1") for n, d in files.items()}
    release = tmp_path / "xrechnung-3.0.2-schematron-2.6.1.zip"
    release.write_bytes(_zip(files))
    assert main(["rules", "add", str(release), "--corpus", str(corpus)]) == 0
    pack = packs.get_pack("xrechnung", "3.0.2-2026-01-31-schematron-2.6.1")
    assert pack.scenarios is not None and pack.valid_from.isoformat() == "2026-02-04"  # dct:created of the release
    # the Schematron it replaced is not named beside it ("XRechnung Schematron 2.6.1, XRechnung Schematron 2.5.0, ...")
    assert pack.release == "XRechnung Schematron 2.6.1, KoSIT validator configuration 2026-01-31"
    sheet = pack.root / "resources/xrechnung/3.0.2/xsl/XRechnung-UBL-validation.xsl"
    assert b"Schematron Version 2.6.1" in sheet.read_bytes()


@pytest.mark.parametrize("case", ["version a path", "version a number", "VERSION.json no JSON", "VERSION.json a list"])
def test_a_peppol_release_whose_version_is_no_name_is_refused_and_nothing_is_written_anywhere(home, corpus, tmp_path,
                                                                                             capsys, case):
    """Peppol's VERSION.json names the pack's folder: `../../../escaped` put a pack beside the rules home (found by
    probing), a number or a VERSION.json that is no JSON object ended in a traceback."""
    files = peppol_release()
    note_name = next(n for n in files if n.endswith("VERSION.json"))
    note = json.loads(files[note_name])
    if case == "version a path":
        note["version"] = "../../../escaped"
    elif case == "version a number":
        note["version"] = 2026
    files[note_name] = {"VERSION.json no JSON": b"{version: 2026.11", "VERSION.json a list": b"[]"}.get(
        case, json.dumps(note).encode())
    release = tmp_path / "peppol.zip"
    release.write_bytes(_zip(files))
    before, around = snapshot(home), sorted(p.name for p in tmp_path.parent.iterdir())
    assert main(["rules", "add", str(release), "--corpus", str(corpus)]) == 2
    said = capsys.readouterr().err
    assert said.startswith("pipeline rules add: ") and said.rstrip().endswith("refused") and "Traceback" not in said
    assert snapshot(home) == before and sorted(p.name for p in tmp_path.parent.iterdir()) == around
    assert not (home.parent / "escaped").exists() and not (home.parent.parent / "escaped").exists()


def test_a_cen_release_whose_date_is_no_day_needs_valid_from(home, corpus, tmp_path, capsys):
    """`Last update: 2026-13-45` ended in a traceback (max() of None); it states no day."""
    release = tmp_path / "cen.zip"
    release.write_bytes(_zip(cen_release("1.3.17", "2026-13-45")))
    assert main(["rules", "add", str(release), "--corpus", str(corpus)]) == 2
    assert "states no day from which it is in force: give it with --valid-from" in capsys.readouterr().err
    assert main(["rules", "add", str(release), "--no-optimise", "--valid-from", "2026-11-01"]) == 0
    assert packs.get_pack("en16931", "1.3.17").valid_from.isoformat() == "2026-11-01"


def test_remove_takes_names_not_paths(home, tmp_path, capsys):
    """`rules remove peppol ../..`-style names reached folders outside the rules home (any holding a manifest)."""
    outside = tmp_path / "outside"
    shutil.copytree(home / "peppol/2026.5", outside)
    relative = "../../" + outside.name  # home/peppol/../../outside = tmp_path/outside
    assert (home / "peppol" / relative / packs.MANIFEST_NAME).is_file()
    assert main(["rules", "remove", "peppol", relative]) == 2
    assert "is not installed" in capsys.readouterr().err and (outside / packs.MANIFEST_NAME).is_file()


def xrechnung_40_release(day: str = "2026-10-01") -> dict[str, bytes]:
    """KoSIT's configuration restated as one of XRechnung 4.0.0 (its scenarios match `xrechnung_4.0`, its XRechnung
    stylesheets say they are for 4.0.0, as a release of 4.0 states), of `day`."""
    files = {n: d.replace(b" - XRechnung 3.0.2 compatible", b" - XRechnung 4.0.0 compatible")
             for n, d in kosit_release(day).items()}
    files["scenarios.xml"] = files["scenarios.xml"].replace(b"XRechnung 3.0.2</name>", b"XRechnung 4.0.0</name>") \
        .replace(b"kosit:xrechnung_3.0", b"kosit:xrechnung_4.0")
    return files


def test_two_xrechnung_versions_side_by_side_each_judges_the_invoices_that_claim_it(home, tmp_path, capsys):
    """A KoSIT configuration holds the scenarios of its own XRechnung version only. With a 4.0 release added beside
    3.0.2, the pack in force on the issue date judged every XRechnung invoice: a 3.0 invoice issued after 4.0's day
    matched no scenario and was called invalid (XRECHNUNG-NO-SCENARIO), a 4.0 invoice issued before it too. The
    version an invoice claims picks the release, its issue date among that version's releases."""
    release = tmp_path / "xrechnung-4.0.0-validator-configuration-2026-10-01.zip"
    release.write_bytes(_zip(xrechnung_40_release()))
    assert main(["rules", "add", str(release), "--no-optimise"]) == 0
    capsys.readouterr()
    xml = XR_UBL.read_text("utf-8")
    for claimed, pack in (("3.0", "3.0.2"), ("4.0", "4.0.0-2026-10-01")):
        for day in ("2016-04-04", "2026-11-15"):
            doc = xml.replace("kosit:xrechnung_3.0", f"kosit:xrechnung_{claimed}").replace(
                "<cbc:IssueDate>2016-04-04</cbc:IssueDate>", f"<cbc:IssueDate>{day}</cbc:IssueDate>").encode()
            report = validate_xml(doc, "xrechnung")
            assert (report.verdict, report.version, [r.version for r in report.rules]) == ("valid", pack, [pack]), \
                (claimed, day, report.to_dict())
    # a plain EN 16931 invoice has KoSIT's EN 16931 scenario in both: the release in force on its date
    plain = xml.replace("urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0",
                        "urn:cen.eu:en16931:2017")
    late = plain.replace("<cbc:IssueDate>2016-04-04</cbc:IssueDate>", "<cbc:IssueDate>2026-11-15</cbc:IssueDate>")
    assert validate_xml(plain.encode(), "xrechnung").version == "3.0.2"
    assert validate_xml(late.encode(), "xrechnung").version == "4.0.0-2026-10-01"
    # a request naming a release gets that release, whatever the document claims
    named = validate_xml(xml.encode(), "xrechnung", version="4.0.0-2026-10-01")
    assert named.verdict == "invalid" and [i.code for i in named.issues if i.severity == "ERROR"] == [
        "XRECHNUNG-NO-SCENARIO"]
