"""Issue 37, `pipeline rules add` and the edition a CEN release judges. CEN's validation artefacts for EN 16931-1:2017
are the 1.x line (1.0.0 to 1.3.16). A release of another line (2.0.0, as the artefacts of EN 16931-1:2026 with its
own syntaxes may be numbered) was installed as just another en16931 version: from its day it judged every document
claiming the 2017 edition (`valid (en16931 2.0.0)`, with the 2017 UBL XSD taken from the installed pack), while a
document claiming the 2026 edition still got no rules. It is now refused with the reason, nothing left behind."""
from __future__ import annotations

import pytest

from pipeline.cli import main
from pipeline.flows.validate_xml import validate_xml
from test_rules_add import CEN_CII, _zip, cen_release, corpus, home, issued, snapshot  # noqa: F401 - fixtures
from test_verdict import edition_2026


@pytest.mark.parametrize("version", ["2.0.0", "0.9.1"])
def test_cen_artefacts_of_another_line_are_refused_and_2017_documents_keep_their_rules(home, corpus, tmp_path,
                                                                                        capsys, version):
    release = tmp_path / f"eInvoicing-EN16931-validation-{version}.zip"
    release.write_bytes(_zip(cen_release(version, "2026-11-01")))
    before = snapshot(home)
    assert main(["rules", "add", str(release), "--corpus", str(corpus)]) == 2
    said = capsys.readouterr().err
    assert said.startswith("pipeline rules add: ") and f"CEN validation artefacts {version}" in said
    assert "1.x line" in said and "EN 16931-1:2017" in said and said.rstrip().endswith("refused")
    assert main(["rules", "add", str(release), "--corpus", str(corpus), "--valid-from", "2026-12-01"]) == 2
    capsys.readouterr()
    assert snapshot(home) == before  # nothing half-installed
    # a 2017 document issued after the release's day is still judged by the 2017 rules; a 2026 one by none
    late = validate_xml(issued(CEN_CII.read_bytes(), "20261201"), "en16931")
    assert (late.verdict, late.version, [r.version for r in late.rules]) == ("valid", "1.3.16", ["1.3.16"])
    other = validate_xml(issued(edition_2026(), "20261201"), "en16931")
    assert (other.verdict, other.version, other.rules) == ("indeterminate", None, [])


def test_a_release_of_the_2017_line_is_still_added(home, corpus, tmp_path, capsys):
    release = tmp_path / "eInvoicing-EN16931-validation-1.3.17.zip"
    release.write_bytes(_zip(cen_release("1.3.17", "2026-11-01")))
    assert main(["rules", "add", str(release), "--corpus", str(corpus), "--no-optimise"]) == 0
    assert "added CEN validation artefacts: en16931 1.3.17" in capsys.readouterr().out
    assert validate_xml(issued(CEN_CII.read_bytes(), "20261201"), "en16931").version == "1.3.17"
