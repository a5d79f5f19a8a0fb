"""Mail as an accounts-payable clerk exports it from the common mail programs and gives it to us, as a folder on the
command line, as a ZIP of that folder in a batch request and as a job:

- Apple Mail's "Export Mailbox": a folder `Rechnungen.mbox/` of a mailbox file named `mbox` (no extension), an XML
  `Info.plist` and a binary `table_of_contents`;
- Apple Mail's own store (older versions, or a copied ~/Library/Mail): `INBOX.mbox/Messages/<n>.emlx` (a line with
  the message's length, the message, a property list) and `<n>.partial.emlx`, whose attachment Mail stored apart
  in `INBOX.mbox/Attachments/<n>/<part>/<file name>` (read as that message's: tests/test_mail_apple_stored.py);
- Thunderbird's profile folder: mailbox files of no extension (`Inbox`, `Inbox.sbd/Rechnungen`) beside `.msf`
  indexes (Mork text), an empty mail folder (`Trash`, 0 bytes), its filters (`msgFilterRules.dat`), and a message
  saved with "Save as" (.eml).

Each invoice is found once, wherever it is given; the property lists, indexes and tables of contents are left out
as a .DS_Store is (never an invalid invoice, never an error entry). The messages are built around the shared
corpus' documents; the batch's reports are the single endpoint's for the same bytes."""
from __future__ import annotations

import io
import json
import struct
import zipfile
from pathlib import Path

import pytest

from conftest import SHARED
from mailbuild import message
from pipeline.cli import main
from pipeline.service.platform import PlatformConfig
from pipeline.unpack import Limits, Unpacker, kind, os_metadata
from test_mail_senders import client, reports_of, single  # noqa: F401 - the client fixture
from test_platform_helpers import Platform, make_store
from test_validate_batch import form
from test_validate_batch import post as post_batch

REAL = SHARED / "realworld/corpus/XML-Rechnung"
# one distinct document per place, so that "found once" is seen by name and by bytes
INVOICES = {
    "apple-export.xml": (REAL / "UBL/EN16931_Einfach.ubl.xml").read_bytes(),
    "apple-export.pdf": (REAL / "FX/EN16931_Rabatte.pdf").read_bytes(),
    "thunderbird-inbox.xml": (REAL / "CII/EN16931_Einfach.cii.xml").read_bytes(),
    "thunderbird-sub.pdf": (REAL / "FX/EN16931_Einfach.pdf").read_bytes(),
    "thunderbird-saved.xml": (REAL / "UBL/EN16931_ElektronischeAdresse.ubl.xml").read_bytes(),
    "apple-store.xml": (REAL / "CII/EN16931_ElektronischeAdresse.cii.xml").read_bytes(),
    "Rechnung-102.pdf": (REAL / "FX/EN16931_OEPNV.pdf").read_bytes(),  # stored apart by Apple Mail
}
BATCH = "/v1/invoice/zugferd/validate/batch"  # (each document is routed by what it is: XML or PDF)

PLIST = (b'<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" '
         b'"http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n<plist version="1.0">\n<dict>\n'
         b"\t<key>date-received</key>\n\t<integer>1772446500</integer>\n\t<key>flags</key>\n"
         b"\t<integer>8590195713</integer>\n</dict>\n</plist>\n")
EXPORT_INFO = (b'<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" '
               b'"http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n<plist version="1.0">\n<dict>\n'
               b"\t<key>LocalFileUpToDate</key>\n\t<false/>\n\t<key>IsLocal</key>\n\t<true/>\n</dict>\n</plist>\n")
MORK = (b'// <!-- <mdb:mork:z v="1.4"/> -->\n< <(a=c)> // (f=iso-8859-1)\n  (B8=Custom3)(B9=Custom4)(BA=Notes)>\n'
        b"<(80=ns:msg:db:row:scope:msgs:all)(81=subject)(82=sender)>\n{1:^80 {(k^BF:c)(s=9)} [1(^81=Rechnung)]}\n")
TABLE_OF_CONTENTS = struct.pack(">IIII", 0x00000001, 2, 0, 0) + b"\x00" * 48 + b"Rechnung\x00\x00"


def _raw(n: int, files: list[str], subject: str | None = None) -> bytes:
    return message(n, [(name, INVOICES[name]) for name in files], subject=subject).as_bytes()


def _thunderbird_mbox(messages: list[bytes]) -> bytes:
    """As Thunderbird writes its folders: "From - <asctime>" envelopes and its X-Mozilla-Status headers."""
    out = b""
    for n, data in enumerate(messages):
        out += (b"From - Mon Mar 02 10:%02d:00 2026\r\nX-Mozilla-Status: 0001\r\nX-Mozilla-Status2: 00000000\r\n"
                % n + data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n") + b"\r\n")
    return out


def _emlx(raw: bytes, tail: bytes = PLIST, count: int | None = None) -> bytes:
    return f"{len(raw) if count is None else count:<10}\n".encode() + raw + tail


def _partial(number: int, name: str) -> bytes:
    """A message Apple Mail stored without its attachment: the part's headers with X-Apple-Content-Length, no
    body (as its .partial.emlx files have it)."""
    return (f"From: Seller <billing@seller.example>\nTo: ap@buyer.example\nSubject: Rechnung {number}\n"
            f"Date: Mon, 2 Mar 2026 11:00:00 +0000\nMessage-Id: <p{number}@seller.example>\n"
            'Mime-Version: 1.0 (Mac OS X Mail 16.0)\nContent-Type: multipart/mixed;\n\tboundary="Apple-Mail=_X"\n\n'
            "\n--Apple-Mail=_X\nContent-Transfer-Encoding: 7bit\nContent-Type: text/plain;\n\tcharset=us-ascii\n\n"
            "Anbei die Rechnung.\n\n--Apple-Mail=_X\nContent-Transfer-Encoding: base64\n"
            f"Content-Disposition: attachment;\n\tfilename={name}\nContent-Type: application/pdf;\n\tname={name}\n"
            f"X-Apple-Content-Length: {len(INVOICES[name])}\n\n\n--Apple-Mail=_X--\n").encode()


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> Path:
    """A clerk's folder of what the three mail programs left: every invoice of INVOICES once, one message without
    an invoice, and each program's own files beside its mailboxes."""
    root = tmp_path_factory.mktemp("exports") / "mail"
    files = {
        # Apple Mail, Mailbox > Export Mailbox...
        "Rechnungen.mbox/mbox": b"".join(
            b"From billing@seller.example Mon Mar  2 10:15:00 2026\n" + raw.replace(b"\r\n", b"\n") + b"\n"
            for raw in (_raw(1, ["apple-export.xml"]), _raw(2, ["apple-export.pdf"]))),
        "Rechnungen.mbox/Info.plist": EXPORT_INFO,
        "Rechnungen.mbox/table_of_contents": TABLE_OF_CONTENTS,
        # Apple Mail's store: messages one file each, an attachment stored apart
        "INBOX.mbox/Messages/101.emlx": _emlx(_raw(3, ["apple-store.xml"]).replace(b"\r\n", b"\n")),
        "INBOX.mbox/Messages/102.partial.emlx": _emlx(_partial(102, "Rechnung-102.pdf")),
        "INBOX.mbox/Attachments/102/2/Rechnung-102.pdf": INVOICES["Rechnung-102.pdf"],
        "INBOX.mbox/Info.plist": PLIST,
        # Thunderbird's profile: Mail/Local Folders
        "Local Folders/Inbox": _thunderbird_mbox([_raw(4, ["thunderbird-inbox.xml"]), _raw(5, [], "Termin")]),
        "Local Folders/Inbox.msf": MORK,
        "Local Folders/Inbox.sbd/Rechnungen": _thunderbird_mbox([_raw(6, ["thunderbird-sub.pdf"])]),
        "Local Folders/Inbox.sbd/Rechnungen.msf": MORK,
        "Local Folders/Rechnung 7.eml": _raw(7, ["thunderbird-saved.xml"]),
        "Local Folders/Trash": b"",  # an empty mail folder beside its index: nothing to report
        "Local Folders/Trash.msf": MORK,
        "Local Folders/msgFilterRules.dat": b'version="9"\nlogging="no"\nname="Rechnungen"\nenabled="yes"\n',
    }
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def _zip_of(folder: Path) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                z.write(p, p.relative_to(folder.parent).as_posix())
    return buf.getvalue()


def _code(entry: dict) -> str | None:
    return (entry.get("error") or entry.get("notice") or {}).get("code")


def _check(entries: list[dict]) -> None:
    """Each invoice found once and worked on, the one Apple Mail stored apart under its .partial.emlx's message;
    the one message without an invoice a notice; nothing else: no entry for a property list, an index or a table
    of contents."""
    found = sorted(e["name"].rsplit("/", 1)[-1] for e in entries if _code(e) is None)
    assert found == sorted(INVOICES), [(e["name"], _code(e)) for e in entries]
    others = sorted((_code(e), e["email"]["subject"]) for e in entries if _code(e) is not None)
    assert others == [("NO_INVOICE", "Termin")], others
    kept = next(e for e in entries if (e.get("email") or {}).get("subject") == "Rechnung 102")
    assert "INBOX.mbox/Messages/102.partial.emlx/" in kept["name"] and kept["name"].endswith("/Rechnung-102.pdf")
    assert not any(word in e["name"] for e in entries
                   for word in ("plist", "table_of_contents", ".msf", "Trash", "msgFilterRules"))


def test_a_folder_of_exports_on_the_command_line(exports, capsys):
    code = main(["validate", str(exports), "--json", "--jobs", "1"])
    out, err = capsys.readouterr()
    body = json.loads(out)
    assert code in (0, 1) and body["summary"]["errors"] == 0, (out, err)
    _check(body["results"])
    assert "skipped" not in err, err  # the programs' own files are left out unsaid, as a .DS_Store is
    names = [e["name"] for e in body["results"]]
    assert any(n.startswith("Local Folders/Inbox/") for n in names)  # a mailbox of no extension, opened
    assert any(n.startswith("Rechnungen.mbox/mbox/") for n in names)
    assert not any("Attachments" in n for n in names)  # the stored file is its message's


def test_a_zip_of_the_exports_in_a_batch_request_gives_the_single_endpoints_reports(exports, client):
    r = post_batch(client, [("mail.zip", _zip_of(exports))], path=BATCH)
    assert r.status_code == 200, r.text
    results = r.json["results"]
    _check(results)
    worked = [e for e in results if "report" in e]
    by_name = {e["name"].rsplit("/", 1)[-1]: e for e in worked}
    assert reports_of(client, worked) == [single(client, INVOICES[e["name"].rsplit("/", 1)[-1]]) for e in worked]
    assert by_name["apple-store.xml"]["email"]["subject"] == "Invoice 0003"  # the .emlx's message, named by it


def test_the_exports_as_a_job_zipped_and_as_the_folders_files(exports, tmp_path, monkeypatch):
    from pipeline.cli.jobs import _uploads
    from pipeline.settings import get_settings

    monkeypatch.setenv("EINVOICE_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    try:
        store = make_store("sqlite", tmp_path)
        p = Platform(store, config=PlatformConfig(rate_limit=1000, costs={"/v1/invoice/zugferd/validate": 1}))
        key_id, token = p.key(credits=100)
        parts = [(name, path.read_bytes()) for name, path in _uploads([exports])]  # as `pipeline jobs submit` sends
        assert not any(n.endswith((".plist", ".msf", "table_of_contents", "Trash", ".dat")) for n, _ in parts)
        assert ("Local Folders/Inbox", (exports / "Local Folders/Inbox").read_bytes()) in parts
        charged = []
        for files in ([("mail.zip", _zip_of(exports))], parts):
            body, ctype = form(files, '{"operation": "validate", "spec": "zugferd"}')
            r = p.post(token, "/v1/jobs", body=body, headers={"Content-Type": ctype})
            assert r.status_code == 202, r.text
            assert r.json["total"] == len(INVOICES) + 1 and r.json["creditsReserved"] == len(INVOICES)
            job, lines = p.finished_job(token, r.json["id"])
            assert job["state"] == "done" and job["noInvoice"] == 1 and job["errors"] == 0, job
            _check(lines)
            charged.append(job["creditsCharged"])
        # the notices are free; the ZIP and the folder's files cost alike (each document the price of its rules)
        assert charged[0] == charged[1] > 0 and store.get_key(key_id).balance == 100 - sum(charged)
        store.close()
    finally:
        get_settings.cache_clear()


# -- .emlx on its own -----------------------------------------------------------------------------------------------

def _unpacked(name: str, data: bytes) -> list:
    return list(Unpacker(Limits(100, 1 << 20, 1 << 24)).file(name, data))


def test_an_emlx_is_read_to_its_length_and_its_property_list_is_never_a_document():
    raw = _raw(8, ["apple-store.xml"]).replace(b"\r\n", b"\n")
    # a property list that holds XML of its own (a subject "<Invoice>"): Mail's, not the message's
    tail = PLIST.replace(b"</dict>", b"\t<key>subject</key>\n\t<string>&lt;Invoice/&gt;</string>\n</dict>")
    (member,) = _unpacked("upload", _emlx(raw, tail))  # known by its first bytes, not its name
    assert member.error is None and member.data == INVOICES["apple-store.xml"]
    assert member.name.endswith("/apple-store.xml") and member.email["subject"] == "Invoice 0008"
    assert kind("upload", _emlx(raw)[:4096]) == "emlx" and kind("8.emlx", b"") == "emlx"
    assert kind("a.xml", _emlx(raw)[:4096]) is None  # an XML file's name is believed, as for an .eml


@pytest.mark.parametrize("count,tail,said", [
    (+40, b"", "cut short"),                    # more than the file has
    (-40, PLIST, "property list does not follow"),  # the message's end would fall inside it
    (None, b"", None),                           # no property list at all: still the message it says
], ids=["too-long", "too-short", "no-plist"])
def test_an_emlx_whose_length_is_wrong_is_an_entry(client, count, tail, said):
    raw = _raw(9, ["apple-store.xml"]).replace(b"\r\n", b"\n")
    data = _emlx(raw, tail, None if count is None else len(raw) + count)
    r = post_batch(client, [("9.emlx", data)], path=BATCH)
    assert r.status_code == 200, r.text
    (entry,) = r.json["results"]
    if said is None:
        assert "report" in entry and entry["name"].endswith("/apple-store.xml")
    else:
        assert entry["name"] == "9.emlx" and entry["error"]["code"] == "MAIL_DAMAGED", entry
        assert said in entry["error"]["message"] and entry["email"]["subject"] == "Invoice 0009"
    first_line = _unpacked("9.emlx", b"Subject: x\n\nno length")  # an .emlx without its length line
    assert [m.error[0] for m in first_line] == ["MAIL_DAMAGED"]


def test_the_mail_programs_own_files_are_told_by_name_and_first_bytes():
    assert os_metadata("Rechnungen.mbox/Info.plist", EXPORT_INFO)
    assert os_metadata("table_of_contents", TABLE_OF_CONTENTS) and os_metadata("x/Inbox.msf", MORK)
    # an invoice so named is still an invoice: the first bytes must agree
    assert not os_metadata("Info.plist", INVOICES["apple-store.xml"])
    assert not os_metadata("table_of_contents", INVOICES["apple-export.xml"])
    assert not os_metadata("Rechnung.msf", INVOICES["apple-export.pdf"])
    assert os_metadata("msgFilterRules.dat", b'version="9"\n') and not os_metadata("msgFilterRules.dat", b"<x/>")
    assert not os_metadata("table_of_contents", INVOICES["apple-export.pdf"])  # (a PDF has NUL bytes early too)
