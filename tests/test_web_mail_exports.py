"""The web page takes mail as the mail programs export it, as the service, the CLI and the jobs do (issue 36): in
headless chromium against a started `pipeline serve`, a clerk's folder on the job tab with Apple Mail's "Export
Mailbox" (`Rechnungen.mbox/mbox`, a mailbox of no extension, beside Mail's `Info.plist` and `table_of_contents`),
Apple Mail's message files (`.emlx`), Thunderbird's `Local Folders` (`Inbox` of no extension, `.msf` indexes, an
empty `Trash`, `msgFilterRules.dat`) and a note. The job's documents are the invoices and the message without one;
the mail programs' own files are neither sent nor named as skipped (Info.plist went up and came back an invalid
invoice), the note is named. The same folder dropped on the validate tab's drop zone runs as the same job (the
folder itself went up as a file before). On the validate tab a mailbox of no extension and an .emlx are read as
mail.

The messages are built here around the shared real-world invoices (read in place)."""
from __future__ import annotations

import json

import pytest
import requests

from conftest import SHARED
from mailbuild import message
from test_mail_client_exports import EXPORT_INFO, MORK, PLIST, TABLE_OF_CONTENTS
from test_platform_helpers import Server, cli, free_port_in
from test_web_browser import (WAIT, browser, by_id, enter_key, follow_job, page, screenshots, shown,  # noqa: F401
                              visible, wait)

REAL = SHARED / "realworld/corpus/XML-Rechnung"
INVOICES = {  # one document per place: each is seen once, by name
    "export-ubl.xml": REAL / "UBL/EN16931_Einfach.ubl.xml",
    "export-fx.pdf": REAL / "FX/EN16931_Einfach.pdf",
    "store-cii.xml": REAL / "CII/EN16931_Einfach.cii.xml",
    "thunderbird-cii.xml": REAL / "CII/EN16931_ElektronischeAdresse.cii.xml",
}
LEFT_OUT = ("Info.plist", "table_of_contents", ".msf", "msgFilterRules.dat", "Trash", ".DS_Store")
SKIPPED = {"en": "Left out of the folder: 1 file that is no .xml, .pdf, .eml, .emlx, .mbox, .msg, .p7m or .zip, nor "
                 "mail (mail/notes.txt).",
           "de": "Aus dem Ordner weggelassen: 1 Datei, die keine .xml-, .pdf-, .eml-, .emlx-, .mbox-, .msg-, .p7m- "
                 "oder .zip-Datei ist und keine E-Mail enthält (mail/notes.txt)."}
STATUS = {"en": "Job {id}: done, {done} of {total} entries: {valid} valid, {invalid} invalid, {indeterminate} "
                "indeterminate, {errors} not validated, 1 message without an invoice.",
          "de": "Auftrag {id}: fertig, {done} von {total} Einträgen: {valid} gültig, {invalid} ungültig, "
                "{indeterminate} nicht beurteilbar, {errors} nicht geprüft, 1 Nachricht ohne Rechnung."}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """`pipeline serve` on this suite's ports (18800-18899) with a fresh SQLite store and one key."""
    data = tmp_path_factory.mktemp("web-mail-exports")
    env = {"EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_RATE_LIMIT": "10000/min"}
    token = cli(env, "keys", "create", "--name", "mail-exports", "--env", "test", "--credits", "100").stdout.strip()
    assert token.startswith("einv_test_"), token
    server = Server(env, workers=2, port=free_port_in(18800, 18899), warm=True, log_path=data / "serve.log")
    yield server, token
    server.stop()


def _raw(n: int, names: list[str], subject: str | None = None) -> bytes:
    return message(n, [(name, INVOICES[name].read_bytes()) for name in names], subject=subject).as_bytes()


def _apple_mbox(messages: list[bytes]) -> bytes:
    """As Apple Mail's "Export Mailbox" writes its `mbox`: "From <sender> <asctime>" envelopes, LF line ends."""
    return b"".join(b"From billing@seller.example Mon Mar  2 10:15:00 2026\n" + raw.replace(b"\r\n", b"\n") + b"\n"
                    for raw in messages)


def _thunderbird_mbox(messages: list[bytes]) -> bytes:
    """As Thunderbird keeps a mail folder: "From - <asctime>" envelopes and its X-Mozilla-Status headers, CRLF."""
    return b"".join(b"From - Mon Mar 02 10:%02d:00 2026\r\nX-Mozilla-Status: 0001\r\n" % n
                    + raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n") + b"\r\n" for n, raw in enumerate(messages))


def _emlx(raw: bytes) -> bytes:
    """Apple Mail's message file: the message's length in bytes on a line of its own, the message, Mail's flags."""
    raw = raw.replace(b"\r\n", b"\n")
    return f"{len(raw):<10}\n".encode() + raw + PLIST


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    root = tmp_path_factory.mktemp("exports") / "mail"
    files = {
        "Rechnungen.mbox/mbox": _apple_mbox([_raw(1, ["export-ubl.xml"]), _raw(2, ["export-fx.pdf"])]),
        "Rechnungen.mbox/Info.plist": EXPORT_INFO,
        "Rechnungen.mbox/table_of_contents": TABLE_OF_CONTENTS,
        "INBOX.mbox/Messages/101.emlx": _emlx(_raw(3, ["store-cii.xml"])),
        "INBOX.mbox/Info.plist": PLIST,
        "Local Folders/Inbox": _thunderbird_mbox([_raw(4, ["thunderbird-cii.xml"]), _raw(5, [], "Termin")]),
        "Local Folders/Inbox.msf": MORK,
        "Local Folders/Trash": b"",  # an empty mail folder beside its index
        "Local Folders/Trash.msf": MORK,
        "Local Folders/msgFilterRules.dat": b'version="9"\nlogging="no"\nname="Rechnungen"\nenabled="yes"\n',
        ".DS_Store": b"\x00\x00\x00\x01Bud1" + b"\x00" * 56,
        "notes.txt": "Bitte bis Freitag zahlen.\n".encode(),
    }
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


@pytest.mark.parametrize("lang", ["en", "de"])
def test_a_mail_programs_folder_on_the_job_tab_sends_its_mail_and_not_the_programs_files(page, live, exports,
                                                                                        screenshots, lang):
    server, token = live
    page.get(f"{server.url}/?lang={lang}")
    enter_key(page, token)
    by_id(page, "tab-jobs").click()
    by_id(page, "job-html").click()  # JSON only: the reports for people are not what is looked at here
    by_id(page, "job-folder").send_keys(str(exports))
    by_id(page, "job-button").click()
    status = follow_job(page)
    page.save_screenshot(str(screenshots / f"mail-exports-job-{lang}.png"))
    print(f"screenshot: {screenshots / f'mail-exports-job-{lang}.png'}")
    # the note is named; the mail programs' files (and the Finder's) are left out unsaid
    assert shown(page, "job-skipped") and by_id(page, "job-skipped").text == SKIPPED[lang]
    job_id = status.split()[1].rstrip(":")
    auth = {"Authorization": f"Bearer {token}"}
    job = requests.get(f"{server.url}/v1/jobs/{job_id}", headers=auth, timeout=WAIT).json()
    lines = [json.loads(x) for x in requests.get(f"{server.url}/v1/jobs/{job_id}/results", headers=auth,
                                                 timeout=WAIT).text.splitlines()]
    # the job's documents: each invoice once (from the mailbox of no extension, the .emlx, Thunderbird's Inbox)
    # and the message without an invoice; nothing named after a mail program's own file
    reports = sorted(line["name"].rsplit("/", 1)[-1] for line in lines if "report" in line)
    assert reports == sorted(INVOICES), [line["name"] for line in lines]
    assert [line["notice"]["code"] for line in lines if "notice" in line] == ["NO_INVOICE"]
    assert len(lines) == 5 and not [line for line in lines if "error" in line], lines
    assert not [line["name"] for line in lines if any(part in line["name"] for part in LEFT_OUT)]
    assert any("Rechnungen.mbox/mbox" in line["name"] for line in lines)  # sent under its own path
    # the painted status line is the job's own count: 5 documents, 1 message without an invoice
    assert (job["total"], job["noInvoice"]) == (5, 1)
    assert status == STATUS[lang].format(**{**job, "invalid": job["invalid"] - job["indeterminate"]}), status


def test_a_mailbox_of_no_extension_and_an_emlx_are_read_as_mail_on_the_validate_tab(page, live, exports,
                                                                                    screenshots):
    server, token = live
    enter_key(page, token)
    for path, messages in ((exports / "Rechnungen.mbox/mbox", 2), (exports / "INBOX.mbox/Messages/101.emlx", 1)):
        by_id(page, "file").send_keys(str(path))
        said = f"{messages} message{'s' if messages > 1 else ''}:"  # (the one before said another count)
        wait(page, lambda d: (visible("validate-error")(d) or visible("result")(d)
                              or visible("mail-result")(d) and by_id(d, "mail-title").text.startswith(said))
             and d.find_element("id", "validate-button").is_enabled())
        assert shown(page, "mail-result") and not shown(page, "result"), by_id(page, "validate-error").text
        names = [n.text for n in page.find_elements("css selector", "#mail-messages .invoices .name")]
        expected = {"mbox": ["export-ubl.xml", "export-fx.pdf"], "101.emlx": ["store-cii.xml"]}[path.name]
        assert names == expected, names
        page.save_screenshot(str(screenshots / f"mail-exports-validate-{path.name}.png"))


def test_a_mail_programs_folder_dropped_on_the_drop_zone_runs_as_its_job(page, live, exports, screenshots):
    """The folder dragged onto the validate tab's drop zone (as from a file manager: chromium's own drop, through
    DevTools' Input.dispatchDragEvent) is the job tab's folder: the same documents go up, the same file is named."""
    server, token = live
    enter_key(page, token)
    zone = by_id(page, "drop")
    x = zone.rect["x"] + zone.rect["width"] / 2
    y = zone.rect["y"] + zone.rect["height"] / 2
    data = {"items": [], "files": [str(exports)], "dragOperationsMask": 1}
    for kind in ("dragEnter", "dragOver", "drop"):
        page.execute_cdp_cmd("Input.dispatchDragEvent", {"type": kind, "x": x, "y": y, "data": data})
    status = follow_job(page)
    assert shown(page, "tab-jobs") and by_id(page, "tab-jobs").get_attribute("aria-selected") == "true"
    assert by_id(page, "job-skipped").text == SKIPPED["en"]
    picked = page.find_element("css selector", 'label.picker[for="job-folder"] .picked').text
    assert picked == f"{sum(1 for p in exports.rglob('*') if p.is_file())} files", picked  # (12: what was dropped)
    job_id = status.split()[1].rstrip(":")
    lines = [json.loads(x) for x in requests.get(f"{server.url}/v1/jobs/{job_id}/results", timeout=WAIT,
                                                 headers={"Authorization": f"Bearer {token}"}).text.splitlines()]
    assert sorted(line["name"].rsplit("/", 1)[-1] for line in lines if "report" in line) == sorted(INVOICES)
    assert len(lines) == 5 and all(line["name"].startswith("mail/") for line in lines), lines
    page.save_screenshot(str(screenshots / "mail-exports-dropped.png"))
