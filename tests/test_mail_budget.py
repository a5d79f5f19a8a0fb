"""A message's parser budget, all its levels together (pipeline.unpack.mail.Budget): MIME parts counted across the
messages attached to it (each was parsed with 500 of its own: 499 attached messages of 498 parts made 250,000
parts, 17 s), header fields, and lines, which cost the parser as much as bytes do (40 MB of empty lines took 27 s
and 650 MB, of short header fields 26 s and 1.2 GB). Each bound ends as one entry for the message, the invoices
before it and the other messages of the mailbox keep theirs; the mailbox reader holds a message's bytes, not a
list of its lines (20 MB of empty lines in one message made 1.8 GB there)."""
from __future__ import annotations

import base64
import json
import subprocess
import sys
import time

from conftest import CORPUS, REPO
from mailbuild import mbox, message
from pipeline.unpack import Limits, Unpacker, mail
from test_mail import client, post  # noqa: F401 - the client fixture
from test_validate_batch import limits  # noqa: F401 - the limits fixture

UBL = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml").read_bytes()
LIMITS = Limits(max_files=20_000, max_member=1 << 20, max_total=200 << 20)  # a message: 3 MiB, 98,304 lines
HEAD = (b"From: Seller <billing@seller.example>\r\nSubject: Rechnung\r\nDate: Sun, 1 Mar 2026 08:00:00 +0000\r\n"
        b"Message-ID: <m@seller.example>\r\nMIME-Version: 1.0\r\n")
LABEL = '2026-03-01 08:00 billing@seller.example "Rechnung" <m@seller.example>'


def mixed(*parts: bytes, boundary: bytes = b"B") -> bytes:
    return b'Content-Type: multipart/mixed; boundary="' + boundary + b'"\r\n\r\n' + b"".join(
        b"--" + boundary + b"\r\n" + p + b"\r\n" for p in parts) + b"--" + boundary + b"--\r\n"


def attached(name: bytes, data: bytes, ctype: bytes = b"application/octet-stream") -> bytes:
    return (b"Content-Type: " + ctype + b'; name="' + name + b'"\r\nContent-Transfer-Encoding: base64\r\n\r\n'
            + base64.encodebytes(data))


def entries(data: bytes, name: str = "m.eml", limits: Limits = LIMITS) -> list[tuple[str, str | int]]:
    started = time.process_time()
    out = [(m.name, m.error[0] if m.error else len(m.data)) for m in Unpacker(limits).file(name, data)]
    assert time.process_time() - started < 5, "a bound is met in CPU seconds, not tens"
    return out


INNER = HEAD + mixed(*[b"Content-Type: text/plain\r\n\r\nx"] * 20, boundary=b"I")  # 22 parts
FAN_OUT = HEAD + mixed(attached(b"a.xml", UBL), *[attached(b"f%d.eml" % n, INNER) for n in range(30)])


def test_parts_are_counted_across_the_attached_messages():
    assert entries(FAN_OUT) == [(f"{LABEL}/a.xml", len(UBL)), (LABEL, "MAIL_TOO_MANY_PARTS")]
    # fewer attached messages: each read, under its own name
    few = HEAD + mixed(attached(b"a.xml", UBL), *[attached(b"f%d.eml" % n, INNER) for n in range(3)])
    assert entries(few) == [(f"{LABEL}/a.xml", len(UBL))]


EMPTY_LINES = HEAD + mixed(attached(b"a.xml", UBL), b"Content-Type: text/plain\r\n\r\n" + b"\n" * 100_000)
CR_LINES = HEAD + mixed(b"Content-Type: text/plain\r\n\r\n" + b"\r" * 100_000)  # the parser ends a line at CR too
FOLDED = HEAD + b"Received: a\r\n" + b" a\r\n" * 100_000 + b"\r\nbody"
ATTACHED_LINES = HEAD + mixed(*[attached(b"f%d.eml" % n, HEAD + b"\r\n" + b"\n" * 30_000) for n in range(4)])
MANY_FIELDS = HEAD + b"".join(b"X-H%d: v\r\n" % n for n in range(mail.MAX_FIELDS)) + b"\r\nbody"


def test_lines_and_header_fields_end_as_one_entry_for_the_message():
    for data in (EMPTY_LINES, CR_LINES, FOLDED, ATTACHED_LINES):
        assert entries(data) == [(LABEL, "MESSAGE_TOO_LARGE")]
    (error,) = [m.error for m in Unpacker(LIMITS).file("m.eml", EMPTY_LINES)]
    assert "more than 98304 lines" in error[1] and "3145728 bytes" in error[1]
    assert entries(MANY_FIELDS, limits=Limits(20_000, 20 << 20, 200 << 20)) == [(LABEL, "MAIL_HEADER_TOO_LONG")]
    # a message of as many lines, but real ones, is read: an invoice of 35 bytes a line is 32 bytes' cost short
    long_lines = HEAD + mixed(b"Content-Type: text/plain\r\n\r\n" + b"x" * 34 + b"\n" * 90_000)
    assert entries(long_lines) == [(LABEL, "NO_INVOICE")]


def test_each_bound_is_an_entry_in_a_mailbox_and_the_batch_answers_200(client, limits):
    limits(EINVOICE_MAX_UPLOAD_BYTES=1 << 20)  # as LIMITS: a message of 3 MiB, 98,304 lines
    messages = [FAN_OUT, EMPTY_LINES, FOLDED, message(9, [("b.xml", UBL)]).as_bytes()]
    r = post(client, [("month.mbox", mbox([m.replace(b"\r\n", b"\n") for m in messages]))])
    assert r.status_code == 200, r.text
    got = [(e["email"]["index"], (e.get("error") or e.get("notice") or {}).get("code") or e["report"]["verdict"])
           for e in r.json["results"]]
    assert got == [(1, "valid"), (1, "MAIL_TOO_MANY_PARTS"), (2, "MESSAGE_TOO_LARGE"), (3, "MESSAGE_TOO_LARGE"),
                   (4, "valid")]


CHILD = """
import io, json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from pipeline.unpack import Limits, Unpacker
data = b"From a Sun Mar  1 08:00:00 2026\\nFrom: a@b.example\\nSubject: lines\\n\\n" + b"\\n" * (8 << 20)
before, started = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.process_time()
codes = [m.error[0] for m in Unpacker(Limits(10, 20 << 20, 1 << 30)).file("box.mbox", data)]
print(json.dumps({"codes": codes, "grew": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before,
                  "cpu": time.process_time() - started}))
"""


def test_a_mailbox_of_empty_lines_is_read_in_memory_of_its_size():
    """The worst for the mailbox reader: a message of 8 MiB of empty lines grew its peak memory by 730 MB (a list
    of 8 million lines) and took 13 s CPU (a Python step a line); now its memory grows by the message's bytes (two
    copies) and nothing for the parser (its lines are refused before it runs), and its plain lines are taken
    together (0.5 s)."""
    out = json.loads(subprocess.run([sys.executable, "-c", CHILD, str(REPO)], capture_output=True, check=True,
                                    timeout=300).stdout)
    assert out["codes"] == ["MESSAGE_TOO_LARGE"]
    assert out["grew"] < 64 << 10, f"peak resident memory grew by {out['grew']} KiB"
    assert out["cpu"] < 5, f"{out['cpu']:.1f} s CPU"
