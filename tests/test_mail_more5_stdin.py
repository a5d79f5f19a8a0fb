"""A mail filter pipes a message to a command (procmail's `| pipeline validate -`, sieve's pipe, `formail -s`): stdin
was read as one document, and a message or a mailbox piped in was "an e-mail message, not XML". `-` is now read as a
file is: a message, a mailbox or a ZIP on stdin is a container whose invoices are checked with the names, NO_INVOICE
entries and exit codes the same file given by name gets; `pipeline jobs submit -` sends it as a part of its own."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mailbuild import message, mbox, zipped
from tests.test_jobs import documents
from tests.test_platform_helpers import REPO, Server, cli

SHARED = Path(__file__).resolve().parents[2] / "shared"
STANDARD = SHARED / "corpus/xrechnung-testsuite/business-cases/standard"
UBL = (STANDARD / "01.01a-INVOICE_ubl.xml").read_bytes()
CII = (STANDARD / "01.01a-INVOICE_uncefact.xml").read_bytes()
PDF = (SHARED / "realworld/corpus/XML-Rechnung/FX/EN16931_Rabatte.pdf").read_bytes()


def _piped(data: bytes, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`pipeline ARGS` with `data` on its stdin, as a mail filter runs it."""
    return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=REPO, input=data, capture_output=True,
                          env={**os.environ, **(env or {})}, timeout=600)


def _results(run: subprocess.CompletedProcess) -> list[tuple[str, object]]:
    """(name, verdict or the entry's code) of each result of a --json run."""
    return [(r["name"], r["report"]["verdict"] if "report" in r else (r.get("notice") or r["error"])["code"])
            for r in json.loads(run.stdout)["results"]]


def _month() -> bytes:
    """A mailbox: an XML invoice, a message without one, a PDF and a ZIP, a forwarded message with a CII invoice."""
    return mbox([message(1, [("rechnung.xml", UBL)]).as_bytes(),
                 message(2, [], subject="Lunch on Friday?").as_bytes(),
                 message(3, [("rechnung.pdf", PDF), ("more.zip", zipped([("z.xml", CII)]))]).as_bytes(),
                 message(4, [], subject="Fwd: Invoice", forwarded=message(5, [("fwd.xml", CII)])).as_bytes()])


def test_a_mailbox_piped_in_is_read_as_the_mbox_file_is(tmp_path):
    box = tmp_path / "month.mbox"
    box.write_bytes(_month())
    by_name = cli({}, "validate", str(box), "--json", "--jobs", "1")
    piped = _piped(box.read_bytes(), "validate", "-", "--json", "--jobs", "1")
    assert piped.returncode == by_name.returncode == 0, piped.stderr
    assert _results(piped) == _results(by_name)
    names = [name for name, _ in _results(piped)]
    assert [n.rsplit("/", 1)[-1] for n in names] == ["rechnung.xml", names[1].rsplit("/", 1)[-1], "rechnung.pdf",
                                                     "z.xml", "fwd.xml"]
    assert _results(piped)[1][1] == "NO_INVOICE" and "Lunch on Friday?" in names[1]
    assert [v for _, v in _results(piped) if v != "NO_INVOICE"] == ["valid"] * 4
    summary = json.loads(piped.stdout)["summary"]
    assert summary["noInvoice"] == 1 and summary["files"] == 5

    # the table, as a filter's log shows it: the message without an invoice counted apart
    table = _piped(box.read_bytes(), "validate", "-", "--jobs", "1")
    assert table.returncode == 0 and b"4 documents: 4 valid" in table.stdout
    assert b"1 message without an invoice" in table.stdout


def test_one_message_piped_in_and_its_exit_codes(tmp_path):
    valid, invalid = documents()
    one = message(7, [("bad.xml", invalid)]).as_bytes()
    run = _piped(one, "validate", "-")
    assert run.returncode == 1, run.stderr  # the invoice number is missing
    assert b"INVALID" in run.stdout and b"/bad.xml" in run.stdout and b"not XML" not in run.stdout + run.stderr

    # a message without an invoice is a notice, not an error: exit 0, as for a .eml file
    note = message(8, [("photo.png", b"\x89PNG\r\n\x1a\n")]).as_bytes()
    eml = tmp_path / "note.eml"
    eml.write_bytes(note)
    piped, by_name = _piped(note, "validate", "-", "--json"), cli({}, "validate", str(eml), "--json")
    assert piped.returncode == by_name.returncode == 0, piped.stderr
    assert _results(piped) == _results(by_name) and _results(piped)[0][1] == "NO_INVOICE"

    # procmail and `formail -s` pipe each message with its mbox envelope line ("From sender date") first: the same
    # message, the same entry as the .eml file's
    eml.write_bytes(one)
    enveloped = _piped(b"From billing@seller.example  Sun Mar  1 08:07:00 2026\n" + one, "validate", "-", "--json")
    by_name = cli({}, "validate", str(eml), "--json")
    assert enveloped.returncode == by_name.returncode == 1, enveloped.stderr
    assert json.loads(enveloped.stdout)["results"] == json.loads(by_name.stdout)["results"]

    # a document piped in is still one document named "(stdin)"; a message among files is named under it
    plain = _piped(valid, "validate", "-")
    assert plain.returncode == 0 and plain.stdout.startswith(b"VALID: (stdin) (")
    mixed = _piped(message(9, [("r.xml", UBL)]).as_bytes(), "validate", "-", str(STANDARD / "01.01a-INVOICE_ubl.xml"),
                   "--json", "--jobs", "1")
    assert mixed.returncode == 0, mixed.stderr
    names = [name for name, _ in _results(mixed)]
    assert names[0].startswith("(stdin)/") and names[0].endswith("/r.xml")
    assert names[1].endswith("01.01a-INVOICE_ubl.xml")
    twice = _piped(valid, "validate", "-", "-")
    assert twice.returncode == 2 and b"can be given once" in twice.stderr


def test_a_zip_piped_in_is_opened(tmp_path):
    valid, invalid = documents()
    run = _piped(zipped([("a.xml", valid), ("b.xml", invalid), ("inner.zip", zipped([("c.xml", valid)]))]),
                 "validate", "-", "--json", "--jobs", "1")
    assert run.returncode == 2, run.stderr  # inner.zip: one ZIP level only
    assert _results(run) == [("a.xml", "valid"), ("b.xml", "invalid"), ("inner.zip", "NESTED_ARCHIVE")]


def test_jobs_submit_takes_a_mailbox_on_stdin(tmp_path):
    data = tmp_path / "data"
    env = {"EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_RATE_LIMIT": "10000/min"}
    token = cli(env, "keys", "create", "--name", "stdin", "--env", "test", "--credits", "100").stdout.strip()
    server = Server(env, workers=1, port=19431, log_path=data / "serve.log")
    try:
        env = {**env, "EINVOICE_URL": server.url, "EINVOICE_API_KEY": token}
        box = tmp_path / "month.mbox"
        box.write_bytes(_month())
        run = _piped(box.read_bytes(), "jobs", "submit", "-", "--wait", env=env)
        assert run.returncode == 0, run.stderr
        summary = dict(line.split(None, 1) for line in run.stdout.decode().splitlines() if " " in line)
        assert summary["documents"].strip() == "4" and summary["valid"].strip() == "4"
        job = summary["job"].strip()
        lines = [json.loads(x) for x in cli(env, "jobs", "results", job).stdout.splitlines()]
        local = _results(cli({}, "validate", str(box), "--json", "--jobs", "1"))
        # the same names and verdicts as the file validated here (one part: named by its messages alone)
        assert [(x["name"], x["report"]["verdict"] if "report" in x else (x.get("notice") or x["error"])["code"])
                for x in lines] == local
        twice = _piped(b"", "jobs", "submit", "-", "-", "--lang", "de", env=env)
        assert twice.returncode == 2 and "nur einmal" in twice.stderr.decode()
    finally:
        server.stop()
