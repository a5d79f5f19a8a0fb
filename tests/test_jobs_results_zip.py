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
        assert len({line["name"] for line in lines}) == 1 and re.search(r'[<>:"|?*]', lines[0]["name"])
        z = _zip(server.url, token, job["id"])
        names = z.namelist()
        assert len(names) == 2 and not any(re.search(r'[<>:"|?*\\]', n) for n in names), names
        folder, = {n.rpartition("/")[0] for n in names}  # the message's, for both: only the file names differ
        assert folder == lines[0]["name"].rpartition("/")[0].translate(str.maketrans('<>:"|?*', "_______")), names
        assert [n.rpartition("/")[2] for n in names] == ["rechnung.xml.json", "1-rechnung.xml.json"]
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
