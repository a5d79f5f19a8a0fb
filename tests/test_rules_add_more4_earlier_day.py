"""`pipeline rules add` of a later release given a day before an installed older one's (issue 37). The selection by
issue date takes the pack in force latest, so CEN 1.3.17 added with --valid-from 2025-01-01 beside the installed
1.3.16 (in force from 2026-04-10) judged only the documents issued before 2026-04-10, and 1.3.16, the older rules,
every document issued from then on (a CII of December 2026 too), unsaid. Such a release is refused with the reason
and nothing left behind; on or after the older one's day it is added and judges the documents from then on."""
from __future__ import annotations

from test_rules_add import CEN_CII, _zip, cen_release, home, issued, kosit_release, snapshot  # noqa: F401
from pipeline.check import packs
from pipeline.cli import main
from pipeline.flows.validate_xml import validate_xml


def test_a_later_cen_release_before_the_older_ones_day_is_refused_and_added_on_its_day(home, tmp_path, capsys):
    assert packs.get_pack("en16931", "1.3.16").valid_from.isoformat() == "2026-04-10"
    release = tmp_path / "eInvoicing-EN16931-validation-1.3.17.zip"
    release.write_bytes(_zip(cen_release("1.3.17", "2026-11-01")))
    before = snapshot(home)
    assert main(["rules", "add", str(release), "--no-optimise", "--valid-from", "2025-01-01"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("pipeline rules add: en16931 1.3.17 (CEN validation artefacts 1.3.17) is later than the "
                           "installed en16931 1.3.16, which is in force from 2026-04-10"), said
    assert "would judge only the documents issued before 2026-04-10" in said and "refused" in said, said
    assert snapshot(home) == before
    assert validate_xml(issued(CEN_CII.read_bytes(), "20261205"), "en16931").version == "1.3.16"

    # the older one's own day is no contradiction: from then on the later rules judge
    assert main(["rules", "add", str(release), "--no-optimise", "--valid-from", "2026-04-10"]) == 0
    capsys.readouterr()
    for day, version in (("20260301", "1.3.16"), ("20260410", "1.3.17"), ("20261205", "1.3.17")):
        report = validate_xml(issued(CEN_CII.read_bytes(), day), "en16931")
        assert (report.version, report.verdict) == (version, "valid"), day


def test_a_later_kosit_configuration_before_the_installed_ones_day_is_refused(home, tmp_path, capsys):
    # the registry's configuration of XRechnung 3.0.2 is of 2026-01-31; the one of 2026-08-31 is later
    release = tmp_path / "xrechnung-3.0.2-validator-configuration-2026-08-31.zip"
    release.write_bytes(_zip(kosit_release("2026-08-31")))
    before = snapshot(home)
    assert main(["rules", "add", str(release), "--no-optimise", "--valid-from", "2025-12-01"]) == 2
    said = capsys.readouterr().err
    assert "is later than the installed xrechnung 3.0.2" in said and "in force from 2026-01-31" in said, said
    assert snapshot(home) == before
    assert main(["rules", "add", str(release), "--no-optimise"]) == 0  # its own day, 2026-08-31
