"""Apple Mail's messages whose attachments it stored apart from them, as a copied ~/Library/Mail holds them: the
invoice is read as the message's attachment, named by the message, wherever the mailbox's folder is given (a
folder on the command line, as a job's files, a ZIP of it in a batch or a job).

The layout is Mail's (pipeline.unpack.apple): `Messages/<n>.partial.emlx`, whose stored-apart parts keep their
headers with X-Apple-Content-Length and no body, and `Attachments/<n>/<IMAP section>/<file>` beside Messages, the
file named as the part names it or, for a part of no name, as Mail names it ("Mail-Anhang.pdf"), its name in
decomposed Unicode as macOS writes it; Mail 2's `Messages/<n>.<section>.emlxpart` beside the message. The message
shape is that of a real Mail 10 `.partial.emlx` (multipart/alternative: text, then multipart/mixed of HTML and
attachments, so that the attachments are sections 2.2, 2.4, ...)."""
from __future__ import annotations

import base64
import io
import json
import unicodedata
import zipfile
from pathlib import Path

import pytest

from conftest import SHARED
from pipeline.cli import main
from pipeline.service.platform import PlatformConfig
from pipeline.unpack import Limits, Unpacker
from test_mail_senders import client, reports_of, single  # noqa: F401 - the client fixture
from test_mail_client_exports import _code, _zip_of
from test_platform_helpers import Platform, make_store
from test_validate_batch import form
from test_validate_batch import post as post_batch

REAL = SHARED / "realworld/corpus/XML-Rechnung"
XML = (REAL / "CII/EN16931_Einfach.cii.xml").read_bytes()
PDF = (REAL / "FX/EN16931_Rabatte.pdf").read_bytes()
OLD_XML = (REAL / "UBL/EN16931_Einfach.ubl.xml").read_bytes()
OLD_B64_XML = (REAL / "UBL/EN16931_ElektronischeAdresse.ubl.xml").read_bytes()
ORPHAN_XML = (REAL / "CII/EN16931_ElektronischeAdresse.cii.xml").read_bytes()
PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)
PLIST = (b'<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" '
         b'"http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n<plist version="1.0">\n<dict>\n'
         b"\t<key>flags</key>\n\t<integer>8590195713</integer>\n</dict>\n</plist>\n")
BATCH = "/v1/invoice/zugferd/validate/batch"
MARCH = "Rechnung März.xml"


def _emlx(raw: bytes) -> bytes:
    return f"{len(raw):<10}\n".encode() + raw + PLIST


def _stub(ctype: str, name: str | None, size: int, encoding: str = "base64") -> str:
    """A part Mail stored apart: its headers, X-Apple-Content-Length, no body."""
    named = f";\n\tname={name}" if name else ""
    disposition = f"Content-Disposition: attachment;\n\tfilename={name}\n" if name else ""
    return (f"Content-Transfer-Encoding: {encoding}\n{disposition}Content-Type: {ctype}{named}\n"
            f"X-Apple-Content-Length: {size}\n\n")


def _mail10(number: int, stubs: list[str]) -> bytes:
    """A Mail 10 `.partial.emlx` message: text (1), then a multipart/mixed (2) of HTML (2.1) and each stub
    (2.2, 2.4, ...) with HTML between."""
    mixed = "".join(f"--Apple-Mail=_M\n{stub}\n--Apple-Mail=_M\nContent-Type: text/html;\n\tcharset=us-ascii\n\n"
                    "<html><body><br></body></html>\n" for stub in stubs)
    return (f"From: Seller <billing@seller.example>\nTo: ap@buyer.example\nSubject: Rechnung {number}\n"
            f"Date: Mon, 2 Mar 2026 11:00:00 +0000\nMessage-Id: <s{number}@seller.example>\n"
            "Mime-Version: 1.0 (Mac OS X Mail 10.3)\nContent-Type: multipart/alternative;\n"
            ' boundary="Apple-Mail=_A"\n\n\n--Apple-Mail=_A\nContent-Transfer-Encoding: 7bit\nContent-Type: text/plain;'
            "\n\tcharset=us-ascii\n\nAnbei die Rechnung.\n\n--Apple-Mail=_A\nContent-Type: multipart/mixed;\n"
            '\tboundary="Apple-Mail=_M"\n\n\n--Apple-Mail=_M\nContent-Type: text/html;\n\tcharset=us-ascii\n\n'
            f"<html><body>Anbei</body></html>\n{mixed}--Apple-Mail=_M--\n\n--Apple-Mail=_A--\n").encode()


def _mail2(number: int, name: str, size: int) -> bytes:
    """A Mail 2 message of one stored part (section 2), kept beside it as `<n>.2.emlxpart`."""
    return (f"From: Old Seller <old@seller.example>\nSubject: Rechnung {number}\nDate: Mon, 2 Mar 2026 12:00:00 +0000"
            f"\nMessage-Id: <o{number}@seller.example>\nMime-Version: 1.0\nContent-Type: multipart/mixed; "
            'boundary="B"\n\n--B\nContent-Type: text/plain\n\nAnbei.\n--B\n'
            f"{_stub('application/xml', name, size)}\n--B--\n").encode()


MAILBOX = {
    # Mail 10: an XML invoice named in its part (its file name decomposed, as macOS writes it), a PDF of no name
    # (Mail names its file), a logo: sections 2.2, 2.4, 2.6
    "INBOX.mbox/Messages/114892.partial.emlx": _emlx(_mail10(114892, [
        _stub("application/xml", f'"{MARCH}"', len(XML)), _stub("application/pdf", None, len(PDF)),
        _stub("image/png", "logo.png", len(PNG))])),
    f"INBOX.mbox/Attachments/114892/2.2/{unicodedata.normalize('NFD', MARCH)}": XML,
    "INBOX.mbox/Attachments/114892/2.4/Mail-Anhang.pdf": PDF,
    "INBOX.mbox/Attachments/114892/2.6/logo.png": PNG,
    "INBOX.mbox/Attachments/114892/2.6/._logo.png": b"\x00\x05\x16\x07" + bytes(60),  # the Finder's, beside it
    # its attachment not downloaded: the notice says where it would be
    "INBOX.mbox/Messages/7.partial.emlx": _emlx(_mail10(7, [_stub("application/pdf", "Rechnung-7.pdf", 999)])),
    # a stored file whose message is not given: a file of its own
    "INBOX.mbox/Attachments/999/2/orphan.xml": ORPHAN_XML,
    # Mail 2: the part beside the message, as it is, and as base64 text
    "Old.mbox/Messages/5.partial.emlx": _emlx(_mail2(5, "alt.xml", len(OLD_XML))),
    "Old.mbox/Messages/5.2.emlxpart": OLD_XML,
    "Old.mbox/Messages/6.partial.emlx": _emlx(_mail2(6, "alt-b64.xml", len(OLD_B64_XML))),
    "Old.mbox/Messages/6.2.emlxpart": base64.encodebytes(OLD_B64_XML),
}
# a message whose length line says more than the file holds (MAIL_DAMAGED), and its stored file
DAMAGED = {"M/Messages/9.partial.emlx": b"99999     "
           + _emlx(_mail10(9, [_stub("application/xml", "r-9.xml", 9)]))[10:],
           "M/Attachments/9/2.2/r-9.xml": XML}
FOUND = {MARCH: XML, "Mail-Anhang.pdf": PDF, "alt.xml": OLD_XML, "alt-b64.xml": OLD_B64_XML,
         "orphan.xml": ORPHAN_XML}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("apple") / "Mail"
    for name, data in MAILBOX.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def _check(entries: list[dict]) -> None:
    """Each invoice once, the stored ones under their message; the message whose file was not given a notice."""
    found = {unicodedata.normalize("NFC", e["name"].rsplit("/", 1)[-1]): e for e in entries if _code(e) is None}
    assert sorted(found) == sorted(FOUND), [(e["name"], _code(e)) for e in entries]
    for base in (MARCH, "Mail-Anhang.pdf"):
        assert "INBOX.mbox/Messages/114892.partial.emlx/" in found[base]["name"], found[base]["name"]
        assert found[base]["email"]["subject"] == "Rechnung 114892"
        assert "Attachments" not in found[base]["name"]
    assert found["alt.xml"]["email"]["subject"] == "Rechnung 5" and "emlxpart" not in found["alt.xml"]["name"]
    assert found["orphan.xml"]["name"].endswith("INBOX.mbox/Attachments/999/2/orphan.xml")
    (notice,) = [e for e in entries if _code(e) is not None]
    assert _code(notice) == "NO_INVOICE" and notice["email"]["subject"] == "Rechnung 7"
    assert "Rechnung-7.pdf" in notice["notice"]["message"] and "Attachments/7/" in notice["notice"]["message"]
    assert not any("logo.png" in e["name"] or e["name"].endswith(".emlxpart") for e in entries)


def test_the_folder_on_the_command_line(folder, capsys):
    code = main(["validate", str(folder), "--json", "--jobs", "1"])
    out, err = capsys.readouterr()
    body = json.loads(out)
    assert code in (0, 1) and body["summary"]["errors"] == 0, (out, err)
    _check(body["results"])
    assert "skipped" not in err, err  # the logo and the .emlxpart files are their messages', not left unread


def test_a_message_file_given_alone_finds_its_attachments_beside_it(folder, capsys):
    code = main(["validate", str(folder / "INBOX.mbox/Messages/114892.partial.emlx"), "--json", "--jobs", "1"])
    out, err = capsys.readouterr()
    names = sorted(unicodedata.normalize("NFC", e["name"].rsplit("/", 1)[-1]) for e in json.loads(out)["results"])
    assert code in (0, 1) and names == ["Mail-Anhang.pdf", MARCH], (out, err)
    code = main(["validate", str(folder / "Old.mbox/Messages/6.partial.emlx"), "--json"])
    (entry,) = json.loads(capsys.readouterr()[0])["results"]
    assert entry["name"].endswith("/alt-b64.xml") and "report" in entry


def test_a_zip_of_the_folder_in_a_batch_gives_the_single_endpoints_reports(folder, client):  # noqa: F811
    r = post_batch(client, [("mail.zip", _zip_of(folder))], path=BATCH)
    assert r.status_code == 200, r.text
    results = r.json["results"]
    _check(results)
    worked = [e for e in results if "report" in e]
    expected = [single(client, FOUND[unicodedata.normalize("NFC", e["name"].rsplit("/", 1)[-1])]) for e in worked]
    assert reports_of(client, worked) == expected


def test_the_folders_files_as_a_batchs_parts_in_either_order(folder, client):  # noqa: F811
    """A folder posted as separate `file` parts (the page's folder upload): each message takes its stored files."""
    from pipeline.cli.jobs import _uploads

    parts = [(name, path.read_bytes()) for name, path in _uploads([folder])]
    for files in (parts, parts[::-1]):
        r = post_batch(client, files, path=BATCH)
        assert r.status_code == 200, r.text
        _check(r.json["results"])
    # a message that cannot be read: its stored file a document of its own, as in a job
    r = post_batch(client, list(DAMAGED.items()), path=BATCH)
    assert [(e["name"], _code(e)) for e in r.json["results"]] == [("M/Messages/9.partial.emlx", "MAIL_DAMAGED"),
                                                                  ("M/Attachments/9/2.2/r-9.xml", None)]


def test_as_a_job_zipped_and_as_the_folders_files(folder, tmp_path, monkeypatch):
    from pipeline.cli.jobs import _uploads
    from pipeline.settings import get_settings

    monkeypatch.setenv("EINVOICE_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    try:
        store = make_store("sqlite", tmp_path)
        p = Platform(store, config=PlatformConfig(rate_limit=1000, costs={"/v1/invoice/zugferd/validate": 1}))
        _, token = p.key(credits=100)
        parts = [(name, path.read_bytes()) for name, path in _uploads([folder])]  # as `pipeline jobs submit` sends
        assert "INBOX.mbox/Attachments/114892/2.6/logo.png" in dict(parts)  # sent with its message
        assert "Old.mbox/Messages/5.2.emlxpart" in dict(parts)
        for files in ([("mail.zip", _zip_of(folder))], parts, parts[::-1]):  # (messages before their files too)
            body, ctype = form(files, '{"operation": "validate", "spec": "zugferd"}')
            r = p.post(token, "/v1/jobs", body=body, headers={"Content-Type": ctype})
            assert r.status_code == 202, r.text
            assert r.json["total"] == len(FOUND) + 1 and r.json["creditsReserved"] == len(FOUND)
            job, lines = p.finished_job(token, r.json["id"])
            assert job["state"] == "done" and job["noInvoice"] == 1 and job["errors"] == 0, job
            _check(lines)
        # a message that cannot be read: its stored file a file of its own, named as the service names a part's
        body, ctype = form(list(DAMAGED.items()), '{"operation": "validate", "spec": "zugferd"}')
        r = p.post(token, "/v1/jobs", body=body, headers={"Content-Type": ctype})
        _, lines = p.finished_job(token, r.json["id"])
        assert [(e["name"], _code(e)) for e in lines] == [("M/Messages/9.partial.emlx", "MAIL_DAMAGED"),
                                                          ("M/Attachments/9/2.2/r-9.xml", None)]
        assert not list((tmp_path / "jobs").glob("*/upload-*"))  # no spool file is left behind
        store.close()
    finally:
        get_settings.cache_clear()


def _unpacked(files: dict[str, bytes]) -> list:
    return list(Unpacker(Limits(100, 1 << 20, 1 << 24)).file("m.zip", _zip_of_dict(files)))


def _zip_of_dict(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_a_stored_file_in_another_sections_folder_or_too_large_or_not_named_by_its_part():
    # Mail numbered the part otherwise than we do: found by its file name, still the message's
    moved = _unpacked({"M/Messages/3.partial.emlx": _emlx(_mail10(3, [_stub("application/pdf", "r.pdf", 9)])),
                       "M/Attachments/3/5/r.pdf": PDF})
    assert [(m.name.rsplit("/", 1)[-1], m.data == PDF, m.email["subject"]) for m in moved] == \
        [("r.pdf", True, "Rechnung 3")]
    # the only file of the part's own section folder is the part's, named as the part names it
    renamed = _unpacked({"M/Messages/8.partial.emlx": _emlx(_mail10(8, [_stub("image/png", "logo.png", 9),
                                                                        _stub("application/xml", "r-8.xml", 9)])),
                         "M/Attachments/8/2.2/logo.png": PNG, "M/Attachments/8/2.4/Mail-Anhang.xml": XML})
    assert [(m.name.rsplit("/", 1)[-1], m.data == XML) for m in renamed] == [("r-8.xml", True)]
    # a stored file no part stands for is taken after the others; one too large is that attachment's entry
    rest = list(Unpacker(Limits(100, len(XML) + 10, 1 << 24)).file("m.zip", _zip_of_dict({
        "M/Messages/4.partial.emlx": _emlx(_mail10(4, [_stub("application/pdf", "big.pdf", len(PDF)),
                                                       _stub("application/xml", None, 9)])),
        "M/Attachments/4/2.2/big.pdf": PDF, "M/Attachments/4/9/extra.xml": XML})))
    assert [(m.name.rsplit("/", 1)[-1], m.error[0] if m.error else m.data == XML) for m in rest] == \
        [("big.pdf", "FILE_TOO_LARGE"), ("extra.xml", True)]
    assert all(m.name.startswith("M/Messages/4.partial.emlx/") and m.email["subject"] == "Rechnung 4" for m in rest)


def test_the_stored_files_of_a_message_that_cannot_be_read_are_files_of_their_own(tmp_path, capsys):
    files = DAMAGED
    got = [(m.name, m.error[0] if m.error else m.data == XML) for m in _unpacked(files)]
    assert got == [("M/Messages/9.partial.emlx", "MAIL_DAMAGED"), ("M/Attachments/9/2.2/r-9.xml", True)]
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    main(["validate", str(tmp_path), "--json", "--jobs", "1"])
    results = json.loads(capsys.readouterr()[0])["results"]
    assert [(e["name"], _code(e)) for e in results] == got[:1] + [("M/Attachments/9/2.2/r-9.xml", None)]


def test_which_files_are_a_messages_stored_attachments():
    from pipeline.unpack import apple
    deep = "Mail/V10/ACCOUNT/INBOX.mbox/UUID/Data/1/2"  # a current store nests the two folders deeper
    assert apple.message(f"{deep}/Messages/123.partial.emlx") == (deep, "123")
    assert apple.stored(f"{deep}/Attachments/123/1.2/Rechnung.pdf") == (deep, "123", "1.2")
    assert apple.stored(f"{deep}/Messages/123.2.emlxpart") == (deep, "123", "2")
    assert apple.message("123.emlx") == ("", "123") and apple.stored("Attachments/123/2/a.xml") == ("", "123", "2")
    # not Mail's layout: a folder of invoices that happens to be called Attachments, a message of no number
    assert apple.stored("Attachments/2026/rechnung.xml") is None and apple.stored("Attachments/a/2/x.xml") is None
    assert apple.message("Messages/rechnung.emlx") is None
    stored = apple.Stored([f"{deep}/Messages/123.partial.emlx", f"{deep}/Attachments/123/2/a.xml",
                           f"{deep}/Attachments/124/2/b.xml", "Other/Attachments/123/2/c.xml"], lambda n: None)
    assert stored.claimed == {f"{deep}/Attachments/123/2/a.xml"}  # only beside its own message
