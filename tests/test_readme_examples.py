"""The README's shell examples, run as a newcomer types them, so that the README cannot drift from what the service
does. Every ```sh block of README.md is read; each command line (continuations joined, its comment cut off) is run
in bash, one after the other in README order, in a fresh folder with `fixtures/` beside it, against a `pipeline
serve` this test starts on a free port with a fresh SQLite store. Only what a reader adapts is changed: the host and
port (`localhost:8000`), `...` standing for the key's header, a bare `/v1/...` path, and `job_...` for the job the
README's own submission made. Optional parts in brackets are left out. A line that is a synopsis (alternatives
`a|b`, a placeholder such as DIR, FILES, ID, KEYID), minutes of work (bench/, deploy/, scripts/, serve, worker,
inbox) or a change to what the machine shares (rules add/remove/install, createdb) is not run; the list of lines
that do run is pinned below, so that a new example has to be looked at here.

Judged: every command exits 0 (curl with --fail-with-body: an HTTP answer >= 400 fails it), but the validation
commands, whose exit code must match the verdict they print (0 valid, 1 invalid, 3 indeterminate), and the one
answer the README documents as a refusal; and the files the README says a command writes exist with their kind."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from email.message import EmailMessage
from mailbox import mbox

import pytest

from test_platform_helpers import REPO, Server

# Lines that are long work or change what the machine shares, by their first words (the module's docstring: why).
NOT_RUN = ("bash scripts/", "scripts/", "python3 bench/", "deploy/", "export ", "createdb ", "pipeline serve",
           "pipeline worker", "pipeline inbox", "EINVOICE_IMAP_PASSWORD_FILE=", "pipeline rules add",
           "pipeline rules remove", "pipeline rules install")
PLACEHOLDER = re.compile(r"\b(DIR|FILES|ZIP|EML|MBOX|ID|KEYID|SPEC|VERSION|N|RELEASE\.zip)\b")
EXIT_BY_VERDICT = {"valid": 0, "invalid": 1, "indeterminate": 3}


def _cut_comment(line: str) -> str:
    """The line without its trailing `# comment` (a `#` after whitespace, outside quotes)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def _unquoted(line: str) -> str:
    """The line with its quoted parts blanked, to look for shell syntax outside them."""
    return re.sub(r"'[^']*'|\"[^\"]*\"", "''", line)


def _drop_optional(line: str) -> str:
    """`[--spec S]`-style optional parts left out (nested brackets too), outside quotes."""
    out, depth, quote = [], 0, None
    for ch in line:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "[":
            depth += 1
            continue
        elif ch == "]" and depth:
            depth -= 1
            continue
        if not depth:
            out.append(ch)
    return re.sub(r" {2,}", " ", "".join(out)).strip()


def readme_commands() -> list[str]:
    """The runnable command lines of README.md's ```sh blocks, in order."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"^```sh\n(.*?)^```", readme, re.S | re.M):
        for raw in block.replace("\\\n", " ").splitlines():
            line = _drop_optional(_cut_comment(raw))
            bare = _unquoted(line)
            if not line or line.startswith(NOT_RUN) or PLACEHOLDER.search(bare) or "|" in bare.replace("||", ""):
                continue
            commands.append(line)
    return commands


def _adapted(command: str, url: str) -> str:
    """What a reader changes: host and port, `...` for the key's header, a bare path, the job's id."""
    command = command.replace("http://localhost:8000", url).replace("localhost:8000", url)
    if command.startswith("curl"):
        command = command.replace(" ... ", ' -H "Authorization: Bearer $KEY" ')
        # a bare path; `/en16931/validate/batch` is short for the invoice endpoints' /v1/invoice/en16931/...
        command = re.sub(r" /(?!v1/)(\S*)", r" /v1/invoice/\1", command)
        command = re.sub(r" (/v1/\S*)", rf" {url}\1", command)
    return command.replace("job_...", "$JOB")


def _verdict(command: str, out: str) -> str:
    """What a validation command printed: the JSON report's verdict, a single document's first word, or for a
    table of several the count line (the README's inputs there are valid ones)."""
    if " run " in command:
        return json.loads(out)["verdict"]
    single = re.match(r"(VALID|INVALID|INDETERMINATE):", out)
    if single:
        return single.group(1).lower()
    assert re.search(r" 0 invalid, 0 indeterminate, 0 could not be validated", out), out
    return "valid"


def _inputs(folder) -> None:
    """The files the README's examples name that no earlier example writes: a month as a ZIP, two invoices, mail."""
    (folder / "fixtures").symlink_to(REPO / "fixtures")

    def cli(*args):
        done = subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=folder, capture_output=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        assert done.returncode == 0, done.stderr

    cli("generate", "fixtures/invoice-all-fields.json", "--spec", "xrechnung", "-o", "a.xml")
    cli("generate", "fixtures/credit-note.json", "--spec", "en16931", "-o", "b.xml")
    cli("generate", "fixtures/fr-status-207.json", "-o", "statut.xml")
    cli("generate", "fixtures/fr-b2b-goods.json", "--spec", "fr-ctc", "-o", "facture.xml")
    cli("generate", "fixtures/invoice-all-fields.json", "--spec", "zugferd", "-o", "invoice.pdf")
    with zipfile.ZipFile(folder / "month.zip", "w") as z:
        z.write(folder / "a.xml", "a.xml")
        z.write(folder / "b.xml", "b.xml")
    with zipfile.ZipFile(folder / "mois.zip", "w") as z:
        z.write(folder / "facture.xml", "facture.xml")
    message = EmailMessage()
    message["From"], message["Subject"], message["Message-ID"] = "billing@seller.example", "Invoice 4711", "<i@s>"
    message.set_content("attached")
    message.add_attachment((folder / "a.xml").read_bytes(), maintype="application", subtype="xml",
                           filename="rechnung.xml")
    (folder / "invoice-mail.eml").write_bytes(bytes(message))
    for name in ("month.mbox", "export.mbox"):
        box = mbox(str(folder / name))
        box.add(message)
        box.close()


# The commands that run, as the README has them today (adapted). A changed or new example fails here first:
# look at it, then add it (or a reason not to run it to NOT_RUN).
EXPECTED = [
    "KEY=$(pipeline keys create --name me --env test --credits 100)",
    'curl -s -H "Authorization: Bearer $KEY" -H "Content-Type: application/json" --data-binary '
    "@fixtures/invoice-all-fields.json {url}/v1/invoice/xrechnung -o invoice.xml",
    'curl -s -H "Authorization: Bearer $KEY" -F file=@invoice.xml {url}/v1/invoice/xrechnung/validate',
    "pipeline rules list",
    "curl -F file=@invoice.xml -F 'request={{\"version\":null}};type=application/json' -H \"Authorization: Bearer "
    "$KEY\" {url}/v1/invoice/xrechnung/validate",
    "pipeline validate invoice.xml",
    "pipeline validate invoice.pdf",
    'curl -F file=@month.zip -H "Authorization: Bearer $KEY" {url}/v1/invoice/xrechnung/validate/batch',
    "curl -F file=@a.xml -F file=@b.xml -F 'request={{\"strict\":true}};type=application/json' -H \"Authorization: "
    "Bearer $KEY\" {url}/v1/invoice/en16931/validate/batch",
    "curl -F file=@month.zip -F 'request={{\"operation\":\"validate\",\"spec\":\"xrechnung\"}};type=application/json' "
    '-H "Authorization: Bearer $KEY" {url}/v1/jobs',
    'curl -H "Authorization: Bearer $KEY" {url}/v1/jobs/$JOB',
    'curl -H "Authorization: Bearer $KEY" {url}/v1/jobs/$JOB/results',
    "pipeline jobs list",
    'curl -F file=@invoice-mail.eml -H "Authorization: Bearer $KEY" {url}/v1/invoice/xrechnung/validate/batch',
    "pipeline validate month.mbox",
    "pipeline jobs submit export.mbox --wait",
    "pipeline keys create --name acme --env live --credits 1000 --rate-limit 60/min",
    "pipeline generate fixtures/invoice-all-fields.json --spec xrechnung --syntax UBL -o out.xml",
    "pipeline run normalize request.json > canonical.xml",
    "pipeline run transform canonical.xml --to cii --xslt my.xsl",
    "pipeline run validate out.xml --spec xrechnung",
    "pipeline golden",
    "pipeline generate request.json --spec zugferd -o invoice.pdf",
    "pipeline run normalize request.json > canonical.xml",
    "pipeline run html canonical.xml --lang de > page.html",
    "pipeline run pdf page.html -o pages.pdf",
    'curl -F file=@facture.xml -H "Authorization: Bearer $KEY" {url}/v1/invoice/fr-ctc/validate',
    'curl -F file=@mois.zip -H "Authorization: Bearer $KEY" {url}/v1/invoice/fr-ctc/validate/batch',
    "pipeline generate fixtures/fr-b2b-goods.json --spec fr-ctc -o facture.xml",
    "pipeline generate fixtures/fr-facturx-en16931.json --spec zugferd -o facture.pdf",
    'curl -F file=@statut.xml -H "Authorization: Bearer $KEY" {url}/v1/invoice/fr-ctc/status/validate',
    "pipeline validate statut.xml --spec fr-cdar",
    "curl -d @fixtures/peppol-invoice.json -H 'Content-Type: application/json' -H \"Authorization: Bearer $KEY\" "
    "{url}/v1/invoice/peppol -o peppol.xml",
    'curl -F file=@peppol.xml -H "Authorization: Bearer $KEY" {url}/v1/invoice/peppol/validate',
    "curl -F file=@invoice.xml -F 'request={{\"to\":\"UBL\",\"spec\":\"peppol\"}};type=application/json' "
    '-H "Authorization: Bearer $KEY" {url}/v1/invoice/convert',
    'curl -F file=@invoice.pdf -H "Authorization: Bearer $KEY" {url}/v1/invoice/parse',
    "curl -F file=@invoice.xml -F 'request={{\"to\":\"UBL\"}};type=application/json' -H \"Authorization: Bearer "
    "$KEY\" {url}/v1/invoice/convert",
    "curl -F file=@invoice.xml -F 'request={{\"validate\":true,\"showBusinessTerms\":true}};type=application/json' "
    '-H "Authorization: Bearer $KEY" {url}/v1/invoice/render > page.pdf',
    "pipeline parse invoice.xml",
    "pipeline render invoice.pdf -o page.pdf",
    "pipeline run read invoice.xml",
    "pipeline keys create --name acme --env live --credits 1000",
]


def test_readme_commands_are_the_pinned_ones():
    url = "http://127.0.0.1:8000"
    commands = [_adapted(c, url) for c in readme_commands()]
    assert commands == [e.format(url=url) for e in EXPECTED]


def test_the_readme_examples_run_as_written(tmp_path):
    if shutil.which("curl") is None:
        pytest.fail("curl is needed: the README's examples use it")
    env = {"EINVOICE_DATA_DIR": str(tmp_path / "data"), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_RATE_LIMIT": "1000/min"}
    work = tmp_path / "work"
    work.mkdir()
    _inputs(work)
    shutil.copy(REPO / "xslt" / "cii.xsl", work / "my.xsl")  # "a copy out of xslt/ finds common/"
    shutil.copy(REPO / "fixtures" / "invoice-all-fields.json", work / "request.json")
    server = Server(env, workers=1)
    try:
        commands = [_adapted(c, server.url) for c in readme_commands()]
        # curl fails on an HTTP error; each command's exit code, output and the job's id are kept per step
        lines = ["set -u", f'pipeline() {{ "{sys.executable}" -m pipeline "$@"; }}',
                 'curl() { command curl --fail-with-body -D "$OUT/headers" "$@"; }']
        for i, command in enumerate(commands):
            lines += [f'OUT=steps/{i}; mkdir -p "$OUT"', f'{{ {command} ; }} > "$OUT/stdout" 2> "$OUT/stderr"',
                      f'echo $? > "$OUT/rc"',
                      # the setting the jobs commands read (README: EINVOICE_URL, EINVOICE_API_KEY)
                      f'export EINVOICE_URL={server.url} EINVOICE_API_KEY="${{KEY:-}}"',
                      'JOB=${JOB:-$(sed -n "s#^location: /v1/jobs/##Ip" "$OUT/headers" 2>/dev/null | tr -d "\\r")}']
        done = subprocess.run(["bash", "-c", "\n".join(lines)], cwd=work, capture_output=True, text=True,
                              timeout=1500, env={**os.environ, **env, "PYTHONPATH": str(REPO)})
        assert done.returncode == 0, done.stderr
        failures = []
        for i, command in enumerate(commands):
            step = work / "steps" / str(i)
            rc, out, err = int((step / "rc").read_text()), (step / "stdout").read_text(), (step / "stderr").read_text()
            expected = 0
            if re.match(r"pipeline (run )?validate ", command):
                expected = EXIT_BY_VERDICT[_verdict(command, out)]
            if '"spec":"peppol"' in command:
                # README, Peppol: First steps' XRechnung sends e-mail endpoints, which Peppol refuses (CL008)
                expected = 22
                assert json.loads(out)["errors"][0]["code"] == "PEPPOL-EN16931-CL008", out
            if rc != expected:
                failures.append(f"{command}\n  exit {rc}, expected {expected}\n  {out[-600:]}\n  {err[-600:]}")
        assert not failures, "\n".join(failures)
        step = {command: work / "steps" / str(i) for i, command in enumerate(commands)}  # a repeated line: its last
        submit = step[commands[[i for i, c in enumerate(commands) if c.endswith("/v1/jobs")][0]]]
        head = (submit / "headers").read_text()  # README: "202, Location: /v1/jobs/job_..."
        assert head.startswith("HTTP/1.1 202") and re.search(r"(?im)^location: /v1/jobs/job_\w+\r?$", head), head
        status = step[f'curl -H "Authorization: Bearer $KEY" {server.url}/v1/jobs/$JOB']
        job = json.loads((status / "stdout").read_text())
        assert job["id"].startswith("job_") and job["total"] == 2 and job["operation"] == "validate", job
        results = (step[f'curl -H "Authorization: Bearer $KEY" {server.url}/v1/jobs/$JOB/results'] / "stdout")
        assert job["state"] != "done" or [json.loads(line)["name"] for line in results.read_text().splitlines()] == [
            "a.xml", "b.xml"]  # archive order
        kinds = {"invoice.xml": b"<?xml", "out.xml": b"<?xml", "canonical.xml": b"<?xml", "facture.xml": b"<?xml",
                 "invoice.pdf": b"%PDF-", "facture.pdf": b"%PDF-", "pages.pdf": b"%PDF-", "page.pdf": b"%PDF-",
                 "page.html": b"<!DOCTYPE", "peppol.xml": b"<?xml"}
        assert {name: (work / name).read_bytes()[:len(head)] for name, head in kinds.items()} == kinds
    finally:
        server.stop()
