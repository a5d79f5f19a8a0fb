"""The file-count limit counts the documents that will be read, and its refusal names the right setting and count.

A Finder ZIP holds a `__MACOSX/._name` companion per document (and `.DS_Store`), which are left out unread; they
were counted, so 150 invoices (~300 members) were refused at the default 200. A job's refusal named the batch's
setting (EINVOICE_MAX_BATCH_FILES), and a 7-message mbox was said to have 6 documents (reading stops at the first
one past the limit: the count is "more than" the limit, the exact number only where a ZIP's directory gives it)."""
from __future__ import annotations

import json

from mailbuild import mbox, message
from test_validate_batch import APPLE_DOUBLE, CII_STD, DS_STORE, UBL_STD, client, form, limits, post  # noqa: F401
from test_validate_batch import zipped
from tests.test_jobs import in_process  # noqa: F401 - the fixture


def _finder_zip(n: int) -> bytes:
    """`n` invoices as macOS's Finder zips a folder: each with its AppleDouble companion, and a .DS_Store."""
    members = [("Rechnungen/.DS_Store", DS_STORE)]
    for i in range(n):
        members += [(f"Rechnungen/{i}.xml", UBL_STD.read_bytes()), (f"__MACOSX/Rechnungen/._{i}.xml", APPLE_DOUBLE)]
    return zipped(members)


def test_the_operating_system_s_files_do_not_count_against_the_batch_limit(client, limits):
    limits(EINVOICE_MAX_BATCH_FILES=5)
    r = post(client, [("finder.zip", _finder_zip(5))])  # 11 members, 5 documents
    assert r.status_code == 200, r.text
    assert r.json["summary"]["files"] == 5 and r.json["summary"]["valid"] == 5
    over = post(client, [("finder.zip", _finder_zip(6))])
    assert over.status_code == 400 and over.json["errorCode"] == "TOO_MANY_FILES", over.text
    assert over.json["message"] == ("The batch has 6 documents; at most 5 are validated at once "
                                    "(EINVOICE_MAX_BATCH_FILES).")
    assert over.json["errors"][0]["rejectedValue"] == 6
    # an invoice named like a companion is one: known by its content, counted
    real = zipped([(f"{i}.xml", UBL_STD.read_bytes()) for i in range(5)] + [("._5.xml", CII_STD.read_bytes())])
    assert post(client, [("real.zip", real)]).json["errors"][0]["rejectedValue"] == 6


def test_a_mailbox_past_the_limit_is_more_than_the_limit_not_one_past_it(client, limits):
    limits(EINVOICE_MAX_BATCH_FILES=5)
    box = mbox([message(n, [("a.xml", UBL_STD.read_bytes())]).as_bytes() for n in range(7)])
    r = post(client, [("box.mbox", box)])
    assert r.status_code == 400, r.text
    assert r.json["message"] == ("The batch has more than 5 documents; at most 5 are validated at once "
                                 "(EINVOICE_MAX_BATCH_FILES).")


def test_a_job_counts_documents_and_names_its_own_setting(in_process, monkeypatch, tmp_path):
    from pipeline.settings import get_settings

    monkeypatch.setenv("EINVOICE_MAX_JOB_FILES", "5")
    get_settings.cache_clear()  # in_process clears it again after
    client, auth = in_process

    def job_client(name: str, data: bytes):
        body, ctype = form([(name, data)], json.dumps({"operation": "validate"}))
        return client.simulate_post("/v1/jobs", body=body, headers={**auth, "Content-Type": ctype})

    r = job_client("finder.zip", _finder_zip(5))
    assert r.status_code == 202 and r.json["total"] == 5, r.text
    accepted = r.json["id"]
    r = job_client("finder.zip", _finder_zip(6))
    assert r.status_code == 400 and r.json["message"] == (
        "The job has 6 documents; at most 5 are taken in one job (EINVOICE_MAX_JOB_FILES).")
    box = mbox([message(n, [("a.xml", UBL_STD.read_bytes())]).as_bytes() for n in range(7)])
    r = job_client("box.mbox", box)
    assert r.status_code == 400 and r.json["message"] == (
        "The job has more than 5 documents; at most 5 are taken in one job (EINVOICE_MAX_JOB_FILES).")
    assert {p.name for p in (tmp_path / "jobs").iterdir()} <= {accepted}  # a refused job leaves nothing
