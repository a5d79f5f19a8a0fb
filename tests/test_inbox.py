"""`pipeline inbox` against Debian's dovecot, started here (tests/dovecot.py): 300 messages built from the shared
corpus' and real-world files (XML, PDF and ZIP attachments, a forwarded message, a winmail.dat, messages without
an invoice), the inbox process killed once midway and started again. Every invoice gets one result, every message
is moved once, to the folder its invoices' verdicts name, and each verdict is the single endpoint's."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter

import falcon.testing
import pytest

from conftest import CORPUS, REPO, SHARED
from dovecot import PASSWORD, Dovecot
from mailbuild import message, tnef, zipped
from pipeline.check.detect import route
from pipeline.service.app import create_app
from test_validate_batch import form

pytestmark = pytest.mark.slow
FOLDERS = {"valid": "Valid", "invalid": "Invalid", "other": "Other"}
MAX_SIZE = 400_000


def _pool(folder, pattern):
    return sorted(p for p in folder.glob(pattern) if p.stat().st_size <= MAX_SIZE)


def documents():
    xml = (_pool(CORPUS / "xrechnung-testsuite", "**/*.xml")[:60] + _pool(SHARED / "realworld/corpus/XML-Rechnung", "**/*.xml")
           + _pool(SHARED / "realworld/peppol-bis3", "**/*.xml")[:20])
    pdf = _pool(SHARED / "realworld/corpus/ZUGFeRDv2/correct", "**/*.pdf")[:12] + \
        _pool(SHARED / "realworld/corpus/XML-Rechnung/FX", "*.pdf")[:8]
    return [(p.name, p.read_bytes()) for p in xml], [(p.name, p.read_bytes()) for p in pdf]


def mailbox_of(n_messages=300):
    """[(message bytes, Message-ID, [(attachment name, document bytes)] the invoices it holds)]."""
    xml, pdf = documents()
    out = []
    for n in range(n_messages):
        x, y, p = xml[n % len(xml)], xml[(n * 7 + 3) % len(xml)], pdf[n % len(pdf)]
        forwarded = None
        if n % 10 == 9:
            attached, invoices = ([("photo.png", b"\x89PNG\r\n\x1a\n")] if n % 20 == 9 else []), []
        elif n % 10 == 3:
            attached, invoices = [p], [p]
        elif n % 10 == 5:
            attached, invoices = [("invoices.zip", zipped([x, y]))], [x, y]
        elif n % 10 == 7:
            attached, invoices = [x, p], [x, p]
        else:
            attached, invoices = [x], [x]
        if n == 100:
            forwarded, attached, invoices = message(1000, [y], subject="Original"), [], [y]
        if n == 150:
            attached, invoices = [("winmail.dat", tnef([x, ("logo.png", b"\x89PNG"), p]))], [x, p]
        m = message(n, attached, forwarded=forwarded)
        out.append((m.as_bytes(), m["Message-ID"], invoices))
    return out


def single_verdicts(items):
    """The single endpoint's report of each invoice (the rules `auto` routes it to), by content."""
    client = falcon.testing.TestClient(create_app(platform=False))
    reports = {}
    for _, _, invoices in items:
        for _, data in invoices:
            if data not in reports:
                body, ctype = form([("doc", data)])
                r = client.simulate_post(f"/v1/invoice/{route(data, 'auto')}/validate", body=body,
                                         headers={"Content-Type": ctype})
                assert r.status_code == 200, r.text
                reports[data] = {k: v for k, v in r.json.items() if k != "requestId"}
    return reports


def folder_contents(server):
    """Message-ID -> folders it is in (INBOX and the three)."""
    box, seen = server.client(), {}
    for folder in ("INBOX", *FOLDERS.values()):
        typ, _ = box.select(folder, readonly=True)
        if typ != "OK":
            continue
        typ, data = box.uid("FETCH", "1:*", "(BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])")
        for item in data:
            if isinstance(item, tuple):
                mid = re.search(rb"<[^>]+>", item[1]).group().decode()
                seen.setdefault(mid, []).append(folder)
    box.logout()
    return seen


def moved_count(server) -> int:
    box, total = server.client(), 0
    for folder in FOLDERS.values():
        typ, data = box.status(folder, "(MESSAGES)")
        if typ == "OK":
            total += int(re.search(rb"MESSAGES (\d+)", data[0]).group(1))
    box.logout()
    return total


@pytest.fixture
def server():
    s = Dovecot()
    yield s
    s.stop()


def inbox_command(server, *extra):
    return [sys.executable, "-m", "pipeline", "inbox", server.url, "--cafile", str(server.cafile), "--key-id",
            "inboxkey0001", "--move-valid", "Valid", "--move-invalid", "Invalid", "--move-other", "Other", *extra]


def inbox_env(tmp_path):
    return {**os.environ, "EINVOICE_DATA_DIR": str(tmp_path / "data"), "EINVOICE_IMAP_PASSWORD": PASSWORD,
            "EINVOICE_JOB_LEASE": "3", "EINVOICE_JOB_RECORD_EVERY": "0.5"}


def test_300_messages_through_a_crash(server, tmp_path):
    items = mailbox_of(300)
    box = server.client()
    for data, _, _ in items:
        assert box.append("INBOX", None, None, data)[0] == "OK"
    box.logout()
    env = inbox_env(tmp_path)
    log = open(tmp_path / "inbox-1.log", "wb")
    first = subprocess.Popen(inbox_command(server), cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 1800
    while moved_count(server) < 60:
        assert first.poll() is None, (tmp_path / "inbox-1.log").read_text()[-3000:]
        assert time.monotonic() < deadline, "the inbox moved too few messages"
        time.sleep(1)
    first.send_signal(signal.SIGKILL)  # midway: jobs submitted, some running, messages half moved
    first.wait()
    log.close()
    moved_before = moved_count(server)
    assert 60 <= moved_before < 300
    second = subprocess.run(inbox_command(server), cwd=REPO, env=env, capture_output=True, timeout=1800)
    assert second.returncode == 0, second.stdout.decode()[-3000:] + second.stderr.decode()[-3000:]

    # every message moved once, to the folder its invoices' verdicts name
    reports = single_verdicts(items)
    where = folder_contents(server)
    assert len(where) == 300 and all(len(f) == 1 for f in where.values()), \
        Counter(len(f) for f in where.values())
    for _, mid, invoices in items:
        verdicts = [reports[d]["valid"] for _, d in invoices]
        expected = "Other" if not invoices else "Valid" if all(verdicts) else "Invalid"
        assert where[mid] == [expected], (mid, verdicts)

    # every invoice once, each with the single endpoint's report
    from pipeline.settings import get_settings

    os.environ["EINVOICE_DATA_DIR"], saved = str(tmp_path / "data"), os.environ.get("EINVOICE_DATA_DIR")
    get_settings.cache_clear()
    try:
        from pipeline.storage import open_store

        store = open_store()
        rows = store._read("SELECT uid, job_id, state FROM inbox_messages")
        assert len(rows) == 300 and {r[2] for r in rows} == {"done"} and len({r[1] for r in rows}) == 300
        assert store._read("SELECT COUNT(*) FROM jobs")[0][0] == 300  # no message was submitted twice
        by_mid = {mid: invoices for _, mid, invoices in items}
        for _, job_id, _ in rows:
            job = store.get_job(job_id)
            assert job.state == "done"
            lines = [json.loads(line) for _, _, _, line in store.result_lines(job_id)]
            mid = lines[0]["email"]["messageId"]
            invoices = by_mid[mid]
            if not invoices:
                assert [e["notice"]["code"] for e in lines] == ["NO_INVOICE"]
                continue
            assert [e["name"].rsplit("/", 1)[-1] for e in lines] == [name for name, _ in invoices]
            for entry, (_, data) in zip(lines, invoices):
                assert {k: v for k, v in entry["report"].items() if k != "requestId"} == reports[data]
        store.close()
    finally:
        if saved is None:
            os.environ.pop("EINVOICE_DATA_DIR")
        else:
            os.environ["EINVOICE_DATA_DIR"] = saved
        get_settings.cache_clear()


def test_watch_takes_a_new_message_when_the_server_says_so(server, tmp_path):
    env = inbox_env(tmp_path)
    proc = subprocess.Popen(inbox_command(server, "--watch", "--idle", "600", "--poll", "600"), cwd=REPO, env=env,
                            stdout=open(tmp_path / "watch.log", "wb"), stderr=subprocess.STDOUT)
    try:
        xml, _ = documents()
        box = server.client()
        for n in range(2):
            assert box.append("INBOX", None, None, message(n, [xml[n]]).as_bytes())[0] == "OK"
            deadline = time.monotonic() + 300  # far below the 600 s IDLE and poll: only IDLE's news can do it
            while moved_count(server) < n + 1:
                assert proc.poll() is None, (tmp_path / "watch.log").read_text()[-3000:]
                assert time.monotonic() < deadline, (tmp_path / "watch.log").read_text()[-3000:]
                time.sleep(0.5)
        box.logout()
    finally:
        proc.terminate()
        proc.wait(30)


def test_the_password_never_on_the_command_line(server, tmp_path):
    url = server.url.replace("ap@", f"ap:{PASSWORD}@")
    r = subprocess.run([sys.executable, "-m", "pipeline", "inbox", url], cwd=REPO, env=inbox_env(tmp_path),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "EINVOICE_IMAP_PASSWORD" in r.stderr
    env = {k: v for k, v in inbox_env(tmp_path).items() if k != "EINVOICE_IMAP_PASSWORD"}
    (tmp_path / "pw").write_text(PASSWORD + "\n")
    r = subprocess.run(inbox_command(server, "--password-file", str(tmp_path / "pw")), cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]  # an empty mailbox: nothing to do, logged in from the file


def test_a_server_restart_midway_is_a_new_session_not_a_crash(server, tmp_path):
    # before: imaplib's `abort` (the socket ended under a command) was no OSError: the inbox died with a
    # traceback, and with --once the messages not yet moved stayed where they were
    xml, _ = documents()
    items = [message(n, [xml[n % len(xml)], xml[(n + 1) % len(xml)], xml[(n + 2) % len(xml)]]) for n in range(160)]
    box = server.client()
    for m in items:
        assert box.append("INBOX", None, None, m.as_bytes())[0] == "OK"
    box.logout()
    log = open(tmp_path / "inbox.log", "wb")
    proc = subprocess.Popen(inbox_command(server), cwd=REPO, env=inbox_env(tmp_path), stdout=log,
                            stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 900
    while moved_count(server) < 1:  # the restart as soon as it runs (on a fast host 80 messages were all moved
        # before a third one was seen moved)
        assert proc.poll() is None, (tmp_path / "inbox.log").read_text()[-3000:]
        assert time.monotonic() < deadline, "the inbox moved too few messages"
        time.sleep(0.3)
    server.halt()  # the server and its sessions go, as on a restart; the messages stay
    time.sleep(2)
    server.start()
    assert proc.wait(900) == 0, (tmp_path / "inbox.log").read_text()[-3000:]
    log.close()
    text = (tmp_path / "inbox.log").read_text()
    assert "Traceback" not in text
    where = folder_contents(server)
    assert sorted(where) == sorted(m["Message-ID"] for m in items) and all(len(f) == 1 for f in where.values())
    assert "INBOX" not in {f for folders in where.values() for f in folders}, "messages left behind"
    if moved_count(server) < len(items) or "connection lost" not in text:
        pytest.fail("the restart did not fall into the run:\n" + text[-3000:])


@pytest.mark.parametrize("watch", [False, True], ids=["once", "watch"])
def test_a_wrong_password_or_a_folder_that_does_not_exist_ends_at_once(server, tmp_path, watch):
    # before: said as b'[AUTHENTICATIONFAILED] ...', and with --watch tried again every 5 s for ever (servers lock
    # an account after repeated failed logins); the login now comes before the rule packs' warm-up
    extra = ["--watch"] if watch else []
    start = time.monotonic()
    r = subprocess.run(inbox_command(server, *extra), cwd=REPO, env={**inbox_env(tmp_path),
                       "EINVOICE_IMAP_PASSWORD": "wrong"}, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr[-2000:]
    assert "refused the login of 'ap': [AUTHENTICATIONFAILED]" in r.stderr and "EINVOICE_IMAP_PASSWORD" in r.stderr
    assert "b'" not in r.stderr and "again in" not in r.stderr
    assert time.monotonic() - start < 60
    r = subprocess.run([*inbox_command(server, *extra)[:4], server.url.replace("/INBOX", "/Rechnungen")]
                       + inbox_command(server, *extra)[5:], cwd=REPO, env=inbox_env(tmp_path), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "the mailbox 'Rechnungen' cannot be opened" in r.stderr, r.stderr[-2000:]


GONE_SCRIPT = """
import json, logging, ssl, sys
from pipeline.flows.job_document import check_options
from pipeline.jobs.inbox import Address, Inbox, Mailbox
from pipeline.storage import open_store
url, cafile, password, port = sys.argv[1:5]

class Busy(Mailbox):
    # another mail program on the same mailbox deletes the second new message just after this one listed them
    def uids_after(self, last):
        import imaplib
        uids = super().uids_after(last)
        other = imaplib.IMAP4_SSL("127.0.0.1", int(port), ssl_context=ssl.create_default_context(cafile=cafile))
        other.login("ap", password)
        other.select("INBOX")
        other.uid("STORE", str(uids[1]), "+FLAGS", r"(\\Deleted)")
        other.expunge()
        other.logout()
        return uids

logging.basicConfig(level=logging.INFO)
store = open_store()
operation, options = check_options({"operation": "validate"})
inbox = Inbox(store, "inboxkey0001", operation, options, 0, {"valid": "Valid", "invalid": "Invalid", "other": "Other"})
box = Busy(Address.parse(url), password, ssl.create_default_context(cafile=cafile))
inbox.prepare(box)
inbox.run_once(box)
print(json.dumps({"rows": store._read("SELECT uid, job_id, state, folder FROM inbox_messages ORDER BY uid"),
                  "jobs": store._read("SELECT COUNT(*) FROM jobs")[0][0]}))
"""


def test_a_message_another_client_deletes_before_it_is_read(server, tmp_path):
    # before: a MESSAGE_GONE job, an error: logged and recorded as moved to the invalid folder, which it never was
    xml, _ = documents()
    box = server.client()
    for n in range(3):
        assert box.append("INBOX", None, None, message(n, [xml[n]]).as_bytes())[0] == "OK"
    box.logout()
    r = subprocess.run([sys.executable, "-c", GONE_SCRIPT, server.url, str(server.cafile), PASSWORD,
                        str(server.port)], cwd=REPO, env=inbox_env(tmp_path), capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["jobs"] == 2
    (u1, j1, s1, f1), (u2, j2, s2, f2), (u3, j3, s3, f3) = out["rows"]
    assert (u2, j2, s2, f2) == (2, "", "done", None) and j1 and j3 and s1 == s3 == "done" and f1 and f3
    assert "uid 2 left the mailbox before it was read" in r.stderr
    assert moved_count(server) == 2
