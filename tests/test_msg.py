"""Outlook's .msg files (a message dragged out of Outlook onto a folder: an OLE compound file of MAPI properties)
read as an .eml is, wherever a ZIP is taken: each attachment that is an invoice (XML, PDF, ZIP, signed file), an
attached Outlook message's too, is a document named by the message and its file name with the single endpoint's
report for the same bytes; a message without one gets NO_INVOICE; a damaged or hostile file its entry, never a
5xx. The .msg files are built here (mailbuild.compound_file, outlook_message: MS-CFB and MS-OXMSG) from real-world
invoices: olefile, the reader, cannot write them."""
from __future__ import annotations

import json
import struct

import pytest

from conftest import SHARED
from mailbuild import compound_file, embedded, message, outlook_message, tnef, zipped
from pipeline.cli import main
from pipeline.errors import ApiError
from pipeline.unpack import Limits, Unpacker, kind
from pipeline.unpack import mail as mail_module
from test_mail_senders import client, code, reports_of  # noqa: F401 - the client fixture
from test_mail_senders import single as routed
from test_platform_helpers import Platform, make_store
from test_validate_batch import form
from test_validate_batch import post as post_batch

REAL = SHARED / "realworld/corpus/XML-Rechnung"
CII = (REAL / "CII/EN16931_Einfach.cii.xml").read_bytes()
CII2 = (REAL / "CII/EN16931_Rabatte.cii.xml").read_bytes()
UBL = next(iter(sorted((REAL / "UBL").glob("*.xml")))).read_bytes()
PDF = (REAL / "FX/EN16931_Einfach.pdf").read_bytes()
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 40
ZUGFERD = "/v1/invoice/zugferd/validate/batch"
M1 = '2026-03-01 08:01 billing@seller.example "Invoice 0001" <o1@seller.example>'


def post(client, files, path=ZUGFERD):
    r = post_batch(client, files, path=path)
    assert r.status_code == 200, r.text
    return r.json["results"]


def msg(n: int, attachments: list, **kw) -> bytes:
    return compound_file(outlook_message(n, attachments, **kw))


def test_each_invoice_of_an_outlook_message_is_a_document(client):
    forwarded = embedded(2, [("weitergeleitet.xml", CII2), ("logo.png", PNG)])
    data = msg(1, [("Rechnung.XML", CII), ("image001.png", PNG), ("Rechnung.pdf", PDF),
                   ("Belege.zip", zipped([("a.xml", UBL)])), forwarded])
    assert kind("Rechnung 4711.msg", data[:4096]) == "msg" and kind("Thumbs.db", data[:4096]) is None
    results = post(client, [("Rechnung 4711.msg", data)])
    # before: the .msg was one document, judged as XML or PDF: "not well-formed" on its first byte
    assert [e["name"] for e in results] == [
        f"{M1}/Rechnung.XML", f"{M1}/Rechnung.pdf", f"{M1}/Belege.zip/a.xml",
        f'{M1}/2026-03-01 08:02 billing@seller.example "Invoice 0002" <o2@seller.example>/weitergeleitet.xml']
    assert reports_of(client, results) == [routed(client, d) for d in (CII, PDF, UBL, CII2)]
    assert results[0]["email"] == {"messageId": "<o1@seller.example>", "date": "2026-03-01T08:01:00+00:00",
                                   "from": "Seller 1 <billing@seller.example>", "subject": "Invoice 0001",
                                   "index": 1}


def test_a_sent_message_without_received_headers_is_named_by_its_properties(client):
    results = post(client, [("sent.msg", msg(3, [("r.xml", CII)], headers=False))])
    assert [e["name"] for e in results] == [
        '2026-03-01 08:03 billing@seller.example "Invoice 0003" <o3@seller.example>/r.xml']
    assert results[0]["email"]["date"] == "2026-03-01T08:03:00+00:00"  # PR_CLIENT_SUBMIT_TIME


def test_a_message_without_invoice_winmail_and_mail_attached(client):
    results = post(client, [("a.msg", msg(4, [("logo.png", PNG)])),
                            ("b.msg", msg(5, [("winmail.dat", tnef([("t.xml", CII)])),
                                              ("fwd.eml", message(6, [("e.xml", CII2)]).as_bytes()),
                                              ("inner.msg", msg(7, [("m.xml", UBL)]))]))])
    assert code(results[0]) == "NO_INVOICE" and "logo.png" in results[0]["notice"]["message"]
    assert results[0]["name"].startswith("a.msg/")
    assert [e["name"].rsplit("/", 1)[-1] for e in results[1:]] == ["t.xml", "e.xml", "m.xml"]
    assert results[3]["name"].split("/")[2] == "inner.msg"  # an attached .msg file: under its file name
    assert reports_of(client, results[1:]) == [routed(client, d) for d in (CII, CII2, UBL)]


def test_an_outlook_message_attached_to_an_e_mail(client):
    m = message(8, [("Rechnung.msg", msg(1, [("a.xml", CII)])), ("kaputt.msg", b"no OLE file")])
    results = post(client, [("fwd.eml", m.as_bytes())])
    # before: the .msg was "attached: Rechnung.msg" of a NO_INVOICE notice
    assert [(e["name"].split("/", 1)[1], code(e)) for e in results] == [
        (f"Rechnung.msg/{M1}/a.xml", None), ("kaputt.msg", "MSG_UNREADABLE")]
    assert results[0]["email"]["subject"] == "Invoice 0008"  # the e-mail it came in
    assert reports_of(client, results[:1]) == [routed(client, CII)]


def test_messages_in_a_zip_and_among_other_files(client):
    results = post(client, [("mails.zip", zipped([("x/1.msg", msg(1, [("a.xml", CII), ("z.zip", zipped([]))]))])),
                            ("b.xml", CII2)])
    assert [(e["name"], code(e)) for e in results] == [
        (f"mails.zip/x/1.msg/{M1}/a.xml", None), (f"mails.zip/x/1.msg/{M1}/z.zip", "NESTED_ARCHIVE"),
        ("b.xml", None)]


def _deep(levels: int) -> dict:
    tree = embedded(99, [("deep.xml", CII)])
    for n in range(levels):
        tree = embedded(n + 10, [tree])
    return tree


def test_hostile_outlook_files_each_give_their_entry(client):
    good = msg(1, [("a.xml", CII)])
    huge = outlook_message(2, [("big.xml", b"<x/>" * 1500)])
    big = compound_file(huge)
    # the attachment's declared size says 2 GiB (the directory entry's size field): refused unread
    at = big.index("__substg1.0_37010102".encode("utf-16-le"))
    declared = big[:at + 120] + struct.pack("<I", 1 << 31) + big[at + 124:]
    word = compound_file({"WordDocument": b"\x00" * 100, "1Table": b"\x00" * 10})  # an OLE file, no message
    many = msg(3, [(f"p{i}.png", PNG) for i in range(mail_module.MAX_PARTS + 1)])
    results = post(client, [("cut.msg", good[:len(good) // 2]), ("tiny.msg", good[:600]), ("word.msg", word),
                            ("junk.msg", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\xff" * 3000),
                            ("big.msg", declared), ("deep.msg", compound_file(outlook_message(9, [_deep(14)]))),
                            ("many.msg", many), ("empty.msg", b"")])
    got = [(e["name"].split("/")[0], e["name"].rsplit("/", 1)[-1], code(e)) for e in results]
    assert got[0][1] == "a.xml"  # the directory survived the cut, the attachment's sectors did not
    assert [g[2] for g in got] == ["MSG_UNREADABLE"] * 4 + ["FILE_TOO_LARGE", "MAIL_TOO_DEEP",
                                                           "MAIL_TOO_MANY_PARTS", "EMPTY_FILE"], got
    assert [g[0] for g in got] == ["cut.msg", "tiny.msg", "word.msg", "junk.msg", "big.msg", "deep.msg",
                                   "many.msg", "empty.msg"]
    assert got[4][1] == "big.xml"


def test_the_unpacker_bounds_a_message_and_its_attachments():
    data = msg(1, [("a.xml", CII), ("b.xml", CII2)])
    small = Unpacker(Limits(max_files=10, max_member=len(CII) + 1, max_total=1 << 30))
    assert [(m.name.rsplit("/", 1)[-1], m.error and m.error[0]) for m in small.file("m.msg", data)] == [
        ("a.xml", None), ("b.xml", "FILE_TOO_LARGE")]
    room = Unpacker(Limits(max_files=10, max_member=1 << 20, max_total=len(CII) + len(CII2) - 1))
    with pytest.raises(ApiError) as raised:  # what the attachments hold counts toward the upload's room
        list(room.file("m.msg", data))
    assert raised.value.http_status == 413


def test_cli_validate_an_outlook_message(tmp_path, capsys):
    (tmp_path / "m.msg").write_bytes(msg(1, [("a.xml", CII)]))
    assert main(["validate", str(tmp_path / "m.msg"), "--jobs", "1", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert [e["name"] for e in body["results"]] == [f"{M1}/a.xml"]


def test_a_job_of_an_outlook_message(tmp_path, monkeypatch):
    from pipeline.settings import get_settings

    monkeypatch.setenv("EINVOICE_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    try:
        store = make_store("sqlite", tmp_path)
        p = Platform(store)
        _, token = p.key(credits=10)
        body, ctype = form([("m.msg", msg(1, [("a.xml", CII), ("logo.png", PNG)])), ("n.msg", msg(2, []))],
                           '{"operation": "validate", "spec": "en16931"}')
        r = p.post(token, "/v1/jobs", body=body, headers={"Content-Type": ctype})
        assert r.status_code == 202, r.text
        job, lines = p.finished_job(token, r.json["id"])
        assert job["state"] == "done" and (job["valid"], job["noInvoice"]) == (1, 1), job
        assert [e["name"].split("/")[0] for e in lines] == ["m.msg", "n.msg"]
        assert lines[0]["email"]["subject"] == "Invoice 0001" and "notice" in lines[1]
        store.close()
    finally:
        get_settings.cache_clear()
