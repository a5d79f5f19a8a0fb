"""Where the command line writes a result, and under which name.

`pipeline convert a.xml --to UBL -o out/` wrote a FILE called `out` (argparse's Path drops the trailing slash): a
trailing slash now names a folder, made when missing, the result written inside it under its source's name (a file
where the folder should be is refused before the work); `generate` and `validate --html/--pdf`, which write one file,
refuse `out/` instead of writing `out`. A source named `x.cii.xml` converted to UBL kept its name in the folder: a
name saying the wrong syntax; the syntax named before `.xml` now follows the target (`x.ubl.xml`).
"""
from __future__ import annotations

import shutil

import pytest

from conftest import CORPUS, REPO
from pipeline.cli import main
from pipeline.cli.convert import named_for

CASES = CORPUS / "xrechnung-testsuite/business-cases/standard"
CII = CASES / "01.01a-INVOICE_uncefact.xml"
UBL = CASES / "01.01a-INVOICE_ubl.xml"


def _root(path) -> bytes:
    return path.read_bytes()[:600]


def test_a_trailing_slash_names_a_folder_made_when_missing(tmp_path, capsys):
    source = tmp_path / "x.cii.xml"
    shutil.copy(CII, source)
    out = tmp_path / "out"
    assert main(["convert", str(source), "--to", "UBL", "-o", f"{out}/"]) == 0, capsys.readouterr().err
    assert out.is_dir() and [p.name for p in out.iterdir()] == ["x.ubl.xml"]
    assert b"<Invoice" in _root(out / "x.ubl.xml") or b":Invoice" in _root(out / "x.ubl.xml")
    # the folder there now: the same, written inside it again
    assert main(["convert", str(source), "--to", "UBL", "-o", f"{out}/"]) == 0
    assert [p.name for p in out.iterdir()] == ["x.ubl.xml"]

    # parse and render read `-o p/` so too
    assert main(["parse", str(source), "-o", f"{tmp_path / 'p'}/"]) == 0, capsys.readouterr().err
    assert [p.name for p in (tmp_path / "p").iterdir()] == ["x.cii.xml.json"]
    assert main(["render", str(source), "--html", "-o", f"{tmp_path / 'r'}/"]) == 0, capsys.readouterr().err
    assert [p.name for p in (tmp_path / "r").iterdir()] == ["x.cii.xml.html"]


def test_a_file_where_the_folder_should_be_is_refused_before_the_work(tmp_path, capsys):
    (tmp_path / "taken").write_text("mine")
    capsys.readouterr()
    assert main(["convert", str(CII), "--to", "UBL", "-o", f"{tmp_path / 'taken'}/"]) == 2
    assert "taken/: is a file, not a folder" in capsys.readouterr().err
    assert (tmp_path / "taken").read_text() == "mine"
    assert main(["parse", str(CII), "--lang", "de", "-o", f"{tmp_path / 'taken'}/"]) == 2
    assert "taken/: ist eine Datei, kein Ordner" in capsys.readouterr().err


def test_one_file_outputs_refuse_a_folder_name(tmp_path, capsys):
    # generate writes one document: `gen/` names no file for it (it wrote a file called `gen`)
    request = REPO / "fixtures" / "invoice-all-fields.json"
    assert main(["generate", str(request), "-o", f"{tmp_path / 'gen'}/"]) == 2
    assert "gen/: names a folder (it ends in a separator); give a file name" in capsys.readouterr().err
    assert not (tmp_path / "gen").exists()
    assert main(["validate", str(CII), "--html", f"{tmp_path / 'rep'}/"]) == 2
    assert "rep/: names a folder" in capsys.readouterr().err
    assert not (tmp_path / "rep").exists()
    (tmp_path / "there").mkdir()
    assert main(["validate", str(CII), "--pdf", f"{tmp_path / 'there'}/"]) == 2
    assert "there/: is a folder" in capsys.readouterr().err


@pytest.mark.parametrize("name,target,expected", [
    ("x.cii.xml", "UBL", "x.ubl.xml"),
    ("x.CII.xml", "UBL", "x.UBL.xml"),
    ("01.01a-INVOICE_uncefact.xml", "UBL", "01.01a-INVOICE_ubl.xml"),
    ("01.01a-INVOICE_ubl.xml", "CII", "01.01a-INVOICE_cii.xml"),
    ("a-ubl.xml", "CII", "a-cii.xml"),
    ("x.cii.xml", "CII", "x.cii.xml"),          # the syntax it says is the target's
    ("x.ubl.xml", "UBL", "x.ubl.xml"),
    ("x.cii.xml", "ZUGFERD", "x.cii.xml"),      # a PDF carries the CII it names (x.cii.xml.pdf)
    ("acii.xml", "UBL", "acii.xml"),            # no word of its own
    ("cii.xml", "UBL", "cii.xml"),
    ("x.cii.pdf", "UBL", "x.cii.pdf"),          # named before .xml only
    ("mail.eml/x.cii.xml", "UBL", "mail.eml/x.ubl.xml"),
])
def test_the_syntax_a_name_says_follows_the_target(name, target, expected):
    assert named_for(name, target) == expected


def test_converted_folder_results_say_their_syntax_and_never_take_a_source(tmp_path, capsys):
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(CII, folder / "a.cii.xml")
    shutil.copy(UBL, folder / "a.ubl.xml")
    out = tmp_path / "out"
    assert main(["convert", str(folder), "--to", "UBL", "-o", str(out)]) in (0, 1), capsys.readouterr().err
    # the CII's result says UBL; the UBL's, named the same, gets its index in front
    assert sorted(p.name for p in out.iterdir()) == ["2-a.ubl.xml", "a.ubl.xml"]
    assert b"CrossIndustryInvoice" not in _root(out / "a.ubl.xml")
    capsys.readouterr()
    # into the folder read: the source a.ubl.xml, the name the CII's result would take, is never written over
    before = (folder / "a.ubl.xml").read_bytes()
    assert main(["convert", str(folder), "--to", "UBL", "-o", f"{folder}/"]) in (0, 1), capsys.readouterr().err
    assert (folder / "a.ubl.xml").read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == ["1-a.ubl.xml", "2-a.ubl.xml", "a.cii.xml", "a.ubl.xml"]
    assert b"CrossIndustryInvoice" not in _root(folder / "1-a.ubl.xml")


@pytest.mark.parametrize("command,said", [("convert", "x.cii.xml to UBL x.ubl.xml"), ("parse", "a.xml.json"),
                                          ("render", "per source")])
def test_help_says_where_results_go(command, said, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "ending in '/': made if missing" in text and said in text
