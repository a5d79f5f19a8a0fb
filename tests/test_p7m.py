"""Signed files (.p7m: CMS / PKCS#7 signed-data, the invoice inside, as Italian and many European senders sign
their invoices) taken as containers wherever a ZIP is: uploaded alone or among other files to batch validation,
as a ZIP's member, in a job, and by `pipeline validate` (a file, a folder's). The invoice inside is one document
named "<file>.p7m/<its name>" with the single endpoint's report for the same bytes; an encrypted file is named as
such, a damaged, cut or hostile one gets its entry, never a 5xx. Each .p7m is signed here by OpenSSL, of a
real-world invoice."""
from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time

import pytest

from conftest import SHARED
from mailbuild import message, zipped
from pipeline.cli import main
from pipeline.unpack import Limits, Unpacker, kind
from test_mail_senders import client, code, reports_of  # noqa: F401 - the client fixture
from test_mail_senders import single as routed  # the rules the document is for, as the ZUGFeRD batch judges it
from test_platform_helpers import Platform, make_store
from test_validate_batch import form
from test_validate_batch import post as post_batch

REAL = SHARED / "realworld/corpus/XML-Rechnung"
CII = (REAL / "CII/EN16931_Einfach.cii.xml").read_bytes()
CII2 = (REAL / "CII/EN16931_Rabatte.cii.xml").read_bytes()
PDF = (REAL / "FX/EN16931_Einfach.pdf").read_bytes()
ZUGFERD = "/v1/invoice/zugferd/validate/batch"


@pytest.fixture(scope="module")
def sign(tmp_path_factory):
    """sign(data, *openssl options) -> the .p7m's bytes: `openssl cms -sign -nodetach` (DER) unless told."""
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed to sign the test files (Debian: apt-get install openssl)")
    d = tmp_path_factory.mktemp("p7m")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                    "/CN=fatture@seller.example", "-keyout", "key.pem", "-out", "cert.pem"], check=True,
                   capture_output=True, cwd=d)

    def signed(data: bytes, *how: str, detached: bool = False) -> bytes:
        (d / "in").write_bytes(data)
        tool, *rest = how or ("cms", "-outform", "DER")
        action = [] if "-encrypt" in rest else ["-sign", "-signer", "cert.pem", "-inkey", "key.pem"] + (
            [] if detached else ["-nodetach"])
        subprocess.run(["openssl", tool, *action, "-binary", "-in", "in", "-out", "out", *rest], check=True,
                       capture_output=True, cwd=d)
        return (d / "out").read_bytes()
    return signed


def post(client, files, path="/v1/invoice/xrechnung/validate/batch"):
    r = post_batch(client, files, path=path)
    assert r.status_code == 200, r.text
    return r.json["results"]


def single(client, data: bytes, spec: str = "xrechnung"):
    """The single endpoint's report for the same bytes, on the batch's rules."""
    body, ctype = form([("doc", data)])
    r = client.simulate_post(f"/v1/invoice/{spec}/validate", body=body, headers={"Content-Type": ctype})
    return {k: v for k, v in r.json.items() if k != "requestId"}


def names(results):
    return [e["name"] for e in results]


@pytest.mark.parametrize("how", [("cms", "-outform", "DER"), ("cms", "-outform", "DER", "-stream"),
                                 ("smime", "-outform", "DER"), ("cms", "-outform", "PEM")],
                         ids=["der", "ber-streamed", "smime-der", "pem"])
def test_an_uploaded_signed_invoice_is_the_invoice_inside(client, sign, how):
    p7m = sign(CII, *how)
    assert kind("IT01234567890_FPA01.xml.p7m", p7m[:4096]) == "p7m" and kind("upload", p7m[:4096]) == "p7m"
    results = post(client, [("IT01234567890_FPA01.xml.p7m", p7m)])
    # before: the .p7m was one document, judged as XML: a format error on its first byte
    assert names(results) == ["IT01234567890_FPA01.xml.p7m/IT01234567890_FPA01.xml"]
    assert reports_of(client, results) == [single(client, CII)]


def test_signed_files_among_other_files_in_a_zip_and_a_pdf_signed(client, sign):
    pdf = sign(PDF)
    results = post(client, [("a.xml.p7m", sign(CII)), ("b.xml", CII2), ("c.pdf.p7m", pdf),
                            ("month.zip", zipped([("in/d.xml.p7m", sign(CII2)), ("e.p7m", sign(CII))]))],
                   path=ZUGFERD)
    # a file signed without an extension left in its name gets one by its content ("e.p7m": e.xml)
    assert names(results) == ["a.xml.p7m/a.xml", "b.xml", "c.pdf.p7m/c.pdf", "month.zip/in/d.xml.p7m/d.xml",
                              "month.zip/e.p7m/e.xml"]
    assert reports_of(client, results) == [routed(client, d) for d in (CII, CII2, PDF, CII2, CII)]


def test_a_signed_zip_is_opened_and_a_signed_zip_in_a_zip_is_not(client, sign):
    archive = zipped([("a.xml", CII), ("b.xml", CII2)])
    results = post(client, [("month.zip.p7m", sign(archive))])
    assert names(results) == ["month.zip.p7m/month.zip/a.xml", "month.zip.p7m/month.zip/b.xml"]
    assert reports_of(client, results) == [single(client, CII), single(client, CII2)]
    inner = post(client, [("outer.zip", zipped([("month.zip.p7m", sign(archive))]))])
    assert [(e["name"], code(e)) for e in inner] == [("month.zip.p7m/month.zip", "NESTED_ARCHIVE")]


def test_a_signed_message_file_is_read_as_the_message(client, sign):
    m = message(1, [("rechnung.xml", CII)])
    results = post(client, [("mail.eml.p7m", sign(m.as_bytes()))])
    assert names(results) == ['mail.eml.p7m/mail.eml/2026-03-01 08:01 billing@seller.example "Invoice 0001" '
                              f'{m["Message-ID"]}/rechnung.xml']
    assert results[0]["email"]["subject"] == "Invoice 0001"
    assert reports_of(client, results) == [single(client, CII)]


def test_signed_twice_and_over_and_over(client, sign):
    twice = sign(sign(CII))
    results = post(client, [("x.xml.p7m.p7m", twice)])
    assert names(results) == ["x.xml.p7m.p7m/x.xml.p7m/x.xml"]
    assert reports_of(client, results) == [single(client, CII)]
    deep = CII
    for _ in range(13):
        deep = sign(deep)
    entry, = post(client, [("deep.xml.p7m", deep)])
    assert code(entry) == "SMIME_OPAQUE" and "more than 12 times" in entry["error"]["message"]


def test_an_encrypted_file_is_named_as_such(client, sign):
    encrypted = sign(CII, "cms", "-encrypt", "-outform", "DER", "cert.pem")
    results = post(client, [("x.xml.p7m", encrypted), ("in.zip", zipped([("y.xml.p7m", encrypted)]))])
    assert [(e["name"], code(e)) for e in results] == [("x.xml.p7m", "SMIME_ENCRYPTED"),
                                                       ("in.zip/y.xml.p7m", "SMIME_ENCRYPTED")]
    alone = post(client, [("x.xml.p7m", encrypted)])  # the only file: an entry, never a 4xx or 5xx
    assert [code(e) for e in alone] == ["SMIME_ENCRYPTED"]


def test_hostile_signed_files_each_give_their_entry(client, sign):
    good = sign(CII)
    p7m_zip_p7m = sign(zipped([("in.xml.p7m", good), ("in.zip.p7m", sign(zipped([("x.xml", CII)])))]))
    cases = {
        "cut.xml.p7m": good[:len(good) // 2],                                    # cut short in transit
        "junk.p7m": b"this is no signature at all\n",
        "empty.p7m": b"",
        "said4g.p7m": b"\x30\x84\xff\xff\xff\xff\x06\x09" + bytes.fromhex("2a864886f70d010702"),
        "deep.p7m": b"\x30\x80" * 5000 + b"\x00\x00" * 5000,                    # ASN.1 nested deep
        "detached.xml.p7m": sign(CII, detached=True),                          # the signature alone
        "notb64.p7m": b"-----BEGIN PKCS7-----\n!!!\n-----END PKCS7-----\n",
        "badzip.zip.p7m": sign(b"PK\x03\x04 no archive"),                        # a signed ZIP that is none
    }
    results = post(client, list(cases.items()) + [("nest.zip.p7m", p7m_zip_p7m)])
    got = [(e["name"], code(e)) for e in results]
    assert got[:7] == [("cut.xml.p7m", "SMIME_OPAQUE"), ("junk.p7m", "SMIME_OPAQUE"), ("empty.p7m", "SMIME_OPAQUE"),
                       ("said4g.p7m", "SMIME_OPAQUE"), ("deep.p7m", "SMIME_OPAQUE"),
                       ("detached.xml.p7m", "SMIME_OPAQUE"), ("notb64.p7m", "SMIME_OPAQUE")]
    assert got[7] == ("badzip.zip.p7m/badzip.zip", "INVALID_ARCHIVE")
    # a signed ZIP in a signed ZIP: the outer opened, the inner signed file's document read, the ZIP in it not
    assert got[8:] == [("nest.zip.p7m/nest.zip/in.xml.p7m/in.xml", None),
                       ("nest.zip.p7m/nest.zip/in.zip.p7m/in.zip", "NESTED_ARCHIVE")]
    assert "cut short or damaged" in results[0]["error"]["message"]
    assert "detached signature" in results[5]["error"]["message"]


def _ber(tag: int, content: bytes) -> bytes:
    """A BER element of indefinite length."""
    return bytes([tag, 0x80]) + content + b"\x00\x00"


def test_a_signed_block_of_tiny_pieces_is_refused_at_once(client):
    # BER lets the content come in pieces: here 100,000 of one byte each (300 kB). A 9 MB block of them took 54 s
    # and 600 MB before, and an upload may hold many; openssl cms -stream writes pieces of 4 KiB
    pieces = _ber(0x24, b"\x04\x01<" * 100_000)
    encap = _ber(0x30, bytes.fromhex("06092a864886f70d010701") + _ber(0xA0, pieces))
    block = _ber(0x30, bytes.fromhex("06092a864886f70d010702") + _ber(0xA0, _ber(0x30, b"\x02\x01\x01\x31\x00"
                                                                                   + encap + b"\x31\x00")))
    started = time.monotonic()
    entry, = post(client, [("pieces.xml.p7m", block)])
    assert code(entry) == "SMIME_OPAQUE" and "too many small pieces" in entry["error"]["message"]
    assert time.monotonic() - started < 5


def test_the_unpacker_bounds_and_counts_what_a_signed_file_holds(sign):
    from pipeline.errors import ApiError

    p7m = sign(CII)
    small = Unpacker(Limits(max_files=10, max_member=len(CII) - 1, max_total=1 << 30))
    assert [(m.name, m.error[0]) for m in small.file("x.xml.p7m", p7m)] == [("x.xml.p7m/x.xml", "FILE_TOO_LARGE")]
    unpacker = Unpacker(Limits(max_files=10, max_member=1 << 20, max_total=2 * len(CII) - 1))
    assert [m.name for m in unpacker.file("a.xml.p7m", p7m)] == ["a.xml.p7m/a.xml"]
    with pytest.raises(ApiError) as raised:  # the room is the upload's, for its signed files as for its ZIPs
        list(unpacker.file("b.xml.p7m", p7m))
    assert raised.value.http_status == 413


# -- the command line and jobs -------------------------------------------------------------------------------------

def test_cli_validate_a_signed_file(tmp_path, sign, capsys):
    (tmp_path / "a.xml.p7m").write_bytes(sign(CII))
    assert main(["validate", str(tmp_path / "a.xml.p7m"), "--jobs", "1", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert [e["name"] for e in body["results"]] == ["a.xml.p7m/a.xml"]
    assert body["results"][0]["report"]["verdict"] == "valid"


def test_a_job_of_signed_files(tmp_path, monkeypatch, sign):
    from pipeline.settings import get_settings

    monkeypatch.setenv("EINVOICE_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    try:
        store = make_store("sqlite", tmp_path)
        p = Platform(store)
        _, token = p.key(credits=10)
        encrypted = sign(CII, "cms", "-encrypt", "-outform", "DER", "cert.pem")
        body, ctype = form([("a.xml.p7m", sign(CII)), ("b.xml.p7m", encrypted),
                            ("c.zip", zipped([("c.xml.p7m", base64.encodebytes(sign(CII2)))]))],
                           '{"operation": "validate", "spec": "en16931"}')
        r = p.post(token, "/v1/jobs", body=body, headers={"Content-Type": ctype})
        assert r.status_code == 202, r.text
        job, lines = p.finished_job(token, r.json["id"])
        assert job["state"] == "done", job
        assert [e["name"] for e in lines] == ["a.xml.p7m/a.xml", "b.xml.p7m", "c.zip/c.xml.p7m/c.xml"]
        assert [e["report"]["verdict"] if "report" in e else e["error"]["code"] for e in lines] == [
            "valid", "SMIME_ENCRYPTED", "valid"]
        store.close()
    finally:
        get_settings.cache_clear()
