"""Issue 37, `pipeline rules add` of an FNFE release: it is laid over an installed fr-ctc pack, whose files it lacks
(the XSD, and here the EXTENDED-CTC-FR rules) it runs. It was always the newest pack, so that a release older than
an installed one ran the later release's files under its own name. Now it is the newest pack not newer than the
release, and a release older than every installed pack is refused, nothing left behind.

Releases are built from the installed fr-ctc pack's files (`test_rules_add_publishers.france_rfe`), restated as other
versions."""
from __future__ import annotations

from pipeline.check import packs
from pipeline.cli import main
from test_rules_add import _zip, home, snapshot  # noqa: F401 - the fixture
from test_rules_add_publishers import france_rfe

EXTENDED = "cii/extended-ctc-fr/EXTENDED-CTC-FR-CII.xslt"  # in the pack; the release's own copy is left out below


def _release(tmp_path, version: str, marked: bool = False, extended: bool = True):
    """FNFE's tag archive of `version`; `marked`: its EXTENDED-CTC-FR CII rules changed (a comment), so that the
    pack holding them is known; `extended=False`: without them (taken from the pack it is laid over)."""
    files = france_rfe(f"France_RFE-{version}/")
    for name in [n for n in files if n.endswith("EXTENDED-CTC-FR-CII.xslt")]:
        if not extended:
            del files[name]
        elif marked:
            files[name] += f"<!-- {version} -->".encode()
    path = tmp_path / f"France_RFE-{version}.zip"
    path.write_bytes(_zip(files))
    return path


def test_an_older_release_is_laid_over_the_newest_pack_not_newer_than_it(home, tmp_path, capsys):  # noqa: F811
    installed = packs.latest_active("fr-ctc")
    later = _release(tmp_path, "1.4.0.99", marked=True)
    assert main(["rules", "add", str(later), "--no-optimise", "--valid-from", "2026-10-01"]) == 0
    assert (packs.get_pack("fr-ctc", "1.4.0.99").root / EXTENDED).read_bytes().endswith(b"<!-- 1.4.0.99 -->")
    capsys.readouterr()
    between = _release(tmp_path, "1.4.0.50", extended=False)
    assert main(["rules", "add", str(between), "--no-optimise", "--valid-from", "2026-09-01"]) == 0
    assert f"its other files: taken from the installed {installed.key}" in capsys.readouterr().out
    # its EXTENDED-CTC-FR rules are those of the release before it, not those of 1.4.0.99
    pack = packs.get_pack("fr-ctc", "1.4.0.50")
    assert (pack.root / EXTENDED).read_bytes() == (installed.root / EXTENDED).read_bytes()
    assert packs.read_manifest(pack.root)[packs.ADDED]["taken"] == {"": installed.key}


def test_a_release_older_than_every_installed_pack_is_refused_with_nothing_left(home, tmp_path, capsys):  # noqa: F811
    oldest = min((p.version for p in packs.list_installed() if p.spec == "fr-ctc"), key=packs.version_key)
    before = snapshot(home)
    older = _release(tmp_path, "1.3.9.01")
    assert main(["rules", "add", str(older), "--no-optimise", "--valid-from", "2025-09-01"]) == 2
    said = capsys.readouterr().err
    assert f"the FNFE release 1.3.9.01 is older than every installed fr-ctc pack (the oldest is {oldest})" in said
    assert said.rstrip().endswith("refused")
    assert snapshot(home) == before
