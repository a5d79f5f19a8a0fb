"""Signed files (.p7m) and Outlook messages (.msg) in a folder given to `pipeline validate`, `pipeline jobs
submit` (each a part of its own, with its media type) and the page's folder picker: read as a named one is, never
left out as "not *.xml, *.pdf, ..." (they were, before the folder's suffixes took them)."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from conftest import REPO, SHARED
from mailbuild import compound_file, outlook_message
from pipeline.cli import main

CII = (SHARED / "realworld/corpus/XML-Rechnung/CII/EN16931_Einfach.cii.xml").read_bytes()


@pytest.fixture
def folder(tmp_path):
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed to sign the test file (Debian: apt-get install openssl)")
    d = tmp_path / "in"
    d.mkdir()
    (d / "a.xml").write_bytes(CII)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=x",
                    "-keyout", "key.pem", "-out", "cert.pem"], check=True, capture_output=True, cwd=tmp_path)
    subprocess.run(["openssl", "cms", "-sign", "-nodetach", "-binary", "-signer", "cert.pem", "-inkey", "key.pem",
                    "-in", str(d / "a.xml"), "-outform", "DER", "-out", str(d / "b.xml.p7m")], check=True,
                   capture_output=True, cwd=tmp_path)
    (d / "c.msg").write_bytes(compound_file(outlook_message(1, [("m.xml", CII)])))
    (d / "notes.txt").write_text("no")
    return d


def test_cli_folder_reads_signed_files_and_outlook_messages(folder, capsys):
    assert main(["validate", str(folder), "--jobs", "1", "--json"]) == 0
    out = capsys.readouterr()
    names = [e["name"] for e in json.loads(out.out)["results"]]
    assert names == ["a.xml", "b.xml.p7m/b.xml",
                     'c.msg/2026-03-01 08:01 billing@seller.example "Invoice 0001" <o1@seller.example>/m.xml']
    assert "notes.txt" in out.err and "*.msg, *.p7m" in out.err


def test_jobs_submit_sends_them_as_parts_of_their_own(folder):
    from pipeline.cli.jobs import _media_type, _uploads

    assert [name for name, _ in _uploads([folder])] == ["a.xml", "b.xml.p7m", "c.msg"]
    assert _media_type(folder / "c.msg") == "application/vnd.ms-outlook"
    assert _media_type(folder / "b.xml.p7m") == "application/pkcs7-mime"


def test_the_page_takes_them():
    page = (REPO / "templates/web/index.html.j2").read_text()
    script = (REPO / "templates/web/static/web.js").read_text()
    assert page.count(".msg,.p7m") == 2 and "xml|pdf|eml|emlx|mbox|msg|p7m|zip" in script
