"""The command line as a person meets it (issue 38): what it says without a key, at the end of a closed pipe, about a
font's harmless header date, about a refused field, and which rules it picks without --spec (as the web page and a
job's "auto" do: pipeline.check.detect)."""
from __future__ import annotations

import subprocess
import sys

from conftest import CORPUS, SHARED
from test_platform_helpers import REPO, cli, free_port

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
