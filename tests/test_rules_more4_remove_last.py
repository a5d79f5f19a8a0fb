"""`pipeline rules remove` of the last pack that judges a spec's documents (issue 37): it said "removed ...; a running
service no longer chooses it" and nothing of what the service does now, which is to refuse every such document.
It now names the syntaxes no installed pack judges any more and what their requests get; removing a pack that
another one stands in for says nothing more."""
from __future__ import annotations

import pytest

from test_rules_add import CEN_CII, home, issued  # noqa: F401 - the fixture
from test_rules_add_shapes import cen_syntax_archive, late_ubl
from pipeline.cli import main
from pipeline.errors import ApiError
from pipeline.flows.validate_xml import validate_xml

NOTICE = "notice: no installed en16931 pack judges "


def test_removing_a_pack_another_stands_in_for_says_nothing_more(home, tmp_path, capsys):
    release = tmp_path / "en16931-cii-1.3.17.zip"
    release.write_bytes(cen_syntax_archive("cii"))
    assert main(["rules", "add", str(release), "--no-optimise"]) == 0
    capsys.readouterr()
    assert main(["rules", "remove", "en16931", "1.3.17"]) == 0
    assert NOTICE not in capsys.readouterr().out
    assert validate_xml(issued(CEN_CII.read_bytes(), "20261205"), "en16931").version == "1.3.16"


def test_removing_the_last_pack_of_a_syntax_or_spec_names_what_is_refused_now(home, tmp_path, capsys):
    release = tmp_path / "en16931-cii-1.3.17.zip"
    release.write_bytes(cen_syntax_archive("cii"))
    assert main(["rules", "add", str(release), "--no-optimise"]) == 0
    capsys.readouterr()
    # 1.3.17 judges CII only: without 1.3.16 no pack judges UBL
    assert main(["rules", "remove", "en16931", "1.3.16"]) == 0
    out = capsys.readouterr().out
    assert f"{NOTICE}UBL-CreditNote, UBL-Invoice documents now: they are refused" in out, out
    with pytest.raises(ApiError) as refused:
        validate_xml(late_ubl(), "en16931")
    assert refused.value.http_status == 400, refused.value.to_dict("r")

    assert main(["rules", "remove", "en16931", "1.3.17"]) == 0
    out = capsys.readouterr().out
    assert f"{NOTICE}CII documents now" in out and "(pipeline rules install, or rules add a release)" in out, out
    with pytest.raises(ApiError) as refused:
        validate_xml(CEN_CII.read_bytes(), "en16931")
    body = refused.value.to_dict("r")
    assert (refused.value.http_status, body["errors"][0]["code"]) == (500, "RULES_NOT_INSTALLED"), body
