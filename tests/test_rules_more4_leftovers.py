"""Issue 37's left-overs, as an operator and a client meet them: a release folder with a file that cannot be read is
refused in a line (it was a traceback); a corpus document that cannot be read while the copies are proven leaves
the original running (it was "the rules home could not be written", and nothing was added); a damaged or modified
pack's 500 names the pack, never the server's folders (the whole path stays in the log and in `rules list`)."""
from __future__ import annotations

import logging
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import CORPUS
from pipeline.check import packs
from pipeline.cli import main
from pipeline.errors import ApiError, without_paths
from pipeline.flows.validate_xml import validate_xml
from test_rules_add import (CEN_CII, _zip, cen_release, corpus, home, issued, listed,  # noqa: F401 - fixtures
                            snapshot)

PEPPOL_SB = CORPUS / "peppol/2026.5/SB-base-example.xml"


@contextmanager
def _unreadable(name: str):
    """Path.read_bytes of a file called `name` fails as a file on a damaged disk or without permission does (the
    tests run as root, whom no file mode stops). A context of its own: undoing the test's monkeypatch would also
    undo the `home` fixture's rules home, and the next `rules add` would write to the real one."""
    read = Path.read_bytes

    def failing(self):
        if self.name == name:
            raise PermissionError(13, "Permission denied", str(self))
        return read(self)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(Path, "read_bytes", failing)
        yield


def test_a_release_folder_with_a_file_that_cannot_be_read_is_refused_in_a_line(home, tmp_path, capsys):
    folder = tmp_path / "eInvoicing-EN16931-validation-1.3.17"
    for name, data in cen_release().items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    before = snapshot(home)
    with _unreadable("EN16931-CII-validation.xslt"):
        assert main(["rules", "add", str(folder), "--no-optimise"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("pipeline rules add: ") and "Traceback" not in said, said
    assert "cannot be read (Permission denied: " in said and "EN16931-CII-validation.xslt" in said, said
    assert "nothing was installed" in said and snapshot(home) == before
    assert main(["rules", "add", str(folder), "--no-optimise"]) == 0  # readable again: added, to this home
    assert (home / "en16931/1.3.17" / packs.MANIFEST_NAME).is_file()


def test_a_corpus_document_that_cannot_be_read_leaves_the_original_running_and_the_release_added(
        home, corpus, tmp_path, capsys):
    release = tmp_path / "cen.zip"
    release.write_bytes(_zip(cen_release()))
    with _unreadable(CEN_CII.name):
        assert main(["rules", "add", str(release), "--corpus", str(corpus)]) == 0
    out = capsys.readouterr().out
    assert "could not be written" not in out and (home / "en16931/1.3.17" / packs.MANIFEST_NAME).is_file()
    assert "the original runs (a corpus document could not be read (Permission denied: " in out, out
    pack = next(p for p in listed(capsys)["packs"] if (p["spec"], p["version"]) == ("en16931", "1.3.17"))
    assert any("could not be read" in why for why in pack["originals"].values()), pack["originals"]
    late = validate_xml(issued(CEN_CII.read_bytes(), "20261102"), "en16931")
    assert (late.version, late.verdict) == ("1.3.17", "valid")  # the originals judge


def _refused(data: bytes, spec: str) -> ApiError:
    packs.clear_caches()
    with pytest.raises(ApiError) as caught:
        validate_xml(data, spec)
    return caught.value


def test_a_damaged_or_modified_pack_is_named_to_the_client_without_the_servers_paths(home, caplog):
    (home / "peppol/2026.5" / packs.MANIFEST_NAME).write_text('{"spec": "peppol", "fi')
    sheet = next((home / "en16931/1.3.16").rglob("EN16931-CII-validation.xslt"))
    sheet.write_bytes(sheet.read_bytes() + b"\n<!-- changed by hand -->")
    with caplog.at_level(logging.WARNING, logger="pipeline.errors"):
        for data, spec, named in ((PEPPOL_SB.read_bytes(), "peppol", "(…/2026.5/.pack.json) cannot be read"),
                                  (CEN_CII.read_bytes(), "en16931", "en16931 1.3.16 in …/en16931/1.3.16 was modified")):
            error = _refused(data, spec)
            body = error.to_dict("r")
            assert (error.http_status, body["errorCode"], body["errors"][0]["code"]) == (
                500, "INTERNAL_ERROR", "RULES_UNAVAILABLE"), body
            assert named in body["message"] and named in body["errors"][0]["message"], body
            assert str(home) not in str(body) and "/tmp" not in str(body), body
    logged = caplog.text
    assert str(home / "peppol/2026.5" / packs.MANIFEST_NAME) in logged and str(home / "en16931/1.3.16") in logged


@pytest.mark.parametrize("said, shown", [
    ("cannot read the pack registry /srv/app/registry/packs.json: bad", "cannot read the pack registry "
                                                                        "…/registry/packs.json: bad"),
    ("at file:///root/.cache/einvoice-pipeline/rules/en16931/1.3.16/x.xslt line 3",
     "at …/1.3.16/x.xslt line 3"),
    ("not installed in /root/.cache/einvoice-pipeline/rules.", "not installed in …/einvoice-pipeline/rules."),
    # what is no path of the server stays: an XPath, a fraction, a relative name, a URN
    ("/rsm:CrossIndustryInvoice/rsm:ExchangedDocument 1/2 cii/xslt/a.xslt urn:cen.eu:en16931:2017",
     "/rsm:CrossIndustryInvoice/rsm:ExchangedDocument 1/2 cii/xslt/a.xslt urn:cen.eu:en16931:2017"),
])
def test_paths_are_cut_to_what_names_the_pack(said, shown):
    assert without_paths(said) == shown
