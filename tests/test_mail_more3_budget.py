"""Issue 36: a message read outside a request had no time budget. `pipeline validate` on a folder of mail, `pipeline
jobs submit`'s folder as the inbox unpacks it and `pipeline inbox` read each message with the parts' bounds only,
and those leave a message of 499 parts with 8 KB of parameters in a header each (3.9 MB): 22-28 s of CPU in the
modern header parser, 50-83 s on a busy 2-core host, per message (a Content-Type's parameters, a
Content-Disposition's, RFC 2231 continuations alike); an mbox of such messages held the command for hours. Within
a request the request's budget stopped it (test_mail_more2_budget). Now each message outside a request is read
within a time of its own (`mail.message_seconds`), asked by the same checks: a message that outlasts it is one
MAIL_TIME_BUDGET entry after the documents found before, and the next message is read."""
from __future__ import annotations

import json
import time

import pytest

from conftest import CORPUS
from dovecot import Dovecot
from mailbuild import mbox, message
from pipeline import budget as time_budget
from pipeline.cli import main
from pipeline.unpack import Limits, Unpacker, mail
from test_inbox import FOLDERS
from test_inbox_uidvalidity import Backend, append, run_inbox

UBL = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml").read_bytes()
LIMITS = Limits(max_files=1 << 20, max_member=20 << 20, max_total=1 << 34)  # as `pipeline validate` reads a folder
HEAD = (b"From: Seller <billing@seller.example>\nTo: ap@buyer.example\nDate: Sun, 1 Mar 2026 08:00:00 +0000\n"
        b"Message-ID: <hostile@seller.example>\nMIME-Version: 1.0\nSubject: hostile\n")
LABEL = '2026-03-01 08:00 billing@seller.example "hostile" <hostile@seller.example>'
BUDGET = 0.5  # s a message may take in these tests (a stdlib parse of one part's 8 KB header: ~0.05-0.3 s)


def _params(field: str, n: int) -> bytes:
    """One part's header field of 8 KB of parameters (MAX_HEADER: as long as one is read), unique to the part (the
    policy's cache of parsed headers would take a repeated one for free)."""
    if field == "rfc2231":
        text = "Content-Disposition: attachment" + "".join(f"; filename*{i}*=utf-8''%C3%A4{n}x{i:04d}"
                                                           for i in range(400))
    else:
        text = field + "".join(f'; p{n}x{i}="v{i}"' for i in range(480))
    return text.encode()[:mail.MAX_HEADER]


def hostile(field: str, parts: int = 499, first: bytes = b"") -> bytes:
    """A message of `parts` pictures (the message may have 500 parts), each with `field` of 8 KB of parameters;
    `first`: a part before them (an invoice)."""
    plain = b"" if field.startswith("Content-Type") else b"Content-Type: image/png\n"
    body = b"".join(b"--B\n" + plain + _params(field, n) + b"\n\nx\n" for n in range(parts))
    return HEAD + b'Content-Type: multipart/mixed; boundary="B"\n\n' + first + body + b"--B--\n"


FIELDS = ["Content-Type: image/png", "Content-Disposition: attachment", "rfc2231"]


def budget(monkeypatch, seconds: float) -> None:
    """A message's own budget of `seconds`, whatever its size."""
    monkeypatch.setattr(mail, "MESSAGE_SECONDS", seconds)
    monkeypatch.setattr(mail, "MESSAGE_SECONDS_PER_MB", 0.0)


@pytest.fixture
def short(monkeypatch):
    budget(monkeypatch, BUDGET)


def read(data: bytes, name: str = "m.eml") -> list[tuple[str, str | int]]:
    return [(m.name, m.error[0] if m.error else len(m.data)) for m in Unpacker(LIMITS).file(name, data)]


@pytest.mark.parametrize("field", FIELDS, ids=["content-type", "content-disposition", "rfc2231"])
def test_a_costly_message_ends_at_its_own_budget(field, monkeypatch):
    """Measured first: the first 30 parts of the message, read with time enough, cost each part tens of
    milliseconds of CPU, so the message's 499 cost far more than its budget; read whole, it ends as one
    MAIL_TIME_BUDGET entry named by the message, within its budget and a part's slack."""
    budget(monkeypatch, 600)
    started = time.process_time()
    assert read(hostile(field, parts=30)) == [(LABEL, "NO_INVOICE")]  # (1-3 s of CPU)
    per_part = (time.process_time() - started) / 30
    budget(monkeypatch, BUDGET)
    data = hostile(field)
    assert per_part * 499 > 8 * BUDGET, f"{per_part * 1000:.1f} ms a part: the message is no costly one"
    started, cpu = time.monotonic(), time.process_time()
    got = [(m.name, m.error, time_budget.remaining()) for m in Unpacker(LIMITS).file("m.eml", data)]
    took, cpu = time.monotonic() - started, time.process_time() - cpu
    # (the spent budget is the message's: the caller taking the entry has none, as `pipeline inbox` adds it)
    assert [(name, code, left) for name, (code, _), left in got] == [(LABEL, "MAIL_TIME_BUDGET", None)]
    assert f"longer than {BUDGET:g} s" in got[0][1][1]
    assert took < BUDGET + 2.5 and cpu < BUDGET + 1.5, (f"{took:.1f} s, {cpu:.1f} s CPU; unbounded "
                                                        f"~{per_part * 499:.0f} s CPU")


def test_the_invoices_before_it_keep_theirs_and_an_mbox_goes_on(short):
    """An invoice before the costly parts is a document (the parts' Content-Disposition is what costs, read as the
    walk reaches each part, after the invoice); in a mailbox, the message is one entry between the other messages'
    documents."""
    invoice = (b'--B\nContent-Type: application/xml; name="a.xml"\nContent-Transfer-Encoding: 8bit\n\n' + UBL
               + b"\n")
    got = read(hostile(FIELDS[1], parts=498, first=invoice))  # (498: the message's and the invoice's make 500)
    assert got == [(f"{LABEL}/a.xml", len(UBL)), (LABEL, "MAIL_TIME_BUDGET")]  # (its line end is the boundary's)
    box = mbox([message(1, [("one.xml", UBL)]).as_bytes(), hostile(FIELDS[0]), message(3, [("three.xml", UBL)])
                .as_bytes()])
    got = [(m.email["index"], m.name.rsplit("/", 1)[-1], m.error and m.error[0]) for m in
           Unpacker(LIMITS).file("month.mbox", box)]
    assert [(i, code or name) for i, name, code in got] == [(1, "one.xml"), (2, "MAIL_TIME_BUDGET"), (3, "three.xml")]


def test_only_the_reading_counts_and_the_budget_never_reaches_the_caller(short):
    """The budget is open while the message is read, not while the caller works on what it found (a validation's
    stages would be refused by it, and a slow validation would use up the message's time)."""
    data = message(1, [("a.xml", UBL), ("b.xml", UBL)]).as_bytes()
    found = []
    for member in Unpacker(LIMITS).file("m.eml", data):
        assert time_budget.remaining() is None
        time.sleep(BUDGET * 1.5)  # the caller's work, longer than the message's budget
        found.append(member.error or member.name.rsplit("/", 1)[-1])
    assert found == ["a.xml", "b.xml"]


def test_within_a_request_the_requests_budget_applies(monkeypatch):
    """A message's own time is for reading outside a request: within one, the request's budget decides (spent:
    Exhausted, the upload's 503 TIME_BUDGET; not spent: the message is read, however little time a message of
    its own would have)."""
    monkeypatch.setattr(mail, "MESSAGE_SECONDS", 0.0)
    monkeypatch.setattr(mail, "MESSAGE_SECONDS_PER_MB", 0.0)
    data = message(1, [("a.xml", UBL)]).as_bytes()
    name = '2026-03-01 08:01 billing@seller.example "Invoice 0001"'
    assert [(n[:len(name)], e) for n, e in read(data)] == [(name, "MAIL_TIME_BUDGET")]  # outside: at once
    token = time_budget.start(60)
    try:
        assert [n.rsplit("/", 1)[-1] for n, _ in read(data)] == ["a.xml"]
    finally:
        time_budget.end(token)
    token = time_budget.start(0)
    try:
        with pytest.raises(time_budget.Exhausted):
            read(data)
    finally:
        time_budget.end(token)


def test_pipeline_validate_on_a_folder_of_mail_goes_on_past_it(tmp_path, short, capsys):
    (tmp_path / "mail").mkdir()
    (tmp_path / "mail" / "a.eml").write_bytes(message(1, [("rechnung.xml", UBL)]).as_bytes())
    (tmp_path / "mail" / "b.eml").write_bytes(hostile(FIELDS[2]))
    started = time.monotonic()
    code = main(["validate", str(tmp_path / "mail"), "--json", "--jobs", "1"])
    out, err = capsys.readouterr()
    assert time.monotonic() - started < 60, "the hostile message was read without its budget"
    results = json.loads(out)["results"]
    assert [(e["name"].split("/")[0], e.get("error", {}).get("code") or e["report"]["verdict"]) for e in results] \
        == [("a.eml", "valid"), ("b.eml", "MAIL_TIME_BUDGET")], (out[-2000:], err[-2000:])
    assert code == 2  # an entry refused unread, as FILE_TOO_LARGE is


@pytest.mark.slow
def test_pipeline_inbox_files_the_message_and_goes_on(tmp_path):
    """Through dovecot (tests/dovecot.py), at the default budget: the costly message's job holds its
    MAIL_TIME_BUDGET entry and the message goes to the invalid folder; the messages around it are checked and
    filed as ever."""
    server, backend = Dovecot(), Backend("sqlite", tmp_path)
    try:
        items = [message(1, [("one.xml", UBL)]).as_bytes(), hostile(FIELDS[0]), message(3, [("three.xml", UBL)])
                 .as_bytes()]
        append(server, items)
        started = time.monotonic()
        run_inbox(server, backend, *FOLDERS.values())
        took = time.monotonic() - started
        codes = {}
        for _, uid, job_id, state, folder, _ in backend.rows():
            lines = [json.loads(line) for *_, line in backend.store.result_lines(job_id)]
            codes[uid] = (folder, [e.get("error", {}).get("code") or e["report"]["verdict"] for e in lines])
        assert codes == {1: ("Valid", ["valid"]), 2: ("Invalid", ["MAIL_TIME_BUDGET"]), 3: ("Valid", ["valid"])}
        assert took < 600, f"{took:.0f} s"
    finally:
        backend.stop()
        server.stop()
