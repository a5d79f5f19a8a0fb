"""`pipeline rules add` of releases as operators meet them (issue 37, found by probing, third round):

- the registry's own KoSIT validator configuration, added as downloaded, was installed a second time: its version is
  named after the day scenarios.xml states (`3.0.2-2026-02-04`, beside the registry's `3.0.2`), so the same rules
  judged the documents from that day under another name and `pipeline rules list` showed two packs;
- the registry's CEN artefacts added said "install it with pipeline rules install" where they were installed;
- a release zipped by a Windows tool (`\\` between folders, as PowerShell 5's Compress-Archive writes it) was
  refused as "unsafe member name", although what it names is an ordinary folder tree;
- a KoSIT configuration for EN 16931-1:2026's syntaxes (XRechnung 4.0: UBL 2.5, CII D25A) was refused as validating
  "no CII or UBL invoice", not for what it is.
Releases are built here from ../shared/rules files."""
from __future__ import annotations

import io
import zipfile

import pytest

from conftest import RULES_SOURCE
from pipeline.check import packs
from pipeline.cli import main
from pipeline.flows.validate_xml import validate_xml
from test_rules_add import XR_UBL, _zip, home, kosit_release, listed, snapshot  # noqa: F401 - the fixture


def _versions(capsys) -> list[str]:
    return sorted(p["version"] for p in listed(capsys)["packs"] if p["spec"] == "xrechnung")


def test_the_registry_s_own_configuration_added_again_is_the_installed_pack_not_a_second_one(home, tmp_path, capsys):
    release = tmp_path / "xrechnung-3.0.2-validator-configuration-2026-01-31.zip"
    release.write_bytes(_zip(kosit_release(date="2026-02-04", schematron="2.5.0")))  # as KoSIT published it
    before, versions = snapshot(home), _versions(capsys)
    assert main(["rules", "add", str(release), "--no-optimise"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("already installed with these files KoSIT validator configuration: xrechnung 3.0.2 ("), said
    assert "in force from 2026-01-31" in said and "a running service chooses it" not in said
    assert snapshot(home) == before and _versions(capsys) == versions == ["3.0.2"]

    assert main(["rules", "add", str(release), "--no-optimise", "--valid-from", "2026-03-01"]) == 2
    said = capsys.readouterr().err
    assert "holds the files of the installed xrechnung 3.0.2, in force from 2026-01-31" in said, said
    assert "a pack of the registry keeps the registry's day" in said
    assert snapshot(home) == before

    # a later configuration is a release of its own (scenarios.xml states its day), added as before
    later = tmp_path / "xrechnung-3.0.2-validator-configuration-2026-08-31.zip"
    later.write_bytes(_zip(kosit_release()))
    assert main(["rules", "add", str(later), "--no-optimise"]) == 0
    assert "added KoSIT validator configuration: xrechnung 3.0.2-2026-08-31" in capsys.readouterr().out
    assert _versions(capsys) == ["3.0.2", "3.0.2-2026-08-31"]


def test_the_registry_s_cen_artefacts_added_are_said_to_be_installed_here(home, capsys):
    before = snapshot(home)
    assert main(["rules", "add", str(RULES_SOURCE / "en16931/1.3.16"), "--no-optimise"]) == 2
    said = capsys.readouterr().err
    assert "en16931 1.3.16 is a release of the registry, installed here (pipeline rules install checks it" in said
    assert snapshot(home) == before


def _windows_zip(files: dict[str, bytes], top: str) -> bytes:
    """The files below `top`, zipped as Windows tools did: `\\` between folders, folder entries of their own, made on
    a FAT / NTFS system."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        folders = sorted({"\\".join((top + name).split("/")[:n]) for name in files
                          for n in range(1, (top + name).count("/") + 1)})
        for folder in folders:
            info = zipfile.ZipInfo(folder + "\\")
            info.create_system = 0
            zf.writestr(info, b"")
        for name, data in files.items():
            info = zipfile.ZipInfo((top + name).replace("/", "\\"))
            info.create_system = 0
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return out.getvalue()


def test_a_release_zipped_with_backslashes_is_added_and_judges_from_its_day(home, tmp_path, capsys):
    release = tmp_path / "xrechnung-3.0.2-validator-configuration-2026-08-31.zip"
    release.write_bytes(_windows_zip(kosit_release(), "xrechnung-3.0.2-validator-configuration-2026-08-31/"))
    with zipfile.ZipFile(release) as zf:
        assert any("\\resources\\" in n for n in zf.namelist())
    assert main(["rules", "add", str(release), "--no-optimise"]) == 0
    assert "added KoSIT validator configuration: xrechnung 3.0.2-2026-08-31" in capsys.readouterr().out
    assert (home / "xrechnung/3.0.2-2026-08-31/resources/ubl/2.1/xsd/maindoc/UBL-Invoice-2.1.xsd").is_file()
    xml = XR_UBL.read_text("utf-8")
    later = xml.replace("<cbc:IssueDate>2016-04-04</cbc:IssueDate>", "<cbc:IssueDate>2026-09-15</cbc:IssueDate>")
    assert later != xml
    report = validate_xml(later.encode(), "xrechnung")
    assert (report.version, report.verdict) == ("3.0.2-2026-08-31", "valid")
    assert validate_xml(xml.encode(), "xrechnung").version == "3.0.2"


@pytest.mark.parametrize("name", ["..\\..\\outside.xsl", "resources\\..\\..\\outside.xsl", "C:\\outside.xsl",
                                  "\\\\server\\share\\outside.xsl", "\\outside.xsl", "docs\\"])
def test_a_backslash_name_that_leaves_the_release_or_a_folder_with_data_is_refused(home, tmp_path, capsys, name):
    files = kosit_release()
    release = tmp_path / "xrechnung-3.0.2-validator-configuration-2026-08-31.zip"
    data = io.BytesIO(_windows_zip(files, ""))
    with zipfile.ZipFile(data, "a") as zf:
        zf.writestr(zipfile.ZipInfo(name), b"<x/>")
    release.write_bytes(data.getvalue())
    before, around = snapshot(home), sorted(p.name for p in tmp_path.iterdir())
    assert main(["rules", "add", str(release), "--no-optimise"]) == 2
    said = capsys.readouterr().err
    if name.endswith("\\"):  # a folder entry with contents: a file and a folder of one name
        assert f"the archive's folder entry {name!r} holds data: refused" in said
    else:
        assert f"unsafe member name {name!r}: refused" in said
    assert snapshot(home) == before and sorted(p.name for p in tmp_path.iterdir()) == around
    assert packs.list_installed() and "3.0.2-2026-08-31" not in _versions(capsys)


def test_a_configuration_of_the_2026_edition_s_syntaxes_is_refused_saying_so(home, tmp_path, capsys):
    """XRechnung 4.0 builds on EN 16931-1:2026 (UBL 2.5, CII D25A): its KoSIT configuration was refused as if it
    validated no invoice at all. Built here from the 3.0.2 configuration with its XML Schemas renamed as 2.5 / D25A."""
    files = kosit_release(date="2027-02-01")
    renamed = {"ubl/2.1/xsd/maindoc/UBL-Invoice-2.1.xsd": "ubl/2.5/xsd/maindoc/UBL-Invoice-2.5.xsd",
               "ubl/2.1/xsd/maindoc/UBL-CreditNote-2.1.xsd": "ubl/2.5/xsd/maindoc/UBL-CreditNote-2.5.xsd",
               "cii/16b/xsd/CrossIndustryInvoice_100pD16B.xsd": "cii/d25a/xsd/CrossIndustryInvoice_100pD25A.xsd"}
    scenarios = files["scenarios.xml"].replace(b"XRechnung 3.0.2</name>", b"XRechnung 4.0.0</name>")
    for old, new in renamed.items():
        assert f"resources/{old}".encode() in scenarios
        scenarios = scenarios.replace(f"resources/{old}".encode(), f"resources/{new}".encode())
        files[f"resources/{new}"] = files[f"resources/{old}"]
    files["scenarios.xml"] = scenarios
    release = tmp_path / "xrechnung-4.0.0-validator-configuration-2027-02-01.zip"
    release.write_bytes(_zip(files))
    before = snapshot(home)
    assert main(["rules", "add", str(release), "--no-optimise"]) == 2
    said = capsys.readouterr().err
    assert "no scenario validates an invoice in the syntaxes of EN 16931-1:2017" in said, said
    assert "CrossIndustryInvoice_100pD25A.xsd, UBL-CreditNote-2.5.xsd, UBL-Invoice-2.5.xsd" in said
    assert said.rstrip().endswith("refused") and snapshot(home) == before
