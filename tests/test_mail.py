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


def test_a_body_line_beginning_with_from_does_not_cut_a_message_in_two(client):
    """Not every mbox writer quotes "From " at a line's start: such a line cut the message there, and its
    attachments went to a "message" of their own with no headers (or were lost). A new message begins at an
    envelope line only, after an empty line or followed by a header; mboxrd's ">From " quoting is taken off."""
    first = message(1, [("a.xml", UBL)])
    first.get_body().set_content("Dear customer,\n\nFrom 1 April on, please pay to our new account.\n\n"
                      "From accounts payable: thanks!\nFrom sender@example Sun Mar  1 08:00:00 2026 (quoted)\n")
    for part in (UBL, CII):
        first.add_attachment(part, maintype="application", subtype="xml", filename=f"{len(part)}.xml")
    box = mbox([first.as_bytes(), message(2, [("b.xml", CII)]).as_bytes()], escape=False)
    assert box.count(b"\nFrom ") == 4  # three in the body, one envelope
    r = post(client, [("month.mbox", box)])
    assert r.status_code == 200, r.text
    assert names(r) == ["a.xml", f"{len(UBL)}.xml", f"{len(CII)}.xml", "b.xml"], names(r)
    assert [e["email"]["index"] for e in r.json["results"]] == [1, 1, 1, 2]
    assert r.json["summary"]["valid"] == 4

    # .eml files pasted together behind envelope lines, without the empty line between them
    pasted = mbox([message(n, [(f"{n}.xml", UBL)]).as_bytes() for n in (1, 2, 3)], separate=False)
    assert names(post(client, [("pasted.mbox", pasted)])) == ["1.xml", "2.xml", "3.xml"]

    # an 8bit XML attachment a mboxrd writer quoted: the invoice comes back byte for byte
    xml = UBL.replace(b"<cbc:Note>", b"<cbc:Note>\nFrom the seller: ", 1)
    assert b"\nFrom the seller" in xml
    m = message(4, [])
    m.add_attachment(xml, maintype="text", subtype="xml", filename="note.xml", cte="8bit")
    got = list(Unpacker(Limits(10, 1 << 20, 10 << 20)).file("x.mbox", mbox([m.as_bytes()])))
    assert [g.data for g in got] == [xml]


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
    # raw bytes that are no UTF-8 are read as CP1252 (they were U+FFFD each)
    assert entry["email"]["subject"] == "Hallo \u00ff\u00fe caf\u00e9" and entry["name"].endswith("chnung.xml")
    json.dumps(r.json, ensure_ascii=False).encode("utf-8")  # no lone surrogate reached the answer


def test_raw_latin1_and_utf8_in_headers_name_the_invoice_as_written(client):
    """An older German mailer writes the file name and subject in Latin-1, unencoded: the invoice was named
    "Rechnung M\ufffdrz.xml". Raw UTF-8 (RFC 6532) was read right already, and stays so."""
    for encoding in ("latin-1", "utf-8"):
        raw = message(1, [("a.xml", UBL)], subject="Grüße").as_bytes()
        raw = raw.replace(b'filename="a.xml"', 'filename="Rechnung März.xml"'.encode(encoding))
        raw = raw.replace(b"Subject: =?utf-8?q?Gr=C3=BC=C3=9Fe?=", "Subject: Grüße, Rechnung".encode(encoding))
        r = post(client, [("m.eml", raw)])
        assert names(r) == ["Rechnung März.xml"] and r.json["results"][0]["email"]["subject"] == "Grüße, Rechnung"


def test_the_subject_is_said_as_written_and_named_without_its_slashes(client):
    m = message(1, [("a.xml", UBL)])
    m.replace_header("Subject", "Rechnung 03/2026 \\ Lager")
    entry, = post(client, [("m.eml", m.as_bytes())]).json["results"]
    assert entry["email"]["subject"] == "Rechnung 03/2026 \\ Lager"   # the metadata: what the header says
    assert '"Rechnung 03_2026 _ Lager"' in entry["name"] and entry["name"].endswith("/a.xml")


def test_a_multipart_without_a_usable_boundary_is_split_at_the_one_its_body_has(client):
    """A boundary left out, unquoted with `=` in it (as some mailers write it) or named other than in the body:
    the parser cannot split the message, and it was NO_INVOICE, "no XML, PDF ... attachment", its invoice lost.
    It is split at the boundary line its body begins with; without one it is MAIL_DAMAGED, not NO_INVOICE."""
    m = message(1, [("a.xml", UBL), ("b.xml", CII)])
    raw, boundary = m.as_bytes(), m.get_boundary().encode()
    declared = b'boundary="' + boundary + b'"'
    assert boundary.startswith(b"=") and raw.count(declared) == 1
    for broken in (raw.replace(b"; " + declared, b""), raw.replace(declared, b"boundary=" + boundary),
                   raw.replace(declared, b'boundary="other"')):
        r = post(client, [("m.eml", broken)])
        assert r.status_code == 200 and names(r) == ["a.xml", "b.xml"], r.text
        assert r.json["summary"]["valid"] == 2
    body_start = raw.index(b"\n\n") + 2
    no_lines = raw[:body_start] + raw[body_start:].replace(b"\n--" + boundary, b"\n  ").replace(b"--" + boundary, b"")
    r = post(client, [("m.eml", no_lines.replace(declared, b'boundary="other"'))])
    assert codes(r) == ["MAIL_DAMAGED"] and "error" in r.json["results"][0], r.text


def test_a_message_forwarded_in_base64_is_read_as_the_message_it_is(client):
    """message/rfc822 with Content-Transfer-Encoding base64 (RFC 2046 forbids it; Outlook and some gateways send
    it): the parser took the base64 for a message without headers, and the forwarded invoice was lost behind a
    NO_INVOICE. It is decoded and read as a forwarded message, named as one; damaged base64 is BROKEN_ENCODING."""
    import base64

    forwarded = message(2, [("inner.xml", UBL)], subject="Fwd: Rechnung")
    plain = post(client, [("m.eml", message(1, [], forwarded=forwarded).as_bytes())])
    m = message(1, [("marker.txt", b"x")])
    raw, boundary = m.as_bytes(), m.get_boundary().encode()
    part = (b"--" + boundary + b"\nContent-Type: message/rfc822\nContent-Transfer-Encoding: base64\n"
            b"Content-Disposition: attachment\n\n" + base64.encodebytes(forwarded.as_bytes()) + b"\n")
    encoded = raw.replace(b"--" + boundary + b"--", part + b"--" + boundary + b"--")
    r = post(client, [("m.eml", encoded)])
    assert names(r) == ["inner.xml"] and r.json["results"][0]["report"]["valid"], r.text
    assert r.json["results"][0]["name"].split("/", 1)[1] == plain.json["results"][0]["name"].split("/", 1)[1]
    r = post(client, [("m.eml", encoded.replace(part[-40:], b"!!!" + part[-37:]))])
    assert codes(r) == ["BROKEN_ENCODING"]


def test_empty_containers_each_give_an_entry(client):
    """An empty ZIP (or one of folders only) gave a batch of no results and a job "no documents: send one or more
    'file' parts"; an empty .eml was a NO_INVOICE notice named "#1"; an empty ZIP attached was "no ZIP attachment";
    an .mbox whose first "From " line is missing (an .eml renamed) gave nothing at all."""
    folders = zipped([("Rechnungen/", b"")])
    r = post(client, [("empty.zip", zipped([])), ("folders.zip", folders), ("empty.eml", b""), ("empty.mbox", b"\n"),
                      ("ok.xml", UBL)])
    assert r.status_code == 200, r.text
    assert [(e["name"], codes_of(e)) for e in r.json["results"]] == [
        ("empty.zip", "EMPTY_ARCHIVE"), ("folders.zip", "EMPTY_ARCHIVE"), ("empty.eml", "EMPTY_FILE"),
        ("empty.mbox", "EMPTY_FILE"), ("ok.xml", None)]
    assert r.json["summary"] == {"files": 5, "valid": 1, "invalid": 0, "indeterminate": 0, "errors": 4, "noInvoice": 0}
    r = post(client, [("m.eml", message(1, [("e.zip", zipped([]))]).as_bytes())])
    assert codes(r) == ["EMPTY_ARCHIVE"] and names(r) == ["e.zip"]
    r = post(client, [("in.zip", zipped([("a.eml", b""), ("b.mbox", b"")]))])
    assert [(e["name"], codes_of(e)) for e in r.json["results"]] == [("a.eml", "EMPTY_FILE"), ("b.mbox", "EMPTY_FILE")]
    r = post(client, [("renamed.mbox", message(2, [("a.xml", UBL)]).as_bytes())])
    assert names(r) == ["a.xml"] and r.json["results"][0]["report"]["valid"]


def codes_of(entry: dict) -> str | None:
    return (entry.get("error") or entry.get("notice") or {}).get("code")


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
    assert "NOTICE" in text and "NO_INVOICE" in text and "1 message without an invoice" in text


def test_cli_html_reports_of_mail_documents_get_file_names_a_file_system_takes(tmp_path, capsys, monkeypatch):
    """A document of a message is named by the message (date, sender, subject, Message-ID) and its file name:
    `--html-dir` made that one file name, past 255 bytes for a long subject, and the whole run ended with "File
    name too long". A Windows device name (CON.xml) is not made either."""
    from pipeline.cli.files import safe_name

    m = message(1, [("z.zip", zipped([("a" * 150 + "/" + "b" * 150 + ".xml", UBL), ("c" * 301 + ".xml", UBL)]))],
                subject="Rechnung " + "\u00e4" * 100)
    (tmp_path / "long.eml").write_bytes(m.as_bytes())
    (tmp_path / "CON.xml").write_bytes(UBL)
    out = tmp_path / "out"
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "long.eml", "CON.xml", "--html-dir", str(out), "--jobs", "1"]) == 0, capsys.readouterr()
    written = sorted(p.name for p in out.iterdir())
    assert len(written) == 3 and "_CON.xml.html" in written, written
    assert all(len(n.encode()) <= 255 for n in written) and sum(n.endswith("b.xml.html") for n in written) == 1
    assert safe_name("x" * 300 + "1.xml") != safe_name("x" * 300 + "2.xml")  # never one file for two documents
    assert safe_name("in/a.xml") == "in_a.xml" and safe_name("../nul") == "__nul" and safe_name("") == "document"


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
        job, lines = p.finished_job(token, r.json["id"])
        assert job["state"] == "done"
        assert (job["valid"], job["invalid"], job["errors"], job["noInvoice"]) == (1, 1, 1, 1)
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
        job, (line,) = p.finished_job(token, r.json["id"])
        assert job["state"] == "done" and "invoice" in line and line["email"]["subject"] == "Invoice 0002"
        store.close()
    finally:
        get_settings.cache_clear()
