"""`pipeline rules add` of a KoSIT validator configuration: the XRechnung Schematron version it is listed with is the
one its stylesheets state, never only what its description says. A configuration whose description named 2.6.0 over
the 2.5.0 stylesheets was installed as "XRechnung Schematron 2.6.0", and `pipeline rules list` stopped naming 2.6.0
as not installed while the 2.5.0 rules judged: a stale install shown as current. Built here from ../shared/rules's
configuration of XRechnung 3.0.2, dated later."""
from __future__ import annotations

import re

from test_rules_add import XR_UBL, _zip, home, kosit_release, listed, snapshot  # noqa: F401 - the fixture
from pipeline.check import packs
from pipeline.cli import main
from pipeline.flows.validate_xml import validate_xml

SHEETS = ("resources/xrechnung/3.0.2/xsl/XRechnung-CII-validation.xsl",
          "resources/xrechnung/3.0.2/xsl/XRechnung-UBL-validation.xsl")


def _configuration(described: str | None, **stated: str) -> dict[str, bytes]:
    """The configuration of 2026-08-31 whose description names XRechnung Schematron `described` (None: no version
    at all) and whose XRechnung stylesheets state `stated` (CII=..., UBL=...)."""
    files = kosit_release("2026-08-31", described or "2.6.0")
    for sheet in SHEETS:
        syntax = "CII" if "-CII-" in sheet else "UBL"
        files[sheet] = re.sub(rb"Schematron Version \d+\.\d+\.\d+", f"Schematron Version {stated[syntax]}".encode(),
                              files[sheet])
    if described is None:
        files["scenarios.xml"] = re.sub(rb"Schematron Rules version \d+\.\d+\.\d+", b"Schematron Rules",
                                        files["scenarios.xml"])
    return files


def _not_installed(capsys) -> list[str]:
    return [k["release"] for k in listed(capsys)["notInstalled"] if k["spec"] == "xrechnung"]


def test_a_description_the_stylesheets_contradict_is_refused_and_the_stale_install_still_named(home, tmp_path,
                                                                                                capsys):
    assert _not_installed(capsys) == ["XRechnung Schematron 2.6.0"]
    for files, said in [(_configuration("2.6.0", CII="2.5.0", UBL="2.5.0"),
                         "its description names XRechnung Schematron 2.6.0, but the stylesheets of the release state "
                         f"{SHEETS[0]}: 2.5.0, {SHEETS[1]}: 2.5.0"),
                        (_configuration("2.6.0", CII="2.6.0", UBL="2.5.0"), f"{SHEETS[1]}: 2.5.0"),
                        (_configuration(None, CII="2.6.0", UBL="2.5.0"),
                         f"stylesheets state different versions ({SHEETS[0]}: 2.6.0, {SHEETS[1]}: 2.5.0)")]:
        release = tmp_path / "xrechnung-3.0.2-validator-configuration-2026-08-31.zip"
        release.write_bytes(_zip(files))
        before = snapshot(home)
        assert main(["rules", "add", str(release), "--no-optimise"]) == 2
        err = capsys.readouterr().err
        assert said in err and err.rstrip().endswith("refused"), err
        assert snapshot(home) == before
    # nothing was installed, so the operator is still told that 2.6.0 is missing
    assert _not_installed(capsys) == ["XRechnung Schematron 2.6.0"]
    assert [p.version for p in packs.list_installed() if p.spec == "xrechnung"] == ["3.0.2"]


def test_the_version_the_stylesheets_state_is_the_one_listed_and_it_judges_from_its_day(home, tmp_path, capsys):
    # the description names none: the stylesheets say which Schematron release the configuration runs
    release = tmp_path / "xrechnung-3.0.2-validator-configuration-2026-08-31.zip"
    release.write_bytes(_zip(_configuration(None, CII="2.6.0", UBL="2.6.0")))
    assert main(["rules", "add", str(release), "--no-optimise"]) == 0
    assert "XRechnung Schematron 2.6.0, KoSIT validator configuration 2026-08-31" in capsys.readouterr().out
    assert _not_installed(capsys) == []
    added = packs.get_pack("xrechnung", "3.0.2-2026-08-31")
    assert added.release.startswith("XRechnung Schematron 2.6.0, ")
    xml = XR_UBL.read_bytes()
    late = xml.replace(b"<cbc:IssueDate>2016-04-04</cbc:IssueDate>", b"<cbc:IssueDate>2026-08-31</cbc:IssueDate>")
    assert late != xml
    report = validate_xml(late, "xrechnung")
    assert (report.verdict, report.version) == ("valid", "3.0.2-2026-08-31"), report.to_dict()
    assert validate_xml(xml, "xrechnung").version == "3.0.2"
