"""Rule packs changing under a running service (issue 37): `pipeline rules add / install / remove` while
`pipeline serve` runs, two changes at once, a change killed midway, a rules home that cannot be written, a damaged
pack, and releases that must be refused (a Peppol release without its self-billing rules, a KoSIT configuration
whose later scenarios do not compile). Releases are built from ../shared/rules files renamed as later versions
(tests/test_rules_add.py); servers, CLI commands and validations are real."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from pipeline.check import engine, packs, xmlinput
from pipeline.cli import main
from pipeline.errors import ApiError
from pipeline.flows.validate_xml import validate_xml
from test_platform_helpers import REPO, Server, cli, free_port_in
from test_rules_add import (CEN_CII, SMALL_CORPUS, _zip, cen_release, corpus, home, issued,  # noqa: F401 - fixtures
                            kosit_release, peppol_release, snapshot)

from conftest import CORPUS

CEN_UBL = CORPUS / "en16931-cen/ubl/examples/ubl-tc434-example1.xml"
PEPPOL_SB = CORPUS / "peppol/2026.5/SB-base-example.xml"
LATE = "20261115"  # after the 1.3.17 restatement's day (2026-11-01)



def _env(home: Path, data: Path) -> dict:
    return {"EINVOICE_RULES_HOME": str(home), "EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "",
            "EINVOICE_REDIS_URL": "", "EINVOICE_RATE_LIMIT": "100000/min"}


def _validate(server: Server, token: str, xml: bytes) -> requests.Response:
    return requests.post(server.url + "/v1/invoice/en16931/validate", headers={"Authorization": f"Bearer {token}"},
                         files={"file": ("invoice.xml", xml, "application/xml"),
                                "request": ("request.json", json.dumps({"version": None}), "application/json")},
                         timeout=120)


def _versions_until(server: Server, token: str, xml: bytes, wanted: str, within: float = 10) -> list:
    """Validate `xml` until the answer is judged by `wanted` (every worker asked a few times in a row): each answer's
    (status, version or error code). A 503 RULES_CHANGED is followed as its Retry-After says."""
    seen, deadline, row = [], time.monotonic() + within, 0
    while row < 4:
        r = _validate(server, token, xml)
        body = r.json()
        if r.status_code == 503:  # the spec's retry-later 503, ours in errors[0].code
            assert (body["errorCode"], body["errors"][0]["code"], r.headers["Retry-After"]) == (
                "RATE_LIMIT_CONFIGURATION_UNAVAILABLE", "RULES_CHANGED", "1"), body
            time.sleep(1)
        seen.append((r.status_code, body.get("version") or body["errors"][0]["code"]))
        row = row + 1 if body.get("version") == wanted else 0
        assert time.monotonic() < deadline, f"not judged by {wanted} within {within} s: {seen}"
    return seen


def test_a_running_server_follows_add_and_remove_without_a_restart_and_never_answers_500(home, tmp_path):
    """A pack removed while a worker had listed it but not compiled it (its CII half) gave a 500 (OSError on the
    missing XSD) on the next validation, and a release added while the server ran was not used until a restart. Now
    each worker looks at the rules home's stamp at most once a second and chooses again."""
    env = _env(home, tmp_path / "data")
    (tmp_path / "data").mkdir()
    token = cli(env, "keys", "create", "--name", "live", "--env", "test", "--credits", "0").stdout.strip()
    release = tmp_path / "eInvoicing-EN16931-validation-1.3.17.zip"
    release.write_bytes(_zip(cen_release()))
    early, late = CEN_CII.read_bytes(), issued(CEN_CII.read_bytes(), LATE)
    late_ubl = CEN_UBL.read_bytes().replace(b"<cbc:IssueDate>2015-01-09", b"<cbc:IssueDate>2026-11-15")
    assert late_ubl != CEN_UBL.read_bytes()
    server = Server(env, workers=2, port=free_port_in(30500, 30999), warm=False, log_path=tmp_path / "serve.log")
    try:
        assert {v for _, v in _versions_until(server, token, late, "1.3.16")} == {"1.3.16"}
        added = cli(env, "rules", "add", str(release), "--no-optimise")
        assert added.returncode == 0, added.stderr
        assert "a running service chooses it within a second" in added.stdout
        seen = _versions_until(server, token, late_ubl, "1.3.17")  # issued after its day: the new release
        assert {s for s, _ in seen} == {200}, seen
        assert {v for _, v in _versions_until(server, token, early, "1.3.16")} == {"1.3.16"}  # before it: not

        removed = cli(env, "rules", "remove", "en16931", "1.3.17")
        assert removed.returncode == 0 and "no longer chooses it" in removed.stdout, removed.stderr
        # its CII half was listed, never compiled: the files are gone when a worker first needs them
        seen = _versions_until(server, token, late, "1.3.16") + _versions_until(server, token, late_ubl, "1.3.16")
        assert {s for s, _ in seen} <= {200, 503} and (200, "1.3.16") in seen, seen
        assert all(v == "RULES_CHANGED" for s, v in seen if s == 503), seen
    finally:
        server.stop()
    log = (tmp_path / "serve.log").read_text()
    assert '"status":500' not in log.replace(" ", "") and "Traceback" not in log


def test_a_pack_removed_while_a_request_runs_is_a_503_and_the_next_request_chooses_again(home, tmp_path, capsys):
    """The window the stamp cannot close: a request chose the pack, then its files went before it compiled them."""
    release = tmp_path / "cen.zip"
    release.write_bytes(_zip(cen_release()))
    assert main(["rules", "add", str(release), "--no-optimise"]) == 0
    late = issued(CEN_CII.read_bytes(), LATE)
    doc = xmlinput.load(late)
    pack = engine.pick_pack("en16931", None, "CII", doc)
    assert pack.version == "1.3.17"
    assert main(["rules", "remove", "en16931", "1.3.17"]) == 0
    with pytest.raises(ApiError) as caught:
        engine.pack_checked(doc, pack, engine.saxon_document(doc))
    error = caught.value
    assert (error.http_status, error.error_code, error.headers) == (503, "RATE_LIMIT_CONFIGURATION_UNAVAILABLE",
                                                                    {"Retry-After": "1"})
    body = error.to_dict("r")
    assert body["status"] == "service_unavailable" and body["errors"][0]["code"] == "RULES_CHANGED"
    assert "en16931 1.3.17" in error.message
    report = validate_xml(late, "en16931")   # the next request: among the packs installed now
    assert (report.version, report.verdict) == ("1.3.16", "valid")


def test_a_file_gone_from_an_intact_pack_names_the_file_and_the_pack_is_refused_until_reinstalled(home):
    pack = engine.pick_pack("en16931", None, "CII")
    sheet = pack.runnable(pack.rules_for("CII").stylesheets[0])
    sheet.unlink()  # by hand, after the worker verified the pack's hashes and before it compiled the stylesheet
    for attempt in range(2):
        with pytest.raises(ApiError) as caught:
            validate_xml(CEN_CII.read_bytes(), "en16931")
        error = caught.value.to_dict("r")
        assert (caught.value.http_status, error["errorCode"], error["errors"][0]["code"]) == (
            500, "INTERNAL_ERROR", "RULES_UNAVAILABLE"), error
        # first the file that could not be read, then (hashes checked again) the pack that was modified
        assert (sheet.name if attempt == 0 else "en16931 1.3.16") in error["message"], error["message"]


def test_the_same_version_added_again_with_other_rules_is_judged_by_them_in_a_running_process(home, tmp_path,
                                                                                              capsys):
    """What a process compiled is keyed by the file as well as its path: removed and added again with other rules
    (same version, same paths), the old stylesheet answered on."""
    release = tmp_path / "cen.zip"
    release.write_bytes(_zip(cen_release()))
    assert main(["rules", "add", str(release), "--no-optimise"]) == 0
    nameless = re.sub(rb"<ram:Name>De Koksmaat</ram:Name>", b"", issued(CEN_CII.read_bytes(), LATE), count=1)
    said = lambda: [i.message for i in validate_xml(nameless, "en16931").issues if i.code == "BR-06"]  # noqa: E731
    assert said() == ["[BR-06]-An Invoice shall contain the Seller name (BT-27)."]
    assert main(["rules", "remove", "en16931", "1.3.17"]) == 0
    files = {n: d.replace(b"An Invoice shall contain the Seller name", b"The seller's name is missing")
             for n, d in cen_release().items()}
    release.write_bytes(_zip(files))
    assert main(["rules", "add", str(release), "--no-optimise"]) == 0
    assert said() == ["[BR-06]-The seller's name is missing (BT-27)."]


def test_two_adds_at_once_one_version_other_files_one_wins_the_other_is_refused(home, tmp_path):
    """Both passed the check that the version is not installed with other files before either was in place, and
    the later silently replaced the earlier (both said `added`)."""
    small = tmp_path / "two"
    small.mkdir()
    for path in SMALL_CORPUS[:2]:  # proving the copies keeps each add busy for seconds: the two overlap
        shutil.copyfile(path, small / path.name)
    first, second = tmp_path / "a.zip", tmp_path / "b.zip"
    first.write_bytes(_zip(cen_release()))
    other = cen_release()
    license_name = next(n for n in other if n.endswith("LICENSE.txt"))
    other[license_name] += b"\nthe other release\n"
    second.write_bytes(_zip(other))
    env = {"EINVOICE_RULES_HOME": str(home)}
    runs = [subprocess.Popen([sys.executable, "-m", "pipeline", "rules", "add", str(release), "--corpus", str(small)],
                             cwd=REPO, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for release in (first, second)]
    results = [(run.wait(600), *run.communicate()) for run in runs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], results
    loser = next(err for code, _, err in results if code == 2)
    assert "is installed with other files: remove it first" in loser
    winner = first if results[0][0] == 0 else second
    installed = (home / "en16931/1.3.17" / license_name.split("/", 1)[1]).read_bytes()
    assert (b"the other release" in installed) == (winner == second)
    assert not [p.name for p in home.iterdir() if p.name.startswith((".add-", ".install-"))]


def test_a_change_killed_midway_leaves_no_half_pack_and_the_next_change_puts_things_right(home, tmp_path, corpus):
    release = tmp_path / "cen.zip"
    release.write_bytes(_zip(cen_release()))
    run = subprocess.Popen([sys.executable, "-m", "pipeline", "rules", "add", str(release), "--corpus", str(corpus)],
                           cwd=REPO, env={**os.environ, "EINVOICE_RULES_HOME": str(home)},
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not list(home.glob(".add-*/pack/cii/xslt/*.optimised.xslt")):  # staged, proving its copies
        assert run.poll() is None and time.monotonic() < deadline, "the add ended before it could be killed"
        time.sleep(0.05)
    run.send_signal(signal.SIGKILL)
    run.wait()
    assert list(home.glob(".add-*")) and not (home / "en16931/1.3.17").exists()
    packs.clear_caches()
    assert [p.version for p in packs.list_installed() if p.spec == "en16931"] == ["1.3.16"]
    assert validate_xml(issued(CEN_CII.read_bytes(), LATE), "en16931").version == "1.3.16"
    # killed between replace_dir's two renames: the pack renamed away, the new one not in its place
    (home / "peppol/2026.5").rename(home / "peppol/.2026.5.old")
    assert main(["rules", "add", str(release), "--no-optimise"]) == 0  # the next change clears and restores
    assert not list(home.glob(".add-*")) and (home / "peppol/2026.5" / packs.MANIFEST_NAME).is_file()
    assert not (home / "peppol/.2026.5.old").exists()
    assert packs.get_pack("peppol", "2026.5").version == "2026.5"


def test_a_rules_home_that_cannot_be_written_is_said_in_a_line_and_left_as_it_was(home, tmp_path, capsys):
    """A full disk ended `rules add` and `rules install` in a traceback (OSError without a file name; shutil.Error
    listing every file of the pack); a home that is no folder the same."""
    release = tmp_path / "cen.zip"
    release.write_bytes(_zip(cen_release()))
    # a full disk, as the kernel says it to a process allowed files of 64 KB at most (the CEN XSLT is larger)
    limited = ("import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
               "resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536)); from pipeline.cli import main; "
               "sys.exit(main(sys.argv[1:]))")

    def under_the_limit(*args: str) -> str:
        done = subprocess.run([sys.executable, "-c", limited, *args], cwd=REPO, capture_output=True, text=True,
                              env={**os.environ, "EINVOICE_RULES_HOME": str(home)}, timeout=600)
        assert done.returncode == 2 and "Traceback" not in done.stderr and len(done.stderr) < 2000, done.stderr
        return done.stderr

    before = snapshot(home)
    said = under_the_limit("rules", "add", str(release), "--no-optimise")
    assert "could not be written (File too large" in said and "nothing was installed" in said, said
    assert snapshot(home) == before
    assert main(["rules", "remove", "en16931", "1.3.16"]) == 0
    said = under_the_limit("rules", "install", "--from", str(REPO.parent / "shared/rules"))
    assert "en16931 1.3.16 could not be written ([Errno 27] File too large: " in said, said
    assert not (home / "en16931/1.3.16").exists() and (home / "peppol/2026.5" / packs.MANIFEST_NAME).is_file()
    assert not [p for p in home.iterdir() if p.name.startswith((".add-", ".install-"))]
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    for args in (["rules", "add", str(release)], ["rules", "remove", "en16931", "1.3.16"]):
        done = subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=REPO, capture_output=True, text=True,
                              env={**os.environ, "EINVOICE_RULES_HOME": str(blocker / "rules")}, timeout=600)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr


def test_a_damaged_manifest_is_named_and_refused_and_the_other_packs_still_judge(home, capsys):
    """A .pack.json cut short (a full disk while restoring a backup) ended every lookup of every pack, `rules list`
    and every validation, in a JSONDecodeError."""
    (home / "peppol/2026.5" / packs.MANIFEST_NAME).write_text('{"spec": "peppol", "fi')
    packs.clear_caches()
    assert main(["rules", "list"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"peppol +2026\.5 +active DAMAGED \(\.pack\.json unreadable", out), out
    assert validate_xml(CEN_CII.read_bytes(), "en16931").verdict == "valid"
    with pytest.raises(ApiError) as caught:
        validate_xml(PEPPOL_SB.read_bytes(), "peppol")
    error = caught.value.to_dict("r")
    assert error["errors"][0]["code"] == "RULES_UNAVAILABLE" and "manifest" in error["message"], error


def test_a_peppol_release_without_its_self_billing_rules_is_refused(home, corpus, tmp_path, capsys):
    """Accepted before, without its self-billing variant: self-billing invoices issued from its day on were held to
    the billing rules, which refuse their CustomizationID."""
    files = {n: d for n, d in peppol_release().items() if not n.endswith("PEPPOL-EN16931-UBL-SB.xslt")}
    release = tmp_path / "peppol-2026.11.zip"
    release.write_bytes(_zip(files))
    before = snapshot(home)
    assert main(["rules", "add", str(release), "--corpus", str(corpus)]) == 2
    said = capsys.readouterr().err
    assert "lacks xslt/PEPPOL-EN16931-UBL-SB.xslt, the self-billing rules that the installed peppol/2026.5 has" in said
    assert said.rstrip().endswith("refused") and snapshot(home) == before
    late = PEPPOL_SB.read_bytes().replace(b"<cbc:IssueDate>2017-11-13", b"<cbc:IssueDate>2026-12-01")
    report = validate_xml(late, "peppol")
    assert (report.verdict, [(r.version, r.variant) for r in report.rules]) == ("valid", [("2026.5", "self-billing")])

    release.write_bytes(_zip(peppol_release()))  # the whole release: its own self-billing rules judge them
    assert main(["rules", "add", str(release), "--no-optimise"]) == 0
    report = validate_xml(late, "peppol")
    assert (report.verdict, [(r.version, r.variant) for r in report.rules]) == ("valid", [("2026.11", "self-billing")])
    billing = validate_xml(PEPPOL_SB.read_bytes(), "peppol", version="2026.11")  # the variant by BT-24, any date
    assert [(r.version, r.variant) for r in billing.rules] == [("2026.11", "self-billing")]


def test_a_kosit_configuration_whose_later_scenario_does_not_compile_is_refused(home, tmp_path, capsys):
    """Only the first scenario of each syntax was compiled: a broken match expression or stylesheet of another went
    in, and every request it would have matched failed."""
    files = kosit_release()
    scenarios_xml = files["scenarios.xml"].decode()
    matches = re.findall(r"<match>(.*?)</match>", scenarios_xml, re.S)
    assert len(matches) > 3
    files["scenarios.xml"] = scenarios_xml.replace(f"<match>{matches[1]}</match>", "<match>/*[(</match>", 1).encode()
    release = tmp_path / "xrechnung-3.0.2-validator-configuration-2026-08-31.zip"
    release.write_bytes(_zip(files))
    before = snapshot(home)
    assert main(["rules", "add", str(release), "--no-optimise"]) == 2
    said = capsys.readouterr().err
    assert "scenarios.xml does not load" in said and said.rstrip().endswith("refused"), said
    assert snapshot(home) == before
