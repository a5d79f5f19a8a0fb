"""The `pipeline` command on the ZUGFeRD path: generate a PDF, validate it (PDF detected by its header), and
run the page stages (html, pdf) one at a time as a template author does. Verdicts come from the official
rules and the PDF checks, not from strings we wrote."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pikepdf
import pytest

from conftest import CORPUS
from mailbuild import zipped
from pipeline.cli import main
from pipeline.cli.golden import FIXTURES
from test_platform_helpers import REPO
from tests.test_jobs import documents

REQUEST = FIXTURES / "vat-g-export.json"


def test_generate_zugferd_then_validate_the_pdf(tmp_path, capsys):
    pdf = tmp_path / "invoice.pdf"
    assert main(["generate", str(REQUEST), "--spec", "zugferd", "--lang", "de", "-o", str(pdf)]) == 0
    assert main(["validate", str(pdf), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] and report["syntax"] == "CII" and report["version"].endswith("EN16931")
    with pikepdf.open(pdf) as doc:
        assert "factur-x.xml" in doc.attachments


def test_generate_zugferd_profile_override(tmp_path, capsys):
    pdf = tmp_path / "invoice.pdf"
    assert main(["generate", str(REQUEST), "--spec", "zugferd", "--profile", "BASIC", "-o", str(pdf)]) == 0
    assert main(["validate", str(pdf), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["version"].endswith("BASIC")


def test_validate_a_damaged_pdf_is_an_error_not_a_crash(tmp_path, capsys):
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 100)
    assert main(["validate", str(broken)]) == 2
    assert "pipeline validate:" in capsys.readouterr().err


def test_run_html_and_pdf_stages(tmp_path, capsysbinary):
    canonical = tmp_path / "canonical.xml"
    assert main(["run", "normalize", str(REQUEST)]) == 0
    canonical.write_bytes(capsysbinary.readouterr().out)
    assert main(["run", "html", str(canonical), "--lang", "de", "--profile-label", "EN 16931"]) == 0
    html = capsysbinary.readouterr().out
    number = json.loads(REQUEST.read_bytes())["invoice"]["invoiceNumber"]
    assert number.encode() in html and b"Rechnungsnummer" in html
    page = tmp_path / "page.html"
    page.write_bytes(html)
    pages = tmp_path / "pages.pdf"
    assert main(["run", "pdf", str(page), "-o", str(pages)]) == 0
    with pikepdf.open(pages) as doc:
        assert len(doc.pages) >= 1 and "/OutputIntents" in doc.Root


def test_run_html_rejects_an_unsupported_language(tmp_path, capsys):
    canonical = tmp_path / "canonical.xml"
    canonical.write_bytes(b"<invoice xmlns='urn:einvoice-pipeline:canonical:1'/>")
    assert main(["run", "html", str(canonical), "--lang", "fr"]) == 1
    assert "UNSUPPORTED_LANGUAGE" in capsys.readouterr().err


def test_files_that_cannot_be_read_or_written_are_named_not_a_traceback(tmp_path, capsys):
    """Every command: a missing input, a folder given as input, or an output in a missing folder -> exit 2 (could not
    run) with one line naming the file."""
    missing = tmp_path / "missing.json"
    cases = [(["generate", str(missing)], "No such file or directory", missing),
             (["run", "normalize", str(missing)], "No such file or directory", missing),
             (["run", "transform", str(tmp_path), "--to", "cii"], "Is a directory", tmp_path),
             (["run", "pdf", str(missing)], "No such file or directory", missing),
             (["validate", str(missing)], "No such file or directory", missing)]
    for argv, why, path in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        command = " ".join(argv[:2] if argv[0] == "run" else argv[:1])  # a stage is named with its command
        assert err == f"pipeline {command}: {why}: {path}\n", argv
    # an output in a missing folder is refused before the work, which was done and then lost
    out = tmp_path / "no" / "x.xml"
    for argv in (["generate", str(REQUEST), "-o", str(out)], ["validate", str(missing), "--html", str(out)],
                 ["run", "pdf", str(missing), "-o", str(out)]):
        assert main(argv) == 2, argv
        command = " ".join(argv[:2] if argv[0] == "run" else argv[:1])
        assert capsys.readouterr().err == f"pipeline {command}: {out}: its folder {out.parent} does not exist\n"


# ---- what a newcomer trips over (issue 27) ----------------------------------------------------------------------

def test_validate_an_empty_folder_is_an_error_and_skipped_files_are_named(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["validate", str(empty)]) == 2
    assert "no e-invoice (*.xml, *.pdf, *.eml, *.mbox, *.msg, *.p7m or *.zip) in" in capsys.readouterr().err
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "notes.txt").write_text("not an invoice")
    (folder / "a.xml").write_bytes((CORPUS / "kosit-validator-configuration-tests/instances/ubl006.xml").read_bytes())
    assert main(["validate", str(folder), "--jobs", "1", "--spec", "en16931"]) == 1
    out = capsys.readouterr()
    assert "skipped 1 file that is not *.xml, *.pdf, *.eml, *.mbox, *.msg, *.p7m or *.zip: notes.txt" in out.err
    # the summary table names each invalid document's first error code
    row = next(line for line in out.out.splitlines() if line.startswith("a.xml"))
    from pipeline.flows.validate_xml import validate_xml
    report = validate_xml((folder / "a.xml").read_bytes(), "en16931", content_checks=True)
    assert "INVALID" in row and row.split()[-1] == next(i.code for i in report.issues if i.severity == "ERROR")
    assert "1 document: 0 valid, 1 invalid" in out.out


def test_a_folders_zips_are_opened_as_a_named_zip_is(tmp_path, capsys):
    """A ZIP in a folder was skipped (the page sends a folder's ZIPs): each member is a document, named under the
    ZIP's path in the folder, the same verdicts as the ZIP named; a ZIP inside it is refused (NESTED_ARCHIVE)."""
    valid, invalid = documents()
    folder = tmp_path / "month"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.xml").write_bytes(valid)
    pack = folder / "sub" / "pack.zip"
    pack.write_bytes(zipped([("b.xml", valid), ("c.xml", invalid), ("inner.zip", zipped([("d.xml", valid)]))]))
    (folder / "damaged.zip").write_bytes(b"PK\x03\x04 cut short")
    assert main(["validate", str(folder), "--json", "--jobs", "1"]) == 2  # the nested ZIP: an error entry
    out = capsys.readouterr()
    assert "skipped" not in out.err
    results = {r["name"]: r for r in json.loads(out.out)["results"]}
    assert sorted(results) == ["a.xml", "damaged.zip", "sub/pack.zip/b.xml", "sub/pack.zip/c.xml",
                               "sub/pack.zip/inner.zip"]
    assert results["damaged.zip"]["error"]["code"] == "INVALID_ARCHIVE"  # one entry, not the run refused
    assert results["sub/pack.zip/inner.zip"]["error"]["code"] == "NESTED_ARCHIVE"
    main(["validate", str(pack), "--json", "--jobs", "1"])
    named = {r["name"]: r for r in json.loads(capsys.readouterr().out)["results"]}
    for member in ("b.xml", "c.xml"):
        assert results[f"sub/pack.zip/{member}"]["report"]["valid"] == named[member]["report"]["valid"]
    assert results["sub/pack.zip/b.xml"]["report"]["valid"] and not results["sub/pack.zip/c.xml"]["report"]["valid"]


def test_a_file_name_that_is_no_utf8_is_named_as_it_reads_not_a_traceback(tmp_path, capsys):
    """A folder copied from a Windows share holds "Rüchnung.xml" in CP1252; Python keeps the byte as a lone
    surrogate, which the HTML report (and JSON on a strict UTF-8 terminal, and a job's ZIP) could not write."""
    folder = tmp_path / "share"
    folder.mkdir()
    odd = Path(os.fsdecode(bytes(folder) + "/Rüchnung.xml".encode("cp1252")))
    odd.write_bytes((CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml").read_bytes())
    pages = tmp_path / "pages"
    assert main(["validate", str(folder), "--jobs", "1", "--json", "--html-dir", str(pages)]) == 0
    assert [r["name"] for r in json.loads(capsys.readouterr().out)["results"]] == ["Rüchnung.xml"]
    assert "Rüchnung.xml" in (pages / "Rüchnung.xml.html").read_text(encoding="utf-8")
    out = tmp_path / "converted"
    out.mkdir()  # an existing folder takes the result even for one document
    assert main(["convert", str(odd), "--to", "CII", "-o", str(out), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["name"].endswith("Rüchnung.xml") and said["output"] == str(out / "Rüchnung.xml")
    assert (out / odd.name).exists()


def test_errors_of_parse_convert_render_are_readable_lines(tmp_path, capsys):
    notes = tmp_path / "notes.xml"
    notes.write_text("<notes>hello</notes>")
    for argv in (["parse", str(notes)], ["convert", str(notes), "--to", "ubl", "-o", str(tmp_path / "x.xml")],
                 ["render", str(notes), "-o", str(tmp_path / "x.pdf")]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith(f"{notes}: NOT_AN_EINVOICE: "), err
        assert "{" not in err and '"errorCode"' not in err  # no JSON blob


def test_a_bad_flag_shows_the_subcommands_usage_and_help_states_exit_codes(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["validate", "--bogus", "x.xml"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: pipeline validate") and "unrecognized arguments: --bogus" in err
    with pytest.raises(SystemExit):
        main(["run", "transform", "--nope", "x.xml"])
    assert capsys.readouterr().err.startswith("usage: pipeline run transform")
    for argv in (["validate", "--help"], ["keys", "create", "--help"], ["serve", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        assert "exit codes: 0" in " ".join(capsys.readouterr().out.split()), argv


def test_run_transform_names_the_input_and_says_it_once(tmp_path, capfd):
    notes = tmp_path / "notes.xml"
    notes.write_text("<notes>hello</notes>")
    assert main(["run", "transform", str(notes)]) == 1
    err = capfd.readouterr().err
    assert err.strip() == (f"pipeline run transform: {notes}: cii.xsl: the input is not a canonical invoice "
                           "(urn:einvoice-pipeline:canonical:1 invoice)")


def test_a_stylesheet_copied_out_of_xslt_finds_common(tmp_path, capfd):
    canonical = tmp_path / "canonical.xml"
    assert main(["run", "normalize", str(REPO / "fixtures" / "vat-g-export.json")]) == 0
    canonical.write_bytes(capfd.readouterr().out.encode())
    copy = tmp_path / "my-cii.xsl"
    copy.write_bytes((REPO / "xslt" / "cii.xsl").read_bytes())
    assert main(["run", "transform", str(canonical), "--xslt", str(copy)]) == 0
    ours = capfd.readouterr().out
    assert main(["run", "transform", str(canonical)]) == 0
    assert capfd.readouterr().out == ours and "CrossIndustryInvoice" in ours
    # an error in a copy names the copy's file and line
    broken = tmp_path / "broken-cii.xsl"
    broken.write_text(copy.read_text().replace('<xsl:template match="/">',
                                               '<xsl:template match="/"><xsl:value-of select="xs:integer(\'x\')"/>', 1))
    assert main(["run", "transform", str(canonical), "--xslt", str(broken)]) == 2
    line = next(n for n, text in enumerate(broken.read_text().splitlines(), 1) if '<xsl:template match="/">' in text)
    assert f"line {line} of broken-cii.xsl" in capfd.readouterr().err
