"""The command line as a newcomer with the README meets it (issue 38 items 8-10, audit h7): `pipeline generate` of a
fixture that names its own spec, the warnings of a generated ZUGFeRD PDF, the exit code of `pipeline validate` when
its reader goes away (`| head -1`), and what `pipeline jobs` says about an empty folder, a missing --to, a service
that is not there, a refused option and a ZIP bound for a terminal."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from test_jobs import documents
from test_platform_helpers import REPO, cli, free_port, serve_with_key

FIXTURES = REPO / "fixtures"


@pytest.mark.parametrize("fixture, golden", [("fr-b2b-goods", "fr-b2b-goods.fr-ctc.cii.xml"),
                                             ("peppol-invoice", "peppol-invoice.peppol.ubl.xml")])
def test_generate_without_spec_makes_what_the_request_names(fixture, golden, tmp_path):
    """A request with config.spec fr-ctc or peppol was refused without --spec ("config.spec: contradicts the
    endpoint, which generates xrechnung"); it is generated as its config says, the golden output, and its own rules
    call it valid."""
    out = tmp_path / "out.xml"
    run = cli({}, "generate", str(FIXTURES / f"{fixture}.json"), "-o", str(out))
    assert run.returncode == 0, run.stderr
    assert out.read_bytes() == (FIXTURES / "golden" / golden).read_bytes()
    spec = json.loads((FIXTURES / f"{fixture}.json").read_text())["config"]["spec"]
    judged = cli({}, "validate", str(out), "--spec", spec)
    assert judged.returncode == 0 and judged.stdout.startswith(f"VALID: {out} ({spec} "), judged.stdout


def test_generate_zugferd_says_its_warnings(tmp_path):
    """The XML path printed each warning on stderr, the PDF path none: a seller VAT identifier with wrong check
    digits is a CHECK-VAT-ID warning of the generated PDF too (the request is generated, not refused)."""
    request = json.loads((FIXTURES / "invoice-all-fields.json").read_text())
    request["invoice"]["seller"]["vatIdentifier"] = "DE123456789"
    path, out = tmp_path / "request.json", tmp_path / "invoice.pdf"
    path.write_text(json.dumps(request))
    run = cli({}, "generate", str(path), "--spec", "zugferd", "-o", str(out))
    assert run.returncode == 0, run.stderr
    assert out.read_bytes().startswith(b"%PDF-")
    assert "WARNING CHECK-VAT-ID: " in run.stderr and "DE123456789" in run.stderr, run.stderr
    judged = cli({}, "validate", str(out))
    assert judged.returncode == 0 and "CHECK-VAT-ID" in judged.stdout, judged.stdout


def _closed_at_once(*args: str) -> subprocess.CompletedProcess:
    """`pipeline ARGS` whose stdout's reader is gone before the first line (as `| head -0`): every write breaks."""
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", *args], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    _, err = proc.communicate(timeout=600)
    return subprocess.CompletedProcess(args, proc.returncode, None, err.decode())


def test_a_closed_pipe_keeps_the_verdict_as_exit_code(tmp_path):
    """The exit code was 2 when the reader went away before the report was written, the verdict when it went
    later (a race; `set -o pipefail` saw either): it is the verdict, for one document and for several."""
    valid, invalid = documents()
    (tmp_path / "a.xml").write_bytes(valid)
    (tmp_path / "b.xml").write_bytes(invalid)
    assert cli({}, "validate", str(tmp_path / "b.xml")).returncode == 1
    for args in ((str(tmp_path / "b.xml"),), (str(tmp_path / "a.xml"),), (str(tmp_path), "--jobs", "1"),
                 (str(tmp_path / "b.xml"), "--json")):
        run = _closed_at_once("validate", *args)
        expected = cli({}, "validate", *args).returncode
        assert run.returncode == expected, (args, run.returncode, expected, run.stderr)
        assert "Traceback" not in run.stderr, run.stderr
    stage = _closed_at_once("run", "validate", str(tmp_path / "b.xml"), "--spec", "en16931")
    assert stage.returncode == 1 and "Traceback" not in stage.stderr, stage.stderr


def test_jobs_say_what_to_do_before_any_upload(tmp_path):
    """An empty folder (the service answered "send one or more 'file' parts"), convert without --to (answered
    "request.to is required") and a service that is not running are said in the command's own words."""
    env = {"EINVOICE_API_KEY": "einv_test_abc.def", "EINVOICE_URL": f"http://127.0.0.1:{free_port()}"}
    empty = tmp_path / "leer"
    empty.mkdir()
    run = cli(env, "jobs", "submit", str(empty))
    assert run.returncode == 2 and f"no e-invoice (*.xml" in run.stderr and "nothing to submit" in run.stderr, \
        run.stderr
    (tmp_path / "a.xml").write_bytes(documents()[0])
    run = cli(env, "jobs", "submit", str(tmp_path / "a.xml"), "--operation", "convert")
    assert run.returncode == 2 and "--operation convert needs --to CII, UBL or ZUGFERD" in run.stderr, run.stderr
    run = cli(env, "jobs", "list")
    assert run.returncode == 2 and "is `pipeline serve` running there?" in run.stderr, run.stderr
    german = cli(env, "jobs", "list", "--lang", "de")
    assert german.returncode == 2 and "läuft dort `pipeline serve`?" in german.stderr, german.stderr


def test_jobs_results_zip_is_not_written_to_a_terminal(monkeypatch, capsys):
    from pipeline.cli import main

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    with pytest.raises(SystemExit) as stop:
        main(["jobs", "results", "job_x", "--format", "zip", "--key", "einv_test_abc.def"])
    assert stop.value.code == 2
    assert "a ZIP is not written to a terminal: give -o FILE" in capsys.readouterr().err


def test_a_refused_option_is_named_by_the_option_in_both_languages(tmp_path):
    """The service's refusal of a field of the request part names the option that set it (request.spec: --spec),
    and in German the field's line follows the page's sentence, which speaks of a table the shell has not."""
    server, env, token = serve_with_key(tmp_path / "data", "newcomer", 10, workers=1, warm=False)
    try:
        env = {**env, "EINVOICE_URL": server.url, "EINVOICE_API_KEY": token}
        (tmp_path / "a.xml").write_bytes(documents()[0])
        run = cli(env, "jobs", "submit", str(tmp_path / "a.xml"), "--operation", "parse", "--spec", "xrechnung")
        assert run.returncode == 2, run.stderr
        assert "400 INVALID_INPUT" in run.stderr and "UNKNOWN_FIELD request.spec (--spec): " in run.stderr, run.stderr
        german = cli(env, "jobs", "list", "--state", "nope", "--lang", "de")
        assert german.returncode == 2 and "\n  INVALID_VALUE state: " in german.stderr, german.stderr
        done = cli(env, "jobs", "submit", str(tmp_path / "a.xml"), "--wait")
        job_id = done.stdout.split()[1]
        cancel = cli(env, "jobs", "cancel", job_id)  # a finished job: its summary alone read as cancelled
        assert cancel.returncode == 0 and "the job had ended (done): nothing was cancelled" in cancel.stderr, \
            cancel.stderr
        german = cli(env, "jobs", "cancel", job_id, "--lang", "de")
        assert "der Auftrag war schon beendet (fertig): nichts abgebrochen" in german.stderr, german.stderr
        missing = cli(env, "jobs", "status", "job_unknown")  # a refusal's entry of its own code is not said twice
        assert missing.returncode == 2 and missing.stderr.count("JOB_NOT_FOUND") == 1, missing.stderr
    finally:
        server.stop()


def test_golden_names_the_cases_that_carry_warnings(capsys):
    """Our showcase generated with warnings passed as "60 match" without a word (issue 38 item 10): each case with
    warnings is named with their codes, as its own validation report has them, and the run still passes."""
    from pipeline.cli import main
    from pipeline.cli.golden import cases

    names = ["repeated-terms", "credit-note", "xrechnung-extension"]
    warned = {}
    for case in cases(names):
        report = case.generate()[1]
        codes = list(dict.fromkeys(i.code for i in report.issues if i.severity == "WARNING"))
        if codes:
            warned[case.id] = codes
    assert main(["golden", *names]) == 0
    err = capsys.readouterr().err
    said = {line.split()[1].rstrip(":"): line.split(": ", 1)[1].split(", ")
            for line in err.splitlines() if line.startswith("WARNINGS ")}
    assert said == warned, err
    assert (f"{len(warned)} with warnings" in err) == bool(warned), err


def test_keys_never_echo_a_key_given_for_its_id(tmp_path):
    """`pipeline keys usage <the key>` (a newcomer's first try) printed the whole key, secret included, back on
    stderr; it names the key's id to give instead. An unknown id says where the ids are."""
    env = {"EINVOICE_DATA_DIR": str(tmp_path), "EINVOICE_DATABASE_URL": ""}
    created = cli(env, "keys", "create", "--name", "neu", "--env", "test", "--credits", "1")
    token = created.stdout.strip()
    assert token.startswith("einv_test_") and ", 1 credit, " in created.stderr, created.stderr
    key_id, secret = token.removeprefix("einv_test_").split(".", 1)
    run = cli(env, "keys", "usage", token)
    assert run.returncode == 2 and f"give its id ({key_id};" in run.stderr and secret not in run.stderr, run.stderr
    unknown = cli(env, "keys", "credit", "000000000000", "5")
    assert unknown.returncode == 2 and "unknown key id '000000000000'" in unknown.stderr \
        and "`pipeline keys list`" in unknown.stderr, unknown.stderr
    assert cli(env, "keys", "usage", key_id).returncode == 0


def test_a_spec_given_for_a_pdf_is_said_not_to_apply():
    """`pipeline validate --spec peppol invoice.pdf` printed a ZUGFeRD verdict and said nothing of the --spec it
    dropped (only --version was said)."""
    from conftest import SHARED

    pdf = SHARED / "realworld/corpus/ZUGFeRDv2/fail/python-factur-x/python-factur-x.pdf"
    plain = cli({}, "validate", str(pdf))
    given = cli({}, "validate", str(pdf), "--spec", "peppol")
    assert given.returncode == plain.returncode and given.stdout == plain.stdout
    assert "--spec peppol does not apply to a ZUGFeRD / Factur-X PDF" in given.stderr, given.stderr
    assert "does not apply" not in plain.stderr, plain.stderr
