"""`pipeline rules add` of a release older than an installed one (issue 37). The selection by issue date takes the
pack in force latest, so an older release given a later day than a newer installed one judged the documents issued
from that day in place of the newer rules: CEN 1.3.15 added with --valid-from 2026-12-01 beside the installed 1.3.16
(in force from 2026-04-10) judged a CII issued 2026-12-05, unsaid. Such a release is refused with the reason and
nothing left behind; in force before the newer one (its own day, as history) it is added and judges only the
documents of its time. --valid-from takes YYYY-MM-DD only (`2026-W49` was read as that week's Monday)."""
from __future__ import annotations

import pytest

from conftest import RULES_SOURCE
from test_rules_add import CEN_CII, _tree, _zip, cen_release, home, issued, kosit_release, snapshot  # noqa: F401
from pipeline.check import packs
from pipeline.cli import main
from pipeline.flows.validate_xml import validate_xml


def test_an_older_cen_release_is_refused_after_the_newer_and_judges_only_before_it(home, tmp_path, capsys):
    newer = packs.get_pack("en16931", "1.3.16")
    assert newer.valid_from.isoformat() == "2026-04-10"
    release = tmp_path / "eInvoicing-EN16931-validation-1.3.15.zip"
    release.write_bytes(_zip(cen_release("1.3.15", "2025-06-01")))
    before = snapshot(home)
    assert main(["rules", "add", str(release), "--no-optimise", "--valid-from", "2026-12-01"]) == 2
    said = capsys.readouterr().err
    assert "en16931 1.3.15 (CEN validation artefacts 1.3.15) is older than the installed en16931 1.3.16" in said
    assert "in force from 2026-04-10" in said and "before 2026-04-10" in said, said
    assert snapshot(home) == before
    assert validate_xml(issued(CEN_CII.read_bytes(), "20261205"), "en16931").version == "1.3.16"

    # its own day (Last update 2025-06-01), before the newer one's: the rules of its time
    assert main(["rules", "add", str(release), "--no-optimise"]) == 0
    assert "added CEN validation artefacts: en16931 1.3.15" in capsys.readouterr().out
    assert validate_xml(issued(CEN_CII.read_bytes(), "20251205"), "en16931").version == "1.3.15"
    assert validate_xml(issued(CEN_CII.read_bytes(), "20261205"), "en16931").version == "1.3.16"
    assert main(["rules", "remove", "en16931", "1.3.15"]) == 0


def test_an_older_kosit_configuration_is_refused_after_the_installed_one(home, tmp_path, capsys):
    # the registry's configuration of XRechnung 3.0.2 is of 2026-01-31; one of 2025-06-30 is older
    release = tmp_path / "xrechnung-3.0.2-xrechnung-validator-configuration-2025-06-30.zip"
    release.write_bytes(_zip(kosit_release("2025-06-30", "2.4.0")))
    before = snapshot(home)
    assert main(["rules", "add", str(release), "--no-optimise", "--valid-from", "2026-12-01"]) == 2
    said = capsys.readouterr().err
    assert "xrechnung 3.0.2-2025-06-30" in said and "older than the installed xrechnung 3.0.2 " in said, said
    assert snapshot(home) == before


def test_an_older_xrechnung_schematron_over_the_configuration_is_refused(home, tmp_path, capsys):
    # laid over the registry's configuration, which carries XRechnung Schematron 2.5.0, from its own day (2026-02-04)
    files = {n: d.replace(b"Schematron Version 2.5.0", b"Schematron Version 2.4.0")
             for n, d in _tree(RULES_SOURCE / "xrechnung/3.0.2").items()
             if n.startswith(("cii/", "ubl/")) or n == "common.sch"}
    release = tmp_path / "xrechnung-3.0.2-schematron-2.4.0.zip"
    release.write_bytes(_zip(files))
    before = snapshot(home)
    assert main(["rules", "add", str(release), "--no-optimise"]) == 2
    said = capsys.readouterr().err
    assert "xrechnung 3.0.2-2026-01-31-schematron-2.4.0 (XRechnung Schematron 2.4.0, " in said, said
    assert "older than the installed xrechnung 3.0.2 (XRechnung Schematron 2.5.0, " in said, said
    assert snapshot(home) == before


@pytest.mark.parametrize("day", ["2026-W49", "2026-W49-1", "20261201", "2026-12-1", " 2026-12-01"])
def test_valid_from_is_a_day_as_yyyy_mm_dd_only(home, tmp_path, capsys, day):
    release = tmp_path / "eInvoicing-EN16931-validation-1.3.17.zip"
    release.write_bytes(_zip(cen_release("1.3.17", "2026-11-01")))
    before = snapshot(home)
    with pytest.raises(SystemExit) as stop:
        main(["rules", "add", str(release), "--no-optimise", "--valid-from", day])
    assert stop.value.code == 2
    assert f"{day!r} is not a day of the calendar as YYYY-MM-DD" in capsys.readouterr().err
    assert snapshot(home) == before
