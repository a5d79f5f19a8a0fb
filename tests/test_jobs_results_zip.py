"""A job's results as a ZIP (`GET /v1/jobs/{id}/results?format=zip`) on a running `pipeline serve`.

Member names made from e-mail metadata ("Invoice 4711" <id@host>, a subject with `?`) held characters Windows
refuses to extract; a cancelled job's ZIP left out the NOT_PROCESSED entries its JSON lines have; and a second
document of one name got the index in front of its message's folder, so it landed in a folder of its own."""
from __future__ import annotations

import io
import json
import re
import zipfile

import requests

from mailbuild import message
from tests.test_jobs import archive, documents, get, results, submit, wait_for
from tests.test_platform_helpers import serve_with_key


def _zip(url: str, token: str, job_id: str) -> zipfile.ZipFile:
    r = get(url, token, f"/v1/jobs/{job_id}/results?format=zip")
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/zip", r.text
    return zipfile.ZipFile(io.BytesIO(r.content))


def test_member_names_extract_anywhere_and_nothing_is_left_out(tmp_path):
    server, env, token = serve_with_key(tmp_path, "jobs-zip", 100, workers=1, warm=False)
    try:
        valid, invalid = documents()
        mail = message(1, [("rechnung.xml", valid), ("rechnung.xml", invalid)], subject='Rechnung? "März" *|* <1>')
        r = requests.post(f"{server.url}/v1/jobs", headers={"Authorization": f"Bearer {token}"}, timeout=60,
                          files={"file": ("mail.eml", mail.as_bytes(), "message/rfc822")})
        assert r.status_code == 202, r.text
        job = wait_for(server.url, token, r.json()["id"])
        lines = results(server.url, token, job["id"])
        assert [line["name"].rsplit("/", 1)[-1] for line in lines] == ["rechnung.xml", "rechnung (2).xml"]
        assert re.search(r'[<>:"|?*]', lines[0]["name"])  # (two rows told apart: they were one name twice)
        z = _zip(server.url, token, job["id"])
        names = z.namelist()
        assert len(names) == 2 and not any(re.search(r'[<>:"|?*\\]', n) for n in names), names
        folder, = {n.rpartition("/")[0] for n in names}  # the message's, for both: only the file names differ
        assert folder == lines[0]["name"].rpartition("/")[0].translate(str.maketrans('<>:"|?*', "_______")), names
        assert [n.rpartition("/")[2] for n in names] == ["rechnung.xml.json", "rechnung (2).xml.json"]
        assert [json.loads(z.read(n)) for n in names] == lines

        n = 3000
        job_id = submit(server.url, token, archive(n)).json()["id"]
        r = requests.delete(f"{server.url}/v1/jobs/{job_id}", headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert r.json()["state"] == "cancelled"
        lines = results(server.url, token, job_id)
        z = _zip(server.url, token, job_id)
        assert len(lines) == len(z.namelist()) == n
        skipped = [line for line in lines if line.get("error", {}).get("code") == "NOT_PROCESSED"]
        assert skipped and [json.loads(z.read(line["name"] + ".error.json")) for line in skipped] == skipped
    finally:
        server.stop()


def test_a_document_named_as_a_windows_device_gets_a_name_windows_extracts():
    """Windows keeps CON, PRN, AUX, NUL, COM1-9 and LPT1-9 for devices, with any extension and in any case: a
    results ZIP member `nul.xml.json` or a folder `AUX/` cannot be extracted there (or opens the device)."""
    from pipeline.jobs.files import zip_member_name

    for name, member in [("CON", "_CON"), ("nul.xml", "_nul.xml"), ("Com1.pdf", "_Com1.pdf"), ("lpt9.XML", "_lpt9.XML"),
                         ("in/AUX/prn.tar.gz", "in/_AUX/_prn.tar.gz"), ("aux .xml", "_aux .xml"),
                         ("com\u00b9.xml", "_com\u00b9.xml"), ("CONOUT$.xml", "_CONOUT$.xml")]:
        assert zip_member_name(name) == member, name
    # names that only begin like a device are names: left as they are
    for name in ("COM10.xml", "CONSOLE.xml", "nullable.xml", "con-1.xml", "LPT.xml", "Contract/CON_.xml"):
        assert zip_member_name(name) == name
    # what the results ZIP did already
    assert zip_member_name('../m/Rechnung? "M\u00e4rz" <1>.xml') == "m/Rechnung_ _M\u00e4rz_ _1_.xml"
    assert zip_member_name("a./b ") == "a_/b_" and zip_member_name("/") == "document"


def test_a_name_too_long_for_a_zip_or_a_file_system_is_shortened_keeping_its_extension():
    """A ZIP member of a 65,500-character name inside a message's ZIP attachment: with the message's folder and
    ".json" its results member passed the ZIP format's 65,535 bytes and the results ZIP broke off mid-stream
    (struct.error); no file system extracts a name over 255 bytes anyway."""
    import zipfile as zf

    from pipeline.jobs.files import zip_member_name

    long = zip_member_name('2026-03-01 billing@x "Invoice" <id@x>/a.zip/' + "y" * 65500 + ".xml")
    folder, _, file = long.rpartition("/")
    assert folder == '2026-03-01 billing@x _Invoice_ _id@x_/a.zip' and file.endswith("~.xml")
    assert len(file.encode()) <= 200 and file.startswith("yyy")
    umlauts = zip_member_name("\u00fc" * 300 + ".pdf")
    assert umlauts.endswith("\u00fc~.pdf") and len(umlauts.encode()) <= 200
    with zf.ZipFile(io.BytesIO(), "w") as archive:  # what broke: now every part fits
        archive.writestr(long + ".error.json", b"{}")
        assert all(len(p.encode()) + len("12-") <= 255 for p in (long + ".error.json").split("/"))
