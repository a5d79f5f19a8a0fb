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
