"""E-mail as a container (.eml, .mbox) wherever a ZIP is taken: batch validation, jobs, `pipeline validate`.
Messages are built here (tests/mailbuild.py) around the shared corpus' documents; every report is compared with
the single endpoint's for the same bytes. Hostile mail: one case per bound, each with its entry."""
from __future__ import annotations

import json
import re
import time
from email.message import EmailMessage

import falcon.testing
import pytest

from conftest import CORPUS, SHARED
from mailbuild import mbox, message, tnef, zipped
from pipeline.cli import main
from pipeline.service.app import create_app
from pipeline.service.platform import PlatformConfig
from pipeline.unpack import Limits, Unpacker, mail
from test_platform_helpers import Platform, make_store
from test_validate_batch import form, limits  # noqa: F401 - the limits fixture
from test_validate_batch import post as post_batch

UBL = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml").read_bytes()
CII = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml").read_bytes()
BROKEN = b"<Invoice><unclosed></Invoice>"
PDF = (SHARED / "realworld/corpus/XML-Rechnung/FX/EN16931_Rabatte.pdf").read_bytes()
BATCH = "/v1/invoice/xrechnung/validate/batch"
PDF_BATCH = "/v1/invoice/zugferd/validate/batch"


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def post(client, files, path=BATCH):
    return post_batch(client, files, path=path, headers={"X-Request-Id": "rid"})


def single(client, data, spec="xrechnung"):
    body, ctype = form([("doc", data)])
    return client.simulate_post(f"/v1/invoice/{spec}/validate", body=body,
                                headers={"Content-Type": ctype, "X-Request-Id": "rid"}).json


def names(r):
    return [e["name"].rsplit("/", 1)[-1] for e in r.json["results"]]


def codes(r):
    return [(e.get("error") or e.get("notice") or {}).get("code") for e in r.json["results"]]


# -- what a message holds ----------------------------------------------------------------------------------------

def test_each_invoice_of_a_message_is_a_document_named_by_the_message(client):
    forwarded = message(2, [("forwarded.xml", CII)], subject="Rechnung 2/2026")
    m = message(1, [("invoice.xml", UBL), ("bundle.zip", zipped([("z1.xml", CII), ("z2.xml", BROKEN)])),
                    ("logo.png", b"\x89PNG\r\n"), ("winmail.dat", tnef([("outlook.xml", UBL), ("a.png", b"x")]))],
                forwarded=forwarded)
    r = post(client, [("mail.eml", m.as_bytes())])
    assert r.status_code == 200, r.text
    assert names(r) == ["invoice.xml", "z1.xml", "z2.xml", "outlook.xml", "forwarded.xml"]
    first = r.json["results"][0]
    assert first["name"] == (f'2026-03-01 08:01 billing@seller.example "Invoice 0001" {m["Message-ID"]}'
                             "/invoice.xml")
    assert first["email"] == {"messageId": m["Message-ID"], "date": "2026-03-01T08:01:00+00:00",
                              "from": "Seller 1 <billing@seller.example>", "subject": "Invoice 0001", "index": 1}
    assert [e["name"].split("/", 1)[1] for e in r.json["results"][1:4]] == [
        "bundle.zip/z1.xml", "bundle.zip/z2.xml", "winmail.dat/outlook.xml"]
    assert "Rechnung 2_2026" in r.json["results"][4]["name"]  # the forwarded message names its part too
    for entry, data in zip(r.json["results"], [UBL, CII, BROKEN, UBL, CII]):
        assert entry["email"]["messageId"] == m["Message-ID"]  # the message received, also for a forwarded one
        assert entry["report"] == single(client, data)
    assert r.json["summary"] == {"files": 5, "valid": 4, "invalid": 1, "indeterminate": 0, "errors": 0, "noInvoice": 0}


def test_a_pdf_attachment_gets_the_zugferd_endpoints_report(client):
    r = post(client, [("pdf.eml", message(3, [("rechnung.pdf", PDF)]).as_bytes())], path=PDF_BATCH)
    assert names(r) == ["rechnung.pdf"] and r.json["results"][0]["report"] == single(client, PDF, "zugferd")


def test_an_attachment_without_a_file_name_is_known_by_its_content(client):
    m = message(4, [])
    m.add_attachment(UBL, maintype="application", subtype="octet-stream", disposition="attachment")
    r = post(client, [("x.eml", m.as_bytes())])
    assert names(r) == ["part-2.xml"] and r.json["results"][0]["report"]["valid"]


def test_an_mbox_gives_each_message_and_a_message_without_invoice_one_notice(client):
    box = mbox([message(n, [(f"i{n}.xml", UBL)]).as_bytes() for n in (1, 2)]
               + [message(3, [("photo.png", b"\x89PNG")], subject="Lunch?").as_bytes()])
    r = post(client, [("month.mbox", box)])
    assert names(r) == ["i1.xml", "i2.xml", '2026-03-01 08:03 billing@seller.example "Lunch?" ' +
                        r.json["results"][2]["email"]["messageId"]]
    notice = r.json["results"][2]
    assert notice["notice"]["code"] == "NO_INVOICE" and "photo.png" in notice["notice"]["message"]
    assert "error" not in notice and notice["email"]["index"] == 3
    assert r.json["summary"] == {"files": 3, "valid": 2, "invalid": 0, "indeterminate": 0, "errors": 0, "noInvoice": 1}


def test_mail_inside_a_zip_and_several_mail_parts(client):
    one, two = message(1, [("a.xml", UBL)]).as_bytes(), message(2, [("b.xml", CII)]).as_bytes()
    r = post(client, [("mails.zip", zipped([("in/one.eml", one), ("box.mbox", mbox([two]))]))])
    assert [e["name"].split("/")[0] for e in r.json["results"]] == ["in", "box.mbox"]
    assert names(r) == ["a.xml", "b.xml"] and r.json["summary"]["valid"] == 2
    r = post(client, [("one.eml", one), ("two.eml", two)])
    assert names(r) == ["a.xml", "b.xml"]


def test_a_message_without_invoice_is_not_charged(tmp_path):
    store = make_store("sqlite", tmp_path)
    p = Platform(store, config=PlatformConfig(rate_limit=1000, costs={"/v1/invoice/xrechnung/validate": 2}))
    key_id, token = p.key(credits=10)
    box = mbox([message(1, [("a.xml", UBL)]).as_bytes(), message(2, []).as_bytes()])
    body, ctype = form([("m.mbox", box)])
    r = p.post(token, BATCH, body=body, headers={"Content-Type": ctype})
    assert r.status_code == 200 and r.json["summary"]["noInvoice"] == 1
    assert store.get_key(key_id).balance == 10 - 2
    store.close()


# -- hostile mail: each bound gives its entry, never a 5xx --------------------------------------------------------

def damaged(raw: bytes, filename: str) -> bytes:
    """The message with the base64 of `filename` replaced by characters outside base64 and a cut last group."""
    start = raw.index(b"\n\n", raw.index(f'filename="{filename}"'.encode())) + 2
    end = raw.index(b"\n--", start)
    return raw[:start] + b"PD94b!!!bWwg@@@dmVyc2lvbj0-" + raw[end:]


def test_broken_base64_is_an_entry(client):
    r = post(client, [("b.eml", damaged(message(1, [("bad.xml", UBL), ("ok.xml", UBL)]).as_bytes(), "bad.xml"))])
    assert r.status_code == 200
    assert list(zip(names(r), codes(r))) == [("bad.xml", "BROKEN_ENCODING"), ("ok.xml", None)]


def test_broken_charsets_still_give_named_entries(client):
    m = message(1, [("x.xml", UBL)])
    raw = m.as_bytes().replace(b"Subject: Invoice 0001", b"Subject: =?x-unknown?B?SGFsbG8=?= \xff\xfe caf\xe9")
    raw = raw.replace(b'filename="x.xml"', b"filename*=x-bogus''r%E9chnung.xml")
    r = post(client, [("c.eml", raw)])
    assert r.status_code == 200
    entry = r.json["results"][0]
    assert entry["report"] == single(client, UBL)
    assert "\ufffd" in entry["email"]["subject"] and entry["name"].endswith("chnung.xml")
    json.dumps(r.json, ensure_ascii=False).encode("utf-8")  # no lone surrogate reached the answer


def test_the_subject_is_said_as_written_and_named_without_its_slashes(client):
    m = message(1, [("a.xml", UBL)])
    m.replace_header("Subject", "Rechnung 03/2026 \\ Lager")
    entry, = post(client, [("m.eml", m.as_bytes())]).json["results"]
    assert entry["email"]["subject"] == "Rechnung 03/2026 \\ Lager"   # the metadata: what the header says
    assert '"Rechnung 03_2026 _ Lager"' in entry["name"] and entry["name"].endswith("/a.xml")


def test_too_many_parts(client):
    m = message(1, [(f"p{n}.png", b"x") for n in range(mail.MAX_PARTS + 5)])
    r = post(client, [("parts.eml", m.as_bytes()), ("ok.eml", message(2, [("a.xml", UBL)]).as_bytes())])
    assert codes(r) == ["MAIL_TOO_MANY_PARTS", None]
    assert r.json["results"][0]["email"]["subject"] == "Invoice 0001"  # named by its headers all the same


@pytest.mark.parametrize("header,code", [(b"Subject: " + b"=?utf-8?q?a?= " * 50_000, None),
                                         (b"From: " + b"a@b.example, " * 50_000, None),
                                         (b"Content-Type: multipart/mixed; " + b"a=b; " * 50_000, "MAIL_HEADER_TOO_LONG")])
def test_a_header_too_long_to_parse(client, header, code):
    """The modern header parser needs minutes for a 250 KB Subject; a header we read is bounded instead: a long
    From or Subject names the message by its raw text, a long Content-Type stops the message with an entry."""
    raw = message(1, [("a.xml", UBL)]).as_bytes()
    raw = re.sub(rb"\n" + header.split(b":")[0] + rb": [^\n]*\n", b"\n" + header + b"\n", raw, count=1)
    started = time.monotonic()
    r = post(client, [("long.eml", raw), ("ok.eml", message(2, [("b.xml", UBL)]).as_bytes())])
    assert r.status_code == 200 and codes(r) == [code, None]
    assert time.monotonic() - started < 30
    assert len(r.json["results"][0]["email"]["subject"]) <= 300


def test_a_part_whose_header_is_too_long_costs_that_part_only(client):
    """An attachment with a 9,000-character Content-Type beside two invoices: that part gets the entry, the
    invoices before and after it keep their reports (the whole message got one entry)."""
    m = message(1, [("first.xml", UBL), ("long.xml", UBL), ("ok.xml", UBL)])
    raw = m.as_bytes()
    at = raw.index(b'filename="long.xml"')
    start = raw.rindex(b"Content-Type:", 0, at)
    end = raw.index(b"\n", start)
    raw = raw[:start] + b"Content-Type: application/xml; " + b"a=b; " * 1800 + raw[end:]
    r = post(client, [("m.eml", raw)])
    assert r.status_code == 200 and codes(r) == [None, "MAIL_HEADER_TOO_LONG", None], r.json
    assert [e["name"].rsplit("/", 1)[-1] for e in r.json["results"] if "report" in e] == ["first.xml", "ok.xml"]


def test_too_deep(client):
    inner = message(0, [("deep.xml", UBL)])
    for n in range(1, mail.MAX_DEPTH + 2):
        inner = message(n, [], forwarded=inner)
    r = post(client, [("deep.eml", inner.as_bytes())])
    assert r.status_code == 200 and codes(r) == ["MAIL_TOO_DEEP"]


def test_encrypted_messages_are_named_as_such(client):
    smime = EmailMessage()
    smime["From"], smime["Subject"], smime["Message-ID"] = "a@b.example", "encrypted", "<e1@b.example>"
    smime.set_content(b"0\x80\x06\t*\x86H\x86\xf7\r\x01\x07\x03\xa0\x80", maintype="application",
                      subtype="pkcs7-mime", params={"smime-type": "enveloped-data", "name": "smime.p7m"},
                      disposition="attachment", filename="smime.p7m")
    pgp = EmailMessage()
    pgp["From"], pgp["Subject"] = "a@b.example", "pgp"
    pgp.set_type("multipart/encrypted")
    pgp.set_param("protocol", "application/pgp-encrypted")
    pgp.attach(EmailMessage())
    r = post(client, [("s.eml", smime.as_bytes()), ("p.eml", pgp.as_bytes())])
    assert codes(r) == ["SMIME_ENCRYPTED", "PGP_ENCRYPTED"]
    assert "S/MIME" in r.json["results"][0]["error"]["message"]


def test_an_attachment_over_one_document_and_a_bomb_in_an_attached_zip(client, limits):
    # (through a batch an attachment cannot decode past the upload that carried it: a job's message can)
    unpacker = Unpacker(Limits(100, 50_000, 10 << 20))
    big = message(1, [("big.xml", b"<a>" + b" " * 60_000 + b"</a>"), ("ok.xml", UBL)])
    assert [m.error and m.error[0] for m in unpacker.file("big.eml", big.as_bytes())] == ["FILE_TOO_LARGE", None]
    limits(EINVOICE_MAX_UPLOAD_BYTES=400_000)
    bomb = zipped([(f"{n}.xml", b"\0" * 390_000) for n in range(6)])  # 2.3 MB decompressed, > 5 uploads
    r = post(client, [("bomb.eml", message(2, [("bomb.zip", bomb)]).as_bytes())])
    assert r.status_code == 413 and r.json["errors"][0]["code"] == "BATCH_TOO_LARGE"


def test_zip_in_a_zip_attached_is_not_opened(client):
    r = post(client, [("z.eml", message(1, [("a.zip", zipped([("in.zip", zipped([("x.xml", UBL)]))]))]).as_bytes())])
    assert codes(r) == ["NESTED_ARCHIVE"]


def test_a_message_over_its_bound_in_an_mbox(limits):
    unpacker = Unpacker(Limits(100, 50_000, 10 << 20))
    box = mbox([message(1, [("a.xml", b"<a/>" * 300_000)]).as_bytes(), message(2, [("b.xml", UBL)]).as_bytes()])
    got = list(unpacker.file("x.mbox", box))
    too_large = got[0]   # named by its headers, which are readable (it was only "message 1")
    assert too_large.error[0] == "MESSAGE_TOO_LARGE" and '"Invoice 0001"' in too_large.name, too_large.name
    assert too_large.email["subject"] == "Invoice 0001" and too_large.email["index"] == 1
    assert got[1].data == UBL


def test_a_hostile_winmail_dat_costs_its_reader_not_the_request(client):
    import struct
    from mailbuild import TNEF_SIGNATURE, _attribute

    # a MAPI property block declaring 2**32 - 16 properties: the TNEF library would loop that long
    loop = struct.pack("<IH", TNEF_SIGNATURE, 1) + _attribute(1, 0x9003, 0x0006, struct.pack("<I", 0xFFFFFFF0)) \
        + _attribute(1, 0x9006, 0x0008, struct.pack("<I", 0x10000))
    started = time.monotonic()
    r = post(client, [("t.eml", message(1, [("winmail.dat", loop), ("ok.xml", UBL)]).as_bytes())])
    assert r.status_code == 200 and codes(r) == ["TNEF_UNREADABLE", None]
    assert time.monotonic() - started < 30
    cut = tnef([("a.xml", UBL)])[:20]  # cut inside its first attribute
    r = post(client, [("t.eml", message(1, [("winmail.dat", cut)]).as_bytes())])
    assert codes(r) == ["TNEF_UNREADABLE"] and "damaged TNEF" in r.json["results"][0]["error"]["message"]


def test_the_tnef_reader_returns_each_file_exactly():
    from pipeline.unpack import tnef as reader

    assert reader.attachments(tnef([("r.pdf", PDF), ("i.xml", UBL)])).files == [("r.pdf", PDF), ("i.xml", UBL)]


@pytest.mark.parametrize("head,kind", [
    (b"From x@y Sat Jan  1 00:00:00 2026\nFrom: a@b\n", "mbox"), (b"Return-Path: <a@b>\nReceived: x\n\n", "eml"),
    (b"<?xml version='1.0'?><Invoice/>", None), (b"%PDF-1.7", None), (b"Subject: x\n", None)])
def test_what_a_file_is(head, kind):
    from pipeline.unpack import kind as kind_of

    assert kind_of("upload", head) == kind


# -- the command line ---------------------------------------------------------------------------------------------

def test_cli_folder_with_mail_and_an_mbox_file(tmp_path, capsys):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.xml").write_bytes(UBL)
    (folder / "m.eml").write_bytes(message(1, [("x.xml", CII), ("y.xml", BROKEN)]).as_bytes())
    (folder / "empty.eml").write_bytes(message(2, []).as_bytes())
    assert main(["validate", str(folder), "--jobs", "1", "--json"]) == 1
    body = json.loads(capsys.readouterr().out)
    assert [e["name"].split("/")[0] for e in body["results"]] == ["a.xml", "empty.eml", "m.eml", "m.eml"]
    assert body["summary"] == {"files": 4, "valid": 2, "invalid": 1, "indeterminate": 0, "errors": 0, "noInvoice": 1}
    assert body["results"][2]["email"]["subject"] == "Invoice 0001"
    box = tmp_path / "box.mbox"
    box.write_bytes(mbox([message(3, [("z.xml", UBL)]).as_bytes(), message(4, []).as_bytes()]))
    assert main(["validate", str(box), "--jobs", "1"]) == 0  # a message without invoice is no failure
    text = capsys.readouterr().out
    assert "NOTICE" in text and "NO_INVOICE" in text and "1 message(s) without an invoice" in text


# -- jobs ----------------------------------------------------------------------------------------------------------

def test_a_job_of_an_mbox(tmp_path, monkeypatch):
    from pipeline.settings import get_settings

    monkeypatch.setenv("EINVOICE_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    try:
        store = make_store("sqlite", tmp_path)
        p = Platform(store, config=PlatformConfig(rate_limit=1000, costs={"/v1/invoice/xrechnung/validate": 1}))
        key_id, token = p.key(credits=10)
        box = mbox([message(1, [("a.xml", UBL), ("b.xml", BROKEN)]).as_bytes(), message(2, []).as_bytes(),
                    damaged(message(3, [("c.xml", UBL)]).as_bytes(), "c.xml")])
        body, ctype = form([("month.mbox", box)], '{"operation": "validate", "spec": "xrechnung"}')
        r = p.post(token, "/v1/jobs", body=body, headers={"Content-Type": ctype})
        assert r.status_code == 202, r.text
        assert r.json["total"] == 4 and r.json["creditsReserved"] == 2  # the notice and the damaged part: free
        job_id = r.json["id"]
        def get(path):
            return p.client.simulate_get(path, headers={"Authorization": f"Bearer {token}"})

        for _ in range(600):
            job = get(f"/v1/jobs/{job_id}").json
            if job["state"] not in ("queued", "running"):
                break
            time.sleep(0.2)
        assert job["state"] == "done"
        assert (job["valid"], job["invalid"], job["errors"], job["noInvoice"]) == (1, 1, 1, 1)
        lines = [json.loads(x) for x in get(f"/v1/jobs/{job_id}/results").text.splitlines()]
        assert [e["name"].rsplit("/", 1)[-1] for e in lines][:2] == ["a.xml", "b.xml"]
        assert [next(k for k in ("report", "error", "notice") if k in e) for e in lines] == [
            "report", "report", "notice", "error"]
        assert all(e["email"]["index"] == n for e, n in zip(lines, (1, 1, 2, 3)))
        assert lines[3]["error"]["code"] == "BROKEN_ENCODING"
        assert store.get_key(key_id).balance == 10 - 2
        store.close()
    finally:
        get_settings.cache_clear()


def test_a_parse_job_of_a_message_and_a_folder_of_mail_for_jobs_submit(tmp_path, monkeypatch):
    from pipeline.cli.jobs import _uploads
    from pipeline.settings import get_settings

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.xml").write_bytes(UBL)
    (folder / "m.eml").write_bytes(message(1, [("x.xml", CII)]).as_bytes())
    (folder / "notes.txt").write_text("no")
    # the folder's mail goes up with it, a part of its own
    assert _uploads([folder]) == [("a.xml", folder / "a.xml"), ("m.eml", folder / "m.eml")]
    monkeypatch.setenv("EINVOICE_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    try:
        store = make_store("sqlite", tmp_path)
        p = Platform(store)
        _, token = p.key(credits=10)
        body, ctype = form([("m.eml", message(2, [("y.xml", UBL)]).as_bytes())], '{"operation": "parse"}')
        r = p.post(token, "/v1/jobs", body=body, headers={"Content-Type": ctype})
        assert r.status_code == 202, r.text
        path = f"/v1/jobs/{r.json['id']}"
        for _ in range(600):
            job = p.client.simulate_get(path, headers={"Authorization": f"Bearer {token}"}).json
            if job["state"] not in ("queued", "running"):
                break
            time.sleep(0.2)
        line = json.loads(p.client.simulate_get(path + "/results", headers={"Authorization": f"Bearer {token}"}).text)
        assert job["state"] == "done" and "invoice" in line and line["email"]["subject"] == "Invoice 0002"
        store.close()
    finally:
        get_settings.cache_clear()
