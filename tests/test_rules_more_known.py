"""Issue 37, `pipeline rules list` and the releases the registry knows to exist (`known` in registry/packs.json:
XRechnung Schematron 2.6.0): named as not installed while no installed pack carries it, so that an operator sees a
stale install, but not once a later release of the same name is installed (2.6.1 added: the list still said 2.6.0
was missing, calling a current install stale)."""
from __future__ import annotations

import pytest

from conftest import RULES_SOURCE
from pipeline.cli import main
from test_rules_add import _tree, _zip, corpus, home, listed  # noqa: F401 - fixtures


def _schematron_release(tmp_path, version: str):
    """The XRechnung Schematron release (cii/, ubl/ of its zip) of the installed 3.0.2 pack, restated as `version`."""
    files = {n: d.replace(b"Schematron Version 2.5.0", f"Schematron Version {version}".encode())
             for n, d in _tree(RULES_SOURCE / "xrechnung/3.0.2").items()
             if n.startswith(("cii/", "ubl/")) or n == "common.sch"}
    release = tmp_path / f"xrechnung-3.0.2-schematron-{version}.zip"
    release.write_bytes(_zip(files))
    return release


@pytest.mark.parametrize("version, stale", [("2.6.1", False), ("2.10.0", False), ("2.5.1", True)])
def test_a_later_release_of_the_known_ones_name_is_no_stale_install(home, corpus, tmp_path, capsys, version, stale):
    known = "XRechnung Schematron 2.6.0"
    assert [k["release"] for k in listed(capsys)["notInstalled"]] == [known]
    assert main(["rules", "add", str(_schematron_release(tmp_path, version)), "--corpus", str(corpus),
                 "--no-optimise"]) == 0
    capsys.readouterr()
    assert [k["release"] for k in listed(capsys)["notInstalled"]] == ([known] if stale else [])
    assert main(["rules", "list"]) == 0
    assert (f"not installed: xrechnung {known}" in capsys.readouterr().out) == stale
