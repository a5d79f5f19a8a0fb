"""`pipeline jobs submit` with several files: each goes up as a `file` part of its own, so the service opens ZIPs and
e-mails as `pipeline validate` opens them. Before, everything was wrapped into one documents.zip, and the ZIPs and
a ZIP attached to an e-mail inside it became NESTED_ARCHIVE. A folder's files that are not documents are named on
stderr, as `pipeline validate` names them; its ZIPs go up as parts of their own (they were skipped)."""
from __future__ import annotations

import json

from mailbuild import message, zipped as _zip
from tests.test_jobs import documents
from tests.test_platform_helpers import cli, serve_with_key


def test_zips_and_mails_submitted_together_are_opened_as_validate_opens_them(tmp_path):
    server, env, token = serve_with_key(tmp_path / "data", "jobs-submit", 100, workers=1, warm=False)
    try:
        env = {**env, "EINVOICE_URL": server.url, "EINVOICE_API_KEY": token}
        valid, invalid = documents()
        a, b, mail = tmp_path / "a.zip", tmp_path / "b.zip", tmp_path / "m.eml"
        a.write_bytes(_zip([("a1.xml", valid), ("a2.xml", invalid)]))
        b.write_bytes(_zip([("b1.xml", valid)]))
        mail.write_bytes(message(1, [("attached.zip", _zip([("m1.xml", valid)])), ("m2.xml", valid)]).as_bytes())
        paths = [str(a), str(b), str(mail)]
        expected = [(r["name"], r["report"]["valid"]) for r in
                    json.loads(cli(env, "validate", *paths, "--json", "--jobs", "1").stdout)["results"]]
        assert [name.rsplit("/", 1)[-1] for name, _ in expected] == ["a1.xml", "a2.xml", "b1.xml", "m1.xml", "m2.xml"]

        run = cli(env, "jobs", "submit", *paths, "--wait")
        assert run.returncode == 1, run.stderr  # a2.xml is invalid
        job_id = dict(line.split(None, 1) for line in run.stdout.splitlines() if " " in line)["job"].strip()
        lines = [json.loads(x) for x in cli(env, "jobs", "results", job_id).stdout.splitlines()]
        assert [(x["name"], x["report"]["valid"]) for x in lines] == expected  # no NESTED_ARCHIVE

        folder = tmp_path / "folder"
        (folder / "sub").mkdir(parents=True)
        (folder / "a.xml").write_bytes(valid)
        (folder / "sub" / "notes.txt").write_text("not an invoice")
        (folder / "scan.png").write_bytes(b"\x89PNG\r\n")
        run = cli(env, "jobs", "submit", str(folder), "--wait")
        assert run.returncode == 0, run.stderr
        assert f"pipeline jobs: {folder}: skipped 2 files that are not *.xml, *.pdf, *.eml, *.mbox, *.msg, *.p7m or *.zip: " \
               "scan.png, sub/notes.txt" in run.stderr
        assert "documents        1" in run.stdout

        # a folder's ZIP goes up as a part of its own, opened by the service as `pipeline validate FOLDER` opens
        # it (it was skipped): each member a document, a ZIP inside it refused (one ZIP level only)
        (folder / "sub" / "pack.zip").write_bytes(
            _zip([("b.xml", valid), ("c.xml", invalid), ("inner.zip", _zip([("d.xml", valid)]))]))
        local = json.loads(cli(env, "validate", str(folder), "--json", "--jobs", "1").stdout)["results"]
        assert [r["name"] for r in local] == ["a.xml", "sub/pack.zip/b.xml", "sub/pack.zip/c.xml",
                                              "sub/pack.zip/inner.zip"]
        run = cli(env, "jobs", "submit", str(folder), "--wait")
        assert run.returncode == 1, run.stderr  # c.xml is invalid, inner.zip refused
        assert "skipped 2 files" in run.stderr and "pack.zip" not in run.stderr
        job_id = dict(line.split(None, 1) for line in run.stdout.splitlines() if " " in line)["job"].strip()
        lines = [json.loads(x) for x in cli(env, "jobs", "results", job_id).stdout.splitlines()]
        assert [x["name"].rsplit("/", 1)[-1] for x in lines] == ["a.xml", "b.xml", "c.xml", "inner.zip"]
        assert [x.get("report", {}).get("valid") for x in lines] == [r.get("report", {}).get("valid") for r in local] \
            == [True, True, False, None]
        assert lines[-1]["error"]["code"] == local[-1]["error"]["code"] == "NESTED_ARCHIVE"
    finally:
        server.stop()
