"""The command line as a person meets it (issue 38): what it says without a key, at the end of a closed pipe, about a
font's harmless header date, about a refused field, and which rules it picks without --spec (as the web page and a
job's "auto" do: pipeline.check.detect); `pipeline jobs` and `pipeline parse` with --lang de say everything in German
but the codes, paths and JSON (as `pipeline validate --lang de`)."""
from __future__ import annotations

import json
import re
import subprocess
import sys

from conftest import CORPUS, SHARED
from test_jobs import documents
from test_platform_helpers import REPO, cli, free_port, serve_with_key

PEPPOL = CORPUS / "peppol/2026.5/billing/base-example.xml"
FRENCH = REPO / "fixtures/golden/fr-b2b-goods.fr-ctc.cii.xml"
# a ZUGFeRD 1.0 PDF whose embedded fonts' headers date from 1904-1970: fontTools warned "'modified' timestamp seems
# very low" on stderr while pikepdf's PDF/A check read them
OLD_FONTS = SHARED / "realworld/corpus/ZUGFeRDv1/correct/Intarsys/ZUGFeRD_1p0_BASIC_Rechnungskorrektur.pdf"


def test_jobs_without_a_key_say_so_and_how_to_give_one(tmp_path):
    run = cli({"EINVOICE_API_KEY": "", "EINVOICE_URL": f"http://127.0.0.1:{free_port()}"},
              "jobs", "submit", str(REPO / "fixtures"))
    assert run.returncode == 2
    assert "no API key given" in run.stderr and "EINVOICE_API_KEY" in run.stderr and "--key" in run.stderr
    assert "einv_" not in run.stderr


def test_a_closed_pipe_ends_the_command_quietly():
    """`pipeline validate FOLDER --json | head -1`: the reader goes after one line; no BrokenPipeError traceback."""
    folder = CORPUS / "xrechnung-schematron-tests/cii"
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", "validate", str(folder), "--json", "--jobs", "2"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()  # as head does after its line
    _, err = proc.communicate(timeout=600)
    assert first.startswith(b"{")
    assert b"Traceback" not in err and b"BrokenPipeError" not in err, err.decode()[-2000:]


def test_no_font_header_noise_on_stderr():
    run = cli({}, "validate", str(OLD_FONTS))
    assert run.returncode in (0, 1, 3), run.stderr   # (3: indeterminate, a PDF/A part not checked)
    assert "timestamp" not in run.stderr, run.stderr


def test_a_refused_field_is_named_once():
    run = cli({}, "generate", str(REPO / "fixtures/fr-b2b-goods.json"), "--spec", "xrechnung", "-o", "/dev/null")
    assert run.returncode == 1
    assert "config.spec: contradicts the endpoint" in run.stderr and "config.spec: config.spec" not in run.stderr


def test_without_spec_the_rules_are_detected_as_the_page_does(tmp_path):
    """A Peppol invoice is checked on the Peppol rules (it got XRECHNUNG-NO-SCENARIO), a French one on the French
    rules: without its PMD note BR-FR-05 fails (EN 16931 alone called it valid)."""
    run = cli({}, "validate", str(PEPPOL))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "(peppol " in run.stdout.splitlines()[0] and "XRECHNUNG-NO-SCENARIO" not in run.stdout
    french = tmp_path / "facture.xml"
    french.write_bytes(FRENCH.read_bytes().replace(b"<ram:SubjectCode>PMD</ram:SubjectCode>",
                                                   b"<ram:SubjectCode>AAI</ram:SubjectCode>"))
    run = cli({}, "validate", str(french))
    assert run.returncode == 1 and "(fr-ctc " in run.stdout and "BR-FR-05" in run.stdout, run.stdout


# English words of these commands' own messages and tables that a German line must not carry (the codes, field paths,
# file names and job ids are taken out before looking: `_words`)
# (not "credits": the German texts call them Credits too, strings.json and openapi_de.json)
ENGLISH = {"job", "state", "documents", "valid", "invalid", "indeterminate", "errors", "done", "running", "queued",
           "failed", "cancelled", "charged", "created", "operation", "validate", "parse", "deleted",
           "missing", "incomplete", "skipped", "file", "files", "not", "the", "is", "no", "given", "what", "comes",
           "next", "give", "need", "several", "readable", "archive", "with", "its", "results"}


def _words(text: str, *names: str) -> set[str]:
    """The lower-case words of `text`, without the command's name, its codes (NOT_AN_EINVOICE, XML-MALFORMED),
    options (--after), environment variables, the file and job names given, and the ISO dates of the job list."""
    for name in names:
        text = text.replace(name, " ")
    text = re.sub(r"pipeline \w+|--?[a-z][\w-]*|\b[A-Z][A-Z0-9_-]{2,}\b|`[^`]*`|\S+/\S+|\d{4}-\d\d-\d\dT\S+", " ", text)
    return set(re.findall(r"[a-zäöüß]+", text.lower()))


def test_parse_in_german_says_its_refusals_and_skipped_files_in_german(tmp_path):
    note, damaged, folder = tmp_path / "notiz.txt", tmp_path / "kaputt.zip", tmp_path / "ordner"
    note.write_text("keine Rechnung")
    damaged.write_bytes(b"PK\x03\x04" + b"x" * 40)
    folder.mkdir()
    (folder / "liesmich.txt").write_text("-")
    (folder / "a.xml").write_bytes(documents()[0])
    run = cli({}, "parse", str(note), str(damaged), str(folder), "--lang", "de", "-o", str(tmp_path / "out"))
    assert run.returncode == 2
    err = run.stderr
    assert "NOT_AN_EINVOICE: Die Datei ist keine lesbare E-Rechnung" in err, err
    assert "XML-MALFORMED file: Die Datei ist kein wohlgeformtes XML" in err, err
    assert "INVALID_ARCHIVE: Das ZIP-Archiv ist nicht lesbar" in err, err
    assert "1 Datei übersprungen" in err and "liesmich.txt" in err, err
    assert not _words(err, str(note), str(damaged), str(folder), "liesmich.txt", " file:") & ENGLISH, err  # (a path)
    assert json.loads((tmp_path / "out" / "a.xml.json").read_text())["complete"] is True  # the JSON as in English
    several = cli({}, "parse", str(note), str(damaged), "--lang", "de")
    assert several.returncode == 2 and several.stderr.strip() == "pipeline parse: mehrere Dateien brauchen -o ORDNER"
    english = cli({}, "parse", str(note))  # (English stays the default)
    assert "NOT_AN_EINVOICE: The file is not a readable" in english.stderr, english.stderr


def test_convert_in_german_says_its_refusals_in_german_for_every_target(tmp_path):
    """--lang is the messages' language for CII and UBL targets too (it was refused there: a PDF's page only)."""
    note = tmp_path / "notiz.txt"
    note.write_text("keine Rechnung")
    for target in ("cii", "zugferd"):
        run = cli({}, "convert", str(note), "--to", target, "--lang", "de", "-o", str(tmp_path / f"out.{target}"))
        assert run.returncode == 2, run.stderr  # (no e-invoice)
        assert "NOT_AN_EINVOICE: Die Datei ist keine lesbare E-Rechnung" in run.stderr, run.stderr
        assert not _words(run.stderr, str(note), " file:") & ENGLISH, run.stderr


def test_jobs_in_german_from_submit_to_delete(tmp_path):
    """Every action of `pipeline jobs` with --lang de: the summary, the job's state in the page's words, the list's
    table, the results' next step, a refusal of the service as the page says it, the deletion; a parse job takes
    --lang too (it was request.metadataLanguage, which a parse job refuses: 400)."""
    assert not _words(cli({"EINVOICE_API_KEY": "", "EINVOICE_URL": f"http://127.0.0.1:{free_port()}"},
                          "jobs", "list", "--lang", "de").stderr) & ENGLISH
    server, env, token = serve_with_key(tmp_path / "data", "jobs-de", 100, workers=1, warm=False)
    try:
        env = {**env, "EINVOICE_URL": server.url, "EINVOICE_API_KEY": token}
        folder = tmp_path / "eingang"
        folder.mkdir()
        valid, invalid = documents()
        (folder / "a.xml").write_bytes(valid)
        (folder / "b.xml").write_bytes(invalid)
        (folder / "liesmich.txt").write_text("-")
        run = cli(env, "jobs", "submit", str(folder), "--wait", "--lang", "de")
        assert run.returncode == 1, run.stderr
        summary = {k.strip(): v.strip() for k, v in (re.split(r"\s{2,}| (?=\S+$)", line, 1)
                                                      for line in run.stdout.splitlines())}
        job_id = summary["Auftrag"]
        assert (summary["Zustand"], summary["Dokumente"], summary["gültig"], summary["ungültig"],
                summary["nicht beurteilbar"], summary["nicht geprüft"]) == ("fertig", "2", "1", "1", "0", "0"), summary
        assert "1 Datei übersprungen" in run.stderr, run.stderr
        assert not _words(run.stdout + run.stderr, job_id, str(folder), "liesmich.txt") & ENGLISH, run.stdout
        listed = cli(env, "jobs", "list", "--lang", "de").stdout.splitlines()
        assert listed[0].split()[:4] == ["Auftrag", "Zustand", "Vorgang", "Dokumente"], listed
        assert listed[1].split()[:7] == [job_id, "fertig", "prüfen", "2", "1", "1", "0"], listed
        assert not _words("\n".join(listed), job_id) & ENGLISH, listed
        after = cli(env, "jobs", "results", job_id, "--after", "0", "--lang", "de")
        assert len(after.stdout.splitlines()) == 2  # the results are the API's JSON Lines, as in English
        assert after.stderr.strip() == "pipeline jobs: Auftrag fertig; die nächsten Einträge: --after 2", after.stderr
        missing = cli(env, "jobs", "status", "job_unknown", "--lang", "de")
        assert missing.returncode == 2 and "404 JOB_NOT_FOUND: " in missing.stderr, missing.stderr
        assert not _words(missing.stderr) & ENGLISH, missing.stderr
        parse = cli(env, "jobs", "submit", str(folder / "a.xml"), "--operation", "parse", "--wait", "--lang", "de")
        assert parse.returncode == 0 and "fertig" in parse.stdout, parse.stdout + parse.stderr
        deleted = cli(env, "jobs", "delete", job_id, "--lang", "de")
        assert deleted.stdout.strip() == f"{job_id}: mit seinen Ergebnissen gelöscht", deleted.stdout
    finally:
        server.stop()
