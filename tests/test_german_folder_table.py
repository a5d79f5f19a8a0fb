"""Issue 38 item 5 on the command line: `pipeline validate FOLDER --lang de` printed its table in German but the
entries refused unread (a broken or empty ZIP, a ZIP inside a ZIP, an encrypted message, a message without an
invoice) with the unpacker's English messages, and the line naming the skipped files on stderr in English. Each now
says the page's German sentence for its code (one wording wherever a person meets it); the codes stay."""
from __future__ import annotations

import io
import re
import zipfile

from test_people_german_errors import ENGLISH, GERMAN
from test_platform_helpers import cli

REFUSED = re.compile(r"(?:HINWEIS|NICHT GEPRÜFT) +([A-Z_]+): (.+)$")  # a row's code and message
MAIL = "From: a@example.de\nTo: b@example.de\nSubject: {subject}\nMIME-Version: 1.0\n{head}\n\n{body}\n"


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def _folder(tmp_path):
    folder = tmp_path / "eingang"
    folder.mkdir()
    (folder / "kaputt.zip").write_bytes(b"PK\x03\x04 kein Archiv")
    (folder / "leer.zip").write_bytes(_zip({}))
    (folder / "doppelt.zip").write_bytes(_zip({"innen.zip": _zip({"a.xml": b"<a/>"})}))
    (folder / "hallo.eml").write_text(MAIL.format(subject="Hallo", head="Content-Type: text/plain", body="nur Text"))
    (folder / "geheim.eml").write_text(MAIL.format(
        subject="Geheim", head="Content-Type: application/pkcs7-mime; smime-type=enveloped-data; name=smime.p7m\n"
                              "Content-Transfer-Encoding: base64", body="MIAGCSqGSIb3DQEHA6CAMIACAQAxggE="))
    (folder / "notiz.txt").write_text("keine Rechnung")
    return folder


def test_a_folders_refused_entries_and_skipped_files_in_german(tmp_path):
    folder = _folder(tmp_path)
    german = cli({}, "validate", str(folder), "--lang", "de")
    assert german.returncode == 2, german.stdout + german.stderr
    said = dict(REFUSED.search(line).groups() for line in german.stdout.splitlines()[1:] if REFUSED.search(line))
    assert set(said) == {"INVALID_ARCHIVE", "EMPTY_ARCHIVE", "NESTED_ARCHIVE", "NO_INVOICE", "SMIME_ENCRYPTED"}, said
    for code, message in said.items():
        assert message == GERMAN[code], (code, message)
    assert german.stderr.strip() == (f"pipeline validate: {folder}: 1 Datei übersprungen, die nicht *.xml, *.pdf, "
                                     "*.eml, *.mbox, *.msg, *.p7m oder *.zip ist: notiz.txt"), german.stderr
    # nothing English but the codes and the documents' names (a message's sender and subject among them)
    text = german.stdout + german.stderr
    assert not ENGLISH.search(text), text
    english = cli({}, "validate", str(folder))
    assert "The file is not a readable ZIP archive" in english.stdout, english.stdout
    assert "skipped 1 file that is not *.xml" in english.stderr, english.stderr


def test_a_folder_with_no_invoice_and_an_unreadable_only_zip_in_german(tmp_path):
    folder = tmp_path / "nichts"
    folder.mkdir()
    (folder / "a.txt").write_text("x")
    none = cli({}, "validate", str(folder), "--lang", "de")
    assert none.returncode == 2
    assert none.stderr.splitlines()[-1] == (f"pipeline validate: keine E-Rechnung (*.xml, *.pdf, *.eml, *.mbox, *.msg, "
                                            f"*.p7m oder *.zip) in {folder}"), none.stderr
    broken = tmp_path / "kaputt.zip"
    broken.write_bytes(b"PK\x03\x04 kein Archiv")
    one = cli({}, "validate", str(broken), "--lang", "de")
    assert one.returncode == 2 and one.stderr.strip() == ("pipeline validate: INVALID_ARCHIVE: "
                                                          + GERMAN["INVALID_ARCHIVE"]), one.stderr
