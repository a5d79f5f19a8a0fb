"""Outlook's winmail.dat as German and other Outlooks write it, and cut short, through batch validation.

A file name in the TNEF's code page (CP1252 'Rechnung_März.xml', which tnefparse decodes as UTF-8 and raised on)
cost every invoice inside one TNEF_UNREADABLE entry; a winmail.dat cut short lost its last attachment unsaid.
Now each invoice gets its report under its name, and the attachment a cut falls in gets a TNEF_UNREADABLE entry."""
from __future__ import annotations

import struct

from mailbuild import _attribute, message, tnef
from test_mail import CII, PDF, UBL, client, codes, post  # noqa: F401 - the client fixture
from pipeline.unpack import tnef as reader


def _results(client, winmail: bytes) -> list[tuple[str, str | None]]:
    r = post(client, [("m.eml", message(1, [("winmail.dat", winmail)]).as_bytes())])
    assert r.status_code == 200, r.text
    return [(e["name"].split("winmail.dat", 1)[-1], (e.get("error") or {}).get("code")) for e in r.json["results"]]


def test_names_in_the_declared_code_page_keep_every_invoice(client):
    winmail = tnef([("Rechnung_März.xml", UBL), ("Größe.pdf", PDF)])
    assert "Rechnung_März.xml".encode("cp1252") in winmail  # as a German Outlook writes it: no UTF-8
    assert _results(client, winmail) == [("/Rechnung_März.xml", None), ("/Größe.pdf", None)]
    # a Russian Outlook: code page 1251 declared, the name in it (the same byte count as the placeholder)
    russian = tnef([("XXXX.xml", CII)]).replace(struct.pack("<II", 1252, 0), struct.pack("<II", 1251, 0))
    russian = russian.replace(b"XXXX.xml", "Счет.xml".encode("cp1251"))
    assert _results(client, russian) == [("/Счет.xml", None)]


def test_the_long_file_name_is_read_in_the_code_page_too():
    """Outlook puts the long name in the attachment's MAPI properties (PidTagAttachLongFilename, PT_STRING8)."""
    name = "Rechnung für März 2026.xml".encode("cp1252") + b"\x00"
    padded = name + b"\x00" * (-len(name) % 4)
    props = struct.pack("<IHHII", 1, 0x001E, 0x3707, 1, len(name)) + padded
    winmail = tnef([("RECHNU~1.XML", UBL)]) + _attribute(2, 0x9005, 0x0006, props)  # attAttachment
    assert reader.attachments(winmail).files == [("Rechnung für März 2026.xml", UBL)]


def test_a_winmail_dat_cut_short_names_the_attachment_it_damaged(client):
    whole = tnef([("a.xml", UBL), ("b.xml", CII)])
    assert _results(client, whole) == [("/a.xml", None), ("/b.xml", None)]
    assert _results(client, whole + b"\x00" * 7) == [("/a.xml", None), ("/b.xml", None)]  # padding: whole
    assert _results(client, whole[:-500]) == [("/a.xml", None), ("/b.xml", "TNEF_UNREADABLE")]
    cut_in_a = whole[:whole.index(UBL) + 100]  # inside the first invoice: it is damaged, the second lost
    r = post(client, [("m.eml", message(1, [("winmail.dat", cut_in_a)]).as_bytes())])
    assert codes(r) == ["TNEF_UNREADABLE"] and r.json["results"][0]["name"].endswith("winmail.dat/a.xml")
    assert "cut short" in r.json["results"][0]["error"]["message"]
    second = whole.index(struct.pack("<BH", 2, 0x9002), whole.index(UBL))  # where the second attachment begins
    for end in (second + 2, second + 20):  # inside its first attribute's head, inside its data
        assert _results(client, whole[:end]) == [("/a.xml", None), ("", "TNEF_UNREADABLE")], end
