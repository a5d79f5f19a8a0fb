"""`pipeline rules add` with releases as their publishers ship them, second round (issue 37, found by probing):

- FNFE publishes its rules since 1.4.0.03 as GitHub tags of fnfempe/France_RFE, whose source archive is
  `France_RFE-1.4.0.03.zip` (top folder `France_RFE-1.4.0.03/FNFE_RFE_INVOICE/{CII,UBL}/{EN16931,EXTENDED-CTC-FR}/
  2xslt/...`): refused as "states no version", the version being read only after a `V`; its dated archives
  (`2026_08_04_FNFE_RFE_INVOICE_V1.4.0.03.zip`) state their day, which was asked for with --valid-from;
- a release holding two differing files of one name was refused without saying where they are; an archive holding
  one path twice with different contents was installed with the last, silently;
- a 1 MB zip bomb took 1.1 GB of memory before it was refused, and an archive whose header understates a member
  580 MB: zlib inflated the whole bound in one read;
- XRechnung Schematron stylesheets of different versions made one pack named after the first;
- a Schematron release laid over the 2026-01-31 configuration (`3.0.2-schematron-2.6.0`) sorted after KoSIT's
  configuration of its own day (`3.0.2-2026-08-31`), which then never judged.
Releases are built here from the installed fr-ctc pack's files and ../shared/rules, restated as later versions."""
from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
import warnings
import zipfile

from conftest import CORPUS, RULES_SOURCE
from pipeline.check import packs
from pipeline.cli import main
from pipeline.flows.validate_xml import validate_xml
from test_rules_add import XR_UBL, _tree, _zip, home, issued, kosit_release, snapshot  # noqa: F401 - the fixture

CEN_CII = CORPUS / "en16931-cen/cii/examples/CII_example1.xml"


def france_rfe(top: str, differing: bool = False) -> dict[str, bytes]:
    """FNFE's France_RFE layout: the BR-FR rules in each profile's 2xslt/ (the same file twice), their _WARNING
    twins, the EXTENDED-CTC-FR rules, CEN's rules, CDAR, an older Factur-X copy named by its version, a PDF note."""
    fr = packs.latest_active("fr-ctc").root
    cii = (fr / "cii/BR-FR-Flux2-Schematron-CII.xslt").read_bytes()
    ubl = (fr / "ubl/BR-FR-Flux2-Schematron-UBL.xslt").read_bytes()
    base = f"{top}FNFE_RFE_INVOICE/"
    files = {f"{top}README.md": b"# France_RFE", f"{base}FNFE_EXPLANATORY_NOTE_V1.4.0_EN.pdf": b"%PDF-1.4"}
    for profile in ("EN16931", "EXTENDED-CTC-FR"):
        changed = b"<!-- " + profile.encode() + b" -->" if differing and profile != "EN16931" else b""
        files[f"{base}CII/{profile}/2xslt/BR-FR-Flux2-Schematron-CII.xslt"] = cii + changed
        files[f"{base}CII/{profile}/2xslt/BR-FR-Flux2-Schematron-CII_WARNING.xslt"] = cii + b"<!-- warning -->"
        files[f"{base}UBL/{profile}/2xslt/BR-FR-Flux2-Schematron-UBL.xslt"] = ubl
    files[f"{base}CII/EXTENDED-CTC-FR/2xslt/EXTENDED-CTC-FR-CII.xslt"] = \
        (fr / "cii/extended-ctc-fr/EXTENDED-CTC-FR-CII.xslt").read_bytes()
    files[f"{base}UBL/EXTENDED-CTC-FR/2xslt/EXTENDED-CTC-FR-UBL.xslt"] = \
        (fr / "ubl/EXTENDED-CTC-FR-UBL.xslt").read_bytes()
    for syntax in ("CII", "UBL"):  # FNFE carries CEN's stylesheets beside its own: no CEN release for that
        files[f"{base}{syntax}/EN16931/2xslt/EN16931-{syntax}-validation.xslt"] = \
            (RULES_SOURCE / f"en16931/1.3.16/{syntax.lower()}/xslt/EN16931-{syntax}-validation.xslt").read_bytes()
    files[f"{base}CDAR/2xslt/BR-FR-CDV-Schematron-CDAR.xslt"] = \
        (RULES_SOURCE / "fr-cdar/1.4.0.03/xslt/BR-FR-CDV-Schematron-CDAR.xslt").read_bytes()
    files[f"{top}Factur-X/EXTENDED/xsl/BR-FR-Flux2-Schematron-CII_V1.4.0.xsl"] = cii + b"<!-- older -->"
    return files


def _fr_rules(day: str) -> list[tuple]:
    report = validate_xml(issued(CEN_CII.read_bytes(), day), "fr-ctc")
    return [(r.pack, r.version) for r in report.rules]


def test_fnfe_github_source_archive_is_added_with_its_version_and_chosen_from_its_day(home, tmp_path, capsys):
    installed = packs.latest_active("fr-ctc").version
    release = tmp_path / "France_RFE-1.4.0.99.zip"
    release.write_bytes(_zip(france_rfe("France_RFE-1.4.0.99/")))
    assert main(["rules", "add", str(release), "--no-optimise"]) == 2  # a tag's archive states no day
    assert "states no day from which it is in force" in capsys.readouterr().err
    assert main(["rules", "add", str(release), "--no-optimise", "--valid-from", "2026-10-01"]) == 0
    assert "added FNFE release: fr-ctc 1.4.0.99" in capsys.readouterr().out
    pack = packs.get_pack("fr-ctc", "1.4.0.99")
    assert pack.valid_from.isoformat() == "2026-10-01"
    assert ("fr-ctc", "1.4.0.99") in _fr_rules("20261015")
    assert ("fr-ctc", installed) in _fr_rules("20260915") and ("fr-ctc", "1.4.0.99") not in _fr_rules("20260915")
    # what is no part of the pack (CDAR, the _WARNING twins, the older Factur-X copy, the note) is not installed
    assert not [p for p in pack.root.rglob("*") if "WARNING" in p.name or "CDAR" in p.name or p.suffix == ".pdf"]
    assert main(["rules", "remove", "fr-ctc", "1.4.0.99"]) == 0


def test_fnfe_dated_archive_states_its_day_and_a_folder_named_by_its_tag_its_version(home, tmp_path, capsys):
    dated = tmp_path / "2026_09_30_FNFE_RFE_INVOICE_V1.4.0.98.zip"
    dated.write_bytes(_zip(france_rfe("")))
    assert main(["rules", "add", str(dated), "--no-optimise"]) == 0
    assert "fr-ctc 1.4.0.98 (FNFE-MPE BR-FR Flux 2 1.4.0.98) in force from 2026-09-30" in capsys.readouterr().out
    folder = tmp_path / "unpacked"
    for name, data in france_rfe("France_RFE-1.4.0.97/").items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    # an older release in force after the later one would judge in its place from that day: refused
    before = snapshot(home)
    assert main(["rules", "add", str(folder), "--no-optimise", "--valid-from", "2026-10-02"]) == 2
    assert "older than the installed fr-ctc 1.4.0.98" in capsys.readouterr().err
    assert snapshot(home) == before
    assert main(["rules", "add", str(folder), "--no-optimise", "--valid-from", "2026-09-29"]) == 0
    assert "added FNFE release: fr-ctc 1.4.0.97" in capsys.readouterr().out


def test_differing_copies_of_one_file_are_refused_naming_where_they_are(home, tmp_path, capsys):
    release = tmp_path / "France_RFE-1.4.0.99.zip"
    release.write_bytes(_zip(france_rfe("France_RFE-1.4.0.99/", differing=True)))
    before = snapshot(home)
    assert main(["rules", "add", str(release), "--no-optimise", "--valid-from", "2026-10-01"]) == 2
    said = capsys.readouterr().err
    assert "differing files named BR-FR-Flux2-Schematron-CII.xslt" in said, said
    assert "FNFE_RFE_INVOICE/CII/EN16931/2xslt/BR-FR-Flux2-Schematron-CII.xslt" in said
    assert "FNFE_RFE_INVOICE/CII/EXTENDED-CTC-FR/2xslt/BR-FR-Flux2-Schematron-CII.xslt" in said
    assert snapshot(home) == before


# Read in a fresh process: its peak memory is the archive's alone (this process's peak is the other tests').
# VmHWM, not ru_maxrss: a child's ru_maxrss starts from its parent's peak (Linux keeps it across fork and exec).
_PEAK = """
import json, re, sys
from pipeline.check import packs, releases
try:
    releases.read(sys.argv[1])
    said = None
except packs.RulesError as exc:
    said = str(exc)
with open("/proc/self/status") as status:
    peak = int(re.search(r"VmHWM:\\s+(\\d+) kB", status.read()).group(1))
print(json.dumps({"said": said, "peakKb": peak}))
"""


def _read_in_a_process(path) -> dict:
    done = subprocess.run([sys.executable, "-c", _PEAK, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _zeros(path, size: int, declared: int | None = None) -> None:
    """A rule release with a member of `size` zero bytes (1 MB compressed per GB); `declared`: the size its local
    and central headers state instead."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("xslt/EN16931-CII-validation.xslt", b"<x/>")
        with zf.open("examples/zeros.xml", "w", force_zip64=declared is None) as member:
            for _ in range(size >> 20):
                member.write(bytes(1 << 20))
    if declared is not None:
        data = bytearray(path.read_bytes())
        central = data.rfind(b"PK\x01\x02")
        struct.pack_into("<I", data, central + 24, declared)
        local = data.find(b"PK\x03\x04", data.find(b"PK\x03\x04") + 4)
        struct.pack_into("<I", data, local + 22, declared)
        path.write_bytes(bytes(data))


def test_a_zip_bomb_is_refused_without_unpacking_it(tmp_path):
    bomb = tmp_path / "en16931-cii-1.3.17.zip"
    _zeros(bomb, 512 << 20)
    assert bomb.stat().st_size < 1 << 20
    read = _read_in_a_process(bomb)
    assert read["said"] == "the archive unpacks to more than 268435456 bytes: no rule release"
    assert read["peakKb"] < 200_000, read  # 0.6 GB before (1.1 GB for 1 GB of zeros)


def test_an_understated_member_is_refused_without_inflating_the_bound(tmp_path):
    liar = tmp_path / "en16931-cii-1.3.17.zip"
    _zeros(liar, 300 << 20, declared=100)
    read = _read_in_a_process(liar)
    assert "not a readable ZIP archive" in read["said"] and "Bad CRC-32" in read["said"], read
    assert read["peakKb"] < 200_000, read  # 580 MB before


def test_an_xrechnung_schematron_release_whose_stylesheets_state_different_versions_is_refused(home, tmp_path, capsys):
    """The pack was named after the first stylesheet's version and ran the other's rules under it."""
    files = {f"schematron/{n}": d for n, d in _tree(RULES_SOURCE / "xrechnung/3.0.2").items()
             if n.startswith(("cii/", "ubl/")) and n.endswith(".xsl")}
    cii = "schematron/cii/XRechnung-CII-validation.xsl"
    files[cii] = files[cii].replace(b"Schematron Version 2.5.0", b"Schematron Version 2.6.0")
    release = tmp_path / "xrechnung-3.0.2-schematron-2.6.0.zip"
    release.write_bytes(_zip(files))
    before = snapshot(home)
    assert main(["rules", "add", str(release), "--no-optimise"]) == 2
    said = capsys.readouterr().err
    assert "stylesheets state different versions" in said and "XRechnung-UBL-validation.xsl: 2.5.0" in said, said
    assert snapshot(home) == before


def _zip_entries(entries: list[tuple[str, bytes]]) -> bytes:
    """An archive written entry by entry, as given (the same name twice too)."""
    out = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        warnings.simplefilter("ignore")  # zipfile warns of a duplicate name, and writes it
        for name, data in entries:
            zf.writestr(name, data)
    return out.getvalue()


def test_one_path_twice_with_different_contents_is_refused_and_dot_slash_names_are_the_files(home, tmp_path, capsys):
    """Two entries of one name: the last was installed, silently (unzip asks which; the release does not say)."""
    files = kosit_release("2026-08-31")
    sheet = "resources/cii/16b/xsl/EN16931-CII-validation.xsl"
    twice = tmp_path / "xrechnung-3.0.2-validator-configuration-2026-08-31.zip"
    twice.write_bytes(_zip_entries([*files.items(), (sheet, files[sheet].replace(b'flag="fatal"', b'flag="warning"'))]))
    before = snapshot(home)
    assert main(["rules", "add", str(twice), "--no-optimise"]) == 2
    assert f"the archive holds {sheet} twice, with different contents: refused" in capsys.readouterr().err
    assert snapshot(home) == before
    # the same file twice, and names as some tools write them (`./scenarios.xml`): the release as it is
    dotted = tmp_path / "dotted.zip"
    dotted.write_bytes(_zip_entries([(f"./{n}", d) for n, d in files.items()] + [(sheet, files[sheet])]))
    assert main(["rules", "add", str(dotted), "--no-optimise"]) == 0
    pack = packs.get_pack("xrechnung", "3.0.2-2026-08-31")
    assert (pack.root / "scenarios.xml").is_file() and (pack.root / sheet).read_bytes() == files[sheet]


def test_a_configuration_of_the_schematron_releases_day_is_chosen_over_the_old_one_laid_under_it(home, tmp_path,
                                                                                                  capsys):
    """XRechnung Schematron 2.6.0 added first, over the 2026-01-31 configuration, and then KoSIT's configuration of
    the same day (2026-08-31), which holds it: `3.0.2-schematron-2.6.0` sorted after `3.0.2-2026-08-31`, so the old
    configuration kept judging the invoices of the new one's day."""
    files = {f"schematron/{n}": d.replace(b"Schematron Version 2.5.0", b"Schematron Version 2.6.0")
             .replace(b"<dct:created>2026-02-04", b"<dct:created>2026-08-31")
             for n, d in _tree(RULES_SOURCE / "xrechnung/3.0.2").items() if n.startswith(("cii/", "ubl/"))}
    schematron = tmp_path / "xrechnung-3.0.2-schematron-2.6.0.zip"
    schematron.write_bytes(_zip(files))
    config = tmp_path / "xrechnung-3.0.2-validator-configuration-2026-08-31.zip"
    config.write_bytes(_zip(kosit_release("2026-08-31")))
    assert main(["rules", "add", str(schematron), "--no-optimise"]) == 0
    assert "xrechnung 3.0.2-2026-01-31-schematron-2.6.0" in capsys.readouterr().out
    xml = XR_UBL.read_bytes()
    late = xml.replace(b"<cbc:IssueDate>2016-04-04</cbc:IssueDate>", b"<cbc:IssueDate>2026-09-15</cbc:IssueDate>")
    assert validate_xml(late, "xrechnung").version == "3.0.2-2026-01-31-schematron-2.6.0"
    assert validate_xml(xml, "xrechnung").version == "3.0.2"
    assert main(["rules", "add", str(config), "--no-optimise"]) == 0
    assert validate_xml(late, "xrechnung").version == "3.0.2-2026-08-31"
    assert validate_xml(xml, "xrechnung").version == "3.0.2"
