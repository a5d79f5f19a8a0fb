"""A ZIP member whose compressed data is damaged inside (a deflate stream with an invalid code, a broken LZMA
stream): zipfile lets its decompressor's own error through (zlib.error, lzma.LZMAError), which no `except` took, so
a month's archive with one such member was a 500 INTERNAL_ERROR on batch validation and on POST /v1/jobs (found
with a 504-member archive) and a traceback from `pipeline validate`. Now it is that member's DAMAGED_MEMBER entry and
the other members get their reports."""
from __future__ import annotations

import io
import json
import lzma
import zipfile
import zlib

import pytest

from pipeline.cli import main
from tests.test_jobs import _job_lines, documents, in_process  # noqa: F401 (in_process: a fixture)
from tests.test_validate_batch import client, form  # noqa: F401 (client: a fixture)


def _damaged(method: int) -> bytes:
    """A ZIP of ok.xml, bad.xml (its compressed data garbled after its start) and last.xml."""
    valid, _ = documents()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        z.writestr("ok.xml", valid)
        z.writestr("bad.xml", valid * 4)
        z.writestr("last.xml", valid)
    data = bytearray(buf.getvalue())
    info = zipfile.ZipFile(io.BytesIO(bytes(data))).getinfo("bad.xml")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for i in range(start + 40, start + 400):
        data[i] ^= 0x5A
    return bytes(data)


CASES = [(zipfile.ZIP_DEFLATED, zlib.error), (zipfile.ZIP_LZMA, lzma.LZMAError)]


@pytest.mark.parametrize("method,raised", CASES)
def test_the_damage_is_the_decompressor_s_own_error(method, raised):
    with pytest.raises(raised):  # what the entries below stand for: not an OSError or BadZipFile
        zipfile.ZipFile(io.BytesIO(_damaged(method))).read("bad.xml")


@pytest.mark.parametrize("method", [m for m, _ in CASES])
def test_batch_job_and_cli_give_the_member_its_entry(method, client, in_process, tmp_path, capsys):  # noqa: F811
    archive = _damaged(method)
    body, ctype = form([("month.zip", archive)])
    r = client.simulate_post("/v1/invoice/xrechnung/validate/batch", body=body, headers={"Content-Type": ctype})
    assert r.status_code == 200, r.text
    got = [(e["name"], e.get("error", {}).get("code"), "report" in e) for e in r.json["results"]]
    expected = [("ok.xml", None, True), ("bad.xml", "DAMAGED_MEMBER", False), ("last.xml", None, True)]
    assert got == expected

    body, ctype = form([("month.zip", archive)], '{"operation": "validate"}')
    lines = _job_lines(in_process, body, ctype)
    assert [(x["name"], x.get("error", {}).get("code"), "report" in x) for x in lines] == expected
    assert "could not be decompressed" in lines[1]["error"]["message"]

    (tmp_path / "month.zip").write_bytes(archive)
    assert main(["validate", str(tmp_path / "month.zip"), "--json", "--jobs", "1"]) == 2  # an error entry
    results = json.loads(capsys.readouterr().out)["results"]
    assert [(x["name"], x.get("error", {}).get("code"), "report" in x) for x in results] == expected
