"""One month's mailbox as an accounts-payable team gets it, read by every way in: the batch endpoint, a job (as the
page posts a dropped .mbox: POST /v1/jobs, operation validate) and `pipeline validate`. Each message is a shape
real mailers send (RFC 2231 names split over continuations, RFC 2047 names in Latin-1, a name only in the
Content-Type, a PDF as application/octet-stream, an XML invoice as an inline text/plain part, quoted-printable XML,
a message forwarded three deep, a uuencoded body, a winmail.dat, a clear-signed S/MIME message, an encrypted one,
a ZIP attachment) or a hostile one (broken base64, too deep, too many parts, a header too long), with CRLF line
ends and ">From " quoting. All three ways must give the same documents under the same names, with the same
verdicts and codes."""
from __future__ import annotations

import base64
import binascii
import json
import quopri

from conftest import CORPUS, SHARED
from mailbuild import mbox, message, tnef, zipped
from pipeline.cli import main
from pipeline.settings import get_settings
from test_mail import client, post  # noqa: F401 - the client fixture
from test_platform_helpers import Platform, make_store
from test_validate_batch import form

UBL = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml").read_bytes()
CII = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml").read_bytes()
PDF = (SHARED / "realworld/corpus/XML-Rechnung/FX/EN16931_Rabatte.pdf").read_bytes()
BROKEN = b"<Invoice><unclosed></Invoice>"


def head(n: int, subject: str) -> bytes:
    return (f"From: Seller {n} <billing{n}@seller.example>\r\nTo: ap@buyer.example\r\nSubject: {subject}\r\n"
            f"Date: Sun, 1 Mar 2026 08:{n:02d}:00 +0000\r\nMessage-ID: <m{n}@seller.example>\r\n"
            "MIME-Version: 1.0\r\n").encode()


def mixed(n: int, *parts: bytes) -> bytes:
    return head(n, f"Rechnung {n}") + b'Content-Type: multipart/mixed; boundary="B"\r\n\r\n' + b"".join(
        b"--B\r\nContent-Type: text/plain\r\n\r\nAnbei die Rechnung.\r\nFrom now on, pay to the new account.\r\n"
        b"\r\n--B\r\n" + p + b"\r\n" for p in parts) + b"--B--\r\n"


def b64(headers: bytes, data: bytes) -> bytes:
    return headers + b"\r\nContent-Transfer-Encoding: base64\r\n\r\n" + base64.encodebytes(data).replace(b"\n", b"\r\n")


def forwarded(depth: int) -> bytes:
    inner = message(90, [("tief.xml", CII)])
    for n in range(depth - 1):
        inner = message(91 + n, [], forwarded=inner)
    return inner.as_bytes().replace(b"\n", b"\r\n")


UU = b"begin 644 alt.xml\r\n" + b"".join(binascii.b2a_uu(UBL[i:i + 45]).replace(b"\n", b"\r\n")
                                         for i in range(0, len(UBL), 45)) + b"`\r\nend\r\n"
SIGNED = (head(9, "Signiert") + b'Content-Type: multipart/signed; protocol="application/pkcs7-signature"; '
          b'micalg=sha-256; boundary="S"\r\n\r\n--S\r\n' + b'Content-Type: multipart/mixed; boundary="I"\r\n\r\n--I\r\n'
          + b64(b'Content-Type: application/xml; name="signiert.xml"', UBL) + b"\r\n--I--\r\n\r\n--S\r\n"
          + b64(b'Content-Type: application/pkcs7-signature; name="smime.p7s"', b"\x30\x03\x02\x01\x01")
          + b"\r\n--S--\r\n")
ENVELOPED = b"\x30\x80\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x07\x03\xa0\x80" + b"\x00" * 64
DEEP = head(13, "Tief") + b"".join(b'Content-Type: multipart/mixed; boundary="d%d"\r\n\r\n--d%d\r\n' % (i, i)
                                   for i in range(40)) + b"Content-Type: text/plain\r\n\r\nx\r\n"

MONTH = [
    mixed(1, b64(b"Content-Type: application/octet-stream\r\nContent-Disposition: attachment;\r\n"
                 b" filename*0*=UTF-8''Rechnung%20M%C3;\r\n filename*1*=%A4rz.xml", UBL)),
    mixed(2, b64(b'Content-Type: application/octet-stream\r\nContent-Disposition: attachment; '
                 b'filename="=?ISO-8859-1?Q?Gr=FC=DFe_M=E4rz.xml?="', CII)),
    mixed(3, b64(b'Content-Type: application/pdf; name="nur-im-typ.pdf"', PDF), b64(b"Content-Type: "
             b"application/octet-stream", PDF)),
    mixed(4, b'Content-Type: text/plain; charset=utf-8\r\nContent-Disposition: inline; filename="inline.xml"\r\n\r\n'
          + UBL.replace(b"\n", b"\r\n"),
          b'Content-Type: application/xml; name="qp.xml"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n'
          + quopri.encodestring(CII).replace(b"\n", b"\r\n")),
    forwarded(3),
    head(6, "Alt") + b"\r\nDie Rechnung:\r\n\r\n" + UU,
    mixed(7, b64(b'Content-Type: application/ms-tnef; name="winmail.dat"', tnef([("Rechnung \xc4.xml", UBL),
                                                                                ("logo.png", b"\x89PNG")]))),
    mixed(8, b64(b'Content-Type: application/zip; name="m\xc3\xa4rz.zip"',
                 zipped([("a.xml", UBL), ("b.xml", BROKEN)]))),
    SIGNED,
    head(10, "Verschluesselt") + b64(b'Content-Type: application/pkcs7-mime; smime-type=enveloped-data; '
                                     b'name="smime.p7m"', ENVELOPED),
    mixed(11, b'Content-Type: application/xml; name="kaputt.xml"\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!@@@',
          b64(b'Content-Type: application/xml; name="heil.xml"', CII)),
    mixed(12, b'Content-Type: image/png; name="nur-ein-bild.png"\r\n\r\nx'),
    DEEP,
    mixed(14, *[b"Content-Type: text/plain\r\n\r\nx"] * 600),
    mixed(15, b'Content-Type: application/xml\r\nContent-Disposition: attachment; filename="' + b"a" * 9000
          + b'.xml"\r\n\r\n' + UBL, b64(b'Content-Type: application/xml; name="daneben.xml"', UBL)),
]
BOX = mbox(MONTH)


def outcome(entry: dict) -> tuple[str, str]:
    """An entry as (its name, its verdict or its code)."""
    if "report" in entry:
        return entry["name"], entry["report"]["verdict"]
    return entry["name"], (entry.get("error") or entry["notice"])["code"]


def test_batch_jobs_and_the_command_line_agree_on_a_month_of_mail(client, tmp_path, monkeypatch, capsys):
    r = post(client, [("monat.mbox", BOX)])
    assert r.status_code == 200, r.text
    batch = [outcome(e) for e in r.json["results"]]
    assert len(batch) == 20 and len({e["email"]["index"] for e in r.json["results"]}) == len(MONTH)
    assert [v for _, v in batch].count("valid") == 13 and {v for _, v in batch} == {
        "valid", "invalid", "SMIME_ENCRYPTED", "BROKEN_ENCODING", "NO_INVOICE", "MAIL_TOO_DEEP",
        "MAIL_TOO_MANY_PARTS", "MAIL_HEADER_TOO_LONG"}
    assert [n.rsplit("/", 1)[-1] for n, _ in batch[:2]] == ["Rechnung März.xml", "Grüße März.xml"]

    monkeypatch.setenv("EINVOICE_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    try:  # the page's way: the dropped file as a job's one part
        store = make_store("sqlite", tmp_path)
        p = Platform(store)
        _, token = p.key(credits=100)
        body, ctype = form([("monat.mbox", BOX)], '{"operation": "validate", "spec": "xrechnung"}')
        r = p.post(token, "/v1/jobs", body=body, headers={"Content-Type": ctype})
        assert r.status_code == 202, r.text
        job, lines = p.finished_job(token, r.json["id"])
        store.close()
    finally:
        get_settings.cache_clear()
    assert job["state"] == "done" and [outcome(e) for e in lines] == batch

    box = tmp_path / "monat.mbox"
    box.write_bytes(BOX)
    main(["validate", str(box), "--spec", "xrechnung", "--json", "--jobs", "1"])
    assert [outcome(e) for e in json.loads(capsys.readouterr().out)["results"]] == batch
