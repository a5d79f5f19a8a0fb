"""The signature of a signed file in each entry of its documents, wherever a .p7m is taken: batch validation, a
job's result lines (stored with the job's documents, PostgreSQL's and SQLite's schema v8) and `pipeline validate
--json`. What the check finds is tests/test_p7m_signature.py's; here, that the field reaches every answer."""
from __future__ import annotations

import json

from test_p7m import CII, post, sign  # noqa: F401 - the sign fixture
from test_mail_senders import client  # noqa: F401 - the client fixture
from test_p7m_signature import changed
from test_platform_helpers import Platform, sqlite_platform
from test_validate_batch import form
from mailbuild import message
from pipeline.cli import main


def test_batch_entries_carry_the_signature_beside_the_report(client, sign):
    results = post(client, [("a.xml.p7m", sign(CII)), ("b.xml.p7m", changed(sign(CII))), ("c.xml", CII)],
                   path="/v1/invoice/en16931/validate/batch")
    assert [e["signature"]["status"] for e in results[:2]] == ["intact", "broken"] and "signature" not in results[2]
    assert all("report" in e for e in results)
    assert results[0]["signature"]["signer"] == "fatture@seller.example"
    assert set(results[0]["signature"]["meaning"]) == {"en", "de"}


def test_job_lines_carry_it_from_an_uploaded_p7m_and_from_mail(tmp_path, monkeypatch, sign):
    with sqlite_platform(tmp_path, monkeypatch) as p:
        _, token = p.key(credits=10)
        mail = message(1, [("fattura.xml.p7m", sign(CII))]).as_bytes()
        body, ctype = form([("a.xml.p7m", sign(CII)), ("m.eml", mail), ("c.xml", CII)],
                           '{"operation": "validate", "spec": "en16931"}')
        r = p.post(token, "/v1/jobs", body=body, headers={"Content-Type": ctype})
        assert r.status_code == 202, r.text
        job, lines = p.finished_job(token, r.json["id"])
        assert job["state"] == "done" and [("report" in e) for e in lines] == [True] * 3, lines
        assert [e.get("signature", {}).get("status") for e in lines] == ["intact", "intact", None]
        assert lines[1]["email"]["subject"] == "Invoice 0001"
        p.store.close()


def test_cli_json_carries_it(tmp_path, sign, capsys):
    (tmp_path / "a.xml.p7m").write_bytes(changed(sign(CII)))
    (tmp_path / "b.xml").write_bytes(CII)
    main(["validate", str(tmp_path), "--spec", "en16931", "--jobs", "1", "--json"])
    results = json.loads(capsys.readouterr().out)["results"]
    assert [e.get("signature", {}).get("status") for e in results] == ["broken", None]
