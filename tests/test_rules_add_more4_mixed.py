"""`pipeline rules add` of one archive holding releases of two kinds (issue 37): an operator's folder of downloads
zipped as one, or KoSIT's bundle unpacked side by side. The first kind recognised was installed and the other
release dropped, unsaid (a KoSIT configuration beside a CEN release: "added" the configuration, CEN's rules never
went in). Such an archive is refused naming both, and nothing is left behind; a KoSIT configuration's own XRechnung
stylesheets, below its folder, are no second release."""
from __future__ import annotations

import pytest

from test_rules_add import _zip, cen_release, home, kosit_release, peppol_release, snapshot  # noqa: F401
from pipeline.cli import main


def _below(folder: str, files: dict[str, bytes]) -> dict[str, bytes]:
    return {f"{folder}/{n}": d for n, d in files.items()}


def _schematron_beside(config: dict[str, bytes]) -> dict[str, bytes]:
    """The XRechnung Schematron release's stylesheets in a folder of their own (KoSIT's bundle unpacked)."""
    return {f"xrechnung-schematron/validation/{n.rsplit('/', 1)[1]}": d for n, d in config.items()
            if n.endswith("-validation.xsl") and "/XRechnung-" in n}


CASES = {
    "configuration and CEN": (lambda: {**_below("kosit", kosit_release()), **_below("cen", cen_release())},
                              "KoSIT validator configuration (xrechnung 3.0.2-2026-08-31) and CEN validation "
                              "artefacts: cen/"),
    "CEN and Peppol": (lambda: {**_below("cen", cen_release()), **_below("peppol", peppol_release())},
                       "CEN validation artefacts (en16931 1.3.17) and Peppol BIS release: peppol/"),
    "configuration and a Schematron release beside it": (
        lambda: {**_below("kosit", kosit_release()), **_schematron_beside(kosit_release())},
        "KoSIT validator configuration (xrechnung 3.0.2-2026-08-31) and XRechnung Schematron release: "
        "xrechnung-schematron/validation/XRechnung-"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_archive_of_two_kinds_of_release_is_refused_naming_both(home, tmp_path, capsys, case):
    made, named = CASES[case]
    files = made()
    release = tmp_path / "downloads.zip"
    release.write_bytes(_zip(files))
    before = snapshot(home)
    assert main(["rules", "add", str(release), "--no-optimise"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("pipeline rules add: downloads.zip holds releases of more than one kind, "), said
    assert named in said and said.rstrip().endswith("add each release on its own: refused"), said
    assert snapshot(home) == before


def test_a_configuration_with_its_own_xrechnung_stylesheets_is_one_release(home, tmp_path, capsys):
    assert _schematron_beside(kosit_release())  # it holds them, below its folder
    release = tmp_path / "xrechnung-3.0.2-validator-configuration-2026-08-31.zip"
    release.write_bytes(_zip(_below("validator-configuration", kosit_release())))
    assert main(["rules", "add", str(release), "--no-optimise"]) == 0
    assert "added KoSIT validator configuration: xrechnung 3.0.2-2026-08-31" in capsys.readouterr().out
