"""The `pipeline` command on the ZUGFeRD path: generate a PDF, validate it (PDF detected by its header), and
run the page stages (html, pdf) one at a time as a template author does. Verdicts come from the official
rules and the PDF checks, not from strings we wrote."""
from __future__ import annotations

import json

import pikepdf

from pipeline.cli import main
from pipeline.cli.golden import FIXTURES

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
             (["validate", str(missing)], "No such file or directory", missing),
             (["generate", str(REQUEST), "-o", str(tmp_path / "no" / "x.xml")], "No such file or directory",
              tmp_path / "no" / "x.xml")]
    for argv, why, path in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err == f"pipeline {argv[0]}: {why}: {path}\n", argv
