"""A month's mail as an accounts-payable team gets it: real mailers' shapes (an HTML mail with the PDF inline, RFC 2231
and RFC 2047 file names, XML sent as application/octet-stream, a PDF inside a ZIP inside the message, an 8-bit
Latin-1 invoice, a calendar invite, a PGP-signed message), each document under a name of its own: two attachments
named alike in one message, or one message twice in a mailbox, gave identical rows whose verdicts could not be told
apart. And the counts: a message without an invoice is no document (`pipeline jobs` said "documents 1" for it), and
the inbox's log counted a not-judged PDF as invalid."""
from __future__ import annotations

import base64
import json
import re
import time
import zipfile
from pathlib import Path

from mailbuild import mbox, message, zipped
from pipeline.cli.jobs import _summary
from pipeline.jobs.inbox import outcome
from pipeline.storage.jobs import Job
from pipeline.unpack import Limits, Unpacker, distinct
from tests.test_jobs import documents
from tests.test_platform_helpers import cli, serve_with_key

REALWORLD = Path(__file__).resolve().parents[2] / "shared" / "realworld" / "corpus" / "XML-Rechnung"
LIMITS = Limits(max_files=1000, max_member=20 << 20, max_total=1 << 30)


def _b64(data: bytes) -> bytes:
    return base64.encodebytes(data)


def _head(n: int, subject: bytes, content_type: bytes) -> bytes:
    return (b"From: Lieferant GmbH <rechnung@lieferant.example>\r\nTo: ap@kunde.example\r\nSubject: " + subject
            + b"\r\nDate: Mon, 02 Mar 2026 09:0%d:00 +0100\r\nMessage-ID: <m%d@lieferant.example>\r\n" % (n, n)
            + b"MIME-Version: 1.0\r\n" + content_type + b"\r\n\r\n")


def _names(data: bytes, file: str = "m.eml") -> list[tuple[str, str | None]]:
    """(the name after the message's, the entry's code or None for a document) of each entry."""
    return [(m.name.split(">/", 1)[-1] if ">/" in m.name else "", m.error and m.error[0])
            for m in Unpacker(LIMITS).file(file, data)]


def test_real_mailers_shapes_give_each_invoice_by_its_name():
    pdf = (REALWORLD / "FX" / "XRECHNUNG_Elektron.pdf").read_bytes()
    cii = (REALWORLD / "CII" / "EN16931_Rabatte.cii.xml").read_bytes()
    # an HTML mail (multipart/related) whose PDF is inline, named by Content-Type's name= only; one of no name
    related = _head(1, b"Rechnung 1", b'Content-Type: multipart/related; boundary="REL"') + (
        b'--REL\r\nContent-Type: multipart/alternative; boundary="ALT"\r\n\r\n--ALT\r\nContent-Type: text/plain\r\n\r\n'
        b'Siehe Anhang\r\n--ALT\r\nContent-Type: text/html\r\n\r\n<html><img src="cid:logo"></html>\r\n--ALT--\r\n'
        b"--REL\r\nContent-Type: image/png\r\nContent-ID: <logo>\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        b"iVBORw0KGgo=\r\n--REL\r\nContent-Type: application/pdf; name=\"RE-2026-001.pdf\"\r\nContent-ID: <pdf1>\r\n"
        b"Content-Disposition: inline\r\nContent-Transfer-Encoding: base64\r\n\r\n" + _b64(pdf)
        + b"--REL\r\nContent-Type: application/pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n" + _b64(pdf)
        + b"--REL--\r\n")
    assert _names(related) == [("RE-2026-001.pdf", None), ("part-5.pdf", None)]  # (its leaf part's number)
    # RFC 2231 (one value, and in sections), RFC 2047 in a quoted filename (Outlook's), XML as octet-stream
    names = _head(2, b"Rechnung M=?utf-8?q?=C3=A4rz?=", b'Content-Type: multipart/mixed; boundary="B"') + (
        b"--B\r\nContent-Type: text/plain\r\n\r\nhi\r\n--B\r\nContent-Type: application/xml\r\nContent-Disposition: "
        b"attachment; filename*=UTF-8''Rechnung%20M%C3%A4rz.xml\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        + _b64(cii) + b"--B\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment;\r\n"
        b" filename*0*=UTF-8''Rechnung%20f%C3%BCr%20;\r\n filename*1*=M%C3%A4rz%202026.pdf\r\n"
        b"Content-Transfer-Encoding: base64\r\n\r\n" + _b64(pdf)
        + b'--B\r\nContent-Type: application/octet-stream; name="=?UTF-8?B?R3V0c2NocmlmdCDDnGJlcnNpY2h0LnhtbA==?="'
        b"\r\nContent-Transfer-Encoding: base64\r\n\r\n" + _b64(cii)
        + b"--B\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\r\n" + _b64(cii)
        + b"--B--\r\n")
    assert _names(names) == [("Rechnung M\u00e4rz.xml", None), ("Rechnung f\u00fcr M\u00e4rz 2026.pdf", None),
                             ("Gutschrift \u00dcbersicht.xml", None), ("part-5.xml", None)]
    # a PDF and its XML in a folder of a ZIP attached as application/x-zip-compressed
    archive = zipped([("maerz/RE-1.pdf", pdf), ("maerz/RE-1.xml", cii)])
    zipped_mail = _head(3, b"Rechnungen", b'Content-Type: multipart/mixed; boundary="B"') + (
        b'--B\r\nContent-Type: application/x-zip-compressed; name="Rechnungen.zip"\r\nContent-Transfer-Encoding: '
        b"base64\r\n\r\n" + _b64(archive) + b"--B--\r\n")
    assert _names(zipped_mail) == [("Rechnungen.zip/maerz/RE-1.pdf", None), ("Rechnungen.zip/maerz/RE-1.xml", None)]
    # 8-bit: a Latin-1 subject and file name, a text of an unknown charset, the XML sent unencoded
    body = cii.split(b"?>", 1)[1].decode().encode("latin-1", "xmlcharrefreplace")
    latin = b'<?xml version="1.0" encoding="ISO-8859-1"?>' + body
    eight = _head(4, b"Rechnung f\xfcr M\xe4rz", b'Content-Type: multipart/mixed; boundary="B"') + (
        b'--B\r\nContent-Type: text/plain; charset="x-unknown-8bit"\r\nContent-Transfer-Encoding: 8bit\r\n\r\n'
        b"Gr\xfc\xdfe\r\n--B\r\nContent-Type: text/xml; name=\"rechnung_m\xe4rz.xml\"\r\nContent-Transfer-Encoding: "
        b"8bit\r\n\r\n" + latin + b"\r\n--B--\r\n")
    [doc] = Unpacker(LIMITS).file("m.eml", eight)
    assert doc.name.endswith('"Rechnung f\u00fcr M\u00e4rz" <m4@lieferant.example>/rechnung_m\u00e4rz.xml')
    assert doc.data == latin and b"gr\xfcn" in doc.data  # the bytes as sent (the line break the part ends with
    # belongs to its boundary), their encoding declared
    # a calendar invite: no invoice, its .ics named
    invite = _head(5, b"Einladung", b'Content-Type: multipart/mixed; boundary="B"') + (
        b"--B\r\nContent-Type: text/calendar; method=REQUEST\r\n\r\nBEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n"
        b'--B\r\nContent-Type: application/ics; name="invite.ics"\r\nContent-Disposition: attachment; '
        b'filename="invite.ics"\r\n\r\nBEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n--B--\r\n')
    [notice] = Unpacker(LIMITS).file("m.eml", invite)
    assert notice.error[0] == "NO_INVOICE" and "invite.ics" in notice.error[1]
    # PGP/MIME clear-signed: the invoice inside the signed part, the signature no document
    signed = _head(6, b"Signiert", b'Content-Type: multipart/signed; protocol="application/pgp-signature"; '
                   b'micalg=pgp-sha256; boundary="S"') + (
        b'--S\r\nContent-Type: multipart/mixed; boundary="B"\r\n\r\n--B\r\nContent-Type: text/plain\r\n\r\nhi\r\n'
        b'--B\r\nContent-Type: application/xml; name="r.xml"\r\nContent-Transfer-Encoding: base64\r\n\r\n'
        + _b64(cii) + b"--B--\r\n\r\n--S\r\nContent-Type: application/pgp-signature; name=\"signature.asc\"\r\n\r\n"
        b"-----BEGIN PGP SIGNATURE-----\r\nAAAA\r\n-----END PGP SIGNATURE-----\r\n--S--\r\n")
    assert _names(signed) == [("r.xml", None)]


def test_two_attachments_of_one_name_are_two_rows_told_apart(tmp_path):
    valid, invalid = documents()
    mail = tmp_path / "post.eml"
    mail.write_bytes(message(1, [("rechnung.xml", valid), ("rechnung.xml", invalid)]).as_bytes())
    run = cli({}, "validate", str(mail), "--json", "--jobs", "1")
    results = json.loads(run.stdout)["results"]
    assert [r["name"].rsplit("/", 1)[-1] for r in results] == ["rechnung.xml", "rechnung (2).xml"]
    assert [r["report"]["valid"] for r in results] == [True, False]  # each verdict with its own name
    assert len({r["name"] for r in results}) == 2


def test_one_message_twice_in_a_mailbox_and_names_taken_already():
    valid, _ = documents()
    same = message(1, [("rechnung.xml", valid)]).as_bytes()
    empty = message(2, [], subject="Hallo").as_bytes()
    members = list(Unpacker(LIMITS).file("inbox.mbox", mbox([same, empty, same, empty])))
    names = [m.name for m in members]
    assert len(set(names)) == 4, names
    assert names[2] == names[0][:-len(".xml")] + " (2).xml"
    assert names[3] == names[1] + " (2)" and members[3].error[0] == "NO_INVOICE"  # a message's name: no extension
    # a name that is already there is passed over; the folder part of a name is never changed
    assert distinct("a.b/rechnung.xml", {"a.b/rechnung.xml", "a.b/rechnung (2).xml"}) == ("a.b/rechnung (3).xml", 3)
    assert distinct("x/.profile", set()) == ("x/.profile (2)", 2)


def test_a_mailbox_of_one_message_many_times_is_named_in_linear_time():
    """Each copy's name was looked for from " (2)" up: 20,000 copies took ~45 s of CPU for their names alone
    (quadratic), where reading them takes ~6 s."""
    valid, _ = documents()
    same = message(1, [("rechnung.xml", valid[:200])]).as_bytes()
    box = b"".join(b"From sender@example Sun Mar  1 08:00:00 2026\n" + same + b"\n" for _ in range(20_000))
    started = time.process_time()
    members = list(Unpacker(Limits(max_files=100_000, max_member=1 << 20, max_total=1 << 32)).file("inbox.mbox", box))
    assert len({m.name for m in members}) == 20_000 and members[-1].name.endswith(" (20000).xml")
    assert time.process_time() - started < 20


def _job(**counts) -> Job:
    now = time.time()
    values = {"total": 0, "done": 0, "valid": 0, "invalid": 0, "errors": 0, **counts}
    return Job("job_1", "key", "done", "validate", "{}", cost=0, reserved=0, charged=0, created_at=now,
               started_at=now, finished_at=now, message=None, **values)


def test_a_message_without_an_invoice_is_no_document_in_the_counts():
    only = _job(total=1, done=1)  # one message, no invoice in it
    lines = dict(line.split(None, 1) for line in _summary(only.to_dict(), "en").splitlines()
                 if not line.startswith(("no invoice", "credits")))
    assert lines["documents"] == "0" and "no invoice       1" in _summary(only.to_dict(), "en")
    mixed = _job(total=5, done=5, valid=2, invalid=2, indeterminate=1, errors=0)  # and one without an invoice
    text = _summary(mixed.to_dict(), "de")
    assert "Dokumente          4" in text and "ohne Rechnung      1" in text
    # the inbox's log: the not-judged PDF is not called invalid
    assert outcome(_job(total=3, done=3, valid=1, invalid=1, indeterminate=1)) == (
        "1 valid, 0 invalid, 1 indeterminate, 0 read only, 0 not validated, 1 without an invoice")


def test_a_job_of_mail_counts_its_documents_and_names_each_row(tmp_path):
    """Through `pipeline serve`: the rows of a job's results (JSON Lines and the ZIP's files) each under a name of
    their own, and `pipeline jobs submit --wait` and `pipeline jobs list` counting the documents only."""
    server, env, token = serve_with_key(tmp_path / "data", "mail-names", 100, workers=1, warm=False)
    try:
        env = {**env, "EINVOICE_URL": server.url, "EINVOICE_API_KEY": token}
        valid, invalid = documents()
        folder = tmp_path / "post"
        folder.mkdir()
        (folder / "two.eml").write_bytes(message(1, [("rechnung.xml", valid), ("rechnung.xml", invalid)]).as_bytes())
        (folder / "hello.eml").write_bytes(message(2, [], subject="Hallo").as_bytes())
        run = cli(env, "jobs", "submit", str(folder), "--wait")
        assert run.returncode == 1, run.stderr  # one invoice invalid
        said = dict(line.split(None, 1) for line in run.stdout.splitlines() if " " in line)
        assert (said["documents"].strip(), said["valid"].strip(), said["invalid"].strip()) == ("2", "1", "1")
        assert re.search(r"^no invoice +1$", run.stdout, re.MULTILINE), run.stdout
        job_id = said["job"].strip()
        listed = cli(env, "jobs", "list").stdout.splitlines()
        row = next(line.split() for line in listed if line.startswith(job_id))
        assert row[3:6] == ["2", "1", "1"]  # documents, valid, invalid
        lines = [json.loads(x) for x in cli(env, "jobs", "results", job_id).stdout.splitlines()]
        names = [x["name"].rsplit("/", 1)[-1] for x in lines if "report" in x]
        assert sorted(names) == ["rechnung (2).xml", "rechnung.xml"]
        assert {x["name"].rsplit("/", 1)[-1]: x["report"]["valid"] for x in lines if "report" in x} == {
            "rechnung.xml": True, "rechnung (2).xml": False}
        archive = tmp_path / "results.zip"
        assert cli(env, "jobs", "results", job_id, "--format", "zip", "-o", str(archive)).returncode == 0
        with zipfile.ZipFile(archive) as z:
            files = [n.rsplit("/", 1)[-1] for n in z.namelist()]
        assert "rechnung.xml.json" in files and "rechnung (2).xml.json" in files
    finally:
        server.stop()
