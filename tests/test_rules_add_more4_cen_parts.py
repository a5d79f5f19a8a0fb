"""`pipeline rules add` of CEN's second archive after the first (issue 37). CEN publishes one archive per syntax
(en16931-cii-X.zip, en16931-ubl-X.zip); an operator who added the CII one and then the UBL one was told "installed
with other files: remove it first", as if the two were rival releases. The refusal now says that the version is
installed for CII only and that the archives of one release go in together, in one command; nothing is changed.
The UBL XSD, which CEN's archives lack, is taken from an installed pack with UBL rules, not from the newest pack
(a CII-only one has none)."""
from __future__ import annotations

from test_rules_add import home, snapshot  # noqa: F401 - the fixture
from test_rules_add_shapes import cen_syntax_archive, late_ubl
from pipeline.check import packs
from pipeline.cli import main
from pipeline.flows.validate_xml import validate_xml


def test_the_ubl_archive_after_the_cii_one_is_refused_saying_both_go_in_together(home, tmp_path, capsys):
    cii, ubl = tmp_path / "en16931-cii-1.3.17.zip", tmp_path / "en16931-ubl-1.3.17.zip"
    cii.write_bytes(cen_syntax_archive("cii"))
    ubl.write_bytes(cen_syntax_archive("ubl"))
    assert main(["rules", "add", str(cii), "--no-optimise"]) == 0
    capsys.readouterr()
    before = snapshot(home)
    assert main(["rules", "add", str(ubl), "--no-optimise"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("pipeline rules add: en16931 1.3.17 is installed with other files: it is installed for "
                           f"CII only (from {cii.resolve()}), this is its UBL-CreditNote, UBL-Invoice part"), said
    assert "pipeline rules remove en16931 1.3.17" in said and "add both archives in one command" in said, said
    assert snapshot(home) == before

    # the XSD a UBL archive lacks comes from a pack with UBL rules, not from the newest (CII only): the UBL archive
    # of a later release stopped on "does not load as an XML Schema", naming a staging folder
    later = tmp_path / "en16931-ubl-1.3.18.zip"
    later.write_bytes(cen_syntax_archive("ubl", "1.3.18", "2026-11-20"))
    assert main(["rules", "add", str(later), "--no-optimise"]) == 0
    assert "ubl/schema/xsd/: taken from the installed en16931/1.3.16" in capsys.readouterr().out
    assert validate_xml(late_ubl(), "en16931").version == "1.3.18"
    assert main(["rules", "remove", "en16931", "1.3.18"]) == 0

    # as it says: removed, then both at once
    assert main(["rules", "remove", "en16931", "1.3.17"]) == 0
    assert main(["rules", "add", str(cii), str(ubl), "--no-optimise"]) == 0
    assert set(packs.get_pack("en16931", "1.3.17").syntaxes) == {"CII", "UBL-Invoice", "UBL-CreditNote"}
    assert validate_xml(late_ubl(), "en16931").version == "1.3.17"


def test_the_same_syntax_with_other_files_is_still_the_plain_refusal(home, tmp_path, capsys):
    cii = tmp_path / "en16931-cii-1.3.17.zip"
    cii.write_bytes(cen_syntax_archive("cii"))
    assert main(["rules", "add", str(cii), "--no-optimise"]) == 0
    other = tmp_path / "en16931-cii-1.3.17-again.zip"
    other.write_bytes(cen_syntax_archive("cii", updated="2026-11-02"))
    assert main(["rules", "add", str(other), "--no-optimise"]) == 2
    said = capsys.readouterr().err
    assert "is installed with other files: remove it first (pipeline rules remove en16931 1.3.17)" in said, said
    assert "go in together" not in said
